"""Differential test of threadmap.layout.swizzle against the real CuTe headers.

ONE generated C++ program (a fixed-seed random batch) is compiled once with ``run_cxx``:
Swizzle<B,M,S> value tables (negative S included), composition(Swizzle, Layout),
composition(Layout, Swizzle), the GMMA shared-memory atoms of every element width and
both majors, and operations on swizzled ComposedLayouts (sublayouts, divides, products,
coalesce, slice_and_offset, inverses, compositions).  Every case is compared
structurally (the printed form, with CuTe's ``_`` of static ints stripped) and by value
table.  Every integer in the generated C++ is a static ``Int<>``.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from threadmap.errors import LayoutError, SwizzleError
from threadmap.gpu.cxx import cxx_coord, cxx_layout, cxx_tiler
from threadmap.layout import (
    GMMA_ELEMENT_BITS,
    ComposedLayout,
    Layout,
    Swizzle,
    _,
    composition,
    gmma_layout_atom,
    size,
)

try:
    from tests.support.cxx_oracle import rejected_by_header, run_cxx
except ImportError:  # pragma: no cover - run from inside tests/
    from cxx_oracle import rejected_by_header, run_cxx  # type: ignore[no-redef]

SEED = 20250917
HELPERS = r"""
template <class T> void show(T const& t) { print(t); printf("\n"); }
template <class T> void tab(T const& l) {
  for (int i = 0; i < int(size(l)); ++i) { printf("%d ", int(l(i))); } printf("\n");
}
template <class SW> void swtab(SW const& sw, int n) {
  for (int i = 0; i < n; ++i) { printf("%d ", int(sw(i))); } printf("\n");
}
"""

CXX_TYPES = {  # name in GMMA_ELEMENT_BITS -> C++ type
    "s4": "int4b_t", "u8": "uint8_t", "s8": "int8_t", "e4m3": "float_e4m3_t",
    "e5m2": "float_e5m2_t", "f16": "half_t", "bf16": "bfloat16_t", "tf32": "tfloat32_t",
    "f32": "float", "s32": "int32_t", "f64": "double",
}


def _strip(s: str) -> str:
    return re.sub(r"_(?=-?\d)", "", s).strip()


def cxx_sw(sw: Swizzle) -> str:
    return f"Swizzle<{sw.bits},{sw.base},{sw.shift}>{{}}"


def cxx_obj(x: Any) -> str:
    if isinstance(x, Swizzle):
        return cxx_sw(x)
    if isinstance(x, Layout):
        return cxx_layout(x)
    if isinstance(x, ComposedLayout):
        return (f"make_composed_layout({cxx_obj(x.layout_a)},Int<{int(x.offset)}>{{}},"
                f"{cxx_obj(x.layout_b)})")
    raise TypeError(x)


def py_str(x: Any) -> str:
    if isinstance(x, (Layout, ComposedLayout, Swizzle)):
        return x.to_str(static=False)
    return str(int(x))


def py_tab(x: Any) -> str:
    n = x.size() if isinstance(x, ComposedLayout) else size(x)
    return " ".join(str(int(x(i))) for i in range(n))


def rand_swizzle(rng: random.Random, max_bits: int = 12) -> Swizzle:
    while True:
        b = rng.randint(0, 4)
        m = rng.randint(0, 5)
        s = rng.randint(max(b, 1) if b else 0, 6) * rng.choice([1, -1])
        if abs(s) >= b and b + m + abs(s) <= max_bits:
            return Swizzle(b, m, s)


def rand_pow2_layout(rng: random.Random, max_log: int = 10, rank: int | None = None) -> Layout:
    n = rank or rng.randint(1, 3)
    while True:
        logs = [rng.randint(0, 5) for _i in range(n)]
        if 1 <= sum(logs) <= max_log:
            break
    shp = tuple(1 << k for k in logs)
    perm = list(range(n))
    rng.shuffle(perm)
    std = [0] * n
    acc = 1
    for i in perm:
        std[i] = acc if shp[i] > 1 else 0
        acc *= shp[i]
    if rng.random() < 0.3 and n >= 2:  # a nested mode
        return Layout((shp[0], shp[1:]) if n > 2 else (shp[0], (shp[1],)),
                      (std[0], tuple(std[1:])) if n > 2 else (std[0], (std[1],)))
    return Layout(shp if n > 1 else shp[0], tuple(std) if n > 1 else std[0])


class Batch:
    """Cases: C++ statements (each printing lines) and the Python lines they must print."""

    def __init__(self) -> None:
        self.stmts: list[str] = []
        self.expect: list[tuple[str, str]] = []  # (case label, expected line)
        self.kinds: dict[str, int] = {}
        self.skipped = 0
        self.rejected: dict[str, str] = {}  # case id -> C++ statement that must not compile

    def add(self, kind: str, cxx: list[str], lines: list[str]) -> None:
        label = f"{kind}#{self.kinds.get(kind, 0)}"
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.stmts.append("{ printf(\"CASE %s\\n\", \"" + label + "\"); " + " ".join(cxx) + " }")
        self.expect.append((label, f"CASE {label}"))
        self.expect.extend((label, ln) for ln in lines)

    def try_add(self, kind: str, make: Any) -> None:
        try:
            cxx, lines = make()
        except Rejected as e:
            self.skipped += 1
            self.rejected[f"rej_{kind}_{self.skipped}"] = (
                f"{{ auto r = {e.expr}; static_assert(is_layout<decltype(r)>::value || "
                "is_composed_layout<decltype(r)>::value, \"not a layout\"); }")
            return
        except (LayoutError, SwizzleError) as e:  # a rejection before the C++ is known
            raise AssertionError(f"{kind}: rejected without a C++ expression: {e}") from None
        self.add(kind, cxx, lines)


class Rejected(Exception):
    """threadmap rejected a case whose C++ expression is ``expr``."""

    def __init__(self, expr: str, err: Exception) -> None:
        super().__init__(f"{expr}: {err}")
        self.expr = expr


def _result_lines(expr: str, thunk: Any) -> tuple[list[str], list[str]]:
    try:
        res = thunk()
    except (LayoutError, SwizzleError) as e:
        raise Rejected(expr, e) from None
    cxx = [f"auto r = {expr};", "show(r);"]
    lines = [py_str(res)]
    if isinstance(res, (Layout, ComposedLayout)) and isinstance(
            res.layout_b if isinstance(res, ComposedLayout) else res, Layout):
        cxx.append("tab(r);")
        lines.append(py_tab(res))
    return cxx, lines


def build_batch() -> Batch:
    rng = random.Random(SEED)
    bt = Batch()

    # 1. raw swizzles applied to value tables (incl. negative S and B == 0)
    for _i in range(80):
        sw = rand_swizzle(rng)
        n = 1 << sw.nbits
        bt.add("swizzle", [f"auto sw = {cxx_sw(sw)};", "show(sw);", f"swtab(sw, {n});"],
               [str(sw), " ".join(str(sw(x)) for x in range(n))])

    # 2. composition(Swizzle, Layout)  (B == 0 decays to the layout)
    for _i in range(50):
        sw = rand_swizzle(rng)
        lay = rand_pow2_layout(rng)
        bt.try_add("sw_o_layout", lambda sw=sw, lay=lay: _result_lines(
            f"composition({cxx_sw(sw)}, {cxx_layout(lay)})", lambda: (composition(sw, lay))))

    # 3. composition(Layout, Swizzle): make_swizzle of the images of the Y and Z bits
    for _i in range(40):
        sw = rand_swizzle(rng, max_bits=10)
        lay = rand_pow2_layout(rng, max_log=10)
        bt.try_add("layout_o_sw", lambda sw=sw, lay=lay: _result_lines(
            f"composition({cxx_layout(lay)}, {cxx_sw(sw)})", lambda: (composition(lay, sw))))

    # 4. GMMA shared-memory atoms, every element width, both majors, every swizzle
    for major in ("MN", "K"):
        for swz in ("INTER", "SW32", "SW64", "SW128"):
            bits_name = f"GMMA::Layout_{major}_{swz}_Atom_Bits{{}}"
            atom_b = gmma_layout_atom(major, swz, 1)
            bt.add("gmma", [f"show({bits_name});"], [py_str(atom_b)])
            for tname, ctype in CXX_TYPES.items():
                atom = gmma_layout_atom(major, swz, GMMA_ELEMENT_BITS[tname])
                name = f"GMMA::Layout_{major}_{swz}_Atom<{ctype}>{{}}"
                pi = atom.as_position_independent_swizzle_layout()
                cxx = [f"auto a = {name};", "show(a);", "tab(a);",
                       "auto p = as_position_independent_swizzle_layout(a);", "show(p);", "tab(p);",
                       f"auto t = tile_to_shape(a, make_shape(Int<{2 * size(atom.shape[0])}>{{}},"
                       f"Int<{2 * size(atom.shape[1])}>{{}}));", "show(t);"]
                t = atom.tile_to_shape((2 * size(atom.shape[0]), 2 * size(atom.shape[1])))
                bt.add("gmma", cxx, [py_str(atom), py_tab(atom), py_str(pi), py_tab(pi), py_str(t)])

    # 5. operations on swizzled composed layouts
    ops = ["get", "coalesce", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
           "logical_product", "slice", "slice2", "complement", "right_inverse", "left_inverse",
           "compose_tiler", "layout_o_composed", "filter", "with_offset"]
    for i in range(110):
        op = ops[i % len(ops)]
        sw = rand_swizzle(rng, max_bits=11)
        while sw.bits == 0:
            sw = rand_swizzle(rng, max_bits=11)
        lay = rand_pow2_layout(rng, max_log=10, rank=2)
        c = composition(sw, lay)
        bt.try_add(f"op_{op}", lambda op=op, c=c, lay=lay: _op_case(rng, op, c, lay))
    return bt


def _op_case(rng: random.Random, op: str, c: ComposedLayout, lay: Layout) -> tuple[list[str], list[str]]:
    cc = cxx_obj(c)
    s0 = size(lay.shape[0])
    if op == "get":
        k = rng.randint(0, 1)
        return _result_lines(f"layout<{k}>({cc})", lambda: (c.get(k)))
    if op == "coalesce":
        return _result_lines(f"coalesce({cc})", lambda: (c.coalesce()))
    if op == "filter":
        return _result_lines(f"filter({cc}, Int<1>{{}})", lambda: (c.filter(1)))  # profile: whole layout
    if op in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product"):
        if rng.random() < 0.5:
            tiler: Any = (1 << rng.randint(0, 2), 1 << rng.randint(0, 2))
        else:
            tiler = Layout(1 << rng.randint(0, 3), 1 << rng.randint(0, 1))
        if op == "logical_product":
            tiler = Layout(1 << rng.randint(1, 3), 1)
        res = getattr(c, op)(tiler)
        return _result_lines(f"{op}({cc}, {cxx_tiler(tiler)})", lambda: (res))
    if op in ("slice", "slice2"):
        crd: Any = (rng.randrange(s0), _) if op == "slice" else (_, rng.randrange(size(lay.shape[1])))
        res, off = c.slice_and_offset(crd)
        cxx = [f"auto so = slice_and_offset({cxx_coord(crd)}, {cc});", "auto r = get<0>(so);",
               "show(r);", "show(get<1>(so));"]
        lines = [py_str(res), str(int(off))]
        if isinstance(res, Layout) or isinstance(res.layout_b, Layout):
            cxx.append("tab(r);")
            lines.append(py_tab(res))
        return cxx, lines
    if op == "complement":
        return _result_lines(f"complement({cc}, Int<{4 * c.size()}>{{}})",
                             lambda: (c.complement(4 * c.size())))
    if op == "right_inverse":
        return _result_lines(f"right_inverse({cc})", lambda: (c.right_inverse()))
    if op == "left_inverse":
        return _result_lines(f"left_inverse({cc})", lambda: (c.left_inverse()))
    if op == "compose_tiler":
        t = Layout((2, s0 // 2 if s0 > 1 else 1), (s0 // 2 if s0 > 1 else 1, 1)) if s0 > 1 else Layout(1, 0)
        return _result_lines(f"composition({cc}, {cxx_layout(t)})", lambda: (c.compose(t)))
    if op == "layout_o_composed":
        outer = Layout(1 << 12, 1)
        return _result_lines(f"composition({cxx_layout(outer)}, {cc})", lambda: (composition(outer, c)))
    if op == "with_offset":
        off = 1 << rng.randint(11, 14)  # above the codomain: the slice law holds
        co = ComposedLayout(c.layout_a, off, c.layout_b)
        crd = (rng.randrange(s0), _)
        res, o = co.slice_and_offset(crd)
        cxx = [f"auto so = slice_and_offset({cxx_coord(crd)}, {cxx_obj(co)});", "auto r = get<0>(so);",
               "show(r);", "show(get<1>(so));", "tab(r);", f"tab({cxx_obj(co)});"]
        return cxx, [py_str(res), str(int(o)), py_tab(res), py_tab(co)]
    raise AssertionError(op)


def test_swizzle_matches_cute_headers() -> None:
    bt = build_batch()
    total = sum(bt.kinds.values())
    assert total >= 200, bt.kinds
    body = HELPERS + "int main() {\n" + "\n".join(bt.stmts) + "\nreturn 0;\n}\n"
    out = run_cxx(body).splitlines()
    got = [_strip(x) for x in out]
    exp = [(lab, _strip(x)) for lab, x in bt.expect]
    mismatches = []
    for i, (lab, e) in enumerate(exp):
        g = got[i] if i < len(got) else "<missing>"
        if g != e:
            mismatches.append(f"{lab}: C++ {g[:300]!r} != threadmap {e[:300]!r}")
    if len(got) != len(exp):
        mismatches.append(f"line count: C++ {len(got)} vs threadmap {len(exp)}")
    print(f"swizzle oracle: {total} cases {bt.kinds}, {bt.skipped} skipped (rejected by threadmap)")
    assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:30])


def test_swizzle_rejections_fail_in_cxx_too() -> None:
    """Every case threadmap rejects (and the batch skips) fails to compile against the
    header too, and enough cases are compared that a generator bug cannot empty the batch."""
    bt = build_batch()
    assert bt.rejected, "the generator produces no rejected cases: the check would be vacuous"
    missing = set(bt.rejected) - rejected_by_header(bt.rejected)
    assert not missing, "threadmap rejects, the header compiles: " + ", ".join(
        bt.rejected[m] for m in sorted(missing))
    for kind, n in bt.kinds.items():
        assert n >= 5, (kind, n)


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-q", "-s"])
