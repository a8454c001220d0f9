"""The study notes' claims, checked with threadmap's Python API (docs/notes_claims.md).

Each test derives its expected values independently of the tool -- from the formulas of
``cutlass/transform/pitch_linear_thread_map.h``, from CuTe's definition of GenRowMajor, or
by enumerating the kernel's addresses by hand -- and then asks threadmap for the same fact.

* note 004: thread 50 of PitchLinearStripminedThreadMap<64x64, 128, 4> covers columns 8-11
  of rows 3, 11, ..., 59 (reproduced); warp threads 32-63 touch rows 2 AND 3 in the first
  iteration, not "only row 3" (refuted); the template is (Shape, int Threads,
  ElementsPerAccess) with no base class (the note's description is refuted); M = 63 is
  handled by the predicates alone: only row 63 (threads 112-127, iteration 7) is masked.
* note 000: GenRowMajor on (M, N) has stride (N, 1), not (1, N) (prose refuted); row2col's
  uncoalesced side is the load, col2row's the store; rvectorized loads 128-bit and stores
  coalesced while cvectorized vectorizes nothing and over-fetches 4x on the store; the
  swizzled smem layouts have ideal wavefronts and the unswizzled ones 8-way conflicts.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import threadmap.api as api
from threadmap.cutlass import PitchLinearStripminedThreadMap
from threadmap.layout import GenColMajor, GenRowMajor, cosize, make_layout, size
from threadmap.spec.load import load_spec

SPECS = Path(__file__).resolve().parents[2] / "specs"
WARP = 32
SECTOR = 32  # bytes
BANKS = 32  # 4-byte banks
F32 = 4  # bytes


# ---------------------------------------------------------------------------------------
# helpers (independent of threadmap)
# ---------------------------------------------------------------------------------------


def thread_to_coord(shape: tuple[int, int], stride: tuple[int, int]) -> dict[int, tuple[int, int]]:
    """Invert a 2-D CuTe thread layout ``shape:stride`` (coord -> thread id) by enumeration:
    local_partition(tile, thr, t) gives thread t the element at the coordinate it maps to t."""
    out = {}
    for i in range(shape[0]):
        for j in range(shape[1]):
            out[i * stride[0] + j * stride[1]] = (i, j)
    assert sorted(out) == list(range(shape[0] * shape[1]))
    return out


def swizzle(b: int, m: int, s: int, x: int) -> int:
    """Swizzle<B,M,S>(x) = x ^ ((x & (((1<<B)-1) << (M+S))) >> S), for S >= 0."""
    return x ^ ((x & (((1 << b) - 1) << (m + s))) >> s)


def sectors(byte_addresses: list[int], width: int) -> int:
    """Distinct 32-byte sectors touched by one warp instruction of ``width``-byte accesses."""
    return len({(a + k) // SECTOR for a in byte_addresses for k in range(width)})


def wavefronts(words: list[int]) -> int:
    """4-byte accesses (one phase of 32 lanes): the most distinct words any one bank serves
    (equal words are a broadcast)."""
    per_bank: dict[int, set[int]] = {}
    for w in words:
        per_bank.setdefault(w % BANKS, set()).add(w)
    return max(len(v) for v in per_bank.values())


@functools.cache
def report(rel: str) -> dict[str, Any]:
    reports = api.verify_spec(load_spec(SPECS / rel))
    assert len(reports) == 1
    return reports[0].model_dump()


def result(rel: str, check: str, stage: int, side: str) -> dict[str, Any]:
    found = [
        r for r in report(rel)["results"] if r["check"] == check and r["stage"] == stage and r["side"] == side
    ]
    assert len(found) == 1, (
        rel,
        check,
        stage,
        side,
        [(r["check"], r["stage"], r["side"]) for r in report(rel)["results"]],
    )
    return found[0]


# ---------------------------------------------------------------------------------------
# note 004: PitchLinearStripminedThreadMap<PitchLinearShape<64, 64>, 128, 4>
# ---------------------------------------------------------------------------------------

SHAPE_C, SHAPE_S, THREADS, EPA = 64, 64, 128, 4
# the header's formulas (Threads >= ShapeVec::kContiguous branch)
SHAPE_VEC_C = SHAPE_C // EPA  # 16 vectors per row
ROWS_PER_STEP = THREADS // SHAPE_VEC_C  # Delta::kStrided = 8
ITER_S = (SHAPE_S + ROWS_PER_STEP - 1) // ROWS_PER_STEP  # Iterations::kStrided = 8


def header_access(t: int, s: int, v: int) -> tuple[int, int]:
    """(contiguous, strided) of element v of thread t's strided iteration s, by the header:
    initial_offset(t) = ((t % ShapeVec::kContiguous) * kElementsPerAccess,
    t / ShapeVec::kContiguous), plus (v, s * Delta::kStrided)."""
    return (t % SHAPE_VEC_C) * EPA + v, t // SHAPE_VEC_C + s * ROWS_PER_STEP


@pytest.fixture(scope="module")
def stripmined() -> PitchLinearStripminedThreadMap:
    return PitchLinearStripminedThreadMap((SHAPE_C, SHAPE_S), THREADS, EPA)


def test_iterations_and_delta_follow_the_header(stripmined: PitchLinearStripminedThreadMap) -> None:
    assert tuple(stripmined.iterations) == (1, ITER_S) == (1, 8)
    assert tuple(stripmined.delta) == (1, ROWS_PER_STEP) == (1, 8)
    assert tuple(stripmined.initial_offset(50)) == header_access(50, 0, 0) == (8, 3)


def test_thread_50_covers_columns_8_to_11_of_rows_3_11_to_59(
    stripmined: PitchLinearStripminedThreadMap,
) -> None:
    coords = stripmined.coordinates()[50]  # (It.s, It.c, EPA, 2)
    assert coords.shape == (ITER_S, 1, EPA, 2)
    expected = np.array([[[header_access(50, s, v) for v in range(EPA)]] for s in range(ITER_S)])
    np.testing.assert_array_equal(coords, expected)
    # the note's wording: columns 8-11 of rows 3, 11, ..., 59
    assert {int(c) for c in coords[..., 0].ravel()} == {8, 9, 10, 11}
    assert [int(r) for r in coords[:, 0, 0, 1]] == [3 + 8 * s for s in range(8)]
    assert coords[-1, 0, 0, 1] == 59


def test_warp_1_first_iteration_touches_rows_2_and_3_not_only_row_3(
    stripmined: PitchLinearStripminedThreadMap,
) -> None:
    warp1 = range(WARP, 2 * WARP)
    expected_rows = {header_access(t, 0, 0)[1] for t in warp1}
    assert expected_rows == {2, 3}
    coords = stripmined.coordinates()
    rows = {int(r) for r in coords[WARP : 2 * WARP, 0, :, :, 1].ravel()}
    assert rows == expected_rows
    assert rows != {3}  # the note's "only row 3"
    # threads 32-47 are row 2, threads 48-63 row 3, 64 columns each
    for t in warp1:
        assert {int(r) for r in coords[t, 0, :, :, 1].ravel()} == {2 if t < 48 else 3}
    cols = {int(c) for c in coords[WARP : 2 * WARP, 0, :, :, 0].ravel()}
    assert cols == set(range(64))


def test_template_parameters_are_shape_threads_elements_per_access() -> None:
    # Iterations is derived, not a parameter: the header accepts a configuration where
    # Threads * Iterations * ElementsPerAccess != tile size (64 x 60) without a static_assert
    tm = PitchLinearStripminedThreadMap((64, 60), 128, 4)
    assert tuple(tm.iterations) == (1, -(-60 // (128 // 16)))
    assert 128 * tm.iterations.strided * 4 != 64 * 60
    # ... and rejects what its static_assert (line 97) rejects
    with pytest.raises(ValueError, match="divisible"):
        PitchLinearStripminedThreadMap((64, 64), 24, 4)


def _installed_header() -> Path | None:
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "source/include/cutlass/transform/pitch_linear_thread_map.h"
    return path if path.is_file() else None


def test_header_declaration_has_no_iterations_parameter_and_no_base_class() -> None:
    header = _installed_header()
    if header is None:
        pytest.skip("nvidia-cutlass (cutlass_library) headers are not installed")
    text = header.read_text(encoding="utf-8")
    decl = re.search(r"template\s*<([^>]*)>\s*struct\s+PitchLinearStripminedThreadMap\s*([:{])", text)
    assert decl is not None
    params = [p.strip() for p in decl.group(1).split(",")]
    assert params == ["typename Shape_", "int Threads", "int ElementsPerAccess = 1"]
    assert decl.group(2) == "{"  # no ": public PitchLinearThreadMap<...>"
    assert not (header.parent.parent / "layout" / "thread_map.h").exists()


def test_m63_only_row_63_is_masked_and_predicates_pass() -> None:
    rel = "cutlass/stripmined_64x64_128t_v4_m63.yaml"
    rep = report(rel)
    assert rep["sizes"] == {"M": 63, "N": 64}
    assert rep["verdict"] == "pass"
    pred = result(rel, "predicates", 0, "src")
    assert pred["status"] == "PASS"
    assert pred["summary"]["out_of_bounds"] == 0 and pred["summary"]["lost"] == 0
    # expected: the iteration s of thread t reads row t/16 + 8s; masked iff that row >= 63
    expected = {(t, s) for t in range(THREADS) for s in range(ITER_S) if header_access(t, s, 0)[1] >= 63}
    assert expected == {(t, 7) for t in range(112, 128)}
    src = api.simulate(SPECS / rel, blocks=[0])[0][0]
    masked = ~src.pred
    assert set(zip(src.thread[masked].tolist(), src.step[masked].tolist())) == expected
    assert set(src.coord[masked][:, 0].tolist()) == {63}
    assert int(masked.sum()) == len(expected) * EPA == 64
    assert int(src.coord[~masked][:, 0].max()) == 62


def test_note_floor_stride_7_would_not_cover_the_tile() -> None:
    # the note's "row_stride = 63 / 8 = 7": rows a + 7s (a, s < 8) reach only row 56
    rows = [a + 7 * s for a in range(8) for s in range(8)]
    assert max(rows) == 56 and len(set(rows)) == 57
    layout = make_layout((8, 8), (1, 7))  # (anchor, iteration) -> row
    assert size(layout) == 64 and cosize(layout) == 57  # 64 accesses onto 57 rows
    assert sorted(int(layout(i)) for i in range(64)) == sorted(rows)
    assert cosize(make_layout((8, 8), (1, 8))) == 64  # the header's Delta = 8: a bijection


# ---------------------------------------------------------------------------------------
# note 000: GenRowMajor
# ---------------------------------------------------------------------------------------


def test_gen_row_major_has_stride_n_1_not_1_n() -> None:
    m, n = 1024, 1024
    # CuTe's LayoutRight: the right-most mode is the fastest; stride of mode 0 is N
    assert make_layout((m, n), GenRowMajor).stride == (n, 1)
    assert make_layout((m, n), GenColMajor).stride == (1, m)  # the note's (1, 1024)
    row_major = make_layout((m, n), GenRowMajor)
    for i, j in [(0, 1), (1, 0), (3, 5), (52, 86), (1023, 1023)]:
        assert row_major((i, j)) == i * n + j  # i is the row
    # the note's worked numbers: gA(4,6) of block (3,5) is pA[(48+4)*1024 + (80+6)],
    # not pA[48+4 + (80+6)*1024]
    assert row_major((52, 86)) == 53334 != 52 + 86 * 1024
    # smem example: sA(3,5) (GenRowMajor) and sB(5,3) (GenColMajor) are both word 53, not 83
    assert make_layout((16, 16), GenRowMajor)((3, 5)) == 3 * 16 + 5 == 53
    assert make_layout((16, 16), GenColMajor)((5, 3)) == 5 + 3 * 16 == 53


# ---------------------------------------------------------------------------------------
# note 000: coalescing of the register transposes
# ---------------------------------------------------------------------------------------

N_ELEMS = 1024  # x is M x N = 1024 x 1024 f32 row-major, y is N x M row-major


def reg_transpose_sectors(thr: tuple[int, int]) -> int:
    """Sectors of warp 0, block 0, of a 16x16 tile of a 1024-wide row-major f32 matrix
    partitioned by a (16,16) thread layout with stride ``thr``."""
    t2c = thread_to_coord((16, 16), thr)
    addrs = [(t2c[t][0] * N_ELEMS + t2c[t][1]) * F32 for t in range(WARP)]
    return sectors(addrs, F32)


IDEAL_32BIT = WARP * F32 // SECTOR  # 4 sectors for 32 lanes x 4 B


@pytest.mark.parametrize(
    ("rel", "load_thr", "store_thr"),
    [
        ("cute_transpose/row2col_reg.yaml", (1, 16), (16, 1)),  # tA GenColMajor, tB GenRowMajor
        ("cute_transpose/col2row_reg.yaml", (16, 1), (1, 16)),  # tA GenRowMajor, tB GenColMajor
    ],
)
def test_register_transposes_uncoalesced_side(
    rel: str, load_thr: tuple[int, int], store_thr: tuple[int, int]
) -> None:
    exp_load, exp_store = reg_transpose_sectors(load_thr), reg_transpose_sectors(store_thr)
    load, store = result(rel, "coalescing", 0, "src"), result(rel, "coalescing", 0, "dst")
    # the specs' bound encodes the note's rule: loads may over-fetch 4x, stores must be ideal
    for res, exp, bound in ((load, exp_load, 4.0), (store, exp_store, 1.0)):
        assert res["summary"]["access_bits"] == 32
        assert res["summary"]["ideal_sectors_per_request"] == IDEAL_32BIT
        assert res["summary"]["sectors_per_request"] == exp
        assert res["status"] == ("PASS" if exp / IDEAL_32BIT <= bound else "FAIL")


def test_row2col_uncoalesced_load_col2row_uncoalesced_store() -> None:
    assert (reg_transpose_sectors((1, 16)), reg_transpose_sectors((16, 1))) == (16, 4)
    r2c, c2r = "cute_transpose/row2col_reg.yaml", "cute_transpose/col2row_reg.yaml"
    assert result(r2c, "coalescing", 0, "src")["summary"]["ratio"] == 4  # uncoalesced load
    assert result(r2c, "coalescing", 0, "src")["status"] == "PASS"  # within the 4x load bound
    assert result(r2c, "coalescing", 0, "dst")["status"] == "PASS"
    assert result(c2r, "coalescing", 0, "src")["status"] == "PASS"
    assert result(c2r, "coalescing", 0, "dst")["status"] == "FAIL"
    # both move the same data and waste the same number of sectors: only the side differs
    assert (
        result(r2c, "coalescing", 0, "src")["summary"]["sectors"]
        == result(c2r, "coalescing", 0, "dst")["summary"]["sectors"]
    )


# ---------------------------------------------------------------------------------------
# note 000: rvectorized vs cvectorized
# ---------------------------------------------------------------------------------------


def test_rvectorized_loads_128_bit_cvectorized_vectorizes_nothing() -> None:
    rvec, cvec = "cute_transpose/row_rvectorized.yaml", "cute_transpose/row_cvectorized.yaml"
    # rvectorized copy_a: thread (p,q) = (t/16, t%16) owns gA(p, 4q..4q+3) = 16 contiguous,
    # 16-B aligned bytes of x, and sA words 64p + 4q + v (contiguous): one 128-bit access
    rv_load = result(rvec, "coalescing", 0, "src")["summary"]
    assert rv_load["access_bits"] == 128
    warp0 = [((t // 16) * N_ELEMS + 4 * (t % 16)) * F32 for t in range(WARP)]
    assert rv_load["sectors_per_request"] == sectors(warp0, 16) == 16 == rv_load["ideal_sectors_per_request"]
    # rvectorized store: thread (p,q) writes gB(4p+v, q): per instruction v, 2 rows x 16
    # consecutive floats -> 4 sectors, ideal
    rv_store = result(rvec, "coalescing", 2, "dst")["summary"]
    warp0 = [((4 * (t // 16)) * N_ELEMS + t % 16) * F32 for t in range(WARP)]
    assert rv_store["sectors_per_request"] == sectors(warp0, F32) == IDEAL_32BIT
    # cvectorized: thread (p,q) owns gA(4p+v, q) (4 rows apart) and gB(p, 4q+v) with sB
    # words p + 16(4q+v) (stride 16): no side has 4 contiguous elements on both ends
    for stage, side in ((0, "src"), (0, "dst"), (2, "src"), (2, "dst")):
        assert result(cvec, "vectorize", stage, side)["summary"]["declared_bits"] == 32
    cv_store = result(cvec, "coalescing", 2, "dst")["summary"]
    warp0 = [((t // 16) * N_ELEMS + 4 * (t % 16)) * F32 for t in range(WARP)]  # v = 0
    assert cv_store["sectors_per_request"] == sectors(warp0, F32) == 16
    assert cv_store["ideal_sectors_per_request"] == IDEAL_32BIT
    assert result(cvec, "coalescing", 0, "src")["summary"]["sectors_per_request"] == IDEAL_32BIT


# ---------------------------------------------------------------------------------------
# note 000: swizzled vs unswizzled shared memory
# ---------------------------------------------------------------------------------------


def smem_words(thr: tuple[int, int], smem: tuple[int, int], sw: bool, warp: int) -> list[int]:
    """Words of one warp of a 16x16 f32 smem tile with layout (16,16):``smem`` partitioned
    by the thread layout (16,16):``thr``, optionally through Swizzle<4,0,4>."""
    t2c = thread_to_coord((16, 16), thr)
    words = []
    for t in range(warp * WARP, (warp + 1) * WARP):
        i, j = t2c[t]
        w = i * smem[0] + j * smem[1]
        words.append(swizzle(4, 0, 4, w) if sw else w)
    return words


@pytest.mark.parametrize(
    ("kernel", "stage", "side", "thr", "smem"),
    [
        # row_smem reads sB = (16,16):(1,16) with tB = (16,16):(16,1)
        ("row_smem", 2, "src", (16, 1), (1, 16)),
        # col_smem writes sA = (16,16):(16,1) with tA = (16,16):(1,16)
        ("col_smem", 0, "dst", (1, 16), (16, 1)),
    ],
)
def test_swizzle_removes_the_bank_conflicts(
    kernel: str, stage: int, side: str, thr: tuple[int, int], smem: tuple[int, int]
) -> None:
    plain = [wavefronts(smem_words(thr, smem, False, w)) for w in range(8)]
    swz = [wavefronts(smem_words(thr, smem, True, w)) for w in range(8)]
    assert plain == [8] * 8 and swz == [1] * 8
    bank_plain = result(f"cute_transpose/{kernel}.yaml", "bank_conflicts", stage, side)
    bank_swz = result(f"cute_transpose/{kernel}_swizzled.yaml", "bank_conflicts", stage, side)
    s = bank_plain["summary"]
    assert bank_plain["status"] == "FAIL"
    assert s["max_wavefronts"] == max(plain)
    assert s["ideal_wavefronts"] == s["instructions"]
    assert s["wavefronts"] == max(plain) * s["instructions"]
    s = bank_swz["summary"]
    assert bank_swz["status"] == "PASS"
    assert s["max_wavefronts"] == max(swz) == 1
    assert s["wavefronts"] == s["ideal_wavefronts"] == s["instructions"]
    # the swizzle changes nothing in global memory
    for g_stage, g_side in ((0, "src"), (2, "dst")):
        a = result(f"cute_transpose/{kernel}.yaml", "coalescing", g_stage, g_side)["summary"]
        b = result(f"cute_transpose/{kernel}_swizzled.yaml", "coalescing", g_stage, g_side)["summary"]
        assert a["sectors"] == b["sectors"]


def test_every_transpose_still_transposes() -> None:
    # the note's prose about GenRowMajor is wrong, the kernels are not
    for path in sorted((SPECS / "cute_transpose").glob("*.yaml")):
        flow = [r for r in report(str(path.relative_to(SPECS)))["results"] if r["check"] == "dataflow"]
        assert len(flow) == 1 and flow[0]["status"] == "PASS", path.name
        assert flow[0]["summary"]["transform"] == "transpose"
        assert flow[0]["summary"]["wrong_values"] == 0
