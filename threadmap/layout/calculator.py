"""The CuTe layout calculator behind ``threadmap layout``: operations applied left to right,
or written as C++ function calls.

``run_layout(["(2,2):(1,6)", "complement", "24"])`` parses the first token as a layout and
applies each operation (a CuTe function name, with its argument when it takes one) to the
result of the previous one.  The first token may also be a function-call expression of
any operation (``run_layout(["logical_divide((4,8):(8,1), (2,4))"])``), nested freely, in
the grammar of :mod:`threadmap.layout.parse` with :data:`FUNCTIONS` as its function table.
Every error is a :class:`threadmap.errors.ThreadmapError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from threadmap.errors import ThreadmapError
from threadmap.layout import layout as L
from threadmap.layout.dispatch import LayoutLike
from threadmap.layout.parse import CONSTRUCTORS, parse_int_tuple, parse_layout, run_parser, shape_as_layout

#: largest table ``table`` prints
MAX_TABLE = 1 << 20


def _tiler(text: str) -> Any:
    """A tiler argument: a layout if it has ``:`` or a swizzle, else an int tuple / integer."""
    if ":" in text or "Sw<" in text:
        return parse_layout(text)
    return parse_int_tuple(text)


def _layout_arg(text: str) -> Any:
    return parse_layout(text)


def _int_arg(text: str) -> int:
    v = parse_int_tuple(text)
    if not isinstance(v, int):
        raise ThreadmapError(f"expected an integer, got {text!r}")
    return v


@dataclass(frozen=True)
class Op:
    name: str
    nargs: int  # 0, 1, or -1 for "optional one"
    fn: Callable[..., Any]
    arg: Callable[[str], Any] = _tiler
    help: str = ""


class Show:
    """The ``show`` operation's result: draw the layout with ``print_layout``."""

    def __init__(self, layout: Any) -> None:
        self.layout = layout


def _coord_arg(text: str) -> Any:
    """A coordinate or index.  A negative one means what it means in CuTe: the header divides
    with C++'s truncating ``/`` and ``%``, and so does threadmap's evaluation core
    (:func:`threadmap.layout.backend.cxx_divmod`)."""
    return parse_int_tuple(text)


def _table(x: Any) -> list[Any]:
    n = L.size(x)
    if n > MAX_TABLE:
        raise ThreadmapError(f"table of {n} entries is too large to print (limit 2^20)")
    vals = x(np.arange(n))
    if isinstance(vals, np.ndarray):
        return [int(v) for v in np.broadcast_to(vals, (n,))]
    # basis strides (1@2): each value is a coordinate tuple, one per index
    if n > MAX_TABLE // 16:
        raise ThreadmapError(f"table of {n} coordinate values is too large to print (limit 2^16)")
    return [str(x(i)) for i in range(n)]


OPS: dict[str, Op] = {op.name: op for op in [
    Op("size", 0, L.size, help="number of coordinates"),
    Op("cosize", 0, L.cosize, help="L(size-1)+1"),
    Op("rank", 0, L.rank, help="number of top-level modes"),
    Op("depth", 0, L.depth, help="nesting depth"),
    Op("shape", 0, L.shape),
    Op("stride", 0, L.stride),
    Op("flatten", 0, L.flatten_layout),
    Op("coalesce", -1, lambda x, p=None: L.coalesce(x, p), parse_int_tuple, "coalesce [PROFILE]"),
    Op("filter", 0, L.filter),
    Op("composition", 1, L.composition, help="composition TILER|LAYOUT"),
    Op("complement", -1, lambda x, c=None: L.complement(x, c), parse_int_tuple,
       "complement [COTARGET]"),
    Op("right_inverse", 0, L.right_inverse),
    Op("left_inverse", 0, L.left_inverse),
    Op("logical_divide", 1, L.logical_divide),
    Op("zipped_divide", 1, L.zipped_divide),
    Op("tiled_divide", 1, L.tiled_divide),
    Op("flat_divide", 1, L.flat_divide),
    Op("logical_product", 1, L.logical_product),
    Op("zipped_product", 1, L.zipped_product),
    Op("tiled_product", 1, L.tiled_product),
    Op("flat_product", 1, L.flat_product),
    Op("blocked_product", 1, L.blocked_product, _layout_arg),
    Op("raked_product", 1, L.raked_product, _layout_arg),
    Op("upcast", 1, L.upcast, _int_arg, "upcast N"),
    Op("downcast", 1, L.downcast, _int_arg, "downcast N"),
    Op("nullspace", 0, L.nullspace),
    Op("get", 1, lambda x, i: L.get(x, i), _int_arg, "get MODE"),
    Op("eval", 1, lambda x, c: x(c), _coord_arg, "eval COORD|INDEX"),
    Op("table", 0, _table, help="offsets of every index"),
    Op("show", 0, Show, help="print_layout grid (rank 2)"),
]}


