"""The spec library verifies to the verdicts its comments derive, and the default run (the tiling
argument over representative blocks) gives the same whole-grid counts as enumerating every block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import threadmap.api as api
from threadmap.spec.load import iter_spec_files

SPECS = Path(__file__).resolve().parents[2] / "specs"
FILES = iter_spec_files(SPECS)


def test_library_is_complete() -> None:
    names = {p.relative_to(SPECS).as_posix() for p in FILES}
    for must in ["cute_transpose/row2col_reg.yaml", "cute_transpose/col2row_reg.yaml",
                 "cute_transpose/col_smem.yaml", "cute_transpose/row_smem.yaml",
                 "cute_transpose/col_smem_swizzled.yaml", "cute_transpose/row_smem_swizzled.yaml",
                 "cute_transpose/row_cvectorized.yaml", "cute_transpose/row_rvectorized.yaml",
                 "cute_transpose/rvectorized_swizzled_optimized.yaml",
                 "cutlass/stripmined_64x64_128t_v4.yaml", "cutlass/stripmined_64x64_128t_v4_m63.yaml"]:
        assert must in names


def counts(run: Any) -> dict[tuple[str, int | None, str | None], dict[str, Any]]:
    """Every number of every result (the witnesses may differ: another block can be first)."""
    out = {}
    for r in run.results:
        s = r.summary.model_dump()
        s.pop("worst", None)
        out[(r.check, r.stage, r.side)] = {**s, "status": r.status, "total_findings": r.total_findings}
    return out


@pytest.mark.parametrize("path", FILES, ids=[p.relative_to(SPECS).as_posix() for p in FILES])
def test_spec_verdict_as_expected_and_modes_agree(path: Path) -> None:
    default = api.verify_spec(path)
    for run in default:
        assert run.as_expected, (f"{path}: verdict {run.verdict} (failing {run.failing}), expected {run.expected} "
                                 f"(failing at least {run.expected_failing})")
    for a, b in zip(default, api.verify_spec(path, exhaustive=True), strict=True):
        # a pipeline alone has no per-thread copy to simulate in any block
        staged = any(r.stage is not None for r in b.results)
        assert b.totals == "enumerated" and b.blocks_simulated == (b.blocks if staged else 0)
        assert counts(a) == counts(b), path


def test_partitions_of_all_threads_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every library partition is evaluated for all threads in one numpy pass (the per-thread
    fallback is 100x slower and must stay the exception)."""
    import threadmap.model.partition as part

    def vectorised_only(p, threads: int, rank: int):  # noqa: ANN001, ANN202
        return part._coords(p(np.arange(threads)), rank, threads)

    monkeypatch.setattr(part, "all_threads", vectorised_only)
    part.forget_partitions()  # each partition computed here, not kept from an earlier build
    for f in FILES:
        api.models(f)


def test_memoized_partitions_are_the_computed_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every side of every library model (each size environment, the ranged specs' samples)
    built with the partitions memoized across all of them has the partition computed afresh:
    the same coordinates, vector width and maker; the kept coordinates are read-only."""
    import threadmap.model.kernel as kernel
    import threadmap.model.partition as part

    def sides() -> list[Any]:
        return [(f, sd.stage, sd.which, sd.partition) for f in FILES for m in api.models(f) for sd in m.sides()
                if sd.tensor is not None]  # a register side takes the other side's partition

    part.forget_partitions()
    kept = sides()
    monkeypatch.setattr(kernel, "memoized", lambda key, compute: compute())
    fresh = sides()
    assert len(kept) == len(fresh) > 100
    for (f, stage, which, a), (_, _, _, b) in zip(kept, fresh, strict=True):
        assert np.array_equal(a.coord, b.coord) and a.vec == b.vec and a.maker == b.maker, (f, stage, which)
        assert not a.coord.flags.writeable
