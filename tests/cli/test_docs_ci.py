"""docs/ci.md works as written: its C++ program writes specs that verify, its property tests
pass (and fail, with a witness, on a planted conflict), the pytest and SARIF commands work on
the written specs, its YAML parses, and the pre-commit hook checks the spec library."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from threadmap.gpu.toolchain import ToolchainError, require

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "ci.md").read_text()


def _block(tag: str, lang: str) -> str:
    m = re.search(rf"<!-- ci: {re.escape(tag)} -->\n```{lang}\n(.*?)```", DOC, flags=re.S)
    assert m, f"docs/ci.md: block {tag} is missing"
    return m.group(1)


def _env() -> dict[str, str]:
    # the shell finds this environment's `threadmap` and `python` first, as after `pip install`
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def _sh(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=900)


def _project(tmp_path: Path) -> Path:
    (tmp_path / "specs").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "specs" / "make_specs.cpp").write_text(_block("make_specs.cpp", "cpp"))
    (tmp_path / "tests" / "test_smem_store.py").write_text(_block("test_smem_store.py", "python"))
    return tmp_path


def test_property_tests_pass_and_catch_a_planted_conflict(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_smem_store.py"]
    r = subprocess.run(run, cwd=proj, env=_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "2 passed" in r.stdout, r.stdout + r.stderr
    # the same test on a column-major smem tile: hypothesis finds and shrinks the conflict
    test = proj / "tests" / "test_smem_store.py"
    text = test.read_text()
    assert text.count("L.make_layout((rows, cols), L.LayoutRight))\n") == 1
    test.write_text(text.replace("L.make_layout((rows, cols), L.LayoutRight))\n",
                                 "L.make_layout((rows, cols), L.LayoutLeft))\n"))
    r = subprocess.run([*run, "-x"], cwd=proj, env=_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "has shared-memory bank conflicts: bank_conflicts at 0.dst" in r.stdout
    assert "bank 0 serves 2 distinct words in phase 0" in r.stdout  # the witness
    assert "cols=32" in r.stdout  # shrunk to the narrowest tile


def test_specs_from_cxx_pytest_and_sarif(tmp_path: Path) -> None:
    try:
        require()
    except ToolchainError as e:
        pytest.skip(str(e))
    proj = _project(tmp_path)
    r = _sh(_block("build-specs", "sh"), proj)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 spec runs: 2 pass, 0 fail; 2 as expected, 0 not" in r.stdout
    gmem = yaml.safe_load((proj / "specs" / "gemm_a_gmem.yaml").read_text())
    assert gmem["stages"][0]["copy"]["src"]["thread_map"]["name"] == "PitchLinearWarpRakedThreadMap"
    ldsm = yaml.safe_load((proj / "specs" / "gemm_a_ldsm.yaml").read_text())
    assert ldsm["stages"][0]["copy"]["src"]["tiled_copy"]["atom"] == "SM75_U32x4_LDSM_N"
    # the plugin runs both specs and both property tests
    r = _sh(_block("pytest", "sh"), proj)
    assert r.returncode == 0 and "4 passed" in r.stdout, r.stdout + r.stderr
    r = _sh(_block("sarif", "sh"), proj)
    assert r.returncode == 0, r.stdout + r.stderr
    sarif = json.loads((proj / "threadmap.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["tool"]["driver"]["name"] == "threadmap"


def test_workflow_and_pre_commit_yaml_parse() -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC, flags=re.S)
    assert len(blocks) == 2
    job = yaml.safe_load(blocks[0])["jobs"]["threadmap"]
    run = "\n".join(step.get("run", "") for step in job["steps"])
    assert "spec-header --include-dir" in run and "--format sarif" in run and "pytest" in run
    hooks = yaml.safe_load(blocks[1])["repos"][0]["hooks"]
    assert [h["id"] for h in hooks] == ["threadmap-verify"]


def test_pre_commit_hook_checks_the_spec_library() -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "threadmap-verify" and hook["language"] == "python"
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:  # not a git checkout: every file under the tree
        tracked = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file()]
    files = [f for f in tracked if re.search(hook["files"], f) and not re.search(hook["exclude"], f)]
    assert files and all(f.startswith("specs/") for f in files)
    assert not any(f.endswith("schema.json") for f in files)
    # pre-commit runs the entry with the matched files appended
    r = subprocess.run([*hook["entry"].split(), *files[:6]], cwd=ROOT, env=_env(), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
