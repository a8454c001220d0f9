"""Layouts evaluated at negative indices and coordinates, against the real CuTe headers.

CuTe divides with C++'s ``/`` and ``%`` (truncating toward zero); threadmap's evaluation
core does the same (``threadmap.layout.backend.cxx_divmod``) on ints, numpy arrays and
intervals.  One host program evaluates a fixed-seed batch of cases; each case prints
``ID<TAB>value``; every integer of the output must equal threadmap's, for a Python int and
for a numpy array of the same indices.
"""

from __future__ import annotations

import random
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import threadmap.layout as tl
from tests.layout.test_layout_cxx_oracle import r_layout
from tests.support.cxx_oracle import require_oracle, run_print_batch
from threadmap.errors import LayoutError
from threadmap.gpu.cxx import cxx_layout, cxx_type
from threadmap.layout import Layout, Swizzle
from threadmap.layout.backend import Interval, cxx_divmod
from threadmap.layout.calculator import run_layout
from threadmap.layout.int_tuple import flatten_to_tuple, idx2crd

SEED = 20261203
PER_KIND = 24


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


def _flat(v: Any) -> list[int]:
    return [int(x) for x in flatten_to_tuple(v)]


def _neg_coord(rng: random.Random, shape: Any) -> Any:
    """A coordinate congruent to ``shape`` (or an integer for a nested mode) with negative leaves."""
    if isinstance(shape, tuple):
        return tuple(_neg_coord(rng, s) for s in shape)
    return rng.randint(-2 * shape - 3, shape + 1)


def _cxx_coord(c: Any) -> str:
    if isinstance(c, tuple):
        return "make_coord(" + ",".join(_cxx_coord(x) for x in c) + ")"
    return f"int({c})"


def cases() -> dict[str, tuple[str, list[int], Any]]:
    """``id -> (C++ statement, threadmap's value as ints, a numpy re-evaluation or None)``."""
    rng = random.Random(SEED)
    out: dict[str, tuple[str, list[int], Any]] = {}

    def add(stmt: str, ours: Any, vec: Any = None) -> None:
        out[f"c{len(out)}"] = (stmt, _flat(ours), vec)

    kinds = ["left", "right", "ordered", "neg", "any"]
    for k in kinds:
        for _ in range(PER_KIND):
            lay = r_layout(rng, k, rank_lo=1, rank_hi=3, nest=0.5, cap=128)
            n = tl.size(lay)
            i = -rng.randint(1, 3 * n + 5)
            add(f"int i = {i}; print({cxx_layout(lay)}(i));", lay(i), (lay, i))
            # a coordinate per top-level mode: congruent (negative leaves) or one integer
            modes = lay.shape if isinstance(lay.shape, tuple) else (lay.shape,)
            c = tuple(_neg_coord(rng, m) if rng.random() < 0.5 else
                      rng.randint(-2 * tl.size(m) - 3, tl.size(m)) for m in modes)
            crd = c if isinstance(lay.shape, tuple) else c[0]
            add(f"print({cxx_layout(lay)}({_cxx_coord(crd)}));", lay(crd))
            # idx2crd with the layout's strides (cute/stride.hpp), negative strides included
            if all(s != 0 for s in flatten_to_tuple(lay.stride)):
                add(f"int i = {i}; print(idx2crd(i, {cxx_type(lay.shape)}{{}}, {cxx_type(lay.stride)}{{}}));",
                    lay.get_hier_coord(i))
            add(f"int i = {i}; print(idx2crd(i, {cxx_type(lay.shape)}{{}}));", idx2crd(i, lay.shape))
    # compositions, evaluated at negative indices (the issue's case: nested shapes split there)
    for _ in range(2 * PER_KIND):
        a = r_layout(rng, "injective", rank_lo=2, rank_hi=3, nest=0.4, cap=256)
        b = rng.choice([Layout((4, 8), (1, 4)), Layout((2, (2, 4)), (8, (1, 2))),
                        Layout(((2, 2), 8), ((1, 2), 4)), Layout((8, 4), (4, 1)), Layout(16, 2)])
        try:
            ab = tl.composition(a, b)
        except LayoutError:
            continue
        i = -rng.randint(1, 4 * tl.size(ab))
        add(f"int i = {i}; print(composition({cxx_layout(a)}, {cxx_layout(b)})(i));", ab(i), (ab, i))
    # swizzled layouts (the swizzle acts on the negative offset with C++'s int bit operations)
    for _ in range(PER_KIND):
        bits = rng.randint(1, 3)
        sw_args = (bits, rng.randint(0, 3), rng.randint(bits, 5))
        sw = Swizzle(*sw_args)
        lay = r_layout(rng, "injective", rank_lo=2, rank_hi=2, cap=256)
        comp = tl.composition(sw, lay)
        i = -rng.randint(1, 4 * tl.size(lay))
        add(f"int i = {i}; print(composition(Swizzle<{sw_args[0]},{sw_args[1]},{sw_args[2]}>{{}}, "
            f"{cxx_layout(lay)})(i));", comp(i), (comp, i))
    return out


