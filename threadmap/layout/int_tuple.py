"""CuTe hierarchical integer tuples (``cute/int_tuple.hpp``, ``cute/stride.hpp``).

An *IntTuple* is a Python ``int`` or a (possibly nested) ``tuple`` of IntTuples.  Strides
may also hold :class:`~threadmap.layout.arithmetic_tuple.ScaledBasis` elements (``E<i>`` in
CuTe), which make layouts whose values are coordinates (identity layouts).  Coordinates are
colexicographic: the left-most mode varies fastest.  Integers are static unless they are
:class:`~threadmap.layout.integral_constant.Dyn` (see that module).

Nesting is bounded: every function here raises :class:`~threadmap.errors.LayoutError` for a
tuple nested deeper than :data:`MAX_DEPTH` (64) levels instead of exhausting Python's
recursion limit.

The functions :func:`crd2idx` and :func:`idx2crd` are part of the single evaluation core:
they use only ``+ *`` and C++'s truncating ``/`` and ``%``
(:func:`threadmap.layout.backend.cxx_divmod`) and therefore work unchanged on Python ints,
numpy arrays, intervals and :class:`threadmap.layout.backend.Sym` bit-vectors.  A negative
index or coordinate means what it means in CuTe's headers: ``(4,8):(1,4)`` at ``-5`` splits
into ``(-5 % 4, -5 / 4) == (-1, -1)`` (C++ truncates), giving ``-5``, not Python's floored
``(3, -2)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from math import gcd
from typing import Any

import numpy as np

from threadmap.errors import LayoutError
from threadmap.layout.arithmetic_tuple import ScaledBasis
from threadmap.layout.backend import Interval, Sym, cxx_divmod
from threadmap.layout.integral_constant import Dyn, is_constant
from threadmap.layout.nesting import MAX_DEPTH, IntTuple, check_depth

__all__ = ["IntTuple", "MAX_DEPTH", "check_depth", "leaf_ok", "check_int_tuple", "is_tuple",
    "is_int", "is_integral", "rank", "depth", "flatten_to_tuple", "flatten", "product",
    "product_each", "size", "sum_", "unwrap", "wrap", "transform_leaf", "congruent_unchecked", "congruent",
    "weakly_congruent", "compatible", "repeat_like", "ceil_div", "shape_div", "shape_mod",
    "evenly_divides", "safe_div", "tuple_max", "inner_product", "unflatten", "replace",
    "prefix_product", "compact_major_left", "compact_major_right", "elem_scale", "elem_less",
    "colex_less", "crd2idx_unchecked", "crd2idx", "idx2crd", "crd2crd"]


def _bounded(f: Callable[..., Any]) -> Callable[..., Any]:
    """Check the nesting depth of the tuple arguments before recursing into them."""
    @functools.wraps(f)
    def g(*args: Any, **kw: Any) -> Any:
        for a in args:
            if isinstance(a, tuple):
                check_depth(a)
        return f(*args, **kw)
    return g


def leaf_ok(x: Any, kind: str) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, (int, np.integer)):
        return kind == "crd" or bool(-(1 << 63) <= x < 1 << 63)  # CuTe's ints are 64-bit
    if kind == "stride":
        return isinstance(x, ScaledBasis)
    if kind == "crd":
        return isinstance(x, (Sym, Interval)) or (isinstance(x, np.ndarray) and x.dtype.kind in "iu")
    return False


_KIND_NAMES = {"int": "an integer", "stride": "an integer or a basis stride",
               "crd": "an integer coordinate (int, integer array, Sym or Interval)"}


def _checked(*kinds: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Validate the positional arguments: kind ``int`` (int tuples), ``stride`` (ints or
    basis strides), ``crd`` (ints, integer arrays, Sym) or ``any`` (depth only), so garbage
    raises LayoutError before any arithmetic."""
    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def g(*args: Any, **kw: Any) -> Any:
            for a, kind in zip(args, kinds):
                check_int_tuple(a, kind, f.__name__)
            return f(*args, **kw)
        return g
    return deco


def check_int_tuple(t: Any, kind: str = "int", what: str = "int tuple") -> None:
    """Raise LayoutError unless ``t`` is an int tuple of the given leaf ``kind`` (see
    :func:`_checked`) nested at most :data:`MAX_DEPTH` levels."""
    if kind == "any":
        if isinstance(t, tuple):
            check_depth(t, what)
        return
    for x in flatten_to_tuple(t):
        if not leaf_ok(x, kind):
            raise LayoutError(f"{what}: {x!r} is not {_KIND_NAMES[kind]}")


