"""Pictures of a wgmma operand read through its descriptor: the descriptor's fields (CuTe's
printer) and, for one instruction block, the shared byte address of each 16-byte chunk the
tensor core reads -- as text and SVG (each chunk coloured by its place in its 128-byte row, so
the swizzle's XOR pattern shows)."""

from __future__ import annotations

from html import escape

import numpy as np

from threadmap.layout import GmmaDescriptor, gmma_smem_addresses

#: fill colours of the eight 16-byte chunks of a 128-byte row
CHUNK_COLOURS = ("#cfe8ff", "#ffe0b3", "#d6f5d6", "#f5d6f0", "#fff3b0", "#e0d6ff", "#d6fff9", "#ffd6d6")


def _chunks(reads: np.ndarray, elem_bits: int, major: str) -> np.ndarray:
    """The block's addresses per 16-byte chunk: (rows, chunks) with rows the MN (K-major) or K
    (MN-major) index, each chunk's first element's address."""
    per = 128 // elem_bits
    grid = reads if major == "K" else reads.T
    return grid[:, ::per]


def gmma_text(title: str, desc: GmmaDescriptor, major: str, block: tuple[int, int], elem_bits: int,
              rows: int = 16) -> str:
    """``title``, the descriptor and the first ``rows`` rows of the chunk addresses of a
    ``block`` (MN x K) read through it."""
    ch = _chunks(gmma_smem_addresses(desc, major, block[0], block[1], elem_bits), elem_bits, major)
    head = "MN" if major == "K" else "K"
    out = [title, str(desc), f"byte address of each 16-byte chunk read ({head} rows x chunks along "
                             f"{'K' if major == 'K' else 'MN'}; first {min(rows, ch.shape[0])} of {ch.shape[0]} rows):"]
    width = max(len(str(int(ch.max()))), 4)
    for i in range(min(rows, ch.shape[0])):
        out.append(f"{i:>4} " + " ".join(f"{int(a):>{width}}" for a in ch[i]))
    return "\n".join(out)


def gmma_svg(title: str, desc: GmmaDescriptor, major: str, block: tuple[int, int], elem_bits: int,
             rows: int = 32) -> str:
    """A grid of the 16-byte chunks of a ``block`` read through ``desc`` (first ``rows`` rows),
    each with its byte address, coloured by the chunk's index in its 128-byte row."""
    ch = _chunks(gmma_smem_addresses(desc, major, block[0], block[1], elem_bits), elem_bits, major)[:rows]
    cw, chh, left, top = 52, 20, 40, 36
    w, h = left + cw * ch.shape[1] + 10, top + chh * ch.shape[0] + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="monospace" '
             'font-size="10">', f'<text x="4" y="16">{escape(title)}</text>']
    for i in range(ch.shape[0]):
        y = top + i * chh
        parts.append(f'<text x="4" y="{y + 14}">{i}</text>')
        for j in range(ch.shape[1]):
            a = int(ch[i, j])
            x = left + j * cw
            parts.append(f'<rect x="{x}" y="{y}" width="{cw - 2}" height="{chh - 2}" '
                         f'fill="{CHUNK_COLOURS[(a // 16) % 8]}" stroke="#888"/>')
            parts.append(f'<text x="{x + 4}" y="{y + 14}">{a}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
