"""Prover performance over the range library, side by side with the enumeration in one run.

    python benchmarks/bench_prove.py            # every spec in specs/ranges/
    python benchmarks/bench_prove.py --quick    # the specs with at most 256 classes

For each spec: the time of every property (``grid``, ``aliasing``, ``vectorize`` and
``coalescing`` are z3 queries, the last with the worst sectors per request it proves; the
class properties share one pass over the size classes, whose time each of them reports),
the number of classes, and, for the same checks, ``threadmap verify`` at M = N = 1024 and at
16384 (the default mode: representative blocks and the tiling argument).  Each spec is proved
twice in this process: with the class pass (``class_pass``) and with the old one
(``class_pass_old``: every check at every class), whose CPU seconds are shown side by side
(``old cls``).  Then the median, 95th percentile and slowest property over the library, for
both.  Times are CPU seconds (``time.process_time``): the machine may be shared.  Prints
numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from threadmap.api import verify_spec  # noqa: E402
from threadmap.prove import prove_loaded  # noqa: E402
from threadmap.spec.load import load_spec  # noqa: E402

CHECKS = ["coverage", "predicates", "dataflow", "bank_conflicts", "vectorize", "coalescing"]


def enum_time(loaded: object, sizes: dict[str, int]) -> float | None:
    t0 = time.process_time()
    try:
        verify_spec(loaded, sizes=sizes, checks=CHECKS)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 -- a size the spec's assumptions exclude
        return None
    return time.process_time() - t0


class CpuClock:
    """``time.perf_counter`` replaced by ``time.process_time`` while proving, so that every
    property's ``seconds`` is CPU time (the prover reads its clock through ``time``)."""

    def __enter__(self) -> None:
        self.saved = time.perf_counter
        time.perf_counter = time.process_time

    def __exit__(self, *exc: object) -> None:
        time.perf_counter = self.saved


def summary(rows: list[tuple[float, str, str, str, str]]) -> str:
    times = sorted(r[0] for r in rows)
    slow = max(rows)
    return (f"{len(rows)} properties: median {statistics.median(times):.2f} s, "
            f"95th percentile {times[int(0.95 * (len(times) - 1))]:.2f} s, slowest {slow[0]:.2f} s "
            f"({slow[1]} {slow[2]}: {slow[4][:80]})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rows, old_rows = [], []
    print(f"{'spec':42} {'classes':>7} {'grid':>6} {'cls':>7} {'old cls':>7} {'alias':>6} {'vector':>6} "
          f"{'coal':>6} {'worst':>5} {'enum@1024':>10} {'enum@16384':>11}")
    for f in sorted((ROOT / "specs" / "ranges").glob("*.yaml")):
        loaded = load_spec(f)
        if args.quick and "stripmined" in f.name:
            continue
        with CpuClock():
            run = prove_loaded(loaded, 600)
            old = prove_loaded(loaded, 600, old_pass=True)
        p = {x.property: x for x in run.properties}
        po = {x.property: x for x in old.properties}
        names = list(loaded.spec.sizes)
        e1 = enum_time(loaded, dict.fromkeys(names, 1024))
        e2 = enum_time(loaded, dict.fromkeys(names, 16384))
        for x in run.properties:
            rows.append((x.seconds, f.name, x.property, x.status, x.reason))
        for x in old.properties:
            old_rows.append((x.seconds, f.name, x.property, x.status, x.reason))
        cls = p["coverage"]
        fmt = lambda v: f"{v:.2f}" if v is not None else "-"  # noqa: E731
        worst = (p["coalescing"].worst or {}).get("sectors", "-")
        print(f"{f.name:42} {cls.classes:7d} {p['grid'].seconds:6.2f} {cls.seconds:7.2f} {po['coverage'].seconds:7.2f} "
              f"{p['aliasing'].seconds:6.2f} {p['vectorize'].seconds:6.2f} {p['coalescing'].seconds:6.2f} {worst:>5} "
              f"{fmt(e1):>10} {fmt(e2):>11}", flush=True)
    print(f"\nclass pass: {summary(rows)}\nold pass:   {summary(old_rows)}")


if __name__ == "__main__":
    main()
