"""The three backends of the one evaluation core: Python ints, numpy arrays and z3 bit-vectors.

Layouts, swizzles and thread maps are evaluated by code that only uses
``+ - * // % & | ^ >> <<`` and comparisons.  Python ints and numpy integer arrays support
those operators directly.  z3 bit-vectors do not have the right meaning for them (``/`` is
signed, ``>>`` is arithmetic), so symbolic values are wrapped in :class:`Sym`, whose
operators are the *unsigned* bit-vector operations.  Every value the core manipulates is a
non-negative coordinate, index or offset, for which floor division, unsigned division and
C++ truncating division agree; where a value may be negative (an index into a layout) the
core divides with :func:`cxx_divmod`, C++'s truncating ``/`` and ``%``, on every backend.

Law: for every expression ``f`` of the core and every value ``x`` in range,
``f(x) == f(np.array([x]))[0] == simplify(f(Sym.const(x)))``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # z3 is a hard dependency, but keep import errors readable
    import z3  # type: ignore[import-untyped]  # z3 ships no type stubs
except ImportError as exc:  # pragma: no cover
    raise ImportError("threadmap needs z3-solver: pip install z3-solver") from exc

DEFAULT_BITS = 64


def _coerce(other: Any, bits: int) -> z3.ExprRef:
    if isinstance(other, Sym):
        return other.e
    if isinstance(other, (bool, np.bool_)):
        return z3.BoolVal(bool(other))
    if isinstance(other, (int, np.integer)):
        v = int(other)
        if v < 0:
            raise OverflowError(f"negative constant {v} in unsigned bit-vector arithmetic")
        if v >= 1 << bits:
            raise OverflowError(f"constant {v} does not fit in {bits}-bit bit-vectors")
        return z3.BitVecVal(v, bits)
    if isinstance(other, z3.ExprRef):
        return other
    return NotImplemented  # type: ignore[return-value]


class Sym:
    """A z3 expression (bit-vector or Boolean) with unsigned operator semantics."""

    __slots__ = ("e",)

    def __init__(self, e: z3.ExprRef) -> None:
        self.e = e

    # --- construction -------------------------------------------------------------------
    @staticmethod
    def var(name: str, bits: int = DEFAULT_BITS) -> Sym:
        return Sym(z3.BitVec(name, bits))

    @staticmethod
    def const(value: int, bits: int = DEFAULT_BITS) -> Sym:
        return Sym(_coerce(value, bits))

    @property
    def bits(self) -> int:
        return self.e.size() if z3.is_bv(self.e) else 1

    def _o(self, other: Any) -> z3.ExprRef:
        return _coerce(other, self.bits if z3.is_bv(self.e) else DEFAULT_BITS)

    # --- arithmetic ---------------------------------------------------------------------
    def __add__(self, o: Any) -> Sym:
        return Sym(self.e + self._o(o))

    __radd__ = __add__

    def __sub__(self, o: Any) -> Sym:
        return Sym(self.e - self._o(o))

    def __rsub__(self, o: Any) -> Sym:
        return Sym(self._o(o) - self.e)

    def __mul__(self, o: Any) -> Sym:
        return Sym(self.e * self._o(o))

    __rmul__ = __mul__

    def __floordiv__(self, o: Any) -> Sym:
        return Sym(z3.UDiv(self.e, self._o(o)))

    def __rfloordiv__(self, o: Any) -> Sym:
        return Sym(z3.UDiv(self._o(o), self.e))

    def __mod__(self, o: Any) -> Sym:
        return Sym(z3.URem(self.e, self._o(o)))

    def __rmod__(self, o: Any) -> Sym:
        return Sym(z3.URem(self._o(o), self.e))

    def __and__(self, o: Any) -> Sym:
        if z3.is_bool(self.e):
            return Sym(z3.And(self.e, self._o(o)))
        return Sym(self.e & self._o(o))

    __rand__ = __and__

    def __or__(self, o: Any) -> Sym:
        if z3.is_bool(self.e):
            return Sym(z3.Or(self.e, self._o(o)))
        return Sym(self.e | self._o(o))

    __ror__ = __or__

    def __xor__(self, o: Any) -> Sym:
        if z3.is_bool(self.e):
            return Sym(z3.Xor(self.e, self._o(o)))
        return Sym(self.e ^ self._o(o))

    __rxor__ = __xor__

    def __invert__(self) -> Sym:
        return Sym(z3.Not(self.e) if z3.is_bool(self.e) else ~self.e)

    def __rshift__(self, o: Any) -> Sym:
        return Sym(z3.LShR(self.e, self._o(o)))

    def __lshift__(self, o: Any) -> Sym:
        return Sym(self.e << self._o(o))

    # --- comparisons (unsigned) -----------------------------------------------------------
    def __lt__(self, o: Any) -> Sym:
        return Sym(z3.ULT(self.e, self._o(o)))

    def __le__(self, o: Any) -> Sym:
        return Sym(z3.ULE(self.e, self._o(o)))

    def __gt__(self, o: Any) -> Sym:
        return Sym(z3.UGT(self.e, self._o(o)))

    def __ge__(self, o: Any) -> Sym:
        return Sym(z3.UGE(self.e, self._o(o)))

    def __eq__(self, o: Any) -> Sym:  # type: ignore[override]
        return Sym(self.e == self._o(o))

    def __ne__(self, o: Any) -> Sym:  # type: ignore[override]
        return Sym(self.e != self._o(o))

    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        raise TypeError("a symbolic value has no truth value; use select() or a solver")

    def simplify(self) -> Sym:
        return Sym(z3.simplify(self.e))

    def as_int(self) -> int:
        """The value of a closed expression (raises if it still has free variables)."""
        v = z3.simplify(self.e)
        if z3.is_bv_value(v):
            return v.as_long()
        if z3.is_true(v):
            return 1
        if z3.is_false(v):
            return 0
        raise ValueError(f"expression is not constant: {v}")

    def __repr__(self) -> str:
        return f"Sym({self.e})"


Value = int | np.ndarray | Sym


def is_sym(x: Any) -> bool:
    return isinstance(x, Sym)


def select(cond: Any, a: Any, b: Any) -> Any:
    """``a if cond else b`` on any backend (elementwise for numpy, ``If`` for z3)."""
    if isinstance(cond, Sym) or isinstance(a, Sym) or isinstance(b, Sym):
        c = cond.e if isinstance(cond, Sym) else z3.BoolVal(bool(cond))
        bits = next(v.bits for v in (a, b, cond) if isinstance(v, Sym) and z3.is_bv(v.e)) \
            if any(isinstance(v, Sym) and z3.is_bv(v.e) for v in (a, b)) else DEFAULT_BITS
        return Sym(z3.If(c, _coerce(a, bits), _coerce(b, bits)))
    if isinstance(cond, np.ndarray) or isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.where(cond, a, b)
    return a if cond else b


def minimum(a: Any, b: Any) -> Any:
    """``min(a, b)`` on any backend (an interval hull for :class:`Interval` s)."""
    if isinstance(a, Interval) or isinstance(b, Interval):
        return Interval.hull_min(a, b)
    return select(a < b, a, b)


def maximum(a: Any, b: Any) -> Any:
    """``max(a, b)`` on any backend (an interval hull for :class:`Interval` s)."""
    if isinstance(a, Interval) or isinstance(b, Interval):
        return Interval.hull_max(a, b)
    return select(a < b, b, a)


def cxx_divmod(a: Any, b: int) -> tuple[Any, Any]:
    """``(a / b, a % b)`` with C++'s integer semantics: the quotient truncates toward zero and
    the remainder takes the sign of ``a``, on every backend.  ``b`` is a nonzero Python int
    (a shape product or a stride).

    Python's ``//`` and ``%`` floor instead; the two agree when ``a`` and ``b`` have the same
    sign.  CuTe's ``crd2idx`` and ``idx2crd`` divide with C++'s operators, so a negative index
    (or a negative stride in ``idx2crd``) takes this meaning: ``(4,8):(1,4)`` at ``-5`` is the
    coordinate ``(-1, -1)`` (``-5 % 4 == -1``, ``-5 / 4 == -1``), not ``(3, -2)``.

    Law: ``q * b + r == a``, ``|r| < |b|``, ``r == 0 or sign(r) == sign(a)`` for every integer
    ``a`` (numpy elementwise); :class:`Sym` values are unsigned, where the two meanings agree.
    """
    if isinstance(a, (np.ndarray, np.integer)):
        r = np.fmod(a, b)  # C's fmod: the remainder with the sign of the dividend
        return (a - r) // b, r  # exact division
    if isinstance(a, int):  # floor, then the correction (keeps Dyn and static zeros as they are)
        q, r = a // b, a % b
        if r != 0 and (a < 0) != (b < 0):
            return q + 1, r - b
        return q, r
    if isinstance(a, Interval):
        return a.cxx_div(b), a.cxx_mod(b)
    q, r = a // b, a % b  # Sym (unsigned) and constant affine forms
    if isinstance(a, Sym):
        return q, r
    neg = a < 0
    if isinstance(neg, (bool, np.bool_)) and neg != (b < 0) and bool(r > 0 if b > 0 else r < 0):
        return q + 1, r - b
    return q, r


def _trunc_div(a: int, b: int) -> int:
    return cxx_divmod(a, b)[0]  # type: ignore[no-any-return]


def bits_for(max_value: int) -> int:
    """Bit-vector width that holds every value in ``[0, max_value]`` plus one guard bit."""
    return max(8, int(max_value).bit_length() + 1)


class Interval:
    """``[lo, hi]``: the bounds backend of the evaluation core.  A layout (``crd2idx`` only
    uses ``+ * // %``) or a spec expression evaluated on intervals gives an interval containing
    every value it takes when each input ranges over its interval: the model bounds every tile
    coordinate and byte address this way before any array is allocated.

    Law: ``lo <= f(point) <= hi`` for every point inside the input intervals.
    """

    __slots__ = ("lo", "hi")

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = int(lo), int(hi)

    @staticmethod
    def lift(x: Any) -> Interval:
        return x if isinstance(x, Interval) else Interval(int(x), int(x))

    def __add__(self, o: Any) -> Interval:
        o = Interval.lift(o)
        return Interval(self.lo + o.lo, self.hi + o.hi)

    __radd__ = __add__

    def __sub__(self, o: Any) -> Interval:
        o = Interval.lift(o)
        return Interval(self.lo - o.hi, self.hi - o.lo)

    def __rsub__(self, o: Any) -> Interval:
        return Interval.lift(o) - self

    def __mul__(self, o: Any) -> Interval:
        o = Interval.lift(o)
        p = (self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi)
        return Interval(min(p), max(p))

    __rmul__ = __mul__

    def __floordiv__(self, o: Any) -> Interval:
        o = Interval.lift(o)
        if o.lo <= 0 <= o.hi:
            raise ZeroDivisionError("the divisor's range contains 0")
        p = (self.lo // o.lo, self.lo // o.hi, self.hi // o.lo, self.hi // o.hi)
        return Interval(min(p), max(p))

    def __rfloordiv__(self, o: Any) -> Interval:
        return Interval.lift(o) // self

    def __mod__(self, o: Any) -> Interval:
        o = Interval.lift(o)
        if o.lo <= 0 <= o.hi:
            raise ZeroDivisionError("the divisor's range contains 0")
        if o.lo > 0:
            if 0 <= self.lo and self.hi < o.lo:
                return Interval(self.lo, self.hi)
            return Interval(0, o.hi - 1)
        return Interval(o.lo + 1, 0)

    def __rmod__(self, o: Any) -> Interval:
        return Interval.lift(o) % self

    def cxx_div(self, b: int) -> Interval:
        """C++'s truncating ``/`` by a nonzero constant (monotone in the dividend)."""
        p = (_trunc_div(self.lo, b), _trunc_div(self.hi, b))
        return Interval(min(p), max(p))

    def cxx_mod(self, b: int) -> Interval:
        """C++'s ``%`` by a nonzero constant: the sign of the dividend, magnitude below ``|b|``."""
        m = abs(b)
        if 0 <= self.lo and self.hi < m:
            return Interval(self.lo, self.hi)
        if -m < self.lo and self.hi <= 0:
            return Interval(self.lo, self.hi)
        return Interval(max(min(self.lo, 0), 1 - m), min(max(self.hi, 0), m - 1))

    @staticmethod
    def hull_min(a: Any, b: Any) -> Interval:
        a, b = Interval.lift(a), Interval.lift(b)
        return Interval(min(a.lo, b.lo), min(a.hi, b.hi))

    @staticmethod
    def hull_max(a: Any, b: Any) -> Interval:
        a, b = Interval.lift(a), Interval.lift(b)
        return Interval(max(a.lo, b.lo), max(a.hi, b.hi))

    def __repr__(self) -> str:
        return f"[{self.lo}, {self.hi}]"
