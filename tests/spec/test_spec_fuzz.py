"""Fuzz the spec loader: malformed specs (wrong types, unknown fields, inconsistent sizes,
undefined names, impossible thread counts, huge sizes, garbage text) in YAML, JSON and TOML
either load or raise :class:`SpecError` with ``FILE:LINE:COL: field: message`` lines; never
another exception, never a hang (each example runs under an alarm)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.spec.test_spec_load import YAML_SPEC
from tests.support.spec_trees import toml_dumps, tree_paths
from tests.support.timeouts import time_limit
from threadmap.errors import SpecError
from threadmap.spec.expr import parse_expr
from threadmap.spec.load import loads_spec

FUZZ = settings(max_examples=300, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.data_too_large])
TIME_LIMIT_S = 5
BASE: dict[str, Any] = yaml.safe_load(YAML_SPEC)
LINE = re.compile(r"^spec\.(yaml|json|toml):\d+:\d+: .+: .+$")


def dump(data: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=1)
    if fmt == "toml":
        try:
            return toml_dumps(data)
        except TypeError:
            return json.dumps(data)  # not TOML at all: still must fail cleanly
    return yaml.safe_dump(data, sort_keys=False, width=60)


def check_load(text: str, fmt: str) -> None:
    """The contract: loads or raises SpecError whose every line is located."""
    with time_limit(TIME_LIMIT_S, "load"):
        try:
            loads_spec(text, fmt, f"spec.{fmt}")  # type: ignore[arg-type]
        except SpecError as e:
            lines = str(e).splitlines()
            assert lines, "empty message"
            for ln in lines:
                assert LINE.match(ln), ln


# ----------------------------------------------------------------------------- strategies

EXPRS = ["M", "N", "K", "bx", "ceil_div(M, 16)", "M / 0", "M % (N - N)", "2 ** 3", "M +", "",
         "9" * 30, "4294967296 * 4294967296", "(" * 50 + "1" + ")" * 50, "min(M)", "-1", "0",
         "M * N * M * N * M", "max(M, N) // 3", "ceil_div(M, -16)", "\x00", "é", "M N"]
LAYOUTS = ["(16,16):(1,16)", "(16,8):(1,16)", "(M,N):(N,1)", "(M,K):(K,1)", "Sw<4,0,4> o (16,16):(16,1)",
           "Sw<9,9,9> o (16,16):(16,1)", "(256):(1)", "(((", "(16,16):(1,16", "1@0", "(2,2):(1@0,1@1)",
           "(4096,4096):(4096,1)", "(99999999999999999,2):(1,1)", "o", "Sw", "(16,16):(-1,16)", ""]
huge = st.sampled_from([0, -1, 2**31, 2**31 + 1, 2**40, 2**63, 2**64, 10**30, 10**100])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 5000), huge,
                    st.floats(allow_nan=True), st.text(max_size=12), st.sampled_from(EXPRS),
                    st.sampled_from(LAYOUTS))
values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=4),
                                                   st.dictionaries(st.text(max_size=8), c, max_size=4)),
                      max_leaves=12)


PATHS = tree_paths(BASE)[1:]
FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "threads": st.one_of(st.integers(-5, 5000), huge, st.sampled_from(EXPRS)),
    "layout": st.sampled_from(LAYOUTS), "tensor": st.sampled_from(["x", "y", "sA", "sB", "q", ""]),
    "alias": st.sampled_from(["x", "y", "sA", "sB", "q", ""]),
    "memory": st.sampled_from(["global", "shared", "x"]),
    "predicate": st.sampled_from(["none", "bounds", "vector", "all"]),
}


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    """The base spec with 1..4 mutations: replace a value (by a random value, or a plausible
    one for that field), delete a key, add an unknown key, change sizes to ranges/huge."""
    d = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(PATHS))
        parent: Any = d
        try:
            for c in path[:-1]:
                parent = parent[c]
            parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        kind = draw(st.sampled_from(["replace", "field", "delete", "extra", "sizes", "grid"]))
        last = path[-1]
        if kind == "replace":
            parent[last] = draw(values)
        elif kind == "field":
            strat = FIELD_VALUES.get(str(last), st.one_of(st.sampled_from(EXPRS), st.sampled_from(LAYOUTS)))
            parent[last] = draw(strat)
        elif kind == "delete":
            del parent[last]
        elif kind == "extra" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["colour", "Threads", "tile", "copy", "alias", "1"]))] = draw(values)
        elif kind == "sizes":
            d["sizes"] = draw(st.dictionaries(
                st.sampled_from(["M", "N", "K", "bx", "o", "_M", "1x", "ceil_div"]),
                st.one_of(st.integers(-3, 5000), huge, st.text(max_size=4), st.fixed_dictionaries(
                    {"min": st.one_of(st.integers(-2, 100), huge),
                     "max": st.one_of(st.integers(-2, 5000), huge)},
                    optional={"multiple_of": st.integers(-1, 64),
                              "samples": st.lists(st.integers(-2, 200), max_size=4)})),
                max_size=3))
        else:
            d["grid"] = draw(st.lists(st.one_of(st.sampled_from(EXPRS), st.integers(-2, 70000), huge),
                                      max_size=5))
    return d


# ----------------------------------------------------------------------------- properties


@FUZZ
@given(mutated(), st.sampled_from(["yaml", "json", "toml"]))
def test_mutated_specs_fail_cleanly(data: Any, fmt: str) -> None:
    check_load(dump(data, fmt), fmt)


@FUZZ
@given(st.one_of(st.text(max_size=200),
                 st.text(alphabet=":-[]{}&*!|>'\"#%@`,?\n\t 0123456789abcxyz<=.", max_size=200),
                 values.map(lambda v: yaml.safe_dump(v))),
       st.sampled_from(["yaml", "json", "toml"]))
def test_garbage_text_fails_cleanly(text: str, fmt: str) -> None:
    check_load(text, fmt)


@FUZZ
@given(st.integers(0, len(YAML_SPEC)), st.integers(0, 40), st.text(max_size=8))
def test_spliced_yaml_fails_cleanly(at: int, cut: int, insert: str) -> None:
    check_load(YAML_SPEC[:at] + insert + YAML_SPEC[at + cut:], "yaml")


@settings(max_examples=400, deadline=None, database=None)
@given(st.one_of(st.text(alphabet="MNbx0123456789+-*/%(), _cedilmaxn", max_size=60), st.text(max_size=30)),
       st.dictionaries(st.sampled_from(["M", "N", "bx"]), st.integers(-2**70, 2**70), max_size=3))
def test_expressions_fail_cleanly(text: str, env: dict[str, int]) -> None:
    with time_limit(TIME_LIMIT_S, "load"):
        try:
            parse_expr(text).eval(env)
        except SpecError as e:
            assert str(e)
