"""The probe cases of the 4-byte cp.async streams (tools/gpu/ldgsts/cases.py ``vector_run``): their
lane tables are the sweep kernels' own (threadmap's model of the specs in
tools/gpu/sweep_confirm/manifest.json), and, once the H200 has run them
(docs/hardware/ldgsts_h200_vector.json), the probe issued what each case means and
``hardware.ldgsts_wavefronts`` is what it counted, case by case."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from threadmap import hardware as hw

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "tools" / "gpu" / "ldgsts"


def _load(name: str) -> ModuleType:
    # by path under a name of its own: other probes' tools have a `cases` module too, and a
    # test process (an xdist worker) may have imported one of them first
    spec = importlib.util.spec_from_file_location(f"ldgsts_probe_{name}", PROBE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


probe_cases = _load("cases")
kernel_streams = _load("kernel_streams")
vector_fit = _load("vector_fit")


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


VECTOR: list[dict[str, Any]] = json.loads(DATA.read_text())["cases"] if DATA.exists() else []


@pytest.mark.parametrize("case", VECTOR, ids=[str(c["name"]) for c in VECTOR])
def test_the_rule_is_what_the_h200_counts_for_every_vector_case(case: dict[str, Any]) -> None:
    """``hardware.ldgsts_wavefronts`` per instruction, nothing carried between instructions,
    warps or CTAs: the H200's total for the case (every iteration's instructions, every warp)."""
    per_warp = 0
    for it in range(case["iters"]):
        for g0, s in vector_fit.instructions(case):
            g = [x + it * case.get("step", 0) for x in g0]
            per_warp += hw.ldgsts_wavefronts([(t, s[t], g[t]) for t in range(hw.WARP_SIZE)], case["bytes"]).wavefronts
    assert case["wavefronts"] == per_warp * case["warps"] * case["grid"]
