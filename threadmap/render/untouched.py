"""What a CUTLASS thread map leaves of its own tile: the cells no thread ever accesses.

A thread map whose iterations and deltas do not reach across its ``Shape`` (for instance
``PitchLinearWarpRakedThreadMap<8x20, 128, 8x4, 1>``, whose warps stop at strided row 16)
compiles and runs, and silently leaves the rest of the tile alone.  ``threadmap threadmap``
and ``threadmap show`` warn with these rows.  Counted from the map's ``coordinates()``, the
same enumeration the simulator uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Untouched:
    """The cells of a thread map's tile (contiguous x strided) that no access reaches."""

    shape: tuple[int, int]      # (contiguous, strided)
    rows: tuple[int, ...]       # strided indices none of whose cells is accessed
    cells: int                  # every untouched cell (in those rows and elsewhere)

    def text(self) -> str:
        """``strided rows 16..19 of its 8x20 tile (160 of 160 elements) are never accessed``."""
        c, s = self.shape
        where = f"strided rows {ranges(self.rows)}" if self.rows else "some elements"
        more = self.cells - len(self.rows) * c
        tail = f", and {more} other elements" if self.rows and more else ""
        return (f"{where} of its {c}x{s} tile{tail} are never accessed ({self.cells} of {c * s} elements "
                "untouched)")


def ranges(values: tuple[int, ...]) -> str:
    """``(0, 1, 2, 5)`` -> ``0..2, 5``."""
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(str(values[i]) if i == j else f"{values[i]}..{values[j]}")
        i = j + 1
    return ", ".join(out)


def untouched(tm: Any) -> Untouched | None:
    """The cells of ``tm.shape`` that ``tm.coordinates()`` never reaches; None when every
    cell is reached (or the map has no ``shape``)."""
    shape = getattr(tm, "shape", None)
    if shape is None:
        return None
    c, s = int(shape[0]), int(shape[1])
    co = np.asarray(tm.coordinates()).reshape(-1, 2)
    inside = (co[:, 0] >= 0) & (co[:, 0] < c) & (co[:, 1] >= 0) & (co[:, 1] < s)
    hit = np.zeros((s, c), dtype=bool)
    hit[co[inside, 1], co[inside, 0]] = True
    cells = int(hit.size - np.count_nonzero(hit))
    if cells == 0:
        return None
    rows = tuple(int(r) for r in np.flatnonzero(~hit.any(axis=1)))
    return Untouched((c, s), rows, cells)
