"""``threadmap sweep`` on a local pool and on a Dask cluster, side by side in one process.

    python benchmarks/bench_sweep.py                                 # 88 configurations, 8 runs
    python benchmarks/bench_sweep.py --kernels 'cutlass_simt_sgemm_*' --batch 11 --json sweep.json
    python benchmarks/bench_sweep.py --kill --json kill.json         # kill -9 mid-sweep, resume

Speed-up mode (the default) sweeps one ``--kernels`` filter with each executor: the local pool
with 1 and 2 jobs (1 job runs in this process), a Dask ``LocalCluster`` of 1 and of 2 worker
processes (one thread each, started by this script before the sweep and closed after it: its
start-up is reported apart).  Each executor runs twice: *cold* (a fresh, empty compile cache,
``THREADMAP_CACHE``, so every batch is compiled) and then *warm* (the cache the cold run
filled: the configurations' printed fields are read back, nothing is compiled).  Every run has
a fresh database.  The stored rows of all runs are compared (everything but the CPU seconds of
a verification and the write time): the script exits 1 if any differ.

Per run: wall seconds, CPU seconds of everything the sweep ran (this process, the pool's
processes and the compilers they ran: ``getrusage`` of this process and of its reaped
children; a Dask cluster's nannies, workers and their compilers: ``psutil`` times of the live
processes under this one, with their reaped children), the driver's own share, configurations
per CPU-second (throughput per core) and the speed-up of 2 over 1.  From the cold 2-worker
Dask run: the projected wall time of the whole sm80 library (every configuration the sweep
compiles and verifies; counted with the generator) on ``--cores`` cores: the generator's time,
the cluster's start, the workers' CPU per configuration spread over the cores (with a batch of
configurations / cores, one translation unit per core) and the driver's own work per
configuration (from the 2-job pool run: a Dask run's driver also hosts the scheduler), which
does not spread.

Kill mode (``--kill``) runs the sweep command as a subprocess (``python -m threadmap sweep``)
on a larger filter, kills it with SIGKILL once the database holds ``--kill-at`` of the
configurations, runs it again to the end, and compares with an uninterrupted run: rows before
the kill, what the restart read back and extracted, finished rows written again (0 expected),
identical results.  The compile cache is ``--cache`` (default: the user's), warmed by the
uninterrupted run first; with ``--cold`` the killed sweep and its restart start from an empty
one instead (the kill then lands among the compiles).

Measurements only: nothing here is asserted as a time.  Use ``nice`` on a shared machine;
the load average is printed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_KERNELS = "cutlass_tensorop_f16_s16816gemm_f16_*_align8"      # 88 configurations
KILL_KERNELS = "cutlass_tensorop_f16_s16816gemm_f16_*"                # 296 configurations (88 with _align8)
COLUMNS = ("digest, extractor, key, label, status, reason_kind, reason, findings, warnings, spec, spec_hash, "
           "kernels")


def rows(db: Path, written: bool = False) -> dict[str, tuple[Any, ...]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {r[0]: r[1:] for r in con.execute(f"SELECT {COLUMNS}{', written' if written else ''} FROM results")}
    finally:
        con.close()


def cpu_now() -> tuple[float, float]:
    """(CPU seconds of this process, of everything under it): this process, its reaped
    children (a pool's processes and their compilers, once joined) and the live processes
    under it with their own reaped children (a Dask cluster's nannies, workers, compilers)."""
    import psutil  # type: ignore[import-untyped]

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = me.ru_utime + me.ru_stime
    total = own + kids.ru_utime + kids.ru_stime
    for p in psutil.Process().children(recursive=True):
        try:
            t = p.cpu_times()
        except psutil.Error:  # exited between the listing and the read: counted once reaped
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return own, total


@contextmanager
def env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def one_run(kind: str, n: int, kernels: str, batch: int, cache: Path, db: Path) -> dict[str, Any]:
    """One sweep; the cluster (for ``dask``) is started before and closed after the measure."""
    from threadmap.sweep.run import Options, sweep

    out: dict[str, Any] = {"executor": f"{kind} {n}", "db": str(db)}
    with env(THREADMAP_CACHE=str(cache)):  # inherited by the pool's forks and the cluster's spawns
        cluster = None
        if kind == "dask":
            from distributed import LocalCluster

            t0, (_, c0) = time.perf_counter(), cpu_now()
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
            out["cluster_start_wall_s"] = time.perf_counter() - t0
            out["cluster_start_cpu_s"] = cpu_now()[1] - c0
        try:
            opts = Options(kernels=kernels, db=db, batch=batch, jobs=n,
                           dask=cluster.scheduler_address if cluster is not None else None)
            t0, (own0, all0) = time.perf_counter(), cpu_now()
            report = sweep(opts)
            wall, (own1, all1) = time.perf_counter() - t0, cpu_now()
        finally:
            if cluster is not None:
                cluster.close()
    configs = len(report.configurations)
    cpu = all1 - all0
    out.update(configurations=configs, extracted=report.extracted, verified=report.verified,
               wall_s=round(wall, 2), cpu_s=round(cpu, 2), driver_cpu_s=round(own1 - own0, 2),
               workers_cpu_s=round(cpu - (own1 - own0), 2),
               configs_per_cpu_s=round(configs / cpu, 3) if cpu > 0 else None)
    return out


def library_configurations() -> tuple[int, float]:
    """The configurations of sm80 the sweep compiles and verifies (those it refuses from the
    generator's fields alone cost nothing), and the generator's wall time for it."""
    from threadmap.sweep.library import generate, group
    from threadmap.sweep.run import in_slice, prefilter

    t0 = time.perf_counter()
    n = sum(1 for c in group(generate(("80",), "all")) if in_slice(c) and prefilter(c, "") is None)
    return n, time.perf_counter() - t0


def speedup(args: argparse.Namespace) -> dict[str, Any]:
    variants = [(k, n) for k, n in (("pool", 1), ("pool", 2), ("dask", 1), ("dask", 2))
                if f"{k}{n}" in args.executors.split(",")]
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        for kind, n in variants:
            # cold: empty; warm: what the cold run left (or --cache, warm only)
            cache = Path(args.cache) if args.cache else Path(tmp) / f"cache_{kind}{n}"
            for temp in ("warm",) if args.cache else ("cold", "warm"):
                r = one_run(kind, n, args.kernels, args.batch, cache, Path(tmp) / f"{kind}{n}_{temp}.db")
                r["cache"] = temp
                runs.append(r)
                print(json.dumps(r), flush=True)
        first = rows(Path(runs[0]["db"]))
        identical = all(rows(Path(r["db"])) == first for r in runs)
    by = {(r["executor"], r["cache"]): r for r in runs}
    ups = {}
    for kind in ("pool", "dask"):
        for temp in ("cold", "warm"):
            one, two = by.get((f"{kind} 1", temp)), by.get((f"{kind} 2", temp))
            if one and two:
                ups[f"{kind} {temp}"] = round(one["wall_s"] / two["wall_s"], 2)
    result: dict[str, Any] = {"kernels": args.kernels, "batch": args.batch, "runs": runs,
                              "rows_identical": identical, "configurations": len(first), "speedup_2_over_1": ups}
    base = by.get(("dask 2", "cold")) or by.get(("pool 2", "cold")) or runs[0]
    if args.library_configs is None:
        n_lib, gen_s = library_configurations()
    else:
        n_lib, gen_s = args.library_configs, args.generator_s
    per_cfg = base["workers_cpu_s"] / base["configurations"] if base["executor"] != "pool 1" else \
        base["cpu_s"] / base["configurations"]
    # the driver's own work per configuration (store, bookkeeping) from a pool run: a Dask
    # run's driver also hosts the LocalCluster's scheduler, whose CPU follows the wall time
    pool = by.get(("pool 2", base["cache"])) or base
    driver_cfg = pool["driver_cpu_s"] / pool["configurations"]
    start = base.get("cluster_start_wall_s", 0.0)
    result["projection"] = {
        "from": f"{base['executor']} {base['cache']}", "library_configurations": n_lib,
        "generator_wall_s": round(gen_s, 1), "cluster_start_wall_s": round(start, 1), "cores": args.cores,
        "worker_cpu_s_per_configuration": round(per_cfg, 3), "driver_cpu_s_per_configuration": round(driver_cfg, 4),
        "batch_for_cores": math.ceil(n_lib / args.cores),
        # the driver's part does not spread over the cores: added, not overlapped (an upper bound)
        "wall_s": round(gen_s + start + n_lib * per_cfg / args.cores + n_lib * driver_cfg, 1),
        "cpu_s": round(n_lib * (per_cfg + driver_cfg), 1),
    }
    return result


def kill(args: argparse.Namespace) -> dict[str, Any]:
    import psutil  # type: ignore[import-untyped]

    kernels = args.kernels or KILL_KERNELS
    extra = ["--dask", args.dask] if args.dask else ["--jobs", str(args.jobs)]
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if args.cache:
        environ["THREADMAP_CACHE"] = args.cache

    def command(db: Path) -> list[str]:
        return [sys.executable, "-m", "threadmap", "sweep", "--kernels", kernels, "--db", str(db), "--batch",
                str(args.batch), "--format", "json", *extra]

    def timed(db: Path, environ: dict[str, str]) -> tuple[dict[str, Any], float, float]:
        c0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        p = subprocess.run(command(db), env=environ, capture_output=True, text=True, check=False)
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode not in (0, 1):
            raise SystemExit(f"the sweep failed ({p.returncode}): {p.stderr.strip()[-500:]}")
        return (json.loads(p.stdout), time.perf_counter() - t0,
                c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime)

    with tempfile.TemporaryDirectory(prefix="bench_sweep_kill_") as tmp:
        whole_db, db = Path(tmp) / "whole.db", Path(tmp) / "killed.db"
        whole, whole_wall, whole_cpu = timed(whole_db, environ)      # also warms the compile cache
        if args.cold:  # the killed sweep and its restart compile: a fresh compile cache
            environ = {**environ, "THREADMAP_CACHE": str(Path(tmp) / "cold_cache")}
        total = len(rows(whole_db))
        target = max(1, int(total * args.kill_at))
        t0 = time.perf_counter()
        proc = subprocess.Popen(command(db), env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while proc.poll() is None:
            try:
                if db.exists() and len(rows(db)) >= target:
                    break
            except sqlite3.Error:
                pass
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_after = time.perf_counter() - t0
        before = rows(db, written=True)
        # a pool's processes outlive a killed driver until their task is done (their command
        # line is the driver's): how long
        t1 = time.perf_counter()
        while any(str(db) in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])):
            if time.perf_counter() - t1 > 300:
                break
            time.sleep(0.2)
        orphans_s = time.perf_counter() - t1
        resumed, resumed_wall, resumed_cpu = timed(db, environ)
        after = rows(db, written=True)
        redone = sum(1 for d, r in before.items() if after.get(d) != r)
        return {"kernels": kernels, "batch": args.batch, "cache": "cold" if args.cold else "warm",
                "executor": " ".join(extra), "configurations": total,
                "killed": proc.returncode == -signal.SIGKILL, "killed_after_s": round(killed_after, 1),
                "rows_before_kill": len(before), "orphan_workers_gone_after_s": round(orphans_s, 1),
                "restart_reused": resumed["reused"], "restart_extracted": resumed["extracted"],
                "restart_verified": resumed["verified"], "finished_rows_redone": redone,
                "identical_to_uninterrupted": rows(db) == rows(whole_db),
                "uninterrupted": {"wall_s": round(whole_wall, 1), "cpu_s": round(whole_cpu, 1),
                                  "verified": whole["verified"]},
                "restart": {"wall_s": round(resumed_wall, 1), "cpu_s": round(resumed_cpu, 1)}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", default=None,
                    help=f"the sweep's --kernels filter (default {DEFAULT_KERNELS}; with --kill {KILL_KERNELS})")
    ap.add_argument("--batch", type=int, default=22, help="configurations per translation unit")
    ap.add_argument("--executors", default="pool1,pool2,dask1,dask2")
    ap.add_argument("--cores", type=int, default=128, help="the projection's cores")
    ap.add_argument("--library-configs", type=int, default=None,
                    help="the library's configurations for the projection (default: counted with the generator)")
    ap.add_argument("--generator-s", type=float, default=0.0, help="with --library-configs: the generator's time")
    ap.add_argument("--kill", action="store_true", help="measure kill -9 mid-sweep and the restart instead")
    ap.add_argument("--kill-at", type=float, default=0.3, help="the fraction of rows at which to kill")
    ap.add_argument("--jobs", type=int, default=2, help="--kill: the sweep's --jobs")
    ap.add_argument("--dask", default=None, help="--kill: the sweep's --dask (instead of --jobs)")
    ap.add_argument("--cache", default=None,
                    help="--kill: THREADMAP_CACHE (default: the user's); else: this compile cache for every run, "
                         "warm runs only (it should hold the filter's configurations)")
    ap.add_argument("--cold", action="store_true",
                    help="--kill: the killed sweep and its restart start from an empty compile cache")
    ap.add_argument("--json", dest="json_out", default=None, help="write the results here")
    args = ap.parse_args()
    if args.kill and args.batch == 22:
        args.batch = 8
    load = os.getloadavg()
    head = {"cpus": os.cpu_count(), "load_before": [round(x, 2) for x in load], "nice": os.nice(0)}
    print(json.dumps(head), flush=True)
    if not args.kill:
        args.kernels = args.kernels or DEFAULT_KERNELS
    result = kill(args) if args.kill else speedup(args)
    result.update(head, load_after=[round(x, 2) for x in os.getloadavg()])
    text = json.dumps(result, indent=1)
    print(text)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")
    ok = result.get("rows_identical", result.get("identical_to_uninterrupted")) and \
        not result.get("finished_rows_redone")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
