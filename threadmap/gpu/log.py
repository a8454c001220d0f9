"""``threadmap diff SPEC LOG``: a user's kernel printed its accesses; diff them with the spec.

A log line holds one access (the default format is what ``threadmap_probe.h`` prints)::

    TM stage=0 block=3,1,0 tid=17 iter=2 value=1 coord=48,129

or anything a custom regular expression with named groups reads: ``tid`` (required), the
coordinate as ``coord`` (comma separated), ``row`` and ``col``, or ``c0``, ``c1``, ``c2``; and,
optional, ``stage``, ``block`` (linear, or ``x,y,z``) or ``bx``/``by``/``bz``, ``iter`` (the
thread's instruction, the spec's ``step``) and ``value`` (the fragment index).  A line may
carry several records (interleaved output); text without a record is ignored, and a line with
the marker (``TM `` by default) at the start of a word that does not parse, a field that is
not an integer, a block outside the grid, a thread outside the CTA or a line longer than
:data:`MAX_LINE` is reported, with its line number, as malformed.  Logs are UTF-8 or (with a
byte-order mark) UTF-16, with any line ends.

The simulator gives every *performed* access (predicate true) of the stages the log names,
in every block the log names in any stage (``whole_grid``: every block of the grid); the
kernel must print exactly those.  Per thread the diff reports

* ``moved``: the same (stage, block, thread, iter, value) at another coordinate;
* ``missing``: accesses the simulation performs that the log lacks;
* ``extra``: accesses the log has and the simulation does not (or printed twice).

A record that leaves fields out (no ``value``, or ``-1``) matches any access of its thread
that agrees on the fields it gives; records with every field are matched first.  Work is
bounded: only regular files and pipes are read, their size and line lengths are limited, a
custom expression's counted repetitions are bounded before it is compiled and it runs under a
time limit (a catastrophic pattern is an error, not a hang), and the records are capped.
"""

from __future__ import annotations

import codecs
import os
import stat
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import regex
from pydantic import Field

from threadmap.errors import SpecError, ThreadmapError
from threadmap.gpu.report import ReportModel
from threadmap.model import CopyModel, KernelModel
from threadmap.simulate.engine import Simulator

# [0-9], not \d: \d also matches other scripts' digits (Arabic-Indic, full-width), which
# int() would read as numbers; a record's integers are ASCII
DEFAULT_PATTERN = (r"TM stage=(?P<stage>-?[0-9]+) block=(?P<block>[0-9]+(?:,[0-9]+){0,2}) tid=(?P<tid>[0-9]+) "
                   r"iter=(?P<iter>-?[0-9]+) value=(?P<value>-?[0-9]+) coord=(?P<coord>-?[0-9]+(?:,-?[0-9]+){0,7})")
#: an integer field: ASCII digits only (str.isdigit and int() accept any script's digits)
INTEGER = regex.compile(r"-?[0-9]{1,19}")
DEFAULT_MARKER = "TM "
#: largest log read (bytes), longest line (a record is far shorter), most records kept (each
#: costs about 1 KB of memory with the simulation it is matched against)
MAX_LOG_BYTES = 1 << 31
MAX_LINE = 1 << 20
MAX_RECORDS = 1 << 21
#: the most a pattern's counted repetitions may multiply to (their expansion costs memory at
#: compile time: ((a{100}){100}){100} would take gigabytes)
MAX_REPEAT = 100_000
#: seconds a custom expression may spend over the whole log
REGEX_BUDGET_S = 60.0
#: findings listed in full per kind (all are counted)
FIRST = 20

Key = tuple[int, int, int, int, int]  # stage, block, tid, iter, value (-1: not given)


class LogError(ThreadmapError):
    """A log or pattern that cannot be read (exit status 2)."""


class Malformed(ReportModel):
    line: int
    text: str
    why: str


class LogFinding(ReportModel):
    kind: str  # moved | missing | extra
    stage: int
    block: int
    thread: int
    iter: int | None = None
    value: int | None = None
    log: list[int] | None = Field(None, description="the logged coordinate")
    simulated: list[int] | None = None
    line: int | None = Field(None, description="the log line (moved and extra)")
    why: str = ""


class LogDiff(ReportModel):
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
    if pattern is not None and not pattern.strip():
        raise LogError("--regex: the pattern is empty")
    text = pattern or DEFAULT_PATTERN
    if len(text) > 2000:
        raise LogError("--regex: the pattern is longer than 2000 characters")
    if repeat_product(text) > MAX_REPEAT:
        raise LogError(f"--regex: nested counted repetitions multiply to more than {MAX_REPEAT}; simplify it")
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
                       "iter", "value"}
    if unknown:
        raise LogError(f"--regex: unknown named groups {sorted(unknown)}; known: tid, coord, row, col, c0-c2, "
                       "stage, block, bx, by, bz, iter, value")
    return pat


