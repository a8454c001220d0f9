"""Coverage: every element of the tile (and of the tensor, over the grid) is accessed exactly once.

Definition (per tile).  Let ``A_b`` be the multiset of coordinates of the *active* rows
(predicate true) of block ``b`` and ``T_b`` the block's tile: the box
``[origin_b, origin_b + tile)`` intersected with the tensor's bounds ``[0, shape)``.
The stage side covers the tile exactly iff every active coordinate inside the tensor lies
in the box (no *out-of-tile* access) and every cell of ``T_b`` occurs exactly once in
``A_b`` (none *missing*, none *duplicated*).  Injective + in-tile + |A_b| = |T_b| is the
same as bijective.  With ``replication`` (stride-0 modes, e.g. GMMA operand atoms) the
requirement is that every cell of ``T_b`` occurs the same number ``r >= 1`` of times.

Definition (grid).  Over all blocks, every in-bounds element of the tensor is the
coordinate of exactly one active row (with replication: of the same number of rows).

The tile of a block comes from ``tile``/``tile_origin`` arguments, else from
``table.meta["tile"]`` / ``table.meta["tile_origin"]`` (an (num_blocks, R) array indexed
by block id, or a function of the block-id array), else: shared/register sides use the
whole tensor, global sides infer ``origin = floor(min coord / tile) * tile``; without a
tile shape the tile is the block's bounding box (then ``summary["tile_inferred"]``).

:func:`coverage_definition` is the executable definition (pure Python, one tile); the
numpy enumeration :func:`check_tile_coverage` and the streaming :class:`GridCoverage` must
agree with it (tests cross-check them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from threadmap.simulate.access import AccessTable
from threadmap.verify._util import (
    all_in_bounds,
    coords2d,
    delinearize,
    first_false,
    group_starts,
    in_bounds,
    linearize,
    row_witness,
)
from threadmap.verify.result import MAX_FINDINGS, CheckResult, Finding

KIND_CAP = 8  # findings kept per kind, so every kind shows up in the capped list

CHECK = "coverage"
GRID_CHECK = "grid_coverage"

TileOrigin = np.ndarray | Callable[[np.ndarray], np.ndarray]


def coverage_definition(accesses: Iterable[tuple[Hashable, tuple[int, ...], bool]],
                        tile_cells: Iterable[tuple[int, ...]],
                        replication: bool = False) -> dict[str, Any]:
    """The coverage definition on one tile, by brute force.

    ``accesses``: ``(who, coordinate, predicate)`` with ``who`` e.g. ``(thread, value)``;
    ``tile_cells``: the tile's in-bounds cells.  Returns ``{"ok", "missing",
    "duplicates" (list of (cell, [who...])), "out_of_tile", "replication"}``.
    """
    cells = set(tile_cells)
    hits: dict[tuple[int, ...], list[Hashable]] = {}
    out: list[tuple[Hashable, tuple[int, ...]]] = []
    for who, c, p in accesses:
        if not p:
            continue
        if c in cells:
            hits.setdefault(c, []).append(who)
        else:
            out.append((who, c))
    missing = sorted(c for c in cells if c not in hits)
    if replication:
        counts = Counter(len(v) for v in hits.values())
        r = counts.most_common(1)[0][0] if counts else 0
        dups = sorted((c, v) for c, v in hits.items() if len(v) != r)
    else:
        r = 1
        dups = sorted((c, v) for c, v in hits.items() if len(v) > 1)
    return {"ok": not missing and not dups and not out, "missing": missing, "duplicates": dups,
            "out_of_tile": out, "replication": r}


def _block_ordinals(block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(distinct blocks, ordinal per row, start row of each block's run or None if unsorted)."""
    if block.size and np.all(block[1:] >= block[:-1]):
        starts = group_starts(block)
        ords = np.zeros(block.size, dtype=np.int64)
        if starts.size > 1:
            ords[starts[1:]] = 1
            ords = np.cumsum(ords)
        return block[starts], ords, starts
    ub, inv = np.unique(block, return_inverse=True)
    return ub, inv.reshape(-1).astype(np.int64), None


