"""CuTe swizzles and composed layouts: ``cute/swizzle.hpp``, ``cute/layout_composed.hpp``,
``cute/swizzle_layout.hpp`` and the GMMA shared-memory atoms of
``cute/atom/mma_traits_sm90_gmma.hpp``.

* :class:`Swizzle` ``Sw<B,M,S>`` is the functor ``x ^ ((x & yyy_msk) >> S)`` (a negative
  ``S`` shifts left).  It is a bijection of the non-negative integers onto themselves, an
  involution (``sw(sw(x)) == x``), and it maps every range ``[0, 2^k)`` with
  ``k >= B + M + |S|`` onto itself.
* :class:`ComposedLayout` ``A o O o B`` is the function ``c -> A(O + B(c))``; its domain
  (shape, size, rank, tiling, partitioning) is that of ``B``.  Most operations act on
  ``layout_b`` only; slicing a swizzled layout follows the header's swizzle-specific
  algorithm (it may *decay* to a plain Layout plus an offset).

All integers are static in CuTe's sense: where the header distinguishes ``Int<0>`` from a
dynamic 0, threadmap takes the static branch (an ``int`` offset of 0 *is* ``Int<0>``).  The
only exception is :class:`SmemPtrFlag` (``smem_ptr_flag_bits<B>``), an offset that behaves
as 0 but is a distinct type, exactly as in C++.

Evaluation uses only ``& ^ >> <<`` (and ``+`` for the offset), so one implementation serves
Python ints, numpy arrays and :class:`threadmap.layout.backend.Sym` bit-vectors.
"""

from __future__ import annotations

from math import gcd
from typing import Any

import numpy as np

from threadmap.errors import LayoutError, SwizzleError
from threadmap.layout import layout as L
from threadmap.layout.backend import Sym
from threadmap.layout.int_tuple import Underscore, flatten_to_tuple, idx2crd
from threadmap.layout.layout import Layout
from threadmap.layout.table import fast_table

__all__ = [
    "Swizzle", "ComposedLayout", "SmemPtrFlag", "make_swizzle", "composition", "composition3",
    "make_composed_layout", "make_layout_from_swizzle", "swizzled_logical_product",
    "fast_table", "gmma_layout_atom", "gmma_layout_atom_bits", "GMMA_LAYOUT_ATOMS",
    "GMMA_ELEMENT_BITS",
]

_INT_BITS = 31  # C++ computes the masks as `int` constants


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _popcount(x: int) -> int:
    return bin(x).count("1")


def _countr_zero(x: int) -> int:
    """C++20 ``countr_zero`` on ``uint32_t`` (32 for 0)."""
    return 32 if x == 0 else (x & -x).bit_length() - 1


def _log2_pow2(n: int, what: str) -> int:
    if not _is_int(n) or n <= 0 or n & (n - 1):
        raise SwizzleError(f"{what}: N must be a power of two, got {n}")
    return int(n).bit_length() - 1


