"""Tile-local partitions: for every thread and value, the coordinate inside the CTA tile.

Partitions follow CuTe and CUTLASS exactly by evaluating the real algebra on identity
tensors:

* ``threads``: ``local_partition(make_identity_tensor(tile), thr_layout, t)``;
* ``tiled_copy``: ``make_tiled_copy(Copy_Atom<atom, T>, thr, val).get_slice(t).partition_S/D``;
* ``mma``: ``make_tiled_mma(atom, atom_layout).get_slice(t).partition_A/B/C``;
* ``thread_map``: the CUTLASS thread map's ``coordinates()`` (iterator order).

The result is block-independent: a block's accesses are the tile origin plus these
coordinates.  Values are numbered in the fragment's order (CuTe: colexicographic over the
partition's shape; CUTLASS: the iterator's strided, contiguous, element loops), and every
partition here groups them so that value ``v`` belongs to instruction ``v // vec`` at vector
lane ``v % vec`` (see :class:`LocalPartition`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import threadmap.layout as L
from threadmap.errors import ThreadmapError

#: most (thread, value) accesses one side's partition may hold; counted before allocating,
#: since a replicated partition (a GMMA operand in shared memory: every thread of a
#: warpgroup holds the whole atom tile) makes threads times the tile's elements
MAX_PARTITION = 1 << 22  # what one CTA's checks can hold (MAX_CHUNK_BYTES / BYTES_PER_ROW)


@dataclass(frozen=True)
class LocalPartition:
    """Tile-local accesses of one side of a copy.

    ``coord``: int64 ``(T, V, R)`` coordinates inside the tile (for a register side:
    ``(T, V, 2)`` = (thread, value)); value ``v`` of a thread is moved by its instruction
    ``v // vec`` as element ``v % vec`` of a ``vec``-element vector access.
    """

    coord: np.ndarray
    vec: int
    #: how the partition was made, for code that instantiates the real templates (the GPU
    #: probe): ``("threads", thr_layout)``, ``("tiled_copy", copy_atom_type, thr, val, "src"|"dst")``,
    #: ``("tiled_copy_tv", copy_atom_type, layout_tv, tiler, "src"|"dst")``,
    #: ``("mma", mma_op_type, atom_layout, operand)``, ``("thread_map", thread_map, contiguous_mode)``
    maker: tuple[Any, ...] | None = field(default=None, compare=False)
    #: for a tiled copy whose atom moves data across lanes (ldmatrix, stmatrix: its source and
    #: destination value layouts differ), the tile coordinates of the copy's *other* role
    #: (``partition_D`` for a source side, ``partition_S`` for a destination side): which
    #: registers hold or receive each element (``data_routing``)
    peer: np.ndarray | None = field(default=None, compare=False)

    @property
    def threads(self) -> int:
        return int(self.coord.shape[0])

    @property
    def values(self) -> int:
        return int(self.coord.shape[1])

    @property
    def rank(self) -> int:
        return int(self.coord.shape[2])

    def with_vec(self, vec: int) -> LocalPartition:
        return replace(self, vec=vec)


#: bytes of coordinates :func:`memoized` keeps (least recently used first out), and the
#: largest partition it keeps (a bigger one is computed each time: it is rare, and a
#: long-running process, the service, should not hold it)
MEMO_BYTES = 64 << 20
MEMO_ENTRY_BYTES = 8 << 20
_MEMO: OrderedDict[Hashable, LocalPartition] = OrderedDict()
_MEMO_LOCK = threading.Lock()


def memoized(key: Hashable, compute: Callable[[], LocalPartition]) -> LocalPartition:
    """``compute()``, kept under ``key`` for later calls with an equal key (a model is built
    again for every size class of a proof, and the partitions rarely change with the sizes).

    Law: ``key`` holds every input ``compute`` reads (the partition kind, its evaluated
    layouts, atom and element width, the tile and the thread count), so the kept partition is
    the one ``compute()`` would return.  A failure is not kept, nor a partition of more than
    ``MEMO_ENTRY_BYTES``.  The kept coordinates are read-only (models share them)."""
    with _MEMO_LOCK:
        hit = _MEMO.get(key)
        if hit is not None:
            _MEMO.move_to_end(key)
            return hit
    part = compute()
    if part.coord.nbytes > MEMO_ENTRY_BYTES:
        return part
    part.coord.setflags(write=False)
    with _MEMO_LOCK:
        _MEMO[key] = part
        total = sum(p.coord.nbytes for p in _MEMO.values())
        while total > MEMO_BYTES:
            total -= _MEMO.popitem(last=False)[1].coord.nbytes
    return part


def forget_partitions() -> None:
    """Empty the :func:`memoized` partitions (the next build computes each again)."""
    with _MEMO_LOCK:
        _MEMO.clear()


def all_threads(part: Callable[[Any], Any], threads: int, rank: int) -> np.ndarray:
    """(T, V, rank) tile coordinates of every thread's partition of an identity tensor.

    A partition's layout is the same for every thread; only its offset depends on the
    thread, so one evaluation with a numpy array of thread ids gives all offsets at once.
    Falls back to one evaluation per thread where a partition needs an integer thread id.
    """
    try:
        p = part(np.arange(threads))
        return _coords(p, rank, threads)
    except ThreadmapError:
        raise
    except (TypeError, ValueError, IndexError):
        first = _coords(part(0), rank, 1)[0]
        if threads * len(first) > MAX_PARTITION:
            raise ThreadmapError(f"{threads} threads x {len(first)} values = {threads * len(first)} "
                                 f"accesses; threadmap simulates at most {MAX_PARTITION} per side") from None
        return np.stack([first] + [_coords(part(t), rank, 1)[0] for t in range(1, threads)])


def _coords(p: Any, rank: int, threads: int) -> np.ndarray:
    """``offset(thread) + layout(v)`` of an identity-tensor partition, per coordinate mode."""
    n = L.size(p.layout)
    if threads * n > MAX_PARTITION:
        raise ThreadmapError(f"{threads} threads x {n} values = {threads * n} accesses; threadmap "
                             f"simulates at most {MAX_PARTITION} per side")
    vals = L.ArithTuple.of(L.Tensor(p.layout, L.ArithTuple({}))(np.arange(n)) if n > 1 else
                           L.Tensor(p.layout, L.ArithTuple({}))(0))
    off = L.ArithTuple.of(p.offset)
    out = np.empty((threads, n, rank), dtype=np.int64)
    for k in range(rank):
        o = np.broadcast_to(np.asarray(off.get((k,)), dtype=np.int64), (threads,))
        v = np.broadcast_to(np.asarray(vals.get((k,)), dtype=np.int64), (n,))
        out[:, :, k] = o[:, None] + v[None, :]
    return out


def thread_layout_partition(tile: tuple[int, ...], thr: Any, threads: int) -> LocalPartition:
    """``local_partition(identity(tile), thr, t)``: one scalar access per value."""
    ident = L.make_identity_tensor(tile)
    return LocalPartition(all_threads(lambda t: L.local_partition(ident, thr, t), threads, len(tile)), 1,
                          ("threads", thr))


def tiled_copy_partition(tile: tuple[int, ...], tc: Any, which: str, threads: int) -> LocalPartition:
    """``tiled_copy.get_slice(t).partition_S/D(identity(tile))``; the fragment's first mode is
    ``(AtomVal, RestVal)``, so one instruction moves the atom's ``NumValSrc``/``NumValDst``
    values (``vec``), which come first in the value order."""
    ident = L.make_identity_tensor(tile)
    method, other = ("partition_S", "partition_D") if which == "src" else ("partition_D", "partition_S")
    coord = all_threads(lambda t: getattr(tc.get_slice(t), method)(ident), threads, len(tile))
    vec = int(tc.atom.num_val_src if which == "src" else tc.atom.num_val_dst)
    if vec < 1 or coord.shape[1] % vec:
        # an atom whose source and reference value counts differ (ldmatrix): the fragment's
        # atom-value mode is what one instruction of this thread moves
        vec = int(L.size(getattr(tc.get_slice(0), method)(ident).layout[0][0]))
    peer = None
    if tc.atom.op.src_bits != tc.atom.op.dst_bits:
        # only an atom whose two sides' layouts differ can move data across lanes
        peer = all_threads(lambda t: getattr(tc.get_slice(t), other)(ident), threads, len(tile))
        if np.array_equal(peer, coord):
            peer = None
    return LocalPartition(coord, max(1, vec), peer=peer)


def mma_partition(tile: tuple[int, ...], mma: Any, operand: str, threads: int) -> LocalPartition:
    """``tiled_mma.get_slice(t).partition_A/B/C(identity(tile))``: one scalar access per value."""
    ident = L.make_identity_tensor(tile)
    coord = all_threads(lambda t: getattr(mma.get_slice(t), f"partition_{operand}")(ident), threads,
                        len(tile))
    return LocalPartition(coord, 1)


def thread_map_partition(tm: Any, contiguous_mode: int) -> LocalPartition:
    """A CUTLASS thread map's ``coordinates()`` as tile coordinates: ``(T, Its, Itc, [ts,] epa, 2)``
    of (contiguous, strided), flattened in iterator order; ``contiguous_mode`` says which
    tensor mode is CUTLASS's contiguous one.  One access moves ``elements_per_access``."""
    co = tm.coordinates()
    epa = int(co.shape[-2])
    flat = co.reshape(co.shape[0], -1, 2)
    c = np.stack([flat[..., 1], flat[..., 0]], axis=-1) if contiguous_mode == 1 else flat.copy()
    return LocalPartition(c.astype(np.int64), epa, ("thread_map", tm, contiguous_mode))


