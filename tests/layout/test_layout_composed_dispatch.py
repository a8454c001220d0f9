"""Every public free function of the algebra on composed (swizzled) layouts, against (a) the
ComposedLayout method of the same name and (b) the real CuTe headers.

For each function and each composed input, threadmap's free function either returns a
result that equals the method's and what the header prints (compared as text, CuTe's ``_``
of static integers included), or raises LayoutError where the header has no overload for a
ComposedLayout; then the case must fail to compile against the header too (all rejected
cases in one ``-fsyntax-only`` translation unit).  One program holds every accepted case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest

import threadmap.layout as tl
from tests.support.cxx_oracle import rejected_by_header, run_print_batch
from threadmap.errors import ThreadmapError
from threadmap.gpu.cxx import cxx_coord, cxx_obj, cxx_tuple
from threadmap.layout import (
    ComposedLayout,
    Layout,
    Swizzle,
    Tensor,
    _,
    gmma_layout_atom,
    parse_layout,
)
from threadmap.layout.integral_constant import static_str

# the composed inputs: the brief's Sw<3,4,3> o (8,64):(64,1), a non-zero offset, a
# column-major swizzle, and a GMMA atom (offset smem_ptr_flag_bits<16>)
INPUTS: dict[str, ComposedLayout] = {
    "sw343": parse_layout("Sw<3,4,3> o (8,64):(64,1)"),
    "off32": ComposedLayout(Swizzle(2, 3, 3), 32, Layout((16, 32), (32, 1))),
    "colmaj": ComposedLayout(Swizzle(1, 2, 3), 0, Layout(((4, 4), 16), ((1, 64), 4))),
    "gmma": gmma_layout_atom("K", "SW64", 16),
}


def out_str(x: Any) -> str:
    """What CuTe's ``print`` writes for a threadmap value."""
    if isinstance(x, (Layout, ComposedLayout, Swizzle)):
        return x.to_str(static=True)
    if isinstance(x, Tensor):
        return f"{out_str(x.layout)}\t{int(x.offset)}"
    if isinstance(x, tuple):
        return tl.tuple_str(x, static=True)
    if isinstance(x, int):
        return static_str(x)
    raise TypeError(x)


@dataclass
class Spec:
    free: Callable[[], Any]                 # threadmap's free function on the input
    method: Callable[[], Any] | None        # the ComposedLayout method (None: none exists)
    cxx: str                                # C++ statement printing the result
    has_method: bool = True                 # False: the free function has no method to match


def _p(expr: str) -> str:
    return f"{{ auto r = {expr}; print(r); }}"


def _t(expr: str) -> str:
    return f"{{ auto r = {expr}; print(r.layout()); printf(\"\\t\"); print(*r.data()); }}"


