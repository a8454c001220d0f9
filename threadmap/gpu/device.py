"""The device side, through CuPy: availability, the machine's description, probe launches.

CuPy compiles with nvcc (``RawModule(backend="nvcc")``: the CuTe headers need a full C++17
front end; NVRTC also needs the CCCL include folder) and caches the binary keyed by source
and options, so a second run of the same specs does not compile.  Kernels are timed with
CUDA events.
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from threadmap.errors import ThreadmapError
from threadmap.gpu.probe import ProbeProgram, StageProbe, translation_unit
from threadmap.gpu.toolchain import build_cubin, find_tool, require


class NoDevice(ThreadmapError):
    """No usable GPU (CuPy missing, no driver, no device)."""


def available() -> tuple[bool, str]:
    """Whether a GPU can run kernels here, and if not, why."""
    try:
        import cupy
    except ImportError:
        return False, "CuPy is not installed (pip install 'threadmap[gpu]')"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - CuPy raises its own error types for a missing driver
        return False, f"no CUDA device: {e}"
    return (n > 0, "" if n > 0 else "no CUDA device")


def environment() -> dict[str, Any]:
    """GPU, driver, CUDA runtime, CuPy and nvcc versions, for reports."""
    import cupy
    rt = cupy.cuda.runtime
    props = rt.getDeviceProperties(0)
    env: dict[str, Any] = {
        "where": "device",
        "gpu": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "sm_count": int(props["multiProcessorCount"]),
        "driver": _driver_version(),
        "cuda_runtime": _cuda_version(rt.runtimeGetVersion()),
        "cuda_driver_api": _cuda_version(rt.driverGetVersion()),
        "cupy": cupy.__version__,
        "host": platform.node(),
    }
    try:
        exe, _ = require()
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout
        env["nvcc"] = out.strip().splitlines()[-1] if out.strip() else "?"
    except (ThreadmapError, OSError, subprocess.SubprocessError):
        env["nvcc"] = "not found"
    for name in ("ncu", "compute-sanitizer"):
        tool = find_tool(name)
        try:
            out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout if tool else ""
        except (OSError, subprocess.SubprocessError):
            out = ""
        env[name] = out.strip().splitlines()[-1] if out.strip() else "not found"
    return env


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def _driver_version() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=60)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "?"
    except (OSError, subprocess.SubprocessError, IndexError):
        return "?"


def arch() -> str:
    """This device's architecture, ``sm_90``."""
    import cupy
    return f"sm_{cupy.cuda.Device().compute_capability}"  # CuPy spells 9.0 as "90"


def load_module(source: str) -> tuple[Any, Path]:
    """Build (cached) and load ``source`` for this device: the module and its cubin."""
    import cupy
    cubin = build_cubin(source, arch())
    return cupy.RawModule(path=str(cubin)), cubin


def event_seconds(fn: Callable[[], Any], repeats: int = 1) -> list[float]:
    """Seconds of each of ``repeats`` calls of ``fn`` (its kernels, on the current stream), by
    CUDA events."""
    import cupy
    out = []
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        out.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return out


def run_probes(jobs: Sequence[tuple[ProbeProgram, StageProbe, np.ndarray]],
               mod: Any = None) -> tuple[list[np.ndarray], list[float]]:
    """Launch every stage probe over its blocks (one CTA per probed block); per job the
    ``(nb, T, V, W)`` records and the kernel's seconds (CUDA events).  ``mod``: a loaded module
    holding the probes (else they are compiled, cached, and loaded)."""
    import cupy
    if mod is None:
        programs = list({p.uid: p for p, _, _ in jobs}.values())
        mod, _ = load_module(translation_unit(programs))
    outs: list[np.ndarray] = []
    secs: list[float] = []
    for _, s, blocks in jobs:
        nb = int(len(blocks))
        d_blocks = cupy.asarray(np.asarray(blocks, dtype=np.int64))
        out = cupy.full(nb * s.threads * s.values * s.width, -1, dtype=cupy.int64)
        fn = mod.get_function(s.kernel)
        grid = (min(nb, 1 << 20),)
        block = (min(s.threads, 1024),)
        fn(grid, block, (d_blocks, np.int64(nb), out))  # warm-up: module load, first launch
        secs += event_seconds(partial(fn, grid, block, (d_blocks, np.int64(nb), out)))
        outs.append(cupy.asnumpy(out).reshape(nb, s.threads, s.values, s.width))
    return outs, secs
