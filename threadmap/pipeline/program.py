"""A pipeline protocol: roles (warp ranges running one program), the mbarrier arrays, the
ring's shared buffers, the TMA copies and named barriers.  A role's program is a list of
blocks, each a loop of operations; an operation on a stage acts on iteration ``start + i +
ahead`` of the K-loop (``ahead`` < 0: an earlier iteration, as a release that lags its wait),
whose stage and phase come from the role's :class:`~threadmap.pipeline.sm90_pipeline.PipelineState`.
Operations on an iteration outside ``[0, iterations)`` do nothing (a commit still closes a
group: CUTLASS commits empty groups past the end of the K-loop)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

OpKind = Literal[
    "wait", "arrive", "arrive_expect_tx", "expect_tx", "tma", "tma_store", "cp_async", "commit", "wait_group",
    "sync", "read", "write", "mma", "wait_mma", "tma_store_wait", "fence_proxy_async", "tmem_load", "tmem_wait_ld",
    "use",
]
#: operations that act on one iteration's stage (the others act on the role alone)
STAGED: frozenset[str] = frozenset({"wait", "arrive", "arrive_expect_tx", "expect_tx", "tma", "tma_store",
                                     "cp_async", "read", "write", "mma"})


@dataclass(frozen=True)
class Op:
    """One operation.  ``barrier``: the mbarrier array it uses (``tma``: the barrier its bytes
    complete on); ``buffers``: the shared buffers it reads or writes; ``count``: arrivals;
    ``nbytes``: bytes expected (``expect_tx``) or moved (``tma``, ``cp_async``: per stage, all
    buffers); ``n``: ``wait_group<n>`` / ``warpgroup_wait<n>`` / ``tma_store_wait<n>``; ``sync``: the named barrier;
    ``multicast``: the CTA mask of a multicast TMA; ``ctas``: ``"all"`` to arrive on the barrier
    of every CTA of the cluster; ``fragment``: the register fragment a ``tmem_load`` fills or a
    ``use`` reads; ``where``: the spec path it came from (for findings)."""

    kind: OpKind
    barrier: str | None = None
    buffers: tuple[str, ...] = ()
    count: int = 1
    nbytes: int = 0
    ahead: int = 0
    n: int = 0
    sync: str | None = None
    multicast: int | None = None
    ctas: Literal["self", "all"] = "self"
    copy: str | None = None
    fragment: str | None = None
    where: tuple[object, ...] = ()


@dataclass(frozen=True)
class Block:
    """``for i in range(loop): ops`` acting on iterations ``start + i + op.ahead``
    (``from_end``: ``iterations + start + i + op.ahead``)."""

    ops: tuple[Op, ...]
    loop: int = 1
    start: int = 0
    #: the loop runs the K-loop's trip count (so it changes with it)
    trip: bool = False
    #: ``start`` counts from the K-loop's end (iteration ``iterations + start``): a drain after it
    from_end: bool = False


@dataclass(frozen=True)
class Role:
    """Warps ``first_warp .. last_warp`` running ``blocks`` in lockstep; ``start_phase`` and
    ``start_stage`` are its PipelineState at iteration 0."""

    name: str
    first_warp: int
    last_warp: int
    blocks: tuple[Block, ...]
    start_phase: int = 0
    start_stage: int = 0
    where: tuple[object, ...] = ()

    @property
    def threads(self) -> int:
        return 32 * (self.last_warp - self.first_warp + 1)

    @property
    def first_thread(self) -> int:
        return 32 * self.first_warp


@dataclass(frozen=True)
class Protocol:
    """The pipeline: ``stages`` in the ring (every barrier array and buffer has one per stage),
    its roles, ``barriers`` (name -> arrivals per phase), ``buffers`` (name -> bytes of one
    stage, and the byte address of stage 0 in its shared buffer), named barriers ``syncs``
    (name -> member roles) and the cluster's size."""

    stages: int
    roles: tuple[Role, ...]
    barriers: dict[str, int] = field(default_factory=dict)
    buffers: dict[str, tuple[int, int]] = field(default_factory=dict)
    syncs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    cluster_size: int = 1
    where: tuple[object, ...] = ()

    @property
    def max_lag(self) -> int:
        """The farthest any operation reaches from its loop variable (``|ahead|``)."""
        return max((abs(o.ahead) for r in self.roles for b in r.blocks for o in b.ops), default=0)

    def stage_address(self, buffer: str, stage: int) -> int:
        size, base = self.buffers[buffer]
        return base + stage * size
