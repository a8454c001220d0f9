"""The LDGSTS probe's cases: per lane a global byte offset, a shared byte offset and a
predicate, for one warp; written as the table ldgsts_probe.cu reads.

    python tools/gpu/ldgsts/cases.py > cases.txt
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
        f.write(f"{c.name} {c.bytes} {int(c.cg)} {int(c.zfill)} {c.iters} {c.step} {c.warps} {c.grid}\n")
        f.write(" ".join(map(str, (*c.gofs, *c.sofs, *c.pred))) + "\n")


if __name__ == "__main__":
    write(cases())
