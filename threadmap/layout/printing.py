"""Text rendering of layouts, mirroring CuTe's ``print_layout`` (cute/util/print_tensor.hpp)."""

from __future__ import annotations

from typing import Any

import numpy as np

from threadmap.errors import LayoutError
from threadmap.layout.dispatch import LayoutLike
from threadmap.layout.int_tuple import flatten_to_tuple
from threadmap.layout.layout import Layout, cosize, rank, size


def num_digits(x: int) -> int:
    """Decimal digits of ``x`` as CuTe's ``num_digits`` counts them (1 for x < 10, max 10)."""
    if not isinstance(x, (int, np.integer)) or isinstance(x, bool):
        raise LayoutError(f"num_digits needs an integer, got {x!r}")
    for k in range(1, 10):
        if x < 10**k:
            return k
    return 10


def layout_grid(layout: Any) -> np.ndarray:
    """The (m, n) -> offset table of a rank-2 layout as a 2-D numpy array."""
    if not isinstance(layout, (Layout, LayoutLike)) or not callable(layout):
        raise LayoutError(f"print_layout needs a layout, got {layout!r}")
    if rank(layout) != 2:
        raise LayoutError(f"print_layout needs a rank-2 layout, got rank {rank(layout)}: {layout}")
    m, n = size(layout[0]), size(layout[1])
    if m * n > 1 << 22:
        raise LayoutError(f"print_layout of {m}x{n} entries is too large")
    if isinstance(layout, Layout) and any(not isinstance(d, int) for d in flatten_to_tuple(layout.stride)):
        raise LayoutError("print_layout needs integer strides (not basis strides)")
    mm, nn = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return np.asarray(layout(mm + nn * m))


def print_layout(layout: Any, header: str | None = None) -> str:
    """The text CuTe's ``print_layout`` writes for a rank-2 layout (without the ``_`` of static
    integers in the header line): a grid of offsets with row/column indices."""
    if header is not None and not isinstance(header, str):
        raise LayoutError(f"the header of print_layout must be a string, got {header!r}")
    grid = layout_grid(layout)
    m, n = grid.shape
    if isinstance(layout, Layout):
        cs = cosize(layout)
    else:
        cs = int(grid.max()) + 1 if grid.size else 0
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
