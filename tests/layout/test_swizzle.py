"""Laws of threadmap.layout.swizzle: Swizzle, ComposedLayout, GMMA atoms (no C++ needed)."""

from __future__ import annotations

import numpy as np
import pytest
import z3
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from threadmap.errors import LayoutError, SwizzleError
from threadmap.layout import (
    GMMA_LAYOUT_ATOMS,
    ComposedLayout,
    Layout,
    SmemPtrFlag,
    Swizzle,
    _,
    coalesce,
    composition,
    composition3,
    fast_table,
    gmma_layout_atom,
    make_swizzle,
    parse,
    size,
)
from threadmap.layout.backend import Sym


@st.composite
def swizzles(draw: st.DrawFn, max_bits: int = 14) -> Swizzle:
    b = draw(st.integers(0, 4))
    m = draw(st.integers(0, 5))
    lo = max(b, 0)
    mag = draw(st.integers(lo, max(lo, 6)))
    s = mag * draw(st.sampled_from([1, -1]))
    assume(b + m + abs(s) <= max_bits)
    return Swizzle(b, m, s)


@st.composite
def pow2_layouts(draw: st.DrawFn, max_log: int = 10) -> Layout:
    """Compact pow2 layouts: a random permutation of the modes of a colex layout."""
    n = draw(st.integers(1, 4))
    logs = [draw(st.integers(0, 4)) for _i in range(n)]
    assume(sum(logs) <= max_log)
    shp = tuple(1 << k for k in logs)
    perm = draw(st.permutations(range(n)))
    std = [0] * n
    acc = 1
    for i in perm:
        std[i] = acc if shp[i] > 1 else 0
        acc *= shp[i]
    return Layout(shp, tuple(std))


# --------------------------------------------------------------------------- Swizzle
def test_validation_mirrors_static_asserts() -> None:
    with pytest.raises(SwizzleError, match="MBase must be positive"):
        Swizzle(1, -1, 2)
    with pytest.raises(SwizzleError, match="BBits must be positive"):
        Swizzle(-1, 0, 2)
    with pytest.raises(SwizzleError, match="abs\\(SShift\\) must be more than BBits"):
        Swizzle(3, 4, 2)
    with pytest.raises(SwizzleError, match="abs\\(SShift\\)"):
        Swizzle(3, 4, -2)
    with pytest.raises(SwizzleError, match="32-bit int"):
        Swizzle(10, 12, 10)
    Swizzle(0, 0, 0)
    assert Swizzle(3, 4) == Swizzle(3, 4, 3)  # SShift defaults to BBits


def test_masks_and_print() -> None:
    sw = Swizzle(3, 4, 3)
    assert (sw.yyy_msk, sw.zzz_msk, sw.swizzle_code) == (0b1110000000, 0b1110000, 0b1111110000)
    neg = Swizzle(2, 1, -5)
    assert (neg.yyy_msk, neg.zzz_msk) == (0b110, 0b11000000)
    assert str(sw) == "Sw<3,4,3>" and str(neg) == "Sw<2,1,-5>"
    assert neg(0b010) == 0b010 ^ 0b010_0000_0  # Y bit 1 -> Z bit 6
    assert make_swizzle(0b1000, 0b0100) == Swizzle(1, 2, 1)
    assert make_swizzle(0b11000000, 0b00000110) == Swizzle(2, 1, 5)
    with pytest.raises(SwizzleError, match="don't match"):
        make_swizzle(0b11, 0b100)


@settings(max_examples=200, deadline=None)
@given(swizzles())
def test_swizzle_is_an_involution_and_a_permutation(sw: Swizzle) -> None:
    for k in (sw.nbits, sw.nbits + 1):
        x = np.arange(1 << k, dtype=np.int64)
        y = sw(x)
        assert np.array_equal(np.sort(y), x)       # bijective on [0, 2^k)
        assert np.array_equal(sw(y), x)            # involution
    assert make_swizzle(sw.yyy_msk, sw.zzz_msk) == sw or sw.bits == 0


