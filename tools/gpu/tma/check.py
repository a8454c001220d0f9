"""Compare tma_image's dump with ``tma_box_image`` for every case of cases.py.

    python tools/gpu/tma/check.py DUMP [OUT_JSON [STORES]]

STORES: the stores' changed global bytes (tma_image's third file); a case's differing bytes then
count the load's and the store's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cases import cases  # noqa: E402

from threadmap.layout.atom.copy_traits_sm90_tma import tma_box_image, tma_box_store  # noqa: E402

REGION = 64 * 1024


def region(image: dict[int, int | None], eb: int, base: int) -> bytearray:
    """The dumped shared region an image predicts: 0xAA where nothing was written, zeros for a
    zero-filled element, else the global bytes' fill ((k * 131 + 7) & 0xff at global byte k)."""
    out = bytearray([0xAA]) * REGION
    for off, e in image.items():
        for j in range(eb):
            out[base + off + j] = 0 if e is None else (((e * eb + j) * 131 + 7) & 0xFF)
    return out


def expected(t, coord: tuple[int, ...], base: int) -> bytearray:  # type: ignore[no-untyped-def]
    return region(tma_box_image(t.desc, coord, base), t.desc.elem_bytes, base)


def store_mismatches(t, coord: tuple[int, ...], base: int, changed: dict[int, int]) -> int:  # type: ignore[no-untyped-def]
    """Global bytes where the store's result differs from the model: shared byte i held
    (i * 37 + 11) & 0xff (from the aligned base), global byte k (k * 131 + 7) & 0xff before."""
    eb = t.desc.elem_bytes
    want: dict[int, int] = {}
    for e, off in tma_box_store(t.desc, coord, base).items():
        for j in range(eb):
            want[e * eb + j] = ((base + off + j) * 37 + 11) & 0xFF
    bad = sum(1 for k in changed if k not in want)
    for k, v in want.items():
        initial = (k * 131 + 7) & 0xFF
        bad += (changed.get(k) != v) if v != initial else (k in changed)
    return bad


def read_stores(path: str) -> dict[str, dict[int, int]]:
    out: dict[str, dict[int, int]] = {}
    for line in Path(path).read_text().splitlines():
        name, n, *rest = line.split()
        vals = list(map(int, rest))
        assert len(vals) == 2 * int(n), name
        out[name] = dict(zip(vals[::2], vals[1::2]))
    return out


def main() -> int:
    dump = Path(sys.argv[1]).read_bytes()
    stores = read_stores(sys.argv[3]) if len(sys.argv) > 3 else {}
    rows, bad = [], 0
    for i, (name, t, coord, base) in enumerate(cases()):
        got = dump[i * REGION:(i + 1) * REGION]
        want = expected(t, coord, base)
        diff = sum(1 for a, b in zip(got, want) if a != b)
        if name in stores:
            diff += store_mismatches(t, coord, base, stores[name])
        bad += diff > 0
        rows.append({"case": name, "rank": t.desc.rank, "swizzle": t.desc.swizzle, "box": list(t.desc.box_dim),
                     "coord": list(coord), "smem_offset": base, "bytes_differing": diff,
                     "box_bytes": t.desc.box_bytes})
        print(f"{name:28s} rank {t.desc.rank} sw {t.desc.swizzle} box {t.desc.box_dim} at {coord} +{base}: "
              f"{diff} bytes differ")
    print(f"{len(rows)} loads, {len(rows) - bad} identical, {bad} differ")
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(json.dumps({"loads": rows}, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
