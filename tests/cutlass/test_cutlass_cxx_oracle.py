"""The C++ header oracle for ``threadmap.cutlass``: compare against the real templates.

Two programs, each one translation unit compiled once (and cached):

1. values: a fixed-seed batch of valid configurations of every map in
   ``cutlass/transform/pitch_linear_thread_map.h``; the program prints, for each, every
   public constant (Iterations, Delta, ThreadAccessShape, Detail::*) and ``initial_offset``
   of every thread id.  Python must match exactly.  That the program compiles at all shows
   the header accepts every configuration Python accepts in the batch.
2. acceptance: a fixed-seed batch of raw parameter sets, valid and invalid mixed; each is
   probed on its own source line.  EDG reports every failing instantiation with the line it
   was instantiated from, so the set of lines with errors must be exactly the set Python
   rejects with ``ThreadmapError``.
"""

from __future__ import annotations

import hashlib
import random
import re
import subprocess
from collections.abc import Callable
from typing import Any

import numpy as np

try:
    from tests.support.cxx_oracle import CACHE, PRELUDE, require_oracle, run_cxx
except ImportError:  # tests/ on sys.path instead of the repository root
    from cxx_oracle import CACHE, PRELUDE, require_oracle, run_cxx  # type: ignore[no-redef]
from threadmap.cutlass import (
    PitchLinear2DThreadTileStripminedThreadMap,
    PitchLinearStridedWarpRakedThreadMap,
    PitchLinearStripminedThreadMap,
    PitchLinearThreadMap,
    PitchLinearTilePolicyStripminedThreadContiguous,
    PitchLinearTilePolicyStripminedThreadStrided,
    PitchLinearWarpRakedThreadMap,
    PitchLinearWarpStripedThreadMap,
    TransposePitchLinearThreadMap,
    TransposePitchLinearThreadMap2DThreadTile,
    TransposePitchLinearThreadMapSimt,
)
from threadmap.errors import ThreadmapError

SEED = 20240611
PER_KIND = 18  # valid configurations per map kind in the values program

# --------------------------------------------------------------------------------------------
# constants to compare, per class: (C++ expression relative to M, Python value getter)
# --------------------------------------------------------------------------------------------

Getter = Callable[[Any], int]


def _pair(cxx: str, attr: str) -> list[tuple[str, Getter]]:
    return [
        (f"{cxx}::kContiguous", lambda m, a=attr: getattr(m, a).contiguous),
        (f"{cxx}::kStrided", lambda m, a=attr: getattr(m, a).strided),
    ]


def constants(m: PitchLinearThreadMap) -> list[tuple[str, Getter]]:
    out: list[tuple[str, Getter]] = [
        ("kThreads", lambda m: m.threads),
        ("kElementsPerAccess", lambda m: m.elements_per_access),
        *_pair("Iterations", "iterations"),
        *_pair("Delta", "delta"),
    ]
    if m.has_shape_member:
        out += _pair("Shape", "shape") + _pair("ThreadAccessShape", "thread_access_shape")
    if isinstance(m, PitchLinearStripminedThreadMap):
        out += _pair("Detail::ShapeVec", "shape_vec") + _pair("StorageShape", "storage_shape")
    if isinstance(m, PitchLinearTilePolicyStripminedThreadStrided):
        out += _pair("ShapeVec", "shape_vec")
    if isinstance(m, PitchLinear2DThreadTileStripminedThreadMap):
        out += _pair("Detail::ShapeVec", "shape_vec")
    if isinstance(
        m,
        (PitchLinearWarpRakedThreadMap, PitchLinearStridedWarpRakedThreadMap,
         PitchLinearWarpStripedThreadMap),
    ):
        out += [
            ("Detail::kWarpSize", lambda m: m.warp_size),
            ("Detail::kWarpCount", lambda m: m.warp_count),
            ("Detail::kWarpsStrided", lambda m: m.warps_strided),
            ("Detail::kWarpsContiguous", lambda m: m.warps_contiguous),
            *_pair("Detail::WarpThreadArrangement", "warp_thread_arrangement"),
            *_pair("Detail::ShapeInAccesses", "shape_in_accesses"),
            *_pair("Detail::WarpAccessIterations", "warp_access_iterations"),
            *_pair("Detail::WarpArrangement", "warp_arrangement"),
        ]
    if isinstance(m, TransposePitchLinearThreadMap):
        out += [
            ("Detail::kWarpSize", lambda m: m.warp_size),
            ("Detail::kWarpCount", lambda m: m.warp_count),
            *_pair("Detail::WarpThreadArrangement", "warp_thread_arrangement"),
            *_pair("Detail::WarpArrangement", "warp_arrangement"),
        ]
    return out