def specs(cl: ComposedLayout) -> dict[str, Spec]:
    X = cxx_obj(cl)
    s0, s1 = (tl.size(m) for m in cl.layout_b) if tl.rank(cl) == 2 else (tl.size(cl), 1)
    tiler = (2, 8)
    T = cxx_obj(tiler)
    prof = (0, 0)
    lay2 = Layout(2, 1)
    blk = Layout((2, 2))
    big = Layout(1 << 14, 2)
    trg = (2 * s0, 2 * s1)
    crd = (_, 3)
    C = "make_coord(_,Int<3>{})"
    tens = f"make_tensor(counting_iterator<int>(0), {X})"
    thr = Layout((2, 4))
    return {
        "size": Spec(lambda: tl.size(cl), cl.size, _p(f"size({X})")),
        "cosize": Spec(lambda: tl.cosize(cl), cl.cosize, _p(f"cosize({X})")),
        "rank": Spec(lambda: tl.rank(cl), cl.rank, _p(f"rank({X})")),
        "depth": Spec(lambda: tl.depth(cl), cl.depth, _p(f"depth({X})")),
        "shape": Spec(lambda: tl.shape(cl), lambda: cl.shape, _p(f"shape({X})")),
        "stride": Spec(lambda: tl.stride(cl), None, _p(f"stride({X})")),
        "coshape": Spec(lambda: tl.coshape(cl), None, _p(f"coshape({X})")),
        "get": Spec(lambda: tl.get(cl, 1), lambda: cl.get(1), _p(f"get<1>({X})")),
        "select": Spec(lambda: tl.select(cl, 1, 0), None, _p(f"select<1,0>({X})")),
        "take": Spec(lambda: tl.take(cl, 0, 1), lambda: cl.take(0, 1), _p(f"take<0,1>({X})")),
        "group": Spec(lambda: tl.group(cl, 0, 2), lambda: cl.group(0, 2), _p(f"group<0,2>({X})")),
        "flatten": Spec(lambda: tl.flatten_layout(cl), cl.flatten, _p(f"flatten({X})")),
        "append": Spec(lambda: tl.append(cl, lay2), lambda: cl.append(lay2),
                       _p(f"append<{tl.rank(cl) + 1}>({X}, {cxx_obj(lay2)})")),
        "prepend": Spec(lambda: tl.prepend(cl, lay2), None, _p(f"prepend({X}, {cxx_obj(lay2)})")),
        "replace": Spec(lambda: tl.replace_layout(cl, 0, lay2), lambda: cl.replace(0, lay2),
                        _p(f"replace<0>({X}, {cxx_obj(lay2)})")),
        "unflatten": Spec(lambda: tl.unflatten_layout(cl, prof), None,
                          _p(f"unflatten({X}, {cxx_tuple(prof)})")),
        "coalesce": Spec(lambda: tl.coalesce(cl), cl.coalesce, _p(f"coalesce({X})")),
        "coalesce_profile": Spec(lambda: tl.coalesce(cl, prof), lambda: cl.coalesce(prof),
                                 _p(f"coalesce({X}, {cxx_tuple(prof)})")),
        "filter": Spec(lambda: tl.filter(cl), None, _p(f"filter({X})")),
        "filter_profile": Spec(lambda: tl.filter(cl, prof), lambda: cl.filter(prof),
                               _p(f"filter({X}, {cxx_tuple(prof)})")),
        "composition": Spec(lambda: tl.composition(cl, tiler), lambda: cl.composition(tiler),
                            _p(f"composition({X}, {T})")),
        "composition_rhs": Spec(lambda: tl.composition(big, cl), lambda: cl.r_composition(big),
                                _p(f"composition({cxx_obj(big)}, {X})")),
        "complement": Spec(lambda: tl.complement(cl), cl.complement, _p(f"complement({X})")),
        "complement_cotarget": Spec(lambda: tl.complement(cl, 4 * tl.cosize(cl)),
                                    lambda: cl.complement(4 * tl.cosize(cl)),
                                    _p(f"complement({X}, Int<{4 * tl.cosize(cl)}>{{}})")),
        "right_inverse": Spec(lambda: tl.right_inverse(cl), cl.right_inverse,
                              _p(f"right_inverse({X})")),
        "left_inverse": Spec(lambda: tl.left_inverse(cl), cl.left_inverse,
                             _p(f"left_inverse({X})")),
        **{op: Spec(partial(getattr(tl, op), cl, tiler),
                    partial(getattr(cl, op), tiler), _p(f"{op}({X}, {T})"))
           for op in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide")},
        "tile_unzip": Spec(lambda: tl.tile_unzip(tl.logical_divide(cl, tiler), tiler),
                           lambda: cl.logical_divide(tiler).tile_unzip(tiler),
                           _p(f"tile_unzip(logical_divide({X}, {T}), {T})")),
        "hier_unzip": Spec(lambda: tl.hier_unzip(tl.logical_divide, cl, tiler),
                           lambda: cl.zipped_divide(tiler), _p(f"zipped_divide({X}, {T})")),
        **{op: Spec(partial(getattr(tl, op), cl, lay2),
                    partial(getattr(cl, op), lay2),
                    _p(f"{op}({X}, {cxx_obj(lay2)})"))
           for op in ("logical_product", "zipped_product", "tiled_product", "flat_product")},
        **{op: Spec(partial(getattr(tl, op), cl, blk),
                    partial(getattr(cl, op), blk),
                    _p(f"{op}({X}, {cxx_obj(blk)})"))
           for op in ("blocked_product", "raked_product")},
        "logical_product_rhs": Spec(lambda: tl.logical_product(lay2, cl),
                                    lambda: cl.r_logical_product(lay2),
                                    _p(f"logical_product({cxx_obj(lay2)}, {X})")),
        "tile_to_shape": Spec(lambda: tl.tile_to_shape(cl, trg), lambda: cl.tile_to_shape(trg),
                              _p(f"tile_to_shape({X}, {cxx_tuple(trg)})")),
        "slice": Spec(lambda: tl.slice_(crd, cl), lambda: cl.slice(crd), _p(f"slice({C}, {X})")),
        "slice_and_offset": Spec(
            lambda: tl.slice_and_offset(crd, cl), lambda: cl.slice_and_offset(crd),
            f"{{ auto r = slice_and_offset({C}, {X}); print(get<0>(r)); printf(\"\\t\"); "
            "print(get<1>(r)); }"),
        "dice": Spec(lambda: tl.dice(crd, cl), None, _p(f"dice({C}, {X})")),
        "upcast": Spec(lambda: tl.upcast(cl, 2), lambda: cl.upcast(2), _p(f"upcast<2>({X})")),
        "downcast": Spec(lambda: tl.downcast(cl, 2), lambda: cl.downcast(2),
                         _p(f"downcast<2>({X})")),
        "recast_layout": Spec(lambda: tl.recast_layout(cl, 16, 32),
                              lambda: cl.recast_layout(16, 32),
                              _p(f"recast_layout<uint16_t,uint32_t>({X})")),
        "max_common_layout": Spec(lambda: tl.max_common_layout(cl, cl.layout_b),
                                  lambda: cl.max_common_layout(cl.layout_b),
                                  _p(f"max_common_layout({X}, {cxx_obj(cl.layout_b)})")),
        "max_common_layout_rhs": Spec(lambda: tl.max_common_layout(cl.layout_b, cl),
                                      lambda: cl.r_max_common_layout(cl.layout_b),
                                      _p(f"max_common_layout({cxx_obj(cl.layout_b)}, {X})")),
        "max_common_vector": Spec(lambda: tl.max_common_vector(cl, cl.layout_b),
                                  lambda: cl.max_common_vector(cl.layout_b),
                                  _p(f"max_common_vector({X}, {cxx_obj(cl.layout_b)})")),
        "max_common_vector_rhs": Spec(lambda: tl.max_common_vector(cl.layout_b, cl),
                                      lambda: cl.r_max_common_vector(cl.layout_b),
                                      _p(f"max_common_vector({cxx_obj(cl.layout_b)}, {X})")),
        "max_common_vector_both": Spec(lambda: tl.max_common_vector(cl, cl),
                                       lambda: cl.max_common_vector(cl),
                                       _p(f"max_common_vector({X}, {X})")),
        "nullspace": Spec(lambda: tl.nullspace(cl), cl.nullspace, _p(f"nullspace({X})")),
        "make_fragment_like": Spec(lambda: tl.make_fragment_like(cl), cl.make_fragment_like,
                                   _p(f"make_fragment_like({X})")),
        "make_layout_like": Spec(lambda: tl.make_layout_like(cl), None,
                                 _p(f"make_layout_like({X})")),
        "make_tensor": Spec(lambda: tl.make_tensor(0, cl), None, _t(tens), has_method=False),
        "local_tile": Spec(lambda: tl.local_tile(tl.make_tensor(0, cl), tiler, (1, 2)), None,
                           _t(f"local_tile({tens}, {T}, {cxx_coord((1, 2))})"), has_method=False),
        "local_partition": Spec(lambda: tl.local_partition(tl.make_tensor(0, cl), thr, 3), None,
                                _t(f"local_partition({tens}, {cxx_obj(thr)}, Int<3>{{}})"),
                                has_method=False),
        "inner_partition": Spec(lambda: tl.inner_partition(tl.make_tensor(0, cl), tiler, (1, 2)),
                                None, _t(f"inner_partition({tens}, {T}, {cxx_coord((1, 2))})"),
                                has_method=False),
        "outer_partition": Spec(lambda: tl.outer_partition(tl.make_tensor(0, cl), tiler, (1, 1)),
                                None, _t(f"outer_partition({tens}, {T}, {cxx_coord((1, 1))})"),
                                has_method=False),
    }


FUNCTIONS = list(specs(INPUTS["sw343"]))


def _result(f: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", f()
    except ThreadmapError as e:  # LayoutError, or SwizzleError from a make_swizzle inside
        return "rejected", e


def cute_text(x: Any) -> str:
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], (Layout, ComposedLayout)):
        return f"{out_str(x[0])}\t{out_str(x[1])}"
    return out_str(x)


