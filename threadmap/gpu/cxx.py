"""Turn threadmap int tuples, layouts, tilers, coordinates and spec expressions into C++.

The GPU probe and the C++ oracle tests both spell threadmap objects with these functions.

Every integer becomes a *static* ``Int<N>`` so that the header takes its static branches
(threadmap treats every value as static).  Examples::

    cxx_layout(Layout((4, (2, 3)), (1, (4, 8))))
        -> "Layout<cute::tuple<Int<4>,cute::tuple<Int<2>,Int<3>>>,cute::tuple<...>>{}"
    cxx_tiler((Layout(4, 2), 8))    -> "make_tile(Layout<Int<4>,Int<2>>{},Int<8>{})"
    cxx_coord((_, (1, _)))          -> "make_coord(_,make_coord(Int<1>{},_))"
"""

from __future__ import annotations

from typing import Any

from threadmap.layout import Layout, Underscore


def cxx_type(t: Any) -> str:
    """C++ *type* of a static int tuple: ``Int<4>`` or ``cute::tuple<Int<2>,Int<3>>``."""
    if isinstance(t, tuple):
        return "cute::tuple<" + ",".join(cxx_type(x) for x in t) + ">"
    if isinstance(t, bool) or not isinstance(t, int):
        raise TypeError(f"not a static integer: {t!r}")
    return f"Int<{t}>"


def cxx_value(t: Any) -> str:
    """C++ *value* of a static int tuple: ``Int<4>{}`` or ``cute::tuple<...>{}``."""
    return cxx_type(t) + "{}"


def cxx_layout_type(layout: Layout) -> str:
    return f"Layout<{cxx_type(layout.shape)},{cxx_type(layout.stride)}>"


def cxx_layout(layout: Layout) -> str:
    """A value expression for a fully static layout."""
    return cxx_layout_type(layout) + "{}"


def cxx_tiler(t: Any) -> str:
    """A tiler: a Layout, an integer (``n:1``), ``_`` or a tuple of those (``make_tile``)."""
    if isinstance(t, Layout):
        return cxx_layout(t)
    if isinstance(t, Underscore):
        return "_"
    if isinstance(t, tuple):
        return "make_tile(" + ",".join(cxx_tiler(x) for x in t) + ")"
    return cxx_value(t)


def cxx_shape_tuple(t: Any) -> str:
    """A (possibly nested) shape/step tuple as a C++ value (``Shape<...>{}``-like)."""
    return cxx_value(t)


def cxx_coord(c: Any, static: bool = True) -> str:
    """A coordinate that may contain ``_``; integers are static unless ``static=False``."""
    if isinstance(c, Underscore):
        return "_"
    if isinstance(c, tuple):
        return "make_coord(" + ",".join(cxx_coord(x, static) for x in c) + ")"
    return f"Int<{c}>{{}}" if static else str(int(c))


def cxx_step(p: Any) -> str:
    """A Step projection: ``1`` keeps a mode, ``_`` drops it (``Step<_1,X,_1>{}``)."""
    def typ(x: Any) -> str:
        if isinstance(x, Underscore):
            return "X"
        if isinstance(x, tuple):
            return "Step<" + ",".join(typ(y) for y in x) + ">"
        return f"Int<{x}>"
    return typ(p) + "{}"


def cxx_int(v: Any) -> str:
    """A static ``Int<v>{}`` or, for a :class:`~threadmap.layout.Dyn`, a dynamic ``int(v)``."""
    from threadmap.layout import Dyn
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"not an integer: {v!r}")
    return f"int({int(v)})" if isinstance(v, Dyn) else f"Int<{int(v)}>{{}}"


def cxx_tuple(t: Any) -> str:
    """An int tuple value whose leaves keep their static-ness (``cute::make_tuple(...)``);
    basis strides become ``Int<v>{} * E<path...>{}``."""
    from threadmap.layout import ScaledBasis
    if isinstance(t, tuple):
        return "cute::make_tuple(" + ",".join(cxx_tuple(x) for x in t) + ")"
    if isinstance(t, ScaledBasis):
        return f"({cxx_int(t.value)} * E<{','.join(str(i) for i in t.path)}>{{}})"
    return cxx_int(t)


