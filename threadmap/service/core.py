"""One server's state: its settings, the store, the backend that runs jobs, the bounded lanes
that run a request's work now, and its metrics."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from threadmap.service.jobs import run_job
from threadmap.service.model import Limits, Options, Outcome, SpecJob, Task
from threadmap.service.store import Store, StoreBusy

LOG = logging.getLogger("threadmap.service")


@dataclass
class Settings:
    db: str = "threadmap.db"
    workers: int = 2
    queue_max: int = 256            # queued + running jobs; beyond it POST /v1/jobs answers 503
    token: str | None = None        # bearer token for the write endpoints
    dask_address: str | None = None
    sync_workers: int = 2           # drawings, calculations and POST /v1/verify at once; then 503
    public_workers: int = 1         # with a token: drawings and calculations without it, on their own
    loopback: bool = False          # bound to a loopback address: only loopback host names are served
    store_busy_seconds: float = 1.0  # a request waits this long for the store's write lock, then 503
    max_connections: int = 128      # HTTP connections or requests at once; beyond it 503
    request_seconds: float = 30.0   # a request's head and body must arrive within this, else it is dropped
    limits: Limits = field(default_factory=Limits)


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
        self.rejected = Counter("threadmap_rejected",
                                "requests refused (queue full, busy, store locked, too large, unauthorised)",
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

    def submit(self, job: SpecJob, on_start: Callable[[], Any],
               on_progress: Callable[[dict[str, Any]], None]) -> Future[Outcome]:
        lim = self.settings.limits
        if self.client is not None:
            # queued until it is done: the cluster does not tell this server when a worker takes
            # it (the job's own run time dates its start)
            fut: Any = self.client.submit(run_job, job, lim.job_seconds, lim.job_memory_mb, pure=False)
            return fut  # type: ignore[no-any-return]
        assert self.pool is not None

        def task() -> Outcome:
            on_start()  # running from when a worker takes it, not while it waits for one
            return run_job(job, lim.job_seconds, lim.job_memory_mb, on_progress)

        return self.pool.submit(task)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


class Busy(Exception):
    """A lane has no free worker: the request is answered 503 with ``Retry-After``."""


class Lane:
    """Work a request needs done now (a drawing, a calculation, a synchronous verify), in job
    children with the job limits and the synchronous time limit, never in the server process:
    at most ``workers`` at once, on the lane's own threads, else :class:`Busy`."""

    def __init__(self, name: str, workers: int, limits: Limits) -> None:
        self.name = name
        self.workers = max(1, workers)
        self.limits = limits
        self.busy = 0  # children running (changed on the event-loop thread only)
        self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix=f"threadmap-{name}")

    async def run(self, task: Task) -> Outcome:
        if self.busy >= self.workers:
            raise Busy(self.name)
        self.busy += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self.pool, run_job, task, self.limits.sync_seconds, self.limits.job_memory_mb)
        finally:
            self.busy -= 1

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


class Service:
    """The store, the backend, the lanes and the in-flight jobs of one server."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = Store(settings.db, busy_seconds=settings.store_busy_seconds)
        self.metrics = Metrics()
        self.backend: Backend | None = None
        self.inflight: set[str] = set()
        self.lock = threading.RLock()  # admission: the capacity check and the dispatch together
        # a client without the token can never take the workers of one with it
        self.lanes = {"sync": Lane("sync", settings.sync_workers, settings.limits),
                      "public": Lane("public", settings.public_workers, settings.limits)}

    def lane(self, authenticated: bool) -> Lane:
        return self.lanes["sync" if authenticated or self.settings.token is None else "public"]

    def start(self) -> None:
        self.backend = Backend(self.settings)
        for job_id in self.store.requeue_unfinished():
            self.dispatch(job_id)

    def stop(self) -> None:
        if self.backend is not None:
            self.backend.close()
        for lane in self.lanes.values():
            lane.close()

    def stored_job(self, job_id: str) -> SpecJob | None:
        """A stored job as a task (its child validates the text)."""
        job = self.store.get(job_id)
        if job is None:
            return None
        return SpecJob(job.id, job.spec_text, job.spec_format, job.name,  # type: ignore[arg-type]
                       Options.from_dict(job.options))

    def dispatch(self, job_id: str, job: SpecJob | None = None) -> None:
        """Run a stored job: ``job`` is the validated request when the server has it."""
        if self.backend is None or job_id in self.inflight:
            return
        task = job if job is not None else self.stored_job(job_id)
        if task is None:
            return
        self.inflight.add(job_id)
        self.metrics.queue.set(len(self.inflight))
        started = time.monotonic()

        def on_progress(p: dict[str, Any]) -> None:
            self.store.progress(job_id, p)

        fut = self.backend.submit(task, lambda: self.store.start(job_id), on_progress)

        def done(f: Future[Outcome]) -> None:
            try:
                result = f.result()
            except Exception as e:  # noqa: BLE001 - a lost worker fails the job, never the server
                result = Outcome(error=f"the worker failed: {type(e).__name__}: {e}")
            failed = result.error is not None or result.report is None or result.exit_status is None
            state = "failed" if failed else "done"
            try:
                if failed or result.report is None or result.exit_status is None:
                    self.store.fail(job_id, result.error or "internal error: the job answered no report",
                                    result.seconds)
                else:
                    self.store.finish(job_id, result.report, result.exit_status, result.sarif, result.junit,
                                      result.seconds)
            except StoreBusy as e:
                # the row keeps its state: submitting the spec again runs it again
                LOG.warning("job %s: its result was not stored: %s", job_id, e)
            self.metrics.duration.labels(state).observe(time.monotonic() - started)
            with self.lock:
                self.inflight.discard(job_id)
                self.metrics.queue.set(len(self.inflight))

        fut.add_done_callback(done)
