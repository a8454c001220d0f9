"""CuTe's ``evenly_divides``, ``colex_less`` (``cute/int_tuple.hpp``), ``domain_distribute``
(``cute/layout.hpp``) and ``shape_mod``: the law of each as a hypothesis property, and a
fixed-seed batch of cases against the compiled headers (one host program for all).

``shape_mod`` is not in the CUTLASS 4.x headers; its C++ side in the batch is CuTe 3.x's
definition written over the header's own ``gcd`` and ``shape_div``.
"""

from __future__ import annotations

import random
from math import gcd
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import threadmap.layout as tl
from tests.support.cxx_oracle import require_oracle, run_print_batch
from threadmap.errors import LayoutError
from threadmap.gpu.cxx import cxx_value
from threadmap.layout import Layout, colex_less, domain_distribute, evenly_divides, shape_mod
from threadmap.layout.int_tuple import ceil_div, compact_major_left, crd2idx, flatten_to_tuple, idx2crd

SEED = 20261203
N = 60

SHAPE_MOD_CXX = """
template <class A, class B>
CUTE_HOST_DEVICE constexpr auto tm_shape_mod(A const& a, B const& b) {
  if constexpr (is_tuple<A>::value) {
    if constexpr (is_tuple<B>::value) {
      return transform(a, b, [](auto const& x, auto const& y) { return tm_shape_mod(x, y); });
    } else {
      auto r = fold(a, cute::make_tuple(cute::make_tuple(), b), [](auto const& init, auto const& ai) {
        return cute::make_tuple(append(get<0>(init), tm_shape_mod(ai, get<1>(init))),
                                shape_div(get<1>(init), ai));
      });
      return get<0>(r);
    }
  } else if constexpr (is_tuple<B>::value) {
    return tm_shape_mod(a, product(b));
  } else {
    return gcd(a, b);
  }
}
"""


# ----------------------------------------------------------------------------- generators
def r_shape(rng: random.Random, depth: int = 2) -> Any:
    if depth == 0 or rng.random() < 0.45:
        return rng.choice([1, 2, 3, 4, 4, 6, 8, 12, 15, 16])
    return tuple(r_shape(rng, depth - 1) for _ in range(rng.randint(1, 3)))


def r_like(rng: random.Random, profile: Any, hi: int = 4) -> Any:
    """An int tuple with ``profile``'s nesting; sometimes a shorter or longer tuple."""
    if isinstance(profile, tuple):
        modes = [r_like(rng, m, hi) for m in profile]
        if rng.random() < 0.15 and modes:
            modes.pop()
        elif rng.random() < 0.15:
            modes.append(rng.randint(0, hi))
        return tuple(modes)
    return rng.randint(0, hi)


def r_tiler(rng: random.Random, shape: Any) -> Any:
    c = rng.random()
    if c < 0.4:
        return rng.choice([1, 2, 3, 4, 5, 6, 8, 16, 32])
    modes = tuple(rng.choice([1, 2, 3, 4, 8]) if rng.random() < 0.8 else (rng.choice([1, 2]), rng.choice([2, 4]))
                  for _ in range(rng.randint(1, tl.rank(shape) + (rng.random() < 0.2))))
    return modes


def _mixed(a: Any, b: Any) -> bool:
    """Whether an integer meets a tuple at a position colex_less compares."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return any(_mixed(x, y) for x, y in zip(reversed(a), reversed(b)))
    return isinstance(a, tuple) != isinstance(b, tuple)


def cases() -> dict[str, tuple[str, str]]:
    """``id -> (C++ statement printing the result, threadmap's result as text)``."""
    rng = random.Random(SEED)
    out: dict[str, tuple[str, str]] = {}

    def add(stmt: str, ours: str) -> None:
        out[f"c{len(out)}"] = (stmt, ours)

    for _ in range(N):
        a = r_shape(rng)
        b = r_tiler(rng, a)
        try:
            ours = evenly_divides(a, b)
        except LayoutError:
            continue
        add(f"print(int(bool(evenly_divides({cxx_value(a)}, {cxx_value(b)}))));", str(int(ours)))
    while sum(1 for s, _ in out.values() if "colex_less" in s) < N:
        a = r_shape(rng)
        x = r_like(rng, a)
        y = r_like(rng, a) if rng.random() < 0.7 else x
        if _mixed(x, y):
            continue
        add(f"print(int(bool(colex_less({cxx_value(x)}, {cxx_value(y)}))));", str(int(colex_less(x, y))))
    for _ in range(N):
        a = r_shape(rng)
        if tl.size(a) > 4096:
            continue
        b = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 32, 64])
        add(f"print(domain_distribute({cxx_value(a)}, Int<{b}>{{}}));",
            domain_distribute(a, b).to_str(static=True))
    for _ in range(N):
        a = r_shape(rng, 1)
        m: Any = rng.choice([1, 2, 3, 4, 6, 8, 16]) if rng.random() < 0.7 else r_shape(rng, 1)
        if isinstance(a, tuple) and isinstance(m, tuple) and len(a) != len(m):
            continue
        try:
            ours_m = shape_mod(a, m)
        except LayoutError:
            continue
        add(f"print(tm_shape_mod({cxx_value(a)}, {cxx_value(m)}));", tl.tuple_str(ours_m, True))
    return out


