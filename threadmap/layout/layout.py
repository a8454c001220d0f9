"""CuTe layouts and their algebra (``cute/layout.hpp``), with CuTe's names and semantics.

A :class:`Layout` is a pair of congruent int tuples ``shape:stride``; it maps a coordinate
(or a 1-D colexicographic index) to ``sum_k crd_k * stride_k``.  Every operation here
follows the C++ header's algorithm step by step, so results agree with CuTe *structurally*
(the same shape/stride trees), not only as functions.  Integers are static (``Int<N>``)
unless they are :class:`~threadmap.layout.integral_constant.Dyn`; where the header branches
on static-ness (``coalesce``, ``right_inverse``, ``left_inverse``, ``complement``) both
branches are implemented.

Every free function also accepts the objects CuTe overloads it for (ComposedLayout,
Swizzle): they are routed through :mod:`threadmap.layout.dispatch`, so this module does not
import them.  Extents may be 0 (``size((4,0):(1,4)) == 0``), as in the header.

Bounds: nesting deeper than :data:`~threadmap.layout.int_tuple.MAX_DEPTH` levels and
integers beyond int64 raise :class:`~threadmap.errors.LayoutError`; every algorithm is
``O(n log n)`` in the number of modes.

Evaluation (``layout(i)``) goes through :func:`threadmap.layout.int_tuple.crd2idx`, the one
evaluation core that serves Python ints, numpy arrays and z3 ``Sym`` values.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from math import gcd
from typing import Any

import numpy as np

from threadmap.errors import LayoutError
from threadmap.layout.arithmetic_tuple import ArithTuple, ScaledBasis, make_basis_like, tuple_str
from threadmap.layout.backend import cxx_divmod
from threadmap.layout.dispatch import LayoutLike, call_method, dispatch
from threadmap.layout.int_tuple import (
    MAX_DEPTH,
    IntTuple,
    ceil_div,
    check_depth,
    check_int_tuple,
    compact_major_left,
    compact_major_right,
    congruent,
    congruent_unchecked,
    crd2idx_unchecked,
    flatten,
    flatten_to_tuple,
    is_int,
    leaf_ok,
    product,
    product_each,
    unflatten,
    unwrap,
    wrap,
)
from threadmap.layout.int_tuple import depth as tuple_depth  # layout's depth() takes layouts too
from threadmap.layout.int_tuple import replace as replace_mode  # replace_layout's namesake
from threadmap.layout.integral_constant import is_constant, is_static
from threadmap.layout.table import fast_table
from threadmap.layout.underscore import (
    Underscore,
    _,
    dice_tuple,
    has_underscore,
    repeat_underscore,
    slice_tuple,
)

__all__ = [
    "Layout", "LayoutLeft", "LayoutRight", "GenColMajor", "GenRowMajor", "make_layout",
    "make_identity_layout", "make_ordered_layout", "size", "cosize", "coshape", "rank",
    "depth", "shape", "stride", "get", "select", "take", "group", "flatten_layout", "append",
    "prepend", "replace_layout", "unflatten_layout", "coalesce", "filter_zeros", "filter",
    "composition", "complement", "right_inverse", "left_inverse", "logical_divide",
    "zipped_divide", "tiled_divide", "flat_divide", "logical_product", "zipped_product",
    "tiled_product", "flat_product", "blocked_product", "raked_product", "hier_unzip",
    "zip_layouts", "tile_unzip", "slice_", "dice", "slice_and_offset", "max_common_layout",
    "max_common_vector", "domain_distribute", "nullspace", "upcast", "downcast", "recast_layout", "tile_to_shape",
    "make_layout_like", "make_fragment_like", "Underscore", "_",
]

#: largest |integer| a shape or stride may hold (CuTe's integers are at most 64-bit)
MAX_INT = (1 << 63) - 1
#: largest number of elements ``Layout.table`` materialises
MAX_TABLE = 1 << 30


class Major:
    """The type of the tags ``LayoutLeft`` and ``LayoutRight`` (CuTe's column- and row-major)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


LayoutLeft = Major("LayoutLeft")
LayoutRight = Major("LayoutRight")
GenColMajor = LayoutLeft
GenRowMajor = LayoutRight


def _leaves_checked(t: Any, what: str) -> tuple:
    """The leaves of ``t`` after checking its depth and that it is made of tuples."""
    if isinstance(t, list):
        raise LayoutError(f"{what} must be a tuple or an integer, got a list")
    return flatten_to_tuple(t)


def _check_int(v: Any, what: str) -> None:
    if type(v) is int and -MAX_INT <= v <= MAX_INT:
        return  # fast path
    if not is_int(v):
        raise LayoutError(f"{what} element {v!r} is not an integer")
    if not -MAX_INT <= v <= MAX_INT:
        shown = v if v.bit_length() < 200 else f"~2^{v.bit_length()}"
        raise LayoutError(f"{what} element {shown} does not fit in int64")


def _check_shape(shape: Any, where: str = "shape") -> None:
    for s in _leaves_checked(shape, where):
        _check_int(s, where)
        if s < 0:
            raise LayoutError(f"{where} element {s} is negative")


def _check_stride(stride: Any) -> None:
    for d in _leaves_checked(stride, "stride"):
        if isinstance(d, ScaledBasis):
            _check_int(d.value, "stride")
            if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < MAX_DEPTH
                       for i in d.path):
                raise LayoutError(f"basis stride {d!r} has a bad mode path")
        else:
            _check_int(d, "stride")


def _flat_ints(t: Any) -> tuple | None:
    """``t`` as a tuple when it is a plain ``int`` or a flat tuple of plain ints, else None."""
    if type(t) is int:
        return (t,)
    if type(t) is tuple and all(type(x) is int for x in t):
        return t
    return None


def normalize_int_tuple(t: Any) -> Any:
    """numpy integers -> Python ints, lists -> tuples (bounded depth, checked once)."""
    if isinstance(t, (tuple, list)):
        check_depth(tuple(t) if isinstance(t, list) else t)
        return _norm_rec(t)
    if isinstance(t, np.integer):
        return int(t)
    return t


def _norm_rec(t: Any) -> Any:
    if isinstance(t, tuple) and all(type(x) is int for x in t):
        return t  # the common case: nothing to convert
    if isinstance(t, (tuple, list)):
        return tuple(_norm_rec(x) for x in t)
    if isinstance(t, np.integer):
        return int(t)
    return t


