"""SVG drawings of access tables, in the style of CuTe's ``print_svg`` / ``print_latex_tv``
(cute/util/print_svg.hpp, print_latex.hpp).

* :func:`tile_svg` -- the tile of one block: a grid of 20-pixel cells filled with CuTe's pastel
  colour of the accessing thread (``SVGColor_TV``: 8 colours cycling over thread ids), each
  labelled ``T{thread}`` above ``V{value}`` in 8-point text, row and column indices in
  12-point text on the left and top, as ``print_svg_mma`` draws an operand.  Every cell has
  a ``<title>`` tooltip with its coordinates and accesses.
* :func:`heatmap_svg` -- per warp instruction of one block: for shared memory a 32-bank heat
  map (colour = distinct words a bank serves in its busiest phase, conflicting lanes in the
  tooltip), for global memory a sector heat map (one cell per 32-byte sector touched, colour =
  how much of it the instruction uses).
* :func:`page_svg` -- several of these stacked on one page (what ``threadmap show --svg``
  writes).

The SVG is written by hand (no dependency) and is well-formed XML: every text and attribute
goes through :mod:`xml.sax.saxutils`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from threadmap.render.common import (
    LINE_BYTES,
    NUM_BANKS,
    SECTOR_BYTES,
    RenderError,
    bank_instruction,
    compact_ints,
    describe,
    sector_instruction,
    thread_color,
    tile_view,
    warp_instructions,
)
from threadmap.simulate.access import AccessTable, Rows

CELL = 20                 # CuTe's cell_size
FONT_CELL = 8             # CuTe's font-size of T/V labels
FONT_AXIS = 12            # CuTe's font-size of row/column indices
LINE_H = 14               # legend line height
CHAR_W = 6.5              # rough advance of one 11-px character, for page widths

WHITE = (255, 255, 255)
MASKED_FILL = (230, 230, 230)
DUP_FILL = (255, 80, 80)
GOOD = (198, 239, 206)
WARN = (255, 235, 156)
BAD = (248, 105, 107)


@dataclass
class Drawing:
    """An SVG fragment with its size; :meth:`svg` wraps it into a document."""

    width: float
    height: float
    body: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)

    def svg(self) -> str:
        """A standalone SVG document."""
        return _document([self])


def _comment(text: str) -> str:
    # "--" may not appear inside an XML comment
    return "<!-- " + escape(text).replace("--", "- -") + " -->"


def _document(drawings: Sequence[Drawing], gap: float = 20) -> str:
    width = max((d.width for d in drawings), default=0)
    height = sum(d.height for d in drawings) + gap * max(len(drawings) - 1, 0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(width)}" height="{_n(height)}" '
           f'viewBox="0 0 {_n(width)} {_n(height)}" font-family="monospace">']
    y = 0.0
    for d in drawings:
        out.extend(_comment(c) for c in d.comments)
        out.append(f'<g transform="translate(0,{_n(y)})">')
        out += d.body
        out.append("</g>")
        y += d.height + gap
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _n(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


def _rgb(c: tuple[int, int, int]) -> str:
    return f"rgb({c[0]},{c[1]},{c[2]})"


def _mix(a: tuple[int, int, int], b: tuple[int, int, int], t: float) -> tuple[int, int, int]:
    t = min(max(t, 0.0), 1.0)
    return (round(a[0] + (b[0] - a[0]) * t), round(a[1] + (b[1] - a[1]) * t),
            round(a[2] + (b[2] - a[2]) * t))


def _rect(x: float, y: float, w: float, h: float, fill: tuple[int, int, int], tip: str,
          cls: str = "cell") -> str:
    return (f'<rect class="{cls}" x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" '
            f'fill="{_rgb(fill)}" stroke="black"><title>{escape(tip)}</title></rect>')


def _text(x: float, y: float, s: str, size: int = FONT_CELL, anchor: str = "middle",
          fill: str = "black", weight: str | None = None) -> str:
    w = f' font-weight="{weight}"' if weight else ""
    return (f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" dominant-baseline="central" '
            f'font-size="{size}" fill={quoteattr(fill)}{w}>{escape(s)}</text>')


def _text_width(s: str, size: float = 11) -> float:
    return len(s) * CHAR_W * size / 11


# --------------------------------------------------------------------------------------------
# Tile
# --------------------------------------------------------------------------------------------


def tile_drawing(table: AccessTable, block: int = 0, *, title: str | None = None,
                 origin: Sequence[int] | None = None, extent: Sequence[int] | None = None) -> Drawing:
    """The :func:`tile_svg` picture as a :class:`Drawing` (for :func:`page_svg`)."""
    view = tile_view(table, block, origin=origin, extent=extent)
    m, n = view.shape
    present = view.thread[view.thread >= 0]
    vals = view.value[view.value >= 0]
    longest = max(len(f"T{int(present.max())}") if present.size else 1,
                  len(f"V{int(vals.max())}") if vals.size else 1, 2)
    cw = max(CELL, 5 * longest + 4)
    ch = CELL
    head = title if title is not None else (
        f"{describe(table)}  block {block}: tile {m}x{n} at origin {view.origin}")
    top = 24
    x0, y0 = cw, top + ch
    body = [_text(4, 12, head, size=12, anchor="start", weight="bold")]

    for i in range(m):
        for j in range(n):
            x, y = x0 + j * cw, y0 + i * ch
            where = f"({i},{j}) = {(view.origin[0] + i, view.origin[1] + j)}"
            cnt = int(view.count[i, j])
            t, v = int(view.thread[i, j]), int(view.value[i, j])
            if cnt > 1:
                acc = view.accessors.get((i, j), [])
                who = ", ".join(f"T{a}V{b} step {s}" for a, b, s in acc) or f"{cnt} accesses"
                body.append(_rect(x, y, cw, ch, DUP_FILL, f"{where}: accessed {cnt} times: {who}"))
                body.append(_text(x + cw / 2, y + ch / 2, f"!{cnt}", fill="white", weight="bold"))
            elif cnt == 1:
                body.append(_rect(x, y, cw, ch, thread_color(t), f"{where}: T{t} V{v}"))
                body.append(_text(x + cw / 2, y + ch / 4, f"T{t}"))
                body.append(_text(x + cw / 2, y + 3 * ch / 4, f"V{v}"))
            elif view.masked[i, j]:
                body.append(_rect(x, y, cw, ch, MASKED_FILL, f"{where}: predicated off (T{t} V{v})"))
                body.append(_text(x + cw / 2, y + ch / 4, f"T{t}", fill="gray"))
                body.append(_text(x + cw / 2, y + 3 * ch / 4, f"V{v}", fill="gray"))
            else:
                body.append(_rect(x, y, cw, ch, WHITE, f"{where}: not accessed"))
    for i in range(m):
        body.append(_text(x0 - cw / 2, y0 + i * ch + ch / 2, str(i), size=FONT_AXIS))
    for j in range(n):
        body.append(_text(x0 + j * cw + cw / 2, y0 - ch / 2, str(j), size=FONT_AXIS))

    legend = ["cells: T<thread> V<value>, coloured by thread % 8 (CuTe SVGColor_TV)",
              f"white: not accessed ({int(view.missing.sum())}); red !k: accessed k times "
              f"({int(view.duplicated.sum())}); grey: predicated off ({int(view.masked.sum())})"]
    if view.outside:
        legend.append(f"{view.outside} accesses fall outside the drawn tile")
    ly = y0 + m * ch + 6
    for k, line in enumerate(legend):
        body.append(_text(4, ly + LINE_H * k + LINE_H / 2, line, size=11, anchor="start"))
    width = max(x0 + n * cw + 10, max(_text_width(s) for s in [*legend, head]) + 10)
    height = ly + LINE_H * len(legend) + 4
    comments = [f"tensor {table.tensor} memory {table.memory} stage {table.stage} side {table.side} "
                f"block {block} origin {view.origin} shape {view.shape}"]
    return Drawing(width, height, body, comments)


def tile_svg(table: AccessTable, block: int = 0, title: str | None = None, *,
             origin: Sequence[int] | None = None, extent: Sequence[int] | None = None) -> str:
    """The tile of ``block`` as an SVG document in the style of CuTe's ``print_svg``.

    One ``<rect>`` per cell of the tile (tile-local coordinates, origin = least coordinate per
    mode over the block's accesses unless ``origin`` is given), filled with CuTe's pastel colour
    of the accessing thread and labelled ``T{t}`` / ``V{v}``; not accessed cells are white,
    doubly accessed ones red (``!k``), predicated-off ones grey.  Each cell's ``<title>`` says
    its tile-local and global coordinates and who accesses it.
    """
    return tile_drawing(table, block, title=title, origin=origin, extent=extent).svg()


# --------------------------------------------------------------------------------------------
# Heat maps
# --------------------------------------------------------------------------------------------


def _instructions(table: AccessTable, block: int, max_instructions: int
                  ) -> tuple[Rows, list[tuple[int, int]], int]:
    rows = table.select(table.block == block)
    if len(rows) == 0:
        raise RenderError(f"{describe(table)}: no accesses in block {block}")
    ins = warp_instructions(rows, block)
    return rows, ins[:max_instructions], max(len(ins) - max_instructions, 0)


def bank_heatmap_drawing(table: AccessTable, block: int = 0, *, title: str | None = None,
                         max_instructions: int = 256) -> Drawing:
    """The shared-memory heat map of :func:`heatmap_svg` as a :class:`Drawing`."""
    rows, instrs, dropped = _instructions(table, block, max_instructions)
    analyses = [bank_instruction(rows, block, s, w) for w, s in instrs]
    loads = np.array([[a.bank_load(b) for b in range(NUM_BANKS)] for a in analyses], dtype=np.int64)
    vmax = int(loads.max()) if loads.size else 0
    head = title if title is not None else (
        f"{describe(table)}  block {block}: shared-memory banks per warp instruction")
    body = _heat_frame(head, NUM_BANKS, analyses)
    x0, cw, ch = _HEAT_X0, _HEAT_CW, _HEAT_CH
    for r, a in enumerate(analyses):
        y = _HEAT_Y0 + r * ch
        for b in range(NUM_BANKS):
            v = int(loads[r, b])
            fill = WHITE if v == 0 else GOOD if v == 1 else _mix(WARN, BAD, (v - 2) / max(vmax - 2, 1))
            parts = []
            for p in range(a.phases):
                words = a.requests.get((p, b), {})
                if words:
                    ws = "; ".join(f"word {wd}: lanes {compact_ints(ls)}" for wd, ls in words.items())
                    lanes = compact_ints([ln for ls in words.values() for ln in ls])
                    tag = f" CONFLICT between lanes {lanes}" if len(words) > 1 else ""
                    parts.append(f"phase {p}{tag}: {ws}")
            tip = (f"warp {a.warp} step {a.step} bank {b}: {v} distinct word(s) in busiest phase"
                   + ("; " + " | ".join(parts) if parts else "; idle"))
            body.append(_rect(x0 + b * cw, y, cw, ch, fill, tip))
            if v:
                body.append(_text(x0 + b * cw + cw / 2, y + ch / 2, str(v)))
        verdict = f"{a.wavefronts} wf (ideal {a.ideal})"
        body.append(_text(x0 + NUM_BANKS * cw + 6, y + ch / 2, verdict, size=10, anchor="start",
                          fill="black" if a.conflicts == 0 else "red"))
    legend = ["colour: distinct 4-byte words a bank serves in its busiest phase",
              "(green 1 = no conflict, yellow-red >1); right: wavefronts vs ideal;",
              "hover a cell for its words and lanes"]
    return _finish_heatmap(body, legend, dropped, len(analyses), NUM_BANKS, 130, head,
                           f"bank heat map: tensor {table.tensor} block {block}")


_HEAT_CW, _HEAT_CH = 20, 16                      # a heat map cell
_HEAT_X0, _HEAT_Y0 = 56, 24 + _HEAT_CH           # its grid's top left (row labels to the left)


def _heat_frame(head: str, ncols: int, analyses: Sequence[Any]) -> list[str]:
    """A heat map's title, column numbers and one ``w{warp} s{step}`` label per row."""
    body = [_text(4, 12, head, size=12, anchor="start", weight="bold")]
    for k in range(ncols):
        body.append(_text(_HEAT_X0 + k * _HEAT_CW + _HEAT_CW / 2, _HEAT_Y0 - _HEAT_CH / 2, str(k), size=FONT_CELL))
    for r, a in enumerate(analyses):
        body.append(_text(_HEAT_X0 - 4, _HEAT_Y0 + r * _HEAT_CH + _HEAT_CH / 2, f"w{a.warp} s{a.step}", size=10,
                          anchor="end"))
    return body


def _finish_heatmap(body: list[str], legend: list[str], dropped: int, nrows: int, ncols: int, right: float,
                    head: str, caption: str) -> Drawing:
    """Append the legend below a heat map's ``nrows`` x ``ncols`` grid (``right``: the width
    of the verdicts at its right) and size the drawing."""
    ly = _HEAT_Y0 + nrows * _HEAT_CH + 6
    grid_width = _HEAT_X0 + ncols * _HEAT_CW + right
    if dropped:
        legend.append(f"{dropped} more warp instructions not drawn")
    for k, line in enumerate(legend):
        body.append(_text(4, ly + LINE_H * k + LINE_H / 2, line, size=11, anchor="start"))
    width = max(grid_width, max(_text_width(s) for s in [*legend, head]) + 10)
    return Drawing(width, ly + LINE_H * len(legend) + 4, body, [caption])


def sector_heatmap_drawing(table: AccessTable, block: int = 0, *, title: str | None = None,
                           max_instructions: int = 256) -> Drawing:
    """The global-memory heat map of :func:`heatmap_svg` as a :class:`Drawing`."""
    rows, instrs, dropped = _instructions(table, block, max_instructions)
    analyses = [sector_instruction(rows, block, s, w) for w, s in instrs]
    ncols = max((len(a.sectors) for a in analyses), default=0)
    head = title if title is not None else (
        f"{describe(table)}  block {block}: global-memory sectors per warp instruction")
    body = _heat_frame(head, ncols, analyses)
    x0, cw, ch = _HEAT_X0, _HEAT_CW, _HEAT_CH
    for r, a in enumerate(analyses):
        y = _HEAT_Y0 + r * ch
        for k, s in enumerate(a.sectors):
            used = a.used[s]
            fill = _mix(GOOD, BAD, 1 - used / SECTOR_BYTES)
            tip = (f"warp {a.warp} step {a.step}: sector at byte {s * SECTOR_BYTES:#x} "
                   f"(line {s * SECTOR_BYTES // LINE_BYTES}): {used}/{SECTOR_BYTES} bytes used, "
                   f"lanes {compact_ints(a.lanes[s])}")
            body.append(_rect(x0 + k * cw, y, cw, ch, fill, tip))
            body.append(_text(x0 + k * cw + cw / 2, y + ch / 2, str(used)))
        n = len(a.sectors)
        verdict = f"{n} sectors (ideal {a.ideal}), {len(a.lines)} lines"
        body.append(_text(x0 + ncols * cw + 6, y + ch / 2, verdict, size=10, anchor="start",
                          fill="black" if n <= a.ideal else "red"))
    legend = ["cells: the instruction's 32-byte sectors in address order;",
              "number and colour: bytes of the sector it uses (green 32 = fully used);",
              "hover a cell for its address and lanes"]
    return _finish_heatmap(body, legend, dropped, len(analyses), ncols, 150, head,
                           f"sector heat map: tensor {table.tensor} block {block}")


def heatmap_drawing(table: AccessTable, block: int = 0, *, title: str | None = None,
                    max_instructions: int = 256) -> Drawing:
    """Bank heat map for shared memory, sector heat map for global memory."""
    if table.memory == "shared":
        return bank_heatmap_drawing(table, block, title=title, max_instructions=max_instructions)
    if table.memory == "global":
        return sector_heatmap_drawing(table, block, title=title, max_instructions=max_instructions)
    raise RenderError(f"{describe(table)}: no heat map for {table.memory} memory")


def heatmap_svg(table: AccessTable, block: int = 0, title: str | None = None, *,
                max_instructions: int = 256) -> str:
    """A heat map per warp instruction of ``block`` as an SVG document.

    Shared memory: one row per warp instruction (``w{warp} s{step}``), one column per bank;
    colour and number = distinct 4-byte words the bank serves in its busiest phase (1 = no
    conflict), the ``<title>`` of each cell lists words and lanes per phase and marks
    conflicts; the wavefronts and the ideal are written at the right.  Global memory: one
    cell per 32-byte sector the instruction touches, in address order, coloured by the bytes
    of it the instruction uses; sectors vs ideal at the right.  At most ``max_instructions``
    rows are drawn.
    """
    return heatmap_drawing(table, block, title=title, max_instructions=max_instructions).svg()


def page_svg(tables: Iterable[AccessTable], block: int = 0, *, heatmaps: bool = True,
             max_instructions: int = 256) -> str:
    """Every table's tile (and, for shared/global memory, its heat map) stacked on one page."""
    drawings: list[Drawing] = []
    for t in tables:
        drawings.append(tile_drawing(t, block))
        if heatmaps and t.memory in ("shared", "global"):
            drawings.append(heatmap_drawing(t, block, max_instructions=max_instructions))
    if not drawings:
        raise RenderError("nothing to draw")
    return _document(drawings)
