"""Compare tile_copy.cu's dump (CuTe's own TMA copy of a whole tile) with threadmap's
``tma_tile_image`` for the same cases, and say for each whether the tile reads back through
its shared layout as the tile (``tma_tile_mismatches``: 0 unless the tile is off its swizzle's
1024-byte alignment).

    python tools/gpu/tma/check_tiles.py DUMP [OUT_JSON]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from check import REGION, region  # noqa: E402

from threadmap.layout import Dyn, gmma_layout_atom, make_layout, make_tma_copy  # noqa: E402
from threadmap.layout.atom.copy_traits_sm90_tma import TmaCopy, tma_tile_image, tma_tile_mismatches  # noqa: E402

#: tile_copy.cu's cases in its order: name, element bits, K-major, atom, tile shape, M, K, tile (m, k), offset
TILES = [("k_sw128_f16", 16, True, ("K", "SW128"), (128, 64), 300, 200, (1, 1), 0),
         ("k_sw128_f16_edge", 16, True, ("K", "SW128"), (128, 64), 300, 200, (2, 3), 0),
         ("k_sw128_f16_off512", 16, True, ("K", "SW128"), (128, 64), 300, 200, (1, 1), 512),
         ("k_sw64_f16", 16, True, ("K", "SW64"), (64, 32), 300, 200, (2, 1), 0),
         ("k_sw32_f16", 16, True, ("K", "SW32"), (64, 16), 300, 200, (1, 2), 0),
         ("k_inter_f16", 16, True, ("K", "INTER"), (64, 32), 300, 200, (3, 1), 0),
         ("mn_sw128_f16", 16, False, ("MN", "SW128"), (128, 64), 304, 200, (1, 1), 0),
         ("mn_sw128_f16_off256", 16, False, ("MN", "SW128"), (128, 64), 304, 200, (0, 2), 256),
         ("mn_sw64_f32", 32, False, ("MN", "SW64"), (64, 32), 304, 120, (2, 1), 0),
         ("k_sw128_f32_edge", 32, True, ("K", "SW128"), (64, 32), 300, 120, (4, 3), 0)]


def tiles() -> Iterator[tuple[str, TmaCopy, tuple[int, int], int]]:
    for name, bits, k_major, (major, sw), shape, m, k, (mt, kt), base in TILES:
        stride = (Dyn(k), 1) if k_major else (1, Dyn(m))
        smem = gmma_layout_atom(major, sw, bits).tile_to_shape(shape)
        t = make_tma_copy("SM90_TMA_LOAD", make_layout((Dyn(m), Dyn(k)), stride), smem, elem_bits=bits,
                          data_type="f16" if bits == 16 else "f32")
        yield name, t, (mt * shape[0], kt * shape[1]), base


def expected(t: TmaCopy, origin: tuple[int, int], base: int) -> bytearray:
    return region(tma_tile_image(t, origin, base), t.elem_bits // 8, base)


def main() -> int:
    dump = Path(sys.argv[1]).read_bytes()
    rows: list[dict[str, Any]] = []
    bad = 0
    for i, (name, t, origin, base) in enumerate(tiles()):
        got = dump[i * REGION:(i + 1) * REGION]
        diff = sum(1 for a, b in zip(got, expected(t, origin, base)) if a != b)
        wrong, _ = tma_tile_mismatches(t, origin, base)
        bad += diff > 0
        rows.append({"case": name, "origin": list(origin), "smem_offset": base, "bytes_differing": diff,
                     "tile_elements_read_wrong_through_the_layout": wrong})
        print(f"{name:22s} origin {origin} +{base}: {diff} bytes differ from the model; "
              f"{wrong} tile elements wrong through the tile-relative layout")
    print(f"{len(rows)} tiles, {len(rows) - bad} identical, {bad} differ")
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(json.dumps({"tiles": rows}, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
