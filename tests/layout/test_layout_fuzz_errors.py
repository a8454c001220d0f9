"""Every public function of ``threadmap.layout`` and ``threadmap.cutlass`` on garbage
arguments: each call returns or raises one of the documented error classes
(:class:`~threadmap.errors.ThreadmapError` subclasses), never TypeError, ZeroDivisionError,
RecursionError, IndexError, OverflowError, MemoryError or a hang.

Arguments are drawn from a pool of valid and invalid values: integers (0, negative, beyond
int64), bools, floats, strings, None, lists, nested and deep tuples, basis strides
(``1@0``), ``_``, dynamic integers, layouts, composed layouts, swizzles, tensors.  Each
function is called with a number of arguments its signature accepts.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import threadmap.cutlass as tc
import threadmap.layout as tl
from tests.support.timeouts import time_limit
from threadmap.errors import ThreadmapError
from threadmap.layout import (
    ComposedLayout,
    Dyn,
    Layout,
    ScaledBasis,
    Swizzle,
    _,
    gmma_layout_atom,
    make_identity_tensor,
    make_tensor,
)

FUZZ = settings(max_examples=120, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# records and internals whose constructors do not validate (they are built by the library)
SKIP = {"Sym", "select_value", "CopyOp", "MMAAtom", "Dyn", "Underscore", "LayoutLeft",
        "LayoutRight", "GenColMajor", "GenRowMajor", "MAX_DEPTH", "COPY_OPS", "MMA_ATOMS",
        "GMMA_LAYOUT_ATOMS", "GMMA_ELEMENT_BITS", "CXX_TYPE_BITS", "THREAD_MAPS", "_",
        "LayoutType", "UmmaLayoutType", "GMMA_CANONICAL"}  # the enums: a call is the enum's lookup


def _public(mod: Any) -> dict[str, Callable[..., Any]]:
    return {n: getattr(mod, n) for n in mod.__all__
            if n not in SKIP and callable(getattr(mod, n))}


FUNCTIONS = {**{f"layout.{n}": f for n, f in _public(tl).items()},
             **{f"cutlass.{n}": f for n, f in _public(tc).items()}}

_SW = Swizzle(3, 4, 3)
_DEEP: Any = 2
for _i in range(80):
    _DEEP = (_DEEP,)
_L = Layout((8, 64), (64, 1))
POOL: list[Any] = [
    0, 1, 2, 3, 4, 8, 16, 128, -1, -8, 2**63, -(2**63) - 1, 10**40, True, False, 1.5,
    float("nan"), float("inf"), "", "x", "(4,8)", "(4,8):(8,1)", "Sw<3,4,3> o 8:1",
    "SM80_16x8x16_F16F16F16F16_TN", "UniversalCopy<uint128_t>", "f16", None, [], [4, 8],
    (), (0,), (4, 8), (4, (2, 3)), ((2, 2), 4), (1, 1, 1), (-1, 2), (2.0, 4), ("a",),
    _DEEP,
    ScaledBasis(1, (0,)), ScaledBasis(2, (1,)), (ScaledBasis(1, (0,)), ScaledBasis(1, (1,))),
    _, (_, 1), (1, _), Dyn(4), (Dyn(2), 4), _L, Layout(4, -1), Layout((4, 0), (1, 4)),
    Layout((4, 8), (ScaledBasis(1, (0,)), ScaledBasis(1, (1,)))), Layout(1, 0),
    Layout((2, 2), (1, 1)), Layout((Dyn(4), 2), (1, Dyn(4))), _SW, Swizzle(0, 4, 3),
    ComposedLayout(_SW, 0, _L), ComposedLayout(_SW, 16, _L), gmma_layout_atom("K", "SW128", 16),
    ComposedLayout(_L, 0, Layout(8, 1)), make_tensor(0, _L), make_identity_tensor((4, 8)),
    tl.LayoutLeft, tl.LayoutRight, tl.make_tiled_mma("SM80_16x8x16_F16F16F16F16_TN"),
    tc.PitchLinearStripminedThreadMap((64, 4), 32, 4), object(), {}, lambda *a: 1,
]


def _arities(f: Callable[..., Any]) -> list[int]:
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return [1]
    lo = hi = 0
    var = False
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            var = True
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            hi += 1
            if p.default is p.empty:
                lo += 1
    return list(range(lo, (hi if not var else max(hi, lo) + 3) + 1)) or [0]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@FUZZ
@given(data=st.data())
def test_garbage_arguments_raise_documented_errors(name: str, data: st.DataObject) -> None:
    f = FUNCTIONS[name]
    n = data.draw(st.sampled_from(_arities(f)), label="arity")
    args = [data.draw(st.sampled_from(POOL), label=f"arg{i}") for i in range(n)]
    with time_limit(10, f"{name}{tuple(args)!r}"):
        try:
            out = f(*args)
        except ThreadmapError:
            return
    # a result must also print and evaluate without crashing
    if isinstance(out, (Layout, ComposedLayout)):
        try:
            str(out)
            if tl.size(out) < 4096:
                out(0)
        except ThreadmapError:
            pass


@FUZZ
@given(data=st.data())
def test_garbage_coordinates_and_methods(data: st.DataObject) -> None:
    """Evaluating, slicing and tabulating layouts with garbage coordinates."""
    obj = data.draw(st.sampled_from([p for p in POOL if isinstance(p, (Layout, ComposedLayout,
                                                                        Swizzle))]))
    crd = data.draw(st.sampled_from(POOL))
    with time_limit(10, f"{obj}({crd!r})"):
        index = (lambda: obj[crd]) if not isinstance(obj, Swizzle) else (lambda: obj(crd))
        for f in (lambda: obj(crd), index, lambda: tl.slice_(crd, obj),
                  lambda: tl.slice_and_offset(crd, obj), lambda: tl.dice(crd, obj)):
            try:
                f()
            except ThreadmapError:
                pass
