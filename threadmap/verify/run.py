"""The enumerative decision procedure: simulate blocks and feed the checks.

:func:`verify_model` runs every selected check of :data:`~threadmap.verify.check.CHECKS` on
one kernel model, in one of two ways:

* **enumerate**: every block is simulated, streamed in chunks of blocks small enough for the
  CPU caches; whole-grid coverage counts every element (:class:`GridEnumeration`).  Used by
  ``--exhaustive``, and by default when the grid is small or the tiling argument does not
  apply and enumerating is affordable.
* **tiling**: a constant number of representative blocks is simulated, whatever the grid's
  size (see :mod:`threadmap.verify.classes` and :mod:`threadmap.verify.grid_coverage`): per
  class of blocks its first block and a neighbour along each block coordinate, and per global
  side one block per residue of its tile's address modulo 128 for the address-dependent
  checks.  Each representative carries the number of blocks it stands for, so every count in
  the report is a whole-grid total, equal to what enumeration gives (tests compare the two on
  every spec they can enumerate).

When neither applies (the argument's premises fail and enumeration would exceed
``max_rows``), the counts of the simulated blocks are reported as ``partial``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from threadmap.model import CopyModel, KernelModel, SideModel
from threadmap.report.model import CheckResult, Finding, SpecRun, Totals
from threadmap.simulate.access import AccessTable
from threadmap.simulate.engine import Arena, Simulator, rows_per_block
from threadmap.spec.expr import BLOCK_NAMES
from threadmap.verify.aliasing import alias_findings
from threadmap.verify.blocks import attach_view
from threadmap.verify.catalogue import BY_ADDRESS, CATALOGUE, GRID, canonical
from threadmap.verify.check import CHECKS, Accumulator
from threadmap.verify.classes import BlockClasses, multiplicity
from threadmap.verify.coverage import TileCoverage
from threadmap.verify.dataflow import MAX_FINDINGS_PER_KIND as MAX_DATAFLOW_WITNESSES
from threadmap.verify.dataflow import Dataflow
from threadmap.verify.grid_coverage import (
    MAX_BITMAP_BYTES,
    MAX_SPARSE_ROWS,
    GridEnumeration,
    MaskedIndex,
    counts_by_tiling,
    grid_results,
    union_reached,
)
from threadmap.verify.homogeneity import first_difference
from threadmap.verify.predicates import Straddles
from threadmap.verify.util import first_active, in_bounds

#: default enumeration budget (rows of all stages): beyond it the tiling argument or partial counts
MAX_ROWS = 1 << 28
#: grids this small are always enumerated (cheaper than reasoning about them)
SMALL_ROWS = 1 << 18
#: rows of all stages in one chunk of the enumeration (a multiple of the simulator's chunk)
ENUM_ROWS = 1 << 20
#: peak bytes per access row of a chunk (its tables and the checks' temporaries), measured on
#: large MMA partitions; one block's rows are never split, so a block must fit the budget
BYTES_PER_ROW = 700
MAX_CHUNK_BYTES = 5 << 29

#: the order of one side's results: the catalogue's
SIDE_ORDER = tuple(n for n, e in CATALOGUE.items() if e.scope != "kernel")


class WorkTooLarge(ValueError):
    """A requested enumeration would need more memory than allowed (the message says how much)."""


@dataclass
class RunOptions:
    exhaustive: bool = False
    checks: frozenset[str] | None = None
    max_rows: int = MAX_ROWS
    progress: Callable[[int, int], None] | None = None


@dataclass
class _State:
    """Accumulators of one run."""

    side: dict[tuple[int, str, str], Accumulator] = field(default_factory=dict)
    kernel: dict[str, Accumulator] = field(default_factory=dict)
    grid: dict[tuple[int, str], GridEnumeration] = field(default_factory=dict)
    straddles: dict[tuple[int, str], Straddles] = field(default_factory=dict)
    masked: dict[tuple[int, str], MaskedIndex] = field(default_factory=dict)
    active: dict[tuple[int, str], int] = field(default_factory=dict)
    oob: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)
    simulated: set[int] = field(default_factory=set)


def _wanted(opts: RunOptions, name: str) -> bool:
    return opts.checks is None or name in opts.checks


def _accumulators(model: KernelModel, opts: RunOptions, perf_from_classes: bool) -> _State:
    st = _State()
    for side in model.sides():
        for name, check in CHECKS.items():
            if check.scope == "side" and _wanted(opts, name) and check.applies(side):
                st.side[(side.stage, side.which, name)] = check.accumulator(model, side)
    for name, check in CHECKS.items():
        if check.scope == "kernel" and _wanted(opts, name) and check.judges(model):
            st.kernel[name] = check.accumulator(model, None)
    return st


def _feed(st: _State, tables: list[Any], weights: np.ndarray, names: Iterable[str] | None = None,
          sides: set[tuple[int, str]] | None = None) -> None:
    """Add one chunk's tables to the accumulators (``names``: only these checks; ``sides``: only
    these stage sides)."""
    keep = None if names is None else set(names)
    for rec in tables:
        if isinstance(rec, str):
            continue
        for t in rec:
            if sides is not None and (t.stage, t.side) not in sides:
                continue
            for (stage, which, name), acc in st.side.items():
                if stage == t.stage and which == t.side and (keep is None or name in keep):
                    acc.add(t, weights)
    for name, acc in st.kernel.items():
        if keep is None or name in keep:
            acc.add(tables, weights)


def verify_model(model: KernelModel, opts: RunOptions | None = None) -> SpecRun:
    """Run the checks on ``model`` (see the module docstring)."""
    opts = opts or RunOptions()
    t0 = time.perf_counter()
    if not model.stages:  # a pipeline alone: only the checks that need no access tables
        results = [c.accumulator(model, None).result() for n, c in CHECKS.items()
                   if c.scope == "kernel" and not c.per_block and _wanted(opts, n) and c.judges(model)]
        return _report(model, results, 0, "enumerated", [], time.perf_counter() - t0)
    per_block = rows_per_block(model)
    if per_block * BYTES_PER_ROW > MAX_CHUNK_BYTES:
        raise WorkTooLarge(f"one CTA makes {per_block} accesses over all stages; its tables and checks need about "
                           f"{per_block * BYTES_PER_ROW / 2**30:.1f} GiB at once (limit "
                           f"{MAX_CHUNK_BYTES / 2**30:.1f} GiB): fewer values per thread or a smaller tile")
    sim = Simulator(model)
    total_rows = model.num_blocks * per_block
    grid_sides = [s for s in model.sides() if s.memory == "global"]
    bitmap = sum(int(np.prod(s.shape, dtype=np.int64)) for s in grid_sides) * (4 if model.expect.replication else 1)
    classes = None if opts.exhaustive else BlockClasses.of(model)
    notes: list[str] = []
    # the whole-grid counts: a byte per element, or (a tensor too large for that) the element
    # index of every global access, sorted
    grid_rows = model.num_blocks * sum(sim.plans[(s.stage, s.which)].perm.size for s in grid_sides)
    sparse = bitmap > MAX_BITMAP_BYTES
    countable = not sparse or grid_rows <= MAX_SPARSE_ROWS
    affordable = total_rows <= opts.max_rows and countable
    if opts.exhaustive:
        if not countable:
            raise WorkTooLarge(f"--exhaustive counts every element of the global tensors: {bitmap} bytes "
                               f"(about {bitmap / 2**30:.1f} GiB, limit {MAX_BITMAP_BYTES / 2**30:.0f} GiB), "
                               f"or the element of each of their {grid_rows} accesses (limit {MAX_SPARSE_ROWS}); "
                               "the default mode proves the interior by tiling instead")
        results, simulated, totals = _enumerate(model, sim, opts, sparse=sparse)
    elif classes is None or total_rows <= SMALL_ROWS:
        if affordable:
            results, simulated, totals = _enumerate(model, sim, opts, sparse=sparse)
            if classes is None:
                notes.append("the tiling argument does not apply (a tile coordinate is not an affine function "
                             "of one block coordinate): every block simulated")
        else:
            results, simulated, totals = _partial(model, sim, opts, notes)
    else:
        results, simulated, totals, fallback = _tiling(model, sim, classes, opts, notes)
        if fallback:
            if affordable:
                notes.append(f"the tiling argument does not hold ({fallback}): every block simulated")
                results, simulated, totals = _enumerate(model, sim, opts, sparse=sparse)
            else:
                notes.append(f"the tiling argument does not hold ({fallback})")
                results, simulated, totals = _partial(model, sim, opts, notes)
    return _report(model, results, simulated, totals, notes, time.perf_counter() - t0)


# ----------------------------------------------------------------------------- enumeration


def _enumerate(model: KernelModel, sim: Simulator, opts: RunOptions, blocks: np.ndarray | None = None,
               sparse: bool = False) -> tuple[list[CheckResult], int, Totals]:
    st = _accumulators(model, opts, False)
    want_grid = any(_wanted(opts, n) for n in GRID)
    outputs = _output_sides(model) if "dataflow" in st.kernel else set()
    everything = blocks is None
    for side in model.sides():
        if side.memory == "global" and (want_grid or (side.stage, side.which) in outputs):
            st.grid[(side.stage, side.which)] = GridEnumeration(side, model.expect.replication, sparse=sparse,
                                                                 partial=not everything)
    blocks = np.arange(model.num_blocks, dtype=np.int64) if blocks is None else blocks
    # chunks of whole multiples of the cache-sized chunk: fewer, larger steps (the per-chunk
    # cost is mostly per block); coverage's replication groups stay the cache-sized chunks
    legacy = sim.blocks_per_chunk()
    for acc in st.side.values():
        if isinstance(acc, TileCoverage):
            acc.group = legacy
    chunks = list(sim.chunks(blocks, legacy * max(1, ENUM_ROWS // max(1, legacy * sim.rows_per_block()))
                             * sim.rows_per_block()))
    arena = Arena()  # each chunk's tables are dropped before the next is simulated
    for ci, ch in enumerate(chunks):
        tables = sim.tables(ch, arena)
        _attach(tables)
        w = np.ones(ch.size, dtype=np.int64)
        _feed(st, tables, w)
        for rec in tables:
            if isinstance(rec, str):
                continue
            for t in rec:
                g = st.grid.get((t.stage, t.side))
                if g is not None:
                    g.add(t, w)
        if opts.progress:
            opts.progress(ci + 1, len(chunks))
    results = _collect(model, st, sim, everything, blocks, opts)
    totals: Totals = "enumerated" if everything else "partial"
    return results, int(blocks.size), totals


def _first_accessor(model: KernelModel, sim: Simulator, side: SideModel) -> Callable[..., Any]:
    """``first(coord, before_block)``: the first active access of ``coord`` on ``side`` in a
    block before ``before_block`` (searching blocks in order; used for pair witnesses)."""
    cp = model.stages[side.stage]
    assert isinstance(cp, CopyModel)

    def first(coord: tuple[int, ...], before: int) -> dict[str, Any] | None:
        return first_active(sim, cp, side, np.arange(before + 1, dtype=np.int64), coord)
    return first


def _attach(tables: list[Any]) -> None:
    """Let the checks share each table's per-block analysis (the tables are final here)."""
    for rec in tables:
        if not isinstance(rec, str):
            for t in rec:
                attach_view(t)


