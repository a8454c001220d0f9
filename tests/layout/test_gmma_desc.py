"""The GMMA descriptor's laws (``threadmap.layout.arch.mma_sm90_desc``,
``make_gmma_desc``): the 64-bit word round-trips its fields, ``DescriptorIterator``'s add is
the header's 32-bit add, and a descriptor built from an operand reads exactly the operand's
own swizzled addresses.  The descriptors are compared with the header's in
``test_gmma_desc_cxx_oracle.py``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from threadmap.errors import LayoutError
from threadmap.layout.arch.mma_sm90_desc import GmmaDescriptor, LayoutType, gmma_smem_addresses
from threadmap.layout.atom.mma_traits_sm90_gmma import GmmaLayoutError, gmma_layout_atom, make_gmma_desc
from threadmap.layout.layout import Layout
from threadmap.layout.layout_composed import ComposedLayout
from threadmap.layout.swizzle import Swizzle
from threadmap.testing.strategies import GmmaOperand, gmma_operands


@given(st.integers(0, 2**64 - 1))
def test_the_word_round_trips_its_fields(word: int) -> None:
    d = GmmaDescriptor.from_u64(word)
    unused = (0b11 << 14) | (0b11 << 30) | (0b111 << 46) | (0b1111111111 << 52)
    assert d.desc == word & ~unused
    assert GmmaDescriptor.from_u64(d.desc) == d


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**20))
def test_the_iterator_adds_to_the_low_32_bits(word: int, offset: int) -> None:
    d = GmmaDescriptor.from_u64(word)
    lo = (d.desc & 0xFFFFFFFF) + offset
    assert (d + offset).desc == GmmaDescriptor.from_u64((d.desc & ~0xFFFFFFFF) | (lo & 0xFFFFFFFF)).desc
    if d.start_address + offset < 1 << 14:
        assert (d + offset).start_address == d.start_address + offset
        assert (d + offset).stride_byte_offset == d.stride_byte_offset


def _own_addresses(op: GmmaOperand) -> np.ndarray:
    lay = op.layout.layout_b
    mn, k = (int(np.prod(s)) if isinstance(s, tuple) else int(s) for s in lay.shape)
    sw = op.layout.layout_a
    return np.array([[sw(op.start_address + lay(i, j) * op.elem_bits // 8) for j in range(k)] for i in range(mn)])


@given(gmma_operands())
def test_a_descriptor_reads_its_operands_own_addresses(op: GmmaOperand) -> None:
    d = make_gmma_desc(op.major, op.layout, op.elem_bits, op.start_address)
    own = _own_addresses(op)
    assert (gmma_smem_addresses(d, op.major, own.shape[0], own.shape[1], op.elem_bits) == own).all()


@given(gmma_operands(elem_bits=(16,)))
def test_the_other_major_reads_other_addresses(op: GmmaOperand) -> None:
    # the majorness is the instruction's, not the descriptor's: the same descriptor read as
    # the other major reads other addresses (why a wrong tnspA/B immediate is a silent bug)
    d = make_gmma_desc(op.major, op.layout, op.elem_bits, op.start_address)
    own = _own_addresses(op)
    other = gmma_smem_addresses(d, "MN" if op.major == "K" else "K", own.shape[0], own.shape[1], op.elem_bits)
    assert not (other == own).all()


def test_a_swapped_lbo_and_sbo_reads_other_addresses() -> None:
    atom = gmma_layout_atom("MN", "SW128", 16).tile_to_shape((128, 16))
    d = make_gmma_desc("MN", atom, 16, 4096)
    assert d.layout_type == LayoutType.B128 and d.leading_byte_offset != d.stride_byte_offset
    swapped = GmmaDescriptor(d.start_address, d.stride_byte_offset, d.leading_byte_offset, 0, d.layout_type)
    right = gmma_smem_addresses(d, "MN", 128, 16, 16)
    wrong = gmma_smem_addresses(swapped, "MN", 128, 16, 16)
    assert (right != wrong).sum() > 0


@pytest.mark.parametrize("smem, bits, rule", [
    (Layout((64, 16), (16, 1)), 16, "stride failure"),                     # row-major, not core matrices
    (ComposedLayout(Swizzle(3, 4, 3), 0, Layout((64, 16), (16, 1))), 16, "Unsupported layout swizzle"),  # bytes: 3,5,3
    (Layout((64, 16, 2), (16, 1, 1024)), 16, "rank-2"),
    (Layout((64, 48), (48, 1)), 16, "K-size"),
])
def test_a_layout_the_header_rejects_is_a_clear_error(smem: object, bits: int, rule: str) -> None:
    with pytest.raises(GmmaLayoutError, match=rule):
        make_gmma_desc("K", smem, bits, 0)


@pytest.mark.parametrize("args, match", [
    (("N", Layout((64, 16), (16, 1)), 16, 0), "major mode"),
    (("K", Layout((64, 16), (16, 1)), 12, 0), "element"),
    (("K", Layout((64, 16), (16, 1)), 16, -16), "start address"),
    (("K", "(64,16):(16,1)", 16, 0), "a shared tensor's layout"),
])
def test_a_malformed_request_is_a_clear_error(args: tuple, match: str) -> None:
    with pytest.raises(LayoutError, match=match):
        make_gmma_desc(*args)


@pytest.mark.parametrize("field, value", [("start_address", 1 << 14), ("base_offset", 8), ("layout_type", 4),
                                          ("leading_byte_offset", -1)])
def test_a_field_out_of_its_width_is_a_clear_error(field: str, value: int) -> None:
    kw: dict[str, Any] = {"start_address": 0, "leading_byte_offset": 1, "stride_byte_offset": 64, "base_offset": 0,
          "layout_type": LayoutType.B128, field: value}
    with pytest.raises(LayoutError, match=field):
        GmmaDescriptor(**kw)


@pytest.mark.parametrize("major", ["K", "MN"])
@pytest.mark.parametrize("swizzle", ["INTER", "SW32", "SW64", "SW128"])
@pytest.mark.parametrize("bits", [8, 16, 32])
def test_the_descriptor_tensor_is_each_blocks_own_descriptor(major: str, swizzle: str, bits: int) -> None:
    from threadmap.layout import local_tile, make_tensor
    from threadmap.layout.atom.mma_traits_sm90_gmma import make_gmma_desc_tensor

    atom = gmma_layout_atom(major, swizzle, bits)
    kb = 256 // bits
    stage = (128, max(kb, int(atom.layout_b.shape[1])) * 2) if major == "K" else \
        (max(128, int(atom.layout_b.shape[0])), kb * 4)
    tile = atom.tile_to_shape(stage)
    block = (64, kb)
    descs = make_gmma_desc_tensor(major, tile, block, bits, 2048)
    assert len(descs) == (stage[0] // 64) * (stage[1] // kb)
    for (i, j), d in descs.items():
        t = local_tile(make_tensor(0, tile.layout_b), block, (i, j))
        own = make_gmma_desc(major, ComposedLayout(atom.layout_a, atom.offset, t.layout), bits,
                             2048 + int(t.offset) * bits // 8)  # type: ignore[arg-type]
        assert d == own


@pytest.mark.parametrize("major", ["K", "MN"])
@pytest.mark.parametrize("swizzle", ["INTER", "SW32", "SW64", "SW128"])
@pytest.mark.parametrize("cxx, bits", [("half_t", 16), ("cutlass::bfloat16_t", 16), ("float", 32), ("uint8_t", 8)])
def test_the_gmma_atoms_parse_by_their_cxx_names(major: str, swizzle: str, cxx: str, bits: int) -> None:
    from threadmap.layout import parse_layout

    want = gmma_layout_atom(major, swizzle, bits)
    for text in (f"GMMA::Layout_{major}_{swizzle}_Atom<{cxx}>{{}}",
                 f"cute::SM90::GMMA::Layout_{major}_{swizzle}_Atom<{cxx}>"):
        assert parse_layout(text) == want
    tiled = parse_layout(f"tile_to_shape(GMMA::Layout_{major}_{swizzle}_Atom<{cxx}>{{}}, make_shape(256, 128))")
    assert tiled == want.tile_to_shape((256, 128))
