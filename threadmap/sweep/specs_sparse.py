"""A threadmap spec of a sparse GEMM configuration's global to shared copies.

One k-tile of ``SparseMmaMultistage`` (one stage of its shared ring): each block copies the
compressed A tile ``(kM, kK / kSparse)`` at ``(bx, bz)``, the B tile ``(kK, kN)`` at
``(bz, by)`` and the metadata E tile at ``(bx, bz)`` with the global iterators' thread maps and
cp.async widths into one stage of the shared layouts, then waits at a barrier.  E is given in
the pitch-linear view its iterator reads (``PredicatedTileAccessIterator`` over
``ColumnMajorInterleaved<I>`` is the pitch-linear iterator over ``(M * I, KE / I)`` with the
layout's stride ``ldm``; packed, ``ldm = M * I``): the tensor ``(I*M, KE/I):(1, I*M)`` with
``KE = K / kSparse / kElementsPerElementE``, its tile ``(I * kM, kKE / I)``.

Only the first ``Detail::kValidWarps`` warps copy E (``is_warp_valid_``), and a spec's copies
are made by all of its ``threads``.  Where E's thread map has fewer threads than the CTA, E's
copy is a second spec document whose CTA is those warps (threads ``0 .. 32 * kValidWarps - 1``
run E's map exactly as in the kernel; the other warps issue no E access), verified beside the
first (A and B); where it has all of them, the three copies are one document.

Premises checked against the C++ output (each failure is a reason, :class:`NotAnalysed`):
those of :func:`threadmap.sweep.specs.check_copies` for A, B and E (thread maps, pairing of
the global and shared accesses, cp.async widths, exact shared layout forms); A's and B's
global layouts row- or column-major, E's ``ColumnMajorInterleaved<I>`` with the printed
interleave, E's iterator tile ``(kM, kK / kSparse / kElementsPerElementE)`` and its shared tile
that tile's pitch-linear view; one E access per thread-map vector (the E loop has no
``kAccessesPerVector``); ``32 * kValidWarps`` = E's map's threads; and the sizes: the problems
``GemmKernel::can_implement`` accepts are, for each of M, N and K varied alone, exactly the
multiples of one number (K's a multiple of ``kK``), which the spec assumes.
"""

from __future__ import annotations

import hashlib
from typing import Any

from threadmap.sweep.extracted import Extracted, Operand
from threadmap.sweep.library import Configuration
from threadmap.sweep.specs import (
    MAX_EXTENT,
    NotAnalysed,
    Written,
    check_access,
    check_copies,
    check_thread_map,
    written,
)

#: what separates the documents of a configuration with two specs (A and B; E)
DOCUMENT_SEPARATOR = "\n---\n"


def accepted_multiple(which: str, bits: str) -> int:
    """The number whose multiples are exactly the sizes ``can_implement`` accepted (``bits``:
    '1' or '0' for the sizes 1, 2, ...), or NotAnalysed."""
    ok = [i + 1 for i, b in enumerate(bits) if b == "1"]
    if len(ok) < 2:
        raise NotAnalysed("problem sizes not a lattice",
                          f"{which}: can_implement accepts {len(ok)} of the sizes 1..{len(bits)}")
    d = ok[0]
    lattice = list(range(d, len(bits) + 1, d))
    if ok != lattice:
        odd = sorted(set(ok) ^ set(lattice))[:3]
        raise NotAnalysed("problem sizes not a lattice",
                          f"{which}: the sizes can_implement accepts in 1..{len(bits)} are not the multiples of "
                          f"{d} (first differences: {odd})")
    return d


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split()]