# --------------------------------------------------------------------------------------------
# random raw parameters (valid and invalid); fixed seed
# --------------------------------------------------------------------------------------------

EPAS = [1, 1, 2, 4, 4, 8, 16]
THREADS = [1, 2, 3, 4, 8, 16, 32, 32, 40, 64, 64, 96, 128, 128, 160, 256, 256, 512]
WTAS = [(8, 4), (8, 4), (4, 8), (16, 2), (32, 1), (2, 16), (1, 32), (4, 4), (2, 2), (8, 1), (4, 2)]
C_MULT = [1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64]
STRIDED = [1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 32, 64, 128]


def _vector_params(r: random.Random, *, warp: bool) -> dict[str, Any]:
    epa = r.choice(EPAS)
    cont = epa * r.choice(C_MULT) if r.random() < 0.9 else r.randint(1, 100)
    p: dict[str, Any] = {"shape": (cont, r.choice(STRIDED)), "threads": r.choice(THREADS)}
    if warp:
        wta = r.choice(WTAS)
        p["warp_thread_arrangement"] = wta
        p["threads"] = wta[0] * wta[1] * r.choice([1, 1, 2, 4, 8, 3, 5]) + (r.random() < 0.1)
        if r.random() < 0.6:  # make the warp-raked divisibility likely
            p["shape"] = (
                epa * wta[0] * r.choice([1, 2, 3, 4, 8, 16]), wta[1] * r.choice([1, 2, 3, 4, 8])
            )
    p["elements_per_access"] = epa
    return p


def _tile2d_params(r: random.Random) -> dict[str, Any]:
    return {
        "shape": (4 * r.choice([1, 2, 3, 4, 8, 16, 32]) + (r.random() < 0.1),
                  r.choice([1, 2, 4, 8, 12, 16, 32, 64, 128])),
        "threads": r.choice([1, 2, 4, 8, 16, 32, 64, 128, 256, 3]),
        "thread_tile_shape": (4, 4) if r.random() < 0.95 else (2, 2),
    }


VECTOR_KINDS = [
    PitchLinearStripminedThreadMap,
    PitchLinearTilePolicyStripminedThreadContiguous,
    PitchLinearTilePolicyStripminedThreadStrided,
]
WARP_KINDS = [
    PitchLinearWarpRakedThreadMap,
    PitchLinearStridedWarpRakedThreadMap,
    PitchLinearWarpStripedThreadMap,
]
KIND_NAMES = [k.__name__ for k in VECTOR_KINDS + WARP_KINDS] + [
    PitchLinear2DThreadTileStripminedThreadMap.__name__,
    TransposePitchLinearThreadMap.__name__,
    TransposePitchLinearThreadMapSimt.__name__,
    TransposePitchLinearThreadMap2DThreadTile.__name__,
]


def _valid_base(r: random.Random, kinds: list[type], tries: int = 10_000) -> PitchLinearThreadMap:
    for _ in range(tries):
        k = r.choice(kinds)
        try:
            if k is PitchLinear2DThreadTileStripminedThreadMap:
                return k(**_tile2d_params(r))
            return k(**_vector_params(r, warp=k in WARP_KINDS))
        except ThreadmapError:
            continue
    raise AssertionError("no valid configuration found")


def _cxx(kind: str, p: dict[str, Any]) -> str:
    def pls(x: tuple[int, int]) -> str:
        return f"cutlass::layout::PitchLinearShape<{x[0]}, {x[1]}>"

    args = [pls(p["shape"]), str(p["threads"])]
    if "warp_thread_arrangement" in p:
        args.append(pls(p["warp_thread_arrangement"]))
    if "thread_tile_shape" in p:
        args.append(pls(p["thread_tile_shape"]))
    else:
        args.append(str(p["elements_per_access"]))
    return f"cutlass::transform::{kind}<{', '.join(args)}>"


