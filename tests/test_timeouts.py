"""The tests' time limits count CPU time: waiting is free, spinning is stopped, and an expiry
swallowed by a callback is not lost."""

from __future__ import annotations

import gc
import time

import pytest

from tests.support.timeouts import cpu_seconds, time_limit


def spin(cpu_s: float) -> None:
    end = cpu_seconds() + cpu_s
    while cpu_seconds() < end:
        pass


def test_waiting_does_not_count() -> None:
    # a busy machine makes a test wait, not compute: 0.6 s asleep under a 0.3 s limit passes
    with time_limit(0.3, "sleep"):
        time.sleep(0.6)


def test_spinning_is_stopped() -> None:
    t0 = cpu_seconds()
    with pytest.raises(TimeoutError, match="CPU time"), time_limit(0.2, "spin"):
        spin(30)
    assert cpu_seconds() - t0 < 10


def test_expiry_swallowed_in_a_gc_callback_fires_again() -> None:
    # hypothesis times collections with a gc callback; an exception raised there is printed
    # and dropped. The limit must still end the body. Here two thirds of the CPU time is
    # spent inside the callback, so the first expiry almost surely lands there.
    fired_in_callback = []

    def callback(phase: str, info: dict[str, int]) -> None:
        spin(0.004)
        fired_in_callback.append(phase)

    gc.callbacks.append(callback)
    try:
        t0 = cpu_seconds()
        with pytest.raises(TimeoutError), time_limit(0.2, "gc-heavy loop"):
            while True:
                spin(0.004)
                gc.collect(0)  # the youngest generation: a cheap collection, as most are
        # the lost expiry of a naive limit never fires again; a pending one fires within a
        # few collections (generous: CPU accounting on a loaded machine is coarse)
        assert cpu_seconds() - t0 < 120
    finally:
        gc.callbacks.remove(callback)
    assert fired_in_callback
