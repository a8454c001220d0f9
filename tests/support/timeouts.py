"""CPU-time limits for tests: a hang fails the example instead of the run, a busy machine never does.

The limit counts this process's CPU time (``ITIMER_PROF``: user + system), not wall time, so
a test on a loaded 2-core machine is as far from its limit as on an idle one.  The signal can
land anywhere, including inside a garbage-collection callback (hypothesis times collections
with one), where an exception is printed and dropped.  So an expiry during a collection is
kept pending, and the end of the collection re-arms the timer for a moment later, outside it.
"""

from __future__ import annotations

import gc
import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# CPU seconds after a collection's end at which a pending expiry fires
REARM_S = 0.001


def cpu_seconds() -> float:
    """This process's CPU time (user + system) in seconds, children excluded."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


@contextmanager
def time_limit(seconds: float, what: str = "the call", exc: type[BaseException] = TimeoutError) -> Iterator[None]:
    """Raise ``exc`` inside the body once it has used ``seconds`` of this process's CPU time."""
    collecting, pending = [False], [False]

    # the first callback of a collection's start and the last of its stop bracket every other
    def opened(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collecting[0] = True

    def closed(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            collecting[0] = False
            if pending[0]:
                signal.setitimer(signal.ITIMER_PROF, REARM_S)

    def handler(signum: int, frame: Any) -> None:
        # the bracketing callbacks are inside the collection too, before or after their flag
        if collecting[0] or (frame is not None and frame.f_code in (opened.__code__, closed.__code__)):
            pending[0] = True
            return
        signal.setitimer(signal.ITIMER_PROF, REARM_S)  # again if something swallows this one
        raise exc(f"{what} did not finish within {seconds} s of CPU time")

    gc.callbacks.insert(0, opened)
    gc.callbacks.append(closed)
    old = signal.signal(signal.SIGPROF, handler)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
        gc.callbacks.remove(opened)
        gc.callbacks.remove(closed)
