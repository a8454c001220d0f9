"""Whole-grid coverage and predicates, by enumeration or by the tiling argument.

Definitions (one global side of one copy stage, over the whole grid, tensor extents
``shape``):

* *grid coverage*: every in-bounds element is the coordinate of exactly one active access
  (with replication: of the same number of accesses); ``duplicates`` counts active in-bounds
  accesses beyond one per element; on a destination, two written elements must not share an
  address (``aliased``: a stride-0 or overlapping layout makes two coordinates one location).
* *predicates*: (1) *safety*: no active access lies outside ``[0, shape)``; (2)
  *completeness*: every in-bounds element is accessed by some active access (``lost``
  otherwise).  A vector of ``k`` elements along mode ``i`` *straddles* the edge when some of
  its elements are in bounds and some are not; if every vector along mode ``i`` starts at a
  coordinate ``= r (mod k)``, no vector straddles iff ``extent_i % k == r``: the weakest
  precondition on the sizes (``N % 4 == 0``), named with the tensor's size names.

Deciding them:

* :class:`GridEnumeration` counts every element (one byte per element, streamed over chunks of
  blocks): the exhaustive mode, and the fallback when the argument does not apply.
* :func:`grid_by_tiling` decides them from a few representative blocks.  Its premises: every
  side's tile coordinate ``at_k`` is an affine function of one block coordinate (``bx``,
  ``2 * bz``, ``by + 1``; several modes never share one), and no access leaves its tile.
  Then tiles at distinct positions are disjoint translates, a block's counts depend only on
  where its tile sits relative to the tensor's edges (inside, on the last partial tile,
  outside: the *classes* of :class:`BlockClasses`), and the blocks that differ only in block
  coordinates the side does not use revisit the same tiles (``m`` times each).  So
  ``covered = sum(weight * covered_per_block) / m`` and every other count is a weighted sum.

:class:`BlockClasses` also gives the representatives of the other checks: per class the
first block and its neighbour along each block coordinate (blocks of one class differ by a
translation; any property affine in the block coordinates is constant over the class iff it
is equal on those), and, for the address-dependent checks of a global side with an affine
layout, one block per residue of its tile's byte address modulo 128 (sector and line counts
and alignment are invariant under shifts by multiples of 128 bytes).
"""

from __future__ import annotations

import itertools
import operator
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import threadmap.layout as L
from threadmap import hardware as hw
from threadmap.model import KernelModel, SideModel, TensorModel
from threadmap.report.model import (
    MAX_FINDINGS,
    CheckResult,
    Finding,
    GridCoverageSummary,
    PredicatesSummary,
)
from threadmap.simulate.access import AccessTable
from threadmap.spec.expr import BLOCK_NAMES
from threadmap.verify.blocks import view_of
from threadmap.verify.coverage import BlockTally
from threadmap.verify.util import colex, delinearize, in_bounds

KIND_CAP = 8
#: elements of a tensor whose addresses are compared exactly for aliasing
MAX_ALIAS_TABLE = 1 << 23
#: offsets spanned by a strided tensor whose multiplicities are counted exactly for aliasing
MAX_ALIAS_SPAN = 1 << 24
#: how long z3 may look for two aliased coordinates
ALIAS_SOLVER_MS = 10_000
#: accesses whose element indices a sparse enumeration (a tensor too large for the byte per
#: element) may hold: 8 bytes each, a few copies while merging
MAX_SPARSE_ROWS = 1 << 25
#: bytes of whole-grid coverage state (one byte per element) the enumeration may allocate
MAX_BITMAP_BYTES = 1 << 30


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


# ----------------------------------------------------------------------------- results


@dataclass
class GridCounts:
    """Whole-grid counts of one side, however they were obtained."""

    elements: int
    accesses: int          # active accesses (rows with a true predicate)
    counted: int           # active accesses inside the tensor
    covered: int           # distinct in-bounds elements accessed
    out_of_bounds: int     # active accesses outside the tensor
    replication: int
    dup_replicated: int    # replication mode: elements whose count differs from the common one


