"""The pytest plugin (spec files as test items) and the assertion helpers of
:mod:`threadmap.testing.assertions`."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from threadmap.api import verify_spec
from threadmap.errors import SpecError
from threadmap.testing.assertions import (
    assert_coalesced,
    assert_conflict_free,
    assert_covers,
    assert_spec,
    explain,
    matches_expect,
    run_spec,
)

pytest_plugins = ["pytester"]

SPECS = Path(__file__).resolve().parents[2] / "specs"
PASSING = SPECS / "cute_transpose" / "row_smem_swizzled.yaml"      # every check passes
EXPECTED_FAIL = SPECS / "cute_transpose" / "row_smem.yaml"          # fails bank_conflicts, as it expects
OFF_BY_ONE = SPECS / "planted" / "off_by_one_grid.yaml"              # fails grid_coverage and predicates
MISSING_BARRIER = SPECS / "planted" / "missing_barrier.yaml"         # fails dataflow (a whole-kernel check)

BAD_YAML = "spec: 1\nname: broken\nthreads: [1, 2\n"
BAD_SCHEMA = "spec: 1\nname: incomplete\nthreads: 256\nsizes: {}\ngrid: [1]\n"


def _unexpected(text: str) -> str:
    """The spec text with its expect block saying every check passes."""
    text = text.replace("verdict: fail", "verdict: pass")
    return re.sub(r"\n *failing_checks:.*", "", text)


def _stage_line(text: str, index: int) -> int:
    """The line (1-based) of the stage ``index`` in a spec's ``stages:`` list."""
    lines = text.splitlines()
    start = lines.index("stages:")
    items = [i for i in range(start + 1, len(lines)) if lines[i].startswith("  - ")]
    return items[index] + 1


@pytest.fixture(scope="module", autouse=True)
def _loaded() -> None:
    """pytester's inline runs forget the modules they import, and numpy cannot load twice in
    one process: verify once first so that everything threadmap needs stays loaded."""
    verify_spec(PASSING)


@pytest.fixture
def specs(pytester: pytest.Pytester) -> Path:
    """``specs/`` in pytester's directory: a passing spec, one failing as it expects and one
    failing unexpectedly (the expected-failing spec with its expect block edited)."""
    d = pytester.mkdir("specs")
    (d / "swizzled.yaml").write_text(PASSING.read_text())
    (d / "row_smem.yaml").write_text(EXPECTED_FAIL.read_text())
    (d / "unexpected.yaml").write_text(_unexpected(EXPECTED_FAIL.read_text()))
    return d


# ----------------------------------------------------------------------------- the plugin


def test_off_without_options(pytester: pytest.Pytester, specs: Path) -> None:
    # a subprocess: this session has threadmap imported already
    pytester.makepyfile(test_cheap="""
        import sys

        def test_nothing_of_threadmap_imported():
            assert "threadmap.api" not in sys.modules and "numpy" not in sys.modules
        """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", ".")
    result.assert_outcomes(passed=1)
    assert "yaml" not in result.stdout.str()


def test_passing_and_expected_failure(pytester: pytest.Pytester, specs: Path) -> None:
    (specs / "unexpected.yaml").unlink()
    xml = pytester.path / "out.xml"
    result = pytester.runpytest("--threadmap", "specs", "-v", f"--junitxml={xml}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*specs/row_smem.yaml::row_smem PASSED*", "*specs/swizzled.yaml::swizzled PASSED*",
                                 "*threadmap*", "1 spec passed by failing as its expect block says:",
                                 "  specs/row_smem.yaml::row_smem: bank_conflicts"])
    # per-check results and the expected failure are user properties: JUnit XML carries them
    props = {c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")}
             for c in ET.parse(xml).getroot().iter("testcase")}
    assert props["row_smem"]["threadmap:expected_failure"] == "bank_conflicts"
    assert props["row_smem"]["threadmap:bank_conflicts[2.src]"].startswith("FAIL: 262144 wavefronts")
    assert props["swizzled"]["threadmap:verdict"] == "pass"
    assert "threadmap:expected_failure" not in props["swizzled"]