# =========================================================================== Swizzle
class Swizzle:
    """``Swizzle<BBits, MBase, SShift>`` of ``cute/swizzle.hpp``.

    ::

        0bxxxxxxxxxxxxxxxYYYxxxxxxxZZZxxxx
                                      ^--^ MBase: least-significant bits kept constant
                         ^-^       ^-^     BBits: number of bits in the mask
                           ^---------^     SShift: distance from YYY to ZZZ (negative: ZZZ above)

    Law: ``Sw(x) = x ^ shiftr(x & yyy_msk, S)`` with ``yyy_msk = (2^B - 1) << (M + max(0, S))``
    and ``zzz_msk = (2^B - 1) << (M - min(0, S))``; ``Sw`` is an involution and permutes
    ``[0, 2^k)`` for every ``k >= B + M + |S|``.
    """

    __slots__ = ("bits", "base", "shift")

    def __init__(self, bits: int, base: int, shift: int | None = None) -> None:
        if shift is None:
            shift = bits  # template <int BBits, int MBase, int SShift = BBits>
        for name, v in (("BBits", bits), ("MBase", base), ("SShift", shift)):
            if not _is_int(v):
                raise SwizzleError(f"Swizzle: {name} must be an integer, got {v!r}")
        bits, base, shift = int(bits), int(base), int(shift)
        sig = f"Swizzle<{bits},{base},{shift}>"
        # the three static_asserts of the header, with its messages
        if base < 0:
            raise SwizzleError(f"{sig}: MBase must be positive (got {base}).")
        if bits < 0:
            raise SwizzleError(f"{sig}: BBits must be positive (got {bits}).")
        if abs(shift) < bits:
            raise SwizzleError(f"{sig}: abs(SShift) must be more than BBits "
                               f"(|{shift}| < {bits}).")
        # beyond the static_asserts: the header computes the masks as `int` constants
        if bits + base + abs(shift) > _INT_BITS:
            raise SwizzleError(f"{sig}: BBits + MBase + |SShift| = {bits + base + abs(shift)} "
                               f"exceeds {_INT_BITS}; the C++ masks are 32-bit int constants.")
        self.bits, self.base, self.shift = bits, base, shift

    # -- the header's constants ------------------------------------------------------------
    @property
    def num_bits(self) -> int:
        return self.bits

    @property
    def num_base(self) -> int:
        return self.base

    @property
    def num_shft(self) -> int:
        return self.shift

    @property
    def bit_msk(self) -> int:
        """``(1 << B) - 1``."""
        return (1 << self.bits) - 1

    @property
    def yyy_msk(self) -> int:
        """The source bits: ``bit_msk << (M + max(0, S))``."""
        return self.bit_msk << (self.base + max(0, self.shift))

    @property
    def zzz_msk(self) -> int:
        """The destination bits (XORed with the shifted YYY): ``bit_msk << (M - min(0, S))``."""
        return self.bit_msk << (self.base - min(0, self.shift))

    @property
    def msk_sft(self) -> int:
        return self.shift

    @property
    def swizzle_code(self) -> int:
        """``uint32_t(yyy_msk | zzz_msk)``: every bit the swizzle reads or writes."""
        return (self.yyy_msk | self.zzz_msk) & 0xFFFFFFFF

    @property
    def nbits(self) -> int:
        """``B + M + |S|``: the swizzle permutes ``[0, 2^k)`` for every ``k >= nbits``."""
        return self.bits + self.base + abs(self.shift)

    def size(self) -> int:
        """Size of the smallest range ``[0, 2^k)`` the swizzle permutes (pycute's ``size``)."""
        return 1 << self.nbits

    def cosize(self) -> int:
        return self.size()

    # -- evaluation ------------------------------------------------------------------------
    def __call__(self, x: Any) -> Any:
        """``x ^ shiftr(x & yyy_msk, S)`` (``apply`` in the header) on an int, a numpy
        integer array or a ``Sym``; the one evaluation of a swizzle."""
        if isinstance(x, Sym) and x.bits < self.nbits:
            raise OverflowError(f"{self}: a {x.bits}-bit bit-vector is narrower than the "
                                f"{self.nbits} bits the swizzle touches")
        y = x & self.yyy_msk
        return x ^ ((y >> self.shift) if self.shift >= 0 else (y << -self.shift))

    apply = __call__

    def apply_inplace(self, x: np.ndarray, scratch: np.ndarray | None = None) -> np.ndarray:
        """``x[:] = self(x)`` with numpy ufuncs and ``out=`` (no temporaries besides the
        optional reusable ``scratch`` of ``x``'s shape and dtype).  Same law as ``__call__``."""
        if self.bits == 0:
            return x
        t = np.empty_like(x) if scratch is None else scratch
        typ = x.dtype.type
        np.bitwise_and(x, typ(self.yyy_msk), out=t)
        if self.shift >= 0:
            np.right_shift(t, typ(self.shift), out=t)
        else:
            np.left_shift(t, typ(-self.shift), out=t)
        np.bitwise_xor(x, t, out=x)
        return x

    # -- algebra ---------------------------------------------------------------------------
    def compose(self, rhs: Any) -> Any:
        """``composition(self, rhs)`` (see :func:`composition`)."""
        return composition(self, rhs)

    def right_inverse(self) -> Swizzle:
        """A swizzle is its own inverse: ``Sw(Sw(x)) == x``."""
        return self

    def left_inverse(self) -> Swizzle:
        return self

    def upcast(self, n: int) -> Swizzle:
        """``upcast<N>(Swizzle)``: the swizzle on offsets in units of N elements:
        ``Sw<B, M - log2 N, S>``, or ``Sw<max(B + M - log2 N, 0), 0, S>`` when M runs out."""
        k = _log2_pow2(n, "upcast")
        new_m = self.base - k
        if new_m >= 0:
            return Swizzle(self.bits, new_m, self.shift)
        return Swizzle(max(self.bits + new_m, 0), 0, self.shift)

    def downcast(self, n: int) -> Swizzle:
        """``downcast<N>(Swizzle)`` = ``Sw<B, M + log2 N, S>``."""
        return Swizzle(self.bits, self.base + _log2_pow2(n, "downcast"), self.shift)

    def recast(self, old_bits: int, new_bits: int) -> Swizzle:
        """``recast_layout<Old, New>(Swizzle)``: ratio ``new/old`` reduced; up/downcast."""
        g = gcd(old_bits, new_bits)
        num, den = new_bits // g, old_bits // g
        if num == 1 and den == 1:
            return self
        if num == 1:
            return self.downcast(den)
        if den == 1:
            return self.upcast(num)
        # the header's general branch does not compile (it names an undefined `layout`)
        raise SwizzleError(f"recast_layout of {self} from {old_bits} to {new_bits} bits: "
                           "the ratio is not an integer or its inverse")

    def max_alignment(self) -> int:
        """``1 << M``."""
        return 1 << self.base

    # -- display / equality ----------------------------------------------------------------
    def to_str(self, static: bool = False) -> str:
        return f"Sw<{self.bits},{self.base},{self.shift}>"

    def __str__(self) -> str:
        return self.to_str()

    def __repr__(self) -> str:
        return f"Swizzle({self.bits},{self.base},{self.shift})"

    def __eq__(self, o: object) -> bool:
        return isinstance(o, Swizzle) and (o.bits, o.base, o.shift) == (self.bits, self.base, self.shift)

    def __hash__(self) -> int:
        return hash(("Sw", self.bits, self.base, self.shift))


