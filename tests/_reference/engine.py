"""The simulator: a kernel model and a list of blocks -> the access tables of every stage.

For one side of one copy stage the accesses of block ``b`` are the side's tile-local
partition (block-independent, computed by the model) translated by the tile origin
``at(b) * tile``; the simulator lays them out in the instruction order of
:class:`~threadmap.simulate.access.AccessTable`, evaluates the predicate, the tensor's layout
(element offsets, swizzles included) and the byte addresses, all vectorised over the blocks.

Predicates (per copy stage): ``none`` performs every access; ``bounds`` performs an element
iff its coordinate lies inside the tensor on every memory side (CuTe's ``copy_if`` with an
identity tensor); ``vector`` performs a whole vector access iff every element of it is in
bounds (CUTLASS's predicated tile iterators), again on every memory side.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from threadmap.hardware import WARP_SIZE
from threadmap.model import CopyModel, KernelModel, SideModel
from threadmap.simulate.access import AccessTable

#: rows of all stages together in one chunk of blocks: small enough for the CPU caches
CHUNK_ROWS = 1 << 17


@dataclass(frozen=True)
class _SidePlan:
    """A side's block-independent part in instruction order."""

    perm: np.ndarray               # (per_block,) canonical row -> t * V + v, or -1 (padding)
    local: tuple[np.ndarray, ...]  # per mode, (per_block,) tile-local coordinate
    valid: np.ndarray | None       # (per_block,) real thread, None when no padding


def _plan(side: SideModel, threads: int) -> _SidePlan:
    part = side.partition
    T, V, vec = part.threads, part.values, side.vec
    W, S = -(-T // WARP_SIZE), V // vec
    w, s, ln, k = np.meshgrid(np.arange(W), np.arange(S), np.arange(WARP_SIZE), np.arange(vec), indexing="ij")
    t = (w * WARP_SIZE + ln).reshape(-1)
    v = (s * vec + k).reshape(-1)
    real = t < T
    perm = np.where(real, t * V + v, -1).astype(np.int64)
    flat = part.coord.reshape(T * V, part.rank)
    src = np.where(real, perm, 0)
    local = tuple(np.ascontiguousarray(flat[src, r]) for r in range(part.rank))
    return _SidePlan(perm, local, None if bool(real.all()) else real)


class Simulator:
    """Access tables of a :class:`KernelModel` for any list of blocks."""

    def __init__(self, model: KernelModel) -> None:
        self.model = model
        self.plans = {(sd.stage, sd.which): _plan(sd, model.threads) for sd in model.sides()}

    def rows_per_block(self) -> int:
        return sum(self.plans[(s.stage, s.which)].perm.size for s in self.model.sides())

    def stage_tables(self, cp: CopyModel, blocks: np.ndarray) -> tuple[AccessTable, AccessTable]:
        """The tables of both sides of ``cp`` for ``blocks`` (the predicate joins both sides)."""
        blocks = np.asarray(blocks, dtype=np.int64)
        src = self._side(cp.src, blocks)
        dst = self._side(cp.dst, blocks)
        if cp.predicate != "none":
            ok = self._to_tv(cp.src, src.meta.pop("inb"), blocks.size) & \
                self._to_tv(cp.dst, dst.meta.pop("inb"), blocks.size)
            src.pred = self._from_tv(cp.src, ok, blocks.size)
            dst.pred = self._from_tv(cp.dst, ok, blocks.size)
        else:
            src.meta.pop("inb")
            dst.meta.pop("inb")
        for t in (src, dst):
            if t.valid is not None:
                t.pred &= t.valid
        return src, dst

    def tables(self, blocks: np.ndarray) -> list[tuple[AccessTable, AccessTable] | str]:
        """Every stage for ``blocks``: ``(src, dst)`` tables, or ``"barrier"``."""
        return [st if isinstance(st, str) else self.stage_tables(st, blocks) for st in self.model.stages]

    def chunks(self, blocks: np.ndarray, rows: int = CHUNK_ROWS) -> Iterator[np.ndarray]:
        """``blocks`` in chunks of about ``rows`` rows (all stages together)."""
        per = max(1, rows // max(1, self.rows_per_block()))
        for i in range(0, blocks.size, per):
            yield blocks[i:i + per]

    # -- one side ------------------------------------------------------------------------------
    def _to_tv(self, side: SideModel, x: np.ndarray, nb: int) -> np.ndarray:
        """Per-row values in instruction order -> (nb, T * V) in (thread, value) order."""
        plan = self.plans[(side.stage, side.which)]
        T, V = side.partition.threads, side.partition.values
        out = np.ones((nb, T * V), dtype=x.dtype)
        keep = plan.perm >= 0
        out[:, plan.perm[keep]] = x.reshape(nb, -1)[:, keep]
        return out

    def _from_tv(self, side: SideModel, x: np.ndarray, nb: int) -> np.ndarray:
        plan = self.plans[(side.stage, side.which)]
        return x[:, np.where(plan.perm >= 0, plan.perm, 0)].reshape(-1)

    def _side(self, side: SideModel, blocks: np.ndarray) -> AccessTable:
        plan = self.plans[(side.stage, side.which)]
        nb, pb = blocks.size, plan.perm.size
        n = nb * pb
        valid = None if plan.valid is None else np.tile(plan.valid, nb)
        if side.tensor is None:  # registers: (thread, value) of each row
            tv = np.where(plan.perm >= 0, plan.perm, 0)
            coords = (np.tile(tv // side.partition.values, nb), np.tile(tv % side.partition.values, nb))
            off = coords[1].astype(np.int64)
            t = AccessTable(side.stage, side.which, side.name, "register", side.elem_bytes, side.vec,
                            side.shape, side.partition.threads, side.partition.values, blocks, coords,
                            np.ones(n, dtype=bool), off, off * side.elem_bytes, valid, side.name,
                            side.tile, None)
            t.meta["inb"] = np.ones(n, dtype=bool)
            return t
        tensor = side.tensor
        origins = self.model.origins(side, blocks)
        coords = tuple((origins[:, k, None] + plan.local[k][None, :]).reshape(-1)
                       for k in range(len(plan.local)))
        inb = np.ones(n, dtype=bool)
        for k, ext in enumerate(tensor.shape[:len(coords)]):
            inb &= np.less(coords[k].view(np.uint64), np.uint64(ext))
        if self._predicate(side) == "vector" and side.vec > 1:
            inb = np.repeat(inb.reshape(-1, side.vec).all(axis=1), side.vec)
        off = np.asarray(tensor.layout(coords), dtype=np.int64).reshape(-1)
        if off.size != n:
            off = np.broadcast_to(off, (n,)).copy()
        if tensor.offset:
            off = off + tensor.offset
        addr = tensor.base + off * tensor.elem_bytes
        t = AccessTable(side.stage, side.which, side.name, tensor.memory, tensor.elem_bytes, side.vec,
                        tensor.shape, side.partition.threads, side.partition.values, blocks, coords,
                        np.ones(n, dtype=bool), off, addr, valid, tensor.buffer, side.tile, origins)
        t.meta["inb"] = inb
        return t

    def _predicate(self, side: SideModel) -> str:
        st = self.model.stages[side.stage]
        return st.predicate if isinstance(st, CopyModel) else "none"
