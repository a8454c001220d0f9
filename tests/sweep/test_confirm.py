"""The confirmation of the sweep's findings on a GPU, all but the measurement: which kernels
stand for the finding kinds, their programs (the generator's own kernel text, compiled for the
H200), the verifier's predictions, the reading of ncu's rows and the verdict."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.sweep.conftest import by_kernel
from threadmap.gpu import toolchain
from threadmap.sweep import confirm
from threadmap.sweep.extract import Extracted
from threadmap.sweep.library import Configuration
from threadmap.sweep.run import verify_text
from threadmap.sweep.specs import spec_text
from threadmap.sweep.store import Result

SIMT = "cutlass_simt_sgemm_128x128_8x4_tn_align1"
ALIGN2 = "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_nt_align2"
ALIGN8 = "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_tn_align8"
ROOT = Path(__file__).resolve().parents[2]


def result(cfg: Configuration, ex: Extracted) -> Result:
    """The configuration's row as the sweep stores it (its spec verified with the sweep's own
    function)."""
    w = spec_text(cfg, ex, "test")
    status, findings, warnings, costs, secs, err = verify_text(w.text, cfg.kernels[0])
    assert not err
    return Result(cfg.digest("test"), cfg.key, cfg.label, status, findings=findings, warnings=warnings,  # type: ignore[arg-type]
                  spec=w.text, costs=costs, spec_hash=w.content_hash, kernels=list(cfg.kernels))


@pytest.fixture(scope="module")
def results(configs: list[Configuration], extracted: dict[str, Extracted]) -> dict[str, Result]:
    return {k: result(by_kernel(configs, k), extracted[k]) for k in (SIMT, ALIGN2, ALIGN8)}


def test_one_kernel_stands_for_each_finding_kind(results: dict[str, Result]) -> None:
    """Every kind of warning the counters measure gets one launchable kernel; a configuration
    without warnings, or of the grouped family, stands for none."""
    rows = list(results.values())
    kinds = {k.label for r in rows for k in confirm.finding_kinds(r)}
    assert not confirm.finding_kinds(results[ALIGN8])
    # the grouped kernel of a tile has the same warnings, but reads its problem sizes from
    # global memory: a copy of the row as that family's may not be picked
    fields = json.loads(results[ALIGN2].key)
    grouped = replace(results[ALIGN2], key=json.dumps({**fields, "family": "grouped"}), kernels=["grouped_twin"])
    targets = confirm.choose([grouped, *rows])
    assert sorted(k for t in targets for k in t.kinds) == sorted(kinds)
    assert {t.kernel for t in targets} == {SIMT, ALIGN2}
    for t in targets:
        assert t.sizes == next(w["sizes"] for w in results[t.kernel].warnings)
    assert not confirm.missing_kinds(rows, targets)
    with pytest.raises(confirm.ConfirmError, match="no warning"):
        confirm.choose(rows, [ALIGN8])


def test_the_prediction_is_the_cp_async_of_every_block(
        configs: list[Configuration], extracted: dict[str, Extracted], results: dict[str, Result]) -> None:
    """The verifier's requests and shared instructions at a target's sizes are the cp.async
    the C++ thread maps issue: per block, per warp, every access of A's and B's maps (their
    iterations times the accesses per vector); the warned sides cost more than ideal."""
    for name in (SIMT, ALIGN2):
        r = results[name]
        ex = extracted[name]
        sizes = next(w["sizes"] for w in r.warnings)
        counts, info = confirm.predict(r.spec, sizes, name)
        tm, tn, tk = ex.shape
        blocks = (sizes["M"] // tm) * (sizes["N"] // tn) * (sizes["K"] // tk)
        per_block = sum(op.threads // 32 * op.gmap.iterations[0] * op.gmap.iterations[1] * op.accesses_per_vector
                        for op in ex.operands.values())
        assert info["blocks"] == info["blocks_simulated"] == blocks
        assert counts["global"]["requests"] == counts["shared"]["instructions"] == blocks * per_block
        for side in {confirm.SIDES[w["check"]] for w in r.warnings}:
            _, num, den, ideal = confirm.SIDE_COUNTS[side]
            assert counts[side][num] > counts[side][ideal]


RECORDED = Path(__file__).parent / "data/confirm_h200"


def test_the_schedule_is_the_mainloops_source() -> None:
    """The statements the schedule follows are in the installed MmaMultistage header, and a
    header without one of them is reported; per CTA every k-tile is copied once, and the
    mainloop issues kStages - 1 stages beyond them, zero-filling in the prologue and
    predicated off (or zero-filling, under kZfill) in the mainloop."""
    inc = toolchain.cutlass_include()
    if inc is None:
        pytest.skip("the CUTLASS headers are missing")
    assert confirm.mainloop_premises(inc) == []
    assert confirm.mainloop_premises(None)
    for stages in (2, 3, 4, 10):
        for tiles in range(1, 2 * stages + 2):
            sch = confirm.schedule(stages, tiles)
            assert (sch.real, sch.issued) == (tiles, tiles + stages - 1)
            assert sch.zero_fill == max(0, stages - 1 - tiles)           # the prologue's stages beyond K
            zf = confirm.schedule(stages, tiles, mainloop_zfill=True)
            assert zf.predicated_off == 0 and zf.zero_fill == sch.zero_fill + sch.predicated_off
    with pytest.raises(confirm.ConfirmError):
        confirm.schedule(1, 4)


def test_a_changed_mainloop_is_reported(tmp_path: Path) -> None:
    inc = toolchain.cutlass_include()
    if inc is None:
        pytest.skip("the CUTLASS headers are missing")
    for rel in (confirm.MAINLOOP_HEADER, "cutlass/transform/threadblock/predicated_tile_access_iterator.h"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        text = (inc / rel).read_text()
        if rel == confirm.MAINLOOP_HEADER:
            text = text.replace("gemm_k_iterations > (-Base::kStages + 1)", "gemm_k_iterations > 0")
        (tmp_path / rel).write_text(text)
    assert confirm.mainloop_premises(tmp_path) == ["the mainloop runs while gemm_k_iterations > 1 - kStages"]


def test_the_account_is_the_h200s_counts() -> None:
    """The recorded H200 counters of the three programs (tests/sweep/data/confirm_h200, two
    launches each): every LDGSTS instruction count (executed and issued), the global side and
    the shared wavefronts are the account's, for the SIMT kernel and the tensor-op ones (whose
    4-byte cp.async the rule counts with the line offsets each bank takes words from)."""
    from threadmap.gpu.profile import parse_ncu_csv

    targets = confirm.load_manifest(ROOT / "tools/gpu/sweep_confirm")
    for t in targets:
        tile, stages = confirm.mainloop_of(t.kernel)
        rows = parse_ncu_csv((RECORDED / f"ncu_{t.kernel}.csv").read_text())
        launches = [t.sizes, {**t.sizes, "K": 2 * t.sizes["K"]}]   # as the recorded run launched them
        assert len(rows) == len(launches)
        cleared = confirm.cleared_stage(t.spec, {**t.sizes, "K": tile[2]}, t.kernel)
        off = []
        for s, row in zip(launches, rows, strict=True):
            real, _ = confirm.predict(t.spec, s, t.kernel)
            sch = confirm.schedule(stages, s["K"] // tile[2])
            acc = confirm.account(real, cleared, sch)
            got = confirm.counters(row)
            sides = {side: confirm.judge(side, acc[side], got[side]) for side in confirm.SIDE_COUNTS}
            assert sides["global"].agrees
            assert all(acc["shared"][k] == got["shared"][k] for k in ("sass_instructions", "issued"))
            assert got["shared"]["wavefronts"] > acc["shared"]["ideal_wavefronts"]
            off.append(got["shared"]["wavefronts"] - acc["shared"]["wavefronts"])
            # the tensor-op kernels' reads are uncoalesced (a finding, confirmed), the SIMT one's not
            assert confirm.verdict("global", [sides["global"]]) is (real["global"]["sectors"] >
                                                                     real["global"]["ideal_sectors"])
        assert off == [0.0, 0.0], t.kernel


#: the second H200 run's shared wavefronts per launch (docs/sweep.md's confirmation table,
#: ``confirm run`` at ``confirm.launch_sizes``: the warning's K, one k-tile, kStages -/+ 1 k-tiles)
SECOND_RUN = {
    "cutlass_simt_sgemm_128x32_8x5_tn_align1": [5440, 5120, 7040, 8640],
    "cutlass_tensorop_f16_s16816gemm_f16_64x64_32x10_nn_align2": [11776, 9984, 16128, 19712],
    "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_nt_align2": [9216, 7680, 10752, 17920],
}


def test_the_account_is_the_second_runs_wavefronts() -> None:
    """All twelve launches of the second run: the account's shared wavefronts are the H200's --
    among them the launches whose operand rows are not whole lines apart (the 64x64 kernel's
    A at K = 288 and 352, the SIMT kernel's at K = 48), where lines in different sector
    positions share wavefronts."""
    for t in confirm.load_manifest(ROOT / "tools/gpu/sweep_confirm"):
        tile, stages = confirm.mainloop_of(t.kernel)
        cleared = confirm.cleared_stage(t.spec, {**t.sizes, "K": tile[2]}, t.kernel)
        got = []
        for s in confirm.launch_sizes(t.sizes, tile[2], stages):
            real, _ = confirm.predict(t.spec, s, t.kernel)
            acc = confirm.account(real, cleared, confirm.schedule(stages, s["K"] // tile[2]))
            got.append(acc["shared"]["wavefronts"])
        assert got == SECOND_RUN[t.kernel], t.kernel


def _side_of(kind: str) -> str:
    """The side a finding kind's label is measured on (``gemm tensorop: coalescing (...)``)."""
    return confirm.SIDES[kind.split(": ", 1)[1].split(" ", 1)[0]]


def _judged(t: confirm.Target, accounts: list[dict[str, dict[str, float]]], csv: Path) -> dict[str, list[confirm.Side]]:
    """Each side of each recorded launch judged against its account (the shared side of a
    target with a bypassing copy is not judged, as ``run`` does)."""
    from threadmap.gpu.profile import parse_ncu_csv

    rows = parse_ncu_csv(csv.read_text())
    assert len(rows) == len(accounts)
    bypass = confirm.bypasses(t.spec)
    return {side: [confirm.judge(side, a[side], confirm.counters(r)[side], bypass)
                   for a, r in zip(accounts, rows, strict=True)] for side in confirm.SIDE_COUNTS}


def test_the_account_is_the_third_runs_counts() -> None:
    """The third H200 run (tests/sweep/data/confirm_h200_run3: four launches of each GEMM
    program): with the fitted LDGSTS rule every count of both sides is the account's at all
    twelve launches, so every finding kind of the three targets is confirmed."""
    for t in confirm.load_manifest(ROOT / "tools/gpu/sweep_confirm"):
        tile, stages = confirm.mainloop_of(t.kernel)
        cleared = confirm.cleared_stage(t.spec, {**t.sizes, "K": tile[2]}, t.kernel)
        accounts = [confirm.account(confirm.predict(t.spec, s, t.kernel)[0], cleared,
                                    confirm.schedule(stages, s["K"] // tile[2]))
                    for s in confirm.launch_sizes(t.sizes, tile[2], stages)]
        sides = _judged(t, accounts, ROOT / "tests/sweep/data/confirm_h200_run3" / f"ncu_{t.kernel}.csv")
        assert all(sd.agrees for v in sides.values() for sd in v), t.kernel
        for kind in t.kinds:
            assert confirm.verdict(_side_of(kind), sides[_side_of(kind)]) is True, kind


def test_the_conv_account_is_the_h200s_counts() -> None:
    """The convolution targets' H200 counters (tests/sweep/data/confirm_h200_conv, two launches
    each): the global side is the account's at every launch of all four; the shared side of the
    three whose copies are all L1-allocating is too, so both conv2d finding kinds are confirmed;
    the Fprop align8 kernel's B copy is cp.async.cg, whose shared writes are not judged."""
    folder = ROOT / "tests/sweep/data/confirm_h200_conv"
    confirmed: dict[str, list[bool | None]] = {}
    for t in confirm.load_manifest(folder):
        sides = _judged(t, confirm.conv_account(t)["accounts"], folder / f"ncu_{t.kernel}.csv")
        bypass = confirm.bypasses(t.spec)
        assert all(sd.agrees for sd in sides["global"]), t.kernel
        assert all(sd.agrees is (None if bypass else True) for sd in sides["shared"]), t.kernel
        for kind in t.kinds:
            confirmed.setdefault(kind, []).append(confirm.verdict(_side_of(kind), sides[_side_of(kind)]))
    assert set(confirmed) == {"conv2d tensorop: bank_conflicts (conflict)", "conv2d tensorop: coalescing (uncoalesced)"}
    assert all(True in v for v in confirmed.values()) and False not in sum(confirmed.values(), [])


def test_launches_separate_the_terms() -> None:
    """The launches: the warning's K first; one k-tile; kStages - 1 and kStages + 1 k-tiles
    (the same predicated-off stages, no zero-fill: their difference is two k-tiles' cost)."""
    ls = confirm.launch_sizes({"M": 256, "N": 256, "K": 64}, 32, 4)
    assert [s["K"] for s in ls] == [64, 32, 96, 160]
    schs = [confirm.schedule(4, s["K"] // 32) for s in ls]
    assert schs[2].predicated_off == schs[3].predicated_off and schs[2].zero_fill == schs[3].zero_fill == 0
    assert schs[1].zero_fill == 2
    assert [s["K"] for s in confirm.launch_sizes({"M": 1, "N": 1, "K": 96}, 32, 4)] == [96, 32, 160]


def test_the_verdict(results: dict[str, Result]) -> None:
    """A finding is confirmed when every launch's counters are the account's and cost more than
    ideal; not when one count differs; not judged when nothing was measured or the shared
    writes are the bypassing form's."""
    r = results[ALIGN2]
    real = confirm.predict(r.spec, next(w["sizes"] for w in r.warnings))[0]
    cleared = {"instructions": 512.0, "wavefronts": 2048.0, "ideal_wavefronts": 512.0}
    acc = confirm.account(real, cleared, confirm.schedule(4, 2))
    for side in confirm.SIDE_COUNTS:
        exact = confirm.judge(side, acc[side], dict(acc[side]))
        assert confirm.verdict(side, [exact, exact]) is True
        for k in confirm.COMPARED[side]:
            off = confirm.judge(side, acc[side], {**acc[side], k: acc[side][k] + 1})
            assert off.agrees is False and k in off.note
            assert confirm.verdict(side, [exact, off]) is False
        assert confirm.verdict(side, [confirm.judge(side, acc[side], {})]) is None
        ideal = {**acc[side], confirm.SIDE_COUNTS[side][1]: acc[side][confirm.SIDE_COUNTS[side][3]]}
        assert confirm.verdict(side, [confirm.judge(side, ideal, dict(ideal))]) is False   # no finding
    assert confirm.verdict("shared", [confirm.judge("shared", acc["shared"], dict(acc["shared"]), True)]) is None


def test_the_ldgsts_counters_are_read_from_ncus_rows() -> None:
    """ncu's ``--csv --page raw`` rows (the format the H200's ncu 2025.3 writes: a units row,
    thousands separators) read through threadmap.gpu.profile's LDGSTS ways: this ncu's global
    loads for the sectors and requests, the SASS instruction count for the shared side."""
    from threadmap.gpu.profile import parse_ncu_csv

    cols = ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
            "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
            "smsp__sass_inst_executed_op_ldgsts.sum", "smsp__inst_executed_op_ldgsts.sum"]
    text = ("==PROF== Connected to process 740\n" + ",".join(f'"{c}"' for c in ["ID", "Kernel Name", *cols]) + "\n"
            + ",".join(['""', '""', '"sector"', '""', '""', '"inst"', '"inst"']) + "\n"
            + '"0","void cutlass::Kernel2<k>(T1::Params)","8,192","512","3,072","512","608"\n')
    rows = parse_ncu_csv(text)
    got = confirm.counters(rows[0])
    assert got["global"] == {"sectors": 8192.0, "requests": 512.0}
    assert got["shared"]["wavefronts"] == 3072.0 and got["shared"]["instructions"] == 512.0
    assert got["shared"]["issued"] == 608.0


def test_the_program_is_the_generators_kernel_and_builds_for_the_h200(results: dict[str, Result],
                                                                     extracted: dict[str, Extracted]) -> None:
    """The program holds the generator's kernel text unchanged and launches it through the
    library's adapter; built (sm_80 PTX to sm_90 SASS) its cp.async are the spec's: LDGSTS of
    the atom's width, the L1-allocating form for CACHEALWAYS."""
    from cutlass_library import gemm_operation as go

    from threadmap.sweep.library import generate

    op = next(op for _, op in generate(("80",), SIMT) if op.procedural_name() == SIMT)
    src = confirm.program(SIMT)
    assert go.EmitGemmUniversalInstance().emit(op) in src
    assert f"GemmUniversalAdapter<{SIMT}>" in src
    if toolchain.nvcc() is None or toolchain.cutlass_include() is None:
        pytest.skip("nvcc or the CUTLASS headers are missing")
    exe = confirm.build(src)
    if toolchain.find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump is missing")
    atoms = set(confirm.cp_async_stages(results[SIMT].spec).values())
    widths = sorted({int(a.split("<uint")[1].split("_t")[0]) for a in atoms})
    sass = confirm.sass_ldgsts(exe)
    assert sass["widths"] == widths and sass["static_instructions"] > 0
    assert sass["bypass"] == any("CACHEGLOBAL" in a for a in atoms)
    # the prologue unrolled (kStages - 1 zero-filling stages), the mainloop's loop one @P stage
    # (the generator's kernels keep SharedMemoryClearOption::kNone)
    tile, stages = confirm.mainloop_of(SIMT)
    per_thread = sum(op.gmap.iterations[0] * op.gmap.iterations[1] * op.accesses_per_vector
                     for op in extracted[SIMT].operands.values())
    assert confirm.mainloop_form(sass, stages, per_thread) == (False, "")
    assert confirm.mainloop_form(sass, stages + 1, per_thread)[0] is None


def test_the_committed_manifest_is_the_generators_programs() -> None:
    """tools/gpu/sweep_confirm holds, for every target, the program its kernel gives now
    (``prepare`` writes them again when CUTLASS changes)."""
    folder = ROOT / "tools/gpu/sweep_confirm"
    targets = confirm.load_manifest(folder)
    assert {t.operation for t in targets} == {"gemm"}
    for t in targets:
        assert (folder / f"{t.kernel}.cu").read_text() == confirm.program(t.kernel)


def test_bad_input_is_one_line_and_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert confirm.main(["prepare", "--db", str(tmp_path / "none.db"), "--dir", str(tmp_path)]) == 2
    assert confirm.main(["run", "--dir", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(e.startswith("error: ") for e in err)


def test_run_without_ncu_or_with_a_file_as_cache_stops_before_building(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Without Nsight Compute nothing can be measured: one line, exit 2, no program built (the
    committed manifest names three); a file given as the compile cache is refused likewise."""
    built: list[str] = []
    monkeypatch.setattr(confirm, "build", lambda source: built.append(source))
    real = toolchain.find_tool
    monkeypatch.setattr(toolchain, "find_tool", lambda name: None if name == "ncu" else real(name))
    assert confirm.main(["run", "--dir", str(ROOT / "tools/gpu/sweep_confirm"), "--out", str(tmp_path / "o")]) == 2
    cache = tmp_path / "cache"
    cache.write_text("")
    assert confirm.main(["run", "--cache", str(cache), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert built == [] and len(err) == 2
    assert "ncu" in err[0] and "is not a folder" in err[1]


# --- convolutions --------------------------------------------------------------------------------

FPROP = "cutlass_tensorop_s16816fprop_analytic_f16_256x128_32x3_nhwc_align8"


def test_the_conv_schedule_is_the_implicit_gemm_mainloops_source() -> None:
    """The statements the conv schedule follows are in the installed ImplicitGemmMultistage
    and ImplicitGemmConvolution headers.  From that control flow: the prologue copies kStages - 1
    whole stages, group 0 of the next is copied before the mainloop, and each of its T
    iterations completes a stage and starts the next with group 0; so T + kStages - 1 whole
    stages (the last kStages - 1 past the k-tiles: every copy is cp_async_zfill and nothing
    clears a mask, so they zero-fill) and one lone group 0, past the k-tiles too."""
    inc = toolchain.cutlass_include()
    if inc is None:
        pytest.skip("the CUTLASS headers are missing")
    assert confirm.conv_mainloop_premises(inc) == []
    for stages in (2, 3, 4, 5, 10):
        for warp_steps in (2, 3, 4, 8):
            for tiles in (1, 2, stages - 1, stages, stages + 1, 3 * stages):
                if tiles < 1:
                    continue
                sch = confirm.conv_schedule(stages, tiles, warp_steps)
                whole = tiles + stages - 1
                assert (sch.real, sch.zero_fill, sch.predicated_off, sch.group_zero_fill) == \
                    (tiles, whole - tiles, 0, 1)
    with pytest.raises(confirm.ConfirmError):
        confirm.conv_schedule(3, 4, 1)   # kWarpGemmIterations 1: the header's loop would never advance


@pytest.mark.parametrize("plant", ["clear_mask", "cp_async", "group"])
def test_a_changed_conv_mainloop_is_reported(tmp_path: Path, plant: str) -> None:
    """A planted change of the conv mainloop's control flow fails its premise: a mask cleared
    when the k-tiles run out (as MmaMultistage does), the mainloop's copies predicated instead of
    zero-filling, group 0 no longer issued before the mainloop."""
    inc = toolchain.cutlass_include()
    if inc is None:
        pytest.skip("the CUTLASS headers are missing")
    for rel in (confirm.CONV_MAINLOOP_HEADER, confirm.CONV_KERNEL_HEADER):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((inc / rel).read_text())
    head = tmp_path / confirm.CONV_MAINLOOP_HEADER
    text = head.read_text()
    if plant == "clear_mask":
        changed = text.replace("--gemm_k_iterations;\n", "--gemm_k_iterations;\n          "
                               "iterator_A.clear_mask(gemm_k_iterations == 0);\n", 1)
        want = "no mask is cleared by the mainloop (an access is off where its iterator says so)"
    elif plant == "cp_async":
        i = text.index("void copy_tiles_and_advance")
        changed = text[:i] + text[i:].replace("cutlass::arch::cp_async_zfill<kSrcBytes, kCacheOpA>",
                                              "cutlass::arch::cp_async<kSrcBytes, kCacheOpA>", 1)
        want = "every copy zero-fills where the iterator's access is not valid (prologue and mainloop)"
    else:
        changed = text.replace("// Start issuing the first group of the next stage outside of the mainloop\n"
                               "    copy_tiles_and_advance(iterator_A, iterator_B);", "")
        want = "group 0 of the next stage is issued before the mainloop"
    assert changed != text
    head.write_text(changed)
    got = confirm.conv_mainloop_premises(tmp_path)
    assert want in got
    if plant == "group":      # the others also break the statements around them
        assert got == [want]


@pytest.fixture(scope="module")
def conv_target() -> confirm.Target:
    """The Fprop configuration's row as the sweep stores it, and its target."""
    from tests.support.cxx_oracle import require_oracle
    from threadmap.sweep.extract import extract
    from threadmap.sweep.library import generate, group
    from threadmap.sweep.specs_conv import conv_spec_text

    require_oracle()
    cfg = group(generate(("80",), FPROP))[0]
    w = conv_spec_text(cfg, extract([cfg])[0], "test")
    status, findings, warnings, costs, secs, err = verify_text(w.text, cfg.kernels[0])
    assert not err
    row = Result(cfg.digest("test"), cfg.key, cfg.label, status, findings=findings, warnings=warnings,  # type: ignore[arg-type]
                 spec=w.text, costs=costs, spec_hash=w.content_hash, kernels=list(cfg.kernels))
    (t,) = confirm.choose([row])
    return t


def test_a_conv_target_is_at_whole_tiles_of_its_family(conv_target: confirm.Target) -> None:
    """The conv finding gets a target; its sizes are a problem of the family whose implicit GEMM
    is whole tiles, the warning's but for the batch; the second launch has twice the k-tiles;
    the program's problem is extract_conv.problem_cxx's."""
    from threadmap.sweep.extract_conv import family, problem_cxx

    t = conv_target
    assert t.operation == "conv2d" and t.kinds == ["conv2d tensorop: bank_conflicts (conflict)"]
    cfg = confirm.configuration(FPROP)
    fam = family(cfg)
    warned = next(w["sizes"] for w in t.warnings)
    assert {k: v for k, v in t.sizes.items() if k != "N"} == {k: v for k, v in warned.items() if k != "N"}
    assert confirm.in_family(cfg, t.sizes) == ""
    for expr, tile in zip((fam.m, fam.n, fam.k), cfg.fields["threadblock"], strict=True):
        assert confirm._extent(expr, t.sizes) % tile == 0
    ls = confirm.conv_launch_sizes(cfg, t.sizes)
    assert ls[0] == t.sizes and confirm._extent(fam.k, ls[1]) == 2 * confirm._extent(fam.k, ls[0])
    fields = confirm.problem_fields(cfg, t.sizes)
    assert problem_cxx(cfg, t.sizes).endswith("(" + ", ".join(map(str, fields[:-3])) + ", "
                                              "cutlass::conv::Mode::kCrossCorrelation, 1, 1)")


def test_the_conv_account(conv_target: confirm.Target) -> None:
    """Per launch: the spec's k-tiles (its grid's z the CTA's k-tiles), kStages - 1 zero-filling
    stages and one zero-filling first group per CTA: the executed LDGSTS are those stages' warp
    instructions (the thread maps' iterations, the first group ceil(iterations /
    kWarpGemmIterations) of them) over every CTA; nothing predicated off; the global side the
    spec's alone; the warned shared side above ideal."""
    t = conv_target
    acc = confirm.conv_account(t)
    tile, stages = confirm.mainloop_of(FPROP)
    w = confirm.warp_gemm_iterations(FPROP)
    for s, sch, cl, g0, a, info in zip(acc["launches"], acc["schedules"], acc["cleared"], acc["group"],
                                       acc["accounts"], acc["predictions"], strict=True):
        real, _ = confirm.predict(t.spec, s, t.kernel)
        ctas = info["grid"][0] * info["grid"][1]
        per_cta = cl["instructions"] / ctas
        its = (g0["iterations.sA"], g0["iterations.sB"])
        assert per_cta == cl["warps"] * sum(its)
        assert g0["instructions"] / ctas == cl["warps"] * sum(-(-i // w) for i in its)
        assert sch.k_tiles == info["grid"][2] and (sch.zero_fill, sch.group_zero_fill) == (stages - 1, 1)
        sh = a["shared"]
        assert sh["instructions"] == real["shared"]["instructions"] + (stages - 1) * cl["instructions"] \
            + g0["instructions"] == sh["issued"]
        assert real["shared"]["instructions"] == sch.k_tiles * cl["instructions"]
        assert a["global"] == {k: real["global"][k] for k in a["global"]}
        assert sh["wavefronts"] > sh["ideal_wavefronts"]


def test_the_conv_program_builds_and_describes_its_account(conv_target: confirm.Target) -> None:
    """The program holds the generator's kernel text unchanged and launches it through
    ImplicitGemmConvolution; built for the H200, its describe (host-side, no GPU) gives the
    constants and k-tiles the account took and no access valid past the last k-tile; its
    LDGSTS are the conv mainloop's stream (prologue and first group unrolled, one stage in the
    loop, all zero-filling)."""
    from cutlass_library.conv2d_operation import EmitConv2dInstance

    from threadmap.sweep.library import generate

    op = next(op for _, op in generate(("80",), FPROP) if op.procedural_name() == FPROP)
    src = confirm.program(FPROP)
    assert EmitConv2dInstance().emit(op) in src
    assert f"cutlass::conv::device::ImplicitGemmConvolution<{FPROP}>" in src
    if toolchain.nvcc() is None or toolchain.cutlass_include() is None:
        pytest.skip("nvcc or the CUTLASS headers are missing")
    exe = confirm.build(src)
    cfg = confirm.configuration(FPROP)
    problems = [confirm.problem_fields(cfg, s) for s in confirm.conv_launch_sizes(cfg, conv_target.sizes)]
    described = confirm.describe(exe, problems)
    acc = confirm.conv_account(conv_target, described)
    assert acc["mismatch"] == []
    assert all(int(d["valid_real"]) > 0 for d in described)
    planted = [{**described[0], "group_a": str(int(described[0]["group_a"]) + 1)}, *described[1:]]
    assert confirm.conv_account(conv_target, planted)["mismatch"]
    if toolchain.find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump is missing")
    sass = confirm.sass_ldgsts(exe)
    cl, g0 = acc["cleared"][0], acc["group"][0]
    per = int(cl["instructions"] / (cl["ctas"] * cl["warps"]))
    group0 = int(g0["instructions"] / (g0["ctas"] * g0["warps"]))
    assert confirm.conv_mainloop_form(sass, acc["stages"], per, group0) == (True, "")
    assert confirm.conv_mainloop_form(sass, acc["stages"] + 1, per, group0)[0] is None
