"""Jobs: what a request asks for, its content address, and running it in a child process.

A job runs in a fresh child process (``python -m threadmap.service.runner``) that limits its
own address space (``RLIMIT_AS``) before importing threadmap; the parent kills it at the time
limit.  A runaway spec therefore costs one child, never the server: the job is marked failed
with the reason (time limit, memory limit, crash).  :func:`run_job` is what a local worker
thread and a Dask worker both call, so the two backends run jobs identically.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from threadmap import __version__
from threadmap.errors import SpecError
from threadmap.spec.load import LoadedSpec, loads_spec

Format = Literal["yaml", "json", "toml"]
Engine = Literal["verify", "prove"]

#: what the runner writes on stderr before a progress record
PROGRESS_MARK = "THREADMAP-PROGRESS "
#: a job's exit status when it ran out of memory
MEMORY_EXIT = 70


@dataclass(frozen=True)
class Options:
    """A job's options, normalised (the same request spelled differently is the same job)."""

    checks: tuple[str, ...] | None = None
    engine: Engine = "verify"
    sizes: tuple[tuple[str, int], ...] = ()
    exhaustive: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"checks": list(self.checks) if self.checks is not None else None, "engine": self.engine,
                "sizes": dict(self.sizes), "exhaustive": self.exhaustive}

    @staticmethod
    def of(checks: str | list[str] | None = None, engine: str = "verify", sizes: str | Mapping[str, int] | None = None,
           exhaustive: bool = False) -> Options:
        """Options from request values; raises ValueError with a message for the client."""
        from threadmap.api import check_names
        if engine not in ("verify", "prove"):
            raise ValueError(f"engine must be 'verify' or 'prove', got {engine!r}")
        from threadmap.verify import CHECK_NAMES
        names: tuple[str, ...] | None = None
        if checks:
            raw = [c.strip() for c in (checks.split(",") if isinstance(checks, str) else checks) if c.strip()]
            got = check_names(raw) if raw else None
            # every check, or none named, is the default: one job, not three
            names = tuple(sorted(got)) if got and set(got) != set(CHECK_NAMES) else None
        pairs: dict[str, int] = {}
        if isinstance(sizes, str):
            for part in filter(None, (p.strip() for p in sizes.split(","))):
                k, eq, text = part.partition("=")
                if not eq or not k.strip().isidentifier():
                    raise ValueError(f"sizes: expected NAME=INTEGER[,NAME=INTEGER...], got {part!r}")
                try:
                    pairs[k.strip()] = int(text)
                except ValueError:
                    raise ValueError(f"sizes: {k.strip()} must be an integer, got {text!r}") from None
        elif sizes:
            for k, v in sizes.items():
                if not isinstance(k, str) or not k.isidentifier() or isinstance(v, bool) or not isinstance(v, int):
                    raise ValueError(f"sizes: expected names and integers, got {k!r}: {v!r}")
                pairs[k] = v
        for k, v in pairs.items():
            if not 1 <= v <= 2**40:
                raise ValueError(f"sizes: {k} = {v} must be in 1..2^40")
        if engine == "prove":  # a proof covers every property and enumerates nothing
            names, exhaustive = None, False
        return Options(names, engine, tuple(sorted(pairs.items())), bool(exhaustive))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Limits:
    """What one job may use, checked before work starts (and enforced while it runs)."""

    max_body_bytes: int = 1 << 20
    max_environments: int = 64      # size environments of one spec (each is a verification)
    max_blocks: int = 1 << 20       # blocks of one environment's grid for an exhaustive run
    job_seconds: float = 120.0
    job_memory_mb: int = 4096
    sync_seconds: float = 20.0      # POST /v1/verify


@dataclass
class Request:
    """One spec of a request, validated: its text, format, name and options."""

    text: str
    fmt: Format
    name: str
    options: Options
    loaded: LoadedSpec = field(repr=False)

    @cached_property
    def key(self) -> str:  # admission reads it several times; one hash of the spec
        return job_key(self.loaded, self.options)


def sniff_format(content_type: str | None, filename: str | None, text: str) -> Format:
    """The spec's format from its file name, else its content type, else its first character."""
    name = (filename or "").lower()
    if name.endswith(".json"):
        return "json"
    if name.endswith(".toml"):
        return "toml"
    if name.endswith((".yaml", ".yml")):
        return "yaml"
    ct = (content_type or "").split(";")[0].strip().lower()
    if ct.endswith("json"):
        return "json"
    if ct.endswith("toml"):
        return "toml"
    if ct.endswith("yaml") or ct.endswith("yml"):
        return "yaml"
    return "json" if text.lstrip().startswith("{") else "yaml"


