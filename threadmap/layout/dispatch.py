"""How the algebra's free functions reach the functions that are not plain Layouts.

CuTe overloads each free function (``size``, ``composition``, ``logical_divide``, ...) for
``ComposedLayout`` and ``Swizzle`` in their own headers (``layout_composed.hpp``,
``swizzle_layout.hpp``).  threadmap defines each free function once, in
:mod:`threadmap.layout.layout`, for Layouts; an argument that is a :class:`LayoutLike` is
routed to its method of the same name.  So ``layout.py`` never imports the swizzle or
composed-layout modules (no import cycle), and an operation that CuTe does not define for
an object (no such method) raises :class:`~threadmap.errors.LayoutError`.

Operations whose *second* argument decides the overload (``composition(Layout,
ComposedLayout)``, ``logical_product(Layout, ComposedLayout)``,
``max_common_vector(Layout, ComposedLayout)``) call the method ``r_<name>`` of that argument.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from threadmap.errors import LayoutError


class LayoutLike:
    """Base of the non-Layout functions the free functions dispatch to (ComposedLayout,
    Swizzle).  A subclass implements the operations CuTe defines for it as methods named
    after the free function; ``CUTE_OVERLOADS``, when set, limits the free functions that
    reach it (a Swizzle has pycute's ``size()`` method, but CuTe has no ``size(Swizzle)``)."""

    __slots__ = ()
    CUTE_OVERLOADS: frozenset[str] | None = None


def call_method(x: LayoutLike, name: str, *args: Any, **kw: Any) -> Any:
    """``x.name(*args)``, or LayoutError when CuTe has no such overload for ``x``."""
    allowed = getattr(type(x), "CUTE_OVERLOADS", None)
    if allowed is not None and name not in allowed:
        raise LayoutError(f"{name} is not defined for a {type(x).__name__} in CuTe ({x})")
    m = getattr(x, name, None)
    if m is not None and not callable(m) and not args and not kw:
        return m  # an accessor stored as a property (shape)
    if m is None or not callable(m):
        raise LayoutError(f"{name} is not defined for a {type(x).__name__} in CuTe ({x})")
    return m(*args, **kw)


def dispatch(name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: when the first argument is a :class:`LayoutLike`, call its method
    ``name`` (default: the function's name) with the remaining arguments instead."""
    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        method = name or f.__name__

        @functools.wraps(f)
        def g(x: Any, *args: Any, **kw: Any) -> Any:
            if isinstance(x, LayoutLike):
                return call_method(x, method, *args, **kw)
            return f(x, *args, **kw)
        return g
    return deco


# Overloads that live in a later header (``swizzle_layout.hpp`` adds the swizzle-specific
# versions of ComposedLayout operations).  The module defining them registers them here at
# import; ``threadmap.layout/__init__.py`` imports every module, and Python runs it before
# any submodule, so the registry is complete whenever an operation runs.
_OVERLOADS: dict[tuple[str, type], Callable[..., Any]] = {}


def register_overload(name: str, typ: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``f`` as the overload of operation ``name`` for objects of type ``typ``."""
    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        _OVERLOADS[(name, typ)] = f
        return f
    return deco


def find_overload(name: str, obj: Any) -> Callable[..., Any] | None:
    """The overload of ``name`` registered for ``type(obj)`` (or a base), or None."""
    for t in type(obj).__mro__:
        f = _OVERLOADS.get((name, t))
        if f is not None:
            return f
    return None
