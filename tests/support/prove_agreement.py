"""Agreement of ``threadmap prove`` with ``threadmap verify`` on hypothesis-generated specs.

A generated spec (:func:`threadmap.testing.strategies.range_specs`, a public hypothesis
strategy) is one of

* a 1-D copy with a tiled copy (random thread count and vector width);
* a 2-D transpose through registers or shared memory, with row- or column-major thread layouts;
* a 2-D tiled copy (random thread and value layouts, ``UniversalCopy`` of the vector's width)
  from a row- or column-major global tensor into a shared tile that is plain, padded or swizzled
  (``Sw<B,M,S>``), with a random base alignment;
* a CUTLASS pitch-linear thread map (``PitchLinearStripminedThreadMap`` or
  ``PitchLinearWarpRakedThreadMap``) loading a global tile into registers;

each with random element types, predicates (``none``, ``bounds``, ``vector``), grids (right and
subtly wrong: floor instead of ceil, one block too many, one block short at one residue),
assumptions, and small size ranges.  It is proved; then it is verified at sizes drawn from the
range (and at every counterexample).  Agreement means:

* a PROVED property never fails at any verified size;
* a REFUTED property fails when its counterexample is replayed by ``verify``;
* a property that fails at some verified size is not PROVED.

UNKNOWN properties are counted, never agreements.  ``python -m tests.support.prove_agreement N SEED``
runs N specs and prints the counts (the CI test runs a few; see tests/prove/test_prove.py).
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from threadmap.api import verify_spec
from threadmap.errors import SpecError
from threadmap.prove.run import REFUTING_CHECKS, fails_property, prove_isolated
from threadmap.report.model import ProveRun
from threadmap.spec.load import loads_spec
from threadmap.testing.strategies import range_specs

#: the checks of ``verify`` whose failure refutes each property (aliasing is judged apart)
CHECKS = {**REFUTING_CHECKS}
def _sizes(loaded: Any, rng: random.Random, k: int) -> list[dict[str, int]]:
    ranges = {n: range(v.min, v.max + 1) for n, v in loaded.spec.sizes.items()}
    out = []
    for _ in range(k):
        env = {n: rng.choice(r) for n, r in ranges.items()}
        if all(rel.holds(env) for rel in _relations(loaded)):
            out.append(env)
    return out


def _relations(loaded: Any) -> list[Any]:
    from threadmap.spec.expr import parse_relation
    return [parse_relation(t) for t in loaded.spec.assume]


def check_one(text: str, rng: random.Random, k: int = 12) -> tuple[list[str], Counter[str]]:
    """(disagreements, status counts) for one spec."""
    try:
        loaded = loads_spec(text, "yaml", "gen.yaml")
        t0 = time.perf_counter()
        kind, got = prove_isolated(loaded, 60)
        if kind == "internal":
            return [f"internal error: {got}"], Counter({"internal error": 1})
        if kind == "invalid":
            raise SpecError(str(got))
        assert isinstance(got, ProveRun)
        proof = {p.property: p for p in got.properties}
        slow = time.perf_counter() - t0 > 30
    except SpecError:  # invalid at a sample (e.g. a 0-block grid): not a case of agreement
        return [], Counter({"invalid spec": 1})
    counts: Counter[str] = Counter(f"{k}:{p.status}" for k, p in proof.items())
    if slow:
        counts["proved in more than 30 s"] += 1
    bad: list[str] = []
    tried = _sizes(loaded, rng, k)
    for prop, p in proof.items():
        if prop not in CHECKS:
            continue
        if p.status == "REFUTED":
            assert p.sizes is not None
            try:
                run = verify_spec(loaded, sizes=p.sizes)[0]
            except SpecError:
                # verify refuses the sizes (a 0-block grid): agreement iff grid is REFUTED too
                if proof["grid"].status != "REFUTED":
                    bad.append(f"{prop} REFUTED at {p.sizes}, which verify refuses, but grid is PROVED")
                counts["REFUTED at an invalid launch (grid REFUTED too)"] += 1
                continue
            if not fails_property(run, prop):
                bad.append(f"{prop} REFUTED at {p.sizes} but verify passes there")
    for env in tried:
        try:
            run = verify_spec(loaded, sizes=env)[0]
        except Exception as e:  # noqa: BLE001 -- an invalid size (e.g. a 0-block grid): the grid property's
            if proof["grid"].status == "PROVED":
                bad.append(f"grid PROVED but {env} is rejected: {e}")
            continue
        for prop in CHECKS:
            if proof[prop].status == "PROVED" and fails_property(run, prop):
                bad.append(f"{prop} PROVED but verify fails it at {env}")
        worst = proof["coalescing"].worst
        if proof["coalescing"].status == "PROVED" and worst is not None:
            most = max_sectors(loaded, env)
            if most > worst["sectors"]:
                bad.append(f"coalescing: at most {worst['sectors']} sectors per request PROVED, but an "
                           f"instruction touches {most} at {env}")
    return bad, counts


def max_sectors(loaded: Any, env: dict[str, int]) -> int:
    """The most sectors any warp instruction of a global side touches at ``env``, every block
    simulated (the generated grids are small)."""
    import numpy as np

    from threadmap.model import build_model
    from threadmap.simulate.engine import Simulator
    from threadmap.verify.coalescing import instruction_stats

    model = build_model(loaded, {**loaded.envs[0], **env})
    sim = Simulator(model)
    blocks = np.arange(int(np.prod(model.grid)), dtype=np.int64)
    most = 0
    for cp in model.copies():
        for t in sim.stage_tables(cp, blocks):
            if t.memory == "global" and len(t):
                st = instruction_stats(t)
                most = max(most, int(st["sectors"].max()))
    return most


def run(n: int, seed_: int, show: bool = True) -> tuple[int, list[str], Counter[str]]:
    """``n`` hypothesis examples from ``seed_``: (specs checked, disagreements, status counts)."""
    total: Counter[str] = Counter()
    bad_all: list[str] = []
    done = [0]
    t0 = time.perf_counter()

    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seed(seed_)
    @given(range_specs(), st.randoms(use_true_random=False))
    def one(text: str, rnd: random.Random) -> None:
        bad, counts = check_one(text, rnd)
        total.update(counts)
        total.update({"family:" + text.split("\n", 2)[1].removeprefix("name: "): 1})
        done[0] += 1
        if bad:
            bad_all.append(f"spec {done[0]}:\n{text}\n" + "\n".join(bad))
            if show:
                print("DISAGREEMENT " + bad_all[-1], flush=True)
        if show and done[0] % 100 == 0:
            print(f"[{time.perf_counter() - t0:7.1f}s] {done[0]} specs, {len(bad_all)} with disagreements", flush=True)

    one()
    return done[0], bad_all, total


def main(n: int, seed_: int) -> int:
    t0 = time.perf_counter()
    count, bad, total = run(n, seed_)
    print(f"{count} specs (seed {seed_}) in {time.perf_counter() - t0:.1f} s: {len(bad)} with disagreements")
    for k, v in sorted(total.items()):
        print(f"  {k}: {v}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100, int(sys.argv[2]) if len(sys.argv) > 2 else 1))
