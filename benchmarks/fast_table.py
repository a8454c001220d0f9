"""Faster full-table evaluation of (swizzled) layouts -- a candidate for threadmap.layout.

Findings (see benchmarks/README.md for the numbers) on where the time of
``sw(layout.table())`` goes for a 2^24-element table:

1. ``Layout.table()`` builds the table with a chain of ``np.add.outer`` calls, one per
   flattened mode.  Every step allocates a fresh temporary; the last two are 2^21 and
   2^24 elements.  Each fresh large array is paid for twice: page faults (first touch of
   64 MiB = 16k 4-KiB pages, or 32 huge pages) and a full pass over memory.
2. ``Swizzle.__call__`` on an array is ``x ^ ((x & yyy) >> S)``: three full passes over
   64 MiB and two extra 64-MiB temporaries -- it costs more than the table itself.
3. int32 vs int64: int64 doubles the memory traffic of every pass; int32 is right
   whenever the bound fits (``Layout.table`` already picks it).

The fix, exact for every layout:

* Split the flattened modes once into an *inner* group (the leading modes, a few
  thousand elements, stays in L1/L2) and an *outer* group.  The table is the 2-D
  broadcast ``outer[:, None] + inner[None, :]`` written straight into the output with
  ``np.add(..., out=...)``: one pass, no temporaries (the small group tables are built
  with the ordinary per-mode broadcast, at negligible cost).
* A swizzle is GF(2)-linear: ``sw(a ^ b) == sw(a) ^ sw(b)``.  When the bits the inner
  group can set and the bits the outer group (plus the offset) can set are disjoint,
  ``a + b == a ^ b`` for every pair, hence
  ``sw(offset + a + b) == sw(offset + a) ^ sw(b)``: swizzle the two *small* vectors and
  write the table with ONE broadcast ``np.bitwise_xor(..., out=...)``.  Every swizzled
  smem layout built from power-of-two atoms (the realistic case) satisfies this for some
  split; the check is two ``bitwise_or.reduce`` on the small vectors.
* Otherwise (non-power-of-two strides, overlapping bits, negative values) fall back to a
  blocked evaluation: compute the sum into an L2-sized block of the output, then apply the
  swizzle in place on that block with one reusable scratch buffer (``out=`` everywhere),
  so the three swizzle passes hit the cache instead of DRAM.
* ``out=``: callers that evaluate many tables of the same size (property tests, sweeps)
  can pass a preallocated buffer and skip the page faults of a fresh 64-MiB array.

Everything here uses only ``+ & ^ >> <<`` on numpy arrays, so it stays inside the
"one evaluation core" rule of DESIGN.md: it is a re-association of the same sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["flat_modes", "table_bound", "layout_table", "swizzle_inplace", "swizzled_table"]

# Inner-group size window (elements): big enough that numpy's inner loop dominates the
# per-call overhead, small enough that the inner vector stays in L1/L2.
_INNER_MIN = 1 << 10
_INNER_MAX = 1 << 15
# Block size of the fallback path (elements): a few hundred KiB, well inside L2.
_BLOCK = 1 << 15


# --------------------------------------------------------------------------- helpers
def _flatten(t: Any) -> tuple:
    if isinstance(t, tuple):
        return tuple(x for m in t for x in _flatten(m))
    return (t,)


def flat_modes(layout: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Flattened (shape, stride) of a layout, with size-1 modes dropped."""
    shp = _flatten(layout.shape)
    std = _flatten(layout.stride)
    if not all(isinstance(d, (int, np.integer)) for d in std):
        raise TypeError("table needs integer strides")
    pairs = [(int(s), int(d)) for s, d in zip(shp, std) if s != 1]
    return tuple(s for s, _ in pairs), tuple(d for _, d in pairs)


def _bounds(shp: Sequence[int], std: Sequence[int], offset: int = 0) -> tuple[int, int]:
    lo = offset + sum(d * (s - 1) for s, d in zip(shp, std) if d < 0)
    hi = offset + sum(d * (s - 1) for s, d in zip(shp, std) if d > 0)
    return lo, hi


