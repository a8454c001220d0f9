"""``threadmap verify / simulate / show / schema``: formats, exit statuses and locations."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from click.testing import CliRunner

from threadmap.cli import main

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
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
                                 text=True, cwd=Path(__file__).resolve().parents[2])
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


# --------------------------------------------------------------------------------- issue 16

WARP_RAKED_8X20 = """\
spec: 1
name: warp raked 8x20
element: f16
threads: 128
sizes: {M: 20, N: 8}
grid: [1, 1]
tensors:
  A: {memory: global, layout: "(M,N):(N,1)"}
stages:
  - copy:
      src: {tensor: A, tile: [20, 8], at: [bx, by],
            thread_map: {name: PitchLinearWarpRakedThreadMap, shape: [8, 20], threads: 128,
                         warp_thread_arrangement: [8, 4], elements_per_access: 1, contiguous_mode: 1}}
      dst: {registers: frag}
"""
# PitchLinearWarpRakedThreadMap<8x20, 128, 8x4, 1> (cutlass/transform/pitch_linear_thread_map.h):
# ShapeInAccesses (8, 20); a warp covers 8x4 accesses per iteration, WarpAccessIterations =
# (8/8, 20/4) = (1, 5); kWarpCount 4 -> kWarpsStrided = min(4, 5) = 4, kWarpsContiguous 1;
# WarpIterations = (1, 5/4 = 1): each warp touches 4 strided rows once, 4 warps rows 0..15, so
# strided rows 16..19 (4 x 8 = 32 elements) are never touched (the issue confirmed this with
# the real template).


def test_show_and_the_calculator_warn_of_untouched_rows(tmp_path: Path) -> None:
    spec = tmp_path / "k.yaml"
    spec.write_text(WARP_RAKED_8X20)
    r = CliRunner().invoke(main, ["show", str(spec)])
    assert r.exit_code == 0
    assert "warning: stage 0 src (A)" in r.stdout
    assert "32 of 160 elements of the 8x20 tile are never touched: rows (strided) 16-19" in r.stdout
    r = CliRunner().invoke(main, ["threadmap", "PitchLinearWarpRakedThreadMap", "8x20", "128", "8x4", "1", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["untouched"] == {"rows": [16, 17, 18, 19], "columns": [],
                                                                      "elements": 32}
    # and verify fails coverage there
    r = CliRunner().invoke(main, ["verify", str(spec), "--format", "json"])
    assert r.exit_code == 1 and "coverage" in json.loads(r.stdout)["runs"][0]["failing"]
    # a map that covers its tile warns of nothing
    r = CliRunner().invoke(main, ["show", str(ROOT / "specs" / "cutlass" / "stripmined_64x64_128t_v4.yaml")])
    assert r.exit_code == 0 and "warning" not in r.stdout


def test_a_directory_run_prints_a_line_per_spec(tmp_path: Path) -> None:
    lib = ROOT / "specs" / "mma"
    files = sorted(lib.glob("*.yaml"))
    r = CliRunner().invoke(main, ["verify", str(lib)])
    lines = r.stdout.strip().splitlines()
    doc = json.loads(CliRunner().invoke(main, ["verify", str(lib), "--format", "json"]).stdout)
    assert r.exit_code == 1 and len(lines) == len(files) + 1  # a line per spec run, then the summary
    for line, run in zip(lines, doc["runs"], strict=False):
        assert line.startswith(run["verdict"].upper() + " " + run["path"])
        assert all(c in line for c in run["failing"])
    assert lines[-1].endswith(f"{len(files)} as expected, 0 not")
    detailed = CliRunner().invoke(main, ["verify", str(lib), "--details"]).stdout
    assert detailed.count("┏━") == len(files) and len(detailed.splitlines()) > 4 * len(lines)


def test_gpu_without_the_cutlass_headers_says_how_to_get_them(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import threadmap.gpu.toolchain as toolchain

    spec = str(ROOT / "specs" / "cute_transpose" / "row_smem.yaml")
    monkeypatch.setenv("THREADMAP_CUTLASS_INCLUDE", str(tmp_path))
    r = CliRunner().invoke(main, ["gpu", spec, "--where", "host"])
    assert r.exit_code == 2 and "has no cute/ and cutlass/ folders" in r.stderr
    monkeypatch.delenv("THREADMAP_CUTLASS_INCLUDE")
    monkeypatch.setattr(toolchain, "cutlass_include", lambda: None)
    for argv in (["gpu", spec, "--where", "host"], ["spec-header", "--cutlass-include"]):
        r = CliRunner().invoke(main, argv)
        assert r.exit_code == 2 and "pip install 'threadmap[cxx]'" in r.stderr, argv
    assert "nvidia-cutlass>=4.2" in " ".join(_extras()["cxx"]) and _extras()["gpu"]


def _extras() -> dict[str, list[str]]:
    import tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_api_verify_runs_either_engine() -> None:
    import threadmap.api as api
    from threadmap.errors import ThreadmapError
    from threadmap.report.model import EngineReport, VerifyReport

    spec = str(ROOT / "specs" / "mma" / "sm80_ldmatrix_a_32x64.yaml")  # expects bank conflicts; cheap to prove
    enum = api.verify(spec)
    assert isinstance(enum, VerifyReport) and enum.runs[0].verdict == "fail"
    both = api.verify(spec, engine="both", timeout=60)
    assert isinstance(both, EngineReport) and both.engine == "both"
    assert [r.model_dump(exclude={"seconds"}) for r in both.verify.runs] == \
        [r.model_dump(exclude={"seconds"}) for r in enum.runs]
    status = {p.property: p.status for p in both.prove.runs[0].properties}
    assert status["bank_conflicts"] == "REFUTED" and both.disagreements == [] and both.exit_status() == 1
    z3 = api.verify([spec, "no/such/spec.yaml"], engine="z3", timeout=60)
    assert isinstance(z3, EngineReport) and z3.verify.runs == [] and len(z3.prove.runs) == 1
    assert [e.path for e in z3.prove.errors] == ["no/such/spec.yaml"] and z3.exit_status() == 2
    auto = api.verify(spec, engine="auto")  # no size range: enumerated only
    assert isinstance(auto, EngineReport) and len(auto.verify.runs) == 1 and auto.prove.runs == []
    with pytest.raises(ThreadmapError, match="unknown engine"):
        api.verify(spec, engine="guess")
    with pytest.raises(ThreadmapError, match="no sizes"):
        api.verify(spec, engine="z3", sizes={"M": 64})


def test_both_engines_report_as_junit_and_sarif() -> None:
    spec = str(ROOT / "specs" / "mma" / "sm80_ldmatrix_a_32x64.yaml")  # bank conflicts, found by both engines
    r = CliRunner().invoke(main, ["verify", spec, "--engine", "both", "--format", "sarif"])
    rules = [(x["ruleId"], x["level"]) for x in json.loads(r.stdout)["runs"][0]["results"]]
    assert r.exit_code == 1 and rules == [("bank_conflicts", "error"), ("prove.bank_conflicts", "error")]
    r = CliRunner().invoke(main, ["verify", spec, "--engine", "both", "--format", "junit", "--check-expected"])
    suites = ET.fromstring(r.stdout)
    names = [s.get("name", "") for s in suites]
    assert r.exit_code == 1 and len(names) == 2 and names[1] == "prove: " + names[0]
    # the enumeration's expected failure passes with --check-expected; the refuted property does not
    failed = {c.get("name") for c in suites.iter("testcase") if c.find("failure") is not None}
    assert failed == {"bank_conflicts"} and suites[0].get("failures") == "0"


RAGGED_THROUGH_SHARED = """\
spec: 1
name: ragged tile staged through a shared tensor sized to the problem
element: f32
threads: 256
sizes: {M: 10, N: 16}
grid: [1, 1]
tensors:
  x: {memory: global, layout: "(M,N):(N,1)", align: 256}
  y: {memory: global, layout: "(M,N):(N,1)", align: 256}
  s: {memory: shared, layout: "(M,N):(N,1)"}
