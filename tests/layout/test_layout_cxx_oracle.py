"""threadmap's CuTe layout algebra against the real CuTe headers (compiled with nvcc).

A fixed-seed generator builds batches of random *valid* cases for every algebra operation
(cases that threadmap rejects with a LayoutError are dropped: a static_assert in the
header would stop the whole program from compiling).  All cases go into a few host
programs; each case prints ``ID<TAB>result`` and the results are compared with threadmap
structurally (``str(parsed) == str(ours)``: the same shape/stride trees) and by value
tables (both layouts evaluated over every index).

Run: ``python -m pytest tests/layout/test_layout_cxx_oracle.py -q`` (about 1-3 minutes of nvcc the
first time; binaries are cached under ``.cxx_cache/``).
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

import threadmap.layout as tl
from tests.support.cxx_oracle import CACHE, PRELUDE, rejected_by_header, require_oracle, run_cxx
from threadmap.errors import LayoutError
from threadmap.gpu.cxx import cxx_coord, cxx_layout, cxx_step, cxx_tiler, cxx_value
from threadmap.layout import (
    ArithTuple,
    GenRowMajor,
    Layout,
    LayoutLeft,
    ScaledBasis,
    Tensor,
    _,
    parse_int_tuple,
    parse_layout,
)
from threadmap.layout.int_tuple import product_each, wrap

SEED = 20240611
# ~0.2-0.4 s of nvcc per case: the default keeps the first (uncached) run near 2 minutes on
# two cores.  THREADMAP_CXX_PER_OP=40 runs the full-size batch (about 1300 cases).
PER_OP = int(os.environ.get("THREADMAP_CXX_PER_OP", "12"))
N_PROGRAMS = 2

# --------------------------------------------------------------------------- random inputs
LEAVES = [1, 2, 2, 3, 4, 4, 6, 8]


def unflatten(flat: list[Any], profile: Any) -> Any:
    it = iter(flat)

    def rec(p: Any) -> Any:
        if isinstance(p, tuple):
            return tuple(rec(x) for x in p)
        return next(it)

    return rec(profile)


def leaves(t: Any) -> list[Any]:
    if isinstance(t, tuple):
        return [x for m in t for x in leaves(m)]
    return [t]


def r_shape(rng: random.Random, rank_lo: int = 1, rank_hi: int = 3, nest: float = 0.3,
            cap: int = 256, vals: list[int] | None = None) -> Any:
    vals = vals or LEAVES
    while True:
        r = rng.randint(rank_lo, rank_hi)
        modes: list[Any] = []
        for _i in range(r):
            if rng.random() < nest:
                modes.append(tuple(rng.choice(vals) for _j in range(rng.randint(1, 3))))
            else:
                modes.append(rng.choice(vals))
        shp: Any = tuple(modes) if (r > 1 or rng.random() < 0.3) else modes[0]
        if tl.size(shp) <= cap:
            return shp


def r_ordered_strides(rng: random.Random, shp: Any, gaps: bool = True, zeros: float = 0.0,
                      neg: float = 0.0) -> Any:
    """Strides of a compact layout in a random mode order, optionally with gaps/zeros."""
    fl = leaves(shp)
    order = list(range(len(fl)))
    rng.shuffle(order)
    strides = [0] * len(fl)
    cur = 1
    for i in order:
        if gaps and rng.random() < 0.3:
            cur *= rng.choice([2, 3])
        strides[i] = cur
        cur *= fl[i]
    for i in range(len(fl)):
        if rng.random() < zeros:
            strides[i] = 0
        if rng.random() < neg:
            strides[i] = -strides[i]
    return unflatten(strides, shp)


def r_any_strides(rng: random.Random, shp: Any, neg: bool = False) -> Any:
    pool = [0, 1, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
    fl = [rng.choice(pool) * (rng.choice([1, -1]) if neg else 1) for _x in leaves(shp)]
    return unflatten(fl, shp)


def r_layout(rng: random.Random, kind: str = "mixed", **kw: Any) -> Layout:
    shp = r_shape(rng, **kw)
    if kind == "mixed":
        kind = rng.choice(["left", "right", "ordered", "ordered", "any"])
    if kind == "left":
        return Layout(shp)
    if kind == "right":
        return Layout(shp, GenRowMajor)
    if kind == "ordered":
        return Layout(shp, r_ordered_strides(rng, shp, zeros=0.1))
    if kind == "injective":
        return Layout(shp, r_ordered_strides(rng, shp))
    if kind == "compact":
        return Layout(shp, r_ordered_strides(rng, shp, gaps=False))
    if kind == "neg":
        return Layout(shp, r_ordered_strides(rng, shp, zeros=0.1, neg=0.3))
    return Layout(shp, r_any_strides(rng, shp))


def profile_of(t: Any) -> Any:
    return tuple(profile_of(x) for x in t) if isinstance(t, tuple) else 0


def r_tiler_elem(rng: random.Random, extent: int) -> Any:
    """A tiler for one mode of the given extent: an int, a small layout, or ``_``."""
    divs = [d for d in range(1, extent + 1) if extent % d == 0]
    c = rng.random()
    if c < 0.1:
        return _
    if c < 0.55:
        return rng.choice(divs)
    shp = rng.choice(divs)
    if shp > 1 and rng.random() < 0.4:
        a = rng.choice([d for d in range(1, shp + 1) if shp % d == 0])
        shp = (a, shp // a)
        return Layout(shp, r_ordered_strides(rng, shp))
    return Layout(shp, rng.choice([1, 1, 2, extent // shp if extent // shp else 1]))


# --------------------------------------------------------------------------- cases
@dataclass
class Case:
    op: str
    desc: str                 # human-readable inputs
    cxx: str                  # C++ statements; must print the result after the tag
    ours: Any                 # threadmap's result (Layout, int, Tensor, tuple, list)
    kind: str                 # layout | int | tensor | itensor | coords
    cid: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _print_stmt(expr: str) -> str:
    return f"{{ auto r = {expr}; print(r); }}"


def _tensor_stmt(expr: str, elems: bool = False) -> str:
    s = f"{{ auto r = {expr}; print(r.layout()); printf(\"\\t\"); print(*r.data());"
    if elems:
        s += " printf(\"\\t\"); for (int i = 0; i < int(size(r)); ++i) { print(r(i)); printf(\" \"); }"
    return s + " }"


class Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.cases: list[Case] = []
        self.rejected: list[tuple[str, str, str, str]] = []  # (op, desc, cxx, LayoutError)
        self.crashed: list[tuple[str, str, str]] = []    # other exceptions

    def add(self, op: str, n: int, make: Callable[[random.Random], tuple[str, str, Callable[[], Any], str]],
            tries: int = 40) -> None:
        got = 0
        for _t in range(n * tries):
            if got >= n:
                break
            desc, cxx, fn, kind = make(self.rng)
            try:
                ours = fn()
            except LayoutError as e:
                self.rejected.append((op, desc, cxx, str(e)))
                continue
            except Exception as e:  # noqa: BLE001 - a crash is a finding, keep the case
                self.crashed.append((op, desc, f"{type(e).__name__}: {e}"))
                ours = e
            if any(c.op == op and c.desc == desc for c in self.cases):
                continue
            self.cases.append(Case(op, desc, cxx, ours, kind))
            got += 1


def build_cases(seed: int = SEED, per_op: int = PER_OP) -> Gen:
    g = Gen(seed)
    L = cxx_layout

    # -- coalesce / filter ---------------------------------------------------------------
    def m_coalesce(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["any", "ordered", "neg", "left"]), nest=0.5)
        return str(a), _print_stmt(f"coalesce({L(a)})"), lambda: tl.coalesce(a), "layout"
    g.add("coalesce", per_op, m_coalesce)

    def m_coalesce_prof(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["any", "ordered", "left"]), rank_lo=2, nest=0.6)
        r = rng.randint(1, tl.rank(a))
        prof = tuple(profile_of(a.shape[i]) if rng.random() < 0.5 else 0 for i in range(r))
        return (f"{a} by {prof}", _print_stmt(f"coalesce({L(a)}, {cxx_value(prof)})"),
                lambda: tl.coalesce(a, prof), "layout")
    g.add("coalesce_profile", per_op, m_coalesce_prof)

    def m_filter(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["any", "ordered"]), nest=0.5)
        return str(a), _print_stmt(f"filter({L(a)})"), lambda: tl.filter(a), "layout"
    g.add("filter", per_op, m_filter)

    # -- composition -----------------------------------------------------------------------
    def m_comp(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["left", "right", "ordered", "any"]))
        b = r_layout(rng, rng.choice(["left", "ordered", "any", "neg"]), cap=64, rank_hi=2)
        return (f"{a} o {b}", _print_stmt(f"composition({L(a)}, {L(b)})"),
                lambda: tl.composition(a, b), "layout")
    g.add("composition", per_op, m_comp)

    def m_comp_int(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["left", "right", "ordered", "any"]))
        n = rng.choice([d for d in range(1, tl.size(a) + 1) if tl.size(a) % d == 0]
                       + [rng.randint(1, 16)])
        return (f"{a} o {n}", _print_stmt(f"composition({L(a)}, {cxx_value(n)})"),
                lambda: tl.composition(a, n), "layout")
    g.add("composition_int", per_op, m_comp_int)

    def m_comp_tuple(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["left", "right", "ordered"]), rank_lo=2)
        r = rng.randint(1, tl.rank(a))
        tiler = tuple(r_tiler_elem(rng, tl.size(a.shape[i])) for i in range(r))
        return (f"{a} o {tiler}", _print_stmt(f"composition({L(a)}, {cxx_tiler(tiler)})"),
                lambda: tl.composition(a, tiler), "layout")
    g.add("composition_tuple", per_op, m_comp_tuple)

    # -- complement ------------------------------------------------------------------------
    def m_compl(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["injective", "ordered", "compact"]), cap=64)
        c = rng.random()
        cos = tl.cosize(tl.filter(a)) if tl.size(tl.filter(a)) > 0 else 1
        if c < 0.25:
            return (f"complement({a})", _print_stmt(f"complement({L(a)})"),
                    lambda: tl.complement(a), "layout")
        if c < 0.6:
            m = cos * rng.choice([1, 2, 3, 4]) + rng.choice([0, 0, 0, 1, 5])
            return (f"complement({a}, {m})", _print_stmt(f"complement({L(a)}, {cxx_value(m)})"),
                    lambda: tl.complement(a, m), "layout")
        tot = cos * rng.choice([1, 2, 4, 8])
        d1 = rng.choice([d for d in range(1, tot + 1) if tot % d == 0])
        cot: Any = (d1, tot // d1)
        if rng.random() < 0.3:
            cot = ((1, d1), tot // d1)
        return (f"complement({a}, {cot})", _print_stmt(f"complement({L(a)}, {cxx_value(cot)})"),
                lambda: tl.complement(a, cot), "layout")
    g.add("complement", per_op, m_compl)

    # -- inverses --------------------------------------------------------------------------
    def m_rinv(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["compact", "injective", "ordered", "any", "neg"]))
        return str(a), _print_stmt(f"right_inverse({L(a)})"), lambda: tl.right_inverse(a), "layout"
    g.add("right_inverse", per_op, m_rinv)

    def m_linv(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["compact", "injective", "injective", "ordered"]))
        return str(a), _print_stmt(f"left_inverse({L(a)})"), lambda: tl.left_inverse(a), "layout"
    g.add("left_inverse", per_op, m_linv)

    # -- divides ---------------------------------------------------------------------------
    def m_divide(op: str) -> Callable[[random.Random], Any]:
        f = getattr(tl, op)

        def make(rng: random.Random) -> Any:
            a = r_layout(rng, rng.choice(["left", "right", "injective", "ordered"]), rank_lo=1)
            c = rng.random()
            if c < 0.3:
                tiler: Any = r_tiler_elem(rng, tl.size(a))
                if tiler is _:
                    tiler = 1
            elif c < 0.4:
                tiler = rng.choice([d for d in range(1, tl.size(a) + 1) if tl.size(a) % d == 0])
            else:
                r = rng.randint(1, tl.rank(a))
                tiler = tuple(r_tiler_elem(rng, tl.size(tl.get(a, i))) for i in range(r))
            return (f"{op}({a}, {tiler})", _print_stmt(f"{op}({L(a)}, {cxx_tiler(tiler)})"),
                    lambda: f(a, tiler), "layout")
        return make

    for op in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide"):
        g.add(op, per_op, m_divide(op))

    # -- products --------------------------------------------------------------------------
    def m_product(op: str) -> Callable[[random.Random], Any]:
        f = getattr(tl, op)

        def make(rng: random.Random) -> Any:
            a = r_layout(rng, rng.choice(["left", "right", "injective", "compact"]), cap=32)
            if rng.random() < 0.6 or tl.rank(a) == 1:
                tiler: Any = r_layout(rng, rng.choice(["left", "right", "injective"]), cap=16)
            else:
                r = rng.randint(1, tl.rank(a))
                tiler = tuple(r_layout(rng, rng.choice(["left", "injective"]), cap=8, rank_hi=1)
                              if rng.random() < 0.8 else rng.choice([2, 3]) for _i in range(r))
            return (f"{op}({a}, {tiler})", _print_stmt(f"{op}({L(a)}, {cxx_tiler(tiler)})"),
                    lambda: f(a, tiler), "layout")
        return make

    for op in ("logical_product", "zipped_product", "tiled_product", "flat_product"):
        g.add(op, per_op, m_product(op))

    def m_rank_product(op: str) -> Callable[[random.Random], Any]:
        f = getattr(tl, op)

        def make(rng: random.Random) -> Any:
            a = r_layout(rng, rng.choice(["left", "right", "injective", "compact"]), cap=32)
            b = r_layout(rng, rng.choice(["left", "right", "injective"]), cap=16)
            return (f"{op}({a}, {b})", _print_stmt(f"{op}({L(a)}, {L(b)})"),
                    lambda: f(a, b), "layout")
        return make

    for op in ("blocked_product", "raked_product"):
        g.add(op, per_op, m_rank_product(op))

    # -- slicing ---------------------------------------------------------------------------
    def r_coord(rng: random.Random, shp: Any, p: float = 0.45) -> Any:
        if isinstance(shp, tuple):
            if rng.random() < 0.2:
                return _
            if rng.random() < 0.2:
                return rng.randrange(tl.size(shp))
            return tuple(r_coord(rng, s, p) for s in shp)
        return _ if rng.random() < p else rng.randrange(shp)

    def has_us(c: Any) -> bool:
        return c is _ or (isinstance(c, tuple) and any(has_us(x) for x in c))

    def m_slice(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["any", "ordered", "left"]), rank_lo=2, nest=0.6)
        while True:
            crd = r_coord(rng, a.shape)
            if has_us(crd) and crd is not _:
                break
        if rng.random() < 0.5:
            return (f"{a}({crd})", _print_stmt(f"{L(a)}({cxx_coord(crd, static=False)})"),
                    lambda: a(crd), "layout")
        t = Tensor(a, 0)
        return (f"tensor {a}({crd})",
                _tensor_stmt(f"make_tensor(counting_iterator<int>(0), {L(a)})"
                             f"({cxx_coord(crd, static=False)})"),
                lambda: t(crd), "tensor")
    g.add("slice", per_op, m_slice)

    # -- local_tile / local_partition -----------------------------------------------------
    def r_tensor_layout(rng: random.Random, rank: int) -> Layout:
        shp = tuple(rng.choice([4, 6, 8, 12, 16]) for _i in range(rank))
        return Layout(shp, rng.choice([LayoutLeft, GenRowMajor, r_ordered_strides(rng, shp)]))

    def tensor_expr(a: Layout, ident: bool) -> str:
        if ident:
            return f"make_identity_tensor({cxx_value(a.shape)})"
        return f"make_tensor(counting_iterator<int>(0), {L(a)})"

    def m_local_tile(rng: random.Random, proj: bool, ident: bool) -> Any:
        rk = rng.choice([1, 2, 2, 3])
        a = r_tensor_layout(rng, rk)
        t = tl.make_identity_tensor(a.shape) if ident else Tensor(a, 0)
        tiler: list[Any] = []
        coord: list[Any] = []
        for s in a.shape:  # type: ignore[union-attr]
            d = rng.choice([x for x in (1, 2, 3, 4, 6, 8) if s % x == 0])
            tiler.append(d)
            coord.append(_ if (not ident and rng.random() < 0.15) else rng.randrange(s // d))
        if proj:
            step: list[Any] = [1] * rk
            pos = rng.randint(0, rk)
            tiler.insert(pos, rng.choice([2, 4]))
            coord.insert(pos, rng.choice([0, 1, _]))
            step.insert(pos, _)
            pstep = tuple(step)
            tt, cc = tuple(tiler), tuple(coord)
            expr = (f"local_tile({tensor_expr(a, ident)}, {cxx_tiler(tt)}, "
                    f"{cxx_coord(cc, static=False)}, {cxx_step(pstep)})")
            fn = lambda: tl.local_tile(t, tt, cc, pstep)  # noqa: E731
            desc = f"local_tile({'ident ' if ident else ''}{a}, {tt}, {cc}, {pstep})"
        else:
            tt, cc = tuple(tiler), tuple(coord)
            expr = f"local_tile({tensor_expr(a, ident)}, {cxx_tiler(tt)}, {cxx_coord(cc, static=False)})"
            fn = lambda: tl.local_tile(t, tt, cc)  # noqa: E731
            desc = f"local_tile({'ident ' if ident else ''}{a}, {tt}, {cc})"
        ok = ident and tl.size(a) // max(1, tl.size(tt)) <= 64
        return desc, _tensor_stmt(expr, elems=ident and ok), fn, ("itensor" if ident else "tensor")

    g.add("local_tile", per_op, lambda rng: m_local_tile(rng, False, False))
    g.add("local_tile_proj", per_op // 2, lambda rng: m_local_tile(rng, True, False))

    def m_local_part(rng: random.Random, proj: bool, ident: bool) -> Any:
        rk = rng.choice([1, 2, 2, 3])
        a = r_tensor_layout(rng, rk)
        t = tl.make_identity_tensor(a.shape) if ident else Tensor(a, 0)
        tshape = tuple(rng.choice([x for x in (1, 2, 3, 4) if s % x == 0]) for s in a.shape)  # type: ignore[union-attr]
        thr = Layout(tshape, rng.choice([LayoutLeft, GenRowMajor]))
        idx = rng.randrange(tl.size(thr))
        if proj:
            pos = rng.randint(0, rk)
            ts = list(tshape)
            ts.insert(pos, rng.choice([2, 4]))
            thr = Layout(tuple(ts), rng.choice([LayoutLeft, GenRowMajor]))
            idx = rng.randrange(tl.size(thr))
            step: list[Any] = [1] * rk
            step.insert(pos, _)
            pstep = tuple(step)
            expr = f"local_partition({tensor_expr(a, ident)}, {L(thr)}, {idx}, {cxx_step(pstep)})"
            fn = lambda: tl.local_partition(t, thr, idx, pstep)  # noqa: E731
            desc = f"local_partition({'ident ' if ident else ''}{a}, {thr}, {idx}, {pstep})"
        else:
            expr = f"local_partition({tensor_expr(a, ident)}, {L(thr)}, {idx})"
            fn = lambda: tl.local_partition(t, thr, idx)  # noqa: E731
            desc = f"local_partition({'ident ' if ident else ''}{a}, {thr}, {idx})"
        ok = ident and tl.size(a) // tl.size(thr) <= 64
        return desc, _tensor_stmt(expr, elems=ok), fn, ("itensor" if ident else "tensor")

    g.add("local_partition", per_op, lambda rng: m_local_part(rng, False, False))
    g.add("local_partition_proj", per_op // 2, lambda rng: m_local_part(rng, True, False))
    g.add("identity_tensor_tile", per_op // 2, lambda rng: m_local_tile(rng, rng.random() < 0.3, True))
    g.add("identity_tensor_partition", per_op // 2,
          lambda rng: m_local_part(rng, rng.random() < 0.3, True))

    def m_ident_layout(rng: random.Random) -> Any:
        shp = r_shape(rng, nest=0.5, cap=32)
        il = tl.make_identity_layout(shp)
        expr = (f"{{ auto r = make_identity_layout({cxx_value(shp)}); print(r); printf(\"\\t\");"
                f" for (int i = 0; i < int(size(r)); ++i) {{ print(r(i)); printf(\" \"); }} }}")
        return f"make_identity_layout({shp})", expr, lambda: il, "ilayout"
    g.add("identity_layout", per_op // 2, m_ident_layout)

    # -- casts -----------------------------------------------------------------------------
    def m_upcast(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["left", "right", "ordered", "any", "neg"]))
        n = rng.choice([2, 4, 8])
        return (f"upcast<{n}>({a})", _print_stmt(f"upcast<{n}>({L(a)})"),
                lambda: tl.upcast(a, n), "layout")
    g.add("upcast", per_op, m_upcast)

    def m_downcast(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["left", "right", "ordered", "compact"]))
        n = rng.choice([2, 4, 8])
        return (f"downcast<{n}>({a})", _print_stmt(f"downcast<{n}>({L(a)})"),
                lambda: tl.downcast(a, n), "layout")
    g.add("downcast", per_op, m_downcast)

    # -- ordered layouts, tile_to_shape -------------------------------------------------------
    def m_ordered(rng: random.Random) -> Any:
        shp = r_shape(rng, nest=0.5, cap=256)
        n = len(leaves(shp))
        perm = list(range(n))
        rng.shuffle(perm)
        order = unflatten(perm, shp)
        if isinstance(shp, tuple) and rng.random() < 0.3:  # coarser order: one leaf per mode
            o = list(range(len(shp)))
            rng.shuffle(o)
            order = tuple(o)
        return (f"make_ordered_layout({shp}, {order})",
                _print_stmt(f"make_ordered_layout({cxx_value(shp)}, {cxx_value(order)})"),
                lambda: tl.make_ordered_layout(shp, order), "layout")
    g.add("make_ordered_layout", per_op, m_ordered)

    def m_tile_to_shape(rng: random.Random) -> Any:
        b = r_layout(rng, rng.choice(["left", "right", "injective", "compact"]), cap=32, rank_hi=2)
        rb = tl.rank(b)
        rt = rng.randint(max(rb, 1), 3)
        bs = product_each(tl.append(b, n=rt).shape) if rt > 1 else (tl.size(b),)
        trg = tuple(int(x) * rng.choice([1, 2, 3, 4]) for x in wrap(bs))
        if rng.random() < 0.3:
            trg = tuple((2, x // 2) if x % 2 == 0 and x > 2 else x for x in trg)
        trg_v: Any = trg if len(trg) > 1 else trg[0]
        c = rng.random()
        if c < 0.4:
            return (f"tile_to_shape({b}, {trg_v})",
                    _print_stmt(f"tile_to_shape({L(b)}, {cxx_value(trg_v)})"),
                    lambda: tl.tile_to_shape(b, trg_v), "layout")
        if c < 0.6:
            return (f"tile_to_shape({b}, {trg_v}, GenRowMajor)",
                    _print_stmt(f"tile_to_shape({L(b)}, {cxx_value(trg_v)}, GenRowMajor{{}})"),
                    lambda: tl.tile_to_shape(b, trg_v, GenRowMajor), "layout")
        o = list(range(1, len(trg) + 1))
        rng.shuffle(o)
        order: Any = tuple(o) if len(o) > 1 else o[0]
        return (f"tile_to_shape({b}, {trg_v}, {order})",
                _print_stmt(f"tile_to_shape({L(b)}, {cxx_value(trg_v)}, {cxx_value(order)})"),
                lambda: tl.tile_to_shape(b, trg_v, order), "layout")
    g.add("tile_to_shape", per_op, m_tile_to_shape)

    # -- max_common_vector / layout ---------------------------------------------------------
    def m_mcv(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["left", "right", "injective", "compact"]), cap=128)
        shp = a.shape
        c = rng.random()
        if c < 0.3:
            b = Layout(shp)
        elif c < 0.6:
            b = Layout(shp, r_ordered_strides(rng, shp, gaps=rng.random() < 0.5))
        else:
            b = a
            if rng.random() < 0.5:
                b = Layout(shp, GenRowMajor)
        if rng.random() < 0.5:
            return (f"max_common_vector({a}, {b})", _print_stmt(f"max_common_vector({L(a)}, {L(b)})"),
                    lambda: tl.max_common_vector(a, b), "int")
        return (f"max_common_layout({a}, {b})", _print_stmt(f"max_common_layout({L(a)}, {L(b)})"),
                lambda: tl.max_common_layout(a, b), "layout")
    g.add("max_common_vector", per_op, m_mcv)

    # -- size / cosize / rank / depth --------------------------------------------------------
    def m_measures(rng: random.Random) -> Any:
        a = r_layout(rng, rng.choice(["left", "ordered", "any", "injective"]), nest=0.6)
        fn = rng.choice(["size", "cosize", "rank", "depth"])
        return (f"{fn}({a})", _print_stmt(f"{fn}({L(a)})"), lambda: getattr(tl, fn)(a), "int")
    g.add("size_cosize_rank_depth", per_op, m_measures)

    # -- the values quoted in README.md -------------------------------------------------------
    for desc, cxx, fn in DOC_VALUES:
        g.cases.append(Case("doc_known_values", desc, cxx, fn(), "layout"))

    for name, (desc, cxx, fn) in REGRESSIONS.items():
        try:
            ours = fn()
        except Exception as e:  # noqa: BLE001 - threadmap's failure is the finding
            ours = e
        kind = "tensor" if "tensor" in desc else "layout"
        g.cases.append(Case(f"regression:{name}", desc, cxx, ours, kind))

    for i, c in enumerate(g.cases):
        c.cid = f"c{i:04d}"
    return g


# Regressions: cases where threadmap once differed from the header (fixed), kept as fixed
# cases of the batch.
_T16 = Layout(16, 2)
REGRESSIONS: dict[str, tuple[str, str, Callable[[], Any]]] = {
    # cute/int_tuple.hpp:249  product_each(t) = transform(wrap(t), product): an integer
    # becomes a rank-1 tuple, (12) not 12.  tile_to_shape (layout.hpp:1778-1800) takes
    # product_each of the target, so ceil_div((12),(4)) = (3), the ordered layout is
    # (3):(1) and blocked_product's zip gives ((4,(3))):((1,(4))).  threadmap's product_each
    # used to return the integer: ((4,3)):((1,4)) (same function, different tree).
    "tile_to_shape_int_target": (
        "tile_to_shape(4:1, 12)",
        _print_stmt(f"tile_to_shape({cxx_layout(Layout(4, 1))}, Int<12>{{}})"),
        lambda: tl.tile_to_shape(Layout(4, 1), 12)),
    # Same root cause in local_partition (tensor_impl.hpp:1079-1087): the tiler is
    # product_each(shape(tile)) = (4), so zipped_divide gives ((4)),((4)) and the flat coord
    # (1) slices it: C++ ((_4)):((_8)) at offset 2.  threadmap tiles by the integer 4, gets
    # 4-mode layouts and raised LayoutError "slice: coordinate (1,) does not match 4".
    "local_partition_int_shape": (
        "local_partition(tensor 16:2, 4:1, 1)",
        _tensor_stmt(f"local_partition(make_tensor(counting_iterator<int>(0), "
                     f"{cxx_layout(_T16)}), {cxx_layout(Layout(4, 1))}, 1)"),
        lambda: tl.local_partition(Tensor(_T16, 0), Layout(4, 1), 1)),
}


# (description, C++ statement, threadmap computation); expected values are in DOC_EXPECTED
_CA = Layout((2, 2), (1, 6))
_CO = Layout((2, (1, 6)), (1, (6, 2)))
DOC_VALUES: list[tuple[str, str, Callable[[], Any]]] = [
    ("complement((2,2):(1,6), 24)", _print_stmt(f"complement({cxx_layout(_CA)}, Int<24>{{}})"),
     lambda: tl.complement(_CA, 24)),
    ("coalesce((2,(1,6)):(1,(6,2)))", _print_stmt(f"coalesce({cxx_layout(_CO)})"),
     lambda: tl.coalesce(_CO)),
]
DOC_EXPECTED = {"complement((2,2):(1,6), 24)": "(3,2):(2,12)",
                   "coalesce((2,(1,6)):(1,(6,2)))": "12:1"}


# --------------------------------------------------------------------------- running
def _program(cases: list[Case]) -> tuple[str, dict[int, str]]:  # noqa: D401
    """One C++ program: each case in its own function (so that a compile error can be
    mapped back to the case by its line number)."""
    lines: list[str] = []
    line_of: dict[int, str] = {}
    for c in cases:
        line_of[len(lines)] = c.cid
        lines.append(f'static void {c.cid}() {{ printf("{c.cid}\\t"); {c.cxx} printf("\\n"); }}')
    lines.append("int main() {")
    lines += [f"  {c.cid}();" for c in cases]
    lines.append("  return 0;\n}")
    return "\n".join(lines) + "\n", line_of


_ERR_LINE = re.compile(r"(?:prog|rej)_[0-9a-f]+\.cu\((\d+)\)|line (\d+) of [^\s]*(?:prog|rej)_[0-9a-f]+\.cu")


def run_batch(cases: list[Case], max_retries: int = 3) -> tuple[dict[str, str], dict[str, str]]:
    """Compile and run; cases that fail to compile are dropped (and reported) and the rest
    recompiled.  Returns ``(outputs by id, compile errors by id)``."""
    prelude_lines = (PRELUDE + "\n").count("\n")
    errors: dict[str, str] = {}
    todo = list(cases)
    for _attempt in range(max_retries + 1):
        src, line_of = _program(todo)
        try:
            out = run_cxx(src)
        except RuntimeError as e:
            msg = str(e)
            bad = set()
            for m in _ERR_LINE.finditer(msg):
                ln = int(m.group(1) or m.group(2)) - prelude_lines - 1
                if ln in line_of:
                    bad.add(line_of[ln])
            if not bad:
                raise
            for c in todo:
                if c.cid in bad:
                    errors[c.cid] = msg[-1500:]
            todo = [c for c in todo if c.cid not in bad]
            continue
        res: dict[str, str] = {}
        for line in out.splitlines():
            if "\t" in line:
                k, v = line.split("\t", 1)
                res[k] = v
        return res, errors
    raise RuntimeError("too many compile failures")


# --------------------------------------------------------------------------- comparison
def _terms(v: Any, path: tuple[int, ...] = ()) -> tuple:
    """A coordinate or offset as sorted non-zero ``(basis path, value)`` pairs, so that
    C++'s ``3@0``, ``(3,0)`` and ``3`` (rank-1 identity) compare equal to threadmap's
    ArithTuple/ScaledBasis/int forms."""
    acc: dict[tuple[int, ...], int] = {}

    def add(p: tuple[int, ...], x: Any) -> None:
        acc[p] = acc.get(p, 0) + int(x)

    def rec(x: Any, p: tuple[int, ...]) -> None:
        if isinstance(x, tuple):
            for i, y in enumerate(x):
                rec(y, p + (i,))
        elif isinstance(x, ScaledBasis):
            add(p + x.path, x.value)
        elif isinstance(x, ArithTuple):
            for q, y in x.terms.items():
                rec(y, p + q)
        else:
            add(p, x)

    rec(v, path)
    # a path that only extends another with zeros is the same coordinate: drop trailing
    # zero indices (E<0> on a rank-1 identity equals the integral E<>)
    norm: dict[tuple[int, ...], int] = {}
    for p, x in acc.items():
        q = p
        while q and q[-1] == 0:
            q = q[:-1]
        norm[q] = norm.get(q, 0) + x
    return tuple(sorted((p, x) for p, x in norm.items() if x != 0))


def _values(layout: Layout) -> list[Any]:
    return [_terms(layout(i)) for i in range(tl.size(layout))]


def _int(text: str) -> int:
    return int(text.strip().lstrip("_"))


def compare(c: Case, out: str) -> str | None:
    """None when C++ and threadmap agree, else a description of the difference."""
    if isinstance(c.ours, Exception):
        return f"threadmap raised {type(c.ours).__name__}: {c.ours}; C++ printed {out!r}"
    if c.kind == "int":
        return None if _int(out) == int(c.ours) else f"C++ {out} vs threadmap {c.ours}"
    if c.kind in ("layout", "ilayout"):
        parts = out.split("\t")
        theirs = parse_layout(parts[0])
        ours: Layout = c.ours
        msgs = []
        if str(theirs) != str(ours):
            msgs.append(f"structure: C++ {parts[0]} vs threadmap {ours.to_str(static=True)}")
        if tl.size(theirs) != tl.size(ours) or _values(theirs) != _values(ours):
            msgs.append("value tables differ")
        if c.kind == "ilayout":
            ocs = [_terms(ours(i)) for i in range(tl.size(ours))]
            tcs = [_terms(parse_int_tuple(x)) for x in parts[1].split()]
            if ocs != tcs:
                msgs.append(f"coordinates: C++ {tcs[:8]} vs threadmap {ocs[:8]}")
        return "; ".join(msgs) or None
    if c.kind in ("tensor", "itensor"):
        parts = out.split("\t")
        t: Tensor = c.ours
        theirs = parse_layout(parts[0])
        msgs = []
        if str(theirs) != str(t.layout):
            msgs.append(f"layout: C++ {parts[0]} vs threadmap {t.layout.to_str(static=True)}")
        elif _values(theirs) != _values(t.layout):
            msgs.append("value tables differ")
        if c.kind == "tensor":
            if _int(parts[1]) != int(t.offset):
                msgs.append(f"offset: C++ {parts[1]} vs threadmap {t.offset}")
        else:
            if _terms(parse_int_tuple(parts[1])) != _terms(t.offset):
                msgs.append(f"offset: C++ {parts[1]} vs threadmap {t.offset}")
            if len(parts) > 2:
                tcs = [_terms(parse_int_tuple(x)) for x in parts[2].split()]
                ocs = [_terms(t(i)) for i in range(tl.size(t.layout))]
                if tcs != ocs:
                    msgs.append(f"coordinates: C++ {tcs[:6]} vs threadmap {ocs[:6]}")
        return "; ".join(msgs) or None
    raise AssertionError(c.kind)


# --------------------------------------------------------------------------- fixtures
GEN = build_cases()
OPS = [op for op in dict.fromkeys(c.op for c in GEN.cases)
       if not op.startswith("regression:") and op != "doc_known_values"]


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    cases = GEN.cases
    chunks = [cases[i::N_PROGRAMS] for i in range(N_PROGRAMS)]
    t0 = time.time()
    with ThreadPoolExecutor(N_PROGRAMS) as ex:
        results = list(ex.map(run_batch, chunks))
    outputs: dict[str, str] = {}
    errors: dict[str, str] = {}
    for o, e in results:
        outputs.update(o)
        errors.update(e)
    return {"outputs": outputs, "errors": errors, "seconds": time.time() - t0}


def _report(cases: list[Case], oracle: dict[str, Any]) -> list[str]:
    bad = []
    for c in cases:
        if c.cid in oracle["errors"]:
            if isinstance(c.ours, Exception):
                continue  # both reject (threadmap with the wrong exception type; see crashed)
            bad.append(f"{c.cid} {c.desc}: threadmap gives {c.ours}, C++ does not compile:\n"
                       f"{oracle['errors'][c.cid][-600:]}")
            continue
        out = oracle["outputs"].get(c.cid)
        if out is None:
            bad.append(f"{c.cid} {c.desc}: no output from C++")
            continue
        diff = compare(c, out)
        if diff:
            bad.append(f"{c.cid} {c.desc}: {diff}")
    return bad


def test_case_counts() -> None:
    counts = Counter(c.op for c in GEN.cases if c.op in OPS)
    assert sum(counts.values()) >= 300, counts
    for op, n in counts.items():
        assert n >= min(5, PER_OP), (op, n)


@pytest.mark.parametrize("op", OPS)
def test_against_header(op: str, oracle: dict[str, Any]) -> None:
    cases = [c for c in GEN.cases if c.op == op]
    bad = _report(cases, oracle)
    assert not bad, f"{len(bad)}/{len(cases)} mismatches for {op}:\n" + "\n".join(bad[:15])


def test_doc_known_values(oracle: dict[str, Any]) -> None:
    """README.md: complement((2,2):(1,6), 24) = (3,2):(2,12); coalesce((2,(1,6)):(1,(6,2)))
    = 12:1 -- in threadmap and in the header (static ints)."""
    for c in GEN.cases:
        if c.op != "doc_known_values":
            continue
        assert str(c.ours) == DOC_EXPECTED[c.desc], (c.desc, str(c.ours))
        assert str(parse_layout(oracle["outputs"][c.cid])) == DOC_EXPECTED[c.desc], \
            (c.desc, oracle["outputs"][c.cid])


# --------------------------------------------------------------------------- rejections
def _compile_errors(src: str) -> str:
    """nvcc's full diagnostics for ``src`` ('' when it compiles), cached by source hash."""
    exe, inc = require_oracle()
    full = PRELUDE + "\n" + src
    key = hashlib.sha256((full + str(inc)).encode()).hexdigest()[:20]
    CACHE.mkdir(parents=True, exist_ok=True)
    log = CACHE / f"rej_{key}.log"
    if log.exists():
        return log.read_text()
    cu = CACHE / f"rej_{key}.cu"
    cu.write_text(full)
    proc = subprocess.run([exe, "-std=c++17", "-O0", "-w", f"-I{inc}", "-x", "cu", "-c", str(cu),
                           "-o", str(CACHE / f"rej_{key}.o{os.getpid()}")],
                          capture_output=True, text=True, timeout=600)
    text = "" if proc.returncode == 0 else proc.stderr
    log.write_text(text)
    return text


def test_header_rejects_what_threadmap_rejects() -> None:
    """Every generated case that threadmap rejects with LayoutError (and the batch therefore
    drops) fails to compile against the header too: all of them in one -fsyntax-only
    translation unit, cases whose failing template was already reported compiled on their
    own.  The generator must produce some, or this check would be vacuous."""
    rejected = {f"r{i}": cxx for i, (_o, _d, cxx, _e) in enumerate(GEN.rejected)}
    assert len(rejected) >= 10, f"only {len(rejected)} rejected cases: the check is too weak"
    hit = rejected_by_header(rejected)
    missing = [f"{op}: {desc} (threadmap: {e})" for i, (op, desc, _c, e) in enumerate(GEN.rejected)
               if f"r{i}" not in hit]
    assert not missing, "threadmap rejects, but the header compiles:\n" + "\n".join(missing)


@pytest.mark.parametrize("name", list(REGRESSIONS))
def test_regression(name: str, oracle: dict[str, Any]) -> None:
    """Cases where threadmap once differed from the header (see the comments in REGRESSIONS)."""
    cases = [c for c in GEN.cases if c.op == f"regression:{name}"]
    bad = _report(cases, oracle)
    assert not bad, "\n".join(bad)
