"""What the real templates print for each configuration, checked against threadmap's own
thread maps, a hand derivation of one shared layout, and properties of the others."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import threadmap.api as api
from tests.sweep.conftest import by_kernel
from threadmap.cutlass import THREAD_MAPS
from threadmap.spec.load import loads_spec
from threadmap.sweep.extract import Extracted
from threadmap.sweep.library import Configuration
from threadmap.sweep.specs import NotAnalysed, spec_text

SIMT = "cutlass_simt_sgemm_128x128_8x4_tn_align1"
CROSS4 = "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_tn_align8"
CROSS3 = "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x3_tn_align8"
ALIGN2 = "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_nt_align2"


def test_the_three_stage_crosswise_buffer_is_one_stage_layout_with_its_rows_spread(
        configs: list[Configuration], extracted: dict[str, Extracted]) -> None:
    """TensorOpMultiplicandCrosswise<16, 32> (tensor_op_multiplicand_sm75.h): kFactor = 64 /
    32 = 2 rows of 32 halves share a 64-element row of the buffer, and a row of index v sits
    at v * stride * kFactor, the stride being the buffer's contiguous extent kK * kStages = 96:
    rows of 64 elements, 192 apart, the swizzle (of 16-byte chunks) inside a row."""
    w = spec_text(by_kernel(configs, CROSS3), extracted[CROSS3], "test")
    for layout in w.layouts.values():
        outer, swizzle, _ = layout.split(" o ")
        assert outer == "(64,64):(1,192)" and swizzle.startswith("Sw<")
    # one stage of it is the K-major CuTe swizzle a hand-written spec of this tile uses
    assert w.layouts["A"] == "(64,64):(1,192) o Sw<2,3,3> o (128,32):(32,1)"


def test_every_global_thread_map_is_what_threadmap_cutlass_computes(extracted: dict[str, Extracted]) -> None:
    """The C++ map's every thread's first access, iterations and steps are those of the
    threadmap.cutlass map with the template parameters threadmap_spec.h printed."""
    seen = 0
    distinct = {id(ex): ex for ex in extracted.values()}
    for ex in distinct.values():
        assert not ex.error, ex.error
        for op in ex.operands.values():
            tm = op.map
            assert tm is not None
            args = [tuple(tm["shape"]), tm["threads"]]
            if "warp_thread_arrangement" in tm:
                args.append(tuple(tm["warp_thread_arrangement"]))
            py = THREAD_MAPS[tm["name"]](*args, tm["elements_per_access"])
            assert (tuple(py.iterations), tuple(py.delta)) == (op.gmap.iterations, op.gmap.delta)
            c0, s0 = py.initial_offset(py.thread_ids())
            assert np.array_equal(np.stack([c0, s0], axis=-1), op.gmap.initial)
            seen += 1
    assert seen == 2 * len(distinct) == 10


def test_the_simt_shared_layouts_are_the_headers_packed_layouts(extracted: dict[str, Extracted]) -> None:
    """default_mma_core_sm80.h's SIMT multistage core: SmemLayoutA = layout::ColumnMajor,
    SmemLayoutB = layout::RowMajor, no padding (MmaPolicy<..., MatrixShape<0, 0>,
    MatrixShape<0, 0>>); SharedStorage packs kStages k-tiles: A is (kM, kK * kStages) with
    leading dimension kM, B (kK * kStages, kN) with leading dimension kN.  For the 128x128x8
    tile: A(m, k) = m + 128 k, B(k, n) = 128 k + n."""
    ex = extracted[SIMT]
    m, k = np.meshgrid(np.arange(128), np.arange(8), indexing="ij")
    assert np.array_equal(ex.operands["A"].table, m + 128 * k)
    k, n = np.meshgrid(np.arange(8), np.arange(128), indexing="ij")
    assert np.array_equal(ex.operands["B"].table, 128 * k + n)
    # its global map walks K, the shared one M: the copy still pairs equal elements
    a = ex.operands["A"]
    assert a.gmap.iterations != a.smap.iterations


@pytest.mark.parametrize("kernel", [CROSS4, CROSS3, ALIGN2])
def test_tensorop_shared_layouts_place_a_stage_injectively_inside_the_buffer(
        extracted: dict[str, Extracted], kernel: str) -> None:
    """A stage's tile lands on distinct offsets inside the kStages-tile buffer, and its
    128-bit vectors (8 halves along the contiguous dimension) stay contiguous and aligned."""
    ex = extracted[kernel]
    for w, op in ex.operands.items():
        t = op.table
        assert np.unique(t).size == t.size
        assert 0 <= t.min() and t.max() < t.size * ex.stages
        contiguous_rows = op.layout.endswith("ColumnMajor")
        v = t if contiguous_rows else t.T  # (contiguous, strided)
        chunks = v.reshape(v.shape[0] // 8, 8, v.shape[1])
        assert np.all(chunks[:, 0, :] % 8 == 0), w
        assert np.all(np.diff(chunks, axis=1) == 1), w


def test_specs_are_written_and_verified(configs: list[Configuration], extracted: dict[str, Extracted]) -> None:
    """Each configuration has a spec that threadmap verifies."""
    for c in configs:
        try:
            w = spec_text(c, extracted[c.kernels[0]], "test")
        except NotAnalysed as e:
            pytest.fail(f"{c.kernels[0]}: {e}")
        doc = yaml.safe_load(w.text)
        assert "&id" not in w.text  # each side spells its thread map out
        report = api.verify(loads_spec(w.text, "yaml", c.kernels[0]))
        assert not report.errors and report.runs, report.errors
        assert all(r.verdict == "pass" for r in report.runs), [r.failing for r in report.runs]
        assert doc["expect"] == {"coverage": "replicated"}
    # the narrow operand: 4 accesses of 2 halves per 8-half vector
    w = spec_text(by_kernel(configs, ALIGN2), extracted[ALIGN2], "test")
    doc = yaml.safe_load(w.text)
    copy_a = doc["stages"][0]["copy"]
    assert copy_a["atom"] == "SM80_CP_ASYNC_CACHEALWAYS<uint32_t>"
    assert copy_a["src"]["thread_map"]["accesses_per_vector"] == 4
    assert "M % 2 == 0" in doc["assume"]
