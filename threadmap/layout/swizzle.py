"""CuTe swizzles (``cute/swizzle.hpp``): the functor ``Sw<B,M,S>`` and ``make_swizzle``.

:class:`Swizzle` ``Sw<B,M,S>`` is the functor ``x ^ ((x & yyy_msk) >> S)`` (a negative ``S``
shifts left).  It is a bijection of the non-negative integers onto themselves, an
involution (``sw(sw(x)) == x``), and it maps every range ``[0, 2^k)`` with
``k >= B + M + |S|`` onto itself.  Composing a swizzle with a layout (``Sw o L``, a
ComposedLayout) is in :mod:`threadmap.layout.swizzle_layout`.

Evaluation uses only ``& ^ >> <<``, so one implementation serves Python ints, numpy arrays
and :class:`threadmap.layout.backend.Sym` bit-vectors.
"""

from __future__ import annotations

from math import gcd
from typing import Any

import numpy as np

from threadmap.errors import LayoutError, SwizzleError
from threadmap.layout.backend import Sym
from threadmap.layout.dispatch import LayoutLike, find_overload

__all__ = ["Swizzle", "make_swizzle"]

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
class Swizzle(LayoutLike):
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
    #: the free functions CuTe overloads for a Swizzle (swizzle.hpp, swizzle_layout.hpp)
    CUTE_OVERLOADS = frozenset({"composition", "r_composition", "right_inverse", "left_inverse",
                                "upcast", "downcast", "recast_layout", "make_layout",
                                "max_alignment", "rank", "depth"})

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
        if isinstance(x, bool) or not (isinstance(x, (int, np.integer, Sym)) or (
                isinstance(x, np.ndarray) and x.dtype.kind in "iu")):
            raise SwizzleError(f"{self}: cannot swizzle {x!r} (an integer, integer array or Sym)")
        if isinstance(x, Sym) and x.bits < self.nbits:
            raise SwizzleError(f"{self}: a {x.bits}-bit bit-vector is narrower than the "
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
    def composition(self, rhs: Any) -> Any:
        """``composition(Swizzle, Swizzle)`` merges the two swizzles (same shift required);
        ``composition(Swizzle, Layout)`` is ``Sw o _0 o L`` (``swizzle_layout.hpp``)."""
        if isinstance(rhs, Swizzle):
            return _compose_swizzles(self, rhs)
        f = find_overload("composition", self)
        if f is None:
            raise LayoutError(f"composition({self}, {rhs!r}) is not defined")
        return f(self, rhs)

    compose = composition

    def r_composition(self, lhs: Any) -> Any:
        """``composition(Layout, Swizzle)`` (``swizzle_layout.hpp``)."""
        f = find_overload("r_composition", self)
        if f is None:
            raise LayoutError(f"composition({lhs!r}, {self}) is not defined")
        return f(self, lhs)

    def rank(self) -> int:
        """``rank(Swizzle)``: CuTe's generic ``rank`` of a non-tuple, 1."""
        return 1

    def depth(self) -> int:
        """``depth(Swizzle)``: CuTe's generic ``depth`` of a non-tuple, 0."""
        return 0

    def make_layout(self) -> Any:
        """``make_layout(Swizzle)`` (``swizzle_layout.hpp``)."""
        f = find_overload("make_layout", self)
        if f is None:
            raise LayoutError(f"make_layout({self}) is not defined")
        return f(self)

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

    def recast_layout(self, old_bits: int, new_bits: int) -> Swizzle:
        """``recast_layout<Old, New>(Swizzle)``."""
        return self.recast(old_bits, new_bits)

    def recast(self, old_bits: int, new_bits: int) -> Swizzle:
        """``recast_layout<Old, New>(Swizzle)``: ratio ``new/old`` reduced; up/downcast."""
        for v in (old_bits, new_bits):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v <= 0:
                raise SwizzleError(f"recast_layout: bit widths must be positive integers, got {v!r}")
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
    for v in (y, z):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 0 <= v < 1 << 32:
            raise SwizzleError(f"make_swizzle: the bit masks must be 32-bit integers, got {v!r}")
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


