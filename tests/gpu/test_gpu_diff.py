"""``threadmap diff``: logs in the default and a custom format, with planted differences,
malformed and interleaved lines; errors exit 2 with the reason, never a traceback or a hang."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.cxx_oracle import cannot_run
from threadmap.gpu import log as L
from threadmap.gpu.log import LogError, diff_log, load_model, simulated_log

ROOT = Path(__file__).resolve().parents[2]
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


def test_logs_in_other_encodings_and_line_ends(tmp_path: Path) -> None:
    m = _model()
    lines = simulated_log(m, np.array([4]))
    text = "\n".join(lines) + "\n"
    (tmp_path / "u16.log").write_text(text, encoding="utf-16")
    (tmp_path / "cr.log").write_bytes(text.replace("\n", "\r").encode())
    (tmp_path / "crlf.log").write_bytes(text.replace("\n", "\r\n").encode())
    for name in ("u16.log", "cr.log", "crlf.log"):
        d = diff_log(m, tmp_path / name)
        assert d.ok and d.matched == len(lines), name


def test_what_is_not_a_log_is_refused(tmp_path: Path) -> None:
    m = _model()
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "noise.log").write_bytes(bytes(range(256)) * 10)
    (tmp_path / "dir").mkdir()
    for name, msg in [("empty.log", "no record"), ("noise.log", "no record"), ("dir", "is a directory"),
                      ("missing.log", "cannot read")]:
        with pytest.raises(LogError, match=msg):
            diff_log(m, tmp_path / name)
    with pytest.raises(LogError, match="not a regular file or a pipe"):
        diff_log(m, Path("/dev/zero"))
    # a FIFO nobody writes to reads as empty: refused at once, not waited on
    os.mkfifo(tmp_path / "fifo")
    r = subprocess.run([sys.executable, "-m", "threadmap.cli", "diff", str(SPEC), str(tmp_path / "fifo")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "no record" in r.stderr


def test_an_overlong_line_is_malformed_not_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = _model()
    lines = simulated_log(m, np.array([0]))
    monkeypatch.setattr(L, "MAX_LINE", 1000)
    glued = " ".join(lines[:40])  # about 2.4 KB: longer than the limit
    d = diff_log(m, _write(tmp_path, [glued] + lines[40:]))
    assert d.malformed_count == 1 and "longer than 1000" in d.malformed[0].why and d.missing == 40


def test_blocks_and_stages_the_log_leaves_out_are_missing(tmp_path: Path) -> None:
    m = _model()
    lines = simulated_log(m, np.array([1, 2]))
    no_store = [x for x in lines if not x.startswith("TM stage=2 block=2,0,0")]
    d = diff_log(m, _write(tmp_path, no_store))
    assert d.missing == len(lines) - len(no_store) > 0 and d.matched == len(no_store)
    # the whole grid at 64 x 48 (12 blocks; at the spec's 1024 x 1024, 4096 blocks cost minutes)
    m = _model(SPEC, {"M": 64, "N": 48})
    lines = simulated_log(m, np.array([1, 2]))
    d = diff_log(m, _write(tmp_path, lines), whole_grid=True)
    assert m.num_blocks == 12 and d.blocks == m.num_blocks and d.missing == 2 * 256 * (m.num_blocks - 2)


def test_records_without_a_value_match_beside_full_ones(tmp_path: Path) -> None:
    m = _model(RAGGED)
    lines = simulated_log(m, np.array([0]))
    mixed = [re.sub(r"value=\d+", "value=-1", x) if i % 2 else x for i, x in enumerate(lines)]
    d = diff_log(m, _write(tmp_path, mixed))
    assert d.ok and d.matched == len(lines)
    d = diff_log(m, _write(tmp_path, lines + lines[:3]))
    assert d.extra == 3 and {f.why for f in d.findings} == {"printed again"}


def test_custom_fields_are_checked(tmp_path: Path) -> None:
    m = _model(RAGGED)
    regex = r"t=(?P<tid>\d*) bx=(?P<bx>-?\d+) c=(?P<coord>\S*)"
    log = _write(tmp_path, ["t=1 bx=-5 c=0,4", "t= bx=0 c=0,4", "t=1 bx=0 c=0,", "t=999 bx=0 c=0,4", "t=1 bx=0 c=0,4"])
    d = diff_log(m, log, pattern=regex)
    assert d.malformed_count == 4 and d.records == 1
    whys = " ".join(x.why for x in d.malformed)
    assert "outside" in whys and "empty" in whys and "999" in whys
    bad_stage = _write(tmp_path, [x.replace("stage=0", "stage=-1") for x in simulated_log(m, np.array([0]))[:5]])
    assert diff_log(m, bad_stage).malformed_count == 5


def test_a_pattern_that_would_explode_is_refused() -> None:
    with pytest.raises(LogError, match="nested counted repetitions"):
        L.compile_pattern(r"(?P<tid>((((a{100}){100}){100}){100}))(?P<coord>\d+)")
    with pytest.raises(LogError, match="empty"):
        L.compile_pattern("  ")
    assert L.repeat_product(r"(?P<tid>\d{1,3}) (?P<coord>[0-9]{2})") == 3


def test_the_header_compiles_in_every_form(tmp_path: Path) -> None:
    from threadmap.gpu.toolchain import ToolchainError, check_device
    src = (ROOT / "tests/gpu/probe_macros.cu").read_text()
    try:
        for text in (src, "#define THREADMAP_PROBE_OFF\n" + src):
            assert check_device(text).exists()
    except ToolchainError as e:
        if "not found" in str(e) or "missing" in str(e):
            cannot_run(str(e))
        raise


def test_cli_gpu_usage_and_the_cache(tmp_path: Path) -> None:
    """Usage errors, a host probe through the command line (the shared compile cache: a warm
    run compiles nothing; a damaged cached binary is tests/gpu/test_gpu_toolchain.py's), and a
    cache path that is not a directory."""
    spec = str(ROOT / "specs/mma/sm80_8x8x4_f64f64f64f64_tn.yaml")
    for args, msg in [(("--include-dir", spec), "takes no spec paths"),
                      ((spec, "-o", str(tmp_path / "r"), "--json", str(tmp_path / "r")), "the same file")]:
        r = _cli("gpu", *args)
        assert r.returncode == 2 and msg in r.stderr, r.stderr
    r = subprocess.run([sys.executable, "-m", "threadmap.cli", "gpu", spec, "--where", "host", "--format", "json"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode == 2 and ("nvcc" in r.stderr or "CUTLASS" in r.stderr):
        cannot_run(r.stderr)
    assert r.returncode == 0 and json.loads(r.stdout)["probes"][0]["stages"][0]["mismatches"] == 0, r.stderr
    (tmp_path / "file").write_text("x")
    r = subprocess.run([sys.executable, "-m", "threadmap.cli", "gpu", spec, "--where", "host"],
                       capture_output=True, text=True, timeout=900,
                       env={**os.environ, "THREADMAP_CACHE": str(tmp_path / "file")})
    assert r.returncode == 2 and "not a usable directory" in r.stderr


@pytest.mark.parametrize("digit", ["\u0663", "\uff13", "\u00b3"])  # Arabic-Indic 3, full-width 3, superscript 3
def test_only_ascii_digits_are_integers(tmp_path: Path, digit: str) -> None:
    """A record whose number is written in another script's digits is malformed, in the default
    format and in a custom one, never read as that number."""
    m = _model(RAGGED)
    lines = simulated_log(m, np.array([0]))
    i = next(k for k, x in enumerate(lines) if " tid=3 " in x)
    # the same records with one ASCII 3 replaced: a thread index, and a coordinate
    foreign_tid = lines[i].replace(" tid=3 ", f" tid={digit} ")
    foreign_coord = re.sub(r"coord=\d+,", f"coord={digit},", lines[0])
    rest = [x for k, x in enumerate(lines) if k not in (0, i)]
    d = diff_log(m, _write(tmp_path, [foreign_tid, foreign_coord] + rest))
    assert d.malformed_count == 2 and d.matched == len(rest) and d.missing == 2, d.malformed
    regex = r"tid=(?P<tid>\S+) iter=(?P<iter>\S+) value=(?P<value>\S+) coord=(?P<coord>\S+)"
    d = diff_log(m, _write(tmp_path, [foreign_tid, foreign_coord]), pattern=regex)
    assert d.malformed_count == 2 and d.records == 0
    assert all("not an integer" in x.why for x in d.malformed), d.malformed
