"""The access table: the simulator's output and the checks' input.

One :class:`AccessTable` holds every element access of one side (``src`` or ``dst``) of one
copy stage for a list of blocks, as flat arrays of equal length ``n`` in the *instruction
order* ``(block, warp, step, lane, element)``:

* ``block``: the ``i``-th block of ``blocks``; ``warp`` = ``thread // 32``;
* ``step``: the thread's instruction for this stage (one vector access of ``vec`` elements);
* ``lane``: ``thread % 32``, the lane in the warp; ``element``: position in the vector.

so one warp instruction is ``32 * vec`` consecutive rows and one vector access ``vec``
consecutive rows.  Thread ``t`` moves value ``v = step * vec + element`` of its fragment.
When the CTA's thread count is not a multiple of 32 the last warp is padded: ``valid`` marks
the rows of real threads (``None`` when every row is real).

Per row:

* ``coords`` -- the logical coordinate, one int64 array per tensor mode (for a register side
  the pair (thread, value));
* ``pred``   -- the access is performed (predicate true; always false on padded rows);
* ``offset`` -- element offset from the tensor's layout (swizzle and view offset included);
* ``addr``   -- byte address ``base + offset * elem_bits / 8`` (shared buffers start at 0,
  global tensors at a base aligned to their ``align``); a sub-byte element's is the byte that
  holds it (``floor``), and ``elem_bytes`` is then 1: the bytes one element touches.

``thread``, ``value``, ``step``, ``lane``, ``element`` and ``block`` (the block id) of each
row are derived from the row index on demand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Literal

import numpy as np

from threadmap.hardware import WARP_SIZE

Memory = Literal["global", "shared", "register"]


@dataclass(eq=False)
class AccessTable:
    stage: int
    side: Literal["src", "dst"]
    tensor: str                   # tensor or register-fragment name
    memory: Memory
    elem_bytes: int
    vec: int                      # elements per access
    shape: tuple[int, ...]        # extents of the tensor (bounds for predicates)
    threads: int                  # threads per CTA
    values: int                   # values per thread
    blocks: np.ndarray            # (nb,) block ids, in row order
    coords: tuple[np.ndarray, ...]
    pred: np.ndarray
    offset: np.ndarray
    addr: np.ndarray
    valid: np.ndarray | None = None
    buffer: str = ""              # buffer name (aliases share one)
    tile: tuple[int, ...] = ()    # CTA tile extents
    origins: np.ndarray | None = None  # (nb, R) tile origins
    meta: dict[str, Any] = field(default_factory=dict)
    #: bits per element (0: ``8 * elem_bytes``); below 8 for sub-byte elements
    elem_bits: int = 0

    def __post_init__(self) -> None:
        if not self.elem_bits:
            self.elem_bits = 8 * self.elem_bytes

    # -- shape of the instruction order ------------------------------------------------------
    @property
    def warps(self) -> int:
        return -(-self.threads // WARP_SIZE)

    @property
    def steps(self) -> int:
        return self.values // self.vec

    @property
    def per_block(self) -> int:
        """Rows per block: ``warps * steps * 32 * vec``."""
        return self.warps * self.steps * WARP_SIZE * self.vec

    @property
    def instruction_rows(self) -> int:
        """Rows per warp instruction: ``32 * vec``."""
        return WARP_SIZE * self.vec

    @property
    def access_bytes(self) -> int:
        return self.vec * self.elem_bits // 8

    @property
    def access_bits(self) -> int:
        return self.vec * self.elem_bits

    @property
    def bit_addr(self) -> np.ndarray:
        """Each row's first bit (``8 * addr`` plus the bit a sub-byte element starts at):
        contiguity and alignment of vectors of any element width."""
        if self.elem_bits % 8 == 0:
            return self.addr * 8
        return self.addr * 8 + self.offset * self.elem_bits % 8

    @property
    def which(self) -> str:
        """``src`` or ``dst`` (the name :class:`~threadmap.model.SideModel` uses)."""
        return self.side

    @property
    def tv(self) -> np.ndarray:
        """Per row, ``b_ord * threads * values + thread * values + value``: the row's place in
        (block, thread, value) order (padded rows point at their thread's slot too; mask them
        with ``valid``)."""
        tpl = self._template
        slot = np.minimum(tpl["thread"], self.threads - 1) * self.values + tpl["value"]
        nb = len(self) // self.per_block if self.per_block else 0
        return (np.arange(nb, dtype=np.int64)[:, None] * (self.threads * self.values) + slot[None, :]).reshape(-1)

    @property
    def rank(self) -> int:
        return len(self.coords)

    def __len__(self) -> int:
        return int(self.pred.shape[0])

    # -- per-row indices, derived from the row index ------------------------------------------
    @cached_property
    def _template(self) -> dict[str, np.ndarray]:
        """One block's per-row indices (every block repeats them): no per-row division."""
        return block_template(self.warps, self.steps, self.vec)

    @cached_property
    def _index(self) -> dict[str, np.ndarray]:
        nb = len(self) // self.per_block if self.per_block else 0
        out = {k: np.tile(v, nb) for k, v in self._template.items()}
        out["b_ord"] = np.repeat(np.arange(nb, dtype=np.int64), self.per_block)
        return out

    @property
    def element(self) -> np.ndarray:
        return self._index["element"]

    @property
    def lane(self) -> np.ndarray:
        """Lane in the warp (``thread % 32``)."""
        return self._index["lane"]

    @property
    def step(self) -> np.ndarray:
        return self._index["step"]

    @property
    def thread(self) -> np.ndarray:
        return self._index["thread"]

    @property
    def value(self) -> np.ndarray:
        return self._index["value"]

    @property
    def block(self) -> np.ndarray:
        return self.blocks[self._index["b_ord"]]

    @property
    def coord(self) -> np.ndarray:
        """``coords`` stacked as an (n, R) array."""
        return np.stack(self.coords, axis=1) if self.coords else np.zeros((len(self), 0), np.int64)

    @property
    def active(self) -> np.ndarray:
        """Rows of real threads whose predicate is true (``pred`` is false on padded rows)."""
        return self.pred

    # -- one row -------------------------------------------------------------------------------
    def row(self, i: int) -> dict[str, Any]:
        """Everything about row ``i``: block, thread, step, value, element, lane, coordinate,
        offset, byte address, predicate."""
        i = int(i)
        k = i % self.vec
        r = i // self.vec
        lane = r % WARP_SIZE
        r //= WARP_SIZE
        step = r % self.steps
        r //= self.steps
        warp = r % self.warps
        b_ord = r // self.warps
        thread = warp * WARP_SIZE + lane
        return {"block": int(self.blocks[b_ord]), "thread": int(thread), "step": int(step),
                "value": int(step * self.vec + k), "element": int(k), "warp_lane": int(lane),
                "coordinate": tuple(int(c[i]) for c in self.coords), "offset": int(self.offset[i]),
                "address": int(self.addr[i]), "predicate": bool(self.pred[i])}

    def row_index(self, b_ord: int, thread: int, value: int) -> int:
        """Row of value ``value`` of thread ``thread`` in the ``b_ord``-th block."""
        step, k = divmod(value, self.vec)
        warp, lane = divmod(thread, WARP_SIZE)
        return (((b_ord * self.warps + warp) * self.steps + step) * WARP_SIZE + lane) * self.vec + k

    def select(self, mask: np.ndarray) -> Rows:
        """The rows where ``mask`` is true (rows of padded lanes excluded), as flat arrays."""
        m = np.asarray(mask, dtype=bool)
        if self.valid is not None:
            m = m & self.valid
        idx = np.flatnonzero(m)
        return Rows(self, idx)

    def select_blocks(self, ords: np.ndarray) -> AccessTable:
        """The table of the blocks at positions ``ords`` of ``blocks``."""
        pb = self.per_block
        rows = (np.asarray(ords, dtype=np.int64)[:, None] * pb + np.arange(pb)[None, :]).reshape(-1)
        return AccessTable(
            self.stage, self.side, self.tensor, self.memory, self.elem_bytes, self.vec, self.shape,
            self.threads, self.values, self.blocks[ords], tuple(c[rows] for c in self.coords),
            self.pred[rows], self.offset[rows], self.addr[rows],
            None if self.valid is None else self.valid[rows], self.buffer, self.tile,
            None if self.origins is None else self.origins[ords], dict(self.meta), self.elem_bits)


