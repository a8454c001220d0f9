"""The user's compiled kernel beside the spec: which SASS instructions stand for which stage
side, at what width, and the counts predicted at the compiled width (``verify --kernel``).

**Mapping.**  Each modelled side has a kind of instruction: a global source is a global
load (``LDG``), a global destination a global store (``STG``), a shared source a shared load
(``LDS``, ``LDSM``), a shared destination a shared store (``STS``, ``STSM``); a stage from
global to shared memory may instead be one ``LDGSTS`` (``cp.async``) per access, when the
kernel has them.  Register sides have no instruction.  Per kind, the sides in stage order
take the kernel's instructions of that kind in program order: a side moves ``values * bits``
bits per thread, so it takes instructions until their widths add up to that.  A side is

* ``mapped`` when the instructions of its kind split exactly that way and its own are of one
  width (the one side of its kind inside a loop takes all of them: its count per thread is
  then not static);
* ``ambiguous`` when they do not (widths that do not add up, mixed widths, several sides of
  one kind inside a loop, instructions left over -- an unrelated load of the same kind is not
  told apart from the side's own --, generic ``LD``/``ST`` that could be either space): the
  declared width is kept for it and the report says so -- never a guess;
* ``missing`` when the kernel has no instruction of its kind (a warning: is it the spec's
  kernel?).

Instructions no side takes are listed as *unmatched*.

**Compiled width.**  A side compiled at ``k`` times its declared width moves ``k``
consecutive accesses of a thread per instruction (nvcc merged them: ``LDS.128`` for four
32-bit loads); at ``1/k`` of it, one access takes ``k`` instructions (split).  Value ``v`` of
a thread is moved by access ``v // vec``, so the compiled kernel is the same partition with
``vec`` scaled by ``k``: the checks run on that model give the counts the hardware sees
(instructions, wavefronts per instruction, sectors per request).  A merge the partition does
not allow (the merged accesses not contiguous or not aligned: ``vectorize`` fails at the
compiled width) is reported and the declared counts kept.  Under predicates a merged access
is predicated as a whole, as the compiled instruction is.

**cp.async form.**  A global-to-shared stage's ``LDGSTS`` is ``cp.async.ca`` (its shared writes
follow the global lines read: :func:`threadmap.hardware.ldgsts_wavefronts`) or, with
``.BYPASS``, ``cp.async.cg`` (counted as a store); a stage of plain ``LDG``/``STS`` is a store.
The form the SASS issues is the one counted: where it is not the spec's (another cp.async
form, a cp.async where the spec declares a load and a store, or the reverse) it is a finding
and the shared side is predicted for the compiled form.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from threadmap.errors import ThreadmapError
from threadmap.gpu.sass import Kernel, MemoryInstruction, parse_sass
from threadmap.gpu.toolchain import SOURCE_SUFFIXES, build_user_cubin, demangle, disassemble
from threadmap.model import CopyModel, KernelModel, SideModel
from threadmap.report.model import (
    BankSummary,
    CoalescingSummary,
    CompiledCounts,
    CompiledKernel,
    CompiledSide,
    Finding,
    SpecRun,
    VerifyReport,
)
from threadmap.verify.banks import ldgsts_rule
from threadmap.verify.run import RunOptions, verify_model

#: the instruction kind of a side: (memory, which) -> (space, direction) of MEMORY_OPCODES
SIDE_KIND = {("global", "src"): ("global", "load"), ("global", "dst"): ("global", "store"),
             ("shared", "src"): ("shared", "load"), ("shared", "dst"): ("shared", "store")}
COUNT_CHECKS = frozenset({"bank_conflicts", "coalescing", "vectorize"})


class KernelNotFound(ThreadmapError):
    """No kernel (or more than one) in the compiled file matches the name given."""


def load_kernel(path: Path, name: str | None, arch: str) -> Kernel:
    """The kernel of ``path`` (a ``.cu`` compiled for ``arch``, a cubin, or an object or
    executable with embedded cubins) whose mangled or demangled name contains ``name``."""
    if not path.is_file():
        raise KernelNotFound(f"{path}: {'not a regular file' if path.exists() else 'no such file'}")
    source = path.suffix in SOURCE_SUFFIXES
    binary = build_user_cubin(path, arch) if source else path
    kernels = parse_sass(disassemble(binary))
    if source and not kernels:  # compiled here for arch: no SASS means no kernel, not PTX only
        raise KernelNotFound(f"{path}: no kernel code in it (compiled for {arch}: no __global__ function, "
                             "or only templates it never instantiates)")
    for k, d in zip(kernels, demangle([k.name for k in kernels]), strict=True):
        k.demangled = d if d != k.name else ""
    return pick_kernel(kernels, name, arch, str(path))


def pick_kernel(kernels: Sequence[Kernel], name: str | None, arch: str, path: str) -> Kernel:
    """The one kernel of ``arch`` among ``kernels`` (those of the file ``path``) whose name
    contains ``name``, or whose whole name it is; KernelNotFound when none or several."""
    if not kernels:
        raise KernelNotFound(f"{path}: no kernel code (SASS) in it (PTX alone is compiled by the driver at run "
                             "time: build it with -arch=sm_XX or -gencode ...,code=sm_XX)")
    archs = sorted({k.arch for k in kernels})
    # the arch asked for, or its arch-specific variant (sm_90a is sm_90's instruction set);
    # never another architecture's code: its widths and counts may differ
    picked = [a for a in archs if a == arch] or [a for a in archs if a.rstrip("af") == arch]
    if len(picked) != 1:
        raise KernelNotFound(f"{path}: holds code for {', '.join(archs)}, not {arch} (--arch picks one)")
    kernels = [k for k in kernels if k.arch == picked[0]]
    found = [k for k in kernels if name is None or k.matches(name)]
    # a name that is one kernel's whole name picks it, though it is part of others' (k, k2)
    found = [k for k in found if name is not None and k.named(name)] or found
    listing = _listing(kernels)
    if not found:
        raise KernelNotFound(f"{path}: no kernel's name contains {name!r} (kernels: {listing})")
    if len(found) > 1:
        which = f"{len(found)} kernels match {name!r}" if name is not None else f"holds {len(found)} kernels"
        raise KernelNotFound(f"{path}: {which} (--kernel-name picks one by a substring of its name: {listing})")
    return found[0]


def _listing(kernels: Sequence[Kernel]) -> str:
    """The kernels' names for a message: without template arguments and parameters (a CuTe
    kernel's demangled name runs to thousands of characters), instances of one template counted."""
    counts: dict[str, int] = {}
    for k in kernels:
        base = (k.demangled or k.name).removeprefix("void ")
        cut = min((i for i in (base.find("<"), base.find("(")) if i > 0), default=len(base))
        short = base[:cut] + ("<...>" if base[cut:cut + 1] == "<" else "")
        counts[short] = counts.get(short, 0) + 1
    return "; ".join(n + (f" ({c} instances)" if c > 1 else "") for n, c in counts.items())


