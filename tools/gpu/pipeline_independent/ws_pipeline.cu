// SM90 warp-specialised TMA + mbarrier pipeline (CUTLASS's PipelineTmaAsync shape) and a TMA
// store epilogue, run as written or with one planted bug; one case per process, its record a JSON
// object on stdout.  Raw PTX throughout so that every instruction the verifier reasons about is
// visible here.
// Build: nvcc -O2 -std=c++17 -arch=sm_90a ws_pipeline.cu -lcuda -o ws_pipeline
// Run:   ./ws_pipeline cases.txt CASE [key=value ...]      (cases.txt from cases.py)
//
// Mainloop (kernel `ws`): 384 threads.  Warpgroup 0 is the producer: one thread (warp 0, lane 0)
// waits on empty[stage], arrive_expect_tx(full[stage], 32768) and issues the two TMA loads (A and
// B, 128x64 f16 each, CU_TENSOR_MAP_SWIZZLE_128B).  Warpgroups 1 and 2 (256 threads) consume:
// wait on full[stage], read 32 elements of A and 32 of B with ld.shared.v4 (un-swizzling the
// absolute shared address), compare each with its global value, arrive on empty[stage].
// With cluster 2 (CTAs along M share the n-tile) each CTA loads half of B and multicasts it to
// both; every consumer thread then arrives on the empty barrier of each CTA of the cluster
// (mapa + mbarrier.arrive.release.cluster), so an empty barrier counts 256 x cluster arrivals:
// a producer refills its own A and both CTAs' halves of B only after both CTAs' consumers let go.
// This is CUTLASS's rule (release on every CTA that multicasts into you) with per-thread
// arrivals instead of CUTLASS's one signalling thread per warpgroup and destination CTA.
//
// Every wait loop has a watchdog (globaltimer): past watchdog_ms the thread records who waited
// (role, round, stage, barrier) in its CTA's hang record, raises the CTA's abort flag and leaves
// its loop; every other waiter of the CTA then leaves too and the kernel ends.
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr int kTileM = 128, kTileN = 128, kTileK = 64;
constexpr int kTileBytes = kTileM * kTileK * 2;  // 16 KiB: 128 rows of 128 bytes
constexpr int kStageBytes = 2 * kTileBytes;      // A then B
constexpr int kConsumers = 256;
constexpr int kThreads = 384;
constexpr int kMaxStages = 6;
constexpr uint32_t kPoison = 0xAAAAAAAAu;  // f16 0xAAAA (-0.0529): no value of A, B or C

// per consumer thread: mismatch count, elements checked, rounds finished, then its first
// mismatch: round, stage, tile (0 A, 1 B), absolute shared address, byte from the ring's base,
// row, column, expected value, found f16 bits
constexpr int kRec = 12;
// per CTA: timed-out flag, role (0 producer, 1 consumer), round, stage, barrier (0 full, 1 empty),
// thread, parity, timeouts, aborted waits, k-tiles the producer issued
constexpr int kHang = 10;

struct WsParams {
  int m, n, stages, k_tiles, consumer_start_phase, producer_start_phase, expect_tx_delta, empty_count_delta,
      release_early, sleep_ns, smem_offset, consumer_relative, cluster, mc_mask, watchdog_ms;
};

__host__ __device__ inline int val_a(int m, int k) { return (m * 131 + k * 7) % 2039; }
__host__ __device__ inline int val_b(int n, int k) { return (n * 37 + k * 11 + 1000) % 2039; }
__host__ __device__ inline int val_c(int t, int r, int c) { return (t * 97 + r * 61 + c * 5) % 2039; }

__device__ __forceinline__ uint16_t f16_bits(int v) { return __half_as_ushort(__int2half_rn(v)); }
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// the 128-byte swizzle (Swizzle<3,4,3> on bytes): bits 4-6 ^= bits 7-9
__host__ __device__ __forceinline__ uint32_t sw128(uint32_t a) { return a ^ (((a >> 7) & 7u) << 4); }

