"""``verify --kernel``: reading a compiled kernel, cold (compile + disassemble) beside warm
(both cached), in one process.

    python benchmarks/bench_kernel_read.py                       # the CuTe transpose example
    python benchmarks/bench_kernel_read.py FILE.cu KERNEL_NAME

Cold uses a fresh, empty THREADMAP_CACHE; warm reads the same file again.  Prints wall seconds
and CPU seconds (this process and its children: nvcc, cuobjdump, c++filt); asserts nothing.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def main() -> None:
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "examples" / "cute_transpose" / "row_rvectorized.cu"
    name = sys.argv[2] if len(sys.argv) > 2 else "mat_transpose_cute_smem_vectorized_kernel"
    with tempfile.TemporaryDirectory(prefix="threadmap_bench_") as tmp:
        os.environ["THREADMAP_CACHE"] = tmp
        from threadmap.gpu.compiled import load_kernel
        for label in ("cold", "warm", "warm"):
            w, c = time.perf_counter(), cpu()
            k = load_kernel(src, name, "sm_90")
            print(f"{label}: {time.perf_counter() - w:7.2f} s wall, {cpu() - c:7.2f} s CPU  "
                  f"({len(k.memory())} memory instructions of {k.demangled.split('<')[0] or k.name})", flush=True)


if __name__ == "__main__":
    main()