@lru_cache(maxsize=64)
def block_template(warps: int, steps: int, vec: int) -> dict[str, np.ndarray]:
    """Per row of one block in instruction order: ``element, lane, step, warp, thread, value``
    (int64, read-only: shared by every table of that shape)."""
    w, s, ln, k = np.meshgrid(np.arange(warps, dtype=np.int64), np.arange(steps, dtype=np.int64),
                              np.arange(WARP_SIZE, dtype=np.int64), np.arange(vec, dtype=np.int64), indexing="ij")
    out = {"element": k.reshape(-1), "lane": ln.reshape(-1), "step": s.reshape(-1), "warp": w.reshape(-1)}
    out["thread"] = out["warp"] * WARP_SIZE + out["lane"]
    out["value"] = out["step"] * vec + out["element"]
    for v in out.values():
        v.flags.writeable = False
    return out


class Rows:
    """Some rows of an :class:`AccessTable` as flat arrays (for drawings and listings)."""

    def __init__(self, table: AccessTable, idx: np.ndarray) -> None:
        self.table = table
        self.idx = idx
        self.tensor: str = table.tensor
        self.memory: Memory = table.memory
        self.stage: int = table.stage
        self.side: str = table.side
        self.elem_bytes: int = table.elem_bytes
        self.vec: int = table.vec
        self.shape: tuple[int, ...] = table.shape
        self.access_bytes = table.access_bytes
        self.block = table.block[idx]
        self.thread = table.thread[idx]
        self.step = table.step[idx]
        self.value = table.value[idx]
        self.element = table.element[idx]
        self.lane = table.lane[idx]
        self.coord = table.coord[idx]
        self.pred = table.pred[idx]
        self.offset = table.offset[idx]
        self.addr = table.addr[idx]

    def __len__(self) -> int:
        return int(self.idx.size)

    def select(self, mask: np.ndarray) -> Rows:
        """The rows where ``mask`` (over these rows) is true."""
        return Rows(self.table, self.idx[np.asarray(mask, dtype=bool)])
