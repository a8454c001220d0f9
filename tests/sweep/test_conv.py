"""Convolutions as implicit GEMMs: what the real templates print for one configuration per conv
kind and iterator algorithm the sweep models, the family's layouts against the kernel's own
iterators run host-side, the specs verified and a planted layout change caught."""

from __future__ import annotations

import dataclasses

import pytest

import threadmap.api as api
from threadmap.spec.load import loads_spec
from threadmap.sweep.extract import Extracted, extract
from threadmap.sweep.extract_conv import CONTIGUOUS_MODES, family
from threadmap.sweep.library import Configuration, generate, group
from threadmap.sweep.specs import NotAnalysed
from threadmap.sweep.specs_conv import check_addresses, conv_spec_text

#: one of each modelled case: Fprop analytic and optimized (one spec), a single-group Fprop
#: kernel (run with groups = 1), Dgrad of unit stride, Wgrad
MODELLED = [
    "cutlass_tensorop_s16816fprop_analytic_f16_256x128_32x3_nhwc_align8",
    "cutlass_tensorop_s16816fprop_optimized_f16_256x128_32x3_nhwc_align8",
    "cutlass_tensorop_s16816fprop_optimized_f16_256x128_32x3_nhwc_single_group_align8",
    "cutlass_tensorop_s16816dgrad_optimized_f16_128x128_32x4_nhwc_unity_stride_align8",
    "cutlass_tensorop_s16816wgrad_analytic_f16_128x128_32x4_nhwc_align8",
]


@pytest.fixture(scope="session")
def conv_configs() -> list[Configuration]:
    return group(generate(("80",), ",".join(MODELLED)))


@pytest.fixture(scope="session")
def conv_extracted(conv_configs: list[Configuration]) -> list[Extracted]:
    """One translation unit, the one a sweep of MODELLED compiles."""
    from tests.support.cxx_oracle import require_oracle

    require_oracle()
    return extract(conv_configs)


def test_the_printed_thread_maps_run_along_the_kinds_contiguous_modes(
        conv_configs: list[Configuration], conv_extracted: list[Extracted]) -> None:
    """The C++ ThreadMap's (contiguous, strided) shape is the tile read along the contiguous
    mode the conv kind's MmaCore layouts give (default_conv2d_*.h)."""
    for c, ex in zip(conv_configs, conv_extracted, strict=True):
        assert not ex.error and ex.mainloop == "multistage", ex.error
        for w, mode in zip("AB", CONTIGUOUS_MODES[c.fields["conv_kind"]], strict=True):
            op = ex.operands[w]
            assert op.map is not None and op.map["contiguous_mode"] == mode
            rows, cols = op.tile
            assert tuple(op.map["shape"]) == ((cols, rows) if mode == 1 else (rows, cols))
            # the shared layout's own orientation agrees (RowMajor...: columns contiguous)
            assert op.smem_layout.removeprefix("cutlass::layout::").startswith("RowMajor" if mode else "ColumnMajor")


def test_specs_verify_and_their_layouts_are_the_iterators_addresses(
        conv_configs: list[Configuration], conv_extracted: list[Extracted]) -> None:
    """Every modelled configuration gets a spec (its layouts gave the checksums the kernel's
    iterators printed) that threadmap verifies; analytic and optimized Fprop share one."""
    hashes = {}
    for c, ex in zip(conv_configs, conv_extracted, strict=True):
        w = conv_spec_text(c, ex, "test")
        hashes[c.kernels[0]] = w.content_hash
        report = api.verify(loads_spec(w.text, "yaml", c.kernels[0]))
        assert not report.errors and report.runs
        assert all(r.verdict == "pass" for r in report.runs), [r.failing for r in report.runs]
    assert hashes[MODELLED[0]] == hashes[MODELLED[1]] == hashes[MODELLED[2]]
    assert len(set(hashes.values())) == 3


@pytest.mark.parametrize("which", ["A", "B"])
def test_a_planted_layout_change_is_caught_by_the_iterators(
        conv_configs: list[Configuration], conv_extracted: list[Extracted], which: str) -> None:
    """Filter taps in the other order (the strides of s and r swapped in the GEMM k mode): the
    sample has 3x3 filters, so the layout's offsets are no longer the iterator's."""
    c, ex = conv_configs[0], conv_extracted[0]
    fam = family(c)
    text = fam.a if which == "A" else fam.b
    s_r = {"A": ("(1,C,(Q+S-1)*C,", "(1,(Q+S-1)*C,C,"), "B": ("(1,C,S*C,", "(1,S*C,C,")}[which]
    swapped = text.replace(*s_r)
    assert swapped != text
    planted = dataclasses.replace(fam, **{which.lower(): swapped})
    with pytest.raises(NotAnalysed) as e:
        check_addresses(c, planted, ex)
    assert e.value.kind == "iterator addresses differ from the spec's layout"
    check_addresses(c, fam, ex)  # the family's own layouts pass
