"""Copy operations: CuTe's ``Copy_Traits<Op>`` (``cute/atom/copy_traits*.hpp``) for the
universal copies, ``cp.async`` (SM80), LDSM/STSM/MOVM (SM75/SM90), and C++ type widths
(``sizeof_bits``).

A :class:`CopyOp` holds ``ThrID`` and the bit-level TV layouts ``SrcLayout``/``DstLayout``/
``RefLayout`` exactly as the headers write them.  :func:`get_copy_op` resolves the C++
spelling a user pastes (``cute::UniversalCopy<cute::uint128_t>``,
``SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>``, ``SM75_U32x4_LDSM_N``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from threadmap.errors import AtomError
from threadmap.layout.atom.tile_ops import make_compact_layout
from threadmap.layout.layout import Layout

__all__ = [
    "CXX_TYPE_BITS", "CopyOp", "UniversalCopy", "SM80_CP_ASYNC_CACHEALWAYS",
    "SM80_CP_ASYNC_CACHEGLOBAL", "SM80_CP_ASYNC_CACHEALWAYS_ZFILL",
    "SM80_CP_ASYNC_CACHEGLOBAL_ZFILL", "AutoVectorizingCopyWithAssumedAlignment",
    "AutoVectorizingCopy", "DefaultCopy", "COPY_OPS", "get_copy_op", "type_bits",
]

# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------

#: ``sizeof_bits`` of the C++ value types a Copy_Atom is commonly instantiated with.
CXX_TYPE_BITS: dict[str, int] = {
    "uint1_t": 1, "int4_t": 4, "uint4_t": 4,
    "int8_t": 8, "uint8_t": 8, "char": 8, "float_e4m3_t": 8, "float_e5m2_t": 8,
    "int16_t": 16, "uint16_t": 16, "half_t": 16, "cute::half_t": 16, "bfloat16_t": 16,
    "cute::bfloat16_t": 16, "cutlass::half_t": 16, "cutlass::bfloat16_t": 16,
    "int32_t": 32, "uint32_t": 32, "int": 32, "float": 32, "tfloat32_t": 32,
    "cutlass::tfloat32_t": 32,
    "int64_t": 64, "uint64_t": 64, "double": 64,
    "uint128_t": 128, "cute::uint128_t": 128, "cutlass::uint128_t": 128,
}

#: threadmap's short value-type names (``mma_atoms``) -> C++ names.
_SHORT_TYPES: dict[str, str] = {
    "f16": "half_t", "bf16": "bfloat16_t", "tf32": "tfloat32_t", "f32": "float", "f64": "double",
    "s8": "int8_t", "u8": "uint8_t", "s16": "int16_t", "u16": "uint16_t", "s32": "int32_t",
    "u32": "uint32_t", "s64": "int64_t", "u64": "uint64_t",
}

_UINT_BY_BITS = {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t", 128: "uint128_t"}


def type_bits(t: str | int) -> int:
    """``sizeof_bits<T>`` of a C++ type name (or a short name such as ``"f16"``), or ``t`` itself
    when it is already a bit count."""
    if isinstance(t, bool) or not isinstance(t, (int, str)):
        raise AtomError(f"a value type is a C++ type name or a bit count, got {t!r}")
    if isinstance(t, int):
        if not 0 < t <= 1024:
            raise AtomError(f"a value type must have 1..1024 bits, got {t}")
        return t
    t = t.replace(" ", "").replace("cute::", "")
    name = _SHORT_TYPES.get(t, t)
    try:
        return CXX_TYPE_BITS[name]
    except KeyError:
        raise AtomError(f"unknown value type {t!r}; known: {', '.join(sorted(CXX_TYPE_BITS))} "
                        "or a bit count") from None


def cxx_type_name(t: str | int) -> str:
    if isinstance(t, int):
        return _UINT_BY_BITS.get(t, f"uint_bit_t<{t}>")
    return _SHORT_TYPES.get(t, t)


# ------------------------------------------------------------------------------------------
# copy operations and atoms
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CopyOp:
    """A ``cute::Copy_Traits<Op>``: ``ThrID`` and the bit-level TV layouts.

    ``src_bits``/``dst_bits``/``ref_bits`` are ``SrcLayout``/``DstLayout``/``RefLayout``:
    (logical thread, bit) -> bit, exactly as the header writes them.
    """

    name: str
    thr_id: Layout
    src_bits: Layout
    dst_bits: Layout
    ref_bits: Layout
    #: Widths of the source / destination registers the instruction moves (``SRegisters``).
    src_reg_bits: int = 0
    dst_reg_bits: int = 0


def _universal_bits(bits: int) -> Layout:
    return make_compact_layout((1, bits))


def UniversalCopy(s: str | int, d: str | int | None = None) -> CopyOp:
    """``Copy_Traits<UniversalCopy<S,D>>``: one thread, ``SrcLayout = (1, sizeof_bits<S>)``."""
    d = s if d is None else d
    sb, db = type_bits(s), type_bits(d)
    if sb < 8 or db < 8:
        raise AtomError("UniversalCopy requires sizeof_bits_v<S> >= 8 and sizeof_bits_v<D> >= 8")
    name = f"UniversalCopy<{cxx_type_name(s)}>" if s == d else f"UniversalCopy<{cxx_type_name(s)},{cxx_type_name(d)}>"
    return CopyOp(name, make_compact_layout(1), _universal_bits(sb), _universal_bits(db),
                  _universal_bits(sb), sb, db)


def _cp_async(base: str, s: str | int, d: str | int | None, sizes: tuple[int, ...]) -> CopyOp:
    d = s if d is None else d
    sb, db = type_bits(s), type_bits(d)
    if sb != db:
        raise AtomError("cp.async requires sizeof(src_value_type) == sizeof(dst_value_type)")
    if sb not in sizes:
        raise AtomError(f"{base}: cp.async sizeof(TS) = {sb // 8} bytes is not supported "
                        f"(allowed: {', '.join(str(b // 8) for b in sizes)})")
    name = f"{base}<{cxx_type_name(s)}>" if s == d else f"{base}<{cxx_type_name(s)},{cxx_type_name(d)}>"
    return CopyOp(name, make_compact_layout(1), _universal_bits(sb), _universal_bits(db),
                  _universal_bits(sb), sb, db)


def SM80_CP_ASYNC_CACHEALWAYS(s: str | int, d: str | int | None = None) -> CopyOp:
    """``SM80_CP_ASYNC_CACHEALWAYS<TS,TD>`` (``cp.async.ca``, 4, 8 or 16 bytes)."""
    return _cp_async("SM80_CP_ASYNC_CACHEALWAYS", s, d, (32, 64, 128))


def SM80_CP_ASYNC_CACHEGLOBAL(s: str | int, d: str | int | None = None) -> CopyOp:
    """``SM80_CP_ASYNC_CACHEGLOBAL<TS,TD>`` (``cp.async.cg``, 16 bytes only)."""
    return _cp_async("SM80_CP_ASYNC_CACHEGLOBAL", s, d, (128,))


def SM80_CP_ASYNC_CACHEALWAYS_ZFILL(s: str | int, d: str | int | None = None) -> CopyOp:
    """``SM80_CP_ASYNC_CACHEALWAYS_ZFILL<TS,TD>`` (zero-fill when the predicate is false)."""
    return _cp_async("SM80_CP_ASYNC_CACHEALWAYS_ZFILL", s, d, (32, 64, 128))


def SM80_CP_ASYNC_CACHEGLOBAL_ZFILL(s: str | int, d: str | int | None = None) -> CopyOp:
    """``SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<TS,TD>``."""
    return _cp_async("SM80_CP_ASYNC_CACHEGLOBAL_ZFILL", s, d, (128,))


def AutoVectorizingCopyWithAssumedAlignment(max_vec_bits: int = 128) -> CopyOp:
    """``Copy_Traits<AutoVectorizingCopyWithAssumedAlignment<B>>``: one thread and the bit
    layouts ``(1,1):(0,0)``, so every value type gives one value per atom."""
    if max_vec_bits not in (8, 16, 32, 64, 128):
        raise AtomError("Expected MaxVecBits to be 8 or 16 or 32 or 64 or 128 for alignment and performance.")
    z = Layout((1, 1), (0, 0))
    return CopyOp(f"AutoVectorizingCopyWithAssumedAlignment<{max_vec_bits}>", make_compact_layout(1),
                  z, z, z, max_vec_bits, max_vec_bits)


def AutoVectorizingCopy() -> CopyOp:
    """``AutoVectorizingCopy`` = ``AutoVectorizingCopyWithAssumedAlignment<128>``."""
    return AutoVectorizingCopyWithAssumedAlignment(128)


def DefaultCopy() -> CopyOp:
    """``DefaultCopy`` = ``AutoVectorizingCopyWithAssumedAlignment<8>``."""
    return AutoVectorizingCopyWithAssumedAlignment(8)


def _warp_op(name: str, src: Layout, dst: Layout, ref: Layout, sreg: int, dreg: int) -> CopyOp:
    return CopyOp(name, Layout(32, 1), src, dst, ref, sreg, dreg)


def _ldsm_ops() -> dict[str, CopyOp]:
    """``copy_traits_sm75.hpp`` (LDSM, MOVM) and ``copy_traits_sm90.hpp`` (STSM)."""
    ld = {
        "SM75_U32x1_LDSM_N": (Layout(((8, 4), 128), ((128, 0), 1)), Layout((32, 32), (32, 1))),
        "SM75_U32x2_LDSM_N": (Layout(((16, 2), 128), ((128, 0), 1)), Layout((32, (32, 2)), (32, (1, 1024)))),
        "SM75_U32x4_LDSM_N": (Layout((32, 128), (128, 1)), Layout((32, (32, 4)), (32, (1, 1024)))),
        "SM75_U16x2_LDSM_T": (Layout(((8, 4), 128), ((128, 0), 1)),
                              Layout(((4, 8), (16, 2)), ((256, 16), (1, 128)))),
        "SM75_U16x4_LDSM_T": (Layout(((16, 2), 128), ((128, 0), 1)),
                              Layout(((4, 8), (16, 2, 2)), ((256, 16), (1, 128, 1024)))),
        "SM75_U16x8_LDSM_T": (Layout((32, 128), (128, 1)),
                              Layout(((4, 8), (16, 2, 4)), ((256, 16), (1, 128, 1024)))),
    }
    ops: dict[str, CopyOp] = {}
    for name, (src, dst) in ld.items():
        n = {"U32x1": 1, "U32x2": 2, "U32x4": 4, "U16x2": 1, "U16x4": 2, "U16x8": 4}[name[5:10]]
        ops[name] = _warp_op(name, src, dst, dst, 128, 32 * n)
        st = name.replace("SM75", "SM90").replace("LDSM", "STSM")
        ops[st] = _warp_op(st, dst, src, dst, 32 * n, 128)
    movm = Layout((32, 32), (32, 1))
    ops["SM75_U32x1_MOVM_T"] = _warp_op("SM75_U32x1_MOVM_T", movm, movm, movm, 32, 32)
    return ops


#: Fixed (non-templated) copy operations by C++ name.
COPY_OPS: dict[str, CopyOp] = _ldsm_ops()


def get_copy_op(name: str) -> CopyOp:
    """A copy operation by C++ spelling: ``"UniversalCopy<uint128_t>"``,
    ``"SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>"``, ``"AutoVectorizingCopy"``, ``"DefaultCopy"``,
    ``"AutoVectorizingCopyWithAssumedAlignment<64>"``, ``"SM75_U32x4_LDSM_N"``, ..."""
    if not isinstance(name, str):
        raise AtomError(f"a copy operation is named by a string, got {name!r}")
    name = "".join(name.split()).replace("cute::", "")
    if name in COPY_OPS:
        return COPY_OPS[name]
    if name == "AutoVectorizingCopy":
        return AutoVectorizingCopy()
    if name == "DefaultCopy":
        return DefaultCopy()
    if "<" in name and name.endswith(">"):
        base, args_s = name[:-1].split("<", 1)
        args: list[Any] = [a for a in args_s.split(",") if a]
        factories = {
            "UniversalCopy": UniversalCopy,
            "SM80_CP_ASYNC_CACHEALWAYS": SM80_CP_ASYNC_CACHEALWAYS,
            "SM80_CP_ASYNC_CACHEGLOBAL": SM80_CP_ASYNC_CACHEGLOBAL,
            "SM80_CP_ASYNC_CACHEALWAYS_ZFILL": SM80_CP_ASYNC_CACHEALWAYS_ZFILL,
            "SM80_CP_ASYNC_CACHEGLOBAL_ZFILL": SM80_CP_ASYNC_CACHEGLOBAL_ZFILL,
        }
        if base == "AutoVectorizingCopyWithAssumedAlignment" and len(args) == 1 and args[0].isdigit():
            return AutoVectorizingCopyWithAssumedAlignment(int(args[0]))
        if base in factories and 1 <= len(args) <= 2:
            return factories[base](*args)
    raise AtomError(f"unknown copy operation {name!r}; known: UniversalCopy<T>, "
                    "SM80_CP_ASYNC_{CACHEALWAYS,CACHEGLOBAL}[_ZFILL]<T>, AutoVectorizingCopy, "
                    f"DefaultCopy, AutoVectorizingCopyWithAssumedAlignment<B>, {', '.join(sorted(COPY_OPS))}")
