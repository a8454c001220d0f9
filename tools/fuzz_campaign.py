"""Crash/fuzz campaign for the ``threadmap`` command line (not collected by pytest).

The promise under test: for any input the CLI exits 0 (pass), 1 (findings), 2 (invalid input,
``FILE:LINE:COL: field.path: message`` for specs) or 3 (internal error, one line naming the
spec), and never prints a traceback, never hangs, never runs away with memory.

Generators (seeded: case ``(gen, idx)`` of seed ``S`` is always the same input):

* ``kernel``    valid kernels built from scratch (thread layouts, tiled copies with every
                copy atom, CUTLASS thread maps, MMA atoms, swizzled smem, aliases, registers,
                barriers, ragged sizes, ranges, arithmetic ``at``), run through ``verify``
                (some ``--exhaustive``), ``simulate`` and ``show``;
* ``mutate``    structural / value / text / byte mutations of the library specs and of
                generated kernels, serialised to YAML, JSON or TOML;
* ``layout``    ``threadmap layout EXPR [OP ARG]...`` with random CuTe and C++ expressions;
* ``threadmap`` ``threadmap threadmap NAME ARGS...``;
* ``options``   option fuzz (``--sizes``, ``--checks``, ``--blocks``, ``--stage``, ``-o``,
                ``--format``, ...) on valid specs, plus odd top-level argv.

Each input runs in a child forked from a warm parent (at most ``--jobs`` at once) under
``RLIMIT_AS`` = 4 GiB and a 60 s alarm, with fresh stdout/stderr (UTF-8; stdout strict,
stderr backslashreplace, as a UTF-8 terminal or pipe) and ``sys.argv`` set, through
:func:`threadmap.cli.entry` (what users run).  Wall time and the child's peak RSS
(``wait4`` rusage) are recorded per input.  A child also records, on a side channel that
does not change its output, the traceback behind an exit-3 internal error.

Usage (from the repository root, with the venv active)::

    python -m tools.fuzz_campaign run --out /tmp/fuzz            # the whole campaign
    python -m tools.fuzz_campaign run --out /tmp/f --only layout --count 500
    python -m tools.fuzz_campaign show kernel 17                 # print one generated input
    python -m tools.fuzz_campaign rerun /tmp/fuzz/failures/X     # rerun a saved failure
    python -m tools.fuzz_campaign minimize /tmp/fuzz/failures/X  # shrink it, keep the signature

Outputs under ``--out``: ``results.jsonl`` (one line per input), ``summary.json`` (counts,
status histograms, maxima) and ``failures/<gen>-<idx>/`` (the input, its output, the trace).
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import yaml  # noqa: E402

from tests.support.spec_trees import toml_dumps, tree_paths  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SPEC_DIR = REPO / "specs"
MEM_LIMIT = 4 << 30
TIME_LIMIT = 60
GENERATORS = ("kernel", "mutate", "layout", "threadmap", "options", "probe")
DEFAULT_COUNTS = {"kernel": 3000, "mutate": 5200, "layout": 7000, "threadmap": 1500, "options": 3500}


# =============================================================================== the input


@dataclass
class Case:
    """One CLI invocation: ``argv`` (after ``threadmap``), run in a fresh directory holding ``files``."""

    gen: str
    idx: int
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)
    #: how to validate the output: json | junit | sarif | sim-json | csv | npz | calc-json
    fmt: str | None = None
    #: the ``-o`` path whose content is validated (relative to the run directory)
    output: str | None = None
    #: a spec command: a status-2 message must be located (FILE:LINE:COL)
    spec_cmd: bool = False
    note: str = ""

    @property
    def key(self) -> str:
        return f"{self.gen}-{self.idx}"

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["files"] = {k: base64.b64encode(v).decode() for k, v in self.files.items()}
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> Case:
        d = dict(d)
        d["files"] = {k: base64.b64decode(v) for k, v in d["files"].items()}
        return Case(**d)


# =============================================================================== serialisation


def dump(data: Any, fmt: str, rng: random.Random | None = None) -> str:
    r = rng or random.Random(0)
    if fmt == "json":
        return json.dumps(data, indent=r.choice([None, 1, 2]), ensure_ascii=r.random() < 0.5)
    if fmt == "toml":
        try:
            return toml_dumps(data, tables=r.random() < 0.5)
        except TypeError:
            return json.dumps(data)  # not TOML at all: must still fail cleanly
    try:
        return yaml.safe_dump(data, sort_keys=False, width=r.choice([60, 200, 10_000]),
                              default_flow_style=r.choice([False, False, None]), allow_unicode=r.random() < 0.5)
    except yaml.YAMLError:
        return json.dumps(data)


FMT_EXT = {"yaml": ".yaml", "json": ".json", "toml": ".toml"}


# =============================================================================== shared vocabulary

ELEMENT_BITS = {"f64": 64, "f32": 32, "tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8,
                "i64": 64, "u64": 64, "i32": 32, "u32": 32, "i16": 16, "u16": 16, "i8": 8, "u8": 8}
CHECKS = ["coverage", "grid_coverage", "predicates", "coalescing", "bank_conflicts", "vectorize", "dataflow"]
COPY_ATOMS = [
    "UniversalCopy<uint8_t>", "UniversalCopy<uint16_t>", "UniversalCopy<uint32_t>", "UniversalCopy<uint64_t>",
    "UniversalCopy<uint128_t>", "cute::UniversalCopy<cute::uint128_t>", "UniversalCopy<uint32_t,uint64_t>",
    "UniversalCopy<half_t>", "UniversalCopy<float>", "UniversalCopy<double>", "UniversalCopy<uint1_t>",
    "UniversalCopy<int4_t>", "AutoVectorizingCopy", "DefaultCopy", "AutoVectorizingCopyWithAssumedAlignment<64>",
    "AutoVectorizingCopyWithAssumedAlignment<8>", "AutoVectorizingCopyWithAssumedAlignment<3>",
    "SM80_CP_ASYNC_CACHEALWAYS<uint32_t>", "SM80_CP_ASYNC_CACHEALWAYS<uint64_t>",
    "SM80_CP_ASYNC_CACHEALWAYS<uint128_t>", "SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>",
    "SM80_CP_ASYNC_CACHEGLOBAL<uint32_t>", "SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint128_t>",
    "SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>", "SM80_CP_ASYNC_CACHEALWAYS<uint16_t>",
    "SM75_U32x1_LDSM_N", "SM75_U32x2_LDSM_N", "SM75_U32x4_LDSM_N", "SM75_U16x2_LDSM_T", "SM75_U16x4_LDSM_T",
    "SM75_U16x8_LDSM_T", "SM90_U32x4_STSM_N", "SM90_U16x8_STSM_T", "SM75_U32x1_MOVM_T",
    "UniversalCopy<>", "UniversalCopy<uint128_t", "Bogus<uint32_t>", "", "UniversalCopy<7>", "UniversalCopy<2048>",
]
TM_NAMES = ["PitchLinearStripminedThreadMap", "PitchLinearTilePolicyStripminedThreadContiguous",
            "PitchLinearTilePolicyStripminedThreadStrided", "PitchLinearWarpRakedThreadMap",
            "PitchLinearStridedWarpRakedThreadMap", "PitchLinearWarpStripedThreadMap",
            "PitchLinear2DThreadTileStripminedThreadMap"]
TM_WTA = {"PitchLinearWarpRakedThreadMap", "PitchLinearStridedWarpRakedThreadMap", "PitchLinearWarpStripedThreadMap"}
TM_TRANSPOSE = ["TransposePitchLinearThreadMap", "TransposePitchLinearThreadMapSimt",
                "TransposePitchLinearThreadMap2DThreadTile"]

INTERESTING_INTS = [0, -1, 1, 2, 3, 31, 33, 1023, 1024, 1025, 65535, 65536, 2**31 - 1, 2**31, 2**31 + 1, 2**32,
                    2**40, 2**40 + 1, 2**62, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**19, 10**30]
EXPRS = ["M", "N", "K", "bx", "by", "bz", "ceil_div(M, 16)", "M / 0", "M // 0", "M % 0", "M % (N - N)",
         "ceil_div(M, 0)", "ceil_div(M, -16)", "ceil_div(0, 0)", "2 ** 3", "M +", "", " ", "9" * 19, "9" * 20,
         "4294967296 * 4294967296", "9223372036854775807 + 1", "-9223372036854775807 - 2", "-(-9223372036854775808)",
         "(" * 32 + "1" + ")" * 32, "(" * 33 + "1" + ")" * 33, "(" * 500 + "1" + ")" * 500, "min(M)", "min(M, N, K)",
         "max()", "-1", "0", "- - - - 1", "-" * 300 + "1", "M * N * M * N * M", "max(M, N) // 3", "\x00", "é",
         "Ｍ", "M N", "1" + " + 1" * 300, "M" + "*M" * 127, "bx * 2 + 1", "2 * bz", "by + 1", "bx % 2",
         "bx - 1", "max(bx, by)", "min(bx, 1)", "ceil_div", "M(", ")", "M,N", "1e3", "0x10", "1_000", "+5",
         "M / -1", "-M % 7", "M / (1 - 1)", "9223372036854775807 * -1 - 1", "ceil_div(9223372036854775807, 2)",
         "x" * 1001, "M" * 64, "bx / by", "bz % 0", "by // (bx - bx)"]
STRINGS = ["", " ", "x", "é", "Ｍ", "\u202e", "\u200b", "\x00", "\x07", "\x1b[31mred\x1b[0m", "\x1b]0;title\x07",
           "[bold]ZQX[/bold]", "[/]", "[link=file:///etc/passwd]x[/link]", "[red", "\\[x]", "\ud800", "\udcff",
           "a\nb", "a\rb", "\t", "💥", "x" * 5000, "%s%d{0}", "<xml>&amp;</xml>", "]]>", "\"'", "${HOME}",
           "\ufeff", "\U0010ffff", "\ufffe", "null", "~"]
RAW_SCALARS = ["0x80", "0o17", "017", "0b101", "1_000", "+5", "1e3", "1.0", "-0", ".inf", "-.inf", ".nan", "nan",
               "inf", "yes", "no", "on", "off", "~", "null", "true", "True", "2024-01-01", "2024-01-01T00:00:00Z",
               "12:30:00", "1" + "0" * 400, "-" + "9" * 30, "0x" + "f" * 40, "!!binary aGVsbG8=",
               "!!python/object:os.system ls", "!!str 5", "!!int '7'", "!!float 3", "&a 5", "*undefined", "?",
               "- x", "{", "[", "'unterminated", "\"unterminated", "@", "`", "%YAML 1.2", "|", ">", "!!set {a, b}",
               "!!omap [a: 1]", "!!timestamp 2001-12-14", "0.", "1__0", "0x_1", "9223372036854775808",
               "-9223372036854775809", "18446744073709551616", "1e400", "-1e400", "1E-400"]


def _sizes_names(d: dict[str, Any]) -> list[str]:
    s = d.get("sizes")
    return list(s) if isinstance(s, dict) else []


# =============================================================================== layout text

SMALL = [1, 2, 2, 3, 4, 4, 4, 5, 6, 8, 8, 8, 12, 16, 16, 32, 64]
WEIRD_LEAVES = ["0", "-1", "-4", "-0", "007", "2147483648", "4294967296", "9223372036854775807",
                "9223372036854775808", "999999999999999999", "1000000000000000000", "10000000000000000000",
                "1" + "0" * 400, "_0", "_-1", "Int<0>{}", "Int<-3>{}", "4{}", "Int<8>{}", "Int<8>", "_", "M", "N",
                "x", "", "()", "( )", "1@0", "2@1", "1@0@1", "1@99", "1@-1", "_1@0", "٣", "０"]


def _profile(rng: random.Random, depth: int, width: int = 3) -> Any:
    if depth == 0 or rng.random() < 0.45:
        return 0
    return tuple(_profile(rng, depth - 1, width) for _ in range(rng.randint(1, width)))


def _fill(profile: Any, leaf: Callable[[], Any]) -> Any:
    if profile == 0:
        return leaf()
    return tuple(_fill(p, leaf) for p in profile)


def _text(t: Any, static: bool = False) -> str:
    if isinstance(t, tuple):
        return "(" + ",".join(_text(x, static) for x in t) + ")"
    return ("_" if static and isinstance(t, int) and t >= 0 else "") + str(t)


def _flat(t: Any) -> list[Any]:
    return [y for x in t for y in _flat(x)] if isinstance(t, tuple) else [t]


def _col_major(shape: Any) -> Any:
    acc = [1]

    def rec(s: Any) -> Any:
        if isinstance(s, tuple):
            return tuple(rec(x) for x in s)
        v = acc[0]
        acc[0] *= s if isinstance(s, int) and s > 0 else 1
        return v
    return rec(shape)


def _row_major(shape: Any) -> Any:
    flat = _flat(shape)
    strides: list[int] = []
    acc = 1
    for s in reversed(flat):
        strides.append(acc)
        acc *= s if isinstance(s, int) and s > 0 else 1
    it = iter(reversed(strides))
    return _fill_like(shape, lambda: next(it))


def _fill_like(shape: Any, leaf: Callable[[], Any]) -> Any:
    if isinstance(shape, tuple):
        return tuple(_fill_like(x, leaf) for x in shape)
    return leaf()


def gen_shape(rng: random.Random, depth: int = 2, weird: float = 0.05, cap: int = 1 << 14) -> Any:
    prof = _profile(rng, depth)
    if prof == 0 and rng.random() < 0.7:
        prof = (0, 0)
    budget = [cap]

    def leaf() -> Any:
        if rng.random() < weird:
            return rng.choice(WEIRD_LEAVES)
        v = rng.choice(SMALL)
        while v > 1 and budget[0] // v < 1:
            v //= 2
        budget[0] = max(1, budget[0] // max(1, v))
        return v
    return _fill(prof, leaf)


def gen_layout_text(rng: random.Random, names: list[str] | None = None, weird: float = 0.05,
                    swizzle: float = 0.15, cxx: float = 0.15) -> str:
    """A CuTe layout text: nested shapes, strides col/row/random/negative/zero/basis,
    swizzles (``Sw<B,M,S> o``, ``Swizzle<B,M,S>{} o``), C++ spellings."""
    shape = gen_shape(rng, rng.choice([1, 2, 2, 3]), weird)
    if names and rng.random() < 0.3:
        flat = _flat(shape)
        i = rng.randrange(len(flat))
        flat[i] = rng.choice(names)
        it = iter(flat)
        shape = _fill_like(shape, lambda: next(it))
    r = rng.random()
    stride: Any
    if r < 0.35:
        stride = _col_major(shape)
    elif r < 0.6:
        stride = _row_major(shape)
    elif r < 0.85:
        stride = _fill_like(shape, lambda: rng.choice([0, 1, 1, 2, 4, 8, 16, 32, 64, 128, -1, -2, -8, 3]))
    elif r < 0.93:
        stride = _fill_like(shape, lambda: f"{rng.choice([1, 2])}@{rng.randint(0, 2)}")
    else:
        stride = _fill(_profile(rng, 2), lambda: rng.choice([1, 2, 4, 8, "1@0", 0, -1] + WEIRD_LEAVES[:6]))
    static = rng.random() < 0.15
    body: str
    rc = rng.random()
    if rc < cxx:
        flat_s, flat_d = _flat(shape), _flat(stride)
        kind = rng.randrange(5)
        sh = ", ".join(map(str, flat_s))
        if kind == 0:
            body = f"make_layout(make_shape({sh}), make_stride({', '.join(map(str, flat_d))}))"
        elif kind == 1:
            tag = rng.choice(["GenRowMajor{}", "LayoutRight{}", "GenColMajor{}", "LayoutLeft"])
            body = f"make_layout(make_shape({sh}), {tag})"
        elif kind == 2:
            body = (f"Layout<Shape<{', '.join('_' + str(s) for s in flat_s)}>, "
                    f"Stride<{', '.join('_' + str(s) for s in flat_d)}>>{{}}")
        elif kind == 3:
            body = f"cute::make_layout(cute::make_shape({sh}))"
        else:
            target = ", ".join(str(rng.choice([8, 16, 64, 3])) for _ in flat_s)
            body = f"tile_to_shape({_text(shape)}:{_text(stride)}, make_shape({target}))"
    elif rng.random() < 0.12:
        body = _text(shape, static)
    else:
        body = f"{_text(shape, static)}:{_text(stride, static)}"
    if rng.random() < swizzle:
        b, m, s = (rng.choice([0, 1, 2, 3, 4]) if rng.random() < 0.9 else rng.choice([-1, 7, 20, 31, 64, 99])
                   for _ in range(3))
        k = rng.randrange(6)
        if k == 0:
            body = f"Sw<{b},{m},{s}> o {body}"
        elif k == 1:
            body = f"Swizzle<{b},{m},{s}>{{}} o {body}"
        elif k == 2:
            body = f"Swizzle<{b},{m},{s}>{{}} o _0 o {body}"
        elif k == 3:
            body = f"composition(Swizzle<{b},{m},{s}>{{}}, {body})"
        elif k == 4:
            body = f"composition(Sw<{b},{m},{s}>, {rng.choice([0, 8, -1])}, {body})"
        else:
            body = f"cute::Sw<{b},{m},{s}> o {rng.choice([0, 4, 16])} o {body}"
    return body


def mutate_text(rng: random.Random, text: str, alphabet: str = "()[],:_-@<>oSw 0123456789{}xMN\t\n") -> str:
    s = list(text)
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(6)
        i = rng.randrange(len(s) + 1)
        if k == 0 and s:
            del s[min(i, len(s) - 1)]
        elif k == 1 and s:
            j = min(i, len(s) - 1)
            s.insert(j, s[j])
        elif k == 2 and len(s) > 1:
            j = rng.randrange(len(s))
            i = min(i, len(s) - 1)
            s[i], s[j] = s[j], s[i]
        elif k == 3:
            s.insert(i, rng.choice(alphabet + "０٣é∞\u00a0\udcff"))
        elif k == 4:
            s.insert(i, rng.choice(["(", ")", ",", ":", "_", "-", "@0", "0", "Sw<1,2,3> o ", " o ", "{}",
                                    "cute::", "Int<", ">", "make_shape(", "99999999999999999999"]))
        elif s:
            a = rng.randrange(len(s))
            b = min(len(s), a + rng.randint(1, 8))
            s[a:b] = []
    return "".join(s)


# =============================================================================== (a) kernels


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _thr_text(rng: random.Random, a: int, b: int, order: str | None = None) -> str:
    order = order or rng.choices(["col", "row", "wrong", "hier", "zero"], [5, 5, 1, 1, 0.3])[0]
    if order == "col":
        return f"({a},{b}):(1,{a})"
    if order == "row":
        return f"({a},{b}):({b},1)"
    if order == "wrong":
        return f"({a},{b}):(1,{max(1, a // 2)})"
    if order == "zero":
        return f"({a},{b}):(0,{a})"
    if a % 2 == 0 and a > 2:
        return f"((2,{a // 2}),{b}):((1,{2 * b}),2)"
    return f"({a},{b}):(1,{a})"


def _mma_shape(atom: Any) -> tuple[int, int, int]:
    return tuple(int(v) for v in atom.shape_mnk)  # type: ignore[return-value]


_MMA_CACHE: dict[str, tuple[tuple[int, int, int], int]] = {}


def _mma_info(name: str) -> tuple[tuple[int, int, int], int]:
    if name not in _MMA_CACHE:
        import threadmap.layout as TL
        a = TL.get_mma_atom(name)
        _MMA_CACHE[name] = (_mma_shape(a), int(a.num_threads))
    return _MMA_CACHE[name]


def _mma_names() -> list[str]:
    import threadmap.layout as TL
    return list(TL.mma_atom_names())


def gen_sizes(rng: random.Random, tm: int, tn: int) -> tuple[dict[str, Any], int, int]:
    """Sizes M and N: multiples of the tile, ragged, tiny, large, or ranges."""
    def one(t: int) -> Any:
        r = rng.random()
        if r < 0.4:
            return t * rng.randint(1, 6)
        if r < 0.7:
            return max(1, t * rng.randint(1, 5) + rng.choice([1, -1, t // 2 or 1, 3]))
        if r < 0.78:
            return rng.choice([1, 2, 3, t - 1 if t > 1 else 1])
        if r < 0.83:
            return rng.choice([4096, 8192, 16384, 65536, 1 << 20, 2**31 - 1, 2**31])
        lo = rng.choice([1, t, 2])
        hi = rng.choice([t * 4, 4096, 65536, 2**31])
        rngd: dict[str, Any] = {"min": lo, "max": max(lo, hi)}
        if rng.random() < 0.4:
            rngd["multiple_of"] = rng.choice([1, 2, 4, 8, t, 3])
        if rng.random() < 0.3:
            m = rngd.get("multiple_of", 1)
            rngd["samples"] = sorted({max(lo, m * rng.randint(1, 40)) // m * m for _ in range(rng.randint(1, 5))})
        return rngd
    m, n = one(tm), one(tn)

    def val(x: Any) -> int:
        return x if isinstance(x, int) else min(x["max"], 4096)
    return {"M": m, "N": n}, val(m), val(n)


def gen_grid_at(rng: random.Random, tm: int, tn: int, transpose: bool) -> tuple[list[Any], list[Any], list[Any]]:
    g = rng.random()
    if g < 0.6:
        grid: list[Any] = [f"ceil_div(M, {tm})", f"ceil_div(N, {tn})"]
    elif g < 0.75:
        grid = [f"M / {tm}", f"N / {tn}"]
    elif g < 0.85:
        grid = [f"ceil_div(M, {tm})", f"ceil_div(N, {tn})", rng.choice([1, 2, 3])]
    elif g < 0.92:
        grid = [f"ceil_div(N, {tn})", f"ceil_div(M, {tm})"]
    else:
        grid = [rng.choice([1, 2, 4, f"max(1, M / {tm})", "min(M, 4)"]), rng.choice([1, 2, "ceil_div(N, 2)"])]
    r = rng.random()
    if r < 0.6:
        at = ["bx", "by"]
    elif r < 0.7:
        at = ["bx", "by + 0"]
    elif r < 0.75:
        at = ["2 * bz", "by + 1"] if len(grid) == 3 else ["bx", "by + 1"]
    elif r < 0.8:
        at = ["bx % 2", "by"]
    elif r < 0.85:
        at = ["by", "bx"]
    elif r < 0.9:
        at = ["bx * 2", "by / 2"]
    elif r < 0.95:
        at = ["max(bx, by)", "min(by, 3)"]
    else:
        at = [rng.choice(EXPRS[:20]), "by"]
    out_at = [at[1], at[0]] if transpose else list(at)
    return grid, at, out_at


def gen_smem_layout(rng: random.Random, tm: int, tn: int, row: bool) -> str:
    base = f"({tm},{tn}):({tn},1)" if row else f"({tm},{tn}):(1,{tm})"
    r = rng.random()
    if r < 0.55:
        return base
    if r < 0.75:
        b, m, s = rng.choice([(1, 0, 1), (2, 0, 2), (3, 0, 3), (4, 0, 4), (2, 3, 3), (3, 4, 3), (2, 3, 2), (3, 3, 3),
                              (1, 2, 3), (5, 0, 5)])
        return f"Sw<{b},{m},{s}> o {base}"
    if r < 0.78:
        return f"Swizzle<3,4,3>{{}} o {base}"
    if r < 0.9:
        return f"({tm},{tn}):({tn + 1},1)" if row else f"({tm},{tn}):(1,{tm + 1})"  # padded
    if r < 0.92:
        return f"make_layout(make_shape({tm},{tn}), GenRowMajor{{}})"
    return gen_layout_text(rng)


def gen_partition(rng: random.Random, threads: int, elem_bits: int) -> tuple[dict[str, Any], int, int, str]:
    """(side partition fields, tile M, tile N, kind)."""
    kind = rng.choices(["threads", "tiled_copy", "thread_map"], [5, 5, 2])[0]
    divs = [d for d in _divisors(threads) if d <= 256]
    a = rng.choice(divs)
    b = threads // a
    if kind == "threads":
        ka, kb = rng.choice([1, 1, 2, 4]), rng.choice([1, 1, 2, 4, 8])
        tm, tn = a * ka, b * kb
        if rng.random() < 0.03:
            tm += 1
        return {"threads": _thr_text(rng, a, b)}, tm, tn, kind
    if kind == "tiled_copy":
        va, vb = rng.choice([(1, 1), (1, 2), (1, 4), (2, 1), (4, 1), (1, 8), (2, 2), (8, 1), (1, 16), (2, 4)])
        row = rng.random() < 0.5
        thr = _thr_text(rng, a, b, "row" if row else rng.choice(["col", "col", "wrong", "hier"]))
        val = f"({va},{vb}):({vb},1)" if row else f"({va},{vb}):(1,{va})"
        if rng.random() < 0.05:
            val = gen_layout_text(rng)
        k = rng.choice([1, 1, 1, 2])
        tm, tn = a * va * k, b * vb
        atom = rng.choice(COPY_ATOMS)
        if rng.random() < 0.3:  # an atom whose width matches the values
            bits = elem_bits * (vb if row else va)
            atom = {8: "UniversalCopy<uint8_t>", 16: "UniversalCopy<uint16_t>", 32: "UniversalCopy<uint32_t>",
                    64: "UniversalCopy<uint64_t>", 128: rng.choice(["UniversalCopy<uint128_t>",
                                                                    "SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>"])
                    }.get(bits, "AutoVectorizingCopy")
        tc: dict[str, Any] = {"threads": thr, "values": val}
        if rng.random() < 0.9:
            tc["atom"] = atom
        return {"tiled_copy": tc}, tm, tn, kind
    name = rng.choice(TM_NAMES + (["TransposePitchLinearThreadMap", "Bogus"] if rng.random() < 0.1 else []))
    epa = rng.choice([1, 2, 4, 8, 16] if elem_bits <= 16 else [1, 2, 4])
    c = epa * rng.choice([4, 8, 16, 32])
    s = rng.choice([1, 2, 4, 8, 16, 32, 64])
    tmap: dict[str, Any] = {"name": name, "shape": [c, s], "threads": threads}
    if rng.random() < 0.9:
        tmap["elements_per_access"] = epa
    if name in TM_WTA or rng.random() < 0.05:
        tmap["warp_thread_arrangement"] = rng.choice([[4, 8], [8, 4], [2, 16], [32, 1], [1, 32], [16, 2], [3, 5]])
    mode = rng.choice([1, 1, 1, 0])
    tmap["contiguous_mode"] = mode
    tm, tn = (s, c) if mode == 1 else (c, s)
    return {"thread_map": tmap}, tm, tn, kind


def _dividing_thr(rng: random.Random, threads: int, rows: int, cols: int) -> dict[str, Any] | None:
    """A ``threads`` partition (a, T/a) that divides a rows x cols tile, or None."""
    opts = [a for a in _divisors(threads) if rows % a == 0 and cols % (threads // a) == 0]
    if not opts:
        return None
    a = rng.choice(opts)
    return {"threads": _thr_text(rng, a, threads // a, rng.choice(["col", "row", "col", "row", "hier"]))}


def _transposed_part(rng: random.Random, part: dict[str, Any], threads: int, rows: int, cols: int) -> dict[str, Any]:
    """The partition of the transposed output tile (rows x cols)."""
    if "tiled_copy" in part:
        tc = copy.deepcopy(part["tiled_copy"])
        for k in ("threads", "values"):
            m = re.fullmatch(r"\((\d+),(\d+)\):\((\d+),(\d+)\)", tc[k])
            if m:
                a, b, sa, sb = m.groups()
                tc[k] = f"({b},{a}):({sb},{sa})"
        return {"tiled_copy": tc}
    if "thread_map" in part:
        tmap = copy.deepcopy(part["thread_map"])
        tmap["contiguous_mode"] = 1 - tmap.get("contiguous_mode", 1)
        return {"thread_map": tmap}
    return _dividing_thr(rng, threads, rows, cols) or {"threads": _thr_text(rng, 1, threads, "row")}


def gen_copy_kernel(rng: random.Random) -> dict[str, Any]:
    elem = rng.choice(list(ELEMENT_BITS))
    bits = ELEMENT_BITS[elem]
    threads = rng.choice([1, 2, 7, 24, 32, 32, 48, 64, 64, 96, 100, 128, 128, 160, 192, 256, 256, 384, 512, 1024])
    part, tm, tn, kind = gen_partition(rng, threads, bits)
    while tm * tn > 1 << 16:
        tn = max(1, tn // 2)
    sizes, mval, nval = gen_sizes(rng, tm, tn)
    transpose = rng.random() < 0.3
    row = rng.random() < 0.7
    x_layout = rng.choice(["(M,N):(N,1)"] * 8 + ["(M,N):(1,M)", "(M,N):(N,0)", "((2,M),N):((1,2),M)"]) \
        if row else "(M,N):(1,M)"
    y_layout = ("(N,M):(M,1)" if row else "(N,M):(1,N)") if transpose else \
        rng.choice(["(M,N):(N,1)", "(M,N):(1,M)", "(M,N):(N,1)"])
    grid, at, out_at = gen_grid_at(rng, tm, tn, transpose)
    tensors: dict[str, Any] = {"x": {"memory": "global", "layout": x_layout},
                               "y": {"memory": "global", "layout": y_layout}}
    if rng.random() < 0.3:
        tensors["x"]["align"] = rng.choice([16, 128, 256, 4, 1024])
    if rng.random() < 0.1:
        tensors["y"]["element"] = rng.choice(list(ELEMENT_BITS))
    src = {"tensor": "x", "tile": [tm, tn], "at": at, **part}
    # the output side: the same partition transposed when the kernel transposes
    if transpose:
        opart = _transposed_part(rng, part, threads, tn, tm)
        dst_y = {"tensor": "y", "tile": [tn, tm], "at": out_at, **opart}
    else:
        dst_y = {"tensor": "y", "tile": [tm, tn], "at": out_at, **copy.deepcopy(part)}
    pred = rng.choice(["none", "bounds", "bounds", "vector", None])
    pattern = rng.choices(["reg", "smem", "smem_alias", "single", "regreg"], [3, 4, 2, 1, 0.1])[0]
    if pattern == "smem_alias" and not transpose:
        pattern = "smem"
    stages: list[Any] = []

    def cp(s: dict[str, Any], d: dict[str, Any], name: str | None = None) -> dict[str, Any]:
        c: dict[str, Any] = {"src": s, "dst": d}
        if pred is not None:
            c["predicate"] = pred
        if rng.random() < 0.15:
            c["vector_bits"] = rng.choice([8, 16, 32, 64, 128])
        if name or rng.random() < 0.2:
            c["name"] = name or rng.choice(["g2s", "copy(tAgA, tAsA)", "[bold]ZQX[/bold]", "[/]", "é"])
        return {"copy": c}
    if pattern in ("reg", "regreg"):
        stages.append(cp(src, {"registers": "r"}))
        if pattern == "regreg":
            stages.append(cp({"registers": "r"}, {"registers": "r2"}))
            stages.append(cp({"registers": "r2"}, dst_y))
        else:
            stages.append(cp({"registers": "r"}, dst_y))
    elif pattern in ("smem", "smem_alias", "single"):
        smem = gen_smem_layout(rng, tm, tn, row)
        tensors["s"] = {"memory": "shared", "layout": smem}
        s_part = copy.deepcopy(part)
        if rng.random() < 0.4:
            s_part = _dividing_thr(rng, threads, tm, tn) or s_part
        stages.append(cp(src, {"tensor": "s", **s_part}))
        if pattern == "single":
            pass
        else:
            if rng.random() < 0.85:
                stages.append("barrier")
            if pattern == "smem_alias":
                tensors["sT"] = {"memory": "shared", "alias": "s",
                                 "layout": f"({tn},{tm}):(1,{tn})" if row else f"({tn},{tm}):({tm},1)"}
                if rng.random() < 0.3:
                    tensors["sT"]["layout"] = rng.choice([f"Sw<2,0,2> o ({tn},{tm}):(1,{tn})",
                                                          f"({tn},{tm}):(1,{tn + 1})"])
                if rng.random() < 0.1:
                    tensors["sT"]["offset"] = rng.choice([0, 1, 16, tm * tn])
                stages.append(cp({"tensor": "sT", **{k: v for k, v in dst_y.items()
                                                     if k not in ("tensor", "tile", "at")}}, dst_y))
            else:
                stages.append(cp({"tensor": "s", **{k: v for k, v in dst_y.items()
                                                    if k not in ("tensor", "tile", "at")}},
                                 dst_y))
            if rng.random() < 0.2:
                stages.append("barrier")
    expect: dict[str, Any] = {}
    r = rng.random()
    if r < 0.6:
        expect["transform"] = "transpose" if transpose else "copy"
    elif r < 0.7:
        expect["transform"] = rng.choice(["copy", "transpose", "none"])
    if rng.random() < 0.3:
        expect["verdict"] = rng.choice(["pass", "fail"])
    if rng.random() < 0.2:
        expect["bank_conflicts"] = rng.choice([0, 1, 7])
    if rng.random() < 0.2:
        expect["sectors_per_request"] = rng.choice([1.0, 1, 2.5, {"load": 1.0, "store": 2.0}, {"load": 1}])
    if rng.random() < 0.15:
        expect["failing_checks"] = rng.sample(CHECKS + ["vectorization"], rng.randint(0, 3))
    if rng.random() < 0.1:
        expect["coverage"] = "replicated"
    if rng.random() < 0.05:
        expect["vector_bits"] = rng.choice([32, 128])
    spec: dict[str, Any] = {"spec": 1, "name": f"gen {kind} {pattern} {tm}x{tn} t{threads}"}
    if rng.random() < 0.1:
        spec["name"] += " " + rng.choice(STRINGS[:16])
    if rng.random() < 0.2:
        spec["description"] = rng.choice(["derived by hand", "multi\nline\n", "[bold]ZQX[/bold]", "x" * 300])
    spec |= {"element": elem,
             "threads": threads if rng.random() < 0.9 else rng.choice([str(threads), f"{threads} * 1"]),
             "sizes": sizes, "grid": grid, "tensors": tensors, "stages": stages}
    if expect:
        spec["expect"] = expect
    return spec


def gen_mma_kernel(rng: random.Random) -> dict[str, Any]:
    names = _mma_names()
    name = rng.choice(names)
    (m, n, k), nthr = _mma_info(name)
    am, an = rng.choice([(1, 1), (1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (2, 4)])
    while nthr * am * an > 1024 and (am > 1 or an > 1):
        am, an = max(1, am // 2), max(1, an // 2)
    layout_kind = rng.randrange(4)
    if layout_kind == 0:
        atom_layout = f"({am},{an}):({an},1)"
    elif layout_kind == 1:
        atom_layout = f"({am},{an},1):(1,{am},0)"
    elif layout_kind == 2:
        atom_layout = "1:0"
    else:
        atom_layout, (am, an, ak) = rng.choice([("(2,2):(1,2)", (2, 2, 1)), ("(2,1,2):(1,0,2)", (2, 1, 2)),
                                                ("(1,1,1):(0,0,0)", (1, 1, 1)), ("(3,1):(1,0)", (3, 1, 1)),
                                                ("(0,1):(1,1)", (1, 1, 1))])
        if nthr * am * an * ak > 1024:
            atom_layout, am, an = "1:0", 1, 1
    if layout_kind == 2:
        am = an = 1
    threads = nthr * am * an * (ak if layout_kind == 3 else 1)
    if rng.random() < 0.05:
        threads = rng.choice([threads + 1, 32, 1])
    M, N, K = m * am * rng.choice([1, 1, 2]), n * an * rng.choice([1, 1, 2]), k * rng.choice([1, 1, 2])
    elem = rng.choice(["f16", "bf16", "f32", "f64", "i8", "tf32"])
    glob = rng.random() < 0.3
    tensors: dict[str, Any] = {}
    stages: list[Any] = []
    ops = rng.sample(["A", "B", "C"], rng.randint(1, 3))
    dims = {"A": (M, K), "B": (N, K), "C": (M, N)}
    sizes: dict[str, Any] = {}
    for op in ops:
        r, c = dims[op]
        col = rng.random() < 0.5
        if glob:
            sizes[f"S{op}r"] = r * rng.choice([1, 2, 3]) + rng.choice([0, 0, 1])
            sizes[f"S{op}c"] = c * rng.choice([1, 2])
            tensors[f"g{op}"] = {"memory": "global", "layout": f"(S{op}r,S{op}c):(1,S{op}r)" if col
                                 else f"(S{op}r,S{op}c):(S{op}c,1)"}
            if op == "C":
                tensors[f"g{op}"]["element"] = rng.choice(["f32", "f16", "i32"])
            side: dict[str, Any] = {"tensor": f"g{op}", "tile": [r, c],
                                    "at": ["bx", "by"] if op != "B" else ["by", "bx"]}
        else:
            lay = f"({r},{c}):(1,{r})" if col else f"({r},{c}):({c},1)"
            if rng.random() < 0.2:
                lay = f"Sw<{rng.choice([1, 2, 3])},{rng.choice([0, 3])},3> o " + lay
            tensors[f"s{op}"] = {"memory": "shared", "layout": lay}
            if op == "C" and rng.random() < 0.7:
                tensors[f"s{op}"]["element"] = "f32"
            side = {"tensor": f"s{op}"}
        side["mma"] = {"atom": name, "atom_layout": atom_layout, "operand": op}
        if rng.random() < 0.05:
            side["mma"]["operand"] = rng.choice(["D", "a", ""])
        if op == "C" and rng.random() < 0.4:
            stages.append({"copy": {"src": {"registers": "acc"},
                                    "dst": side, "predicate": rng.choice(["none", "bounds"])}})
            stages.insert(0, {"copy": {"src": copy.deepcopy(side), "dst": {"registers": "acc"}}})
        else:
            c2: dict[str, Any] = {"src": side, "dst": {"registers": f"r{op}"}}
            if glob:
                c2["predicate"] = rng.choice(["none", "bounds", "vector"])
            stages.append({"copy": c2})
        if rng.random() < 0.2:
            stages.append("barrier")
    spec: dict[str, Any] = {"spec": 1, "name": f"gen mma {name} {atom_layout}", "element": elem, "threads": threads}
    if sizes:
        spec["sizes"] = sizes
        grid_x = max(1, max((sizes.get(f"S{op}r", 1) for op in ops), default=1) // max(1, M))
        spec["grid"] = [rng.choice([1, grid_x, "1"]), rng.choice([1, 2])]
    spec["tensors"] = tensors
    spec["stages"] = stages
    spec["expect"] = {"coverage": rng.choice(["replicated", "replicated", "exact"]), "transform": "none"}
    return spec


def gen_kernel_spec(rng: random.Random) -> dict[str, Any]:
    return gen_mma_kernel(rng) if rng.random() < 0.2 else gen_copy_kernel(rng)


def case_kernel(rng: random.Random, idx: int) -> Case:
    spec = gen_kernel_spec(rng)
    fmt = rng.choices(["yaml", "json", "toml"], [6, 2, 2])[0]
    name = "k" + FMT_EXT[fmt]
    text = dump(spec, fmt, rng)
    r = rng.random()
    if r < 0.72:
        argv = ["verify", name]
        ofmt = rng.choices(["table", "json", "junit", "sarif"], [6, 2, 1, 1])[0]
        if ofmt != "table":
            argv += ["--format", ofmt]
        if rng.random() < 0.15:
            argv.append("--exhaustive")
        if rng.random() < 0.1:
            argv.append("--check-expected")
        if rng.random() < 0.1:
            argv.append("-v")
        return Case("kernel", idx, argv, {name: text.encode()}, fmt=None if ofmt == "table" else ofmt,
                    spec_cmd=True, note=spec["name"])
    if r < 0.86:
        sfmt = rng.choice(["csv", "json", "npz"])
        argv = ["simulate", name, "--format", sfmt, "--blocks", rng.choice(["0", "0", "0:2", "all", "1", "0,1"])]
        out = None
        if sfmt == "npz" or rng.random() < 0.2:
            out = "out." + sfmt
            argv += ["-o", out]
        return Case("kernel", idx, argv, {name: text.encode()}, fmt={"csv": "csv", "json": "sim-json",
                                                                     "npz": "npz"}[sfmt], output=out, spec_cmd=True,
                    note=spec["name"])
    argv = ["show", name]
    if rng.random() < 0.5:
        argv += ["--stage", str(rng.choice([0, 0, 1, 2, 3]))]
    if rng.random() < 0.3:
        argv += ["--warp", str(rng.choice([0, 1, 3]))]
    if rng.random() < 0.3:
        argv += ["--step", str(rng.choice([0, 1, 2]))]
    if rng.random() < 0.3:
        argv += ["--svg", "pic.svg"]
    return Case("kernel", idx, argv, {name: text.encode()}, spec_cmd=True, note=spec["name"])


# =============================================================================== (b) mutations

_LIBRARY: list[tuple[str, dict[str, Any]]] | None = None


def library() -> list[tuple[str, dict[str, Any]]]:
    global _LIBRARY
    if _LIBRARY is None:
        _LIBRARY = []
        for p in sorted(SPEC_DIR.rglob("*.yaml")):
            _LIBRARY.append((str(p.relative_to(REPO)), yaml.safe_load(p.read_text())))
    return _LIBRARY


def _get(d: Any, path: tuple[Any, ...]) -> Any:
    for c in path:
        d = d[c]
    return d


def _rand_value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if r < 0.2:
        return rng.choice(INTERESTING_INTS)
    if r < 0.35:
        return rng.choice(EXPRS)
    if r < 0.5:
        return rng.choice(STRINGS)
    if r < 0.6:
        return gen_layout_text(rng, ["M", "N"])
    if r < 0.7:
        return rng.choice([None, True, False, 1.5, -0.0, float("nan"), float("inf"), 1e308, 128.0])
    if depth < 2 and r < 0.85:
        return [_rand_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 2:
        return {rng.choice(["x", "min", "max", "copy", "tensor", "1", "", "threads"]): _rand_value(rng, depth + 1)
                for _ in range(rng.randint(0, 3))}
    return rng.choice(["x", 1, None])


def _field_value(rng: random.Random, key: Any, old: Any, names: list[str]) -> Any:
    """A plausible-but-wrong value for a known field."""
    k = str(key)
    if k in ("threads",) and isinstance(old, (int, str)) and not (isinstance(old, str) and ":" in old):
        return rng.choice([1, 33, 1024, 1025, 0, -32, 2**31, 2**63, "M", "M * N", "0 / 0", True, 32.0,
                           "32", "ceil_div(M, 0)", rng.choice(INTERESTING_INTS)])
    if k in ("layout", "threads", "values", "atom_layout") or (isinstance(old, str) and ":" in old):
        if rng.random() < 0.8:
            return gen_layout_text(rng, names, weird=0.15, swizzle=0.3)
        return mutate_text(rng, str(old))
    if k in ("tile", "at", "grid", "shape", "warp_thread_arrangement"):
        n = rng.choice([0, 1, 2, 2, 3, 4])
        return [rng.choice(EXPRS + [str(v) for v in INTERESTING_INTS] + INTERESTING_INTS + [16, 8, 4])
                for _ in range(n)]
    if k in ("tensor", "alias", "registers"):
        return rng.choice(["x", "y", "s", "sA", "sB", "sT", "A", "q", "", "r", "M", "bx", "\x00", "x y"])
    if k == "memory":
        return rng.choice(["global", "shared", "register", "Global", "", "constant"])
    if k in ("predicate",):
        return rng.choice(["none", "bounds", "vector", "all", "Bounds", ""])
    if k in ("element",):
        return rng.choice(list(ELEMENT_BITS) + ["f8", "F32", "float", "", "u1", "i4"])
    if k == "atom":
        return rng.choice(COPY_ATOMS + _mma_names()[:20] + ["SM80_16x8x16_F32F16F16F32_TN", "SM99_1x1x1"])
    if k == "name" and old in TM_NAMES:
        return rng.choice(TM_NAMES + TM_TRANSPOSE + ["Bogus"])
    if k in ("align",):
        return rng.choice([0, 1, 3, 16, 256, 2**40, 2**62, 2**63, -256])
    if k in ("offset",):
        return rng.choice([0, 1, -1, 2**40, 2**40 + 1, 1 << 20, 17])
    if k in ("elements_per_access",):
        return rng.choice([0, 1, 3, 8, 1024, 1025, 2**31])
    if k in ("contiguous_mode",):
        return rng.choice([0, 1, 2, -1, True])
    if k in ("vector_bits",):
        return rng.choice([8, 16, 32, 64, 128, 256, 0, 24])
    if k in ("operand",):
        return rng.choice(["A", "B", "C", "D", ""])
    if k in ("min", "max", "multiple_of"):
        return rng.choice(INTERESTING_INTS)
    if k in ("samples",):
        return [rng.choice(INTERESTING_INTS + [1, 16, 17, 32]) for _ in range(rng.choice([0, 1, 3, 64, 65]))]
    if k in ("bank_conflicts",):
        return rng.choice([0, -1, 2**63, 1.5])
    if k in ("sectors_per_request", "load", "store"):
        return rng.choice([1.0, 0.5, float("nan"), float("inf"), 1e308, "1", {"load": 0.5}, 1, 2**70])
    if k in ("failing_checks",):
        return rng.sample(CHECKS + ["vectorization", "bogus", ""], rng.randint(0, 4))
    if k in ("transform", "verdict", "coverage"):
        return rng.choice(["copy", "transpose", "none", "pass", "fail", "exact", "replicated", "x"])
    if k in ("spec",):
        return rng.choice([1, 2, 0, "1", 1.0, True])
    if isinstance(old, int) and not isinstance(old, bool):
        return rng.choice(INTERESTING_INTS + [old + 1, old - 1, old * 2, -old])
    if isinstance(old, str):
        return rng.choice([mutate_text(rng, old), rng.choice(EXPRS), rng.choice(STRINGS)])
    return _rand_value(rng)


def _random_sizes(rng: random.Random) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for _ in range(rng.randint(0, 4)):
        name = rng.choice(["M", "N", "K", "bx", "o", "Sw", "_M", "1x", "ceil_div", "min", "M", "N", "é", "", "M N",
                           "a" * 200, "by", "bz"])
        r = rng.random()
        if r < 0.35:
            v: Any = rng.choice(INTERESTING_INTS + [1, 16, 17, 63, 64, 1000])
        elif r < 0.8:
            v = {"min": rng.choice([1, 0, -2, 2, 16, 2**31, 2**31 + 1, 10**20]),
                 "max": rng.choice([1, 64, 4096, 65536, 2**31, 2**31 + 1, 2**40, 2**63, 0])}
            if rng.random() < 0.5:
                v["multiple_of"] = rng.choice([1, 2, 4, 3, 0, -1, 64, 2**31, 2**33])
            if rng.random() < 0.4:
                v["samples"] = [rng.choice([1, 2, 16, 17, 31, 64, 0, -1, 2**31, 2**40]) for _ in
                                range(rng.choice([0, 1, 2, 5, 64, 65, 200]))]
            if rng.random() < 0.05:
                v["step"] = 2
        else:
            v = _rand_value(rng)
        out[name] = v
    return out


def mutate_tree(rng: random.Random, d: Any, n: int) -> Any:
    d = copy.deepcopy(d)
    names = _sizes_names(d) if isinstance(d, dict) else []
    for _ in range(n):
        paths = tree_paths(d)[1:]
        if not paths:
            break
        path = rng.choice(paths)
        try:
            parent = _get(d, path[:-1])
            old = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        last = path[-1]
        op = rng.choices(["field", "replace", "delete", "extra", "rename", "dup", "nest", "swap", "graft",
                          "sizes", "grid", "type"], [10, 3, 4, 2, 3, 2, 2, 1, 2, 2, 1, 3])[0]
        if op == "field":
            parent[last] = _field_value(rng, last, old, names)
        elif op == "replace":
            parent[last] = _rand_value(rng)
        elif op == "type":
            parent[last] = rng.choice([[], {}, [old], {"x": old}, None, True, 1.5, str(old), 0, old if not
                                       isinstance(old, str) else old.encode("utf-8", "surrogatepass").hex()])
        elif op == "delete":
            del parent[last]
        elif op == "extra" and isinstance(parent, dict):
            parent[rng.choice(["colour", "Threads", "tile", "copy", "alias", "1", "", " name", "$schema",
                               "threads ", "ｔｈｒｅａｄｓ", "<<"])] = _rand_value(rng)
        elif op == "rename" and isinstance(parent, dict) and isinstance(last, str):
            new = rng.choice([last.upper(), last + "s", last[:-1], "ѕ" + last[1:], last + " ", " " + last,
                              last.replace("_", "-"), 1, None, True, ""])
            items = list(parent.items())
            parent.clear()
            for k, v in items:
                parent[new if k == last else k] = v
        elif op == "dup" and isinstance(parent, list):
            parent.insert(last, copy.deepcopy(old))
        elif op == "dup" and isinstance(parent, dict):
            parent[f"{last}2"] = copy.deepcopy(old)
        elif op == "nest":
            parent[last] = [old] if rng.random() < 0.5 else {str(last): old}
        elif op == "swap":
            other = rng.choice(paths)
            try:
                op_parent = _get(d, other[:-1])
                ov = op_parent[other[-1]]
                if other[:len(path)] != path and path[:len(other)] != other:
                    parent[last], op_parent[other[-1]] = ov, old
            except (KeyError, IndexError, TypeError):
                pass
        elif op == "graft":
            _, lib = rng.choice(library())
            sub = _get(lib, rng.choice(tree_paths(lib)))
            parent[last] = copy.deepcopy(sub)
        elif op == "sizes" and isinstance(d, dict):
            d["sizes"] = _random_sizes(rng)
        elif op == "grid" and isinstance(d, dict):
            d["grid"] = [rng.choice(EXPRS + INTERESTING_INTS + [1, 2, 65535, 65536]) for _ in
                         range(rng.choice([0, 1, 2, 3, 4]))]
    return d


ODD_NAMES = ["a,b", "x y", "é", "[bold]t[/bold]", "<t>&", 'a"b', "ñ" * 100, "t" * 300, "1", "-", "a:b", "\u202e",
             "t\nx", "0x10", "bx", "M", "o", "Sw", "registers", "${x}", "a;b", "\\", "sA", "x"]


def rename_tensor(rng: random.Random, d: Any) -> Any:
    """Rename one tensor everywhere (its key, sides' ``tensor``, views' ``alias``)."""
    if not isinstance(d, dict) or not isinstance(d.get("tensors"), dict) or not d["tensors"]:
        return d
    old = rng.choice(list(d["tensors"]))
    new = rng.choice(ODD_NAMES)
    d = copy.deepcopy(d)
    d["tensors"] = {(new if k == old else k): v for k, v in d["tensors"].items()}

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ("tensor", "alias") and v == old:
                    x[k] = new
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(d)
    return d


def _raw_substitute(rng: random.Random, d: Any, fmt: str) -> tuple[Any, list[tuple[str, str]]]:
    """Replace 1..2 leaves by sentinels to be substituted with raw scalar text after dumping."""
    d = copy.deepcopy(d)
    subs = []
    for i in range(rng.randint(1, 2)):
        paths = [p for p in tree_paths(d)[1:] if not isinstance(_get(d, p), (dict, list))]
        if not paths:
            break
        p = rng.choice(paths)
        tok = f"RAWSENTINEL{i}X"
        _get(d, p[:-1])[p[-1]] = tok
        subs.append((tok, rng.choice(RAW_SCALARS)))
    return d, subs


def text_mutation(rng: random.Random, text: bytes, others: list[bytes]) -> bytes:
    k = rng.choices(["truncate", "splice", "dupline", "delline", "crlf", "bom", "badutf8", "tabs", "nul",
                     "cross", "flip", "utf16", "indent", "bigline"], [4, 5, 3, 3, 1, 1, 2, 1, 1, 2, 3, 0.5, 2, 0.5])[0]
    if not text:
        return rng.choice([b"", b"\x00", b"{", b"spec: 1"])
    i = rng.randrange(len(text) + 1)
    if k == "truncate":
        return text[:i]
    if k == "splice":
        ins = rng.choice([b"", b":", b"-", b"[", b"]", b"{", b"}", b",", b"\n", b"  ", b"'", b'"', b"&a ", b"*a",
                          b"!!", b"#", b"\\", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x1b[2J", b"0x", b"= ", b"[[x]]\n",
                          rng.randbytes(rng.randint(1, 8))])
        return text[:i] + ins + text[i + rng.randint(0, 8):]
    lines = text.split(b"\n")
    j = rng.randrange(len(lines))
    if k == "dupline":
        lines.insert(j, lines[j])
        return b"\n".join(lines)
    if k == "delline":
        del lines[j]
        return b"\n".join(lines)
    if k == "crlf":
        return text.replace(b"\n", b"\r\n") if rng.random() < 0.8 else text.replace(b"\n", b"\r")
    if k == "bom":
        return b"\xef\xbb\xbf" + text
    if k == "badutf8":
        return text[:i] + rng.choice([b"\xff\xfe", b"\xc0\xaf", b"\x80", b"\xf4\x90\x80\x80"]) + text[i:]
    if k == "tabs":
        return text.replace(b"  ", b"\t")
    if k == "nul":
        return text[:i] + b"\x00" + text[i:]
    if k == "cross" and others:
        o = rng.choice(others)
        a = rng.randrange(len(o) + 1)
        return text[:i] + o[a:a + rng.randint(1, 200)] + text[i:]
    if k == "flip":
        b = bytearray(text)
        for _ in range(rng.randint(1, 4)):
            p = rng.randrange(len(b))
            b[p] = rng.choice(b"{}[]:,-'\"#&*!|>0123456789 \n\tabxyz=.")
        return bytes(b)
    if k == "utf16":
        return text.decode("utf-8", "replace").encode("utf-16")
    if k == "indent":
        lines[j] = b" " * rng.choice([1, 3, 40]) + lines[j]
        return b"\n".join(lines)
    if k == "bigline":
        return text[:i] + b"x" * rng.choice([10_000, 200_000, 1_100_000]) + text[i:]
    return text


def special_spec(rng: random.Random, fmt: str) -> str | bytes:
    """Hand-built adversarial documents: alias bombs, deep nesting, huge lists, many keys."""
    k = rng.randrange(10)
    if fmt == "yaml":
        if k == 0:  # billion laughs
            lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
            for i in range(1, rng.choice([6, 9, 12])):
                lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
            lines.append(f"spec: 1\nname: bomb\nthreads: 32\ntensors: {{}}\nstages: *a{len(lines) - 1}")
            return "\n".join(lines) + "\n"
        if k == 1:
            n = rng.choice([100, 1000, 50_000])
            return "spec: 1\nname: deep\nthreads: 32\ntensors: " + "[" * n + "]" * n + "\nstages: [barrier]\n"
        if k == 2:
            return ("spec: 1\nname: many\nthreads: 32\ntensors: {}\nstages:\n"
                    + "- barrier\n" * rng.choice([1000, 100_000]))
        if k == 3:
            return "&a [*a]\n"
        if k == 4:
            return "spec: 1\nname: merge\nbase: &b {memory: global, layout: '(M,N):(N,1)'}\ntensors:\n  x: {<<: *b}\n"
        if k == 5:
            return ("spec: 1\nname: x\nthreads: 32\ntensors:\n" + "".join(
                f"  t{i}: {{memory: shared, layout: '(1024,1024):(1024,1)'}}\n" for i in range(rng.choice([2, 300])))
                    + "stages: [barrier]\n")
        if k == 6:
            return "--- \n...\n--- \nspec: 1\n"
        if k == 7:
            return "spec: 1\nname: x\nthreads: 32\nsizes: {" + ", ".join(f"S{i}: {i + 1}" for i in range(5000)) + "}\n"
    if fmt == "json":
        if k == 0:
            n = rng.choice([100, 5000, 100_000])
            return '{"spec": 1, "name": "deep", "threads": 32, "tensors": ' + "[" * n + "]" * n + ', "stages": []}'
        if k == 1:
            return '{"spec": 1, "spec": 1, "name": "dup"}'
        if k == 2:
            return '{"spec": 1, "name": "n", "threads": 1e400, "tensors": {}, "stages": ["barrier"]}'
        if k == 3:
            return '{"spec": 1, "name": "n", "threads": NaN, "tensors": {}, "stages": ["barrier"]}'
        if k == 4:
            return '{"spec": 1, "name": "\\ud800", "threads": 32, "tensors": {}, "stages": ["barrier"]}'
        if k == 5:
            return '{"spec": 1, "name": "n", "threads": ' + "9" * 5000 + ', "tensors": {}, "stages": ["barrier"]}'
        if k == 6:
            return '[' + '{"a": 1},' * 50_000 + '1]'
    if fmt == "toml":
        if k == 0:
            return "spec = 1\nname = \"x\"\n" + "a." * rng.choice([50, 2000]) + "b = 1\n"
        if k == 1:
            n = rng.choice([100, 5000])
            return "spec = 1\ntensors = " + "[" * n + "]" * n + "\n"
        if k == 2:
            return "spec = 1\nname = 'x'\nthreads = 32\n[[stages]]\n[[stages]]\n[tensors]\n"
        if k == 3:
            return "spec = 1\nthreads = 0x7fffffffffffffff\nname = '''multi\nline'''\n"
        if k == 4:
            return 'spec = 1\nname = "a"\nname = "b"\n'
        if k == 5:
            return "spec = 1\n" + "".join(f"k{i} = {i}\n" for i in range(rng.choice([100, 60_000])))
        if k == 6:
            return 'spec = 1\nname = "\\u0000 \\uD800"\n'
    return rng.choice(["", "\n", "null", "[]", "1", "\"str\"", "spec: 1", "{}", "\ufeff", "---", "...", "%YAML 9.9\n"])


def case_mutate(rng: random.Random, idx: int) -> Case:
    r = rng.random()
    if r < 0.55:
        src_name, base = rng.choice(library())
    else:
        src_name, base = "kernel", gen_kernel_spec(rng)
    fmt = rng.choices(["yaml", "json", "toml"], [5, 2, 2])[0]
    kind = rng.random()
    if kind < 0.06:
        text = special_spec(rng, fmt)
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
        note = "special"
    else:
        if rng.random() < 0.1:
            d = rename_tensor(rng, base)
            if rng.random() < 0.3:
                d = mutate_tree(rng, d, 1)
        else:
            d = mutate_tree(rng, base, rng.choice([1, 1, 1, 2, 2, 3, 4, 6]))
        subs: list[tuple[str, str]] = []
        if rng.random() < 0.15:
            d, subs = _raw_substitute(rng, d, fmt)
        text = dump(d, fmt, rng)
        for tok, raw in subs:
            text = text.replace(f'"{tok}"', raw).replace(f"'{tok}'", raw).replace(tok, raw)
        data = text.encode("utf-8", "surrogatepass")
        note = f"tree({src_name})"
        if rng.random() < 0.25:
            others = [dump(x, fmt).encode() for _, x in rng.sample(library(), 2)]
            for _ in range(rng.choice([1, 1, 2, 3])):
                data = text_mutation(rng, data, others)
            note += "+text"
    ext = FMT_EXT[fmt] if rng.random() < 0.97 else rng.choice([".yml", ".txt", ".YAML", ""])
    name = "m" + ext
    argv = ["verify", name]
    ofmt = rng.choices(["table", "json", "junit", "sarif"], [6, 2, 1, 1])[0]
    if ofmt != "table":
        argv += ["--format", ofmt]
    if rng.random() < 0.05:
        argv.append("--exhaustive")
    cmd = rng.random()
    if cmd < 0.08:
        argv = ["simulate", name] + (["--format", "json"] if rng.random() < 0.5 else [])
        ofmt = "sim-json" if "json" in argv else "csv"
    elif cmd < 0.15:
        argv = ["show", name]
        ofmt = "table"
    return Case("mutate", idx, argv, {name: data}, fmt=None if ofmt == "table" else ofmt, spec_cmd=True, note=note)


# =============================================================================== (c) layout calculator


def _calc_ops() -> dict[str, Any]:
    from threadmap.layout.calculator import OPS
    return OPS


def _calc_functions() -> dict[str, Any]:
    from threadmap.layout.calculator import FUNCTIONS
    return FUNCTIONS


def _valid_layout(rng: random.Random) -> str:
    """A layout from the public strategies (always valid), generated by hypothesis from
    ``rng`` (so the case is still a function of the campaign's seed): the k-th example
    hypothesis generates, k in 2..8 (its first example is always the minimal one)."""
    from hypothesis import HealthCheck, Phase, find, settings

    from threadmap.testing import strategies as S
    strat = rng.choice([S.layouts(), S.compact_layouts(), S.injective_layouts(), S.pow2_layouts(),
                        S.any_layouts()])
    left = [rng.randint(1, 7)]

    def kth(_x: Any) -> bool:
        left[0] -= 1
        return left[0] < 0

    try:
        lay = find(strat, kth, random=rng, settings=settings(
            database=None, phases=[Phase.generate], max_examples=20, deadline=None,
            suppress_health_check=list(HealthCheck)))
    except Exception:  # noqa: BLE001 - hypothesis gave up (no example): fall back to text
        lay = None
    return str(lay) if lay is not None else gen_layout_text(rng)


def _op_arg(rng: random.Random, op: str, cur_text: str) -> str:
    r = rng.random()
    if op in ("upcast", "downcast", "get", "complement"):
        if r < 0.7:
            return str(rng.choice([0, 1, 2, 3, 4, 8, 16, 24, 64, 1024, -1, 2**31, 2**62, 10**18, 10**19]))
    if op == "eval":
        if r < 0.5:
            return str(rng.choice([0, 1, 5, 15, 63, -1, 10**18, 2**62]))
        if r < 0.8:
            return _text(gen_shape(rng, 2, 0.05))
    if op == "coalesce" and r < 0.6:
        return _text(_fill(_profile(rng, 2), lambda: 1))
    if r < 0.45:
        return _text(gen_shape(rng, 2, 0.05))
    if r < 0.8:
        return gen_layout_text(rng, weird=0.05) if rng.random() < 0.5 else _valid_layout(rng)
    if r < 0.88:
        return rng.choice(["_", "(_,2)", "(2,_)", "((2,2),_)", "1", "0", "-2", "()", "", "Sw<1,2,3>", "(4,8):(8,1)"])
    return mutate_text(rng, _text(gen_shape(rng, 1)))


def gen_call(rng: random.Random, depth: int = 0) -> str:
    funcs = _calc_functions()
    name = rng.choice(list(funcs))
    _, lo, hi = funcs[name]
    n = rng.randint(max(0, lo - 1), min(hi, 4) + (1 if rng.random() < 0.1 else 0))
    args = []
    for _ in range(n):
        rr = rng.random()
        if depth < 3 and rr < 0.25:
            args.append(gen_call(rng, depth + 1))
        elif rr < 0.55:
            args.append(_valid_layout(rng) if rng.random() < 0.5 else gen_layout_text(rng, weird=0.05, cxx=0.2))
        elif rr < 0.85:
            args.append(_text(gen_shape(rng, 2, 0.05)))
        else:
            args.append(rng.choice(["0", "1", "2", "-1", "_", "GenRowMajor{}", "make_shape(2,3)", "Int<2>{}",
                                    "(1,0)", "9999999999999999999", "Sw<3,4,3>"]))
    pre = "cute::" if rng.random() < 0.1 else ""
    return f"{pre}{name}({', '.join(args)})"


def case_layout(rng: random.Random, idx: int) -> Case:
    ops = _calc_ops()
    r = rng.random()
    if r < 0.35:
        first = _valid_layout(rng)
    elif r < 0.7:
        first = gen_layout_text(rng, weird=0.08, swizzle=0.2, cxx=0.2)
    elif r < 0.85:
        first = gen_call(rng)
    elif r < 0.95:
        first = mutate_text(rng, rng.choice([_valid_layout(rng), gen_layout_text(rng), gen_call(rng)]))
    else:
        first = rng.choice(["(" * 70 + "2" + ")" * 70, "(" * 63 + "2" + ")" * 63, "(" * 5000, "2" * 30, "",
                            " ", "-1", "--json", "-(2,3)", "(2,3):(-1,-2)", "\udcff", "(2,3):(1,2)\x00",
                            ",".join(["2"] * 2000), "(" + ",".join(["2"] * 64) + ")", "1@0", "_", "o", "Sw",
                            "make_layout()", "composition()", "Sw<3,4,3> o Sw<1,1,1> o (8,8):(8,1)",
                            "(2,2):(1,2) o (2,2):(2,1)", "(" + ",".join(["64"] * 12) + ")", "0:0", "(0,1):(1,1)"])
    argv = ["layout", first]
    for _ in range(rng.choices([0, 1, 2, 3, 5], [3, 5, 3, 1, 0.3])[0]):
        name = rng.choice(list(ops)) if rng.random() < 0.95 else rng.choice(["bogus", "Show", "", "--static",
                                                                             "-1", "show show"])
        argv.append(name)
        op = ops.get(name)
        if op is not None and (op.nargs == 1 or (op.nargs == -1 and rng.random() < 0.6)):
            if rng.random() < 0.97:
                argv.append(_op_arg(rng, name, first))
    if rng.random() < 0.1 and len(argv) > 2:  # drop the last argument
        argv.pop()
    flags = []
    if rng.random() < 0.3:
        flags.append("--json")
    if rng.random() < 0.2:
        flags.append("--static")
    if rng.random() < 0.02:
        flags.append(rng.choice(["--help", "--bogus", "--", "-h", "--json=1"]))
    for fl in flags:
        argv.insert(rng.randint(1, len(argv)), fl) if rng.random() < 0.2 else argv.append(fl)
    return Case("layout", idx, argv, fmt="calc-json" if "--json" in argv else None)


# =============================================================================== (d) thread-map calculator


def _tm_shape_token(rng: random.Random) -> str:
    r = rng.random()
    c = rng.choice([4, 8, 16, 32, 64, 128, 256])
    s = rng.choice([1, 2, 4, 8, 16, 32, 64, 128])
    if r < 0.5:
        return f"{c}x{s}"
    if r < 0.75:
        return f"({c},{s})"
    return rng.choice(["0x64", "64x0", "-64x64", "64x", "x", "x64", "64xx64", "64x64x64", "(64)", "64", "(64,64,1)",
                       "99999999999999999x2", "9223372036854775807x2", "2x9223372036854775807", "(_64,_64)", "",
                       "6４x64", "64X64", "64*64", "(64,(2,2))", "(-1,2)", "1e2x2", "0x10", "(M,N)", "\udcff"])


def _tm_legal_args(rng: random.Random, name: str) -> list[str]:
    """Parameters close to what the header accepts (the listing then has real work to do)."""
    epa = rng.choice([1, 2, 4, 8])
    wta = rng.choice([(4, 8), (8, 4), (2, 16), (32, 1), (1, 32), (16, 2)])
    c = epa * wta[0] * rng.choice([1, 2, 4])
    s = wta[1] * rng.choice([1, 2, 4, 8])
    threads = rng.choice([32, 64, 128, 256])
    shape = f"{c}x{s}" if rng.random() < 0.7 else f"({c},{s})"
    if name == "PitchLinear2DThreadTileStripminedThreadMap":
        return [f"{4 * rng.choice([4, 8, 16])}x{4 * rng.choice([4, 8, 16])}", str(threads), "4x4"]
    args = [shape, str(threads)]
    if name in TM_WTA:
        args.append(f"{wta[0]}x{wta[1]}")
    args.append(str(epa))
    return args


def _tm_args(rng: random.Random, name: str) -> list[str]:
    if rng.random() < 0.5:
        return _tm_legal_args(rng, name)
    args = [_tm_shape_token(rng), str(rng.choice([32, 64, 128, 256, 32, 1, 0, -32, 33, 1024, 2048, 2**31]))]
    if name in TM_WTA or rng.random() < 0.05:
        args.append(rng.choice(["4x8", "8x4", "2x16", "32x1", "1x32", "16x2", "3x5", "(4,8)", "0x32", "4x8x1"]))
    if name == "PitchLinear2DThreadTileStripminedThreadMap":
        if rng.random() < 0.7:
            args.append(rng.choice(["4x4", "2x2", "(4,4)", "8x8"]))
    elif rng.random() < 0.85:
        args.append(str(rng.choice([1, 2, 4, 8, 16, 0, 3, -4, 1024, 2**40])))
    if rng.random() < 0.05:
        args.append(rng.choice(["1", "x", "(1,2)"]))
    if rng.random() < 0.05 and args:
        args.pop(rng.randrange(len(args)))
    return args


def case_threadmap(rng: random.Random, idx: int) -> Case:
    r = rng.random()
    if r < 0.8:
        name = rng.choice(TM_NAMES)
        argv = ["threadmap", name, *_tm_args(rng, name)]
    elif r < 0.95:
        name = rng.choice(TM_TRANSPOSE)
        inner = rng.choice(TM_NAMES + ["Bogus"])
        inner_tok = " ".join([inner, *_tm_args(rng, inner)])
        argv = ["threadmap", name, inner_tok]
        if name == "TransposePitchLinearThreadMap" or rng.random() < 0.1:
            argv.append(rng.choice(["4x8", "8x4", "2x16", "(4,8)", "3x5"]))
        if rng.random() < 0.05:
            argv = ["threadmap", name, " ".join([name, inner_tok])]
    else:
        argv = ["threadmap", rng.choice(["", "Bogus", "pitchlinearstripminedthreadmap", "--thread", "\udcff",
                                         "PitchLinearShape", "__init__", "PitchLinearThreadMap"])]
        argv += [_tm_shape_token(rng) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.5:
        argv += ["--thread", str(rng.choice([0, 1, 5, 31, 50, 127, 128, 255, -1, 2**31, 10**30, "x", "1.5"]))]
    if rng.random() < 0.3:
        argv.append("--json")
    return Case("threadmap", idx, argv, fmt="calc-json" if "--json" in argv else None)


# =============================================================================== (e) options


_SMALL_LIBRARY = ["specs/cute_transpose/row_smem.yaml", "specs/cute_transpose/col_smem_swizzled.yaml",
                  "specs/cute_transpose/row2col_reg.yaml", "specs/planted/off_by_one_grid.yaml",
                  "specs/cutlass/stripmined_64x64_128t_v4.yaml", "specs/planted/stripmined_vector_straddle_n62.yaml",
                  "specs/mma/sm70_8x8x4_f32f16f16f32_nt_2x2.yaml", "specs/sgemm/sgemm_2_copy_a.yaml",
                  "specs/planted/missing_barrier.yaml", "specs/cutlass/sm80_f16_gemm_a_128x32_warpraked.yaml"]


def _sizes_opt(rng: random.Random, names: list[str]) -> str:
    names = names or ["M", "N"]
    parts = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        n = rng.choice(names + ["X", "bx", "", "1M", "M N", "é"])
        v = rng.choice(["1", "2", "3", "17", "31", "62", "63", "64", "1000", "1448", "2048", "4096", "16384", "65536",
                        "0", "-1",
                        "2147483647", "2147483648", "4294967296", "9999999999999999999", "10000000000000000000",
                        "", "x", "1.5", "１２", "0x10", " 64 ", "1e3", "+5"])
        parts.append(rng.choice([f"{n}={v}", f"{n}={v}", f"{n}:{v}", n, f"={v}", f"{n}=={v}"]))
    return rng.choice([",", ",", ", ", ";"]).join(parts) + rng.choice(["", "", ",", ",,"])


def _checks_opt(rng: random.Random) -> str:
    odd = ["vectorization", "bogus", "", " coverage", "COVERAGE", "grid_coverage,"]
    parts = rng.sample(CHECKS, rng.randint(0, 3)) + ([rng.choice(odd)] if rng.random() < 0.3 else [])
    return ",".join(parts)


def _odd_output(rng: random.Random, spec_name: str) -> tuple[str, list[str]]:
    """(path, dirs to create)."""
    return rng.choice([
        ("out.txt", []), ("missing/dir/out.txt", []), (spec_name, []), (f"./{spec_name}", []),
        (f"sub/../{spec_name}", ["sub"]), ("/dev/full", []), ("/dev/null", []), (".", []), ("sub", ["sub"]),
        ("", []), ("-", []), ("x" * 300 + ".txt", []), ("a\nb.txt", []), ("out \x1b[31m.txt", []),
        ("sub/", ["sub"]), ("é.json", []), ("\udcff.txt", []), ("ro/out.txt", ["ro"]),
    ])


def case_options(rng: random.Random, idx: int) -> Case:
    if rng.random() < 0.7:
        rel = rng.choice(_SMALL_LIBRARY) if rng.random() < 0.8 else rng.choice(library())[0]
        data = (REPO / rel).read_bytes()
        spec = yaml.safe_load(data)
        name = Path(rel).name
    else:
        spec = gen_kernel_spec(rng)
        name = "k.yaml"
        data = yaml.safe_dump(spec, sort_keys=False).encode()
    names = _sizes_names(spec)
    if rng.random() < 0.08:
        name = rng.choice(["a b%#.yaml", "é.yaml", "[bold]x[red].yaml", "a:1:2.yaml", "-x.yaml", "x\x1b[31m.yaml",
                           "\udcff.yaml", "a\nb.yaml", "x.YAML", ".yaml", "a,b.yaml", "<&>.yaml"])
    files = {name: data}
    dirs: list[str] = []
    cmd = rng.choices(["verify", "simulate", "show", "other"], [5, 3, 3, 1])[0]
    fmt: str | None = None
    output: str | None = None
    if cmd == "verify":
        argv = ["verify", name]
        if rng.random() < 0.5:
            argv += ["--sizes", _sizes_opt(rng, names)]
        if rng.random() < 0.4:
            argv += ["--checks", _checks_opt(rng)]
        if rng.random() < 0.25:
            argv.append("--exhaustive")
        ofmt = rng.choice(["table", "json", "junit", "sarif", "table"])
        if rng.random() < 0.05:
            ofmt = rng.choice(["xml", "JSON", ""])
        if ofmt != "table":
            argv += ["--format", ofmt]
        fmt = ofmt if ofmt in ("json", "junit", "sarif") else None
        if rng.random() < 0.35:
            output, dirs = _odd_output(rng, name)
            argv += ["-o", output]
        if rng.random() < 0.1:
            argv.append("--check-expected")
        if rng.random() < 0.1:
            argv.append("-v")
        if rng.random() < 0.08:
            argv.insert(2, rng.choice([".", name, "nonexistent.yaml", "sub"]))
            dirs.append("sub")
    elif cmd == "simulate":
        argv = ["simulate", name]
        sfmt = rng.choice(["csv", "json", "npz", "csv"])
        argv += ["--format", sfmt]
        argv += ["--blocks", rng.choice(["0", "all", "1", "-1", "0:0", "5:2", "1,2,3", "0,0", "999999999999999999999",
                                         "0:99999999999", "a", "", "1:", ":", "0:4", "1.5", " 1", "0x1", "٣",
                                         "-5:3", "0:-1", "3,-1", "9223372036854775807", "9223372036854775808:"])]
        if rng.random() < 0.3:
            argv += ["--sizes", _sizes_opt(rng, names)]
        if sfmt == "npz" or rng.random() < 0.3:
            output, dirs = _odd_output(rng, name) if rng.random() < 0.5 else ("out." + sfmt, [])
            if rng.random() < 0.9 or sfmt != "npz":
                argv += ["-o", output]
            else:
                output = None
        fmt = {"csv": "csv", "json": "sim-json", "npz": "npz"}[sfmt]
    elif cmd == "show":
        argv = ["show", name]
        for opt in ("--stage", "--warp", "--step", "--block"):
            if rng.random() < 0.4:
                argv += [opt, str(rng.choice([0, 0, 1, 2, 3, 7, 31, 32, 1000, -1, 2**31, 2**63, 10**30, "x", "",
                                              "1.0"]))]
        if rng.random() < 0.3:
            argv += ["--sizes", _sizes_opt(rng, names)]
        if rng.random() < 0.3:
            p, dirs = _odd_output(rng, name) if rng.random() < 0.5 else ("pic.svg", [])
            argv += ["--svg", p]
            output = p if p not in ("/dev/null", "/dev/full") else None
            fmt = "svg"
    else:
        argv = rng.choice([["schema"], ["examples"], ["--version"], ["--help"], [], ["bogus"], ["verify"],
                           ["verify", "--format"], ["layout"], ["threadmap"], ["schema", "extra"], ["-h"],
                           ["verify", name, "--sizes"], ["verify", name, "--bogus"], ["VERIFY", name],
                           ["verify", "--", name], ["verify", name, "-o"], ["show", name, "--stage", "-1"],
                           ["simulate"], ["verify", "\udcff.yaml"], ["verify", ""], ["verify", "/dev/null"],
                           ["verify", "/dev/zero"], ["verify", "/proc/self/status"], ["verify", "/"],
                           ["layout", "--json"], ["verify", name, "--format", "json", "--format", "sarif"]])
        fmt = "schema" if argv == ["schema"] else None
    return Case("options", idx, argv, files, dirs=dirs, fmt=fmt, output=output,
                spec_cmd=argv[:1] in (["verify"], ["simulate"], ["show"]))


# =============================================================================== (f) hand-written probes

_PROBE_BASE = """spec: 1
name: probe
threads: 32
sizes: {M: 64, N: 64}
grid: [4, 2]
tensors:
  x: {memory: global, layout: "(M,N):(N,1)"}
  s: {memory: shared, layout: "%(smem)s"}
stages:
  - copy: {src: {tensor: x, tile: [16, 16], at: [%(at)s], threads: "(4,8):(8,1)"},\
 dst: {tensor: s, threads: "(4,8):(8,1)"}, predicate: %(pred)s}
"""


def _probe_spec(smem: str = "(16,16):(16,1)", at: str = "bx, by", pred: str = "bounds") -> bytes:
    return (_PROBE_BASE % {"smem": smem, "at": at, "pred": pred}).encode()


_MMA_BIG = """spec: 1
name: GMMA SS operand B partition, 8 warpgroups
element: %(elem)s
threads: 1024
tensors:
  sB: {memory: shared, layout: "(%(n)d,16):(16,1)"}
stages:
  - copy:
      src: {tensor: sB, mma: {atom: SM90_64x256x16_F16F16F16_SS, atom_layout: "(1,8,1):(0,1,0)", operand: B}}
      dst: {registers: rB}
expect: {coverage: replicated}
"""

_COMMA = """spec: 1
name: odd tensor name
threads: 32
tensors:
  "%(name)s": {memory: shared, layout: "(32,4):(4,1)"}
stages:
  - copy: {src: {tensor: "%(name)s", threads: "(32,1):(1,0)"}, dst: {registers: r}}
"""


def probes() -> list[tuple[list[str], dict[str, bytes], str | None]]:
    """Hand-written inputs aimed at the places the random generators reach rarely:
    (argv, files, output format to validate)."""
    lib = {p.name: p.read_bytes() for p in SPEC_DIR.rglob("*.yaml")}
    out: list[tuple[list[str], dict[str, bytes], str | None]] = []
    # arithmetic `at` near the int64 edge, masked by predicates
    for at in ("bx - 9223372036854775807, by", "-9223372036854775807 + bx, by", "by, bx - 9223372036854775807",
               "-bx * 1000000000000000, by", "bx * 4611686018427387904, by", "-(bx * 9223372036854775807), by",
               "bx - 4611686018427387904, by", "max(bx, 9223372036854775807) - 1, by"):
        for pred in ("none", "bounds", "vector"):
            out.append((["verify", "p.yaml"], {"p.yaml": _probe_spec(at=f'"{at.split(", ")[0]}", '
                                                                         f'"{at.split(", ")[1]}"', pred=pred)}, None))
    # C++ spellings the layout calculator accepts, in spec layouts
    for smem in ("Swizzle<3,4,3>{} o (16,16):(16,1)", "Swizzle<1,0,1>{} o _0 o (16,16):(16,1)",
                 "make_layout(make_shape(16,16), GenRowMajor{})", "make_layout(make_shape(16,16), LayoutLeft{})",
                 "Layout<Shape<_16,_16>, Stride<_16,_1>>{}", "composition(Swizzle<1,0,1>{}, (16,16):(16,1))",
                 "cute::Sw<1,0,1> o (16,16):(16,1)", "Int<16>{}"):
        out.append((["verify", "p.yaml"], {"p.yaml": _probe_spec(smem=smem)}, None))
    # replicated MMA partitions (GMMA SS operands: every thread holds the whole atom tile)
    for elem, n in (("f16", 2048), ("f16", 4096), ("u8", 8192)):
        out.append((["verify", "mma.yaml"], {"mma.yaml": (_MMA_BIG % {"elem": elem, "n": n}).encode()}, None))
    # the simulate dump cap (2^24 rows) against the text writers
    rs = lib["row_smem.yaml"]
    for fmt, sizes in (("json", "M=2048,N=2048"), ("csv", "M=2048,N=2048"), ("json", "M=1024,N=1024")):
        out.append((["simulate", "row_smem.yaml", "--sizes", sizes, "--blocks", "all", "--format", fmt, "-o",
                     f"out.{fmt}"], {"row_smem.yaml": rs}, None))
    # tensor names through every output format
    for name in ("a,b", "a;b", 'a\"b', "<t>&", "x y", "é"):
        data = (_COMMA % {"name": name}).encode()
        out.append((["simulate", "t.yaml"], {"t.yaml": data}, "csv"))
        out.append((["simulate", "t.yaml", "--format", "json"], {"t.yaml": data}, "sim-json"))
        for f in ("json", "junit", "sarif"):
            out.append((["verify", "t.yaml", "--format", f], {"t.yaml": data}, f))
    # spec file names through SARIF / JUnit
    for fname in ("a b%#.yaml", b"x\x1b[31m.yaml".decode("unicode_escape"), "é.yaml", "[x].yaml"):
        for f in ("sarif", "junit", "json"):
            out.append((["verify", fname, "--format", f], {fname: lib["off_by_one_grid.yaml"]}, f))
    # the calculator on results that are not layouts
    for argv in (["4:1", "shape", "shape"], ["4:1", "size", "table"], ["4:1", "show", "shape"],
                 ["8:1", "stride", "eval", "5"], ["(2):(1@0)", "table"], ["(2,2):(1@0,1@1)", "table"],
                 ["4:1", "rank", "eval", "0"], ["4:1", "show", "size"],
                 ["4:1", "shape", "coalesce"], ["4:1", "cosize", "show"], ["4:1", "table", "size"],
                 ["4:1", "depth", "--json"], ["(2,2):(1@0,1@1)", "show"], ["(2,2):(1@0,1@1)", "--json"],
                 ["(2,2):(1@0,1@1)", "eval", "3"], ["(2,2):(1@0,1@1)", "right_inverse"],
                 ["shape((4,8):(8,1))", "size"], ["size((4,8))", "show"]):
        out.append((["layout", *argv], {}, "calc-json" if "--json" in argv else None))
    # -o paths
    for o in ("x" * 300 + ".txt", b"a\nb.txt".decode("unicode_escape"), "d/" + "y" * 300, "/dev/full",
              "/proc/self/status", "/"):
        out.append((["verify", "row_smem.yaml", "-o", o], {"row_smem.yaml": rs}, None))
        out.append((["show", "row_smem.yaml", "--svg", o], {"row_smem.yaml": rs}, None))
        out.append((["simulate", "row_smem.yaml", "-o", o], {"row_smem.yaml": rs}, None))
    # paths to verify
    for p in ("/", "/proc", "/dev/null", "/dev/zero", "/proc/self/mem", "."):
        out.append((["verify", p], {}, None))
    # thread-map parameters whose per-thread work the listing cap does not see
    for argv in (["PitchLinearTilePolicyStripminedThreadStrided", "(32,32)", "32", "1099511627776"],
                 ["PitchLinearTilePolicyStripminedThreadContiguous", "(32,32)", "32", "1099511627776"],
                 ["PitchLinearStripminedThreadMap", "(32,32)", "32", "1099511627776"],
                 ["PitchLinearWarpRakedThreadMap", "(32,32)", "32", "4x8", "1099511627776"],
                 ["PitchLinear2DThreadTileStripminedThreadMap", "(32,32)", "32", "(1099511627776,4)"],
                 ["TransposePitchLinearThreadMapSimt", "PitchLinearStripminedThreadMap 32x32 32 1099511627776"]):
        out.append((["threadmap", *argv], {}, None))
    # sizes so large that the whole-grid coverage state exceeds the budget
    for m in ("2147483648", "2147483647", "1073741824"):
        data = (_PROBE_BASE.replace("{M: 64, N: 64}", f"{{M: {m}, N: 16}}").replace("grid: [4, 2]",
                "grid: [\"ceil_div(M, 16)\", 1]") % {"smem": "(16,16):(16,1)", "at": "bx, by", "pred": "bounds"}
                ).encode()
        out.append((["verify", "big.yaml"], {"big.yaml": data}, None))
    return out


def case_probe(rng: random.Random, idx: int) -> Case:
    argv, files, fmt = probes()[idx]
    return Case("probe", idx, argv, files, fmt=fmt, spec_cmd=argv[0] in ("verify", "simulate", "show"))


MAKERS: dict[str, Callable[[random.Random, int], Case]] = {
    "kernel": case_kernel, "mutate": case_mutate, "layout": case_layout, "threadmap": case_threadmap,
    "options": case_options, "probe": case_probe,
}


def make_case(gen: str, idx: int, seed: int) -> Case:
    rng = random.Random(f"{seed}:{gen}:{idx}")
    return MAKERS[gen](rng, idx)


# =============================================================================== running one input


@dataclass
class Result:
    status: int | None          # exit status, None when killed by a signal
    signal: int | None
    wall: float
    maxrss_kb: int
    out: bytes
    err: bytes
    trace: str
    output_file: bytes | None


def _record_trace(meta: Path, what: str) -> None:
    with open(meta / "trace.txt", "a", encoding="utf-8", errors="backslashreplace") as f:
        f.write(f"--- {what}\n{traceback.format_exc()}\n")


def _install_hooks(meta: Path) -> None:
    """Side channel: the traceback behind an internal error (exit 3) or a MemoryError/RecursionError,
    written to meta/trace.txt; the CLI's output is unchanged."""
    import threadmap.api as api
    import threadmap.cli as cli
    from threadmap.errors import ThreadmapError
    from threadmap.verify import WorkTooLarge

    orig_fail = cli._fail

    def fail_hook(msg: str, status: int = 2) -> Any:
        if sys.exc_info()[0] is not None and (status == 3 or isinstance(sys.exc_info()[1], (MemoryError,
                                                                                           RecursionError))):
            _record_trace(meta, f"cli status {status}")
        return orig_fail(msg, status)
    cli._fail = fail_hook  # type: ignore[assignment]

    orig_vs = api.verify_spec

    def vs_hook(*a: Any, **k: Any) -> Any:
        try:
            return orig_vs(*a, **k)
        except (ThreadmapError, WorkTooLarge):
            raise
        except BaseException:
            _record_trace(meta, "verify_spec")
            raise
    api.verify_spec = vs_hook  # type: ignore[assignment]


def _child(case: Case, run: Path, meta: Path, mem_limit: int, time_limit: int) -> None:
    """In the forked child: run the CLI as a user would, then _exit with its status."""
    code = 70
    try:
        os.setsid()
        os.chdir(run)
        resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.alarm(time_limit)
        fd_in = os.open(os.devnull, os.O_RDONLY)
        fd_out = os.open(meta / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        fd_err = os.open(meta / "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd_in, 0)
        os.dup2(fd_out, 1)
        os.dup2(fd_err, 2)
        for fd in (fd_in, fd_out, fd_err):
            os.close(fd)
        import io
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="strict")
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        _install_hooks(meta)
        from threadmap.cli import entry
        sys.argv = ["threadmap", *case.argv]
        try:
            entry()
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code & 0xFF
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:  # what the interpreter would print for an uncaught exception
            _record_trace(meta, "uncaught")
            traceback.print_exc()
            code = 1
        try:
            sys.stdout.flush()
        except BaseException:  # noqa: BLE001 - as the interpreter at exit: report, exit 120
            traceback.print_exc()
            code = 120
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - harness failure
        try:
            with open(meta / "harness.txt", "w") as f:
                f.write(traceback.format_exc())
        except BaseException:  # noqa: BLE001
            pass
        code = 70
    os._exit(code)


def _prepare(case: Case, base: Path) -> tuple[Path, Path]:
    run = base / "run"
    meta = base / "meta"
    if base.exists():
        shutil.rmtree(base, ignore_errors=True)
    run.mkdir(parents=True)
    meta.mkdir()
    for d in case.dirs:
        (run / d).mkdir(parents=True, exist_ok=True)
        if d == "ro":
            os.chmod(run / d, 0o555)
    for name, data in case.files.items():
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_bytes(data)
    return run, meta


def start(case: Case, base: Path, mem_limit: int = MEM_LIMIT, time_limit: int = TIME_LIMIT) -> tuple[int, float]:
    run, meta = _prepare(case, base)
    sys.stdout.flush()
    sys.stderr.flush()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(case, run, meta, mem_limit, time_limit)
    return pid, t0


def finish(case: Case, base: Path, wstatus: int, rusage: Any, t0: float) -> Result:
    wall = time.monotonic() - t0
    run, meta = base / "run", base / "meta"
    status = os.waitstatus_to_exitcode(wstatus)
    sig = -status if status < 0 else None

    def rd(p: Path) -> bytes:
        try:
            return p.read_bytes()
        except OSError:
            return b""
    out_file = None
    if case.output and case.output not in ("/dev/null", "/dev/full"):
        p = run / case.output
        try:
            if p.is_file():
                out_file = p.read_bytes()
        except (OSError, ValueError):
            out_file = None
    trace = rd(meta / "trace.txt").decode("utf-8", "replace") + rd(meta / "harness.txt").decode("utf-8", "replace")
    return Result(None if sig else status, sig, wall, int(rusage.ru_maxrss), rd(meta / "stdout"), rd(meta / "stderr"),
                  trace, out_file)


def run_one(case: Case, base: Path, mem_limit: int = MEM_LIMIT, time_limit: int = TIME_LIMIT) -> Result:
    pid, t0 = start(case, base, mem_limit, time_limit)
    deadline = t0 + time_limit + 15
    while True:
        got, wstatus, ru = os.wait4(pid, os.WNOHANG)
        if got:
            return finish(case, base, wstatus, ru, t0)
        if time.monotonic() > deadline:
            _kill(pid)
        time.sleep(0.003)


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# =============================================================================== judging one result

TRACEBACK = re.compile(r"^Traceback \(most recent call last\)|^\s*File \".*\", line \d+", re.M)
EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning)\b(?::|$)", re.M)
WARNING = re.compile(r"\b\w*Warning\b:")
LOCATED = re.compile(r"^.+?:\d+:\d+: \S.*")
OPTION_WORDS = ("-o ", "-o:", "--", "unknown check", "no spec files", "Invalid value", "No such option", "Missing",
                "Got unexpected", "Error:", "show draws", "Option", "No such command", "requires an argument")


URI_REF = re.compile(r"(?:[A-Za-z0-9\-._~:/?\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*"
                     r"(?:#(?:[A-Za-z0-9\-._~:/?@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)?")


def _strict_json(text: str) -> Any:
    def bad(c: str) -> Any:
        raise ValueError(f"non-standard JSON constant {c}")
    return json.loads(text, parse_constant=bad)


def _check_sarif(doc: Any) -> None:
    if doc.get("version") != "2.1.0" or not isinstance(doc.get("runs"), list):
        raise ValueError("not SARIF 2.1.0")
    for run in doc["runs"]:
        for res in run.get("results", []):
            if not isinstance(res.get("message", {}).get("text"), str):
                raise ValueError("result without message.text")
            for loc in res.get("locations", []):
                reg = loc.get("physicalLocation", {}).get("region")
                if reg is not None:
                    for k in ("startLine", "startColumn", "endLine", "endColumn"):
                        if k in reg and not (isinstance(reg[k], int) and reg[k] >= 1):
                            raise ValueError(f"region.{k} = {reg[k]!r}")
                uri = loc.get("physicalLocation", {}).get("artifactLocation", {}).get("uri")
                if uri is not None and not (isinstance(uri, str) and URI_REF.fullmatch(uri)):
                    raise ValueError(f"artifactLocation.uri {uri!r} is not a URI reference (RFC 3986)")


def check_format(fmt: str, data: bytes) -> str | None:
    """None if ``data`` is valid output of kind ``fmt``, else the reason."""
    try:
        if fmt == "npz":
            import io

            import numpy as np
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                for k in z.files:
                    z[k]
            return None
        text = data.decode("utf-8")
        if fmt in ("json", "sim-json", "calc-json", "schema"):
            doc = _strict_json(text)
            if fmt == "json" and not (isinstance(doc, dict) and "runs" in doc and "errors" in doc):
                return "JSON report lacks runs/errors"
            return None
        if fmt == "sarif":
            _check_sarif(_strict_json(text))
            return None
        if fmt in ("junit", "svg"):
            import xml.etree.ElementTree as ET
            root = ET.fromstring(text)
            if fmt == "junit" and root.tag not in ("testsuites", "testsuite"):
                return f"JUnit root is <{root.tag}>"
            return None
        if fmt == "csv":
            import csv
            import io
            rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
            if not rows:
                return "empty CSV"
            for i, row in enumerate(rows[1:], 2):
                if len(row) != len(rows[0]):
                    return f"CSV line {i} has {len(row)} fields, header {len(rows[0])}: {row[:13]!r}"
            return None
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {str(e)[:200]}"
    return None


def judge(case: Case, res: Result) -> list[str]:
    """The failure kinds of one result (empty: the promise holds)."""
    kinds: list[str] = []
    out = res.out.decode("utf-8", "replace")
    err = res.err.decode("utf-8", "replace")
    both = out + "\n" + err
    if TRACEBACK.search(both) or "uncaught" in res.trace:
        kinds.append("traceback")
    elif EXC_LINE.search(err):
        kinds.append("exception-line")
    if WARNING.search(err):
        kinds.append("warning")
    if "harness" in res.trace or (res.status == 70 and not err):
        kinds.append("harness")
    if res.signal is not None:
        kinds.append("timeout" if res.signal in (signal.SIGALRM, signal.SIGKILL) and res.wall >= TIME_LIMIT - 1
                     else f"signal-{res.signal}")
    elif res.status not in (0, 1, 2, 3):
        kinds.append(f"status-{res.status}")
    elif res.status == 3:
        kinds.append("internal")
    if "MemoryError" in both or res.maxrss_kb * 1024 > MEM_LIMIT:
        kinds.append("memory")
    if "RecursionError" in both:
        kinds.append("recursion")
    if "\x1b" in both:
        kinds.append("raw-escape")
    if res.status in (2, 3):
        lines = [ln for ln in err.splitlines() if ln.strip()]
        if not lines or not lines[0].startswith("threadmap: error:"):
            kinds.append("no-message")
        elif res.status == 3 and len(lines) > 1:
            kinds.append("multiline-internal")
        elif case.spec_cmd and res.status == 2:
            msgs = [lines[0][len("threadmap: error: "):]] + lines[1:]
            for m in msgs:
                if LOCATED.match(m) or any(w in m for w in OPTION_WORDS):
                    continue
                kinds.append("unlocated")
                break
    if res.status in (0, 1) and case.spec_cmd and "threadmap: error:" in err and case.argv[:1] != ["verify"]:
        kinds.append("error-but-success")
    helped = any(a in ("-h", "--help") for a in case.argv)
    if case.fmt and not helped and res.signal is None and res.status in (0, 1, 2, 3):
        data = None
        if case.output and case.output not in ("/dev/null", "/dev/full"):
            data = res.output_file if res.status in (0, 1) else None
        elif not case.output and case.fmt != "svg" and res.out.strip():
            data = res.out
        if data is not None and (res.status in (0, 1) or case.fmt in ("json", "junit", "sarif")):
            why = check_format(case.fmt, data)
            if why:
                kinds.append("bad-format")
        if (res.status in (0, 1) and case.fmt in ("npz", "svg") and case.output
                and case.output not in ("/dev/null", "/dev/full") and res.output_file is None
                and "-o" in case.argv + ["--svg"]):
            kinds.append("missing-output")
    return kinds


def _norm(s: str) -> str:
    s = re.sub(r"'[^']*'|\"[^\"]*\"", "Q", s)
    s = re.sub(r"\d+", "N", s)
    return s[:160]


def signature(case: Case, res: Result, kinds: list[str]) -> str:
    """What identifies the root cause: the innermost threadmap frame of the traceback (and the
    exception type), or the normalised message."""
    err = res.err.decode("utf-8", "replace")
    text = res.trace or (err if "Traceback" in err else "")
    if text:
        blocks = text.split("--- ")
        tb = blocks[-1] if blocks[-1].strip() else text
        frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', tb)
        tm = [f for f in frames if "/threadmap/" in f[0]] or frames
        last_line = [ln for ln in tb.strip().splitlines() if ln.strip()][-1:] or [""]
        exc = last_line[0].split(":")[0].strip()
        if tm:
            f = tm[-1]
            return f"{'+'.join(k for k in kinds if k != 'traceback') or 'traceback'}|{exc}|{Path(f[0]).name}:{f[2]}"
        return f"{'+'.join(kinds)}|{exc}"
    first = [ln for ln in err.splitlines() if ln.strip()][:1]
    return f"{'+'.join(kinds)}|{case.argv[0] if case.argv else ''}|{_norm(first[0]) if first else ''}"


# =============================================================================== the campaign


def iter_cases(counts: dict[str, int], seed: int, start_at: dict[str, int] | None = None) -> Iterator[Case]:
    """Round-robin over the generators so that a partial run samples every one of them."""
    its = {g: iter(range((start_at or {}).get(g, 0), n)) for g, n in counts.items() if n > 0}
    while its:
        for g in list(its):
            i = next(its[g], None)
            if i is None:
                del its[g]
                continue
            try:
                yield make_case(g, i, seed)
            except Exception:  # noqa: BLE001 - a generator bug must not stop the campaign
                traceback.print_exc()


def _warm() -> None:
    """Import everything a command may import, so children start warm."""
    import rich.console  # noqa: F401
    import rich.progress  # noqa: F401
    import rich.table  # noqa: F401

    import threadmap.api  # noqa: F401
    import threadmap.cli  # noqa: F401
    import threadmap.render  # noqa: F401
    import threadmap.report.formats  # noqa: F401
    import threadmap.simulate.engine  # noqa: F401
    import threadmap.spec.cli_schema  # noqa: F401
    import threadmap.verify.run  # noqa: F401
    try:
        import z3  # noqa: F401
    except ImportError:
        pass
    library()
    _mma_names()


def campaign(out: Path, counts: dict[str, int], seed: int, jobs: int, log_every: int = 500) -> dict[str, Any]:
    _warm()
    out.mkdir(parents=True, exist_ok=True)
    (out / "failures").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="tmfuzz-"))
    results = open(out / "results.jsonl", "a", encoding="utf-8")
    running: dict[int, tuple[Case, Path, float]] = {}
    slots = [work / f"slot{i}" for i in range(jobs)]
    free = list(slots)
    stats: dict[str, Any] = {"by_gen": defaultdict(Counter), "status": Counter(), "kinds": Counter(),
                             "signatures": {}, "max_wall": (0.0, ""), "max_rss_kb": (0, ""), "n": 0,
                             "max_wall_by_gen": {}, "max_rss_by_gen": {}}
    t_start = time.monotonic()
    parent_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def reap(block: bool) -> None:
        while running:
            got, wstatus, ru = os.wait4(-1, 0 if block else os.WNOHANG)
            if not got:
                now = time.monotonic()
                for pid, (_c, _b, t0) in list(running.items()):
                    if now - t0 > TIME_LIMIT + 15:
                        _kill(pid)
                return
            if got not in running:
                continue
            case, base, t0 = running.pop(got)
            res = finish(case, base, wstatus, ru, t0)
            record(case, res)
            free.append(base)
            block = False

    def record(case: Case, res: Result) -> None:
        kinds = judge(case, res)
        sig = signature(case, res, kinds) if kinds else ""
        st = "sig" + str(res.signal) if res.signal else str(res.status)
        stats["n"] += 1
        stats["by_gen"][case.gen][st] += 1
        stats["status"][st] += 1
        for k in kinds:
            stats["kinds"][k] += 1
        if res.wall > stats["max_wall"][0]:
            stats["max_wall"] = (res.wall, case.key)
        if res.maxrss_kb > stats["max_rss_kb"][0]:
            stats["max_rss_kb"] = (res.maxrss_kb, case.key)
        mw = stats["max_wall_by_gen"].get(case.gen, (0.0, ""))
        if res.wall > mw[0]:
            stats["max_wall_by_gen"][case.gen] = (res.wall, case.key)
        mr = stats["max_rss_by_gen"].get(case.gen, (0, ""))
        if res.maxrss_kb > mr[0]:
            stats["max_rss_by_gen"][case.gen] = (res.maxrss_kb, case.key)
        err = res.err.decode("utf-8", "replace")
        results.write(json.dumps({"key": case.key, "gen": case.gen, "argv0": case.argv[:1], "status": res.status,
                                  "signal": res.signal, "wall": round(res.wall, 3), "maxrss_kb": res.maxrss_kb,
                                  "kinds": kinds, "sig": sig, "err": err[:300]}) + "\n")
        if kinds:
            sigs = stats["signatures"].setdefault(sig, [])
            sigs.append(case.key)
            if len(sigs) <= 3:
                save_failure(out / "failures" / case.key, case, res, kinds, sig)

    try:
        for case in iter_cases(counts, seed):
            while not free:
                reap(block=False)
                if not free:
                    time.sleep(0.002)
            base = free.pop()
            try:
                pid, t0 = start(case, base)
            except OSError:  # the harness cannot set this input up: note it, go on
                traceback.print_exc()
                free.append(base)
                continue
            running[pid] = (case, base, t0)
            if stats["n"] and stats["n"] % log_every == 0:
                el = time.monotonic() - t_start
                print(f"[{el:7.0f}s] {stats['n']} inputs; status {dict(stats['status'])}; failures "
                      f"{dict(stats['kinds'])}; {len(stats['signatures'])} signatures", flush=True)
                results.flush()
        while running:
            reap(block=True)
    finally:
        results.close()
        shutil.rmtree(work, ignore_errors=True)
    summary = {
        "inputs": stats["n"], "seconds": round(time.monotonic() - t_start, 1), "seed": seed, "counts": counts,
        "parent_rss_kb": parent_rss,
        "by_gen": {g: dict(c) for g, c in stats["by_gen"].items()},
        "inputs_by_gen": {g: sum(c.values()) for g, c in stats["by_gen"].items()},
        "status": dict(stats["status"]), "failure_kinds": dict(stats["kinds"]),
        "max_wall": stats["max_wall"], "max_rss_kb": stats["max_rss_kb"],
        "max_wall_by_gen": stats["max_wall_by_gen"], "max_rss_by_gen": stats["max_rss_by_gen"],
        "signatures": {s: {"count": len(v), "examples": v[:5]} for s, v in stats["signatures"].items()},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def save_failure(d: Path, case: Case, res: Result, kinds: list[str], sig: str) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "case.json").write_text(json.dumps(case.to_json(), indent=1))
    (d / "stdout").write_bytes(res.out[:1_000_000])
    (d / "stderr").write_bytes(res.err[:1_000_000])
    (d / "trace.txt").write_text(res.trace)
    (d / "verdict.json").write_text(json.dumps({"kinds": kinds, "signature": sig, "status": res.status,
                                                "signal": res.signal, "wall": res.wall,
                                                "maxrss_kb": res.maxrss_kb}, indent=1))
    for name, data in case.files.items():
        (d / ("input-" + name.replace("/", "_"))).write_bytes(data)


