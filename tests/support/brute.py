"""A brute-force oracle for the checks and the simulator (tests only; slow on purpose).

Everything here is written from the definitions in the modules' docstrings, one row, one
instruction, one thread or one tile at a time, in plain Python, with the executable
definitions as building blocks: :mod:`threadmap.hardware` (``sectors``, ``wavefronts``,
``bank_requests``, ``access_legal``, ``phases``) and the checks' ``*_definition`` functions
(``coverage_definition``, ``widest_vector_definition``, ``predicates_definition``,
``dataflow_definition``, and ``weakest_precondition``, which only spells a precondition).
Nothing is taken from the optimized enumerations (``threadmap.verify.*`` accumulators,
``threadmap.verify.blocks``, ``threadmap.simulate.engine``).

Two kinds of functions:

* ``*_summary(...)``: what a check's summary must say, computed from the rows.  A weighted
  block (the tiling mode feeds a block with a ``weight``: the blocks it stands for) counts
  ``weight`` times: the rows are taken ``weight`` times over.
* ``assert_*(result, ...)``: a check's :class:`~threadmap.report.model.CheckResult` equals the
  brute-force summary, and every witness it names (the "worst" instruction, a duplicate pair,
  a missing element, ...) is a real one: where the report makes a choice, the choice is
  verified rather than reproduced.

Conventions that are choices, not counts, and that the brute force fixes as the checks state
them: with ``replication`` the replication count of a group of blocks (each ``add`` of the
accumulator: a chunk) is the most common access count of its tile cells, the smallest on a
tie; the summary's is the most common over the groups (by blocks), the first group's on a tie.

:func:`simulate` evaluates a kernel model per row, straight from its definition (the side's
tile-local partition plus the tile origin, the tensor's layout per coordinate, the
predicate of the module docstring of :mod:`threadmap.simulate.engine`).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from math import prod
from typing import Any, NamedTuple

import numpy as np

from threadmap import hardware as hw
from threadmap.model import CopyModel, KernelModel, SideModel
from threadmap.report.model import MAX_FINDINGS, CheckResult
from threadmap.simulate.access import AccessTable
from threadmap.verify import (
    coverage_definition,
    dataflow_definition,
    predicates_definition,
    weakest_precondition,
    widest_vector_definition,
)

WARP = hw.WARP_SIZE


# ----------------------------------------------------------------------------- rows


class Row(NamedTuple):
    """One row of an access table, decoded from its index (instruction order
    ``(block, warp, step, lane, element)``)."""

    at: int              # row index in its table
    block: int
    thread: int
    value: int
    step: int
    lane: int
    element: int
    real: bool           # a thread of the CTA (not padding)
    coord: tuple[int, ...]
    pred: bool
    offset: int
    addr: int


@dataclass
class Block:
    """One block of one table: its rows in instruction order."""

    block: int
    weight: int
    origin: tuple[int, ...]
    rows: list[Row]
    chunk: int           # which chunk (table) it came from


@dataclass
class Side:
    """One side (one table or its chunks): the metadata and the blocks."""

    stage: int
    side: str
    tensor: str
    memory: str
    elem_bytes: int
    vec: int
    shape: tuple[int, ...]
    tile: tuple[int, ...]
    threads: int
    values: int
    buffer: str
    blocks: list[Block] = field(default_factory=list)
    memo: dict[str, Any] = field(default_factory=dict)   # what more than one check derives

    @property
    def access_bytes(self) -> int:
        return self.vec * self.elem_bytes

    @property
    def steps(self) -> int:
        return self.values // self.vec

    @property
    def warps(self) -> int:
        return -(-self.threads // WARP)

    def instructions(self, b: Block) -> Iterator[tuple[int, int, list[Row]]]:
        """``(warp, step, rows)`` of every warp instruction of ``b``: ``32 * vec`` rows."""
        n = WARP * self.vec
        for i in range(len(b.rows) // n):
            yield i // self.steps, i % self.steps, b.rows[i * n:(i + 1) * n]

    def accesses(self, b: Block) -> Iterator[list[Row]]:
        """Every vector access of ``b``: ``vec`` consecutive rows (one thread)."""
        for i in range(0, len(b.rows), self.vec):
            yield b.rows[i:i + self.vec]

    def threads_of(self, b: Block) -> dict[int, list[Row]]:
        """Per real thread, its rows in value order."""
        out: dict[int, list[Row]] = {}
        for r in b.rows:
            if r.real:
                out.setdefault(r.thread, []).append(r)
        for rows in out.values():
            rows.sort(key=lambda r: r.value)
        return out

    def row_of(self) -> dict[tuple[int, int, int], Row]:
        """(block, thread, value) -> the row of a real thread."""
        if "row_of" not in self.memo:
            self.memo["row_of"] = {(r.block, r.thread, r.value): r for b in self.blocks for r in b.rows if r.real}
        out: dict[tuple[int, int, int], Row] = self.memo["row_of"]
        return out


def side_of(tables: AccessTable | Sequence[AccessTable], weights: Sequence[int] | np.ndarray | None = None) -> Side:
    """The rows of one side's table (or consecutive chunks of it); ``weights``: one per block
    of all the chunks together (default 1)."""
    ts = [tables] if isinstance(tables, AccessTable) else list(tables)
    t0 = ts[0]
    s = Side(t0.stage, t0.side, t0.tensor, t0.memory, t0.elem_bytes, t0.vec, tuple(t0.shape), tuple(t0.tile),
             t0.threads, t0.values, t0.buffer or t0.tensor)
    nb_all = sum(t.blocks.size for t in ts)
    w = [1] * nb_all if weights is None else [int(x) for x in weights]
    assert len(w) == nb_all
    j = 0
    for ci, t in enumerate(ts):
        W, S, V = -(-t.threads // WARP), t.values // t.vec, t.vec
        pb = W * S * WARP * V
        assert len(t) == t.blocks.size * pb
        # one block's (thread, value, step, lane, element, real) per row, in instruction order
        tpl = [(warp * WARP + lane, step * V + k, step, lane, k, warp * WARP + lane < t.threads)
               for warp in range(W) for step in range(S) for lane in range(WARP) for k in range(V)]
        th, va, st, ln, el, real = (list(x) for x in zip(*tpl)) if tpl else ([], [], [], [], [], [])
        crd = list(zip(*[c.tolist() for c in t.coords])) if t.coords else [()] * len(t)
        pred, off, addr = t.pred.tolist(), t.offset.tolist(), t.addr.tolist()
        if t.valid is None:
            assert all(real), "a padded CTA has a valid mask"
        else:
            assert t.valid.tolist() == real * t.blocks.size, "valid marks exactly the rows of real threads"
        for b_ord, blk in enumerate(t.blocks.tolist()):
            lo, hi = b_ord * pb, (b_ord + 1) * pb
            rows = list(map(Row._make, zip(range(lo, hi), [blk] * pb, th, va, st, ln, el, real, crd[lo:hi],
                                           pred[lo:hi], off[lo:hi], addr[lo:hi])))
            org = tuple(int(x) for x in t.origins[b_ord]) if t.origins is not None else (0,) * len(t.coords)
            s.blocks.append(Block(int(blk), w[j], org, rows, ci))
            j += 1
    return s


def inside(c: Sequence[int], shape: Sequence[int]) -> bool:
    """``0 <= c < shape`` in every mode."""
    for x, e in zip(c, shape, strict=True):
        if not 0 <= x < e:
            return False
    return True


def colex_order(shape: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every coordinate of ``shape``, mode 0 fastest."""
    for c in itertools.product(*(range(e) for e in reversed(tuple(shape)))):
        yield tuple(reversed(c))


