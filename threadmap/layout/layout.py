"""CuTe layouts and their algebra (``cute/layout.hpp``), with CuTe's names and semantics.

A :class:`Layout` is a pair of congruent int tuples ``shape:stride``; it maps a coordinate
(or a 1-D colexicographic index) to ``sum_k crd_k * stride_k``.  Every operation here
follows the C++ header's algorithm step by step, so results agree with CuTe *structurally*
(the same shape/stride trees), not only as functions.  All integers are "static" in CuTe's
sense: threadmap knows every value, so the static branches of the header are taken.

Evaluation (``layout(i)``) goes through :func:`threadmap.layout.int_tuple.crd2idx`, the one
evaluation core that serves Python ints, numpy arrays and z3 ``Sym`` values.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from threadmap.errors import LayoutError
from threadmap.layout.int_tuple import (
    ArithTuple,
    IntTuple,
    ScaledBasis,
    Underscore,
    _,
    ceil_div,
    compact_major_left,
    compact_major_right,
    congruent,
    crd2idx,
    flatten,
    flatten_to_tuple,
    is_int,
    make_basis_like,
    product,
    product_each,
    unwrap,
    wrap,
)


def _composed_types() -> tuple[type, ...]:
    from threadmap.layout.swizzle import ComposedLayout, Swizzle  # late: swizzle imports us

    return ComposedLayout, Swizzle


def _dispatch(method: str | None = None, swizzle: bool = False) -> Any:
    """Route a call whose first argument is a ComposedLayout (or, with ``swizzle``, a bare
    Swizzle) to that object's method of the same name: the header's overloads for
    ``cute/layout_composed.hpp``."""
    def deco(f: Any) -> Any:
        name = method or f.__name__

        @functools.wraps(f)
        def g(x: Any, *args: Any, **kw: Any) -> Any:
            composed, sw = _composed_types()
            if isinstance(x, composed) or (swizzle and isinstance(x, sw)):
                return getattr(x, name)(*args, **kw)
            return f(x, *args, **kw)
        return g
    return deco


__all__ = [
    "Layout", "LayoutLeft", "LayoutRight", "GenColMajor", "GenRowMajor", "make_layout",
    "make_identity_layout", "make_ordered_layout", "size", "cosize", "rank", "depth", "shape",
    "stride", "get", "select", "take", "group", "flatten_layout", "append", "prepend", "coalesce",
    "filter_zeros", "filter", "composition", "complement", "right_inverse", "left_inverse",
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product",
    "zipped_product", "tiled_product", "flat_product", "blocked_product", "raked_product",
    "zip_layouts", "tile_unzip", "slice_", "dice", "slice_and_offset", "max_common_layout",
    "max_common_vector", "nullspace", "upcast", "downcast", "recast_layout", "tile_to_shape",
    "make_layout_like", "Tensor", "make_tensor", "make_identity_tensor", "local_tile",
    "local_partition", "inner_partition", "outer_partition", "Underscore", "_",
]


class _Major:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


LayoutLeft = _Major("LayoutLeft")
LayoutRight = _Major("LayoutRight")
GenColMajor = LayoutLeft
GenRowMajor = LayoutRight


def _check_shape(shape: Any, where: str = "shape") -> None:
    if isinstance(shape, tuple):
        for s in shape:
            _check_shape(s, where)
    elif not is_int(shape):
        raise LayoutError(f"{where} element {shape!r} is not an integer")
    elif shape <= 0:
        raise LayoutError(f"{where} element {shape} is not positive")


def _check_stride(stride: Any) -> None:
    if isinstance(stride, tuple):
        for d in stride:
            _check_stride(d)
    elif not (is_int(stride) or isinstance(stride, ScaledBasis)):
        raise LayoutError(f"stride element {stride!r} is not an integer")


def _norm(t: Any) -> Any:
    """numpy integers -> Python ints, lists -> tuples."""
    if isinstance(t, (tuple, list)):
        return tuple(_norm(x) for x in t)
    if isinstance(t, np.integer):
        return int(t)
    return t


def tuple_str(t: Any, static: bool = False) -> str:
    """CuTe's ``print`` of an int tuple: ``(4,(2,3))``; ``static`` adds CuTe's ``_`` prefix."""
    if isinstance(t, tuple):
        return "(" + ",".join(tuple_str(x, static) for x in t) + ")"
    if isinstance(t, ScaledBasis):
        return tuple_str(t.value, static) + "".join(f"@{i}" for i in reversed(t.path))
    return f"_{t}" if static else str(t)


class Layout:
    """``shape:stride``, a function from coordinates to offsets.

    Laws: ``L(i) == crd2idx(i, shape, stride)`` for a 1-D index ``i``;
    ``L(c0, c1, ...) == sum_k c_k * stride_k`` for a coordinate; a coordinate containing
    ``_`` slices (``L(_, 3)`` keeps mode 0), as CuTe's ``operator()`` does.
    """

    __slots__ = ("shape", "stride")

    def __init__(self, shape: IntTuple, stride: Any = None) -> None:
        shape = _norm(shape)
        _check_shape(shape)
        if stride is None or stride is LayoutLeft:
            stride = compact_major_left(shape)
        elif stride is LayoutRight:
            stride = compact_major_right(shape)
        else:
            stride = _norm(stride)
            _check_stride(stride)
            if not congruent(shape, stride):
                raise LayoutError(f"shape {tuple_str(shape)} and stride {tuple_str(stride)} "
                                  "are not congruent")
        self.shape: IntTuple = shape
        self.stride: IntTuple = stride

    # -- structure ---------------------------------------------------------------------
    def __len__(self) -> int:
        return rank(self)

    def __getitem__(self, i: int) -> Layout:
        """Sublayout of mode ``i`` (CuTe ``layout<i>``)."""
        return get(self, i)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return (self[i] for i in range(rank(self)))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Layout) and self.shape == other.shape
                and _stride_eq(self.stride, other.stride))

    def __hash__(self) -> int:
        return hash((self.shape, repr(self.stride)))

    def __str__(self) -> str:
        return f"{tuple_str(self.shape)}:{tuple_str(self.stride)}"

    def __repr__(self) -> str:
        return f"Layout({self})"

    def to_str(self, static: bool = False) -> str:
        """CuTe notation; ``static=True`` prints ``_4`` as C++ does for static integers."""
        return f"{tuple_str(self.shape, static)}:{tuple_str(self.stride, static)}"

    # -- evaluation ----------------------------------------------------------------------
    def __call__(self, *crd: Any) -> Any:
        c: Any = crd[0] if len(crd) == 1 else tuple(crd)
        if _has_underscore(c):
            return slice_(c, self)
        if isinstance(c, list):
            c = tuple(c)
        return crd2idx(c, self.shape, self.stride)

    def table(self, dtype: Any = None, out: np.ndarray | None = None) -> np.ndarray:
        """``L(i)`` for every ``i`` in ``[0, size)``, as one numpy array (colex order).

        Vectorised as broadcast per-mode sums ``sum_k stride_k * arange(shape_k)`` written
        into one array (see :func:`threadmap.layout.table.fast_table`): no per-element
        Python work.  ``dtype`` defaults to int32 when every value fits.
        """
        from threadmap.layout.table import fast_table

        return fast_table(self, None, 0, dtype=dtype, out=out)

    def get_hier_coord(self, idx: Any) -> Any:
        """``idx2crd(idx, shape, stride)`` (only meaningful for compact layouts)."""
        return _idx2crd_strided(idx, self.shape, self.stride)

    def get_flat_coord(self, idx: Any) -> tuple:
        """Per top-level mode, the colex 1-D coordinate inside that mode (CuTe get_flat_coord)."""
        h = self.get_hier_coord(idx)
        return tuple(_colex_index(c, s) for c, s in zip(wrap(h), wrap(self.shape)))  # type: ignore[arg-type]

    def get_1d_coord(self, idx: Any) -> Any:
        return _colex_index(self.get_hier_coord(idx), self.shape)

    def compose(self, *others: Any) -> Layout:
        return composition(self, others[0] if len(others) == 1 else tuple(others))

    def with_shape(self, shp: IntTuple) -> Layout:
        return composition(self, Layout(shp))


def _stride_eq(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_stride_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, ScaledBasis) or isinstance(b, ScaledBasis):
        return isinstance(a, ScaledBasis) and isinstance(b, ScaledBasis) and a == b
    return not isinstance(a, tuple) and not isinstance(b, tuple) and a == b


def _has_underscore(c: Any) -> bool:
    if isinstance(c, Underscore):
        return True
    if isinstance(c, (tuple, list)):
        return any(_has_underscore(x) for x in c)
    return False


def _idx2crd_strided(idx: Any, shp: Any, std: Any) -> Any:
    if isinstance(shp, tuple):
        return tuple(_idx2crd_strided(idx, s, d) for s, d in zip(shp, std))
    if shp == 1:
        return 0
    if std == 0:
        raise LayoutError("idx2crd through a stride-0 mode of size > 1 is undefined")
    return (idx // std) % shp


def _colex_index(c: Any, s: Any) -> Any:
    if isinstance(c, tuple):
        acc: Any = 0
        mult = 1
        for ci, si in zip(c, s):
            acc = acc + _colex_index(ci, si) * mult
            mult *= product(si)
        return acc
    return c


# --------------------------------------------------------------------------- construction
def make_layout(*args: Any) -> Layout:
    """``make_layout(shape[, stride|LayoutLeft|LayoutRight])`` or ``make_layout(L0, L1, ...)``
    (concatenation of layouts as modes; a single layout becomes a rank-1 layout, as in CuTe)."""
    if args and all(isinstance(a, Layout) for a in args):
        return Layout(tuple(a.shape for a in args), tuple(a.stride for a in args))
    if len(args) == 1:
        return Layout(args[0])
    if len(args) == 2:
        return Layout(args[0], args[1])
    raise LayoutError("make_layout takes (shape[, stride]) or layouts")


def make_identity_layout(shp: IntTuple) -> Layout:
    """Layout mapping each coordinate to itself: strides are basis elements ``E<i>``."""
    return Layout(shp, make_basis_like(_norm(shp)))


def make_ordered_layout(shp: IntTuple, order: IntTuple) -> Layout:
    """Compact layout whose strides grow in the order given by ``order`` (CuTe compact_order)."""
    shp = _norm(shp)
    order = _norm(order)
    ref_shape = flatten_to_tuple(_product_like(shp, order))
    ref_order = flatten_to_tuple(order)

    def rec(s: Any, o: Any) -> Any:
        if isinstance(o, tuple):
            return tuple(rec(si, oi) for si, oi in zip(s, o))
        start = 1
        for rs, ro in zip(ref_shape, ref_order):
            if ro < o:
                start *= rs
        return compact_major_left(s, start)

    return Layout(shp, rec(shp, order))


def _product_like(shp: Any, prof: Any) -> Any:
    if isinstance(prof, tuple):
        return tuple(_product_like(s, p) for s, p in zip(shp, prof))
    return product(shp)


def make_layout_like(layout: Layout) -> Layout:
    """Compact layout with the same shape, strides ordered as ``layout``'s (0-strides kept)."""
    fz = _filter_zeros_shape(layout.stride, layout.shape)
    ordered = make_ordered_layout(fz, layout.stride)
    return Layout(layout.shape, ordered.stride)


