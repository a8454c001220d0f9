"""Renderers (threadmap.render): text grids, bank/sector maps and SVG, on hand-built access
tables whose expected pictures are derived by hand (no simulator involved)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable

import numpy as np
import pytest

from threadmap.render import (
    RenderError,
    bank_instruction,
    bank_map,
    heatmap_svg,
    page_svg,
    sector_instruction,
    sector_map,
    tile_grid,
    tile_svg,
)
from threadmap.simulate.access import AccessTable
from threadmap.simulate.build import build_table

SVG = "{http://www.w3.org/2000/svg}"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def make_table(coord_of: Callable[[int, int], tuple[int, ...]], threads: int, values: int, *,
               memory: str = "shared", shape: tuple[int, ...] = (4, 8), elem_bytes: int = 4,
               vec: int = 1, block: int = 0, base: int = 0,
               pred: Callable[[int, int], bool] | None = None) -> AccessTable:
    """An access table where thread ``t``'s value ``v`` is the element ``coord_of(t, v)`` of a
    row-major tensor of ``shape`` at byte ``base``; values ``v`` form access ``v // vec``."""
    table = {(t, v): coord_of(t, v) for t in range(threads) for v in range(values)}
    rank = len(next(iter(table.values())))

    def coords(b, t, s, k):  # noqa: ANN001, ANN202
        v = s * vec + k
        return tuple(np.vectorize(lambda t, v, i=i: table[(int(t), int(v))][i])(t, v) for i in range(rank))

    def p(b, t, s, k):  # noqa: ANN001, ANN202
        v = s * vec + k
        return np.vectorize(lambda t, v: True if pred is None else bool(pred(int(t), int(v))))(t, v)

    return build_table(coords, threads=threads, steps=values // vec, vec=vec, shape=shape, blocks=[block],
                       memory=memory, elem_bytes=elem_bytes, base=base, pred=p, tensor="A")  # type: ignore[arg-type]


def grid_cells(text: str) -> list[list[str]]:
    """The cell labels of a tile_grid drawing, row by row."""
    return [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines()
            if re.match(r"^\s*\d+\s+\|", line)]


