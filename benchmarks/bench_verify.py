"""Verifier performance, side by side in one run: the simulator's table rate, the exhaustive
enumeration's rate through every check, the default mode's time as the grid grows, and
``threadmap verify specs/``; each with its peak RSS.

    python benchmarks/bench_verify.py                 # prints numbers; asserts nothing
    python benchmarks/bench_verify.py --root DIR      # measure another checkout (e.g. an older commit)
    python benchmarks/bench_verify.py --quick         # smaller sizes, one repeat

Every measurement runs in a fresh subprocess (so ``ru_maxrss`` is its own peak) pinned to one
CPU (``os.sched_setaffinity``), with OpenMP/BLAS threads set to 1.  Rates count access rows:
``blocks x rows per block``, summed over every side of every copy stage.  The table rate only
builds the access tables of every block (in the enumeration's chunks, with its reused buffers
when the checkout has them); the exhaustive rate is ``threadmap.api.verify_spec(..., exhaustive=True)``
end to end (model building, simulation, every check, the report).  Rates are the best of
``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: (label, spec, sizes) of the rate benchmarks
RATES = [
    ("transpose f32 Sw<4,0,4> smem 4096^2", "specs/cute_transpose/row_smem_swizzled.yaml", {"M": 4096, "N": 4096}),
    ("f16 128-bit cp.async A tile (warp-raked) 8192x4096", "specs/cutlass/sm80_f16_gemm_a_128x32_warpraked.yaml",
     {"M": 8192, "K": 4096}),
    ("CUTLASS stripmined 64x64 v4 -> registers 8192^2", "specs/cutlass/stripmined_64x64_128t_v4.yaml",
     {"M": 8192, "N": 8192}),
    ("CUTLASS stripmined 64x64 v4, edges 8191x8190", "specs/cutlass/stripmined_64x64_128t_v4.yaml",
     {"M": 8191, "N": 8190}),
]
QUICK = [
    ("transpose f32 Sw<4,0,4> smem 1024^2", "specs/cute_transpose/row_smem_swizzled.yaml", {"M": 1024, "N": 1024}),
    ("f16 128-bit cp.async A tile (warp-raked) 2048x1024", "specs/cutlass/sm80_f16_gemm_a_128x32_warpraked.yaml",
     {"M": 2048, "K": 1024}),
]
DEFAULT_SIZES = (2048, 16384, 65536)

CHILD = r"""
import json, os, resource, sys, time
cpu = sorted(os.sched_getaffinity(0))[0]
os.sched_setaffinity(0, {cpu})
mode, spec, sizes, repeat = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
import numpy as np
import threadmap.api as api
from threadmap.simulate.engine import Simulator
assert api.__file__.startswith(os.getcwd()), api.__file__
info = {}
if mode == "tables":
    m = api.models(spec, sizes)[0]
    sim = Simulator(m)
    try:
        from threadmap.simulate.engine import Arena
        from threadmap.verify.run import ENUM_ROWS
        arena, rows = Arena(), ENUM_ROWS
    except ImportError:  # an older checkout: fresh arrays, its own chunk size
        arena, rows = None, None
    blocks = np.arange(m.num_blocks, dtype=np.int64)
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        chunks = sim.chunks(blocks) if rows is None else sim.chunks(blocks, rows)
        for ch in chunks:
            sim.tables(ch) if arena is None else sim.tables(ch, arena)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    info["rows"] = m.num_blocks * sim.rows_per_block()
    info["seconds"] = best
elif mode == "exhaustive":
    m = api.models(spec, sizes)[0]
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        runs = api.verify_spec(spec, sizes=sizes, exhaustive=True)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    info["rows"] = m.num_blocks * Simulator(m).rows_per_block()
    info["seconds"] = best
    info["verdict"] = runs[0].verdict
    info["blocks"] = runs[0].blocks
elif mode == "default":
    t0 = time.perf_counter()
    runs = api.verify_spec(spec, sizes=sizes)
    info["seconds"] = time.perf_counter() - t0
    info["verdict"] = runs[0].verdict
    info["blocks"] = runs[0].blocks
    info["simulated"] = runs[0].blocks_simulated
info["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(info))
"""


def child(root: Path, mode: str, spec: str = "", sizes: dict[str, int] | None = None, repeat: int = 1) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    # cwd=root: ``python -c`` puts the working directory first on sys.path
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(root / spec), json.dumps(sizes or {}), str(repeat)],
                         text=True, capture_output=True, env=env, check=False, cwd=root)
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"rc {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def cli_wall(root: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    t0 = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "threadmap.cli", "verify",
                          str(root / "specs"), "--format", "json"], capture_output=True, text=True, env=env,
                         check=False, cwd=root)
    info: dict = {"seconds": time.perf_counter() - t0}
    try:
        info["peak_mib"] = int(out.stderr.strip().splitlines()[-1]) / 1024
    except (ValueError, IndexError):
        pass
    return info


def rate(info: dict) -> str:
    if "error" in info:
        return info["error"][:60]
    return f"{info['rows'] / info['seconds'] / 1e6:8.1f} M/s"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout to measure (default: this one)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    root = args.root.resolve()
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip() or "?"
    print(f"checkout {root} ({commit}); {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; python {sys.version.split()[0]}; one CPU per child")
    print()
    benches = QUICK if args.quick else RATES
    repeat = 1 if args.quick else args.repeat
    title = f"rates (access rows per second, best of {repeat})"
    print(f"{title:<56s} {'rows':>11s} {'tables':>12s} "
          f"{'exhaustive':>12s} {'peak MiB':>9s}")
    for label, spec, sizes in benches:
        tab = child(root, "tables", spec, sizes, repeat)
        ex = child(root, "exhaustive", spec, sizes, repeat)
        rows = tab.get("rows", ex.get("rows", 0))
        peak = f"{ex['peak_mib']:.0f}" if "peak_mib" in ex else "-"
        print(f"{label:<56s} {rows:>11d} {rate(tab):>12s} {rate(ex):>12s} {peak:>9s}"
              + (f"  ({ex.get('verdict')}, {ex.get('blocks')} blocks)" if "verdict" in ex else ""))
    print()
    print(f"{'default mode (tiling argument), transpose row_smem_swizzled':<56s} {'seconds':>11s} "
          f"{'simulated':>12s} {'blocks':>12s} {'peak MiB':>9s}")
    for n in (DEFAULT_SIZES[:2] if args.quick else DEFAULT_SIZES):
        d = child(root, "default", "specs/cute_transpose/row_smem_swizzled.yaml", {"M": n, "N": n})
        if "error" in d:
            print(f"{f'{n}^2':<56s} {d['error']}")
            continue
        print(f"{f'{n}^2':<56s} {d['seconds']:11.2f} {d['simulated']:12d} {d['blocks']:12d} {d['peak_mib']:9.0f}")
    print()
    w = cli_wall(root)
    print(f"{'threadmap verify specs/ (CLI, wall, incl. start-up)':<56s} {w['seconds']:11.2f} "
          f"{'':>12s} {'':>12s} {w.get('peak_mib', float('nan')):9.0f}")
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
