"""The TMA image cases: descriptors built by ``make_tma_copy`` (threadmap's port of CuTe's),
each loaded at several box coordinates (inside, across the tensor's end: zero fill, before
its start) and shared offsets (the swizzle acts on absolute address bits), as the table
tma_image.cu reads; check.py compares its dump with ``tma_box_image``.

    python tools/gpu/tma/cases.py > cases.txt
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from threadmap.layout.atom.copy_traits_sm90_tma import TmaCopy, make_tma_copy  # noqa: E402
from threadmap.layout.integral_constant import Dyn  # noqa: E402
from threadmap.layout.layout import make_layout  # noqa: E402
from threadmap.layout.parse import parse_layout  # noqa: E402

TYPES = {"f16": 16, "f32": 32, "u8": 8, "f64": 64, "bf16": 16}


def _d(t: object) -> object:
    if isinstance(t, tuple):
        return tuple(_d(x) for x in t)
    return t if t == 1 else Dyn(t)  # type: ignore[arg-type]


def copies() -> Iterator[tuple[str, TmaCopy]]:
    """(name, copy): K- and MN-major tiles in every swizzle, 3-D to 5-D boxes, odd extents."""
    sw = {
        "f16": {
            3: ("Sw<3,3,3> o (8,64):(64,1)", "Sw<3,3,3> o (64,8):(1,64)"),
            2: ("Sw<2,3,3> o (8,32):(32,1)", "Sw<2,3,3> o (32,8):(1,32)"),
            1: ("Sw<1,3,3> o (8,16):(16,1)", "Sw<1,3,3> o (16,8):(1,16)"),
            0: ("(8,8):(8,1)", "(8,8):(1,8)"),
        },
        "f32": {
            3: ("Sw<3,2,3> o (8,32):(32,1)", "Sw<3,2,3> o (32,8):(1,32)"),
            1: ("Sw<1,2,3> o (8,8):(8,1)", "Sw<1,2,3> o (8,8):(1,8)"),
        },
        "u8": {3: ("Sw<3,4,3> o (8,128):(128,1)", "Sw<3,4,3> o (128,8):(1,128)")},
        "bf16": {2: ("Sw<2,3,3> o (16,32):(32,1)", "Sw<2,3,3> o (32,16):(1,32)")},
    }
    sw["f32"][2] = ("Sw<2,2,3> o (8,16):(16,1)", "Sw<2,2,3> o (16,8):(1,16)")
    sw["f64"] = {3: ("Sw<3,1,3> o (8,16):(16,1)", "Sw<3,1,3> o (16,8):(1,16)"), 0: ("(4,4):(4,1)", "(4,4):(1,4)")}
    for dt, modes in sw.items():
        # an M x K tensor with odd extents (row pitches multiples of 16 bytes), K-major and MN-major
        m, k = (200, 128) if dt == "u8" else (200, 120)
        mm = 208 if dt == "u8" else 200
        for mode, (k_major, mn_major) in modes.items():
            yield (
                f"{dt}_k_sw{mode}",
                make_tma_copy(
                    "SM90_TMA_LOAD",
                    make_layout(_d((m, k)), _d((k, 1))),
                    parse_layout(k_major),
                    elem_bits=TYPES[dt],
                    data_type=dt,
                ),
            )
            yield (
                f"{dt}_mn_sw{mode}",
                make_tma_copy(
                    "SM90_TMA_LOAD",
                    make_layout(_d((mm, k)), _d((1, mm))),
                    parse_layout(mn_major),
                    elem_bits=TYPES[dt],
                    data_type=dt,
                ),
            )
    # boxes of other heights: 1 to 32 rows of one swizzle atom's width
    for rows in (1, 2, 4, 16, 32):
        for sw_text, mode in (("Sw<3,3,3> o ", 3), ("", 0)):
            yield (
                f"f16_k_sw{mode}_rows{rows}",
                make_tma_copy(
                    "SM90_TMA_LOAD",
                    make_layout(_d((200, 120)), _d((120, 1))),
                    parse_layout(f"{sw_text}({rows},64):(64,1)" if mode else f"({rows},64):(64,1)"),
                    elem_bits=16,
                    data_type="f16",
                ),
            )
    yield (
        "f32_4d",
        make_tma_copy(
            "SM90_TMA_LOAD",
            make_layout(_d((10, 12, 14, 16)), _d((1, 12, 144, 2016))),
            parse_layout("(8,4,2,2):(1,8,32,64)"),
            elem_bits=32,
            data_type="f32",
        ),
    )
    yield (
        "f32_3d",
        make_tma_copy(
            "SM90_TMA_LOAD",
            make_layout(_d((100, 32, 7)), _d((64, 1, 6400))),
            parse_layout("(16,8,2):(16,1,8)"),
            elem_bits=32,
            data_type="f32",
        ),
    )
    yield (
        "f32_5d",
        make_tma_copy(
            "SM90_TMA_LOAD",
            make_layout(((32, 40), ((8, 8), 20)), _d(((1, 32), ((1280, 10240), 81920)))),
            parse_layout("(128,(32,2)):(1,(128,4096))"),
            (128, (32, 2)),
            elem_bits=32,
            data_type="f32",
        ),
    )
    yield (
        "f16_batched",
        make_tma_copy(
            "SM90_TMA_LOAD",
            make_layout(_d((300, 72, 3)), _d((72, 1, 300 * 72))),
            parse_layout("Sw<3,3,3> o (64,64):(64,1)"),
            (64, 64),
            elem_bits=16,
            data_type="f16",
        ),
    )


def cases() -> Iterator[tuple[str, TmaCopy, tuple[int, ...], int]]:
    """(name, copy, box coordinate, shared offset of the box from a 1024-byte-aligned base)."""
    for name, t in copies():
        d = t.desc
        inside = tuple(0 for _ in d.box_dim)
        # across the end of every mode (zero fill), and before the start of the first two
        edge = tuple(max(0, g - b // 2) for g, b in zip(d.global_dim, d.box_dim))
        before = tuple(-(b // 2) if i < 2 else 0 for i, b in enumerate(d.box_dim))
        # the box's first innermost element 16-byte aligned (tma_image.cu's first run trapped on
        # f16 (116, 196): "illegal instruction"; traps() below are the cases that decide it)
        step = max(1, 16 // d.elem_bytes)
        edge = (edge[0] // step * step, *edge[1:])
        before = (before[0] // step * step, *before[1:])
        for tag, c in (("inside", inside), ("edge", edge), ("before", before)):
            yield f"{name}_{tag}", t, c, 0
        if d.swizzle:
            # off the swizzle's 1024-byte block: the swizzle follows the absolute address
            yield f"{name}_off256", t, inside, 256
            yield f"{name}_off128", t, edge, 128


def traps() -> list[tuple[str, TmaCopy, tuple[int, ...], int]]:
    """Loads whose box starts off a 16-byte boundary in the innermost dimension (each run in a
    process of its own: a trap ends the context), with aligned controls."""
    out = []
    for name, t in copies():
        if name in ("f16_k_sw0", "f16_k_sw3", "f32_mn_sw1"):
            d = t.desc
            for c0 in (0, 1, 4, 8, 16):
                out.append((f"{name}_c0_{c0}", t, (c0, *[0] * (d.rank - 1)), 0))
    return out


def store_traps() -> list[tuple[str, TmaCopy, tuple[int, ...], int]]:
    """Stores whose box starts before the tensor (the first run's store at (-32, -4) trapped),
    one per process, with in-bounds controls."""
    (t,) = [t for name, t in copies() if name == "f16_k_sw3"]
    return [(f"store_f16_k_sw3_at_{c[0]}_{c[1]}", t, c, 0) for c in ((0, 0), (8, 0), (-8, 0), (0, -4), (-8, -4))]


def stores(name: str, coord: tuple[int, ...]) -> bool:
    """Whether tma_image also stores the case's box (not the loads that start before the tensor:
    a store there traps, store_traps() decide which)."""
    return name.startswith("store_") or not name.endswith("_before")


def write(f=sys.stdout, which: str = "cases") -> None:  # type: ignore[no-untyped-def]
    chosen = {"cases": cases, "traps": traps, "store_traps": store_traps}[which]()
    for name, t, c, base in chosen:
        d = t.desc
        dims = (*d.global_dim, *[1] * (5 - d.rank))
        strides = (*d.global_strides, *[0] * (4 - len(d.global_strides)))
        box = (*d.box_dim, *[1] * (5 - d.rank))
        crd = (*c, *[0] * (5 - d.rank))
        f.write(f"{name} {d.data_type} {d.elem_bytes} {d.rank} {d.swizzle} {base} {int(stores(name, c))}\n")
        f.write(" ".join(map(str, (*dims, *strides, *box, *crd))) + "\n")


if __name__ == "__main__":
    write(which=sys.argv[1] if len(sys.argv) > 1 else "cases")
