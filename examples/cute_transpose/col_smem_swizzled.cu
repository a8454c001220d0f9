// col_smem_swizzled.cu: the study notes' CuTe transpose mat_transpose_cute_col_smem_swizzled
// (kernel mat_transpose_cute_smem_kernel) as a standalone program.
// Spec: specs/cute_transpose/col_smem_swizzled.yaml.
// The col_smem kernel with both shared views composed with Swizzle<4,0,4>.
// The kernel template and the wrapper's layouts, tiles and grid are the notes' text;
// only the torch wrapper became a plain launch function (raw pointers) and main().
// main() fills an M x N float input with distinct values, launches the kernel once,
// checks y (N x M) against the host transpose and prints one line, "OK <name> M N" or
// "FAIL <name> M N <first bad index of y>" (name: the file's stem): exit 0 / 1
// (2: bad arguments).
// Run: ./col_smem_swizzled [M N]   (defaults 1024 1024)
// Build (INC: the CUTLASS include folder, here that of the nvidia-cutlass wheel):
//   INC=$(python3 -c "import cutlass_library,os;print(os.path.join(os.path.dirname(cutlass_library.__file__),'source','include'))")
//   nvcc -O3 -std=c++17 --expt-relaxed-constexpr -arch=sm_90 -I$INC col_smem_swizzled.cu -o col_smem_swizzled
// (or examples/cute_transpose/build.sh OUTDIR for all nine)

#include <cuda_runtime.h>
#include <stdio.h>

#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <cute/layout.hpp>
#include <cute/tensor.hpp>
using namespace cute;

#define UNIT_BLK_SIZE 16

#define CUDA_CHECK(call)                                                       \
  do {                                                                         \
    cudaError_t err = call;                                                    \
    if (err != cudaSuccess) {                                                  \
      fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,         \
              cudaGetErrorString(err));                                         \
      exit(EXIT_FAILURE);                                                      \
    }                                                                          \
  } while (0)

template <typename T, int BLK_M, int BLK_N, typename ThreadLayoutA,
          typename ThreadLayoutB, typename SmemLayoutA, typename SmemLayoutB>
__global__ void
mat_transpose_cute_smem_kernel(const T *pA, T *pB, int M, int N,
                               ThreadLayoutA tA, ThreadLayoutB tB,
                               SmemLayoutA sA_layout, SmemLayoutB sB_layout) {
  int tx = threadIdx.x;
  int bx = blockIdx.x, by = blockIdx.y;

  auto mA = make_tensor(make_gmem_ptr(pA),
                        make_layout(make_shape(M, N), GenRowMajor{})); // (M, N)
  auto mB = make_tensor(make_gmem_ptr(pB),
                        make_layout(make_shape(N, M), GenRowMajor{})); // (N, M)

  auto gA = local_tile(mA, make_shape(Int<BLK_M>{}, Int<BLK_N>{}),
                       make_coord(bx, by)); // (BM, BN)
  auto gB = local_tile(mB, make_shape(Int<BLK_N>{}, Int<BLK_M>{}),
                       make_coord(by, bx)); // (BN, BM)
  auto cA = local_tile(make_identity_tensor(mA.shape()),
                       make_shape(Int<BLK_M>{}, Int<BLK_N>{}),
                       make_coord(bx, by)); // (BM, BN)
  auto cB = local_tile(make_identity_tensor(mB.shape()),
                       make_shape(Int<BLK_N>{}, Int<BLK_M>{}),
                       make_coord(by, bx)); // (BN, BM)

  __shared__ T smem[BLK_M * BLK_N];
  auto sA = make_tensor(make_smem_ptr(smem), sA_layout); // (BM, BN)
  auto sB = make_tensor(make_smem_ptr(smem), sB_layout); // (BN, BM)

  Tensor tAgA = local_partition(gA, tA, tx);
  Tensor tBgB = local_partition(gB, tB, tx);
  Tensor tAsA = local_partition(sA, tA, tx);
  Tensor tBsB = local_partition(sB, tB, tx);
  Tensor tAcA = local_partition(cA, tA, tx);
  Tensor tBcB = local_partition(cB, tB, tx);

  // bounds mask: the identity tensor gives each element's global coordinate
  Tensor tApA = make_tensor<bool>(tAcA.shape(), tAcA.stride());
  Tensor tBpB = make_tensor<bool>(tBcB.shape(), tBcB.stride());
  CUTE_UNROLL
  for (int i = 0; i < size<0>(tApA); i++) {
    CUTE_UNROLL
    for (int j = 0; j < size<1>(tApA); j++) {
      tApA(i, j) = get<0>(tAcA(i, j)) < M && get<1>(tAcA(i, j)) < N;
    }
  }
  CUTE_UNROLL
  for (int i = 0; i < size<0>(tBpB); i++) {
    CUTE_UNROLL
    for (int j = 0; j < size<1>(tBpB); j++) {
      tBpB(i, j) = get<0>(tBcB(i, j)) < N && get<1>(tBcB(i, j)) < M;
    }
  }
  copy_if(tApA, tAgA, tAsA);      // gmem -> smem (A's layout)
  __syncthreads();
  copy_if(tBpB, tBsB, tBgB);      // smem (B's layout) -> gmem
}

