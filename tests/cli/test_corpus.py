"""Replay the kept inputs of the fuzz campaign (``tools/fuzz_campaign.py``) through the CLI.

``tests/cli/corpus/index.json`` lists every kept input: the file it needs (a spec, or for
calculator inputs a JSON list of arguments), the argv (``{input}`` stands for the file),
the exit statuses allowed, and a time limit (``run_as``: the file name the input is copied
under, where the name itself is the input).  Each entry is run in process through
:func:`threadmap.cli.entry` (the console script's wrapper, what users get) in a fresh
directory holding a copy of the input, with stdout strict UTF-8 and stderr
backslash-replacing (a UTF-8 pipe), under a soft address-space limit (2 GiB above the
current size) and a CPU-time limit (a busy machine is slow, never red).  The promise checked:

* no traceback and no Python exception line in stdout or stderr;
* exit status in the entry's ``expected_status`` (a subset of {0, 1, 2}; 3 is an internal
  error and is never expected), with a ``threadmap: error:`` line for 2;
* no ``MemoryError``/``RecursionError`` reaching the user, no raw terminal escape, finished
  within ``time_limit_s``;
* for ``format`` entries (``--format json|junit|sarif``, ``simulate`` JSON/CSV, the
  calculators' ``--json``): parseable output, SARIF URIs that are URI references, CSV rows
  with the header's field count;
* the entry's extra conditions: ``stderr_max_lines`` (one line per problem),
  ``stderr_must_not_match``, ``stdout_must_match``.

Entries with a ``bug`` field are open bugs the campaign found (the reason says what is
wrong and where): their tests FAIL until the bug is fixed, then pass; delete the ``bug``
field then.  Nothing is skipped.
"""

from __future__ import annotations

import io
import json
import os
import re
import resource
import shutil
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest

from tests.support.timeouts import cpu_seconds, time_limit

CORPUS = Path(__file__).parent / "corpus"
INDEX: list[dict[str, Any]] = json.loads((CORPUS / "index.json").read_text(encoding="utf-8"))
EXTRA_MEMORY = 2 << 30

TRACEBACK = re.compile(r"^Traceback \(most recent call last\)|^\s*File \".*\", line \d+", re.M)
EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)\b(?::|$)", re.M)


class _Timeout(BaseException):
    """Raised by the alarm; a BaseException so that the CLI's ``except Exception`` cannot
    turn it into an ordinary exit."""


def _vm_size() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_cli(argv: list[str], cwd: Path, time_limit_s: float) -> tuple[int | str, str, str, float]:
    """(status or 'timeout', stdout, stderr, CPU seconds) of ``threadmap ARGV`` run in process."""
    from threadmap.cli import entry

    saved = (sys.argv, sys.stdin, sys.stdout, sys.stderr, os.getcwd())
    out_b, err_b = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_b, encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_b, encoding="utf-8", errors="backslashreplace", write_through=True)
    old_as = resource.getrlimit(resource.RLIMIT_AS)
    limit = _vm_size() + EXTRA_MEMORY
    if old_as[1] != resource.RLIM_INFINITY:
        limit = min(limit, old_as[1])

    status: int | str
    t0 = cpu_seconds()
    limit_cm = time_limit(time_limit_s, "the command", exc=_Timeout)
    try:
        sys.argv = ["threadmap", *argv]
        sys.stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
        sys.stdout, sys.stderr = out, err
        os.chdir(cwd)
        resource.setrlimit(resource.RLIMIT_AS, (limit, old_as[1]))
        try:
            with limit_cm:
                entry()
            status = 0
        except SystemExit as e:
            status = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
        except _Timeout:
            status = "timeout"
        except BaseException:  # what the interpreter would print
            traceback.print_exc(file=err)
            status = 1
        try:
            out.flush()
        except Exception:  # noqa: BLE001 - an unencodable stdout, as the interpreter reports it at exit
            traceback.print_exc(file=err)
            status = 120
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old_as)
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved[:4]
        os.chdir(saved[4])
    seconds = cpu_seconds() - t0
    return status, out_b.getvalue().decode("utf-8", "replace"), err_b.getvalue().decode("utf-8", "replace"), seconds


URI_REF = re.compile(r"(?:[A-Za-z0-9\-._~:/?\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*"
                     r"(?:#(?:[A-Za-z0-9\-._~:/?@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)?")


def _sarif_uris(doc: Any) -> list[str]:
    out = []
    for run in doc.get("runs", []):
        for res in run.get("results", []):
            for loc in res.get("locations", []):
                uri = loc.get("physicalLocation", {}).get("artifactLocation", {}).get("uri")
                if uri is not None:
                    out.append(uri)
        for art in run.get("artifacts", []):
            uri = art.get("location", {}).get("uri")
            if uri is not None:
                out.append(uri)
    return out


