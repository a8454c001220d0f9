"""Swizzled layouts (``cute/swizzle_layout.hpp``): ``Sw o O o L`` and the swizzle-specific
overloads of the composed-layout operations.

* ``composition(Swizzle, Layout)`` is ``Sw o _0 o L``; ``composition(Swizzle<0,M,S>, _0, L)``
  is ``L`` (the identity swizzle); ``composition(Layout, Swizzle)`` is
  ``make_swizzle<L(yyy), L(zzz)> o L`` ("works in simple cases", as the header says).
* Slicing a swizzled layout may *decay* to a plain Layout plus an offset, when the
  remaining modes never hit both the YYY and the ZZZ bits of a pair.
* ``right_inverse``/``left_inverse`` with offset 0 pass the swizzle back to the left;
  ``max_common_layout``/``max_common_vector`` truncate to ``1 << M`` elements;
  ``logical_product(Layout, Sw o _0 o T)`` transfers the swizzle onto the product.

These overloads are registered with :mod:`threadmap.layout.dispatch` for :class:`Swizzle`
when this module is imported (``threadmap.layout`` imports it).
"""

from __future__ import annotations

from math import gcd
from typing import Any

import numpy as np

from threadmap.errors import LayoutError
from threadmap.layout import layout as L
from threadmap.layout.dispatch import register_overload
from threadmap.layout.int_tuple import flatten_to_tuple, idx2crd
from threadmap.layout.layout import Layout
from threadmap.layout.layout_composed import ComposedLayout, composition3, is_static_zero
from threadmap.layout.swizzle import Swizzle, make_swizzle
from threadmap.layout.table import fast_table
from threadmap.layout.underscore import Underscore

__all__ = ["make_layout_from_swizzle", "swizzled_logical_product", "composition"]


def composition(lhs: Any, rhs: Any) -> Any:
    """``composition(lhs, rhs)`` for any mix of Layout, Swizzle and ComposedLayout (the
    free function :func:`threadmap.layout.layout.composition`).

    Law: ``R(c) == lhs(rhs(c))`` for every coordinate ``c`` of ``rhs`` (for ``Layout o
    Swizzle``: on the swizzle's bits, "works in simple cases" as the header says).
    """
    return L.composition(lhs, rhs)


@register_overload("composition", Swizzle)
def _swizzle_o_layout(sw: Swizzle, rhs: Any) -> Any:
    if not isinstance(rhs, Layout):
        raise LayoutError(f"composition({sw}, {rhs!r}): a Swizzle composes with a Layout or "
                          "a Swizzle only")
    return composition3(sw, 0, rhs)


@register_overload("r_composition", Swizzle)
def _layout_o_swizzle(sw: Swizzle, lhs: Layout) -> Any:
    return L.composition(make_swizzle(lhs(sw.yyy_msk), lhs(sw.zzz_msk)), lhs)


@register_overload("composition3", Swizzle)
def _composition3(sw: Swizzle, offset: Any, b: Any) -> Any:
    # composition(Swizzle<0,M,S>, Int<0>, Layout) is the Layout; a SmemPtrFlag is not Int<0>
    if sw.bits == 0 and type(offset) is int and offset == 0 and isinstance(b, Layout):
        return b
    return ComposedLayout(sw, offset, b)


def _swizzled(cl: ComposedLayout, what: str) -> tuple[Swizzle, Layout]:
    if not isinstance(cl.layout_b, Layout):
        raise LayoutError(f"{what} is defined for Sw o O o Layout only, not {cl}")
    return cl.layout_a, cl.layout_b


@register_overload("composed.table", Swizzle)
def _table(cl: ComposedLayout, dtype: Any, out: np.ndarray | None) -> np.ndarray:
    sw, b = _swizzled(cl, "table")
    if L.size(b) > L.MAX_TABLE:
        raise LayoutError(f"table of {L.size(b)} elements exceeds the limit of {L.MAX_TABLE}")
    return fast_table(b, sw, int(cl.offset), dtype=dtype, out=out)


@register_overload("composed.right_inverse", Swizzle)
def _right_inverse(cl: ComposedLayout) -> Any:
    if is_static_zero(cl.offset):
        return L.composition(L.right_inverse(cl.layout_b), cl.layout_a)
    return composition3(L.right_inverse(cl.layout_b), -int(cl.offset), cl.layout_a)


