"""threadmap, the CuTe DSL and the C++ headers on the same random CuTe constructions, the
header refereeing (``tests/support/differential.py`` has the harness; the full-size run is
``benchmarks/bench_dsl_differential.py``; ``docs/dsl-differential.md`` the results).

The suite's run is small: a seeded draw of cases evaluated by threadmap and the DSL; the
header referees every case where the two differ or either refuses (at most a few of each
kind and way of differing, the rest of a class being alike) and a seeded sample of the
others.  It asserts that

* threadmap agrees with the header on every refereed case (a disagreement there is a
  threadmap bug);
* every way the DSL differs from the header, and every refusal of the DSL, is one already
  recorded in ``differential_regressions.json`` and written up in ``docs/dsl-reports.md``;
* the recorded regression cases still come out as recorded: threadmap as the header, the
  DSL as the header or as it was recorded (a DSL that now agrees is reported, not failed).
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cutlass.cute", reason="the CuTe DSL (nvidia-cutlass-dsl) is not installed")

from tests.support import differential as D  # noqa: E402
from tests.support.cxx_oracle import require_oracle  # noqa: E402

REGRESSIONS = Path(__file__).with_name("differential_regressions.json")
SEED = 20260602
N_CASES = 2000
#: agreeing cases the header referees anyway, and the disputed cases per kind and class
SAMPLE, CAP = 80, 2
#: the suite's mix: the full run's, with the constructions the header takes longest over
#: (a tiled copy about 0.35 CPU-s, a tiled MMA about 1 CPU-s) rarer
SUITE_WEIGHTS = {**D.WEIGHTS, "tiled_copy": 0.4, "tiled_mma": 0.15}


def regressions() -> list[dict[str, Any]]:
    return json.loads(REGRESSIONS.read_text())["cases"]


def known_classes() -> set[tuple[str, str, str, str]]:
    return {(e["kind"], e["side"], e["nature"], e["detail"]) for e in regressions() if e["side"] == "dsl"}


def _show(f: D.Finding) -> str:
    return (f"{f.case.text()}: {f.field} {f.nature} {f.detail}: got {D.wire_str(f.got) if f.got else f.got}, "
            f"the header {D.wire_str(f.header) if f.header else f.header}")


def test_small_differential_run() -> None:
    """One test, not a module fixture shared by several: under xdist each worker would draw
    and run the DSL again."""
    require_oracle()
    run = D.run(N_CASES, SEED, weights=SUITE_WEIGHTS, referee_sample=SAMPLE, referee_cap=CAP)

    # threadmap agrees with the header on every refereed case
    bad = [_show(f) for f in run.findings if f.side == "threadmap"]
    assert not bad, "threadmap differs from the C++ header:\n" + "\n".join(bad[:10])
    assert not run.undecided, f"the header's answer could not be read: {run.undecided[:3]}"

    # the DSL differs, and refuses, only in the recorded ways
    known = known_classes()
    new = [_show(f) for f in run.findings if f.side == "dsl" and f.key() not in known]
    assert not new, ("the DSL differs from the header in a way not recorded in "
                     f"{REGRESSIONS.name} (write it up in docs/dsl-reports.md):\n" + "\n".join(new[:10]))
    known_ref = {(e["kind"], e["detail"]) for e in regressions() if e["nature"] == "refusal"}
    assert set(run.refusals) <= known_ref, f"new DSL refusals: {sorted(set(run.refusals) - known_ref)}"

    # not vacuous: every kind drawn, the sample refereed, the DSL answering most cases
    kinds = Counter(c.kind for c in run.cases)
    assert len(run.cases) == N_CASES and set(kinds) == set(D.KINDS), kinds
    assert run.refereed >= SAMPLE
    answered = sum(1 for c in run.cases if "fields" in run.dsl.get(c.id, {}))
    assert answered >= 0.9 * N_CASES


def test_recorded_regressions_replay() -> None:
    require_oracle()
    entries = regressions()
    cases = {e["id"]: D.Case(e["kind"], e["args"]) for e in entries}
    rep = D.run(0, SEED, cases=list(cases.values()))
    assert not [f for f in rep.findings if f.side == "threadmap"], \
        [_show(f) for f in rep.findings if f.side == "threadmap"]
    fixed = []
    for e in entries:
        cid = D.Case(e["kind"], e["args"]).id
        header = rep.cxx[cid]
        want = e["header"]
        if want is None:
            assert "refused" in header, f"{e['text']}: the header no longer rejects it"
        else:
            f = e["field"] or next(iter(D.KINDS[e["kind"]].fields))
            assert header.get("fields", {}).get(f) == want, f"{e['text']}: the header's {f} changed"
        if e["side"] != "dsl":
            continue  # threadmap's own cases: checked above (no threadmap finding at all)
        now = [f for f in rep.findings if f.case.id == cid and f.side == "dsl" and f.field == e["field"]]
        dsl = rep.dsl.get(cid, {})
        if e["nature"] == "refusal":
            if "fields" in dsl:
                fixed.append(e["text"])
            else:
                assert dsl.get("refused") == e["detail"], f"{e['text']}: refused otherwise: {dsl}"
        elif not now:
            fixed.append(e["text"])
        else:
            assert (now[0].nature, now[0].detail) == (e["nature"], e["detail"]), _show(now[0])
            if e["nature"] in ("form", "function", "value"):
                assert dsl["fields"][e["field"]] == e["dsl"]["fields"][e["field"]], \
                    f"{e['text']}: the DSL gives another wrong answer"
    if fixed:
        warnings.warn(f"the DSL now agrees with the header on {len(fixed)} recorded case(s), e.g. {fixed[0]}; "
                      f"update {REGRESSIONS.name} and docs/dsl-reports.md", stacklevel=1)
