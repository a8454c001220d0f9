"""Build :class:`AccessTable` objects from plain functions (tests, examples, the REPL).

:func:`build_table` enumerates (block, thread, step, lane) in table order, calls a
coordinate function on the broadcast index arrays and derives predicates, offsets and
addresses, so a check can be exercised without the simulator::

    # 32 threads, each reading 4 consecutive f32 of row t of a 32 x 128 row-major matrix
    t = build_table(lambda b, t, s, l: (t, s * 4 + l), threads=32, steps=8, vec=4,
                    shape=(32, 128))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from threadmap.simulate.access import AccessTable, Memory

CoordFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], Sequence[np.ndarray]]
PredKind = Literal["none", "bounds", "vector_all", "vector_first"]


def _row_major(shape: tuple[int, ...]) -> Callable[[Sequence[np.ndarray]], np.ndarray]:
    def f(c: Sequence[np.ndarray]) -> np.ndarray:
        off = np.zeros_like(np.asarray(c[0], dtype=np.int64))
        for i, e in enumerate(shape):
            off = off * int(e) + np.asarray(c[i], dtype=np.int64)
        return off
    return f


def _col_major(shape: tuple[int, ...]) -> Callable[[Sequence[np.ndarray]], np.ndarray]:
    def f(c: Sequence[np.ndarray]) -> np.ndarray:
        off = np.zeros_like(np.asarray(c[0], dtype=np.int64))
        for i in reversed(range(len(shape))):
            off = off * int(shape[i]) + np.asarray(c[i], dtype=np.int64)
        return off
    return f


def build_table(coord_fn: CoordFn, *, threads: int, steps: int, shape: Sequence[int], vec: int = 1,
                blocks: int | Sequence[int] = 1, memory: Memory = "global", elem_bytes: int = 4,
                layout: Literal["row", "col"] | Callable[[Sequence[np.ndarray]], np.ndarray] = "row",
                base: int = 0, pred: PredKind | Callable[..., np.ndarray] = "bounds",
                value_fn: Callable[..., np.ndarray] | None = None, stage: int = 0,
                side: Literal["src", "dst"] = "src", tensor: str = "t", buffer: str = "",
                meta: dict[str, Any] | None = None) -> AccessTable:
    """An access table from ``coord_fn(block, thread, step, lane) -> (c0, c1, ...)``.

    ``layout`` maps coordinates to element offsets (``"row"``: last mode fastest, as
    ``(M,N):(N,1)``; ``"col"``: first mode fastest; or a function of the coordinate
    arrays).  ``addr = base + offset * elem_bytes``.  ``pred``: ``"none"`` (all true),
    ``"bounds"`` (per element), ``"vector_all"`` (per access: every lane in bounds, so a
    straddling vector is masked whole), ``"vector_first"`` (per access: lane 0 in bounds,
    as a guard on the access's start coordinate), or a function like ``coord_fn`` that
    returns a boolean array.  ``value`` defaults to ``step * vec + lane``.  For
    ``memory="register"`` pass ``coord_fn`` returning ``(thread, value)``.
    """
    shape = tuple(int(s) for s in shape)
    blist = np.arange(blocks) if isinstance(blocks, int) else np.asarray(blocks, dtype=np.int64)
    b, t, s, ln = np.meshgrid(blist.astype(np.int64), np.arange(threads, dtype=np.int64),
                              np.arange(steps, dtype=np.int64), np.arange(vec, dtype=np.int64),
                              indexing="ij")
    b, t, s, ln = (a.reshape(-1) for a in (b, t, s, ln))
    cs = [np.broadcast_to(np.asarray(c, dtype=np.int64), b.shape).copy() for c in coord_fn(b, t, s, ln)]
    coord = np.stack(cs, axis=1)
    inb = np.ones(b.shape[0], dtype=bool)
    for i, e in enumerate(shape):
        inb &= (coord[:, i] >= 0) & (coord[:, i] < e)
    if callable(pred):
        p = np.broadcast_to(np.asarray(pred(b, t, s, ln), dtype=bool), b.shape).copy()
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
    lay = _row_major(shape) if layout == "row" else _col_major(shape) if layout == "col" else layout
    offset = np.asarray(lay(cs), dtype=np.int64)
    value = (s * vec + ln) if value_fn is None else np.asarray(value_fn(b, t, s, ln), dtype=np.int64)
    return AccessTable(
        stage=stage, side=side, tensor=tensor, memory=memory, elem_bytes=elem_bytes, vec=vec,
        shape=shape, block=b, thread=t.astype(np.int32), step=s.astype(np.int32),
        lane=ln.astype(np.int16), value=np.asarray(value, dtype=np.int32), coord=coord, pred=p,
        offset=offset, addr=base + offset * elem_bytes, buffer=buffer, meta=dict(meta or {}))


def register_table(like: AccessTable, *, side: Literal["src", "dst"], name: str = "frag",
                   vec: int | None = None) -> AccessTable:
    """The register side matching ``like``: same rows, ``coord = (thread, value)``."""
    coord = np.stack([like.thread.astype(np.int64), like.value.astype(np.int64)], axis=1)
    v = like.vec if vec is None else vec
    return AccessTable(
        stage=like.stage, side=side, tensor=name, memory="register", elem_bytes=like.elem_bytes,
        vec=v, shape=(int(like.thread.max()) + 1, int(like.value.max()) + 1),
        block=like.block.copy(), thread=like.thread.copy(), step=like.step.copy(),
        lane=like.lane.copy(), value=like.value.copy(), coord=coord,
        pred=np.ones(len(like), dtype=bool), offset=like.value.astype(np.int64),
        addr=like.value.astype(np.int64) * like.elem_bytes, buffer=name)
