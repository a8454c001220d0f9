"""``threadmap diff``: logs in the default and a custom format, with planted differences,
malformed and interleaved lines; errors exit 2 with the reason, never a traceback or a hang."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from threadmap.gpu import log as L
from threadmap.gpu.log import LogError, diff_log, load_model, simulated_log

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs/cute_transpose/row_smem.yaml"   # stages 0 and 2 copy, 1024 x 1024
RAGGED = ROOT / "specs/planted/stripmined_vector_straddle_n62.yaml"


def _model(spec: Path = SPEC, sizes: dict[str, int] | None = None):  # type: ignore[no-untyped-def]
    return load_model(spec, sizes)


def _write(tmp: Path, lines: list[str], name: str = "k.log") -> Path:
    p = tmp / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_a_faithful_log_matches(tmp_path: Path) -> None:
    m = _model()
    blocks = np.array([0, 5, m.num_blocks - 1])
    lines = simulated_log(m, blocks)
    d = diff_log(m, _write(tmp_path, lines))
    assert d.ok and d.matched == len(lines) == d.records and d.blocks == 3 and d.threads == 3 * 256
    assert d.side == {0: "src", 2: "dst"}


def test_planted_differences_are_counted_exactly(tmp_path: Path) -> None:
    m = _model()
    lines = simulated_log(m, np.array([1, 70]))
    n = len(lines)
    rec = re.compile(r"coord=(\d+),(\d+)$")
    out = list(lines)
    # two moved coordinates, three missing records, one duplicate (extra)
    for i in (10, 300):
        r, c = map(int, rec.search(out[i]).groups())  # type: ignore[union-attr]
        out[i] = rec.sub(f"coord={r},{c + 1000}", out[i])
    changed = {out[10], out[300]}
    missing = [out.pop(500), out.pop(500), out.pop(500)]
    out.append(lines[42])
    # interleaved: two records on one line, and program output around them
    glued = out.pop(100) + " " + out.pop(100)
    out.insert(100, "kernel says hello " + glued)
    out.insert(0, "some other program output")
    # malformed: a marker line that does not parse, a block outside the grid, a huge number
    out.insert(5, "TM stage=0 block=oops tid=1")
    out.insert(6, "TM stage=0 block=99999,0,0 tid=1 iter=0 value=0 coord=1,2")
    out.insert(7, "TM stage=0 block=0,0,0 tid=1 iter=0 value=0 coord=1,99999999999999999999")
    d = diff_log(m, _write(tmp_path, out))
    assert (d.moved, d.missing, d.extra, d.malformed_count) == (2, 3, 1, 3)
    assert d.matched == n - 2 - 3
    assert [x.line for x in d.malformed] == [6, 7, 8]
    assert "outside the spec's grid" in d.malformed[1].why
    moved = [f for f in d.findings if f.kind == "moved"]
    assert {f.line for f in moved} == {i + 1 for i, x in enumerate(out) if x in changed}
    assert all(f.log != f.simulated for f in moved)
    assert sorted(f.simulated for f in d.findings if f.kind == "missing") == sorted(
        [int(x) for x in rec.search(s).groups()] for s in missing)  # type: ignore[union-attr]
    assert len(d.per_thread) == len({(f.stage, f.block, f.thread) for f in d.findings})


def test_custom_format_without_values_matches_multisets(tmp_path: Path) -> None:
    m = _model(RAGGED)
    lines = simulated_log(m, np.array([0]))
    pat = re.compile(r"block=(\d+),(\d+),(\d+) tid=(\d+) iter=(\d+) value=(\d+) coord=(\d+),(\d+)")
    custom = []
    for s in lines:
        bx, by, bz, t, it, v, r, c = pat.search(s).groups()  # type: ignore[union-attr]
        custom.append(f"[b {bx}/{by}] thread {t} step {it}: A({r}, {c})")
    # the same thread's two values swapped: still the same multiset per (thread, step)
    custom[0], custom[1] = custom[1], custom[0]
    regex = r"\[b (?P<bx>\d+)/(?P<by>\d+)\] thread (?P<tid>\d+) step (?P<iter>\d+): A\((?P<row>\d+), (?P<col>\d+)\)"
    d = diff_log(m, _write(tmp_path, custom), pattern=regex)
    assert d.ok and d.matched == len(custom)
    # the predicate masks columns 60-61 (vector straddles N = 62): a kernel that loads them is extra
    custom.append("[b 0/0] thread 15 step 0: A(0, 60)")
    d = diff_log(m, _write(tmp_path, custom), pattern=regex)
    assert (d.extra, d.missing, d.moved) == (1, 0, 0)
    # a moved coordinate without a value index cannot be paired: one missing, one extra
    custom[5] = re.sub(r"A\((\d+), (\d+)\)", lambda g: f"A({g[1]}, {int(g[2]) + 1})", custom[5])
    d = diff_log(m, _write(tmp_path, custom[:-1]), pattern=regex)
    assert (d.extra, d.missing, d.moved) == (1, 1, 0)


@pytest.mark.parametrize("pattern,msg", [
    ("(", "not a regular expression"),
    (r"(?P<row>\d+)", "named group 'tid'"),
    (r"(?P<tid>\d+)", "the coordinate"),
    (r"(?P<tid>\d+) (?P<coord>\d+) (?P<colour>\w+)", "unknown named groups"),
])
def test_bad_patterns(tmp_path: Path, pattern: str, msg: str) -> None:
    with pytest.raises(LogError, match=msg):
        diff_log(_model(RAGGED), _write(tmp_path, ["x"]), pattern=pattern)


def test_a_catastrophic_pattern_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(L, "REGEX_BUDGET_S", 0.5)
    log = _write(tmp_path, ["a" * 40 + "!"] * 3)
    with pytest.raises(LogError, match="simplify it"):
        diff_log(_model(RAGGED), log, pattern=r"(?P<tid>(a|aa)+)+c(?P<coord>\d)")


def test_stage_is_needed_when_the_spec_has_several(tmp_path: Path) -> None:
    log = _write(tmp_path, ["t=1 c=2,3"])
    with pytest.raises(LogError, match="give --stage"):
        diff_log(_model(), log, pattern=r"t=(?P<tid>\d+) c=(?P<coord>[\d,]+)")
    with pytest.raises(LogError, match="copy stages are"):
        diff_log(_model(), log, pattern=r"t=(?P<tid>\d+) c=(?P<coord>[\d,]+)", stage=1)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "threadmap.cli", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_diff(tmp_path: Path) -> None:
    m = _model()
    lines = simulated_log(m, np.array([3]), stages=[0])
    good = _write(tmp_path, lines, "good.log")
    r = _cli("diff", str(SPEC), str(good), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["matched"] == len(lines)
    bad = _write(tmp_path, lines[1:] + ["TM stage=0 block=3,0,0 tid=x"], "bad.log")
    r = _cli("diff", str(SPEC), str(bad))
    assert r.returncode == 1 and "missing" in r.stdout and "bad.log:256: malformed" in r.stdout, r.stdout
    for args, msg in [((str(SPEC), str(tmp_path / "none.log")), "cannot read the log"),
                      ((str(SPEC), str(good), "--regex", "("), "not a regular expression"),
                      ((str(ROOT / "specs/ranges/row_smem.yaml"), str(good)), "give the kernel's with --sizes")]:
        r = _cli("diff", *args)
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    r = _cli("gpu", "--include-dir")
    assert r.returncode == 0 and (Path(r.stdout.strip()) / "threadmap_probe.h").exists()
