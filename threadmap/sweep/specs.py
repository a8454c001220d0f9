"""A threadmap spec of a configuration's global to shared copies, from what the C++ printed.

The spec is one k-tile of the mainloop (one stage of its shared ring): each block copies the
A tile ``(kM, kK)`` at ``(bx, bz)`` and the B tile ``(kK, kN)`` at ``(bz, by)`` with the global
iterators' thread maps and ``cp.async`` widths into one stage of the shared layouts (as the real
layout objects lay it out, the other stages' room included), then waits at a barrier.  The
sizes come from the operands' alignments (``assume:``: a contiguous extent is a multiple of
its operand's alignment); K is a multiple of ``kK``, because the iterator loads the partial
k-tile first (its residue), which a spec's tiles at multiples of the tile cannot express.

Before a spec is written, what it takes for granted is checked against the C++ output:

* ``threadmap.cutlass`` computes the global iterator's thread map as the C++ map does (every
  thread's first access, the iteration counts and steps);
* the shared iterator's map puts access *j* of every thread on the element the global
  iterator's access *j* reads (it may be another map, a transpose: the copy pairs them by
  index), so one map partitions both sides;
* the shared layout has an exact CuTe form (:mod:`threadmap.sweep.fit`);
* the thread map's shape is the tile and its vector is a whole number of ``cp.async``.

Each that fails is the configuration's reason for not being analysed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import yaml

from threadmap.cutlass import THREAD_MAPS
from threadmap.errors import ThreadmapError
from threadmap.sweep.extracted import Extracted, Operand
from threadmap.sweep.fit import fit_layout
from threadmap.sweep.library import Configuration

#: the largest extent a spec's size ranges allow (the grid's y and z stay within 65535 tiles)
MAX_EXTENT = 1 << 20


class _PlainDumper(yaml.SafeDumper):
    """YAML without anchors: both sides of a copy spell their thread map out."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


