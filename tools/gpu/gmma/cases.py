"""The wgmma descriptor cases run on the H200 by ``tools/gpu/gmma/run.sh``, and the model's
prediction of each.

A case is one ``wgmma.mma_async`` m64nNk16 (f16 or bf16 in, f32 out) reading A (64 x 16) and B
(N x 16) from a shared image through two descriptors.  The image is filled with small random
integers (every product and sum of 16 of them is exact in f32), so D reveals which shared
element the tensor core took for every (m, k) and (n, k): a read one address off changes D.

The descriptors come from threadmap's ``make_gmma_desc`` of GMMA atoms tiled to a stage and cut
to the instruction (on and off the swizzle atom's 1024-byte boundary), or are altered the ways
kernels get them wrong (LBO and SBO swapped, the other majorness); the prediction reads the
image at :func:`threadmap.layout.gmma_smem_addresses` of the descriptor, whatever it is.

    python tools/gpu/gmma/cases.py OUT.bin        # writes the case file, prints the case ids
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from threadmap.layout import (  # noqa: E402
    ComposedLayout,
    GmmaDescriptor,
    gmma_layout_atom,
    gmma_smem_addresses,
    local_tile,
    make_gmma_desc,
    make_tensor,
)

IMAGE_BYTES = 128 * 1024
DTYPES = {"f16": (0, np.float16), "bf16": (1, None)}   # bf16: the high half of an f32


@dataclass(frozen=True)
class Operand:
    """An operand cut from a GMMA atom tiled to ``stage`` at ``coord``; the stage's pointer at
    ``base`` bytes from the image's (1024-aligned) start."""

    major: str
    swizzle: str
    stage: tuple[int, int]
    coord: tuple[int, int]
    base: int


@dataclass(frozen=True)
class Case:
    id: str
    n: int
    dtype: str
    a: Operand
    b: Operand
    alter: str = ""          # "" | swap_lbo_sbo_a | swap_lbo_sbo_b | other_major_b

    @property
    def seed(self) -> int:
        return int(hashlib.sha256(self.id.encode()).hexdigest()[:8], 16)


def operand_desc(op: Operand, mn: int) -> GmmaDescriptor:
    """``make_gmma_desc`` of the operand (16-bit elements, K = 16), relative to the image."""
    atom = gmma_layout_atom(op.major, op.swizzle, 16)
    tile = atom.tile_to_shape(op.stage)
    t = local_tile(make_tensor(0, tile.layout_b), (mn, 16), op.coord)
    offset = t.offset
    assert isinstance(offset, int)
    return make_gmma_desc(op.major, ComposedLayout(atom.layout_a, atom.offset, t.layout), 16, op.base + offset * 2)


def _swap(d: GmmaDescriptor) -> GmmaDescriptor:
    return GmmaDescriptor(d.start_address, d.stride_byte_offset, d.leading_byte_offset, d.base_offset, d.layout_type)


def descriptors(c: Case) -> tuple[GmmaDescriptor, GmmaDescriptor, str, str]:
    """The two descriptors the kernel is given and the majorness its instruction says."""
    da, db = operand_desc(c.a, 64), operand_desc(c.b, c.n)
    ma, mb = c.a.major, c.b.major
    if c.alter == "swap_lbo_sbo_a":
        da = _swap(da)
    elif c.alter == "swap_lbo_sbo_b":
        db = _swap(db)
    elif c.alter == "other_major_b":
        mb = "MN" if mb == "K" else "K"
    return da, db, ma, mb


