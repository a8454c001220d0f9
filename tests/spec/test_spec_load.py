"""Spec loading: the three formats agree, the expression grammar, and every class of error is
reported at the right ``FILE:LINE:COL`` with the right field path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from threadmap.errors import SpecError, ThreadmapError
from threadmap.spec.cli_schema import schema_dict, schema_json
from threadmap.spec.expr import BinOp, Call, Name, Neg, Num, evaluate, parse_expr
from threadmap.spec.load import (
    LoadedSpec,
    default_samples,
    iter_spec_files,
    load_spec,
    loads_spec,
    sample_envs,
)
from threadmap.spec.schema import Copy, SizeRange

YAML_SPEC = """\
# yaml-language-server: $schema=./spec.schema.json
spec: 1
name: CuTe transpose, smem + swizzle (col_smem_swizzled)
element: f32
threads: 256
sizes: {M: 1024, N: 1024}
grid: ["ceil_div(M, 16)", "ceil_div(N, 16)"]
tensors:
  x:  {memory: global, layout: "(M,N):(N,1)", align: 256}
  y:  {memory: global, layout: "(N,M):(M,1)", align: 256}
  sA: {memory: shared, layout: "Sw<4,0,4> o (16,16):(16,1)"}
  sB: {memory: shared, layout: "Sw<4,0,4> o (16,16):(1,16)", alias: sA}
stages:
  - copy: {src: {tensor: x, tile: [16,16], at: [bx,by], threads: "(16,16):(1,16)"},
           dst: {tensor: sA, threads: "(16,16):(1,16)"}, predicate: bounds}
  - barrier
  - copy: {src: {tensor: sB, threads: "(16,16):(1,16)"},
           dst: {tensor: y, tile: [16,16], at: [by,bx], threads: "(16,16):(1,16)"},
           predicate: bounds}
expect: {transform: transpose, coverage: exact, bank_conflicts: 0}
"""

TOML_SPEC = """\
spec = 1
name = "CuTe transpose, smem + swizzle (col_smem_swizzled)"
element = "f32"
threads = 256
grid = ["ceil_div(M, 16)", "ceil_div(N, 16)"]
stages = [
  {copy = {src = {tensor = "x", tile = [16, 16], at = ["bx", "by"], threads = "(16,16):(1,16)"}, \
dst = {tensor = "sA", threads = "(16,16):(1,16)"}, predicate = "bounds"}},
  "barrier",
  {copy = {src = {tensor = "sB", threads = "(16,16):(1,16)"}, dst = {tensor = "y", tile = [16, 16], \
at = ["by", "bx"], threads = "(16,16):(1,16)"}, predicate = "bounds"}},
]

[sizes]
M = 1024
N = 1024

[tensors]
x = {memory = "global", layout = "(M,N):(N,1)", align = 256}
y = {memory = "global", layout = "(N,M):(M,1)", align = 256}
sA = {memory = "shared", layout = "Sw<4,0,4> o (16,16):(16,1)"}
sB = {memory = "shared", layout = "Sw<4,0,4> o (16,16):(1,16)", alias = "sA"}