# (4,8):(1,4) column-major thread layout over a 4x8 tile: thread t -> (t % 4, t // 4)
def col_major(t: int, v: int) -> tuple[int, int]:
    return (t % 4, t // 4)


# --- text grid ----------------------------------------------------------------------------


def test_tile_grid_column_major_threads_by_hand() -> None:
    # block 3's tile sits at (8, 16); labels must be tile-local
    table = make_table(lambda t, v: (8 + t % 4, 16 + t // 4), 32, 1, shape=(16, 32), block=3)
    text = tile_grid(table, block=3, color=False)
    cells = grid_cells(text)
    assert len(cells) == 4 and all(len(r) == 8 for r in cells)
    # by hand: cell (m, n) belongs to thread m + 4 n
    assert cells[0][0] == "T0V0" and cells[1][0] == "T1V0" and cells[0][1] == "T4V0"
    assert cells[1][2] == "T9V0" and cells[3][7] == "T31V0" and cells[2][5] == "T22V0"
    assert cells == [[f"T{m + 4 * n}V0" for n in range(8)] for m in range(4)]
    # the frame is print_layout's: widest label "T31V0" (5) + 2 -> idx_width 7
    lines = text.splitlines()
    assert "origin (8, 16)" in lines[0]
    assert lines[1] == "    " + "".join(f"  {j:>5} " for j in range(8))
    assert lines[2] == "    " + "+-------" * 8 + "+"
    assert lines[3] == " 0  " + "".join(f"| {f'T{4 * n}V0':>5} " for n in range(8)) + "|"
    assert lines[10] == lines[2]
    assert "! accessed more than once (0)" in text and ". not accessed (0)" in text


def test_tile_grid_marks_missing_duplicated_and_masked() -> None:
    # planted bug: thread 5 writes (1, 0) instead of (1, 1); thread 30 is predicated off
    def bad(t: int, v: int) -> tuple[int, int]:
        return (1, 0) if t == 5 else col_major(t, v)

    table = make_table(bad, 32, 1, pred=lambda t, v: t != 30)
    text = tile_grid(table, color=False)
    cells = grid_cells(text)
    assert cells[1][1] == "."            # (1,1) was thread 5's: nobody touches it
    assert cells[1][0] == "!"            # threads 1 and 5
    assert cells[2][7] == "-"            # thread 30 = (2, 7), predicated off
    assert cells[0][0] == "T0V0" and cells[3][7] == "T31V0"
    flat = [c for r in cells for c in r]
    assert flat.count(".") == 1 and flat.count("!") == 1 and flat.count("-") == 1
    assert ". not accessed (1)" in text and "! accessed more than once (1)" in text
    assert "- predicated off only (1)" in text
    dup = [ln for ln in text.splitlines() if ln.strip().startswith("! (1,0)")]
    assert len(dup) == 1 and "T1V0" in dup[0] and "T5V0" in dup[0]


def test_tile_grid_values_and_rank1() -> None:
    # 2 threads x 4 values along a row: T0 holds columns 0-3 (V0..V3), T1 columns 4-7
    table = make_table(lambda t, v: (0, 4 * t + v), 2, 4, shape=(1, 8), vec=4)
    assert grid_cells(tile_grid(table, color=False)) == [[f"T{n // 4}V{n % 4}" for n in range(8)]]
    # a rank-1 tensor is drawn as an M x 1 column, as CuTe's print_latex does
    table1 = make_table(lambda t, v: (t,), 4, 1, shape=(4,))
    assert grid_cells(tile_grid(table1, color=False)) == [["T0V0"], ["T1V0"], ["T2V0"], ["T3V0"]]


def test_tile_grid_colour_is_decoration_only() -> None:
    table = make_table(col_major, 32, 1)
    plain = tile_grid(table, color=False)
    coloured = tile_grid(table, color=True)
    assert "\x1b[" not in plain and "\x1b[" in coloured
    assert ANSI.sub("", coloured) == plain
    assert "48;2;175;175;255" in coloured   # thread 0's CuTe colour as background


def test_errors() -> None:
    table = make_table(col_major, 32, 1)
    with pytest.raises(RenderError, match="block 7"):
        tile_grid(table, block=7)
    with pytest.raises(RenderError, match="shared memory"):
        bank_map(make_table(col_major, 32, 1, memory="global"))
    with pytest.raises(RenderError, match="global memory"):
        sector_map(table)
    rank3 = make_table(lambda t, v: (0, t % 4, t // 4), 32, 1, shape=(1, 4, 8))
    with pytest.raises(RenderError, match="rank 3"):
        tile_grid(rank3)


# --- bank map -----------------------------------------------------------------------------


def test_bank_map_column_read_of_row_major_f32() -> None:
    # 32x32 f32 row-major smem tile; lane i reads (i, 0): byte 128 i, word 32 i, bank 0
    table = make_table(lambda t, v: (t, 0), 32, 1, shape=(32, 32))
    ins = bank_instruction(table)
    assert ins.phases == 1 and ins.wavefronts == 32 and ins.ideal == 1 and ins.conflicts == 31
    assert ins.lanes_on_bank(0) == tuple(range(32))
    assert all(ins.lanes_on_bank(b) == () for b in range(1, 32))
    assert list(ins.requests[(0, 0)]) == [32 * i for i in range(32)]
    text = bank_map(table, color=False)
    assert "wavefronts: 32 (ideal 1)" in text
    lane_rows = [ln for ln in text.splitlines() if ln.startswith("p0 wf")]
    assert len(lane_rows) == 32
    for k, ln in enumerate(lane_rows):
        cells = [c.strip() for c in ln.split("|")[1:-1]]
        assert len(cells) == 32
        assert cells[0] == str(k) and set(cells[1:]) == {"."}   # lane k, alone, on bank 0
    word_rows = [ln for ln in text.splitlines() if ln.strip().startswith("word|")]
    assert [ln.split("|")[1].strip() for ln in word_rows] == [str(32 * k) for k in range(32)]
    assert "conflict: phase 0 bank 0, 32 words" in text


def test_bank_map_conflict_free_cases() -> None:
    # row read: lane i -> (0, i), bank i: one wavefront
    row = bank_instruction(make_table(lambda t, v: (0, t), 32, 1, shape=(32, 32)))
    assert row.wavefronts == 1 and all(row.lanes_on_bank(b) == (b,) for b in range(32))
    # broadcast: every lane reads (0, 0): one word, one wavefront
    bc = bank_instruction(make_table(lambda t, v: (0, 0), 32, 1, shape=(32, 32)))
    assert bc.wavefronts == 1 and bc.requests == {(0, 0): {0: tuple(range(32))}}
    # 8-byte accesses (f32 x 2) along a row: 2 phases of 16 lanes, 1 wavefront each
    v2 = bank_instruction(make_table(lambda t, v: (0, 2 * t + v), 32, 2, shape=(1, 64), vec=2))
    assert (v2.phases, v2.lanes_per_phase, v2.wavefronts_per_phase, v2.ideal) == (2, 16, (1, 1), 2)
    assert v2.lanes_on_bank(0) == (0, 16) and v2.lanes_on_bank(3) == (1, 17)
    # 16-byte accesses (f32 x 4) down a column of a 32x32 tile: 4 phases of 8 lanes; lane i
    # reads words 32 i .. 32 i + 3 on banks 0-3, so each phase needs 8 wavefronts
    v4 = bank_instruction(make_table(lambda t, v: (t, v), 32, 4, shape=(32, 32), vec=4))
    assert v4.phases == 4 and v4.wavefronts_per_phase == (8, 8, 8, 8) and v4.wavefronts == 32
    assert "wavefronts: 32 (ideal 4) = 8 + 8 + 8 + 8 over phases" in bank_map(
        make_table(lambda t, v: (t, v), 32, 4, shape=(32, 32), vec=4), color=False)


def test_bank_map_ignores_predicated_off_lanes_and_picks_the_warp() -> None:
    # two warps; warp 1 reads a column (conflicts), warp 0 a row; lanes >= 8 of warp 1 masked
    table = make_table(lambda t, v: (0, t) if t < 32 else (t - 32, 0), 64, 1, shape=(32, 32),
                       pred=lambda t, v: t < 40)
    assert bank_instruction(table, warp=0).wavefronts == 1
    w1 = bank_instruction(table, warp=1)
    assert w1.wavefronts == 8 and w1.active_lanes == tuple(range(8))


# --- sector map ---------------------------------------------------------------------------


def test_sector_map_row_and_column_reads() -> None:
    # global f32, 32x32 row-major at a 256-byte aligned base
    row = make_table(lambda t, v: (0, t), 32, 1, shape=(32, 32), memory="global", base=256)
    ins = sector_instruction(row)
    assert ins.sectors == (8, 9, 10, 11) and ins.ideal == 4 and ins.lines == (2,)
    assert ins.lanes[8] == tuple(range(8)) and ins.first_byte[(3, 8)] == 12
    col = make_table(lambda t, v: (t, 0), 32, 1, shape=(32, 32), memory="global", base=256)
    ci = sector_instruction(col)
    assert len(ci.sectors) == 32 and ci.ideal == 4 and all(ci.used[s] == 4 for s in ci.sectors)
    text = sector_map(col, color=False)
    assert "sectors: 32 (ideal 4)" in text
    rows = [ln for ln in text.splitlines() if ln.strip().startswith("0x")]
    assert len(rows) == 32
    # sector k holds only lane k, at offset 0
    for k, ln in enumerate(rows):
        cells = ln.split()[1:33]
        assert cells[k] == "0" and cells.count(".") == 31
    # misaligned by 4 bytes: the row read now straddles 5 sectors
    mis = make_table(lambda t, v: (0, t), 32, 1, shape=(32, 32), memory="global", base=260)
    assert len(sector_instruction(mis).sectors) == 5


# --- SVG ----------------------------------------------------------------------------------


def test_tile_svg_is_xml_with_one_rect_per_cell() -> None:
    table = make_table(col_major, 32, 1)
    root = ET.fromstring(tile_svg(table, title="tile <A> & co"))
    assert root.tag == f"{SVG}svg"
    rects = root.findall(f".//{SVG}rect")
    assert len(rects) == 32
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "tile <A> & co" in texts
    assert "T9" in texts and "V0" in texts
    # cell (1, 2) is thread 9: CuTe colour 9 % 8 = 1 -> rgb(175,255,175), at column 2, row 1
    by_pos = {(float(r.get("x")), float(r.get("y"))): r for r in rects}  # type: ignore[arg-type]
    xs, ys = sorted({k[0] for k in by_pos}), sorted({k[1] for k in by_pos})
    assert len(xs) == 8 and len(ys) == 4
    cell = by_pos[(xs[2], ys[1])]
    assert cell.get("fill") == "rgb(175,255,175)"
    assert cell.find(f"{SVG}title").text == "(1,2) = (1, 2): T9 V0"  # type: ignore[union-attr]
    assert by_pos[(xs[0], ys[0])].get("fill") == "rgb(175,175,255)"
    # axis labels: rows 0-3 and columns 0-7
    assert all(str(i) in texts for i in range(8))


def test_tile_svg_marks_missing_and_duplicates() -> None:
    table = make_table(lambda t, v: (1, 0) if t == 5 else col_major(t, v), 32, 1)
    root = ET.fromstring(tile_svg(table))
    rects = root.findall(f".//{SVG}rect")
    assert len(rects) == 32
    tips = [r.find(f"{SVG}title").text for r in rects]  # type: ignore[union-attr]
    assert sum("not accessed" in t for t in tips) == 1  # type: ignore[operator]
    dup = [t for t in tips if "accessed 2 times" in t]  # type: ignore[operator]
    assert len(dup) == 1 and "T1V0" in dup[0] and "T5V0" in dup[0]


def test_heatmaps_are_xml() -> None:
    smem = make_table(lambda t, v: (t % 32, 0) if t < 32 else (0, t - 32), 64, 1, shape=(32, 32))
    root = ET.fromstring(heatmap_svg(smem))
    rects = root.findall(f".//{SVG}rect")
    assert len(rects) == 2 * 32                     # 2 warp instructions x 32 banks
    tips = [r.find(f"{SVG}title").text or "" for r in rects]  # type: ignore[union-attr]
    assert "CONFLICT" in tips[0] and "lanes 0-31" in tips[0]   # warp 0, bank 0
    assert all("idle" in t for t in tips[1:32])
    assert all("CONFLICT" not in t for t in tips[32:])
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "32 wf (ideal 1)" in texts and "1 wf (ideal 1)" in texts

    gmem = make_table(lambda t, v: (t, 0), 32, 1, shape=(32, 32), memory="global")
    groot = ET.fromstring(heatmap_svg(gmem))
    assert len(groot.findall(f".//{SVG}rect")) == 32  # 32 sectors, 4 bytes used of each, rows 128 B apart
    assert "32 sectors (ideal 4), 32 lines" in [t.text for t in groot.iter(f"{SVG}text")]

    page = ET.fromstring(page_svg([gmem, smem]))
    assert len(page.findall(f"{SVG}g")) == 4          # two tiles, two heat maps
    with pytest.raises(RenderError):
        heatmap_svg(make_table(col_major, 32, 1, memory="register"))


def test_show_gives_a_cp_async_ca_instruction_the_wavefronts_verify_counts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``threadmap show`` of a CACHEALWAYS stage drew only the store's bank map (4 wavefronts)
    where ``verify`` counts the LDGSTS rule's 8 for the same instruction (8 global lines)."""
    from pathlib import Path

    import threadmap.api as api
    from threadmap import hardware as hw

    root = Path(__file__).resolve().parents[2]
    spec = tmp_path / "a_ca.yaml"
    spec.write_text((root / "specs" / "cutlass" / "sm80_f16_gemm_a_128x32_warpraked.yaml").read_text()
                    .replace("SM80_CP_ASYNC_CACHEGLOBAL<", "SM80_CP_ASYNC_CACHEALWAYS<"))
    ((src, dst),) = api.simulate(spec)
    rows = range(0, dst.instruction_rows, dst.vec)  # block 0, warp 0, step 0
    want = hw.ldgsts_wavefronts([(int(dst.lane[r]), int(dst.addr[r]), int(src.addr[r])) for r in rows], 16)
    (line,) = [ln for ln in api.show(spec, stage=0).text.splitlines() if ln.startswith("cp.async.ca (LDGSTS)")]
    assert f"{want.wavefronts} wavefronts (ideal {want.ideal})" in line and want.wavefronts == 8
    (run,) = api.verify_spec(spec, checks=["bank_conflicts"])
    assert run.results[0].summary.max_wavefronts == want.wavefronts
    plain = root / "specs" / "cutlass" / "sm80_f16_gemm_a_128x32_warpraked.yaml"  # .cg: the store's map alone
    assert "cp.async.ca (LDGSTS)" not in api.show(plain, stage=0).text
