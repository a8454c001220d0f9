"""The grid cut into classes of blocks that behave alike (the tiling argument's classes).

:class:`BlockClasses` gives the representatives of every check: per class the first block and
its neighbour along each block coordinate (blocks of one class differ by a translation; any
property affine in the block coordinates is constant over the class iff it is equal on those),
and, for the address-dependent checks of a global side with an affine layout, one block per
residue of its tile's byte address modulo 128 (sector and line counts and alignment are
invariant under shifts by multiples of 128 bytes).  Its premise: every global side's tile
coordinate ``at_k`` is an affine function of one block coordinate (``bx``, ``2 * bz``,
``by + 1``; several modes never share one); a class is a box of blocks whose tiles sit alike
relative to the tensor's edges (inside, on the last partial tile, outside).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from threadmap import hardware as hw
from threadmap.model import KernelModel, SideModel
from threadmap.spec.expr import BLOCK_NAMES


@dataclass(frozen=True)
class BlockClasses:
    """The grid cut into boxes whose blocks behave alike for every side (see module doc)."""

    grid: tuple[int, int, int]
    intervals: dict[str, list[tuple[int, int]]]  # per block coordinate: inclusive [lo, hi] pieces

    @staticmethod
    def of(model: KernelModel) -> BlockClasses | None:
        """The classes, or None when a global side's tile coordinates are not separable affine
        functions of the block coordinates."""
        cuts: dict[str, set[int]] = {v: {0, g} for v, g in zip(BLOCK_NAMES, model.grid, strict=True)}
        for side in model.sides():
            if side.memory != "global" or side.at is None:
                continue
            if side.at_affine is None:
                return None
            used: set[str] = set()
            for k, form in enumerate(side.at_affine):
                if len(form.coef) > 1:
                    return None
                if not form.coef:
                    continue
                v, a = next(iter(form.coef.items()))
                if v in used:
                    return None
                used.add(v)
                g = model.grid[BLOCK_NAMES.index(v)]
                T, E = side.tile[k], side.shape[k]
                full = E // T
                for lo_p, hi_p in ((0, full - 1), (full, full if E % T else full - 1)):
                    if hi_p < lo_p:
                        continue
                    lo_b, hi_b = _solve(form.const, a, lo_p, hi_p)
                    for x in (lo_b, hi_b + 1):
                        if 0 < x < g:
                            cuts[v].add(x)
        iv = {}
        for v in BLOCK_NAMES:
            pts = sorted(cuts[v])
            iv[v] = [(pts[i], pts[i + 1] - 1) for i in range(len(pts) - 1)]
        return BlockClasses(model.grid, iv)

    def boxes(self) -> list[dict[str, tuple[int, int]]]:
        names = list(BLOCK_NAMES)
        return [dict(zip(names, combo, strict=True))
                for combo in itertools.product(*(self.intervals[v] for v in names))]

    def block_id(self, point: dict[str, int]) -> int:
        gx, gy, _ = self.grid
        return point["bx"] + gx * (point["by"] + gy * point["bz"])

    def representatives(self) -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
        """(block ids, weights, groups): per box its first block and the next one along each
        block coordinate; weights sum to the box's size; ``groups`` lists each box's
        representatives (their per-block counts must agree for the argument to hold)."""
        ids: list[int] = []
        wts: list[int] = []
        groups: list[list[int]] = []
        for box in self.boxes():
            size = int(np.prod([hi - lo + 1 for lo, hi in box.values()]))
            first = {v: lo for v, (lo, _) in box.items()}
            extra = []
            for v, (lo, hi) in box.items():
                if hi > lo:
                    extra.append(self.block_id({**first, v: lo + 1}))
            ids.append(self.block_id(first))
            wts.append(size - len(extra))
            ids += extra
            wts += [1] * len(extra)
            groups.append([self.block_id(first), *extra])
        return np.asarray(ids, dtype=np.int64), np.asarray(wts, dtype=np.int64), groups

    def residue_representatives(self, model: KernelModel, side: SideModel) -> tuple[np.ndarray, np.ndarray] | None:
        """(block ids, weights) with one block per box and residue of the side's tile byte
        address modulo 128 (its bit address modulo 1024); None when the side's layout or tile
        coordinates are not affine."""
        tensor = side.tensor
        if tensor is None or tensor.strides is None or (side.at is not None and side.at_affine is None):
            return None
        alpha = dict.fromkeys(BLOCK_NAMES, 0)
        for k, form in enumerate(side.at_affine or ()):
            for v, a in form.coef.items():
                alpha[v] += a * side.tile[k] * tensor.strides[k] * tensor.elem_bits
        beta = model.origins(side, np.zeros(1, dtype=np.int64))[0]
        # in bits: a sub-byte tile's start is a bit address (equal residues modulo a line's
        # bits shift every byte address by whole lines, as residues of bytes do for wider types)
        base = tensor.base * 8 + (tensor.offset + int(sum(int(o) * d for o, d in zip(beta, tensor.strides)))) \
            * tensor.elem_bits
        L = hw.LINE_BYTES * 8
        ids: list[int] = []
        wts: list[int] = []
        for box in self.boxes():
            # per residue mod L: (count, example point)
            acc: dict[int, tuple[int, dict[str, int]]] = {base % L: (1, {})}
            for v in BLOCK_NAMES:
                lo, hi = box[v]
                per = _residues(alpha[v], lo, hi, L)
                nxt: dict[int, tuple[int, dict[str, int]]] = {}
                for r0, (c0, p0) in acc.items():
                    for r1, (c1, b1) in per.items():
                        r = (r0 + r1) % L
                        c, p = nxt.get(r, (0, {**p0, v: b1}))
                        nxt[r] = (c + c0 * c1, p)
                acc = nxt
            for _, (c, p) in sorted(acc.items()):
                ids.append(self.block_id(p))
                wts.append(c)
        return np.asarray(ids, dtype=np.int64), np.asarray(wts, dtype=np.int64)


def _solve(c: int, a: int, lo_p: int, hi_p: int) -> tuple[int, int]:
    """Integer ``b`` with ``lo_p <= c + a*b <= hi_p`` (``a != 0``): an inclusive range."""
    if a > 0:
        return -(-(lo_p - c) // a), (hi_p - c) // a
    return -(-(hi_p - c) // a), (lo_p - c) // a


def _residues(alpha: int, lo: int, hi: int, m: int) -> dict[int, tuple[int, int]]:
    """``{alpha * b mod m: (how many b in [lo, hi], the first such b)}``."""
    n = hi - lo + 1
    period = m // np.gcd(alpha % m, m) if alpha % m else 1
    out: dict[int, tuple[int, int]] = {}
    for j in range(min(period, n)):
        b = lo + j
        cnt = (n - j + period - 1) // period
        r = (alpha * b) % m
        prev = out.get(r)
        out[r] = (cnt + (prev[0] if prev else 0), prev[1] if prev else b)
    return out



def multiplicity(model: KernelModel, side: SideModel) -> tuple[int, list[str]]:
    """How many blocks visit each tile of ``side`` (the product of the extents of the block
    coordinates its tile coordinates do not use), and those coordinates."""
    used = set()
    for form in side.at_affine or ():
        used |= set(form.coef)
    unused = [v for v, g in zip(BLOCK_NAMES, model.grid, strict=True) if v not in used and g > 1]
    m = 1
    for v in unused:
        m *= model.grid[BLOCK_NAMES.index(v)]
    return m, unused


