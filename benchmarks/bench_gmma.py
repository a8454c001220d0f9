"""What GMMA descriptors cost, side by side in one process.

    python benchmarks/bench_gmma.py

For a 128 x 256 x 64 CTA tile of f16 (A 128 x 64 and B 256 x 64 in shared memory, 128-byte
swizzle, K-major and MN-major):

1. ``make_gmma_desc`` of one wgmma operand (A: 64 x 16; B: 256 x 16);
2. ``make_gmma_desc_tensor``: every descriptor the mainloop issues for the stage (A: 2 x 4
   blocks, B: 1 x 4 blocks) -- the issue's "descriptor construction for a 128 x 256 tile";
3. ``gmma_smem_addresses`` of every block (the addresses the tensor core reads).

Median CPU seconds (``time.process_time``) of 30 runs.  Prints numbers; asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from threadmap.layout import (  # noqa: E402
    gmma_layout_atom,
    gmma_smem_addresses,
    local_tile,
    make_gmma_desc,
    make_tensor,
)
from threadmap.layout.atom.mma_traits_sm90_gmma import make_gmma_desc_tensor  # noqa: E402
from threadmap.layout.layout_composed import ComposedLayout  # noqa: E402


def median_s(f: Callable[[], object], repeat: int = 30) -> float:
    ts = []
    for _ in range(repeat):
        t0 = time.process_time()
        f()
        ts.append(time.process_time() - t0)
    return statistics.median(ts)


def row(major: str) -> tuple[float, float, float]:
    """CPU seconds: one operand's descriptor, the whole tile's, the read addresses of every block."""
    atom = gmma_layout_atom(major, "SW128", 16)
    sa, sb = atom.tile_to_shape((128, 64)), atom.tile_to_shape((256, 64))
    first = local_tile(make_tensor(0, sb.layout_b), (256, 16), (0, 0)).layout
    one = median_s(lambda: make_gmma_desc(major, ComposedLayout(atom.layout_a, atom.offset, first), 16, 32768))

    def tile() -> tuple[dict, dict]:
        return (make_gmma_desc_tensor(major, sa, (64, 16), 16, 0),
                make_gmma_desc_tensor(major, sb, (256, 16), 16, 16384))
    whole = median_s(tile)
    da, db = tile()
    reads = median_s(lambda: [gmma_smem_addresses(d, major, 64, 16, 16) for d in da.values()]
                     + [gmma_smem_addresses(d, major, 256, 16, 16) for d in db.values()])
    return one, whole, reads


def main() -> None:
    print("GMMA descriptors of a 128 x 256 x 64 f16 CTA tile, 128-byte swizzle (median CPU ms of 30)")
    print(f"  {'major':6s} {'one operand':>12s} {'whole tile':>11s} {'read addresses':>15s}")
    for major in ("K", "MN"):
        one, whole, reads = row(major)
        print(f"  {major:6s} {one * 1e3:10.2f} ms {whole * 1e3:8.2f} ms {reads * 1e3:12.2f} ms")


if __name__ == "__main__":
    main()