@settings(max_examples=60, deadline=None)
@given(swizzles(max_bits=12), st.data())
def test_backends_agree(sw: Swizzle, data: st.DataObject) -> None:
    xs = data.draw(st.lists(st.integers(0, (1 << 16) - 1), min_size=1, max_size=8))
    arr = sw(np.array(xs, dtype=np.int64))
    inplace = sw.apply_inplace(np.array(xs, dtype=np.int32))
    v = Sym.var("x", 32)
    expr = sw(v)
    for i, x in enumerate(xs):
        ref = sw(x)
        assert arr[i] == ref == inplace[i]
        assert z3.simplify(z3.substitute(expr.e, (v.e, z3.BitVecVal(x, 32)))).as_long() == ref
    # symbolic involution, proved for every 32-bit input
    s = z3.Solver()
    s.add(sw(sw(v)).e != v.e)
    assert s.check() == z3.unsat


def test_sym_width_is_checked() -> None:
    with pytest.raises(SwizzleError):
        Swizzle(3, 4, -3)(Sym.var("x", 8))


def test_swizzle_composition_and_recast() -> None:
    a, b = Swizzle(1, 4, 3), Swizzle(1, 5, 3)
    ab = composition(a, b)
    assert ab == Swizzle(2, 4, 3)
    x = np.arange(1 << 12)
    assert np.array_equal(ab(x), a(b(x)))
    with pytest.raises(SwizzleError, match="same shift"):
        composition(Swizzle(1, 4, 3), Swizzle(1, 4, 4))
    assert Swizzle(3, 4, 3).upcast(2) == Swizzle(3, 3, 3)
    assert Swizzle(3, 1, 3).upcast(8) == Swizzle(1, 0, 3)
    assert Swizzle(3, 4, 3).downcast(4) == Swizzle(3, 6, 3)
    assert Swizzle(3, 4, 3).recast(8, 16) == Swizzle(3, 3, 3)


# --------------------------------------------------------------------------- ComposedLayout
@settings(max_examples=150, deadline=None)
@given(swizzles(max_bits=12), pow2_layouts(), st.integers(0, 64))
def test_composed_is_function_composition(sw: Swizzle, lay: Layout, off: int) -> None:
    c = ComposedLayout(sw, off, lay)
    idx = np.arange(size(lay))
    ref = np.array([sw(off + lay(int(i))) for i in idx])
    assert np.array_equal(c(idx), ref)
    assert np.array_equal(c.table(), ref)
    assert np.array_equal(fast_table(lay, sw, off, dtype=np.int64), ref)
    assert parse(str(c)) == c
    assert parse(c.to_str(static=True)) == c
    # operations act on layout_b and keep the function
    assert np.array_equal(c.coalesce().table(), ref)
    for tiler in (2, Layout(2, 1)):
        if size(lay) % 2:
            continue
        d = c.logical_divide(tiler)
        assert _size(d) == size(lay) and np.array_equal(np.sort(d.table()), np.sort(ref))
    # the slice law: slice(c, L)(d) + offset == L(c with _ filled by d); the header's
    # swizzle slicing XORs the offset in, so it assumes the offset's bits are disjoint from
    # the layout's (offset 0 or above the codomain)
    if isinstance(lay.shape, tuple) and len(lay.shape) >= 2:
        for o0 in (0, off << 16):
            c0 = ComposedLayout(sw, o0, lay)
            k = lay.shape[0] - 1
            sub, o = c0.slice_and_offset((k,) + (_,) * (len(lay.shape) - 1))
            rest = int(np.prod(lay.shape[1:]))
            for j in range(rest):
                assert sub(j) + o == c0(k + lay.shape[0] * j)


def _size(x: object) -> int:
    return x.size() if isinstance(x, ComposedLayout) else size(x)


def test_composition_rules() -> None:
    lay = Layout((8, 64), (64, 1))
    assert composition(Swizzle(0, 4, 3), lay) == lay  # identity swizzle decays
    c = composition(Swizzle(3, 4, 3), lay)
    assert isinstance(c, ComposedLayout) and str(c) == "Sw<3,4,3> o 0 o (8,64):(64,1)"
    # composed o tiler acts on layout_b
    t = c.compose(Layout((4, 8), (1, 4)))
    assert t.layout_b == composition(lay, Layout((4, 8), (1, 4)))
    # layout o composed requires offset 0
    with pytest.raises(LayoutError, match="offset == 0"):
        composition(Layout(16, 1), ComposedLayout(Swizzle(1, 0, 1), 3, Layout(4, 1)))
    # layout o swizzle: make_swizzle of the images of the Y and Z bits
    lz = composition(lay, Swizzle(2, 0, 3))
    assert lz == ComposedLayout(Swizzle(2, 0, -6), 0, lay)
    assert composition3(Swizzle(0, 4, 3), SmemPtrFlag(16), lay) != lay  # a flag is not Int<0>


