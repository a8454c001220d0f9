"""``/v1/jobs``: submit specs, read a job's state and report, its SARIF, JUnit, spec and
pictures."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from threadmap.service.core import Service
from threadmap.service.deps import (
    Authenticated,
    DoneJobDep,
    JobDep,
    ServiceDep,
    SpecsDep,
    require_token,
)
from threadmap.service.model import DrawTask, Options, SpecJob
from threadmap.service.routes.now import run_now
from threadmap.service.store import Job

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])


def job_view(job: Job, full: bool = True) -> dict[str, Any]:
    """A job as the API shows it; ``created`` is when it was first submitted (a timestamp)."""
    base = f"/v1/jobs/{job.id}"
    out: dict[str, Any] = {
        "id": job.id, "state": job.state, "name": job.name, "spec_name": job.spec_name, "options": job.options,
        "created": job.created, "started": job.started, "finished": job.finished, "progress": job.progress,
        "error": job.error, "exit_status": job.exit_status,
        "links": {"self": base, "spec": f"{base}/spec", "sarif": f"{base}/sarif", "junit": f"{base}/junit",
                  "svg": f"{base}/svg", "page": f"/?job={job.id}"}}
    if full:
        out["report"] = job.report
    return out


def admit(svc: Service, jobs: list[SpecJob]) -> JSONResponse:
    """Store and dispatch the jobs of one request (off the event loop: SQLite calls block).
    Capacity is checked first, for the whole request, so a 503 leaves nothing behind."""
    settings = svc.settings
    with svc.lock:
        known = {j.key: svc.store.get(j.key) for j in jobs}
        need = {k for k, j in known.items() if k not in svc.inflight and (j is None or j.state != "done")}
        if need and len(svc.inflight) + len(need) > settings.queue_max:
            svc.metrics.rejected.labels("queue_full").inc()
            retry = max(1, min(60, round(len(svc.inflight) / max(1, settings.workers))))
            return JSONResponse({"detail": "the job queue is full; retry later"}, status_code=503,
                                headers={"Retry-After": str(retry)})
        views = []
        status = 200
        for r in jobs:
            job, new = svc.store.add(r.key, r.name, r.spec_name, r.text, r.fmt, r.options.as_dict())
            if job.state == "failed" and not new:
                svc.store.retry(job.id)  # asked again: a time-out may have been load
            if r.key in need:
                svc.dispatch(job.id, r)
            if job.state == "done" and not new:
                svc.metrics.submitted.labels("cached").inc()
            else:
                status = 202
                svc.metrics.submitted.labels("queued" if r.key in need else "joined").inc()
            job = svc.store.get(r.key) or job
            # new: this request made the job; cached: its report was already in the store
            views.append({**job_view(job, full=False), "new": new, "cached": not new and job.state == "done"})
    body: dict[str, Any] = views[0] if len(views) == 1 else {"jobs": views}
    return JSONResponse(body, status_code=status)


@router.post("", status_code=202, summary="Submit specs for verification (or proof)",
             dependencies=[Depends(require_token)])
async def submit(svc: ServiceDep, jobs: SpecsDep) -> JSONResponse:
    return await asyncio.to_thread(admit, svc, jobs)


@router.get("/{job_id}", summary="A job's state, progress and (when done) report")
def job_state(job: JobDep) -> dict[str, Any]:
    return job_view(job)


@router.get("/{job_id}/spec", response_class=PlainTextResponse, summary="The spec as submitted")
def job_spec(job: JobDep) -> str:
    return job.spec_text


@router.get("/{job_id}/sarif", summary="The report as SARIF 2.1.0")
def job_sarif(job: DoneJobDep) -> Response:
    return Response(job.sarif or "", media_type="application/sarif+json")


@router.get("/{job_id}/junit", summary="The report as JUnit XML")
def job_junit(job: DoneJobDep) -> Response:
    return Response(job.junit or "", media_type="application/xml")


@router.get("/{job_id}/svg", summary="The TV-layout grids and bank/sector heat maps of one stage")
async def job_svg(svc: ServiceDep, job: JobDep, ok: Authenticated, stage: int | None = None,
                  block: int = 0) -> Response:
    spec = SpecJob(job.id, job.spec_text, job.spec_format, job.name,  # type: ignore[arg-type]
                   Options.from_dict(job.options))
    result = await run_now(svc, ok, DrawTask(spec, stage, block))
    return Response(result.svg or "", media_type="image/svg+xml")
