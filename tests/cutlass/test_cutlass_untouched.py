"""Thread maps that leave part of their tile untouched: ``PitchLinearThreadMap.untouched``
against the real header, the calculator's warning, and ``verify``'s coverage verdict.

The oracle is one host program over a batch of maps (the header's valid configurations of
every kind from ``test_cutlass_cxx_oracle`` plus maps chosen to leave rows or columns out):
for each it marks every tile element reached by ``initial_offset(t) + (c * Delta::kContiguous
+ v, s * Delta::kStrided + ts)`` over the header's ``kThreads``, ``Iterations`` and the access
shape (``kElementsPerAccess`` wide, or ``ThreadAccessShape`` for the 2D-thread-tile maps) and
prints the elements left unmarked.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

import threadmap.api as api
from tests.cutlass.test_cutlass_cxx_oracle import valid_configs
from tests.support.cxx_oracle import require_oracle, run_cxx
from threadmap.cli import main
from threadmap.cutlass import (
    PitchLinear2DThreadTileStripminedThreadMap,
    PitchLinearStripminedThreadMap,
    PitchLinearThreadMap,
    PitchLinearWarpRakedThreadMap,
    PitchLinearWarpStripedThreadMap,
    TransposePitchLinearThreadMapSimt,
)

#: maps chosen to leave parts out (and a few that do not); which ones do is the oracle's to say
CHOSEN: list[PitchLinearThreadMap] = [
    PitchLinearWarpRakedThreadMap((8, 20), 128, (8, 4), 1),  # the issue's map
    PitchLinearWarpRakedThreadMap((16, 20), 64, (8, 4), 2),
    PitchLinearWarpRakedThreadMap((64, 36), 128, (8, 4), 4),
    PitchLinearWarpStripedThreadMap((68, 66), 128, (8, 4), 1),
    PitchLinearWarpStripedThreadMap((64, 40), 128, (8, 4), 4),
    PitchLinearStripminedThreadMap((64, 64), 128, 4),
    PitchLinearStripminedThreadMap((8, 128), 256, 1),
    PitchLinear2DThreadTileStripminedThreadMap((64, 32), 64),
    PitchLinear2DThreadTileStripminedThreadMap((64, 2), 2),
    TransposePitchLinearThreadMapSimt(PitchLinearStripminedThreadMap((8, 128), 256, 1)),
]

#: tile elements the oracle program marks per map, at most
MAX_TILE = 1 << 16


def _maps() -> list[PitchLinearThreadMap]:
    seen: set[str] = set()
    out: list[PitchLinearThreadMap] = []
    for m in CHOSEN + valid_configs():
        if m.cxx_type not in seen and m.shape.count <= MAX_TILE:
            seen.add(m.cxx_type)
            out.append(m)
    return out


def _program(maps: list[PitchLinearThreadMap]) -> str:
    parts = [
        "#include <vector>",
        "template <class M, int SC, int SS, int TC, int TS> void untouched() {",
        "  std::vector<char> hit(SC * SS, 0);",
        "  for (int t = 0; t < M::kThreads; ++t) {",
        "    auto o = M::initial_offset(t);",
        "    for (int s = 0; s < M::Iterations::kStrided; ++s)",
        "      for (int c = 0; c < M::Iterations::kContiguous; ++c)",
        "        for (int ts = 0; ts < TS; ++ts)",
        "          for (int v = 0; v < TC; ++v) {",
        "            int cc = int(o.contiguous()) + c * M::Delta::kContiguous + v;",
        "            int ss = int(o.strided()) + s * M::Delta::kStrided + ts;",
        "            if (cc >= 0 && cc < SC && ss >= 0 && ss < SS) hit[ss * SC + cc] = 1;",
        "          }",
        "  }",
        "  for (int i = 0; i < SC * SS; ++i)",
        '    if (!hit[i]) std::printf(" %d,%d", i % SC, i / SC);',
        "}",
    ]
    for i, m in enumerate(maps):
        # the tile and access shape from the header's own members where the struct has them
        sc, ss = (("M::Shape::kContiguous", "M::Shape::kStrided") if m.has_shape_member
                  else (str(m.shape.contiguous), str(m.shape.strided)))
        tc, ts = (("M::ThreadAccessShape::kContiguous", "M::ThreadAccessShape::kStrided")
                  if m.has_access_shape_axis else ("M::kElementsPerAccess", "1"))
        parts.append(f"void cfg{i}() {{\n  using M = {m.cxx_type};\n  std::printf(\"{i}:\");\n"
                     f"  untouched<M, {sc}, {ss}, {tc}, {ts}>();\n  std::printf(\"\\n\");\n}}")
    parts.append("int main() {")
    parts += [f"  cfg{i}();" for i in range(len(maps))]
    parts.append("  return 0;\n}")
    return "\n".join(parts)


def _header_untouched(maps: list[PitchLinearThreadMap]) -> list[set[tuple[int, int]]]:
    lines = run_cxx(_program(maps)).splitlines()
    assert len(lines) == len(maps)
    out: list[set[tuple[int, int]]] = []
    for i, line in enumerate(lines):
        idx, rest = line.split(":", 1)
        assert int(idx) == i
        out.append({(int(c), int(s)) for c, s in (tok.split(",") for tok in rest.split())})
    return out


@pytest.fixture(scope="module")
def oracle() -> dict[str, set[tuple[int, int]]]:
    require_oracle()
    maps = _maps()
    return {m.cxx_type: u for m, u in zip(maps, _header_untouched(maps), strict=True)}


def _full_lines(m: PitchLinearThreadMap, elements: set[tuple[int, int]]) -> tuple[list[int], list[int]]:
    rows = [s for s in range(m.shape.strided) if all((c, s) in elements for c in range(m.shape.contiguous))]
    cols = [c for c in range(m.shape.contiguous) if all((c, s) in elements for s in range(m.shape.strided))]
    return rows, cols


def test_untouched_equals_header(oracle: dict[str, set[tuple[int, int]]]) -> None:
    maps = _maps()
    with_gaps = 0
    for m in maps:
        want = oracle[m.cxx_type]
        got = m.untouched()
        assert set(got.elements) == want, m.cxx_type
        assert len(got.elements) == len(want), m.cxx_type
        rows, cols = _full_lines(m, want)
        assert (list(got.rows), list(got.columns)) == (rows, cols), m.cxx_type
        assert bool(got) == bool(want)
        assert (got.message() != "") == bool(want)
        with_gaps += bool(want)
    # the batch holds both kinds of map
    assert 5 <= with_gaps <= len(maps) - 5, (with_gaps, len(maps))


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.output


@pytest.mark.parametrize("m", [m for m in CHOSEN if not isinstance(m, TransposePitchLinearThreadMapSimt)],
                         ids=lambda m: m.cxx_type)
def test_calculator_warns_with_the_untouched_rows(m: PitchLinearThreadMap,
                                                   oracle: dict[str, set[tuple[int, int]]]) -> None:
    name = type(m).__name__
    args = [name, f"{m.shape.contiguous}x{m.shape.strided}", str(m.threads)]
    if isinstance(m, (PitchLinearWarpRakedThreadMap, PitchLinearWarpStripedThreadMap)):
        w = m.warp_thread_arrangement
        args += [f"{w.contiguous}x{w.strided}", str(m.elements_per_access)]
    elif isinstance(m, PitchLinear2DThreadTileStripminedThreadMap):
        args += [f"{m.thread_tile_shape.contiguous}x{m.thread_tile_shape.strided}"]
    else:
        args += [str(m.elements_per_access)]
    want = oracle[m.cxx_type]
    rows, cols = _full_lines(m, want)
    code, out = _cli("threadmap", *args, "--json")
    assert code == 0, out
    info: dict[str, Any] = json.loads(out)
    assert info["map"] == m.cxx_type
    assert info["untouched"] == {"rows": rows, "columns": cols, "elements": len(want)}
    assert len(info["warnings"]) == (1 if want else 0)
    code, text = _cli("threadmap", *args)
    assert code == 0, text
    warnings = [ln for ln in text.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == (1 if want else 0)
    if want:
        assert f"{len(want)} of {m.shape.count} elements" in warnings[0]
        if rows:
            assert f"rows (strided) {rows[0]}" in warnings[0]


def test_issue_map_leaves_rows_16_to_19(oracle: dict[str, set[tuple[int, int]]]) -> None:
    m = PitchLinearWarpRakedThreadMap((8, 20), 128, (8, 4), 1)
    assert _full_lines(m, oracle[m.cxx_type]) == ([16, 17, 18, 19], [])
    assert "rows (strided) 16-19" in m.untouched().message()


def _spec(m: PitchLinearThreadMap) -> dict[str, Any]:
    """One global tile read by ``m`` into shared memory, two tiles along each mode."""
    c, s = m.shape
    tm: dict[str, Any] = {"name": type(m).__name__, "shape": [c, s], "threads": m.threads,
                          "elements_per_access": m.elements_per_access, "contiguous_mode": 0}
    if hasattr(m, "warp_thread_arrangement"):
        tm["warp_thread_arrangement"] = list(m.warp_thread_arrangement)
    return {
        "spec": 1, "name": "untouched tile", "element": "f32", "threads": m.threads,
        "sizes": {"M": 2 * c, "K": 2 * s}, "grid": [f"ceil_div(M, {c})", f"ceil_div(K, {s})"],
        "tensors": {"A": {"memory": "global", "layout": "(M,K):(1,M)", "align": 256},
                    "sA": {"memory": "shared", "layout": f"({c},{s}):(1,{c})"}},
        "stages": [{"copy": {"src": {"tensor": "A", "tile": [c, s], "at": ["bx", "by"], "thread_map": tm},
                             "dst": {"tensor": "sA", "thread_map": tm}, "predicate": "vector"}}],
    }


@pytest.mark.parametrize("m", [m for m in CHOSEN if isinstance(
    m, (PitchLinearWarpRakedThreadMap, PitchLinearWarpStripedThreadMap, PitchLinearStripminedThreadMap))],
    ids=lambda m: m.cxx_type)
def test_verify_fails_coverage_exactly_when_untouched(m: PitchLinearThreadMap,
                                                      oracle: dict[str, set[tuple[int, int]]]) -> None:
    want = oracle[m.cxx_type]
    [run] = api.verify_spec(_spec(m), checks=["coverage"], exhaustive=True)
    cov = [r for r in run.results if r.check == "coverage"]
    assert cov, run
    assert all(r.passed for r in cov) == (not want), [r.summary for r in cov]
