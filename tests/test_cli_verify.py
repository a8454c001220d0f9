"""``threadmap verify / simulate / show / schema``: formats, exit statuses and locations."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

from click.testing import CliRunner

from threadmap.cli import main

SPECS = Path(__file__).resolve().parent.parent / "specs"
GOOD = str(SPECS / "cute_transpose" / "row_smem_swizzled.yaml")
BAD = str(SPECS / "cute_transpose" / "col2row_reg.yaml")


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_verify_exit_status_and_table() -> None:
    code, out, _ = run("verify", GOOD)
    assert code == 0 and "PASS" in out and "1 spec runs: 1 pass, 0 fail; 1 as expected, 0 not" in out
    code, out, _ = run("verify", BAD)
    flat = " ".join(out.replace("│", " ").split())  # the table wraps at the terminal width
    assert code == 1 and "coalescing" in flat and "FAIL (as expected)" in flat


def test_check_expected_exit_status() -> None:
    code, _, _ = run("verify", BAD, "--check-expected")
    assert code == 0  # col2row is expected to fail coalescing


def test_verify_json_junit_sarif() -> None:
    code, out, _ = run("verify", BAD, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["failed"] == 1
    rep = doc["runs"][0]
    store = [r for r in rep["results"] if r["check"] == "coalescing" and r["side"] == "dst"][0]
    assert store["status"] == "FAIL" and store["summary"]["sectors_per_request"] == 16
    code, out, _ = run("verify", BAD, "--format", "junit")
    root = ET.fromstring(out)
    assert root.find("testsuite").get("failures") == "1"
    code, out, _ = run("verify", BAD, "--format", "sarif")
    sarif = json.loads(out)
    assert sarif["version"] == "2.1.0"
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["coalescing"]
    # located at the failing stage's line in the spec file
    stage_line = next(i for i, ln in enumerate(Path(BAD).read_text().splitlines(), 1)
                      if ln.strip().startswith("- copy"))
    region = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == stage_line


def test_invalid_spec_exits_2_with_location(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text("spec: 1\nname: x\nthreads: 256\ntensors:\n  x: {memory: global, layout: '(M,N):(N,1)'}\n"
                 "stages:\n  - copy: {src: {tensor: x, threads: '(16,16):(1,16)'}, dst: {registers: r}}\n")
    code, out, err = run("verify", str(p))
    assert code == 2
    assert f"{p}:5:" in err and "M" in err and "Traceback" not in err + out


def test_missing_path_exits_2() -> None:
    code, _, err = run("verify", "/nonexistent/spec.yaml")
    assert code == 2 and "no such file" in err


def test_exit_statuses_of_the_real_commands() -> None:
    """The statuses a shell sees, from the installed script and from ``python -m threadmap``
    (not only from the command's function): 2 for a missing file, 1 for findings."""
    import shutil
    import subprocess
    import sys
    script = shutil.which("threadmap", path=str(Path(sys.executable).parent))
    commands = [[sys.executable, "-m", "threadmap"], [sys.executable, "-m", "threadmap.cli"]]
    commands += [[script]] if script else []
    for cmd in commands:
        missing = subprocess.run([*cmd, "verify", "/nonexistent/spec.yaml"], capture_output=True, text=True)
        assert missing.returncode == 2 and "no such file" in missing.stderr, (cmd, missing.stderr)
        failing = subprocess.run([*cmd, "verify", "specs/cute_transpose/row_smem.yaml"], capture_output=True,
                                 text=True, cwd=Path(__file__).resolve().parent.parent)
        assert failing.returncode == 1, (cmd, failing.stderr)


def test_simulate_csv_and_json() -> None:
    code, out, _ = run("simulate", GOOD)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("stage,side,tensor,block,thread")
    assert len(lines) == 1 + 4 * 256  # two copies, two sides, 256 threads x 1 value, block 0
    code, out, _ = run("simulate", GOOD, "--format", "json", "--blocks", "0:2")
    doc = json.loads(out)
    assert len(doc["tables"]) == 4 and len(doc["tables"][0]["rows"]["thread"]) == 512


def test_show_and_svg(tmp_path: Path) -> None:
    svg = tmp_path / "t.svg"
    code, out, _ = run("show", GOOD, "--stage", "0", "--svg", str(svg))
    assert code == 0 and "T0V0" in out and "wavefronts" in out
    ET.fromstring(svg.read_text())


def test_schema_is_json_schema() -> None:
    code, out, _ = run("schema")
    doc = json.loads(out)
    assert code == 0 and "properties" in doc and "stages" in doc["properties"]
