"""``threadmap.dsl.convert`` is exact: generated CuTe DSL objects, converted, evaluate as the DSL
evaluates them (see :mod:`tests.dsl.convert_cases` for what is compared).

The suite converts ``THREADMAP_DSL_CONVERT_OBJECTS`` objects (default 700: every modelled atom
once, then drawn ones), a few hundred per ``@cute.jit`` trace; set it to 10000 for the full
run (docs/dsl.md records its counts and time).  ``THREADMAP_DSL_EVAL_CAP`` bounds the indices
one layout is evaluated at by the DSL (default 1024; only the replicated GMMA shared-memory
operands exceed it); ``THREADMAP_DSL_CONVERT_SCALE=large`` draws bigger objects.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("cutlass.cute", reason="the CuTe DSL (pip install 'threadmap[dsl]') is not installed")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

from tests.dsl.convert_cases import SCALES, Stats, check_batch, draw_recipes, fixed_recipes  # noqa: E402
from threadmap.dsl import capture, convert, smem_layout, traced  # noqa: E402
from threadmap.errors import DependencyError, LayoutError, ThreadmapError  # noqa: E402
from threadmap.layout import ComposedLayout, Layout, Swizzle  # noqa: E402

OBJECTS = int(os.environ.get("THREADMAP_DSL_CONVERT_OBJECTS", "700"))
SCALE = os.environ.get("THREADMAP_DSL_CONVERT_SCALE", "suite")
EVAL_CAP = int(os.environ.get("THREADMAP_DSL_EVAL_CAP", "1024"))
BATCH = 200


def test_generated_dsl_objects_convert_exactly(sm90: None) -> None:
    t0 = time.process_time()
    fixed = fixed_recipes()
    # about 1.3 converted objects a recipe (a tiled MMA brings a derived tiled copy, a swizzled
    # layout its swizzle): draw enough, stop once the count is reached
    drawn = draw_recipes(max(0, OBJECTS - len(fixed)), **SCALES[SCALE])
    recipes = fixed + drawn
    stats = Stats()
    for i in range(0, len(recipes), BATCH):
        stats.add(check_batch(recipes[i:i + BATCH], eval_cap=EVAL_CAP))
        if sum(stats.objects.values()) >= OBJECTS:
            break
    total = sum(stats.objects.values())
    report = (f"{total} DSL objects converted ({dict(sorted(stats.objects.items()))}); {stats.evaluations} DSL "
              f"evaluations compared; {stats.sampled} layouts evaluated at {EVAL_CAP} spread indices; refused by "
              f"the DSL itself: {dict(stats.refused)}; {time.process_time() - t0:.1f} CPU-s")
    print(report, file=sys.stderr)
    assert not stats.mismatches, "\n".join(stats.mismatches[:20])
    assert total >= OBJECTS
    kinds = {k.split(" (")[0] for k in stats.objects} | set(stats.objects)
    for kind in ("layout", "identity layout", "swizzle", "swizzled layout", "layout o layout", "tiled copy",
                 "tiled MMA (fma)", "tiled MMA (sm80)", "tiled MMA (tf32)", "tiled MMA (gmma)",
                 "make_tiled_copy_A(ldmatrix)", "make_tiled_copy_C_atom(stmatrix)", "make_tiled_copy_C"):
        assert kind in kinds, f"no {kind} was compared: {report}"


# ------------------------------------------------------------------------------ clear errors
@cute.jit
def _dynamic_layout(n: cutlass.Int32, out: cutlass.Constexpr) -> None:
    try:
        convert(cute.make_layout((n, 4)))
    except ThreadmapError as e:
        out.append(e)


def test_a_dynamic_value_is_refused_with_its_layout() -> None:
    errors: list[Exception] = []
    _dynamic_layout(3, errors)
    assert len(errors) == 1 and isinstance(errors[0], LayoutError)
    assert "(?,4):(1,?)" in str(errors[0]) and "dynamic shape" in str(errors[0])


def test_unmodelled_atoms_are_refused_by_name(sm90: None) -> None:
    def build() -> list[str]:
        out = []
        ptr = cute.make_ptr(cutlass.Float16, 0, cute.AddressSpace.gmem, assumed_align=16)
        g = cute.make_tensor(ptr, cute.make_layout((256, 128), stride=(128, 1)))
        tma, _t = cute.nvgpu.cpasync.make_tiled_tma_atom(cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(), g,
                                                         cute.make_layout((64, 64), stride=(64, 1)), (64, 64))
        fp8 = cute.make_tiled_mma(cute.nvgpu.warp.MmaFP8Op(cutlass.Float8E4M3FN, cutlass.Float32, (16, 8, 32)))
        unpack = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x16x8bOp(False, 4, 4), cutlass.Uint8)
        for obj in (tma, fp8, unpack, cutlass.Int32, cute.make_identity_tensor((4, 4))):
            try:
                convert(obj)
            except ThreadmapError as e:
                out.append(f"{type(e).__name__}: {e}")
        return out

    msgs = traced(build)
    assert len(msgs) == 5
    assert msgs[0].startswith("AtomError") and "CopyBulkTensorTileG2SOp is not yet modelled" in msgs[0]
    assert msgs[1].startswith("AtomError") and "MmaFP8Op is not yet modelled" in msgs[1]
    assert msgs[2].startswith("AtomError") and "LdMatrix8x16x8bOp" in msgs[2]
    assert msgs[3].startswith("LayoutError")
    assert msgs[4].startswith("LayoutError") and "convert its layout" in msgs[4]


def test_objects_used_after_their_trace_and_foreign_objects_are_refused() -> None:
    stale = traced(lambda: cute.make_layout((4, 4)))
    with pytest.raises(LayoutError, match="live only while a @cute.jit function is traced"):
        convert(stale)
    with pytest.raises(LayoutError, match="convert takes CuTe DSL objects"):
        convert(object())
    assert convert((1, None, Layout(4, 1))) == (1, None, Layout(4, 1))  # ints and threadmap objects pass


def test_without_the_dsl_the_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from threadmap.dsl.convert import require_dsl

    monkeypatch.setitem(sys.modules, "cutlass", None)
    monkeypatch.setitem(sys.modules, "cutlass.cute", None)
    with pytest.raises(DependencyError, match=r"threadmap\[dsl\]") as e:
        require_dsl()
    assert isinstance(e.value, ImportError)  # pytest.importorskip("threadmap.dsl") skips on it
    # importing the package itself, in a fresh interpreter where the DSL cannot be imported
    code = ("import sys; sys.modules['cutlass'] = None\n"
            "try:\n    import threadmap.dsl\nexcept ImportError as e:\n    print(type(e).__name__, e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2]).stdout
    assert out.startswith("DependencyError") and "pip install 'threadmap[dsl]'" in out


# ------------------------------------------------------------------------------ pointer swizzles
def test_a_pointer_swizzle_acts_on_bytes() -> None:
    """``get_tensor(L, swizzle=Sw<3,4,3>)`` of 16-bit elements is ``Sw<3,3,3> o L`` on element
    offsets: the byte address of element ``c`` is the swizzled byte address of ``L(c)``."""
    got = capture(lambda: (cute.make_layout((8, 64), stride=(64, 1)), cute.make_swizzle(3, 4, 3)))
    lay, sw = got
    el = smem_layout(lay, sw, element=cutlass.Float16)
    assert isinstance(el, ComposedLayout) and (el.layout_a.num_bits, el.layout_a.num_base) == (3, 3)
    for i in range(512):
        assert el(i) * 2 == sw(lay(i) * 2)
    # a GMMA atom sw o 0 o L whose swizzle the kernel moves to the pointer: the same
    atom = capture(lambda: cute.nvgpu.warpgroup.make_smem_layout_atom(
        cute.nvgpu.warpgroup.SmemLayoutAtomKind.K_SW128, cutlass.Float16))
    assert str(smem_layout(atom, element=16)) == str(el)
    with pytest.raises(LayoutError, match="moves bytes inside"):
        smem_layout(lay, Swizzle(3, 0, 3), element=cutlass.Float32)


def test_thread_slices_partition_as_the_dsl_does() -> None:
    """A ``ThrCopy`` / ``ThrMma`` converts to threadmap's slice at the same thread: its partition
    of an identity tensor holds the coordinates the DSL's partition holds, value by value."""
    from threadmap.layout import make_identity_tensor

    def build() -> list[tuple[list, list]]:
        tc = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32),
                                     cute.make_ordered_layout((4, 32), order=(1, 0)),
                                     cute.make_ordered_layout((4, 4), order=(1, 0)))
        mma = cute.make_tiled_mma(cute.nvgpu.warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)),
                                  cute.make_layout((2, 2, 1)), permutation_mnk=(32, 32, 16))
        out = []
        for t in (0, 37, 127):
            thr, ours = tc.get_slice(t), convert(tc.get_slice(t))
            dsl_part = thr.partition_S(cute.make_identity_tensor((32, 256)))
            tm_part = ours.partition_S(make_identity_tensor((32, 256)))
            out.append(([dsl_part[i] for i in range(cute.size(dsl_part))],
                        [tm_part(i).to_tuple((0, 0)) for i in range(tm_part.size())]))
            thr_m, ours_m = mma.get_slice(t), convert(mma.get_slice(t))
            dsl_c = thr_m.partition_C(cute.make_identity_tensor((64, 64)))
            tm_c = ours_m.partition_C(make_identity_tensor((64, 64)))
            out.append(([dsl_c[i] for i in range(cute.size(dsl_c))],
                        [tm_c(i).to_tuple((0, 0)) for i in range(tm_c.size())]))
        return out

    for dsl_coords, ours in traced(build):
        assert dsl_coords == ours and len(ours) > 1
