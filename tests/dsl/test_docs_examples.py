"""The CuTe DSL examples of README.md and docs/dsl.md work when pasted, and print what they say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

pytest.importorskip("cutlass.cute", reason="the CuTe DSL (pip install 'threadmap[dsl]') is not installed")

ROOT = Path(__file__).resolve().parents[2]


def _run(doc: str, name: str) -> tuple[dict, str, str]:
    """The example's namespace after running it, what it printed, and its last ``# `` comment."""
    text = (ROOT / doc).read_text()
    m = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", text, flags=re.S)
    assert m, f"{doc}: example {name} is missing"
    ns: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(m.group(1), doc, "exec"), ns)
    comments = [ln.split("# ", 1)[1] for ln in m.group(1).splitlines() if "# " in ln]
    return ns, out.getvalue().strip(), comments[-1] if comments else ""


def test_the_readme_example_prints_the_converted_tiled_copy() -> None:
    _ns, printed, said = _run("README.md", "dsl")
    assert printed == said


def test_the_pattern_of_docs_dsl_runs_as_a_test() -> None:
    ns, _printed, _said = _run("docs/dsl.md", "dsl-pattern")
    ns["test_the_copy_partitions"]()


def test_the_pointer_swizzle_example_prints_what_it_says() -> None:
    _ns, printed, said = _run("docs/dsl.md", "dsl-smem")
    assert printed == said