def repeat_product(text: str) -> int:
    """An upper estimate of how far counted repetitions ``{n}``/``{n,m}`` multiply when nested:
    per group, the largest product inside it times the count applied to it."""
    import re
    stack = [1]
    last = 1  # the product of the atom just closed (a group's inside, or 1)
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            last = 1
            continue
        if c == "(":
            stack.append(1)
            last = 1
        elif c == ")" and len(stack) > 1:
            last = stack.pop()
            stack[-1] = max(stack[-1], last)
        elif c == "{":
            m = re.match(r"\{(\d*)(?:,(\d*))?\}", text[i:])
            if m and (m.group(1) or m.group(2)):
                n = max(int(m.group(1) or 0), int(m.group(2) or 0))
                stack[-1] = max(stack[-1], last * max(1, n))
                i += m.end()
                continue
        else:
            last = 1
        i += 1
    return max(stack)


def _int(s: str | None, what: str) -> int:
    if s is None or s == "":
        return -1
    s = s.strip()
    if not INTEGER.fullmatch(s):
        raise ValueError(f"{what} {s!r} is not an integer (ASCII digits)")
    return int(s)


def _req(s: str | None, what: str) -> int:
    """A field that must hold an integer (empty is malformed, not 'not given')."""
    if s is None or not s.strip():
        raise ValueError(f"{what} is empty")
    return _int(s, what)


def _coord(d: dict[str, str | None]) -> tuple[int, ...]:
    if d.get("coord") is not None:
        return tuple(_req(p, "coord") for p in str(d["coord"]).split(","))
    if d.get("row") is not None:
        return (_req(d["row"], "row"),) + ((_req(d["col"], "col"),) if d.get("col") is not None else ())
    return tuple(_req(d[k], k) for k in ("c0", "c1", "c2") if d.get(k) is not None)


def _block(d: dict[str, str | None], grid: tuple[int, int, int]) -> int:
    gx, gy, gz = grid
    if d.get("block") is not None:
        parts = [_req(p, "block") for p in str(d["block"]).split(",")]
        if len(parts) > 3:
            raise ValueError(f"block {d['block']!r} has more than 3 coordinates")
        if len(parts) == 1:
            if not 0 <= parts[0] < gx * gy * gz:
                raise ValueError(f"block {parts[0]} is outside the spec's grid {grid}")
            return parts[0]
        x, y, z = (parts + [0, 0])[:3]
    else:
        x, y, z = (_req(d[k], k) if d.get(k) is not None else 0 for k in ("bx", "by", "bz"))
    if not (0 <= x < gx and 0 <= y < gy and 0 <= z < gz):
        raise ValueError(f"block ({x},{y},{z}) is outside the spec's grid {grid}")
    return x + gx * (y + gy * z)


def read_log(path: Path, pat: Any, grid: tuple[int, int, int], default_stage: int | None, marker: str | None,
             threads: int) -> tuple[list[tuple[Key, tuple[int, ...], int]], list[Malformed], int, int]:
    """(key, coordinate, line) of every record, the malformed lines, the count of those and
    of the lines read."""
    records: list[tuple[Key, tuple[int, ...], int]] = []
    bad: list[Malformed] = []
    nbad = 0
    deadline = time.monotonic() + REGEX_BUDGET_S
    mark = None if not marker else regex.compile(r"(?:^|\s)" + regex.escape(marker))

    def malformed(n: int, line: str, why: str) -> None:
        nonlocal nbad
        nbad += 1
        if len(bad) < FIRST:
            bad.append(Malformed(line=n, text=line[:200], why=why))

    n = 0
    for n, line, cut in _lines(path):
        if cut:
            malformed(n, line, f"the line is longer than {MAX_LINE} characters (read no further)")
            continue
        left = deadline - time.monotonic()
        try:
            found = [m for m in pat.finditer(line, timeout=max(0.001, left)) if m.end() > m.start()]
        except TimeoutError:
            raise LogError(f"--regex: the pattern spent more than {REGEX_BUDGET_S:.0f} s on the log (stopped at "
                           f"line {n}); simplify it") from None
        if not found:
            if mark is not None and mark.search(line):
                malformed(n, line, "the record does not match the format")
            continue
        for m in found:
            d = m.groupdict()
            try:
                st = _int(d.get("stage"), "stage") if "stage" in d else -1
                if "stage" in d and st < 0:
                    raise ValueError(f"stage {d.get('stage')!r} is not a stage index")
                if st < 0:
                    if default_stage is None:
                        raise ValueError("the record names no stage")
                    st = default_stage
                tid = _req(d["tid"], "tid")
                if not 0 <= tid < threads:
                    raise ValueError(f"tid {tid} is outside the CTA's {threads} threads")
                key = (st, _block(d, grid), tid, _int(d.get("iter"), "iter"), _int(d.get("value"), "value"))
                c = _coord(d)
            except ValueError as e:
                malformed(n, line, str(e))
                continue
            records.append((key, c, n))
            if len(records) > MAX_RECORDS:
                raise LogError(f"{_show(path)}: more than {MAX_RECORDS} records; diff a subset of the blocks")
    return records, bad, nbad, n


