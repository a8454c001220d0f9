// The SM90 TMA warp-specialised mainloop protocol of specs/pipeline/sm90_tma_ws_mainloop.yaml, run for
// real, with the planted bugs of specs/planted/ switched on by the case's parameters; and the TMA store
// epilogue with and without fence.proxy.async.
//
// ws: 384 threads; warp 0's first thread is the producer (PipelineTmaAsync's leader), warpgroups 1 and 2
// the consumers. A ring of S stages of a 128x64 f16 A tile and a 128x64 f16 B tile (TMA, 128-byte
// swizzle), full barriers (1 arrival + 32768 transaction bytes) and empty barriers (256 arrivals). Each
// consumer thread checks 64 elements of each stage against the global values (read at the swizzled
// ABSOLUTE shared address, or with `relative` at the tile-relative one) and every wait has a watchdog
// (about 1 s of clock64) that records a hang instead of hanging.
// Build: nvcc -O2 -std=c++17 -arch=sm_90a -I<cutlass include> ws_pipeline.cu -lcuda -o ws_pipeline
// Run:   ./ws_pipeline ws S k_tiles cons_phase prod_phase tx_delta empty_delta release_early smem_offset relative
//        ./ws_pipeline store fence(0|1) tiles
// Prints one JSON object.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>
#include <cuda.h>
#include <cuda_fp16.h>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>

using Bar = cutlass::arch::ClusterTransactionBarrier;

struct Report {
  unsigned long long mismatches;
  int first_set, round, stage, warp, thread, smem_byte, expected, found;
  int hang, hang_role, hang_round, hang_stage, hang_barrier;  // role 0 producer, 1 consumer; barrier 0 full, 1 empty
  int rounds_done;
};

__device__ __forceinline__ int value_a(int m, int k) { return (m * 131 + k * 7) % 2039; }
__device__ __forceinline__ int value_b(int n, int k) { return (n * 29 + k * 61 + 5) % 2039; }

__device__ bool wait_watchdog(uint64_t* bar, int parity, Report* rep, int role, int round, int stage, int which) {
  long long start = clock64();
  while (!Bar::try_wait(bar, parity)) {
    if (rep->hang || clock64() - start > 2000000000LL) {
      if (atomicExch(&rep->hang, 1) == 0) {
        rep->hang_role = role; rep->hang_round = round; rep->hang_stage = stage; rep->hang_barrier = which;
      }
      return false;
    }
  }
  return true;
}

