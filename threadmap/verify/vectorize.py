"""Vectorization: the widest vector each thread's values allow, and the declared atom's legality.

Definitions.  On one side of a copy, order each thread's rows by value index
``v_0 < v_1 < ...`` with byte addresses ``a_0, a_1, ...`` and element size ``e``.  A
vector width of ``k`` elements (``k * e * 8`` bits, a power of two, at most 128 bits) is
*legal for the thread* iff its value count is a multiple of ``k`` and every group
``{a_{jk}, ..., a_{jk+k-1}}`` is contiguous (``a_{i+1} = a_i + e``) and aligned
(``a_{jk} % (k*e) == 0``; addresses include the tensor base, so the base alignment and
the leading dimensions enter here).  The side's widest legal vector is the minimum over
threads of each thread's widest (one instruction width for all threads).

The *declared* access (``table.vec`` elements per access) is legal iff every access's
lanes are contiguous (``addr(lane j) = addr(lane 0) + j*e``) and its first address is
aligned to ``vec * e`` bytes.  Register sides are skipped (any width is legal).

:func:`widest_vector_definition` is the executable definition for one thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from threadmap.simulate.access import AccessTable
from threadmap.verify._util import access_groups, group_starts, row_witness
from threadmap.verify.result import MAX_FINDINGS, CheckResult, Finding

CHECK = "vectorize"
MAX_VECTOR_BITS = 128


def widest_vector_definition(addresses_in_value_order: Sequence[int], elem_bytes: int,
                             max_bits: int = MAX_VECTOR_BITS) -> int:
    """Widest legal vector (bits) for one thread's addresses listed in value order."""
    a = list(addresses_in_value_order)
    best = 0
    k = 1
    while k * elem_bytes * 8 <= max_bits:
        ok = len(a) % k == 0 and all(
            a[j] % (k * elem_bytes) == 0 and all(a[j + i + 1] == a[j + i] + elem_bytes for i in range(k - 1))
            for j in range(0, len(a), k))
        if ok:
            best = k * elem_bytes * 8
        k *= 2
    return best


def access_legality(t: AccessTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per vector access of ``t``: (first row index, contiguous?, aligned?)."""
    g = access_groups(t)
    e = int(t.elem_bytes)
    addr = np.asarray(t.addr, dtype=np.int64)
    if g is None:  # rows not in whole vectors: group by (block, thread, step) runs
        key = (np.asarray(t.block, dtype=np.int64) * (1 << 20) + t.thread) * (1 << 20) + t.step
        st = group_starts(key)
        lanes = np.asarray(t.lane, dtype=np.int64)
        base = np.repeat(addr[st], np.diff(np.r_[st, len(t)]))
        cont_rows = addr == base + (lanes - lanes[np.repeat(st, np.diff(np.r_[st, len(t)]))]) * e
        contiguous = np.logical_and.reduceat(cont_rows, st) if len(t) else cont_rows
        first = st
    else:
        a = addr[g]
        contiguous = (a == a[:, :1] + np.arange(g.shape[1]) * e).all(axis=1)
        first = g[:, 0]
    aligned = addr[first] % (t.vec * e) == 0
    return first, contiguous, aligned


def widest_per_thread(t: AccessTable, max_bits: int = MAX_VECTOR_BITS) -> tuple[np.ndarray, np.ndarray]:
    """(row index of each (block, thread)'s first value, widest legal bits per thread)."""
    e = int(t.elem_bytes)
    order = np.lexsort((np.asarray(t.value), np.asarray(t.thread), np.asarray(t.block)))
    a = np.asarray(t.addr, dtype=np.int64)[order]
    tk = np.asarray(t.block, dtype=np.int64)[order] * (1 << 32) + np.asarray(t.thread, dtype=np.int64)[order]
    st = group_starts(tk)
    cnt = np.diff(np.r_[st, len(t)])
    rank = np.arange(len(t)) - np.repeat(st, cnt)
    nxt_ok = np.r_[(a[1:] == a[:-1] + e) & (tk[1:] == tk[:-1]), False]
    best = np.zeros(st.size, dtype=np.int64)
    k = 1
    while k * e * 8 <= max_bits:
        pos_in = rank % k
        ok_row = np.where(pos_in == 0, a % (k * e) == 0, True) & np.where(pos_in < k - 1, nxt_ok, True)
        ok = np.logical_and.reduceat(ok_row, st) & (cnt % k == 0)
        best = np.where(ok, k * e * 8, best)
        k *= 2
    return order[st], best


def check_vectorize(tables: AccessTable | Iterable[AccessTable], max_bits: int = MAX_VECTOR_BITS
                    ) -> CheckResult:
    """Vectorization of one side (one table or chunks of it).

    Summary: ``declared_bits`` (``vec * elem_bytes * 8``), ``declared_legal``,
    ``max_legal_bits`` (min over threads of the widest legal vector), ``widest_histogram``
    ({bits: threads}), ``illegal_accesses`` (declared accesses misaligned or
    non-contiguous).  FAIL iff the declared access is illegal.
    """
    chunks = [tables] if isinstance(tables, AccessTable) else list(tables)
    if not chunks:
        return CheckResult(CHECK, None, None, "SKIP", {"reason": "no tables"})
    t0 = chunks[0]
    res = CheckResult(CHECK, t0.stage, t0.side, "PASS")
    if t0.memory == "register":
        res.status = "SKIP"
        res.summary = {"reason": "register side: any vector width is legal",
                       "declared_bits": t0.vec * t0.elem_bytes * 8}
        return res
    hist: dict[int, int] = {}
    min_bits: int | None = None
    illegal = 0
    witness_thread = None
    for t in chunks:
        if len(t) == 0:
            continue
        first, best = widest_per_thread(t, max_bits)
        u, c = np.unique(best, return_counts=True)
        for b, n in zip(u.tolist(), c.tolist()):
            hist[b] = hist.get(b, 0) + n
        m = int(best.min())
        if min_bits is None or m < min_bits:
            min_bits = m
            witness_thread = row_witness(t, int(first[int(np.argmin(best))]), widest_bits=m)
        fr, cont, al = access_legality(t)
        bad = np.flatnonzero(~(cont & al))
        illegal += bad.size
        for j in bad[: max(0, MAX_FINDINGS - len(res.findings))]:
            w = row_witness(t, int(fr[j]), access_bytes=t.access_bytes,
                            contiguous=bool(cont[j]), aligned=bool(al[j]))
            why = []
            if not al[j]:
                why.append(f"address {w['address']} is not a multiple of {t.access_bytes}")
            if not cont[j]:
                why.append("its lanes are not contiguous")
            res.add(Finding(CHECK, "illegal_vector",
                            f"declared {t.access_bytes * 8}-bit access of block {w['block']} thread "
                            f"{w['thread']} step {w['step']} at {w['coordinate']}: " + " and ".join(why),
                            w, t.stage, t.side))
    declared = t0.vec * t0.elem_bytes * 8
    res.total_findings = max(res.total_findings, illegal)
    res.summary = {"declared_bits": declared, "declared_legal": illegal == 0,
                   "max_legal_bits": min_bits or 0, "widest_histogram": dict(sorted(hist.items())),
                   "illegal_accesses": illegal}
    if illegal:
        res.status = "FAIL"
    elif min_bits and min_bits > declared:
        res.add(Finding(CHECK, "narrow", f"declared {declared}-bit accesses; every thread allows "
                        f"{min_bits}-bit vectors", witness_thread or {}, t0.stage, t0.side, "info"))
    return res
