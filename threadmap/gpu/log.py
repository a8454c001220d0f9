"""``threadmap diff SPEC LOG``: a user's kernel printed its accesses; diff them with the spec.

A log line holds one access (the default format is what ``threadmap_probe.h`` prints)::

    TM stage=0 block=3,1,0 tid=17 iter=2 value=1 coord=48,129

or anything a custom regular expression with named groups reads: ``tid`` (required), the
coordinate as ``coord`` (comma separated), ``row`` and ``col``, or ``c0``, ``c1``, ``c2``; and,
optional, ``stage``, ``block`` (linear, or ``x,y,z``) or ``bx``/``by``/``bz``, ``iter`` (the
thread's instruction, the spec's ``step``) and ``value`` (the fragment index).  A line may
carry several records (interleaved output); text without a record is ignored, and a line that
starts a record (the marker, ``TM `` by default) but does not parse is reported, with its
line number, as malformed.

The simulator gives every *performed* access (predicate true) of the blocks the log names;
the kernel must print exactly those.  Per thread the diff reports

* ``moved``: the same (stage, block, thread, iter, value) at another coordinate;
* ``missing``: accesses the simulation performs that the log lacks;
* ``extra``: accesses the log has and the simulation does not (or printed twice).

Fields the log leaves out (no ``value``, or ``-1``) are matched as a multiset of coordinates
per remaining key.  Work is bounded: the log's size is checked before it is read, and a
custom expression runs under a time limit (a catastrophic pattern is an error, not a hang).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import regex
from pydantic import Field

from threadmap.errors import SpecError, ThreadmapError
from threadmap.gpu.report import _Model
from threadmap.model import CopyModel, KernelModel
from threadmap.simulate.engine import Simulator

DEFAULT_PATTERN = (r"TM stage=(?P<stage>-?\d+) block=(?P<block>\d+(?:,\d+){0,2}) tid=(?P<tid>\d+) "
                   r"iter=(?P<iter>-?\d+) value=(?P<value>-?\d+) coord=(?P<coord>-?\d+(?:,-?\d+){0,7})")
DEFAULT_MARKER = "TM "
#: largest log read (bytes) and most records kept
MAX_LOG_BYTES = 1 << 31
MAX_RECORDS = 1 << 24
#: seconds a custom expression may spend over the whole log
REGEX_BUDGET_S = 60.0
#: findings listed in full per kind (all are counted)
FIRST = 20

Key = tuple[int, int, int, int, int]  # stage, block, tid, iter, value (-1: not given)


class LogError(ThreadmapError):
    """A log or pattern that cannot be read (exit status 2)."""


class Malformed(_Model):
    line: int
    text: str
    why: str


class LogFinding(_Model):
    kind: str  # moved | missing | extra
    stage: int
    block: int
    thread: int
    iter: int | None = None
    value: int | None = None
    log: list[int] | None = Field(None, description="the logged coordinate")
    simulated: list[int] | None = None
    line: int | None = Field(None, description="the log line (moved and extra)")


class LogDiff(_Model):
    spec: str
    log: str
    sizes: dict[str, int]
    side: dict[int, str] = Field(description="per stage, the side whose coordinates are compared")
    lines: int
    records: int
    malformed: list[Malformed] = Field(default_factory=list)
    malformed_count: int = 0
    blocks: int = Field(0, description="blocks the log names")
    threads: int = Field(0, description="(block, thread) pairs the log names")
    matched: int = 0
    moved: int = 0
    missing: int = 0
    extra: int = 0
    per_thread: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="'stage/block/thread' -> counts, for threads with findings")
    findings: list[LogFinding] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.moved == self.missing == self.extra == self.malformed_count == 0


def compile_pattern(pattern: str | None) -> Any:
    """The pattern (the default one when None); a custom one must name ``tid`` and a coordinate."""
    text = pattern or DEFAULT_PATTERN
    try:
        pat = regex.compile(text, regex.VERSION0)
    except regex.error as e:
        raise LogError(f"--regex: not a regular expression: {e}") from None
    names = set(pat.groupindex)
    if "tid" not in names:
        raise LogError("--regex: needs a named group 'tid' (?P<tid>...)")
    if not ({"coord"} <= names or {"row", "col"} <= names or "c0" in names or "row" in names):
        raise LogError("--regex: needs the coordinate as (?P<coord>...), (?P<row>...)(?P<col>...) or "
                       "(?P<c0>...)(?P<c1>...)")
    unknown = names - {"tid", "coord", "row", "col", "c0", "c1", "c2", "stage", "block", "bx", "by", "bz",
                       "iter", "value", "side"}
    if unknown:
        raise LogError(f"--regex: unknown named groups {sorted(unknown)}; known: tid, coord, row, col, c0-c2, "
                       "stage, block, bx, by, bz, iter, value")
    return pat


def _int(s: str | None, what: str) -> int:
    if s is None or s == "":
        return -1
    s = s.strip()
    if len(s) > 19 or not s.lstrip("-").isdigit():
        raise ValueError(f"{what} {s!r} is not an integer")
    return int(s)


def _coord(d: dict[str, str | None]) -> tuple[int, ...]:
    if d.get("coord") is not None:
        parts = str(d["coord"]).split(",")
        return tuple(_int(p, "coord") for p in parts)
    if d.get("row") is not None:
        return (_int(d["row"], "row"),) + ((_int(d["col"], "col"),) if d.get("col") is not None else ())
    return tuple(_int(d[k], k) for k in ("c0", "c1", "c2") if d.get(k) is not None)


def _block(d: dict[str, str | None], grid: tuple[int, int, int]) -> int:
    gx, gy, gz = grid
    if d.get("block") is not None:
        parts = [_int(p, "block") for p in str(d["block"]).split(",")]
        if len(parts) == 1:
            if not 0 <= parts[0] < gx * gy * gz:
                raise ValueError(f"block {parts[0]} is outside the spec's grid {grid}")
            return parts[0]
        x, y, z = (parts + [0, 0])[:3]
    else:
        x, y, z = (max(0, _int(d.get(k), k)) for k in ("bx", "by", "bz"))
    if not (0 <= x < gx and 0 <= y < gy and 0 <= z < gz):
        raise ValueError(f"block ({x},{y},{z}) is outside the spec's grid {grid}")
    return x + gx * (y + gy * z)


def read_log(path: Path, pat: Any, grid: tuple[int, int, int], default_stage: int,
             marker: str | None) -> tuple[list[tuple[Key, tuple[int, ...], int]], list[Malformed], int, int]:
    """(key, coordinate, line) of every record, the malformed lines, the count of those and
    of the lines read."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise LogError(f"{path}: cannot read the log: {e.strerror}") from None
    if size > MAX_LOG_BYTES:
        raise LogError(f"{path}: the log has {size} bytes; threadmap diff reads at most {MAX_LOG_BYTES}")
    records: list[tuple[Key, tuple[int, ...], int]] = []
    bad: list[Malformed] = []
    nbad = 0
    deadline = time.monotonic() + REGEX_BUDGET_S
    n = 0
    for n, line in _lines(path):
        left = deadline - time.monotonic()
        try:
            found = list(pat.finditer(line, timeout=max(0.001, left)))
        except TimeoutError:
            raise LogError(f"--regex: the pattern spent more than {REGEX_BUDGET_S:.0f} s on the log (stopped at "
                           f"line {n}); simplify it") from None
        if not found:
            if marker and marker in line:
                nbad += 1
                if len(bad) < FIRST:
                    bad.append(Malformed(line=n, text=line[:200], why="the record does not match the format"))
            continue
        for m in found:
            d = m.groupdict()
            try:
                st = _int(d.get("stage"), "stage")
                key = (default_stage if st < 0 else st, _block(d, grid), _int(d["tid"], "tid"),
                       _int(d.get("iter"), "iter"), _int(d.get("value"), "value"))
                c = _coord(d)
            except ValueError as e:
                nbad += 1
                if len(bad) < FIRST:
                    bad.append(Malformed(line=n, text=line[:200], why=str(e)))
                continue
            records.append((key, c, n))
            if len(records) > MAX_RECORDS:
                raise LogError(f"{path}: more than {MAX_RECORDS} records; diff a subset of the blocks")
    return records, bad, nbad, n


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open("rb") as f:
        for n, raw in enumerate(f, 1):
            yield n, raw[:1 << 16].decode("utf-8", "replace").rstrip("\r\n")


