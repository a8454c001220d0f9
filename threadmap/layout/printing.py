"""Text rendering of layouts, mirroring CuTe's ``print_layout`` (cute/util/print_tensor.hpp)."""

from __future__ import annotations

from typing import Any

import numpy as np

from threadmap.errors import LayoutError
from threadmap.layout.layout import Layout, cosize, rank, size


def num_digits(x: int) -> int:
    """Decimal digits of ``x`` as CuTe's ``num_digits`` counts them (1 for x < 10, max 10)."""
    for k in range(1, 10):
        if x < 10**k:
            return k
    return 10


def layout_grid(layout: Any) -> np.ndarray:
    """The (m, n) -> offset table of a rank-2 layout as a 2-D numpy array."""
    if rank(layout) != 2:
        raise LayoutError(f"print_layout needs a rank-2 layout, got rank {rank(layout)}: {layout}")
    m, n = size(layout[0]), size(layout[1])
    mm, nn = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return np.asarray(layout(mm + nn * m))


def print_layout(layout: Any, header: str | None = None) -> str:
    """The text CuTe's ``print_layout`` writes for a rank-2 layout (without the ``_`` of static
    integers in the header line): a grid of offsets with row/column indices."""
    grid = layout_grid(layout)
    m, n = grid.shape
    cs = cosize(layout) if isinstance(layout, Layout) else int(grid.max()) + 1
    w = num_digits(cs) + 2
    delim = "+-----------------------"[: w + 1]
    lines = [header if header is not None else str(layout)]
    lines.append("    " + "".join(f"  {j:>{w - 2}} " for j in range(n)))
    sep = "    " + delim * n + "+"
    for i in range(m):
        lines.append(sep)
        lines.append(f"{i:>2}  " + "".join(f"| {int(v):>{w - 2}} " for v in grid[i]) + "|")
    lines.append(sep)
    return "\n".join(lines) + "\n"
