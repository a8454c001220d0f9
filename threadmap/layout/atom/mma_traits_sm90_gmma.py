"""The GMMA shared-memory layout atoms of ``cute/atom/mma_traits_sm90_gmma.hpp``:
``GMMA::Layout_{MN,K}_{INTER,SW32,SW64,SW128}_Atom<T>``.

Each atom is ``Sw<b,4,3> o smem_ptr[Nb](unset) o L``: a swizzle in *bytes* applied by the
shared-memory pointer, as in C++ (see
:meth:`~threadmap.layout.layout_composed.ComposedLayout.as_position_independent_swizzle_layout`
for the element-offset function).
"""

from __future__ import annotations

from typing import Any

from threadmap.errors import DescriptorLayoutError, LayoutError
from threadmap.layout.arch.mma_sm90_desc import GMMA_MAJORS, GmmaDescriptor, LayoutType, layout_type_width
from threadmap.layout.int_tuple import congruent, is_int, rank
from threadmap.layout.layout import Layout, get, logical_divide, size, upcast
from threadmap.layout.layout_composed import ComposedLayout
from threadmap.layout.pointer_flagged import SmemPtrFlag
from threadmap.layout.swizzle import Swizzle
from threadmap.layout.tensor import local_tile, make_tensor

__all__ = ["gmma_layout_atom", "gmma_layout_atom_bits", "GMMA_LAYOUT_ATOMS", "GMMA_ELEMENT_BITS", "make_gmma_desc",
           "GmmaLayoutError", "GMMA_CANONICAL", "gmma_smem_swizzle", "make_gmma_desc_tensor"]

_GMMA_SW = {"INTER": 0, "SW32": 1, "SW64": 2, "SW128": 3}

#: element type names -> ``sizeof_bits`` (CUTLASS types in the comments)
GMMA_ELEMENT_BITS: dict[str, int] = {
    "s4": 4,     # int4b_t
    "u4": 4,     # uint4b_t
    "e2m1": 4,   # float_e2m1_t
    "s8": 8,     # int8_t
    "u8": 8,     # uint8_t
    "e4m3": 8,   # float_e4m3_t
    "e5m2": 8,   # float_e5m2_t
    "f16": 16,   # half_t
    "bf16": 16,  # bfloat16_t
    "tf32": 32,  # tfloat32_t
    "f32": 32,   # float
    "s32": 32,   # int32_t
    "f64": 64,   # double
}


def gmma_layout_atom_bits(major: str, swizzle: str) -> ComposedLayout:
    """``GMMA::Layout_{MN,K}_{INTER,SW32,SW64,SW128}_Atom_Bits``: in units of bits,
    ``Sw<b,4,3> o smem_ptr[1b](unset) o L`` with ``L = (W,8):(1,W)`` (MN-major) or
    ``(8,W):(W,1)`` (K-major), ``W = 128 << b`` bits."""
    if not isinstance(swizzle, str) or swizzle not in _GMMA_SW:
        raise LayoutError(f"GMMA swizzle must be one of {list(_GMMA_SW)}, got {swizzle!r}")
    b = _GMMA_SW[swizzle]
    w = 128 << b
    if not isinstance(major, str):
        raise LayoutError(f"GMMA major must be 'MN' or 'K', got {major!r}")
    if major == "MN":
        lay = Layout((w, 8), (1, w))
    elif major == "K":
        lay = Layout((8, w), (w, 1))
    else:
        raise LayoutError(f"GMMA major must be 'MN' or 'K', got {major!r}")
    return ComposedLayout(Swizzle(b, 4, 3), SmemPtrFlag(1), lay)


def gmma_layout_atom(major: str, swizzle: str, element_bits: int) -> ComposedLayout:
    """``GMMA::Layout_{major}_{swizzle}_Atom<T>`` = ``upcast<sizeof_bits<T>>(..._Atom_Bits)``.

    The result keeps the swizzle in *bytes* with offset ``smem_ptr[Nb](unset)`` exactly as
    C++ (``make_tensor`` with an smem pointer applies it to the address); evaluate
    :meth:`ComposedLayout.as_position_independent_swizzle_layout` for the element-offset
    function.  Law: the atom spans ``128 << b`` bytes x 8 rows.
    """
    if not is_int(element_bits) or element_bits <= 0 or element_bits & (element_bits - 1) \
            or element_bits > 128:
        raise LayoutError(f"GMMA atoms need a power-of-two element width <= 128 bits, "
                          f"got {element_bits}")
    atom = gmma_layout_atom_bits(major, swizzle)
    return atom.upcast(int(element_bits)) if element_bits > 1 else atom