def _describe(m: MemoryInstruction) -> str:
    return f"0x{m.instruction.address:04x} {m.name}" + (" (in a loop)" if m.in_loop else "") + \
        (f" @{m.instruction.guard}" if m.predicated else "")


def _side_bits(sd: SideModel) -> int:
    """Bits one thread of ``sd`` moves."""
    return sd.partition.values * sd.elem_bits


def assign_sides(sides: Sequence[SideModel], instrs: Sequence[MemoryInstruction]
            ) -> tuple[dict[tuple[int, str], list[MemoryInstruction]], str]:
    """Split ``instrs`` (one kind, program order) among ``sides`` (stage order) by the bits
    each side moves per thread; ({}, why) when they do not split exactly."""
    if len(sides) > 1 and any(m.in_loop for m in instrs):
        return {}, "several sides of this kind and the instructions are in a loop: their split is not static"
    if len(sides) == 1 and any(m.in_loop for m in instrs):
        # one side: every instruction of its kind is its own, but the loop hides how many a thread issues
        return {(sides[0].stage, sides[0].which): list(instrs)}, ""
    out: dict[tuple[int, str], list[MemoryInstruction]] = {}
    i = 0
    for sd in sides:
        need, got, mine = _side_bits(sd), 0, []
        while i < len(instrs) and got < need:
            mine.append(instrs[i])
            got += instrs[i].bits
            i += 1
        if got != need:
            return {}, f"the instructions' widths do not add up to stage {sd.stage} {sd.which}'s {need} bits per thread"
        out[(sd.stage, sd.which)] = mine
    if i != len(instrs):
        return {}, f"{len(instrs) - i} instruction(s) left over after every side took its bits"
    return out, ""


