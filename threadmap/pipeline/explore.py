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
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from threadmap.errors import SpecError
from threadmap.pipeline.barrier import Mbarrier, try_wait_parity
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


@dataclass(frozen=True)
class _Content:
    """What one (cta, buffer, stage) holds: the round, who wrote it and how, and what orders it
    before a read."""

    round: int
    kind: str                     # tma | cp | gen
    writer: int                   # role instance
    tag: tuple[str, int] | None = None   # tma: (barrier, phase its landing completed)
    gid: int | None = None               # cp: its group
    retired: bool = False                # cp: the writer's wait_group retired it
    visible: bool = False                # ordered for other threads by a sync
    fence: bool = False                  # gen: fenced, not yet published by a sync
    fenced: bool = False                 # gen: fenced and published (async proxy may read)


@dataclass(frozen=True)
class _Transfer:
    tid: int
    kind: str                     # tma | cp
    issuer: int
    targets: tuple[tuple[int, str, int], ...]   # (cta, buffer, stage)
    round: int
    nbytes: int                   # per target CTA
    barrier: str | None
    gid: int | None


class _State:
    __slots__ = ("pc", "bars", "obs", "content", "flight", "groups", "mma", "unfenced", "at_sync", "ntid", "kfix",
                 "klb", "base", "reading", "tmem")

    def __init__(self) -> None:
        self.pc: list[tuple[int, int, int] | None] = []
        self.bars: dict[tuple[int, str, int], Mbarrier] = {}
        self.obs: dict[tuple[int, str, int], int] = {}
        self.content: dict[tuple[int, str, int], _Content] = {}
        self.flight: tuple[_Transfer, ...] = ()
        self.groups: list[tuple[int, tuple[int, ...]]] = []   # per instance: (open gid, committed gids)
        #: per instance, the asynchronous reads still going on: (kind: mma | tma_store,
        #: ((cta, buffer, stage), round) per buffer)
        self.mma: list[tuple[tuple[str, tuple[tuple[tuple[int, str, int], int], ...]], ...]] = []
        self.unfenced: list[frozenset[tuple[int, str, int]]] = []
        self.at_sync: dict[tuple[int, str], frozenset[int]] = {}
        self.ntid = 0
        #: the trip count once known (None: any count >= klb); rounds, trip-loop counters and
        #: both are relative to ``base`` (an absolute shift kept out of the key)
        self.kfix: int | None = None
        self.klb = 0
        self.base = 0
        #: generic reads of a role of several threads, open until the role's next sync or
        #: all-thread arrive (its threads need not have read yet): ((cta, buffer, stage), role, round)
        self.reading: frozenset[tuple[tuple[int, str, int], int, int]] = frozenset()
        #: per instance, the register fragments with a tcgen05.ld in flight (no wait::ld since)
        self.tmem: list[frozenset[str]] = []

    def copy(self) -> _State:
        s = _State.__new__(_State)
        s.pc = list(self.pc)
        s.bars = dict(self.bars)
        s.obs = dict(self.obs)
        s.content = dict(self.content)
        s.flight = self.flight
        s.groups = list(self.groups)
        s.mma = list(self.mma)
        s.unfenced = list(self.unfenced)
        s.at_sync = dict(self.at_sync)
        s.ntid = self.ntid
        s.kfix, s.klb, s.base = self.kfix, self.klb, self.base
        s.reading = self.reading
        s.tmem = list(self.tmem)
        return s

    def key(self, perm: list[int] | None = None) -> tuple[Any, ...]:
        """The state's identity, with role instance ``ri`` renamed ``perm[ri]`` (identical roles
        are interchangeable) and transfer and group ids renumbered by order."""
        p = perm if perm is not None else list(range(len(self.pc)))
        inv = [0] * len(p)
        for old, new in enumerate(p):
            inv[new] = old
        groups = [self.groups[inv[i]] for i in range(len(p))]
        gids: dict[int, int] = {}
        for o, c in groups:
            for g in (*c, o):
                gids.setdefault(g, len(gids))
        tids = {t.tid: i for i, t in enumerate(self.flight)}
        flight = tuple((tids[t.tid], t.kind, p[t.issuer], t.targets, t.round, t.nbytes, t.barrier,
                        None if t.gid is None else gids.get(t.gid, -1)) for t in self.flight)
        content = tuple(sorted((k, (v.round, v.kind, p[v.writer], v.tag, None if v.gid is None else gids.get(v.gid, -1),
                                    v.retired, v.visible, v.fence, v.fenced))
                               for k, v in self.content.items()))
        return (self.kfix, self.klb, tuple(self.pc[inv[i]] for i in range(len(p))),
                tuple(sorted(self.bars.items())),
                tuple(sorted(((p[r], b, st), v) for (r, b, st), v in self.obs.items())),
                content, flight, tuple((gids[o], tuple(gids[g] for g in c)) for o, c in groups),
                tuple(self.mma[inv[i]] for i in range(len(p))), tuple(self.unfenced[inv[i]] for i in range(len(p))),
                tuple(sorted((k, tuple(sorted(p[x] for x in v))) for k, v in self.at_sync.items())),
                tuple(sorted((k, p[r], rr) for k, r, rr in self.reading)),
                tuple(tuple(sorted(self.tmem[inv[i]])) for i in range(len(p))))


