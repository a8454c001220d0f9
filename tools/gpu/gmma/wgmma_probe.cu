// One warpgroup wgmma.mma_async m64nNk16 (f32 += f16*f16 or bf16*bf16, both operands in shared
// memory) per case of a case file, with the operand descriptors the case gives, and the f32
// accumulator D dumped exactly: threadmap's model of CuTe's make_gmma_desc predicts D, this measures it.
//
// Build (sm_90a: wgmma exists only on the arch-specific target):
//   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I"$inc" tools/gpu/gmma/wgmma_probe.cu -o wgmma_probe
//   ($inc: the CUTLASS include folder, see tools/gpu/site.sh)
// Run:   wgmma_probe CASES OUT [LIMIT]      (LIMIT: run only the first LIMIT cases)
//
// Case file (little-endian): "GMMA", u32 count; per case u32 n, u32 tnsp_a, u32 tnsp_b (0 K-major,
// 1 MN-major), u32 dtype (0 f16, 1 bf16), u64 desc_a, u64 desc_b, u32 image_bytes, image bytes.
// The image is copied to a 1024-byte aligned base in dynamic shared memory; the descriptors' 14-bit
// start address fields are relative to that base (the kernel adds base >> 4), every other bit is used
// as given. Output file: per case u32 status, 64*n f32 D (row-major), 128*(n/2) f32 raw registers
// (thread-major). Statuses other than 0 carry NaN arrays. One JSON line per case on stdout.
//
// Isolation: a wgmma that faults kills the CUDA context and one that hangs never returns, so the
// cases run in a forked child (the parent never touches CUDA). The child publishes each finished
// case into shared memory; a fault ends the child after recording its case, a hang or a crash is
// recorded by the parent (which kills a child that makes no progress for WGMMA_PROBE_TIMEOUT_S,
// default 30 s), and a fresh child continues with the next case.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>
#if defined(WGMMA_PROBE_ALL_N) && !defined(CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED)
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED  // the N that are not 8,16,32,64,96,128,192,256 live in _ext.hpp
#endif
#include <cute/arch/mma_sm90_gmma.hpp>  // SM90::GMMA::MMA_64xNx16_F32{F16F16,BF16BF16}_SS, warpgroup_*
#include <cute/arch/util.hpp>           // cast_smem_ptr_to_uint
#include <cutlass/arch/barrier.h>       // fence_view_async_shared

namespace G = cute::SM90::GMMA;

enum Status : uint32_t {
  kOk = 0,
  kBadCase = 1,       // n not instantiated, tnsp/dtype out of range, image too large or not 16-byte sized
  kAddrOverflow = 2,  // relative start address + base >> 4 does not fit the 14-bit field
  kCudaError = 3,     // a CUDA error (a fault) on this case; the message is printed
  kHang = 4,          // the watchdog killed the child during this case
  kCrash = 5,         // the child died during this case without recording it
};

constexpr uint32_t kMaxImage = 200 * 1024;
constexpr int kThreads = 128;  // one warpgroup

