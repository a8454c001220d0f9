"""Generated CuTe DSL objects and the comparison of each with its conversion.

A *recipe* is plain data drawn with hypothesis, mostly from ``threadmap.testing.strategies``
(layouts, swizzled layouts, thread and value layouts, tiled-copy cases) and hypothesis
primitives (atoms, MMA shapes, permutations).  :func:`check_batch` builds the recipes' objects
with the DSL inside one ``@cute.jit`` traced, converts each with ``threadmap.dsl.convert`` and
compares:

* structure: the converted shape and stride trees (``str``) are the DSL's, as are a swizzle's
  bits, a composed layout's offset, a tiled copy's ``TiledLayout_TV`` and tiler, a tiled MMA's
  ``ThrLayoutVMNK`` and permutation;
* evaluation: every layout is evaluated *by the DSL* (``layout(i)`` inside the trace) at every
  index of its domain and compared with threadmap's value there: layouts, identity layouts,
  composed layouts, copy atoms' source and destination TV layouts, tiled copies'
  ``TiledLayout_TV`` and source/destination TV layouts, MMA atoms' A, B, C TV layouts, tiled
  MMAs' ``ThrLayoutVMNK`` and A, B, C TV layouts.  A domain larger than ``eval_cap`` (only the
  replicated shared-memory operands of GMMA atoms, 128 threads times the whole operand tile) is
  evaluated at ``eval_cap`` indices spread over it, every corner included, and counted apart.

Recipes the DSL itself refuses (it raises while building them) are counted, not compared.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from threadmap.layout import ComposedLayout, Layout, Underscore, size
from threadmap.testing.strategies import (
    any_layouts,
    compact_layouts,
    shapes,
    swizzled_layouts,
    thread_layouts,
    tiled_copy_cases,
)

# ----------------------------------------------------------------------------- recipes
DTYPES = {8: "Uint8", 16: "Float16", 32: "Float32", 64: "Float64"}


def _ls(lay: Layout) -> tuple[Any, Any]:
    return lay.shape, lay.stride


@st.composite
def layout_recipes(draw: st.DrawFn, max_size: int) -> tuple[Any, ...]:
    return ("layout", *_ls(draw(any_layouts(max_size=max_size))))


@st.composite
def identity_recipes(draw: st.DrawFn, max_size: int) -> tuple[Any, ...]:
    return ("identity", draw(shapes(max_size=max_size)))


@st.composite
def swizzled_recipes(draw: st.DrawFn, max_size: int) -> tuple[Any, ...]:
    c = draw(swizzled_layouts(max_size=max_size))
    assert isinstance(c, ComposedLayout)
    sw = c.layout_a
    offset = draw(st.sampled_from([0, 0, 1, 8, 64, 100]))
    return ("swizzled", (sw.num_bits, sw.num_base, sw.num_shft), offset, *_ls(c.layout_b))


@st.composite
def composed_recipes(draw: st.DrawFn, max_size: int) -> tuple[Any, ...]:
    inner = draw(compact_layouts(max_size=max_size))
    outer = draw(any_layouts(max_size=max_size))
    offset = draw(st.integers(0, 16))
    return ("composed", _ls(inner), offset, _ls(outer))


@st.composite
def copy_recipes(draw: st.DrawFn, threads: tuple[int, ...]) -> tuple[Any, ...]:
    bits = draw(st.sampled_from(sorted(DTYPES)))
    case = draw(tiled_copy_cases(num_threads=draw(st.sampled_from(threads)), element_bits=bits, max_repeat=2,
                                 compact=draw(st.booleans())))
    vbits = int(case.op.split("uint")[1].split("_")[0])
    kinds = ["universal", "auto", "g2r"] + (["cp_async_always"] if vbits >= 32 else []) \
        + (["cp_async_global"] if vbits == 128 else [])
    kind = draw(st.sampled_from(kinds))
    how = draw(st.sampled_from(["tv", "layout_tv"]))  # make_tiled_copy_tv(thr, val) or make_tiled_copy(tv, tiler)
    tc = case.tiled_copy
    return ("copy", kind, DTYPES[bits], vbits, _ls(case.thr_layout), _ls(case.val_layout), how,
            _ls(tc.layout_tv), tuple(tc.tiler_mn))


#: (atom kind, A/B type, accumulator type, shape MNK)
_SM80 = [("sm80", "Float16", "Float16", (16, 8, 8)), ("sm80", "Float16", "Float32", (16, 8, 16)),
         ("sm80", "BFloat16", "Float32", (16, 8, 16)), ("sm80", "Float16", "Float32", (16, 8, 8)),
         ("tf32", "TFloat32", "Float32", (16, 8, 4)), ("tf32", "TFloat32", "Float32", (16, 8, 8))]


@st.composite
def _permutation_mode(draw: st.DrawFn, extent: int) -> Any:
    """``_``, an extent (a multiple of the atoms' extent) or a compact layout of one."""
    kind = draw(st.sampled_from(["none", "int", "layout"]))
    if kind == "none":
        return None
    total = extent * draw(st.sampled_from([1, 2]))
    if kind == "int":
        return total
    lay = draw(compact_layouts(max_size=total, max_depth=1).filter(lambda x: size(x) == total)) \
        if total <= 64 else Layout(total, 1)
    return _ls(lay)


@st.composite
def mma_recipes(draw: st.DrawFn, gmma_n: tuple[int, ...], max_atoms: int) -> tuple[Any, ...]:
    family = draw(st.sampled_from(["fma", "sm80", "fma", "sm80", "gmma"]))  # GMMAs cost the most to evaluate
    if family == "fma":
        atom: tuple[Any, ...] = ("fma", draw(st.sampled_from(["Float32", "Float16", "Float64"])), None, (1, 1, 1))
        n_atoms = draw(st.sampled_from([n for n in (1, 2, 4, 8, 16, 32) if n <= 8 * max_atoms]))
    elif family == "sm80":
        atom = draw(st.sampled_from(_SM80))
        n_atoms = draw(st.sampled_from([n for n in (1, 2, 4) if n <= max_atoms]))
    else:
        ab = draw(st.sampled_from(["Float16", "BFloat16"]))
        acc = "Float32" if ab == "BFloat16" else draw(st.sampled_from(["Float16", "Float32"]))
        n = draw(st.sampled_from(gmma_n))
        src = draw(st.sampled_from(["SMEM", "RMEM"]))
        a_major = "K" if src == "RMEM" else draw(st.sampled_from(["K", "MN"]))
        atom = ("gmma", ab, acc, (64, n, 16), src, a_major, draw(st.sampled_from(["K", "MN"])))
        n_atoms = draw(st.sampled_from([1, 2]))
    thr = draw(thread_layouts(n_atoms, rank=3, compact=True))
    thr_sizes = [size(thr[i]) for i in range(3)]
    perm = tuple(draw(_permutation_mode(atom[3][i] * thr_sizes[i])) for i in range(3))
    derived = draw(st.sampled_from(DERIVED))  # one derived tiled copy each: they cost as much as the MMA
    return ("mma", atom, _ls(thr), perm, derived)


#: the tiled copies a kernel derives from a tiled MMA (those the atom does not allow are skipped)
DERIVED = ("make_tiled_copy_C", "make_tiled_copy_A(ldmatrix)", "make_tiled_copy_B(ldmatrix.trans)",
           "make_tiled_copy_C_atom(stmatrix)", "make_tiled_copy_S(universal, C_atom)")


#: how often each kind is drawn (of 20): layouts most often, they are the cheapest to evaluate
KIND_WEIGHTS = {"layout": 6, "identity": 2, "swizzled": 4, "composed": 2, "copy": 4, "mma": 2}


@st.composite
def recipes(draw: st.DrawFn, *, max_size: int = 128, threads: tuple[int, ...] = (32, 64),
            gmma_n: tuple[int, ...] = (8, 16), max_atoms: int = 4) -> tuple[Any, ...]:
    """One recipe, of a kind drawn by :data:`KIND_WEIGHTS`."""
    kind = draw(st.sampled_from([k for k, w in KIND_WEIGHTS.items() for _ in range(w)]))
    if kind == "layout":
        return draw(layout_recipes(max_size))
    if kind == "identity":
        return draw(identity_recipes(max_size))
    if kind == "swizzled":
        return draw(swizzled_recipes(max_size))
    if kind == "composed":
        return draw(composed_recipes(max_size))
    if kind == "copy":
        return draw(copy_recipes(threads))
    return draw(mma_recipes(gmma_n, max_atoms))


#: the bounds of :func:`recipes`: ``suite`` keeps the suite's run cheap, ``large`` draws bigger
#: layouts, 128-thread copies and wider GMMAs (``THREADMAP_DSL_CONVERT_SCALE=large``)
SCALES: dict[str, dict[str, Any]] = {
    "suite": {"max_size": 128, "threads": (32, 64), "gmma_n": (8,), "max_atoms": 4},
    "large": {"max_size": 512, "threads": (32, 64, 128), "gmma_n": (8, 16, 32, 64, 128), "max_atoms": 4},
}


def draw_recipes(n: int, *, seed_value: int = 20251204, **kw: Any) -> list[tuple[Any, ...]]:
    """``n`` recipes drawn by hypothesis (seeded: the same recipes every run)."""
    out: list[tuple[Any, ...]] = []

    @seed(seed_value)
    @settings(max_examples=n, database=None, phases=[Phase.generate], deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(recipes(**kw))
    def collect(r: tuple[Any, ...]) -> None:
        out.append(r)

    collect()
    return out


# ----------------------------------------------------------------------------- comparison
@dataclass
class Stats:
    objects: Counter[str] = field(default_factory=Counter)      # converted objects by kind
    evaluations: int = 0                                          # DSL evaluations compared
    sampled: int = 0                                              # layouts evaluated at eval_cap points
    refused: Counter[str] = field(default_factory=Counter)      # recipes the DSL itself refuses
    mismatches: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, o: Stats) -> None:
        self.objects.update(o.objects)
        self.refused.update(o.refused)
        self.evaluations += o.evaluations
        self.sampled += o.sampled
        self.mismatches.extend(o.mismatches)
        self.seconds += o.seconds


def _indices(n: int, cap: int) -> list[int]:
    if n <= cap:
        return list(range(n))
    step = max(1, n // cap)
    return sorted({0, n - 1, *range(0, n, step)})


def _tm_value(lay: Any, i: int) -> Any:
    v = lay(i)
    return v.to_tuple(lay.shape) if hasattr(v, "to_tuple") else int(v)


class Checker:
    """The comparisons of one batch (inside its trace)."""

    def __init__(self, cute: Any, eval_cap: int) -> None:
        self.cute, self.cap, self.stats = cute, eval_cap, Stats()

    def fail(self, what: str, msg: str) -> None:
        self.stats.mismatches.append(f"{what}: {msg}")

    def same_text(self, what: str, dsl: Any, ours: Any) -> None:
        if str(dsl) != str(ours):
            self.fail(what, f"the DSL prints {dsl}, the conversion {ours}")

    def evaluate(self, what: str, dsl: Any, ours: Any) -> None:
        """``dsl(i) == ours(i)`` at every index ``i`` of the domain (``eval_cap`` spread ones beyond)."""
        n = size(ours)
        dn = self.cute.size(dsl)
        if dn != n:
            self.fail(what, f"the DSL's domain has {dn} indices, the conversion's {n}")
            return
        idx = _indices(n, self.cap)
        if len(idx) < n:
            self.stats.sampled += 1
        table = None
        if isinstance(ours, (Layout, ComposedLayout)) and not _has_basis(ours):
            table = ours.table()
        for i in idx:
            d = dsl(i)
            t = int(table[i]) if table is not None else _tm_value(ours, i)
            if d != t:
                self.fail(what, f"at index {i} the DSL gives {d}, the conversion {t}")
                return
        self.stats.evaluations += len(idx)


def _has_basis(x: Any) -> bool:
    return isinstance(x, Layout) and "@" in str(x.stride)


def _tiler_text(t: Any) -> str:
    """A converted tiler mode as the DSL prints it (an integer n is the layout n:1)."""
    if isinstance(t, tuple):
        return "(" + ", ".join(_tiler_text(x) for x in t) + ")"
    if isinstance(t, Underscore):
        return "None"
    return f"{t}:1" if isinstance(t, int) else str(t)


def _dsl_tiler_text(t: Any) -> str:
    if isinstance(t, (tuple, list)):
        return "(" + ", ".join(_dsl_tiler_text(x) for x in t) + ")"
    return "None" if t is None else str(t)


def build_layout(cute: Any, ls: tuple[Any, Any]) -> Any:
    return cute.make_layout(ls[0], stride=ls[1])


def run_recipe(ck: Checker, cutlass: Any, r: tuple[Any, ...]) -> None:
    """Build recipe ``r`` with the DSL (inside the trace), convert and compare."""
    from threadmap.dsl import convert

    cute = ck.cute
    kind = r[0]
    what = f"{kind} {r[1:]!r}"
    if kind == "layout":
        dsl = build_layout(cute, (r[1], r[2]))
        ours = convert(dsl)
        ck.same_text(what, dsl, ours)
        ck.evaluate(what, dsl, ours)
        ck.stats.objects["layout"] += 1
    elif kind == "identity":
        dsl = cute.make_identity_layout(r[1])
        ours = convert(dsl)
        ck.same_text(what, dsl, ours)
        ck.evaluate(what, dsl, ours)
        ck.stats.objects["identity layout"] += 1
    elif kind == "swizzled":
        (b, m, s), off, shp, std = r[1], r[2], r[3], r[4]
        sw = cute.make_swizzle(b, m, s)  # the DSL keeps Sw<0,0,0> as its normal form Sw<0,4,3>
        ours_sw = convert(sw)
        if (ours_sw.num_bits, ours_sw.num_base, ours_sw.num_shft) != (sw.num_bits, sw.num_base, sw.num_shift):
            ck.fail(what, f"swizzle {sw} converted to {ours_sw}")
        ck.stats.objects["swizzle"] += 1
        dsl = cute.make_composed_layout(sw, off, cute.make_layout(shp, stride=std))
        ours = convert(dsl)
        if ours.offset != off or str(ours.layout_b) != str(dsl.outer):
            ck.fail(what, f"composed layout converted to {ours}")
        ck.evaluate(what, dsl, ours)
        ck.stats.objects["swizzled layout"] += 1
    elif kind == "composed":
        inner, off, outer = r[1], r[2], r[3]
        dsl = cute.make_composed_layout(build_layout(cute, inner), off, build_layout(cute, outer))
        ours = convert(dsl)
        if ours.offset != off or str(ours.layout_a) != str(dsl.inner) or str(ours.layout_b) != str(dsl.outer):
            ck.fail(what, f"composed layout converted to {ours}")
        ck.evaluate(what, dsl, ours)
        ck.stats.objects["layout o layout"] += 1
    elif kind == "copy":
        copy_recipe(ck, cutlass, r)
    elif kind == "mma":
        mma_recipe(ck, cutlass, r)
    else:  # pragma: no cover - a recipe kind without its builder
        raise AssertionError(kind)


def _copy_atom(cute: Any, cutlass: Any, kind: str, dtype: Any, bits: int) -> Any:
    nv = cute.nvgpu
    if kind == "universal":
        return cute.make_copy_atom(nv.CopyUniversalOp(), dtype, num_bits_per_copy=bits)
    if kind == "auto":
        return cute.make_copy_atom(nv.CopyUniversalOp(), dtype)
    if kind == "g2r":
        return cute.make_copy_atom(nv.CopyG2ROp(), dtype, num_bits_per_copy=bits)
    mode = nv.cpasync.LoadCacheMode.GLOBAL if kind == "cp_async_global" else nv.cpasync.LoadCacheMode.ALWAYS
    return cute.make_copy_atom(nv.cpasync.CopyG2SOp(cache_mode=mode), dtype, num_bits_per_copy=bits)


def check_tiled_copy(ck: Checker, what: str, tc: Any, label: str) -> None:
    """Convert a DSL tiled copy and compare its parts and TV layouts."""
    from threadmap.dsl import convert

    ours = convert(tc)
    ck.same_text(f"{what} TiledLayout_TV", tc.layout_tv_tiled, ours.layout_tv)
    if _dsl_tiler_text(tuple(tc.tiler_mn)) != _tiler_text(tuple(ours.tiler_mn)):
        ck.fail(what, f"tiler: the DSL has {_dsl_tiler_text(tuple(tc.tiler_mn))}, the conversion {ours.tiler_mn}")
    ck.evaluate(f"{what} TiledLayout_TV", tc.layout_tv_tiled, ours.layout_tv)
    ck.evaluate(f"{what} source TV", tc.layout_src_tv_tiled, ours.get_layoutS_TV())
    atom = ours.atom
    if atom.op.src_bits != atom.op.dst_bits:  # otherwise the destination's is the source's layout
        ck.evaluate(f"{what} destination TV", tc.layout_dst_tv_tiled, ours.get_layoutD_TV())
    ck.evaluate(f"{what} atom source TV", tc.layout_src_tv, atom.val_layout_src)
    ck.evaluate(f"{what} atom destination TV", tc.layout_dst_tv, atom.val_layout_dst)
    ck.stats.objects[label] += 1


def copy_recipe(ck: Checker, cutlass: Any, r: tuple[Any, ...]) -> None:
    cute = ck.cute
    _k, kind, dtype_name, bits, thr, val, how, tv, tiler = r
    what = f"tiled copy {r[1:]!r}"
    dtype = getattr(cutlass, dtype_name)
    try:
        atom = _copy_atom(cute, cutlass, kind, dtype, bits)
        if how == "tv":
            tc = cute.make_tiled_copy_tv(atom, build_layout(cute, thr), build_layout(cute, val))
        else:
            tc = cute.make_tiled_copy(atom, build_layout(cute, tv), tiler)
    except Exception as e:  # noqa: BLE001 - the DSL refuses this combination itself
        ck.stats.refused[f"copy {kind} ({type(e).__name__})"] += 1
        return
    check_tiled_copy(ck, what, tc, f"tiled copy ({kind})")


def _mma_op(cute: Any, cutlass: Any, atom: tuple[Any, ...]) -> Any:
    nv = cute.nvgpu
    fam = atom[0]
    if fam == "fma":
        return nv.MmaUniversalOp(getattr(cutlass, atom[1]))
    if fam == "sm80":
        return nv.warp.MmaF16BF16Op(getattr(cutlass, atom[1]), getattr(cutlass, atom[2]), atom[3])
    if fam == "tf32":
        return nv.warp.MmaTF32Op(atom[3])
    _f, ab, acc, shape, src, a_major, b_major = atom
    wg = nv.warpgroup
    return wg.MmaF16BF16Op(getattr(cutlass, ab), getattr(cutlass, acc), shape, wg.OperandSource[src],
                           nv.OperandMajorMode[a_major], nv.OperandMajorMode[b_major])


def mma_recipe(ck: Checker, cutlass: Any, r: tuple[Any, ...]) -> None:
    from threadmap.dsl import convert

    cute = ck.cute
    _k, atom, thr, perm, which = r
    what = f"tiled MMA {r[1:4]!r}"
    perm_dsl = tuple(p if p is None or isinstance(p, int) else build_layout(cute, p) for p in perm)
    try:
        mma = cute.make_tiled_mma(_mma_op(cute, cutlass, atom), build_layout(cute, thr), permutation_mnk=perm_dsl)
    except Exception as e:  # noqa: BLE001
        ck.stats.refused[f"mma {atom[0]} ({type(e).__name__})"] += 1
        return
    ours = convert(mma)
    ck.same_text(f"{what} ThrLayoutVMNK", mma.thr_layout_vmnk, ours.thr_layout_vmnk)
    if _dsl_tiler_text(tuple(mma.permutation_mnk)) != _tiler_text(tuple(ours.permutation)):
        ck.fail(what, f"permutation: the DSL has {_dsl_tiler_text(tuple(mma.permutation_mnk))}, the conversion "
                      f"{ours.permutation}")
    ck.evaluate(f"{what} ThrLayoutVMNK", mma.thr_layout_vmnk, ours.thr_layout_vmnk)
    for op in "ABC":
        ck.evaluate(f"{what} atom {op} TV", getattr(mma, f"tv_layout_{op}"), ours.atom.layout(op))
        ck.evaluate(f"{what} {op} TV", getattr(mma, f"tv_layout_{op}_tiled"), getattr(ours, f"get_layout{op}_TV")())
    ck.stats.objects[f"tiled MMA ({atom[0]})"] += 1
    # the tiled copies a kernel derives from it: ldmatrix for A and B, stmatrix and universal for C
    # the tiled copy a kernel derives from it: ldmatrix for A or B, stmatrix or universal for C
    nv = cute.nvgpu
    c_type = getattr(cutlass, atom[2] if atom[0] != "fma" else atom[1])
    sixteen = atom[0] in ("sm80", "gmma") and atom[1] in ("Float16", "BFloat16")
    ab = getattr(cutlass, atom[1]) if sixteen else None

    def stsm() -> Any:
        return cute.make_copy_atom(nv.warp.StMatrix8x8x16bOp(False, 4), cutlass.Float16)

    def matrices(op: str) -> int:
        """The widest ldmatrix (x1, x2, x4: 2, 4, 8 values a thread) the operand's values allow."""
        vals = cute.size(getattr(mma, f"tv_layout_{op}_tiled"), mode=[1])
        return 4 if vals % 8 == 0 else 2 if vals % 4 == 0 else 1

    makers = {
        "make_tiled_copy_C": lambda: cute.make_tiled_copy_C(cute.make_copy_atom(nv.CopyUniversalOp(), c_type), mma),
        "make_tiled_copy_A(ldmatrix)": lambda: cute.make_tiled_copy_A(
            cute.make_copy_atom(nv.warp.LdMatrix8x8x16bOp(False, matrices("A")), ab), mma),
        "make_tiled_copy_B(ldmatrix.trans)": lambda: cute.make_tiled_copy_B(
            cute.make_copy_atom(nv.warp.LdMatrix8x8x16bOp(True, matrices("B")), ab), mma),
        "make_tiled_copy_C_atom(stmatrix)": lambda: cute.make_tiled_copy_C_atom(stsm(), mma),
        "make_tiled_copy_S(universal, C_atom)": lambda: cute.make_tiled_copy_S(
            cute.make_copy_atom(nv.CopyUniversalOp(), c_type), cute.make_tiled_copy_C_atom(stsm(), mma)),
    }
    usable = which == "make_tiled_copy_C" or (sixteen and not (
        (which.startswith("make_tiled_copy_A") and atom[0] == "gmma" and atom[4] == "SMEM")
        or (which.startswith("make_tiled_copy_B") and atom[0] == "gmma")))
    if not usable:  # the kernel would not build it (an operand the atom reads from shared memory)
        which = "make_tiled_copy_C"
    try:
        tc = makers[which]()
    except Exception as e:  # noqa: BLE001
        ck.stats.refused[f"{which} ({type(e).__name__})"] += 1
        return
    check_tiled_copy(ck, f"{which} of {what}", tc, which)


def check_batch(recipes: list[tuple[Any, ...]], *, eval_cap: int = 4096) -> Stats:
    """Build, convert and compare ``recipes`` inside one DSL trace."""
    import cutlass
    import cutlass.cute as cute

    from threadmap.dsl import traced

    t0 = time.process_time()
    ck = Checker(cute, eval_cap)

    def body() -> None:
        for r in recipes:
            run_recipe(ck, cutlass, r)

    traced(body)
    ck.stats.seconds = time.process_time() - t0
    return ck.stats


def fixed_recipes() -> list[tuple[Any, ...]]:
    """One recipe of every atom the conversion models, so that each is compared whatever the
    draw: every copy kind, every SM80/TF32/FMA MMA, GMMA majors and sources, each derived copy."""
    from threadmap.layout import CopyAtom, get_copy_op, make_tiled_copy

    out: list[tuple[Any, ...]] = []
    thr, val = Layout((16, 4), (4, 1)), Layout((1, 4), (4, 1))
    for kind, bits, dtype in (("universal", 64, 16), ("auto", 64, 16), ("g2r", 128, 32),
                              ("cp_async_always", 32, 8), ("cp_async_global", 128, 64)):
        v = Layout((1, bits // dtype), (bits // dtype, 1))
        tc = make_tiled_copy(CopyAtom(get_copy_op(f"UniversalCopy<uint{bits}_t>"), dtype), thr, v)
        for how in ("tv", "layout_tv"):
            out.append(("copy", kind, DTYPES[dtype], bits, _ls(thr), _ls(v), how, _ls(tc.layout_tv),
                        tuple(tc.tiler_mn)))
    del val
    atoms: list[tuple[Any, ...]] = [("fma", t, None, (1, 1, 1)) for t in ("Float32", "Float16", "Float64")]
    atoms += list(_SM80)
    for src, a_major, b_major in (("SMEM", "K", "K"), ("SMEM", "MN", "K"), ("SMEM", "K", "MN"),
                                  ("SMEM", "MN", "MN"), ("RMEM", "K", "K"), ("RMEM", "K", "MN")):
        atoms.append(("gmma", "Float16", "Float32", (64, 8, 16), src, a_major, b_major))
    atoms += [("gmma", "Float16", "Float16", (64, 8, 16), "RMEM", "K", "MN"),
              ("gmma", "BFloat16", "Float32", (64, 8, 16), "SMEM", "MN", "K")]
    for i, atom in enumerate(atoms):
        if atom[0] == "gmma":
            thr3, perm = ((1, 1, 1), (0, 0, 0)), (None, None, None)
        elif atom[0] == "fma":
            thr3, perm = ((4, 8, 1), (8, 1, 0)), (((4, 2), (2, 1)), None, 2)
        else:
            thr3, perm = ((2, 2, 1), (1, 2, 0)), (atom[3][0] * 2, ((8, 2, 2), (1, 16, 8)), None)
        out.append(("mma", atom, thr3, perm, DERIVED[i % len(DERIVED)]))
    return out