# --------------------------------------------------------------------------- accessors
@_dispatch()
def size(x: Any) -> int:
    """Number of elements of the domain (product of the shape)."""
    return product(x.shape if isinstance(x, Layout) else x)


@_dispatch()
def cosize(layout: Layout) -> int:
    """``L(size(L) - 1) + 1``, as CuTe defines it (the codomain extent for positive strides)."""
    return layout(size(layout) - 1) + 1


@_dispatch()
def rank(x: Any) -> int:
    t = x.shape if isinstance(x, Layout) else x
    return len(t) if isinstance(t, tuple) else 1


@_dispatch()
def depth(x: Any) -> int:
    from threadmap.layout.int_tuple import depth as _d
    return _d(x.shape if isinstance(x, Layout) else x)


def shape(x: Any) -> IntTuple:
    return x.shape if hasattr(x, "shape") and not isinstance(x, tuple) else x


def stride(x: Layout) -> IntTuple:
    return x.stride


def _get_t(t: Any, i: int) -> Any:
    if isinstance(t, tuple):
        if not 0 <= i < len(t):
            raise LayoutError(f"mode {i} out of range for rank {len(t)}")
        return t[i]
    if i != 0:
        raise LayoutError(f"mode {i} out of range for rank 1")
    return t


@_dispatch()
def get(layout: Layout, *path: int) -> Layout:
    """Sublayout ``get<I0,I1,...>(layout)``."""
    s, d = layout.shape, layout.stride
    for i in path:
        s, d = _get_t(s, i), _get_t(d, i)
    return Layout(s, d)


