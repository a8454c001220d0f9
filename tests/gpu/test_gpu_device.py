"""On a GPU: a real kernel's printed log diffed against the spec, and the device suite on one
spec.  Skipped, with the reason, where there is no device (CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from threadmap.gpu.device import available

ROOT = Path(__file__).resolve().parents[2]
OK, WHY = available()
pytestmark = pytest.mark.skipif(not OK, reason=f"needs a GPU: {WHY}")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@pytest.mark.parametrize("bug", [False, True])
def test_a_kernel_printed_log_diffs_with_the_spec(tmp_path: Path, bug: bool) -> None:
    M, N = 40, 24
    run = subprocess.run([sys.executable, str(ROOT / "tools/gpu/run_kernel_log.py"), str(M), str(N)]
                         + (["bug"] if bug else []), capture_output=True, text=True, timeout=600, env=_env())
    assert run.returncode == 0, run.stderr
    log = tmp_path / "kernel.log"
    log.write_text(run.stdout)
    if not bug:
        assert run.stdout.count("TM stage=") == 2 * M * N
    d = subprocess.run([sys.executable, "-m", "threadmap.cli", "diff", str(ROOT / "specs/cute_transpose/row_smem.yaml"),
                        str(log), "--sizes", f"M={M},N={N}", "--format", "json"], capture_output=True, text=True,
                       timeout=600, env=_env())
    rep = json.loads(d.stdout)
    if not bug:
        assert d.returncode == 0 and rep["matched"] == 2 * M * N and "transpose correct" in run.stderr, rep
    else:
        assert d.returncode == 1 and rep["moved"] > 0 and rep["malformed_count"] == 0, rep


def test_the_suite_on_one_spec() -> None:
    from threadmap.gpu.run import suite
    # the relative path (from the repository root) names the programs as tools/gpu/precompile.py does
    r = suite(["specs/cute_transpose/row_smem_swizzled.yaml"])
    assert r.probes and all(p.mismatches == 0 for p in r.probes)
    assert r.behaviour and all(b.correct and b.agrees for b in r.behaviour)


def test_a_shared_read_outside_its_tensor_fails_as_the_verifier_says() -> None:
    """The reads past sB deliver the right data (they land in sA); the counting kernel sees
    them, so the run agrees with the verifier's coverage failure instead of contradicting it."""
    from threadmap.gpu.run import suite
    r = suite(["tests/gpu/shared_read_leaves_tensor.yaml"])
    assert r.probes and all(p.mismatches == 0 for p in r.probes)
    (b,) = r.behaviour
    assert b.agrees is True and not b.correct and b.wrong == b.missing == b.stray == 0, b
    assert b.out_of_tensor == 16 * 16, b  # 16 reads per block outside sB, 16 blocks (the spec's derivation)
