"""CuTe hierarchical integer tuples (``cute/int_tuple.hpp``, ``cute/stride.hpp``).

An *IntTuple* is a Python ``int`` or a (possibly nested) ``tuple`` of IntTuples.  Strides
may also hold :class:`ScaledBasis` elements (``E<i>`` in CuTe), which make layouts whose
values are coordinates (identity layouts).  Coordinates are colexicographic: the left-most
mode varies fastest.

The functions :func:`crd2idx` and :func:`idx2crd` are part of the single evaluation core:
they use only ``+ * // %`` and therefore work unchanged on Python ints, numpy arrays and
:class:`threadmap.layout.backend.Sym` bit-vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from typing import Any, Union

import numpy as np

from threadmap.errors import LayoutError

IntTuple = Union[int, "ScaledBasis", tuple]


class Underscore:
    """CuTe's ``_``: keeps a mode when slicing, or means "all" in a tiler."""

    _inst: Underscore | None = None

    def __new__(cls) -> Underscore:
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self) -> str:
        return "_"


_ = Underscore()


# --------------------------------------------------------------------------- ScaledBasis
class ScaledBasis:
    """``value @ path``: the basis element ``E<path...>`` scaled by ``value`` (CuTe ScaledBasis).

    ``path`` lists mode indices from the outermost to the innermost.  It is printed as CuTe
    does, innermost first: ``E<0,1>`` scaled by 3 prints ``3@1@0``.
    Law: ``ScaledBasis(v, p) * k == ScaledBasis(v * k, p)``, and sums of bases with
    distinct paths form :class:`ArithTuple` coordinates.
    """

    __slots__ = ("value", "path")
    __array_ufunc__ = None  # numpy defers to our reflected operators (array + E -> E.__radd__)

    def __init__(self, value: Any, path: tuple[int, ...]) -> None:
        self.value = value
        self.path = tuple(path)

    def __mul__(self, k: Any) -> ScaledBasis:
        if isinstance(k, ScaledBasis):
            raise LayoutError("cannot multiply two basis elements")
        return ScaledBasis(self.value * k, self.path)

    __rmul__ = __mul__

    def __floordiv__(self, k: int) -> ScaledBasis:
        return ScaledBasis(self.value // k, self.path)

    def __add__(self, o: Any) -> Any:
        return ArithTuple.of(self) + o

    __radd__ = __add__

    def __eq__(self, o: object) -> bool:
        return isinstance(o, ScaledBasis) and o.path == self.path and _eq_val(o.value, self.value)

    def __hash__(self) -> int:
        return hash(("E", self.path, self.value if isinstance(self.value, int) else id(self)))

    def __repr__(self) -> str:
        return str(self.value) + "".join(f"@{i}" for i in reversed(self.path))


def _eq_val(a: Any, b: Any) -> bool:
    r = a == b
    return bool(np.all(r)) if isinstance(r, np.ndarray) else bool(r)


class ArithTuple:
    """A coordinate produced by an identity layout: a sparse map path -> value.

    ``to_tuple(profile)`` expands it to a nested tuple congruent with ``profile``.
    """

    __slots__ = ("terms",)
    __array_ufunc__ = None  # numpy defers to our reflected operators

    def __init__(self, terms: dict[tuple[int, ...], Any]) -> None:
        self.terms = terms

    @staticmethod
    def of(x: Any) -> ArithTuple:
        if isinstance(x, ArithTuple):
            return x
        if isinstance(x, ScaledBasis):
            return ArithTuple({x.path: x.value})
        return ArithTuple({(): x})

    def __add__(self, o: Any) -> ArithTuple:
        terms = dict(self.terms)
        for p, v in ArithTuple.of(o).terms.items():
            terms[p] = terms[p] + v if p in terms else v
        return ArithTuple(terms)

    __radd__ = __add__

    def __getitem__(self, i: int) -> Any:
        """Component along basis path ``(i,)`` (or the sum of deeper paths under it)."""
        return self.get((i,))

    def get(self, path: tuple[int, ...]) -> Any:
        acc: Any = 0
        for p, v in self.terms.items():
            if p[: len(path)] == tuple(path):
                acc = acc + v
        return acc

    def to_tuple(self, profile: Any) -> Any:
        def rec(prof: Any, path: tuple[int, ...]) -> Any:
            if isinstance(prof, tuple):
                return tuple(rec(s, path + (i,)) for i, s in enumerate(prof))
            return self.terms.get(path, 0)

        return rec(profile, ())

    def __repr__(self) -> str:
        return f"ArithTuple({self.terms})"


# --------------------------------------------------------------------------- predicates
def is_tuple(x: Any) -> bool:
    return isinstance(x, tuple)


def is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def is_integral(x: Any) -> bool:
    return not isinstance(x, tuple)


# --------------------------------------------------------------------------- basic algebra
def rank(t: IntTuple) -> int:
    """Number of top-level modes (1 for an integer)."""
    return len(t) if isinstance(t, tuple) else 1


def depth(t: IntTuple) -> int:
    """Nesting depth: 0 for an integer, 1 + max depth of the modes for a tuple."""
    if isinstance(t, tuple):
        return 1 + max((depth(x) for x in t), default=0)
    return 0


def flatten(t: IntTuple) -> IntTuple:
    """Flatten to a depth-<=1 tuple (an integer stays an integer)."""
    if isinstance(t, tuple):
        return tuple(x for m in t for x in (flatten(m) if isinstance(m, tuple) else (m,)))
    return t


def flatten_to_tuple(t: IntTuple) -> tuple:
    f = flatten(t)
    return f if isinstance(f, tuple) else (f,)


def product(t: IntTuple) -> int:
    """Product of all leaves (1 for the empty tuple)."""
    if isinstance(t, tuple):
        return reduce(lambda a, b: a * b, (product(x) for x in t), 1)
    return t  # type: ignore[return-value]


size = product


def product_each(t: IntTuple) -> tuple:
    """Product of each top-level mode; an integer is wrapped first (``product_each(12) ==
    (12,)``), as ``transform(wrap(t), product)`` does in the header."""
    return tuple(product(x) for x in wrap(t))


def sum_(t: IntTuple) -> int:
    if isinstance(t, tuple):
        return sum(sum_(x) for x in t)
    return t  # type: ignore[return-value]


def unwrap(t: IntTuple) -> IntTuple:
    """Remove singleton tuple wrappers: ``((4),)`` -> ``4``."""
    while isinstance(t, tuple) and len(t) == 1:
        t = t[0]
    return t


def wrap(t: IntTuple) -> tuple:
    return t if isinstance(t, tuple) else (t,)


def transform_leaf(t: IntTuple, f: Callable[[Any], Any]) -> IntTuple:
    if isinstance(t, tuple):
        return tuple(transform_leaf(x, f) for x in t)
    return f(t)


def congruent(a: Any, b: Any) -> bool:
    """Same tree structure (profile)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))
    return not isinstance(a, tuple) and not isinstance(b, tuple)


def weakly_congruent(a: Any, b: Any) -> bool:
    """``a`` is a coarsening of ``b``: where ``a`` has a leaf, ``b`` may have a subtree."""
    if not isinstance(a, tuple):
        return True
    if not isinstance(b, tuple):
        return False
    return len(a) == len(b) and all(weakly_congruent(x, y) for x, y in zip(a, b))


def repeat_like(t: Any, x: Any) -> Any:
    return tuple(repeat_like(m, x) for m in t) if isinstance(t, tuple) else x


def ceil_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """CuTe ``ceil_div``: elementwise for tuple/tuple (missing modes of ``b`` are 1); for
    tuple/int the divisor is consumed mode by mode from the left."""
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(a) < len(b):
                raise LayoutError(f"ceil_div: rank of {b} exceeds rank of {a}")
            bb = b + (1,) * (len(a) - len(b))
            return tuple(ceil_div(x, y) for x, y in zip(a, bb))
        out = []
        rest: IntTuple = b
        for ai in a:
            out.append(ceil_div(ai, rest))
            rest = ceil_div(rest, ai)
        return tuple(out)
    if isinstance(b, tuple):
        return ceil_div(a, product(b))
    return (a + b - 1) // b  # type: ignore[operator]


def shape_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """CuTe ``shape_div``: like ``ceil_div`` but requires ``a | b`` or ``b | a`` at the leaves."""
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(a) != len(b):
                raise LayoutError(f"shape_div: mismatched ranks {a} and {b}")
            return tuple(shape_div(x, y) for x, y in zip(a, b))
        out = []
        rest: IntTuple = b
        for ai in a:
            out.append(shape_div(ai, rest))
            rest = shape_div(rest, ai)
        return tuple(out)
    if isinstance(b, tuple):
        return shape_div(a, product(b))
    if a % b != 0 and b % a != 0:  # type: ignore[operator]
        raise LayoutError(f"Divisibility Condition: neither {a} nor {b} divides the other")
    return (a + b - 1) // b  # type: ignore[operator]


def prefix_product(t: IntTuple, init: Any = 1) -> IntTuple:
    """Exclusive prefix product of the leaves (colexicographic), ``init`` first."""
    if isinstance(t, tuple):
        out = []
        cur = init
        for m in t:
            out.append(prefix_product(m, cur))
            cur = cur * product(m)
        return tuple(out)
    return init


def compact_major_left(shape: IntTuple, current: Any = 1) -> IntTuple:
    """``compact_major<LayoutLeft>``: column-major (GenColMajor) strides.

    As in the header, a static extent-1 mode gets stride 0 (``Layout<_1>`` is ``_1:_0``).
    """
    if isinstance(shape, tuple):
        out = []
        cur = current
        for m in shape:
            out.append(compact_major_left(m, cur))
            cur = cur * product(m)
        return tuple(out)
    return 0 if shape == 1 else current


def compact_major_right(shape: IntTuple, current: Any = 1) -> IntTuple:
    """``compact_major<LayoutRight>``: row-major (GenRowMajor) strides, right-most fastest
    at every level of the hierarchy; extent-1 modes get stride 0."""
    if isinstance(shape, tuple):
        out: list[Any] = [None] * len(shape)
        cur = current
        for i in range(len(shape) - 1, -1, -1):
            out[i] = compact_major_right(shape[i], cur)
            cur = cur * product(shape[i])
        return tuple(out)
    return 0 if shape == 1 else current


def make_basis_like(shape: IntTuple, path: tuple[int, ...] = ()) -> IntTuple:
    """Strides of an identity layout: ``E<path..., i>`` for every leaf."""
    if isinstance(shape, tuple):
        return tuple(make_basis_like(s, path + (i,)) for i, s in enumerate(shape))
    return ScaledBasis(1, path)


def elem_scale(a: IntTuple, b: IntTuple) -> IntTuple:
    if isinstance(a, tuple):
        return tuple(elem_scale(x, y) for x, y in zip(a, b))  # type: ignore[arg-type]
    return a * product(b)  # type: ignore[operator]


# --------------------------------------------------------------------------- evaluation core
def crd2idx(crd: Any, shape: IntTuple, stride: IntTuple) -> Any:
    """Index of a coordinate: ``sum_k crd_k * stride_k``.

    An integral ``crd`` into a tuple shape is split colexicographically: ``crd % prod(s0)``
    goes to mode 0 and ``crd // prod(s0)`` to the rest; the last mode takes the remainder
    without a modulus, as CuTe does.  Works on ints, numpy arrays and ``Sym``.
    """
    if isinstance(crd, tuple):
        if not isinstance(shape, tuple) or len(crd) != len(shape):
            raise LayoutError(f"coordinate {crd} does not match shape {shape}")
        acc: Any = 0
        for c, s, d in zip(crd, shape, stride):  # type: ignore[arg-type]
            acc = acc + crd2idx(c, s, d)
        return acc
    if isinstance(shape, tuple):
        if len(shape) == 0:
            return 0
        acc = 0
        rest = crd
        for i, (s, d) in enumerate(zip(shape, stride)):  # type: ignore[arg-type]
            if i == len(shape) - 1:
                acc = acc + crd2idx(rest, s, d)
            else:
                p = product(s)
                acc = acc + crd2idx(rest % p, s, d)
                rest = rest // p
        return acc
    if isinstance(stride, ScaledBasis):
        return stride * crd
    return crd * stride


def idx2crd(idx: Any, shape: IntTuple) -> Any:
    """Colexicographic coordinate of a 1-D index: ``c_k = (idx // prod(s_<k)) % s_k``.

    As in CuTe, the last mode takes the quotient without a modulus, so that
    ``crd2idx(idx2crd(i, s), s, compact_major_left(s)) == i`` for every ``i >= 0``.
    """
    if isinstance(idx, tuple):
        return tuple(idx2crd(i, s) for i, s in zip(idx, shape))  # type: ignore[arg-type]
    if isinstance(shape, tuple):
        out = []
        rest = idx
        for k, s in enumerate(shape):
            p = product(s)
            if k == len(shape) - 1:
                out.append(idx2crd(rest, s))
            else:
                out.append(idx2crd(rest % p, s))
                rest = rest // p
        return tuple(out)
    return idx
