"""Planar-complex GEMMs: what the real templates print for a planar-complex kernel and its
array variant (one translation unit), the spec's real and imaginary addresses against the
C++ thread maps, shared tables and imaginary offsets, the specs verified, and planted wrong
premises refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

import threadmap.api as api
from threadmap.spec.load import loads_spec
from threadmap.sweep.extract import Extracted, extract
from threadmap.sweep.extracted import Operand
from threadmap.sweep.library import Configuration, generate, group
from threadmap.sweep.run import in_slice, verify_text
from threadmap.sweep.specs import NotAnalysed
from threadmap.sweep.specs_planar import planar_spec_text

#: one tile, as a planar-complex kernel and as its array variant (the same mainloop)
KERNELS = ["cutlass_tensorop_s16816gemm_planar_complex_f16_64x128_32x3_nt_align8",
           "cutlass_tensorop_s16816gemm_planar_complex_array_f16_64x128_32x3_nt_align8"]


@pytest.fixture(scope="session")
def planar_configs() -> list[Configuration]:
    return group(generate(("80",), ",".join(KERNELS)))


@pytest.fixture(scope="session")
def planar_extracted(planar_configs: list[Configuration]) -> list[Extracted]:
    from tests.support.cxx_oracle import require_oracle

    require_oracle()
    return extract(planar_configs)


def test_the_filter_selects_both_families_in_the_slice(planar_configs: list[Configuration]) -> None:
    assert sorted(c.family for c in planar_configs) == ["planar_complex", "planar_complex_array"]
    assert all(in_slice(c) for c in planar_configs)


def _cxx_coords(op: Operand, shared: bool) -> np.ndarray:
    """Every element the C++ map's accesses touch, (threads, steps, vector, 2) as (row, column)
    of the tile: the shared iterator's map read along the shared layout's contiguous dimension,
    or the global one's along the global layout's."""
    m = op.smap if shared else op.gmap
    starts = m.starts()                                         # (threads, steps, 2): contiguous, strided
    lanes = np.arange(m.epa)
    c = starts[..., 0][..., None] + lanes
    s = np.broadcast_to(starts[..., 1][..., None], c.shape)
    layout = op.smem_layout if shared else op.layout
    column_major = layout.removeprefix("cutlass::layout::").startswith("ColumnMajor")
    return np.stack([c, s] if column_major else [s, c], axis=-1)


def test_the_specs_addresses_are_the_cxx_ones_real_and_imaginary(
        planar_configs: list[Configuration], planar_extracted: list[Extracted]) -> None:
    """Block (0, 0, 0) of the spec, simulated: each thread's accesses of the real and the
    imaginary copies land, in shared memory, on the printed table's offset of the element the
    C++ shared iterator's access names (plus kImaginaryStride for the imaginary copy), and read,
    in global memory, the element the C++ global iterator's access names, at the same offset
    from the real and from the imaginary matrix's base."""
    cfg, ex = planar_configs[0], planar_extracted[0]
    assert not ex.error, ex.error
    w = planar_spec_text(cfg, ex, "test")
    tables = [t for pair in api.simulate(loads_spec(w.text, "yaml", cfg.kernels[0])) for t in pair]
    by = {(t.tensor, t.side): t for t in tables}
    for op_name in ("A", "B"):
        op = ex.operands[op_name]
        stride = int(ex.oracle[f"oracle.planar.{op_name}.imag_stride"])
        for tensor, extra in ((f"s{op_name}", 0), (f"s{op_name}i", stride)):
            t = by[(tensor, "dst")]
            want = _cxx_coords(op, shared=True)[t.thread, t.step, t.element]
            assert np.array_equal(np.stack(t.coords, axis=-1), want)
            assert np.array_equal(t.offset, op.table[want[:, 0], want[:, 1]] + extra), tensor
        real, imag = by[(op_name, "src")], by[(f"{op_name}i", "src")]
        want = _cxx_coords(op, shared=False)[real.thread, real.step, real.element]
        assert np.array_equal(np.stack(real.coords, axis=-1), want)
        assert np.array_equal(np.stack(imag.coords, axis=-1), want)
        assert np.array_equal(real.offset, imag.offset)
    # the imaginary tile is past the real ring, inside the buffer the C++ declares
    sai = by[("sAi", "dst")]
    assert sai.buffer == by[("sA", "dst")].buffer
    assert sai.offset.min() >= int(ex.oracle["oracle.planar.A.ring"])
    assert sai.offset.max() < int(ex.oracle["oracle.planar.A.buffer"])


