#!/usr/bin/env bash
# Builds the nine CuTe transposes of this folder into the folder given as $1, one executable
# per .cu (same name without .cu), and prints each compile's wall time.
#   THREADMAP_CUTLASS_INCLUDE  the CUTLASS include folder (with cute/ and cutlass/);
#                              default: that of the installed nvidia-cutlass wheel
#   ARCH                       nvcc's -arch (default sm_90)
#   NVCC                       the compiler (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc)
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
out=$1
arch=${ARCH:-sm_90}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
inc=${THREADMAP_CUTLASS_INCLUDE:-$(python3 -c "import cutlass_library,os;print(os.path.join(os.path.dirname(cutlass_library.__file__),'source','include'))")}
if [ ! -f "$inc/cute/tensor.hpp" ]; then
  echo "$0: no cute/tensor.hpp under '$inc' (set THREADMAP_CUTLASS_INCLUDE or pip install nvidia-cutlass)" >&2
  exit 2
fi

mkdir -p "$out"
for cu in "$here"/*.cu; do
  stem=$(basename "$cu" .cu)
  start=$(date +%s.%N)
  "$nvcc" -O3 -std=c++17 --expt-relaxed-constexpr -arch="$arch" -I"$inc" "$cu" -o "$out/$stem"
  end=$(date +%s.%N)
  awk -v s="$stem" -v a="$arch" -v t0="$start" -v t1="$end" 'BEGIN { printf "%-32s %s %6.1f s\n", s, a, t1 - t0 }'
done