class Layout:
    """``shape:stride``, a function from coordinates to offsets.

    Laws: ``L(i) == crd2idx(i, shape, stride)`` for a 1-D index ``i``;
    ``L(c0, c1, ...) == sum_k c_k * stride_k`` for a coordinate; a coordinate containing
    ``_`` slices (``L(_, 3)`` keeps mode 0), as CuTe's ``operator()`` does.
    """

    __slots__ = ("shape", "stride")
    shape: IntTuple
    stride: IntTuple

    def __init__(self, shape: IntTuple, stride: Any = None) -> None:
        fs = _flat_ints(shape)
        fd = _flat_ints(stride)
        if fs is not None and fd is not None and type(shape) is type(stride) and len(fs) == len(fd) \
                and all(0 <= v <= MAX_INT for v in fs) and all(-MAX_INT <= v <= MAX_INT for v in fd):
            # fast path: flat, plain ints (most layouts the algebra builds)
            self.shape = shape
            self.stride = stride
            return
        if isinstance(shape, Layout) or isinstance(stride, Layout):
            raise LayoutError("Layout(shape, stride) takes int tuples, not layouts "
                              "(use make_layout to concatenate layouts)")
        shape = normalize_int_tuple(shape)
        _check_shape(shape)
        if stride is None or stride is LayoutLeft:
            stride = compact_major_left(shape)
        elif stride is LayoutRight:
            stride = compact_major_right(shape)
        else:
            stride = normalize_int_tuple(stride)
            _check_stride(stride)
            if not congruent_unchecked(shape, stride):  # depths already checked by normalize_int_tuple
                raise LayoutError(f"shape {tuple_str(shape)} and stride {tuple_str(stride)} "
                                  "are not congruent")
        self.shape = shape
        self.stride = stride

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
        if isinstance(c, list):
            c = normalize_coord(c)
        if has_underscore(c):
            return slice_(c, self)
        check_int_tuple(c, "crd", "coordinate")
        return crd2idx_unchecked(c, self.shape, self.stride)

    def table(self, dtype: Any = None, out: np.ndarray | None = None) -> np.ndarray:
        """``L(i)`` for every ``i`` in ``[0, size)``, as one numpy array (colex order).

        Vectorised as broadcast per-mode sums ``sum_k stride_k * arange(shape_k)`` written
        into one array (see :func:`threadmap.layout.table.fast_table`): no per-element
        Python work.  ``dtype`` defaults to int32 when every value fits.
        """
        if size(self) > MAX_TABLE:
            raise LayoutError(f"table of {size(self)} elements exceeds the limit of {MAX_TABLE}")
        return fast_table(self, None, 0, dtype=dtype, out=out)

    def get_hier_coord(self, idx: Any) -> Any:
        """``idx2crd(idx, shape, stride)`` (only meaningful for compact layouts)."""
        return _idx2crd_strided(idx, self.shape, self.stride)

    def get_flat_coord(self, idx: Any) -> tuple:
        """Per top-level mode, the colex 1-D coordinate inside that mode (CuTe get_flat_coord)."""
        h = self.get_hier_coord(idx)
        return tuple(_colex_index(c, s) for c, s in zip(wrap(h), wrap(self.shape)))

    def get_1d_coord(self, idx: Any) -> Any:
        return _colex_index(self.get_hier_coord(idx), self.shape)

    def compose(self, *others: Any) -> Any:
        return composition(self, others[0] if len(others) == 1 else tuple(others))

    def with_shape(self, *shp: Any) -> Any:
        s = shp[0] if len(shp) == 1 else tuple(shp)
        return composition(self, Layout(s))


def _stride_eq(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_stride_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, ScaledBasis) or isinstance(b, ScaledBasis):
        return isinstance(a, ScaledBasis) and isinstance(b, ScaledBasis) and a == b
    return not isinstance(a, tuple) and not isinstance(b, tuple) and a == b


def _has_underscore(c: Any) -> bool:
    return has_underscore(c)


def _idx2crd_strided(idx: Any, shp: Any, std: Any) -> Any:
    if isinstance(idx, tuple):
        raise LayoutError(f"expected a 1-D index, got {idx!r}")
    check_int_tuple(idx, "crd", "index")
    return _idx2crd_strided_rec(idx, shp, std)


def _idx2crd_strided_rec(idx: Any, shp: Any, std: Any) -> Any:
    if isinstance(shp, tuple):
        return tuple(_idx2crd_strided_rec(idx, s, d) for s, d in zip(shp, std))
    if shp == 1:
        return 0
    if shp == 0:
        raise LayoutError("idx2crd into an extent-0 mode is undefined")
    if isinstance(std, ScaledBasis):
        raise LayoutError("idx2crd through a basis stride is not supported")
    if std == 0:
        raise LayoutError("idx2crd through a stride-0 mode of size > 1 is undefined")
    return cxx_divmod(cxx_divmod(idx, std)[0], shp)[1]  # C++: (idx / stride) % shape


def _colex_index(c: Any, s: Any) -> Any:
    if isinstance(c, tuple):
        acc: Any = 0
        mult = 1
        for ci, si in zip(c, s):
            acc = acc + _colex_index(ci, si) * mult
            mult *= product(si)
        return acc
    return c


def _as_layout(x: Any, what: str) -> Layout:
    if not isinstance(x, Layout):
        raise LayoutError(f"{what}: expected a Layout, got {type(x).__name__} {x!r}")
    return x


# --------------------------------------------------------------------------- construction
def make_layout(*args: Any) -> Any:
    """``make_layout(shape[, stride|LayoutLeft|LayoutRight])`` or ``make_layout(L0, L1, ...)``
    (concatenation of layouts as modes; a single layout becomes a rank-1 layout, as in CuTe).

    Law: ``make_layout(L0, L1)(i, j) == L0(i) + L1(j)``.
    """
    if args and all(isinstance(a, Layout) for a in args):
        return Layout(tuple(a.shape for a in args), tuple(a.stride for a in args))
    if any(isinstance(a, (Layout, LayoutLike)) for a in args):
        if len(args) == 1 and isinstance(args[0], LayoutLike):
            return call_method(args[0], "make_layout")
        raise LayoutError("make_layout: cannot mix layouts with shapes or composed layouts")
    if len(args) == 1:
        return Layout(args[0])
    if len(args) == 2:
        return Layout(args[0], args[1])
    raise LayoutError("make_layout takes (shape[, stride]) or layouts")


def make_identity_layout(shp: IntTuple) -> Layout:
    """Layout mapping each coordinate to itself: strides are basis elements ``E<i>``."""
    shp = normalize_int_tuple(shp)
    _check_shape(shp)
    return Layout(shp, make_basis_like(shp))


def make_ordered_layout(shp: IntTuple, order: IntTuple) -> Layout:
    """Compact layout whose strides grow in the order given by ``order`` (CuTe
    ``make_ordered_layout`` / ``compact_order``): a leaf of ``order`` ``o`` gets the product
    of the extents whose order is smaller than ``o``.

    Law: the result is a bijection onto ``[0, size)`` when the orders are distinct.
    """
    shp = normalize_int_tuple(shp)
    order = normalize_int_tuple(order)
    _check_shape(shp)
    for o in flatten_to_tuple(order):
        _check_int(o, "order")
    try:
        ref = _product_like(shp, order)
    except (ValueError, TypeError):
        raise LayoutError(f"make_ordered_layout: order {order} does not match shape {shp}") from None
    ref_shape = flatten_to_tuple(ref)
    ref_order = flatten_to_tuple(order)
    # the running product of the extents of smaller order, by one sort: O(n log n)
    idx = sorted(range(len(ref_order)), key=lambda i: ref_order[i])
    start_of: dict[int, Any] = {}
    acc: Any = 1
    k = 0
    while k < len(idx):
        o = ref_order[idx[k]]
        start_of[o] = acc
        while k < len(idx) and ref_order[idx[k]] == o:
            acc = acc * ref_shape[idx[k]]
            k += 1

    def rec(s: Any, o: Any) -> Any:
        if isinstance(o, tuple):
            return tuple(rec(si, oi) for si, oi in zip(s, o))
        return compact_major_left(s, start_of[o])

    return Layout(shp, rec(shp, order))


def _product_like(shp: Any, prof: Any) -> Any:
    if isinstance(prof, tuple):
        if not isinstance(shp, tuple) or len(shp) != len(prof):
            raise ValueError("mismatch")
        return tuple(_product_like(s, p) for s, p in zip(shp, prof))
    return product(shp)


def make_layout_like(layout: Layout) -> Layout:
    """Compact layout with the same shape, strides ordered as ``layout``'s (0-strides kept)."""
    layout = _as_layout(layout, "make_layout_like")
    fz = _filter_zeros_shape(layout.stride, layout.shape)
    ordered = make_ordered_layout(fz, layout.stride)
    return Layout(layout.shape, ordered.stride)


