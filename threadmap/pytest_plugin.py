"""pytest plugin: verify spec files as test items.

Off unless enabled (pytest loads it in every session where threadmap is installed, so this
module imports only pytest and the standard library; threadmap itself is imported once the
plugin is enabled)::

    pytest --threadmap specs/                  # your tests, and every spec under specs/
    pytest --threadmap specs/ specs/           # only the specs
    pytest --threadmap specs/ -k row_smem      # the specs whose file stem or name: matches

or in the ini file (globs relative to the rootdir; they are collected when pytest runs
without path arguments, or when a path argument contains them)::

    [tool.pytest.ini_options]
    threadmap_specs = ["specs/**/*.yaml"]

One item per spec file, named by the file stem; the spec's ``name:`` is a keyword too, so
``-k`` selects by either.  An item verifies every size environment of its spec and passes
when each run is as the spec's ``expect:`` block says (``threadmap verify --check-expected``):
a spec expected to fail in ``failing_checks`` that fails there passes, and is listed in the
``threadmap`` section of the terminal summary and in its ``threadmap:expected_failure`` user
property.  Each check result is a user property too (``threadmap:CHECK[STAGE]``), so JUnit XML
carries them.  A failing item shows the checks, the failing findings with their witness and
the ``FILE:LINE`` of their stage; an invalid spec is a collection error with the loader's
``FILE:LINE:COL: field.path: message`` (pytest then stops before running tests, as for any
collection error, unless given ``--continue-on-collection-errors``).

``--threadmap-checks coverage,bank_conflicts`` runs only those checks (the expect block is
then judged on them); ``--threadmap-sizes M=1000,N=62`` sets named sizes of every spec.
``-m threadmap`` selects the spec items; ``-p no:threadmap`` disables the plugin.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from threadmap.spec.load import LoadedSpec

SPEC_SUFFIXES = (".yaml", ".yml", ".toml", ".json")  # as threadmap.spec.load, without importing it
EXPECTED_FAILURE = "threadmap:expected_failure"


@dataclass
class _State:
    """What an enabled plugin collects and how it runs it (one per session, in the config)."""

    files: set[Path] = field(default_factory=set)  # resolved spec files to collect
    sizes: dict[str, int] | None = None
    checks: list[str] | None = None


_STATE = pytest.StashKey[_State]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("threadmap", "threadmap spec files as tests")
    group.addoption("--threadmap", action="append", default=[], metavar="PATH", dest="threadmap",
                    help="verify a spec file, or every spec file under a directory, as test items "
                         "(repeatable; enables the threadmap plugin)")
    group.addoption("--threadmap-checks", default=None, metavar="CHECKS", dest="threadmap_checks",
                    help="run only these checks of the spec items (comma-separated, e.g. coverage,bank_conflicts)")
    group.addoption("--threadmap-sizes", default=None, metavar="SIZES", dest="threadmap_sizes",
                    help="set named sizes of every spec item, e.g. M=1000,N=62")
    parser.addini("threadmap_specs", type="args", default=[],
                  help="globs (relative to the rootdir) of spec files to verify as test items; enables the "
                       "threadmap plugin")


def _parse_sizes(text: str) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        try:
            if not eq or not name.strip():
                raise ValueError
            sizes[name.strip()] = int(value)
        except ValueError:
            raise pytest.UsageError(f"--threadmap-sizes: expected NAME=INTEGER[,NAME=INTEGER...], got {part!r}") \
                from None
    return sizes


def _is_spec(path: Path) -> bool:
    return path.suffix.lower() in SPEC_SUFFIXES and not path.name.endswith(".schema.json")


def _expand(paths: list[Path]) -> Iterator[Path]:
    """Spec files of ``paths`` (directories searched recursively, as ``threadmap verify``)."""
    from threadmap.api import describe_error, spec_files
    from threadmap.errors import SpecError

    try:
        yield from spec_files(paths)
    except SpecError as e:
        raise pytest.UsageError(f"threadmap: {describe_error(e)}") from None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "threadmap: a threadmap spec file verified against its expect block")
    paths: list[str] = config.getoption("threadmap") or []
    globs: list[str] = config.getini("threadmap_specs") or []
    if not paths and not globs:
        return  # off: nothing of threadmap is imported
    state = _State()
    inv = config.invocation_params.dir
    extra: list[str] = []
    for p in paths:
        state.files.update(f.resolve() for f in _expand([inv / p]))
        extra.append(p)  # named on the command line: collected whatever the other arguments
    root = config.rootpath
    for pattern in globs:
        matches = [root / m for m in sorted(glob.glob(pattern, root_dir=root, recursive=True))]
        found = [f for m in matches for f in (_expand([m]) if m.is_dir() else [m] if _is_spec(m) else [])]
        if not found:
            config.issue_config_time_warning(
                pytest.PytestConfigWarning(f"threadmap_specs: {pattern!r} matches no spec file under {root}"),
                stacklevel=2)
        state.files.update(f.resolve() for f in found)
        # a plain `pytest` runs the specs too; `pytest tests/test_x.py` runs only what it names
        if config.args_source != pytest.Config.ArgsSource.ARGS:
            extra.extend(str(f) for f in found)
    if config.getoption("threadmap_sizes"):
        state.sizes = _parse_sizes(config.getoption("threadmap_sizes"))
    if config.getoption("threadmap_checks"):
        from threadmap.api import check_names, describe_error

        names = [c for c in config.getoption("threadmap_checks").split(",") if c.strip()]
        try:
            check_names(names)
        except ValueError as e:
            raise pytest.UsageError(f"--threadmap-checks: {describe_error(e)}") from None
        state.checks = names
    config.stash[_STATE] = state
    # pytest drops arguments that repeat or lie under others, so the specs are collected once;
    # xdist workers see the same invocation and add the same arguments, in the same order
    for a in extra:
        if a not in config.args:
            config.args.append(a)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SpecFile | None:
    state = parent.config.stash.get(_STATE, None)
    if state is None or file_path.resolve() not in state.files:
        return None
    return SpecFile.from_parent(parent, path=file_path)


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when under it: messages then read
    ``specs/k.yaml:12`` and stay clickable."""
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except (OSError, ValueError):
        return str(path)


