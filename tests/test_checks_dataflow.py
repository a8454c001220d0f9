"""Dataflow check: a 32x32 transpose through shared memory; planted missing barrier, race, wrong transform."""

from __future__ import annotations

from threadmap.verify import build_table, check_dataflow, dataflow_definition, register_table, run_checks

T, M, N = 16, 32, 32


def transpose_stages(barrier: bool = True, smem_write: object = None):
    x = build_table(lambda b, t, s, ln: ((b % 2) * T + t % T, (b // 2) * T + t // T), threads=256, steps=1,
                    shape=(M, N), blocks=4, tensor="x", meta={"tile": (T, T)})
    r_in, r_out = register_table(x, side="dst"), register_table(x, side="src")
    wr = smem_write or (lambda b, t, s, ln: (t % T, t // T))
    sA = build_table(wr, threads=256, steps=1, shape=(T, T), blocks=4,  # type: ignore[arg-type]
                     memory="shared", tensor="sA", buffer="smem", side="dst")
    sB = build_table(lambda b, t, s, ln: (t // T, t % T), threads=256, steps=1, shape=(T, T), blocks=4,
                     memory="shared", tensor="sB", buffer="smem")
    y = build_table(lambda b, t, s, ln: ((b // 2) * T + t % T, (b % 2) * T + t // T), threads=256, steps=1,
                    shape=(N, M), blocks=4, tensor="y", side="dst", meta={"tile": (T, T)})
    st: list[object] = [(x, r_in), (r_out, sA)]
    if barrier:
        st.append("barrier")
    st.append((sB, y))
    return st


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


def test_planted_write_race() -> None:
    # threads t and t+16 write the same smem element (wrong stride in the smem layout)
    r = check_dataflow(transpose_stages(smem_write=lambda b, t, s, ln: (t % T, (t // T) // 2)), "transpose")
    assert r.status == "FAIL" and r.summary["races"] == 4 * 128
    f = next(f for f in r.findings if f.kind == "race")
    assert {f.witness["first"]["thread"], f.witness["second"]["thread"]} == {0, 16}
    assert f.witness["word"] == 0 and f.witness["block"] == 0
    assert r.summary["uninitialised_reads"] == 4 * 128


def test_matches_definition_small() -> None:
    for barrier in (True, False):
        st = transpose_stages(barrier=barrier)
        r = check_dataflow(st, "transpose")

        def rows(t):  # noqa: ANN001, ANN202
            return [{"block": int(t.block[i]), "thread": int(t.thread[i]), "value": int(t.value[i]),
                     "memory": t.memory, "tensor": t.tensor, "buffer": t.buffer or t.tensor,
                     "coord": tuple(int(c) for c in t.coord[i]), "addr": int(t.addr[i]),
                     "pred": bool(t.pred[i])} for i in range(len(t))]

        d = dataflow_definition([s if isinstance(s, str) else (rows(s[0]), rows(s[1])) for s in st],
                                "transpose", "x", "y")
        assert r.summary["wrong_values"] == len(d["wrong"])
        assert r.summary["stale_reads"] == len(d["stale"])
        assert r.summary["races"] == len(d["races"])


def test_run_checks_end_to_end() -> None:
    st = [(s[0], s[1], "bounds") if not isinstance(s, str) else s for s in transpose_stages()]
    res = run_checks(st, {"transform": "transpose", "bank_conflicts": 0}, {"size_names": {0: "M", 1: "N"}})
    by = {(r.check, r.stage, r.side): r for r in res}
    assert by[("dataflow", None, None)].status == "PASS"
    assert by[("coverage", 0, "src")].status == "PASS"
    assert by[("grid_coverage", 0, "src")].status == "PASS"
    assert by[("predicates", 0, "src")].status == "PASS"
    # sA (16x16 row-major) written column-wise: lane t -> word (t % 16) * 16 + t // 16; lanes 0-15
    # hit words 0, 16, ..., 240 = banks 0 and 16, 8 distinct words each -> 8 wavefronts
    bank = by[("bank_conflicts", 0, "dst")]
    assert bank.summary["max_wavefronts"] == 8 and bank.status == "FAIL"
    # x read: lanes 0-15 walk 16 rows of a column, lanes 16-31 the next column of the same rows
    # (same sectors) -> 16 sectors per request, ideal 4
    co = by[("coalescing", 0, "src")]
    assert co.summary["sectors_per_request"] == 16.0 and co.summary["ideal_sectors_per_request"] == 4.0
    import json

    json.dumps([r.to_dict() for r in res])
    # chunks: the same stages split per block give the same verdicts
    chunked = [s if isinstance(s, str) else ([s[0].select(s[0].block == b) for b in range(4)],
                                             [s[1].select(s[1].block == b) for b in range(4)], s[2])
               for s in st]
    res2 = run_checks(chunked, {"transform": "transpose"}, {})
    by2 = {(r.check, r.stage, r.side): r for r in res2}
    assert by2[("dataflow", None, None)].status == "PASS"
    assert by2[("grid_coverage", 0, "src")].summary["chunks"] == 4
    assert by2[("coverage", 0, "src")].summary["elements"] == 1024
    assert by2[("coalescing", 0, "src")].summary["sectors"] == co.summary["sectors"]