def _filter_zeros_t(d: Any, s: Any) -> Any:
    if isinstance(d, tuple):
        return tuple(_filter_zeros_t(a, b) for a, b in zip(d, s, strict=True))
    return 1 if is_constant(0, d) else s


@dispatch()
def make_fragment_like(layout: Layout) -> Layout:
    """``make_fragment_like(layout)`` (cute/layout.hpp): mode 0 column-major (stride-0 modes
    kept broadcast-free), the other modes ordered like ``layout``'s strides, via
    tiled_product.  Law: the result is compact (a bijection onto ``[0, cosize)``) when the
    strides are non-zero."""
    layout = _as_layout(layout, "make_fragment_like")
    r = rank(layout)
    if r > 1:
        s0, d0 = layout.shape[0], layout.stride[0]  # type: ignore[index]
        mode0 = Layout(s0, compact_major_left(_filter_zeros_t(d0, s0)))
        rest_s = tuple(layout.shape[1:])  # type: ignore[index]
        rest_d = tuple(layout.stride[1:])  # type: ignore[index]
        return tiled_product(mode0, make_ordered_layout(rest_s, rest_d))
    return Layout(layout.shape)


# --------------------------------------------------------------------------- accessors
def _shape_of(x: Any, what: str) -> Any:
    if isinstance(x, Layout):
        return x.shape
    if isinstance(x, (tuple, list)) or is_int(x):
        t = normalize_int_tuple(x)
        for v in flatten_to_tuple(t):
            if not is_int(v) and not isinstance(v, ScaledBasis):
                raise LayoutError(f"{what}: {v!r} is not an integer")
        return t
    raise LayoutError(f"{what}: expected a layout or an int tuple, got {type(x).__name__} {x!r}")


@dispatch()
def size(x: Any) -> Any:
    """Number of elements of the domain: the product of the shape (of a layout or an int
    tuple).  Law: ``size(L) == product(shape(L))``; 0 when an extent is 0."""
    return product(_shape_of(x, "size"))


def _abs(d: Any) -> Any:
    if isinstance(d, ScaledBasis):
        return ScaledBasis(abs(d.value), d.path)
    return abs(d)


@dispatch()
def coshape(layout: Layout) -> Any:
    """``coshape(L)``: ``inner_product(shape - 1, abs(stride)) + 1``, per codomain mode when
    the strides are basis elements (a tuple), else an integer."""
    layout = _as_layout(layout, "coshape")
    terms: dict[tuple[int, ...], Any] = {}
    for s, d in zip(flatten_to_tuple(layout.shape), flatten_to_tuple(layout.stride)):
        ad = _abs(d)
        path, v = (ad.path, ad.value) if isinstance(ad, ScaledBasis) else ((), ad)
        # (s - 1) * |d|, with the header's static special cases (Dyn arithmetic)
        terms[path] = terms.get(path, 0) + (s - 1) * v
    if set(terms) <= {()}:
        return terms.get((), 0) + 1
    return _coshape_tree(terms, ())


def _coshape_tree(terms: dict[tuple[int, ...], Any], prefix: tuple[int, ...]) -> Any:
    """``as_arithmetic_tuple`` of a sum of scaled bases, plus 1 on every leaf."""
    k = len(prefix)
    groups: dict[int, dict[tuple[int, ...], Any]] = {}
    for p, v in terms.items():
        if len(p) > k:
            groups.setdefault(p[k], {})[p] = v
    if not groups:
        return terms.get(prefix, 0) + 1
    return tuple(_coshape_tree(groups[i], prefix + (i,)) if i in groups else 1
                 for i in range(max(groups) + 1))


@dispatch()
def cosize(layout: Layout) -> Any:
    """``cosize(L) == size(coshape(L))``: with ``coshape = sum_k (s_k - 1) * |d_k| + 1``, the
    extent of the codomain for any sign of the strides (``cosize(4:-1) == 4``)."""
    return product(coshape(layout))


@dispatch()
def rank(x: Any) -> int:
    """Number of top-level modes (1 for an integer or a rank-1 layout)."""
    t = _shape_of(x, "rank")
    return len(t) if isinstance(t, tuple) else 1


@dispatch()
def depth(x: Any) -> int:
    """Nesting depth of the shape: 0 for an integer."""
    return tuple_depth(_shape_of(x, "depth"))


@dispatch()
def shape(x: Any) -> IntTuple:
    """``shape(L)`` (an int tuple is its own shape)."""
    return _shape_of(x, "shape")


@dispatch()
def stride(x: Layout) -> IntTuple:
    """``stride(L)``; not defined for a ComposedLayout (deleted in CuTe)."""
    return _as_layout(x, "stride").stride


def _get_t(t: Any, i: Any) -> Any:
    if not isinstance(i, int) or isinstance(i, bool):
        raise LayoutError(f"mode index {i!r} is not an integer")
    if isinstance(t, tuple):
        if not 0 <= i < len(t):
            raise LayoutError(f"mode {i} out of range for rank {len(t)}")
        return t[i]
    if i != 0:
        raise LayoutError(f"mode {i} out of range for rank 1")
    return t


@dispatch()
def get(layout: Layout, *path: int) -> Layout:
    """Sublayout ``get<I0,I1,...>(layout)``: mode ``I0``, then its mode ``I1``, ...

    Law: ``get(L, i)(c) == L(0, ..., c, ..., 0)`` (c in position i)."""
    layout = _as_layout(layout, "get")
    s, d = layout.shape, layout.stride
    for i in path:
        s, d = _get_t(s, i), _get_t(d, i)
    return Layout(s, d)


@dispatch()
def select(layout: Layout, *modes: int) -> Layout:
    """``select<I...>(L)``: the modes ``I...`` in that order (Layouts only in CuTe)."""
    layout = _as_layout(layout, "select")
    return Layout(tuple(_get_t(layout.shape, i) for i in modes),
                  tuple(_get_t(layout.stride, i) for i in modes))


def _range_args(name: str, begin: Any, end: Any) -> None:
    for v in (begin, end):
        if not isinstance(v, int) or isinstance(v, bool):
            raise LayoutError(f"{name}: {v!r} is not an integer")


@dispatch()
def take(layout: Layout, begin: int, end: int) -> Layout:
    """Modes ``[begin, end)`` (``take<B,E>``)."""
    layout = _as_layout(layout, "take")
    _range_args("take", begin, end)
    r = rank(layout)
    if not (0 <= begin < end <= r):
        raise LayoutError(f"take<{begin},{end}>: range out of bounds for rank {r}")
    return select(layout, *range(begin, end))


@dispatch()
def group(layout: Layout, begin: int, end: int) -> Layout:
    """Group modes ``[begin, end)`` into one nested mode (``group<B,E>``)."""
    layout = _as_layout(layout, "group")
    _range_args("group", begin, end)
    s, d = wrap(layout.shape), wrap(layout.stride)
    if not (0 <= begin <= end <= len(s)):
        raise LayoutError(f"group<{begin},{end}>: range out of bounds for rank {len(s)}")
    return Layout(s[:begin] + (s[begin:end],) + s[end:], d[:begin] + (d[begin:end],) + d[end:])


@dispatch("flatten")
def flatten_layout(layout: Layout) -> Layout:
    """Layout with depth at most 1 and the same function (``flatten(L)``)."""
    layout = _as_layout(layout, "flatten")
    return Layout(flatten(layout.shape), flatten(layout.stride))


