"""Terminal drawings of access tables.

* :func:`tile_grid` -- the tile of one block in the frame of CuTe's ``print_layout``
  (cute/util/print_tensor.hpp), each cell showing the ``T{thread}V{value}`` that accesses it,
  as CuTe's ``print_latex_tv`` labels a TV layout.
* :func:`bank_map` -- one shared-memory warp instruction on the 32 banks: lanes and words per
  bank, phases and wavefronts.
* :func:`sector_map` -- one global-memory warp instruction: the 32-byte sectors each lane
  touches.

Each returns a string.  With ``color=True`` (or ``None`` on a terminal) the string carries ANSI
colours written by ``rich``: tile cells on CuTe's pastel colour of their thread, conflicting
banks and partly used sectors in red.  Without colour the text is plain.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from threadmap.layout import num_digits
from threadmap.render.common import (
    LINE_BYTES,
    NUM_BANKS,
    SECTOR_BYTES,
    WARP,
    BankInstruction,
    RenderError,
    SectorInstruction,
    bank_instruction,
    compact_ints,
    describe,
    sector_instruction,
    thread_color,
    tile_view,
    want_color,
)
from threadmap.simulate.access import AccessTable

Segment = tuple[str, str | None]   # (text, rich style or None)
Line = list[Segment]

DELIM = "+-----------------------"     # CuTe's print_layout delimiter
MISSING, DUPLICATE, MASKED = ".", "!", "-"
MAX_LISTED = 16


def _emit(lines: list[Line], color: bool) -> str:
    """Join styled lines into a string: plain, or with ANSI colours written by rich."""
    if not color:
        return "".join("".join(t for t, _ in line) + "\n" for line in lines)
    from rich.console import Console
    from rich.text import Text

    buf = io.StringIO()
    width = max((sum(len(t) for t, _ in line) for line in lines), default=80) + 1
    console = Console(file=buf, force_terminal=True, color_system="truecolor", width=max(width, 80),
                      highlight=False, emoji=False, markup=False, soft_wrap=True, no_color=False)
    for line in lines:
        text = Text(no_wrap=True)
        for t, style in line:
            text.append(t, style=style)
        console.print(text)
    return buf.getvalue()


def _frame_header(n: int, w: int, rw: int) -> Line:
    """Column indices, as print_layout writes them: ``"  %*d "`` per column."""
    return [(" " * (rw + 2) + "".join(f"  {j:>{w - 2}} " for j in range(n)), None)]


def _delim(w: int) -> str:
    return (DELIM * (w // len(DELIM) + 1))[: w + 1]


def tile_grid(table: AccessTable, block: int = 0, *, color: bool | None = None,
              origin: Sequence[int] | None = None, extent: Sequence[int] | None = None,
              title: str | None = None) -> str:
    """The tile of ``block`` as a ``print_layout`` grid whose cells show ``T{thread}V{value}``.

    Rows and columns are labelled by tile-local coordinates: the coordinate minus the tile
    origin (the least coordinate per mode over the block's accesses, unless ``origin`` is
    given; ``extent`` fixes the drawn size).  A cell no access touches shows ``.``, one touched
    more than once (by predicated-on accesses) ``!``, and one touched only by predicated-off
    accesses ``-``; a legend under the grid says so and lists the doubly accessed cells.
    Rank-1 tables are drawn as an M x 1 column (as CuTe's ``print_latex`` does).

    ``table`` is an :class:`~threadmap.simulate.access.AccessTable`.  ``color``: colour cells by
    thread with rich (``None``: only when standard output is a terminal).
    """
    view = tile_view(table, block, origin=origin, extent=extent)
    m, n = view.shape
    labels: list[list[str]] = []
    for i in range(m):
        row = []
        for j in range(n):
            if view.count[i, j] > 1:
                row.append(DUPLICATE)
            elif view.count[i, j] == 1:
                row.append(f"T{view.thread[i, j]}V{view.value[i, j]}")
            elif view.masked[i, j]:
                row.append(MASKED)
            else:
                row.append(MISSING)
        labels.append(row)
    w = max(len(s) for row in labels for s in row) + 2
    w = max(w, num_digits(max(n - 1, 0)) + 2)
    rw = max(2, num_digits(max(m - 1, 0)))
    use_color = want_color(color)

    head = title if title is not None else (
        f"{describe(table)}  block {block}: tile {m}x{n} at origin {view.origin}"
        if view.rank == 2 else
        f"{describe(table)}  block {block}: {m} elements from {view.origin[0]}")
    lines: list[Line] = [[(head, None)], _frame_header(n, w, rw)]
    delim = _delim(w)
    sep: Line = [(" " * (rw + 2) + delim * n + "+", None)]
    for i in range(m):
        lines.append(sep)
        line: Line = [(f"{i:>{rw}}  ", None)]
        for j in range(n):
            lab = labels[i][j]
            style = None
            if use_color:
                if lab == DUPLICATE:
                    style = "bold white on red"
                elif lab == MASKED:
                    style = "grey50"
                elif lab != MISSING:
                    r, g, b = thread_color(int(view.thread[i, j]))
                    style = f"black on rgb({r},{g},{b})"
            line.append(("|", None))
            line.append((f" {lab:>{w - 2}} ", style))
        line.append(("|", None))
        lines.append(line)
    lines.append(sep)

    legend = (f"cells: T<thread>V<value>   {MISSING} not accessed ({int(view.missing.sum())})   "
              f"{DUPLICATE} accessed more than once ({int(view.duplicated.sum())})   "
              f"{MASKED} predicated off only ({int(view.masked.sum())})")
    lines.append([(legend, None)])
    for k, ((i, j), acc) in enumerate(sorted(view.accessors.items())):
        if k == MAX_LISTED:
            lines.append([(f"  ... {len(view.accessors) - MAX_LISTED} more", None)])
            break
        who = ", ".join(f"T{t}V{v} (step {s})" for t, v, s in acc)
        glob = (view.origin[0] + i, view.origin[1] + j)
        lines.append([(f"  {DUPLICATE} ({i},{j}) = {glob}: {who}", "red" if use_color else None)])
    if view.outside:
        lines.append([(f"  {view.outside} accesses fall outside the drawn tile", None)])
    return _emit(lines, use_color)


def _lane_label(lanes: Sequence[int], limit: int = 7) -> str:
    s = compact_ints(lanes)
    return s if len(s) <= limit else f"{min(lanes)}+{len(set(lanes)) - 1}"


def _bank_lines(ins: BankInstruction, table: AccessTable, use_color: bool) -> list[Line]:
    nb = NUM_BANKS
    # per phase, per wavefront k: bank -> (word, lanes), the bank's k-th distinct word
    grid: list[tuple[int, int, dict[int, tuple[int, tuple[int, ...]]]]] = []
    for p in range(ins.phases):
        for k in range(ins.wavefronts_per_phase[p]):
            row: dict[int, tuple[int, tuple[int, ...]]] = {}
            for b in range(nb):
                words = list(ins.requests.get((p, b), {}).items())
                if k < len(words):
                    row[b] = words[k]
            grid.append((p, k, row))
    cells = [_lane_label(ls) for _, _, row in grid for _, ls in row.values()]
    cells += [str(wd) for _, _, row in grid for wd, _ in row.values()]
    w = max([len(c) for c in cells] + [2]) + 2
    lab = 12
    ab = ins.access_bytes
    lpp = ins.lanes_per_phase
    phase_txt = "1 phase of 32 lanes" if ins.phases == 1 else f"{ins.phases} phases of {lpp} lanes"
    lines: list[Line] = [
        [(f"{describe(table)}  block {ins.block} warp {ins.warp} step {ins.step}: "
          f"{ab}-byte accesses, {phase_txt}, {len(ins.active_lanes)} active lanes", None)],
    ]
    verdict = f"wavefronts: {ins.wavefronts} (ideal {ins.ideal})"
    per_phase = " + ".join(str(x) for x in ins.wavefronts_per_phase)
    if ins.phases > 1:
        verdict += f" = {per_phase} over phases"
    if ins.conflicts:
        verdict += f", {ins.conflicts} extra from bank conflicts"
    bad = {(p, b) for p, b, _ in ins.conflicting()}
    lines.append([(verdict, ("bold red" if ins.conflicts else "bold green") if use_color else None)])
    lines.append([(f"{'bank':>{lab}}" + "".join(f"  {b:>{w - 2}} " for b in range(nb)), None)])
    sep: Line = [(" " * lab + _delim(w) * nb + "+", None)]
    if not grid:
        lines.append([("(no active lanes)", None)])
    for p, k, row in grid:
        lines.append(sep)
        lane_line: Line = [(f"{f'p{p} wf{k}':<7}{'lane':>{lab - 7}}", None)]
        word_line: Line = [(f"{'word':>{lab}}", None)]
        for b in range(nb):
            style = ("bold red" if (p, b) in bad else None) if use_color else None
            if b in row:
                wd, ls = row[b]
                lt, wt = _lane_label(ls), str(wd)
            else:
                lt, wt, style = ".", "", None
            lane_line += [("|", None), (f" {lt:>{w - 2}} ", style)]
            word_line += [("|", None), (f" {wt:>{w - 2}} ", style)]
        lane_line.append(("|", None))
        word_line.append(("|", None))
        lines += [lane_line, word_line]
    if grid:
        lines.append(sep)
    lines.append([("rows: the k-th distinct 4-byte word each bank serves in a phase (one wavefront "
                   "each); word = byte address / 4, bank = word % 32; lanes a+n = lane a and n more",
                   None)])
    conf = ins.conflicting()
    for i, (p, b, served) in enumerate(conf):
        if i == MAX_LISTED:
            lines.append([(f"  ... {len(conf) - MAX_LISTED} more conflicting banks", None)])
            break
        word_lanes = list(served.items())
        txt = "; ".join(f"word {wd}: lane{'s' if len(ls) > 1 else ''} {compact_ints(ls)}"
                        for wd, ls in word_lanes[:8])
        if len(word_lanes) > 8:
            txt += f"; ... {len(word_lanes) - 8} more words"
        lines.append([(f"  conflict: phase {p} bank {b}, {len(word_lanes)} words: {txt}",
                       "red" if use_color else None)])
    return lines


def bank_map(table: AccessTable, block: int = 0, step: int = 0, warp: int = 0, *,
             color: bool | None = None) -> str:
    """One shared-memory warp instruction (warp ``warp``'s access ``step`` in ``block``) drawn
    on the 32 banks.

    One column per bank; per phase, row ``k`` shows the ``k``-th distinct word each bank
    serves (lanes above, word index = byte address / 4 below), so a phase takes as many
    wavefronts as it has rows.  The header gives the wavefront count under the hardware model's phase
    model (1 phase for <=4-byte accesses, 2 of 16 lanes for 8-byte, 4 of 8 lanes for 16-byte;
    broadcast of one word is free) and the ideal; the conflicting banks are listed with their
    words and lanes.  Only lanes whose predicate is true take part.
    """
    ins = bank_instruction(table, block, step, warp)
    use_color = want_color(color)
    return _emit(_bank_lines(ins, table, use_color), use_color)


def _sector_lines(ins: SectorInstruction, table: AccessTable, use_color: bool) -> list[Line]:
    w = 3
    lab = 16
    lines: list[Line] = [
        [(f"{describe(table)}  block {ins.block} warp {ins.warp} step {ins.step}: "
          f"{ins.access_bytes}-byte accesses, {len(ins.active_lanes)} active lanes", None)],
    ]
    n = len(ins.sectors)
    verdict = (f"sectors: {n} (ideal {ins.ideal}), {ins.requested_bytes} bytes requested, "
               f"{len(ins.lines)} lines of {LINE_BYTES} B")
    good = n <= ins.ideal
    lines.append([(verdict, ("bold green" if good else "bold red") if use_color else None)])
    lines.append([(f"{'sector/lane':>{lab}} " + "".join(f"{ln:>{w}}" for ln in range(WARP)) + "  used",
                   None)])
    if not ins.sectors:
        lines.append([("(no active lanes)", None)])
    for s in ins.sectors:
        line: Line = [(f"{s * SECTOR_BYTES:>#{lab}x} ", None)]
        for ln in range(WARP):
            off = ins.first_byte.get((ln, s))
            line.append((f"{'.' if off is None else off:>{w}}", None))
        used = ins.used[s]
        style = ("green" if used == SECTOR_BYTES else "red") if use_color else None
        line.append((f"  {used:>2}/{SECTOR_BYTES}", style))
        lines.append(line)
    lines.append([("rows: 32-byte sectors by byte address; cell: offset in the sector of the lane's "
                   "first byte there (. = lane does not touch it); used: distinct bytes requested",
                   None)])
    return lines


def sector_map(table: AccessTable, block: int = 0, step: int = 0, warp: int = 0, *,
               color: bool | None = None) -> str:
    """One global-memory warp instruction: which 32-byte sectors each lane touches.

    One row per sector touched (labelled by its byte address), one column per lane; a cell
    shows the offset inside the sector of the lane's first byte there.  The header gives the
    sector count against the ideal ``ceil(distinct bytes requested / 32)`` and the 128-byte
    lines touched.  Only lanes whose predicate is true take part.
    """
    ins = sector_instruction(table, block, step, warp)
    use_color = want_color(color)
    return _emit(_sector_lines(ins, table, use_color), use_color)


def access_map(table: AccessTable, block: int = 0, step: int = 0, warp: int = 0, *,
               color: bool | None = None) -> str:
    """:func:`bank_map` for shared memory, :func:`sector_map` for global memory."""
    memory = getattr(table, "memory", None)
    if memory == "shared":
        return bank_map(table, block, step, warp, color=color)
    if memory == "global":
        return sector_map(table, block, step, warp, color=color)
    raise RenderError(f"{describe(table)}: no bank or sector map for {memory} memory")