def raw_attempt(r: random.Random, kind: str) -> tuple[Callable[[], PitchLinearThreadMap], str]:
    """One random (possibly invalid) configuration of ``kind``: a thunk constructing it in
    Python, and its C++ type (built from the raw parameters, not from the Python object)."""
    cls = {k.__name__: k for k in VECTOR_KINDS + WARP_KINDS}.get(kind)
    if cls is not None:
        p = _vector_params(r, warp=cls in WARP_KINDS)
        return (lambda: cls(**p)), _cxx(kind, p)
    if kind == PitchLinear2DThreadTileStripminedThreadMap.__name__:
        p2 = _tile2d_params(r)
        return (lambda: PitchLinear2DThreadTileStripminedThreadMap(**p2)), _cxx(kind, p2)
    if kind == TransposePitchLinearThreadMap.__name__:
        inner = _valid_base(r, WARP_KINDS + [PitchLinearStripminedThreadMap] * (r.random() < 0.1))
        w = r.choice(WTAS)
        cxx = (f"cutlass::transform::{kind}<{inner.cxx_type}, "
               f"cutlass::layout::PitchLinearShape<{w[0]}, {w[1]}>>")
        return (lambda: TransposePitchLinearThreadMap(inner, w)), cxx
    if kind == TransposePitchLinearThreadMapSimt.__name__:
        inner = _valid_base(r, [*VECTOR_KINDS, *WARP_KINDS, PitchLinear2DThreadTileStripminedThreadMap])
        return (lambda: TransposePitchLinearThreadMapSimt(inner)), \
            f"cutlass::transform::{kind}<{inner.cxx_type}>"
    if kind == TransposePitchLinearThreadMap2DThreadTile.__name__:
        inner = _valid_base(r, [PitchLinear2DThreadTileStripminedThreadMap] * 3
                            + [PitchLinearStripminedThreadMap, PitchLinearWarpRakedThreadMap])
        return (lambda: TransposePitchLinearThreadMap2DThreadTile(inner)), \
            f"cutlass::transform::{kind}<{inner.cxx_type}>"
    raise AssertionError(kind)


def valid_configs() -> list[PitchLinearThreadMap]:
    """``PER_KIND`` valid configurations of each kind plus a few known CUTLASS ones."""
    r = random.Random(SEED)
    out: list[PitchLinearThreadMap] = [
        PitchLinearStripminedThreadMap((64, 64), 128, 4),
        PitchLinearStripminedThreadMap((4, 1), 8, 1),  # threads outside the tile
        PitchLinearTilePolicyStripminedThreadStrided((2, 8), 8, 4),  # Iterations (0, 1)
        PitchLinear2DThreadTileStripminedThreadMap((64, 2), 2),  # Iterations (8, 0)
        PitchLinearWarpRakedThreadMap((64, 64), 40, (8, 4), 1),  # a partial warp
        PitchLinearWarpStripedThreadMap((68, 66), 128, (8, 4), 1),  # floors everywhere
        PitchLinearWarpStripedThreadMap((8, 8), 96, (8, 4), 1),  # warps overlap
        PitchLinear2DThreadTileStripminedThreadMap((8, 8), 1),  # Delta.s = 1 < 4
        PitchLinearWarpRakedThreadMap((64, 32), 128, (8, 4), 8),
        PitchLinearWarpRakedThreadMap((128, 32), 256, (4, 8), 8),
        PitchLinearWarpStripedThreadMap((64, 64), 128, (8, 4), 4),
        TransposePitchLinearThreadMapSimt(PitchLinearStripminedThreadMap((8, 128), 256, 1)),
        PitchLinear2DThreadTileStripminedThreadMap((64, 32), 64),
    ]
    seen = {m.cxx_type for m in out}
    for kind in KIND_NAMES:
        n = 0
        for _ in range(20_000):
            if n == PER_KIND:
                break
            try:
                m = raw_attempt(r, kind)[0]()
            except ThreadmapError:
                continue
            if m.cxx_type in seen or m.threads > 1024:
                continue
            seen.add(m.cxx_type)
            out.append(m)
            n += 1
        assert n == PER_KIND, f"only {n} valid {kind} configurations found"
    return out


# --------------------------------------------------------------------------------------------
# 1. values
# --------------------------------------------------------------------------------------------


def _values_program(maps: list[PitchLinearThreadMap]) -> str:
    parts = [
        "template <class M> void offsets() {",
        "  for (int t = 0; t < M::kThreads; ++t) {",
        "    auto o = M::initial_offset(t);",
        '    std::printf(" %d %d", int(o.contiguous()), int(o.strided()));',
        "  }",
        "}",
    ]
    for i, m in enumerate(maps):
        parts.append(f"void cfg{i}() {{\n  using M = {m.cxx_type};\n  std::printf(\"{i}\");")
        for expr, _ in constants(m):
            parts.append(f'  std::printf(" %d", int(M::{expr}));')
        parts.append('  std::printf(" |");\n  offsets<M>();\n  std::printf("\\n");\n}')
    parts.append("int main() {")
    parts += [f"  cfg{i}();" for i in range(len(maps))]
    parts.append("  return 0;\n}")
    return "\n".join(parts)


