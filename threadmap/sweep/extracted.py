"""What the extraction programs print about a 2.x mainloop, parsed: the thread maps' access
sequences, each operand's global to shared copy, a configuration's mainloop (or why it could
not be read).  The extractors (:mod:`~threadmap.sweep.extract` and the families' modules) write
these; the spec writers read them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class MapOffsets:
    """A C++ thread map's access sequence: every thread's first access (contiguous,
    strided), the iteration counts and steps, the elements per access."""

    initial: np.ndarray       # (threads, 2)
    iterations: tuple[int, int]
    delta: tuple[int, int]
    epa: int

    def starts(self) -> np.ndarray:
        """Every access's first element, (threads, accesses, 2), iterator order (contiguous
        fastest): what ``PitchLinearThreadMap.access_offsets`` computes in Python."""
        ic, is_ = self.iterations
        c = np.arange(ic) * self.delta[0]
        s = np.arange(is_) * self.delta[1]
        cc = self.initial[:, 0][:, None, None] + c[None, None, :]
        ss = self.initial[:, 1][:, None, None] + s[None, :, None]
        cc, ss = np.broadcast_arrays(cc, ss)
        return np.stack([cc, ss], axis=-1).reshape(self.initial.shape[0], -1, 2)


@dataclass
class Operand:
    """One operand's global to shared copy as the C++ objects describe it."""

    element: str           # spec element name, or "?<C++ type>"
    bits: int
    layout: str            # the global iterator's layout type
    tile: tuple[int, int]  # (rows, columns) of one stage
    access: int            # elements per cp.async
    accesses_per_vector: int
    cache_op: int          # CacheOperation::Kind: 0 Always, 1 Global
    threads: int
    map: dict[str, Any] | None   # threadmap_spec.h's thread_map entry; None: no spelling
    map_type: str                # the C++ type when there is no spelling
    gmap: MapOffsets
    smap: MapOffsets
    smem_layout: str
    table: np.ndarray            # (rows, columns) element offsets of the shared layout


@dataclass
class Extracted:
    """A configuration's mainloop, or why it could not be read."""

    mainloop: str = ""
    shape: tuple[int, int, int] = (0, 0, 0)
    stages: int = 0
    operands: dict[str, Operand] = field(default_factory=dict)
    error: str = ""
    error_kind: str = ""      # the class of the error (what a summary counts)
    #: other printed fields by name (a convolution's ``oracle.A0`` ... checksums)
    oracle: dict[str, str] = field(default_factory=dict)


def printed_ints(text: str) -> list[int]:
    """A printed field of integers (space-separated)."""
    return [int(x) for x in text.split()]


def _map_offsets(fields: dict[str, str], key: str) -> MapOffsets:
    init = np.asarray(printed_ints(fields[f"{key}.initial"]), dtype=np.int64).reshape(-1, 2)
    it = printed_ints(fields[f"{key}.iterations"])
    d = printed_ints(fields[f"{key}.delta"])
    return MapOffsets(init, (it[0], it[1]), (d[0], d[1]), int(fields[f"{key}.epa"]))


def parse_operand(fields: dict[str, str], w: str) -> Operand:
    """One operand's printed fields (``w``: its letter, the fields' prefix) as an
    :class:`Operand`."""
    import yaml

    f = {k[2:]: v for k, v in fields.items() if k.startswith(f"{w}.")}
    rows, cols = printed_ints(f["tile"])
    m = f["map"]
    tm: dict[str, Any] | None = None
    if not m.startswith("?"):
        tm = dict(yaml.safe_load(m)["thread_map"])
    table = np.asarray(printed_ints(f["table"]), dtype=np.int64).reshape(rows, cols)
    return Operand(f["element"], int(f["bits"]), f["layout"], (rows, cols), int(f["access"]),
                   int(f["accesses_per_vector"]), int(f["cache_op"]), int(f["threads"]), tm,
                   m[1:] if tm is None else "", _map_offsets(f, "gmap"), _map_offsets(f, "smap"),
                   f["smem_layout"], table)
