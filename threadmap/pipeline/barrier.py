"""The mbarrier (``cutlass/arch/barrier.h``: ``ClusterBarrier``, ``ClusterTransactionBarrier``;
PTX ``mbarrier``): a phase completes when its pending arrivals reach zero and its transaction
count is zero; the next phase then starts with the initial arrival count.  A wait names a
phase *parity*, not a phase: ``try_wait.parity(P)`` succeeds once the barrier's current
(incomplete) phase has the other parity -- which is why a wait on the wrong parity passes at
once instead of waiting."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Mbarrier:
    """One mbarrier: ``init`` arrivals per phase, ``completed`` phases so far, ``pending``
    arrivals of the current phase, ``tx`` its transaction count (bytes expected and not yet
    delivered; may go below zero while bytes arrive before they are expected)."""

    init: int
    completed: int = 0
    pending: int | None = None   # None: the phase's initial count, ``init``
    tx: int = 0

    def __post_init__(self) -> None:
        if self.pending is None:
            object.__setattr__(self, "pending", self.init)

    def _settle(self) -> Mbarrier:
        # a phase completes when both counts are zero; the next starts with `init` arrivals
        if self.pending == 0 and self.tx == 0:
            return replace(self, completed=self.completed + 1, pending=self.init, tx=0)
        return self

    def arrive(self, count: int = 1) -> Mbarrier:
        """``mbarrier.arrive``: ``count`` arrivals on the current phase.  Law: with ``tx == 0``,
        ``init`` arrivals complete exactly one phase."""
        assert self.pending is not None
        return replace(self, pending=self.pending - count)._settle()

    def expect_tx(self, nbytes: int) -> Mbarrier:
        """``mbarrier.expect_tx``: the current phase also waits for ``nbytes`` more bytes."""
        return replace(self, tx=self.tx + nbytes)

    def arrive_expect_tx(self, nbytes: int, count: int = 1) -> Mbarrier:
        """``mbarrier.arrive.expect_tx``: expect ``nbytes``, then arrive (the order PTX gives)."""
        return self.expect_tx(nbytes).arrive(count)

    def complete_tx(self, nbytes: int) -> Mbarrier:
        """What a TMA copy's completion does: ``nbytes`` delivered.  Law: ``arrive_expect_tx(b)``
        followed by ``complete_tx`` of byte counts summing to ``b`` completes one phase."""
        return replace(self, tx=self.tx - nbytes)._settle()

    @property
    def overrun(self) -> bool:
        """More arrivals than the phase expects (undefined behaviour in PTX)."""
        return self.pending is not None and self.pending < 0


def try_wait_parity(bar: Mbarrier, parity: int) -> bool:
    """``mbarrier.try_wait.parity``: true iff the phase of parity ``parity`` has completed,
    i.e. the current phase's parity differs.  Law: ``try_wait_parity(b, p) != try_wait_parity(b,
    p ^ 1)``."""
    return (bar.completed & 1) != (parity & 1)
