"""TiledCopy / TiledMMA (threadmap.layout.atom): hand-derived expectations and properties.

The sgemm_2 setup of the study notes (seeds/002): ``make_tiled_copy(Copy_Atom<UniversalCopy<
uint128_t>, float>, Layout<Shape<_32,_8>>, Layout<Shape<_4,_1>>)`` and
``make_tiled_mma(UniversalFMA, Layout<Shape<_16,_16,_1>>)`` on 128x8 A/B tiles and a 128x128 C tile.
"""

from __future__ import annotations

import numpy as np
import pytest

from threadmap.errors import AtomError
from threadmap.layout import (
    SM80_CP_ASYNC_CACHEALWAYS,
    SM80_CP_ASYNC_CACHEGLOBAL,
    AutoVectorizingCopy,
    AutoVectorizingCopyWithAssumedAlignment,
    CopyAtom,
    DefaultCopy,
    Layout,
    Tensor,
    UniversalCopy,
    get_copy_op,
    make_compact_layout,
    make_fragment_like,
    make_identity_tensor,
    make_tiled_copy,
    make_tiled_copy_A,
    make_tiled_copy_C,
    make_tiled_copy_C_atom,
    make_tiled_mma,
    partition_shape_A,
    partition_shape_C,
    size,
)

F32_128 = CopyAtom(UniversalCopy("uint128_t"), "float")


def sgemm2_copy():  # type: ignore[no-untyped-def]
    return make_tiled_copy(F32_128, make_compact_layout((32, 8)), make_compact_layout((4, 1)))


# ------------------------------------------------------------------------------------------
# copy atoms
# ------------------------------------------------------------------------------------------


def test_copy_atom_recast_bits_to_values() -> None:
    # SrcLayout (1,128):(0,1) bits; upcast<32> -> 4 floats, upcast<16> -> 8 halves
    assert str(F32_128.val_layout_src) == "(1,4):(0,1)"
    assert F32_128.num_val_src == 4
    assert str(CopyAtom(UniversalCopy("uint128_t"), "half_t").val_layout_ref) == "(1,8):(0,1)"
    assert str(CopyAtom(UniversalCopy("uint128_t"), "double").val_layout_dst) == "(1,2):(0,1)"
    # a value wider than the instruction: upcast rounds the count up to one value
    assert str(CopyAtom(UniversalCopy("uint32_t"), "double").val_layout_src) == "(1,1):(0,1)"
    # AutoVectorizingCopy: bit layouts (1,1):(0,0) -> one value of any type
    for op in (AutoVectorizingCopy(), DefaultCopy(), AutoVectorizingCopyWithAssumedAlignment(64)):
        assert CopyAtom(op, "half_t").num_val_src == 1


def test_ldsm_atom_layouts() -> None:
    # SM75_U32x4_LDSM_N with half_t: Src (32,128):(128,1) bits -> (32,8):(8,1);
    # Dst (32,(32,4)):(32,(1,1024)) bits -> (32,(2,4)):(2,(1,64))
    a = CopyAtom(get_copy_op("SM75_U32x4_LDSM_N"), "half_t")
    assert str(a.val_layout_src) == "(32,8):(8,1)"
    assert str(a.val_layout_dst) == "(32,(2,4)):(2,(1,64))"
    assert a.num_val_src == 8 and a.num_val_dst == 8


