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
    status, findings, warnings, secs, err = verify_text(w.text, cfg.kernels[0])
    assert not err
    return Result(cfg.digest("test"), cfg.key, cfg.label, status, findings=findings, warnings=warnings,  # type: ignore[arg-type]
                  spec=w.text, spec_hash=w.content_hash, kernels=list(cfg.kernels))


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


def verdict_of(side: str, preds: list[dict[str, dict[str, float]]], extras: list[dict[str, float]],
               bypass: bool = False) -> bool | None:
    """The verdict on counters that hold each launch's prediction plus ``extras``."""
    _, num, den, _ = confirm.SIDE_COUNTS[side]
    ms = [{num: p[side][num] + e[num], den: p[side][den] + e[den]} for p, e in zip(preds, extras, strict=True)]
    sides = [confirm.judge(side, p[side], m, bypass) for p, m in zip(preds, ms, strict=True)]
    return confirm.verdict(side, sides, [confirm.minus(m, p[side]) for p, m in zip(preds, ms, strict=True)])


def test_the_verdict(results: dict[str, Result]) -> None:
    """A finding is confirmed when the counters hold the prediction plus the same constant at
    both launches (the drain's instructions); not when one launch differs otherwise; not
    judged when nothing was measured or the shared writes are the bypassing form's."""
    r = results[ALIGN2]
    launches = confirm.sizes_pair(next(w["sizes"] for w in r.warnings))
    preds = [confirm.predict(r.spec, s)[0] for s in launches]
    for side in confirm.SIDE_COUNTS:
        _, num, den, _ = confirm.SIDE_COUNTS[side]
        drain = {num: 0.0, den: 96.0}
        assert verdict_of(side, preds, [dict.fromkeys((num, den), 0.0)] * 2) is True
        assert verdict_of(side, preds, [drain, drain]) is True
        assert verdict_of(side, preds, [drain, {num: 32.0, den: 96.0}]) is False
        sides = [confirm.judge(side, p[side], {}) for p in preds]
        assert confirm.verdict(side, sides, []) is None
        if side == "shared":
            assert verdict_of(side, preds, [drain, drain], bypass=True) is None
    exact = confirm.judge("global", preds[0]["global"], dict(preds[0]["global"]))
    assert exact.agrees and exact.measured == exact.predicted


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


def test_the_program_is_the_generators_kernel_and_builds_for_the_h200(results: dict[str, Result]) -> None:
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
