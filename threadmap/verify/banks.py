"""Shared-memory bank conflicts under the phase model of :mod:`threadmap.hardware`.

Per warp instruction (``32 * vec`` rows; active rows only) of ``W = vec * elem_bytes``
bytes per lane: ``P = phases(W)`` phases of ``32 / P`` consecutive lanes; per phase the
wavefronts are the largest number of distinct 4-byte words one bank serves (broadcast is
free); the instruction's wavefronts are the sum over phases and its ideal the number of
phases with an active lane.  ``extra = wavefronts - ideal`` are the conflict wavefronts.
Compare with Nsight Compute's ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum``
and ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum``.

A ``cp.async.ca`` destination (``SM80_CP_ASYNC_CACHEALWAYS*``, one ``LDGSTS`` for both sides)
is counted by :func:`threadmap.hardware.ldgsts_wavefronts` instead: its shared writes arrive one
global 128-byte line at a time, so the source side's lines decide the wavefronts (each distinct
instruction pattern computed once; the finding names the lines read).

The enumeration sorts each phase's words by (bank, word) (one small sort per phase) and
takes the longest run of distinct words of one bank.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from threadmap import hardware as hw
from threadmap.model import KernelModel, SideModel
from threadmap.report.model import BankSummary, CheckResult, Finding
from threadmap.simulate.access import AccessTable
from threadmap.verify.blocks import Memo, per_block, period, view_of
from threadmap.verify.check import Accumulator, Check, check_tables, register

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
    base: np.ndarray = np.take_along_axis(cum, pos, axis=1) - np.take_along_axis(new_word, pos, axis=1)
    run = np.where(valid, cum - base, 0)
    return run.max(axis=1).reshape(-1, P)


def block_stats(t: AccessTable) -> dict[str, np.ndarray]:
    """Per block of ``t``: active instructions, wavefronts, ideal wavefronts, conflicted
    instructions, the most wavefronts of one instruction, and the largest ``extra`` of an
    active instruction (-1: none) with the first instruction (in the block) that has it."""
    pw = phase_wavefronts(t)
    pw3 = pw.reshape(int(t.blocks.size), -1, pw.shape[1])
    return instruction_stats(pw3.sum(axis=2), (pw3 > 0).sum(axis=2))


def instruction_stats(wf: np.ndarray, ideal: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`block_stats` from (blocks, instructions) wavefronts and ideal wavefronts (an
    instruction with ideal 0 has no active lane)."""
    nb = wf.shape[0]
    active = ideal > 0
    ex = np.where(active, wf - ideal, -1)
    empty = ex.shape[1] == 0
    return {"instructions": active.sum(axis=1, dtype=np.int64), "wavefronts": wf.sum(axis=1, dtype=np.int64),
            "ideal_wavefronts": ideal.sum(axis=1, dtype=np.int64),
            "conflicted_instructions": (ex > 0).sum(axis=1, dtype=np.int64),
            "max_wf": np.zeros(nb, dtype=np.int64) if empty else wf.max(axis=1).astype(np.int64),
            "best": np.full(nb, -1, dtype=np.int64) if empty else ex.max(axis=1).astype(np.int64),
            "best_i": np.zeros(nb, dtype=np.int64) if empty else ex.argmax(axis=1)}


