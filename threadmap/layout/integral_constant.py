"""Static and dynamic integers (``cute/numeric/integral_constant.hpp``).

CuTe distinguishes *static* integers (``Int<4>``, printed ``_4``) from *dynamic* ones (a C++
``int``, printed ``4``).  Several algorithms take different branches on the two: a dynamic
extent 1 is not dropped by ``coalesce``, modes are merged only when the test is a static
``true``, ``right_inverse`` only follows static strides, ``left_inverse`` rejects dynamic
strides.

threadmap's convention: a plain Python ``int`` is static (``Int<N>``).  A :class:`Dyn` (an
``int`` subclass) is a dynamic value.  Arithmetic follows the header: static op static is
static, anything with a dynamic operand is dynamic, except the header's mixed special cases
(``_0 * d == _0``, ``d * _0 == _0``, ``_0 / d == _0``, ``_0 % d == _0``, ``d % _1 == _0``,
``_0 & d == _0``).  :func:`threadmap.layout.parse.parse_layout` with ``dynamic=True`` reads
unprefixed integers as dynamic (``(_4,8)`` is ``(Int<4>, int)``), as CuTe prints them.
"""

from __future__ import annotations

from typing import Any


def _dyn(x: Any) -> Any:
    return Dyn(x) if type(x) is int else x


def _is_zero_static(x: Any) -> bool:
    return type(x) is int and x == 0


class Dyn(int):
    """A dynamic integer (C++ ``int``): prints ``4`` where a static one prints ``_4``.

    Law: ``int(Dyn(n) op m) == n op m`` for every operator; the result is ``Dyn`` unless the
    header returns a static ``_0`` for the operand pair.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Dyn({int(self)})"

    def __add__(self, o: Any) -> Any:
        return _dyn(int.__add__(self, o))

    def __radd__(self, o: Any) -> Any:
        return _dyn(int.__radd__(self, o))

    def __sub__(self, o: Any) -> Any:
        return _dyn(int.__sub__(self, o))

    def __rsub__(self, o: Any) -> Any:
        return _dyn(int.__rsub__(self, o))

    def __mul__(self, o: Any) -> Any:
        if _is_zero_static(o):
            return 0
        return _dyn(int.__mul__(self, o))

    def __rmul__(self, o: Any) -> Any:
        if _is_zero_static(o):
            return 0
        return _dyn(int.__rmul__(self, o))

    def __floordiv__(self, o: Any) -> Any:
        return _dyn(int.__floordiv__(self, o))

    def __rfloordiv__(self, o: Any) -> Any:
        if _is_zero_static(o):
            return 0
        return _dyn(int.__rfloordiv__(self, o))

    def __mod__(self, o: Any) -> Any:
        if type(o) is int and o in (1, -1):
            return 0
        return _dyn(int.__mod__(self, o))

    def __rmod__(self, o: Any) -> Any:
        if _is_zero_static(o):
            return 0
        return _dyn(int.__rmod__(self, o))

    def __and__(self, o: Any) -> Any:
        if _is_zero_static(o):
            return 0
        return _dyn(int.__and__(self, o))

    __rand__ = __and__

    def __or__(self, o: Any) -> Any:
        return _dyn(int.__or__(self, o))

    __ror__ = __or__

    def __xor__(self, o: Any) -> Any:
        return _dyn(int.__xor__(self, o))

    __rxor__ = __xor__

    def __lshift__(self, o: Any) -> Any:
        return _dyn(int.__lshift__(self, o))

    def __rshift__(self, o: Any) -> Any:
        return _dyn(int.__rshift__(self, o))

    def __neg__(self) -> Any:
        return Dyn(-int(self))

    def __abs__(self) -> Any:
        return Dyn(abs(int(self)))

    def __pos__(self) -> Any:
        return self


def is_static(x: Any) -> bool:
    """``is_static<T>``: no :class:`Dyn` anywhere in ``x`` (an int tuple or a value)."""
    stack = [x]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(v)
        elif isinstance(v, Dyn):
            return False
    return True


def is_constant(value: int, x: Any) -> bool:
    """``is_constant<value, T>``: ``x`` is a static integer equal to ``value``."""
    return type(x) is int and x == value


def as_dynamic(t: Any) -> Any:
    """Every integer leaf of ``t`` made dynamic (other leaves unchanged)."""
    if isinstance(t, tuple):
        return tuple(as_dynamic(x) for x in t)
    return Dyn(t) if type(t) is int else t


def as_static(t: Any) -> Any:
    """Every :class:`Dyn` leaf of ``t`` made a plain (static) ``int``."""
    if isinstance(t, tuple):
        return tuple(as_static(x) for x in t)
    return int(t) if isinstance(t, Dyn) else t


def static_str(x: int) -> str:
    """``_4`` for a static integer, ``4`` for a dynamic one (CuTe's ``print``)."""
    return str(int(x)) if isinstance(x, Dyn) else f"_{int(x)}"
