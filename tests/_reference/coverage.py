"""Coverage: every element of the tile is accessed exactly once.

Definition (per tile).  Let ``A_b`` be the multiset of coordinates of the *counted* rows of
block ``b`` and ``T_b`` the block's tile: the box ``[origin_b, origin_b + tile)`` intersected
with the tensor's bounds ``[0, shape)``.  The side covers the tile exactly iff every counted
coordinate inside the tensor lies in the box (no *out-of-tile* access) and every cell of
``T_b`` occurs exactly once in ``A_b`` (none *missing*, none *duplicated*).  Injective +
in-tile + ``|A_b| = |T_b|`` is the same as bijective.  With ``replication`` (stride-0 modes,
e.g. GMMA operand atoms) every cell of ``T_b`` must occur the same number ``r >= 1`` of times.

Counted rows: on a global side the active rows (predicate true); on a shared side every
row of a real thread, whatever the predicate: the map (thread, value) -> shared element is
the same in every block, and a bounds predicate that comes from the global side masks, in
an edge block, shared elements that hold no data (not a coverage hole).  An access outside
the shared tensor is a finding (``out_of_bounds``); outside a global tensor the predicates
check reports it.

:func:`coverage_definition` is the executable definition (pure Python, one tile);
:class:`TileCoverage` the weighted enumeration.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests._reference.util import as_tables, colex, counted_rows, delinearize, in_bounds, ones
from threadmap.model import KernelModel, SideModel
from threadmap.report.model import CheckResult, CoverageSummary, Finding
from threadmap.simulate.access import AccessTable
from threadmap.verify.check import Accumulator, Check

KIND_CAP = 8  # findings kept per kind, so every kind shows up in the capped list


def coverage_definition(accesses: Iterable[tuple[Hashable, tuple[int, ...], bool]],
                        tile_cells: Iterable[tuple[int, ...]],
                        replication: bool = False) -> dict[str, Any]:
    """The coverage definition on one tile, by brute force.

    ``accesses``: ``(who, coordinate, counted)`` with ``who`` e.g. ``(thread, value)``;
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


@dataclass(frozen=True)
class BlockTally:
    """One simulated block's tile: its weight (blocks it stands for), distinct in-bounds cells
    covered, counted accesses inside the tile and the tensor, counted accesses outside the tile
    (in bounds) and outside the tensor, and (with replication) cells per access count."""

    block: int
    weight: int
    covered: int
    accesses: int
    out_of_tile: int
    out_of_bounds: int
    hist: dict[int, int]


