"""Shared-memory bank conflicts under the phase model of DESIGN.md.

Definition.  Shared memory has 32 banks of 4 bytes; the 4-byte word ``w = addr // 4``
lives in bank ``w % 32``.  A warp instruction (rows with equal block, warp, step; active =
predicate true) whose accesses are ``W = vec * elem_bytes`` bytes wide is split into
``P = max(1, W // 4)`` phases (1 for <= 4 bytes, 2 for 8, 4 for 16) of ``32 / P``
consecutive lanes (``warp_lane = thread % 32``).  An element of ``e`` bytes at ``a``
occupies the words ``a // 4 .. (a + e - 1) // 4`` (so a lane moving 8/16 bytes occupies 2/4
consecutive banks).  Per phase, the wavefronts are the largest number of *distinct*
words any one bank must serve (lanes reading one word share it: broadcast is free);
the instruction's wavefronts are the sum over phases; its ideal is the number of phases
with an active lane (1/2/4 for a full warp).  ``extra = wavefronts - ideal`` are the
conflict wavefronts.  Compare with Nsight Compute's
``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum`` and
``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum``.

:func:`wavefronts_definition` is the executable definition for one instruction; the
enumeration :func:`instruction_wavefronts` is one sort over (instruction, phase, bank,
word) keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from threadmap.simulate.access import AccessTable
from threadmap.verify._util import count_per_group, distinct_pairs, row_witness, start_check
from threadmap.verify.result import CheckResult, Finding

CHECK = "bank_conflicts"
BANKS = 32
WORD = 4


def phases_for(access_bytes: int) -> int:
    """Number of phases a warp instruction of this width is split into (1, 2, 4)."""
    return max(1, min(32, access_bytes // WORD))


def wavefronts_definition(lanes: Sequence[tuple[int, int]], elem_bytes: int, access_bytes: int
                          ) -> tuple[int, int]:
    """(wavefronts, ideal) of one warp instruction; ``lanes`` = (warp_lane, element address)."""
    P = phases_for(access_bytes)
    per = 32 // P
    words: dict[tuple[int, int], set[int]] = {}
    for lane, a in lanes:
        for w in range(a // WORD, (a + elem_bytes - 1) // WORD + 1):
            words.setdefault((lane // per, w % BANKS), set()).add(w)
    phases = {p for p, _ in words}
    wf = sum(max(len(v) for (p2, _), v in words.items() if p2 == p) for p in phases)
    return wf, len(phases)


def instruction_wavefronts(t: AccessTable) -> dict[str, np.ndarray]:
    """Per active warp instruction of ``t``: key, wavefronts, ideal, plus the worst
    (phase, bank) of each instruction and the data to name its lanes."""
    act = np.flatnonzero(np.asarray(t.pred, dtype=bool))
    keys = t.warp_instruction_keys()[act]
    uk, kid = np.unique(keys, return_inverse=True)
    kid = kid.reshape(-1)
    n = uk.size
    e = int(t.elem_bytes)
    P = phases_for(t.access_bytes)
    per = 32 // P
    addr = np.asarray(t.addr, dtype=np.int64)[act]
    phase = (np.asarray(t.thread, dtype=np.int64)[act] % 32) // per
    lo, hi = addr // WORD, (addr + e - 1) // WORD
    spans = int((hi - lo).max()) + 1 if addr.size else 1
    word = np.concatenate([np.minimum(lo + j, hi) for j in range(spans)])
    kp = np.tile(kid * P + phase, spans)                       # (instruction, phase) id
    g = kp * BANKS + word % BANKS                             # (instruction, phase, bank) id
    gd, _ = distinct_pairs(g, word)                           # distinct words per bank
    ug, cnt = count_per_group(gd)                             # ug sorted: (instr, phase, bank)
    ukp, starts = np.unique(ug // BANKS, return_index=True)    # per (instr, phase)
    mx = np.maximum.reduceat(cnt, starts) if cnt.size else cnt
    arg = np.zeros(ukp.size, dtype=np.int64)                  # worst bank per (instr, phase)
    if cnt.size:
        seg = np.repeat(np.arange(ukp.size), np.diff(np.r_[starts, cnt.size]))
        hit = np.flatnonzero(cnt == mx[seg])
        _, firsthit = np.unique(seg[hit], return_index=True)   # first max bank per segment
        pos = hit[firsthit]
        arg = ug[pos] % BANKS
    wf = np.bincount(ukp // P, weights=mx, minlength=n).astype(np.int64)
    ideal = np.bincount(ukp // P, minlength=n).astype(np.int64)
    return {"key": uk, "wavefronts": wf, "ideal": ideal, "kid": kid, "rows": act,
            "kp": ukp, "kp_max": mx, "kp_bank": arg, "phases": P}


def _worst_witness(t: AccessTable, s: dict[str, np.ndarray], i: int) -> dict[str, Any]:
    P, per = int(s["phases"]), 32 // int(s["phases"])
    sel = s["kp"] // P == i
    j = np.flatnonzero(sel)[int(np.argmax(s["kp_max"][sel]))]
    phase, bank = int(s["kp"][j] % P), int(s["kp_bank"][j])
    rows = s["rows"][s["kid"] == i]
    e = int(t.elem_bytes)
    lanes = []
    for r in rows:
        lane = int(t.thread[r]) % 32
        if lane // per != phase:
            continue
        a = int(t.addr[r])
        for w in range(a // WORD, (a + e - 1) // WORD + 1):
            if w % BANKS == bank:
                lanes.append({"warp_lane": lane, "thread": int(t.thread[r]), "word": w, "address": a,
                              "coordinate": tuple(int(c) for c in np.atleast_1d(t.coord[r]))})
    lanes.sort(key=lambda d: (d["warp_lane"], d["address"]))
    fr = row_witness(t, int(rows[0]))
    return {"block": fr["block"], "warp": fr["thread"] // 32, "step": fr["step"],
            "wavefronts": int(s["wavefronts"][i]), "ideal": int(s["ideal"][i]), "phase": phase,
            "bank": bank, "distinct_words": int(s["kp_max"][j]), "lanes": lanes}


def check_bank_conflicts(tables: AccessTable | Iterable[AccessTable], *, max_extra: int | None = None
                         ) -> CheckResult:
    """Bank conflicts of one shared side (a table or chunks of it).

    Summary: ``instructions``, ``wavefronts``, ``ideal_wavefronts``, ``extra_wavefronts``
    (conflicts), ``conflicted_instructions``, ``max_wavefronts`` (worst instruction),
    ``phases`` (per instruction), ``worst`` (block, warp, step, wavefronts, ideal, phase,
    bank, and its lanes with their words).  FAIL iff ``max_extra`` is given and the extra
    wavefronts exceed it; otherwise a conflict is a ``warning`` finding.
    """
    chunks, res = start_check(CHECK, tables, "shared", "bank conflicts")
    if not chunks:
        return res
    t0 = chunks[0]
    tot = {"instructions": 0, "wavefronts": 0, "ideal_wavefronts": 0, "conflicted_instructions": 0}
    worst: dict[str, Any] | None = None
    worst_extra = -1
    max_wf = 0
    for t in chunks:
        if len(t) == 0 or not np.asarray(t.pred).any():
            continue
        s = instruction_wavefronts(t)
        extra = s["wavefronts"] - s["ideal"]
        tot["instructions"] += int(s["key"].size)
        tot["wavefronts"] += int(s["wavefronts"].sum())
        tot["ideal_wavefronts"] += int(s["ideal"].sum())
        tot["conflicted_instructions"] += int((extra > 0).sum())
        max_wf = max(max_wf, int(s["wavefronts"].max()))
        i = int(np.argmax(extra))
        if int(extra[i]) > worst_extra:
            worst_extra = int(extra[i])
            worst = _worst_witness(t, s, i)
    extra_total = tot["wavefronts"] - tot["ideal_wavefronts"]
    res.summary = {**tot, "extra_wavefronts": extra_total, "max_wavefronts": max_wf,
                   "phases": phases_for(t0.access_bytes), "access_bits": t0.access_bytes * 8,
                   "worst": worst}
    if worst and worst["wavefronts"] > worst["ideal"]:
        ls = worst["lanes"]
        named = ", ".join(f"lane {d['warp_lane']}: word {d['word']}" for d in ls[:8]) + (
            f", ... ({len(ls)} lanes)" if len(ls) > 8 else "")
        over = max_extra is not None and extra_total > max_extra
        res.add(Finding(CHECK, "conflict",
                        f"block {worst['block']} warp {worst['warp']} step {worst['step']}: "
                        f"{worst['wavefronts']} wavefronts (ideal {worst['ideal']}); bank {worst['bank']} "
                        f"serves {worst['distinct_words']} distinct words in phase {worst['phase']}: {named}",
                        worst, t0.stage, t0.side, "error" if over else "warning"),
                tot["conflicted_instructions"])
        if over:
            res.status = "FAIL"
    return res
