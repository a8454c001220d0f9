"""A threadmap spec of a convolution configuration's global to shared copies.

A 2.x convolution is an implicit GEMM: its mainloop copies A and B k-tiles with the GEMM's
thread maps and shared layouts (the premises of :func:`threadmap.sweep.specs.check_copies`),
from tensors whose addresses are a function of the GEMM coordinate.  For the family of problems
of :func:`threadmap.sweep.extract_conv.family` that function is a CuTe layout in the size names
(the im2col view of the activation, the filter as a matrix), so the spec is the GEMM spec's
k-tile with those global layouts: each block copies the A tile ``(kM, kK)`` at ``(bx, bz)`` and
the B tile ``(kK, kN)`` at ``(bz, by)``.  The layouts are not taken on trust: the kernel's own
iterators, run host-side on a problem of the family, must give the layouts' offsets for every
access of every thread over every k-tile (:func:`check_addresses`).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from threadmap.sweep.extract_conv import Family, NoFamily, digest, family
from threadmap.sweep.extracted import Extracted, Operand
from threadmap.sweep.library import Configuration
from threadmap.sweep.specs import NotAnalysed, Written, check_copies, ktile_stages, written


def expected_offsets(fam: Family, which: str, op: Operand, origin: int, tile_k: int, phase: int = 0) -> np.ndarray:
    """The element offsets (-1: off) of every access of every thread over the sample's
    k-tiles, in the oracle's order (thread, k-tile, vector, access of the vector), from the
    family's layout of the operand evaluated by threadmap's layout engine (B of a strided
    Dgrad: at the filter phase ``phase``, whose rows follow the earlier phases')."""
    from threadmap.spec.parsed import bind_layout

    assert op.map is not None
    env = dict(fam.sample)
    lay = bind_layout(fam.a if which == "A" else fam.b, env)
    starts = op.gmap.starts()                                    # (T, J, 2): contiguous, strided
    sub = np.arange(op.accesses_per_vector) * op.access
    cont = starts[..., 0][..., None] + sub                       # (T, J, V)
    strd = np.broadcast_to(starts[..., 1][..., None], cont.shape)
    row_major = int(op.map["contiguous_mode"]) == 1
    rows, cols = (strd, cont) if row_major else (cont, strd)
    kt = np.arange(fam.tiles)[None, :, None, None] * tile_k
    m_ext, n_ext, k_ext = fam.extents["M"], fam.extents["N"], fam.extents["K"]
    if which == "A":
        r = origin + rows[:, None]
        c = kt + cols[:, None]
        ext = (m_ext, k_ext)
    else:
        r = phase * k_ext + kt + rows[:, None]
        c = origin + cols[:, None]
        ext = ((phase + 1) * k_ext, n_ext)
    r, c = np.broadcast_arrays(r, c)
    # the access's last element decides (a vector predicate)
    last_r = r + (0 if row_major else op.access - 1)
    last_c = c + (op.access - 1 if row_major else 0)
    ok = (last_r < ext[0]) & (last_c < ext[1])
    off = np.asarray(lay((np.where(ok, r, 0).reshape(-1), np.where(ok, c, 0).reshape(-1))), dtype=np.int64)
    return np.where(ok.reshape(-1), off, -1)


def _wait_status(status: int) -> str:
    """A child's ``waitpid`` status in words (the oracle prints it raw)."""
    if status & 0x7F == 0:
        return f"exited with code {status >> 8}"
    return f"was killed by signal {status & 0x7F}"


def check_addresses(cfg: Configuration, fam: Family, ex: Extracted) -> None:
    """The family's layouts give the addresses the kernel's iterators compute (the oracle's
    checksums on the sample problem, first and last CTA row of A and column of B)."""
    tm, tn, tk = ex.shape
    origins = {"A": (0, (fam.extents["M"] - 1) // tm * tm), "B": (0, (fam.extents["N"] - 1) // tn * tn)}
    for w, (first, last) in origins.items():
        for i, origin in enumerate((first, last)):
            got = ex.oracle.get(f"oracle.{w}{i}", "")
            if not got or got.startswith("?"):
                # the oracle prints why (a sentence), or the type of an iterator it cannot construct
                why = got[1:200] if " " in got else f"the iterator {got[1:160]} has no constructor the oracle knows"
                why = re.sub(r"ended with status (\d+)", lambda m: _wait_status(int(m.group(1))), why)
                raise NotAnalysed("iterator addresses not checked", f"{w}: {why if got else 'nothing printed'}")
            # the oracle's B1 is the last filter phase's (one phase but in a strided Dgrad)
            phase = (fam.phases - 1) * i if w == "B" else 0
            want = " ".join(str(x) for x in digest(expected_offsets(fam, w, ex.operands[w], origin, tk, phase)))
            if got != want:
                raise NotAnalysed("iterator addresses differ from the spec's layout",
                                  f"{w}: on the sample problem {fam.sample} the iterator's offsets (checksums "
                                  f"{got}) are not the layout {fam.a if w == 'A' else fam.b}'s ({want}), "
                                  f"CTA at {origin}")


def conv_spec_text(cfg: Configuration, ex: Extracted, headers: str) -> Written:
    """The spec of one convolution configuration, or NotAnalysed with the first premise that
    fails."""
    try:
        fam = family(cfg)
    except NoFamily as e:
        raise NotAnalysed("convolution without a spec family", str(e)) from None
    copies = check_copies(ex)
    check_addresses(cfg, fam, ex)
    a, b = ex.operands["A"], ex.operands["B"]
    tm, tn, tk = ex.shape
    f = cfg.fields
    kernels = len(cfg.kernels)
    conv = f"{cfg.kind} {f['conv_kind']} ({f['iterator_algorithm']}"
    conv += f", {f['group_mode']})" if f["group_mode"] != "NoneGroup" else ")"
    doc: dict[str, Any] = {
        "spec": 1,
        "name": f"{cfg.kernels[0]} mainloop: cp.async of A and B into shared memory",
        "description": (f"CUTLASS {headers} {conv} as an implicit GEMM ({kernels} kernel{'s' if kernels > 1 else ''} "
                        f"share this configuration): the mainloop (ImplicitGemmMultistage) with tile "
                        f"{tm}x{tn}x{tk}, {ex.stages} stages, GEMM (M, N, K) = ({fam.m}, {fam.n}, {fam.k}); "
                        f"the problems: {fam.what}; shared layouts {a.smem_layout} and {b.smem_layout}"),
        "element": a.element,
        "threads": a.threads,
        "sizes": fam.sizes,
        "assume": fam.assume,
        "grid": [f"ceil_div({fam.m}, {tm})", f"ceil_div({fam.n}, {tn})", f"ceil_div({fam.k}, {tk})"],
        "tensors": {
            "A": {"memory": "global", "layout": fam.a},
            "B": {"memory": "global", "layout": fam.b},
            "sA": {"memory": "shared", "layout": copies.layouts["A"]},
            "sB": {"memory": "shared", "layout": copies.layouts["B"]},
        },
        "stages": ktile_stages(copies.maps, copies.atoms, ([tm, tk], list(fam.at_a)), ([tk, tn], list(fam.at_b))),
        # every CTA of a grid row (column) reads the same A (B) k-tile, and an activation
        # element is read once per filter tap that reaches it
        "expect": {"coverage": "replicated"},
    }
    head = (f"# Written by threadmap sweep from CUTLASS {headers}'s templates: the generator's kernel text for\n"
            f"# {cfg.kernels[0]} instantiated host-side; thread maps, cp.async widths, shared layouts\n"
            "# (offsets of every cell, fitted exactly) printed by the C++ objects themselves; the global\n"
            "# layouts checked against the kernel's iterators run host-side on one problem of the family.\n")
    return written(doc, head, copies.layouts, element_b=b.element)
