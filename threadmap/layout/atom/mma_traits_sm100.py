"""The Blackwell (SM100) UMMA traits of ``cute/atom/mma_traits_sm100.hpp``: the shared-memory
layout atoms ``UMMA::Layout_{MN,K}_{INTER,SW32,SW64,SW128}_Atom<T>`` (GMMA's, re-exported by
the header) and ``UMMA::Layout_MN_SW128_32B_Atom<T>``, ``make_umma_desc`` (the smem
descriptor), and the instruction descriptors ``MMA_Traits<SM100_MMA_*>::idesc_`` with the
``static_assert``\\ s of the MMA operations (``cute/arch/mma_sm100_umma.hpp``) and their traits.

Modelled from the CUTLASS headers only: not confirmed on hardware (no tcgen05 GPU here).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from threadmap.errors import DescriptorLayoutError, LayoutError
from threadmap.layout.arch.mma_sm100_desc import (
    UMMA_MAJORS,
    UmmaInstrDescriptor,
    UmmaLayoutType,
    UmmaSmemDescriptor,
    umma_layout_type_width,
    umma_smem_addresses,
)
from threadmap.layout.atom.mma_traits_sm90_gmma import gmma_layout_atom, gmma_smem_swizzle
from threadmap.layout.int_tuple import congruent, is_int, rank
from threadmap.layout.layout import Layout, get, logical_divide, size, upcast
from threadmap.layout.layout_composed import ComposedLayout
from threadmap.layout.pointer_flagged import SmemPtrFlag
from threadmap.layout.swizzle import Swizzle
from threadmap.layout.table import fast_table

__all__ = ["umma_layout_atom", "umma_layout_atom_bits", "UMMA_SWIZZLES", "UMMA_CANONICAL", "UmmaLayoutError",
           "umma_layout_type", "make_umma_desc", "UmmaInstrError", "UMMA_A_B_FORMATS", "UMMA_C_FORMATS",
           "UMMA_TYPE_BITS", "UMMA_OPS", "UmmaOp", "make_instr_desc", "umma_instr_desc", "umma_operand_mismatches"]

#: the swizzles of the UMMA layout atoms (``SW128_32B``: MN-major only)
UMMA_SWIZZLES = ("INTER", "SW32", "SW64", "SW128", "SW128_32B")


def umma_layout_atom_bits(major: str, swizzle: str) -> ComposedLayout:
    """``UMMA::Layout_{major}_{swizzle}_Atom_Bits``: GMMA's atoms (the header's ``using
    cute::GMMA::Layout_*``) and ``Layout_MN_SW128_32B_Atom_Bits = Sw<2,5,2> o smem_ptr[1b] o
    (1024,4):(1,1024)``.  Law: the atom spans 128 bytes x 8 rows (4 rows for SW128_32B) of
    ``uint128_t`` chunks."""
    if swizzle == "SW128_32B":
        if major != "MN":
            raise LayoutError("UMMA::Layout_MN_SW128_32B_Atom is MN-major only (the header has no K-major one)")
        return ComposedLayout(Swizzle(2, 5, 2), SmemPtrFlag(1), Layout((1024, 4), (1, 1024)))
    if swizzle not in UMMA_SWIZZLES:
        raise LayoutError(f"UMMA swizzle must be one of {list(UMMA_SWIZZLES)}, got {swizzle!r}")
    return gmma_layout_atom(major, swizzle, 1)


def umma_layout_atom(major: str, swizzle: str, element_bits: int) -> ComposedLayout:
    """``UMMA::Layout_{major}_{swizzle}_Atom<T>`` = ``upcast<sizeof_bits<T>>(..._Atom_Bits)``
    (swizzle on bytes through ``smem_ptr[Nb]``, as in C++).  Law: ``tile_to_shape`` of it is
    accepted by :func:`make_umma_desc` for the atom's major (the header's comment)."""
    if not is_int(element_bits) or element_bits <= 0 or element_bits & (element_bits - 1) or element_bits > 128:
        raise LayoutError(f"UMMA atoms need a power-of-two element width <= 128 bits, got {element_bits}")
    atom = umma_layout_atom_bits(major, swizzle)
    return atom.upcast(int(element_bits)) if element_bits > 1 else atom


# ----------------------------------------------------------------------------- smem descriptor
#: the canonical forms ``make_umma_desc`` accepts, in units of ``uint128_t`` (its code: the
#: BASE32B K stride is 8, where its comment says 4)
UMMA_CANONICAL: dict[tuple[str, UmmaLayoutType], str] = {
    ("MN", UmmaLayoutType.SWIZZLE_NONE): "Swizzle<0,4,3> o smem_ptr o ((1,n),(8,k)):((X,SBO),(1,LBO))",
    ("MN", UmmaLayoutType.SWIZZLE_32B): "Swizzle<1,4,3> o smem_ptr o ((2,n),(8,k)):((1,LBO),(2,SBO))",
    ("MN", UmmaLayoutType.SWIZZLE_64B): "Swizzle<2,4,3> o smem_ptr o ((4,n),(8,k)):((1,LBO),(4,SBO))",
    ("MN", UmmaLayoutType.SWIZZLE_128B): "Swizzle<3,4,3> o smem_ptr o ((8,n),(8,k)):((1,LBO),(8,SBO))",
    ("MN", UmmaLayoutType.SWIZZLE_128B_BASE32B): "Swizzle<2,5,2> o smem_ptr o ((8,n),(4,k)):((1,LBO),(8,SBO))",
    ("K", UmmaLayoutType.SWIZZLE_NONE): "Swizzle<0,4,3> o smem_ptr o ((8,n),2):((1,SBO),LBO)",
    ("K", UmmaLayoutType.SWIZZLE_32B): "Swizzle<1,4,3> o smem_ptr o ((8,n),2):((2,SBO),1)",
    ("K", UmmaLayoutType.SWIZZLE_64B): "Swizzle<2,4,3> o smem_ptr o ((8,n),2):((4,SBO),1)",
    ("K", UmmaLayoutType.SWIZZLE_128B): "Swizzle<3,4,3> o smem_ptr o ((8,n),2):((8,SBO),1)",
}


class UmmaLayoutError(DescriptorLayoutError):
    """A shared layout ``make_umma_desc`` does not accept (see :class:`~threadmap.errors.DescriptorLayoutError`)."""

    builder = "make_umma_desc"


def umma_layout_type(sw: Swizzle) -> UmmaLayoutType:
    """``UMMA::layout_type(u128_tensor)``: the layout type of the pointer's swizzle (on bytes),
    with the header's asserts.  Law: inverse of
    :func:`~threadmap.layout.arch.mma_sm100_desc.umma_layout_type_swizzle`."""
    b, m, s = sw.num_bits, sw.num_base, sw.num_shft
    if m == 4:
        if s != 3:
            raise UmmaLayoutError("Expected S = 3 when M == 4. Unsupported layout swizzle.", f"{sw} on bytes")
        if not 0 <= b <= 3:
            raise UmmaLayoutError("Expected B = 0,1,2, or 3 when M == 4. Unsupported layout swizzle.", f"{sw} on bytes")
        return (UmmaLayoutType.SWIZZLE_NONE, UmmaLayoutType.SWIZZLE_32B, UmmaLayoutType.SWIZZLE_64B,
                UmmaLayoutType.SWIZZLE_128B)[b]
    if m == 5:
        if b != 2:
            raise UmmaLayoutError("Expected B = 2 when M == 5. Unsupported layout swizzle.", f"{sw} on bytes")
        if s != 2:
            raise UmmaLayoutError("Expected S = 2 when M == 5. Unsupported layout swizzle.", f"{sw} on bytes")
        return UmmaLayoutType.SWIZZLE_128B_BASE32B
    raise UmmaLayoutError("Only 16B and 32B Atoms are supported for UMMA. Unsupported layout swizzle.",
                          f"{sw} on bytes")


def make_umma_desc(major: str, smem: Any, elem_bits: int = 16, start_address: int = 0) -> UmmaSmemDescriptor:
    """``UMMA::make_umma_desc<Major>(tensor)`` for a shared tensor of ``elem_bits``-bit
    elements whose (unswizzled) pointer is the byte ``start_address`` and whose layout is
    ``smem`` (a ``Layout``, ``Sw o L``, or an atom's ``Sw o smem_ptr[Nb] o L``), rank 2:
    ``(MN, K)`` of one ``tcgen05.mma``'s operand.  Follows the header step by step: version 1,
    lbo_mode 0, recast to ``uint128_t``, the layout type from the pointer's swizzle, the start
    address, base_offset 0, then per major the asserts, ``logical_divide`` by the canonical tile
    (``(W, KA)`` for MN, ``(8, 2)`` for K), the profile and stride asserts, SBO and LBO.  A
    layout the header rejects raises :class:`UmmaLayoutError` quoting the canonical form.  Law:
    :func:`~threadmap.layout.arch.mma_sm100_desc.umma_smem_addresses` of the result are the
    tensor's own swizzled addresses ``Sw(start_address + smem(i, j) * elem_bits / 8)``."""
    if major not in UMMA_MAJORS:
        raise LayoutError(f"make_umma_desc: the major mode is 'K' or 'MN', got {major!r}")
    if not is_int(elem_bits) or elem_bits not in (4, 8, 16, 32):
        raise LayoutError(f"make_umma_desc: UMMA shared operands have 4-, 8-, 16- or 32-bit elements, got "
                          f"{elem_bits!r}")
    if not is_int(start_address) or not 0 <= start_address < 1 << 32:
        raise LayoutError(f"make_umma_desc: the start address is a 32-bit shared address, got {start_address!r}")
    try:
        sw, lay = gmma_smem_swizzle(smem, int(elem_bits))
    except LayoutError as e:
        raise LayoutError(str(e).replace("make_gmma_desc", "make_umma_desc").replace("a GMMA atom's", "an atom's")
                          ) from None
    if rank(lay.shape) != 2:
        raise UmmaLayoutError("UMMA Descriptors can only be constructed on rank-2 tensors.",
                              f"{lay} has rank {rank(lay.shape)}")
    bits = int(elem_bits)
    try:
        u128 = upcast(lay, 128 // bits)
    except LayoutError as e:
        raise UmmaLayoutError("recast to uint128_t fails", f"{lay}: {e}") from None
    lt = umma_layout_type(sw)
    w = umma_layout_type_width(lt)
    none = lt == UmmaLayoutType.SWIZZLE_NONE
    if major == "MN":
        canon = UMMA_CANONICAL[("MN", lt)]
        ka = 4 if lt == UmmaLayoutType.SWIZZLE_128B_BASE32B else 8
        canonical = logical_divide(u128, (Layout(w, 1), Layout(ka, 1)))
        if not congruent(canonical.shape, ((1, 1), (1, 1))):
            raise UmmaLayoutError("Not a canonical UMMA_MN Layout: Expected profile failure.",
                                  f"{canonical} (uint128_t) is not ((x,x),(x,x))", canon)
        (s00, s01), (s10, s11) = canonical.stride
        if not none and s00 != 1 or s10 != w:
            raise UmmaLayoutError("Not a canonical UMMA_MN Layout: Expected stride failure.",
                                  f"{canonical} (uint128_t) needs stride<0,0> " + ("any" if none else "1")
                                  + f", stride<1,0> {w}", canon)
        sbo, lbo = (s01, s11) if none else (s11, s01)
    else:
        if lt == UmmaLayoutType.SWIZZLE_128B_BASE32B:
            raise UmmaLayoutError("SWIZZLE_128B_BASE32B is invalid for Major-K", f"{sw} on bytes")
        canon = UMMA_CANONICAL[("K", lt)]
        if size(get(u128, 0)) % 8:
            raise UmmaLayoutError("Not a canonical UMMA_K Layout: Expected MN-size multiple of 8.",
                                  f"MN-size {size(get(u128, 0))} in {lay}", canon)
        canonical = logical_divide(u128, (Layout(8, 1), Layout(2, 1)))
        if not congruent(canonical.shape, ((1, 1), (1, 1))):
            raise UmmaLayoutError("Not a canonical UMMA_K Layout: Expected profile failure.",
                                  f"{canonical} (uint128_t) is not ((x,x),(x,x))", canon)
        (s00, s01), (s10, _) = canonical.stride
        if s00 != w or not none and s10 != 1:
            raise UmmaLayoutError("Not a canonical UMMA_K Layout: Expected stride failure.",
                                  f"{canonical} (uint128_t) needs stride<0,0> {w}, stride<1,0> "
                                  + ("any" if none else "1"), canon)
        sbo, lbo = s01, s10
    # the strides are uint32_t cut into the 14-bit fields; the start address is cut to
    # uint16_t before its 14-bit field takes it
    return UmmaSmemDescriptor(start_address=(int(start_address) >> 4 & 0xFFFF) & 0x3FFF,
                              leading_byte_offset=int(lbo) & 0xFFFFFFFF & 0x3FFF,
                              stride_byte_offset=int(sbo) & 0xFFFFFFFF & 0x3FFF,
                              version=1, base_offset=0, lbo_mode=0, layout_type=lt)


def umma_operand_mismatches(major: str, smem: Any, elem_bits: int = 16, start_address: int = 0) -> np.ndarray:
    """The elements ``(i, j)`` of an operand whose address the descriptor
    :func:`make_umma_desc` builds for it makes the tensor core read
    (:func:`~threadmap.layout.arch.mma_sm100_desc.umma_smem_addresses`) differs from the
    operand's own swizzled address: an ``(n, 2)`` array, empty when the descriptor describes
    the layout.  The header checks the layout only after ``recast<uint128_t>``, which forgets
    the order of the elements inside each 16-byte chunk: a layout that permutes them is
    accepted and read in the canonical order (a silent bug this finds).  Law: empty for every
    ``tile_to_shape`` of a UMMA atom cut to an operand; raises :class:`UmmaLayoutError` where
    the header rejects the layout."""
    d = make_umma_desc(major, smem, elem_bits, start_address)
    sw, lay = gmma_smem_swizzle(smem, int(elem_bits))
    mn, k = size(get(lay, 0)), size(get(lay, 1))
    offs = fast_table(lay, dtype=np.int64).reshape(k, mn).T       # colex: index i + mn * j
    own = np.asarray(sw(int(start_address) + offs * int(elem_bits) // 8), dtype=np.int64)
    reads = umma_smem_addresses(d, major, mn, k, int(elem_bits))
    return np.argwhere(reads != own)


# ----------------------------------------------------------------------------- instruction descriptor
#: ``UMMA::to_UMMAFormat<T>()``: the A/B types it knows -> (the enum, its value).  Note the
#: header's own mapping: ``float_e2m1_t`` is ``MXF4Format::E2M1`` = 1 (the ``_unpacksmem``
#: variant is ``MXF8F6F4Format::E2M1`` = 5).
UMMA_A_B_FORMATS: dict[str, tuple[str, int]] = {
    "half_t": ("F16F32Format::F16", 0), "bfloat16_t": ("F16F32Format::BF16", 1),
    "tfloat32_t": ("F16F32Format::TF32", 2), "uint8_t": ("S8Format::UINT8", 0), "int8_t": ("S8Format::INT8", 1),
    "float_e4m3_t": ("MXF8F6F4Format::E4M3", 0), "float_e5m2_t": ("MXF8F6F4Format::E5M2", 1),
    "float_e2m3_t": ("MXF8F6F4Format::E2M3", 3), "float_e3m2_t": ("MXF8F6F4Format::E3M2", 4),
    "float_e2m1_t": ("MXF4Format::E2M1", 1),
}
#: ``UMMA::to_CFormat<T>()``
UMMA_C_FORMATS: dict[str, int] = {"half_t": 0, "float": 1, "int32_t": 2}
#: ``sizeof_bits`` of the types above (and of ``float``, ``int32_t``)
UMMA_TYPE_BITS: dict[str, int] = {
    "half_t": 16, "bfloat16_t": 16, "tfloat32_t": 32, "float": 32, "int32_t": 32, "uint8_t": 8, "int8_t": 8,
    "float_e4m3_t": 8, "float_e5m2_t": 8, "float_e2m3_t": 6, "float_e3m2_t": 6, "float_e2m1_t": 4,
}


class UmmaInstrError(LayoutError):
    """An MMA operation the header rejects at compile time: ``rule`` is the ``static_assert``'s
    message (whitespace of its line continuations folded), ``where`` the header."""

    def __init__(self, op: str, rule: str, where: str) -> None:
        self.op, self.rule, self.where = op, rule, where
        super().__init__(f"{op}: {rule} ({where})")


def _type_name(t: str) -> str:
    t = "".join(str(t).split())
    for ns in ("cute::", "cutlass::"):
        t = t.replace(ns, "")
    return t


def make_instr_desc(a_type: str, b_type: str, c_type: str, m: int, n: int, a_major: str, b_major: str,
                    a_neg: bool = False, b_neg: bool = False, saturate: bool = False, sparse: bool = False,
                    max_shift: int = 0) -> UmmaInstrDescriptor:
    """``UMMA::make_instr_desc<a,b,c,M,N,a_major,b_major,a_neg,b_neg,c_sat,is_sparse,max_shift>()``
    exactly: the formats (``to_UMMAFormat``, ``to_CFormat``: an unknown type is the header's
    static_assert), ``m_dim = M >> 4`` and ``n_dim = N >> 3`` cut to their 5 and 6 bits, majors,
    negates, saturate, sparse flag, ``sparse_id2 = 0``, max shift.  It checks no shape: the
    MMA operations do (:func:`umma_instr_desc`).  Law: ``d.m == M`` and ``d.n == N`` for
    ``M % 16 == 0 < M < 512`` and ``N % 8 == 0 < N < 512``."""
    a, b, c = _type_name(a_type), _type_name(b_type), _type_name(c_type)
    where = "cute/arch/mma_sm100_desc.hpp"
    for t in (a, b):
        if t not in UMMA_A_B_FORMATS:
            raise UmmaInstrError("make_instr_desc", f"Unknown type for UMMAFormat ({t})", where)
    if c not in UMMA_C_FORMATS:
        raise UmmaInstrError("make_instr_desc", f"Unknown type for CFormat ({c})", where)
    for name, v in (("M", m), ("N", n), ("max_shift", max_shift)):
        if not is_int(v) or v < 0:
            raise LayoutError(f"make_instr_desc: {name} is a non-negative integer, got {v!r}")
    if max_shift > 3:
        raise LayoutError(f"make_instr_desc: UMMA::MaxShift is 0..3, got {max_shift}")
    majors = {"K": 0, "MN": 1}
    if a_major not in majors or b_major not in majors:
        raise LayoutError(f"make_instr_desc: the majors are 'K' or 'MN', got {a_major!r}, {b_major!r}")
    return UmmaInstrDescriptor(sparse_id2=0, sparse_flag=int(bool(sparse)), saturate=int(bool(saturate)),
                               c_format=UMMA_C_FORMATS[c], a_format=UMMA_A_B_FORMATS[a][1],
                               b_format=UMMA_A_B_FORMATS[b][1], a_negate=int(bool(a_neg)), b_negate=int(bool(b_neg)),
                               a_major=majors[a_major], b_major=majors[b_major], n_dim=int(n) >> 3 & 63,
                               m_dim=int(m) >> 4 & 31, max_shift=int(max_shift))


# The operations: each rule is (its static_assert message, a predicate on (M, N, a_major,
# b_major, a, b, c) that must hold), in the header's order; 'neg'/'sat': whether the operation
# has the template parameter, 'fwd_neg'/'fwd_sat': whether its MMA_Traits passes it on to
# make_instr_desc (the S8 SS traits and S8_TS pass ScaleIn::One; the SS traits other than S8
# pass no c_sat).
_Pred = Callable[[int, int, str, str, str, str, str], bool]


@dataclass(frozen=True)
class UmmaOp:
    """One ``SM100_MMA_*`` operation with its ``MMA_Traits``: ``kind`` (``tcgen05.mma``'s
    ``.kind``), ``cta_group`` (1, or 2 for ``_2x1SM``), ``a_from_tmem`` (``_TS``), the
    ``static_assert``\\ s of the operation and of its traits, ``K`` (elements), and which of the
    negate / saturate parameters it has and forwards to ``make_instr_desc``."""

    name: str
    kind: str
    cta_group: int
    a_from_tmem: bool
    rules: tuple[tuple[str, str, _Pred], ...]
    has_neg: bool
    fwd_neg: bool
    has_sat: bool
    fwd_sat: bool
    templated: bool = True     # False: the op is a plain struct, MMA_Traits<Op, a, b, c, C<M>, ...>

    def k(self, a_type: str) -> int:
        """``Shape_MNK``'s K: 256 bits of A (32 for the F8F6F4 kinds)."""
        return 32 if self.kind == "f8f6f4" else 256 // UMMA_TYPE_BITS[_type_name(a_type)]


_ARCH = "cute/arch/mma_sm100_umma.hpp"
_TRAITS = "cute/atom/mma_traits_sm100.hpp"


def _n_range(lo: int, step: int) -> Callable[[int], bool]:
    return lambda n: n % step == 0 and lo <= n <= 256


def _n_multiple(lo: int) -> _Pred:
    return lambda m, n, am, bm, a, b, c: _n_range(lo, lo)(n)


def _n_by_b_major(lo_k: int, lo_mn: int) -> _Pred:
    return lambda m, n, am, bm, a, b, c: _n_range(lo_k, lo_k)(n) if bm == "K" else _n_range(lo_mn, lo_mn)(n)


def _ops() -> dict[str, UmmaOp]:
    out: dict[str, UmmaOp] = {}
    bits = UMMA_TYPE_BITS.get

    def size_rule(name: str, kind: str) -> tuple[str, str, _Pred]:
        if kind == "f8f6f4":
            return (f"{name} supports types with leq 8bit types", _TRAITS,
                    lambda m, n, am, bm, a, b, c: (bits(a) or 99) <= 8 and (bits(b) or 99) <= 8)
        w = {"tf32": 32, "f16": 16, "i8": 8}[kind]
        what = {"tf32": "32bit", "f16": "16bit", "i8": "8bit"}[kind]
        return (f"{name} supports {what} types", _TRAITS, lambda m, n, am, bm, a, b, c: bits(a) == bits(b) == w)

    a_k: Callable[[str], tuple[str, str, _Pred]] = lambda pre: (  # noqa: E731
        f"{pre} A from TMEM can't be transposed", _ARCH, lambda m, n, am, bm, a, b, c: am == "K")
    for kind, fam in (("tf32", "TF32"), ("f16", "F16BF16"), ("i8", "S8"), ("f8f6f4", "F8F6F4")):
        for variant in ("SS", "TS", "2x1SM_SS", "2x1SM_TS"):
            name = f"SM100_MMA_{fam}_{variant}"
            ts, two = variant.endswith("TS"), variant.startswith("2x1SM")
            pre = name if two or fam in ("S8", "F8F6F4") else f"SM100_MMA_{fam}"
            rules: list[tuple[str, str, _Pred]] = []
            where = _ARCH
            if fam == "F8F6F4" and not ts:
                # a plain struct: the shape asserts are the traits'
                where = _TRAITS
                rules.append(size_rule(name, kind))
            if fam == "S8" and variant == "SS":
                rules.append((f"{name} result type can only be int32_t.", _ARCH,
                              lambda m, n, am, bm, a, b, c: c == "int32_t"))
            if not two:
                rules.append((f"{pre} M-mode size should be 64 or 128 for 1 CTA cluster MMA.", where,
                              lambda m, n, am, bm, a, b, c: m in (64, 128)))
            else:
                msg = (f"{pre} M-mode size should be 64 or 128 for 1 CTA cluster MMA." if fam == "F8F6F4"
                       else f"{pre} M-mode size should be 128 or 256 for 2 CTA cluster MMA.")
                rules.append((msg, where, lambda m, n, am, bm, a, b, c: m in (128, 256)))
            if fam == "S8" and not two:
                rules.append((f"{pre} N-mode size should be 8 or a multiple of 16 between 16 and 256.", _ARCH,
                              lambda m, n, am, bm, a, b, c: n == 8 or _n_range(16, 16)(n)))
            elif fam == "F8F6F4" and not ts:
                lo_k, lo_mn = (16, 32) if two else (8, 16)
                rules.append((f"{name} N-mode size should be a multiple of {lo_k} between {lo_k} and 256 when B is "
                              f"K major. {name} N-mode size should be a multiple of {lo_mn} between {lo_mn} and 256 "
                              "when B is MN major.", _TRAITS,
                              _n_by_b_major(lo_k, lo_mn)))
            elif ts and not two:
                rules.append((f"{pre} N-mode size should be a multiple of 8 between 8 and 256 for M=64, or a "
                              "multiple of 16 between 16 and 256 for M=128.", _ARCH,
                              lambda m, n, am, bm, a, b, c: m == 64 and _n_range(8, 8)(n)
                              or m == 128 and _n_range(16, 16)(n)))
            elif two:
                lo = 32 if ts or fam == "S8" else 16
                rules.append((f"{pre} N-mode size should be a multiple of {lo} between {lo} and 256.", _ARCH,
                              _n_multiple(lo)))
            else:
                rules.append((f"{pre} N-mode size should be a multiple of 8 between 8 and 256.", _ARCH,
                              lambda m, n, am, bm, a, b, c: _n_range(8, 8)(n)))
            if ts:
                rules.append(a_k(pre))
            if not (fam == "F8F6F4" and not ts):
                rules.append(size_rule(name, kind))
            s8_ss = fam == "S8" and not ts
            out[name] = UmmaOp(name, kind, 2 if two else 1, ts, tuple(rules),
                               has_neg=not s8_ss, fwd_neg=not (s8_ss or name == "SM100_MMA_S8_TS"),
                               has_sat=ts or s8_ss, fwd_sat=ts or s8_ss,
                               templated=not (fam == "F8F6F4" and not ts))
    return out


#: the dense, unscaled UMMA operations modelled, by CuTe name
UMMA_OPS: dict[str, UmmaOp] = _ops()


def umma_instr_desc(op: str, a_type: str, b_type: str, c_type: str, m: int, n: int, a_major: str = "K",
                    b_major: str = "K", a_neg: bool = False, b_neg: bool = False,
                    saturate: bool = False) -> UmmaInstrDescriptor:
    """``MMA_Traits<op<a,b,c,M,N,a_major,b_major,...>>{}.idesc_``: the static_asserts of the
    operation (``cute/arch/mma_sm100_umma.hpp``) and of its traits
    (``cute/atom/mma_traits_sm100.hpp``), in the header's order, each raising
    :class:`UmmaInstrError` with the assert's message; then :func:`make_instr_desc` with the
    parameters the traits forward.  A negate / saturate the operation has no parameter for is
    an error.  Law: the result is ``make_instr_desc`` of the same arguments wherever the traits
    forward them; its ``m``/``n`` are M and N."""
    if not isinstance(op, str) or op not in UMMA_OPS:
        raise LayoutError(f"unknown UMMA operation {op!r}; modelled: {', '.join(UMMA_OPS)}")
    o = UMMA_OPS[op]
    if (a_neg or b_neg) and not o.has_neg:
        raise LayoutError(f"{op} has no a_neg/b_neg template parameters")
    if saturate and not o.has_sat:
        raise LayoutError(f"{op} has no c_sat template parameter")
    if a_major not in UMMA_MAJORS or b_major not in UMMA_MAJORS:
        raise LayoutError(f"{op}: the majors are 'K' or 'MN', got {a_major!r}, {b_major!r}")
    a, b, c = _type_name(a_type), _type_name(b_type), _type_name(c_type)
    for t in (a, b, c):
        if t not in UMMA_TYPE_BITS:
            raise LayoutError(f"{op}: value type {t!r} is not modelled; known: {', '.join(UMMA_TYPE_BITS)}")
    for rule, where, ok in o.rules:
        if not ok(int(m), int(n), a_major, b_major, a, b, c):
            raise UmmaInstrError(op, rule, where)
    return make_instr_desc(a, b, c, m, n, a_major, b_major, a_neg and o.fwd_neg, b_neg and o.fwd_neg,
                           saturate and o.fwd_sat)
