"""Verifier performance: the whole spec library, and whole-grid coverage + predicates of a
16384 x 16384 transpose (time and peak memory), side by side in one run.

    python benchmarks/bench_verify.py            # prints numbers; asserts nothing

Each measurement runs in a fresh subprocess so that its peak RSS (``ru_maxrss``) is its own.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TRANSPOSE = """
spec: 1
name: CuTe transpose row_smem_swizzled at {M} x {N}
element: f32
threads: 256
sizes: {{M: {M}, N: {N}}}
grid: ["ceil_div(M, 16)", "ceil_div(N, 16)"]
tensors:
  x:  {{memory: global, layout: "(M,N):(N,1)"}}
  y:  {{memory: global, layout: "(N,M):(M,1)"}}
  sA: {{memory: shared, layout: "Sw<4,0,4> o (16,16):(16,1)"}}
  sB: {{memory: shared, layout: "Sw<4,0,4> o (16,16):(1,16)", alias: sA}}
stages:
  - copy: {{src: {{tensor: x, tile: [16,16], at: [bx,by], threads: "(16,16):(16,1)"}},
           dst: {{tensor: sA, threads: "(16,16):(16,1)"}}, predicate: bounds}}
  - barrier
  - copy: {{src: {{tensor: sB, threads: "(16,16):(16,1)"}},
           dst: {{tensor: y, tile: [16,16], at: [by,bx], threads: "(16,16):(16,1)"}}, predicate: bounds}}
expect: {{transform: transpose}}
"""

CHILD = r"""
import json, resource, sys, time
from threadmap.spec.load import loads_spec, load_spec, iter_spec_files
from threadmap.verify.pipeline import verify_spec
t0 = time.perf_counter()
mode = sys.argv[1]
if mode == "library":
    n = 0
    for f in iter_spec_files(sys.argv[2]):
        n += len(verify_spec(load_spec(f)))
    info = {"runs": n}
else:
    text = sys.stdin.read()
    ls = loads_spec(text, "yaml", name="bench.yaml")
    reps = verify_spec(ls, exhaustive=(mode == "exhaustive"))
    r = reps[0]
    grid = [x for x in r["results"] if x["check"] in ("grid_coverage", "predicates")]
    info = {"verdict": r["verdict"], "blocks": r["blocks"], "simulated": r["blocks_simulated"],
            "grid_checks": [(x["check"], x["stage"], x["side"], x["status"]) for x in grid],
            "elements": grid[0]["summary"].get("elements") if grid else None}
info["seconds"] = time.perf_counter() - t0
info["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(info))
"""


def child(mode: str, arg: str = "", stdin: str = "") -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, mode, arg], input=stdin, text=True,
                         capture_output=True, env=env, check=True)
    info = json.loads(out.stdout.strip().splitlines()[-1])
    info["wall_with_startup"] = time.perf_counter() - t0
    return info


def main() -> None:
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"python {sys.version.split()[0]}")
    rows = []
    lib = child("library", str(ROOT / "specs"))
    rows.append(("verify specs/ (whole library, in-process)", lib))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "threadmap.cli", "verify", str(ROOT / "specs"), "--format", "json"],
                   capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), check=False)
    rows.append(("threadmap verify specs/ (CLI, wall)", {"seconds": time.perf_counter() - t0}))
    for m, n in ((16384, 16384), (16383, 16381)):
        rows.append((f"transpose {m}x{n}: whole-grid coverage + predicates (tiling proof)",
                     child("proof", stdin=TRANSPOSE.format(M=m, N=n))))
    for m, n in ((2048, 2048), (4096, 4096)):
        rows.append((f"transpose {m}x{n}: every block simulated (--exhaustive)",
                     child("exhaustive", stdin=TRANSPOSE.format(M=m, N=n))))
    print(f"{'measurement':<72s} {'seconds':>8s} {'peak MiB':>9s}  details")
    for name, info in rows:
        det = {k: v for k, v in info.items() if k not in ("seconds", "peak_mib", "wall_with_startup")}
        peak = f"{info['peak_mib']:.0f}" if "peak_mib" in info else "-"
        print(f"{name:<72s} {info['seconds']:8.2f} {peak:>9s}  {det}")
    print("targets: library < 10 s; 16384^2 whole-grid coverage + predicates < 10 s and < 2048 MiB")
    _ = resource  # the child measures its own peak RSS


if __name__ == "__main__":
    main()
