"""Aliasing: two coordinates of a destination tensor with one address.

A property of the tensor's layout, not of the grid: :func:`aliasing` decides it by ordered
disjoint strides (injective), by comparing every address of a small tensor, by the histogram
of offsets of a strided layout (each mode a sliding-window sum; entries >= 2 are the aliased
elements), and beyond that with z3 (a pair of coordinates with equal offsets, or a proof that
none exists); an undecided layout is a warning.  The findings belong to grid coverage (two
written elements that are one location).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import threadmap.layout as L
from threadmap.model import CopyModel, KernelModel, SideModel, TensorModel
from threadmap.report.model import Finding
from threadmap.simulate.engine import Simulator
from threadmap.spec.expr import BLOCK_NAMES
from threadmap.verify.util import delinearize, first_active

#: elements of a tensor whose addresses are compared exactly for aliasing
MAX_ALIAS_TABLE = 1 << 23
#: offsets spanned by a strided tensor whose multiplicities are counted exactly for aliasing
MAX_ALIAS_SPAN = 1 << 24
#: how long z3 may look for two aliased coordinates
ALIAS_SOLVER_MS = 10_000


@dataclass(frozen=True)
class Aliasing:
    """Elements of a tensor's domain whose address another element of the domain shares.

    ``count``: how many (exact when ``exact``; otherwise a lower bound, 2 when a pair exists);
    ``pair``: two coordinates with one address, or None; ``decided``: False when neither a pair
    nor injectivity could be established within the limits."""

    count: int
    pair: tuple[tuple[int, ...], tuple[int, ...]] | None
    decided: bool = True
    exact: bool = True


def aliasing(tensor: TensorModel) -> Aliasing:
    """Aliased elements of ``tensor`` (see :class:`Aliasing`).

    Decided, in order: ordered disjoint strides (injective, 0); every address compared for
    tensors up to ``MAX_ALIAS_TABLE`` elements (any layout); for integer strides the
    histogram of offsets, whose entries ``>= 2`` are the aliased elements (exact, for spans up
    to ``MAX_ALIAS_SPAN``), with a pair found by z3; beyond that z3 alone decides whether a
    pair exists (the count is then the lower bound 2).  Otherwise undecided."""
    size = int(np.prod(tensor.shape, dtype=np.int64))
    flat = strided_form(tensor.layout)
    if flat is not None and _disjoint_strides(*flat):
        return Aliasing(0, None)  # injective: no address is shared (what the exact table would find)
    if size <= MAX_ALIAS_TABLE:
        return _alias_table(tensor, size)
    if flat is None:
        return Aliasing(0, None, decided=False)
    shape, strides = flat
    hist = offset_histogram(shape, strides, MAX_ALIAS_SPAN)
    if hist is not None and not hist.max(initial=0) >= 2:
        return Aliasing(0, None)
    found = _alias_pair(shape, strides)
    pair = None
    if isinstance(found, tuple):  # flat coordinates -> the tensor's: one colexicographic index
        a, b = (delinearize(sum(x * m for x, m in zip(c, _colex_strides(shape), strict=True)), tensor.shape)
                for c in found)
        pair = (a, b)
    if hist is not None:
        return Aliasing(int(hist[hist >= 2].sum()), pair)
    if found is False:
        return Aliasing(0, None)  # z3 proved the strides injective on the domain
    if pair is None:
        return Aliasing(0, None, decided=False)
    return Aliasing(2, pair, exact=False)


def _colex_strides(shape: Sequence[int]) -> list[int]:
    out, m = [], 1
    for e in shape:
        out.append(m)
        m *= int(e)
    return out


def strided_form(layout: Any) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``(shape, strides)`` of integers with ``layout(c) = f(sum c_k * d_k)`` over the flattened
    coordinates, ``f`` injective (a swizzle, a constant offset), or None.  Flattening keeps the
    colexicographic order of coordinates, so two elements share an address under ``layout``
    iff they do under the flat strides."""
    if isinstance(layout, L.ComposedLayout):
        if not isinstance(layout.layout_a, L.Swizzle):
            return None
        layout = layout.layout_b
    if not isinstance(layout, L.Layout):
        return None
    shp, std = L.flatten_to_tuple(layout.shape), L.flatten_to_tuple(layout.stride)
    if len(shp) == len(std) and all(isinstance(x, int) and not isinstance(x, bool) for x in (*shp, *std)):
        return tuple(int(e) for e in shp), tuple(int(d) for d in std)
    return None


