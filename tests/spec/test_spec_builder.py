"""The Python spec builder (``threadmap.Spec``): the file -> model -> file round trip, specs
written from threadmap's CuTe objects against the hand-written library, and misuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import threadmap
import threadmap.api as api
import threadmap.layout as L
from threadmap import Spec, registers, side, tile
from threadmap.cutlass import PitchLinearWarpRakedThreadMap
from threadmap.errors import SpecError
from threadmap.spec.load import loads_spec

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = sorted((ROOT / "specs").rglob("*.yaml"))


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.relative_to(ROOT / "specs").as_posix())
def test_file_model_file_round_trip(path: Path) -> None:
    """Law: ``Spec.from_spec(x).spec() == x``; the YAML and JSON the builder writes load to
    the model the file loads to."""
    model = api.load(path).spec
    built = Spec.from_file(path)
    assert built.spec() == model
    assert loads_spec(built.to_json(), "json", "<json>").spec == model
    assert loads_spec(built.to_yaml(), "yaml", "<yaml>").spec == model
    # and again: writing what was read changes nothing
    assert Spec.from_spec(built.spec()).to_yaml() == built.to_yaml()


def _same_results(mine: Spec, path: Path) -> None:
    a, b = mine.verify().runs[0], api.verify(str(path)).runs[0]
    assert [(r.check, r.stage, r.status, r.summary) for r in a.results] == \
        [(r.check, r.stage, r.status, r.summary) for r in b.results]
    assert (a.verdict, a.as_expected, a.totals) == (b.verdict, b.as_expected, b.totals)


def test_tiled_copy_objects_reproduce_row_rvectorized() -> None:
    row = L.LayoutRight
    thr = L.make_layout((16, 16), row)
    auto = L.CopyAtom(L.AutoVectorizingCopy(), "float")
    copy_a = L.make_tiled_copy(auto, thr, L.make_layout((1, 4), row))
    copy_b = L.make_tiled_copy(auto, thr, L.make_layout((4, 1), row))
    s = (Spec("CuTe transpose, tiled copy, row vectorized (mat_transpose_cute_row_rvectorized)")
         .element("f32").threads(256).sizes(M=1024, N=1024).grid("ceil_div(M, 16)", "ceil_div(N, 64)")
         .tensor("x", "(M,N):(N,1)", "global", align=256).tensor("y", "(N,M):(M,1)", "global", align=256)
         .tensor("sA", L.make_layout((16, 64), row), "shared")
         .tensor("sB", L.make_layout((64, 16), L.LayoutLeft), "shared").alias("sA")
         .copy(copy_a, tile("x", (16, 64), "bx", "by"), "sA", name="copy(copy_a, tAgA, tAsA)")
         .barrier()
         .copy(copy_b, "sB", tile("y", (64, 16), "by", "bx"), name="copy(copy_b, tBsB, tBgB)")
         .expect(verdict="fail", transform="transpose", coverage="exact", sectors_per_request=1.0,
                 bank_conflicts=0, failing_checks=["bank_conflicts"]))
    tc = s.to_dict()["stages"][0]["copy"]["src"]["tiled_copy"]
    assert L.parse(tc["layout_tv"]) == copy_a.layout_tv and L.parse_tiler(tc["tiler"]) == copy_a.tiler_mn
    _same_results(s, ROOT / "specs" / "cute_transpose" / "row_rvectorized.yaml")


def test_mma_and_thread_map_objects_reproduce_the_library() -> None:
    mma = L.make_tiled_mma(L.get_mma_atom("UniversalFMA"), L.make_layout((16, 16, 1)))
    cta = (128, 128)
    s = (Spec("sgemm_2 compute partition of C (TiledMMA UniversalFMA 16x16x1), epilogue read/write")
         .element("f32").threads(256).sizes(M=256, N=256).grid("ceil_div(M, 128)", "ceil_div(N, 128)")
         .tensor("C", "(M,N):(1,M)", "global")
         .copy(tile("C", cta, "bx", "by").mma(mma, "C"), registers("tCrC"), name="axpby reads tCgC")
         .copy(registers("tCrC"), tile("C", cta, "bx", "by").mma(mma, "C"), name="axpby writes tCgC")
         .expect(verdict="pass", transform="copy", coverage="exact", sectors_per_request=1.0))
    _same_results(s, ROOT / "specs" / "sgemm" / "sgemm_2_compute_c.yaml")

    tm = PitchLinearWarpRakedThreadMap((32, 128), 128, (4, 8), 8)
    s = (Spec("CUTLASS SM80 f16 GEMM A tile").element("f16").threads(128).sizes(M=256, K=64)
         .grid("ceil_div(M, 128)", "ceil_div(K, 32)")
         .tensor("A", "(M,K):(K,1)", "global")
         .tensor("sA", L.composition(L.Swizzle(2, 3, 3), L.make_layout((128, 32), L.LayoutRight)), "shared")
         .copy(tile("A", (128, 32), "bx", "by").thread_map(tm), side("sA").thread_map(tm),
               predicate="vector", name="cp.async A tile")
         .barrier()
         .expect(verdict="pass", transform="copy", coverage="exact", sectors_per_request=1.0, bank_conflicts=0))
    _same_results(s, ROOT / "specs" / "cutlass" / "sm80_f16_gemm_a_128x32_warpraked.yaml")


def test_misuse_is_a_spec_error() -> None:
    thr = L.make_layout((32, 8))
    tc16 = L.make_tiled_copy(L.CopyAtom(L.UniversalCopy("uint64_t"), "half_t"), thr, L.make_layout((4, 1)))
    s = Spec("k").element("f32").threads(256).tensor("A", L.make_layout((128, 8)), "shared")
    s.copy(tc16, "A", registers("r"))
    with pytest.raises(SpecError, match="16-bit values but the tensor holds 32-bit"):
        s.to_yaml()
    with pytest.raises(SpecError, match="follows a copy"):
        Spec("k").barrier().predicate("bounds")
    with pytest.raises(SpecError, match="already partitioned by threads"):
        side("A").threads(thr).threads(thr)
    with pytest.raises(SpecError, match="rank-3 tile needs 3"):
        tile("A", (4, 4, 4), "bx", "by")
    with pytest.raises(SpecError, match="operand"):
        side("A").mma(L.make_tiled_mma(L.get_mma_atom("UniversalFMA"), thr), "D")
    with pytest.raises(SpecError, match="unknown element"):
        Spec("k").element("f31")
    # an invalid spec is reported by the loader, at the field, in the text the builder wrote
    bad = Spec("k").element("f32").threads(100).tensor("A", "(32,8):(1,32)", "shared").copy(
        side("A").threads(thr), registers("r"))
    with pytest.raises(SpecError, match=r"<Spec 'k'>:\d+:\d+: stages\[0\]\.copy\.src\.threads"):
        bad.load()


def test_top_level_names_are_lazy() -> None:
    assert threadmap.Spec is Spec
    with pytest.raises(AttributeError):
        threadmap.NoSuchThing  # noqa: B018
    s = Spec("k", "d").element("f32").threads(32).tensor("s", "32:1", "shared").copy(side("s").threads("32:1"),
                                                                                    registers("r"))
    assert json.loads(s.to_json())["description"] == "d"
