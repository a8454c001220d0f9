// Plain CUDA twins of specs/cute_transpose/row_rvectorized.yaml (256 threads as (16,16):(16,1),
// a 16x64 tile of x at (bx, by) copied to shared sA = (16,64):(64,1) with one 128-bit access a
// thread, then read through sB = (64,16):(1,64) as 4 consecutive words a thread and stored to y).
// Each kernel differs in what nvcc makes of stage 2's four scalar shared loads, or of stage 0.

#define TM (threadIdx.x / 16)
#define TN (threadIdx.x % 16)

__device__ __forceinline__ void stage0(const float* __restrict__ x, float* s, int N) {
  const float4* src = reinterpret_cast<const float4*>(x + (size_t)(blockIdx.x * 16 + TM) * N + blockIdx.y * 64 + 4 * TN);
  *reinterpret_cast<float4*>(s + TM * 64 + 4 * TN) = *src;
}

__device__ __forceinline__ void store(float* __restrict__ y, int M, int i, float v) {
  y[(size_t)(blockIdx.y * 64 + 4 * TM + i) * M + blockIdx.x * 16 + TN] = v;
}

// nvcc merges the four 32-bit shared loads into one LDS.128
extern "C" __global__ void rr_merged(const float* __restrict__ x, float* __restrict__ y, int M, int N) {
  __shared__ __align__(16) float s[16 * 64];
  stage0(x, s, N);
  __syncthreads();
#pragma unroll
  for (int i = 0; i < 4; ++i) store(y, M, i, s[4 * TM + i + 64 * TN]);
}

// volatile loads cannot be merged: four LDS
extern "C" __global__ void rr_volatile(const float* __restrict__ x, float* __restrict__ y, int M, int N) {
  __shared__ __align__(16) float s[16 * 64];
  stage0(x, s, N);
  __syncthreads();
  volatile float* vs = s;
#pragma unroll
  for (int i = 0; i < 4; ++i) store(y, M, i, vs[4 * TM + i + 64 * TN]);
}

// a loop the compiler keeps: the static count is not the issue count
extern "C" __global__ void rr_loop(const float* __restrict__ x, float* __restrict__ y, int M, int N) {
  __shared__ __align__(16) float s[16 * 64];
  stage0(x, s, N);
  __syncthreads();
  volatile float* vs = s;
#pragma unroll 1
  for (int i = 0; i < 4; ++i) store(y, M, i, vs[4 * TM + i + 64 * TN]);
}

// one more shared load than the spec declares (a 64-bit one): the widths do not add up
extern "C" __global__ void rr_extra(const float* __restrict__ x, float* __restrict__ y, int M, int N) {
  __shared__ __align__(16) float s[16 * 64];
  stage0(x, s, N);
  __syncthreads();
  volatile float* vs = s;
  float2 e = *reinterpret_cast<float2*>(s + 2 * TN);
#pragma unroll
  for (int i = 0; i < 4; ++i) store(y, M, i, vs[4 * TM + i + 64 * TN] + (i == 0 ? e.x + e.y : 0.f));
}

// stage 0 as cp.async (LDGSTS): one instruction moves both of its sides
extern "C" __global__ void rr_cp_async(const float* __restrict__ x, float* __restrict__ y, int M, int N) {
  __shared__ __align__(16) float s[16 * 64];
  const float* src = x + (size_t)(blockIdx.x * 16 + TM) * N + blockIdx.y * 64 + 4 * TN;
  unsigned dst = (unsigned)__cvta_generic_to_shared(s + TM * 64 + 4 * TN);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();
  volatile float* vs = s;
#pragma unroll
  for (int i = 0; i < 4; ++i) store(y, M, i, vs[4 * TM + i + 64 * TN]);
}