def _resolve_tile(t: AccessTable, c: np.ndarray, ub: np.ndarray, ords: np.ndarray,
                  starts: np.ndarray | None, tile: Sequence[int] | None, tile_origin: TileOrigin | None
                  ) -> tuple[tuple[int, ...], np.ndarray, bool]:
    R = c.shape[1]
    tile = tile if tile is not None else t.meta.get("tile")
    tile_origin = tile_origin if tile_origin is not None else t.meta.get("tile_origin")
    inferred = False
    if tile is None and t.memory in ("shared", "register"):
        return tuple(int(x) for x in t.shape), np.zeros((ub.size, R), dtype=np.int64), False
    nb = ub.size
    if tile_origin is not None:
        org = tile_origin(ub) if callable(tile_origin) else np.asarray(tile_origin)[ub]
        org = np.asarray(org, dtype=np.int64).reshape(nb, R)
    else:
        if starts is not None:
            mn = np.minimum.reduceat(c, starts, axis=0)
        else:
            mn = np.full((nb, R), np.iinfo(np.int64).max, dtype=np.int64)
            np.minimum.at(mn, ords, c)
        org = mn
        if tile is not None:
            tl = np.asarray(tile, dtype=np.int64)
            org = (mn // tl) * tl
    if tile is None:
        if starts is not None:
            mx = np.maximum.reduceat(c, starts, axis=0)
        else:
            mx = np.full((nb, R), np.iinfo(np.int64).min, dtype=np.int64)
            np.maximum.at(mx, ords, c)
        tile = tuple(int(x) for x in (mx - org + 1).max(axis=0))
        inferred = True
    return tuple(int(x) for x in tile), org, inferred


def check_tile_coverage(t: AccessTable, *, tile: Sequence[int] | None = None,
                        tile_origin: TileOrigin | None = None, replication: bool = False
                        ) -> CheckResult:
    """Per-block coverage of one side of one stage (see the module docstring).

    Summary: ``blocks``, ``tile``, ``tile_inferred``, ``elements`` (in-bounds tile cells, all
    blocks), ``accesses`` (active rows), ``missing``, ``duplicate_cells``, ``duplicates``
    (accesses beyond the first per cell), ``out_of_tile``, ``out_of_bounds`` (active rows in
    the box but outside the tensor; reported by the predicates check), ``replication``.
    """
    res = CheckResult(CHECK, t.stage, t.side, "PASS")
    if len(t) == 0:
        res.status = "SKIP"
        res.summary = {"reason": "empty table"}
        return res
    c = coords2d(t)
    ub, ords, starts = _block_ordinals(np.asarray(t.block))
    tile_t, org, inferred = _resolve_tile(t, c, ub, ords, starts, tile, tile_origin)
    R = c.shape[1]
    nb, tsize = ub.size, int(np.prod(tile_t))
    active = np.asarray(t.pred, dtype=bool)
    local = c - org[ords]
    in_tile = np.ones(len(t), dtype=bool)
    for i in range(R):
        in_tile &= (local[:, i] >= 0) & (local[:, i] < tile_t[i])
    inb = in_bounds(c, t.shape)
    counted = active & in_tile & inb
    key = ords * tsize + linearize(np.where(in_tile[:, None], local, 0), tile_t)
    counts = np.bincount(key[counted], minlength=nb * tsize).reshape(nb, tsize)
    # in-bounds cells of each block's tile (separable per mode, colex like linearize)
    target = np.ones((nb, 1), dtype=bool)
    for i in range(R):
        vi = (org[:, i:i + 1] + np.arange(tile_t[i])[None, :]) < t.shape[i]
        vi &= (org[:, i:i + 1] + np.arange(tile_t[i])[None, :]) >= 0
        target = (vi[:, :, None] & target[:, None, :]).reshape(nb, -1) if i else vi.copy()
    target = target.reshape(nb, tsize)

    if replication:
        tc = counts[target]
        vals, freq = np.unique(tc[tc > 0], return_counts=True)
        r = int(vals[np.argmax(freq)]) if vals.size else 0
        bad_mask = target & (counts != r) & (counts > 0)
    else:
        r = 1
        bad_mask = counts > 1
    missing_mask = target & (counts == 0)
    oot = active & ~in_tile & inb
    oob = active & in_tile & ~inb
    res.summary = {
        "blocks": nb, "tile": tile_t, "tile_inferred": inferred,
        "elements": int(target.sum()), "accesses": int(active.sum()),
        "missing": int(missing_mask.sum()), "duplicate_cells": int(bad_mask.sum()),
        "duplicates": int(np.maximum(counts - r, 0).sum()) if not replication
        else int(np.abs(counts - r)[bad_mask].sum()),
        "out_of_tile": int(oot.sum()), "out_of_bounds": int(oob.sum()), "replication": r,
    }
    # witnesses
    bad_keys = np.flatnonzero(bad_mask.reshape(-1))
    if bad_keys.size:
        rows = np.flatnonzero(counted & np.isin(key, bad_keys[:KIND_CAP]))
        for k in bad_keys[:KIND_CAP]:
            b_ord, cell = divmod(int(k), tsize)
            rk = rows[key[rows] == k]
            coord = tuple(int(x) for x in org[b_ord] + np.asarray(delinearize(cell, tile_t)))
            accs = [row_witness(t, int(i)) for i in rk[:4]]
            if replication:
                msg = (f"block {int(ub[b_ord])}: cell {coord} covered {int(counts.flat[k])} times, "
                       f"expected {r} (replication)")
            else:
                a, b2 = accs[0], accs[1]
                msg = (f"block {int(ub[b_ord])}: element {coord} accessed by (thread {a['thread']}, "
                       f"value {a['value']}) and (thread {b2['thread']}, value {b2['value']})")
            res.add(Finding(CHECK, "duplicate", msg, {"block": int(ub[b_ord]), "coordinate": coord,
                                                      "count": int(counts.flat[k]), "first": accs[0],
                                                      "second": accs[1] if len(accs) > 1 else None,
                                                      "accesses": accs}, t.stage, t.side), 1)
        res.total_findings += bad_keys.size - min(bad_keys.size, KIND_CAP)
    miss_keys = np.flatnonzero(missing_mask.reshape(-1))
    for k in miss_keys[:KIND_CAP]:
        b_ord, cell = divmod(int(k), tsize)
        coord = tuple(int(x) for x in org[b_ord] + np.asarray(delinearize(cell, tile_t)))
        res.add(Finding(CHECK, "missing", f"block {int(ub[b_ord])}: element {coord} of the tile is "
                        "not accessed by any active (thread, value)",
                        {"block": int(ub[b_ord]), "coordinate": coord}, t.stage, t.side))
    res.total_findings += max(0, miss_keys.size - KIND_CAP)
    oot_rows = np.flatnonzero(oot)
    for i in oot_rows[:KIND_CAP]:
        w = row_witness(t, int(i))
        b_ord = int(ords[i])
        w["tile_origin"] = tuple(int(x) for x in org[b_ord])
        res.add(Finding(CHECK, "out_of_tile",
                        f"block {w['block']} thread {w['thread']} value {w['value']} accesses "
                        f"{w['coordinate']}, outside its tile at {w['tile_origin']} of shape {tile_t}",
                        w, t.stage, t.side))
    res.total_findings += max(0, oot_rows.size - KIND_CAP)
    if res.total_findings:
        res.status = "FAIL"
    return res


class GridCoverage:
    """Streaming whole-grid coverage of one side: feed chunks with :meth:`add`.

    State: one ``bool`` per tensor element (``prod(shape)`` bytes; 256 MiB for 2^28),
    plus capped witness lists.  Per chunk: the linear indices of the active in-bounds
    rows are gathered (a hit = a duplicate across chunks, witnessed by the later access)
    and scattered.  The verdict is exact by counting: with ``covered`` distinct elements
    set and ``n`` counted accesses, duplicates = ``n - covered`` and missing =
    ``size - covered``.  Duplicates inside one chunk are counted exactly; their pairs are
    witnessed only with ``thorough=True`` (a sort per chunk), otherwise the per-tile check
    names them.  With ``replication`` a count array (``int32``, small tensors) is kept.
    ``masked_keep`` masked in-bounds rows are remembered to explain missing elements
    (used by the predicates check).
    """

    def __init__(self, shape: Sequence[int], *, replication: bool = False, thorough: bool = False,
                 masked_keep: int = 1 << 16) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.replication = replication
        self.thorough = thorough
        if replication:
            self.counts = np.zeros(self.size, dtype=np.int32)
        else:
            self.seen = np.zeros(self.size, dtype=bool)
        self.n_counted = 0
        self.n_active = 0
        self.n_rows = 0
        self.n_oob_active = 0
        self.dup_witnessed = 0
        self.dup_findings: list[Finding] = []
        self.oob_witness: list[dict[str, Any]] = []
        self.masked_idx: list[np.ndarray] = []
        self.masked_w: list[dict[str, Any]] = []
        self.masked_kept = 0
        self.masked_keep = masked_keep
        self.stage: int | None = None
        self.side: str | None = None
        self.chunks = 0
        self._scratch = np.zeros(0, dtype=np.int64)

    def add(self, t: AccessTable) -> None:
        """Account one chunk (any rows; typically whole blocks)."""
        self.stage, self.side = t.stage, t.side
        self.chunks += 1
        if len(t) == 0:
            return
        c = coords2d(t)
        active = np.asarray(t.pred, dtype=bool)
        self.n_rows += len(t)
        if active.all() and all_in_bounds(c, self.shape):      # fast path: no masks needed
            self.n_active += len(t)
            rows = None
            if self._scratch.size < len(t):
                self._scratch = np.empty(len(t), dtype=np.int64)
            idx = linearize(c, self.shape, out=self._scratch)
            self.n_counted += idx.size
        else:
            inb = in_bounds(c, self.shape)
            cnt = active & inb
            self.n_active += int(active.sum())
            oob = active & ~inb
            n_oob = int(oob.sum())
            if n_oob:
                self.n_oob_active += n_oob
                for i in np.flatnonzero(oob)[: max(0, MAX_FINDINGS - len(self.oob_witness))]:
                    self.oob_witness.append(row_witness(t, int(i)))
            rows = np.flatnonzero(cnt)
            idx = linearize(c[rows], self.shape)
            self.n_counted += idx.size
            self._remember_masked(t, c, ~active & inb)
        if self.replication:
            self.counts += np.bincount(idx, minlength=self.size).astype(np.int32)
            return
        prev = self.seen[idx]
        if prev.any():
            hit = np.flatnonzero(prev)
            self.dup_witnessed += hit.size
            for j in hit[: max(0, KIND_CAP - len(self.dup_findings))]:
                r = int(j) if rows is None else int(rows[j])
                w = row_witness(t, r)
                self.dup_findings.append(Finding(
                    GRID_CHECK, "duplicate",
                    f"element {w['coordinate']} accessed again by block {w['block']} thread "
                    f"{w['thread']} value {w['value']} (already accessed in an earlier chunk)",
                    {"coordinate": w["coordinate"], "second": w}, t.stage, t.side))
        self.seen[idx] = True
        if self.thorough and idx.size > 1:
            order = np.argsort(idx, kind="stable")
            s = idx[order]
            eq = np.flatnonzero(s[1:] == s[:-1])
            self.dup_witnessed += eq.size
            for j in eq[: max(0, KIND_CAP - len(self.dup_findings))]:
                a, b = (int(order[j]), int(order[j + 1]))
                if rows is not None:
                    a, b = int(rows[a]), int(rows[b])
                wa, wb = row_witness(t, a), row_witness(t, b)
                self.dup_findings.append(Finding(
                    GRID_CHECK, "duplicate",
                    f"element {wa['coordinate']} accessed by block {wa['block']} thread {wa['thread']} "
                    f"value {wa['value']} and block {wb['block']} thread {wb['thread']} value {wb['value']}",
                    {"coordinate": wa["coordinate"], "first": wa, "second": wb}, t.stage, t.side))

    def _remember_masked(self, t: AccessTable, c: np.ndarray, masked: np.ndarray) -> None:
        """Keep masked in-bounds rows (they explain lost elements)."""
        if self.masked_kept < self.masked_keep and masked.any():
            mr = np.flatnonzero(masked)[: self.masked_keep - self.masked_kept]
            self.masked_idx.append(linearize(c[mr], self.shape))
            self.masked_w.extend(row_witness(t, int(i)) for i in mr[: max(0, 256 - len(self.masked_w))])
            self.masked_kept += mr.size

    def assume(self, mask: np.ndarray) -> None:
        """Count the elements of ``mask`` (flat, colexicographic over ``shape``) as covered exactly
        once without enumerating them: the interior tiles that the tiling argument proves
        (see threadmap.verify.pipeline).  Recorded in the summary as ``proved``."""
        n = int(np.count_nonzero(mask))
        if self.replication:
            self.counts[mask] += 1
        else:
            self.seen |= mask
        self.n_counted += n
        self.n_active += n
        self.proved = getattr(self, "proved", 0) + n

    def covered_mask(self) -> np.ndarray:
        """Boolean per element: accessed by at least one active row."""
        return self.counts > 0 if self.replication else self.seen

    def masked_witness(self, idx: int) -> dict[str, Any] | None:
        """A remembered masked (predicate false) access of element ``idx``, if any."""
        for arr_i, arr in enumerate(self.masked_idx):
            hit = np.flatnonzero(arr == idx)
            if hit.size:
                base = sum(a.size for a in self.masked_idx[:arr_i])
                pos = base + int(hit[0])
                if pos < len(self.masked_w):
                    return self.masked_w[pos]
                return {"coordinate": delinearize(idx, self.shape), "predicate": False}
        return None

    def result(self) -> CheckResult:
        """The grid verdict. Summary: ``elements``, ``accesses`` (active rows), ``covered``,
        ``missing``, ``duplicates`` (accesses beyond one per element, or off the replication
        count), ``out_of_bounds`` (active rows outside the tensor), ``chunks``, ``replication``."""
        res = CheckResult(GRID_CHECK, self.stage, self.side, "PASS")
        cov = self.covered_mask()
        covered = int(np.count_nonzero(cov))
        missing = self.size - covered
        if self.replication:
            pos = self.counts[self.counts > 0]
            vals, freq = np.unique(pos, return_counts=True)
            r = int(vals[np.argmax(freq)]) if vals.size else 0
            bad = np.flatnonzero((self.counts != r) & (self.counts > 0))
            dups = int(bad.size)
            for k in bad[:KIND_CAP]:
                res.add(Finding(GRID_CHECK, "duplicate",
                                f"element {delinearize(int(k), self.shape)} covered {int(self.counts[k])} "
                                f"times, expected {r}",
                                {"coordinate": delinearize(int(k), self.shape),
                                 "count": int(self.counts[k])}, self.stage, self.side))
            res.total_findings += max(0, dups - KIND_CAP)
        else:
            r = 1
            dups = self.n_counted - covered
            for f in self.dup_findings:
                res.add(f)
            unexplained = dups - min(dups, self.dup_witnessed)
            res.total_findings += max(0, min(dups, self.dup_witnessed) - len(self.dup_findings))
            if unexplained > 0:
                res.add(Finding(GRID_CHECK, "duplicate",
                                f"{unexplained} accesses hit an element already accessed in the same chunk "
                                "(run the per-tile check or thorough=True for the pairs)",
                                {"count": unexplained}, self.stage, self.side), unexplained)
        if missing:
            for k in first_false(cov, KIND_CAP):
                coord = delinearize(int(k), self.shape)
                res.add(Finding(GRID_CHECK, "missing",
                                f"element {coord} is not accessed by any active access in the grid",
                                {"coordinate": coord, "masked_access": self.masked_witness(int(k))},
                                self.stage, self.side))
            res.total_findings += max(0, missing - KIND_CAP)
        res.summary = {"elements": self.size, "accesses": self.n_active, "covered": covered,
                       "missing": missing, "duplicates": dups, "out_of_bounds": self.n_oob_active,
                       "chunks": self.chunks, "replication": r}
        if getattr(self, "proved", 0):
            res.summary["proved_by_tiling"] = self.proved
        if res.total_findings:
            res.status = "FAIL"
        return res


def check_grid_coverage(tables: AccessTable | Iterable[AccessTable], *, shape: Sequence[int] | None = None,
                        replication: bool = False, thorough: bool = False) -> CheckResult:
    """Whole-grid coverage over a table or an iterable of chunk tables of one side."""
    chunks = [tables] if isinstance(tables, AccessTable) else tables
    acc: GridCoverage | None = None
    for t in chunks:
        if acc is None:
            acc = GridCoverage(shape or t.shape, replication=replication, thorough=thorough)
        acc.add(t)
    if acc is None:
        return CheckResult(GRID_CHECK, None, None, "SKIP", {"reason": "no tables"})
    return acc.result()
