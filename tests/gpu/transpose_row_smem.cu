// A user's CuTe kernel, instrumented with threadmap_probe.h: the transpose through shared
// memory of specs/cute_transpose/row_smem.yaml (256 threads, 16 x 16 tiles, row-major thread
// layouts, bounds predicates).  With -DTHREADMAP_BUG the first stage's thread layout is
// column-major: `threadmap diff` must show the moved coordinates.
#include <cute/tensor.hpp>
#include <threadmap_probe.h>
using namespace cute;

extern "C" __global__ void transpose_row_smem(const float* x, float* y, int M, int N) {
  auto X = make_tensor(make_gmem_ptr(x), make_layout(make_shape(M, N), GenRowMajor{}));
  auto Y = make_tensor(make_gmem_ptr(y), make_layout(make_shape(N, M), GenRowMajor{}));
  __shared__ float smem[16 * 16];
  auto sA = make_tensor(make_smem_ptr(smem), make_layout(make_shape(Int<16>{}, Int<16>{}), GenRowMajor{}));
  auto sB = make_tensor(make_smem_ptr(smem), make_layout(make_shape(Int<16>{}, Int<16>{}), GenColMajor{}));
  auto tile = make_shape(Int<16>{}, Int<16>{});
  auto gX = local_tile(X, tile, make_coord(blockIdx.x, blockIdx.y));
  auto cX = local_tile(make_identity_tensor(shape(X)), tile, make_coord(blockIdx.x, blockIdx.y));
  auto gY = local_tile(Y, tile, make_coord(blockIdx.y, blockIdx.x));
  auto cY = local_tile(make_identity_tensor(shape(Y)), tile, make_coord(blockIdx.y, blockIdx.x));
  auto thr = make_layout(make_shape(Int<16>{}, Int<16>{}), GenRowMajor{});
#ifdef THREADMAP_BUG
  auto thr0 = make_layout(make_shape(Int<16>{}, Int<16>{}), GenColMajor{});
#else
  auto thr0 = thr;
#endif
  auto tXgX = local_partition(gX, thr0, threadIdx.x);
  auto tXcX = local_partition(cX, thr0, threadIdx.x);
  auto tXsA = local_partition(sA, thr, threadIdx.x);
  for (int i = 0; i < size(tXgX); ++i) {
    if (elem_less(tXcX(i), shape(X))) {
      tXsA(i) = tXgX(i);
      THREADMAP_PROBE(0, i, i, get<0>(tXcX(i)), get<1>(tXcX(i)));
    }
  }
  __syncthreads();
  auto tYsB = local_partition(sB, thr, threadIdx.x);
  auto tYgY = local_partition(gY, thr, threadIdx.x);
  auto tYcY = local_partition(cY, thr, threadIdx.x);
  for (int i = 0; i < size(tYgY); ++i) {
    if (elem_less(tYcY(i), shape(Y))) {
      tYgY(i) = tYsB(i);
      THREADMAP_PROBE(2, i, i, get<0>(tYcY(i)), get<1>(tYcY(i)));
    }
  }
}