constexpr int log2(int x) {
  assert(x > 0);
  return (x & (x - 1)) == 0 ? __builtin_ctz(x)
                            : (throw "x is not a power of 2", 0);
}

void mat_transpose_cute_col_smem_swizzled(const float *x, float *y, int M, int N) {
  const int BM = UNIT_BLK_SIZE;
  const int BN = UNIT_BLK_SIZE;
  auto tA = make_layout(make_shape(Int<BM>{}, Int<BN>{}), GenColMajor{});
  auto tB = make_layout(make_shape(Int<BN>{}, Int<BM>{}), GenColMajor{});
  const int S = log2(BM);
  auto swizzle_func = Swizzle<S, 0, S>{};
  auto sA_layout =
      composition(swizzle_func,
                  make_layout(make_shape(Int<BM>{}, Int<BN>{}), GenRowMajor{}));
  auto sB_layout =
      composition(swizzle_func,
                  make_layout(make_shape(Int<BN>{}, Int<BM>{}), GenColMajor{}));
  static_assert(size(tA) == size(tB));
  dim3 block(size(tA));
  dim3 grid((M + BM - 1) / BM, (N + BN - 1) / BN);
  mat_transpose_cute_smem_kernel<float, BM, BN, decltype(tA), decltype(tB),
                                 decltype(sA_layout), decltype(sB_layout)>
      <<<grid, block>>>(x, y, M, N, tA, tB, sA_layout, sB_layout);
  CUDA_CHECK(cudaGetLastError());
}

// ---- The harness: replaces the study notes' torch binding. ----------------------------------

// Parses a positive extent; 0 on anything else.
static int parse_extent(const char *s) {
  char *end = nullptr;
  long v = strtol(s, &end, 10);
  return (end != s && *end == '\0' && v > 0 && v <= (1L << 20)) ? (int)v : 0;
}

int main(int argc, char **argv) {
  const char *name = "col_smem_swizzled";
  int M = 1024, N = 1024;
  if (argc > 1) M = parse_extent(argv[1]);
  if (argc > 2) N = parse_extent(argv[2]);
  if (argc > 3 || M == 0 || N == 0) {
    fprintf(stderr, "usage: %s [M N]   (positive extents, defaults 1024 1024)\n", argv[0]);
    return 2;
  }
  const size_t count = (size_t)M * (size_t)N;
  // Distinct finite floats: bit patterns 0x40000000 + i (2.0 and up), compared bit for bit.
  if (count >= 0x3F800000u) {
    fprintf(stderr, "%s: M * N must be below %u\n", name, 0x3F800000u);
    return 2;
  }
  std::vector<uint32_t> hx(count), hy(count);
  for (size_t i = 0; i < count; ++i) hx[i] = 0x40000000u + (uint32_t)i;

  float *dx = nullptr, *dy = nullptr;
  CUDA_CHECK(cudaMalloc(&dx, count * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dy, count * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(dx, hx.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  // All-ones bits (a NaN) in y, so that an element no thread writes is caught too.
  CUDA_CHECK(cudaMemset(dy, 0xFF, count * sizeof(float)));

  mat_transpose_cute_col_smem_swizzled(dx, dy, M, N);  // one launch
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(hy.data(), dy, count * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dy));

  // x is (M, N) row-major, y is (N, M) row-major: y[j][i] = x[i][j].
  for (size_t k = 0; k < count; ++k) {
    const size_t j = k / (size_t)M, i = k % (size_t)M;
    if (hy[k] != hx[i * (size_t)N + j]) {
      printf("FAIL %s %d %d %zu\n", name, M, N, k);
      return 1;
    }
  }
  printf("OK %s %d %d\n", name, M, N);
  return 0;
}