def _format_problem(fmt: str, text: str) -> str | None:
    def bad_constant(c: str) -> Any:
        raise ValueError(f"non-standard JSON constant {c}")
    try:
        if fmt in ("json", "calc-json", "sim-json", "sarif"):
            doc = json.loads(text, parse_constant=bad_constant)
            if fmt == "sarif":
                if doc.get("version") != "2.1.0":
                    return "not SARIF 2.1.0"
                bad = [u for u in _sarif_uris(doc) if not (isinstance(u, str) and URI_REF.fullmatch(u))]
                if bad:
                    return f"SARIF artifactLocation.uri is not a URI reference (RFC 3986): {bad[0]!r}"
        elif fmt == "junit":
            import xml.etree.ElementTree as ET
            ET.fromstring(text)
        elif fmt == "csv":
            import csv
            rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
            for i, row in enumerate(rows[1:], 2):
                if len(row) != len(rows[0]):
                    return f"CSV line {i} has {len(row)} fields, the header {len(rows[0])}: {row[:13]!r}"
    except Exception as e:  # noqa: BLE001
        return f"--format {fmt} output does not parse: {type(e).__name__}: {str(e)[:200]}"
    return None


def problems_of(entry: dict[str, Any], status: int | str, out: str, err: str, seconds: float) -> list[str]:
    probs = []
    both = out + "\n" + err
    if TRACEBACK.search(both):
        probs.append("a traceback reached the user")
    elif EXC_LINE.search(err):
        probs.append("a Python exception line reached the user")
    if status == "timeout":
        probs.append(f"did not finish within {entry['time_limit_s']} s of CPU time")
    elif status == 3:
        probs.append("exit status 3 (internal error)")
    elif status not in entry["expected_status"]:
        probs.append(f"exit status {status}, expected one of {entry['expected_status']}")
    if status == 2 and not err.lstrip().startswith("threadmap: error:"):
        probs.append("exit status 2 without a 'threadmap: error:' line")
    for word in ("MemoryError", "RecursionError"):
        if word in both:
            probs.append(f"{word} reached the user (runaway memory or recursion)")
    if "\x1b" in both:
        probs.append("a raw terminal escape reached the output")
    fmt = entry.get("format")
    if fmt and status in (0, 1) and out.strip() and "-h" not in entry.get("argv_resolved", []):
        p = _format_problem(fmt, out)
        if p:
            probs.append(p)
    if "stderr_max_lines" in entry and len(err.splitlines()) > entry["stderr_max_lines"]:
        probs.append(f"stderr has {len(err.splitlines())} lines for one problem (at most "
                     f"{entry['stderr_max_lines']} expected)")
    for pat in entry.get("stderr_must_not_match", []):
        if re.search(pat, err, re.M):
            probs.append(f"stderr matches {pat!r}")
    for pat in entry.get("stdout_must_match", []):
        if not re.search(pat, out, re.M):
            probs.append(f"stdout lacks {pat!r}")
    return probs


def _argv(entry: dict[str, Any], tmp: Path) -> list[str]:
    inp = entry.get("input")
    if entry.get("argv") is None:
        assert inp is not None
        return list(json.loads((CORPUS / inp).read_text(encoding="utf-8")))
    return [a.replace("{input}", entry.get("run_as", inp) or "") for a in entry["argv"]]


@pytest.mark.parametrize("entry", INDEX, ids=[e["id"] for e in INDEX])
def test_corpus_input(entry: dict[str, Any], tmp_path: Path) -> None:
    for d in entry.get("dirs", []):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    inp = entry.get("input")
    if inp and entry.get("argv") is not None:
        shutil.copyfile(CORPUS / inp, tmp_path / entry.get("run_as", inp))
    argv = _argv(entry, tmp_path)
    entry = {**entry, "argv_resolved": argv}
    status, out, err, seconds = run_cli(argv, tmp_path, entry["time_limit_s"])
    probs = problems_of(entry, status, out, err, seconds)
    if probs:
        bug = entry.get("bug")
        head = f"OPEN BUG {entry['id']}: {bug}" if bug else f"REGRESSION {entry['id']}"
        pytest.fail(f"{head}\n  argv: {argv!r}\n  status: {status}, {seconds:.2f} s\n  problems: "
                    + "; ".join(probs) + f"\n  stderr: {err[-1500:]!r}", pytrace=False)


def test_index_is_consistent() -> None:
    ids = [e["id"] for e in INDEX]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for e in INDEX:
        assert set(e["expected_status"]) <= {0, 1, 2}, e["id"]
        assert 0 < e["time_limit_s"] <= 30, e["id"]
        if e.get("input"):
            assert (CORPUS / e["input"]).is_file(), e["input"]
    kept = {e["input"] for e in INDEX if e.get("input")}
    stray = [p.name for p in CORPUS.iterdir() if p.name != "index.json" and p.name not in kept
             and p.name != "README.md"]
    assert not stray, f"corpus files not in the index: {stray}"
