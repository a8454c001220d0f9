"""Every command in every format on every library spec: the exit status the spec expects,
never 3 (an internal error).

One test per spec under ``specs/``; inside it, every command that takes a spec (verify,
verify --check-expected, verify --engine z3|auto|both, prove, simulate, show) in every
format it offers (and both table layouts: one table per spec, one line per spec).  The
engines' work is shared between the commands: ``api.verify_spec`` and the prover's
``prove_isolated`` are memoised per spec, so each spec is enumerated and proved once and
every command still runs its whole path from the arguments to the rendered report (the
crash this guards against, ``KeyError: 'stage'`` in the proof table, was in the rendering).
The specs whose proofs are slow (``specs/ranges``) are proved with ``--timeout 2``; a
property stopped by the prover's (wall-clock) limit is UNKNOWN, and exit 1 is then what a
spec expected to pass gets.

Cost: about 45 CPU-seconds for the 45 library specs run alone (each test's user + system
time and its children's, ``tools/cpu_profile.py``), most of it the proofs.
"""

from __future__ import annotations

import functools
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import threadmap.api as api
import threadmap.prove.run as prove_run
from threadmap.cli import main
from threadmap.spec.load import load_spec

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted(p for p in (ROOT / "specs").rglob("*") if p.suffix in (".yaml", ".yml", ".toml", ".json")
               and not p.name.endswith(".schema.json"))
FORMATS = ("table", "json", "junit", "sarif")
#: specs whose proofs take long (a range spec's size classes: tens of CPU-seconds; every
#: fixed-size spec under 4, the sgemm epilogues included since their vector-legality
#: formulas are built once per key): proved with a short limit
SLOW_DIR = ROOT / "specs" / "ranges"
SLOW_TIMEOUT, TIMEOUT = "2", "60"

_verify_spec = api.verify_spec
_prove_isolated = prove_run.prove_isolated


@functools.cache
def _enumerated(path: str, sizes: Any, checks: Any, exhaustive: bool, max_rows: Any) -> list[Any]:
    return _verify_spec(path, sizes=dict(sizes) if sizes else None, checks=checks, exhaustive=exhaustive,
                        max_rows=max_rows)


def shared_verify_spec(spec: Any, *, sizes: Any = None, checks: Any = None, exhaustive: bool = False,
                       max_rows: Any = None, progress: Any = None) -> list[Any]:
    key = tuple(sorted(sizes.items())) if sizes else None
    path = str(spec.path) if isinstance(spec, api.LoadedSpec) else str(spec)
    return [r.model_copy(deep=True) for r in _enumerated(path, key, checks, exhaustive, max_rows)]


@functools.cache
def _proved(path: str, timeout: float) -> tuple[str, Any]:
    return _prove_isolated(load_spec(path), timeout)


def shared_prove_isolated(loaded: Any, timeout_s: float) -> tuple[str, Any]:
    kind, payload = _proved(str(loaded.path), timeout_s)
    return kind, payload if isinstance(payload, str) else payload.model_copy(deep=True)


def timed_out(spec: Path, timeout: str) -> bool:
    """Whether the prover's time limit stopped a property of ``spec`` (the limit is wall-clock
    time: on a busy machine a proof may be UNKNOWN, exit 1, where it is PROVED at leisure)."""
    _, run = _proved(str(spec), float(timeout))
    return not isinstance(run, str) and any(p.status == "UNKNOWN" and "time limit" in p.reason
                                            for p in run.properties)


def expected_exits(spec: Path, timeout: str) -> dict[str, set[int]]:
    """What each engine must exit with, from the spec's ``expect`` block."""
    loaded = load_spec(spec)
    enum = {1 if loaded.spec.expect.verdict == "fail" else 0}
    # a planted range bug passes at its samples and is refuted by the proof
    proof = {1} if 1 in enum or "planted" in spec.name else {0}
    if timed_out(spec, timeout):
        proof |= {1}
    return {"enum": enum, "z3": proof, "both": {max(e, p) for e in enum for p in proof},
            "auto": proof if api.has_range(loaded) else enum}


def check_output(fmt: str, out: str) -> None:
    """The report parses in its format."""
    if fmt == "json":
        json.loads(out)
    elif fmt == "junit":
        ET.fromstring(out.encode())
    elif fmt == "sarif":
        assert json.loads(out)["version"] == "2.1.0"
    else:
        assert out.strip()


@pytest.mark.parametrize("spec", SPECS, ids=[str(p.relative_to(ROOT / "specs")) for p in SPECS])
def test_every_command_and_format(spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "verify_spec", shared_verify_spec)
    monkeypatch.setattr(prove_run, "prove_isolated", shared_prove_isolated)
    timeout = SLOW_TIMEOUT if spec.is_relative_to(SLOW_DIR) else TIMEOUT
    want = expected_exits(spec, timeout)
    s = str(spec)
    cases: list[tuple[list[str], str, set[int]]] = []
    for fmt in FORMATS:
        cases.append((["verify", s, "--format", fmt], fmt, want["enum"]))
        cases.append((["verify", s, "--format", fmt, "--check-expected"], fmt, {0}))
        cases.append((["verify", s, "--engine", "z3", "--timeout", timeout, "--format", fmt], fmt, want["z3"]))
        cases.append((["prove", s, "--timeout", timeout, "--format", fmt], fmt, want["z3"]))
    for engine in ("auto", "both"):
        for fmt in FORMATS:
            cases.append((["verify", s, "--engine", engine, "--timeout", timeout, "--format", fmt], fmt,
                          want[engine]))
    # the other table layout: one line per spec
    cases.append((["verify", s, "--compact"], "table", want["enum"]))
    cases.append((["verify", s, "--engine", "both", "--timeout", timeout, "--compact"], "table", want["both"]))
    cases.append((["prove", s, "--timeout", timeout, "--compact"], "table", want["z3"]))
    cases.append((["simulate", s, "--format", "csv"], "table", {0}))
    cases.append((["simulate", s, "--format", "json"], "json", {0}))
    cases.append((["simulate", s, "--format", "npz", "-o", str(tmp_path / "t.npz")], "none", {0}))
    cases.append((["show", s, "--svg", str(tmp_path / "t.svg")], "table", {0}))
    problems = []
    for argv, fmt, exits in cases:
        r = CliRunner().invoke(main, argv)
        if r.exit_code not in exits:
            problems.append(f"{' '.join(argv)}: exit {r.exit_code}, expected {sorted(exits)}: "
                            f"{(r.stderr or r.output).strip()[-300:]}")
            continue
        if fmt != "none":
            try:
                check_output(fmt, r.stdout)
            except (ValueError, AssertionError, ET.ParseError) as e:
                problems.append(f"{' '.join(argv)}: the {fmt} output does not parse: {e}")
    assert not problems, "\n".join(problems)