stages:
  - copy:
      src: {tensor: x, tile: [16, 16], at: [bx, by], threads: "(16,16):(16,1)"}
      dst: {tensor: s, threads: "(16,16):(16,1)"}
      predicate: bounds
  - barrier
  - copy:
      src: {tensor: s, threads: "(16,16):(16,1)"}
      dst: {tensor: y, tile: [16, 16], at: [bx, by], threads: "(16,16):(16,1)"}
      predicate: bounds
expect:
  verdict: pass
  transform: copy
"""
# The 16x16 threads cover a 16x16 tile; the tensors are 10x16, so threads (i, j) with i >= 10
# (6 x 16 = 96 of them) are outside x, s and y alike and the bounds predicate masks them on both
# sides: no access is made, the copy is right.


def test_masked_shared_rows_outside_the_tensor_pass_and_say_masked(tmp_path: Path) -> None:
    spec = tmp_path / "ragged.yaml"
    spec.write_text(RAGGED_THROUGH_SHARED)
    r = CliRunner().invoke(main, ["verify", str(spec)], env={"COLUMNS": "400"})  # a table row on one line
    flat = " ".join(r.stdout.replace("│", " ").split())
    assert r.exit_code == 0 and "PASS (as expected)" in flat
    assert "out of bounds 0, masked (predicate false) 96" in flat
    assert "block 0 thread 160 value 0 is masked (predicate false) at s(10, 0)" in flat and "(+95 more)" in flat
    assert "outside the shared tensor of shape (10, 16) (byte address" not in flat  # the wording of a real access
    doc = json.loads(CliRunner().invoke(main, ["verify", str(spec), "--format", "json"]).stdout)
    shared = [x for x in doc["runs"][0]["results"] if x["check"] == "coverage" and x["stage"] in (0, 2)
              and (x["stage"], x["side"]) in ((0, "dst"), (2, "src"))]
    assert [(x["status"], x["summary"]["out_of_bounds"], x["summary"]["masked"]) for x in shared] == \
        [("PASS", 0, 96)] * 2


def test_the_dataflow_headline_counts_missing_outputs() -> None:
    """The planted transpose whose vector stores skip the 100 elements of the odd row: the
    table's dataflow headline says ``missing 100``."""
    spec = str(SPECS / "planted" / "transpose_vector_store_odd_m.yaml")
    doc = json.loads(CliRunner().invoke(main, ["verify", spec, "--format", "json"]).stdout)
    summary = next(x["summary"] for x in doc["runs"][0]["results"] if x["check"] == "dataflow")
    assert summary["missing"] == 100
    flat = " ".join(CliRunner().invoke(main, ["verify", spec], env={"COLUMNS": "400"}).stdout
                    .replace("│", " ").split())
    assert f"moved {summary['moved']}, wrong 0, missing 100, races 0" in flat