def _side_chunks(model: KernelModel, sim: Simulator, side: SideModel, blocks: np.ndarray) -> Iterable[AccessTable]:
    """``side``'s tables for ``blocks`` again, in cache-sized chunks (witness passes)."""
    cp = model.stages[side.stage]
    assert isinstance(cp, CopyModel)
    for ch in sim.chunks(blocks):
        yield sim.stage_tables(cp, ch)[0 if side.which == "src" else 1]


def _collect(model: KernelModel, st: _State, sim: Simulator, everything: bool,
             blocks: np.ndarray, opts: RunOptions) -> list[CheckResult]:
    out: list[CheckResult] = []
    _deliver(model, st, st.grid)
    for side in model.sides():
        key = (side.stage, side.which)
        per: dict[str, list[CheckResult]] = {}
        for (stage, which, name), acc in st.side.items():
            if (stage, which) == key:
                per[name] = [acc.result()]
        g = st.grid.get(key)
        if g is not None:
            counts = g.counts()
            missing = g.missing(8)
            g.witness_duplicates(_side_chunks(model, sim, side, blocks))
            g.resolve_pairs(_first_accessor(model, sim, side))
            cov, pred = grid_results(side, counts, g.straddles, g.dup_findings, g.oob_witness, missing, g.masked,
                                     alias_findings(model, sim, side, counts.covered), model.expect.replication,
                                     _size_names(side))
            for r in (cov, pred):
                if _wanted(opts, r.check):
                    per[r.check] = [r]
        for name in SIDE_ORDER:
            out += per.get(name, [])
    for acc in st.kernel.values():
        out.append(acc.result())
    return out