def test_right_inverse_of_swizzled() -> None:
    c = composition(Swizzle(3, 4, 3), Layout((64, 8), (1, 64)))
    r = c.right_inverse()
    assert str(r) == "Sw<3,4,3> o 0 o 512:1"
    idx = np.arange(512)
    assert np.array_equal(c(r(idx)), idx)


def test_swizzled_slice_decays() -> None:
    c = composition(Swizzle(3, 4, 3), Layout((8, 64), (64, 1)))
    sub, off = c.slice_and_offset((3, _))
    assert str(sub) == "((16,2,2)):((1,-16,32))" and off == 208
    assert [sub(j) + off for j in range(64)] == [c(3, j) for j in range(64)]
    sub2, off2 = c.slice_and_offset((_, 5))
    assert isinstance(sub2, Layout)
    assert [sub2(i) + off2 for i in range(8)] == [c(i, 5) for i in range(8)]


def test_fast_table_paths() -> None:
    for lay in (Layout((64, 64), (64, 1)), Layout((3, 128, 33), (1, 99, 3)),
                Layout((1 << 15, 4), (4, 1))):
        for sw in (Swizzle(3, 4, 3), Swizzle(2, 0, -5), Swizzle(0, 3, 3)):
            ref = sw(lay.table(np.int64))
            assert np.array_equal(fast_table(lay, sw), ref)
            assert np.array_equal(fast_table(lay, sw, 16), sw(lay.table(np.int64) + 16))
    assert fast_table(Layout((64, 64), (64, 1)), Swizzle(3, 4, 3)).dtype == np.int32


# --------------------------------------------------------------------------- GMMA
def test_gmma_atoms() -> None:
    a = GMMA_LAYOUT_ATOMS["GMMA.Layout_K_SW128_Atom<f16>"]
    assert a.to_str(static=True) == "Sw<3,4,3> o smem_ptr[16b](unset) o (_8,_64):(_64,_1)"
    assert a == gmma_layout_atom("K", "SW128", 16)
    pi = a.as_position_independent_swizzle_layout()
    assert str(pi) == "Sw<3,3,3> o 0 o (8,64):(64,1)"
    # the element-offset function equals the byte swizzle of byte addresses
    idx = np.arange(a.size())
    assert np.array_equal(pi.table() * 2, Swizzle(3, 4, 3)(a.layout_b.table() * 2))
    inter = GMMA_LAYOUT_ATOMS["GMMA.Layout_MN_INTER_Atom<tf32>"]
    assert str(inter) == "Sw<0,4,3> o smem_ptr[32b](unset) o (4,8):(1,4)"
    assert inter.as_position_independent_swizzle_layout() == Layout((4, 8), (1, 4))
    for name, atom in GMMA_LAYOUT_ATOMS.items():
        if "_Bits" in name:
            continue
        t = atom.as_position_independent_swizzle_layout()
        tab = t.table() if isinstance(t, (Layout, ComposedLayout)) else None
        assert tab is not None and np.array_equal(np.sort(tab), np.arange(atom.size())), name
    assert idx.size == 512
    with pytest.raises(LayoutError):
        gmma_layout_atom("X", "SW128", 16)


# --------------------------------------------------------------------------- pycute
def test_differential_pycute() -> None:
    pycute = pytest.importorskip("pycute")
    for b in range(0, 4):
        for m in range(0, 5):
            for s in [x for x in range(-6, 7) if abs(x) >= b and x != 0]:
                ours, theirs = Swizzle(b, m, s), pycute.Swizzle(b, m, s)
                assert ours.yyy_msk == theirs.yyy_msk and ours.zzz_msk == theirs.zzz_msk
                xs = range(1 << ours.nbits)
                assert [ours(x) for x in xs] == [theirs(x) for x in xs]
                assert ours.size() == theirs.size()
    pl = pycute.Layout((8, 64), (64, 1))
    pc = pycute.ComposedLayout(pycute.Swizzle(3, 4, 3), 0, pl)
    ours_c = ComposedLayout(Swizzle(3, 4, 3), 0, Layout((8, 64), (64, 1)))
    assert [pc(i) for i in range(512)] == ours_c.table().tolist()
    assert coalesce(ours_c.layout_b) == Layout((8, 64), (64, 1))
