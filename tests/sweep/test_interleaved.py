"""Interleaved global operands: a ``ColumnMajorInterleaved<32>`` x ``RowMajorInterleaved<32>``
GEMM and a ``TensorNCxHWx<32>`` conv2d Fprop, printed by the real templates (one translation
unit), their specs in the coordinates of the iterators' pitch-linear views verified, and each
premise shown to fail when its input is planted wrong."""

from __future__ import annotations

import dataclasses

import pytest

import threadmap.api as api
import threadmap.sweep.interleaved as il
from threadmap.spec.load import loads_spec
from threadmap.sweep.extract import Extracted, extract
from threadmap.sweep.library import Configuration, generate, group
from threadmap.sweep.run import prefilter
from threadmap.sweep.specs import NotAnalysed

#: the GEMM is the shared sweep tests' interleaved kernel (its printed fields are cached once)
GEMM = "cutlass_tensorop_s8_i16832gemm_s8_256x128_64x3_n32t32_align16"
CONV = "cutlass_tensorop_s8_i16832fprop_optimized_s8_64x64_64x10_nc32hw32_align16"


@pytest.fixture(scope="module")
def il_configs() -> list[Configuration]:
    return group(generate(("80",), f"{GEMM},{CONV}"))


@pytest.fixture(scope="module")
def il_extracted(il_configs: list[Configuration]) -> list[Extracted]:
    from tests.support.cxx_oracle import require_oracle

    require_oracle()
    return extract(il_configs)


def test_interleaved_configurations_pass_the_prefilter(il_configs: list[Configuration]) -> None:
    assert [c.kind for c in il_configs] == ["gemm", "conv2d"]
    for c in il_configs:
        assert prefilter(c, "d") is None and il.interleave_of(c) == 32


def test_specs_in_the_views_coordinates_verify(il_configs: list[Configuration],
                                                il_extracted: list[Extracted]) -> None:
    """Each spec passes every premise (the GEMM's layout objects and the convolution's
    iterators gave the spec layouts' checksums) and threadmap verifies it; the thread maps
    are the printed maps of the views' tiles (kM*32, kK/32) and (kK/32, kN*32)."""
    for c, ex in zip(il_configs, il_extracted, strict=True):
        assert not ex.error, ex.error
        w = il.interleaved_spec_text(c, ex, "test")
        spec = loads_spec(w.text, "yaml", c.kernels[0])
        report = api.verify(spec)
        assert not report.errors and report.runs
        assert all(r.verdict == "pass" for r in report.runs), [r.failing for r in report.runs]
        tm, tn, tk = ex.shape
        a_copy, b_copy = (st.copy_ for st in spec.spec.stages if not isinstance(st, str))
        assert list(a_copy.src.tile or []) == [tm * 32, tk // 32]
        assert list(b_copy.src.tile or []) == [tk // 32, tn * 32]
        if c.kind == "gemm":
            assert spec.spec.tensors["A"].layout == il.gemm_layouts(32)["A"]


def test_a_planted_gemm_layout_is_caught_by_the_layout_object(
        il_configs: list[Configuration], il_extracted: list[Extracted], monkeypatch: pytest.MonkeyPatch) -> None:
    """A's interleaved groups of columns in the other order (the view's row stride and group
    stride swapped): not ColumnMajorInterleaved<32>'s offsets."""
    right = il.gemm_layouts(32)
    planted = {**right, "A": "((32,M),K/32):((M,32*32),1)"}
    monkeypatch.setattr(il, "gemm_layouts", lambda i: planted)
    with pytest.raises(NotAnalysed) as e:
        il.interleaved_spec_text(il_configs[0], il_extracted[0], "test")
    assert e.value.kind == "iterator addresses differ from the spec's layout" and e.value.detail.startswith("A:")


def test_a_planted_conv_layout_is_caught_by_the_iterators(
        il_configs: list[Configuration], il_extracted: list[Extracted], monkeypatch: pytest.MonkeyPatch) -> None:
    """Filter taps in the other order in B (the strides of s and r swapped): the sample has
    3x3 filters, so the kernel's own filter iterator gives other offsets."""
    fam = il.interleaved_family(il_configs[1])
    swapped = fam.b.replace("(32*K*S*R,32*K,32*K*S,", "(32*K*S*R,32*K*S,32*K,")
    assert swapped != fam.b
    monkeypatch.setattr(il, "interleaved_family", lambda cfg: dataclasses.replace(fam, b=swapped))
    with pytest.raises(NotAnalysed) as e:
        il.interleaved_spec_text(il_configs[1], il_extracted[1], "test")
    assert e.value.kind == "iterator addresses differ from the spec's layout" and e.value.detail.startswith("B:")


def test_planted_views_are_caught(il_configs: list[Configuration], il_extracted: list[Extracted]) -> None:
    """Another interleave than the layout type's is refused, and a shared iterator that
    visits the tile in another order than the view's map no longer pairs."""
    c, ex = il_configs[0], il_extracted[0]
    with pytest.raises(NotAnalysed) as e:
        il.interleaved_copies(c, ex, 64)
    assert e.value.kind == "global layout not the interleaved one"
    a = ex.operands["A"]
    reversed_threads = dataclasses.replace(a.smap, initial=a.smap.initial[::-1].copy())
    bad = dataclasses.replace(ex, operands={**ex.operands, "A": dataclasses.replace(a, smap=reversed_threads)})
    with pytest.raises(NotAnalysed) as e:
        il.interleaved_copies(c, bad, 32)
    assert e.value.kind == "shared iterator pairs accesses differently"
    il.interleaved_copies(c, ex, 32)  # the printed one pairs
