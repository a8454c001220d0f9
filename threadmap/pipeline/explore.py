"""Run a pipeline protocol under every interleaving of its roles and every completion time of
its asynchronous copies, and report each hazard with a witness.

Semantics (one state per reachable point; a depth-first search with a visited set):

* A role is a warp range executing its program in lockstep; one step runs its next operation
  when it is enabled.  ``wait`` is enabled when :func:`~threadmap.pipeline.barrier.try_wait_parity`
  holds for the stage's barrier and the role's phase; ``sync`` when every member role of the
  named barrier has reached it; ``wait_group<n>`` when every committed cp.async group but the
  ``n`` newest has landed.  Everything else is always enabled.
* A TMA or cp.async copy is issued by a step and *lands* in a later step of its own (its
  bytes may be written any time in between): a TMA landing completes its bytes on the
  barrier it was issued with, in every CTA of its multicast mask.  Copies issued by one role
  land in the order issued (``fifo``; ``fifo=False`` lets any copy in flight land next).
* Reads are checked against what the stage holds: the round they need (their iteration),
  landed, and *ordered* before the read -- a TMA landing by a wait that observed the phase
  the landing completed; a cp.async by the reader's ``wait_group`` and, for a role of more
  than one thread, a ``sync`` after it (the threads read each other's copies); a generic store
  of another role by a ``sync``.  Reads by the async proxy (``mma``, ``tma_store``) of generic
  stores need a ``fence_proxy_async`` by the writer before that ``sync``.  An ``mma`` keeps
  reading its stages until the role's ``wait_mma`` retires it.

Findings (``PipelineFinding.kind``):

* ``read_before_landed``: a read of a stage whose round has not landed, or is not ordered
  before the read (a wait on the wrong phase, a missing ``wait_group`` or barrier);
* ``refill_while_read``: a copy into a stage that a consumer still reads, or a stage that
  already holds a later round when it is read (one stage too few, a release too early);
* ``missing_proxy_fence``: the async proxy reads generic stores no ``fence.proxy.async`` ordered;
* ``tx_mismatch_hang``: a wait on a phase whose arrivals are complete but whose transaction
  count never returns to zero (expected bytes != bytes delivered);
* ``arrival_deadlock``: a wait on a phase whose arrivals never complete (or that waits for a
  phase nobody completes); ``sync_deadlock``: a named barrier a member never reaches;
* ``over_arrival``: more arrivals than a phase expects;
* ``multicast_outside_cluster``: a multicast mask with a bit for a CTA the cluster lacks;
* ``tmem_read_before_wait``: registers a ``tcgen05.ld`` (``tmem_load``) fills are used before
  the role's ``tcgen05.wait::ld`` (``tmem_wait_ld``): the load is asynchronous, and its
  registers hold nothing defined until the wait.

A path that has a finding is not explored further (the kernel is already wrong there); the
first witness of each (kind, operation) is kept, with the events that led to it.

The search: a state is a tuple of fixed slots (per instance, barrier, buffer stage), its own
key -- nothing is sorted; identical roles of a CTA are interchangeable (a state's key orders
them by their own state); steps that only add or retire a role's own reads are taken with the
next one (:data:`CHAINED`); in the every-count search a state is kept in the normal form of
:meth:`_Machine.normalize` (whole periods, phase counts modulo 2, and the rotation of the ring
in its steady state).
"""


from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import Any

from threadmap.errors import SpecError
from threadmap.pipeline.program import STAGED, Op, Protocol, Role
from threadmap.pipeline.sm90_pipeline import PipelineState

KINDS = ("read_before_landed", "refill_while_read", "missing_proxy_fence", "tx_mismatch_hang", "arrival_deadlock",
         "sync_deadlock", "over_arrival", "multicast_outside_cluster", "tmem_read_before_wait")
TRACE = 12  # events kept before a finding
#: periods of the ring two roles may drift apart in the every-count search before the state is
#: not explored further (a correct pipeline keeps its roles within one period plus its lag)
MAX_SPREAD = 3
#: operations after which the role's next one is taken in the same step: they change only the
#: role's own state or add and retire its own reads, which enable or disable no other step and
#: can only make another step's check find more if that step is taken before them (see run())
CHAINED = frozenset({"read", "mma", "wait_mma", "tma_store_wait", "commit", "fence_proxy_async", "tmem_load",
                     "tmem_wait_ld", "use"})
#: whether the every-count search identifies states equal up to a rotation of the ring (see
#: :meth:`_Machine.normalize`); off, only shifts by whole periods are (a test compares the two)
ROTATE = True


@dataclass(frozen=True)
class PipelineFinding:
    """One hazard: its kind, a sentence, the spec path of the operation, and the witness
    (CTA, role, warps, thread, iteration (round), stage, buffer, shared address, the events
    before it)."""

    kind: str
    message: str
    where: tuple[object, ...]
    witness: dict[str, Any]


@dataclass
class Exploration:
    """What one exploration saw: the trip count, the states visited, the findings, whether
    the state limit cut it short, and the runs that finished."""

    iterations: int
    states: int = 0
    findings: list[PipelineFinding] = field(default_factory=list)
    truncated: bool = False
    finished_runs: int = 0
    #: states not explored because the roles drifted apart by more than :data:`MAX_SPREAD`
    #: periods (decoupled: the protocol already failed to hold them together)
    pruned: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.findings and not self.truncated


# -- the state -------------------------------------------------------------------------------------
# A state is a tuple of the fields below, of fixed slots numbered once per protocol (so nothing is
# sorted): immutable, hashable, and its own key while the interchangeable roles are in order.
KFIX, KLB, INST, BARS, CONTENT, FLIGHT, READING, WARM = range(8)
# KFIX     the trip count once known, else None (rounds and loop counters are relative to the
#          frame's ``base``, an absolute shift kept out of the state)
# KLB      the least trip count still possible
# INST     per instance, the I_* fields below
# BARS     per barrier slot (cta, barrier, stage): (completed phases, pending arrivals, tx bytes)
# CONTENT  per content slot (cta, buffer, stage): None or the C_* fields below
# FLIGHT   the copies issued and not landed, in issue order: (descriptor, round, group)
# READING  generic reads of a role of several threads, open until its next barrier or all-thread
#          arrive: frozenset of (content slot, instance, round)
# WARM     stages are relative to the base (the ring rotated, see normalize()); else the base is a
#          whole number of periods
I_PC, I_OBS, I_GROUPS, I_MMA, I_UNFENCED, I_TMEM, I_ARRIVED = range(7)
# I_PC       (block, trip, operation), () once finished
# I_OBS      per barrier it waits on and stage: the completed phases its last wait saw (-1: none)
# I_GROUPS   its committed cp.async groups: group (ri, x) is its x-th oldest committed one,
#            (ri, I_GROUPS) the open one, -1 a retired one
# I_MMA      the asynchronous reads still going on: (mma | tma_store, ((content slot, round), ...))
# I_UNFENCED the content slots of its generic stores no fence.proxy.async covered (sorted)
# I_TMEM     the register fragments with a tcgen05.ld in flight (sorted)
# I_ARRIVED  arrived at the named barrier of its operation, waiting for the others
C_ROUND, C_KIND, C_WRITER, C_TAGBAR, C_TAGPHASE, C_GID, C_FLAGS = range(7)
# C_KIND tma | cp | gen; C_TAGBAR, C_TAGPHASE (tma) the barrier and the phase its landing
# completed; C_GID (cp) its group; C_FLAGS the bits below
RETIRED, VISIBLE, FENCE, FENCED = 1, 2, 4, 8
# RETIRED (cp) the writer's wait_group retired it; VISIBLE ordered for other threads by a sync;
# FENCE (gen) fenced, not yet published by a sync; FENCED fenced and published
_State = tuple[Any, ...]
#: a state or a step's draft of one (lists where it writes): what the steps' conditions read
_View = Sequence[Any]


class _Desc:
    """A copy as issued (the part of a flight entry that does not change): its kind, issuer,
    target content slots, bytes per target CTA, barrier; for a TMA copy the barrier slot and the
    content slots of each target CTA."""

    __slots__ = ("kind", "issuer", "targets", "nbytes", "barrier", "lands", "stage", "buffers", "key")

    def __init__(self, key: tuple[Any, ...], targets: tuple[int, ...], lands: tuple[tuple[int, tuple[int, ...]], ...],
                 stage: int, buffers: tuple[str, ...]) -> None:
        self.key = key
        self.kind, self.issuer, _, self.nbytes, self.barrier = key
        self.targets, self.lands, self.stage, self.buffers = targets, lands, stage, buffers


