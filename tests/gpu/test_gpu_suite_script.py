"""tools/gpu/device_suite.sh on the host, with every GPU tool and Python replaced by stubs: its
exit status is the steps' (it ran with status 1 after a successful run: `tail -5 A B`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools/gpu/device_suite.sh"


def _run(tmp_path: Path, gpu_status: int) -> subprocess.CompletedProcess[str]:
    """The script with stubs: python3 exits ``gpu_status`` for ``threadmap.cli gpu specs/``,
    0 otherwise; nvidia-smi, nvcc, ncu and compute-sanitizer print a line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(
        "#!/bin/sh\necho \"python3 $*\"\n"
        f"case \"$*\" in *'threadmap.cli gpu specs/ '*) exit {gpu_status};; esac\nexit 0\n")
    for tool in ("nvidia-smi", "nvcc", "ncu", "compute-sanitizer"):
        (bin_dir / tool).write_text(f"#!/bin/sh\necho '{tool} 1.0'\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(tmp_path)}
    return subprocess.run([shutil.which("bash") or "/bin/bash", str(SCRIPT), str(out)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_successful_run_exits_0_and_shows_both_logs(tmp_path: Path) -> None:
    r = _run(tmp_path, 0)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "log.txt <==" in r.stdout and "warm.txt <==" in r.stdout and "threadmap gpu exit 0" in r.stdout
    assert "invalid context" not in r.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_disagreement_is_the_exit_status(tmp_path: Path) -> None:
    r = _run(tmp_path, 1)
    assert r.returncode == 1 and "threadmap gpu exit 1" in r.stdout, (r.stdout, r.stderr)