# ----------------------------------------------------------------------------- tiling


def _tiling(model: KernelModel, sim: Simulator, classes: BlockClasses, opts: RunOptions,
            notes: list[str]) -> tuple[list[CheckResult], int, Totals, str | None]:
    st = _accumulators(model, opts, True)
    reps, wts, groups = classes.representatives()
    simulated = set(reps.tolist())
    unlike = first_difference(model, sim, groups)
    if unlike is not None:
        return [], len(simulated), "partial", unlike
    perf = BY_ADDRESS
    global_sides = {(s.stage, s.which) for s in model.sides() if s.memory == "global"}
    covers: dict[tuple[int, str], TileCoverage] = {}
    for side in model.sides():
        if side.memory == "global":
            key = (side.stage, side.which)
            st.straddles[key] = Straddles(side.shape)
            st.masked[key] = MaskedIndex(side.shape)
            st.active[key] = 0
            st.oob[key] = []
            acc = st.side.get((side.stage, side.which, "coverage"))
            covers[key] = acc if isinstance(acc, TileCoverage) else TileCoverage(side, model.expect.replication)
    for ch_ids, ch_w in _chunked(sim, reps, wts):
        tables = sim.tables(ch_ids)
        _attach(tables)
        # everything but the address-dependent checks of global sides
        _feed(st, tables, ch_w, names=[n for n in CHECKS if n not in perf])
        _feed(st, tables, ch_w, names=perf, sides={k for k in _all_sides(model) if k not in global_sides})
        for rec in tables:
            if isinstance(rec, str):
                continue
            for t in rec:
                key = (t.stage, t.side)
                if key not in global_sides:
                    continue
                if ("coverage" not in {n for (s, w, n) in st.side if (s, w) == key}):
                    covers[key].add(t, ch_w)
                st.straddles[key].add(t, ch_w)
                st.masked[key].add(t)
                st.active[key] += int((t.pred.reshape(ch_ids.size, -1).sum(axis=1) * ch_w).sum())
                oob = t.pred & ~_inb(t)
                for i in np.flatnonzero(oob)[:max(0, 8 - len(st.oob[key]))]:
                    st.oob[key].append(t.row(int(i)))
    # address-dependent checks of global sides: one block per residue of the tile address
    partial_perf = []
    for side in model.sides():
        key = (side.stage, side.which)
        if key not in global_sides:
            continue
        accs = {n: st.side[(side.stage, side.which, n)] for n in perf if (side.stage, side.which, n) in st.side}
        if not accs:
            continue
        rr = classes.residue_representatives(model, side)
        if rr is None:
            rr = (reps, wts)
            partial_perf.append(f"stage {side.stage} {side.which}")
        cp = model.stages[side.stage]
        assert isinstance(cp, CopyModel)
        for ch_ids, ch_w in _chunked(sim, rr[0], rr[1]):
            simulated.update(ch_ids.tolist())
            t = sim.stage_tables(cp, ch_ids)[0 if side.which == "src" else 1]
            attach_view(t)
            for acc in accs.values():
                acc.add(t, ch_w)
    # whole-grid coverage and predicates by the argument
    results: list[CheckResult] = []
    fallback = None
    grid_res: dict[tuple[int, str], list[CheckResult]] = {}
    want_grid = any(_wanted(opts, n) for n in GRID)
    outputs = _output_sides(model) if "dataflow" in st.kernel else set()
    if len(outputs) > 1:
        return [], len(simulated), "partial", ("several stages write the output: its delivery is the union of "
                                                "their elements")
    reached: dict[tuple[int, str], tuple[int, int, list[tuple[int, ...]]]] = {}
    for side in model.sides():
        key = (side.stage, side.which)
        if key not in global_sides or not (want_grid or key in outputs):
            continue
        tallies = covers[key].per_block
        if any(t.out_of_tile for t in tallies):
            fallback = f"stage {side.stage} {side.which} accesses elements outside its tile"
            break
        m, unused = multiplicity(model, side)
        counts = counts_by_tiling(side, tallies, m, model.expect.replication, st.active[key])
        dup: list[Finding] = []
        if (counts.dup_replicated if model.expect.replication else counts.counted - counts.covered) > 0:
            # pairs inside one block's tile (from the tile check), then across blocks
            dup = [f.model_copy(update={"check": "grid_coverage"}) for f in covers[key].findings["duplicate"][:4]]
            dup += _tiling_duplicate(model, sim, side, tallies, unused)
        missing = _tiling_missing(model, side, covers[key]) if counts.elements > counts.covered else []
        reached[key] = (counts.elements, counts.covered, missing)
        grid_res[key] = grid_results(side, counts, st.straddles[key], dup, st.oob[key], missing, st.masked[key],
                                     alias_findings(model, sim, side, counts.covered), model.expect.replication,
                                     _size_names(side))
    if partial_perf:
        notes.append("addresses of " + ", ".join(partial_perf) + " are not affine in the block coordinates: "
                     "their coalescing and vectorization counts cover the simulated blocks only")
    for side in model.sides():
        key = (side.stage, side.which)
        per = {n: [acc.result()] for (s, w, n), acc in st.side.items() if (s, w) == key}
        for r in grid_res.get(key, []):
            if _wanted(opts, r.check):
                per[r.check] = [r]
        for name in SIDE_ORDER:
            for r in per.get(name, []):
                if name in perf and f"stage {side.stage} {side.which}" in partial_perf:
                    r.totals = "partial"
                else:
                    r.totals = "tiling"
                results.append(r)
    if fallback is None:
        for out_key in outputs:
            df = st.kernel["dataflow"]
            assert isinstance(df, Dataflow)
            df.deliver(*reached[out_key], stage=out_key[0])
    for acc in st.kernel.values():
        r = acc.result()
        r.totals = "tiling"
        results.append(r)
    return results, len(simulated), "tiling", fallback


