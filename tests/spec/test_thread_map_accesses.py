"""A thread map's vector copied as several narrower accesses (``accesses_per_vector``,
CUTLASS's kAccessesPerVector), and a shared layout placed by an outer layout
(``L o Sw o L2``): the model's instructions and bounds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import threadmap.api as api
from threadmap.errors import SpecError
from threadmap.spec.load import loads_spec

GEMM_A = Path(__file__).resolve().parents[2] / "specs/cutlass/sm80_f16_gemm_a_128x32_warpraked.yaml"
WIDE = "SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>"
MAP = "elements_per_access: 8, contiguous_mode: 1}"


def split(text: str, apv: int, bits: int) -> str:
    return text.replace(MAP, f"elements_per_access: 8, contiguous_mode: 1, accesses_per_vector: {apv}}}") \
        .replace(f"atom: {WIDE}", f"atom: SM80_CP_ASYNC_CACHEALWAYS<uint{bits}_t>")


def test_a_split_vector_keeps_the_elements_in_order_and_narrows_the_instruction() -> None:
    base = GEMM_A.read_text()
    (whole,) = api.models(loads_spec(base, "yaml", "whole"))
    (narrow,) = api.models(loads_spec(split(base, 4, 32), "yaml", "narrow"))
    w, n = whole.stages[0], narrow.stages[0]
    assert (w.src.vec, n.src.vec, n.dst.vec) == (8, 2, 2)
    # the same elements in the same order: access j of a vector is elements 2j, 2j + 1
    assert np.array_equal(w.src.partition.coord, n.src.partition.coord)
    tw = api.simulate(loads_spec(base, "yaml", "whole"), blocks=[0])[0][0]
    tn = api.simulate(loads_spec(split(base, 4, 32), "yaml", "narrow"), blocks=[0])[0][0]
    # four times the instructions over the same elements, the rows in the same order
    assert (tw.vec, tn.vec) == (8, 2) and tn.steps == 4 * tw.steps
    assert np.array_equal(np.sort(tw.offset), np.sort(tn.offset))
    # every element still copied once, to its place (the spec's sector and bank bounds are
    # for 128-bit accesses: narrow ones cost more, which is what the sweep reports)
    report = api.verify(loads_spec(split(base, 4, 32), "yaml", "narrow"),
                        checks=["coverage", "grid_coverage", "predicates", "vectorize", "dataflow"])
    assert all(r.verdict == "pass" for r in report.runs) and not report.errors


def test_accesses_that_do_not_split_the_vector_are_located() -> None:
    text = split(GEMM_A.read_text(), 3, 32)
    with pytest.raises(SpecError, match="accesses_per_vector.*3 accesses do not split a vector of 8"):
        api.models(loads_spec(text, "yaml", "bad"))


def test_the_atom_must_be_the_split_width() -> None:
    text = split(GEMM_A.read_text(), 2, 32)  # 2 accesses of 4 halves are 64-bit
    with pytest.raises(SpecError, match="moves 32 bits per instruction, but the src side accesses 64 bits"):
        api.models(loads_spec(text, "yaml", "bad"))


def test_a_layout_over_a_swizzled_layout_bounds_and_verifies() -> None:
    """CUTLASS's 3-stage crosswise A buffer: rows of 64 halves, 192 apart."""
    text = GEMM_A.read_text().replace('sA: {memory: shared, layout: "Sw<2,3,3> o (128,32):(32,1)"}',
                                      'sA: {memory: shared, layout: "(64,64):(1,192) o Sw<2,3,3> o (128,32):(32,1)"}')
    (m,) = api.models(loads_spec(text, "yaml", "three"))
    dst = api.simulate(loads_spec(text, "yaml", "three"), blocks=[0])[0][1]
    # the offsets the bounds allowed for are those the layout reaches: row r at 192 (r // 2)
    assert int(dst.offset.max()) == 63 + 192 * 63
    assert m.tensors["sA"].layout((2, 0)) == 192 + 8  # row 2's first chunk swizzled by 1
    report = api.verify(loads_spec(text, "yaml", "three"))
    assert all(r.verdict == "pass" for r in report.runs) and not report.errors
