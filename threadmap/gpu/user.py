"""The user's own kernel on the GPU: ``threadmap gpu SPEC --exe "PROGRAM ARGS" --kernel-name S``
(or ``--launcher module:function`` for a kernel launched from Python).

The program runs once under Nsight Compute (``--clock-control none``), its first launch of
the kernel whose name contains ``S`` profiled.  The prediction is the compiled kernel's
(:mod:`threadmap.gpu.compiled`: the SASS of the executable, or of ``--kernel FILE``), at the
spec's sizes.  A kernel's counters are per kind of instruction (shared loads, shared stores,
global loads, global stores, ``LDGSTS``), not per stage side, so the comparison is per kind:
the sides of one kind are summed (wavefronts and instructions for shared memory, sectors and
requests for global memory), and a kind that is ``ambiguous`` in the SASS is compared as a
whole.  Whatever the program prints goes through ``threadmap diff``'s reader too: records of
``threadmap_probe.h`` in its output are diffed with the simulation in the same run.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field

from threadmap.errors import ThreadmapError
from threadmap.gpu.compiled import analyse, load_kernel
from threadmap.gpu.log import LogDiff, diff_log
from threadmap.gpu.profile import NOT_COMPARABLE, TOLERANCE, number, parse_ncu_csv
from threadmap.gpu.report import ReportModel
from threadmap.gpu.toolchain import SOURCE_SUFFIXES, find_tool
from threadmap.report.model import CompiledKernel, CompiledSide

#: (memory, op) of each kind of instruction: its counters (numerator, denominator).  Shared
#: wavefronts are the per-instruction (SASS) count: the L1 pipe's own count also holds what
#: other CTAs on the SM cost (a few per cent more at full occupancy, run to run; kept beside it).
#: An LDGSTS's global reads are counted with the global loads on the H200 (no ldgsts sector
#: metric), so a kernel's LDG and LDGSTS are one kind.
KIND_METRICS: dict[tuple[str, str], tuple[str, str]] = {
    ("shared", "ld"): ("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                       "smsp__sass_inst_executed_op_shared_ld.sum"),
    ("shared", "st"): ("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
                       "smsp__sass_inst_executed_op_shared_st.sum"),
    ("global", "ld"): ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                       "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
    ("global", "st"): ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
                       "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
    ("shared", "ldgsts"): ("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
                           "smsp__sass_inst_executed_op_ldgsts.sum"),
}
#: counted beside the comparison: the L1 pipe's shared wavefronts with the other CTAs' share
CONTENDED_METRICS = {
    ("shared", "ld"): "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    ("shared", "st"): "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
}


#: the note of a run without Nsight Compute (nothing measured: ``threadmap gpu`` exits 2)
NO_NCU = "ncu not found: the prediction only"



class UserKernelError(ThreadmapError):
    """The user's program could not be profiled (bad command, no such kernel launched)."""


class KindCounts(ReportModel):
    """One kind of instruction of the user's kernel: predicted beside measured."""

    memory: str
    op: str
    sides: list[str] = Field(description="the stage sides of this kind ('stage 2 src')")
    metric: Literal["wavefronts_per_instruction", "sectors_per_request"]
    predicted_instructions: int | None = None
    predicted: float | None = None
    measured_instructions: float | None = Field(None, description="warp instructions (shared) or requests "
                                                                   "(global) measured")
    measured: float | None = None
    measured_raw: dict[str, float] = Field(default_factory=dict)
    agrees: bool | None = None
    comparable: bool = Field(True, description="false: the counters are not a function of the addresses "
                                               "(a cp.async.cg stage's shared writes), measured but not compared")
    note: str = ""


class UserKernelRun(ReportModel):
    """``threadmap gpu --exe``/``--launcher``: one profiled launch of the user's kernel."""

    spec: str
    sizes: dict[str, int]
    command: list[str]
    kernel: str
    compiled: CompiledKernel
    kinds: list[KindCounts] = Field(default_factory=list)
    log: LogDiff | None = None
    notes: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(k.agrees is not False for k in self.kinds) and (self.log is None or self.log.ok)


def _op(cs: CompiledSide) -> tuple[str, str]:
    async_ = bool(cs.instructions) and cs.instructions[0].split()[1].startswith("LDGSTS")
    if cs.memory == "shared":
        return ("shared", "ldgsts") if async_ else ("shared", "ld" if cs.side == "src" else "st")
    return ("global", "ld" if cs.side == "src" else "st")


def predicted_kinds(ck: CompiledKernel) -> list[KindCounts]:
    """The compiled prediction summed per kind of instruction (a cp.async stage's global side
    is counted with the global loads, its shared side as the LDGSTS's shared writes)."""
    out: dict[tuple[str, str], KindCounts] = {}
    nums: dict[tuple[str, str], float] = {}
    for cs in ck.sides:
        key = _op(cs)
        shared = key[0] == "shared"
        k = out.setdefault(key, KindCounts(memory=key[0], op=key[1], sides=[],
                                           metric="wavefronts_per_instruction" if shared else "sectors_per_request",
                                           predicted_instructions=0))
        k.sides.append(f"stage {cs.stage} {cs.side}")
        if key == ("shared", "ldgsts") and cs.cp_async == "cg" and k.comparable:
            k.comparable = False
            k.note = (k.note + "; " if k.note else "") + NOT_COMPARABLE
        c = cs.compiled
        if c is None or k.predicted_instructions is None:
            k.predicted_instructions, k.note = None, f"stage {cs.stage} {cs.side}: no prediction ({cs.status})"
            continue
        num = (c.wavefronts if shared else c.sectors) or 0
        den = c.instructions if shared else (c.requests or 0)
        nums[key] = nums.get(key, 0.0) + num
        k.predicted_instructions += den
    for key, k in out.items():
        if k.predicted_instructions:
            k.predicted = nums.get(key, 0.0) / k.predicted_instructions
    return list(out.values())


