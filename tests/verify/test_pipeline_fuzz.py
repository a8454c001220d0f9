"""The whole pipeline under generated and mutated specs: load -> model -> simulate -> every check,
in both modes.  Properties:

* nothing but a located :class:`SpecError` (or a refusal of too much work) ever escapes;
* the default run (tiling argument, forced even on small grids) and the exhaustive run agree on
  every count of every check;
* every finding carries a witness, and every reported count is a non-negative integer.

Set ``THREADMAP_HYPOTHESIS=explore`` to search new examples instead of the derandomized ones.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import threadmap.api as api
import threadmap.verify.run as run_mod
from tests.spec.test_spec_fuzz import mutated
from tests.support.timeouts import time_limit
from threadmap.errors import SpecError
from threadmap.report.model import SpecRun
from threadmap.spec.load import loads_spec
from threadmap.verify import WorkTooLarge

PIPELINE = settings(max_examples=120, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


@st.composite
def kernels(draw: st.DrawFn) -> dict[str, Any]:
    """A random copy kernel: global tile -> (registers | shared) -> global, with random thread
    layouts (some wrong), tiles, sizes (some ragged), predicates, element types and atoms."""
    elem = draw(st.sampled_from(["f32", "f16", "u8", "f64"]))
    tm, tn = draw(st.sampled_from([4, 8, 16])), draw(st.sampled_from([4, 8, 16, 32]))
    threads = draw(st.sampled_from([t for t in (16, 32, 48, 64, 128) if (tm * tn) % t == 0] or [tm * tn]))
    m = draw(st.integers(1, 5)) * tm + draw(st.sampled_from([0, 0, 1, tm - 1]))
    n = draw(st.integers(1, 5)) * tn + draw(st.sampled_from([0, 0, 2, tn - 1]))
    row_major = draw(st.booleans())
    x_layout = "(M,N):(N,1)" if row_major else "(M,N):(1,M)"
    y_layout = draw(st.sampled_from(["(M,N):(N,1)", "(M,N):(1,M)", "(M,N,2):(N,1,0)"]))
    # a thread layout over the tile: (a, b) threads, column- or row-major, sometimes a wrong stride
    a = draw(st.sampled_from([d for d in (1, 2, 4, 8, 16, 32) if tm % d == 0 and threads % d == 0]))
    b = threads // a
    stride = draw(st.sampled_from(["col", "row", "wrong"]))
    thr = {"col": f"({a},{b}):(1,{a})", "row": f"({a},{b}):({b},1)", "wrong": f"({a},{b}):(1,{max(1, a // 2)})"}[stride]
    predicate = draw(st.sampled_from(["none", "bounds", "bounds", "vector"]))
    grid = draw(st.sampled_from([[f"ceil_div(M, {tm})", f"ceil_div(N, {tn})"], [f"M / {tm}", f"N / {tn}"],
                                 [f"ceil_div(M, {tm})", f"ceil_div(N, {tn})", 2]]))
    at = draw(st.sampled_from([["bx", "by"], ["bx", "by + 0"], ["by", "bx"]]))
    use_smem = draw(st.booleans())
    tiled = draw(st.booleans())
    src: dict[str, Any] = {"tensor": "x", "tile": [tm, tn], "at": at}
    if tiled:
        atom = draw(st.sampled_from(["UniversalCopy<uint8_t>", "UniversalCopy<uint16_t>", "UniversalCopy<uint32_t>",
                                     "AutoVectorizingCopy"]))
        vals = tm * tn // threads
        src["tiled_copy"] = {"threads": f"({a},{b}):({b},1)" if stride == "row" else f"({a},{b}):(1,{a})",
                             "values": f"({vals},1):(1,{vals})", "atom": atom}
    else:
        src["threads"] = thr
    dst_y: dict[str, Any] = {"tensor": "y", "tile": [tm, tn] + ([1] if y_layout.count(",") == 4 else []),
                             "at": at + (["bz"] if y_layout.count(",") == 4 else []),
                             "threads": f"({a},{b}):(1,{a})" if y_layout.count(",") != 4 else f"({a},{b},1):(1,{a},0)"}
    stages: list[Any] = []
    if use_smem:
        smem_side = {"tensor": "s", "threads": f"({a},{b}):(1,{a})"}
        stages += [{"copy": {"src": src, "dst": smem_side, "predicate": predicate}},
                   "barrier",
                   {"copy": {"src": {"tensor": "s", "threads": f"({a},{b}):(1,{a})"}, "dst": dst_y,
                             "predicate": predicate}}]
    else:
        stages += [{"copy": {"src": src, "dst": {"registers": "r"}, "predicate": predicate}},
                   {"copy": {"src": {"registers": "r"}, "dst": dst_y, "predicate": predicate}}]
    smem_layout = draw(st.sampled_from([f"({tm},{tn}):(1,{tm})", f"({tm},{tn}):({tn},1)",
                                        f"Sw<1,0,1> o ({tm},{tn}):({tn},1)" if tn >= 4 else f"({tm},{tn}):(1,{tm})"]))
    return {"spec": 1, "name": "fuzzed kernel", "element": elem, "threads": threads, "sizes": {"M": m, "N": n},
            "grid": grid, "tensors": {"x": {"memory": "global", "layout": x_layout},
                                      "y": {"memory": "global", "layout": y_layout},
                                      "s": {"memory": "shared", "layout": smem_layout}},
            "stages": stages, "expect": {"transform": "copy"}}


def counts(r: SpecRun) -> dict[Any, Any]:
    out = {}
    for x in r.results:
        s = x.summary.model_dump()
        s.pop("worst", None)
        out[(x.check, x.stage, x.side)] = (s, x.status, x.total_findings)
    return out


def sane(r: SpecRun) -> None:
    for x in r.results:
        for k, v in x.summary.model_dump().items():
            if isinstance(v, int) and not isinstance(v, bool):
                assert v >= 0, (x.check, k, v)
        assert x.total_findings >= len(x.findings)
        for f in x.findings:
            assert f.message and isinstance(f.witness, dict)


def verify_both(text: str) -> None:
    try:
        loaded = loads_spec(text, "yaml", "fuzz.yaml")
        a = api.verify_spec(loaded)
        b = api.verify_spec(loaded, exhaustive=True)
    except (SpecError, WorkTooLarge):
        return
    for ra, rb in zip(a, b, strict=True):
        sane(ra)
        sane(rb)
        assert counts(ra) == counts(rb), (ra.totals, ra.notes)


@pytest.fixture(autouse=True)
def _tiling_on_small_grids(monkeypatch: pytest.MonkeyPatch) -> None:
    # the default mode enumerates small grids; force the argument so that it meets every case
    monkeypatch.setattr(run_mod, "SMALL_ROWS", 0)


@PIPELINE
@given(kernels())
def test_generated_kernels_agree_in_both_modes(spec: dict[str, Any]) -> None:
    with time_limit(60, "verify"):
        verify_both(yaml.safe_dump(spec, sort_keys=False))


@PIPELINE
@given(kernels(), st.data())
def test_mutated_kernels_fail_cleanly(spec: dict[str, Any], data: st.DataObject) -> None:
    d = copy.deepcopy(spec)
    # one random edit of a leaf: a number, an expression or a layout replaced
    leaf = data.draw(st.sampled_from(["threads", "sizes", "grid", "stage", "tensor"]))
    if leaf == "threads":
        d["threads"] = data.draw(st.sampled_from([1, 33, 1024, 1025, 0, "M", "M * N"]))
    elif leaf == "sizes":
        d["sizes"]["N"] = data.draw(st.sampled_from([1, 2, 3, 62, 4096, 2**31, {"min": 1, "max": 70}]))
    elif leaf == "grid":
        d["grid"] = data.draw(st.sampled_from([[1], [0], ["M"], [65536, 1], [1, 70000], ["M / 0"]]))
    elif leaf == "stage":
        st0 = d["stages"][0]["copy"]["src"]
        st0["at"] = data.draw(st.sampled_from([["bx * 2", "by"], ["bx % 2", "by"], ["0", "0"], ["bx"], ["bz", "by"],
                                               ["max(bx, by)", "by"], ["bx - 1", "by"]]))
    else:
        d["tensors"]["x"]["layout"] = data.draw(st.sampled_from(["(M,N):(N,0)", "(M,N):(-1,M)", "((2,M),N):((1,2),M)",
                                                                 "Sw<2,0,2> o (M,N):(N,1)", "(M,N):(2*N,1)"]))
    with time_limit(60, "verify"):
        verify_both(yaml.safe_dump(d, sort_keys=False))


@settings(max_examples=80, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(mutated())
def test_mutated_library_spec_through_the_pipeline(data: Any) -> None:
    with time_limit(60, "verify"):
        try:
            loaded = loads_spec(yaml.safe_dump(data, sort_keys=False), "yaml", "fuzz.yaml")
            for r in api.verify_spec(loaded):
                sane(r)
        except (SpecError, WorkTooLarge):
            pass
