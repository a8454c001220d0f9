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
an edge block, shared elements that hold no data (not a coverage hole).  An active access
outside the shared tensor is a finding (``out_of_bounds``); outside a global tensor the
predicates check reports it.  A masked row (predicate false) outside the shared tensor performs
no access, so it is no defect: it is counted as ``masked`` and shown as an ``info`` finding
(the element it would have moved, if in bounds, is ``lost`` to the predicates check).

:func:`coverage_definition` is the executable definition (pure Python, one tile);
:class:`TileCoverage` the weighted enumeration.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from threadmap.model import KernelModel, SideModel
from threadmap.report.model import CheckResult, CoverageSummary, Finding
from threadmap.simulate.access import AccessTable
from threadmap.verify.blocks import Memo, per_block, view_of
from threadmap.verify.check import Accumulator, Check, check_tables, register
from threadmap.verify.util import colex, counted_rows, delinearize, in_bounds

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
    (in bounds) and active ones outside the tensor, and (with replication) cells per access count."""

    block: int
    weight: int
    covered: int
    accesses: int
    out_of_tile: int
    out_of_bounds: int
    hist: dict[int, int]


@dataclass
class _Matrices:
    """One table's per-block tile counts (``counts``: (nb, cells)) and row masks (nb, rows):
    ``oob`` counted rows outside the tensor with a true predicate, ``masked`` with a false one
    (only on shared sides, where masked rows are counted)."""

    counts: np.ndarray
    target: np.ndarray
    ok: np.ndarray
    key: np.ndarray
    oot: np.ndarray
    oob: np.ndarray
    masked: np.ndarray
    org: np.ndarray


def _matrices(t: AccessTable, tile: tuple[int, ...]) -> _Matrices:
    nb, pb = t.blocks.size, t.per_block
    tsize = int(np.prod(tile, dtype=np.int64))
    counted = counted_rows(t, structural=t.memory == "shared")
    org = t.origins if t.origins is not None else np.zeros((nb, t.rank), np.int64)
    R = t.rank
    local = [t.coords[k].reshape(nb, pb) - org[:, k, None] for k in range(R)]
    in_tile = np.ones((nb, pb), dtype=bool)
    for k in range(R):
        in_tile &= np.less(local[k].view(np.uint64), np.uint64(tile[k]))
    inb = in_bounds(t.coords, t.shape).reshape(nb, pb)
    cnt = counted.reshape(nb, pb)
    act = t.pred.reshape(nb, pb)
    ok = cnt & in_tile & inb
    cell = colex([np.where(in_tile, local[k], 0) for k in range(R)], tile)
    key = np.arange(nb, dtype=np.int64)[:, None] * tsize + cell
    counts = np.bincount(key[ok], minlength=nb * tsize).reshape(nb, tsize)
    target = _tile_cells_in_bounds(org, tile, t.shape)
    return _Matrices(counts, target, ok, key, cnt & ~in_tile & inb, cnt & ~inb & act, cnt & ~inb & ~act, org)


def tile_stats(t: AccessTable, tile: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Per block of ``t``: elements of its tile in the tensor, counted accesses in the tile,
    missing cells, accesses outside the tile (in bounds), active and masked ones outside the
    tensor, covered cells, and ``hist[:, c]``: the tile cells accessed exactly ``c >= 1`` times."""
    nb = t.blocks.size
    m = _matrices(t, tile)
    hit = m.target & (m.counts > 0)
    width = max(2, int(m.counts.max(initial=0)) + 1)
    hist = np.bincount((np.arange(nb, dtype=np.int64)[:, None] * width + m.counts)[hit],
                       minlength=nb * width).reshape(nb, width).astype(np.int64)
    return {"elements": m.target.sum(axis=1, dtype=np.int64), "accesses": m.ok.sum(axis=1, dtype=np.int64),
            "missing": (m.target & (m.counts == 0)).sum(axis=1, dtype=np.int64),
            "out_of_tile": m.oot.sum(axis=1, dtype=np.int64), "out_of_bounds": m.oob.sum(axis=1, dtype=np.int64),
            "masked": m.masked.sum(axis=1, dtype=np.int64), "covered": hit.sum(axis=1, dtype=np.int64), "hist": hist}


