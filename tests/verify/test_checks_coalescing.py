"""Coalescing check: row vs column reads of a row-major matrix, misaligned vectors, definition cross-check."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from threadmap.verify import build_table, check_coalescing, sectors_definition
from threadmap.verify.coalescing import instruction_stats


def test_row_reads_are_coalesced() -> None:
    # 32 lanes read 32 consecutive f32 of one row: 128 bytes = 4 sectors, 1 line per request
    t = build_table(lambda b, t, s, ln: (s, t), threads=32, steps=32, shape=(32, 32), base=1 << 20)
    r = check_coalescing(t)
    assert r.status == "PASS" and not r.findings
    assert r.summary["requests"] == 32 and r.summary["sectors"] == 128 and r.summary["lines"] == 32
    assert r.summary["sectors_per_request"] == 4.0 and r.summary["ratio"] == 1.0


def test_column_reads_are_uncoalesced() -> None:
    # 32 lanes read one column: 32 rows apart -> 32 sectors (and 32 lines) per request, ideal 4
    t = build_table(lambda b, t, s, ln: (t, s), threads=32, steps=32, shape=(32, 32))
    r = check_coalescing(t)
    assert r.summary["sectors_per_request"] == 32.0 and r.summary["ideal_sectors_per_request"] == 4.0
    assert r.summary["ratio"] == 8.0 and r.summary["lines"] == 32 * 32
    assert r.status == "PASS"                       # no limit given: a warning, not a failure
    w = r.findings[0]
    assert w.kind == "uncoalesced" and w.severity == "warning"
    assert w.witness["sectors"] == 32 and w.witness["ideal"] == 4 and w.witness["active_lanes"] == 32
    assert w.witness["lane_addresses"][:2] == [(0, 0), (1, 128)]
    r2 = check_coalescing(t, max_ratio=1.0)
    assert r2.status == "FAIL" and r2.findings[0].severity == "error"


def test_vector_rows() -> None:
    # 8 lanes x 16 bytes cover one 128-byte row; a warp reads 4 rows -> 16 sectors, ideal 16
    t = build_table(lambda b, t, s, ln: (t // 8 + 4 * s, (t % 8) * 4 + ln), threads=32, steps=8, vec=4,
                    shape=(32, 32))
    r = check_coalescing(t)
    assert r.summary["sectors_per_request"] == 16.0 and r.summary["ratio"] == 1.0
    assert r.summary["misaligned"] == 0 and r.status == "PASS"


def test_planted_misaligned_16_byte_vector() -> None:
    # base aligned to 8 only: every 128-bit access is misaligned
    t = build_table(lambda b, t, s, ln: (t // 8 + 4 * s, (t % 8) * 4 + ln), threads=32, steps=8, vec=4,
                    shape=(32, 32), base=8)
    r = check_coalescing(t)
    assert r.status == "FAIL" and r.summary["misaligned"] == 256
    f = r.findings[0]
    assert f.kind == "misaligned" and f.witness["address"] == 8 and f.witness["access_bytes"] == 16
    assert (f.witness["thread"], f.witness["step"]) == (0, 0)
    # leading dimension 30 (not a multiple of 4): rows after the first are misaligned
    t2 = build_table(lambda b, t, s, ln: (t // 8 + 4 * s, (t % 8) * 4 + ln), threads=32, steps=8, vec=4,
                     shape=(32, 32), layout=lambda c: c[0] * 30 + c[1])
    r2 = check_coalescing(t2)
    assert r2.status == "FAIL"
    assert r2.findings[0].witness["coordinate"] == (1, 0) and r2.findings[0].witness["address"] == 120


def test_masked_lanes_do_not_count() -> None:
    t = build_table(lambda b, t, s, ln: (s, t), threads=32, steps=2, shape=(2, 16))
    r = check_coalescing(t)
    assert r.summary["requests"] == 2 and r.summary["sectors"] == 4 and r.summary["bytes"] == 128


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 4096), min_size=32, max_size=32), st.sampled_from([1, 2, 4, 8]),
       st.sampled_from([1, 2, 4]), st.integers(0, 7), st.lists(st.booleans(), min_size=32, max_size=32))
def test_matches_definition(addrs: list[int], e: int, vec: int, skew: int, active: list[bool]) -> None:
    # any addresses, widths and masks, including misaligned elements that straddle sectors
    a0 = np.asarray(addrs, dtype=np.int64) * e + skew
    act = np.asarray(active)
    t = build_table(lambda b, t, s, k: (a0[t] + k * e,), threads=32, steps=1, vec=vec, shape=(10 ** 7,),
                    elem_bytes=1, layout=lambda c: c[0], pred=lambda b, t, s, k: act[np.minimum(t, 31)])
    t.elem_bytes = e  # byte offsets as element offsets of e-byte elements: addr = offset * 1
    t.addr = t.offset.copy()
    s = instruction_stats(t)
    if not act.any():
        assert not s["active"][0]
        return
    d = sectors_definition([int(t.addr[i]) for i in range(len(t)) if t.pred[i]], e)
    assert (int(s["sectors"][0]), int(s["lines"][0]), int(s["bytes"][0]), int(s["ideal"][0])) == (
        d.sectors, d.lines, d.bytes, d.ideal)