def register_partition(threads: int, values: int, vec: int) -> LocalPartition:
    """A register fragment: (thread, value) -> (thread, value)."""
    t, v = np.meshgrid(np.arange(threads), np.arange(values), indexing="ij")
    return LocalPartition(np.stack([t, v], axis=-1).astype(np.int64), vec)


def data_routing(memory: LocalPartition, values: int, vec: int) -> LocalPartition:
    """The register side of a copy whose memory side is ``memory``: entry ``(t, v)`` is the
    register ``(t', v')`` whose data the memory access ``(t, v)`` moves.  Plain copies keep a
    thread's own registers (:func:`register_partition`); ldmatrix and stmatrix move data
    across lanes: register ``(t', v')`` of the fragment (in the copy's register-role value
    order, ``retile_S``/``retile_D``) holds the tile element ``memory.peer[t', v']``, so the
    access to element ``c`` moves the register whose peer coordinate is ``c``.  Law: every
    memory access moves the register holding its own tile element (the i-th access to an
    element the i-th register holding it).  Where the two roles give a thread different
    numbers of values (the x1 and x2 forms, whose upper lanes' addresses the instruction
    ignores), the fragments do not line up one to one and each thread keeps its own registers."""
    reg = register_partition(memory.threads, values, vec)
    if memory.peer is None or memory.peer.shape != memory.coord.shape:
        return reg
    holders: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for (t, v), c in zip(np.ndindex(*memory.peer.shape[:2]), memory.peer.reshape(-1, memory.peer.shape[2])):
        holders.setdefault(tuple(int(x) for x in c), []).append((t, v))
    out = reg.coord.copy()
    for (t, v), c in zip(np.ndindex(*memory.coord.shape[:2]), memory.coord.reshape(-1, memory.coord.shape[2])):
        queue = holders.get(tuple(int(x) for x in c))
        if queue:
            out[t, v] = queue.pop(0)
    return LocalPartition(out, vec)


def common_vector(offsets: list[np.ndarray]) -> int:
    """The largest power of two ``k`` dividing the value count such that every aligned run of
    ``k`` values is contiguous in every one of ``offsets`` (value order) and starts ``k``
    elements after the fragment's first one, a multiple of ``k``: CuTe's ``gcd(max_common_vector,
    max_alignment)`` measured on one thread's fragments (the fragment's pointer itself is
    assumed aligned, as CuTe assumes of a pointer whose alignment is not static)."""
    nv = int(offsets[0].size)
    best, k = 1, 2
    while k <= nv:
        if nv % k == 0 and all(_runs(o, k) for o in offsets):
            best = k
        k *= 2
    return best


def _runs(o: np.ndarray, k: int) -> bool:
    r = o.reshape(-1, k)
    return bool(np.all(np.diff(r, axis=1) == 1)) and bool(np.all((r[:, 0] - o[0]) % k == 0))
