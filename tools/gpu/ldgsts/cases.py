"""The LDGSTS probe's cases: per lane a global byte offset, a shared byte offset and a
predicate, for one warp; written as the table ldgsts_probe.cu reads.

    python tools/gpu/ldgsts/cases.py > cases.txt                 # every case (ldgsts_h200.json)
    python tools/gpu/ldgsts/cases.py --only vector > cases.txt   # vector_run() alone
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

LINE = 4096  # far enough apart that groups of lanes read different 128-byte lines


@dataclass(frozen=True)
class Case:
    name: str
    bytes: int
    cg: bool
    zfill: bool
    gofs: tuple[int, ...]
    sofs: tuple[int, ...]
    pred: tuple[int, ...]
    iters: int = 16
    step: int = 1 << 28  # each iteration reads new lines (no L1 hit); 0: the same lines again
    warps: int = 1
    grid: int = 1
    #: further instructions issued back to back after (gofs, sofs) in each iteration, every lane
    #: on (ldgsts_probe.cu's probe_seq); ``wait``: a cp.async.wait_all after each instruction
    more: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()
    wait: bool = False

    @property
    def instructions(self) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
        """The lane tables (global, shared) of one iteration's instructions, in issue order."""
        return ((self.gofs, self.sofs), *self.more)


def lanes(f: Callable[[int], int]) -> tuple[int, ...]:
    return tuple(f(lane) for lane in range(32))


