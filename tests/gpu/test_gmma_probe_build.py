"""tools/gpu/gmma: the wgmma probe compiles for sm_90a with every (N, dtype, A major, B major) it
claims, each kernel holding exactly the one HGMMA of its shape (read back from the compiled SASS), and
probe_io's case and result files round-trip (no GPU needed)."""

from __future__ import annotations

import itertools
import re
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.cxx_oracle import cannot_run, require_oracle
from threadmap.gpu.toolchain import find_tool
from tools.gpu.gmma.probe_io import MAGIC, THREADS, read_results, write_cases

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "tools" / "gpu" / "gmma" / "wgmma_probe.cu"
SIZES = (8, 16, 32, 64, 128, 256)  # the probe's default WGMMA_PROBE_SIZES
# probe<N, Major A, Major B, dtype> as nvcc mangles it
KERNEL = re.compile(r"_Z5probeILi(\d+)ELN4cute4SM904GMMA5MajorE(\d)ELS3_(\d)ELi(\d)E")


@pytest.fixture(scope="module")
def probe_object(tmp_path_factory: pytest.TempPathFactory) -> Path:
    exe, inc = require_oracle()
    obj = tmp_path_factory.mktemp("gmma") / "wgmma_probe.o"
    start = time.monotonic()
    r = subprocess.run([exe, "-O2", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", f"-I{inc}",
                        "-c", str(PROBE), "-o", str(obj)], capture_output=True, text=True)
    print(f"wgmma_probe.cu -c: {time.monotonic() - start:.1f} s")  # about 10 s here (2 cores)
    assert r.returncode == 0, r.stderr[-4000:]
    return obj


def test_every_instantiation_is_one_hgmma_of_its_shape(probe_object: Path) -> None:
    cuobjdump = find_tool("cuobjdump")
    if cuobjdump is None:
        cannot_run("reading the probe's SASS needs cuobjdump (pip install nvidia-cuda-cuobjdump)")
    sass = subprocess.run([cuobjdump, "-sass", str(probe_object)], capture_output=True, text=True,
                          check=True).stdout
    found: dict[tuple[int, int, int, int], list[list[str]]] = {}
    for body in sass.split("Function : ")[1:]:
        m = KERNEL.match(body)
        assert m, body.splitlines()[0]
        key = (int(m[1]), int(m[2]), int(m[3]), int(m[4]))
        # "/*0770*/  HGMMA.64x8x16.F32 R24, gdesc[UR4].tnspB, RZ, !UPT, gsb0 ;  /* 0x... */"
        found[key] = [line.split("*/", 1)[1].split("/*")[0].split() for line in body.splitlines() if "HGMMA" in line]
    assert set(found) == set(itertools.product(SIZES, (0, 1), (0, 1), (0, 1)))
    for (n, ta, tb, dt), hgmmas in found.items():
        assert len(hgmmas) == 1, (n, ta, tb, dt)
        op, _acc, desc, *_ = hgmmas[0]
        assert op == f"HGMMA.64x{n}x16.F32" + (".BF16" if dt else "")
        # the template's Major::MN is the instruction's transpose bit for that operand
        assert (".tnspA" in desc, ".tnspB" in desc) == (bool(ta), bool(tb)), (n, ta, tb, dt, desc)


def _cases() -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    return [{"n": n, "tnsp_a": i % 2, "tnsp_b": (i // 2) % 2, "dtype": i % 3 % 2,
             "desc_a": int(rng.integers(0, 2**63)), "desc_b": (1 << 62) | i,
             "image": rng.integers(0, 256, 16 * (i + 1), dtype=np.uint8).tobytes()}
            for i, n in enumerate((8, 16, 24, 256, 64))]


def test_case_file_layout(tmp_path: Path) -> None:
    cases = _cases()
    path = tmp_path / "cases.bin"
    write_cases(path, cases)
    data = path.read_bytes()
    assert data[:4] == MAGIC and struct.unpack_from("<I", data, 4) == (len(cases),)
    pos = 8
    for c in cases:
        n, ta, tb, dt, da, db, size = struct.unpack_from("<IIIIQQI", data, pos)
        assert (n, ta, tb, dt, da, db) == (c["n"], c["tnsp_a"], c["tnsp_b"], c["dtype"], c["desc_a"], c["desc_b"])
        pos += 36
        assert data[pos:pos + size] == c["image"]
        pos += size
    assert pos == len(data)
    with pytest.raises(ValueError, match="multiple of 8"):
        write_cases(path, [{**cases[0], "n": 12}])


def test_results_round_trip(tmp_path: Path) -> None:
    """A result file written the way the probe writes it reads back as the arrays put in."""
    cases = _cases()
    rng = np.random.default_rng(11)
    want: list[dict[str, Any]] = [
        {"status": i % 3, "D": rng.standard_normal((64, c["n"])).astype(np.float32),
         "raw": rng.standard_normal((THREADS, c["n"] // 2)).astype(np.float32)}
        for i, c in enumerate(cases)]
    path = tmp_path / "out.bin"
    path.write_bytes(b"".join(struct.pack("<I", w["status"]) + w["D"].astype("<f4").tobytes()
                              + w["raw"].astype("<f4").tobytes() for w in want))
    got = read_results(path, cases)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g["status"] == w["status"]
        assert g["D"].dtype == np.float32 and g["D"].shape == w["D"].shape
        np.testing.assert_array_equal(g["D"], w["D"])
        np.testing.assert_array_equal(g["raw"], w["raw"])
    with pytest.raises(ValueError, match="bytes left"):
        read_results(path, cases[:-1])
