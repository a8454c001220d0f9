"""CuTe tensors with counting engines (``cute/tensor_impl.hpp``): a layout (plain or
composed) plus a base offset, and the partitioning functions ``local_tile``,
``local_partition``, ``inner_partition``, ``outer_partition``.

``offset`` is an integer (a pointer offset in elements) or an :class:`ArithTuple` coordinate
for identity tensors; ``tensor(c) == offset + layout(c)``.  Slicing with ``_`` returns a
Tensor whose offset advanced by the fixed coordinates, as CuTe advances the data pointer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from threadmap.errors import LayoutError
from threadmap.layout.arithmetic_tuple import ArithTuple, ScaledBasis
from threadmap.layout.dispatch import LayoutLike
from threadmap.layout.int_tuple import IntTuple, product_each
from threadmap.layout.layout import (
    Layout,
    add_offsets,
    cosize,
    depth,
    dice,
    make_identity_layout,
    normalize_coord,
    normalize_int_tuple,
    rank,
    size,
    slice_and_offset,
    zipped_divide,
)
from threadmap.layout.pointer_flagged import SmemPtrFlag
from threadmap.layout.underscore import _, has_underscore, repeat_underscore

__all__ = ["Tensor", "make_tensor", "make_identity_tensor", "local_tile", "local_partition",
           "inner_partition", "outer_partition"]


def _is_layout(x: Any) -> bool:
    return isinstance(x, (Layout, LayoutLike)) and not isinstance(x, Tensor)


class Tensor(LayoutLike):
    """A layout with a base offset: CuTe's ``Tensor`` with a counting engine.

    Law: ``T(c) == offset + layout(c)``; ``size/rank/depth/shape/cosize`` are the layout's.
    """

    __slots__ = ("layout", "offset")

    def __init__(self, layout: Any, offset: Any = 0) -> None:
        if not _is_layout(layout):
            raise LayoutError(f"a Tensor needs a layout, got {type(layout).__name__} {layout!r}")
        if isinstance(offset, bool) or not isinstance(offset, (int, np.integer, ArithTuple,
                                                               ScaledBasis)):
            raise LayoutError(f"a Tensor offset must be an integer or a coordinate, got {offset!r}")
        if isinstance(getattr(layout, "offset", None), SmemPtrFlag):
            # pointer_flagged.hpp: make_tensor(iter, Sw o smem_ptr_flag o L) needs an smem
            # pointer of the flag's width, not a counting iterator
            raise LayoutError(f"make_tensor of {layout}: Expected smem (the layout's offset "
                              "is smem_ptr_flag_bits; a counting tensor cannot carry it)")
        self.layout = layout
        self.offset = int(offset) if isinstance(offset, np.integer) else offset

    @property
    def shape(self) -> IntTuple:
        return self.layout.shape

    @property
    def stride(self) -> IntTuple:
        return self.layout.stride

    def size(self) -> Any:
        return size(self.layout)

    def rank(self) -> int:
        return rank(self.layout)

    def depth(self) -> int:
        return depth(self.layout)

    def cosize(self) -> Any:
        return cosize(self.layout)

    def __call__(self, *crd: Any) -> Any:
        c: Any = crd[0] if len(crd) == 1 else tuple(crd)
        c = normalize_coord(c)
        if has_underscore(c):
            sub, off = slice_and_offset(c, self.layout)
            return Tensor(sub, add_offsets(self.offset, off))
        return add_offsets(self.offset, self.layout(c))

    def __getitem__(self, crd: Any) -> Any:
        return self(crd)

    def __iter__(self):  # type: ignore[no-untyped-def]
        # the values in index order (without this, Python would iterate through __getitem__
        # forever: every integer is a valid 1-D coordinate)
        return (self(i) for i in range(int(size(self.layout))))

    def __len__(self) -> int:
        return int(size(self.layout))

    def __str__(self) -> str:
        return f"{self.offset} o {self.layout}"

    __repr__ = __str__

    def values(self) -> np.ndarray:
        """Integer tensors: ``offset + layout(i)`` for every ``i`` in ``[0, size)``."""
        if not isinstance(self.offset, int):
            raise LayoutError("values() needs an integer offset")
        return self.layout.table(np.int64) + int(self.offset)


def make_tensor(offset: Any, layout: Any) -> Tensor:
    """``make_tensor(counting_iterator(offset), layout)``; ``layout`` may be composed."""
    return Tensor(layout, offset)


def make_identity_tensor(shp: IntTuple) -> Tensor:
    """Tensor whose value at each coordinate is the coordinate itself (for predicates)."""
    return Tensor(make_identity_layout(shp), ArithTuple({}))


def _as_tensor(t: Any) -> Tensor:
    if isinstance(t, Tensor):
        return t
    return Tensor(t, 0)


def _zipped_divide_tensor(t: Tensor, tiler: Any) -> Tensor:
    return Tensor(zipped_divide(t.layout, tiler), t.offset)


def inner_partition(tensor: Any, tiler: Any, coord: Any) -> Tensor:
    """Tile by ``tiler`` and index the *rest* mode with ``coord``, keeping the tile."""
    t = _zipped_divide_tensor(_as_tensor(tensor), tiler)
    c0 = repeat_underscore(rank(t.layout[0]))
    coord = normalize_coord(coord)
    if isinstance(coord, tuple):
        r1 = rank(t.layout[1])
        coord = coord + (_,) * (r1 - len(coord))
    return t(c0, coord)  # type: ignore[no-any-return]


def outer_partition(tensor: Any, tiler: Any, coord: Any) -> Tensor:
    """Tile by ``tiler`` and index the *tile* mode with ``coord``, keeping the rest."""
    t = _zipped_divide_tensor(_as_tensor(tensor), tiler)
    c1 = repeat_underscore(rank(t.layout[1]))
    coord = normalize_coord(coord)
    if isinstance(coord, tuple):
        r0 = rank(t.layout[0])
        coord = coord + (_,) * (r0 - len(coord))
    return t(coord, c1)  # type: ignore[no-any-return]


def local_tile(tensor: Any, tiler: Any, coord: Any, proj: Any = None) -> Tensor:
    """CTA-level tiling: the tile of ``tensor`` at ``coord`` (``proj``: a Step, with ``_``
    for X, selecting which modes of tiler and coord apply)."""
    tiler = normalize_int_tuple(tiler) if not isinstance(tiler, Layout) else tiler
    if proj is not None:
        tiler = dice(proj, tiler)
        coord = dice(proj, normalize_coord(coord))
    return inner_partition(tensor, tiler, coord)


def local_partition(tensor: Any, tile: Layout, index: Any, proj: Any = None) -> Tensor:
    """Thread-level partition: the elements owned by thread ``index`` of the thread layout
    ``tile`` (``outer_partition`` by ``product_each(shape(tile))`` at ``get_flat_coord``)."""
    if not isinstance(tile, Layout):
        raise LayoutError(f"local_partition: the thread layout must be a Layout, got {tile!r}")
    if proj is not None:
        tile = dice(proj, tile)
    return outer_partition(tensor, product_each(tile.shape), tile.get_flat_coord(index))
