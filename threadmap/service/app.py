"""``threadmap serve``: the verification service (FastAPI).

Endpoints (OpenAPI at ``/docs``)::

    POST /v1/jobs                 a spec (YAML/TOML/JSON body, or multipart files) -> job id(s)
    GET  /v1/jobs/{id}            state, progress; the report (as verify --format json) when done
    GET  /v1/jobs/{id}/sarif|junit|svg|spec
    POST /v1/verify               small specs, synchronously, with a time limit
    POST /v1/layout               the layout calculator: {"expr": "complement((2,2):(1,6), 24)"}
    GET  /v1/schema  /healthz  /metrics  /docs        and the Layout Explorer page at /

Jobs are content-addressed (:func:`threadmap.service.jobs.job_key`): the same spec and
options twice is one job, answered from the store.  Verification never runs in the event
loop: each job is a child process with time and memory limits, started by a bounded pool of
worker threads or, with ``dask_address``, by a Dask cluster's workers.
"""

from __future__ import annotations

import asyncio
import hmac
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from pydantic import BaseModel, Field
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import ClientDisconnect

from threadmap import __version__
from threadmap.errors import ThreadmapError
from threadmap.service.jobs import Limits, Options, payload, run_job, sniff_format, validate
from threadmap.service.jobs import Request as JobRequest
from threadmap.service.store import Job, Store

STATIC = Path(__file__).resolve().parent / "static"
WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


@dataclass
class Settings:
    db: str = "threadmap.db"
    workers: int = 2
    queue_max: int = 256            # queued + running jobs; beyond it POST /v1/jobs answers 503
    token: str | None = None        # bearer token for the write endpoints
    dask_address: str | None = None
    sync_workers: int = 2           # drawings, calculations and POST /v1/verify at once; then 503
    loopback: bool = False          # bound to a loopback address: only loopback host names are served
    limits: Limits = field(default_factory=Limits)


class LayoutRequest(BaseModel):
    expr: str = Field(max_length=10_000, description="a CuTe layout expression, e.g. complement((2,2):(1,6), 24)")
    ops: list[str] = Field(default_factory=list, max_length=64,
                           description="calculator operations applied in order, e.g. ['coalesce']")


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.jobs = Gauge("threadmap_jobs", "jobs in the store by state", ["state"], registry=self.registry)
        self.queue = Gauge("threadmap_queue_depth", "jobs queued or running in this server",
                           registry=self.registry)
        self.submitted = Counter("threadmap_jobs_submitted", "POST /v1/jobs specs by outcome", ["outcome"],
                                 registry=self.registry)
        self.duration = Histogram("threadmap_job_seconds", "seconds a job ran", ["state"], registry=self.registry,
                                  buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300))
        self.rejected = Counter("threadmap_rejected", "requests refused (queue full, too large, unauthorised)",
                                ["reason"], registry=self.registry)


