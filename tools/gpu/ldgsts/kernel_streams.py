"""The warp instruction streams of the confirmed sweep kernels' cp.async stages, from threadmap's
model of their specs (tools/gpu/sweep_confirm/manifest.json): per stage, warp 0 of block 0, its
vectors in issue order, each as per-lane (global, shared) byte offsets of its first piece
(bytes 0..3) relative to the vector's first global and shared 128-byte lines.

    PYTHONPATH=. python3 tools/gpu/ldgsts/kernel_streams.py KERNEL

cases.py holds this output as literals (the device needs no numpy); the test
tests/verify/test_ldgsts_vector.py checks those literals against this derivation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

MANIFEST = Path(__file__).resolve().parents[1] / "sweep_confirm" / "manifest.json"


def target(kernel: str) -> dict[str, Any]:
    for t in json.loads(MANIFEST.read_text())["targets"]:
        if t["kernel"] == kernel:
            return t
    raise KeyError(kernel)


def stream(kernel: str) -> dict[str, Any]:
    """Per cp.async stage (by tensor): ``pieces`` (accesses per 16-byte vector), ``bytes`` (per
    access), ``instructions``: warp 0's instructions in issue order as (global, shared) lane
    lists relative to the first instruction's lines, and the ``base`` lines subtracted."""
    import numpy as np

    import threadmap.api as api
    from threadmap import hardware as hw
    from threadmap.spec.load import loads_spec

    t = target(kernel)
    tables = api.simulate(loads_spec(t["spec"], "yaml", kernel), sizes=t["sizes"], blocks=np.arange(1))
    out: dict[str, Any] = {"kernel": kernel, "sizes": t["sizes"], "stages": {}}
    for g, s in tables:
        if g.memory != "global" or s.memory != "shared":
            continue
        v, n = g.vec, g.steps  # warp 0 of block 0: the first ``steps`` instructions
        ga = g.addr[::v][: n * hw.WARP_SIZE].reshape(n, hw.WARP_SIZE)
        sa = s.addr[::v][: n * hw.WARP_SIZE].reshape(n, hw.WARP_SIZE)
        gb = int(ga.min()) // hw.LINE_BYTES * hw.LINE_BYTES
        sb = int(sa.min()) // hw.LINE_BYTES * hw.LINE_BYTES
        out["stages"][g.tensor] = {
            "bytes": g.access_bytes, "base": [gb, sb],
            "instructions": [[[int(x) - gb for x in ga[i]], [int(x) - sb for x in sa[i]]] for i in range(n)],
        }
    return out


if __name__ == "__main__":
    print(json.dumps(stream(sys.argv[1])))