__device__ __forceinline__ uint64_t gtimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void bar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ bool bar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ void bar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// arrive on the barrier at the same shared offset in CTA `cta` of the cluster
__device__ __forceinline__ void bar_arrive_cluster(uint32_t bar, uint32_t cta) {
  asm volatile(
      "{\n\t.reg .b32 ra;\n\tmapa.shared::cluster.u32 ra, %0, %1;\n\t"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n\t}" ::"r"(bar),
      "r"(cta)
      : "memory");
}
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void tma_load_mc(uint32_t dst, const CUtensorMap* map, uint32_t bar, uint16_t mask, int c0,
                                            int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%4, %5}], [%2], %3;" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "h"(mask), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void tma_store(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ uint4 lds128(uint32_t a) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(a)
               : "memory");
  return v;
}
__device__ __forceinline__ void sts128(uint32_t a, uint4 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

struct Watch {
  volatile int* abort_flag;  // shared: a waiter of this CTA timed out
  int* hang;                 // this CTA's hang record
  uint64_t limit_ns;
};

// mbarrier.try_wait.parity until the phase of parity `parity` has completed, the CTA aborts, or
// the watchdog fires; false unless the phase completed
__device__ bool watch_wait(const Watch& w, uint32_t bar, uint32_t parity, int role, int round, int stage, int kind) {
  if (bar_try_wait(bar, parity)) return true;
  const uint64_t t0 = gtimer();
  while (true) {
    if (bar_try_wait(bar, parity)) return true;
    if (*w.abort_flag) {
      atomicAdd(&w.hang[8], 1);
      return false;
    }
    if (gtimer() - t0 > w.limit_ns) {
      atomicAdd(&w.hang[7], 1);
      if (atomicCAS(&w.hang[0], 0, 1) == 0) {
        w.hang[1] = role;
        w.hang[2] = round;
        w.hang[3] = stage;
        w.hang[4] = kind;
        w.hang[5] = threadIdx.x;
        w.hang[6] = parity;
      }
      *w.abort_flag = 1;
      return false;
    }
  }
}

__global__ void __launch_bounds__(kThreads, 1)
    ws(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, WsParams p,
       int* thread_rec, int* hang_rec) {
  extern __shared__ uint8_t raw[];
  __shared__ alignas(8) uint64_t full[kMaxStages], empty[kMaxStages];
  __shared__ volatile int abort_flag;
  const int tid = threadIdx.x;
  const int cta = blockIdx.y * gridDim.x + blockIdx.x;
  const uint32_t cs = p.cluster;
  const uint32_t rank = cs > 1 ? cluster_rank() : 0;
  const uint32_t ring = ((smem_u32(raw) + 1023u) & ~1023u) + p.smem_offset;
  const int m0 = blockIdx.x * kTileM, n0 = blockIdx.y * kTileN;
  Watch w{&abort_flag, hang_rec + cta * kHang, uint64_t(p.watchdog_ms) * 1000000ull};

  // poison the ring so that a read before the data lands is seen; the fence orders these generic
  // writes before the TMA (async proxy) writes to the same bytes
  for (int i = tid; i < p.stages * kStageBytes / 16; i += kThreads)
    sts128(ring + 16 * i, make_uint4(kPoison, kPoison, kPoison, kPoison));
  if (tid == 0) {
    abort_flag = 0;
    for (int s = 0; s < p.stages; ++s) {
      bar_init(smem_u32(&full[s]), 1);
      bar_init(smem_u32(&empty[s]), kConsumers * int(cs) + p.empty_count_delta);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  if (cs > 1) cluster_sync();  // the peer's barriers are initialised before anyone multicasts or arrives
  else __syncthreads();

  if (tid == 0) {
    // producer (CUTLASS's PipelineState: stage, phase; the producer starts at phase 1)
    int stage = 0, issued = 0;
    uint32_t phase = p.producer_start_phase;
    for (int k = 0; k < p.k_tiles; ++k, ++issued) {
      if (!watch_wait(w, smem_u32(&empty[stage]), phase, 0, k, stage, 1)) break;
      const uint32_t fb = smem_u32(&full[stage]);
      bar_arrive_expect_tx(fb, uint32_t(kStageBytes + p.expect_tx_delta));
      const uint32_t sa = ring + stage * kStageBytes, sb = sa + kTileBytes;
      tma_load(sa, &map_a, fb, k * kTileK, m0);
      if (cs == 1) {
        tma_load(sb, &map_b, fb, k * kTileK, n0);
      } else {
        // this CTA's 128/cs rows of B, to the same offset in every CTA of the mask
        tma_load_mc(sb + rank * (kTileBytes / cs), &map_b, fb, uint16_t(p.mc_mask), k * kTileK,
                    n0 + int(rank) * (kTileN / int(cs)));
      }
      if (++stage == p.stages) {
        stage = 0;
        phase ^= 1;
      }
    }
    w.hang[9] = issued;
  } else if (tid >= 128) {
    // consumers (start at phase 0)
    const int ct = tid - 128;
    int* rec = thread_rec + (size_t(cta) * kConsumers + ct) * kRec;
    int count = 0, checked = 0, rounds = 0;
    int first[9] = {-1, -1, -1, -1, -1, -1, -1, -1, -1};
    int stage = 0;
    uint32_t phase = p.consumer_start_phase;
    auto release = [&](int s) {
      const uint32_t eb = smem_u32(&empty[s]);
      if (cs == 1) {
        bar_arrive(eb);
      } else {
        for (uint32_t q = 0; q < cs; ++q) bar_arrive_cluster(eb, q);
      }
    };
    for (int k = 0; k < p.k_tiles; ++k) {
      if (!watch_wait(w, smem_u32(&full[stage]), phase, 1, k, stage, 0)) break;
      if (p.release_early) {
        release(stage);
        __nanosleep(p.sleep_ns);
      }
      const uint32_t sa = ring + stage * kStageBytes;
#pragma unroll 1
      for (int tile = 0; tile < 2; ++tile) {
        const uint32_t tb = sa + tile * kTileBytes;
        const int g0 = tile == 0 ? m0 : n0;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int c = ct + kConsumers * i, row = c >> 3, j = c & 7;
          const uint32_t off = row * 128 + j * 16;  // the logical (unswizzled) byte in the tile
          const uint32_t addr = p.consumer_relative ? tb + sw128(off) : sw128(tb + off);
          const uint4 v = lds128(addr);
          const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            const int col = j * 8 + e, gk = k * kTileK + col;
            const int want = tile == 0 ? val_a(g0 + row, gk) : val_b(g0 + row, gk);
            const uint32_t got = (words[e >> 1] >> (16 * (e & 1))) & 0xffffu;
            ++checked;
            if (got != f16_bits(want)) {
              if (count++ == 0) {
                // the element's own byte: the chunk's address plus its place in the chunk
                const int f[9] = {k,   stage, tile, int(addr + 2 * e), int(addr + 2 * e - ring),
                                  row, col,   want, int(got)};
                for (int q = 0; q < 9; ++q) first[q] = f[q];
              }
            }
          }
        }
      }
      if (!p.release_early) release(stage);
      ++rounds;
      if (++stage == p.stages) {
        stage = 0;
        phase ^= 1;
      }
    }
    rec[0] = count;
    rec[1] = checked;
    rec[2] = rounds;
    for (int q = 0; q < 9; ++q) rec[3 + q] = first[q];
  }
  __syncwarp();
  // a CTA leaves only when the cluster is done with its barriers and shared memory
  if (cs > 1) cluster_sync();
}

// The store epilogue: a persistent loop over 64x64 f16 tiles of C (64 * tiles rows x 64 columns).
// Per tile: 128 threads st.shared the tile (128-byte swizzle of the absolute address: what the TMA
// store reads), [fence.proxy.async.shared::cta], bar.sync 1, thread 0 stores it with the TMA and
// waits until the shared source has been read (wait_group.read 0), bar.sync 1 (sC free again).
__global__ void __launch_bounds__(128) store(const __grid_constant__ CUtensorMap map_c, int tiles, int fence) {
  extern __shared__ uint8_t raw[];
  const uint32_t sc = (smem_u32(raw) + 1023u) & ~1023u;
  const int tid = threadIdx.x;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = tid + 128 * i, row = c >> 3, j = c & 7;
      uint32_t words[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = j * 8 + 2 * e;
        words[e] = uint32_t(f16_bits(val_c(t, row, col))) | (uint32_t(f16_bits(val_c(t, row, col + 1))) << 16);
      }
      sts128(sw128(sc + row * 128 + j * 16), make_uint4(words[0], words[1], words[2], words[3]));
    }
    if (fence) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync 1, 128;" ::: "memory");
    if (tid == 0) {
      tma_store(&map_c, sc, 0, t * 64);
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    asm volatile("bar.sync 1, 128;" ::: "memory");
  }
  if (tid == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// ---- host ----

using Params = std::map<std::string, long long>;

bool read_case(const char* path, const char* name, std::string& kernel, Params& params) {
  FILE* f = fopen(path, "r");
  if (!f) return false;
  char line[4096];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) {
    char* save = nullptr;
    char* tok = strtok_r(line, " \t\r\n", &save);
    if (!tok || strcmp(tok, name) != 0) continue;
    tok = strtok_r(nullptr, " \t\r\n", &save);
    if (!tok) break;
    kernel = tok;
    while ((tok = strtok_r(nullptr, " \t\r\n", &save))) {
      char* eq = strchr(tok, '=');
      if (!eq) continue;
      *eq = 0;
      params[tok] = strtoll(eq + 1, nullptr, 0);
    }
    found = true;
  }
  fclose(f);
  return found;
}

// key=value overrides from the command line (run.sh's sanitizer runs: fewer k-tiles, a longer
// watchdog); a key the case does not have is an error
bool apply_overrides(int argc, char** argv, int from, Params& params) {
  for (int i = from; i < argc; ++i) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    if (eq == std::string::npos || !params.count(a.substr(0, eq))) {
      fprintf(stderr, "bad override %s\n", argv[i]);
      return false;
    }
    params[a.substr(0, eq)] = strtoll(a.c_str() + eq + 1, nullptr, 0);
  }
  return true;
}

