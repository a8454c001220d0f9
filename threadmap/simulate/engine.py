"""The simulator: a kernel model and a list of blocks -> the access tables of every stage.

For one side of one copy stage the accesses of block ``b`` are the side's tile-local
partition (block-independent, computed by the model) translated by the tile origin
``at(b) * tile``; the simulator lays them out in the instruction order of
:class:`~threadmap.simulate.access.AccessTable`, evaluates the predicate, the tensor's layout
(element offsets, swizzles included) and the byte addresses, all vectorised over the blocks.

Predicates (per copy stage): ``none`` performs every access; ``bounds`` performs an access
iff the coordinate of its first element lies inside the tensor on every memory side (CuTe's
``copy_if`` with an identity tensor: one predicate per call of the copy atom, the usual
``tApA(m,k) = elem_less(tAcA(0,m,k), shape)``; per element when an access is one element);
``vector`` performs a whole vector access iff every element of it is in bounds (CUTLASS's
predicated tile iterators), again on every memory side.
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


_ONES: dict[int, np.ndarray] = {}


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
    #: registers: the (thread, value) each row moves, and the row's own value slot
    reg: tuple[np.ndarray, np.ndarray] | None = None
    reg_off: np.ndarray | None = None
    #: non-affine layouts: element offsets (and byte addresses) of the tile at one origin
    at_origin: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    reg_addr: np.ndarray | None = None
    coords_at: dict[tuple[int, ...], tuple[np.ndarray, ...]] = field(default_factory=dict)

    @property
    def ones(self) -> np.ndarray:
        if self.perm.size not in _ONES:
            _ONES[self.perm.size] = np.ones(self.perm.size, dtype=bool)
        return _ONES[self.perm.size]


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
        # coordinates: the partition's (thread, value) per row -- its own for a plain copy,
        # another lane's for ldmatrix / stmatrix (model.partition.data_routing); offset and
        # address: the row's own value slot
        own = src % V
        return _SidePlan(perm, local, valid, lo, hi, reg=(local[0], local[1]), reg_addr=own * side.elem_bits >> 3,
                         reg_off=own)
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
            ref = np.broadcast_to(np.asarray(tensor.offsets(c), dtype=np.int64), local[0].shape)
            if not np.array_equal(ref, sum(x * dk for x, dk in zip(c, d, strict=True))):
                return None
    except Exception:  # noqa: BLE001  (the general path reports the layout's own error)
        return None
    return d


@dataclass(frozen=True)
class Pattern:
    """How a simulator table was built, per block: ``x[b * pb + r] == start[b] + rel[r]`` for
    each array named (the coordinate modes, and the byte addresses when ``addr_start`` is
    set).  The arrays are made read-only, so the statement stays true of ``arrays``."""

    arrays: tuple[np.ndarray, ...]            # the coordinate arrays, then addr when covered
    coord_start: tuple[np.ndarray, ...]       # per mode, (nb,)
    coord_rel: tuple[np.ndarray, ...]         # per mode, (pb,)
    addr_start: np.ndarray | None = None      # (nb,)
    addr_rel: np.ndarray | None = None        # (pb,)


class Arena:
    """Output buffers reused from one chunk of blocks to the next.

    A driver that drops each chunk's tables before simulating the next (the enumeration) lends
    the simulator an arena: the tables' arrays are then views of the same buffers every chunk,
    so no chunk pays for fresh memory (the page faults of a freed and re-mapped megabyte cost
    more than filling it).  Tables built with an arena are only valid until the next chunk."""

    def __init__(self) -> None:
        self.bufs: dict[tuple[Any, ...], np.ndarray] = {}
        #: buffers holding a template repeated: key -> (the template, blocks filled)
        self.tiled: dict[tuple[Any, ...], tuple[np.ndarray, int]] = {}

    def take(self, key: tuple[Any, ...], nb: int, pb: int, dtype: Any) -> np.ndarray:
        """A writable (nb, pb) array of ``dtype`` (contents undefined)."""
        n = nb * pb
        b = self.bufs.get(key)
        self.tiled.pop(key, None)
        if b is None or b.size < n or b.dtype != np.dtype(dtype):
            b = np.empty(n, dtype=dtype)
            self.bufs[key] = b
        return b[:n].reshape(nb, pb)

    def tile(self, key: tuple[Any, ...], tpl: np.ndarray, nb: int) -> np.ndarray:
        """``tpl`` repeated ``nb`` times, flat; the previous chunk's copy is kept when it holds
        the same template object for as many blocks (the simulator's templates never change)."""
        have = self.tiled.get(key)
        b = self.bufs.get(key)
        if have is not None and b is not None and have[0] is tpl and have[1] >= nb:
            return b[:nb * tpl.size]
        out = self.take(key, nb, tpl.size, tpl.dtype)
        out[...] = tpl[None, :]
        self.tiled[key] = (tpl, nb)
        return out.reshape(-1)


def _out(arena: Arena | None, key: tuple[Any, ...], nb: int, pb: int, dtype: Any) -> np.ndarray:
    return np.empty((nb, pb), dtype=dtype) if arena is None else arena.take(key, nb, pb, dtype)


def _tile(arena: Arena | None, key: tuple[Any, ...], tpl: np.ndarray, nb: int) -> np.ndarray:
    """``tpl`` repeated for every block, flat."""
    if arena is not None:
        return arena.tile(key, tpl, nb)
    return np.tile(tpl, nb)


def _outer_add(arena: Arena | None, key: tuple[Any, ...], col: np.ndarray, tpl: np.ndarray) -> np.ndarray:
    """``col[b] + tpl[r]`` in block-major order, flat."""
    out = _out(arena, key, col.size, tpl.size, np.int64)
    np.add(col[:, None], tpl[None, :], out=out)
    return out.reshape(-1)


def rows_per_block(model: KernelModel) -> int:
    """Rows one block's tables have over all stages (warps padded to 32 lanes): known from
    the partitions alone, so budgets are checked before anything is planned."""
    return sum(-(-sd.partition.threads // WARP_SIZE) * WARP_SIZE * (sd.partition.values // sd.vec) * sd.vec
               for sd in model.sides())


class Simulator:
    """Access tables of a :class:`KernelModel` for any list of blocks."""

    def __init__(self, model: KernelModel) -> None:
        self.model = model
        self.plans = {(sd.stage, sd.which): _plan(sd, model.threads) for sd in model.sides()}

    def rows_per_block(self) -> int:
        return rows_per_block(self.model)

    def stage_tables(self, cp: CopyModel, blocks: np.ndarray,
                     arena: Arena | None = None) -> tuple[AccessTable, AccessTable]:
        """The tables of both sides of ``cp`` for ``blocks`` (the predicate joins both sides);
        with an ``arena`` their arrays live in its buffers (see :class:`Arena`)."""
        blocks = np.asarray(blocks, dtype=np.int64)
        nb = blocks.size
        src = self._side(cp.src, blocks, arena)
        dst = self._side(cp.dst, blocks, arena)
        s_in, d_in = src.meta.pop("inb"), dst.meta.pop("inb")
        s_part, d_part = src.meta.pop("edge"), dst.meta.pop("edge")
        for t in (src, dst):
            # every row of a block is performed unless the predicate masks some
            plan = self.plans[(t.stage, t.side)]
            t.pred = _tile(arena, (t.stage, t.side, "pred"), plan.ones if plan.valid is None else plan.valid, nb)
        if cp.predicate != "none":
            # only blocks with an out-of-bounds row on either side need the join
            part = np.flatnonzero(s_part | d_part)
            if part.size:
                sub_s = np.ones((part.size, src.per_block), dtype=bool) if s_in is None else s_in[part]
                sub_d = np.ones((part.size, dst.per_block), dtype=bool) if d_in is None else d_in[part]
                ok = self._to_tv(cp.src, sub_s.reshape(-1), part.size) & \
                    self._to_tv(cp.dst, sub_d.reshape(-1), part.size)
                for side, t in ((cp.src, src), (cp.dst, dst)):
                    if arena is not None:
                        arena.tiled.pop((t.stage, t.side, "pred"), None)  # no longer the template
                    p2 = t.pred.reshape(nb, -1)
                    p2[part] = self._from_tv(side, ok, part.size).reshape(part.size, -1)
                    if t.valid is not None:
                        p2[part] &= t.valid.reshape(nb, -1)[part]
        sp, dp = self.plans[(cp.src.stage, "src")].perm, self.plans[(cp.dst.stage, "dst")].perm
        if cp.cp_async and sp.shape == dp.shape and bool((sp == dp).all()):
            # one LDGSTS per access, the same rows on both sides: its shared writes depend on
            # the global lines it reads
            dst.meta["ldgsts_src"] = src
        return src, dst

    def tables(self, blocks: np.ndarray, arena: Arena | None = None) -> list[tuple[AccessTable, AccessTable] | str]:
        """Every stage for ``blocks``: ``(src, dst)`` tables, or ``"barrier"``."""
        return [st if isinstance(st, str) else self.stage_tables(st, blocks, arena) for st in self.model.stages]

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

    def _side(self, side: SideModel, blocks: np.ndarray, arena: Arena | None = None) -> AccessTable:
        """One side's rows: per block its origin plus the plan's template (one broadcast add per
        array); in-bounds flags only for the blocks whose box of coordinates leaves the tensor."""
        plan = self.plans[(side.stage, side.which)]
        nb, pb = blocks.size, plan.perm.size
        n = nb * pb
        key = (side.stage, side.which)
        valid = None if plan.valid is None else _tile(arena, (*key, "valid"), plan.valid, nb)
        coords: tuple[np.ndarray, ...]
        if side.tensor is None:  # registers: (thread, value) of each row
            assert plan.reg is not None and plan.reg_addr is not None and plan.reg_off is not None
            th, va = plan.reg
            coords = (_tile(arena, (*key, 0), th, nb), _tile(arena, (*key, 1), va, nb))
            off = _tile(arena, (*key, "off"), plan.reg_off, nb)
            t = AccessTable(side.stage, side.which, side.name, "register", side.elem_bytes, side.vec,
                            side.shape, side.partition.threads, side.partition.values, blocks, coords,
                            np.ones(0, dtype=bool), off, _tile(arena, (*key, "addr"), plan.reg_addr, nb),
                            valid, side.name, side.tile, None, elem_bits=side.elem_bits)
            t.meta["inb"] = None
            t.meta["edge"] = np.zeros(nb, dtype=bool)
            addr_tpl = plan.reg_addr
            assert addr_tpl is not None
            _certify(t, tuple(np.full(nb, x[0] if x.size else 0, dtype=np.int64) for x in (th, va)),
                     tuple(x - (x[0] if x.size else 0) for x in (th, va)),
                     np.full(nb, addr_tpl[0] if addr_tpl.size else 0, dtype=np.int64),
                     addr_tpl - (addr_tpl[0] if addr_tpl.size else 0))
            return t
        tensor = side.tensor
        origins = self.model.origins(side, blocks)
        R = len(plan.local)
        same = nb > 0 and bool((origins == origins[:1]).all())
        if same:
            # every block at one origin (shared tiles): the same coordinates, repeated
            where = tuple(int(x) for x in origins[0])
            at = plan.coords_at.get(where)
            if at is None:
                at = tuple(np.ascontiguousarray(plan.local[k] + origins[0, k]) for k in range(R))
                plan.coords_at[where] = at
            coords = tuple(_tile(arena, (*key, k), at[k], nb) for k in range(R))
        else:
            coords = tuple(_outer_add(arena, (*key, k), origins[:, k], plan.local[k]) for k in range(R))
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
            how = self._predicate(side)
            if how == "vector" and side.vec > 1:
                sub = np.repeat(sub.reshape(-1, side.vec).all(axis=1), side.vec).reshape(part.size, pb)
            elif how == "bounds" and side.vec > 1:  # one predicate per instruction: its first element's
                sub = np.repeat(sub.reshape(-1, side.vec)[:, 0], side.vec).reshape(part.size, pb)
            inb[part] = sub
        bits = tensor.elem_bits
        a_start: np.ndarray | None = None
        a_rel: np.ndarray | None = None
        # byte addresses: base + offset * bits / 8; a sub-byte element's is the byte that holds
        # it (its accesses start on a byte and cover whole bytes: checked below)
        if plan.off_local is not None and plan.strides is not None and (bits % 8 == 0 or pb == 0):
            # affine layout: offset = origin . strides + local . strides, exactly
            ob = origins[:, :R] @ np.asarray(plan.strides, dtype=np.int64) + tensor.offset
            off = _outer_add(arena, (*key, "off"), ob, plan.off_local)
            a_tpl = plan.off_local * (bits // 8)
            a_blk = tensor.base + ob * (bits // 8)
            addr = _outer_add(arena, (*key, "addr"), a_blk, a_tpl)
            if pb:
                a_start, a_rel = a_blk + a_tpl[0], a_tpl - a_tpl[0]
        elif same:
            # one evaluation of the layout, repeated
            if where not in plan.at_origin:
                tpl = self._offsets(tensor, tuple(c[:pb] for c in coords), pb)
                plan.at_origin[where] = (tpl, tensor.base + (tpl * bits >> 3))
            tpl, a_tpl = plan.at_origin[where]
            off = _tile(arena, (*key, "off"), tpl, nb)
            addr = _tile(arena, (*key, "addr"), a_tpl, nb)
            if pb:
                a_start, a_rel = np.full(nb, a_tpl[0], dtype=np.int64), a_tpl - a_tpl[0]
        else:
            off = self._offsets(tensor, coords, n)
            addr = tensor.base + (off * bits >> 3)
            if bits % 8 and pb and plan.off_local is not None and plan.strides is not None:
                # affine: every block's addresses are its first one's plus one template when
                # every block starts on a byte (floor(a + b) = a + floor(b) for whole a)
                ob = origins[:, :R] @ np.asarray(plan.strides, dtype=np.int64) + tensor.offset
                if not np.any(ob * bits % 8):
                    a_tpl = plan.off_local * bits >> 3
                    a_start, a_rel = tensor.base + (ob * bits >> 3) + a_tpl[0], a_tpl - a_tpl[0]
        if bits % 8:
            self._whole_bytes(side, off, valid)
        t = AccessTable(side.stage, side.which, side.name, tensor.memory, tensor.elem_bytes, side.vec,
                        tensor.shape, side.partition.threads, side.partition.values, blocks, coords,
                        np.ones(0, dtype=bool), off, addr, valid, tensor.buffer, side.tile, origins,
                        elem_bits=bits)
        t.meta["inb"] = inb
        t.meta["edge"] = edge
        if pb:
            _certify(t, tuple(origins[:, k] + plan.local[k][0] for k in range(R)),
                     tuple(plan.local[k] - plan.local[k][0] for k in range(R)), a_start, a_rel)
        return t

    def _whole_bytes(self, side: SideModel, off: np.ndarray, valid: np.ndarray | None) -> None:
        """A sub-byte side's every access starts on a byte (its width, ``vec`` elements, is a
        whole number of bytes: the model checks that): memory is addressed in bytes, and an
        access that starts inside a byte has no byte address."""
        first = off.reshape(-1, side.vec)[:, 0]
        bad = first * side.elem_bits % 8 != 0
        if valid is not None:
            bad &= valid.reshape(-1, side.vec)[:, 0]
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            assert side.tensor is not None
            raise self.model.loaded.error(tuple(side.path), f"an access of {side.vec} x {side.elem_bits}-bit "
                                          f"{side.tensor.name} starts at element offset {int(first[i])}, inside a "
                                          "byte: sub-byte accesses must start on a byte boundary")

    @staticmethod
    def _offsets(tensor: Any, coords: tuple[np.ndarray, ...], n: int) -> np.ndarray:
        off = np.asarray(tensor.offsets(coords), dtype=np.int64).reshape(-1)
        if off.size != n:
            off = np.broadcast_to(off, (n,)).copy()
        if tensor.offset:
            off = off + tensor.offset
        return off

    def _predicate(self, side: SideModel) -> str:
        st = self.model.stages[side.stage]
        return st.predicate if isinstance(st, CopyModel) else "none"


def _certify(t: AccessTable, coord_start: tuple[np.ndarray, ...], coord_rel: tuple[np.ndarray, ...],
             addr_start: np.ndarray | None, addr_rel: np.ndarray | None) -> None:
    """Record the table's :class:`Pattern` (``meta['pattern']``) and freeze the arrays it describes."""
    arrays = tuple(t.coords) + ((t.addr,) if addr_start is not None else ())
    for a in arrays:
        a.flags.writeable = False
    t.meta["pattern"] = Pattern(arrays, coord_start, coord_rel, addr_start, addr_rel)
