"""What the sweep tests share: a narrow kernel filter (seven kernels, six configurations) and the
extraction of the five that are not interleaved, compiled once (the compile cache keeps it
between runs)."""

from __future__ import annotations

import pytest

from threadmap.sweep.extract import Extracted, extract
from threadmap.sweep.library import Configuration, generate, group
from threadmap.sweep.run import in_slice

#: one of each case the sweep meets:
KERNELS = ",".join([
    # 2 kernels (f16 and f32 C), one configuration: crosswise shared layouts, 4 stages
    "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_tn_align8",
    "cutlass_tensorop_s16816gemm_f16_128x128_32x4_tn_align8",
    # the grouped kernel of that tile (its own configuration: another kernel template)
    "cutlass_tensorop_s16816gemm_grouped_f16_128x128_32x4_tn_align8",
    # congruous layouts, operands aligned to 2 halves: 4 cp.async per thread-map vector
    "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_nt_align2",
    # 3 stages: the crosswise row pitch is 3 x 32 halves
    "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x3_tn_align8",
    # SIMT: the shared iterator's thread map is the transpose of the global one's
    "cutlass_simt_sgemm_128x128_8x4_tn_align1",
    # an interleaved layout (ColumnMajorInterleaved<32>): its own program text (test_interleaved.py)
    "cutlass_tensorop_s8_i16832gemm_s8_256x128_64x3_n32t32_align16",
])


@pytest.fixture(scope="session")
def configs() -> list[Configuration]:
    """The configurations read through the common mainloop program (not the interleaved one)."""
    return [c for c in group(generate(("80",), KERNELS)) if in_slice(c) and c.fields["layout_a"] in ("n", "t")]


@pytest.fixture(scope="session")
def extracted(configs: list[Configuration]) -> dict[str, Extracted]:
    """Each configuration's extraction by the name of each of its kernels (one translation
    unit, the one a sweep of KERNELS compiles)."""
    from tests.support.cxx_oracle import require_oracle

    require_oracle()
    return {k: e for c, e in zip(configs, extract(configs), strict=True) for k in c.kernels}


def by_kernel(configs: list[Configuration], name: str) -> Configuration:
    return next(c for c in configs if name in c.kernels)
