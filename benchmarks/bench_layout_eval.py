"""Layout evaluation throughput: threadmap's full tables vs per-coordinate peers (one core).

Run from the repository root:

    python benchmarks/bench_layout_eval.py [--repeat 10] [--sample 20000] [--no-pin]

It prints numbers only (no assertions): correctness checks against pycute and
tensor-layouts on a sample of indices, timings of the library's full-table paths
(``ComposedLayout.table()`` and ``Layout.table()``, each with a fresh output array and
with a reused ``out=`` buffer), of the general numpy path ``layout(np.arange(n))``, and
of per-coordinate evaluation (threadmap's int path, pycute, tensor-layouts), then a
summary table of coordinates per second with the library's speedup over each method.
See benchmarks/README.md.

Layout under test: an int8 K-major shared-memory tile with the 128-byte swizzle,
``Sw<3,4,3> o ((8,16),(128,2),(32,16)):((128,1024),(1,16384),(32768,1048576))``
(8x128-byte swizzle atoms; 16 atoms down M, 2 along K; 32x16 pipeline stages/tiles):
depth 2, rank 3, size exactly 2^24, a bijection onto [0, 2^24), so int32 holds it.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
           "VECLIB_MAXIMUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib.metadata as _md  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root

from threadmap.layout import ComposedLayout, Layout, Swizzle  # noqa: E402
from threadmap.layout.int_tuple import depth, flatten_to_tuple, rank, size  # noqa: E402

SHAPE = ((8, 16), (128, 2), (32, 16))
STRIDE = ((128, 1024), (1, 16384), (32768, 1048576))
SW = (3, 4, 3)
N = 1 << 24

TARGET_RATE = 300e6
TARGET_SPEEDUP = 1000.0


# --------------------------------------------------------------------------- helpers
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def version(dist: str) -> str:
    try:
        return _md.version(dist)
    except _md.PackageNotFoundError:
        return "not installed"


def load_average() -> str:
    if not hasattr(os, "getloadavg"):
        return "n/a"
    la = os.getloadavg()
    return f"{la[0]:.2f} {la[1]:.2f} {la[2]:.2f}"


def best_time(f: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall time of ``repeat`` calls (gc off while timing); returns (seconds, last result)."""
    best = float("inf")
    r = None
    for _ in range(repeat):
        r = None  # drop the previous result first so its memory can be reused
        gc.disable()
        try:
            t0 = time.perf_counter()
            r = f()
            dt = time.perf_counter() - t0
        finally:
            gc.enable()
        best = min(best, dt)
    return best, r


def fmt_rate(r: float) -> str:
    if r >= 1e9:
        return f"{r / 1e9:8.2f} G/s"
    if r >= 1e6:
        return f"{r / 1e6:8.1f} M/s"
    return f"{r / 1e3:8.1f} k/s"