def check_metadata(ex: Extracted) -> tuple[str, dict[str, Any], int]:
    """E's premises (see the module docstring): its cp.async operation and thread map as a
    spec gives them, and its interleave."""
    e: Operand = ex.operands["E"]
    o = ex.oracle
    tm, _, tk = ex.shape
    sparse, epe = int(o["sparse.kSparse"]), int(o["sparse.kElementsPerElementE"])
    inter = int(o["sparse.E.interleave"])
    if e.element.startswith("?"):
        raise NotAnalysed("element type without a spec name", f"E: the element type {e.element[1:]} has no spec name")
    want_layout = f"cutlass::layout::ColumnMajorInterleaved<{inter}>"
    if e.layout != want_layout:
        raise NotAnalysed("metadata layout not modelled",
                          f"E: the global layout {e.layout} is not {want_layout}")
    shape = tuple(_ints(o["sparse.E.shape"]))
    if tk % (sparse * epe) or shape != (tm, tk // sparse // epe):
        raise NotAnalysed("metadata tile not modelled",
                          f"E: the iterator's tile {shape} is not (kM, kK / kSparse / kElementsPerElementE) = "
                          f"({tm}, {tk}/{sparse}/{epe})")
    if shape[1] % inter or e.tile != (tm * inter, shape[1] // inter):
        raise NotAnalysed("metadata tile not modelled",
                          f"E: the shared iterator's tile {e.tile} is not the pitch-linear view "
                          f"({tm}*{inter}, {shape[1]}/{inter}) of the iterator's tile {shape}")
    if e.accesses_per_vector != 1:
        raise NotAnalysed("accesses do not tile the thread-map vector",
                          f"E: {e.accesses_per_vector} accesses per vector (the E copy issues one per vector)")
    check_thread_map("E", e)
    valid = int(o["sparse.kValidWarps"])
    if valid * 32 != e.threads:
        raise NotAnalysed("metadata copy by part of a warp",
                          f"E: {valid} warps copy E (kValidWarps) but its thread map has {e.threads} threads")
    atom, tmap = check_access("E", e)
    return atom, tmap, inter


def _sizes(ex: Extracted) -> tuple[dict[str, Any], list[str], dict[str, int]]:
    """The sizes and assumptions of the problems the kernel accepts (can_implement)."""
    tm, tn, tk = ex.shape
    mult = {w: accepted_multiple(w, ex.oracle[f"sparse.accepts.{w}"]) for w in "MNK"}
    if mult["K"] % tk:
        raise NotAnalysed("problem sizes not a lattice",
                          f"K: can_implement accepts the multiples of {mult['K']}, not of kK = {tk}")
    sizes: dict[str, Any] = {}
    for w, tile, limit in (("M", tm, MAX_EXTENT), ("N", tn, 65535 * tn), ("K", tk, 65535 * tk)):
        m = mult[w]
        top = min(MAX_EXTENT, limit) // m * m
        samples = sorted({2 * tile, max(m, 2 * tile - m)}) if w != "K" else [2 * tk]
        sizes[w] = {"min": m, "max": top, "samples": samples}
    assume = [f"{w} % {m} == 0" for w, m in mult.items() if m > 1]
    return sizes, assume, mult


def _copy(tensor: str, tile: list[int], at: list[str], tmap: dict[str, Any], atom: str, what: str) -> dict[str, Any]:
    return {"copy": {"src": {"tensor": tensor, "tile": tile, "at": at, "thread_map": tmap},
                     "dst": {"tensor": f"s{tensor}", "thread_map": tmap},
                     "predicate": "vector", "atom": atom, "name": what}}


def sparse_spec_text(cfg: Configuration, ex: Extracted, headers: str) -> Written:
    """The spec of one sparse configuration (one or two documents), or NotAnalysed with the
    first premise that fails."""
    from threadmap.sweep.fit import fit_layout

    copies = check_copies(ex)
    e_atom, e_map, inter = check_metadata(ex)
    fitted = fit_layout(ex.operands["E"].table)
    if fitted.layout is None:
        raise NotAnalysed("shared layout without an exact spec form",
                          f"E: the shared layout {ex.operands['E'].smem_layout} has no exact spec form: "
                          f"{fitted.reason}")
    sizes, assume, _ = _sizes(ex)
    a, b, e = ex.operands["A"], ex.operands["B"], ex.operands["E"]
    tm, tn, tk = ex.shape
    o = ex.oracle
    sparse, epe = int(o["sparse.kSparse"]), int(o["sparse.kElementsPerElementE"])
    ka = tk // sparse
    ke = tk // sparse // epe // inter          # E's tile columns in the pitch-linear view
    a_cols = a.map is not None and a.map["contiguous_mode"] == 0   # A column-major: M contiguous
    b_rows = b.map is not None and b.map["contiguous_mode"] == 1   # B row-major: N contiguous
    kc = f"K/{sparse}"
    layouts = {**copies.layouts, "E": fitted.layout}
    tensors = {
        "A": {"memory": "global", "layout": f"(M,{kc}):(1,M)" if a_cols else f"(M,{kc}):({kc},1)"},
        "B": {"memory": "global", "layout": "(K,N):(N,1)" if b_rows else "(K,N):(1,K)"},
        "sA": {"memory": "shared", "layout": copies.layouts["A"]},
        "sB": {"memory": "shared", "layout": copies.layouts["B"]},
    }
    e_tensors = {"E": {"memory": "global", "layout": f"({inter}*M,K/{sparse * epe * inter}):(1,{inter}*M)",
                       "element": e.element},
                 "sE": {"memory": "shared", "layout": fitted.layout, "element": e.element}}
    e_copy = _copy("E", [inter * tm, ke], ["bx", "bz"], e_map, e_atom,
                   f"cp.async E (IteratorE -> SmemIteratorE, warps 0..{int(o['sparse.kValidWarps']) - 1})")
    stages: list[Any] = [
        _copy("A", [tm, ka], ["bx", "bz"], copies.maps["A"], copies.atoms["A"],
              "cp.async A (IteratorA -> SmemIteratorA)"),
        _copy("B", [tk, tn], ["bz", "by"], copies.maps["B"], copies.atoms["B"],
              "cp.async B (IteratorB -> SmemIteratorB)"),
    ]
    one = e.threads == a.threads
    if one:
        tensors.update(e_tensors)
        stages.append(e_copy)
    stages.append("barrier")
    kernels = len(cfg.kernels)
    what = (f"CUTLASS {headers} sparse GEMM ({kernels} kernel{'s' if kernels > 1 else ''} share this configuration): "
            f"the mainloop (SparseMmaMultistage) with tile {tm}x{tn}x{tk}, kSparse {sparse}, {ex.stages} stages; "
            f"A compressed (M x K/{sparse}), the metadata E ColumnMajorInterleaved<{inter}> of M x K/{sparse * epe} "
            f"{e.element} read as ({inter}*M, K/{sparse * epe * inter}); the sizes those can_implement accepts; "
            f"shared layouts {a.smem_layout}, {b.smem_layout}, {e.smem_layout}")
    grid = [f"ceil_div(M, {tm})", f"ceil_div(N, {tn})", f"K / {tk}"]
    doc: dict[str, Any] = {
        "spec": 1,
        "name": f"{cfg.kernels[0]} mainloop: cp.async of A, B{' and E' if one else ''} into shared memory",
        "description": what, "element": a.element, "threads": a.threads, "sizes": sizes, "assume": assume,
        "grid": grid, "tensors": tensors, "stages": stages,
        # every CTA of a grid row (column) reads the same A and E (B) k-tile
        "expect": {"coverage": "replicated"},
    }
    head = (f"# Written by threadmap sweep from CUTLASS {headers}'s templates: the generator's kernel text for\n"
            f"# {cfg.kernels[0]} instantiated host-side; thread maps, cp.async widths and shared layouts\n"
            "# (offsets of every cell, fitted exactly) printed by the C++ objects themselves.\n")
    first = written(doc, head, layouts, element_b=b.element)
    if one:
        return first
    valid = int(o["sparse.kValidWarps"])
    doc_e: dict[str, Any] = {
        "spec": 1,
        "name": f"{cfg.kernels[0]} mainloop: cp.async of the metadata E by warps 0..{valid - 1}",
        "description": what + f"; E is copied by the first {valid} warps only (is_warp_valid_): this CTA is them",
        "element": e.element, "threads": e.threads, "sizes": sizes, "assume": assume, "grid": grid,
        "tensors": e_tensors, "stages": [e_copy, "barrier"], "expect": {"coverage": "replicated"},
    }
    second = written(doc_e, f"# The metadata E's copy of {cfg.kernels[0]} (its warps alone).\n", layouts)
    digest = hashlib.sha256(f"{first.content_hash}\0{second.content_hash}".encode()).hexdigest()[:24]
    return Written(first.text + DOCUMENT_SEPARATOR + second.text, digest, layouts)
