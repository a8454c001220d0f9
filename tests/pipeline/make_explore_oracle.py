"""Record what the pipeline explorer finds, as the oracle ``test_explore_oracle.py`` compares with.

    PYTHONPATH=. python3 tests/pipeline/make_explore_oracle.py [OUT.json] [--full] [--extra PROTOCOLS.json]

The protocols: every spec of ``specs/`` with a ``pipeline:`` (bound at its sizes, as ``verify``
binds it) and variants of the protocols of ``test_explore.py`` (each hazard, stages, cluster).
For each, the calls of :func:`calls` (``explore`` of every trip count at once and of fixed
counts, with and without the landing order, cut short by a state limit, and ``prove_rounds``)
and their results: the findings (kind, where, message, witness with its events) and the counts
(states, finished runs, pruned, truncated).  ``--full``: every combination of the variants'
parameters and more calls; ``--extra`` adds protocols given by their ``repr`` (a JSON object
whose keys are reprs, as a run of the test suite recording every protocol explored gives).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.pipeline.test_explore import epilogue, multistage, ws  # noqa: E402
from threadmap.pipeline import Block, Exploration, Op, Protocol, Role, explore, prove_rounds  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parent / "data" / "explore_oracle.json"


def spec_protocols() -> list[tuple[str, Protocol]]:
    """The protocol of each spec with a pipeline, as ``verify`` explores it (its first size
    environment)."""
    import threadmap.verify.pipeline as vp
    from threadmap.api import verify_spec

    got: list[Protocol] = []
    real = vp.explore

    def capture(p: Protocol, k: int | None, **kw: Any) -> Exploration:
        got.append(p)
        return real(p, k, **kw)

    out: list[tuple[str, Protocol]] = []
    vp.explore = capture  # type: ignore[assignment]
    try:
        for path in sorted(ROOT.glob("specs/**/*.yaml")):
            if "\npipeline:" not in path.read_text():
                continue
            got.clear()
            vp.forget_explorations()
            verify_spec(path)
            for p in {repr(p): p for p in got}.values():
                out.append((path.relative_to(ROOT).as_posix(), p))
    finally:
        vp.explore = real  # type: ignore[assignment]
        vp.forget_explorations()
    return out


def multicast(stages: int = 2, mask: int = 0b11) -> Protocol:
    """:func:`ws` on a 2x1 cluster, B multicast to both CTAs, released in both."""
    p = ws(stages=stages, tx=32768)
    prod = p.roles[0]
    ops = list(prod.blocks[0].ops)
    ops[3] = replace(ops[3], multicast=mask)
    cons = []
    for r in p.roles[1:]:
        blocks = [replace(b, ops=tuple(replace(o, ctas="all") if o.kind == "arrive" else o for o in b.ops))
                  for b in r.blocks]
        cons.append(replace(r, blocks=tuple(blocks)))
    return replace(p, roles=(replace(prod, blocks=(replace(prod.blocks[0], ops=tuple(ops)),)), *cons), cluster_size=2,
                   barriers={"full": 1, "empty": 512})


def tmem(wait: bool = True) -> Protocol:
    """A Blackwell epilogue role loading TMEM into registers and using them."""
    ops = (Op("tmem_load", fragment="acc", where=("e", 0)), *((Op("tmem_wait_ld"),) if wait else ()),
           Op("use", fragment="acc", where=("e", 1)))
    return Protocol(2, (Role("epi", 0, 3, (Block(ops, trip=True),)),))


def variant_protocols(full: bool = False) -> list[tuple[str, Protocol]]:
    """Variants of the protocols of ``test_explore.py``: each parameter away from the library's
    value one at a time (``full``: every combination)."""
    out: list[tuple[str, Protocol]] = []
    for s in (1, 2, 3):
        for cp in (0, 1):
            for pp in (0, 1):
                for tx in (32768, 32784, 16384):
                    for empty in (256, 257, 128):
                        for early in (False, True):
                            args = (s, cp, pp, tx, empty, early)
                            if full or sum(x != y for x, y in zip(args, (2, 0, 1, 32768, 256, False))) <= 1:
                                out.append((f"ws{args}", ws(*args)))
    for s in (2, 3, 4):
        for ahead in (1, 2, 3):
            for wait in (0, 1, 2):
                for sync in (True, False):
                    args2 = (s, ahead, wait, sync)
                    if full or sum(x != y for x, y in zip(args2, (3, 2, 1, True))) <= 1:
                        out.append((f"multistage{args2}", multistage(*args2)))
    for fence in (True, False):
        for wait in (True, False):
            out.append((f"epilogue({fence}, {wait})", epilogue(fence, wait)))
    # (the 2-CTA cluster's fixed trip counts are large: the spec's own protocol stands for it)
    out += [("multicast(2)", multicast(2))] if full else []
    out += [("multicast(2, 0b111)", multicast(2, 0b111)), ("tmem()", tmem()), ("tmem(False)", tmem(False))]
    return out


def calls(p: Protocol, full: bool = False) -> list[tuple[Any, ...]]:
    """The calls recorded for ``p``: ("explore", trip count, fifo, max_states) and
    ("prove", kmin, kmax); ``full``: more fixed trip counts and ranges."""
    period = 2 * p.stages
    ks = sorted({0, 1, 2, 3, 5, period + 1, 2 * period + p.max_lag + 1} if full else
                {0, 1, 2 * period + p.max_lag + 1})
    out: list[tuple[Any, ...]] = [("explore", None, True, 300_000), ("explore", None, True, 300)]
    out += [("explore", k, True, 300_000) for k in ks]
    out += [("explore", 1, False, 20_000), ("explore", None, False, 20_000)]
    out += [("prove", 1, 40), ("prove", 0, 3)] + ([("prove", 2, 2 * period + 3)] if full else [])
    return out


def result(e: Exploration) -> dict[str, Any]:
    r = {"iterations": e.iterations, "states": e.states, "finished_runs": e.finished_runs, "pruned": e.pruned,
         "truncated": e.truncated,
         "findings": [{"kind": f.kind, "where": f.where, "message": f.message, "witness": f.witness}
                      for f in e.findings]}
    return json.loads(json.dumps(r))  # tuples as lists, as the file holds them


def run(p: Protocol, call: tuple[Any, ...]) -> dict[str, Any]:
    if call[0] == "prove":
        return result(prove_rounds(p, call[1], call[2]))
    return result(explore(p, call[1], fifo=call[2], max_states=call[3]))


def record(name: str, p: Protocol, full: bool = False) -> dict[str, Any]:
    return {"name": name, "protocol": repr(p),
            "runs": [{"call": list(c), "result": run(p, c)} for c in calls(p, full)]}


def evaluate(text: str) -> Protocol:
    """A protocol from its ``repr``."""
    p = eval(text, {"Protocol": Protocol, "Role": Role, "Block": Block, "Op": Op})  # noqa: S307
    assert isinstance(p, Protocol)
    return p


def main(argv: list[str]) -> None:
    full = "--full" in argv
    out = Path(argv[0]) if argv and not argv[0].startswith("--") else DEFAULT_OUT
    protocols = spec_protocols() + variant_protocols(full)
    if "--extra" in argv:
        extra = json.loads(Path(argv[argv.index("--extra") + 1]).read_text())
        protocols += [(f"extra {i}", evaluate(t)) for i, t in enumerate(extra)]
    first: dict[str, tuple[str, Protocol]] = {}
    for name, p in protocols:
        first.setdefault(repr(p), (name, p))
    cases = []
    for i, (name, p) in enumerate(first.values()):
        cases.append(record(name, p, full))
        print(f"{i + 1}/{len(first)} {name}", file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    note = ("what threadmap.pipeline.explore found before its state encoding and the ring's rotation "
            "symmetry (commit ec75e2b), recorded by tests/pipeline/make_explore_oracle.py")
    out.write_text(json.dumps({"note": note, "cases": cases}, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
