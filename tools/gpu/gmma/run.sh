#!/usr/bin/env bash
# On the H200: build the wgmma probe, run every case of CASES_FILE (written by probe_io.write_cases),
# then the first 3 cases again under compute-sanitizer memcheck.
#   tools/gpu/gmma/run.sh OUT_DIR CASES_FILE      (from the repository root; wheels in .whl/ as for tma/run.sh)
# Writes OUT_DIR/wgmma_out.bin (read it with probe_io.read_results), OUT_DIR/wgmma_h200.jsonl (one line
# per case), OUT_DIR/memcheck.txt (the sanitizer's log) and OUT_DIR/memcheck_summary.json.
# WGMMA_ALL_N=1 builds every N that is a multiple of 8, not only 8..256's powers of two (4x the build).
set -uo pipefail
OUT=${1:?OUT_DIR}
CASES=${2:?CASES_FILE}
mkdir -p "$OUT"
. tools/gpu/site.sh
extra=()
[ "${WGMMA_ALL_N:-0}" = 1 ] && extra=(-DWGMMA_PROBE_ALL_N)
t0=$(date +%s)
nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a "${extra[@]}" -I"$inc" tools/gpu/gmma/wgmma_probe.cu \
  -o "$OUT/wgmma_probe" > "$OUT/build.txt" 2>&1 || { tail -20 "$OUT/build.txt"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
# the probe has its own per-case watchdog (WGMMA_PROBE_TIMEOUT_S, 30 s); timeout guards the whole run
timeout 540 "$OUT/wgmma_probe" "$CASES" "$OUT/wgmma_out.bin" > "$OUT/wgmma_h200.jsonl" 2> "$OUT/probe_stderr.txt"
echo "probe rc=$?"
tail -5 "$OUT/probe_stderr.txt"
# memcheck: the probe forks its cases into a child, so the sanitizer must follow children
WGMMA_PROBE_TIMEOUT_S=120 timeout 300 compute-sanitizer --tool memcheck --target-processes all \
  "$OUT/wgmma_probe" "$CASES" "$OUT/memcheck_out.bin" 3 > "$OUT/memcheck.txt" 2>&1
rc=$?
summary=$(grep -h "ERROR SUMMARY" "$OUT/memcheck.txt" | sort | uniq -c | tr '\n' ';')
# the sanitized run's results must be the plain run's first 3 cases, byte for byte
same=false
[ -s "$OUT/memcheck_out.bin" ] && cmp -s -n "$(stat -c %s "$OUT/memcheck_out.bin")" "$OUT/memcheck_out.bin" "$OUT/wgmma_out.bin" && same=true
python3 -c 'import json,sys; print(json.dumps({"memcheck_rc": int(sys.argv[1]), "error_summary": sys.argv[2], "same_as_plain": sys.argv[3] == "true"}))' \
  "$rc" "$summary" "$same" | tee "$OUT/memcheck_summary.json"
# the tensor core's shared-memory reads: wavefronts and bank conflicts per case (one launch each)
ncu --clock-control none --target-processes all --csv --metrics \
  l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_gmma.sum \
  "$OUT/wgmma_probe" "$CASES" "$OUT/ncu_out.bin" > "$OUT/gmma_ncu.csv" 2> "$OUT/ncu_stderr.txt"
echo "ncu rc=$?"
cat "$OUT/wgmma_h200.jsonl"
