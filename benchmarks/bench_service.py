"""Load test of ``threadmap serve``: many concurrent clients against a real server, with the
local backend and a Dask cluster side by side in one run.

    python benchmarks/bench_service.py                                   # 60 s, 100 clients, both
    python benchmarks/bench_service.py --duration 10 --clients 20 --backend local
    python benchmarks/bench_service.py --backend both --out service.json

For each backend the script starts the server as a subprocess (``python -m threadmap.cli
serve``) on a free loopback port with a fresh temporary ``--db``; for ``dask`` it first starts
a ``distributed.LocalCluster`` (``--workers`` processes, one thread each, loopback, no
dashboard) and passes ``--dask <scheduler address>``.  Then ``--clients`` async clients (one
``httpx.AsyncClient`` each) run for ``--duration`` seconds.  Each, in a closed loop, submits
one spec of the library (``specs/``) with ``POST /v1/jobs``, polls ``GET /v1/jobs/{id}`` until
the job is done or failed, and submits the next.  A submission is:

- new (``--new-fraction``): a library spec with one of its sizes set to a value no submission
  of this run used before (``?sizes=M=<multiple of 1024>``): a distinct, uncached job;
- invalid (``--invalid-fraction``): a size the spec does not have; the server must answer 4xx;
- otherwise a repeat: a library spec as it is, or a combination submitted before.

Outcomes are classified by the answer, not the intent: ``cached`` (200, ``cached: true``),
``uncached`` (202, the first accepted submission of that job in this run) and ``joined`` (202
for a job another client submitted first, still queued or running: the server de-duplicated it).  A 503
is the server's deliberate back-pressure (``--queue`` caps queued + running jobs): the client
sleeps ``Retry-After`` and submits again (submissions are idempotent: content-addressed);
one whose retry would fall after the end of the load phase is abandoned.  Latency is
submit -> done as the client sees it, from its first POST (503 back-off included) to the POST
or poll that shows a final state.  After the load phase every client finishes polling its job;
then every job id any answer named is read again with GET until all are final or
``--drain-timeout`` runs out: ``lost`` counts ids that are unknown, unreadable or not final.

While the backend runs, a thread samples ``VmRSS`` (``/proc/<pid>/status``) every
``--sample-interval`` seconds: the server process; the peak total of its descendants (the job
processes of the local backend); the job processes wherever they run (descendants of the
server or of the Dask workers); and the Dask nannies and workers themselves.

Exits 1 when any backend lost a job or answered a 5xx other than 503; 2 on a setup failure.
Loopback only; bounded in time (duration + drain) and in count (``--max-submissions``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
FINAL = frozenset({"done", "failed"})
RUNNER_MARK = "threadmap.service.runner"   # the command line of a job's child process
SIZE_VALUES = tuple(range(1024, 65536 + 1, 1024))  # valid for every size of every library spec
CATEGORIES = ("cached", "uncached", "joined")


# -- the workload ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Combo:
    """One submission: a library spec and its query options."""

    spec: str                 # path under specs/
    sizes: str = ""           # "M=4096"
    invalid: bool = False     # a size the spec does not have: the server must refuse it

    def params(self) -> dict[str, str]:
        return {"sizes": self.sizes} if self.sizes else {}


class Workload:
    """The library's specs, the new combinations not used yet and the ones used before."""

    def __init__(self, rng: random.Random, new_fraction: float, invalid_fraction: float) -> None:
        self.rng = rng
        self.new_fraction = new_fraction
        self.invalid_fraction = invalid_fraction
        self.texts: dict[str, str] = {}
        sized: dict[str, list[str]] = {}
        for path in sorted(SPECS.rglob("*.yaml")):
            rel = path.relative_to(SPECS).as_posix()
            text = path.read_text()
            self.texts[rel] = text
            names = list((yaml.safe_load(text) or {}).get("sizes") or {})
            if names:
                sized[rel] = names
        if not self.texts:
            raise SystemExit(f"no spec files under {SPECS}")
        self.sized = sorted(sized)
        fresh = [Combo(s, f"{n}={v}") for s in self.sized for n in sized[s] for v in SIZE_VALUES]
        rng.shuffle(fresh)
        self.fresh: list[Combo] = fresh
        self.repeats: list[Combo] = [Combo(s) for s in sorted(self.texts)]
        self.claimed: set[Combo] = set()   # combinations the server has accepted in this run

    def pick(self) -> Combo:
        r = self.rng.random()
        if r < self.invalid_fraction and self.sized:
            return Combo(self.rng.choice(self.sized), "NO_SUCH_SIZE=1024", invalid=True)
        if r < self.invalid_fraction + self.new_fraction and self.fresh:
            combo = self.fresh.pop()
            self.repeats.append(combo)
            return combo
        return self.rng.choice(self.repeats)

    def claim(self, combo: Combo) -> bool:
        """True for the first accepted submission of ``combo`` in this run (no await between the
        test and the set: one event loop)."""
        first = combo not in self.claimed
        self.claimed.add(combo)
        return first


