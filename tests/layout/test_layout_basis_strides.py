"""Layouts with basis strides (identity layouts such as ``(4,8):(1@0,1@1)``) through every
public free function, against the real CuTe headers: where the header has a result,
threadmap's must print the same (``_`` of static integers included); where threadmap raises
LayoutError, the header must fail to compile (or give a non-layout) too.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

import threadmap.layout as tl
from tests.layout.test_layout_composed_dispatch import cute_text, must_be_layout
from tests.support.cxx_oracle import rejected_by_header, run_print_batch
from threadmap.errors import ThreadmapError
from threadmap.gpu.cxx import cxx_obj, cxx_tuple
from threadmap.layout import ArithTuple, Dyn, Layout, ScaledBasis, _


def E(v: int, *path: int) -> ScaledBasis:
    return ScaledBasis(v, path)


INPUTS: dict[str, Layout] = {
    "ident": tl.make_identity_layout((4, 8)),
    "nested": Layout(((2, 2), 8), ((E(1, 0), E(2, 0)), E(1, 1))),
    "swapped": Layout((4, 8), (E(1, 1), E(1, 0))),
    "scaled": Layout((4, (2, 4)), (E(2, 0), (E(1, 1), E(2, 1)))),
}


def _p(expr: str) -> str:
    return f"{{ auto r = {expr}; print(r); }}"


def _tl(expr: str) -> str:
    return f"{{ auto r = {expr}; print(r.layout()); }}"


def cases(a: Layout) -> dict[str, tuple[Any, str]]:
    X = cxx_obj(a)
    tiler = (2, 4)
    T = cxx_obj(tiler)
    lay2 = Layout(2, 1)
    blk = Layout((2, 2))
    it = f"make_identity_tensor({cxx_tuple(a.shape)})"
    crd = (_, 1)
    C = "make_coord(_,Int<1>{})"
    ops: dict[str, tuple[Any, str]] = {
        **{f: (partial(getattr(tl, f), a), _p(f"{f}({X})"))
           for f in ("size", "cosize", "rank", "depth", "shape", "stride", "coshape", "coalesce",
                     "filter", "right_inverse", "left_inverse", "nullspace", "make_fragment_like",
                     "make_layout_like", "complement")},
        "flatten": (lambda: tl.flatten_layout(a), _p(f"flatten({X})")),
        "get": (lambda: tl.get(a, 1), _p(f"get<1>({X})")),
        "select": (lambda: tl.select(a, 1, 0), _p(f"select<1,0>({X})")),
        "take": (lambda: tl.take(a, 0, 1), _p(f"take<0,1>({X})")),
        "group": (lambda: tl.group(a, 0, 2), _p(f"group<0,2>({X})")),
        "append": (lambda: tl.append(a, lay2), _p(f"append({X}, {cxx_obj(lay2)})")),
        "prepend": (lambda: tl.prepend(a, lay2), _p(f"prepend({X}, {cxx_obj(lay2)})")),
        "coalesce_profile": (lambda: tl.coalesce(a, (0, 0)), _p(f"coalesce({X}, {cxx_tuple((0, 0))})")),
        "filter_profile": (lambda: tl.filter(a, (0, 0)), _p(f"filter({X}, {cxx_tuple((0, 0))})")),
        "composition_tiler": (lambda: tl.composition(a, tiler), _p(f"composition({X}, {T})")),
        "composition_layout": (lambda: tl.composition(a, Layout(8, 2)),
                               _p(f"composition({X}, {cxx_obj(Layout(8, 2))})")),
        "composition_rhs": (lambda: tl.composition(Layout((4, 8)), a),
                            _p(f"composition({cxx_obj(Layout((4, 8)))}, {X})")),
        "complement_cotarget": (lambda: tl.complement(a, 64), _p(f"complement({X}, Int<64>{{}})")),
        **{f: (partial(getattr(tl, f), a, tiler), _p(f"{f}({X}, {T})"))
           for f in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide")},
        **{f: (partial(getattr(tl, f), a, lay2), _p(f"{f}({X}, {cxx_obj(lay2)})"))
           for f in ("logical_product", "zipped_product", "tiled_product", "flat_product")},
        **{f: (partial(getattr(tl, f), a, blk), _p(f"{f}({X}, {cxx_obj(blk)})"))
           for f in ("blocked_product", "raked_product")},
        "tile_to_shape": (lambda: tl.tile_to_shape(a, (8, 16)),
                          _p(f"tile_to_shape({X}, {cxx_tuple((8, 16))})")),
        "slice": (lambda: tl.slice_(crd, a), _p(f"slice({C}, {X})")),
        "dice": (lambda: tl.dice(crd, a), _p(f"dice({C}, {X})")),
        "slice_and_offset": (lambda: tl.slice_and_offset(crd, a),
                             f"{{ auto r = slice_and_offset({C}, {X}); print(get<0>(r)); "
                             "printf(\"\\t\"); print(get<1>(r)); }"),
        "eval": (lambda: a(Dyn(5)), _p(f"{X}(5)")),
        "upcast": (lambda: tl.upcast(a, 2), _p(f"upcast<2>({X})")),
        "downcast": (lambda: tl.downcast(a, 2), _p(f"downcast<2>({X})")),
        "max_common_layout": (lambda: tl.max_common_layout(a, Layout((4, 8))),
                              _p(f"max_common_layout({X}, {cxx_obj(Layout((4, 8)))})")),
        "max_common_vector": (lambda: tl.max_common_vector(Layout((4, 8)), a),
                              _p(f"max_common_vector({cxx_obj(Layout((4, 8)))}, {X})")),
        "local_tile": (lambda: tl.local_tile(tl.make_identity_tensor(a.shape), tiler, (1, 1)).layout,
                       _tl(f"local_tile({it}, {T}, make_coord(Int<1>{{}},Int<1>{{}}))")),
        "local_partition": (lambda: tl.local_partition(tl.make_identity_tensor(a.shape),
                                                       Layout((2, 4)), 3).layout,
                            _tl(f"local_partition({it}, {cxx_obj(Layout((2, 4)))}, Int<3>{{}})")),
    }
    return ops


FUNCTIONS = list(cases(INPUTS["ident"]))


def _str(x: Any) -> str:
    if isinstance(x, ArithTuple):
        return x.to_str(static=True)
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], Layout):
        return f"{cute_text(x[0])}\t{_str(x[1])}"
    if isinstance(x, ScaledBasis) or (isinstance(x, tuple) and any(
            isinstance(v, ScaledBasis) for v in tl.flatten_to_tuple(x))):
        return tl.tuple_str(x, static=True)
    return cute_text(x)


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    ours: dict[str, tuple[str, Any]] = {}
    acc: dict[str, str] = {}
    rej: dict[str, str] = {}
    for iname, a in INPUTS.items():
        for fname, (fn, cxx) in cases(a).items():
            cid = f"b_{fname}_{iname}"
            try:
                ours[cid] = ("ok", fn())
                acc[cid] = cxx
            except ThreadmapError as e:
                ours[cid] = ("rejected", e)
                rej[cid] = must_be_layout(cxx) if "print(r)" in cxx else cxx
    return {"ours": ours, "out": run_print_batch(acc), "rejected": rejected_by_header(rej),
            "n_acc": len(acc)}


def test_counts(oracle: dict[str, Any]) -> None:
    assert oracle["n_acc"] >= 100, oracle["n_acc"]


@pytest.mark.parametrize("fname", FUNCTIONS)
def test_basis_strides_against_header(fname: str, oracle: dict[str, Any]) -> None:
    bad = []
    for iname in INPUTS:
        cid = f"b_{fname}_{iname}"
        status, val = oracle["ours"][cid]
        if status == "ok":
            try:
                mine = _str(val)
            except TypeError:
                mine = repr(val)
            if oracle["out"].get(cid) != mine:
                bad.append(f"{iname}: C++ {oracle['out'].get(cid)!r} != threadmap {mine!r}")
        elif cid not in oracle["rejected"]:
            bad.append(f"{iname}: threadmap rejects ({val}) but the header compiles it")
    assert not bad, f"{fname}:\n" + "\n".join(bad)
