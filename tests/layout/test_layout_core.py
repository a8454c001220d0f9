"""Core layout behaviour: known values from the design notes, defaults, slicing, tensors,
print_layout against the C++ header's output, and the three evaluation backends."""

from __future__ import annotations

import numpy as np
import pytest
import z3

from tests.support.cxx_oracle import run_cxx
from threadmap.errors import LayoutError, ThreadmapError
from threadmap.layout import (
    GenRowMajor,
    Layout,
    Sym,
    _,
    coalesce,
    complement,
    cosize,
    local_partition,
    local_tile,
    make_identity_tensor,
    make_layout,
    parse,
    size,
)
from threadmap.layout.printing import print_layout


def test_design_known_values() -> None:
    # both were confirmed with the C++ headers (see test_print_layout_matches_cxx)
    assert str(complement(Layout((2, 2), (1, 6)), 24)) == "(3,2):(2,12)"
    assert str(coalesce(Layout((2, (1, 6)), (1, (6, 2))))) == "12:1"


def test_gen_row_major_is_row_major() -> None:
    # Note 000 claims GenRowMajor on (1024,1024) has stride (1,1024); CuTe gives (1024,1).
    assert make_layout((1024, 1024), GenRowMajor).stride == (1024, 1)
    assert Layout((2, (3, 4)), GenRowMajor).stride == (12, (4, 1))


def test_default_strides_give_extent_one_modes_stride_zero() -> None:
    # compact_major: a static extent-1 mode gets stride 0 (Layout<_1> prints _1:_0)
    assert str(Layout(1)) == "1:0"
    assert str(Layout((1, 4))) == "(1,4):(0,1)"
    assert str(Layout((4, 1, 2))) == "(4,1,2):(1,0,4)"


@pytest.mark.parametrize("bad", [(-1,), (2.5,), ("a",), (True,)])
def test_non_positive_or_non_integer_shapes_are_rejected(bad: tuple) -> None:
    with pytest.raises(LayoutError, match="shape element"):
        Layout(bad)


def test_incongruent_stride_is_rejected() -> None:
    with pytest.raises(LayoutError, match="not congruent"):
        Layout((2, 2), (1, (2, 3)))
    assert issubclass(LayoutError, ValueError) and issubclass(LayoutError, ThreadmapError)


def test_slicing_keeps_underscore_modes() -> None:
    L = Layout((4, (2, 3)), (1, (4, 8)))
    assert str(L(_, 1)) == "(4):(1)"
    assert str(L(1, _)) == "((2,3)):((4,8))"
    assert str(L(2, (_, 1))) == "(2):(4)"
    assert L(3, (1, 2)) == 3 + 4 + 16


def test_local_tile_and_partition_offsets() -> None:
    gmem = Layout((64, 64), GenRowMajor)
    tile = local_tile(gmem, (16, 16), (1, 2))
    assert tile.offset == gmem(16, 32) and str(tile.layout) == "(16,16):(64,1)"
    part = local_partition(tile, Layout((4, 8), (8, 1)), 13)  # thread 13 -> (m,n) = (1,5)
    assert part.offset == tile.offset + gmem(1, 5)
    assert str(part.layout) == "(4,2):(256,8)"


def test_identity_tensor_partition_gives_coordinates() -> None:
    cta = local_tile(make_identity_tensor((64, 64)), (16, 16), (1, 2))
    thr = local_partition(cta, Layout((4, 8)), 5)  # col-major threads: 5 -> (1,1)
    crd = thr(1, 0).to_tuple((0, 0))
    assert crd == (16 + 1 + 4, 32 + 1)


def test_backends_agree_on_evaluation() -> None:
    L = parse("((2,4),(3,5)):((15,1),(4,30))")
    n = size(L)
    idx = np.arange(n)
    ints = [L(i) for i in range(n)]
    assert list(L(idx)) == ints
    assert list(L.table()) == ints
    x = Sym.var("i", 16)
    e = L(x)
    s = z3.Solver()
    k = z3.Int("k")
    del k
    for i in range(0, n, 7):
        assert z3.simplify(z3.substitute(e.e, (x.e, z3.BitVecVal(i, 16)))).as_long() == ints[i]
    # and a proof over the whole domain: the offset is below cosize
    s.add(z3.ULT(x.e, n), z3.UGE(e.e, cosize(L)))
    assert s.check() == z3.unsat


def test_table_dtype_and_large_strides() -> None:
    L = Layout((2, 3), (1 << 40, 1))
    assert L.table().dtype == np.int64
    assert list(L.table()) == [L(i) for i in range(6)]


def test_print_layout_matches_cxx() -> None:
    cases = ["(4,8):(8,1)", "((2,2),(3,4)):((1,8),(2,24))", "(3,5):(5,1)"]
    body = "int main(){\n"
    for c in cases:
        L = parse(c)
        sh = _cxx(L.shape)
        st = _cxx(L.stride)
        body += f"  print_layout(make_layout({sh}, {st})); printf(\"@@\\n\");\n"
    body += "}\n"
    out = run_cxx(body).split("@@\n")
    for c, cx in zip(cases, out):
        cx_lines = cx.splitlines()
        ours = print_layout(parse(c)).splitlines()
        assert parse(cx_lines[0]) == parse(ours[0])  # header: C++ prints static ints as _4
        assert cx_lines[1:] == ours[1:]


def _cxx(t: object) -> str:
    if isinstance(t, tuple):
        return "make_tuple(" + ",".join(_cxx(x) for x in t) + ")"
    return f"Int<{t}>{{}}"


def test_print_layout_rejects_rank_3() -> None:
    with pytest.raises(LayoutError, match="rank-2"):
        print_layout(Layout((2, 2, 2)))