def _show(path: Path) -> str:
    from threadmap.report.formats import printable
    return printable(str(path))


def _open(path: Path) -> Any:
    """A regular file, or a pipe (``<(kernel)``); never a device or a directory, and never an
    open that waits for a writer."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise LogError(f"{_show(path)}: cannot read the log: {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise LogError(f"{_show(path)}: is a directory, not a log")
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        raise LogError(f"{_show(path)}: not a regular file or a pipe")
    if st.st_size > MAX_LOG_BYTES:
        raise LogError(f"{_show(path)}: the log has {st.st_size} bytes; threadmap diff reads at most {MAX_LOG_BYTES}")
    try:
        # non-blocking open: a FIFO without a writer reads as empty instead of waiting forever
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except OSError as e:
        raise LogError(f"{_show(path)}: cannot read the log: {e.strerror}") from None


def _lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(number, text, cut) per line: UTF-8 or, with its byte-order mark, UTF-16; any line end
    (\\n, \\r\\n, \\r); a line longer than MAX_LINE is returned cut (the rest skipped)."""
    with _open(path) as raw:
        head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
        enc = "utf-16" if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else "utf-8-sig"
        import io
        text = io.TextIOWrapper(raw, encoding=enc, errors="replace", newline=None)
        total = 0
        n = 0
        while True:
            try:
                line = text.readline(MAX_LINE + 1)
            except UnicodeError:
                raise LogError(f"{_show(path)}: cannot decode the log") from None
            if not line:
                return
            n += 1
            total += len(line)
            if total > MAX_LOG_BYTES:
                raise LogError(f"{_show(path)}: more than {MAX_LOG_BYTES} characters; threadmap diff reads no more")
            cut = len(line) > MAX_LINE and not line.endswith("\n")
            if cut:
                while True:  # skip the rest of the over-long line
                    rest = text.readline(MAX_LINE)
                    total += len(rest)
                    if not rest or rest.endswith("\n") or total > MAX_LOG_BYTES:
                        break
            yield n, line.rstrip("\n"), cut


def _stage_side(cp: CopyModel, side: str | None) -> str:
    if side in ("src", "dst"):
        return side
    mem = [s for s in cp.sides() if s.memory == "global"] or [s for s in cp.sides() if s.tensor is not None]
    return mem[0].which


def diff_log(model: KernelModel, log: Path, *, pattern: str | None = None, marker: str | None = None,
             stage: int | None = None, side: str | None = None, whole_grid: bool = False) -> LogDiff:
    """Diff the accesses printed in ``log`` with the simulation of ``model``.

    Compared: the copy stages the log names (or ``stage``), over every block the log names in
    any stage (``whole_grid``: every block of the grid), so a block that printed one stage and
    not another, or a thread that printed nothing, shows as missing accesses."""
    pat = compile_pattern(pattern)
    copies = {c.index: c for c in model.copies()}
    if stage is not None and stage not in copies:
        raise LogError(f"--stage {stage}: the spec's copy stages are {sorted(copies)}")
    if stage is None and "stage" not in pat.groupindex and len(copies) > 1:
        raise LogError(f"the log does not name stages and the spec has several copy stages {sorted(copies)}: "
                       "give --stage")
    default_stage = stage if stage is not None else (min(copies) if "stage" not in pat.groupindex else None)
    mk = (DEFAULT_MARKER if pattern is None else None) if marker is None else marker
    records, bad, nbad, nlines = read_log(log, pat, model.grid, default_stage, mk, model.threads)
    if not records and not nbad:
        raise LogError(f"{_show(log)}: no record in {nlines} lines (is it the kernel's output, in the "
                       f"{'default' if pattern is None else '--regex'} format?)")
    out = LogDiff(spec=str(model.loaded.path), log=str(log), sizes=dict(model.env), side={}, lines=nlines,
                  records=len(records), malformed=bad, malformed_count=nbad)
    by_stage: dict[int, list[tuple[Key, tuple[int, ...], int]]] = defaultdict(list)
    for r in records:
        if r[0][0] not in copies:
            out.extra += 1
            _note(out, LogFinding(kind="extra", stage=r[0][0], block=r[0][1], thread=r[0][2], log=list(r[1]),
                                  line=r[2], why="not a copy stage of the spec"))
            continue
        by_stage[r[0][0]].append(r)
    blocks = np.arange(model.num_blocks, dtype=np.int64) if whole_grid else \
        np.unique(np.asarray([k[1] for k, _, _ in records], dtype=np.int64))
    if blocks.size * model.threads > MAX_RECORDS * 8:
        raise LogError(f"{blocks.size} blocks of {model.threads} threads are too many to simulate for a diff; "
                       "print fewer blocks")
    sim = Simulator(model)
    stages = sorted(by_stage) if stage is None else [stage]
    for st in stages:
        cp = copies[st]
        which = _stage_side(cp, side)
        out.side[st] = which
        _diff_stage(out, sim, cp, which, blocks, by_stage.get(st, []))
    out.blocks = int(blocks.size)
    out.threads = len({(k[1], k[2]) for k, _, _ in records})
    return out