def grid_results(side: Any, g: GridCounts, straddles: Straddles, dup_findings: list[Finding],
                 oob_witness: list[dict[str, Any]], missing_witness: list[tuple[int, ...]],
                 masked_of: Any, aliasing: tuple[int, list[Finding]], replication: bool,
                 size_names: dict[int, str] | None = None) -> list[CheckResult]:
    """The ``grid_coverage`` and ``predicates`` results of one side (a SideModel or an
    AccessTable: its stage, side and shape) from its counts."""
    st, sd = side.stage, side.which
    missing = g.elements - g.covered
    dups = g.dup_replicated if replication else g.counted - g.covered
    aliased, alias_findings = aliasing
    cov = CheckResult(check="grid_coverage", stage=st, side=sd, status="PASS",
                      summary=GridCoverageSummary(elements=g.elements, accesses=g.accesses, covered=g.covered,
                                                  missing=missing, duplicates=dups,
                                                  out_of_bounds=g.out_of_bounds, replication=g.replication,
                                                  aliased=aliased))
    for f in dup_findings:
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
    return [cov, pr]


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
            self.dup_findings.append(_dup_finding(self.side, b, a))

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
            self.dup_findings.append(_dup_finding(self.side, second, first_of(second["coordinate"],
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


def _dup_finding(side: Any, second: dict[str, Any], first: dict[str, Any] | None) -> Finding:
    if first is not None and "block" in first:
        msg = (f"element {second['coordinate']} accessed by block {first['block']} thread {first['thread']} "
               f"value {first['value']} and block {second['block']} thread {second['thread']} value "
               f"{second['value']}")
    else:
        msg = (f"element {second['coordinate']} accessed again by block {second['block']} thread "
               f"{second['thread']} value {second['value']}")
    return Finding(check="grid_coverage", kind="duplicate", stage=side.stage, side=side.which, message=msg,
                   witness={"coordinate": second["coordinate"], "first": first, "second": second})


# ----------------------------------------------------------------------------- aliasing


@dataclass(frozen=True)
class Aliasing:
    """Elements of a tensor's domain whose address another element of the domain shares.

    ``count``: how many (exact when ``exact``; otherwise a lower bound, 2 when a pair exists);
    ``pair``: two coordinates with one address, or None; ``decided``: False when neither a pair
    nor injectivity could be established within the limits."""

    count: int
    pair: tuple[tuple[int, ...], tuple[int, ...]] | None
    decided: bool = True
    exact: bool = True


def aliasing(tensor: TensorModel) -> Aliasing:
    """Aliased elements of ``tensor`` (see :class:`Aliasing`).

    Decided, in order: ordered disjoint strides (injective, 0); every address compared for
    tensors up to ``MAX_ALIAS_TABLE`` elements (any layout); for integer strides the
    histogram of offsets, whose entries ``>= 2`` are the aliased elements (exact, for spans up
    to ``MAX_ALIAS_SPAN``), with a pair found by z3; beyond that z3 alone decides whether a
    pair exists (the count is then the lower bound 2).  Otherwise undecided."""
    size = int(np.prod(tensor.shape, dtype=np.int64))
    flat = strided_form(tensor.layout)
    if flat is not None and _disjoint_strides(*flat):
        return Aliasing(0, None)  # injective: no address is shared (what the exact table would find)
    if size <= MAX_ALIAS_TABLE:
        return _alias_table(tensor, size)
    if flat is None:
        return Aliasing(0, None, decided=False)
    shape, strides = flat
    hist = offset_histogram(shape, strides, MAX_ALIAS_SPAN)
    if hist is not None and not hist.max(initial=0) >= 2:
        return Aliasing(0, None)
    found = _alias_pair(shape, strides)
    pair = None
    if isinstance(found, tuple):  # flat coordinates -> the tensor's: one colexicographic index
        a, b = (delinearize(sum(x * m for x, m in zip(c, _colex_strides(shape), strict=True)), tensor.shape)
                for c in found)
        pair = (a, b)
    if hist is not None:
        return Aliasing(int(hist[hist >= 2].sum()), pair)
    if found is False:
        return Aliasing(0, None)  # z3 proved the strides injective on the domain
    if pair is None:
        return Aliasing(0, None, decided=False)
    return Aliasing(2, pair, exact=False)


def _colex_strides(shape: Sequence[int]) -> list[int]:
    out, m = [], 1
    for e in shape:
        out.append(m)
        m *= int(e)
    return out


def strided_form(layout: Any) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``(shape, strides)`` of integers with ``layout(c) = f(sum c_k * d_k)`` over the flattened
    coordinates, ``f`` injective (a swizzle, a constant offset), or None.  Flattening keeps the
    colexicographic order of coordinates, so two elements share an address under ``layout``
    iff they do under the flat strides."""
    if isinstance(layout, L.ComposedLayout):
        if not isinstance(layout.layout_a, L.Swizzle):
            return None
        layout = layout.layout_b
    if not isinstance(layout, L.Layout):
        return None
    shp, std = L.flatten_to_tuple(layout.shape), L.flatten_to_tuple(layout.stride)
    if len(shp) == len(std) and all(isinstance(x, int) and not isinstance(x, bool) for x in (*shp, *std)):
        return tuple(int(e) for e in shp), tuple(int(d) for d in std)
    return None


def _alias_table(tensor: TensorModel, size: int) -> Aliasing:
    """Every element's offset, sorted: groups of equal offsets are the aliased elements."""
    idx = np.arange(size, dtype=np.int64)
    crd = []
    rest = idx
    for e in tensor.shape:
        crd.append(rest % e)
        rest = rest // e
    off = np.asarray(tensor.offsets(crd), dtype=np.int64).reshape(-1)
    order = np.argsort(off, kind="stable")
    so = off[order]
    dup = np.r_[False, so[1:] == so[:-1]]
    grp = dup | np.r_[dup[1:], False]
    count = int(grp.sum())
    if not count:
        return Aliasing(0, None)
    j = int(np.flatnonzero(dup)[0])
    a, b = int(order[j - 1]), int(order[j])
    return Aliasing(count, (delinearize(a, tensor.shape), delinearize(b, tensor.shape)))


def offset_histogram(shape: Sequence[int], strides: Sequence[int], max_span: int) -> np.ndarray | None:
    """``h[v]`` = how many coordinates ``c`` (``0 <= c_k < shape_k``) have ``sum c_k * |d_k| == v``,
    or None when the span ``sum (shape_k - 1) * |d_k|`` reaches ``max_span``.

    Negating a stride reflects its mode (``c_k -> shape_k - 1 - c_k``), which shifts every offset
    by one constant, so the multiplicities are those of the strides' magnitudes.  Each mode is a
    sliding-window sum with step ``|d_k|`` (a strided prefix sum and a difference)."""
    span = sum((int(e) - 1) * abs(int(d)) for e, d in zip(shape, strides, strict=True))
    if span + 1 > max_span:
        return None
    h = np.ones(1, dtype=np.int64)
    for e, d in zip(shape, strides, strict=True):
        e, d = int(e), abs(int(d))
        if e == 1:
            continue
        if d == 0:
            h = h * e
            continue
        n = len(h) + (e - 1) * d
        rows = -(-n // d)
        c = np.zeros(rows * d, dtype=np.int64)
        c[:len(h)] = h
        c = np.cumsum(c.reshape(rows, d), axis=0).reshape(-1)[:n]
        if n > e * d:  # windows that start past the first element: drop what precedes them
            c[e * d:] -= c[:n - e * d].copy()
        h = c
    return h


def _alias_pair(shape: Sequence[int], strides: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]] | None | bool:
    """Two coordinates of the domain with one offset, found by z3; False when z3 proves there
    are none, None when it does not answer in ``ALIAS_SOLVER_MS``."""
    import z3

    c = [z3.Int(f"c{k}") for k in range(len(shape))]
    e = [z3.Int(f"e{k}") for k in range(len(shape))]
    s = z3.Solver()
    s.set("timeout", ALIAS_SOLVER_MS)
    for k, n in enumerate(shape):
        s.add(0 <= c[k], c[k] < int(n), 0 <= e[k], e[k] < int(n))
    s.add(z3.Or([ck != ek for ck, ek in zip(c, e, strict=True)]))
    s.add(z3.Sum([ck * int(d) for ck, d in zip(c, strides, strict=True)])
          == z3.Sum([ek * int(d) for ek, d in zip(e, strides, strict=True)]))
    r = s.check()
    if r == z3.unsat:
        return False
    if r != z3.sat:
        return None
    m = s.model()
    a = tuple(m.eval(x, model_completion=True).as_long() for x in c)
    b = tuple(m.eval(x, model_completion=True).as_long() for x in e)
    mult = _colex_strides(shape)
    return (a, b) if sum(map(operator.mul, a, mult)) < sum(map(operator.mul, b, mult)) else (b, a)


def _disjoint_strides(shape: Sequence[int], strides: Sequence[int] | None) -> bool:
    """The modes' strides, in increasing magnitude, each exceed the span of the smaller ones:
    ``c -> sum c_k * d_k`` is then injective on the tensor's domain."""
    if strides is None or len(strides) != len(shape):
        return False
    modes = sorted((abs(d), e) for e, d in zip(shape, strides, strict=True) if e > 1)
    reach = 0
    for d, e in modes:
        if d <= reach:
            return False
        reach += d * (e - 1)
    return True


# ----------------------------------------------------------------------------- classes


@dataclass(frozen=True)
class BlockClasses:
    """The grid cut into boxes whose blocks behave alike for every side (see module doc)."""

    grid: tuple[int, int, int]
    intervals: dict[str, list[tuple[int, int]]]  # per block coordinate: inclusive [lo, hi] pieces

    @staticmethod
    def of(model: KernelModel) -> BlockClasses | None:
        """The classes, or None when a global side's tile coordinates are not separable affine
        functions of the block coordinates."""
        cuts: dict[str, set[int]] = {v: {0, g} for v, g in zip(BLOCK_NAMES, model.grid, strict=True)}
        for side in model.sides():
            if side.memory != "global" or side.at is None:
                continue
            if side.at_affine is None:
                return None
            used: set[str] = set()
            for k, form in enumerate(side.at_affine):
                if len(form.coef) > 1:
                    return None
                if not form.coef:
                    continue
                v, a = next(iter(form.coef.items()))
                if v in used:
                    return None
                used.add(v)
                g = model.grid[BLOCK_NAMES.index(v)]
                T, E = side.tile[k], side.shape[k]
                full = E // T
                for lo_p, hi_p in ((0, full - 1), (full, full if E % T else full - 1)):
                    if hi_p < lo_p:
                        continue
                    lo_b, hi_b = _solve(form.const, a, lo_p, hi_p)
                    for x in (lo_b, hi_b + 1):
                        if 0 < x < g:
                            cuts[v].add(x)
        iv = {}
        for v in BLOCK_NAMES:
            pts = sorted(cuts[v])
            iv[v] = [(pts[i], pts[i + 1] - 1) for i in range(len(pts) - 1)]
        return BlockClasses(model.grid, iv)

    def boxes(self) -> list[dict[str, tuple[int, int]]]:
        names = list(BLOCK_NAMES)
        return [dict(zip(names, combo, strict=True))
                for combo in itertools.product(*(self.intervals[v] for v in names))]

    def block_id(self, point: dict[str, int]) -> int:
        gx, gy, _ = self.grid
        return point["bx"] + gx * (point["by"] + gy * point["bz"])

    def representatives(self) -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
        """(block ids, weights, groups): per box its first block and the next one along each
        block coordinate; weights sum to the box's size; ``groups`` lists each box's
        representatives (their per-block counts must agree for the argument to hold)."""
        ids: list[int] = []
        wts: list[int] = []
        groups: list[list[int]] = []
        for box in self.boxes():
            size = int(np.prod([hi - lo + 1 for lo, hi in box.values()]))
            first = {v: lo for v, (lo, _) in box.items()}
            extra = []
            for v, (lo, hi) in box.items():
                if hi > lo:
                    extra.append(self.block_id({**first, v: lo + 1}))
            ids.append(self.block_id(first))
            wts.append(size - len(extra))
            ids += extra
            wts += [1] * len(extra)
            groups.append([self.block_id(first), *extra])
        return np.asarray(ids, dtype=np.int64), np.asarray(wts, dtype=np.int64), groups

    def residue_representatives(self, model: KernelModel, side: SideModel) -> tuple[np.ndarray, np.ndarray] | None:
        """(block ids, weights) with one block per box and residue of the side's tile byte
        address modulo 128; None when the side's layout or tile coordinates are not affine."""
        tensor = side.tensor
        if tensor is None or tensor.strides is None or (side.at is not None and side.at_affine is None):
            return None
        alpha = dict.fromkeys(BLOCK_NAMES, 0)
        for k, form in enumerate(side.at_affine or ()):
            for v, a in form.coef.items():
                alpha[v] += a * side.tile[k] * tensor.strides[k] * tensor.elem_bytes
        beta = model.origins(side, np.zeros(1, dtype=np.int64))[0]
        base = tensor.base + (tensor.offset + int(sum(int(o) * d for o, d in zip(beta, tensor.strides)))) \
            * tensor.elem_bytes
        L = hw.LINE_BYTES
        ids: list[int] = []
        wts: list[int] = []
        for box in self.boxes():
            # per residue mod L: (count, example point)
            acc: dict[int, tuple[int, dict[str, int]]] = {base % L: (1, {})}
            for v in BLOCK_NAMES:
                lo, hi = box[v]
                per = _residues(alpha[v], lo, hi, L)
                nxt: dict[int, tuple[int, dict[str, int]]] = {}
                for r0, (c0, p0) in acc.items():
                    for r1, (c1, b1) in per.items():
                        r = (r0 + r1) % L
                        c, p = nxt.get(r, (0, {**p0, v: b1}))
                        nxt[r] = (c + c0 * c1, p)
                acc = nxt
            for _, (c, p) in sorted(acc.items()):
                ids.append(self.block_id(p))
                wts.append(c)
        return np.asarray(ids, dtype=np.int64), np.asarray(wts, dtype=np.int64)


def _solve(c: int, a: int, lo_p: int, hi_p: int) -> tuple[int, int]:
    """Integer ``b`` with ``lo_p <= c + a*b <= hi_p`` (``a != 0``): an inclusive range."""
    if a > 0:
        return -(-(lo_p - c) // a), (hi_p - c) // a
    return -(-(hi_p - c) // a), (lo_p - c) // a


def _residues(alpha: int, lo: int, hi: int, m: int) -> dict[int, tuple[int, int]]:
    """``{alpha * b mod m: (how many b in [lo, hi], the first such b)}``."""
    n = hi - lo + 1
    period = m // np.gcd(alpha % m, m) if alpha % m else 1
    out: dict[int, tuple[int, int]] = {}
    for j in range(min(period, n)):
        b = lo + j
        cnt = (n - j + period - 1) // period
        r = (alpha * b) % m
        prev = out.get(r)
        out[r] = (cnt + (prev[0] if prev else 0), prev[1] if prev else b)
    return out


# ----------------------------------------------------------------------------- the argument


def multiplicity(model: KernelModel, side: SideModel) -> tuple[int, list[str]]:
    """How many blocks visit each tile of ``side`` (the product of the extents of the block
    coordinates its tile coordinates do not use), and those coordinates."""
    used = set()
    for form in side.at_affine or ():
        used |= set(form.coef)
    unused = [v for v, g in zip(BLOCK_NAMES, model.grid, strict=True) if v not in used and g > 1]
    m = 1
    for v in unused:
        m *= model.grid[BLOCK_NAMES.index(v)]
    return m, unused


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
        _dup_finding(ts[0], s, None) for s in g.pending_pairs[:KIND_CAP]], g.oob_witness, missing,
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
