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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from threadmap.hardware import WARP_SIZE
from threadmap.model import CopyModel, KernelModel, SideModel
from threadmap.simulate.access import AccessTable

#: rows of all stages together in one chunk of blocks: small enough for the CPU caches (the
#: tiling mode and the pair searches; the exhaustive enumeration takes whole multiples of it)
CHUNK_ROWS = 1 << 17


@dataclass(frozen=True)
class _SidePlan:
    """A side's block-independent part in instruction order."""

    perm: np.ndarray               # (per_block,) canonical row -> t * V + v, or -1 (padding)
    local: tuple[np.ndarray, ...]  # per mode, (per_block,) tile-local coordinate
    valid: np.ndarray | None       # (per_block,) real thread, None when no padding
    lo: tuple[int, ...] = ()       # per mode, the least and greatest tile-local coordinate
    hi: tuple[int, ...] = ()
    #: ``sum_k local_k * stride_k`` when the tensor's layout is affine in the top-level
    #: coordinates (then a block's offsets are its origin's offset plus this template)
    off_local: np.ndarray | None = None
    strides: tuple[int, ...] | None = None
    #: registers: (thread, value) of every row, and its byte addresses
    reg: tuple[np.ndarray, np.ndarray] | None = None
    #: non-affine layouts: element offsets of the tile at one origin, by origin
    at_origin: dict[tuple[int, ...], np.ndarray] = field(default_factory=dict)


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
    lo = tuple(int(x.min()) if x.size else 0 for x in local)
    hi = tuple(int(x.max()) if x.size else -1 for x in local)
    valid = None if bool(real.all()) else real
    if side.tensor is None:
        th, va = src // V, src % V
        return _SidePlan(perm, local, valid, lo, hi, reg=(th, va))
    strides = _affine_strides(side, local)
    off_local = None
    if strides is not None:
        off_local = np.zeros(perm.size, dtype=np.int64)
        for c, d in zip(local, strides, strict=True):
            off_local += c * d
    return _SidePlan(perm, local, valid, lo, hi, off_local, strides)


