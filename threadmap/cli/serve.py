"""``threadmap serve``: the HTTP service (needs the ``service`` extra)."""

from __future__ import annotations

import click

from threadmap.cli.common import UsageError


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="address to bind (loopback unless you give another)")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--db", default="threadmap.db", show_default=True, help="the SQLite job store (created if missing)")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 256),
              help="jobs run at once (each in its own process)")
@click.option("--queue", "queue_max", default=256, show_default=True, type=click.IntRange(1, 1_000_000),
              help="jobs queued or running at most; beyond it POST /v1/jobs answers 503 with Retry-After")
@click.option("--job-timeout", default=120.0, show_default=True, type=click.FloatRange(0.1, 86400),
              help="seconds a job may run before it is killed and marked failed")
@click.option("--job-memory", default=4096, show_default=True, type=click.IntRange(64, 1 << 22),
              help="MiB of address space a job may use")
@click.option("--sync-timeout", default=20.0, show_default=True, type=click.FloatRange(0.1, 3600),
              help="seconds POST /v1/verify, a stage's pictures or a calculation may take")
@click.option("--sync-workers", default=2, show_default=True, type=click.IntRange(1, 256),
              help="synchronous requests (verify, pictures, calculator) at once; beyond it 503")
@click.option("--max-body", default=1 << 20, show_default=True, type=click.IntRange(1024, 1 << 30),
              help="request body limit in bytes")
@click.option("--request-timeout", default=30.0, show_default=True, type=click.FloatRange(0.1, 3600),
              help="seconds a request's head and body may take to arrive; a slower client is dropped")
@click.option("--max-connections", default=128, show_default=True, type=click.IntRange(1, 100_000),
              help="HTTP connections at once; beyond it 503 (run behind a reverse proxy on a network)")
@click.option("--token", envvar="THREADMAP_TOKEN", default=None,
              help="bearer token the write endpoints require (or $THREADMAP_TOKEN)")
@click.option("--dask", "dask_address", default=None, metavar="SCHEDULER_ADDRESS",
              help="run jobs on a Dask distributed cluster (tcp://host:8786) instead of local workers")
def serve_cmd(host: str, port: int, db: str, workers: int, queue_max: int, job_timeout: float, job_memory: int,
              sync_timeout: float, sync_workers: int, max_body: int, request_timeout: float,
              max_connections: int, token: str | None, dask_address: str | None) -> None:
    """Run the verification service: the HTTP API (/docs), the job store and the Layout
    Explorer page (/).

    \b
      threadmap serve                         # http://127.0.0.1:8000/
      threadmap serve --db /var/lib/threadmap/jobs.db --workers 8 --token "$TOKEN"
      threadmap serve --dask tcp://scheduler:8786

    Jobs survive a restart: those queued or running when the server stopped run again.
    """
    try:
        import uvicorn

        from threadmap.service.app import Settings, create_app
        from threadmap.service.guards import uvicorn_options
        from threadmap.service.model import Limits
    except ImportError as e:
        raise UsageError(f"the service needs its extra: pip install 'threadmap[service]' ({e})") from None
    limits = Limits(max_body_bytes=max_body, job_seconds=job_timeout, job_memory_mb=job_memory,
                    sync_seconds=sync_timeout)
    settings = Settings(db=db, workers=workers, queue_max=queue_max, token=token or None,
                        dask_address=dask_address, limits=limits, sync_workers=sync_workers,
                        request_seconds=request_timeout, max_connections=max_connections,
                        loopback=host in ("127.0.0.1", "localhost", "::1") or host.startswith("127."))
    try:
        app = create_app(settings)
    except Exception as e:  # noqa: BLE001 - an unusable store or cluster is a usage problem
        raise UsageError(f"cannot start: {type(e).__name__}: {e}") from None
    uvicorn.run(app, host=host, port=port, **uvicorn_options(settings))


