"""The spec readers (YAML, JSON, TOML) end to end through :func:`loads_spec`.

1. integers outside 64 bits, in every spelling, are located errors at the reader; floats
   (NaN, inf, huge) never raise past it;
2. TOML errors are located in time linear in the file (a 100 KB file with hundreds of
   errors in well under a second; it took 17 s for 24 KB);
3. no reader takes more than 2 s or 200 MB (peak resident memory) on adversarial input up
   to the 1 MiB limit (deep nesting, alias and merge-key bombs, thousand-part dotted keys,
   huge arrays, long strings/lines/numbers, tens of thousands of schema errors), nor
   loads_spec as a whole more than 3 s or 300 MB;
4. lone surrogates and control characters are located errors; messages stay one line;
5. odd pydantic ``loc`` tuples never make the error mapping raise (hypothesis over mutated
   library specs in all three formats, and over random ``loc`` tuples);
6. TOML positions are exact: a keyed value at its key, an array item at the item, a table
   at its header, an element of an array of tables at its ``[[``, for text written in every
   TOML style (headers, dotted keys, inline tables, arrays of tables, multi-line arrays).
"""

from __future__ import annotations

import copy
import gc
import json
import math
import os
import pickle
import random
import re
import time
import tomllib
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic_core import ValidationError

from tests.spec.test_spec_load import JSON_SPEC, TOML_SPEC, YAML_SPEC, pos_of
from tests.support.spec_trees import tree_paths
from tests.support.timeouts import time_limit
from threadmap.errors import SpecError
from threadmap.spec.json_reader import load_json
from threadmap.spec.load import MAX_FILE_BYTES, loads_spec
from threadmap.spec.located import MAX_MESSAGES, Errors, Located
from threadmap.spec.pydantic_errors import _data_path, report_validation_errors
from threadmap.spec.toml_reader import load_toml
from threadmap.spec.yaml_reader import load_yaml

LINE = re.compile(r"^.+:\d+:\d+: .+: .+$")
_PART = r'(?:[A-Za-z_]\w*|\[(?:-?\d+|"(?:[^"\\]|\\.)*")\])'
FIRST = re.compile(rf"^(?P<name>.+?):(?P<line>\d+):(?P<col>\d+): "
                   rf"(?P<path>\(file\)|\(top level\)|{_PART}(?:\.?{_PART})*): (?P<msg>.+)$")
SPECS = sorted((Path(__file__).resolve().parents[2] / "specs").rglob("*.yaml"))
FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.data_too_large])
Mark = tuple[int, int]


def problems(text: str, fmt: str, name: str = "k") -> list[str]:
    """The lines of the SpecError that loading raises; each is located and printable."""
    with time_limit(10, "load"), pytest.raises(SpecError) as ei:
        loads_spec(text, fmt, f"{name}.{fmt}")  # type: ignore[arg-type]
    lines = str(ei.value).split("\n")
    for ln in lines:
        assert LINE.match(ln), ln
        assert ln.isprintable(), ln
        ln.encode("utf-8")
    return lines


def first(text: str, fmt: str) -> tuple[int, int, str, str]:
    """(line, col, path, message) of the first problem."""
    m = FIRST.match(problems(text, fmt)[0])
    assert m, problems(text, fmt)[0]
    return int(m["line"]), int(m["col"]), m["path"], m["msg"]


def sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# ============================================================================= 1. integers

TWO63 = "9223372036854775808"
BIG_DEC = "9" * 5000          # past Python's 4300-digit int/str limit
BIG_HEX = "0x" + "f" * 5000

# (id, format, text, literal whose position is expected, path)
BIG_INTS: list[tuple[str, str, str, str, str]] = [
    (f"yaml-{label}", "yaml", sub(YAML_SPEC, "bank_conflicts: 0", f"bank_conflicts: {lit}"), lit,
     "expect.bank_conflicts")
    for label, lit in [
        ("2^63", TWO63), ("-2^63-1", "-9223372036854775809"), ("underscores", "9_223_372_036_854_775_808"),
        ("hex", "0x8000000000000000"), ("octal", "01000000000000000000000"),
        ("binary", "0b1" + "0" * 63), ("sexagesimal", "1" + ":00" * 11), ("5000-digits", BIG_DEC),
        ("5000-hex", BIG_HEX), ("5000-binary", "0b" + "1" * 5000), ("!!int-0o", "!!int 0o1" + "0" * 21),
        ("sexagesimal-long", "1" + ":59" * 3000),
    ]
] + [
    ("yaml-align", "yaml", sub(YAML_SPEC, "align: 256}", "align: 1" + "0" * 30 + "}"), "1" + "0" * 30,
     "tensors.x.align"),
    ("yaml-key", "yaml", sub(YAML_SPEC, "{M: 1024, N: 1024}", "{M: 1024, N: 1024, 99999999999999999999: 1}"),
     "99999999999999999999", "sizes"),
    ("yaml-long-key", "yaml",  # a key past 1024 characters must be explicit
     sub(YAML_SPEC, "sizes: {M: 1024, N: 1024}", f"sizes:\n  M: 1024\n  ? {BIG_DEC}\n  : 1"), BIG_DEC,
     "sizes"),
    ("yaml-item", "yaml", sub(YAML_SPEC, "tile: [16,16]", f"tile: [16,{BIG_HEX}]"), BIG_HEX,
     "stages[0].copy.src.tile[1]"),
] + [
    (f"json-{label}", "json", sub(JSON_SPEC, '"bank_conflicts": 0', f'"bank_conflicts": {lit}'), lit,
     "expect.bank_conflicts")
    for label, lit in [("2^63", TWO63), ("-2^63-1", "-9223372036854775809"), ("99-digits", "9" * 99)]
] + [
    (f"toml-{label}", "toml", sub(TOML_SPEC, "bank_conflicts = 0", f"bank_conflicts = {lit}"), lit,
     "expect.bank_conflicts")
    for label, lit in [
        ("2^63", TWO63), ("-2^63-1", "-9223372036854775809"), ("underscores", "9_223_372_036_854_775_808"),
        ("hex", "0x8000000000000000"), ("octal", "0o1" + "0" * 21), ("binary", "0b1" + "0" * 63),
        ("5000-digits", BIG_DEC), ("5000-hex", BIG_HEX), ("leading-zeros-hex", "0x" + "0" * 5000 + "1" * 17),
    ]
] + [
    ("toml-item", "toml", sub(TOML_SPEC, 'tile = [16, 16], at = ["bx"',
                              f'tile = [16, {BIG_HEX}], at = ["bx"'), BIG_HEX, "stages[0].copy.src.tile[1]"),
    ("toml-1MiB", "toml", sub(TOML_SPEC, "bank_conflicts = 0",
                              "bank_conflicts = " + "9" * (MAX_FILE_BYTES - 2000)),
     "9" * 50, "expect.bank_conflicts"),
]


