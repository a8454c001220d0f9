"""The one hardware model: warps, shared-memory banks and phases, global sectors and lines.

Every part of threadmap that reasons about how a warp instruction is served (the coalescing
and bank-conflict checks, the renderer's bank and sector maps, the GPU code that compares
with Nsight Compute) takes its constants and per-instruction definitions from here.

Shared memory (per warp instruction, active lanes only):

* 32 banks of 4-byte words; the word of byte ``a`` is ``a // 4`` and its bank ``word % 32``.
* An instruction moving ``W`` bytes per lane is served in ``phases(W)`` phases:
  1 for ``W <= 4``, 2 for 8 bytes, 4 for 16 bytes; phase ``p`` holds the lanes
  ``[p * 32/P, (p+1) * 32/P)``.  A lane's element of ``e`` bytes at ``a`` occupies the words
  ``a // 4 .. (a + e - 1) // 4`` (an 8- or 16-byte lane uses 2 or 4 consecutive banks).
* A phase needs as many wavefronts as the largest number of *distinct* words one bank must
  serve in it (lanes touching the same word share it: broadcast is free); the instruction's
  wavefronts are the sum over its phases, its ideal the number of phases with an active lane.

Global memory (per warp instruction, active lanes only):

* Memory moves 32-byte sectors (``byte // 32``) grouped in 128-byte lines (``byte // 128``).
* ``sectors`` is the number of distinct sectors the requested bytes touch; ``bytes`` the
  number of distinct bytes requested (a broadcast counts once); ``ideal = ceil(bytes / 32)``.
* A vector access of ``k`` elements is legal when its bytes are contiguous and its first
  byte is aligned to the access width.

``cp.async`` (``LDGSTS``, global to shared in one instruction; measured on an H200, the
``.ca`` L1-allocating form, every case of ``tools/gpu/ldgsts`` at 4, 8 and 16 bytes):

* its shared writes are counted per phase as for a store of the same width, but the data
  arrives from global 128-byte lines, each byte at its own place (``byte % 128``) of a 128-byte
  path: one wavefront carries, in each 32-byte sector position, that sector of one line only.
  A phase with active lanes needs ``lines + excess`` wavefronts, where ``lines`` is the largest
  number of distinct lines whose requested bytes fall in one sector position, and ``excess``
  the largest of (the store wavefronts of one line's lanes, the most lanes reading one global
  address, the most distinct line offsets -- 4-byte words of the 128-byte line -- that one
  shared bank takes words from, over all the phase's lines) minus 1 -- and never fewer than
  the store wavefronts of the whole phase.  Lines in different sector positions share
  wavefronts; lines writing the same banks from the same offsets cost nothing more (they are
  written apart); a bank fed from ``k`` offsets costs ``k - 1`` more once per phase, as a
  conflict inside a line does;
* a zero-filling lane (``_ZFILL`` with a false predicate) reads nothing: its write rides in
  the phase's wavefronts when the phase has an active lane, and a phase of zero-filling lanes
  alone costs the store wavefronts of its lanes.
* The bypassing ``.cg`` form's writes are not a function of the addresses in Nsight
  Compute's ``..._op_ldgsts`` counters (none counted in an isolated probe, 3/4 of the rule
  above in the library's behaviour kernels): :func:`ldgsts_wavefronts` is the ``.ca`` rule.

The pure-Python functions :func:`wavefronts`, :func:`ldgsts_wavefronts` and :func:`sectors` are the executable
definitions; the checks' vectorised enumerations must agree with them (tests cross-check).
The Nsight Compute metric names whose values these definitions predict are in
:data:`NCU_METRICS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

WARP_SIZE = 32
NUM_BANKS = 32
BANK_BYTES = 4
SECTOR_BYTES = 32
LINE_BYTES = 128
#: widest access one lane can make (bytes): ``ld.global.v4.b32`` / ``ld.shared.v4``
MAX_ACCESS_BYTES = 16
#: shared memory one CTA can have (the sm_80/sm_90 opt-in maximum, 227 KiB)
MAX_SHARED_BYTES = 227 * 1024

#: Nsight Compute metrics that measure what the definitions here predict
NCU_METRICS = {
    "shared_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum",
    "shared_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum",
    "global_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum",
    "global_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum",
}


def phases(access_bytes: int) -> int:
    """Phases a shared-memory warp instruction of ``access_bytes`` per lane is split into:
    1 (<= 4 bytes), 2 (8 bytes), 4 (16 bytes)."""
    return max(1, min(WARP_SIZE, access_bytes // BANK_BYTES))


def lanes_per_phase(access_bytes: int) -> int:
    """Consecutive lanes served together in one phase."""
    return WARP_SIZE // phases(access_bytes)


def bank(byte_address: int) -> int:
    """The bank of a byte address."""
    return (byte_address // BANK_BYTES) % NUM_BANKS


def words(byte_address: int, elem_bytes: int) -> range:
    """The 4-byte words an element of ``elem_bytes`` at ``byte_address`` occupies."""
    return range(byte_address // BANK_BYTES, (byte_address + max(elem_bytes, 1) - 1) // BANK_BYTES + 1)


@dataclass(frozen=True)
class Wavefronts:
    """One shared-memory warp instruction: ``wavefronts`` and its ``ideal``."""

    wavefronts: int
    ideal: int

    @property
    def extra(self) -> int:
        """Conflict wavefronts: ``wavefronts - ideal``."""
        return self.wavefronts - self.ideal


def bank_requests(lanes: Iterable[tuple[int, int]], elem_bytes: int,
                  access_bytes: int) -> dict[tuple[int, int], dict[int, set[int]]]:
    """What one instruction asks of the banks: ``(phase, bank) -> {word: lanes touching it}``;
    ``lanes`` = (lane in the warp, element byte address) of every active element."""
    per = lanes_per_phase(access_bytes)
    served: dict[tuple[int, int], dict[int, set[int]]] = {}
    for lane, a in lanes:
        for w in words(a, elem_bytes):
            served.setdefault((lane // per, w % NUM_BANKS), {}).setdefault(w, set()).add(lane)
    return served


def wavefronts(lanes: Iterable[tuple[int, int]], elem_bytes: int, access_bytes: int) -> Wavefronts:
    """The definition for one instruction; ``lanes`` = (lane in the warp, element byte
    address) of every active element (a lane moving a vector lists each element)."""
    served = bank_requests(lanes, elem_bytes, access_bytes)
    busy = {p for p, _ in served}
    wf = sum(max(len(v) for (q, _), v in served.items() if q == p) for p in busy)
    return Wavefronts(wf, len(busy))


def ldgsts_wavefronts(lanes: Iterable[tuple[int, int, int | None]], access_bytes: int) -> Wavefronts:
    """The definition for one ``cp.async.ca`` (``LDGSTS``) instruction of ``access_bytes`` per
    lane (module docstring); ``lanes`` = (lane in the warp, shared byte address, global byte
    address, or None for a zero-filling lane) of every lane that writes shared memory.
    Law: never fewer wavefronts than :func:`wavefronts` of the same shared writes, and equal
    to it when every phase's active lanes read one line with no address read twice and write
    distinct shared words (a bank's words then come from as many offsets of the line)."""
    per = lanes_per_phase(access_bytes)
    by_phase: dict[int, list[tuple[int, int, int | None]]] = {}
    for lane, s, g in lanes:
        by_phase.setdefault(lane // per, []).append((lane, s, g))

    def store(ls: list[tuple[int, int, int | None]]) -> int:
        return wavefronts(((lane, s) for lane, s, _ in ls), access_bytes, access_bytes).wavefronts

    total = 0
    for ls in by_phase.values():
        active = [(lane, s, g) for lane, s, g in ls if g is not None]
        if not active:
            total += store(ls)
            continue
        lines: dict[int, list[tuple[int, int, int | None]]] = {}
        at: dict[int, set[int]] = {}       # sector position in a line -> the lines read there
        offsets: dict[int, set[int]] = {}  # shared bank -> the line offsets (words) it takes words from
        for lane, s, g in active:
            lines.setdefault(g // LINE_BYTES, []).append((lane, s, g))
            for b in range(0, access_bytes, BANK_BYTES):
                at.setdefault((g + b) % LINE_BYTES // SECTOR_BYTES, set()).add((g + b) // LINE_BYTES)
                offsets.setdefault(bank(s + b), set()).add((g + b) % LINE_BYTES // BANK_BYTES)
        excess = max(max(max(store(line), max(Counter(g for _, _, g in line).values())) for line in lines.values()),
                     max(len(o) for o in offsets.values())) - 1
        total += max(max(len(x) for x in at.values()) + excess, store(ls))
    return Wavefronts(total, len(by_phase))


def gmma_operand_wavefronts(addresses: Any, major: str, elem_bits: int) -> Wavefronts:
    """The shared-memory wavefronts one ``wgmma`` spends reading an operand whose element
    ``(i, j)`` (MN, K) the tensor core reads at byte ``addresses[i, j]``: it fetches the operand
    by core matrices -- 8 rows of 16 bytes (K-major: 8 MN rows of a 16-byte K chunk; MN-major:
    8 K rows of a 16-byte MN chunk) -- each served like one 8-lane phase of a 16-byte access
    (:func:`wavefronts`).  ``ideal``: one wavefront per core matrix.  Law: a core matrix whose
    8 rows fall in distinct 16-byte bank groups costs one wavefront (every canonical GMMA form;
    measured on the H200: ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma``)."""
    a = np.asarray(addresses, dtype=np.int64)
    if a.ndim != 2 or major not in ("K", "MN") or elem_bits not in (4, 8, 16, 32, 64):
        raise ValueError(f"an operand's (MN, K) addresses, a major K or MN and a GMMA element width, got shape "
                         f"{a.shape}, {major!r}, {elem_bits!r}")
    per = 128 // elem_bits                        # elements per 16-byte row
    grid = a if major == "K" else a.T             # rows of 16-byte chunks along the contiguous mode
    r, c = grid.shape
    total = ideal = 0
    for i0 in range(0, r, 8):
        for j0 in range(0, c, per):
            rows = grid[i0:i0 + 8, j0:j0 + per]
            lanes = [(lane, int(x)) for lane in range(rows.shape[0]) for x in rows[lane]]
            w = wavefronts(lanes, max(elem_bits // 8, 1), MAX_ACCESS_BYTES)
            total += w.wavefronts
            ideal += 1
    return Wavefronts(total, ideal)


@dataclass(frozen=True)
class Sectors:
    """One global-memory warp instruction: sectors, lines and bytes touched, and the ideal."""

    sectors: int
    lines: int
    bytes: int

    @property
    def ideal(self) -> int:
        """``ceil(bytes / 32)``: the sectors a contiguous aligned request of the same size needs."""
        return -(-self.bytes // SECTOR_BYTES)


def sector_bytes(lanes: Iterable[tuple[int, int]], elem_bytes: int) -> dict[int, dict[int, set[int]]]:
    """What one instruction asks of memory: ``sector -> {lane: byte offsets inside the sector}``;
    ``lanes`` = (lane in the warp, element byte address) of every active element."""
    out: dict[int, dict[int, set[int]]] = {}
    for lane, a in lanes:
        for b in range(a, a + max(elem_bytes, 1)):
            out.setdefault(b // SECTOR_BYTES, {}).setdefault(lane, set()).add(b % SECTOR_BYTES)
    return out


def sectors(addresses: Iterable[int], elem_bytes: int) -> Sectors:
    """The definition for one instruction; ``addresses`` = byte address of every active element."""
    req = sector_bytes(((0, a) for a in set(addresses)), elem_bytes)
    used = {s * SECTOR_BYTES + o for s, lanes in req.items() for offs in lanes.values() for o in offs}
    return Sectors(len(req), len({s * SECTOR_BYTES // LINE_BYTES for s in req}), len(used))


def access_legal(byte_addresses: list[int], elem_bytes: int) -> bool:
    """Whether one vector access (its elements' addresses in lane order) is contiguous and
    aligned to its width."""
    if not byte_addresses:
        return True
    width = len(byte_addresses) * elem_bytes
    a0 = byte_addresses[0]
    return a0 % width == 0 and all(a == a0 + i * elem_bytes for i, a in enumerate(byte_addresses))
