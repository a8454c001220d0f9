"""The CuTe layout calculator behind ``threadmap layout``: operations applied left to right.

``run_layout(["(2,2):(1,6)", "complement", "24"])`` parses the first token as a layout and
applies each operation (a CuTe function name, with its argument when it takes one) to the
result of the previous one.  Every error is a :class:`threadmap.errors.ThreadmapError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from threadmap.errors import ThreadmapError
from threadmap.layout import layout as L
from threadmap.layout.parse import parse_int_tuple, parse_layout

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


def _table(x: Any) -> list[int]:
    n = L.size(x)
    if n > MAX_TABLE:
        raise ThreadmapError(f"table of {n} entries is too large to print (limit 2^20)")
    return [int(v) for v in np.asarray(x(np.arange(n)))]


OPS: dict[str, Op] = {op.name: op for op in [
    Op("size", 0, L.size, help="number of coordinates"),
    Op("cosize", 0, L.cosize, help="L(size-1)+1"),
    Op("rank", 0, L.rank, help="number of top-level modes"),
    Op("depth", 0, L.depth, help="nesting depth"),
    Op("shape", 0, lambda x: x.shape),
    Op("stride", 0, lambda x: x.stride),
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
    Op("get", 1, lambda x, i: L.get(x, i), _int_arg, "get MODE"),
    Op("eval", 1, lambda x, c: x(c), parse_int_tuple, "eval COORD|INDEX"),
    Op("table", 0, _table, help="offsets of every index"),
    Op("show", 0, Show, help="print_layout grid (rank 2)"),
]}


def run_layout(tokens: list[str]) -> list[tuple[str, Any]]:
    """Apply the operations in ``tokens[1:]`` to ``tokens[0]``; returns (step, value) pairs."""
    cur: Any = parse_layout(tokens[0])
    steps: list[tuple[str, Any]] = [("input", cur)]
    i = 1
    while i < len(tokens):
        name = tokens[i]
        op = OPS.get(name)
        if op is None:
            raise ThreadmapError(f"unknown operation {name!r}; known: {', '.join(OPS)}")
        i += 1
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