def cxx_obj(x: Any) -> str:
    """Any threadmap value as a C++ expression: int tuples, layouts (static or with dynamic
    leaves), swizzles, composed layouts (``make_composed_layout``), ``_``, tilers."""
    from threadmap.layout import ComposedLayout, SmemPtrFlag, Swizzle, is_static
    if isinstance(x, Layout):
        if is_static(x.shape) and is_static(x.stride) and all(
                isinstance(v, int) for v in _leaves(x.stride)):
            return cxx_layout(x)
        return f"make_layout({cxx_tuple(x.shape)},{cxx_tuple(x.stride)})"
    if isinstance(x, Swizzle):
        return f"Swizzle<{x.bits},{x.base},{x.shift}>{{}}"
    if isinstance(x, ComposedLayout):
        off = (f"smem_ptr_flag_bits<{x.offset.bits}>{{}}" if isinstance(x.offset, SmemPtrFlag)
               else cxx_int(x.offset))
        return f"make_composed_layout({cxx_obj(x.layout_a)},{off},{cxx_obj(x.layout_b)})"
    if isinstance(x, Underscore):
        return "_"
    if isinstance(x, tuple):
        return "make_tile(" + ",".join(cxx_obj(v) for v in x) + ")"
    return cxx_int(x)


def _leaves(t: Any) -> list[Any]:
    if isinstance(t, tuple):
        return [y for x in t for y in _leaves(x)]
    return [t]


#: helpers the emitted expressions call: the spec grammar's floor division and modulo
#: (exact for negative operands too), ``ceil_div``, ``min`` and ``max``
EXPR_HELPERS = """\
#if defined(__CUDA_ARCH__)
#define TM_UNROLL _Pragma("unroll")
#else
#define TM_UNROLL
#endif
CUTE_HOST_DEVICE constexpr long long tm_fdiv(long long a, long long b) {
  return (a / b) - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
}
CUTE_HOST_DEVICE constexpr long long tm_fmod(long long a, long long b) { return a - tm_fdiv(a, b) * b; }
CUTE_HOST_DEVICE constexpr long long tm_min(long long a, long long b) { return a < b ? a : b; }
CUTE_HOST_DEVICE constexpr long long tm_max(long long a, long long b) { return a < b ? b : a; }
"""

def _ll(x: Any) -> str:
    """An operand: integer literals become ``long long`` so no product of literals wraps."""
    return f"{x}LL" if isinstance(x, int) else str(x)


#: the spec grammar's operators as C++ text over ``long long`` (see :data:`EXPR_HELPERS`)
CXX_OPS: dict[str, Any] = {
    "+": lambda a, b: f"({_ll(a)} + {_ll(b)})",
    "-": lambda a, b: f"({_ll(a)} - {_ll(b)})",
    "*": lambda a, b: f"({_ll(a)} * {_ll(b)})",
    "/": lambda a, b: f"tm_fdiv({_ll(a)}, {_ll(b)})",
    "//": lambda a, b: f"tm_fdiv({_ll(a)}, {_ll(b)})",
    "%": lambda a, b: f"tm_fmod({_ll(a)}, {_ll(b)})",
    "neg": lambda a: f"(0LL - {_ll(a)})",
    "ceil_div": lambda a, b: f"tm_fdiv({_ll(a)} + {_ll(b)} - 1LL, {_ll(b)})",
    "min": lambda a, b: f"tm_min({_ll(a)}, {_ll(b)})",
    "max": lambda a, b: f"tm_max({_ll(a)}, {_ll(b)})",
}


def cxx_expr(e: Any, env: dict[str, str]) -> str:
    """A spec expression (:class:`threadmap.spec.expr.Expr`) as a C++ ``long long`` expression
    with the grammar's floor semantics; ``env`` maps each name to its C++ spelling (a literal
    such as ``1024LL`` or a variable)."""
    return _ll(e.apply(env, CXX_OPS))


def _tuple64(t: Any) -> str:
    if isinstance(t, tuple):
        return "cute::make_tuple(" + ",".join(_tuple64(x) for x in t) + ")"
    return f"(long long)({int(t)}LL)"


def cxx_tensor_layout(layout: Any) -> str:
    """A tensor's layout as a C++ value: a plain layout with 64-bit dynamic shape and strides
    (so offsets of large tensors cannot wrap a 32-bit ``Int``), anything else (a composed
    swizzle layout of shared memory) fully static through :func:`cxx_obj`."""
    if isinstance(layout, Layout) and all(isinstance(v, int) for v in _leaves(layout.stride)):
        shape = layout.shape if isinstance(layout.shape, tuple) else (layout.shape,)
        stride = layout.stride if isinstance(layout.stride, tuple) else (layout.stride,)
        if not isinstance(layout.shape, tuple):
            return f"make_layout({_tuple64(shape[0])},{_tuple64(stride[0])})"
        return f"make_layout({_tuple64(shape)},{_tuple64(stride)})"
    return cxx_obj(layout)
