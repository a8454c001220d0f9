"""Adversarial sizes: every algebra operation is near-linear in the number of modes, and deep
nesting raises LayoutError/ParseError at the documented bound (``MAX_DEPTH`` = 64) instead of
exhausting Python's recursion limit.

The time limits are generous for a slow CI core (each operation on 20,000 modes takes tens
of milliseconds); a quadratic algorithm would take minutes and fail them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

import threadmap.layout as tl
from threadmap.errors import LayoutError, ParseError, ThreadmapError
from threadmap.layout import Layout, parse_layout
from threadmap.layout.calculator import run_layout

N = 20_000
LIMIT_S = 1.0


def timed(f: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.process_time()
    try:
        out: Any = f()
    except ThreadmapError as e:  # a documented rejection is a fine, fast answer
        out = e
    return time.process_time() - t0, out


# many modes whose strides stay small (int64-safe): overlapping, repeated, descending
WIDE: dict[str, Layout] = {
    "ascending": Layout((2,) * N, tuple(range(1, N + 1))),
    "repeated": Layout((2,) * N, (1,) * N),
    "descending": Layout((3,) * N, tuple(range(N, 0, -1))),
    "mixed": Layout(tuple(2 + i % 3 for i in range(N)), tuple((i * 7919) % 1009 for i in range(N))),
}

OPS: dict[str, Callable[[Layout], Any]] = {
    "coalesce": tl.coalesce,
    "filter": tl.filter,
    "left_inverse": tl.left_inverse,
    "right_inverse": tl.right_inverse,
    "complement": tl.complement,
    "composition_self": lambda a: tl.composition(a, a),
    "composition_compact": lambda a: tl.composition(Layout((2,) * 60), a),
    "composition_into": lambda a: tl.composition(a, Layout((2,) * 40, (1,) * 40)),
    "cosize": tl.cosize,
    "size": tl.size,
    "flatten": tl.flatten_layout,
    "max_common_vector": lambda a: tl.max_common_vector(a, a),
    "str": str,
    "parse_str": lambda a: parse_layout(str(a)),
    "calculator": lambda a: run_layout([str(a), "coalesce"]),
    "exchange_sort": lambda a: tl.exchange_sort_order(list(tl.flatten_to_tuple(a.stride))),
    "logical_divide_tuple": lambda a: tl.logical_divide(a, (2,) * 50),
    "make_ordered_layout": lambda a: tl.make_ordered_layout(a.shape, tuple(range(N))),
}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("name", list(WIDE))
def test_twenty_thousand_modes(op: str, name: str) -> None:
    dt, _out = timed(lambda: OPS[op](WIDE[name]))
    assert dt < LIMIT_S, f"{op} on {N} modes ({name}) took {dt:.2f}s"


def test_twenty_thousand_modes_results_are_right() -> None:
    """Spot checks that the fast paths compute the header's results (laws on a wide input)."""
    with pytest.raises(LayoutError, match="does not fit in int64"):
        tl.right_inverse(WIDE["ascending"])  # preprod reaches 2^16000: the header overflows too
    a = Layout((2,) * 60, tuple(range(1, 61)))
    r = tl.right_inverse(a)
    assert tl.size(r) > 1
    for i in range(tl.size(r)):
        assert a(r(i)) == i
    c = tl.coalesce(WIDE["repeated"])
    assert tl.size(c) == 2 ** N and len(tl.flatten_to_tuple(c.shape)) == N
    # composition distributes over the right modes: leaf k of the result is lhs o rhs_k
    rhs = Layout((2,) * 40, tuple(2 ** (k % 10) for k in range(40)))
    comp = tl.composition(WIDE["ascending"], rhs)
    for k in (0, 7, 39):
        for c in (0, 1):
            assert tl.get(comp, k)(c) == WIDE["ascending"](tl.get(rhs, k)(c))


def _nest(depth: int, leaf: Any = 2) -> Any:
    t: Any = leaf
    for _ in range(depth):
        t = (t,)
    return t


@pytest.mark.parametrize("depth", [65, 1_000, 100_000])
def test_deep_nesting_is_a_layout_error(depth: int) -> None:
    deep = _nest(depth)
    for f in (lambda: Layout(deep), lambda: tl.product(deep), lambda: tl.flatten_to_tuple(deep),
              lambda: tl.depth(deep), lambda: tl.size(deep), lambda: tl.crd2idx(0, deep, deep),
              lambda: tl.congruent(deep, deep), lambda: tl.inner_product(deep, deep),
              lambda: tl.composition(Layout(4), deep), lambda: tl.logical_divide(Layout(4), deep),
              lambda: tl.make_identity_layout(deep), lambda: tl.unflatten((2,), deep)):
        with pytest.raises(LayoutError, match="deeper than 64"):
            f()


def test_depth_64_is_accepted() -> None:
    lay = Layout(_nest(63), _nest(63, 1))
    assert tl.depth(lay) == 63 and tl.size(lay) == 2
    assert str(parse_layout(str(lay))) == str(lay)


@pytest.mark.parametrize("depth", [65, 50_000])
def test_deep_text_is_a_parse_error(depth: int) -> None:
    text = "(" * depth + "2" + ")" * depth
    with pytest.raises(ParseError, match="nesting deeper than 64|longer than 100000"):
        parse_layout(text)
    with pytest.raises(ParseError, match="nesting deeper than 64|longer than 100000"):
        run_layout([f"size({text})"])
