"""``verify --kernel``: the SASS reader and the mapping of a compiled kernel's instructions to
the spec's stage sides, on kernels compiled here for sm_80 and sm_90 (no GPU needed).

The kernels (tests/gpu/compiled/twins.cu) are plain CUDA twins of
specs/cute_transpose/row_rvectorized.yaml that differ in what nvcc makes of stage 2's four
scalar shared loads: merged into one LDS.128, kept apart (volatile), in a loop, with an
extra load, and stage 0 as cp.async.  The counts the mapping predicts at the compiled width
are checked against the bank model applied to the addresses the kernel's own source computes.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cxx_oracle import cannot_run
from threadmap.api import load, verify_spec
from threadmap.gpu.compiled import KernelNotFound, analyse, assign_sides, load_kernel, pick_kernel
from threadmap.gpu.sass import Instruction, Kernel, MemoryInstruction, parse_sass
from threadmap.gpu.toolchain import ToolchainError, build_user_cubin, disassemble, find_tool, nvcc
from threadmap.hardware import wavefronts
from threadmap.model import build_model

ROOT = Path(__file__).resolve().parents[2]
TWINS = ROOT / "tests" / "gpu" / "compiled" / "twins.cu"
SPEC = ROOT / "specs" / "cute_transpose" / "row_rvectorized.yaml"
ARCHS = ("sm_80", "sm_90")
SIZES = {"M": 1024, "N": 1024}


def _kernel(name: str, arch: str) -> Kernel:
    if nvcc() is None or find_tool("cuobjdump") is None:
        cannot_run("verify --kernel needs nvcc and cuobjdump (pip install nvidia-cuda-cuobjdump)")
    try:
        return load_kernel(TWINS, name, arch)
    except ToolchainError as e:
        cannot_run(str(e))


@functools.cache
def _verified():  # type: ignore[no-untyped-def]
    loaded = load(SPEC, SIZES)
    (run,) = verify_spec(loaded, sizes=SIZES)
    return loaded, run


@functools.cache
def _compiled(name: str, arch: str):  # type: ignore[no-untyped-def]
    loaded, run = _verified()
    out = analyse(build_model(loaded, dict(loaded.envs[0])), run, _kernel(name, arch), str(TWINS))
    return {(s.stage, s.side): s for s in out.sides}, out


# ------------------------------------------------------------------------------ the reader
def _raw_counts(text: str, fun: str) -> dict[str, int]:
    """Memory opcodes with their width modifiers, counted by a plain regex over the
    disassembler's text of one function (the reader's independent check)."""
    body = text.split(f"Function : {fun}")[1].split("Function :")[0]
    out: dict[str, int] = {}
    for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(@!?P\w+\s+)?((?:LDGSTS|LDG|STG|LDS|STS)\b(?:\.[A-Z0-9_]+)*)", body):
        if m.group(1) and m.group(1).strip() == "@!PT":
            continue
        mods = m.group(2).split(".")
        bits = 128 if "128" in mods else 64 if "64" in mods else 32
        key = f"{mods[0]}.{bits}"
        out[key] = out.get(key, 0) + 1
    return out


@pytest.mark.parametrize("arch", ARCHS)
def test_the_reader_finds_every_memory_instruction_the_disassembler_prints(arch: str) -> None:
    k = _kernel("rr_merged", arch)
    text = disassemble(build_user_cubin(TWINS, arch))  # the cached cubin the reader read
    kernels = {x.name: x for x in parse_sass(text)}
    assert set(kernels) >= {"rr_merged", "rr_volatile", "rr_loop", "rr_extra", "rr_cp_async"}
    assert {x.arch for x in kernels.values()} == {arch}
    for name, kern in kernels.items():
        got: dict[str, int] = {}
        for m in kern.memory():
            got[m.name] = got.get(m.name, 0) + 1
        assert got == _raw_counts(text, name), name
    assert k.name == "rr_merged"


def _same_kernels(a: list[Kernel], b: list[Kernel]) -> bool:
    return [(k.name, k.arch, k.instructions) for k in a] == [(k.name, k.arch, k.instructions) for k in b]


@pytest.mark.parametrize("arch", ARCHS)
def test_reading_some_kernels_is_reading_all_and_keeping_those(arch: str) -> None:
    """``parse_sass(text, names)`` (which skips the other kernels' lines) is the whole
    parse filtered by name: on the twins' listing, on a listing of two architectures, and on
    lines that mention a marker without being one."""
    text = disassemble(build_user_cubin(TWINS, arch))
    every = parse_sass(text)
    for names in ({"rr_merged"}, {"rr_loop", "rr_extra"}, {k.name for k in every}, {"no_such_kernel"}, set()):
        assert _same_kernels(parse_sass(text, names), [k for k in every if k.name in names]), names
    odd = ("\tcode for sm_80\n\t\tFunction : k\n  /*0000*/  LDG.E R0, [R2.64] ; /* Function : j */\n"
           "  /*0010*/  EXIT ;\n Fatbin elf code: arch = sm_90\n  /*0020*/  STG.E [R2.64], R0 ;\n"
           "\t\tFunction : j\n  /*0000*/  LDS R0, [R1] ;\n\tcode for sm_90\n\t\tFunction : k\n"
           "  /*0000*/  STS [R1], R0 ;")
    for t in (odd, odd.replace("\n", "\r\n"), odd + "\n", text[:5000] + odd + text[-5000:]):
        for names in ({"k"}, {"j"}, {"k", "j"}):
            assert _same_kernels(parse_sass(t, names), [k for k in parse_sass(t) if k.name in names]), (names, t)
    assert [k.arch for k in parse_sass(odd, {"k"})] == ["sm_80", "sm_90"]


@pytest.mark.parametrize("arch", ARCHS)
def test_the_source_decides_what_each_twin_compiles_to(arch: str) -> None:
    """What the C++ says of each twin's shared loads of stage 2 (4 floats a thread)."""
    lds = {n: [m for m in _kernel(n, arch).memory() if m.opcode == "LDS"] for n in
           ("rr_merged", "rr_volatile", "rr_loop", "rr_extra", "rr_cp_async")}
    # the same 128 bits a thread in every straight-line twin
    for n in ("rr_merged", "rr_volatile", "rr_cp_async"):
        assert sum(m.bits for m in lds[n]) == 128, n
    assert [m.bits for m in lds["rr_merged"]] == [128]          # nvcc merged the four loads
    assert [m.bits for m in lds["rr_volatile"]] == [32] * 4     # volatile: never merged
    assert all(m.in_loop for m in lds["rr_loop"]) and lds["rr_loop"]
    assert not any(m.in_loop for n in ("rr_merged", "rr_volatile") for m in lds[n])
    assert sorted(m.bits for m in lds["rr_extra"]) == [32, 32, 32, 32, 64]
    assert [m.name for m in _kernel("rr_cp_async", arch).memory() if m.opcode == "LDGSTS"] == ["LDGSTS.128"]


def test_never_executed_padding_and_backward_branches() -> None:
    text = """
\tcode for sm_90
\t\tFunction : k
        /*0000*/                   LDS R0, [R1] ;
        /*0010*/              @!PT LDS RZ, [RZ] ;
        /*0020*/               @P0 LDG.E.64 R2, desc[UR4][R4.64] ;
        /*0030*/                   STS.U16 [R1], R0 ;
        /*0040*/              @!P1 BRA 0x10 ;
        /*0050*/                   LDSM.16.M88.4 R4, [R6] ;
        /*0060*/                   EXIT ;
        /*0070*/                   BRA 0x70;
"""
    (k,) = parse_sass(text)
    mem = k.memory()
    assert [m.name for m in mem] == ["LDS.32", "LDG.64", "STS.16", "LDSM.128"]
    assert [m.in_loop for m in mem] == [False, True, True, False]
    assert mem[1].predicated and mem[1].instruction.guard == "P0"
    assert k.loops() == [(0x10, 0x40)]


# ----------------------------------------------------------------------------- the mapping
def _oracle_stage2_load(vec: int) -> tuple[int, float]:
    """Warp instructions and wavefronts per instruction of stage 2's shared load when each
    instruction moves ``vec`` of a thread's 4 floats: the twin's own address formula
    ``s[4*TM + i + 64*TN]`` (TM = t / 16, TN = t % 16), the bank model per instruction."""
    blocks, warps = (1024 // 16) * (1024 // 64), 256 // 32
    total, count = 0, 0
    for w in range(warps):
        for step in range(4 // vec):
            lanes = []
            for lane in range(32):
                t = 32 * w + lane
                for e in range(vec):
                    i = step * vec + e
                    lanes.append((lane, 4 * (4 * (t // 16) + i + 64 * (t % 16))))
            total += wavefronts(lanes, 4, 4 * vec).wavefronts
            count += 1
    return blocks * count, total / count


@pytest.mark.parametrize("arch", ARCHS)
def test_merged_loads_are_a_finding_and_the_counts_are_the_compiled_instructions(arch: str) -> None:
    sides, out = _compiled("rr_merged", arch)
    s2 = sides[(2, "src")]
    assert s2.status == "mapped" and (s2.declared_bits, s2.compiled_bits) == (32, 128)
    assert s2.accesses_per_instruction == 4 and s2.per_thread == 1
    inst, wpi = _oracle_stage2_load(4)
    assert (s2.compiled.instructions, s2.compiled.wavefronts_per_instruction) == (inst, wpi)
    inst0, wpi0 = _oracle_stage2_load(1)
    assert (s2.declared.instructions, s2.declared.wavefronts_per_instruction) == (inst0, wpi0)
    assert (inst, wpi, inst0, wpi0) == (8192, 32.0, 32768, 16.0)  # the H200's numbers at 1024^2
    (f,) = [f for f in out.findings if f.kind == "compiled_width"]
    assert f.stage == 2 and f.side == "src" and "LDS.128" in f.message and "4 accesses of a thread merged" in f.message
    # the other sides compile at their declared widths
    for key in [(0, "src"), (0, "dst"), (2, "dst")]:
        assert sides[key].status == "mapped" and sides[key].compiled_bits == sides[key].declared_bits
        assert sides[key].compiled == sides[key].declared
    assert out.unmatched == []


@pytest.mark.parametrize("arch", ARCHS)
def test_loads_kept_apart_need_no_finding(arch: str) -> None:
    sides, out = _compiled("rr_volatile", arch)
    s2 = sides[(2, "src")]
    assert s2.status == "mapped" and s2.compiled_bits == 32 and s2.per_thread == 4
    assert s2.compiled == s2.declared and out.findings == []


def test_a_loop_maps_its_one_side_but_has_no_static_count() -> None:
    sides, out = _compiled("rr_loop", "sm_90")
    s2 = sides[(2, "src")]
    assert s2.status == "mapped" and s2.per_thread is None and "(in a loop)" in s2.instructions[0]
    assert out.findings == []


def test_an_extra_load_makes_the_side_ambiguous_and_keeps_the_declared_width() -> None:
    sides, out = _compiled("rr_extra", "sm_90")
    s2 = sides[(2, "src")]
    # 64 + 4 x 32 bits where the side moves 128: which of them are its own is not told
    assert s2.status == "ambiguous" and "left over" in s2.note and s2.compiled == s2.declared


def test_cp_async_is_one_instruction_for_both_sides() -> None:
    sides, out = _compiled("rr_cp_async", "sm_90")
    for which in ("src", "dst"):
        s = sides[(0, which)]
        assert s.status == "mapped" and s.instructions and "LDGSTS.128" in s.instructions[0]
        assert "cp.async" in s.note
    assert out.unmatched == []


def _mi(i: int, bits: int, in_loop: bool = False) -> MemoryInstruction:
    return MemoryInstruction(index=i, instruction=Instruction(16 * i, "", "LDS", (str(bits),), ""),
                             space="shared", direction="load", bits=bits, in_loop=in_loop)


def test_several_sides_of_one_kind_split_by_their_bits_or_are_ambiguous() -> None:
    loaded = load(SPEC, SIZES)
    model = build_model(loaded, dict(loaded.envs[0]))
    a, b = model.sides()[0], model.sides()[2]  # 128 and 128 bits per thread
    assert a.partition.values * a.elem_bits == 128 and b.partition.values * b.elem_bits == 128
    split, why = assign_sides([a, b], [_mi(0, 64), _mi(1, 64), _mi(2, 128)])
    assert why == "" and [m.index for m in split[(a.stage, a.which)]] == [0, 1]
    assert [m.index for m in split[(b.stage, b.which)]] == [2]
    split, why = assign_sides([a, b], [_mi(0, 128), _mi(1, 64), _mi(2, 32)])
    assert split == {} and "do not add up" in why
    split, why = assign_sides([a, b], [_mi(0, 128), _mi(1, 128), _mi(2, 32)])
    assert split == {} and "left over" in why
    split, why = assign_sides([a, b], [_mi(0, 128, True), _mi(1, 128, True)])
    assert split == {} and "loop" in why


# --------------------------------------------------------------------------------- the CLI
def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "threadmap", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


def test_cli_verify_kernel_in_table_and_json() -> None:
    _kernel("rr_merged", "sm_90")  # compiled (and skipped without the tools) before the CLI runs
    p = _cli("verify", str(SPEC), "--kernel", str(TWINS), "--kernel-name", "rr_merged", "--format", "json")
    assert p.returncode == 1, p.stderr  # the spec's own bank-conflict failure, as before
    run = json.loads(p.stdout)["runs"][0]
    sides = {(s["stage"], s["side"]): s for s in run["compiled"]["sides"]}
    assert sides[(2, "src")]["compiled"]["wavefronts_per_instruction"] == 32.0
    t = _cli("verify", str(SPEC), "--kernel", str(TWINS), "--kernel-name", "rr_merged")
    assert "compiled LDS.128" in t.stdout and "merged" in t.stdout and t.returncode == 1


@pytest.mark.parametrize("args, says", [
    (("--kernel-name", "no_such_kernel"), "no kernel's name contains"),
    (("--kernel-name", "rr_"), "kernels match"),
    (("--arch", "sm90"), "--arch"),
])
def test_cli_verify_kernel_refuses_bad_input_with_status_2(args: tuple[str, ...], says: str) -> None:
    _kernel("rr_merged", "sm_90")
    p = _cli("verify", str(SPEC), "--kernel", str(TWINS), *args)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_cli_verify_kernel_refuses_a_missing_file_and_several_specs(tmp_path: Path) -> None:
    p = _cli("verify", str(SPEC), "--kernel", str(tmp_path / "nope.cu"))
    assert p.returncode == 2 and "no such file" in p.stderr
    p = _cli("verify", str(SPEC), str(SPEC.parent / "row_smem.yaml"), "--kernel", str(TWINS))
    assert p.returncode == 2 and "one spec file" in p.stderr


def test_a_kernel_name_that_matches_nothing_lists_the_kernels() -> None:
    _kernel("rr_merged", "sm_90")
    with pytest.raises(KernelNotFound, match="rr_volatile"):
        load_kernel(TWINS, "nothing", "sm_90")


# ------------------------------------------------------------------- bad or unusual input
def _fake_nvcc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fail: str = "") -> list[list[str]]:
    """nvcc replaced by a recorder that writes an empty output (or fails with ``fail``, where
    ``{src}`` stands for the file it was given): the cache's keys and texts without a compile."""
    import threadmap.gpu.toolchain as tc

    if nvcc() is None:
        cannot_run("build_user_cubin needs nvcc and the CUTLASS headers")
    monkeypatch.setenv("THREADMAP_CACHE", str(tmp_path / "cache"))
    calls: list[list[str]] = []

    def run(cmd, what, timeout=1800):  # type: ignore[no-untyped-def]
        calls.append(list(cmd))
        if fail:
            raise ToolchainError(f"{what} failed:\n" + fail.format(src=cmd[-3]))
        Path(cmd[-1]).write_bytes(b"")
    monkeypatch.setattr(tc, "_run", run)
    return calls


def test_a_local_header_is_keyed_not_compiled_and_changing_it_compiles_again(monkeypatch: pytest.MonkeyPatch,
                                                                             tmp_path: Path) -> None:
    calls = _fake_nvcc(monkeypatch, tmp_path)
    (tmp_path / "k.cu").write_text('#include "scale.h"\n__global__ void k(float* y) { y[0] = SCALE * BIAS; }\n')
    (tmp_path / "scale.h").write_text("#define SCALE 2.0f\n#include <sub/bias.h>\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bias.h").write_text("#define BIAS 1.0f\n")
    first = build_user_cubin(tmp_path / "k.cu", "sm_90")
    # nvcc compiles the user's source as written: the header is read through -I, not pasted in
    assert Path(calls[0][-3]).read_text() == (tmp_path / "k.cu").read_text()
    assert build_user_cubin(tmp_path / "k.cu", "sm_90") == first and len(calls) == 1  # cached
    (tmp_path / "scale.h").write_text("#define SCALE 3.0f\n#include <sub/bias.h>\n")
    second = build_user_cubin(tmp_path / "k.cu", "sm_90")
    assert second != first and len(calls) == 2
    (tmp_path / "sub" / "bias.h").write_text("#define BIAS 0.5f\n")  # a header the header includes
    assert build_user_cubin(tmp_path / "k.cu", "sm_90") not in (first, second) and len(calls) == 3


def test_a_compile_error_names_the_users_file_not_the_cached_copy(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    _fake_nvcc(monkeypatch, tmp_path, fail='{src}(1): error: expected a declaration\n1 error in "{src}".')
    (tmp_path / "bad.cu").write_text("this is not cuda\n")
    with pytest.raises(ToolchainError) as e:
        build_user_cubin(tmp_path / "bad.cu", "sm_90")
    assert f"{tmp_path / 'bad.cu'}(1): error" in str(e.value) and str(tmp_path / "cache") not in str(e.value)


# the SASS of a row_smem twin with one more, unrelated global load (a scale factor), as
# cuobjdump prints it for sm_90 (only the memory instructions and the end kept)
EXTRA_LOAD_SASS = """
\tcode for sm_90
\t\tFunction : rs_extra
        /*0130*/                   LDG.E R2, desc[UR4][R2.64] ;
        /*01a0*/                   STS [R7], R2 ;
        /*01b0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*01c0*/                   LDG.E R4, desc[UR4][R4.64] ;
        /*0260*/                   LDS R9, [R0] ;
        /*02d0*/                   STG.E desc[UR4][R2.64], R9 ;
        /*02e0*/                   EXIT ;
        /*02f0*/                   BRA 0x2f0;
"""


def test_an_unrelated_load_of_a_sides_kind_makes_it_ambiguous_not_mapped() -> None:
    spec = SPEC.parent / "row_smem.yaml"  # one 32-bit access a thread per side
    loaded = load(spec, SIZES)
    (run,) = verify_spec(loaded, sizes=SIZES)
    (k,) = parse_sass(EXTRA_LOAD_SASS)
    out = analyse(build_model(loaded, dict(loaded.envs[0])), run, k, "rs_extra")
    sides = {(s.stage, s.side): s for s in out.sides}
    s0 = sides[(0, "src")]
    assert s0.status == "ambiguous" and "left over" in s0.note and s0.compiled == s0.declared
    assert [f.kind for f in out.findings] == ["ambiguous_mapping"]
    for key in [(0, "dst"), (2, "src"), (2, "dst")]:
        assert sides[key].status == "mapped" and sides[key].per_thread == 1


def test_another_architectures_code_is_refused_not_read() -> None:
    _kernel("rr_merged", "sm_80")
    cubin = build_user_cubin(TWINS, "sm_80")
    with pytest.raises(KernelNotFound, match=r"holds code for sm_80, not sm_90"):
        load_kernel(cubin, "rr_merged", "sm_90")


def test_several_kernels_and_no_name_say_to_give_one() -> None:
    _kernel("rr_merged", "sm_90")
    with pytest.raises(KernelNotFound) as e:
        load_kernel(TWINS, None, "sm_90")
    assert "holds 5 kernels" in str(e.value) and "--kernel-name" in str(e.value) and "None" not in str(e.value)


def test_a_fifo_is_not_a_kernel_file(tmp_path: Path) -> None:
    import os
    os.mkfifo(tmp_path / "k.cubin")
    with pytest.raises(KernelNotFound, match="not a regular file"):
        load_kernel(tmp_path / "k.cubin", None, "sm_90")


def test_cli_verify_kernel_refuses_an_empty_file_name() -> None:
    p = _cli("verify", str(SPEC), "--kernel", "")
    assert p.returncode == 2 and "--kernel: give the kernel's file" in p.stderr and "Traceback" not in p.stderr


def test_cli_verify_kernel_in_junit_has_a_testcase_per_compiled_side() -> None:
    import xml.etree.ElementTree as ET

    _kernel("rr_merged", "sm_90")
    p = _cli("verify", str(SPEC), "--kernel", str(TWINS), "--kernel-name", "rr_merged", "--format", "junit")
    assert p.returncode == 1, p.stderr  # the spec's own bank-conflict failure; the compiled warnings fail nothing
    cases = {c.get("name"): c for c in ET.fromstring(p.stdout).iter("testcase")}
    assert {n for n in cases if n and n.startswith("compiled[")} == \
        {"compiled[0.src]", "compiled[0.dst]", "compiled[2.src]", "compiled[2.dst]"}
    s2 = cases["compiled[2.src]"]
    assert s2.find("failure") is None
    out = s2.findtext("system-out") or ""
    assert "LDS.128" in out and "8192 x 32 wavefronts" in out and "4 accesses of a thread merged" in out


def test_a_whole_kernel_name_picks_it_though_it_is_part_of_another() -> None:
    _kernel("rr_merged", "sm_90")
    assert load_kernel(TWINS, "rr_loop", "sm_90").name == "rr_loop"
    text = "\tcode for sm_90\n" + "".join(f"\t\tFunction : {n}\n  /*0000*/  EXIT ;\n" for n in ("k", "k2", "_Z1kPf"))
    ks = parse_sass(text)
    ks[2].demangled = "k(float*)"
    assert [k.named("k") for k in ks] == [True, False, True]
    assert [k.named("k(float*)") for k in ks] == [False, False, True]
    assert not any(k.named("k2(") for k in ks) and ks[1].named("k2")
    assert pick_kernel(ks[:2], "k", "sm_90", "f").name == "k" and pick_kernel(ks[:2], "k2", "sm_90", "f").name == "k2"
    assert pick_kernel(ks, "k(float", "sm_90", "f").name == "_Z1kPf"
    with pytest.raises(KernelNotFound, match="2 kernels match 'k'"):  # k and k(float*): both whole names
        pick_kernel(ks, "k", "sm_90", "f")


def test_a_side_with_no_instruction_of_its_kind_is_a_warning() -> None:
    spec = SPEC.parent / "row_smem.yaml"
    loaded = load(spec, SIZES)
    (run,) = verify_spec(loaded, sizes=SIZES)
    text = "\tcode for sm_90\n\t\tFunction : k\n        /*0060*/  STG.E desc[UR4][R2.64], R5 ;\n" \
           "        /*0070*/  EXIT ;\n"
    (k,) = parse_sass(text)
    out = analyse(build_model(loaded, dict(loaded.envs[0])), run, k, "k")
    missing = sorted((f.stage, f.side) for f in out.findings if f.kind == "missing_instruction")
    assert missing == [(0, "dst"), (0, "src"), (2, "src")]
    assert {(s.stage, s.side): s.status for s in out.sides}[(2, "dst")] == "mapped"


def test_a_file_without_sass_says_ptx_alone_is_not_read() -> None:
    with pytest.raises(KernelNotFound, match=r"no kernel code \(SASS\).*PTX alone"):
        pick_kernel(parse_sass("\tcode for sm_90\n"), None, "sm_90", "ptx_only.o")


def test_a_kernel_listing_names_templates_without_their_arguments() -> None:
    text = "\tcode for sm_90\n" + "".join(f"\t\tFunction : {n}\n  /*0000*/  EXIT ;\n" for n in ("a", "b", "c"))
    ks = parse_sass(text)
    ks[0].demangled = "void transpose_kernel<float, 16, cute::TiledCopy<cute::Copy_Atom<X, float> > >(float const*)"
    ks[1].demangled = "void transpose_kernel<float, 32, cute::TiledCopy<cute::Copy_Atom<Y, float> > >(float const*)"
    with pytest.raises(KernelNotFound) as e:
        pick_kernel(ks, "nothing", "sm_90", "f.cu")
    assert str(e.value).endswith("(kernels: transpose_kernel<...> (2 instances); c)")


def test_an_executable_is_read_with_the_wheels_disassembler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An executable built by nvcc, read with NVIDIA's PyPI cuobjdump: cuobjdump -sass runs
    nvdisasm, a separate wheel; found or not, the reader says so instead of reading nothing
    (a clean install once read no instruction of any executable and every width was empty)."""
    from threadmap.gpu.toolchain import sass_widths

    exe = nvcc()
    if exe is None or find_tool("cuobjdump") is None:
        cannot_run("needs nvcc and cuobjdump (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    src = tmp_path / "k.cu"
    src.write_text("__global__ void twice(float4 const* a, float4* b) { b[threadIdx.x] = a[threadIdx.x]; }\n"
                   "int main() { twice<<<1, 32>>>(nullptr, nullptr); return 0; }\n")
    monkeypatch.setenv("THREADMAP_CACHE", str(tmp_path / "cache"))
    subprocess.run([exe, "-arch=sm_90", "-o", str(tmp_path / "k"), str(src)], check=True, capture_output=True,
                   timeout=600)
    (k,) = [k for k in parse_sass(disassemble(tmp_path / "k")) if "twice" in k.name]
    assert [(m.opcode, m.bits) for m in k.memory()] == [("LDG", 128), ("STG", 128)]
    assert sass_widths(tmp_path / "k", k.name) == {"LDG": [128], "STG": [128]}
    # without a disassembler the reason is given, not an empty listing
    monkeypatch.setenv("PATH", str(tmp_path))
    real = find_tool
    monkeypatch.setattr("threadmap.gpu.toolchain.find_tool", lambda n: None if n == "nvdisasm" else real(n))
    cuobjdump = real("cuobjdump")
    assert cuobjdump is not None
    if not (Path(cuobjdump).parent / "nvdisasm").exists():
        (tmp_path / "k").write_bytes((tmp_path / "k").read_bytes() + b"\0")  # a new cache key
        with pytest.raises(ToolchainError, match="nvdisasm"):
            disassemble(tmp_path / "k")


# ------------------------------------------------------------- found by the attack helper
def test_a_kernel_name_or_arch_without_kernel_is_refused_not_ignored() -> None:
    """``-k``/``--arch`` without ``--kernel`` once ran the spec alone and exited as if no kernel
    had been asked for."""
    for args in (("-k", "rr_merged"), ("--kernel-name", ""), ("--arch", "sm_80")):
        p = _cli("verify", str(SPEC), *args)
        assert p.returncode == 2 and "goes with --kernel" in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)


def test_the_checks_asked_for_alone_decide_the_verdict_with_a_kernel() -> None:
    """``--checks coverage --kernel``: the counts at the compiled width are still predicted, but
    the count checks they need no longer fail a run that asked only for coverage (it exited 1
    on the spec's bank conflicts)."""
    _kernel("rr_merged", "sm_90")
    alone = _cli("verify", str(SPEC), "--checks", "coverage", "--format", "json")
    p = _cli("verify", str(SPEC), "--checks", "coverage", "--kernel", str(TWINS), "-k", "rr_merged", "--format", "json")
    assert p.returncode == alone.returncode == 0, p.stderr
    run, run_alone = json.loads(p.stdout)["runs"][0], json.loads(alone.stdout)["runs"][0]
    assert [r["check"] for r in run["results"]] == [r["check"] for r in run_alone["results"]]
    assert run["verdict"] == run_alone["verdict"] == "pass"
    sides = {(s["stage"], s["side"]): s for s in run["compiled"]["sides"]}
    inst, wpi = _oracle_stage2_load(4)
    got = sides[(2, "src")]["compiled"]
    assert (got["instructions"], got["wavefronts_per_instruction"]) == (inst, wpi)
    assert sides[(2, "src")]["declared"]["wavefronts_per_instruction"] == _oracle_stage2_load(1)[1]


def test_compact_output_keeps_the_compiled_warnings() -> None:
    """``--compact`` once dropped the compiled kernel and its width warning without a word."""
    _kernel("rr_merged", "sm_90")
    p = _cli("verify", str(SPEC), "--compact", "--kernel", str(TWINS), "-k", "rr_merged")
    assert p.returncode == 1, p.stderr
    assert "compiled kernel rr_merged (sm_90): 4 sides, 4 mapped" in p.stdout
    assert "warning: stage 2 src: declared 32-bit, compiled LDS.128 -- 4 accesses of a thread merged" in p.stdout


def test_a_source_without_a_kernel_says_so_not_that_ptx_is_unread(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty ``.cu`` (compiled here, for the arch asked) has no kernel: the PTX message was
    for a binary built without SASS."""
    _kernel("rr_merged", "sm_90")
    monkeypatch.setenv("THREADMAP_CACHE", str(tmp_path / "cache"))
    (tmp_path / "empty.cu").write_text("")
    with pytest.raises(KernelNotFound) as e:
        load_kernel(tmp_path / "empty.cu", None, "sm_90")
    assert "no kernel code in it (compiled for sm_90" in str(e.value) and "PTX" not in str(e.value)


FORMS = ROOT / "tests" / "gpu" / "compiled" / "cp_async_forms.cu"
GEMM_A = ROOT / "specs" / "cutlass" / "sm80_f16_gemm_a_128x32_warpraked.yaml"


def _dst_rate(spec: Path) -> float:
    """Wavefronts per instruction the verifier counts for the A tile's cp.async destination."""
    (run,) = verify_spec(load(spec), checks=["bank_conflicts"])
    (r,) = [r for r in run.results if r.check == "bank_conflicts" and r.side == "dst"]
    return r.summary.wavefronts / r.summary.instructions


@pytest.mark.parametrize("declared", ["CACHEGLOBAL", "CACHEALWAYS"])
@pytest.mark.parametrize("compiled", ["ca", "cg", "ldg_sts"])
def test_the_compiled_cp_async_form_decides_how_its_shared_writes_are_counted(tmp_path: Path, declared: str,
                                                                              compiled: str) -> None:
    """The A tile declared as one cp.async form and compiled as either, or as a plain load and
    store: the SASS (``LDGSTS`` .ca, ``LDGSTS.BYPASS`` .cg, ``STS``) is what the hardware runs,
    so the prediction is the verifier's for it (the LDGSTS rule for .ca: 8 wavefronts, the store
    rule otherwise: 4), and anything other than the declared form is a finding.  It was the
    declared form's always."""
    try:
        kernel = load_kernel(FORMS, f"a_tile_{compiled}", "sm_90")
    except ToolchainError as e:
        cannot_run(str(e))
    specs = {}
    for form in ("CACHEGLOBAL", "CACHEALWAYS"):
        specs[form] = tmp_path / f"{form}.yaml"
        specs[form].write_text(GEMM_A.read_text().replace("SM80_CP_ASYNC_CACHEGLOBAL<", f"SM80_CP_ASYNC_{form}<"))
    loaded = load(specs[declared])
    (run,) = verify_spec(loaded)
    out = analyse(build_model(loaded, dict(loaded.envs[0])), run, kernel, str(FORMS))
    dst = {(s.stage, s.side): s for s in out.sides}[(0, "dst")]
    assert dst.status == "mapped" and dst.cp_async == (None if compiled == "ldg_sts" else compiled)
    assert dst.declared.wavefronts_per_instruction == _dst_rate(specs[declared])
    expect = _dst_rate(specs["CACHEALWAYS" if compiled == "ca" else "CACHEGLOBAL"])
    assert dst.compiled.wavefronts_per_instruction == expect and dst.compiled.instructions == dst.declared.instructions
    assert _dst_rate(specs["CACHEALWAYS"]) != _dst_rate(specs["CACHEGLOBAL"])  # the rules differ on this tile
    found = [f for f in out.findings if f.kind == "compiled_cp_async"]
    if (declared == "CACHEALWAYS" and compiled == "ca") or (declared == "CACHEGLOBAL" and compiled == "cg"):
        assert found == []
    else:
        (f,) = found
        assert f.stage == 0 and declared in f.message
        assert (f"cp.async.{compiled}" if compiled != "ldg_sts" else "a load and a store (STS.128)") in f.message
    assert out.unmatched == []


def test_sarif_describes_the_compiled_rules() -> None:
    """A compiled finding's SARIF rule had its own id for a description."""
    _kernel("rr_merged", "sm_90")
    p = _cli("verify", str(SPEC), "--kernel", str(TWINS), "-k", "rr_merged", "--format", "sarif")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)["runs"][0]
    (res,) = [r for r in doc["results"] if r["ruleId"].startswith("compiled.")]
    assert res["ruleId"] == "compiled.compiled_width" and res["level"] == "warning"
    rules = {r["id"]: r["shortDescription"]["text"] for r in doc["tool"]["driver"]["rules"]}
    assert rules["compiled.compiled_width"] != "compiled.compiled_width"


def test_a_256_bit_load_is_read_at_its_width() -> None:
    """sm_100's ``ld.global.v8.b32`` is ``LDG.E.ENL2.256`` (nvcc 13.0): it was read as 32 bits,
    so a side of 32 bits a thread would have been mapped to it at the wrong width."""
    text = "\tcode for sm_100\n\t\tFunction : v8\n" \
           "        /*0070*/                   LDG.E.ENL2.256 R4, R8, desc[UR4][R4.64] ;\n" \
           "        /*0080*/                   LDGSTS.E.BYPASS.LTC128B.128 [R7], desc[UR6][R4.64] ;\n" \
           "        /*0090*/                   LDG.E.LTC128B R2, desc[UR4][R4.64] ;\n"
    (k,) = parse_sass(text)
    assert [(m.name, m.space) for m in k.memory()] == [("LDG.256", "global"), ("LDGSTS.128", "global"),
                                                      ("LDG.32", "global")]


def test_a_mistyped_spec_path_with_a_kernel_says_no_such_file(tmp_path: Path) -> None:
    """``verify nope.yaml --kernel k.cu`` said '--kernel goes with one spec file', hiding the typo."""
    p = _cli("verify", str(tmp_path / "nope.yaml"), "--kernel", str(TWINS), "-k", "rr_merged")
    assert p.returncode == 2 and "no such file" in p.stderr and "goes with one spec" not in p.stderr, p.stderr
    assert p.stderr.count("\n") == 1