def _affine_strides(side: SideModel, local: tuple[np.ndarray, ...]) -> tuple[int, ...] | None:
    """The tensor's strides when its layout is ``sum_k c_k * d_k`` for any integer coordinate
    (a plain layout with integer top-level modes), checked against the layout itself on the
    tile at two origins; None otherwise (the layout is then evaluated per row)."""
    tensor = side.tensor
    if tensor is None or tensor.strides is None or len(tensor.strides) != len(local) or not local:
        return None
    d = tensor.strides
    try:
        for shift in (0, 1):
            c = tuple(x + shift * (k + 3) for k, x in enumerate(local))
            ref = np.broadcast_to(np.asarray(tensor.layout(c), dtype=np.int64), local[0].shape)
            if not np.array_equal(ref, sum(x * dk for x, dk in zip(c, d, strict=True))):
                return None
    except Exception:  # noqa: BLE001  (the general path reports the layout's own error)
        return None
    return d


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
        nb = blocks.size
        src = self._side(cp.src, blocks)
        dst = self._side(cp.dst, blocks)
        s_in, d_in = src.meta.pop("inb"), dst.meta.pop("inb")
        s_part, d_part = src.meta.pop("edge"), dst.meta.pop("edge")
        for t in (src, dst):
            # every row of a block is performed unless the predicate masks some
            pv = self.plans[(t.stage, t.side)].valid
            t.pred = np.ones(len(t), dtype=bool) if pv is None else np.tile(pv, nb)
        if cp.predicate != "none":
            # only blocks with an out-of-bounds row on either side need the join
            part = np.flatnonzero(s_part | d_part)
            if part.size:
                sub_s = np.ones((part.size, len(src) // nb), dtype=bool) if s_in is None else s_in[part]
                sub_d = np.ones((part.size, len(dst) // nb), dtype=bool) if d_in is None else d_in[part]
                ok = self._to_tv(cp.src, sub_s.reshape(-1), part.size) & \
                    self._to_tv(cp.dst, sub_d.reshape(-1), part.size)
                for side, t in ((cp.src, src), (cp.dst, dst)):
                    p2 = t.pred.reshape(nb, -1)
                    p2[part] = self._from_tv(side, ok, part.size).reshape(part.size, -1)
                    if t.valid is not None:
                        p2[part] &= t.valid.reshape(nb, -1)[part]
        return src, dst

    def tables(self, blocks: np.ndarray) -> list[tuple[AccessTable, AccessTable] | str]:
        """Every stage for ``blocks``: ``(src, dst)`` tables, or ``"barrier"``."""
        return [st if isinstance(st, str) else self.stage_tables(st, blocks) for st in self.model.stages]

    def chunks(self, blocks: np.ndarray, rows: int = CHUNK_ROWS) -> Iterator[np.ndarray]:
        """``blocks`` in chunks of about ``rows`` rows (all stages together)."""
        per = self.blocks_per_chunk(rows)
        for i in range(0, blocks.size, per):
            yield blocks[i:i + per]

    def blocks_per_chunk(self, rows: int = CHUNK_ROWS) -> int:
        return max(1, rows // max(1, self.rows_per_block()))

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
        """One side's rows: per block its origin plus the plan's template (one broadcast add per
        array); in-bounds flags only for the blocks whose box of coordinates leaves the tensor."""
        plan = self.plans[(side.stage, side.which)]
        nb, pb = blocks.size, plan.perm.size
        n = nb * pb
        valid = None if plan.valid is None else np.tile(plan.valid, nb)
        if side.tensor is None:  # registers: (thread, value) of each row
            assert plan.reg is not None
            th, va = plan.reg
            coords = (np.tile(th, nb), np.tile(va, nb))
            off = np.tile(va, nb)
            t = AccessTable(side.stage, side.which, side.name, "register", side.elem_bytes, side.vec,
                            side.shape, side.partition.threads, side.partition.values, blocks, coords,
                            np.ones(n, dtype=bool), off, np.tile(va * side.elem_bytes, nb), valid, side.name,
                            side.tile, None)
            t.meta["inb"] = None
            t.meta["edge"] = np.zeros(nb, dtype=bool)
            return t
        tensor = side.tensor
        origins = self.model.origins(side, blocks)
        R = len(plan.local)
        coords = tuple(np.add(origins[:, k, None], plan.local[k][None, :]).reshape(-1) for k in range(R))
        # a block is inside the tensor iff its box [origin + lo, origin + hi] is
        edge = np.zeros(nb, dtype=bool)
        for k, ext in enumerate(tensor.shape[:R]):
            edge |= (origins[:, k] + plan.lo[k] < 0) | (origins[:, k] + plan.hi[k] >= ext)
        inb = None
        part = np.flatnonzero(edge)
        if part.size:
            inb = np.ones((nb, pb), dtype=bool)
            sub = np.ones((part.size, pb), dtype=bool)
            for k, ext in enumerate(tensor.shape[:R]):
                sub &= np.less(coords[k].reshape(nb, pb)[part].view(np.uint64), np.uint64(ext))
            if self._predicate(side) == "vector" and side.vec > 1:
                sub = np.repeat(sub.reshape(-1, side.vec).all(axis=1), side.vec).reshape(part.size, pb)
            inb[part] = sub
        e = tensor.elem_bytes
        if plan.off_local is not None and plan.strides is not None:
            # affine layout: offset = origin . strides + local . strides, exactly
            ob = origins[:, :R] @ np.asarray(plan.strides, dtype=np.int64) + tensor.offset
            off = np.add(ob[:, None], plan.off_local[None, :]).reshape(-1)
            addr = np.add((tensor.base + ob * e)[:, None], (plan.off_local * e)[None, :]).reshape(-1)
        elif nb and bool((origins == origins[:1]).all()):
            # every block at one origin (shared tiles): one evaluation of the layout, repeated
            key = tuple(int(x) for x in origins[0])
            tpl = plan.at_origin.get(key)
            if tpl is None:
                tpl = self._offsets(tensor, tuple(c[:pb] for c in coords), pb)
                plan.at_origin[key] = tpl
            off = np.tile(tpl, nb)
            addr = np.tile(tensor.base + tpl * e, nb)
        else:
            off = self._offsets(tensor, coords, n)
            addr = tensor.base + off * e
        t = AccessTable(side.stage, side.which, side.name, tensor.memory, tensor.elem_bytes, side.vec,
                        tensor.shape, side.partition.threads, side.partition.values, blocks, coords,
                        np.ones(n, dtype=bool), off, addr, valid, tensor.buffer, side.tile, origins)
        t.meta["inb"] = inb
        t.meta["edge"] = edge
        return t

    @staticmethod
    def _offsets(tensor: Any, coords: tuple[np.ndarray, ...], n: int) -> np.ndarray:
        off = np.asarray(tensor.layout(coords), dtype=np.int64).reshape(-1)
        if off.size != n:
            off = np.broadcast_to(off, (n,)).copy()
        if tensor.offset:
            off = off + tensor.offset
        return off

    def _predicate(self, side: SideModel) -> str:
        st = self.model.stages[side.stage]
        return st.predicate if isinstance(st, CopyModel) else "none"