def test_values_match_header() -> None:
    require_oracle()
    maps = valid_configs()
    kinds = {type(m).__name__ for m in maps}
    assert kinds == set(KIND_NAMES), "every map of the header is exercised"
    assert len(maps) >= 150
    out = run_cxx(_values_program(maps)).splitlines()
    assert len(out) == len(maps)
    mismatches: list[str] = []
    compared_offsets = 0
    for i, (line, m) in enumerate(zip(out, maps, strict=True)):
        head, tail = line.split("|")
        idx, *vals = (int(x) for x in head.split())
        assert idx == i
        for (expr, get), v in zip(constants(m), vals, strict=True):
            if get(m) != v:
                mismatches.append(f"{m.cxx_type}: {expr} C++ {v} != Python {get(m)}")
        cxx_off = np.array([int(x) for x in tail.split()], dtype=np.int64).reshape(-1, 2)
        py_c, py_s = m.initial_offset(np.arange(m.threads, dtype=np.int64))
        py_off = np.stack(np.broadcast_arrays(py_c, py_s), axis=-1)
        compared_offsets += len(cxx_off)
        if cxx_off.shape != py_off.shape:
            mismatches.append(f"{m.cxx_type}: {len(cxx_off)} threads in C++, {len(py_off)} in Python")
            continue
        bad = np.nonzero((cxx_off != py_off).any(axis=1))[0]
        for t in bad[:3]:
            mismatches.append(
                f"{m.cxx_type}: initial_offset({t}) C++ {tuple(int(x) for x in cxx_off[t])} != Python "
                f"{tuple(int(x) for x in py_off[t])}"
            )
    assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:40])
    assert compared_offsets > 10_000


# --------------------------------------------------------------------------------------------
# 2. acceptance: Python rejects exactly what the compiler rejects
# --------------------------------------------------------------------------------------------


def _compile_errors(src: str) -> str:
    """Compile ``src`` (no run) and return the compiler's diagnostics; cached by hash."""
    exe, inc = require_oracle()
    key = hashlib.sha256((src + str(inc)).encode()).hexdigest()[:20]
    CACHE.mkdir(parents=True, exist_ok=True)
    log = CACHE / f"diag_{key}.txt"
    if not log.exists():
        cu = CACHE / f"diag_{key}.cu"
        cu.write_text(src)
        proc = subprocess.run(
            [exe, "-std=c++17", "-w", "-Xcudafe", "--error_limit=100000", f"-I{inc}",
             "-x", "cu", "-c", str(cu), "-o", str(CACHE / f"diag_{key}.o")],
            check=False, capture_output=True, text=True, timeout=600,
        )
        log.write_text(proc.stderr + proc.stdout)
    return log.read_text()


def _fixed(kind: str, **p: Any) -> tuple[str, Callable[[], PitchLinearThreadMap], str]:
    cls = {k.__name__: k for k in [*VECTOR_KINDS, *WARP_KINDS,
                                   PitchLinear2DThreadTileStripminedThreadMap]}[kind]
    return kind, (lambda: cls(**p)), _cxx(kind, p)


def _fixed_transpose(
    kind: str, inner: PitchLinearThreadMap, wta: tuple[int, int] | None = None
) -> tuple[str, Callable[[], PitchLinearThreadMap], str]:
    if wta is None:
        cls = {TransposePitchLinearThreadMapSimt.__name__: TransposePitchLinearThreadMapSimt,
               TransposePitchLinearThreadMap2DThreadTile.__name__:
                   TransposePitchLinearThreadMap2DThreadTile}[kind]
        return kind, (lambda: cls(inner)), f"cutlass::transform::{kind}<{inner.cxx_type}>"
    return kind, (lambda: TransposePitchLinearThreadMap(inner, wta)), (
        f"cutlass::transform::{kind}<{inner.cxx_type}, "
        f"cutlass::layout::PitchLinearShape<{wta[0]}, {wta[1]}>>")


