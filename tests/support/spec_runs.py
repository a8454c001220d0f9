"""What a spec's verify found, for tests that look at its findings directly."""

from __future__ import annotations

from pathlib import Path

import threadmap.api as api
from threadmap.report.model import Finding


def findings(path: Path) -> list[Finding]:
    """Every finding of the first run of ``verify`` on ``path``, in the checks' order."""
    run = api.verify_spec(path)[0]
    return [f for r in run.results for f in r.findings]
