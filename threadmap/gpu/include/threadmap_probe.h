// threadmap_probe.h -- print the accesses of your own CUDA kernel for `threadmap diff`.
//
//   #include <threadmap_probe.h>        // nvcc -I$(threadmap gpu --include-dir) ...
//
//   // inside the kernel, once per access (a tile coordinate of rank 1, 2 or 3):
//   THREADMAP_PROBE(stage, iter, value, row, col);
//
// prints one line per call, in the default format `threadmap diff` reads:
//
//   TM stage=<s> block=<bx>,<by>,<bz> tid=<t> iter=<i> value=<v> coord=<c0>,<c1>
//
// * stage: the spec's stage index (its position in `stages:`, barriers counted);
// * block: blockIdx; tid: the linear thread index in the CTA (threadIdx.x + blockDim.x *
//   (threadIdx.y + blockDim.y * threadIdx.z));
// * iter: the thread's instruction for this stage (the spec's `step`), value: the element
//   inside the fragment (the spec's value index), or -1 when you do not track it;
// * coord: the logical coordinate of the element in the tensor (not the tile).
//
// THREADMAP_PROBE1 / THREADMAP_PROBE3 take rank-1 and rank-3 coordinates, and
// THREADMAP_PROBE_IF(cond, stage, iter, value, c0[, c1[, c2]]) prints only when cond holds
// (the access's predicate: print exactly the accesses the kernel performs).  Defining
// THREADMAP_PROBE_OFF compiles every probe to nothing.  printf's buffer holds 1 MiB by
// default: raise it with cudaDeviceSetLimit(cudaLimitPrintfFifoSize, bytes) for big grids.
#pragma once
#include <cstdio>

#ifdef THREADMAP_PROBE_OFF
#define THREADMAP_PROBE_IF(cond, stage, iter, value, ...) ((void)0)
#define THREADMAP_PROBE1(stage, iter, value, c0) ((void)0)
#define THREADMAP_PROBE(stage, iter, value, c0, c1) ((void)0)
#define THREADMAP_PROBE3(stage, iter, value, c0, c1, c2) ((void)0)
#else
#define THREADMAP_PROBE_TID_ \
  ((long long)threadIdx.x + (long long)blockDim.x * ((long long)threadIdx.y + (long long)blockDim.y * threadIdx.z))
#define THREADMAP_PROBE1(stage, iter, value, c0)                                                  \
  printf("TM stage=%d block=%u,%u,%u tid=%lld iter=%lld value=%lld coord=%lld\n", (int)(stage),   \
         blockIdx.x, blockIdx.y, blockIdx.z, THREADMAP_PROBE_TID_, (long long)(iter),             \
         (long long)(value), (long long)(c0))
#define THREADMAP_PROBE(stage, iter, value, c0, c1)                                               \
  printf("TM stage=%d block=%u,%u,%u tid=%lld iter=%lld value=%lld coord=%lld,%lld\n",            \
         (int)(stage), blockIdx.x, blockIdx.y, blockIdx.z, THREADMAP_PROBE_TID_,                  \
         (long long)(iter), (long long)(value), (long long)(c0), (long long)(c1))
#define THREADMAP_PROBE3(stage, iter, value, c0, c1, c2)                                          \
  printf("TM stage=%d block=%u,%u,%u tid=%lld iter=%lld value=%lld coord=%lld,%lld,%lld\n",       \
         (int)(stage), blockIdx.x, blockIdx.y, blockIdx.z, THREADMAP_PROBE_TID_,                  \
         (long long)(iter), (long long)(value), (long long)(c0), (long long)(c1), (long long)(c2))
// picks THREADMAP_PROBE1, THREADMAP_PROBE or THREADMAP_PROBE3 by the number of coordinates
#define THREADMAP_PROBE_PICK_(_1, _2, _3, NAME, ...) NAME
#define THREADMAP_PROBE_IF(cond, stage, iter, value, ...)                                         \
  do {                                                                                            \
    if (cond) {                                                                                   \
      THREADMAP_PROBE_PICK_(__VA_ARGS__, THREADMAP_PROBE3, THREADMAP_PROBE, THREADMAP_PROBE1, _)  \
      (stage, iter, value, __VA_ARGS__);                                                          \
    }                                                                                             \
  } while (0)
#endif
