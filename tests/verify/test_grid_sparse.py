"""Whole-grid counts of tensors too large for a byte per element: the sparse enumeration (the
element index of every access, sorted) must give exactly what the dense one gives, and a
partial run (too many blocks) judges only the elements its blocks reach.

The dense enumeration is the reference: the same specs are verified with the byte-per-element
budget lowered to 0, which sends every side through the sparse path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import threadmap.api as api
import threadmap.verify.run as run
from threadmap.report.model import SpecRun
from threadmap.spec.load import loads_spec

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "specs").rglob("*.yaml"))

DUPS_AND_HOLES = """
spec: 1
name: diagonal tiles with overlaps and holes
element: f32
threads: 64
sizes: {M: 100, N: 60}
grid: [8, 5]
tensors:
  x: {memory: global, layout: "(M,N):(N,1)"}
stages:
  - copy:
      src: {tensor: x, tile: [16, 16], at: ["bx // 2 + by", "by"], threads: "(8,8):(8,1)"}
      dst: {registers: r}
"""


def _grid(runs: list[SpecRun]) -> list[Any]:
    out = []
    for r in runs:
        for c in r.results:
            if c.check in ("grid_coverage", "predicates"):
                out.append((c.stage, c.side, c.status, c.summary.model_dump(), c.total_findings,
                            [f.model_dump() for f in c.findings]))
    return out


@pytest.mark.parametrize("spec", [*SPECS, "dups_and_holes"])
def test_sparse_counts_equal_the_dense_ones(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    target = loads_spec(DUPS_AND_HOLES, "yaml", "<t>") if spec == "dups_and_holes" else str(ROOT / spec)
    dense = api.verify_spec(target, exhaustive=True)
    monkeypatch.setattr(run, "MAX_BITMAP_BYTES", 0)
    sparse = api.verify_spec(target, exhaustive=True)
    assert _grid(sparse) == _grid(dense)


def test_the_overlapping_spec_has_duplicates_holes_and_escapes() -> None:
    # a guard that the comparison above sees every kind of grid finding
    s = {c.check: c.summary for c in api.verify_spec(loads_spec(DUPS_AND_HOLES, "yaml", "<t>"),
                                                    exhaustive=True)[0].results}
    g = s["grid_coverage"]
    assert g.duplicates > 0 and g.missing > 0 and g.out_of_bounds > 0  # type: ignore[union-attr]


def test_a_partial_run_judges_only_what_its_blocks_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    # a budget of 1 row: the partial run simulates a prefix of the blocks; nothing counts as
    # missing, the duplicates among those blocks (bx = 0 and 1 share a tile) still do
    monkeypatch.setattr(run, "MAX_ROWS", 1)
    r = api.verify_spec(loads_spec(DUPS_AND_HOLES, "yaml", "<t>"), max_rows=1)[0]
    assert r.totals == "partial" and r.blocks_simulated <= r.blocks
    g = next(c for c in r.results if c.check == "grid_coverage")
    assert g.totals == "partial" and g.summary.missing == 0  # type: ignore[union-attr]
    assert g.summary.duplicates > 0 and g.status == "FAIL"  # type: ignore[union-attr]
    assert any("partial" in n for n in r.notes)