def validate(text: str, fmt: Format, name: str, options: Options, limits: Limits) -> Request:
    """Load and check a spec before any work: the loader's errors (``FILE:LINE:COL:
    field.path: message``), the sizes overrides, and the service's work limits."""
    from threadmap.spec.load import with_sizes
    loaded = loads_spec(text, fmt, name)
    if options.sizes:
        loaded = with_sizes(loaded, dict(options.sizes))
    if len(loaded.envs) > limits.max_environments:
        raise SpecError(f"{name}:1:1: sizes: {len(loaded.envs)} size environments; this service verifies at most "
                        f"{limits.max_environments} per job")
    if options.exhaustive:
        from threadmap.spec.expr import evaluate
        for env in loaded.envs:
            blocks = 1
            for g in loaded.spec.grid:
                blocks *= max(1, evaluate(g, env))
            if blocks > limits.max_blocks:
                raise SpecError(f"{name}:1:1: grid: {blocks} blocks at {env}; an exhaustive job enumerates at most "
                                f"{limits.max_blocks} (leave exhaustive off: the tiling argument covers any grid)")
    return Request(text, fmt, name, options, loaded)


def job_key(loaded: LoadedSpec, options: Options) -> str:
    """The content address of a job: the validated spec (so comments, formatting and the file
    format do not matter), the options and threadmap's version."""
    spec = loaded.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    opts = options.as_dict()
    # a size set to the value the spec already fixes changes nothing
    opts["sizes"] = {k: v for k, v in opts["sizes"].items() if loaded.spec.sizes.get(k) != v}
    doc = json.dumps({"spec": spec, "options": opts, "threadmap": __version__}, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()[:32]


def payload(req: Request) -> dict[str, Any]:
    return {"text": req.text, "format": req.fmt, "name": req.name, "options": req.options.as_dict()}


def run_job(job: Mapping[str, Any], timeout_s: float, memory_mb: int,
            on_progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run a job in a child process with its limits: ``{"report", "exit_status"}`` or
    ``{"error"}`` (the reason it failed: time limit, memory limit, crash)."""
    t0 = time.monotonic()
    result = _run_child(job, timeout_s, memory_mb, on_progress)
    result["seconds"] = time.monotonic() - t0
    return result


def _run_child(job: Mapping[str, Any], timeout_s: float, memory_mb: int,
               on_progress: Callable[[dict[str, Any]], None] | None) -> dict[str, Any]:
    # A daemonic process (a Dask worker's) may not start multiprocessing children: it starts a
    # fresh interpreter instead; elsewhere a fork of a warm server process saves the imports.
    if multiprocessing.current_process().daemon:
        return _run_subprocess(job, timeout_s, memory_mb, on_progress)
    return _run_forked(job, timeout_s, memory_mb, on_progress)


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


def _run_forked(job: Mapping[str, Any], timeout_s: float, memory_mb: int,
                on_progress: Callable[[dict[str, Any]], None] | None) -> dict[str, Any]:
    from threadmap.service.runner import child_main
    ctx = _context()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=child_main, args=(child, dict(job), memory_mb), daemon=True)
    proc.start()
    child.close()
    deadline = time.monotonic() + timeout_s
    result: dict[str, Any] | None = None
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
                if on_progress is not None:
                    try:
                        on_progress(value)
                    except Exception:  # noqa: BLE001 - progress is best effort, never a failure
                        pass
            else:
                result = value
    finally:
        parent.close()
    proc.join(10)
    if result is not None:
        return result
    return _ended(proc.exitcode, memory_mb)


def _run_subprocess(job: Mapping[str, Any], timeout_s: float, memory_mb: int,
                    on_progress: Callable[[dict[str, Any]], None] | None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "threadmap.service.runner", str(int(memory_mb))]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    err_lines: list[str] = []
    out_parts: list[str] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith(PROGRESS_MARK):
                if on_progress is not None:
                    try:
                        on_progress(json.loads(line[len(PROGRESS_MARK):]))
                    except Exception:  # noqa: BLE001 - progress is best effort, never a failure
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
        proc.stdin.write(json.dumps(dict(job)))
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
            result: dict[str, Any] = json.loads("".join(out_parts))
            return result
        except json.JSONDecodeError:
            return {"error": "internal error: the job's output is not JSON"}
    tail = "\n".join(err_lines[-5:])
    return _ended(MEMORY_EXIT if "MemoryError" in tail else proc.returncode, memory_mb, tail)


def _time_limit(timeout_s: float) -> dict[str, Any]:
    return {"error": f"time limit: the job ran longer than {timeout_s:g} s and was killed"}


def _ended(code: int | None, memory_mb: int, tail: str = "") -> dict[str, Any]:
    """Why a job's child ended without a result, from its exit status (and its last words)."""
    if code == MEMORY_EXIT:
        return {"error": f"memory limit: the job needed more than {memory_mb} MiB and was stopped"}
    if code is not None and code < 0:
        return {"error": f"the job's process died of signal {signal.Signals(-code).name}" + (f": {tail}" if tail
                                                                                            else "")}
    return {"error": f"internal error: the job's process ended (exit status {code}) without a result"
                     + (f": {tail}" if tail else "")}


def _kill(proc: subprocess.Popen[str]) -> None:
    """Kill the child and anything it started (its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