def _output_sides(model: KernelModel) -> set[tuple[int, str]]:
    """The global sides that write the declared transform's output (the dataflow check judges
    that every element of it is delivered)."""
    if not model.expect.transform or model.output is None:
        return set()
    return {(s.stage, s.which) for s in model.sides()
            if s.which == "dst" and s.memory == "global" and s.name == model.output}


def _deliver(model: KernelModel, st: _State, grids: dict[tuple[int, str], GridEnumeration]) -> None:
    """Tell the dataflow check which output elements the enumerated blocks reach (the union
    over the stages that write the output)."""
    df = st.kernel.get("dataflow")
    keys = [k for k in sorted(_output_sides(model)) if k in grids]
    if not isinstance(df, Dataflow) or not keys:
        return
    outs = [grids[k] for k in keys]
    if len(outs) == 1:
        g = outs[0]
        df.deliver(g.counts().elements, g.counts().covered, g.missing(MAX_DATAFLOW_WITNESSES), stage=keys[0][0])
        return
    df.deliver(*union_reached(outs, MAX_DATAFLOW_WITNESSES), stage=keys[-1][0])


def _size_names(side: SideModel) -> dict[int, str]:
    return dict(side.tensor.size_names) if side.tensor is not None else {}


def _all_sides(model: KernelModel) -> set[tuple[int, str]]:
    return {(s.stage, s.which) for s in model.sides()}