# --------------------------------------------------------------------------- predicates
def is_tuple(x: Any) -> bool:
    return isinstance(x, tuple)


def is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def is_integral(x: Any) -> bool:
    return not isinstance(x, tuple)


# --------------------------------------------------------------------------- basic algebra
def rank(t: IntTuple) -> int:
    """Number of top-level modes (1 for an integer)."""
    return len(t) if isinstance(t, tuple) else 1


def depth(t: IntTuple) -> int:
    """Nesting depth: 0 for an integer, 1 + max depth of the modes for a tuple (iterative)."""
    best = 0
    stack: list[tuple[Any, int]] = [(t, 0)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, tuple):
            d += 1
            if d > MAX_DEPTH:
                raise LayoutError(f"int tuple nested deeper than {MAX_DEPTH} levels")
            best = max(best, d)
            stack.extend((y, d) for y in x)
    return best


def flatten_to_tuple(t: IntTuple) -> tuple:
    """The leaves of ``t`` left to right (iterative; ``t`` itself wrapped if a leaf)."""
    if not isinstance(t, tuple):
        return (t,)
    if all(not isinstance(x, tuple) for x in t):
        return t
    out: list[Any] = []
    stack: list[Any] = [iter(t)]
    while stack:
        for x in stack[-1]:
            if isinstance(x, tuple):
                if len(stack) >= MAX_DEPTH:
                    raise LayoutError(f"int tuple nested deeper than {MAX_DEPTH} levels")
                stack.append(iter(x))
                break
            out.append(x)
        else:
            stack.pop()
    return tuple(out)


def flatten(t: IntTuple) -> IntTuple:
    """Flatten to a depth-<=1 tuple (an integer stays an integer)."""
    return flatten_to_tuple(t) if isinstance(t, tuple) else t


def _product(t: IntTuple) -> Any:
    """Product of all leaves (1 for the empty tuple); static unless a leaf is dynamic."""
    acc: Any = 1
    for x in flatten_to_tuple(t):
        acc = acc * x
    return acc


product = _checked("int")(_product)


size = product


def _product_each(t: IntTuple) -> tuple:
    """Product of each top-level mode; an integer is wrapped first (``product_each(12) ==
    (12,)``), as ``transform(wrap(t), product)`` does in the header."""
    return tuple(_product(x) for x in wrap(t))


product_each = _checked("int")(_product_each)


def _sum_(t: IntTuple) -> Any:
    """``sum(t)``: the sum of the leaves."""
    acc: Any = 0
    for x in flatten_to_tuple(t):
        acc = acc + x
    return acc


sum_ = _checked("stride")(_sum_)


def unwrap(t: IntTuple) -> IntTuple:
    """Remove singleton tuple wrappers: ``((4),)`` -> ``4``."""
    while isinstance(t, tuple) and len(t) == 1:
        t = t[0]
    return t


def wrap(t: IntTuple) -> tuple:
    return t if isinstance(t, tuple) else (t,)


def _transform_leaf(t: IntTuple, f: Callable[[Any], Any]) -> IntTuple:
    if isinstance(t, tuple):
        return tuple(_transform_leaf(x, f) for x in t)
    return f(t)


transform_leaf = _bounded(_transform_leaf)


