"""Predicates: no active access leaves the tensor, and every in-bounds element is accessed.

Definition (one global side of one copy stage, over the whole grid, tensor extents
``shape``): (1) *safety*: no active access lies outside ``[0, shape)``; (2) *completeness*:
every in-bounds element is accessed by some active access (``lost`` otherwise).  A vector of
``k`` elements along mode ``i`` *straddles* the edge when some of its elements are in bounds and
some are not; if every vector along mode ``i`` starts at a coordinate ``= r (mod k)``, no vector
straddles iff ``extent_i % k == r``: the weakest precondition on the sizes (``N % 4 == 0``),
named with the tensor's size names.

The counts are whole-grid ones, shared with grid coverage (:mod:`threadmap.verify.grid_coverage`
counts them by enumeration or by the tiling argument); this module holds the definition, the
straddle count (:class:`Straddles`) and the result.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from threadmap.report.model import CheckResult, Finding, PredicatesSummary
from threadmap.simulate.access import AccessTable
from threadmap.verify.blocks import view_of
from threadmap.verify.counts import GridCounts
from threadmap.verify.util import in_bounds

#: witnesses kept per kind of finding
KIND_CAP = 8


def weakest_precondition(mode: int, k: int, residue: int, size_names: dict[int, str] | None = None) -> str:
    """``"N % 4 == 0"``: the size condition under which vectors of ``k`` along ``mode`` starting
    at ``residue (mod k)`` never straddle the edge."""
    name = (size_names or {}).get(mode, f"extent[{mode}]")
    return f"{name} % {k} == {residue % k}"


def predicates_definition(accesses: Iterable[tuple[tuple[int, ...], bool]], shape: Sequence[int]) -> dict[str, Any]:
    """Brute-force definition: ``accesses`` are ``(coordinate, predicate)`` pairs.

    Returns ``{"ok", "out_of_bounds": [coords], "lost": [in-bounds coords never active]}``.
    """
    shape = tuple(shape)
    active: set[tuple[int, ...]] = set()
    oob = []
    for c, p in accesses:
        inb = all(0 <= x < e for x, e in zip(c, shape))
        if p and not inb:
            oob.append(c)
        if p and inb:
            active.add(tuple(c))
    lost = [c for c in itertools.product(*(range(e) for e in shape)) if c not in active]
    return {"ok": not oob and not lost, "out_of_bounds": oob, "lost": lost}



# ----------------------------------------------------------------------------- straddles


class Straddles:
    """Weighted count of vector accesses that straddle the tensor's edge, and the start
    residues of all vectors along each mode (for the weakest precondition)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.residues: dict[tuple[int, int], set[int]] = {}
        self.n = {"straddling": 0, "straddling_masked": 0, "straddling_oob": 0}
        self.witness: list[dict[str, Any]] = []

    def add(self, t: AccessTable, weights: np.ndarray) -> None:
        k = int(t.vec)
        if k <= 1 or len(t) == 0:
            return
        v = view_of(t)
        # blocks of the reference pattern entirely inside the tensor straddle nothing; their
        # vectors start at the reference's residues shifted by the block's start
        fast = v.inside(t.shape) if v.vtpl is not None else np.zeros(v.nb, dtype=bool)
        if fast.any():
            R = len(v.coords)
            c3 = [c.rel.reshape(-1, k) for c in v.coords]
            d = [c[:, 1] - c[:, 0] for c in c3]
            assert v.vtpl is not None
            real = v.vtpl.reshape(-1, k)[:, 0]
            absd = sum(np.abs(x) for x in d)
            for i in range(R):
                along = real & (d[i] == 1) & (absd == 1)
                if not along.any():
                    continue
                base = np.unique(c3[i][along, 0] % k)
                for sh in np.unique(v.coords[i].start[fast] % k):
                    self.residues.setdefault((i, k), set()).update(int(x) for x in (base + sh) % k)
        if not fast.all():
            self._add(t if not fast.any() else t.select_blocks(np.flatnonzero(~fast)),
                      np.asarray(weights, dtype=np.int64)[~fast])

    def _add(self, t: AccessTable, weights: np.ndarray) -> None:
        k = int(t.vec)
        c3 = [c.reshape(-1, k) for c in t.coords]
        d = [c[:, 1] - c[:, 0] for c in c3]
        inb = in_bounds(t.coords, t.shape).reshape(-1, k)
        pred = t.pred.reshape(-1, k)
        real = np.ones(pred.shape[0], dtype=bool) if t.valid is None else t.valid.reshape(-1, k)[:, 0]
        per_block = pred.shape[0] // t.blocks.size
        w = np.repeat(np.asarray(weights, dtype=np.int64), per_block)
        absd = sum(np.abs(x) for x in d)
        for i in range(len(c3)):
            along = real & (d[i] == 1) & (absd == 1)
            if not along.any():
                continue
            self.residues.setdefault((i, k), set()).update(int(x) for x in np.unique(c3[i][along, 0] % k))
            st = along & inb.any(axis=1) & ~inb.all(axis=1)
            if not st.any():
                continue
            lost = st & ~pred.any(axis=1)
            oob = st & (pred & ~inb).any(axis=1)
            self.n["straddling"] += int((st * w).sum())
            self.n["straddling_masked"] += int((lost * w).sum())
            self.n["straddling_oob"] += int((oob * w).sum())
            for a in np.flatnonzero(lost | oob)[:max(0, 4 - len(self.witness))]:
                rows = [t.row(int(a) * k + j) for j in range(k)]
                self.witness.append({"mode": i, "k": k, "access": rows[0], "elements": rows,
                                     "masked_whole": bool(lost[a])})

    def preconditions(self, size_names: dict[int, str]) -> list[str]:
        out = []
        modes = {w["mode"] for w in self.witness}
        for (i, k), rs in sorted(self.residues.items()):
            if i not in modes:
                continue
            if len(rs) == 1:
                out.append(weakest_precondition(i, k, next(iter(rs)), size_names))
            else:
                name = size_names.get(i, f"extent[{i}]")
                out.append(f"no exact precondition: vectors along {name} start at residues {sorted(rs)} mod {k}")
        return out