def _alias_table(tensor: TensorModel, size: int) -> Aliasing:
    """Every element's offset, sorted: groups of equal offsets are the aliased elements."""
    idx = np.arange(size, dtype=np.int64)
    crd = []
    rest = idx
    for e in tensor.shape:
        crd.append(rest % e)
        rest = rest // e
    off = np.asarray(tensor.offsets(crd), dtype=np.int64).reshape(-1)
    order = np.argsort(off, kind="stable")
    so = off[order]
    dup = np.r_[False, so[1:] == so[:-1]]
    grp = dup | np.r_[dup[1:], False]
    count = int(grp.sum())
    if not count:
        return Aliasing(0, None)
    j = int(np.flatnonzero(dup)[0])
    a, b = int(order[j - 1]), int(order[j])
    return Aliasing(count, (delinearize(a, tensor.shape), delinearize(b, tensor.shape)))


def offset_histogram(shape: Sequence[int], strides: Sequence[int], max_span: int) -> np.ndarray | None:
    """``h[v]`` = how many coordinates ``c`` (``0 <= c_k < shape_k``) have ``sum c_k * |d_k| == v``,
    or None when the span ``sum (shape_k - 1) * |d_k|`` reaches ``max_span``.

    Negating a stride reflects its mode (``c_k -> shape_k - 1 - c_k``), which shifts every offset
    by one constant, so the multiplicities are those of the strides' magnitudes.  Each mode is a
    sliding-window sum with step ``|d_k|`` (a strided prefix sum and a difference)."""
    span = sum((int(e) - 1) * abs(int(d)) for e, d in zip(shape, strides, strict=True))
    if span + 1 > max_span:
        return None
    h = np.ones(1, dtype=np.int64)
    for e, d in zip(shape, strides, strict=True):
        e, d = int(e), abs(int(d))
        if e == 1:
            continue
        if d == 0:
            h = h * e
            continue
        n = len(h) + (e - 1) * d
        rows = -(-n // d)
        c = np.zeros(rows * d, dtype=np.int64)
        c[:len(h)] = h
        c = np.cumsum(c.reshape(rows, d), axis=0).reshape(-1)[:n]
        if n > e * d:  # windows that start past the first element: drop what precedes them
            c[e * d:] -= c[:n - e * d].copy()
        h = c
    return h


def _alias_pair(shape: Sequence[int], strides: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]] | None | bool:
    """Two coordinates of the domain with one offset, found by z3; False when z3 proves there
    are none, None when it does not answer in ``ALIAS_SOLVER_MS``."""
    import z3

    c = [z3.Int(f"c{k}") for k in range(len(shape))]
    e = [z3.Int(f"e{k}") for k in range(len(shape))]
    s = z3.Solver()
    s.set("timeout", ALIAS_SOLVER_MS)
    for k, n in enumerate(shape):
        s.add(0 <= c[k], c[k] < int(n), 0 <= e[k], e[k] < int(n))
    s.add(z3.Or([ck != ek for ck, ek in zip(c, e, strict=True)]))
    s.add(z3.Sum([ck * int(d) for ck, d in zip(c, strides, strict=True)])
          == z3.Sum([ek * int(d) for ek, d in zip(e, strides, strict=True)]))
    r = s.check()
    if r == z3.unsat:
        return False
    if r != z3.sat:
        return None
    m = s.model()
    a = tuple(m.eval(x, model_completion=True).as_long() for x in c)
    b = tuple(m.eval(x, model_completion=True).as_long() for x in e)
    mult = _colex_strides(shape)
    return (a, b) if sum(map(operator.mul, a, mult)) < sum(map(operator.mul, b, mult)) else (b, a)


