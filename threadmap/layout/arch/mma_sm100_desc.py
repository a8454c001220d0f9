"""The Blackwell (SM100) UMMA descriptors (``cute/arch/mma_sm100_desc.hpp``): the 64-bit
shared-memory descriptor a ``tcgen05.mma`` takes for each shared-memory operand, the 32-bit
instruction descriptor, and the shared-memory addresses a shared descriptor makes the tensor
core read.

Modelled from the CUTLASS headers only: not confirmed on hardware (no tcgen05 GPU here).

Bit fields of ``UMMA::SmemDescriptor`` (offsets in 16-byte units, "4LSB not included"):

====================  =========  ==================================================
start_address         [0, 14)    the operand's shared address >> 4
leading_byte_offset   [16, 30)   LBO
stride_byte_offset    [32, 46)   SBO
version               [46, 48)   1 on Blackwell (``make_umma_desc`` writes 1)
base_offset           [49, 52)   the swizzle pattern's phase (CuTe writes 0)
lbo_mode              [52, 53)   0: "legacy mode" (CuTe writes 0)
layout_type           [61, 64)   :class:`UmmaLayoutType`: NONE 0, 128B_BASE32B 1, 128B 2,
                                 64B 4, 32B 6 (SM90's ``GMMA::LayoutType`` numbers differ)
====================  =========  ==================================================

Bit fields of ``UMMA::InstrDescriptor`` (32 bits): sparse_id2 [0,2), sparse_flag [2],
saturate [3], c_format [4,6), a_format [7,10), b_format [10,13), a_negate [13],
b_negate [14], a_major [15], b_major [16], n_dim = N>>3 [17,23), m_dim = M>>4 [24,29),
max_shift [30,32).

What the tensor core reads (:func:`umma_smem_addresses`) is the header's canonical layout
(``make_umma_desc``'s comment in ``cute/atom/mma_traits_sm100.hpp``) with the fields put back,
in units of ``uint128_t`` (``T = 128 / bits`` elements each; ``W`` = 1, 2, 4, 8, 8 for NONE,
32B, 64B, 128B, 128B_BASE32B; ``KA`` = 8, or 4 for 128B_BASE32B)::

    K-major   NONE         ((8,m),(T,2)):((1T,SBO),(1,LBO))
              32B..128B    ((8,m),(T,2)):((WT,SBO),(1,T))
    MN-major  NONE         ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
              32B..128B    ((T,W,m),(KA,k)):((1,T,LBO),(WT,SBO))

(the header's comment writes the 128B_BASE32B K stride as ``4T``; its code asserts
``stride<1,0> == 8`` uint128_t, which is what is modelled) added to the start address in
bytes; the swizzle of the layout type (``Swizzle<log2 W,4,3>``, or ``Swizzle<2,5,2>`` for
128B_BASE32B) then acts on the *absolute* byte address, as for SM90.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from threadmap.errors import LayoutError
from threadmap.layout.swizzle import Swizzle

__all__ = ["UmmaLayoutType", "UmmaSmemDescriptor", "UmmaInstrDescriptor", "umma_smem_addresses",
           "umma_layout_type_width", "umma_layout_type_swizzle", "UMMA_MAJORS"]

#: the operand majorness ``UMMA::Major`` (K 0, MN 1)
UMMA_MAJORS = ("K", "MN")

_MASK14 = (1 << 14) - 1


class UmmaLayoutType(IntEnum):
    """``UMMA::LayoutType`` (``mma_sm100_desc.hpp``): SWIZZLE_NONE 0, SWIZZLE_128B_BASE32B 1,
    SWIZZLE_128B 2, SWIZZLE_64B 4, SWIZZLE_32B 6 (3, 5, 7 are "N/A")."""

    SWIZZLE_NONE = 0
    SWIZZLE_128B_BASE32B = 1
    SWIZZLE_128B = 2
    SWIZZLE_64B = 4
    SWIZZLE_32B = 6


def umma_layout_type_width(t: UmmaLayoutType) -> int:
    """``SwizzleAtomMNSize`` of ``make_umma_desc``: ``uint128_t`` per row of the layout type's
    swizzle atom (1, 2, 4, 8, 8 for NONE, 32B, 64B, 128B, 128B_BASE32B)."""
    return {UmmaLayoutType.SWIZZLE_NONE: 1, UmmaLayoutType.SWIZZLE_32B: 2, UmmaLayoutType.SWIZZLE_64B: 4,
            UmmaLayoutType.SWIZZLE_128B: 8, UmmaLayoutType.SWIZZLE_128B_BASE32B: 8}[UmmaLayoutType(t)]


def umma_layout_type_swizzle(t: UmmaLayoutType) -> Swizzle:
    """The swizzle on byte addresses of a layout type: the inverse of the header's
    ``UMMA::layout_type`` (``Swizzle<B,4,3>`` -> NONE/32B/64B/128B, ``Swizzle<2,5,2>`` ->
    128B_BASE32B).  Law: ``layout_type(umma_layout_type_swizzle(t)) == t``."""
    t = UmmaLayoutType(t)
    if t == UmmaLayoutType.SWIZZLE_128B_BASE32B:
        return Swizzle(2, 5, 2)
    return Swizzle(umma_layout_type_width(t).bit_length() - 1, 4, 3)


def _check_u(name: str, v: object, width: int, owner: str) -> None:
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << width:
        raise LayoutError(f"{owner}.{name} is a {width}-bit field, got {v!r}")


@dataclass(frozen=True)
class UmmaSmemDescriptor:
    """``union UMMA::SmemDescriptor``: its seven bit fields (values as stored: offsets in
    16-byte units).  ``desc`` is the 64-bit word.  Law: ``from_u64(d.desc) == d``, and
    ``from_u64(w).desc == w`` with the unused bits cleared."""

    start_address: int
    leading_byte_offset: int
    stride_byte_offset: int
    version: int = 1
    base_offset: int = 0
    lbo_mode: int = 0
    layout_type: UmmaLayoutType = UmmaLayoutType.SWIZZLE_NONE

    def __post_init__(self) -> None:
        for name, width in (("start_address", 14), ("leading_byte_offset", 14), ("stride_byte_offset", 14),
                            ("version", 2), ("base_offset", 3), ("lbo_mode", 1)):
            _check_u(name, getattr(self, name), width, "UmmaSmemDescriptor")
        try:
            object.__setattr__(self, "layout_type", UmmaLayoutType(self.layout_type))
        except ValueError:
            raise LayoutError(f"UmmaSmemDescriptor.layout_type is 0, 1, 2, 4 or 6 (3, 5, 7 are N/A), got "
                              f"{self.layout_type!r}") from None

    @property
    def desc(self) -> int:
        """The 64-bit descriptor word."""
        return (self.start_address | self.leading_byte_offset << 16 | self.stride_byte_offset << 32
                | self.version << 46 | self.base_offset << 49 | self.lbo_mode << 52 | int(self.layout_type) << 61)

    @classmethod
    def from_u64(cls, desc: int) -> UmmaSmemDescriptor:
        """The fields of a 64-bit word (unused bits ignored).  A layout type the header calls
        N/A (3, 5, 7) is an error."""
        if not isinstance(desc, int) or isinstance(desc, bool) or not 0 <= desc < 1 << 64:
            raise LayoutError(f"a UMMA smem descriptor is a 64-bit unsigned integer, got {desc!r}")
        return cls(desc & _MASK14, desc >> 16 & _MASK14, desc >> 32 & _MASK14, desc >> 46 & 3, desc >> 49 & 7,
                   desc >> 52 & 1, desc >> 61 & 7)  # type: ignore[arg-type]  # validated in __post_init__

    def __add__(self, offset: int | np.integer) -> UmmaSmemDescriptor:
        """``UMMA::DescriptorIterator + offset``: ``offset`` (in ``uint128_t``) added to the low
        32 bits only (``ret.lo = desc_.lo + uint32_t(offset)``; a carry out of the start
        address runs into the unused bits and the LBO, as there)."""
        if not isinstance(offset, int | np.integer) or isinstance(offset, bool):
            # int() would take "1" or 1.5; the header's offset is an integer
            raise LayoutError(f"a descriptor advances by an integer number of uint128_t, got {offset!r}")
        lo = (self.desc & 0xFFFFFFFF) + int(offset) & 0xFFFFFFFF
        return UmmaSmemDescriptor.from_u64((self.desc & ~0xFFFFFFFF) | lo)

    def __str__(self) -> str:
        # the header has no printer for UMMA::SmemDescriptor; this follows CuTe's
        # print(GmmaDescriptor) with the SM100 fields added
        return (f"UMMA::SmemDescriptor: 0x{self.desc:016x}\n"
                f"  start_addr :  0x{self.start_address:04x}\n"
                f"  leading_off:  0x{self.leading_byte_offset:04x} ({self.leading_byte_offset})\n"
                f"  stride_off :  0x{self.stride_byte_offset:04x} ({self.stride_byte_offset})\n"
                f"  version    :  {self.version}\n"
                f"  base_offset:  0x{self.base_offset:01x}\n"
                f"  lbo_mode   :  {self.lbo_mode}\n"
                f"  layout_type:  0x{int(self.layout_type):01x} ({self.layout_type.name})")


_INSTR_FIELDS: tuple[tuple[str, int, int], ...] = (
    # (name, first bit, width) -- the header's bit-field comments
    ("sparse_id2", 0, 2), ("sparse_flag", 2, 1), ("saturate", 3, 1), ("c_format", 4, 2),
    ("a_format", 7, 3), ("b_format", 10, 3), ("a_negate", 13, 1), ("b_negate", 14, 1),
    ("a_major", 15, 1), ("b_major", 16, 1), ("n_dim", 17, 6), ("m_dim", 24, 5), ("max_shift", 30, 2),
)


@dataclass(frozen=True)
class UmmaInstrDescriptor:
    """``union UMMA::InstrDescriptor``: the 32-bit instruction descriptor's fields, as stored
    (``n_dim = N >> 3``, ``m_dim = M >> 4``; formats as the ``UMMA::*Format`` enums; majors
    0 = K, 1 = MN).  ``desc`` is the word; the runtime form ``make_runtime_instr_desc`` puts it
    in the upper 32 bits of a ``uint64_t`` (:attr:`runtime_desc`).  Law:
    ``from_u32(d.desc) == d``."""

    sparse_id2: int = 0
    sparse_flag: int = 0
    saturate: int = 0
    c_format: int = 0
    a_format: int = 0
    b_format: int = 0
    a_negate: int = 0
    b_negate: int = 0
    a_major: int = 0
    b_major: int = 0
    n_dim: int = 0
    m_dim: int = 0
    max_shift: int = 0

    def __post_init__(self) -> None:
        for name, _, width in _INSTR_FIELDS:
            _check_u(name, getattr(self, name), width, "UmmaInstrDescriptor")

    @property
    def desc(self) -> int:
        """The 32-bit word."""
        return sum(getattr(self, name) << lo for name, lo, _ in _INSTR_FIELDS)

    @property
    def runtime_desc(self) -> int:
        """``make_runtime_instr_desc``'s ``uint64_t`` (dense): the word in the upper 32 bits."""
        return self.desc << 32

    @property
    def m(self) -> int:
        """The instruction's M (``m_dim << 4``)."""
        return self.m_dim << 4

    @property
    def n(self) -> int:
        """The instruction's N (``n_dim << 3``)."""
        return self.n_dim << 3

    @classmethod
    def from_u32(cls, desc: int) -> UmmaInstrDescriptor:
        """The fields of a 32-bit word (the unused bits 6, 23 and 29 ignored)."""
        if not isinstance(desc, int) or isinstance(desc, bool) or not 0 <= desc < 1 << 32:
            raise LayoutError(f"a UMMA instruction descriptor is a 32-bit unsigned integer, got {desc!r}")
        return cls(**{name: desc >> lo & ((1 << w) - 1) for name, lo, w in _INSTR_FIELDS})

    @classmethod
    def from_u64(cls, idesc: int) -> UmmaInstrDescriptor:
        """The descriptor in the upper 32 bits of ``make_runtime_instr_desc``'s ``uint64_t``
        (the lower 32 bits, the sparse metadata's TMEM address, are ignored)."""
        if not isinstance(idesc, int) or isinstance(idesc, bool) or not 0 <= idesc < 1 << 64:
            raise LayoutError(f"a runtime UMMA instruction descriptor is a 64-bit unsigned integer, got {idesc!r}")
        return cls.from_u32(idesc >> 32)