def _counts(run: SpecRun, sd: SideModel, bits: int) -> CompiledCounts | None:
    for r in run.results:
        if (r.stage, r.side) != (sd.stage, sd.which):
            continue
        b = r.summary
        if sd.memory == "shared" and isinstance(b, BankSummary):
            return CompiledCounts(access_bits=bits, instructions=b.instructions, wavefronts=b.wavefronts,
                                  wavefronts_per_instruction=b.wavefronts / b.instructions if b.instructions else 0.0)
        if sd.memory == "global" and isinstance(b, CoalescingSummary):
            return CompiledCounts(access_bits=bits, instructions=b.requests, sectors=b.sectors, requests=b.requests,
                                  sectors_per_request=b.sectors / b.requests if b.requests else 0.0)
    return None


def _has_counts(run: SpecRun, model: KernelModel) -> bool:
    """Whether ``run`` holds the bank or sector counts of every memory side of ``model``."""
    have = {(r.stage, r.side) for r in run.results if r.check in ("bank_conflicts", "coalescing")}
    return all((sd.stage, sd.which) in have for sd in model.sides() if sd.memory in ("global", "shared"))


def _with_vec(model: KernelModel, changes: dict[tuple[int, str], int],
              ops: dict[int, str] | None = None) -> KernelModel:
    """``model`` with the vector width of some sides changed (their accesses regrouped), and
    the copy operation of some stages (``ops``: stage -> the cp.async its SASS issues)."""
    stages = []
    for st in model.stages:
        if isinstance(st, CopyModel):
            src, dst = (sd if (v := changes.get((sd.stage, sd.which))) is None else
                        dataclasses.replace(sd, partition=sd.partition.with_vec(v)) for sd in st.sides())
            if ops and st.index in ops:
                src, dst = (dataclasses.replace(sd, copy_op=ops[st.index]) for sd in (src, dst))
            st = dataclasses.replace(st, src=src, dst=dst)
        stages.append(st)
    return dataclasses.replace(model, stages=tuple(stages))


#: an LDGSTS's zero-fill operand: the predicate after its addresses (``[R7], desc[UR6][R4.64], P0``)
_ZFILL_OPERAND = re.compile(r",\s*!?U?P[0-9T]\s*$")


def ldgsts_form(instrs: Sequence[MemoryInstruction]) -> Literal["ca", "cg"] | None:
    """The cp.async form of a stage's ``LDGSTS`` instructions: ``cg`` when every one bypasses
    L1 (``LDGSTS.BYPASS``, ``cp.async.cg``), ``ca`` when none does; None when mixed or none."""
    forms = {"BYPASS" in m.instruction.modifiers for m in instrs if m.opcode == "LDGSTS"}
    if len(forms) != 1:
        return None
    return "cg" if forms.pop() else "ca"


def _declared_form(sd: SideModel) -> str | None:
    """The cp.async form a side declares (``ca``: the LDGSTS rule counts its shared writes)."""
    return None if not sd.cp_async else "ca" if ldgsts_rule(sd) else "cg"


def _compiled_op(sd: SideModel, form: str, instrs: Sequence[MemoryInstruction], bits: int) -> str:
    """The copy operation a cp.async stage's SASS issues, by CuTe's name: the form read from the
    SASS, zero-fill as the spec declares it (or as the SASS shows it, for a spec without cp.async)."""
    zfill = sd.cp_async_zfill if sd.cp_async else any(_ZFILL_OPERAND.search(m.instruction.operands) for m in instrs)
    return f"SM80_CP_ASYNC_{'CACHEALWAYS' if form == 'ca' else 'CACHEGLOBAL'}{'_ZFILL' if zfill else ''}" \
           f"<uint{bits}_t>"