class SpecFile(pytest.File):
    """A spec file: one :class:`SpecItem`, or a collection error if the spec is invalid."""

    def collect(self) -> Iterator[SpecItem]:
        import threadmap.api as api
        from threadmap.errors import ThreadmapError

        state = self.config.stash[_STATE]
        try:
            loaded = api.load(_shown(self.path))
            if state.sizes:  # the sizes this spec has: one option serves a project of many specs
                mine = {k: v for k, v in state.sizes.items() if k in loaded.spec.sizes}
                loaded = api.load(loaded, mine) if mine else loaded
            api.models(loaded)  # what only building the kernel model finds is invalid too
        except ThreadmapError as e:
            # CollectError shows its message alone: the loader's FILE:LINE:COL: field.path: message
            raise self.CollectError(str(e)) from None
        yield SpecItem.from_parent(self, name=self.path.stem, loaded=loaded, checks=state.checks)


class SpecFailure(Exception):
    """A spec item's runs are not as its expect block says (the message is the report)."""


class SpecItem(pytest.Item):
    """One spec file, verified under every size environment of the spec."""

    def __init__(self, *, loaded: LoadedSpec, checks: list[str] | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.loaded = loaded
        self.checks = checks
        self.add_marker("threadmap")
        self.extra_keyword_matches.add(loaded.name)  # -k matches the spec's name: too

    def runtest(self) -> None:
        import threadmap.api as api
        from threadmap.errors import ThreadmapError
        from threadmap.report.formats import headline, where
        from threadmap.testing.assertions import explain, matches_expect
        from threadmap.verify import WorkTooLarge

        try:
            runs = api.verify_spec(self.loaded, checks=self.checks)
        except (ThreadmapError, WorkTooLarge) as e:
            msg = str(e) if str(e).startswith(str(self.loaded.path)) else f"{self.loaded.path}:1:1: (spec): {e}"
            raise SpecFailure(msg) from None
        many = len(runs) > 1
        for run in runs:
            label = "threadmap" + (f"[{', '.join(f'{k}={v}' for k, v in run.sizes.items())}]" if many else "")
            self.user_properties.append((f"{label}:verdict", run.verdict))
            for r in run.results:
                self.user_properties.append((f"{label}:{r.check}[{where(r)}]", f"{r.status}: {headline(r)}"))
        bad = [r for r in runs if not matches_expect(r, self.checks)]
        if bad:
            r0 = bad[0]
            raise SpecFailure(f"threadmap: {self.loaded.path} is not as its expect block says: verdict "
                              f"{r0.verdict.upper()}, expected {r0.expected.upper()}"
                              + (f" in {', '.join(r0.expected_failing)}" if r0.expected_failing else "") + "\n"
                              + explain(runs, loaded=self.loaded, checks=self.checks,
                                        verbose=self.config.get_verbosity() > 0))
        failing = sorted({c for r in runs for c in r.failing})
        if failing:  # failed as expected: a pass, but say so
            self.user_properties.append((EXPECTED_FAILURE, ", ".join(failing)))

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, SpecFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _STATE not in config.stash:
        return
    expected = [(rep.nodeid, dict(rep.user_properties)[EXPECTED_FAILURE])
                for rep in terminalreporter.stats.get("passed", [])
                if rep.when == "call" and EXPECTED_FAILURE in dict(rep.user_properties)]
    if expected:
        terminalreporter.write_sep("-", "threadmap")
        one = len(expected) == 1
        terminalreporter.write_line(f"{len(expected)} spec{'' if one else 's'} passed by failing as "
                                    f"{'its' if one else 'their'} expect block says:")
        for nodeid, checks in expected:
            terminalreporter.write_line(f"  {nodeid}: {checks}")