@_dispatch()
def select(layout: Layout, *modes: int) -> Layout:
    return Layout(tuple(_get_t(layout.shape, i) for i in modes),
                  tuple(_get_t(layout.stride, i) for i in modes))


@_dispatch()
def take(layout: Layout, begin: int, end: int) -> Layout:
    """Modes ``[begin, end)``."""
    r = rank(layout)
    if not (0 <= begin < end <= r):
        raise LayoutError(f"take<{begin},{end}>: range out of bounds for rank {r}")
    return select(layout, *range(begin, end))


@_dispatch()
def group(layout: Layout, begin: int, end: int) -> Layout:
    """Group modes ``[begin, end)`` into one nested mode."""
    s, d = wrap(layout.shape), wrap(layout.stride)
    if not (0 <= begin <= end <= len(s)):
        raise LayoutError(f"group<{begin},{end}>: range out of bounds for rank {len(s)}")
    return Layout(s[:begin] + (s[begin:end],) + s[end:], d[:begin] + (d[begin:end],) + d[end:])


@_dispatch("flatten", swizzle=False)
def flatten_layout(layout: Layout) -> Layout:
    """Layout with depth at most 1 and the same function."""
    return Layout(flatten(layout.shape), flatten(layout.stride))


def _append_n(t: Any, n: int, x: Any) -> Any:
    if isinstance(t, tuple):
        if len(t) > n:
            raise LayoutError(f"append<{n}>: rank {len(t)} exceeds {n}")
        return t + (x,) * (n - len(t))
    return t if n == 1 else (t,) + (x,) * (n - 1)


@_dispatch("append", swizzle=False)
def append(layout: Layout, x: Layout | None = None, n: int | None = None) -> Layout:
    """Append mode ``x`` (default ``1:0``); with ``n``, pad with ``x`` up to rank ``n``."""
    xs, xd = (x.shape, x.stride) if x is not None else (1, 0)
    if n is not None:
        return Layout(_append_n(layout.shape, n, xs), _append_n(layout.stride, n, xd))
    return Layout(wrap(layout.shape) + (xs,), wrap(layout.stride) + (xd,))


def prepend(layout: Layout, x: Layout | None = None) -> Layout:
    xs, xd = (x.shape, x.stride) if x is not None else (1, 0)
    return Layout((xs,) + wrap(layout.shape), (xd,) + wrap(layout.stride))


# --------------------------------------------------------------------------- coalesce
def _bw_coalesce(fs: Sequence[Any], fd: Sequence[Any], ns: Any, nd: Any) -> Layout:
    """The header's ``bw_coalesce``: walk modes right to left, merging where
    ``shape_i * stride_i == stride_{i+1}``, dropping size-1 modes."""
    new_s: list[Any] = [ns]
    new_d: list[Any] = [nd]
    for i in range(len(fs) - 2, -1, -1):
        s, d = fs[i], fd[i]
        if s == 1:
            continue
        if len(new_s) == 1 and new_s[0] == 1:
            new_s, new_d = [s], [d]
        elif _stride_eq(d * s, new_d[0]):
            new_s[0] = s * new_s[0]
            new_d[0] = d
        else:
            new_s.insert(0, s)
            new_d.insert(0, d)
    if len(new_s) == 1:
        if new_s[0] == 1:
            return Layout(1, 0)
        return Layout(new_s[0], new_d[0])
    return Layout(tuple(new_s), tuple(new_d))


@_dispatch()
def coalesce(layout: Layout, profile: Any = None) -> Layout:
    """Simplest layout with the same function on ``[0, size)`` (depth <= 1).

    Law: ``coalesce(L)(i) == L(i)`` for all ``i < size(L)`` and ``size`` is preserved.
    With a tuple ``profile``, coalesces each mode separately (by-mode coalesce).
    """
    if isinstance(profile, tuple):
        return _transform_layout(layout, profile, coalesce)
    fs, fd = flatten_to_tuple(layout.shape), flatten_to_tuple(layout.stride)
    return _bw_coalesce(fs, fd, fs[-1], fd[-1])