double f16_value(uint32_t h) {
  const int s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0    ? m / 1024.0 / 16384.0
             : e == 31 ? (m ? 0.0 / 0.0 : 1.0 / 0.0)
                       : (1 + m / 1024.0) * double(1 << e) / 32768.0;
  return s ? -v : v;
}

std::string num(double v) {
  if (v != v) return "\"nan\"";
  if (v == 1.0 / 0.0 || v == -1.0 / 0.0) return v > 0 ? "\"inf\"" : "\"-inf\"";
  char b[64];
  snprintf(b, sizeof b, "%.9g", v);
  return b;
}

std::string params_json(const Params& params) {
  std::string s = "{";
  for (auto& [k, v] : params) s += (s.size() > 1 ? ", \"" : "\"") + k + "\": " + std::to_string(v);
  return s + "}";
}

void print_error(const char* name, const std::string& kernel, const Params& params, const char* what,
                 cudaError_t e) {
  printf("{\"case\": \"%s\", \"kernel\": \"%s\", \"params\": %s, \"status\": \"error\", \"error\": \"%s: %s (%d)\"}\n",
         name, kernel.c_str(), params_json(params).c_str(), what, cudaGetErrorName(e), int(e));
}

CUresult encode(CUtensorMap* map, void* g, uint64_t inner, uint64_t outer, uint32_t box_inner, uint32_t box_outer) {
  cuuint64_t dims[2] = {inner, outer}, strides[1] = {inner * 2};
  cuuint32_t box[2] = {box_inner, box_outer}, estr[2] = {1, 1};
  return cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, g, dims, strides, box, estr,
                                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

uint16_t host_f16(int v) {  // exact for 0 <= v < 2048
  if (v == 0) return 0;
  int e = 0;
  while ((v >> e) > 1) ++e;
  const uint32_t mant = (uint32_t(v) << (10 - e)) & 1023u;
  return uint16_t(((e + 15) << 10) | mant);
}

int run_ws(const char* name, const std::string& kernel, const Params& params) {
  WsParams p{};
  auto g = [&](const char* k) { return int(params.at(k)); };
  p.m = g("m"), p.n = g("n"), p.stages = g("stages"), p.k_tiles = g("k_tiles");
  p.consumer_start_phase = g("consumer_start_phase"), p.producer_start_phase = g("producer_start_phase");
  p.expect_tx_delta = g("expect_tx_delta"), p.empty_count_delta = g("empty_count_delta");
  p.release_early = g("release_early"), p.sleep_ns = g("sleep_ns"), p.smem_offset = g("smem_offset");
  p.consumer_relative = g("consumer_relative"), p.cluster = g("cluster"), p.mc_mask = g("mc_mask");
  p.watchdog_ms = g("watchdog_ms");
  if (p.stages < 1 || p.stages > kMaxStages || p.m % kTileM || p.n % kTileN || (p.m / kTileM) % p.cluster ||
      kTileN % p.cluster || p.smem_offset % 128) {
    fprintf(stderr, "%s: unsupported parameters\n", name);
    return 2;
  }
  const int K = kTileK * p.k_tiles;
  std::vector<uint16_t> ha(size_t(p.m) * K), hb(size_t(p.n) * K);
  for (int r = 0; r < p.m; ++r)
    for (int k = 0; k < K; ++k) ha[size_t(r) * K + k] = host_f16(val_a(r, k));
  for (int r = 0; r < p.n; ++r)
    for (int k = 0; k < K; ++k) hb[size_t(r) * K + k] = host_f16(val_b(r, k));
  void *da, *db;
  cudaMalloc(&da, ha.size() * 2);
  cudaMalloc(&db, hb.size() * 2);
  cudaMemcpy(da, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice);
  CUtensorMap ma, mb;
  CUresult ra = encode(&ma, da, K, p.m, kTileK, kTileM);
  CUresult rb = encode(&mb, db, K, p.n, kTileK, kTileN / p.cluster);  // cluster: each CTA loads its share
  if (ra != CUDA_SUCCESS || rb != CUDA_SUCCESS) {
    fprintf(stderr, "%s: cuTensorMapEncodeTiled %d %d\n", name, int(ra), int(rb));
    return 2;
  }
  const dim3 grid(p.m / kTileM, p.n / kTileN);
  const int ctas = grid.x * grid.y;
  int *d_rec, *d_hang;
  cudaMalloc(&d_rec, size_t(ctas) * kConsumers * kRec * 4);
  cudaMalloc(&d_hang, size_t(ctas) * kHang * 4);
  cudaMemset(d_rec, 0, size_t(ctas) * kConsumers * kRec * 4);
  cudaMemset(d_hang, 0, size_t(ctas) * kHang * 4);
  const int smem = p.stages * kStageBytes + 1024 + p.smem_offset;
  cudaFuncSetAttribute(ws, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = p.cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = p.cluster > 1 ? 1 : 0;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0);
  cudaError_t err = cudaLaunchKernelEx(&cfg, ws, ma, mb, p, d_rec, d_hang);
  if (err != cudaSuccess) {
    print_error(name, kernel, params, "launch", err);
    return 0;
  }
  cudaEventRecord(e1);
  err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    print_error(name, kernel, params, "kernel", err);
    return 0;
  }
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  std::vector<int> rec(size_t(ctas) * kConsumers * kRec), hang(size_t(ctas) * kHang);
  cudaMemcpy(rec.data(), d_rec, rec.size() * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(hang.data(), d_hang, hang.size() * 4, cudaMemcpyDeviceToHost);

  // the case's first mismatch: the lowest round, then CTA, then thread
  long long mismatches = 0, checked = 0;
  int best = -1, hung = -1;
  std::string per_cta = "[";
  for (int c = 0; c < ctas; ++c) {
    long long cm = 0, cc = 0;
    int rounds_min = 1 << 30, rounds_max = 0, cbest = -1;
    for (int t = 0; t < kConsumers; ++t) {
      const int* r = &rec[(size_t(c) * kConsumers + t) * kRec];
      cm += r[0];
      cc += r[1];
      rounds_min = std::min(rounds_min, r[2]);
      rounds_max = std::max(rounds_max, r[2]);
      if (r[0] && (cbest < 0 || r[3] < rec[size_t(cbest) * kRec + 3])) cbest = c * kConsumers + t;
    }
    mismatches += cm;
    checked += cc;
    if (cbest >= 0 && (best < 0 || rec[size_t(cbest) * kRec + 3] < rec[size_t(best) * kRec + 3])) best = cbest;
    const int* h = &hang[size_t(c) * kHang];
    if (h[0] && hung < 0) hung = c;
    char b[512];
    snprintf(b, sizeof b,
             "%s{\"cta\": %d, \"mismatches\": %lld, \"checked\": %lld, \"producer_issued\": %d, "
             "\"consumer_rounds_min\": %d, \"consumer_rounds_max\": %d, \"timed_out\": %d, \"timeouts\": %d, "
             "\"aborted_waits\": %d}",
             c ? ", " : "", c, cm, cc, h[9], rounds_min, rounds_max, h[0], h[7], h[8]);
    per_cta += b;
  }
  per_cta += "]";
  const char* status = hung >= 0 ? "hang" : mismatches ? "wrong" : "ok";
  std::string first = "null", hang_s = "null";
  if (best >= 0) {
    const int* r = &rec[size_t(best) * kRec];
    const int cta = best / kConsumers, thread = 128 + best % kConsumers;
    char b[768];
    snprintf(b, sizeof b,
             "{\"cta\": %d, \"round\": %d, \"stage\": %d, \"warp\": %d, \"thread\": %d, \"tile\": \"%s\", "
             "\"smem_byte\": %d, \"ring_byte\": %d, \"row\": %d, \"col\": %d, \"expected\": %d, \"found\": %s, "
             "\"found_bits\": \"0x%04x\"}",
             cta, r[3], r[4], thread / 32, thread, r[5] ? "B" : "A", r[6], r[7], r[8], r[9], r[10],
             num(f16_value(uint32_t(r[11]))).c_str(), r[11]);
    first = b;
  }
  if (hung >= 0) {
    const int* h = &hang[size_t(hung) * kHang];
    char b[256];
    snprintf(b, sizeof b,
             "{\"cta\": %d, \"role\": \"%s\", \"round\": %d, \"stage\": %d, \"barrier\": \"%s\", \"thread\": %d, "
             "\"parity\": %d}",
             hung, h[1] ? "consumer" : "producer", h[2], h[3], h[4] ? "empty" : "full", h[5], h[6]);
    hang_s = b;
  }
  printf("{\"case\": \"%s\", \"kernel\": \"%s\", \"params\": %s, \"status\": \"%s\", \"mismatches\": %lld, "
         "\"checked\": %lld, \"expected_checks\": %lld, \"kernel_ms\": %.3f, \"first_mismatch\": %s, \"hang\": %s, "
         "\"ctas\": %s}\n",
         name, kernel.c_str(), params_json(params).c_str(), status, mismatches, checked,
         (long long)ctas * p.k_tiles * 2 * kTileM * kTileK, ms, first.c_str(), hang_s.c_str(), per_cta.c_str());
  return 0;
}

int run_store(const char* name, const std::string& kernel, const Params& params) {
  const int tiles = int(params.at("tiles")), fence = int(params.at("fence")), launches = int(params.at("launches"));
  int ctas = int(params.at("ctas"));
  if (ctas == 0) {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    ctas = 2 * sms;
  }
  const size_t elems = size_t(tiles) * 64 * 64;
  void* dc;
  cudaMalloc(&dc, elems * 2);
  CUtensorMap mc;
  if (encode(&mc, dc, 64, uint64_t(tiles) * 64, 64, 64) != CUDA_SUCCESS) return 2;
  cudaFuncSetAttribute(store, cudaFuncAttributeMaxDynamicSharedMemorySize, 8192 + 1024);
  std::vector<uint16_t> want(elems), got(elems);
  for (int t = 0; t < tiles; ++t)
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 64; ++c) want[(size_t(t) * 64 + r) * 64 + c] = host_f16(val_c(t, r, c));
  long long wrong = 0, wrong_tiles = 0, stale = 0;
  std::string first = "null";
  for (int l = 0; l < launches; ++l) {
    cudaMemset(dc, 0xff, elems * 2);  // f16 0xffff (NaN): no tile value
    store<<<ctas, 128, 8192 + 1024>>>(mc, tiles, fence);
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
      print_error(name, kernel, params, "kernel", err);
      return 0;
    }
    cudaMemcpy(got.data(), dc, elems * 2, cudaMemcpyDeviceToHost);
    for (int t = 0; t < tiles; ++t) {
      long long tw = 0;
      for (int i = 0; i < 64 * 64; ++i) {
        const size_t x = size_t(t) * 4096 + i;
        if (got[x] == want[x]) continue;
        ++tw;
        // the value this CTA's previous tile had there: the TMA read sC before the new writes
        if (t >= ctas && got[x] == want[x - size_t(ctas) * 4096]) ++stale;
        if (first == "null") {
          char b[256];
          snprintf(b, sizeof b,
                   "{\"launch\": %d, \"tile\": %d, \"row\": %d, \"col\": %d, \"expected\": %d, \"found\": %s, "
                   "\"found_bits\": \"0x%04x\"}",
                   l, t, i / 64, i % 64, val_c(t, i / 64, i % 64), num(f16_value(got[x])).c_str(), got[x]);
          first = b;
        }
      }
      wrong += tw;
      wrong_tiles += tw > 0;
    }
  }
  printf("{\"case\": \"%s\", \"kernel\": \"%s\", \"params\": %s, \"status\": \"%s\", \"mismatches\": %lld, "
         "\"ctas_launched\": %d, \"tiles_checked\": %lld, \"tiles_wrong\": %lld, \"stale_elements\": %lld, "
         "\"first_mismatch\": %s, \"hang\": null}\n",
         name, kernel.c_str(), params_json(params).c_str(), wrong ? "wrong" : "ok", wrong, ctas,
         (long long)tiles * launches, wrong_tiles, stale, first.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s cases.txt CASE [key=value ...]\n", argv[0]);
    return 2;
  }
  std::string kernel;
  Params params;
  if (!read_case(argv[1], argv[2], kernel, params)) {
    fprintf(stderr, "no case %s in %s\n", argv[2], argv[1]);
    return 2;
  }
  if (!apply_overrides(argc, argv, 3, params)) return 2;
  cuInit(0);
  if (kernel == "ws") return run_ws(argv[2], kernel, params);
  if (kernel == "store") return run_store(argv[2], kernel, params);
  fprintf(stderr, "%s: kernel %s is not ws_pipeline's\n", argv[2], kernel.c_str());
  return 2;
}