@pytest.fixture(scope="module")
def header() -> dict[str, str]:
    require_oracle()
    return run_print_batch({cid: stmt for cid, (stmt, _, _) in cases().items()})


def test_negative_indices_match_header(header: dict[str, str]) -> None:
    all_cases = cases()
    assert len(all_cases) >= 300
    bad = [f"{cid}: {stmt}\n  C++ {header.get(cid)} threadmap {ours}"
           for cid, (stmt, ours, _) in all_cases.items() if _ints(header.get(cid, "")) != ours]
    assert not bad, f"{len(bad)} of {len(all_cases)} differ:\n" + "\n".join(bad[:20])


def test_numpy_backend_matches_header(header: dict[str, str]) -> None:
    checked = 0
    for cid, (_stmt, _ours, vec) in cases().items():
        if vec is None:
            continue
        lay, i = vec
        got = lay(np.array([i, 0, i], dtype=np.int64))
        assert [int(got[0]), int(got[2])] == _ints(header[cid]) * 2, cid
        checked += 1
    assert checked >= 100


def test_issue_composition_truncates() -> None:
    """A composition whose nested shape splits a negative index: C++ truncates."""
    lay = Layout((4, 8), (1, 4))
    # -5 = -1 * 4 + (-1) in C++ (floor would give (3, -2))
    assert cxx_divmod(-5, 4) == (-1, -1)
    assert lay(-5) == -1 * 1 + -1 * 4


@given(st.integers(-10**6, 10**6), st.integers(-1000, 1000).filter(bool))
def test_cxx_divmod_law(a: int, b: int) -> None:
    q, r = cxx_divmod(a, b)
    assert q * b + r == a
    assert abs(r) < abs(b)
    assert r == 0 or (r < 0) == (a < 0)
    qa, ra = cxx_divmod(np.array([a], dtype=np.int64), b)
    assert (int(qa[0]), int(ra[0])) == (q, r)


@given(st.integers(-200, 200), st.integers(0, 40), st.integers(-50, 50).filter(bool))
def test_interval_bounds_cover_cxx_divmod(lo: int, width: int, b: int) -> None:
    iv = Interval(lo, lo + width)
    qi, ri = iv.cxx_div(b), iv.cxx_mod(b)
    for a in range(lo, lo + width + 1):
        q, r = cxx_divmod(a, b)
        assert qi.lo <= q <= qi.hi and ri.lo <= r <= ri.hi


def test_calculator_eval_matches_header(header: dict[str, str]) -> None:
    """``threadmap layout LAYOUT eval -N`` gives the header's value (it refused negatives before)."""
    checked = 0
    for cid, (_stmt, _ours, vec) in cases().items():
        if vec is None or not isinstance(vec[0], Layout):
            continue
        lay, i = vec
        steps = run_layout([str(lay), "eval", str(i)])
        assert [int(steps[-1][1])] == _ints(header[cid]), cid
        checked += 1
    assert checked >= 100