def fixed_acceptance_cases() -> list[tuple[str, Callable[[], PitchLinearThreadMap], str]]:
    """Hand-picked configurations: each rejection rule at least once, and accepted edge cases
    (zero iterations, out-of-tile threads, partial warps)."""
    sm, tc, ts = (k.__name__ for k in VECTOR_KINDS)
    wr, swr, ws = (k.__name__ for k in WARP_KINDS)
    t2 = PitchLinear2DThreadTileStripminedThreadMap.__name__
    tr, simt, tr2 = KIND_NAMES[-3:]
    raked = PitchLinearWarpRakedThreadMap((64, 32), 128, (8, 4), 8)
    tile2d = PitchLinear2DThreadTileStripminedThreadMap((64, 32), 64)
    strip1 = PitchLinearStripminedThreadMap((64, 8), 32, 1)
    return [
        _fixed(sm, shape=(30, 64), threads=128, elements_per_access=4),  # line 89
        _fixed(sm, shape=(64, 64), threads=24, elements_per_access=4),  # line 97
        _fixed(sm, shape=(64, 64), threads=128, elements_per_access=4),  # ok
        _fixed(sm, shape=(4, 1), threads=8, elements_per_access=1),  # ok, threads outside
        _fixed(sm, shape=(64, 5), threads=64, elements_per_access=4),  # ok, ceil iterations
        _fixed(tc, shape=(64, 4), threads=32, elements_per_access=4),  # line 156
        _fixed(ts, shape=(64, 4), threads=8, elements_per_access=1),  # line 184
        _fixed(ts, shape=(2, 8), threads=8, elements_per_access=4),  # ok, Iterations (0, 1)
        _fixed(ts, shape=(6, 8), threads=8, elements_per_access=4),  # ok, floor
        _fixed(wr, shape=(60, 64), threads=128, warp_thread_arrangement=(8, 4),
               elements_per_access=8),  # line 250
        _fixed(wr, shape=(64, 64), threads=128, warp_thread_arrangement=(8, 4),
               elements_per_access=16),  # line 260
        _fixed(wr, shape=(64, 6), threads=128, warp_thread_arrangement=(8, 4),
               elements_per_access=1),  # line 264
        _fixed(wr, shape=(64, 64), threads=16, warp_thread_arrangement=(8, 4),
               elements_per_access=1),  # kWarpCount == 0: division by zero (line 295)
        _fixed(wr, shape=(16, 4), threads=256, warp_thread_arrangement=(8, 4),
               elements_per_access=1),  # line 298
        _fixed(wr, shape=(64, 64), threads=40, warp_thread_arrangement=(8, 4),
               elements_per_access=1),  # ok, partial warp
        _fixed(swr, shape=(48, 4), threads=320, warp_thread_arrangement=(8, 4),
               elements_per_access=1),  # base line 298 (own Iterations would be fine)
        _fixed(swr, shape=(8, 8), threads=96, warp_thread_arrangement=(8, 4),
               elements_per_access=1),  # line 427 (base fine)
        _fixed(swr, shape=(64, 64), threads=16, warp_thread_arrangement=(8, 4),
               elements_per_access=1),  # base division by zero
        _fixed(ws, shape=(60, 64), threads=128, warp_thread_arrangement=(8, 4),
               elements_per_access=8),  # line 678
        _fixed(ws, shape=(64, 64), threads=16, warp_thread_arrangement=(8, 4),
               elements_per_access=1),  # kWarpCount == 0 (line 713)
        _fixed(ws, shape=(64, 2), threads=128, warp_thread_arrangement=(8, 4),
               elements_per_access=1),  # WarpAccessIterations::kStrided == 0 (line 698)
        _fixed(ws, shape=(8, 4), threads=128, warp_thread_arrangement=(8, 4),
               elements_per_access=1),  # kWarpsContiguous == 0 (line 712)
        _fixed(ws, shape=(4, 64), threads=128, warp_thread_arrangement=(8, 4),
               elements_per_access=1),  # line 716
        _fixed(ws, shape=(68, 66), threads=128, warp_thread_arrangement=(8, 4),
               elements_per_access=1),  # ok, no divisibility asserts
        _fixed(t2, shape=(66, 64), threads=8, thread_tile_shape=(4, 4)),  # line 813
        _fixed(t2, shape=(64, 64), threads=512, thread_tile_shape=(4, 4)),  # line 815
        _fixed(t2, shape=(48, 64), threads=8, thread_tile_shape=(4, 4)),  # line 824
        _fixed(t2, shape=(64, 64), threads=32, thread_tile_shape=(2, 2)),  # undefined primary
        _fixed(t2, shape=(64, 2), threads=2, thread_tile_shape=(4, 4)),  # ok, Iterations (8, 0)
        _fixed_transpose(tr, PitchLinearWarpRakedThreadMap((64, 8), 64, (8, 4), 8), (4, 8)),  # ok
        _fixed_transpose(tr, raked, (4, 8)),  # line 529
        _fixed_transpose(tr, strip1, (8, 4)),  # no Detail::kWarpsStrided
        _fixed_transpose(simt, strip1),  # line 610
        _fixed_transpose(simt, PitchLinearStripminedThreadMap((8, 64), 64, 1)),  # ok
        _fixed_transpose(simt, raked),  # line 602
        _fixed_transpose(simt, PitchLinearTilePolicyStripminedThreadStrided((1, 64), 64, 1)),
        _fixed_transpose(tr2, strip1),  # line 889
        _fixed_transpose(tr2, tile2d),  # ok
        _fixed_transpose(tr2, raked),  # ok
        _fixed_transpose(tr2, PitchLinear2DThreadTileStripminedThreadMap((64, 2), 2)),  # 895
        _fixed_transpose(simt, TransposePitchLinearThreadMapSimt(
            PitchLinearStripminedThreadMap((8, 64), 64, 1))),  # ok, transpose of a transpose
        _fixed_transpose(tr, TransposePitchLinearThreadMap(
            PitchLinearWarpRakedThreadMap((64, 8), 64, (8, 4), 8), (4, 8)), (4, 8)),  # no Detail
    ]


