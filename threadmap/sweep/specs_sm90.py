"""A threadmap spec of a 3.x (sm90a) mainloop, after checking threadmap's Hopper models against
what CUTLASS's CollectiveBuilder printed.

Cross-checks (each difference is the configuration's reason for not being analysed, with the
first cell or field that differs as its witness):

* the shared layout: the builder's GMMA atom (``SmemLayoutAtomA``) is one of threadmap's
  ``gmma_layout_atom(major, swizzle, bits)``, and threadmap's ``tile_to_shape`` of it to
  ``(MN, K, Stages)`` in the builder's order (``Step<_2,_1,_3>`` for an MN-major operand) prints
  as ``SmemLayoutA`` and gives, at every cell, the element the kernel addresses there;
* the TMA descriptor: threadmap's ``make_tma_copy`` of stage 0 (the collective's
  ``make_tma_copy_A_sm90``: the ``(MN, K)`` tile, multicast over the cluster's other mode) for
  the sample problem receives every ``cuTensorMapEncodeTiled`` argument CuTe passed.

The spec (one per configuration) is the mainloop's whole stage ring as a pipeline: the producer
warp waits for a stage's empty barrier, expects ``TmaTransactionBytes`` on its full barrier and
issues the A and B TMA loads; each consumer warpgroup (two in a cooperative kernel, one per tile
otherwise) waits for the full barrier, issues its wgmma on the stage through GMMA descriptors,
waits for the previous one (``warpgroup_wait<K_PIPE_MMAS>``, ``K_PIPE_MMAS = 1`` in
``sm90_mma_tma_gmma_ss_warpspecialized.hpp``) and releases the previous stage; the tail retires
and releases the last.  ``PipelineTmaAsync`` counts one arrival per consumer warpgroup (its
signalling thread) per destination CTA: ``(cluster_m + cluster_n - 1) x warpgroups``.
With a cluster of two CTAs the loads are multicast (A over the cluster's N, B over its M) and a
release arrives in both CTAs; the two CTAs multiply the ring's interleavings beyond the
explorer's budget, so one k-tile (the ring's first round) is verified there, every trip count
with one CTA.  Larger clusters are cross-checked only.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from threadmap.layout import Dyn, make_layout, make_tma_copy, parse_layout, size
from threadmap.layout.atom.mma_traits_sm90_gmma import gmma_layout_atom
from threadmap.sweep.extract_sm90 import SAMPLE_PROBLEM, Extracted3x, Operand3x
from threadmap.sweep.library import Configuration
from threadmap.sweep.specs import NotAnalysed, Written, written

#: threads per warpgroup, and the warpgroups before the consumers (the producer's)
WARPGROUP = 128
PRODUCER_WARPGROUPS = 1
#: the largest extent a spec's size ranges allow
MAX_EXTENT = 65536


def _norm(text: str) -> str:
    """A CuTe print without its static markers and spaces (``_8`` and ``8`` are one value)."""
    return re.sub(r"(?<![A-Za-z0-9])_(\d)", r"\1", text).replace(" ", "")


def major_of(stride_type: str) -> str:
    """``MN`` when the stride type's first mode is the static 1 (``is_major<0>``), else ``K``."""
    inner = stride_type[stride_type.index("<") + 1:] if "<" in stride_type else stride_type
    return "MN" if inner.startswith("C<1>") else "K"


def check_smem(which: str, op: Operand3x, mn: int, k: int, stages: int) -> tuple[str, Any]:
    """threadmap's stage ring for the operand (checked against the builder's, see the module
    docstring): its major and the tiled ``Swizzle o smem_ptr o Layout``."""
    major = major_of(op.stride)
    atom = None
    for sw in ("SW128", "SW64", "SW32", "INTER"):
        cand = gmma_layout_atom(major, sw, op.bits)
        if _norm(str(cand)) == _norm(op.atom_print):
            atom = cand
            break
    if atom is None:
        raise NotAnalysed("shared layout atom is no GMMA atom of threadmap",
                          f"{which}: {op.atom_print} is none of threadmap's {major}-major GMMA atoms of "
                          f"{op.bits}-bit elements")
    order: Any = (2, 1, 3) if major == "MN" else (1, 2, 3)
    ring = atom.tile_to_shape((mn, k, stages), order)
    if _norm(str(ring)) != _norm(op.smem):
        raise NotAnalysed("threadmap's GMMA shared layout differs from the builder's",
                          f"{which}: threadmap tiles {ring}, the builder {op.smem}")
    flat = ring.as_position_independent_swizzle_layout()
    got = np.fromiter((flat(i) for i in range(mn * k * stages)), dtype=np.int64, count=mn * k * stages)
    if got.shape != op.table.shape or not np.array_equal(got, op.table):
        i = int(np.argmax(got != op.table)) if got.shape == op.table.shape else 0
        raise NotAnalysed("threadmap's GMMA shared layout differs from the builder's",
                          f"{which}: cell {i} (of {mn}x{k}x{stages}): threadmap {int(got[i])}, the kernel "
                          f"{int(op.table[i]) if i < op.table.size else '-'}")
    # the spec's buffers: stage s lies s stages on
    per = op.table.reshape(stages, mn * k)
    if not np.array_equal(per, per[0][None, :] + np.arange(stages)[:, None] * mn * k):
        raise NotAnalysed("stages are not consecutive tiles",
                          f"{which}: the ring's stage s is not stage 0 moved by s x {mn * k} elements")
    return major, atom.tile_to_shape((mn, k), order[:2])


