"""The access table: the simulator's output and the checks' input.

One :class:`AccessTable` holds every element access of one side (``src`` or ``dst``) of one
copy stage, for a chunk of blocks, as flat numpy arrays of equal length ``n`` in
(block, thread, step, lane) order:

* ``block``  (n,) int64  linear block id (``bx + by * gx + bz * gx * gy``)
* ``thread`` (n,) int32  thread id within the CTA
* ``step``   (n,) int32  the thread's instruction index for this stage (one vector access)
* ``lane``   (n,) int16  element position inside that vector access (0..vec-1)
* ``value``  (n,) int32  the value (register) index of the element in the thread's fragment
* ``coord``  (n, R) int64 logical coordinate in the tensor (row, col, ...), or for register
  sides the (thread, value) pair
* ``pred``   (n,) bool   the access is performed (predicate true)
* ``offset`` (n,) int64  element offset from the tensor's layout (swizzle applied)
* ``addr``   (n,) int64  byte address: ``base + offset * elem_bytes`` (base is the tensor's
  buffer base; shared buffers start at 0, global tensors at a base aligned to ``align``)

A *warp instruction* is the set of rows with equal (block, thread // 32, step): the 32
lanes of one warp executing one access.  ``vec`` is the number of elements one access moves
(so the access width is ``vec * elem_bytes``).  Every row of one instruction moves the same
width.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Memory = Literal["global", "shared", "register"]


@dataclass
class AccessTable:
    stage: int
    side: Literal["src", "dst"]
    tensor: str                 # tensor or register-fragment name
    memory: Memory
    elem_bytes: int
    vec: int                    # elements per access
    shape: tuple[int, ...]      # logical extent of the tensor (bounds for predicates)
    block: np.ndarray
    thread: np.ndarray
    step: np.ndarray
    lane: np.ndarray
    value: np.ndarray
    coord: np.ndarray
    pred: np.ndarray
    offset: np.ndarray
    addr: np.ndarray
    buffer: str = ""            # buffer name (aliases share one); "" = tensor name
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.block.shape[0])

    @property
    def access_bytes(self) -> int:
        return self.vec * self.elem_bytes

    def warp_instruction_keys(self) -> np.ndarray:
        """A key per row, equal exactly for rows of one warp instruction."""
        warp = self.thread.astype(np.int64) // 32
        nsteps = int(self.step.max()) + 1 if len(self) else 1
        nwarps = int(warp.max()) + 1 if len(self) else 1
        return (self.block.astype(np.int64) * nwarps + warp) * nsteps + self.step

    def select(self, mask: np.ndarray) -> AccessTable:
        """The rows where ``mask`` is true (same metadata)."""
        kw = {k: getattr(self, k)[mask] for k in
              ("block", "thread", "step", "lane", "value", "coord", "pred", "offset", "addr")}
        return AccessTable(self.stage, self.side, self.tensor, self.memory, self.elem_bytes,
                           self.vec, self.shape, buffer=self.buffer, meta=dict(self.meta), **kw)