def umma_smem_addresses(desc: UmmaSmemDescriptor, major: str, mn: int, k: int, elem_bits: int) -> np.ndarray:
    """The shared byte address the tensor core reads for each element ``(i, j)`` of an
    ``mn x k`` operand of ``elem_bits``-bit elements through ``desc`` (the module docstring's
    canonical forms with the fields put back, swizzled on absolute byte addresses): an
    ``int64`` array of shape ``(mn, k)``; sub-byte elements share a byte address.  Law: for a
    layout ``make_umma_desc`` accepts, equal to the layout's own swizzled addresses (over the
    instruction's K of 256 bits).  Modelled from the header, not confirmed on hardware."""
    if major not in UMMA_MAJORS:
        raise LayoutError(f"a UMMA operand is K- or MN-major, got {major!r}")
    if elem_bits not in (4, 8, 16, 32):
        raise LayoutError(f"UMMA shared operands have 4-, 8-, 16- or 32-bit elements, got {elem_bits}")
    if desc.version != 1:
        raise LayoutError(f"a Blackwell smem descriptor has version 1 (make_umma_desc writes 1), got {desc.version}")
    if desc.base_offset or desc.lbo_mode:
        raise LayoutError("a UMMA descriptor with a non-zero base_offset or lbo_mode is not modelled "
                          "(make_umma_desc writes 0 to both)")
    if mn <= 0 or k <= 0:
        raise LayoutError(f"an operand has a positive extent, got {mn} x {k}")
    lt = desc.layout_type
    if major == "K" and lt == UmmaLayoutType.SWIZZLE_128B_BASE32B:
        raise LayoutError("SWIZZLE_128B_BASE32B is invalid for Major-K (make_umma_desc's static_assert)")
    t = 128 // elem_bits
    w = umma_layout_type_width(lt)
    ka = 4 if lt == UmmaLayoutType.SWIZZLE_128B_BASE32B else 8
    none = lt == UmmaLayoutType.SWIZZLE_NONE
    lbo, sbo = desc.leading_byte_offset, desc.stride_byte_offset
    i = np.arange(mn, dtype=np.int64)[:, None]
    j = np.arange(k, dtype=np.int64)[None, :]
    if major == "K":
        u128 = (i % 8) * w + (i // 8) * sbo + (j // t) * (lbo if none else 1)
        bit = (j % t) * elem_bits
    else:
        u128 = ((i // t) % w + (i // (t * w)) * (sbo if none else lbo)
                + (j % ka) * w + (j // ka) * (lbo if none else sbo))
        bit = (i % t) * elem_bits
    addr = desc.start_address * 16 + u128 * 16 + bit // 8
    return np.asarray(umma_layout_type_swizzle(lt)(addr), dtype=np.int64)
