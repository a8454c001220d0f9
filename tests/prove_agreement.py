"""Agreement of ``threadmap prove`` with ``threadmap verify`` on hypothesis-generated specs.

A generated spec (:func:`specs`, a hypothesis strategy) is one of

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

UNKNOWN properties are counted, never agreements.  ``python -m tests.prove_agreement N SEED``
runs N specs and prints the counts (the CI test runs a few; see tests/test_prove.py).
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

#: the checks of ``verify`` whose failure refutes each property (aliasing is judged apart)
CHECKS = {**REFUTING_CHECKS}
BITS = {"f32": 32, "f16": 16, "u8": 8}


def _range(hi: int, mult: int = 1) -> str:
    """``{min: 1, max: hi}`` sampled at its largest value (a multiple of ``mult`` when one fits),
    where a floor grid still has a block."""
    top = hi - hi % mult if hi >= mult else hi
    return f"{{min: 1, max: {hi}, samples: [{top}]}}"


@st.composite
def _grid_1d(draw: Any, name: str, T: int) -> str:
    c = draw(st.integers(2, max(2, T - 1)))  # one block short only when N % T == T - c + 1
    return draw(st.sampled_from([
        "ceil_div({N}, {T})", "ceil_div({N}, {T})", "ceil_div({N}, {T})", "{N} / {T}", "{N} / {T} + 1",
        "ceil_div({N}, {T}) - (({N} % {T} + {c}) / {T}) * (1 - ({N} % {T} + {c1}) / {T})"])
    ).format(N=name, T=T, c=c, c1=c - 1)


@st.composite
def _copy_1d(draw: Any, elem: str, pred: str) -> str:
    bits = BITS[elem]
    v = draw(st.sampled_from([v for v in (1, 2, 4) if v * bits <= 128]))
    t = draw(st.sampled_from([1, 2, 4, 8, 16]))
    T = t * v
    hi = draw(st.integers(T, 3 * T + 5))
    grid = draw(_grid_1d("N", T))
    m = draw(st.sampled_from([2, 4, T]))
    assume = draw(st.sampled_from(["", "", f'assume: ["N % {m} == 0"]']))
    rng_n = _range(hi, m if assume else 1)
    align = draw(st.sampled_from([4, 16, 256]))
    # v contiguous values a thread, one v-wide instruction: a vector straddles N unless v | N
    part = f'tiled_copy: {{threads: "{t}:1", values: "{v}:1", atom: "UniversalCopy<uint{v * bits}_t>"}}'
    return f"""spec: 1
