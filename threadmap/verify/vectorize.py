"""Vectorization: the widest vector each thread's values allow, and the declared access's legality.

Definitions.  On one side of a copy, order each thread's elements by value index with byte
addresses ``a_0, a_1, ...`` and element size ``e``.  A width of ``k`` elements (``k * e * 8``
bits, a power of two, at most 128 bits) is *legal for the thread* iff its value count is a
multiple of ``k`` and every group ``{a_{jk}, ..., a_{jk+k-1}}`` is contiguous and aligned
(``a_{jk} % (k*e) == 0``; addresses include the tensor base, so the base alignment and the
leading dimensions enter here).  The side's widest legal vector is the minimum over threads
(one instruction width for all threads).  The *declared* access (``vec`` elements, from the
copy atom or thread map) is legal iff every access is contiguous and aligned
(:func:`threadmap.hardware.access_legal`).  Register sides are skipped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from threadmap import hardware as hw
from threadmap.model import KernelModel, SideModel
from threadmap.report.model import CheckResult, Finding, VectorizeSummary
from threadmap.simulate.access import AccessTable
from threadmap.verify.blocks import Memo, per_block, period, view_of
from threadmap.verify.check import Accumulator, Check, check_tables, register
from threadmap.verify.coalescing import access_legality
from threadmap.verify.util import vector_fault


def widest_vector_definition(addresses_in_value_order: Sequence[int], elem_bytes: int,
                             max_bits: int = hw.MAX_ACCESS_BYTES * 8) -> int:
    """Widest legal vector (bits) for one thread's addresses listed in value order."""
    a = list(addresses_in_value_order)
    best, k = 0, 1
    while k * elem_bytes * 8 <= max_bits:
        if len(a) % k == 0 and all(hw.access_legal(a[j:j + k], elem_bytes) for j in range(0, len(a), k)):
            best = k * elem_bytes * 8
        k *= 2
    return best