@register_overload("composed.left_inverse", Swizzle)
def _left_inverse(cl: ComposedLayout) -> Any:
    if is_static_zero(cl.offset):
        return L.composition(L.left_inverse(cl.layout_b), cl.layout_a)
    return composition3(L.left_inverse(cl.layout_b), -int(cl.offset), cl.layout_a)


def _layout_max_alignment(layout: Layout) -> int:
    """``max_alignment(Layout)``: size of the leading stride-1 run of ``coalesce(layout)``."""
    c = L.coalesce(layout)
    s0, d0 = flatten_to_tuple(c.shape)[0], flatten_to_tuple(c.stride)[0]
    return int(s0) if d0 == 1 else 1


@register_overload("composed.max_alignment", Swizzle)
def _max_alignment(cl: ComposedLayout) -> int:
    sw, b = _swizzled(cl, "max_alignment")
    off = int(cl.offset)
    return gcd(sw.max_alignment(), off if off else 0, _layout_max_alignment(b))


@register_overload("composed.make_fragment_like", Swizzle)
def _make_fragment_like(cl: ComposedLayout) -> Any:
    return L.make_fragment_like(cl.layout_b)


@register_overload("composed.max_common_layout", Swizzle)
def _max_common_layout(cl: ComposedLayout, other: Any) -> Layout:
    """Swizzled ``A o O o B`` vs a Layout: ``max_common_layout(B, other)`` truncated to
    ``1 << M`` elements."""
    sw, b = _swizzled(cl, "max_common_layout")
    if not isinstance(other, Layout):
        raise LayoutError("max_common_layout: the other argument must be a Layout")
    common = L.max_common_layout(b, other)
    base = 1 << sw.base
    if base < L.size(common):
        return L.composition(common, base)  # type: ignore[no-any-return]
    return common  # type: ignore[no-any-return]


@register_overload("composed.r_max_common_layout", Swizzle)
def _r_max_common_layout(cl: ComposedLayout, other: Any) -> Layout:
    return _max_common_layout(cl, other)


@register_overload("composed.max_common_vector", Swizzle)
def _max_common_vector(cl: ComposedLayout, other: Any) -> Any:
    """``min(max_common_vector(B, other), 1 << M)``; two swizzled layouts: the vector of
    their ``B``s, truncated unless the swizzles are equal."""
    sw, b = _swizzled(cl, "max_common_vector")
    if isinstance(other, ComposedLayout):
        sw1, b1 = _swizzled(other, "max_common_vector")
        vec = L.max_common_vector(b, b1)
        if sw == sw1:
            return vec
        return min(vec, 1 << sw.base, 1 << sw1.base)
    return min(L.max_common_vector(b, other), 1 << sw.base)


@register_overload("composed.r_max_common_vector", Swizzle)
def _r_max_common_vector(cl: ComposedLayout, other: Any) -> Any:
    return _max_common_vector(cl, other)


@register_overload("composed.r_logical_product", Swizzle)
def _r_logical_product(cl: ComposedLayout, block: Layout) -> Any:
    return swizzled_logical_product(block, cl)


@register_overload("composed.slice_and_offset", Swizzle)
def _slice_and_offset(cl: ComposedLayout, crd: Any) -> tuple[Any, Any]:
    if not isinstance(cl.layout_b, Layout):
        sub, off = L.slice_and_offset(crd, cl.layout_b)
        return ComposedLayout(cl.layout_a, cl.offset + off, sub), 0
    return _swizzle_slice_and_offset(crd, cl)


@register_overload("make_layout", Swizzle)
def make_layout_from_swizzle(sw: Swizzle) -> Any:
    """``make_layout(Swizzle<B,M,S>)`` exactly as the header: ``composition(sw,
    Layout<Int<M+B+abs(S)>, _1>)``.  Note: the extent is ``M+B+|S|``, not ``2^(M+B+|S|)``."""
    if not isinstance(sw, Swizzle):
        raise LayoutError(f"make_layout_from_swizzle needs a Swizzle, got {sw!r}")
    return composition3(sw, 0, Layout(sw.base + sw.bits + abs(sw.shift), 1))