@pytest.mark.parametrize("fmt,text,literal,path", [c[1:] for c in BIG_INTS], ids=[c[0] for c in BIG_INTS])
def test_integers_beyond_64_bits_are_located(fmt: str, text: str, literal: str, path: str) -> None:
    line, col, got_path, msg = first(text, fmt)
    assert got_path == path, msg
    assert "does not fit in 64 bits" in msg and len(msg) < 120, msg
    assert (line, col) == pos_of(text, literal), msg  # the literal itself, in every format


@pytest.mark.parametrize("fmt,old,new", [
    ("yaml", "bank_conflicts: 0", "bank_conflicts: {}"),
    ("json", '"bank_conflicts": 0', '"bank_conflicts": {}'),
    ("toml", "bank_conflicts = 0", "bank_conflicts = {}")])
def test_64_bit_bounds_are_admitted(fmt: str, old: str, new: str) -> None:
    text = {"yaml": YAML_SPEC, "json": JSON_SPEC, "toml": TOML_SPEC}[fmt]
    ls = loads_spec(sub(text, old, new.format(2**63 - 1)), fmt)  # type: ignore[arg-type]
    assert ls.spec.expect.bank_conflicts == 2**63 - 1
    msg = first(sub(text, old, new.format(-2**63)), fmt)[3]
    assert "greater than or equal to 0" in msg  # the schema's word, not the reader's


@pytest.mark.parametrize("fmt,field,value", [
    (fmt, field, value)
    for fmt, values in [("yaml", [".nan", ".inf", "-.inf", "1.0e+400", "1." + "9" * 5000, "1e400"]),
                        ("json", ["1e400", "-1e400", "1." + "9" * 90, "1E-400"]),
                        ("toml", ["nan", "inf", "-inf", "1e400", "1." + "9" * 5000, "-0.0"])]
    for value in values for field in ("threads", "bank_conflicts", "sectors_per_request")])
def test_floats_never_raise_past_the_reader(fmt: str, field: str, value: str) -> None:
    text, old = {"yaml": (YAML_SPEC, "bank_conflicts: 0"), "json": (JSON_SPEC, '"bank_conflicts": 0'),
                 "toml": (TOML_SPEC, "bank_conflicts = 0")}[fmt]
    if field == "threads":
        old = {"yaml": "threads: 256", "json": '"threads": 256', "toml": "threads = 256"}[fmt]
    sep = {"yaml": ": ", "json": ": ", "toml": " = "}[fmt]
    key = json.dumps(field) if fmt == "json" else field
    try:
        loads_spec(sub(text, old, f"{key}{sep}{value}"), fmt)  # type: ignore[arg-type]
    except SpecError as e:
        assert all(LINE.match(ln) for ln in str(e).split("\n")), e


@pytest.mark.parametrize("doc", [
    "a: &a {x: 1, y: 1}\nb: &b {x: 2, z: 2}\nc: {<<: [*a, *b], y: 3}\n",
    "a: &a {x: 1}\nc: {<<: *a, x: 5}\n",
    "a: &a {x: 1}\nb: &b {<<: *a, y: 2}\nc: {<<: *b}\n",
    "a: &a {x: 1}\nc: {<<: *a, =: 4}\n",
])
def test_yaml_merge_keys_as_pyyaml(doc: str) -> None:
    """Merge keys are resolved by the reader (bounded), as PyYAML resolves them."""
    assert load_yaml(doc, "k").data == yaml.safe_load(doc)


@pytest.mark.parametrize("tagged", ['!!int ""', '!!int "-"', '!!int "+"', '!!float ""', '!!bool ""',
                                    '!!int "0x"', '!!int "1e5"', '!!int "١٢"', '!!timestamp "2001-13-45"',
                                    '!!float "1:2:x"', '!!binary "AAAA"'])
def test_yaml_explicit_tags_are_located(tagged: str) -> None:
    """PyYAML's constructors raise IndexError/KeyError/ValueError on these (or give bytes)."""
    text = re.sub(r"^name: .*$", lambda m: f"name: {tagged}", YAML_SPEC, count=1, flags=re.M)
    assert first(text, "yaml")[:3] == (*pos_of(text, tagged), "name")


# ============================================================================= 2. TOML locating is linear


def many_errors_toml(n_tensors: int) -> str:
    """The TOML spec plus ``n_tensors`` tensors in [tables] with a bad memory kind, and a
    multi-line array of bad grid entries: one error each."""
    extra = "".join(f'[tensors.t{i}]\nmemory = "texture"\nlayout = "(4,4):(4,1)"\n'
                    for i in range(n_tensors))
    return TOML_SPEC + extra


def test_toml_errors_located_in_linear_time() -> None:
    text = many_errors_toml(1800)
    assert 95_000 < len(text) < 110_000
    loads = []
    for _ in range(3):  # best of 3: the first may pay for imports and caches
        t = time.process_time()
        lines = problems(text, "toml")
        loads.append(time.process_time() - t)
    assert min(loads) < 0.5, loads  # 24 KB took 17 s before
    assert lines[-1].endswith(f"... and {1800 - MAX_MESSAGES} more problems"), lines[-1]
    for ln in lines[:MAX_MESSAGES]:
        m = FIRST.match(ln)
        assert m and m["path"].endswith(".memory"), ln
        i = int(m["path"].split(".")[1][1:])
        assert (int(m["line"]), int(m["col"])) == pos_of(text, 'memory = "texture"', i), ln


# ============================================================================= 3. adversarial input

MiB = MAX_FILE_BYTES
N = MiB - 200


