"""CuTe's arithmetic tuples (``cute/numeric/arithmetic_tuple.hpp``): :class:`ScaledBasis`
(``E<i...>`` scaled by a value, the strides of identity layouts) and :class:`ArithTuple`
(the coordinates such layouts produce).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from threadmap.errors import LayoutError
from threadmap.layout.integral_constant import static_str
from threadmap.layout.nesting import IntTuple, check_depth


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
        if not isinstance(path, (tuple, list)) or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 64 for i in path):
            raise LayoutError(f"a basis path is a tuple of mode indices, got {path!r}")
        if isinstance(value, (bool, float, str)) or value is None or isinstance(value, (tuple, list)):
            raise LayoutError(f"a basis element is scaled by an integer, got {value!r}")
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

    def as_tuple(self) -> Any:
        """``as_arithmetic_tuple``: the coordinate as a (nested) tuple, index ``i`` holding
        the sum of the terms under path ``(i, ...)``; a lone integral term is returned as is."""
        terms = {p: v for p, v in self.terms.items() if p or not (type(v) is int and v == 0)}
        if set(terms) <= {()}:
            return terms.get((), 0)

        def tree(ts: dict[tuple[int, ...], Any], k: int) -> Any:
            groups: dict[int, dict[tuple[int, ...], Any]] = {}
            acc: Any = 0
            for p, v in ts.items():
                if len(p) > k:
                    groups.setdefault(p[k], {})[p] = v
                else:
                    acc = acc + v
            if not groups:
                return acc
            return tuple(tree(groups[i], k + 1) if i in groups else 0
                         for i in range(max(groups) + 1))

        return tree(terms, 0)

    def to_str(self, static: bool = False) -> str:
        """As CuTe prints an ArithmeticTuple: ``(_0,1)``."""
        return tuple_str(self.as_tuple(), static)

    def __str__(self) -> str:
        return self.to_str()

    def __repr__(self) -> str:
        return f"ArithTuple({self.terms})"




def make_basis_like(shape: IntTuple, path: tuple[int, ...] = ()) -> IntTuple:
    """Strides of an identity layout: ``E<path..., i>`` for every leaf."""
    check_depth(shape)
    if not isinstance(path, (tuple, list)) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 64 for i in path):
        raise LayoutError(f"make_basis_like: a basis path is a tuple of mode indices, got {path!r}")

    def rec(s: Any, p: tuple[int, ...]) -> Any:
        if isinstance(s, tuple):
            return tuple(rec(x, p + (i,)) for i, x in enumerate(s))
        return ScaledBasis(1, p)

    return rec(shape, tuple(path))


def tuple_str(t: Any, static: bool = False) -> str:
    """CuTe's ``print`` of an int tuple: ``(4,(2,3))``; ``static`` prints CuTe's ``_`` for
    static integers (a :class:`~threadmap.layout.integral_constant.Dyn` prints bare); a basis
    stride prints as ``1@0``."""
    if isinstance(t, tuple):
        return "(" + ",".join(tuple_str(x, static) for x in t) + ")"
    if isinstance(t, ScaledBasis):
        return tuple_str(t.value, static) + "".join(f"@{i}" for i in reversed(t.path))
    if static and isinstance(t, (int, np.integer)) and not isinstance(t, bool):
        return static_str(t if isinstance(t, int) else int(t))
    return str(t)
