#!/usr/bin/env bash
# On the H200: build tma_image, load every case of cases.py, compare with threadmap's model.
#   tools/gpu/tma/run.sh OUT_DIR        (from the repository root; wheels in .whl/ as for user_kernels.sh)
set -uo pipefail
OUT=${1:?OUT_DIR}
mkdir -p "$OUT"
. tools/gpu/site.sh
nvcc -O2 -std=c++17 -arch=sm_90a -I"$inc" tools/gpu/tma/tma_image.cu -lcuda -o "$OUT/tma_image" > "$OUT/build.txt" 2>&1 || exit 1
python3 tools/gpu/tma/cases.py > "$OUT/cases.txt" || exit 1
"$OUT/tma_image" "$OUT/cases.txt" "$OUT/dump.bin" "$OUT/stores.txt" > "$OUT/run.txt" 2>&1 \
  || { tail -5 "$OUT/run.txt"; exit 1; }
python3 tools/gpu/tma/check.py "$OUT/dump.bin" "$OUT/tma_h200.json" "$OUT/stores.txt" > "$OUT/check.txt"
rc=$?
# the loads whose box starts off 16 bytes: one process each (a trap ends the CUDA context)
python3 tools/gpu/tma/cases.py traps > "$OUT/traps.txt"
: > "$OUT/traps_result.txt"
while read -r head && read -r body; do
  printf '%s\n%s\n' "$head" "$body" > "$OUT/one.txt"
  "$OUT/tma_image" "$OUT/one.txt" "$OUT/one.bin" > "$OUT/one.log" 2>&1
  echo "${head%% *} exit $? $(tail -1 "$OUT/one.log")" >> "$OUT/traps_result.txt"
done < "$OUT/traps.txt"
python3 tools/gpu/tma/cases.py store_traps > "$OUT/store_traps.txt"
while read -r head && read -r body; do
  printf '%s\n%s\n' "$head" "$body" > "$OUT/one.txt"
  "$OUT/tma_image" "$OUT/one.txt" "$OUT/one.bin" "$OUT/one_store.txt" > "$OUT/one.log" 2>&1
  echo "${head%% *} exit $? $(tail -1 "$OUT/one.log")" >> "$OUT/traps_result.txt"
done < "$OUT/store_traps.txt"
cat "$OUT/traps_result.txt"
# CuTe's own copy of whole tiles (make_tma_copy + copy(tma.with(bar), ...))
nvcc -O2 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -I"$inc" tools/gpu/tma/tile_copy.cu -lcuda \
  -o "$OUT/tile_copy" >> "$OUT/build.txt" 2>&1 || exit 1
"$OUT/tile_copy" "$OUT/tiles.bin" > "$OUT/tiles_run.txt" 2>&1
python3 tools/gpu/tma/check_tiles.py "$OUT/tiles.bin" "$OUT/tiles_h200.json" > "$OUT/tiles_check.txt"
rc_tiles=$?
tail -1 "$OUT/tiles_check.txt"
[ $rc_tiles -eq 0 ] || rc=1
tail -1 "$OUT/check.txt"
exit $rc
