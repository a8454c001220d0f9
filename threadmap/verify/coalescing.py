"""Coalescing of global-memory accesses, per warp instruction.

Definitions (:mod:`threadmap.hardware`).  A warp instruction is the ``32 * vec`` rows of one
(block, warp, step); its active rows are those with a true predicate (an instruction with
none is no request).  Per instruction: ``sectors`` (distinct 32-byte sectors touched),
``lines`` (distinct 128-byte lines), ``bytes`` (distinct bytes requested) and
``ideal = ceil(bytes / 32)``.  Totals over the grid: ``requests`` (instructions with an
active row), ``sectors``, ``ideal_sectors``, ``sectors_per_request`` and
``ratio = sectors / ideal_sectors``.  Alignment: every vector access with an active element
must be contiguous and aligned to its width.  Compare with Nsight Compute's
``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum`` and
``l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum``.

The enumeration sorts each instruction's active addresses (one small sort per instruction)
and counts distinct sectors, lines and bytes from the sorted order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from threadmap import hardware as hw
from threadmap.model import KernelModel, SideModel
from threadmap.report.model import CheckResult, CoalescingSummary, Finding
from threadmap.simulate.access import AccessTable
from threadmap.verify.blocks import Memo, per_block, period, view_of
from threadmap.verify.check import Accumulator, Check, check_tables, register
from threadmap.verify.util import vector_fault

_BIG = np.int64(1) << 62


def instruction_stats(t: AccessTable) -> dict[str, np.ndarray]:
    """Per warp instruction of ``t``: ``active`` (has an active row), ``sectors``, ``lines``,
    ``bytes``, ``ideal`` (arrays of length ``instructions``)."""
    e = int(t.elem_bytes)
    a = np.where(t.pred, t.addr, _BIG).reshape(-1, t.instruction_rows)
    a.sort(axis=1)
    valid = a < _BIG
    nxt = np.empty_like(a)
    nxt[:, :-1] = a[:, 1:]
    nxt[:, -1] = _BIG
    nbytes = np.where(valid, np.minimum(nxt - a, e), 0).sum(axis=1)
    out = {"active": valid[:, 0], "bytes": nbytes}
    for key, shift in (("sectors", 5), ("lines", 7)):
        lo = a >> shift
        hi = (a + (e - 1)) >> shift
        prev = np.empty_like(hi)
        prev[:, 0] = lo[:, 0] - 1
        prev[:, 1:] = hi[:, :-1]
        # sorted by address: the units new at row j are those above everything before it
        out[key] = np.where(valid, hi - np.maximum(lo - 1, prev), 0).sum(axis=1)
    out["ideal"] = -(-nbytes // hw.SECTOR_BYTES)
    return out


def access_legality(t: AccessTable) -> tuple[np.ndarray, np.ndarray]:
    """Per vector access (``vec`` consecutive rows): (contiguous?, aligned?)."""
    e, v = int(t.elem_bits), int(t.vec)
    a = t.bit_addr.reshape(-1, v)  # in bits: sub-byte elements are contiguous at bit distances
    contiguous = np.all(a == a[:, :1] + np.arange(v, dtype=np.int64) * e, axis=1) if v > 1 else \
        np.ones(a.shape[0], dtype=bool)
    aligned = a[:, 0] % (v * e) == 0
    return contiguous, aligned


def block_stats(t: AccessTable) -> dict[str, np.ndarray]:
    """Per block of ``t``: requests, sectors, ideal sectors, lines, bytes, misaligned accesses,
    and the largest excess ``sectors - ideal`` of an active instruction (-1: none) with the
    first instruction (in the block) that has it."""
    nb = int(t.blocks.size)
    s = instruction_stats(t)
    act = s["active"].reshape(nb, -1)
    out = {"requests": act.sum(axis=1, dtype=np.int64)}
    for k, sk in (("sectors", "sectors"), ("ideal_sectors", "ideal"), ("lines", "lines"), ("bytes", "bytes")):
        out[k] = s[sk].reshape(nb, -1).sum(axis=1, dtype=np.int64)
    excess = np.where(act, s["sectors"].reshape(nb, -1) - s["ideal"].reshape(nb, -1), -1)
    out["best"] = excess.max(axis=1) if excess.shape[1] else np.full(nb, -1, dtype=np.int64)
    out["best_i"] = excess.argmax(axis=1) if excess.shape[1] else np.zeros(nb, dtype=np.int64)
    out["misaligned"] = bad_accesses(t).reshape(nb, -1).sum(axis=1, dtype=np.int64)
    return out


def bad_accesses(t: AccessTable) -> np.ndarray:
    """Per vector access: some element is active and the access is not contiguous and aligned."""
    cont, al = access_legality(t)
    return t.pred.reshape(-1, t.vec).any(axis=1) & ~(cont & al)


class Coalescing(Accumulator):
    def __init__(self, side: SideModel, max_ratio: float | None) -> None:
        self.side = side
        self.max_ratio = max_ratio
        self.tot = {"requests": 0, "sectors": 0, "ideal_sectors": 0, "lines": 0, "bytes": 0, "misaligned": 0}
        self.worst: dict[str, Any] | None = None
        self.worst_excess = -1
        self.misaligned: list[Finding] = []
        self.memo = Memo()

    def add(self, t: AccessTable, weights: np.ndarray) -> None:
        if len(t) == 0:
            return
        v = view_of(t)
        # blocks performing every real row at the reference pattern's addresses shifted by a
        # multiple of the period have the reference's statistics (sectors and lines move whole)
        L = period(hw.LINE_BYTES, t.access_bytes)
        eligible = v.full & v.addr.ok if v.vtpl is not None else np.zeros(v.nb, dtype=bool)
        self.memo.reset_unless((v.addr.rel, v.vtpl, t.elem_bits, t.vec))
        st = per_block(t, eligible, v.addr.start % L, self.memo, block_stats)
        w = np.asarray(weights, dtype=np.int64)
        for k in self.tot:
            self.tot[k] += int((st[k] * w).sum())
        b = int(np.argmax(st["best"]))
        if int(st["best"][b]) >= 0 and int(st["best"][b]) > self.worst_excess:
            self.worst_excess = int(st["best"][b])
            one = t.select_blocks(np.array([b]))
            i = int(st["best_i"][b])
            self.worst = self._describe(one, i, instruction_stats(one))
        room = 8 - len(self.misaligned)
        if room > 0 and st["misaligned"].any():
            apb = t.per_block // t.vec
            for bi in np.flatnonzero(st["misaligned"]):
                b = int(bi)
                if room <= 0:
                    break
                one = t.select_blocks(np.array([b]))
                cont, al = access_legality(one)
                bad = bad_accesses(one)
                for j in np.flatnonzero(bad)[:room]:
                    self.misaligned.append(self._misaligned(t, int(b) * apb + int(j), bool(cont[j]), bool(al[j])))
                    room -= 1

    @staticmethod
    def _misaligned(t: AccessTable, j: int, cont: bool, al: bool) -> Finding:
        w, why = vector_fault(t, j, cont, al)
        w["access_bytes"] = t.access_bytes
        return Finding(check="coalescing", kind="misaligned", stage=t.stage, side=t.side, witness=w, message=why)

    @staticmethod
    def _describe(t: AccessTable, i: int, s: dict[str, np.ndarray]) -> dict[str, Any]:
        rows = np.arange(i * t.instruction_rows, (i + 1) * t.instruction_rows)
        rows = rows[t.pred[rows]]
        first = t.row(int(rows[0]))
        lanes = sorted({(int(t.lane[r]), int(t.addr[r])) for r in rows if t.element[r] == 0})
        return {"block": first["block"], "warp": first["thread"] // hw.WARP_SIZE, "step": first["step"],
                "sectors": int(s["sectors"][i]), "ideal": int(s["ideal"][i]), "lines": int(s["lines"][i]),
                "bytes": int(s["bytes"][i]), "active_lanes": len({int(t.lane[r]) for r in rows}),
                "lane_addresses": lanes[:32], "first": first}

    def result(self) -> CheckResult:
        tot = self.tot
        req = max(tot["requests"], 1)
        ratio = tot["sectors"] / tot["ideal_sectors"] if tot["ideal_sectors"] else 1.0
        summary = CoalescingSummary(**tot, sectors_per_request=tot["sectors"] / req,
                                    ideal_sectors_per_request=tot["ideal_sectors"] / req, ratio=ratio,
                                    access_bits=self.side.access_bits, worst=self.worst)
        res = CheckResult(check="coalescing", stage=self.side.stage, side=self.side.which, status="PASS",
                          summary=summary)
        for f in self.misaligned:
            res.add(f, 0)
        res.total_findings += tot["misaligned"]
        over = self.max_ratio is not None and ratio > self.max_ratio + 1e-12
        w = self.worst
        if w and w["sectors"] > w["ideal"]:
            res.add(Finding(check="coalescing", kind="uncoalesced", stage=self.side.stage, side=self.side.which,
                            witness=w, severity="error" if over else "warning",
                            message=f"block {w['block']} warp {w['warp']} step {w['step']}: {w['sectors']} "
                                    f"sectors ({w['lines']} lines) for {w['bytes']} bytes, ideal {w['ideal']}"
                                    + (f"; the spec allows {self.max_ratio:g}x the ideal over the grid, "
                                       f"measured {ratio:.3g}x" if over else "")))
        if tot["misaligned"] or over:
            res.fail()
        return res


def check_coalescing(tables: AccessTable | Sequence[AccessTable], *, max_ratio: float | None = None) -> CheckResult:
    """Coalescing of one global side's table (or chunks of it)."""
    return check_tables("coalescing", tables, lambda t: Coalescing(t, max_ratio))  # type: ignore[arg-type]


@register
class CoalescingCheck(Check):
    name = "coalescing"
    definition = staticmethod(hw.sectors)
    memories = ("global",)

    def accumulator(self, model: KernelModel, side: SideModel | None) -> Coalescing:
        assert side is not None
        exp = model.expect
        return Coalescing(side, exp.sector_ratio_load if side.which == "src" else exp.sector_ratio_store)
