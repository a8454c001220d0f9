// One warp issues cp.async (LDGSTS) with per-lane global and shared byte offsets read from a
// case table, so that Nsight Compute can count what one instruction costs on each side.
// Build: nvcc -O3 -arch=sm_90 -o ldgsts_probe ldgsts_probe.cu ; run: ./ldgsts_probe cases.txt
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

template <int BYTES, bool CG, bool ZFILL>
__global__ void probe(const char* __restrict__ g, const int* __restrict__ tab, int iters, long long step) {
  extern __shared__ __align__(1024) char smem[];
  // each warp of each CTA: the case's pattern on its own shared 4 KiB (more warps: patterns within
  // 4 KiB only) and its own 128 KiB of global memory
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int go = tab[lane] + (blockIdx.x * (blockDim.x / 32) + warp) * (128 << 10), so = tab[32 + lane] + warp * 4096,
      p = tab[64 + lane];
  uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem + so));
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {
    const char* src = g + go + i * step;
    if (ZFILL) {
      int n = p ? BYTES : 0;
      if (CG) asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(n));
      else asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(src), "n"(BYTES), "r"(n));
    } else if (p) {
      if (CG) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
      else asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(src), "n"(BYTES));
    }
  }
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();
}

template <int BYTES, bool CG, bool ZFILL>
void launch(const char* g, const int* t, int iters, long long step, int warps, int grid) {
  probe<BYTES, CG, ZFILL><<<grid, 32 * warps, 48 * 1024>>>(g, t, iters, step);
}

int main(int argc, char** argv) {
  FILE* f = fopen(argc > 1 ? argv[1] : "cases.txt", "r");
  if (!f) { perror("cases"); return 2; }
  char* g;
  const size_t gbytes = size_t(4608) << 20;  // 16 iterations x 256 MiB + 264 x 4 warps x 128 KiB
  cudaMalloc(&g, gbytes);
  cudaMemset(g, 1, gbytes);
  int* dtab;
  cudaMalloc(&dtab, 96 * sizeof(int));
  char name[128];
  int bytes, cg, zfill, iters, warps, grid;
  long long step;
  int n = 0;
  while (fscanf(f, "%127s %d %d %d %d %lld %d %d", name, &bytes, &cg, &zfill, &iters, &step, &warps, &grid) == 8) {
    std::vector<int> tab(96);
    for (int i = 0; i < 96; ++i)
      if (fscanf(f, "%d", &tab[i]) != 1) return 2;
    cudaMemcpy(dtab, tab.data(), 96 * sizeof(int), cudaMemcpyHostToDevice);
    int key = bytes * 100 + cg * 10 + zfill;
    switch (key) {
      case 400: launch<4, false, false>(g, dtab, iters, step, warps, grid); break;
      case 401: launch<4, false, true>(g, dtab, iters, step, warps, grid); break;
      case 800: launch<8, false, false>(g, dtab, iters, step, warps, grid); break;
      case 801: launch<8, false, true>(g, dtab, iters, step, warps, grid); break;
      case 1600: launch<16, false, false>(g, dtab, iters, step, warps, grid); break;
      case 1601: launch<16, false, true>(g, dtab, iters, step, warps, grid); break;
      case 1610: launch<16, true, false>(g, dtab, iters, step, warps, grid); break;
      case 1611: launch<16, true, true>(g, dtab, iters, step, warps, grid); break;
      default: fprintf(stderr, "bad case %s\n", name); return 2;
    }
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", name, cudaGetErrorString(e)); return 1; }
    printf("case %d %s\n", n++, name);
  }
  return 0;
}
