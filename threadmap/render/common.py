"""Shared pieces of the renderers: the tile view of one block and the per-warp-instruction
analyses (shared-memory banks, global-memory sectors) that the text and SVG drawings show.

Everything here reads an :class:`~threadmap.simulate.access.AccessTable` only; nothing depends
on the simulator or on the checks, so the drawings can be made from hand-built tables.

The bank and sector models are :mod:`threadmap.hardware`'s (the checks use the same
definitions): the drawings only lay out what ``hardware.bank_requests`` and
``hardware.sector_bytes`` say one instruction asks of the banks and of memory.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

import threadmap.hardware as hw
from threadmap.errors import ThreadmapError
from threadmap.simulate.access import AccessTable, Rows

#: a table, or some of its rows (drawings read the same fields from both)
Table = AccessTable | Rows

#: CuTe's ``SVGColor_TV`` / ``TikzColor_TV`` table (cute/util/print_svg.hpp): colour of thread
#: ``t`` is ``CUTE_TV_COLORS[t % 8]``.
CUTE_TV_COLORS: tuple[tuple[int, int, int], ...] = (
    (175, 175, 255), (175, 255, 175), (255, 255, 175), (255, 175, 175),
    (210, 210, 255), (210, 255, 210), (255, 255, 210), (255, 210, 210),
)

#: Largest number of cells a tile drawing may have (a guard against drawing a whole tensor).
MAX_CELLS = 1 << 22

WARP = hw.WARP_SIZE
NUM_BANKS = hw.NUM_BANKS
BANK_BYTES = hw.BANK_BYTES
SECTOR_BYTES = hw.SECTOR_BYTES
LINE_BYTES = hw.LINE_BYTES


class RenderError(ThreadmapError):
    """The table cannot be drawn as asked (wrong memory kind, rank, empty block, ...)."""


def thread_color(thread: int) -> tuple[int, int, int]:
    """CuTe's pastel colour of ``thread`` (8 colours cycling over thread ids)."""
    return CUTE_TV_COLORS[int(thread) % len(CUTE_TV_COLORS)]


def want_color(color: bool | None) -> bool:
    """Resolve a ``color`` argument: ``None`` means "when standard output is a terminal and
    ``NO_COLOR`` is not set"."""
    if color is not None:
        return bool(color)
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty and isatty())