def acceptance_cases() -> list[tuple[str, PitchLinearThreadMap | None, str, str]]:
    """(kind, map or None, C++ type, Python error) for the fixed cases and a fixed-seed mix
    of raw parameters."""
    r = random.Random(SEED + 1)
    attempts = fixed_acceptance_cases()
    for kind in KIND_NAMES:
        for _ in range(24):
            attempts.append((kind, *raw_attempt(r, kind)))
    cases: list[tuple[str, PitchLinearThreadMap | None, str, str]] = []
    for kind, thunk, cxx in attempts:
        try:
            m = thunk()
        except ThreadmapError as exc:
            cases.append((kind, None, cxx, str(exc)))
        else:
            assert m.cxx_type == cxx
            cases.append((kind, m, cxx, ""))
    return cases


PROBE = """
template <class M> int probe() {
  auto o = M::initial_offset(1);
  return int(M::Iterations::kCount) + int(M::Delta::kContiguous) + int(M::Delta::kStrided)
       + int(M::kThreads) + int(M::kElementsPerAccess) + int(o.contiguous()) + int(o.strided());
}
"""


def test_rejections_match_static_asserts() -> None:
    require_oracle()
    cases = acceptance_cases()
    n_rejected = sum(1 for c in cases if c[1] is None)
    assert n_rejected >= 40 and len(cases) - n_rejected >= 40, "a balanced mix"
    lines = (PRELUDE + PROBE).splitlines()
    line_of: dict[int, int] = {}
    for i, (_, _, cxx, _) in enumerate(cases):
        lines.append(f"int probe{i}() {{ return probe<{cxx}>(); }}")
        line_of[len(lines)] = i
    src = "\n".join(lines) + "\n"
    diag = _compile_errors(src)
    assert "Error limit reached" not in diag
    failing: set[int] = set()
    # one block per diagnostic: from an "...(line): error" to the next one (notes included)
    for block in re.split(r"\n(?=\S+\(\d+\): error)", diag):
        if not re.match(r"\S+\(\d+\): error", block):
            continue
        at = re.findall(r"at line (\d+)(?: of \S+\.cu)?", block)
        m = re.match(r"\S+?\.cu\((\d+)\): error", block)
        candidates = [int(x) for x in at] + ([int(m.group(1))] if m else [])
        hits = [ln for ln in candidates if ln in line_of]
        assert hits, f"unattributed diagnostic:\n{block[:2000]}"
        failing.add(line_of[hits[-1]])
    problems = []
    for i, (_, m, cxx, err) in enumerate(cases):
        if (m is None) != (i in failing):
            problems.append(
                f"{cxx}: Python {'rejects (' + err + ')' if m is None else 'accepts'}, "
                f"C++ {'rejects' if i in failing else 'accepts'}"
            )
    assert not problems, "\n".join(problems)
