// The SM80 multistage cp.async protocol of specs/pipeline/sm80_cp_async_multistage.yaml, run for real,
// with its planted bugs switched on by the case's parameters.
//
// 128 threads, a 128x32 f16 A tile per k-tile, `buffers` shared buffers in the ring and a prefetch
// distance of `ahead` k-tiles (CUTLASS: kStages - 1); each thread copies four 16-byte chunks with
// cp.async.cg (zero-fill where its predicate is false), then after cp.async.wait_group `wait_n` and
// __syncthreads every thread checks a row another thread copied (optionally after `delay_ns`, to let a
// refill that races the read land).
// Build: nvcc -O2 -std=c++17 -arch=sm_90a cpasync_pipeline.cu -o cpasync_pipeline
// Run:   ./cpasync_pipeline buffers ahead wait_n k_tiles M row_predicate(0|1) delay_ns
// Prints one JSON object.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_fp16.h>

struct Report { unsigned long long mismatches; int first_set, round, buffer, thread, smem_byte, expected, found; };

__device__ __forceinline__ void wait_group(int n) {
  switch (n) {  // the group count is an immediate
    case 0: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
  }
}

__device__ void issue(const __half* A, int M, int K, int kt, uint8_t* buf, int row_predicate) {
  for (int i = 0; i < 4; ++i) {
    int q = threadIdx.x + 128 * i, row = q / 4, col = (q % 4) * 8;
    bool in = !row_predicate || row < M;
    const __half* src = A + size_t(row) * K + kt * 32 + col;
    uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(buf + (row * 32 + col) * 2));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(in ? 16 : 0) : "memory");
  }
}

__global__ void multistage(const __half* A, int M, int K, int buffers, int ahead, int wait_n, int k_tiles,
                           int row_predicate, int delay_ns, Report* rep) {
  extern __shared__ uint8_t smem[];
  for (int p = 0; p < ahead; ++p) {
    if (p < k_tiles) issue(A, M, K, p, smem + (p % buffers) * 8192, row_predicate);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  for (int k = 0; k < k_tiles; ++k) {
    wait_group(wait_n);
    __syncthreads();
    int nk = k + ahead;
    if (nk < k_tiles) issue(A, M, K, nk, smem + (nk % buffers) * 8192, row_predicate);
    asm volatile("cp.async.commit_group;" ::: "memory");
    if (delay_ns) __nanosleep(delay_ns);
    int b = k % buffers, row = (threadIdx.x + 37) % 128;  // a row other threads copied
    for (int c = 0; c < 32; ++c) {
      int off = b * 8192 + (row * 32 + c) * 2;
      int got = int(__half2float(*reinterpret_cast<__half*>(smem + off)));
      int want = row < M ? ((row * 131 + (k * 32 + c) * 7) % 2039) : 0;
      if (got != want) {
        atomicAdd(&rep->mismatches, 1ULL);
        if (atomicCAS(&rep->first_set, 0, 1) == 0) {
          rep->round = k; rep->buffer = b; rep->thread = threadIdx.x; rep->smem_byte = off;
          rep->expected = want; rep->found = got;
        }
      }
    }
  }
  asm volatile("cp.async.wait_group 0;" ::: "memory");
}

int main(int argc, char** argv) {
  int buffers = atoi(argv[1]), ahead = atoi(argv[2]), wait_n = atoi(argv[3]), k_tiles = atoi(argv[4]);
  int M = atoi(argv[5]), row_predicate = atoi(argv[6]), delay_ns = atoi(argv[7]);
  int K = 32 * k_tiles;
  std::vector<__half> h(size_t(M) * K);
  for (int m = 0; m < M; ++m) for (int k = 0; k < K; ++k) h[size_t(m) * K + k] = __float2half(float((m * 131 + k * 7) % 2039));
  __half* a; cudaMalloc(&a, h.size() * 2);  // exactly M x K: a row past M is outside the allocation
  cudaMemcpy(a, h.data(), h.size() * 2, cudaMemcpyHostToDevice);
  Report* rep; cudaMallocManaged(&rep, sizeof(Report)); *rep = Report{};
  int smem = buffers * 8192;
  cudaFuncSetAttribute(multistage, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  for (int rep_i = 0; rep_i < 50; ++rep_i)
    multistage<<<1, 128, smem>>>(a, M, K, buffers, ahead, wait_n, k_tiles, row_predicate, delay_ns, rep);
  cudaError_t err = cudaDeviceSynchronize();
  printf("{\"status\": \"%s\", \"cuda\": \"%s\", \"launches\": 50, \"mismatches\": %llu, \"first\": {\"round\": %d, "
         "\"buffer\": %d, \"thread\": %d, \"smem_byte\": %d, \"expected\": %d, \"found\": %d}}\n",
         err != cudaSuccess ? "error" : rep->mismatches ? "wrong" : "ok", cudaGetErrorString(err), rep->mismatches,
         rep->round, rep->buffer, rep->thread, rep->smem_byte, rep->expected, rep->found);
  return 0;
}
