"""The pipeline model against the H200 (recorded by tools/gpu/pipeline/run.sh into
docs/hardware/pipeline/pipeline_h200.jsonl): every case's spec verifies PASS exactly where the
kernel ran correctly, and where it failed the model's witness names the same round, stage and
role as the kernel's first wrong read or its watchdog."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import threadmap.api as api

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "docs" / "hardware" / "pipeline" / "pipeline_h200.jsonl"


def _cases() -> dict[str, tuple[str, str, str]]:
    spec = importlib.util.spec_from_file_location("pipeline_cases", ROOT / "tools" / "gpu" / "pipeline" / "cases.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CASES


CASES = _cases()
RUNS: dict[str, dict] = {}
MEMCHECK: dict[str, str] = {}
for line in RECORD.read_text().splitlines():
    rec = json.loads(line)
    if "memcheck" in rec:
        MEMCHECK[rec["case"]] = rec["memcheck"]
    else:
        RUNS[rec["case"]] = rec["result"]

#: kernels whose hazard the H200 did not show in the recorded runs (the model's finding stands:
#: a missing proxy fence is undefined behaviour that this store pattern did not expose)
NOT_OBSERVED = {"store_nofence"}


def device_failed(case: str) -> bool:
    r = RUNS[case]
    errors = MEMCHECK.get(case, "")
    return r["status"] != "ok" or ("ERROR SUMMARY: 0 errors" not in errors and bool(errors))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_verdict_is_what_the_h200_did(case: str) -> None:
    spec = CASES[case][2]
    run = api.verify_spec(ROOT / "specs" / spec)[0]
    if case in NOT_OBSERVED:
        assert run.verdict == "fail" and not device_failed(case)
        return
    assert (run.verdict == "fail") == device_failed(case), (case, run.verdict, RUNS[case], MEMCHECK.get(case))


def _finding(spec: str, kind: str) -> dict:
    run = api.verify_spec(ROOT / "specs" / spec)[0]
    return next(f.witness for r in run.results for f in r.findings if f.kind == kind)


def test_the_hangs_are_where_the_watchdog_caught_them() -> None:
    w = _finding("planted/sm90_empty_arrival_count.yaml", "arrival_deadlock")
    h = RUNS["ws_arrive_count"]["hang"]
    assert (w["role"], w["round"], w["stage"], w["barrier"]) == (h["role"], h["round"], h["stage"], h["barrier"])
    w = _finding("planted/sm90_expect_tx_too_large.yaml", "tx_mismatch_hang")
    h = RUNS["ws_expect_tx_long"]["hang"]
    assert (w["role"].startswith("consumer"), w["round"], w["stage"], w["barrier"]) == (
        h["role"] == "consumer", h["round"], h["stage"], h["barrier"])


def test_the_wrong_phase_reads_round_0_of_stage_0_before_it_lands() -> None:
    w = _finding("planted/sm90_wait_on_wrong_phase.yaml", "read_before_landed")
    f = RUNS["ws_wrong_phase"]["first"]
    assert (w["round"], w["stage"]) == (f["round"], f["stage"]) == (0, 0)
    assert f["found"] == -1  # the sentinel the kernel wrote before any load: nothing had landed


def test_a_misaligned_tile_read_tile_relative_is_wrong_everywhere_the_model_says() -> None:
    w = _finding("planted/sm90_tma_smem_off_swizzle_alignment.yaml", "tma_smem_alignment")
    # the kernel checks every element of A's and B's tiles in 64 rounds on 2 CTAs
    assert RUNS["ws_off_align_relative"]["mismatches"] == 2 * 64 * 2 * w["wrong_elements"]
    assert RUNS["ws_off_align_absolute"]["status"] == "ok"


# -- a second, independent implementation of the same protocols (tools/gpu/pipeline_independent:
# raw PTX, 2x1 clusters with multicast, racecheck/synccheck), recorded on the H200 ------------------
INDEPENDENT = {r["case"]: r for r in json.loads(
    (ROOT / "docs" / "hardware" / "pipeline" / "pipeline_h200_independent.json").read_text())}
#: case -> the spec whose verdict it confirms (None: the explorer's protocol tests stand for it)
INDEPENDENT_SPECS = {
    "ws_ok": "pipeline/sm90_tma_ws_mainloop.yaml", "ws_wrong_phase": "planted/sm90_wait_on_wrong_phase.yaml",
    "ws_release_early": "planted/sm90_release_before_mma_done.yaml",
    "ws_expect_tx_long": "planted/sm90_expect_tx_too_large.yaml",
    "ws_arrive_count": "planted/sm90_empty_arrival_count.yaml",
    "ws_off_align_relative": "planted/sm90_tma_smem_off_swizzle_alignment.yaml",
    "ws_off_align_absolute": "pipeline/sm90_tma_ws_mainloop.yaml",
    "ws_cluster_mc": "pipeline/sm90_tma_multicast_2x1.yaml",
    "ws_cluster_mask_beyond": "planted/sm90_multicast_mask_beyond_cluster.yaml",
    "store_fence": "pipeline/sm90_tma_store_epilogue.yaml",
    "store_nofence": "planted/sm90_tma_store_missing_fence.yaml",
    "cp_ok": "pipeline/sm80_cp_async_multistage.yaml", "cp_one_stage_too_few": "planted/sm80_one_stage_too_few.yaml",
    "cp_one_stage_too_few_delay": "planted/sm80_one_stage_too_few.yaml",
    "cp_wait_too_few": None, "cp_zfill_ok": "pipeline/sm80_cp_async_multistage.yaml",
    "cp_zfill_oob": "planted/sm80_zfill_predicate_out_of_bounds.yaml",
}
#: hazards the model finds that these runs did not show (undefined behaviour that did not bite)
INDEPENDENT_NOT_OBSERVED = {"store_nofence", "cp_wait_too_few"}


def test_the_independent_record_covers_every_case() -> None:
    assert set(INDEPENDENT) == set(INDEPENDENT_SPECS)


@pytest.mark.parametrize("case", sorted(INDEPENDENT_SPECS))
def test_the_independent_kernels_agree_with_the_model(case: str) -> None:
    r = INDEPENDENT[case]
    sanitizer = " ".join(str(v) for v in (r.get("sanitizer") or {}).values())
    failed = r["status"] != "ok" or ("ERROR SUMMARY" in sanitizer and "ERROR SUMMARY: 0 errors" not in sanitizer)
    spec = INDEPENDENT_SPECS[case]
    if case in INDEPENDENT_NOT_OBSERVED:
        assert not failed
        return
    assert spec is not None
    assert (api.verify_spec(ROOT / "specs" / spec)[0].verdict == "fail") == failed, (case, r["status"], sanitizer)


def test_a_multicast_mask_beyond_the_cluster_fails_the_launch() -> None:
    assert INDEPENDENT["ws_cluster_mask_beyond"]["status"] == "error"
    w = _finding("planted/sm90_multicast_mask_beyond_cluster.yaml", "multicast_outside_cluster")
    assert w["cta_outside"] == 2 and w["cluster_size"] == 2
