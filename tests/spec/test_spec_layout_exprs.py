"""Size expressions in layout shapes and strides: ``(M,N,L):(N,1,M*N)``, the batched tensor.

The expression leaves are parsed once with the spec grammar (never ``eval``) and evaluated
when sizes are bound; a spec written with them verifies exactly as the same spec with the
numbers written out, ``prove`` reads them, and a bad one is a located exit-2 error."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import z3
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from threadmap.api import verify_spec
from threadmap.cli import main
from threadmap.errors import SpecError
from threadmap.layout import Sym
from threadmap.layout import parse as parse_layout
from threadmap.layout.backend import Interval
from threadmap.prove.run import prove
from threadmap.spec.expr import OPS, Affine, parse_expr
from threadmap.spec.parsed import LayoutTemplate, bind_layout

# A batched transpose-like copy: L matrices of M x N, read row-major, written column-major
# (stride M*N between the matrices of y), 16 x 16 tiles, one batch per block along z.
BATCHED = """\
spec: 1
name: batched copy
element: f32
threads: 256
sizes: SIZES
grid: ["ceil_div(M, 16)", "ceil_div(N, 16)", L]
tensors:
  x: {memory: global, layout: "X"}
  y: {memory: global, layout: "Y"}
stages:
  - copy:
      src: {tensor: x, tile: [16, 16, 1], at: [bx, by, bz], threads: "(16,16,1):(16,1,0)"}
      dst: {tensor: y, tile: [16, 16, 1], at: [bx, by, bz], threads: "(16,16,1):(16,1,0)"}
      predicate: bounds
expect: {transform: copy}
"""
X_EXPR, Y_EXPR = "(M,N,L):(N,1,M*N)", "(M,N,L):(1,M,M * N)"


def batched(sizes: str, x: str = X_EXPR, y: str = Y_EXPR) -> str:
    return BATCHED.replace("SIZES", sizes).replace('"X"', f'"{x}"').replace('"Y"', f'"{y}"')


def concrete(m: int, n: int, b: int) -> str:
    """The same spec with every size written out as a number."""
    text = batched("{}", f"({m},{n},{b}):({n},1,{m * n})", f"({m},{n},{b}):(1,{m},{m * n})")
    return text.replace("ceil_div(M, 16)", str(-(-m // 16))).replace("ceil_div(N, 16)", str(-(-n // 16))) \
        .replace(", L]", f", {b}]")


def outcome(run: Any) -> Any:
    """Everything a run says, except the spec's name, path and sizes."""
    d = run.model_dump()
    for k in ("spec", "path", "sizes", "seconds"):
        d.pop(k)
    return d


SIZES = [(16, 16, 1), (40, 24, 3), (33, 17, 2), (64, 48, 5)]


@pytest.mark.parametrize("m, n, b", SIZES)
def test_batched_layout_verifies_as_the_numbers(tmp_path: Path, m: int, n: int, b: int) -> None:
    p_expr = tmp_path / "expr.yaml"
    p_expr.write_text(batched(f"{{M: {m}, N: {n}, L: {b}}}"))
    p_num = tmp_path / "num.yaml"
    p_num.write_text(concrete(m, n, b))
    got, want = verify_spec(p_expr), verify_spec(p_num)
    assert len(got) == len(want) == 1
    assert outcome(got[0]) == outcome(want[0])
    # exhaustively too (no tiling argument)
    assert outcome(verify_spec(p_expr, exhaustive=True)[0]) == outcome(verify_spec(p_num, exhaustive=True)[0])


def test_batched_ranges_verify_at_every_sample_as_the_numbers(tmp_path: Path) -> None:
    p = tmp_path / "expr.yaml"
    p.write_text(batched("{M: {min: 1, max: 4096, samples: [16, 33]}, "
                         "N: {min: 1, max: 4096, samples: [24, 17]}, L: {min: 1, max: 64, samples: [1, 3]}}"))
    runs = verify_spec(p)
    assert sorted(tuple(r.sizes[k] for k in "MNL") for r in runs) == sorted(
        itertools.product((16, 33), (24, 17), (1, 3)))
    for r in runs:
        q = tmp_path / "num.yaml"
        q.write_text(concrete(r.sizes["M"], r.sizes["N"], r.sizes["L"]))
        assert outcome(r) == outcome(verify_spec(q)[0])


def test_batched_layout_proves_as_the_redundant_size(tmp_path: Path) -> None:
    """``prove`` reads the stride ``M*N`` as the monomial it is: every property has the status
    it has with the old workaround (a redundant size ``MN`` and ``assume: MN == M * N``); the
    batched y is proved injective for every size in range."""
    ranges = ("{M: {min: 16, max: 4096, multiple_of: 16, samples: [48]}, "
              "N: {min: 16, max: 4096, multiple_of: 16, samples: [32]}, L: {min: 1, max: 64, samples: [3]}")
    p = tmp_path / "expr.yaml"
    p.write_text(batched(ranges + "}"))
    w = tmp_path / "workaround.yaml"
    w.write_text(batched(ranges + ", MN: {min: 256, max: 16777216, samples: [1536]}}", "(M,N,L):(N,1,MN)",
                         "(M,N,L):(1,M,MN)").replace("expect:", 'assume: ["MN == M * N"]\nexpect:'))
    got, old = prove([p], timeout_s=10), prove([w], timeout_s=10)
    assert not got.errors and not old.errors, (got.errors, old.errors)
    results = [{r.property: r for r in rep.runs[0].properties} for rep in (got, old)]
    assert results[0].keys() == results[1].keys()
    for name, r in results[0].items():
        q = results[1][name]
        assert "REFUTED" not in (r.status, q.status), (r, q)
        # a solver's time limit (coalescing's bound on a busy machine) is no difference
        if "time limit" not in r.reason + q.reason:
            assert r.status == q.status, (r, q)
    assert results[0]["aliasing"].status == results[0]["coverage"].status == "PROVED", results[0]


