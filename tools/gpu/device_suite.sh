#!/usr/bin/env bash
# The whole spec library on a GPU: the numbers in docs/hardware.md come from this.
#   tools/gpu/device_suite.sh OUT_DIR        (from the repository root, on the GPU machine)
# Wheels the machine lacks travel in .whl/ (installed into /tmp/site); cubins compiled
# beforehand by tools/gpu/precompile.py travel in .tmcache/.
# Exit status: 0 when the device tests pass and `threadmap gpu` finds every run as the verifier
# predicts; else the first failing step's status.  `tail -n N FILE`, one file at a time: GNU
# tail refuses the obsolete `tail -5 A B`.
set -uo pipefail
OUT=${1:?usage: device_suite.sh OUT_DIR}
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD && export THREADMAP_CUTLASS_INCLUDE=/tmp/site/cutlass_library/source/include
fi
export THREADMAP_CACHE=${THREADMAP_CACHE:-$PWD/.tmcache} PYTHONUNBUFFERED=1 THREADMAP_PROFILE_LOG="$OUT"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -n 2
  ncu --version | tail -n 1; compute-sanitizer --version | tail -n 1
  ncu --query-metrics | grep -E "sass_inst_executed_op_(shared|global)"
  python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"; } > "$OUT/versions.txt" 2>&1
python3 -m pytest -q -p no:cacheprovider -rs tests/gpu/test_gpu_device.py 2>&1 | tee "$OUT/pytest_device.txt"
tests=${PIPESTATUS[0]}
TIMEFORMAT="wall %R s"
# counters at every size environment of every spec; racecheck at each spec's first
{ time python3 -m threadmap.cli gpu specs/ --counters --racecheck --json "$OUT/gpu.json" -o "$OUT/gpu.txt"; } \
  > "$OUT/log.txt" 2>&1
gpu=$?
echo "threadmap gpu exit $gpu" >> "$OUT/log.txt"
# a warm round trip of one spec (compile cached): the time a user waits
{ time python3 -m threadmap.cli gpu specs/cute_transpose/row_smem_swizzled.yaml; } > "$OUT/warm.txt" 2>&1
warm=$?
for f in "$OUT/log.txt" "$OUT/warm.txt"; do
  echo "==> $f <=="
  tail -n 5 "$f"
done
echo "device tests exit $tests, threadmap gpu exit $gpu, warm run exit $warm"
for rc in "$tests" "$gpu" "$warm"; do
  [ "$rc" -eq 0 ] || exit "$rc"
done
exit 0