def predicates_result(side: Any, g: GridCounts, straddles: Straddles, oob_witness: list[dict[str, Any]],
                      missing_witness: list[tuple[int, ...]], masked_of: Any,
                      size_names: dict[int, str] | None = None) -> CheckResult:
    """The ``predicates`` result of one side (a SideModel or an AccessTable: its stage, side and
    shape) from its whole-grid counts (``GridCounts``: lost elements are the missing ones)."""
    st, sd = side.stage, side.which
    missing = g.elements - g.covered
    pre = straddles.preconditions(size_names or {}) if (missing or g.out_of_bounds) else []
    pr = CheckResult(check="predicates", stage=st, side=sd, status="PASS",
                     summary=PredicatesSummary(shape=side.shape, out_of_bounds=g.out_of_bounds, lost=missing,
                                               precondition=pre, **straddles.n))
    for w in straddles.witness[:2]:
        a = w["access"]
        what = "masked whole" if w["masked_whole"] else "enabled with out-of-bounds elements"
        pr.add(Finding(check="predicates", kind="straddle", stage=st, side=sd,
                       witness={**a, "elements": w["elements"], "precondition": pre},
                       message=f"vector of {w['k']} along mode {w['mode']} at {a['coordinate']} (block "
                               f"{a['block']} thread {a['thread']} step {a['step']}) straddles the edge "
                               f"{side.shape[w['mode']]} and is {what}"
                               + (f"; weakest precondition: {' and '.join(pre)}" if pre else "")), 0)
    for w in oob_witness[:KIND_CAP]:
        pr.add(Finding(check="predicates", kind="out_of_bounds", stage=st, side=sd, witness=w,
                       message=f"block {w['block']} thread {w['thread']} value {w['value']} accesses "
                               f"{w['coordinate']} outside the tensor {side.shape} with a true predicate"), 0)
    pr.total_findings += g.out_of_bounds
    for coord in missing_witness[:KIND_CAP]:
        mw = masked_of(coord)
        how = (f"; its access (block {mw['block']} thread {mw['thread']} step {mw['step']}) is masked"
               if mw else "")
        pr.add(Finding(check="predicates", kind="lost", stage=st, side=sd,
                       message=f"in-bounds element {coord} is not accessed by any true predicate{how}",
                       witness={"coordinate": coord, "masked_access": mw}), 0)
    pr.total_findings += missing
    if pr.total_findings:
        pr.fail()
    return pr


