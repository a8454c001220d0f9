"""The per-block enumerations (memoized patterns, per-block statistics, the simulator's stated
patterns, reused buffers) give exactly what the previous row-by-row enumerations gave.

Oracles: ``tests/_reference`` (the enumerations and the simulator before the rewrite, verbatim)
and the pure-Python definitions.  Tables are random but reproducible (seeded): several blocks
that repeat one pattern (so the memoized paths run) mixed with blocks that break it, edge
blocks, padding warps (threads not a multiple of 32), masked lanes, vectors of 1/2/4/8
elements of 1/2/4/8 bytes, misaligned bases, row/column/swizzled layouts, chunked input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import threadmap.api as api
from tests._reference import banks as ref_banks
from tests._reference import coalescing as ref_coal
from tests._reference import coverage as ref_cov
from tests._reference import dataflow as ref_df
from tests._reference import engine as ref_engine
from tests._reference import grid as ref_grid
from tests._reference import vectorize as ref_vec
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
    dataflow_definition,
    register_table,
)
from threadmap.verify.banks import BankConflicts
from threadmap.verify.blocks import BlockView, attach_view
from threadmap.verify.coalescing import Coalescing
from threadmap.verify.coverage import TileCoverage
from threadmap.verify.dataflow import Dataflow
from threadmap.verify.grid import GridEnumeration
from threadmap.verify.vectorize import Vectorize

SPECS = Path(__file__).resolve().parent.parent / "specs"
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
def test_side_checks_match_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for memory in ("global", "shared"):
        t = random_table(rng, memory)
        ts = chunked(t, rng)
        if memory == "global":
            assert dump(check_coalescing(ts)) == dump(ref_coal.check_coalescing(ts))
            new, old = check_grid(ts), ref_grid.check_grid(ts)
            assert [dump(x) for x in new] == [dump(x) for x in old]
        else:
            assert dump(check_bank_conflicts(ts)) == dump(ref_banks.check_bank_conflicts(ts))
        _same_vectorize(ts)
        for rep in (False, True):
            assert dump(check_tile_coverage(ts, replication=rep)) == \
                dump(ref_cov.check_tile_coverage(ts, replication=rep))


def _same_vectorize(ts: list[AccessTable]) -> None:
    new = check_vectorize(ts)
    try:
        old = ref_vec.check_vectorize(ts)
    except IndexError:
        # the previous enumeration crashed when no real thread allowed any width (its witness
        # search found nothing); the histogram and the verdict are still defined
        assert new.summary["max_legal_bits"] == 0
        return
    assert dump(new) == dump(old)


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
    accs = [Coalescing(t, None), Vectorize(t, None), TileCoverage(t, False)]  # type: ignore[arg-type]
    for acc in accs:
        acc.add(t, w)
        assert len(acc.memo.store) >= 1
    assert dump(accs[0].result()) == dump(ref_coal.check_coalescing(t))
    assert dump(accs[1].result()) == dump(ref_vec.check_vectorize(t))
    assert dump(accs[2].result()) == dump(ref_cov.check_tile_coverage(t))
    g = GridEnumeration(t, False)
    g.add(t, w)
    assert g.counts().covered == 32 * 64


# ----------------------------------------------------------------------------- weighted accumulators


@pytest.mark.parametrize("seed", range(30))
def test_weighted_accumulators_match_reference(seed: int) -> None:
    """The tiling mode feeds blocks with weights: the same weighted totals."""
    rng = np.random.default_rng(2000 + seed)
    g = random_table(rng, "global")
    s = random_table(rng, "shared")
    for t, accs in ((g, [(Coalescing, ref_coal.Coalescing, (None,)), (Vectorize, ref_vec.Vectorize, (None,)),
                         (TileCoverage, ref_cov.TileCoverage, (False,))]),
                    (s, [(BankConflicts, ref_banks.BankConflicts, (None,)), (Vectorize, ref_vec.Vectorize, (None,)),
                         (TileCoverage, ref_cov.TileCoverage, (True,))])):
        w = rng.integers(1, 50, size=t.blocks.size)
        for new_cls, old_cls, args in accs:
            a, b = new_cls(t, *args), old_cls(t, *args)
            try:
                for ch in chunked(t, rng):
                    lo = int(np.searchsorted(t.blocks, ch.blocks[0]))
                    a.add(ch, w[lo:lo + ch.blocks.size])
                    b.add(ch, w[lo:lo + ch.blocks.size])
            except IndexError:
                assert new_cls is Vectorize  # the previous crash, see _same_vectorize
                continue
            assert dump(a.result()) == dump(b.result())
            if isinstance(a, TileCoverage):
                assert [vars(x) for x in a.per_block] == [vars(x) for x in b.per_block]


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


def _rows(t: AccessTable) -> list[dict[str, Any]]:
    return [{"block": int(t.block[i]), "thread": int(t.thread[i]), "value": int(t.value[i]),
             "memory": t.memory, "tensor": t.tensor, "buffer": t.buffer or t.tensor, "elem_bytes": t.elem_bytes,
             "coord": tuple(int(c) for c in t.coord[i]), "addr": int(t.addr[i]), "pred": bool(t.pred[i])}
            for i in range(len(t)) if t.valid is None or t.valid[i]]


@pytest.mark.parametrize("seed", range(80))
def test_dataflow_matches_reference_and_definition(seed: int) -> None:
    rng = np.random.default_rng(3000 + seed)
    st, padded = _stages(rng)
    new = check_dataflow(st, "transpose")
    d = dataflow_definition([s if isinstance(s, str) else (_rows(s[0]), _rows(s[1])) for s in st],
                            "transpose", "x", "y")
    assert new.summary["wrong_values"] == len(d["wrong"])
    assert new.summary["races"] == len(d["races"])  # per epoch: a refilled buffer can race again
    # a read of a raced byte is stale even when the reader wrote it last (another thread wrote
    # it too), as the definition says; the earlier enumeration missed that case
    assert new.summary["stale_reads"] == len(d["stale"])
    assert new.summary["uninitialised_reads"] == len(d["uninit"])
    assert new.summary["writes_after_reads"] == len(d["war"])
    if not padded and not d["races"] and st[-1][1].tensor != "sA":  # the reference predates refills
        assert dump(new) == dump(ref_df.check_dataflow(st, "transpose"))


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


@pytest.mark.parametrize("model", _models())
def test_simulator_tables_and_patterns(model: Any) -> None:
    """The simulator's tables equal the previous simulator's, with or without reused buffers,
    and every pattern it states holds row by row."""
    new, old = Simulator(model), ref_engine.Simulator(model)
    blocks = np.arange(model.num_blocks, dtype=np.int64)
    arena = Arena()
    for ch in list(new.chunks(blocks, 1 << 14)):
        a, b, c = old.tables(ch), new.tables(ch), new.tables(ch, arena)
        for ra, rb, rc in zip(a, b, c, strict=True):
            if isinstance(ra, str):
                assert ra == rb == rc
                continue
            for x, y, z in zip(ra, rb, rc, strict=True):
                for f in ("pred", "offset", "addr", "valid"):
                    assert _eq(getattr(x, f), getattr(y, f)) and _eq(getattr(x, f), getattr(z, f)), f
                for cx, cy, cz in zip(x.coords, y.coords, z.coords, strict=True):
                    assert np.array_equal(cx, cy) and np.array_equal(cx, cz)
                for t in (y, z):
                    _check_pattern(t)


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


def _accs(model: Any, mod: dict[str, Any]) -> tuple[list[tuple[Any, Any]], Any]:
    sides = []
    for sd in model.sides():
        if sd.memory == "global":
            sides.append((sd, mod["Coalescing"](sd, None)))
            sides.append((sd, mod["Grid"](sd, model.expect.replication)))
        if sd.memory == "shared":
            sides.append((sd, mod["Banks"](sd, None)))
        if sd.memory != "register":
            sides.append((sd, mod["Vectorize"](sd, None)))
            sides.append((sd, mod["Coverage"](sd, model.expect.replication)))
    return sides, mod["Dataflow"](model, model.expect.transform, model.input, model.output)


NEW = {"Coalescing": Coalescing, "Grid": GridEnumeration, "Banks": BankConflicts, "Vectorize": Vectorize,
       "Coverage": TileCoverage, "Dataflow": Dataflow}
OLD = {"Coalescing": ref_coal.Coalescing, "Grid": ref_grid.GridEnumeration, "Banks": ref_banks.BankConflicts,
       "Vectorize": ref_vec.Vectorize, "Coverage": ref_cov.TileCoverage, "Dataflow": ref_df.Dataflow}


@pytest.mark.parametrize("model", _models())
def test_kernel_accumulators_match_reference(model: Any) -> None:
    """Every check of every library kernel (and some edge sizes) on the simulator's tables, fed
    chunk by chunk with reused buffers, against the previous enumerations."""
    if model.threads % 32:
        pytest.skip("padded CTA: the previous dataflow dropped a thread (see tests/_reference)")
    sim = Simulator(model)
    new_s, new_d = _accs(model, NEW)
    old_s, old_d = _accs(model, OLD)
    arena = Arena()
    blocks = np.arange(model.num_blocks, dtype=np.int64)
    for ch in sim.chunks(blocks):
        plain = sim.tables(ch)
        reused = sim.tables(ch, arena)
        for rec in reused:
            if not isinstance(rec, str):
                for t in rec:
                    attach_view(t)
        w = np.ones(ch.size, dtype=np.int64)
        for tables, accs, df in ((reused, new_s, new_d), (plain, old_s, old_d)):
            for sd, acc in accs:
                t = tables[sd.stage][0 if sd.which == "src" else 1]
                acc.add(t, w)
            df.add(tables, w)
    for (_, a), (_, b) in zip(new_s, old_s, strict=True):
        if isinstance(a, GridEnumeration):
            ga, gb = a.counts(), b.counts()
            assert vars(ga) == vars(gb)
            assert a.missing(8) == b.missing(8)
            sd = a.side
            cp = model.stages[sd.stage]
            a.witness_duplicates(sim.stage_tables(cp, ch)[0 if sd.which == "src" else 1]
                                 for ch in sim.chunks(blocks))
            assert [vars(f) for f in a.dup_findings] == [vars(f) for f in b.dup_findings]
            assert a.pending_pairs == b.pending_pairs
            assert a.straddles.n == b.straddles.n and a.straddles.residues == b.straddles.residues
            assert a.oob_witness == b.oob_witness
        else:
            assert dump(a.result()) == dump(b.result())
    assert dump(new_d.result()) == dump(old_d.result())
