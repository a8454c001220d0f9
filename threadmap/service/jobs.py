"""Running a task in a child process with its limits.

A task runs in a fresh child process that limits its own address space (``RLIMIT_AS``)
before it works; the parent kills it at the time limit.  A runaway spec therefore costs one
child, never the server: the job is marked failed with the reason (time limit, memory limit,
crash).  :func:`run_job` is what a local worker thread and a Dask worker both call, so the two
backends run jobs identically.  What a task and its outcome are: :mod:`threadmap.service.model`;
what the child does: :mod:`threadmap.service.runner`.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from threadmap.service.model import MEMORY_EXIT, PROGRESS_MARK, Outcome, Task
from threadmap.service.runner import child_main

Progress = Callable[[dict[str, Any]], None]


def run_job(task: Task, timeout_s: float, memory_mb: int, on_progress: Progress | None = None) -> Outcome:
    """Run a task in a child process with its limits: its outcome, or one whose ``error`` says
    why it failed (time limit, memory limit, crash)."""
    t0 = time.monotonic()
    # A daemonic process (a Dask worker's) may not start multiprocessing children: it starts a
    # fresh interpreter instead; elsewhere a fork of a warm server process saves the imports.
    if multiprocessing.current_process().daemon:
        result = _run_subprocess(task, timeout_s, memory_mb, on_progress)
    else:
        result = _run_forked(task, timeout_s, memory_mb, on_progress)
    result.seconds = time.monotonic() - t0
    return result


_FORKSERVER: Any = None
_FORKSERVER_LOCK = threading.Lock()


def _context() -> Any:
    """A forkserver with threadmap already imported: a job's child starts in milliseconds."""
    global _FORKSERVER
    with _FORKSERVER_LOCK:
        if _FORKSERVER is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["threadmap.service.runner", "threadmap.api", "threadmap.prove.run",
                                        "threadmap.report.formats"])
            _FORKSERVER = ctx
    return _FORKSERVER


def _report_progress(on_progress: Progress | None, value: dict[str, Any]) -> None:
    if on_progress is not None:
        try:
            on_progress(value)
        except Exception:  # noqa: BLE001 - progress is best effort, never a failure
            pass


def _run_forked(task: Task, timeout_s: float, memory_mb: int, on_progress: Progress | None) -> Outcome:
    ctx = _context()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=child_main, args=(child, task, memory_mb), daemon=True)
    proc.start()
    child.close()
    deadline = time.monotonic() + timeout_s
    result: Outcome | None = None
    try:
        while result is None:
            left = deadline - time.monotonic()
            if left <= 0:
                proc.kill()
                proc.join(10)
                return _time_limit(timeout_s)
            if not parent.poll(min(left, 1.0)):
                if not proc.is_alive() and not parent.poll(0):
                    break
                continue
            try:
                kind, value = parent.recv()
            except EOFError:
                break
            if kind == "progress":
                _report_progress(on_progress, value)
            else:
                result = value
    finally:
        parent.close()
    proc.join(10)
    if result is not None:
        return result
    return _ended(proc.exitcode, memory_mb)


def _run_subprocess(task: Task, timeout_s: float, memory_mb: int, on_progress: Progress | None) -> Outcome:
    cmd = [sys.executable, "-m", "threadmap.service.runner", str(int(memory_mb))]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    err_lines: list[str] = []
    out_parts: list[bytes] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace")
            if line.startswith(PROGRESS_MARK):
                try:
                    _report_progress(on_progress, json.loads(line[len(PROGRESS_MARK):]))
                except json.JSONDecodeError:
                    pass
            elif len(err_lines) < 200:
                err_lines.append(line.rstrip())

    def read_stdout() -> None:
        assert proc.stdout is not None
        out_parts.append(proc.stdout.read())

    readers = [threading.Thread(target=f, daemon=True) for f in (read_stderr, read_stdout)]
    for t in readers:
        t.start()
    assert proc.stdin is not None
    try:
        proc.stdin.write(pickle.dumps(task))
        proc.stdin.close()
    except BrokenPipeError:
        pass
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.wait()
        return _time_limit(timeout_s)
    finally:
        for t in readers:
            t.join(5)
    if proc.returncode == 0:
        try:
            result = pickle.loads(b"".join(out_parts))  # written by the runner this process started
        except (pickle.UnpicklingError, EOFError, ValueError):
            return Outcome(error="internal error: the job's output is not an outcome")
        if isinstance(result, Outcome):
            return result
        return Outcome(error="internal error: the job's output is not an outcome")
    tail = "\n".join(err_lines[-5:])
    return _ended(MEMORY_EXIT if "MemoryError" in tail else proc.returncode, memory_mb, tail)


def _time_limit(timeout_s: float) -> Outcome:
    return Outcome(error=f"time limit: the job ran longer than {timeout_s:g} s and was killed")


def _ended(code: int | None, memory_mb: int, tail: str = "") -> Outcome:
    """Why a job's child ended without a result, from its exit status (and its last words)."""
    if code == MEMORY_EXIT:
        return Outcome(error=f"memory limit: the job needed more than {memory_mb} MiB and was stopped")
    if code is not None and code < 0:
        return Outcome(error=f"the job's process died of signal {signal.Signals(-code).name}"
                             + (f": {tail}" if tail else ""))
    return Outcome(error=f"internal error: the job's process ended (exit status {code}) without a result"
                         + (f": {tail}" if tail else ""))


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child and anything it started (its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
