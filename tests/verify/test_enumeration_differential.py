"""The per-block enumerations (memoized patterns, per-block statistics, the simulator's stated
patterns, reused buffers) give exactly what a brute force computes row by row.

Oracle: ``tests/support/brute.py``, an independent pure-Python evaluation of every check's summary
(per row, per instruction, per thread, per tile) from the definitions and the
:mod:`threadmap.hardware` primitives, which also verifies every witness a report names, and
a per-row evaluation of the simulator straight from the kernel model.  Tables are random but
reproducible (seeded): several blocks that repeat one pattern (so the memoized paths run)
mixed with blocks that break it, edge blocks, padding warps (threads not a multiple of 32),
masked lanes, vectors of 1/2/4/8 elements of 1/2/4/8 bytes, misaligned bases,
row/column/swizzled layouts, chunked input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import threadmap.api as api
from tests.support import brute
from threadmap.simulate.access import AccessTable
from threadmap.simulate.engine import Arena, Simulator
from threadmap.spec.load import iter_spec_files
from threadmap.verify import (
    build_table,
    check_bank_conflicts,
    check_coalescing,
    check_dataflow,
    check_grid,
    check_tile_coverage,
    check_vectorize,
    register_table,
)
from threadmap.verify.banks import BankConflicts
from threadmap.verify.blocks import BlockView, attach_view
from threadmap.verify.coalescing import Coalescing
from threadmap.verify.coverage import TileCoverage
from threadmap.verify.dataflow import Dataflow
from threadmap.verify.grid_coverage import GridEnumeration
from threadmap.verify.vectorize import Vectorize

SPECS = Path(__file__).resolve().parents[2] / "specs"
SEEDS = range(120)


def dump(r: Any) -> Any:
    return r.model_dump(mode="json")


def chunked(t: AccessTable, rng: np.random.Generator) -> list[AccessTable]:
    """``t`` as one table, or cut into consecutive chunks of blocks."""
    nb = t.blocks.size
    if nb < 2 or rng.random() < 0.4:
        return [t]
    cuts = sorted(set(rng.integers(1, nb, size=int(rng.integers(1, 3))).tolist()))
    bounds = [0, *cuts, nb]
    return [t.select_blocks(np.arange(a, b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def random_table(rng: np.random.Generator, memory: str = "global", **over: Any) -> AccessTable:
    """A random side: blocks on a grid of tiles, most repeating one tile-local map, some not."""
    threads = int(rng.choice([32, 48, 64, 100, 128]))
    vec = int(rng.choice([1, 2, 4, 8]))
    steps = int(rng.choice([1, 2]))
    e = int(rng.choice([1, 2, 4, 8]))
    V = steps * vec
    TM, TN = [(4, 16), (8, 8), (16, 16), (2, 64), (16, 8)][int(rng.integers(5))]
    gx, gy = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    nb = gx * gy
    shape = (gx * TM - int(rng.integers(0, 3)) * int(rng.random() < 0.5),
             gy * TN - int(rng.integers(0, 5)) * int(rng.random() < 0.5))
    tsize = TM * TN
    kind = int(rng.integers(4))
    perm = rng.permutation(tsize)
    a = int(rng.choice([1, 3, 5, 7]))
    odd = set(rng.choice(nb, size=int(rng.integers(0, 2)), replace=False).tolist()) if nb > 1 else set()
    shift = int(rng.integers(1, 5))

    def local(t: np.ndarray, s: np.ndarray, k: np.ndarray) -> np.ndarray:
        v = s * vec + k
        if kind == 0:    # contiguous vectors along rows
            cell = t * V + v
        elif kind == 1:  # thread-major columns
            cell = v * threads + t
        elif kind == 2:  # a permutation
            cell = perm[(t * V + v) % tsize]
        else:            # an odd stride (duplicates when it wraps)
            cell = (a * (t * V + v)) % tsize
        return np.asarray(cell) % tsize

    shared = memory == "shared"

    def fn(b: np.ndarray, t: np.ndarray, s: np.ndarray, k: np.ndarray) -> tuple[Any, ...]:
        cell = local(t, s, k)
        bb = np.broadcast_to(b, np.broadcast(b, t, s, k).shape)
        cell = np.where(np.isin(bb, list(odd)), (cell + shift) % tsize, cell)  # blocks off the pattern
        i, j = cell // TN, cell % TN
        if shared:
            return (i, j)
        return (i + (bb % gx) * TM, j + (bb // gx) * TN)

    lay: Any = "row" if rng.random() < 0.6 else "col"
    if rng.random() < 0.2:
        lay = lambda c, W=shape[1]: c[0] * W + (c[1] ^ (c[0] % 8))  # noqa: E731  (an xor swizzle)
    pred: Any = str(rng.choice(["none", "bounds", "vector_all", "vector_first"]))
    if rng.random() < 0.2:
        mask_block = int(rng.integers(nb))
        pred = lambda b, t, s, k: ~((b == mask_block) & (t % 7 == 3))  # noqa: E731
    base = int(rng.choice([0, 0, 256, 2, 4, 16, 100]))
    kw: dict[str, Any] = dict(threads=threads, steps=steps, vec=vec, shape=(TM, TN) if shared else shape,
                              blocks=nb, memory=memory, elem_bytes=e, layout=lay, base=base, pred=pred,
                              tile=(TM, TN))
    if not shared:
        kw["tile_origin"] = lambda ids: np.stack([(ids % gx) * TM, (ids // gx) * TN], axis=1)
    kw.update(over)
    return build_table(fn, **kw)


# ----------------------------------------------------------------------------- side checks


@pytest.mark.parametrize("seed", SEEDS)
def test_side_checks_match_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for memory in ("global", "shared"):
        t = random_table(rng, memory)
        ts = chunked(t, rng)
        s = brute.side_of(ts)
        if memory == "global":
            brute.assert_coalescing(check_coalescing(ts), s)
            brute.assert_grid(check_grid(ts), s)
        else:
            brute.assert_banks(check_bank_conflicts(ts), s)
        brute.assert_vectorize(check_vectorize(ts), s)
        for rep in (False, True):
            brute.assert_coverage(check_tile_coverage(ts, replication=rep), s, rep)


@pytest.mark.parametrize("seed", range(40))
def test_memoized_blocks_are_verified(seed: int) -> None:
    """Tables not built by the simulator are analysed row by row: a block is said to follow the
    reference only where every row is the reference plus the block's shift."""
    rng = np.random.default_rng(1000 + seed)
    t = random_table(rng, "global")
    v = BlockView(t)
    assert v.pattern is None
    for s in (v.addr, *v.coords):
        x2 = s.start[:, None] + s.rel[None, :]
        ref = t.addr if s is v.addr else t.coords[v.coords.index(s)]
        assert np.array_equal(x2[s.ok], ref.reshape(v.nb, v.pb)[s.ok])


