"""The GMMA descriptor model against the H200 (recorded by tools/gpu/gmma/run.sh and record.py
into docs/hardware/gmma/wgmma_h200.json): for every case the D that one wgmma computed from a
shared image of random small integers has the SHA-256 of the D the model predicts (A and B read
at ``gmma_smem_addresses`` of the descriptors).  The cases cover every majorness and swizzle,
N = 8..256, f16 and bf16, operands on and off the 1024-byte atom (the swizzle's phase comes
from the absolute address), and descriptors altered as kernels get them wrong.  Each thread's
accumulator registers, dumped as they are, hold D where the GMMA atom's CLayout says."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from threadmap.hardware import gmma_operand_wavefronts

ROOT = Path(__file__).resolve().parents[2]
RECORD = json.loads((ROOT / "docs" / "hardware" / "gmma" / "wgmma_h200.json").read_text())


def _cases() -> ModuleType:
    name = "threadmap_gmma_cases"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / "gpu" / "gmma" / "cases.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses look their module up
        spec.loader.exec_module(mod)
    return sys.modules[name]


CASES = _cases()


def test_every_case_ran() -> None:
    assert len(CASES.CASES) >= 30
    assert set(RECORD["cases"]) == {c.id for c in CASES.CASES}
    assert all(r["status"] == "ok" for r in RECORD["cases"].values())
    assert "0 errors" in RECORD["memcheck"]["error_summary"]


@pytest.mark.parametrize("case", CASES.CASES, ids=lambda c: c.id)
def test_the_h200_computed_what_the_model_predicts(case: Any) -> None:
    pred = CASES.predicted(case).astype("<f4")
    assert hashlib.sha256(pred.tobytes()).hexdigest() == RECORD["cases"][case.id]["sha256_D"]


@pytest.mark.parametrize("case", CASES.CASES, ids=lambda c: c.id)
def test_each_threads_accumulators_are_the_atoms_clayout(case: Any) -> None:
    # the probe dumps every thread's registers as they are; the model places D's elements in
    # them by the GMMA atom's CLayout (threadmap.layout.atom.mma_traits)
    regs = CASES.predicted_registers(case).astype("<f4")
    assert hashlib.sha256(regs.tobytes()).hexdigest() == RECORD["cases"][case.id]["sha256_registers"]


@pytest.mark.parametrize("case", CASES.CASES, ids=lambda c: c.id)
def test_the_tensor_cores_shared_wavefronts_are_predicted(case: Any) -> None:
    # Nsight Compute's l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma of the one wgmma: the
    # core matrices of A and B, each served as one 8-lane phase of a 16-byte access
    ra, rb = CASES.reads(case)
    _, _, ma, mb = CASES.descriptors(case)
    wa, wb = gmma_operand_wavefronts(ra, ma, 16), gmma_operand_wavefronts(rb, mb, 16)
    rec = RECORD["cases"][case.id]
    assert wa.wavefronts + wb.wavefronts == rec["gmma_wavefronts"]
    assert wa.extra + wb.extra == rec["gmma_bank_conflicts"]


def test_the_altered_descriptors_read_other_elements() -> None:
    # the altered cases are informative: what they predict (and the H200 computed) is not the
    # product of the operands the descriptors were built for
    altered = [c for c in CASES.CASES if c.alter]
    assert len(altered) >= 5
    for c in altered:
        intended = CASES.predicted(type(c)(c.id, c.n, c.dtype, c.a, c.b))
        assert not np.array_equal(CASES.predicted(c), intended), c.id