def _append_n(t: Any, n: int, x: Any) -> Any:
    if isinstance(t, tuple):
        if len(t) > n:
            raise LayoutError(f"append<{n}>: rank {len(t)} exceeds {n}")
        return t + (x,) * (n - len(t))
    return t if n == 1 else (t,) + (x,) * (n - 1)


def _mode_xs(x: Layout | None, what: str) -> tuple[Any, Any]:
    if x is None:
        return 1, 0
    x = _as_layout(x, what)
    return x.shape, x.stride


@dispatch()
def append(layout: Layout, x: Layout | None = None, n: int | None = None) -> Layout:
    """Append mode ``x`` (default ``1:0``); with ``n``, pad with ``x`` up to rank ``n``
    (``append<N>(layout, x)``)."""
    layout = _as_layout(layout, "append")
    xs, xd = _mode_xs(x, "append")
    if n is not None:
        if not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= 1 << 16:
            raise LayoutError(f"append<{n!r}>: bad rank")
        return Layout(_append_n(layout.shape, n, xs), _append_n(layout.stride, n, xd))
    return Layout(wrap(layout.shape) + (xs,), wrap(layout.stride) + (xd,))


@dispatch()
def prepend(layout: Layout, x: Layout | None = None) -> Layout:
    """Prepend mode ``x`` (default ``1:0``)."""
    layout = _as_layout(layout, "prepend")
    xs, xd = _mode_xs(x, "prepend")
    return Layout((xs,) + wrap(layout.shape), (xd,) + wrap(layout.stride))


@dispatch("replace")
def replace_layout(layout: Layout, n: int, x: Layout) -> Layout:
    """``replace<N>(layout, x)``: mode ``N`` replaced by the layout ``x``.

    Law: ``get(replace_layout(L, n, X), n) == X`` and the other modes are unchanged."""
    layout = _as_layout(layout, "replace")
    x = _as_layout(x, "replace")
    return Layout(replace_mode(layout.shape, n, x.shape), replace_mode(layout.stride, n, x.stride))


@dispatch("unflatten")
def unflatten_layout(layout: Layout, target_profile: Any) -> Layout:
    """``unflatten(layout, target_profile)``: a flat layout regrouped as the profile.

    Law: ``flatten(unflatten_layout(L, p)) == L`` for a flat ``L`` and
    ``congruent(shape(result), p)``."""
    layout = _as_layout(layout, "unflatten")
    if depth(layout) > 1:
        raise LayoutError(f"unflatten: {layout} is not flat")
    p = normalize_int_tuple(target_profile)
    return Layout(unflatten(layout.shape, p), unflatten(layout.stride, p))


# --------------------------------------------------------------------------- coalesce
def _static_true_eq(a: Any, b: Any) -> bool:
    """``is_constant<true, decltype(a == b)>``: both sides static and equal."""
    if isinstance(a, ScaledBasis) or isinstance(b, ScaledBasis):
        return (isinstance(a, ScaledBasis) and isinstance(b, ScaledBasis) and a.path == b.path
                and is_static(a.value) and is_static(b.value) and a.value == b.value)
    return is_static(a) and is_static(b) and a == b


def _bw_coalesce(fs: Sequence[Any], fd: Sequence[Any], ns: Any, nd: Any) -> Layout:
    """The header's ``bw_coalesce``: walk modes right to left, dropping static extent-1
    modes and merging where ``shape_i * stride_i == stride_{i+1}`` is a static ``true``
    (modes are prepended: kept reversed here and flipped once, so this is linear)."""
    rs: list[Any] = [ns]   # reversed new shape: rs[-1] is the front
    rd: list[Any] = [nd]
    for i in range(len(fs) - 2, -1, -1):
        s, d = fs[i], fd[i]
        if is_constant(1, s):
            continue
        if len(rs) == 1 and is_constant(1, rs[0]):
            rs, rd = [s], [d]
        elif is_static(rs[-1]) and _static_true_eq(s * d, rd[-1]):
            rs[-1] = s * rs[-1]
            rd[-1] = d
        else:
            rs.append(s)
            rd.append(d)
    if len(rs) == 1:
        if is_constant(1, rs[0]):
            return Layout(1, 0)
        return Layout(rs[0], rd[0])
    return Layout(tuple(reversed(rs)), tuple(reversed(rd)))


@dispatch()
def coalesce(layout: Layout, profile: Any = None) -> Layout:
    """Simplest layout with the same function on ``[0, size)`` (depth <= 1).

    Law: ``coalesce(L)(i) == L(i)`` for all ``i < size(L)`` and ``size`` is preserved.
    With a tuple ``profile``, coalesces each mode separately (by-mode coalesce).
    """
    layout = _as_layout(layout, "coalesce")
    if isinstance(profile, tuple):
        return _transform_layout(layout, profile, coalesce)
    fs, fd = flatten_to_tuple(layout.shape), flatten_to_tuple(layout.stride)
    if not fs:
        return Layout(1, 0)
    return _bw_coalesce(fs, fd, fs[-1], fd[-1])


def coalesce_x(layout: Layout, profile: Any = None) -> Layout:
    """``detail::coalesce_x``: like coalesce but also preserves the function outside the
    domain (the last mode's stride survives even when its extent is 1)."""
    layout = _as_layout(layout, "coalesce_x")
    if isinstance(profile, tuple):
        return _transform_layout(layout, profile, coalesce_x)
    fs, fd = flatten_to_tuple(layout.shape), flatten_to_tuple(layout.stride)
    if not fs:
        return Layout(1, 0)
    return _bw_coalesce(fs, fd, 2 if is_constant(1, fs[-1]) else fs[-1], fd[-1])


def _filter_zeros_shape(std: Any, shp: Any) -> Any:
    if isinstance(std, tuple):
        return tuple(_filter_zeros_shape(d, s) for d, s in zip(std, shp))
    return 1 if is_constant(0, std) else shp


def filter_zeros(layout: Layout, profile: Any = None) -> Layout:
    """Replace the extent of every static stride-0 mode by 1 (``filter_zeros``)."""
    layout = _as_layout(layout, "filter_zeros")
    ref = layout.stride if profile is None else normalize_int_tuple(profile)
    if not congruent(ref, layout.shape) and profile is not None:
        raise LayoutError(f"filter_zeros: profile {profile} does not match {layout}")
    return Layout(_filter_zeros_shape(ref, layout.shape), layout.stride)


@dispatch()
def filter(layout: Layout, profile: Any = None) -> Layout:
    """``coalesce(filter_zeros(L))``: remove stride-0 and size-1 modes.

    Law: ``filter(L)`` enumerates the same set of distinct offsets as ``L``."""
    layout = _as_layout(layout, "filter")
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
    if r1 > r0:
        raise LayoutError(f"tiler/profile {t1} has more modes than {layout}")
    sh, st = wrap(layout.shape), wrap(layout.stride)
    modes = [f(Layout(sh[i], st[i]), t1w[i]) for i in range(r1)]
    if keep_rest:
        modes += [Layout(sh[i], st[i]) for i in range(r1, r0)]
    return make_layout(*modes)


# --------------------------------------------------------------------------- composition
def _ceil_div_int(a: Any, b: Any) -> Any:
    return (a + b - 1) // b


def _signum(x: Any) -> int:
    return (x > 0) - (x < 0)


