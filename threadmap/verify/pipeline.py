"""Pipeline: the asynchronous layer of a kernel (cp.async groups, TMA copies, mbarriers,
warp-specialised roles) is safe.

Definition.  The spec's ``pipeline:`` bound to the sizes is a protocol
(:mod:`threadmap.model.pipeline`); :func:`threadmap.pipeline.explore` runs it under every
interleaving of its roles and every completion time of its copies and reports each hazard
with a witness (stage, round, role and warps, shared address, the events before it).  Each
TMA copy is built as ``make_tma_copy`` builds it: every rule its descriptor breaks is a
finding (``tma_descriptor``: the header's or the driver's rule and when it bites), and a
swizzled destination aligned to less than its swizzle needs is a finding
(``tma_smem_alignment``) with the tile elements a tile-relative reader gets wrong: TMA
swizzles absolute shared-address bits.

The trip count: at most :data:`CONCRETE_TRIPS` trips are explored as given; beyond, every
trip count at once (the explorer's unknown-count search, whose witnesses name their count):
a finding at any count fails the check, and its witness says which.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from threadmap.model import KernelModel, SideModel
from threadmap.model.pipeline import PipelineModel
from threadmap.pipeline import Exploration, PipelineFinding, Protocol, explore
from threadmap.report.model import CheckResult, Finding, PipelineSummary
from threadmap.verify.check import Accumulator, Check, register

#: trip counts up to this many periods of the ring (2 x stages) are explored as given
CONCRETE_PERIODS = 2
MAX_STATES = 300_000


def tma_findings(pipe: PipelineModel, where: Any) -> list[Finding]:
    """The TMA copies' broken rules and misaligned destinations, located at their spec paths
    (``where(path)`` -> ``FILE:LINE:COL``)."""
    out = []
    for t in pipe.tma.values():
        for v in t.copy.violations:
            out.append(Finding(check="pipeline", kind="tma_descriptor",
                               witness={"copy": t.name, "rule": v.rule, "when": v.when, "detail": v.detail,
                                        "at": where(t.path)},
                               message=f"{where(t.path)}: TMA copy {t.name!r}: {v.rule} -- {v.detail} (fails "
                                       f"{v.when})"))
        if t.misplaced is not None or t.smem_align < t.required_align:
            bad, wit = t.misplaced if t.misplaced is not None else (0, [])
            out.append(Finding(check="pipeline", kind="tma_smem_alignment",
                               witness={"copy": t.name, "buffer": t.smem, "align": t.smem_align,
                                        "required": t.required_align, "wrong_elements": bad,
                                        "examples": wit, "at": where(t.path)},
                               message=f"{where(t.path)}: TMA copy {t.name!r} writes {t.smem}, aligned to "
                                       f"{t.smem_align} bytes, with a swizzle that needs {t.required_align} "
                                       f"(alignment_for_swizzle): TMA swizzles absolute address bits, so a tile "
                                       f"{t.smem_align} bytes off the boundary lands permuted and "
                                       f"{bad} of its elements differ from what the tile-relative layout reads"
                                       + (f" (e.g. tile {wit[0]['tile_coordinate']} at byte {wit[0]['shared_byte']})"
                                          if wit else "")))
    return out


def gmma_findings(pipe: PipelineModel, where: Any) -> list[Finding]:
    """The wgmma operands' findings, located at ``pipeline.gmma.<a|b>``: a layout
    ``make_gmma_desc`` rejects (``gmma_descriptor``, quoting the canonical form it misses), a
    writer and the tensor core disagreeing on the swizzle's phase (``gmma_swizzle_phase``, the
    two addresses as the witness), hand-written fields reading elsewhere than the built ones
    (``gmma_descriptor_fields``), a layout the header accepts whose descriptor reads other
    elements (``gmma_layout_misread``)."""
    out = []
    for g in pipe.gmma:
        at = where(g.path)
        what = f"{at}: wgmma operand {g.operand.upper()} ({g.tensor}, {g.major}-major)"
        base = {"operand": g.operand, "tensor": g.tensor}
        if g.error is not None:
            out.append(Finding(check="pipeline", kind="gmma_descriptor",
                               witness={**base, "rule": g.error.rule, "detail": g.error.detail,
                                        "canonical": g.error.canonical, "when": "compile time", "at": at},
                               message=f"{what}: make_gmma_desc rejects the layout: {g.error.rule} -- "
                                       f"{g.error.detail}" + (f"; the canonical form is {g.error.canonical}"
                                                              if g.error.canonical else "")
                                       + " (a static_assert: the kernel does not compile)"))
        if g.misread is not None:
            n, w = g.misread
            out.append(Finding(check="pipeline", kind="gmma_layout_misread",
                               witness={**base, "wrong_elements": n, **w, "at": at},
                               message=f"{what}: make_gmma_desc accepts the layout, but the descriptor reads {n} "
                                       f"elements elsewhere than the layout puts them (element {tuple(w['element'])} "
                                       f"lies at byte {w['layout_address']}, the tensor core reads byte "
                                       f"{w['reader_address']}): the header checks the layout after recasting it to "
                                       "uint128_t, which forgets the order of the elements inside each 16-byte chunk"))
        if g.phase_mismatch is not None:
            n, w = g.phase_mismatch
            out.append(Finding(check="pipeline", kind="gmma_swizzle_phase",
                               witness={**base, "wrong_elements": n, "writer": g.writer,
                                        "required_align": g.required_align, **w, "at": at},
                               message=f"{what}: its stage placed {g.placed_at} bytes off the swizzle's "
                                       f"{g.required_align}-byte period is written with the swizzle counted from "
                                       f"the tile's start ({g.writer}) but the tensor core swizzles absolute "
                                       f"addresses: {n} elements read wrong (element {tuple(w['element'])} "
                                       f"written at byte {w['writer_address']}, read from byte "
                                       f"{w['reader_address']})"))
        if g.fields_mismatch is not None:
            n, w = g.fields_mismatch
            out.append(Finding(check="pipeline", kind="gmma_descriptor_fields",
                               witness={**base, "wrong_elements": n, **w, "at": at},
                               message=f"{what}: the hand-written descriptor (LBO {w['given']['lbo']}, SBO "
                                       f"{w['given']['sbo']}, {w['given']['layout_type']}) is not make_gmma_desc's "
                                       f"(LBO {w['built']['lbo']}, SBO {w['built']['sbo']}, "
                                       f"{w['built']['layout_type']}): {n} elements read from the wrong address "
                                       f"(element {tuple(w['element'])}: byte {w['given_reads']} instead of "
                                       f"{w['built_reads']})"
                                       + (" -- LBO and SBO swapped" if (w['given']['lbo'], w['given']['sbo'])
                                          == (w['built']['sbo'], w['built']['lbo']) else "")))
    return out


def tmem_findings(pipe: PipelineModel, where: Any) -> list[Finding]:
    """The tensor memory's findings: each rule a warp's ``tcgen05.ld`` (or the allocation)
    breaks (``tmem_access``, at the operation), and accumulator cells no load reads
    (``tmem_accumulator_uncovered``, at ``pipeline.tmem``)."""
    t = pipe.tmem
    if t is None:
        return []
    out: list[Finding] = []
    seen: set[tuple[Any, ...]] = set()
    for path, warp, v in t.violations:
        if (path, v.rule, v.detail) in seen:
            continue
        seen.add((path, v.rule, v.detail))
        at = where(path)
        who = f"warp {warp}: " if warp >= 0 and not v.detail.startswith("warp ") else ""
        out.append(Finding(check="pipeline", kind="tmem_access",
                           witness={"warp": warp, "rule": v.rule, "when": v.when, "detail": v.detail, "at": at},
                           message=f"{at}: {who}{v.detail} -- {v.rule} (shows {v.when}; modelled from the headers, "
                                   "not confirmed on hardware)"))
    if t.uncovered is not None:
        n, (lane, col) = t.uncovered
        at = where(t.path)
        out.append(Finding(check="pipeline", kind="tmem_accumulator_uncovered",
                           witness={"missing_cells": n, "lane": lane, "column": col, "at": at},
                           message=f"{at}: {n} cells of the accumulator are read by no tcgen05.ld (e.g. lane {lane}, "
                                   f"column {col}): part of the output is never stored"))
    return out


def protocol_findings(where: Any, e: Exploration) -> list[Finding]:
    """The explorer's findings as report findings, located at their operations' lines."""
    return [_finding(f, where) for f in e.findings]


def _finding(f: PipelineFinding, where: Any) -> Finding:
    at = where(f.where) if f.where else None
    return Finding(check="pipeline", kind=f.kind, witness={**f.witness, **({"at": at} if at else {})},
                   message=(f"{at}: " if at else "") + f.message
                   + (f" [trip count {f.witness['iterations']}]" if "iterations" in f.witness else ""))


def explore_model(pipe: PipelineModel) -> tuple[Exploration, str]:
    """The exploration ``verify`` runs: the trip count as given when small, else every count."""
    p = pipe.protocol
    if pipe.iterations <= CONCRETE_PERIODS * 2 * p.stages + p.max_lag + 2:
        return _explored(p, pipe.iterations), str(pipe.iterations)
    return _explored(p, None), "every trip count >= 1"


_EXPLORED: dict[tuple[str, int | None], Exploration] = {}


def forget_explorations() -> None:
    """Drop the explorations kept for later runs (benchmarks time a cold run with it)."""
    _EXPLORED.clear()


def _explored(p: Protocol, k: int | None) -> Exploration:
    # a protocol does not depend on the sizes but through k: the size environments of one spec,
    # and the default and exhaustive runs of it, share one exploration (keyed by the protocol's
    # repr: its fields are plain values)
    key = (repr(p), k)
    if key not in _EXPLORED:
        if len(_EXPLORED) >= 64:
            _EXPLORED.pop(next(iter(_EXPLORED)))
        _EXPLORED[key] = explore(p, k, max_states=MAX_STATES)
    return _EXPLORED[key]


def check_pipeline(model: KernelModel) -> CheckResult:
    """The pipeline check's result for ``model`` (which has a pipeline)."""
    pipe = model.pipeline
    assert pipe is not None
    e, trips = explore_model(pipe)
    findings = (tma_findings(pipe, model.where) + gmma_findings(pipe, model.where) + tmem_findings(pipe, model.where)
                + protocol_findings(model.where, e))
    by_kind: dict[str, int] = {}
    for f in findings:
        by_kind[f.kind] = by_kind.get(f.kind, 0) + 1
    tma = [{"copy": t.name, "op": t.copy.op, "data_type": t.copy.desc.data_type, "rank": t.copy.desc.rank,
            "global_dim": list(t.copy.desc.global_dim), "global_strides": list(t.copy.desc.global_strides),
            "box_dim": list(t.copy.desc.box_dim), "element_strides": list(t.copy.desc.element_strides),
            "interleave": t.copy.desc.interleave, "swizzle": t.copy.desc.swizzle, "oob_fill": t.copy.desc.oob_fill,
            "bytes_per_issue": t.nbytes} for t in pipe.tma.values()]
    summary = PipelineSummary(stages=pipe.protocol.stages, roles=[r.name for r in pipe.protocol.roles],
                              iterations=pipe.iterations, trip_counts=trips, states=e.states,
                              finished_runs=e.finished_runs, truncated=e.truncated, tma=tma, by_kind=by_kind,
                              gmma=[{"operand": g.operand, "tensor": g.tensor, "major": g.major, "block": list(g.block),
                                     "descriptor": (f"{g.descriptors[(0, 0)].desc:#018x}" if g.descriptors else None),
                                     "wavefronts": g.wavefronts[0], "ideal_wavefronts": g.wavefronts[1]}
                                    for g in pipe.gmma])
    res = CheckResult(check="pipeline", stage=None, side=None, status="PASS", summary=summary)
    for f in findings:
        res.add(f)
    if findings or e.truncated:
        res.fail()
    return res


class _PipelineAccumulator(Accumulator):
    """The pipeline does not depend on the access tables: the result is the exploration's."""

    def __init__(self, model: KernelModel) -> None:
        self.model = model

    def add(self, table: Any, weights: np.ndarray) -> None:
        return None

    def result(self) -> CheckResult:
        return check_pipeline(self.model)


def pipeline_definition(model: KernelModel) -> CheckResult:
    """The definition is the exploration itself (see the module docstring)."""
    return check_pipeline(model)


@register
class PipelineCheck(Check):
    name = "pipeline"
    definition = staticmethod(pipeline_definition)
    per_block = False

    def judges(self, model: KernelModel) -> bool:
        return model.pipeline is not None

    def applies(self, side: SideModel) -> bool:
        return False

    def accumulator(self, model: KernelModel, side: SideModel | None) -> Accumulator:
        return _PipelineAccumulator(model)