def _on_layout(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` with its first argument read as a layout (a bare shape is column-major)."""
    return lambda x, *args: f(shape_as_layout(x), *args)


#: the functions a calculator expression may call: the constructors of the layout grammar
#: and every algebra operation, with the C++ argument order
FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {
    **CONSTRUCTORS,
    **{name: (getattr(L, name), 1, 1) for name in ("size", "cosize", "rank", "depth", "shape")},
    "stride": (_on_layout(L.stride), 1, 1),
    "flatten": (_on_layout(L.flatten_layout), 1, 1),
    "coalesce": (_on_layout(L.coalesce), 1, 2),
    "filter": (_on_layout(L.filter), 1, 2),
    "complement": (_on_layout(L.complement), 1, 2),
    "right_inverse": (_on_layout(L.right_inverse), 1, 1),
    "left_inverse": (_on_layout(L.left_inverse), 1, 1),
    "nullspace": (_on_layout(L.nullspace), 1, 1),
    **{name: (_on_layout(getattr(L, name)), 2, 2) for name in (
        "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product",
        "zipped_product", "tiled_product", "flat_product", "tile_unzip", "max_common_layout",
        "max_common_vector")},
    "blocked_product": (lambda a, b: L.blocked_product(shape_as_layout(a), shape_as_layout(b)), 2, 2),
    "raked_product": (lambda a, b: L.raked_product(shape_as_layout(a), shape_as_layout(b)), 2, 2),
    "upcast": (_on_layout(L.upcast), 2, 2),
    "downcast": (_on_layout(L.downcast), 2, 2),
    "recast_layout": (_on_layout(L.recast_layout), 3, 3),
    "get": (_on_layout(L.get), 2, 65),
    "select": (_on_layout(L.select), 1, 65),
    "take": (_on_layout(L.take), 3, 3),
    "group": (_on_layout(L.group), 3, 3),
    "append": (_on_layout(L.append), 1, 2),
    "prepend": (_on_layout(L.prepend), 1, 2),
    "slice": (lambda c, x: L.slice_(c, shape_as_layout(x)), 2, 2),
    "dice": (lambda c, x: L.dice(c, shape_as_layout(x)), 2, 2),
    "make_ordered_layout": (L.make_ordered_layout, 2, 2),
    "make_identity_layout": (L.make_identity_layout, 1, 1),
    "make_layout_like": (_on_layout(L.make_layout_like), 1, 1),
    "make_fragment_like": (_on_layout(L.make_fragment_like), 1, 1),
}


def _brief(x: Any) -> str:
    text = f"a table of {len(x)} offsets" if isinstance(x, list) else "a drawing" if isinstance(x, Show) else str(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_call(text: str) -> bool:
    head = text.lstrip().split("(", 1)[0].strip()
    return head.isidentifier() and head in FUNCTIONS


def run_layout(tokens: list[str]) -> list[tuple[str, Any]]:
    """Apply the operations in ``tokens[1:]`` to ``tokens[0]``; returns (step, value) pairs.

    ``tokens[0]`` is a layout, or an expression calling any of :data:`FUNCTIONS`."""
    if not tokens:
        raise ThreadmapError("no layout given")
    cur: Any = run_parser(tokens[0], None, "expression", functions=FUNCTIONS)
    if isinstance(cur, (tuple, int)) and not isinstance(cur, bool) and \
            (len(tokens) > 1 or not _is_call(tokens[0])):
        # a bare shape, or a call giving a shape that operations follow, is a (column-major)
        # layout, as make_layout(shape) makes it
        cur = L.make_layout(cur) if _is_call(tokens[0]) else parse_layout(tokens[0])
    steps: list[tuple[str, Any]] = [("input", cur)]
    i = 1
    while i < len(tokens):
        name = tokens[i]
        op = OPS.get(name)
        if op is None:
            raise ThreadmapError(f"unknown operation {name!r}; known: {', '.join(OPS)}")
        i += 1
        if not isinstance(cur, (L.Layout, LayoutLike)):
            raise ThreadmapError(f"{name} applies to a layout; the step before it gave {_brief(cur)}")
        args: list[Any] = []
        if op.nargs == 1:
            if i >= len(tokens):
                raise ThreadmapError(f"{name} needs an argument ({op.help or name + ' ARG'})")
            args.append(op.arg(tokens[i]))
            i += 1
        elif op.nargs == -1 and i < len(tokens) and tokens[i] not in OPS:
            args.append(op.arg(tokens[i]))
            i += 1
        cur = op.fn(cur, *args)
        steps.append((name, cur))
    return steps