def check_tma(which: str, op: Operand3x, stage: Any, major: str, rows: int, tile: tuple[int, int],
              multicast: int) -> None:
    """threadmap's ``make_tma_copy`` gives CuTe's descriptor for the sample problem."""
    if op.tma is None:
        raise NotAnalysed("no TMA descriptor printed", f"{which}: the collective encoded no descriptor")
    _, _, k, batches = SAMPLE_PROBLEM
    stride = (Dyn(k), 1, Dyn(rows * k)) if major == "K" else (1, Dyn(rows), Dyn(rows * k))
    gmem = make_layout((Dyn(rows), Dyn(k), Dyn(batches)), stride)
    address = 1 << (20 if which == "A" else 21)
    try:
        tma = make_tma_copy(op.copy, gmem, stage, tile, multicast, elem_bits=op.bits, data_type=op.internal,
                            address=address)
    except Exception as e:  # noqa: BLE001 - threadmap refusing CuTe's own copy is the configuration's reason
        raise NotAnalysed("threadmap's make_tma_copy differs from CuTe's",
                          f"{which}: threadmap refuses {op.copy} of {stage}: {type(e).__name__}: {e}") from None
    d, c = tma.desc, op.tma
    r = c.rank
    ours = {"data type": d.data_type, "rank": d.rank, "dims": tuple(d.global_dim[:r]),
            "strides": tuple(d.global_strides[:r - 1]), "box": tuple(d.box_dim[:r]),
            "element strides": tuple(d.element_strides[:r]), "interleave": d.interleave, "swizzle": d.swizzle,
            "l2 promotion": d.l2_promotion, "oob fill": d.oob_fill}
    cute = {"data type": c.data_type, "rank": c.rank, "dims": c.dims, "strides": c.strides, "box": c.box,
            "element strides": c.element_strides, "interleave": c.interleave, "swizzle": c.swizzle,
            "l2 promotion": c.l2, "oob fill": c.oob}
    for name, v in ours.items():
        if v != cute[name]:
            raise NotAnalysed("threadmap's make_tma_copy differs from CuTe's",
                              f"{which}: {name} {v} (threadmap) vs {cute[name]} (CuTe) for {op.copy}, tile {tile}, "
                              f"multicast {multicast}")


def _spec_layout(stage: Any) -> str:
    """The stage's element-offset form as a spec writes it (``Sw<B,M,S> o L``), checked to parse
    back to the same function."""
    flat = stage.as_position_independent_swizzle_layout()
    text = str(flat).replace(" o 0 o ", " o ")
    back = parse_layout(text)
    for i in range(int(size(flat))):
        if back(i) != flat(i):
            raise NotAnalysed("shared layout without an exact spec form", f"{text} reads back otherwise at {i}")
    return text


def _instruction_n(tiled_mma: str) -> int | None:
    m = re.search(r"MMA_64x(\d+)x\d+_", tiled_mma)
    return int(m.group(1)) if m else None