[expect]
transform = "transpose"
coverage = "exact"
bank_conflicts = 0
"""

JSON_SPEC = json.dumps(yaml.safe_load(YAML_SPEC), indent=2)


def write(tmp_path: Path, text: str, suffix: str = ".yaml", name: str = "k") -> Path:
    p = tmp_path / f"{name}{suffix}"
    p.write_text(text)
    return p


def pos_of(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """1-based (line, column) of the ``nth`` occurrence of ``needle``."""
    i = -1
    for _ in range(nth + 1):
        i = text.index(needle, i + 1)
    line = text.count("\n", 0, i) + 1
    return line, i - (text.rfind("\n", 0, i) + 1) + 1


def first_error(text: str, fmt: str = "yaml", name: str = "k.yaml") -> tuple[int, int, str, str]:
    """(line, col, field path, message) of the first problem reported."""
    with pytest.raises(SpecError) as ei:
        loads_spec(text, fmt, name)  # type: ignore[arg-type]
    first = str(ei.value).splitlines()[0]
    m = re.match(rf"^{re.escape(name)}:(\d+):(\d+): (\(top level\)|\S+): (.*)$", first)
    assert m, first
    return int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)


# ----------------------------------------------------------------------------- valid specs


def test_three_formats_load_equal(tmp_path: Path) -> None:
    specs = [load_spec(write(tmp_path, t, s)) for t, s in
             ((YAML_SPEC, ".yaml"), (TOML_SPEC, ".toml"), (JSON_SPEC, ".json"))]
    assert specs[0].spec == specs[1].spec == specs[2].spec
    assert [s.format for s in specs] == ["yaml", "toml", "json"]
    assert all(s.envs == ({"M": 1024, "N": 1024},) for s in specs)
    assert load_spec(write(tmp_path, YAML_SPEC, ".yml")).spec == specs[0].spec


def test_readme_examples_load() -> None:
    readme = (Path(__file__).resolve().parents[2] / "specs" / "README.md").read_text()
    blocks = re.findall(r"```(yaml|toml)\n(.*?)```", readme, re.S)
    specs = [loads_spec(text, fmt) for fmt, text in blocks if "spec = 1" in text or "spec: 1" in text]
    assert len(specs) == 2
    assert specs[0].spec.model_copy(update={"description": ""}) == specs[1].spec
    assert specs[1].spec == loads_spec(YAML_SPEC, "yaml").spec


def test_loaded_spec_api(tmp_path: Path) -> None:
    ls = load_spec(write(tmp_path, YAML_SPEC))
    assert isinstance(ls, LoadedSpec)
    env = ls.envs[0]
    assert ls.threads(env) == 256
    assert ls.grid(env) == (64, 64, 1)
    assert ls.grid({"M": 17, "N": 33}) == (2, 3, 1)
    assert ls.eval("bx * 16 + 3", {**env, "bx": 2}) == 35
    assert str(ls.layout(ls.spec.tensors["x"].layout, {"M": 4, "N": 8})) == "(4,8):(8,1)"
    st = ls.spec.stages[2]
    assert isinstance(st, Copy) and st.copy_.dst.at == ["by", "bx"]
    line, col = pos_of(YAML_SPEC, "bx]")
    assert ls.where("stages", 2, "copy", "dst", "at", 1) == f"{ls.path}:{line}:{col}"
    err = ls.error(("tensors", "sA"), "boom")
    assert isinstance(err, SpecError)
    assert str(err) == f"{ls.path}:{pos_of(YAML_SPEC, '{memory: shared')[0]}:7: tensors.sA: boom"


@pytest.mark.parametrize("fmt,text", [("json", JSON_SPEC), ("toml", TOML_SPEC)])
def test_positions_json_toml(fmt: str, text: str) -> None:
    ls = loads_spec(text, fmt, f"k.{fmt}")  # type: ignore[arg-type]
    lines = text.splitlines()

    def at(*path: Any) -> str:
        line, col = map(int, ls.where(*path).split(":")[-2:])
        return lines[line - 1][col - 1:]

    assert at("tensors", "sB", "alias").lstrip('"').startswith(("sA", "alias"))
    assert at("stages", 1).startswith('"barrier"')
    assert at("grid", 1).startswith('"ceil_div(N, 16)"')
    assert at("stages", 2, "copy", "dst", "tensor").startswith(('"y"', "tensor"))
    assert at("sizes", "N").startswith(("1024", "N"))


def test_yaml_merge_keys_and_anchors() -> None:
    text = YAML_SPEC.replace("  x:  {memory: global, layout: \"(M,N):(N,1)\", align: 256}",
                             "  x:  &g {memory: global, layout: \"(M,N):(N,1)\", align: 256}") \
        .replace("  y:  {memory: global, layout: \"(N,M):(M,1)\", align: 256}",
                 "  y:  {<<: *g, layout: \"(N,M):(M,1)\"}")
    ls = loads_spec(text, "yaml")
    assert ls.spec.tensors["y"].memory == "global" and ls.spec.tensors["y"].align == 256


def test_size_ranges_give_sample_envs() -> None:
    text = YAML_SPEC.replace("{M: 1024, N: 1024}",
                             "{M: {min: 1, max: 65536}, N: {min: 4, max: 100, multiple_of: 4, "
                             "samples: [4, 36]}}")
    ls = loads_spec(text, "yaml")
    ms = sorted({e["M"] for e in ls.envs})
    assert ms == [1, 16, 17, 31, 32]  # min, the tile and 2 tiles, non-multiples of the tile
    assert sorted({e["N"] for e in ls.envs}) == [4, 36]
    assert len(ls.envs) == 10
    assert ls.max_env == {"M": 65536, "N": 100}


def test_default_samples_rules() -> None:
    assert default_samples(SizeRange(min=1, max=64), [16]) == [1, 16, 17, 31, 32, 64]
    assert default_samples(SizeRange(min=8, max=10**6, multiple_of=8), [16]) == [8, 16, 24, 32]
    assert default_samples(SizeRange(min=5000, max=10**6), [16]) == [5000]
    assert default_samples(SizeRange(min=3, max=5), []) == [3, 5]
    envs = sample_envs({"A": SizeRange(min=1, max=9, samples=list(range(1, 10))),
                        "B": SizeRange(min=1, max=9, samples=list(range(1, 10))), "C": 7})
    assert len(envs) == 9 and all(e["C"] == 7 for e in envs)  # 81 > 64: the diagonal


def test_iter_spec_files(tmp_path: Path) -> None:
    write(tmp_path, YAML_SPEC, ".yaml", "a")
    write(tmp_path, TOML_SPEC, ".toml", "b")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", JSON_SPEC, ".json", "c")
    write(tmp_path, "{}", ".schema.json", "spec")
    write(tmp_path, "notes", ".md", "README")
    got = [p.relative_to(tmp_path).as_posix() for p in iter_spec_files(tmp_path)]
    assert got == ["a.yaml", "b.toml", "sub/c.json"]


# ----------------------------------------------------------------------------- expressions


@pytest.mark.parametrize("text,env,value", [
    ("ceil_div(M, 16)", {"M": 33}, 3),
    ("ceil_div(M, 16) * 2 + 1", {"M": 32}, 5),
    ("M / 4", {"M": 18}, 4),
    ("M // 4", {"M": 18}, 4),
    ("-7 / 2", {}, -4),            # floor, documented
    ("-7 % 2", {}, 1),
    ("M % 16", {"M": 33}, 1),
    ("min(M, max(N, 3))", {"M": 10, "N": 2}, 3),
    ("(1 + 2) * 3", {}, 9),
    ("1 + 2 * 3", {}, 7),
    ("10 - 3 - 2", {}, 5),
    ("2 * -3", {}, -6),
    (" bx*16 ", {"bx": 2}, 32),
    (42, {}, 42),
    ("9223372036854775807", {}, 2**63 - 1),
])
def test_expr_values(text: str | int, env: dict[str, int], value: int) -> None:
    assert evaluate(text, env) == value


def test_expr_ast_and_backends() -> None:
    e = parse_expr("ceil_div(M, 16) * N - -bx")
    assert isinstance(e, BinOp) and e.op == "-"
    assert isinstance(e.right, Neg) and e.right.operand == Name(name="bx")
    assert isinstance(e.left, BinOp) and isinstance(e.left.left, Call)
    assert e.names() == frozenset({"M", "N", "bx"})
    assert parse_expr("1 + 2").is_const() and Num(value=3).eval({}) == 3
    assert str(e) == "(ceil_div(M, 16) * N) - -bx"
    assert parse_expr(str(e)) == e
    # a symbolic backend: strings
    def sym(name: str) -> Any:
        return lambda *a: f"{name}({', '.join(map(str, a))})"

    ops = {k: sym(k) for k in ("+", "-", "*", "/", "//", "%", "neg", "ceil_div", "min", "max")}
    assert parse_expr("min(M, 2) + -N").apply({"M": "m", "N": "n"}, ops) == "+(min(m, 2), neg(n))"
    # numpy arrays through the default ops
    import numpy as np
    np.testing.assert_array_equal(parse_expr("ceil_div(M, 4)").apply({"M": np.arange(1, 6)}),
                                  [1, 1, 1, 1, 2])


@pytest.mark.parametrize("text,env,pattern", [
    ("M + 1", {}, r"undefined name 'M' at column 1"),
    ("M / (N - N)", {"M": 1, "N": 2}, r"division by zero at column 3"),
    ("M % 0", {"M": 1}, r"modulo by zero"),
    ("ceil_div(4, 0)", {}, r"ceil_div needs a positive divisor"),
    ("ceil_div(4, -2)", {}, r"ceil_div needs a positive divisor"),
    ("1 $ 2", {}, r"unexpected character '\$' at column 3"),
    ("1 +", {}, r"expression ended at column 4"),
    ("(1 + 2", {}, r"expected '\)'"),
    ("1 2", {}, r"unexpected '2' at column 3"),
    ("foo(1, 2)", {}, r"unknown function 'foo'.* at column 1"),
    ("min(1)", {}, r"min takes 2 arguments, got 1"),
    ("min", {}, r"needs arguments"),
    ("", {}, r"empty expression"),
    ("9223372036854775808", {}, r"does not fit in 64 bits"),
    ("99999999999999999999999", {}, r"more than 19 digits"),
    ("4294967296 * 4294967296", {}, r"out of the 64-bit range"),
    ("(" * 40 + "1" + ")" * 40, {}, r"nested deeper than 32"),
    ("-" * 40 + "1", {}, r"nested deeper than 32"),
    ("+".join(["1"] * 200), {}, r"more than 256 tokens"),
    ("1" * 1001, {}, r"longer than 1000"),
    ("M", {"M": True}, r"not an integer"),
    ("１", {}, r"unexpected character"),  # non-ASCII digit
])
def test_expr_errors(text: str, env: dict[str, Any], pattern: str) -> None:
    with pytest.raises(SpecError, match=pattern) as ei:
        evaluate(text, env)
    assert isinstance(ei.value, ThreadmapError) and isinstance(ei.value, ValueError)


def test_expr_rejects_non_text() -> None:
    for bad in (True, 1.5, None, [1], 2**70):
        with pytest.raises(SpecError):
            parse_expr(bad)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- errors, YAML


def _sub(old: str, new: str, text: str = YAML_SPEC) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# (name, mutated text, (needle, nth) whose position is expected, field path, message regex)
YAML_ERRORS = [
    ("unknown field", _sub("align: 256}", "align: 256, colour: red}"), ("colour", 0),
     "tensors.x.colour", r"unknown field 'colour'"),
    ("wrong type", _sub("threads: 256", "threads: [1]"), ("[1]", 0),
     "threads", r"valid integer .* or: .*valid string"),
    ("wrong type deep", _sub("tile: [16,16]", "tile: {a: 1}"), ("{a: 1}", 0),
     "stages[0].copy.src.tile", r"valid list"),
    ("missing field", _sub('layout: "(N,M):(M,1)", ', ""), ("{memory: global, align", 0),
     "tensors.y.layout", r"missing required field 'layout'"),
    ("bad literal", _sub("memory: shared, layout: \"Sw<4,0,4> o (16,16):(16,1)\"",
                         "memory: texture, layout: \"Sw<4,0,4> o (16,16):(16,1)\""),
     ("texture", 0), "tensors.sA.memory", r"'global' or 'shared'"),
    ("stage typo", _sub("- barrier", "- barier"), ("barier", 0), "stages[1]", r"'barrier'"),
    ("side rule", _sub('dst: {tensor: sA, threads: "(16,16):(1,16)"}', "dst: {tensor: sA}"),
     ("{tensor: sA}", 0), "stages[0].copy.dst", r"needs a partition"),
    ("element", _sub("element: f32", "element: f33"), ("f33", 0), "element",
     r"unknown element type 'f33'"),
    ("range order", _sub("{M: 1024, N: 1024}", "{M: {min: 5, max: 2}, N: 1024}"),
     ("{min: 5", 0), "sizes.M", r"max \(2\) is below min \(5\)"),
    ("size not int", _sub("{M: 1024, N: 1024}", "{M: 1024, N: abc}"), ("abc", 0), "sizes.N",
     r"valid integer"),
    ("size zero", _sub("{M: 1024, N: 1024}", "{M: 0, N: 1024}"), ("0, N", 0), "sizes.M",
     r"greater than or equal to 1"),
    ("bad size name", _sub("{M: 1024, N: 1024}", "{M: 1024, N: 1024, o: 3}"), ("o: 3", 0),
     "sizes.o", r"cannot be used in layouts"),
    ("grid too long", _sub('grid: ["ceil_div(M, 16)", "ceil_div(N, 16)"]',
                           "grid: [ceil_div(M, 16), ceil_div(N, 16)]"), ("[ceil", 0), "grid",
     r"at most 3 items.*quote expressions"),
    ("undefined size in layout", _sub("(N,M):(M,1)", "(N,K):(K,1)"), ('"(N,K)', 0),
     "tensors.y.layout", r"undefined name 'K' in layout"),
    ("undefined name in grid", _sub('"ceil_div(N, 16)"', '"ceil_div(Q, 16)"'),
     ('"ceil_div(Q', 0), "grid[1]", r"undefined name 'Q'"),
    ("undefined block name", _sub("at: [by,bx]", "at: [by,bw]"), ("bw]", 0),
     "stages[2].copy.dst.at[1]", r"undefined name 'bw'"),
    ("block name in tile", _sub("tile: [16,16], at: [bx,by]", "tile: [16,bx], at: [bx,by]"),
     ("bx]", 0), "stages[0].copy.src.tile[1]", r"undefined name 'bx'.*names here are the sizes"),
    ("bad expression", _sub('"ceil_div(M, 16)"', '"ceil_div(M, 16"'), ('"ceil_div(M, 16"', 0),
     "grid[0]", r"expected '\)'"),
    ("bad layout syntax", _sub('"(16,16):(1,16)"}, predicate', '"(16,16:(1,16)"}, predicate'),
     ('"(16,16:', 0), "stages[0].copy.dst.threads", r"expected"),
    ("tensor reference", _sub("src: {tensor: sB", "src: {tensor: sC"), ("sC", 0),
     "stages[2].copy.src.tensor", r"tensor 'sC' is not defined"),
    ("alias missing", _sub("alias: sA", "alias: sZ"), ("sZ", 0), "tensors.sB.alias",
     r"alias target 'sZ' is not a tensor"),
    ("alias global", _sub("alias: sA", "alias: x"), ("x}", 0), "tensors.sB.alias",
     r"global memory, not shared"),
    ("alias self", _sub("alias: sA", "alias: sB"), ("sB}", 0), "tensors.sB.alias",
     r"alias cycle"),
    ("alias too small", _sub("Sw<4,0,4> o (16,16):(16,1)\"}", "(8,16):(16,1)\"}"), ('"Sw<4,0,4> o', 0),
     "tensors.sB.layout", r"exceeds its buffer 'sA'"),
    ("registers read first", _sub('src: {tensor: sB, threads: "(16,16):(1,16)"}',
                                  "src: {registers: frag}"), ("frag", 0),
     "stages[2].copy.src.registers", r"'frag' is read before any stage writes it"),
    ("threads too many", _sub("threads: 256", "threads: 2048"), ("2048", 0), "threads",
     r"threads = 2048; a CTA has 1..1024"),
    ("threads zero", _sub("threads: 256", "threads: M - M"), ("M - M", 0), "threads",
     r"threads = 0"),
    ("threads expr", _sub("threads: 256", "threads: M / 0"), ("M / 0", 0), "threads",
     r"division by zero"),
    ("thread layout size", _sub('dst: {tensor: sA, threads: "(16,16):(1,16)"}',
                                'dst: {tensor: sA, threads: "(16,8):(1,16)"}'),
     ('"(16,8)', 0), "stages[0].copy.dst.threads", r"has 128 threads, but threads = 256"),
    ("tile rank", _sub("tile: [16,16], at: [bx,by]", "tile: [16,16,1], at: [bx,by,0]"),
     ("[16,16,1]", 0), "stages[0].copy.src.tile", r"rank 3 but tensor 'x' has rank 2"),
    ("at rank", _sub("tile: [16,16], at: [bx,by]", "tile: [16,16], at: [bx]"),
     ("[bx]", 0), "stages[0].copy.src.at", r"'at' has 1 coordinates but 'tile' has 2"),
    ("tile extent", _sub("tile: [16,16], at: [bx,by]", "tile: [16,0], at: [bx,by]"),
     ("0]", 0), "stages[0].copy.src.tile[1]", r"tile extent 0"),
    ("grid zero", _sub('"ceil_div(N, 16)"', '"N - N"'), ('"N - N"', 0), "grid[1]",
     r"grid entry 1 = 0"),
    ("huge size", _sub("{M: 1024, N: 1024}", "{M: 99999999999, N: 1024}"), ("99999999999", 0),
     "sizes.M", r"huge"),
    ("huge range", _sub("{M: 1024, N: 1024}", "{M: {min: 1, max: 99999999999}, N: 1024}"),
     ("99999999999", 0), "sizes.M.max", r"huge"),
    ("huge layout", _sub("{M: 1024, N: 1024}", "{M: 1073741824, N: 1000000}"),
     ('"(M,N):(N,1)"', 0), "tensors.x.layout", r"is huge"),
    ("huge grid y", _sub("{M: 1024, N: 1024}", "{M: 1024, N: 2000000000}"),
     ('"ceil_div(N, 16)"', 0), "grid[1]", r"1\.\.65535"),
    ("range without multiple", _sub("{M: 1024, N: 1024}",
                                    "{M: {min: 5, max: 7, multiple_of: 4}, N: 1024}"),
     ("{min: 5", 0), "sizes.M", r"no multiple of 4"),
    ("bad sample", _sub("{M: 1024, N: 1024}", "{M: {min: 16, max: 64, samples: [16, 100]}, N: 1024}"),
     ("100", 0), "sizes.M.samples[1]", r"sample 100 is not in \[16, 64\]"),
    ("range-dependent thread count",
     _sub("{M: 1024, N: 1024}", "{M: {min: 16, max: 32, samples: [16, 32]}, N: 1024}")
     .replace("threads: 256", "threads: M * 16"),
     ('"(16,16):(1,16)"', 0), "stages[0].copy.src.threads", r"but threads = 512 \(with M=32\)"),
    ("smem too big", _sub("Sw<4,0,4> o (16,16):(16,1)\"}", "(256,256):(256,1)\"}"),
     ('"(256,256):(256,1)"', 0), "tensors.sA.layout", r"\(262144 for 'sA'\); a CTA has at most 232448 bytes"),
    ("duplicate key", _sub("element: f32", "element: f32\nelement: f16"), ("element", 1),
     "element", r"duplicate key 'element'"),
    ("yaml syntax", _sub("stages:\n", "stages: [\n"), ("- copy", 0), "(file)", r"YAML: "),
    ("python tag", _sub("name: CuTe", "name: !!python/object:os.system {} #"),
     ("!!python", 0), "name", r"unsupported YAML tag"),
    ("python scalar tag", _sub("name: CuTe", "name: !!python/name:os.system #"),
     ("!!python", 0), "(file)", r"YAML: could not determine a constructor"),
    ("top level list", "- 1\n- 2\n", ("- 1", 0), "(top level)", r"a spec is a mapping"),
]


@pytest.mark.parametrize("case", YAML_ERRORS, ids=[c[0] for c in YAML_ERRORS])
def test_yaml_errors_located(case: tuple[str, str, tuple[str, int], str, str]) -> None:
    _, text, (needle, nth), field, pattern = case
    line, col, got_field, msg = first_error(text)
    assert (got_field, (line, col)) == (field, pos_of(text, needle, nth)), msg
    assert re.search(pattern, msg), msg


def test_all_problems_listed_one_per_line() -> None:
    text = _sub("align: 256}", "align: 256, colour: red}", _sub("threads: 256", "threads: [1]"))
    with pytest.raises(SpecError) as ei:
        loads_spec(text, "yaml", "k.yaml")
    lines = str(ei.value).splitlines()
    assert len(lines) == 2
    assert all(re.match(r"^k\.yaml:\d+:\d+: \S+: .+", ln) for ln in lines)


def test_empty_and_bomb() -> None:
    assert first_error("")[2:] == ("(file)", "the file is empty")
    assert first_error("# only a comment\n")[3] == "the file is empty"
    bomb = "a: &a [1,2,3,4,5,6,7,8,9]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdef", "bcdefg"))
    assert "more than 100000 values" in first_error(bomb)[3]
    assert "nested deeper" in first_error("a: " + "[" * 100 + "]" * 100)[3]
    # unclosed and too deep: libyaml 0.2.6 stops at its own depth limit (a YAML error) while
    # scanning ahead, 0.2.5 has none and the reader's limit is met first
    msg = first_error("a: " + "[" * 5000)[3]
    assert "YAML" in msg or "nested deeper than 64 levels" in msg, msg


# ----------------------------------------------------------------------------- errors, JSON and TOML


def test_json_errors_located() -> None:
    text = JSON_SPEC.replace('"align": 256', '"align": 256, "colour": "red"', 1)
    assert first_error(text, "json", "k.json")[:3] == (*pos_of(text, '"colour"'), "tensors.x.colour")
    text = JSON_SPEC.replace('"threads": 256', '"threads": [1]')
    assert first_error(text, "json", "k.json")[:3] == (*pos_of(text, "[1]"), "threads")
    text = JSON_SPEC.replace('"alias": "sA"', '"alias": "x"')
    assert first_error(text, "json", "k.json")[:3] == (*pos_of(text, '"x"', 1), "tensors.sB.alias")
    text = JSON_SPEC.replace('"threads": 256,', '"threads": 256,,')
    line, col, field, msg = first_error(text, "json", "k.json")
    assert (field, msg.startswith("JSON: expected a key")) == ("(file)", True)
    assert (line, col - 1) == pos_of(text, ',,')
    text = JSON_SPEC.replace('"threads": 256', '"threads": 256, "threads": 128')
    assert first_error(text, "json", "k.json")[:3] == (*pos_of(text, '"threads"', 1), "threads")
    for bad in ("", "[", '{"a": NaN}', '{"a": 1} x', "{'a': 1}", '{"a": "\\x"}', '{"a": 1' + "0" * 200 + "}"):
        assert first_error(bad, "json", "k.json")[2] in ("(file)", "(top level)")


def test_toml_errors_located() -> None:
    text = TOML_SPEC.replace("bank_conflicts = 0", "bank_conflicts = -1")
    assert first_error(text, "toml", "k.toml")[:3] == (*pos_of(text, "bank_conflicts"),
                                                       "expect.bank_conflicts")
    text = TOML_SPEC.replace('alias = "sA"', 'alias = "sQ"')
    assert first_error(text, "toml", "k.toml")[:3] == (*pos_of(text, "alias"), "tensors.sB.alias")
    text = TOML_SPEC.replace('threads = 256', 'threads = 4096')
    assert first_error(text, "toml", "k.toml")[:3] == (*pos_of(text, "threads = 4096"), "threads")
    text = TOML_SPEC.replace('"barrier",', '"barier",')
    assert first_error(text, "toml", "k.toml")[:3] == (*pos_of(text, '"barier"'), "stages[1]")
    text = TOML_SPEC.replace("M = 1024", "M = ")
    line, col, field, msg = first_error(text, "toml", "k.toml")
    assert (line, field) == (pos_of(text, "M = ")[0], "(file)") and msg.startswith("TOML:")


def test_file_level_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"missing\.yaml:1:1: \(file\): cannot read"):
        load_spec(tmp_path / "missing.yaml")
    with pytest.raises(SpecError, match=r"unknown spec file type '\.txt'"):
        load_spec(write(tmp_path, YAML_SPEC, ".txt"))
    p = tmp_path / "bin.yaml"
    p.write_bytes(b"name: a\n\xff\xfe\n")
    with pytest.raises(SpecError, match=r"bin\.yaml:2:1: \(file\): not UTF-8"):
        load_spec(p)
    p.write_bytes(b"#" * (2 << 20))
    with pytest.raises(SpecError, match=r"larger than"):
        load_spec(p)


# ----------------------------------------------------------------------------- JSON Schema


def test_schema_is_valid_and_accepts_the_example() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(schema_json())
    assert schema == schema_dict()
    assert schema["$schema"].endswith("2020-12/schema") and schema["$id"] and schema["title"]
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    assert not list(v.iter_errors(yaml.safe_load(YAML_SPEC)))
    bad = yaml.safe_load(YAML_SPEC)
    bad["tensors"]["x"]["colour"] = "red"
    assert list(v.iter_errors(bad))


def test_committed_schema_file_is_current() -> None:
    """specs/spec.schema.json (what editors load) is exactly what ``threadmap schema`` prints."""
    from pathlib import Path

    committed = Path(__file__).resolve().parents[2] / "specs" / "spec.schema.json"
    assert committed.read_text() == schema_json(), "run: threadmap schema > specs/spec.schema.json"


@pytest.mark.parametrize("old,new,field,hint", [
    ('layout: "(M,N):(N,1)", align: 256}', "layout: (M,N):(N,1), align: 256}", 'tensors.x["N):(N"]',
     "quote it"),
    ("name: CuTe transpose, smem + swizzle (col_smem_swizzled)", "name: yes", "name", "as a boolean"),
    ("coverage: exact", "coverage: on", "expect.coverage", "as a boolean"),
    ("bank_conflicts: 0}", "bank_conflicts: 0, failing_checks: [coalescing]}", "expect", "verdict must be 'fail'"),
])
def test_yaml_pitfalls_get_a_hint(old: str, new: str, field: str, hint: str) -> None:
    assert YAML_SPEC.count(old) == 1
    _line, _col, path, msg = first_error(YAML_SPEC.replace(old, new))
    assert path == field and hint in msg, (path, msg)