def coalesce_x(layout: Layout, profile: Any = None) -> Layout:
    """``detail::coalesce_x``: like coalesce but also preserves the function outside the
    domain (the last mode's stride survives even when its extent is 1)."""
    if isinstance(profile, tuple):
        return _transform_layout(layout, profile, coalesce_x)
    fs, fd = flatten_to_tuple(layout.shape), flatten_to_tuple(layout.stride)
    return _bw_coalesce(fs, fd, 2 if fs[-1] == 1 else fs[-1], fd[-1])


def _filter_zeros_shape(std: Any, shp: Any) -> Any:
    if isinstance(std, tuple):
        return tuple(_filter_zeros_shape(d, s) for d, s in zip(std, shp))
    return 1 if (not isinstance(std, ScaledBasis) and std == 0) else shp


def filter_zeros(layout: Layout, profile: Any = None) -> Layout:
    """Replace the extent of every stride-0 mode by 1."""
    ref = layout.stride if profile is None else profile
    return Layout(_filter_zeros_shape(ref, layout.shape), layout.stride)


@_dispatch()
def filter(layout: Layout, profile: Any = None) -> Layout:
    """``coalesce(filter_zeros(L))``: remove stride-0 and size-1 modes."""
    if isinstance(profile, tuple):
        return _transform_layout(layout, profile, filter)
    return coalesce(filter_zeros(layout))


# --------------------------------------------------------------------------- transform helpers
def _transform_layout(layout: Layout, t1: Any, f: Any, keep_rest: bool = True) -> Layout:
    """``transform_layout(layout, t1, f)``: apply ``f`` mode-wise over the common ranks and
    append the remaining modes of ``layout`` (and, as in the header, of ``t1``)."""
    r0 = rank(layout)
    t1w = t1 if isinstance(t1, tuple) else (t1,)
    r1 = len(t1w)
    r = min(r0, r1)
    modes = [f(layout[i], t1w[i]) for i in range(r)]
    if keep_rest:
        modes += [layout[i] for i in range(r, r0)]
        modes += [t1w[i] for i in range(r, r1)]
    return make_layout(*modes)


# --------------------------------------------------------------------------- composition
def _ceil_div_int(a: int, b: int) -> int:
    return (a + b - 1) // b


def _signum(x: int) -> int:
    return (x > 0) - (x < 0)


def _composition_impl(ls: Any, ld: Any, rs: Any, rd: Any) -> Layout:
    if isinstance(rs, tuple):
        return make_layout(*[_composition_impl(ls, ld, s, d) for s, d in zip(rs, rd)])
    if isinstance(rd, ScaledBasis):
        sub_s, sub_d = ls, ld
        for i in rd.path:
            sub_s, sub_d = _get_t(sub_s, i), _get_t(sub_d, i)
        return _composition_impl(sub_s, sub_d, rs, rd.value)
    if rd == 0:
        return Layout(rs, rd)
    if not isinstance(ls, tuple):
        return Layout(rs, rd * ld)
    R = len(ls)
    res_s: list[Any] = []
    res_d: list[Any] = []
    rest_s, rest_d = rs, rd
    for i in range(R - 1):
        cs, cd = ls[i], ld[i]
        if not (rest_d % cs == 0 or abs(rest_d) < cs):
            raise LayoutError(f"Stride Divisibility Condition fails in composition: stride "
                              f"{rest_d} vs extent {cs} of the left layout")
        next_shape = _ceil_div_int(cs, abs(rest_d))
        next_stride = _ceil_div_int(abs(rest_d), cs) * _signum(rest_d)
        if next_shape == 1 or rest_s == 1:
            rest_d = next_stride
            continue
        new_shape = min(next_shape, rest_s)
        if rest_s % new_shape != 0:
            raise LayoutError(f"Shape Divisibility Condition fails in composition: extent "
                              f"{rest_s} is not a multiple of {new_shape}")
        res_s.append(new_shape)
        res_d.append(rest_d * cd)
        rest_s = rest_s // new_shape
        rest_d = next_stride
    if not res_s:
        return Layout(rest_s, rest_d * ld[R - 1])
    if rest_s == 1:
        return Layout(unwrap(tuple(res_s)), unwrap(tuple(res_d)))
    return Layout(tuple(res_s) + (rest_s,), tuple(res_d) + (rest_d * ld[R - 1],))


def _coprofile(layout: Layout) -> Any:
    std = flatten_to_tuple(layout.stride)
    bases = [d for d in std if isinstance(d, ScaledBasis) and d.path]
    if not bases:
        return 0
    return (0,) * (max(d.path[0] for d in bases) + 1)


def composition(lhs: Layout, rhs: Any) -> Layout:
    """``R = lhs o rhs``: ``R(c) == lhs(rhs(c))`` for every coordinate ``c`` of ``rhs``, and
    ``R`` has the shape of ``rhs`` (``compatible(rhs, R)``).

    ``rhs`` may be a Layout, an integer ``n`` (meaning ``n:1``), ``_`` (identity), or a
    tuple tiler applied mode-wise; as in the C++ header, a tuple tiler *drops* the modes of
    ``lhs`` it does not reach.
    """
    from threadmap.layout.swizzle import ComposedLayout, Swizzle  # late: swizzle imports us

    if isinstance(lhs, (ComposedLayout, Swizzle)):
        return lhs.compose(rhs)  # type: ignore[union-attr]
    if isinstance(rhs, Layout):
        flat = coalesce_x(lhs, _coprofile(rhs))
        return _composition_impl(flat.shape, flat.stride, rhs.shape, rhs.stride)
    if isinstance(rhs, (ComposedLayout, Swizzle)):
        return ComposedLayout.of(lhs, rhs)  # type: ignore[return-value]
    if isinstance(rhs, tuple):
        if len(rhs) > rank(lhs):
            raise LayoutError(f"composition: tiler {rhs} has more modes than {lhs}")
        return _transform_layout(lhs, rhs, composition, keep_rest=False)
    if isinstance(rhs, Underscore):
        return lhs
    if is_int(rhs):
        _check_shape(rhs, "tiler")
        flat = coalesce_x(lhs)
        return _composition_impl(flat.shape, flat.stride, int(rhs), 1)
    raise LayoutError(f"composition: cannot compose with {rhs!r}")


