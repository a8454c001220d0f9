"""Unit and property tests of ``threadmap.cutlass`` (the pitch-linear thread maps).

The exhaustive comparison with the C++ header is in ``test_cutlass_cxx_oracle.py``; here:
known and hand-derived values, the layout of ``coordinates()``, agreement of the three
backends (int, numpy, z3), coverage properties and error messages.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
import z3
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from threadmap.cutlass import (
    THREAD_MAPS,
    PitchLinear2DThreadTileStripminedThreadMap,
    PitchLinearShape,
    PitchLinearStridedWarpRakedThreadMap,
    PitchLinearStripminedThreadMap,
    PitchLinearThreadMap,
    PitchLinearTilePolicyStripminedThreadContiguous,
    PitchLinearTilePolicyStripminedThreadStrided,
    PitchLinearWarpRakedThreadMap,
    PitchLinearWarpStripedThreadMap,
    TransposePitchLinearThreadMap,
    TransposePitchLinearThreadMap2DThreadTile,
    TransposePitchLinearThreadMapSimt,
)
from threadmap.errors import ThreadmapError
from threadmap.layout.backend import Sym

# --------------------------------------------------------------------------------------------
# known values (note 004) and the note's claims
# --------------------------------------------------------------------------------------------


def test_stripmined_64x64_128_4_known_values() -> None:
    m = PitchLinearStripminedThreadMap(shape=(64, 64), threads=128, elements_per_access=4)
    assert m.iterations == (1, 8)
    assert m.delta == (1, 8)
    assert m.initial_offset(50) == (8, 3)
    assert m.shape_vec == (16, 64)
    assert m.storage_shape == (64, 64)
    assert m.thread_access_shape == (4, 1)
    # thread 50 covers columns 8-11 of rows 3, 11, ..., 59
    c = m.coordinates()[50]
    assert c.shape == (8, 1, 4, 2)
    assert sorted(set(c[..., 0].ravel().tolist())) == [8, 9, 10, 11]
    assert sorted(set(c[..., 1].ravel().tolist())) == list(range(3, 64, 8))


def test_note_claim_threads_32_63_first_iteration() -> None:
    """The note says warp threads 32-63 touch only row 3 in the first iteration.  With
    ShapeVec.c = 16 vectors per row, threads 32-47 are on row 2 and 48-63 on row 3."""
    m = PitchLinearStripminedThreadMap((64, 64), 128, 4)
    rows = m.coordinates()[32:64, 0, 0, :, 1]
    assert sorted(set(rows.ravel().tolist())) == [2, 3]
    assert set(rows[:16].ravel().tolist()) == {2}
    assert set(rows[16:].ravel().tolist()) == {3}


# --------------------------------------------------------------------------------------------
# hand-derived values
# --------------------------------------------------------------------------------------------


def test_stripmined_fewer_threads_than_vectors_per_row() -> None:
    # ShapeVec = (16, 4); 8 < 16 so Iterations = (16/8, 4), Delta = (8*4, 1)
    m = PitchLinearStripminedThreadMap((64, 4), 8, 4)
    assert (m.iterations, m.delta) == ((2, 4), (32, 1))
    assert m.initial_offset(3) == (12, 0)
    assert m.coordinates()[3, 2, 1].tolist() == [[44, 2], [45, 2], [46, 2], [47, 2]]


def test_stripmined_ceil_iterations_leave_the_tile() -> None:
    # ShapeVec = (16, 5), 64 threads = 4 rows per step, Iterations.s = ceil(5/4) = 2
    m = PitchLinearStripminedThreadMap((64, 5), 64, 4)
    assert (m.iterations, m.delta, m.storage_shape) == ((1, 2), (1, 4), (64, 8))
    rows = m.coordinates()[..., 1]
    assert rows.max() == 7  # rows 5..7 lie outside the 5-row tile, as in CUTLASS


def test_warp_raked_hand_derived() -> None:
    # SIA = (8, 32), WAI = (1, 8), kWarpCount = 4: kWarpsStrided = 4, kWarpsContiguous = 1,
    # Iterations = (1, 2), Delta = (64, 4); warp footprint (8, 8)
    m = PitchLinearWarpRakedThreadMap((64, 32), 128, (8, 4), 8)
    assert m.shape_in_accesses == (8, 32)
    assert m.warp_access_iterations == (1, 8)
    assert (m.warps_contiguous, m.warps_strided, m.warp_count, m.warp_size) == (1, 4, 4, 32)
    assert m.warp_arrangement == (1, 4)
    assert (m.iterations, m.delta) == ((1, 2), (64, 4))
    assert m.initial_offset(37) == (40, 8)  # warp 1, lane 5
    assert m.initial_offset(127) == (56, 27)  # warp 3, lane 31
    assert m.coordinates()[127, 1, 0, 7].tolist() == [63, 31]


def test_warp_striped_hand_derived() -> None:
    # SIA = (16, 64), WAI = (2, 16), kWarpCount = 4: kWarpsStrided = 4, kWarpsContiguous = 1,
    # Iterations = (2, 4), Delta = (8*4, 4*4); warp footprint (16, 4)
    m = PitchLinearWarpStripedThreadMap((64, 64), 128, (8, 4), 4)
    assert (m.warps_contiguous, m.warps_strided) == (1, 4)
    assert (m.iterations, m.delta) == ((2, 4), (32, 16))
    assert m.initial_offset(37) == (20, 4)
    assert m.coordinates()[37, 3, 1, 0].tolist() == [52, 52]


def test_strided_warp_raked_hand_derived() -> None:
    # NCxHWx: SIA = (32, 8), WAI = (4, 2), 4 warps: kWarpsContiguous = 4, kWarpsStrided = 1,
    # Iterations = (1, 2), Delta = (8*4, 4); warp footprint (8, 8).  (The base warp-raked map
    # would arrange the warps 2x2 with Iterations (2, 1).)
    m = PitchLinearStridedWarpRakedThreadMap((128, 8), 128, (8, 4), 4)
    assert m.base_thread_map.iterations == (2, 1)
    assert m.base_thread_map.warp_arrangement == (2, 2)
    assert (m.warps_contiguous, m.warps_strided) == (4, 1)
    assert (m.iterations, m.delta) == ((1, 2), (32, 4))
    assert m.initial_offset(37) == (52, 0)  # warp 1 at vector column 8, lane 5
    assert m.initial_offset(127) == ((24 + 7) * 4, 3)


def test_tile_policies_hand_derived() -> None:
    c = PitchLinearTilePolicyStripminedThreadContiguous((64, 4), 4, 4)
    assert (c.iterations, c.delta) == ((4, 4), (1, 1))
    assert c.initial_offset(3) == (48, 0)
    # Delta.contiguous is 1: consecutive vector accesses of one thread overlap
    assert c.coordinates()[0, 0, :2, :, 0].tolist() == [[0, 1, 2, 3], [1, 2, 3, 4]]
    s = PitchLinearTilePolicyStripminedThreadStrided((16, 64), 8, 4)
    assert (s.iterations, s.delta, s.shape_vec) == ((4, 8), (1, 1), (16, 64))
    assert s.initial_offset(3) == (0, 24)


def test_2d_thread_tile_hand_derived() -> None:
    # ShapeVec = (16, 8); 64 threads >= 16: Iterations = (1, 8 / 4), Delta = (64, 64*4/16)
    m = PitchLinear2DThreadTileStripminedThreadMap((64, 32), 64)
    assert m.elements_per_access == 4 and m.thread_access_shape == (4, 4)
    assert (m.shape_vec, m.iterations, m.delta) == ((16, 8), (1, 2), (64, 16))
    assert m.initial_offset(17) == (4, 4)
    coords = m.coordinates()
    assert coords.shape == (64, 2, 1, 4, 4, 2)
    # [t, s, c, ts, v] = initial_offset(t) + (c * Delta.c + v, s * Delta.s + ts)
    assert coords[17, 1, 0, 2, 3].tolist() == [7, 4 + 16 + 2]
    small = PitchLinear2DThreadTileStripminedThreadMap((64, 8), 8)  # 8 < 16 threads
    assert (small.iterations, small.delta) == ((2, 2), (32, 1))


def test_transposes_hand_derived() -> None:
    inner = PitchLinearStripminedThreadMap((8, 128), 256, 1)
    assert (inner.iterations, inner.delta) == ((1, 4), (1, 32))
    simt = TransposePitchLinearThreadMapSimt(inner)
    assert (simt.iterations, simt.delta) == ((4, 1), (32, 1))
    assert simt.shape == (8, 128)  # Shape is the wrapped map's, not transposed
    assert simt.initial_offset(13) == (1, 5)

    raked = PitchLinearWarpRakedThreadMap((64, 8), 64, (8, 4), 8)
    assert raked.iterations == (1, 1) and raked.warp_arrangement == (1, 2)
    tr = TransposePitchLinearThreadMap(raked, (4, 8))
    assert tr.warp_arrangement == (2, 1)
    assert (tr.iterations, tr.delta) == ((1, 1), (32, 8))
    # warp_offset = (w / 1, w % 1): warp 1 at vector column 4*1*1 = 4
    assert tr.initial_offset(37) == ((4 + 5 % 4) * 8, 5 // 4)

    tile = PitchLinear2DThreadTileStripminedThreadMap((64, 32), 64)
    t2 = TransposePitchLinearThreadMap2DThreadTile(tile)
    assert (t2.iterations, t2.delta, t2.thread_access_shape) == ((2, 1), (16, 64), (4, 4))
    assert t2.initial_offset(17) == (4, 4)
    assert t2.coordinates().shape == (64, 1, 2, 4, 4, 2)


# --------------------------------------------------------------------------------------------
# coordinates(): shape and order
# --------------------------------------------------------------------------------------------


def test_coordinates_shape_and_order_vector_map() -> None:
    m = PitchLinearWarpStripedThreadMap((64, 64), 128, (8, 4), 4)
    coords = m.coordinates()
    assert coords.dtype == np.int64
    assert coords.shape == (128, m.iterations.strided, m.iterations.contiguous, 4, 2)
    for t in (0, 5, 77, 127):
        c0, s0 = m.initial_offset(t)
        expected = [
            [c0 + c * m.delta.contiguous + v, s0 + s * m.delta.strided]
            for s in range(m.iterations.strided)
            for c in range(m.iterations.contiguous)
            for v in range(m.elements_per_access)
        ]
        assert coords[t].reshape(-1, 2).tolist() == expected
    offs = m.access_offsets()
    assert offs.shape == (128, m.iterations.strided, m.iterations.contiguous, 2)
    assert np.array_equal(offs, coords[:, :, :, 0, :])


def test_coordinates_are_vectorised_over_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """``coordinates()`` calls ``initial_offset`` once, with the array of all thread ids."""
    m = PitchLinearStripminedThreadMap((64, 64), 128, 4)
    calls: list[Any] = []
    orig = PitchLinearStripminedThreadMap.initial_offset

    def spy(self: PitchLinearStripminedThreadMap, t: Any) -> Any:
        calls.append(t)
        return orig(self, t)

    monkeypatch.setattr(PitchLinearStripminedThreadMap, "initial_offset", spy)
    m.coordinates()
    assert len(calls) == 1 and isinstance(calls[0], np.ndarray) and calls[0].shape == (128,)


# --------------------------------------------------------------------------------------------
# the three backends agree
# --------------------------------------------------------------------------------------------


def example_maps() -> list[PitchLinearThreadMap]:
    raked = PitchLinearWarpRakedThreadMap((64, 8), 64, (8, 4), 8)
    tile = PitchLinear2DThreadTileStripminedThreadMap((64, 32), 64)
    return [
        PitchLinearStripminedThreadMap((64, 64), 128, 4),
        PitchLinearStripminedThreadMap((64, 4), 8, 4),
        PitchLinearTilePolicyStripminedThreadContiguous((64, 4), 4, 4),
        PitchLinearTilePolicyStripminedThreadStrided((16, 64), 8, 4),
        PitchLinearWarpRakedThreadMap((64, 32), 128, (8, 4), 8),
        PitchLinearStridedWarpRakedThreadMap((128, 8), 128, (8, 4), 4),
        PitchLinearWarpStripedThreadMap((64, 64), 128, (8, 4), 4),
        tile,
        TransposePitchLinearThreadMap(raked, (4, 8)),
        TransposePitchLinearThreadMapSimt(PitchLinearStripminedThreadMap((8, 128), 256, 1)),
        TransposePitchLinearThreadMap2DThreadTile(tile),
    ]


def test_example_maps_cover_every_class() -> None:
    assert {type(m) for m in example_maps()} == set(THREAD_MAPS.values())


@pytest.mark.parametrize("m", example_maps(), ids=lambda m: type(m).__name__)
def test_backends_agree(m: PitchLinearThreadMap) -> None:
    tids = np.arange(m.threads, dtype=np.int64)
    nc, ns = m.initial_offset(tids)
    nc, ns = np.broadcast_to(nc, tids.shape), np.broadcast_to(ns, tids.shape)
    t = Sym.var("t", 32)
    sc, ss = m.initial_offset(t)
    assert isinstance(sc, Sym) and isinstance(ss, Sym)
    for tid in sorted({0, 1, m.threads // 3, m.threads - 1}):
        ic, is_ = m.initial_offset(tid)
        assert isinstance(ic, int) and isinstance(is_, int)
        assert (ic, is_) == (int(nc[tid]), int(ns[tid]))
        # z3: substitute the thread id into the symbolic expression and simplify
        val = z3.BitVecVal(tid, 32)
        zc = z3.simplify(z3.substitute(sc.e, (t.e, val))).as_long()
        zs = z3.simplify(z3.substitute(ss.e, (t.e, val))).as_long()
        assert (zc, zs) == (ic, is_)
        # and a constant Sym evaluates directly
        kc, ks = m.initial_offset(Sym.const(tid, 32))
        assert (kc.as_int(), ks.as_int()) == (ic, is_)


def test_symbolic_proof_warp_raked_in_tile() -> None:
    """z3 proves, for every thread id, the warp-raked access start is in the tile and
    vector-aligned (64x32 tile, 128 threads, 8x4 warp, 8 elements per access)."""
    m = PitchLinearWarpRakedThreadMap((64, 32), 128, (8, 4), 8)
    t = Sym.var("t", 16)
    c, s = m.initial_offset(t)
    last_c = c + (m.iterations.contiguous - 1) * m.delta.contiguous + (m.elements_per_access - 1)
    last_s = s + (m.iterations.strided - 1) * m.delta.strided
    claim = z3.Implies(
        z3.ULT(t.e, m.threads),
        z3.And(z3.ULT(last_c.e, 64), z3.ULT(last_s.e, 32), (c % 8).e == 0),
    )
    solver = z3.Solver()
    solver.add(z3.Not(claim))
    assert solver.check() == z3.unsat


# --------------------------------------------------------------------------------------------
# hypothesis: coverage properties
# --------------------------------------------------------------------------------------------


def _is_exact_cover(m: PitchLinearThreadMap) -> bool:
    coords = m.coordinates().reshape(-1, 2)
    c, s = coords[:, 0], coords[:, 1]
    if (c < 0).any() or (s < 0).any() or (c >= m.shape.contiguous).any() or (s >= m.shape.strided).any():
        return False
    flat = s * m.shape.contiguous + c
    return len(flat) == m.shape.count and len(np.unique(flat)) == m.shape.count


@st.composite
def exact_stripmined(draw: st.DrawFn) -> PitchLinearStripminedThreadMap:
    epa = draw(st.sampled_from([1, 2, 4, 8]))
    svc = draw(st.integers(1, 32))
    if draw(st.booleans()):  # fewer threads than vectors per row: a divisor of ShapeVec.c
        threads = draw(st.sampled_from([d for d in range(1, svc + 1) if svc % d == 0]))
        strided = draw(st.integers(1, 16))
    else:  # whole rows per step, and the steps divide the strided extent
        rows = draw(st.integers(1, 8))
        threads = svc * rows
        strided = rows * draw(st.integers(1, 8))
    return PitchLinearStripminedThreadMap((svc * epa, strided), threads, epa)


@given(exact_stripmined())
def test_stripmined_exact_configs_cover_tile_once(m: PitchLinearStripminedThreadMap) -> None:
    assert m.threads * m.iterations.count * m.elements_per_access == m.shape.count
    assert _is_exact_cover(m)


@st.composite
def warp_maps(draw: st.DrawFn) -> PitchLinearThreadMap:
    cls = draw(st.sampled_from([PitchLinearWarpRakedThreadMap, PitchLinearStridedWarpRakedThreadMap,
                                PitchLinearWarpStripedThreadMap]))
    wta = draw(st.sampled_from([(8, 4), (4, 8), (32, 1), (1, 32), (16, 2), (2, 2)]))
    epa = draw(st.sampled_from([1, 2, 4, 8]))
    warps = draw(st.sampled_from([1, 2, 3, 4, 8]))
    shape = (epa * wta[0] * draw(st.integers(1, 8)), wta[1] * draw(st.integers(1, 8)))
    try:
        return cls(shape, warps * wta[0] * wta[1], wta, epa)
    except ThreadmapError:
        assume(False)
        raise


@settings(suppress_health_check=[HealthCheck.filter_too_much], max_examples=150)
@given(warp_maps())
def test_warp_maps_accesses_in_tile_are_distinct(m: PitchLinearThreadMap) -> None:
    """When the warp arrangement uses every warp (kWarpsContiguous * kWarpsStrided ==
    kWarpCount, whole warps), no two (thread, iteration, element) hit the same in-tile
    element, and when the access count equals the tile size the map is an exact cover.
    (Without that condition the warp-striped map does duplicate: see
    ``test_warp_striped_duplicates_when_warps_exceed_strided_iterations``.)"""
    assume(m.warps_contiguous * m.warps_strided == m.warp_count)  # type: ignore[attr-defined]
    assume(m.threads % m.warp_size == 0)  # type: ignore[attr-defined]
    coords = m.coordinates().reshape(-1, 2)
    inside = (coords[:, 0] < m.shape.contiguous) & (coords[:, 1] < m.shape.strided)
    flat = coords[inside, 1] * m.shape.contiguous + coords[inside, 0]
    assert len(np.unique(flat)) == len(flat)
    if m.threads * m.iterations.count * m.elements_per_access == m.shape.count and inside.all():
        assert _is_exact_cover(m)


@given(st.integers(1, 32).map(lambda k: 4 * k), st.integers(1, 32).map(lambda k: 4 * k),
       st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256]))
def test_2d_thread_tile_exact_cover(c: int, s: int, threads: int) -> None:
    """Exact cover when whole rows of thread tiles are strip-mined (Threads >= ShapeVec.c)
    or there is a single row of thread tiles (see the next test for the other case)."""
    try:
        m = PitchLinear2DThreadTileStripminedThreadMap((c, s), threads)
    except ThreadmapError:
        assume(False)
        return
    assume(threads >= m.shape_vec.contiguous or m.shape_vec.strided == 1)
    assert _is_exact_cover(m)


def test_2d_thread_tile_overlaps_with_fewer_threads_than_tiles_per_row() -> None:
    """Header quirk: with Threads < ShapeVec.c, Delta = (Threads * 4, 1), so consecutive
    strided iterations are one row apart although each thread tile is 4 rows tall: rows
    overlap and the bottom of the tile is never reached."""
    m = PitchLinear2DThreadTileStripminedThreadMap((8, 8), 1)
    assert (m.iterations, m.delta) == ((2, 2), (4, 1))
    rows = m.coordinates()[0, :, :, :, :, 1]
    assert sorted(set(rows.ravel().tolist())) == [0, 1, 2, 3, 4]
    assert not _is_exact_cover(m)


def test_warp_striped_duplicates_when_warps_exceed_strided_iterations() -> None:
    """Header quirk: 3 warps, WarpAccessIterations = (1, 2): kWarpsStrided = 3 / 2 = 1,
    kWarpsContiguous = 1, so every warp is stacked at strided offset 4 * warp_id while
    Delta.s = 4: warp 0's second iteration and warp 1's first both touch rows 4-7."""
    m = PitchLinearWarpStripedThreadMap((8, 8), 96, (8, 4), 1)
    assert (m.warps_contiguous, m.warps_strided, m.iterations, m.delta) == (1, 1, (1, 2), (8, 4))
    coords = m.coordinates()
    assert np.array_equal(coords[0:32, 1], coords[32:64, 0])
    assert coords[..., 1].max() == 15  # warp 2 runs past the 8-row tile


@given(st.integers(1, 32), st.integers(1, 8), st.integers(1, 40))
def test_simt_transpose_swaps_coordinates(svc: int, rows: int, strided: int) -> None:
    m = PitchLinearStripminedThreadMap((svc, strided), svc * rows, 1)  # Iterations = (1, n)
    tr = TransposePitchLinearThreadMapSimt(m)
    a = m.coordinates()  # (T, S, 1, 1, 2)
    b = tr.coordinates()  # (T, 1, S, 1, 2)
    assert np.array_equal(b[:, 0, :, 0, ::-1], a[:, :, 0, 0, :])


# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (lambda: PitchLinearStripminedThreadMap((30, 64), 128, 4),
         r"Shape::kContiguous \(30\) must be divisible by ElementsPerAccess \(4\).*:89\]"),
        (lambda: PitchLinearStripminedThreadMap((64, 64), 24, 4),
         r"Threads \(24\) must divide.*:97\]"),
        (lambda: PitchLinearStripminedThreadMap((64, 64), 0, 4), r"threads must be positive, got 0"),
        (lambda: PitchLinearStripminedThreadMap((64, -1), 32, 4),
         r"shape.strided must be positive, got -1"),
        (lambda: PitchLinearStripminedThreadMap((64, 64), True, 4), r"threads must be an integer"),
        (lambda: PitchLinearStripminedThreadMap(64, 32, 4), r"must be a \(contiguous, strided\) pair"),
        (lambda: PitchLinearTilePolicyStripminedThreadContiguous((64, 4), 32, 4),
         r"Threads \* ElementsPerAccess \(32 \* 4 = 128\).*:156\]"),
        (lambda: PitchLinearTilePolicyStripminedThreadStrided((64, 4), 8, 1),
         r"Shape::kStrided \(4\) is not a multiple of Threads \(8\).*:184\]"),
        (lambda: PitchLinearWarpRakedThreadMap((64, 64), 128, (8, 4), 16),
         r"ShapeInAccesses::kContiguous \(4\) % WarpThreadArrangement::kContiguous \(8\).*:260\]"),
        (lambda: PitchLinearWarpRakedThreadMap((64, 6), 128, (8, 4), 1), r":264\]"),
        (lambda: PitchLinearWarpRakedThreadMap((64, 64), 16, (8, 4), 1),
         r"Threads \(16\) is smaller than the warp size"),
        (lambda: PitchLinearWarpRakedThreadMap((16, 4), 256, (8, 4), 1),
         r"Number of iterations must be non-zero.*:298\]"),
        (lambda: PitchLinearWarpRakedThreadMap((64, 64), 128, (0, 4), 1),
         r"warp_thread_arrangement.contiguous must be positive"),
        (lambda: PitchLinearStridedWarpRakedThreadMap((48, 4), 320, (8, 4), 1),
         r"BaseThreadMap is rejected.*:298\]"),
        (lambda: PitchLinearStridedWarpRakedThreadMap((8, 8), 96, (8, 4), 1), r":427\]"),
        (lambda: PitchLinearWarpStripedThreadMap((64, 2), 128, (8, 4), 1),
         r"WarpAccessIterations::kStrided .* = 0"),
        (lambda: PitchLinearWarpStripedThreadMap((8, 4), 128, (8, 4), 1), r"kWarpsContiguous .* = 0"),
        (lambda: PitchLinearWarpStripedThreadMap((4, 64), 128, (8, 4), 1), r":716\]"),
        (lambda: PitchLinear2DThreadTileStripminedThreadMap((64, 64), 32, (2, 2)),
         r"only ThreadTileShape = PitchLinearShape<4, 4>"),
        (lambda: PitchLinear2DThreadTileStripminedThreadMap((66, 64), 8), r":813\]"),
        (lambda: PitchLinear2DThreadTileStripminedThreadMap((64, 64), 512), r":815\]"),
        (lambda: PitchLinear2DThreadTileStripminedThreadMap((48, 64), 8), r":824\]"),
        (lambda: TransposePitchLinearThreadMap(PitchLinearStripminedThreadMap((64, 8), 32, 1), (8, 4)),
         r"has no Detail::kWarpsStrided"),
        (lambda: TransposePitchLinearThreadMap(
            PitchLinearWarpRakedThreadMap((64, 32), 128, (8, 4), 8), (4, 8)),
         r"Contiguous iteration has to be one.*:529\]"),
        (lambda: TransposePitchLinearThreadMapSimt(PitchLinearStripminedThreadMap((64, 8), 32, 4)),
         r"elements per access to be 1, got 4.*:602\]"),
        (lambda: TransposePitchLinearThreadMapSimt(PitchLinearStripminedThreadMap((64, 8), 32, 1)),
         r"Strided iteration has to be one.*:610\]"),
        (lambda: TransposePitchLinearThreadMapSimt(
            PitchLinearTilePolicyStripminedThreadStrided((1, 64), 64, 1)),
         r"has no Shape / ThreadAccessShape"),
        (lambda: TransposePitchLinearThreadMap2DThreadTile(
            PitchLinearStripminedThreadMap((64, 8), 32, 1)), r"greater than 1.*:889\]"),
        (lambda: TransposePitchLinearThreadMapSimt("not a map"), r"must be a thread map object"),
    ],
)
def test_errors(make: Any, pattern: str) -> None:
    with pytest.raises(ThreadmapError, match=pattern) as info:
        make()
    assert isinstance(info.value, ValueError)
    assert type(info.value).__name__ in str(info.value) or re.match(r"\w+: ", str(info.value))


# --------------------------------------------------------------------------------------------
# misc
# --------------------------------------------------------------------------------------------


def test_cxx_type_and_equality() -> None:
    m = PitchLinearWarpRakedThreadMap((64, 32), 128, (8, 4), 8)
    assert m.cxx_type == (
        "cutlass::transform::PitchLinearWarpRakedThreadMap<cutlass::layout::PitchLinearShape<64, 32>, "
        "128, cutlass::layout::PitchLinearShape<8, 4>, 8>"
    )
    assert m == PitchLinearWarpRakedThreadMap((64, 32), 128, (8, 4), 8)
    assert m != PitchLinearWarpStripedThreadMap((64, 32), 128, (8, 4), 8)
    assert len({m, PitchLinearWarpRakedThreadMap((64, 32), 128, (8, 4), 8)}) == 1
    t = TransposePitchLinearThreadMapSimt(PitchLinearStripminedThreadMap((8, 128), 256))
    assert t.cxx_type.startswith("cutlass::transform::TransposePitchLinearThreadMapSimt<cutlass::transform::")


def test_shape_namedtuple() -> None:
    s = PitchLinearShape(8, 4)
    assert s == (8, 4) and s.count == 32 and s.contiguous == 8 and s.strided == 4


def test_constant_components_broadcast_on_every_backend() -> None:
    m = PitchLinearTilePolicyStripminedThreadContiguous((64, 4), 4, 4)
    c, s = m.initial_offset(np.arange(4))
    assert s.shape == (4,) and not s.any()
    _, ss = m.initial_offset(Sym.var("t"))
    assert isinstance(ss, Sym) and ss.as_int() == 0
    assert m.initial_offset(2) == (32, 0)
