"""``hardware.ldgsts_wavefronts`` against what an H200 counted (docs/hardware/ldgsts_h200.json:
``tools/gpu/ldgsts`` ran one warp's ``cp.async`` under Nsight Compute for every case, each a
per-lane table of global and shared byte offsets and predicates)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from threadmap import hardware as hw

DATA = Path(__file__).resolve().parents[2] / "docs" / "hardware" / "ldgsts_h200.json"
CASES: list[dict[str, Any]] = json.loads(DATA.read_text())["cases"]


def _lanes(c: dict[str, Any]) -> list[tuple[int, int, int | None]]:
    """The lanes that write shared memory: active ones with their global address, zero-filling
    ones (the _ZFILL form, predicate false) with none."""
    return [(t, c["shared"][t], c["global"][t] if c["pred"][t] else None) for t in range(32)
            if c["pred"][t] or c["zfill"]]


def _measured(c: dict[str, Any]) -> float:
    return float(c["wavefronts"]) / float(c["instructions"])


CA = [c for c in CASES if c["cache"] == "ca" and c["instructions"] > 1]


@pytest.mark.parametrize("case", CA, ids=[c["name"] for c in CA])
def test_the_rule_is_what_the_h200_counts_for_the_l1_allocating_form(case: dict[str, Any]) -> None:
    lanes = _lanes(case)
    got = hw.ldgsts_wavefronts(lanes, case["bytes"]) if lanes else hw.Wavefronts(0, 0)
    assert got.wavefronts == _measured(case)


def test_the_data_holds_what_the_rule_is_about() -> None:
    """The cases are not all alike: the rule differs from the store rule on many of them."""
    differs = [c["name"] for c in CA if _lanes(c) and hw.ldgsts_wavefronts(_lanes(c), c["bytes"]).wavefronts
               != hw.wavefronts(((t, s) for t, s, _ in _lanes(c)), c["bytes"], c["bytes"]).wavefronts]
    assert len(CA) >= 150 and len(differs) >= 50


def test_the_bypassing_form_is_not_counted_by_address() -> None:
    """Why the .cg form has no rule: the isolated probe counts no shared wavefront for it
    (the library's behaviour kernels count some: docs/hardware.md)."""
    cg = [c for c in CASES if c["cache"] == "cg" and not c["zfill"] and c["instructions"] > 1]
    assert cg and all(c["wavefronts"] == 0 for c in cg)


lane_table = st.lists(st.tuples(st.integers(0, 255), st.integers(0, 63), st.booleans()), min_size=32, max_size=32)


@given(lane_table, st.sampled_from([4, 8, 16]), st.booleans())
def test_never_fewer_than_the_store_and_equal_on_one_line(table: list[tuple[int, int, bool]], size: int,
                                                         zfill: bool) -> None:
    """The law of ``ldgsts_wavefronts``: at least the store's wavefronts; equal when each
    phase's active lanes read distinct addresses of one line and write distinct shared words
    (a bank's words then come from as many offsets of the line as it has words)."""
    lanes = [(t, s * size, g * size if on else None) for t, (s, g, on) in enumerate(table) if on or zfill]
    if not lanes:
        return
    store = hw.wavefronts(((t, s) for t, s, _ in lanes), size, size).wavefronts
    assert hw.ldgsts_wavefronts(lanes, size).wavefronts >= store
    per = hw.lanes_per_phase(size)
    one_line = [(t, s, (t // per) * 4096 + (t % per) * size) for t, s, _ in lanes]
    writes = [[s for t, s, _ in one_line if t // per == p] for p in range(hw.phases(size))]
    distinct = all(len(set(w)) == len(w) for w in writes)
    if all(g is not None for _, _, g in lanes) and size * per <= hw.LINE_BYTES and distinct:
        assert hw.ldgsts_wavefronts(one_line, size).wavefronts == hw.wavefronts(
            ((t, s) for t, s, _ in one_line), size, size).wavefronts


@given(st.lists(st.tuples(st.integers(0, 31), st.integers(0, 7)), min_size=1, max_size=32))
def test_a_bank_fed_from_k_offsets_of_the_lines_costs_k_minus_1_once(table: list[tuple[int, int]]) -> None:
    """The offset term alone: 4-byte lanes, each reading its own line at word offset ``o`` of
    the line's first sector and writing bank ``b`` of its own shared row (no conflict inside a
    line, every row apart): ``lines + (the most distinct offsets one bank takes words from) - 1``.
    Lines on the same banks from the same offsets cost nothing more (``ca4_g8_across_lines``);
    from other offsets they do (the ``align2`` kernels' lanes, ``ldgsts_h200_vector.json``)."""
    lanes = [(t, 128 * t + 4 * b, 4096 * t + 4 * o) for t, (b, o) in enumerate(table)]
    fed: dict[int, set[int]] = {}
    for b, o in table:
        fed.setdefault(b, set()).add(o)
    assert hw.ldgsts_wavefronts(lanes, 4).wavefronts == len(table) + max(len(f) for f in fed.values()) - 1


@given(st.lists(st.integers(0, 7), min_size=32, max_size=32))
def test_lines_in_different_sector_positions_share_wavefronts(line_of: list[int]) -> None:
    """The lines term: lane ``t`` reads word ``t`` of line ``line_of[t]`` (so the lanes of sector
    position ``q`` are ``8q .. 8q+7``) and writes shared word ``t`` (no conflict, each bank fed
    from one offset): as many wavefronts as the most distinct lines in one sector position --
    the 64x64 ``align2`` kernel at K = 288 and the SIMT kernel at K = 48, whose rows are 1.5 or
    4.5 lines apart, as the H200 counted them (``docs/sweep.md``)."""
    lanes = [(t, 4 * t, 4096 * line_of[t] + 4 * t) for t in range(32)]
    want = max(len(set(line_of[8 * q:8 * q + 8])) for q in range(4))
    assert hw.ldgsts_wavefronts(lanes, 4).wavefronts == want
