"""The server itself: the spec schema, health, metrics and the Layout Explorer page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from threadmap.service.deps import ServiceDep
from threadmap.version import __version__

STATIC = Path(__file__).resolve().parent.parent / "static"

router = APIRouter()


@router.get("/v1/schema", summary="The JSON Schema of spec files")
async def schema() -> JSONResponse:
    from threadmap.spec.cli_schema import schema_dict
    return JSONResponse(schema_dict())


@router.api_route("/healthz", methods=["GET", "HEAD"])
async def healthz(svc: ServiceDep) -> dict[str, Any]:
    return {"status": "ok", "threadmap": __version__, "backend": "dask" if svc.settings.dask_address else "local",
            "inflight": len(svc.inflight)}


@router.get("/metrics", response_class=PlainTextResponse)
def metrics(svc: ServiceDep) -> Response:
    for state, n in svc.store.counts().items():
        svc.metrics.jobs.labels(state).set(n)
    svc.metrics.queue.set(len(svc.inflight))
    return Response(generate_latest(svc.metrics.registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
async def index() -> HTMLResponse:
    # nothing inline but style attributes: scripts only from this server
    csp = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'"
    return HTMLResponse((STATIC / "index.html").read_text(), headers={"Content-Security-Policy": csp})
