"""Per-block structure of an access table, established from its arrays, and exact memoization.

Most blocks of a grid access the same pattern at a different place: block ``b``'s addresses
are block 0's plus a shift, its coordinates block 0's plus a shift, its predicate the padding
mask.  A check whose per-block statistics depend only on such a pattern (and on the shift
modulo some period) computes them once per pattern and reuses them, but only for blocks whose
rows are established to follow the pattern, per block: for a table the simulator built, by
the :class:`~threadmap.simulate.engine.Pattern` it records (the ``start`` and ``rel`` it
computed the rows from; those arrays are read-only, and a pattern counts only for the very
arrays it was made for); for any other table :class:`BlockView` compares every row of every
block with the reference plus the block's shift (one subtraction and one comparison per
row).  A block that does not follow is computed directly.

:class:`Memo` keeps the per-pattern statistics of one accumulator across chunks, keyed by
the reference pattern itself (a chunk with another pattern starts afresh).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from functools import cached_property
from math import lcm
from typing import Any

import numpy as np

from threadmap.simulate.access import AccessTable
from threadmap.simulate.engine import Pattern


class Shifted:
    """``x.reshape(nb, pb)[b] == start[b] + rel`` for the blocks where ``ok[b]``."""

    __slots__ = ("ok", "start", "rel", "lo", "hi")

    def __init__(self, x: np.ndarray | None, nb: int, pb: int,
                 known: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        if known is not None:
            # the simulator built x as start + rel (and froze it): every block follows
            self.start, self.rel = known
            self.ok = np.ones(nb, dtype=bool)
        else:
            assert x is not None
            x2 = x.reshape(nb, pb)
            self.rel = x2[0] - x2[0, 0]
            d = np.subtract(x2, self.rel[None, :])
            # d[b, r] == d[b, 0] for every r iff block b is the reference pattern shifted by d[b, 0]
            self.ok = np.equal(d, d[:, :1]).all(axis=1)
            self.start = x2[:, 0].copy()
        self.lo = int(self.rel.min()) if pb else 0
        self.hi = int(self.rel.max()) if pb else 0


class BlockView:
    """What the checks may reuse between the blocks of one table (computed on demand)."""

    def __init__(self, t: AccessTable) -> None:
        self.t = t
        self.nb = int(t.blocks.size)
        self.pb = int(t.per_block)

    @cached_property
    def vtpl(self) -> np.ndarray | None:
        """The padding mask of one block when every block has the same (``valid`` is per row);
        None when some block's differs (then nothing is memoized)."""
        t = self.t
        if t.valid is None:
            return np.ones(self.pb, dtype=bool)
        v2 = t.valid.reshape(self.nb, self.pb)
        return v2[0].copy() if bool((v2 == v2[0]).all()) else None

    @cached_property
    def full(self) -> np.ndarray:
        """(nb,) the block's predicate is exactly its padding mask: every real row is performed."""
        if self.vtpl is None or self.nb == 0:
            return np.zeros(self.nb, dtype=bool)
        p2 = self.t.pred.reshape(self.nb, self.pb)
        if self.t.valid is None:
            return np.asarray(p2.all(axis=1))
        return np.asarray(np.equal(p2, self.vtpl[None, :]).all(axis=1))

    @cached_property
    def pattern(self) -> Pattern | None:
        """The simulator's statement of how it built the table, if it is about these arrays."""
        p = self.t.meta.get("pattern")
        if not isinstance(p, Pattern):
            return None
        starts = p.coord_start + ((p.addr_start,) if p.addr_start is not None else ())
        if any(x.shape != (self.nb,) for x in starts):
            return None
        mine = tuple(self.t.coords) + ((self.t.addr,) if p.addr_start is not None else ())
        if len(mine) != len(p.arrays) or any(a is not b or a.flags.writeable for a, b in zip(mine, p.arrays)):
            return None
        return p

    @cached_property
    def addr(self) -> Shifted:
        p = self.pattern
        if p is not None and p.addr_start is not None and p.addr_rel is not None:
            return Shifted(None, self.nb, self.pb, (p.addr_start, p.addr_rel))
        return Shifted(self.t.addr, self.nb, self.pb)

    @cached_property
    def coords(self) -> list[Shifted]:
        p = self.pattern
        if p is not None:
            return [Shifted(None, self.nb, self.pb, (s, r)) for s, r in zip(p.coord_start, p.coord_rel)]
        return [Shifted(c, self.nb, self.pb) for c in self.t.coords]

    @cached_property
    def coords_ok(self) -> np.ndarray:
        ok = np.ones(self.nb, dtype=bool)
        for s in self.coords:
            ok &= s.ok
        return ok

    @cached_property
    def coords_start(self) -> np.ndarray:
        """(nb, R) the first row's coordinate of every block."""
        if not self.coords:
            return np.zeros((self.nb, 0), dtype=np.int64)
        return np.stack([s.start for s in self.coords], axis=1)

    def inside(self, shape: Sequence[int]) -> np.ndarray:
        """(nb,) every row's coordinate lies in ``[0, shape)`` (blocks with verified coordinates:
        their box ``start + [lo, hi]`` is inside; others: False)."""
        ok = self.coords_ok.copy()
        for s, e in zip(self.coords, shape):
            ok &= (s.start + s.lo >= 0) & (s.start + s.hi < int(e))
        return ok