def _stage_side(cp: CopyModel, side: str | None) -> str:
    if side in ("src", "dst"):
        return side
    mem = [s for s in cp.sides() if s.memory == "global"] or [s for s in cp.sides() if s.tensor is not None]
    return mem[0].which


def diff_log(model: KernelModel, log: Path, *, pattern: str | None = None, marker: str | None = None,
             stage: int | None = None, side: str | None = None) -> LogDiff:
    """Diff the accesses printed in ``log`` with the simulation of ``model``."""
    pat = compile_pattern(pattern)
    copies = {c.index: c for c in model.copies()}
    if stage is not None and stage not in copies:
        raise LogError(f"--stage {stage}: the spec's copy stages are {sorted(copies)}")
    if stage is None and "stage" not in pat.groupindex and len(copies) > 1:
        raise LogError(f"the log does not name stages and the spec has several copy stages {sorted(copies)}: "
                       "give --stage")
    default_stage = stage if stage is not None else min(copies)
    mk = (DEFAULT_MARKER if pattern is None else None) if marker is None else marker
    records, bad, nbad, nlines = read_log(log, pat, model.grid, default_stage, mk)
    out = LogDiff(spec=str(model.loaded.path), log=str(log), sizes=dict(model.env), side={}, lines=nlines,
                  records=len(records), malformed=bad, malformed_count=nbad)
    by_stage: dict[int, list[tuple[Key, tuple[int, ...], int]]] = defaultdict(list)
    for r in records:
        if r[0][0] not in copies:
            out.extra += 1
            _note(out, LogFinding(kind="extra", stage=r[0][0], block=r[0][1], thread=r[0][2], log=list(r[1]),
                                  line=r[2]))
            continue
        by_stage[r[0][0]].append(r)
    sim = Simulator(model)
    pairs: set[tuple[int, int]] = set()
    for st, recs in sorted(by_stage.items()):
        cp = copies[st]
        which = _stage_side(cp, side)
        out.side[st] = which
        blocks = np.unique(np.asarray([k[1] for k, _, _ in recs], dtype=np.int64))
        pairs |= {(k[1], k[2]) for k, _, _ in recs}
        _diff_stage(out, sim, cp, which, blocks, recs)
    out.blocks = len({b for b, _ in pairs})
    out.threads = len(pairs)
    return out