def _kinds(model: KernelModel, kernel: Kernel) -> tuple[dict[tuple[str, str], list[SideModel]], list[SideModel]]:
    """The sides of each instruction kind, and the shared sides of the stages a kernel's
    ``LDGSTS`` stand for (their global source takes the instructions; they share them)."""
    has_async = any(m.opcode == "LDGSTS" for m in kernel.memory())
    async_stages = {c.index for c in model.copies()
                    if has_async and c.src.memory == "global" and c.dst.memory == "shared"}
    kinds: dict[tuple[str, str], list[SideModel]] = {}
    mirrors: list[SideModel] = []
    for sd in model.sides():
        if sd.tensor is None or sd.memory not in ("global", "shared"):
            continue
        if sd.stage in async_stages:
            if sd.which == "src":
                kinds.setdefault(("global", "copy"), []).append(sd)
            else:
                mirrors.append(sd)
            continue
        kinds.setdefault(SIDE_KIND[(sd.memory, sd.which)], []).append(sd)
    return kinds, mirrors


def _settle(sd: SideModel, got: list[MemoryInstruction], cs: CompiledSide, changes: dict[tuple[int, str], int],
            out: CompiledKernel) -> None:
    """One side's own instructions: its compiled width, and a finding where it differs."""
    cs.instructions = [_describe(m) for m in got]
    widths = sorted({m.bits for m in got})
    if len(widths) != 1:
        cs.status, cs.note = "ambiguous", f"mixed widths {widths}: the declared width is kept"
        return
    w = widths[0]
    cs.status, cs.compiled_bits = "mapped", w
    cs.per_thread = None if any(m.in_loop for m in got) else len(got)
    if any(m.opcode in ("LDSM", "STSM") for m in got):
        cs.note = "ldmatrix/stmatrix: each lane gives a row address; counts at the declared width"
        return
    cs.accesses_per_instruction = w / sd.access_bits
    vec = _compiled_vec(sd, w)
    if vec is None:
        cs.note = f"the compiled width {w} is not a whole number of the side's {sd.elem_bits}-bit elements " \
                  "per access dividing its values: counts at the declared width"
    elif vec != sd.vec:
        changes[(sd.stage, sd.which)] = vec
    if w != sd.access_bits:
        how = f"{w // sd.access_bits} accesses of a thread merged" if w > sd.access_bits else \
            f"each access split into {sd.access_bits // w}"
        opc = "/".join(sorted({m.opcode for m in got}))
        out.findings.append(Finding(
            check="compiled", kind="compiled_width", severity="warning", stage=sd.stage, side=sd.which,
            message=f"stage {sd.stage} {sd.which}: declared {sd.access_bits}-bit, compiled {opc}.{w} -- {how}",
            witness={"declared_bits": sd.access_bits, "compiled_bits": w, "instructions": cs.instructions[:8]}))