def must_be_layout(stmt: str) -> str:
    """A rejected case compiles only if CuTe has a *layout* overload: C++ resolves e.g.
    ``select<1,0>(composed)`` or ``prepend(composed, x)`` through the generic tuple
    algorithms (a ``cute::tuple`` of sublayouts), which threadmap rejects; so the statement
    also asserts that its result is a layout, a composed layout, a tensor or an integer."""
    check = ("static_assert(is_layout<R>::value || is_composed_layout<R>::value || "
             "is_tensor<R>::value || is_integral<R>::value, \"not a layout\");")
    return stmt.replace("auto r = ", "auto r = ", 1).replace(
        "; print(", f"; using R = remove_cvref_t<decltype(r)>; {check} print(", 1)


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    accepted: dict[str, str] = {}
    rejected: dict[str, str] = {}
    ours: dict[str, tuple[str, Any]] = {}
    for iname, cl in INPUTS.items():
        for fname, sp in specs(cl).items():
            cid = f"c_{fname}_{iname}"
            ours[cid] = _result(sp.free)
            if ours[cid][0] == "ok":
                accepted[cid] = sp.cxx
            else:
                rejected[cid] = must_be_layout(sp.cxx)
    return {"ours": ours, "out": run_print_batch(accepted), "rejected": rejected_by_header(rejected),
            "n_rejected": len(rejected), "n_accepted": len(accepted)}


