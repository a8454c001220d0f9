"""Full value tables of layouts (optionally swizzled): the numpy backend's fast path.

``fast_table(layout, sw, offset)`` computes ``sw(offset + layout(i))`` for every ``i`` at
memory speed: broadcast sums of small per-group tables written straight into one output
array, with the swizzle applied through its GF(2)-linearity where the groups' bits are
disjoint.  See benchmarks/ for measurements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from threadmap.errors import LayoutError
from threadmap.layout.int_tuple import check_int_tuple, flatten_to_tuple, is_int
from threadmap.layout.swizzle import Swizzle

_BLOCK = 1 << 15      # elements per block: fits L1/L2 with its scratch
_INNER_MAX = 1 << 14  # target size of the inner (fastest) group of modes


def _small_table(shp: Sequence[int], std: Sequence[int], dtype: Any, start: int = 0) -> np.ndarray:
    out = np.full(1, start, dtype=dtype)
    for s, d in zip(reversed(shp), reversed(std), strict=True):
        out = np.add.outer(out, np.arange(s, dtype=dtype) * dtype(d)).reshape(-1)
    return out


def _split_modes(shp: list[int], std: list[int]) -> tuple[list[int], list[int]]:
    """Split a mode crossing ``_INNER_MAX`` into ``(f, s/f):(d, d*f)`` (same function)."""
    out_s: list[int] = []
    out_d: list[int] = []
    n = 1
    for s, d in zip(shp, std, strict=True):
        if n < _INNER_MAX < n * s:
            lim = _INNER_MAX // n
            f = max((k for k in range(1, min(s, lim) + 1) if s % k == 0), default=1)
            if 1 < f < s:
                out_s.append(f)
                out_d.append(d)
                n *= f
                s, d = s // f, d * f
        out_s.append(s)
        out_d.append(d)
        n *= s
    return out_s, out_d


def fast_table(layout: Any, sw: Swizzle | None = None, offset: int = 0, dtype: Any = None,
               out: np.ndarray | None = None) -> np.ndarray:
    """``sw(offset + layout(i))`` for every ``i < size(layout)`` (colex order).

    The flattened modes are split into an inner group (the fastest, <= 2^14 elements) and
    an outer group.  When the two groups set disjoint bits (every power-of-two smem
    layout), ``sw(outer + inner) == sw(outer) ^ sw(inner)`` (a swizzle is GF(2)-linear)
    and the table is one broadcast XOR written into ``out``.  Otherwise each block of
    rows is written as the broadcast sum ``outer[j:k, None] + inner[None, :]`` directly
    into ``out`` and the swizzle applied to the block in place with one reusable scratch.
    Law: ``fast_table(l, sw, o)[i] == sw(o + l(i))``; dtype int32 when every value fits.
    """
    # any shape:stride pair of int tuples (a Layout; this module sits below layout.py)
    shape, stride = getattr(layout, "shape", None), getattr(layout, "stride", None)
    if not isinstance(shape, (int, tuple)) or not isinstance(stride, (int, tuple)):
        raise LayoutError(f"fast_table needs a Layout, got {layout!r}")
    check_int_tuple(shape, "int", "fast_table shape")
    if sw is not None and not isinstance(sw, Swizzle):
        raise LayoutError(f"fast_table: {sw!r} is not a Swizzle")
    if not is_int(offset):
        raise LayoutError(f"fast_table: offset {offset!r} is not an integer")
    if not all(is_int(d) for d in flatten_to_tuple(layout.stride)):
        raise LayoutError("table() needs integer strides")
    pairs = [(int(s), int(d)) for s, d in zip(flatten_to_tuple(layout.shape),
                                             flatten_to_tuple(layout.stride), strict=True)
             if s != 1]
    if not all(is_int(d) for d in flatten_to_tuple(layout.stride)):
        raise LayoutError("table() needs integer strides")
    shp = [p[0] for p in pairs]
    std = [p[1] for p in pairs]
    n = 1
    for s in shp:
        n *= s
    lo = offset + sum(d * (s - 1) for s, d in pairs if d < 0)
    hi = offset + sum(d * (s - 1) for s, d in pairs if d > 0)
    if sw is not None and sw.bits:
        if lo < 0:
            raise LayoutError(f"swizzled table: negative offsets ({lo}) reach the swizzle")
        hi = max(hi, (1 << max(hi.bit_length(), sw.nbits)) - 1)
    if dtype is None:
        dtype = np.int32 if -(2**31) <= lo and hi < 2**31 else np.int64
    try:
        dtype = np.dtype(dtype).type
    except TypeError:
        raise LayoutError(f"fast_table: {dtype!r} is not a numpy dtype") from None
    if not np.issubdtype(dtype, np.integer):
        raise LayoutError(f"fast_table: the dtype must be an integer type, got {dtype!r}")
    if out is None:
        out = np.empty(n, dtype=dtype)
    elif out.shape != (n,) or out.dtype != np.dtype(dtype):
        raise ValueError(f"out must be a 1-D {np.dtype(dtype)} array of {n} elements")
    shp, std = _split_modes(shp, std)
    p, ninner = 0, 1
    while p < len(shp) and ninner * shp[p] <= _INNER_MAX:
        ninner *= shp[p]
        p += 1
    if p == len(shp) or len(shp) <= 1:
        out[:] = _small_table(shp, std, dtype, offset)
        if sw is not None:
            sw.apply_inplace(out)
        return out
    if p == 0:  # a huge prime-sized mode first: no inner group
        p, ninner = 0, 1
    inner = _small_table(shp[:p], std[:p], dtype)
    outer = _small_table(shp[p:], std[p:], dtype, offset)
    out2 = out.reshape(outer.size, ninner)
    if sw is None or sw.bits == 0:
        np.add(outer[:, None], inner[None, :], out=out2)
        return out
    if (int(inner.min()) >= 0 and int(outer.min()) >= 0
            and int(np.bitwise_or.reduce(inner)) & int(np.bitwise_or.reduce(outer)) == 0):
        # disjoint bits: a + b == a ^ b and the swizzle is GF(2)-linear, so
        # sw(outer + inner) == sw(outer) ^ sw(inner): one broadcast pass, no scratch
        sw.apply_inplace(inner)
        sw.apply_inplace(outer)
        np.bitwise_xor(outer[:, None], inner[None, :], out=out2)
        return out
    rows = max(1, _BLOCK // ninner)
    scratch = np.empty((rows, ninner), dtype=dtype)
    for j in range(0, outer.size, rows):
        blk = out2[j:j + rows]
        np.add(outer[j:j + rows, None], inner[None, :], out=blk)
        sw.apply_inplace(blk, scratch[: blk.shape[0]])
    return out


