// One TMA load (cp.async.bulk.tensor, CuTe's SM90_TMA_LOAD_<N>D) per case, its tensor map
// encoded from the case's fields as cuTensorMapEncodeTiled receives them; the shared bytes it
// wrote are dumped (unwritten bytes keep 0xAA).  Global byte k holds (k * 131 + 7) & 0xff.
// Build: nvcc -O2 -std=c++17 -arch=sm_90a -I<cutlass include> tma_image.cu -lcuda -o tma_image
// Run:   ./tma_image cases.txt dump.bin
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cuda.h>
#include <cute/arch/copy_sm90_desc.hpp>
#include <cute/arch/copy_sm90_tma.hpp>

constexpr int kRegion = 64 * 1024;  // the dumped shared bytes, from a 1024-byte-aligned base

__global__ void load(const __grid_constant__ CUtensorMap tmap, int rank, int c0, int c1, int c2, int c3, int c4,
                     int base, int bytes, uint8_t* out) {
  extern __shared__ uint8_t raw[];
  __shared__ alignas(8) uint64_t bar;
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  for (int i = threadIdx.x; i < kRegion; i += blockDim.x) smem[i] = 0xAA;
  if (threadIdx.x == 0) {
    cute::initialize_barrier(bar, 1);
    // the generic writes (0xAA, the barrier's init) before the async proxy's
    asm volatile("fence.proxy.async.shared::cta;\n\tfence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    cute::set_barrier_transaction_bytes(bar, bytes);
    void* dst = smem + base;
    switch (rank) {
      case 1: cute::SM90_TMA_LOAD_1D::copy(&tmap, &bar, 0, dst, c0); break;
      case 2: cute::SM90_TMA_LOAD_2D::copy(&tmap, &bar, 0, dst, c0, c1); break;
      case 3: cute::SM90_TMA_LOAD_3D::copy(&tmap, &bar, 0, dst, c0, c1, c2); break;
      case 4: cute::SM90_TMA_LOAD_4D::copy(&tmap, &bar, 0, dst, c0, c1, c2, c3); break;
      default: cute::SM90_TMA_LOAD_5D::copy(&tmap, &bar, 0, dst, c0, c1, c2, c3, c4); break;
    }
  }
  cute::wait_barrier(bar, 0);
  __syncthreads();
  for (int i = threadIdx.x; i < kRegion; i += blockDim.x) out[i] = smem[i];
}

// The store: shared byte i (from the 1024-byte-aligned base) holds (i * 37 + 11) & 0xff; one
// TMA store (SM90_TMA_STORE_<N>D) of the box at smem + base, then bulk_group commit and wait.
__global__ void store(const __grid_constant__ CUtensorMap tmap, int rank, int c0, int c1, int c2, int c3, int c4,
                      int base) {
  extern __shared__ uint8_t raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  for (int i = threadIdx.x; i < kRegion; i += blockDim.x) smem[i] = uint8_t(i * 37 + 11);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic writes, then the async proxy reads
  __syncthreads();
  if (threadIdx.x == 0) {
    void* src = smem + base;
    switch (rank) {
      case 1: cute::SM90_TMA_STORE_1D::copy(&tmap, src, c0); break;
      case 2: cute::SM90_TMA_STORE_2D::copy(&tmap, src, c0, c1); break;
      case 3: cute::SM90_TMA_STORE_3D::copy(&tmap, src, c0, c1, c2); break;
      case 4: cute::SM90_TMA_STORE_4D::copy(&tmap, src, c0, c1, c2, c3); break;
      default: cute::SM90_TMA_STORE_5D::copy(&tmap, src, c0, c1, c2, c3, c4); break;
    }
    cute::tma_store_arrive();
    cute::tma_store_wait<0>();
  }
  __syncthreads();
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  FILE* f = fopen(argv[1], "r");
  FILE* o = fopen(argv[2], "wb");
  // with a third argument: the stores' changed global bytes, as "case count (offset value)..." lines
  FILE* st = argc > 3 ? fopen(argv[3], "w") : nullptr;
  if (!f || !o) return 2;
  cuInit(0);
  cudaFuncSetAttribute(load, cudaFuncAttributeMaxDynamicSharedMemorySize, kRegion + 1024);
  cudaFuncSetAttribute(store, cudaFuncAttributeMaxDynamicSharedMemorySize, kRegion + 1024);
  uint8_t* out;
  cudaMalloc(&out, kRegion);
  char name[128];
  int dtype, eb, rank, swz, base, do_store, n = 0;
  while (fscanf(f, "%127s %d %d %d %d %d %d", name, &dtype, &eb, &rank, &swz, &base, &do_store) == 7) {
    cuuint64_t dims[5], strides[4];
    cuuint32_t box[5], estr[5] = {1, 1, 1, 1, 1};
    int c[5];
    for (int i = 0; i < 5; ++i) if (fscanf(f, "%llu", (unsigned long long*)&dims[i]) != 1) return 2;
    for (int i = 0; i < 4; ++i) if (fscanf(f, "%llu", (unsigned long long*)&strides[i]) != 1) return 2;
    for (int i = 0; i < 5; ++i) if (fscanf(f, "%u", &box[i]) != 1) return 2;
    for (int i = 0; i < 5; ++i) if (fscanf(f, "%d", &c[i]) != 1) return 2;
    size_t span = eb;  // bytes the tensor reaches
    for (int i = 0; i < rank; ++i) span += (dims[i] - 1) * (i == 0 ? eb : strides[i - 1]);
    std::vector<uint8_t> host(span);
    for (size_t k = 0; k < span; ++k) host[k] = uint8_t(k * 131 + 7);
    void* g;
    cudaMalloc(&g, span);
    cudaMemcpy(g, host.data(), span, cudaMemcpyHostToDevice);
    CUtensorMap tmap;
    CUresult r = cuTensorMapEncodeTiled(&tmap, CUtensorMapDataType(dtype), rank, g, dims, strides, box, estr,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CUtensorMapSwizzle(swz),
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    int bytes = eb;
    for (int i = 0; i < rank; ++i) bytes *= box[i];
    std::vector<uint8_t> dump(kRegion, 0);
    int ok = r == CUDA_SUCCESS;
    if (ok) {
      load<<<1, 128, kRegion + 1024>>>(tmap, rank, c[0], c[1], c[2], c[3], c[4], base, bytes, out);
      cudaError_t e = cudaDeviceSynchronize();
      ok = e == cudaSuccess;
      if (!ok) { fprintf(stderr, "%s: %s\n", name, cudaGetErrorString(e)); return 1; }
      cudaMemcpy(dump.data(), out, kRegion, cudaMemcpyDeviceToHost);
    }
    fwrite(dump.data(), 1, kRegion, o);
    if (ok && st && do_store) {
      store<<<1, 128, kRegion + 1024>>>(tmap, rank, c[0], c[1], c[2], c[3], c[4], base);
      cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) { fprintf(stderr, "%s store: %s\n", name, cudaGetErrorString(e)); return 1; }
      std::vector<uint8_t> back(span);
      cudaMemcpy(back.data(), g, span, cudaMemcpyDeviceToHost);
      size_t changed = 0;
      for (size_t k = 0; k < span; ++k) changed += back[k] != host[k];
      fprintf(st, "%s %zu", name, changed);
      for (size_t k = 0; k < span; ++k)
        if (back[k] != host[k]) fprintf(st, " %zu %u", k, unsigned(back[k]));
      fprintf(st, "\n");
    }
    printf("%d %s encode=%d\n", n++, name, (int)r);
    cudaFree(g);
  }
  fclose(o);
  return 0;
}