# -- resident memory ------------------------------------------------------------------------
def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process we can see."""
    out: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _read(f"/proc/{entry}/stat")
            if stat:
                fields = stat[stat.rfind(")") + 2:].split()
                out[int(entry)] = int(fields[1])
    return out


def _rss_kb(pid: int) -> int:
    status = _read(f"/proc/{pid}/status") or ""
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0  # gone, or a zombie


def _descendants(roots: Sequence[int], parents: dict[int, int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    out: set[int] = set()
    todo = list(roots)
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


@dataclass
class Peaks:
    server_mb: float = 0.0
    server_children_mb: float = 0.0     # all descendants of the server, summed
    jobs_total_mb: float = 0.0          # job processes wherever they run, summed
    job_max_mb: float = 0.0             # the largest single job process
    jobs_at_once: int = 0               # job processes alive in one sample
    cluster_mb: float = 0.0             # Dask nannies + workers, summed
    samples: int = 0


class RssSampler(threading.Thread):
    """Samples VmRSS of the server, its descendants and the Dask cluster's processes."""

    def __init__(self, server_pid: int, cluster_pids: Sequence[int], interval: float) -> None:
        super().__init__(name="rss-sampler", daemon=True)
        self.server_pid = server_pid
        self.cluster_pids = list(cluster_pids)
        self.interval = interval
        self.peaks = Peaks()
        self.runner_pids: set[int] = set()   # job processes seen in the latest sample
        self._halt = threading.Event()

    def sample(self) -> None:
        parents = _parents()
        server_tree = _descendants([self.server_pid], parents)
        cluster_tree = _descendants(self.cluster_pids, parents)
        rss = {pid: _rss_kb(pid) / 1024 for pid in server_tree | cluster_tree | {self.server_pid, *self.cluster_pids}}
        runners = {pid for pid in server_tree | cluster_tree
                   if RUNNER_MARK in (_read(f"/proc/{pid}/cmdline") or "")}
        p = self.peaks
        p.server_mb = max(p.server_mb, rss[self.server_pid])
        p.server_children_mb = max(p.server_children_mb, sum(rss[pid] for pid in server_tree))
        p.jobs_total_mb = max(p.jobs_total_mb, sum(rss[pid] for pid in runners))
        p.job_max_mb = max([p.job_max_mb, *(rss[pid] for pid in runners)])
        p.jobs_at_once = max(p.jobs_at_once, len(runners))
        p.cluster_mb = max(p.cluster_mb, sum(rss[pid] for pid in self.cluster_pids))
        p.samples += 1
        self.runner_pids = runners

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                self.sample()
            except (OSError, ValueError, IndexError):
                pass  # a process vanished mid-read; the next sample sees the new state
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join(5)


# -- the server -----------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path


@contextmanager
def run_server(tmp: Path, args: argparse.Namespace, dask_address: str | None) -> Iterator[Server]:
    port = free_port()
    log = tmp / "server.log"
    cmd = [sys.executable, "-m", "threadmap.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
           "--db", str(tmp / "jobs.db"), "--workers", str(args.workers), "--queue", str(args.queue),
           # every client holds a connection: the bound is the server's guard, not the test's subject
           "--max-connections", str(max(128, 2 * args.clients))]
    if dask_address:
        cmd += ["--dask", dask_address]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + args.start_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with status {proc.returncode}:\n{tail(log)}")
            try:
                if httpx.get(f"{server.url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer /healthz in {args.start_timeout:g} s:\n{tail(log)}")
            time.sleep(0.2)
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # uvicorn's graceful shutdown
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def kill_jobs(pids: set[int]) -> None:
    """Kill job processes the server left behind (they run in their own sessions)."""
    for pid in pids:
        if RUNNER_MARK in (_read(f"/proc/{pid}/cmdline") or ""):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


