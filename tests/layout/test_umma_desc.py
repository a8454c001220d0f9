"""The laws of the Blackwell (SM100) model: the UMMA descriptors' words round-trip their
fields, the descriptor iterator's add is the header's 32-bit add, a descriptor built from an
operand reads exactly the operand's own swizzled addresses, the instruction descriptor holds
M and N, the TMEM copy atoms place every register bit on a distinct TMEM bit of their
pattern, and the TMEM allocation / access rules.  The comparisons with the headers are in
``test_umma_desc_cxx_oracle.py``.  Modelled from the headers, not confirmed on hardware."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from threadmap.errors import AtomError, LayoutError
from threadmap.layout.arch.mma_sm100_desc import (
    UmmaInstrDescriptor,
    UmmaLayoutType,
    UmmaSmemDescriptor,
    umma_layout_type_swizzle,
    umma_smem_addresses,
)
from threadmap.layout.atom.copy_traits_sm100_tmem import (
    TMEM_COPY_OPS,
    TMEM_DP_BITS,
    tmem_access_violations,
    tmem_allocation_violations,
    tmem_bit_map,
    tmem_copy_op,
    tmem_lanes_columns,
    tmem_op_access_violations,
)
from threadmap.layout.atom.mma_traits_sm100 import (
    UMMA_OPS,
    UmmaInstrError,
    UmmaLayoutError,
    make_instr_desc,
    make_umma_desc,
    umma_instr_desc,
    umma_layout_atom,
    umma_layout_type,
    umma_operand_mismatches,
)
from threadmap.layout.layout import Layout
from threadmap.layout.layout_composed import ComposedLayout
from threadmap.layout.pointer_flagged import SmemPtrFlag
from threadmap.layout.swizzle import Swizzle
from threadmap.layout.table import fast_table
from threadmap.testing.strategies import GmmaOperand, umma_operands

_UNUSED_SMEM = (0b11 << 14) | (0b11 << 30) | (1 << 48) | (0b111 << 53) | (0b11111 << 56)
_VALID_LT = [int(t) for t in UmmaLayoutType]


# ----------------------------------------------------------------------------- words
@given(st.integers(0, 2**61 - 1), st.sampled_from(_VALID_LT))
def test_the_smem_word_round_trips_its_fields(low: int, lt: int) -> None:
    word = low | lt << 61
    d = UmmaSmemDescriptor.from_u64(word)
    assert d.desc == word & ~_UNUSED_SMEM
    assert UmmaSmemDescriptor.from_u64(d.desc) == d
    assert d.layout_type == lt


@pytest.mark.parametrize("lt", [3, 5, 7])
def test_a_layout_type_the_header_calls_na_is_an_error(lt: int) -> None:
    with pytest.raises(LayoutError, match="N/A"):
        UmmaSmemDescriptor.from_u64(lt << 61)


@given(st.integers(0, 2**64 - 1).filter(lambda w: (w >> 61) in _VALID_LT), st.integers(0, 2**20))
def test_the_iterator_adds_to_the_low_32_bits(word: int, offset: int) -> None:
    d = UmmaSmemDescriptor.from_u64(word)
    moved = d + offset
    assert moved.desc >> 32 == d.desc >> 32
    if d.start_address + offset < 1 << 14:
        assert moved.start_address == d.start_address + offset
        assert moved.leading_byte_offset == d.leading_byte_offset


@given(st.integers(0, 2**32 - 1))
def test_the_instruction_word_round_trips_its_fields(word: int) -> None:
    d = UmmaInstrDescriptor.from_u32(word)
    assert d.desc == word & ~((1 << 6) | (1 << 23) | (1 << 29))
    assert UmmaInstrDescriptor.from_u32(d.desc) == d
    assert UmmaInstrDescriptor.from_u64(d.runtime_desc) == d


@given(st.sampled_from([16 * i for i in range(1, 32)]), st.sampled_from([8 * i for i in range(1, 64)]),
       st.sampled_from(["K", "MN"]), st.sampled_from(["K", "MN"]))
def test_the_instruction_descriptor_holds_m_and_n(m: int, n: int, am: str, bm: str) -> None:
    d = make_instr_desc("half_t", "bfloat16_t", "float", m, n, am, bm)
    assert (d.m, d.n) == (m, n)
    assert (d.a_major, d.b_major) == (am == "MN", bm == "MN")
    assert (d.a_format, d.b_format, d.c_format) == (0, 1, 1)


def test_the_layout_type_numbering_is_sm100s() -> None:
    # SM90's GMMA::LayoutType numbers B128 1, B64 2, B32 3; SM100's differ
    assert [(t.name, int(t)) for t in UmmaLayoutType] == [
        ("SWIZZLE_NONE", 0), ("SWIZZLE_128B_BASE32B", 1), ("SWIZZLE_128B", 2), ("SWIZZLE_64B", 4),
        ("SWIZZLE_32B", 6)]
    for t in UmmaLayoutType:
        assert umma_layout_type(umma_layout_type_swizzle(t)) == t


# ----------------------------------------------------------------------------- reads
def _own_addresses(op: GmmaOperand) -> np.ndarray:
    lay = op.layout.layout_b
    mn, k = (int(np.prod(s)) if isinstance(s, tuple) else int(s) for s in lay.shape)
    offs = fast_table(lay, dtype=np.int64).reshape(k, mn).T
    return np.asarray(op.layout.layout_a(op.start_address + offs * op.elem_bits // 8), dtype=np.int64)


@given(umma_operands())
def test_a_descriptor_reads_its_operands_own_addresses(op: GmmaOperand) -> None:
    d = make_umma_desc(op.major, op.layout, op.elem_bits, op.start_address)
    own = _own_addresses(op)
    assert (umma_smem_addresses(d, op.major, own.shape[0], own.shape[1], op.elem_bits) == own).all()
    assert len(umma_operand_mismatches(op.major, op.layout, op.elem_bits, op.start_address)) == 0
    assert d.version == 1 and d.base_offset == 0 and d.lbo_mode == 0


@given(umma_operands(elem_bits=(16,)))
def test_the_other_major_reads_other_addresses(op: GmmaOperand) -> None:
    d = make_umma_desc(op.major, op.layout, op.elem_bits, op.start_address)
    own = _own_addresses(op)
    other = "MN" if op.major == "K" else "K"
    if d.layout_type == UmmaLayoutType.SWIZZLE_128B_BASE32B:
        with pytest.raises(LayoutError, match="Major-K"):
            umma_smem_addresses(d, other, own.shape[0], own.shape[1], op.elem_bits)
        return
    assert not (umma_smem_addresses(d, other, own.shape[0], own.shape[1], op.elem_bits) == own).all()


def test_a_layout_permuting_a_chunk_compiles_but_is_misread() -> None:
    # (1,4,8):(64,8,1): 16-bit elements 0..3 of a column sit in 4 different 16-byte chunks;
    # recast<uint128_t> forgets that, the header builds a SWIZZLE_64B descriptor, and it reads
    # the chunks in the canonical order (the oracle test confirms the header accepts such a
    # layout)
    lay = Layout(((1, 4, 8), (8, 2)), ((64, 8, 1), (32, 256)))
    smem = ComposedLayout(Swizzle(2, 4, 3), SmemPtrFlag(16), lay)
    d = make_umma_desc("MN", smem, 16, 2048)
    assert d.layout_type == UmmaLayoutType.SWIZZLE_64B
    assert len(umma_operand_mismatches("MN", smem, 16, 2048)) > 0


@pytest.mark.parametrize("smem, major, bits, rule", [
    (Layout((64, 16), (16, 1)), "K", 16, "stride failure"),
    (ComposedLayout(Swizzle(2, 4, 2), SmemPtrFlag(16), Layout((64, 16), (16, 1))), "K", 16, "S = 3 when M == 4"),
    (ComposedLayout(Swizzle(3, 5, 3), SmemPtrFlag(16), Layout((64, 16), (1, 64))), "MN", 16, "B = 2 when M == 5"),
    (ComposedLayout(Swizzle(2, 6, 2), SmemPtrFlag(16), Layout((64, 16), (1, 64))), "MN", 16, "16B and 32B Atoms"),
    (umma_layout_atom("MN", "SW128_32B", 16).tile_to_shape((64, 16)), "K", 16, "invalid for Major-K"),
    (Layout((64, 16, 2), (16, 1, 1024)), "K", 16, "rank-2"),
    (Layout((4, 16), (16, 1)), "K", 16, "MN-size multiple of 8"),
])
def test_a_layout_the_header_rejects_is_a_clear_error(smem: Any, major: str, bits: int, rule: str) -> None:
    with pytest.raises(UmmaLayoutError, match=rule):
        make_umma_desc(major, smem, bits, 0)


@pytest.mark.parametrize("args, match", [
    (("N", Layout((64, 16), (16, 1)), 16, 0), "major mode"),
    (("K", Layout((64, 16), (16, 1)), 64, 0), "elements"),
    (("K", Layout((64, 16), (16, 1)), 16, -16), "start address"),
    (("K", "(64,16):(16,1)", 16, 0), "make_umma_desc: a shared tensor's layout"),
])
def test_a_malformed_request_is_a_clear_error(args: tuple, match: str) -> None:
    with pytest.raises(LayoutError, match=match):
        make_umma_desc(*args)


@pytest.mark.parametrize("field, value", [("start_address", 1 << 14), ("version", 4), ("base_offset", 8),
                                          ("lbo_mode", 2), ("layout_type", 3), ("stride_byte_offset", -1)])
def test_a_field_out_of_its_width_is_a_clear_error(field: str, value: int) -> None:
    kw: dict[str, Any] = {"start_address": 0, "leading_byte_offset": 1, "stride_byte_offset": 64,
                          "layout_type": UmmaLayoutType.SWIZZLE_128B, field: value}
    with pytest.raises(LayoutError, match=field):
        UmmaSmemDescriptor(**kw)


# ----------------------------------------------------------------------------- instructions
@pytest.mark.parametrize("op, args, rule", [
    ("SM100_MMA_F16BF16_SS", ("half_t", "half_t", "float", 256, 64), "M-mode size should be 64 or 128"),
    ("SM100_MMA_F16BF16_2x1SM_SS", ("half_t", "half_t", "float", 256, 24), "multiple of 16"),
    ("SM100_MMA_F16BF16_TS", ("half_t", "half_t", "float", 128, 24, "MN"),
     "multiple of 16 between 16 and 256 for M=128"),
    ("SM100_MMA_F16BF16_TS", ("half_t", "half_t", "float", 64, 24, "MN"), "A from TMEM can't be transposed"),
    ("SM100_MMA_TF32_SS", ("half_t", "half_t", "float", 128, 64), "supports 32bit types"),
    ("SM100_MMA_S8_SS", ("int8_t", "int8_t", "float", 128, 64), "result type can only be int32_t"),
    ("SM100_MMA_F8F6F4_SS", ("float_e4m3_t", "float_e4m3_t", "float", 128, 24, "K", "MN"), "when B is MN major"),
    ("SM100_MMA_TF32_SS", ("float", "tfloat32_t", "float", 128, 64), "Unknown type for UMMAFormat"),
])
def test_an_instruction_the_header_rejects_is_a_clear_error(op: str, args: tuple, rule: str) -> None:
    with pytest.raises(UmmaInstrError, match=rule):
        umma_instr_desc(op, *args)


def test_each_operation_has_its_shape_rules() -> None:
    for name, o in UMMA_OPS.items():
        ms = {m for m in (32, 64, 128, 256) if _accepts(name, m=m)}
        assert ms == ({64, 128} if o.cta_group == 1 else {128, 256}), (name, ms)
        assert _accepts(name, m=128, n=256) and not _accepts(name, m=128, n=264)
        assert _accepts(name, a_major="MN") != o.a_from_tmem


def _accepts(op: str, m: int = 128, n: int = 64, a_major: str = "K") -> bool:
    o = UMMA_OPS[op]
    a, b, c = {"tf32": ("tfloat32_t",) * 2 + ("float",), "f16": ("half_t", "half_t", "float"),
               "i8": ("int8_t", "int8_t", "int32_t"), "f8f6f4": ("float_e4m3_t", "float_e4m3_t", "float")}[o.kind]
    try:
        umma_instr_desc(op, a, b, c, m, n, a_major, "K")
    except UmmaInstrError:
        return False
    return True


# ----------------------------------------------------------------------------- TMEM copies
@pytest.mark.parametrize("name", sorted(TMEM_COPY_OPS))
def test_each_register_bit_has_its_own_tmem_bit(name: str) -> None:
    op = TMEM_COPY_OPS[name]
    bits = tmem_bit_map(op)
    assert bits.shape == (32, 32 * op.registers)
    image = np.sort(bits.ravel())
    assert (np.diff(image) > 0).all()                                     # injective
    assert (image == np.sort(fast_table(op.val_id, dtype=np.int64))).all()  # onto ValID's image
    lanes, cols = bits // TMEM_DP_BITS, bits % TMEM_DP_BITS // 32
    assert set(lanes.ravel()) == set(range(op.lanes))
    assert set(cols.ravel()) == set(range(op.columns))
    if op.pattern == "32dp32b":
        assert (lanes == np.arange(32)[:, None]).all()
    if op.pack16:
        # a register's halves: the low 16 bits of two adjacent columns
        lc = tmem_lanes_columns(op)
        hi = bits[:, 16::32]
        assert (hi % TMEM_DP_BITS // 32 == lc[:, :, 1] + 1).all() and (bits % 32 < 16).all()


@pytest.mark.parametrize("name", [n for n in sorted(TMEM_COPY_OPS) if "_LOAD_" in n])
def test_a_store_is_its_loads_mirror(name: str) -> None:
    ld, stn = TMEM_COPY_OPS[name], TMEM_COPY_OPS[name.replace("_LOAD_", "_STORE_")]
    assert (stn.src_bits, stn.dst_bits, stn.ref_bits, stn.val_id) == (ld.dst_bits, ld.src_bits, ld.ref_bits, ld.val_id)
    assert (tmem_bit_map(ld) == tmem_bit_map(stn)).all()
    assert ".pack::16b" in ld.ptx if ld.pack16 else "pack" not in ld.ptx


@pytest.mark.parametrize("name", ["SM100_TMEM_LOAD_16dp256b64x", "SM100_TMEM_LOAD_32dp32b3x", "SM100_TMEM_COPY_1x",
                                  "SM100_TMEM_LOAD_16dp32b256x_16b"])
def test_an_unknown_tmem_op_is_a_clear_error(name: str) -> None:
    with pytest.raises(AtomError, match="TMEM"):
        tmem_copy_op(name)


@given(st.integers(-64, 1100))
def test_an_allocation_is_a_power_of_two_of_32_to_512_columns(cols: int) -> None:
    assert (tmem_allocation_violations(cols) == []) == (cols in (32, 64, 128, 256, 512))
    for v in tmem_allocation_violations(cols):
        assert "tmem_allocator_sm100.hpp" in v.rule


@given(st.integers(0, 15), st.lists(st.integers(-4, 140), min_size=1, max_size=8),
       st.lists(st.integers(-4, 530), min_size=1, max_size=8), st.sampled_from([32, 64, 128, 256, 512]),
       st.sampled_from([0, 32, 128, 256]))
def test_an_access_is_legal_exactly_inside_the_warps_lanes_and_the_allocation(
        warp: int, lanes: list[int], cols: list[int], alloc: int, base: int) -> None:
    vs = tmem_access_violations(warp, lanes, cols, alloc, base)
    lo = 32 * (warp % 4)
    legal = all(lo <= x < lo + 32 for x in lanes) and all(base <= c < min(base + alloc, 512) for c in cols) \
        and base + alloc <= 512
    assert (vs == []) == legal
    for v in vs:
        assert "hpp" in v.rule


def test_a_16_lane_op_straddling_two_subpartitions_is_flagged() -> None:
    assert tmem_op_access_violations("SM100_TMEM_LOAD_16dp256b1x", 1, 32 << 16, 128) == []
    vs = tmem_op_access_violations("SM100_TMEM_LOAD_16dp256b1x", 1, 56 << 16, 128)
    assert len(vs) == 1 and "64..71" in vs[0].detail and "copy_traits_sm100.hpp" in vs[0].rule
    vs = tmem_op_access_violations("SM100_TMEM_LOAD_32dp32b64x", 4, 96, 128)
    assert len(vs) == 1 and "128..159" in vs[0].detail and "allocation" in vs[0].detail


def test_every_quoted_assert_message_is_the_headers() -> None:
    from threadmap.gpu.toolchain import cutlass_include

    inc = cutlass_include()
    if inc is None:
        pytest.skip("nvidia-cutlass (CUTLASS headers) is not installed")
    # a backslash-newline inside a string literal is a line splice; fold the whitespace
    texts = {h: " ".join((inc / h).read_text().replace("\\\n", "").split())
             for h in ("cute/arch/mma_sm100_umma.hpp", "cute/atom/mma_traits_sm100.hpp")}
    for o in UMMA_OPS.values():
        for rule, where, _ in o.rules:
            assert rule in texts[where], (o.name, rule, where)     # in the header it cites
    for rule in ("Expected S = 3 when M == 4. Unsupported layout swizzle.",
                 "Only 16B and 32B Atoms are supported for UMMA. Unsupported layout swizzle.",
                 "Not a canonical UMMA_K Layout: Expected MN-size multiple of 8.",
                 "SWIZZLE_128B_BASE32B is invalid for Major-K"):
        assert rule in texts["cute/atom/mma_traits_sm100.hpp"]