def _gmma_presets() -> dict[str, ComposedLayout]:
    out: dict[str, ComposedLayout] = {}
    for major in ("MN", "K"):
        for swz in _GMMA_SW:
            out[f"GMMA.Layout_{major}_{swz}_Atom_Bits"] = gmma_layout_atom_bits(major, swz)
            for name, bits in GMMA_ELEMENT_BITS.items():
                out[f"GMMA.Layout_{major}_{swz}_Atom<{name}>"] = gmma_layout_atom(major, swz, bits)
    return out


#: named presets, e.g. ``GMMA_LAYOUT_ATOMS["GMMA.Layout_K_SW128_Atom<f16>"]``
GMMA_LAYOUT_ATOMS: dict[str, ComposedLayout] = _gmma_presets()



# ----------------------------------------------------------------------------- descriptors
#: the canonical forms ``make_gmma_desc`` accepts, in units of ``uint128_t`` (its comment)
GMMA_CANONICAL: dict[tuple[str, LayoutType], str] = {
    ("MN", LayoutType.INTERLEAVE): "Swizzle<0,4,3> o smem_ptr o ((1,n),(8,k)):((X,SBO),(1,LBO))",
    ("MN", LayoutType.B32): "Swizzle<1,4,3> o smem_ptr o ((2,n),(8,k)):((1,LBO),(2,SBO))",
    ("MN", LayoutType.B64): "Swizzle<2,4,3> o smem_ptr o ((4,n),(8,k)):((1,LBO),(4,SBO))",
    ("MN", LayoutType.B128): "Swizzle<3,4,3> o smem_ptr o ((8,n),(8,k)):((1,LBO),(8,SBO))",
    ("K", LayoutType.INTERLEAVE): "Swizzle<0,4,3> o smem_ptr o ((8,n),2):((1,SBO),LBO)",
    ("K", LayoutType.B32): "Swizzle<1,4,3> o smem_ptr o ((8,n),2):((2,SBO),1)",
    ("K", LayoutType.B64): "Swizzle<2,4,3> o smem_ptr o ((8,n),2):((4,SBO),1)",
    ("K", LayoutType.B128): "Swizzle<3,4,3> o smem_ptr o ((8,n),2):((8,SBO),1)",
}


class GmmaLayoutError(DescriptorLayoutError):
    """A shared layout ``make_gmma_desc`` does not accept (see :class:`~threadmap.errors.DescriptorLayoutError`)."""

    builder = "make_gmma_desc"


def gmma_smem_swizzle(smem: Any, elem_bits: int) -> tuple[Swizzle, Layout]:
    """The swizzle a shared tensor's *pointer* applies to byte addresses and the tensor's layout
    of ``elem_bits``-bit elements: a GMMA atom's ``Sw o smem_ptr[Nb] o L`` (the swizzle as
    given), ``Sw o L`` with ``Sw`` on element offsets (recast to bytes: the form a kernel gets
    from ``make_tensor(make_smem_ptr(p), atom)``), or a plain ``L`` (``Swizzle<0,4,3>``, the
    header's ``get_swizzle`` of an unswizzled pointer)."""
    if not is_int(elem_bits) or elem_bits not in (4, 8, 16, 32, 64):
        raise LayoutError(f"make_gmma_desc: GMMA operands have 4-, 8-, 16-, 32- or 64-bit elements, got "
                          f"{elem_bits!r}")
    if isinstance(smem, Layout):
        return Swizzle(0, 4, 3), smem
    if isinstance(smem, ComposedLayout) and isinstance(smem.layout_a, Swizzle) and isinstance(smem.layout_b, Layout):
        if isinstance(smem.offset, SmemPtrFlag):
            if smem.offset.bits != elem_bits:
                raise LayoutError(f"make_gmma_desc: {smem} is a layout of {smem.offset.bits}-bit elements, the "
                                  f"tensor's are {elem_bits}-bit")
            return smem.layout_a, smem.layout_b
        if smem.offset == 0:
            sw = smem.layout_a
            return (sw.recast(elem_bits, 8) if sw.num_bits else Swizzle(0, 4, 3)), smem.layout_b
    raise LayoutError(f"make_gmma_desc: a shared tensor's layout is a Layout, Swizzle o Layout or a GMMA atom's "
                      f"Swizzle o smem_ptr o Layout, got {smem!r}")


