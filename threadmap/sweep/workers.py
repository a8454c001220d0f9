"""Where the sweep's tasks run: in process, a local process pool, or a Dask cluster.

The driver (:mod:`threadmap.sweep.run`) submits extraction batches and verifications and
waits for the first that finishes; it keeps the store itself.  :class:`Workers` is the little
it needs from a ``concurrent.futures`` executor or a ``distributed.Client``: ``submit``, a
future's ``result``/``cancel``, and "the futures done among these".  ``distributed`` (the
``service`` extra) is imported only for ``--dask``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Collection
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from typing import Any, Protocol

from threadmap.errors import DependencyError
from threadmap.sweep.library import SweepError

DASK_EXTRA = "--dask needs the distributed package: pip install 'threadmap[service]'"

#: seconds to reach a Dask scheduler (and for a cluster without workers to get one)
DASK_TIMEOUT = 10.0


class Workers(Protocol):
    """What the driver submits its tasks to."""

    #: tasks that run at once (the driver keeps this many extraction batches in flight)
    slots: int

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        """A future of ``fn(*args)`` (with ``result()`` and ``cancel()``)."""
        ...

    def first_done(self, futures: Collection[Any]) -> set[Any]:
        """The futures among ``futures`` that are done, once at least one is."""
        ...

    def close(self) -> None:
        """Cancel what is left and let the workers go."""
        ...


class LocalWorkers:
    """A local pool: ``jobs`` processes, or the calling process itself for ``jobs <= 1``."""

    def __init__(self, jobs: int) -> None:
        self.slots = max(1, jobs)
        self.executor: Executor = _Inline() if jobs <= 1 else ProcessPoolExecutor(
            max_workers=jobs, initializer=die_with_driver, initargs=(os.getpid(),))

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.executor.submit(fn, *args)

    def first_done(self, futures: Collection[Any]) -> set[Any]:
        return set(wait(list(futures), return_when=FIRST_COMPLETED).done)

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


def die_with_driver(driver: int) -> None:
    """A pool process's start: it ends when the driver does.  A driver killed with SIGKILL
    otherwise leaves its idle pool processes waiting forever on their task queue (each end of
    which they hold themselves); its store is safe either way.  Linux's parent-death signal."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):  # not Linux: the processes linger as before
        return
    if os.getppid() != driver:  # the driver died before the signal was set
        os._exit(1)


class _Inline(Executor):
    """One process: the work runs at submit (tests, --jobs 1)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - delivered through the future, as a pool does
            fut.set_exception(e)
        return fut


class DaskWorkers:
    """A Dask cluster: a scheduler's address, or ``local:N`` for a ``LocalCluster`` of N worker
    processes with one thread each (``local``: one per CPU) started here and closed after."""

    def __init__(self, address: str) -> None:
        try:
            import distributed
        except ImportError as e:
            raise DependencyError(f"{DASK_EXTRA} ({e})") from None
        self.distributed = distributed
        self.cluster: Any = None
        n = local_workers(address)
        if n is not None:
            # the workers import threadmap as this process does (PYTHONPATH and the environment
            # of this process, THREADMAP_CACHE included, are inherited)
            self.cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                                    dashboard_address=None)
            address = self.cluster.scheduler_address
        else:
            probe(address)
        try:
            self.client = distributed.Client(address, timeout=DASK_TIMEOUT, set_as_default=False)
            if not self.client.nthreads():
                self.client.wait_for_workers(1, timeout=DASK_TIMEOUT)
        except Exception as e:  # noqa: BLE001 - any failure to attach is the user's address, one line
            self._close_cluster()
            raise SweepError(f"--dask {address}: {_why(e)}") from None
        self.slots = max(1, sum(self.client.nthreads().values()))

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        # pure=False: two equal tasks are two tasks (a verification is never shared this way;
        # equal specs are shared by the driver)
        return self.client.submit(fn, *args, pure=False)

    def first_done(self, futures: Collection[Any]) -> set[Any]:
        with self.client.as_current():  # distributed.wait asks for the current client
            return set(self.distributed.wait(list(futures), return_when="FIRST_COMPLETED").done)

    def close(self) -> None:
        self.client.close()
        self._close_cluster()

    def _close_cluster(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None


def check_address(address: str) -> None:
    """A clear error for an address that is neither ``local[:N]`` nor a well-formed scheduler
    address (checked before any work, without connecting)."""
    if local_workers(address) is None:
        try:
            from distributed.comm.addressing import get_address_host_port, normalize_address
        except ImportError as e:
            raise DependencyError(f"{DASK_EXTRA} ({e})") from None
        try:
            get_address_host_port(normalize_address(address))
        except ValueError as e:
            raise SweepError(f"--dask {address}: {_why(e)}") from None


def local_workers(address: str) -> int | None:
    """The worker count of ``local`` / ``local:N`` (None for a scheduler's address)."""
    if address != "local" and not address.startswith("local:"):
        return None
    n = address.partition(":")[2]
    if not n:
        return os.cpu_count() or 1
    if not n.isdigit() or not 1 <= int(n) <= 1024:
        raise SweepError(f"--dask {address}: local:N needs N, a number of worker processes from 1 to 1024")
    return int(n)


def probe(address: str) -> None:
    """A clear error, within :data:`DASK_TIMEOUT`, if no Dask scheduler answers at ``address``
    (checked before ``distributed.Client``, which keeps retrying and leaves a half-made client
    behind on a malformed address)."""
    from distributed.comm import connect
    from distributed.comm.addressing import normalize_address

    async def hello() -> None:
        comm = await connect(normalize_address(address), timeout=DASK_TIMEOUT)
        await comm.close()

    try:
        asyncio.run(hello())
    except Exception as e:  # noqa: BLE001 - malformed, refused, timed out or not Dask: one line each
        raise SweepError(f"--dask {address}: {_why(e)}") from None


def _why(e: Exception) -> str:
    if isinstance(e, ValueError):
        return f"not a scheduler address ({e}; e.g. tcp://host:8786, or local:N)"
    if isinstance(e, (OSError, TimeoutError)):
        return f"no Dask scheduler reached ({e})"
    return f"no Dask scheduler answered there ({type(e).__name__}: the peer does not speak Dask's protocol?)"


def open_workers(jobs: int, dask: str | None) -> Workers:
    """The workers of one sweep: Dask's when ``dask`` is given, else a local pool."""
    return DaskWorkers(dask) if dask else LocalWorkers(jobs)