def test_unexpected_failure_shows_checks_witness_and_line(pytester: pytest.Pytester, specs: Path) -> None:
    result = pytester.runpytest("--threadmap", "specs/unexpected.yaml")
    result.assert_outcomes(failed=1)
    line = _stage_line((specs / "unexpected.yaml").read_text(), 2)
    result.stdout.fnmatch_lines([
        "threadmap: specs/unexpected.yaml is not as its expect block says: verdict FAIL, expected PASS",
        "*: FAIL (the spec expects PASS)",
        "  PASS  coverage        0.src  1048576 accesses / 1048576 elements*",
        "  FAIL  bank_conflicts  2.src  262144 wavefronts / ideal 32768*",
        f"specs/unexpected.yaml:{line}: bank_conflicts at stage 2.src fails: 32768 findings",
        "    block 0 warp 0 step 0: 8 wavefronts (ideal 1); bank 0 serves 8 distinct words*",
        "      witness: block 0, step 0",
        "    (+32767 more)",
        "1 spec runs: 0 pass, 1 fail; 0 as expected, 1 not",
    ])
    assert "Traceback" not in result.stdout.str()


def test_whole_kernel_finding_is_located_at_its_stage(pytester: pytest.Pytester) -> None:
    text = _unexpected(MISSING_BARRIER.read_text())
    pytester.makefile(".yaml", barrier=text)
    result = pytester.runpytest("--threadmap", "barrier.yaml")
    result.assert_outcomes(failed=1)
    line = _stage_line(text, 1)  # dataflow judges the whole kernel: each finding names its stage
    result.stdout.fnmatch_lines([
        f"barrier.yaml:{line}: dataflow fails: * findings",
        f"    stage 1: block 0 thread 1 value 0 writes y(0, 1) * ?stage 1.dst, barrier.yaml:{line}?",
        "      witness: block 0, thread 1, step 0, value 0, element 0, warp lane 1, coordinate (0, 1), address 260",
    ])


def test_broken_spec_is_a_collection_error(pytester: pytest.Pytester, specs: Path) -> None:
    (specs / "bad.yaml").write_text(BAD_YAML)
    (specs / "incomplete.yaml").write_text(BAD_SCHEMA)
    # as for any collection error, pytest stops before running tests ...
    stopped = pytester.runpytest("--threadmap", "specs")
    stopped.stdout.fnmatch_lines(["specs/bad.yaml:4:1: (file): YAML: did not find expected ',' or ']'",
                                  "*Interrupted: 2 errors during collection*"])
    assert stopped.ret == pytest.ExitCode.INTERRUPTED
    # ... unless told to go on
    result = pytester.runpytest("--threadmap", "specs", "--continue-on-collection-errors")
    result.assert_outcomes(passed=2, failed=1, errors=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*ERROR collecting specs/bad.yaml*",
        "specs/bad.yaml:4:1: (file): YAML: did not find expected ',' or ']'",
        "*ERROR collecting specs/incomplete.yaml*",
        "specs/incomplete.yaml:1:1: tensors: missing required field 'tensors'",
    ])
    out = result.stdout.str()
    assert "Traceback" not in out and "threadmap/spec" not in out and "SpecError" not in out


def test_other_collection_errors_still_stop_the_session(pytester: pytest.Pytester, specs: Path) -> None:
    pytester.makepyfile(test_broken="import no_such_module_anywhere\n")
    result = pytester.runpytest("--threadmap", "specs", "test_broken.py")
    result.stdout.fnmatch_lines(["*Interrupted: 1 error during collection*"])


