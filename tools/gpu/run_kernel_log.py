"""Run tests/gpu/transpose_row_smem.cu on the device and print its probe log (stdout).

    python tools/gpu/run_kernel_log.py M N [bug]

The kernel's printf lines are the log `threadmap diff` reads; the script also checks the
transpose itself and says so on stderr."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from threadmap.gpu.toolchain import build_cubin


def kernel_cubin(bug: bool, arch: str) -> Path:
    """The kernel compiled (cached) for ``arch``; the bug variant defines THREADMAP_BUG."""
    src = (Path(__file__).resolve().parents[2] / "tests" / "gpu" / "transpose_row_smem.cu").read_text()
    return build_cubin(("#define THREADMAP_BUG\n" if bug else "") + src, arch)


def main() -> None:
    import cupy

    M, N = int(sys.argv[1]), int(sys.argv[2])
    bug = len(sys.argv) > 3 and sys.argv[3] == "bug"
    fn = cupy.RawModule(path=str(kernel_cubin(bug, f"sm_{cupy.cuda.Device().compute_capability}"))).get_function(
        "transpose_row_smem")
    x = cupy.arange(M * N, dtype=cupy.float32).reshape(M, N)
    y = cupy.zeros((N, M), dtype=cupy.float32)
    fn(((M + 15) // 16, (N + 15) // 16), (256,), (x, y, np.int32(M), np.int32(N)))
    cupy.cuda.Device().synchronize()
    ok = bool((cupy.asnumpy(y) == cupy.asnumpy(x).T).all())
    print(f"transpose {'correct' if ok else 'WRONG'}", file=sys.stderr)


if __name__ == "__main__":
    main()
