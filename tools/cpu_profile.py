"""A pytest plugin that measures each test's CPU time (not wall time): this process's user and
system time plus that of the child processes it waited for (nvcc, g++, the compiled oracles).

Load it by name, without a conftest: ``python3 -m pytest -p tools.cpu_profile tests/prove``.
At the end it prints the 30 costliest tests (setup, call and teardown together) and the total
per test file; ``THREADMAP_CPU_PROFILE=out.tsv`` also writes every test's seconds there.
Under pytest-xdist each worker measures its own tests; the table is printed only without
``-n`` (a worker's terminal output is not shown), so profile with ``-n 0`` or write the TSV.

Law: a test's figure is the growth of ``os.times()``'s user + system + children_user +
children_system across its setup, call and teardown, so a module fixture's cost is charged to
the first test that requests it.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Generator
from typing import Any

import pytest

_COSTS: dict[str, float] = {}


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, None]:
    start = _cpu()
    yield
    _COSTS[item.nodeid] = _COSTS.get(item.nodeid, 0.0) + _cpu() - start


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("THREADMAP_CPU_PROFILE")
    if out and _COSTS:
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        path = f"{out}.{worker}" if worker else out
        with open(path, "w") as f:
            for nodeid, sec in sorted(_COSTS.items(), key=lambda kv: -kv[1]):
                f.write(f"{sec:.3f}\t{nodeid}\n")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _COSTS:
        return
    tr = terminalreporter
    tr.section("CPU seconds per test (top 30)")
    for nodeid, sec in sorted(_COSTS.items(), key=lambda kv: -kv[1])[:30]:
        tr.write_line(f"{sec:8.2f}  {nodeid}")
    files: dict[str, float] = defaultdict(float)
    for nodeid, sec in _COSTS.items():
        files[nodeid.split("::")[0]] += sec
    tr.section("CPU seconds per file")
    for name, sec in sorted(files.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"{sec:8.2f}  {name}")
    tr.write_line(f"{sum(_COSTS.values()):8.2f}  total ({len(_COSTS)} tests)")
