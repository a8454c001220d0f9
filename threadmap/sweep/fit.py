"""A CuTe form of a shared-memory layout known only by its offsets.

CUTLASS 2.x shared layouts (``TensorOpMultiplicandCongruous``, ``...Crosswise``, a padded
``ColumnMajor``) are not CuTe layouts: the sweep prints the offset of every cell of a tile
from the real C++ object, and this module looks for a spec layout with exactly those
offsets, ``Sw<B,M,S> o L`` (the swizzle on offsets, as a spec's shared tensor reads it) with
``L`` a plain layout over the tile's modes.  A swizzle with ``S >= B`` is an involution, so
``L``'s offsets are the table swizzled once more, and ``L`` exists iff those offsets are a sum
of one stride per bit of each coordinate (a mode of odd extent keeps one stride).  Where no
single swizzle does, the offsets of a power-of-two tile may still be an XOR of one value per
coordinate bit: a plain layout under several commuting swizzles (``Sw o Sw o L``; the 64-bit
crosswise layouts XOR an element bit and a chunk bit from different row bits).

A multistage crosswise buffer puts a stage's rows ``kK x kStages`` elements apart, and its
swizzle reads the row index, not the offset's bits (for 3 stages the row's bits are not bits
of the offset at all).  Its form is ``(P,R):(1,Q) o Sw<B,M,S> o L``: the swizzled layout of
rows of ``P`` elements, the rows then placed ``Q`` apart.

Every candidate found is evaluated by threadmap's own layout engine on every cell and kept
only if each offset is the C++ one; none found is a reason, not a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from threadmap.layout import coalesce, parse_layout
from threadmap.layout.layout import Layout
from threadmap.layout.swizzle import Swizzle

#: the swizzles tried: the bits a TensorOp multiplicand layout XORs (16-byte chunks of 8 to
#: 128-bit elements within 1024-byte rows) lie well inside these ranges
MAX_B, MAX_M, MAX_S = 4, 8, 12


@dataclass(frozen=True)
class Fit:
    """A spec layout with the table's offsets, or why there is none."""

    layout: str | None
    reason: str = ""


def _mode_factors(n: int) -> list[int]:
    """An extent as its factors of two, then the odd rest: 24 -> [2, 2, 2, 3]."""
    out: list[int] = []
    while n % 2 == 0 and n > 1:
        out.append(2)
        n //= 2
    if n > 1:
        out.append(n)
    return out


