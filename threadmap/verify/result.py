"""The report model of the checks: :class:`Finding` and :class:`CheckResult`.

Both are plain dataclasses whose :meth:`to_dict` returns JSON-serialisable data (numpy
scalars and arrays are converted to Python ints/lists), so reports (JSON, JUnit, SARIF)
can be produced from them without knowing the checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Status = Literal["PASS", "FAIL", "SKIP"]
Severity = Literal["error", "warning", "info"]

#: findings kept per result; ``CheckResult.total_findings`` counts all of them.
MAX_FINDINGS = 20


def jsonable(x: Any) -> Any:
    """``x`` with numpy scalars/arrays and tuples turned into JSON types (recursively)."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return str(x)
    return x


@dataclass
class Finding:
    """One violation (or, with severity ``info``/``warning``, one notable instance).

    ``kind`` names what was found inside the check (``missing``, ``duplicate``,
    ``out_of_tile``, ``out_of_bounds``, ``lost``, ``misaligned``, ``conflict``, ``race``,
    ``stale_read``, ``uninitialised_read``, ``wrong_value`` ...).  ``witness`` holds the
    concrete evidence, with keys among ``block``, ``thread``, ``step``, ``value``,
    ``lane`` (element inside the vector access), ``warp_lane`` (``thread % 32``),
    ``coordinate``, ``address``, and for pairs ``first``/``second`` sub-dicts.
    """

    check: str
    kind: str
    message: str
    witness: dict[str, Any] = field(default_factory=dict)
    stage: int | None = None
    side: str | None = None
    severity: Severity = "error"

    def to_dict(self) -> dict[str, Any]:
        return jsonable({"check": self.check, "kind": self.kind, "stage": self.stage,
                         "side": self.side, "severity": self.severity,
                         "message": self.message, "witness": self.witness})


@dataclass
class CheckResult:
    """The outcome of one check on one stage/side (or on the whole kernel: ``stage=None``).

    ``summary`` holds the check's numbers (documented per check); ``findings`` the first
    :data:`MAX_FINDINGS` findings, ``total_findings`` how many there were in all.
    """

    check: str
    stage: int | None
    side: str | None
    status: Status
    summary: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    total_findings: int = 0

    @property
    def passed(self) -> bool:
        return self.status != "FAIL"

    def add(self, finding: Finding, count: int = 1) -> None:
        """Record ``count`` findings of which ``finding`` is the representative."""
        self.total_findings += count
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append(finding)

    def to_dict(self) -> dict[str, Any]:
        return jsonable({"check": self.check, "stage": self.stage, "side": self.side,
                         "status": self.status, "summary": self.summary,
                         "findings": [f.to_dict() for f in self.findings],
                         "total_findings": self.total_findings})

    def __str__(self) -> str:
        where = "" if self.stage is None else f" stage {self.stage}" + (f" {self.side}" if self.side else "")
        head = f"{self.check}{where}: {self.status}"
        if self.findings:
            head += f" ({self.total_findings} findings; first: {self.findings[0].message})"
        return head


def skip(check: str, stage: int | None, side: str | None, reason: str) -> CheckResult:
    """A SKIP result with the reason in its summary."""
    return CheckResult(check, stage, side, "SKIP", {"reason": reason})
