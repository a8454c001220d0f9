"""Tensor memory in the spec grammar (``pipeline.tmem`` and ``tmem_load`` with an op): each
warp's tcgen05.ld checked against its subpartition and the allocation, the accumulator's
coverage, the use of registers before ``tcgen05.wait::ld``; bad input is a located error.
Modelled from the headers (no tcgen05 on the H200)."""

from __future__ import annotations

from pathlib import Path

import pytest

import threadmap.api as api
import threadmap.layout as L
from tests.support.located import assert_located_error
from tests.support.spec_runs import findings as _findings

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "specs" / "pipeline" / "sm100_tmem_epilogue.yaml"
BASE = LIB.read_text()


def test_the_library_epilogue_reads_its_accumulator_once() -> None:
    assert api.verify_spec(LIB)[0].verdict == "pass"
    pipe = api.models(LIB)[0].pipeline
    assert pipe is not None and pipe.tmem is not None
    assert pipe.tmem.violations == () and pipe.tmem.uncovered is None


def test_a_warp_outside_its_subpartition_is_found() -> None:
    fs = _findings(ROOT / "specs" / "planted" / "sm100_tmem_lane_outside_subpartition.yaml")
    access = [f for f in fs if f.kind == "tmem_access"]
    assert sorted({f.witness["warp"] for f in access}) == [5, 6, 7]        # warp 4 is subpartition 0
    # what the rule itself says for warp 5 at lane 0
    op = L.tmem_copy_op("SM100_TMEM_LOAD_32dp32b64x")
    assert L.tmem_op_access_violations(op, 5, 0, 256)[0].detail in {f.witness["detail"] for f in access}
    (gap,) = [f for f in fs if f.kind == "tmem_accumulator_uncovered"]
    assert gap.witness["missing_cells"] == 96 * 128 and (gap.witness["lane"], gap.witness["column"]) == (32, 0)


def test_columns_past_the_allocation_are_found() -> None:
    fs = _findings(ROOT / "specs" / "planted" / "sm100_tmem_columns_beyond_allocation.yaml")
    assert {f.kind for f in fs} == {"tmem_access"}
    assert all("outside the allocation [0, 64)" in f.witness["detail"] for f in fs)


@pytest.mark.parametrize(("old", "new", "where", "says"), [
    ("op: SM100_TMEM_LOAD_32dp32b64x, column: 0}", "op: SM100_TMEM_LOAD_32dp32b65x, column: 0}",
     "tmem_load.op", "repetitions"),
    ("op: SM100_TMEM_LOAD_32dp32b64x, column: 0}", "op: SM100_TMEM_STORE_32dp32b64x, column: 0}",
     "tmem_load.op", "a TMEM store"),
    ("  tmem: {columns: 256, accumulator: [128, 128]}\n", "", "pipeline", "needs pipeline.tmem"),
    ("accumulator: [128, 128]", "accumulator: [129, 128]", "pipeline.tmem.accumulator", "1..128 lanes"),
    ("column: 64}", "column: -1}", "tmem_load.column", "greater than or equal to 0"),
])
def test_a_bad_tmem_block_is_a_located_error(tmp_path: Path, old: str, new: str, where: str, says: str) -> None:
    assert old in BASE
    p = tmp_path / "v.yaml"
    p.write_text(BASE.replace(old, new, 1))
    assert_located_error(p, where, says)
