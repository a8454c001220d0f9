"""A three-way differential harness for the CuTe algebra: threadmap (``threadmap.layout``),
the CuTe DSL (``tests/support/dsl_oracle.py``) and the C++ headers compiled host-side
(``tests/support/cxx_oracle.py``), with the header as the referee.

**Cases** are drawn from :mod:`threadmap.testing.strategies` by a seeded generator: each
case's strategy is drawn from a hypothesis ``ConjectureData`` fed by one ``random.Random``
(no ``@given``, no ``.example()``), so a seed and a count give the same cases on every
machine.  A case is a *kind* (``composition``, ``tiled_copy``, ...) and its arguments in the
*wire* form, plain JSON that every side reads:

    int              a static integer
    ["L", s, d]      a layout (shape and stride; lists are tuples)
    ["C", [B,M,S], o, s, d]   Sw<B,M,S> o o o s:d (a composed layout, results only)
    ["Sw", B, M, S]  a swizzle
    ["_"]            CuTe's ``_``
    ["T", [...]]     a tuple of tiler modes (int, layout or ``_``)
    ["I", t]         an int tuple
    ["V", [...]]     values of a function at the case's points

**Each side** gives every *field* of the case (``layout``, ``layout_tv``, ``eval``, ...) in the
wire form, or a refusal.  The header is asked in two steps: one ``-fsyntax-only`` translation
unit per batch checks ``static_assert(is_same<decltype(field), threadmap's type>)`` for every
field (and the evaluated points in a ``constexpr`` loop), which costs only the template
instantiation; the cases that fail there, and those threadmap refuses, are compiled again
to learn whether the header rejects them and, if not, to print what it computes.

**Comparison.**  Fields are compared as wire values; where they differ, both are evaluated by
threadmap over the whole domain: equal functions make a ``form`` disagreement (same function,
another shape or stride), different ones a ``function`` disagreement.  A side accepting what
the header rejects is ``accepts``; threadmap refusing what it accepts is ``refuses``; the DSL
refusing it is a *refusal*, counted by kind apart from the disagreements; the DSL killing its
process (on any case) is a ``crash``.  The DSL's tilers
come back as layouts where the header has integers (``32`` is ``32:1``): :func:`dsl_norm`
reads them alike.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

import threadmap.testing.strategies as S
from threadmap.errors import ThreadmapError
from threadmap.layout import (
    ComposedLayout,
    CopyAtom,
    Layout,
    Swizzle,
    Tensor,
    Underscore,
    _,
    cosize,
    get_copy_op,
    make_composed_layout,
    make_tiled_copy,
    make_tiled_mma,
    partition_shape_A,
    partition_shape_B,
    partition_shape_C,
    size,
)
from threadmap.layout import layout as L

Wire = Any
Fields = dict[str, Wire]

# ============================================================================ wire form
def lst(t: Any) -> Any:
    return [lst(x) for x in t] if isinstance(t, tuple) else int(t)


def tup(t: Any) -> Any:
    return tuple(tup(x) for x in t) if isinstance(t, list) else t


def to_wire(x: Any) -> Wire:
    """A threadmap object as wire (``["L", ...]``, ``["C", ...]``, ``["Sw", ...]``, ...)."""
    if isinstance(x, bool):
        raise TypeError("a boolean is not a CuTe value")
    if isinstance(x, int):
        return int(x)
    if isinstance(x, Layout):
        return ["L", lst(x.shape), lst(x.stride)]
    if isinstance(x, Swizzle):
        return ["Sw", x.bits, x.base, x.shift]
    if isinstance(x, Underscore):
        return ["_"]
    if isinstance(x, ComposedLayout):
        a, b = x.layout_a, x.layout_b
        if not isinstance(a, Swizzle) or not isinstance(b, Layout):
            raise TypeError(f"only Sw o offset o Layout travels as wire, got {x}")
        return ["C", [a.bits, a.base, a.shift], int(x.offset), lst(b.shape), lst(b.stride)]
    if isinstance(x, tuple):
        return ["T", [to_wire(v) for v in x]]
    raise TypeError(f"no wire form for {type(x).__name__} {x!r}")


def from_wire(w: Wire) -> Any:
    """Wire back to threadmap objects (``["I", t]`` to an int tuple, ``["V", v]`` to a list)."""
    if isinstance(w, int):
        return w
    tag = w[0]
    if tag == "L":
        return Layout(tup(w[1]), tup(w[2]))
    if tag == "C":
        return ComposedLayout(Swizzle(*w[1]), w[2], Layout(tup(w[3]), tup(w[4])))
    if tag == "Sw":
        return Swizzle(w[1], w[2], w[3])
    if tag == "_":
        return _
    if tag == "T":
        return tuple(from_wire(v) for v in w[1])
    if tag == "I":
        return tup(w[1])
    if tag == "V":
        return list(w[1])
    raise ValueError(f"unknown wire tag {tag!r}")


def wire_str(w: Wire) -> str:
    """CuTe notation of a wire value (for reports)."""
    def t(x: Any) -> str:
        return "(" + ",".join(t(v) for v in x) + ")" if isinstance(x, list) else str(x)
    if isinstance(w, int):
        return str(w)
    tag = w[0]
    if tag == "L":
        return f"{t(w[1])}:{t(w[2])}"
    if tag == "C":
        return f"Sw<{w[1][0]},{w[1][1]},{w[1][2]}> o {w[2]} o {t(w[3])}:{t(w[4])}"
    if tag == "Sw":
        return f"Sw<{w[1]},{w[2]},{w[3]}>"
    if tag == "_":
        return "_"
    if tag == "T":
        return "(" + ",".join(wire_str(v) for v in w[1]) + ")"
    if tag == "I":
        return t(w[1])
    if tag == "V":
        return "[" + " ".join(str(v) for v in w[1]) + "]"
    return json.dumps(w)


# ============================================================================ C++ spelling
def _ctype(t: Any) -> str:
    if isinstance(t, list):
        return "cute::tuple<" + ",".join(_ctype(x) for x in t) + ">"
    return f"C<{int(t)}>"


def cxx_val(w: Wire) -> str:
    """A wire argument as a static C++ value."""
    if isinstance(w, int):
        return f"Int<{w}>{{}}"
    tag = w[0]
    if tag == "L":
        return f"Layout<{_ctype(w[1])},{_ctype(w[2])}>{{}}"
    if tag == "Sw":
        return f"Swizzle<{w[1]},{w[2]},{w[3]}>{{}}"
    if tag == "_":
        return "_"
    if tag == "T":
        return "make_tile(" + ",".join(cxx_val(v) for v in w[1]) + ")"
    if tag == "I":
        return _ctype(w[1]) + "{}"
    raise ValueError(f"no C++ value for {w!r}")


def cxx_type(w: Wire) -> str:
    """The C++ type a result field must have to equal the wire value."""
    if isinstance(w, int):
        return f"C<{w}>"
    tag = w[0]
    if tag == "L":
        return f"Layout<{_ctype(w[1])},{_ctype(w[2])}>"
    if tag == "C":
        b, m, s = w[1]
        return f"ComposedLayout<Swizzle<{b},{m},{s}>,C<{w[2]}>,Layout<{_ctype(w[3])},{_ctype(w[4])}>>"
    if tag == "T":
        return "cute::tuple<" + ",".join(cxx_type(v) for v in w[1]) + ">"
    if tag == "I":
        return _ctype(w[1])
    raise ValueError(f"no C++ type for {w!r}")


#: what the static checks need besides the oracle's prelude
CXX_HELPERS = """
template <class A, class B> constexpr bool tm_same = std::is_same_v<std::decay_t<A>, B>;
template <class F, std::size_t N>
constexpr bool tm_evals(F const& f, int const (&p)[N], int const (&v)[N]) {
  for (std::size_t i = 0; i < N; ++i) if (int(f(p[i])) != v[i]) return false;
  return true;
}
"""
MARKER = "threadmap_differential"


# ============================================================================ kinds
@dataclass(frozen=True)
class Kind:
    """One kind of case: its strategy (drawing wire arguments), the fields and their types
    (``layout``: a layout or composed layout, ``tiler``, ``ishape``, ``int``, ``values``),
    threadmap's evaluation and the C++ (setup statements and one expression per field)."""

    name: str
    strategy: st.SearchStrategy[list[Wire]]
    fields: dict[str, str]
    tm: Callable[[list[Wire]], Fields]
    cxx: Callable[[list[Wire]], tuple[str, dict[str, str]]]
    #: the field a ``values`` field evaluates (its C++ must be a constexpr ``r``)
    evaluates: str = "r"