def test_counts(oracle: dict[str, Any]) -> None:
    """The batch is not vacuous: most cases are compared, and every function is exercised."""
    assert len(FUNCTIONS) >= 55
    assert oracle["n_accepted"] >= 150, oracle["n_accepted"]
    assert len(oracle["out"]) == oracle["n_accepted"]


@pytest.mark.parametrize("fname", FUNCTIONS)
def test_free_function_on_composed_layouts(fname: str, oracle: dict[str, Any]) -> None:
    bad = []
    for iname, cl in INPUTS.items():
        cid = f"c_{fname}_{iname}"
        sp = specs(cl)[fname]
        status, val = oracle["ours"][cid]
        if status == "ok":
            if sp.has_method:
                assert sp.method is not None, f"{fname} on {cl}: no ComposedLayout method"
                m = sp.method()
                if cute_text(m) != cute_text(val):
                    bad.append(f"{iname}: free {cute_text(val)} != method {cute_text(m)}")
            got = oracle["out"].get(cid)
            if got != cute_text(val):
                bad.append(f"{iname}: C++ {got!r} != threadmap {cute_text(val)!r}")
        else:
            if sp.method is not None:
                try:
                    m = sp.method()
                    bad.append(f"{iname}: free function rejected ({val}) but the method gave {m}")
                except ThreadmapError:
                    pass
            if cid not in oracle["rejected"]:
                bad.append(f"{iname}: threadmap rejects ({val}) but the header compiles it")
    assert not bad, f"{fname}:\n" + "\n".join(bad)