def test_k_selects_specs_by_name_and_stem(pytester: pytest.Pytester, specs: Path) -> None:
    # the swizzled spec's name: is "... (mat_transpose_cute_row_smem_swizzled)", its stem "swizzled"
    result = pytester.runpytest("--threadmap", "specs", "-k", "cute_row_smem_swizzled", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["specs/swizzled.yaml::swizzled", "1/3 tests collected (2 deselected)*"])
    result = pytester.runpytest("--threadmap", "specs", "-k", "row_smem and not swizzled and not unexpected")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest("--threadmap", "specs", "-m", "threadmap", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["3 tests collected*"])


def test_ini_globs(pytester: pytest.Pytester, specs: Path) -> None:
    pytester.makepyprojecttoml("""
        [tool.pytest.ini_options]
        testpaths = ["tests"]
        threadmap_specs = ["specs/**/*.yaml", "nothing/*.toml"]
        """)
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    (specs / "deeper").mkdir()
    (specs / "row_smem.yaml").rename(specs / "deeper" / "row_smem.yaml")
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["tests/test_a.py::test_a", "specs/deeper/row_smem.yaml::row_smem",
                                 "specs/swizzled.yaml::swizzled", "specs/unexpected.yaml::unexpected",
                                 "4 tests collected*"])
    result.stdout.fnmatch_lines(["*threadmap_specs: 'nothing/*.toml' matches no spec file*"])
    # naming paths runs what they name: the specs only when a named path holds them
    result = pytester.runpytest("tests", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["tests/test_a.py::test_a", "1 test collected*"])
    result = pytester.runpytest("specs/deeper", "-q")
    result.assert_outcomes(passed=1)


def test_checks_and_sizes_options(pytester: pytest.Pytester, specs: Path) -> None:
    # the unexpected failure is in bank_conflicts; without that check the expect block holds
    result = pytester.runpytest("--threadmap", "specs/unexpected.yaml", "--threadmap-checks", "coverage,coalescing")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest("--threadmap", "specs/row_smem.yaml", "--threadmap-checks", "bank_conflicts",
                                "--threadmap-sizes", "M=1000,N=62", "-v")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest("--threadmap", "specs", "--threadmap-checks", "banks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--threadmap-checks: unknown check 'banks'*"])
    result = pytester.runpytest("--threadmap", "specs", "--threadmap-sizes", "M:3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    # a size only some specs have is set where it exists (one option for a project of many specs)
    result = pytester.runpytest("--threadmap", "specs/row_smem.yaml", "--threadmap-sizes", "Q=3,M=48", "-v")
    result.assert_outcomes(passed=1)


def test_a_spec_only_the_model_refuses_is_a_collection_error(pytester: pytest.Pytester, specs: Path) -> None:
    # valid for the schema; the tiled copy's layout has 32 threads where the spec says 256
    text = (specs / "row_smem.yaml").read_text()
    bad = text.replace('dst: {tensor: sA, threads: "(16,16):(16,1)"}',
                       'dst: {tensor: sA, tiled_copy: {layout_tv: "(32,8):(8,1)", tiler: "(16,16)"}}', 1)
    assert bad != text
    (specs / "model.yaml").write_text(bad)
    result = pytester.runpytest("--threadmap", "specs/model.yaml")
    result.stdout.fnmatch_lines(["*ERROR collecting specs/model.yaml*", "specs/model.yaml:*tiled_copy*"])
    assert "Traceback" not in result.stdout.str()


def test_missing_path_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--threadmap", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*threadmap: *nowhere:1:1: (file): no such file or directory*"])


def test_xdist(pytester: pytest.Pytester, specs: Path) -> None:
    (specs / "bad.yaml").write_text(BAD_YAML)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--threadmap", "specs", "specs")
    result.assert_outcomes(passed=2, failed=1, errors=1)
    result.stdout.fnmatch_lines(["specs/bad.yaml:4:1: (file): YAML: did not find expected ',' or ']'",
                                 "*witness: block 0, step 0*",
                                 "  specs/row_smem.yaml::row_smem: bank_conflicts"])


