"""Vectorization check: widest legal vector per side, declared atom legality."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from threadmap.verify import build_table, check_vectorize, register_table, widest_vector_definition
from threadmap.verify.vectorize import widest_per_thread


def test_row_of_values_allows_128_bits() -> None:
    # each thread owns 8 consecutive f32 of its row (scalar declared): 128-bit legal
    t = build_table(lambda b, t, s, ln: (t, s), threads=32, steps=8, shape=(32, 8))
    r = check_vectorize(t)
    assert r.status == "PASS"
    assert r.summary["declared_bits"] == 32 and r.summary["max_legal_bits"] == 128
    assert r.findings[0].kind == "narrow" and r.findings[0].severity == "info"


def test_column_of_values_is_scalar_only() -> None:
    t = build_table(lambda b, t, s, ln: (s, t), threads=32, steps=8, shape=(8, 32))
    assert check_vectorize(t).summary["max_legal_bits"] == 32


def test_alignment_and_leading_dimension_limit_the_width() -> None:
    # rows of 6 f32 (ld = 6): row r starts at 24 r bytes -> only 64-bit vectors for every thread
    t = build_table(lambda b, t, s, ln: (t, s), threads=8, steps=6, shape=(8, 6))
    r = check_vectorize(t)
    assert r.summary["max_legal_bits"] == 64
    assert r.summary["widest_histogram"] == {64: 8}
    # base offset 4 bytes: 8 values from byte 4 -> 32 bits only
    t2 = build_table(lambda b, t, s, ln: (t, s), threads=8, steps=8, shape=(8, 8), base=4)
    assert check_vectorize(t2).summary["max_legal_bits"] == 32


def test_planted_misaligned_declared_vector() -> None:
    t = build_table(lambda b, t, s, ln: (t, s * 4 + ln), threads=8, steps=2, vec=4, shape=(8, 8), base=8)
    r = check_vectorize(t)
    assert r.status == "FAIL" and r.summary["declared_legal"] is False and r.summary["illegal_accesses"] == 16
    w = r.findings[0].witness
    assert (w["thread"], w["step"], w["address"]) == (0, 0, 8)
    assert "not a multiple of 16" in r.findings[0].message
    assert r.summary["max_legal_bits"] == 64


def test_non_contiguous_declared_vector() -> None:
    # vec=2 but the two elements are a column apart
    t = build_table(lambda b, t, s, ln: (ln, t), threads=8, steps=1, vec=2, shape=(2, 8))
    r = check_vectorize(t)
    assert r.status == "FAIL" and "not contiguous" in r.findings[0].message


def test_register_side_skipped() -> None:
    t = build_table(lambda b, t, s, ln: (t, s), threads=4, steps=4, shape=(4, 4))
    assert check_vectorize(register_table(t, side="dst")).status == "SKIP"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 64), min_size=1, max_size=16), st.sampled_from([1, 2, 4, 8]))
def test_matches_definition(offs: list[int], e: int) -> None:
    n = len(offs)
    o = np.asarray(offs)
    t = build_table(lambda b, t, s, ln: (s * 0, s), threads=1, steps=n, shape=(1, 100),
                    layout=lambda c: o[c[1]], elem_bytes=e)
    best = widest_per_thread(t)
    assert int(best[0, 0]) == widest_vector_definition([x * e for x in offs], e)