def _swizzle_params(sw: Any) -> tuple[int, int, int]:
    return int(sw.bits), int(sw.base), int(sw.shift)


def table_bound(shp: Sequence[int], std: Sequence[int], offset: int = 0,
                swizzle: Any = None) -> tuple[int, int]:
    """[lo, hi] of every value the table can hold (after the swizzle, if any)."""
    lo, hi = _bounds(shp, std, offset)
    if swizzle is not None and lo >= 0:
        b, m, s = _swizzle_params(swizzle)
        # a swizzle only rewrites the zzz field: bits below max(bitlen(hi), top of zzz)
        zzz_top = b + m + max(0, -s)
        hi = max(hi, (1 << max(hi.bit_length(), zzz_top)) - 1)
    return lo, hi


def _pick_dtype(lo: int, hi: int) -> Any:
    return np.int32 if -(2**31) <= lo and hi < 2**31 else np.int64


def _small_table(shp: Sequence[int], std: Sequence[int], dtype: Any, offset: int = 0) -> np.ndarray:
    """Per-mode broadcast sum for a *small* group of modes (colex order, mode 0 fastest)."""
    out = np.full(1, offset, dtype=dtype)
    for s, d in zip(reversed(shp), reversed(std)):  # outermost first, then append faster axes
        v = np.arange(s, dtype=dtype) * dtype(d)
        out = np.add.outer(out, v).reshape(-1)
    return out


