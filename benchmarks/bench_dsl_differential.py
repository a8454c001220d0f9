"""The three-way differential run at full size: threadmap, the CuTe DSL and the C++ headers on
100,000 random CuTe constructions, the header refereeing every case.

    python benchmarks/bench_dsl_differential.py                       # 100,000 cases, about 1-2 h on 2 cores
    python benchmarks/bench_dsl_differential.py --cases 5000 --seed 3 --json out.json

Cases are drawn from ``threadmap.testing.strategies`` by the seeded generator of
``tests/support/differential.py`` (which documents the kinds, the wire form and how the three
sides are compared) and processed in chunks; each chunk's cases are distinct from all earlier
ones.  Prints, at the end (and after every chunk to stderr, in short):

* the cases by kind and how many the header refereed (all of them here);
* the disagreements with the header by kind, the side it finds wrong and the nature
  (``form``: the same function in another shape or stride, with what differs; ``function`` /
  ``value``: another result; ``accepts``: a result where the header rejects the case;
  ``refuses``: threadmap refusing what the header accepts);
* the DSL's refusals of what the header accepts, by kind, and the cases all three refuse;
* CPU seconds per 1,000 cases for each side: threadmap, the DSL (in its child processes; the
  import of ``cutlass.cute`` apart) and the header (the compilers' CPU, measured with a cold
  compile cache unless ``--cache`` names a warm one), and the drawing of the cases.

``--json FILE`` keeps the counts and up to ``--keep`` representative cases of every class
(rewritten after every chunk); ``tests/dsl/differential_regressions.json`` is curated from
it.  Needs the DSL (``nvidia-cutlass-dsl``), nvcc and the ``nvidia-cutlass`` headers.
Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=20260601)
    ap.add_argument("--chunk", type=int, default=5000, help="cases drawn and compared at once")
    ap.add_argument("--jobs", type=int, default=2, help="compilers at once")
    ap.add_argument("--per-unit", type=int, default=300, help="cases per C++ translation unit")
    ap.add_argument("--cache", help="the C++ compile cache (default: a fresh one, so the header's CPU is cold)")
    ap.add_argument("--json", help="write the counts and representative cases here")
    ap.add_argument("--keep", type=int, default=5, help="representative cases kept per class")
    ap.add_argument("--raw", help="append every case and the three answers here (gzipped JSON lines)")
    ap.add_argument("--from-raw", help="compare again the answers a --raw file holds (no evaluation)")
    ap.add_argument("--regressions", help="write the regression data file (a case of each class) here")
    a = ap.parse_args()

    tmp = None
    if a.cache:
        os.environ["THREADMAP_CXX_CACHE"] = a.cache
    else:
        tmp = tempfile.TemporaryDirectory(prefix="threadmap_cxx_cold_")
        os.environ["THREADMAP_CXX_CACHE"] = tmp.name
    from tests.support import differential as D
    from tests.support.dsl_oracle import dsl_available

    if not dsl_available():
        print("cutlass.cute (nvidia-cutlass-dsl) is not installed", file=sys.stderr)
        return 2
    totals = D.Totals(keep=a.keep)
    if a.from_raw:
        return from_raw(a, totals)
    seen: set[str] = set()
    wall0 = time.time()
    done = 0
    chunk_no = 0
    while done < a.cases:
        n = min(a.chunk, a.cases - done)
        t0 = time.process_time()
        cases = D.draw_cases(n, a.seed * 1000 + chunk_no, exclude=seen)
        draw_cpu = time.process_time() - t0
        seen.update(c.id for c in cases)
        rep = D.run(len(cases), a.seed, cases=cases, dsl_batch=2500, cxx_per_unit=a.per_unit, cxx_jobs=a.jobs)
        rep.cpu["draw"] = draw_cpu
        totals.add(rep)
        if a.raw:
            with gzip.open(a.raw, "at") as f:
                for c in cases:
                    f.write(json.dumps({"id": c.id, "kind": c.kind, "args": c.args, "threadmap": rep.tm[c.id],
                                        "dsl": rep.dsl.get(c.id), "header": rep.cxx.get(c.id)}) + "\n")
        done += len(cases)
        chunk_no += 1
        el = time.time() - wall0
        print(f"[{done}/{a.cases}] {el / 60:.1f} min; disagreeing cases so far {totals.disagreeing_cases()}"
              f" (threadmap wrong {sum(m for k, m in totals.classes.items() if k[1] == 'threadmap')});"
              f" CPU so far " + ", ".join(f"{k} {v:.0f} s" for k, v in sorted(totals.cpu.items())),
              file=sys.stderr, flush=True)
        if a.json:
            write_json(a.json, totals, a, done, time.time() - wall0)
        if len(cases) < n:
            break  # the strategies hold no more distinct cases
    print(totals.summary())
    print(timing(totals))
    print(f"wall: {(time.time() - wall0) / 60:.1f} min")
    if a.regressions:
        print(f"{D.write_regressions(totals.reps, a.regressions, per_class=1)} regression cases in {a.regressions}")
    if tmp is not None:
        tmp.cleanup()
    return 0


def from_raw(a: argparse.Namespace, totals: object) -> int:
    """The counts and representatives of a recorded run, compared again from its answers."""
    from tests.support import differential as D

    assert isinstance(totals, D.Totals)
    cases: list[D.Case] = []
    tm: dict[str, dict[str, Any]] = {}
    dsl: dict[str, dict[str, Any]] = {}
    cxx: dict[str, dict[str, Any]] = {}

    def flush() -> None:
        if cases:
            rep = D.compare(cases, tm, dsl, cxx)
            rep.dsl_crashes = sum(dsl.get(c.id, {}).get("refused") == "crash" for c in cases)
            totals.add(rep)
            cases.clear()

    with gzip.open(a.from_raw, "rt") as f:
        for line in f:
            r = json.loads(line)
            c = D.Case(r["kind"], r["args"], r["id"])
            cases.append(c)
            tm[c.id], dsl[c.id], cxx[c.id] = r["threadmap"], r["dsl"] or {}, r["header"] or {"undecided": "none"}
            if len(cases) >= a.chunk:
                flush()
    flush()
    print(totals.summary())
    if a.regressions:
        print(f"{D.write_regressions(totals.reps, a.regressions, per_class=1)} regression cases in {a.regressions}")
    return 0


def timing(t: object) -> str:
    """CPU seconds per 1,000 cases for each side."""
    from tests.support.differential import Totals

    assert isinstance(t, Totals)
    n = max(1, sum(t.kinds.values()))
    per = {k: v / n * 1000 for k, v in t.cpu.items()}
    return "\n".join([
        "CPU seconds per 1,000 cases:",
        f"  threadmap        {per.get('threadmap', 0):8.2f}",
        f"  DSL              {per.get('dsl', 0):8.2f}   (+ {t.cpu.get('dsl_import', 0):.1f} s importing "
        "cutlass.cute, once per child process)",
        f"  C++ header       {per.get('cxx', 0):8.2f}   (compilers' CPU; refereed {t.refereed} cases)",
        f"  drawing cases    {per.get('draw', 0):8.2f}",
        f"  comparing        {per.get('compare', 0):8.2f}",
    ])


def write_json(path: str, t: object, a: argparse.Namespace, done: int, wall: float) -> None:
    from tests.support.differential import Totals

    assert isinstance(t, Totals)
    Path(path).write_text(json.dumps({
        "cases": done, "seed": a.seed, "chunk": a.chunk, "wall_s": wall,
        "kinds": dict(t.kinds), "refereed": t.refereed, "cpu_s": dict(t.cpu),
        "classes": [[*k, m] for k, m in sorted(t.classes.items())], "both_wrong": t.both_wrong,
        "refusals": [[k, r, m] for (k, r), m in sorted(t.refusals.items())],
        "agreed_refusals": dict(t.agreed_refusals), "undecided": t.undecided[:50],
        "dsl_crashes": t.dsl_crashes, "summary": t.summary(), "timing": timing(t),
        "representatives": t.reps,
    }, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
