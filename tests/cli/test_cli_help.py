"""Every example in ``threadmap --help`` and each command's ``--help`` runs as printed."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from threadmap.cli import main

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ["", "layout", "threadmap", "verify", "prove", "simulate", "show", "schema", "examples"]


def examples() -> list[tuple[str, str]]:
    out = []
    for cmd in COMMANDS:
        r = CliRunner().invoke(main, [*cmd.split(), "--help"] if cmd else ["--help"])
        assert r.exit_code == 0, r.output
        in_examples = False
        for line in r.output.splitlines():
            s = line.strip()
            if s == "Examples:":
                in_examples = True
            elif in_examples and s.startswith("threadmap "):
                out.append((cmd or "threadmap", s))
            elif in_examples:
                in_examples = False
    return out


EXAMPLES = examples()


def test_every_command_documents_examples() -> None:
    with_examples = {cmd for cmd, _ in EXAMPLES}
    assert {"threadmap", "layout", "verify", "simulate", "show", "prove"} <= with_examples


@pytest.mark.parametrize("cmd,line", EXAMPLES, ids=[line for _, line in EXAMPLES])
def test_help_example_runs(cmd: str, line: str, tmp_path: Path) -> None:
    argv = shlex.split(line)[1:]
    argv = [a.replace("/tmp/", f"{tmp_path}/") for a in argv]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        r = CliRunner().invoke(main, argv)
    finally:
        os.chdir(cwd)
    assert r.exit_code in (0, 1), (line, r.exit_code, r.output, r.exception)
    assert "Traceback" not in r.output