def _composition_leaf(ls: tuple, ld: tuple, rs: Any, rd: Any) -> Layout:
    """The header's ``composition_impl`` for one leaf ``rs:rd`` of the right layout over a
    coalesced left layout ``ls:ld``.  Each step of the walk over the left modes divides the
    remaining extent or the remaining stride by at least 2, and the walk stops once the
    extent is 1 and the stride is +-1 (nothing later can change or reject the result), so a
    leaf costs ``O(log)`` steps, not ``O(rank(lhs))``."""
    if is_constant(0, rd):
        return Layout(rs, rd)
    R = len(ls)
    if R == 1:
        return Layout(rs, rd * ld[0])
    res_s: list[Any] = []
    res_d: list[Any] = []
    rest_s, rest_d = rs, rd
    for i in range(R - 1):
        cs, cd = ls[i], ld[i]
        if cs == 0:
            raise LayoutError("composition: the left layout has an extent-0 mode")
        if is_static(cs) and is_static(rest_d) and not (rest_d % cs == 0 or rest_d < cs):
            raise LayoutError(f"Stride Divisibility Condition fails in composition: stride "
                              f"{rest_d} vs extent {cs} of the left layout")
        next_shape = _ceil_div_int(cs, abs(rest_d))
        next_stride = _ceil_div_int(abs(rest_d), cs) * _signum(rest_d)
        if is_constant(1, next_shape) or is_constant(1, rest_s):
            rest_d = next_stride
            if is_constant(1, rest_s) and is_static(rest_d) and abs(rest_d) <= 1:
                # later modes pass every check and keep |stride| == 1 (ceil_div): the
                # result is known, so a leaf costs O(log) steps instead of O(rank(lhs))
                break
            continue
        new_shape = min(next_shape, rest_s)
        if new_shape == 0:
            raise LayoutError("composition with an extent-0 mode (the header divides by it)")
        if is_static(new_shape) and is_static(rest_s) and rest_s % new_shape != 0:
            raise LayoutError(f"Shape Divisibility Condition fails in composition: extent "
                              f"{rest_s} is not a multiple of {new_shape}")
        res_s.append(new_shape)
        res_d.append(rest_d * cd)
        rest_s = rest_s // new_shape
        rest_d = next_stride
    if not res_s:
        return Layout(rest_s, rest_d * ld[R - 1])
    if is_constant(1, rest_s):
        return Layout(unwrap(tuple(res_s)), unwrap(tuple(res_d)))
    return Layout(tuple(res_s) + (rest_s,), tuple(res_d) + (rest_d * ld[R - 1],))


def _composition_impl(ls: Any, ld: Any, rs: Any, rd: Any) -> Layout:
    """``composition_impl`` over a coalesced (flat) left layout ``ls:ld``: right-distributive
    over the modes of ``rs:rd``; a basis stride selects a mode of the left layout."""
    lsw, ldw = wrap(ls), wrap(ld)

    def rec(s: Any, d: Any) -> Layout:
        if isinstance(s, tuple):
            return make_layout(*[rec(a, b) for a, b in zip(s, d)])
        if isinstance(d, ScaledBasis):
            sub_s, sub_d = ls, ld
            for i in d.path:
                sub_s, sub_d = _get_t(sub_s, i), _get_t(sub_d, i)
            return _composition_impl(sub_s, sub_d, s, d.value)
        return _composition_leaf(lsw, ldw, s, d)

    return rec(rs, rd)


def _coprofile(layout: Layout) -> Any:
    std = flatten_to_tuple(layout.stride)
    bases = [d for d in std if isinstance(d, ScaledBasis) and d.path]
    if not bases:
        return 0
    return (0,) * (max(d.path[0] for d in bases) + 1)


def composition(lhs: Any, rhs: Any) -> Any:
    """``R = lhs o rhs``: ``R(c) == lhs(rhs(c))`` for every coordinate ``c`` of ``rhs``, and
    ``R`` has the shape of ``rhs`` (``compatible(rhs, R)``).

    ``rhs`` may be a Layout, an integer ``n`` (meaning ``n:1``), ``_`` (identity), or a
    tuple tiler applied mode-wise; as in the C++ header, a tuple tiler *drops* the modes of
    ``lhs`` it does not reach.  A ComposedLayout or Swizzle on either side goes to its
    ``composition`` (left) or ``r_composition`` (right) method.
    """
    if isinstance(lhs, LayoutLike):
        return call_method(lhs, "composition", rhs)
    lhs = _as_layout(lhs, "composition")
    if isinstance(rhs, Layout):
        flat = coalesce_x(lhs, _coprofile(rhs))
        return _composition_impl(flat.shape, flat.stride, rhs.shape, rhs.stride)
    if isinstance(rhs, LayoutLike):
        return call_method(rhs, "r_composition", lhs)
    if isinstance(rhs, list):
        rhs = normalize_int_tuple(rhs)
    if isinstance(rhs, tuple):
        check_depth(rhs)
        if len(rhs) > rank(lhs):
            raise LayoutError(f"composition: tiler {rhs} has more modes than {lhs}")
        return _transform_layout(lhs, rhs, composition, keep_rest=False)
    if isinstance(rhs, Underscore):
        return lhs
    if is_int(rhs):
        _check_shape(rhs, "tiler")
        flat = coalesce_x(lhs)
        return _composition_impl(flat.shape, flat.stride, rhs, 1)
    raise LayoutError(f"composition: cannot compose with {rhs!r}")


# --------------------------------------------------------------------------- complement
def _complement_impl(shp: Any, std: Any, cotarget: Any) -> Layout:
    if not isinstance(std, tuple) and is_constant(0, std):
        return Layout(product(cotarget))
    shp_l = wrap(shp)
    std_l = wrap(std)
    R = len(shp_l)
    if R > 1 and not is_static(std_l):
        raise LayoutError("Dynamic-stride complement only for rank-1 layouts")
    # the header's fold takes the smallest remaining stride (the first one on ties): a
    # stable sort by stride, done once
    order = sorted(range(R), key=lambda i: std_l[i])
    res_s: list[Any] = []
    res_d: list[Any] = [1]
    for k in range(R - 1):
        i = order[k]
        min_stride = std_l[i]
        new_shape = min_stride // res_d[k]
        if is_static(new_shape) and new_shape == 0:
            raise LayoutError("Non-injective Layout detected in complement.")
        res_s.append(new_shape)
        res_d.append(min_stride * shp_l[i])
    last = order[-1]
    new_shape = std_l[last] // res_d[R - 1]
    if is_static(new_shape) and new_shape == 0:
        raise LayoutError("Non-injective Layout detected in complement.")
    res_s.append(new_shape)
    new_stride = std_l[last] * shp_l[last]
    rest_shape = product(ceil_div(cotarget, new_stride))
    rest_stride = compact_major_left(rest_shape, new_stride)
    return coalesce(Layout((tuple(res_s), rest_shape), (tuple(res_d), rest_stride)))


@dispatch()
def complement(layout: Layout, cotarget: Any = None) -> Layout:
    """The layout of the "rest": ordered, disjoint from ``layout`` and together with it
    filling ``cotarget`` (default ``cosize(filter(layout))``).

    Laws (for injective ``layout``): ``complement(L, M)(i) != L(j)`` for ``i > 0`` and all
    ``j``; ``complement(L, M)`` is strictly increasing; ``size(L) * size(complement(L, M))
    >= M`` up to rounding, and ``make_layout(L, complement(L, M))`` is a bijection onto
    ``[0, M)`` when ``L`` tiles ``M``.
    """
    layout = _as_layout(layout, "complement")
    if isinstance(cotarget, Layout):
        cotarget = cotarget.shape
    f = filter(layout)
    if any(isinstance(d, ScaledBasis) for d in flatten_to_tuple(f.stride)):
        raise LayoutError("complement of a layout with basis strides is not supported")
    if any(d < 0 for d in flatten_to_tuple(f.stride)):
        raise LayoutError(f"complement needs non-negative strides, got {layout}")
    if any(s == 0 for s in flatten_to_tuple(f.shape)):
        raise LayoutError(f"complement of a layout with an extent-0 mode: {layout}")
    if cotarget is None:
        cotarget = cosize(f)
    cotarget = normalize_int_tuple(cotarget)
    _check_shape(cotarget, "cotarget")
    return _complement_impl(f.shape, f.stride, cotarget)


