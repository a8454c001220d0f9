"""CuTe's ``_`` (``cute/underscore.hpp``): the wildcard of slicing and tiling.

``slice(c, t)`` keeps the modes of ``t`` where the coordinate ``c`` has ``_``; ``dice(c, t)``
keeps the others.  Both splice nested tuples into one flat tuple, as the header does.
"""

from __future__ import annotations

from typing import Any

from threadmap.errors import LayoutError


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


def repeat_underscore(n: int) -> Any:
    """CuTe ``repeat<n>(_)``: a bare ``_`` for ``n == 1``, else a tuple of ``n`` of them."""
    return _ if n == 1 else (_,) * n


def has_underscore(c: Any) -> bool:
    """Whether the coordinate ``c`` contains ``_`` anywhere (iteratively: no recursion limit)."""
    stack = [c]
    while stack:
        x = stack.pop()
        if isinstance(x, Underscore):
            return True
        if isinstance(x, (tuple, list)):
            stack.extend(x)
    return False


def _lift(c: Any, t: Any, keep_underscore: bool, what: str) -> tuple:
    out: list[Any] = []
    stack = [(c, t)]
    while stack:
        ci, ti = stack.pop()
        if isinstance(ci, tuple):
            if not isinstance(ti, tuple) or len(ci) != len(ti):
                raise LayoutError(f"{what}: coordinate {ci} does not match {ti}")
            stack.extend(reversed(list(zip(ci, ti))))
        elif isinstance(ci, Underscore) == keep_underscore:
            out.append(ti)
    return tuple(out)


def slice_tuple(c: Any, t: Any) -> Any:
    """CuTe ``slice(c, t)`` on an int tuple: the leaves/modes of ``t`` under ``_`` of ``c``."""
    if isinstance(c, tuple):
        return _lift(c, t, True, "slice")
    if isinstance(c, Underscore):
        return t
    return ()


def dice_tuple(c: Any, t: Any) -> Any:
    """CuTe ``dice(c, t)`` on an int tuple: the modes of ``t`` *not* under ``_`` of ``c``."""
    if isinstance(c, tuple):
        return _lift(c, t, False, "dice")
    if isinstance(c, Underscore):
        return ()
    return t