def image(c: Case) -> np.ndarray:
    """The shared image (uint16 words): small random integers in the case's element type."""
    rng = np.random.default_rng(c.seed)
    vals = rng.integers(-3, 4, IMAGE_BYTES // 2).astype(np.float32)
    if c.dtype == "f16":
        return vals.astype(np.float16).view(np.uint16)
    return (vals.view(np.uint32) >> 16).astype(np.uint16)  # bf16 of a small integer is exact


def _values(img: np.ndarray, addrs: np.ndarray, dtype: str) -> np.ndarray:
    words = img[addrs // 2]
    if dtype == "f16":
        return words.view(np.float16).astype(np.float64)
    return (words.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def predicted(c: Case) -> np.ndarray:
    """D (64 x N, f32) as the model says the tensor core computes it: A and B read from the
    image at the descriptors' addresses (taken in the majorness the instruction says)."""
    ra, rb = reads(c)
    img = image(c)
    a, b = _values(img, ra, c.dtype), _values(img, rb, c.dtype)
    return (a @ b.T).astype(np.float32)


def predicted_registers(c: Case) -> np.ndarray:
    """Each thread's accumulator registers (128 x N/2) as the model says they hold D: thread t's
    value v is D at ``CLayout(t, v)`` of the GMMA atom (``m + 64 n``)."""
    from threadmap.layout.atom.mma_traits import SM90_64xNx16_F32F16F16_SS

    d = predicted(c)
    clayout = SM90_64xNx16_F32F16F16_SS(c.n, c.a.major, c.b.major).layout_c
    t, v = np.meshgrid(np.arange(128), np.arange(c.n // 2), indexing="ij")
    idx = np.asarray(clayout(t, v))
    return d[idx % 64, idx // 64]


def _cases() -> list[Case]:
    out: list[Case] = []
    swz = ["INTER", "SW32", "SW64", "SW128"]
    # every majorness pair x every swizzle, N from 8 to 256, the stage at 0 or off the atom
    i = 0
    for ma in ("K", "MN"):
        for mb in ("K", "MN"):
            for s in swz:
                n = [8, 16, 32, 64, 128, 256, 64, 128][i % 8]
                off = [0, 1024, 512, 16, 4096 + 128, 2048 + 640][i % 6]
                a_stage = (128, 64) if ma == "K" else (128, 32)
                b_stage = (max(n, 64), 64) if mb == "K" else (max(n, 64), 32)
                a = Operand(ma, s, a_stage, (i % 2, (i // 2) % 2), off)
                b = Operand(mb, swz[(i + 1) % 4], b_stage, (0, i % 2), 40960 + off)
                out.append(Case(f"{ma}{mb}_{s.lower()}_{swz[(i + 1) % 4].lower()}_n{n}_off{off}", n, "f16", a, b))
                i += 1
    # the swizzle phase: a 128-byte-swizzled operand at every 128-byte step off the atom
    for k, off in enumerate(range(0, 1024, 128)):
        a = Operand("K", "SW128", (64, 64), (0, k % 4), off)
        b = Operand("K", "SW128", (64, 64), (0, (k + 1) % 4), 32768 + (1024 - off) % 1024)
        out.append(Case(f"phase_sw128_off{off}", 64, "f16", a, b))
    # bf16
    for ma, mb, s in (("K", "K", "SW128"), ("MN", "K", "SW64"), ("K", "MN", "SW32"), ("MN", "MN", "INTER")):
        a = Operand(ma, s, (64, 64) if ma == "K" else (64, 32), (0, 1), 2048)
        b = Operand(mb, s, (128, 64) if mb == "K" else (128, 32), (0, 0), 49152)
        out.append(Case(f"bf16_{ma}{mb}_{s.lower()}", 128, "bf16", a, b))
    # the ways a descriptor goes wrong: LBO/SBO swapped, the instruction's other majorness
    for s in ("SW128", "SW64", "INTER"):
        a = Operand("MN", s, (128, 32), (1, 0), 0)
        b = Operand("MN", s, (256, 32), (0, 1), 32768)
        out.append(Case(f"wrong_swap_a_mn_{s.lower()}", 256, "f16", a, b, "swap_lbo_sbo_a"))
        out.append(Case(f"wrong_swap_b_mn_{s.lower()}", 256, "f16", a, b, "swap_lbo_sbo_b"))
    for s in ("SW128", "SW32"):
        a = Operand("K", s, (64, 64), (0, 0), 0)
        b = Operand("K", s, (64, 64), (0, 1), 16384)
        out.append(Case(f"wrong_major_b_{s.lower()}", 64, "f16", a, b, "other_major_b"))
    return out


def reads(c: Case) -> tuple[np.ndarray, np.ndarray]:
    """The byte addresses the model says A and B are read from."""
    da, db, ma, mb = descriptors(c)
    return gmma_smem_addresses(da, ma, 64, 16, 16), gmma_smem_addresses(db, mb, c.n, 16, 16)


#: the cases whose reads stay inside the image (an altered descriptor may point past it)
CASES = [c for c in _cases() if all(int(r.max()) < IMAGE_BYTES for r in reads(c))]


def probe_cases() -> list[dict[str, object]]:
    """The cases as the probe's case file takes them (``probe_io.write_cases``)."""
    out = []
    for c in CASES:
        da, db, ma, mb = descriptors(c)
        out.append({"n": c.n, "tnsp_a": int(ma == "MN"), "tnsp_b": int(mb == "MN"), "dtype": DTYPES[c.dtype][0],
                    "desc_a": da.desc, "desc_b": db.desc, "image": image(c).tobytes()})
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from probe_io import write_cases

    write_cases(sys.argv[1], probe_cases())
    for c in CASES:
        print(c.id)
