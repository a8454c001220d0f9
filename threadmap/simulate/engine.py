"""The simulator: a validated spec and one size environment -> access tables per stage.

Pipeline per copy stage and side:

1. *Tile-local partition* (computed once, independent of the block): for every thread
   ``t`` and value ``v`` the coordinate inside the CTA tile, plus the instruction
   structure (``step``, ``lane``).  Partitions follow CuTe exactly by evaluating the real
   algebra on identity tensors: ``local_partition(make_identity_tensor(tile), thr, t)``,
   ``TiledCopy.get_slice(t).partition_S/D``, ``TiledMMA.get_slice(t).partition_A/B/C``, or a
   CUTLASS thread map's ``coordinates()``.
2. *Per block* (vectorised over a chunk of blocks): the tile origin ``at * tile``, the
   logical coordinate ``origin + local``, the predicate, the element offset from the
   tensor's layout (swizzle included) and the byte address.

Vector width of a copy: a tiled copy moves ``NumValSrc`` values per instruction for sized
atoms (``UniversalCopy<uint128_t>``); auto-vectorizing atoms move the largest common
contiguous vector of both sides (CuTe's ``max_common_vector``, measured on thread 0's
fragment), capped by the atom's assumed alignment (128 bits); a plain ``threads``
partition is scalar unless the copy gives ``vector_bits``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from math import gcd
from typing import Any

import numpy as np

import threadmap.layout as L
from threadmap.errors import ThreadmapError
from threadmap.layout import ArithTuple, parse_layout, product_each
from threadmap.simulate.access import AccessTable
from threadmap.spec.schema import ELEMENT_BITS, CopyStage, Side, Spec, TensorSpec

BLOCK_NAMES = ("bx", "by", "bz")


class SimulationError(ThreadmapError):
    """The spec is valid but cannot be simulated (e.g. partitions of different sizes)."""


def eval_expr(e: Any, env: dict[str, int]) -> int:
    """An integer or an expression string of the spec grammar, under ``env``."""
    if isinstance(e, int):
        return e
    from threadmap.spec.expr import parse_expr

    return int(parse_expr(str(e)).eval(env))


@dataclass
class LocalPartition:
    """Tile-local accesses of one side: arrays of shape (threads, nvals)."""

    coord: np.ndarray   # (T, V, R) tile-local coordinate (registers: unused)
    step: np.ndarray    # (T, V)
    lane: np.ndarray    # (T, V)
    vec: int


@dataclass
class ResolvedTensor:
    name: str
    spec: TensorSpec
    layout: Any                 # Layout or ComposedLayout (logical coordinate -> offset)
    shape: tuple[int, ...]      # logical extents (product of each top-level mode)
    elem_bytes: int
    buffer: str
    base: int


class Simulation:
    """Everything needed to produce access tables for one spec under one size environment."""

    def __init__(self, spec: Spec, env: dict[str, int]) -> None:
        self.spec = spec
        self.env = dict(env)
        self.threads = eval_expr(spec.threads, self.env)
        g = [eval_expr(x, self.env) for x in spec.grid]
        self.grid = tuple(g + [1] * (3 - len(g)))
        if any(x < 1 for x in self.grid):
            raise SimulationError(f"grid {self.grid} has an empty dimension")
        self.num_blocks = int(np.prod(self.grid))
        self.elem_bits = ELEMENT_BITS[spec.element]
        self.tensors = {n: self._resolve_tensor(n, t) for n, t in spec.tensors.items()}
        self.copies: list[tuple[int, CopyStage]] = [
            (i, s.copy_) for i, s in enumerate(spec.stages) if not isinstance(s, str)]
        self._register_vals: dict[str, int] = {}

    # ------------------------------------------------------------------ tensors
    def _resolve_tensor(self, name: str, t: TensorSpec) -> ResolvedTensor:
        layout = parse_layout(t.layout, self.env)
        shape = tuple(int(x) for x in product_each(L.shape(layout)))
        bits = ELEMENT_BITS[t.element] if t.element else self.elem_bits
        root = name
        seen = {name}
        while self.spec.tensors[root].alias:
            root = self.spec.tensors[root].alias  # type: ignore[assignment]
            if root in seen:
                raise SimulationError(f"alias cycle through {root!r}")
            seen.add(root)
        base = t.align if t.memory == "global" else 0
        return ResolvedTensor(name, t, layout, shape, max(1, bits // 8), root, base)

    # ------------------------------------------------------------------ tile-local partitions
    def _tile_shape(self, side: Side, tensor: ResolvedTensor) -> tuple[int, ...]:
        if side.tile is None:
            return tensor.shape
        return tuple(eval_expr(x, self.env) for x in side.tile)

    def local_partition(self, side: Side, tensor: ResolvedTensor | None, which: str) -> LocalPartition:
        if side.registers is not None:
            raise SimulationError("register sides take their structure from the other side")
        assert tensor is not None
        tile = self._tile_shape(side, tensor)
        T = self.threads
        if side.threads is not None:
            thr = parse_layout(side.threads, self.env)
            if L.size(thr) != T:
                raise SimulationError(f"thread layout {thr} has {L.size(thr)} threads, the CTA {T}")
            ident = L.make_identity_tensor(tile)
            c = _all_threads(lambda t: L.local_partition(ident, thr, t), T, len(tile))
            nv = c.shape[1]
            step = np.broadcast_to(np.arange(nv), (T, nv)).copy()
            return LocalPartition(c, step, np.zeros((T, nv), np.int64), 1)
        if side.tiled_copy is not None:
            tc = self._tiled_copy(side)
            if tc.tiled_num_thr != T:
                raise SimulationError(f"tiled copy has {tc.tiled_num_thr} threads, the CTA {T}")
            ident = L.make_identity_tensor(tile)
            method = "partition_S" if which == "src" else "partition_D"
            c = _all_threads(lambda t: getattr(tc.get_slice(t), method)(ident), T, len(tile))
            nv = c.shape[1]
            cpy = L.size(getattr(tc.get_slice(0), method)(ident).layout[0])
            v = np.arange(nv)
            return LocalPartition(c, np.broadcast_to(v // cpy, (T, nv)).copy(),
                                  np.broadcast_to(v % cpy, (T, nv)).copy(), cpy)
        if side.thread_map is not None:
            return self._thread_map_partition(side, tile)
        if side.mma is not None:
            from threadmap.layout import make_tiled_mma

            m = side.mma
            mma = make_tiled_mma(m.atom, parse_layout(m.atom_layout, self.env))
            if L.size(mma.thr_layout_vmnk) != T:
                raise SimulationError(f"tiled MMA has {L.size(mma.thr_layout_vmnk)} threads, the CTA {T}")
            ident = L.make_identity_tensor(tile)
            c = _all_threads(lambda t: getattr(mma.get_slice(t), f"partition_{m.operand}")(ident),
                             T, len(tile))
            nv = c.shape[1]
            return LocalPartition(c, np.broadcast_to(np.arange(nv), (T, nv)).copy(),
                                  np.zeros((T, nv), np.int64), 1)
        raise SimulationError("side has no partition")

    def _tiled_copy(self, side: Side) -> Any:
        from threadmap.layout import make_tiled_copy

        assert side.tiled_copy is not None
        tcs = side.tiled_copy
        return make_tiled_copy((tcs.atom, self.elem_bits), parse_layout(tcs.threads, self.env),
                               parse_layout(tcs.values, self.env))

    def _thread_map_partition(self, side: Side, tile: tuple[int, ...]) -> LocalPartition:
        from threadmap.cutlass import THREAD_MAPS

        tm_spec = side.thread_map
        assert tm_spec is not None
        cls = THREAD_MAPS.get(tm_spec.name)
        if cls is None:
            raise SimulationError(f"unknown thread map {tm_spec.name!r}")
        args: list[Any] = [tuple(tm_spec.shape), tm_spec.threads]
        if tm_spec.warp_thread_arrangement is not None:
            args.append(tuple(tm_spec.warp_thread_arrangement))
        args.append(tm_spec.elements_per_access)
        tm = cls(*args)
        if tm.threads != self.threads:
            raise SimulationError(f"thread map has {tm.threads} threads, the CTA {self.threads}")
        co = tm.coordinates()  # (T, Its, Itc, epa, 2) of (contiguous, strided)
        T = co.shape[0]
        epa = co.shape[-2]
        flat = co.reshape(T, -1, 2)
        nv = flat.shape[1]
        if len(tile) != 2:
            raise SimulationError("a CUTLASS thread map partitions a rank-2 tile")
        if tm_spec.contiguous_mode == 1:
            c = np.stack([flat[..., 1], flat[..., 0]], axis=-1)
        else:
            c = flat.copy()
        v = np.arange(nv)
        return LocalPartition(c, np.broadcast_to(v // epa, (T, nv)).copy(),
                              np.broadcast_to(v % epa, (T, nv)).copy(), epa)

    # ------------------------------------------------------------------ stage structure
    @cached_property
    def stage_plans(self) -> list[dict[str, Any]]:
        """Per copy stage: the two sides' local partitions, paired value by value, and the
        stage's vector width."""
        plans = []
        for idx, cp in self.copies:
            sides = {}
            for which, side in (("src", cp.src), ("dst", cp.dst)):
                tensor = self.tensors.get(side.tensor) if side.tensor else None
                if side.tensor is not None and tensor is None:
                    raise SimulationError(f"stage {idx}: unknown tensor {side.tensor!r}")
                sides[which] = (side, tensor)
            lp = {w: self.local_partition(s, t, w) for w, (s, t) in sides.items() if s.registers is None}
            if not lp:
                raise SimulationError(f"stage {idx}: a copy needs at least one memory side")
            nvals = {w: p.coord.shape[1] for w, p in lp.items()}
            if len(set(nvals.values())) > 1:
                raise SimulationError(f"stage {idx}: source and destination give each thread a different "
                                      f"number of values ({nvals['src']} vs {nvals['dst']})")
            nv = next(iter(nvals.values()))
            for w, (s, _t) in sides.items():
                if s.registers is not None:
                    other = lp["dst" if w == "src" else "src"]
                    T = self.threads
                    reg = np.stack(np.meshgrid(np.arange(T), np.arange(nv), indexing="ij"), axis=-1)
                    lp[w] = LocalPartition(reg, other.step, other.lane, other.vec)
                    if w == "dst":
                        self._register_vals[s.registers] = nv
                    elif s.registers not in self._register_vals:
                        raise SimulationError(
                            f"stage {idx}: registers {s.registers!r} are read before written")
            vec = self._stage_vec(cp, sides, lp)
            if vec != lp["src"].vec or vec != lp["dst"].vec:
                v = np.arange(nv)
                for w in lp:
                    lp[w] = LocalPartition(lp[w].coord, np.broadcast_to(v // vec, (self.threads, nv)).copy(),
                                           np.broadcast_to(v % vec, (self.threads, nv)).copy(), vec)
            plans.append({"index": idx, "copy": cp, "sides": sides, "local": lp, "vec": vec, "nvals": nv})
        return plans

    def _stage_vec(self, cp: CopyStage, sides: dict[str, Any], lp: dict[str, LocalPartition]) -> int:
        tiled = [s.tiled_copy for s, _ in sides.values() if s.tiled_copy is not None]
        if cp.predicate != "none" and not tiled and not any(s.thread_map for s, _ in sides.values()):
            return 1  # copy_if: element by element
        for s, _ in sides.values():
            if s.thread_map is not None:
                return lp["src" if s is sides["src"][0] else "dst"].vec
        if tiled:
            from threadmap.layout import get_copy_op

            atom = tiled[0].atom
            op = get_copy_op(atom)
            if "AutoVectorizing" not in op.name and atom != "AutoVectorizingCopy":
                return max(lp[w].vec for w in lp)
            max_bits = 128
            digits = "".join(ch for ch in atom.split("<")[-1] if ch.isdigit()) if "<" in atom else ""
            if digits:
                max_bits = int(digits)
        else:
            max_bits = cp.vector_bits or self.elem_bits
        common = self._common_vector(sides, lp)
        vec_bits = gcd(common * self.elem_bits, max_bits)
        return max(1, vec_bits // self.elem_bits) if vec_bits % 8 == 0 else 1

    def _common_vector(self, sides: dict[str, Any], lp: dict[str, LocalPartition]) -> int:
        """``max_common_vector`` of the two sides' thread-0 fragments: the largest k dividing
        the value count such that each aligned run of k values is contiguous on both sides."""
        nv = lp["src"].coord.shape[1]
        offs = []
        for w, (s, tensor) in sides.items():
            if s.registers is not None or tensor is None:
                offs.append(np.arange(nv))
                continue
            c = lp[w].coord[0]
            offs.append(np.asarray(tensor.layout(tuple(c[:, k] for k in range(c.shape[1])))).reshape(-1))
        best = 1
        k = 2
        while k <= nv:
            if nv % k == 0 and all(_runs_contiguous(o, k) for o in offs):
                best = k
            k *= 2
        return best

    # ------------------------------------------------------------------ per block chunk
    def block_chunks(self, chunk: int) -> Iterator[np.ndarray]:
        for start in range(0, self.num_blocks, chunk):
            yield np.arange(start, min(start + chunk, self.num_blocks), dtype=np.int64)

    def tables(self, plan: dict[str, Any], blocks: np.ndarray) -> dict[str, AccessTable]:
        """Access tables of both sides of one planned stage for the given blocks."""
        out = {}
        for which in ("src", "dst"):
            side, tensor = plan["sides"][which]
            out[which] = self._side_table(plan, which, side, tensor, blocks)
        if plan["copy"].predicate != "none":
            # the predicate guards the element on both sides: in bounds on every memory side
            ok = np.ones(len(out["src"]), dtype=bool)
            for which in ("src", "dst"):
                if out[which].memory != "register":
                    ok &= out[which].pred
            for which in ("src", "dst"):
                out[which].pred = ok
        return out

    def _side_table(self, plan: dict[str, Any], which: str, side: Side, tensor: ResolvedTensor | None,
                    blocks: np.ndarray) -> AccessTable:
        lp: LocalPartition = plan["local"][which]
        T, V = lp.step.shape
        nb = blocks.shape[0]
        n = nb * T * V
        blk = np.repeat(blocks, T * V)
        thread = np.tile(np.repeat(np.arange(T, dtype=np.int32), V), nb)
        step = np.tile(lp.step.reshape(-1), nb).astype(np.int32)
        lane = np.tile(lp.lane.reshape(-1), nb).astype(np.int16)
        value = np.tile(np.tile(np.arange(V, dtype=np.int32), T), nb)
        if side.registers is not None:
            coord = np.tile(lp.coord.reshape(-1, 2), (nb, 1))
            offset = coord[:, 1].astype(np.int64)
            return AccessTable(plan["index"], which, side.registers, "register", self.elem_bits // 8 or 1,
                               plan["vec"], (T, V), blk, thread, step, lane, value, coord,
                               np.ones(n, dtype=bool), offset, offset * max(1, self.elem_bits // 8),
                               buffer=side.registers)
        assert tensor is not None
        R = lp.coord.shape[-1]
        local = np.tile(lp.coord.reshape(-1, R), (nb, 1)).astype(np.int64)
        origin = self._origins(side, tensor, blocks)  # (nb, R)
        coord = local + np.repeat(origin, T * V, axis=0)
        inb = np.ones(n, dtype=bool)
        for k, ext in enumerate(tensor.shape[:R]):
            inb &= (coord[:, k] >= 0) & (coord[:, k] < ext)
        pred_kind = plan["copy"].predicate
        if pred_kind == "vector":
            key = ((blk * T + thread) * (int(step.max()) + 1) + step)
            _, inv = np.unique(key, return_inverse=True)
            allin = np.ones(inv.max() + 1 if n else 0, dtype=bool)
            np.logical_and.at(allin, inv, inb)
            pred = allin[inv]
        elif pred_kind == "bounds":
            pred = inb
        else:
            pred = np.ones(n, dtype=bool)
        offset = np.asarray(tensor.layout(tuple(coord[:, k] for k in range(R))), dtype=np.int64).reshape(-1)
        if tensor.spec.offset:
            offset = offset + tensor.spec.offset
        addr = tensor.base + offset * tensor.elem_bytes
        meta: dict[str, Any] = {"tile": self._tile_shape(side, tensor)}
        if side.tile is not None:
            meta["tile_origin"] = lambda b, side=side, tensor=tensor: self._origins(side, tensor, b)
        return AccessTable(plan["index"], which, tensor.name, tensor.spec.memory, tensor.elem_bytes,
                           plan["vec"], tensor.shape, blk, thread, step, lane, value, coord, pred,
                           offset, addr, buffer=tensor.buffer, meta=meta)

    def _origins(self, side: Side, tensor: ResolvedTensor, blocks: np.ndarray) -> np.ndarray:
        R = len(side.tile) if side.tile is not None else len(tensor.shape)
        if side.tile is None:
            return np.zeros((blocks.shape[0], R), dtype=np.int64)
        gx, gy, _gz = self.grid
        bcoord = {"bx": blocks % gx, "by": (blocks // gx) % gy, "bz": blocks // (gx * gy)}
        tile = self._tile_shape(side, tensor)
        cols = []
        assert side.at is not None
        for a, t in zip(side.at, tile, strict=True):
            if isinstance(a, str) and a.strip() in bcoord:
                cols.append(bcoord[a.strip()] * t)
            else:
                cols.append(np.full(blocks.shape[0], eval_expr(a, self.env) * t, dtype=np.int64))
        return np.stack(cols, axis=1)


def _runs_contiguous(o: np.ndarray, k: int) -> bool:
    runs = o.reshape(-1, k)
    return bool(np.all(np.diff(runs, axis=1) == 1))


def _all_threads(part: Any, T: int, rank: int) -> np.ndarray:
    """(T, V, rank) tile coordinates of every thread's partition of an identity tensor.

    The partition's layout is the same for every thread; only its offset depends on the
    thread, so one evaluation with a numpy array of thread ids gives all offsets at once.
    Falls back to one evaluation per thread where a partition needs an integer thread id.
    """
    try:
        p = part(np.arange(T))
        n = L.size(p.layout)
        vals = ArithTuple.of(L.Tensor(p.layout, ArithTuple({}))(np.arange(n)) if n > 1 else
                             L.Tensor(p.layout, ArithTuple({}))(0))
        off = ArithTuple.of(p.offset)
        out = np.empty((T, n, rank), dtype=np.int64)
        for k in range(rank):
            o = np.broadcast_to(np.asarray(off.get((k,)), dtype=np.int64), (T,))
            v = np.broadcast_to(np.asarray(vals.get((k,)), dtype=np.int64), (n,))
            out[:, :, k] = o[:, None] + v[None, :]
        return out
    except (TypeError, ValueError):
        return np.stack([_coords_of(part(t), rank) for t in range(T)])


def _coords_of(t: L.Tensor, rank: int) -> np.ndarray:
    """The tile coordinates of every element of an identity-tensor partition, colex order."""
    n = L.size(t.layout)
    val = t(np.arange(n)) if n > 1 else t(0)
    at = ArithTuple.of(val)
    cols = []
    for k in range(rank):
        comp = at.get((k,))
        cols.append(np.broadcast_to(np.asarray(comp, dtype=np.int64), (n,)))
    return np.stack(cols, axis=1)


def representative_blocks(sim: Simulation, cap: int = 4096) -> tuple[np.ndarray, bool]:
    """The blocks the enumerative checks visit: every block when there are at most ``cap``;
    otherwise the first two blocks along each grid axis (interior representatives) and
    every block on the last row/column/slab of the grid (where ragged edges are).

    Returns ``(block ids, exhaustive)``.  Sampling is sound for what the checks conclude
    *per block* because the tile-local partition is the same in every block and tile
    origins are ``at * tile``: interior blocks differ only by a translation of the tile.
    """
    if sim.num_blocks <= cap:
        return np.arange(sim.num_blocks, dtype=np.int64), True
    gx, gy, gz = sim.grid
    picks: set[tuple[int, int, int]] = set()
    xs = sorted({0, 1, gx - 1} & set(range(gx)))
    ys = sorted({0, 1, gy - 1} & set(range(gy)))
    zs = sorted({0, 1, gz - 1} & set(range(gz)))
    for x in xs:
        for y in ys:
            for z in zs:
                picks.add((x, y, z))
    ids = {x + y * gx + z * gx * gy for x, y, z in picks}
    # the whole last column and row of blocks: every ragged-edge tile
    for y in range(gy):
        for z in zs:
            ids.add(gx - 1 + y * gx + z * gx * gy)
    for x in range(gx):
        for z in zs:
            ids.add(x + (gy - 1) * gx + z * gx * gy)
    return np.array(sorted(ids), dtype=np.int64), False