def make_swizzle(y: int, z: int) -> Swizzle:
    """``make_swizzle<Y, Z>()``: the swizzle whose YYY bits are ``y`` and ZZZ bits ``z``.

    Law: ``make_swizzle(sw.yyy_msk, sw.zzz_msk) == sw`` for every B > 0 swizzle, and
    ``(y | z) == make_swizzle(y, z).swizzle_code`` (the header's consistency assert).
    """
    y, z = int(y) & 0xFFFFFFFF, int(z) & 0xFFFFFFFF
    bz, by = _popcount(y), _popcount(z)
    if bz != by:
        raise SwizzleError(f"make_swizzle<{y:#b},{z:#b}>: Number of bits in Y and Z don't match")
    tz_y, tz_z = _countr_zero(y), _countr_zero(z)
    m = min(tz_y, tz_z) % 32
    s = tz_y - tz_z
    try:
        sw = Swizzle(bz, m, s)
    except SwizzleError as e:
        raise SwizzleError(f"make_swizzle<{y:#b},{z:#b}>: {e}") from None
    if (y | z) != sw.swizzle_code:
        raise SwizzleError(f"make_swizzle<{y:#b},{z:#b}>: the bits are not two contiguous "
                           f"fields of equal width (got {sw}); Something went wrong.")
    return sw


def _compose_swizzles(a: Swizzle, b: Swizzle) -> Swizzle:
    """``composition(Swizzle, Swizzle)``: merge two swizzles of the same shift."""
    if a.shift != b.shift:
        raise SwizzleError(f"composition({a}, {b}): Can only merge swizzles of the same shift.")
    return make_swizzle(a.yyy_msk ^ b.yyy_msk, a.zzz_msk ^ b.zzz_msk)


# =========================================================================== offsets
class SmemPtrFlag(int):
    """``smem_ptr_flag_bits<B>``: an unset shared-memory pointer of B-bit elements, used as
    the offset of the GMMA layout atoms.  It derives from ``Int<0>`` in C++: it is the
    integer 0 here, printed as ``smem_ptr[Bb](unset)``."""

    bits: int

    def __new__(cls, bits: int = 1) -> SmemPtrFlag:
        obj = super().__new__(cls, 0)
        obj.bits = int(bits)
        return obj

    def __str__(self) -> str:
        return f"smem_ptr[{self.bits}b](unset)"

    def __repr__(self) -> str:
        return f"SmemPtrFlag({self.bits})"

    def __eq__(self, o: object) -> bool:
        if isinstance(o, SmemPtrFlag):
            return o.bits == self.bits
        return int.__eq__(self, o)  # type: ignore[no-any-return]

    __hash__ = int.__hash__


def _offset_str(off: Any, static: bool) -> str:
    if isinstance(off, SmemPtrFlag):
        return str(off)
    if _is_int(off):
        return f"_{int(off)}" if static else str(int(off))
    return str(off)


def _norm_offset(off: Any) -> Any:
    if isinstance(off, SmemPtrFlag):
        return off
    if _is_int(off):
        return int(off)
    return off


def _offset_div(off: Any, n: int) -> int:
    """``upcast<N>(offset)`` = ``safe_div(offset, N)`` (static: must divide)."""
    if off % n:
        raise LayoutError(f"upcast<{n}>: offset {off} is not divisible by {n}")
    return int(off) // n


# =========================================================================== ComposedLayout
def _fn_str(f: Any, static: bool) -> str:
    if isinstance(f, (Layout, Swizzle, ComposedLayout)):
        return f.to_str(static)
    return str(f)


