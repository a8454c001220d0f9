"""spec -> model: a loaded spec bound to one size environment.

:func:`build_model` evaluates the spec's expression trees and layout templates under one
size environment and builds the real objects (layouts, tiled copies, tiled MMAs, CUTLASS
thread maps) and each side's tile-local partition.  Everything the C++ compiler would reject
(a thread map's static_assert, an unknown copy atom, a value-count mismatch between the two
sides of a copy) is a :class:`~threadmap.errors.SpecError` located at the offending field
(``FILE:LINE:COL: field.path: message``).  Before anything is allocated, the model bounds
every tile coordinate and byte address with interval arithmetic and refuses specs whose
addresses would leave the signed 64-bit range.  A side's tile-local partition is a function of
its evaluated template arguments (tile, thread and value layouts, atom, thread map): it is
built once per process for each (:func:`threadmap.model.partition.memoized`), so models of one spec at many
sizes (``threadmap prove``'s size classes) share it.

The model is what the simulator, the checks and (later) the prover and the GPU code read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from math import gcd
from typing import Any, Literal

import numpy as np

import threadmap.layout as L
from threadmap.cutlass import THREAD_MAPS
from threadmap.errors import SpecError, ThreadmapError
from threadmap.hardware import MAX_SHARED_BYTES
from threadmap.model.partition import (
    MAX_PARTITION,
    LocalPartition,
    common_vector,
    data_routing,
    memoized,
    mma_partition,
    thread_layout_partition,
    thread_map_partition,
    tiled_copy_partition,
)
from threadmap.model.pipeline import PipelineModel, bind_pipeline
from threadmap.spec.expr import BLOCK_NAMES, Affine, Expr, Interval, NotAffine
from threadmap.spec.load import LoadedSpec
from threadmap.spec.schema import ELEMENT_BITS, Copy, Side

Memory = Literal["global", "shared", "register"]
Which = Literal["src", "dst"]

#: every byte address the simulator computes stays below this (int64 arithmetic, with room)
MAX_ADDRESS = 2**62
#: elements of one side's tile-local partition (threads x values)


@dataclass(frozen=True)
class TensorModel:
    """A tensor bound to sizes: its layout (logical coordinate -> element offset), logical
    extents, element width, the shared buffer it views, and where its bytes start."""

    name: str
    memory: Literal["global", "shared"]
    layout: Any                  # Layout or ComposedLayout
    shape: tuple[int, ...]       # extents of the top-level modes (bounds for predicates)
    elem_bits: int
    buffer: str                  # the buffer (aliases share their root's)
    base: int                    # byte address of element offset 0
    offset: int                  # element offset of this view inside its buffer
    align: int
    size_names: dict[int, str]   # top-level mode -> size name, where the extent is one name
    path: tuple[Any, ...]

    @property
    def elem_bytes(self) -> int:
        """Bytes one element touches (1 for a sub-byte element: the byte that holds it)."""
        return max(1, self.elem_bits // 8)

    def nbytes(self, elements: int) -> int:
        """Bytes that ``elements`` consecutive elements from offset 0 take (rounded up)."""
        return -(-elements * self.elem_bits // 8)

    def offsets(self, coords: Sequence[Any]) -> Any:
        """Element offsets of top-level coordinates (one per mode: ints, arrays or intervals).
        A rank-1 layout (``N:1``) takes its one coordinate as such, as CuTe's ``layout(i)``."""
        return self.layout(tuple(coords) if len(coords) != 1 else coords[0])

    @property
    def strides(self) -> tuple[int, ...] | None:
        """Integer strides when the layout is affine in the top-level coordinates (a plain
        layout whose top-level modes are integers): ``offset = sum c_k * d_k``."""
        lay = self.layout
        if not isinstance(lay, L.Layout):
            return None
        shp, std = lay.shape, lay.stride
        shp = shp if isinstance(shp, tuple) else (shp,)
        std = std if isinstance(std, tuple) else (std,)
        if all(isinstance(s, int) for s in shp) and all(type(d) is int for d in std):
            return tuple(std)
        return None


