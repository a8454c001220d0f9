"""The sweep on complex and sub-byte GEMMs: one kernel each of complex<float> (with a conjugate
transform), complex<double>, int4b_t and uint1b_t, compiled in one translation unit (the
compile cache keeps it between runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from threadmap.spec.schema import ELEMENT_BITS
from threadmap.sweep.extract import Extracted, extract
from threadmap.sweep.library import Configuration, generate, group
from threadmap.sweep.run import SPEC_ELEMENTS, Options, in_slice, prefilter, sweep

KERNELS = ",".join([
    "cutlass_tensorop_c1688tf32gemm_128x128_16x4_cn_align1",      # cf32, A conjugated
    "cutlass_tensorop_z884gemm_128x64_8x3_nt_align1",             # cf64: one 128-bit element per cp.async
    "cutlass_tensorop_i16864gemm_s4_256x128_128x3_tn_align32",    # s4: 32 elements per 128-bit cp.async
    "cutlass_tensorop_i168256xorgemm_b1_256x128_512x3_tn_align128",  # b1: 128 elements per cp.async
])


@pytest.fixture(scope="module")
def configs() -> list[Configuration]:
    return [c for c in group(generate(("80",), KERNELS)) if in_slice(c)]


@pytest.fixture(scope="module")
def extracted(configs: list[Configuration]) -> list[Extracted]:
    from tests.support.cxx_oracle import require_oracle

    require_oracle()
    return extract(configs)


def test_every_generator_element_of_these_gemms_has_a_spec_element(configs: list[Configuration]) -> None:
    assert len(configs) == 4
    for c in configs:
        assert prefilter(c, "x") is None, c.kernels
        assert {c.fields["element_a"], c.fields["element_b"]} <= set(SPEC_ELEMENTS)


def test_the_headers_name_and_size_the_elements_as_the_spec_does(configs: list[Configuration],
                                                                 extracted: list[Extracted]) -> None:
    for c, ex in zip(configs, extracted, strict=True):
        assert not ex.error, ex.error
        for w in ("A", "B"):
            op = ex.operands[w]
            # the name threadmap_spec.h prints, the width cutlass::sizeof_bits gives
            assert op.element == SPEC_ELEMENTS[c.fields[f"element_{w.lower()}"]]
            assert ELEMENT_BITS[op.element] == op.bits
            # the iterator's access is the generator's alignment (32 x 4 bits, 128 x 1 bit: 128 bits)
            assert op.access == c.fields[f"align_{w.lower()}"]


def test_the_complex_and_sub_byte_gemms_are_analysed_and_pass(tmp_path: Path) -> None:
    report = sweep(Options(kernels=KERNELS, db=tmp_path / "s.db"))
    got = {c["kernels"][0]: c for c in report.configurations}
    assert len(got) == 4
    for name, c in got.items():
        assert c["status"] == "pass", (name, c["reason_kind"], c["reason"], c["findings"])
    # the sub-byte specs name their elements and copy 128 bits per cp.async
    from threadmap.sweep.store import Store

    with Store(tmp_path / "s.db") as store:
        texts = [r.spec for r in store.done().values()]
    docs = [yaml.safe_load(t) for t in texts]
    assert {d["element"] for d in docs} == {"cf32", "cf64", "i4", "b1"}
    for d in docs:
        for st in d["stages"][:2]:
            tm = st["copy"]["src"]["thread_map"]
            bits = tm["elements_per_access"] * ELEMENT_BITS[d["element"]] // tm.get("accesses_per_vector", 1)
            assert st["copy"]["atom"].endswith(f"<uint{bits}_t>")