def test_the_specs_verify_and_both_families_share_one(
        planar_configs: list[Configuration], planar_extracted: list[Extracted]) -> None:
    written = [planar_spec_text(c, ex, "test") for c, ex in zip(planar_configs, planar_extracted, strict=True)]
    assert written[0].content_hash == written[1].content_hash
    status, findings, _, costs, _, err = verify_text(written[0].text, planar_configs[0].kernels[0])
    assert (status, findings, err) == ("pass", [], "")
    # four copies, each side costed: the imaginary ones as the real ones
    assert {c["tensor"] for c in costs} == {"A", "Ai", "B", "Bi", "sA", "sAi", "sB", "sBi"}
    by = {(c["check"], c["tensor"]): c["summary"] for c in costs}
    for w in ("A", "B", "sA", "sB"):
        check = "bank_conflicts" if w.startswith("s") else "coalescing"
        assert by[(check, w)] == by[(check, f"{w}i")]


def test_an_imaginary_offset_that_overlaps_the_real_tile_races(
        planar_configs: list[Configuration], planar_extracted: list[Extracted]) -> None:
    """The placement matters: sAi moved onto the real stage, one vector off, is a race the
    verifier finds (two threads write one cell)."""
    ex = planar_extracted[0]
    w = planar_spec_text(planar_configs[0], ex, "test")
    doc = yaml.safe_load(w.text)
    assert doc["tensors"]["sAi"]["offset"] == int(ex.oracle["oracle.planar.A.imag_stride"])
    doc["tensors"]["sAi"]["offset"] = 8
    status, findings, *_ = verify_text(yaml.safe_dump(doc), "planted")
    assert status == "fail" and any(f["check"] == "dataflow" for f in findings)


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("oracle.planar.A.imag_dst", lambda s: str(int(s) // 2), "imaginary copy off the imaginary tile"),
    ("oracle.planar.B.ring", lambda s: str(int(s) + 8), "real and imaginary tiles overlap"),
    ("oracle.planar.A.buffer", lambda s: str(int(s) - 8), "imaginary tile past the shared buffer"),
    ("oracle.planar.mainloop", lambda s: "cutlass::gemm::threadblock::MmaMultistage<...>",
     "mainloop is not MmaPlanarComplexMultistage"),
])
def test_a_planted_wrong_premise_is_not_analysed(planar_configs: list[Configuration],
                                                  planar_extracted: list[Extracted],
                                                  field: str, value: object, reason: str) -> None:
    ex = planar_extracted[0]
    oracle = dict(ex.oracle)
    oracle[field] = value(oracle[field])  # type: ignore[operator]
    with pytest.raises(NotAnalysed) as e:
        planar_spec_text(planar_configs[0], dataclasses.replace(ex, oracle=oracle), "test")
    assert e.value.kind == reason
    # a real-side premise too: the shared iterator pairing accesses otherwise
    a = ex.operands["A"]
    moved = dataclasses.replace(a, smap=dataclasses.replace(a.smap, initial=a.smap.initial[::-1].copy()))
    with pytest.raises(NotAnalysed) as e:
        planar_spec_text(planar_configs[0], dataclasses.replace(ex, operands={**ex.operands, "A": moved}), "test")
    assert e.value.kind == "shared iterator pairs accesses differently"