# -- the clients ----------------------------------------------------------------------------
@dataclass
class Tally:
    submissions: int = 0                 # accepted POSTs (200 or 202)
    requests: int = 0                    # HTTP requests answered
    deliberate_503: int = 0
    abandoned_503: int = 0               # submissions given up after a 503 at the end of the load phase
    server_errors: int = 0               # 5xx other than 503
    rejected_4xx: int = 0                # invalid submissions refused, as they must be
    unexpected_4xx: int = 0              # valid submissions refused, or invalid ones accepted
    transport_errors: int = 0            # timeouts, refused connections
    done: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    failed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    unfinished_polls: int = 0            # clients that stopped polling at the drain deadline
    latency: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CATEGORIES})
    run_s: list[float] = field(default_factory=list)    # server-side started -> finished, uncached jobs
    ids: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)     # the first few unexpected answers
    last_final: float = 0.0

    def note(self, what: str) -> None:
        if len(self.errors) < 20:
            self.errors.append(what)


@dataclass
class Run:
    url: str
    workload: Workload
    tally: Tally
    end_load: float                      # monotonic: no submission starts after it
    end_drain: float                     # monotonic: no request after it
    max_submissions: int
    poll_max: float
    request_timeout: float


async def request(run: Run, http: httpx.AsyncClient, method: str, url: str, **kw: Any) -> httpx.Response | None:
    """One request, retried on transport errors until the drain deadline; None past it."""
    while time.monotonic() < run.end_drain:
        try:
            r = await http.request(method, url, **kw)
        except httpx.TransportError as e:
            run.tally.transport_errors += 1
            run.tally.note(f"{method} {url}: {type(e).__name__}: {e}")
            await asyncio.sleep(1.0)
            continue
        run.tally.requests += 1
        if r.status_code >= 500 and r.status_code != 503:
            run.tally.server_errors += 1
            run.tally.note(f"{method} {url}: {r.status_code} {r.text[:200]}")
        return r
    return None


async def submit_and_wait(run: Run, http: httpx.AsyncClient, combo: Combo) -> None:
    t = run.tally
    t0 = time.monotonic()
    while True:
        r = await request(run, http, "POST", "/v1/jobs", params=combo.params(), content=run.workload.texts[combo.spec],
                          headers={"content-type": "application/yaml"})
        if r is None:
            return
        if r.status_code == 503:
            t.deliberate_503 += 1
            wait = float(r.headers.get("retry-after", "1"))
            if time.monotonic() + wait > run.end_load:
                t.abandoned_503 += 1
                return
            await asyncio.sleep(wait)
            continue
        break
    if 400 <= r.status_code < 500:
        if combo.invalid:
            t.rejected_4xx += 1
        else:
            t.unexpected_4xx += 1
            t.note(f"POST {combo}: {r.status_code} {r.text[:200]}")
        return
    if r.status_code not in (200, 202):
        return  # a 5xx, counted
    if combo.invalid:
        t.unexpected_4xx += 1
        t.note(f"POST {combo}: accepted an invalid spec ({r.status_code})")
    view = r.json()
    t.submissions += 1
    job_id = str(view["id"])
    t.ids.add(job_id)
    first = run.workload.claim(combo)
    category = "cached" if view.get("cached") else "uncached" if first else "joined"
    delay = 0.05
    while view["state"] not in FINAL:
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, run.poll_max)
        r = await request(run, http, "GET", f"/v1/jobs/{job_id}")
        if r is None:
            t.unfinished_polls += 1
            return
        if r.status_code == 200:
            view = r.json()
        elif r.status_code < 500:
            t.note(f"GET /v1/jobs/{job_id}: {r.status_code} {r.text[:200]}")
            return  # the final check counts it lost
    now = time.monotonic()
    t.last_final = now
    (t.done if view["state"] == "done" else t.failed)[category] += 1
    t.latency[category].append(now - t0)
    if category == "uncached" and view.get("started") and view.get("finished"):
        t.run_s.append(float(view["finished"]) - float(view["started"]))


async def client(run: Run) -> None:
    async with httpx.AsyncClient(base_url=run.url, timeout=run.request_timeout) as http:
        while time.monotonic() < run.end_load and run.tally.submissions < run.max_submissions:
            await submit_and_wait(run, http, run.workload.pick())