def widest_per_thread(t: AccessTable) -> np.ndarray:
    """(blocks, warps * 32) widest legal bits of every thread (0 for padding, and for a
    sub-byte thread with no legal access: an access is a whole number of bytes)."""
    eb = int(t.elem_bits)
    nb, W, S, vec = t.blocks.size, t.warps, t.steps, t.vec
    # bit addresses: contiguity and alignment of any element width, sub-byte included
    a = t.bit_addr.reshape(nb, W, S, hw.WARP_SIZE, vec).transpose(0, 1, 3, 2, 4).reshape(nb, W * hw.WARP_SIZE, -1)
    V = a.shape[2]
    best = np.zeros(a.shape[:2], dtype=np.int64)
    k = 1
    step_ok = np.diff(a, axis=2) == eb if V > 1 else np.zeros(a.shape[:2] + (0,), dtype=bool)
    while k * eb <= hw.MAX_ACCESS_BYTES * 8 and V % k == 0:
        if k * eb % 8:
            k *= 2
            continue
        g = a.reshape(nb, -1, V // k, k)
        ok = np.all(g[..., 0] % (k * eb) == 0, axis=2)
        if k > 1:
            inner = np.ones((nb, a.shape[1], V), dtype=bool)
            inner[..., :-1] = step_ok
            inner = inner.reshape(nb, -1, V // k, k)[..., :-1]
            ok &= inner.all(axis=(2, 3))
        best = np.where(ok, k * eb, best)
        k *= 2
    if t.valid is not None:
        best = np.where(real_threads(t), best, 0)
    return best


def real_threads(t: AccessTable) -> np.ndarray:
    """(blocks, warps * 32): the rows of real threads (not a padded last warp's)."""
    nb, W, S, vec = t.blocks.size, t.warps, t.steps, t.vec
    if t.valid is None:
        return np.ones((nb, W * hw.WARP_SIZE), dtype=bool)
    return t.valid.reshape(nb, W, S, hw.WARP_SIZE, vec)[:, :, 0, :, 0].reshape(nb, -1)


_NOREAL = np.iinfo(np.int64).max


def block_stats(t: AccessTable) -> dict[str, np.ndarray]:
    """Per block of ``t``: the histogram of the widest legal vector over its real threads
    (``hist[:, bits // 8]``), the narrowest with the first thread that has it, and the illegal
    declared accesses."""
    nb = int(t.blocks.size)
    best = widest_per_thread(t)
    real = real_threads(t)
    H = hw.MAX_ACCESS_BYTES + 1
    code = np.where(real, best // 8, 0)
    key = np.arange(nb, dtype=np.int64)[:, None] * H + code
    hist = np.bincount(key[real], minlength=nb * H).reshape(nb, H).astype(np.int64)
    masked = np.where(real, best, _NOREAL)
    lo = masked.min(axis=1) if masked.shape[1] else np.full(nb, _NOREAL, dtype=np.int64)
    first = (masked == lo[:, None]).argmax(axis=1) if masked.shape[1] else np.zeros(nb, dtype=np.int64)
    cont, al = access_legality(t)
    real_acc = np.ones(cont.size, dtype=bool) if t.valid is None else t.valid.reshape(-1, t.vec)[:, 0]
    bad = real_acc & ~(cont & al)
    return {"hist": hist, "min": lo.astype(np.int64), "first": first.astype(np.int64),
            "illegal": bad.reshape(nb, -1).sum(axis=1, dtype=np.int64)}


class Vectorize(Accumulator):
    def __init__(self, side: SideModel, min_bits: int | None) -> None:
        self.side = side
        self.min_bits = min_bits
        self.hist: Counter[int] = Counter()
        self.min_legal: int | None = None
        self.witness: dict[str, object] | None = None
        self.illegal = 0
        self.findings: list[Finding] = []
        self.memo = Memo()

    def add(self, t: AccessTable, weights: np.ndarray) -> None:
        if len(t) == 0:
            return
        v = view_of(t)
        # the widths depend on the addresses (not the predicate): blocks at the reference
        # pattern shifted by a multiple of every width tried have the reference's statistics
        L = period(hw.LINE_BYTES, hw.MAX_ACCESS_BYTES, t.access_bytes,
                   *[k * t.elem_bytes for k in (1, 2, 4, 8, 16) if k * t.elem_bytes <= hw.MAX_ACCESS_BYTES])
        # (a sub-byte table's widths are whole bytes too: 1 to 16, the list for elem_bytes 1)
        eligible = v.addr.ok if v.vtpl is not None else np.zeros(v.nb, dtype=bool)
        self.memo.reset_unless((v.addr.rel, v.vtpl, t.elem_bits, t.vec))
        st = per_block(t, eligible, v.addr.start % L, self.memo, block_stats)
        w = np.asarray(weights, dtype=np.int64)
        hist = (st["hist"] * w[:, None]).sum(axis=0)
        for code in np.flatnonzero(hist):
            self.hist[int(code) * 8] += int(hist[code])
        has = st["min"] != _NOREAL
        m = int(st["min"][has].min()) if has.any() else 0
        if self.min_legal is None or m < self.min_legal:
            self.min_legal = m
            cand = np.flatnonzero(has & (st["min"] == m))
            if cand.size:
                b_ord = int(cand[0])
                self.witness = t.row(t.row_index(b_ord, int(st["first"][b_ord]), 0))
                self.witness["widest_bits"] = m
        self.illegal += int((st["illegal"] * w).sum())
        room = 8 - len(self.findings)
        if room > 0 and st["illegal"].any():
            apb = t.per_block // t.vec
            for b in np.flatnonzero(st["illegal"]):
                if room <= 0:
                    break
                one = t.select_blocks(np.array([b]))
                cont, al = access_legality(one)
                real_acc = np.ones(cont.size, dtype=bool) if one.valid is None else one.valid.reshape(-1, one.vec)[:, 0]
                for j in np.flatnonzero(real_acc & ~(cont & al))[:room]:
                    self.findings.append(self._illegal(t, int(b) * apb + int(j), bool(cont[j]), bool(al[j])))
                    room -= 1

    @staticmethod
    def _illegal(t: AccessTable, j: int, cont: bool, al: bool) -> Finding:
        wt, why = vector_fault(t, j, cont, al)
        return Finding(check="vectorize", kind="illegal_vector", stage=t.stage, side=t.side, witness=wt,
                       message="declared " + why)

    def result(self) -> CheckResult:
        declared = self.side.access_bits
        summary = VectorizeSummary(declared_bits=declared, declared_legal=self.illegal == 0,
                                   max_legal_bits=self.min_legal or 0,
                                   widest_histogram=dict(sorted(self.hist.items())), illegal_accesses=self.illegal)
        res = CheckResult(check="vectorize", stage=self.side.stage, side=self.side.which, status="PASS",
                          summary=summary)
        for f in self.findings:
            res.add(f, 0)
        res.total_findings += self.illegal
        if self.illegal:
            res.fail()
        elif self.min_legal and self.min_legal > declared:
            res.add(Finding(check="vectorize", kind="narrow", stage=self.side.stage, side=self.side.which,
                            witness=dict(self.witness or {}), severity="info",
                            message=f"declared {declared}-bit accesses; every thread allows "
                                    f"{self.min_legal}-bit vectors"))
        if self.min_bits is not None and declared < self.min_bits:
            res.fail()
            res.add(Finding(check="vectorize", kind="expectation", stage=self.side.stage, side=self.side.which,
                            message=f"declared {declared}-bit accesses, the spec expects at least "
                                    f"{self.min_bits}-bit"))
        return res


def check_vectorize(tables: AccessTable | Sequence[AccessTable], *, min_bits: int | None = None) -> CheckResult:
    """Vectorization of one side's table (or chunks of it); register sides are skipped."""
    return check_tables("vectorize", tables, lambda t: Vectorize(t, min_bits))  # type: ignore[arg-type]


@register
class VectorizeCheck(Check):
    name = "vectorize"
    definition = staticmethod(widest_vector_definition)
    memories = ("global", "shared")  # a register side takes any vector width

    def accumulator(self, model: KernelModel, side: SideModel | None) -> Vectorize:
        assert side is not None
        return Vectorize(side, model.expect.vector_bits)