SW = Swizzle(2, 4, 3)
SWIZZLE_CASES: dict[str, tuple[Callable[[], Any], str]] = {
    "size": (lambda: tl.size(SW), _p(f"size({cxx_obj(SW)})")),
    "cosize": (lambda: tl.cosize(SW), _p(f"cosize({cxx_obj(SW)})")),
    "rank": (lambda: tl.rank(SW), _p(f"rank({cxx_obj(SW)})")),
    "depth": (lambda: tl.depth(SW), _p(f"depth({cxx_obj(SW)})")),
    "coalesce": (lambda: tl.coalesce(SW), _p(f"coalesce({cxx_obj(SW)})")),
    "complement": (lambda: tl.complement(SW), _p(f"complement({cxx_obj(SW)})")),
    "logical_divide": (lambda: tl.logical_divide(SW, 4), _p(f"logical_divide({cxx_obj(SW)}, Int<4>{{}})")),
    "right_inverse": (lambda: tl.right_inverse(SW), _p(f"right_inverse({cxx_obj(SW)})")),
    "left_inverse": (lambda: tl.left_inverse(SW), _p(f"left_inverse({cxx_obj(SW)})")),
    "upcast": (lambda: tl.upcast(SW, 4), _p(f"upcast<4>({cxx_obj(SW)})")),
    "downcast": (lambda: tl.downcast(SW, 2), _p(f"downcast<2>({cxx_obj(SW)})")),
    "recast_layout": (lambda: tl.recast_layout(SW, 8, 16),
                      _p(f"recast_layout<uint8_t,uint16_t>({cxx_obj(SW)})")),
    "make_layout": (lambda: tl.make_layout(SW), _p(f"make_layout({cxx_obj(SW)})")),
    "composition_swizzle": (lambda: tl.composition(SW, Swizzle(1, 6, 3)),
                            _p(f"composition({cxx_obj(SW)}, Swizzle<1,6,3>{{}})")),
    "composition_layout": (lambda: tl.composition(SW, Layout((8, 32), (32, 1))),
                           _p(f"composition({cxx_obj(SW)}, {cxx_obj(Layout((8, 32), (32, 1)))})")),
    "composition_rhs": (lambda: tl.composition(Layout(1 << 12, 2), SW),
                        _p(f"composition({cxx_obj(Layout(1 << 12, 2))}, {cxx_obj(SW)})")),
}


def test_free_functions_on_a_swizzle() -> None:
    """The free functions CuTe overloads for a Swizzle give the header's result; the others
    raise LayoutError and do not compile against the header."""
    ours = {k: _result(f) for k, (f, _c) in SWIZZLE_CASES.items()}
    acc = {f"s_{k}": c for k, (_f, c) in SWIZZLE_CASES.items() if ours[k][0] == "ok"}
    rej = {f"s_{k}": must_be_layout(c) for k, (_f, c) in SWIZZLE_CASES.items()
           if ours[k][0] != "ok"}
    assert len(acc) >= 8 and len(rej) >= 4, (sorted(acc), sorted(rej))
    out = run_print_batch(acc)
    bad = [f"{k}: C++ {out.get(f's_{k}')!r} != threadmap {cute_text(v)!r}" for k, (st, v) in ours.items()
           if st == "ok" and out.get(f"s_{k}") != cute_text(v)]
    missing = set(rej) - rejected_by_header(rej)
    bad += [f"{k}: threadmap rejects, the header compiles" for k in sorted(missing)]
    assert not bad, "\n".join(bad)
