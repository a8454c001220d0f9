"""The size space of a spec as z3 bit-vectors, and the classes of sizes a verdict depends on.

**Variables and constraints.**  Every named size becomes a z3 bit-vector variable; a fixed
size is pinned, a :class:`~threadmap.spec.schema.SizeRange` gives ``min <= s <= max`` and
``s % multiple_of == 0``, each ``assume:`` relation is evaluated by the spec's one expression
core (:meth:`~threadmap.spec.expr.Relation.apply` over :class:`~threadmap.layout.Sym`).  The
bit-width is chosen per spec: every expression the encoding builds (grid entries, tensor
extents, the class terms, the assumptions) is first evaluated on intervals over the ranges,
with every intermediate result tracked; the width holds the largest magnitude with a bit to
spare, and a spec whose intermediates could be negative or exceed 64 bits is refused
(unsigned bit-vectors would wrap) -- checked, not assumed.

**Symbolic extents.**  A global tensor's top-level extents and strides are read from its
layout as monomials ``c * M^a * N^b / d`` of the sizes: the layout is parsed with every size
and every expression leaf standing in as a distinct large prime, which tells which names each
bound leaf is a product of; each leaf's expression is expanded by z3 into a sum of monomials,
and an extent (or stride) is a monomial when that sum has one term.  Only ``+``, ``-``, ``*``
and divisions that divide every admitted value (``C/32`` of a size stepped by 32:
:meth:`SizeSpace.multiples`) are read; ``min``, ``max``, ``%`` and ``ceil_div`` are refused, and
so is anything that expands to several terms (``M + 1``, ``Q + 60 - N``).  A nested top-level
mode (an implicit GEMM's ``(Q,P,N)``) is taken at its size, ``Q*P*N``: coverage, predicates and
the tile kinds are statements about the mode's coordinate, whatever its inner modes' strides
(which are then not leaves, so the access properties stay UNKNOWN).  A spec whose extents are
not monomials is not proved (UNKNOWN, never a pass).

**Classes.**  A tiled global side with tile ``T_k`` along mode ``k`` and tile coordinate
``at_k = b_j`` (a block coordinate) touches tiles ``q = 0 .. G_j - 1``; each tile is
*interior* (``(q+1) T_k <= E_k``), the *edge* tile cut at ``r_k = E_k mod T_k`` or *outside*
(``q T_k >= E_k``).  When the tile-local partition does not depend on the sizes, stays
inside its tile, and each block coordinate tiles one extent by one tile (all checked),
what happens in a tile depends only on its type, so a grid-level verdict (coverage,
predicates, dataflow, bank conflicts) is the disjunction over the tile types present.

The class of a size assignment is, per block coordinate ``b_j`` tiling ``E`` by ``T``, ``E
mod T`` and how ``G_j`` compares with ``ceil_div(E, T)`` (fewer, equal or more tiles); per
constant ``at_k = a``, the cut ``clamp(E_k - a T_k, 0, T_k)``; per grid axis no ``at``
uses, ``min(G_j, 2)``.  Which tile types a member has then depends only on its class and
on whether ``E >= T`` (an interior tile exists) along each block coordinate.  A class's
representative satisfies every ``E >= T`` that some member satisfies when one member
satisfies them all, so its tile types include every member's; otherwise each reachable
combination gets its own representative.  Classes are enumerated by z3 with blocking
clauses, each representative with the smallest size bound that admits it (64, 1024, 2^16,
2^24, then none, so the enumeration is complete).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import z3  # type: ignore[import-untyped]  # z3 ships no type stubs

from threadmap.errors import SpecError, ThreadmapError
from threadmap.layout import Layout, Sym, flatten_to_tuple
from threadmap.layout import shape as layout_shape
from threadmap.layout import stride as layout_stride
from threadmap.layout.backend import Interval
from threadmap.layout.parse import parse_layout
from threadmap.spec.expr import (
    BLOCK_NAMES,
    OPS,
    BinOp,
    Call,
    Expr,
    Name,
    Neg,
    Num,
    Relation,
    parse_expr,
    parse_relation,
)
from threadmap.spec.load import LoadedSpec
from threadmap.spec.parsed import LayoutTemplate
from threadmap.spec.schema import SizeRange

#: size bounds tried in turn while enumerating classes (None: unbounded, which completes)
BOUNDS: tuple[int | None, ...] = (64, 1024, 1 << 16, 1 << 24, None)
#: classes enumerated at most; beyond, the property is UNKNOWN
MAX_CLASSES = 1 << 15  # two unaligned extents of 128-wide tiles: 16,384 classes


class Unsupported(Exception):
    """The spec has a form the encoding does not decide (the property is UNKNOWN)."""


# ----------------------------------------------------------------------------- monomials


@dataclass(frozen=True)
class Monomial:
    """``coef * prod(size ** power) / den``, the division exact for the admitted sizes (``K/2``
    of an even ``K``: :func:`layout_monomials` sets ``den`` only there)."""

    coef: int
    powers: tuple[tuple[str, int], ...]
    den: int = 1

    def value(self, env: Mapping[str, Any]) -> Any:
        v: Any = self.coef
        for name, k in self.powers:
            for _ in range(k):
                v = v * env[name]
        return v // self.den if self.den != 1 else v

    def __str__(self) -> str:
        parts = ([str(self.coef)] if self.coef != 1 or not self.powers else []) + \
            [n if k == 1 else f"{n}^{k}" for n, k in self.powers]
        return "*".join(parts) + (f"/{self.den}" if self.den != 1 else "")


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):  # deterministic below 3.3e24
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _primes(start: int, k: int) -> list[int]:
    out: list[int] = []
    n = start
    while len(out) < k:
        if _is_prime(n):
            out.append(n)
        n += 1
    return out


def _factor(v: int, primes: Mapping[str, int]) -> Monomial | None:
    if v == 0:
        return None
    powers = []
    for name, p in primes.items():
        k = 0
        while v % p == 0:
            v //= p
            k += 1
        if k:
            powers.append((name, k))
    # the rest is the constant factor; a rest that is not one (M + 1) differs between the two
    # prime sets, which layout_monomials compares
    return Monomial(v, tuple(powers))


def _divisor(e: Expr, multiples: Mapping[str, int]) -> int:
    """A number every admitted value of the product ``e`` is a multiple of (1 when ``e`` is no
    product of constants and sizes)."""
    if isinstance(e, Num):
        return abs(int(e.value))
    if isinstance(e, Name):
        return multiples.get(e.name, 1)
    if isinstance(e, BinOp) and e.op == "*":
        return _divisor(e.left, multiples) * _divisor(e.right, multiples)
    return 1


def _not_polynomial(e: Expr, multiples: Mapping[str, int]) -> str | None:
    """Why a layout's size expression may not be a polynomial of the sizes on the admitted
    assignments (None when it is one): ``min``, ``max``, ``%`` and ``ceil_div`` are not, and a
    division is only where its divisor divides every admitted value (``C/32`` of a size stepped
    by 32).  What passes is what :func:`_poly` expands exactly."""
    if isinstance(e, (Num, Name)):
        return None
    if isinstance(e, Neg):
        return _not_polynomial(e.operand, multiples)
    if isinstance(e, BinOp):
        if e.op in ("+", "-", "*"):
            return _not_polynomial(e.left, multiples) or _not_polynomial(e.right, multiples)
        if e.op in ("/", "//") and isinstance(e.right, Num) and int(e.right.value) > 0:
            if _divisor(e.left, multiples) % int(e.right.value) == 0:
                return _not_polynomial(e.left, multiples)
            return f"divides by {int(e.right.value)}, which does not divide every admitted value"
        return f"uses {e.op!r}"
    return "calls a function" if isinstance(e, Call) else "has a form the encoding does not read"


def _poly(e: Expr, var: Mapping[str, Any]) -> Any:
    """A size expression that :func:`_not_polynomial` accepts, as a z3 polynomial over the reals
    (its divisions exact: they divide every admitted value)."""
    if isinstance(e, Num):
        return z3.RealVal(int(e.value))
    if isinstance(e, Name):
        return var[e.name]
    if isinstance(e, Neg):
        return -_poly(e.operand, var)
    assert isinstance(e, BinOp)
    a, b = _poly(e.left, var), _poly(e.right, var)
    return a + b if e.op == "+" else a - b if e.op == "-" else a * b if e.op == "*" else a / b


def _monomial(p: Any) -> Monomial | None:
    """``p`` as one term ``coef * prod(size ** power) / den`` once expanded into a sum of
    monomials (z3's ``som`` normal form), or None when it has several terms or is zero."""
    coef = Fraction(1)
    powers: dict[str, int] = {}

    def walk(t: Any) -> bool:
        nonlocal coef
        if z3.is_rational_value(t):
            coef *= Fraction(t.as_fraction())
            return True
        if z3.is_mul(t):
            return all(walk(c) for c in t.children())
        if z3.is_app_of(t, z3.Z3_OP_POWER) and z3.is_rational_value(t.arg(1)) and \
                t.arg(1).as_fraction().denominator == 1 and z3.is_const(t.arg(0)):
            name = str(t.arg(0))
            powers[name] = powers.get(name, 0) + int(t.arg(1).as_fraction().numerator)
            return True
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            powers[str(t)] = powers.get(str(t), 0) + 1
            return True
        return False

    if not walk(z3.simplify(p, som=True)) or coef == 0:
        return None
    return Monomial(coef.numerator, tuple(sorted(powers.items())), coef.denominator)


def layout_monomials(text: str, names: Sequence[str], fixed: Mapping[str, int] | None = None,
                     multiples: Mapping[str, int] | None = None
                     ) -> tuple[list[Monomial], list[Monomial] | None]:
    """The top-level extents of a layout string as monomials of the sizes ``names`` (the
    ``fixed`` sizes are their values), and its top-level strides when every one is a leaf and a
    monomial (None otherwise).  A nested top-level mode's extent is its size (``(Q,P,N)``:
    ``Q*P*N``), and its stride is not a leaf (so the strides are None).  ``multiples``: sizes
    every admitted value of which is a multiple of ``m`` (:meth:`SizeSpace.multiples`); a
    division is accepted only where they make it exact (``C/32``, and a top-level ``K/2``: a
    monomial with ``den`` 2).  Raises :class:`Unsupported` when an extent is not a monomial.

    How: the layout is parsed with every size name and every expression leaf standing in as a
    distinct large prime, which tells which names each leaf of the bound layout is made of
    (the parser only multiplies them, for compact strides); each leaf is then the product of
    those names' polynomials, expanded by z3.  Exact for the polynomials of + - * and exact
    divisions that :func:`_not_polynomial` admits.

    Law: for every admitted assignment ``env``, ``extent_k.value(env)`` is the size of the
    layout's top-level mode ``k`` bound at ``env`` (and likewise each stride returned)."""
    mult = {k: max(1, int(m)) for k, m in (multiples or {}).items() if k in names}
    fixed = dict(fixed or {})
    tpl = LayoutTemplate.of(text)
    if tpl.error is not None:
        raise Unsupported(f"layout {text!r}: {tpl.error}")
    for _, e, _ in tpl.leaves:
        why = _not_polynomial(e, {**mult, **{k: v for k, v in fixed.items() if v}})
        if why:
            raise Unsupported(f"layout {text!r}: the size expression {e} {why}, so its value is no product "
                              "of the sizes in general")
    var: dict[str, Any] = {k: z3.Real(k) for k in names if k not in fixed}
    var.update({k: z3.RealVal(v) for k, v in fixed.items()})
    leaf = {name: _poly(e, var) for name, e, _ in tpl.leaves}
    atoms = sorted({*var, *leaf})
    marks = dict(zip(atoms, _primes(1 << 40, len(atoms)), strict=True))
    try:
        lay = parse_layout(tpl.rewritten, marks)
    except (ThreadmapError, ValueError, ArithmeticError) as e:
        raise Unsupported(f"layout {text!r}: {e}") from None
    if not isinstance(lay, Layout):
        raise Unsupported(f"layout {text!r}: a composed (swizzled) global layout has no top-level strides")

    def value(v: int) -> Any:
        """A bound leaf (a product of marks and a literal) as its polynomial."""
        f = _factor(v, marks)
        if f is None or abs(f.coef) >= 1 << 40:
            raise Unsupported(f"layout {text!r}: a leaf that is no product of its names")
        out: Any = z3.RealVal(f.coef)
        for name, k in f.powers:
            for _ in range(k):
                out = out * (leaf[name] if name in leaf else var[name])
        return out

    shp, std = layout_shape(lay), layout_stride(lay)
    shp = shp if isinstance(shp, tuple) else (shp,)
    std = std if isinstance(std, tuple) else (std,)
    ext = [_monomial(math.prod((value(int(v)) for v in flatten_to_tuple(s)), start=z3.RealVal(1))) for s in shp]
    if any(e is None for e in ext):
        raise Unsupported(f"layout {text!r}: extents are not monomials of the sizes")
    # strides stay whole monomials: the access encoding computes addresses modulo 2^n, where a
    # division does not commute; strides that are no monomials ((W+S-1)*K) leave them unknown
    strides = [_monomial(value(d)) if type(d) is int else None for d in std]
    whole = [d for d in strides if d is not None and d.den == 1]
    return ext, whole if len(whole) == len(std) else None  # type: ignore[return-value]


# ----------------------------------------------------------------------------- the size space


class _Tracked:
    """Interval operations that remember the widest intermediate result."""

    def __init__(self) -> None:
        self.lo, self.hi = 0, 0
        self.ops: dict[str, Any] = {k: self._wrap(f) for k, f in OPS.items()}

    def note(self, v: Any) -> None:
        if isinstance(v, Interval):
            self.lo, self.hi = min(self.lo, v.lo), max(self.hi, v.hi)
        elif isinstance(v, int) and not isinstance(v, bool):
            self.lo, self.hi = min(self.lo, v), max(self.hi, v)

    def _wrap(self, f: Any) -> Any:
        def g(*a: Any) -> Any:
            for x in a:  # operands: the constants of the expression are encoded too
                self.note(x)
            r = f(*a)
            self.note(r)
            return r
        return g


class SizeSpace:
    """The sizes of a spec as z3 bit-vectors with their constraints (see the module docstring)."""

    def __init__(self, loaded: LoadedSpec) -> None:
        spec = loaded.spec
        self.loaded = loaded
        self.names = list(spec.sizes)
        self.box: dict[str, tuple[int, int, int]] = {}
        for k, v in spec.sizes.items():
            self.box[k] = (v.min, v.max, v.multiple_of) if isinstance(v, SizeRange) else (v, v, 1)
        self.relations: list[Relation] = [parse_relation(t) for t in spec.assume]
        self.grid: list[Expr] = [parse_expr(g) for g in spec.grid] + [parse_expr(1)] * (3 - len(spec.grid))
        # the size expressions of the tensors' layouts (M*N) are values of the encoding too
        self.layout_terms: list[Expr] = [e for t in spec.tensors.values()
                                         for _, e, _ in LayoutTemplate.of(t.layout).leaves]
        self.bits = 64
        self.vars = {k: z3.BitVec(k, self.bits) for k in self.names}
        self._multiples: dict[str, int] | None = None

    def choose_bits(self, terms: Sequence[Expr | Relation | Monomial], slack: int = 0) -> None:
        """Pick the bit-width from interval bounds of every term (intermediates included, plus
        ``slack`` for the class terms' ``E + T - 1``); refuse intermediates that can be
        negative or need more than 64 bits."""
        t = _Tracked()
        env = {k: Interval(lo, hi) for k, (lo, hi, _) in self.box.items()}
        for x in [*terms, *self.layout_terms]:
            if isinstance(x, Monomial):
                t.note(x.value({k: _TrackedInterval(t, env[k]) for k in env}))
            elif isinstance(x, Relation):  # both sides; the comparison itself is a Boolean
                t.note(x.left.apply(env, t.ops))
                t.note(x.right.apply(env, t.ops))
            else:
                t.note(x.apply(env, t.ops))
        if t.lo < 0:
            raise Unsupported(f"an expression of the spec can be negative ({t.lo}) for sizes in range (bounded "
                              "on intervals); the proof encodes sizes as unsigned bit-vectors")
        t.hi = max([t.hi, *(hi for _, hi, _ in self.box.values())]) + slack  # the sizes themselves too
        need = t.hi.bit_length() + 1
        if need > 64:
            raise SpecError(f"{self.loaded.path}:1:1: sizes: the ranges make an intermediate value as large as "
                            f"{t.hi} (2^{t.hi.bit_length() - 1}), beyond the 64-bit encoding of the proofs; "
                            "narrow the ranges")
        self.bits = max(8, need)
        self.vars = {k: z3.BitVec(k, self.bits) for k in self.names}

    def sym_env(self) -> dict[str, Sym]:
        return {k: Sym(v) for k, v in self.vars.items()}

    def bv(self, x: Any, bits: int | None = None) -> z3.BitVecRef:
        """A value of the encoding (a ``Sym`` or a constant) as a bit-vector of ``bits``
        (default: the encoding's width), zero-extended."""
        e = x.e if isinstance(x, Sym) else z3.BitVecVal(int(x), self.bits)
        return z3.ZeroExt(bits - self.bits, e) if bits is not None and bits > self.bits else e

    def constraints(self) -> list[z3.BoolRef]:
        out = []
        for k, (lo, hi, m) in self.box.items():
            v = self.vars[k]
            out += [z3.UGE(v, lo), z3.ULE(v, hi)]
            if m > 1:
                out.append(z3.URem(v, m) == 0)
        env = self.sym_env()
        for r in self.relations:
            v = r.apply(env)
            out.append(v.e if isinstance(v, Sym) else z3.BoolVal(bool(v)))  # constants fold to a bool
        return out

    def multiples(self, timeout_ms: int = 5000) -> dict[str, int]:
        """Per ranged size, a step ``m`` of every admitted value: the gcd of its smallest values
        that its range and the assumptions about it alone admit (``K % 32 == 0``), kept when z3
        shows no admitted assignment breaks it, else the range's ``multiple_of``.

        Law: every assignment satisfying :meth:`constraints` has ``env[k] % multiples()[k] == 0``."""
        if self._multiples is not None:
            return self._multiples
        out: dict[str, int] = {}
        for k, (lo, hi, m) in self.box.items():
            if hi == lo:
                continue
            vals = _axis_values(self, k, 64)
            g = int(np.gcd.reduce(vals)) if vals.size else m
            if g > m and g % m == 0:
                s = z3.Solver()
                s.set("timeout", timeout_ms)
                s.add(*self.constraints(), z3.URem(self.vars[k], g) != 0)
                g = g if s.check() == z3.unsat else m
            out[k] = g if g % m == 0 else m
        self._multiples = out
        return out

    def check_satisfiable(self, timeout_ms: int) -> None:
        """Refuse (exit 2) a spec whose ranges and assumptions admit no sizes at all."""
        s = z3.Solver()
        s.set("timeout", timeout_ms)
        s.add(*self.constraints())
        r = s.check()
        if r == z3.unsat:
            raise SpecError(f"{self.loaded.where('assume') if self.relations else str(self.loaded.path) + ':1:1'}: "
                            f"assume: no sizes in the ranges satisfy "
                            f"{' and '.join(r.text for r in self.relations) or 'the ranges'}")


class _TrackedInterval(Interval):
    """An interval whose products are recorded (monomials multiply sizes)."""

    __slots__ = ("t",)

    def __init__(self, t: _Tracked, iv: Interval) -> None:
        super().__init__(iv.lo, iv.hi)
        self.t = t

    def __mul__(self, o: Any) -> Interval:
        r = _TrackedInterval(self.t, Interval(self.lo, self.hi) * o)
        self.t.note(r)
        return r

    __rmul__ = __mul__


# ----------------------------------------------------------------------------- classes


@dataclass(frozen=True)
class TiledMode:
    """Mode ``mode`` of a global side's tile: extent ``extent`` (a monomial), tile ``tile``,
    tile coordinate ``b_var`` (one of bx, by, bz) or the constant ``const``."""

    where: str
    extent: Monomial
    tile: int
    var: str | None
    const: int


class _Z3:
    """The class components' operations on z3 bit-vectors of the encoding's width."""

    def __init__(self, space: SizeSpace) -> None:
        self.space = space

    def value(self, x: Any) -> Sym:
        return Sym(self.space.bv(x))

    def const(self, v: int) -> Any:
        return z3.BitVecVal(v, self.space.bits)

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        return z3.If(c, a, b)

    def raw(self, x: Sym) -> Any:
        return x.e

    lt, le, ge, gt = staticmethod(z3.ULT), staticmethod(z3.ULE), staticmethod(z3.UGE), staticmethod(z3.UGT)


class _Numpy:
    """The same operations on int64 arrays of size assignments (the sizes are small there)."""

    def value(self, x: Any) -> Any:
        return np.asarray(x, dtype=np.int64)

    def const(self, v: int) -> Any:
        return np.int64(v)

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        return np.where(c, a, b)

    def raw(self, x: Any) -> Any:
        return x

    lt, le, ge, gt = staticmethod(np.less), staticmethod(np.less_equal), staticmethod(np.greater_equal), \
        staticmethod(np.greater)


def _components(space: SizeSpace, modes: Sequence[TiledMode], env: Mapping[str, Any],
                be: Any) -> list[tuple[str, Any, Any, frozenset[str]]]:
    """The class components over one backend (see :func:`class_terms`), each with the sizes
    it depends on."""
    grid = [be.value(g.apply(env)) for g in space.grid]
    by_var: dict[str, tuple[Monomial, int]] = {}
    for m in modes:
        if m.var is not None:
            # extents in proportion to their tiles (a sparse A's K/2 by 32, its B's K by 64) cut
            # their tiles at the same fraction: one coordinate's kinds decide both
            e, t = by_var.setdefault(m.var, (m.extent, m.tile))
            if (Fraction(e.coef, e.den * t), e.powers) != (Fraction(m.extent.coef, m.extent.den * m.tile),
                                                           m.extent.powers):
                raise Unsupported(f"{m.var} tiles extent {e} by {t} and extent {m.extent} by {m.tile} "
                                  f"({m.where}): a block's tile types would depend on both")
    out: list[tuple[str, Any, Any, frozenset[str]]] = []
    const = be.const
    for var, (ext, T) in by_var.items():
        E = be.value(ext.value(env))
        j = BLOCK_NAMES.index(var)
        g = grid[j]
        n = (E + (T - 1)) // T
        names = frozenset(k for k, _ in ext.powers)
        out.append((f"{ext} mod {T}", E % T, be.ge(be.raw(E), T), names))
        out.append((f"{var} blocks vs ceil_div({ext}, {T})",
                    be.ite(be.lt(be.raw(g), be.raw(n)), const(0),
                           be.ite(be.raw(g) == be.raw(n), const(1), const(2))), None,
                    names | space.grid[j].names()))
    for m in modes:
        if m.var is None:
            E = be.value(m.extent.value(env))
            # 0: the tile is outside; E - lo: cut inside it; T: it ends the tensor; T + 1: the
            # tensor goes on past it (elements no tile reaches)
            lo, hi = m.const * m.tile, m.const * m.tile + m.tile
            out.append((f"cut of {m.extent} in tile {m.const}",
                        be.ite(be.le(be.raw(E), lo), const(0),
                               be.ite(be.gt(be.raw(E), hi), const(m.tile + 1),
                                      be.ite(be.raw(E) == hi, const(m.tile), be.raw(E - lo)))), None,
                        frozenset(k for k, _ in m.extent.powers)))
    for j, name in enumerate(BLOCK_NAMES):
        if name not in by_var:
            out.append((f"blocks along {name} (1 or more)",
                        be.ite(be.ge(be.raw(grid[j]), 2), const(2), be.raw(grid[j])), None, space.grid[j].names()))
    return out


def class_terms(space: SizeSpace, modes: Sequence[TiledMode]) -> list[tuple[str, Sym, z3.BoolRef | None]]:
    """The class components as (name, term, preference).  A preference (``E_k >= T_k``: an
    interior tile along the mode) is not a component: a representative satisfies as many as
    its class allows (see :func:`enumerate_classes`).  Raises :class:`Unsupported` when one
    block coordinate tiles modes of different extents or tiles (the tile types of a block
    would then depend on more than the components)."""
    out: list[tuple[str, Sym, z3.BoolRef | None]] = []
    seen: set[str] = set()
    for name, term, pref, _ in _components(space, modes, space.sym_env(), _Z3(space)):
        t = term if isinstance(term, Sym) else Sym(term)
        key = str(z3.simplify(t.e))
        if key not in seen:  # the same term twice (two sides tiled alike) is one component
            seen.add(key)
            out.append((name, t, pref))
    return out


def class_values(space: SizeSpace, modes: Sequence[TiledMode], env: Mapping[str, Any], n: int
                 ) -> tuple[list[Any], list[Any], list[frozenset[str]], list[frozenset[str]]]:
    """The components of :func:`class_terms` (the same terms, in the same order) and the
    preferences, over numpy arrays of size assignments ``env``; then the sizes each component
    and each preference depends on."""
    keys: set[str] = set()
    vals, prefs, deps, pdeps = [], [], [], []
    zs = _components(space, modes, space.sym_env(), _Z3(space))
    ns = _components(space, modes, env, _Numpy())
    for (_, zt, _, names), (_, nt, npref, _) in zip(zs, ns, strict=True):
        key = str(z3.simplify(zt.e if isinstance(zt, Sym) else zt))
        if key in keys:
            continue
        keys.add(key)
        vals.append(np.broadcast_to(nt, (n,)))
        deps.append(names)
        if npref is not None:
            prefs.append(np.broadcast_to(npref, (n,)))
            pdeps.append(names)
    return vals, prefs, deps, pdeps


@dataclass(frozen=True)
class SizeClass:
    values: tuple[int, ...]        # the class components
    sizes: dict[str, int]          # its representative


def timed_check(s: z3.Solver, deadline: float | None) -> Any:
    """``s.check()`` limited to the time left before ``deadline`` (``time.perf_counter``);
    past it, ``unknown`` without asking."""
    if deadline is not None:
        left = deadline - time.perf_counter()
        if left <= 0:
            return z3.unknown
        s.set("timeout", max(1, int(left * 1000)))
    return s.check()


def first_model(s: z3.Solver, space: SizeSpace, extra: Sequence[z3.BoolRef],
                deadline: float | None = None, size_vars: Sequence[Any] | None = None,
                small: Sequence[Sequence[z3.BoolRef]] = ()) -> z3.ModelRef | None:
    """A model with ``extra``, smallest size bound first; None when there is none (one
    unbounded query answers that, without the bounded tiers).  ``size_vars``: the sizes as
    ``s`` holds them (default: ``space.vars``).  ``small``: tiers of constraints tried before
    the size bounds (few blocks: a representative whose grid is enumerated whole)."""
    vs = list(space.vars.values()) if size_vars is None else list(size_vars)

    def solve(bound: Sequence[z3.BoolRef]) -> z3.ModelRef | None:
        s.push()
        s.add(*extra, *bound)
        r = timed_check(s, deadline)
        m = s.model() if r == z3.sat else None
        s.pop()
        if r == z3.unknown:
            raise Unsupported(f"time limit reached, or the solver gave up ({s.reason_unknown() or 'no time left'})")
        return m

    if solve([]) is None:
        return None
    for bound in [*small, *([z3.ULE(v, b) for v in vs] if b is not None else [] for b in BOUNDS)]:
        m = solve(bound)
        if m is not None:
            return m
    return None  # unreachable: the last tier is unbounded


def enumerate_classes(space: SizeSpace, terms: Sequence[tuple[str, Sym, z3.BoolRef | None]],
                      timeout_ms: int, deadline: float | None = None) -> Iterator[SizeClass]:
    """Representatives covering every class reachable under the constraints, smallest sizes
    first.  A class's representative satisfies every preference when some member does (its
    tile types then include every member's); otherwise each reachable combination of
    preferences gets a representative.  Raises :class:`Unsupported` on a solver time-out
    and past :data:`MAX_CLASSES` representatives."""
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*space.constraints())
    prefs = [p for _, _, p in terms if p is not None]
    count = 0

    def rep(m: z3.ModelRef, vals: tuple[int, ...]) -> SizeClass:
        nonlocal count
        count += 1
        if count > MAX_CLASSES:
            raise Unsupported(f"more than {MAX_CLASSES} size classes")
        return SizeClass(vals, {k: m.eval(v, model_completion=True).as_long() for k, v in space.vars.items()})

    while True:
        m = first_model(s, space, [], deadline)
        if m is None:
            return
        vals = tuple(m.eval(t.e, model_completion=True).as_long() for _, t, _ in terms)
        same = [t.e == v for (_, t, _), v in zip(terms, vals, strict=True)]
        best = first_model(s, space, same + prefs, deadline) if prefs else m
        if best is not None:
            yield rep(best, vals)
        else:
            for bits in itertools.product((True, False), repeat=len(prefs)):
                sub = first_model(s, space, same + [p if b else z3.Not(p) for p, b in zip(prefs, bits, strict=True)],
                                  deadline)
                if sub is not None:
                    yield rep(sub, vals)
        if not terms:
            return
        s.add(z3.Not(z3.And(same)))  # the class is done: later rounds look for other classes