class _OpInfo:
    """One operation of one instance's program, with what its steps look up (per stage of the
    ring where it acts on one)."""

    __slots__ = ("op", "kind", "staged", "chained", "gated", "ahead", "start", "from_end", "trip", "last", "loop",
                 "bars", "obs", "slots", "desc", "members")

    def __init__(self, op: Op, blk: Any, o: int) -> None:
        self.op, self.kind = op, op.kind
        self.staged = op.kind in STAGED
        self.chained = op.kind in CHAINED
        self.gated = op.kind in ("wait", "wait_group", "sync")   # not always enabled
        self.ahead, self.start, self.from_end, self.trip = op.ahead, blk.start, blk.from_end, blk.trip
        self.last = o + 1 == len(blk.ops)
        self.loop = blk.loop
        self.bars: list[tuple[int, ...]] = []     # per stage: the barrier slots it acts on
        self.obs: list[int] = []                  # per stage: where in the instance's I_OBS a wait writes
        self.slots: list[tuple[int, ...]] = []    # per stage: the content slots of its buffers (own CTA)
        self.desc: list[int] = []                 # per stage: the copy it issues
        self.members: frozenset[int] = frozenset()  # sync: the instances of its named barrier


#: an event: its parts, written out (:meth:`_Machine.text`) only for a witness: strings, a step's
#: label (instance, operation, round, base) and a copy's landing (descriptor, round, base); or
#: the events of a run of steps, after :data:`_CHAIN`
_Event = tuple[Any, ...]
_CHAIN = object()


class _Found(Exception):
    def __init__(self, kind: str, message: str, op: Op | None, witness: dict[str, Any]) -> None:
        super().__init__(message)
        self.kind, self.message, self.op, self.witness = kind, message, op, witness


