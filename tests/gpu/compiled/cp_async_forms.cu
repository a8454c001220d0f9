// Plain CUDA twins of specs/cutlass/sm80_f16_gemm_a_128x32_warpraked.yaml (128 threads; the A
// tile's PitchLinearWarpRakedThreadMap<32x128, 128, 4x8, 8>: lane l of warp w moves the 16-byte
// chunk l % 4 of row 32 w + l / 4 + 8 s, s = 0..3, into Sw<2,3,3> o (128,32):(32,1)), one
// 16-byte cp.async per access, in each form: the L1-allocating .ca (SASS LDGSTS) and the
// bypassing .cg (LDGSTS.BYPASS), and as a plain load and store.  What a spec declares and what the
// kernel issues may differ.

template <bool kBypass, bool kPlain = false>
__device__ __forceinline__ void a_tile(const unsigned short* __restrict__ a, int K) {
  __shared__ __align__(128) unsigned short s[128 * 32];
  const int w = threadIdx.x / 32, l = threadIdx.x % 32, c = l % 4;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = 32 * w + l / 4 + 8 * i;
    const unsigned short* src = a + (size_t)(blockIdx.x * 128 + row) * K + blockIdx.y * 32 + 8 * c;
    int e = 32 * row + 8 * c;
    e ^= ((e >> 6) & 3) << 3;  // Sw<2,3,3>
    unsigned dst = (unsigned)__cvta_generic_to_shared(s + e);
    if (kPlain)
      *reinterpret_cast<uint4*>(s + e) = *reinterpret_cast<const uint4*>(src);
    else if (kBypass)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
    else
      asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
  }
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();
}

extern "C" __global__ void a_tile_ca(const unsigned short* __restrict__ a, int K) { a_tile<false>(a, K); }
extern "C" __global__ void a_tile_cg(const unsigned short* __restrict__ a, int K) { a_tile<true>(a, K); }
// no cp.async: a 128-bit load and a 128-bit store (LDG.128, STS.128)
extern "C" __global__ void a_tile_ldg_sts(const unsigned short* __restrict__ a, int K) { a_tile<false, true>(a, K); }
