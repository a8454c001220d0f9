"""Dataflow: the stages implement the declared transform, without shared-memory races.

Definitions.  Values are simulated symbolically: the element read from the *input*
global tensor at coordinate ``c`` carries the value ``c`` (as its linear index).  A copy
stage moves, for every (block, thread, value) of the fragment, the value read on the src
side to the dst side when both predicates are true (src and dst rows are paired by
(block, thread, value)).  Registers hold values per (block, fragment, thread, value)
(``coord = (thread, value)``); shared buffers per (block, buffer, byte address).

* *Transform*: every active write to the *output* global tensor at ``d`` carries the
  value ``T^-1(d)``: ``copy``: ``c == d``; ``transpose``: ``c == reversed(d)``.
* *Write race*: between two barriers (an *epoch*), no two different threads of a block
  write the same 4-byte shared word.
* *Stale read*: a shared word read in an epoch must not have been written in that epoch
  by another thread (the write is not visible without a barrier); the value read is then
  the one from before the epoch.
* *Uninitialised read*: a shared word (or register) read was never written.

Blocks are independent (shared memory is per block); everything is keyed by block, so
chunks of blocks are processed at once.  Reads of the same thread's own writes in the
same epoch see them (program order).  :func:`dataflow_definition` is the executable
definition (pure Python); :func:`check_dataflow` the vectorised enumeration.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from threadmap.simulate.access import AccessTable
from threadmap.verify._util import coords2d, delinearize, in_bounds, linearize, row_witness
from threadmap.verify.result import CheckResult, Finding

CHECK = "dataflow"
Transform = Literal["copy", "transpose"] | None
StageRecord = Any  # "barrier" | (src, dst) | (src, dst, predicate_kind)

UNINIT, OOB, FOREIGN = -1, -2, -3
_WORD = 4


def expected_source(dst_coord: np.ndarray, transform: str) -> np.ndarray:
    """``T^-1`` applied to destination coordinates (n, R)."""
    if transform == "copy":
        return dst_coord
    if transform == "transpose":
        return dst_coord[:, ::-1]
    raise ValueError(f"unknown transform {transform!r}")


def _describe(v: int, shape: tuple[int, ...]) -> Any:
    return {UNINIT: "uninitialised", OOB: "out-of-bounds read", FOREIGN: "not from the input"}.get(
        v, delinearize(v, shape) if v >= 0 else "?")


def dataflow_definition(stages: Sequence[Any], transform: str | None, input_name: str,
                        output_name: str) -> dict[str, list[Any]]:
    """Brute-force definition over Python rows (for tests on tiny kernels).

    ``stages``: ``"barrier"`` or ``(src_rows, dst_rows)`` where rows are dicts with keys
    ``block, thread, value, memory, tensor, coord, addr, pred``; pairs share (block, thread,
    value).  Returns lists ``wrong``, ``races``, ``stale``, ``uninit``.
    """
    regs: dict[Any, Any] = {}
    smem: dict[Any, Any] = {}
    pending: dict[Any, list[Any]] = {}        # (block, tensor, word) -> [(thread, addr, value)]
    out: dict[str, list[Any]] = {"wrong": [], "races": [], "stale": [], "uninit": []}

    def commit() -> None:
        for (b, buf, w), ws in pending.items():
            if len({th for th, _, _ in ws}) > 1:
                out["races"].append((b, buf, w))
            for _th, a, v in ws:
                smem[(b, buf, a)] = v
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
                v = tuple(s["coord"]) if s["tensor"] == input_name else FOREIGN
            elif s["memory"] == "register":
                v = regs.get((b, s["tensor"], tuple(s["coord"])), UNINIT)
            else:
                w = s["addr"] // _WORD
                ws = pending.get((b, s["buffer"], w), [])
                own = [x for x in ws if x[0] == th and x[1] == s["addr"]]
                if any(x[0] != th for x in ws):
                    out["stale"].append((b, th, s["addr"]))
                if own:
                    v = own[-1][2]
                else:
                    v = smem.get((b, s["buffer"], s["addr"]), UNINIT)
                    if v == UNINIT:
                        out["uninit"].append((b, th, s["addr"]))
            if d["memory"] == "register":
                regs[(b, d["tensor"], tuple(d["coord"]))] = v
            elif d["memory"] == "shared":
                pending.setdefault((b, d["buffer"], d["addr"] // _WORD), []).append((th, d["addr"], v))
            elif d["tensor"] == output_name and transform:
                exp = tuple(d["coord"]) if transform == "copy" else tuple(reversed(d["coord"]))
                if v != exp:
                    out["wrong"].append((b, th, tuple(d["coord"]), v))
    commit()
    return out


class _Store:
    """Sorted int64 keys -> int64 values, last write wins."""

    def __init__(self) -> None:
        self.keys = np.zeros(0, dtype=np.int64)
        self.vals = np.zeros(0, dtype=np.int64)

    def write(self, keys: np.ndarray, vals: np.ndarray) -> None:
        if keys.size == 0:
            return
        k = np.concatenate([keys[::-1], self.keys])      # newest first; unique keeps the first
        v = np.concatenate([vals[::-1], self.vals])
        self.keys, idx = np.unique(k, return_index=True)
        self.vals = v[idx]

    def read(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.keys.size == 0:
            return np.full(keys.size, UNINIT, dtype=np.int64), np.zeros(keys.size, dtype=bool)
        pos = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        found = self.keys[pos] == keys
        return np.where(found, self.vals[pos], UNINIT), found


class _Names:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, name: str) -> int:
        return self.ids.setdefault(name, len(self.ids))


def _pair(src: AccessTable, dst: AccessTable) -> tuple[np.ndarray, np.ndarray] | None:
    """Row orders of src and dst that pair rows by (block, thread, value), or None."""
    if len(src) != len(dst):
        return None
    os_ = np.lexsort((src.value, src.thread, src.block))
    od = np.lexsort((dst.value, dst.thread, dst.block))
    for f in ("block", "thread", "value"):
        if not np.array_equal(np.asarray(getattr(src, f))[os_], np.asarray(getattr(dst, f))[od]):
            return None
    return os_, od


def check_dataflow(stages: Sequence[StageRecord], transform: Transform = None, *,
                   input_tensor: str | None = None, output_tensor: str | None = None,
                   word_bytes: int = _WORD) -> CheckResult:
    """Simulate values through the stages (see the module docstring).

    ``stages``: ``"barrier"`` or ``(src, dst[, predicate_kind])`` tables of the same blocks.
    Summary: ``stages``, ``barriers``, ``moved`` (elements moved), ``output_writes``,
    ``wrong_values``, ``races`` (shared words written by several threads in one epoch),
    ``stale_reads``, ``uninitialised_reads``, ``unpaired_stages``, ``input``, ``output``,
    ``transform``.  FAIL on any of them.
    """
    res = CheckResult(CHECK, None, None, "PASS")
    copies = [s for s in stages if not (isinstance(s, str) and s == "barrier")]
    if not copies:
        res.status = "SKIP"
        res.summary = {"reason": "no copy stages"}
        return res
    if input_tensor is None:
        input_tensor = next((s[0].tensor for s in copies if s[0].memory == "global"), None)
    if output_tensor is None:
        output_tensor = next((s[1].tensor for s in reversed(copies) if s[1].memory == "global"), None)
    in_shape = next((s[0].shape for s in copies if s[0].tensor == input_tensor), ())
    names = _Names()
    regs, smem = _Store(), _Store()
    pend: dict[str, list[np.ndarray]] = {k: [] for k in ("ek", "wk", "th", "val", "stage", "row")}
    pend_tables: dict[int, AccessTable] = {}
    cnt = {"stages": 0, "barriers": 0, "moved": 0, "output_writes": 0, "wrong_values": 0, "races": 0,
           "stale_reads": 0, "uninitialised_reads": 0, "unpaired_stages": 0}

    def smem_keys(t: AccessTable, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        b = np.asarray(t.block, dtype=np.int64)[rows]
        a = np.asarray(t.addr, dtype=np.int64)[rows]
        if a.size and (a.min() < 0 or a.max() >= 1 << 32):
            raise ValueError("shared address outside [0, 2^32)")
        hi = (b * 256 + names("smem:" + (t.buffer or t.tensor))) << 32
        return hi + a, hi + a // word_bytes

    def reg_keys(t: AccessTable, rows: np.ndarray) -> np.ndarray:
        c = coords2d(t)[rows]
        b = np.asarray(t.block, dtype=np.int64)[rows]
        if c.size and (c[:, 0].max() >= 1 << 16 or c[:, 1].max() >= 1 << 22 or b.max() >= 1 << 21):
            raise ValueError("register key out of range (thread < 2^16, value < 2^22, block < 2^21)")
        return ((b * 16 + names("reg:" + t.tensor) % 16) << 38) + (c[:, 0] << 22) + c[:, 1]

    def uninitialised(si: int, src: AccessTable, rs: np.ndarray, bad: np.ndarray, what: str,
                      key: str) -> None:
        """Count reads of never-written values; witness the first three."""
        cnt["uninitialised_reads"] += bad.size
        for j in bad[:3]:
            w = row_witness(src, int(rs[j]))
            res.add(Finding(CHECK, "uninitialised_read",
                            f"stage {si}: block {w['block']} thread {w['thread']} reads "
                            + what.format(w[key]), w, si, "src"), 0)
        res.total_findings += bad.size

    def commit() -> None:
        if not pend["ek"]:
            return
        ek, wk, th, val, stg, row = (np.concatenate(pend[k])
                                     for k in ("ek", "wk", "th", "val", "stage", "row"))
        # races: distinct (word, thread) pairs; words with more than one thread
        order = np.lexsort((th, wk))
        w2, t2 = wk[order], th[order]
        newpair = np.r_[True, (w2[1:] != w2[:-1]) | (t2[1:] != t2[:-1])]
        pw, prow = w2[newpair], order[newpair]
        multi = np.flatnonzero(np.r_[pw[1:] == pw[:-1], False])   # pair j and j+1 share a word
        if multi.size:
            words = np.unique(pw[multi])
            cnt["races"] += words.size
            seen: set[int] = set()
            for j in multi:
                if int(pw[j]) in seen or len(res.findings) >= 20:
                    continue
                seen.add(int(pw[j]))
                a, b = int(prow[j]), int(prow[j + 1])
                wa = row_witness(pend_tables[int(stg[a])], int(row[a]), stage=int(stg[a]))
                wb = row_witness(pend_tables[int(stg[b])], int(row[b]), stage=int(stg[b]))
                res.add(Finding(CHECK, "race",
                                f"block {wa['block']}: threads {wa['thread']} and {wb['thread']} both write "
                                f"shared word {wa['address'] // word_bytes} (addresses {wa['address']}, "
                                f"{wb['address']}) between two barriers",
                                {"block": wa["block"], "word": wa["address"] // word_bytes,
                                 "first": wa, "second": wb}, None, "dst"), 0)
            res.total_findings += words.size
        smem.write(ek, val)
        for k in pend:
            pend[k].clear()

    # shared buffers that no stage writes hold data loaded outside the spec: reading them is
    # not an uninitialised read
    written = {st[1].buffer or st[1].tensor for st in stages
               if not isinstance(st, str) and st[1].memory == "shared"}

    for si, st in enumerate(stages):
        if isinstance(st, str):
            if st != "barrier":
                raise ValueError(f"unknown stage record {st!r}")
            cnt["barriers"] += 1
            commit()
            continue
        src, dst = st[0], st[1]
        cnt["stages"] += 1
        pr = _pair(src, dst)
        if pr is None:
            cnt["unpaired_stages"] += 1
            res.add(Finding(CHECK, "fragment_mismatch",
                            f"stage {si}: src and dst rows do not pair by (block, thread, value)",
                            {"stage": si}, si, None))
            continue
        os_, od = pr
        move = np.asarray(src.pred, dtype=bool)[os_] & np.asarray(dst.pred, dtype=bool)[od]
        rs, rd = os_[move], od[move]
        cnt["moved"] += int(rs.size)
        # ---- read
        if src.memory == "global":
            if src.tensor == input_tensor:
                c = coords2d(src)[rs]
                inb = in_bounds(c, src.shape)
                val = np.where(inb, linearize(np.where(inb[:, None], c, 0), src.shape), OOB)
            else:
                val = np.full(rs.size, FOREIGN, dtype=np.int64)
        elif src.memory == "register":
            val, found = regs.read(reg_keys(src, rs))
            uninitialised(si, src, rs, np.flatnonzero(~found),
                          f"register value {{}} of {src.tensor!r} that was never written", "coordinate")
        else:
            ek, wk = smem_keys(src, rs)
            th = np.asarray(src.thread, dtype=np.int64)[rs]
            val, found = smem.read(ek)
            stale_mask = np.zeros(rs.size, dtype=bool)
            if pend["ek"]:
                pek, pwk, pth, pval = (np.concatenate(pend[k]) for k in ("ek", "wk", "th", "val"))
                # own writes of this epoch (latest wins): key = element key, thread
                own = _Store()
                own.write(pek, pval)  # element key -> latest value of this epoch
                oval, ofound = own.read(ek)
                # words written this epoch: min/max writer thread per word
                ordw = np.argsort(pwk, kind="stable")
                sw, sth = pwk[ordw], pth[ordw]
                starts = np.flatnonzero(np.r_[True, sw[1:] != sw[:-1]])
                uw = sw[starts]
                tmin, tmax = np.minimum.reduceat(sth, starts), np.maximum.reduceat(sth, starts)
                pos = np.minimum(np.searchsorted(uw, wk), uw.size - 1)
                inw = uw[pos] == wk
                other = inw & ((tmin[pos] != th) | (tmax[pos] != th))
                mine = inw & ~other & ofound
                val = np.where(mine, oval, val)
                found = found | mine
                stale_mask = other
                stale = np.flatnonzero(other)
                cnt["stale_reads"] += stale.size
                for j in stale[:3]:
                    w = row_witness(src, int(rs[j]))
                    k = int(np.flatnonzero((pwk == wk[j]) & (pth != th[j]))[0])
                    stg_all, row_all = np.concatenate(pend["stage"]), np.concatenate(pend["row"])
                    ww = row_witness(pend_tables[int(stg_all[k])], int(row_all[k]), stage=int(stg_all[k]))
                    res.add(Finding(CHECK, "stale_read",
                                    f"stage {si}: block {w['block']} thread {w['thread']} reads shared "
                                    f"word {w['address'] // word_bytes} (address {w['address']}) written by "
                                    f"thread {ww['thread']} in stage {ww['stage']} since the last barrier "
                                    "(missing barrier?)",
                                    {**w, "reader": w, "writer": ww}, si, "src"), 0)
                res.total_findings += stale.size
            bad = np.flatnonzero(~found & ~stale_mask)
            if (src.buffer or src.tensor) not in written:
                bad = bad[:0]
            uninitialised(si, src, rs, bad,
                          "shared address {} that was never written before the last barrier", "address")
        # ---- write
        if dst.memory == "register":
            regs.write(reg_keys(dst, rd), val)
        elif dst.memory == "shared":
            ek, wk = smem_keys(dst, rd)
            pend["ek"].append(ek)
            pend["wk"].append(wk)
            pend["th"].append(np.asarray(dst.thread, dtype=np.int64)[rd])
            pend["val"].append(val)
            pend["stage"].append(np.full(rd.size, si, dtype=np.int64))
            pend["row"].append(rd.astype(np.int64))
            pend_tables[si] = dst
        elif dst.tensor == output_tensor and transform:
            cnt["output_writes"] += int(rd.size)
            d = coords2d(dst)[rd]
            exp = expected_source(d, transform)
            ok_exp = in_bounds(exp, in_shape) if in_shape else np.zeros(rd.size, dtype=bool)
            expv = np.where(ok_exp, linearize(np.where(ok_exp[:, None], exp, 0), in_shape) if in_shape
                            else -9, -9)
            wrong = np.flatnonzero(val != expv)
            cnt["wrong_values"] += wrong.size
            for j in wrong[:5]:
                w = row_witness(dst, int(rd[j]))
                got = _describe(int(val[j]), in_shape)
                want = tuple(int(x) for x in exp[j])
                res.add(Finding(CHECK, "wrong_value",
                                f"stage {si}: block {w['block']} thread {w['thread']} value {w['value']} "
                                f"writes {output_tensor}{w['coordinate']} with {input_tensor}{got}, expected "
                                f"{input_tensor}{want} ({transform})",
                                {**w, "landed": got, "expected": want}, si, "dst"), 0)
            res.total_findings += wrong.size
    commit()
    res.summary = {**cnt, "input": input_tensor, "output": output_tensor, "transform": transform}
    if any(cnt[k] for k in ("wrong_values", "races", "stale_reads", "uninitialised_reads",
                            "unpaired_stages")):
        res.status = "FAIL"
    return res
