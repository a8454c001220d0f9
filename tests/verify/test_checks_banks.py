"""Bank-conflict check: column reads of a 32x32 f32 tile (32-way), padded and swizzled fixes, vectors."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from threadmap import hardware as hw
from threadmap.verify import build_table, check_bank_conflicts, wavefronts_definition
from threadmap.verify.banks import phase_wavefronts


def column_reads(layout: object, vec: int = 1):
    # lane t reads element (t, s): one column of the tile per instruction
    return build_table(lambda b, t, s, ln: (t, s), threads=32, steps=32, shape=(32, 32), memory="shared",
                       layout=layout)  # type: ignore[arg-type]


def test_planted_column_conflict_32_way() -> None:
    r = check_bank_conflicts(column_reads("row"))
    assert r.summary["wavefronts"] == 32 * 32 and r.summary["ideal_wavefronts"] == 32
    assert r.summary["max_wavefronts"] == 32 and r.summary["extra_wavefronts"] == 31 * 32
    assert r.summary["conflicted_instructions"] == 32
    w = r.findings[0].witness
    assert (w["block"], w["warp"], w["step"], w["bank"], w["distinct_words"]) == (0, 0, 0, 0, 32)
    assert [d["warp_lane"] for d in w["lanes"]] == list(range(32))
    assert [d["word"] for d in w["lanes"]] == [32 * i for i in range(32)]
    assert "lane 1: word 32" in r.findings[0].message
    assert r.status == "PASS"                       # no limit: warning
    assert check_bank_conflicts(column_reads("row"), max_extra=0).status == "FAIL"


def test_padded_and_swizzled_are_conflict_free() -> None:
    for lay in (lambda c: c[0] * 33 + c[1], lambda c: c[0] * 32 + (c[1] ^ c[0])):
        r = check_bank_conflicts(column_reads(lay), max_extra=0)
        assert r.status == "PASS" and r.summary["max_wavefronts"] == 1 and r.summary["extra_wavefronts"] == 0
        assert not r.findings


def test_broadcast_is_free() -> None:
    t = build_table(lambda b, t, s, ln: (0 * t, s), threads=32, steps=4, shape=(32, 32), memory="shared")
    assert check_bank_conflicts(t).summary["max_wavefronts"] == 1


def test_vector_widths_phases() -> None:
    # 128-bit row reads of a 4x128 f32 tile: 4 phases of 8 lanes, conflict-free: 4 wavefronts
    t = build_table(lambda b, t, s, ln: (s, t * 4 + ln), threads=32, steps=4, vec=4, shape=(4, 128),
                    memory="shared")
    r = check_bank_conflicts(t)
    assert r.summary["phases"] == 4 and r.summary["max_wavefronts"] == 4
    assert r.summary["extra_wavefronts"] == 0
    # 128-bit reads where each lane starts a new 32-float row: 8 lanes of a phase hit banks 0-3
    t2 = build_table(lambda b, t, s, ln: (t, s * 4 + ln), threads=32, steps=8, vec=4, shape=(32, 32),
                     memory="shared")
    r2 = check_bank_conflicts(t2)
    assert r2.summary["max_wavefronts"] == 32 and r2.summary["ideal_wavefronts"] == 8 * 4
    # 64-bit (f64) reads of consecutive elements: 2 phases, ideal 2
    t3 = build_table(lambda b, t, s, ln: (s, t), threads=32, steps=2, shape=(2, 32), memory="shared",
                     elem_bytes=8)
    assert check_bank_conflicts(t3).summary["max_wavefronts"] == 2
    # f16 pairs in one word: still 1 wavefront
    t4 = build_table(lambda b, t, s, ln: (s, t), threads=32, steps=1, shape=(1, 64), memory="shared",
                     elem_bytes=2)
    assert check_bank_conflicts(t4).summary["max_wavefronts"] == 1


def test_witness_lists_each_lane_word_once() -> None:
    # 128-bit f16 reads (8 halves = 4 words per lane), each lane a new 64-half row: a lane's two
    # halves of one word are one word of the witness, not two
    t = build_table(lambda b, t, s, ln: (t, s * 8 + ln), threads=32, steps=8, vec=8, shape=(32, 64),
                    memory="shared", elem_bytes=2)
    r = check_bank_conflicts(t)
    w = r.summary["worst"]
    pairs = [(d["warp_lane"], d["word"]) for d in w["lanes"]]
    assert len(pairs) == len(set(pairs)) == w["distinct_words"] == 8  # 8 lanes of a phase, one word each
    assert r.findings and "lane 0: word 0, lane 1: word 32" in r.findings[0].message


def test_global_is_skipped() -> None:
    g = build_table(lambda b, t, s, ln: (t, s), threads=32, steps=1, shape=(32, 32))
    assert check_bank_conflicts(g).status == "SKIP"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 255), min_size=32, max_size=32), st.sampled_from([(4, 1), (4, 2), (4, 4),
                                                                                 (8, 1), (8, 2), (2, 1),
                                                                                 (2, 2), (1, 4)]),
       st.lists(st.booleans(), min_size=32, max_size=32))
def test_matches_definition(slots: list[int], ev: tuple[int, int], active: list[bool]) -> None:
    e, vec = ev
    aw = e * vec
    base = np.asarray(slots, dtype=np.int64) * aw
    act = np.asarray(active)
    t = build_table(lambda b, t, s, k: (base[t] // e + k,), threads=32, steps=1, vec=vec, shape=(10 ** 6,),
                    memory="shared", elem_bytes=e, layout=lambda c: c[0],
                    pred=lambda b, t, s, k: act[np.minimum(t, 31)])
    pw = phase_wavefronts(t)[0]
    lanes = [(int(t.lane[i]), int(t.addr[i])) for i in range(len(t)) if t.pred[i]]
    d = wavefronts_definition(lanes, e, aw)
    assert (int(pw.sum()), int((pw > 0).sum())) == (d.wavefronts, d.ideal)
    assert d == hw.wavefronts(lanes, e, aw)
