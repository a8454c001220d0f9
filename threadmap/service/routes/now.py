"""Work answered now: ``POST /v1/verify`` (one small spec) and ``POST /v1/layout`` (the
calculator), each in a job child on a bounded lane."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from threadmap.service.core import Busy, Service
from threadmap.service.deps import Authenticated, ServiceDep, SpecsDep, require_token
from threadmap.service.model import LayoutTask, Outcome, Task

router = APIRouter(prefix="/v1", tags=["now"])


class LayoutRequest(BaseModel):
    expr: str = Field(max_length=10_000, description="a CuTe layout expression, e.g. complement((2,2):(1,6), 24)")
    ops: list[str] = Field(default_factory=list, max_length=64,
                           description="calculator operations applied in order, e.g. ['coalesce']")


async def run_now(svc: Service, authenticated: bool, task: Task) -> Outcome:
    """A task on the caller's lane (with a token, callers without it have their own, so they
    can never starve those with it): 503 when the lane is full, 408 past the time limit, 422
    when the task itself fails."""
    lane = svc.lane(authenticated)
    try:
        result = await lane.run(task)
    except Busy:
        svc.metrics.rejected.labels(f"{lane.name}_busy").inc()
        raise HTTPException(503, "the server is busy with other synchronous requests; retry later",
                            headers={"Retry-After": "2"}) from None
    if result.error is not None:
        raise HTTPException(408 if result.error.startswith("time limit") else 422, result.error)
    return result


@router.post("/verify", summary="Verify one small spec synchronously (time-limited)",
             dependencies=[Depends(require_token)])
async def verify_now(svc: ServiceDep, jobs: SpecsDep, ok: Authenticated) -> JSONResponse:
    if len(jobs) != 1:
        raise HTTPException(400, "POST /v1/verify takes one spec; use POST /v1/jobs for several")
    try:
        result = await run_now(svc, ok, jobs[0])
    except HTTPException as e:
        if e.status_code == 408:
            e.detail = f"{e.detail}; submit it as a job: POST /v1/jobs"
        raise
    report: dict[str, Any] = result.report or {}
    errors = report.get("errors") or []
    if errors and not report.get("runs") and all(e.get("status") == "invalid" for e in errors):
        # found only once the model is built: still the spec's fault, said the loader's way
        raise HTTPException(422, "\n".join(e["message"] for e in errors))
    return JSONResponse(report)


@router.post("/layout", summary="The CuTe layout calculator")
async def layout(svc: ServiceDep, req: LayoutRequest, ok: Authenticated) -> dict[str, Any]:
    result = await run_now(svc, ok, LayoutTask(req.expr, tuple(req.ops)))
    return result.layout or {}