def analyse(model: KernelModel, run: SpecRun, kernel: Kernel, file: str) -> CompiledKernel:
    """The compiled kernel beside ``run`` (``verify`` of ``model``): see the module docstring.
    The declared counts are ``run``'s, or, where it ran without the count checks (``verify
    --checks``), those of a run of them apart: the checks asked for alone decide ``run``'s verdict."""
    if not _has_counts(run, model):
        run = verify_model(model, RunOptions(checks=COUNT_CHECKS))
    out = CompiledKernel(file=file, kernel=kernel.name, demangled=kernel.demangled, arch=kernel.arch,
                         unmodelled=[f"0x{i.address:04x} {i.text}" for i in kernel.unmodelled()])
    instrs = kernel.memory()
    kinds, mirrors = _kinds(model, kernel)
    by_kind: dict[tuple[str, str], list[MemoryInstruction]] = {}
    generic = [m for m in instrs if m.space == "generic"]
    for m in instrs:
        if m.space != "generic":
            by_kind.setdefault((m.space, m.direction), []).append(m)
    taken: set[int] = set()
    sides: dict[tuple[int, str], CompiledSide] = {}
    owned: dict[tuple[int, str], list[MemoryInstruction]] = {}
    changes: dict[tuple[int, str], int] = {}
    for sd in [*[x for ks in kinds.values() for x in ks], *mirrors]:
        sides[(sd.stage, sd.which)] = CompiledSide(
            stage=sd.stage, side=sd.which, memory=sd.memory, tensor=sd.name, status="missing",
            declared_bits=sd.access_bits, declared=_counts(run, sd, sd.access_bits))
    for kind, kind_sides in kinds.items():
        mine = by_kind.get(kind, [])
        if not mine:
            why = "no instruction of this kind in the kernel" + \
                  (f" (it has {len(generic)} generic LD/ST, which could be either space)" if generic else "")
            for sd in kind_sides:
                sides[(sd.stage, sd.which)].note = why
                out.findings.append(Finding(check="compiled", kind="missing_instruction", severity="warning",
                                            stage=sd.stage, side=sd.which,
                                            message=f"stage {sd.stage} {sd.which}: the kernel has no {kind[0]} "
                                                    f"{kind[1]} instruction for it (is it this spec's kernel?)"))
            continue
        split, why = assign_sides(kind_sides, mine)
        taken.update(m.index for m in mine)
        if not split:
            for sd in kind_sides:
                cs = sides[(sd.stage, sd.which)]
                cs.status, cs.note = "ambiguous", f"{why}; the declared width is kept"
                cs.instructions = [_describe(m) for m in mine]
                out.findings.append(Finding(check="compiled", kind="ambiguous_mapping", severity="warning",
                                            stage=sd.stage, side=sd.which,
                                            message=f"stage {sd.stage} {sd.which}: cannot tell which of "
                                                    f"{len(mine)} {kind[0]} {kind[1]} instructions are its own: {why}"))
            continue
        for sd in kind_sides:
            owned[(sd.stage, sd.which)] = split[(sd.stage, sd.which)]
            _settle(sd, split[(sd.stage, sd.which)], sides[(sd.stage, sd.which)], changes, out)
    for sd in mirrors:  # a cp.async stage's shared side: the same instructions as its global side
        src = owned.get((sd.stage, "src"))
        cs = sides[(sd.stage, sd.which)]
        if src is None:
            cs.status, cs.note = sides[(sd.stage, "src")].status, sides[(sd.stage, "src")].note
            continue
        _settle(sd, src, cs, changes, out)
    ops: dict[int, str] = {}
    for sd in mirrors:
        _settle_form(sd, owned.get((sd.stage, "src"), []), sides, ops, out)
    for c in model.copies():  # a declared cp.async the kernel issues as a load and a store
        got = owned.get((c.index, "dst"), [])
        if c.cp_async and c.index not in {sd.stage for sd in mirrors} and got:
            _settle_plain(c.dst, got, ops, out)
    for st in sorted({sd.stage for sd in mirrors}):
        for which in ("src", "dst"):
            cs = sides[(st, which)]
            cs.note = (cs.note + "; " if cs.note else "") + "cp.async (LDGSTS): one instruction moves both sides"
    if changes or ops:
        _predict(model, changes, sides, out, ops)
    for cs in sides.values():
        if cs.compiled is None and cs.status != "missing":
            cs.compiled = cs.declared
    out.sides = [sides[k] for k in sorted(sides, key=lambda k: (k[0], k[1] != "src"))]
    out.unmatched = [_describe(m) for m in instrs if m.index not in taken]
    return out


def _settle_form(sd: SideModel, got: list[MemoryInstruction], sides: dict[tuple[int, str], CompiledSide],
                 ops: dict[int, str], out: CompiledKernel) -> None:
    """A cp.async stage's form as compiled (``sd``: its shared side, ``got``: its LDGSTS): set on
    both sides; where the spec declares another form (or no cp.async), a finding, and the
    stage counted as compiled: the LDGSTS rule for ``.ca``, the store rule for ``.cg``."""
    form = ldgsts_form(got)
    if form is None:
        return
    for which in ("src", "dst"):
        sides[(sd.stage, which)].cp_async = form
    declared = _declared_form(sd)
    if form == declared or (declared is None and form == "cg"):  # .cg and a plain store: one rule
        return
    ops[sd.stage] = _compiled_op(sd, form, got, sides[(sd.stage, "dst")].compiled_bits or sd.access_bits)
    said = f"declared {sd.copy_op}" if declared else "declared a load and a store, not cp.async"
    rule = ("its shared writes follow the global lines read (the LDGSTS rule)" if form == "ca" else
            "its shared writes are counted as a store (the .cg form's counters are not comparable)")
    out.findings.append(Finding(
        check="compiled", kind="compiled_cp_async", severity="warning", stage=sd.stage, side="dst",
        message=f"stage {sd.stage}: {said}, compiled LDGSTS{'.BYPASS' if form == 'cg' else ''} "
                f"(cp.async.{form}) -- {rule}",
        witness={"declared": sd.copy_op, "compiled": ops[sd.stage],
                 "instructions": [_describe(m) for m in got][:8]}))


