"""Helpers shared by :mod:`~threadmap.layout.atom.copy_atom` and
:mod:`~threadmap.layout.atom.mma_atom`: CuTe's ``tensor.compose(...)``, ``zipped_divide`` and
slicing applied alike to a Layout or a Tensor (a Tensor keeps its offset, as CuTe keeps the
data pointer), and ``make_layout(shape)`` with CuTe's compact strides.
"""

from __future__ import annotations

from typing import Any

from threadmap.errors import AtomError, LayoutError
from threadmap.layout.int_tuple import product
from threadmap.layout.layout import Layout, composition, logical_divide, size, zipped_divide
from threadmap.layout.tensor import Tensor


def make_compact_layout(shape: Any) -> Layout:
    """CuTe ``make_layout(shape)``: column-major (``compact_major<LayoutLeft>``), where a
    size-1 mode gets stride 0, as the header's ``detail::compact`` does for static ``_1``."""
    return Layout(shape)


def as_tile_mode(t: Any) -> Any:
    """A tiler mode as CuTe applies it: an integer ``n`` is ``make_layout(n)``."""
    if isinstance(t, bool):
        raise AtomError(f"bad tiler mode {t!r}")
    if isinstance(t, int):
        return make_compact_layout(t)
    if isinstance(t, tuple):
        return tuple(as_tile_mode(x) for x in t)
    return t


def layout_of(x: Any) -> Layout:
    return x.layout if isinstance(x, Tensor) else x


def rewrap(x: Any, layout: Layout) -> Any:
    """A Tensor with ``x``'s offset when ``x`` is a Tensor, else the layout."""
    return Tensor(layout, x.offset) if isinstance(x, Tensor) else layout


def slice_like(x: Any, crd: Any) -> Any:
    """``x(crd)`` with ``_`` in ``crd`` (CuTe slicing); a Tensor's offset advances by the
    offset of the fixed coordinates, as CuTe advances the data pointer."""
    return x(crd)


def compose_like(x: Any, *tilers: Any) -> Any:
    """``x.compose(t0, t1, ...)`` = ``composition(x, make_tile(t0, t1, ...))`` (Layout or Tensor)."""
    lay = layout_of(x)
    tiler = tilers[0] if len(tilers) == 1 else tuple(tilers)
    return rewrap(x, composition(lay, tiler))


def zipped_divide_like(x: Any, tiler: Any) -> Any:
    return rewrap(x, zipped_divide(layout_of(x), as_tile_mode(tiler)))


def logical_divide_like(x: Any, tiler: Any) -> Any:
    return rewrap(x, logical_divide(layout_of(x), as_tile_mode(tiler)))


def zip_layout(layout: Layout) -> Layout:
    """``zip(layout)``: ``((a,b),(c,d))`` -> ``((a,c),(b,d))`` (transpose of a rank-2 of rank-2)."""
    def z(t: Any) -> Any:
        if isinstance(t, tuple):
            if t and isinstance(t[0], tuple):
                n = len(t[0])
                if any(not isinstance(m, tuple) or len(m) != n for m in t):
                    raise LayoutError(f"zip: mismatched ranks in {t}")
                return tuple(tuple(m[j] for m in t) for j in range(n))
            return (t,)
        return t
    return Layout(z(layout.shape), z(layout.stride))



def shape_of(x: Any) -> Any:
    if isinstance(x, (Layout, Tensor)):
        return x.shape
    if isinstance(x, tuple):
        return tuple(shape_of(t) for t in x)
    return x


def size_of(x: Any) -> int:
    if isinstance(x, (Layout, Tensor)):
        return size(layout_of(x))
    return product(shape_of(x))


def tiler_str(t: Any) -> str:
    if isinstance(t, tuple):
        return "(" + ",".join(tiler_str(x) for x in t) + ")"
    return str(t)