def _disjoint_strides(shape: Sequence[int], strides: Sequence[int] | None) -> bool:
    """The modes' strides, in increasing magnitude, each exceed the span of the smaller ones:
    ``c -> sum c_k * d_k`` is then injective on the tensor's domain."""
    if strides is None or len(strides) != len(shape):
        return False
    modes = sorted((abs(d), e) for e, d in zip(shape, strides, strict=True) if e > 1)
    reach = 0
    for d, e in modes:
        if d <= reach:
            return False
        reach += d * (e - 1)
    return True




# ----------------------------------------------------------------------------- findings


def alias_findings(model: KernelModel, sim: Simulator, side: SideModel, covered: int) -> tuple[int, list[Finding]]:
    """Aliased writes of a destination side (``covered``: how many of its elements are
    written): the count and the findings, with two writers of one address where they are
    found."""
    if side.which != "dst" or side.tensor is None or covered == 0:
        return 0, []
    al = aliasing(side.tensor)
    lay = side.tensor.layout
    if not al.decided:
        return 0, [Finding(check="grid_coverage", kind="aliasing_undecided", stage=side.stage, side=side.which,
                           severity="warning",
                           message=f"whether two elements of {side.name} share an address was not decided: the "
                                   f"layout {lay} is neither small enough to compare every address nor a "
                                   f"strided layout the solver answered for")]
    if not al.count:
        return 0, []
    some = "" if al.exact else "at least "
    if al.pair is None:
        return al.count, [Finding(check="grid_coverage", kind="aliased_write", stage=side.stage, side=side.which,
                                  message=f"{some}{al.count} elements of {side.name} share their address with "
                                          f"another element (the layout {lay} is not injective)")]
    cp = model.stages[side.stage]
    assert isinstance(cp, CopyModel)
    acc = [accessor(model, sim, cp, side, c) for c in al.pair]
    if any(a is None for a in acc):
        c0, c1 = al.pair
        return al.count, [Finding(check="grid_coverage", kind="aliased_write", stage=side.stage, side=side.which,
                                  witness={"first": {"coordinate": c0}, "second": {"coordinate": c1}},
                                  message=f"{side.name}{c0} and {side.name}{c1} are the same address (the layout "
                                          f"{lay} is not injective; {some}{al.count} elements share an address)")]
    a, b = acc
    assert a is not None and b is not None
    return al.count, [Finding(check="grid_coverage", kind="aliased_write", stage=side.stage, side=side.which,
                              witness={"coordinate": a["coordinate"], "address": a["address"], "first": a, "second": b},
                              message=f"{side.name}{a['coordinate']} and {side.name}{b['coordinate']} are the same "
                                      f"address {a['address']} (the layout {lay} is not injective; {some}{al.count} "
                                      f"elements share an address): block {a['block']} thread {a['thread']} and "
                                      f"block {b['block']} thread {b['thread']} both write it")]


def accessor(model: KernelModel, sim: Simulator, cp: CopyModel, side: SideModel,
              coord: tuple[int, ...]) -> dict[str, Any] | None:
    """An active access of ``coord`` on ``side``: its block found from the tile coordinates
    (affine case) or by search."""
    cand: list[int] = []
    if side.at_affine is not None and all(len(f.coef) <= 1 for f in side.at_affine):
        point = dict.fromkeys(BLOCK_NAMES, 0)
        ok = True
        for k, form in enumerate(side.at_affine):
            p = coord[k] // side.tile[k]
            if form.coef:
                v, a = next(iter(form.coef.items()))
                if (p - form.const) % a:
                    ok = False
                    break
                point[v] = (p - form.const) // a
            elif p != form.const:
                ok = False
        gx, gy, gz = model.grid
        if ok and 0 <= point["bx"] < gx and 0 <= point["by"] < gy and 0 <= point["bz"] < gz:
            cand = [point["bx"] + gx * (point["by"] + gy * point["bz"])]
    elif side.at is None:
        cand = [0]
    blocks = np.asarray(cand, dtype=np.int64) if cand else np.arange(min(model.num_blocks, 4096))
    return first_active(sim, cp, side, blocks, coord)
