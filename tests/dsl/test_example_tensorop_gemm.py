"""NVIDIA's CuTe DSL example ``tensorop_gemm`` (Ampere), its partitions verified in pytest without a GPU.

The construction follows ``examples/python/CuTeDSL/cute/ampere/kernel/dense_gemm/tensorop_gemm.py``
of NVIDIA/cutlass at commit 7cd295cececc3144ab0e1001bdd302c7ff21507f (the file's last change in the
snapshot at 7107b05535f8977f5ecb9d01ee203205b1fd9bc4), with the example's defaults (f16 A/B/C, f32
accumulators, ``atom_layout_mnk (2,2,1)``, ``--a_major m --b_major n --c_major n``):
``TensorOpGemm.__init__`` (tile 128x128x32, 4 stages, 128 threads), ``__call__`` (the shared layouts
of ``_make_smem_layout_AB``/``_make_smem_layout_C``, the ``cp.async`` atom and
``_make_gmem_tiled_copy_AB``, the universal atom and ``_make_gmem_tiled_copy_C``, the
``MmaF16BF16Op`` tiled MMA with its permutation) and ``kernel`` (the ``ldmatrix`` atoms and
``make_tiled_copy_A/B``; ``sA``/``sB`` as ``get_tensor(layout, swizzle=...)``, the swizzle on the
pointer; ``partition_C`` of ``sC`` for the epilogue's ``autovec_copy``).

Two specs, one per phase of the kernel, for one stage of the shared-memory pipeline:

* the mainloop: the ``cp.async`` copies of A and B into ``sA``/``sB`` and the ``ldmatrix`` reads
  the MMA's A and B fragments come from; the K loop is the grid's z (each k-tile a block);
* the epilogue: the accumulators (stage 0 stands for them: ``partition_C`` of the tile), the
  MMA's C partition of ``sC`` (``autovec_copy(tCrD, tCsC)``), then ``tiled_copy_C`` from ``sC``
  to registers and out to C.

The threadblock rasterisation (``raster_tile``) permutes which block takes which tile and is
left out: block ``(bx, by)`` takes tile ``(bx, by)``.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

pytest.importorskip("cutlass.cute", reason="the CuTe DSL (pip install 'threadmap[dsl]') is not installed")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.tensor_utils import LayoutEnum  # noqa: E402

from threadmap import Spec, registers, side, tile  # noqa: E402
from threadmap.dsl import capture, smem_layout, verify  # noqa: E402
from threadmap.testing.assertions import assert_dsl_partitions  # noqa: E402

ROW, COL = LayoutEnum.ROW_MAJOR, LayoutEnum.COL_MAJOR


class TensorOpGemmPartitions:
    """The layouts, tiled copies and tiled MMA ``TensorOpGemm`` builds.  ``base_bits_in_bytes``:
    the example's shared-memory swizzle base (``log2(copy_bits // 8)``, on byte addresses);
    False plants the bug its comment warns of (the base in elements)."""

    cta_tiler = (128, 128, 32)
    num_stages = 4
    mma_inst_shape = (16, 8, 16)

    def __init__(self, atom_layout_mnk: tuple[int, int, int] = (2, 2, 1), *, a_major: Any = COL,
                 b_major: Any = COL, c_major: Any = ROW, base_bits_in_bytes: bool = True) -> None:
        self.ab_dtype = self.c_dtype = cutlass.Float16
        self.acc_dtype = cutlass.Float32
        self.atom_layout_mnk = atom_layout_mnk
        self.num_threads = math.prod(atom_layout_mnk) * 32
        self.bM, self.bN, self.bK = self.cta_tiler
        self.a_major_mode, self.b_major_mode, self.c_major_mode = a_major, b_major, c_major
        self.base_bits_in_bytes = base_bits_in_bytes

    def _make_smem_layout_AB(self, dtype: Any, major_mode: Any, copy_bits: int, smem_tiler: tuple) -> tuple:
        major_mode_size = smem_tiler[1] if major_mode == ROW else smem_tiler[0]
        major_mode_size = min(major_mode_size, 128 * 8 // dtype.width)  # at most 128 bytes
        swizzle_bits = min(int(math.log2(major_mode_size * dtype.width // copy_bits)), 3)
        base_bits = (int(math.log2(copy_bits // 8)) if self.base_bits_in_bytes
                     else int(math.log2(copy_bits // dtype.width)))
        shift_bits = int(math.log2(copy_bits // dtype.width))
        swizzle = cute.make_swizzle(swizzle_bits, base_bits, shift_bits)
        outer = (cute.make_layout((8, major_mode_size), stride=(major_mode_size, 1)) if major_mode == ROW
                 else cute.make_layout((major_mode_size, 8), stride=(1, major_mode_size)))
        return cute.tile_to_shape(outer, smem_tiler, (0, 1, 2)), swizzle

    def _make_smem_layout_C(self, dtype: Any, major_mode: Any, copy_bits: int, smem_tiler: tuple) -> Any:
        major_mode_size = smem_tiler[1] if major_mode == ROW else smem_tiler[0]
        swizzle_bits = min(int(math.log2(major_mode_size * dtype.width // copy_bits)), 3)
        outer = (cute.make_layout((8, major_mode_size), stride=(major_mode_size, 1)) if major_mode == ROW
                 else cute.make_layout((major_mode_size, 8), stride=(1, major_mode_size)))
        atom = cute.make_composed_layout(cute.make_swizzle(swizzle_bits, 3, 4), 0, outer)
        if major_mode == COL:
            atom = cute.make_composed_layout(cute.make_swizzle(0, 3, 4), 0, outer)
        return cute.tile_to_shape(atom, smem_tiler, (0, 1))

    def _gmem_tiled_copy(self, atom_copy: Any, dtype: Any, major_mode: Any, copy_bits: int, extent_k: int,
                         extent_m: int) -> Any:
        """``_make_gmem_tiled_copy_AB`` (``extent_k = bK``) and ``_make_gmem_tiled_copy_C`` (``bN``)."""
        copy_elems = copy_bits // dtype.width
        shape_dim_1 = extent_k // copy_elems
        thread_layout = cute.make_layout((self.num_threads // shape_dim_1, shape_dim_1), stride=(shape_dim_1, 1))
        if major_mode != ROW:
            shape_dim_0 = extent_m // copy_elems
            thread_layout = cute.make_layout((shape_dim_0, self.num_threads // shape_dim_0), stride=(1, shape_dim_0))
        value_layout = cute.make_layout((1, copy_elems)) if major_mode == ROW else cute.make_layout((copy_elems, 1))
        return cute.make_tiled_copy_tv(atom_copy, thread_layout, value_layout)

    def build(self) -> dict:
        ab_copy_bits = 128
        sA_layout, sA_swizzle = self._make_smem_layout_AB(self.ab_dtype, self.a_major_mode, ab_copy_bits,
                                                          (self.bM, self.bK, self.num_stages))
        sB_layout, sB_swizzle = self._make_smem_layout_AB(self.ab_dtype, self.b_major_mode, ab_copy_bits,
                                                          (self.bN, self.bK, self.num_stages))
        sC_layout = self._make_smem_layout_C(self.c_dtype, self.c_major_mode, ab_copy_bits, (self.bM, self.bN))
        atom_async_copy = cute.make_copy_atom(
            cute.nvgpu.cpasync.CopyG2SOp(cache_mode=cute.nvgpu.LoadCacheMode.GLOBAL), self.ab_dtype,
            num_bits_per_copy=ab_copy_bits)
        tiled_copy_A = self._gmem_tiled_copy(atom_async_copy, self.ab_dtype, self.a_major_mode, ab_copy_bits,
                                             self.bK, self.bM)
        tiled_copy_B = self._gmem_tiled_copy(atom_async_copy, self.ab_dtype, self.b_major_mode, ab_copy_bits,
                                             self.bK, self.bM)
        atom_sync_copy = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), self.c_dtype, num_bits_per_copy=128)
        tiled_copy_C = self._gmem_tiled_copy(atom_sync_copy, self.c_dtype, self.c_major_mode, 128, self.bN, self.bM)
        op = cute.nvgpu.warp.MmaF16BF16Op(self.ab_dtype, self.acc_dtype, self.mma_inst_shape)
        permutation_mnk = (self.atom_layout_mnk[0] * self.mma_inst_shape[0],
                           self.atom_layout_mnk[1] * self.mma_inst_shape[1] * 2,
                           self.atom_layout_mnk[2] * self.mma_inst_shape[2])
        tiled_mma = cute.make_tiled_mma(op, cute.make_layout(self.atom_layout_mnk), permutation_mnk=permutation_mnk)
        atom_copy_s2r_A = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(self.a_major_mode != ROW, 4),
                                              self.ab_dtype)
        atom_copy_s2r_B = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(self.b_major_mode != ROW, 4),
                                              self.ab_dtype)
        stage0 = (None, None, 0)
        return {
            "sA": smem_layout(cute.slice_(sA_layout, stage0), sA_swizzle, element=self.ab_dtype),
            "sB": smem_layout(cute.slice_(sB_layout, stage0), sB_swizzle, element=self.ab_dtype),
            "sA_swizzle": sA_swizzle, "sC": sC_layout,
            "tiled_copy_A": tiled_copy_A, "tiled_copy_B": tiled_copy_B, "tiled_copy_C": tiled_copy_C,
            "tiled_mma": tiled_mma,
            "s2r_A": cute.make_tiled_copy_A(atom_copy_s2r_A, tiled_mma),
            "s2r_B": cute.make_tiled_copy_B(atom_copy_s2r_B, tiled_mma),
        }


def mainloop_spec(M: int, N: int, K: int, **kw: Any) -> Spec:
    """One pipeline stage of the mainloop.  Expectations, derived from the construction:

    * ``cp.async``: M-major A (and N-major B) take thread layout ``(bM/8, 128/(bM/8)) = (16, 8)``,
      ``(1, 16)``-strided, with 8 values down M: a 128 x 8 slab, ``bK / 8 = 4`` of them per tile:
      128 threads x 8 values x 4 = 128 x 32, each element once; one 128-bit access each
      (8 halves consecutive in the M-major tensor and in sA: the swizzle's base is 16 bytes).
    * ``ldmatrix``: the A fragments of the (2,2,1) MMA atoms: the warps at N-position 0 and 1
      read the same A, so each element of sA is read twice (and of sB twice, by the M-warps):
      coverage replicated, r = 2; a tile of A is read by each of the ``N / bN`` block columns.
    * Bank conflicts: the 64-half (128-byte) M-major rows of the atom ``(64,8):(1,64)`` swizzled
      by Sw<3,4,3> on bytes put 16-byte chunk c of row r at chunk ``c ^ (r % 8)``: the 8 rows an
      8-lane phase of ``ldmatrix`` (or 8 chunks of one row a ``cp.async`` phase) touch are 8
      distinct chunks of 128 bytes, all 32 banks once: the ideal (0 extra wavefronts).
    """
    g = TensorOpGemmPartitions(**kw)
    p = g.build()
    bM, bN, bK = g.cta_tiler
    s = (Spec("tensorop_gemm mainloop (CuTe DSL example)").element(cutlass.Float16).threads(g.num_threads)
         .sizes(M=M, N=N, K=K).grid(f"ceil_div(M, {bM})", f"ceil_div(N, {bN})", f"ceil_div(K, {bK})")
         .tensor("A", "(M,K):(1,M)", "global").tensor("B", "(N,K):(1,N)", "global")
         .tensor("sA", p["sA"], "shared", align=1024).tensor("sB", p["sB"], "shared", align=1024))
    s.copy(p["tiled_copy_A"], tile("A", (bM, bK), "bx", "bz"), "sA", predicate="bounds",
           name="cute.copy(tiled_copy_A, tAgA, tAsA, pred=tApA)")
    s.copy(p["tiled_copy_B"], tile("B", (bN, bK), "by", "bz"), "sB", predicate="bounds",
           name="cute.copy(tiled_copy_B, tBgB, tBsB, pred=tBpB)")
    s.barrier()
    s.copy(p["s2r_A"], "sA", registers("tCrA"), name="cute.copy(tiled_copy_s2r_A, tCsA_p, tCrA_copy_view)")
    s.copy(p["s2r_B"], "sB", registers("tCrB"), name="cute.copy(tiled_copy_s2r_B, tCsB_p, tCrB_copy_view)")
    return s.expect(verdict="pass", coverage="replicated", bank_conflicts=0, vector_bits=128)


def epilogue_spec(M: int, N: int, **kw: Any) -> Spec:
    """The epilogue.  Expectations, derived: the MMA's C partition gives 128 threads x 128
    values = the 128 x 128 tile, each element once (both in the accumulators and in sC); its
    32-bit stores (two halves along N) put lanes 4i..4i+3 on row i: 8 rows x 16 bytes, and
    Sw<3,3,4> on element offsets moves the 8-half chunk of row r to chunk ``c ^ (r % 8)``: 8
    distinct chunks, one wavefront.  ``tiled_copy_C`` (threads (8, 16):(16, 1), values (1, 8)): an
    8 x 128 slab, 16 of them, each element once, 128-bit accesses, a warp reads 2 rows of 256
    contiguous bytes of sC (the swizzle keeps 16-byte chunks) and writes 512 bytes of C: the
    ideal.  The values reach C at the coordinates they left the accumulators: a copy."""
    g = TensorOpGemmPartitions(**kw)
    p = g.build()
    bM, bN, _ = g.cta_tiler
    s = (Spec("tensorop_gemm epilogue (CuTe DSL example)").element(cutlass.Float16).threads(g.num_threads)
         .sizes(M=M, N=N).grid(f"ceil_div(M, {bM})", f"ceil_div(N, {bN})")
         .tensor("Acc", "(M,N):(N,1)", "global").tensor("C", "(M,N):(N,1)", "global")
         .tensor("sC", p["sC"], "shared", align=1024))
    s.copy(tile("Acc", (bM, bN), "bx", "by").mma(p["tiled_mma"], "C"), registers("tCrD"),
           name="the accumulators (tiled_mma.make_fragment_C(tCgC))")
    s.copy(registers("tCrD"), side("sC").mma(p["tiled_mma"], "C"), vector_bits=32, name="cute.autovec_copy(tCrD, tCsC)")
    s.barrier()
    s.copy(p["tiled_copy_C"], "sC", registers("tCrC_epilogue"),
           name="cute.autovec_copy(tCsC_epilogue, tCrC_epilogue)")
    s.copy(p["tiled_copy_C"], registers("tCrC_epilogue"), tile("C", (bM, bN), "bx", "by"), predicate="bounds",
           name="cute.copy(tiled_copy_C, tCrC_epilogue, tCgC_epilogue, pred=tCpC)")
    return s.expect(verdict="pass", transform="copy", bank_conflicts=0)


def test_the_premises_of_the_derivations() -> None:
    def build() -> dict:
        g = TensorOpGemmPartitions()
        p = g.build()
        return {"threads": g.num_threads, "sw": p["sA_swizzle"], "sA": p["sA"], "mma": p["tiled_mma"],
                "copy_A": p["tiled_copy_A"]}

    got = capture(build)
    assert got["threads"] == 128
    sw = got["sw"]  # on byte addresses: 16-byte chunks (base 4), 3 bits, rows of 128 bytes (shift 3)
    assert (sw.num_bits, sw.num_base, sw.num_shft) == (3, 4, 3)
    assert str(got["sA"].layout_a) == "Sw<3,3,3>"  # the same on half offsets
    # permutation_mnk = (atom_M * 16, atom_N * 8 * 2, atom_K * 16) for the (2,2,1) atom layout
    assert got["mma"].permutation == (2 * 16, 2 * 8 * 2, 1 * 16) == got["mma"].tile_shape
    assert got["copy_A"].tiler_mn == (128, 8) and got["copy_A"].atom.num_val_src == 8


def test_the_mainloop_partitions_are_as_derived() -> None:
    # the example's default problem, --mnkl 256,256,512,1
    assert [r.verdict for r in assert_dsl_partitions(mainloop_spec, 256, 256, 512)] == ["pass"]


def test_the_epilogue_partitions_are_as_derived() -> None:
    assert [r.verdict for r in assert_dsl_partitions(epilogue_spec, 256, 256)] == ["pass"]


def test_planted_swizzle_base_in_elements_is_caught() -> None:
    """The example's comment: "base_bits is in bytes (copy_bits / 8), not in elements".
    Planted: the base in elements, log2(128 / 16) = 3: Sw<3,3,3> on bytes, Sw<3,2,3> on halves,
    swaps 8-byte halves of the 16-byte chunks, so the 128-bit cp.async stores and ldmatrix rows
    are no longer contiguous (vectorize), and ldmatrix phases meet bank 0 twice."""
    with pytest.raises(AssertionError) as e:
        assert_dsl_partitions(mainloop_spec, 256, 256, 512, base_bits_in_bytes=False)
    assert "vectorize" in str(e.value) and "not contiguous" in str(e.value)
    run = verify(mainloop_spec, 256, 256, 512, base_bits_in_bytes=False).runs[0]
    assert run.verdict == "fail" and {"vectorize", "bank_conflicts"} <= set(run.failing)
    vec = next(r for r in run.results if r.check == "vectorize" and r.status == "FAIL")
    assert vec.findings and "not contiguous" in vec.findings[0].message
    banks = next(r for r in run.results if r.check == "bank_conflicts" and r.status == "FAIL")
    assert banks.summary.max_wavefronts == 8 and banks.summary.ideal_wavefronts * 2 == banks.summary.wavefronts