def test_template_leaves_on_every_backend() -> None:
    """The expression leaves evaluate on every backend of the expression core, and the
    layout bound at ints is the layout written with the numbers."""
    t = LayoutTemplate.of("(M,ceil_div(N, 8)):(ceil_div(N, 8) * 2,M*N+1)")
    assert t.names == ("M", "N") and t.error is None and len(t.leaves) == 3
    for m, n in itertools.product((1, 7, 64), (1, 9, 100)):
        c = -(-n // 8)
        assert bind_layout(t.text, {"M": m, "N": n}) == parse_layout(f"({m},{c}):({c * 2},{m * n + 1})")
        ints = t.leaf_values({"M": m, "N": n})
        assert list(ints.values()) == [c, 2 * c, m * n + 1]
        # numpy: every size at once
        ms, ns = np.array([m, m + 1]), np.array([n, n + 3])
        arr = t.leaf_values({"M": ms, "N": ns}, OPS)
        for k, name in enumerate(ints):
            assert int(arr[name][0]) == ints[name]
            assert int(arr[name][1]) == list(t.leaf_values({"M": m + 1, "N": n + 3}).values())[k]
        # Interval: the value lies in the bounds
        box = t.leaf_values({"M": Interval(1, 64), "N": Interval(1, 100)}, OPS)
        assert all(Interval.lift(box[k]).lo <= v <= Interval.lift(box[k]).hi for k, v in ints.items())
        # z3 bit-vectors: the symbolic value at these sizes is the int
        sym = t.leaf_values({"M": Sym(z3.BitVecVal(m, 32)), "N": Sym(z3.BitVecVal(n, 32))}, OPS)
        assert all(z3.simplify(sym[k].e).as_long() == v for k, v in ints.items())
    # Affine forms: M*N+1 is affine in N once M is known
    aff = LayoutTemplate.of("(M,N):(1,M*N+1)").leaf_values({"M": 3, "N": Affine.var("N")}, OPS)
    assert next(iter(aff.values())).coef == {"N": 3}


def test_columns_and_literals_are_kept() -> None:
    t = LayoutTemplate.of("(M,N,L):(N,1,M*N)")
    assert t.mode_names == {0: "M", 1: "N", 2: "L"}
    assert len(t.rewritten) == len(t.text) and t.rewritten.index(":") == t.text.index(":")
    for text in ("(4,8):(-1,4)", "(_4,_8):(_8,_1)", "Sw<3,4,3> o (8,64):(64,1)", "(4,8):(1@0,1@1)",
                 "make_layout(make_shape(8,64), GenRowMajor{})", "(M,N):(N,1)"):
        assert LayoutTemplate.of(text).leaves == () and LayoutTemplate.of(text).rewritten == text


@pytest.mark.parametrize("layout, needle", [
    ("(M,N,L):(N,1,M**N)", "found '*'"),
    ("(M,N,L):(N,1,M*Q)", "undefined name 'Q'"),
    ("(M,N,L):(N,1,ceil_div(M, 0))", "positive divisor"),
    ("(M,N,L):(N,1,M*N*9999999999999999)", "64-bit range"),
])
def test_bad_expression_is_a_located_exit_2(tmp_path: Path, layout: str, needle: str) -> None:
    text = batched("{M: 40, N: 24, L: 3}", x=layout)
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    r = CliRunner().invoke(main, ["verify", str(p)])
    assert r.exit_code == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("threadmap: error:")]
    assert len(lines) == 1, r.stderr
    m = re.match(r"threadmap: error: .*bad\.yaml:(\d+):(\d+): tensors\.x\.layout: (.*)", lines[0])
    assert m is not None, lines[0]
    row = text.splitlines()[int(m[1]) - 1]
    assert row[int(m[2]) - 1:].startswith(f'"{layout}"')
    assert needle in m[3], m[3]


_TERMS = st.recursive(
    st.sampled_from(["M", "N", "1", "2", "7"]),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["+", "*", " * ", "//", "%"]), inner).map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
        st.tuples(st.sampled_from(["ceil_div", "max", "min"]), inner, inner).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        inner.map(lambda t: f"({t})+1")),
    max_leaves=6)


@settings(max_examples=200, deadline=None)
@given(exprs=st.lists(_TERMS, min_size=2, max_size=2), m=st.integers(1, 50), n=st.integers(1, 50))
def test_expression_strides_bind_as_their_values(exprs: list[str], m: int, n: int) -> None:
    """A layout with expression strides binds to the layout with the expressions' values,
    or refuses the one the expression core refuses (a zero divisor)."""
    env = {"M": m, "N": n}
    text = f"(M,(N,3)):({exprs[0]},(1,{exprs[1]}))"
    try:
        values = [parse_expr(e).eval(env) for e in exprs]
    except SpecError as e:
        with pytest.raises(SpecError, match=re.escape(str(e).split(" at column")[0][:30])):
            bind_layout(text, env)
        return
    assert bind_layout(text, env) == parse_layout(f"({m},({n},3)):({values[0]},(1,{values[1]}))")
