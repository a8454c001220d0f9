"""The probe cases of the 4-byte cp.async streams (tools/gpu/ldgsts/cases.py ``vector_run``): their
lane tables are the sweep kernels' own (threadmap's model of the specs in
tools/gpu/sweep_confirm/manifest.json), and, once the H200 has run them
(docs/hardware/ldgsts_h200_vector.json), the probe issued what each case means."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "gpu" / "ldgsts"))

import cases as probe_cases  # noqa: E402
import kernel_streams  # noqa: E402
import vector_fit  # noqa: E402


@pytest.mark.parametrize("key", list(probe_cases.KERNEL_VECTORS))
def test_the_vectors_are_the_kernels_own(key: str) -> None:
    kernel, tensor, vectors = probe_cases.KERNEL_VECTORS[key]
    derived = kernel_streams.stream(kernel)["stages"][tensor]
    assert derived["bytes"] == 4
    # the warp's stage: each vector's 4 pieces back to back, piece j at +4j on both sides
    want = [(g, s) for g, s in derived["instructions"]]
    got = [(list(g), list(s)) for g, s in probe_cases.stream(key)]
    assert got == want


def test_the_cases_fit_the_probe() -> None:
    cs = probe_cases.vector_run()
    assert len({c.name for c in cs}) == len(cs) and all(c.name.startswith("vec_") for c in cs)
    assert all(len(c.instructions) <= 16 and all(c.pred) for c in cs)


DATA = ROOT / "docs" / "hardware" / "ldgsts_h200_vector.json"


@pytest.mark.skipif(not DATA.exists(), reason="the vector cases have not been run on the H200")
def test_the_probe_issued_what_each_case_means() -> None:
    measured = json.loads(DATA.read_text())["cases"]
    assert [c["name"] for c in measured] == [c.name for c in probe_cases.vector_run()]
    assert all(c["instructions"] == vector_fit.expected_instructions(c) for c in measured)