@pytest.fixture(scope="module")
def header() -> dict[str, str]:
    require_oracle()
    from tests.support.cxx_oracle import PRELUDE

    return run_print_batch({cid: stmt for cid, (stmt, _) in cases().items()}, prelude=PRELUDE + SHAPE_MOD_CXX)


@pytest.mark.parametrize("fn", ["evenly_divides", "colex_less", "domain_distribute", "tm_shape_mod"])
def test_against_header(fn: str, header: dict[str, str]) -> None:
    mine = {cid: c for cid, c in cases().items() if f"{fn}(" in c[0]}
    assert len(mine) >= N // 2
    bad = [f"{stmt}\n  C++ {header.get(cid)!r} threadmap {ours!r}"
           for cid, (stmt, ours) in mine.items() if header.get(cid) != ours]
    assert not bad, f"{len(bad)} of {len(mine)} differ:\n" + "\n".join(bad[:15])
    if fn in ("evenly_divides", "colex_less"):  # both answers occur
        assert {ours for _, ours in mine.values()} == {"0", "1"}


def test_header_examples() -> None:
    assert str(domain_distribute(Layout((15, 14)), 6)) == "(3,2):(1,15)"
    assert shape_mod(6, 4) == 2  # raised "Divisibility Condition" before


# ----------------------------------------------------------------------------- laws
small = st.integers(1, 64)
shapes = st.recursive(st.integers(1, 8), lambda inner: st.tuples(inner, inner) | st.tuples(inner, inner, inner),
                      max_leaves=5)


@given(small, small)
def test_evenly_divides_int_law(a: int, b: int) -> None:
    assert evenly_divides(a, b) == (a % b == 0)


@given(shapes, st.integers(1, 32))
def test_evenly_divides_tiles_exactly(a: Any, b: int) -> None:
    """``evenly_divides(a, b)`` is exactly ``size(a) == b * size(ceil_div(a, b))``."""
    assert evenly_divides(a, b) == (tl.size(a) == b * tl.size(ceil_div(a, b)))


@given(shapes, st.lists(st.integers(1, 8), min_size=1, max_size=4))
def test_evenly_divides_tuple_is_modewise(a: Any, t: list[int]) -> None:
    modes = a if isinstance(a, tuple) else (a,)
    want = len(t) <= len(modes) and all(evenly_divides(m, x) for m, x in zip(modes, t))
    assert evenly_divides(a, tuple(t)) == want


@given(shapes, st.data())
def test_colex_less_is_the_column_major_order(s: Any, data: st.DataObject) -> None:
    n = tl.size(s)
    i, j = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))
    ci, cj = idx2crd(i, s), idx2crd(j, s)
    stride = compact_major_left(s)
    assert crd2idx(ci, s, stride) == i
    assert colex_less(ci, cj) == (i < j)
    assert not colex_less(ci, ci)


@given(shapes, st.integers(1, 96))
def test_domain_distribute_postconditions(a: Any, b: int) -> None:
    r = domain_distribute(a, b)
    n = tl.size(r)
    assert b % n == 0
    vals = [r(i) for i in range(n)]
    assert all(x < y for x, y in zip(vals, vals[1:]))
    assert 0 <= vals[0] and vals[-1] < tl.size(a)
    tl.composition(Layout(a), r)  # admissible: defined, no error
    # mode i contributes gcd(a_i, what b still needs)
    rest, want = b, 1
    for ai in flatten_to_tuple(a):
        g = gcd(ai, rest)
        want, rest = want * g, rest // g
    assert n == want


@given(small, small)
def test_shape_mod_is_gcd(a: int, b: int) -> None:
    g = shape_mod(a, b)
    assert g == gcd(a, b) and a % g == 0 and b % g == 0