def test_memo_paths_are_exercised() -> None:
    """Blocks repeating one pattern take the memoized statistics (one reference per pattern) and
    still agree with the row-by-row enumeration."""
    def fn(b: np.ndarray, t: np.ndarray, s: np.ndarray, k: np.ndarray) -> tuple[Any, ...]:
        return ((b % 4) * 8 + t // 8, (b // 4) * 32 + (t % 8) * 4 + k)
    t = build_table(fn, threads=64, steps=1, vec=4, shape=(32, 64), blocks=8, tile=(8, 32),
                    tile_origin=lambda ids: np.stack([(ids % 4) * 8, (ids // 4) * 32], axis=1))
    attach_view(t)
    w = np.ones(8, dtype=np.int64)
    cov = TileCoverage(t, False)  # type: ignore[arg-type]
    accs = [Coalescing(t, None), Vectorize(t, None), cov]  # type: ignore[arg-type]
    for acc in accs:
        acc.add(t, w)
        assert len(acc.memo.store) >= 1
    s = brute.side_of(t)
    brute.assert_coalescing(accs[0].result(), s)
    brute.assert_vectorize(accs[1].result(), s)
    brute.assert_coverage(cov.result(), s, False, cov.per_block)
    g = GridEnumeration(t, False)
    g.add(t, w)
    assert g.counts().covered == 32 * 64


# ----------------------------------------------------------------------------- weighted accumulators


ASSERT: dict[type, Any] = {Coalescing: brute.assert_coalescing, Vectorize: brute.assert_vectorize,
                           BankConflicts: brute.assert_banks}


@pytest.mark.parametrize("seed", range(30))
def test_weighted_accumulators_match_brute_force(seed: int) -> None:
    """The tiling mode feeds blocks with weights: the totals of every block taken ``weight``
    times."""
    rng = np.random.default_rng(2000 + seed)
    g = random_table(rng, "global")
    s = random_table(rng, "shared")
    for t, accs in ((g, [(Coalescing, (None,)), (Vectorize, (None,)), (TileCoverage, (False,))]),
                    (s, [(BankConflicts, (None,)), (Vectorize, (None,)), (TileCoverage, (True,))])):
        w = rng.integers(1, 50, size=t.blocks.size)
        whole = brute.side_of(t, w)
        for cls, args in accs:
            a = cls(t, *args)
            chs = chunked(t, rng)
            for ch in chs:
                lo = int(np.searchsorted(t.blocks, ch.blocks[0]))
                a.add(ch, w[lo:lo + ch.blocks.size])
            if isinstance(a, TileCoverage):  # its replication groups are the chunks
                brute.assert_coverage(a.result(), brute.side_of(chs, w), a.replication, a.per_block)
            else:
                ASSERT[cls](a.result(), whole)


# ----------------------------------------------------------------------------- dataflow


def _stages(rng: np.random.Generator) -> tuple[list[Any], bool]:
    """A random global -> (registers ->) shared -> barrier? -> shared -> global kernel."""
    threads = int(rng.choice([32, 64, 48, 96]))
    T = 8
    nb = int(rng.integers(1, 6))
    gx = 2
    M, N = 2 * T, ((nb + 1) // 2) * T
    steps = (T * T) // threads if (T * T) % threads == 0 else 1
    e = int(rng.choice([1, 2, 4]))
    bad_block = int(rng.integers(nb)) if rng.random() < 0.4 else -1

    def cell(t: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = (t * steps + s) % (T * T)
        return c // T, c % T

    def gin(b: np.ndarray, t: np.ndarray, s: np.ndarray, k: np.ndarray) -> tuple[Any, ...]:
        i, j = cell(t, s)
        return ((b % gx) * T + i, (b // gx) * T + j)

    def gout(b: np.ndarray, t: np.ndarray, s: np.ndarray, k: np.ndarray) -> tuple[Any, ...]:
        i, j = cell(t, s)
        wrong = (b == bad_block) & (t == 1)
        return ((b // gx) * T + j, (b % gx) * T + np.where(wrong, (i + 1) % T, i))

    sm_w = (lambda b, t, s, k: cell(t, s)) if rng.random() < 0.7 else \
        (lambda b, t, s, k: (cell(t, s)[0] // 2, cell(t, s)[1]))  # a race
    sm_r = lambda b, t, s, k: tuple(reversed(cell(t, s)))  # noqa: E731
    common = dict(threads=threads, steps=steps, blocks=nb, elem_bytes=e)
    x = build_table(gin, shape=(M, N), tensor="x", **common)  # type: ignore[arg-type]
    y = build_table(gout, shape=(N, M), tensor="y", side="dst", **common)  # type: ignore[arg-type]
    sA = build_table(sm_w, shape=(T, T), memory="shared", tensor="sA", buffer="smem", side="dst",
                     **common)  # type: ignore[arg-type]
    sB = build_table(sm_r, shape=(T, T), memory="shared", tensor="sB", buffer="smem", **common)  # type: ignore[arg-type]
    st: list[Any] = []
    if rng.random() < 0.5:
        r_in, r_out = register_table(x, side="dst"), register_table(x, side="src")
        st += [(x, r_in), (r_out, sA)]
    else:
        st.append((x, sA))
    if rng.random() < 0.75:
        st.append("barrier")
    st.append((sB, y))
    if rng.random() < 0.3:  # the buffer refilled (the next tile), with or without its trailing barrier
        if rng.random() < 0.5:
            st.append("barrier")
        st.append((x, sA))
    return st, threads % 32 != 0


@pytest.mark.parametrize("seed", range(80))
def test_dataflow_matches_brute_force_and_definition(seed: int) -> None:
    """Every count of the summary, the finding counts by the definition (a read of a raced byte
    is stale even when the reader wrote it last; races are counted per epoch: a refilled buffer
    can race again), and every witness."""
    rng = np.random.default_rng(3000 + seed)
    st, _ = _stages(rng)
    brute.assert_dataflow(check_dataflow(st, "transpose"), st, "transpose", "x", "y")


# ----------------------------------------------------------------------------- the simulator


SIZES: dict[str, list[dict[str, int]]] = {
    "cute_transpose/row_smem_swizzled.yaml": [{"M": 100, "N": 77}],
    "cute_transpose/row_rvectorized.yaml": [{"M": 100, "N": 70}],
    "cutlass/sm80_f16_gemm_a_128x32_warpraked.yaml": [{"M": 300, "K": 72}],
    "cutlass/stripmined_64x64_128t_v4_m63.yaml": [{}],
}
FILES = iter_spec_files(SPECS)


def _models() -> list[Any]:
    out = []
    for p in FILES:
        rel = p.relative_to(SPECS).as_posix()
        for sizes in [{}] + SIZES.get(rel, []):
            for m in api.models(p, sizes or None):
                if m.num_blocks * Simulator(m).rows_per_block() <= 1 << 21:
                    out.append(pytest.param(m, id=f"{rel}{sizes or ''}"))
    return out


#: rows (all stages) evaluated row by row per kernel: every block of a small grid, else a sample
ROW_BUDGET = 1 << 12


@pytest.mark.parametrize("model", _models())
def test_simulator_tables_and_patterns(model: Any) -> None:
    """The simulator's tables, with or without reused buffers, equal a per-row evaluation of the
    model (every block of a small grid; else the grid's corners and random blocks, wherever they
    fall in the chunks), and every pattern it states holds row by row."""
    sim = Simulator(model)
    blocks = np.arange(model.num_blocks, dtype=np.int64)
    want = brute.simulate(model, brute.sample_blocks(model, sim.rows_per_block(), ROW_BUDGET))
    arena = Arena()
    seen = 0
    for ch in list(sim.chunks(blocks, 1 << 14)):
        b, c = sim.tables(ch), sim.tables(ch, arena)
        for rb, rc in zip(b, c, strict=True):
            if isinstance(rb, str):
                assert rb == rc
                continue
            for y, z in zip(rb, rc, strict=True):
                for f in ("pred", "offset", "addr", "valid"):
                    assert _eq(getattr(y, f), getattr(z, f)), f
                for cy, cz in zip(y.coords, z.coords, strict=True):
                    assert np.array_equal(cy, cz)
                for t in (y, z):
                    _check_pattern(t)
        for i, blk in enumerate(ch.tolist()):
            if blk not in want:
                continue
            seen += 1
            for rb, rc, rw in zip(b, c, want[blk], strict=True):
                if isinstance(rw, str):
                    assert rb == rc == rw
                    continue
                assert not isinstance(rb, str) and not isinstance(rc, str)
                for y, z, w in zip(rb, rc, rw, strict=True):
                    brute.assert_table_block(y, i, w, blk)
                    brute.assert_table_block(z, i, w, blk)
    assert seen == len(want)


def _eq(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))


def _check_pattern(t: AccessTable) -> None:
    stated = BlockView(t)
    assert stated.pattern is not None
    # a pattern counts only for the arrays it was made for: not for a copy of the table
    assert BlockView(t.select_blocks(np.arange(t.blocks.size))).pattern is None
    scanned = BlockView(t)
    scanned.__dict__["pattern"] = None  # force the row-by-row analysis
    for s, r in [(stated.addr, scanned.addr)] if stated.pattern.addr_start is not None else []:
        assert r.ok.all() and np.array_equal(s.start, r.start) and np.array_equal(s.rel, r.rel)
    for s, r in zip(stated.coords, scanned.coords, strict=True):
        assert r.ok.all() and np.array_equal(s.start, r.start) and np.array_equal(s.rel, r.rel)
    for a in stated.pattern.arrays:
        assert not a.flags.writeable


# ----------------------------------------------------------------------------- whole kernels


def _accs(model: Any) -> tuple[list[tuple[Any, Any]], Dataflow]:
    sides: list[tuple[Any, Any]] = []
    for sd in model.sides():
        if sd.memory == "global":
            sides.append((sd, Coalescing(sd, None)))
            sides.append((sd, GridEnumeration(sd, model.expect.replication)))
        if sd.memory == "shared":
            sides.append((sd, BankConflicts(sd, None)))
        if sd.memory != "register":
            sides.append((sd, Vectorize(sd, None)))
            sides.append((sd, TileCoverage(sd, model.expect.replication)))
    return sides, Dataflow(model, model.expect.transform, model.input, model.output)


@pytest.mark.parametrize("model", _models())
def test_kernel_accumulators_match_brute_force(model: Any) -> None:
    """Every check of every library kernel (and some edge sizes) on the simulator's tables of a
    sample of blocks (see ``test_simulator_tables_and_patterns``), fed two blocks a chunk with
    reused buffers, against the brute force on the same blocks."""
    sim = Simulator(model)
    rpb = sim.rows_per_block()
    sample = np.asarray(brute.sample_blocks(model, rpb, ROW_BUDGET, seed=1), dtype=np.int64)
    sides, df = _accs(model)
    arena = Arena()
    plain: list[list[Any]] = []
    for ch in sim.chunks(sample, 2 * rpb):
        reused = sim.tables(ch, arena)
        for rec in reused:
            if not isinstance(rec, str):
                for t in rec:
                    attach_view(t)
        w = np.ones(ch.size, dtype=np.int64)
        for sd, acc in sides:
            acc.add(reused[sd.stage][0 if sd.which == "src" else 1], w)
        df.add(reused, w)
        plain.append(sim.tables(ch))

    def chunks_of(stage: int, which: int) -> list[AccessTable]:
        return [p[stage][which] for p in plain]

    rows = {(i, j): brute.side_of(chunks_of(i, j)) for i, st in enumerate(model.stages) if not isinstance(st, str)
            for j in (0, 1)}
    for sd, acc in sides:
        chs = chunks_of(sd.stage, 0 if sd.which == "src" else 1)
        s = rows[(sd.stage, 0 if sd.which == "src" else 1)]
        if isinstance(acc, GridEnumeration):
            brute.assert_grid_enumeration(acc, s, chs)
        elif isinstance(acc, TileCoverage):
            brute.assert_coverage(acc.result(), s, acc.replication, acc.per_block)
        else:
            ASSERT[type(acc)](acc.result(), s)
    stages = [st if isinstance(st, str) else (rows[(i, 0)], rows[(i, 1)]) for i, st in enumerate(model.stages)]
    brute.assert_dataflow(df.result(), stages, model.expect.transform, model.input, model.output)
