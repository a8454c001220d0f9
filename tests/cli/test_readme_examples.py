"""The README's examples of writing specs work when pasted (the shell one needs nvcc)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from threadmap.gpu.toolchain import cutlass_include, nvcc

ROOT = Path(__file__).resolve().parents[2]


def _example(name: str, lang: str) -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(rf"<!-- example: {name} -->\n```{lang}\n(.*?)```", text, flags=re.S)
    assert m, f"README example {name} is missing"
    return m.group(1)


def test_python_builder_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_example("python-builder", "python"), "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0] == "spec: 1" and lines[-1] == "pass"
    assert "atom: AutoVectorizingCopy}" in out.getvalue()


def test_spec_header_example(tmp_path: Path) -> None:
    if nvcc() is None or cutlass_include() is None or shutil.which("bash") is None:
        pytest.skip("needs nvcc and the CUTLASS headers (pip install nvidia-cutlass)")
    # the shell finds this environment's `threadmap` first, as it would after `pip install`
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    r = subprocess.run(["bash", "-e", "-c", _example("spec-header", "sh")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 as expected, 0 not" in r.stdout
    assert "tiling" in r.stdout


def test_assertion_helpers_example(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the example names library specs relative to the checkout
    exec(compile(_example("assertions", "python"), "README.md", "exec"), {})
    # and the helper does fail: the unswizzled transpose conflicts
    from threadmap.testing.assertions import assert_conflict_free
    with pytest.raises(AssertionError, match="bank 0 serves 8 distinct words"):
        assert_conflict_free("specs/cute_transpose/row_smem.yaml")
