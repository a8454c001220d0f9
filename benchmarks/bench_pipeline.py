"""What the asynchronous pipeline costs ``verify`` and ``prove``, side by side in one process.

    python benchmarks/bench_pipeline.py

1. ``verify`` in the default mode at M = N = 8192, K = 4096 of the SM90 mainloop's tile shape with
   synchronous copies (``benchmarks/tiles/sm90_tile_synchronous.yaml``) and of the same spec with
   the TMA warp-specialised pipeline added (``sm90_tile_pipelined.yaml``): CPU seconds (median
   of 5) and the peak of Python's allocations (tracemalloc), and their ratio.
2. ``verify`` of each spec of ``specs/pipeline/`` and its planted bugs: CPU seconds and the
   protocol states explored.
3. ``prove`` of the pipeline property of each spec of ``specs/pipeline/``: CPU seconds, the
   median over them.

Times are CPU seconds (``time.process_time``): the machine may be shared.  Prints numbers;
asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from threadmap.api import verify_spec  # noqa: E402
from threadmap.prove import prove_loaded  # noqa: E402
from threadmap.spec.load import load_spec  # noqa: E402
from threadmap.verify.pipeline import forget_explorations  # noqa: E402

HERE = Path(__file__).resolve().parent


def timed(path: Path, repeat: int = 5, cold: bool = True) -> tuple[float, float, list]:
    """Median CPU seconds of ``repeat`` verifies (``cold``: each explores the protocol anew;
    else the process's earlier exploration is reused), the peak of allocations (MiB) of one
    cold run, the runs."""
    times = []
    runs: list = []
    for _ in range(repeat):
        if cold:
            forget_explorations()
        t0 = time.process_time()
        runs = verify_spec(path)
        times.append(time.process_time() - t0)
    forget_explorations()
    tracemalloc.start()
    verify_spec(path)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return statistics.median(times), peak, runs


def main() -> None:
    verify_spec(HERE / "tiles" / "sm90_tile_synchronous.yaml")  # warm the imports and the partition memo
    # and the pipelined spec: the first verifies after a change of spec page-fault (thousands of
    # minor faults per run, in the checks other than the pipeline) while the allocator adapts to
    # the other spec's arrays -- no cost of the pipeline
    for _ in range(3):
        forget_explorations()
        verify_spec(HERE / "tiles" / "sm90_tile_pipelined.yaml")
    base_t, base_m, _ = timed(HERE / "tiles" / "sm90_tile_synchronous.yaml")
    pipe_t, pipe_m, runs = timed(HERE / "tiles" / "sm90_tile_pipelined.yaml")
    warm_t, _, _ = timed(HERE / "tiles" / "sm90_tile_pipelined.yaml", cold=False)
    states = next(r.summary.states for r in runs[0].results if r.check == "pipeline")
    print("verify, default mode, M = N = 8192, K = 4096 (median of 5, CPU s; peak allocations)")
    print(f"  synchronous copies                  {base_t:7.3f} s  {base_m:7.1f} MiB")
    print(f"  + TMA warp-specialised pipe, cold   {pipe_t:7.3f} s  {pipe_m:7.1f} MiB  ({states} protocol states)"
          f"  ratio {pipe_t / base_t:.2f} x")
    print(f"  + the same, exploration reused      {warm_t:7.3f} s                ratio {warm_t / base_t:.2f} x")
    print()
    print("verify of the pipeline library (CPU s, protocol states, verdict)")
    specs = sorted((ROOT / "specs" / "pipeline").glob("*.yaml")) + sorted(
        p for p in (ROOT / "specs" / "planted").glob("sm[89]*.yaml"))
    for p in specs:
        forget_explorations()
        t0 = time.process_time()
        run = verify_spec(p)[0]
        dt = time.process_time() - t0
        st = next((r.summary.states for r in run.results if r.check == "pipeline"), 0)
        print(f"  {p.relative_to(ROOT).as_posix():58s} {dt:7.3f} s {st:8d}  {run.verdict}")
    print()
    print("prove, the pipeline property (CPU s)")
    times = []
    for p in sorted((ROOT / "specs" / "pipeline").glob("*.yaml")):
        loaded = load_spec(p)
        run = prove_loaded(loaded)
        prop = next(x for x in run.properties if x.property == "pipeline")
        times.append(prop.seconds)
        print(f"  {p.relative_to(ROOT).as_posix():58s} {prop.seconds:7.3f} s  {prop.status}: {prop.reason}")
    print(f"  median {statistics.median(times):.3f} s over {len(times)} specs")


if __name__ == "__main__":
    main()