# --------------------------------------------------------------------------- inverses
def exchange_sort_order(keys: Sequence[int]) -> list[int]:
    """The permutation CuTe's ``detail::SortByKey`` produces: ``exchange_sort`` of
    ``(key, index)`` pairs compared by key only, which is *not* stable.

    ``exchange_sort`` swaps ``a[i]`` and ``a[j]`` (for ``i < j``) whenever ``a[j] < a[i]``.
    The keys come out sorted; within one key ``K`` the order is that of a run-rotation
    process: scanning the input left to right, each ``K`` element joins a queue, and each
    element with a key smaller than ``K`` rotates the (non-empty) queue by one.  Computed in
    ``O(n log n)`` with one Fenwick tree over positions (the counts of smaller keys between
    consecutive ``K`` elements give the rotation amounts).

    Law: equals the permutation of the header's quadratic ``exchange_sort`` on every input.
    """
    if not isinstance(keys, (list, tuple)) or not all(is_int(k) for k in keys):
        raise LayoutError(f"exchange_sort_order needs a sequence of integers, got {keys!r}")
    n = len(keys)
    if n < 2:
        return list(range(n))
    by_key: dict[Any, list[int]] = {}
    for i, k in enumerate(keys):
        by_key.setdefault(k, []).append(i)
    if len(by_key) == n:  # distinct keys: any sort gives the same order
        return sorted(range(n), key=lambda i: keys[i])
    tree = [0] * (n + 1)  # Fenwick tree of the positions holding a smaller key

    def count_upto(p: int) -> int:  # positions < p
        c = 0
        while p > 0:
            c += tree[p]
            p -= p & -p
        return c

    out: list[int] = []
    for k in sorted(by_key):
        pos = by_key[k]
        if len(pos) > 1:
            run: deque[int] = deque()
            prev = count_upto(pos[0])
            for p in pos:
                c = count_upto(p)
                if run:
                    run.rotate(-((c - prev) % len(run)))
                run.append(p)
                prev = c
            tail = count_upto(n) - prev
            if tail:
                run.rotate(-(tail % len(run)))
            out.extend(run)
        else:
            out.extend(pos)
        for p in pos:
            q = p + 1
            while q <= n:
                tree[q] += 1
                q += q & -q
    return out


def _sort_keys(strides: Sequence[Any], what: str) -> list[Any]:
    for d in strides:
        if isinstance(d, ScaledBasis):
            raise LayoutError(f"{what} of a layout with basis strides is not supported "
                              "(the header sorts integer strides)")
    return [int(d) for d in strides]


@dispatch()
def right_inverse(layout: Any) -> Any:
    """``R`` with ``layout(R(i)) == i`` for all ``i < size(R)`` (the largest such prefix):
    over the coalesced modes sorted by static stride (the header's unstable exchange sort),
    a mode of stride equal to the running product ``curr`` is taken (its extent, its index
    position as stride) and ``curr *= extent * stride``.  Dynamic strides are skipped, and
    a dynamic extent makes ``curr`` dynamic, which stops the chain.

    Law: ``layout(R(i)) == i`` for ``i < size(R)``.
    """
    if isinstance(layout, Underscore):
        return layout
    layout = _as_layout(layout, "right_inverse")
    cl = coalesce(layout)
    lstride = wrap(cl.stride)
    lshape = wrap(cl.shape)
    preprod: list[Any] = [1]
    for s in lshape:
        preprod.append(s * preprod[-1])
    static_idx = [i for i, d in enumerate(lstride) if is_static(d)]
    keys = _sort_keys([lstride[i] for i in static_idx], "right_inverse")
    order = [static_idx[j] for j in exchange_sort_order(keys)]
    res_s: list[Any] = [1]
    res_d: list[Any] = [0]
    curr: Any = 1
    for i in order:
        if is_static(curr) and lstride[i] == curr:
            res_s.append(lshape[i])
            res_d.append(preprod[i])
            curr = lshape[i] * lstride[i]
    return coalesce(Layout(tuple(res_s), tuple(res_d)))


@dispatch()
def left_inverse(layout: Any) -> Any:
    """``R`` with ``R(layout(i)) == i`` for all ``i < size(layout)`` when ``layout`` is
    injective (a quasi-inverse otherwise): over the coalesced modes sorted by stride (the
    header's exchange sort), each non-zero stride ``d`` contributes the extent
    ``d / size(so far)`` (which must divide) and its index position as stride; the last
    sorted mode's extent closes the shape.  Static strides are required.

    Law: ``layout(R(layout(i))) == layout(i)`` for ``i < size(layout)``.
    """
    if isinstance(layout, Underscore):
        return layout
    layout = _as_layout(layout, "left_inverse")
    cl = coalesce(layout)
    lstride = wrap(cl.stride)
    lshape = wrap(cl.shape)
    if not is_static(lstride):
        raise LayoutError("Left inverse requires static strides.")
    preprod: list[Any] = [1]
    for s in lshape:
        preprod.append(s * preprod[-1])
    order = exchange_sort_order(_sort_keys(lstride, "left_inverse"))
    res_s: list[Any] = []
    res_d: list[Any] = [0]
    sz: Any = 1
    for i in order:
        d = lstride[i]
        if d == 0:
            continue
        if sz == 0 or d % sz != 0:
            raise LayoutError(f"Left inverse divisibility condition fails for {layout}")
        q = d // sz  # exact: d % sz == 0 (C++ truncation and floor agree)
        res_s.append(q)
        res_d.append(preprod[i])
        sz = sz * q
    res_s.append(lshape[order[-1]])
    neg = [q for q in res_s if q < 0]
    if neg:
        # checked after the whole fold, so that a divisibility failure (which stops the
        # header from compiling) is reported as such
        raise LayoutError(f"left_inverse of {layout}: a negative stride gives the negative "
                          f"extent {neg[0]}; the header builds that layout, threadmap's "
                          "layouts have non-negative extents")
    return coalesce(Layout(tuple(res_s), tuple(res_d)))


def _first_mode(layout: Layout) -> tuple[Any, Any]:
    s, d = wrap(layout.shape)[0], wrap(layout.stride)[0]
    return s, d


@dispatch()
def max_common_layout(a: Any, b: Any) -> Any:
    """Largest ``R`` with ``a(R(i)) == i`` and ``b(R(i)) == i`` (a contiguous common vector):
    ``composition(right_inverse(b), layout<0>(common))`` when the first mode of
    ``common = coalesce(composition(a, right_inverse(b)))`` is a static stride-1 one."""
    if isinstance(b, LayoutLike):
        return call_method(b, "r_max_common_layout", a)
    a = _as_layout(a, "max_common_layout")
    b = _as_layout(b, "max_common_layout")
    inv_b = right_inverse(b)
    common = coalesce(composition(a, inv_b))
    s0, d0 = _first_mode(common)
    if is_static(s0) and is_constant(1, d0):
        return composition(inv_b, Layout(s0, d0))
    return Layout(1, 0)


