"""Diff probe records (the real templates) with the simulator's, record by record."""

from __future__ import annotations

from typing import Any

import numpy as np

from threadmap.gpu.probe import StageProbe
from threadmap.gpu.report import ProbeMismatch
from threadmap.gpu.report import StageProbe as StageProbeReport
from threadmap.model import CopyModel, KernelModel

#: mismatches listed in full per stage (all are counted)
FIRST = 10


def field_names(probe: StageProbe) -> list[str]:
    """The name of every field of a record, e.g. ``src.coord[1]``, ``dst.offset``, ``predicate``."""
    names = [""] * probe.width
    for f in probe.sides:
        for k in range(f.rank):
            names[f.start + k] = f"{f.which}.coord[{k}]"
        names[f.offset_field] = f"{f.which}.offset"
        names[f.inb_field] = f"{f.which}.in_bounds"
    names[-1] = "predicate"
    return names


def _record(probe: StageProbe, rec: np.ndarray) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in probe.sides:
        out[f.which] = {"coord": [int(x) for x in rec[f.start:f.start + f.rank]],
                        "offset": int(rec[f.offset_field]), "in_bounds": bool(rec[f.inb_field])}
    out["predicate"] = bool(rec[-1])
    return out


def diff_stage(model: KernelModel, probe: StageProbe, blocks: np.ndarray, got: np.ndarray, want: np.ndarray,
               real: np.ndarray, first: int = FIRST) -> StageProbeReport:
    """Compare ``(nb, T, V, W)`` records on the real (non-padding) rows: counts per field and
    the first mismatches with their block, thread, step, value and both records."""
    cp = model.stages[probe.stage]
    assert isinstance(cp, CopyModel)
    line = model.stage_line(probe.stage)
    names = field_names(probe)
    diff = (got != want) & real[..., None]
    bad = diff.any(axis=-1)
    by_field = {names[k]: int(n) for k, n in enumerate(diff.reshape(-1, probe.width).sum(axis=0)) if n}
    vec = next(s.vec for s in cp.sides() if s.tensor is not None)
    listed: list[ProbeMismatch] = []
    for b, t, v in np.argwhere(bad)[:first]:
        k = int(np.flatnonzero(diff[b, t, v])[0])
        listed.append(ProbeMismatch(stage=probe.stage, line=line, field=names[k], block=int(blocks[b]),
                                    thread=int(t), step=int(v) // vec, value=int(v),
                                    device=_record(probe, got[b, t, v]), simulated=_record(probe, want[b, t, v])))
    return StageProbeReport(stage=probe.stage, name=cp.name, line=line, rows=int(real.sum()),
                            mismatches=int(bad.sum()), by_field=by_field, first=listed)