def spec_text3x(cfg: Configuration, ex: Extracted3x, headers: str) -> Written:
    """The spec of one 3.x configuration, or NotAnalysed with the first premise that fails."""
    if ex.error:
        raise NotAnalysed(ex.error_kind or "extraction failed", ex.error)
    if ex.mainloop != "tma_gmma_ss":
        raise NotAnalysed("mainloop reads A from registers (RS)",
                          f"the TiledMma's A is not read through a GMMA descriptor: {ex.tiled_mma[:160]}")
    tm, tn, tk = ex.tile
    a, b = ex.operands["A"], ex.operands["B"]
    for w, op in (("A", a), ("B", b)):
        if op.element.startswith("?") or op.internal.startswith("?"):
            raise NotAnalysed("element type without a spec name",
                              f"{w}: the element type {op.element.lstrip('?')} has no spec name")
    major_a, stage_a = check_smem("A", a, tm, tk, ex.stages)
    major_b, stage_b = check_smem("B", b, tn, tk, ex.stages)
    cm, cn, _ = ex.cluster
    check_tma("A", a, stage_a, major_a, SAMPLE_PROBLEM[0], (tm, tk), cn)
    check_tma("B", b, stage_b, major_b, SAMPLE_PROBLEM[1], (tn, tk), cm)
    cluster = cm * cn
    if cluster > 2:
        raise NotAnalysed("cluster of more than two CTAs (cross-checked, not verified)",
                          f"cluster {cm}x{cn}: shared layouts and TMA descriptors agree with threadmap's; a consumer "
                          "releases its stage in its cluster row and column only, which the spec's arrivals "
                          "(own CTA or all) cannot say")
    consumers = ex.mma_threads // WARPGROUP
    if consumers * WARPGROUP != ex.mma_threads or consumers < 1:
        raise NotAnalysed("consumers are not whole warpgroups", f"the TiledMma has {ex.mma_threads} threads")
    n_inst = _instruction_n(ex.tiled_mma)
    align, off_a, off_b = ex.storage
    low = min((x & -x) if x else align for x in (off_a, off_b)) if align else 16
    buffer_align = min(align, low, 1024) if align else 16
    lay_a, lay_b = _spec_layout(stage_a), _spec_layout(stage_b)
    # one signalling thread per warpgroup arrives, in every CTA its stage was multicast from
    release: dict[str, Any] = {"barrier": "empty", "count": 1, **({"ctas": "all"} if cluster > 1 else {})}
    consumer_program = [
        {"loop": "iterations", "ops": [{"wait": "full"}, {"mma": ["sA", "sB"]}, {"wait_mma": 1},
                                       {"arrive": {**release, "ahead": -1}}]},
        {"after_loop": True, "first": -1, "ops": [{"wait_mma": 0}, {"arrive": release}]},
    ]
    roles: dict[str, Any] = {"producer": {"warps": [0, 0], "start_phase": 1, "program": [
        {"loop": "iterations", "ops": [
            {"wait": "empty"},
            {"arrive_expect_tx": {"barrier": "full", "bytes": int(sum(ex.tx_bytes))}},
            {"tma": {"copy": "tma_a", "barrier": "full", **({"multicast": 3} if cn == 2 else {})}},
            {"tma": {"copy": "tma_b", "barrier": "full", **({"multicast": 3} if cm == 2 else {})}}]}]}}
    for i in range(consumers):
        first = 4 * (PRODUCER_WARPGROUPS + i)
        roles[f"consumer{i}"] = {"warps": [first, first + 3], "program": consumer_program}
    gmma: dict[str, Any] = {"a": {"tensor": "sA", "major": major_a}, "b": {"tensor": "sB", "major": major_b}}
    if n_inst is not None:
        gmma["b"]["n"] = n_inst
    kernels = len(cfg.kernels)
    f = cfg.fields
    doc: dict[str, Any] = {
        "spec": 1,
        "name": f"{cfg.kernels[0]} mainloop: TMA into {ex.stages} stages, wgmma through descriptors",
        "description": (f"CUTLASS {headers} {f['family']} GEMM ({kernels} kernel{'s' if kernels > 1 else ''} share "
                        f"this configuration): {f['kernel_schedule']}, tile {tm}x{tn}x{tk}, {ex.stages} stages; "
                        f"shared layouts {a.smem} and {b.smem}; {ex.tiled_mma}"),
        "element": a.element,
        "threads": ex.threads,
        "sizes": {"M": {"min": tm, "max": MAX_EXTENT, "multiple_of": tm, "samples": [2 * tm]},
                  "N": {"min": tn, "max": MAX_EXTENT, "multiple_of": tn, "samples": [2 * tn]},
                  "K": {"min": tk, "max": MAX_EXTENT, "multiple_of": tk, "samples": [4 * tk]}},
        "grid": [f"ceil_div(M, {tm})", f"ceil_div(N, {tn})"],
        "tensors": {
            "A": {"memory": "global", "layout": "(M,K):(K,1)" if major_a == "K" else "(M,K):(1,M)"},
            "B": {"memory": "global", "layout": "(N,K):(K,1)" if major_b == "K" else "(N,K):(1,N)"},
            "sA": {"memory": "shared", "layout": lay_a, "align": buffer_align, "swizzled_by": "address"},
            "sB": {"memory": "shared", "layout": lay_b, "align": buffer_align, "swizzled_by": "address"},
        },
        "pipeline": {
            "stages": ex.stages,
            # a cluster's two CTAs multiply the ring's interleavings past the explorer's budget:
            # there one k-tile (the first round of the ring) is verified
            "iterations": f"ceil_div(K, {tk})" if cluster == 1 else 1,
            "cluster": cluster,
            "arch": "sm_90a",
            "buffers": ["sA", "sB"],
            "tma": {"tma_a": {"op": a.copy, "src": "A", "dst": "sA", "tile": [tm, tk],
                              **({"multicast": cn} if cn > 1 else {})},
                    "tma_b": {"op": b.copy, "src": "B", "dst": "sB", "tile": [tn, tk],
                              **({"multicast": cm} if cm > 1 else {})}},
            "gmma": gmma,
            "barriers": {"full": 1, "empty": (cm + cn - 1) * consumers},
            "roles": roles,
        },
        "expect": {"verdict": "pass"},
    }
    head = (f"# Written by threadmap sweep from CUTLASS {headers}'s CollectiveBuilder: the generator's kernel\n"
            f"# text for {cfg.kernels[0]} instantiated host-side; shared layouts (every cell), TMA descriptors\n"
            "# (cuTensorMapEncodeTiled's arguments), stages and transaction bytes printed by the C++ objects\n"
            "# and checked against threadmap's gmma_layout_atom / make_tma_copy before this was written.\n")
    return written(doc, head, {"A": lay_a, "B": lay_b}, element_b=b.element)