def test_the_page_headline_is_the_tables(tmp_path: Path) -> None:
    """The Explorer page's ``headline`` (static/app.js, run in node) writes what the table's
    writes, for the coverage of masked shared rows and the dataflow's missing count (numbers
    under 1000: the page groups thousands with a thin space)."""
    import re
    import shutil
    import subprocess

    from threadmap.report.formats import headline
    from threadmap.report.model import CheckResult

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    src = (ROOT / "threadmap" / "service" / "static" / "app.js").read_text()
    m = re.search(r"\n  const num = .*?\n  function headline\(r\) \{.*?\n  \}\n", src, re.S)
    assert m, "app.js: num, g3 and headline not found"
    spec = tmp_path / "ragged.yaml"
    spec.write_text(RAGGED_THROUGH_SHARED)
    doc = json.loads(CliRunner().invoke(main, ["verify", str(spec), "--format", "json"]).stdout)
    results = [x for x in doc["runs"][0]["results"] if x["check"] in ("coverage", "dataflow")]
    missing = dict(results[-1], summary=dict(results[-1]["summary"], missing=7, moved=320))
    results += [missing, dict(missing, summary=dict(missing["summary"], missing=None))]
    script = m.group() + f"\nfor (const r of {json.dumps(results)}) console.log(headline(r));\n"
    out = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True).stdout.splitlines()
    want = [headline(CheckResult.model_validate(x)) for x in results]
    assert out == want and any("masked (predicate false) 96" in w for w in want)
    assert "wrong 0, missing 7, races" in want[-2] and "missing" not in want[-1]