def view_of(t: AccessTable) -> BlockView:
    """The table's view: the one the driver attached (``meta['_view']``) or a fresh one."""
    v = t.meta.get("_view")
    if isinstance(v, BlockView) and v.t is t:
        return v
    return BlockView(t)


def attach_view(t: AccessTable) -> None:
    """Let every check of one run share the per-block analysis of ``t`` (tables that are not
    changed after this call)."""
    t.meta["_view"] = BlockView(t)


class Memo:
    """Per-pattern statistics of one accumulator; ``reset_unless(sig)`` forgets them when the
    reference pattern ``sig`` (arrays and scalars) changes."""

    def __init__(self) -> None:
        self.sig: tuple[Any, ...] | None = None
        self.store: dict[Hashable, dict[str, Any]] = {}

    def reset_unless(self, sig: tuple[Any, ...]) -> None:
        if self.sig is None or len(sig) != len(self.sig) or not all(_same(a, b) for a, b in zip(sig, self.sig)):
            self.sig = sig
            self.store = {}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype \
            and np.array_equal(a, b)
    return bool(a == b)


def period(*widths: int) -> int:
    """The least common multiple of ``widths`` (a shift by a multiple of it changes no sector,
    line, bank or alignment the checks look at)."""
    return lcm(*[max(1, int(w)) for w in widths])


def per_block(t: AccessTable, eligible: np.ndarray, keys: np.ndarray | None, memo: Memo,
              direct: Callable[[AccessTable], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Per-block statistics of ``t``: ``direct(sub_table)`` returns (blocks of the sub-table,)
    arrays (or (blocks, k) arrays); blocks where ``eligible`` take the statistics of the first
    block with the same key (``keys``: an (nb,) or (nb, k) integer array), computed once per
    key and memoized; the others are computed directly."""
    nb = int(t.blocks.size)
    out: dict[str, np.ndarray] = {}
    el = np.flatnonzero(eligible)
    rest = np.flatnonzero(~eligible)
    parts: list[tuple[np.ndarray, dict[str, np.ndarray]]] = []
    if el.size:
        uk, first, inv = group_rows(np.asarray(keys)[el])
        recs = []
        for j in range(uk.shape[0]):
            key = tuple(int(x) for x in uk[j])
            rec = memo.store.get(key)
            if rec is None:
                one = direct(t.select_blocks(el[first[j]:first[j] + 1]))
                rec = {f: v[0] for f, v in one.items()}
                memo.store[key] = rec
            recs.append(rec)
        if len(recs) == 1 and el.size == nb:
            # every block is the one pattern: the reference's statistics, broadcast (read-only)
            return {f: np.broadcast_to(np.asarray(v), (nb,) + np.shape(v)) for f, v in recs[0].items()}
        vals = {f: _stack([r[f] for r in recs]) for f in recs[0]}
        parts.append((el, {f: v[inv] for f, v in vals.items()}))
    if rest.size:
        parts.append((rest, direct(t if rest.size == nb else t.select_blocks(rest))))
    for idx, d in parts:
        for f, v in d.items():
            if f not in out:
                # (nb, k) statistics may come with different k from different parts: pad with 0
                width = max(x[f].shape[1:] for _, x in parts)
                out[f] = np.zeros((nb,) + width, dtype=v.dtype)
            out[f][(idx,) + tuple(slice(0, w) for w in v.shape[1:])] = v
    return out


def _stack(rows: list[np.ndarray]) -> np.ndarray:
    """Stack per-block statistics (scalars, or 1-D rows of different lengths padded with 0)."""
    first = np.asarray(rows[0])
    if first.ndim == 0:
        return np.asarray(rows)
    width = max(np.asarray(r).shape[0] for r in rows)
    out = np.zeros((len(rows), width), dtype=first.dtype)
    for i, r in enumerate(rows):
        out[i, :np.asarray(r).shape[0]] = r
    return out


def group_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(keys, axis=0, return_index=True, return_inverse=True)`` for an (n,) or (n, k)
    integer array, fast when every row is the same (the common case: one pattern)."""
    k2 = keys.reshape(keys.shape[0], -1)
    if k2.shape[0] == 0 or bool((k2 == k2[:1]).all()):
        return k2[:1], np.zeros(min(1, k2.shape[0]), dtype=np.int64), np.zeros(k2.shape[0], dtype=np.int64)
    if k2.shape[1] == 1:
        uk, first, inv = np.unique(k2[:, 0], return_index=True, return_inverse=True)
        return uk[:, None], first, inv.reshape(-1)
    uk, first, inv = np.unique(k2, axis=0, return_index=True, return_inverse=True)
    return uk, first, inv.reshape(-1)
