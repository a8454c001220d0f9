"""The spec grammar's ``pipeline.gmma`` block: the wgmma operands' descriptors built from the
shared tensors as ``make_gmma_desc`` builds them; each planted bug is found with its witness
(derived here from the layout functions, not copied from the report); bad input is a located
error (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

import threadmap.api as api
import threadmap.layout as L
from tests.support.located import assert_located_error
from tests.support.spec_runs import findings as _findings

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "specs" / "pipeline" / "sm90_gmma_converted_operands.yaml"
BASE = LIB.read_text()


def test_the_library_operands_pass() -> None:
    run = api.verify_spec(LIB)[0]
    assert run.verdict == "pass"
    model = api.models(LIB)[0]
    assert model.pipeline is not None and len(model.pipeline.gmma) == 2
    a, b = model.pipeline.gmma
    # the derivation's fields: A K-major SBO 64 (1024 B), B MN-major LBO 64, SBO 128
    da, db = a.descriptors[(0, 0)], b.descriptors[(0, 0)]
    assert (da.layout_type, da.stride_byte_offset) == (L.LayoutType.B128, 64)
    assert (db.layout_type, db.leading_byte_offset, db.stride_byte_offset) == (L.LayoutType.B128, 64, 128)
    assert a.placed_at == 512 and a.phase_mismatch is None   # written through CuTe's swizzled pointer


def test_a_tile_relative_writer_off_the_atom_is_found_with_both_addresses() -> None:
    fs = [f for f in _findings(ROOT / "specs" / "planted" / "sm90_gmma_tile_relative_writer_off_atom.yaml")
          if f.kind == "gmma_swizzle_phase"]
    assert {f.witness["operand"] for f in fs} == {"a", "b"}
    w = next(f.witness for f in fs if f.witness["operand"] == "a")
    sw_elements = L.parse_layout("Sw<3,3,3> o ((8,8),64):((64,512),1)")
    i, j = w["element"]
    assert w["writer_address"] == 512 + sw_elements(i, j) * 2             # the swizzle on the tile's offsets
    inner = L.parse_layout("((8,8),64):((64,512),1)")
    assert w["reader_address"] == L.Swizzle(3, 4, 3)(512 + inner(i, j) * 2)  # on the absolute address
    assert w["wrong_elements"] == 64 * 64


def test_swapped_lbo_and_sbo_are_named() -> None:
    fs = [f for f in _findings(ROOT / "specs" / "planted" / "sm90_gmma_lbo_sbo_swapped.yaml")
          if f.kind == "gmma_descriptor_fields"]
    assert len(fs) == 1 and "LBO and SBO swapped" in fs[0].message
    w = fs[0].witness
    built = L.GmmaDescriptor(0, w["built"]["lbo"], w["built"]["sbo"], 0, L.LayoutType.B128)
    given = L.GmmaDescriptor(0, w["given"]["lbo"], w["given"]["sbo"], 0, L.LayoutType.B128)
    right = L.gmma_smem_addresses(built, "MN", 128, 16, 16)
    wrong = L.gmma_smem_addresses(given, "MN", 128, 16, 16)
    assert w["wrong_elements"] == 4 * int((right != wrong).sum())   # four K blocks of the stage


def test_a_padded_layout_is_rejected_as_the_header_does() -> None:
    fs = [f for f in _findings(ROOT / "specs" / "planted" / "sm90_gmma_padded_layout.yaml")
          if f.kind == "gmma_descriptor"]
    assert len(fs) == 1
    with pytest.raises(L.GmmaLayoutError) as e:
        L.make_gmma_desc("K", L.parse_layout("(64,16):(72,1)"), 16, 0)
    assert fs[0].witness["rule"] == e.value.rule and fs[0].witness["canonical"] == e.value.canonical
    assert fs[0].witness["at"].endswith(":26:8")   # the line of pipeline.gmma.a


@pytest.mark.parametrize(("old", "new", "where", "says"), [
    ("a: {tensor: sA, major: K}", "a: {tensor: sX, major: K}", "pipeline.gmma.a.tensor", "not a shared tensor"),
    ("a: {tensor: sA, major: K}", "a: {tensor: sA, major: K, n: 64}", "pipeline.gmma.a.n", "B's extent"),
    ("b: {tensor: sB, major: MN}", "b: {tensor: sB, major: MN, n: 96}", "pipeline.gmma.b.tensor", "divide"),
    ("b: {tensor: sB, major: MN}", "b: {tensor: sB, major: NM}", "pipeline.gmma.b.major", "K"),
    ("b: {tensor: sB, major: MN}", "b: {tensor: sB, major: MN, descriptor: {lbo: 99999, sbo: 1}}",
     "pipeline.gmma.b.descriptor.lbo", "16384"),
])
def test_a_bad_gmma_block_is_a_located_error(tmp_path: Path, old: str, new: str, where: str, says: str) -> None:
    assert old in BASE
    p = tmp_path / "v.yaml"
    p.write_text(BASE.replace(old, new, 1))
    assert_located_error(p, where, says)


def test_a_layout_the_header_accepts_but_misreads_is_found() -> None:
    fs = [f for f in _findings(ROOT / "specs" / "planted" / "sm90_gmma_chunk_order_misread.yaml")
          if f.kind == "gmma_layout_misread"]
    assert len(fs) == 1 and fs[0].witness["operand"] == "b"
    w = fs[0].witness
    layout = L.parse_layout("((1,4,8),(8,2)):((64,8,1),(32,256))")
    i, j = w["element"]
    placed = w["placed_at"]
    assert w["layout_address"] == L.Swizzle(2, 4, 3)(placed + layout(i, j) * 2)
    d = L.make_gmma_desc("MN", L.ComposedLayout(L.Swizzle(2, 4, 3), L.SmemPtrFlag(16), layout), 16, placed)
    assert w["reader_address"] == int(L.gmma_smem_addresses(d, "MN", 32, 16, 16)[i, j])


def test_a_shared_tensor_may_name_its_gmma_atom(tmp_path: Path) -> None:
    spec = ROOT / "specs" / "mma" / "sm90_stmatrix_epilogue_64x16.yaml"
    hand = "Sw<1,3,3> o ((8,8),16):((16,128),1)"
    named = "tile_to_shape(GMMA::Layout_K_SW32_Atom<half_t>{}, make_shape(64,16))"
    p = tmp_path / "named.yaml"
    p.write_text(spec.read_text().replace(hand, named))
    mine, theirs = api.verify_spec(p)[0], api.verify_spec(spec)[0]
    assert [(r.check, r.stage, r.status, r.summary) for r in mine.results] == \
        [(r.check, r.stage, r.status, r.summary) for r in theirs.results]
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(spec.read_text().replace(hand, named.replace("half_t", "float")))
    assert_located_error(wrong, "tensors.sD.layout", "32-bit elements")