def adversarial() -> Iterator[tuple[str, str, str]]:
    """(id, format, text): inputs up to the 1 MiB limit that aim at time or memory."""
    levels = "abcdefghij"
    yield "yaml-alias-bomb", "yaml", "a: &a [1,2,3,4,5,6,7,8,9]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip(levels, levels[1:]))
    yield "yaml-alias-many", "yaml", "a: &a [1, 2]\nb: [" + "*a," * (N // 3 - 10) + "*a]"
    yield "yaml-merge-bomb", "yaml", "a0: &a0 {" + ", ".join(f"k{i}: 1" for i in range(45_000)) + "}\n" \
        + "a1: {<<: [" + ", ".join(["*a0"] * 5000) + "]}\n"
    yield "yaml-merge-chain", "yaml", "a0: &a0 {x: 1}\n" + "".join(
        f"a{i}: &a{i} {{<<: [{', '.join([f'*a{i - 1}'] * 10)}]}}\n" for i in range(1, 2000))
    yield "yaml-merge-recursive", "yaml", "a: &a {<<: *a}\n"
    yield "yaml-merge-nested", "yaml", "a: " + "{<<: " * 20_000 + "{x: 1}" + "}" * 20_000 + "\n"
    yield "yaml-deep-flow", "yaml", "a: " + "[" * (N // 2) + "]" * (N // 2)
    yield "yaml-deep-block", "yaml", "".join(" " * i + "- \n" for i in range(1400))
    yield "yaml-wide-list", "yaml", "a: [" + "1," * (N // 2 - 10) + "1]"
    yield "yaml-tiny-maps", "yaml", "a: [" + "{}," * (N // 3 - 10) + "{}]"
    yield "yaml-many-keys", "yaml", "".join(f"k{i}: {i}\n" for i in range(N // 16))
    yield "yaml-long-string", "yaml", "name: " + "x" * N
    yield "yaml-long-escapes", "yaml", 'name: "' + "\\t" * (N // 2) + '"'
    yield "yaml-long-key", "yaml", "k" * N + ": 1"
    yield "yaml-long-int", "yaml", "threads: " + "9" * N
    yield "yaml-long-sexagesimal", "yaml", "threads: 1" + ":59" * (N // 3)
    yield "yaml-long-float", "yaml", "threads: 1." + "1" * N
    yield "yaml-long-line-comment", "yaml", "#" + "c" * N + "\nname: x"
    yield "json-deep", "json", '{"a": ' + "[" * (N // 2) + "]" * (N // 2) + "}"
    yield "json-wide", "json", "[" + "1," * (N // 2 - 10) + "1]"
    yield "json-tiny-objects", "json", "[" + "{}," * (N // 3 - 10) + "{}]"
    yield "json-long-string", "json", '{"name": "' + "x" * N + '"}'
    yield "json-long-escapes", "json", '{"name": "' + "\\u0041" * (N // 6) + '"}'
    yield "json-long-key", "json", '{"' + "k" * N + '": 1}'
    yield "json-long-number", "json", '{"threads": ' + "9" * N + "}"
    yield "toml-dotted-20000", "toml", "a" + ".a" * 20000 + " = 1"
    yield "toml-dotted-1MiB", "toml", "a" + ".a" * (N // 2) + " = 1"
    yield "toml-dotted-many", "toml", "".join(f"x{i}" + ".a" * 63 + " = 1\n" for i in range(N // 140))
    yield "toml-header-long", "toml", "[" + "a." * (N // 2) + "a]\n"
    yield "toml-headers-many", "toml", "".join(f"[t{i}]\n" for i in range(N // 10))
    yield "toml-tables-of-arrays", "toml", "[[a]]\n" * (N // 6)
    yield "toml-deep-arrays", "toml", "a = " + "[" * N
    yield "toml-deep-inline-tables", "toml", "a = " + "{b = " * (N // 5)
    yield "toml-wide-array", "toml", "a = [" + "1," * (N // 2 - 10) + "1]"
    yield "toml-tiny-tables", "toml", "a = [" + "{}," * (N // 3 - 10) + "{}]"
    yield "toml-many-keys", "toml", "".join(f"k{i} = 1\n" for i in range(N // 13))
    yield "toml-long-string", "toml", 'name = "' + "x" * N + '"'
    yield "toml-long-ml-string", "toml", 'name = """' + "x\n" * (N // 2) + '"""'
    yield "toml-long-escapes", "toml", 'name = "' + "\\t" * (N // 2) + '"'
    yield "toml-unterminated-ml", "toml", "a = 1\n" + 'name = """' + "\\\"\"\"x" * (N // 6)
    yield "toml-long-key", "toml", "k" * N + " = 1"
    yield "toml-long-int", "toml", "threads = " + "9" * N
    yield "toml-long-hex", "toml", "threads = 0x" + "f" * N
    yield "toml-long-line-comment", "toml", "#" + "c" * N + "\nname = 1"
    # tens of thousands of schema errors (each key and value counts towards the limit)
    yield "json-many-keys", "json", "{" + ",".join(f'"k{i}":1' for i in range(N // 11)) + "}"
    yield "yaml-many-bad-sizes", "yaml", sub(YAML_SPEC, "sizes: {M: 1024, N: 1024}",
                                             "sizes:\n" + "".join(f"  s{i}: x\n" for i in range(49_000)))
    yield "toml-many-bad-sizes", "toml", sub(TOML_SPEC, "M = 1024\nN = 1024",
                                             "".join(f"s{i} = 'x'\n" for i in range(49_000)))
    yield "json-many-bad-stages", "json", sub(JSON_SPEC, '"stages": [', '"stages": [' + "[]," * 99_000)


ADVERSARIAL = list(adversarial())
READERS: dict[str, Callable[[str, str], Any]] = {"yaml": load_yaml, "json": load_json, "toml": load_toml}
READER_SECONDS, READER_BYTES = 2.0, 200 << 20  # a reader, on any input up to 1 MiB
# loads_spec end to end: pydantic's ValidationError for the 2*10^5 errors that 10^5 values
# can make is ~100 MB by itself (see json-many-bad-stages)
LOAD_SECONDS, LOAD_BYTES = 3.0, 300 << 20


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for ln in f:
            if ln.startswith(field + ":"):
                return int(ln.split()[1]) * 1024
    raise KeyError(field)


def measured(fn: Callable[[], Any]) -> tuple[float, int, Any]:
    """(CPU seconds, peak memory in bytes, result) of ``fn()``, run in a forked child: the rise
    of its peak resident set (C allocations included) over what it inherited.  CPU time, not
    wall time: a bound on the work, which other jobs sharing the machine do not inflate.  The
    result comes back pickled (after both are measured).  Where the peak cannot be reset (no
    /proc), the peak of Python allocations by tracemalloc instead.  Where ``fn`` fails in the
    child, it is run again here, so the failure shows as its own."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets the peak resident set (VmHWM) to the current size
    except OSError:
        t = time.process_time()
        result = fn()
        seconds = time.process_time() - t
        tracemalloc.start()
        try:
            fn()
            return seconds, tracemalloc.get_traced_memory()[1], result
        finally:
            tracemalloc.stop()
    gc.collect()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: measure, report, and leave without running pytest's exit code
        code = 1
        try:
            os.close(r)
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            before = _status("VmRSS")
            t = time.process_time()
            result = fn()
            seconds = time.process_time() - t
            peak = _status("VmHWM") - before
            with os.fdopen(w, "wb") as out:
                pickle.dump((seconds, peak, result), out)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        fn()  # the failure, in-process
        raise AssertionError("the measured call failed in the child but not in-process")
    seconds, peak, result = pickle.loads(data)
    return float(seconds), int(peak), result


def read_only(fmt: str, text: str) -> None:
    try:
        READERS[fmt](text, "k")
    except SpecError:
        pass


@pytest.mark.parametrize("fmt,text", [c[1:] for c in ADVERSARIAL], ids=[c[0] for c in ADVERSARIAL])
def test_adversarial_input_is_bounded(fmt: str, text: str) -> None:
    """Every input fails cleanly; the reader within 2 s and 200 MB (peak resident memory),
    all of loads_spec within 3 s and 300 MB."""
    assert len(text) <= MiB
    # the contract (problems() checks every line), measured in a child
    seconds, peak, lines = measured(lambda: problems(text, fmt))
    assert all(len(ln) < 500 for ln in lines), "a problem line quotes too much of the input"
    assert seconds < LOAD_SECONDS and peak < LOAD_BYTES, (seconds, peak >> 20, lines[0])
    seconds, peak, _ = measured(lambda: read_only(fmt, text))
    assert seconds < READER_SECONDS and peak < READER_BYTES, (seconds, peak >> 20, lines[0])


# ============================================================================= 4. strings

STRINGS: list[tuple[str, str, str, str, str]] = [  # (id, format, text, needle, path)
    ("json-surrogate", "json", sub(JSON_SPEC, '"name": "CuTe', '"name": "\\ud800CuTe'), '"\\ud800', "name"),
    ("json-low-surrogate", "json", sub(JSON_SPEC, '"name": "CuTe', '"name": "CuTe\\udfff'), '"CuTe\\udfff',
     "name"),
    ("json-surrogate-key", "json", sub(JSON_SPEC, '"sA": {', '"s\\ud800": {'), '"s\\ud800"',
     'tensors["s\\ud800"]'),
    ("json-nul", "json", sub(JSON_SPEC, '"name": "CuTe', '"name": "\\u0000CuTe'), '"\\u0000', "name"),
    ("json-esc", "json", sub(JSON_SPEC, '"layout": "(M,N)', '"layout": "\\u001b[31m(M,N)'), '"\\u001b',
     "tensors.x.layout"),
    ("json-newline-key", "json", sub(JSON_SPEC, '"sA": {', '"s\\nA": {'), '"s\\nA"', 'tensors["s\\nA"]'),
    ("yaml-nul", "yaml", sub(YAML_SPEC, "name: CuTe", 'name: "\\0"\nnamed: CuTe'), '"\\0', "name"),
    ("yaml-esc", "yaml", sub(YAML_SPEC, "element: f32", 'element: "\\ef32"'), '"\\ef32', "element"),
    ("yaml-c1", "yaml", sub(YAML_SPEC, "element: f32", 'element: "\\x85"'), '"\\x85', "element"),
    ("yaml-tab-key", "yaml", sub(YAML_SPEC, "sA: {memory", '"s\\tA": {memory'), '"s\\tA"',
     'tensors["s\\tA"]'),
    ("yaml-nul-key", "yaml", sub(YAML_SPEC, "{M: 1024, N: 1024}", '{M: 1024, "N\\0": 1024}'), '"N\\0"',
     'sizes["N\\u0000"]'),
    ("toml-nul", "toml", sub(TOML_SPEC, 'element = "f32"', 'element = "\\u0000f32"'), "element", "element"),
    ("toml-backspace", "toml", sub(TOML_SPEC, 'element = "f32"', 'element = "f\\b32"'), "element", "element"),
    ("toml-nul-key", "toml", sub(TOML_SPEC, "M = 1024", '"M\\u0000" = 1024'), '"M\\u0000"',
     'sizes["M\\u0000"]'),
]


@pytest.mark.parametrize("fmt,text,needle,path", [c[1:] for c in STRINGS], ids=[c[0] for c in STRINGS])
def test_unprintable_strings_are_located(fmt: str, text: str, needle: str, path: str) -> None:
    line, col, got_path, msg = first(text, fmt)
    assert (line, col) == pos_of(text, needle), msg
    assert re.search(r"holds U\+[0-9A-F]{4} \((a lone surrogate|a control character|an unprintable "
                     r"character)", msg), msg
    assert got_path.encode("unicode_escape").decode() == path.encode("unicode_escape").decode() or \
        got_path == path.replace("\\u0000", "\\x00"), (got_path, path)


@pytest.mark.parametrize("fmt,text", [
    ("yaml", sub(YAML_SPEC, "name: CuTe", "name: \ud800CuTe")),
    ("json", sub(JSON_SPEC, '"name": "CuTe', '"name": "\udc00CuTe')),
    ("toml", sub(TOML_SPEC, 'name = "CuTe', 'name = "\ud800CuTe')),
    ("toml", sub(TOML_SPEC, "spec = 1", "spec = 1 # \ud800")),
], ids=["yaml", "json", "toml", "toml-comment"])
def test_lone_surrogates_in_text_are_located(fmt: str, text: str) -> None:
    """Text handed to loads_spec as a str may hold lone surrogates (a decoded file cannot)."""
    i = re.search("[\ud800-\udfff]", text).start()  # type: ignore[union-attr]
    line, col, path, msg = first(text, fmt)
    assert (line, col, path) == (text.count("\n", 0, i) + 1, i - text.rfind("\n", 0, i), "(file)")
    assert "lone surrogate" in msg


def test_printable_text_is_kept() -> None:
    """Tabs and newlines in values, and any printable Unicode, load as they are."""
    text = sub(YAML_SPEC, "name: CuTe transpose",
               'description: "a\\tb\\nc \\u2028 ✓ 𝔸"\nname: CuTe transpose')
    assert loads_spec(text, "yaml").spec.description == "a\tb\nc \u2028 ✓ 𝔸"


# ============================================================================= 5. pydantic error mapping

# a known bug outside the readers (semantics.py indexes p[-2] of the one-part path
# ('threads',) when the threads expression names an undefined size): reported, tolerated
# by the fuzz below, and pinned here so that fixing it shows up
KNOWN_OUTSIDE = "semantics.py: undefined name in threads"


def known_outside(e: BaseException) -> str | None:
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if (isinstance(e, IndexError) and tb is not None
            and tb.tb_frame.f_code.co_filename.endswith("semantics.py")
            and tb.tb_frame.f_code.co_name == "check_semantics"):
        return KNOWN_OUTSIDE
    return None


def test_undefined_name_in_threads_is_located() -> None:
    lines = problems(sub(YAML_SPEC, "threads: 256", "threads: K"), "yaml")
    assert any(": threads: undefined name 'K'" in ln for ln in lines), lines


@pytest.mark.parametrize("fmt,text,path", [
    ("yaml", sub(YAML_SPEC, "threads: 256", "thread: 256"), "thread"),
    ("json", sub(JSON_SPEC, '"threads": 256', '"thread": 256'), "thread"),
    ("toml", sub(TOML_SPEC, "threads = 256", "thread = 256"), "thread"),
])
def test_top_level_typo(fmt: str, text: str, path: str) -> None:
    lines = problems(text, fmt)
    assert any(f": {path}: unknown field 'thread'" in ln for ln in lines), lines
    assert any(": threads: missing required field 'threads'" in ln for ln in lines), lines


ODD_KEYS: list[tuple[str, str, str, bool]] = [  # (YAML key, its path shown, message, at the key)
    ("1", "[1]", "Keys should be strings", True),
    ("true", '["True"]', "Keys should be strings", True),
    ("null", '["None"]', "Keys should be strings", True),
    ("1.5", '["1.5"]', "Keys should be strings", True),
    ("2001-12-14", '["datetime.date(2001, 12, 14)"]', "Keys should be strings", True),
    ("''", '[""]', "unknown field ''", True),
    ("a.b", '["a.b"]', "unknown field 'a.b'", True),
    ("'a\"b'", '["a\\"b"]', "unknown field 'a\"b'", True),
    ("'[key]'", '["[key]"]', "unknown field '[key]'", True),
    ("k" * 300, '["' + "k" * 37 + '..."]', "unknown field 'k", True),
]


@pytest.mark.parametrize("key,shown,msg,at_key", ODD_KEYS, ids=[k[1] for k in ODD_KEYS])
def test_odd_top_level_keys(key: str, shown: str, msg: str, at_key: bool) -> None:
    text = sub(YAML_SPEC, "element: f32", f"{key}: f32")
    line, col, path, got = first(text, "yaml")
    assert (line, col) == pos_of(text, f"{key}: f32"), got
    assert msg in got and len(got) < 200, got
    assert path == shown


@pytest.mark.parametrize("key", ["1", "true", "null", "1.5", "2001-12-14"])
def test_odd_size_keys(key: str) -> None:
    """A size named by a non-string key is located at that key (pydantic's loc ends '[key]')."""
    text = sub(YAML_SPEC, "{M: 1024, N: 1024}", f"{{M: 1024, N: 1024, {key}: 3}}")
    line, col, path, msg = first(text, "yaml")
    assert (line, col) == pos_of(text, f"{key}: 3"), (path, msg)
    assert path.startswith("sizes")


# ---- hypothesis over odd loc tuples: the mapping itself never raises

loc_items = st.one_of(st.integers(-3, 12), st.sampled_from(
    ["stages", "copy", "src", "tensors", "x", "sizes", "M", "[key]", "int", "str", "None", "1", "",
     "SizeRange", "literal['barrier']", "function-after[_order(), SizeRange]", "a.b", 'q"']))
odd_keys = st.one_of(st.sampled_from(["stages", "copy", "x", "M", "[key]", "None", ""]),
                     st.none(), st.integers(-2, 3), st.booleans(), st.floats())
odd_data = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=3)),
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(odd_keys, c, max_size=4)),
    max_leaves=15)
ERROR_TYPES = ["missing", "extra_forbidden", "invalid_key", "int_type", "string_type", "model_type",
               "literal_error", "dict_type", "list_type", "greater_than_equal", "value_error"]


def _line_error(etype: str, loc: tuple[Any, ...], value: Any) -> dict[str, Any]:
    ctx = {"missing": None, "extra_forbidden": None, "invalid_key": None, "int_type": None,
           "string_type": None, "model_type": {"class_name": "Side"}, "literal_error": {"expected": "'a'"},
           "dict_type": None, "list_type": None, "greater_than_equal": {"ge": 1},
           "value_error": {"error": ValueError("boom")}}[etype]
    err: dict[str, Any] = {"type": etype, "loc": loc, "input": value}
    if ctx is not None:
        err["ctx"] = ctx
    return err


@settings(FUZZ, max_examples=500)
@given(odd_data, st.lists(st.tuples(st.sampled_from(ERROR_TYPES), st.lists(loc_items, max_size=6).map(tuple),
                                    odd_data), min_size=1, max_size=6))
def test_error_mapping_never_raises(data: Any, errors: list[tuple[str, tuple[Any, ...], Any]]) -> None:
    e = ValidationError.from_exception_data("Spec", [_line_error(t, loc, v) for t, loc, v in errors])
    errs = Errors("k.yaml", Located(data))
    for t, loc, _ in errors:
        _data_path(data, loc, t)
    report_validation_errors(e, data, errs)
    with pytest.raises(SpecError) as ei:
        errs.raise_()
    assert all(LINE.match(ln) for ln in str(ei.value).split("\n"))


# ---- hypothesis over mutated library specs in YAML, JSON and TOML

def _load_corpus() -> list[dict[str, Any]]:
    out = [yaml.safe_load(YAML_SPEC)]
    out += [yaml.safe_load(p.read_text()) for p in SPECS]
    return out


CORPUS = _load_corpus()


ODD_KEY_VALUES: list[Any] = [1, 0, True, False, None, 1.5, "", "a.b", 'a"b', "[key]", "None", "int",
                             "Copy", "k" * 80, "é", " threads", "threads ", "Threads"]
WRONG_VALUES: list[Any] = [0, -1, 1, 2**31, 2**63 - 1, -2**63, 1.5, float("nan"), float("inf"), True, None,
                           "", "x", "K", "M / 0", "(((", [], [1], {}, {"a": 1}, [[1]], {"copy": []},
                           "barrier", {"tensor": "x"}, ["barrier"]]


def typo(k: str, how: int) -> str:
    return [k[:-1], k + "s", k.upper(), k + " ", "_" + k, k.replace("_", "-"), k[::-1]][how % 7] or "_"


@st.composite
def mutated_spec(draw: st.DrawFn) -> dict[str, Any]:
    """A library spec with 1..4 mutations: drop, rename (typo) or oddly-keyed keys, wrong
    types, wrong nesting (wrap, unwrap, move a subtree)."""
    d = copy.deepcopy(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.integers(1, 4))):
        paths = tree_paths(d)[1:]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent: Any = d
        for c in path[:-1]:
            parent = parent[c]
        last = path[-1]
        kind = draw(st.sampled_from(["drop", "rename", "odd-key", "wrong", "wrap", "unwrap", "move"]))
        if kind == "drop":
            del parent[last]
        elif kind == "rename" and isinstance(parent, dict):
            parent[typo(str(last), draw(st.integers(0, 6)))] = parent.pop(last)
        elif kind == "odd-key" and isinstance(parent, dict):
            parent[draw(st.sampled_from(ODD_KEY_VALUES))] = parent.pop(last)
        elif kind == "wrong":
            parent[last] = copy.deepcopy(draw(st.sampled_from(WRONG_VALUES)))
        elif kind == "wrap":
            v = parent[last]
            parent[last] = draw(st.sampled_from([[v], {"x": v}, {str(last): v}]))
        elif kind == "unwrap" and isinstance(parent[last], dict | list) and parent[last]:
            v = parent[last]
            parent[last] = v[0] if isinstance(v, list) else next(iter(v.values()))
        elif kind == "move":
            target = draw(st.sampled_from(tree_paths(d)))
            node: Any = d
            for c in target:
                node = node[c]
            if isinstance(node, dict) and node is not parent[last]:
                node[draw(st.sampled_from(["copy", "stages", "src", "tensors", str(last)]))] = \
                    copy.deepcopy(parent[last])
    return d


def duplicate_line(text: str, where: int) -> str:
    """``text`` with one of its ``key: value`` / ``key = value`` / ``"key": value`` lines
    repeated (a duplicate key, or a key at the wrong level)."""
    lines = text.split("\n")
    keyed = [i for i, ln in enumerate(lines) if re.match(r'^\s*("?[\w.-]+"?\s*[:=]|- )', ln)]
    if not keyed:
        return text
    i = keyed[where % len(keyed)]
    return "\n".join(lines[:i + 1] + [lines[i]] + lines[i + 1:])


def dump(data: Any, fmt: str, styles: Callable[[list[str]], str]) -> str:
    if fmt == "yaml":
        return yaml.safe_dump(data, sort_keys=False, width=70, allow_unicode=True)
    if fmt == "json":
        return json.dumps(data, indent=1, ensure_ascii=False)
    w = TomlWriter(styles)
    w.document(data)
    return w.text()


def check_contract(text: str, fmt: str) -> None:
    """Loads, or raises SpecError whose every line is located and one line (the brief's
    regex); nothing else escapes (except the one known bug outside the readers)."""
    try:
        with time_limit(10, "load"):
            loads_spec(text, fmt, f"spec.{fmt}")  # type: ignore[arg-type]
        event(f"{fmt}: loads")
    except SpecError as e:
        lines = str(e).split("\n")
        assert lines and all(LINE.match(ln) and ln.isprintable() for ln in lines), lines
        str(e).encode("utf-8")
        event(f"{fmt}: SpecError " + ("in reading" if ": (file): " in lines[0] else "in validating"))
    except IndexError as e:
        if known_outside(e) is None:
            raise
        event(f"{fmt}: {KNOWN_OUTSIDE}")


@pytest.mark.parametrize("fmt", ["yaml", "json", "toml"])
@settings(FUZZ, max_examples=400)
@given(data=mutated_spec(), seed=st.integers(0, 2**32), dup=st.one_of(st.none(), st.integers(0, 10**6)))
def test_mutated_library_specs_fail_cleanly(fmt: str, data: dict[str, Any], seed: int,
                                            dup: int | None) -> None:
    text = dump(data, fmt, random.Random(seed).choice)  # the seed draws the TOML styles
    if dup is not None:
        text = duplicate_line(text, dup)
    check_contract(text, fmt)


@pytest.mark.parametrize("i", range(len(CORPUS)))
@pytest.mark.parametrize("fmt", ["yaml", "json", "toml"])
def test_library_specs_load_in_every_format(i: int, fmt: str) -> None:
    """The corpus the fuzz mutates is valid in all three formats (TOML in drawn styles)."""
    rnd = random.Random(i)
    ls = loads_spec(dump(CORPUS[i], fmt, rnd.choice), fmt)  # type: ignore[arg-type]
    assert ls.spec == loads_spec(dump(CORPUS[i], "yaml", rnd.choice), "yaml").spec


# ============================================================================= 6. TOML positions

BARE = re.compile(r"[A-Za-z0-9_-]+")


def toml_str(s: str) -> str:
    return '"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else "\\" + c if c in '"\\'
                         else c for c in s) + '"'


def toml_key(k: Any) -> str:
    k = k if isinstance(k, str) else json.dumps(k) if k is None or isinstance(k, bool) else str(k)
    return k if BARE.fullmatch(k) else toml_str(k)


def toml_scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if v is None:
        return '"null"'  # TOML has no null
    return toml_str(str(v))


class TomlWriter:
    """Data -> TOML in drawn styles, recording where the reader must locate each path:

    a keyed value (``k = v``, also in an inline table, also dotted) at its key; a table
    opened by a header at the header's last key; a table made by a dotted key at that part
    (its first use); an array item at the item; an element of an array of tables at its
    ``[[``.  Tables are written as headers, inline tables or dotted keys; arrays of tables
    as ``[[...]]`` or inline arrays, single- or multi-line (with comments)."""

    def __init__(self, choose: Callable[[list[str]], str]) -> None:
        self.choose = choose
        self.lines: list[str] = []
        self.cur = ""
        self.marks: dict[tuple[Any, ...], Mark] = {}

    def here(self) -> Mark:
        return (len(self.lines) + 1, len(self.cur) + 1)

    def newline(self) -> None:
        self.lines.append(self.cur)
        self.cur = ""

    def text(self) -> str:
        return "\n".join([*self.lines, self.cur]) + "\n"

    def style(self, v: Any, section: bool) -> str:
        if isinstance(v, dict) and v:
            return self.choose(["header", "inline", "dotted"] if section else ["inline", "dotted"])
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v) and section:
            return self.choose(["aot", "inline"])
        return "inline"

    def document(self, data: dict[str, Any]) -> None:
        self.table((), (), data)

    def table(self, path: tuple[Any, ...], header: tuple[Any, ...], d: dict[Any, Any]) -> None:
        """The body of a table opened by a header (or the document): key/values first, then
        sub-tables and arrays of tables."""
        later = []
        for k, v in d.items():
            if v is None:
                continue
            s = self.style(v, section=True)
            if s in ("header", "aot"):
                later.append((k, v, s))
            else:
                self.assignment(path, [k], v, s)
                self.newline()
        for k, v, s in later:
            keys = (*header, k)
            if s == "header":
                self.header(keys, (*path, k), aot=False)
                self.table((*path, k), keys, v)
            else:
                for i, el in enumerate(v):
                    self.header(keys, (*path, k, i), aot=True)
                    self.table((*path, k, i), keys, el)

    def header(self, keys: tuple[Any, ...], path: tuple[Any, ...], aot: bool) -> None:
        if self.cur:
            self.newline()
        start = self.here()
        self.cur += self.choose(["[[", "[[ "]) if aot else self.choose(["[", "[ "])
        for i, k in enumerate(keys):
            if i:
                self.cur += self.choose([".", " . "])
            at = self.here()
            self.cur += toml_key(k)
        self.cur += " ]]" if aot else "]"
        if aot:
            self.marks.setdefault(path[:-1], at)
            self.marks[path] = start
        else:
            self.marks[path] = at
        self.cur += self.choose(["", "  # header"])
        self.newline()

    def assignment(self, table: tuple[Any, ...], parts: list[Any], v: Any, style: str) -> None:
        """``p1.p2 = v`` (a dotted dict becomes one assignment per leaf, on this line and
        the next ones: the caller ends the last line)."""
        if style == "dotted":
            items = [(k, x) for k, x in v.items() if x is not None]
            for j, (k, x) in enumerate(items):
                if j:
                    self.newline()
                self.assignment(table, [*parts, k], x, self.style(x, section=False))
            if not items:
                self.assignment(table, parts, {}, "inline")
            return
        path = table
        for i, p in enumerate(parts):
            if i:
                self.cur += "."
            path = (*path, p)
            if i < len(parts) - 1:
                self.marks.setdefault(path, self.here())
            else:
                self.marks[path] = self.here()
            self.cur += toml_key(p)
        self.cur += self.choose([" = ", "=", "  =  "])
        self.value(path, v)

    def value(self, path: tuple[Any, ...], v: Any) -> None:
        if isinstance(v, dict):
            self.cur += "{"
            items = [(k, x) for k, x in v.items() if x is not None]
            for j, (k, x) in enumerate(items):
                self.cur += ", " if j else self.choose(["", " "])
                s = self.style(x, section=False)
                if s == "dotted":  # dotted keys inside an inline table: one line, comma-joined
                    self.inline_dotted(path, [k], x)
                else:
                    self.assignment(path, [k], x, "inline")
            self.cur += self.choose(["}", " }"]) if items else "}"
        elif isinstance(v, list):
            multi = bool(v) and self.choose(["one line", "multi-line"]) == "multi-line"
            self.cur += "["
            for i, x in enumerate(v):
                if multi:
                    self.newline()
                    self.cur += "  "
                elif i:
                    self.cur += ", "
                self.marks[(*path, i)] = self.here()
                self.value((*path, i), x)
                if multi:
                    self.cur += "," + self.choose(["", "  # item"])
            if multi:
                self.newline()
            self.cur += "]"
        else:
            self.cur += toml_scalar(v)

    def inline_dotted(self, table: tuple[Any, ...], parts: list[Any], v: dict[Any, Any]) -> None:
        items = [(k, x) for k, x in v.items() if x is not None]
        if not items:
            self.assignment(table, parts, {}, "inline")
        for j, (k, x) in enumerate(items):
            if j:
                self.cur += ", "
            if isinstance(x, dict) and x and self.choose(["inline", "dotted"]) == "dotted":
                self.inline_dotted(table, [*parts, k], x)
            else:
                self.assignment(table, [*parts, k], x, "inline")


def _walk(d: Any, p: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield p
    if isinstance(d, dict):
        for k, v in d.items():
            yield from _walk(v, (*p, k))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield from _walk(v, (*p, i))


def toml_view(v: Any) -> Any:
    """What the writer writes for ``v``: None entries left out, None items as "null"."""
    if isinstance(v, dict):
        return {str(k): toml_view(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [toml_view(x) for x in v]
    return "null" if v is None else v


def assert_toml_marks(data: dict[str, Any], choose: Callable[[list[str]], str]) -> None:
    w = TomlWriter(choose)
    w.document(data)
    text = w.text()
    parsed, locate = load_toml(text, "k.toml")
    assert parsed == toml_view(data), text
    wrong = {p: (locate(p, False), m) for p, m in w.marks.items() if locate(p, False) != m}
    assert not wrong, (text, wrong)
    unlocated = [p for p in _walk(parsed) if p and p not in w.marks]
    assert not unlocated, (text, unlocated)


printable = st.text(st.characters(exclude_categories=["C", "Zl", "Zp", "Zs"], include_characters=" "),
                    max_size=5)
toml_keys = st.one_of(st.sampled_from(["a", "b", "stages", "copy", "x-y", "9", "a b", "a.b", 'q"', "",
                                       "é", "[key]", "'"]), printable)
toml_values = st.recursive(
    st.one_of(st.booleans(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False),
              st.text(st.characters(exclude_categories=["Cc", "Cs"], include_characters="\t\n\r"),
                      max_size=6)),
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(toml_keys, c, max_size=4)),
    max_leaves=20)


@settings(FUZZ, max_examples=400)
@given(st.dictionaries(toml_keys, toml_values, max_size=6), st.integers(0, 2**32))
def test_toml_marks_are_exact(data: dict[str, Any], seed: int) -> None:
    assert_toml_marks(data, random.Random(seed).choice)


@pytest.mark.parametrize("i", range(len(CORPUS)))
def test_toml_marks_library_specs(i: int) -> None:
    for seed in range(8):
        assert_toml_marks(CORPUS[i], random.Random(seed).choice)


# planted errors: (id, TOML text, needle whose position the first problem must have, path)
TOML_PLANTED: list[tuple[str, str, str, str]] = [
    ("key = value", sub(TOML_SPEC, 'element = "f32"', 'element = "f33"'), 'element = "f33"', "element"),
    ("[table] key", sub(TOML_SPEC, "bank_conflicts = 0", "bank_conflicts = -1"), "bank_conflicts = -1",
     "expect.bank_conflicts"),
    ("[table] unknown key", sub(TOML_SPEC, 'coverage = "exact"', 'coverage = "exact"\ncolour = 1'), "colour",
     "expect.colour"),
    ("inline table", sub(TOML_SPEC, 'alias = "sA"', 'alias = "x"'), 'alias = "x"', "tensors.sB.alias"),
    ("inline array item", sub(TOML_SPEC, '"barrier",', '"barier",'), '"barier"', "stages[1]"),
    ("nested inline array item", sub(TOML_SPEC, 'at = ["by", "bx"]', 'at = ["by", "bw"]'), '"bw"',
     "stages[2].copy.dst.at[1]"),
    ("multi-line array item", sub(TOML_SPEC, 'grid = ["ceil_div(M, 16)", "ceil_div(N, 16)"]',
                                  'grid = [\n  "ceil_div(M, 16)",  # x\n\n  "ceil_div(Q, 16)",\n]'),
     '"ceil_div(Q', "grid[1]"),
    ("dotted key", sub(TOML_SPEC, "[sizes]\nM = 1024\nN = 1024", "sizes.M = 1024\nsizes . N = 0"),
     "N = 0", "sizes.N"),
    ("dotted key table", sub(TOML_SPEC, "[sizes]\nM = 1024\nN = 1024", "sizes.M.min = 5\nsizes.M.max = 2"),
     "M.min", "sizes.M"),
    ("header table missing field",
     sub(TOML_SPEC, 'sA = {memory = "shared", layout = "Sw<4,0,4> o (16,16):(16,1)"}\n', "")
     + '[tensors.sA]\nmemory = "shared"\n', "sA]", "tensors.sA.layout"),
    ("quoted keys",
     sub(sub(TOML_SPEC, "[expect]\n", "['expect']\n"), "bank_conflicts = 0", '"bank_conflicts" = -1'),
     '"bank_conflicts" = -1', "expect.bank_conflicts"),
]

AOT_SPEC = """\
spec = 1
name = "aot"
threads = 256
grid = ["ceil_div(M, 16)", "ceil_div(N, 16)"]

[sizes]
M = 1024
N = 1024

[tensors]
x = {memory = "global", layout = "(M,N):(N,1)"}
y = {memory = "global", layout = "(N,M):(M,1)"}
sA = {memory = "shared", layout = "Sw<4,0,4> o (16,16):(16,1)"}
sB = {memory = "shared", layout = "Sw<4,0,4> o (16,16):(1,16)", alias = "sA"}

[[stages]]
copy.src = {tensor = "x", tile = [16, 16], at = ["bx", "by"], threads = "(16,16):(1,16)"}
copy.dst = {tensor = "sA", threads = "(16,16):(1,16)"}
copy.predicate = "bounds"

[[stages]]
copy = {src = {tensor = "sB", threads = "(16,16):(1,16)"}, dst = {tensor = "y", threads = "(16,16):(1,16)"}}

[[stages]]
[stages.copy]
predicate = "bounds"
[stages.copy.src]
tensor = "sB"
threads = "(16,16):(1,16)"
[stages.copy.dst]
tensor = "y"
tile = [16, 16]
at = ["by", "bx"]
threads = "(16,16):(1,16)"
"""


TOML_PLANTED += [
    ("[[aot]] dotted", sub(AOT_SPEC, 'copy.predicate = "bounds"', 'copy.predicate = "all"'),
     'predicate = "all"', "stages[0].copy.predicate"),
    ("[[aot]] dotted inline", sub(AOT_SPEC, 'copy.dst = {tensor = "sA"', 'copy.dst = {tensor = "sQ"'),
     'tensor = "sQ"', "stages[0].copy.dst.tensor"),
    ("[[aot]] inline", sub(AOT_SPEC, 'dst = {tensor = "y", threads', 'dst = {tensor = "y", threadz'),
     'threadz', "stages[1].copy.dst.threadz"),
    ("[[aot]] element", sub(AOT_SPEC, '[[stages]]\ncopy = {src', '[[stages]]\ncopie = {src'),
     "[[stages]]\ncopie", "stages[1].copy"),
    ("[[aot]] [sub.table]", sub(AOT_SPEC, 'tensor = "y"\ntile', 'tensor = "z"\ntile'), 'tensor = "z"',
     "stages[2].copy.dst.tensor"),
    ("[[aot]] [sub.table] array", sub(AOT_SPEC, 'at = ["by", "bx"]', 'at = ["by", "bq"]'), '"bq"',
     "stages[2].copy.dst.at[1]"),
]


@pytest.mark.parametrize("text,needle,path", [c[1:] for c in TOML_PLANTED], ids=[c[0] for c in TOML_PLANTED])
def test_toml_planted_errors_located(text: str, needle: str, path: str) -> None:
    line, col, got_path, msg = first(text, "toml")
    assert got_path == path, msg
    assert (line, col) == pos_of(text, needle), (msg, text.split("\n")[line - 1])


def test_aot_spec_loads() -> None:
    ls = loads_spec(AOT_SPEC, "toml")
    assert len(ls.spec.stages) == 3
    assert ls.where("stages", 2) == f"<string>:{pos_of(AOT_SPEC, '[[stages]]', 2)[0]}:1"


@settings(FUZZ, max_examples=150)
@given(st.sampled_from(range(len(CORPUS))), st.integers(0, 2**32), st.data())
def test_toml_planted_errors_in_drawn_styles(i: int, seed: int, data: st.DataObject) -> None:
    """A library spec written in drawn TOML styles with one value made wrong: the first
    problem is at the mark the writer recorded for that path (or its key)."""
    d = copy.deepcopy(CORPUS[i])
    leaves = [p for p in _walk(d) if p and not isinstance(_get(d, p), dict | list)]
    path = data.draw(st.sampled_from(leaves))
    _get(d, path[:-1])[path[-1]] = {"bogus": 1}  # a mapping where a scalar belongs
    w = TomlWriter(random.Random(seed).choice)
    w.document(d)
    text = w.text()
    with pytest.raises(SpecError) as ei:
        loads_spec(text, "toml", "k.toml")
    firsts = [FIRST.match(ln) for ln in str(ei.value).split("\n")]
    want = [m for m in firsts if m and m["path"] in (_fmt(path), _fmt((*path, "bogus")))]
    assert want, (str(ei.value), _fmt(path))
    m = want[0]
    got = (int(m["line"]), int(m["col"]))
    assert got in (w.marks[path], w.marks[(*path, "bogus")]), (text, str(ei.value))


def _get(d: Any, path: tuple[Any, ...]) -> Any:
    for c in path:
        d = d[c]
    return d


def _fmt(path: tuple[Any, ...]) -> str:
    from threadmap.spec.located import fmt_path

    return fmt_path(path)


def test_tomllib_data_matches_writer() -> None:
    """The writer writes what it is given (the premise of the mark tests)."""
    for i, d in enumerate(CORPUS):
        w = TomlWriter(random.Random(i).choice)
        w.document(d)
        assert tomllib.loads(w.text()) == toml_view(d)