# =============================================================================== minimising


def _sig_of(case: Case, work: Path, time_limit: int = TIME_LIMIT) -> tuple[str, Result]:
    res = run_one(case, work, time_limit=time_limit)
    kinds = judge(case, res)
    return (signature(case, res, kinds) if kinds else ""), res


def _tree_candidates(d: Any) -> Iterator[Any]:
    """Smaller variants of a spec tree: a subtree dropped, a list shortened, a subtree replaced by a leaf."""
    paths = tree_paths(d)[1:]
    paths.sort(key=len)
    for p in paths:
        nd = copy.deepcopy(d)
        parent = _get(nd, p[:-1])
        del parent[p[-1]]
        yield nd
    for p in paths:
        v = _get(d, p)
        if isinstance(v, (dict, list)) and v:
            for sub in (list(v.values()) if isinstance(v, dict) else v):
                nd = copy.deepcopy(d)
                _get(nd, p[:-1])[p[-1]] = copy.deepcopy(sub)
                yield nd
        if isinstance(v, str) and len(v) > 1:
            for cut in (v[: len(v) // 2], v[len(v) // 2:], v[:1]):
                nd = copy.deepcopy(d)
                _get(nd, p[:-1])[p[-1]] = cut
                yield nd


def _parse_any(data: bytes, name: str) -> tuple[Any, str] | None:
    ext = Path(name).suffix
    try:
        text = data.decode("utf-8")
        if ext == ".json":
            return json.loads(text), "json"
        if ext == ".toml":
            import tomllib
            return tomllib.loads(text), "toml"
        d = yaml.safe_load(text)
        return (d, "yaml") if isinstance(d, (dict, list)) else None
    except Exception:  # noqa: BLE001
        return None


def minimize(case: Case, work: Path, budget: int = 250, log: Callable[[str], None] = print) -> Case:
    """Greedy shrinking that keeps the failure signature."""
    target, _ = _sig_of(case, work)
    if not target:
        log("does not reproduce")
        return case
    log(f"target signature: {target}")
    tries = [0]

    def same(c: Case) -> bool:
        if tries[0] >= budget:
            return False
        tries[0] += 1
        s, _ = _sig_of(c, work)
        return s == target

    best = case
    # 1. drop argv tokens (keep the command)
    i = len(best.argv) - 1
    while i >= 1 and tries[0] < budget:
        c = copy.deepcopy(best)
        c.argv = best.argv[:i] + best.argv[i + 1:]
        if same(c):
            best = c
        i -= 1
    # 2. shrink files as trees, re-dumped in the same format (block YAML)
    for name in list(best.files):
        parsed = _parse_any(best.files[name], name)
        if parsed is not None:
            tree, fmt = parsed
            c = copy.deepcopy(best)
            c.files[name] = (yaml.safe_dump(tree, sort_keys=False, allow_unicode=True) if fmt == "yaml"
                             else json.dumps(tree, ensure_ascii=False) if fmt == "json" else toml_dumps(tree)).encode(
                "utf-8", "surrogatepass")
            if same(c):
                best = c
                progress = True
                while progress and tries[0] < budget:
                    progress = False
                    for cand in _tree_candidates(tree):
                        c = copy.deepcopy(best)
                        try:
                            c.files[name] = (yaml.safe_dump(cand, sort_keys=False, allow_unicode=True) if fmt == "yaml"
                                             else json.dumps(cand, ensure_ascii=False) if fmt == "json"
                                             else toml_dumps(cand)).encode("utf-8", "surrogatepass")
                        except Exception:  # noqa: BLE001
                            continue
                        if same(c):
                            best, tree, progress = c, cand, True
                            break
        # 3. line-level then chunk-level deletion on the text
        data = best.files[name]
        for unit in (b"\n", None):
            pieces = data.split(b"\n") if unit else [data[k:k + 16] for k in range(0, len(data), 16)]
            j = 0
            while j < len(pieces) and tries[0] < budget and len(pieces) > 1:
                cand_p = pieces[:j] + pieces[j + 1:]
                c = copy.deepcopy(best)
                c.files[name] = (b"\n" if unit else b"").join(cand_p)
                if same(c):
                    best, pieces = c, cand_p
                else:
                    j += 1
            data = best.files[name]
    # 4. shrink argv strings (halves, then single characters)
    for k in range(1, len(best.argv)):
        tok = best.argv[k]
        if len(tok) < 4 or any(n == tok for n in best.files):
            continue
        changed = True
        while changed and tries[0] < budget:
            changed = False
            tok = best.argv[k]
            step = max(1, len(tok) // 4)
            for a in range(0, len(tok), step):
                c = copy.deepcopy(best)
                c.argv[k] = tok[:a] + tok[a + step:]
                if c.argv[k] and same(c):
                    best, changed = c, True
                    break
    log(f"minimised in {tries[0]} runs: argv={best.argv!r} files={ {k: len(v) for k, v in best.files.items()} }")
    return best


# =============================================================================== the kept corpus

CORPUS = REPO / "tests" / "cli" / "corpus"


def _index() -> list[dict[str, Any]]:
    p = CORPUS / "index.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else []


def _write_index(idx: list[dict[str, Any]]) -> None:
    CORPUS.mkdir(parents=True, exist_ok=True)
    (CORPUS / "index.json").write_text(json.dumps(idx, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")


def keep(case: Case, cid: str, expected: list[int], time_limit: float, bug: str | None = None,
         extra: dict[str, Any] | None = None, keep_name: bool = False) -> dict[str, Any]:
    """Add ``case`` to tests/cli/corpus: one input file plus an index entry (replaces an entry with the same id).
    With ``keep_name`` the replay copies the input under its original file name (``run_as``)."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    entry: dict[str, Any] = {"id": cid, "gen": case.gen, "from": case.key}
    if len(case.files) > 1:
        raise ValueError("a kept input has at most one file")
    if case.files:
        (name, data), = case.files.items()
        ext = "".join(Path(name).suffixes[-1:]) if Path(name).suffix.lower() in (".yaml", ".yml", ".json", ".toml") \
            else Path(name).suffix or ".txt"
        if not re.fullmatch(r"\.[A-Za-z]{1,5}", ext):
            ext = ".txt"
        fname = f"{cid}{ext}"
        (CORPUS / fname).write_bytes(data)
        entry["input"] = fname
        if keep_name:
            entry["run_as"] = name
        entry["argv"] = [a.replace(name, "{input}") if name in a else a for a in case.argv]
        if name not in case.argv and not any(name in a for a in case.argv):
            entry["argv"] = list(case.argv)
    else:
        fname = f"{cid}.argv.json"
        (CORPUS / fname).write_text(json.dumps(case.argv, ensure_ascii=True) + "\n", encoding="utf-8")
        entry["input"] = fname
        entry["argv"] = None
    if case.dirs:
        entry["dirs"] = list(case.dirs)
    entry["expected_status"] = sorted(expected)
    entry["time_limit_s"] = time_limit
    if case.fmt in ("json", "junit", "sarif", "calc-json", "sim-json") and not case.output:
        entry["format"] = case.fmt
    if bug:
        entry["bug"] = bug
    entry.update(extra or {})
    idx = [e for e in _index() if e["id"] != cid]
    idx.append(entry)
    _write_index(idx)
    return entry


def _feature(c: Case) -> str:
    """What a passing input exercises, for picking diverse ones."""
    if c.gen == "layout":
        ops = _calc_ops()
        return " ".join(a for a in c.argv[2:] if a in ops or a.startswith("--"))[:60] or c.argv[1][:12]
    if c.gen == "threadmap":
        return " ".join([c.argv[1][:40]] + [a for a in c.argv if a.startswith("--")])
    if c.gen in ("kernel", "mutate"):
        return " ".join(c.note.split()[:3]) + " " + " ".join(a for a in c.argv if a.startswith("-"))
    return " ".join(a for a in c.argv if a.startswith("-"))


def sample_regressions(results: Path, seed: int, max_total: int = 150,
                       max_wall: float = 0.6) -> list[tuple[Case, dict[str, Any]]]:
    """Non-failing inputs worth keeping, half rejected (exit 2: one per distinct normalised
    message) and half accepted (exit 0/1: one per distinct feature), round-robin over the
    generators, the fastest of each group; regenerated from their keys."""
    groups: dict[tuple[str, ...], list[tuple[Case, dict[str, Any]]]] = defaultdict(list)
    for line in results.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["kinds"] or r["wall"] > max_wall or r["status"] not in (0, 1, 2):
            continue
        g, i = r["key"].rsplit("-", 1)
        c = make_case(g, int(i), seed)
        # environment-dependent inputs (absolute paths, permissions) do not replay everywhere
        if "ro" in c.dirs or any(a.startswith("/") and a not in ("/dev/null", "/dev/full") for a in c.argv):
            continue
        if r["status"] == 2:
            msg = r["err"].splitlines()[0] if r["err"] else ""
            msg = re.sub(r"^threadmap: error: [^:]*:\d+:\d+: ", "", msg)
            key = (r["gen"], "2", (r["argv0"] or [""])[0], _norm(msg)[:70])
        else:
            key = (r["gen"], "01", (r["argv0"] or [""])[0], str(r["status"]), _feature(c))
        groups[key].append((c, r))
    rng = random.Random(seed)
    pools: dict[tuple[str, str], list[tuple[Case, dict[str, Any]]]] = defaultdict(list)
    for key in sorted(groups):
        best = sorted(groups[key], key=lambda cr: cr[1]["wall"])[:3]
        pools[(key[0], key[1])].append(rng.choice(best))
    for v in pools.values():
        rng.shuffle(v)
    out: list[tuple[Case, dict[str, Any]]] = []
    while len(out) < max_total and any(pools.values()):
        for k in sorted(pools):
            if pools[k] and len(out) < max_total:
                out.append(pools[k].pop())
    return out


# =============================================================================== command line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.fuzz_campaign", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the campaign")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--only", choices=GENERATORS, action="append")
    r.add_argument("--count", type=int, default=None, help="inputs per selected generator")
    s = sub.add_parser("show", help="print one generated input")
    s.add_argument("gen", choices=GENERATORS)
    s.add_argument("idx", type=int)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--run", action="store_true", help="also run it and judge it")
    rr = sub.add_parser("rerun", help="rerun a saved failure directory")
    rr.add_argument("dir", type=Path)
    mm = sub.add_parser("minimize", help="shrink a saved failure keeping its signature; writes case.min.json")
    mm.add_argument("dir", type=Path)
    mm.add_argument("--budget", type=int, default=250)
    kp = sub.add_parser("keep", help="add a saved failure (its case.min.json if any) to tests/cli/corpus")
    kp.add_argument("dir", type=Path)
    kp.add_argument("--id", required=True)
    kp.add_argument("--expected", default="0,1,2", help="allowed exit statuses, e.g. 0,2")
    kp.add_argument("--time-limit", type=float, default=10)
    kp.add_argument("--bug", default=None, help="the open bug's reason (the test fails until fixed)")
    ks = sub.add_parser("keep-sample", help="add a diverse sample of non-failing inputs to tests/cli/corpus")
    ks.add_argument("results", type=Path)
    ks.add_argument("--seed", type=int, default=1)
    ks.add_argument("--max", type=int, default=150)
    a = ap.parse_args(argv)
    if a.cmd == "run":
        counts = {**DEFAULT_COUNTS, "probe": len(probes())}
        if a.only:
            counts = {g: (a.count or counts[g]) for g in a.only}
        elif a.count:
            counts = {g: a.count for g in counts}
        summary = campaign(a.out, counts, a.seed, a.jobs)
        print(json.dumps({k: v for k, v in summary.items() if k != "signatures"}, indent=1))
        print(f"{len(summary['signatures'])} distinct failure signatures")
        for sig, v in sorted(summary["signatures"].items(), key=lambda kv: -kv[1]["count"]):
            print(f"  {v['count']:5d}  {sig}   e.g. {', '.join(v['examples'][:3])}")
        return 0
    if a.cmd == "show":
        _warm()
        c = make_case(a.gen, a.idx, a.seed)
        print(json.dumps({"argv": c.argv, "fmt": c.fmt, "output": c.output, "dirs": c.dirs, "note": c.note}))
        for name, data in c.files.items():
            print(f"--- {name}\n{data.decode('utf-8', 'backslashreplace')}")
        if a.run:
            with tempfile.TemporaryDirectory() as t:
                res = run_one(c, Path(t))
                kinds = judge(c, res)
                print(f"status={res.status} signal={res.signal} wall={res.wall:.2f}s rss={res.maxrss_kb}KB "
                      f"kinds={kinds} sig={signature(c, res, kinds) if kinds else ''}")
                print("stdout:", res.out.decode("utf-8", "replace")[:3000])
                print("stderr:", res.err.decode("utf-8", "replace")[:3000])
                print(res.trace[-3000:])
        return 0
    if a.cmd == "keep":
        f = a.dir / "case.min.json" if (a.dir / "case.min.json").exists() else a.dir / "case.json"
        c = Case.from_json(json.loads(f.read_text()))
        e = keep(c, a.id, [int(x) for x in a.expected.split(",")], a.time_limit, a.bug)
        print(json.dumps(e))
        return 0
    if a.cmd == "keep-sample":
        _warm()
        idx_before = len(_index())
        for c, r in sample_regressions(a.results, a.seed, max_total=a.max):
            cid = f"ok-{c.gen}-{c.idx}"
            keep(c, cid, [r["status"]], round(min(20.0, max(5.0, 20 * r["wall"])), 1))
        print(f"kept {len(_index()) - idx_before} inputs")
        return 0
    if a.cmd in ("rerun", "minimize"):
        _warm()
        c = Case.from_json(json.loads((a.dir / "case.json").read_text()))
        with tempfile.TemporaryDirectory() as t:
            if a.cmd == "minimize":
                m = minimize(c, Path(t), a.budget)
                (a.dir / "case.min.json").write_text(json.dumps(m.to_json(), indent=1))
                c = m
            res = run_one(c, Path(t))
            kinds = judge(c, res)
            print(json.dumps({"argv": c.argv, "status": res.status, "signal": res.signal, "wall": res.wall,
                              "maxrss_kb": res.maxrss_kb, "kinds": kinds,
                              "sig": signature(c, res, kinds) if kinds else ""}))
            print("stderr:", res.err.decode("utf-8", "replace")[:3000])
            print(res.trace[-4000:])
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
