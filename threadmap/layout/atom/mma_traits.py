"""MMA atoms: the thread-value (TV) layouts of CuTe's ``MMA_Traits``.

Each :class:`MMAAtom` encodes one ``cute::MMA_Traits<Op>`` specialisation from the CuTe headers
(``cute/atom/mma_traits*.hpp``; the operation names come from ``cute/arch/mma_sm*.hpp``):

* ``thr_id``   -- ``ThrID``: logical thread id -> thread index in the warp / warpgroup,
* ``layout_a`` -- ``ALayout``: (thread, value) -> column-major index ``m + k*M`` into the M x K tile,
* ``layout_b`` -- ``BLayout``: (thread, value) -> column-major index ``n + k*N`` into the N x K tile,
* ``layout_c`` -- ``CLayout``: (thread, value) -> column-major index ``m + n*M`` into the M x N tile,
* ``shape_mnk`` -- ``Shape_MNK``, and the value types ``ValTypeD/A/B/C`` as short strings.

The layouts are hardware facts; they are written here exactly as the headers write them
(including CuTe's compact strides: a mode of size 1 in a default-stride ``Layout<Shape<...>>``
gets stride 0), so that ``str(layout)`` matches the C++ ``print`` up to the ``_`` of static ints.

SM90 GMMA atoms (``SM90_64xNxK_*_SS`` / ``_RS``) are warpgroup-wide (``ThrID = Layout<_128>``).
Their shared-memory operands are described by descriptors, so ``ALayout``/``BLayout`` for a
shared-memory operand is the *broadcast* layout ``(128,(M,K)):(0,(1,M))``: every thread "holds"
the whole tile (stride-0 thread mode).  A register-sourced A (``_RS``) has a real TV layout.
The GMMA shapes with N not in ``GMMA_STANDARD_N`` (the ``*_ext.hpp`` headers) are only
compiled by CUTLASS when ``CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED`` is defined; see
:attr:`MMAAtom.extended`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from threadmap.errors import AtomError
from threadmap.layout.int_tuple import IntTuple
from threadmap.layout.layout import Layout

__all__ = [
    "GMMA_N_VALUES",
    "GMMA_STANDARD_N",
    "MMA_ATOMS",
    "MMAAtom",
    "SM90_64xNx8_F32TF32TF32_RS_TN",
    "SM90_64xNx8_F32TF32TF32_SS_TN",
    "SM90_64xNx16_F16F16F16_RS",
    "SM90_64xNx16_F16F16F16_SS",
    "SM90_64xNx16_F32BF16BF16_RS",
    "SM90_64xNx16_F32BF16BF16_SS",
    "SM90_64xNx16_F32F16F16_RS",
    "SM90_64xNx16_F32F16F16_SS",
    "get_mma_atom",
    "gmma_64xN_layout_c",
    "gmma_layout_a_rs",
    "gmma_layout_ab_ss",
    "mma_atom_names",
]

#: C++ spelling of each value-type string (for the C++ oracle and for printing).
CXX_VALUE_TYPES: dict[str, str] = {
    "f16": "cute::half_t",
    "bf16": "cute::bfloat16_t",
    "tf32": "cutlass::tfloat32_t",
    "f32": "float",
    "f64": "double",
    "s8": "int8_t",
    "u8": "uint8_t",
    "s16": "int16_t",
    "s32": "int32_t",
}

#: Size in bits of each value type.
VALUE_TYPE_BITS: dict[str, int] = {
    "f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64,
    "s8": 8, "u8": 8, "s16": 16, "s32": 32,
}

_MAJORS = ("K", "MN")


def _size(shape: IntTuple) -> int:
    if isinstance(shape, int):
        return shape
    n = 1
    for s in shape:
        n *= _size(s)
    return n


@dataclass(frozen=True)
class MMAAtom:
    """One ``cute::MMA_Traits<Op>``: the TV layouts of an MMA instruction.

    ``name`` is the C++ operation name (for GMMA: the alias without template arguments,
    e.g. ``SM90_64x128x16_F32F16F16_SS``; the majors are in ``a_major``/``b_major``).
    """

    name: str
    shape_mnk: tuple[int, int, int]
    thr_id: Layout
    layout_a: Layout
    layout_b: Layout
    layout_c: Layout
    val_type_d: str
    val_type_a: str
    val_type_b: str
    val_type_c: str
    #: GMMA only: ``"K"`` or ``"MN"`` (``GMMA::Major``) of the A / B operand; None otherwise.
    a_major: str | None = None
    b_major: str | None = None
    #: GMMA only: where A comes from, ``"smem"`` (``_SS``) or ``"rmem"`` (``_RS``); B is always smem.
    a_source: str = "rmem"
    b_source: str = "rmem"
    #: C++ template arguments that follow ``name`` to form the operation type ("" if none).
    cxx_template_args: str = ""
    #: True when CUTLASS only defines the op with ``CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED``.
    extended: bool = False

    @property
    def cxx_type(self) -> str:
        """The C++ operation type, usable as ``MMA_Traits<cxx_type>`` / ``MMA_Atom<cxx_type>``."""
        return f"{self.name}{self.cxx_template_args}"

    @property
    def m(self) -> int:
        return self.shape_mnk[0]

    @property
    def n(self) -> int:
        return self.shape_mnk[1]

    @property
    def k(self) -> int:
        return self.shape_mnk[2]

    @property
    def is_gmma(self) -> bool:
        """Whether this is an SM90 warpgroup MMA (``wgmma``)."""
        return self.a_major is not None

    @property
    def num_threads(self) -> int:
        """``size(ThrID)``: threads that cooperate in one instruction."""
        return _size(self.thr_id.shape)

    def tile_shape(self, operand: str) -> tuple[int, int]:
        """The (rows, cols) of the tile the operand's layout indexes: A (M,K), B (N,K), C (M,N)."""
        m, n, k = self.shape_mnk
        try:
            return {"A": (m, k), "B": (n, k), "C": (m, n), "D": (m, n)}[operand.upper()]
        except KeyError:
            raise AtomError(f"operand must be one of A, B, C, D, got {operand!r}") from None

    def layout(self, operand: str) -> Layout:
        """The TV layout of operand ``"A"``, ``"B"`` or ``"C"`` (``"D"`` is ``C``)."""
        op = operand.upper()
        if op == "A":
            return self.layout_a
        if op == "B":
            return self.layout_b
        if op in ("C", "D"):
            return self.layout_c
        raise AtomError(f"operand must be one of A, B, C, D, got {operand!r}")


