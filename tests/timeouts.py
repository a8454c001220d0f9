"""A SIGALRM time limit for fuzz tests: a hang fails the example instead of the run."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def time_limit(seconds: int, what: str = "the call") -> Iterator[None]:
    """Fail (instead of hanging) when the body runs longer than ``seconds``."""
    def handler(signum: int, frame: Any) -> None:
        raise TimeoutError(f"{what} did not finish within {seconds}s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
