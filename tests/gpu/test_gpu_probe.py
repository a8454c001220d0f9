"""The coordinate probe: the real CUTLASS/CuTe templates against the simulator.

Every spec of the library (each size environment, each copy stage) is probed by ONE program
compiled once: as CUDA for sm_90 (``THREADMAP_TEST_ARCHS=sm_80,sm_90`` adds sm_80: each
architecture's device compile of the whole library costs about two CPU-minutes), with every
behaviour kernel (so the generated kernels cannot rot without a GPU), and run on the host,
where the same functions compute every record with the headers' templates.  The simulator
must agree on every record; a perturbed simulation (one stride, one predicate, one swizzle
bit) must not.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import numpy as np
import pytest

from tests.support.cxx_oracle import cannot_run
from threadmap.api import spec_files
from threadmap.gpu.behave import behaviour_program
from threadmap.gpu.compare import diff_stage
from threadmap.gpu.execute import KERNEL_VARIANTS
from threadmap.gpu.probe import expected, host_source, probe_program, run_host
from threadmap.gpu.run import select_blocks
from threadmap.gpu.toolchain import ToolchainError, build_host, disassemble, find_tool, require, sass_widths
from threadmap.model import build_model
from threadmap.spec.load import load_spec, loads_spec

#: the architectures the library is compiled for here (the twins of tests/gpu/test_compiled.py
#: are compiled for sm_80 and sm_90 both)
ARCHS = tuple(os.environ.get("THREADMAP_TEST_ARCHS", "sm_90").split(","))
ROOT = Path(__file__).resolve().parents[2]
#: records per stage at most in CI (larger grids are sampled: corners, edges, random blocks)
ROWS = 1 << 15


@dataclasses.dataclass
class Probed:
    path: Path
    model: object
    probe: object
    blocks: np.ndarray
    got: np.ndarray


#: specs compiled with the library (in the same one compile) that are not library specs
EXTRA = [ROOT / "tests/gpu/cp_async_zfill.yaml"]


@dataclasses.dataclass
class Build:
    probed: list[Probed]          # the library's
    extra: list[Probed]           # EXTRA's
    behaviours: dict[Path, list[object]]  # per spec file, its behaviour programs
    binary: Path                  # the compiled program: host code, and SASS for ARCHS


@pytest.fixture(scope="module")
def build() -> Build:
    try:
        require()
    except ToolchainError as e:
        cannot_run(str(e))
    jobs = []
    behaviours: dict[Path, list[object]] = {}
    for f in [*spec_files([ROOT / "specs"]), *EXTRA]:
        loaded = load_spec(f)
        for env in loaded.envs:
            m = build_model(loaded, env)
            prog = probe_program(m)
            assert not prog.skipped, (f, prog.skipped)
            behaviours.setdefault(f, []).append(behaviour_program(m, prog))
            for s in prog.stages:
                jobs.append((f, m, prog, s, select_blocks(m, s.threads * s.values, ROWS)))
    # one compile: the probes and behaviour kernels as CUDA for ARCHS, and the host program
    run = [(p, s, b) for _, _, p, s, b in jobs]
    device = [b.source for bs in behaviours.values() for b in bs]  # type: ignore[attr-defined]
    outs = run_host(run, archs=ARCHS, device_only=device)
    binary = build_host(host_source(run, device), defines=("THREADMAP_HOST_MAIN",), archs=ARCHS)  # cached
    probed = [Probed(f, m, s, b, o) for (f, m, _, s, b), o in zip(jobs, outs)]
    return Build([p for p in probed if p.path not in EXTRA], [p for p in probed if p.path in EXTRA],
                 behaviours, binary)


@pytest.fixture(scope="module")
def library(build: Build) -> list[Probed]:
    return build.probed


def test_every_library_stage_matches_the_real_templates(library: list[Probed]) -> None:
    specs = {p.path for p in library}
    # every spec with a copy stage is probed (a pipeline alone has none: its protocol is confirmed
    # by tools/gpu/pipeline, tests/pipeline/test_pipeline_h200.py)
    staged = [f for f in spec_files([ROOT / "specs"]) if "\nstages:" in f.read_text()]
    assert len(specs) == len(staged) and len(library) >= 100
    bad = []
    rows = 0
    for p in library:
        want, real = expected(p.model, p.probe, p.blocks)
        r = diff_stage(p.model, p.probe, p.blocks, p.got, want, real)
        rows += r.rows
        assert (p.got[real] != -1).any()  # the probe wrote its records
        if r.mismatches:
            bad.append((str(p.path), p.model.env, r.stage, r.by_field, r.first[:1]))
    assert not bad, bad
    assert rows > 1_000_000


def _perturbed(p: Probed, old: str, new: str) -> object:
    text = p.path.read_text()
    assert text.count(old) == 1, old
    loaded = loads_spec(text.replace(old, new), "yaml", str(p.path))
    return build_model(loaded, p.model.env)


def _one(library: list[Probed], name: str, stage: int, sizes: dict[str, int] | None = None) -> Probed:
    return next(p for p in library if p.path.name == name and p.probe.stage == stage
                and (sizes is None or p.model.env == sizes) and "ranges" not in p.path.parts)


@pytest.mark.parametrize("case", ["stride", "predicate", "swizzle"])
def test_a_perturbed_simulation_is_caught(library: list[Probed], case: str) -> None:
    """One stride, one predicate mode, one swizzle bit changed in the simulation only: the
    probe of the unchanged kernel must disagree, and in the field the change touches."""
    if case == "stride":
        p = _one(library, "row_smem.yaml", 0)
        m = _perturbed(p, 'x:  {memory: global, layout: "(M,N):(N,1)"', 'x:  {memory: global, layout: "(M,N):(N,2)"')
        field = "src.offset"
    elif case == "predicate":
        p = _one(library, "stripmined_vector_straddle_n62.yaml", 0)
        m = _perturbed(p, "predicate: vector", "predicate: bounds")
        field = "predicate"
    else:
        p = _one(library, "row_smem_swizzled.yaml", 0)
        m = _perturbed(p, 'sA: {memory: shared, layout: "Sw<4,0,4>', 'sA: {memory: shared, layout: "Sw<3,0,4>')
        field = "dst.offset"
    want, real = expected(m, p.probe, p.blocks)
    r = diff_stage(m, p.probe, p.blocks, p.got, want, real)
    assert r.mismatches > 0 and set(r.by_field) == {field}, r.by_field
    first = r.first[0]
    assert first.field == field and first.device != first.simulated and first.line is not None
    # and the unperturbed simulation agrees on the same records
    want0, _ = expected(p.model, p.probe, p.blocks)
    assert diff_stage(p.model, p.probe, p.blocks, p.got, want0, real).mismatches == 0


def test_select_blocks_keeps_corners_and_edges() -> None:
    loaded = load_spec(ROOT / "specs/ranges/row_smem.yaml")
    m = build_model(loaded, {"M": 1000, "N": 1000})
    b = select_blocks(m, 256, 256 * 50)
    gx, gy, _ = m.grid
    assert b.size == 50 and np.unique(b).size == 50
    for corner in (0, gx - 1, gx * (gy - 1), gx * gy - 1):
        assert corner in b
    assert (b % gx == gx - 1).sum() >= 5 and (b // gx == gy - 1).sum() >= 5
    assert select_blocks(m, 256, 1 << 30).size == m.num_blocks


CP_ASYNC_LIBRARY = ["specs/cutlass/sm80_f16_gemm_a_128x32_warpraked.yaml",
                    "specs/cutlass/sm80_f16_gemm_b_64x64_warpraked.yaml",
                    "specs/ranges/sm80_f16_gemm_a_128x32_warpraked.yaml"]


def _sass(binary: Path, kernel: str, arch: str) -> str:
    """One kernel's SASS text for one architecture, cut from the whole file's disassembly (a
    ToolchainError here says why nothing could be read: no cuobjdump, no nvdisasm)."""
    if find_tool("cuobjdump") is None:
        cannot_run("cuobjdump not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    text = disassemble(binary)
    for section in text.split("code for ")[1:]:
        if section.split(None, 1)[0] != arch:
            continue
        for function in section.split("Function : ")[1:]:
            if function.split(None, 1)[0] == kernel:
                return function
    raise AssertionError(f"{kernel} for {arch} is not in the disassembly of {binary} ({len(text)} characters)")


@pytest.mark.parametrize("spec", [*CP_ASYNC_LIBRARY, "tests/gpu/cp_async_zfill.yaml"])
def test_a_cp_async_stage_compiles_to_ldgsts(build: Build, spec: str) -> None:
    """The library's cp.async stages (and the zero-fill form) compiled for ARCHS: every
    kernel of the stage issues LDGSTS.128 and no other global or shared access (the one
    instruction is both sides), then waits for it (LDGDEPBAR, DEPBAR) before the barrier."""
    (prog, *_) = build.behaviours[ROOT / spec]
    assert prog.cp_async_stages == (0,)  # type: ignore[attr-defined]
    for kernel in [prog.stage_kernel(0, w, solo) for w, solo in KERNEL_VARIANTS]:  # type: ignore[attr-defined]
        _sass(build.binary, kernel, ARCHS[0])  # readable, or the reason it is not
        assert sass_widths(build.binary, kernel) == {"LDGSTS": [128]}, kernel
    for arch in ARCHS:
        sass = _sass(build.binary, prog.count_kernel, arch)  # type: ignore[attr-defined]
        assert re.search(r"LDGSTS\.E\.BYPASS\.128 ", sass), (arch, sass[-2000:])
        assert sass.index("LDGDEPBAR") < sass.index("DEPBAR.LE SB0, 0x0") < sass.index("BAR.SYNC")
        # the zero-fill form: every LDGSTS unguarded, its source size chosen by a predicate operand
        # ("[R11], [R2.64], P3"); the plain form: guarded ("@P0 LDGSTS") where a predicate can be false
        ldgsts = re.findall(r"(@!?P\d+ )?LDGSTS\.E\.BYPASS\.128 \[R\d+\], (?:desc\[UR\d+\])?\[R\d+\.64[^\]]*\]"
                            r"(, !?P\d+)? ;", _sass(build.binary, prog.stage_kernel(0), arch))  # type: ignore[attr-defined]
        assert ldgsts, arch
        if "zfill" in spec:
            assert all(not guard and operand for guard, operand in ldgsts), (arch, ldgsts)
        else:
            assert all(not operand for _, operand in ldgsts), (arch, ldgsts)


def test_a_plain_stage_compiles_to_its_loads_and_stores(build: Build) -> None:
    """A stage without a cp.async atom is issued as loads and stores, as before."""
    (prog, *_) = build.behaviours[ROOT / "specs/sgemm/sgemm_2_copy_a.yaml"]
    assert prog.cp_async_stages == ()  # type: ignore[attr-defined]
    _sass(build.binary, prog.stage_kernel(0, "src"), ARCHS[0])  # type: ignore[attr-defined]
    widths = sass_widths(build.binary, prog.stage_kernel(0, "src"))  # type: ignore[attr-defined]
    assert widths["LDG"] == [128] and "LDGSTS" not in widths  # (and the sink's STG)