def swizzled_logical_product(layout: Layout, tiler: ComposedLayout) -> Any:
    """``logical_product(Layout, Sw o 0 o T)`` (swizzle_layout.hpp): the product with ``T``,
    and the swizzle transferred onto the new strides (``make_swizzle`` of the images of the
    tiler's active Y and Z bits in the new layout)."""
    if not isinstance(layout, Layout) or not isinstance(tiler, ComposedLayout) or \
            not isinstance(tiler.layout_a, Swizzle):
        raise LayoutError(f"swizzled_logical_product(Layout, Sw o O o Layout), got "
                          f"{layout!r}, {tiler!r}")
    sw, tb = _swizzled(tiler, "logical_product")
    if not is_static_zero(tiler.offset):
        raise LayoutError("logical_product: Require Swizzle offset == 0.")
    new_layout = L.logical_product(layout, tiler.layout_b)
    B, M, S = sw.bits, sw.base, sw.shift
    only_zy = Layout((1 << M, 1 << B, 1 << (abs(S) - B), 1 << B, 1),
                     (0, 1 << M, 0, 1 << (M + abs(S)), 0))
    layout_only_zy = L.composition(only_zy, tiler.layout_b)
    active = layout_only_zy(L.size(layout_only_zy) - 1)
    active_z = active & sw.zzz_msk
    active_y = active & sw.yyy_msk
    new_z = new_layout(0, tiler.layout_b(active_z))
    new_y = new_layout(0, tiler.layout_b(active_y))
    return L.composition(make_swizzle(new_y, new_z), new_layout)


# =========================================================================== slicing
def _to_mixed_bits(layout: Layout, coord: Any) -> int:
    """Static ``to_mixed_bits(layout, coord)``: XOR over the modes of
    ``(c * d) & ((s - 1) * d)`` (each ``s * d`` must be 0 or a power of two)."""
    crd = idx2crd(coord, layout.shape)
    acc = 0
    for s, d, c in zip(flatten_to_tuple(layout.shape), flatten_to_tuple(layout.stride),
                       flatten_to_tuple(crd), strict=True):
        p = s * d
        if p != 0 and (p < 0 or p & (p - 1)):
            raise LayoutError(f"to_mixed_bits: Requires pow2 shape*stride (got {s}*{d})")
        acc ^= (c * d) & ((s - 1) * d)
    return acc


def _all_underscore(c: Any) -> bool:
    if isinstance(c, tuple):
        return all(_all_underscore(x) for x in c)
    return isinstance(c, Underscore)


def _swizzle_slice_and_offset(crd: Any, cl: ComposedLayout) -> tuple[Any, int]:
    sw: Swizzle = cl.layout_a
    b: Layout = cl.layout_b
    if _all_underscore(crd):
        return composition3(sw, cl.offset, L.slice_(crd, b)), 0
    B, M, S = sw.bits, sw.base, sw.shift
    aS = abs(S)
    sw_l = Layout((1 << M, 1 << B, 1 << (aS - B), 1 << B, 1))
    sd = sw_l.stride
    swizzle_anti_zy = Layout(sw_l.shape, (sd[0], 0, sd[2], 0, L.size(sw_l)))  # type: ignore[index]
    swizzle_only_zy = Layout(sw_l.shape, (0, sd[1], 0, sd[3], 0))  # type: ignore[index]

    sliced = L.slice_(crd, b)
    diced = L.dice(crd, b)
    diced_coord = L.dice(crd, crd)
    diced_anti = L.composition(swizzle_anti_zy, diced)
    diced_only = L.composition(swizzle_only_zy, diced)
    offset_only_zy = int(cl.offset) ^ _to_mixed_bits(diced_only, diced_coord)
    offset_anti_zy = diced_anti(diced_coord)

    sliced_only = L.composition(swizzle_only_zy, sliced)
    active = sliced_only(L.size(sliced_only) - 1)
    if active & ~sw(active):  # hits on Y AND Z: not reducible
        return ComposedLayout(sw, offset_only_zy, sliced), offset_anti_zy

    Z = sw.zzz_msk & -sw.zzz_msk
    Y = sw.yyy_msk & -sw.yyy_msk

    def strides(z_side: bool) -> tuple:
        if z_side:
            return tuple((Z << i) if offset_only_zy & (Y << i) == 0 else -(Z << i) for i in range(B))
        return tuple(((Y + Z) << i) if offset_only_zy & (Z << i) == 0 else ((Y - Z) << i)
                     for i in range(B))

    lo, hi = strides(Z < Y), strides(Z > Y)
    rep: Any = 2 if B == 1 else (2,) * B
    lo_d: Any = lo[0] if B == 1 else lo
    hi_d: Any = hi[0] if B == 1 else hi
    swizzle_layout = Layout((1 << M, rep, 1 << (aS - B), rep, 1),
                            (1, lo_d, 1 << (M + B), hi_d, 1 << (M + B + aS)))
    return L.composition(swizzle_layout, sliced), sw(offset_only_zy) + offset_anti_zy

