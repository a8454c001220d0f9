#!/usr/bin/env bash
# On the H200: build the two pipeline kernels, run every case of cases.py in its own process (a hang
# is caught by the kernels' watchdog, a trap ends only its process), the zero-fill cases under
# compute-sanitizer memcheck, and collect one JSON line per case into OUT_DIR/pipeline_h200.jsonl.
#   tools/gpu/pipeline/run.sh OUT_DIR      (from the repository root; wheels in .whl/ as for tma/run.sh)
set -uo pipefail
OUT=${1:?OUT_DIR}
mkdir -p "$OUT"
. tools/gpu/site.sh
nvcc -O2 -std=c++17 -arch=sm_90a -I"$inc" tools/gpu/pipeline/ws_pipeline.cu -lcuda -o "$OUT/ws_pipeline" > "$OUT/build.txt" 2>&1 || { tail -20 "$OUT/build.txt"; exit 1; }
nvcc -O2 -std=c++17 -arch=sm_90a tools/gpu/pipeline/cpasync_pipeline.cu -o "$OUT/cpasync_pipeline" >> "$OUT/build.txt" 2>&1 || { tail -20 "$OUT/build.txt"; exit 1; }
: > "$OUT/pipeline_h200.jsonl"
python3 tools/gpu/pipeline/cases.py | while read -r name binary args; do
  line=$(timeout 60 "$OUT/$binary" $args 2>&1 | tail -1)
  rc=$?
  python3 -c 'import json,sys
try: r = json.loads(sys.argv[3])
except ValueError: r = sys.argv[3]
print(json.dumps({"case": sys.argv[1], "rc": int(sys.argv[2]), "result": r}))' "$name" "$rc" "$line" >> "$OUT/pipeline_h200.jsonl"
  case "$name" in
    cp_zfill_*)
      san=$(timeout 120 compute-sanitizer --tool memcheck "$OUT/$binary" $args 2>&1 | grep -E "ERROR SUMMARY|Invalid __global__ read" | sort | uniq -c | tr '\n' ';')
      python3 -c 'import json,sys; print(json.dumps({"case": sys.argv[1], "memcheck": sys.argv[2]}))' "$name" "$san" >> "$OUT/pipeline_h200.jsonl";;
  esac
done
cat "$OUT/pipeline_h200.jsonl"