def row_matches(w: dict[str, Any], r: Row) -> bool:
    """A witness row dict (``AccessTable.row``) describes row ``r``."""
    return (w["block"] == r.block and w["thread"] == r.thread and w["value"] == r.value and w["step"] == r.step
            and w["element"] == r.element and w["warp_lane"] == r.lane and tuple(w["coordinate"]) == r.coord
            and w["offset"] == r.offset and w["address"] == r.addr and w["predicate"] == r.pred)


def lookup(s: Side, w: dict[str, Any], index: dict[tuple[int, int, int], Row] | None = None) -> Row:
    """The row a witness names (asserting every field it states)."""
    idx = index if index is not None else s.row_of()
    r = idx[(w["block"], w["thread"], w["value"])]
    assert row_matches(w, r), (w, r)
    return r


def dump(x: Any) -> Any:
    return x.model_dump(mode="json") if hasattr(x, "model_dump") else x


# ----------------------------------------------------------------------------- coalescing


def coalescing_instructions(s: Side) -> dict[tuple[int, int, int], hw.Sectors]:
    """Per active warp instruction ``(block, warp, step)``: the sector definition."""
    if "sectors" not in s.memo:
        out = {}
        for b in s.blocks:
            for warp, step, rows in s.instructions(b):
                act = [r.addr for r in rows if r.pred]
                if act:
                    out[(b.block, warp, step)] = hw.sectors(act, s.elem_bytes)
        s.memo["sectors"] = out
    sectors: dict[tuple[int, int, int], hw.Sectors] = s.memo["sectors"]
    return sectors


def legality(s: Side, b: Block) -> list[tuple[list[Row], bool]]:
    """Every vector access of ``b`` and whether it is contiguous and aligned."""
    memo = s.memo.setdefault("legal", {})
    if b.block not in memo:
        memo[b.block] = [(acc, hw.access_legal([r.addr for r in acc], s.elem_bytes)) for acc in s.accesses(b)]
    out: list[tuple[list[Row], bool]] = memo[b.block]
    return out


def misaligned(s: Side, b: Block) -> list[list[Row]]:
    """Vector accesses of ``b`` with an active element that are not contiguous and aligned."""
    return [acc for acc, ok in legality(s, b) if not ok and any(r.pred for r in acc)]


def coalescing_summary(s: Side) -> dict[str, Any]:
    tot = dict.fromkeys(("requests", "sectors", "ideal_sectors", "lines", "bytes", "misaligned"), 0)
    ins = coalescing_instructions(s)
    for b in s.blocks:
        one = dict.fromkeys(tot, 0)
        for warp, step, _ in s.instructions(b):
            sec = ins.get((b.block, warp, step))
            if sec is None:  # no active row: no request
                continue
            one["requests"] += 1
            one["sectors"] += sec.sectors
            one["ideal_sectors"] += sec.ideal
            one["lines"] += sec.lines
            one["bytes"] += sec.bytes
        one["misaligned"] = len(misaligned(s, b))
        for k, v in one.items():  # the block counts ``weight`` times
            tot[k] += v * b.weight
    req = max(tot["requests"], 1)
    return {"check": "coalescing", **tot, "sectors_per_request": tot["sectors"] / req,
            "ideal_sectors_per_request": tot["ideal_sectors"] / req,
            "ratio": tot["sectors"] / tot["ideal_sectors"] if tot["ideal_sectors"] else 1.0,
            "access_bits": s.access_bytes * 8}


def _worst(res: CheckResult, want: dict[str, Any], ins: dict[tuple[int, int, int], Any], excess: Any,
           s: Side) -> tuple[dict[str, Any], Any, list[Row]] | None:
    """The summary equals ``want``, and its ``worst`` names an instruction of ``ins`` with the
    largest ``excess``; returns (worst, that instruction, its active rows), None when none."""
    got = dump(res.summary)
    worst = got.pop("worst")
    assert got == want
    if not ins:
        assert worst is None
        return None
    assert worst is not None
    one = ins[(worst["block"], worst["warp"], worst["step"])]
    assert max(excess(x) for x in ins.values()) == excess(one)
    blk = next(b for b in s.blocks if b.block == worst["block"])
    rows = next(r for w, st, r in s.instructions(blk) if (w, st) == (worst["warp"], worst["step"]))
    return worst, one, [r for r in rows if r.pred]


