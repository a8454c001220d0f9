"""``threadmap.Spec`` takes CuTe DSL objects wherever it takes threadmap's objects or CuTe
notation: the spec written from the DSL's objects is the one written from their conversions."""

from __future__ import annotations

import sys

import pytest

import threadmap.layout as L
from threadmap import Spec, registers, side, tile
from threadmap.errors import SpecError


def test_the_builder_never_needs_the_dsl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cutlass", None)  # any import of the DSL would fail
    thr = L.make_layout((16, 16), L.LayoutRight)
    mma = L.make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN", L.make_layout((2, 2, 1)), (32, 32, 16))
    s = (Spec("no dsl").element("f16").threads(128).sizes(M=64, N=64).grid("ceil_div(M, 32)", "ceil_div(N, 32)")
         .tensor("C", "(M,N):(N,1)", "global").tensor("s", thr, "shared")
         .copy(tile("C", (32, 32), "bx", "by").mma(mma, "C"), registers("r")))
    mma_side = s.to_dict()["stages"][0]["copy"]["src"]["mma"]
    assert mma_side["permutation"] == ["32", "32", "16"]  # a PermutationMNK is written, one item per mode
    assert s.verify().runs[0].verdict == "pass"


def _both(build_spec: object) -> tuple[dict, dict]:
    """The spec ``build_spec(objs)`` writes from DSL objects and from their conversions (both
    inside one trace: the DSL's objects live only there)."""
    import cutlass
    import cutlass.cute as cute

    from threadmap.dsl import convert, traced

    def run() -> tuple[dict, dict]:
        objs = {
            "dtype": cutlass.Float16,
            "layout": cute.make_layout((32, 32), stride=(32, 1)),
            "swizzled": cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0,
                                                  cute.make_layout((32, 64), stride=(64, 1))),
            "copy": cute.make_tiled_copy_tv(
                cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128),
                cute.make_layout((16, 8), stride=(8, 1)), cute.make_layout((1, 8))),
            "mma": cute.make_tiled_mma(cute.nvgpu.warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)),
                                       cute.make_layout((2, 2, 1)), permutation_mnk=(32, 32, 16)),
            "threads": cute.make_layout((8, 16), stride=(16, 1)),
        }
        objs["tiler"] = objs["copy"].tiler_mn
        ours = {k: (v if k == "dtype" else convert(v)) for k, v in objs.items()}
        ours["dtype"] = "f16"
        return build_spec(objs).to_dict(), build_spec(ours).to_dict()  # type: ignore[operator]

    return traced(run)


def test_dsl_objects_write_the_spec_their_conversions_write() -> None:
    pytest.importorskip("cutlass.cute", reason="the CuTe DSL (pip install 'threadmap[dsl]') is not installed")

    def build(o: dict) -> Spec:
        s = (Spec("from the DSL").element(o["dtype"]).threads(128).sizes(M=64, N=64)
             .grid("ceil_div(M, 32)", "ceil_div(N, 32)")
             .tensor("A", "(M,N):(N,1)", "global").tensor("C", "(M,N):(N,1)", "global", element=o["dtype"])
             .tensor("sA", o["swizzled"], "shared").tensor("sB", o["layout"], "shared"))
        s.copy(o["copy"], tile("A", o["tiler"], "bx", "by"), "sA")
        s.copy(side("sB").threads(o["threads"]), registers("r"))
        s.copy(tile("C", (32, 32), "bx", "by").mma(o["mma"], "C"), registers("acc"))
        return s

    from_dsl, from_ours = _both(build)
    assert from_dsl == from_ours
    assert from_dsl["element"] == "f16" and from_dsl["tensors"]["C"]["element"] == "f16"
    assert from_dsl["tensors"]["sA"]["layout"] == "Sw<3,3,3> o 0 o (32,64):(64,1)"
    assert from_dsl["stages"][0]["copy"]["src"]["tile"] == [16, 64]  # the DSL tiler's n:1 modes as extents


def test_a_dsl_object_after_its_trace_is_a_clear_error() -> None:
    pytest.importorskip("cutlass.cute", reason="the CuTe DSL (pip install 'threadmap[dsl]') is not installed")
    import cutlass.cute as cute

    from threadmap.dsl import traced
    from threadmap.errors import LayoutError

    stale = traced(lambda: cute.make_layout((4, 4)))
    with pytest.raises(LayoutError, match="live only while"):
        Spec("late").tensor("a", stale, "global")
    with pytest.raises(SpecError, match="expected a TiledCopy"):
        side("s").tiled_copy(L.make_layout(4))


def test_a_bad_permutation_mode_is_located() -> None:
    import threadmap.api as api

    spec = {"spec": 1, "name": "p", "element": "f16", "threads": 128, "sizes": {"M": 64, "N": 64},
            "grid": ["ceil_div(M, 32)", "ceil_div(N, 32)"],
            "tensors": {"C": {"memory": "global", "layout": "(M,N):(N,1)"}},
            "stages": [{"copy": {"src": {"tensor": "C", "tile": [32, 32], "at": ["bx", "by"],
                                         "mma": {"atom": "SM80_16x8x16_F32F16F16F32_TN", "atom_layout": "(2,2,1)",
                                                 "operand": "C", "permutation": ["32", "(8,2,2):(1,16,8", "16"]}},
                                 "dst": {"registers": "r"}}}]}
    report = api.verify([spec])
    assert report.errors and "stages[0].copy.src.mma.permutation[1]" in report.errors[0].message
    assert "a permutation mode is '_', an extent or a layout" in report.errors[0].message


def _ranged_copy(predicate: str) -> Spec:
    """A 4 x 8 tile of 32 threads, one 32-bit value each, from X to Y through registers, for
    every M, N in 1..64 (the DSL's tiled copy, written into a spec with size ranges)."""
    import cutlass
    import cutlass.cute as cute

    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=32)
    tc = cute.make_tiled_copy_tv(atom, cute.make_layout((4, 8), stride=(8, 1)), cute.make_layout((1, 1)))
    return (Spec("ranged copy").element(cutlass.Float32).threads(tc.size)
            .sizes(M={"min": 1, "max": 64}, N={"min": 1, "max": 64}).grid("ceil_div(M, 4)", "ceil_div(N, 8)")
            .tensor("X", "(M,N):(N,1)", "global").tensor("Y", "(M,N):(N,1)", "global")
            .copy(tc, tile("X", tc.tiler_mn, "bx", "by"), registers("r"), predicate=predicate)
            .copy(tc, registers("r"), tile("Y", tc.tiler_mn, "bx", "by"), predicate=predicate)
            .expect(verdict="pass", transform="copy"))


def test_assert_dsl_partitions_proves_size_ranges() -> None:
    """With prove=True the spec is proved for every size in its ranges: with per-element
    predicates every property is PROVED; without them the partial tiles of sizes that are not
    multiples of the tile leave the tensors, and the proof refutes predicates with such a size
    (the enumeration is restricted to a check that passes, so that the proof is what fails)."""
    pytest.importorskip("cutlass.cute", reason="the CuTe DSL (pip install 'threadmap[dsl]') is not installed")
    from threadmap.testing.assertions import assert_dsl_partitions

    assert_dsl_partitions(_ranged_copy, "bounds", prove=True, checks=["coverage", "predicates"])
    with pytest.raises(AssertionError, match=r"predicates is REFUTED at \{"):
        assert_dsl_partitions(_ranged_copy, "none", prove=True, checks=["bank_conflicts"])