def _note(out: LogDiff, f: LogFinding) -> None:
    key = f"{f.stage}/{f.block}/{f.thread}"
    out.per_thread.setdefault(key, {"moved": 0, "missing": 0, "extra": 0})[f.kind] += 1
    if len(out.findings) < 3 * FIRST:
        out.findings.append(f)


def _diff_stage(out: LogDiff, sim: Simulator, cp: CopyModel, which: str, blocks: np.ndarray,
                recs: list[tuple[Key, tuple[int, ...], int]]) -> None:
    """Match the records of one stage against the simulated accesses, per thread: records
    with iter and value first (exact), then those that leave fields out (any access of the
    thread that agrees on the fields given); then unmatched records with iter and value are
    'moved' when the simulation has that (iter, value) left, else 'extra'; what the
    simulation has left is 'missing'."""
    src, dst = sim.stage_tables(cp, blocks)
    t = src if which == "src" else dst
    on = np.flatnonzero(t.pred)
    cols = [c[on].tolist() for c in t.coords]
    blk, thr, stp, val = (x[on].tolist() for x in (t.block, t.thread, t.step, t.value))
    # per thread: coordinate -> Counter of (iter, value) still unmatched
    left: dict[tuple[int, int], dict[tuple[int, ...], Counter[tuple[int, int]]]] = defaultdict(
        lambda: defaultdict(Counter))
    for i in range(len(on)):
        left[(blk[i], thr[i])][tuple(c[i] for c in cols)][(stp[i], val[i])] += 1
    matched: set[tuple[int, int, tuple[int, ...]]] = set()
    unmatched: list[tuple[Key, tuple[int, ...], int]] = []
    for k, c, line in sorted(recs, key=lambda r: (r[0][3] < 0) + (r[0][4] < 0)):
        avail = left.get((k[1], k[2]), {}).get(c)
        hit = None
        if avail is not None:
            for (it, va), n in avail.items():
                if n and (k[3] < 0 or k[3] == it) and (k[4] < 0 or k[4] == va):
                    hit = (it, va)
                    break
        if avail is None or hit is None:
            unmatched.append((k, c, line))
            continue
        avail[hit] -= 1
        matched.add((k[1], k[2], c))
        out.matched += 1
    # what the simulation still has, per thread and (iter, value)
    rest: dict[tuple[int, int], dict[tuple[int, int], list[tuple[int, ...]]]] = defaultdict(lambda: defaultdict(list))
    for (b, tid), per_coord in left.items():
        for cc, counts in per_coord.items():
            for (it, va), n in counts.items():
                rest[(b, tid)][(it, va)] += [cc] * n
    for k, c, line in unmatched:
        st, b, tid, it, va = k
        extra = dict(iter=None if it < 0 else it, value=None if va < 0 else va)
        slot = rest.get((b, tid), {}).get((it, va)) if it >= 0 and va >= 0 else None
        if slot:
            m = slot.pop(0)
            out.moved += 1
            _note(out, LogFinding(kind="moved", stage=st, block=b, thread=tid, log=list(c), simulated=list(m),
                                  line=line, **extra))
            continue
        out.extra += 1
        _note(out, LogFinding(kind="extra", stage=st, block=b, thread=tid, log=list(c), line=line,
                              why="printed again" if (b, tid, c) in matched else "not simulated", **extra))
    for (b, tid), slots in sorted(rest.items()):
        for (it, va), left_coords in sorted(slots.items()):
            for m in left_coords:
                out.missing += 1
                _note(out, LogFinding(kind="missing", stage=cp.index, block=b, thread=tid, iter=it, value=va,
                                      simulated=list(m)))


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
        b = t.block[order]
        cols = [(b % gx).tolist(), ((b // gx) % gy).tolist(), (b // (gx * gy)).tolist(), t.thread[order].tolist(),
                t.step[order].tolist(), t.value[order].tolist()]
        coords = [",".join(map(str, c)) for c in zip(*(x[order].tolist() for x in t.coords))]
        out += [f"TM stage={cp.index} block={x},{y},{z} tid={th} iter={it} value={va} coord={c}"
                for x, y, z, th, it, va, c in zip(*cols, coords)]
    return out
