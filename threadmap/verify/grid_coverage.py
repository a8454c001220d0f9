"""Whole-grid coverage, by enumeration or by the tiling argument.

Definition (one global side of one copy stage, over the whole grid, tensor extents
``shape``): every in-bounds element is the coordinate of exactly one active access (with
replication: of the same number of accesses); ``duplicates`` counts active in-bounds accesses
beyond one per element; on a destination, two written elements must not share an address
(``aliased``, decided by :mod:`threadmap.verify.aliasing`).

Deciding it (the predicates check shares these counts):

* :class:`GridEnumeration` counts every element (one byte per element, streamed over chunks of
  blocks): the exhaustive mode, and the fallback when the argument does not apply.
* :func:`counts_by_tiling` decides it from a few representative blocks
  (:class:`~threadmap.verify.classes.BlockClasses`).  Its premises: every side's tile
  coordinate ``at_k`` is an affine function of one block coordinate, and no access leaves its
  tile.  Then tiles at distinct positions are disjoint translates, a block's counts depend
  only on where its tile sits relative to the tensor's edges, and the blocks that differ only
  in block coordinates the side does not use revisit the same tiles (``m`` times each).  So
  ``covered = sum(weight * covered_per_block) / m`` and every other count is a weighted sum.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from threadmap.model import SideModel
from threadmap.report.model import (
    MAX_FINDINGS,
    CheckResult,
    Finding,
    GridCoverageSummary,
)
from threadmap.simulate.access import AccessTable
from threadmap.verify.blocks import view_of
from threadmap.verify.counts import GridCounts
from threadmap.verify.coverage import BlockTally
from threadmap.verify.predicates import KIND_CAP, Straddles, predicates_result
from threadmap.verify.util import colex, delinearize, in_bounds

#: accesses whose element indices a sparse enumeration (a tensor too large for the byte per
#: element) may hold: 8 bytes each, a few copies while merging
MAX_SPARSE_ROWS = 1 << 25
#: bytes of whole-grid coverage state (one byte per element) the enumeration may allocate
MAX_BITMAP_BYTES = 1 << 30


def grid_coverage_result(side: Any, g: GridCounts, dup_findings: list[Finding],
                         missing_witness: list[tuple[int, ...]], masked_of: Any,
                         aliasing: tuple[int, list[Finding]], replication: bool) -> CheckResult:
    """The ``grid_coverage`` result of one side (a SideModel or an AccessTable: its stage, side
    and shape) from its counts."""
    st, sd = side.stage, side.which
    missing = g.elements - g.covered
    dups = g.dup_replicated if replication else g.counted - g.covered
    aliased, alias_findings = aliasing
    cov = CheckResult(check="grid_coverage", stage=st, side=sd, status="PASS",
                      summary=GridCoverageSummary(elements=g.elements, accesses=g.accesses, covered=g.covered,
                                                  missing=missing, duplicates=dups,
                                                  out_of_bounds=g.out_of_bounds, replication=g.replication,
                                                  aliased=aliased))
    # pair witnesses only stand for duplicates the mode counts: replicated reads of one tile by
    # its group of blocks are the expected coverage, not findings
    for f in dup_findings if dups else ():
        cov.add(f, 0)
    cov.total_findings += dups
    for coord in missing_witness[:KIND_CAP]:
        cov.add(Finding(check="grid_coverage", kind="missing", stage=st, side=sd,
                        message=f"element {coord} is not accessed by any active access in the grid",
                        witness={"coordinate": coord, "masked_access": masked_of(coord)}), 0)
    cov.total_findings += missing
    for f in alias_findings:
        cov.add(f, 0)
    cov.total_findings += aliased
    if cov.total_findings:
        cov.fail()
    return cov


def grid_results(side: Any, g: GridCounts, straddles: Straddles, dup_findings: list[Finding],
                 oob_witness: list[dict[str, Any]], missing_witness: list[tuple[int, ...]],
                 masked_of: Any, aliasing: tuple[int, list[Finding]], replication: bool,
                 size_names: dict[int, str] | None = None) -> list[CheckResult]:
    """``[grid_coverage, predicates]`` of one side from its whole-grid counts."""
    return [grid_coverage_result(side, g, dup_findings, missing_witness, masked_of, aliasing, replication),
            predicates_result(side, g, straddles, oob_witness, missing_witness, masked_of, size_names)]


# ----------------------------------------------------------------------------- enumeration


class GridEnumeration:
    """Whole-grid coverage and predicates of one side by counting every element.

    State: one byte per tensor element (a saturating count), plus capped witness lists.
    ``add`` takes chunks of blocks (weights must be 1).  Blocks of a verified reference pattern
    (see :mod:`threadmap.verify.blocks`) entirely inside the tensor with every real row active
    mark their elements with one scatter; the others take the row-by-row path.  Duplicates are
    known from the counts at the end (``counted - covered``); their pair witnesses come from
    :meth:`witness_duplicates`, a second pass over the blocks that runs only when there are
    duplicates (a second access of an element in a later chunk is witnessed by its block, the
    first found later by :meth:`resolve_pairs`).
    """

    def __init__(self, side: Any, replication: bool, sparse: bool = False, partial: bool = False) -> None:
        self.side = side
        self.shape = tuple(side.shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.sparse = sparse = sparse or partial
        self.partial = partial
        if not sparse and self.size * (4 if replication else 1) > MAX_BITMAP_BYTES:
            raise MemoryError(f"whole-grid coverage of {self.size} elements needs {self.size} bytes")
        self.replication = replication
        self.count: np.ndarray | SparseCount = SparseCount() if sparse else \
            np.zeros(self.size, dtype=np.uint8 if not replication else np.int32)
        self.straddles = Straddles(self.shape)
        self.n = {"accesses": 0, "counted": 0, "out_of_bounds": 0}
        self.oob_witness: list[dict[str, Any]] = []
        self.dup_findings: list[Finding] = []
        #: second accessors of elements first accessed in an earlier chunk (first found later)
        self.pending_pairs: list[dict[str, Any]] = []
        self.masked = MaskedIndex(self.shape)
        # the count array's element order: the tensor's memory order when it has strides (an
        # instruction's elements are then near each other in it), colexicographic otherwise
        R = len(self.shape)
        strides = getattr(getattr(side, "tensor", None), "strides", None)
        self._order = list(range(R)) if strides is None or len(strides) != R else \
            sorted(range(R), key=lambda k: (abs(strides[k]), k))
        self._mult = np.zeros(R, dtype=np.int64)
        m = 1
        for k in self._order:
            self._mult[k] = m
            m *= int(self.shape[k])
        self._final: GridCounts | None = None
        self._missing: dict[int, list[tuple[int, ...]]] = {}
        self._reused = False
        self._scratch = np.zeros(0, dtype=np.int64)  # element indices of one chunk, reused

    def add(self, t: AccessTable, weights: np.ndarray) -> None:
        if self._reused:
            raise RuntimeError("GridEnumeration.add after witness_duplicates")
        self._final = None
        self._missing = {}
        if len(t) == 0:
            return
        self.straddles.add(t, weights)
        self.n["accesses"] += int(np.count_nonzero(t.pred))
        v = view_of(t)
        R = len(v.coords)
        fast = v.full & v.inside(self.shape) if v.vtpl is not None and 0 < R == len(self.shape) \
            else np.zeros(v.nb, dtype=bool)
        if fast.any():
            # every real row of these blocks is active and inside: its element is the block's
            # start element plus the reference's offset (colex is linear in the coordinate)
            rel = self._index([c.rel for c in v.coords])[v.vtpl]
            base = v.coords_start[fast] @ self._mult
            n = base.size * rel.size
            if self._scratch.size < n:
                self._scratch = np.empty(n, dtype=np.int64)
            idx = self._scratch[:n]
            np.add(base[:, None], rel[None, :], out=idx.reshape(base.size, rel.size))
            self.n["counted"] += n
            self._mark(idx)
        if not fast.all():
            self._add(t if not fast.any() else t.select_blocks(np.flatnonzero(~fast)))

    def _add(self, t: AccessTable) -> None:
        act = t.pred
        inb = in_bounds(t.coords, self.shape)
        cnt = act & inb
        oob = act & ~inb
        n_oob = int(oob.sum())
        if n_oob:
            self.n["out_of_bounds"] += n_oob
            for i in np.flatnonzero(oob)[:max(0, MAX_FINDINGS - len(self.oob_witness))]:
                self.oob_witness.append(t.row(int(i)))
        rows = np.flatnonzero(cnt)
        idx = self._index([c[rows] for c in t.coords])
        self.n["counted"] += idx.size
        self._mark(idx)
        self.masked.add(t)

    def _index(self, coords: Sequence[np.ndarray]) -> np.ndarray:
        """Position in the count array of in-bounds coordinates."""
        idx = np.zeros(coords[0].shape if len(coords) else 0, dtype=np.int64)
        for c, m in zip(coords, self._mult):
            idx += np.asarray(c, dtype=np.int64) * m
        return idx

    def _mark(self, idx: np.ndarray) -> None:
        if isinstance(self.count, SparseCount):
            self.count.add(idx)
        elif self.replication:
            np.add.at(self.count, idx, 1)
        else:
            self.count[idx] = 1

    def witness_duplicates(self, chunks: Iterable[AccessTable]) -> None:
        """Pair witnesses of duplicates (non-replicated sides with ``counted > covered``): the
        blocks again in the same order, each element's accessors compared within a chunk and
        with the earlier chunks.  Call after :meth:`counts` and :meth:`missing` (it reuses the
        count array)."""
        if self.replication or self.dup_findings or self.pending_pairs:
            return
        g = self.counts()
        if g.counted <= g.covered:
            return
        for k in (KIND_CAP, MAX_FINDINGS):
            self.missing(k)
        self._reused = True
        self.count = SparseCount() if self.sparse else np.zeros_like(self.count)
        for t in chunks:
            if len(self.dup_findings) + len(self.pending_pairs) >= KIND_CAP:
                break
            rows = np.flatnonzero(t.pred & in_bounds(t.coords, self.shape))
            crd = [c[rows] for c in t.coords]
            idx = self._index(crd)
            prev = self.count.seen(idx) if isinstance(self.count, SparseCount) else self.count[idx] > 0
            for j in np.flatnonzero(prev)[:KIND_CAP]:
                self.pending_pairs.append(t.row(int(rows[j])))
            self._within_chunk(t, rows, colex(crd, self.shape))
            self._mark(idx)

    def _within_chunk(self, t: AccessTable, rows: np.ndarray, idx: np.ndarray) -> None:
        order = np.argsort(idx, kind="stable")
        s = idx[order]
        eq = np.flatnonzero(s[1:] == s[:-1])
        for j in eq[:max(0, KIND_CAP - len(self.dup_findings))]:
            a, b = t.row(int(rows[order[j]])), t.row(int(rows[order[j + 1]]))
            self.dup_findings.append(dup_finding(self.side, b, a))

    def counts(self) -> GridCounts:
        if self._final is not None:
            return self._final
        if isinstance(self.count, SparseCount):
            pos = self.count.counts()
            covered = int(pos.size)
        else:
            covered = int(np.count_nonzero(self.count))
            if self.replication:
                pos = self.count[self.count > 0].astype(np.int64)
        r, dup_rep = 1, 0
        if self.replication:
            freq = np.bincount(pos)
            vals = np.flatnonzero(freq)
            freq = freq[vals]
            r = int(vals[np.argmax(freq)]) if vals.size else 0
            dup_rep = int(freq.sum() - freq.max()) if vals.size else 0
        # a partial run judges only what the simulated blocks reached: the elements are the
        # covered ones and none is missing
        self._final = GridCounts(covered if self.partial else self.size, self.n["accesses"], self.n["counted"],
                                 covered, self.n["out_of_bounds"], r, dup_rep)
        return self._final

    def missing(self, k: int) -> list[tuple[int, ...]]:
        """The first ``k`` elements no active access reaches, in colexicographic order."""
        if k in self._missing:
            return self._missing[k]
        if self._reused:
            raise RuntimeError("GridEnumeration.missing after witness_duplicates")
        out: list[tuple[int, ...]] = []
        R = len(self.shape)
        if R == 0 or k <= 0 or self.counts().covered == self.counts().elements:
            self._missing[k] = out
            return out
        if isinstance(self.count, SparseCount):
            self._missing[k] = out = self._missing_sparse(k)
            return out
        # the count array as an array indexed [c_{R-1}, ..., c_0]: its C order is colex order
        arr = self.count.reshape([int(self.shape[m]) for m in reversed(self._order)])
        axis_of = {m: R - 1 - i for i, m in enumerate(self._order)}
        colex_view = arr.transpose([axis_of[m] for m in reversed(range(R))])
        inner = int(np.prod(self.shape[:-1], dtype=np.int64))
        step = max(1, (1 << 22) // max(1, inner))
        for j0 in range(0, int(self.shape[-1]), step):
            part = np.flatnonzero(colex_view[j0:j0 + step] == 0)[:k - len(out)]
            out += [delinearize(int(j0 * inner + i), self.shape) for i in part]
            if len(out) >= k:
                break
        self._missing[k] = out
        return out

    def _missing_sparse(self, k: int) -> list[tuple[int, ...]]:
        """The first ``k`` unreached elements in colex order, by testing candidates in order
        (at most ``covered + k`` of them)."""
        assert isinstance(self.count, SparseCount)
        out: list[tuple[int, ...]] = []
        step = 1 << 16
        for start in range(0, self.size, step):
            lin = np.arange(start, min(self.size, start + step), dtype=np.int64)
            crd, rest = [], lin
            for e in self.shape:
                crd.append(rest % int(e))
                rest = rest // int(e)
            miss = lin[~self.count.seen(self._index(crd))]
            out += [delinearize(int(i), self.shape) for i in miss[:k - len(out)]]
            if len(out) >= k:
                break
        return out

    def resolve_pairs(self, first_of: Any) -> None:
        """Turn pending duplicates into pair witnesses; ``first_of(coord, before_block)`` finds
        the earlier accessor (a row dict) of an element."""
        for second in self.pending_pairs[:max(0, KIND_CAP - len(self.dup_findings))]:
            self.dup_findings.append(dup_finding(self.side, second, first_of(second["coordinate"],
                                                                              second["block"])))
        self.pending_pairs.clear()


class SparseCount:
    """Access counts of the elements a partial run reached, by element index (sorted keys and
    their counts; chunks are merged lazily).  Memory follows the accesses, not the tensor."""

    def __init__(self) -> None:
        self.keys = np.zeros(0, dtype=np.int64)
        self.vals = np.zeros(0, dtype=np.int64)
        self.parts: list[np.ndarray] = []

    def add(self, idx: np.ndarray) -> None:
        self.parts.append(np.array(idx, dtype=np.int64))

    def _merge(self) -> None:
        if not self.parts:
            return
        new = np.concatenate(self.parts)
        self.parts = []
        k = np.concatenate([self.keys, new])
        w = np.concatenate([self.vals, np.ones(new.size, dtype=np.int64)])
        self.keys, inv = np.unique(k, return_inverse=True)
        self.vals = np.bincount(inv, weights=w, minlength=self.keys.size).astype(np.int64)

    def counts(self) -> np.ndarray:
        """The count of every reached element."""
        self._merge()
        return self.vals

    def counts_keys(self) -> np.ndarray:
        """The index of every reached element, sorted."""
        self._merge()
        return self.keys

    def seen(self, idx: np.ndarray) -> np.ndarray:
        """Per index: reached before."""
        self._merge()
        pos = np.minimum(np.searchsorted(self.keys, idx), max(0, self.keys.size - 1))
        return (self.keys[pos] == idx) if self.keys.size else np.zeros(idx.shape, dtype=bool)


class MaskedIndex:
    """A few masked (predicate false) in-bounds accesses, by element: they explain lost elements."""

    def __init__(self, shape: tuple[int, ...], keep: int = 256) -> None:
        self.shape = shape
        self.keep = keep
        self.rows: dict[tuple[int, ...], dict[str, Any]] = {}

    def add(self, t: AccessTable) -> None:
        if len(self.rows) >= self.keep or len(t) == 0:
            return
        v = view_of(t)
        if bool(v.full.all()):  # every real row is active: none is masked
            return
        real = ~t.pred if t.valid is None else (~t.pred & t.valid)
        masked = np.flatnonzero(real & in_bounds(t.coords, self.shape))
        for i in masked[:self.keep - len(self.rows)]:
            r = t.row(int(i))
            self.rows.setdefault(r["coordinate"], r)

    def __call__(self, coord: tuple[int, ...]) -> dict[str, Any] | None:
        return self.rows.get(tuple(coord))


def dup_finding(side: Any, second: dict[str, Any], first: dict[str, Any] | None) -> Finding:
    if first is not None and "block" in first:
        msg = (f"element {second['coordinate']} accessed by block {first['block']} thread {first['thread']} "
               f"value {first['value']} and block {second['block']} thread {second['thread']} value "
               f"{second['value']}")
    else:
        msg = (f"element {second['coordinate']} accessed again by block {second['block']} thread "
               f"{second['thread']} value {second['value']}")
    return Finding(check="grid_coverage", kind="duplicate", stage=side.stage, side=side.which, message=msg,
                   witness={"coordinate": second["coordinate"], "first": first, "second": second})



# ----------------------------------------------------------------------------- the argument


def counts_by_tiling(side: SideModel, tallies: Sequence[BlockTally], m: int, replication: bool,
                     active: int) -> GridCounts:
    """Whole-grid counts of one side from its representatives' tile tallies (see module doc)."""
    elements = int(np.prod(side.shape, dtype=np.int64))
    covered_w = sum(t.weight * t.covered for t in tallies)
    counted = sum(t.weight * t.accesses for t in tallies)
    oob = sum(t.weight * t.out_of_bounds for t in tallies)
    covered = covered_w // m
    r, dup_rep = 1, 0
    if replication:
        hist: Counter[int] = Counter()
        for t in tallies:
            for c, cells in t.hist.items():
                hist[c * m] += t.weight * cells // m
        if hist:
            r = hist.most_common(1)[0][0]
            dup_rep = sum(v for c, v in hist.items() if c != r)
        else:
            r = 0
    return GridCounts(elements, active, counted, covered, oob, r, dup_rep)