def compare(kinds: list[KindCounts], row: dict[str, str]) -> None:
    """Set each kind's measurement from one ncu row, and whether it equals the prediction (the
    ratio and its denominator: instructions for shared memory, requests for global memory)."""
    def num(name: str) -> float | None:
        return number(row.get(name))
    for k in kinds:
        n_name, d_name = KIND_METRICS[(k.memory, k.op)]
        n, d = num(n_name), num(d_name)
        if n is None or d is None:
            k.note = (k.note + "; " if k.note else "") + f"not measured ({n_name} or {d_name} missing)"
            continue
        k.measured_raw.update({n_name: n, d_name: d})
        contended = CONTENDED_METRICS.get((k.memory, k.op))
        if contended and num(contended) is not None:
            k.measured_raw[contended] = num(contended) or 0.0
        k.measured_instructions = d
        k.measured = n / d if d else 0.0
        if k.comparable and k.predicted is not None and k.predicted_instructions is not None:
            k.agrees = abs(k.measured - k.predicted) <= TOLERANCE * max(1.0, abs(k.predicted)) and \
                k.measured_instructions == k.predicted_instructions


def launcher_command(spec: str) -> list[str]:
    """``module:function`` as a command that imports the module and calls the function."""
    m = re.fullmatch(r"([A-Za-z_][\w.]*):([A-Za-z_]\w*)", spec)
    if m is None:
        raise UserKernelError(f"--launcher {spec!r}: give module:function (e.g. my_kernels:launch)")
    top = m.group(1).split(".")[0]
    # the launcher runs as ``python -c``, with the current directory first on its path
    if importlib.util.find_spec(top) is None and importlib.machinery.PathFinder.find_spec(top, [os.getcwd()]) is None:
        raise UserKernelError(f"--launcher {spec!r}: no module {top!r} on the Python path or in the current directory")
    code = f"import importlib; getattr(importlib.import_module({m.group(1)!r}), {m.group(2)!r})()"
    return [sys.executable, "-c", code]


def ncu_command(exe: str, mangled: str, command: Sequence[str]) -> list[str]:
    """Nsight Compute on the first launch of the kernel with this mangled name (the one the
    SASS was read from)."""
    metrics = sorted({m for pair in KIND_METRICS.values() for m in pair} | set(CONTENDED_METRICS.values()))
    return [exe, "--clock-control", "none", "--target-processes", "all", "--kernel-name-base", "mangled",
            "-k", f"regex:^{re.escape(mangled)}$", "-c", "1", "--metrics", ",".join(metrics),
            "--csv", "--page", "raw", *command]


def measure(spec: str, sizes: dict[str, int] | None, command: Sequence[str], kernel_name: str, arch: str,
            kernel_file: str | None, timeout: float = 540) -> UserKernelRun:
    """Profile one launch of the user's kernel and set it beside the compiled prediction."""
    from threadmap.api import load, verify_spec
    from threadmap.model import build_model

    if not command:
        raise UserKernelError("no program to run")
    loaded = load(spec, sizes)
    if len(loaded.envs) != 1:
        raise UserKernelError(f"{spec}: give the sizes the program runs with (--sizes): the spec has "
                              f"{len(loaded.envs)} size environments")
    (run,) = verify_spec(loaded, sizes=sizes)
    binary = kernel_file or command[0]
    if kernel_file is None and Path(binary).suffix in SOURCE_SUFFIXES:
        raise UserKernelError(f"--exe {binary}: a CUDA source, not a program: run the program built from it "
                              "(--kernel reads the source's SASS)")
    if kernel_file is None and not Path(binary).is_file():
        found = shutil.which(binary)
        if found is None:
            raise UserKernelError(f"{binary}: no such program")
        binary = found
    kernel = load_kernel(Path(binary), kernel_name, arch)
    model = build_model(loaded, dict(loaded.envs[0]))
    ck = analyse(model, run, kernel, binary)
    out = UserKernelRun(spec=spec, sizes=dict(loaded.envs[0]), command=list(command),
                        kernel=kernel.demangled or kernel.name, compiled=ck, kinds=predicted_kinds(ck))
    exe = find_tool("ncu")
    if exe is None:
        out.notes.append(NO_NCU)
        return out
    try:
        proc = subprocess.run(ncu_command(exe, kernel.name, command), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise UserKernelError(f"the program ran past {timeout:.0f} s under ncu") from None
    except OSError as e:
        raise UserKernelError(f"cannot run {shlex.join(command)}: {e}") from None
    rows = parse_ncu_csv(proc.stdout)
    if not rows:
        raise UserKernelError(f"ncu profiled no launch of a kernel matching {kernel_name!r} "
                              f"(exit {proc.returncode}): {(proc.stderr or proc.stdout)[-1500:]}")
    compare(out.kinds, rows[0])
    printed = "\n".join(ln for ln in proc.stdout.splitlines() if not ln.startswith(('"', "==PROF==", "==WARNING==")))
    if "TM stage=" in printed:
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(printed)
        try:
            out.log = diff_log(model, Path(f.name))
        finally:
            os.unlink(f.name)
    return out