def test_copy_op_names_and_errors() -> None:
    assert get_copy_op("UniversalCopy<uint128_t>") == UniversalCopy("uint128_t")
    assert get_copy_op("cute::SM80_CP_ASYNC_CACHEALWAYS<uint64_t>") == SM80_CP_ASYNC_CACHEALWAYS("uint64_t")
    assert get_copy_op("AutoVectorizingCopy") == AutoVectorizingCopyWithAssumedAlignment(128)
    assert get_copy_op("DefaultCopy").name == "AutoVectorizingCopyWithAssumedAlignment<8>"
    assert get_copy_op("SM90_U32x4_STSM_N").src_bits == get_copy_op("SM75_U32x4_LDSM_N").dst_bits
    with pytest.raises(AtomError, match="cp.async sizeof"):
        SM80_CP_ASYNC_CACHEGLOBAL("uint64_t")
    with pytest.raises(AtomError, match="cp.async sizeof"):
        SM80_CP_ASYNC_CACHEALWAYS("uint16_t")
    with pytest.raises(AtomError, match="MaxVecBits"):
        AutoVectorizingCopyWithAssumedAlignment(12)
    with pytest.raises(AtomError, match="sizeof_bits_v<S> >= 8"):
        UniversalCopy(4)
    with pytest.raises(AtomError, match="unknown copy operation"):
        get_copy_op("SM75_U32x8_LDSM_N")
    with pytest.raises(AtomError, match="unknown value type"):
        CopyAtom(UniversalCopy("uint32_t"), "float7")
    # 256-bit values cannot be loaded by an LDSM: size<0>(ValLayoutSrc) != size(ThrID)
    with pytest.raises(AtomError, match="not valid for Src"):
        CopyAtom(get_copy_op("SM75_U32x4_LDSM_N"), 256)


# ------------------------------------------------------------------------------------------
# make_tiled_copy: the sgemm_2 copy of the notes
# ------------------------------------------------------------------------------------------


def test_sgemm2_tiled_copy_tv_and_tiler() -> None:
    tc = sgemm2_copy()
    # raked_product((32,8):(1,32), (4,1):(1,0)) covers 128 x 8; thread t = tm + 32*tn holds
    # rows 4*tm .. 4*tm+3 of column tn: (t, v) -> 4*t + v in the colex 128x8 tile.
    assert tc.tiler_mn == (128, 8)
    assert str(tc.layout_tv) == "(256,4):(4,1)"
    assert tc.atom_num_val == 4 and tc.tiled_num_val == 4 and tc.tiled_num_thr == 256
    assert str(tc.get_layoutS_TV()) == "(256,(4,1)):(4,(1,0))"
    assert tc.get_layoutS_TV() == tc.get_layoutD_TV()
    assert tc.layout_tv(33, 2) == 4 * 33 + 2


def test_sgemm2_partition_S_shape_is_cpy_cpym_cpyk_k() -> None:
    tc = sgemm2_copy()
    gA = Tensor(Layout((128, 8, 4), (1, 128, 1024)), 0)  # (BLK_M, BLK_K, k), m-major, ldA = 128
    for t, off in ((0, 0), (1, 4), (33, 4 + 128)):
        p = tc.get_slice(t).partition_S(gA)
        # the notes say "(4,1,1,k)"; CuTe keeps CPY = (AtomVal, RestVal) = (4,1) nested
        assert str(p.layout) == "((4,1),1,1,4):((1,0),0,0,1024)"
        assert p.offset == off
    sA = make_compact_layout((128, 8))
    pd = tc.get_slice(33).partition_D(sA)
    assert str(pd.layout) == "((4,1),1,1):((1,0),0,0)" and pd.offset == 132


def test_tiled_copy_partitions_cover_tile_exactly_once() -> None:
    cases = [
        (F32_128, Layout((32, 8), (8, 1)), Layout((4, 1), (1, 0))),
        (F32_128, Layout((8, 32), (32, 1)), Layout((1, 4), (0, 1))),
        (CopyAtom(UniversalCopy("uint64_t"), "half_t"), Layout((16, 16), (1, 16)), Layout((2, 2), (1, 2))),
        (CopyAtom(DefaultCopy(), "float"), Layout(((4, 2), 8), ((1, 32), 4)), Layout((2, 4), (1, 2))),
    ]
    for atom, thr, val in cases:
        tc = make_tiled_copy(atom, thr, val)
        m, n = tc.tiler_mn  # type: ignore[misc]
        assert sorted(tc.layout_tv.table().tolist()) == list(range(m * n))
        src = Tensor(Layout((m, n), (n, 1)), 0)  # row-major source tile
        seen = np.concatenate([tc.get_slice(t).partition_S(src).values() for t in range(size(thr))])
        assert sorted(seen.tolist()) == list(range(m * n))


