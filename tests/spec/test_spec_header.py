"""Specs written from C++ (``threadmap_spec.h``) against the hand-written spec library.

``tests/spec/cxx/library_specs.cpp`` builds each library kernel's real CuTe / CUTLASS objects and
prints its spec with the header; the program is compiled host-side with nvcc against the
CUTLASS headers (one compile, cached).  Every dump must load, and verify to the same result
as the hand-written spec: the same checks per stage with the same statuses and summaries,
the same verdict, and as expected.  Size ranges (``specs/ranges/``) are not C++ objects (a
program has one size), so those specs are the ones the header cannot express.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import threadmap.api as api
from tests.support.cxx_oracle import cannot_run
from threadmap.cli import main
from threadmap.errors import SpecError
from threadmap.gpu.toolchain import ToolchainError, build_host, include_dir, require
from threadmap.spec.load import loads_spec

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "spec" / "cxx" / "library_specs.cpp"
CASES = re.findall(r'^\s*\{"([a-z_0-9/]+\.yaml)"', SOURCE.read_text(), flags=re.M)
#: library specs the header cannot express, and why
NOT_EXPRESSIBLE = {p.relative_to(ROOT / "specs").as_posix(): "a size range: a C++ program has one size"
                   for p in (ROOT / "specs" / "ranges").glob("*.yaml")}
# threadmap_spec.h writes copy stages; a pipeline (roles, mbarriers, TMA copies) has no C++ writer yet
NOT_EXPRESSIBLE.update({p.relative_to(ROOT / "specs").as_posix(): "a pipeline: threadmap_spec.h has no pipeline"
                        for d in ("pipeline", "planted") for p in (ROOT / "specs" / d).glob("sm[189]*.yaml")
                        if "pipeline:" in p.read_text()})
NOT_EXPRESSIBLE["planted/sm90_stmatrix_x2_half_tile.yaml"] = (
    "a TiledCopy of one atom's TV layout under another copy's tiler: no make_tiled_copy function builds it")


@pytest.fixture(scope="module")
def program() -> Path:
    try:
        require()
    except ToolchainError as e:
        cannot_run(str(e))
    return build_host(SOURCE.read_text())


def _run(program: Path, *args: str) -> str:
    return subprocess.run([str(program), *args], check=True, capture_output=True, text=True, timeout=60).stdout


@pytest.fixture(scope="module")
def dumps(program: Path) -> dict[str, str]:
    parts = re.split(r"^# case: (.+)$", _run(program), flags=re.M)[1:]
    return dict(zip(parts[::2], parts[1::2]))


def test_every_library_spec_is_dumped_or_declared_inexpressible() -> None:
    library = {p.relative_to(ROOT / "specs").as_posix() for p in (ROOT / "specs").rglob("*.yaml")}
    assert len(CASES) == len(set(CASES))
    assert set(CASES) | set(NOT_EXPRESSIBLE) == library
    assert not set(CASES) & set(NOT_EXPRESSIBLE)


def _normal(result: Any) -> tuple[Any, ...]:
    summary = result.summary.model_dump() if hasattr(result.summary, "model_dump") else result.summary
    if isinstance(summary, dict) and "precondition" in summary:
        # a hand-written spec names its sizes (N % 4 == 0); a dump has only the program's
        # numbers (extent[1] % 4 == 0): the same conditions, by position
        summary = {**summary, "precondition": len(summary["precondition"])}
    return result.check, result.stage, result.side, result.status, summary, result.total_findings


@pytest.mark.parametrize("case", CASES)
def test_dump_verifies_like_the_hand_written_spec(case: str, dumps: dict[str, str], tmp_path: Path) -> None:
    text = dumps[case]
    dumped = tmp_path / Path(case).name
    dumped.write_text(text)
    mine, theirs = api.verify(str(dumped)), api.verify(str(ROOT / "specs" / case))
    assert not mine.errors, mine.errors
    assert not theirs.errors
    assert len(mine.runs) == len(theirs.runs) == 1
    a, b = mine.runs[0], theirs.runs[0]
    assert [_normal(r) for r in a.results] == [_normal(r) for r in b.results]
    assert (a.verdict, a.failing, a.as_expected, a.grid, a.totals) == (b.verdict, b.failing, b.as_expected,
                                                                        b.grid, b.totals)
    assert a.as_expected  # the dump carries the expect: block the C++ wrote
    # the names the C++ gave the kernel, its stages and its tensors are the hand-written ones
    spec_a, spec_b = api.load(str(dumped)).spec, api.load(str(ROOT / "specs" / case)).spec
    assert set(spec_a.tensors) == set(spec_b.tensors)
    assert [getattr(s, "copy_", None) and s.copy_.name for s in spec_a.stages] == \
        [getattr(s, "copy_", None) and s.copy_.name for s in spec_b.stages] or case.startswith("planted/")


def test_tiled_copies_are_written_as_the_cxx_object(dumps: dict[str, str]) -> None:
    """A TiledCopy is written as its TiledLayout_TV and Tiler_MN, printed by CuTe; the
    layout is the one threadmap's make_tiled_copy computes from the hand-written threads and
    values (the C++ header is the oracle)."""
    import threadmap.layout as L
    spec = loads_spec(dumps["cute_transpose/row_rvectorized.yaml"], "yaml", "<dump>").spec
    hand = api.load(str(ROOT / "specs" / "cute_transpose" / "row_rvectorized.yaml")).spec
    n = 0
    for mine, theirs in zip(spec.stages, hand.stages):
        if getattr(mine, "copy_", None) is None:
            continue
        for which in ("src", "dst"):
            tc, ref = getattr(mine.copy_, which).tiled_copy, getattr(theirs.copy_, which).tiled_copy
            assert tc is not None and ref is not None and tc.threads is None
            want = L.make_tiled_copy((L.get_copy_op(ref.atom), 32), L.parse(ref.threads), L.parse(ref.values))
            assert L.parse(tc.layout_tv) == want.layout_tv
            assert L.parse_tiler(tc.tiler) == tuple(want.tiler_mn)
            assert tc.atom == "AutoVectorizingCopy"
            n += 1
    assert n == 4


def test_header_rejects_misuse(program: Path) -> None:
    out = _run(program, "errors")
    errors = dict(re.findall(r"^error: ([^:]+): (.*)$", out, flags=re.M))
    assert "no error" not in out
    assert "16-bit values but the tensor holds 32-bit" in errors["value type"]
    assert "follows a copy()" in errors["predicate first"]
    assert "already partitioned by threads" in errors["two partitions"]
    assert "rank-3 tile needs 3" in errors["tile rank"]
    assert "element<T>()" in errors["no element"]
    assert "'A', 'B' or 'C'" in errors["operand"]


def test_user_text_is_escaped(program: Path) -> None:
    text = _run(program, "errors").split("# case: escaped\n", 1)[1]
    spec = loads_spec(text, "yaml", "<dump>").spec
    assert spec.name == 'a "quoted" name\twith <script>alert(1)</script> \\ and\nnewline'
    assert spec.description == "d: {not: yaml}"
    assert list(spec.tensors) == ['s"A']
    cp = spec.stages[0].copy_  # type: ignore[union-attr]
    assert (cp.src.tensor, cp.dst.registers, cp.name) == ('s"A', "r: x", "# not a comment")


def test_cli_prints_the_header_and_its_folder() -> None:
    r = CliRunner().invoke(main, ["spec-header", "--include-dir"])
    assert r.exit_code == 0 and Path(r.output.strip()) == include_dir()
    assert (Path(r.output.strip()) / "threadmap_spec.h").is_file()
    r = CliRunner().invoke(main, ["spec-header"])
    assert r.exit_code == 0 and r.output == (include_dir() / "threadmap_spec.h").read_text()
    r = CliRunner().invoke(main, ["spec-header", "--format", "json"])
    assert r.exit_code == 0 and '"include_dir"' in r.output


def test_copy_operations_the_header_names_are_known() -> None:
    """Every copy operation threadmap knows by a fixed name (ldmatrix, stmatrix, ...) is
    what the header writes for it (the C++ type name, which the loader resolves)."""
    import threadmap.layout as L
    for name in L.COPY_OPS:
        assert L.get_copy_op(f"cute::{name}") is L.get_copy_op(name)
    with pytest.raises(SpecError):
        api.load({"spec": 1, "name": "k", "threads": 32, "tensors": {"s": {"memory": "shared", "layout": "32:1"}},
                  "stages": [{"copy": {"src": {"tensor": "s", "tiled_copy": {"threads": "32:1", "values": "1:0",
                                                                              "layout_tv": "(32,1):(1,0)",
                                                                              "tiler": "32"}},
                                       "dst": {"registers": "r"}}}]})
