"""Apply the checks to the access tables of a kernel's stages.

``run_checks(stages, expect, options)`` takes the stage records the simulator produces:

* ``"barrier"``, or
* ``(src, dst, predicate_kind)`` where ``src``/``dst`` are :class:`AccessTable` s or lists of
  chunk tables (chunk ``i`` of every stage covering the same blocks) and
  ``predicate_kind`` is ``"none"``, ``"bounds"`` or ``"vector"``.

and returns one :class:`CheckResult` per (check, stage, side) plus the kernel-wide dataflow
result.  ``expect`` (from the spec): ``transform`` (``"copy"``/``"transpose"``),
``coverage`` (``"exact"`` / ``"replicated"``), ``bank_conflicts`` (max extra wavefronts),
``max_sectors_per_request``, ``max_sector_ratio`` (a number, or ``{"load": x, "store": y}``),
``min_vector_bits``.  ``options``:
``size_names`` ({mode: name} or {tensor: {mode: name}}), ``tile`` / ``tile_origin``
overrides, ``thorough`` (grid duplicate pairs), ``grid`` (run the whole-grid coverage
and predicates, default True; the pipeline streams those itself), ``perf_chunks`` (how
many chunks the coalescing/bank/vectorize checks look at; default all), ``perf`` (False:
skip those three checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from threadmap.simulate.access import AccessTable
from threadmap.verify.banks import check_bank_conflicts
from threadmap.verify.coalescing import check_coalescing
from threadmap.verify.coverage import GridCoverage, check_tile_coverage
from threadmap.verify.dataflow import check_dataflow
from threadmap.verify.predicates import PredicateCheck
from threadmap.verify.result import MAX_FINDINGS, CheckResult, Finding
from threadmap.verify.vectorize import check_vectorize

StageRecord = Any  # "barrier" | (src, dst, predicate_kind)


def _chunks(x: AccessTable | Sequence[AccessTable]) -> list[AccessTable]:
    return [x] if isinstance(x, AccessTable) else list(x)


def _unmasked(t: AccessTable) -> AccessTable:
    """Shared-memory sides are covered as a map (thread, value) -> element whatever the
    predicate: a bounds predicate comes from the *global* side, and in an edge block it
    masks smem elements that hold no data, which is not a coverage hole."""
    if t.memory != "shared" or bool(np.all(t.pred)):
        return t
    u = t.select(np.ones(len(t), dtype=bool))
    u.pred = np.ones(len(t), dtype=bool)
    return u


#: summary entries that describe the kernel rather than count accesses: not summed over chunks
NON_ADDITIVE = {"replication", "stages", "barriers", "unpaired_stages"}


def merge_results(results: Sequence[CheckResult]) -> CheckResult:
    """Combine per-chunk results of one check: numeric summary entries are summed, others
    taken from the first; status FAIL if any failed; findings concatenated (capped)."""
    if len(results) == 1:
        return results[0]
    r0 = results[0]
    out = CheckResult(r0.check, r0.stage, r0.side, "PASS")
    for r in results:
        for k, v in r.summary.items():
            if isinstance(v, bool) or not isinstance(v, int | float) or k in NON_ADDITIVE:
                out.summary.setdefault(k, v)
            else:
                out.summary[k] = out.summary.get(k, 0) + v
        for f in r.findings:
            if len(out.findings) < MAX_FINDINGS:
                out.findings.append(f)
        out.total_findings += r.total_findings
    statuses = {r.status for r in results}
    out.status = "FAIL" if "FAIL" in statuses else "PASS" if "PASS" in statuses else "SKIP"
    return out


def _size_names(options: dict[str, Any], t: AccessTable) -> dict[int, str]:
    sn = options.get("size_names") or {}
    if t.tensor in sn and isinstance(sn[t.tensor], dict):
        return dict(sn[t.tensor])
    return {k: v for k, v in sn.items() if isinstance(k, int)}


def _expect_fail(res: CheckResult, message: str, witness: dict[str, Any] | None = None) -> None:
    res.status = "FAIL"
    res.add(Finding(res.check, "expectation", message, witness or {}, res.stage, res.side))


def run_checks(stages: Sequence[StageRecord], expect: dict[str, Any] | None = None,
               options: dict[str, Any] | None = None) -> list[CheckResult]:
    """Run every applicable check on every stage side; see the module docstring."""
    expect = dict(expect or {})
    options = dict(options or {})
    results: list[CheckResult] = []
    replicated = expect.get("coverage") == "replicated"
    perf_n = options.get("perf_chunks")
    for rec in stages:
        if isinstance(rec, str):
            continue
        src, dst = _chunks(rec[0]), _chunks(rec[1])
        for side_chunks in (src, dst):
            if not side_chunks:
                continue
            t0 = side_chunks[0]
            if t0.memory == "register":
                continue
            results.append(merge_results([
                check_tile_coverage(_unmasked(t), tile=options.get("tile"),
                                    tile_origin=options.get("tile_origin"), replication=replicated)
                for t in side_chunks]))
            if t0.memory == "global" and options.get("grid", True):
                grid = GridCoverage(t0.shape, replication=replicated, thorough=options.get("thorough", False))
                pc = PredicateCheck(t0.shape, size_names=_size_names(options, t0), grid=grid)
                for t in side_chunks:
                    grid.add(t)
                    pc.add(t)
                results.append(grid.result())
                results.append(pc.result())
            perf = side_chunks if perf_n is None else side_chunks[:perf_n]
            if not options.get("perf", True):
                continue
            if t0.memory == "global":
                ratio = expect.get("max_sector_ratio")
                if isinstance(ratio, dict):  # {load: x, store: y}: sources load, destinations store
                    ratio = ratio.get("load" if t0.side == "src" else "store")
                r = check_coalescing(perf, max_ratio=ratio,
                                     max_sectors_per_request=expect.get("max_sectors_per_request"))
                results.append(r)
            if t0.memory == "shared":
                results.append(check_bank_conflicts(perf, max_extra=expect.get("bank_conflicts")))
            v = check_vectorize(perf)
            mvb = expect.get("min_vector_bits")
            if mvb is not None and v.status != "SKIP" and v.summary.get("declared_bits", 0) < mvb:
                _expect_fail(v, f"declared {v.summary['declared_bits']}-bit accesses, expected >= {mvb}")
            results.append(v)
    # dataflow: per chunk index (chunk i of every stage = the same blocks)
    recs = [r if isinstance(r, str) else (_chunks(r[0]), _chunks(r[1])) for r in stages]
    nchunks = max((len(r[0]) for r in recs if not isinstance(r, str)), default=0)
    per_chunk = []
    for i in range(nchunks):
        st = [r if isinstance(r, str) else (r[0][min(i, len(r[0]) - 1)], r[1][min(i, len(r[1]) - 1)])
              for r in recs]
        per_chunk.append(check_dataflow(st, expect.get("transform"), input_tensor=options.get("input"),
                                        output_tensor=options.get("output")))
    if per_chunk:
        results.append(merge_results(per_chunk))
    return results


def overall_status(results: Sequence[CheckResult]) -> str:
    """``FAIL`` if any result failed, else ``PASS``."""
    return "FAIL" if any(r.status == "FAIL" for r in results) else "PASS"