def _settle_plain(sd: SideModel, got: list[MemoryInstruction], ops: dict[int, str], out: CompiledKernel) -> None:
    """A stage the spec declares as cp.async whose shared side ``sd`` the kernel writes with
    stores (``got``): a finding, and the stage counted as a store where the declared form
    would not be (``.ca``: the LDGSTS rule)."""
    if ldgsts_rule(sd):
        ops[sd.stage] = f"UniversalCopy<uint{got[0].bits}_t>"
    opc = "/".join(sorted({m.name for m in got}))
    out.findings.append(Finding(
        check="compiled", kind="compiled_cp_async", severity="warning", stage=sd.stage, side="dst",
        message=f"stage {sd.stage}: declared {sd.copy_op}, compiled a load and a store ({opc}), no cp.async -- "
                "its shared writes are counted as a store",
        witness={"declared": sd.copy_op, "compiled": opc, "instructions": [_describe(m) for m in got][:8]}))


def _compiled_vec(sd: SideModel, bits: int) -> int | None:
    """The side's ``vec`` at a compiled width of ``bits``, or None where that width is not a
    whole number of elements dividing the thread's values."""
    if bits % sd.elem_bits:
        return None
    vec = bits // sd.elem_bits
    return vec if sd.partition.values % vec == 0 else None


def _predict(model: KernelModel, changes: dict[tuple[int, str], int], sides: dict[tuple[int, str], CompiledSide],
             out: CompiledKernel, ops: dict[int, str] | None = None) -> None:
    """The counts at the compiled widths and cp.async forms: the checks on the regrouped model."""
    ops = ops or {}
    wide = _with_vec(model, changes, ops)
    run = verify_model(wide, RunOptions(checks=COUNT_CHECKS))
    legal = {(r.stage, r.side): r for r in run.results if r.check == "vectorize"}
    by_key: dict[tuple[int, str], SideModel] = {(sd.stage, sd.which): sd for sd in wide.sides()}
    for key, vec in changes.items():
        sd, cs = by_key[key], sides[key]
        v = legal.get(key)
        if v is not None and v.status == "FAIL":
            cs.note = (f"the compiled {cs.compiled_bits}-bit instruction is not {vec} consecutive elements of one "
                       "thread's accesses (not contiguous or not aligned): counts at the declared width")
            out.findings.append(Finding(check="compiled", kind="unexplained_width", severity="warning",
                                        stage=cs.stage, side=cs.side, message=f"stage {cs.stage} {cs.side}: {cs.note}"))
            continue
        cs.compiled = _counts(run, sd, sd.access_bits)
    for st in ops:  # a cp.async stage counted by its compiled form (its width set above where it changed)
        if (st, "dst") not in changes:
            sides[(st, "dst")].compiled = _counts(run, by_key[(st, "dst")], by_key[(st, "dst")].access_bits)


def attach(report: VerifyReport, kernel: Kernel, file: str) -> None:
    """Set each run's ``compiled`` section (its spec's model at the run's sizes)."""
    from threadmap.api import load
    from threadmap.model import build_model

    loaded: dict[str, Any] = {}  # LoadedSpec by spec path
    for run in report.runs:
        if run.path not in loaded:
            loaded[run.path] = load(run.path)
        model = build_model(loaded[run.path], run.sizes)
        run.compiled = analyse(model, run, kernel, file)
