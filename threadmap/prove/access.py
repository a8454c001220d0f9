"""Coalescing and vector legality of global accesses for every size and block, decided by z3.

**What is encoded.**  For one global side of a copy, the sizes are the
:class:`~threadmap.prove.encode.SizeSpace` variables and the block coordinates ``bx, by, bz``
are bit-vectors with ``0 <= b_j < G_j`` (``G_j`` the spec's grid expression, evaluated by the
same expression core on z3).  The thread, step and value index are not variables: they are
finitely many, so each lane of each warp instruction is a term of its own, and its tile-local
coordinates are read from the side's partition, exactly as the simulator reads them.  What
varies with the sizes and the block is affine in the partition's coordinates:

* the coordinate of a row is ``q_k T_k + c_k`` with ``q = at(b)`` (the tile coordinate, an
  affine form of the block coordinates with non-negative coefficients) and ``c`` the row's
  tile-local coordinate;
* the byte address is ``base + e (offset + sum_k (q_k T_k + c_k) d_k)`` with the tensor's
  strides ``d_k`` read from its layout as monomials of the sizes (``(M,N):(N,1)`` gives
  ``d = (N, 1)``), and ``base`` where the simulator places the tensor;
* a row is active as the simulator decides it: a real thread, and for a predicated copy the
  in-bounds test ``q_k T_k + c_k < E_k`` of both sides of the copy joined in (thread,
  value) order, over the whole vector (``vector``) or its first element (``bounds``).

**Fast encodings.**  Three facts keep the queries small and the products out of the
solver's way.  (1) Alignment only needs an address modulo ``2^a`` (``a <= 7``); bit-vector
``+`` and ``*`` are exact modulo ``2^width``, so the low bits of the absolute address are
exact however large it is.  (2) Inside one warp instruction the block's part of the address
is shared by every lane: with ``rho = A_ref mod 128`` (exact by (1)) each lane's address is
``A_ref - rho + (rho + rel_l)`` where ``rel_l = e sum_k (c_lk - c_ref,k) d_k`` depends on
the sizes only through the strides, linearly (the tile-local differences are constants),
so the lanes' sectors ``(rho + rel_l) >> 5`` are compared without the block term.  (3) The
width is chosen so that no coordinate, extent or relative address can wrap (bounded on
intervals over the ranges), and is at most 128 bits.

**Queries.**  *Vector legality* (``vectorize`` for global sides): some real vector access
is not contiguous (``sum_k (c_ek - c_0k) d_k != e``) or not aligned (``A mod (vec e) !=
0``).  *Misaligned access* (``coalescing``): the same for a vector with an active element.
*Worst sectors per request*: ``count_l [active_l and sector_l differs from every earlier
active lane's] >= K + 1`` per instruction, for the worst ``K`` found so far (valid only once
every vector is proved aligned, when a vector of at most 16 bytes lies in one sector).
Every satisfying assignment is replayed: the simulator runs the witness block at the
witness sizes, and the finding (or the instruction's sector count) it reports is the
counterexample; a witness that does not replay is a defect and leaves the property UNKNOWN.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import z3  # type: ignore[import-untyped]  # z3 ships no type stubs

from threadmap import hardware as hw
from threadmap.errors import SpecError
from threadmap.model import KernelModel, SideModel, build_model
from threadmap.model.kernel import CopyModel
from threadmap.prove.encode import Monomial, SizeSpace, Unsupported, first_model, layout_monomials, timed_check
from threadmap.report.model import Finding, PropertyResult
from threadmap.simulate.access import AccessTable
from threadmap.simulate.engine import Simulator
from threadmap.spec.expr import BLOCK_NAMES, Interval
from threadmap.spec.load import LoadedSpec
from threadmap.spec.schema import SizeRange
from threadmap.verify.coalescing import Coalescing, access_legality, bad_accesses, instruction_stats
from threadmap.verify.run import RunOptions, WorkTooLarge, verify_model
from threadmap.verify.vectorize import Vectorize

MAX_BITS = 128
RATIO_QUERY_MS = 20_000  # per query of the sector-ratio bound


@dataclass
class _Tensor:
    """A tensor of one side as the encoding sees it."""

    extents: list[z3.BitVecRef]           # top-level extents (bounds for predicates)
    strides: list[z3.BitVecRef] | None    # top-level strides (global sides only)
    origin: list[z3.BitVecRef]            # q_k T_k per mode


@dataclass
class _Side:
    cp: CopyModel
    sd: SideModel
    other: SideModel
    mine: _Tensor | None
    theirs: _Tensor | None
    inb_cache: dict[tuple[str, int, int], z3.BoolRef] = field(default_factory=dict)


def _max_value(m: Monomial, box: Mapping[str, tuple[int, int, int]]) -> int:
    return abs(int(m.value({k: hi for k, (_, hi, _) in box.items()})))


class AccessEncoding:
    """The global sides of a spec's copies over symbolic sizes and blocks (see the module docstring).
    Raises :class:`Unsupported` for a side this encoding cannot state exactly."""

    def __init__(self, loaded: LoadedSpec, space: SizeSpace, model: KernelModel, timeout_ms: int,
                 deadline: float | None = None) -> None:
        self.loaded, self.space, self.model, self.timeout_ms = loaded, space, model, timeout_ms
        self.deadline = deadline
        self._residues: dict[tuple[int, int], set[tuple[int, ...]] | None] = {}
        spec = loaded.spec
        self.names = [k for k, v in spec.sizes.items() if isinstance(v, SizeRange)]
        self.fixed = {k: v for k, v in spec.sizes.items() if isinstance(v, int)}
        self.forms: dict[str, tuple[list[Monomial], list[Monomial] | None]] = {}
        for cp in model.copies():
            for sd in cp.sides():
                if sd.elem_bits % 8:
                    # the encoding's addresses are element offsets times whole bytes
                    raise Unsupported(f"stage {sd.stage} {sd.which}: {sd.elem_bits}-bit elements (sub-byte "
                                      "addresses are enumerated, not encoded)")
                if sd.tensor is not None and sd.memory == "global" and sd.tensor.name not in self.forms:
                    self.forms[sd.tensor.name] = layout_monomials(spec.tensors[sd.tensor.name].layout,
                                                                  self.names, self.fixed, space.multiples())
                    if any(e.den != 1 for e in self.forms[sd.tensor.name][0]):
                        raise Unsupported(f"tensor {sd.tensor.name}: an extent is a quotient of the sizes "
                                          f"({', '.join(str(e) for e in self.forms[sd.tensor.name][0])})")
        # the width: coordinates, extents and relative addresses must not wrap
        ienv = {k: Interval(lo, hi) for k, (lo, hi, _) in space.box.items()}
        self.gmax = [max(1, Interval.lift(g.apply(ienv)).hi) for g in space.grid]
        need = space.bits
        for cp in model.copies():
            for sd in cp.sides():
                if sd.tensor is None:
                    continue
                tile = max(sd.tile, default=1)
                span = sum(abs(c) for c in self._at_coefs(sd)) * max(self.gmax) + 1
                need = max(need, (span * tile + tile).bit_length())
                if sd.memory == "global":
                    ext, std = self.forms[sd.tensor.name]
                    need = max(need, *(_max_value(e, space.box).bit_length() for e in ext))
                    if std is not None:
                        rel = sum(_max_value(d, space.box) * t for d, t in zip(std, sd.tile, strict=False))
                        need = max(need, (sd.elem_bytes * 2 * rel + 4 * hw.LINE_BYTES).bit_length())
        self.bits = need + 2
        if self.bits > MAX_BITS:
            raise Unsupported(f"addresses need {self.bits} bits, beyond the {MAX_BITS}-bit access encoding")
        W = self.bits
        self.size = {k: z3.ZeroExt(W - space.bits, v) if W > space.bits else v for k, v in space.vars.items()}
        self.block = {n: z3.BitVec(n, W) for n in BLOCK_NAMES}
        env = space.sym_env()
        grid = [space.bv(g.apply(env), W) for g in space.grid]
        self.constraints = [*space.constraints(),
                            *(z3.ULT(self.block[n], g) for n, g in zip(BLOCK_NAMES, grid, strict=True))]
        self.sides: list[_Side] = []
        for cp in model.copies():
            for which in ("src", "dst"):
                sd = getattr(cp, which)
                other = cp.dst if which == "src" else cp.src
                if sd.memory == "global" and sd.tensor is not None:
                    self.sides.append(_Side(cp, sd, other, self._tensor(sd), self._tensor(other)))

    # -- building ------------------------------------------------------------------------------
    def _at_coefs(self, sd: SideModel) -> list[int]:
        if sd.at is None:
            return [0]
        if sd.at_affine is None or any(not e.names() <= set(BLOCK_NAMES) for e in sd.at):
            raise Unsupported(f"stage {sd.stage} {sd.which}: a tile coordinate is not an affine function of the "
                              "block coordinates alone")
        out = []
        for a in sd.at_affine:
            if a.const < 0 or any(c < 0 for c in a.coef.values()):
                raise Unsupported(f"stage {sd.stage} {sd.which}: a tile coordinate has a negative term")
            out += [*a.coef.values(), a.const]
        return out

    def mono(self, m: Monomial) -> z3.BitVecRef:
        v: z3.BitVecRef = z3.BitVecVal(m.coef, self.bits)
        for name, k in m.powers:
            for _ in range(k):
                v = v * self.size[name]
        return v

    def _tensor(self, sd: SideModel) -> _Tensor | None:
        t = sd.tensor
        if t is None:
            return None
        self._at_coefs(sd)
        origin = []
        for k, T in enumerate(sd.tile):
            if sd.at is None or sd.at_affine is None:
                origin.append(z3.BitVecVal(0, self.bits))
                continue
            a = sd.at_affine[k]
            q: z3.BitVecRef = z3.BitVecVal(a.const, self.bits)
            for name, c in a.coef.items():
                q = q + c * self.block[name]
            origin.append(q * T)
        rank = sd.partition.rank
        if t.memory == "shared":
            return _Tensor([z3.BitVecVal(e, self.bits) for e in t.shape[:rank]], None, origin)
        ext, std = self.forms[t.name]
        strides = None
        if std is not None and len(std) == rank and t.strides is not None:
            if any(d.coef < 0 for d in std):
                raise Unsupported(f"tensor {t.name}: a negative stride moves its base with the sizes")
            strides = [self.mono(d) for d in std]
        return _Tensor([self.mono(e) for e in ext[:rank]], strides, origin)

    def _inb(self, s: _Side, which: str, t: int, v: int) -> z3.BoolRef:
        """In-bounds test of (thread, value) on one side of the copy, by its predicate mode."""
        key = (which, t, v)
        if key in s.inb_cache:
            return s.inb_cache[key]
        sd, enc = (s.sd, s.mine) if which == "mine" else (s.other, s.theirs)
        if enc is None:
            out: z3.BoolRef = z3.BoolVal(True)
        else:
            how, vec = s.cp.predicate, sd.vec
            g = v // vec * vec
            vals = range(g, g + vec) if how == "vector" else [g] if how == "bounds" else [v]
            c = sd.partition.coord
            out = z3.And([z3.ULT(enc.origin[k] + int(c[t, u, k]), enc.extents[k])
                          for u in vals for k in range(len(enc.extents))])
        s.inb_cache[key] = out
        return out

    def active(self, s: _Side, t: int, v: int) -> z3.BoolRef:
        if s.cp.predicate == "none":
            return z3.BoolVal(True)
        return z3.And(self._inb(s, "mine", t, v), self._inb(s, "theirs", t, v))

    def address_low(self, s: _Side, t: int, v: int, n: int) -> z3.BitVecRef:
        """The byte address of (thread, value) modulo ``2^n``, computed in ``n``-bit arithmetic
        (every operand truncated first: ``+`` and ``*`` modulo ``2^n`` only read low bits), so
        the products of block coordinates and sizes stay ``n`` bits wide."""
        assert s.mine is not None and s.sd.tensor is not None and s.sd.at_affine is not None or s.sd.at is None
        tensor = s.sd.tensor
        assert tensor is not None
        _, std = self.forms[tensor.name]
        assert std is not None
        c = s.sd.partition.coord

        def low(x: z3.BitVecRef) -> z3.BitVecRef:
            return z3.Extract(n - 1, 0, x)

        off: z3.BitVecRef = z3.BitVecVal(tensor.offset, n)
        for k, d in enumerate(std):
            dk: z3.BitVecRef = z3.BitVecVal(d.coef, n)
            for name, pw in d.powers:
                for _ in range(pw):
                    dk = dk * low(self.size[name])
            q: z3.BitVecRef = z3.BitVecVal(0, n)
            if s.sd.at is not None and s.sd.at_affine is not None:
                a = s.sd.at_affine[k]
                q = z3.BitVecVal(a.const, n)
                for name, cf in a.coef.items():
                    q = q + cf * low(self.block[name])
            off = off + (q * s.sd.tile[k] + int(c[t, v, k])) * dk
        return tensor.base + s.sd.elem_bytes * off

    def relative(self, s: _Side, t: int, v: int, t0: int, v0: int) -> z3.BitVecRef:
        """``address(t, v) - address(t0, v0)``: the block's part cancels."""
        assert s.mine is not None and s.mine.strides is not None
        c = s.sd.partition.coord
        out: z3.BitVecRef = z3.BitVecVal(0, self.bits)
        for k, d in enumerate(s.mine.strides):
            dk = int(c[t, v, k]) - int(c[t0, v0, k])
            if dk:
                out = out + dk * d
        return s.sd.elem_bytes * out

    def lanes(self, s: _Side) -> list[tuple[int, int, list[tuple[int, int]]]]:
        """(warp, step, [(lane's thread, first value)]) of every warp instruction."""
        p = s.sd.partition
        T, vec = p.threads, s.sd.vec
        out = []
        for w in range(-(-T // hw.WARP_SIZE)):
            for st in range(p.values // vec):
                out.append((w, st, [(t, st * vec) for t in range(w * hw.WARP_SIZE, min(T, (w + 1) * hw.WARP_SIZE))]))
        return out

    def legal(self, s: _Side, t: int, v0: int) -> z3.BoolRef:
        """The vector access of thread ``t`` starting at value ``v0`` is contiguous and aligned."""
        vec, e = s.sd.vec, s.sd.elem_bytes
        conds = [self.relative(s, t, v0 + j, t, v0) == j * e for j in range(1, vec)]
        a = (vec * e).bit_length() - 1
        if a:
            conds.append(self.address_low(s, t, v0, a) == 0)
        return z3.And(conds) if conds else z3.BoolVal(True)

    def legal_keys(self, s: _Side) -> np.ndarray:
        """Per thread ``t`` and vector ``st`` (values ``st vec ..``), a row that determines
        :meth:`legal` ``(s, t, st vec)``: the coordinate differences of the vector's elements
        from its first (:meth:`relative` reads nothing else) and the first element's
        coordinates modulo ``2^a`` (:meth:`address_low` at ``a`` bits reads nothing else:
        ``+`` and ``*`` modulo ``2^a`` only read low bits).  Shape ``(threads, vectors, K)``;
        equal rows give the same formula, so each is built and solved once."""
        c = np.asarray(s.sd.partition.coord, dtype=np.int64)
        vec, e = s.sd.vec, s.sd.elem_bytes
        T, V, rank = c.shape
        first = c[:, 0:V - V % vec:vec, :]
        parts = [c[:, j:V - V % vec:vec, :] - first for j in range(1, vec)]
        a = (vec * e).bit_length() - 1
        if a:
            parts.append(first % (1 << a))
        if not parts:
            return np.zeros((T, first.shape[1], 0), dtype=np.int64)
        return np.concatenate(parts, axis=2)

    def sector_bound(self, s: _Side, lanes: Sequence[tuple[int, int]], floor: int = 0) -> int:
        """An upper bound on the sectors of one instruction whose active vectors are aligned.

        Lanes whose coordinates differ only along constant strides form a group at constant
        byte distances ``x``; a group starting at ``g`` touches ``|{(g mod 32 + x) >> 5}|``
        sectors, and ``g mod 32`` is ``(rho + e sum_k kappa_k d_k + x_min) mod 32`` with
        ``kappa`` the group's offsets along the symbolic strides.  The bound is the largest
        sum over the groups when ``rho`` and every ``d_k mod 32`` take any values (a group
        whose start breaks the alignment its active vectors need has no active lane).
        Residue combinations are tried from the largest sum down until z3 finds sizes and a
        block in range that have them (or the sum is at most ``floor``, which needs no more).
        Too many symbolic strides to enumerate: each group at its worst start."""
        tensor = s.sd.tensor
        assert tensor is not None
        e, vec = s.sd.elem_bytes, s.sd.vec
        a = vec * e
        _, std = self.forms[tensor.name]
        assert std is not None
        sym = [k for k, d in enumerate(std) if d.powers]
        c = s.sd.partition.coord
        t0, v0 = lanes[0]
        groups: dict[tuple[int, ...], list[int]] = {}
        for t, v in lanes:
            key = tuple(int(c[t, v, k]) - int(c[t0, v0, k]) for k in sym)
            groups.setdefault(key, []).append(e * sum((int(c[t, v, k]) - int(c[t0, v0, k])) * d.coef
                                                      for k, d in enumerate(std) if not d.powers))
        S = hw.SECTOR_BYTES
        keys = list(groups)
        counts = []  # per group: sectors touched for each start residue mod 32 (0: start breaks alignment)
        for key in keys:
            offs = groups[key]
            lo = min(offs)
            rel = [x - lo for x in offs]
            ok = [all((r + x) % a == 0 for x in rel) for r in range(S)]
            counts.append([len({(r + x) >> 5 for x in rel}) if ok[r] else 0 for r in range(S)])
        # rho = base + e (offset + sum_k (q_k T_k + c_k) d_k) mod 32: it depends on the sizes
        # and the block only through d_k mod m and q_k mod m (q_k free where a block moves it)
        m = S // math.gcd(e, S)
        moving = [k for k in range(len(std)) if s.sd.at is not None and s.sd.at_affine is not None
                  and s.sd.at_affine[k].coef]
        fixed_q = [0 if s.sd.at_affine is None else s.sd.at_affine[k].const for k in range(len(std))]
        if m ** (len(sym) + len(moving)) > 1 << 12:
            return sum(max(cn) for cn in counts)
        totals: dict[int, list[tuple[int, ...]]] = {}
        for combo in itertools.product(range(m), repeat=len(sym) + len(moving)):
            d = [dd.coef for dd in std]
            for k, x in zip(sym, combo, strict=False):
                d[k] = x
            q = list(fixed_q)
            for k, x in zip(moving, combo[len(sym):], strict=True):
                q[k] = x
            rho = tensor.base + e * (tensor.offset + sum((q[k] * s.sd.tile[k] + int(c[t0, v0, k])) * d[k]
                                                         for k in range(len(std))))
            tot = 0
            for key, cn in zip(keys, counts, strict=True):
                start = rho + e * sum(kk * d[k] for kk, k in zip(key, sym, strict=True)) + min(groups[key])
                tot += cn[start % S]
            totals.setdefault(tot, []).append(combo)
        # the largest total whose residues some sizes and block in range have (the ranges and
        # assumptions often fix residues: N % 64 == 0 makes every row 32-byte aligned)
        feasible = self._feasible_residues(s, sym, moving, m)
        for tot in sorted(totals, reverse=True):
            if tot <= floor or feasible is None or any(cb in feasible for cb in totals[tot]):
                return tot
        return 0

    def _feasible_residues(self, s: _Side, sym: Sequence[int], moving: Sequence[int], m: int
                           ) -> set[tuple[int, ...]] | None:
        """Every ``(d_k mod m for symbolic k, q_k mod m for moving k)`` that some sizes and
        block in range have (z3, one blocking clause per combination found); None (all of
        them) when the solver gives up."""
        key = (id(s), m)
        if key in self._residues:
            return self._residues[key]
        assert s.mine is not None and s.mine.strides is not None
        terms = [z3.URem(s.mine.strides[k], m) for k in sym]
        terms += [z3.URem(z3.UDiv(s.mine.origin[k], s.sd.tile[k]), m) for k in moving]
        solver = self.solver(self.timeout_ms)
        out: set[tuple[int, ...]] | None = set()
        while True:
            r = timed_check(solver, self.deadline)
            if r == z3.unsat:
                break
            if r == z3.unknown:
                out = None
                break
            mod = solver.model()
            vals = tuple(mod.eval(t, model_completion=True).as_long() for t in terms)
            assert out is not None
            out.add(vals)
            solver.add(z3.Or([t != v for t, v in zip(terms, vals, strict=True)]) if terms else z3.BoolVal(False))
        self._residues[key] = out
        return out

    def new_sectors(self, s: _Side, lanes: Sequence[tuple[int, int]]) -> list[z3.BoolRef]:
        """Per lane of one instruction: it is active and its sector differs from every earlier
        active lane's (their count is the instruction's sectors once its vectors are aligned)."""
        t_ref, v_ref = lanes[0]
        rho = z3.ZeroExt(self.bits - 7, self.address_low(s, t_ref, v_ref, 7))
        act = [self.any_active(s, t, v0) for t, v0 in lanes]
        sec = [z3.simplify((rho + self.relative(s, t, v0, t_ref, v_ref)) >> 5) for t, v0 in lanes]
        return [z3.And(act[i], *[z3.Not(z3.And(act[j], sec[j] == sec[i])) for j in range(i)])
                for i in range(len(lanes))]

    def new_elements(self, s: _Side, lanes: Sequence[tuple[int, int]], whole: bool = False) -> list[z3.BoolRef]:
        """Per element ``(lane, j)`` of one instruction: it is active and no earlier lane's
        element ``j`` is active at the same address (their count times the element size is the
        instruction's distinct bytes once its vectors are aligned: two aligned vectors of one
        width coincide or are disjoint, so only elements of one index ``j`` can coincide).
        With ``whole`` (every vector active or not as a whole) one term per lane: a new vector."""
        out = []
        for i, (t, v0) in enumerate(lanes):
            same = [self.relative(s, t, v0, tj, vj) == 0 for tj, vj in lanes[:i]]
            for j in range(1 if whole else s.sd.vec):
                act = self.active(s, t, v0 + j)
                dup = [z3.And(self.active(s, tj, vj + j), eq) for (tj, vj), eq in zip(lanes[:i], same, strict=True)]
                out.append(z3.And(act, z3.Not(z3.Or(dup))) if dup else act)
        return out

    def any_active(self, s: _Side, t: int, v0: int) -> z3.BoolRef:
        return z3.Or([self.active(s, t, v0 + j) for j in range(s.sd.vec)])

    def solver(self, timeout_ms: int) -> z3.Solver:
        s = z3.Solver()
        s.set("timeout", timeout_ms)
        s.add(*self.constraints)
        return s

    def witness(self, solver: z3.Solver, extra: Sequence[z3.BoolRef]
                ) -> tuple[dict[str, int], tuple[int, int, int]] | None:
        """Sizes and block coordinates satisfying ``extra``, smallest sizes first (so that the
        replay stays small); None when unsatisfiable."""
        try:
            m = first_model(solver, self.space, extra, self.deadline)
        except Unsupported as e:
            raise TimeoutError(str(e)) from None
        if m is None:
            return None
        sizes = {k: m.eval(v, model_completion=True).as_long() for k, v in self.space.vars.items()}
        blk = tuple(m.eval(self.block[n], model_completion=True).as_long() for n in BLOCK_NAMES)
        return sizes, (blk[0], blk[1], blk[2])

    # -- replay --------------------------------------------------------------------------------
    def replay(self, s: _Side, sizes: Mapping[str, int], block: tuple[int, int, int]
               ) -> tuple[KernelModel, AccessTable]:
        """The simulator's table of the side for one block at the witness sizes."""
        env = {**self.loaded.envs[0], **sizes}
        model = build_model(self.loaded, env)
        gx, gy, _ = model.grid
        b = block[0] + gx * (block[1] + gy * block[2])
        cp = model.stages[s.cp.index]
        assert isinstance(cp, CopyModel)
        src, dst = Simulator(model).stage_tables(cp, np.array([b], dtype=np.int64))
        return model, (src if s.sd.which == "src" else dst)


def _result(prop: str, status: str, t0: float, reason: str, **kw: Any) -> PropertyResult:
    return PropertyResult(property=prop, status=status, method="z3", seconds=time.perf_counter() - t0,  # type: ignore[arg-type]
                          reason=reason, **kw)


def legality(enc: AccessEncoding, prop: str, timeout_ms: int, t0: float) -> PropertyResult:
    """``vectorize`` (every real vector) or ``coalescing`` (every active vector) legal."""
    for s in enc.sides:
        bad = []
        # legal() is a function of the lane's key row: one formula per distinct row (and, where
        # every lane is active, one disjunct per distinct row: the disjunction is the same)
        keys = enc.legal_keys(s)
        formulas: dict[bytes, z3.BoolRef | None] = {}
        every_active = prop == "vectorize" or s.cp.predicate == "none"
        for _, _, lanes in enc.lanes(s):
            for t, v0 in lanes:
                key = keys[t, v0 // s.sd.vec].tobytes()
                if key in formulas:
                    ok = formulas[key]
                    if ok is None or every_active:
                        continue  # always legal, or this disjunct is already there
                else:
                    ok = enc.legal(s, t, v0)
                    if z3.is_true(z3.simplify(ok)):
                        ok = None
                    formulas[key] = ok
                    if ok is None:
                        continue
                bad.append(z3.Not(ok) if every_active else z3.And(enc.any_active(s, t, v0), z3.Not(ok)))
        if not bad:
            continue
        solver = enc.solver(timeout_ms)
        try:
            w = enc.witness(solver, [z3.Or(bad)])
        except TimeoutError as e:
            return _result(prop, "UNKNOWN", t0, f"solver: {e}")
        if w is None:
            continue
        sizes, block = w
        where = f"stage {s.sd.stage} {s.sd.which}"
        try:
            _, tab = enc.replay(s, sizes, block)
        except SpecError as e:
            return _result(prop, "UNKNOWN", t0, f"{where}: the witness at {sizes} does not build: {e}")
        if prop == "vectorize":
            cont, al = access_legality(tab)
            real = np.ones(cont.size, dtype=bool) if tab.valid is None else tab.valid.reshape(-1, tab.vec)[:, 0]
            js = np.flatnonzero(real & ~(cont & al))
            make: Callable[..., Finding] = Vectorize._illegal
        else:
            cont, al = access_legality(tab)
            js = np.flatnonzero(bad_accesses(tab))
            make = Coalescing._misaligned
        if not js.size:
            return _result(prop, "UNKNOWN", t0, f"{where}: the solver's witness (sizes {sizes}, block {block}) "
                                                "does not replay in the simulator")
        fs = [make(tab, int(j), bool(cont[j]), bool(al[j])) for j in js[:5]]
        return _result(prop, "REFUTED", t0, f"{len(js)} illegal vector access(es) in block {block} at these sizes, "
                                            "replayed by the simulator", sizes=dict(sizes), findings=fs)
    return _result(prop, "PROVED", t0, "every vector access of every global side is contiguous and aligned for "
                                       "all sizes in range and every block" if prop == "vectorize" else
                   "no active vector access of a global side is misaligned, for all sizes in range and every block")


def _worst_sectors(enc: AccessEncoding, timeout_ms: int, deadline: float) -> dict[str, Any] | str:
    """The most sectors one warp instruction of a global side touches, over all sizes and
    blocks, with the replayed instruction that reaches it (or why it is not known)."""
    best: dict[str, Any] = {"sectors": 0}
    for s in enc.sides:
        solver = enc.solver(timeout_ms)
        insts = sorted(((enc.sector_bound(s, lanes, best["sectors"]), w, st, lanes)
                        for w, st, lanes in enc.lanes(s) if lanes), key=lambda x: -x[0])
        for bound, w, st, lanes in insts:
            if bound <= best["sectors"]:
                break  # sorted: no later instruction can beat the worst found
            new = enc.new_sectors(s, lanes)
            # the bound is usually reached: one satisfiable query settles the instruction; else
            # step down (each unsatisfiable query lowers what this instruction can reach)
            goal = bound
            while goal > best["sectors"]:
                if time.perf_counter() > deadline:
                    return "time limit reached while bounding the sectors per request"
                try:
                    wit = enc.witness(solver, [z3.PbGe([(x, 1) for x in new], goal)])
                except TimeoutError as e:
                    return f"solver: {e}"
                if wit is None:
                    goal -= 1
                    continue
                sizes, block = wit
                try:
                    _, tab = enc.replay(s, sizes, block)
                except SpecError as e:
                    return f"the witness at {sizes} does not build: {e}"
                got = int(instruction_stats(tab)["sectors"][w * tab.steps + st])
                if got < goal:
                    return (f"the solver's witness (sizes {sizes}, block {block}, warp {w} step {st}) does not "
                            "replay in the simulator")
                best = {"sectors": got, "stage": s.sd.stage, "side": s.sd.which, "block": list(block), "warp": w,
                        "step": st, "sizes": dict(sizes), "access_bits": s.sd.access_bits}
                break
    return best


def _ratio_side(enc: AccessEncoding, s: _Side, lim: float, timeout_ms: int, deadline: float
                ) -> tuple[str, int, int, dict[str, int], tuple[int, int, int]] | str | None:
    """Whether every warp instruction of side ``s`` touches at most ``lim`` times its ideal
    sectors, for all sizes and blocks: None when it does; else ``(kind, warp, step, sizes,
    block)`` of a solver witness (``kind`` "over"), or why it is not decided.

    Per instruction the violation is ``ideal = k and sectors > floor(lim k)`` for some ``k``
    (``ideal = ceil(bytes / 32)``; ``bytes = e`` times the distinct active elements); an
    instruction whose sector bound is at most ``floor(lim)`` needs no query (an active
    instruction has ``ideal >= 1``)."""
    r = Fraction(lim)  # the float exactly: the bound proved is never looser than the spec's
    e, a = s.sd.elem_bytes, s.sd.access_bits // 8
    S = hw.SECTOR_BYTES
    # a whole vector is active or not when the predicate is per vector on both sides
    whole = s.cp.predicate == "none" or (s.cp.predicate in ("vector", "bounds")
                                         and (s.theirs is None or s.other.vec % s.sd.vec == 0))
    unit = a if whole else e  # the fewest distinct bytes one distinct active vector adds
    # a query the solver cannot settle soon rarely settles later: UNKNOWN without spending the
    # spec's whole time limit on it
    solver = enc.solver(min(timeout_ms, RATIO_QUERY_MS))
    insts = sorted(((enc.sector_bound(s, lanes, math.floor(r)), w, st, lanes) for w, st, lanes in enc.lanes(s)
                    if lanes), key=lambda x: -x[0])
    for bound, w, st, lanes in insts:
        # an aligned vector lies in one sector: with n distinct active vectors, sectors <= min(bound, n)
        # and ideal >= ceil(n unit / 32); when that never exceeds lim, no query is needed
        if all(min(bound, n) <= math.floor(r * -(-n * unit // S)) for n in range(1, len(lanes) + 1)):
            continue
        if time.perf_counter() > deadline:
            return "time limit reached while bounding the sectors per ideal sector"
        secs = enc.new_sectors(s, lanes)
        if whole:  # count distinct vectors (each a bytes) rather than elements
            els, wt = enc.new_elements(s, lanes, whole=True), a
        else:
            els, wt = enc.new_elements(s, lanes), e
        over = [z3.And(z3.PbGe([(x, wt) for x in els], S * (k - 1) + 1),
                       z3.PbLe([(x, wt) for x in els], S * k),
                       z3.PbGe([(x, 1) for x in secs], math.floor(r * k) + 1))
                for k in range(1, -(-len(els) * wt // S) + 1) if math.floor(r * k) < bound]
        if not over:
            continue
        try:
            wit = enc.witness(solver, [z3.Or(over)])
        except TimeoutError as ex:
            return f"solver: {ex}"
        if wit is not None:
            return "over", w, st, wit[0], wit[1]
    return None


def sector_ratio(enc: AccessEncoding, co: PropertyResult, timeout_ms: int, deadline: float) -> PropertyResult:
    """The spec's ``sectors_per_request`` expectations (a whole-grid ratio per side, sectors
    over ideal sectors) on a ``coalescing`` result whose alignment is PROVED.

    Sufficient: every warp instruction's sectors ``<= lim x`` its ideal sectors (summed over
    the grid, the ratio is then at most ``lim``); decided by z3 per instruction.  Where it
    fails, the witness instruction is replayed by the simulator and the whole-grid ratio is
    measured at the witness sizes: above ``lim`` it is REFUTED there; else UNKNOWN naming the
    instruction, block and sizes (the ratio over the grid may still hold).  With no size
    range, the whole-grid ratio at the spec's one size is exact."""
    t0 = time.perf_counter()
    exp = enc.model.expect
    proved: list[str] = []
    for s in enc.sides:
        lim = exp.sector_ratio_load if s.sd.which == "src" else exp.sector_ratio_store
        if lim is None:
            continue
        where = f"stage {s.sd.stage} {s.sd.which}"
        # one size: its whole-grid ratio is exact (and far cheaper than a query per instruction)
        got = ("one", 0, 0, {k: int(enc.loaded.envs[0][k]) for k in enc.loaded.spec.sizes}, (0, 0, 0)) \
            if not enc.names else _ratio_side(enc, s, lim, timeout_ms, deadline)
        if got is None:
            proved.append(f"{where}: every instruction's sectors <= {lim:g} x its ideal")
            continue
        if isinstance(got, str):
            return co.model_copy(update={"status": "UNKNOWN", "seconds": co.seconds + time.perf_counter() - t0,
                                         "reason": f"vectors are aligned; the sector ratio {lim:g} of {where} is "
                                                   f"not decided: {got}"})
        kind, w, st, sizes, block = got
        at = ", ".join(f"{k}={v}" for k, v in sizes.items())
        inst = f"{where}, warp {w} step {st}, block {block}"

        def unknown(why: str, inst: str = inst, at: str = at, lim: float = lim) -> PropertyResult:
            return co.model_copy(update={
                "status": "UNKNOWN", "seconds": co.seconds + time.perf_counter() - t0, "reason": (
                    f"the spec's sector ratio {lim:g} is not proved for every size: the instruction of {inst} at "
                    f"{at} {why}")})
        why = "(the spec has one size)"
        if kind == "over":
            try:
                _, tab = enc.replay(s, sizes, block)
            except SpecError as ex:
                return unknown(f"is a witness that does not build: {ex}")
            st_ = instruction_stats(tab)
            i = w * tab.steps + st
            sec, ideal = int(st_["sectors"][i]), int(st_["ideal"][i])
            if not sec > Fraction(lim) * ideal:
                return unknown(f"is the solver's witness, which does not replay in the simulator ({sec} sectors, "
                               f"ideal {ideal})")
            why = (f"touches {sec} sectors for {ideal} ideal, more than {lim:g}x (the sufficient per-instruction "
                   "bound sectors <= ratio x ideal fails there)")
        try:
            run = verify_model(build_model(enc.loaded, {**enc.loaded.envs[0], **sizes}),
                               RunOptions(checks=frozenset({"coalescing"})))
        except (SpecError, WorkTooLarge) as ex:
            return unknown(f"{why}; the whole grid there is not measured: {ex}")
        res = next(x for x in run.results if x.check == "coalescing" and x.stage == s.sd.stage
                   and x.side == s.sd.which)
        ratio = float(getattr(res.summary, "ratio", 0.0))
        if run.totals == "partial" or any("partial" in n for n in run.notes):
            return unknown(f"{why}; the grid there was not enumerated whole")
        if ratio > lim + 1e-12:  # the tolerance verify uses
            fs = [f for f in res.findings if f.severity == "error"]
            return co.model_copy(update={
                "status": "REFUTED", "method": "z3 + simulator", "sizes": dict(sizes), "findings": fs[:5],
                "seconds": co.seconds + time.perf_counter() - t0,
                "reason": f"the whole-grid sector ratio of {where} is {ratio:.4g} at these sizes, above the "
                          f"spec's {lim:g} (measured by the simulator" +
                          (f"; the instruction of {inst} {why})" if kind == "over" else ")")})
        if not enc.names:
            proved.append(f"{where}: the whole-grid ratio at the spec's only size is {ratio:.4g} <= {lim:g}")
            continue
        return unknown(f"{why}; the whole-grid ratio there is {ratio:.4g}, within {lim:g}, so it may still hold")
    if not proved:
        return co
    return co.model_copy(update={"seconds": co.seconds + time.perf_counter() - t0,
                                 "reason": f"{co.reason}; sector ratio: " + "; ".join(proved)})


def access_properties(loaded: LoadedSpec, space: SizeSpace, model: KernelModel, timeout_ms: int,
                      deadline: float) -> dict[str, PropertyResult]:
    """``vectorize`` and ``coalescing`` of the global sides (the shared sides of ``vectorize``
    and the grid-level ratio are judged by the caller at its representatives)."""
    t0 = time.perf_counter()
    try:
        enc = AccessEncoding(loaded, space, model, timeout_ms, deadline)
    except Unsupported as e:
        return {p: _result(p, "UNKNOWN", t0, str(e)) for p in ("vectorize", "coalescing")}
    for s in enc.sides:
        if s.mine is None or s.mine.strides is None:
            why = f"stage {s.sd.stage} {s.sd.which}: tensor {s.sd.tensor.name if s.sd.tensor else '?'} is not " \
                  "affine in its top-level coordinates with monomial strides"
            return {p: _result(p, "UNKNOWN", t0, why) for p in ("vectorize", "coalescing")}
    out = {"vectorize": legality(enc, "vectorize", timeout_ms, t0)}
    t1 = time.perf_counter()
    co = legality(enc, "coalescing", timeout_ms, t1)
    if co.status == "PROVED":
        worst = _worst_sectors(enc, timeout_ms, deadline)
        if isinstance(worst, str):
            co = co.model_copy(update={"status": "UNKNOWN", "reason": "vectors are aligned, but the worst sectors "
                                                                     f"per request is not bounded: {worst}"})
        else:
            co = co.model_copy(update={"worst": worst, "seconds": time.perf_counter() - t1})
            co = sector_ratio(enc, co, timeout_ms, deadline)
    out["coalescing"] = co
    return out
