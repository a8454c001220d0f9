#!/usr/bin/env bash
# The nine CuTe transposes of examples/cute_transpose, compiled as a user builds them, measured
# on the GPU beside the prediction from their own SASS (threadmap gpu --exe), at M = N = 1024
# and 4096; and the library's cp.async stages under threadmap gpu --counters.
#   tools/gpu/user_kernels.sh OUT_DIR     (from the repository root, on the GPU machine)
# Wheels the machine lacks travel in .whl/ (installed into /tmp/site), as for device_suite.sh.
# Writes OUT_DIR/user_<name>_<size>.json (one per program and size), OUT_DIR/cp_async.json and
# the logs; tools/gpu/hardware_doc.py renders them.  Exit status: 0 when every kind of every
# run agrees, else 1.
set -uo pipefail
OUT=${1:?usage: user_kernels.sh OUT_DIR}
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD && export THREADMAP_CUTLASS_INCLUDE=/tmp/site/cutlass_library/source/include \
    && export PATH=$PATH:/tmp/site/nvidia/cu13/bin
fi
export THREADMAP_CACHE=${THREADMAP_CACHE:-$PWD/.tmcache} PYTHONUNBUFFERED=1 THREADMAP_PROFILE_LOG="$OUT"
BIN=/tmp/threadmap_user_bin
mkdir -p "$BIN"
inc=${THREADMAP_CUTLASS_INCLUDE:-$(python3 -c "import cutlass_library,os;print(os.path.join(os.path.dirname(cutlass_library.__file__),'source','include'))")}
# the nine compiles at once (each is one nvcc of the headers)
start=$(date +%s)
ls examples/cute_transpose/*.cu | xargs -P 9 -I{} sh -c \
  'nvcc -O3 -std=c++17 --expt-relaxed-constexpr -arch=sm_90 -I'"$inc"' {} -o '"$BIN"'/$(basename {} .cu)' \
  > "$OUT/build.txt" 2>&1
echo "built in $(( $(date +%s) - start )) s" >> "$OUT/build.txt"
kernel_of() {
  case $1 in
    row2col_reg|col2row_reg) echo mat_transpose_cute_reg_kernel ;;
    row_cvectorized|row_rvectorized) echo mat_transpose_cute_smem_vectorized_kernel ;;
    rvectorized_swizzled_optimized) echo mat_transpose_cute_smem_vectorized_optimized_kernel ;;
    *) echo mat_transpose_cute_smem_kernel ;;
  esac
}
bad=0
for cu in examples/cute_transpose/*.cu; do
  name=$(basename "$cu" .cu)
  for n in 1024 4096; do
    python3 -m threadmap.cli gpu "specs/cute_transpose/$name.yaml" --sizes "M=$n,N=$n" \
      --exe "$BIN/$name $n $n" --kernel-name "$(kernel_of "$name")" --format json -o "$OUT/user_${name}_$n.json" \
      > "$OUT/user_${name}_$n.txt" 2>&1
    rc=$?
    echo "$name $n exit $rc" | tee -a "$OUT/summary.txt"
    [ "$rc" -eq 0 ] || bad=1
  done
done
# the library's cp.async stages: the behaviour kernels issue LDGSTS; counters beside the prediction
# and the same tiles with the L1-allocating atom (CACHEALWAYS), whose shared side is predicted
ca=$(mktemp -d)
for t in a_128x32 b_64x64; do
  sed 's/SM80_CP_ASYNC_CACHEGLOBAL</SM80_CP_ASYNC_CACHEALWAYS</' "specs/cutlass/sm80_f16_gemm_${t}_warpraked.yaml" \
    > "$ca/sm80_f16_gemm_${t}_warpraked_cachealways.yaml"
done
python3 -m threadmap.cli gpu specs/cutlass/sm80_f16_gemm_a_128x32_warpraked.yaml \
  specs/cutlass/sm80_f16_gemm_b_64x64_warpraked.yaml "$ca"/*.yaml --counters --json "$OUT/cp_async.json" -o "$OUT/cp_async.txt" \
  > "$OUT/cp_async.log" 2>&1
rc=$?
echo "cp.async counters exit $rc" | tee -a "$OUT/summary.txt"
[ "$rc" -eq 0 ] || bad=1
exit $bad