def _inb(t: AccessTable) -> np.ndarray:
    return in_bounds(t.coords, t.shape)


def _chunked(sim: Simulator, ids: np.ndarray, wts: np.ndarray) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    per = max(1, (1 << 17) // max(1, sim.rows_per_block()))
    for i in range(0, ids.size, per):
        yield ids[i:i + per], wts[i:i + per]


def _tiling_duplicate(model: KernelModel, sim: Simulator, side: SideModel, tallies: list[Any],
                      unused: list[str]) -> list[Finding]:
    """A pair witness of a cross-block duplicate: a represented block and its neighbour along a
    block coordinate the side's tile does not depend on (both access the same element)."""
    rep = next((t.block for t in tallies if t.accesses), None)
    if rep is None or not unused:
        return []
    gx, gy, _ = model.grid
    coords = {"bx": rep % gx, "by": (rep // gx) % gy, "bz": rep // (gx * gy)}
    v = unused[0]
    g = model.grid[BLOCK_NAMES.index(v)]
    coords[v] = coords[v] + 1 if coords[v] + 1 < g else coords[v] - 1
    other = coords["bx"] + gx * (coords["by"] + gy * coords["bz"])
    cp = model.stages[side.stage]
    assert isinstance(cp, CopyModel)
    ti = 0 if side.which == "src" else 1
    a = sim.stage_tables(cp, np.array([rep]))[ti]
    b = sim.stage_tables(cp, np.array([other]))[ti]
    rows = np.flatnonzero(a.pred & in_bounds(a.coords, a.shape))
    for i in rows[:256]:
        c = tuple(int(x[i]) for x in a.coords)
        hit = b.pred.copy()
        for x, y in zip(b.coords, c, strict=True):
            hit &= x == y
        j = np.flatnonzero(hit)
        if j.size:
            first, second = a.row(int(i)), b.row(int(j[0]))
            return [Finding(check="grid_coverage", kind="duplicate", stage=side.stage, side=side.which,
                            witness={"coordinate": c, "first": first, "second": second},
                            message=f"element {c} accessed by block {first['block']} thread {first['thread']} "
                                    f"value {first['value']} and block {second['block']} thread "
                                    f"{second['thread']} value {second['value']} (the tile does not depend on "
                                    f"{v}: {model.grid[BLOCK_NAMES.index(v)]} blocks share each tile)")]
    return []


def _tiling_missing(model: KernelModel, side: SideModel, cover: TileCoverage) -> list[tuple[int, ...]]:
    """Coordinates of elements no block covers: holes inside represented tiles, or tiles that
    no block's tile coordinate reaches."""
    out = [tuple(f.witness["coordinate"]) for f in cover.findings["missing"]]
    if side.at_affine is None:
        return out
    for k, form in enumerate(side.at_affine):
        T, E = side.tile[k], side.shape[k]
        need = -(-E // T)
        if form.coef:
            v, a = next(iter(form.coef.items()))
            g = model.grid[BLOCK_NAMES.index(v)]
        else:
            a, g = 1, 1  # a constant tile coordinate: one position
        for p in range(need):
            if not ((p - form.const) % a == 0 and 0 <= (p - form.const) // a < g):
                coord = tuple(p * T if i == k else 0 for i in range(len(side.tile)))
                out.append(coord)
                break
    return out


def _partial(model: KernelModel, sim: Simulator, opts: RunOptions,
             notes: list[str]) -> tuple[list[CheckResult], int, Totals]:
    from threadmap.simulate.engine import CHUNK_ROWS
    per = max(1, (4 * CHUNK_ROWS) // max(1, sim.rows_per_block()))
    blocks = np.arange(min(model.num_blocks, per), dtype=np.int64)
    notes.append(f"enumerating {model.num_blocks} blocks is beyond the budget: only the first {blocks.size} "
                 "were simulated and the counts are partial (grid coverage and predicates judge only the "
                 "elements those blocks reach: duplicates and out-of-bounds accesses among them, no element "
                 "counts as missing)")
    results, n, _ = _enumerate(model, sim, opts, blocks)
    for r in results:
        r.totals = "partial"
    return results, n, "partial"


# ----------------------------------------------------------------------------- report


def _report(model: KernelModel, results: list[CheckResult], simulated: int, totals: Totals, notes: list[str],
            seconds: float) -> SpecRun:
    for r in results:
        if r.stage is not None:
            r.line = model.stage_line(r.stage)
        if r.totals != "partial" and totals == "enumerated":
            r.totals = "enumerated"
    status = "fail" if any(r.status == "FAIL" for r in results) else "pass"
    failing = sorted({r.check for r in results if r.status == "FAIL"})
    exp = model.expect
    expected_fail = {canonical(c) for c in exp.failing_checks}
    as_expected = status == exp.verdict and expected_fail <= {canonical(c) for c in failing}
    spec = model.loaded.spec
    return SpecRun(spec=spec.name, path=str(model.loaded.path), sizes=dict(model.env), grid=model.grid,
                   blocks=model.num_blocks, blocks_simulated=simulated, totals=totals, verdict=status,
                   expected=exp.verdict, expected_failing=list(exp.failing_checks), failing=failing,
                   as_expected=as_expected, seconds=round(seconds, 3), results=results, notes=notes)
