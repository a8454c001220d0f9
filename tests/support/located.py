"""A bad spec is a located error: ``FILE:LINE:COL: field.path`` from the API, exit 2 and no
traceback from the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import threadmap.api as api
from threadmap.errors import SpecError


def assert_located_error(path: Path, where: str, says: str) -> None:
    """``verify`` of ``path`` raises a SpecError naming the file, ``where`` and ``says``; the CLI
    exits 2 without a traceback."""
    with pytest.raises(SpecError) as e:
        api.verify_spec(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:") and where in msg and says in msg, msg
    cli = subprocess.run([sys.executable, "-m", "threadmap", "verify", str(path)], capture_output=True, text=True,
                         timeout=120)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr
