"""The explorer against what it found before its state encoding and the ring's rotation symmetry:
``data/explore_oracle.json``, recorded from that earlier implementation (commit ec75e2b) by
``make_explore_oracle.py`` -- every spec with a pipeline and variants of the protocols of
``test_explore.py``.  Without the rotation every result is the same (the findings with their
messages, witnesses and events; the states, finished runs, pruned and truncated); with it the
findings are the same, from as many states or fewer.  And the rotation's law, state by state."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.make_explore_oracle import evaluate, multicast, run
from tests.pipeline.test_explore import epilogue, multistage, ws
from threadmap.pipeline import Op, Protocol

E = sys.modules["threadmap.pipeline.explore"]
CASES = json.loads((Path(__file__).parent / "data" / "explore_oracle.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_explorer_finds_what_it_found(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    p = evaluate(case["protocol"])
    for r in case["runs"]:
        call, want = tuple(r["call"]), r["result"]
        monkeypatch.setattr(E, "ROTATE", False)
        assert run(p, call) == want, call
        monkeypatch.setattr(E, "ROTATE", True)
        got = run(p, call)
        assert got["findings"] == want["findings"], call
        if call[0] == "explore" and call[1] is not None:
            assert got == want, call  # a fixed trip count has no symmetry of the ring
        assert got["states"] <= want["states"], call
        assert (got["pruned"] > 0) == (want["pruned"] > 0), call
        assert got["truncated"] <= want["truncated"], call  # fewer states: a limit met no more


def _outcome(m: Any, s: Any, base: int, step: bool, arg: int) -> tuple[Any, ...]:
    """What a move does, as the search sees it: the finding, or the successor and its event.
    The successor in absolute form: its rounds from 0 (base 0), its stages physical, its phase
    counts in normal form, interchangeable roles in order."""
    try:
        n, nbase, ev = m.run(s, base, arg, 0) if step else m.land(s, base, arg, 0)
    except E._Found as f:
        return ("found", f.kind, f.op.where if f.op is not None else (), f.message, f.witness)
    absolute = m.rotate(n, -nbase)
    return ("state", m.key((*absolute[:E.WARM], False)), m.text(ev))


def _producer(p: Protocol, ops: tuple[Op, ...]) -> Protocol:
    """``p`` with its producer (its first role, one block) running ``ops``."""
    prod = p.roles[0]
    return replace(p, roles=(replace(prod, blocks=(replace(prod.blocks[0], ops=ops),)), *p.roles[1:]))


_OPS = ws().roles[0].blocks[0].ops
#: protocols whose hazards show in the ring's steady state too (not only in its first rounds)
LATE = {
    # a stray TMA of B at the top of each trip: B's stage is overwritten while read, or read landed
    # but not observed
    "stray-tma": _producer(ws(stages=3), (replace(_OPS[3], where=("p", 9)), *_OPS)),
    # B copied two trips late on the full barrier of its own trip: transaction counts go wrong
    "late-tma": _producer(ws(stages=4), (*_OPS[:3], replace(_OPS[3], ahead=-2))),
    # the expected bytes twice: one arrival too many
    "double-expect": _producer(ws(stages=3), (*_OPS, replace(_OPS[1], where=("p", 9)))),
}


@pytest.mark.parametrize("p", [ws(stages=2), ws(stages=3, empty=128), ws(empty=257), ws(stages=2, release_early=True),
                               multicast(2), multistage(stages=3), epilogue(fence=False), *LATE.values()],
                         ids=["ws2", "ws3-128", "ws-257", "ws2-early", "multicast", "multistage", "epilogue", *LATE])
def test_a_rotated_state_runs_as_the_state_it_came_from(p: Protocol, monkeypatch: pytest.MonkeyPatch) -> None:
    """Law of the rotation (``_Machine.normalize``): a state of the every-count search in the
    ring's steady state, rotated by ``r`` (its base ``r`` later), has the same moves, and each
    reaches the same state (and event) or a finding of the same kind at the same operation as
    from the state it came from.  Rotated to its least position, as the search does, the
    findings' messages and witnesses are the same too (their phase counts and the rounds some
    of them count from the period's start)."""
    monkeypatch.setattr(E, "ROTATE", False)  # the states as the whole-period form has them
    m = E._Machine(p, None, True)
    s0, b0 = m.normalize(m.state0, 0)
    todo, seen, checked = [(s0, b0)], {m.key(s0)}, 0
    while todo and len(seen) < 400:
        s, base = todo.pop()
        m.base = base
        moves = m.moves(s)
        steady = all(not x[E.I_PC] or m.blocks[ri][x[E.I_PC][0]][3] for ri, x in enumerate(s[E.INST]))
        low = min((m.blocks[ri][x[E.I_PC][0]][0] + x[E.I_PC][1] for ri, x in enumerate(s[E.INST]) if x[E.I_PC]),
                  default=0)
        if steady and base + low >= m.reach:
            for r in sorted({low, 1, 2, p.stages + 1, 2 * p.stages} - {0}):
                t, tb = m.rotate(s, r, True), base + r
                m.base = tb
                rotated = m.moves(t)
                assert [(x[0], x[1]) for x in rotated] == [(x[0], x[1]) for x in moves]
                for (step, arg, a), (_, _, b) in zip(moves, rotated):
                    want, got = _outcome(m, a, base, step, arg), _outcome(m, b, tb, step, arg)
                    assert got == want if r == low or want[0] == "state" else got[:3] == want[:3]
                    checked += 1
                if not moves and r == low:
                    fa, fb = m.deadlock(s, base), m.deadlock(t, tb)
                    assert (fa.kind, fa.message, fa.witness) == (fb.kind, fb.message, fb.witness)
        for step, arg, a in moves:
            try:
                n, nb, _ = m.run(a, base, arg, 0) if step else m.land(a, base, arg, 0)
            except E._Found:
                continue
            if m.key(n) not in seen:
                seen.add(m.key(n))
                todo.append((n, nb))
    assert checked > 0