def _L(shape: IntTuple, stride: IntTuple) -> Layout:
    return Layout(shape, stride)


# ----------------------------------------------------------------------------------------------
# Common layouts, named as in the headers
# ----------------------------------------------------------------------------------------------

# UniversalFMA / SM61 (mma_traits.hpp, mma_traits_sm61.hpp) use default (compact col-major)
# strides, where CuTe gives size-1 modes stride 0.
def _thr(n: int) -> Layout:
    """``Layout<Int<n>>``: stride 1, or 0 when n == 1 (CuTe's compact stride)."""
    return _L(n, 0 if n == 1 else 1)


def _compact_1xk(k: int) -> Layout:
    """``Layout<Shape<_1,Int<k>>>`` = ``(1,k):(0,1)`` (``(1,1):(0,0)`` when k == 1)."""
    return _L((1, k), (0, 0 if k == 1 else 1))


# SM70 (mma_traits_sm70.hpp)
SM70_QUADPAIR = ((4, 2), (1, 16))
SM70_8x4_ROW = ((8, 4), (1, 8))
SM70_8x4_COL = (((4, 2), 4), ((8, 4), 1))
SM70_8x8_16B = ((8, 8), (1, 8))
SM70_8x8_32B = (((2, 2, 2), (2, 2, 2)), ((1, 16, 4), (8, 2, 32)))

