"""Property tests of the CuTe layout algebra's laws (as the C++ header states them).

Every test draws its layouts from the public strategies of
:mod:`threadmap.testing.strategies` (so a failure shrinks to a small, shallow layout).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import threadmap.layout as tl
from threadmap.errors import LayoutError
from threadmap.layout import Layout
from threadmap.layout.backend import Sym
from threadmap.layout.int_tuple import crd2idx, flatten_to_tuple
from threadmap.layout.parse import parse
from threadmap.testing.strategies import (
    any_layouts,
    compact_layouts,
    composition_pairs,
    divide_pairs,
    injective_layouts,
    layouts,
)

LAWS = settings(max_examples=300, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
FEW = settings(LAWS, max_examples=100)


def tab(layout: Layout) -> np.ndarray:
    return layout.table(np.int64)


def ext(a: Layout, idx: np.ndarray) -> np.ndarray:
    """``a`` at 1-D indices (also past size(a): the last mode takes the quotient)."""
    return np.asarray(crd2idx(idx, a.shape, a.stride), dtype=np.int64) * np.ones_like(idx)


def strongly_admissible(a: Layout, b: Layout) -> bool:
    """Each leaf stride of ``b`` and each prefix extent of ``coalesce(a)`` divide one another
    (the strong divisibility condition, under which composition is exactly ``a o b``; the
    header's weak condition also accepts e.g. (17,7):(0,51) o 16:16, whose result is not
    ``a o b``)."""
    ca = tl.coalesce(a)
    pre = [1]
    for s in flatten_to_tuple(ca.shape)[:-1]:
        pre.append(pre[-1] * s)
    for d in flatten_to_tuple(b.stride):
        if d == 0:
            continue
        if any(p % d and d % p for p in pre):
            return False
    return True


def comp_ok(a: Layout, b: Layout, r: Layout) -> None:
    """``r`` agrees with ``a o b`` leaf by leaf of ``b`` on the domain of ``a``."""
    def rec(bs: Any, bd: Any, rs: Any, rd: Any) -> None:
        if isinstance(bs, tuple):
            assert isinstance(rs, tuple) and len(rs) == len(bs), (a, b, r)
            for x in zip(bs, bd, rs, rd):
                rec(*x)
            return
        j = np.arange(bs, dtype=np.int64) * bd
        inside = j < tl.size(a)
        assert np.array_equal(Layout(rs, rd).table(np.int64)[inside], ext(a, j)[inside]), \
            (a, b, r)

    assert tl.size(r) == tl.size(b)
    rec(b.shape, b.stride, r.shape, r.stride)


# ------------------------------------------------------------------------------- composition
@LAWS
@given(composition_pairs(max_size=512), st.booleans())
def test_composition_is_function_composition(pair: tuple[Layout, Layout], flat_check: bool) -> None:
    """R = A o B: R(i) == A(B(i)) for every i of B's domain (B compact-ish and in range)."""
    a, b = pair
    r = tl.composition(a, b)
    assert tl.size(r) == tl.size(b)
    if strongly_admissible(a, b):
        comp_ok(a, b, r)
    if isinstance(b.shape, int) or tl.depth(b) == 1 and flat_check:
        # one flat mode: plain function composition on the whole domain in range
        bt = tab(b)
        if (bt < tl.size(a)).all() and strongly_admissible(a, b) and len(
                flatten_to_tuple(b.shape)) == 1:
            assert np.array_equal(tab(r), tab(a)[bt])


# ------------------------------------------------------------------------------- coalesce/filter
@LAWS
@given(any_layouts())
def test_coalesce_filter_preserve_function(a: Layout) -> None:
    t = tab(a)
    c = tl.coalesce(a)
    assert tl.size(c) == tl.size(a) and tl.depth(c) <= 1
    assert np.array_equal(tab(c), t)
    cx = tl.coalesce_x(a)
    idx = np.arange(2 * tl.size(a), dtype=np.int64)
    assert np.array_equal(ext(cx, idx), ext(a, idx))  # coalesce_x: also outside the domain
    f = tl.filter(a)
    nz = [s for s, d in zip(flatten_to_tuple(a.shape), flatten_to_tuple(a.stride)) if d != 0]
    assert tl.size(f) == int(np.prod(nz, dtype=np.int64)) if nz else tl.size(f) == 1
    assert set(tab(f).tolist()) == set(t.tolist())
    assert 0 not in flatten_to_tuple(f.stride) or f == Layout(1, 0)


# ------------------------------------------------------------------------------- complement
@LAWS
@given(injective_layouts(max_size=256, max_cosize=2048), st.integers(0, 2), st.integers(1, 4))
def test_complement_disjoint_ordered_and_tiles(a: Layout, which: int, k: int) -> None:
    m = [tl.cosize(a), tl.size(a), tl.cosize(a) * k][which]
    c = tl.complement(a, m)
    ct, at = tab(c), tab(a)
    assert (np.diff(ct) > 0).all()                   # ordered
    assert not (set(ct[1:].tolist()) & set(at.tolist()))   # disjoint (except 0)
    full = tab(tl.make_layout(a, c))
    assert len(np.unique(full)) == len(full)          # (L, complement) is injective
    assert tl.size(a) * tl.size(c) >= m // max(1, tl.size(a)) * 1   # covers the cotarget


