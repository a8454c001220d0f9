"""Dataflow: the stages implement the declared transform, without shared-memory races.

Definitions.  Values are simulated symbolically: the element read from the *input* global
tensor at coordinate ``c`` carries the value ``c`` (as its colexicographic index).  A copy
stage moves, for every (block, thread, value) of the fragment, the value read on the src
side to the dst side when the predicate is true.  Registers hold values per (block,
fragment, thread, value); shared buffers per (block, buffer, byte): shared memory is byte
addressed, so an element of ``e`` bytes occupies ``e`` bytes and two threads conflict only
when they write a common byte (two f16 halves of one 4-byte word are not a race).

* *Transform*: every active write to the *output* global tensor at ``d`` carries the value
  ``T^-1(d)``: ``copy``: ``c == d``; ``transpose``: ``c == reversed(d)``.
* *Delivery*: every element of the output is written by some active write (``missing``
  counts the elements no active write reaches: the transform is not implemented where
  nothing lands).  This needs the whole grid, so the accumulator reports it only when told
  (:meth:`Dataflow.deliver`: the driver passes the output side's whole-grid coverage, the
  count ``grid_coverage`` reports as missing on that side; :func:`check_dataflow` counts it
  from its tables, which are the whole grid).
* *Write race*: between two barriers (an *epoch*), no two different threads of a block
  write a common byte of shared memory (counted once per byte... per raced slot, see below).
* *Stale read*: a shared byte read in an epoch must not have been written in that epoch by
  another thread (the write is not visible without a barrier); the value read is the one
  from before the epoch.
* *Write after read*: a shared byte written in an epoch must not have been read in that epoch
  (in an earlier stage or the same one) by another thread: without a barrier between them the
  write may land before the read (a double buffer reused without its trailing barrier).
  Counted once per writing access.
* *Uninitialised read*: a shared byte (or register) read was never written (shared buffers
  that no stage writes hold data loaded outside the spec and are not reported).

Blocks are independent (shared memory is per block).  Reads of a thread's own writes in the
same epoch see them (program order).  The enumeration keeps dense per-block stores: shared
buffers as arrays of *slots* of ``g`` bytes, ``g`` the gcd of the element sizes of the views
of the buffer (every access is a whole number of slots, so per-slot is per-byte), so a chunk
costs a few gathers and scatters per access.  :func:`dataflow_definition` is the executable
definition (pure Python, per byte).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from math import gcd
from typing import Any, Literal

import numpy as np

from threadmap.hardware import MAX_SHARED_BYTES
from threadmap.model import KernelModel, SideModel
from threadmap.report.model import CheckResult, DataflowSummary, Finding
from threadmap.simulate.access import AccessTable
from threadmap.verify.blocks import Memo, group_rows, view_of
from threadmap.verify.check import Accumulator, Check, register
from threadmap.verify.util import colex, delinearize, in_bounds

Transform = Literal["copy", "transpose"] | None

UNINIT, OOB, FOREIGN = -1, -2, -3
MAX_FINDINGS_PER_KIND = 5


def expected_source(dst_coord: Sequence[Any], transform: str) -> tuple[Any, ...]:
    """``T^-1`` applied to a destination coordinate (per mode; ints or arrays)."""
    if transform == "copy":
        return tuple(dst_coord)
    if transform == "transpose":
        return tuple(reversed(tuple(dst_coord)))
    raise ValueError(f"unknown transform {transform!r}")


def dataflow_definition(stages: Sequence[Any], transform: str | None, input_name: str,
                        output_name: str, output_shape: Sequence[int] | None = None) -> dict[str, list[Any]]:
    """Brute-force definition over Python rows (for tests on tiny kernels).

    ``stages``: ``"barrier"`` or ``(src_rows, dst_rows)`` where rows are dicts with keys
    ``block, thread, value, memory, tensor, buffer, coord, addr, elem_bytes, pred``; pairs
    share (block, thread, value).  Returns lists ``wrong``, ``races`` (distinct (block,
    buffer, byte) written by two threads in one epoch), ``stale``, ``uninit``, ``war`` (writes of
    a byte another thread read in the epoch), ``missing`` (with a transform and
    ``output_shape``: the output coordinates, in colexicographic order, that no active write
    reaches; the rows are then the whole grid).
    """
    regs: dict[Any, Any] = {}
    smem: dict[Any, Any] = {}                 # (block, buffer, byte) -> value
    pending: dict[Any, list[Any]] = {}        # (block, buffer, byte) -> [(thread, value)]
    readers: dict[Any, set[int]] = {}       # (block, buffer, byte) -> threads that read it this epoch
    out: dict[str, list[Any]] = {"wrong": [], "races": [], "stale": [], "uninit": [], "war": [], "missing": []}
    delivered: set[tuple[int, ...]] = set()
    written = {r["buffer"] for st in stages if st != "barrier" for r in st[1] if r["memory"] == "shared"}

    def commit() -> None:
        for key, ws in pending.items():
            if len({th for th, _ in ws}) > 1:
                out["races"].append(key)
            smem[key] = ws[-1][1]
        pending.clear()
        readers.clear()

    for st in stages:
        if st == "barrier":
            commit()
            continue
        src, dst = st[0], st[1]
        ds = {(r["block"], r["thread"], r["value"]): r for r in dst}
        for s in src:
            d = ds[(s["block"], s["thread"], s["value"])]
            if not (s["pred"] and d["pred"]):
                continue
            b, th = s["block"], s["thread"]
            if s["memory"] == "global":
                v: Any = tuple(s["coord"]) if s["tensor"] == input_name else FOREIGN
            elif s["memory"] == "register":
                v = regs.get((b, s["tensor"], tuple(s["coord"])), UNINIT)
            else:
                keys = [(b, s["buffer"], s["addr"] + i) for i in range(s["elem_bytes"])]
                for k in keys:
                    readers.setdefault(k, set()).add(th)
                pend = [pending.get(k, []) for k in keys]
                if any(x[0] != th for p in pend for x in p):
                    out["stale"].append((b, th, s["addr"]))
                own = [p[-1][1] for p in pend if p and p[-1][0] == th]
                if own and all(p and p[-1][0] == th for p in pend):
                    v = own[0]
                else:
                    v = smem.get(keys[0], UNINIT)
                    if v == UNINIT and s["buffer"] in written and not any(x[0] != th for p in pend for x in p):
                        out["uninit"].append((b, th, s["addr"]))
            if d["memory"] == "register":
                regs[(b, d["tensor"], tuple(d["coord"]))] = v
            elif d["memory"] == "shared":
                if any(readers.get((b, d["buffer"], d["addr"] + i), set()) - {th} for i in range(d["elem_bytes"])):
                    out["war"].append((b, th, d["addr"]))
                for i in range(d["elem_bytes"]):
                    pending.setdefault((b, d["buffer"], d["addr"] + i), []).append((th, v))
            elif d["tensor"] == output_name and transform:
                delivered.add(tuple(d["coord"]))
                exp = expected_source(d["coord"], transform)
                if v != exp:
                    out["wrong"].append((b, th, tuple(d["coord"]), v))
    commit()
    if transform and output_shape is not None:
        out["missing"] = [c for c in _colex_coords(output_shape) if c not in delivered]
    return out


def _colex_coords(shape: Sequence[int]) -> list[tuple[int, ...]]:
    """Every coordinate of ``shape`` in colexicographic order (the first mode fastest)."""
    return [tuple(reversed(c)) for c in itertools.product(*(range(int(e)) for e in reversed(tuple(shape))))]


_KEYS = ("moved", "output_writes", "wrong_values", "races", "stale_reads", "uninitialised_reads",
         "writes_after_reads")
_KINDS = ("wrong_value", "race", "stale_read", "uninitialised_read", "write_after_read")
#: the counters that are findings
FINDING_KEYS = ("wrong_values", "races", "stale_reads", "uninitialised_reads", "writes_after_reads")
SEVERAL = -2  # epoch_reader: more than one thread read the slot
_ROW_BITS = 32  # symbolic values: (input stage code << 32) | row in the block


class _Buffer:
    """One shared buffer of every block of a run, in slots of ``gbits`` bits (flat:
    block-major; a slot is a whole number of bytes unless the buffer holds sub-byte elements)."""

    def __init__(self, nb: int, nslots: int, gbits: int) -> None:
        self.gbits = gbits
        self.nslots = nslots
        n = nb * nslots
        self.val = np.full(n, UNINIT, dtype=np.int64)
        self.written = np.zeros(n, dtype=bool)
        self.epoch_val = np.zeros(n, dtype=np.int64)
        self.epoch_writer = np.full(n, -1, dtype=np.int32)
        self.epoch_stage = np.zeros(n, dtype=np.int32)
        self.raced = np.zeros(n, dtype=bool)
        self.epoch_reader = np.full(n, -1, dtype=np.int32)  # -1 none, SEVERAL, else the one thread
        self.read_stage = np.zeros(n, dtype=np.int32)


class _Ctx:
    """One simulation of some blocks: weighted counts, findings on or off, and (``symbolic``:
    one block whose input values are (stage, row) codes) finding events and output values."""

    def __init__(self, w: np.ndarray, symbolic: bool, findings: bool) -> None:
        self.nb = int(w.size)
        self.w = w
        self.symbolic = symbolic
        self.findings = findings
        self.weighted = dict.fromkeys(_KEYS, 0)
        self.events: Counter[tuple[str, int]] = Counter()
        self.outputs: list[tuple[int, np.ndarray, np.ndarray]] = []
        self.codes: dict[int, int] = {}

    def per_block(self, rows: np.ndarray, pb: int) -> int:
        """Weighted number of ``rows`` (row indices of a table with ``pb`` rows per block)."""
        if rows.size == 0:
            return 0
        if self.nb == 1:
            return int(rows.size * self.w[0])
        return int((np.bincount(rows // pb, minlength=self.nb) * self.w).sum())


def _route(src: AccessTable, dst: AccessTable, nb: int) -> np.ndarray:
    """Per dst row, the src row of the same (block, thread, value) (padding rows: any row)."""
    ts, td = src._template, dst._template
    slot_s = np.minimum(ts["thread"], src.threads - 1) * src.values + ts["value"]
    real = ts["thread"] < src.threads
    order = np.zeros(src.threads * src.values, dtype=np.int64)
    order[slot_s[real]] = np.flatnonzero(real)  # real rows only: a padding row shares its slot
    m = order[np.minimum(td["thread"], dst.threads - 1) * dst.values + td["value"]]
    if nb == 1:
        return m
    return (np.arange(nb, dtype=np.int64)[:, None] * src.per_block + m[None, :]).reshape(-1)


class Dataflow(Accumulator):
    """Weighted dataflow enumeration over chunks of blocks (all stages of the same blocks).

    Blocks whose every side follows a verified reference pattern (see
    :mod:`threadmap.verify.blocks`: every real row performed, the same shared addresses and
    register slots, input and output coordinates shifted inside the tensors) route values the
    same way: the reference block is simulated once with symbolic values (which input row
    lands where) and each block's wrong values are counted from its coordinate shift; every
    other block is simulated directly.  Findings come from direct simulations of the first
    blocks that have them.
    """

    def __init__(self, model: KernelModel | None, transform: Transform, input_tensor: str | None,
                 output_tensor: str | None) -> None:
        self.transform = transform
        self.input = input_tensor
        self.output = output_tensor
        self.model = model
        self.cnt = {"stages": 0, "barriers": 0, **dict.fromkeys(_KEYS, 0)}
        self.findings: dict[str, list[Finding]] = {k: [] for k in _KINDS}
        self.memo = Memo()
        #: (output elements, elements some active write reaches, first unreached coordinates):
        #: the whole grid's delivery, from the driver (see :meth:`deliver`)
        self.delivery: tuple[int, int, list[tuple[int, ...]]] | None = None
        self.delivery_stage: int | None = None

    def deliver(self, elements: int, reached: int, unreached: Sequence[tuple[int, ...]],
                stage: int | None = None) -> None:
        """The output's whole-grid delivery: of its ``elements``, ``reached`` are the coordinate
        of an active write; ``unreached``: the first of the others (witnesses); ``stage``: the
        stage that writes the output (where the findings point).  Only a caller that saw every
        block knows it (a sample of blocks cannot tell an unwritten element)."""
        self.delivery = (int(elements), int(reached), [tuple(int(x) for x in c) for c in unreached])
        self.delivery_stage = stage

    # -- one chunk -----------------------------------------------------------------------------
    def add(self, stages: Any, weights: np.ndarray) -> None:
        copies = [s for s in stages if not isinstance(s, str)]
        if not copies:
            return
        nb = copies[0][0].blocks.size
        w = np.asarray(weights, dtype=np.int64)
        in_shape = next((s[0].shape for s in copies if s[0].tensor == self.input and s[0].memory == "global"), ())
        self.cnt["stages"] = len(copies)
        self.cnt["barriers"] = len(stages) - len(copies)
        eligible, keys, sig = self._eligible(stages, nb, in_shape)
        self.memo.reset_unless(sig)
        extra = np.zeros(nb, dtype=bool)  # blocks simulated directly for their findings only
        el = np.flatnonzero(eligible)
        if el.size:
            uk, first, inv = group_rows(keys[el])
            recs = []
            for j in range(uk.shape[0]):
                key = tuple(int(x) for x in uk[j])
                rec = self.memo.store.get(key)
                if rec is None:
                    rec = self._template(stages, int(el[first[j]]), in_shape)
                    self.memo.store[key] = rec
                recs.append(rec)
            we = w[el]
            for k in _KEYS:
                if k != "wrong_values":
                    self.cnt[k] += sum(int(recs[j]["counts"][k]) * int(we[inv == j].sum()) for j in range(len(recs)))
            wrong = self._wrong(stages, el, inv, recs, in_shape)  # (stage -> per eligible block)
            self.cnt["wrong_values"] += int(sum((x * we).sum() for x in wrong.values()))
            self._pick_witnesses(el, inv, recs, wrong, extra)
        direct = ~eligible | extra
        if direct.any():
            ids = np.flatnonzero(direct)
            sub = stages if ids.size == nb else [
                st if isinstance(st, str) else (st[0].select_blocks(ids), st[1].select_blocks(ids)) for st in stages]
            ctx = _Ctx(np.where(eligible[ids], 0, w[ids]), symbolic=False, findings=True)
            self._simulate(sub, ctx, in_shape)
            for k, v in ctx.weighted.items():
                self.cnt[k] += v

    def _eligible(self, stages: Sequence[Any], nb: int, in_shape: tuple[int, ...]
                  ) -> tuple[np.ndarray, np.ndarray, tuple[Any, ...]]:
        """(nb,) blocks that route like a reference, their key (the shared addresses and
        register slots they start at), and the signature of the reference pattern."""
        ok = np.ones(nb, dtype=bool)
        keys: list[np.ndarray] = []
        sig: list[Any] = [self.transform, self.input, self.output, tuple(in_shape)]
        none = (np.zeros(nb, dtype=bool), np.zeros((nb, 0), dtype=np.int64), tuple(sig))
        for st in stages:
            if isinstance(st, str):
                sig.append("barrier")
                continue
            for t in st:
                v = view_of(t)
                if v.vtpl is None:
                    return none
                ok &= v.full
                sig += [(t.stage, t.side, t.tensor, t.memory, t.buffer, t.elem_bits, t.vec, t.threads, t.values,
                         t.per_block, tuple(t.shape)), v.vtpl]
                if t.memory == "shared":
                    ok &= v.addr.ok
                    keys.append(v.addr.start)
                    sig.append(v.addr.rel)
                elif t.memory == "register":
                    ok &= v.coords_ok
                    keys += [c.start for c in v.coords]
                    sig += [c.rel for c in v.coords]
                elif t.side == "src" and t.tensor == self.input:
                    if tuple(t.shape) != tuple(in_shape) or len(v.coords) != len(in_shape):
                        return none
                    ok &= v.inside(in_shape)
                    sig += [c.rel for c in v.coords]
                elif t.side == "dst" and t.tensor == self.output and self.transform:
                    if not in_shape or len(v.coords) != len(in_shape):
                        return none
                    ok &= v.coords_ok
                    # the expected source coordinate of every row lies inside the input
                    exp = expected_source(list(range(len(v.coords))), self.transform)
                    for j, m in enumerate(exp):
                        c = v.coords[m]
                        ok &= (c.start + c.lo >= 0) & (c.start + c.hi < int(in_shape[j]))
                    sig += [c.rel for c in v.coords]
        key = np.stack(keys, axis=1) if keys else np.zeros((nb, 1), dtype=np.int64)
        return ok, key, tuple(sig)

    def _template(self, stages: Sequence[Any], b: int, in_shape: tuple[int, ...]) -> dict[str, Any]:
        """Simulate block ``b`` with symbolic input values: its counts, finding events and, per
        (input stage, output stage), the differences ``D`` whose match decides a right value."""
        ids = np.array([b])
        sub = [st if isinstance(st, str) else (st[0].select_blocks(ids), st[1].select_blocks(ids)) for st in stages]
        ctx = _Ctx(np.ones(1, dtype=np.int64), symbolic=True, findings=False)
        self._simulate(sub, ctx, in_shape)
        mult = _colex_mult(in_shape)
        code_stage = {c: si for si, c in ctx.codes.items()}
        groups = []
        marker: Counter[int] = Counter()
        for so, rows, vals in ctx.outputs:
            bad = vals < 0
            marker[so] += int(bad.sum())
            rows, vals = rows[~bad], vals[~bad]
            out_view = view_of(stages[so][1])
            texp = expected_source([c.rel[rows] for c in out_view.coords], self.transform or "copy")
            lexp = sum(x * m for x, m in zip(texp, mult, strict=True))
            codes = vals >> _ROW_BITS
            for c in np.unique(codes):
                si = code_stage[int(c)]
                sel = codes == c
                rin = vals[sel] & ((1 << _ROW_BITS) - 1)
                in_view = view_of(stages[si][0])
                lin = sum(cv.rel[rin] * m for cv, m in zip(in_view.coords, mult, strict=True))
                uniq, cnt = np.unique(lin - lexp[sel], return_counts=True)
                groups.append((si, so, int(sel.sum()), uniq, cnt))
        wrong_ev = {so for so, _, _ in ctx.outputs}
        return {"counts": ctx.weighted, "events": ctx.events, "groups": groups, "marker": marker,
                "outputs": sorted(wrong_ev)}

    def _wrong(self, stages: Sequence[Any], el: np.ndarray, inv: np.ndarray, recs: list[dict[str, Any]],
               in_shape: tuple[int, ...]) -> dict[int, np.ndarray]:
        """Per output stage, the wrong values of every eligible block: rows whose input row's
        coordinate differs from the expected one by other than the block's shift."""
        mult = _colex_mult(in_shape)
        out: dict[int, np.ndarray] = {}
        for j, rec in enumerate(recs):
            mine = inv == j
            for so in rec["outputs"]:
                out.setdefault(so, np.zeros(el.size, dtype=np.int64))[mine] += rec["marker"][so]
            for si, so, n, uniq, cnt in rec["groups"]:
                s_out = view_of(stages[so][1]).coords_start[el[mine]]
                s_in = view_of(stages[si][0]).coords_start[el[mine]]
                texp = expected_source([s_out[:, k] for k in range(s_out.shape[1])], self.transform or "copy")
                delta = sum(x * m for x, m in zip(texp, mult, strict=True)) - s_in @ mult
                pos = np.minimum(np.searchsorted(uniq, delta), uniq.size - 1)
                match = np.where(uniq[pos] == delta, cnt[pos], 0)
                out[so][mine] += n - match
        return out

    def _pick_witnesses(self, el: np.ndarray, inv: np.ndarray, recs: list[dict[str, Any]],
                        wrong: dict[int, np.ndarray], extra: np.ndarray) -> None:
        """Mark, per kind and stage, the first eligible blocks that have findings (as many as
        the kind has room for)."""
        for kind in _KINDS:
            room = MAX_FINDINGS_PER_KIND - len(self.findings[kind])
            if room <= 0:
                continue
            stages = {s for r in recs for (k, s) in r["events"] if k == kind}
            if kind == "wrong_value":
                stages |= set(wrong)
            for si in stages:
                has = np.array([r["events"].get((kind, si), 0) > 0 for r in recs])[inv]
                if kind == "wrong_value" and si in wrong:
                    has = has | (wrong[si] > 0)
                extra[el[np.flatnonzero(has)[:room]]] = True

    # -- the simulation ------------------------------------------------------------------------
    def _simulate(self, stages: Sequence[Any], ctx: _Ctx, in_shape: tuple[int, ...]) -> None:
        copies = [s for s in stages if not isinstance(s, str)]
        bufs = self._buffers(copies, ctx.nb)
        written = {s[1].buffer for s in copies if s[1].memory == "shared"}
        regs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for si, st in enumerate(stages):
            if isinstance(st, str):
                for buf in bufs.values():
                    ctx.weighted["races"] += self._commit(buf, ctx.w)
                continue
            src, dst = st
            s_of_d = _route(src, dst, ctx.nb)
            move = dst.pred & src.pred[s_of_d]
            if dst.valid is not None:
                move &= dst.valid
            rd = np.flatnonzero(move)
            rs = s_of_d[rd]
            ctx.weighted["moved"] += ctx.per_block(rd, dst.per_block)
            val = self._read(si, src, rs, bufs, regs, written, ctx)
            self._write(si, dst, rd, val, bufs, regs, ctx, in_shape)
        for buf in bufs.values():
            ctx.weighted["races"] += self._commit(buf, ctx.w)

    def _buffers(self, copies: Sequence[Any], nb: int) -> dict[str, _Buffer]:
        sizes: dict[str, int] = {}
        grain: dict[str, int] = {}
        for s in copies:
            for t in s:
                if t.memory != "shared":
                    continue
                top = int(t.addr.max()) + t.elem_bytes if len(t) else 0
                low = int(t.addr.min()) if len(t) else 0
                if low < 0:
                    raise ValueError(f"shared address {low} below 0")
                if top > MAX_SHARED_BYTES:  # refused before the per-byte store is allocated
                    msg = (f"shared tensor {t.tensor!r} is addressed up to byte {top} of its buffer "
                           f"{t.buffer!r}; a CTA has at most {MAX_SHARED_BYTES} bytes of shared memory")
                    tm = None if self.model is None else self.model.tensors.get(t.tensor)
                    if tm is None:
                        raise ValueError(msg)
                    assert self.model is not None
                    raise self.model.loaded.error(tuple(tm.path), msg)
                sizes[t.buffer] = max(sizes.get(t.buffer, 0), top)
                grain[t.buffer] = gcd(grain.get(t.buffer, 0), t.elem_bits)
        out = {}
        for name, top in sizes.items():
            g = grain[name] or 8
            out[name] = _Buffer(nb, -(-top * 8 // g), g)
        return out

    def _read(self, si: int, src: AccessTable, rs: np.ndarray, bufs: dict[str, _Buffer],
              regs: dict[str, tuple[np.ndarray, np.ndarray]], written: set[str], ctx: _Ctx) -> np.ndarray:
        if src.memory == "global":
            if src.tensor != self.input:
                return np.full(rs.size, FOREIGN, dtype=np.int64)
            if ctx.symbolic:
                code = ctx.codes.setdefault(si, len(ctx.codes))
                return (np.int64(code) << _ROW_BITS) | rs
            c = [x[rs] for x in src.coords]
            inb = in_bounds(c, src.shape)
            return np.where(inb, colex([np.where(inb, x, 0) for x in c], src.shape), OOB)
        pb = src.per_block
        b = rs // pb if ctx.nb > 1 else np.zeros(rs.size, dtype=np.int64)
        if src.memory == "register":
            store = regs.get(src.tensor)
            th, vv = src.coords[0][rs], src.coords[1][rs]
            if store is None:
                val = np.full(rs.size, UNINIT, dtype=np.int64)
                found = np.zeros(rs.size, dtype=bool)
            else:
                flat = (b * src.threads + th) * src.values + vv
                val, found = store[0][flat], store[1][flat]
            bad = np.flatnonzero(~found)
            ctx.weighted["uninitialised_reads"] += ctx.per_block(rs[bad], pb)
            ctx.events[("uninitialised_read", si)] += int(bad.size)
            if ctx.findings:
                self._note_uninit(si, src, rs[bad], f"register value {{}} of {src.tensor!r} that was never written",
                                  "coordinate")
            return val
        buf = bufs[src.buffer]
        slot = b * buf.nslots + src.bit_addr[rs] // buf.gbits
        th = src._template["thread"][rs - b * pb].astype(np.int32)
        k = max(1, src.elem_bits // buf.gbits)
        writer = buf.epoch_writer[slot]
        # written in this epoch by another thread: the last writer is another thread, or the
        # slot was raced (two threads wrote it, so another did even if this one wrote last)
        other = ((writer != -1) & (writer != th)) | buf.raced[slot]
        mine = writer == th
        for j in range(1, k):  # every slot of the element
            wj = buf.epoch_writer[slot + j]
            other |= ((wj != -1) & (wj != th)) | buf.raced[slot + j]
            mine &= wj == th
        val = np.where(mine, buf.epoch_val[slot], buf.val[slot])
        found = mine | buf.written[slot]
        for j in range(k):
            _note_readers(buf, slot + j, th, si)
        stale = np.flatnonzero(other)
        ctx.weighted["stale_reads"] += ctx.per_block(rs[stale], pb)
        ctx.events[("stale_read", si)] += int(stale.size)
        room = MAX_FINDINGS_PER_KIND - len(self.findings["stale_read"]) if ctx.findings else 0
        for j in stale[:max(0, room)]:
            rdr = src.row(int(rs[j]))
            sj = int(slot[j])
            wthread = next((int(buf.epoch_writer[sj + x]) for x in range(k)
                            if buf.epoch_writer[sj + x] not in (-1, int(th[j]))), -1)
            wstage = int(buf.epoch_stage[sj])
            self.findings["stale_read"].append(Finding(
                check="dataflow", kind="stale_read", stage=si, side="src",
                witness={**rdr, "reader": rdr, "writer": {"thread": wthread, "stage": wstage,
                                                          "block": rdr["block"]}},
                message=f"stage {si}: block {rdr['block']} thread {rdr['thread']} reads shared address "
                        f"{rdr['address']} written by "
                        + (f"thread {wthread}" if wthread >= 0 else "another thread as well (a race)")
                        + f" in stage {wstage} since the last barrier (missing barrier?)"))
        if src.buffer in written:
            bad = np.flatnonzero(~found & ~other)
            ctx.weighted["uninitialised_reads"] += ctx.per_block(rs[bad], pb)
            ctx.events[("uninitialised_read", si)] += int(bad.size)
            if ctx.findings:
                self._note_uninit(si, src, rs[bad], "shared address {} that was never written before the last "
                                                    "barrier", "address")
        return val

    def _note_uninit(self, si: int, src: AccessTable, rows: np.ndarray, what: str, key: str) -> None:
        room = MAX_FINDINGS_PER_KIND - len(self.findings["uninitialised_read"])
        for r in rows[:max(0, room)]:
            wt = src.row(int(r))
            self.findings["uninitialised_read"].append(Finding(
                check="dataflow", kind="uninitialised_read", stage=si, side="src", witness=wt,
                message=f"stage {si}: block {wt['block']} thread {wt['thread']} reads " + what.format(wt[key])))

    def _write(self, si: int, dst: AccessTable, rd: np.ndarray, val: np.ndarray, bufs: dict[str, _Buffer],
               regs: dict[str, tuple[np.ndarray, np.ndarray]], ctx: _Ctx, in_shape: tuple[int, ...]) -> None:
        pb = dst.per_block
        b = rd // pb if ctx.nb > 1 else np.zeros(rd.size, dtype=np.int64)
        if dst.memory == "register":
            if dst.tensor not in regs:
                n = ctx.nb * dst.threads * dst.values
                regs[dst.tensor] = (np.full(n, UNINIT, dtype=np.int64), np.zeros(n, dtype=bool))
            store = regs[dst.tensor]
            th, vv = dst.coords[0][rd], dst.coords[1][rd]
            flat = (b * dst.threads + th) * dst.values + vv
            store[0][flat] = val
            store[1][flat] = True
            return
        if dst.memory == "shared":
            buf = bufs[dst.buffer]
            slot = b * buf.nslots + dst.bit_addr[rd] // buf.gbits
            th = dst._template["thread"][rd - b * pb].astype(np.int32)
            k = max(1, dst.elem_bits // buf.gbits)
            war = np.zeros(rd.size, dtype=bool)
            for j in range(k):
                r = buf.epoch_reader[slot + j]
                war |= (r != -1) & (r != th)
            hazard = np.flatnonzero(war)
            ctx.weighted["writes_after_reads"] += ctx.per_block(rd[hazard], pb)
            ctx.events[("write_after_read", si)] += int(hazard.size)
            if ctx.findings:
                self._note_war(si, dst, rd, hazard, slot, k, th, buf)
            for j in range(k):
                s = slot + j
                prev = buf.epoch_writer[s]
                hit = (prev != -1) & (prev != th)
                buf.raced[s[hit]] = True
                buf.epoch_writer[s] = th
                buf.epoch_val[s] = val
                buf.epoch_stage[s] = si
                # two threads of this stage on one slot: the scatter kept one of them
                lost = buf.epoch_writer[s] != th
                buf.raced[s[lost]] = True
                ctx.events[("race", si)] += int(np.count_nonzero(lost))
                if ctx.findings:
                    self._note_race(si, dst, rd, s, lost, buf)
            return
        if dst.tensor != self.output or not self.transform:
            return
        ctx.weighted["output_writes"] += ctx.per_block(rd, pb)
        if ctx.symbolic:
            ctx.outputs.append((si, rd.copy(), val))
            return
        d = [x[rd] for x in dst.coords]
        exp = expected_source(d, self.transform)
        ok_exp = in_bounds(exp, in_shape) if in_shape else np.zeros(rd.size, dtype=bool)
        expv = np.where(ok_exp, colex([np.where(ok_exp, x, 0) for x in exp], in_shape), -9) \
            if in_shape else np.full(rd.size, -9)
        wrong = np.flatnonzero(val != expv)
        ctx.weighted["wrong_values"] += ctx.per_block(rd[wrong], pb)
        room = MAX_FINDINGS_PER_KIND - len(self.findings["wrong_value"])
        for j in wrong[:max(0, room)]:
            wt = dst.row(int(rd[j]))
            got = _describe(int(val[j]), in_shape)
            want = tuple(int(x[j]) for x in exp)
            self.findings["wrong_value"].append(Finding(
                check="dataflow", kind="wrong_value", stage=si, side="dst",
                witness={**wt, "landed": got, "expected": want},
                message=f"stage {si}: block {wt['block']} thread {wt['thread']} value {wt['value']} writes "
                        f"{self.output}{wt['coordinate']} with {_what(got, self.input)}, expected "
                        f"{self.input}{want} ({self.transform})"))

    def _note_race(self, si: int, dst: AccessTable, rd: np.ndarray, s: np.ndarray, lost: np.ndarray,
                   buf: _Buffer) -> None:
        room = MAX_FINDINGS_PER_KIND - len(self.findings["race"])
        for j in np.flatnonzero(lost)[:max(0, room)]:
            first = dst.row(int(rd[j]))
            other = int(buf.epoch_writer[s[j]])
            byte = (int(s[j]) % buf.nslots) * buf.gbits // 8
            self.findings["race"].append(Finding(
                check="dataflow", kind="race", stage=si, side="dst",
                witness={"block": first["block"], "byte": byte, "word": byte // 4, "first": first,
                         "second": {"thread": other, "block": first["block"]}},
                message=f"block {first['block']}: threads {first['thread']} and {other} both write shared "
                        f"byte {byte} (address {first['address']}) between two barriers"))

    def _note_war(self, si: int, dst: AccessTable, rd: np.ndarray, hazard: np.ndarray, slot: np.ndarray, k: int,
                  th: np.ndarray, buf: _Buffer) -> None:
        room = MAX_FINDINGS_PER_KIND - len(self.findings["write_after_read"])
        for j in hazard[:max(0, room)]:
            wt = dst.row(int(rd[j]))
            sj = int(slot[j])
            rs = [int(buf.epoch_reader[sj + x]) for x in range(k)]
            rs = [r for r in rs if r not in (-1, int(th[j]))]
            reader = rs[0] if rs else SEVERAL
            who = f"thread {reader}" if reader >= 0 else "other threads"
            rstage = int(buf.read_stage[sj])
            self.findings["write_after_read"].append(Finding(
                check="dataflow", kind="write_after_read", stage=si, side="dst",
                witness={**wt, "writer": wt, "reader": {"thread": reader if reader >= 0 else None,
                                                        "stage": rstage, "block": wt["block"]}},
                message=f"stage {si}: block {wt['block']} thread {wt['thread']} overwrites shared address "
                        f"{wt['address']} that {who} read in stage {rstage} since the last barrier (the write "
                        f"may land before the read: missing barrier?)"))

    @staticmethod
    def _commit(buf: _Buffer, w: np.ndarray) -> int:
        pend = buf.epoch_writer != -1
        np.copyto(buf.val, buf.epoch_val, where=pend)
        buf.written |= pend
        # counted per byte (a raced sub-byte slot counts its fraction, rounded down)
        raced = int((buf.raced.reshape(w.size, -1).sum(axis=1) * w).sum()) * buf.gbits // 8
        buf.epoch_writer.fill(-1)
        buf.epoch_reader.fill(-1)
        buf.raced.fill(False)
        return raced

    def result(self) -> CheckResult:
        missing = None
        if self.delivery is not None and self.transform and self.output:
            elements, reached, unreached = self.delivery
            missing = elements - reached
        summary = DataflowSummary(**self.cnt, missing=missing, input=self.input, output=self.output,
                                  transform=self.transform)
        res = CheckResult(check="dataflow", stage=None, side=None, status="PASS", summary=summary)
        for fs in self.findings.values():
            for f in fs:
                res.add(f, 0)
        res.total_findings += sum(self.cnt[k] for k in FINDING_KEYS)
        if missing:
            assert self.delivery is not None and self.transform is not None
            for c in self.delivery[2][:MAX_FINDINGS_PER_KIND]:
                src = expected_source(c, self.transform)
                res.add(Finding(check="dataflow", kind="missing", stage=self.delivery_stage, side="dst",
                                witness={"coordinate": c, "expected": src},
                                message=f"{self.output}{c} is never written: no active write delivers "
                                        f"{self.input}{src} ({self.transform})"), 0)
            res.total_findings += missing
        if res.total_findings:
            res.fail()
        return res


def _note_readers(buf: _Buffer, s: np.ndarray, th: np.ndarray, si: int) -> None:
    """Record that threads ``th`` read slots ``s`` in this epoch (a slot read by two different
    threads, here or before, becomes SEVERAL)."""
    prev = buf.epoch_reader[s]
    new = np.where((prev == -1) | (prev == th), th, SEVERAL).astype(np.int32)
    buf.epoch_reader[s] = new
    buf.read_stage[s] = si
    clash = buf.epoch_reader[s] != new  # two threads of this batch on one slot: the scatter kept one
    buf.epoch_reader[s[clash]] = SEVERAL


def _colex_mult(shape: Sequence[int]) -> np.ndarray:
    """Colexicographic multipliers of ``shape`` (``colex(c) == c . mult`` on in-range ``c``)."""
    return np.cumprod((1,) + tuple(int(e) for e in shape)[:-1], dtype=np.int64) if len(shape) else \
        np.zeros(0, dtype=np.int64)


def _describe(v: int, shape: tuple[int, ...]) -> Any:
    return {UNINIT: "uninitialised", OOB: "out-of-bounds read", FOREIGN: "not from the input"}.get(
        v, delinearize(v, shape) if v >= 0 else "?")


def _what(got: Any, input_name: str | None) -> str:
    """A landed value in words: the input element, or what stands in for one."""
    if isinstance(got, tuple):
        return f"{input_name}{got}"
    return {"uninitialised": "an uninitialised value", "out-of-bounds read": f"an out-of-bounds read of {input_name}",
            "not from the input": f"a value not from the input {input_name}"}.get(got, "an unknown value")


def check_dataflow(stages: Sequence[Any], transform: Transform = None, *, input_tensor: str | None = None,
                   output_tensor: str | None = None) -> CheckResult:
    """Dataflow over stage records (``"barrier"`` or ``(src, dst)`` tables of the same blocks);
    the input is the first global source and the output the last global destination unless
    named."""
    copies = [s for s in stages if not isinstance(s, str)]
    if input_tensor is None:
        input_tensor = next((s[0].tensor for s in copies if s[0].memory == "global"), None)
    if output_tensor is None:
        output_tensor = next((s[1].tensor for s in reversed(copies) if s[1].memory == "global"), None)
    acc = Dataflow(None, transform, input_tensor, output_tensor)
    if copies:
        acc.add([s if isinstance(s, str) else (s[0], s[1]) for s in stages],
                np.ones(copies[0][0].blocks.size, dtype=np.int64))
        outs = [s[1] for s in copies if s[1].memory == "global" and s[1].tensor == output_tensor]
        if transform and outs:
            acc.deliver(*delivery(outs), stage=outs[-1].stage)
    return acc.result()


def delivery(tables: Sequence[AccessTable], keep: int = MAX_FINDINGS_PER_KIND
             ) -> tuple[int, int, list[tuple[int, ...]]]:
    """(elements, reached, first unreached coordinates) of the tensor the tables write: the
    elements that are the coordinate of an active write, counted over the given tables (the
    whole grid: every block)."""
    shape = tuple(tables[0].shape)
    size = int(np.prod(shape, dtype=np.int64))
    idx = []
    for t in tables:
        act = t.pred if t.valid is None else t.pred & t.valid
        rows = np.flatnonzero(act & in_bounds(t.coords, shape))
        idx.append(colex([c[rows] for c in t.coords], shape))
    hit = np.unique(np.concatenate(idx)) if idx else np.zeros(0, dtype=np.int64)
    unreached: list[tuple[int, ...]] = []
    lin = 0
    for h in [*hit.tolist(), size]:  # the gaps between reached indices, in colex order
        while lin < h and len(unreached) < keep:
            unreached.append(delinearize(lin, shape))
            lin += 1
        if len(unreached) >= keep:
            break
        lin = h + 1
    return size, int(hit.size), unreached


@register
class DataflowCheck(Check):
    name = "dataflow"
    definition = staticmethod(dataflow_definition)

    def accumulator(self, model: KernelModel, side: SideModel | None) -> Dataflow:
        return Dataflow(model, model.expect.transform, model.input, model.output)