def assert_coalescing(res: CheckResult, s: Side) -> None:
    # the worst instruction: an active one with the largest excess over the ideal
    want = coalescing_summary(s)
    found = _worst(res, want, coalescing_instructions(s), lambda x: x.sectors - x.ideal, s)
    worst = found[0] if found is not None else None
    if found is not None:
        worst, sec, act = found
        assert (worst["sectors"], worst["ideal"], worst["lines"], worst["bytes"]) == \
            (sec.sectors, sec.ideal, sec.lines, sec.bytes)
        assert worst["active_lanes"] == len({r.lane for r in act})
        assert [tuple(x) for x in worst["lane_addresses"]] == \
            sorted({(r.lane, r.addr) for r in act if r.element == 0})[:32]
        assert row_matches(worst["first"], act[0])
    idx = s.row_of()
    n_mis = 0
    for f in res.findings:
        if f.kind == "misaligned":
            r = lookup(s, f.witness, idx)
            blk = next(b for b in s.blocks if b.block == r.block)
            assert r.element == 0 and any(acc[0] == r for acc in misaligned(s, blk))
            n_mis += 1
        else:
            assert f.kind == "uncoalesced" and f.witness == res.summary["worst"] and worst is not None
            assert worst["sectors"] > worst["ideal"]
    assert (n_mis > 0) == (want["misaligned"] > 0) or len(res.findings) >= MAX_FINDINGS
    uncoalesced = worst is not None and worst["sectors"] > worst["ideal"]
    assert res.total_findings == want["misaligned"] + int(uncoalesced)
    assert res.status == ("FAIL" if want["misaligned"] else "PASS")


# ----------------------------------------------------------------------------- bank conflicts


def bank_instructions(s: Side) -> dict[tuple[int, int, int], hw.Wavefronts]:
    """Per active warp instruction ``(block, warp, step)``: the wavefront definition."""
    if "wavefronts" not in s.memo:
        out = {}
        for b in s.blocks:
            for warp, step, rows in s.instructions(b):
                lanes = [(r.lane, r.addr) for r in rows if r.pred]
                if lanes:
                    out[(b.block, warp, step)] = hw.wavefronts(lanes, s.elem_bytes, s.access_bytes)
        s.memo["wavefronts"] = out
    wf: dict[tuple[int, int, int], hw.Wavefronts] = s.memo["wavefronts"]
    return wf


def bank_summary(s: Side) -> dict[str, Any]:
    tot = dict.fromkeys(("instructions", "wavefronts", "ideal_wavefronts", "conflicted_instructions"), 0)
    most = 0
    ins = bank_instructions(s)
    for b in s.blocks:
        one = dict.fromkeys(tot, 0)
        for warp, step, _ in s.instructions(b):
            wf = ins.get((b.block, warp, step))
            if wf is None:  # no active row
                continue
            one["instructions"] += 1
            one["wavefronts"] += wf.wavefronts
            one["ideal_wavefronts"] += wf.ideal
            one["conflicted_instructions"] += wf.extra > 0
            most = max(most, wf.wavefronts)
        for k, v in one.items():  # the block counts ``weight`` times
            tot[k] += v * b.weight
    return {"check": "bank_conflicts", **tot, "extra_wavefronts": tot["wavefronts"] - tot["ideal_wavefronts"],
            "max_wavefronts": most, "phases": hw.phases(s.access_bytes), "access_bits": s.access_bytes * 8}


def assert_banks(res: CheckResult, s: Side) -> None:
    want = bank_summary(s)
    found = _worst(res, want, bank_instructions(s), lambda x: x.extra, s)
    worst = found[0] if found is not None else None
    if found is not None:
        worst, wf, act = found
        assert (worst["wavefronts"], worst["ideal"]) == (wf.wavefronts, wf.ideal)
        served = hw.bank_requests([(r.lane, r.addr) for r in act], s.elem_bytes, s.access_bytes)
        per_phase: dict[int, int] = {}
        for (p, _), words in served.items():
            per_phase[p] = max(per_phase.get(p, 0), len(words))
        # the phase named needs the most wavefronts, and its bank is one that serves the most words
        assert per_phase[worst["phase"]] == max(per_phase.values())
        words = served.get((worst["phase"], worst["bank"]), {})
        assert worst["distinct_words"] == len(words) == per_phase[worst["phase"]]
        assert sorted((d["warp_lane"], d["word"]) for d in worst["lanes"]) == \
            sorted((ln, wd) for wd, lanes in words.items() for ln in lanes)
    conflicted = worst is not None and worst["wavefronts"] > worst["ideal"]
    assert [f.kind for f in res.findings] == (["conflict"] if conflicted else [])
    assert res.total_findings == (want["conflicted_instructions"] if conflicted else 0)
    assert res.status == "PASS"


# ----------------------------------------------------------------------------- vectorize


def vectorize_summary(s: Side) -> dict[str, Any]:
    hist: Counter[int] = Counter()
    narrowest: int | None = None
    illegal = 0
    for b in s.blocks:
        per_thread = s.threads_of(b)
        bad = sum(1 for acc, ok in legality(s, b) if acc[0].real and not ok)
        for rows in per_thread.values():
            bits = widest_vector_definition([r.addr for r in rows], s.elem_bytes)
            hist[bits] += b.weight  # the block counts ``weight`` times
            narrowest = bits if narrowest is None else min(narrowest, bits)
        illegal += bad * b.weight
    return {"check": "vectorize", "declared_bits": s.access_bytes * 8, "declared_legal": illegal == 0,
            "max_legal_bits": narrowest or 0, "widest_histogram": {str(k): v for k, v in sorted(hist.items())},
            "illegal_accesses": illegal}


