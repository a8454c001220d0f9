"""The case and result files of tools/gpu/gmma/wgmma_probe.cu (formats in its header comment).

A case is a dict: n, tnsp_a, tnsp_b (0 K-major, 1 MN-major), dtype (0 f16, 1 bf16), desc_a, desc_b
(the descriptors' start address fields relative to the 1024-byte aligned image base) and image (the
shared memory bytes). A result is a dict: status (0 ok, see STATUS), D (64 x n f32, row-major) and
raw (128 x n/2 f32: thread t's accumulator registers in order).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"GMMA"
MAX_IMAGE = 200 * 1024
THREADS = 128  # one warpgroup
STATUS = {0: "ok", 1: "bad case", 2: "start address overflow", 3: "CUDA error", 4: "hang", 5: "crash"}
_HEAD = struct.Struct("<4I2QI")  # n, tnsp_a, tnsp_b, dtype, desc_a, desc_b, image_bytes


def write_cases(path: str | Path, cases: Sequence[Mapping[str, Any]]) -> None:
    """Write ``cases`` as the probe's case file (the probe reports what it cannot run, but a
    case that breaks the file's framing is refused here)."""
    parts = [MAGIC, struct.pack("<I", len(cases))]
    for i, c in enumerate(cases):
        image = bytes(c["image"])
        n = int(c["n"])
        if n < 8 or n > 256 or n % 8:
            raise ValueError(f"case {i}: n={n} is not a multiple of 8 in [8, 256]")
        parts.append(_HEAD.pack(n, int(c["tnsp_a"]), int(c["tnsp_b"]), int(c["dtype"]),
                                int(c["desc_a"]), int(c["desc_b"]), len(image)))
        parts.append(image)
    Path(path).write_bytes(b"".join(parts))


def read_results(path: str | Path, cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The probe's output for ``cases`` (the list given to write_cases, or its first LIMIT)."""
    data = Path(path).read_bytes()
    out: list[dict[str, Any]] = []
    pos = 0
    for c in cases:
        n = int(c["n"])
        (status,) = struct.unpack_from("<I", data, pos)
        pos += 4
        d = np.frombuffer(data, dtype="<f4", count=64 * n, offset=pos).reshape(64, n)
        pos += 4 * 64 * n
        raw = np.frombuffer(data, dtype="<f4", count=THREADS * (n // 2), offset=pos).reshape(THREADS, n // 2)
        pos += 4 * THREADS * (n // 2)
        out.append({"status": status, "D": d.astype(np.float32), "raw": raw.astype(np.float32)})
    if pos != len(data):
        raise ValueError(f"{path}: {len(data) - pos} bytes left after {len(cases)} cases (wrong case list?)")
    return out
