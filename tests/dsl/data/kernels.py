"""Small CuTe DSL kernels for the tracer's tests (written for threadmap, not NVIDIA's).

``smem_roundtrip``: a tiled copy of 128-bit vectors from global memory into a swizzled shared
tile, a barrier, then element loads and stores (an unrolled loop) from shared to global
memory through a column-major thread layout.  The others are kernels the tracer refuses.
"""

import cutlass
import cutlass.cute as cute

TILE_M, TILE_N = 16, 32


@cute.kernel
def smem_roundtrip_kernel(mX: cute.Tensor, mY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bx, _, _ = cute.arch.block_idx()
    smem = cutlass.memory.SmemAllocator()
    swizzled = cute.make_composed_layout(cute.make_swizzle(3, 2, 3), 0,
                                         cute.make_layout((TILE_M, TILE_N), stride=(TILE_N, 1)))
    sA = smem.allocate_tensor(cutlass.Float32, swizzled, 128)
    gX = cute.local_tile(mX, (TILE_M, TILE_N), (bx, 0))
    gY = cute.local_tile(mY, (TILE_M, TILE_N), (bx, 0))
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
    tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((16, 8), stride=(8, 1)), cute.make_layout((1, 4)))
    thr = tiled.get_slice(tidx)
    cute.copy(tiled, thr.partition_S(gX), thr.partition_D(sA))
    cute.arch.sync_threads()
    readers = cute.make_layout((16, 8), stride=(1, 16))
    tYsA = cute.local_partition(sA, readers, tidx)
    tYgY = cute.local_partition(gY, readers, tidx)
    for i in cutlass.range_constexpr(cute.size(tYsA)):
        tYgY[i] = tYsA[i]


@cute.jit
def smem_roundtrip(mX: cute.Tensor, mY: cute.Tensor):
    smem_roundtrip_kernel(mX, mY).launch(grid=[cute.size(mX, mode=[0]) // TILE_M, 1, 1], block=[128, 1, 1])


@cute.kernel
def branch_on_data_kernel(mX: cute.Tensor, mY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    v = mX[0, tidx]
    if v > 0.0:
        mY[0, tidx] = v


@cute.jit
def branch_on_data(mX: cute.Tensor, mY: cute.Tensor):
    branch_on_data_kernel(mX, mY).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.kernel
def runtime_extent_kernel(mX: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    view = cute.make_tensor(mX.iterator, cute.make_layout(n))
    view[tidx] = 1.0


@cute.jit
def runtime_extent(mX: cute.Tensor, n: cutlass.Int32):
    runtime_extent_kernel(mX, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.kernel
def cp_async_kernel(mX: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.memory.SmemAllocator()
    sA = smem.allocate_tensor(cutlass.Float32, cute.make_layout((32, 4), stride=(4, 1)), 16)
    atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=128)
    tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((32, 1)), cute.make_layout((1, 4)))
    thr = tiled.get_slice(tidx)
    cute.copy(tiled, thr.partition_S(mX), thr.partition_D(sA))


@cute.jit
def cp_async(mX: cute.Tensor):
    cp_async_kernel(mX).launch(grid=[1, 1, 1], block=[32, 1, 1])