def groups(k: int, size: int, line: int = LINE) -> tuple[int, ...]:
    """Groups of k consecutive lanes read contiguous bytes; the groups read different lines."""
    return lanes(lambda t: (t // k) * line + (t % k) * size)


def cases() -> list[Case]:
    out: list[Case] = []
    on = lanes(lambda t: 1)
    for size, cg in ((16, True), (16, False), (8, False), (4, False)):
        tag = f"{'cg' if cg else 'ca'}{size}"
        contig = lanes(lambda t, s=size: t * s)
        for k in (32, 16, 8, 4, 2, 1):
            if k * size > 128 and k != 32:
                continue
            out.append(Case(f"{tag}_g{k}_scontig", size, cg, False, groups(k, size), contig, on))
        for m in (2, 4, 8, 32):
            out.append(
                Case(f"{tag}_gcontig_sstride{m}", size, cg, False, contig, lanes(lambda t, s=size, m=m: t * s * m), on)
            )
            out.append(
                Case(
                    f"{tag}_g4_sstride{m}",
                    size,
                    cg,
                    False,
                    groups(4, size),
                    lanes(lambda t, s=size, m=m: t * s * m),
                    on,
                )
            )
        out.append(Case(f"{tag}_gcontig_srev", size, cg, False, contig, lanes(lambda t, s=size: (31 - t) * s), on))
        out.append(Case(f"{tag}_grev_scontig", size, cg, False, lanes(lambda t, s=size: (31 - t) * s), contig, on))
        out.append(Case(f"{tag}_gbcast8_scontig", size, cg, False, lanes(lambda t, s=size: (t % 8) * s), contig, on))
        out.append(Case(f"{tag}_gsector_scontig", size, cg, False, lanes(lambda t, s=size: t * 32), contig, on))
        if size == 16:
            # lanes of one global line write shared rows 1 KiB apart (one bank group: conflicts)
            out.append(
                Case(
                    f"{tag}_gcontig_scol", size, cg, False, contig, lanes(lambda t: (t % 8) * 1024 + (t // 8) * 16), on
                )
            )
            out.append(
                Case(
                    f"{tag}_g4_scol",
                    size,
                    cg,
                    False,
                    groups(4, size),
                    lanes(lambda t: (t % 4) * 1024 + (t // 4) * 16),
                    on,
                )
            )
            # shared swizzled within 1 KiB (Swizzle<3,4,3> on a 128-byte row)
            out.append(
                Case(
                    f"{tag}_g8_sswz",
                    size,
                    cg,
                    False,
                    groups(8, size),
                    lanes(lambda t: ((t // 8) * 128) + ((((t % 8) ^ (t // 8)) & 7) * 16)),
                    on,
                )
            )
            # the library's two tiles, exactly: 512 contiguous shared bytes; 8 and 4 lines read
            out.append(Case(f"{tag}_g4_L64_scontig", size, cg, False, groups(4, size, 64 * 2), contig, on))
            out.append(Case(f"{tag}_g4_L256_scontig", size, cg, False, groups(4, size, 256), contig, on))
        for zf in (False, True):
            z = "zfill" if zf else "pred"
            out.append(Case(f"{tag}_{z}_half_g4", size, cg, zf, groups(4, size), contig, lanes(lambda t: int(t < 16))))
            out.append(Case(f"{tag}_{z}_odd_g4", size, cg, zf, groups(4, size), contig, lanes(lambda t: t % 2)))
            out.append(Case(f"{tag}_{z}_none_g4", size, cg, zf, groups(4, size), contig, lanes(lambda t: 0)))
            out.append(Case(f"{tag}_{z}_all_g4", size, cg, zf, groups(4, size), contig, on))
        if not cg:
            out.append(Case(f"{tag}_warm_g4_scontig", size, cg, False, groups(4, size), contig, on, step=0))
            out.append(Case(f"{tag}_warm_gcontig_scontig", size, cg, False, contig, contig, on, step=0))
    out += second_run()
    out += third_run()
    out += library_run()
    return out


#: the first instruction of the library's cp.async A and B tiles (specs/cutlass/sm80_f16_gemm_{a,b}_*,
#: block 0, warp 0): per lane the global byte offset from the tile's first line, and the shared one
#: the shared offsets of both tiles' first instruction (the same swizzled 512 bytes)
LIBRARY_SHARED = [0, 16, 32, 48, 64, 80, 96, 112, 144, 128, 176, 160, 208, 192, 240, 224,
                  288, 304, 256, 272, 352, 368, 320, 336, 432, 416, 400, 384, 496, 480, 464, 448]
LIBRARY = {
    "a128x32": ([0, 16, 32, 48, 128, 144, 160, 176, 256, 272, 288, 304, 384, 400, 416, 432,
                 512, 528, 544, 560, 640, 656, 672, 688, 768, 784, 800, 816, 896, 912, 928, 944], LIBRARY_SHARED),
    "b64x64": ([0, 16, 32, 48, 64, 80, 96, 112, 256, 272, 288, 304, 320, 336, 352, 368,
                512, 528, 544, 560, 576, 592, 608, 624, 768, 784, 800, 816, 832, 848, 864, 880], LIBRARY_SHARED),
}


def library_run() -> list[Case]:
    """The library tiles' own patterns, both cache forms, as one warp and as 4 warps x 4 CTAs."""
    on = lanes(lambda t: 1)
    return [
        Case(
            f"{'cg' if cg else 'ca'}16_lib_{name}_w{w}x{g}",
            16,
            cg,
            False,
            tuple(go),
            tuple(so),
            on,
            iters=4,
            step=4096,
            warps=w,
            grid=g,
        )
        for name, (go, so) in LIBRARY.items()
        for cg in (True, False)
        for w, g in ((1, 1), (4, 4))
    ]


KERNEL_VECTORS: dict[str, tuple[str, str, list[tuple[list[int], list[int]]]]] = {
    # cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_nt_align2 stage A at {'M': 256, 'N': 256, 'K': 64}
    'k128_A': ('cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_nt_align2', 'A', [
        ([0, 16, 32, 48, 64, 80, 96, 112, 512, 528, 544, 560, 576, 592, 608, 624, 1024, 1040, 1056, 1072, 1088, 1104,
          1120, 1136, 1536, 1552, 1568, 1584, 1600, 1616, 1632, 1648],
         [0, 16, 32, 48, 64, 80, 96, 112, 272, 256, 304, 288, 336, 320, 368, 352, 544, 560, 512, 528, 608, 624, 576,
          592, 816, 800, 784, 768, 880, 864, 848, 832]),
        ([128, 144, 160, 176, 192, 208, 224, 240, 640, 656, 672, 688, 704, 720, 736, 752, 1152, 1168, 1184, 1200,
          1216, 1232, 1248, 1264, 1664, 1680, 1696, 1712, 1728, 1744, 1760, 1776],
         [128, 144, 160, 176, 192, 208, 224, 240, 400, 384, 432, 416, 464, 448, 496, 480, 672, 688, 640, 656, 736,
          752, 704, 720, 944, 928, 912, 896, 1008, 992, 976, 960]),
        ([2048, 2064, 2080, 2096, 2112, 2128, 2144, 2160, 2560, 2576, 2592, 2608, 2624, 2640, 2656, 2672, 3072, 3088,
          3104, 3120, 3136, 3152, 3168, 3184, 3584, 3600, 3616, 3632, 3648, 3664, 3680, 3696],
         [1088, 1104, 1120, 1136, 1024, 1040, 1056, 1072, 1360, 1344, 1392, 1376, 1296, 1280, 1328, 1312, 1632, 1648,
          1600, 1616, 1568, 1584, 1536, 1552, 1904, 1888, 1872, 1856, 1840, 1824, 1808, 1792]),
        ([2176, 2192, 2208, 2224, 2240, 2256, 2272, 2288, 2688, 2704, 2720, 2736, 2752, 2768, 2784, 2800, 3200, 3216,
          3232, 3248, 3264, 3280, 3296, 3312, 3712, 3728, 3744, 3760, 3776, 3792, 3808, 3824],
         [1216, 1232, 1248, 1264, 1152, 1168, 1184, 1200, 1488, 1472, 1520, 1504, 1424, 1408, 1456, 1440, 1760, 1776,
          1728, 1744, 1696, 1712, 1664, 1680, 2032, 2016, 2000, 1984, 1968, 1952, 1936, 1920]),
    ]),
    # cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_nt_align2 stage B at {'M': 256, 'N': 256, 'K': 64}
    'k128_B': ('cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_nt_align2', 'B', [
        ([0, 16, 32, 48, 64, 80, 96, 112, 512, 528, 544, 560, 576, 592, 608, 624, 1024, 1040, 1056, 1072, 1088, 1104,
          1120, 1136, 1536, 1552, 1568, 1584, 1600, 1616, 1632, 1648],
         [0, 16, 32, 48, 64, 80, 96, 112, 272, 256, 304, 288, 336, 320, 368, 352, 544, 560, 512, 528, 608, 624, 576,
          592, 816, 800, 784, 768, 880, 864, 848, 832]),
        ([128, 144, 160, 176, 192, 208, 224, 240, 640, 656, 672, 688, 704, 720, 736, 752, 1152, 1168, 1184, 1200,
          1216, 1232, 1248, 1264, 1664, 1680, 1696, 1712, 1728, 1744, 1760, 1776],
         [128, 144, 160, 176, 192, 208, 224, 240, 400, 384, 432, 416, 464, 448, 496, 480, 672, 688, 640, 656, 736,
          752, 704, 720, 944, 928, 912, 896, 1008, 992, 976, 960]),
        ([2048, 2064, 2080, 2096, 2112, 2128, 2144, 2160, 2560, 2576, 2592, 2608, 2624, 2640, 2656, 2672, 3072, 3088,
          3104, 3120, 3136, 3152, 3168, 3184, 3584, 3600, 3616, 3632, 3648, 3664, 3680, 3696],
         [1088, 1104, 1120, 1136, 1024, 1040, 1056, 1072, 1360, 1344, 1392, 1376, 1296, 1280, 1328, 1312, 1632, 1648,
          1600, 1616, 1568, 1584, 1536, 1552, 1904, 1888, 1872, 1856, 1840, 1824, 1808, 1792]),
        ([2176, 2192, 2208, 2224, 2240, 2256, 2272, 2288, 2688, 2704, 2720, 2736, 2752, 2768, 2784, 2800, 3200, 3216,
          3232, 3248, 3264, 3280, 3296, 3312, 3712, 3728, 3744, 3760, 3776, 3792, 3808, 3824],
         [1216, 1232, 1248, 1264, 1152, 1168, 1184, 1200, 1488, 1472, 1520, 1504, 1424, 1408, 1456, 1440, 1760, 1776,
          1728, 1744, 1696, 1712, 1664, 1680, 2032, 2016, 2000, 1984, 1968, 1952, 1936, 1920]),
    ]),
    # cutlass_tensorop_f16_s16816gemm_f16_64x64_32x10_nn_align2 stage A at {'M': 128, 'N': 128, 'K': 64}
    'k64_A': ('cutlass_tensorop_f16_s16816gemm_f16_64x64_32x10_nn_align2', 'A', [
        ([0, 16, 32, 48, 128, 144, 160, 176, 256, 272, 288, 304, 384, 400, 416, 432, 512, 528, 544, 560, 640, 656,
          672, 688, 768, 784, 800, 816, 896, 912, 928, 944],
         [0, 16, 32, 48, 64, 80, 96, 112, 1296, 1280, 1328, 1312, 1360, 1344, 1392, 1376, 2592, 2608, 2560, 2576,
          2656, 2672, 2624, 2640, 3888, 3872, 3856, 3840, 3952, 3936, 3920, 3904]),
        ([1024, 1040, 1056, 1072, 1152, 1168, 1184, 1200, 1280, 1296, 1312, 1328, 1408, 1424, 1440, 1456, 1536, 1552,
          1568, 1584, 1664, 1680, 1696, 1712, 1792, 1808, 1824, 1840, 1920, 1936, 1952, 1968],
         [5120, 5136, 5152, 5168, 5184, 5200, 5216, 5232, 6416, 6400, 6448, 6432, 6480, 6464, 6512, 6496, 7712, 7728,
          7680, 7696, 7776, 7792, 7744, 7760, 9008, 8992, 8976, 8960, 9072, 9056, 9040, 9024]),
    ]),
    # cutlass_tensorop_f16_s16816gemm_f16_64x64_32x10_nn_align2 stage B at {'M': 128, 'N': 128, 'K': 64}
    'k64_B': ('cutlass_tensorop_f16_s16816gemm_f16_64x64_32x10_nn_align2', 'B', [
        ([0, 16, 32, 48, 64, 80, 96, 112, 256, 272, 288, 304, 320, 336, 352, 368, 512, 528, 544, 560, 576, 592, 608,
          624, 768, 784, 800, 816, 832, 848, 864, 880],
         [0, 16, 32, 48, 64, 80, 96, 112, 144, 128, 176, 160, 208, 192, 240, 224, 288, 304, 256, 272, 352, 368, 320,
          336, 432, 416, 400, 384, 496, 480, 464, 448]),
        ([1024, 1040, 1056, 1072, 1088, 1104, 1120, 1136, 1280, 1296, 1312, 1328, 1344, 1360, 1376, 1392, 1536, 1552,
          1568, 1584, 1600, 1616, 1632, 1648, 1792, 1808, 1824, 1840, 1856, 1872, 1888, 1904],
         [576, 592, 608, 624, 512, 528, 544, 560, 720, 704, 752, 736, 656, 640, 688, 672, 864, 880, 832, 848, 800,
          816, 768, 784, 1008, 992, 976, 960, 944, 928, 912, 896]),
    ]),
}


GLOBAL_PER_WARP = 128 << 10  # ldgsts_probe.cu: each warp of each CTA reads its own 128 KiB


def pieces(vec: tuple[list[int], list[int]], n: int, size: int = 4, first: int = 0, jump: int = 0,
           same: bool = False) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Pieces ``first .. first+n-1`` of a vector: piece ``j`` at ``+j*size`` on both sides (how
    CUTLASS copies a 16-byte vector with narrower cp.async), ``+j*jump`` more on the global side
    (``jump`` a multiple of 128: the same offsets in other lines); ``same``: piece ``first`` n times."""
    g, s = vec
    out = []
    for j in range(first, first + n):
        k = first if same else j
        out.append((tuple(x + k * size + (j - first) * jump for x in g), tuple(x + k * size for x in s)))
    return out


def stream(key: str, vectors: int | None = None) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """A warp's whole stage as the kernel issues it: each vector's 4 pieces, vector by vector."""
    vecs = KERNEL_VECTORS[key][2][:vectors]
    return [p for v in vecs for p in pieces(v, 4)]


def vector_run() -> list[Case]:
    """The sweep kernels' 4-byte cp.async streams (a 16-byte vector copied as 4 pieces, back to
    back): which instructions of the stream cost more than the rule and why -- the piece's own
    shape (a single piece alone), re-reading lines still being filled (pieces back to back on the
    same lines, against new lines and against a wait between pieces), or other warps and CTAs
    in flight (1 warp against 4 warps x 4 CTAs, the kernel's launch, and x 264)."""
    on = lanes(lambda t: 1)
    out: list[Case] = []

    def add(name: str, ins: list[tuple[tuple[int, ...], tuple[int, ...]]], size: int = 4, wait: bool = False,
            iters: int = 4, step: int = 8192, warps: int = 1, grid: int = 1) -> None:
        (g0, s0), more = ins[0], tuple(ins[1:])
        top = max(max(g) for g, _ in ins) + size + (iters - 1) * step
        shared = max(max(s) for _, s in ins) + size + (warps - 1) * (8192 if more or wait else 4096)
        assert top <= GLOBAL_PER_WARP and shared <= 48 * 1024, name
        out.append(Case(f"vec_{name}", size, False, False, g0, s0, on, iters=iters, step=step, warps=warps,
                        grid=grid, more=more, wait=wait))

    seen: list[list[tuple[list[int], list[int]]]] = []
    for key in KERNEL_VECTORS:
        if KERNEL_VECTORS[key][2] in seen:  # the nt kernel's A and B stages are alike: once
            continue
        seen.append(KERNEL_VECTORS[key][2])
        v0 = KERNEL_VECTORS[key][2][0]
        tag = key.replace("_", "")
        # one piece per iteration, each iteration new lines: the piece's shape alone
        add(f"{tag}_j0_single", pieces(v0, 1), iters=16)
        add(f"{tag}_j3_single", pieces(v0, 1, first=3), iters=16)
        # the 4 pieces back to back on the same lines; with a wait between; each piece new lines
        add(f"{tag}_p4", pieces(v0, 4))
        add(f"{tag}_p4_wait", pieces(v0, 4), wait=True)
        add(f"{tag}_p4_newlines", pieces(v0, 4, jump=16384))
        # the warp's whole stage (every vector, pieces innermost): one warp and the kernel's launch
        add(f"{tag}_stage", stream(key), iters=2)
        add(f"{tag}_stage_w4x4", stream(key), iters=2, warps=4, grid=4)
    v0 = KERNEL_VECTORS["k128_A"][2][0]
    # how the cost grows with the pieces re-reading the lines; the same bytes re-read
    add("k128A_p2", pieces(v0, 2))
    add("k128A_p3", pieces(v0, 3))
    add("k128A_p4_samebytes", pieces(v0, 4, same=True))
    # what a re-reading piece adds: the kernel's global side with other shared patterns (store
    # wavefronts 1 and 8 where the kernel's are 4; 4 lines either way)
    flat = [(g, tuple(t * 4 + j * 128 for t in range(32))) for j, (g, _) in enumerate(pieces(v0, 4))]
    add("k128A_p4_sflat", flat)
    add("k128A_p4_sstride32", [(g, tuple(t * 32 + j * 4 for t in range(32))) for j, (g, _) in enumerate(pieces(v0, 4))])
    # other warps and CTAs in flight
    add("k128A_j0_single_w4x4", pieces(v0, 1), iters=16, warps=4, grid=4)
    add("k128A_p4_w4x4", pieces(v0, 4), warps=4, grid=4)
    add("k128A_p4_w4x264", pieces(v0, 4), warps=4, grid=264)
    add("k128A_p4_wait_w4x4", pieces(v0, 4), wait=True, warps=4, grid=4)
    add("k128A_p4_newlines_w4x4", pieces(v0, 4, jump=16384), warps=4, grid=4)
    # the same vector as one 16-byte cp.async (align8), and as two 8-byte pieces (align4)
    add("k128A_v16_single", [(tuple(v0[0]), tuple(v0[1]))], size=16, iters=16)
    add("k128A_b8_single", pieces(v0, 1, size=8), size=8, iters=16)
    add("k128A_b8_p2", pieces(v0, 2, size=8), size=8)
    add("k128A_b8_p2_wait", pieces(v0, 2, size=8), size=8, wait=True)
    # sector or line: lanes read 4 bytes 8 apart (each line's lanes: 2 sectors), then the same
    # sectors (+4), the line's other sectors (+64), or other lines (+16384)
    half = (lanes(lambda t: (t % 8) * 8 + (t // 8) * 512), tuple(v0[1]))
    for name, dg in (("samesector", 4), ("othersector", 64), ("otherline", 16384)):
        add(f"half_p2_{name}", [half, (tuple(x + dg for x in half[0]), tuple(x + 4 for x in half[1]))])
    add("half_j0_single", [half], iters=16)
    return out


def third_run() -> list[Case]:
    """Cases added after the second run: the bypassing form (.cg) against the distance between
    one iteration's lines and the next (the first runs read lines 256 MiB apart and saw no
    .cg shared wavefronts, where the library's behaviour kernels, reading a small tile, saw some)."""
    out: list[Case] = []
    on = lanes(lambda t: 1)
    for cg in (True, False):
        tag = "cg16" if cg else "ca16"
        contig = lanes(lambda t: t * 16)
        for step in (0, 512, 4096, 1 << 16, 1 << 20, 1 << 24):
            for k in (8, 4):
                for iters in (4, 16):
                    out.append(
                        Case(
                            f"{tag}_step{step}_it{iters}_g{k}",
                            16,
                            cg,
                            False,
                            groups(k, 16, 128),
                            contig,
                            on,
                            iters=iters,
                            step=step,
                        )
                    )
            out.append(
                Case(
                    f"{tag}_step{step}_w4x4_g4",
                    16,
                    cg,
                    False,
                    groups(4, 16, 128),
                    contig,
                    on,
                    iters=4,
                    step=step,
                    warps=4,
                    grid=4,
                )
            )
    return out


def second_run() -> list[Case]:
    """Cases added after the first run: several warps and CTAs; conflicts inside one global
    line's lanes against conflicts between lines; where the zero-fill lanes go."""
    out: list[Case] = []
    on = lanes(lambda t: 1)
    for size, cg in ((16, True), (16, False)):
        tag = f"{'cg' if cg else 'ca'}{size}"
        contig = lanes(lambda t, s=size: t * s)
        for warps, grid in ((4, 1), (4, 264)):
            for k in (8, 4):
                for zf in (False, True):
                    out.append(
                        Case(
                            f"{tag}_w{warps}x{grid}_g{k}_scontig{'_zfill' if zf else ''}",
                            size,
                            cg,
                            zf,
                            groups(k, size),
                            contig,
                            on,
                            warps=warps,
                            grid=grid,
                        )
                    )
            out.append(
                Case(
                    f"{tag}_w{warps}x{grid}_g4_zfill_half",
                    size,
                    cg,
                    True,
                    groups(4, size),
                    contig,
                    lanes(lambda t: int(t < 16)),
                    warps=warps,
                    grid=grid,
                )
            )
    for size in (16, 8, 4):
        tag = f"ca{size}"
        contig = lanes(lambda t, s=size: t * s)
        for k in (2, 4, 8):
            # conflicts inside each line only: a line's k lanes on the same banks, rows 1 KiB apart
            out.append(
                Case(
                    f"{tag}_g{k}_in_line",
                    size,
                    False,
                    False,
                    groups(k, size),
                    lanes(lambda t, k=k, s=size: (t % k) * 1024 + (t // k) * s),
                    on,
                )
            )
            # conflicts between lines only: a line's lanes contiguous, the lines on the same banks
            out.append(
                Case(
                    f"{tag}_g{k}_across_lines",
                    size,
                    False,
                    False,
                    groups(k, size),
                    lanes(lambda t, k=k, s=size: (t // k) * 1024 + (t % k) * s),
                    on,
                )
            )
            # two-way conflicts inside each line
            out.append(
                Case(
                    f"{tag}_g{k}_in_line2",
                    size,
                    False,
                    False,
                    groups(k, size),
                    lanes(lambda t, k=k, s=size: (t % 2) * 1024 + ((t % k) // 2) * s + (t // k) * s * (k // 2)),
                    on,
                )
            )
        for zname, pred in (
            ("top8", lanes(lambda t: int(t < 24))),
            ("every4", lanes(lambda t: int(t % 4 != 0))),
            ("low8", lanes(lambda t: int(t >= 8))),
            ("one", lanes(lambda t: int(t == 5))),
        ):
            for g in (4, 32):
                out.append(Case(f"{tag}_zfill_{zname}_g{g}", size, False, True, groups(g, size), contig, pred))
                out.append(Case(f"{tag}_pred_{zname}_g{g}", size, False, False, groups(g, size), contig, pred))
    return out


def write(cs: list[Case], f=sys.stdout) -> None:  # type: ignore[no-untyped-def]
    for c in cs:
        f.write(f"{c.name} {c.bytes} {int(c.cg)} {int(c.zfill)} {c.iters} {c.step} {c.warps} {c.grid} "
                f"{len(c.instructions)} {int(c.wait)}\n")
        for g, s in c.instructions:
            f.write(" ".join(map(str, (*g, *s, *c.pred))) + "\n")


#: the case lists a run can be limited to (run.sh --only NAME)
RUNS: dict[str, Callable[[], list[Case]]] = {"all": lambda: cases(), "vector": lambda: vector_run()}


if __name__ == "__main__":
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else "all"
    write(RUNS[only]())