@dispatch()
def max_common_vector(a: Any, b: Any) -> Any:
    """Number of contiguous elements that correspond in ``a`` and ``b``: the extent of the
    first mode of ``coalesce(composition(a, right_inverse(b)))`` when it is a static
    stride-1 mode, else 1."""
    if isinstance(b, LayoutLike):
        return call_method(b, "r_max_common_vector", a)
    a = _as_layout(a, "max_common_vector")
    b = _as_layout(b, "max_common_vector")
    common = coalesce(composition(a, right_inverse(b)))
    s0, d0 = _first_mode(common)
    return s0 if is_static(s0) and is_constant(1, d0) else 1


def domain_distribute(a: Any, b: Any) -> Layout:
    """``domain_distribute(a, b)`` (``cute/layout.hpp``): a layout that picks up to ``b``
    elements of the domain of shape ``a`` (a shape or a layout), taking from each flattened
    mode of ``a`` in turn as many as it can: mode ``i`` contributes ``gcd(a_i, rest)`` with
    ``rest`` what ``b`` still needs.  Strides are ``a``'s column-major strides; the result is
    coalesced.  ``b`` is an integer; ``a`` and ``b`` must be static in the header.

    ``domain_distribute((15,14), 6) == (3,2):(1,15)``: 6 does not divide 15, so three come
    from mode 0 and two from mode 1 (the header's example).

    Law (the header's postconditions): ``size(result)`` divides ``b``; ``result`` is strictly
    increasing on ``[0, size(result))`` and stays inside ``[0, size(a))``; and
    ``composition(make_layout(shape(a)), result)`` is defined.
    """
    if not is_int(b) or isinstance(b, bool):
        raise LayoutError(f"domain_distribute: the count must be an integer, got {b!r}")
    if b <= 0:
        raise LayoutError(f"domain_distribute: the count must be positive, got {b}")
    flat = flatten_to_tuple(shape(a))
    rest = int(b)
    picked: list[int] = []
    for ai in flat:
        g = gcd(int(ai), rest)
        picked.append(g)
        rest //= g
    return coalesce(Layout(tuple(picked), compact_major_left(tuple(flat))))


@dispatch()
def nullspace(layout: Layout) -> Layout:
    """Layout of the stride-0 modes: ``layout(nullspace(L)(i)) == 0``."""
    layout = _as_layout(layout, "nullspace")
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
    a = _as_layout(a, "zip")
    b = _as_layout(b, "zip")
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


@dispatch()
def tile_unzip(layout: Layout, tiler: Any) -> Layout:
    """Rearrange ``((A,a),(B,b),...)`` into ``((A,B,...),(a,b,...))`` guided by ``tiler``."""
    layout = _as_layout(layout, "tile_unzip")
    prof = _tiler_profile(tiler)
    return Layout(_zip2_by(layout.shape, prof), _zip2_by(layout.stride, prof))


def hier_unzip(splitter: Any, a: Layout, b: Any) -> Layout:
    """pycute's ``hier_unzip(splitter, A, B)``: apply ``splitter`` (a rank-2-result
    operation such as ``logical_divide``) mode-wise and gather the results as
    ``((A0,B0,...),(a0,b0,...,rest))``.  ``hier_unzip(logical_divide, A, B) ==
    zipped_divide(A, B)`` and ``hier_unzip(logical_product, A, B) == zipped_product(A, B)``
    (CuTe 4 spells it ``tile_unzip(splitter(A, B), B)``).

    Law: the result has the same function as ``splitter(A, B)`` up to the mode order.
    """
    if splitter not in (logical_divide, logical_product):
        raise LayoutError(f"hier_unzip: the splitter must be logical_divide or logical_product, "
                          f"got {splitter!r}")
    return tile_unzip(splitter(a, b), b)


def _tiler_profile(tiler: Any) -> Any:
    # zip2_by's guide: Layouts and integers are leaves, tuples recurse
    if isinstance(tiler, tuple):
        return tuple(_tiler_profile(t) for t in tiler)
    return 0


# --------------------------------------------------------------------------- divides
def _by_tiler(name: str, layout: Layout, tiler: Any, on_layout: Any, recurse: Any) -> Layout:
    """The header's tiler dispatch: a Layout applies ``on_layout``; a tuple applies
    ``recurse`` mode-wise (remaining modes kept); ``_`` keeps; an integer ``n`` means ``n:1``."""
    layout = _as_layout(layout, name)
    if isinstance(tiler, list):
        tiler = normalize_int_tuple(tiler)
    if isinstance(tiler, Layout):
        return on_layout(layout, tiler)
    if isinstance(tiler, tuple):
        check_depth(tiler)
        if len(tiler) > rank(layout):
            raise LayoutError(f"{name}: Too many modes in tiler.")
        return _transform_layout(layout, tiler, recurse)
    if isinstance(tiler, Underscore):
        return layout
    if is_int(tiler):
        _check_shape(tiler, "tiler")
        return on_layout(layout, Layout(int(tiler)))
    raise LayoutError(f"{name}: bad tiler {tiler!r}")


@dispatch()
def logical_divide(layout: Layout, tiler: Any) -> Layout:
    """``composition(L, make_layout(T, complement(T, shape(coalesce(L)))))``; a tuple tiler
    divides mode-wise (remaining modes kept), an integer ``n`` means ``n:1``, ``_`` keeps.

    Law: ``logical_divide(L, T)(i, j) == L(T'(i, j))`` with ``T' = (T, complement(T))``."""
    return _by_tiler("logical_divide", layout, tiler,
                     lambda a, t: composition(a, make_layout(t, complement(t, coalesce(a).shape))),
                     logical_divide)


@dispatch()
def zipped_divide(layout: Layout, tiler: Any) -> Layout:
    """``((tile modes), (rest modes))``: ``tile_unzip(logical_divide(L, T), T)``."""
    return tile_unzip(logical_divide(layout, tiler), tiler)


@dispatch()
def tiled_divide(layout: Layout, tiler: Any) -> Layout:
    """``((tile modes), rest0, rest1, ...)``."""
    r = zipped_divide(layout, tiler)
    return r(_, repeat_underscore(rank(r[1])))


@dispatch()
def flat_divide(layout: Layout, tiler: Any) -> Layout:
    """``(tile0, tile1, ..., rest0, rest1, ...)``."""
    r = zipped_divide(layout, tiler)
    return r(repeat_underscore(rank(r[0])), repeat_underscore(rank(r[1])))


# --------------------------------------------------------------------------- products
@dispatch()
def logical_product(block: Layout, tiler: Any) -> Any:
    """``make_layout(A, composition(complement(A, size(A) * cosize(B)), B))``: ``B``'s
    layout of copies of ``A``.  Law: ``logical_product(A, B)(i, 0) == A(i)``."""
    if isinstance(tiler, LayoutLike):
        return call_method(tiler, "r_logical_product", _as_layout(block, "logical_product"))
    return _by_tiler("logical_product", block, tiler,
                     lambda a, t: make_layout(a, composition(complement(a, size(a) * cosize(t)), t)),
                     logical_product)


@dispatch()
def zipped_product(block: Layout, tiler: Any) -> Layout:
    """``tile_unzip(logical_product(A, B), B)``."""
    return tile_unzip(logical_product(block, tiler), tiler)


@dispatch()
def tiled_product(block: Layout, tiler: Any) -> Layout:
    """``((block modes), rest0, rest1, ...)``."""
    r = zipped_product(block, tiler)
    return r(_, repeat_underscore(rank(r[1])))


@dispatch()
def flat_product(block: Layout, tiler: Any) -> Layout:
    """``(block0, block1, ..., rest0, rest1, ...)``."""
    r = zipped_product(block, tiler)
    return r(repeat_underscore(rank(r[0])), repeat_underscore(rank(r[1])))