def test_tiled_copy_legality_matches_static_asserts() -> None:
    # 4 floats per uint128_t: 2 values per thread is "too few vals for selected CopyAtom"
    with pytest.raises(AtomError, match="too few vals"):
        make_tiled_copy(F32_128, make_compact_layout((32, 8)), make_compact_layout((2, 1)))
    with pytest.raises(AtomError, match="too few vals"):
        make_tiled_copy(CopyAtom(UniversalCopy("uint64_t"), "int8_t"), make_compact_layout((32, 8)),
                        make_compact_layout((4, 1)))
    # 6 values: not a multiple of 4
    with pytest.raises(AtomError, match="too few vals"):
        make_tiled_copy(F32_128, make_compact_layout((32, 8)), make_compact_layout((2, 3)))
    # an LDSM needs a warp: 16 threads is "too few thrs"
    ldsm = CopyAtom(get_copy_op("SM75_U32x1_LDSM_N"), "half_t")
    with pytest.raises(AtomError, match="too few thrs"):
        make_tiled_copy(ldsm, make_compact_layout((16, 1)), make_compact_layout((1, 2)))
    # multiples are fine: 8 floats per thread = 2 atoms
    tc = make_tiled_copy(F32_128, make_compact_layout((32, 8)), make_compact_layout((8, 1)))
    assert tc.tiler_mn == (256, 8)


# ------------------------------------------------------------------------------------------
# make_tiled_mma
# ------------------------------------------------------------------------------------------


def test_sgemm2_tiled_mma() -> None:
    mma = make_tiled_mma("UniversalFMA", make_compact_layout((16, 16, 1)))
    # tiled_product(ThrID 1:0, (16,16,1):(1,16,0))
    assert str(mma.thr_layout_vmnk) == "(1,16,16,1):(0,1,16,0)"
    assert mma.tile_shape == (16, 16, 1) and mma.size() == 256
    assert str(mma.get_layoutC_TV()) == "(256,(1,(1,1))):(1,(0,(0,0)))"
    # A: thread (tm, tn) reads row tm whatever tn: the ThrN stride is 0
    assert str(mma.get_layoutA_TV()) == "((16,16),(1,(1,1))):((1,0),(0,(0,0)))"
    assert str(mma.get_layoutB_TV()) == "((16,16),(1,(1,1))):((0,1),(0,(0,0)))"
    s = mma.get_slice(17)  # tm = 1, tn = 1
    assert s.thr_vmnk == (0, 1, 1, 0)
    sA = Tensor(make_compact_layout((128, 8)), 0)
    gC = Tensor(make_compact_layout((128, 128)), 0)
    pa, pb, pc = s.partition_A(sA), s.partition_B(sA), s.partition_C(gC)
    # the notes' (MMA, MMA_M, MMA_K) = (1, 8, 8): rows 1, 17, ..., 113
    assert str(pa.layout) == "(1,8,8):(0,16,128)" and pa.offset == 1
    assert str(pb.layout) == "(1,8,8):(0,16,128)" and pb.offset == 1
    assert str(pc.layout) == "(1,8,8):(0,16,2048)" and pc.offset == 1 + 128
    assert str(s.partition_fragment_C(gC)) == "(1,8,8):(0,1,8)"
    assert partition_shape_C(mma, (128, 128)) == (1, 8, 8)
    assert partition_shape_A(mma, (128, 8)) == (1, 8, 8)
    ic = s.partition_C(make_identity_tensor((128, 128)))
    assert ic(1).to_tuple((0, 0)) == (17, 1)