def _note(out: LogDiff, f: LogFinding) -> None:
    key = f"{f.stage}/{f.block}/{f.thread}"
    out.per_thread.setdefault(key, {"moved": 0, "missing": 0, "extra": 0})[f.kind] += 1
    if len(out.findings) < 3 * FIRST:
        out.findings.append(f)


def _diff_stage(out: LogDiff, sim: Simulator, cp: CopyModel, which: str, blocks: np.ndarray,
                recs: list[tuple[Key, tuple[int, ...], int]]) -> None:
    src, dst = sim.stage_tables(cp, blocks)
    t = src if which == "src" else dst
    on = t.pred
    coords = np.stack([c[on] for c in t.coords], axis=1) if t.coords else np.zeros((int(on.sum()), 0))
    blk, thr, stp, val = t.block[on], t.thread[on], t.step[on], t.value[on]
    # which key fields the log gives decides how finely accesses are matched
    has_iter = any(k[3] >= 0 for k, _, _ in recs)
    has_value = any(k[4] >= 0 for k, _, _ in recs)
    want: dict[Key, Counter[tuple[int, ...]]] = defaultdict(Counter)
    for i in range(coords.shape[0]):
        key = (cp.index, int(blk[i]), int(thr[i]), int(stp[i]) if has_iter else -1, int(val[i]) if has_value else -1)
        want[key][tuple(int(x) for x in coords[i])] += 1
    got: dict[Key, list[tuple[tuple[int, ...], int]]] = defaultdict(list)
    for k, c, line in recs:
        kk = (k[0], k[1], k[2], k[3] if has_iter else -1, k[4] if has_value else -1)
        got[kk].append((c, line))
    for key in sorted(set(want) | set(got)):
        w = Counter(want.get(key, Counter()))
        g = got.get(key, [])
        left: list[tuple[tuple[int, ...], int]] = []
        for c, line in g:
            if w[c] > 0:
                w[c] -= 1
                out.matched += 1
            else:
                left.append((c, line))
        miss = [c for c, n in w.items() for _ in range(n)]
        st, b, tid, it, va = key
        extra = dict(iter=None if it < 0 else it, value=None if va < 0 else va)
        while left and miss and has_value:
            (c, line), m = left.pop(0), miss.pop(0)
            out.moved += 1
            _note(out, LogFinding(kind="moved", stage=st, block=b, thread=tid, log=list(c), simulated=list(m),
                                  line=line, **extra))
        for c, line in left:
            out.extra += 1
            _note(out, LogFinding(kind="extra", stage=st, block=b, thread=tid, log=list(c), line=line, **extra))
        for m in miss:
            out.missing += 1
            _note(out, LogFinding(kind="missing", stage=st, block=b, thread=tid, simulated=list(m), **extra))


def load_model(spec: str | Path, sizes: dict[str, int] | None) -> KernelModel:
    """The spec at one size environment: ``sizes``, or its only one."""
    from threadmap.api import models
    ms = models(spec, sizes)
    if len(ms) > 1:
        envs = ", ".join(",".join(f"{k}={v}" for k, v in m.env.items()) for m in ms[:4])
        raise SpecError(f"{spec}:1:1: sizes: the spec has {len(ms)} size environments ({envs}, ...); give the "
                        "kernel's with --sizes")
    return ms[0]


def simulated_log(model: KernelModel, blocks: np.ndarray, stages: list[int] | None = None,
                  side: str | None = None) -> list[str]:
    """The lines ``threadmap_probe.h`` would print for ``blocks`` if the kernel did what the
    simulation does (performed accesses, in (block, thread, value) order): an example log,
    and what a kernel's log is diffed against."""
    sim = Simulator(model)
    gx, gy, _ = model.grid
    out: list[str] = []
    for cp in model.copies():
        if stages is not None and cp.index not in stages:
            continue
        src, dst = sim.stage_tables(cp, np.asarray(blocks, dtype=np.int64))
        t = src if _stage_side(cp, side) == "src" else dst
        on = np.flatnonzero(t.pred)
        order = on[np.lexsort((t.value[on], t.thread[on], t.block[on]))]
        for i in order:
            b = int(t.block[i])
            c = ",".join(str(int(x[i])) for x in t.coords)
            out.append(f"TM stage={cp.index} block={b % gx},{(b // gx) % gy},{b // (gx * gy)} tid={int(t.thread[i])} "
                       f"iter={int(t.step[i])} value={int(t.value[i])} coord={c}")
    return out