# --------------------------------------------------------------------------- complement
def _complement_impl(shp: Any, std: Any, cotarget: Any) -> Layout:
    if not isinstance(std, tuple) and std == 0:
        return Layout(_coalesce_shape(cotarget))
    shp_l = list(wrap(shp))
    std_l = list(wrap(std))
    R = len(shp_l)
    res_s: list[int] = []
    res_d: list[int] = [1]
    for i in range(R - 1):
        min_stride = min(std_l)
        min_idx = std_l.index(min_stride)
        new_shape = min_stride // res_d[i]
        if new_shape == 0:
            raise LayoutError("Non-injective Layout detected in complement")
        new_stride = min_stride * shp_l[min_idx]
        del shp_l[min_idx]
        del std_l[min_idx]
        res_s.append(new_shape)
        res_d.append(new_stride)
    new_shape = std_l[0] // res_d[R - 1]
    if new_shape == 0:
        raise LayoutError("Non-injective Layout detected in complement")
    res_s.append(new_shape)
    new_stride = std_l[0] * shp_l[0]
    rest_shape = _coalesce_shape(ceil_div(cotarget, new_stride))
    rest_stride = compact_major_left(rest_shape, new_stride)
    return coalesce(Layout((tuple(res_s), rest_shape), (tuple(res_d), rest_stride)))


def _coalesce_shape(shp: Any) -> Any:
    """``coalesce(Shape)``: all static, so the product (an integer)."""
    return product(shp)


@_dispatch()
def complement(layout: Layout, cotarget: Any = None) -> Layout:
    """The layout of the "rest": ordered, disjoint from ``layout`` and together with it
    filling ``cotarget``.

    Laws (for injective ``layout``): ``complement(L, M)(i) != L(j)`` for ``i > 0`` and all
    ``j``; ``complement(L, M)`` is strictly increasing; ``size(L) * size(complement(L, M))
    >= M`` up to rounding, and ``make_layout(L, complement(L, M))`` is a bijection onto
    ``[0, M)`` when ``L`` tiles ``M``.
    """
    if isinstance(cotarget, Layout):
        cotarget = cotarget.shape
    f = filter(layout)
    if any(isinstance(d, ScaledBasis) for d in flatten_to_tuple(f.stride)):
        raise LayoutError("complement of a layout with basis strides is not supported")
    if any(d < 0 for d in flatten_to_tuple(f.stride)):
        raise LayoutError(f"complement needs non-negative strides, got {layout}")
    if cotarget is None:
        cotarget = cosize(f)
    cotarget = _norm(cotarget)
    _check_shape(cotarget, "cotarget")
    return _complement_impl(f.shape, f.stride, cotarget)


# --------------------------------------------------------------------------- inverses
@_dispatch("right_inverse", swizzle=True)
def right_inverse(layout: Any) -> Any:
    """``R`` with ``layout(R(i)) == i`` for all ``i < size(R)`` (the largest such prefix)."""
    if isinstance(layout, Underscore):
        return layout
    cl = coalesce(layout)
    lstride = wrap(cl.stride)
    lshape = wrap(cl.shape)
    preprod = [1]
    for s in lshape:
        preprod.append(preprod[-1] * s)
    order = sorted(range(len(lstride)), key=lambda i: lstride[i])
    res_s: list[int] = [1]
    res_d: list[int] = [0]
    curr = 1
    for i in order:
        if lstride[i] == curr:
            res_s.append(lshape[i])
            res_d.append(preprod[i])
            curr = lshape[i] * lstride[i]
    return coalesce(Layout(tuple(res_s), tuple(res_d)))