class NotAnalysed(Exception):
    """Why a configuration has no spec (a reason, not an error of the sweep): ``kind`` is the
    class of reason a summary counts, ``detail`` the configuration's own words."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True)
class Written:
    """A configuration's spec text, the hash of its content without its names (configurations
    with equal specs are verified once) and the fitted shared layouts."""

    text: str
    content_hash: str
    layouts: dict[str, str]


def _logical(starts: np.ndarray, epa: int, row_contiguous: bool) -> np.ndarray:
    """Every element an access sequence touches as (row, column) of the matrix tile:
    (threads, elements, 2), in access order."""
    v = np.arange(epa)
    c = starts[..., 0][..., None] + v
    s = np.broadcast_to(starts[..., 1][..., None], c.shape)
    rc = np.stack([c, s], axis=-1) if row_contiguous else np.stack([s, c], axis=-1)
    return rc.reshape(starts.shape[0], -1, 2)


def row_contiguous(layout_type: str) -> bool | None:
    """Whether a CUTLASS matrix layout type's contiguous dimension is the row index
    (``ColumnMajor...``), the column index (``RowMajor...``), or neither (None)."""
    name = layout_type.removeprefix("cutlass::layout::")
    if name.startswith("ColumnMajor"):
        return True
    if name.startswith("RowMajor"):
        return False
    return None


def same_thread_map(which: str, op: Operand) -> None:
    """The global iterator's thread map has a spec spelling, and threadmap.cutlass computes it
    as the C++ map does (every thread's first access, the iteration counts and steps)."""
    if op.map is None:
        raise NotAnalysed("thread map without a spec spelling",
                          f"{which}: the global iterator's thread map {op.map_type[:160]} has no spec spelling")
    tm = op.map
    cls = THREAD_MAPS.get(str(tm["name"]))
    if cls is None:
        raise NotAnalysed("thread map without a spec spelling", f"{which}: threadmap.cutlass has no {tm['name']}")
    args: list[Any] = [tuple(tm["shape"]), tm["threads"]]
    if "warp_thread_arrangement" in tm:
        args.append(tuple(tm["warp_thread_arrangement"]))
    args.append(tm["elements_per_access"])
    try:
        py = cls(*args)
    except (ThreadmapError, TypeError) as e:
        raise NotAnalysed("threadmap.cutlass differs from the C++ thread map",
                          f"{which}: threadmap.cutlass refuses {tm['name']}{args}: {e}") from None
    g = op.gmap
    got = np.asarray(py.access_offsets()).reshape(py.threads, -1, 2)
    same = (tuple(py.iterations) == g.iterations and tuple(py.delta) == g.delta and got.shape == g.starts().shape
            and np.array_equal(got, g.starts()))
    if not same:
        raise NotAnalysed("threadmap.cutlass differs from the C++ thread map",
                          f"{which}: threadmap.cutlass's {py.cxx_type} differs from the C++ map (iterations "
                          f"{tuple(py.iterations)} vs {g.iterations}, delta {tuple(py.delta)} vs {g.delta})")


def check_thread_map(which: str, op: Operand) -> None:
    """The premises about the operand's thread maps (see the module docstring)."""
    same_thread_map(which, op)
    assert op.map is not None
    tm = op.map
    g = op.gmap
    rows, cols = op.tile
    mode = int(tm["contiguous_mode"])
    if mode not in (0, 1):
        raise NotAnalysed("global layout neither row- nor column-major",
                          f"{which}: the global layout {op.layout} is neither row- nor column-major")
    want = (cols, rows) if mode == 1 else (rows, cols)
    if tuple(tm["shape"]) != want:
        raise NotAnalysed("thread map shape is not the tile",
                          f"{which}: the thread map's shape {tuple(tm['shape'])} is not the tile {op.tile}")
    # the copy pairs access j of the two iterators: both must name the same elements
    srow = row_contiguous(op.smem_layout)
    if srow is None:
        raise NotAnalysed("shared layout neither row- nor column-major",
                          f"{which}: the shared layout {op.smem_layout} is neither row- nor column-major")
    src = _logical(g.starts(), g.epa, mode == 0)
    dst = _logical(op.smap.starts(), op.smap.epa, srow)
    if src.shape != dst.shape or not np.array_equal(src, dst):
        raise NotAnalysed("shared iterator pairs accesses differently",
                          f"{which}: the shared iterator's thread map visits the tile in another order than "
                          "the global iterator's (the copy pairs their accesses by index)")


def _check_access(which: str, op: Operand, epa: int) -> tuple[str, dict[str, Any]]:
    """The cp.async operation of one access, by its CuTe name, and the thread map as the spec
    gives it (with ``accesses_per_vector`` when an access is narrower than the map's vector)."""
    assert op.map is not None
    if op.access * op.accesses_per_vector != epa:
        raise NotAnalysed("accesses do not tile the thread-map vector",
                          f"{which}: {op.accesses_per_vector} accesses of {op.access} elements per vector of {epa}")
    bits = op.access * op.bits
    if bits not in (32, 64, 128):
        raise NotAnalysed("no cp.async of this width", f"{which}: a cp.async of {bits} bits does not exist")
    kind = {0: "CACHEALWAYS", 1: "CACHEGLOBAL"}.get(op.cache_op)
    if kind is None:
        raise NotAnalysed("no cp.async of this width",
                          f"{which}: cache operation {op.cache_op} has no cp.async spelling")
    tm = dict(op.map)
    if op.accesses_per_vector != 1:
        tm["accesses_per_vector"] = op.accesses_per_vector
    return f"SM80_CP_ASYNC_{kind}<uint{bits}_t>", tm


def check_access(which: str, op: Operand) -> tuple[str, dict[str, Any]]:
    """The cp.async operation of the operand's accesses by its CuTe name and its thread map as
    a spec gives it, or NotAnalysed (the premises of :func:`check_copies` about widths)."""
    return _check_access(which, op, op.gmap.epa)


def _size(tile: int, multiple: int, limit: int) -> dict[str, Any]:
    """A size range with a whole and a ragged sample (the ragged one respects ``multiple``)."""
    top = (min(MAX_EXTENT, limit) // multiple) * multiple
    samples = sorted({2 * tile, max(multiple, 2 * tile - multiple)})
    return {"min": multiple, "max": top, "samples": samples}


@dataclass(frozen=True)
class Copies:
    """What both operands' copies are, once every premise holds: per operand the cp.async
    operation, the thread map as the spec gives it and the fitted shared layout."""

    atoms: dict[str, str]
    maps: dict[str, dict[str, Any]]
    layouts: dict[str, str]


def check_copies(ex: Extracted) -> Copies:
    """The premises shared by every mainloop's spec (see the module docstring), in order; the
    first that fails is raised as :class:`NotAnalysed`."""
    if ex.error:
        raise NotAnalysed(ex.error_kind or "extraction failed", ex.error)
    a, b = ex.operands["A"], ex.operands["B"]
    for w, op in (("A", a), ("B", b)):
        if op.element.startswith("?"):
            raise NotAnalysed("element type without a spec name",
                              f"{w}: the element type {op.element[1:]} has no spec name")
    if a.threads != b.threads:
        raise NotAnalysed("A and B thread counts differ",
                          f"the A and B thread maps have {a.threads} and {b.threads} threads")
    check_thread_map("A", a)
    check_thread_map("B", b)
    access = {w: _check_access(w, op, op.gmap.epa) for w, op in (("A", a), ("B", b))}
    layouts: dict[str, str] = {}
    for w, op in (("A", a), ("B", b)):
        fitted = fit_layout(op.table)
        if fitted.layout is None:
            raise NotAnalysed("shared layout without an exact spec form",
                              f"{w}: the shared layout {op.smem_layout.removeprefix('cutlass::layout::')} "
                              f"({ex.stages} stages) has no exact spec form: {fitted.reason}")
        layouts[w] = fitted.layout
    return Copies({w: v[0] for w, v in access.items()}, {w: v[1] for w, v in access.items()}, layouts)


def written(doc: dict[str, Any], head: str, layouts: dict[str, str], element_b: str | None = None) -> Written:
    """A spec document as text (after the comment ``head``), with the hash of its content
    without its names; ``element_b``, B's element where it is not the spec's (A's), is given to
    the B tensors ``B`` and ``sB``."""
    if element_b is not None and element_b != doc["element"]:
        doc["tensors"]["B"]["element"] = element_b
        doc["tensors"]["sB"]["element"] = element_b
    body = yaml.dump(doc, Dumper=_PlainDumper, sort_keys=False, default_flow_style=None, width=110)
    content = {k: v for k, v in doc.items() if k not in ("name", "description")}
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:24]
    return Written(head + body, digest, layouts)


def ktile_stages(maps: Mapping[str, Any], atoms: Mapping[str, str], a: tuple[list[Any], list[str]],
                 b: tuple[list[Any], list[str]]) -> list[Any]:
    """A 2.x mainloop's k-tile as spec stages: A's tile ``a = (extents, at)`` and B's ``b``
    copied by cp.async with their thread maps into ``sA`` and ``sB``, then a barrier."""
    stages: list[Any] = []
    for w, (tile, at) in (("A", a), ("B", b)):
        stages.append({"copy": {"src": {"tensor": w, "tile": tile, "at": at, "thread_map": maps[w]},
                                "dst": {"tensor": f"s{w}", "thread_map": maps[w]},
                                "predicate": "vector", "atom": atoms[w],
                                "name": f"cp.async {w} (Iterator{w} -> SmemIterator{w})"}})
    return [*stages, "barrier"]


def spec_text(cfg: Configuration, ex: Extracted, headers: str) -> Written:
    """The spec of one configuration, or NotAnalysed with the first premise that fails."""
    copies = check_copies(ex)
    a, b = ex.operands["A"], ex.operands["B"]
    atoms, maps, layouts = copies.atoms, copies.maps, copies.layouts
    tm, tn, tk = ex.shape
    a_rows = a.map is not None and a.map["contiguous_mode"] == 0   # A column-major: M contiguous
    b_rows = b.map is not None and b.map["contiguous_mode"] == 1   # B row-major: N contiguous
    mult = {"M": a.access if a_rows else 1, "N": b.access if b_rows else 1}
    assume = [f"K % {tk} == 0"]
    if not a_rows and tk % a.access:
        assume.append(f"K % {a.access} == 0")
    if b.map is not None and b.map["contiguous_mode"] == 0 and tk % b.access:
        assume.append(f"K % {b.access} == 0")
    assume += [f"{n} % {m} == 0" for n, m in mult.items() if m > 1]
    kernels = len(cfg.kernels)
    f = cfg.fields
    doc = {
        "spec": 1,
        "name": f"{cfg.kernels[0]} mainloop: cp.async of A and B into shared memory",
        "description": (f"CUTLASS {headers} {f['family']} GEMM ({kernels} kernel{'s' if kernels > 1 else ''} share "
                        f"this configuration): the kernel's mainloop (MmaMultistage) with tile {tm}x{tn}x{tk}, "
                        f"{ex.stages} stages; shared layouts {a.smem_layout} and {b.smem_layout}"),
        "element": a.element,
        "threads": a.threads,
        "sizes": {"M": _size(tm, mult["M"], MAX_EXTENT),
                  "N": _size(tn, mult["N"], 65535 * tn),
                  "K": {**_size(tk, tk, 65535 * tk), "samples": [2 * tk]}},
        "assume": assume,
        "grid": [f"ceil_div(M, {tm})", f"ceil_div(N, {tn})", f"K / {tk}"],
        "tensors": {
            "A": {"memory": "global", "layout": "(M,K):(K,1)" if not a_rows else "(M,K):(1,M)"},
            "B": {"memory": "global", "layout": "(K,N):(N,1)" if b_rows else "(K,N):(1,K)"},
            "sA": {"memory": "shared", "layout": layouts["A"]},
            "sB": {"memory": "shared", "layout": layouts["B"]},
        },
        "stages": ktile_stages(maps, atoms, ([tm, tk], ["bx", "bz"]), ([tk, tn], ["bz", "by"])),
        # every CTA of a row (column) of the grid reads the same A (B) k-tile: each element of
        # a global operand is read once per tile of the other operand
        "expect": {"coverage": "replicated"},
    }
    head = (f"# Written by threadmap sweep from CUTLASS {headers}'s templates: the generator's kernel text for\n"
            f"# {cfg.kernels[0]} instantiated host-side; thread maps, cp.async widths and shared layouts\n"
            "# (offsets of every cell, fitted exactly) printed by the C++ objects themselves.\n")
    return written(doc, head, layouts, element_b=b.element)

