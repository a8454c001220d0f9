"""The sm90a part of the sweep: 3.x GEMMs keyed by their mainloop builder's arguments, the
mainloop read from CUTLASS's CollectiveBuilder host-side and cross-checked against threadmap's
GMMA atoms and make_tma_copy, and the spec verified.  Two configurations are compiled (one
translation unit, about 30 CPU-s cold; the compile cache keeps it)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import threadmap.api as api
from threadmap.spec.load import loads_spec
from threadmap.sweep.extract_sm90 import Extracted3x, extract
from threadmap.sweep.library import Configuration, SweepError, generate, group
from threadmap.sweep.run import in_slice
from threadmap.sweep.specs import NotAnalysed
from threadmap.sweep.specs_sm90 import spec_text3x

#: both operands K-major, A multicast over a 1x2 cluster, cooperative (two consumer warpgroups)
K_MAJOR = ("cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f16_128x128x64_1x2x1_0_tnn_align8"
           "_warpspecialized_cooperative_epi_tma")
#: both operands MN-major, B multicast over a 2x1 cluster, ping-pong (one consumer warpgroup a tile)
MN_MAJOR = ("cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f16_128x128x64_2x1x1_0_ntn_align8"
            "_warpspecialized_pingpong_epi_tma")


@pytest.fixture(scope="module")
def configs() -> list[Configuration]:
    cs = [c for c in group(generate(("90a",), f"{K_MAJOR},{MN_MAJOR}")) if in_slice(c)]
    assert sorted(k for c in cs for k in c.kernels) == sorted([K_MAJOR, MN_MAJOR])
    return cs


@pytest.fixture(scope="module")
def extracted(configs: list[Configuration]) -> list[Extracted3x]:
    from tests.support.cxx_oracle import require_oracle

    require_oracle()
    return extract(configs)


def _mainloop_text(op: object) -> str:
    """The generator's CollectiveBuilder declaration of the mainloop (and the mixed-input and
    blockwise preparations it refers to), the kernel's name taken out."""
    from cutlass_library.gemm_operation import EmitGemmUniversal3xInstance

    name = op.procedural_name()  # type: ignore[attr-defined]
    text = EmitGemmUniversal3xInstance().emit(op).replace(name, "K")
    builder = re.search(r"using K_mainloop =.*?::CollectiveOp;", text, re.S)
    assert builder is not None
    prep = re.findall(r"using K_(?:StrideNarrow|ValueShuffle|LayoutSF[AB]|ScaleConfig)\b[^;]*;", text)
    return builder.group(0) + "".join(prep)


def test_kernels_share_a_configuration_iff_the_builder_gets_the_same_arguments() -> None:
    """Within a tile's kernels, one configuration's kernels give the mainloop builder the same
    text, and where the stage count is explicit different configurations give different text
    (an automatic count also depends on the epilogue's storage: the key holds its arguments)."""
    ops = [op for _, op in generate(("90a",), "cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f16_128x128x64_")]
    cfgs = group([("gemm", op) for op in ops])
    by_name = {op.procedural_name(): op for op in ops}
    texts = {}
    for c in cfgs:
        got = {_mainloop_text(by_name[k]) for k in c.kernels}
        assert len(got) == 1, c.kernels
        texts[c.key] = got.pop()
    assert len(cfgs) < len(ops)  # the tile schedulers (stream-K) share a mainloop
    without_carveout = {re.sub(r',"carveout":\{[^}]*\}', "", k) for k in texts}
    assert len(without_carveout) == len(set(texts.values()))


def test_an_unknown_architecture_is_refused() -> None:
    with pytest.raises(SweepError, match="90a"):
        generate(("90",), "all")


def test_threadmap_models_give_the_builders_layouts_and_descriptors(
        configs: list[Configuration], extracted: list[Extracted3x]) -> None:
    """Each configuration's spec is written: threadmap's GMMA atom tiled as the builder tiles
    it gives the kernel's address at every cell, and its make_tma_copy gets every argument of
    CuTe's cuTensorMapEncodeTiled call; the spec then verifies."""
    for cfg, ex in zip(configs, extracted, strict=True):
        assert not ex.error, ex.error
        written = spec_text3x(cfg, ex, "test")
        report = api.verify(loads_spec(written.text, "yaml", cfg.kernels[0]))
        assert not report.errors and all(r.status != "fail" for run in report.runs for r in run.results)
    majors = {cfg.kernels[0]: (ex.operands["A"].stride, ex.operands["B"].stride) for cfg, ex in
              zip(configs, extracted, strict=True)}
    # the two configurations cover both majors (the builder's stride types say which)
    assert majors[K_MAJOR] != majors[MN_MAJOR]


def test_a_cell_or_a_box_that_differs_is_a_reason_with_its_witness(
        configs: list[Configuration], extracted: list[Extracted3x]) -> None:
    """The cross-checks can fail: one cell of the kernel's table moved, or one box extent
    halved, is reported with the cell or the field."""
    cfg, ex = configs[0], extracted[0]
    a = ex.operands["A"]
    table = a.table.copy()
    table[5] += 1
    moved = dataclasses.replace(ex, operands={**ex.operands, "A": dataclasses.replace(a, table=table)})
    with pytest.raises(NotAnalysed, match=r"A: cell 5 ") as e:
        spec_text3x(cfg, moved, "test")
    assert e.value.kind == "threadmap's GMMA shared layout differs from the builder's"
    assert a.tma is not None
    box = (a.tma.box[0] // 2, *a.tma.box[1:])
    halved = dataclasses.replace(ex, operands={**ex.operands, "A": dataclasses.replace(
        a, tma=dataclasses.replace(a.tma, box=box))})
    with pytest.raises(NotAnalysed, match=r"A: box ") as e:
        spec_text3x(cfg, halved, "test")
    assert e.value.kind == "threadmap's make_tma_copy differs from CuTe's"
    assert np.array_equal(a.table, extracted[0].operands["A"].table)