class _Machine:
    """The protocol's instances (one per CTA of the cluster and role), the slots of its state,
    and its steps."""

    def __init__(self, p: Protocol, iterations: int | None, fifo: bool) -> None:
        self.p = p
        self.k = iterations                 # None: every trip count >= 1 at once
        self.fifo = fifo
        self.S = S = p.stages
        self.period = 2 * S                 # stage index and phase parity repeat with it
        self.base = 0                       # the state being stepped's shift (for messages)
        self.origin: _State = ()            # the state the step being taken started from
        self._pstates: dict[tuple[int, int, int], PipelineState] = {}
        self.inst: list[tuple[int, Role]] = [(c, r) for c in range(p.cluster_size) for r in p.roles]
        n = len(self.inst)
        # the slots: barriers and buffers per (cta, name), S stages each
        self.bkeys = [(c, b, st) for c in range(p.cluster_size) for b in p.barriers for st in range(S)]
        self.bslot = {k: i for i, k in enumerate(self.bkeys)}
        self.binit = [p.barriers[b] for _, b, _ in self.bkeys]
        buffers = list(p.buffers)
        for _, r in self.inst:
            for blk in r.blocks:
                for op in blk.ops:
                    buffers += [b for b in op.buffers if b not in buffers]
        self.ckeys = [(c, b, st) for c in range(p.cluster_size) for b in buffers for st in range(S)]
        self.cslot = {k: i for i, k in enumerate(self.ckeys)}
        # per instance, the barriers it waits on (its I_OBS holds S entries for each)
        self.obars: list[list[str]] = []
        for _, r in self.inst:
            waited: list[str] = []
            for blk in r.blocks:
                for op in blk.ops:
                    if op.kind == "wait" and op.barrier is not None and op.barrier not in waited:
                        waited.append(op.barrier)
            self.obars.append(waited)
        #: per instance, where in its I_OBS the observations of each barrier it waits on start
        self.obs_at = [{b: i * S for i, b in enumerate(waited)} for waited in self.obars]
        # what bounds a barrier slot's phase counts from below: the waits that observed it and
        # the TMA landings that completed one of its phases
        self.obs_on = [[(ri, self.obars[ri].index(b) * S + st) for ri in range(n)
                        if self.inst[ri][0] == c and b in self.obars[ri]] for c, b, st in self.bkeys]
        self.tags_on = [[i for i, (cc, _, sg) in enumerate(self.ckeys) if (cc, sg) == (c, st)]
                        for c, _, st in self.bkeys]
        self.content_of = [[i for i, k in enumerate(self.ckeys) if k[0] == c] for c in range(p.cluster_size)]
        self.stage_of = [[self.pstate(r, j).index for j in range(self.period)] for _, r in self.inst]
        self.phase_of = [[self.pstate(r, j).phase & 1 for j in range(self.period)] for _, r in self.inst]
        self.descs: list[_Desc] = []
        self._desc_ids: dict[tuple[Any, ...], int] = {}
        self.ops = [[[self.op_info(ri, blk, o) for o in range(len(blk.ops))] for blk in r.blocks]
                    for ri, (_, r) in enumerate(self.inst)]
        # per instance and block: (start, from_end, trip, rotatable: a trip-count-relative loop)
        self.blocks = [[(b.start, b.from_end, b.trip, b.trip and not b.from_end) for b in r.blocks]
                       for _, r in self.inst]
        # interchangeable instances: one CTA, the same program, the same named barriers
        classes: dict[tuple[Any, ...], list[int]] = {}
        for ri, (c, r) in enumerate(self.inst):
            syncs = frozenset(nm for nm, roles in p.syncs.items() if r.name in roles)
            program = tuple(replace(b, ops=tuple(replace(o, where=()) for o in b.ops)) for b in r.blocks)
            classes.setdefault((c, program, r.start_phase, r.start_stage, r.threads, syncs), []).append(ri)
        self.classes = [v for v in classes.values() if len(v) > 1]
        # instances other fields name (a writer, an issuer, a reader, a group's owner): renaming
        # only those needs more than reordering INST
        self.named = any(op.kind in ("tma", "cp_async", "write") or op.kind == "read" and self.inst[ri][1].threads > 1
                         for cls in self.classes for ri in cls for blk in self.inst[ri][1].blocks for op in blk.ops)
        #: the usual classes: two interchangeable instances nothing else names (key() swaps them)
        self.pair: list[int] | None = None
        if len(self.classes) == 1 and len(self.classes[0]) == 2 and not self.named:
            self.pair = self.classes[0]
        #: per instance, the instances of its class before it when nothing else names them: from a
        #: state where the two are in the same state, their next steps reach states equal up to
        #: exchanging them (one key), and a finding of one is found by the other (at its own
        #: operation) -- so once the first's step ran without a finding, the second's can only
        #: reach a state seen
        self.twins: list[list[int]] = [[] for _ in range(n)]
        if not self.named:
            for cls in self.classes:
                for x, ri in enumerate(cls):
                    self.twins[ri] = list(cls[:x])
        self._rot: dict[tuple[int, int], tuple[Any, ...]] = {}
        #: how far below the least position an operation may act: its lag, and a block after the
        #: K-loop that starts more than one trip before the loop's end
        self.reach = p.max_lag + max([-b.start - 1 for _, r in self.inst for b in r.blocks if b.from_end] + [0])
        self._rot_desc: dict[tuple[int, int], int] = {}
        #: the barrier slots whose phase counts the step being taken changed (normalize() lowers them)
        self.dirty: list[int] = []
        #: the roles' spread (greatest - least position) in the state normalize() returned last
        self.spread = 0
        #: whether the step being taken changed a role's position (its block or loop trip)
        self.moved = True
        self.state0 = self.initial()

    def op_info(self, ri: int, blk: Any, o: int) -> _OpInfo:
        c, r = self.inst[ri]
        op = blk.ops[o]
        info = _OpInfo(op, blk, o)
        S = self.S
        for st in range(S):
            if op.barrier is not None and op.barrier in self.p.barriers:
                ctas = range(self.p.cluster_size) if op.kind != "wait" and op.ctas == "all" else (c,)
                info.bars.append(tuple(self.bslot[(cc, op.barrier, st)] for cc in ctas))
            if op.kind == "wait" and op.barrier is not None:
                info.obs.append(self.obars[ri].index(op.barrier) * S + st)
            info.slots.append(tuple(self.cslot[(c, b, st)] for b in op.buffers))
            if op.kind == "tma":
                dest = [b for b in range(self.p.cluster_size) if (op.multicast or 0) >> b & 1] \
                    if op.multicast is not None else [c]
                targets = tuple((cc, b, st) for cc in dest for b in op.buffers)
                info.desc.append(self.desc(("tma", ri, targets, op.nbytes, op.barrier)))
            elif op.kind == "cp_async":
                info.desc.append(self.desc(("cp", ri, tuple((c, b, st) for b in op.buffers), op.nbytes, None)))
        if op.kind == "sync" and op.sync is not None:
            names = self.p.syncs.get(op.sync) or tuple(x.name for x in self.p.roles)
            info.members = frozenset(i for i, (cc, x) in enumerate(self.inst) if cc == c and x.name in names)
        return info

    def desc(self, key: tuple[Any, ...]) -> int:
        """The copy ``key`` = (kind, issuer, targets (cta, buffer, stage), bytes, barrier) as a
        descriptor, one per distinct key: the state's identity has nothing else of it."""
        d = self._desc_ids.get(key)
        if d is None:
            kind, _, targets, _, barrier = key
            lands: tuple[tuple[int, tuple[int, ...]], ...] = ()
            if kind == "tma" and barrier is not None:
                lands = tuple((self.bslot[(cc, barrier, targets[0][2])],
                               tuple(self.cslot[t] for t in targets if t[0] == cc))
                              for cc in sorted({t[0] for t in targets}))
            d = self._desc_ids[key] = len(self.descs)
            self.descs.append(_Desc(key, tuple(self.cslot[t] for t in targets), lands,
                                    targets[0][2] if targets else 0, tuple(t[1] for t in targets)))
        return d

    # -- the identity of a state -----------------------------------------------------------------------
    def key(self, s: _State) -> _State:
        """``s``'s identity up to renaming interchangeable instances: ``s`` itself with each
        class of them in the order of their own state (ties in index order), else ``s`` renamed
        so."""
        inst = s[INST]
        if self.pair is not None:  # the usual case, two interchangeable instances nothing names
            a, b = self.pair
            x, y = inst[a], inst[b]
            if x <= y:
                return s
            renamed = list(inst)
            renamed[a], renamed[b] = y, x
            return (s[KFIX], s[KLB], tuple(renamed), *s[INST + 1:])
        perm: list[int] | None = None
        for cls in self.classes:
            if len(cls) == 2:
                a, b = cls
                if inst[a] <= inst[b]:
                    continue
                if perm is None:
                    perm = list(range(len(inst)))
                perm[a], perm[b] = b, a
                continue
            if all(inst[cls[i]] <= inst[cls[i + 1]] for i in range(len(cls) - 1)):
                continue
            if perm is None:
                perm = list(range(len(inst)))
            for new, old in zip(cls, sorted(cls, key=inst.__getitem__)):
                perm[old] = new
        if perm is None:
            return s
        renamed = list(inst)
        for old, new in enumerate(perm):
            renamed[new] = inst[old]
        if not self.named:
            return (s[KFIX], s[KLB], tuple(renamed), *s[INST + 1:])
        return self.permute(s, perm, renamed)

    def permute(self, s: _State, perm: list[int], renamed: list[Any]) -> _State:
        """``s`` with instance ``ri`` renamed ``perm[ri]`` (``renamed``: its INST so)."""
        def gid(g: Any) -> Any:
            return (perm[g[0]], g[1]) if isinstance(g, tuple) else g

        content = tuple(v if v is None else (*v[:C_WRITER], perm[v[C_WRITER]], v[C_TAGBAR], v[C_TAGPHASE],
                                              gid(v[C_GID]), v[C_FLAGS]) for v in s[CONTENT])
        flight = []
        for d, rnd, g in s[FLIGHT]:
            kind, issuer, targets, nbytes, barrier = self.descs[d].key
            flight.append((self.desc((kind, perm[issuer], targets, nbytes, barrier)), rnd, gid(g)))
        return (s[KFIX], s[KLB], tuple(renamed), s[BARS], content, tuple(flight),
                frozenset((k, perm[r], rr) for k, r, rr in s[READING]), s[WARM])

    # -- the trip count ----------------------------------------------------------------------------
    @staticmethod
    def lt_k(s: _View, x: int) -> bool | None:
        """Whether ``x < K`` (None: not decided yet in this state)."""
        kfix = s[KFIX]
        if kfix is not None:
            return bool(x < kfix)
        return True if x < s[KLB] else None

    @staticmethod
    def refine(s: _State, x: int) -> list[_State]:
        """``s`` split so that ``x < K`` is decided in each part: ``K > x``, or ``K`` each value
        it may still have up to ``x``."""
        if _Machine.lt_k(s, x) is not None:
            return [s]
        # the smallest trip counts first: their witnesses are shortest
        return [*((v, *s[1:]) for v in range(s[KLB], x + 1)), (None, x + 1, *s[2:])]

    def undecided(self, s: _View, ri: int, pc: tuple[int, int, int]) -> list[int]:
        """The rounds ``x`` whose ``x < K`` role ``ri``'s next step depends on, not decided in ``s``."""
        info = self.ops[ri][pc[0]][pc[2]]
        xs = []
        kfix = s[KFIX]
        if info.staged:
            j = (kfix if info.from_end else 0) + info.start + pc[1] + info.ahead
            if j + self.base >= 0 and kfix is None and j >= s[KLB]:
                xs.append(j)
        if info.last and info.trip:
            x = info.start + pc[1] + 1
            if kfix is None and x >= s[KLB]:
                xs.append(x)
        return xs

    def resolve(self, s: _State, xs: list[int]) -> list[_State]:
        """``s`` split until ``x < K`` is decided for each of ``xs``."""
        states = [s]
        for x in xs:
            states = [t for st in states for t in self.refine(st, x)]
        return states

    # -- helpers ---------------------------------------------------------------------------------
    def initial(self) -> _State:
        """Every role at its first operation, every barrier at phase 0 with its arrivals to come,
        every stage empty."""
        bars = tuple((0, x, 0) for x in self.binit)
        s0: _State = (self.k, 1, (), bars, (None,) * len(self.ckeys), (), frozenset(), False)
        inst = tuple((self.first_pc(s0, r), (-1,) * (self.S * len(self.obars[ri])), 0, (), (), (), False)
                     for ri, (_, r) in enumerate(self.inst))
        return (*s0[:INST], inst, *s0[INST + 1:])

    @staticmethod
    def first_pc(s: _View, r: Role, b: int = 0) -> tuple[int, ...]:
        while b < len(r.blocks):
            blk = r.blocks[b]
            runs = (s[KFIX] != 0) if blk.trip else blk.loop > 0
            if runs and blk.ops:
                return (b, 0, 0)
            b += 1
        return ()

    def next_pc(self, s: _View, ri: int, pc: tuple[int, ...]) -> tuple[int, ...]:
        b, i, o = pc
        info = self.ops[ri][b][o]
        if not info.last:
            return (b, i, o + 1)
        more = self.lt_k(s, info.start + i + 1) if info.trip else i + 1 < info.loop
        assert more is not None, "resolve() decides the trip count first"
        if more:
            return (b, i + 1, 0)
        return self.first_pc(s, self.inst[ri][1], b + 1)

    # -- the normal form ---------------------------------------------------------------------------
    def normalize(self, s: _State, base: int) -> tuple[_State, int]:
        """``s`` (at ``base``) in normal form, and its base: states equal up to the symmetries
        below share a key, so the unknown-trip-count search is finite.

        * Each barrier slot's phase counts (completed, observed by a wait, completed by a TMA
          landing) are lowered by 2 x (the least of them // 2): a wait depends on their
          parities, a read on their differences.
        * Outside the ring's steady state (a role in a prologue or after the K-loop, or the
          first rounds): the rounds shift by whole periods (2 x stages) until the roles' least
          position lies in the first one, where stages and phase parities repeat.
        * In it (:data:`ROTATE`; every role in a loop of the trip count that counts from its
          start, and ``base + least position >= reach``): the rounds shift all the way to the
          least position, by any ``r``.  Law (rotation): the state with its rounds ``r``
          earlier, each stage ``st`` renamed ``(st - r) mod S`` and each barrier slot's phase
          counts lowered by the wraps of its stage in the ``r`` rounds (``r // S + [st < r mod
          S]``) runs as the state it came from -- an operation's stage is ``(start stage +
          round) mod S`` and its parity flips at each wrap, so every operation finds the stage
          and the parity its round had; the barriers of one array expect the same arrivals in
          every stage; the trip count is relative; and no operation reaches below round 0
          (whose skip would differ), which ``reach`` (the lag, and a tail block that starts
          earlier than the loop's last trip) guarantees.  Rotated states are kept apart from
          the others (``WARM``): a state in the first rounds may look like a rotated one and
          still skip an operation.  ``tests/pipeline/test_explore_oracle.py`` compares the
          findings with and without it.

        Messages and witnesses show the physical stage (``(stage + base) mod S``), the rounds
        and the phase counts the whole-period form has (:meth:`phase_count`)."""
        if self.k is not None:
            return s, base
        if self.dirty:
            s = self.lower(s)
        if not self.moved:
            return s, base  # no role changed its position: the shift and the spread stay
        # the roles' least and greatest positions, and whether each runs a loop of the trip count
        low = high = None
        rotatable = ROTATE
        kfix = s[KFIX] or 0
        for x, blocks in zip(s[INST], self.blocks):
            pc = x[0]
            if pc:
                start, from_end, _, relative = blocks[pc[0]]
                at = start + pc[1] + (kfix if from_end else 0)
                if low is None:
                    low = high = at
                elif at < low:
                    low = at
                elif at > high:
                    high = at
                if not relative:
                    rotatable = False
        if low is None:
            self.spread = 0
            return (self.rotate(s, -(base % self.period)), base - base % self.period) if s[WARM] else (s, base)
        assert high is not None
        self.spread = high - low
        if rotatable and base + low >= self.reach:
            if low or not s[WARM]:
                s = self.rotate(s, low, True)
                base += low
            return s, base
        bm = base % self.period
        r = self.period * ((low + bm) // self.period) - bm
        if r > 0 or s[WARM] and r:
            return self.rotate(s, r), base + r
        if s[WARM]:
            return (*s[:WARM], False), base
        return s, base

    def lower(self, s: _State) -> _State:
        """The barrier slots of :attr:`dirty` whose phase counts are all at least 2 lowered by
        2 x (the least of them // 2) (the others are already: see normalize())."""
        bars = s[BARS]
        d = {}
        for k in self.dirty:
            if bars[k][0] >= 2:
                x = self.least(s, k)
                if x >= 2:
                    d[k] = -2 * (x // 2)
        self.dirty = []
        return self.add_phases(s, d) if d else s

    def least(self, s: _State, k: int) -> int:
        """The least phase count of barrier slot ``k``: completed, observed, completed by a landing."""
        v = s[BARS][k][0]
        inst = s[INST]
        for ri, i in self.obs_on[k]:
            x = inst[ri][I_OBS][i]
            if 0 <= x < v:
                v = x
        name = self.bkeys[k][1]
        content = s[CONTENT]
        for i in self.tags_on[k]:
            cv = content[i]
            if cv is not None and cv[C_TAGBAR] == name and cv[C_TAGPHASE] < v:
                v = cv[C_TAGPHASE]
        return v

    def add_phases(self, s: _State, d: dict[int, int]) -> _State:
        """``s`` with ``d[k]`` added to every phase count of barrier slot ``k``."""
        bars = list(s[BARS])
        inst = list(s[INST])
        content = list(s[CONTENT])
        for k, x in d.items():
            b = bars[k]
            bars[k] = (b[0] + x, b[1], b[2])
            for ri, i in self.obs_on[k]:
                obs = inst[ri][I_OBS]
                if obs[i] >= 0:
                    inst[ri] = (inst[ri][I_PC], (*obs[:i], obs[i] + x, *obs[i + 1:]), *inst[ri][I_OBS + 1:])
            name = self.bkeys[k][1]
            for i in self.tags_on[k]:
                cv = content[i]
                if cv is not None and cv[C_TAGBAR] == name:
                    content[i] = (*cv[:C_TAGPHASE], cv[C_TAGPHASE] + x, *cv[C_TAGPHASE + 1:])
        return (s[KFIX], s[KLB], tuple(inst), tuple(bars), tuple(content), *s[CONTENT + 1:])

    def rotate(self, s: _State, r: int, warm: bool = False) -> _State:
        """``s`` with its rounds ``r`` earlier, its stages renamed ``st -> (st - r) mod S`` and
        each barrier slot's phase counts lowered by its wraps in the ``r`` rounds, in normal
        form (see :meth:`normalize`); ``WARM`` set to ``warm``."""
        rm = r % self.S
        bmap, cmap, omaps, slot, odd = self.rotation(rm, (r // self.S) & 1)
        kfix, klb, inst, bars, content, flight, reading, _ = s
        obs = [x[I_OBS] for x in inst]
        if odd:
            # a slot with an odd number of wraps: the parity of its least count flips (0 <-> 1)
            bars, content = list(bars), list(content)
            for k in odd:
                d = 1 - 2 * self.least(s, k)
                b = bars[k]
                bars[k] = (b[0] + d, b[1], b[2])
                for ri, i in self.obs_on[k]:
                    if obs[ri][i] >= 0:
                        obs[ri] = (*obs[ri][:i], obs[ri][i] + d, *obs[ri][i + 1:])
                name = self.bkeys[k][1]
                for i in self.tags_on[k]:
                    cv = content[i]
                    if cv is not None and cv[C_TAGBAR] == name:
                        content[i] = (*cv[:C_TAGPHASE], cv[C_TAGPHASE] + d, *cv[C_TAGPHASE + 1:])
        if rm:
            bars = bmap(bars)
            content = cmap(content)
        content = tuple(None if v is None else (v[0] - r, *v[1:]) for v in content)
        ninst = []
        for x, ob, blocks, omap in zip(inst, obs, self.blocks, omaps):
            pc, _, groups, mma, unfenced, tmem, arrived = x
            if pc and blocks[pc[0]][2]:
                pc = (pc[0], pc[1] - r, pc[2])
            if mma:
                mma = tuple((kind, tuple((slot[k], rr - r) for k, rr in batch)) for kind, batch in mma)
            if rm:
                ninst.append((pc, omap(ob), groups, mma, tuple(sorted(slot[k] for k in unfenced)) if unfenced
                              else unfenced, tmem, arrived))
            else:
                ninst.append((pc, ob, groups, mma, unfenced, tmem, arrived))
        if flight:
            flight = tuple((self.rotated_desc(d, rm), rnd - r, g) for d, rnd, g in flight)
        if reading:
            reading = frozenset((slot[k], ri, rr - r) for k, ri, rr in reading)
        return (None if kfix is None else kfix - r, klb - r, tuple(ninst), tuple(bars), content, flight, reading,
                warm)

    def rotation(self, rm: int, half: int) -> tuple[Any, ...]:
        """For a rotation by ``r`` stages (``rm = r mod S``, ``half = (r // S) mod 2``): where
        each new barrier slot, content slot and observation comes from, each content slot's new
        number, and the barrier slots with an odd number of wraps."""
        t = self._rot.get((rm, half))
        if t is None:
            S = self.S

            def src(st: int) -> int:
                return (st + rm) % S

            bmap = _getter([self.bslot[(c, b, src(st))] for c, b, st in self.bkeys])
            cmap = _getter([self.cslot[(c, b, src(st))] for c, b, st in self.ckeys])
            omaps = [_getter([(i // S) * S + src(i % S) for i in range(S * len(self.obars[ri]))])
                     for ri in range(len(self.inst))]
            slot = [self.cslot[(c, b, (st - rm) % S)] for c, b, st in self.ckeys]
            odd = [k for k, (_, _, st) in enumerate(self.bkeys) if (half + (st < rm)) & 1]
            t = self._rot[(rm, half)] = (bmap, cmap, omaps, slot, odd)
        return t

    def rotated_desc(self, d: int, rm: int) -> int:
        out = self._rot_desc.get((d, rm))
        if out is None:
            kind, issuer, targets, nbytes, barrier = self.descs[d].key
            out = self._rot_desc[(d, rm)] = self.desc(
                (kind, issuer, tuple((c, b, (st - rm) % self.S) for c, b, st in targets), nbytes, barrier))
        return out

    # -- what messages show --------------------------------------------------------------------------
    def stage(self, st: int) -> int:
        """The physical stage of internal stage ``st``."""
        return (st + self.base) % self.S

    def phase_count(self, k: int, v: int) -> int:
        """Phase count ``v`` of barrier slot ``k`` as the whole-period normal form has it (the
        one messages show): the difference to the slot's least count where the step started,
        plus that least count's parity there."""
        if self.base % self.period == 0:
            return v
        low = self.least(self.origin, k)
        c, _, st = self.bkeys[k]
        wraps = self.base // self.S + ((st + self.base) % self.S < self.base % self.S)
        return v - low + ((low + wraps) & 1)

    def rel(self, j: int) -> int:
        """Round ``j`` as the messages of the read and refill checks number it: from the start
        of the ring's current period (their witnesses' ``round`` is absolute)."""
        return j + self.base % self.period

    def pstate(self, r: Role, j: int) -> PipelineState:
        # the stage index and phase parity depend on j modulo the period only
        key = (r.start_stage, r.start_phase, j % self.period)
        ps = self._pstates.get(key)
        if ps is None:
            ps = self._pstates[key] = PipelineState(self.p.stages, r.start_stage, r.start_phase).at(key[2])
        return ps

    def who(self, ri: int, j: int | None = None, stage: int | None = None, buffer: str | None = None) -> dict[str, Any]:
        """The witness's description of instance ``ri`` (``stage`` internal)."""
        c, r = self.inst[ri]
        w: dict[str, Any] = {"cta": c, "role": r.name, "warps": [r.first_warp, r.last_warp],
                             "thread": r.first_thread}
        if j is not None:
            w["round"] = j + self.base
        if stage is not None:
            w["stage"] = self.stage(stage)
        if buffer is not None and stage is not None:
            w["buffer"] = buffer
            w["address"] = self.p.stage_address(buffer, self.stage(stage))
        return w

    def text(self, ev: _Event) -> str:
        """Event ``ev`` written out."""
        if ev[0] is _CHAIN:
            return "; ".join(self.text(e) for e in ev[1:])
        out = []
        for part in ev:
            if isinstance(part, str):
                out.append(part)
            elif len(part) == 4:
                out.append(self.label(*part))
            else:
                d, rnd, base = part
                x = self.descs[d]
                out.append(f"{x.kind} of {self.inst[x.issuer][1].name} round {rnd + base} lands in "
                           f"{','.join(sorted(set(x.buffers)))} stage {(x.stage + base) % self.S}")
        return "".join(out)

    def label(self, ri: int, op: Op, j: int | None, base: int | None = None) -> str:
        base = self.base if base is None else base
        c, r = self.inst[ri]
        cta = f"cta {c} " if self.p.cluster_size > 1 else ""
        what = op.kind + (f" {op.barrier}" if op.barrier and op.kind != "tma" else "") + \
            (f" {','.join(op.buffers)}" if op.buffers else "") + (f"<{op.n}>" if op.kind in ("wait_group", "wait_mma")
                                                                   else "") + \
            (f" {op.fragment}" if op.fragment else "")
        if j is not None and op.kind in STAGED:
            what += f" (round {j + base}, stage {self.pstate(r, j + base).index})"
        return f"{cta}{r.name}: {what}"

    # -- moves -----------------------------------------------------------------------------------
    def moves(self, s: _State) -> list[tuple[bool, int, _State]]:
        """The steps possible from ``s``: a role's next operation (in each part of ``s`` the trip
        count splits it into; True) or a copy landing (False, its place in the flight)."""
        out: list[tuple[bool, int, _State]] = []
        kfix, klb = s[KFIX], s[KLB]
        base = self.base
        for ri, x in enumerate(s[INST]):
            pc = x[I_PC]
            if not pc:
                continue
            info = self.ops[ri][pc[0]][pc[2]]
            j = 0
            if info.staged:
                j = (kfix if info.from_end else 0) + info.start + pc[1] + info.ahead
            if kfix is None and (info.staged and j + base >= 0 and j >= klb
                                 or info.last and info.trip and info.start + pc[1] + 1 >= klb):
                # the step depends on the trip count: one move in each part of s it splits into
                out += [(True, ri, t) for t in self.resolve(s, self.undecided(s, ri, pc))
                        if self.enabled(t, ri, pc)]
                continue
            if info.gated:
                if info.kind == "wait":
                    # passes once the phase of its parity completed (or acts on no round)
                    if j + base >= 0 and (j < kfix if kfix is not None else j < klb):
                        jm = j % self.period
                        if (s[BARS][info.bars[self.stage_of[ri][jm]][0]][0] & 1) == self.phase_of[ri][jm]:
                            continue
                elif not self.enabled(s, ri, pc):
                    continue
            out.append((True, ri, s))
        flight = s[FLIGHT]
        if flight:
            if len(flight) == 1 or not self.fifo:
                out += [(False, i, s) for i in range(len(flight))]
                return out
            issuers: set[int] = set()
            for i, (d, _, _) in enumerate(flight):
                issuer = self.descs[d].issuer
                if issuer not in issuers:
                    issuers.add(issuer)
                    out.append((False, i, s))
        return out

    def active(self, s: _View, ri: int, pc: tuple[int, ...]) -> tuple[_OpInfo, int | None]:
        """The operation at ``pc`` and the round it acts on (None: none, or one outside the loop)."""
        info = self.ops[ri][pc[0]][pc[2]]
        if not info.staged:
            return info, None
        j = (s[KFIX] if info.from_end else 0) + info.start + pc[1] + info.ahead
        return info, (j if j + self.base >= 0 and self.lt_k(s, j) else None)

    def enabled(self, s: _View, ri: int, pc: tuple[int, ...]) -> bool:
        info, j = self.active(s, ri, pc)
        k = info.kind
        if info.staged:
            if j is None or k != "wait":
                return True
            jm = j % self.period
            return (s[BARS][info.bars[self.stage_of[ri][jm]][0]][0] & 1) != self.phase_of[ri][jm]
        if k == "wait_group":
            committed = s[INST][ri][I_GROUPS]
            n = info.op.n
            old = len(range(committed)[:committed - n]) if n else committed
            return not any(isinstance(g, tuple) and g[0] == ri and g[1] < old for _, _, g in s[FLIGHT])
        if k == "sync":
            name = info.op.sync
            return not s[INST][ri][I_ARRIVED] or all(self.arrived(s, m, name) for m in info.members if m != ri)
        return True

    def arrived(self, s: _View, m: int, name: str | None) -> bool:
        """Whether instance ``m`` arrived at named barrier ``name`` (it waits at its operation)."""
        x = s[INST][m]
        return bool(x[I_ARRIVED]) and self.ops[m][x[I_PC][0]][x[I_PC][2]].op.sync == name

    def run(self, s: _State, base: int, ri: int, spread: int) -> tuple[_State, int, _Event]:
        """Role ``ri``'s next step and, while that step is one of :data:`CHAINED` (or acts on no
        iteration), its following ones.  Why no hazard is lost: such a step enables and disables
        no other role's step, so any step another role could take between it and the next one
        was already possible before it; taken there instead, it sees at least the reads this
        step adds or retires later, and finds at least as much."""
        self.base = base
        self.origin = s
        self.dirty = []
        self.moved = False
        self.spread = spread
        # the steps change a draft of the state: lists where they write
        w = list(s)
        inst = w[INST] = list(s[INST])
        inst[ri] = list(inst[ri])
        ev, chained = self.step(w, ri)
        while chained:
            npc = inst[ri][I_PC]
            if not npc:
                break
            nxt = self.ops[ri][npc[0]][npc[2]]
            if w[KFIX] is None and (nxt.staged or nxt.last and nxt.trip) and self.undecided(w, ri, npc) \
                    or nxt.gated and not self.enabled(w, ri, npc):
                break
            more, chained = self.step(w, ri)
            ev = (*ev, more) if ev[0] is _CHAIN else (_CHAIN, ev, more)
        if type(inst[ri]) is list:
            inst[ri] = tuple(inst[ri])
        w[INST] = tuple(inst)
        n, base = self.normalize(tuple(w), base)
        return n, base, ev

    def step(self, w: list[Any], ri: int) -> tuple[_Event, bool]:
        """Role ``ri``'s next operation on the draft ``w`` (its INST a list, the role's entry a
        list); the event, and whether the role's next operation is taken too (see run())."""
        inst = w[INST]
        me = inst[ri]
        pc = me[I_PC]
        info = self.ops[ri][pc[0]][pc[2]]
        op = info.op
        j = None
        if info.staged:
            kfix = w[KFIX]
            j = (kfix if info.from_end else 0) + info.start + pc[1] + info.ahead
            if j + self.base < 0 or not (j < kfix if kfix is not None else j < w[KLB]):
                me[I_PC] = self.next_pc(w, ri, pc)
                self.moved = True
                return ((ri, op, None, self.base), " (no iteration: skipped)"), True
        ev: _Event = ((ri, op, j, self.base),)
        st = self.stage_of[ri][j % self.period] if j is not None else 0
        k = info.kind
        if k == "wait":
            slot = info.bars[st][0]
            obs = list(me[I_OBS])
            obs[info.obs[st]] = w[BARS][slot][0]
            me[I_OBS] = tuple(obs)
            self.dirty.append(slot)
        elif k == "arrive" or k == "arrive_expect_tx" or k == "expect_tx":
            assert op.barrier is not None
            bars = list(w[BARS])
            for slot in info.bars[st]:
                completed, pending, tx = bars[slot]
                if k == "expect_tx":
                    tx += op.nbytes
                else:
                    if k == "arrive_expect_tx":
                        tx += op.nbytes
                        pending -= op.count if op.count > 0 else 1
                    else:
                        pending -= op.count if op.count > 0 else self.inst[ri][1].threads
                        if op.count == 0 and w[READING]:  # every thread arrives after its own reads
                            w[READING] = frozenset(e for e in w[READING] if e[1] != ri)
                    if pending == 0 and tx == 0:
                        completed, pending = completed + 1, self.binit[slot]
                        self.dirty.append(slot)
                bars[slot] = (completed, pending, tx)
                if pending < 0:
                    raise _Found("over_arrival",
                                 f"{self.label(ri, op, j)}: barrier {op.barrier}[{self.stage(st)}] of CTA "
                                 f"{self.bkeys[slot][0]} gets {-pending} more arrivals than its phase expects "
                                 f"({self.p.barriers[op.barrier]})",
                                 op, {**self.who(ri, j, st), "barrier": op.barrier,
                                      "phase": self.phase_count(slot, completed)})
            w[BARS] = tuple(bars)
        elif k == "mma" or k == "read" or k == "tma_store":
            assert j is not None
            slots = info.slots[st]
            for slot, buf in zip(slots, op.buffers):
                self.check_read(w, ri, op, j, st, slot, buf, asynchronous=k != "read")
            if k != "read":
                me[I_MMA] = (*me[I_MMA], (k, tuple((slot, j) for slot in slots)))
            elif self.inst[ri][1].threads > 1:
                w[READING] = w[READING] | {(slot, ri, j) for slot in slots}
        elif k == "wait_mma" or k == "tma_store_wait":
            # warpgroup_wait<n> / cp.async.bulk.wait_group.read n: all but the n newest batches of
            # that kind have finished reading
            kind = "mma" if k == "wait_mma" else "tma_store"
            mine = [i for i, b in enumerate(me[I_MMA]) if b[0] == kind]
            done = set(mine[:len(mine) - op.n] if op.n else mine)
            if done:
                me[I_MMA] = tuple(b for i, b in enumerate(me[I_MMA]) if i not in done)
        elif k == "tma":
            assert j is not None
            self.issue_tma(w, ri, info, j, st)
        elif k == "sync":
            return self.sync(w, ri, info), False
        elif k == "cp_async":
            assert j is not None
            for slot in info.slots[st]:
                self.check_refill(w, ri, op, j, st, slot)
            w[FLIGHT] = (*w[FLIGHT], (info.desc[st], j, (ri, me[I_GROUPS])))
        elif k == "commit":
            me[I_GROUPS] += 1
        elif k == "wait_group":
            committed = me[I_GROUPS]
            old = len(range(committed)[:committed - op.n]) if op.n else committed
            if old:
                self.retire(w, ri, old)
                me[I_GROUPS] = committed - old
        elif k == "write":
            assert j is not None
            content = list(w[CONTENT])
            unfenced = set(me[I_UNFENCED])
            for slot in info.slots[st]:
                self.check_refill(w, ri, op, j, st, slot)
                self.overwrite(content, slot, (j, "gen", ri, None, None, None, 0))
                unfenced.add(slot)
            w[CONTENT] = tuple(content)
            me[I_UNFENCED] = tuple(sorted(unfenced))
        elif k == "tmem_load":
            assert op.fragment is not None
            me[I_TMEM] = tuple(sorted({*me[I_TMEM], op.fragment}))
        elif k == "tmem_wait_ld":
            me[I_TMEM] = ()
        elif k == "use":
            if op.fragment in me[I_TMEM]:
                raise _Found("tmem_read_before_wait",
                             f"{self.label(ri, op, j)}: the registers of {op.fragment!r} are used while its "
                             "tcgen05.ld is in flight (no tcgen05.wait::ld since the load): they hold nothing "
                             "defined yet", op, {**self.who(ri), "fragment": op.fragment})
        elif k == "fence_proxy_async":
            content = list(w[CONTENT])
            for slot in me[I_UNFENCED]:
                cur = content[slot]
                if cur is not None and cur[C_KIND] == "gen" and cur[C_WRITER] == ri:
                    content[slot] = (*cur[:C_FLAGS], cur[C_FLAGS] | FENCE)
            w[CONTENT] = tuple(content)
            me[I_UNFENCED] = ()
        if info.last:
            me[I_PC] = self.next_pc(w, ri, pc)
            self.moved = True
        else:
            me[I_PC] = (pc[0], pc[1], pc[2] + 1)
        return ev, info.chained

    def sync(self, w: list[Any], ri: int, info: _OpInfo) -> _Event:
        """Role ``ri`` reaches its named barrier: it arrives, or, the others there, all pass it
        (their generic stores and retired cp.async copies ordered for each other's threads)."""
        inst = w[INST]
        op = info.op
        lab = (ri, op, None, self.base)
        members = info.members
        if not all(self.arrived(w, m, op.sync) for m in members if m != ri):
            inst[ri][I_ARRIVED] = True          # arrived; the role waits (its pc stays)
            return lab, " (arrives)"
        if w[READING]:
            w[READING] = frozenset(e for e in w[READING] if e[1] not in members)
        content = list(w[CONTENT])
        for i in self.content_of[self.inst[ri][0]]:
            v = content[i]
            if v is not None and v[C_WRITER] in members and (v[C_KIND] == "cp" and v[C_FLAGS] & RETIRED
                                                             or v[C_KIND] == "gen"):
                content[i] = (*v[:C_FLAGS], v[C_FLAGS] | VISIBLE | (FENCED if v[C_FLAGS] & FENCE else 0))
        w[CONTENT] = tuple(content)
        self.moved = True
        for m in members:
            y = inst[m]
            mpc = y[I_PC]
            assert mpc
            inst[m] = (self.next_pc(w, m, mpc), *y[I_PC + 1:I_ARRIVED], False)
        if ri not in members:  # its arrival is forgotten with the others'
            inst[ri] = (*inst[ri][:I_ARRIVED], False)
        return lab, " (all arrived)"

    def overwrite(self, content: list[Any], slot: int, v: tuple[Any, ...]) -> None:
        """Content slot ``slot`` holds ``v`` (the tag it held bounds its barrier slot no more)."""
        cur = content[slot]
        if cur is not None and cur[C_TAGBAR] is not None:
            c, _, st = self.ckeys[slot]
            self.dirty.append(self.bslot[(c, cur[C_TAGBAR], st)])
        content[slot] = v

    def retire(self, w: list[Any], ri: int, old: int) -> None:
        """Instance ``ri``'s ``old`` oldest committed groups retire: their copies are retired
        (their group -1), the others' groups renumbered."""
        def moved(g: Any) -> Any:
            if isinstance(g, tuple) and g[0] == ri:
                return -1 if g[1] < old else (ri, g[1] - old)
            return g

        content = list(w[CONTENT])
        for i, v in enumerate(content):
            if v is not None and v[C_KIND] == "cp" and isinstance(v[C_GID], tuple) and v[C_GID][0] == ri:
                g = moved(v[C_GID])
                content[i] = (*v[:C_GID], g, v[C_FLAGS] | (RETIRED if g == -1 else 0))
        w[CONTENT] = tuple(content)
        w[FLIGHT] = tuple((d, rnd, moved(g)) for d, rnd, g in w[FLIGHT])

    def issue_tma(self, w: list[Any], ri: int, info: _OpInfo, j: int, st: int) -> None:
        op = info.op
        if op.multicast is not None:
            bad = [b for b in range(op.multicast.bit_length()) if op.multicast >> b & 1 and b >= self.p.cluster_size]
            if bad:
                raise _Found("multicast_outside_cluster",
                             f"{self.label(ri, op, j)}: the multicast mask {op.multicast:#b} names CTA {bad[0]}, "
                             f"but the cluster has {self.p.cluster_size} CTA{'s' if self.p.cluster_size > 1 else ''}",
                             op,
                             {**self.who(ri, j, st), "mask": op.multicast, "cluster_size": self.p.cluster_size,
                              "cta_outside": bad[0]})
        d = info.desc[st]
        for slot in self.descs[d].targets:
            self.check_refill(w, ri, op, j, st, slot)
        w[FLIGHT] = (*w[FLIGHT], (d, j, None))

    def check_refill(self, w: list[Any], ri: int, op: Op, j: int, st: int, slot: int) -> None:
        """A write of round ``j`` into content slot ``slot``: who still reads it (threads of a role
        before its next barrier, then an mma or TMA store not yet waited for) or a copy of
        another round still landing there is a finding."""
        reading = w[READING]
        if reading:
            for k2, rj, rr in sorted(reading):
                if k2 == slot and rr != j:
                    self.refill_while_read(ri, op, j, st, slot, rj, rr, "its threads may still read it (no barrier "
                                           "since their reads: a missing __syncthreads, a release too early, or "
                                           "one stage too few)")
        for rj, y in enumerate(w[INST]):
            for batch in y[I_MMA]:
                for k2, rr in batch[1]:
                    if k2 == slot and rr != j:
                        self.refill_while_read(ri, op, j, st, slot, rj, rr, "it still reads it asynchronously (its "
                                               "mma or TMA store has not been waited for: a release too early, or "
                                               "one stage too few)")
        for d, rnd, _ in w[FLIGHT]:
            if rnd != j and slot in self.descs[d].targets:
                buf = self.ckeys[slot][1]
                raise _Found("refill_while_read",
                             f"{self.label(ri, op, j)} writes {buf} stage {self.stage(st)} while round "
                             f"{self.rel(rnd)}'s copy into it is still landing", op,
                             {**self.who(ri, j, st, buf), "landing_round": self.rel(rnd)})

    def refill_while_read(self, ri: int, op: Op, j: int, st: int, slot: int, rj: int, rr: int, why: str) -> None:
        buf = self.ckeys[slot][1]
        raise _Found("refill_while_read",
                     f"{self.label(ri, op, j)} overwrites {buf} stage {self.stage(st)} while {self.inst[rj][1].name} "
                     f"reads round {self.rel(rr)} there: {why}", op,
                     {**self.who(ri, j, st, buf), "reader": self.who(rj, rr, st, buf)})

    def check_read(self, w: list[Any], ri: int, op: Op, j: int, st: int, slot: int, buf: str, *,
                   asynchronous: bool) -> None:
        for d, rnd, _ in w[FLIGHT]:
            if slot in self.descs[d].targets:
                self.read_while_landing(ri, op, j, st, buf, rnd)
        v = w[CONTENT][slot]
        if v is None or v[C_ROUND] != j:
            self.read_other_round(ri, op, j, st, buf, v)
        kind, writer = v[C_KIND], v[C_WRITER]
        if kind == "tma":
            bar = v[C_TAGBAR]
            o = self.obs_at[ri].get(bar)
            seen = -1 if o is None else w[INST][ri][I_OBS][o + st]
            if seen <= v[C_TAGPHASE]:
                b, pst = self.base % self.period, self.stage(st)
                bslot = self.bslot[(self.inst[ri][0], bar, st)]
                phase = self.phase_count(bslot, v[C_TAGPHASE])
                seen = -1 if seen < 0 else self.phase_count(bslot, seen)
                raise _Found("read_before_landed",
                             f"{self.label(ri, op, j)}: round {j + b} of {buf} stage {pst} landed, but no wait of "
                             f"this role observed the phase its landing completed ({bar}[{pst}] phase {phase}, "
                             f"parity {phase & 1}): the read is not ordered after the copy (a wait on the wrong "
                             "phase?)", op, {**self.who(ri, j, st, buf), "barrier": bar, "phase": phase,
                                             "observed_phases": seen})
            return
        r = self.inst[ri][1]
        b, pst = self.base % self.period, self.stage(st)
        if kind == "cp":
            if writer == ri and not v[C_FLAGS] & RETIRED:
                raise _Found("read_before_landed",
                             f"{self.label(ri, op, j)}: round {j + b} of {buf} stage {pst} was copied with cp.async "
                             "and no wait_group has retired its group", op,
                             {**self.who(ri, j, st, buf), "writer": self.who(writer)})
            if (writer != ri or r.threads > 1) and not v[C_FLAGS] & VISIBLE:
                raise _Found("read_before_landed",
                             f"{self.label(ri, op, j)}: round {j + b} of {buf} stage {pst} was copied with cp.async "
                             "by other threads and no barrier after their wait_group orders it before this read", op,
                             {**self.who(ri, j, st, buf), "writer": self.who(writer)})
            if asynchronous:
                raise _Found("missing_proxy_fence",
                             f"{self.label(ri, op, j)}: the async proxy reads {buf} stage {pst}, written by cp.async "
                             "(generic proxy) without fence.proxy.async", op,
                             {**self.who(ri, j, st, buf), "writer": self.who(writer)})
            return
        # generic stores
        if writer != ri and not v[C_FLAGS] & VISIBLE:
            raise _Found("read_before_landed",
                         f"{self.label(ri, op, j)}: {buf} stage {pst} was written by {self.inst[writer][1].name} and "
                         "no barrier orders the stores before this read", op,
                         {**self.who(ri, j, st, buf), "writer": self.who(writer)})
        if asynchronous and not v[C_FLAGS] & FENCED:
            raise _Found("missing_proxy_fence",
                         f"{self.label(ri, op, j)}: the async proxy reads {buf} stage {pst}, written by generic "
                         f"stores of {self.inst[writer][1].name} with no fence.proxy.async between the stores and the "
                         "barrier", op, {**self.who(ri, j, st, buf), "writer": self.who(writer)})

    def read_while_landing(self, ri: int, op: Op, j: int, st: int, buf: str, rnd: int) -> None:
        """A read of a stage a copy (of round ``rnd``) is still landing in: the finding."""
        b, pst = self.base % self.period, self.stage(st)
        wit = self.who(ri, j, st, buf)
        if rnd > j:
            raise _Found("refill_while_read",
                         f"{self.label(ri, op, j)}: round {rnd + b}'s copy is landing in {buf} stage {pst} while "
                         f"round {j + b} is read there (the stage was released or refilled too early, or the ring "
                         "has one stage too few)", op, {**wit, "landing_round": rnd + b})
        raise _Found("read_before_landed",
                     f"{self.label(ri, op, j)}: {buf} stage {pst} is read while round {rnd + b}'s copy into it is "
                     "still landing", op, {**wit, "landing_round": rnd + b})

    def read_other_round(self, ri: int, op: Op, j: int, st: int, buf: str, v: tuple[Any, ...] | None) -> None:
        """A read of a stage that holds nothing or another round than ``j``: the finding."""
        b, pst = self.base % self.period, self.stage(st)
        if v is None or v[C_ROUND] < j:
            raise _Found("read_before_landed",
                         f"{self.label(ri, op, j)}: {buf} stage {pst} is read for round {j + b} but holds "
                         + ("nothing yet" if v is None else f"round {v[C_ROUND] + b}")
                         + f" (round {j + b} has not landed)",
                         op, {**self.who(ri, j, st, buf), "holds_round": None if v is None else v[C_ROUND] + b})
        raise _Found("refill_while_read",
                     f"{self.label(ri, op, j)}: {buf} stage {pst} already holds round {v[C_ROUND] + b} when round "
                     f"{j + b} is read (it was refilled before this read: a release too early, or one stage too "
                     "few)", op, {**self.who(ri, j, st, buf), "holds_round": v[C_ROUND] + b})

    def land(self, s: _State, base: int, i: int, spread: int) -> tuple[_State, int, _Event]:
        """The ``i``-th copy in flight lands."""
        self.base = base
        self.dirty = []
        self.moved = False
        self.spread = spread
        d, rnd, g = s[FLIGHT][i]
        x = self.descs[d]
        w = list(s)
        w[FLIGHT] = s[FLIGHT][:i] + s[FLIGHT][i + 1:]
        content = list(s[CONTENT])
        if x.kind == "tma":
            bars = list(s[BARS])
            for slot, targets in x.lands:
                completed, pending, tx = bars[slot]
                for t in targets:
                    self.overwrite(content, t, (rnd, "tma", x.issuer, x.barrier, completed, None, 0))
                tx -= x.nbytes
                if pending == 0 and tx == 0:
                    completed, pending = completed + 1, self.binit[slot]
                bars[slot] = (completed, pending, tx)
                self.dirty.append(slot)
            w[BARS] = tuple(bars)
        else:
            for t in x.targets:
                self.overwrite(content, t, (rnd, "cp", x.issuer, None, None, g, 0))
        w[CONTENT] = tuple(content)
        n, base = self.normalize(tuple(w), base)
        return n, base, ((d, rnd, self.base),)

    def deadlock(self, s: _State, base: int) -> _Found:
        self.base = base
        self.origin = s
        blocked = [(ri, x[I_PC]) for ri, x in enumerate(s[INST]) if x[I_PC]]
        found: list[_Found] = []
        for ri, pc in blocked:
            info, j = self.active(s, ri, pc)
            op = info.op
            if op.kind == "wait":
                assert j is not None and op.barrier is not None
                ps = self.pstate(self.inst[ri][1], j + base)
                slot = info.bars[self.stage_of[ri][j % self.period]][0]
                completed, pending, tx = s[BARS][slot]
                completed = self.phase_count(slot, completed)
                w = {**self.who(ri, j, self.stage_of[ri][j % self.period]), "barrier": op.barrier,
                     "parity": ps.phase, "completed_phases": completed, "pending_arrivals": pending, "tx_bytes": tx}
                if pending == 0 and tx != 0:
                    found.insert(0, _Found("tx_mismatch_hang",
                                  f"{self.label(ri, op, j)} never returns: {op.barrier}[{ps.index}]'s phase "
                                  f"{completed} has all its arrivals but its transaction count is {tx} bytes "
                                  + ("(more expected than delivered)" if tx > 0 else "(more delivered than expected)")
                                  + ": the kernel hangs", op, w))
                    continue
                found.append(_Found("arrival_deadlock",
                              f"{self.label(ri, op, j)} never returns: {op.barrier}[{ps.index}]'s phase {completed} "
                              f"still waits for {pending} arrival{'s' if pending != 1 else ''} that no role will "
                              "make: the kernel deadlocks", op, w))
        if found:
            return found[0]
        ri, pc = blocked[0]
        info, j = self.active(s, ri, pc)
        op = info.op
        if op.kind == "sync":
            assert op.sync is not None
            missing = sorted(self.inst[m][1].name for m in info.members if not self.arrived(s, m, op.sync))
            return _Found("sync_deadlock",
                          f"{self.label(ri, op, j)}: named barrier {op.sync!r} waits for {', '.join(missing)}, "
                          "which never arrive: the kernel deadlocks", op, {**self.who(ri), "missing": missing})
        return _Found("arrival_deadlock", f"{self.label(ri, op, j)} can never run", op, self.who(ri))


def _getter(index: list[int]) -> Any:
    """``t -> tuple(t[i] for i in index)``."""
    if len(index) > 1:
        return itemgetter(*index)
    return lambda t: tuple(t[i] for i in index)


def explore(protocol: Protocol, iterations: int | None, *, fifo: bool = True, max_states: int = 300_000,
            kinds: tuple[str, ...] = KINDS) -> Exploration:
    """Every reachable state of ``protocol`` with a K-loop of ``iterations`` trips (module
    docstring), or with ``iterations=None`` of every trip count >= 1 at once: the count stays
    unknown until a step depends on it, and states equal up to a shift of the rounds (the
    ring's stages renamed, each barrier's phases lowered: :meth:`_Machine.normalize`) are one
    state, so the search is finite and covers every count.  A witness names the trip count of
    its run.  Stops after ``max_states`` (``truncated``)."""
    if iterations is not None and iterations < 0:
        raise SpecError(f"a K-loop runs 0 or more times, got {iterations}")
    # the states are tuples without cycles, freed by their counts: the cyclic collector would
    # only traverse them again and again (and promote them, to collect them all later)
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _explore(protocol, iterations, fifo, max_states, kinds)
    finally:
        if collecting:
            gc.enable()


def _explore(protocol: Protocol, iterations: int | None, fifo: bool, max_states: int,
             kinds: tuple[str, ...]) -> Exploration:
    t0 = time.process_time()
    m = _Machine(protocol, iterations, fifo)
    out = Exploration(iterations if iterations is not None else -1)
    found: dict[tuple[str, tuple[object, ...]], PipelineFinding] = {}
    s0, base0 = m.normalize(m.state0, 0)
    seen: set[_State] = {m.key(s0)}
    # depth-first: each frame is a state, its base, its moves, the next move to try, the event
    # that led to it
    m.base = base0
    # (and the spread of the roles, and the steps of twins taken from it without a finding)
    stack: list[list[Any]] = [[s0, base0, m.moves(s0), 0, ("start",), m.spread, None]]

    def trace() -> list[str]:
        return [m.text(fr[4]) for fr in stack[max(1, len(stack) - TRACE):]]

    bound = MAX_SPREAD * m.period + protocol.max_lag
    every = iterations is None
    key = m.key if m.classes else None
    run, land, moves = m.run, m.land, m.moves
    twins = m.twins
    twinned = [any(ri in t for t in twins) for ri in range(len(twins))]
    while stack:
        fr = stack[-1]
        s, base, mv, i, _, spread, done = fr
        if i == 0 and not mv:
            if any(x[I_PC] for x in s[INST]):
                _record(found, m.deadlock(s, base), trace(), s, base)
            else:
                out.finished_runs += 1
        # the next move that reaches a state not seen yet: its frame is pushed
        while i < len(mv):
            step, arg, t = mv[i]
            i += 1
            if step and done and _twin_done(twins[arg], done, t, arg):
                continue  # the same step as its twin's, which reached a state seen (see _Machine.twins)
            try:
                n, nbase, ev = run(t, base, arg, spread) if step else land(t, base, arg, spread)
            except _Found as f:
                _record(found, f, trace(), t, base)
                continue
            if step and twinned[arg]:
                if done is None:
                    done = fr[6] = set()
                done.add((arg, t[KFIX], t[KLB]))
            count = len(seen)
            seen.add(key(n) if key is not None else n)  # (one hash: a tuple's is not kept)
            if len(seen) == count:
                continue  # a state seen
            if count >= max_states:
                out.truncated = True
                stack.clear()
                break
            if every and m.spread > bound:
                out.pruned += 1  # roles this far apart are no longer held together by the protocol
                continue
            fr[3] = i
            m.base = nbase
            stack.append([n, nbase, moves(n), 0, ev, m.spread, None])
            break
        else:
            stack.pop()
    out.states = len(seen)
    if out.pruned and not found:
        out.truncated = True  # nothing found, but not everything was explored
    out.findings = [f for f in found.values() if f.kind in kinds]
    out.seconds = time.process_time() - t0
    return out


def _twin_done(twins: list[int], done: set[tuple[int, Any, int]], t: _State, ri: int) -> bool:
    """Whether a twin of instance ``ri`` in the same state as it took its step from ``t``."""
    for rj in twins:
        if (rj, t[KFIX], t[KLB]) in done and t[INST][rj] == t[INST][ri]:
            return True
    return False


def _record(found: dict[tuple[str, tuple[object, ...]], PipelineFinding], f: _Found, trace: list[str],
            s: _State, base: int) -> None:
    where = f.op.where if f.op is not None else ()
    key = (f.kind, where)
    if key in found:
        return
    # the run's trip count: known, or any count from the lowest it may still be
    k: int | str = s[KFIX] + base if s[KFIX] is not None else f">= {s[KLB] + base}"
    found[key] = PipelineFinding(f.kind, f.message, where, {**f.witness, "iterations": k, "events": trace[-TRACE:]})


def prove_rounds(protocol: Protocol, kmin: int, kmax: int, **kw: Any) -> Exploration:
    """Pipeline safety for every trip count of ``[kmin, kmax]``: the trip counts below 1
    explored one by one, the rest at once (:func:`explore` with ``iterations=None``, which
    covers every count >= 1).  A finding's witness names its trip count; one outside the
    range sends the search to the counts of the range one by one, up to one period of the
    ring past the warm-up (where the finding repeats if it repeats at all)."""
    if kmax < kmin:
        raise SpecError(f"the trip count range is empty: {kmin} .. {kmax}")
    parts = [explore(protocol, k, **kw) for k in range(kmin, min(kmax, 0) + 1)]
    if kmax >= 1:
        every = explore(protocol, None, **kw)
        outside = [f for f in every.findings if not _in_range(f.witness.get("iterations"), kmin, kmax)]
        if outside:
            inside = [f for f in every.findings if f not in outside]
            period = 2 * protocol.stages
            for k in range(max(kmin, 1), min(kmax, max(kmin, 1) + 4 * period) + 1):
                e = explore(protocol, k, **kw)
                inside += e.findings
                every.states += e.states
            every.findings = list({(f.kind, f.where): f for f in inside}.values())
        parts.append(every)
    out = Exploration(-1, states=sum(e.states for e in parts),
                      findings=list({(f.kind, f.where): f for e in parts for f in e.findings}.values()),
                      truncated=any(e.truncated for e in parts), finished_runs=sum(e.finished_runs for e in parts),
                      seconds=sum(e.seconds for e in parts))
    return out


def _in_range(k: object, kmin: int, kmax: int) -> bool:
    if isinstance(k, int):
        return kmin <= k <= kmax
    if isinstance(k, str) and k.startswith(">= "):
        return int(k[3:]) <= kmax
    return False