#: (blocks per grid entry, size bound) tried in turn by :func:`size_classes`'s solver queries
#: before :data:`BOUNDS`
SMALL_GRIDS: tuple[tuple[int, int], ...] = ((2, 1 << 10), (4, 1 << 10), (16, 1 << 16))
#: size assignments scanned at most by :func:`size_classes` before z3 completes the list
BOX_POINTS = 1 << 16
#: ... when they are each tiled size's values up to twice its tile (a few arrays of int64 per
#: point: tens of MB; every class is then read off without a solver query per class)
BOX_TILED_POINTS = 1 << 20


def _axis_values(space: SizeSpace, name: str, count: int, upto: int | None = None) -> np.ndarray:
    """Up to ``count`` smallest values of one ranged size (none above ``upto``): from its
    minimum in its steps, those that the assumptions about it alone (``K % 32 == 0``) admit."""
    lo, hi, m = space.box[name]
    hi = hi if upto is None else min(hi, upto)
    first = -(-lo // m) * m
    own = [r for r in space.relations if r.names() == {name}]
    out: list[np.ndarray] = []
    got, start, span = 0, first, max(1, count)
    while got < count and start <= hi:  # a sparse admission (K % 64 == 0, step 1) scans further
        a = np.arange(start, min(hi, start + (span - 1) * m) + 1, m, dtype=np.int64)
        ok = np.ones(a.size, dtype=bool)
        for r in own:
            ok &= np.asarray(r.apply({name: a}), dtype=bool)
        out.append(a[ok][:count - got])
        got += int(ok.sum())
        start = int(a[-1]) + m
        span *= 4
        if span > BOX_POINTS:
            break
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def _lead_size(space: SizeSpace, extent: Monomial) -> str | None:
    """The size that walks a tiled extent's residues in :func:`_box`: the extent itself when
    it is one size, else its ranged factor of power one with the widest range (``Q*P*N``:
    the others at their smallest values)."""
    free = [(space.box[k][1] - space.box[k][0], -i, k) for i, (k, a) in enumerate(extent.powers)
            if a == 1 and k in space.box and space.box[k][1] > space.box[k][0]]
    return max(free)[2] if free else None


def _box(space: SizeSpace, modes: Sequence[TiledMode] = (), only: frozenset[str] | None = None
         ) -> dict[str, np.ndarray]:
    """A grid of small size assignments: each ranged size from its minimum, in its steps (fixed
    sizes pinned).  The lead size of a tiled mode's extent (:func:`_lead_size`) gets the values
    up to twice its tile (every residue with an interior tile beside it: each class's smallest
    representative); where its range ends before that, the extent's other factors get up to 8
    values (``Q*P*N`` past ``N``'s range); the other sizes 4, 2 or 1 values: the most that fits
    :data:`BOX_TILED_POINTS`; else every size as many values as :data:`BOX_POINTS` allows.
    ``only``: the sizes that vary; the others take their smallest admitted value."""
    free = [k for k, (lo, hi, _) in space.box.items() if hi > lo and (only is None or k in only)]
    tiles: dict[str, int] = {}
    short: set[str] = set()  # the other factors of extents whose lead cannot reach twice the tile
    for md in modes:
        k = _lead_size(space, md.extent)
        if k is None:
            continue
        # the lead's steps to pass a tile of the extent: K/2 takes 2 per element, 32*M 1/32
        span = max(1, -(-md.tile * md.extent.den // max(1, abs(md.extent.coef))))
        tiles[k] = max(tiles.get(k, 0), span)
        if space.box[k][1] < space.box[k][0] + 2 * span:
            short |= {n for n, _ in md.extent.powers if n != k and n in free}
    lead = {k: _axis_values(space, k, BOX_POINTS, space.box[k][0] + 2 * tiles[k]) for k in free if k in tiles}
    axes: dict[str, np.ndarray] = {}
    for co, few in ((8, 4), (8, 2), (8, 1), (6, 1), (4, 1), (3, 1), (2, 1), (1, 1)):
        axes = {k: lead[k] if k in lead else _axis_values(space, k, co if k in short else few) for k in free}
        if int(np.prod([max(1, a.size) for a in axes.values()], dtype=np.float64)) <= BOX_TILED_POINTS:
            break
    else:
        per = int(BOX_POINTS ** (1 / max(1, len(free))))
        axes = {k: _axis_values(space, k, per) for k in free}
    for k in space.names:
        if k not in axes:
            least = _axis_values(space, k, 1) if space.box[k][1] > space.box[k][0] else np.zeros(0, dtype=np.int64)
            axes[k] = least[:1] if least.size else np.array([space.box[k][0]], dtype=np.int64)
    mesh = np.meshgrid(*[axes[k] for k in space.names], indexing="ij")
    return {k: a.reshape(-1) for k, a in zip(space.names, mesh, strict=True)}


Reps = dict[tuple[int, ...], dict[tuple[bool, ...], tuple[int, ...]]]


def _component_sizes(space: SizeSpace, modes: Sequence[TiledMode]) -> tuple[list[frozenset[str]],
                                                                          list[frozenset[str]]]:
    """The sizes each class component and each preference depends on (:func:`class_values`'
    order)."""
    env = {k: np.zeros(1, dtype=np.int64) + space.box[k][0] for k in space.names}
    _, _, deps, pdeps = class_values(space, modes, env, 1)
    return deps, pdeps


def _size_groups(space: SizeSpace, deps: Sequence[frozenset[str]]) -> list[frozenset[str]]:
    """The ranged sizes split into groups no class component (``deps``: the sizes of each) and
    no assumption joins (an implicit GEMM's ``Q*P*N``, ``C*S*R`` and ``K``): a class is then
    one class of each group."""
    free = [k for k, (lo, hi, _) in space.box.items() if hi > lo]
    parent = {k: k for k in free}

    def root(k: str) -> str:
        while parent[k] != k:
            k = parent[k]
        return k

    for names in [*deps, *(r.names() for r in space.relations)]:
        ks = [k for k in names if k in parent]
        for k in ks[1:]:
            parent[root(k)] = root(ks[0])
    out: dict[str, set[str]] = {}
    for k in free:
        out.setdefault(root(k), set()).add(k)
    return [frozenset(g) for g in out.values()]


def _scan(space: SizeSpace, modes: Sequence[TiledMode], only: frozenset[str] | None) -> Reps:
    """The classes of :func:`_box`'s small sizes (those of ``only`` varying): per class
    vector, its representatives (the smallest point of each preference pattern that no other
    pattern of the class includes)."""
    env = _box(space, modes, only)
    ok = np.ones(env[space.names[0]].size if space.names else 1, dtype=bool)  # no sizes: one point
    for r in space.relations:
        if only is None or r.names() <= only:
            ok &= np.asarray(r.apply(env), dtype=bool)
    env = {k: v[ok] for k, v in env.items()}
    n = int(ok.sum())
    vals, prefs, _, _ = class_values(space, modes, env, n)
    key = np.stack([*vals], axis=1) if vals else np.zeros((n, 0), dtype=np.int64)
    pat = np.stack(prefs, axis=1) if prefs else np.zeros((n, 0), dtype=bool)
    sizes = np.stack([env[k] for k in space.names], axis=1) if space.names else np.zeros((n, 0), dtype=np.int64)
    # smallest sizes first: the largest size, then the sizes in order
    order = np.lexsort((*[sizes[:, j] for j in reversed(range(sizes.shape[1]))],
                        sizes.max(axis=1) if sizes.shape[1] else np.zeros(n, dtype=np.int64)))
    # the first (smallest) point of each (class, preferences) pair, then per class the
    # points whose preferences no other's include
    both = np.concatenate([key, pat.astype(np.int64)], axis=1)[order]
    _, first = np.unique(both, axis=0, return_index=True)
    first = np.sort(first)
    reps: Reps = {}
    nk = key.shape[1]
    for row, i in zip(both[first].tolist(), order[first].tolist(), strict=True):
        c, p = tuple(row[:nk]), tuple(bool(x) for x in row[nk:])
        have = reps.setdefault(c, {})
        if any(all(a or not b for a, b in zip(q, p, strict=True)) for q in have):
            continue  # a representative with every preference this one has is known
        for q in [q for q in have if all(a or not b for a, b in zip(p, q, strict=True))]:
            del have[q]  # this one covers it
        have[p] = tuple(int(x) for x in sizes[i])
    return reps


def _combine(space: SizeSpace, deps: tuple[Sequence[frozenset[str]], Sequence[frozenset[str]]],
             groups: Sequence[frozenset[str]], parts: Sequence[Reps]) -> Reps:
    """The product of the groups' classes: each component and preference (``deps``: the sizes
    of each) is its group's (those of no ranged size are the same in every part), and the
    representative takes each group's sizes from that group's.  Maximal preference patterns of
    each group give the maximal patterns of the product."""
    cdeps, pdeps = deps
    owner = {k: i for i, g in enumerate(groups) for k in g}

    def group_of(names: frozenset[str]) -> int:
        return next((owner[k] for k in names if k in owner), 0)

    cg, pg = [group_of(d) for d in cdeps], [group_of(d) for d in pdeps]
    size_g = [owner.get(k, -1) for k in space.names]
    flat = [[(c, p, r) for c, h in part.items() for p, r in h.items()] for part in parts]
    total = 1
    for f in flat:
        total *= len(f)
    if total > MAX_CLASSES:
        raise Unsupported(f"more than {MAX_CLASSES} size classes")
    out: Reps = {}
    for combo in itertools.product(*flat):
        c = tuple(combo[g][0][i] for i, g in enumerate(cg))
        p = tuple(combo[g][1][i] for i, g in enumerate(pg))
        r = tuple(combo[g][2][j] if g >= 0 else combo[0][2][j] for j, g in enumerate(size_g))
        out.setdefault(c, {})[p] = r
    return out


def size_classes(space: SizeSpace, modes: Sequence[TiledMode], timeout_ms: int,
                 deadline: float | None = None) -> Iterator[SizeClass]:
    """Representatives covering every class reachable under the constraints, as
    :func:`enumerate_classes` defines them, in a canonical order (smallest sizes first) and
    found without a solver query per class: the classes of a grid of small sizes are read
    off with numpy, then z3 is asked once for a size assignment none of them covers (a
    member of a new class, or of a known class with more preferences); each one it finds is
    added, with :func:`enumerate_classes`'s choice of representative, until there is none.

    A representative covers the members of its class whose preferences it satisfies too;
    so every member's tile types are among some representative's (the classes' argument).
    The small sizes' classes come first, before the solver is asked (a property refuted
    there is refuted early, whatever the time limit)."""
    terms = class_terms(space, modes)
    deps = _component_sizes(space, modes)
    groups = _size_groups(space, deps[0])
    if len(groups) <= 1:
        reps = _scan(space, modes, None)
    else:  # independent groups of sizes: their classes combine as a product
        reps = _combine(space, deps, groups, [_scan(space, modes, g) for g in groups])
    found: list[tuple[tuple[int, ...], tuple[int, ...]]] = [(c, r) for c, h in reps.items() for r in h.values()]
    if len(found) > MAX_CLASSES:
        raise Unsupported(f"more than {MAX_CLASSES} size classes")
    found.sort(key=lambda cs: (max(cs[1], default=0), cs[1]))
    for c, rep in found:
        yield SizeClass(c, dict(zip(space.names, rep, strict=True)))
    # z3: a size assignment that no representative covers.  In a context of its own, so that
    # the models (representatives) do not depend on what the process asked z3 before
    ctx = z3.Context()
    s = z3.Solver(ctx=ctx)
    s.set("timeout", timeout_ms)
    s.add(*[c.translate(ctx) for c in space.constraints()])
    zterms = [t.e.translate(ctx) for _, t, _ in terms]
    zprefs = [p.translate(ctx) for _, _, p in terms if p is not None]
    zvars = [v.translate(ctx) for v in space.vars.values()]
    # few blocks first: z3's model within a size bound can have a grid too large to enumerate
    senv = space.sym_env()
    zgrid = [space.bv(g.apply(senv)).translate(ctx) for g in space.grid]
    small = [[*[z3.ULE(g, n) for g in zgrid], *[z3.ULE(v, b) for v in zvars]] for n, b in SMALL_GRIDS]

    def block(c: tuple[int, ...], p: tuple[bool, ...]) -> None:
        same = [t == v for t, v in zip(zterms, c, strict=True)]
        s.add(z3.Not(z3.And(*same, *[z3.Not(zp) for zp, b in zip(zprefs, p, strict=True) if not b])))

    for c, h in reps.items():
        for p in h:
            block(c, p)
    extra = 0
    while True:
        m = first_model(s, space, [], deadline, zvars, small)
        if m is None:
            break
        c = tuple(m.eval(t, model_completion=True).as_long() for t in zterms)
        same = [t == v for t, v in zip(zterms, c, strict=True)]
        best = first_model(s, space, same + zprefs, deadline, zvars, small) if zprefs else m
        subs = [best] if best is not None else [
            sub for bits in itertools.product((True, False), repeat=len(zprefs))
            if (sub := first_model(s, space, same + [p if b else z3.Not(p) for p, b in
                                                     zip(zprefs, bits, strict=True)], deadline, zvars, small))
            is not None]
        for sub in subs:
            rep = tuple(sub.eval(v, model_completion=True).as_long() for v in zvars)
            p = tuple(bool(z3.is_true(sub.eval(zp, model_completion=True))) for zp in zprefs)
            extra += 1
            if len(found) + extra > MAX_CLASSES:
                raise Unsupported(f"more than {MAX_CLASSES} size classes")
            yield SizeClass(c, dict(zip(space.names, rep, strict=True)))
            block(c, p)
        if not terms:
            break
