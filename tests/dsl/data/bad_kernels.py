"""CuTe DSL kernels and launchers that are bad input to ``threadmap diff --dsl`` (written for
threadmap's tests): a kernel and a launcher that raise, a launcher that calls ``sys.exit``,
launchers with ``*args``, keyword-only and defaulted parameters, a loop too long to trace, and a
kernel whose every store lands outside its tensor.
Each copies row 0 of ``mA`` to ``mC`` (one element per thread), where it copies anything."""

import sys

import cutlass
import cutlass.cute as cute


@cute.kernel
def raising_kernel(mA: cute.Tensor, mC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    raise ValueError("the kernel raised")


@cute.jit
def raising(mA: cute.Tensor, mC: cute.Tensor):
    raising_kernel(mA, mC).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.jit
def exits(mA: cute.Tensor, mC: cute.Tensor):
    sys.exit(0)


@cute.jit
def varargs(*args):
    pass


@cute.kernel
def row_kernel(mA: cute.Tensor, mC: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx < n:
        mC[0, tidx] = mA[0, tidx]


@cute.jit
def keyword_only(mA: cute.Tensor, *, mC: cute.Tensor, n: cutlass.Int32 = 8):
    row_kernel(mA, mC, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.jit
def skipped_default(mA: cute.Tensor, mC: cute.Tensor, k: cutlass.Constexpr = 1, n: cutlass.Int32 = 8):
    row_kernel(mA, mC, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.kernel
def long_loop_kernel(mA: cute.Tensor, mC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    for _i in range(256):
        mC[0, tidx] = mA[0, tidx]


@cute.jit
def long_loop(mA: cute.Tensor, mC: cute.Tensor):
    long_loop_kernel(mA, mC).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.kernel
def outside_kernel(mA: cute.Tensor, mC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    mC[0, tidx - 100] = mA[0, tidx]  # every store lands before mC


@cute.jit
def outside(mA: cute.Tensor, mC: cute.Tensor):
    outside_kernel(mA, mC).launch(grid=[1, 1, 1], block=[32, 1, 1])