class TileCoverage(Accumulator):
    """Weighted per-tile coverage of one side."""

    def __init__(self, side: SideModel, replication: bool) -> None:
        self.side = side
        self.replication = replication
        self.tile = side.tile
        self.tsize = int(np.prod(self.tile, dtype=np.int64))
        self.n = {"blocks": 0, "elements": 0, "accesses": 0, "missing": 0, "duplicate_cells": 0,
                  "duplicates": 0, "out_of_tile": 0, "out_of_bounds": 0}
        self.rep_hist: Counter[int] = Counter()
        self.findings: dict[str, list[Finding]] = {"duplicate": [], "missing": [], "out_of_tile": [],
                                                   "out_of_bounds": []}
        self.kind_total: Counter[str] = Counter()
        #: per added block, what the grid argument needs (see :class:`BlockTally`)
        self.per_block: list[BlockTally] = []

    def add(self, t: AccessTable, weights: np.ndarray) -> None:
        nb = t.blocks.size
        if nb == 0:
            return
        pb = t.per_block
        shared = t.memory == "shared"
        counted = counted_rows(t, structural=shared)
        org = t.origins if t.origins is not None else np.zeros((nb, t.rank), np.int64)
        R = t.rank
        local = [t.coords[k].reshape(nb, pb) - org[:, k, None] for k in range(R)]
        in_tile = np.ones((nb, pb), dtype=bool)
        for k in range(R):
            in_tile &= np.less(local[k].view(np.uint64), np.uint64(self.tile[k]))
        inb = in_bounds(t.coords, t.shape).reshape(nb, pb)
        cnt = counted.reshape(nb, pb)
        ok = cnt & in_tile & inb
        cell = colex([np.where(in_tile, local[k], 0) for k in range(R)], self.tile)
        key = np.arange(nb, dtype=np.int64)[:, None] * self.tsize + cell
        counts = np.bincount(key[ok], minlength=nb * self.tsize).reshape(nb, self.tsize)
        target = _tile_cells_in_bounds(org, self.tile, t.shape)
        if self.replication:
            tc = counts[target]
            vals, freq = np.unique(tc[tc > 0], return_counts=True)
            r = int(vals[np.argmax(freq)]) if vals.size else 0
            bad = target & (counts != r) & (counts > 0)
            ndup = np.where(bad, np.abs(counts - r), 0).sum(axis=1)
        else:
            r = 1
            bad = counts > 1
            ndup = np.maximum(counts - 1, 0).sum(axis=1)
        missing = target & (counts == 0)
        oot = cnt & ~in_tile & inb
        oob = cnt & ~inb
        per = {"elements": target.sum(axis=1), "accesses": ok.sum(axis=1), "missing": missing.sum(axis=1),
               "duplicate_cells": bad.sum(axis=1), "duplicates": ndup, "out_of_tile": oot.sum(axis=1),
               "out_of_bounds": oob.sum(axis=1)}
        w = np.asarray(weights, dtype=np.int64)
        self.n["blocks"] += int(w.sum())
        for k, v in per.items():
            self.n[k] += int((v.astype(np.int64) * w).sum())
        self.rep_hist[r] += int(w.sum())
        covered = (target & (counts > 0)).sum(axis=1)
        for i in range(nb):
            hist: dict[int, int] = {}
            if self.replication:
                vals, cnt = np.unique(counts[i][target[i] & (counts[i] > 0)], return_counts=True)
                hist = {int(v): int(c) for v, c in zip(vals, cnt)}
            self.per_block.append(BlockTally(int(t.blocks[i]), int(w[i]), int(covered[i]),
                                             int(per["accesses"][i]), int(per["out_of_tile"][i]),
                                             int(per["out_of_bounds"][i]), hist))
        self._witness(t, counts, bad, missing, oot, oob, key, ok, org, w, r, shared)

    def _witness(self, t: AccessTable, counts: np.ndarray, bad: np.ndarray, missing: np.ndarray,
                 oot: np.ndarray, oob: np.ndarray, key: np.ndarray, ok: np.ndarray, org: np.ndarray,
                 w: np.ndarray, r: int, shared: bool) -> None:
        pb = t.per_block
        st, sd = t.stage, t.side
        # counts of every kind, weighted by the blocks each simulated block stands for
        self.kind_total["duplicate"] += int((bad.sum(axis=1) * w).sum())
        self.kind_total["missing"] += int((missing.sum(axis=1) * w).sum())
        self.kind_total["out_of_tile"] += int((oot.sum(axis=1) * w).sum())
        if shared:
            self.kind_total["out_of_bounds"] += int((oob.sum(axis=1) * w).sum())
        room = KIND_CAP - len(self.findings["duplicate"])
        if room > 0 and bad.any():
            flat_key = key.reshape(-1)
            for k in np.flatnonzero(bad.reshape(-1))[:room]:
                b_ord, cell = divmod(int(k), self.tsize)
                rows = np.flatnonzero(ok.reshape(-1) & (flat_key == k))[:4]
                accs = [t.row(int(i)) for i in rows]
                coord = tuple(int(x) for x in org[b_ord] + np.asarray(delinearize(cell, self.tile)))
                blk = int(t.blocks[b_ord])
                if self.replication:
                    msg = (f"block {blk}: cell {coord} covered {int(counts.flat[k])} times, "
                           f"expected {r} (replication)")
                else:
                    a, b = accs[0], accs[1]
                    msg = (f"block {blk}: element {coord} accessed by (thread {a['thread']}, value "
                           f"{a['value']}) and (thread {b['thread']}, value {b['value']})")
                self.findings["duplicate"].append(Finding(
                    check="coverage", kind="duplicate", message=msg, stage=st, side=sd,
                    witness={"block": blk, "coordinate": coord, "count": int(counts.flat[k]),
                             "first": accs[0], "second": accs[1] if len(accs) > 1 else None,
                             "accesses": accs}))
        room = KIND_CAP - len(self.findings["missing"])
        for k in np.flatnonzero(missing.reshape(-1))[:max(0, room)]:
            b_ord, cell = divmod(int(k), self.tsize)
            coord = tuple(int(x) for x in org[b_ord] + np.asarray(delinearize(cell, self.tile)))
            blk = int(t.blocks[b_ord])
            self.findings["missing"].append(Finding(
                check="coverage", kind="missing", stage=st, side=sd,
                message=f"block {blk}: element {coord} of the tile is not accessed by any "
                        f"{'thread' if shared else 'active (thread, value)'}",
                witness={"block": blk, "coordinate": coord}))
        room = KIND_CAP - len(self.findings["out_of_tile"])
        for i in np.flatnonzero(oot.reshape(-1))[:max(0, room)]:
            wt = t.row(int(i))
            wt["tile_origin"] = tuple(int(x) for x in org[int(i) // pb])
            self.findings["out_of_tile"].append(Finding(
                check="coverage", kind="out_of_tile", stage=st, side=sd, witness=wt,
                message=f"block {wt['block']} thread {wt['thread']} value {wt['value']} accesses "
                        f"{wt['coordinate']}, outside its tile at {wt['tile_origin']} of shape {self.tile}"))
        if shared:
            room = KIND_CAP - len(self.findings["out_of_bounds"])
            for i in np.flatnonzero(oob.reshape(-1))[:max(0, room)]:
                wt = t.row(int(i))
                self.findings["out_of_bounds"].append(Finding(
                    check="coverage", kind="out_of_bounds", stage=st, side=sd, witness=wt,
                    message=f"thread {wt['thread']} value {wt['value']} accesses {t.tensor}"
                            f"{wt['coordinate']}, outside the shared tensor of shape {t.shape} "
                            f"(byte address {wt['address']})"))

    def result(self) -> CheckResult:
        r = self.rep_hist.most_common(1)[0][0] if self.rep_hist else (0 if self.replication else 1)
        res = CheckResult(check="coverage", stage=self.side.stage, side=self.side.which, status="PASS",
                          summary=CoverageSummary(tile=self.tile, replication=r, **self.n))
        for kind, fs in self.findings.items():
            for f in fs:
                res.add(f, 0)
            res.total_findings += self.kind_total[kind]
        if res.total_findings:
            res.fail()
        return res


def _tile_cells_in_bounds(org: np.ndarray, tile: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """(nb, prod(tile)) booleans: the tile cell is inside the tensor (colex cell order)."""
    nb = org.shape[0]
    target = np.ones((nb, 1), dtype=bool)
    for k, tk in enumerate(tile):
        pos = org[:, k:k + 1] + np.arange(tk)[None, :]
        vk = (pos >= 0) & (pos < shape[k])
        target = (vk[:, :, None] & target[:, None, :]).reshape(nb, -1) if k else vk
    return target


def check_tile_coverage(tables: AccessTable | Sequence[AccessTable], *, replication: bool = False) -> CheckResult:
    """Per-tile coverage of one side's table (or chunks of it), every block with weight 1."""
    ts = as_tables(tables)
    acc = TileCoverage(ts[0], replication)  # type: ignore[arg-type]
    for t in ts:
        acc.add(t, ones(t))
    return acc.result()



class CoverageCheck(Check):
    name = "coverage"
    rule = "Every thread touches the right elements of its tile exactly once."
    definition = staticmethod(coverage_definition)

    def applies(self, side: SideModel) -> bool:
        return side.memory != "register"

    def accumulator(self, model: KernelModel, side: SideModel | None) -> TileCoverage:
        assert side is not None
        return TileCoverage(side, model.expect.replication)