def check_grid(tables: AccessTable | Sequence[AccessTable], *, replication: bool = False,
               size_names: dict[int, str] | None = None) -> list[CheckResult]:
    """Whole-grid coverage and predicates of one global side's table (or chunks of it) by
    enumeration: ``[grid_coverage, predicates]``."""
    ts = [tables] if isinstance(tables, AccessTable) else list(tables)
    g = GridEnumeration(ts[0], replication)
    for t in ts:
        g.add(t, np.ones(t.blocks.size, dtype=np.int64))
    counts = g.counts()
    missing = g.missing(KIND_CAP)
    g.witness_duplicates(ts)
    return grid_results(ts[0], counts, g.straddles, g.dup_findings + [
        dup_finding(ts[0], s, None) for s in g.pending_pairs[:KIND_CAP]], g.oob_witness, missing,
        g.masked, (0, []), replication, size_names)



def union_reached(grids: Sequence[GridEnumeration], keep: int) -> tuple[int, int, list[tuple[int, ...]]]:
    """(elements, reached, first unreached coordinates) of one tensor over several sides'
    enumerations (several stages write it): an element is reached when any side reaches it.
    Call before :meth:`GridEnumeration.witness_duplicates` (it reuses the count arrays)."""
    g0 = grids[0]
    if g0.partial:
        n = len(np.unique(np.concatenate([g.count.counts_keys() if isinstance(g.count, SparseCount)
                                          else np.flatnonzero(g.count) for g in grids])))
        return n, n, []
    if any(isinstance(g.count, SparseCount) for g in grids):
        keys = np.unique(np.concatenate([g.count.counts_keys() if isinstance(g.count, SparseCount)
                                         else np.flatnonzero(g.count) for g in grids]))
        hit = np.zeros(0, dtype=bool)
        reached = int(keys.size)
        seen = keys
    else:
        hit = np.zeros(g0.size, dtype=bool)
        for g in grids:
            assert isinstance(g.count, np.ndarray)
            hit |= g.count > 0
        reached = int(np.count_nonzero(hit))
        seen = np.flatnonzero(hit)
    unreached: list[tuple[int, ...]] = []
    if reached < g0.size:
        # the count arrays share one element order (one tensor): walk colex order, test each
        lin = 0
        step = 1 << 16
        while lin < g0.size and len(unreached) < keep:
            part = np.arange(lin, min(g0.size, lin + step), dtype=np.int64)
            crd, rest = [], part
            for e in g0.shape:
                crd.append(rest % int(e))
                rest = rest // int(e)
            pos = g0._index(crd)
            if hit.size:
                miss = part[~hit[pos]]
            else:
                j = np.minimum(np.searchsorted(seen, pos), max(0, seen.size - 1))
                miss = part[~((seen[j] == pos) if seen.size else np.zeros(pos.shape, dtype=bool))]
            unreached += [delinearize(int(i), g0.shape) for i in miss[:keep - len(unreached)]]
            lin += step
    return g0.size, reached, unreached
