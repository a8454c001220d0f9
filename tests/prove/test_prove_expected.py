"""``threadmap prove --check-expected``: a library of planted bugs is green when each spec's
``expect:`` block holds (as ``verify --check-expected``), and red when one does not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from threadmap.prove.expected import run_mismatches
from threadmap.report.model import PropertyResult, ProveRun

ROOT = Path(__file__).resolve().parents[2]
PROPS = ("grid", "coverage", "predicates", "dataflow", "bank_conflicts", "vectorize", "coalescing", "aliasing")


def _run(**status: str) -> ProveRun:
    return ProveRun(spec="s", path="s.yaml", ranges={}, assume=[], bits=8, seconds=0.0, properties=[
        PropertyResult(property=p, status=status.get(p, "PROVED"), method="z3", seconds=0.0,  # type: ignore[arg-type]
                       reason=f"why {p}", sizes={"N": 3} if status.get(p) == "REFUTED" else None)
        for p in PROPS])


def test_planted_library_is_green_only_with_check_expected() -> None:
    cli = [sys.executable, "-m", "threadmap", "prove", str(ROOT / "specs" / "planted"), "--format", "json"]
    assert subprocess.run(cli, capture_output=True, text=True).returncode == 1  # the bugs are refuted
    proc = subprocess.run([*cli, "--check-expected"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_proof_unlike_its_expectation_is_red() -> None:
    # the one-residue planted grid expects pass (its samples pass); the proof refutes it
    proc = subprocess.run([sys.executable, "-m", "threadmap", "prove",
                           str(ROOT / "specs" / "ranges" / "planted_one_residue_grid.yaml"), "--check-expected",
                           "--format", "json"], capture_output=True, text=True)
    assert proc.returncode == 1 and "not as expected: coverage is REFUTED" in proc.stderr


def test_mismatches_mirror_verify() -> None:
    assert run_mismatches(_run(), "pass", []) == []
    # an UNKNOWN is never a pass, and says why
    assert run_mismatches(_run(coalescing="UNKNOWN"), "pass", []) == \
        ["coalescing is UNKNOWN, expected PROVED: why coalescing"]
    # expected failures must be refuted; extra failures are allowed, as verify allows them
    assert run_mismatches(_run(predicates="REFUTED", coverage="REFUTED"), "fail", ["predicates"]) == []
    assert run_mismatches(_run(coverage="REFUTED"), "fail", ["predicates"]) == \
        ["predicates is expected to fail, but predicates PROVED"]
    # aliased writes are verify's grid_coverage failures
    assert run_mismatches(_run(aliasing="REFUTED"), "fail", ["grid_coverage"]) == []
    assert run_mismatches(_run(), "fail", []) == ["expected to fail, but no property is REFUTED"]