@dataclass(frozen=True)
class SideModel:
    """One side of a copy stage bound to sizes."""

    stage: int
    which: Which
    path: tuple[Any, ...]
    memory: Memory
    name: str                     # tensor or register-fragment name
    tensor: TensorModel | None
    partition: LocalPartition
    tile: tuple[int, ...]         # CTA tile extents (the whole tensor when no tile)
    at: tuple[Expr, ...] | None   # tile coordinate expressions (None: origin 0)
    at_affine: tuple[Affine, ...] | None  # the same, as affine forms in bx, by, bz (None: not affine)
    elem_bits: int
    instruction: str              # what one instruction is (atom, vector width) for reports
    #: the sized copy operation one access is, by CuTe's name (the side's tiled_copy atom or
    #: the stage's ``atom``), e.g. ``SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>``; None: not named
    copy_op: str | None = None

    @property
    def elem_bytes(self) -> int:
        """Bytes one element touches (1 for a sub-byte element: the byte that holds it)."""
        return max(1, self.elem_bits // 8)

    @property
    def cp_async(self) -> bool:
        """Whether the side's instruction is SM80 ``cp.async`` (``LDGSTS``)."""
        return self.copy_op is not None and self.copy_op.startswith(CP_ASYNC_PREFIX)

    @property
    def cp_async_zfill(self) -> bool:
        """Whether the side's instruction is the zero-filling ``SM80_CP_ASYNC_*_ZFILL`` form (a
        lane whose predicate is false writes zeros)."""
        return self.cp_async and self.copy_op is not None and self.copy_op.split("<", 1)[0].endswith("_ZFILL")

    @property
    def vec(self) -> int:
        return self.partition.vec

    @property
    def access_bits(self) -> int:
        return self.vec * self.elem_bits

    @property
    def shape(self) -> tuple[int, ...]:
        """Bounds of the accessed coordinates: the tensor's extents (registers: (T, V))."""
        if self.tensor is not None:
            return self.tensor.shape
        return (self.partition.threads, self.partition.values)


@dataclass(frozen=True)
class CopyModel:
    index: int
    name: str | None
    src: SideModel
    dst: SideModel
    predicate: Literal["none", "bounds", "vector"]

    def sides(self) -> tuple[SideModel, SideModel]:
        return (self.src, self.dst)

    @property
    def cp_async(self) -> bool:
        """Whether the copy is one ``cp.async`` per access (``LDGSTS``: global to shared, both
        sides one instruction): a side names an ``SM80_CP_ASYNC_*`` operation, the source is a
        global tensor and the destination a shared one."""
        return (any(s.cp_async for s in self.sides()) and self.src.memory == "global"
                and self.dst.memory == "shared")


StageModel = CopyModel | Literal["barrier"]


@dataclass(frozen=True)
class Expectation:
    """The spec's ``expect`` block, normalised for the checks."""

    verdict: Literal["pass", "fail"]
    transform: Literal["copy", "transpose"] | None
    replication: bool
    bank_conflicts: int | None
    sector_ratio_load: float | None
    sector_ratio_store: float | None
    vector_bits: int | None
    failing_checks: tuple[str, ...]


@dataclass(frozen=True)
class KernelModel:
    """A spec bound to one size environment: threads, grid, tensors and stages."""

    loaded: LoadedSpec
    env: dict[str, int]
    threads: int
    grid: tuple[int, int, int]
    tensors: dict[str, TensorModel]
    stages: tuple[StageModel, ...]
    expect: Expectation
    input: str | None
    output: str | None
    coord_bounds: dict[tuple[int, str], tuple[tuple[int, int], ...]] = field(default_factory=dict)
    #: the asynchronous pipeline, if the spec has one
    pipeline: PipelineModel | None = None

    @property
    def name(self) -> str:
        return self.loaded.spec.name

    @property
    def num_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def warps(self) -> int:
        return -(-self.threads // 32)

    def copies(self) -> list[CopyModel]:
        return [s for s in self.stages if isinstance(s, CopyModel)]

    def sides(self) -> list[SideModel]:
        return [sd for c in self.copies() for sd in c.sides()]

    def block_coords(self, blocks: np.ndarray) -> dict[str, np.ndarray]:
        """``bx, by, bz`` of linear block ids (``bx`` fastest, as blockIdx linearises)."""
        gx, gy, _ = self.grid
        return {"bx": blocks % gx, "by": (blocks // gx) % gy, "bz": blocks // (gx * gy)}

    def origins(self, side: SideModel, blocks: np.ndarray) -> np.ndarray:
        """(nb, R) tile origins ``at * tile`` of ``blocks`` (zeros for sides without a tile)."""
        R = len(side.tile)
        out = np.zeros((blocks.shape[0], R), dtype=np.int64)
        if side.at is None:
            return out
        env: dict[str, Any] = {**self.env, **self.block_coords(blocks)}
        for k, (e, t) in enumerate(zip(side.at, side.tile, strict=True)):
            out[:, k] = np.asarray(e.apply(env), dtype=np.int64) * t
        return out

    def where(self, path: Sequence[Any]) -> str:
        return self.loaded.where(*path)

    def stage_line(self, index: int) -> int | None:
        try:
            return int(self.loaded.where("stages", index).rsplit(":", 2)[1])
        except (ValueError, IndexError, KeyError, TypeError):
            return None


# ----------------------------------------------------------------------------- building


class _Builder:
    def __init__(self, loaded: LoadedSpec, env: Mapping[str, int]) -> None:
        self.loaded = loaded
        self.spec = loaded.spec
        self.parsed = loaded.parsed
        self.env = dict(env)
        self.note = "".join(f" with {k}={v}" for k, v in self.env.items()
                            if not isinstance(self.spec.sizes.get(k), int))

    def fail(self, path: Sequence[Any], msg: str) -> SpecError:
        return self.loaded.error(tuple(path), msg + (f" ({self.note.strip()})" if self.note else ""))

    def ev(self, e: Expr, path: Sequence[Any], env: Mapping[str, int] | None = None) -> int:
        try:
            return e.eval(self.env if env is None else env)
        except SpecError as ex:
            raise self.fail(path, str(ex)) from None

    def layout(self, tmpl: Any, path: Sequence[Any]) -> Any:
        try:
            return tmpl.bind(self.env)
        except (ThreadmapError, ValueError, ArithmeticError, RecursionError) as ex:
            raise self.fail(path, str(ex)) from None

    def plain_layout(self, tmpl: Any, path: Sequence[Any], what: str) -> L.Layout:
        """A thread, value or atom layout: CuTe takes a plain ``Layout`` with integer strides."""
        lay = self.layout(tmpl, path)
        if not isinstance(lay, L.Layout):
            raise self.fail(path, f"a {what} layout is a plain layout (CuTe takes Layout<Shape, Stride>), "
                                  f"not {lay}")
        if any(not isinstance(d, int) for d in _leaves(lay.stride)):
            raise self.fail(path, f"a {what} layout needs integer strides, got {lay}")
        return lay

    # -- top level -------------------------------------------------------------------------
    def build(self) -> KernelModel:
        threads = self.ev(self.parsed.threads, ("threads",))
        grid = [self.ev(g, ("grid", i)) for i, g in enumerate(self.parsed.grid)]
        grid += [1] * (3 - len(grid))
        tensors = {n: self.tensor(n) for n in self.spec.tensors}
        stages: list[StageModel] = []
        fragments: dict[str, int] = {}
        for i, st in enumerate(self.spec.stages):
            if not isinstance(st, Copy):
                stages.append("barrier")
                continue
            stages.append(self.copy(i, st, threads, tensors, fragments))
        exp = self.spec.expect
        spr = exp.sectors_per_request
        load = spr if isinstance(spr, (int, float)) else (spr.load if spr is not None else None)
        store = spr if isinstance(spr, (int, float)) else (spr.store if spr is not None else None)
        expect = Expectation(exp.verdict, None if exp.transform == "none" else exp.transform,
                             exp.coverage == "replicated", exp.bank_conflicts, load, store,
                             exp.vector_bits, tuple(exp.failing_checks))
        copies = [s for s in stages if isinstance(s, CopyModel)]
        inp = next((c.src.name for c in copies if c.src.memory == "global"), None)
        out = next((c.dst.name for c in reversed(copies) if c.dst.memory == "global"), None)
        grid3 = (grid[0], grid[1], grid[2])
        bounds, tensors, stages = self.bound_addresses(grid3, tensors, stages)
        pipe = None
        if self.spec.pipeline is not None:
            elements = {n: t.element or self.spec.element for n, t in self.spec.tensors.items()}
            by_address = frozenset(n for n, t in self.spec.tensors.items() if t.swizzled_by == "address")
            pipe = bind_pipeline(self.spec.pipeline, self.env, tensors, elements, threads, self.fail, by_address)
        model = KernelModel(self.loaded, self.env, threads, grid3, tensors, tuple(stages), expect, inp, out,
                            bounds, pipe)
        return model

    def tensor(self, name: str) -> TensorModel:
        t = self.spec.tensors[name]
        path = ("tensors", name, "layout")
        tmpl = self.parsed.tensors[name]
        lay = self.layout(tmpl, path)
        bits = ELEMENT_BITS[t.element or self.spec.element]
        if isinstance(lay, L.ComposedLayout) and isinstance(lay.offset, L.SmemPtrFlag):
            # a GMMA atom's Sw o smem_ptr[Nb] o L: its swizzle acts on byte addresses; as the
            # tensor's element-offset function it is the swizzle recast to elements
            if lay.offset.bits != bits:
                raise self.fail(path, f"the layout is of {lay.offset.bits}-bit elements, the tensor's are {bits}-bit")
            lay = lay.as_position_independent_swizzle_layout()
        inner = lay.layout_b if isinstance(lay, L.ComposedLayout) else lay
        if any(not isinstance(d, int) for d in _leaves(getattr(inner, "stride", 0))):
            raise self.fail(path, "a tensor layout needs integer strides (basis strides such as 1@0 "
                                  "make coordinate tensors, not memory)")
        shape = tuple(int(x) for x in L.product_each(L.shape(lay)))
        root, seen = name, {name}
        while self.spec.tensors[root].alias:
            root = self.spec.tensors[root].alias  # type: ignore[assignment]
            if root in seen:
                raise self.fail(("tensors", name, "alias"), f"alias cycle through {root!r}")
            seen.add(root)
        base = t.align if t.memory == "global" else 0
        return TensorModel(name, t.memory, lay, shape, bits, root, base, t.offset, t.align,
                           dict(tmpl.mode_names), path)

    # -- stages ------------------------------------------------------------------------------
    def copy(self, i: int, st: Copy, threads: int, tensors: dict[str, TensorModel],
             fragments: dict[str, int]) -> CopyModel:
        cp = st.copy_
        base = ("stages", i, "copy")
        parts: dict[str, LocalPartition | None] = {}
        for which in ("src", "dst"):
            side: Side = getattr(cp, which)
            parts[which] = None if side.registers is not None and not self._has_partition(side) \
                else self.partition(i, which, side, threads, tensors)
        memory_parts = {w: p for w, p in parts.items() if p is not None}
        if not memory_parts:
            raise self.fail(base, "a copy needs at least one side in memory (a tensor)")
        nvals = {w: p.values for w, p in memory_parts.items()}
        if len(set(nvals.values())) > 1:
            raise self.fail((*base, "dst"), f"source and destination give each thread a different "
                                            f"number of values ({nvals['src']} vs {nvals['dst']}): element "
                                            "i of a thread's src fragment is copied to element i of its dst")
        nv = next(iter(nvals.values()))
        vecs = self.vectors(i, cp, memory_parts, tensors)
        stage_op = self.stage_op(base, cp)
        sides: dict[str, SideModel] = {}
        for which in ("src", "dst"):
            side = getattr(cp, which)
            path = (*base, which)
            w: Which = "src" if which == "src" else "dst"
            part = parts[which]
            if side.registers is not None:
                name = side.registers
                if which == "src":
                    have = fragments.get(name)
                    if have is None:
                        raise self.fail((*path, "registers"), f"register fragment {name!r} is read before "
                                                              "any stage writes it")
                    if have != nv:
                        raise self.fail((*path, "registers"), f"register fragment {name!r} holds {have} "
                                                              f"values per thread, this copy moves {nv}")
                else:
                    fragments[name] = nv
                other = vecs["dst" if which == "src" else "src"]
                mem = memory_parts["dst" if which == "src" else "src"]
                reg = data_routing(mem, nv, other)
                sides[which] = SideModel(i, w, path, "register", name, None, reg, (threads, nv), None,
                                         None, self._elem_bits(memory_parts, cp, tensors), "registers")
                continue
            assert part is not None and side.tensor is not None
            t = tensors[side.tensor]
            bits = vecs[which] * t.elem_bits
            if bits % 8:
                raise self.fail(path, f"the {which} side accesses {vecs[which]} x {t.elem_bits}-bit {t.name} "
                                      f"({bits} bits) per instruction: memory is accessed in whole bytes")
            op = stage_op.name if stage_op is not None and side.tiled_copy is None else \
                self.sized_op(side)
            if stage_op is not None and side.tiled_copy is None:
                self.check_stage_atom(base, cp.atom, stage_op, which, bits, t)
            sides[which] = SideModel(i, w, path, t.memory, t.name, t, part.with_vec(vecs[which]),
                                     self.tile(i, which, side, t), self.parsed.sides[(i, which)].at,
                                     self.affine_at(i, which), t.elem_bits,
                                     self.describe(side, bits, cp.atom), op)
        if stage_op is not None and stage_op.name.startswith(CP_ASYNC_PREFIX) and \
                (sides["src"].memory, sides["dst"].memory) != ("global", "shared"):
            raise self.fail((*base, "atom"), f"{stage_op.name} copies global memory to shared memory; this "
                                             f"copy goes from {sides['src'].memory} to {sides['dst'].memory}")
        self.check_cp_async_sides(base, cp, sides)
        return CopyModel(i, cp.name, sides["src"], sides["dst"], cp.predicate)

    def check_cp_async_sides(self, base: tuple[Any, ...], cp: Any, sides: Mapping[str, SideModel]) -> None:
        """A cp.async named by a side's tiled_copy: one instruction moves both sides, so the copy
        goes from global to shared memory and the other side names no other operation."""
        ops = {w: sd.copy_op for w, sd in sides.items() if sd.copy_op is not None and getattr(cp, w).tiled_copy}
        named = [w for w, o in ops.items() if o.startswith(CP_ASYNC_PREFIX)]
        if not named:
            return
        path = (*base, named[0], "tiled_copy", "atom")
        if (sides["src"].memory, sides["dst"].memory) != ("global", "shared"):
            raise self.fail(path, f"{ops[named[0]]} copies global memory to shared memory; this copy goes from "
                                  f"{sides['src'].memory} to {sides['dst'].memory}")
        if len(set(ops.values())) > 1:
            raise self.fail((*base, "dst", "tiled_copy", "atom"),
                            f"the sides name different copy operations ({ops['src']} and {ops['dst']}); one "
                            "cp.async instruction moves both: name one")

    def stage_op(self, base: tuple[Any, ...], cp: Any) -> L.CopyOp | None:
        """The stage's ``atom`` (None when not given), located when unknown, not a one-thread
        sized copy, or beside a tiled_copy that names another operation."""
        if cp.atom is None:
            return None
        path = (*base, "atom")
        op = self.named_atom(L.get_copy_op, cp.atom, path, "copy")
        if _auto(op.name):
            raise self.fail(path, f"{cp.atom} picks its width from the layouts and names no instruction; give a "
                                  "sized copy operation (UniversalCopy<T>, SM80_CP_ASYNC_CACHEGLOBAL<T>, ...) "
                                  "or vector_bits")
        if L.size(op.thr_id) != 1 or op.src_reg_bits != op.dst_reg_bits:
            raise self.fail(path, f"{op.name} is a warp-wide copy whose sides move different values per thread; "
                                  "give it as a tiled_copy atom (layout_tv and tiler)")
        for which in ("src", "dst"):
            tc = getattr(cp, which).tiled_copy
            if tc is not None:
                other = self.named_atom(L.get_copy_op, tc.atom, (*base, which, "tiled_copy", "atom"), "copy")
                if other.name != op.name:
                    raise self.fail(path, f"the {which} side's tiled_copy names its own copy operation "
                                          f"({other.name}); a stage's atom is for sides without one")
        return op

    def check_stage_atom(self, base: tuple[Any, ...], name: str | None, op: L.CopyOp, which: str, bits: int,
                         t: TensorModel) -> None:
        """A stage atom's width is the width of every access of the side it names."""
        if op.src_reg_bits != bits:
            raise self.fail((*base, "atom"), f"{name} moves {op.src_reg_bits} bits per instruction, but the "
                                             f"{which} side accesses {bits} bits ({bits // t.elem_bits} x "
                                             f"{t.elem_bits}-bit {t.name}) per instruction")

    def sized_op(self, side: Side) -> str | None:
        """The C++ name of a side's sized tiled_copy operation (None: auto-vectorizing or none)."""
        if side.tiled_copy is None or _auto(side.tiled_copy.atom):
            return None
        try:
            return str(L.get_copy_op(side.tiled_copy.atom).name)
        except (ThreadmapError, ValueError, ArithmeticError):
            return None

    @staticmethod
    def _has_partition(side: Side) -> bool:
        return any(getattr(side, p) is not None for p in ("threads", "tiled_copy", "thread_map", "mma"))

    def _elem_bits(self, parts: Mapping[str, Any], cp: Any, tensors: dict[str, TensorModel]) -> int:
        for which in parts:
            name = getattr(cp, which).tensor
            if name is not None:
                return tensors[name].elem_bits
        return ELEMENT_BITS[self.spec.element]

    @staticmethod
    def describe(side: Side, bits: int, atom: str | None = None) -> str:
        if side.tiled_copy is not None:
            return f"{side.tiled_copy.atom}, {bits}-bit"
        if atom is not None:
            how = side.thread_map.name if side.thread_map is not None else \
                f"{side.mma.atom} operand {side.mma.operand}" if side.mma is not None else "threads"
            return f"{atom} ({how}), {bits}-bit"
        if side.thread_map is not None:
            return f"{side.thread_map.name}, {bits}-bit"
        if side.mma is not None:
            return f"{side.mma.atom} operand {side.mma.operand}, {bits}-bit"
        return f"{bits}-bit"

    def tile(self, i: int, which: str, side: Side, t: TensorModel) -> tuple[int, ...]:
        ps = self.parsed.sides[(i, which)]
        if ps.tile is None:
            return t.shape
        return tuple(self.ev(e, ("stages", i, "copy", which, "tile", j)) for j, e in enumerate(ps.tile))

    def affine_at(self, i: int, which: str) -> tuple[Affine, ...] | None:
        ps = self.parsed.sides[(i, which)]
        if ps.at is None:
            return None
        try:
            return tuple(Affine.of(e, BLOCK_NAMES, self.env) for e in ps.at)
        except (NotAffine, ZeroDivisionError):
            return None

    def partition(self, i: int, which: str, side: Side, threads: int,
                  tensors: dict[str, TensorModel]) -> LocalPartition:
        path = ("stages", i, "copy", which)
        ps = self.parsed.sides[(i, which)]
        if side.tensor is None:
            raise self.fail(path, "a register side has no partition: it is the other side's (thread, value) "
                                  "space; give the partition on the tensor side")
        t = tensors[side.tensor]
        tile = self.tile(i, which, side, t)
        est = threads * max(1, int(np.prod(tile, dtype=object)) // max(1, threads))
        if est > MAX_PARTITION:
            raise self.fail((*path, "tile"), f"the tile has {int(np.prod(tile, dtype=object))} elements; "
                                             f"threadmap simulates at most {MAX_PARTITION} per tile")
        # each kind's partition is memoized under everything it reads (see partition.memoized)
        try:
            if side.threads is not None:
                thr = self.plain_layout(ps.layouts["threads"], (*path, "threads"), "thread")
                if L.size(thr) != threads:
                    raise self.fail((*path, "threads"), f"thread layout has {L.size(thr)} threads, but "
                                                        f"threads = {threads}")
                part = memoized(("threads", thr, tile, threads), lambda: thread_layout_partition(tile, thr, threads))
            elif side.tiled_copy is not None:
                tcs = side.tiled_copy
                tp = (*path, "tiled_copy")
                op = self.named_atom(L.get_copy_op, tcs.atom, (*tp, "atom"), "copy")

                def tiled(tc: Any, maker: tuple[Any, ...], thr_path: tuple[Any, ...]) -> LocalPartition:
                    if tc.tiled_num_thr != threads:
                        raise self.fail(thr_path, f"tiled copy has {tc.tiled_num_thr} "
                                                  f"threads, but threads = {threads}")
                    return replace(tiled_copy_partition(tile, tc, which, threads), maker=maker)

                if tcs.layout_tv is not None:
                    # the TiledCopy as C++ holds it: TiledCopy<Copy_Atom, TiledLayout_TV, Tiler_MN>
                    tv = self.plain_layout(ps.layouts["tiled_copy.layout_tv"], (*tp, "layout_tv"), "TV")

                    def from_tv() -> LocalPartition:
                        try:
                            tiler = L.parse_tiler(tcs.tiler or "")
                            tc = L.make_tiled_copy_impl((op, t.elem_bits), tv, tiler)
                        except (ThreadmapError, ValueError) as ex:
                            raise self.fail((*tp, "tiler"), str(ex)) from None
                        return tiled(tc, ("tiled_copy_tv", tc.atom.cxx_type, tv, tiler, which), (*tp, "layout_tv"))

                    part = memoized(("tiled_copy_tv", tcs.atom, t.elem_bits, tv, tcs.tiler, tile, which, threads),
                                    from_tv)
                else:
                    thr = self.plain_layout(ps.layouts["tiled_copy.threads"], (*tp, "threads"), "thread")
                    val = self.plain_layout(ps.layouts["tiled_copy.values"], (*tp, "values"), "value")

                    def from_thr_val() -> LocalPartition:
                        tc = L.make_tiled_copy((op, t.elem_bits), thr, val)
                        return tiled(tc, ("tiled_copy", tc.atom.cxx_type, thr, val, which), (*tp, "threads"))

                    part = memoized(("tiled_copy", tcs.atom, t.elem_bits, thr, val, tile, which, threads),
                                    from_thr_val)
            elif side.thread_map is not None:
                tm_spec = side.thread_map
                part = memoized(("thread_map", tm_spec.model_dump_json(), tile, threads),
                                lambda: self.thread_map(path, side, tile, threads))
            elif side.mma is not None:
                m = side.mma
                atom = self.named_atom(L.get_mma_atom, m.atom, (*path, "mma", "atom"), "MMA")
                atom_layout = self.plain_layout(ps.layouts["mma.atom_layout"], (*path, "mma", "atom_layout"), "atom")

                perm = self.mma_permutation(m.permutation, (*path, "mma", "permutation"))

                def from_mma() -> LocalPartition:
                    mma = L.make_tiled_mma(atom, atom_layout, perm)
                    if mma.size() != threads:
                        raise self.fail((*path, "mma", "atom_layout"), f"tiled MMA has {mma.size()} threads, "
                                                                       f"but threads = {threads}")
                    return replace(mma_partition(tile, mma, m.operand, threads),
                                   maker=("mma", atom.cxx_type, atom_layout, m.operand, mma.permutation))

                part = memoized(("mma", m.atom, atom_layout, m.operand, tuple(m.permutation or ()), tile, threads),
                                from_mma)
            else:
                raise self.fail(path, "a tensor side needs a partition: threads, tiled_copy, thread_map "
                                      "or mma")
        except SpecError:
            raise
        except (ThreadmapError, ValueError, ArithmeticError, IndexError, TypeError, RecursionError) as ex:
            raise self.fail(path, f"cannot partition the tile {tile}: {ex}") from None
        if part.rank != len(tile):
            raise self.fail(path, f"the partition gives rank-{part.rank} coordinates for a "
                                  f"rank-{len(tile)} tile")
        return part

    def mma_permutation(self, items: Sequence[str] | None, path: Sequence[Any]) -> tuple[Any, ...] | None:
        """``PermutationMNK``: each item ``_``, an extent or a layout (CuTe notation)."""
        if items is None:
            return None
        out: list[Any] = []
        for i, text in enumerate(items):
            if text.strip() == "_":
                out.append(L._)
                continue
            try:
                out.append(L.parse_tiler(text))
            except (ThreadmapError, ValueError) as ex:
                raise self.fail((*path, i), f"a permutation mode is '_', an extent or a layout: {ex}") from None
        return tuple(out)

    def named_atom(self, get: Any, name: str, path: Sequence[Any], what: str) -> Any:
        """A copy or MMA atom by its C++ name, every problem with the name located at ``path``.
        C++ names and template arguments are ASCII: a look-alike digit (``²``, ``３``) is
        refused here, before any lookup parses it."""
        odd = next((ch for ch in name if not ch.isascii()), None)
        if odd is not None:
            raise self.fail(path, f"{what} atom {name!r} has the non-ASCII character {odd!r} at column "
                                  f"{name.index(odd) + 1}; C++ names and template arguments are ASCII "
                                  "(digits 0-9)")
        try:
            return get(name)
        except (ThreadmapError, ValueError, ArithmeticError) as ex:
            raise self.fail(path, str(ex)) from None

    def thread_map(self, path: Sequence[Any], side: Side, tile: tuple[int, ...],
                   threads: int) -> LocalPartition:
        tm_spec = side.thread_map
        assert tm_spec is not None
        p = (*path, "thread_map")
        cls = THREAD_MAPS.get(tm_spec.name)
        if cls is None:
            raise self.fail((*p, "name"), f"unknown thread map {tm_spec.name!r}; known: "
                                          f"{', '.join(THREAD_MAPS)}")
        if tm_spec.name.startswith("Transpose"):
            raise self.fail((*p, "name"), f"{tm_spec.name} wraps another thread map and cannot be given "
                                          "by name and parameters here")
        args: list[Any] = [tuple(tm_spec.shape), tm_spec.threads]
        if tm_spec.warp_thread_arrangement is not None:
            args.append(tuple(tm_spec.warp_thread_arrangement))
        args.append(tm_spec.elements_per_access)
        try:
            tm = cls(*args)
        except TypeError:
            what = "missing" if len(args) == 3 else "not used"
            raise self.fail(p, f"{tm_spec.name} takes other template parameters "
                               f"(warp_thread_arrangement {what})") from None
        except ThreadmapError as ex:
            raise self.fail(p, str(ex)) from None
        if tm.threads != threads:
            raise self.fail((*p, "threads"), f"thread map has {tm.threads} threads, but threads = {threads}")
        if len(tile) != 2:
            raise self.fail(p, "a CUTLASS pitch-linear thread map partitions a rank-2 tile")
        part = thread_map_partition(tm, tm_spec.contiguous_mode)
        apv = tm_spec.accesses_per_vector
        if apv != 1:
            # CUTLASS's kAccessesPerVector: each vector is copied as apv narrower accesses, in
            # order, so the values keep their order and only the instruction width changes
            if tm.has_access_shape_axis or part.vec % apv:
                raise self.fail((*p, "accesses_per_vector"), f"{apv} accesses do not split a vector of "
                                                             f"{part.vec} elements evenly")
            part = part.with_vec(part.vec // apv)
        return part

    def vectors(self, i: int, cp: Any, parts: Mapping[str, LocalPartition],
                tensors: dict[str, TensorModel]) -> dict[str, int]:
        """Elements one instruction moves on each side.

        Sized copy atoms (``UniversalCopy<uint32_t>``, cp.async, ldmatrix) move their
        ``NumValSrc``/``NumValDst`` values; CUTLASS thread maps ``ElementsPerAccess``;
        auto-vectorizing atoms the largest vector common to both sides (CuTe's
        ``max_common_vector`` and ``max_alignment`` on one thread's fragments) capped by the
        atom's assumed alignment.  Plain partitions (``threads``, ``mma``) follow CuTe's
        ``copy(src, dst)``: between two static layouts (shared memory, registers) it
        auto-vectorizes assuming 128-bit aligned pointers; a global tensor's layout is dynamic
        (its sizes are runtime values), where ``copy`` assumes 8-bit alignment, i.e. scalar
        accesses; ``vector_bits`` replaces that cap; a predicated copy (``copy_if(pred, src,
        dst)``) is element by element."""
        sides = {w: getattr(cp, w) for w in ("src", "dst")}
        fixed: dict[str, int] = {}
        caps: list[int] = []
        for w, p in parts.items():
            s = sides[w]
            if s.thread_map is not None or (s.tiled_copy is not None and not _auto(s.tiled_copy.atom)):
                fixed[w] = p.vec
            elif s.tiled_copy is not None:
                caps.append(_auto_bits(s.tiled_copy.atom))
        out = dict(fixed)
        rest = [w for w in parts if w not in fixed]
        if rest:
            if fixed:  # the sized side's instruction drives the copy
                vec = max(fixed.values())
            else:
                cap = min(caps) if caps else self.plain_cap(cp, sides, tensors)
                vec = 1 if cap is None else self.common_vector(parts, sides, tensors, cap)
            for w in rest:
                out[w] = vec
        for w in ("src", "dst"):
            if w not in out:
                out[w] = out["dst" if w == "src" else "src"]
        return out

    @staticmethod
    def plain_cap(cp: Any, sides: Mapping[str, Side], tensors: dict[str, TensorModel]) -> int | None:
        """The widest vector (bits) CuTe's plain ``copy``/``copy_if`` may use (None: scalar)."""
        if cp.vector_bits is not None:
            return int(cp.vector_bits)
        if cp.predicate != "none":
            return None
        dynamic = any(s.tensor is not None and tensors[s.tensor].memory == "global" for s in sides.values())
        return None if dynamic else 128

    @staticmethod
    def common_vector(parts: Mapping[str, LocalPartition], sides: Mapping[str, Side],
                      tensors: dict[str, TensorModel], cap_bits: int) -> int:
        """The widest vector both sides' thread-0 fragments allow, capped at ``cap_bits``."""
        nv = next(iter(parts.values())).values
        offs = []
        bits = min(tensors[sides[w].tensor].elem_bits for w in parts)  # type: ignore[index]
        for w in ("src", "dst"):
            s = sides[w]
            if s.tensor is None or w not in parts:
                offs.append(np.arange(nv))
                continue
            c = parts[w].coord[0]
            off = tensors[s.tensor].offsets([c[:, k] for k in range(c.shape[1])])
            offs.append(np.asarray(off, dtype=np.int64).reshape(-1))
        vbits = gcd(common_vector(offs) * bits, cap_bits)
        return max(1, vbits // bits) if vbits % 8 == 0 else 1

    # -- bounds ------------------------------------------------------------------------------
    def bound_addresses(self, grid: tuple[int, int, int], tensors: dict[str, TensorModel],
                        stages: list[StageModel]) -> tuple[dict[tuple[int, str], tuple[tuple[int, int], ...]],
                                                           dict[str, TensorModel], list[StageModel]]:
        """Interval bounds of every side's coordinates and element offsets over the whole grid
        (the layout evaluated on intervals), before anything is allocated.  A global tensor
        whose offsets go below 0 (negative strides) gets a base that keeps every address
        non-negative and still aligned; shared offsets must not go below 0; addresses must stay
        below 2^62 (the simulator computes in 64-bit integers)."""
        box = {n: Interval(0, g - 1) for n, g in zip(BLOCK_NAMES, grid, strict=True)}
        coord_bounds: dict[tuple[int, str], tuple[tuple[int, int], ...]] = {}
        lowest: dict[str, int] = {}
        highest: dict[str, tuple[int, SideModel]] = {}
        for st in stages:
            if not isinstance(st, CopyModel):
                continue
            for side in st.sides():
                if side.tensor is None:
                    continue
                c = side.partition.coord
                lo_loc = c.min(axis=(0, 1)) if c.size else np.zeros(len(side.tile), dtype=np.int64)
                hi_loc = c.max(axis=(0, 1)) if c.size else np.zeros(len(side.tile), dtype=np.int64)
                cb = []
                for k, t in enumerate(side.tile):
                    o = Interval(0, 0)
                    if side.at is not None:
                        try:
                            o = Interval.lift(side.at[k].apply({**self.env, **box})) * t
                        except ZeroDivisionError:
                            raise self.fail((*side.path, "at", k), "a divisor of this expression can be 0 "
                                                                   "for some block") from None
                    cb.append((o.lo + int(lo_loc[k]), o.hi + int(hi_loc[k])))
                    if max(abs(cb[-1][0]), abs(cb[-1][1])) >= MAX_ADDRESS:
                        raise self.fail((*side.path, "at" if side.at is not None else "tensor"),
                                        f"coordinates of {side.tensor.name!r} reach about 2^"
                                        f"{max(abs(cb[-1][0]), abs(cb[-1][1])).bit_length()} over the grid; "
                                        "threadmap computes in 64-bit integers (limit 2^62)")
                coord_bounds[(side.stage, side.which)] = tuple(cb)
                off = offset_bounds(side.tensor.layout, cb)
                lo, hi = off.lo + side.tensor.offset, off.hi + side.tensor.offset
                if side.tensor.nbytes(max(abs(lo), abs(hi))) >= MAX_ADDRESS:
                    raise self.fail((*side.path, "tensor"), f"element offsets of {side.tensor.name!r} reach about "
                                                            f"2^{max(abs(lo), abs(hi)).bit_length()} over the grid; "
                                                            "threadmap computes in 64-bit integers (limit 2^62 bytes)")
                name = side.tensor.name
                if side.tensor.memory == "shared":
                    self.check_shared(side, st.predicate, cb)
                lowest[name] = min(lowest.get(name, 0), lo)
                if hi > highest.get(name, (-1, side))[0]:
                    highest[name] = (hi, side)
        rebased = dict(tensors)
        for name, lo in lowest.items():
            tm = tensors[name]
            if lo < 0 and tm.memory == "shared":
                raise self.fail(tm.path, f"shared tensor {name!r} reaches element offset {lo}: shared "
                                         "addresses start at 0 (a negative stride needs a positive offset)")
            if lo < 0:
                shift = -(-tm.nbytes(-lo) // tm.align) * tm.align
                rebased[name] = replace(tm, base=tm.base + shift)
        for name, (hi, side) in highest.items():
            tm = rebased[name]
            top = tm.base + tm.nbytes(hi)
            if top >= MAX_ADDRESS or tm.base - tm.nbytes(-lowest[name]) <= -MAX_ADDRESS:
                raise self.fail((*side.path, "tensor"), f"byte addresses of {name!r} reach about 2^"
                                                        f"{max(top, 1).bit_length()} over the grid; threadmap "
                                                        "computes addresses in 64-bit integers (limit 2^62)")
        if rebased != tensors:
            stages = [st if not isinstance(st, CopyModel) else
                      replace(st, src=_rebind(st.src, rebased), dst=_rebind(st.dst, rebased)) for st in stages]
        return coord_bounds, rebased, stages


    def check_shared(self, side: SideModel, predicate: str, cb: Sequence[tuple[int, int]]) -> None:
        """Shared addresses stay inside the CTA's shared memory (``MAX_SHARED_BYTES``), checked
        on the interval bounds before anything is allocated: an address past it faults on the
        GPU, and a simulation would allocate for it.  A predicated copy performs only accesses
        inside the tensor (a vector's first element inside, its others at most ``vec`` past)."""
        t = side.tensor
        assert t is not None
        box = list(cb)
        if predicate != "none":
            box = [(max(lo, 0), min(hi, ext - 1 + side.vec)) for (lo, hi), ext in zip(cb, t.shape, strict=False)]
            if any(lo > hi for lo, hi in box):
                return  # every access is masked
        top = t.nbytes(offset_bounds(t.layout, box).hi + t.offset + 1)
        if top > MAX_SHARED_BYTES:
            raise self.fail((*side.path, "at" if side.at is not None else "tensor"),
                            f"shared addresses of {t.name!r} reach byte {top - 1} over the grid (about 2^"
                            f"{(top - 1).bit_length() - 1}); a CTA has at most {MAX_SHARED_BYTES} bytes of "
                            "shared memory")


def _rebind(side: SideModel, tensors: dict[str, TensorModel]) -> SideModel:
    return side if side.tensor is None else replace(side, tensor=tensors[side.tensor.name])


def offset_bounds(layout: Any, bounds: Sequence[tuple[int, int]]) -> Interval:
    """Element offsets of ``layout`` for top-level coordinates within ``bounds``: the layout
    evaluated on intervals (one evaluation core: ``crd2idx`` only uses ``+ * // %``).  A
    swizzle ``A(O + B(c))`` keeps ``x`` in ``[0, 2^k)`` for ``k`` at least its own width."""
    coord = tuple(Interval(lo, hi) for lo, hi in bounds)
    inner = layout.layout_b if isinstance(layout, L.ComposedLayout) else layout
    c: Any = coord if len(coord) > 1 else coord[0]
    # a composition of composed layouts (L o Sw o L2): the inner one's bounds first
    off = offset_bounds(inner, bounds) if isinstance(inner, L.ComposedLayout) else Interval.lift(inner(c))
    if isinstance(layout, L.ComposedLayout):
        base = int(layout.offset)
        lo, hi = off.lo + base, off.hi + base
        if isinstance(layout.layout_a, L.Layout) and lo >= 0:
            # a plain outer layout maps the inner offsets' range as its own index range
            return Interval.lift(layout.layout_a(Interval(lo, hi)))
        nbits = getattr(layout.layout_a, "nbits", 0)
        if lo < 0:
            return Interval(lo - (1 << nbits), hi + (1 << nbits))
        if isinstance(layout.layout_a, L.Swizzle):
            # the swizzle rewrites only bits below nbits: the bits above stay those of hi or less
            return Interval(0, (((int(hi) >> nbits) + 1) << nbits) - 1)
        k = max(int(hi).bit_length(), int(nbits))
        return Interval(0, (1 << k) - 1)
    return off


#: the CuTe names of SM80 ``cp.async`` copy operations (``SM80_CP_ASYNC_CACHEGLOBAL<T>``, ...)
CP_ASYNC_PREFIX = "SM80_CP_ASYNC_"


def _auto(atom: str) -> bool:
    name = atom.replace(" ", "").removeprefix("cute::")
    return name.startswith("AutoVectorizingCopy") or name == "DefaultCopy"


def _auto_bits(atom: str) -> int:
    name = atom.replace(" ", "").removeprefix("cute::")
    if name == "DefaultCopy":
        return 8
    if "<" in name:
        digits = "".join(ch for ch in name.split("<", 1)[1] if "0" <= ch <= "9")
        return int(digits) if digits else 128
    return 128


def _leaves(t: Any) -> list[Any]:
    if isinstance(t, tuple):
        return [x for m in t for x in _leaves(m)]
    return [t]


def build_model(loaded: LoadedSpec, env: Mapping[str, int]) -> KernelModel:
    """Bind ``loaded`` to the size environment ``env`` (see the module docstring)."""
    return _Builder(loaded, env).build()
