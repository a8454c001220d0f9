"""Agreement of ``threadmap prove`` with ``threadmap verify`` on generated specs.

A generated spec is a 1-D or 2-D copy (or transpose) with random tiles, thread layouts,
predicates, element types, grids (right and subtly wrong: floor instead of ceil, one block
too many) and assumptions, over small size ranges.  It is proved; then it is verified at
sizes drawn from the range (and at every counterexample).  Agreement means:

* a PROVED property never fails at any verified size;
* a REFUTED property fails when its counterexample is replayed by ``verify``;
* a property that fails at some verified size is not PROVED.

UNKNOWN properties are counted, never agreements.  ``python -m tests.prove_agreement N SEED``
runs N specs and prints the counts (the CI test runs a few; see tests/test_prove.py).
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from typing import Any

from threadmap.api import verify_spec
from threadmap.errors import SpecError
from threadmap.prove.run import CLASS_PROPERTIES, fails_property, prove_loaded
from threadmap.spec.load import loads_spec

#: the checks of ``verify`` whose failure refutes each property (aliasing is judged apart)
CHECKS = {**CLASS_PROPERTIES}


def gen_spec(rng: random.Random) -> str:
    """One random spec (YAML text) with size ranges."""
    elem = rng.choice(["f32", "f16", "u8"])
    two_d = rng.random() < 0.5
    pred = rng.choice(["none", "bounds", "vector", "vector"])
    if not two_d:
        bits = {"f32": 32, "f16": 16, "u8": 8}[elem]
        v = rng.choice([v for v in (1, 2, 4) if v * bits <= 128])
        t = rng.choice([1, 2, 4, 8, 16])
        T = t * v
        hi = rng.randint(T, 3 * T + 5)
        c = rng.randint(2, max(2, T - 1))  # a grid one block short only when N % T == T - c + 1
        grid = rng.choice(["ceil_div(N, {T})", "ceil_div(N, {T})", "N / {T}", "N / {T} + 1",
                           "ceil_div(N, {T}) + 1",
                           "ceil_div(N, {T}) - ((N % {T} + {c}) / {T}) * (1 - (N % {T} + {c1}) / {T})"]
                          ).format(T=T, c=c, c1=c - 1)
        assume = rng.choice(["", "", f'assume: ["N % {rng.choice([2, 4, T])} == 0"]'])
        # v contiguous values a thread, one v-wide instruction: a vector straddles N unless v | N
        part = f'tiled_copy: {{threads: "{t}:1", values: "{v}:1", atom: "UniversalCopy<uint{v * bits}_t>"}}'
        return f"""spec: 1
name: gen 1d
element: {elem}
threads: {t}
sizes: {{N: {{min: 1, max: {hi}}}}}
{assume}
grid: ["{grid}"]
tensors:
  x: {{memory: global, layout: "N:1"}}
  y: {{memory: global, layout: "N:1"}}
stages:
  - copy:
      src: {{tensor: x, tile: [{T}], at: [bx], {part}}}
      dst: {{tensor: y, tile: [{T}], at: [bx], {part}}}
      predicate: {pred}
expect: {{transform: copy}}
"""
    a, b = rng.choice([(4, 4), (4, 8), (8, 4), (8, 8), (2, 16), (16, 2)])
    hiM, hiN = rng.randint(a, 3 * a + 3), rng.randint(b, 3 * b + 3)
    smem = rng.random() < 0.5
    gx = rng.choice(["ceil_div(M, {a})", "ceil_div(M, {a})", "M / {a}"]).format(a=a)
    gy = rng.choice(["ceil_div(N, {b})", "ceil_div(N, {b})", "N / {b} + 1"]).format(b=b)
    thr_src = rng.choice([f"({a},{b}):({b},1)", f"({a},{b}):(1,{a})"])
    thr_dst = rng.choice([f"({b},{a}):({a},1)", f"({b},{a}):(1,{b})"])
    if smem:
        body = f"""  s: {{memory: shared, layout: "({a},{b}):({b},1)"}}
  st: {{memory: shared, layout: "({b},{a}):(1,{b})", alias: s}}
stages:
  - copy:
      src: {{tensor: x, tile: [{a}, {b}], at: [bx, by], threads: "{thr_src}"}}
      dst: {{tensor: s, threads: "{thr_src}"}}
      predicate: {pred}
  - barrier
  - copy:
      src: {{tensor: st, threads: "{thr_dst}"}}
      dst: {{tensor: y, tile: [{b}, {a}], at: [by, bx], threads: "{thr_dst}"}}
      predicate: {pred}
"""
    else:
        body = f"""stages:
  - copy:
      src: {{tensor: x, tile: [{a}, {b}], at: [bx, by], threads: "{thr_src}"}}
      dst: {{tensor: y, tile: [{b}, {a}], at: [by, bx], threads: "({b},{a}):(1,{b})"}}
      predicate: {pred}
"""
    if not smem and thr_src != f"({a},{b}):(1,{a})":
        body = body.replace(f'threads: "({b},{a}):(1,{b})"', f'threads: "({b},{a}):({a},1)"')
    return f"""spec: 1
name: gen 2d
element: {elem}
threads: {a * b}
sizes: {{M: {{min: 1, max: {hiM}}}, N: {{min: 1, max: {hiN}}}}}
grid: ["{gx}", "{gy}"]
tensors:
  x: {{memory: global, layout: "(M,N):(N,1)"}}
  y: {{memory: global, layout: "(N,M):(M,1)"}}
{body}expect: {{transform: transpose}}
"""


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
        proof = {p.property: p for p in prove_loaded(loaded, 60).properties}
    except SpecError:  # invalid at a sample (e.g. a 0-block grid): not a case of agreement
        return [], Counter({"invalid spec": 1})
    counts: Counter[str] = Counter(f"{k}:{p.status}" for k, p in proof.items())
    bad: list[str] = []
    tried = _sizes(loaded, rng, k)
    for prop, p in proof.items():
        if prop not in CHECKS:
            continue
        if p.status == "REFUTED":
            assert p.sizes is not None
            run = verify_spec(loaded, sizes=p.sizes)[0]
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
    return bad, counts


def main(n: int, seed: int) -> int:
    rng = random.Random(seed)
    total: Counter[str] = Counter()
    bad_specs = 0
    t0 = time.perf_counter()
    for i in range(n):
        text = gen_spec(rng)
        bad, counts = check_one(text, rng)
        total += counts
        if bad:
            bad_specs += 1
            print(f"DISAGREEMENT in spec {i}:\n{text}\n" + "\n".join(bad), flush=True)
        if (i + 1) % 100 == 0:
            print(f"[{time.perf_counter() - t0:7.1f}s] {i + 1} specs, {bad_specs} with disagreements", flush=True)
    print(f"{n} specs (seed {seed}) in {time.perf_counter() - t0:.1f} s: {bad_specs} with disagreements")
    for k, v in sorted(total.items()):
        print(f"  {k}: {v}")
    return 1 if bad_specs else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100, int(sys.argv[2]) if len(sys.argv) > 2 else 1))
