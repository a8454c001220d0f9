"""Small vectorised helpers shared by the checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from threadmap.simulate.access import AccessTable

if TYPE_CHECKING:
    from threadmap.model import CopyModel, SideModel
    from threadmap.simulate.engine import Simulator


def in_bounds(coords: Sequence[np.ndarray], shape: Sequence[int]) -> np.ndarray:
    """Rows whose coordinate lies in ``[0, shape)`` in every mode (one unsigned compare each)."""
    ok: np.ndarray | None = None
    for c, e in zip(coords, shape):
        m = np.less(np.asarray(c, dtype=np.int64).view(np.uint64), np.uint64(e))
        ok = m if ok is None else np.logical_and(ok, m, out=ok)
    n = len(coords[0]) if len(coords) else 0
    return np.ones(n, dtype=bool) if ok is None else ok


def colex(coords: Sequence[np.ndarray], shape: Sequence[int]) -> np.ndarray:
    """Colexicographic (mode 0 fastest) index of in-range coordinates."""
    idx = np.zeros(np.shape(coords[0]), dtype=np.int64) if coords else np.zeros(0, np.int64)
    mul = 1
    for c, e in zip(coords, shape):
        idx = idx + np.asarray(c, dtype=np.int64) * mul if mul != 1 else idx + c
        mul *= int(e)
    return idx


def delinearize(idx: int, shape: Sequence[int]) -> tuple[int, ...]:
    """Inverse of :func:`colex` for one index."""
    out = []
    for e in shape:
        out.append(int(idx % e))
        idx //= e
    return tuple(out)


def counted_rows(t: AccessTable, structural: bool) -> np.ndarray:
    """Rows a coverage count takes: active rows, or (``structural``) every real thread's row."""
    if structural:
        return np.ones(len(t), dtype=bool) if t.valid is None else t.valid
    return t.pred


def as_tables(tables: AccessTable | Sequence[AccessTable]) -> list[AccessTable]:
    """One table or several chunks of one side, as a list."""
    return [tables] if isinstance(tables, AccessTable) else list(tables)


def ones(t: AccessTable) -> np.ndarray:
    """Weight 1 for every block of ``t`` (plain enumeration)."""
    return np.ones(t.blocks.size, dtype=np.int64)


def first_true(mask: np.ndarray, k: int) -> list[int]:
    """Indices of the first ``k`` true entries."""
    return [int(i) for i in np.flatnonzero(mask)[:k]]


def per_instruction(x: np.ndarray, t: AccessTable) -> np.ndarray:
    """Rows of ``t`` grouped by warp instruction: shape ``(instructions, 32 * vec)``."""
    return x.reshape(-1, t.instruction_rows)


def vector_fault(t: AccessTable, j: int, cont: bool, al: bool) -> tuple[dict[str, Any], str]:
    """The witness row of vector access ``j`` of ``t`` and why it is not one legal access
    (misaligned start, elements not contiguous): shared by coalescing and vectorize."""
    w = t.row(j * t.vec)
    why = []
    if not al:
        why.append(f"address {w['address']} is not a multiple of {t.access_bytes}")
    if not cont:
        why.append("its elements are not contiguous")
    return w, (f"{t.access_bytes * 8}-bit access of block {w['block']} thread {w['thread']} step {w['step']} "
               f"at {w['coordinate']}: " + " and ".join(why))


def first_active(sim: Simulator, cp: CopyModel, side: SideModel, blocks: np.ndarray,
                 coord: tuple[int, ...]) -> dict[str, Any] | None:
    """The first active access of ``coord`` on ``side`` among ``blocks`` (in order), as a row
    (pair witnesses: duplicates, aliased writes)."""
    for ch in sim.chunks(blocks):
        t = sim.stage_tables(cp, ch)[0 if side.which == "src" else 1]
        hit = t.pred.copy()
        for c, x in zip(t.coords, coord, strict=True):
            hit &= c == x
        rows = np.flatnonzero(hit)
        if rows.size:
            return t.row(int(rows[0]))
    return None