@LAWS
@given(compact_layouts(max_size=512), st.integers(1, 8))
def test_complement_of_compact_is_bijection(a: Layout, k: int) -> None:
    """Compact L and a multiple M of size(L): make_layout(L, complement(L, M)) is a
    bijection onto [0, M)."""
    m = tl.size(a) * k
    full = tab(tl.make_layout(a, tl.complement(a, m)))
    assert np.array_equal(np.sort(full), np.arange(m))


# ------------------------------------------------------------------------------- divide
@LAWS
@given(divide_pairs(max_size=512))
def test_logical_divide_definition(pair: tuple[Layout, Layout]) -> None:
    """logical_divide(A, B) == composition(A, make_layout(B, complement(B, shape(coalesce(A)))))
    (layout.hpp:1563), and as a function equal to the size(A)-cotarget variant when A's
    coalesced shape is a single mode."""
    a, b = pair
    d = tl.logical_divide(a, b)
    t = tl.make_layout(b, tl.complement(b, tl.coalesce(a).shape))
    assert d == tl.composition(a, t)
    if isinstance(tl.coalesce(a).shape, int):
        t2 = tl.make_layout(b, tl.complement(b, tl.size(a)))
        try:
            d2 = tl.composition(a, t2)
        except LayoutError:
            return
        assert np.array_equal(tab(d), tab(d2))
    z = tl.zipped_divide(a, b)
    assert np.array_equal(tab(z), tab(d))


# ------------------------------------------------------------------------------- inverses
@LAWS
@given(any_layouts())
def test_right_inverse(a: Layout) -> None:
    r = tl.right_inverse(a)
    assert np.array_equal(tab(a)[tab(r)], np.arange(tl.size(r)))


@LAWS
@given(st.one_of(injective_layouts(max_size=512, max_cosize=4096), compact_layouts()))
def test_left_inverse(a: Layout) -> None:
    r = tl.left_inverse(a)
    assert np.array_equal(ext(r, tab(a)), np.arange(tl.size(a)))


# ------------------------------------------------------------------------------- products
@LAWS
@given(injective_layouts(max_size=64, max_cosize=256),
       st.one_of(compact_layouts(max_size=16, max_depth=2),
                 injective_layouts(max_size=16, max_cosize=32, max_depth=2)))
def test_logical_product_structure(a: Layout, b: Layout) -> None:
    """logical_product(A, B) == (A, complement(A, size(A)*cosize(B)) o B)."""
    try:
        p = tl.logical_product(a, b)
    except LayoutError:
        return  # not admissible (the header's static_asserts)
    c = tl.complement(a, tl.size(a) * tl.cosize(b))
    assert p[0] == a
    assert p[1] == tl.composition(c, b)
    if strongly_admissible(c, b):
        comp_ok(c, b, p[1])


@LAWS
@given(compact_layouts(max_size=64, max_depth=2), compact_layouts(max_size=16, max_depth=2))
def test_blocked_raked_products_are_bijections(a: Layout, b: Layout) -> None:
    n = tl.size(a) * tl.size(b)
    for f in (tl.blocked_product, tl.raked_product):
        try:
            p = f(a, b)
        except LayoutError as e:  # zip of modes of different ranks (rank-1 int vs tuple)
            assert "zip" in str(e)
            continue
        assert tl.size(p) == n
        assert np.array_equal(np.sort(tab(p)), np.arange(n)), (f.__name__, a, b, p)


# ------------------------------------------------------------------------------- backends
@LAWS
@given(layouts(max_size=1024), st.data())
def test_int_numpy_sym_backends_agree(a: Layout, data: st.DataObject) -> None:
    n = tl.size(a)
    t = tab(a)
    assert np.array_equal(np.asarray(a(np.arange(n, dtype=np.int64))) * np.ones(n, np.int64), t)
    for i in data.draw(st.lists(st.integers(0, n - 1), max_size=min(n, 4), unique=True)):
        assert a(i) == t[i] == a(Sym.const(i)).as_int()


@FEW
@given(layouts(max_size=256, max_depth=2, max_stride=16))
def test_sym_proves_layout_for_all_indices(a: Layout) -> None:
    """z3: for a symbolic index i < size, L(i) equals the per-mode table sum (proved)."""
    n = tl.size(a)
    bits = 24
    i = Sym.var("i", bits)
    expr = a(i)
    # reference: the flat digit decomposition with an explicit table lookup as an If-chain
    t = tab(a)
    ref: Any = z3.BitVecVal(int(t[n - 1]), bits)
    for k in range(n - 2, -1, -1):
        ref = z3.If(i.e == k, z3.BitVecVal(int(t[k]), bits), ref)
    s = z3.Solver()
    s.add(z3.ULT(i.e, n), expr.e != ref)
    assert s.check() == z3.unsat


@LAWS
@given(any_layouts(), st.data())
def test_table_matches_evaluation(a: Layout, data: st.DataObject) -> None:
    t = a.table()
    n = tl.size(a)
    idx = data.draw(st.lists(st.integers(0, n - 1), min_size=min(n, 16), max_size=min(n, 16), unique=True))
    assert [int(t[i]) for i in idx] == [a(i) for i in idx]
    assert len(t) == n


# ------------------------------------------------------------------------------- printing
@LAWS
@given(any_layouts())
def test_parse_str_roundtrip(a: Layout) -> None:
    assert parse(str(a)) == a
    assert parse(a.to_str(static=True)) == a
    assert str(parse(a.to_str(static=True))) == str(a)