def _additive(g: np.ndarray) -> Layout | None:
    """The plain layout over ``g``'s modes (column-major coordinates, one stride per factor of
    each extent) whose offsets are ``g``, if there is one."""
    rows, cols = g.shape
    shapes = (_mode_factors(rows), _mode_factors(cols))
    strides: list[list[int]] = [[], []]
    pred = np.zeros_like(g)
    for mode, fac in enumerate(shapes):
        step = 1
        for f in fac:
            idx = np.arange(rows if mode == 0 else cols)
            digit = (idx // step) % f
            d = int(g[step, 0] if mode == 0 else g[0, step]) - int(g[0, 0])
            strides[mode].append(d)
            pred += (digit[:, None] if mode == 0 else digit[None, :]) * d
            step *= f
    if int(g[0, 0]) != 0 or not np.array_equal(pred, g):
        return None

    (s0, d0), (s1, d1) = _mode(shapes[0], strides[0]), _mode(shapes[1], strides[1])
    return Layout((s0, s1), (d0, d1))


def _mode(fac: list[int], std: list[int]) -> tuple[object, object]:
    """One mode of a layout from its factors and strides (an extent of 1: ``1:0``)."""
    if not fac:
        return 1, 0
    if len(fac) == 1:
        return fac[0], std[0]
    return tuple(fac), tuple(std)


def _candidates(top: int) -> list[tuple[int, int, int]]:
    """Swizzles whose bits lie below ``top`` (bits of the largest offset): none first."""
    out = [(0, 0, 0)]
    for b in range(1, MAX_B + 1):
        for m in range(MAX_M + 1):
            for s in range(b, MAX_S + 1):
                if m + s + b <= top:
                    out.append((b, m, s))
    return out


def fit_layout(table: np.ndarray) -> Fit:
    """A spec layout (text) whose offset at every cell ``(r, c)`` is ``table[r, c]``."""
    t = np.asarray(table, dtype=np.int64)
    if t.ndim != 2 or t.size == 0:
        return Fit(None, f"a shared layout table of shape {t.shape} is not a 2-D tile")
    if int(t.min()) < 0:
        return Fit(None, "the shared layout has negative offsets")
    if np.unique(t).size != t.size:
        return Fit(None, "the shared layout maps two cells of the tile to one offset")
    text = _swizzled(t)
    if text is not None:
        return Fit(text)
    # a multistage buffer whose rows are kStages tiles apart (a crosswise layout's pitch is
    # kK x kStages): the swizzle acts inside one stage's rows of P elements, Q apart in memory
    for p in (1 << k for k in range(3, int(t.max()).bit_length())):
        above = t[t >= p]
        if above.size == 0:
            break
        q = int(above.min()) // p * p
        if q <= p or np.any(t % q >= p):
            continue
        inner = _swizzled(t % q + p * (t // q))
        if inner is None:
            continue
        rows = int(t.max()) // q + 1
        text = f"({p},{rows}):(1,{q}) o {inner}"
        if _evaluates_to(text, t):
            return Fit(text)
    return Fit(None, "no plain layout under one swizzle of offsets (Sw<B,M,S> o L), nor one inside rows "
                     "spread apart ((P,R):(1,Q) o Sw<B,M,S> o L), has these offsets")


def _swizzled(t: np.ndarray) -> str | None:
    """``Sw<B,M,S> o L`` (or ``L``), else commuting swizzles ``Sw o Sw o ... o L``, with
    exactly the offsets ``t``, if one exists."""
    top = int(t.max()).bit_length()
    for b, m, s in _candidates(top):
        g = t if b == 0 else Swizzle(b, m, s)(t)
        lay = _additive(g)
        if lay is None:
            continue
        text = str(coalesce(lay, (1, 1)))
        if b:
            text = f"Sw<{b},{m},{s}> o {text}"
        if _evaluates_to(text, t):
            return text
    chain = _xor_chain(t)
    return chain if chain is not None and _evaluates_to(chain, t) else None


def _xor_chain(t: np.ndarray) -> str | None:
    """Offsets that are an XOR of one value per index bit (a power-of-two tile): each bit's
    highest offset bit is where a plain layout puts it, its lower bits are XORed in from that
    bit.  When no bit is both XORed from and into, the XORs commute and are CuTe swizzles
    (single-bit ones merged where they line up: ``Sw<B,M,S>`` moves B bits by S).  The 64-bit
    crosswise layouts need two (an element bit and a chunk bit)."""
    rows, cols = t.shape
    if rows & (rows - 1) or cols & (cols - 1) or int(t[0, 0]) != 0:
        return None
    basis: list[tuple[int, int, int]] = []  # (mode, index bit, value)
    for mode, n in ((0, rows), (1, cols)):
        for i in range(n.bit_length() - 1):
            basis.append((mode, i, int(t[1 << i, 0] if mode == 0 else t[0, 1 << i])))
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    pred = np.zeros_like(t)
    for mode, i, v in basis:
        bit = ((r if mode == 0 else c) >> i) & 1
        pred ^= bit * v
    if not np.array_equal(pred, t) or any(v <= 0 for _, _, v in basis):
        return None
    high = [v.bit_length() - 1 for _, _, v in basis]
    if len(set(high)) != len(high):
        return None
    pairs = sorted({(h - lo, lo) for (_, _, v), h in zip(basis, high, strict=True)
                    for lo in range(h) if v >> lo & 1})
    sources = {lo + s for s, lo in pairs}
    if not pairs or sources & {lo for _, lo in pairs}:
        return None
    swizzles: list[tuple[int, int, int]] = []  # (B, M, S), runs of one shift on consecutive bits
    for s, lo in pairs:
        if swizzles and swizzles[-1][2] == s and swizzles[-1][1] + swizzles[-1][0] == lo and swizzles[-1][0] < s:
            b, m, _ = swizzles[-1]
            swizzles[-1] = (b + 1, m, s)
        else:
            swizzles.append((1, lo, s))
    shapes: tuple[list[int], list[int]] = ([], [])
    strides: tuple[list[int], list[int]] = ([], [])
    for (mode, _, _), h in zip(basis, high, strict=True):
        shapes[mode].append(2)
        strides[mode].append(1 << h)
    (s0, d0), (s1, d1) = _mode(shapes[0], strides[0]), _mode(shapes[1], strides[1])
    text = str(coalesce(Layout((s0, s1), (d0, d1)), (1, 1)))
    return " o ".join([*(f"Sw<{b},{m},{s}>" for b, m, s in swizzles), text])


def _evaluates_to(text: str, table: np.ndarray) -> bool:
    """Whether threadmap's layout engine gives ``table`` for ``text`` on every cell."""
    lay = parse_layout(text)
    rows, cols = table.shape
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    got = np.asarray(lay((r.reshape(-1), c.reshape(-1))), dtype=np.int64).reshape(rows, cols)
    return bool(np.array_equal(got, table))
