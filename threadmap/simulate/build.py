"""Access tables from plain functions (tests, examples, the REPL), without a spec.

:func:`build_table` enumerates every (block, thread, step, element) in the instruction order
of :class:`~threadmap.simulate.access.AccessTable`, calls a coordinate function on the
broadcast index arrays and derives predicates, offsets and addresses, so a check can be
exercised directly::

    # 32 threads, each reading 4 consecutive f32 of row t of a 32 x 128 row-major matrix
    t = build_table(lambda b, t, s, e: (t, s * 4 + e), threads=32, steps=8, vec=4, shape=(32, 128))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from threadmap.hardware import WARP_SIZE
from threadmap.simulate.access import AccessTable, Memory

CoordFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], Sequence[Any]]
PredKind = Literal["none", "bounds", "vector_all", "vector_first"]


def _layout_fn(shape: tuple[int, ...], order: str) -> Callable[[Sequence[np.ndarray]], np.ndarray]:
    modes = range(len(shape)) if order == "row" else reversed(range(len(shape)))

    def f(c: Sequence[np.ndarray]) -> np.ndarray:
        off = np.zeros_like(np.asarray(c[0], dtype=np.int64))
        for i in modes:
            off = off * int(shape[i]) + np.asarray(c[i], dtype=np.int64)
        return off
    return f


def build_table(coord_fn: CoordFn, *, threads: int, steps: int, shape: Sequence[int], vec: int = 1,
                blocks: int | Sequence[int] = 1, memory: Memory = "global", elem_bytes: int = 4,
                layout: Literal["row", "col"] | Callable[[Sequence[np.ndarray]], np.ndarray] = "row",
                base: int = 0, pred: PredKind | Callable[..., np.ndarray] = "bounds", stage: int = 0,
                side: Literal["src", "dst"] = "src", tensor: str = "t", buffer: str = "",
                tile: Sequence[int] | None = None, tile_origin: Any = None) -> AccessTable:
    """An access table from ``coord_fn(block, thread, step, element) -> (c0, c1, ...)``.

    ``layout`` maps coordinates to element offsets (``"row"``: last mode fastest, as
    ``(M,N):(N,1)``; ``"col"``: first mode fastest; or a function of the coordinate arrays);
    ``addr = base + offset * elem_bytes``.  ``pred``: ``"none"`` (all true), ``"bounds"`` (per
    element), ``"vector_all"`` (per access: every element in bounds), ``"vector_first"`` (per
    access: its first element in bounds), or a function like ``coord_fn``.  ``tile`` and
    ``tile_origin`` (an (nb, R) array, or a function of the block ids) give each block's tile
    (default: the whole tensor at 0).  For ``memory="register"`` return ``(thread, value)``.
    """
    shape = tuple(int(s) for s in shape)
    blist = np.arange(blocks, dtype=np.int64) if isinstance(blocks, int) else np.asarray(blocks, dtype=np.int64)
    W = -(-threads // WARP_SIZE)
    b, w, s, ln, k = np.meshgrid(np.arange(blist.size), np.arange(W), np.arange(steps), np.arange(WARP_SIZE),
                                 np.arange(vec), indexing="ij")
    b, w, s, ln, k = (a.reshape(-1) for a in (b, w, s, ln, k))
    t = w * WARP_SIZE + ln
    valid = t < threads
    bid = blist[b]
    coords = tuple(np.broadcast_to(np.asarray(c, dtype=np.int64), b.shape).copy()
                   for c in coord_fn(bid, np.minimum(t, threads - 1), s, k))
    inb = np.ones(b.shape[0], dtype=bool)
    for i, e in enumerate(shape):
        inb &= (coords[i] >= 0) & (coords[i] < e)
    if callable(pred):
        p = np.broadcast_to(np.asarray(pred(bid, t, s, k), dtype=bool), b.shape).copy()
    elif pred == "none" or memory == "register":
        p = np.ones(b.shape[0], dtype=bool)
    elif pred == "bounds":
        p = inb.copy()
    elif pred == "vector_all":
        p = np.repeat(inb.reshape(-1, vec).all(axis=1), vec)
    elif pred == "vector_first":
        p = np.repeat(inb.reshape(-1, vec)[:, 0], vec)
    else:
        raise ValueError(f"unknown predicate kind {pred!r}")
    p &= valid
    lay = _layout_fn(shape, layout) if isinstance(layout, str) else layout
    offset = np.broadcast_to(np.asarray(lay(coords), dtype=np.int64), b.shape).copy()
    R = len(coords)
    if tile_origin is None:
        origins = np.zeros((blist.size, R), dtype=np.int64)
    elif callable(tile_origin):
        origins = np.asarray(tile_origin(blist), dtype=np.int64).reshape(blist.size, R)
    else:
        origins = np.asarray(tile_origin, dtype=np.int64).reshape(blist.size, R)
    return AccessTable(stage, side, tensor, memory, elem_bytes, vec, shape, threads, steps * vec, blist, coords,
                       p, offset, base + offset * elem_bytes, None if bool(valid.all()) else valid,
                       buffer or tensor, tuple(int(x) for x in (tile if tile is not None else shape)), origins)


def register_table(like: AccessTable, *, side: Literal["src", "dst"], name: str = "frag") -> AccessTable:
    """The register side matching ``like``: same rows, ``coord = (thread, value)``."""
    th, va = like.thread.astype(np.int64), like.value.astype(np.int64)
    if like.valid is not None:
        th = np.minimum(th, like.threads - 1)
    off = va.copy()
    return AccessTable(like.stage, side, name, "register", like.elem_bytes, like.vec,
                       (like.threads, like.values), like.threads, like.values, like.blocks.copy(), (th, va),
                       np.ones(len(like), dtype=bool) if like.valid is None else like.valid.copy(), off,
                       off * like.elem_bytes, None if like.valid is None else like.valid.copy(), name,
                       (like.threads, like.values), None)
