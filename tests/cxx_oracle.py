"""Compile and run host-side C++ against the real CUTLASS/CuTe headers (the C++ oracle).

The headers come from the PyPI package ``nvidia-cutlass`` (``cutlass_library/source/include``).
A program is compiled once per batch with ``nvcc -std=c++17`` (about 10 s) and run on the
CPU; its stdout is returned.  Binaries are cached by source hash under ``.cxx_cache/`` so a
re-run of the suite does not recompile unchanged programs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("THREADMAP_CXX_CACHE", ROOT / ".cxx_cache"))


def cutlass_include() -> Path | None:
    try:
        import cutlass_library
    except ImportError:
        return None
    inc = Path(cutlass_library.__file__).resolve().parent / "source" / "include"
    return inc if (inc / "cute" / "tensor.hpp").exists() else None


def nvcc() -> str | None:
    return shutil.which("nvcc") or (
        "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None
    )


def require_oracle() -> tuple[str, Path]:
    """Skip the calling test, with the reason, when nvcc or the headers are absent."""
    exe = nvcc()
    if exe is None:
        pytest.skip("nvcc not found: the C++ header oracle cannot be compiled on this machine")
    inc = cutlass_include()
    if inc is None:
        pytest.skip("nvidia-cutlass (CUTLASS headers) is not installed")
    return exe, inc


PRELUDE = """
#include <cstdio>
#include <cute/tensor.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cutlass/transform/pitch_linear_thread_map.h>
using namespace cute;
"""


def run_cxx(body: str, *, prelude: str = PRELUDE, timeout: int = 600) -> str:
    """Compile ``prelude + body`` (which must define ``main``) and return its stdout."""
    exe, inc = require_oracle()
    src = prelude + "\n" + body
    key = hashlib.sha256((src + str(inc)).encode()).hexdigest()[:20]
    CACHE.mkdir(parents=True, exist_ok=True)
    binary = CACHE / f"prog_{key}"
    if not binary.exists():
        cu = CACHE / f"prog_{key}.cu"
        cu.write_text(src)
        tmp = CACHE / f"prog_{key}.tmp{os.getpid()}"
        proc = subprocess.run(
            [exe, "-std=c++17", "-O0", "-w", f"-I{inc}", "-x", "c++", str(cu), "-o", str(tmp)],
            capture_output=True, text=True, timeout=timeout,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"nvcc failed on {cu}:\n{proc.stderr[-6000:]}")
        tmp.replace(binary)
    out = subprocess.run([str(binary)], capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{binary} exited {out.returncode}: {out.stderr[-2000:]}")
    return out.stdout
