"""The device cases of the pipeline confirmation: each library pipeline and planted bug of
``specs/pipeline`` and ``specs/planted`` as parameters of ``ws_pipeline.cu`` /
``cpasync_pipeline.cu``, with the spec it stands for.  ``python3 cases.py`` prints
``name binary args...`` lines for ``run.sh``."""

from __future__ import annotations

#: name -> (binary, arguments, the spec whose verdict it confirms)
CASES: dict[str, tuple[str, str, str]] = {
    # ws: S k_tiles cons_phase prod_phase tx_delta empty_delta release_early smem_offset relative
    "ws_ok": ("ws_pipeline", "ws 4 64 0 1 0 0 0 0 0", "pipeline/sm90_tma_ws_mainloop.yaml"),
    "ws_wrong_phase": ("ws_pipeline", "ws 4 64 1 1 0 0 0 0 0", "planted/sm90_wait_on_wrong_phase.yaml"),
    "ws_expect_tx_long": ("ws_pipeline", "ws 4 64 0 1 16 0 0 0 0", "planted/sm90_expect_tx_too_large.yaml"),
    "ws_arrive_count": ("ws_pipeline", "ws 4 64 0 1 0 1 0 0 0", "planted/sm90_empty_arrival_count.yaml"),
    "ws_release_early": ("ws_pipeline", "ws 4 64 0 1 0 0 1 0 0", "planted/sm90_release_before_mma_done.yaml"),
    "ws_off_align_relative": ("ws_pipeline", "ws 4 64 0 1 0 0 0 512 1",
                              "planted/sm90_tma_smem_off_swizzle_alignment.yaml"),
    "ws_off_align_absolute": ("ws_pipeline", "ws 4 64 0 1 0 0 0 512 0", "pipeline/sm90_tma_ws_mainloop.yaml"),
    "store_fence": ("ws_pipeline", "store 1 4096", "pipeline/sm90_tma_store_epilogue.yaml"),
    "store_nofence": ("ws_pipeline", "store 0 4096", "planted/sm90_tma_store_missing_fence.yaml"),
    # cp: buffers ahead wait_n k_tiles M row_predicate delay_ns
    "cp_ok": ("cpasync_pipeline", "3 2 1 64 128 1 2000", "pipeline/sm80_cp_async_multistage.yaml"),
    "cp_one_stage_too_few": ("cpasync_pipeline", "2 2 1 64 128 1 2000", "planted/sm80_one_stage_too_few.yaml"),
    "cp_zfill_ok": ("cpasync_pipeline", "3 2 1 64 100 1 0", "pipeline/sm80_cp_async_multistage.yaml"),
    "cp_zfill_oob": ("cpasync_pipeline", "3 2 1 64 100 0 0", "planted/sm80_zfill_predicate_out_of_bounds.yaml"),
}

if __name__ == "__main__":
    for name, (binary, args, _) in CASES.items():
        print(name, binary, args)