class ComposedLayout:
    """``ComposedLayout<LayoutA, Offset, LayoutB>``: the function ``A o O o B``.

    Law: ``L(c) == layout_a(offset + layout_b(c))`` for every coordinate ``c`` of
    ``layout_b``; shape, size, rank and depth are ``layout_b``'s.  A coordinate containing
    ``_`` slices (``slice(c, L)``), as in C++.
    """

    __slots__ = ("layout_a", "offset", "layout_b")

    def __init__(self, layout_a: Any, offset: Any, layout_b: Any) -> None:
        self.layout_a = layout_a
        self.offset = _norm_offset(offset)
        self.layout_b = layout_b

    @staticmethod
    def of(a: Any, b: Any) -> Any:
        """``composition(a, b)`` of C++ when ``a`` or ``b`` is a Swizzle or ComposedLayout
        (``layout.composition`` routes here).  See :func:`composition`; may decay to a
        Layout (e.g. ``Sw<0,M,S>`` is the identity)."""
        return composition(a, b)

    # -- accessors -------------------------------------------------------------------------
    @property
    def shape(self) -> Any:
        """``shape(L) == shape(layout_b)``."""
        return self.layout_b.shape

    @property
    def stride(self) -> Any:
        raise LayoutError("a ComposedLayout has no strides (stride() is deleted in CuTe)")

    def size(self) -> int:
        """``size(L) == size(layout_b)``."""
        return L.size(self.layout_b)

    def cosize(self) -> int:
        """``cosize(L) == cosize(layout_b)`` (as the header defines it, not the image extent)."""
        return L.cosize(self.layout_b)

    def rank(self) -> int:
        return L.rank(self.layout_b)

    def depth(self) -> int:
        return L.depth(self.layout_b)

    def __len__(self) -> int:
        return self.rank()

    def _wrap(self, b: Any) -> Any:
        return composition3(self.layout_a, self.offset, b)

    def get(self, *path: int) -> Any:
        """``layout<I...>(L) == composition(A, O, layout<I...>(B))``."""
        return self._wrap(L.get(self.layout_b, *path))

    def __getitem__(self, i: int) -> Any:
        return self.get(i)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return (self[i] for i in range(self.rank()))

    def take(self, begin: int, end: int) -> Any:
        return self._wrap(L.take(self.layout_b, begin, end))

    def select(self, *modes: int) -> Any:
        return self._wrap(L.select(self.layout_b, *modes))

    def flatten(self) -> Any:
        return self._wrap(L.flatten_layout(self.layout_b))

    def group(self, begin: int, end: int) -> Any:
        return self._wrap(L.group(self.layout_b, begin, end))

    def append(self, x: Layout | None = None, n: int | None = None) -> Any:
        return self._wrap(L.append(self.layout_b, x, n))

    # -- evaluation ------------------------------------------------------------------------
    def __call__(self, *crd: Any) -> Any:
        """``A(O + B(c))``; slices when ``c`` contains ``_``."""
        c: Any = crd[0] if len(crd) == 1 else tuple(crd)
        if isinstance(c, list):
            c = tuple(c)
        if L._has_underscore(c):
            return self.slice(c)
        return self.layout_a(self.offset + self.layout_b(c))

    def table(self, dtype: Any = None, out: np.ndarray | None = None) -> np.ndarray:
        """``L(i)`` for every ``i < size(L)`` as one numpy array (int32 when it fits).

        Law: ``table()[i] == L(i)``.  For a swizzle over a Layout this is computed in
        cache-sized blocks: the broadcast per-mode sum of ``layout_b`` is written straight
        into ``out`` and the swizzle applied in place (``out=`` ufuncs, one small scratch).
        """
        if isinstance(self.layout_a, Swizzle) and isinstance(self.layout_b, Layout):
            return fast_table(self.layout_b, self.layout_a, int(self.offset), dtype=dtype, out=out)
        res = np.asarray(self.layout_a(self.layout_b.table(np.int64) + int(self.offset)))
        return res.astype(dtype, copy=False) if dtype is not None else res

    # -- composition -----------------------------------------------------------------------
    def compose(self, *others: Any) -> Any:
        """``composition(L, other)`` (several arguments form a tile)."""
        return composition(self, others[0] if len(others) == 1 else tuple(others))

    def with_shape(self, *shp: Any) -> Any:
        s = shp[0] if len(shp) == 1 else tuple(shp)
        return composition(self, Layout(s))

    def tile(self, *tiler: Any) -> Any:
        return self.tiled_divide(tiler[0] if len(tiler) == 1 else tuple(tiler))

    # -- slicing ---------------------------------------------------------------------------
    def slice_and_offset(self, crd: Any) -> tuple[Any, int]:
        """``slice_and_offset(c, L)``.

        Generic: ``(ComposedLayout(A, O + B(c with _ -> 0), slice(c, B)), 0)``: the offset
        moves into the composed layout.  Swizzled (``A`` a Swizzle): the header's algorithm
        of ``swizzle_layout.hpp``, which decays to ``(Layout, offset)`` when the remaining
        modes of ``B`` never hit both the YYY and the ZZZ bits of a pair.
        Law: ``slice(c, L)(d) + offset == L(c with _ filled by d)`` for every ``d``.
        """
        crd = L._norm_crd(crd)
        if isinstance(self.layout_a, Swizzle) and isinstance(self.layout_b, Layout):
            return _swizzle_slice_and_offset(crd, self)
        sub, off = L.slice_and_offset(crd, self.layout_b)
        return ComposedLayout(self.layout_a, self.offset + off, sub), 0

    def slice(self, crd: Any) -> Any:
        """``slice(c, L) == get<0>(slice_and_offset(c, L))`` (the offset is dropped, as in C++)."""
        return self.slice_and_offset(crd)[0]

    def domain_offset(self, crd: Any) -> tuple[ComposedLayout, int]:
        """``(ComposedLayout(A, O + B(c), B), 0)``."""
        return ComposedLayout(self.layout_a, self.offset + self.layout_b(L._norm_crd(crd)),
                              self.layout_b), 0

    # -- complement / inverses -------------------------------------------------------------
    def complement(self, cotarget: Any = None) -> Layout:
        """``complement(L, M) == complement(layout_b, M)``; ``M`` defaults to ``cosize(L)``."""
        if cotarget is None:
            cotarget = self.cosize()
        return L.complement(self.layout_b, cotarget)

    def right_inverse(self) -> Any:
        """Swizzle with offset 0: ``composition(right_inverse(B), A)``; otherwise
        ``composition(right_inverse(B), -O, right_inverse(A))`` (A swizzle is its own inverse).
        Law (offset 0, ``B`` bijective onto ``[0, n)``): ``L(R(i)) == i``."""
        if isinstance(self.layout_a, Swizzle) and _is_static_zero(self.offset):
            return composition(_right_inverse(self.layout_b), self.layout_a)
        return composition3(_right_inverse(self.layout_b), -int(self.offset),
                            _right_inverse(self.layout_a))

    def left_inverse(self) -> Any:
        """As :meth:`right_inverse` with left inverses: ``R(L(i)) == i``."""
        if isinstance(self.layout_a, Swizzle) and _is_static_zero(self.offset):
            return composition(_left_inverse(self.layout_b), self.layout_a)
        return composition3(_left_inverse(self.layout_b), -int(self.offset),
                            _left_inverse(self.layout_a))

    # -- reshaping (act on layout_b) -------------------------------------------------------
    def coalesce(self, profile: Any = None) -> Any:
        """``composition(A, O, coalesce(B[, profile]))``: same function, simplest ``B``."""
        return self._wrap(L.coalesce(self.layout_b, profile))

    def filter(self, profile: Any = None) -> Any:
        return self._wrap(L.filter(self.layout_b, profile))

    def zip(self) -> Any:
        raise LayoutError("zip of a ComposedLayout: threadmap has no unary zip on layouts")

    def logical_divide(self, tiler: Any) -> Any:
        """``composition(A, O, logical_divide(B, tiler))``."""
        return self._wrap(L.logical_divide(self.layout_b, tiler))

    def zipped_divide(self, tiler: Any) -> Any:
        return self._wrap(L.zipped_divide(self.layout_b, tiler))

    def tiled_divide(self, tiler: Any) -> Any:
        return self._wrap(L.tiled_divide(self.layout_b, tiler))

    def flat_divide(self, tiler: Any) -> Any:
        return self._wrap(L.flat_divide(self.layout_b, tiler))

    def tile_unzip(self, tiler: Any) -> Any:
        return self._wrap(L.tile_unzip(self.layout_b, tiler))

    def logical_product(self, tiler: Any) -> Any:
        """``composition(A, O, logical_product(B, tiler))``."""
        return self._wrap(L.logical_product(self.layout_b, tiler))

    def zipped_product(self, tiler: Any) -> Any:
        return self._wrap(L.zipped_product(self.layout_b, tiler))

    def tiled_product(self, tiler: Any) -> Any:
        return self._wrap(L.tiled_product(self.layout_b, tiler))

    def flat_product(self, tiler: Any) -> Any:
        return self._wrap(L.flat_product(self.layout_b, tiler))

    def blocked_product(self, tiler: Any) -> Any:
        return self._wrap(L.blocked_product(self.layout_b, tiler))

    def raked_product(self, tiler: Any) -> Any:
        return self._wrap(L.raked_product(self.layout_b, tiler))

    def tile_to_shape(self, trg_shape: Any, order: Any = L.LayoutLeft) -> Any:
        """``composition(A, O, tile_to_shape(B, shape, order))``."""
        return self._wrap(L.tile_to_shape(self.layout_b, trg_shape, order))

    # -- recast ----------------------------------------------------------------------------
    def upcast(self, n: int) -> Any:
        """``upcast<N>``: with a :class:`SmemPtrFlag` offset (pointer_flagged.hpp) the swizzle
        is kept and the flag becomes ``smem_ptr_flag_bits<B*N>``; otherwise every part is
        upcast: ``composition(upcast<N>(A), O / N, upcast<N>(B))``."""
        if isinstance(self.offset, SmemPtrFlag):
            return composition3(self.layout_a, SmemPtrFlag(self.offset.bits * n),
                                L.upcast(self.layout_b, n))
        return composition3(_upcast(self.layout_a, n), _offset_div(self.offset, n),
                            _upcast(self.layout_b, n))

    def downcast(self, n: int) -> Any:
        if isinstance(self.offset, SmemPtrFlag):
            return composition3(self.layout_a, SmemPtrFlag(self.offset.bits // n),
                                L.downcast(self.layout_b, n))
        return composition3(_downcast(self.layout_a, n), int(self.offset) * n,
                            _downcast(self.layout_b, n))

    def recast_layout(self, old_bits: int, new_bits: int) -> Any:
        """``recast_layout<Old, New>``: ratio ``new/old`` reduced, then up/downcast."""
        g = gcd(old_bits, new_bits)
        num, den = new_bits // g, old_bits // g
        out: Any = self
        if num != 1:
            out = out.upcast(num)
        if den != 1:
            out = out.downcast(den) if isinstance(out, ComposedLayout) else L.downcast(out, den)
        return out

    def as_position_independent_swizzle_layout(self) -> Any:
        """For a flagged (GMMA) layout ``Sw o smem_ptr[Bb] o L``: the swizzle recast from
        bytes to B-bit elements, offset 0: the *element-offset* function of the atom
        (``composition(recast_layout<uint8_t, uint_bit_t<B>>(Sw), _0, L)``)."""
        if not isinstance(self.offset, SmemPtrFlag) or not isinstance(self.layout_a, Swizzle):
            raise LayoutError("as_position_independent_swizzle_layout needs Sw o smem_ptr_flag o L")
        return composition3(self.layout_a.recast(8, self.offset.bits), 0, self.layout_b)

    # -- other -----------------------------------------------------------------------------
    def max_alignment(self) -> int:
        """Swizzled: ``gcd(1 << M, max_alignment(O), max_alignment(B))``; otherwise 1."""
        if isinstance(self.layout_a, Swizzle):
            off = int(self.offset)
            return gcd(self.layout_a.max_alignment(), off if off else 0,
                       _layout_max_alignment(self.layout_b))
        return 1

    def nullspace(self) -> Layout:
        """Not attempted for composed layouts: ``1:0``."""
        return Layout(1, 0)

    def max_common_layout(self, other: Any) -> Layout:
        """Swizzled ``A o O o B`` vs a Layout: ``max_common_layout(B, other)`` truncated to
        ``1 << M`` elements."""
        sw = self._require_swizzle("max_common_layout")
        if not isinstance(other, Layout):
            raise LayoutError("max_common_layout: the other argument must be a Layout")
        common = L.max_common_layout(self.layout_b, other)
        base = 1 << sw.base
        if base < L.size(common):
            return L.composition(common, base)
        return common

    def max_common_vector(self, other: Any) -> int:
        """``min(max_common_vector(B, other), 1 << M)``; two swizzled layouts: the vector
        of their ``B``s, truncated unless the swizzles are equal."""
        sw = self._require_swizzle("max_common_vector")
        if isinstance(other, ComposedLayout):
            sw1 = other._require_swizzle("max_common_vector")
            vec = L.max_common_vector(self.layout_b, other.layout_b)
            if sw == sw1:
                return vec
            return min(vec, 1 << sw.base, 1 << sw1.base)
        return min(L.max_common_vector(self.layout_b, other), 1 << sw.base)

    def _require_swizzle(self, what: str) -> Swizzle:
        if not isinstance(self.layout_a, Swizzle) or not isinstance(self.layout_b, Layout):
            raise LayoutError(f"{what} is defined for Sw o O o Layout only, not {self}")
        return self.layout_a

    # -- display / equality ----------------------------------------------------------------
    def to_str(self, static: bool = False) -> str:
        """``A o O o B`` as CuTe prints it; ``static=True`` adds the ``_`` of static ints."""
        return (f"{_fn_str(self.layout_a, static)} o {_offset_str(self.offset, static)} o "
                f"{_fn_str(self.layout_b, static)}")

    def __str__(self) -> str:
        return self.to_str()

    def __repr__(self) -> str:
        return f"ComposedLayout({self})"

    def __eq__(self, o: object) -> bool:
        return (isinstance(o, ComposedLayout) and self.layout_a == o.layout_a
                and type(self.offset) is type(o.offset) and self.offset == o.offset
                and self.layout_b == o.layout_b)

    def __hash__(self) -> int:
        return hash((self.layout_a, str(self.offset), self.layout_b))


def _is_static_zero(off: Any) -> bool:
    """``is_constant<0, Offset>``: an int 0 or a flag (both ``Int<0>``)."""
    return _is_int(off) and int(off) == 0


def _right_inverse(f: Any) -> Any:
    if isinstance(f, (Swizzle, ComposedLayout)):
        return f.right_inverse()
    return L.right_inverse(f)


def _left_inverse(f: Any) -> Any:
    if isinstance(f, (Swizzle, ComposedLayout)):
        return f.left_inverse()
    return L.left_inverse(f)


def _upcast(f: Any, n: int) -> Any:
    return f.upcast(n) if isinstance(f, (Swizzle, ComposedLayout)) else L.upcast(f, n)


def _downcast(f: Any, n: int) -> Any:
    return f.downcast(n) if isinstance(f, (Swizzle, ComposedLayout)) else L.downcast(f, n)


def _layout_max_alignment(layout: Layout) -> int:
    """``max_alignment(Layout)``: size of the leading stride-1 run of ``coalesce(layout)``."""
    c = L.coalesce(layout)
    s0, d0 = flatten_to_tuple(c.shape)[0], flatten_to_tuple(c.stride)[0]
    return int(s0) if d0 == 1 else 1


# =========================================================================== composition
def make_composed_layout(a: Any, offset: Any, b: Any) -> ComposedLayout:
    """``make_composed_layout(A, O, B)``: always a ComposedLayout (no simplification)."""
    return ComposedLayout(a, offset, b)


def composition3(a: Any, offset: Any, b: Any) -> Any:
    """``composition(A, O, B)`` (3 arguments): ``ComposedLayout(A, O, B)``, except the
    identity swizzle ``composition(Swizzle<0,M,S>, Int<0>, Layout) == Layout``.
    A :class:`SmemPtrFlag` offset is not ``Int<0>`` for overload resolution: kept."""
    if (isinstance(a, Swizzle) and a.bits == 0 and type(offset) is int and offset == 0
            and isinstance(b, Layout)):
        return b
    return ComposedLayout(a, offset, b)


def composition(lhs: Any, rhs: Any) -> Any:
    """``composition(lhs, rhs)`` of C++ when either side is a Swizzle or ComposedLayout.

    Law: ``R(c) == lhs(rhs(c))`` for every coordinate ``c`` of ``rhs`` (for ``Layout o
    Swizzle``: on the swizzle's bits, "works in simple cases" as the header says).

    * ``Swizzle o Layout``  -> ``Sw o 0 o L`` (just ``L`` when B == 0);
    * ``Swizzle o Swizzle`` -> merged swizzle (same shift required);
    * ``(A o O o B) o T``   -> ``A o O o (B o T)`` for any tiler ``T``;
    * ``Layout o Swizzle``  -> ``make_swizzle<L(yyy), L(zzz)> o L``;
    * ``Layout o (A o O o B)`` -> ``(Layout o A) o B``, which requires ``O == 0``.
    """
    if isinstance(lhs, ComposedLayout):
        return composition3(lhs.layout_a, lhs.offset, composition(lhs.layout_b, rhs))
    if isinstance(lhs, Swizzle):
        if isinstance(rhs, Layout):
            return composition3(lhs, 0, rhs)
        if isinstance(rhs, Swizzle):
            return _compose_swizzles(lhs, rhs)
        raise LayoutError(f"composition({lhs}, {rhs!r}): a Swizzle composes with a Layout or "
                          "a Swizzle only")
    if isinstance(lhs, Layout):
        if isinstance(rhs, Swizzle):
            return composition(make_swizzle(lhs(rhs.yyy_msk), lhs(rhs.zzz_msk)), lhs)
        if isinstance(rhs, ComposedLayout):
            if not _is_static_zero(rhs.offset):
                raise LayoutError(f"composition({lhs}, {rhs}): Require offset == 0.")
            return composition(composition(lhs, rhs.layout_a), rhs.layout_b)
        return L.composition(lhs, rhs)
    raise LayoutError(f"composition: cannot compose {lhs!r} with {rhs!r}")


def make_layout_from_swizzle(sw: Swizzle) -> Any:
    """``make_layout(Swizzle<B,M,S>)`` exactly as the header: ``composition(sw,
    Layout<Int<M+B+abs(S)>, _1>)``.  Note: the extent is ``M+B+|S|``, not ``2^(M+B+|S|)``."""
    return composition3(sw, 0, Layout(sw.base + sw.bits + abs(sw.shift), 1))


def swizzled_logical_product(layout: Layout, tiler: ComposedLayout) -> Any:
    """``logical_product(Layout, Sw o 0 o T)`` (swizzle_layout.hpp): the product with ``T``,
    and the swizzle transferred onto the new strides (``make_swizzle`` of the images of the
    tiler's active Y and Z bits in the new layout)."""
    sw = tiler._require_swizzle("logical_product")
    if not _is_static_zero(tiler.offset):
        raise LayoutError("logical_product: Require Swizzle offset == 0.")
    new_layout = L.logical_product(layout, tiler.layout_b)
    B, M, S = sw.bits, sw.base, sw.shift
    only_zy = Layout((1 << M, 1 << B, 1 << (abs(S) - B), 1 << B, 1),
                     (0, 1 << M, 0, 1 << (M + abs(S)), 0))
    layout_only_zy = L.composition(only_zy, tiler.layout_b)
    active = layout_only_zy(L.size(layout_only_zy) - 1)
    active_z = active & sw.zzz_msk
    active_y = active & sw.yyy_msk
    new_z = new_layout(0, tiler.layout_b(active_z))
    new_y = new_layout(0, tiler.layout_b(active_y))
    return composition(make_swizzle(new_y, new_z), new_layout)


# =========================================================================== slicing
def _to_mixed_bits(layout: Layout, coord: Any) -> int:
    """Static ``to_mixed_bits(layout, coord)``: XOR over the modes of
    ``(c * d) & ((s - 1) * d)`` (each ``s * d`` must be 0 or a power of two)."""
    crd = idx2crd(coord, layout.shape)
    acc = 0
    for s, d, c in zip(flatten_to_tuple(layout.shape), flatten_to_tuple(layout.stride),
                       flatten_to_tuple(crd), strict=True):
        p = s * d
        if p != 0 and (p < 0 or p & (p - 1)):
            raise LayoutError(f"to_mixed_bits: Requires pow2 shape*stride (got {s}*{d})")
        acc ^= (c * d) & ((s - 1) * d)
    return acc


def _all_underscore(c: Any) -> bool:
    if isinstance(c, tuple):
        return all(_all_underscore(x) for x in c)
    return isinstance(c, Underscore)


def _swizzle_slice_and_offset(crd: Any, cl: ComposedLayout) -> tuple[Any, int]:
    sw: Swizzle = cl.layout_a
    b: Layout = cl.layout_b
    if _all_underscore(crd):
        return composition3(sw, cl.offset, L.slice_(crd, b)), 0
    B, M, S = sw.bits, sw.base, sw.shift
    aS = abs(S)
    sw_l = Layout((1 << M, 1 << B, 1 << (aS - B), 1 << B, 1))
    sd = sw_l.stride
    swizzle_anti_zy = Layout(sw_l.shape, (sd[0], 0, sd[2], 0, L.size(sw_l)))  # type: ignore[index]
    swizzle_only_zy = Layout(sw_l.shape, (0, sd[1], 0, sd[3], 0))  # type: ignore[index]

    sliced = L.slice_(crd, b)
    diced = L.dice(crd, b)
    diced_coord = L.dice(crd, crd)
    diced_anti = L.composition(swizzle_anti_zy, diced)
    diced_only = L.composition(swizzle_only_zy, diced)
    offset_only_zy = int(cl.offset) ^ _to_mixed_bits(diced_only, diced_coord)
    offset_anti_zy = diced_anti(diced_coord)

    sliced_only = L.composition(swizzle_only_zy, sliced)
    active = sliced_only(L.size(sliced_only) - 1)
    if active & ~sw(active):  # hits on Y AND Z: not reducible
        return ComposedLayout(sw, offset_only_zy, sliced), offset_anti_zy

    Z = sw.zzz_msk & -sw.zzz_msk
    Y = sw.yyy_msk & -sw.yyy_msk

    def strides(z_side: bool) -> tuple:
        if z_side:
            return tuple((Z << i) if offset_only_zy & (Y << i) == 0 else -(Z << i) for i in range(B))
        return tuple(((Y + Z) << i) if offset_only_zy & (Z << i) == 0 else ((Y - Z) << i)
                     for i in range(B))

    lo, hi = strides(Z < Y), strides(Z > Y)
    rep: Any = 2 if B == 1 else (2,) * B
    lo_d: Any = lo[0] if B == 1 else lo
    hi_d: Any = hi[0] if B == 1 else hi
    swizzle_layout = Layout((1 << M, rep, 1 << (aS - B), rep, 1),
                            (1, lo_d, 1 << (M + B), hi_d, 1 << (M + B + aS)))
    return L.composition(swizzle_layout, sliced), sw(offset_only_zy) + offset_anti_zy


# =========================================================================== GMMA atoms
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
    if swizzle not in _GMMA_SW:
        raise LayoutError(f"GMMA swizzle must be one of {list(_GMMA_SW)}, got {swizzle!r}")
    b = _GMMA_SW[swizzle]
    w = 128 << b
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
    if not _is_int(element_bits) or element_bits <= 0 or element_bits & (element_bits - 1) \
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

