"""Shared-memory bank conflicts under the phase model of :mod:`threadmap.hardware`.

Per warp instruction (``32 * vec`` rows; active rows only) of ``W = vec * elem_bytes``
bytes per lane: ``P = phases(W)`` phases of ``32 / P`` consecutive lanes; per phase the
wavefronts are the largest number of distinct 4-byte words one bank serves (broadcast is
free); the instruction's wavefronts are the sum over phases and its ideal the number of
phases with an active lane.  ``extra = wavefronts - ideal`` are the conflict wavefronts.
Compare with Nsight Compute's ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum``
and ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum``.

The enumeration sorts each phase's words by (bank, word) (one small sort per phase) and
takes the longest run of distinct words of one bank.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tests._reference.util import as_tables, ones
from threadmap import hardware as hw
from threadmap.model import KernelModel, SideModel
from threadmap.report.model import BankSummary, CheckResult, Finding
from threadmap.simulate.access import AccessTable
from threadmap.verify.check import Accumulator, Check, skipped

_BIG = np.int64(1) << 62


def phase_wavefronts(t: AccessTable) -> np.ndarray:
    """(instructions, phases) wavefronts of every phase of every warp instruction of ``t``
    (0 for a phase without an active lane)."""
    e = int(t.elem_bytes)
    P = hw.phases(t.access_bytes)
    a = t.addr
    lo = a // hw.BANK_BYTES
    span = max(1, (e - 1) // hw.BANK_BYTES + 2) if e > 1 else 1
    groups = len(t) // (t.instruction_rows // P)
    cols = []
    for j in range(span):  # the words an element occupies (2 when it straddles a word)
        w = np.minimum(lo + j, (a + e - 1) // hw.BANK_BYTES)
        cols.append(np.where(t.pred, w, _BIG).reshape(groups, -1))
    words = np.concatenate(cols, axis=1) if span > 1 else cols[0]
    # sort by (bank, word): a run of one bank's distinct words is its serialisation
    key = np.where(words < _BIG, (words % hw.NUM_BANKS) << 56 | (words // hw.NUM_BANKS), _BIG)
    key.sort(axis=1)
    valid = key < _BIG
    bank = key >> 56
    new_word = np.empty_like(valid)
    new_word[:, 0] = valid[:, 0]
    new_word[:, 1:] = valid[:, 1:] & (key[:, 1:] != key[:, :-1])
    cum = np.cumsum(new_word, axis=1)
    start = np.zeros_like(valid)
    start[:, 0] = True
    start[:, 1:] = bank[:, 1:] != bank[:, :-1]
    pos = np.where(start, np.arange(key.shape[1])[None, :], 0)
    np.maximum.accumulate(pos, axis=1, out=pos)
    base = np.take_along_axis(cum, pos, axis=1) - np.take_along_axis(new_word, pos, axis=1)
    run = np.where(valid, cum - base, 0)
    return run.max(axis=1).reshape(-1, P)


class BankConflicts(Accumulator):
    def __init__(self, side: SideModel, max_extra: int | None) -> None:
        self.side = side
        self.max_extra = max_extra
        self.tot = {"instructions": 0, "wavefronts": 0, "ideal_wavefronts": 0, "conflicted_instructions": 0}
        self.max_wf = 0
        self.worst: dict[str, Any] | None = None
        self.worst_extra = -1

    def add(self, t: AccessTable, weights: np.ndarray) -> None:
        if len(t) == 0:
            return
        pw = phase_wavefronts(t)
        wf = pw.sum(axis=1)
        ideal = (pw > 0).sum(axis=1)
        active = ideal > 0
        extra = wf - ideal
        per_block = wf.size // t.blocks.size
        wi = np.repeat(np.asarray(weights, dtype=np.int64), per_block)
        self.tot["instructions"] += int((active * wi).sum())
        self.tot["wavefronts"] += int((wf * wi).sum())
        self.tot["ideal_wavefronts"] += int((ideal * wi).sum())
        self.tot["conflicted_instructions"] += int(((extra > 0) * wi).sum())
        if active.any():
            self.max_wf = max(self.max_wf, int(wf.max()))
            i = int(np.argmax(np.where(active, extra, -1)))
            if int(extra[i]) > self.worst_extra:
                self.worst_extra = int(extra[i])
                self.worst = self._describe(t, i, pw[i])

    @staticmethod
    def _describe(t: AccessTable, i: int, pw: np.ndarray) -> dict[str, Any]:
        P = pw.size
        phase = int(np.argmax(pw))
        per = hw.WARP_SIZE // P
        rows = np.arange(i * t.instruction_rows, (i + 1) * t.instruction_rows)
        rows = rows[t.pred[rows]]
        served: dict[int, set[int]] = {}
        lanes: list[dict[str, Any]] = []
        e = int(t.elem_bytes)
        for r in rows:
            if int(t.lane[r]) // per != phase:
                continue
            for wd in hw.words(int(t.addr[r]), e):
                served.setdefault(wd % hw.NUM_BANKS, set()).add(wd)
        bank = max(served, key=lambda b: (len(served[b]), -b)) if served else 0
        seen: set[tuple[int, int]] = set()  # the witness wording of the current checks: a lane's word once
        for r in rows:
            if int(t.lane[r]) // per != phase:
                continue
            a = int(t.addr[r])
            for wd in hw.words(a, e):
                if wd % hw.NUM_BANKS == bank and (int(t.lane[r]), wd) not in seen:
                    seen.add((int(t.lane[r]), wd))
                    lanes.append({"warp_lane": int(t.lane[r]), "thread": int(t.thread[r]), "word": wd,
                                  "address": a, "coordinate": tuple(int(c[r]) for c in t.coords)})
        lanes.sort(key=lambda d: (d["warp_lane"], d["address"]))
        first = t.row(int(rows[0]))
        return {"block": first["block"], "warp": first["thread"] // hw.WARP_SIZE, "step": first["step"],
                "wavefronts": int(pw.sum()), "ideal": int((pw > 0).sum()), "phase": phase, "bank": bank,
                "distinct_words": len(served.get(bank, ())), "lanes": lanes}

    def result(self) -> CheckResult:
        extra_total = self.tot["wavefronts"] - self.tot["ideal_wavefronts"]
        summary = BankSummary(**self.tot, extra_wavefronts=extra_total, max_wavefronts=self.max_wf,
                              phases=hw.phases(self.side.vec * self.side.elem_bytes),
                              access_bits=self.side.access_bits, worst=self.worst)
        res = CheckResult(check="bank_conflicts", stage=self.side.stage, side=self.side.which, status="PASS",
                          summary=summary)
        w = self.worst
        if w and w["wavefronts"] > w["ideal"]:
            ls = w["lanes"]
            named = ", ".join(f"lane {d['warp_lane']}: word {d['word']}" for d in ls[:8]) + (
                f", ... ({len(ls)} lanes)" if len(ls) > 8 else "")
            over = self.max_extra is not None and w["wavefronts"] - w["ideal"] > self.max_extra
            res.add(Finding(check="bank_conflicts", kind="conflict", stage=self.side.stage, side=self.side.which,
                            witness=w, severity="error" if over else "warning",
                            message=f"block {w['block']} warp {w['warp']} step {w['step']}: {w['wavefronts']} "
                                    f"wavefronts (ideal {w['ideal']}); bank {w['bank']} serves "
                                    f"{w['distinct_words']} distinct words in phase {w['phase']}: {named}"),
                    self.tot["conflicted_instructions"])
            if over:
                res.fail()
        return res


def check_bank_conflicts(tables: AccessTable | Sequence[AccessTable], *, max_extra: int | None = None) -> CheckResult:
    """Bank conflicts of one shared side's table (or chunks of it)."""
    ts = as_tables(tables)
    if ts[0].memory != "shared":
        return skipped("bank_conflicts", ts[0], f"{ts[0].memory} memory: bank conflicts apply to shared memory")
    acc = BankConflicts(ts[0], max_extra)  # type: ignore[arg-type]
    for t in ts:
        acc.add(t, ones(t))
    return acc.result()



class BankConflictCheck(Check):
    name = "bank_conflicts"
    rule = "Shared-memory accesses need no more wavefronts than ideal."
    definition = staticmethod(hw.wavefronts)

    def applies(self, side: SideModel) -> bool:
        return side.memory == "shared"

    def accumulator(self, model: KernelModel, side: SideModel | None) -> BankConflicts:
        assert side is not None
        return BankConflicts(side, model.expect.bank_conflicts)
