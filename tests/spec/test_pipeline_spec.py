"""The spec grammar's pipeline: block: bad input is a located error (exit 2), the library's
pipelines verify as derived, and the JSON report carries the descriptor and the exploration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import threadmap.api as api
from tests.support.located import assert_located_error
from threadmap.errors import SpecError

ROOT = Path(__file__).resolve().parents[2]
BASE = (ROOT / "specs" / "pipeline" / "sm90_tma_ws_mainloop.yaml").read_text()


def variant(tmp_path: Path, old: str, new: str) -> Path:
    assert old in BASE
    p = tmp_path / "v.yaml"
    p.write_text(BASE.replace(old, new, 1))
    return p


@pytest.mark.parametrize(("old", "new", "where", "says"), [
    ("- wait: empty", "- wait: emtpy", "pipeline.roles.producer.program[0].ops[0].wait", "not a barrier"),
    ("- mma: [sA, sB]", "- mma: [sA, sC]", "pipeline.roles.consumer0.program[0].ops[1].mma", "not a buffer"),
    ("tma: {copy: tma_a, barrier: full}", "tma: {copy: tma_c, barrier: full}", "ops[2].tma.copy", "not a copy"),
    ("warps: [8, 11]", "warps: [8, 12]", "pipeline.roles.consumer1.warps", "beyond the CTA"),
    ("- wait_mma: 1", "- {wait_mma: 1, wait_group: 1}", "ops[2]", "exactly one key"),
    ("buffers: [sA, sB]", "buffers: [sA, A]", "pipeline.buffers[1]", "not a shared tensor"),
    ("iterations: \"ceil_div(K, 64)\"", "iterations: \"ceil_div(Q, 64)\"", "pipeline.iterations", "Q"),
    ("tma_a: {src: A, dst: sA, tile: [128, 64]}", "tma_a: {src: sB, dst: sA, tile: [128, 64]}",
     "pipeline.tma.tma_a.src", "not a global tensor"),
])
def test_a_bad_pipeline_is_a_located_error(tmp_path: Path, old: str, new: str, where: str, says: str) -> None:
    p = variant(tmp_path, old, new)
    assert_located_error(p, where, says)


def test_after_loop_needs_a_k_loop_first(tmp_path: Path) -> None:
    p = variant(tmp_path, "        - loop: iterations\n          ops:\n            - wait: empty",
                "        - after_loop: true\n          ops:\n            - wait: empty")
    with pytest.raises(SpecError, match="follows a block with loop: iterations"):
        api.verify_spec(p)


def test_the_report_carries_the_descriptor_and_the_exploration() -> None:
    out = subprocess.run([sys.executable, "-m", "threadmap", "verify", "--format", "json",
                          str(ROOT / "specs" / "pipeline" / "sm90_tma_ws_mainloop.yaml")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)["runs"][0]["results"]
    pipe = next(r for r in res if r["check"] == "pipeline")
    s = pipe["summary"]
    assert s["trip_counts"] == "every trip count >= 1" and s["states"] > 0 and s["finished_runs"] > 0
    assert [t["box_dim"] for t in s["tma"]] == [[64, 128], [64, 128]]
    assert all(t["swizzle"] == 3 and t["bytes_per_issue"] == 16384 for t in s["tma"])


def test_a_finding_points_at_the_operation_and_names_its_trip_count() -> None:
    run = api.verify_spec(ROOT / "specs" / "planted" / "sm90_expect_tx_too_large.yaml")[0]
    f = next(x for r in run.results for x in r.findings if x.kind == "tx_mismatch_hang")
    path = str(ROOT / "specs" / "planted" / "sm90_expect_tx_too_large.yaml")
    line = next(i for i, t in enumerate(Path(path).read_text().splitlines(), 1) if "- wait: full" in t)
    assert f.witness["at"].startswith(f"{path}:{line}:")
    assert f.witness["tx_bytes"] == 16 and f.witness["round"] == 0 and f.witness["stage"] == 0