def assert_vectorize(res: CheckResult, s: Side) -> None:
    want = vectorize_summary(s)
    assert dump(res.summary) == want
    idx = s.row_of()
    narrow = 0
    for f in res.findings:
        r = lookup(s, f.witness, idx)
        blk = next(b for b in s.blocks if b.block == r.block)
        if f.kind == "illegal_vector":
            assert r.element == 0 and any(a[0] == r and not ok for a, ok in legality(s, blk))
        else:
            assert f.kind == "narrow" and f.severity == "info"
            narrow += 1
            # the witness thread allows exactly the narrowest width
            rows = s.threads_of(blk)[r.thread]
            assert r.value == 0 and widest_vector_definition([x.addr for x in rows], s.elem_bytes) == \
                f.witness["widest_bits"] == want["max_legal_bits"] > want["declared_bits"]
    assert narrow == int(want["illegal_accesses"] == 0 and want["max_legal_bits"] > want["declared_bits"])
    assert res.total_findings == want["illegal_accesses"] + narrow
    assert res.status == ("FAIL" if want["illegal_accesses"] else "PASS")


# ----------------------------------------------------------------------------- coverage (per tile)


@dataclass
class TileCount:
    """One block's tile (from :func:`coverage_definition`): per in-bounds tile cell its count,
    and the counted accesses outside the tile (in the tensor), outside the tensor with a true
    predicate, and outside it masked (a shared side counts masked rows: they make no access)."""

    block: Block
    cells: list[tuple[int, ...]]
    count: dict[tuple[int, ...], int]
    out_of_tile: list[Row]
    out_of_bounds: list[Row]
    masked: list[Row]

    @property
    def hist(self) -> Counter[int]:
        return Counter(c for c in self.count.values() if c > 0)


def tile_counts(s: Side, b: Block) -> TileCount:
    """The coverage definition on ``b``'s tile: counted rows are the active ones on a global
    side, every real thread's on a shared side."""
    box = [range(max(0, o), min(o + t, e)) for o, t, e in zip(b.origin, s.tile, s.shape, strict=True)]
    cells = list(itertools.product(*box))
    counted = [r for r in b.rows if (r.pred if s.memory != "shared" else r.real)]
    d = coverage_definition(((i, r.coord, True) for i, r in enumerate(counted)), cells)
    count = dict.fromkeys(cells, 1)
    for c in d["missing"]:
        count[c] = 0
    for c, ws in d["duplicates"]:
        count[c] = len(ws)
    outside = [counted[i] for i, _ in d["out_of_tile"]]
    return TileCount(b, cells, count, [r for r in outside if inside(r.coord, s.shape)],
                     [r for r in outside if not inside(r.coord, s.shape) and r.pred],
                     [r for r in outside if not inside(r.coord, s.shape) and not r.pred])


def _most_common(hist: Counter[int]) -> int:
    """The most common count (the smallest on a tie), 0 when none."""
    if not hist:
        return 0
    top = max(hist.values())
    return min(c for c, n in hist.items() if n == top)


def coverage_summary(s: Side, replication: bool) -> tuple[dict[str, Any], list[TileCount], dict[int, int]]:
    """The summary, every block's tile counts, and each block's replication count."""
    n = dict.fromkeys(("blocks", "elements", "accesses", "missing", "duplicate_cells", "duplicates",
                       "out_of_tile", "out_of_bounds", "masked"), 0)
    if "tiles" not in s.memo:
        s.memo["tiles"] = [tile_counts(s, b) for b in s.blocks]
    tiles = s.memo["tiles"]
    groups: dict[int, list[TileCount]] = {}
    for tc in tiles:
        groups.setdefault(tc.block.chunk, []).append(tc)
    rep: Counter[int] = Counter()   # insertion order: the first group first
    r_of: dict[int, int] = {}
    for g in groups.values():
        gh: Counter[int] = Counter()
        for tc in g:
            for c, cells in tc.hist.items():
                gh[c] += cells * tc.block.weight  # the block counts ``weight`` times
        r = _most_common(gh) if replication else 1
        rep[r] += sum(tc.block.weight for tc in g)
        for tc in g:
            r_of[tc.block.block] = r
            off = [c for c in tc.count.values() if c > 0 and c != r]
            one = {"blocks": 1, "elements": len(tc.cells), "accesses": sum(tc.count.values()),
                   "missing": sum(1 for c in tc.count.values() if c == 0), "duplicate_cells": len(off),
                   "duplicates": sum(abs(c - r) for c in off), "out_of_tile": len(tc.out_of_tile),
                   "out_of_bounds": len(tc.out_of_bounds), "masked": len(tc.masked)}
            for k, v in one.items():  # the block counts ``weight`` times
                n[k] += v * tc.block.weight
    r_all = max(rep, key=lambda k: rep[k]) if rep else (0 if replication else 1)
    return {"check": "coverage", **n, "tile": list(s.tile), "replication": r_all}, tiles, r_of