# ----------------------------------------------------------------------------- assertion helpers


def test_assert_spec_honours_the_expect_block() -> None:
    runs = assert_spec(EXPECTED_FAIL)
    assert [r.failing for r in runs] == [["bank_conflicts"]]
    assert_spec(PASSING, expect="pass")
    assert_spec(EXPECTED_FAIL, checks=["coalescing"])  # the expected failure is not among the checks run


def test_assert_spec_failure_message() -> None:
    with pytest.raises(AssertionError) as info:
        assert_spec(EXPECTED_FAIL, expect="pass")
    msg = str(info.value)
    first, *rest = msg.splitlines()
    assert first.startswith("threadmap: CuTe transpose, smem, row thread layouts") and first.endswith(
        "fails bank_conflicts")
    line = _stage_line(EXPECTED_FAIL.read_text(), 2)
    assert any(re.fullmatch(r"  FAIL  bank_conflicts  2\.src  262144 wavefronts.*", x) for x in rest)
    assert f"row_smem.yaml:{line}: bank_conflicts at stage 2.src fails: 32768 findings" in msg
    assert "      witness: block 0, step 0" in rest
    assert "as expected" not in msg  # expect="pass" ignores the expect block


def test_assert_spec_unexpected(tmp_path: Path) -> None:
    spec = tmp_path / "k.yaml"
    spec.write_text(_unexpected(EXPECTED_FAIL.read_text()))
    with pytest.raises(AssertionError, match=r"is not as its expect block says: verdict FAIL, expected PASS") as info:
        assert_spec(spec)
    assert "1 spec runs: 0 pass, 1 fail; 0 as expected, 1 not" in str(info.value)


def test_property_helpers() -> None:
    assert_conflict_free(PASSING)
    assert_coalesced(EXPECTED_FAIL)
    assert_covers(EXPECTED_FAIL)
    with pytest.raises(AssertionError) as info:
        assert_conflict_free(EXPECTED_FAIL)  # the spec expects this failure; the helper asks for none
    assert str(info.value).splitlines()[0].endswith("has shared-memory bank conflicts: bank_conflicts at 2.src")
    with pytest.raises(AssertionError) as info:
        assert_covers(OFF_BY_ONE)
    msg = str(info.value)
    assert msg.splitlines()[0].endswith("does not cover its tensors exactly: grid_coverage at 0.src, predicates "
                                        "at 0.src, grid_coverage at 2.dst, predicates at 2.dst")
    assert f"off_by_one_grid.yaml:{_stage_line(OFF_BY_ONE.read_text(), 0)}: grid_coverage at stage 0.src" in msg
    assert "      witness: coordinate (992, 0)" in msg


def test_helpers_take_mappings_and_sizes() -> None:
    import yaml

    data = yaml.safe_load(PASSING.read_text())
    runs = assert_conflict_free(data, sizes={"M": 100, "N": 36})
    assert runs[0].sizes == {"M": 100, "N": 36}
    loaded, runs = run_spec(data)
    assert loaded.name == data["name"] and matches_expect(runs[0])
    assert "1 spec runs: 1 pass, 0 fail; 1 as expected, 0 not" in explain(runs, loaded=loaded)


def test_invalid_spec_raises_spec_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_YAML)
    with pytest.raises(SpecError, match=r"bad\.yaml:4:1: \(file\): YAML") as info:
        assert_spec(bad)
    # raised from the helper, not from deep inside the loader
    assert all("threadmap/spec" not in str(e.path) for e in info.traceback)


def test_failure_points_at_the_assertion_site(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kernel=f"""
        from threadmap.testing.assertions import assert_conflict_free

        def test_kernel():
            assert_conflict_free({str(EXPECTED_FAIL)!r})
        """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([">       assert_conflict_free(*", "E       AssertionError: threadmap: *",
                                 "E       *witness: block 0, step 0"])
    assert "assertions.py" not in result.stdout.str()
