"""The bundled spec library (``specs/**/*.yaml``) is well-formed.

Every spec file must

* validate against the pydantic schema (:class:`threadmap.spec.schema.Spec`),
* carry an explicit ``expect:`` block whose verdict and failing checks agree
  (``pass`` <=> no failing check; only known check ids),
* open with a non-empty comment block that names its source and derives the verdict
  ("Source" ... "Expected verdict: PASS|FAIL", matching ``expect.verdict``).

Whether the verifier actually reaches each expected verdict is tested elsewhere; this
module only guards the files themselves, so it runs without the simulator.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from threadmap.spec.schema import Spec

SPECS = Path(__file__).resolve().parents[2] / "specs"
SPEC_FILES = sorted(p for p in SPECS.rglob("*") if p.suffix in {".yaml", ".yml"} and p.is_file())
CHECK_IDS = {"coverage", "predicates", "coalescing", "bank_conflicts", "vectorization", "dataflow", "pipeline"}
LIBRARY_DIRS = {"cute_transpose", "sgemm", "mma", "cutlass", "planted", "pipeline"}


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(SPECS)) for p in paths]


def leading_comment(text: str) -> str:
    """The comment block at the top of a file (``#`` lines, blank lines allowed inside)."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            lines.append(stripped.lstrip("#").strip())
        elif stripped == "":
            if lines:
                lines.append("")
        else:
            break
    return "\n".join(lines).strip()


def test_library_is_not_empty_and_covers_every_family() -> None:
    assert SPEC_FILES, f"no spec files under {SPECS}"
    families = {p.relative_to(SPECS).parts[0] for p in SPEC_FILES if len(p.relative_to(SPECS).parts) > 1}
    assert LIBRARY_DIRS <= families, f"missing spec families: {sorted(LIBRARY_DIRS - families)}"


@pytest.mark.parametrize("path", SPEC_FILES, ids=_ids(SPEC_FILES))
def test_spec_file_validates_and_documents_its_verdict(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    assert isinstance(raw, dict), f"{path}: top level is not a mapping"
    spec = Spec.model_validate(raw)

    # an explicit expect block (the schema would default it silently)
    assert isinstance(raw.get("expect"), dict) and "verdict" in raw["expect"], \
        f"{path}: needs an explicit expect: block with a verdict"
    exp = spec.expect
    unknown = set(exp.failing_checks) - CHECK_IDS
    assert not unknown, f"{path}: unknown check ids {sorted(unknown)}"
    assert len(set(exp.failing_checks)) == len(exp.failing_checks), f"{path}: repeated check ids"
    if exp.verdict == "pass":
        assert not exp.failing_checks, f"{path}: verdict pass but failing_checks {exp.failing_checks}"
    else:
        assert exp.failing_checks, f"{path}: verdict fail needs the checks expected to fail"

    # the derivation comment
    comment = leading_comment(text)
    assert comment, f"{path}: needs a leading comment naming the source and deriving the verdict"
    assert len(comment.splitlines()) >= 5, f"{path}: the derivation comment is too short"
    assert "Source" in comment, f"{path}: the comment must name its source (note + kernel or header)"
    stated = re.findall(r"Expected verdict:\s*(PASS|FAIL)", comment, flags=re.IGNORECASE)
    assert stated, f"{path}: the comment must state 'Expected verdict: PASS|FAIL'"
    assert {s.lower() for s in stated} == {exp.verdict}, \
        f"{path}: comment says {stated}, expect.verdict is {exp.verdict}"


def test_spec_names_are_unique() -> None:
    names: dict[str, Path] = {}
    for path in SPEC_FILES:
        name = yaml.safe_load(path.read_text(encoding="utf-8"))["name"]
        assert name not in names, f"{path} and {names[name]} share the name {name!r}"
        names[name] = path