class TileCoverage(Accumulator):
    """Weighted per-tile coverage of one side.

    ``group``: blocks per group for the replication count (the most common count of a group's
    tile cells is its ``r``); None: each :meth:`add` is one group.  Groups are consecutive
    blocks in the order added (the driver sets it to its chunking of the blocks)."""

    def __init__(self, side: SideModel, replication: bool) -> None:
        self.side = side
        self.replication = replication
        self.tile = side.tile
        self.tsize = int(np.prod(self.tile, dtype=np.int64))
        self.n = {"blocks": 0, "elements": 0, "accesses": 0, "missing": 0, "duplicate_cells": 0,
                  "duplicates": 0, "out_of_tile": 0, "out_of_bounds": 0, "masked": 0}
        self.rep_hist: Counter[int] = Counter()
        self.findings: dict[str, list[Finding]] = {"duplicate": [], "missing": [], "out_of_tile": [],
                                                   "out_of_bounds": [], "masked": []}
        self.kind_total: Counter[str] = Counter()
        self.group: int | None = None
        self.seen = 0
        self.memo = Memo()
        self._tallies: list[dict[str, np.ndarray]] = []

    @property
    def per_block(self) -> list[BlockTally]:
        """Per added block, what the grid argument needs (see :class:`BlockTally`)."""
        out = []
        for a in self._tallies:
            for i in range(a["block"].size):
                hist = {int(c): int(a["hist"][i, c]) for c in np.flatnonzero(a["hist"][i])} \
                    if self.replication else {}
                out.append(BlockTally(int(a["block"][i]), int(a["weight"][i]), int(a["covered"][i]),
                                      int(a["accesses"][i]), int(a["out_of_tile"][i]), int(a["out_of_bounds"][i]),
                                      hist))
        return out

    def add(self, t: AccessTable, weights: np.ndarray) -> None:
        nb = t.blocks.size
        if nb == 0:
            return
        shared = t.memory == "shared"
        v = view_of(t)
        org = t.origins if t.origins is not None else np.zeros((nb, t.rank), np.int64)
        # blocks whose rows are the reference pattern at the same place in the tile, all inside
        # the tensor, all counted, with the whole tile inside the tensor: the reference's counts
        eligible = v.coords_ok & v.inside(t.shape) & (v.full if not shared else True)
        if v.vtpl is None or t.rank == 0:
            eligible = np.zeros(nb, dtype=bool)
        for k, tk in enumerate(self.tile):
            eligible &= (org[:, k] >= 0) & (org[:, k] + tk <= t.shape[k])
        self.memo.reset_unless((*[c.rel for c in v.coords], v.vtpl, shared))
        st = per_block(t, eligible, v.coords_start - org[:, :t.rank], self.memo,
                       lambda sub: tile_stats(sub, self.tile))
        w = np.asarray(weights, dtype=np.int64)
        hist = st["hist"]
        vals = np.arange(hist.shape[1])
        # replication groups: consecutive blocks in the order added
        g = self.group or nb
        gid = (self.seen + np.arange(nb)) // g if self.group else np.zeros(nb, dtype=np.int64)
        starts = np.flatnonzero(np.r_[True, gid[1:] != gid[:-1]])
        if self.replication:
            tot = np.add.reduceat(hist, starts, axis=0)
            tot[:, 0] = 0
            r_g = np.where(tot.any(axis=1), tot.argmax(axis=1), 0)
        else:
            r_g = np.ones(starts.size, dtype=np.int64)
        r_b = np.repeat(r_g, np.diff(np.r_[starts, nb]))
        off = (vals[None, :] > 0) & (vals[None, :] != r_b[:, None])
        bad = (hist * off).sum(axis=1)
        ndup = (hist * np.where(off, np.abs(vals[None, :] - r_b[:, None]), 0)).sum(axis=1)
        per = {"elements": st["elements"], "accesses": st["accesses"], "missing": st["missing"],
               "duplicate_cells": bad, "duplicates": ndup, "out_of_tile": st["out_of_tile"],
               "out_of_bounds": st["out_of_bounds"], "masked": st["masked"]}
        self.n["blocks"] += int(w.sum())
        for name, x in per.items():
            self.n[name] += int((x * w).sum())
        wg = np.add.reduceat(w, starts)
        for r, x in zip(r_g.tolist(), wg.tolist()):
            self.rep_hist[int(r)] += int(x)
        kinds = {"duplicate": bad, "missing": per["missing"], "out_of_tile": per["out_of_tile"]}
        if shared:
            kinds["out_of_bounds"] = per["out_of_bounds"]
            kinds["masked"] = per["masked"]
        want = False
        for kind, cnt in kinds.items():
            self.kind_total[kind] += int((cnt * w).sum())
            want |= KIND_CAP > len(self.findings[kind]) and bool(cnt.any())
        if want:
            for i0, i1, r in zip(starts.tolist(), np.r_[starts[1:], nb].tolist(), r_g.tolist()):
                self._witnesses(t, {k: v[i0:i1] for k, v in kinds.items()}, i0, int(r), shared)
        self.seen = self.seen + nb if self.group else 0
        self._tallies.append({"block": t.blocks.copy(), "weight": w, "covered": st["covered"],
                              "accesses": st["accesses"], "out_of_tile": st["out_of_tile"],
                              "out_of_bounds": st["out_of_bounds"], "hist": hist})

    def _witnesses(self, t: AccessTable, kinds: dict[str, np.ndarray], i0: int, r: int, shared: bool) -> None:
        """Witnesses of one group (its blocks start at ``i0`` in ``t``), in block order, from the
        first blocks that have each kind."""
        pick: set[int] = set()
        for kind, cnt in kinds.items():
            room = KIND_CAP - len(self.findings[kind])
            if room > 0:
                pick.update(int(b) for b in np.flatnonzero(cnt)[:room])
        if pick:
            sub = t.select_blocks(np.asarray(sorted(pick), dtype=np.int64) + i0)
            m = _matrices(sub, self.tile)
            if self.replication:
                mbad = m.target & (m.counts != r) & (m.counts > 0)
            else:
                mbad = m.counts > 1
            self._witness(sub, m.counts, mbad, m.target & (m.counts == 0), m, r, shared)

    def _witness(self, t: AccessTable, counts: np.ndarray, bad: np.ndarray, missing: np.ndarray,
                 m: _Matrices, r: int, shared: bool) -> None:
        key, ok, org, oot = m.key, m.ok, m.org, m.oot
        pb = t.per_block
        st, sd = t.stage, t.side
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
            for i in np.flatnonzero(m.oob.reshape(-1))[:max(0, room)]:
                wt = t.row(int(i))
                self.findings["out_of_bounds"].append(Finding(
                    check="coverage", kind="out_of_bounds", stage=st, side=sd, witness=wt,
                    message=f"thread {wt['thread']} value {wt['value']} accesses {t.tensor}"
                            f"{wt['coordinate']}, outside the shared tensor of shape {t.shape} "
                            f"(byte address {wt['address']})"))
            # a masked row performs no access: shown, never a defect
            room = KIND_CAP - len(self.findings["masked"])
            for i in np.flatnonzero(m.masked.reshape(-1))[:max(0, room)]:
                wt = t.row(int(i))
                self.findings["masked"].append(Finding(
                    check="coverage", kind="masked", stage=st, side=sd, witness=wt, severity="info",
                    message=f"block {wt['block']} thread {wt['thread']} value {wt['value']} is masked "
                            f"(predicate false) at {t.tensor}{wt['coordinate']}, outside the shared tensor "
                            f"of shape {t.shape}: no access"))

    def result(self) -> CheckResult:
        r = self.rep_hist.most_common(1)[0][0] if self.rep_hist else (0 if self.replication else 1)
        res = CheckResult(check="coverage", stage=self.side.stage, side=self.side.which, status="PASS",
                          summary=CoverageSummary(tile=self.tile, replication=r, **self.n))
        for kind, fs in self.findings.items():
            for f in fs:
                res.add(f, 0)
            res.total_findings += self.kind_total[kind]
        if any(self.kind_total[kind] for kind in self.findings if kind != "masked"):
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
    return check_tables("coverage", tables, lambda t: TileCoverage(t, replication))  # type: ignore[arg-type]


@register
class CoverageCheck(Check):
    name = "coverage"
    definition = staticmethod(coverage_definition)
    memories = ("global", "shared")

    def accumulator(self, model: KernelModel, side: SideModel | None) -> TileCoverage:
        assert side is not None
        return TileCoverage(side, model.expect.replication)