# --------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=10, help="best of N for full tables")
    ap.add_argument("--repeat-slow", type=int, default=2, help="best of N for layout(arange(n))")
    ap.add_argument("--sample", type=int, default=20000, help="indices for per-coordinate peers")
    ap.add_argument("--no-pin", action="store_true", help="do not pin the process to one CPU")
    args = ap.parse_args()

    pinned = "no"
    if not args.no_pin and hasattr(os, "sched_setaffinity"):
        try:
            cpus = sorted(os.sched_getaffinity(0))
            os.sched_setaffinity(0, {cpus[-1]})
            pinned = f"cpu {cpus[-1]}"
        except OSError:
            pass

    import pycute
    import tensor_layouts as tl

    print("== machine")
    print(f"cpu            : {cpu_model()}  ({os.cpu_count()} logical CPUs, pinned to {pinned})")
    print(f"python         : {platform.python_version()}  numpy {np.__version__}")
    print(f"peers          : pycute (nvidia-cutlass {version('nvidia-cutlass')}), "
          f"tensor-layouts {version('tensor-layouts')}")
    print(f"load average   : {load_average()}  (numbers are noisy when this exceeds ~0.5 x CPUs)")
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp.exists():
        print(f"THP            : {thp.read_text().strip()}")

    # ---------------------------------------------------------------- the layout
    L = Layout(SHAPE, STRIDE)
    sw = Swizzle(*SW)
    C = ComposedLayout(sw, 0, L)
    hi = sum(d * (s - 1) for s, d in zip(flatten_to_tuple(SHAPE), flatten_to_tuple(STRIDE)))
    print("\n== layout")
    print(f"layout         : Sw<{SW[0]},{SW[1]},{SW[2]}> o {L}")
    print(f"size {size(L.shape)} (= 2^{size(L.shape).bit_length() - 1}), depth {depth(L.shape)}, "
          f"rank {rank(L.shape)}, cosize {hi + 1} (int32: {hi < 2**31})")
    assert size(L.shape) == N  # the benchmark's own precondition, not a test

    # ---------------------------------------------------------------- correctness
    print("\n== correctness (before timing)")
    rng = np.random.default_rng(0)
    sample = np.unique(np.concatenate([[0, N - 1], rng.integers(0, N, args.sample - 2)]))
    sample_py = [int(i) for i in sample]

    p_plain = pycute.Layout(SHAPE, STRIDE)
    p_sw = pycute.ComposedLayout(pycute.Swizzle(*SW), 0, p_plain)
    t_plain = tl.Layout(SHAPE, STRIDE)
    t_sw = tl.ComposedLayout(tl.Swizzle(*SW), t_plain)

    tab_sw = C.table()
    tab_plain = L.table()
    buf = np.zeros(N, dtype=tab_sw.dtype)  # reused by every out= timing below

    ref_p = np.array([p_sw(i) for i in sample_py], dtype=np.int64)
    ref_t = np.array([t_sw(i) for i in sample_py], dtype=np.int64)
    ref_tm = np.array([C(i) for i in sample_py], dtype=np.int64)
    ref_p_plain = np.array([p_plain(i) for i in sample_py], dtype=np.int64)
    ref_t_plain = np.array([t_plain(i) for i in sample_py], dtype=np.int64)

    def check(name: str, ok: bool) -> None:
        print(f"  {'OK  ' if ok else 'FAIL'} {name}")

    n_s = len(sample_py)
    check(f"ComposedLayout.table() ({tab_sw.dtype}) == pycute on {n_s} sampled indices",
          bool((tab_sw[sample] == ref_p).all()))
    check(f"ComposedLayout.table() == tensor-layouts on {n_s} sampled indices",
          bool((tab_sw[sample] == ref_t).all()))
    check(f"threadmap per-coordinate int path C(i) == pycute on {n_s} sampled indices",
          bool((ref_tm == ref_p).all()))
    check(f"Layout.table() ({tab_plain.dtype}) == pycute Layout on {n_s} sampled indices",
          bool((tab_plain[sample] == ref_p_plain).all()))
    check(f"Layout.table() == tensor-layouts Layout on {n_s} sampled indices",
          bool((tab_plain[sample] == ref_t_plain).all()))
    check("swizzled table is a permutation of [0, 2^24)",
          bool(np.array_equal(np.bincount(tab_sw, minlength=N), np.ones(N, dtype=np.int64))))
    check("ComposedLayout.table(out=buf) is buf and == ComposedLayout.table(), all 2^24 entries",
          C.table(out=buf) is buf and bool(np.array_equal(buf, tab_sw)))
    check("Layout.table(out=buf) is buf and == Layout.table(), all 2^24 entries",
          L.table(out=buf) is buf and bool(np.array_equal(buf, tab_plain)))
    del ref_tm, ref_t_plain

    # ---------------------------------------------------------------- full tables
    print(f"\n== full-table timings (best of {args.repeat}; 2^24 coordinates each)")
    rows: list[tuple[str, str, float]] = []  # (kind, method, coords/s); kind: sw | plain

    def full(kind: str, name: str, f: Callable[[], Any], repeat: int | None = None) -> tuple[float, Any]:
        t, r = best_time(f, repeat or args.repeat)
        rate = N / t
        rows.append((kind, name, rate))
        print(f"  {name:<58s} {t * 1e3:9.1f} ms  {fmt_rate(rate)}")
        return rate, r

    r_sw, _ = full("sw", "threadmap ComposedLayout.table()", C.table)
    r_sw_out, _ = full("sw", "threadmap ComposedLayout.table(out=buf)", lambda: C.table(out=buf))
    r_plain, _ = full("plain", "threadmap Layout.table()", L.table)
    r_plain_out, _ = full("plain", "threadmap Layout.table(out=buf)", lambda: L.table(out=buf))

    print(f"  numpy backend, general idx->crd->offset path (best of {args.repeat_slow}):")
    ar = np.arange(N)
    _, res = full("sw", "threadmap C(np.arange(n))", lambda: C(ar), args.repeat_slow)
    ok_sw = bool(np.array_equal(np.asarray(res), tab_sw))
    res = None
    _, res = full("plain", "threadmap L(np.arange(n))", lambda: L(ar), args.repeat_slow)
    ok_plain = bool(np.array_equal(np.asarray(res), tab_plain))
    res = ar = None
    check("C(np.arange(n)) == ComposedLayout.table(), all 2^24 entries", ok_sw)
    check("L(np.arange(n)) == Layout.table(), all 2^24 entries", ok_plain)
    tab_sw = tab_plain = None

    # ---------------------------------------------------------------- per coordinate
    print(f"\n== per-coordinate evaluation (Python loop over {n_s} indices, best of 3)")

    def per_coord(kind: str, name: str, f: Callable[[int], Any]) -> None:
        def loop() -> None:
            for i in sample_py:
                f(i)
        t, _ = best_time(loop, 3)
        rate = n_s / t
        rows.append((kind, name, rate))
        print(f"  {name:<58s} {t / n_s * 1e6:9.2f} us  {fmt_rate(rate)}")

    per_coord("sw", "threadmap ComposedLayout(sw, 0, L)(i)  [int path]", C)
    per_coord("sw", "pycute ComposedLayout(Swizzle, 0, L)(i)", p_sw)
    per_coord("sw", "tensor-layouts ComposedLayout(Swizzle, L)(i)", t_sw)
    per_coord("plain", "threadmap Layout(i)  [int path]", L)
    per_coord("plain", "pycute Layout(i)", p_plain)
    per_coord("plain", "tensor-layouts Layout(i)", t_plain)

    # ---------------------------------------------------------------- summary
    print("\n== summary: coordinates per second, and the library full table's speedup over each")
    print("   (swizzled rows compare with ComposedLayout.table(), plain rows with Layout.table())")
    hdr = f"  {'method':<58s} {'coords/s':>12s} {'table() x':>12s} {'table(out=) x':>14s}"
    print(hdr)
    print("  " + "-" * (len(hdr) - 2))
    lib = {"sw": (r_sw, r_sw_out), "plain": (r_plain, r_plain_out)}
    for kind in ("sw", "plain"):
        fresh, reused = lib[kind]
        for k, name, rate in rows:
            if k == kind:
                print(f"  {name:<58s} {fmt_rate(rate):>12s} {fresh / rate:11.1f}x {reused / rate:13.1f}x")
        print()

    print("== targets (>= 300 M coords/s full table, >= 1000x each per-coordinate peer)")
    for kind, label, r in (("sw", "ComposedLayout.table()", r_sw),
                           ("sw", "ComposedLayout.table(out=buf)", r_sw_out),
                           ("plain", "Layout.table()", r_plain),
                           ("plain", "Layout.table(out=buf)", r_plain_out)):
        peers = [(n, pr) for k, n, pr in rows
                 if k == kind and (n.startswith("pycute") or n.startswith("tensor-layouts"))]
        sps = ", ".join(f"{n.split()[0]} {r / pr:,.0f}x" for n, pr in peers)
        sp = min(r / pr for _, pr in peers)
        print(f"  {label:<30s} {fmt_rate(r)}  {'MET ' if r >= TARGET_RATE else 'MISS'} rate; "
              f"over peers: {sps}  {'MET' if sp >= TARGET_SPEEDUP else 'MISS'}")
    print(f"\nload average at end: {load_average()}")


if __name__ == "__main__":
    main()
