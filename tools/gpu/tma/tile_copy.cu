// CuTe's own TMA copy of a whole CTA tile (make_tma_copy on the host, copy(tma.with(bar), tAgA,
// tAsA) in the kernel, as CUTLASS's tma_load_testbed does), the shared bytes dumped; check_tiles.py
// compares them with threadmap's tma_tile_image.  Global byte k holds (k * 131 + 7) & 0xff.
// Build: nvcc -O2 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -I<cutlass include> tile_copy.cu -lcuda
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cute/tensor.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
using namespace cute;

constexpr int kRegion = 64 * 1024;

template <class T, class Tma, class SLayout, class Tile>
__global__ void load_tile(CUTE_GRID_CONSTANT Tma const tma, int M, int K, int mt, int kt, int base, uint8_t* out) {
  extern __shared__ uint8_t raw[];
  __shared__ alignas(8) uint64_t bar;
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  for (int i = threadIdx.x; i < kRegion; i += blockDim.x) smem[i] = 0xAA;
  if (threadIdx.x == 0) {
    initialize_barrier(bar, 1);
    asm volatile("fence.proxy.async.shared::cta;\n\tfence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  Tensor mA = tma.get_tma_tensor(make_shape(M, K));
  Tensor gA = local_tile(mA, Tile{}, make_coord(mt, kt));
  Tensor sA = make_tensor(make_smem_ptr(reinterpret_cast<T*>(smem + base)), SLayout{});
  auto cta = tma.get_slice(Int<0>{});
  Tensor tAgA = cta.partition_S(gA);
  Tensor tAsA = cta.partition_D(sA);
  if (threadIdx.x == 0) {
    set_barrier_transaction_bytes(bar, int(size(SLayout{}) * sizeof(T)));
    copy(tma.with(bar), tAgA, tAsA);
  }
  wait_barrier(bar, 0);
  __syncthreads();
  for (int i = threadIdx.x; i < kRegion; i += blockDim.x) out[i] = smem[i];
}

template <class T, bool KMajor, class SLayout>
void run(const char* name, int M, int K, int mt, int kt, int base, FILE* o, uint8_t* out) {
  size_t bytes = size_t(M) * K * sizeof(T);
  std::vector<uint8_t> host(bytes);
  for (size_t k = 0; k < bytes; ++k) host[k] = uint8_t(k * 131 + 7);
  T* g;
  cudaMalloc(&g, bytes);
  cudaMemcpy(g, host.data(), bytes, cudaMemcpyHostToDevice);
  auto stride = [&] {
    if constexpr (KMajor) return make_stride(K, Int<1>{}); else return make_stride(Int<1>{}, M);
  }();
  Tensor gA = make_tensor(make_gmem_ptr(g), make_layout(make_shape(M, K), stride));
  using Tile = decltype(product_each(shape(SLayout{})));
  auto tma = make_tma_copy(SM90_TMA_LOAD{}, gA, SLayout{}, Tile{}, Int<1>{});
  auto kern = load_tile<T, decltype(tma), SLayout, Tile>;
  cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, kRegion + 1024);
  kern<<<1, 128, kRegion + 1024>>>(tma, M, K, mt, kt, base, out);
  cudaError_t e = cudaDeviceSynchronize();
  std::vector<uint8_t> dump(kRegion, 0);
  if (e == cudaSuccess) cudaMemcpy(dump.data(), out, kRegion, cudaMemcpyDeviceToHost);
  fwrite(dump.data(), 1, kRegion, o);
  printf("%s %s\n", name, cudaGetErrorString(e));
  cudaFree(g);
}

int main(int argc, char** argv) {
  FILE* o = fopen(argc > 1 ? argv[1] : "tiles.bin", "wb");
  uint8_t* out;
  cudaMalloc(&out, kRegion);
  using namespace cute::SM90::GMMA;
  using KSW128 = decltype(tile_to_shape(Layout_K_SW128_Atom<half_t>{}, make_shape(_128{}, _64{})));
  using KSW64 = decltype(tile_to_shape(Layout_K_SW64_Atom<half_t>{}, make_shape(_64{}, _32{})));
  using KSW32 = decltype(tile_to_shape(Layout_K_SW32_Atom<half_t>{}, make_shape(_64{}, _16{})));
  using KINT = decltype(tile_to_shape(Layout_K_INTER_Atom<half_t>{}, make_shape(_64{}, _32{})));
  using MNSW128 = decltype(tile_to_shape(Layout_MN_SW128_Atom<half_t>{}, make_shape(_128{}, _64{})));
  using MNSW64F = decltype(tile_to_shape(Layout_MN_SW64_Atom<float>{}, make_shape(_64{}, _32{})));
  using KSW128F = decltype(tile_to_shape(Layout_K_SW128_Atom<float>{}, make_shape(_64{}, _32{})));
  // name, M, K, tile (m, k), shared offset of the tile from a 1024-byte boundary
  run<half_t, true, KSW128>("k_sw128_f16", 300, 200, 1, 1, 0, o, out);
  run<half_t, true, KSW128>("k_sw128_f16_edge", 300, 200, 2, 3, 0, o, out);
  run<half_t, true, KSW128>("k_sw128_f16_off512", 300, 200, 1, 1, 512, o, out);
  run<half_t, true, KSW64>("k_sw64_f16", 300, 200, 2, 1, 0, o, out);
  run<half_t, true, KSW32>("k_sw32_f16", 300, 200, 1, 2, 0, o, out);
  run<half_t, true, KINT>("k_inter_f16", 300, 200, 3, 1, 0, o, out);
  run<half_t, false, MNSW128>("mn_sw128_f16", 304, 200, 1, 1, 0, o, out);
  run<half_t, false, MNSW128>("mn_sw128_f16_off256", 304, 200, 0, 2, 256, o, out);
  run<float, false, MNSW64F>("mn_sw64_f32", 304, 120, 2, 1, 0, o, out);
  run<float, true, KSW128F>("k_sw128_f32_edge", 300, 120, 4, 3, 0, o, out);
  fclose(o);
  return 0;
}
