"""``cutlass::PipelineState`` (``cutlass/pipeline/sm90_pipeline.hpp``): a position in the ring
of ``Stages`` shared-memory stages -- the stage index, the phase parity the next wait uses,
and the number of iterations so far."""

from __future__ import annotations

from dataclasses import dataclass

from threadmap.errors import SpecError


@dataclass(frozen=True)
class PipelineState:
    """``PipelineState<Stages>{index, phase, count}``."""

    stages: int
    index: int = 0
    phase: int = 0
    count: int = 0

    def __post_init__(self) -> None:
        if self.stages < 1:
            raise SpecError(f"a pipeline has at least one stage, got {self.stages}")

    def advance(self, n: int = 1) -> PipelineState:
        """``operator+=`` / ``advance(n)``: ``n`` iterations on.  Law: ``advance(a).advance(b) ==
        advance(a + b)``; the phase flips each time the index wraps."""
        wraps = (self.index + n) // self.stages
        return PipelineState(self.stages, (self.index + n) % self.stages, self.phase ^ (wraps & 1), self.count + n)

    def at(self, iteration: int) -> PipelineState:
        """The state ``iteration`` iterations after this one (this one is iteration 0)."""
        return self.advance(iteration)


def make_producer_start_state(stages: int) -> PipelineState:
    """The producer starts on the opposite phase: the buffers are initially empty, so its
    first wait on each empty barrier passes (``make_producer_start_state``)."""
    return PipelineState(stages, 0, 1, 0)
