"""Compile, here, every module the device run needs, into $THREADMAP_CACHE (default .tmcache),
so the GPU machine loads cubins instead of compiling (its time is short).  Run from the
repository root with the same relative spec paths the device run uses:

    THREADMAP_CACHE=.tmcache python tools/gpu/precompile.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("THREADMAP_CACHE", ".tmcache")

from threadmap.gpu.programs import build_programs, suite_source  # noqa: E402
from threadmap.gpu.toolchain import build_cubin  # noqa: E402
from tools.gpu.run_kernel_log import kernel_cubin  # noqa: E402

ARCH = "sm_90"
ONE = "specs/cute_transpose/row_smem_swizzled.yaml"
#: the device tests' own specs (tests/gpu/test_gpu_device.py), each suite()d alone
DEVICE_SPECS = ["tests/gpu/shared_read_leaves_tensor.yaml"]


def main() -> None:
    for what in (["specs/"], [ONE], *([s] for s in DEVICE_SPECS)):
        t = time.perf_counter()
        items = build_programs(what)
        print(build_cubin(suite_source(items), ARCH), f"{time.perf_counter() - t:.1f} s", flush=True)
    for bug in (False, True):
        print(kernel_cubin(bug, ARCH), flush=True)


if __name__ == "__main__":
    main()