def ldgsts_instruction_wavefronts(t: AccessTable, src: AccessTable, zfill: bool) -> tuple[np.ndarray, np.ndarray]:
    """(instructions,) wavefronts and ideal of every warp instruction of a ``cp.async.ca``
    stage's destination table ``t`` under :func:`threadmap.hardware.ldgsts_wavefronts`, each
    lane's global address from the stage's source table ``src`` (the same rows); ``zfill``: a
    lane whose predicate is false writes zeros.  Each distinct instruction pattern (addresses
    relative to their 128-byte lines, predicates) is computed once."""
    v = t.vec
    n = len(t) // t.instruction_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    sh = t.addr[::v].reshape(n, hw.WARP_SIZE)
    gl = src.addr[::v].reshape(n, hw.WARP_SIZE)
    on = t.pred[::v].reshape(n, hw.WARP_SIZE)
    real = np.ones_like(on) if t.valid is None else t.valid[::v].reshape(n, hw.WARP_SIZE)
    writes = real & (on | zfill)
    # a pattern is the same up to a whole number of 128-byte lines on each side
    s_base = (np.where(writes, sh, _BIG).min(axis=1) // hw.LINE_BYTES) * hw.LINE_BYTES
    g_base = (np.where(writes & on, gl, _BIG).min(axis=1) // hw.LINE_BYTES) * hw.LINE_BYTES
    s_rel = np.where(writes, sh - s_base[:, None], -1)
    g_rel = np.where(writes & on, gl - np.where(g_base < _BIG, g_base, 0)[:, None], -1)
    key = np.concatenate([s_rel, g_rel, (writes * 2 + on).astype(np.int64)], axis=1)
    uk, inv = np.unique(key, axis=0, return_inverse=True)
    wf = np.zeros(uk.shape[0], dtype=np.int64)
    ideal = np.zeros(uk.shape[0], dtype=np.int64)
    W = hw.WARP_SIZE
    for j in range(uk.shape[0]):
        lanes = [(lane, int(uk[j, lane]), int(uk[j, W + lane]) if uk[j, 2 * W + lane] == 3 else None)
                 for lane in range(W) if uk[j, 2 * W + lane] >= 2]
        if lanes:
            r = hw.ldgsts_wavefronts(lanes, t.access_bytes)
            wf[j], ideal[j] = r.wavefronts, r.ideal
    inv = inv.reshape(-1)
    return wf[inv], ideal[inv]


def ldgsts_block_stats(t: AccessTable, src: AccessTable, zfill: bool) -> dict[str, np.ndarray]:
    """:func:`block_stats` for a ``cp.async.ca`` destination (``ldgsts_instruction_wavefronts``)."""
    nb = int(t.blocks.size)
    wf_i, ideal_i = ldgsts_instruction_wavefronts(t, src, zfill)
    return instruction_stats(wf_i.reshape(nb, -1), ideal_i.reshape(nb, -1))


class BankConflicts(Accumulator):
    def __init__(self, side: SideModel, max_extra: int | None) -> None:
        self.side = side
        self.max_extra = max_extra
        self.tot = {"instructions": 0, "wavefronts": 0, "ideal_wavefronts": 0, "conflicted_instructions": 0}
        self.max_wf = 0
        self.worst: dict[str, Any] | None = None
        self.worst_extra = -1
        self.memo = Memo()

    def add(self, t: AccessTable, weights: np.ndarray) -> None:
        if len(t) == 0:
            return
        src = t.meta.get("ldgsts_src")
        if src is not None and ldgsts_rule(self.side):
            self._add_ldgsts(t, src, weights)
            return
        v = view_of(t)
        # a shift by a multiple of 128 bytes keeps every bank and every distinct word distinct
        eligible = v.full & v.addr.ok if v.vtpl is not None else np.zeros(v.nb, dtype=bool)
        self.memo.reset_unless((v.addr.rel, v.vtpl, t.elem_bits, t.vec))
        st = per_block(t, eligible, v.addr.start % period(hw.NUM_BANKS * hw.BANK_BYTES), self.memo, block_stats)
        b = self._accumulate(st, weights)
        if b is not None:
            one = t.select_blocks(np.array([b]))
            i = int(st["best_i"][b])
            self.worst = self._describe(one, i, phase_wavefronts(one)[i])

    def _accumulate(self, st: dict[str, np.ndarray], weights: np.ndarray) -> int | None:
        """Add a chunk's per-block statistics; the block with a new worst ``extra``, if any."""
        w = np.asarray(weights, dtype=np.int64)
        for k in self.tot:
            self.tot[k] += int((st[k] * w).sum())
        if not (st["best"] >= 0).any():
            return None
        self.max_wf = max(self.max_wf, int(st["max_wf"].max()))
        b = int(np.argmax(st["best"]))
        if int(st["best"][b]) <= self.worst_extra:
            return None
        self.worst_extra = int(st["best"][b])
        return b

    def _add_ldgsts(self, t: AccessTable, src: AccessTable, weights: np.ndarray) -> None:
        """A ``cp.async.ca`` destination: the LDGSTS rule, every block computed (the global
        side's lines decide the wavefronts, so the shared pattern alone is no key)."""
        zfill = self.side.cp_async_zfill
        st = ldgsts_block_stats(t, src, zfill)
        b = self._accumulate(st, weights)
        if b is None:
            return
        i = int(st["best_i"][b])
        one, one_src = t.select_blocks(np.array([b])), src.select_blocks(np.array([b]))
        wf, ideal = ldgsts_instruction_wavefronts(one, one_src, zfill)
        rows = np.arange(i * one.instruction_rows, (i + 1) * one.instruction_rows, one.vec)
        first = one.row(int(rows[0]))
        lines = sorted({int(one_src.addr[r]) // hw.LINE_BYTES for r in rows if one.pred[r]})
        self.worst = {"block": first["block"], "warp": first["thread"] // hw.WARP_SIZE,
                      "step": first["step"], "wavefronts": int(wf[i]), "ideal": int(ideal[i]),
                      "global_lines": len(lines), "rule": "ldgsts",
                      "lanes": [{"warp_lane": int(one.lane[r]), "thread": int(one.thread[r]),
                                 "address": int(one.addr[r]), "global_address": int(one_src.addr[r]),
                                 "coordinate": tuple(int(c[r]) for c in one.coords)}
                                for r in rows if one.pred[r]]}

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
        seen: set[tuple[int, int]] = set()
        for r in rows:
            if int(t.lane[r]) // per != phase:
                continue
            a = int(t.addr[r])
            for wd in hw.words(a, e):
                # a lane's vector may hold several elements of one word: list the word once per lane
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
                              phases=hw.phases(self.side.access_bits // 8),
                              access_bits=self.side.access_bits, worst=self.worst)
        res = CheckResult(check="bank_conflicts", stage=self.side.stage, side=self.side.which, status="PASS",
                          summary=summary)
        w = self.worst
        if w and w["wavefronts"] > w["ideal"] and w.get("rule") == "ldgsts":
            over = self.max_extra is not None and w["wavefronts"] - w["ideal"] > self.max_extra
            res.add(Finding(check="bank_conflicts", kind="conflict", stage=self.side.stage, side=self.side.which,
                            witness=w, severity="error" if over else "warning",
                            message=f"block {w['block']} warp {w['warp']} step {w['step']}: cp.async (LDGSTS) "
                                    f"writes {w['wavefronts']} wavefronts (ideal {w['ideal']}): it writes shared "
                                    f"memory one global 128-byte line at a time and its lanes read "
                                    f"{w['global_lines']} lines"),
                    self.tot["conflicted_instructions"])
            if over:
                res.fail()
        elif w and w["wavefronts"] > w["ideal"]:
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


def ldgsts_rule(side: SideModel) -> bool:
    """Whether a cp.async destination's wavefronts follow :func:`threadmap.hardware.ldgsts_wavefronts`:
    the L1-allocating ``SM80_CP_ASYNC_CACHEALWAYS*`` form (the bypassing form's shared writes
    are not a function of the addresses in the hardware counters: the store rule is kept)."""
    return side.copy_op is not None and side.copy_op.startswith("SM80_CP_ASYNC_CACHEALWAYS")


def check_bank_conflicts(tables: AccessTable | Sequence[AccessTable], *, max_extra: int | None = None) -> CheckResult:
    """Bank conflicts of one shared side's table (or chunks of it)."""
    return check_tables("bank_conflicts", tables, lambda t: BankConflicts(t, max_extra))  # type: ignore[arg-type]


@register
class BankConflictCheck(Check):
    name = "bank_conflicts"
    definition = staticmethod(hw.wavefronts)
    memories = ("shared",)

    def accumulator(self, model: KernelModel, side: SideModel | None) -> BankConflicts:
        assert side is not None
        return BankConflicts(side, model.expect.bank_conflicts)
