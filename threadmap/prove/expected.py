"""``threadmap prove --check-expected``: is each proof what its spec's ``expect:`` block says?

Mirrors ``verify --check-expected``: a spec is as expected when the proof's verdict is the
expected one (``pass``: every property PROVED; ``fail``: some property REFUTED) and every
check of ``failing_checks`` has its property REFUTED.  Aliased writes, which ``verify``
reports under ``grid_coverage``, are the ``aliasing`` property, so an expected coverage
failure is met by either.  An UNKNOWN is never a pass: a spec expected to pass with an
UNKNOWN property is not as expected, and the property's reason says what blocked it.
"""

from __future__ import annotations

from pathlib import Path

from threadmap.errors import SpecError
from threadmap.report.model import ProveReport, ProveRun, SpecErrorEntry, error_status
from threadmap.spec.load import load_spec
from threadmap.verify.check import canonical

#: the properties whose REFUTED meets an expected failure of each check
CHECK_PROPERTIES: dict[str, tuple[str, ...]] = {
    "coverage": ("coverage", "aliasing"),
    "predicates": ("predicates",),
    "dataflow": ("dataflow",),
    "bank_conflicts": ("bank_conflicts",),
    "vectorize": ("vectorize",),
    "coalescing": ("coalescing",),
    "pipeline": ("pipeline",),
}


def run_mismatches(run: ProveRun, verdict: str, failing: list[str]) -> list[str]:
    """Why ``run`` is not what ``expect: {verdict, failing_checks: failing}`` says (empty: as
    expected)."""
    status = {p.property: p for p in run.properties}
    out: list[str] = []
    refuted = [k for k, p in status.items() if p.status == "REFUTED"]
    unknown = [p for p in status.values() if p.status == "UNKNOWN"]
    if verdict == "pass":
        for k in refuted:
            out.append(f"{k} is REFUTED at {status[k].sizes}, expected to pass")
        for p in unknown:
            out.append(f"{p.property} is UNKNOWN, expected PROVED: {p.reason}")
        return out
    if not refuted:
        out.append("expected to fail, but no property is REFUTED"
                   + (f" ({', '.join(p.property for p in unknown)} UNKNOWN)" if unknown else ""))
    for c in failing:
        props = CHECK_PROPERTIES.get(canonical(c))
        if props is None:
            out.append(f"failing check {c!r} has no property that prove decides")
        elif not any(status[p].status == "REFUTED" for p in props if p in status):
            got = ", ".join(f"{p} {status[p].status}" for p in props if p in status)
            why = "; ".join(status[p].reason for p in props if p in status and status[p].status == "UNKNOWN")
            out.append(f"{c} is expected to fail, but {got}" + (f": {why}" if why else ""))
    return out


def expected_outcome(report: ProveReport) -> tuple[int, dict[str, list[str]]]:
    """``(exit status, mismatches per spec path)``: 0 when every spec's proof is as its
    ``expect:`` block says, 1 when one is not, 2 or 3 for an invalid spec or an internal
    error (as :attr:`ProveReport.exit_code`)."""
    errors = list(report.errors)
    out: dict[str, list[str]] = {}
    for run in report.runs:
        try:
            exp = load_spec(Path(run.path)).spec.expect
        except SpecError as e:  # the file changed since it was proved
            errors.append(SpecErrorEntry(path=run.path, message=str(e)))
            continue
        bad = run_mismatches(run, exp.verdict, list(exp.failing_checks))
        if bad:
            out[run.path] = bad
    if errors:
        return error_status(errors), out
    return (1 if out else 0), out