__global__ void __launch_bounds__(384) ws(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb,
                                          int S, int k_tiles, int cons_phase, int prod_phase, int tx_delta, int empty_delta,
                                          int release_early, int smem_offset, int relative, Report* rep) {
  extern __shared__ uint8_t raw[];
  __shared__ alignas(8) uint64_t full[8];
  __shared__ alignas(8) uint64_t empty[8];
  uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023)) + smem_offset;
  const int stage_bytes = 32768;
  int m0 = blockIdx.x * 128, n0 = blockIdx.y * 128;
  for (int i = threadIdx.x; i < S * stage_bytes / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(base)[i] = 0xFFFFFFFFu;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      Bar::init(&full[s], 1);
      Bar::init(&empty[s], 256 + empty_delta);
    }
    asm volatile("fence.proxy.async.shared::cta;\n\tfence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  int warp = threadIdx.x / 32;
  if (warp == 0) {
    if (threadIdx.x == 0) {
      for (int k = 0; k < k_tiles; ++k) {
        int s = k % S, phase = prod_phase ^ ((k / S) & 1);
        if (!wait_watchdog(&empty[s], phase, rep, 0, k, s, 1)) return;
        Bar::arrive_and_expect_tx(&full[s], 32768 + tx_delta);
        uint8_t* st = base + s * stage_bytes;
        cute::SM90_TMA_LOAD_2D::copy(&ta, &full[s], 0, st, k * 64, m0);
        cute::SM90_TMA_LOAD_2D::copy(&tb, &full[s], 0, st + 16384, k * 64, n0);
      }
    }
    return;
  }
  if (warp < 4) return;  // warps 1..3 of the producer warpgroup idle (CUTLASS: setmaxnreg and exit)
  int t = threadIdx.x - 128;  // 0..255
  for (int k = 0; k < k_tiles; ++k) {
    int s = k % S, phase = cons_phase ^ ((k / S) & 1);
    if (!wait_watchdog(&full[s], phase, rep, 1, k, s, 0)) return;
    if (release_early) {
      Bar::arrive(&empty[s]);
      __nanosleep(20000);
    }
    uint8_t* st = base + s * stage_bytes;
    for (int i = 0; i < 64; ++i) {
      int e = t + 256 * i;  // element of the stage: A's 8192 then B's 8192
      int op = e / 8192, le = e % 8192, r = le / 64, c = le % 64;
      uint32_t off = op * 16384 + (r * 64 + c) * 2;
      uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(st)) + off;
      uint32_t sw;
      if (relative) {
        uint32_t o = (r * 64 + c) * 2;  // the swizzle counted from the tile's own start
        sw = static_cast<uint32_t>(__cvta_generic_to_shared(st)) + op * 16384 + (o ^ (((o >> 7) & 7) << 4));
      } else {
        sw = a ^ (((a >> 7) & 7) << 4);
      }
      uint16_t bits;
      asm volatile("ld.shared.u16 %0, [%1];" : "=h"(bits) : "r"(sw));
      int got = (bits == 0xFFFF) ? -1 : int(__half2float(__ushort_as_half(bits)));
      int want = op == 0 ? value_a(m0 + r, k * 64 + c) : value_b(n0 + r, k * 64 + c);
      if (got != want) {
        atomicAdd(&rep->mismatches, 1ULL);
        if (atomicCAS(&rep->first_set, 0, 1) == 0) {
          rep->round = k; rep->stage = s; rep->warp = warp; rep->thread = threadIdx.x;
          rep->smem_byte = int(s * stage_bytes + off); rep->expected = want; rep->found = got;
        }
      }
    }
    if (!release_early) Bar::arrive(&empty[s]);
  }
  if (t == 0) atomicMax(&rep->rounds_done, k_tiles);
}

// The TMA store epilogue: 128 threads write a 64x32 f16 tile (64-byte swizzle by absolute address),
// optionally fence.proxy.async, a barrier, one thread stores it with TMA and waits for the reads.
__global__ void store_epi(const __grid_constant__ CUtensorMap td, int fence, int n_tiles_x) {
  extern __shared__ uint8_t raw[];
  uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  int tx = blockIdx.x % n_tiles_x, ty = blockIdx.x / n_tiles_x;
  uint32_t sbase = static_cast<uint32_t>(__cvta_generic_to_shared(base));
  for (int e = threadIdx.x; e < 64 * 32; e += blockDim.x) {
    int r = e / 32, c = e % 32;
    uint32_t a = sbase + (r * 32 + c) * 2;
    uint32_t sw = a ^ (((a >> 7) & 3) << 4);
    __half v = __float2half(float(((ty * 64 + r) * 3 + (tx * 32 + c) * 17) % 2039));
    asm volatile("st.shared.u16 [%0], %1;" :: "r"(sw), "h"(__half_as_ushort(v)) : "memory");
  }
  if (fence) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    cute::SM90_TMA_STORE_2D::copy(&td, base, tx * 32, ty * 64);
    asm volatile("cp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group.read 0;" ::: "memory");
  }
  __syncthreads();
}

