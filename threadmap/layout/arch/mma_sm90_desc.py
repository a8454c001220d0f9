"""The GMMA shared-memory descriptor (``cute/arch/mma_sm90_desc.hpp``): the 64-bit word a
``wgmma.mma_async`` takes for each shared-memory operand, and the shared-memory addresses it
makes the tensor core read.

Bit fields of ``GmmaDescriptor`` (every offset in 16-byte units, "4LSB not included"):

=================  =========  ==================================================
start_address      [0, 14)    the operand's shared address >> 4
leading_byte_off   [16, 30)   LBO
stride_byte_off    [32, 46)   SBO
base_offset        [49, 52)   the swizzle pattern's phase (CuTe always writes 0)
layout_type        [62, 64)   ``LayoutType``: INTERLEAVE 0, B128 1, B64 2, B32 3
=================  =========  ==================================================

What the tensor core reads (:func:`gmma_smem_addresses`) is the header's canonical layout
(``make_gmma_desc``'s comment in ``cute/atom/mma_traits_sm90_gmma.hpp``) with the fields put
back, in units of ``uint128_t`` (``T = 128 / bits`` elements each, ``W`` = 1, 2, 4, 8 for
INTERLEAVE, B32, B64, B128)::

    K-major   INTERLEAVE  ((8,m),(T,2)):((1T,SBO),(1,LBO))
              B32..B128   ((8,m),(T,2)):((WT,SBO),(1,T))
    MN-major  INTERLEAVE  ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
              B32..B128   ((T,W,m),(8,k)):((1,T,LBO),(WT,SBO))

added to the start address in bytes; the swizzle of the layout type, ``Swizzle<B,4,3>`` with
``B = log2(W)``, then acts on the *absolute* byte address (with ``base_offset`` 0, as CuTe
sets it: the hardware takes the swizzle's phase from the address bits, not from the tile's
start).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from threadmap.errors import LayoutError
from threadmap.layout.swizzle import Swizzle

__all__ = ["LayoutType", "GmmaDescriptor", "gmma_smem_addresses", "layout_type_width", "GMMA_MAJORS"]

#: the operand majorness ``GMMA::Major`` (``K``: the reduction mode is contiguous)
GMMA_MAJORS = ("K", "MN")

_FIELD_MASK = (1 << 14) - 1


class LayoutType(IntEnum):
    """``GMMA::LayoutType`` (its numbering: SWIZZLE_NONE 0, 128B 1, 64B 2, 32B 3)."""

    INTERLEAVE = 0
    B128 = 1
    B64 = 2
    B32 = 3


def layout_type_width(t: LayoutType) -> int:
    """``W``: ``uint128_t`` per row of the layout type's swizzle atom (1, 2, 4, 8); the atom
    swizzles with ``Swizzle<log2(W),4,3>`` on byte addresses."""
    return {LayoutType.INTERLEAVE: 1, LayoutType.B32: 2, LayoutType.B64: 4, LayoutType.B128: 8}[LayoutType(t)]


@dataclass(frozen=True)
class GmmaDescriptor:
    """``union GmmaDescriptor``: the five bit fields (values as stored: offsets in 16-byte
    units, each field already cut to its width).  ``desc`` is the 64-bit word.  Law:
    ``GmmaDescriptor.from_u64(d.desc) == d``."""

    start_address: int
    leading_byte_offset: int
    stride_byte_offset: int
    base_offset: int = 0
    layout_type: LayoutType = LayoutType.INTERLEAVE

    def __post_init__(self) -> None:
        for name, width in (("start_address", 14), ("leading_byte_offset", 14), ("stride_byte_offset", 14),
                            ("base_offset", 3)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << width:
                raise LayoutError(f"GmmaDescriptor.{name} is a {width}-bit field, got {v!r}")
        try:
            object.__setattr__(self, "layout_type", LayoutType(self.layout_type))
        except ValueError:
            raise LayoutError(f"GmmaDescriptor.layout_type is 0..3, got {self.layout_type!r}") from None

    @property
    def desc(self) -> int:
        """The 64-bit descriptor word."""
        return (self.start_address | self.leading_byte_offset << 16 | self.stride_byte_offset << 32
                | self.base_offset << 49 | int(self.layout_type) << 62)

    @classmethod
    def from_u64(cls, desc: int) -> GmmaDescriptor:
        """The fields of a 64-bit word (the bits no field uses are ignored, as the hardware does)."""
        if not isinstance(desc, int) or isinstance(desc, bool) or not 0 <= desc < 1 << 64:
            raise LayoutError(f"a GMMA descriptor is a 64-bit unsigned integer, got {desc!r}")
        return cls(desc & _FIELD_MASK, desc >> 16 & _FIELD_MASK, desc >> 32 & _FIELD_MASK, desc >> 49 & 7,
                   LayoutType(desc >> 62 & 3))

    def __add__(self, offset: int | np.integer) -> GmmaDescriptor:
        """``DescriptorIterator + offset``: ``offset`` (in ``uint128_t``) added to the low 32 bits
        (the start address; a carry out of its 14 bits runs into the unused bits and the LBO, as
        the header's 32-bit add does)."""
        if not isinstance(offset, int | np.integer) or isinstance(offset, bool):
            # int() would take "1" or 1.5; the header's offset is an integer
            raise LayoutError(f"a descriptor advances by an integer number of uint128_t, got {offset!r}")
        lo = (self.desc & 0xFFFFFFFF) + int(offset) & 0xFFFFFFFF
        return GmmaDescriptor.from_u64((self.desc & ~0xFFFFFFFF) | lo)

    def __str__(self) -> str:
        # CuTe's print(GmmaDescriptor)
        return (f"GmmaDescriptor: 0x{self.desc:016x}\n"
                f"  start_addr :  0x{self.start_address:04x}\n"
                f"  leading_off:  0x{self.leading_byte_offset:04x} ({self.leading_byte_offset})\n"
                f"  stride_off :  0x{self.stride_byte_offset:04x} ({self.stride_byte_offset})\n"
                f"  base_offset:  0x{self.base_offset:01x}\n"
                f"  layout_type:  0x{int(self.layout_type):01x} ({self.layout_type.name})")


def gmma_smem_addresses(desc: GmmaDescriptor, major: str, mn: int, k: int, elem_bits: int) -> np.ndarray:
    """The shared byte address the tensor core reads for each element ``(i, j)`` of an
    ``mn x k`` operand (A: ``64 x K``; B: ``N x K``) of ``elem_bits``-bit elements through
    ``desc`` (module docstring): an ``int64`` array of shape ``(mn, k)``.  Sub-byte elements
    share a byte address.  Law: for a layout ``make_gmma_desc`` accepts, equal to the
    layout's own swizzled addresses (the descriptor round-trips)."""
    if not isinstance(desc, GmmaDescriptor):
        raise LayoutError(f"gmma_smem_addresses reads through a GmmaDescriptor, got {desc!r}")
    if not isinstance(major, str) or major not in GMMA_MAJORS:
        raise LayoutError(f"a GMMA operand is K- or MN-major, got {major!r}")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (mn, k, elem_bits)) or \
            elem_bits not in (4, 8, 16, 32, 64):
        raise LayoutError(f"GMMA operands have integer extents and 4-, 8-, 16-, 32- or 64-bit elements, got "
                          f"{mn!r} x {k!r} of {elem_bits!r} bits")
    if desc.base_offset:
        raise LayoutError("a GMMA descriptor with a non-zero base_offset is not modelled (CuTe always writes 0)")
    t = 128 // elem_bits
    w = layout_type_width(desc.layout_type)
    inter = desc.layout_type == LayoutType.INTERLEAVE
    lbo, sbo = desc.leading_byte_offset, desc.stride_byte_offset
    if not 0 < mn <= 4096 or not 0 < k <= 4096:
        raise LayoutError(f"an operand's extents are 1..4096, got {mn} x {k}")
    i = np.arange(mn, dtype=np.int64)[:, None]
    j = np.arange(k, dtype=np.int64)[None, :]
    if major == "K":
        u128 = (i % 8) * w + (i // 8) * sbo + (j // t) * (lbo if inter else 1)
        bit = (j % t) * elem_bits
    else:
        u128 = ((i // t) % w + (i // (t * w)) * (sbo if inter else lbo)
                + (j % 8) * w + (j // 8) * (lbo if inter else sbo))
        bit = (i % t) * elem_bits
    addr = desc.start_address * 16 + u128 * 16 + bit // 8
    return np.asarray(Swizzle(w.bit_length() - 1, 4, 3)(addr), dtype=np.int64)
