"""Coalescing of global-memory accesses, per warp instruction.

Definitions.  A *warp instruction* is the set of rows with equal (block, thread // 32,
step); its *active* rows are those with a true predicate (an instruction with none is no
request).  An element of ``e`` bytes at byte address ``a`` touches the bytes
``[a, a+e)``.  For each instruction:

* ``sectors``: the number of distinct 32-byte sectors (``byte // 32``) touched;
* ``lines``: the number of distinct 128-byte lines touched;
* ``bytes``: distinct bytes requested (``e`` times the number of distinct element
  addresses, so broadcasts are not counted twice);
* ``ideal``: ``ceil(bytes / 32)``, the sectors a contiguous, 32-byte aligned request of
  the same size would touch.

Totals: ``requests`` (instructions with an active lane), ``sectors``, ``ideal_sectors``,
``sectors_per_request`` and ``ratio = sectors / ideal_sectors``.  Alignment: every vector
access with an active lane must be contiguous and aligned to its width
(:func:`~threadmap.verify.vectorize.access_legality`).  Compare with Nsight Compute's
``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum`` and
``l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum``.

:func:`instruction_sectors_definition` is the executable definition for one instruction.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from threadmap.simulate.access import AccessTable
from threadmap.verify._util import count_per_group, distinct_pairs, row_witness, start_check
from threadmap.verify.result import MAX_FINDINGS, CheckResult, Finding
from threadmap.verify.vectorize import access_legality

CHECK = "coalescing"
SECTOR = 32
LINE = 128


def instruction_sectors_definition(addresses: Sequence[int], elem_bytes: int) -> dict[str, int]:
    """Sectors, lines, bytes and ideal sectors of one warp instruction's active element addresses."""
    touched = {b for a in addresses for b in range(a, a + elem_bytes)}
    nbytes = len(set(addresses)) * elem_bytes
    return {"sectors": len({b // SECTOR for b in touched}), "lines": len({b // LINE for b in touched}),
            "bytes": nbytes, "ideal": math.ceil(nbytes / SECTOR)}


def instruction_stats(t: AccessTable) -> dict[str, np.ndarray]:
    """Per active warp instruction of ``t``: key, sectors, lines, bytes, ideal, first row.

    Vectorised: distinct (instruction, sector) pairs by one sort.
    """
    act = np.flatnonzero(np.asarray(t.pred, dtype=bool))
    keys = t.warp_instruction_keys()[act]
    e = int(t.elem_bytes)
    addr = np.asarray(t.addr, dtype=np.int64)[act]
    uk, kid = np.unique(keys, return_inverse=True)
    kid = kid.reshape(-1)
    n = uk.size

    def distinct_units(size: int) -> np.ndarray:
        lo, hi = addr // size, (addr + e - 1) // size
        spans = int((hi - lo).max()) + 1 if addr.size else 1
        g = np.concatenate([kid] * spans)
        v = np.concatenate([np.minimum(lo + j, hi) for j in range(spans)])
        gd, _ = distinct_pairs(g, v)
        out = np.zeros(n, dtype=np.int64)
        ug, cnt = count_per_group(gd)
        out[ug] = cnt
        return out

    sectors = distinct_units(SECTOR)
    lines = distinct_units(LINE)
    gd, _ = distinct_pairs(kid, addr)
    ug, cnt = count_per_group(gd)
    nbytes = np.zeros(n, dtype=np.int64)
    nbytes[ug] = cnt * e
    _, firstpos = np.unique(kid, return_index=True)
    first = act[firstpos]
    return {"key": uk, "sectors": sectors, "lines": lines, "bytes": nbytes,
            "ideal": -(-nbytes // SECTOR), "first": first, "kid": kid, "rows": act}


def check_coalescing(tables: AccessTable | Iterable[AccessTable], *, max_ratio: float | None = None,
                     max_sectors_per_request: float | None = None) -> CheckResult:
    """Coalescing of one global side (a table or chunks of it).

    Summary: ``requests``, ``sectors``, ``ideal_sectors``, ``lines``, ``bytes``,
    ``sectors_per_request``, ``ideal_sectors_per_request``, ``ratio``, ``misaligned``
    (vector accesses not aligned/contiguous), ``worst`` (the instruction with the most
    excess sectors: block, warp, step, sectors, ideal, lines, active lanes, addresses).
    FAIL on a misaligned access or when a given limit is exceeded; otherwise an
    inefficient worst instruction is a ``warning`` finding.
    """
    chunks, res = start_check(CHECK, tables, "global", "coalescing")
    if not chunks:
        return res
    t0 = chunks[0]
    tot = {"requests": 0, "sectors": 0, "ideal_sectors": 0, "lines": 0, "bytes": 0, "misaligned": 0}
    worst: dict[str, Any] | None = None
    worst_excess = -1
    for t in chunks:
        if len(t) == 0:
            continue
        s = instruction_stats(t)
        tot["requests"] += int(s["key"].size)
        tot["sectors"] += int(s["sectors"].sum())
        tot["ideal_sectors"] += int(s["ideal"].sum())
        tot["lines"] += int(s["lines"].sum())
        tot["bytes"] += int(s["bytes"].sum())
        if s["key"].size:
            excess = s["sectors"] - s["ideal"]
            i = int(np.argmax(excess))
            if int(excess[i]) > worst_excess:
                worst_excess = int(excess[i])
                rows = s["rows"][s["kid"] == i]
                fr = row_witness(t, int(s["first"][i]))
                lane_addr = sorted({(int(t.thread[r]) % 32, int(t.addr[r])) for r in rows if t.lane[r] == 0})
                worst = {"block": fr["block"], "warp": fr["thread"] // 32, "step": fr["step"],
                         "sectors": int(s["sectors"][i]), "ideal": int(s["ideal"][i]),
                         "lines": int(s["lines"][i]), "bytes": int(s["bytes"][i]),
                         "active_lanes": len({int(t.thread[r]) % 32 for r in rows}),
                         "lane_addresses": lane_addr[:32], "first": fr}
        # alignment of vector accesses with an active lane
        first, cont, al = access_legality(t)
        pred = np.asarray(t.pred, dtype=bool)
        if t.vec > 1 and len(t) % t.vec == 0:
            any_act = pred.reshape(-1, t.vec).any(axis=1) if first.size * t.vec == len(t) else pred[first]
        else:
            any_act = pred[first]
        bad = np.flatnonzero(any_act & ~(cont & al))
        tot["misaligned"] += bad.size
        for j in bad[: max(0, MAX_FINDINGS - len(res.findings))]:
            w = row_witness(t, int(first[j]), access_bytes=t.access_bytes)
            res.add(Finding(CHECK, "misaligned",
                            f"{t.access_bytes * 8}-bit access of block {w['block']} thread {w['thread']} "
                            f"step {w['step']} at {w['coordinate']}: address {w['address']} is "
                            + (f"not a multiple of {t.access_bytes}" if not al[j] else "")
                            + (" (lanes not contiguous)" if not cont[j] else ""), w, t.stage, t.side))
    res.total_findings = max(res.total_findings, tot["misaligned"])
    req = max(tot["requests"], 1)
    ratio = tot["sectors"] / tot["ideal_sectors"] if tot["ideal_sectors"] else 1.0
    res.summary = {**tot, "sectors_per_request": tot["sectors"] / req,
                   "ideal_sectors_per_request": tot["ideal_sectors"] / req, "ratio": ratio,
                   "access_bits": t0.access_bytes * 8, "worst": worst}
    over = ((max_ratio is not None and ratio > max_ratio) or
            (max_sectors_per_request is not None and tot["sectors"] / req > max_sectors_per_request))
    if worst and worst["sectors"] > worst["ideal"]:
        msg = (f"block {worst['block']} warp {worst['warp']} step {worst['step']}: "
               f"{worst['sectors']} sectors ({worst['lines']} lines) for {worst['bytes']} bytes, "
               f"ideal {worst['ideal']}")
        res.add(Finding(CHECK, "uncoalesced", msg, worst, t0.stage, t0.side,
                        "error" if over else "warning"))
    if tot["misaligned"] or over:
        res.status = "FAIL"
    return res
