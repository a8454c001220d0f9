"""The GMMA shared-memory layout atoms of ``cute/atom/mma_traits_sm90_gmma.hpp``:
``GMMA::Layout_{MN,K}_{INTER,SW32,SW64,SW128}_Atom<T>``.

Each atom is ``Sw<b,4,3> o smem_ptr[Nb](unset) o L``: a swizzle in *bytes* applied by the
shared-memory pointer, as in C++ (see
:meth:`~threadmap.layout.layout_composed.ComposedLayout.as_position_independent_swizzle_layout`
for the element-offset function).
"""

from __future__ import annotations

from threadmap.errors import LayoutError
from threadmap.layout.int_tuple import is_int
from threadmap.layout.layout import Layout
from threadmap.layout.layout_composed import ComposedLayout
from threadmap.layout.pointer_flagged import SmemPtrFlag
from threadmap.layout.swizzle import Swizzle

__all__ = ["gmma_layout_atom", "gmma_layout_atom_bits", "GMMA_LAYOUT_ATOMS", "GMMA_ELEMENT_BITS"]

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

