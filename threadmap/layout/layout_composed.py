"""CuTe composed layouts (``cute/layout_composed.hpp``): ``ComposedLayout<A, O, B>``, the
function ``c -> A(O + B(c))``.

Its domain (shape, size, rank, tiling, partitioning) is that of ``B``: most operations act
on ``layout_b`` and re-wrap the result as ``composition(A, O, result)``.  Each operation CuTe
defines for a ComposedLayout is a method named after the free function, so the free
functions of :mod:`threadmap.layout.layout` accept composed layouts (see
:mod:`threadmap.layout.dispatch`); operations CuTe does not define for it (``stride``,
``select``, ``prepend``, ``dice``, ``filter`` without a profile, ...) raise LayoutError.
Swizzle-specific versions (``cute/swizzle_layout.hpp``) are registered by
:mod:`threadmap.layout.swizzle_layout` and take precedence when ``A`` is a Swizzle.

Integers are static: an ``int`` offset of 0 *is* ``Int<0>``; :class:`SmemPtrFlag` is the
one offset that behaves as 0 but is a distinct type, as in C++.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from threadmap.errors import LayoutError
from threadmap.layout import layout as L
from threadmap.layout.dispatch import LayoutLike, find_overload
from threadmap.layout.int_tuple import is_int
from threadmap.layout.layout import Layout
from threadmap.layout.pointer_flagged import SmemPtrFlag

__all__ = ["ComposedLayout", "composition3", "make_composed_layout"]


def _offset_str(off: Any, static: bool) -> str:
    if isinstance(off, SmemPtrFlag):
        return str(off)
    if is_int(off):
        return f"_{int(off)}" if static else str(int(off))
    return str(off)


def _norm_offset(off: Any) -> Any:
    if isinstance(off, SmemPtrFlag):
        return off
    if is_int(off):
        if not -L.MAX_INT <= off <= L.MAX_INT:
            raise LayoutError(f"offset {off} does not fit in int64")
        return int(off)
    raise LayoutError(f"the offset of a composed layout must be an integer, got {off!r}")


def _fn_str(f: Any, static: bool) -> str:
    to_str = getattr(f, "to_str", None)
    return to_str(static) if to_str is not None else str(f)


def _check_fn(f: Any, what: str) -> None:
    if not (isinstance(f, (Layout, LayoutLike)) and callable(f)):
        raise LayoutError(f"{what} of a composed layout must be a layout or a swizzle, got {f!r}")


class ComposedLayout(LayoutLike):
    """``ComposedLayout<LayoutA, Offset, LayoutB>``: the function ``A o O o B``.

    Law: ``L(c) == layout_a(offset + layout_b(c))`` for every coordinate ``c`` of
    ``layout_b``; shape, size, rank and depth are ``layout_b``'s.  A coordinate containing
    ``_`` slices (``slice(c, L)``), as in C++.
    """

    __slots__ = ("layout_a", "offset", "layout_b")

    def __init__(self, layout_a: Any, offset: Any, layout_b: Any) -> None:
        _check_fn(layout_a, "the outer function")
        _check_fn(layout_b, "the inner layout")
        self.layout_a = layout_a
        self.offset = _norm_offset(offset)
        self.layout_b = layout_b

    def _spec(self, name: str) -> Any:
        """The ``swizzle_layout.hpp`` overload of ``name`` for this ``A`` (None if none)."""
        return find_overload("composed." + name, self.layout_a)

    # -- accessors -------------------------------------------------------------------------
    @property
    def shape(self) -> Any:
        """``shape(L) == shape(layout_b)``."""
        return self.layout_b.shape

    def size(self) -> Any:
        """``size(L) == size(layout_b)``."""
        return L.size(self.layout_b)

    def cosize(self) -> Any:
        """``cosize(L) == cosize(layout_b)`` (as the header defines it, not the image extent)."""
        return L.cosize(self.layout_b)

    def rank(self) -> int:
        return L.rank(self.layout_b)

    def depth(self) -> int:
        return L.depth(self.layout_b)

    def __len__(self) -> int:
        return self.rank()

    def _wrap(self, b: Any) -> Any:
        return composition3(self.layout_a, self.offset, b)

    def get(self, *path: int) -> Any:
        """``layout<I...>(L) == composition(A, O, layout<I...>(B))``."""
        return self._wrap(L.get(self.layout_b, *path))

    def __getitem__(self, i: int) -> Any:
        return self.get(i)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return (self[i] for i in range(self.rank()))

    def take(self, begin: int, end: int) -> Any:
        return self._wrap(L.take(self.layout_b, begin, end))

    def flatten(self) -> Any:
        return self._wrap(L.flatten_layout(self.layout_b))

    def group(self, begin: int, end: int) -> Any:
        return self._wrap(L.group(self.layout_b, begin, end))

    def append(self, x: Layout | None = None, n: int | None = None) -> Any:
        return self._wrap(L.append(self.layout_b, x, n))

    def replace(self, n: int, x: Any) -> Any:
        """``replace<N>(composed, x)``: CuTe has no ComposedLayout overload, so the generic
        tuple ``replace`` applies, which treats the composed layout as one leaf: ``N`` must
        be 0 and the result is ``x``."""
        if n != 0:
            raise LayoutError(f"replace<{n}>: index out of range for a composed layout (a leaf)")
        return x

    # -- evaluation ------------------------------------------------------------------------
    def __call__(self, *crd: Any) -> Any:
        """``A(O + B(c))``; slices when ``c`` contains ``_``."""
        c: Any = crd[0] if len(crd) == 1 else tuple(crd)
        if isinstance(c, list):
            c = L.normalize_coord(c)
        if L.has_underscore(c):
            return self.slice(c)
        return self.layout_a(self.offset + self.layout_b(c))

    def table(self, dtype: Any = None, out: np.ndarray | None = None) -> np.ndarray:
        """``L(i)`` for every ``i < size(L)`` as one numpy array (int32 when it fits).

        Law: ``table()[i] == L(i)``.  A swizzle over a Layout has a blocked fast path
        (:func:`threadmap.layout.table.fast_table`)."""
        f = self._spec("table")
        if f is not None:
            return f(self, dtype, out)  # type: ignore[no-any-return]
        res = np.asarray(self.layout_a(self.layout_b.table(np.int64) + int(self.offset)))
        return res.astype(dtype, copy=False) if dtype is not None else res

    # -- composition -----------------------------------------------------------------------
    def composition(self, rhs: Any) -> Any:
        """``composition(A o O o B, T) == composition(A, O, composition(B, T))``."""
        return composition3(self.layout_a, self.offset, L.composition(self.layout_b, rhs))

    def compose(self, *others: Any) -> Any:
        """``composition(L, other)`` (several arguments form a tile)."""
        return self.composition(others[0] if len(others) == 1 else tuple(others))

    def r_composition(self, lhs: Any) -> Any:
        """``composition(Layout, A o O o B) == composition(composition(Layout, A), B)``;
        the header requires a static zero offset."""
        if not is_static_zero(self.offset):
            raise LayoutError(f"composition({lhs}, {self}): Require offset == 0.")
        return L.composition(L.composition(lhs, self.layout_a), self.layout_b)

    def with_shape(self, *shp: Any) -> Any:
        s = shp[0] if len(shp) == 1 else tuple(shp)
        return self.composition(Layout(s))

    def tile(self, *tiler: Any) -> Any:
        return self.tiled_divide(tiler[0] if len(tiler) == 1 else tuple(tiler))

    # -- slicing ---------------------------------------------------------------------------
    def slice_and_offset(self, crd: Any) -> tuple[Any, Any]:
        """``slice_and_offset(c, L)``: ``(ComposedLayout(A, O + B(c with _ -> 0),
        slice(c, B)), 0)``; the offset moves into the composed layout.  For a swizzle the
        header's algorithm of ``swizzle_layout.hpp`` (may decay to a plain Layout).
        Law: ``slice(c, L)(d) + offset == L(c with _ filled by d)`` for every ``d``."""
        crd = L.normalize_coord(crd)
        f = self._spec("slice_and_offset")
        if f is not None:
            return f(self, crd)  # type: ignore[no-any-return]
        sub, off = L.slice_and_offset(crd, self.layout_b)
        return ComposedLayout(self.layout_a, self.offset + off, sub), 0

    def slice(self, crd: Any) -> Any:
        """``slice(c, L) == get<0>(slice_and_offset(c, L))`` (the offset is dropped, as in C++)."""
        return self.slice_and_offset(crd)[0]

    def domain_offset(self, crd: Any) -> tuple[ComposedLayout, int]:
        """``(ComposedLayout(A, O + B(c), B), 0)``."""
        return ComposedLayout(self.layout_a, self.offset + self.layout_b(L.normalize_coord(crd)),
                              self.layout_b), 0

    # -- complement / inverses -------------------------------------------------------------
    def complement(self, cotarget: Any = None) -> Layout:
        """``complement(L, M) == complement(layout_b, M)``; ``M`` defaults to ``cosize(L)``."""
        if cotarget is None:
            cotarget = self.cosize()
        return L.complement(self.layout_b, cotarget)  # type: ignore[no-any-return]

    def right_inverse(self) -> Any:
        """``composition(right_inverse(B), -O, right_inverse(A))`` (a swizzle with offset 0:
        ``composition(right_inverse(B), A)``)."""
        f = self._spec("right_inverse")
        if f is not None:
            return f(self)
        return composition3(L.right_inverse(self.layout_b), -int(self.offset),
                            L.right_inverse(self.layout_a))

    def left_inverse(self) -> Any:
        """As :meth:`right_inverse` with left inverses."""
        f = self._spec("left_inverse")
        if f is not None:
            return f(self)
        return composition3(L.left_inverse(self.layout_b), -int(self.offset),
                            L.left_inverse(self.layout_a))

    # -- reshaping (act on layout_b) -------------------------------------------------------
    def coalesce(self, profile: Any = None) -> Any:
        """``composition(A, O, coalesce(B[, profile]))``: same function, simplest ``B``."""
        return self._wrap(L.coalesce(self.layout_b, profile))

    def filter(self, profile: Any = None) -> Any:
        """``filter(L, profile)`` (the header defines it only with a profile)."""
        if profile is None:
            raise LayoutError(f"filter({self}) needs a target profile for a ComposedLayout "
                              "(filter(ComposedLayout, Shape) only, in CuTe)")
        return self._wrap(L.filter(self.layout_b, profile))

    def logical_divide(self, tiler: Any) -> Any:
        """``composition(A, O, logical_divide(B, tiler))``."""
        return self._wrap(L.logical_divide(self.layout_b, tiler))

    def zipped_divide(self, tiler: Any) -> Any:
        return self._wrap(L.zipped_divide(self.layout_b, tiler))

    def tiled_divide(self, tiler: Any) -> Any:
        return self._wrap(L.tiled_divide(self.layout_b, tiler))

    def flat_divide(self, tiler: Any) -> Any:
        return self._wrap(L.flat_divide(self.layout_b, tiler))

    def tile_unzip(self, tiler: Any) -> Any:
        return self._wrap(L.tile_unzip(self.layout_b, tiler))

    def logical_product(self, tiler: Any) -> Any:
        """``composition(A, O, logical_product(B, tiler))``."""
        return self._wrap(L.logical_product(self.layout_b, tiler))

    def zipped_product(self, tiler: Any) -> Any:
        return self._wrap(L.zipped_product(self.layout_b, tiler))

    def tiled_product(self, tiler: Any) -> Any:
        return self._wrap(L.tiled_product(self.layout_b, tiler))

    def flat_product(self, tiler: Any) -> Any:
        return self._wrap(L.flat_product(self.layout_b, tiler))

    def blocked_product(self, tiler: Any) -> Any:
        return self._wrap(L.blocked_product(self.layout_b, tiler))

    def raked_product(self, tiler: Any) -> Any:
        return self._wrap(L.raked_product(self.layout_b, tiler))

    def r_logical_product(self, block: Layout) -> Any:
        """``logical_product(Layout, ComposedLayout)``: defined for swizzles only."""
        f = self._spec("r_logical_product")
        if f is None:
            raise LayoutError(f"logical_product({block}, {self}) is defined for a swizzled "
                              "tiler only")
        return f(self, block)

    def tile_to_shape(self, trg_shape: Any, order: Any = L.LayoutLeft) -> Any:
        """``composition(A, O, tile_to_shape(B, shape, order))``."""
        return self._wrap(L.tile_to_shape(self.layout_b, trg_shape, order))

    # -- recast ----------------------------------------------------------------------------
    def upcast(self, n: int) -> Any:
        """``upcast<N>``: with a :class:`SmemPtrFlag` offset (pointer_flagged.hpp) the swizzle
        is kept and the flag becomes ``smem_ptr_flag_bits<B*N>``; otherwise every part is
        upcast: ``composition(upcast<N>(A), O / N, upcast<N>(B))``."""
        n = L.cast_factor(n, "upcast")
        if isinstance(self.offset, SmemPtrFlag):
            return composition3(self.layout_a, SmemPtrFlag(self.offset.bits * n),
                                L.upcast(self.layout_b, n))
        return composition3(L.upcast(self.layout_a, n), _offset_div(self.offset, n),
                            L.upcast(self.layout_b, n))

    def downcast(self, n: int) -> Any:
        n = L.cast_factor(n, "downcast")
        if isinstance(self.offset, SmemPtrFlag):
            if self.offset.bits % n:
                raise LayoutError(f"downcast<{n}> of {self}: the flag's {self.offset.bits} "
                                  "bits are not divisible")
            return composition3(self.layout_a, SmemPtrFlag(self.offset.bits // n),
                                L.downcast(self.layout_b, n))
        return composition3(L.downcast(self.layout_a, n), int(self.offset) * n,
                            L.downcast(self.layout_b, n))

    def recast_layout(self, old_bits: int, new_bits: int) -> Any:
        """``recast_layout<Old, New>``: ratio ``new/old`` reduced, then up/downcast."""
        from math import gcd
        old_bits = L.cast_factor(old_bits, "recast_layout")
        new_bits = L.cast_factor(new_bits, "recast_layout")
        g = gcd(old_bits, new_bits)
        num, den = new_bits // g, old_bits // g
        out: Any = self
        if num != 1:
            out = L.upcast(out, num)
        if den != 1:
            out = L.downcast(out, den)
        return out

    def as_position_independent_swizzle_layout(self) -> Any:
        """For a flagged (GMMA) layout ``Sw o smem_ptr[Bb] o L``: the swizzle recast from
        bytes to B-bit elements, offset 0: the *element-offset* function of the atom
        (``composition(recast_layout<uint8_t, uint_bit_t<B>>(Sw), _0, L)``)."""
        if not isinstance(self.offset, SmemPtrFlag) or not hasattr(self.layout_a, "recast"):
            raise LayoutError("as_position_independent_swizzle_layout needs Sw o smem_ptr_flag o L")
        return composition3(self.layout_a.recast(8, self.offset.bits), 0, self.layout_b)

    # -- other -----------------------------------------------------------------------------
    def max_alignment(self) -> int:
        """Swizzled: ``gcd(1 << M, max_alignment(O), max_alignment(B))``; otherwise 1."""
        f = self._spec("max_alignment")
        return int(f(self)) if f is not None else 1

    def nullspace(self) -> Layout:
        """Not attempted for composed layouts: ``1:0``."""
        return Layout(1, 0)

    def make_fragment_like(self) -> Any:
        """Defined for swizzles only: ``make_fragment_like(layout_b)``."""
        f = self._spec("make_fragment_like")
        if f is None:
            raise LayoutError(f"make_fragment_like({self}) is defined for a swizzle only")
        return f(self)

    def max_common_layout(self, other: Any) -> Layout:
        f = self._spec("max_common_layout")
        if f is None:
            raise LayoutError(f"max_common_layout({self}, ...) is defined for a swizzle only")
        return f(self, other)  # type: ignore[no-any-return]

    def r_max_common_layout(self, other: Any) -> Layout:
        f = self._spec("r_max_common_layout")
        if f is None:
            raise LayoutError(f"max_common_layout(..., {self}) is defined for a swizzle only")
        return f(self, other)  # type: ignore[no-any-return]

    def max_common_vector(self, other: Any) -> Any:
        f = self._spec("max_common_vector")
        if f is None:
            raise LayoutError(f"max_common_vector({self}, ...) is defined for a swizzle only")
        return f(self, other)

    def r_max_common_vector(self, other: Any) -> Any:
        f = self._spec("r_max_common_vector")
        if f is None:
            raise LayoutError(f"max_common_vector(..., {self}) is defined for a swizzle only")
        return f(self, other)

    # -- display / equality ----------------------------------------------------------------
    def to_str(self, static: bool = False) -> str:
        """``A o O o B`` as CuTe prints it; ``static=True`` adds the ``_`` of static ints."""
        return (f"{_fn_str(self.layout_a, static)} o {_offset_str(self.offset, static)} o "
                f"{_fn_str(self.layout_b, static)}")

    def __str__(self) -> str:
        return self.to_str()

    def __repr__(self) -> str:
        return f"ComposedLayout({self})"

    def __eq__(self, o: object) -> bool:
        return (isinstance(o, ComposedLayout) and self.layout_a == o.layout_a
                and type(self.offset) is type(o.offset) and self.offset == o.offset
                and self.layout_b == o.layout_b)

    def __hash__(self) -> int:
        return hash((self.layout_a, str(self.offset), self.layout_b))


def is_static_zero(off: Any) -> bool:
    """``is_constant<0, Offset>``: an int 0 or a flag (both ``Int<0>``)."""
    return is_int(off) and int(off) == 0


def _offset_div(off: Any, n: int) -> int:
    """``upcast<N>(offset)`` = ``safe_div(offset, N)`` (static: must divide)."""
    if off % n:
        raise LayoutError(f"upcast<{n}>: offset {off} is not divisible by {n}")
    return int(off) // n


def make_composed_layout(a: Any, offset: Any, b: Any) -> ComposedLayout:
    """``make_composed_layout(A, O, B)``: always a ComposedLayout (no simplification)."""
    return ComposedLayout(a, offset, b)


def composition3(a: Any, offset: Any, b: Any) -> Any:
    """``composition(A, O, B)`` (3 arguments): ``ComposedLayout(A, O, B)``, except the
    overloads registered for ``A`` (the identity swizzle ``composition(Swizzle<0,M,S>,
    Int<0>, Layout) == Layout``)."""
    f = find_overload("composition3", a)
    if f is not None:
        return f(a, offset, b)
    return ComposedLayout(a, offset, b)