def _largest_divisor_at_most(s: int, k: int) -> int:
    best = 1
    i = 1
    while i * i <= s:
        if s % i == 0:
            for f in (i, s // i):
                if best < f <= k:
                    best = f
        i += 1
    return best


def _refine(shp: Sequence[int], std: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Split the mode that crosses the inner-size window: ``(s):(d)`` becomes
    ``(f, s/f):(d, d*f)`` (the same function), so that a prefix of the modes can fill
    the window even when a small mode is followed by a huge one, e.g. ``(4, 2^22)``."""
    out_s: list[int] = []
    out_d: list[int] = []
    n = 1
    for s, d in zip(shp, std):
        if n < _INNER_MAX < n * s:
            f = _largest_divisor_at_most(s, _INNER_MAX // n)
            if 1 < f < s:
                out_s.append(f)
                out_d.append(d)
                n *= f
                s, d = s // f, d * f
        out_s.append(s)
        out_d.append(d)
        n *= s
    return tuple(out_s), tuple(out_d)


def _split(shp: Sequence[int]) -> int:
    """Number of leading (fastest) modes that form the inner group (at least one)."""
    n, p = shp[0], 1
    while p < len(shp) - 1 and n * shp[p] <= _INNER_MAX:
        n *= shp[p]
        p += 1
    return p


def _disjoint_split(shp: Sequence[int], std: Sequence[int], offset: int,
                    dtype: Any) -> tuple[int, np.ndarray, np.ndarray] | None:
    """A split p whose inner values and outer values (+offset) share no bit, or None.

    Splits whose inner group lies in the size window are tried first (smallest first),
    then larger ones; inner groups below the window only as a last resort (they make the
    outer vector, which is materialised, large).
    """
    sizes = np.cumprod(shp[:-1]).tolist()  # inner size of split p = sizes[p-1]
    ps = list(range(1, len(shp)))
    ps.sort(key=lambda p: (0 if _INNER_MIN <= sizes[p - 1] <= _INNER_MAX
                           else 1 if sizes[p - 1] > _INNER_MAX else 2,
                           sizes[p - 1] if sizes[p - 1] >= _INNER_MIN else -sizes[p - 1]))
    total = int(np.prod(shp))
    for p in ps:
        n_in = sizes[p - 1]
        if n_in > _INNER_MAX * 64 or total // n_in > _INNER_MAX * 64:
            continue  # either vector would be too large to be "small"
        inner = _small_table(shp[:p], std[:p], dtype)
        outer = _small_table(shp[p:], std[p:], dtype, offset)
        if int(inner.min()) < 0 or int(outer.min()) < 0:
            continue
        if int(np.bitwise_or.reduce(inner)) & int(np.bitwise_or.reduce(outer)) == 0:
            return p, inner, outer
    return None


def swizzle_inplace(x: np.ndarray, swizzle: Any, scratch: np.ndarray | None = None) -> np.ndarray:
    """``x = sw(x)`` with no temporaries (``scratch``: same shape and dtype, reusable)."""
    b, m, s = _swizzle_params(swizzle)
    yyy = ((1 << b) - 1) << (m + max(0, s))
    if b == 0 or s == 0:
        return x
    t = np.empty_like(x) if scratch is None else scratch
    np.bitwise_and(x, x.dtype.type(yyy), out=t)
    if s > 0:
        np.right_shift(t, x.dtype.type(s), out=t)
    else:
        np.left_shift(t, x.dtype.type(-s), out=t)
    np.bitwise_xor(x, t, out=x)
    return x


# --------------------------------------------------------------------------- entry points
def layout_table(layout: Any, dtype: Any = None, out: np.ndarray | None = None,
                 swizzle: Any = None, offset: int = 0, method: str = "auto") -> np.ndarray:
    """``swizzle(offset + layout(i))`` for every ``i`` in ``[0, size)`` (colex order).

    ``swizzle=None`` gives the plain table.  ``method``: ``"auto"`` (XOR split when it is
    exact, else blocked), ``"xor"`` (raise if not exact), ``"blocked"``.
    ``out``: optional preallocated 1-D array of the right size and dtype.
    """
    shp, std = flat_modes(layout)
    n = int(np.prod(shp)) if shp else 1
    if dtype is None:
        dtype = _pick_dtype(*table_bound(shp, std, offset, swizzle))
    dtype = np.dtype(dtype).type
    if out is None:
        out = np.empty(n, dtype=dtype)
    elif out.shape != (n,) or out.dtype != np.dtype(dtype):
        raise ValueError(f"out must be a 1-D {np.dtype(dtype)} array of {n} elements")
    shp, std = _refine(shp, std)
    if len(shp) <= 1:  # at most _INNER_MAX elements, or a prime-sized single mode
        out[:] = _small_table(shp, std, dtype, offset)
        if swizzle is not None:
            swizzle_inplace(out, swizzle)
        return out

    if swizzle is not None and method in ("auto", "xor"):
        found = _disjoint_split(shp, std, offset, dtype)
        if found is not None:
            p, inner, outer = found
            inner = swizzle_inplace(inner, swizzle)
            outer = swizzle_inplace(outer, swizzle)
            np.bitwise_xor(outer[:, None], inner[None, :],
                           out=out.reshape(outer.size, inner.size))
            return out
        if method == "xor":
            raise ValueError("no split with disjoint bits: the XOR decomposition is not exact")

    p = _split(shp)
    inner = _small_table(shp[:p], std[:p], dtype)
    outer = _small_table(shp[p:], std[p:], dtype, offset)
    out2 = out.reshape(outer.size, inner.size)
    if swizzle is None:
        np.add(outer[:, None], inner[None, :], out=out2)
        return out
    rows = max(1, _BLOCK // inner.size)
    scratch = np.empty((rows, inner.size), dtype=dtype)
    for j in range(0, outer.size, rows):
        blk = out2[j:j + rows]
        np.add(outer[j:j + rows, None], inner[None, :], out=blk)
        swizzle_inplace(blk, swizzle, scratch[: blk.shape[0]])
    return out


def swizzled_table(composed: Any, dtype: Any = None, out: np.ndarray | None = None,
                   method: str = "auto") -> np.ndarray:
    """Full table of a threadmap ``ComposedLayout(swizzle, offset, layout)``."""
    return layout_table(composed.layout_b, dtype=dtype, out=out, swizzle=composed.layout_a,
                        offset=int(composed.offset), method=method)
