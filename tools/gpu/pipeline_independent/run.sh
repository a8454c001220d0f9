#!/usr/bin/env bash
# On the H200: build the two pipeline kernels, run every case of cases.py in a process of its own
# (a trap ends a CUDA context, a hang is cut by `timeout`), a few under compute-sanitizer, and
# gather the records into OUT_DIR/pipeline_h200.json.
#   tools/gpu/pipeline_independent/run.sh OUT_DIR        (from the repository root)
# Exit status: 1 when a build fails or a control case (all parameters correct) is not ok.
set -uo pipefail
OUT=${1:?OUT_DIR}
here=tools/gpu/pipeline_independent
mkdir -p "$OUT/runs" "$OUT/san"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -n 1
  compute-sanitizer --version | tail -n 1; } > "$OUT/versions.txt" 2>&1
nvcc -O2 -std=c++17 -arch=sm_90a "$here/ws_pipeline.cu" -lcuda -o "$OUT/ws_pipeline" > "$OUT/build.txt" 2>&1 \
  || { tail -n 20 "$OUT/build.txt"; exit 1; }
nvcc -O2 -std=c++17 -arch=sm_90a "$here/cpasync_pipeline.cu" -o "$OUT/cpasync_pipeline" >> "$OUT/build.txt" 2>&1 \
  || { tail -n 20 "$OUT/build.txt"; exit 1; }
python3 "$here/cases.py" > "$OUT/cases.txt" || exit 1

# every case, one process each; the watchdog inside ends a stuck pipeline within ~0.2 s, the
# timeout is for whatever it cannot catch
while read -r name bin; do
  timeout -k 5 60 "$OUT/$bin" "$OUT/cases.txt" "$name" < /dev/null \
    > "$OUT/runs/$name.json" 2> "$OUT/runs/$name.err"
  echo $? > "$OUT/runs/$name.rc"
done < <(python3 "$here/cases.py" names)

# sanitizers: the ws cases with fewer k-tiles (two laps of the 4-stage ring) and a watchdog that
# tolerates the tools' slowdown; the cp cases on one CTA (one CTA's out-of-bounds reads suffice)
san() {  # san TOOL CASE BINARY OVERRIDES...
  local tool=$1 name=$2 bin=$3
  shift 3
  echo "$*" > "$OUT/san/$name.$tool.args"
  timeout -k 5 30 compute-sanitizer --tool "$tool" --print-limit 20 --log-file "$OUT/san/$name.$tool.log" \
    "$OUT/$bin" "$OUT/cases.txt" "$name" "$@" < /dev/null > "$OUT/san/$name.$tool.json" 2> "$OUT/san/$name.$tool.err"
  echo $? > "$OUT/san/$name.$tool.rc"
}
san memcheck cp_zfill_oob cpasync_pipeline ctas=1
san memcheck cp_zfill_ok cpasync_pipeline ctas=1
for c in ws_ok ws_release_early; do
  san racecheck "$c" ws_pipeline k_tiles=8 watchdog_ms=20000
  san synccheck "$c" ws_pipeline k_tiles=8 watchdog_ms=20000
done

python3 "$here/collect.py" "$OUT" | tee "$OUT/summary.txt"
exit "${PIPESTATUS[0]}"
