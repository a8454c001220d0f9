"""CUTLASS's asynchronous pipelines as a protocol: mbarriers (``cutlass/arch/barrier.h``), the
pipeline state of ``cutlass/pipeline/sm90_pipeline.hpp``, ``cp.async`` groups
(``cute/arch/copy_sm80.hpp``), and an explorer that runs a protocol's roles under every
interleaving and every completion order of its asynchronous copies, reporting each hazard
with a witness (:mod:`threadmap.pipeline.explore`)."""

from threadmap.pipeline.barrier import Mbarrier, try_wait_parity
from threadmap.pipeline.explore import Exploration, PipelineFinding, explore, prove_rounds
from threadmap.pipeline.program import Block, Op, Protocol, Role
from threadmap.pipeline.sm90_pipeline import PipelineState, make_producer_start_state

__all__ = ["Block", "Exploration", "Mbarrier", "Op", "PipelineFinding", "PipelineState", "Protocol", "Role",
           "explore", "make_producer_start_state", "prove_rounds", "try_wait_parity"]
