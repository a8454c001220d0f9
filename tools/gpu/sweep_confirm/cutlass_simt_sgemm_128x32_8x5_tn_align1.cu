// cutlass_simt_sgemm_128x32_8x5_tn_align1: CUTLASS's generator's kernel text (EmitGemmUniversalInstance), as the library compiles it
#include <cutlass/cutlass.h>
#include <cutlass/numeric_types.h>
#include <cutlass/arch/arch.h>
#include <cutlass/arch/mma.h>
#include <cutlass/layout/matrix.h>
#include <cutlass/gemm/device/gemm.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/default_gemm_universal.h>

// Gemm operator cutlass_simt_sgemm_128x32_8x5_tn_align1
using cutlass_simt_sgemm_128x32_8x5_tn_align1_base =
  typename cutlass::gemm::kernel::DefaultGemmUniversal<
    float, cutlass::layout::RowMajor, cutlass::ComplexTransform::kNone, 1,    // transposed B operand
    float, cutlass::layout::ColumnMajor, cutlass::ComplexTransform::kNone, 1,    // transposed A operand
    float, cutlass::layout::RowMajor,
    float,
    cutlass::arch::OpClassSimt,
    cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<128, 32, 8>,
    cutlass::gemm::GemmShape<64, 32, 8>,
    cutlass::gemm::GemmShape<1, 1, 1>,
    
    cutlass::epilogue::thread::LinearCombination<
      float,
      1,
      float,
      float
    >
,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>,
    5,
    cutlass::arch::OpMultiplyAdd
>::GemmKernel;

// Define named type
struct cutlass_simt_sgemm_128x32_8x5_tn_align1 :
  public cutlass_simt_sgemm_128x32_8x5_tn_align1_base { };

// threadmap sweep confirm: the kernel above, launched as the library launches it
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define TM_CUDA(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 3; } } while (0)

// one launch at the kernel's own problem km x kn x K (its Mma's M, N, K: the spec's)
template <class Gemm>
int launch(int km, int kn, int K, void* A, void* B, void* C, void* D) {
  using Kernel = typename Gemm::GemmKernel;
  // the adapter takes the caller's problem: the kernel's transposed when the kernel's C is
  // row-major (the emitter declares the kernel transposed)
  int const M = Gemm::kInternalTranspose ? kn : km;
  int const N = Gemm::kInternalTranspose ? km : kn;
  auto const lda = Gemm::LayoutA::packed({M, K}).stride(0);
  auto const ldb = Gemm::LayoutB::packed({K, N}).stride(0);
  auto const ldc = Gemm::LayoutC::packed({M, N}).stride(0);
  using Compute = typename Gemm::EpilogueOutputOp::ElementCompute;
  // beta = 0: the epilogue reads no C, so the kernel's global loads are the mainloop's cp.async
  typename Gemm::EpilogueOutputOp::Params epilogue(Compute(1), Compute(0));
  typename Gemm::Arguments args(cutlass::gemm::GemmUniversalMode::kGemm, {M, N, K}, 1, epilogue,
                                A, B, C, D, 0, 0, 0, 0, lda, ldb, ldc, ldc);
  cutlass::Status st = Gemm::can_implement(args);
  if (st != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "can_implement: %s\n", cutlassGetStatusString(st)); return 3;
  }
  void* W = nullptr;
  size_t const ws = Gemm::get_workspace_size(args);
  if (ws) TM_CUDA(cudaMalloc(&W, ws));
  Gemm gemm;
  st = gemm.initialize(args, W);
  if (st == cutlass::Status::kSuccess) st = gemm.run();
  TM_CUDA(cudaDeviceSynchronize());
  if (W) TM_CUDA(cudaFree(W));
  if (st != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "run: %s\n", cutlassGetStatusString(st)); return 3;
  }
  dim3 const grid = Gemm::get_grid_shape(args);
  std::printf("TM-CONFIRM problem=%dx%dx%d transposed=%d grid=%ux%ux%u threads=%d smem=%d\n", M, N, K,
              int(Gemm::kInternalTranspose), grid.x, grid.y, grid.z, int(Kernel::kThreadCount),
              int(sizeof(typename Kernel::SharedStorage)));
  return 0;
}

int main(int argc, char** argv) {
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<cutlass_simt_sgemm_128x32_8x5_tn_align1>;
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s M N K [K...] (the kernel's own M, N, K; one launch per K)\n", argv[0]);
    return 2;
  }
  int const km = std::atoi(argv[1]), kn = std::atoi(argv[2]);
  int kmax = 0;
  for (int i = 3; i < argc; ++i) kmax = std::max(kmax, std::atoi(argv[i]));
  auto bytes = [](long long n, int bits) { return size_t((n * bits + 7) / 8); };
  void *A = nullptr, *B = nullptr, *C = nullptr, *D = nullptr;
  size_t const a = bytes((long long)km * kmax, cutlass::sizeof_bits<typename Gemm::ElementA>::value);
  size_t const b = bytes((long long)kmax * kn, cutlass::sizeof_bits<typename Gemm::ElementB>::value);
  size_t const c = bytes((long long)km * kn, cutlass::sizeof_bits<typename Gemm::ElementC>::value);
  TM_CUDA(cudaMalloc(&A, a)); TM_CUDA(cudaMalloc(&B, b)); TM_CUDA(cudaMalloc(&C, c)); TM_CUDA(cudaMalloc(&D, c));
  TM_CUDA(cudaMemset(A, 0, a)); TM_CUDA(cudaMemset(B, 0, b)); TM_CUDA(cudaMemset(C, 0, c));
  std::printf("TM-CONFIRM kernel=cutlass_simt_sgemm_128x32_8x5_tn_align1\n");
  for (int i = 3; i < argc; ++i) {
    int const rc = launch<Gemm>(km, kn, std::atoi(argv[i]), A, B, C, D);
    if (rc) return rc;
  }
  return 0;
}