def test_sm80_16x8x16_tiled_2x2() -> None:
    mma = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN", make_compact_layout((2, 2, 1)))
    assert mma.tile_shape == (32, 16, 16)
    # atom C: ((4,8),(2,2)):((32,1),(16,8)) in 16x8; in the 32x16 tile index 32 (m0,n2) -> 64,
    # 16 (n1) -> 32, the second M atom (threads 32..63) +16, the second N atom (64..127) +8*32
    assert str(mma.get_layoutC_TV()) == "((4,8,2,2),((2,2),(1,1))):((64,1,16,256),((32,8),(0,0)))"
    # A is shared by the two N atoms: stride 0 on that thread mode
    assert str(mma.get_layoutA_TV()) == "((4,8,2,2),((2,2,2),(1,1))):((64,1,16,0),((32,8,256),(0,0)))"
    assert str(mma.get_layoutB_TV()) == "((4,8,2,2),((2,2),(1,1))):((32,1,0,8),((16,128),(0,0)))"
    c = mma.get_layoutC_TV().table()
    assert sorted(c.tolist()) == list(range(32 * 16))


def test_permutation_of_the_notes() -> None:
    # SM70 8x8x4 quadpair, 2x2 n-major atoms, M permuted by (4,4,2):(1,8,4): 32x32x4
    mma = make_tiled_mma("SM70_8x8x4_F32F16F16F32_NT", Layout((2, 2), (2, 1)),
                         (Layout((4, 4, 2), (1, 8, 4)), 32, 4))
    assert mma.tile_shape == (32, 32, 4)
    lay = Layout((4, 4, 2), (1, 8, 4))
    assert [lay(i) for i in range(32)] == [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27,
                                           4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31]
    # thread 0's A values become contiguous: m = 0..7 in the permuted tile
    a = mma.get_layoutA_TV()
    rows = sorted({int(a(0, v)) % 32 for v in range(size(a[1]))})
    assert rows == list(range(8))
    with pytest.raises(AtomError):
        make_tiled_mma("SM70_8x8x4_F32F16F16F32_NT", make_compact_layout((2, 2, 1, 2)))


def test_tiled_copy_from_mma_and_retile() -> None:
    mma = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN", make_compact_layout((2, 2, 1)))
    ldsm = make_tiled_copy_A(CopyAtom(get_copy_op("SM75_U32x4_LDSM_N"), "half_t"), mma)
    assert ldsm.tiler_mn == (32, 16)
    assert ldsm.layout_tv == mma.get_layoutA_TV()
    assert str(ldsm.get_layoutS_TV()) == "((16,2,2,2),(8,1)):((1,256,16,0),(32,0))"
    sA = make_compact_layout((32, 16))
    assert str(ldsm.get_slice(3).partition_S(sA).layout) == "((8,1),1,1):((32,0),0,0)"
    frag = mma.get_slice(3).partition_fragment_A(sA)
    assert str(frag) == "((2,2,2),1,1):((1,2,4),0,0)"
    assert str(ldsm.get_slice(3).retile_D(frag)) == "((8,1),1,1):((1,0),0,0)"
    # 8 halves per LDSM.x4, but the 2x2 F16 C tile gives 4 per thread
    f16 = make_tiled_mma("SM80_16x8x16_F16F16F16F16_TN", make_compact_layout((2, 2, 1)))
    with pytest.raises(AtomError, match="too few vals"):
        make_tiled_copy_C(CopyAtom(get_copy_op("SM90_U32x4_STSM_N"), "half_t"), f16)
    catom = make_tiled_copy_C_atom(CopyAtom(UniversalCopy("uint32_t"), "half_t"), f16)
    assert str(catom.layout_tv) == "((4,8,2,2),2):((16,1,8,64),128)"


def test_make_fragment_like_orders_like_the_layout() -> None:
    # mode 0 column-major, the rest ordered by the source strides; size-1 modes stride 0
    assert str(make_fragment_like(Layout((4, 2, 3), (2, 1, 8)))) == "(4,2,3):(1,4,8)"
    assert str(make_fragment_like(Layout(((2, 2), 1, 4), ((0, 1), 0, 64)))) == "((2,2),1,4):((0,1),0,2)"
    assert str(make_fragment_like(Layout(8, 2))) == "8:1"