name: gen 1d
element: {elem}
threads: {t}
sizes: {{N: {rng_n}}}
{assume}
grid: ["{grid}"]
tensors:
  x: {{memory: global, layout: "N:1", align: {max(align, v * bits // 8)}}}
  y: {{memory: global, layout: "N:1"}}
stages:
  - copy:
      src: {{tensor: x, tile: [{T}], at: [bx], {part}}}
      dst: {{tensor: y, tile: [{T}], at: [bx], {part}}}
      predicate: {pred}
expect: {{transform: copy}}
"""


@st.composite
def _transpose(draw: Any, elem: str, pred: str) -> str:
    a, b = draw(st.sampled_from([(4, 4), (4, 8), (8, 4), (8, 8), (2, 16), (16, 2)]))
    hiM, hiN = draw(st.integers(a, 3 * a + 3)), draw(st.integers(b, 3 * b + 3))
    smem = draw(st.booleans())
    gx = draw(st.sampled_from(["ceil_div(M, {a})", "ceil_div(M, {a})", "M / {a}"])).format(a=a)
    gy = draw(st.sampled_from(["ceil_div(N, {b})", "ceil_div(N, {b})", "N / {b} + 1"])).format(b=b)
    thr_src = draw(st.sampled_from([f"({a},{b}):({b},1)", f"({a},{b}):(1,{a})"]))
    thr_dst = draw(st.sampled_from([f"({b},{a}):({a},1)", f"({b},{a}):(1,{b})"]))
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
        # the same thread moves (i, j) of x to (j, i) of y: the dst thread layout transposes the src's
        dst = f"({b},{a}):(1,{b})" if thr_src == f"({a},{b}):({b},1)" else f"({b},{a}):({a},1)"
        body = f"""stages:
  - copy:
      src: {{tensor: x, tile: [{a}, {b}], at: [bx, by], threads: "{thr_src}"}}
      dst: {{tensor: y, tile: [{b}, {a}], at: [by, bx], threads: "{dst}"}}
      predicate: {pred}
"""
    return f"""spec: 1
name: gen 2d
element: {elem}
threads: {a * b}
sizes: {{M: {_range(hiM)}, N: {_range(hiN)}}}
grid: ["{gx}", "{gy}"]
tensors:
  x: {{memory: global, layout: "(M,N):(N,1)"}}
  y: {{memory: global, layout: "(N,M):(M,1)"}}
{body}expect: {{transform: transpose}}
"""


@st.composite
def _tiled_copy_2d(draw: Any, elem: str, pred: str) -> str:
    bits = BITS[elem]
    row_major = draw(st.booleans())  # the global tensor: contiguous along N (row-major) or M
    tm, tn = draw(st.sampled_from([(2, 4), (4, 2), (4, 4), (2, 8), (8, 2), (4, 8), (8, 4)]))
    vmax = 128 // bits
    v = draw(st.sampled_from([x for x in (1, 2, 4) if x <= vmax]))
    vm, vn = (1, v) if row_major else (v, 1)
    BM, BN = tm * vm, tn * vn
    thr = draw(st.sampled_from([f"({tm},{tn}):({tn},1)", f"({tm},{tn}):(1,{tm})"]))
    val = f"({vm},{vn}):({vn},1)" if row_major else f"({vm},{vn}):(1,{vm})"
    atom = f"UniversalCopy<uint{v * bits}_t>"
    glay = "(M,N):(N,1)" if row_major else "(M,N):(1,M)"
    pad = draw(st.sampled_from([0, 0, 1, 2, 4]))
    kind = draw(st.sampled_from(["plain", "plain", "padded", "swizzled"]))
    if kind == "padded" and pad:
        slay = f"({BM},{BN}):({BN + pad},1)"
    elif kind == "swizzled":
        B, Mb, S = draw(st.sampled_from([(1, 0, 3), (2, 0, 3), (1, 1, 2), (2, 2, 2), (3, 0, 3)]))
        slay = f"Sw<{B},{Mb},{S}> o ({BM},{BN}):({BN},1)"
    else:
        slay = f"({BM},{BN}):({BN},1)" if draw(st.booleans()) else f"({BM},{BN}):(1,{BM})"
    hiM, hiN = draw(st.integers(BM, 3 * BM + 3)), draw(st.integers(BN, 3 * BN + 3))
    align = draw(st.sampled_from([4, 8, 16, 256]))
    mult = draw(st.sampled_from(["", "", f'assume: ["{"N" if row_major else "M"} % {v} == 0"]']))
    part = f'tiled_copy: {{threads: "{thr}", values: "{val}", atom: "{atom}"}}'
    return f"""spec: 1
name: gen tiled copy 2d
element: {elem}
threads: {tm * tn}
sizes: {{M: {_range(hiM, v if mult and not row_major else 1)}, N: {_range(hiN, v if mult and row_major else 1)}}}
{mult}
grid: ["{draw(_grid_1d("M", BM))}", "{draw(_grid_1d("N", BN))}"]
tensors:
  x: {{memory: global, layout: "{glay}", align: {max(align, bits // 8)}}}
  s: {{memory: shared, layout: "{slay}"}}
stages:
  - copy:
      src: {{tensor: x, tile: [{BM}, {BN}], at: [bx, by], {part}}}
      dst: {{tensor: s, {part}}}
      predicate: {pred}
"""


@st.composite
def _thread_map(draw: Any, elem: str, pred: str) -> str:
    bits = BITS[elem]
    raked = draw(st.booleans())
    epa = draw(st.sampled_from([x for x in (1, 2, 4, 8) if x * bits <= 128]))
    if raked:
        wc, ws = draw(st.sampled_from([(4, 8), (8, 4), (2, 16), (16, 2), (32, 1)]))
        C = wc * epa * draw(st.sampled_from([1, 2]))
        warps = draw(st.sampled_from([1, 2]))
        S = ws * warps * draw(st.sampled_from([1, 2]))
        threads = 32 * warps
        tm = (f"{{name: PitchLinearWarpRakedThreadMap, shape: [{C}, {S}], threads: {threads}, "
              f"warp_thread_arrangement: [{wc}, {ws}], elements_per_access: {epa}, contiguous_mode: 1}}")
    else:
        C = epa * draw(st.sampled_from([2, 4, 8]))
        per_row = C // epa
        threads = per_row * draw(st.sampled_from([1, 2, 4]))
        S = (threads // per_row) * draw(st.sampled_from([1, 2]))
        tm = (f"{{name: PitchLinearStripminedThreadMap, shape: [{C}, {S}], threads: {threads}, "
              f"elements_per_access: {epa}, contiguous_mode: 1}}")
    hiM, hiN = draw(st.integers(S, 3 * S + 2)), draw(st.integers(C, 3 * C + 2))
    mult = draw(st.sampled_from(["", "", f'assume: ["N % {epa} == 0"]']))
    return f"""spec: 1
name: gen thread map
element: {elem}
threads: {threads}
sizes: {{M: {_range(hiM)}, N: {_range(hiN, epa if mult else 1)}}}
{mult}
grid: ["{draw(_grid_1d("M", S))}", "ceil_div(N, {C})"]
tensors:
  A: {{memory: global, layout: "(M,N):(N,1)", align: {draw(st.sampled_from([16, 256]))}}}
stages:
  - copy:
      src: {{tensor: A, tile: [{S}, {C}], at: [bx, by], thread_map: {tm}}}
      dst: {{registers: frag}}
      predicate: {pred}
"""


@st.composite
def specs(draw: Any) -> str:
    """One random spec (YAML text) with size ranges."""
    elem = draw(st.sampled_from(list(BITS)))
    pred = draw(st.sampled_from(["none", "bounds", "vector", "vector"]))
    family = draw(st.sampled_from([_copy_1d, _transpose, _tiled_copy_2d, _thread_map]))
    return str(draw(family(elem, pred)))


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
    @given(specs(), st.randoms(use_true_random=False))
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