class _Label:
    """A step's label, written only when a message or a witness needs it (most steps are never
    shown)."""

    __slots__ = ("m", "ri", "op", "j", "base")

    def __init__(self, m: _Machine, ri: int, op: Op, j: int | None, base: int) -> None:
        self.m, self.ri, self.op, self.j, self.base = m, ri, op, j, base

    def __str__(self) -> str:
        return self.m.label(self.ri, self.op, self.j, self.base)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class _Landed:
    """A copy's landing, for the witness's events (written when shown)."""

    __slots__ = ("t", "name", "base")

    def __init__(self, t: _Transfer, name: str, base: int) -> None:
        self.t, self.name, self.base = t, name, base

    def __str__(self) -> str:
        t = self.t
        bufs = ",".join(sorted({b for _, b, _ in t.targets}))
        return f"{t.kind} of {self.name} round {t.round + self.base} lands in {bufs} stage {t.targets[0][2]}"


#: an event: its parts, written out (``"".join(map(str, ...))``) only for a witness
_Event = tuple[object, ...]


class _Found(Exception):
    def __init__(self, kind: str, message: str, op: Op | None, witness: dict[str, Any]) -> None:
        super().__init__(message)
        self.kind, self.message, self.op, self.witness = kind, message, op, witness


class _Machine:
    """The protocol's instances (one per CTA of the cluster and role) and its steps."""

    def __init__(self, p: Protocol, iterations: int | None, fifo: bool) -> None:
        self.p = p
        self.k = iterations                 # None: every trip count >= 1 at once
        self.fifo = fifo
        self.period = 2 * p.stages          # stage index and phase parity repeat with it
        self.base = 0                       # the state being stepped's shift (for messages)
        self._pstates: dict[tuple[int, int, int], PipelineState] = {}
        self.inst: list[tuple[int, Role]] = [(c, r) for c in range(p.cluster_size) for r in p.roles]
        # interchangeable instances: one CTA, the same program, the same named barriers
        classes: dict[tuple[Any, ...], list[int]] = {}
        for ri, (c, r) in enumerate(self.inst):
            syncs = frozenset(n for n, roles in p.syncs.items() if r.name in roles)
            program = tuple(replace(b, ops=tuple(replace(o, where=()) for o in b.ops)) for b in r.blocks)
            classes.setdefault((c, program, r.start_phase, r.start_stage, r.threads, syncs), []).append(ri)
        self.classes = [v for v in classes.values() if len(v) > 1]
        self.state0 = self.initial()

    def key(self, s: _State) -> tuple[Any, ...]:
        """``s``'s identity up to renaming interchangeable instances (sorted by their own state)."""
        if not self.classes:
            return s.key()
        perm = list(range(len(self.inst)))
        for cls in self.classes:
            for new, old in zip(cls, sorted(cls, key=lambda ri: self.signature(s, ri))):
                perm[old] = new
        return s.key(perm)

    @staticmethod
    def signature(s: _State, ri: int) -> tuple[Any, ...]:
        pc = s.pc[ri]
        return (pc is None, pc or (), tuple(sorted((b, st, v) for (r, b, st), v in s.obs.items() if r == ri)),
                len(s.groups[ri][1]), s.mma[ri], tuple(sorted(s.unfenced[ri])), tuple(sorted(s.tmem[ri])),
                tuple(sorted(k for k, v in s.at_sync.items() if ri in v)))

    # -- the trip count ----------------------------------------------------------------------------
    @staticmethod
    def lt_k(s: _State, x: int) -> bool | None:
        """Whether ``x < K`` (None: not decided yet in this state)."""
        if s.kfix is not None:
            return x < s.kfix
        return True if x < s.klb else None

    @staticmethod
    def refine(s: _State, x: int) -> list[_State]:
        """``s`` split so that ``x < K`` is decided in each part: ``K > x``, or ``K`` each value
        it may still have up to ``x``."""
        if _Machine.lt_k(s, x) is not None:
            return [s]
        out = []
        for v in range(s.klb, x + 1):  # the smallest trip counts first: their witnesses are shortest
            fixed = s.copy()
            fixed.kfix = v
            out.append(fixed)
        more = s.copy()
        more.klb = x + 1
        return [*out, more]

    def resolve(self, s: _State, ri: int) -> list[_State]:
        """``s`` split until role ``ri``'s next step no longer depends on the unknown trip count."""
        r = self.inst[ri][1]
        pc = s.pc[ri]
        assert pc is not None
        b, i, o = pc
        blk = r.blocks[b]
        xs = []
        if blk.ops[o].kind in STAGED:
            j = self.iteration(s, r, pc)
            if j + s.base >= 0:
                xs.append(j)
        if o + 1 == len(blk.ops) and blk.trip:
            xs.append(blk.start + i + 1)
        states = [s]
        for x in xs:
            states = [t for st in states for t in self.refine(st, x)]
        return states

    # -- helpers ---------------------------------------------------------------------------------
    def initial(self) -> _State:
        s = _State()
        s.kfix, s.klb = self.k, 1
        for c in range(self.p.cluster_size):
            for b, n in self.p.barriers.items():
                for st in range(self.p.stages):
                    s.bars[(c, b, st)] = Mbarrier(n)
        s.pc = [self.first_pc(s, r) for _, r in self.inst]
        s.groups = [(i, ()) for i in range(len(self.inst))]
        s.ntid = len(self.inst)
        s.mma = [() for _ in self.inst]
        s.unfenced = [frozenset() for _ in self.inst]
        s.tmem = [frozenset() for _ in self.inst]
        return s

    def first_pc(self, s: _State, r: Role, b: int = 0) -> tuple[int, int, int] | None:
        while b < len(r.blocks):
            blk = r.blocks[b]
            runs = (s.kfix != 0) if blk.trip else blk.loop > 0
            if runs and blk.ops:
                return (b, 0, 0)
            b += 1
        return None

    def next_pc(self, s: _State, r: Role, pc: tuple[int, int, int]) -> tuple[int, int, int] | None:
        b, i, o = pc
        blk = r.blocks[b]
        if o + 1 < len(blk.ops):
            return (b, i, o + 1)
        more = self.lt_k(s, blk.start + i + 1) if blk.trip else i + 1 < blk.loop
        assert more is not None, "resolve() decides the trip count first"
        if more:
            return (b, i + 1, 0)
        return self.first_pc(s, r, b + 1)

    def iteration(self, s: _State, r: Role, pc: tuple[int, int, int]) -> int:
        b, i, o = pc
        blk = r.blocks[b]
        if blk.from_end:
            assert s.kfix is not None, "a block after the K-loop runs once the trip count is known"
            return s.kfix + blk.start + i + blk.ops[o].ahead
        return blk.start + i + blk.ops[o].ahead

    def position(self, s: _State, ri: int) -> int | None:
        pc = s.pc[ri]
        if pc is None:
            return None
        r = self.inst[ri][1]
        blk = r.blocks[pc[0]]
        return blk.start + pc[1] + ((s.kfix or 0) if blk.from_end else 0)

    def normalize(self, s: _State) -> None:
        """Shift rounds by a multiple of the period and each barrier's phase counts by a multiple
        of two, so that states equal up to the shift share a key (the unknown-trip-count search
        is then finite)."""
        if self.k is not None:
            return
        pos = [x for x in (self.position(s, ri) for ri in range(len(self.inst))) if x is not None]
        shift = self.period * (min(pos) // self.period) if pos else 0
        if shift > 0:
            s.base += shift
            s.klb -= shift
            if s.kfix is not None:
                s.kfix -= shift
            for ri, pc in enumerate(s.pc):
                if pc is not None and self.inst[ri][1].blocks[pc[0]].trip:
                    s.pc[ri] = (pc[0], pc[1] - shift, pc[2])
            s.content = {k: replace(v, round=v.round - shift) for k, v in s.content.items()}
            s.flight = tuple(replace(t, round=t.round - shift) for t in s.flight)
            s.mma = [tuple((kind, tuple((k, rr - shift) for k, rr in batch)) for kind, batch in m) for m in s.mma]
            s.reading = frozenset((k, r, rr - shift) for k, r, rr in s.reading)
        low: dict[tuple[int, str, int], int] = {k: b.completed for k, b in s.bars.items()}
        for (ri, bar, st), v in s.obs.items():
            key = (self.inst[ri][0], bar, st)
            low[key] = min(low[key], v)
        for (c, _, st), cv in s.content.items():
            if cv.tag is not None:
                key = (c, cv.tag[0], st)
                low[key] = min(low[key], cv.tag[1])
        if all(v < 2 for v in low.values()):
            return
        d = {k: 2 * (v // 2) for k, v in low.items()}
        s.bars = {k: replace(b, completed=b.completed - d[k]) for k, b in s.bars.items()}
        s.obs = {(ri, bar, st): v - d[(self.inst[ri][0], bar, st)] for (ri, bar, st), v in s.obs.items()}
        s.content = {(c, buf, st): v if v.tag is None else replace(v, tag=(v.tag[0], v.tag[1] - d[(c, v.tag[0], st)]))
                     for (c, buf, st), v in s.content.items()}

    def pstate(self, r: Role, j: int) -> PipelineState:
        # the stage index and phase parity depend on j modulo the period only, so rounds
        # shifted by the normalisation give the same state
        key = (r.start_stage, r.start_phase, j % self.period)
        ps = self._pstates.get(key)
        if ps is None:
            ps = self._pstates[key] = PipelineState(self.p.stages, r.start_stage, r.start_phase).at(key[2])
        return ps

    def who(self, ri: int, j: int | None = None, stage: int | None = None, buffer: str | None = None) -> dict[str, Any]:
        c, r = self.inst[ri]
        w: dict[str, Any] = {"cta": c, "role": r.name, "warps": [r.first_warp, r.last_warp],
                             "thread": r.first_thread}
        if j is not None:
            w["round"] = j + self.base
        if stage is not None:
            w["stage"] = stage
        if buffer is not None and stage is not None:
            w["buffer"] = buffer
            w["address"] = self.p.stage_address(buffer, stage)
        return w

    def label(self, ri: int, op: Op, j: int | None, base: int | None = None) -> str:
        base = self.base if base is None else base
        c, r = self.inst[ri]
        cta = f"cta {c} " if self.p.cluster_size > 1 else ""
        what = op.kind + (f" {op.barrier}" if op.barrier and op.kind != "tma" else "") + \
            (f" {','.join(op.buffers)}" if op.buffers else "") + (f"<{op.n}>" if op.kind in ("wait_group", "wait_mma")
                                                                   else "") + \
            (f" {op.fragment}" if op.fragment else "")
        if j is not None and op.kind in STAGED:
            what += f" (round {j + base}, stage {self.pstate(r, j).index})"
        return f"{cta}{r.name}: {what}"

    # -- moves -----------------------------------------------------------------------------------
    def moves(self, s: _State) -> list[tuple[str, Any, _State]]:
        """The steps possible from ``s``: a role's next operation (in each part of ``s`` the trip
        count splits it into) or a copy landing."""
        out: list[tuple[str, Any, _State]] = []
        for ri, pc in enumerate(s.pc):
            if pc is None:
                continue
            for t in self.resolve(s, ri):
                if self.enabled(t, ri, pc):
                    out.append(("step", ri, t))
        seen: set[int] = set()
        for tr in s.flight:
            if self.fifo and tr.issuer in seen:
                continue
            seen.add(tr.issuer)
            out.append(("land", tr.tid, s))
        return out

    def active(self, s: _State, r: Role, pc: tuple[int, int, int]) -> tuple[Op, int | None]:
        op = r.blocks[pc[0]].ops[pc[2]]
        if op.kind not in STAGED:
            return op, None
        j = self.iteration(s, r, pc)
        return op, (j if j + s.base >= 0 and self.lt_k(s, j) else None)

    def enabled(self, s: _State, ri: int, pc: tuple[int, int, int]) -> bool:
        c, r = self.inst[ri]
        op, j = self.active(s, r, pc)
        if op.kind in STAGED and j is None:
            return True
        if op.kind == "wait":
            assert j is not None and op.barrier is not None
            ps = self.pstate(r, j)
            return try_wait_parity(s.bars[(c, op.barrier, ps.index)], ps.phase)
        if op.kind == "wait_group":
            _, committed = s.groups[ri]
            old = committed[:len(committed) - op.n] if op.n else committed
            return not any(t.gid in old for t in s.flight)
        if op.kind == "sync":
            assert op.sync is not None
            members = self.members(c, op.sync)
            here = s.at_sync.get((c, op.sync), frozenset()) | {ri}
            return members <= here or ri not in s.at_sync.get((c, op.sync), frozenset())
        return True

    def run(self, s: _State, ri: int) -> tuple[_State, _Event]:
        """Role ``ri``'s next step and, while that step is one of :data:`CHAINED` (or acts on no
        iteration), its following ones.  Why no hazard is lost: such a step enables and disables
        no other role's step, so any step another role could take between it and the next one
        was already possible before it; taken there instead, it sees at least the reads this
        step adds or retires later, and finds at least as much."""
        n, ev = self.step(s, ri)
        events = [ev]
        while True:
            pc = s.pc[ri]
            assert pc is not None
            op, j = self.active(s, self.inst[ri][1], pc)
            local = op.kind in CHAINED or (op.kind in STAGED and j is None)
            if not local or n.pc[ri] is None:
                break
            npc = n.pc[ri]
            if npc is None or len(self.resolve(n, ri)) != 1 or not self.enabled(n, ri, npc):
                break
            s = n
            n, ev = self.step(n, ri)
            events.append(ev)
        self.normalize(n)
        return n, tuple(x for i, ev in enumerate(events) for x in (("; ",) if i else ()) + ev)

    def members(self, c: int, name: str) -> frozenset[int]:
        names = self.p.syncs.get(name) or tuple(r.name for r in self.p.roles)
        return frozenset(i for i, (cc, r) in enumerate(self.inst) if cc == c and r.name in names)

    def step(self, s: _State, ri: int) -> tuple[_State, _Event]:
        c, r = self.inst[ri]
        pc = s.pc[ri]
        assert pc is not None
        self.base = s.base
        op, j = self.active(s, r, pc)
        n = s.copy()
        lab = _Label(self, ri, op, j, s.base)
        if op.kind in STAGED and j is None:
            n.pc[ri] = self.next_pc(n, r, pc)
            return n, (lab, " (no iteration: skipped)")
        ps = self.pstate(r, j) if j is not None else None
        st = ps.index if ps is not None else 0
        k = op.kind
        if k == "sync":
            assert op.sync is not None
            key = (c, op.sync)
            here = n.at_sync.get(key, frozenset()) | {ri}
            members = self.members(c, op.sync)
            if not members <= here:
                n.at_sync[key] = here          # arrived; the role waits (its pc stays)
                return n, (lab, " (arrives)")
            n.at_sync.pop(key, None)
            n.reading = frozenset(x for x in n.reading if x[1] not in members)
            for (cc, b, sg), v in list(n.content.items()):
                if cc == c and v.writer in members:
                    if v.kind == "cp" and v.retired or v.kind == "gen":
                        n.content[(cc, b, sg)] = replace(v, visible=True, fenced=v.fenced or v.fence)
            for m in members:
                mpc = n.pc[m]
                assert mpc is not None
                n.pc[m] = self.next_pc(n, self.inst[m][1], mpc)
            return n, (lab, " (all arrived)")
        if k == "wait":
            assert op.barrier is not None
            n.obs[(ri, op.barrier, st)] = n.bars[(c, op.barrier, st)].completed
        elif k in ("arrive", "arrive_expect_tx", "expect_tx"):
            assert op.barrier is not None
            ctas = range(self.p.cluster_size) if op.ctas == "all" else (c,)
            for cc in ctas:
                key3 = (cc, op.barrier, st)
                mb = n.bars[key3]
                if k == "arrive":
                    mb = mb.arrive(op.count if op.count > 0 else r.threads)
                    if op.count == 0:  # every thread arrives after its own reads
                        n.reading = frozenset(x for x in n.reading if x[1] != ri)
                elif k == "arrive_expect_tx":
                    mb = mb.arrive_expect_tx(op.nbytes, op.count if op.count > 0 else 1)
                else:
                    mb = mb.expect_tx(op.nbytes)
                n.bars[key3] = mb
                if mb.overrun:
                    raise _Found("over_arrival",
                                 f"{lab}: barrier {op.barrier}[{st}] of CTA {cc} gets {-(mb.pending or 0)} more "
                                 f"arrivals than its phase expects ({self.p.barriers[op.barrier]})", op,
                                 {**self.who(ri, j, st), "barrier": op.barrier, "phase": mb.completed})
        elif k == "tma":
            self.issue_tma(n, ri, op, j, st, lab)
        elif k == "cp_async":
            assert j is not None
            for buf in op.buffers:
                self.check_refill(n, ri, op, j, st, (c, buf, st), lab)
            gid = n.groups[ri][0]
            n.flight = (*n.flight, _Transfer(n.ntid, "cp", ri, tuple((c, b, st) for b in op.buffers), j, op.nbytes,
                                             None, gid))
            n.ntid += 1
        elif k == "commit":
            o, committed = n.groups[ri]
            n.groups[ri] = (n.ntid, (*committed, o))
            n.ntid += 1
        elif k == "wait_group":
            o, committed = n.groups[ri]
            old = set(committed[:len(committed) - op.n] if op.n else committed)
            for key3, v in list(n.content.items()):
                if v.kind == "cp" and v.gid in old:
                    n.content[key3] = replace(v, retired=True)
            n.groups[ri] = (o, tuple(g for g in committed if g not in old))
        elif k in ("read", "mma", "tma_store"):
            assert j is not None
            for buf in op.buffers:
                self.check_read(n, ri, op, j, st, buf, lab, asynchronous=k != "read")
            if k in ("mma", "tma_store"):
                n.mma[ri] = (*n.mma[ri], (k, tuple(((c, b, st), j) for b in op.buffers)))
            elif k == "read" and r.threads > 1:
                n.reading = n.reading | {((c, b, st), ri, j) for b in op.buffers}
        elif k in ("wait_mma", "tma_store_wait"):
            # warpgroup_wait<n> / cp.async.bulk.wait_group.read n: all but the n newest batches of
            # that kind have finished reading
            kind = "mma" if k == "wait_mma" else "tma_store"
            mine = [i for i, b in enumerate(n.mma[ri]) if b[0] == kind]
            done = set(mine[:len(mine) - op.n] if op.n else mine)
            n.mma[ri] = tuple(b for i, b in enumerate(n.mma[ri]) if i not in done)
        elif k == "write":
            assert j is not None
            for buf in op.buffers:
                key3 = (c, buf, st)
                self.check_refill(n, ri, op, j, st, key3, lab)
                n.content[key3] = _Content(j, "gen", ri)
                n.unfenced[ri] = n.unfenced[ri] | {key3}
        elif k == "tmem_load":
            assert op.fragment is not None
            n.tmem[ri] = n.tmem[ri] | {op.fragment}
        elif k == "tmem_wait_ld":
            n.tmem[ri] = frozenset()
        elif k == "use":
            if op.fragment in n.tmem[ri]:
                raise _Found("tmem_read_before_wait",
                             f"{lab}: the registers of {op.fragment!r} are used while its tcgen05.ld is in flight "
                             "(no tcgen05.wait::ld since the load): they hold nothing defined yet", op,
                             {**self.who(ri), "fragment": op.fragment})
        elif k == "fence_proxy_async":
            for key3 in n.unfenced[ri]:
                cur = n.content.get(key3)
                if cur is not None and cur.kind == "gen" and cur.writer == ri:
                    n.content[key3] = replace(cur, fence=True)
            n.unfenced[ri] = frozenset()
        n.pc[ri] = self.next_pc(n, r, pc)
        return n, (lab,)

    def issue_tma(self, n: _State, ri: int, op: Op, j: int | None, st: int, lab: _Label) -> None:
        c, _ = self.inst[ri]
        assert j is not None
        if op.multicast is not None:
            bad = [b for b in range(op.multicast.bit_length()) if op.multicast >> b & 1 and b >= self.p.cluster_size]
            if bad:
                raise _Found("multicast_outside_cluster",
                             f"{lab}: the multicast mask {op.multicast:#b} names CTA {bad[0]}, but the cluster has "
                             f"{self.p.cluster_size} CTA{'s' if self.p.cluster_size > 1 else ''}", op,
                             {**self.who(ri, j, st), "mask": op.multicast, "cluster_size": self.p.cluster_size,
                              "cta_outside": bad[0]})
            ctas = [b for b in range(self.p.cluster_size) if op.multicast >> b & 1]
        else:
            ctas = [c]
        targets = tuple((cc, b, st) for cc in ctas for b in op.buffers)
        for key3 in targets:
            self.check_refill(n, ri, op, j, st, key3, lab)
        n.flight = (*n.flight, _Transfer(n.ntid, "tma", ri, targets, j, op.nbytes, op.barrier, None))
        n.ntid += 1

    def check_refill(self, n: _State, ri: int, op: Op, j: int, st: int, key3: tuple[int, str, int],
                     lab: _Label) -> None:
        # who still reads the stage: threads of a role before its next barrier, or an mma or TMA
        # store not yet waited for
        readers = [(rj, rr, "its threads may still read it (no barrier since their reads: a missing "
                    "__syncthreads, a release too early, or one stage too few)")
                   for k2, rj, rr in n.reading if k2 == key3]
        readers += [(rj, rr, "it still reads it asynchronously (its mma or TMA store has not been waited for: a "
                     "release too early, or one stage too few)")
                    for rj, batches in enumerate(n.mma) for batch in batches for k2, rr in batch[1] if k2 == key3]
        for rj, rr, why in readers:
            if rr != j:
                raise _Found("refill_while_read",
                             f"{lab} overwrites {key3[1]} stage {st} while {self.inst[rj][1].name} reads round {rr} "
                             f"there: {why}", op,
                             {**self.who(ri, j, st, key3[1]), "reader": self.who(rj, rr, st, key3[1])})
        for t in n.flight:
            if key3 in t.targets and t.round != j:
                raise _Found("refill_while_read",
                             f"{lab} writes {key3[1]} stage {st} while round {t.round}'s copy into it is still landing",
                             op, {**self.who(ri, j, st, key3[1]), "landing_round": t.round})

    def check_read(self, n: _State, ri: int, op: Op, j: int, st: int, buf: str, lab: _Label, *,
                   asynchronous: bool) -> None:
        c, r = self.inst[ri]
        key3 = (c, buf, st)
        w = self.who(ri, j, st, buf)
        for t in n.flight:
            if key3 in t.targets:
                if t.round > j:
                    raise _Found("refill_while_read",
                                 f"{lab}: round {t.round}'s copy is landing in {buf} stage {st} while round {j} is "
                                 "read there (the stage was released or refilled too early, or the ring has one "
                                 "stage too few)", op, {**w, "landing_round": t.round})
                raise _Found("read_before_landed",
                             f"{lab}: {buf} stage {st} is read while round {t.round}'s copy into it is still landing",
                             op, {**w, "landing_round": t.round})
        v = n.content.get(key3)
        if v is None or v.round < j:
            raise _Found("read_before_landed",
                         f"{lab}: {buf} stage {st} is read for round {j} but holds "
                         + ("nothing yet" if v is None else f"round {v.round}") + f" (round {j} has not landed)",
                         op, {**w, "holds_round": None if v is None else v.round})
        if v.round > j:
            raise _Found("refill_while_read",
                         f"{lab}: {buf} stage {st} already holds round {v.round} when round {j} is read (it was "
                         "refilled before this read: a release too early, or one stage too few)", op,
                         {**w, "holds_round": v.round})
        if v.kind == "tma":
            assert v.tag is not None
            seen = n.obs.get((ri, v.tag[0], st), -1)
            if seen <= v.tag[1]:
                raise _Found("read_before_landed",
                             f"{lab}: round {j} of {buf} stage {st} landed, but no wait of this role observed the "
                             f"phase its landing completed ({v.tag[0]}[{st}] phase {v.tag[1]}, parity "
                             f"{v.tag[1] & 1}): the read is not ordered after the copy (a wait on the wrong phase?)",
                             op, {**w, "barrier": v.tag[0], "phase": v.tag[1], "observed_phases": seen})
            return
        if v.kind == "cp":
            if v.writer == ri and not v.retired:
                raise _Found("read_before_landed",
                             f"{lab}: round {j} of {buf} stage {st} was copied with cp.async and no wait_group has "
                             "retired its group", op, {**w, "writer": self.who(v.writer)})
            if (v.writer != ri or r.threads > 1) and not v.visible:
                raise _Found("read_before_landed",
                             f"{lab}: round {j} of {buf} stage {st} was copied with cp.async by other threads and no "
                             "barrier after their wait_group orders it before this read", op,
                             {**w, "writer": self.who(v.writer)})
            if asynchronous:
                raise _Found("missing_proxy_fence",
                             f"{lab}: the async proxy reads {buf} stage {st}, written by cp.async (generic proxy) "
                             "without fence.proxy.async", op, {**w, "writer": self.who(v.writer)})
            return
        # generic stores
        if v.writer != ri and not v.visible:
            raise _Found("read_before_landed",
                         f"{lab}: {buf} stage {st} was written by {self.inst[v.writer][1].name} and no barrier orders "
                         "the stores before this read", op, {**w, "writer": self.who(v.writer)})
        if asynchronous and not v.fenced:
            raise _Found("missing_proxy_fence",
                         f"{lab}: the async proxy reads {buf} stage {st}, written by generic stores of "
                         f"{self.inst[v.writer][1].name} with no fence.proxy.async between the stores and the "
                         "barrier", op, {**w, "writer": self.who(v.writer)})

    def land(self, s: _State, tid: int) -> tuple[_State, _Event]:
        self.base = s.base
        n = s.copy()
        t = next(x for x in n.flight if x.tid == tid)
        n.flight = tuple(x for x in n.flight if x.tid != tid)
        if t.kind == "tma":
            assert t.barrier is not None
            ctas = sorted({cc for cc, _, _ in t.targets})
            st = t.targets[0][2]
            for cc in ctas:
                key3 = (cc, t.barrier, st)
                b = n.bars[key3]
                for cc2, buf, sg in t.targets:
                    if cc2 == cc:
                        n.content[(cc, buf, sg)] = _Content(t.round, "tma", t.issuer, tag=(t.barrier, b.completed))
                n.bars[key3] = b.complete_tx(t.nbytes)
        else:
            for key3 in t.targets:
                n.content[key3] = _Content(t.round, "cp", t.issuer, gid=t.gid)
        landed = _Landed(t, self.inst[t.issuer][1].name, self.base)
        self.normalize(n)
        return n, (landed,)

    def deadlock(self, s: _State) -> _Found:
        self.base = s.base
        blocked = [(ri, pc) for ri, pc in enumerate(s.pc) if pc is not None]
        found: list[_Found] = []
        for ri, pc in blocked:
            c, r = self.inst[ri]
            op, j = self.active(s, r, pc)
            if op.kind == "wait":
                assert j is not None and op.barrier is not None
                ps = self.pstate(r, j)
                b = s.bars[(c, op.barrier, ps.index)]
                w = {**self.who(ri, j, ps.index), "barrier": op.barrier, "parity": ps.phase,
                     "completed_phases": b.completed, "pending_arrivals": b.pending, "tx_bytes": b.tx}
                if b.pending == 0 and b.tx != 0:
                    found.insert(0, _Found("tx_mismatch_hang",
                                  f"{self.label(ri, op, j)} never returns: {op.barrier}[{ps.index}]'s phase "
                                  f"{b.completed} has all its arrivals but its transaction count is {b.tx} bytes "
                                  + ("(more expected than delivered)" if b.tx > 0 else "(more delivered than expected)")
                                  + ": the kernel hangs", op, w))
                    continue
                found.append(_Found("arrival_deadlock",
                              f"{self.label(ri, op, j)} never returns: {op.barrier}[{ps.index}]'s phase {b.completed} "
                              f"still waits for {b.pending} arrival{'s' if b.pending != 1 else ''} that no role will "
                              "make: the kernel deadlocks", op, w))
        if found:
            return found[0]
        ri, pc = blocked[0]
        c, r = self.inst[ri]
        op, j = self.active(s, r, pc)
        if op.kind == "sync":
            assert op.sync is not None
            missing = sorted(self.inst[m][1].name for m in self.members(c, op.sync)
                             if m not in s.at_sync.get((c, op.sync), frozenset()))
            return _Found("sync_deadlock",
                          f"{self.label(ri, op, j)}: named barrier {op.sync!r} waits for {', '.join(missing)}, "
                          "which never arrive: the kernel deadlocks", op, {**self.who(ri), "missing": missing})
        return _Found("arrival_deadlock", f"{self.label(ri, op, j)} can never run", op, self.who(ri))


def explore(protocol: Protocol, iterations: int | None, *, fifo: bool = True, max_states: int = 300_000,
            kinds: tuple[str, ...] = KINDS) -> Exploration:
    """Every reachable state of ``protocol`` with a K-loop of ``iterations`` trips (module
    docstring), or with ``iterations=None`` of every trip count >= 1 at once: the count stays
    unknown until a step depends on it, and states equal up to a shift of the rounds by the
    ring's period (and of each barrier's phases by two) are one state, so the search is finite
    and covers every count.  A witness names the trip count of its run.  Stops after
    ``max_states`` (``truncated``)."""
    if iterations is not None and iterations < 0:
        raise SpecError(f"a K-loop runs 0 or more times, got {iterations}")
    t0 = time.process_time()
    m = _Machine(protocol, iterations, fifo)
    out = Exploration(iterations if iterations is not None else -1)
    found: dict[tuple[str, tuple[object, ...]], PipelineFinding] = {}
    seen: set[tuple[Any, ...]] = set()
    s0 = m.state0
    m.normalize(s0)
    seen.add(m.key(s0))
    # depth-first: each frame is a state, its moves, the next move to try, the event that led to it
    stack: list[tuple[_State, list[tuple[str, Any, _State]], int, _Event]] = [(s0, m.moves(s0), 0, ("start",))]

    def trace() -> list[str]:
        return ["".join(map(str, fr[3])) for fr in stack[max(1, len(stack) - TRACE):]]

    bound = MAX_SPREAD * m.period + protocol.max_lag

    while stack:
        s, mv, i, ev0 = stack[-1]
        if i == 0 and not mv:
            if any(pc is not None for pc in s.pc):
                _record(found, m.deadlock(s), trace(), s)
            else:
                out.finished_runs += 1
        if i >= len(mv):
            stack.pop()
            continue
        stack[-1] = (s, mv, i + 1, ev0)
        kind, arg, t = mv[i]
        try:
            n, ev = m.run(t, arg) if kind == "step" else m.land(t, arg)
        except _Found as f:
            _record(found, f, trace(), t)
            continue
        key = m.key(n)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > max_states:
            out.truncated = True
            break
        pos = [x for x in (m.position(n, ri) for ri in range(len(m.inst))) if x is not None]
        if iterations is None and pos and max(pos) - min(pos) > bound:
            out.pruned += 1  # roles this far apart are no longer held together by the protocol
            continue
        stack.append((n, m.moves(n), 0, ev))
    out.states = len(seen)
    if out.pruned and not found:
        out.truncated = True  # nothing found, but not everything was explored
    out.findings = [f for f in found.values() if f.kind in kinds]
    out.seconds = time.process_time() - t0
    return out


def _record(found: dict[tuple[str, tuple[object, ...]], PipelineFinding], f: _Found, trace: list[str],
            s: _State) -> None:
    where = f.op.where if f.op is not None else ()
    key = (f.kind, where)
    if key in found:
        return
    # the run's trip count: known, or any count from the lowest it may still be
    k: int | str = s.kfix + s.base if s.kfix is not None else f">= {s.klb + s.base}"
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