// The CUTLASS op for (N, majors, dtype). Its fma takes the two descriptors, the N/2 accumulator
// registers by reference and scale_D; the class names embed N, hence the macro.
template <int N, G::Major A, G::Major B, int DT> struct Op;
#define WGMMA_PROBE_OP(NN)                                                                          \
  template <G::Major A, G::Major B> struct Op<NN, A, B, 0> { using type = G::MMA_64x##NN##x16_F32F16F16_SS<A, B>; };   \
  template <G::Major A, G::Major B> struct Op<NN, A, B, 1> { using type = G::MMA_64x##NN##x16_F32BF16BF16_SS<A, B>; };
// The instantiated N: the six powers of two by default (a quick build); -DWGMMA_PROBE_ALL_N adds
// every other multiple of 8 (CUTLASS has them all): 256 kernels, about 4x the build time.
#ifdef WGMMA_PROBE_ALL_N
#define WGMMA_PROBE_SIZES(X) X(8) X(16) X(24) X(32) X(40) X(48) X(56) X(64) X(72) X(80) X(88) X(96) X(104) \
  X(112) X(120) X(128) X(136) X(144) X(152) X(160) X(168) X(176) X(184) X(192) X(200) X(208) X(216) X(224) \
  X(232) X(240) X(248) X(256)
#else
#define WGMMA_PROBE_SIZES(X) X(8) X(16) X(32) X(64) X(128) X(256)
#endif
WGMMA_PROBE_SIZES(WGMMA_PROBE_OP)

// CUTLASS's fma signature, called with the accumulator array's elements spread out.
template <class MMA, size_t... I>
__device__ __forceinline__ void mma_zero_scale(uint64_t da, uint64_t db, float* d, std::index_sequence<I...>) {
  MMA::fma(da, db, d[I]..., G::ScaleOut::Zero);  // scale_D = 0: D = A*B, the old d ignored
}

// The descriptor with its start address made absolute; false when the 14-bit field would overflow.
__device__ __forceinline__ bool relocate(uint64_t& desc, uint32_t base16) {
  uint32_t start = uint32_t(desc & 0x3FFF) + base16;
  desc = (desc & ~uint64_t(0x3FFF)) | start;
  return start < 0x4000;
}

template <int N, G::Major TA, G::Major TB, int DT>
__global__ void __launch_bounds__(kThreads, 1)
probe(const uint4* image, uint32_t image_bytes, uint32_t smem_bytes, uint64_t desc_a, uint64_t desc_b,
      float* D, float* raw, uint32_t* status) {
  extern __shared__ uint8_t smem[];
  // Aligned by offsetting smem itself (not through an integer) so the stores stay shared stores.
  uint32_t pad = (1024 - (cute::cast_smem_ptr_to_uint(smem) & 1023)) & 1023;
  uint8_t* base = smem + pad;
  // The image, then zeros up to the end of the allocation: a read past the image sees 0, not garbage.
  uint32_t words = (smem_bytes - pad) / 16;
  for (uint32_t i = threadIdx.x; i < words; i += kThreads)
    reinterpret_cast<uint4*>(base)[i] = i < image_bytes / 16 ? image[i] : make_uint4(0, 0, 0, 0);
  // wgmma reads shared memory through the async proxy: make the generic stores visible to it.
  cutlass::arch::fence_view_async_shared();
  __syncthreads();

  uint32_t base16 = cute::cast_smem_ptr_to_uint(base) >> 4;
  bool ok = relocate(desc_a, base16);
  ok = relocate(desc_b, base16) && ok;
  if (!ok) {  // the same for every thread: the whole warpgroup skips the wgmma
    if (threadIdx.x == 0) *status = kAddrOverflow;
    return;
  }

  float d[N / 2];
#pragma unroll
  for (int r = 0; r < N / 2; ++r) {
    d[r] = 0.f;
    cute::warpgroup_fence_operand(d[r]);  // keep register accesses on their side of the async mma
  }
  cute::warpgroup_arrive();
  mma_zero_scale<typename Op<N, TA, TB, DT>::type>(desc_a, desc_b, d, std::make_index_sequence<N / 2>{});
  cute::warpgroup_commit_batch();
  cute::warpgroup_wait<0>();
#pragma unroll
  for (int r = 0; r < N / 2; ++r) cute::warpgroup_fence_operand(d[r]);

  // PTX ISA, "Matrix Fragments for wgmma.mma_async.m64nNk16", accumulator D with .f32: warp w of the
  // warpgroup holds rows 16w..16w+15; lane l, register r is at row 16w + l/4 + 8*((r/2)%2),
  // column 8*(r/4) + 2*(l%4) + r%2. raw keeps the registers as they are, to re-derive that mapping.
  int t = threadIdx.x, w = t / 32, l = t % 32;
#pragma unroll
  for (int r = 0; r < N / 2; ++r) {
    raw[t * (N / 2) + r] = d[r];
    int row = 16 * w + l / 4 + 8 * ((r / 2) % 2), col = 8 * (r / 4) + 2 * (l % 4) + r % 2;
    D[row * N + col] = d[r];
  }
}

using Kernel = void (*)(const uint4*, uint32_t, uint32_t, uint64_t, uint64_t, float*, float*, uint32_t*);

template <int N> Kernel pick_n(uint32_t ta, uint32_t tb, uint32_t dt) {
  constexpr G::Major K = G::Major::K, M = G::Major::MN;
  static const Kernel table[2][2][2] = {
      {{probe<N, K, K, 0>, probe<N, K, K, 1>}, {probe<N, K, M, 0>, probe<N, K, M, 1>}},
      {{probe<N, M, K, 0>, probe<N, M, K, 1>}, {probe<N, M, M, 0>, probe<N, M, M, 1>}}};
  return table[ta][tb][dt];
}

// nullptr: N not instantiated (see WGMMA_PROBE_SIZES) or an argument out of range.
Kernel pick(uint32_t n, uint32_t ta, uint32_t tb, uint32_t dt) {
  if (ta > 1 || tb > 1 || dt > 1) return nullptr;
  switch (n) {
#define WGMMA_PROBE_CASE(NN) case NN: return pick_n<NN>(ta, tb, dt);
    WGMMA_PROBE_SIZES(WGMMA_PROBE_CASE)
    default: return nullptr;
  }
}

struct Case {
  uint32_t n, ta, tb, dt;
  uint64_t da, db;
  uint32_t bytes;
  std::vector<uint8_t> image;
  size_t out;  // offset of this case's D (then raw) in the shared float array
};

// Shared between the parent and its children (MAP_SHARED), written by the child, read by the parent.
struct Slot {
  uint32_t status;
  char error[160];
};
struct Board {
  std::atomic<uint64_t>* done;  // cases [0, *done) are recorded
  Slot* slots;
  float* floats;
};

void fail(const char* msg) {
  fprintf(stderr, "wgmma_probe: %s\n", msg);
  exit(2);
}

std::vector<Case> read_cases(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) fail("cannot open the case file");
  auto get = [&](void* p, size_t k) { if (fread(p, 1, k, f) != k) fail("case file truncated"); };
  char magic[4];
  uint32_t count;
  get(magic, 4);
  if (memcmp(magic, "GMMA", 4) != 0) fail("bad magic (want GMMA)");
  get(&count, 4);
  std::vector<Case> cases(count);
  size_t out = 0;
  for (Case& c : cases) {
    get(&c.n, 4); get(&c.ta, 4); get(&c.tb, 4); get(&c.dt, 4);
    get(&c.da, 8); get(&c.db, 8); get(&c.bytes, 4);
    // n fixes the output's size; a value no wgmma has makes the whole file unusable
    if (c.n < 8 || c.n > 256 || c.n % 8) fail("n must be a multiple of 8 in [8, 256]");
    if (c.bytes > 16u << 20) fail("image_bytes implausibly large (file corrupt?)");
    c.image.resize(c.bytes);
    if (c.bytes) get(c.image.data(), c.bytes);
    c.out = out;
    out += size_t(64) * c.n + size_t(kThreads) * (c.n / 2);
  }
  fclose(f);
  return cases;
}

bool cuda_ok(cudaError_t e, Slot& s, const char* what) {
  if (e == cudaSuccess) return true;
  snprintf(s.error, sizeof s.error, "%s: %s", what, cudaGetErrorString(e));
  s.status = kCudaError;
  return false;
}

// The child: runs cases from `first` on, recording each; exits 1 after a CUDA error (the context
// may be dead), 2 when CUDA cannot start at all.
[[noreturn]] void child(const std::vector<Case>& cases, size_t first, Board& b) {
  uint4* d_image = nullptr;
  float* d_out = nullptr;
  uint32_t* d_status = nullptr;
  if (cudaMalloc(&d_image, kMaxImage) != cudaSuccess ||
      cudaMalloc(&d_out, sizeof(float) * 2 * 64 * 256) != cudaSuccess ||
      cudaMalloc(&d_status, 4) != cudaSuccess) {
    fprintf(stderr, "wgmma_probe: CUDA init failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    _exit(2);
  }
  for (size_t i = first; i < cases.size(); ++i) {
    const Case& c = cases[i];
    Slot& s = b.slots[i];
    float* host = b.floats + c.out;
    size_t nd = size_t(64) * c.n, nr = size_t(kThreads) * (c.n / 2);
    Kernel k = pick(c.n, c.ta, c.tb, c.dt);
    if (!k || c.bytes > kMaxImage || c.bytes % 16) {
      s.status = kBadCase;
      snprintf(s.error, sizeof s.error, "%s", !k ? "n/tnsp/dtype not instantiated" : "image_bytes > 200 KiB or not a multiple of 16");
      b.done->store(i + 1);
      continue;
    }
    uint32_t smem = c.bytes + 1024, status = kOk;
    // 0xFF bytes are NaN floats: an element of D the fragment mapping never writes stays NaN.
    bool ok = cuda_ok(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), s, "set smem") &&
              cuda_ok(cudaMemcpy(d_image, c.image.data(), c.bytes, cudaMemcpyHostToDevice), s, "copy image") &&
              cuda_ok(cudaMemset(d_out, 0xFF, sizeof(float) * (nd + nr)), s, "clear D") &&
              cuda_ok(cudaMemset(d_status, 0, 4), s, "clear status");
    if (ok) {
      k<<<1, kThreads, smem>>>(d_image, c.bytes, smem, c.da, c.db, d_out, d_out + nd, d_status);
      ok = cuda_ok(cudaGetLastError(), s, "launch") && cuda_ok(cudaDeviceSynchronize(), s, "kernel") &&
           cuda_ok(cudaMemcpy(host, d_out, sizeof(float) * (nd + nr), cudaMemcpyDeviceToHost), s, "copy D") &&
           cuda_ok(cudaMemcpy(&status, d_status, 4, cudaMemcpyDeviceToHost), s, "copy status");
    }
    if (ok) s.status = status;
    b.done->store(i + 1);
    if (!ok) _exit(1);  // no CUDA teardown on a possibly dead context
  }
  // A normal exit (the parent flushed stdio before the fork): CUDA and compute-sanitizer finish cleanly.
  exit(0);
}

int main(int argc, char** argv) {
  if (argc < 3) fail("usage: wgmma_probe CASES OUT [LIMIT]");
  std::vector<Case> cases = read_cases(argv[1]);
  if (argc > 3 && size_t(atol(argv[3])) < cases.size()) cases.resize(size_t(atol(argv[3])));
  size_t nfloats = cases.empty() ? 0 : cases.back().out + 64 * cases.back().n + kThreads * (cases.back().n / 2);
  const char* env = getenv("WGMMA_PROBE_TIMEOUT_S");
  double timeout_s = env ? atof(env) : 30.0;

  // the counter, then the slots (from byte 64), then the floats
  size_t bytes = 64 + sizeof(Slot) * cases.size() + sizeof(float) * nfloats;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) fail("mmap failed");
  Board b;
  b.done = new (mem) std::atomic<uint64_t>(0);  // lock-free, so it works across processes
  b.slots = reinterpret_cast<Slot*>(reinterpret_cast<uint8_t*>(mem) + 64);
  b.floats = reinterpret_cast<float*>(b.slots + cases.size());
  for (size_t i = 0; i < nfloats; ++i) b.floats[i] = NAN;

  size_t next = 0;
  while (next < cases.size()) {
    b.done->store(next);
    fflush(nullptr);  // the child must not flush the parent's buffered output again
    pid_t pid = fork();
    if (pid < 0) fail("fork failed");
    if (pid == 0) child(cases, next, b);
    uint64_t seen = next;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    int wstatus = 0;
    bool hung = false;
    for (;;) {
      if (waitpid(pid, &wstatus, WNOHANG) == pid) break;
      uint64_t d = b.done->load();
      if (d != seen) { seen = d; deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s); }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &wstatus, 0);
        hung = true;
        break;
      }
      usleep(1000);
    }
    if (!hung && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 2) fail("the child could not start CUDA");
    size_t d = b.done->load();
    // exit 1 follows a recorded CUDA error; otherwise a child that stopped early was inside case d
    bool unrecorded = hung || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 1;
    if (unrecorded && d < cases.size()) {
      b.slots[d].status = hung ? kHang : kCrash;
      if (hung) snprintf(b.slots[d].error, sizeof b.slots[d].error, "no progress for %.0f s: killed", timeout_s);
      else snprintf(b.slots[d].error, sizeof b.slots[d].error, "child died (signal %d, exit %d)",
                    WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
      ++d;
    }
    next = d;
  }

  FILE* out = fopen(argv[2], "wb");
  if (!out) fail("cannot open the output file");
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Slot& s = b.slots[i];
    float* f = b.floats + c.out;
    size_t nd = size_t(64) * c.n, nr = size_t(kThreads) * (c.n / 2);
    if (s.status != kOk) for (size_t j = 0; j < nd + nr; ++j) f[j] = NAN;
    fwrite(&s.status, 4, 1, out);
    fwrite(f, sizeof(float), nd + nr, out);
    std::string checksum = "null";
    if (s.status == kOk) {
      double sum = 0;
      for (size_t j = 0; j < nd; ++j) sum += f[j];
      char buf[64];
      snprintf(buf, sizeof buf, std::isfinite(sum) ? "%.9g" : "\"%g\"", sum);  // NaN: a D element never written
      checksum = buf;
    }
    printf("{\"case\": %zu, \"n\": %u, \"status\": %u, \"checksum\": %s", i, c.n, s.status, checksum.c_str());
    if (s.status != kOk) {
      std::string e(s.error);
      for (char& ch : e) if (ch == '"' || ch == '\\' || ch < 32) ch = '\'';  // keep the line valid JSON
      printf(", \"error\": \"%s\"", e.c_str());
    }
    printf("}\n");
  }
  if (fclose(out) != 0) fail("writing the output file failed");
  return 0;
}
