"""The pipeline confirmation cases: asynchronous shared-memory pipelines run on the GPU as written
and with one planted bug each.  ws_pipeline.cu runs the ``ws`` (SM90 TMA + mbarrier,
warp-specialised) and ``store`` (TMA store epilogue) cases, cpasync_pipeline.cu the ``cp`` (SM80
multistage cp.async) cases; both read the table this module prints, one case per line::

    name kernel key=value key=value ...

    python3 tools/gpu/pipeline_independent/cases.py          > cases.txt   (the table)
    python3 tools/gpu/pipeline_independent/cases.py names    (one "name binary" line per case, run.sh's loop)

Every case lists all of its kernel's parameters.  ``control`` marks the cases whose parameters are
all at their correct values: the harness is broken if one of them does not come back ``ok``.
``bug`` says what was planted (not what the hardware does: that is what run.sh measures).
"""

from __future__ import annotations

import sys
from typing import Any

# ws_pipeline.cu, the warp-specialised TMA pipeline: M x K and N x K f16 (K-major), CTA tile
# 128x128x64, S stages of (A 16 KiB + B 16 KiB) with the 128-byte swizzle.  Correct values:
WS_DEFAULTS: dict[str, int] = {
    "m": 256,  # M = N = 256: 2 x 2 CTAs
    "n": 256,
    "stages": 4,
    "k_tiles": 64,  # K = 64 * k_tiles
    "consumer_start_phase": 0,
    "producer_start_phase": 1,  # CUTLASS's make_producer_start_state
    "expect_tx_delta": 0,  # bytes added to the 32768 each full barrier expects
    "empty_count_delta": 0,  # added to the empty barriers' arrival count (256 x cluster size)
    "release_early": 0,  # 1: consumers arrive on the empty barrier, sleep, then read the stage
    "sleep_ns": 4000,  # the release_early sleep (__nanosleep)
    "smem_offset": 0,  # bytes between the 1024-aligned base and the ring
    "consumer_relative": 0,  # 1: consumers un-swizzle from the tile's start, not the absolute address
    "cluster": 1,  # CTAs per cluster along M (2: B multicast, each CTA loads half)
    "mc_mask": 3,  # the B multicast's CTA mask (cluster 2 only)
    "watchdog_ms": 200,  # a wait longer than this is a hang
}

# ws_pipeline.cu's store epilogue: 128 threads write a 64x64 f16 tile (128-byte swizzle by the
# absolute address) with st.shared, [fence.proxy.async], bar.sync, one thread's TMA store.
STORE_DEFAULTS: dict[str, int] = {
    "fence": 1,
    "tiles": 8192,  # 64x64 tiles per launch, spread over the CTAs (a persistent loop)
    "ctas": 0,  # 0: twice the SM count
    "launches": 8,
}

# cpasync_pipeline.cu, CUTLASS's multistage cp.async mainloop: one A tile 128x32 f16 per stage.
CP_DEFAULTS: dict[str, int] = {
    "stages": 3,  # S: the prefetch distance is S - 1
    "k_tiles": 64,  # K = 32 * k_tiles
    "wait_n": 1,  # cp.async.wait_group N (S - 2 correct)
    "buffers": 3,  # shared stages in the ring (S correct)
    "pred": 0,  # 0: row and k bounds (correct); 1: k bound only (rows >= M read out of bounds)
    "m": 128,  # A has exactly m rows; rows m..127 of the tile must be zero-filled
    "ctas": 16,  # CTAs, each running the same tile (more chances to see a race)
    "read_delay_ns": 0,  # a __nanosleep between issuing the refill and reading (0: CUTLASS's order)
}

DEFAULTS: dict[str, dict[str, int]] = {"ws": WS_DEFAULTS, "store": STORE_DEFAULTS, "cp": CP_DEFAULTS}
BINARY: dict[str, str] = {"ws": "ws_pipeline", "store": "ws_pipeline", "cp": "cpasync_pipeline"}


def _case(kernel: str, bug: str, **changes: int) -> dict[str, Any]:
    base = DEFAULTS[kernel]
    unknown = set(changes) - set(base)
    if unknown:
        raise KeyError(f"unknown {kernel} parameters {sorted(unknown)}")
    params = {**base, **changes}
    if kernel == "cp" and "wait_n" not in changes:
        params["wait_n"] = params["stages"] - 2
    if kernel == "cp" and "buffers" not in changes:
        params["buffers"] = params["stages"]
    control = not bug
    return {"kernel": kernel, "params": params, "control": control, "bug": bug}


CASES: dict[str, dict[str, Any]] = {
    "ws_ok": _case("ws", ""),
    "ws_wrong_phase": _case(
        "ws",
        "consumers start waiting on the full barriers at phase 1: the first lap passes at once",
        consumer_start_phase=1,
    ),
    "ws_release_early": _case(
        "ws", "consumers release a stage before reading it: the producer refills it under them", release_early=1
    ),
    "ws_expect_tx_long": _case(
        "ws", "arrive_expect_tx announces 16 bytes more than the two TMA loads bring", expect_tx_delta=16
    ),
    "ws_arrive_count": _case(
        "ws", "the empty barriers expect one consumer arrival more than there are consumers", empty_count_delta=1
    ),
    "ws_off_align_relative": _case(
        "ws",
        "ring 512 bytes off the 1024-byte block, consumers un-swizzle tile-relative",
        smem_offset=512,
        consumer_relative=1,
    ),
    "ws_off_align_absolute": _case("ws", "", smem_offset=512),
    "ws_cluster_mc": _case("ws", "", cluster=2, mc_mask=0b11),
    "ws_cluster_mask_beyond": _case(
        "ws", "the B multicast mask 0b111 names CTA rank 2 of a 2-CTA cluster", cluster=2, mc_mask=0b111
    ),
    "store_fence": _case("store", ""),
    "store_nofence": _case("store", "no fence.proxy.async between the st.shared writes and the TMA store", fence=0),
    "cp_ok": _case("cp", ""),
    "cp_one_stage_too_few": _case(
        "cp", "a ring of S-1 stages with prefetch distance S-1: the refill targets the stage being read", buffers=2
    ),
    "cp_one_stage_too_few_delay": _case(
        "cp",
        "cp_one_stage_too_few with a 2 us sleep before the read: the refill lands first",
        buffers=2,
        read_delay_ns=2000,
    ),
    "cp_wait_too_few": _case("cp", "cp.async.wait_group S-1: the stage read may still be in flight", wait_n=2),
    "cp_zfill_ok": _case("cp", "", m=100),
    "cp_zfill_oob": _case("cp", "the row bound is left out of the predicate: rows 100..127 read past A", m=100, pred=1),
}


def write(out: Any = sys.stdout) -> None:
    for name, c in CASES.items():
        fields = " ".join(f"{k}={v}" for k, v in c["params"].items())
        out.write(f"{name} {c['kernel']} {fields}\n")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "names":
        for name, c in CASES.items():
            print(name, BINARY[c["kernel"]])
    else:
        write()
