"""The catalogue of checks is the one list: the registry, the spec schema's names, the report
models, the prove properties and the driver's results all agree with it; the report layer
reads no check."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import threadmap.api as api
from threadmap.prove.run import PROPERTIES, REFUTING_CHECKS
from threadmap.report import model as report_model
from threadmap.spec.schema import CHECK_ALIASES, CHECK_NAMES
from threadmap.verify import CHECKS
from threadmap.verify.catalogue import ALIASES, CATALOGUE, GRID, NAMES, canonical
from threadmap.verify.check import Check, register

ROOT = Path(__file__).resolve().parents[2]


def test_every_check_is_an_entry_and_every_entry_has_its_code() -> None:
    assert NAMES == CHECK_NAMES
    for name, e in CATALOGUE.items():
        mod = importlib.import_module(e.module)
        if e.scope == "grid":
            assert name not in CHECKS and name in GRID  # decided by the driver from one set of counts
        else:
            assert CHECKS[name].scope == e.scope and type(CHECKS[name]).__module__ == mod.__name__
        assert e.summary is report_model.SUMMARIES[name]
        assert e.summary.model_fields["check"].default == name
        assert e.rule and e.rule == report_model.RULES[name]
    assert set(CHECKS) | set(GRID) == set(CATALOGUE)


def test_a_check_outside_the_catalogue_is_refused() -> None:
    class Stray(Check):
        name = "stray"

        def accumulator(self, model, side):  # noqa: ANN001, ANN201
            raise AssertionError

    with pytest.raises(ValueError, match="no entry"):
        register(Stray)
    assert "stray" not in CHECKS


def test_the_lower_layers_names_equal_the_catalogue() -> None:
    """spec validates ``failing_checks`` with its own names; report matches expectations with
    its own map: both are the catalogue's."""
    assert {a: n for a, n in ALIASES.items() if a not in CATALOGUE} == CHECK_ALIASES
    assert ALIASES == report_model.EXPECTED_AS
    for name in (*CATALOGUE, *CHECK_ALIASES):
        assert report_model.expected_name(name) == canonical(name)


def test_every_entry_is_proved_by_prove_properties_that_read_it() -> None:
    for name, e in CATALOGUE.items():
        assert e.proved_by and set(e.proved_by) <= set(PROPERTIES), name
    for prop, checks in REFUTING_CHECKS.items():
        for c in checks:
            assert prop in CATALOGUE[c].proved_by, (prop, c)


REPORT_FILES = sorted(p.name for p in (ROOT / "threadmap" / "report").glob("*.py"))


@pytest.mark.parametrize("name", REPORT_FILES)
def test_the_report_layer_imports_no_check(name: str) -> None:
    """Every import of threadmap/report/ (inside functions too) stays out of threadmap.verify."""
    for path in [ROOT / "threadmap" / "report" / name]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for m in mods:
                assert not m.startswith("threadmap.verify"), f"{path.name} imports {m}"


def test_no_module_imports_the_package_root() -> None:
    """``threadmap/__init__`` re-exports (``__version__``, the spec builder): a module below it reads
    ``threadmap.version`` or the module itself, so importing any layer never runs the root (the
    service once read ``from threadmap import __version__, api``).  ``from threadmap import
    hardware`` names a module and is fine."""
    pkg = ROOT / "threadmap"
    submodules = {p.stem for p in pkg.glob("*.py")} | {p.name for p in pkg.iterdir() if (p / "__init__.py").exists()}
    found = []
    for path in sorted(pkg.rglob("*.py")):
        if path == pkg / "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "threadmap":
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names
                          if a.name not in submodules]
            elif isinstance(node, ast.Import):
                found += [f"{path.relative_to(ROOT)}:{node.lineno}" for a in node.names if a.name == "threadmap"]
    assert not found, found


@pytest.mark.parametrize("spec", ["planted/transpose_vector_store_odd_m.yaml", "planted/missing_barrier.yaml",
                                  "cute_transpose/row_rvectorized.yaml"])
def test_results_follow_the_catalogue(spec: str) -> None:
    """Per side the results come in catalogue order, every finding's kind is one its entry
    lists, and a run expecting a check to fail matches it under the catalogue's names."""
    for run in api.verify_spec(str(ROOT / "specs" / spec)):
        per_side: dict[tuple[int | None, str | None], list[str]] = {}
        for r in run.results:
            per_side.setdefault((r.stage, r.side), []).append(r.check)
        for checks in per_side.values():
            assert checks == sorted(checks, key=NAMES.index)
        assert run.results[-1].check == "dataflow" and per_side[(None, None)] == ["dataflow"]
        for r in run.results:
            assert r.summary.check == r.check
            for f in r.findings:
                assert f.kind in CATALOGUE[r.check].kinds, (r.check, f.kind)
        for c in run.failing:
            assert run.expects_failure(c) == (canonical(c) in {canonical(x) for x in run.expected_failing})
