"""Predicates check: off-by-one planted bug, straddling vectors and the weakest precondition."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from threadmap.verify import build_table, check_grid, predicates_definition, weakest_precondition

T = 16


def check_predicates(t, size_names=None):  # noqa: ANN001, ANN201
    return check_grid(t, size_names=size_names)[1]


def rows_of_vectors(shape: tuple[int, int], pred: object, vec: int = 4):
    """4 blocks of 16x16 tiles: thread t = row, 16 // vec vectors of vec along the columns."""
    return build_table(lambda b, t, s, ln: ((b % 2) * T + t, (b // 2) * T + s * vec + ln), threads=T,
                       steps=T // vec, vec=vec, shape=shape, blocks=4, pred=pred)  # type: ignore[arg-type]


def test_divisible_extents_pass() -> None:
    r = check_predicates(rows_of_vectors((32, 32), "vector_all"))
    assert r.status == "PASS" and r.summary["straddling"] == 0 and r.summary["precondition"] == []


def test_per_element_bounds_pass_on_ragged_extents() -> None:
    r = check_predicates(rows_of_vectors((30, 30), "bounds"), size_names={0: "M", 1: "N"})
    assert r.status == "PASS" and r.summary["lost"] == 0 and r.summary["out_of_bounds"] == 0
    assert r.summary["straddling"] == 30          # rows 0..29 each straddle at column 28..31


def test_planted_off_by_one_predicate() -> None:
    # pred uses row <= M instead of row < M: row 30 of the bottom tiles is accessed
    def pred(b, t, s, ln):  # noqa: ANN001, ANN202
        return ((b % 2) * T + t <= 30) & ((b // 2) * T + s * 4 + ln < 30)

    r = check_predicates(rows_of_vectors((30, 30), pred))
    assert r.status == "FAIL"
    assert r.summary["out_of_bounds"] == 30 and r.summary["lost"] == 0
    f = next(f for f in r.findings if f.kind == "out_of_bounds")
    assert f.witness["coordinate"] == (30, 0)
    assert (f.witness["block"], f.witness["thread"], f.witness["value"]) == (1, 14, 0)
    assert f.witness["predicate"] is True


def test_vector_masked_whole_loses_elements_with_precondition() -> None:
    r = check_predicates(rows_of_vectors((30, 30), "vector_all"), size_names={0: "M", 1: "N"})
    assert r.status == "FAIL"
    assert r.summary["lost"] == 60 and r.summary["straddling_masked"] == 30
    assert r.summary["precondition"] == ["N % 4 == 0"]
    s = r.findings[0]
    assert s.kind == "straddle" and "N % 4 == 0" in s.message
    assert s.witness["coordinate"] == (0, 28) and s.witness["block"] == 2
    lost = next(f for f in r.findings if f.kind == "lost")
    assert lost.witness["coordinate"] == (0, 28)
    ma = lost.witness["masked_access"]
    assert ma["block"] == 2 and ma["thread"] == 0 and ma["step"] == 3 and ma["predicate"] is False


def test_vector_guard_on_first_lane_reads_out_of_bounds() -> None:
    r = check_predicates(rows_of_vectors((30, 30), "vector_first"), size_names={1: "N"})
    assert r.status == "FAIL" and r.summary["out_of_bounds"] == 60 and r.summary["lost"] == 0
    assert r.summary["precondition"] == ["N % 4 == 0"]


def test_precondition_residue_and_unnamed_mode() -> None:
    assert weakest_precondition(1, 4, 0, {1: "N"}) == "N % 4 == 0"
    assert weakest_precondition(0, 8, 2) == "extent[0] % 8 == 2"
    # vectors of 2 along mode 0 starting at odd rows: straddle unless M % 2 == 1
    t = build_table(lambda b, t, s, ln: (1 + t * 2 + ln, 0 * t), threads=8, steps=1, vec=2, shape=(6, 1),
                    pred="vector_all")
    r = check_predicates(t, size_names={0: "M"})
    assert r.summary["precondition"] == ["M % 2 == 1"]
    assert r.status == "FAIL"


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12),
       st.sampled_from(["bounds", "vector_all", "vector_first", "none"]))
def test_matches_definition(m: int, n: int, pk: str) -> None:
    t = build_table(lambda b, t, s, ln: (t, s * 4 + ln), threads=12, steps=3, vec=4, shape=(m, n),
                    pred=pk)  # type: ignore[arg-type]
    r = check_predicates(t)
    real = t.valid
    d = predicates_definition(((tuple(int(x) for x in t.coord[i]), bool(t.pred[i])) for i in range(len(t))
                               if real is None or real[i]), (m, n))
    assert (r.status == "PASS") == d["ok"]
    assert r.summary["out_of_bounds"] == len(d["out_of_bounds"])
    assert r.summary["lost"] == len(d["lost"])
    if d["lost"] or d["out_of_bounds"]:
        straddles = n % 4 != 0
        assert (r.summary["precondition"] == ["extent[1] % 4 == 0"]) == straddles
