"""A spec's ``pipeline:`` bound to one size environment: the protocol the explorer runs
(:class:`threadmap.pipeline.Protocol`), the K-loop's trip count, and the TMA copies built as
CuTe builds them, with the rules each breaks and, for a shared buffer below its swizzle's
alignment, what a tile-relative reader of it gets wrong."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

import threadmap.layout as L
from threadmap.errors import SpecError, ThreadmapError
from threadmap.hardware import gmma_operand_wavefronts
from threadmap.layout.atom.copy_traits_sm100_tmem import TMEM_DP_BITS
from threadmap.pipeline import Block, Op, Protocol, Role
from threadmap.pipeline.program import OpKind
from threadmap.spec.expr import parse_expr
from threadmap.spec.schema import (
    BarrierArgs,
    BufferArgs,
    GmmaOperandSpec,
    PipelineBlock,
    PipelineOp,
    PipelineSpec,
    TmemLoadArgs,
)

Fail = Callable[[Sequence[Any], str], SpecError]
#: the named barrier every role takes part in (``__syncthreads``)
SYNCTHREADS = "__syncthreads"


@dataclass(frozen=True)
class TmaModel:
    """One TMA copy of the pipeline: the copy (descriptor, violations), its buffers, the bytes
    one issue moves per CTA, the shared alignment its swizzle needs, and -- when the buffer is
    only aligned to less -- the tile elements a tile-relative reader gets wrong (count,
    witnesses) with the tile placed that far off the boundary."""

    name: str
    copy: L.TmaCopy
    gmem: str
    smem: str
    nbytes: int
    required_align: int
    smem_align: int
    misplaced: tuple[int, list[dict[str, Any]]] | None
    path: tuple[Any, ...]


@dataclass(frozen=True)
class GmmaOperandModel:
    """One wgmma operand read through a descriptor: the descriptors ``make_gmma_desc`` builds
    for every instruction block of stage 0 (none when the header rejects the layout: ``error``),
    where stage 0 is placed (``placed_at``: the buffer's alignment when it is below the
    swizzle's period, the worst case; else 0), who writes the stage (``tma``, or the generic
    stores' ``offset`` / ``address`` swizzle), and what goes wrong: elements whose writer and
    the tensor core disagree on the address (the swizzle's phase), elements a hand-written
    descriptor reads elsewhere than the built one, elements the built descriptor itself reads
    elsewhere than the layout puts them (``misread``); each ``(count, witness)``."""

    operand: str
    tensor: str
    major: str
    elem_bits: int
    block: tuple[int, int]
    descriptors: dict[tuple[int, int], L.GmmaDescriptor]
    error: L.GmmaLayoutError | None
    placed_at: int
    required_align: int
    writer: str
    phase_mismatch: tuple[int, dict[str, Any]] | None
    fields_mismatch: tuple[int, dict[str, Any]] | None
    path: tuple[Any, ...]
    #: elements the accepted descriptor reads elsewhere than the layout puts them
    misread: tuple[int, dict[str, Any]] | None = None
    #: the shared wavefronts the tensor core spends reading the stage (every block), and the ideal
    wavefronts: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class TmemModel:
    """The CTA's tensor memory: the rules each warp's ``tcgen05.ld`` breaks (``violations``:
    (spec path, warp, TmemViolation)) and the accumulator cells no load reads (count, first
    (lane, column))."""

    columns: int
    violations: tuple[tuple[tuple[Any, ...], int, Any], ...] = ()
    uncovered: tuple[int, tuple[int, int]] | None = None
    path: tuple[Any, ...] = ("pipeline", "tmem")


@dataclass(frozen=True)
class PipelineModel:
    """The bound pipeline: its protocol, trip count, TMA copies, and where it is in the spec."""

    protocol: Protocol
    iterations: int
    tma: dict[str, TmaModel] = field(default_factory=dict)
    gmma: tuple[GmmaOperandModel, ...] = ()
    tmem: TmemModel | None = None
    #: sizes the protocol depends on besides through the trip count (a proof over sizes needs none)
    size_dependent: tuple[str, ...] = ()
    #: the trip count's expression
    iterations_expr: str | int = 0
    path: tuple[Any, ...] = ("pipeline",)


def bind_pipeline(spec: PipelineSpec, env: Mapping[str, int], tensors: Mapping[str, Any], elements: Mapping[str, str],
                  threads: int, fail: Fail, by_address: frozenset[str] = frozenset()) -> PipelineModel:
    """``spec`` bound to ``env``; ``tensors`` are the kernel's :class:`~threadmap.model.kernel.TensorModel`
    by name, ``elements`` their element types, ``by_address`` the shared tensors whose readers
    swizzle addresses (not tile offsets); ``fail(path, message)`` makes the located error of a
    bad spec."""
    base = ("pipeline",)

    def ev(x: Any, path: Sequence[Any]) -> int:
        try:
            return int(parse_expr(x).eval(env))
        except (SpecError, ValueError) as ex:
            raise fail(path, str(ex)) from None

    used: set[str] = set()

    def deps(x: Any) -> None:
        try:
            used.update(n for n in parse_expr(x).names() if n in env)
        except SpecError:
            pass  # ev() reports the bad expression where it is evaluated

    iterations = ev(spec.iterations, (*base, "iterations"))
    if iterations < 0:
        raise fail((*base, "iterations"), f"the K-loop's trip count is {iterations}, below 0")
    for i, name in enumerate(spec.buffers):
        t = tensors.get(name)
        if t is None or t.memory != "shared":
            raise fail((*base, "buffers", i), f"{name!r} is not a shared tensor of this spec")
    buffers = {name: (_stage_bytes(tensors[name]), 0) for name in spec.buffers}
    barriers: dict[str, int] = {}
    for name, n in spec.barriers.items():
        deps(n)
        barriers[name] = ev(n, (*base, "barriers", name))
        if barriers[name] < 1:
            raise fail((*base, "barriers", name), f"an mbarrier expects at least one arrival per phase, got "
                                                  f"{barriers[name]}")
    tma = {name: _tma(name, spec, t, tensors, elements, by_address, (*base, "tma", name), ev, fail)
           for name, t in spec.tma.items()}
    syncs = {name: tuple(roles) for name, roles in spec.syncs.items()}
    for name, roles in spec.syncs.items():
        for i, r in enumerate(roles):
            if r not in spec.roles:
                raise fail((*base, "syncs", name, i), f"{r!r} is not a role of the pipeline")
    warps = -(-threads // 32)
    out_roles = []
    for rname, role in spec.roles.items():
        rpath = (*base, "roles", rname)
        if role.warps[1] >= warps:
            raise fail((*rpath, "warps"), f"warp {role.warps[1]} is beyond the CTA's {warps} warps")
        blocks = []
        trip_seen = False
        for bi, blk in enumerate(role.program):
            bpath = (*rpath, "program", bi)
            if blk.after_loop and not trip_seen:
                raise fail((*bpath, "after_loop"), "a block after the K-loop follows a block with loop: iterations")
            ops = tuple(_op(item, (*bpath, "ops", oi), spec, tma, barriers, syncs, ev, fail, deps)
                        for oi, item in enumerate(blk.ops))
            blocks.append(_block(blk, ops))
            trip_seen |= blk.loop == "iterations"
        # a use of registers no tcgen05.ld of the role fills is a misspelt fragment, which the
        # explorer would otherwise never flag
        loaded = {o.fragment for b in blocks for o in b.ops if o.kind == "tmem_load"}
        for o in (o for b in blocks for o in b.ops if o.kind == "use" and o.fragment not in loaded):
            raise fail((*o.where, "use"), f"{o.fragment!r} is not a fragment a tmem_load of role {rname} fills "
                                          f"({', '.join(sorted(map(repr, loaded))) or 'none'})")
        out_roles.append(Role(rname, role.warps[0], role.warps[1], tuple(blocks), role.start_phase, role.start_stage,
                              rpath))
    syncs.setdefault(SYNCTHREADS, tuple(spec.roles))
    protocol = Protocol(spec.stages, tuple(out_roles), barriers, buffers, syncs, spec.cluster, base)
    gmma: tuple[GmmaOperandModel, ...] = ()
    if spec.gmma is not None:
        filled = {t.smem for t in tma.values() if t.copy.op != "SM90_TMA_STORE"}
        gmma = tuple(_gmma(name, o, tensors, filled, by_address, (*base, "gmma", name), fail)
                     for name, o in (("a", spec.gmma.a), ("b", spec.gmma.b)) if o is not None)
    tmem = _tmem(spec, fail) if spec.tmem is not None or any(
        isinstance(item, PipelineOp) and isinstance(item.tmem_load, TmemLoadArgs)
        for role in spec.roles.values() for blk in role.program for item in blk.ops) else None
    return PipelineModel(protocol, iterations, tma, gmma, tmem, tuple(sorted(used)), spec.iterations)


def _stage_bytes(t: Any) -> int:
    """Bytes of one stage of a shared buffer: its tile's cosize, rounded up to its alignment
    (where stage ``s + 1`` starts)."""
    n = t.nbytes(int(L.cosize(t.layout)))
    return -(-n // t.align) * t.align


def _buffers(x: str | list[str] | BufferArgs) -> tuple[tuple[str, ...], int]:
    if isinstance(x, BufferArgs):
        b = x.buffers
        return ((b,) if isinstance(b, str) else tuple(b)), x.ahead
    return ((x,) if isinstance(x, str) else tuple(x)), 0


def _block(blk: PipelineBlock, ops: tuple[Op, ...]) -> Block:
    if blk.loop == "iterations":
        return Block(ops, 1, blk.first, trip=True, from_end=blk.after_loop)
    return Block(ops, blk.loop, blk.first, from_end=blk.after_loop)


def _op(item: Any, path: tuple[Any, ...], spec: PipelineSpec, tma: Mapping[str, TmaModel], barriers: Mapping[str, int],
        syncs: Mapping[str, tuple[str, ...]], ev: Callable[[Any, Sequence[Any]], int], fail: Fail,
        deps: Callable[[Any], None]) -> Op:
    if isinstance(item, str):
        if item == "syncthreads":
            return Op("sync", sync=SYNCTHREADS, where=path)
        return Op(cast(OpKind, item), where=path)
    assert isinstance(item, PipelineOp)
    kind = next(k for k in type(item).model_fields if getattr(item, k) is not None)
    v = getattr(item, kind)
    p = (*path, kind)

    def barrier(name: str, at: Sequence[Any]) -> str:
        if name not in barriers:
            raise fail(at, f"{name!r} is not a barrier of pipeline.barriers ({', '.join(barriers) or 'none'})")
        return name

    if kind in ("wait", "arrive", "arrive_expect_tx", "expect_tx"):
        args = v if isinstance(v, BarrierArgs) else BarrierArgs(barrier=v)
        bpath = p if isinstance(v, str) else (*p, "barrier")
        count = 0 if kind == "arrive" else 1   # 0: every thread of the role
        if args.count is not None:
            deps(args.count)
            count = ev(args.count, (*p, "count"))
            if count < 1:
                raise fail((*p, "count"), f"an arrive counts at least one arrival, got {count}")
        nbytes = 0
        if kind in ("arrive_expect_tx", "expect_tx"):
            if args.bytes is None:
                raise fail(p, f"{kind} needs bytes (the transaction count)")
            deps(args.bytes)
            nbytes = ev(args.bytes, (*p, "bytes"))
        elif args.bytes is not None:
            raise fail((*p, "bytes"), f"{kind} takes no bytes")
        return Op(cast(OpKind, kind), barrier=barrier(args.barrier, bpath), count=count, nbytes=nbytes,
                  ahead=args.ahead,
                  ctas=args.ctas, where=path)
    if kind == "tma":
        if v.copy_ not in tma:
            raise fail((*p, "copy"), f"{v.copy_!r} is not a copy of pipeline.tma ({', '.join(tma) or 'none'})")
        t = tma[v.copy_]
        return Op("tma", barrier=barrier(v.barrier, (*p, "barrier")), buffers=(t.smem,), nbytes=t.nbytes,
                  ahead=v.ahead, multicast=v.multicast, copy=v.copy_, where=path)
    if kind in ("wait_group", "wait_mma", "tma_store_wait"):
        return Op(cast(OpKind, kind), n=int(v), where=path)
    if kind == "tmem_load" and isinstance(v, TmemLoadArgs):
        return Op("tmem_load", fragment=v.fragment, where=path)
    if kind in ("tmem_load", "use"):
        return Op(cast(OpKind, kind), fragment=v, where=path)
    if kind == "sync":
        if v not in syncs:
            raise fail(p, f"{v!r} is not a named barrier of pipeline.syncs ({', '.join(syncs) or 'none'}); "
                          "'syncthreads' is every role")
        return Op("sync", sync=v, where=path)
    bufs, ahead = _buffers(v)
    for i, b in enumerate(bufs):
        if b not in spec.buffers:
            raise fail((*p, i) if not isinstance(v, str) else p,
                       f"{b!r} is not a buffer of pipeline.buffers ({', '.join(spec.buffers)})")
    return Op(cast(OpKind, kind), buffers=bufs, ahead=ahead, where=path)


def _tma(name: str, spec: PipelineSpec, t: Any, tensors: Mapping[str, Any], elements: Mapping[str, str],
         by_address: frozenset[str], path: tuple[Any, ...], ev: Callable[[Any, Sequence[Any]], int],
         fail: Fail) -> TmaModel:
    store = t.op == "SM90_TMA_STORE"
    gname, sname = (t.dst, t.src) if store else (t.src, t.dst)
    g, s = tensors.get(gname), tensors.get(sname)
    if g is None or g.memory != "global":
        raise fail((*path, "dst" if store else "src"), f"{gname!r} is not a global tensor of this spec")
    if s is None or s.memory != "shared" or sname not in spec.buffers:
        raise fail((*path, "src" if store else "dst"), f"{sname!r} is not a shared buffer of pipeline.buffers")
    if g.elem_bits != s.elem_bits:
        raise fail(path, f"{gname} has {g.elem_bits}-bit elements, {sname} {s.elem_bits}-bit: "
                         "a TMA copy does not convert")
    tile = None if t.tile is None else tuple(ev(x, (*path, "tile", i)) for i, x in enumerate(t.tile))
    try:
        copy = L.make_tma_copy(t.op, g.layout, s.layout, tile, t.multicast, elem_bits=g.elem_bits,
                               data_type=elements[gname],
                               address=g.base, arch=spec.arch)
    except (ThreadmapError, ValueError, ArithmeticError) as ex:
        raise fail(path, f"make_tma_copy: {ex}") from None
    nbytes = s.nbytes(int(L.size(s.layout))) // t.multicast
    need = L.alignment_for_swizzle(copy.swizzle, g.elem_bits)
    misplaced = None
    # readers that swizzle addresses agree with TMA wherever the tile lies; tile-relative ones
    # only on a tile aligned to the swizzle's period
    if s.align < need and copy.desc.swizzle and sname not in by_address:
        origin = (0,) * len(g.shape)
        misplaced = L.tma_tile_mismatches(copy, origin, smem_base=s.align, limit=4)
    return TmaModel(name, copy, gname, sname, nbytes, need, s.align if sname not in by_address else need, misplaced,
                    path)



def _first_mismatch(want: Any, got: Any, names: tuple[str, str],
                    extra: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """How many elements of two (MN, K) address grids differ, and the first one as a witness."""
    bad = np.argwhere(want != got)
    if not len(bad):
        return None
    i, j = (int(x) for x in bad[0])
    return len(bad), {"element": [i, j], names[0]: int(want[i, j]), names[1]: int(got[i, j]), **extra}


def _gmma(name: str, o: GmmaOperandSpec, tensors: Mapping[str, Any], filled: set[str], by_address: frozenset[str],
          path: tuple[Any, ...], fail: Fail) -> GmmaOperandModel:
    t = tensors.get(o.tensor)
    if t is None or t.memory != "shared":
        raise fail((*path, "tensor"), f"{o.tensor!r} is not a shared tensor of this spec")
    if len(t.shape) != 2:
        raise fail((*path, "tensor"), f"{o.tensor} has {len(t.shape)} modes; a wgmma operand's stage is (MN, K)")
    bits = t.elem_bits
    if bits not in (8, 16, 32):
        raise fail((*path, "tensor"), f"{o.tensor} has {bits}-bit elements; wgmma reads 8-, 16- or 32-bit ones "
                                      "from shared memory")
    if o.major == "MN" and bits != 16:
        # PTX wgmma transposes (imm-trans) only f16/bf16; CUTLASS's ss_op_selector asserts K-major
        raise fail((*path, "major"), f"{o.tensor} has {bits}-bit elements: wgmma reads tf32 and 8-bit operands "
                                     f"K-major only (\"Major{name.upper()} must be GMMA::Major::K for this "
                                     "config.\", cute/arch/mma_sm90.hpp)")
    mn, k = t.shape
    kb = 256 // bits
    if name == "a":
        if o.n is not None:
            raise fail((*path, "n"), "n is B's extent; A's is 64 per instruction")
        bm = 64
    else:
        bm = o.n if o.n is not None else min(mn, 256)
        if o.n is None and bm % 8:
            raise fail((*path, "tensor"), f"{o.tensor} is {mn} x {k}: its MN extent is no wgmma N (a multiple of 8 "
                                          "in 8 .. 256); give n")
    if mn % bm or k % kb:
        raise fail((*path, "tensor"), f"{o.tensor} is {mn} x {k}; one wgmma reads {bm} x {kb} of it (the block "
                                      "must divide the stage)")
    writer = "tma" if o.tensor in filled else ("address" if o.tensor in by_address else "offset")
    try:
        sw, inner = L.gmma_smem_swizzle(t.layout, bits)
    except ThreadmapError as ex:
        raise fail((*path, "tensor"), str(ex)) from None
    need = 1 << (sw.num_bits + sw.num_base + sw.num_shft) if sw.num_bits else 16
    placed = t.align if t.align < need else 0
    try:
        descs = L.make_gmma_desc_tensor(o.major, t.layout, (bm, kb), bits, placed)
    except L.GmmaLayoutError as ex:
        return GmmaOperandModel(name, o.tensor, o.major, bits, (bm, kb), {}, ex, placed, need, writer, None, None,
                                path)
    except ThreadmapError as ex:
        raise fail((*path, "tensor"), str(ex)) from None
    def stage_reads(ds: Mapping[tuple[int, int], L.GmmaDescriptor]) -> Any:
        # the byte address the tensor core reads for each (MN, K) element of the stage
        out = np.zeros((mn, k), dtype=np.int64)
        for (bi, bj), d in ds.items():
            out[bi * bm:(bi + 1) * bm, bj * kb:(bj + 1) * kb] = L.gmma_smem_addresses(d, o.major, bm, kb, bits)
        return out

    ii, jj = np.meshgrid(np.arange(mn, dtype=np.int64), np.arange(k, dtype=np.int64), indexing="ij")
    reads = stage_reads(descs)
    # the layout's own addresses (swizzled absolutely, as CuTe's pointer does): a descriptor the
    # header accepts can still read other elements (the recast to uint128_t forgets the order
    # inside each 16-byte chunk)
    own = np.asarray(sw(placed + np.asarray(inner((ii, jj)), dtype=np.int64) * bits // 8), dtype=np.int64)
    misread = _first_mismatch(own, reads, ("layout_address", "reader_address"), {"placed_at": placed})
    phase = None
    if misread is None and writer == "offset":
        writes = placed + np.asarray(t.layout((ii, jj)), dtype=np.int64) * bits // 8
        phase = _first_mismatch(writes, reads, ("writer_address", "reader_address"), {"placed_at": placed})
    fields = None
    if o.descriptor is not None:
        d0 = descs[(0, 0)]
        lt = L.LayoutType[o.descriptor.layout_type] if o.descriptor.layout_type else d0.layout_type
        hand = stage_reads({ij: L.GmmaDescriptor(d.start_address, o.descriptor.lbo, o.descriptor.sbo, 0, lt)
                            for ij, d in descs.items()})
        fields = _first_mismatch(reads, hand, ("built_reads", "given_reads"),
                                 {"built": {"lbo": d0.leading_byte_offset, "sbo": d0.stride_byte_offset,
                                            "layout_type": d0.layout_type.name},
                                  "given": {"lbo": o.descriptor.lbo, "sbo": o.descriptor.sbo, "layout_type": lt.name}})
    wf = [gmma_operand_wavefronts(reads[bi * bm:(bi + 1) * bm, bj * kb:(bj + 1) * kb], o.major, bits)
          for bi, bj in descs]
    return GmmaOperandModel(name, o.tensor, o.major, bits, (bm, kb), descs, None, placed, need, writer, phase, fields,
                            path, misread, (sum(w.wavefronts for w in wf), sum(w.ideal for w in wf)))


def _tmem(spec: PipelineSpec, fail: Fail) -> TmemModel:
    """The tensor memory: every warp's ``tcgen05.ld`` of each ``tmem_load`` with an op checked
    against its subpartition and the allocation, and the accumulator's cells none reads."""
    base = ("pipeline", "tmem")
    if spec.tmem is None:
        raise fail(("pipeline",), "a tmem_load with an op needs pipeline.tmem (its allocation's columns)")
    columns = spec.tmem.columns
    violations: list[tuple[tuple[Any, ...], int, Any]] = []
    violations += [(base + ("columns",), -1, v) for v in L.tmem_allocation_violations(columns)]
    cells: set[tuple[int, int]] = set()
    for rname, role in spec.roles.items():
        for bi, blk in enumerate(role.program):
            for oi, item in enumerate(blk.ops):
                if not isinstance(item, PipelineOp) or not isinstance(item.tmem_load, TmemLoadArgs):
                    continue
                a = item.tmem_load
                path = ("pipeline", "roles", rname, "program", bi, "ops", oi, "tmem_load")
                try:
                    op = L.tmem_copy_op(a.op)
                except ThreadmapError as ex:
                    raise fail((*path, "op"), str(ex)) from None
                if not op.load:
                    raise fail((*path, "op"), f"{a.op} is a TMEM store; tmem_load takes a SM100_TMEM_LOAD_* op")
                for w in range(role.warps[0], role.warps[1] + 1):
                    lane = 32 * (w % 4) if a.lane == "own" else a.lane
                    if not 0 <= lane < 1 << 16:
                        raise fail((*path, "lane"), f"a TMEM lane is 0..65535, got {lane}")
                    for v in L.tmem_op_access_violations(op, w, lane << 16 | a.column, columns):
                        violations.append((path, w, v))
                    # every bit the op reads: its lane and 32-bit column
                    bits = np.unique(L.tmem_bit_map(op))
                    cells.update(zip((bits // TMEM_DP_BITS + lane).tolist(),
                                     (bits % TMEM_DP_BITS // 32 + a.column).tolist()))
    uncovered = None
    if spec.tmem.accumulator is not None:
        lanes, cols = spec.tmem.accumulator
        if not 0 < lanes <= 128 or not 0 < cols <= 512:
            raise fail(base + ("accumulator",), f"an accumulator is 1..128 lanes x 1..512 columns, got {lanes} x "
                                                f"{cols}")
        missing = [(x, y) for x in range(lanes) for y in range(cols) if (x, y) not in cells]
        if missing:
            uncovered = (len(missing), missing[0])
    return TmemModel(columns, tuple(violations), uncovered)
