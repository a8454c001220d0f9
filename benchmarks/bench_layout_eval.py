"""Layout evaluation throughput: threadmap full tables vs per-coordinate peers (one core).

Run from the repository root:

    python benchmarks/bench_layout_eval.py [--repeat 7] [--sample 20000] [--no-pin]

It prints numbers only (no assertions): a correctness check against pycute and
tensor-layouts on a sample of indices, an anatomy of where the time of the swizzled
full table goes, and a table of coordinates per second with threadmap's speedup over
each method.  See benchmarks/README.md.

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

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent))  # the repository root: `import threadmap`
sys.path.insert(0, str(_HERE))  # fast_table

import fast_table  # noqa: E402

from threadmap.layout import ComposedLayout, Layout, Swizzle  # noqa: E402
from threadmap.layout.int_tuple import depth, rank, size  # noqa: E402

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
    if hasattr(os, "getloadavg"):
        la = os.getloadavg()
        print(f"load average   : {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}  (numbers are noisy when this "
              f"exceeds ~0.5 x CPUs)")
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp.exists():
        print(f"THP            : {thp.read_text().strip()}")

    # ---------------------------------------------------------------- the layout
    L = Layout(SHAPE, STRIDE)
    sw = Swizzle(*SW)
    C = ComposedLayout(sw, 0, L)
    hi = sum(d * (s - 1) for s, d in zip(fast_table.flat_modes(L)[0], fast_table.flat_modes(L)[1]))
    print("\n== layout")
    print(f"layout         : Sw<{SW[0]},{SW[1]},{SW[2]}> o {L}")
    print(f"size {size(L.shape)} (= 2^{size(L.shape).bit_length() - 1}), depth {depth(L.shape)}, "
          f"rank {rank(L.shape)}, cosize {hi + 1} (int32: {hi < 2**31})")
    assert size(L.shape) == N  # the benchmark's own precondition, not a test

    has_lib_table = callable(getattr(C, "table", None))
    lib_label = "ComposedLayout.table()" if has_lib_table else "sw(L.table())"

    def lib_swizzled() -> np.ndarray:
        return C.table() if has_lib_table else sw(L.table())

    # ---------------------------------------------------------------- correctness
    print("\n== correctness (before timing)")
    rng = np.random.default_rng(0)
    sample = np.unique(np.concatenate([[0, N - 1], rng.integers(0, N, args.sample - 2)]))
    sample_py = [int(i) for i in sample]

    p_plain = pycute.Layout(SHAPE, STRIDE)
    p_sw = pycute.ComposedLayout(pycute.Swizzle(*SW), 0, p_plain)
    t_plain = tl.Layout(SHAPE, STRIDE)
    t_sw = tl.ComposedLayout(tl.Swizzle(*SW), t_plain)

    tab_lib = lib_swizzled()
    tab_plain = L.table()
    tab_fast = fast_table.layout_table(L, swizzle=sw)
    tab_fast_blk = fast_table.layout_table(L, swizzle=sw, method="blocked")
    tab_fast_plain = fast_table.layout_table(L)

    ref_p = np.array([p_sw(i) for i in sample_py], dtype=np.int64)
    ref_t = np.array([t_sw(i) for i in sample_py], dtype=np.int64)
    ref_tm = np.array([C(i) for i in sample_py], dtype=np.int64)
    ref_p_plain = np.array([p_plain(i) for i in sample_py], dtype=np.int64)

    def check(name: str, ok: bool) -> None:
        print(f"  {'OK  ' if ok else 'FAIL'} {name}")

    n_s = len(sample_py)
    check(f"threadmap {lib_label} ({tab_lib.dtype}) == pycute on {n_s} sampled indices",
          bool((tab_lib[sample] == ref_p).all()))
    check(f"threadmap {lib_label} == tensor-layouts on {n_s} sampled indices",
          bool((tab_lib[sample] == ref_t).all()))
    check(f"threadmap per-coordinate int path C(i) == pycute on {n_s} sampled indices",
          bool((ref_tm == ref_p).all()))
    check(f"threadmap L.table() (no swizzle) == pycute Layout on {n_s} sampled indices",
          bool((tab_plain[sample] == ref_p_plain).all()))
    check("fast_table xor-split == library table, all 2^24 entries",
          bool(np.array_equal(tab_fast, tab_lib)))
    check("fast_table blocked == library table, all 2^24 entries",
          bool(np.array_equal(tab_fast_blk, tab_lib)))
    check("fast_table plain == L.table(), all 2^24 entries",
          bool(np.array_equal(tab_fast_plain, tab_plain)))
    check("swizzled table is a permutation of [0, 2^24)",
          bool(np.array_equal(np.bincount(tab_lib, minlength=N), np.ones(N, dtype=np.int64))))
    del tab_fast, tab_fast_blk, tab_fast_plain, ref_tm

    # ---------------------------------------------------------------- full tables
    print(f"\n== full-table timings (best of {args.repeat}; 2^24 coordinates each)")
    rows: list[tuple[str, str, float]] = []  # (kind, method, coords/s) kind: sw | plain

    def full(kind: str, name: str, f: Callable[[], Any], repeat: int | None = None) -> float:
        t, _ = best_time(f, repeat or args.repeat)
        rate = N / t
        rows.append((kind, name, rate))
        print(f"  {name:<58s} {t * 1e3:9.1f} ms  {fmt_rate(rate)}")
        return rate

    r_lib_sw = full("sw", f"threadmap {lib_label}", lib_swizzled)
    r_lib_plain = full("plain", "threadmap L.table()", L.table)
    buf = np.empty(N, dtype=np.int32)
    buf.fill(0)
    if has_lib_table:
        try:
            C.table(out=buf)
        except TypeError:
            pass
        else:
            full("sw", "threadmap ComposedLayout.table(out=buf)", lambda: C.table(out=buf))
    r_fast_sw = full("sw", "fast_table.layout_table(L, swizzle) [xor split]",
                     lambda: fast_table.layout_table(L, swizzle=sw))
    full("sw", "fast_table.layout_table(L, swizzle) [blocked]",
         lambda: fast_table.layout_table(L, swizzle=sw, method="blocked"))
    full("sw", "fast_table.layout_table(L, swizzle, out=buf) [xor split]",
         lambda: fast_table.layout_table(L, swizzle=sw, out=buf))
    full("sw", "fast_table.layout_table(L, swizzle, out=buf) [blocked]",
         lambda: fast_table.layout_table(L, swizzle=sw, out=buf, method="blocked"))
    r_fast_plain = full("plain", "fast_table.layout_table(L)",
                        lambda: fast_table.layout_table(L))
    full("plain", "fast_table.layout_table(L, out=buf)", lambda: fast_table.layout_table(L, out=buf))
    print(f"  numpy backend, general idx->crd->offset path (best of {args.repeat_slow}):")
    ar = np.arange(N, dtype=np.int64)
    full("sw", "threadmap C(np.arange(n))  [int64 indices]", lambda: C(ar), args.repeat_slow)
    full("plain", "threadmap L(np.arange(n))  [int64 indices]", lambda: L(ar), args.repeat_slow)
    ar = np.arange(N, dtype=np.int32)
    full("sw", "threadmap C(np.arange(n, dtype=int32))", lambda: C(ar), args.repeat_slow)
    full("plain", "threadmap L(np.arange(n, dtype=int32))", lambda: L(ar), args.repeat_slow)
    perm = np.random.default_rng(1).permutation(N).astype(np.int32)
    print("  arbitrary index arrays via the table (gather), for comparison:")
    full("sw", "tab[idx], tab = fast table, idx = random permutation",
         lambda: fast_table.layout_table(L, swizzle=sw)[perm], args.repeat_slow)
    ar = perm = None  # free 128 MiB

    # ---------------------------------------------------------------- anatomy
    print(f"\n== where the time of {lib_label} goes (best of {args.repeat})")

    def part(name: str, f: Callable[[], Any]) -> None:
        t, _ = best_time(f, args.repeat)
        print(f"  {name:<58s} {t * 1e3:9.1f} ms  {fmt_rate(N / t)}")

    part("np.empty(n, int32) + fill   (fresh 64 MiB: page faults)",
         lambda: np.empty(N, dtype=np.int32).fill(0))
    part("buf.fill(0)                 (write bandwidth, warm buffer)", lambda: buf.fill(0))
    part("L.table()                   (add.outer chain, int32)", L.table)
    part("L.table(np.int64)           (add.outer chain, int64)", lambda: L.table(np.int64))
    t32 = L.table()
    t64 = t32.astype(np.int64)
    part("sw(t) on an existing int32 table (3 passes, 2 temps)", lambda: sw(t32))
    part("sw(t) on an existing int64 table", lambda: sw(t64))
    t64 = None
    scratch = np.empty_like(t32)
    part("in-place swizzle, int32, 1 reused scratch (out=)",
         lambda: fast_table.swizzle_inplace(t32, sw, scratch))
    t32 = scratch = None

    # ---------------------------------------------------------------- per coordinate
    print(f"\n== per-coordinate evaluation (Python loop over {n_s} indices, best of 3)")

    def per_coord(kind: str, name: str, f: Callable[[int], Any]) -> float:
        def loop() -> None:
            for i in sample_py:
                f(i)
        t, _ = best_time(loop, 3)
        rate = n_s / t
        rows.append((kind, name, rate))
        print(f"  {name:<58s} {t / n_s * 1e6:9.2f} us  {fmt_rate(rate)}")
        return rate

    per_coord("sw", "threadmap ComposedLayout(sw, 0, L)(i)  [int path]", C)
    per_coord("sw", "pycute ComposedLayout(Swizzle, 0, L)(i)", p_sw)
    per_coord("sw", "tensor-layouts ComposedLayout(Swizzle, L)(i)", t_sw)
    per_coord("plain", "threadmap L(i)  [int path]", L)
    per_coord("plain", "pycute Layout(i)", p_plain)
    per_coord("plain", "tensor-layouts Layout(i)", t_plain)

    # ---------------------------------------------------------------- summary
    print("\n== summary: coordinates per second, and threadmap's full-table speedup over each")
    print("   (swizzled rows compare with the swizzled tables, plain rows with the plain ones)")
    hdr = f"  {'method':<58s} {'coords/s':>12s} {'lib table x':>12s} {'fast_table x':>13s}"
    print(hdr)
    print("  " + "-" * (len(hdr) - 2))
    for kind in ("sw", "plain"):
        lib_r, fast_r = (r_lib_sw, r_fast_sw) if kind == "sw" else (r_lib_plain, r_fast_plain)
        for k, name, rate in rows:
            if k != kind:
                continue
            print(f"  {name:<58s} {fmt_rate(rate):>12s} {lib_r / rate:11.1f}x {fast_r / rate:12.1f}x")
        print()

    print("== targets (>= 300 M coords/s swizzled full table, >= 1000x each per-coordinate peer)")
    peers = [(n, r) for k, n, r in rows if k == "sw" and ("pycute" in n or "tensor-layouts" in n)]
    for label, r in ((f"library {lib_label}", r_lib_sw), ("fast_table xor split", r_fast_sw)):
        ok_rate = r >= TARGET_RATE
        sp = min(r / pr for _, pr in peers)
        print(f"  {label:<40s} {fmt_rate(r)}  {'MET ' if ok_rate else 'MISS'} rate; "
              f"min speedup over peers {sp:,.0f}x  {'MET' if sp >= TARGET_SPEEDUP else 'MISS'}")


if __name__ == "__main__":
    main()
