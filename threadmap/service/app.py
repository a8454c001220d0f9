"""``threadmap serve``: the verification service (FastAPI).

Endpoints (OpenAPI at ``/docs``)::

    POST /v1/jobs                 a spec (YAML/TOML/JSON body, or multipart files) -> job id(s)
    GET  /v1/jobs/{id}            state, progress; the report (as verify --format json) when done
    GET  /v1/jobs/{id}/sarif|junit|svg|spec
    POST /v1/verify               small specs, synchronously, with a time limit
    POST /v1/layout               the layout calculator: {"expr": "complement((2,2):(1,6), 24)"}
    GET  /v1/schema  /healthz  /metrics  /docs        and the Layout Explorer page at /

Jobs are content-addressed (:func:`threadmap.service.model.job_key`): the same spec and
options twice is one job, answered from the store.  Verification never runs in the event
loop: each job is a child process with time and memory limits, started by a bounded pool of
worker threads or, with ``dask_address``, by a Dask cluster's workers.  The routes live in
:mod:`threadmap.service.routes` (one router per resource), what they depend on in
:mod:`threadmap.service.deps`, the server's state in :mod:`threadmap.service.core`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.trustedhost import TrustedHostMiddleware

from threadmap.service.core import Service, Settings
from threadmap.service.guards import OriginGuard
from threadmap.service.routes import jobs, meta, now
from threadmap.service.routes.meta import STATIC
from threadmap.service.store import StoreBusy
from threadmap.version import __version__

__all__ = ["Settings", "create_app"]


async def _invalid_request(_: Request, exc: Exception) -> JSONResponse:
    # the default handler echoes the input back, which fails on lone surrogates (a 500)
    assert isinstance(exc, RequestValidationError)
    detail = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")).encode("utf-8", "replace").decode()}
              for e in exc.errors()]
    return JSONResponse({"detail": detail}, status_code=422)


async def _store_busy(request: Request, exc: Exception) -> JSONResponse:
    request.app.state.service.metrics.rejected.labels("store_locked").inc()
    return JSONResponse({"detail": f"{exc}; retry later"}, status_code=503, headers={"Retry-After": "1"})


def create_app(settings: Settings) -> FastAPI:
    svc = Service(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        svc.start()  # jobs a dead server left queued or running are queued again first
        try:
            yield
        finally:
            svc.stop()

    app = FastAPI(title="threadmap", version=__version__, lifespan=lifespan,
                  description="Thread-map verification for CUTLASS and CuTe kernels: verify, prove and keep the "
                              "results of spec files.")
    app.state.service = svc
    for router in (jobs.router, now.router, meta.router):
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(StoreBusy, _store_busy)
    app.add_middleware(OriginGuard)
    if settings.loopback:
        # DNS rebinding: a name that resolves to 127.0.0.1 is not this server's name
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "[::1]", "::1"])
    return app