def compact_ints(values: Sequence[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0-2,5,7-8"`` (sorted, duplicates dropped)."""
    vals = sorted({int(v) for v in values})
    runs: list[str] = []
    i = 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        runs.append(str(vals[i]) if i == j else f"{vals[i]}-{vals[j]}")
        i = j + 1
    return ",".join(runs)


def describe(table: Table) -> str:
    """A one-line name of the table: tensor, memory, stage and side."""
    return f"{table.tensor} ({table.memory}, stage {table.stage} {table.side})"


# --------------------------------------------------------------------------------------------
# Tile view
# --------------------------------------------------------------------------------------------


@dataclass
class TileView:
    """The accesses of one block drawn on its tile.

    ``count[m, n]`` is the number of predicated-on accesses of tile-local cell (m, n);
    ``thread``/``value`` give the first such access in (thread, value) order, as CuTe's
    ``print_latex_tv`` keeps the first (thread, value) that maps to a cell (``-1`` where none;
    for cells with only predicated-off accesses, that access).  ``masked`` marks cells touched
    only by predicated-off accesses.  ``accessors`` lists ``(thread, value, step)`` of every
    access of each doubly accessed cell.  ``outside`` counts accesses outside the drawn tile.
    """

    block: int
    origin: tuple[int, int]
    shape: tuple[int, int]
    rank: int
    count: np.ndarray
    masked: np.ndarray
    thread: np.ndarray
    value: np.ndarray
    accessors: dict[tuple[int, int], list[tuple[int, int, int]]] = field(default_factory=dict)
    outside: int = 0

    @property
    def missing(self) -> np.ndarray:
        """Cells no access touches (predicated-off accesses included)."""
        return (self.count == 0) & ~self.masked

    @property
    def duplicated(self) -> np.ndarray:
        """Cells touched by more than one predicated-on access."""
        return self.count > 1


def _block_rows(table: Table, block: int) -> Rows:
    rows = table.select(table.block == block)
    if len(rows) == 0:
        blocks = np.unique(table.block)
        have = compact_ints(blocks[:64].tolist()) if blocks.size else "none"
        raise RenderError(f"{describe(table)}: no accesses in block {block} (blocks: {have})")
    return rows


def _coords2(table: Table) -> tuple[np.ndarray, int]:
    coord = np.asarray(table.coord, dtype=np.int64)
    if coord.ndim == 1:
        coord = coord[:, None]
    r = coord.shape[1]
    if r == 1:
        # CuTe's print_latex appends a (1):(0) mode to a rank-1 layout: an M x 1 column.
        coord = np.concatenate([coord, np.zeros_like(coord)], axis=1)
    elif r != 2:
        raise RenderError(f"{describe(table)}: a tile drawing needs rank-1 or rank-2 coordinates, "
                          f"got rank {r}")
    return coord, r


def tile_view(table: AccessTable, block: int = 0, origin: Sequence[int] | None = None,
              extent: Sequence[int] | None = None, max_accessors: int = 64) -> TileView:
    """The tile of ``block``: per tile-local cell, who accesses it and how often.

    The tile origin is the least coordinate per mode over the block's accesses (predicated-off
    ones included) and the extent reaches the largest, unless ``origin`` / ``extent`` are given
    (e.g. the spec's tile and ``at``); accesses outside are counted in ``outside``.
    """
    rows = _block_rows(table, block)
    coord, r = _coords2(rows)
    if origin is not None:
        o = np.array(list(origin) + [0] * (2 - len(origin)), dtype=np.int64)
    else:
        o = coord.min(axis=0)
    if o.shape != (2,):
        raise RenderError(f"{describe(table)}: bad tile origin {tuple(o.tolist())}")
    local = coord - o
    if extent is not None:
        ext = np.array(list(extent) + [1] * (2 - len(extent)), dtype=np.int64)
    else:
        ext = local.max(axis=0) + 1
    if ext.shape != (2,) or (ext <= 0).any():
        raise RenderError(f"{describe(table)}: bad tile extent {tuple(ext.tolist())}")
    m, n = int(ext[0]), int(ext[1])
    if m * n > MAX_CELLS:
        raise RenderError(f"{describe(table)}: tile {m}x{n} of block {block} is too large to draw "
                          f"(more than {MAX_CELLS} cells)")
    inside = ((local >= 0) & (local < ext)).all(axis=1)
    outside = int((~inside).sum())
    local, pred = local[inside], np.asarray(rows.pred, dtype=bool)[inside]
    thr = np.asarray(rows.thread, dtype=np.int64)[inside]
    val = np.asarray(rows.value, dtype=np.int64)[inside]
    stp = np.asarray(rows.step, dtype=np.int64)[inside]
    flat = local[:, 0] * n + local[:, 1]

    count = np.bincount(flat[pred], minlength=m * n)
    masked_count = np.bincount(flat[~pred], minlength=m * n)
    masked = (count == 0) & (masked_count > 0)

    thread = np.full(m * n, -1, dtype=np.int64)
    value = np.full(m * n, -1, dtype=np.int64)
    # first access per cell in (thread, value) order; predicated-on accesses take precedence
    order = np.lexsort((val, thr, ~pred))
    cells, first = np.unique(flat[order], return_index=True)
    thread[cells] = thr[order][first]
    value[cells] = val[order][first]

    accessors: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    dup_cells = np.flatnonzero(count > 1)[:max_accessors]
    if dup_cells.size:
        on = np.flatnonzero(pred)
        sel = on[np.isin(flat[on], dup_cells)]
        sel = sel[np.lexsort((val[sel], thr[sel], flat[sel]))]
        for i in sel:
            key = (int(flat[i]) // n, int(flat[i]) % n)
            accessors.setdefault(key, []).append((int(thr[i]), int(val[i]), int(stp[i])))

    return TileView(block=block, origin=(int(o[0]), int(o[1])), shape=(m, n), rank=r,
                    count=count.reshape(m, n), masked=masked.reshape(m, n),
                    thread=thread.reshape(m, n), value=value.reshape(m, n),
                    accessors=accessors, outside=outside)


# --------------------------------------------------------------------------------------------
# Warp instructions
# --------------------------------------------------------------------------------------------


def warp_instructions(table: Table, block: int = 0) -> list[tuple[int, int]]:
    """The ``(warp, step)`` pairs of ``block``'s warp instructions, sorted by warp then step."""
    rows = table.select(table.block == block)
    if len(rows) == 0:
        return []
    warp = np.asarray(rows.thread, dtype=np.int64) // WARP
    step = np.asarray(rows.step, dtype=np.int64)
    pairs = np.unique(np.stack([warp, step], axis=1), axis=0)
    return [(int(w), int(s)) for w, s in pairs]


def _instruction_rows(table: Table, block: int, step: int, warp: int) -> Rows:
    thr = np.asarray(table.thread, dtype=np.int64)
    mask = ((table.block == block) & (thr // WARP == warp) & (table.step == step)
            & np.asarray(table.pred, dtype=bool))
    return table.select(mask)


@dataclass
class BankInstruction:
    """One shared-memory warp instruction under the bank model.

    ``requests`` maps ``(phase, bank)`` to ``{word: lanes}`` (word = byte address // 4; the
    lanes that read or write some byte of it).  ``wavefronts_per_phase[p]`` is the largest
    number of distinct words one bank serves in phase ``p`` (0 for a phase without active
    lanes); ``ideal`` is the number of phases with active lanes.
    """

    tensor: str
    block: int
    warp: int
    step: int
    access_bytes: int
    phases: int
    lanes_per_phase: int
    active_lanes: tuple[int, ...]
    requests: dict[tuple[int, int], dict[int, tuple[int, ...]]]
    wavefronts_per_phase: tuple[int, ...]

    @property
    def wavefronts(self) -> int:
        """Wavefronts of the instruction (sum over phases)."""
        return int(sum(self.wavefronts_per_phase))

    @property
    def ideal(self) -> int:
        """Wavefronts of a conflict-free instruction with the same active phases."""
        return int(sum(1 for w in self.wavefronts_per_phase if w > 0))

    @property
    def conflicts(self) -> int:
        """Extra wavefronts caused by bank conflicts (``wavefronts - ideal``)."""
        return self.wavefronts - self.ideal

    def bank_load(self, bank: int) -> int:
        """Distinct words ``bank`` serves in its busiest phase (1 = no conflict there)."""
        return max((len(self.requests.get((p, bank), {})) for p in range(self.phases)), default=0)

    def lanes_on_bank(self, bank: int) -> tuple[int, ...]:
        """Every lane that touches ``bank`` (all phases)."""
        lanes: set[int] = set()
        for p in range(self.phases):
            for ls in self.requests.get((p, bank), {}).values():
                lanes.update(ls)
        return tuple(sorted(lanes))

    def conflicting(self) -> list[tuple[int, int, dict[int, tuple[int, ...]]]]:
        """``(phase, bank, {word: lanes})`` for every bank that serves several words in a phase."""
        return [(p, b, words) for (p, b), words in sorted(self.requests.items()) if len(words) > 1]


def bank_instruction(table: Table, block: int = 0, step: int = 0, warp: int = 0) -> BankInstruction:
    """The bank analysis of warp ``warp``'s instruction ``step`` in ``block`` (shared memory)."""
    if table.memory != "shared":
        raise RenderError(f"{describe(table)}: bank maps are for shared memory, not {table.memory}")
    rows = _instruction_rows(table, block, step, warp)
    ab = int(table.access_bytes)
    phases = hw.phases(ab)
    lane = np.asarray(rows.thread, dtype=np.int64) % WARP
    served = hw.bank_requests(zip(lane.tolist(), np.asarray(rows.addr, dtype=np.int64).tolist()),
                              int(table.elem_bytes), ab)
    req = {k: {w: tuple(sorted(ls)) for w, ls in sorted(v.items())} for k, v in sorted(served.items())}
    wpp = tuple(max((len(v) for (p, _), v in req.items() if p == ph), default=0) for ph in range(phases))
    return BankInstruction(tensor=table.tensor, block=block, warp=warp, step=step, access_bytes=ab,
                           phases=phases, lanes_per_phase=hw.lanes_per_phase(ab),
                           active_lanes=tuple(sorted(set(lane.tolist()))), requests=req,
                           wavefronts_per_phase=wpp)


@dataclass
class SectorInstruction:
    """One global-memory warp instruction under the sector model.

    ``lanes[s]`` are the lanes touching sector ``s`` (sector = byte address // 32);
    ``used[s]`` the distinct bytes of sector ``s`` the instruction requests;
    ``first_byte[(lane, s)]`` the offset inside sector ``s`` of the first byte lane ``lane``
    touches there.
    """

    tensor: str
    block: int
    warp: int
    step: int
    access_bytes: int
    active_lanes: tuple[int, ...]
    sectors: tuple[int, ...]
    lanes: dict[int, tuple[int, ...]]
    used: dict[int, int]
    first_byte: dict[tuple[int, int], int]

    @property
    def requested_bytes(self) -> int:
        """Distinct bytes the active lanes request (a broadcast counts once)."""
        return int(sum(self.used.values()))

    @property
    def ideal(self) -> int:
        """The fewest sectors that could carry the requested bytes: ``ceil(bytes / 32)``."""
        return -(-self.requested_bytes // SECTOR_BYTES)

    @property
    def lines(self) -> tuple[int, ...]:
        """The 128-byte lines touched."""
        return tuple(sorted({s * SECTOR_BYTES // LINE_BYTES for s in self.sectors}))


def sector_instruction(table: Table, block: int = 0, step: int = 0, warp: int = 0) -> SectorInstruction:
    """The sector analysis of warp ``warp``'s instruction ``step`` in ``block`` (global memory)."""
    if table.memory != "global":
        raise RenderError(f"{describe(table)}: sector maps are for global memory, not {table.memory}")
    rows = _instruction_rows(table, block, step, warp)
    lane = np.asarray(rows.thread, dtype=np.int64) % WARP
    req = hw.sector_bytes(zip(lane.tolist(), np.asarray(rows.addr, dtype=np.int64).tolist()),
                          max(int(table.elem_bytes), 1))
    sectors = tuple(sorted(req))
    return SectorInstruction(tensor=table.tensor, block=block, warp=warp, step=step,
                             access_bytes=int(table.access_bytes),
                             active_lanes=tuple(sorted(set(lane.tolist()))), sectors=sectors,
                             lanes={s: tuple(sorted(req[s])) for s in sectors},
                             used={s: len(set().union(*req[s].values())) for s in sectors},
                             first_byte={(ln, s): min(offs) for s in sectors for ln, offs in req[s].items()})