def assert_coverage(res: CheckResult, s: Side, replication: bool, per_block: Any = None) -> None:
    want, tiles, r_of = coverage_summary(s, replication)
    got = dump(res.summary)
    assert {**got, "tile": list(got["tile"])} == want
    if per_block is not None:
        assert [(p.block, p.weight, p.covered, p.accesses, p.out_of_tile, p.out_of_bounds, p.hist) for p in per_block] \
            == [(tc.block.block, tc.block.weight, sum(c > 0 for c in tc.count.values()), sum(tc.count.values()),
                 len(tc.out_of_tile), len(tc.out_of_bounds), dict(tc.hist) if replication else {}) for tc in tiles]
    by_block = {tc.block.block: tc for tc in tiles}
    idx = s.row_of()
    kinds: Counter[str] = Counter()
    for f in res.findings:
        kinds[f.kind] += 1
        w = f.witness
        if f.kind == "duplicate":
            tc = by_block[w["block"]]
            c = tuple(w["coordinate"])
            assert tc.count[c] == w["count"] and w["count"] != r_of[w["block"]] and w["count"] > 0
            for a in w["accesses"]:
                assert lookup(s, a, idx).coord == c
            assert len({(a["thread"], a["value"]) for a in w["accesses"]}) == min(4, w["count"])
        elif f.kind == "missing":
            assert by_block[w["block"]].count[tuple(w["coordinate"])] == 0
        elif f.kind == "out_of_tile":
            r = lookup(s, w, idx)
            assert r in by_block[r.block].out_of_tile and tuple(w["tile_origin"]) == by_block[r.block].block.origin
        elif f.kind == "masked":
            assert s.memory == "shared" and f.severity == "info"
            r = lookup(s, w, idx)
            assert r in by_block[r.block].masked
        else:
            assert f.kind == "out_of_bounds" and s.memory == "shared"
            r = lookup(s, w, idx)
            assert r in by_block[r.block].out_of_bounds
    shared = s.memory == "shared"
    totals = {"duplicate": want["duplicate_cells"], "missing": want["missing"], "out_of_tile": want["out_of_tile"],
              "out_of_bounds": want["out_of_bounds"] if shared else 0, "masked": want["masked"] if shared else 0}
    for k, v in totals.items():
        assert kinds[k] <= 8 and (kinds[k] > 0 or v == 0 or len(res.findings) >= MAX_FINDINGS), (k, kinds, totals)
    assert res.total_findings == sum(totals.values())
    # a masked row makes no access: it is shown, never a failure
    assert res.status == ("FAIL" if sum(totals.values()) - totals["masked"] else "PASS")


# ----------------------------------------------------------------------------- whole grid


@dataclass
class Grid:
    """Whole-grid counts of one global side (weights must be 1)."""

    shape: tuple[int, ...]
    count: Counter[tuple[int, ...]]   # active in-bounds accesses per element
    accesses: int
    out_of_bounds: list[Row]
    straddles: dict[str, int]
    residues: dict[tuple[int, int], set[int]]
    straddle_modes: set[int]          # modes with a straddling vector masked whole or enabled out of bounds
    masked: dict[tuple[int, ...], list[Row]]   # in-bounds real rows with a false predicate

    @property
    def elements(self) -> int:
        return prod(self.shape)

    def missing(self, k: int) -> list[tuple[int, ...]]:
        """The first ``k`` elements no active access reaches, in colexicographic order."""
        out: list[tuple[int, ...]] = []
        if k <= 0 or len(self.count) == self.elements:
            return out
        for c in colex_order(self.shape):
            if c not in self.count:
                out.append(c)
                if len(out) == k:
                    break
        return out


def along(acc: Sequence[Row]) -> int | None:
    """The mode a vector runs along: the mode of its first step when that step is one unit
    along one mode.  (The predicates docstring speaks of "a vector along mode i" without
    saying what a vector that turns is, e.g. ``(4, 63), (5, 0)`` at a tile row's end; the
    check judges by the first step, and so does this.)"""
    d = [b - a for a, b in zip(acc[0].coord, acc[1].coord, strict=True)]
    if sum(abs(x) for x in d) == 1 and 1 in d:
        return d.index(1)
    return None


def grid_of(s: Side) -> Grid:
    g = Grid(s.shape, Counter(), 0, [], dict.fromkeys(("straddling", "straddling_masked", "straddling_oob"), 0),
             {}, set(), {})
    k = s.vec
    for b in s.blocks:
        assert b.weight == 1
        for r in b.rows:
            if r.pred:
                g.accesses += 1
                if inside(r.coord, s.shape):
                    g.count[r.coord] += 1
                else:
                    g.out_of_bounds.append(r)
            elif r.real and inside(r.coord, s.shape):
                g.masked.setdefault(r.coord, []).append(r)
        if k <= 1:
            continue
        for acc in s.accesses(b):
            if not acc[0].real:
                continue
            i = along(acc)
            if i is None:
                continue
            g.residues.setdefault((i, k), set()).add(acc[0].coord[i] % k)
            inb = [inside(r.coord, s.shape) for r in acc]
            if not any(inb) or all(inb):
                continue
            g.straddles["straddling"] += 1
            lost = not any(r.pred for r in acc)
            oob = any(r.pred and not x for r, x in zip(acc, inb, strict=True))
            g.straddles["straddling_masked"] += lost
            g.straddles["straddling_oob"] += oob
            if lost or oob:
                g.straddle_modes.add(i)
    return g