class Backend:
    """Runs jobs off the event loop: local worker threads, each waiting on a child process,
    or a Dask cluster (the same :func:`run_job` on its workers)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.client: Any = None
        self.pool: ThreadPoolExecutor | None = None
        if settings.dask_address:
            from distributed import Client
            self.client = Client(settings.dask_address, set_as_default=False)
        else:
            self.pool = ThreadPoolExecutor(max_workers=max(1, settings.workers), thread_name_prefix="threadmap-job")

    def submit(self, job: dict[str, Any], on_start: Any, on_progress: Any) -> Future[dict[str, Any]]:
        lim = self.settings.limits
        if self.client is not None:
            # queued until it is done: the cluster does not tell this server when a worker takes
            # it (the job's own run time dates its start)
            fut: Any = self.client.submit(run_job, job, lim.job_seconds, lim.job_memory_mb, pure=False)
            return fut  # type: ignore[no-any-return]
        assert self.pool is not None

        def task() -> dict[str, Any]:
            on_start()  # running from when a worker takes it, not while it waits for one
            return run_job(job, lim.job_seconds, lim.job_memory_mb, on_progress)

        return self.pool.submit(task)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


class Service:
    """The store, the backend and the in-flight jobs of one server."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = Store(settings.db)
        self.metrics = Metrics()
        self.backend: Backend | None = None
        self.inflight: set[str] = set()
        self.lock = threading.RLock()  # admission: the capacity check and the dispatch together
        self.sync_busy = 0              # synchronous children running (event-loop thread only)
        self.sync_pool = ThreadPoolExecutor(max_workers=max(1, settings.sync_workers),
                                            thread_name_prefix="threadmap-sync")

    def start(self) -> None:
        self.backend = Backend(self.settings)
        for job_id in self.store.requeue_unfinished():
            self.dispatch(job_id)

    def stop(self) -> None:
        if self.backend is not None:
            self.backend.close()
        self.sync_pool.shutdown(wait=False, cancel_futures=True)

    def dispatch(self, job_id: str) -> None:
        job = self.store.get(job_id)
        if job is None or self.backend is None or job_id in self.inflight:
            return
        self.inflight.add(job_id)
        self.metrics.queue.set(len(self.inflight))
        started = time.monotonic()

        def on_progress(p: dict[str, Any]) -> None:
            self.store.progress(job_id, p)

        fut = self.backend.submit({"text": job.spec_text, "format": job.spec_format, "name": job.name,
                                   "options": job.options}, lambda: self.store.start(job_id), on_progress)

        def done(f: Any) -> None:
            try:
                result = f.result()
            except Exception as e:  # noqa: BLE001 - a lost worker fails the job, never the server
                result = {"error": f"the worker failed: {type(e).__name__}: {e}"}
            ran = float(result.get("seconds", 0.0))
            if "error" in result:
                self.store.fail(job_id, result["error"], ran)
                state = "failed"
            else:
                self.store.finish(job_id, result["report"], int(result["exit_status"]), result.get("sarif"),
                                  result.get("junit"), ran)
                state = "done"
            self.metrics.duration.labels(state).observe(time.monotonic() - started)
            with self.lock:
                self.inflight.discard(job_id)
                self.metrics.queue.set(len(self.inflight))

        fut.add_done_callback(done)


def _job_view(job: Job, full: bool = True) -> dict[str, Any]:
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


