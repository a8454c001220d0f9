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
* *Write race*: between two barriers (an *epoch*), no two different threads of a block
  write a common byte of shared memory (counted once per byte... per raced slot, see below).
* *Stale read*: a shared byte read in an epoch must not have been written in that epoch by
  another thread (the write is not visible without a barrier); the value read is the one
  from before the epoch.
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

from collections.abc import Sequence
from math import gcd
from typing import Any, Literal

import numpy as np

from tests._reference.util import colex, delinearize, in_bounds
from threadmap.model import KernelModel, SideModel
from threadmap.report.model import CheckResult, DataflowSummary, Finding
from threadmap.simulate.access import AccessTable
from threadmap.verify.check import Accumulator, Check

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
                        output_name: str) -> dict[str, list[Any]]:
    """Brute-force definition over Python rows (for tests on tiny kernels).

    ``stages``: ``"barrier"`` or ``(src_rows, dst_rows)`` where rows are dicts with keys
    ``block, thread, value, memory, tensor, buffer, coord, addr, elem_bytes, pred``; pairs
    share (block, thread, value).  Returns lists ``wrong``, ``races`` (distinct (block,
    buffer, byte) written by two threads in one epoch), ``stale``, ``uninit``.
    """
    regs: dict[Any, Any] = {}
    smem: dict[Any, Any] = {}                 # (block, buffer, byte) -> value
    pending: dict[Any, list[Any]] = {}        # (block, buffer, byte) -> [(thread, value)]
    out: dict[str, list[Any]] = {"wrong": [], "races": [], "stale": [], "uninit": []}
    written = {r["buffer"] for st in stages if st != "barrier" for r in st[1] if r["memory"] == "shared"}

    def commit() -> None:
        for key, ws in pending.items():
            if len({th for th, _ in ws}) > 1:
                out["races"].append(key)
            smem[key] = ws[-1][1]
        pending.clear()

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
                for i in range(d["elem_bytes"]):
                    pending.setdefault((b, d["buffer"], d["addr"] + i), []).append((th, v))
            elif d["tensor"] == output_name and transform:
                exp = expected_source(d["coord"], transform)
                if v != exp:
                    out["wrong"].append((b, th, tuple(d["coord"]), v))
    commit()
    return out


class _Buffer:
    """One shared buffer of every block of a chunk, in slots of ``g`` bytes."""

    def __init__(self, nb: int, nslots: int, g: int) -> None:
        self.g = g
        self.val = np.full((nb, nslots), UNINIT, dtype=np.int64)
        self.written = np.zeros((nb, nslots), dtype=bool)
        self.epoch_val = np.zeros((nb, nslots), dtype=np.int64)
        self.epoch_writer = np.full((nb, nslots), -1, dtype=np.int32)
        self.epoch_stage = np.zeros((nb, nslots), dtype=np.int32)
        self.raced = np.zeros((nb, nslots), dtype=bool)


