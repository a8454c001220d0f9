"""Aliasing of a destination tensor (two coordinates, one address) by every decision path.

The reference is the brute-force table of every address (the exact path for small tensors);
the histogram and z3 paths are forced on the same small layouts by lowering the limits, so
every path is compared with enumeration on hundreds of generated layouts.
"""

from __future__ import annotations

import itertools
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import threadmap.verify.aliasing as grid
from threadmap.layout.parse import parse_layout
from threadmap.verify.aliasing import aliasing, offset_histogram


def _tensor(text: str) -> SimpleNamespace:
    lay = parse_layout(text)
    shp = lay.shape if isinstance(lay.shape, tuple) else (lay.shape,)
    from threadmap.layout import size
    return SimpleNamespace(layout=lay, shape=tuple(int(size(m)) for m in shp),
                           offsets=lambda c: lay(tuple(c) if len(c) != 1 else c[0]))


def _brute(t: SimpleNamespace) -> tuple[int, dict[int, int]]:
    offs: dict[tuple[int, ...], int] = {}
    for c in itertools.product(*(range(e) for e in t.shape)):
        offs[c] = int(t.layout(c))
    hist = Counter(offs.values())
    return sum(n for n in hist.values() if n >= 2), offs  # type: ignore[return-value]


@st.composite
def layouts(draw: st.DrawFn) -> str:
    rank = draw(st.integers(1, 3))
    modes = []
    for _ in range(rank):
        if draw(st.booleans()):
            a, b = draw(st.integers(1, 4)), draw(st.integers(1, 4))
            sa, sb = draw(st.integers(-6, 12)), draw(st.integers(-6, 12))
            modes.append((f"({a},{b})", f"({sa},{sb})"))
        else:
            modes.append((str(draw(st.integers(1, 6))), str(draw(st.integers(-6, 12)))))
    text = f"({','.join(m[0] for m in modes)}):({','.join(m[1] for m in modes)})"
    if draw(st.booleans()) and "-" not in text:
        b, m = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        s = draw(st.integers(max(b, 1), 4))  # CuTe: |SShift| >= BBits
        text = f"Sw<{b},{m},{s}> o {text}"
    return text


@pytest.mark.parametrize("path", ["table", "histogram", "solver"])
@settings(max_examples=150, deadline=None)
@given(text=layouts())
def test_every_path_agrees_with_enumerating_the_addresses(path: str, text: str) -> None:
    t = _tensor(text)
    count, offs = _brute(t)
    with pytest.MonkeyPatch.context() as mp:
        if path != "table":
            mp.setattr(grid, "MAX_ALIAS_TABLE", 0)
        if path == "solver":
            mp.setattr(grid, "MAX_ALIAS_SPAN", 0)
        al = aliasing(t)  # type: ignore[arg-type]
    assert al.decided
    if path == "solver" and not al.exact:
        assert count >= al.count == 2
    else:
        assert al.count == count
    if count:
        assert al.pair is not None
        a, b = al.pair
        assert a != b and offs[a] == offs[b]
    else:
        assert al.pair is None


def test_offset_histogram_is_the_multiset_of_offsets() -> None:
    rng = np.random.default_rng(7)
    for _ in range(500):
        r = int(rng.integers(1, 4))
        shape = [int(x) for x in rng.integers(1, 7, r)]
        strides = [int(x) for x in rng.integers(-9, 10, r)]
        offs = [sum(c * d for c, d in zip(cs, strides)) for cs in itertools.product(*(range(e) for e in shape))]
        ref = np.bincount(np.asarray(offs) - min(offs))
        assert np.array_equal(offset_histogram(shape, strides, 1 << 20), ref)
    assert offset_histogram([100, 100], [100, 1], 1000) is None  # span 9999 over the limit


def test_a_leading_dimension_below_the_row_length_is_found_at_large_sizes() -> None:
    # (M,N):(LD,1) with LD < N: past the exact table (2^23 elements) the histogram counts it
    # exactly; the reference count is numpy's bincount of every offset.
    m, n, ld = 2900, 2900, 2000
    t = _tensor(f"({m},{n}):({ld},1)")
    off = (np.arange(m)[:, None] * ld + np.arange(n)[None, :]).ravel()
    ref = np.bincount(off)
    al = aliasing(t)  # type: ignore[arg-type]
    assert al.exact and al.count == int(ref[ref >= 2].sum()) > 0
    a, b = al.pair  # type: ignore[misc]
    assert a != b and a[0] * ld + a[1] == b[0] * ld + b[1]


def test_beyond_the_histogram_the_solver_finds_a_pair_and_proves_injectivity() -> None:
    big = _tensor("(65536,65536):(65000,1)")
    al = aliasing(big)  # type: ignore[arg-type]
    assert al.decided and not al.exact and al.count == 2
    a, b = al.pair  # type: ignore[misc]
    assert a != b and a[0] * 65000 + a[1] == b[0] * 65000 + b[1]
    # Not ordered-disjoint (262145 is within the span of the smaller strides) but injective
    # (the last mode alone makes offsets odd): z3 proves it.
    ok = _tensor("(65536,65536,2):(2,262144,262145)")
    assert grid._disjoint_strides(*grid.strided_form(ok.layout)) is False  # type: ignore[misc]
    assert aliasing(ok) == grid.Aliasing(0, None)  # type: ignore[arg-type]


def test_a_layout_without_integer_strides_beyond_the_table_is_undecided(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grid, "MAX_ALIAS_TABLE", 0)
    t = SimpleNamespace(layout=SimpleNamespace(), shape=(4, 4))  # a layout the strided paths cannot read
    assert aliasing(t) == grid.Aliasing(0, None, decided=False)  # type: ignore[arg-type]
