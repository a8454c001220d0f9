"""Inputs a user plausibly gets wrong in the wgmma/tcgen05 grammar and API, each once accepted
silently or answered unclearly: now a located error (exit 2) or an error naming the fix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import threadmap.layout as L
from tests.support.located import assert_located_error
from threadmap.errors import LayoutError, ParseError

ROOT = Path(__file__).resolve().parents[2]
GMMA = (ROOT / "specs" / "pipeline" / "sm90_gmma_converted_operands.yaml").read_text()
TMEM = (ROOT / "specs" / "pipeline" / "sm100_tmem_epilogue.yaml").read_text()
SB = 'sB: {memory: shared, layout: "Sw<3,3,3> o ((64,2),(8,8)):((1,512),(64,1024))", align: 512, swizzled_by: address}'


def _spec(tmp_path: Path, text: str, old: str, new: str) -> Path:
    assert old in text
    p = tmp_path / "v.yaml"
    p.write_text(text.replace(old, new, 1))
    return p


@pytest.mark.parametrize(("old", "new", "where", "says"), [
    # wgmma has no transpose for tf32 (and 8-bit) operands: CUTLASS's op selector asserts K-major;
    # the descriptor alone accepts the MN-major atom, so this once passed
    (SB, 'sB: {memory: shared, element: tf32, layout: "tile_to_shape(GMMA::Layout_MN_SW128_Atom<tfloat32_t>{}, '
         'make_shape(128,64))", swizzled_by: address}', "pipeline.gmma.b.major", "K-major only"),
    (SB, 'sB: {memory: shared, element: e4m3, layout: "tile_to_shape(GMMA::Layout_MN_SW128_Atom<float_e4m3_t>{}, '
         'make_shape(128,64))", swizzled_by: address}', "pipeline.gmma.b.major", "MajorB must be GMMA::Major::K"),
    # the default n (the tile's MN extent) must itself be a wgmma N
    (SB, 'sB: {memory: shared, layout: "(100,64):(1,100)", swizzled_by: address}', "pipeline.gmma.b.tensor",
     "no wgmma N"),
    (SB, 'sB: {memory: shared, layout: "(4,16):(1,4)", swizzled_by: address}', "pipeline.gmma.b.tensor", "give n"),
])
def test_gmma_operands_wgmma_lacks_are_located_errors(tmp_path: Path, old: str, new: str, where: str,
                                                     says: str) -> None:
    assert_located_error(_spec(tmp_path, GMMA, old, new), where, says)


@pytest.mark.parametrize(("old", "new", "where", "says"), [
    # a misspelt fragment: no tcgen05.ld fills it, so no use-before-wait could ever be found
    ("            - use: tTR_rAcc", "            - use: tTR_rAc", "ops[5].use", "not a fragment a tmem_load"),
    ("{fragment: tTR_rAcc, op: SM100_TMEM_LOAD_32dp32b64x, column: 0}",
     "{fragment: '', op: SM100_TMEM_LOAD_32dp32b64x, column: 0}", "ops[1].tmem_load", "at least 1 character"),
    # a bare operation given a value: say so, not only "unknown field"
    ("            - tmem_wait_ld", "            - tmem_wait_ld: 0", "ops[3].tmem_wait_ld",
     "without arguments: write it alone, - tmem_wait_ld"),
])
def test_tmem_ops_misused_are_located_errors(tmp_path: Path, old: str, new: str, where: str, says: str) -> None:
    assert_located_error(_spec(tmp_path, TMEM, old, new), where, says)


@pytest.mark.parametrize("text", ["GMMA::GMMA::SM90::Layout_K_SW128_Atom<half_t>{}",
                                  "SM90::SM90::Layout_K_SW128_Atom<half_t>{}",
                                  "GMMA::Sw<3,4,3> o (8,64):(64,1)", "GMMA::"])
def test_gmma_qualifiers_are_the_cxx_ones(text: str) -> None:
    with pytest.raises(ParseError, match="expected a GMMA layout atom"):
        L.parse_layout(text)


def test_gmma_qualifiers_cxx_accepts_still_parse() -> None:
    want = L.parse_layout("GMMA::Layout_K_SW128_Atom<half_t>{}")
    for text in ("SM90::GMMA::Layout_K_SW128_Atom<half_t>{}", "cute::SM90::GMMA::Layout_K_SW128_Atom<half_t>{}",
                 "Layout_K_SW128_Atom<half_t>{}"):
        assert repr(L.parse_layout(text)) == repr(want)


def test_a_long_text_is_quoted_around_the_error_only() -> None:
    text = "(" + "1," * 5000 + "1):(" + "1," * 5000 + ")"
    with pytest.raises(ParseError) as e:
        L.parse_layout(text)
    msg = str(e.value)
    assert len(msg) < 400 and "at column 20006" in msg and msg.endswith(",)'")


@pytest.mark.parametrize("offset", ["1", 1.5, True, None])
def test_a_descriptor_advances_by_integers_only(offset: object) -> None:
    gmma = L.GmmaDescriptor(64, 1, 64, 0, L.LayoutType.B128)
    umma = L.UmmaSmemDescriptor.from_u64(gmma.desc)
    for d in (gmma, umma):
        with pytest.raises(LayoutError, match="integer number of uint128_t"):
            d + offset  # type: ignore[operator]
    assert (gmma + 2).start_address == (gmma + np.int64(2)).start_address == 66