async def final_check(run: Run, http: httpx.AsyncClient) -> dict[str, int]:
    """Reads every job id back until all are final or the drain deadline: the lost jobs."""
    pending = set(run.tally.ids)
    missing: set[str] = set()
    sem = asyncio.Semaphore(16)

    async def check(job_id: str) -> None:
        async with sem:
            try:
                r = await http.get(f"/v1/jobs/{job_id}")
            except httpx.TransportError:
                return  # stays pending
            if r.status_code == 404:
                missing.add(job_id)
            elif r.status_code == 200 and r.json()["state"] in FINAL:
                pending.discard(job_id)
            elif r.status_code >= 500 and r.status_code != 503:
                run.tally.server_errors += 1

    while True:
        await asyncio.gather(*(check(i) for i in sorted(pending - missing)))
        if not pending - missing or time.monotonic() > run.end_drain:
            break
        await asyncio.sleep(1.0)
    return {"missing": len(missing), "not_final": len(pending - missing)}


def store_counts(metrics: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in metrics.splitlines():
        if line.startswith('threadmap_jobs{state="'):
            state = line.split('"')[1]
            out[state] = int(float(line.rsplit(" ", 1)[1]))
    return out


async def load(url: str, args: argparse.Namespace) -> tuple[Tally, dict[str, Any]]:
    workload = Workload(random.Random(args.seed), args.new_fraction, args.invalid_fraction)
    start = time.monotonic()
    run = Run(url, workload, Tally(), start + args.duration, start + args.duration + args.drain_timeout,
              args.max_submissions, args.poll_max, args.request_timeout)
    await asyncio.gather(*(client(run) for _ in range(args.clients)))
    clients_done = time.monotonic()
    async with httpx.AsyncClient(base_url=url, timeout=args.request_timeout) as http:
        lost = await final_check(run, http)
        try:
            counts = store_counts((await http.get("/metrics")).text)
        except httpx.TransportError:
            counts = {}
    elapsed = max(run.tally.last_final, start + 1e-9) - start
    extra = {"lost": lost, "store": counts, "elapsed_s": elapsed, "clients_done_s": clients_done - start}
    return run.tally, extra


# -- one backend ----------------------------------------------------------------------------
def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    s = sorted(values)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def summarise(tally: Tally, extra: dict[str, Any], peaks: Peaks, backend: str) -> dict[str, Any]:
    lat = {c: {"n": len(v), "p50_s": percentile(v, 50), "p99_s": percentile(v, 99)} for c, v in tally.latency.items()}
    completed = sum(tally.done.values())
    failed = sum(tally.failed.values())
    elapsed = extra["elapsed_s"]
    store = extra["store"]
    return {
        "backend": backend,
        "submitted": tally.submissions,
        "unique_jobs": len(tally.ids),
        "completed": completed,
        "failed": failed,
        "lost": extra["lost"]["missing"] + extra["lost"]["not_final"],
        "lost_detail": extra["lost"],
        "server_errors": tally.server_errors,
        "deliberate_503": tally.deliberate_503,
        "abandoned_after_503": tally.abandoned_503,
        "rejected_4xx": tally.rejected_4xx,
        "unexpected_4xx": tally.unexpected_4xx,
        "transport_errors": tally.transport_errors,
        "unfinished_polls": tally.unfinished_polls,
        "done_by_category": tally.done,
        "failed_by_category": tally.failed,
        "latency": lat,
        "uncached_run_s": {"p50_s": percentile(tally.run_s, 50), "p99_s": percentile(tally.run_s, 99)},
        "elapsed_s": elapsed,
        "throughput_jobs_per_s": (completed + failed) / elapsed if elapsed else 0.0,
        "throughput_uncached_per_s": (tally.done["uncached"] + tally.failed["uncached"]) / elapsed if elapsed else 0.0,
        "http_requests_per_s": tally.requests / elapsed if elapsed else 0.0,
        "store_counts": store,
        "store_unfinished": store.get("queued", 0) + store.get("running", 0),
        "rss_mb": {
            "server_peak": peaks.server_mb,
            "server_children_peak_total": peaks.server_children_mb,
            "job_processes_peak_total": peaks.jobs_total_mb,
            "job_process_peak_max": peaks.job_max_mb,
            "job_processes_at_once_max": peaks.jobs_at_once,
            "dask_cluster_peak_total": peaks.cluster_mb if backend == "dask" else None,
            "samples": peaks.samples,
        },
        "errors": tally.errors,
    }


def run_backend(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    print(f"[{backend}] starting ({args.clients} clients, {args.duration:g} s)", file=sys.stderr, flush=True)
    cluster: Any = None
    cluster_pids: list[int] = []
    address: str | None = None
    with tempfile.TemporaryDirectory(prefix=f"bench-service-{backend}-") as tmpdir:
        try:
            if backend == "dask":
                from distributed import LocalCluster
                cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
                address = str(cluster.scheduler_address)
                for w in cluster.workers.values():   # the nannies; their workers are their children
                    if w.process is not None and w.process.pid is not None:
                        cluster_pids.append(int(w.process.pid))
            with run_server(Path(tmpdir), args, address) as server:
                if cluster_pids:
                    cluster_pids += sorted(_descendants(cluster_pids, _parents()))
                sampler = RssSampler(server.proc.pid, cluster_pids, args.sample_interval)
                sampler.start()
                try:
                    tally, extra = asyncio.run(load(server.url, args))
                finally:
                    sampler.stop()
                    leftover = set(sampler.runner_pids)
                alive = server.proc.poll() is None
            kill_jobs(leftover)
        finally:
            if cluster is not None:
                cluster.close()
    out = summarise(tally, extra, sampler.peaks, backend)
    out["server_alive_at_end"] = alive
    out["dask_address"] = address
    return out


# -- report ---------------------------------------------------------------------------------
def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


ROWS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("submitted (accepted POSTs)", lambda r: r["submitted"]),
    ("unique job ids", lambda r: r["unique_jobs"]),
    ("completed (done)", lambda r: r["completed"]),
    ("  cached / uncached / joined", lambda r: "{cached} / {uncached} / {joined}".format(**r["done_by_category"])),
    ("failed", lambda r: r["failed"]),
    ("LOST (must be 0)", lambda r: r["lost"]),
    ("server errors 5xx != 503 (must be 0)", lambda r: r["server_errors"]),
    ("deliberate 503s (queue full)", lambda r: r["deliberate_503"]),
    ("  submissions abandoned after a 503", lambda r: r["abandoned_after_503"]),
    ("invalid specs refused 4xx (expected)", lambda r: r["rejected_4xx"]),
    ("unexpected 4xx", lambda r: r["unexpected_4xx"]),
    ("transport errors", lambda r: r["transport_errors"]),
    ("cached   submit->done p50 / p99 s",
     lambda r: f"{_fmt(r['latency']['cached']['p50_s'])} / {_fmt(r['latency']['cached']['p99_s'])}"),
    ("uncached submit->done p50 / p99 s",
     lambda r: f"{_fmt(r['latency']['uncached']['p50_s'])} / {_fmt(r['latency']['uncached']['p99_s'])}"),
    ("joined   submit->done p50 / p99 s",
     lambda r: f"{_fmt(r['latency']['joined']['p50_s'])} / {_fmt(r['latency']['joined']['p99_s'])}"),
    ("uncached started->finished (server) p50/p99 s",
     lambda r: f"{_fmt(r['uncached_run_s']['p50_s'])} / {_fmt(r['uncached_run_s']['p99_s'])}"),
    ("elapsed s (load + drain)", lambda r: r["elapsed_s"]),
    ("throughput jobs/s (all)", lambda r: r["throughput_jobs_per_s"]),
    ("throughput jobs/s (uncached)", lambda r: r["throughput_uncached_per_s"]),
    ("HTTP requests/s", lambda r: r["http_requests_per_s"]),
    ("server RSS peak MiB", lambda r: r["rss_mb"]["server_peak"]),
    ("server children RSS peak total MiB", lambda r: r["rss_mb"]["server_children_peak_total"]),
    ("job processes RSS peak total MiB", lambda r: r["rss_mb"]["job_processes_peak_total"]),
    ("job process RSS peak (largest) MiB", lambda r: r["rss_mb"]["job_process_peak_max"]),
    ("job processes at once (max)", lambda r: r["rss_mb"]["job_processes_at_once_max"]),
    ("Dask nannies+workers RSS peak MiB", lambda r: r["rss_mb"]["dask_cluster_peak_total"]),
    ("store rows left queued/running", lambda r: r["store_unfinished"]),
    ("server alive at end", lambda r: r["server_alive_at_end"]),
]


def print_table(results: dict[str, dict[str, Any]]) -> None:
    names = list(results)
    width = max(len(label) for label, _ in ROWS)
    cols = [max(12, *(len(_fmt(get(results[n]))) for _, get in ROWS)) for n in names]
    print(f"{'':{width}}  " + "  ".join(f"{n:>{c}}" for n, c in zip(names, cols)))
    for label, get in ROWS:
        print(f"{label:{width}}  " + "  ".join(f"{_fmt(get(results[n])):>{c}}" for n, c in zip(names, cols)))


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "loadavg": os.getloadavg(), "httpx": httpx.__version__}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load per backend (default 60)")
    p.add_argument("--clients", type=int, default=100, help="concurrent clients (default 100)")
    p.add_argument("--backend", choices=("local", "dask", "both"), default="both")
    p.add_argument("--workers", type=int, default=2, help="local job threads, or Dask worker processes (default 2)")
    p.add_argument("--queue", type=int, default=32,
                   help="the server's --queue: queued + running jobs before it answers 503 (default 32, below "
                        "--clients, so back-pressure is exercised; the server's own default is 256)")
    p.add_argument("--new-fraction", type=float, default=0.3, help="submissions that are new jobs (default 0.3)")
    p.add_argument("--invalid-fraction", type=float, default=0.02,
                   help="submissions with an unknown size, which must be refused with 4xx (default 0.02)")
    p.add_argument("--drain-timeout", type=float, default=180.0,
                   help="seconds after the load phase for jobs to finish before they count as lost (default 180)")
    p.add_argument("--max-submissions", type=int, default=20_000, help="accepted submissions per backend at most")
    p.add_argument("--poll-max", type=float, default=1.0, help="longest pause between polls of a job (default 1 s)")
    p.add_argument("--request-timeout", type=float, default=30.0, help="seconds per HTTP request (default 30)")
    p.add_argument("--start-timeout", type=float, default=60.0, help="seconds for the server to answer /healthz")
    p.add_argument("--sample-interval", type=float, default=0.2, help="seconds between RSS samples (default 0.2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = p.parse_args(argv)
    if not 0 < args.duration <= 3600:
        p.error("--duration must be in (0, 3600]")
    if not 1 <= args.clients <= 1000:
        p.error("--clients must be in 1..1000")
    if not 1 <= args.workers <= 64:
        p.error("--workers must be in 1..64")
    if not 0 <= args.new_fraction + args.invalid_fraction <= 1 or min(args.new_fraction, args.invalid_fraction) < 0:
        p.error("--new-fraction and --invalid-fraction must be >= 0 and sum to at most 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    backends = ["local", "dask"] if args.backend == "both" else [args.backend]
    results: dict[str, dict[str, Any]] = {}
    before = machine()
    for backend in backends:
        try:
            results[backend] = run_backend(backend, args)
        except RuntimeError as e:
            print(f"[{backend}] setup failed: {e}", file=sys.stderr)
            return 2
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    ok = all(r["lost"] == 0 and r["server_errors"] == 0 for r in results.values())
    load_end = os.getloadavg()
    doc: dict[str, Any] = {"config": config, "machine": before, "loadavg_end": load_end, "results": results, "ok": ok}
    print(f"threadmap serve load test: {args.clients} clients x {args.duration:g} s per backend, "
          f"{args.workers} workers, queue {args.queue}, new {args.new_fraction:g}, invalid {args.invalid_fraction:g}; "
          f"{before['cpus']} CPUs, load {before['loadavg'][0]:.2f} -> {load_end[0]:.2f}")
    print_table(results)
    for name, r in results.items():
        warn = []
        if r["unexpected_4xx"] or r["transport_errors"] or r["unfinished_polls"]:
            warn.append("unexpected 4xx, transport errors or unfinished polls")
        if r["store_unfinished"]:
            warn.append(f"{r['store_unfinished']} store rows still queued/running after the drain")
        if not r["server_alive_at_end"]:
            warn.append("the server died")
        for w in warn:
            print(f"WARNING [{name}]: {w}")
        for line in r["errors"][:5]:
            print(f"  [{name}] {line}")
    if args.out:
        args.out.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {args.out}")
    print("OK: no job lost, no server error" if ok else "FAIL: jobs lost or server errors")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