class Dataflow(Accumulator):
    """Weighted dataflow enumeration over chunks of blocks (all stages of the same blocks)."""

    def __init__(self, model: KernelModel | None, transform: Transform, input_tensor: str | None,
                 output_tensor: str | None) -> None:
        self.transform = transform
        self.input = input_tensor
        self.output = output_tensor
        self.model = model
        self.cnt = {"stages": 0, "barriers": 0, "moved": 0, "output_writes": 0, "wrong_values": 0, "races": 0,
                    "stale_reads": 0, "uninitialised_reads": 0}
        self.findings: dict[str, list[Finding]] = {k: [] for k in ("wrong_value", "race", "stale_read",
                                                                   "uninitialised_read")}

    # -- one chunk -----------------------------------------------------------------------------
    def add(self, stages: Any, weights: np.ndarray) -> None:
        copies = [s for s in stages if not isinstance(s, str)]
        if not copies:
            return
        nb = copies[0][0].blocks.size
        w = np.asarray(weights, dtype=np.int64)
        in_shape = next((s[0].shape for s in copies if s[0].tensor == self.input and s[0].memory == "global"), ())
        bufs = self._buffers(copies, nb)
        written = {s[1].buffer for s in copies if s[1].memory == "shared"}
        regs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        count = {"stages": 0, "barriers": 0}
        weighted = dict.fromkeys(("moved", "output_writes", "wrong_values", "races", "stale_reads",
                                  "uninitialised_reads"), 0)

        def per_block(rows: np.ndarray, t: AccessTable) -> int:
            if rows.size == 0:
                return 0
            b = rows // t.per_block
            return int((np.bincount(b, minlength=nb) * w).sum())

        for si, st in enumerate(stages):
            if isinstance(st, str):
                count["barriers"] += 1
                for name, buf in bufs.items():
                    weighted["races"] += self._commit(buf, w, name)
                continue
            src, dst = st
            count["stages"] += 1
            # rows of the src table in dst order: both are permutations of (block, thread, value)
            order = np.empty(len(src), dtype=np.int64)
            order[src.tv] = np.arange(len(src))
            s_of_d = order[dst.tv]
            move = dst.pred & src.pred[s_of_d]
            if dst.valid is not None:
                move &= dst.valid
            rd = np.flatnonzero(move)
            rs = s_of_d[rd]
            weighted["moved"] += per_block(rd, dst)
            val = self._read(si, src, rs, bufs, regs, written, in_shape, weighted, per_block)
            self._write(si, dst, rd, val, bufs, regs, weighted, per_block, in_shape)
        for name, buf in bufs.items():
            weighted["races"] += self._commit(buf, w, name)
        self.cnt["stages"] = count["stages"]
        self.cnt["barriers"] = count["barriers"]
        for k, v in weighted.items():
            self.cnt[k] += v

    @staticmethod
    def _buffers(copies: Sequence[Any], nb: int) -> dict[str, _Buffer]:
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
                sizes[t.buffer] = max(sizes.get(t.buffer, 0), top)
                grain[t.buffer] = gcd(grain.get(t.buffer, 0), t.elem_bytes)
        out = {}
        for name, top in sizes.items():
            g = grain[name] or 1
            out[name] = _Buffer(nb, -(-top // g), g)
        return out

    def _read(self, si: int, src: AccessTable, rs: np.ndarray, bufs: dict[str, _Buffer],
              regs: dict[str, tuple[np.ndarray, np.ndarray]], written: set[str], in_shape: tuple[int, ...],
              weighted: dict[str, int], per_block: Any) -> np.ndarray:
        if src.memory == "global":
            if src.tensor != self.input:
                return np.full(rs.size, FOREIGN, dtype=np.int64)
            c = [x[rs] for x in src.coords]
            inb = in_bounds(c, src.shape)
            return np.where(inb, colex([np.where(inb, x, 0) for x in c], src.shape), OOB)
        b = rs // src.per_block
        if src.memory == "register":
            store = regs.get(src.tensor)
            th, vv = src.coords[0][rs], src.coords[1][rs]
            if store is None:
                val = np.full(rs.size, UNINIT, dtype=np.int64)
                found = np.zeros(rs.size, dtype=bool)
            else:
                val, found = store[0][b, th, vv], store[1][b, th, vv]
            bad = np.flatnonzero(~found)
            weighted["uninitialised_reads"] += per_block(rs[bad], src)
            self._note_uninit(si, src, rs[bad], f"register value {{}} of {src.tensor!r} that was never written",
                              "coordinate")
            return val
        buf = bufs[src.buffer]
        slot = src.addr[rs] // buf.g
        th = src.thread[rs].astype(np.int32)
        k = max(1, src.elem_bytes // buf.g)
        writer = buf.epoch_writer[b, slot]
        other = (writer != -1) & (writer != th)
        mine = writer == th
        for j in range(1, k):  # every slot of the element
            wj = buf.epoch_writer[b, slot + j]
            other |= (wj != -1) & (wj != th)
            mine &= wj == th
        val = np.where(mine, buf.epoch_val[b, slot], buf.val[b, slot])
        found = mine | buf.written[b, slot]
        stale = np.flatnonzero(other)
        weighted["stale_reads"] += per_block(rs[stale], src)
        room = MAX_FINDINGS_PER_KIND - len(self.findings["stale_read"])
        for j in stale[:max(0, room)]:
            rdr = src.row(int(rs[j]))
            bj, sj = int(b[j]), int(slot[j])
            wthread = next(int(buf.epoch_writer[bj, sj + x]) for x in range(k)
                           if buf.epoch_writer[bj, sj + x] not in (-1, int(th[j])))
            wstage = int(buf.epoch_stage[bj, sj])
            self.findings["stale_read"].append(Finding(
                check="dataflow", kind="stale_read", stage=si, side="src",
                witness={**rdr, "reader": rdr, "writer": {"thread": wthread, "stage": wstage,
                                                          "block": rdr["block"]}},
                message=f"stage {si}: block {rdr['block']} thread {rdr['thread']} reads shared address "
                        f"{rdr['address']} written by thread {wthread} in stage {wstage} since the last "
                        "barrier (missing barrier?)"))
        if src.buffer in written:
            bad = np.flatnonzero(~found & ~other)
            weighted["uninitialised_reads"] += per_block(rs[bad], src)
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
               regs: dict[str, tuple[np.ndarray, np.ndarray]], weighted: dict[str, int], per_block: Any,
               in_shape: tuple[int, ...]) -> None:
        b = rd // dst.per_block
        if dst.memory == "register":
            if dst.tensor not in regs:
                nb = dst.blocks.size
                regs[dst.tensor] = (np.full((nb, dst.threads, dst.values), UNINIT, dtype=np.int64),
                                    np.zeros((nb, dst.threads, dst.values), dtype=bool))
            store = regs[dst.tensor]
            th, vv = dst.coords[0][rd], dst.coords[1][rd]
            store[0][b, th, vv] = val
            store[1][b, th, vv] = True
            return
        if dst.memory == "shared":
            buf = bufs[dst.buffer]
            slot = dst.addr[rd] // buf.g
            th = dst.thread[rd].astype(np.int32)
            for j in range(max(1, dst.elem_bytes // buf.g)):
                s = slot + j
                prev = buf.epoch_writer[b, s]
                hit = (prev != -1) & (prev != th)
                buf.raced[b[hit], s[hit]] = True
                buf.epoch_writer[b, s] = th
                buf.epoch_val[b, s] = val
                buf.epoch_stage[b, s] = si
                # two threads of this stage on one slot: the scatter kept one of them
                lost = buf.epoch_writer[b, s] != th
                buf.raced[b[lost], s[lost]] = True
                self._note_race(si, dst, rd, b, s, th, lost, buf)
            return
        if dst.tensor != self.output or not self.transform:
            return
        weighted["output_writes"] += per_block(rd, dst)
        d = [x[rd] for x in dst.coords]
        exp = expected_source(d, self.transform)
        ok_exp = in_bounds(exp, in_shape) if in_shape else np.zeros(rd.size, dtype=bool)
        expv = np.where(ok_exp, colex([np.where(ok_exp, x, 0) for x in exp], in_shape), -9) \
            if in_shape else np.full(rd.size, -9)
        wrong = np.flatnonzero(val != expv)
        weighted["wrong_values"] += per_block(rd[wrong], dst)
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

    def _note_race(self, si: int, dst: AccessTable, rd: np.ndarray, b: np.ndarray, s: np.ndarray,
                   th: np.ndarray, lost: np.ndarray, buf: _Buffer) -> None:
        room = MAX_FINDINGS_PER_KIND - len(self.findings["race"])
        for j in np.flatnonzero(lost)[:max(0, room)]:
            first = dst.row(int(rd[j]))
            other = int(buf.epoch_writer[b[j], s[j]])
            byte = int(s[j]) * buf.g
            self.findings["race"].append(Finding(
                check="dataflow", kind="race", stage=si, side="dst",
                witness={"block": first["block"], "byte": byte, "word": byte // 4, "first": first,
                         "second": {"thread": other, "block": first["block"]}},
                message=f"block {first['block']}: threads {first['thread']} and {other} both write shared "
                        f"byte {byte} (address {first['address']}) between two barriers"))

    @staticmethod
    def _commit(buf: _Buffer, w: np.ndarray, name: str) -> int:
        pend = buf.epoch_writer != -1
        buf.val = np.where(pend, buf.epoch_val, buf.val)
        buf.written |= pend
        raced = int((buf.raced.sum(axis=1) * w).sum()) * buf.g  # counted per byte
        buf.epoch_writer.fill(-1)
        buf.raced.fill(False)
        return raced

    def result(self) -> CheckResult:
        summary = DataflowSummary(**self.cnt, input=self.input, output=self.output, transform=self.transform)
        res = CheckResult(check="dataflow", stage=None, side=None, status="PASS", summary=summary)
        for fs in self.findings.values():
            for f in fs:
                res.add(f, 0)
        res.total_findings += sum(self.cnt[k] for k in ("wrong_values", "races", "stale_reads",
                                                        "uninitialised_reads"))
        if res.total_findings:
            res.fail()
        return res


from threadmap.verify.dataflow import _what  # noqa: E402  (the message wording only)


def _describe(v: int, shape: tuple[int, ...]) -> Any:
    return {UNINIT: "uninitialised", OOB: "out-of-bounds read", FOREIGN: "not from the input"}.get(
        v, delinearize(v, shape) if v >= 0 else "?")


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
    return acc.result()



class DataflowCheck(Check):
    name = "dataflow"
    scope = "kernel"
    rule = "The stages implement the declared transform without races or stale reads."
    definition = staticmethod(dataflow_definition)

    def accumulator(self, model: KernelModel, side: SideModel | None) -> Dataflow:
        return Dataflow(model, model.expect.transform, model.input, model.output)
