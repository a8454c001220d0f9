"""NVIDIA's CuTe DSL example ``dense_gemm`` (Hopper), its partitions verified in pytest without a GPU.

The construction follows ``examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm.py``
of NVIDIA/cutlass at commit cb37157db50d0528c4aea99feb37946ec278e3d9 (the file's last change in the
snapshot at 7107b05535f8977f5ecb9d01ee203205b1fd9bc4), with the example's defaults (f16 A/B/C, f32
accumulators, tile 128x128, cluster 1x1, ``--a_major k --b_major k --c_major n``):
``HopperWgmmaGemmKernel.__init__`` (the atom layout, one warpgroup per atom), ``_setup_attributes``
(``make_trivial_tiled_mma``, the K tile, ``compute_tile_shape_or_override``, ``_make_smem_layouts``)
and the kernel's epilogue (``sm90_get_smem_store_op``, the ``StMatrix8x8x16bOp`` atom,
``make_tiled_copy_C_atom``, ``make_tiled_copy_S``; ``sA``/``sB`` and ``sC`` with the layouts'
swizzles moved to the pointers).  The stage counts are fixed at 4 (``_compute_stages`` asks the
GPU's shared-memory capacity; stage 0 is what is verified).

Verified: the accumulators' partition of the CTA tile (``partition_C``), the register -> shared
store of one epilogue subtile through stmatrix, and the wgmma operands' shared layouts (each
``wgmma`` reads them through a descriptor ``make_gmma_desc`` builds).  The TMA copies are not
modelled by ``threadmap.dsl.convert`` (see docs/dsl.md).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

pytest.importorskip("cutlass.cute", reason="the CuTe DSL (pip install 'threadmap[dsl]') is not installed")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
import cutlass.utils.hopper_helpers as sm90_utils  # noqa: E402
from cutlass.tensor_utils import LayoutEnum  # noqa: E402

from threadmap import Spec, registers, tile  # noqa: E402
from threadmap.dsl import capture, smem_layout, verify  # noqa: E402
from threadmap.layout import LayoutType, make_gmma_desc_tensor  # noqa: E402
from threadmap.testing.assertions import assert_dsl_partitions  # noqa: E402

ROW, COL = LayoutEnum.ROW_MAJOR, LayoutEnum.COL_MAJOR


class HopperGemmPartitions:
    """What ``HopperWgmmaGemmKernel`` builds.  ``r2s_layout``: the C layout the register -> shared
    store atom is chosen for (the example passes ``self.c_layout``; another value plants a bug)."""

    def __init__(self, tile_shape_mn: tuple[int, int] = (128, 128), *, r2s_layout: Any = None) -> None:
        self.acc_dtype = cutlass.Float32
        self.a_dtype = self.b_dtype = self.c_dtype = cutlass.Float16
        self.a_layout, self.b_layout, self.c_layout = ROW, ROW, ROW  # k-major A and B, n-major C
        self.tile_shape_mnk = (*tile_shape_mn, 1)
        self.atom_layout_mnk = ((2, 1, 1) if self.tile_shape_mnk[0] > 64 and self.tile_shape_mnk[1] > 128
                                else (1, 1, 1))
        self.mma_warp_groups = math.prod(self.atom_layout_mnk)
        self.threads_per_cta = self.mma_warp_groups * 128
        self.ab_stage = self.epi_stage = 4
        self.r2s_layout = self.c_layout if r2s_layout is None else r2s_layout

    def build(self) -> dict:
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.a_dtype, self.b_dtype, self.a_layout.sm90_mma_major_mode(), self.b_layout.sm90_mma_major_mode(),
            self.acc_dtype, self.atom_layout_mnk, tiler_mn=(64, self.tile_shape_mnk[1]))
        mma_inst_shape_k = cute.size(tiled_mma.shape_mnk, mode=[2])
        self.tile_shape_mnk = (self.tile_shape_mnk[0], self.tile_shape_mnk[1], mma_inst_shape_k * 4)
        is_cooperative = self.atom_layout_mnk == (2, 1, 1)
        epi_tile = sm90_utils.compute_tile_shape_or_override(self.tile_shape_mnk, self.c_dtype,
                                                             is_cooperative=is_cooperative)
        a_staged = sm90_utils.make_smem_layout_a(self.a_layout, self.tile_shape_mnk, self.a_dtype, self.ab_stage)
        b_staged = sm90_utils.make_smem_layout_b(self.b_layout, self.tile_shape_mnk, self.b_dtype, self.ab_stage)
        epi_staged = sm90_utils.make_smem_layout_epi(self.c_dtype, self.c_layout, epi_tile, self.epi_stage)
        copy_atom_r2s = sm90_utils.sm90_get_smem_store_op(self.r2s_layout, elem_ty_d=self.c_dtype,
                                                          elem_ty_acc=self.acc_dtype)
        copy_atom_C = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(self.c_layout.is_m_major_c(), 4),
                                          self.c_dtype)
        tiled_copy_C_Atom = cute.make_tiled_copy_C_atom(copy_atom_C, tiled_mma)
        tiled_copy_r2s = cute.make_tiled_copy_S(copy_atom_r2s, tiled_copy_C_Atom)
        # the accumulator fragment of one subtile in the store's register order (retile_S): the
        # r2s copy's source TV with a plain atom, to stand for the registers in a spec
        accumulators = cute.make_tiled_copy(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), self.c_dtype),
                                            tiled_copy_r2s.layout_tv_tiled, tiled_copy_r2s.tiler_mn)
        stage0 = (None, None, 0)
        return {
            "tiled_mma": tiled_mma, "epi_tile": epi_tile, "tile": self.tile_shape_mnk,
            "tiled_copy_r2s": tiled_copy_r2s, "accumulators": accumulators,
            # sA = get_tensor(staged.outer, swizzle=staged.inner); sC = make_tensor(recast_ptr(...,
            # staged.inner, dtype=c_dtype), staged.outer): the swizzles act on byte addresses
            "sA": smem_layout(cute.slice_(a_staged.outer, stage0), a_staged.inner, element=self.a_dtype),
            "sB": smem_layout(cute.slice_(b_staged.outer, stage0), b_staged.inner, element=self.b_dtype),
            "sD": smem_layout(cute.slice_(epi_staged.outer, stage0), epi_staged.inner, element=self.c_dtype),
            "epi_swizzle": epi_staged.inner,
        }


def accumulator_spec(M: int, N: int) -> Spec:
    """``partition_C`` of the CTA tile.  Derived: one warpgroup (128 threads) and the
    SM90_64x128x16 atom, whose C layout gives each thread 64 x 128 / 128 = 64 values of its 64 x 128
    tile; the 128-row tile is 2 such tiles down M: 128 threads x 128 values = 128 x 128, each
    element exactly once."""
    p = HopperGemmPartitions().build()
    tm, tn, _ = p["tile"]
    s = (Spec("hopper dense_gemm accumulators (CuTe DSL example)").element(cutlass.Float16).threads(128)
         .sizes(M=M, N=N).grid(f"ceil_div(M, {tm})", f"ceil_div(N, {tn})").tensor("C", "(M,N):(N,1)", "global"))
    s.copy(tile("C", (tm, tn), "bx", "by").mma(p["tiled_mma"], "C"), registers("accumulators"),
           name="tCgC = thr_mma.partition_C(gC_mnl)")
    return s.expect(verdict="pass")


def epilogue_spec(M: int, N: int, **kw: Any) -> Spec:
    """One epilogue subtile (64 x 32: ``compute_tile_shape_or_override`` of a 128 x 128 f16 tile)
    stored from registers to sD: ``cute.copy(tiled_copy_r2s, tRS_rD_out, tRS_sD[..., epi_buffer])``.
    Stage 0 stands for the accumulator values of the subtile (their coordinates in the store's
    register order).  Derived: stmatrix.x4 moves 8 halves a thread, 128 threads: 1024 values, a
    64 x 16 part of the subtile (the copy's tiler), twice along N (32 / 16): each element once;
    each 8-lane phase stores 8 rows of 16 bytes of one column chunk; the subtile's rows are
    64 bytes (32 halves: the SW64 atom, Swizzle<2,4,3> on bytes), and the swizzle spreads those 8
    rows over 8 distinct 16-byte bank groups: the ideal; each row address a lane gives covers 8
    consecutive halves of sD (stmatrix without .trans for an n-major C): whole 128-bit rows."""
    p = HopperGemmPartitions(**kw).build()
    em, en = p["epi_tile"]
    s = (Spec("hopper dense_gemm epilogue (CuTe DSL example)").element(cutlass.Float16).threads(128)
         .sizes(M=M, N=N).grid(f"ceil_div(M, {em})", f"ceil_div(N, {en})")
         .tensor("D", "(M,N):(N,1)", "global").tensor("sD", p["sD"], "shared", align=1024))
    s.copy(p["accumulators"], tile("D", (em, en), "bx", "by"), registers("tRS_rD"),
           name="the subtile's accumulators, tRS_rAcc = tiled_copy_r2s.retile(accumulators)")
    s.copy(p["tiled_copy_r2s"], registers("tRS_rD"), "sD", name="cute.copy(tiled_copy_r2s, tRS_rD_out, tRS_sD)")
    return s.expect(verdict="pass", bank_conflicts=0)


def test_the_premises_of_the_derivations(sm90: None) -> None:
    def build() -> dict:
        g = HopperGemmPartitions()
        p = g.build()
        return {"mma": p["tiled_mma"], "epi_tile": p["epi_tile"], "tile": p["tile"], "sw": p["epi_swizzle"],
                "r2s": p["tiled_copy_r2s"], "threads": g.threads_per_cta}

    got = capture(build)
    assert got["threads"] == 128 and got["tile"] == (128, 128, 64) and got["epi_tile"] == (64, 32)
    assert got["mma"].atom.name == "SM90_64x128x16_F32F16F16_SS" and got["mma"].size() == 128
    sw = got["sw"]
    assert (sw.num_bits, sw.num_base, sw.num_shft) == (2, 4, 3)  # SW64 on bytes
    assert got["r2s"].atom.op.name == "SM90_U32x4_STSM_N"


def test_the_accumulator_partition_is_as_derived(sm90: None) -> None:
    assert [r.verdict for r in assert_dsl_partitions(accumulator_spec, 256, 256)] == ["pass"]


def test_the_epilogue_store_is_as_derived(sm90: None) -> None:
    assert [r.verdict for r in assert_dsl_partitions(epilogue_spec, 256, 256)] == ["pass"]


def test_the_wgmma_operands_are_descriptor_layouts(sm90: None) -> None:
    """Each wgmma reads a 64 x 16 block of sA (and N x 16 of sB) through a descriptor: the
    stages ``make_smem_layout_a/b`` build are K-major 128-byte-swizzled GMMA layouts (rows of 64
    halves), so every block has one (``make_gmma_desc`` accepts exactly the canonical forms)."""
    p = capture(lambda: {k: v for k, v in HopperGemmPartitions().build().items() if k in ("sA", "sB", "tile")})
    tm, tn, tk = p["tile"]
    for name, block_mn, stage_mn in (("sA", 64, tm), ("sB", tn, tn)):
        descs = make_gmma_desc_tensor("K", p[name], (block_mn, 16), 16)
        assert len(descs) == stage_mn // block_mn * (tk // 16), name  # one per wgmma block of the stage
        assert {d.layout_type for d in descs.values()} == {LayoutType.B128}


def test_planted_store_atom_for_the_wrong_major_mode_is_caught(sm90: None) -> None:
    """Planted: the store atom chosen for an m-major C (``sm90_get_smem_store_op(COL_MAJOR, ...)``:
    stmatrix.trans) while C and sD are n-major.  Each lane's row address then stands for a column
    of 8 halves: the 128-bit accesses are not contiguous (vectorize fails, with the first one)."""
    with pytest.raises(AssertionError) as e:
        assert_dsl_partitions(epilogue_spec, 256, 256, r2s_layout=COL)
    assert "vectorize" in str(e.value)
    run = verify(epilogue_spec, 256, 256, r2s_layout=COL).runs[0]
    assert run.verdict == "fail" and "vectorize" in run.failing
    vec = next(r for r in run.results if r.check == "vectorize" and r.status == "FAIL" and r.side == "dst")
    assert "not contiguous" in vec.findings[0].message and vec.summary.max_legal_bits == 16