@_dispatch("left_inverse", swizzle=True)
def left_inverse(layout: Any) -> Any:
    """``R`` with ``R(layout(i)) == i`` for all ``i < size(layout)`` when ``layout`` is
    injective (a quasi-inverse otherwise)."""
    if isinstance(layout, Underscore):
        return layout
    cl = coalesce(layout)
    lstride = wrap(cl.stride)
    lshape = wrap(cl.shape)
    preprod = [1]
    for s in lshape:
        preprod.append(preprod[-1] * s)
    order = sorted(range(len(lstride)), key=lambda i: lstride[i])
    res_s: list[int] = []
    res_d: list[int] = [0]
    for i in order:
        d = lstride[i]
        if d == 0:
            continue
        sz = product(tuple(res_s))
        if d % sz != 0:
            raise LayoutError(f"Left inverse divisibility condition fails for {layout}")
        res_s.append(d // sz)
        res_d.append(preprod[i])
    res_s.append(lshape[order[-1]])
    return coalesce(Layout(tuple(res_s), tuple(res_d)))


@_dispatch()
def max_common_layout(a: Layout, b: Layout) -> Layout:
    """Largest ``R`` with ``a(R(i)) == i`` and ``b(R(i)) == i`` (a contiguous common vector)."""
    if isinstance(b, _composed_types()[0]):
        return b.max_common_layout(a)
    inv_b = right_inverse(b)
    common = coalesce(composition(a, inv_b))
    c0 = common[0]
    if c0.stride == 1:
        return composition(inv_b, c0)
    return Layout(1, 0)


@_dispatch()
def max_common_vector(a: Layout, b: Layout) -> int:
    """Number of contiguous elements that correspond in ``a`` and ``b``."""
    if isinstance(b, _composed_types()[0]):
        return b.max_common_vector(a)
    common = coalesce(composition(a, right_inverse(b)))
    c0 = common[0]
    return c0.shape if c0.stride == 1 else 1  # type: ignore[return-value]


@_dispatch()
def nullspace(layout: Layout) -> Layout:
    """Layout of the stride-0 modes: ``layout(nullspace(L)(i)) == 0``."""
    fd = flatten_to_tuple(layout.stride)
    fs = flatten_to_tuple(layout.shape)
    idx = [i for i, d in enumerate(fd) if not isinstance(d, ScaledBasis) and d == 0]
    if not idx:
        return Layout(1, 0)
    rstride = compact_major_left(fs)
    return Layout(unwrap(tuple(fs[i] for i in idx)), unwrap(tuple(rstride[i] for i in idx)))


# --------------------------------------------------------------------------- zip helpers
def _zip(t0: Any, t1: Any) -> Any:
    if isinstance(t0, tuple):
        if not isinstance(t1, tuple) or len(t1) != len(t0):
            raise LayoutError("zip: mismatched ranks")
        return tuple((a, b) for a, b in zip(t0, t1))
    return ((t0, t1),)


def zip_layouts(a: Layout, b: Layout) -> Layout:
    """``zip(layoutA, layoutB)``: ``((a0,b0),(a1,b1),...)``."""
    return Layout(_zip(a.shape, b.shape), _zip(a.stride, b.stride))


def _zip2_by(t: Any, guide: Any) -> Any:
    if isinstance(guide, tuple):
        t = wrap(t)
        if len(t) < len(guide):
            raise LayoutError("zip2_by: mismatched ranks")
        split = [_zip2_by(t[i], guide[i]) for i in range(len(guide))]
        return (tuple(s[0] for s in split), tuple(s[1] for s in split) + tuple(t[len(guide):]))
    if not isinstance(t, tuple) or len(t) != 2:
        raise LayoutError("zip2_by: expected a rank-2 mode")
    return t


@_dispatch()
def tile_unzip(layout: Layout, tiler: Any) -> Layout:
    """Rearrange ``((A,a),(B,b),...)`` into ``((A,B,...),(a,b,...))`` guided by ``tiler``."""
    return Layout(_zip2_by(layout.shape, tiler), _zip2_by(layout.stride, tiler))


# --------------------------------------------------------------------------- divides
@_dispatch()
def _by_tiler(name: str, layout: Layout, tiler: Any, on_layout: Any, recurse: Any) -> Layout:
    """The header's tiler dispatch: a Layout applies ``on_layout``; a tuple applies
    ``recurse`` mode-wise (remaining modes kept); ``_`` keeps; an integer ``n`` means ``n:1``."""
    if isinstance(tiler, Layout):
        return on_layout(layout, tiler)
    if isinstance(tiler, tuple):
        if len(tiler) > rank(layout):
            raise LayoutError(f"{name}: Too many modes in tiler.")
        return _transform_layout(layout, tiler, recurse)
    if isinstance(tiler, Underscore):
        return layout
    if is_int(tiler):
        return on_layout(layout, Layout(int(tiler)))
    raise LayoutError(f"{name}: bad tiler {tiler!r}")


def logical_divide(layout: Layout, tiler: Any) -> Layout:
    """``composition(L, make_layout(T, complement(T, shape(coalesce(L)))))``; a tuple tiler
    divides mode-wise (remaining modes kept), an integer ``n`` means ``n:1``, ``_`` keeps."""
    return _by_tiler("logical_divide", layout, tiler,
                     lambda a, t: composition(a, make_layout(t, complement(t, coalesce(a).shape))),
                     logical_divide)


@_dispatch()
def zipped_divide(layout: Layout, tiler: Any) -> Layout:
    """``((tile modes), (rest modes))``."""
    return tile_unzip(logical_divide(layout, tiler), _tiler_profile(tiler))


def _tiler_profile(tiler: Any) -> Any:
    # zip2_by's guide: Layouts and integers are leaves, tuples recurse
    if isinstance(tiler, tuple):
        return tuple(_tiler_profile(t) for t in tiler)
    return 0


@_dispatch()
def tiled_divide(layout: Layout, tiler: Any) -> Layout:
    """``((tile modes), rest0, rest1, ...)``."""
    r = zipped_divide(layout, tiler)
    return r(_, _rep(r[1]))


@_dispatch()
def flat_divide(layout: Layout, tiler: Any) -> Layout:
    """``(tile0, tile1, ..., rest0, rest1, ...)``."""
    r = zipped_divide(layout, tiler)
    return r(_rep(r[0]), _rep(r[1]))


def _rep(layout: Layout) -> Any:
    """CuTe ``repeat<rank(L)>(_)``: a bare ``_`` for rank 1, else a tuple of ``_``."""
    r = rank(layout)
    return _ if r == 1 else (_,) * r


# --------------------------------------------------------------------------- products
@_dispatch("logical_product", swizzle=False)
def logical_product(block: Layout, tiler: Any) -> Layout:
    """``make_layout(A, composition(complement(A, size(A) * cosize(B)), B))``: ``B``'s
    layout of copies of ``A``."""
    if isinstance(tiler, _composed_types()[0]):
        from threadmap.layout.swizzle import swizzled_logical_product

        return swizzled_logical_product(block, tiler)
    return _by_tiler("logical_product", block, tiler,
                     lambda a, t: make_layout(a, composition(complement(a, size(a) * cosize(t)), t)),
                     logical_product)


@_dispatch()
def zipped_product(block: Layout, tiler: Any) -> Layout:
    return tile_unzip(logical_product(block, tiler), _tiler_profile(tiler))


@_dispatch()
def tiled_product(block: Layout, tiler: Any) -> Layout:
    r = zipped_product(block, tiler)
    return r(_, _rep(r[1]))


@_dispatch()
def flat_product(block: Layout, tiler: Any) -> Layout:
    r = zipped_product(block, tiler)
    return r(_rep(r[0]), _rep(r[1]))


@_dispatch()
def blocked_product(block: Layout, tiler: Layout) -> Layout:
    """Mode-wise product with the block's modes innermost: ``zip(get<0>(P), get<1>(P))`` of
    ``P = logical_product(append<R>(block), append<R>(tiler))``."""
    r = max(rank(block), rank(tiler))
    p = logical_product(append(block, n=r), append(tiler, n=r))
    return zip_layouts(p[0], p[1])


@_dispatch()
def raked_product(block: Layout, tiler: Layout) -> Layout:
    """Like blocked_product with the tiler's modes innermost (interleaved copies)."""
    r = max(rank(block), rank(tiler))
    p = logical_product(append(block, n=r), append(tiler, n=r))
    return zip_layouts(p[1], p[0])


@_dispatch()
def tile_to_shape(block: Layout, trg_shape: IntTuple, order: Any = LayoutLeft) -> Layout:
    """Repeat ``block`` (blocked_product) to fill ``trg_shape``."""
    trg_shape = _norm(trg_shape)
    r = rank(trg_shape)
    if rank(block) > r:
        raise LayoutError("Rank of layout must be <= rank of target shape.")
    padded = append(block, n=r)
    bshape = product_each(padded.shape)
    tshape = product_each(trg_shape)
    for t, b in zip(wrap(tshape), wrap(bshape)):
        if t % b:
            raise LayoutError("tile_to_shape: block shape does not divide the target shape.")
    pshape = ceil_div(tshape, bshape)
    if order is LayoutLeft:
        prod_layout = Layout(pshape)
    elif order is LayoutRight:
        prod_layout = Layout(pshape, LayoutRight)
    else:
        prod_layout = make_ordered_layout(pshape, order)
    return blocked_product(padded, prod_layout)


# --------------------------------------------------------------------------- up/down cast
@_dispatch("upcast", swizzle=True)
def upcast(layout: Layout, n: int) -> Layout:
    """Reinterpret ``n`` elements as one (e.g. 4 x f32 -> 1 x 128-bit)."""
    def rec(s: Any, d: Any) -> Any:
        if isinstance(s, tuple):
            return make_layout(*[rec(a, b) for a, b in zip(s, d)])
        if d == 0:
            return Layout(s, 0)
        if d % n != 0 and n % d != 0:
            raise LayoutError(f"upcast<{n}>: Divisibility condition fails for stride {d}")
        return Layout(_ceil_div_int(s, _ceil_div_int(n, abs(d))), _signum(d) * _ceil_div_int(abs(d), n))
    return rec(layout.shape, layout.stride)


@_dispatch("downcast", swizzle=True)
def downcast(layout: Layout, n: int) -> Layout:
    """Reinterpret one element as ``n`` (stride-1 modes grow, others scale)."""
    if 1 not in flatten_to_tuple(layout.stride) and -1 not in flatten_to_tuple(layout.stride):
        raise LayoutError("Downcast requires adjacent elements (a stride-1 mode)")

    def rec(s: Any, d: Any) -> Any:
        if isinstance(s, tuple):
            return make_layout(*[rec(a, b) for a, b in zip(s, d)])
        if d in (1, -1):
            return Layout(s * n, d)
        return Layout(s, d * n)
    return rec(layout.shape, layout.stride)


@_dispatch()
def recast_layout(layout: Layout, old_bits: int, new_bits: int) -> Layout:
    """Layout of the same memory viewed with elements of ``new_bits`` instead of ``old_bits``."""
    from math import gcd
    g = gcd(old_bits, new_bits)
    num, den = new_bits // g, old_bits // g
    out = layout
    if num != 1:
        out = upcast(out, num)
    if den != 1:
        out = downcast(out, den)
    return out


# --------------------------------------------------------------------------- slicing
def _lift_slice(c: Any, t: Any) -> tuple:
    if isinstance(c, tuple):
        if not isinstance(t, tuple) or len(c) != len(t):
            raise LayoutError(f"slice: coordinate {c} does not match {t}")
        return tuple(x for ci, ti in zip(c, t) for x in _lift_slice(ci, ti))
    if isinstance(c, Underscore):
        return (t,)
    return ()


def _slice_t(c: Any, t: Any) -> Any:
    if isinstance(c, tuple):
        return _lift_slice(c, t)
    if isinstance(c, Underscore):
        return t
    return ()


def _lift_dice(c: Any, t: Any) -> tuple:
    if isinstance(c, tuple):
        if not isinstance(t, tuple) or len(c) != len(t):
            raise LayoutError(f"dice: coordinate {c} does not match {t}")
        return tuple(x for ci, ti in zip(c, t) for x in _lift_dice(ci, ti))
    if isinstance(c, Underscore):
        return ()
    return (t,)


def _dice_t(c: Any, t: Any) -> Any:
    if isinstance(c, tuple):
        return _lift_dice(c, t)
    if isinstance(c, Underscore):
        return ()
    return t


def slice_(crd: Any, layout: Layout) -> Layout:
    """Keep the modes where ``crd`` has ``_`` (CuTe ``slice``); nested tuples splice."""
    crd = _norm_crd(crd)
    if isinstance(layout, _composed_types()[0]):
        return layout.slice(crd)
    return Layout(_slice_t(crd, layout.shape), _slice_t(crd, layout.stride))


def dice(crd: Any, x: Any) -> Any:
    """Keep the modes where ``crd`` is *not* ``_`` (CuTe ``dice``); works on layouts and
    on int tuples (used by Step projections: X = ``_`` drops, 1 keeps)."""
    crd = _norm_crd(crd)
    if isinstance(x, Layout):
        return Layout(_dice_t(crd, x.shape), _dice_t(crd, x.stride))
    return _dice_t(crd, x)


def _norm_crd(c: Any) -> Any:
    if isinstance(c, list):
        return tuple(_norm_crd(x) for x in c)
    if isinstance(c, tuple):
        return tuple(_norm_crd(x) for x in c)
    return c


def _zero_underscores(c: Any) -> Any:
    if isinstance(c, tuple):
        return tuple(_zero_underscores(x) for x in c)
    return 0 if isinstance(c, Underscore) else c


def slice_and_offset(crd: Any, layout: Layout) -> tuple[Layout, Any]:
    """``(slice(crd, L), L(crd with _ -> 0))``."""
    crd = _norm_crd(crd)
    if isinstance(layout, _composed_types()[0]):
        return layout.slice_and_offset(crd)
    return slice_(crd, layout), layout(_zero_underscores(crd))


# --------------------------------------------------------------------------- tensors
class Tensor:
    """A layout with a base offset: CuTe's ``Tensor`` with a counting engine.

    ``offset`` is an integer (a pointer offset in elements) or an :class:`ArithTuple`
    coordinate for identity tensors.  ``tensor(c) == offset + layout(c)``; slicing with ``_``
    returns a Tensor, as CuTe's ``tensor(_, k)`` does.
    """

    __slots__ = ("layout", "offset")

    def __init__(self, layout: Layout, offset: Any = 0) -> None:
        self.layout = layout
        self.offset = offset

    @property
    def shape(self) -> IntTuple:
        return self.layout.shape

    @property
    def stride(self) -> IntTuple:
        return self.layout.stride

    def __call__(self, *crd: Any) -> Any:
        c: Any = crd[0] if len(crd) == 1 else tuple(crd)
        c = _norm_crd(c)
        if _has_underscore(c):
            sub, off = slice_and_offset(c, self.layout)
            return Tensor(sub, _add(self.offset, off))
        return _add(self.offset, self.layout(c))

    def __getitem__(self, crd: Any) -> Any:
        return self(crd)

    def __str__(self) -> str:
        return f"{self.offset} o {self.layout}"

    __repr__ = __str__

    def values(self) -> np.ndarray:
        """Integer tensors: ``offset + layout(i)`` for every ``i`` in ``[0, size)``."""
        return self.layout.table(np.int64) + int(self.offset)


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, (ArithTuple, ScaledBasis)) or isinstance(b, (ArithTuple, ScaledBasis)):
        return ArithTuple.of(a) + b
    return a + b


