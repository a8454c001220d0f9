"""``threadmap gpu SPEC --exe/--launcher``: the user's kernel measured beside its compiled
prediction.  Without a GPU (CI) the prediction per kind of instruction, the comparison with a
counter row, the ncu command and the refusals are tested; tools/gpu/device_suite.sh runs the
measurement on the H200."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cxx_oracle import cannot_run
from threadmap.gpu.toolchain import find_tool, nvcc
from threadmap.gpu.user import (
    KIND_METRICS,
    UserKernelError,
    compare,
    launcher_command,
    measure,
    ncu_command,
)

ROOT = Path(__file__).resolve().parents[2]
TWINS = ROOT / "tests" / "gpu" / "compiled" / "twins.cu"
SPEC = ROOT / "specs" / "cute_transpose" / "row_rvectorized.yaml"


@pytest.fixture(scope="module")
def merged():  # type: ignore[no-untyped-def]
    if nvcc() is None or find_tool("cuobjdump") is None:
        cannot_run("gpu --exe reads the kernel's SASS: nvcc and cuobjdump")
    # no ncu here: the prediction only ('true' stands for the program)
    return measure(str(SPEC), {"M": 1024, "N": 1024}, ["true"], "rr_merged", "sm_90", str(TWINS))


def test_the_prediction_is_summed_per_kind_of_instruction(merged) -> None:  # type: ignore[no-untyped-def]
    by = {(k.memory, k.op): k for k in merged.kinds}
    sides = {(s.stage, s.side): s for s in merged.compiled.sides}
    assert set(by) == {("global", "ld"), ("shared", "st"), ("shared", "ld"), ("global", "st")}
    lds = by[("shared", "ld")]
    c = sides[(2, "src")].compiled
    assert lds.sides == ["stage 2 src"]
    assert (lds.predicted_instructions, lds.predicted) == (c.instructions, c.wavefronts_per_instruction)
    ldg = by[("global", "ld")]
    g = sides[(0, "src")].compiled
    assert (ldg.predicted_instructions, ldg.predicted) == (g.requests, g.sectors / g.requests)
    if find_tool("ncu") is None:
        assert any("ncu not found" in n for n in merged.notes) and all(k.measured is None for k in merged.kinds)


def _row(kinds, scale: float = 1.0, extra_instructions: int = 0) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """An ncu row whose counters are the predictions (``scale``: numerators scaled)."""
    row: dict[str, str] = {}
    for k in kinds:
        n, d = KIND_METRICS[(k.memory, k.op)]
        row[n] = f"{k.predicted * k.predicted_instructions * scale:,.0f}"
        row[d] = str(k.predicted_instructions + extra_instructions)
    return row


def test_a_row_equal_to_the_prediction_agrees_and_any_difference_does_not(merged) -> None:  # type: ignore[no-untyped-def]
    kinds = [k.model_copy(deep=True) for k in merged.kinds]
    compare(kinds, _row(kinds))
    assert all(k.agrees for k in kinds)
    kinds = [k.model_copy(deep=True) for k in merged.kinds]
    compare(kinds, _row(kinds, scale=1.5))
    assert not any(k.agrees for k in kinds)
    kinds = [k.model_copy(deep=True) for k in merged.kinds]
    compare(kinds, _row(kinds, extra_instructions=32))
    assert not any(k.agrees for k in kinds)
    kinds = [k.model_copy(deep=True) for k in merged.kinds]
    compare(kinds, {})
    assert all(k.agrees is None and "not measured" in k.note for k in kinds)


def test_the_ncu_command_profiles_one_launch_of_that_kernel() -> None:
    cmd = ncu_command("ncu", "_Z3fooPf", ["./prog", "1024"])
    assert cmd[-2:] == ["./prog", "1024"] and "-c" in cmd and cmd[cmd.index("-c") + 1] == "1"
    assert cmd[cmd.index("-k") + 1] == r"regex:^_Z3fooPf$" and "--clock-control" in cmd
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    for pair in KIND_METRICS.values():
        assert set(pair) <= set(metrics)


def test_a_launcher_is_a_python_call_and_a_bad_one_is_refused() -> None:
    cmd = launcher_command("json:dumps")
    assert cmd[0] == sys.executable and "import_module('json')" in cmd[2] and "'dumps'" in cmd[2]
    for bad in ("json", "json:", "no_such_module_xyz:f", "a b:c"):
        with pytest.raises(UserKernelError):
            launcher_command(bad)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "threadmap", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


def test_cli_gpu_exe_prints_the_prediction_and_refuses_bad_use(merged) -> None:  # type: ignore[no-untyped-def]
    p = _cli("gpu", str(SPEC), "--exe", "true", "--kernel", str(TWINS), "--kernel-name", "rr_merged",
             "--format", "json")
    if find_tool("ncu") is None:  # the prediction is printed, nothing is measured: never a pass
        assert p.returncode == 2 and "nothing measured" in p.stderr and "Traceback" not in p.stderr, p.stderr
    else:
        assert p.returncode in (0, 1), p.stderr
    out = json.loads(p.stdout)
    assert out["compiled"]["kernel"] == "rr_merged" and len(out["kinds"]) == 4
    for args, says in [(("--exe", "true"), "--kernel-name"),
                       (("--exe", "true", "--launcher", "m:f", "--kernel-name", "k"), "not both"),
                       (("--launcher", "json:dumps", "--kernel-name", "k"), "needs --kernel"),
                       (("--exe", "'unclosed", "--kernel-name", "k"), "--exe"),
                       (("--kernel-name", "k"), "go with --exe"),
                       (("--arch", "sm_80"), "go with --exe")]:  # --arch alone was ignored
        p = _cli("gpu", str(SPEC), *args)
        assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)


@pytest.mark.parametrize("args, says", [
    (("--exe", "true", "--kernel-name", "k", "--arch", "sm_90; ls"), "--arch 'sm_90; ls'"),
    (("--launcher", ":", "--kernel-name", "k", "--kernel", str(TWINS)), "--launcher ':'"),
    (("--exe", "true", "--kernel-name", "k", "--kernel", ""), "--kernel: give"),
    (("--exe", str(TWINS), "--kernel-name", "rr_merged"), "a CUDA source, not a program"),
    # the probe's options were ignored beside --exe (and markdown came out as JSON)
    (("--exe", "true", "--kernel-name", "k", "--counters"), "--counters goes with probing specs"),
    (("--exe", "true", "--kernel-name", "k", "--compile-only"), "--compile-only goes with probing specs"),
    (("--launcher", "json:dumps", "--kernel-name", "k", "--where", "host"), "--where goes with probing specs"),
    (("--exe", "true", "--kernel-name", "k", "--no-behaviour"), "--behaviour/--no-behaviour goes with"),
    (("--exe", "true", "--kernel-name", "k", "--max-rows", "5"), "--max-rows goes with probing specs"),
    (("--exe", "true", "--kernel-name", "k", "--format", "markdown"), "not markdown"),
    (("--exe", "true", "--kernel-name", "k", "-o", "/tmp/tm_same.json", "--json", "/tmp/tm_same.json"),
     "name the same file"),
])
def test_cli_gpu_exe_refuses_odd_input_with_status_2(args: tuple[str, ...], says: str) -> None:
    p = _cli("gpu", str(SPEC), *args)
    assert p.returncode == 2 and "Traceback" not in p.stderr, (args, p.stderr)
    assert says in p.stderr and "--exe: --launcher" not in p.stderr, (args, p.stderr)


def test_cli_gpu_exe_with_a_mistyped_spec_path_says_no_such_file(tmp_path: Path) -> None:
    """It said 'give its one spec file', hiding the typo."""
    p = _cli("gpu", str(tmp_path / "nope.yaml"), "--exe", "true", "--kernel-name", "k")
    assert p.returncode == 2 and "nope.yaml: no such spec file" in p.stderr, p.stderr


FAKE_NCU = """#!{python}
import subprocess, sys
args = sys.argv[1:]
metrics = args[args.index("--metrics") + 1].split(",")
command = args[args.index("raw") + 1:]
sys.stdout.write(subprocess.run(command, capture_output=True, text=True).stdout)  # the program's own output
print("==PROF== Disconnected")
print(",".join(['"ID"', '"Kernel Name"'] + ['"%s"' % m for m in metrics]))
print(",".join(['"0"', '"k"'] + ['"1"' for m in metrics]))
"""


@pytest.mark.parametrize("moved", [False, True])
def test_records_the_program_prints_are_diffed_in_the_same_run(merged, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                               monkeypatch: pytest.MonkeyPatch, moved: bool) -> None:
    """A program that prints threadmap_probe.h records while ncu profiles it: its records are
    diffed with the simulation in the same run (a record at a wrong coordinate fails it)."""
    import numpy as np

    from threadmap.gpu import user
    from threadmap.gpu.log import load_model, simulated_log
    model = load_model(str(SPEC), {"M": 1024, "N": 1024})
    lines = simulated_log(model, np.arange(2), stages=[0])
    if moved:  # one access printed one column off
        head, coord = lines[5].rsplit("coord=", 1)
        r, c = coord.split(",")
        lines[5] = f"{head}coord={r},{int(c) + 1}"
    log = tmp_path / "printed.log"
    log.write_text("\n".join(lines) + "\n")
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable))
    ncu.chmod(0o755)
    monkeypatch.setattr(user, "find_tool", lambda name: str(ncu) if name == "ncu" else None)
    run = measure(str(SPEC), {"M": 1024, "N": 1024}, [sys.executable, "-c", f"print(open({str(log)!r}).read())"],
                  "rr_merged", "sm_90", str(TWINS))
    assert run.log is not None
    assert run.log.ok is (not moved) and run.ok is False  # the fake counters (all 1) never agree
    if moved:
        assert any(f.kind == "moved" for f in run.log.findings), run.log


def test_without_nsight_compute_nothing_is_measured_and_the_exit_says_so(merged, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """No ncu: the prediction is printed (table or JSON, or into -o) and the exit status is 2 with
    one line saying nothing was measured; it was 0, the status of a kernel that agrees."""
    if find_tool("ncu") is not None:
        pytest.skip("ncu is installed: the run without it is not reached on this machine")
    for fmt in ("table", "json"):
        p = _cli("gpu", str(SPEC), "--exe", "true", "--kernel", str(TWINS), "-k", "rr_merged", "--format", fmt,
                 "-o", str(tmp_path / f"out.{fmt}"))
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "nothing measured" in p.stderr, p.stderr
        assert "rr_merged" in (tmp_path / f"out.{fmt}").read_text()


def test_a_cp_async_cg_stage_shared_side_is_measured_but_not_compared(tmp_path: Path) -> None:
    """A user's kernel issuing the bypassing cp.async.cg (``LDGSTS.BYPASS``): its shared-write
    counters are not a function of the addresses (docs/hardware.md), so that kind is never a
    mismatch; the .ca form's is compared.  The .cg form's was compared and failed the run."""
    from threadmap.gpu.user import NOT_COMPARABLE

    if nvcc() is None or find_tool("cuobjdump") is None:
        cannot_run("gpu --exe reads the kernel's SASS: nvcc and cuobjdump")
    forms = ROOT / "tests" / "gpu" / "compiled" / "cp_async_forms.cu"
    spec = tmp_path / "a.yaml"
    spec.write_text((ROOT / "specs" / "cutlass" / "sm80_f16_gemm_a_128x32_warpraked.yaml").read_text()
                    .replace("SM80_CP_ASYNC_CACHEGLOBAL<", "SM80_CP_ASYNC_CACHEALWAYS<"))
    for form in ("cg", "ca"):
        run = measure(str(spec), None, ["true"], f"a_tile_{form}", "sm_90", str(forms))
        kinds = {(k.memory, k.op): k for k in run.kinds}
        assert set(kinds) == {("global", "ld"), ("shared", "ldgsts")}
        row = _row(run.kinds, scale=0.75)  # what the H200 counted for the library's .cg tile: 3/4 of the rule
        compare(run.kinds, row)
        ld = kinds[("shared", "ldgsts")]
        assert ld.measured is not None and kinds[("global", "ld")].agrees is False
        if form == "cg":
            assert ld.agrees is None and not ld.comparable and NOT_COMPARABLE in ld.note
        else:
            assert ld.agrees is False and ld.comparable


def test_a_launcher_in_a_package_of_the_current_directory_is_found(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher runs as ``python -c`` (the current directory first on its path), so a
    package there is found; only a top-level ``NAME.py`` was (``pkg.mod:f`` was refused)."""
    pkg = tmp_path / "tm_launch_pkg_xyz"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("def go():\n    print('launched')\n")
    monkeypatch.chdir(tmp_path)
    launcher_command("tm_launch_pkg_xyz:go")  # the package itself is found too
    done = subprocess.run(launcher_command("tm_launch_pkg_xyz.mod:go"), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "launched" in done.stdout, done.stderr
    with pytest.raises(UserKernelError, match="no module 'tm_launch_nothing_xyz'"):
        launcher_command("tm_launch_nothing_xyz.mod:go")