# SM80 (mma_traits_sm80.hpp)
SM80_8x4 = (((4, 8), 1), ((8, 1), 0))                      # (T32,V1) -> (M8,N4)
SM80_8x8_ROW = (((4, 8), 2), ((16, 1), 8))                 # (T32,V2) -> (M8,N8)
SM80_8x16_ROW = (((4, 8), 4), ((32, 1), 8))                # (T32,V4) -> (M8,N16)
SM80_16x8_ROW = (((4, 8), (2, 2)), ((32, 1), (16, 8)))     # (T32,V4) -> (M16,N8)

#: GMMA N values defined without ``CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED`` (mma_traits_sm90_gmma.hpp).
GMMA_STANDARD_N: tuple[int, ...] = (8, 16, 32, 64, 96, 128, 192, 256)
#: All GMMA N values of the dense 16-bit and tf32 atoms (standard + ``*_ext.hpp``).
GMMA_N_VALUES: tuple[int, ...] = tuple(range(8, 257, 8))


def _check_gmma_n(n: int) -> None:
    if not isinstance(n, int) or n not in GMMA_N_VALUES:
        raise AtomError(f"GMMA N must be a multiple of 8 in [8, 256], got {n!r}")


def gmma_64xN_layout_c(n: int) -> Layout:
    """``GMMA::CLayout_64xN<N>``: the accumulator TV layout (T128, V N/2) -> (M64, N).

    ``((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))``.
    """
    _check_gmma_n(n)
    return _L(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))


def gmma_layout_ab_ss(mn: int, k: int) -> Layout:
    """``GMMA::ABLayout<MN,K>``: shared-memory operand, broadcast to all 128 threads.

    ``(128,(MN,K)):(0,(1,MN))`` -- the thread mode has stride 0 (replication).
    """
    return _L((128, (mn, k)), (0, (1, mn)))


