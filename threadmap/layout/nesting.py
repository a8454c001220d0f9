"""The nesting bound every int tuple, coordinate and layout obeys: the lowest module of
``threadmap.layout`` (below ``arithmetic_tuple`` and ``int_tuple``, which both check it)."""

from __future__ import annotations

from typing import Any

from threadmap.errors import LayoutError

__all__ = ["MAX_DEPTH", "IntTuple", "check_depth"]

IntTuple = Any  # int | tuple of IntTuples (strides may hold ScaledBasis)

#: deepest nesting any int tuple / layout may have
MAX_DEPTH = 64


def check_depth(t: Any, what: str = "int tuple") -> None:
    """Raise LayoutError when ``t`` nests deeper than :data:`MAX_DEPTH` (iterative walk)."""
    if not isinstance(t, tuple):
        return
    stack: list[tuple[Any, int]] = [(t, 1)]
    while stack:
        x, d = stack.pop()
        if d > MAX_DEPTH:
            raise LayoutError(f"{what} nested deeper than {MAX_DEPTH} levels")
        stack.extend((y, d + 1) for y in x if isinstance(y, tuple))
