"""Small vectorised helpers shared by the checks (grouping, witnesses, linearisation)."""

from __future__ import annotations

from typing import Any

import numpy as np

from threadmap.simulate.access import AccessTable


def row_witness(t: AccessTable, i: int, **extra: Any) -> dict[str, Any]:
    """The witness dict of row ``i`` of table ``t``."""
    th = int(t.thread[i])
    w: dict[str, Any] = {
        "block": int(t.block[i]), "thread": th, "step": int(t.step[i]), "value": int(t.value[i]),
        "lane": int(t.lane[i]), "warp_lane": th % 32,
        "coordinate": tuple(int(c) for c in np.atleast_1d(t.coord[i])),
        "address": int(t.addr[i]), "predicate": bool(t.pred[i]),
    }
    w.update(extra)
    return w


def coords2d(t: AccessTable) -> np.ndarray:
    """``t.coord`` as an (n, R) int64 array."""
    c = np.asarray(t.coord)
    if c.ndim == 1:
        c = c[:, None]
    return c.astype(np.int64, copy=False)


def in_bounds(coord: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Rows of ``coord`` (n, R) inside ``[0, shape)`` in every mode (one unsigned compare per mode)."""
    ok: np.ndarray | None = None
    for i, e in enumerate(shape):
        m = np.less(coord[:, i].view(np.uint64), np.uint64(e))
        ok = m if ok is None else np.logical_and(ok, m, out=ok)
    return np.ones(coord.shape[0], dtype=bool) if ok is None else ok


def all_in_bounds(coord: np.ndarray, shape: tuple[int, ...]) -> bool:
    """Whether every row of ``coord`` is inside ``[0, shape)`` (min/max per column)."""
    if coord.shape[0] == 0:
        return True
    if coord.flags.c_contiguous:   # quick sufficient test on the flat array (SIMD reductions)
        flat = coord.reshape(-1)
        if int(flat.min()) >= 0 and int(flat.max()) < min(shape):
            return True
    for i, e in enumerate(shape):
        col = coord[:, i]
        if int(col.min()) < 0 or int(col.max()) >= e:
            return False
    return True


def linearize(coord: np.ndarray, shape: tuple[int, ...], out: np.ndarray | None = None) -> np.ndarray:
    """Colexicographic (mode 0 fastest) linear index of in-range coordinates.

    ``out``: an int64 scratch array of at least ``n`` entries to write into (avoids
    allocating, and page-faulting, a fresh array per chunk).
    """
    R = len(shape)
    n = coord.shape[0]
    idx = np.empty(n, dtype=np.int64) if out is None or out.size < n else out[:n]
    if R == 0:
        idx[:] = 0
        return idx
    mul = int(np.prod(shape[:-1], dtype=np.int64)) if R > 1 else 1
    np.multiply(coord[:, R - 1], mul, out=idx)
    for i in range(R - 2, -1, -1):
        mul //= int(shape[i])
        if mul == 1:
            np.add(idx, coord[:, i], out=idx)
        else:
            np.add(idx, coord[:, i] * mul, out=idx)
    return idx


def delinearize(idx: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Inverse of :func:`linearize` for one index."""
    out = []
    for e in shape:
        out.append(int(idx % e))
        idx //= e
    return tuple(out)


def group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Start positions of runs of equal values in a sorted key array."""
    if sorted_keys.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])


def dense_ids(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unique keys, inverse ids) -- ids numbering the distinct keys 0..k-1 in sorted order."""
    u, inv = np.unique(keys, return_inverse=True)
    return u, inv.reshape(-1)


def access_rows(t: AccessTable) -> np.ndarray:
    """Boolean mask of the first row of every vector access (``lane == 0``).

    Falls back to "first row of each (block, thread, step) run" if lane 0 is absent.
    """
    first = np.asarray(t.lane) == 0
    return first


def first_false(mask: np.ndarray, k: int, chunk: int = 1 << 22) -> list[int]:
    """Indices of the first ``k`` false entries of a (possibly huge) boolean array."""
    out: list[int] = []
    for s in range(0, mask.size, chunk):
        part = mask[s:s + chunk]
        if part.all():
            continue
        out.extend(int(s + i) for i in np.flatnonzero(~part)[: k - len(out)])
        if len(out) >= k:
            break
    return out


def distinct_pairs(group: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (group, val) pairs, sorted by group then val, as two arrays."""
    group = np.asarray(group, dtype=np.int64)
    val = np.asarray(val, dtype=np.int64)
    if group.size == 0:
        return group, val
    vmin, vmax = int(val.min()), int(val.max())
    gmax = int(group.max())
    span = vmax - vmin + 1
    if int(group.min()) >= 0 and gmax < (1 << 62) // max(span, 1):
        u = np.unique(group * span + (val - vmin))
        return u // span, u % span + vmin
    order = np.lexsort((val, group))
    g, v = group[order], val[order]
    new = np.r_[True, (g[1:] != g[:-1]) | (v[1:] != v[:-1])]
    return g[new], v[new]


def count_per_group(sorted_groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct groups, run length of each) of a sorted array."""
    st = group_starts(sorted_groups)
    return sorted_groups[st], np.diff(np.r_[st, sorted_groups.size])


def access_groups(t: AccessTable) -> np.ndarray | None:
    """Row index matrix (n_access, vec) when rows come in whole vectors (lane 0..vec-1), else None."""
    k = int(t.vec)
    n = len(t)
    if k < 1 or n % k:
        return None
    lanes = np.asarray(t.lane).reshape(-1, k)
    if not (lanes == np.arange(k)).all():
        return None
    return np.arange(n).reshape(-1, k)


def start_check(check: str, tables: Any, memory: str, what: str) -> tuple[list[AccessTable], Any]:
    """Chunks of one side and a fresh result; the result is already a SKIP (returned as the
    second item with no chunks) when there are no tables or the memory kind does not apply."""
    from threadmap.verify.result import CheckResult

    chunks = [tables] if isinstance(tables, AccessTable) else list(tables)
    if not chunks:
        return [], CheckResult(check, None, None, "SKIP", {"reason": "no tables"})
    t0 = chunks[0]
    res = CheckResult(check, t0.stage, t0.side, "PASS")
    if t0.memory != memory:
        res.status = "SKIP"
        res.summary = {"reason": f"{t0.memory} memory: {what} applies to {memory} memory"}
        return [], res
    return chunks, res