def gmma_layout_a_rs(value_bits: int) -> Layout:
    """``GMMA::ALayout_64x{8,16,32}``: register-sourced A for 32-, 16- or 8-bit dense values."""
    if value_bits == 32:   # ALayout_64x8
        return _L(((4, 8, 4), (2, 2)), ((64, 1, 16), (8, 256)))
    if value_bits == 16:   # ALayout_64x16
        return _L(((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (64, 8, 512)))
    if value_bits == 8:    # ALayout_64x32
        return _L(((4, 8, 4), (4, 2, 2)), ((256, 1, 16), (64, 8, 1024)))
    raise AtomError(f"no GMMA register A layout for {value_bits}-bit values")


# ----------------------------------------------------------------------------------------------
# Atom construction
# ----------------------------------------------------------------------------------------------

def _atom(
    name: str,
    mnk: tuple[int, int, int],
    thr: Layout,
    a: tuple[IntTuple, IntTuple] | Layout,
    b: tuple[IntTuple, IntTuple] | Layout,
    c: tuple[IntTuple, IntTuple] | Layout,
    types: tuple[str, str, str, str],
    **kw: object,
) -> MMAAtom:
    def lay(x: tuple[IntTuple, IntTuple] | Layout) -> Layout:
        return x if isinstance(x, Layout) else _L(*x)

    d_t, a_t, b_t, c_t = types
    return MMAAtom(name, mnk, thr, lay(a), lay(b), lay(c), d_t, a_t, b_t, c_t, **kw)  # type: ignore[arg-type]


def _gmma(
    family: str,
    n: int,
    k: int,
    source: str,
    types: tuple[str, str, str, str],
    a_major: str,
    b_major: str,
    *,
    k_major_only: bool = False,
) -> MMAAtom:
    _check_gmma_n(n)
    for which, major in (("a_major", a_major), ("b_major", b_major)):
        if major not in _MAJORS:
            raise AtomError(f"{which} must be 'K' or 'MN' (GMMA::Major), got {major!r}")
    if source == "RS" and a_major != "K":
        raise AtomError("Register source operand A must have K major layout (GMMA _RS atoms).")
    if k_major_only and (a_major, b_major) != ("K", "K"):
        raise AtomError(f"{family} GMMA atoms only exist K-major for A and B (the _TN ops)")
    suffix = "_TN" if k_major_only else ""
    name = f"SM90_64x{n}x{k}_{family}_{source}{suffix}"
    if k_major_only:
        targs = "<>"
    else:
        targs = f"<GMMA::Major::{a_major},GMMA::Major::{b_major}>"
    layout_a = gmma_layout_ab_ss(64, k) if source == "SS" else gmma_layout_a_rs(VALUE_TYPE_BITS[types[1]])
    return MMAAtom(
        name=name,
        shape_mnk=(64, n, k),
        thr_id=_thr(128),
        layout_a=layout_a,
        layout_b=gmma_layout_ab_ss(n, k),
        layout_c=gmma_64xN_layout_c(n),
        val_type_d=types[0], val_type_a=types[1], val_type_b=types[2], val_type_c=types[3],
        a_major=a_major,
        b_major=b_major,
        a_source="smem" if source == "SS" else "rmem",
        b_source="smem",
        cxx_template_args=targs,
        extended=n not in GMMA_STANDARD_N,
    )


def SM90_64xNx16_F16F16F16_SS(n: int, a_major: str = "K", b_major: str = "K") -> MMAAtom:
    """``SM90_64x{N}x16_F16F16F16_SS<a_major, b_major>``: f16 = f16 * f16 + f16, A and B in smem."""
    return _gmma("F16F16F16", n, 16, "SS", ("f16", "f16", "f16", "f16"), a_major, b_major)


def SM90_64xNx16_F16F16F16_RS(n: int, a_major: str = "K", b_major: str = "K") -> MMAAtom:
    """``SM90_64x{N}x16_F16F16F16_RS<a_major, b_major>``: A in registers (K-major), B in smem."""
    return _gmma("F16F16F16", n, 16, "RS", ("f16", "f16", "f16", "f16"), a_major, b_major)


def SM90_64xNx16_F32F16F16_SS(n: int, a_major: str = "K", b_major: str = "K") -> MMAAtom:
    """``SM90_64x{N}x16_F32F16F16_SS<a_major, b_major>``: f32 = f16 * f16 + f32, A and B in smem."""
    return _gmma("F32F16F16", n, 16, "SS", ("f32", "f16", "f16", "f32"), a_major, b_major)


def SM90_64xNx16_F32F16F16_RS(n: int, a_major: str = "K", b_major: str = "K") -> MMAAtom:
    """``SM90_64x{N}x16_F32F16F16_RS<a_major, b_major>``: A in registers (K-major), B in smem."""
    return _gmma("F32F16F16", n, 16, "RS", ("f32", "f16", "f16", "f32"), a_major, b_major)


def SM90_64xNx16_F32BF16BF16_SS(n: int, a_major: str = "K", b_major: str = "K") -> MMAAtom:
    """``SM90_64x{N}x16_F32BF16BF16_SS<a_major, b_major>``: f32 = bf16 * bf16 + f32, A and B in smem."""
    return _gmma("F32BF16BF16", n, 16, "SS", ("f32", "bf16", "bf16", "f32"), a_major, b_major)


def SM90_64xNx16_F32BF16BF16_RS(n: int, a_major: str = "K", b_major: str = "K") -> MMAAtom:
    """``SM90_64x{N}x16_F32BF16BF16_RS<a_major, b_major>``: A in registers (K-major), B in smem."""
    return _gmma("F32BF16BF16", n, 16, "RS", ("f32", "bf16", "bf16", "f32"), a_major, b_major)


def SM90_64xNx8_F32TF32TF32_SS_TN(n: int) -> MMAAtom:
    """``SM90_64x{N}x8_F32TF32TF32_SS_TN<>``: f32 = tf32 * tf32 + f32, K-major A and B in smem."""
    return _gmma("F32TF32TF32", n, 8, "SS", ("f32", "tf32", "tf32", "f32"), "K", "K", k_major_only=True)


def SM90_64xNx8_F32TF32TF32_RS_TN(n: int) -> MMAAtom:
    """``SM90_64x{N}x8_F32TF32TF32_RS_TN<>``: A in registers, K-major B in smem."""
    return _gmma("F32TF32TF32", n, 8, "RS", ("f32", "tf32", "tf32", "f32"), "K", "K", k_major_only=True)


def _build_registry() -> dict[str, MMAAtom]:
    atoms: list[MMAAtom] = []
    t1, t32 = _thr(1), _thr(32)

    # --- UniversalFMA (mma_traits.hpp), instantiated for float ------------------------------
    fma = _atom("UniversalFMA", (1, 1, 1), t1, _compact_1xk(1), _compact_1xk(1), _compact_1xk(1),
                ("f32", "f32", "f32", "f32"), cxx_template_args="<float,float,float,float>")
    atoms.append(fma)

    # --- SM61 (mma_traits_sm61.hpp) ----------------------------------------------------------
    atoms.append(_atom("SM61_DP4A", (1, 1, 4), t1, _compact_1xk(4), _compact_1xk(4), _compact_1xk(1),
                       ("s32", "s8", "s8", "s32")))
    atoms.append(_atom("SM61_DP2A", (1, 1, 2), t1, _compact_1xk(2), _compact_1xk(2), _compact_1xk(1),
                       ("s32", "s16", "s16", "s32")))

    # --- SM70 quadpair HMMA (mma_traits_sm70.hpp) ---------------------------------------------
    quadpair = _L(*SM70_QUADPAIR)
    # BLAS-style suffix <A><B>: A "T" (K-major) is the Row layout, A "N" the Col layout; for B
    # it is the other way round (B "N" is K-major: Row), as the header pairs them.
    sm70_a = {"T": SM70_8x4_ROW, "N": SM70_8x4_COL}
    sm70_b = {"N": SM70_8x4_ROW, "T": SM70_8x4_COL}
    for acc, (types, c_layout) in {
        "F16F16F16F16": (("f16", "f16", "f16", "f16"), SM70_8x8_16B),
        "F32F16F16F32": (("f32", "f16", "f16", "f32"), SM70_8x8_32B),
    }.items():
        for ab in ("TN", "NT", "NN", "TT"):
            atoms.append(_atom(f"SM70_8x8x4_{acc}_{ab}", (8, 8, 4), quadpair,
                               sm70_a[ab[0]], sm70_b[ab[1]], c_layout, types))

    # --- SM75 (mma_traits_sm75.hpp) ------------------------------------------------------------
    atoms.append(_atom("SM75_16x8x8_F32F16F16F32_TN", (16, 8, 8), t32,
                       (((4, 8), (2, 2)), ((32, 1), (16, 8))),
                       (((4, 8), 2), ((16, 1), 8)),
                       (((4, 8), (2, 2)), ((32, 1), (16, 8))),
                       ("f32", "f16", "f16", "f32")))
    atoms.append(_atom("SM75_8x8x16_S32S8S8S32_TN", (8, 8, 16), t32,
                       (((4, 8), 4), ((32, 1), 8)),
                       (((4, 8), 4), ((32, 1), 8)),
                       (((4, 8), 2), ((16, 1), 8)),
                       ("s32", "s8", "s8", "s32")))

    # --- SM80 (mma_traits_sm80.hpp) ------------------------------------------------------------
    a_16x8x16 = (((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))
    b_16x8x16 = (((4, 8), (2, 2)), ((16, 1), (8, 64)))
    for types_name, types in (
        ("F16F16F16F16", ("f16", "f16", "f16", "f16")),
        ("F32F16F16F32", ("f32", "f16", "f16", "f32")),
        ("F32BF16BF16F32", ("f32", "bf16", "bf16", "f32")),
    ):
        atoms.append(_atom(f"SM80_16x8x8_{types_name}_TN", (16, 8, 8), t32,
                           SM80_16x8_ROW, SM80_8x8_ROW, SM80_16x8_ROW, types))
        atoms.append(_atom(f"SM80_16x8x16_{types_name}_TN", (16, 8, 16), t32,
                           a_16x8x16, b_16x8x16, SM80_16x8_ROW, types))
    tf32 = ("f32", "tf32", "tf32", "f32")
    atoms.append(_atom("SM80_16x8x4_F32TF32TF32F32_TN", (16, 8, 4), t32,
                       (((4, 8), 2), ((16, 1), 8)), SM80_8x4, SM80_16x8_ROW, tf32))
    atoms.append(_atom("SM80_16x8x8_F32TF32TF32F32_TN", (16, 8, 8), t32,
                       (((4, 8), (2, 2)), ((16, 1), (8, 64))),
                       (((4, 8), 2), ((8, 1), 32)), SM80_16x8_ROW, tf32))
    atoms.append(_atom("SM80_8x8x4_F64F64F64F64_TN", (8, 8, 4), t32,
                       SM80_8x4, SM80_8x4, SM80_8x8_ROW, ("f64", "f64", "f64", "f64")))
    s8 = ("s32", "s8", "s8", "s32")
    atoms.append(_atom("SM80_8x8x16_S32S8S8S32_TN", (8, 8, 16), t32,
                       SM80_8x16_ROW, SM80_8x16_ROW, SM80_8x8_ROW, s8))
    atoms.append(_atom("SM80_16x8x16_S32S8S8S32_TN", (16, 8, 16), t32,
                       (((4, 8), (4, 2)), ((64, 1), (16, 8))), SM80_8x16_ROW, SM80_16x8_ROW, s8))
    atoms.append(_atom("SM80_16x8x32_S32S8S8S32_TN", (16, 8, 32), t32,
                       (((4, 8), (4, 2, 2)), ((64, 1), (16, 8, 256))),
                       (((4, 8), (4, 2)), ((32, 1), (8, 128))), SM80_16x8_ROW, s8))

    # --- SM90 DMMA (mma_traits_sm90.hpp) -------------------------------------------------------
    f64 = ("f64", "f64", "f64", "f64")
    atoms.append(_atom("SM90_16x8x4_F64F64F64F64_TN", (16, 8, 4), t32,
                       (((4, 8), 2), ((16, 1), 8)), (((4, 8), 1), ((8, 1), 0)), SM80_16x8_ROW, f64))
    atoms.append(_atom("SM90_16x8x8_F64F64F64F64_TN", (16, 8, 8), t32,
                       (((4, 8), (2, 2)), ((16, 1), (8, 64))), (((4, 8), 2), ((8, 1), 32)),
                       SM80_16x8_ROW, f64))
    atoms.append(_atom("SM90_16x8x16_F64F64F64F64_TN", (16, 8, 16), t32,
                       (((4, 8), (2, 4)), ((16, 1), (8, 64))), (((4, 8), 4), ((8, 1), 32)),
                       SM80_16x8_ROW, f64))

    # --- SM90 GMMA (mma_traits_sm90_gmma.hpp, mma_traits_sm90_gmma_ext.hpp), K-major defaults ---
    for factory in (
        SM90_64xNx16_F16F16F16_SS, SM90_64xNx16_F16F16F16_RS,
        SM90_64xNx16_F32F16F16_SS, SM90_64xNx16_F32F16F16_RS,
        SM90_64xNx16_F32BF16BF16_SS, SM90_64xNx16_F32BF16BF16_RS,
        SM90_64xNx8_F32TF32TF32_SS_TN, SM90_64xNx8_F32TF32TF32_RS_TN,
    ):
        for n in GMMA_N_VALUES:
            atoms.append(factory(n))

    registry: dict[str, MMAAtom] = {}
    for atom in atoms:
        if atom.name in registry:  # pragma: no cover - construction bug
            raise AssertionError(f"duplicate MMA atom {atom.name}")
        registry[atom.name] = atom
    return registry


#: Every atom by C++ operation name (GMMA atoms with K-major A and B).
MMA_ATOMS: dict[str, MMAAtom] = _build_registry()


def mma_atom_names() -> list[str]:
    """The registered atom names, sorted."""
    return sorted(MMA_ATOMS)


_GMMA_NAME = re.compile(r"SM90_64x(\d+)x(\d+)_(F16F16F16|F32F16F16|F32BF16BF16|F32TF32TF32)_(SS|RS)(_TN)?$")
_GMMA_FACTORIES: dict[tuple[str, str], Any] = {
    ("F16F16F16", "SS"): SM90_64xNx16_F16F16F16_SS, ("F16F16F16", "RS"): SM90_64xNx16_F16F16F16_RS,
    ("F32F16F16", "SS"): SM90_64xNx16_F32F16F16_SS, ("F32F16F16", "RS"): SM90_64xNx16_F32F16F16_RS,
    ("F32BF16BF16", "SS"): SM90_64xNx16_F32BF16BF16_SS,
    ("F32BF16BF16", "RS"): SM90_64xNx16_F32BF16BF16_RS,
}
_QUALIFIERS = ("cute::", "SM90::GMMA::", "GMMA::", "SM90::", "cutlass::")


def _strip_qualifiers(text: str) -> str:
    for q in _QUALIFIERS:
        text = text.replace(q, "")
    return text


def _unknown(name: str) -> AtomError:
    non_gmma = [n for n in mma_atom_names() if not n.startswith("SM90_64x")]
    return AtomError(
        f"unknown MMA atom {name!r}. Known atoms: {', '.join(non_gmma)}, and the SM90 GMMA "
        "atoms SM90_64x{N}x16_{F16F16F16,F32F16F16,F32BF16BF16}_{SS,RS}<GMMA::Major::{K,MN},"
        "GMMA::Major::{K,MN}> and SM90_64x{N}x8_F32TF32TF32_{SS,RS}_TN for N in 8, 16, ..., 256")


def get_mma_atom(name: str) -> MMAAtom:
    """The atom called ``name``: the C++ op name (``"SM80_16x8x16_F32F16F16F32_TN"``), also as
    pasted from C++ with template arguments, qualifiers and spaces
    (``"UniversalFMA<float,float,float,float>"``,
    ``"cute::SM90_64x128x16_F32F16F16_SS<GMMA::Major::MN, GMMA::Major::K>"``, or the type it
    aliases, ``"cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<...>"``).
    A GMMA atom's template arguments are its A and B majors (K-major when omitted), and
    optionally the scales ``GMMA::ScaleIn::{One,Neg}`` the compiler prints after them (they
    negate an operand's values and leave its layouts as they are).

    Raises :class:`~threadmap.errors.AtomError` listing the known names if there is none.
    """
    if not isinstance(name, str):
        raise AtomError(f"an MMA atom is named by a string, got {name!r}")
    text = _strip_qualifiers("".join(name.split()))
    if text.startswith("MMA_64x"):  # SM90::GMMA::MMA_64x... is what cute::SM90_64x... names
        text = "SM90_" + text[4:]
    base, args = text, None
    if "<" in text:
        if not text.endswith(">"):
            raise _unknown(name)
        base, args = text[:-1].split("<", 1)
    atom = MMA_ATOMS.get(base)
    if atom is None:
        raise _unknown(name)
    if args is None:
        return atom
    m = _GMMA_NAME.match(base)
    if m and not m.group(5):
        majors = [a.removeprefix("Major::") for a in args.split(",")] if args else []
        if len(majors) == 4 and all(x in ("ScaleIn::One", "ScaleIn::Neg") for x in majors[2:]):
            majors = majors[:2]
        if len(majors) != 2 or any(x not in _MAJORS for x in majors):
            raise AtomError(f"{name!r}: a GMMA atom takes <GMMA::Major::{{K,MN}}, "
                            "GMMA::Major::{K,MN}>")
        return _GMMA_FACTORIES[(m.group(3), m.group(4))](int(m.group(1)), majors[0], majors[1])
    if base == "UniversalFMA" and args:
        # UniversalFMA<D, A = D, B = A, C = D>: compilers print it without its defaults
        d, *rest = args.split(",")
        a = rest[0] if rest else d
        b = rest[1] if len(rest) > 1 else a
        c = rest[2] if len(rest) > 2 else d
        args = ",".join((d, a, b, c))
    if "<" + args + ">" != "".join(atom.cxx_template_args.split()) and not (m and args == ""):
        raise AtomError(f"{name!r}: threadmap has {base} only as {atom.cxx_type}")
    return atom