@dispatch()
def blocked_product(block: Layout, tiler: Layout) -> Layout:
    """Mode-wise product with the block's modes innermost: ``zip(get<0>(P), get<1>(P))`` of
    ``P = logical_product(append<R>(block), append<R>(tiler))``."""
    block = _as_layout(block, "blocked_product")
    tiler = _as_layout(tiler, "blocked_product")
    r = max(rank(block), rank(tiler))
    p = logical_product(append(block, n=r), append(tiler, n=r))
    return zip_layouts(p[0], p[1])


@dispatch()
def raked_product(block: Layout, tiler: Layout) -> Layout:
    """Like blocked_product with the tiler's modes innermost (interleaved copies)."""
    block = _as_layout(block, "raked_product")
    tiler = _as_layout(tiler, "raked_product")
    r = max(rank(block), rank(tiler))
    p = logical_product(append(block, n=r), append(tiler, n=r))
    return zip_layouts(p[1], p[0])


@dispatch()
def tile_to_shape(block: Layout, trg_shape: IntTuple, order: Any = LayoutLeft) -> Layout:
    """Repeat ``block`` (blocked_product) to fill ``trg_shape``; the repetitions are laid out
    column-major, row-major (``LayoutRight``) or in the given ``order``.

    Law: ``product_each(shape(result)) == product_each(trg_shape)``."""
    block = _as_layout(block, "tile_to_shape")
    if isinstance(trg_shape, Layout):
        trg_shape = trg_shape.shape
    trg_shape = normalize_int_tuple(trg_shape)
    _check_shape(trg_shape, "target shape")
    r = rank(trg_shape)
    if rank(block) > r:
        raise LayoutError("Rank of layout must be <= rank of target shape.")
    padded = append(block, n=r)
    bshape = product_each(padded.shape)
    tshape = product_each(trg_shape)
    for t, b in zip(wrap(tshape), wrap(bshape)):
        if b == 0 or t % b:
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
def cast_factor(n: Any, what: str) -> int:
    if not is_int(n) or n <= 0 or n > MAX_INT:
        raise LayoutError(f"{what}<{n!r}>: the factor must be a positive integer")
    return int(n)


@dispatch()
def upcast(layout: Layout, n: int) -> Layout:
    """Reinterpret ``n`` elements as one (e.g. 4 x f32 -> 1 x 128-bit): a mode ``s:d`` with
    ``d != 0`` becomes ``ceil_div(s, ceil_div(n, |d|)) : signum(d) * ceil_div(|d|, n)``."""
    layout = _as_layout(layout, "upcast")
    n = cast_factor(n, "upcast")

    def rec(s: Any, d: Any) -> Any:
        if isinstance(s, tuple):
            return make_layout(*[rec(a, b) for a, b in zip(s, d)])
        if isinstance(d, ScaledBasis):
            raise LayoutError("upcast of a layout with basis strides is not supported")
        if d == 0:
            return Layout(s, d)
        if d % n != 0 and n % d != 0:
            raise LayoutError(f"upcast<{n}>: Divisibility condition fails for stride {d}")
        return Layout(_ceil_div_int(s, _ceil_div_int(n, abs(d))), _signum(d) * _ceil_div_int(abs(d), n))
    return rec(layout.shape, layout.stride)


@dispatch()
def downcast(layout: Layout, n: int) -> Layout:
    """Reinterpret one element as ``n`` (stride-1 modes grow, others scale)."""
    layout = _as_layout(layout, "downcast")
    n = cast_factor(n, "downcast")
    fd = flatten_to_tuple(layout.stride)
    if any(isinstance(d, ScaledBasis) for d in fd):
        raise LayoutError("downcast of a layout with basis strides is not supported")
    if 1 not in fd and -1 not in fd:
        raise LayoutError("Downcast requires adjacent elements (a stride-1 mode)")

    def rec(s: Any, d: Any) -> Any:
        if isinstance(s, tuple):
            return make_layout(*[rec(a, b) for a, b in zip(s, d)])
        if d in (1, -1):
            return Layout(s * n, d)
        return Layout(s, d * n)
    return rec(layout.shape, layout.stride)


@dispatch()
def recast_layout(layout: Layout, old_bits: int, new_bits: int) -> Layout:
    """Layout of the same memory viewed with elements of ``new_bits`` instead of ``old_bits``:
    the ratio reduced, then ``upcast<num>`` and ``downcast<den>``."""
    layout = _as_layout(layout, "recast_layout")
    old_bits = cast_factor(old_bits, "recast_layout")
    new_bits = cast_factor(new_bits, "recast_layout")
    g = gcd(old_bits, new_bits)
    num, den = new_bits // g, old_bits // g
    out = layout
    if num != 1:
        out = upcast(out, num)
    if den != 1:
        out = downcast(out, den)
    return out


# --------------------------------------------------------------------------- slicing
def normalize_coord(c: Any) -> Any:
    if isinstance(c, (list, tuple)):
        check_depth(tuple(c) if isinstance(c, list) else c, "coordinate")
        return tuple(normalize_coord(x) for x in c)
    if isinstance(c, np.integer):
        return int(c)
    return c


def _check_crd(c: Any) -> None:
    """A slicing coordinate holds ``_`` and coordinates of the evaluation core: ints, integer
    arrays (every thread at once), ``Sym`` or ``Interval``."""
    for v in flatten_to_tuple(c):
        if not isinstance(v, Underscore) and not leaf_ok(v, "crd"):
            shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:37] + "..."
            raise LayoutError(f"coordinate element {shown} is not an integer coordinate or _")


def slice_(crd: Any, layout: Layout) -> Layout:
    """Keep the modes where ``crd`` has ``_`` (CuTe ``slice``); nested tuples splice."""
    crd = normalize_coord(crd)
    _check_crd(crd)
    if isinstance(layout, LayoutLike):
        return call_method(layout, "slice", crd)  # type: ignore[no-any-return]
    layout = _as_layout(layout, "slice")
    return Layout(slice_tuple(crd, layout.shape), slice_tuple(crd, layout.stride))


def dice(crd: Any, x: Any) -> Any:
    """Keep the modes where ``crd`` is *not* ``_`` (CuTe ``dice``); works on layouts and
    on int tuples (used by Step projections: X = ``_`` drops, 1 keeps)."""
    crd = normalize_coord(crd)
    if isinstance(x, LayoutLike):
        return call_method(x, "dice", crd)
    if isinstance(x, Layout):
        return Layout(dice_tuple(crd, x.shape), dice_tuple(crd, x.stride))
    return dice_tuple(crd, normalize_coord(x))


def _zero_underscores(c: Any) -> Any:
    if isinstance(c, tuple):
        return tuple(_zero_underscores(x) for x in c)
    return 0 if isinstance(c, Underscore) else c


def slice_and_offset(crd: Any, layout: Layout) -> tuple[Any, Any]:
    """``(slice(crd, L), L(crd with _ -> 0))``."""
    crd = normalize_coord(crd)
    _check_crd(crd)
    if isinstance(layout, LayoutLike):
        return call_method(layout, "slice_and_offset", crd)  # type: ignore[no-any-return]
    layout = _as_layout(layout, "slice_and_offset")
    return slice_(crd, layout), layout(_zero_underscores(crd))


def add_offsets(a: Any, b: Any) -> Any:
    if isinstance(a, (ArithTuple, ScaledBasis)) or isinstance(b, (ArithTuple, ScaledBasis)):
        return ArithTuple.of(a) + b
    return a + b
