"""Predicates: for extents the tile does not divide, the predicates guard exactly the tensor.

Definition.  For one side of one stage over the whole grid, with the tensor's extents
``shape``: (1) *safety*: no row with a true predicate has a coordinate outside
``[0, shape)``; (2) *completeness*: every in-bounds element is the coordinate of some row
with a true predicate.  A vector access of ``k`` elements along mode ``i`` *straddles* the
edge when some of its lanes are in bounds and some are not; a per-access predicate then
either masks in-bounds elements (lost, completeness fails) or enables out-of-bounds ones
(safety fails).  If every vector along mode ``i`` starts at a coordinate ``= r (mod k)``,
no vector straddles iff ``extent_i % k == r`` -- the weakest precondition on the sizes that
fixes both failures (``N % 4 == 0`` for ``r = 0``), named with ``size_names``.

:func:`predicates_definition` is the executable definition (pure Python);
:class:`PredicateCheck` the streaming enumeration (it shares a
:class:`~threadmap.verify.coverage.GridCoverage` with the coverage check when given one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from threadmap.simulate.access import AccessTable
from threadmap.verify._util import coords2d, delinearize, first_false, in_bounds, row_witness
from threadmap.verify.coverage import GridCoverage
from threadmap.verify.result import CheckResult, Finding

CHECK = "predicates"


def predicates_definition(accesses: Iterable[tuple[tuple[int, ...], bool]],
                          shape: Sequence[int]) -> dict[str, Any]:
    """Brute-force definition: ``accesses`` are ``(coordinate, predicate)`` pairs.

    Returns ``{"ok", "out_of_bounds": [coords], "lost": [in-bounds coords never active]}``.
    """
    import itertools

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


def weakest_precondition(mode: int, k: int, residue: int, size_names: Mapping[int, str] | None = None
                         ) -> str:
    """``"N % 4 == 0"``: the size condition under which vectors of ``k`` along ``mode``
    starting at ``residue (mod k)`` never straddle the edge."""
    name = (size_names or {}).get(mode, f"extent[{mode}]")
    return f"{name} % {k} == {residue % k}"


class PredicateCheck:
    """Streaming predicates check of one side over the grid (feed chunks with :meth:`add`).

    ``size_names`` maps tensor modes to size variables (``{0: "M", 1: "N"}``) for the
    precondition text; ``grid`` shares the coverage state (else one is created).
    """

    def __init__(self, shape: Sequence[int], *, size_names: Mapping[int, str] | None = None,
                 grid: GridCoverage | None = None) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.size_names = dict(size_names or {})
        self.own_grid = grid is None
        self.grid = grid if grid is not None else GridCoverage(self.shape)
        # (mode, k) -> set of start residues of all vectors along that mode
        self.residues: dict[tuple[int, int], set[int]] = {}
        self.straddling = 0
        self.straddle_lost = 0
        self.straddle_oob = 0
        self.straddle_witness: list[dict[str, Any]] = []
        self.stage: int | None = None
        self.side: str | None = None

    def add(self, t: AccessTable) -> None:
        """Account one chunk (feeds the shared grid only if this check owns it)."""
        self.stage, self.side = t.stage, t.side
        if self.own_grid:
            self.grid.add(t)
        k = int(t.vec)
        n = len(t)
        if k <= 1 or n == 0 or n % k:
            return
        lanes = np.asarray(t.lane).reshape(-1, k)
        if not (lanes == np.arange(k)).all():
            return
        c = coords2d(t)
        R = c.shape[1]
        c3 = c.reshape(-1, k, R)
        d = c3[:, 1, :] - c3[:, 0, :]
        inb = in_bounds(c, self.shape).reshape(-1, k)
        pred = np.asarray(t.pred, dtype=bool).reshape(-1, k)
        for i in range(R):
            along = (d[:, i] == 1) & (np.abs(d).sum(axis=1) == 1)
            if not along.any():
                continue
            starts = c3[along, 0, i]
            self.residues.setdefault((i, k), set()).update(int(x) for x in np.unique(starts % k))
            st = along & inb.any(axis=1) & ~inb.all(axis=1)
            nst = int(st.sum())
            if not nst:
                continue
            self.straddling += nst
            lost = st & ~pred.any(axis=1)
            oob = st & (pred & ~inb).any(axis=1)
            self.straddle_lost += int(lost.sum())
            self.straddle_oob += int(oob.sum())
            for a in np.flatnonzero(lost | oob)[: max(0, 4 - len(self.straddle_witness))]:
                rows = [row_witness(t, int(a) * k + j) for j in range(k)]
                self.straddle_witness.append({"mode": i, "k": k, "access": rows[0],
                                              "lanes": rows, "masked_whole": bool(lost[a])})

    def preconditions(self) -> list[str]:
        """The weakest preconditions (one per vectorised mode with straddling vectors)."""
        out = []
        modes = {w["mode"] for w in self.straddle_witness} if self.straddle_witness else set()
        for (i, k), rs in sorted(self.residues.items()):
            if i not in modes:
                continue
            if len(rs) == 1:
                out.append(weakest_precondition(i, k, next(iter(rs)), self.size_names))
            else:
                name = self.size_names.get(i, f"extent[{i}]")
                out.append(f"no exact precondition: vectors along {name} start at residues "
                           f"{sorted(rs)} mod {k}")
        return out

    def result(self) -> CheckResult:
        """Summary: ``shape``, ``out_of_bounds`` (active rows outside), ``lost`` (in-bounds
        elements with no active access), ``straddling`` (vector accesses across the edge),
        ``straddling_masked`` / ``straddling_oob``, ``precondition`` (list of strings)."""
        g = self.grid
        res = CheckResult(CHECK, self.stage, self.side, "PASS")
        cov = g.covered_mask()
        lost = g.size - int(np.count_nonzero(cov))
        pre = self.preconditions() if (lost or g.n_oob_active) else []
        for w in self.straddle_witness[:2]:
            a = w["access"]
            what = "masked whole" if w["masked_whole"] else "enabled with out-of-bounds lanes"
            res.add(Finding(CHECK, "straddle",
                            f"vector of {w['k']} along mode {w['mode']} at {a['coordinate']} (block "
                            f"{a['block']} thread {a['thread']} step {a['step']}) straddles the edge "
                            f"{self.shape[w['mode']]} and is {what}"
                            + (f"; weakest precondition: {' and '.join(pre)}" if pre else ""),
                            {**a, "lanes": w["lanes"], "precondition": pre}, self.stage, self.side))
        for w in g.oob_witness[:8]:
            res.add(Finding(CHECK, "out_of_bounds",
                            f"block {w['block']} thread {w['thread']} value {w['value']} accesses "
                            f"{w['coordinate']} outside the tensor {self.shape} with a true predicate",
                            w, self.stage, self.side))
        res.total_findings += max(0, g.n_oob_active - len(g.oob_witness[:8]))
        if lost:
            for k in first_false(cov, 8):
                coord = delinearize(k, self.shape)
                mw = g.masked_witness(k)
                how = (f"; its access (block {mw['block']} thread {mw['thread']} step {mw['step']}) "
                       "is masked" if mw and "block" in mw else "")
                res.add(Finding(CHECK, "lost",
                                f"in-bounds element {coord} is not accessed by any true predicate{how}",
                                {"coordinate": coord, "masked_access": mw}, self.stage, self.side))
            res.total_findings += max(0, lost - 8)
        res.summary = {"shape": self.shape, "out_of_bounds": g.n_oob_active, "lost": lost,
                       "straddling": self.straddling, "straddling_masked": self.straddle_lost,
                       "straddling_oob": self.straddle_oob, "precondition": pre}
        if g.n_oob_active or lost:
            res.status = "FAIL"
        return res


def check_predicates(tables: AccessTable | Iterable[AccessTable], *, shape: Sequence[int] | None = None,
                     size_names: Mapping[int, str] | None = None,
                     grid: GridCoverage | None = None) -> CheckResult:
    """Predicates check over a table or an iterable of chunk tables of one side."""
    chunks = [tables] if isinstance(tables, AccessTable) else tables
    acc: PredicateCheck | None = None
    for t in chunks:
        if acc is None:
            acc = PredicateCheck(shape or t.shape, size_names=size_names, grid=grid)
        if grid is not None:
            grid.add(t)
        acc.add(t)
    if acc is None:
        return CheckResult(CHECK, None, None, "SKIP", {"reason": "no tables"})
    return acc.result()