def _leaf_strides(canonical: Layout) -> tuple[int, int, int, int]:
    (s00, s01), (s10, s11) = canonical.stride
    return int(s00), int(s01), int(s10), int(s11)


def make_gmma_desc(major: str, smem: Any, elem_bits: int = 16, start_address: int = 0) -> GmmaDescriptor:
    """``SM90::GMMA::make_gmma_desc<Major>(tensor)`` for a shared tensor of ``elem_bits``-bit
    elements whose (unswizzled) pointer is the byte ``start_address`` and whose layout is
    ``smem`` (:func:`gmma_smem_swizzle` says which forms), rank 2: ``(MN, K)`` of one
    ``wgmma``'s operand.  Follows the header: recast to ``uint128_t``, the layout type from
    the pointer's swizzle, ``logical_divide`` by the canonical tile, the profile and stride
    asserts, then SBO and LBO.  A layout the header rejects raises :class:`GmmaLayoutError`
    quoting the canonical form.  Law: :func:`gmma_smem_addresses` of the result are the
    tensor's own swizzled addresses ``Sw(start_address + smem(i, j) * elem_bits / 8)``."""
    if major not in GMMA_MAJORS:
        raise LayoutError(f"make_gmma_desc: the major mode is 'K' or 'MN', got {major!r}")
    if not is_int(elem_bits) or elem_bits not in (4, 8, 16, 32, 64):
        raise LayoutError(f"make_gmma_desc: GMMA operands have 4-, 8-, 16-, 32- or 64-bit elements, got "
                          f"{elem_bits!r}")
    if not is_int(start_address) or not 0 <= start_address < 1 << 32:
        raise LayoutError(f"make_gmma_desc: the start address is a 32-bit shared address, got {start_address!r}")
    sw, lay = gmma_smem_swizzle(smem, int(elem_bits))
    if rank(lay.shape) != 2:
        raise GmmaLayoutError("GMMA Descriptors can only be constructed on rank-2 tensors",
                              f"{lay} has rank {rank(lay.shape)}")
    if sw.num_base != 4 or sw.num_shft != 3 or not 0 <= sw.num_bits <= 3:
        raise GmmaLayoutError("Unsupported layout swizzle", f"{sw} on byte addresses; GMMA takes Swizzle<B,4,3>, "
                              "B = 0..3")
    lt = {0: LayoutType.INTERLEAVE, 1: LayoutType.B32, 2: LayoutType.B64, 3: LayoutType.B128}[sw.num_bits]
    canon = GMMA_CANONICAL[(major, lt)]
    try:
        u128 = upcast(lay, 128 // int(elem_bits))
    except LayoutError as e:
        raise GmmaLayoutError("recast to uint128_t fails", f"{lay}: {e}", canon) from None
    w = layout_type_width(lt)
    bits = int(elem_bits)
    if major == "MN":
        ksize = size(get(u128, 1))
        if ksize not in (256 // bits, 128 // bits, 512 // bits):
            raise GmmaLayoutError("Not a canonical GMMA_MN Layout: Expected K-size 256/sizeof_bits<T> for dense or "
                                  "(128|512)/sizeof_bits<T> for sparse", f"K-size {ksize} in {lay}", canon)
        canonical = logical_divide(u128, (Layout(w, 1), Layout(8, 1)))
    else:
        if size(get(u128, 0)) % 8:
            raise GmmaLayoutError("Not a canonical GMMA_K Layout: Expected MN-size multiple of 8",
                                  f"MN-size {size(get(u128, 0))} (uint128_t) in {lay}", canon)
        if size(get(u128, 1)) not in (2, 4):
            raise GmmaLayoutError("Not a canonical GMMA_K Layout: Expected K-size 2 for dense or 4 for sparse (in "
                                  "units of uint128_t)", f"K-size {size(get(u128, 1))} in {u128}", canon)
        canonical = logical_divide(u128, (Layout(8, 1), Layout(2, 1)))
    if not congruent(canonical.shape, ((1, 1), (1, 1))):
        raise GmmaLayoutError(f"Not a canonical GMMA_{major} Layout: Expected profile failure",
                              f"{canonical} (uint128_t) is not ((x,x),(x,x))", canon)
    s00, s01, s10, s11 = _leaf_strides(canonical)
    if major == "MN":
        if lt != LayoutType.INTERLEAVE and s00 != 1 or s10 != w:
            raise GmmaLayoutError("Not a canonical GMMA_MN Layout: Expected stride failure",
                                  f"{canonical} (uint128_t) needs stride<0,0> "
                                  + ("any" if lt == LayoutType.INTERLEAVE else "1") + f", stride<1,0> {w}", canon)
        sbo, lbo = (s01, s11) if lt == LayoutType.INTERLEAVE else (s11, s01)
    else:
        if s00 != w or lt != LayoutType.INTERLEAVE and s10 != 1:
            raise GmmaLayoutError("Not a canonical GMMA_K Layout: Expected stride failure",
                                  f"{canonical} (uint128_t) needs stride<0,0> {w}, stride<1,0> "
                                  + ("any" if lt == LayoutType.INTERLEAVE else "1"), canon)
        sbo, lbo = s01, s10
    # the bit fields are uint16_t : 14 -- C++ stores the strides cut to 14 bits, and the start
    # address is cut to uint16_t before the field takes its 14 bits
    return GmmaDescriptor(start_address=(int(start_address) >> 4 & 0xFFFF) & 0x3FFF,
                          leading_byte_offset=lbo & 0xFFFF & 0x3FFF, stride_byte_offset=sbo & 0xFFFF & 0x3FFF,
                          base_offset=0, layout_type=lt)


def make_gmma_desc_tensor(major: str, smem: Any, block: tuple[int, int], elem_bits: int = 16,
                          start_address: int = 0) -> dict[tuple[int, int], GmmaDescriptor]:
    """The descriptors a kernel issues for a stage ``smem`` of shape ``(MN, K)`` cut into
    ``block``-shaped wgmma operands (``MakeTensor<GMMA::smem_desc<Major>>``): the first
    block's :func:`make_gmma_desc`, and for block ``(i, k)`` that descriptor advanced by the
    block's offset in ``uint128_t`` (``DescriptorIterator + offset``).  Law: each entry equals
    :func:`make_gmma_desc` of ``local_tile(stage, block, (i, k))`` at its own address."""
    if not isinstance(major, str) or major not in GMMA_MAJORS:
        raise LayoutError(f"make_gmma_desc_tensor: the major mode is 'K' or 'MN', got {major!r}")
    if not is_int(start_address) or not 0 <= start_address < 1 << 32:
        raise LayoutError(f"make_gmma_desc_tensor: the start address is a 32-bit shared address, got "
                          f"{start_address!r}")
    if not isinstance(block, tuple) or len(block) != 2 or not all(is_int(x) and 0 < x <= 4096 for x in block):
        raise LayoutError(f"make_gmma_desc_tensor: a block is (MN, K), two extents 1..4096, got {block!r}")
    sw, lay = gmma_smem_swizzle(smem, elem_bits)
    if rank(lay.shape) != 2:
        raise LayoutError(f"make_gmma_desc_tensor: a stage is (MN, K), got {lay}")
    t = make_tensor(0, lay)
    first = local_tile(t, block, (0, 0))
    base = make_gmma_desc(major, ComposedLayout(sw, SmemPtrFlag(int(elem_bits)), first.layout), elem_bits,
                          start_address)
    out: dict[tuple[int, int], GmmaDescriptor] = {}
    (mn, k), (bm, bk) = (size(get(lay, 0)), size(get(lay, 1))), block
    if mn % bm or k % bk:
        raise LayoutError(f"make_gmma_desc_tensor: the block {block} does not divide the stage {(mn, k)}")
    for i in range(mn // bm):
        for j in range(k // bk):
            off = local_tile(t, block, (i, j)).offset
            assert isinstance(off, int)
            off_bits = off * int(elem_bits)
            if off_bits % 128:
                raise GmmaLayoutError("recast to uint128_t fails", f"block {(i, j)} starts {off_bits} bits into "
                                      "the stage, not a multiple of 128")
            out[(i, j)] = base + off_bits // 128
    return out