static CUtensorMap make_map(void* g, uint64_t inner, uint64_t outer, uint32_t box0, uint32_t box1,
                            CUtensorMapSwizzle swz) {
  CUtensorMap m;
  uint64_t dims[2] = {inner, outer};
  uint64_t strides[1] = {inner * 2};
  uint32_t box[2] = {box0, box1};
  uint32_t estr[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, g, dims, strides, box, estr,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, swz, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) { printf("{\"status\": \"error\", \"why\": \"cuTensorMapEncodeTiled %d\"}\n", int(r)); exit(1); }
  return m;
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "store") {
    int fence = atoi(argv[2]), tiles = atoi(argv[3]);
    int nx = 64, ny = tiles / nx;
    int N = nx * 32, M = ny * 64;
    __half* d; cudaMalloc(&d, size_t(M) * N * 2);
    CUtensorMap td = make_map(d, N, M, 32, 64, CU_TENSOR_MAP_SWIZZLE_64B);
    cudaFuncSetAttribute(store_epi, cudaFuncAttributeMaxDynamicSharedMemorySize, 8192);
    int wrong_tiles = 0, wrong = 0, launches = 20;
    std::vector<__half> h(size_t(M) * N);
    for (int rep = 0; rep < launches; ++rep) {
      cudaMemset(d, 0xFF, size_t(M) * N * 2);
      store_epi<<<nx * ny, 128, 8192>>>(td, fence, nx);
      if (cudaDeviceSynchronize() != cudaSuccess) { printf("{\"status\": \"error\"}\n"); return 1; }
      cudaMemcpy(h.data(), d, h.size() * 2, cudaMemcpyDeviceToHost);
      for (int ty = 0; ty < ny; ++ty)
        for (int tx = 0; tx < nx; ++tx) {
          bool bad = false;
          for (int r = 0; r < 64; ++r)
            for (int c = 0; c < 32; ++c) {
              int m = ty * 64 + r, n = tx * 32 + c;
              if (int(__half2float(h[size_t(m) * N + n])) != (m * 3 + n * 17) % 2039) { bad = true; ++wrong; }
            }
          wrong_tiles += bad;
        }
    }
    printf("{\"status\": \"%s\", \"fence\": %d, \"tiles\": %d, \"launches\": %d, \"wrong_tiles\": %d, \"wrong\": %d}\n",
           wrong_tiles ? "wrong" : "ok", fence, nx * ny, launches, wrong_tiles, wrong);
    return 0;
  }
  int S = atoi(argv[2]), k_tiles = atoi(argv[3]), cons_phase = atoi(argv[4]), prod_phase = atoi(argv[5]);
  int tx_delta = atoi(argv[6]), empty_delta = atoi(argv[7]), release_early = atoi(argv[8]);
  int smem_offset = atoi(argv[9]), relative = atoi(argv[10]);
  int M = 256, N = 128, K = 64 * k_tiles;
  std::vector<__half> ha(size_t(M) * K), hb(size_t(N) * K);
  for (int m = 0; m < M; ++m) for (int k = 0; k < K; ++k) ha[size_t(m) * K + k] = __float2half(float((m * 131 + k * 7) % 2039));
  for (int n = 0; n < N; ++n) for (int k = 0; k < K; ++k) hb[size_t(n) * K + k] = __float2half(float((n * 29 + k * 61 + 5) % 2039));
  __half *a, *b; cudaMalloc(&a, ha.size() * 2); cudaMalloc(&b, hb.size() * 2);
  cudaMemcpy(a, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(b, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice);
  CUtensorMap ta = make_map(a, K, M, 64, 128, CU_TENSOR_MAP_SWIZZLE_128B);
  CUtensorMap tb = make_map(b, K, N, 64, 128, CU_TENSOR_MAP_SWIZZLE_128B);
  Report* rep; cudaMallocManaged(&rep, sizeof(Report)); memset(rep, 0, sizeof(Report));
  int smem = S * 32768 + 1024 + smem_offset;
  cudaFuncSetAttribute(ws, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  ws<<<dim3(M / 128, N / 128), 384, smem>>>(ta, tb, S, k_tiles, cons_phase, prod_phase, tx_delta, empty_delta,
                                            release_early, smem_offset, relative, rep);
  cudaError_t err = cudaDeviceSynchronize();
  const char* status = err != cudaSuccess ? "error" : rep->hang ? "hang" : rep->mismatches ? "wrong" : "ok";
  printf("{\"status\": \"%s\", \"cuda\": \"%s\", \"mismatches\": %llu, \"first\": {\"round\": %d, \"stage\": %d, "
         "\"warp\": %d, \"thread\": %d, \"smem_byte\": %d, \"expected\": %d, \"found\": %d}, \"hang\": {\"role\": \"%s\", "
         "\"round\": %d, \"stage\": %d, \"barrier\": \"%s\"}}\n",
         status, cudaGetErrorString(err), rep->mismatches, rep->round, rep->stage, rep->warp, rep->thread,
         rep->smem_byte, rep->expected, rep->found, rep->hang_role ? "consumer" : "producer", rep->hang_round,
         rep->hang_stage, rep->hang_barrier ? "empty" : "full");
  return 0;
}