def make_tensor(offset: Any, layout: Layout) -> Tensor:
    return Tensor(layout, offset)


def make_identity_tensor(shp: IntTuple) -> Tensor:
    """Tensor whose value at each coordinate is the coordinate itself (for predicates)."""
    return Tensor(make_identity_layout(shp), ArithTuple({}))


def _as_tensor(t: Any) -> Tensor:
    return t if isinstance(t, Tensor) else Tensor(t, 0)


def _zipped_divide_tensor(t: Tensor, tiler: Any) -> Tensor:
    return Tensor(zipped_divide(t.layout, tiler), t.offset)


def inner_partition(tensor: Any, tiler: Any, coord: Any) -> Tensor:
    """Tile by ``tiler`` and index the *rest* mode with ``coord``, keeping the tile."""
    t = _zipped_divide_tensor(_as_tensor(tensor), tiler)
    c0 = _rep(t.layout[0])
    coord = _norm_crd(coord)
    if isinstance(coord, tuple):
        r1 = rank(t.layout[1])
        coord = coord + (_,) * (r1 - len(coord))
    return t(c0, coord)


def outer_partition(tensor: Any, tiler: Any, coord: Any) -> Tensor:
    """Tile by ``tiler`` and index the *tile* mode with ``coord``, keeping the rest."""
    t = _zipped_divide_tensor(_as_tensor(tensor), tiler)
    c1 = _rep(t.layout[1])
    coord = _norm_crd(coord)
    if isinstance(coord, tuple):
        r0 = rank(t.layout[0])
        coord = coord + (_,) * (r0 - len(coord))
    return t(coord, c1)


def local_tile(tensor: Any, tiler: Any, coord: Any, proj: Any = None) -> Tensor:
    """CTA-level tiling: the tile of ``tensor`` at ``coord`` (``proj``: a Step, with ``_``
    for X, selecting which modes of tiler and coord apply)."""
    tiler = _norm(tiler) if not isinstance(tiler, Layout) else tiler
    if proj is not None:
        tiler = dice(proj, tiler)
        coord = dice(proj, _norm_crd(coord))
    return inner_partition(tensor, tiler, coord)


def local_partition(tensor: Any, tile: Layout, index: Any, proj: Any = None) -> Tensor:
    """Thread-level partition: the elements owned by thread ``index`` of the thread layout
    ``tile`` (``outer_partition`` by ``product_each(shape(tile))`` at ``get_flat_coord``)."""
    if proj is not None:
        tile = dice(proj, tile)
    return outer_partition(tensor, product_each(tile.shape), tile.get_flat_coord(index))
