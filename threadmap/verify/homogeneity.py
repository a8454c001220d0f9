"""The tiling argument's last premise, checked: blocks of one class behave alike.

Blocks of one class (a box of :class:`~threadmap.verify.classes.BlockClasses`) have the same
predicates and tiles that differ by a translation; any per-block quantity that is an affine
function of the block coordinates (the offset between where a block reads and where it
writes, which decides the dataflow check, for instance) is constant over the box iff it is
equal on the box's first block and on its neighbour along each block coordinate.  So the
argument is sound iff, in every box, those representatives have identical per-block counts
for every check that does not depend on the address alignment (those get their own
representatives per address residue).  :func:`first_difference` computes each
representative's counts on its own and compares them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from threadmap.model import KernelModel
from threadmap.simulate.engine import Simulator
from threadmap.verify.check import CHECKS
from threadmap.verify.util import in_bounds

#: checks whose per-block counts depend on where the block's addresses fall modulo 128 bytes
ADDRESS_DEPENDENT = {"coalescing", "vectorize"}


def signature(model: KernelModel, sim: Simulator, block: int) -> dict[Any, Any]:
    """Every address-independent count of one block, computed on that block alone."""
    blocks = np.array([block], dtype=np.int64)
    tables = sim.tables(blocks)
    one = np.ones(1, dtype=np.int64)
    out: dict[Any, Any] = {}
    by_side = {(t.stage, t.side): t for rec in tables if not isinstance(rec, str) for t in rec}
    for side in model.sides():
        t = by_side[(side.stage, side.which)]
        for name, check in CHECKS.items():
            if check.scope != "side" or not check.applies(side):
                continue
            if name in ADDRESS_DEPENDENT and side.memory == "global":
                continue
            acc = check.accumulator(model, side)
            acc.add(t, one)
            s = acc.result().summary.model_dump()
            s.pop("worst", None)
            s.pop("blocks", None)
            out[(name, side.stage, side.which)] = s
        if side.memory == "global":
            act = t.pred
            out[("active", side.stage, side.which)] = (int(act.sum()), int((act & ~in_bounds(t.coords, t.shape)).sum()))
    for name, check in CHECKS.items():
        if check.scope == "kernel" and check.per_block and check.judges(model):
            acc = check.accumulator(model, None)
            acc.add(tables, one)
            out[(name, None, None)] = acc.result().summary.model_dump()
    return out


def first_difference(model: KernelModel, sim: Simulator, groups: Sequence[Sequence[int]]) -> str | None:
    """None when every group's blocks have identical signatures, else a sentence naming two
    blocks of one class that differ and the first count in which they do."""
    for group in groups:
        if len(group) < 2:
            continue
        ref = signature(model, sim, int(group[0]))
        for b in group[1:]:
            sig = signature(model, sim, int(b))
            if sig != ref:
                key = next(k for k in ref if ref[k] != sig.get(k))
                what = key[0] if key[1] is None else f"{key[0]} of stage {key[1]} {key[2]}"
                return (f"blocks {int(group[0])} and {int(b)} are in one class but their {what} counts differ "
                        "(a per-block quantity varies along the grid)")
    return None
