"""Dataflow check: a 32x32 transpose through shared memory; planted missing barrier, race, wrong
transform; sub-word shared stores (f16, bf16, 8-bit) are not races."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import threadmap.api as api
from threadmap.verify import build_table, check_dataflow, dataflow_definition, register_table

T, M, N = 16, 32, 32


def transpose_stages(barrier: bool = True, smem_write: object = None):
    x = build_table(lambda b, t, s, ln: ((b % 2) * T + t % T, (b // 2) * T + t // T), threads=256, steps=1,
                    shape=(M, N), blocks=4, tensor="x")
    r_in, r_out = register_table(x, side="dst"), register_table(x, side="src")
    wr = smem_write or (lambda b, t, s, ln: (t % T, t // T))
    sA = build_table(wr, threads=256, steps=1, shape=(T, T), blocks=4,  # type: ignore[arg-type]
                     memory="shared", tensor="sA", buffer="smem", side="dst")
    sB = build_table(lambda b, t, s, ln: (t // T, t % T), threads=256, steps=1, shape=(T, T), blocks=4,
                     memory="shared", tensor="sB", buffer="smem")
    y = build_table(lambda b, t, s, ln: ((b // 2) * T + t % T, (b % 2) * T + t // T), threads=256, steps=1,
                    shape=(N, M), blocks=4, tensor="y", side="dst")
    st: list[object] = [(x, r_in), (r_out, sA)]
    if barrier:
        st.append("barrier")
    st.append((sB, y))
    return st


def rows(t):  # noqa: ANN001, ANN201
    return [{"block": int(t.block[i]), "thread": int(t.thread[i]), "value": int(t.value[i]),
             "memory": t.memory, "tensor": t.tensor, "buffer": t.buffer or t.tensor, "elem_bytes": t.elem_bytes,
             "coord": tuple(int(c) for c in t.coord[i]), "addr": int(t.addr[i]), "pred": bool(t.pred[i])}
            for i in range(len(t)) if t.valid is None or t.valid[i]]


def test_transpose_through_smem_passes() -> None:
    r = check_dataflow(transpose_stages(), "transpose")
    assert r.status == "PASS", [f.message for f in r.findings]
    assert r.summary["output_writes"] == 1024 and r.summary["moved"] == 3 * 1024
    assert (r.summary["input"], r.summary["output"]) == ("x", "y")


def test_wrong_transform_is_caught() -> None:
    r = check_dataflow(transpose_stages(), "copy")
    assert r.status == "FAIL" and r.summary["wrong_values"] == 1024 - 32   # only the diagonal is right
    f = r.findings[0]
    assert f.kind == "wrong_value" and f.witness["coordinate"] == (1, 0)
    assert f.witness["landed"] == (0, 1) and f.witness["expected"] == (1, 0)
    assert (f.witness["block"], f.witness["thread"]) == (0, 1)


def test_planted_missing_barrier_stale_read() -> None:
    r = check_dataflow(transpose_stages(barrier=False), "transpose")
    assert r.status == "FAIL"
    assert r.summary["stale_reads"] == 4 * (256 - 16)     # all but the diagonal read another thread's word
    f = next(f for f in r.findings if f.kind == "stale_read")
    assert f.witness["reader"]["thread"] == 1 and f.witness["writer"]["thread"] == 16
    assert f.witness["address"] == 4 and f.witness["writer"]["stage"] == 1
    assert r.summary["wrong_values"] == 4 * 240


@pytest.mark.parametrize("barrier", [False, True])
def test_planted_write_after_read(barrier: bool) -> None:
    # the buffer is refilled (the next tile) right after the transposed read: without a barrier
    # between them, every thread but the diagonal's overwrites a word another thread read
    st = transpose_stages()
    x, s_a = st[0][0], st[1][1]
    st += ["barrier"] * barrier + [(x, register_table(x, side="dst")), (register_table(x, side="src"), s_a)]
    r = check_dataflow(st, "transpose")
    assert r.summary["writes_after_reads"] == (0 if barrier else 4 * (256 - 16))
    assert r.status == ("PASS" if barrier else "FAIL")
    if not barrier:
        f = next(f for f in r.findings if f.kind == "write_after_read")
        # thread 1 writes sA(1, 0) (row-major: byte 64), which thread 16 read as sB(1, 0) in stage 3
        assert (f.witness["writer"]["thread"], f.witness["reader"]["thread"]) == (1, 16)
        assert f.witness["address"] == 64 and f.stage == 5 and f.witness["reader"]["stage"] == 3


def test_planted_write_race() -> None:
    # threads t and t+16 write the same smem element (wrong stride in the smem layout): 4 bytes each
    r = check_dataflow(transpose_stages(smem_write=lambda b, t, s, ln: (t % T, (t // T) // 2)), "transpose")
    assert r.status == "FAIL" and r.summary["races"] == 4 * 128 * 4
    f = next(f for f in r.findings if f.kind == "race")
    assert {f.witness["first"]["thread"], f.witness["second"]["thread"]} == {0, 16}
    assert f.witness["word"] == 0 and f.witness["block"] == 0
    assert r.summary["uninitialised_reads"] == 4 * 128


@pytest.mark.parametrize("elem_bytes", [2, 1])
def test_sub_word_stores_are_not_races(elem_bytes: int) -> None:
    # f16 / bf16 (2 bytes) or 8-bit elements: adjacent threads write adjacent bytes of one
    # 4-byte word; shared memory is byte-addressed, so there is no race
    g = build_table(lambda b, t, s, ln: (t,), threads=64, steps=1, shape=(64,), tensor="x", elem_bytes=elem_bytes)
    sm = build_table(lambda b, t, s, ln: (t,), threads=64, steps=1, shape=(64,), memory="shared", tensor="s",
                     side="dst", elem_bytes=elem_bytes)
    sr = build_table(lambda b, t, s, ln: (t,), threads=64, steps=1, shape=(64,), memory="shared", tensor="s",
                     elem_bytes=elem_bytes)
    y = build_table(lambda b, t, s, ln: (t,), threads=64, steps=1, shape=(64,), tensor="y", side="dst",
                    elem_bytes=elem_bytes)
    r = check_dataflow([(g, sm), "barrier", (sr, y)], "copy")
    assert r.status == "PASS", [f.message for f in r.findings]
    assert r.summary["races"] == 0 and r.summary["moved"] == 128
    # the real race is still one: two threads on the same byte
    sm2 = build_table(lambda b, t, s, ln: (t // 2,), threads=64, steps=1, shape=(64,), memory="shared",
                      tensor="s", side="dst", elem_bytes=elem_bytes)
    r2 = check_dataflow([(g, sm2), "barrier", (sr, y)], "copy")
    assert r2.summary["races"] == 32 * elem_bytes


@pytest.mark.parametrize("barrier,smem", [(True, None), (False, None),
                                          (True, lambda b, t, s, ln: (t % T, (t // T) // 2)),
                                          (False, lambda b, t, s, ln: (t % T, (t // T) // 2)),
                                          (False, lambda b, t, s, ln: (t // T, t % T)),
                                          ("refill", None)])
def test_matches_definition_small(barrier: bool | str, smem: object) -> None:
    st = transpose_stages(barrier=bool(barrier), smem_write=smem)
    if barrier == "refill":  # a write after the transposed read, no barrier between
        st.append((st[0][0], st[1][1]))
    r = check_dataflow(st, "transpose")
    d = dataflow_definition([s if isinstance(s, str) else (rows(s[0]), rows(s[1])) for s in st],
                            "transpose", "x", "y")
    assert r.summary["wrong_values"] == len(d["wrong"])
    assert r.summary["stale_reads"] == len(d["stale"])
    assert r.summary["races"] == len(d["races"])
    assert r.summary["uninitialised_reads"] == len(d["uninit"])
    assert r.summary["writes_after_reads"] == len(d["war"])


def test_chunks_give_the_same_counts() -> None:
    st = transpose_stages(barrier=False)
    whole = check_dataflow(st, "transpose")
    per = [check_dataflow([s if isinstance(s, str) else (s[0].select_blocks(np.array([b])),
                                                         s[1].select_blocks(np.array([b]))) for s in st],
                          "transpose") for b in range(4)]
    for k in ("moved", "wrong_values", "stale_reads", "races"):
        assert whole.summary[k] == sum(p.summary[k] for p in per)


# ----------------------------------------------------------------------------- delivery (issue 16, item 3)

SPECS = Path(__file__).resolve().parents[2] / "specs"
PLANTED = SPECS / "planted" / "transpose_vector_store_odd_m.yaml"


@pytest.mark.parametrize("sizes,mode", [(None, "enumerated"), ({"M": 1601, "N": 1280}, "tiling")])
def test_outputs_no_one_writes_fail_dataflow_with_the_grid_coverage_count(sizes: dict[str, int] | None,
                                                                           mode: str) -> None:
    """The planted transpose masks its straddling 128-bit stores whole: y(n, M-1) is never
    written for each of the N rows (the spec's header derives it).  dataflow says so (``missing
    N``, a witness per unwritten element and the input element it should carry) and fails,
    with the count grid coverage and predicates give on the output side."""
    (run,) = api.verify_spec(str(PLANTED), sizes=sizes)
    assert run.totals == mode and run.as_expected
    n, m = (sizes or {"M": 101, "N": 100})["N"], (sizes or {"M": 101, "N": 100})["M"]
    by = {(r.check, r.stage, r.side): r for r in run.results}
    df = by[("dataflow", None, None)]
    assert df.status == "FAIL" and df.summary["wrong_values"] == 0
    assert df.summary["missing"] == n == by[("grid_coverage", 2, "dst")].summary["missing"] \
        == by[("predicates", 2, "dst")].summary["lost"]
    assert df.total_findings == n
    miss = [f for f in df.findings if f.kind == "missing"]
    assert [f.witness["coordinate"] for f in miss] == [(i, m - 1) for i in range(len(miss))] and miss
    assert miss[0].witness["expected"] == (m - 1, 0)
    assert {(f.stage, f.side) for f in miss} == {(2, "dst")}  # the stage that writes y


def test_dataflow_alone_still_judges_delivery() -> None:
    (run,) = api.verify_spec(str(PLANTED), checks=["dataflow"])
    assert [r.check for r in run.results] == ["dataflow"]
    assert run.results[0].summary["missing"] == 100 and run.results[0].status == "FAIL"


def test_a_complete_transform_has_none_missing() -> None:
    (run,) = api.verify_spec(str(PLANTED), sizes={"M": 104, "N": 100})
    df = next(r for r in run.results if r.check == "dataflow")
    assert df.summary["missing"] == 0 and df.summary["wrong_values"] == 0


def test_check_dataflow_missing_matches_the_definition() -> None:
    """``check_dataflow`` (every block given) against ``dataflow_definition`` with the output's
    shape: the outputs whose write is masked are missing, in colexicographic order."""
    st = transpose_stages()
    sB, y = st[-1]  # type: ignore[misc]
    masked = build_table(lambda b, t, s, ln: ((b // 2) * T + t % T, (b % 2) * T + t // T), threads=256, steps=1,
                         shape=(N, M), blocks=4, tensor="y", side="dst",
                         pred=lambda b, t, s, ln: (t % 7) != 3)
    st[-1] = (sB, masked)
    r = check_dataflow(st, "transpose")
    d = dataflow_definition([s if isinstance(s, str) else (rows(s[0]), rows(s[1])) for s in st],
                            "transpose", "x", "y", output_shape=(N, M))
    assert r.summary["missing"] == len(d["missing"]) > 0
    assert r.status == "FAIL" and r.summary["wrong_values"] == 0
    got = [f.witness["coordinate"] for f in r.findings if f.kind == "missing"]
    assert got == d["missing"][:len(got)] and got
    assert check_dataflow(transpose_stages(), "transpose").summary["missing"] == 0


def test_a_shared_offset_beyond_the_cta_is_a_located_error_not_a_memory_error(tmp_path: Path) -> None:
    """Issue 16, item 12: a swizzled shared layout with an offset of about 10^18 elements passes
    the schema's cosize check (the offset sits inside the composition) and used to reach the
    dataflow's per-byte store: an unlocated MemoryError.  Now the shared capacity is checked
    before anything is allocated: the model refuses the first stage side whose accesses reach
    past it (the dataflow's own check, at the tensor's layout, stays behind it)."""
    text = (SPECS / "cute_transpose" / "row_rvectorized.yaml").read_text(encoding="utf-8")
    old = 'sA: {memory: shared, layout: "(16,64):(64,1)"}'
    assert old in text
    spec = tmp_path / "huge_offset.yaml"
    huge = 'sA: {memory: shared, layout: "Sw<0,4,3> o 900000000000000000 o (16,64):(64,1)"}'
    spec.write_text(text.replace(old, huge), encoding="utf-8")
    lines = spec.read_text(encoding="utf-8").splitlines()
    at = {i for i, ln in enumerate(lines, 1) if "sA" in ln}  # the tensor or a side that reaches it
    report = api.verify([spec])
    assert not report.runs and len(report.errors) == 1
    err = report.errors[0]
    assert err.status != "internal" and "MemoryError" not in err.message
    located = re.match(rf"{re.escape(str(spec))}:(\d+):(\d+): (\S+)", err.message)
    assert located and int(located.group(1)) in at and "sA" in err.message, err.message
    assert "232448 bytes of shared memory" in err.message
