"""TMA loads on an H200 against threadmap's model: ``tools/gpu/tma`` encoded a tensor map for
every case of its ``cases.py`` (descriptors from ``make_tma_copy``), loaded one box each and
dumped the shared bytes (docs/hardware/tma/h200_dump.bin.gz: 64 KiB per load, unwritten bytes
0xAA); the loads whose box starts off 16 bytes ran one per process (h200_traps.txt)."""

from __future__ import annotations

import gzip
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from threadmap.layout.atom.copy_traits_sm90_tma import tma_load_violations, tma_store_violations

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "hardware" / "tma"


def _tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"tma_{name}", ROOT / "tools" / "gpu" / "tma" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "tools" / "gpu" / "tma"))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(ROOT / "tools" / "gpu" / "tma"))
    return mod


CASES = _tool("cases")
CHECK = _tool("check")


def test_the_cases_are_the_ones_that_ran() -> None:
    """The table the device read is the one cases.py writes today."""
    import io
    buf = io.StringIO()
    CASES.write(buf)
    assert buf.getvalue() == (DATA / "h200_cases.txt").read_text()


def test_every_byte_tma_wrote_is_the_model_s() -> None:
    dump = gzip.decompress((DATA / "h200_dump.bin.gz").read_bytes())
    loads = list(CASES.cases())
    assert len(dump) == len(loads) * CHECK.REGION
    copies = {id(t) for _, t, _, _ in loads}
    modes = {t.desc.swizzle for _, t, _, _ in loads}
    ranks = {t.desc.rank for _, t, _, _ in loads}
    assert len(loads) >= 150 and len(copies) >= 30 and modes == {0, 1, 2, 3} and ranks == {2, 3, 4, 5}
    differ = [name for i, (name, t, c, base) in enumerate(loads)
              if dump[i * CHECK.REGION:(i + 1) * CHECK.REGION] != CHECK.expected(t, c, base)]
    assert differ == []
    # the zero fill is exercised: some loads write zeros, and the dump holds them
    assert any(None in __import__("threadmap.layout.atom.copy_traits_sm90_tma", fromlist=["x"])
               .tma_box_image(t.desc, c, b).values() for _, t, c, b in loads)


def _traps() -> list[tuple[str, bool]]:
    out = []
    for line in (DATA / "h200_traps.txt").read_text().splitlines():
        name, _, status, *_ = line.split()
        out.append((name, status != "0"))
    return out


@pytest.mark.parametrize(("name", "trapped"), _traps())
def test_the_loads_and_stores_the_h200_stopped_are_the_violations(name: str, trapped: bool) -> None:
    """A load whose box starts off 16 bytes, a store whose box starts before the tensor: the
    illegal instructions the H200 raised, and no other."""
    if name.startswith("store_"):
        (t, c) = next((t, c) for n, t, c, _ in CASES.store_traps() if n == name)
        assert bool(tma_store_violations(t.desc, c)) == trapped
    else:
        (t, c) = next((t, c) for n, t, c, _ in CASES.traps() if n == name)
        assert bool(tma_load_violations(t.desc, c)) == trapped


def test_the_stores_as_the_device_checked_them() -> None:
    """The device compared each store's global bytes with tma_box_store (check.txt): every
    store but one equal; the one is recorded, not hidden (docs/tma.md)."""
    lines = (DATA / "h200_check.txt").read_text().splitlines()
    differ = [ln.split()[0] for ln in lines[:-1] if not ln.endswith(": 0 bytes differ")]
    assert differ == ["f32_4d_edge"] and lines[-1] == "156 loads, 155 identical, 1 differ"


TILES = _tool("check_tiles")


def test_cutes_own_copy_of_whole_tiles_is_the_model_s() -> None:
    """tile_copy.cu: make_tma_copy on the host and copy(tma.with(bar), tAgA, tAsA) in the
    kernel, for 10 tiles (every K-major GMMA atom, MN-major, f32, tiles across the tensor's end,
    tiles 256 and 512 bytes off their 1024-byte block) -- every byte as tma_tile_image says;
    the tiles off their block do not read back through the tile-relative layout, the rest do."""
    dump = gzip.decompress((DATA / "h200_tiles.bin.gz").read_bytes())
    tiles = list(TILES.tiles())
    assert len(dump) == len(tiles) * TILES.REGION
    for i, (name, t, origin, base) in enumerate(tiles):
        assert dump[i * TILES.REGION:(i + 1) * TILES.REGION] == TILES.expected(t, origin, base), name
        wrong, witnesses = __import__("threadmap.layout.atom.copy_traits_sm90_tma", fromlist=["x"]) \
            .tma_tile_mismatches(t, origin, base)
        assert (wrong > 0) == (base % 1024 != 0), (name, wrong)
        assert len(witnesses) == min(wrong, 8)