def _points(draw: st.DrawFn, n: int, k: int = 32) -> list[int]:
    """All of ``[0, n)`` when ``n <= k``, else ``k`` drawn points (0 and ``n-1`` among them)."""
    if n <= k:
        return list(range(n))
    rng = random.Random(draw(st.integers(0, 2**31)))
    return sorted({0, n - 1, *rng.sample(range(n), k - 2)})


def _w(x: Any) -> Wire:
    return to_wire(x)


def _layout_field(fn: Callable[..., Any]) -> Callable[[list[Wire]], Fields]:
    def tm(a: list[Wire]) -> Fields:
        return {"layout": _w(fn(*[from_wire(x) for x in a]))}
    return tm


def _cxx_call(name: str) -> Callable[[list[Wire]], tuple[str, dict[str, str]]]:
    def cx(a: list[Wire]) -> tuple[str, dict[str, str]]:
        return "", {"layout": f"{name}({', '.join(cxx_val(x) for x in a)})"}
    return cx


# -- strategies (wire arguments) ---------------------------------------------------------
@st.composite
def _layout_args(draw: st.DrawFn) -> list[Wire]:
    a = draw(S.any_layouts(max_size=1024))
    return [_w(a), _points(draw, size(a))]


def _tm_layout(a: list[Wire]) -> Fields:
    lay = from_wire(a[0])
    return {"layout": _w(lay), "size": size(lay), "cosize": cosize(lay), "eval": ["V", [lay(i) for i in a[1]]]}


def _cxx_layout(a: list[Wire]) -> tuple[str, dict[str, str]]:
    return f"constexpr auto r = {cxx_val(a[0])};", {"layout": "r", "size": "size(r)", "cosize": "cosize(r)",
                                                      "eval": "r"}


def _profile_of(t: Any) -> Any:
    return [_profile_of(x) for x in t] if isinstance(t, tuple) else 0


@st.composite
def _coalesce_args(draw: st.DrawFn) -> list[Wire]:
    a = draw(S.layouts(max_size=1024))
    if isinstance(a.shape, tuple) and draw(st.integers(0, 3)) == 0:
        r = draw(st.integers(1, len(a.shape)))
        prof = [_profile_of(a.shape[i]) if draw(st.booleans()) else 0 for i in range(r)]
        return [_w(a), ["I", prof]]
    return [_w(a), None]


def _tm_coalesce(a: list[Wire]) -> Fields:
    lay = from_wire(a[0])
    return {"layout": _w(L.coalesce(lay) if a[1] is None else L.coalesce(lay, from_wire(a[1])))}


def _cxx_coalesce(a: list[Wire]) -> tuple[str, dict[str, str]]:
    prof = "" if a[1] is None else ", " + cxx_val(a[1])
    return "", {"layout": f"coalesce({cxx_val(a[0])}{prof})"}


@st.composite
def _composition_args(draw: st.DrawFn) -> list[Wire]:
    k = draw(st.integers(0, 9))
    if k < 6:
        a, b = draw(S.composition_pairs())
        return [_w(a), _w(b)]
    if k < 8:
        a = draw(S.compact_layouts(max_size=1024, max_depth=2))
        return [_w(a), _w(draw(S.tuple_tilers(a)))]
    # unfiltered pairs: the three sides must refuse alike
    return [_w(draw(S.any_layouts(max_size=256))), _w(draw(S.any_layouts(max_size=64)))]