def grid_summaries(g: Grid, replication: bool, size_names: dict[int, str] | None = None, aliased: int = 0
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    counted = sum(g.count.values())
    covered = len(g.count)
    if replication:
        r = _most_common(Counter(g.count.values()))
        dups = sum(1 for c in g.count.values() if c != r)
    else:
        r, dups = 1, counted - covered
    missing = g.elements - covered
    cov = {"check": "grid_coverage", "elements": g.elements, "accesses": g.accesses, "covered": covered,
           "missing": missing, "duplicates": dups, "out_of_bounds": len(g.out_of_bounds), "replication": r,
           "aliased": aliased}
    pre = []
    if missing or g.out_of_bounds:
        names = size_names or {}
        for (i, k), rs in sorted(g.residues.items()):
            if i not in g.straddle_modes:
                continue
            if len(rs) == 1:
                pre.append(weakest_precondition(i, k, next(iter(rs)), names))
            else:
                pre.append(f"no exact precondition: vectors along {names.get(i, f'extent[{i}]')} start at "
                           f"residues {sorted(rs)} mod {k}")
    prd = {"check": "predicates", "shape": list(g.shape), "out_of_bounds": len(g.out_of_bounds), "lost": missing,
           **g.straddles, "precondition": pre}
    return cov, prd


def check_definition(g: Grid, s: Side) -> None:
    """The counts agree with :func:`predicates_definition` (small tensors only: it lists every element)."""
    if g.elements > 1 << 13:
        return
    d = predicates_definition(((r.coord, r.pred) for b in s.blocks for r in b.rows if r.real), s.shape)
    assert len(d["out_of_bounds"]) == len(g.out_of_bounds)
    assert len(d["lost"]) == g.elements - len(g.count)
    assert sorted(d["lost"], key=lambda c: tuple(reversed(c)))[:8] == g.missing(8)


def assert_dup_finding(f: Any, s: Side, g: Grid, idx: dict[tuple[int, int, int], Row]) -> None:
    """A duplicate pair really accesses one element twice."""
    w = f.witness
    second = lookup(s, w["second"], idx)
    assert second.pred and tuple(w["coordinate"]) == second.coord and g.count[second.coord] >= 2
    if w["first"] is not None:
        first = lookup(s, w["first"], idx)
        assert first.pred and first.coord == second.coord and first != second


def assert_grid(results: list[CheckResult], s: Side, replication: bool = False,
                size_names: dict[int, str] | None = None) -> None:
    """``check_grid``'s ``[grid_coverage, predicates]`` results."""
    g = grid_of(s)
    check_definition(g, s)
    cov_want, pr_want = grid_summaries(g, replication, size_names)
    cov, pr = results
    assert dump(cov.summary) == cov_want
    assert dump(pr.summary) == pr_want
    idx = s.row_of()
    missing = g.missing(8)
    for f in cov.findings:
        if f.kind == "duplicate":
            assert_dup_finding(f, s, g, idx)
        else:
            assert f.kind == "missing" and tuple(f.witness["coordinate"]) in missing
            _assert_masked(f.witness["masked_access"], g, s, idx)
    assert [tuple(f.witness["coordinate"]) for f in cov.findings if f.kind == "missing"] == \
        missing[:len([f for f in cov.findings if f.kind == "missing"])]
    if cov_want["duplicates"] and not replication:
        assert any(f.kind == "duplicate" for f in cov.findings)
    assert cov.total_findings == cov_want["duplicates"] + cov_want["missing"]
    assert cov.status == ("FAIL" if cov.total_findings else "PASS")
    for f in pr.findings:
        if f.kind == "out_of_bounds":
            r = lookup(s, f.witness, idx)
            assert r.pred and not inside(r.coord, s.shape)
        elif f.kind == "lost":
            assert tuple(f.witness["coordinate"]) in missing
            _assert_masked(f.witness["masked_access"], g, s, idx)
        else:
            assert f.kind == "straddle"
            _assert_straddle(f.witness, s, idx)
    assert pr.total_findings == pr_want["out_of_bounds"] + pr_want["lost"]
    assert pr.status == ("FAIL" if pr.total_findings else "PASS")


def assert_grid_enumeration(acc: Any, s: Side, chunks: Sequence[AccessTable]) -> None:
    """A :class:`~threadmap.verify.grid_coverage.GridEnumeration` fed with ``chunks`` (the tables of
    ``s``): its counts, first missing elements, straddles, and its witnesses (out-of-bounds
    rows, duplicate pairs from a second pass over ``chunks``)."""
    g = grid_of(s)
    check_definition(g, s)
    c = acc.counts()
    counted, covered = sum(g.count.values()), len(g.count)
    r = _most_common(Counter(g.count.values())) if acc.replication else 1
    dup_rep = sum(1 for x in g.count.values() if x != r) if acc.replication else 0
    assert (c.elements, c.accesses, c.counted, c.covered, c.out_of_bounds, c.replication, c.dup_replicated) == \
        (g.elements, g.accesses, counted, covered, len(g.out_of_bounds), r, dup_rep)
    assert acc.missing(8) == g.missing(8)
    assert acc.straddles.n == g.straddles and acc.straddles.residues == g.residues
    idx = s.row_of()
    for w in acc.oob_witness:
        r0 = lookup(s, w, idx)
        assert r0.pred and not inside(r0.coord, s.shape)
    assert len(acc.oob_witness) == min(MAX_FINDINGS, len(g.out_of_bounds))
    acc.witness_duplicates(iter(chunks))
    for f in acc.dup_findings:
        assert_dup_finding(f, s, g, idx)
    for w in acc.pending_pairs:
        second = lookup(s, w, idx)
        assert second.pred and g.count[second.coord] >= 2
    if counted > covered and not acc.replication:
        assert acc.dup_findings or acc.pending_pairs


def _assert_masked(m: dict[str, Any] | None, g: Grid, s: Side, idx: dict[tuple[int, int, int], Row]) -> None:
    if m is not None:
        r = lookup(s, m, idx)
        assert r.real and not r.pred and inside(r.coord, s.shape)


def _assert_straddle(w: dict[str, Any], s: Side, idx: dict[tuple[int, int, int], Row]) -> None:
    """A straddle witness: a vector with in- and out-of-bounds elements, masked whole or
    enabled with an element outside."""
    rows = [lookup(s, e, idx) for e in w["elements"]]
    assert row_matches(w, rows[0]) if "block" in w else True
    inb = [inside(r.coord, s.shape) for r in rows]
    assert any(inb) and not all(inb)
    assert not any(r.pred for r in rows) or any(r.pred and not x for r, x in zip(rows, inb, strict=True))


# ----------------------------------------------------------------------------- dataflow


def dataflow_rows(s: Side) -> list[dict[str, Any]]:
    """One side's real rows as :func:`dataflow_definition` takes them.  A global read outside its
    tensor reads no element of it: the input's elements carry their coordinates "as their
    colexicographic index" (the dataflow docstring), which only the elements inside have; the
    definition function itself would carry any coordinate (see ``OUTSIDE``)."""
    return [{"block": r.block, "thread": r.thread, "value": r.value, "memory": s.memory,
             "tensor": OUTSIDE if s.memory == "global" and s.side == "src" and not inside(r.coord, s.shape)
             else s.tensor,
             "buffer": s.buffer, "elem_bytes": s.elem_bytes, "coord": r.coord, "addr": r.addr,
             "pred": r.pred} for b in s.blocks for r in b.rows if r.real]


#: the tensor name of a global access outside its tensor (no element: not the input's)
OUTSIDE = "<outside the tensor>"


def dataflow_sides(stages: Sequence[Any]) -> list[tuple[Side, Side] | str]:
    """``"barrier"`` or ``(src, dst)``: tables, lists of chunks of the same blocks, or sides."""
    return [st if isinstance(st, str) else tuple(x if isinstance(x, Side) else side_of(x) for x in st)  # type: ignore[misc]
            for st in stages]


def dataflow_summary(stages: Sequence[Any], transform: str | None, input_name: str | None,
                     output_name: str | None) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """The dataflow summary (weights 1) and the definition's findings: the finding counts from
    :func:`dataflow_definition`, the moves counted per (block, thread, value) of a real thread
    whose both sides are performed, the output writes among them (with a transform)."""
    sides = dataflow_sides(stages)
    out_shape = next((tuple(st[1].shape) for st in sides if not isinstance(st, str) and st[1].memory == "global"
                      and st[1].tensor == output_name), None)
    d = dataflow_definition([st if isinstance(st, str) else (dataflow_rows(st[0]), dataflow_rows(st[1]))
                             for st in sides], transform, input_name or "", output_name or "", out_shape)
    moved = writes = 0
    for st in sides:
        if isinstance(st, str):
            continue
        src, dst = st
        dst_of = dst.row_of()
        for b in src.blocks:
            for r in b.rows:
                if not r.real:
                    continue
                q = dst_of[(r.block, r.thread, r.value)]
                if r.pred and q.pred:
                    moved += 1
                    writes += dst.memory == "global" and dst.tensor == output_name and bool(transform)
    copies = [st for st in sides if not isinstance(st, str)]
    return {"check": "dataflow", "stages": len(copies), "barriers": len(sides) - len(copies), "moved": moved,
            "output_writes": writes, "wrong_values": len(d["wrong"]), "races": len(d["races"]),
            "stale_reads": len(d["stale"]), "uninitialised_reads": len(d["uninit"]),
            "writes_after_reads": len(d["war"]),
            "missing": len(d["missing"]) if transform and out_shape is not None else None,
            "input": input_name, "output": output_name,
            "transform": transform}, d


def assert_dataflow(res: CheckResult, stages: Sequence[Any], transform: str | None, input_name: str | None,
                    output_name: str | None) -> None:
    """``stages``: ``"barrier"`` or ``(src, dst)``: tables, lists of chunks of the same blocks, or sides."""
    want, d = dataflow_summary(stages, transform, input_name, output_name)
    if res.summary.missing is None:  # an accumulator fed a sample of blocks does not judge delivery
        want["missing"] = None
    assert dump(res.summary) == want
    kinds: Counter[str] = Counter()
    for f in res.findings:
        w = f.witness
        kinds[f.kind] += 1
        if f.kind == "wrong_value":
            assert any((b, th, tuple(c)) == (w["block"], w["thread"], tuple(w["coordinate"]))
                       for b, th, c, _ in d["wrong"])
        elif f.kind == "race":
            assert any(k[0] == w["block"] and k[2] == w["byte"] for k in d["races"])
        elif f.kind == "stale_read":
            assert (w["block"], w["thread"], w["address"]) in d["stale"]
        elif f.kind == "uninitialised_read":
            assert (w["block"], w["thread"], w["address"]) in d["uninit"]
        elif f.kind == "missing":
            assert tuple(w["coordinate"]) in d["missing"]
        else:
            assert f.kind == "write_after_read" and (w["block"], w["thread"], w["address"]) in d["war"]
    if res.summary.missing is None:
        d["missing"] = []
    for kind, key in (("wrong_value", "wrong"), ("race", "races"), ("stale_read", "stale"),
                      ("uninitialised_read", "uninit"), ("write_after_read", "war"), ("missing", "missing")):
        assert kinds[kind] <= 5 and (kinds[kind] > 0) == bool(d[key]) or len(res.findings) >= MAX_FINDINGS, kind
    total = sum(len(d[k]) for k in ("wrong", "races", "stale", "uninit", "war", "missing"))
    assert res.total_findings == total and res.status == ("FAIL" if total else "PASS")


# ----------------------------------------------------------------------------- the simulator


@dataclass
class SideRows:
    """One side of one copy stage for one block, per row in instruction order (padding rows:
    ``None`` coordinates, offsets and addresses; the model has no thread there)."""

    side: SideModel
    coords: list[tuple[int, ...] | None]
    pred: list[bool]
    offset: list[int | None]
    addr: list[int | None]
    valid: list[bool]
    origin: tuple[int, ...]


def origin(model: KernelModel, side: SideModel, block: int) -> tuple[int, ...]:
    """``at(b) * tile``: the side's tile coordinate expressions at the block's ``bx, by, bz``."""
    if side.at is None:
        return (0,) * len(side.tile)
    gx, gy, _ = model.grid
    env: dict[str, Any] = {**model.env, "bx": block % gx, "by": (block // gx) % gy, "bz": block // (gx * gy)}
    return tuple(int(e.apply(env)) * t for e, t in zip(side.at, side.tile, strict=True))


def _side_rows(model: KernelModel, side: SideModel, block: int, offsets: dict[tuple[int, ...], int]
               ) -> tuple[SideRows, list[list[bool]]]:
    """The rows of one side, and its vote on the predicate of every (thread, value): its access
    of that value is in bounds, per the stage's predicate kind (True on register sides).
    ``offsets``: the tensor's layout at the coordinates evaluated so far (threads that read one
    element, blocks that use one tile)."""
    part = side.partition
    T, V, vec = part.threads, part.values, side.vec
    tensor = side.tensor
    org = origin(model, side, block) if tensor is not None else ()
    rows = SideRows(side, [], [], [], [], [], org)
    cp = model.stages[side.stage]
    assert isinstance(cp, CopyModel)
    local: list[list[list[int]]] = part.coord.tolist()   # [thread][value] -> tile-local coordinate
    coord = [[tuple(c) if tensor is None else tuple(x + o for x, o in zip(c, org, strict=True)) for c in vals]
             for vals in local]
    vote = [[True] * V for _ in range(T)]
    if tensor is not None and cp.predicate != "none":
        for t in range(T):
            for first in range(0, V, vec):  # one access: values first .. first + vec - 1
                if cp.predicate == "vector":
                    ok = all(inside(coord[t][first + j], tensor.shape) for j in range(vec))
                else:  # bounds: the access's first element (the element itself when vec == 1)
                    ok = inside(coord[t][first], tensor.shape)
                for j in range(vec):
                    vote[t][first + j] = ok
    for warp in range(-(-T // WARP)):
        for step in range(V // vec):
            for lane in range(WARP):
                t = warp * WARP + lane
                for k in range(vec):
                    v = step * vec + k
                    rows.valid.append(t < T)
                    if t >= T:
                        rows.coords.append(None)
                        rows.offset.append(None)
                        rows.addr.append(None)
                        continue
                    c = coord[t][v]
                    rows.coords.append(c)
                    if tensor is None:
                        rows.offset.append(v)
                        rows.addr.append(v * side.elem_bytes)
                    else:
                        if c not in offsets:
                            offsets[c] = int(tensor.offsets(c))
                        off = offsets[c] + tensor.offset
                        rows.offset.append(off)
                        rows.addr.append(tensor.base + off * tensor.elem_bytes)
    return rows, vote


def simulate(model: KernelModel, blocks: Iterable[int]) -> dict[int, list[tuple[SideRows, SideRows] | str]]:
    """Every stage of every block of ``blocks``: per side its rows; a row is performed iff its
    thread is real and every memory side's vote on its (thread, value) is true."""
    layouts: dict[str, dict[tuple[int, ...], int]] = {}
    return {b: _simulate(model, b, layouts) for b in blocks}


def _simulate(model: KernelModel, block: int, layouts: dict[str, dict[tuple[int, ...], int]]
              ) -> list[tuple[SideRows, SideRows] | str]:
    out: list[tuple[SideRows, SideRows] | str] = []
    for st in model.stages:
        if not isinstance(st, CopyModel):
            out.append(st)
            continue
        (src, vs), (dst, vd) = (_side_rows(model, sd, block, layouts.setdefault(sd.name, {}))
                                for sd in (st.src, st.dst))
        for rows, sd in ((src, st.src), (dst, st.dst)):
            T, vec = sd.partition.threads, sd.vec
            for warp in range(-(-T // WARP)):
                for step in range(sd.partition.values // vec):
                    for lane in range(WARP):
                        t = warp * WARP + lane
                        for k in range(vec):
                            v = step * vec + k
                            rows.pred.append(t < T and vs[t][v] and vd[t][v])
        out.append((src, dst))
    return out


def assert_table_block(t: AccessTable, b_ord: int, want: SideRows, block: int) -> None:
    """Block ``b_ord`` of ``t`` is ``want`` row by row (padding rows: not performed, not valid)."""
    sd = want.side
    tensor = sd.tensor
    assert int(t.blocks[b_ord]) == block
    assert (t.stage, t.side, t.tensor, t.memory) == \
        (sd.stage, sd.which, sd.name, "register" if tensor is None else tensor.memory)
    assert (t.elem_bytes, t.vec, tuple(t.shape), t.threads, t.values, tuple(t.tile)) == \
        (sd.elem_bytes, sd.vec, tuple(sd.shape), sd.partition.threads, sd.partition.values, tuple(sd.tile))
    assert t.buffer == (sd.name if tensor is None else tensor.buffer)
    if tensor is None:
        assert t.origins is None
    else:
        assert t.origins is not None and tuple(int(x) for x in t.origins[b_ord]) == want.origin
    pb = t.per_block
    assert pb == len(want.pred)
    lo = b_ord * pb
    valid = [True] * pb if t.valid is None else t.valid[lo:lo + pb].tolist()
    assert (t.valid is None) == all(want.valid)
    assert valid == want.valid
    assert t.pred[lo:lo + pb].tolist() == want.pred
    # padding rows: whatever the table holds there
    crd = list(zip(*[c[lo:lo + pb].tolist() for c in t.coords]))
    assert [c if ok else None for c, ok in zip(crd, valid, strict=True)] == want.coords
    assert [x if ok else None for x, ok in zip(t.offset[lo:lo + pb].tolist(), valid, strict=True)] == want.offset
    assert [x if ok else None for x, ok in zip(t.addr[lo:lo + pb].tolist(), valid, strict=True)] == want.addr


def sample_blocks(model: KernelModel, rows_per_block: int, budget: int, seed: int = 0) -> list[int]:
    """Blocks to evaluate row by row: all of them when they fit ``budget`` rows, else (as many
    as fit, at least one) the corners of the grid, the last one first (the one most likely at
    the tensor's edges), then random ones."""
    nb = model.num_blocks
    room = max(1, budget // max(1, rows_per_block))
    if nb <= room:
        return list(range(nb))
    gx, gy, _ = model.grid
    first = [nb - 1, 0, gx - 1, (gy - 1) * gx, gx * gy - 1]
    out = list(dict.fromkeys(b for b in first if 0 <= b < nb))[:room]
    rng = np.random.default_rng(seed)
    rest = [int(b) for b in rng.permutation(nb) if int(b) not in out]
    return sorted(out + rest[:room - len(out)])


def tables_of_blocks(stages: Sequence[Any], blocks: Iterable[int]) -> Any:
    """The stage tables restricted to ``blocks`` (block ids present in them), in that order."""
    out: list[Any] = []
    for st in stages:
        if isinstance(st, str):
            out.append(st)
            continue
        pos = {int(b): i for i, b in enumerate(st[0].blocks.tolist())}
        ords = np.asarray([pos[b] for b in blocks], dtype=np.int64)
        out.append((st[0].select_blocks(ords), st[1].select_blocks(ords)))
    return out