def congruent_unchecked(a: Any, b: Any) -> bool:
    """Same tree structure (profile)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(congruent_unchecked(x, y) for x, y in zip(a, b))
    return not isinstance(a, tuple) and not isinstance(b, tuple)


congruent = _bounded(congruent_unchecked)


def _weakly_congruent(a: Any, b: Any) -> bool:
    """``a`` is a coarsening of ``b``: where ``a`` has a leaf, ``b`` may have a subtree."""
    if not isinstance(a, tuple):
        return True
    if not isinstance(b, tuple):
        return False
    return len(a) == len(b) and all(_weakly_congruent(x, y) for x, y in zip(a, b))


weakly_congruent = _bounded(_weakly_congruent)


def _compatible(a: Any, b: Any) -> bool:
    """``compatible(A, B)``: ``size(A) == size(B)`` and every coordinate of ``A`` is one of
    ``B`` (at each leaf of ``A``, the size of ``B``'s subtree equals it).

    Law: a partial order; ``compatible(a, b)`` implies ``product(a) == product(b)``.
    """
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_compatible(x, y) for x, y in zip(a, b))
    if not isinstance(a, tuple):
        return bool(a == _product(b))
    return False


compatible = _checked("int", "int")(_compatible)


def _repeat_like(t: Any, x: Any) -> Any:
    return tuple(_repeat_like(m, x) for m in t) if isinstance(t, tuple) else x


repeat_like = _bounded(_repeat_like)


def _check_divisor(b: Any, what: str) -> None:
    if not isinstance(b, tuple) and b == 0:
        raise LayoutError(f"{what}: division by zero")


def _ceil_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """CuTe ``ceil_div``: elementwise for tuple/tuple (missing modes of ``b`` are 1); for
    tuple/int the divisor is consumed mode by mode from the left.

    Law: for integers ``ceil_div(a, b) * b >= a > (_ceil_div(a, b) - 1) * b`` (``b > 0``).
    """
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(a) < len(b):
                raise LayoutError(f"ceil_div: rank of {b} exceeds rank of {a}")
            bb = b + (1,) * (len(a) - len(b))
            return tuple(_ceil_div(x, y) for x, y in zip(a, bb))
        out = []
        rest: IntTuple = b
        for ai in a:
            out.append(_ceil_div(ai, rest))
            rest = _ceil_div(rest, ai)
        return tuple(out)
    if isinstance(b, tuple):
        return _ceil_div(a, _product(b))
    _check_divisor(b, "ceil_div")
    return (a + b - 1) // b


ceil_div = _checked("int", "int")(_ceil_div)


def _shape_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """CuTe ``shape_div``: like ``ceil_div`` but requires ``a | b`` or ``b | a`` at the leaves
    (static values; dynamic ones are not checked, as in the header)."""
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(a) != len(b):
                raise LayoutError(f"shape_div: mismatched ranks {a} and {b}")
            return tuple(_shape_div(x, y) for x, y in zip(a, b))
        out = []
        rest: IntTuple = b
        for ai in a:
            out.append(_shape_div(ai, rest))
            rest = _shape_div(rest, ai)
        return tuple(out)
    if isinstance(b, tuple):
        return _shape_div(a, _product(b))
    _check_divisor(b, "shape_div")
    if not isinstance(a, Dyn) and not isinstance(b, Dyn) and a != 0 and a % b != 0 and b % a != 0:
        raise LayoutError(f"Divisibility Condition: neither {a} nor {b} divides the other")
    return (a + b - 1) // b


shape_div = _checked("int", "int")(_shape_div)


def _shape_mod(a: IntTuple, b: IntTuple) -> IntTuple:
    """``shape_mod(a, b)``: the part of ``a`` that ``b`` does not consume (CuTe 3.x
    ``int_tuple.hpp``; the CUTLASS 4.x headers no longer have it).  Integers: ``gcd(a, b)``,
    for every pair (``shape_mod(6, 4) == 2``; the header asserted no divisibility here);
    tuple/tuple elementwise; tuple/int folds ``b`` across the modes from the left
    (``shape_mod(ai, rest)``, then ``rest = shape_div(rest, ai)``, which keeps ``shape_div``'s
    divisibility condition); int/tuple uses ``product(b)``.

    Law: for integers ``shape_mod(a, b) == gcd(a, b)``, which divides both ``a`` and ``b``;
    for tuple/int, mode ``i`` of the result is ``gcd(a_i, b / prod(a_<i))`` (the division as
    ``shape_div`` takes it).
    """
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(a) != len(b):
                raise LayoutError(f"shape_mod: mismatched ranks {a} and {b}")
            return tuple(_shape_mod(x, y) for x, y in zip(a, b))
        out = []
        rest: IntTuple = b
        for ai in a:
            out.append(_shape_mod(ai, rest))
            rest = shape_div(rest, ai)
        return tuple(out)
    if isinstance(b, tuple):
        return _shape_mod(a, _product(b))
    if not is_int(a) or not is_int(b):
        raise LayoutError(f"shape_mod: {a!r} and {b!r} must be integers")
    g = gcd(int(a), int(b))
    return Dyn(g) if isinstance(a, Dyn) or isinstance(b, Dyn) else g


shape_mod = _checked("int", "int")(_shape_mod)


def _evenly_divides(a: IntTuple, b: IntTuple) -> bool:
    """``evenly_divides(shape, tiler)`` (``cute/int_tuple.hpp``): whether the tiler's tiles
    cover the shape without a partial tile.

    A tuple tiler is taken mode by mode against the first modes of the shape (``False`` when
    the tiler has more modes than the shape); an integer tiler ``b`` divides a mode ``a``
    when ``size(a) == b * size(ceil_div(a, b))``, with ``ceil_div`` folding ``b`` across a
    tuple mode from the left.

    Law: for integers ``evenly_divides(a, b) == (a % b == 0)``; for a tuple tiler it is the
    conjunction over its modes; and ``size(a) == b * size(ceil_div(a, b))`` for every shape
    ``a`` and integer ``b`` with ``evenly_divides(a, b)``.
    """
    if isinstance(b, tuple):
        if len(b) > rank(a):
            return False
        aw = wrap(a)
        return all(_evenly_divides(aw[i], bi) for i, bi in enumerate(b))
    _check_divisor(b, "evenly_divides")
    return bool(_product(a) == b * _product(_ceil_div(a, b)))


evenly_divides = _checked("int", "int")(_evenly_divides)


def safe_div(a: Any, b: Any) -> Any:
    """``safe_div(a, b)``: ``a / b`` where ``b`` must divide ``a`` when both are static (the
    header's static_assert ``t % u == 0``); with a dynamic operand the quotient is taken
    unchecked, as the header does (C++ truncation).

    Law: ``safe_div(a, b) * b == a`` for static ``a``, ``b`` with ``b | a``.
    """
    if not is_int(a) or not is_int(b):
        raise LayoutError(f"safe_div: {a!r} and {b!r} must be integers")
    if b == 0:
        raise LayoutError("safe_div: division by zero")
    if isinstance(a, Dyn) or isinstance(b, Dyn):
        q = abs(int(a)) // abs(int(b))
        q = q if (a < 0) == (b < 0) else -q
        return Dyn(q)
    if a % b != 0:
        raise LayoutError(f"Static safe_div requires t % u == 0 ({a} % {b} != 0)")
    return a // b


def _tuple_max(t: IntTuple) -> Any:
    """``max(t)`` of ``cute/int_tuple.hpp`` (pycute's ``tuple_max``): the largest leaf.

    Law: ``tuple_max(t) >= x`` for every leaf ``x`` of ``t`` and equals one of them.
    """
    leaves = flatten_to_tuple(t)
    if not leaves:
        raise LayoutError("max of an empty tuple")
    return max(leaves)


tuple_max = _checked("int")(_tuple_max)


def _inner_product(a: IntTuple, b: IntTuple) -> Any:
    """``inner_product(a, b)``: ``sum_k a_k * b_k`` over congruent leaves (the header's
    ``static_assert`` on mismatched ranks raises LayoutError here).

    Law: ``inner_product(c, stride) == crd2idx(c, shape, stride)`` for a coordinate ``c``
    congruent with ``shape``.
    """
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) != len(b):
            raise LayoutError(f"inner_product: mismatched ranks {a} and {b}")
        acc: Any = 0
        for x, y in zip(a, b):
            acc = acc + _inner_product(x, y)
        return acc
    if isinstance(a, tuple) or isinstance(b, tuple):
        raise LayoutError(f"inner_product: {a} and {b} are not congruent")
    return a * b


inner_product = _checked("stride", "stride")(_inner_product)


def unflatten(flat: Any, profile: Any) -> Any:
    """``unflatten(flat_tuple, target_profile)``: the leaves of ``flat`` regrouped as
    ``profile`` (the header asserts that exactly all leaves are consumed).

    Law: ``flatten(unflatten(t, p)) == flatten(t)`` and ``congruent(unflatten(t, p), p)``.
    """
    check_depth(profile)
    check_int_tuple(flat, "any", "unflatten")
    leaves = wrap(flat)
    n_prof = len(flatten_to_tuple(profile))
    if len(leaves) != n_prof:
        raise LayoutError(f"unflatten: {len(leaves)} values for a profile of {n_prof} leaves")
    it = iter(leaves)

    def rec(p: Any) -> Any:
        return tuple(rec(x) for x in p) if isinstance(p, tuple) else next(it)

    return rec(profile)


def replace(t: Any, n: int, x: Any) -> Any:
    """``replace<N>(t, x)``: ``t`` with mode ``N`` replaced by ``x``; a leaf ``t`` is replaced
    whole (``N`` must be 0), and ``N == rank(t)`` appends ``x``, as the header's
    ``construct`` does with an empty tail.

    Law: ``replace(t, n, x)[n] == x`` and the other modes are unchanged."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise LayoutError(f"replace: index {n!r} is not an integer")
    if not isinstance(t, tuple):
        if n != 0:
            raise LayoutError(f"replace<{n}>: an integer has only mode 0")
        return x
    if not 0 <= n <= len(t):
        raise LayoutError(f"replace<{n}>: index out of range for rank {len(t)}")
    return t[:n] + (x,) + t[n + 1:]


def _prefix_product(t: IntTuple, init: Any = 1) -> IntTuple:
    """Exclusive prefix product of the leaves (colexicographic), ``init`` first."""
    if isinstance(t, tuple):
        out = []
        cur = init
        for m in t:
            out.append(_prefix_product(m, cur))
            cur = cur * _product(m)
        return tuple(out)
    return init


prefix_product = _checked("int")(_prefix_product)


def _compact_major_left(shape: IntTuple, current: Any = 1) -> IntTuple:
    """``compact_major<LayoutLeft>``: column-major (GenColMajor) strides.

    As in the header, a static extent-1 mode gets stride 0 (``Layout<_1>`` is ``1:_0``);
    a dynamic extent 1 keeps the running stride.
    """
    if isinstance(shape, tuple):
        out = []
        cur = current
        for m in shape:
            out.append(_compact_major_left(m, cur))
            cur = cur * _product(m)
        return tuple(out)
    return 0 if is_constant(1, shape) else current


compact_major_left = _checked("int")(_compact_major_left)


def _compact_major_right(shape: IntTuple, current: Any = 1) -> IntTuple:
    """``compact_major<LayoutRight>``: row-major (GenRowMajor) strides, right-most fastest
    at every level of the hierarchy; static extent-1 modes get stride 0."""
    if isinstance(shape, tuple):
        out: list[Any] = [None] * len(shape)
        cur = current
        for i in range(len(shape) - 1, -1, -1):
            out[i] = _compact_major_right(shape[i], cur)
            cur = cur * _product(shape[i])
        return tuple(out)
    return 0 if is_constant(1, shape) else current


compact_major_right = _checked("int")(_compact_major_right)


def _elem_scale(a: IntTuple, b: IntTuple) -> IntTuple:
    if isinstance(a, tuple):
        if not isinstance(b, tuple) or len(a) != len(b):
            raise LayoutError(f"elem_scale: {a} and {b} are not congruent")
        return tuple(_elem_scale(x, y) for x, y in zip(a, b))
    return a * _product(b)


elem_scale = _checked("int", "int")(_elem_scale)


def _elem_less(a: IntTuple, b: IntTuple) -> bool:
    """``elem_less(a, b)``: every leaf of ``a`` is less than the matching one of ``b`` (a
    missing mode of ``b`` is not less: ``a`` may have fewer modes only).

    Law: ``elem_less(c, s)`` for every coordinate ``c`` of shape ``s`` (checked against the
    header in test_layout_cxx_dynamic)."""
    if isinstance(a, tuple):
        bw = wrap(b)
        if len(a) > len(bw):
            return False
        return all(_elem_less(x, y) for x, y in zip(a, bw))
    return bool(a < _product(b)) if isinstance(b, tuple) else bool(a < b)


elem_less = _checked("int", "int")(_elem_less)


def _colex_less(a: IntTuple, b: IntTuple) -> bool:
    """``colex_less(a, b)`` (``cute/int_tuple.hpp``): colexicographic order, the order of
    coordinates in a column-major layout.  Two tuples compare their *last* modes first
    (recursively), then the ones before; when one tuple runs out first, the shorter is less
    unless ``b`` ran out (then ``False``).  Two integers compare with ``<``; an integer and a
    tuple do not compare (the header does not compile that).

    Law: for coordinates ``c1``, ``c2`` congruent to a shape ``s``,
    ``colex_less(c1, c2) == (crd2idx(c1, s, compact_major_left(s)) <
    crd2idx(c2, s, compact_major_left(s)))``; it is a strict order (irreflexive).
    """
    if isinstance(a, tuple) and isinstance(b, tuple):
        for i in range(len(b) + 1):
            if i == len(b):
                return False
            if i == len(a):
                return True
            x, y = a[len(a) - 1 - i], b[len(b) - 1 - i]
            if _colex_less(x, y):
                return True
            if not (x == y):
                return False
        return False  # unreachable: the loop returns at i == len(b)
    if isinstance(a, tuple) or isinstance(b, tuple):
        raise LayoutError(f"colex_less: {a} and {b} are an integer and a tuple")
    return bool(a < b)


colex_less = _checked("int", "int")(_colex_less)


# --------------------------------------------------------------------------- evaluation core
def crd2idx_unchecked(crd: Any, shape: IntTuple, stride: IntTuple) -> Any:
    """Index of a coordinate: ``sum_k crd_k * stride_k``.

    An integral ``crd`` into a tuple shape is split colexicographically: ``crd % prod(s0)``
    goes to mode 0 and ``crd // prod(s0)`` to the rest; the last mode takes the remainder
    without a modulus, as CuTe does.  Works on ints, numpy arrays and ``Sym``.
    """
    if isinstance(crd, tuple):
        if not isinstance(shape, tuple) or len(crd) != len(shape) or \
                not isinstance(stride, tuple) or len(stride) != len(shape):
            raise LayoutError(f"coordinate {crd} does not match shape {shape}")
        acc: Any = 0
        for c, s, d in zip(crd, shape, stride):
            acc = acc + crd2idx_unchecked(c, s, d)
        return acc
    if isinstance(shape, tuple):
        if not isinstance(stride, tuple) or len(stride) != len(shape):
            raise LayoutError(f"stride {stride} does not match shape {shape}")
        if len(shape) == 0:
            return 0
        acc = 0
        rest = crd
        for i, (s, d) in enumerate(zip(shape, stride)):
            if i == len(shape) - 1:
                acc = acc + crd2idx_unchecked(rest, s, d)
            else:
                p = _product(s)
                if p == 0:
                    raise LayoutError(f"coordinate {crd} into an extent-0 mode of {shape}")
                rest, mod = cxx_divmod(rest, p)  # C++'s divmod: a negative index truncates
                acc = acc + crd2idx_unchecked(mod, s, d)
        return acc
    if isinstance(stride, tuple):
        raise LayoutError(f"stride {stride} does not match shape {shape}")
    return stride * crd


crd2idx = _checked("crd", "int", "stride")(crd2idx_unchecked)


def _idx2crd(idx: Any, shape: IntTuple) -> Any:
    """Colexicographic coordinate of a 1-D index: ``c_k = (idx // prod(s_<k)) % s_k``.

    As in CuTe, the last mode takes the quotient without a modulus, so that
    ``crd2idx(_idx2crd(i, s), s, compact_major_left(s)) == i`` for every ``i >= 0``.
    """
    if isinstance(idx, tuple):
        if not isinstance(shape, tuple) or len(idx) != len(shape):
            raise LayoutError(f"coordinate {idx} does not match shape {shape}")
        return tuple(_idx2crd(i, s) for i, s in zip(idx, shape))
    if isinstance(shape, tuple):
        out = []
        rest = idx
        for k, s in enumerate(shape):
            p = _product(s)
            if k == len(shape) - 1:
                out.append(_idx2crd(rest, s))
            else:
                if p == 0:
                    raise LayoutError(f"index {idx} into an extent-0 mode of {shape}")
                rest, mod = cxx_divmod(rest, p)
                out.append(_idx2crd(mod, s))
        return tuple(out)
    return idx


idx2crd = _checked("crd", "int")(_idx2crd)


def _crd2crd(crd: Any, src_shape: IntTuple, dst_shape: IntTuple) -> Any:
    """``crd2crd(coord, src_shape, dst_shape)``: re-express a coordinate of ``src_shape`` as
    one of ``dst_shape``; mode-wise where all three are tuples, otherwise
    ``idx2crd(crd2idx(coord, src_shape), dst_shape)`` (column-major index).

    Law: ``crd2idx(_crd2crd(c, s, d), d, compact_major_left(d)) ==
    crd2idx(c, s, compact_major_left(s))`` when ``size(s) == size(d)``.
    """
    if isinstance(crd, tuple) and isinstance(src_shape, tuple) and isinstance(dst_shape, tuple):
        if not len(crd) == len(src_shape) == len(dst_shape):
            raise LayoutError(f"crd2crd: Mismatched Ranks {crd}, {src_shape}, {dst_shape}")
        return tuple(_crd2crd(c, s, d) for c, s, d in zip(crd, src_shape, dst_shape))
    return idx2crd(crd2idx(crd, src_shape, compact_major_left(src_shape)), dst_shape)



crd2crd = _checked("crd", "int", "int")(_crd2crd)