@st.composite
def _complement_args(draw: st.DrawFn) -> list[Wire]:
    raw = draw(st.integers(0, 9)) == 0
    a = draw(S.layouts(max_size=64) if raw else S.injective_layouts(max_size=256, max_cosize=1024))
    cos = max(1, cosize(a))
    k = draw(st.integers(0, 3))
    if k == 0:
        return [_w(a), cos * draw(st.sampled_from([1, 2, 3, 4]))]
    if k == 1:
        return [_w(a), cos + draw(st.integers(0, 2 * cos))]
    tot = cos * draw(st.sampled_from([1, 2, 4]))
    d = draw(st.sampled_from([x for x in range(1, tot + 1) if tot % x == 0]))
    return [_w(a), ["I", [d, tot // d]]]


@st.composite
def _divide_args(draw: st.DrawFn) -> list[Wire]:
    if draw(st.integers(0, 9)) < 7:
        a, b = draw(S.divide_pairs())
        return [_w(a), _w(b)]
    a = draw(S.compact_layouts(max_size=1024, max_depth=2))
    return [_w(a), _w(draw(S.tuple_tilers(a)))]


@st.composite
def _product_args(draw: st.DrawFn) -> list[Wire]:
    if draw(st.integers(0, 9)) < 7:
        a, b = draw(S.product_pairs())
        return [_w(a), _w(b)]
    a = draw(S.compact_layouts(max_size=64, max_depth=2))
    return [_w(a), _w(draw(S.tuple_tilers(a, underscore=False, ints=False)))]


@st.composite
def _rank_product_args(draw: st.DrawFn) -> list[Wire]:
    a, b = draw(S.product_pairs())
    return [_w(a), _w(b)]


@st.composite
def _right_inverse_args(draw: st.DrawFn) -> list[Wire]:
    return [_w(draw(S.any_layouts(max_size=1024)))]


@st.composite
def _left_inverse_args(draw: st.DrawFn) -> list[Wire]:
    if draw(st.integers(0, 4)) == 0:
        return [_w(draw(S.layouts(max_size=256)))]
    return [_w(draw(S.injective_layouts(max_size=1024, max_cosize=4096)))]


@st.composite
def _composed(draw: st.DrawFn) -> tuple[Swizzle, int, Layout]:
    """A swizzle, an offset and a layout: a shared-memory tile (first) or any swizzle over a
    power-of-two layout."""
    if draw(st.booleans()):
        c = draw(S.swizzled_layouts(max_size=2048))
        sw, lay = c.layout_a, c.layout_b
    else:
        sw = draw(S.swizzles(max_bits=3, max_base=4, max_shift=5))
        lay = draw(S.pow2_layouts(max_size=1024, max_stride_log=6))
    off = 0 if draw(st.booleans()) else draw(st.integers(0, max(1, cosize(lay)) * 2))
    return sw, off, lay


@st.composite
def _composed_eval_args(draw: st.DrawFn) -> list[Wire]:
    sw, off, lay = draw(_composed())
    return [_w(sw), off, _w(lay), _points(draw, size(lay))]


def _tm_composed_eval(a: list[Wire]) -> Fields:
    c = make_composed_layout(from_wire(a[0]), a[1], from_wire(a[2]))
    return {"layout": _w(c), "eval": ["V", [int(c(i)) for i in a[3]]]}


def _cxx_composed_eval(a: list[Wire]) -> tuple[str, dict[str, str]]:
    return (f"constexpr auto r = make_composed_layout({cxx_val(a[0])}, Int<{a[1]}>{{}}, {cxx_val(a[2])});",
            {"layout": "r", "eval": "r"})


@st.composite
def _composed_composition_args(draw: st.DrawFn) -> list[Wire]:
    sw, off, lay = draw(_composed())
    for _i in range(8):
        b = draw(S.tilers(lay))
        if S.admissible(L.composition, lay, b):
            break
    else:
        b = Layout(1, 1)
    return [_w(sw), off, _w(lay), _w(b), _points(draw, size(b))]


def _tm_composed_composition(a: list[Wire]) -> Fields:
    c = make_composed_layout(from_wire(a[0]), a[1], from_wire(a[2]))
    r = L.composition(c, from_wire(a[3]))
    return {"layout": _w(r), "eval": ["V", [int(r(i)) for i in a[4]]]}


def _cxx_composed_composition(a: list[Wire]) -> tuple[str, dict[str, str]]:
    return (f"constexpr auto r = composition(make_composed_layout({cxx_val(a[0])}, Int<{a[1]}>{{}}, "
            f"{cxx_val(a[2])}), {cxx_val(a[3])});", {"layout": "r", "eval": "r"})


@st.composite
def _tensor_eval_args(draw: st.DrawFn) -> list[Wire]:
    """A counting tensor (``make_tensor(base, layout)``, C++ ``counting_iterator<int>(base)``)
    on a swizzled layout (mostly) or a plain one, evaluated at points."""
    sw, off, lay = draw(_composed())
    base = draw(st.sampled_from([0, 1, 100])) if draw(st.booleans()) else draw(st.integers(0, 1 << 20))
    plain = draw(st.integers(0, 4)) == 0
    return [None if plain else _w(sw), 0 if plain else off, _w(lay), base, _points(draw, size(lay), 16)]


def _tensor_layout(a: list[Wire]) -> Any:
    lay = from_wire(a[2])
    return lay if a[0] is None else make_composed_layout(from_wire(a[0]), a[1], lay)


def _tm_tensor_eval(a: list[Wire]) -> Fields:
    t = Tensor(_tensor_layout(a), a[3])
    return {"layout": _w(t.layout), "eval": ["V", [int(t(i)) for i in a[4]]]}


def _cxx_tensor_eval(a: list[Wire]) -> tuple[str, dict[str, str]]:
    lay = cxx_val(a[2]) if a[0] is None else \
        f"make_composed_layout({cxx_val(a[0])}, Int<{a[1]}>{{}}, {cxx_val(a[2])})"
    return (f"constexpr auto t = make_tensor(counting_iterator<int>({a[3]}), {lay});",
            {"layout": "t.layout()", "eval": "t"})


@st.composite
def _swizzle_composition_args(draw: st.DrawFn) -> list[Wire]:
    sw, _off, lay = draw(_composed())
    return [_w(sw), _w(lay)]


@st.composite
def _tiled_copy_args(draw: st.DrawFn) -> list[Wire]:
    bits = draw(st.sampled_from([32, 16, 8, 64]))
    c = draw(S.tiled_copy_cases(element_bits=bits, compact=draw(st.booleans()), max_repeat=2))
    vb = int(re.fullmatch(r"UniversalCopy<uint(\d+)_t>", c.op)[1])  # type: ignore[index]
    return [vb, c.value_type, _w(c.thr_layout), _w(c.val_layout)]


def _tm_tiled_copy(a: list[Wire]) -> Fields:
    vb, vt, thr, val = a
    tc = make_tiled_copy(CopyAtom(get_copy_op(f"UniversalCopy<uint{vb}_t>"), vt), from_wire(thr), from_wire(val))
    return {"layout_tv": _w(tc.layout_tv), "tiler_mn": _w(tuple(tc.tiler_mn)),
            "layout_s_tv": _w(tc.get_layoutS_TV()), "layout_d_tv": _w(tc.get_layoutD_TV())}


def _cxx_tiled_copy(a: list[Wire]) -> tuple[str, dict[str, str]]:
    vb, vt, thr, val = a
    return (f"auto tc = make_tiled_copy(Copy_Atom<UniversalCopy<uint{vb}_t>, {vt}>{{}}, {cxx_val(thr)}, "
            f"{cxx_val(val)}); using TC = decltype(tc);",
            {"layout_tv": "typename TC::TiledLayout_TV{}", "tiler_mn": "typename TC::Tiler_MN{}",
             "layout_s_tv": "tc.get_layoutS_TV()", "layout_d_tv": "tc.get_layoutD_TV()"})


@st.composite
def _tiled_mma_args(draw: st.DrawFn) -> list[Wire]:
    c = draw(S.tiled_mma_cases())
    tm_, tn, tk = c.tiled_mma.tile_shape

    def ref(m: int, n: int) -> Wire:
        shp = (m * draw(st.sampled_from([1, 2])), n * draw(st.sampled_from([1, 2])))
        return _w(Layout(shp, (1, shp[0]) if draw(st.booleans()) else (shp[1], 1)))
    return [c.atom, _w(c.atom_layout), _w(c.permutation), ref(tm_, tk), ref(tn, tk), ref(tm_, tn)]


def _tm_tiled_mma(a: list[Wire]) -> Fields:
    name, al, perm, ra, rb, rc = a
    m = make_tiled_mma(name, from_wire(al), from_wire(perm))
    la, lb, lc = from_wire(ra), from_wire(rb), from_wire(rc)
    return {"thr_layout_vmnk": _w(m.thr_layout_vmnk), "layout_a_tv": _w(m.get_layoutA_TV()),
            "layout_b_tv": _w(m.get_layoutB_TV()), "layout_c_tv": _w(m.get_layoutC_TV()),
            "thrfrg_a": _w(m.thrfrg_A(la)), "thrfrg_b": _w(m.thrfrg_B(lb)), "thrfrg_c": _w(m.thrfrg_C(lc)),
            "pshape_a": ["I", lst(partition_shape_A(m, la.shape))],
            "pshape_b": ["I", lst(partition_shape_B(m, lb.shape))],
            "pshape_c": ["I", lst(partition_shape_C(m, lc.shape))]}


def _cxx_tiled_mma(a: list[Wire]) -> tuple[str, dict[str, str]]:
    name, al, perm, ra, rb, rc = a
    p = ",".join("Underscore" if v == ["_"] else f"Int<{v}>" if isinstance(v, int) else cxx_type(v)
                 for v in perm[1])
    return (f"auto mma = make_tiled_mma({name}{{}}, {cxx_val(al)}, Tile<{p}>{{}});",
            {"thr_layout_vmnk": "mma.get_thr_layout_vmnk()", "layout_a_tv": "mma.get_layoutA_TV()",
             "layout_b_tv": "mma.get_layoutB_TV()", "layout_c_tv": "mma.get_layoutC_TV()",
             "thrfrg_a": f"mma.thrfrg_A({cxx_val(ra)})", "thrfrg_b": f"mma.thrfrg_B({cxx_val(rb)})",
             "thrfrg_c": f"mma.thrfrg_C({cxx_val(rc)})",
             "pshape_a": f"partition_shape_A(mma, {_ctype(ra[1])}{{}})",
             "pshape_b": f"partition_shape_B(mma, {_ctype(rb[1])}{{}})",
             "pshape_c": f"partition_shape_C(mma, {_ctype(rc[1])}{{}})"})


_LAYOUT = {"layout": "layout"}
_TC = {"layout_tv": "layout", "tiler_mn": "tiler", "layout_s_tv": "layout", "layout_d_tv": "layout"}
_MMA = {"thr_layout_vmnk": "layout", "layout_a_tv": "layout", "layout_b_tv": "layout", "layout_c_tv": "layout",
        "thrfrg_a": "layout", "thrfrg_b": "layout", "thrfrg_c": "layout",
        "pshape_a": "ishape", "pshape_b": "ishape", "pshape_c": "ishape"}


def _kinds() -> dict[str, Kind]:
    ks = [
        Kind("layout", _layout_args(), {"layout": "layout", "size": "int", "cosize": "int", "eval": "values"},
             _tm_layout, _cxx_layout),
        Kind("coalesce", _coalesce_args(), _LAYOUT, _tm_coalesce, _cxx_coalesce),
        Kind("composition", _composition_args(), _LAYOUT, _layout_field(L.composition),
             _cxx_call("composition")),
        Kind("complement", _complement_args(), _LAYOUT, _layout_field(L.complement),
             _cxx_call("complement")),
    ]
    for op in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide"):
        ks.append(Kind(op, _divide_args(), _LAYOUT, _layout_field(getattr(L, op)), _cxx_call(op)))
    for op in ("logical_product", "zipped_product", "tiled_product", "flat_product"):
        ks.append(Kind(op, _product_args(), _LAYOUT, _layout_field(getattr(L, op)), _cxx_call(op)))
    for op in ("blocked_product", "raked_product"):
        ks.append(Kind(op, _rank_product_args(), _LAYOUT, _layout_field(getattr(L, op)), _cxx_call(op)))
    ks += [
        Kind("right_inverse", _right_inverse_args(), _LAYOUT, _layout_field(L.right_inverse),
             _cxx_call("right_inverse")),
        Kind("left_inverse", _left_inverse_args(), _LAYOUT, _layout_field(L.left_inverse),
             _cxx_call("left_inverse")),
        Kind("composed_eval", _composed_eval_args(), {"layout": "layout", "eval": "values"},
             _tm_composed_eval, _cxx_composed_eval),
        Kind("composed_composition", _composed_composition_args(), {"layout": "layout", "eval": "values"},
             _tm_composed_composition, _cxx_composed_composition),
        Kind("tensor_eval", _tensor_eval_args(), {"layout": "layout", "eval": "values"},
             _tm_tensor_eval, _cxx_tensor_eval),
        Kind("swizzle_composition", _swizzle_composition_args(), _LAYOUT,
             _layout_field(L.composition), _cxx_call("composition")),
        Kind("tiled_copy", _tiled_copy_args(), _TC, _tm_tiled_copy, _cxx_tiled_copy),
        Kind("tiled_mma", _tiled_mma_args(), _MMA, _tm_tiled_mma, _cxx_tiled_mma),
    ]
    return {k.name: k for k in ks}


KINDS = _kinds()

#: how often each kind is drawn (relative weights)
WEIGHTS: dict[str, float] = {
    "layout": 9, "coalesce": 11, "composition": 15, "complement": 9,
    "logical_divide": 4, "zipped_divide": 3, "tiled_divide": 3, "flat_divide": 3,
    "logical_product": 3, "zipped_product": 2, "tiled_product": 2, "flat_product": 2,
    "blocked_product": 3, "raked_product": 3, "right_inverse": 6, "left_inverse": 6,
    "composed_eval": 7, "composed_composition": 4, "tensor_eval": 2, "swizzle_composition": 0.5,
    # a tiled copy costs the header about 0.35 CPU-s, a tiled MMA about 1 CPU-s
    "tiled_copy": 0.8, "tiled_mma": 0.4,
}


# ============================================================================ drawing
@dataclass
class Case:
    kind: str
    args: list[Wire]
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            h = hashlib.sha256(json.dumps([self.kind, self.args]).encode()).hexdigest()[:12]
            self.id = f"{self.kind}_{h}"

    def text(self) -> str:
        return f"{self.kind}({', '.join(wire_str(a) if a is not None else 'None' for a in self.args)})"


def _conjecture(rng: random.Random) -> Any:
    from hypothesis.internal.conjecture.data import ConjectureData

    try:
        return ConjectureData(random=rng)
    except TypeError:  # hypothesis before 6.119 wanted a buffer size and a prefix
        return ConjectureData(8 * 1024, b"", random=rng)  # type: ignore[misc, arg-type]


def draw(strategy: st.SearchStrategy[Any], rng: random.Random, tries: int = 100) -> Any:
    """One example of ``strategy`` from the seeded ``rng`` (a rejected draw, ``assume(False)``
    or an overrun, is drawn again from the same generator)."""
    from hypothesis.errors import StopTest, UnsatisfiedAssumption

    for _i in range(tries):
        data = _conjecture(rng)
        try:
            return data.draw(strategy)
        except (UnsatisfiedAssumption, StopTest):
            continue
    raise RuntimeError(f"no example of {strategy!r} in {tries} tries")


def draw_cases(n: int, seed: int, weights: dict[str, float] | None = None, *,
               exclude: set[str] | None = None) -> list[Case]:
    """``n`` distinct cases (none of ``exclude``), kinds in proportion to ``weights``, the
    same for the same seed."""
    w = weights or WEIGHTS
    names = sorted(w)
    rng = random.Random(seed)
    out: dict[str, Case] = {}
    skip = exclude or set()
    misses = 0
    while len(out) < n:
        kind = rng.choices(names, weights=[w[k] for k in names])[0]
        c = Case(kind, draw(KINDS[kind].strategy, rng))
        if c.id in out or c.id in skip:
            misses += 1
            if misses > 50 * n:
                break  # the strategies hold fewer distinct cases than asked
            continue
        out[c.id] = c
    return list(out.values())


# ============================================================================ threadmap's side
def run_threadmap(cases: list[Case]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for c in cases:
        try:
            out[c.id] = {"fields": KINDS[c.kind].tm(c.args)}
        except ThreadmapError as e:
            out[c.id] = {"refused": type(e).__name__, "message": str(e)[:2000]}
        except Exception as e:  # noqa: BLE001 - a crash of threadmap is a finding, not the end of the run
            out[c.id] = {"refused": f"crash {type(e).__name__}", "message": str(e)[:2000]}
    return out


# ============================================================================ the header's side
def _static_stmt(c: Case, fields: Fields) -> str:
    setup, exprs = KINDS[c.kind].cxx(c.args)
    parts = [setup]
    for f, ty in KINDS[c.kind].fields.items():
        v = fields[f]
        if ty == "values":
            pts = ",".join(str(p) for p in _case_points(c))
            vals = ",".join(str(x) for x in v[1])
            parts.append(f'static_assert(tm_evals({exprs[f]}, {{{pts}}}, {{{vals}}}), "{MARKER}");')
        else:
            parts.append(f'static_assert(tm_same<decltype({exprs[f]}), {cxx_type(v)}>, "{MARKER}");')
    return " ".join(p for p in parts if p)


def _case_points(c: Case) -> list[int]:
    pts = c.args[-1]
    assert isinstance(pts, list) and all(isinstance(p, int) for p in pts)
    return pts


def _print_stmt(c: Case) -> str:
    setup, exprs = KINDS[c.kind].cxx(c.args)
    parts = [setup]
    for i, (f, ty) in enumerate(KINDS[c.kind].fields.items()):
        if i:
            parts.append('printf(" ## ");')
        if ty == "values":
            pts = ",".join(str(p) for p in _case_points(c))
            parts.append(f'for (int p : {{{pts}}}) printf("%d ", int({exprs[f]}(p)));')
        else:
            parts.append(f"print({exprs[f]});")
    return " ".join(p for p in parts if p)


def _check_stmt(c: Case) -> str:
    """The case's expressions, only instantiated (does the header accept the case?)."""
    setup, exprs = KINDS[c.kind].cxx(c.args)
    uses = [f"(void)({e});" if KINDS[c.kind].fields[f] != "values" else
            f"(void)({e}(0));" for f, e in exprs.items()]
    return " ".join([setup, *uses])


_NUM = re.compile(r"\s*(_?-?\d+)")


def parse_printed(text: str) -> Any:
    """CuTe's ``print`` of a static value: ``_4``, ``(_2,_4):(_1,_2)``, ``(_32:_1,_8)``,
    ``Sw<3,4,3> o _0 o (...)``; returns wire with ints, lists and ``["L", s, d]``."""
    m = re.match(r"\s*Sw(?:izzle)?<(-?\d+),(-?\d+),(-?\d+)>\s*o\s*_?(-?\d+)\s*o\s*(.*)$", text, re.S)
    if m:
        inner = parse_printed(m[5])
        if not (isinstance(inner, list) and inner and inner[0] == "L"):
            raise ValueError(f"not a composed layout: {text!r}")
        return ["C", [int(m[1]), int(m[2]), int(m[3])], int(m[4]), inner[1], inner[2]]
    pos = 0

    def item() -> Any:
        nonlocal pos
        a = tuple_()
        if pos < len(text) and text[pos] == ":":
            pos += 1
            return ["L", a, tuple_()]
        return a

    def tuple_() -> Any:
        nonlocal pos
        while pos < len(text) and text[pos] == " ":
            pos += 1
        if text.startswith("(", pos):
            pos += 1
            xs = []
            while True:
                xs.append(item())
                if text.startswith(",", pos):
                    pos += 1
                    continue
                if text.startswith(")", pos):
                    pos += 1
                    return xs
                raise ValueError(f"bad printed value at {pos}: {text!r}")
        mm = _NUM.match(text, pos)
        if not mm:
            raise ValueError(f"bad printed value at {pos}: {text!r}")
        pos = mm.end()
        return int(mm[1].lstrip("_"))

    out = item()
    if text[pos:].strip():
        raise ValueError(f"trailing text in printed value: {text!r}")
    return out


def _as_field(ty: str, v: Any) -> Wire:
    """A parsed printed value as the wire of a field of type ``ty``."""
    if ty == "layout":
        if isinstance(v, int):  # a rank-0 print never happens for layouts
            raise ValueError(f"a layout printed as {v}")
        return v
    if ty == "int":
        return v
    if ty == "ishape":
        return ["I", v]
    if ty == "tiler":
        items = v if isinstance(v, list) and (not v or v[0] not in ("L", "C")) else [v]
        return ["T", list(items)]
    raise ValueError(ty)


def _parse_print_output(c: Case, out: str) -> Fields:
    parts = out.split(" ## ")
    kinds = KINDS[c.kind].fields
    if len(parts) != len(kinds):
        raise ValueError(f"{c.id}: {len(parts)} printed fields for {len(kinds)}: {out!r}")
    res: Fields = {}
    for (f, ty), text in zip(kinds.items(), parts):
        res[f] = ["V", [int(x) for x in text.split()]] if ty == "values" else _as_field(ty, parse_printed(text))
    return res


@dataclass
class CxxRun:
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    cpu: float = 0.0
    units: int = 0


def _children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def run_cxx_side(cases: list[Case], tm: dict[str, dict[str, Any]], *, per_unit: int = 300,
                 jobs: int = 2) -> CxxRun:
    """The header's answer for every case: ``{"fields": ...}`` or ``{"refused": "header"}``
    (see the module docstring for the two steps)."""
    from tests.support.cxx_oracle import PRELUDE, failing_static_checks, rejected_by_header, run_print_batch

    prelude = PRELUDE + CXX_HELPERS
    run = CxxRun()
    t0 = _children_cpu()
    by_id = {c.id: c for c in cases}
    accepted = [c for c in cases if "fields" in tm[c.id]]
    refused = [c for c in cases if "fields" not in tm[c.id]]
    units = [accepted[i:i + per_unit] for i in range(0, len(accepted), per_unit)]

    def static(unit: list[Case]) -> set[str]:
        stmts = {c.id: _static_stmt(c, tm[c.id]["fields"]) for c in unit}
        try:
            return failing_static_checks(stmts, prelude=prelude, marker=MARKER)
        except (RuntimeError, OSError, subprocess.SubprocessError):  # the compiler died: ask case by case
            return set(stmts)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        flagged = set().union(*ex.map(static, units)) if units else set()
    run.units += len(units)
    for c in accepted:
        if c.id not in flagged:
            run.results[c.id] = {"fields": tm[c.id]["fields"], "how": "static"}
    # the rest: does the header accept them, and what does it compute?
    rest = [by_id[i] for i in sorted(flagged)] + refused
    chunks = [rest[i:i + per_unit] for i in range(0, len(rest), per_unit)]

    def second(chunk: list[Case]) -> None:
        try:
            second_unchecked(chunk)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            if len(chunk) == 1:
                run.results[chunk[0].id] = {"undecided": f"{type(e).__name__}: {str(e)[:300]}"}
                return
            second(chunk[:len(chunk) // 2])
            second(chunk[len(chunk) // 2:])

    def second_unchecked(chunk: list[Case]) -> None:
        rej = rejected_by_header({c.id: _check_stmt(c) for c in chunk}, prelude=prelude)
        for c in chunk:
            if c.id in rej:
                run.results[c.id] = {"refused": "header", "how": "rejected"}
        todo = [c for c in chunk if c.id not in rej]
        if todo:
            out = run_print_batch({c.id: _print_stmt(c) for c in todo}, prelude=prelude)
            for c in todo:
                try:
                    run.results[c.id] = {"fields": _parse_print_output(c, out[c.id]), "how": "printed"}
                except (KeyError, ValueError) as e:
                    run.results[c.id] = {"undecided": f"{type(e).__name__}: {e}"}

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        list(ex.map(second, chunks))
    run.units += 2 * len(chunks)
    run.cpu = _children_cpu() - t0
    return run


# ============================================================================ comparison
def dsl_norm(ty: str, w: Wire) -> Wire:
    """The DSL's way of writing a field as the header's: a tiler's integer ``n`` is ``n:1``."""
    if ty == "tiler" and isinstance(w, list) and w[0] == "T":
        return ["T", [["L", v, 1] if isinstance(v, int) else v for v in w[1]]]
    return w


def _table(w: Wire, limit: int = 1 << 16) -> list[int] | None:
    x = from_wire(w)
    if isinstance(x, (Layout, ComposedLayout)):
        n = size(x)
        if n > limit:
            return None
        return [int(v) for v in x.table().ravel().tolist()] if isinstance(x, Layout) else \
            [int(x(i)) for i in range(n)]
    return None


def _unwrap(t: Any) -> Any:
    """Rank-1 tuples replaced by their element, at every depth."""
    if isinstance(t, list):
        xs = [_unwrap(x) for x in t]
        return xs[0] if len(xs) == 1 else xs
    return t


def _zero_unit_strides(s: Any, d: Any) -> Any:
    if isinstance(s, list):
        return [_zero_unit_strides(a, b) for a, b in zip(s, d)]
    return 0 if s == 1 else d


def _flat(t: Any) -> list[int]:
    return [y for x in t for y in _flat(x)] if isinstance(t, list) else [t]


def form_detail(got: Wire, ref: Wire) -> str:
    """How two wire forms of one function differ, the first that explains it: ``identity
    swizzle`` (two spellings of Sw<0,..>, or one side dropped it), ``rank-1 tuples`` (equal
    once every one-element tuple is its element), ``size-1 strides`` (also the strides of
    extent-1 modes), ``nesting`` (the same modes, grouped otherwise), ``regrouped`` (modes
    merged or split otherwise)."""
    def no_id(w: Wire) -> Wire:
        if isinstance(w, list) and w[0] == "C" and w[1][0] == 0 and w[2] == 0:
            return ["L", w[3], w[4]]
        return w
    g, r = no_id(got), no_id(ref)
    if g == r:
        return "identity swizzle"
    if g[0] == r[0] == "C":
        if g[1:3] != r[1:3] and g[1][0] == r[1][0] == 0 and g[3:] == r[3:]:
            return "identity swizzle"
        if g[1:3] != r[1:3]:
            return "regrouped"
    if g[0] != r[0]:
        return "regrouped"
    gs, gd, rs, rd = g[-2], g[-1], r[-2], r[-1]
    if _unwrap(gs) == _unwrap(rs) and _unwrap(gd) == _unwrap(rd):
        return "rank-1 tuples"
    gz, rz = _zero_unit_strides(gs, gd), _zero_unit_strides(rs, rd)
    if _unwrap(gs) == _unwrap(rs) and _unwrap(gz) == _unwrap(rz):
        return "size-1 strides"
    if _flat(gs) == _flat(rs) and _flat(gd) == _flat(rd):
        return "nesting"
    return "regrouped"


def classify(ty: str, got: Wire, ref: Wire) -> tuple[str, str] | None:
    """None when equal; else the nature, ``form`` (same function, another shape or stride)
    with :func:`form_detail`, ``function`` or ``value``, and a detail."""
    if got == ref:
        return None
    if ty == "layout":
        try:
            a, b = _table(got), _table(ref)
        except (ThreadmapError, ValueError, TypeError, IndexError):
            return ("function", "")
        if a is not None and a == b:
            return ("form", form_detail(got, ref))
        return ("function", "")
    if ty == "tiler" and isinstance(got, list) and isinstance(ref, list) and len(got[1]) == len(ref[1]):
        parts = [classify("layout", g, r) if isinstance(g, list) and isinstance(r, list) else
                 (None if g == r else ("value", "")) for g, r in zip(got[1], ref[1])]
        bad = [p for p in parts if p is not None]
        if any(p[0] != "form" for p in bad):
            return ("function", "")
        return ("form", bad[0][1] if bad else "")
    if ty == "ishape" and isinstance(got, list) and isinstance(ref, list) and got[0] == ref[0] == "I":
        g, r = got[1], ref[1]
        if isinstance(g, list) and isinstance(r, list) and len(g) == len(r) and \
                all(_prod(a) == _prod(b) for a, b in zip(g, r)):
            return ("form", "rank-1 tuples" if _unwrap(g) == _unwrap(r) else "regrouped")
    return ("value", "")


def _prod(t: Any) -> int:
    out = 1
    for v in _flat(t):
        out *= v
    return out


@dataclass
class Finding:
    """A side disagreeing with the header on one case."""

    case: Case
    side: str           # "threadmap" | "dsl"
    nature: str         # "form" | "function" | "value" | "accepts" | "refuses" | "crash"
    field: str = ""
    detail: str = ""    # a form's detail (form_detail)
    got: Wire = None
    header: Wire = None
    message: str = ""

    def key(self) -> tuple[str, str, str, str]:
        """The class of the finding: kind, side, nature and its detail."""
        return (self.case.kind, self.side, self.nature, self.detail)


@dataclass
class Report:
    cases: list[Case]
    tm: dict[str, dict[str, Any]]
    dsl: dict[str, dict[str, Any]]
    cxx: dict[str, dict[str, Any]]
    findings: list[Finding] = field(default_factory=list)
    refusals: Counter[tuple[str, str]] = field(default_factory=Counter)       # (kind, refusal kind)
    agreed_refusals: Counter[str] = field(default_factory=Counter)            # kind: all three refuse
    undecided: list[tuple[Case, str]] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    refereed: int = 0
    dsl_crashes: int = 0

    def by_kind(self) -> Counter[str]:
        return Counter(c.kind for c in self.cases)


def compare(cases: list[Case], tm: dict[str, dict[str, Any]], dsl: dict[str, dict[str, Any]],
            cxx: dict[str, dict[str, Any]]) -> Report:
    rep = Report(cases, tm, dsl, cxx, refereed=len(cases))
    for c in cases:
        ref = cxx.get(c.id, {"undecided": "no answer"})
        if "undecided" in ref:
            rep.undecided.append((c, ref["undecided"]))
            continue
        fields = KINDS[c.kind].fields
        for side, res in (("threadmap", tm[c.id]), ("dsl", dsl.get(c.id, {"refused": "no answer"}))):
            if side == "dsl" and res.get("refused") == "crash":  # dying is wrong whatever the header says
                rep.findings.append(Finding(c, side, "crash", header=ref.get("fields"),
                                            message=res.get("message", "")))
                continue
            if "fields" not in ref:  # the header rejects the case
                if "fields" in res:
                    rep.findings.append(Finding(c, side, "accepts", got=res["fields"]))
                elif side == "dsl":
                    rep.agreed_refusals[c.kind] += 1
                continue
            if "fields" not in res:
                if side == "dsl":
                    rep.refusals[(c.kind, res.get("refused", "?"))] += 1
                else:
                    rep.findings.append(Finding(c, side, "refuses", header=ref["fields"],
                                                message=res.get("message", "")))
                continue
            for f, ty in fields.items():
                got, want = res["fields"].get(f), ref["fields"][f]
                cls = classify(ty, dsl_norm(ty, got), dsl_norm(ty, want)) if side == "dsl" else \
                    classify(ty, got, want)
                if cls:
                    rep.findings.append(Finding(c, side, cls[0], f, detail=cls[1], got=got, header=want))
    return rep


ClassKey = tuple[str, str, str, str]      # kind, side ("threadmap" | "dsl"), nature, detail


@dataclass
class Totals:
    """Counts over one or more reports (a long run adds its chunks), and a few
    representative cases of every class of finding and refusal (the smallest first)."""

    keep: int = 5
    kinds: Counter[str] = field(default_factory=Counter)
    refereed: int = 0
    classes: Counter[ClassKey] = field(default_factory=Counter)
    both_wrong: int = 0
    refusals: Counter[tuple[str, str]] = field(default_factory=Counter)
    agreed_refusals: Counter[str] = field(default_factory=Counter)
    undecided: list[tuple[str, str]] = field(default_factory=list)
    cpu: Counter[str] = field(default_factory=Counter)
    dsl_crashes: int = 0
    reps: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def _keep(self, key: str, entry: dict[str, Any]) -> None:
        xs = self.reps.setdefault(key, [])
        if any(x["id"] == entry["id"] for x in xs):
            return
        xs.append(entry)
        xs.sort(key=lambda x: (len(json.dumps(x["args"])), x["id"]))
        del xs[self.keep:]

    def add(self, rep: Report) -> None:
        self.kinds.update(c.kind for c in rep.cases)
        self.refereed += rep.refereed
        self.cpu.update(rep.cpu)
        self.dsl_crashes += rep.dsl_crashes
        per_case: dict[tuple[str, ClassKey], Finding] = {}
        for f in rep.findings:
            per_case.setdefault((f.case.id, f.key()), f)
        for (_cid, key), f in per_case.items():
            self.classes[key] += 1
            c = f.case
            self._keep("|".join(key) + "|" + f.field, {
                "id": c.id, "kind": c.kind, "args": c.args, "side": f.side, "nature": f.nature,
                "detail": f.detail, "field": f.field, "header": f.header,
                "threadmap": rep.tm[c.id], "dsl": rep.dsl.get(c.id), "text": c.text()})
        sides: dict[str, set[str]] = {}
        for (cid, key) in per_case:
            sides.setdefault(cid, set()).add(key[1])
        self.both_wrong += sum(1 for v in sides.values() if len(v) == 2)
        self.refusals.update(rep.refusals)
        for c in rep.cases:
            r = rep.dsl.get(c.id, {})
            if "refused" in r and "fields" in rep.cxx.get(c.id, {}):
                self._keep(f"{c.kind}|dsl|refusal|{r['refused']}", {
                    "id": c.id, "kind": c.kind, "args": c.args, "side": "dsl", "nature": "refusal",
                    "detail": r["refused"], "field": "", "header": rep.cxx[c.id]["fields"],
                    "threadmap": rep.tm[c.id], "dsl": r, "text": c.text()})
        self.agreed_refusals.update(rep.agreed_refusals)
        self.undecided += [(c.text(), why) for c, why in rep.undecided]

    def disagreeing_cases(self) -> int:
        return sum(self.classes.values()) - self.both_wrong

    def summary(self) -> str:
        """Cases by kind, disagreements by kind, side and nature, refusals."""
        n = sum(self.kinds.values())
        lines = [f"cases: {n}, refereed by the header: {self.refereed}",
                 "  " + ", ".join(f"{k} {m}" for k, m in sorted(self.kinds.items()))]
        lines.append("disagreements with the header (cases; a case counts once per class):")
        if not self.classes:
            lines.append("  none")
        for (k, side, nat, det), m in sorted(self.classes.items()):
            lines.append(f"  {k:22s} {side:9s} wrong  {nat:9s} {det:17s} {m}")
        tm_wrong = sum(m for (_k, side, _n, _d), m in self.classes.items() if side == "threadmap")
        dsl_wrong = sum(m for (_k, side, _n, _d), m in self.classes.items() if side == "dsl")
        lines.append(f"  threadmap wrong: {tm_wrong}; the DSL wrong: {dsl_wrong}; both: {self.both_wrong}")
        lines.append(f"DSL refusals of what the header accepts: {sum(self.refusals.values())}")
        for (k, r), m in sorted(self.refusals.items(), key=lambda x: (-x[1], x[0])):
            lines.append(f"  {k:22s} {m:6d}  {r}")
        lines.append(f"refused by all three (the header rejects): {sum(self.agreed_refusals.values())}"
                     + ("  (" + ", ".join(f"{k} {m}" for k, m in sorted(self.agreed_refusals.items())) + ")"
                        if self.agreed_refusals else ""))
        if self.dsl_crashes:
            lines.append(f"DSL interpreter crashes: {self.dsl_crashes}")
        if self.undecided:
            lines.append(f"undecided (the header's output unreadable): {len(self.undecided)}")
            lines += [f"  {t}: {why}" for t, why in self.undecided[:5]]
        return "\n".join(lines)


def summary(rep: Report) -> str:
    """One report as text (:meth:`Totals.summary`)."""
    t = Totals()
    t.add(rep)
    return t.summary()


# ============================================================================ a whole run
def provisional_class(c: Case, tm: dict[str, dict[str, Any]], dsl: dict[str, dict[str, Any]]) -> str | None:
    """How the DSL differs from threadmap on the case (None when it does not): its refusal
    kind, or the fields with :func:`classify`'s nature and detail."""
    a, b = tm[c.id], dsl.get(c.id, {})
    if "fields" not in a or "fields" not in b:
        return f"tm {a.get('refused', '-')} / dsl {b.get('refused', '-')}"
    diffs = []
    for f, ty in KINDS[c.kind].fields.items():
        cls = classify(ty, dsl_norm(ty, b["fields"].get(f)), dsl_norm(ty, a["fields"][f]))
        if cls:
            diffs.append(f"{f}:{cls[0]}:{cls[1]}")
    return " ".join(diffs) or None


def disputed(c: Case, tm: dict[str, dict[str, Any]], dsl: dict[str, dict[str, Any]]) -> bool:
    """Whether threadmap and the DSL differ on the case (a refusal of either included)."""
    return provisional_class(c, tm, dsl) is not None


def choose_refereed(cases: list[Case], tm: dict[str, dict[str, Any]], dsl: dict[str, dict[str, Any]],
                    sample: int, cap: int | None, seed: int) -> list[Case]:
    """The cases the header referees in a bounded run: every disputed case (at most ``cap``
    of each kind and :func:`provisional_class`) and a seeded sample of the others."""
    seen: Counter[tuple[str, str]] = Counter()
    hot, cold = [], []
    for c in cases:
        pc = provisional_class(c, tm, dsl)
        if pc is None:
            cold.append(c)
        elif cap is None or seen[(c.kind, pc)] < cap:
            seen[(c.kind, pc)] += 1
            hot.append(c)
    return hot + random.Random(seed).sample(cold, min(sample, len(cold)))


def run(n: int, seed: int, *, weights: dict[str, float] | None = None, dsl_batch: int = 2000,
        dsl_workers: int = 1, cxx_per_unit: int = 300, cxx_jobs: int = 2,
        cases: list[Case] | None = None, referee_sample: int | None = None,
        referee_cap: int | None = None) -> Report:
    """Draw ``n`` cases (or take ``cases``), evaluate them three ways, compare.  The header
    referees every case, or (``referee_sample=K``) every case where threadmap and the DSL
    differ (at most ``referee_cap`` of each kind and provisional class, see
    :func:`choose_refereed`) plus a seeded sample of ``K`` of the others.  CPU seconds per side in
    ``Report.cpu`` (``draw``, ``threadmap``, ``dsl`` with ``dsl_import`` apart, ``cxx``)."""
    from tests.support.dsl_oracle import run_dsl

    cpu: dict[str, float] = {}
    t0 = time.process_time()
    if cases is None:
        cases = draw_cases(n, seed, weights)
    cpu["draw"] = time.process_time() - t0
    t0 = time.process_time()
    tm = run_threadmap(cases)
    cpu["threadmap"] = time.process_time() - t0
    d = run_dsl([{"id": c.id, "kind": c.kind, "args": c.args} for c in cases], batch=dsl_batch,
                workers=dsl_workers)
    cpu["dsl"], cpu["dsl_import"] = d.cpu_cases, d.cpu_import
    refereed = cases
    if referee_sample is not None:
        refereed = choose_refereed(cases, tm, d.results, referee_sample, referee_cap, seed)
    cx = run_cxx_side(refereed, tm, per_unit=cxx_per_unit, jobs=cxx_jobs)
    cpu["cxx"] = cx.cpu
    t0 = time.process_time()
    rep = compare(refereed, tm, d.results, cx.results)
    rep.cases = cases
    rep.refereed = len(refereed)
    rep.dsl_crashes = d.crashes
    cpu["compare"] = time.process_time() - t0
    rep.cpu = cpu
    return rep


def _trim(e: dict[str, Any]) -> dict[str, Any]:
    """A representative with only the field it is about (the first field of a refusal)."""
    e = dict(e)
    f = e["field"] or next(iter(KINDS[e["kind"]].fields))
    if e["nature"] == "refusal":
        e["field"] = f
    if isinstance(e["header"], dict):  # a refusal's or a crash's: the header's answer, one field of it
        e["header"] = e["header"][f]

    def one(r: Any) -> Any:
        if isinstance(r, dict) and "fields" in r:
            return {"fields": {f: r["fields"].get(f)}}
        if isinstance(r, dict):
            return {k: (v[:300] if isinstance(v, str) else v) for k, v in r.items()}
        return r
    e["threadmap"], e["dsl"] = one(e["threadmap"]), one(e["dsl"])
    return e


def write_regressions(reps: dict[str, list[dict[str, Any]]], path: str, *, per_class: int = 2,
                      heavy: dict[str, int] | None = None) -> int:
    """The regression data file from a run's representatives (``Totals.reps``): the
    ``per_class`` smallest cases of every class (fewer of the kinds in ``heavy``, which cost
    the header most), with what each side gave; returns how many were written."""
    limit = heavy if heavy is not None else {"tiled_mma": 1, "tiled_copy": 1}
    classes: dict[str, list[dict[str, Any]]] = {}
    for key, xs in reps.items():  # a class is kind|side|nature|detail, whatever the field
        classes.setdefault(key.rsplit("|", 1)[0] if key.count("|") == 4 else key, []).extend(xs)
    out = []
    for key in sorted(classes):
        xs = sorted(classes[key], key=lambda x: (len(json.dumps(x["args"])), x["id"]))
        out += [_trim(x) for x in xs[:min(per_class, limit.get(xs[0]["kind"], per_class))]]
    # a crash costs the replay a child process: those last, so the others share the first
    out.sort(key=lambda e: e["nature"] == "crash")
    from pathlib import Path

    Path(path).write_text(json.dumps({
        "about": "Cases on which threadmap or the CuTe DSL differed from the C++ headers (the referee), "
                 "kept as regressions: tests/dsl/test_dsl_differential.py replays them. side: which side the "
                 "header found wrong; nature/detail: how (tests/support/differential.py); header: the header's "
                 "value of the field (null: the header rejects the case); threadmap, dsl: each side's answer.",
        "cases": out}, indent=1) + "\n")
    return len(out)