def _check_token(settings: Settings, request: Request) -> None:
    if settings.token is None:
        return
    scheme, _, got = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(got.strip(), settings.token):
        raise HTTPException(401, "this endpoint needs 'Authorization: Bearer <token>'",
                            headers={"WWW-Authenticate": "Bearer"})


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, refused past ``limit`` bytes before it is all read."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"request body of {declared} bytes; the limit is {limit}")
    chunks, n = [], 0
    try:
        async for chunk in request.stream():
            n += len(chunk)
            if n > limit:
                raise HTTPException(413, f"request body over the limit of {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise HTTPException(400, "the client went away before sending the whole body") from None
    return b"".join(chunks)


def _spec_error(e: Exception) -> HTTPException:
    return HTTPException(422, str(e) if isinstance(e, ThreadmapError) else f"{type(e).__name__}: {e}")


async def _parse_specs(request: Request, settings: Settings, options: Options) -> list[JobRequest]:
    """Every spec of a request (one body, or the files of a multipart form), validated."""
    body = await _read_body(request, settings.limits.max_body_bytes)
    ctype = request.headers.get("content-type", "")
    items: list[tuple[str, str | None, bytes]] = []
    if ctype.startswith("multipart/form-data"):
        from starlette.datastructures import UploadFile
        from starlette.requests import Request as StarletteRequest

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        form = await StarletteRequest(request.scope, receive).form(max_files=64, max_fields=64)
        for _, value in form.multi_items():
            if isinstance(value, UploadFile):
                items.append((value.filename or "spec.yaml", value.content_type, await value.read()))
        if not items:
            raise HTTPException(400, "a multipart request needs one or more spec files")
    else:
        items.append(("spec", ctype, body))
    out = []
    for name, ct, raw in items:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise HTTPException(400, f"{name}: the spec is not UTF-8 text") from None
        if not text.strip():
            raise HTTPException(400, f"{name}: empty spec")
        fmt = sniff_format(ct, name, text)
        label = name if "." in name else f"{name}.{fmt}"
        try:
            out.append(await asyncio.to_thread(validate, text, fmt, label, options, settings.limits))
        except (ThreadmapError, ValueError, RecursionError) as e:
            raise _spec_error(e) from None
    return out


def _options(request: Request) -> Options:
    q = request.query_params
    try:
        flag = q.get("exhaustive", "false").lower()
        if flag not in ("1", "true", "yes", "0", "false", "no", ""):
            raise ValueError(f"exhaustive must be true or false, got {q.get('exhaustive')!r}")
        return Options.of(q.get("checks"), q.get("engine", "verify"), q.get("sizes"), flag in ("1", "true", "yes"))
    except (ThreadmapError, ValueError) as e:
        raise HTTPException(422, str(e)) from None


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

    def get_job(job_id: str) -> Job:
        job = svc.store.get(job_id) if len(job_id) <= 64 else None
        if job is None:
            raise HTTPException(404, f"no job {job_id!r}")
        return job

    @app.post("/v1/jobs", status_code=202, summary="Submit specs for verification (or proof)")
    async def submit(request: Request) -> JSONResponse:
        _check_token(settings, request)
        options = _options(request)
        reqs = await _parse_specs(request, settings, options)
        return await asyncio.to_thread(admit, reqs)

    def admit(reqs: list[JobRequest]) -> JSONResponse:
        """Store and dispatch the jobs of one request (off the event loop: SQLite calls
        block).  Capacity is checked first, for the whole request, so a 503 leaves nothing
        behind."""
        with svc.lock:
            known = {r.key: svc.store.get(r.key) for r in reqs}
            need = {k for k, j in known.items()
                    if k not in svc.inflight and (j is None or j.state != "done")}
            if need and len(svc.inflight) + len(need) > settings.queue_max:
                svc.metrics.rejected.labels("queue_full").inc()
                retry = max(1, min(60, round(len(svc.inflight) / max(1, settings.workers))))
                return JSONResponse({"detail": "the job queue is full; retry later"}, status_code=503,
                                    headers={"Retry-After": str(retry)})
            views = []
            status = 200
            for r in reqs:
                job, created = svc.store.add(r.key, r.name, r.loaded.spec.name, r.text, r.fmt,
                                             r.options.as_dict())
                if job.state == "failed" and not created:
                    svc.store.retry(job.id)  # asked again: a time-out may have been load
                if r.key in need:
                    svc.dispatch(job.id)
                if job.state == "done" and not created:
                    svc.metrics.submitted.labels("cached").inc()
                else:
                    status = 202
                    svc.metrics.submitted.labels("queued" if r.key in need else "joined").inc()
                job = svc.store.get(r.key) or job
                views.append({**_job_view(job, full=False), "created": created,
                              "cached": not created and job.state == "done"})
        body: dict[str, Any] = views[0] if len(views) == 1 else {"jobs": views}
        return JSONResponse(body, status_code=status)

    @app.get("/v1/jobs/{job_id}", summary="A job's state, progress and (when done) report")
    async def job_state(job_id: str) -> dict[str, Any]:
        return _job_view(await asyncio.to_thread(get_job, job_id))

    @app.get("/v1/jobs/{job_id}/spec", response_class=PlainTextResponse)
    async def job_spec(job_id: str) -> str:
        return get_job(job_id).spec_text

    def done_job(job_id: str) -> Job:
        job = get_job(job_id)
        if job.state != "done" or job.report is None:
            raise HTTPException(409, f"job {job_id} is {job.state}" + (f": {job.error}" if job.error else ""))
        return job

    @app.get("/v1/jobs/{job_id}/sarif", summary="The report as SARIF 2.1.0")
    async def job_sarif(job_id: str) -> Response:
        return Response(done_job(job_id).sarif or "", media_type="application/sarif+json")

    @app.get("/v1/jobs/{job_id}/junit", summary="The report as JUnit XML")
    async def job_junit(job_id: str) -> Response:
        return Response(done_job(job_id).junit or "", media_type="application/xml")

    async def in_child(task: dict[str, Any]) -> dict[str, Any]:
        """Work a request needs done now (a drawing, a calculation, a synchronous verify) in a
        job child with the job limits and the synchronous time limit, never in the server
        process; at most ``sync_workers`` at once, on their own threads (the store's calls keep
        theirs), else 503."""
        if svc.sync_busy >= settings.sync_workers:
            svc.metrics.rejected.labels("sync_busy").inc()
            raise HTTPException(503, "the server is busy with other synchronous requests; retry later",
                                headers={"Retry-After": "2"})
        svc.sync_busy += 1
        lim = settings.limits
        try:
            result: dict[str, Any] = await asyncio.get_running_loop().run_in_executor(
                svc.sync_pool, run_job, task, lim.sync_seconds, lim.job_memory_mb)
        finally:
            svc.sync_busy -= 1
        if "error" in result:
            code = 408 if result["error"].startswith("time limit") else 422
            raise HTTPException(code, result["error"])
        return result

    @app.get("/v1/jobs/{job_id}/svg", summary="The TV-layout grids and bank/sector heat maps of one stage")
    async def job_svg(job_id: str, stage: int | None = None, block: int = 0) -> Response:
        job = await asyncio.to_thread(get_job, job_id)
        result = await in_child({"kind": "svg", "text": job.spec_text, "format": job.spec_format, "name": job.name,
                                 "options": job.options, "stage": stage, "block": block})
        return Response(result["svg"], media_type="image/svg+xml")

    @app.post("/v1/verify", summary="Verify one small spec synchronously (time-limited)")
    async def verify_now(request: Request) -> JSONResponse:
        _check_token(settings, request)
        options = _options(request)
        reqs = await _parse_specs(request, settings, options)
        if len(reqs) != 1:
            raise HTTPException(400, "POST /v1/verify takes one spec; use POST /v1/jobs for several")
        r = reqs[0]
        try:
            result = await in_child(payload(r))
        except HTTPException as e:
            if e.status_code == 408:
                e.detail = f"{e.detail}; submit it as a job: POST /v1/jobs"
            raise
        report = result["report"]
        errors = report.get("errors") or []
        if errors and not report.get("runs") and all(e.get("status") == "invalid" for e in errors):
            # found only once the model is built: still the spec's fault, said the loader's way
            raise HTTPException(422, "\n".join(e["message"] for e in errors))
        return JSONResponse(report)

    @app.post("/v1/layout", summary="The CuTe layout calculator")
    async def layout(req: LayoutRequest) -> dict[str, Any]:
        result = await in_child({"kind": "layout", "expr": req.expr, "ops": req.ops})
        return result["layout"]  # type: ignore[no-any-return]

    @app.get("/v1/schema", summary="The JSON Schema of spec files")
    async def schema() -> JSONResponse:
        from threadmap.spec.cli_schema import schema_dict
        return JSONResponse(schema_dict())

    @app.api_route("/healthz", methods=["GET", "HEAD"])
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "threadmap": __version__, "backend": "dask" if settings.dask_address else "local",
                "inflight": len(svc.inflight)}

    @app.get("/metrics", response_class=PlainTextResponse)
    async def metrics() -> Response:
        for state, n in svc.store.counts().items():
            svc.metrics.jobs.labels(state).set(n)
        svc.metrics.queue.set(len(svc.inflight))
        return Response(generate_latest(svc.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> HTMLResponse:
        # nothing inline but style attributes: scripts only from this server
        csp = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'"
        return HTMLResponse((STATIC / "index.html").read_text(), headers={"Content-Security-Policy": csp})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        # the default handler echoes the input back, which fails on lone surrogates (a 500)
        detail = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")).encode("utf-8", "replace").decode()}
                  for e in exc.errors()]
        return JSONResponse({"detail": detail}, status_code=422)

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Any:
        # a page on another site may POST here (text/plain and forms need no preflight): a
        # browser says where it comes from, and only this server's own page may write
        origin = request.headers.get("origin")
        if request.method in WRITE_METHODS and origin and origin != "null":
            if urlsplit(origin).netloc != request.headers.get("host", ""):
                return JSONResponse({"detail": f"cross-origin request from {origin} refused"}, status_code=403)
        response = await call_next(request)
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    if settings.loopback:
        # DNS rebinding: a name that resolves to 127.0.0.1 is not this server's name
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "[::1]", "::1"])
    return app

