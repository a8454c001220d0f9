// One warp issues cp.async (LDGSTS) with per-lane global and shared byte offsets read from a
// case table, so that Nsight Compute can count what one instruction costs on each side.
// Build: nvcc -O3 -arch=sm_90 -o ldgsts_probe ldgsts_probe.cu ; run: ./ldgsts_probe cases.txt
// A case's header: name bytes cg zfill iters step warps grid ninstr wait, then ninstr tables of
// 96 ints. ninstr 1 without wait is the one-instruction probe; otherwise probe_seq issues the
// ninstr instructions back to back (a wait_all after each with wait 1) before each advance.
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

// Several .ca instructions per iteration (the pieces of a vector copied by narrower cp.async, or
// a warp's whole stage), each with its own lane table; addresses held in registers (fully
// unrolled) so the loop issues nothing but the LDGSTS. Each warp: its own 8 KiB of shared.
template <int BYTES, int N, bool WAIT>
__global__ void probe_seq(const char* __restrict__ g, const int* __restrict__ tab, int iters, long long step) {
  extern __shared__ __align__(1024) char smem[];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const char* base = g + static_cast<long long>(blockIdx.x * (blockDim.x / 32) + warp) * (128 << 10);
  int go[N];  // every lane on (cases.py checks): the predicate row is not read
  uint32_t s[N];
#pragma unroll
  for (int k = 0; k < N; ++k) {
    go[k] = tab[96 * k + lane];
    s[k] = static_cast<uint32_t>(__cvta_generic_to_shared(smem + tab[96 * k + 32 + lane] + warp * 8192));
  }
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {
    const char* src = base + i * step;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s[k]), "l"(src + go[k]), "n"(BYTES));
      if (WAIT) asm volatile("cp.async.wait_all;\n" ::: "memory");
    }
  }
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();
}

template <int BYTES, int N, bool WAIT>
void launch_seq(const char* g, const int* t, int iters, long long step, int warps, int grid) {
  probe_seq<BYTES, N, WAIT><<<grid, 32 * warps, 48 * 1024>>>(g, t, iters, step);
}

template <int BYTES, int N>
bool seq(const char* g, const int* t, int iters, long long step, int warps, int grid, int wait) {
  if (wait) launch_seq<BYTES, N, true>(g, t, iters, step, warps, grid);
  else launch_seq<BYTES, N, false>(g, t, iters, step, warps, grid);
  return true;
}

bool launch_seq_any(int bytes, int n, const char* g, const int* t, int iters, long long step, int warps, int grid,
                    int wait) {
  switch (bytes * 100 + n) {
    case 401: return seq<4, 1>(g, t, iters, step, warps, grid, wait);
    case 402: return seq<4, 2>(g, t, iters, step, warps, grid, wait);
    case 403: return seq<4, 3>(g, t, iters, step, warps, grid, wait);
    case 404: return seq<4, 4>(g, t, iters, step, warps, grid, wait);
    case 408: return seq<4, 8>(g, t, iters, step, warps, grid, wait);
    case 416: return seq<4, 16>(g, t, iters, step, warps, grid, wait);
    case 802: return seq<8, 2>(g, t, iters, step, warps, grid, wait);
    case 1601: return seq<16, 1>(g, t, iters, step, warps, grid, wait);
    case 1604: return seq<16, 4>(g, t, iters, step, warps, grid, wait);
    default: return false;
  }
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
  const int max_instr = 16;
  int* dtab;
  cudaMalloc(&dtab, max_instr * 96 * sizeof(int));
  char name[128];
  int bytes, cg, zfill, iters, warps, grid, ninstr, wait;
  long long step;
  int n = 0;
  while (fscanf(f, "%127s %d %d %d %d %lld %d %d %d %d", name, &bytes, &cg, &zfill, &iters, &step, &warps, &grid,
                &ninstr, &wait) == 10) {
    if (ninstr < 1 || ninstr > max_instr) { fprintf(stderr, "bad case %s\n", name); return 2; }
    std::vector<int> tab(96 * ninstr);
    for (int i = 0; i < 96 * ninstr; ++i)
      if (fscanf(f, "%d", &tab[i]) != 1) return 2;
    cudaMemcpy(dtab, tab.data(), 96 * ninstr * sizeof(int), cudaMemcpyHostToDevice);
    int key = bytes * 100 + cg * 10 + zfill;
    if (ninstr > 1 || wait) key = (cg || zfill) ? -1 : -2;
    switch (key) {
      case -2:
        if (!launch_seq_any(bytes, ninstr, g, dtab, iters, step, warps, grid, wait)) {
          fprintf(stderr, "bad case %s\n", name);
          return 2;
        }
        break;
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
