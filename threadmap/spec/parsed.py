"""The parsed form of a validated spec: expression trees and layout templates, built once.

A spec's expressions (``threads``, ``grid``, ``tile``, ``at``) are parsed into
:class:`~threadmap.spec.expr.Expr` trees and its layout strings into
:class:`LayoutTemplate` s when the spec is loaded; the model binds them to each size
environment.  Nothing downstream parses spec text again.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from threadmap.errors import SpecError, ThreadmapError
from threadmap.layout import parse_layout
from threadmap.layout import shape as layout_shape
from threadmap.spec.expr import FUNCTIONS, OPS, Expr, Ops, parse_expr
from threadmap.spec.schema import Copy, Side, Spec

Path_ = tuple[Any, ...]

# Distinct stand-ins for size names while probing a layout's structure: large primes, so
# that a top-level extent equal to one of them is that name and nothing else.
_PROBE_VALUES = (1_000_003, 1_000_033, 1_000_037, 1_000_039, 1_000_081, 1_000_099, 1_000_117,
                 1_000_121, 1_000_133, 1_000_151, 1_000_159, 1_000_171, 1_000_183, 1_000_187)


class _Probe(Mapping[str, int]):
    """An environment that answers every name and records which ones the parser asked for."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str)

    def __getitem__(self, key: str) -> int:
        if key not in self.seen:
            self.seen[key] = _PROBE_VALUES[len(self.seen) % len(_PROBE_VALUES)] + 1000 * (
                len(self.seen) // len(_PROBE_VALUES))
        return self.seen[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.seen)

    def __len__(self) -> int:
        return len(self.seen)

    def __bool__(self) -> bool:  # parsers test ``env or {}``: an empty probe still answers
        return True


# Tokens of a layout text, for finding its size expressions (``M*N``, ``ceil_div(K, 8)``):
# a static ``_-1`` is one number; ``-`` elsewhere is an operator
_LTOKEN = re.compile(r"(?P<num>_-?[0-9]+|[0-9]+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>//|[-+*/%])"
                     r"|(?P<p>::|[(),:<>@{}])|(?P<space>\s+)|(?P<other>.)", re.DOTALL)
# where a leaf may start, and what ends one at its own nesting level
_LEAF_AFTER = {"(", ",", ":", "<"}
_LEAF_END = {",", ")", ":", "::", "<", ">", "@", "{", "}"}


def _placeholders(taken: set[str]) -> Iterator[str]:
    """Names for the expression leaves, shortest first (``_a`` .. ``_Z``, ``__a`` ..), never a
    name of the text: a placeholder no wider than its expression keeps every column."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    for width in itertools.count(1):
        for ch in letters:
            name = "_" * width + ch
            if name not in taken:
                yield name


def _expression_leaves(text: str) -> tuple[str, tuple[tuple[str, Expr, int], ...], str | None]:
    """``text`` with each size expression among its leaves replaced by a placeholder name
    padded to the expression's width, the (placeholder, expression, column) of each, and the
    first expression that does not parse (its message, located in ``text``).

    A leaf is an expression when it has an operator outside parentheses or is a call of
    ``ceil_div``/``min``/``max``; a bare ``-4`` stays the layout's own negative literal, and
    ``(M*N)`` stays a rank-1 tuple of the expression ``M*N``, as in CuTe notation."""
    toks = [(m.lastgroup or "", m.group(), m.start()) for m in _LTOKEN.finditer(text)]
    sig = [t for t in toks if t[0] != "space"]
    taken = {t[1] for t in sig if t[0] == "name"}
    names = _placeholders(taken)
    found: list[tuple[str, Expr, int, int]] = []  # (placeholder, expression, start, end)
    error: str | None = None
    i = 0
    while i < len(sig):
        starts = i == 0 or sig[i - 1][1] in _LEAF_AFTER or sig[i - 1][1] == "o"
        if not starts or sig[i][1] in _LEAF_END:
            i += 1
            continue
        depth, j, plain, top_op = 0, i, True, False
        while j < len(sig):
            kind, tok, _ = sig[j]
            if depth == 0 and (tok in _LEAF_END or (kind == "name" and tok == "o" and j > i)):
                break
            if tok == "(":
                depth += 1
            elif tok == ")":
                depth -= 1
            elif kind == "op" and depth == 0:
                top_op = True
            elif kind == "other" or (kind == "p" and tok != ","):
                plain = False
            j += 1
        call = sig[i][1] in FUNCTIONS and i + 1 < j and sig[i + 1][1] == "("
        literal = j - i == 2 and sig[i][1] == "-" and sig[i + 1][0] == "num"
        if plain and (top_op or call) and not literal:
            start = sig[i][2]
            end = sig[j - 1][2] + len(sig[j - 1][1])
            try:
                e = parse_expr(text[start:end])
            except SpecError as ex:
                error = error or f"{ex} (the size expression at column {start + 1} of the layout {text!r})"
            else:
                found.append((next(names), e, start, end))
            i = j
            continue
        i += 1
    out, last = [], 0
    for name, _, start, end in found:
        out += [text[last:start], name.ljust(end - start)]
        last = end
    out.append(text[last:])
    return "".join(out), tuple((n, e, start + 1) for n, e, start, _ in found), error


@dataclass(frozen=True)
class LayoutTemplate:
    """A layout string of the spec: the size ``names`` it uses, which top-level shape modes
    are exactly one size name (``mode_names``, e.g. ``{0: "M", 1: "N"}`` for
    ``(M,N):(N,1)``), and :meth:`bind` to a size environment.

    Shape and stride leaves may be size expressions in the grammar of
    :mod:`threadmap.spec.expr` (``(M,N,L):(N,1,M*N)``): each is parsed once here
    (``leaves``: placeholder name, expression, column) and evaluated when sizes are bound."""

    text: str
    names: tuple[str, ...]   # in order of first use
    mode_names: dict[int, str] = field(default_factory=dict)
    #: the text with each expression leaf replaced by its placeholder (same columns)
    rewritten: str = ""
    leaves: tuple[tuple[str, Expr, int], ...] = ()
    #: why an expression leaf does not parse (raised by :meth:`bind`)
    error: str | None = None

    @staticmethod
    def of(text: str) -> LayoutTemplate:
        return _template(text)

    def leaf_values(self, env: Mapping[str, Any], ops: Ops | None = None) -> dict[str, Any]:
        """Placeholder -> value of its expression: checked Python ints by default, or any
        backend of :meth:`Expr.apply` (numpy arrays, ``Sym``, ``Interval``, ``Affine``)."""
        if self.error is not None:
            raise SpecError(self.error)
        if ops is None:
            out: dict[str, Any] = {}
            for name, e, col in self.leaves:
                try:
                    out[name] = e.eval(env)
                except SpecError as ex:
                    raise SpecError(f"{ex} (the size expression at column {col} of the layout "
                                    f"{self.text!r})") from None
            return out
        return {name: e.apply(env, ops) for name, e, _ in self.leaves}

    def bind(self, env: Mapping[str, int], *, checked: bool = True) -> Any:
        """The layout with the sizes of ``env`` (a Layout or ComposedLayout).  ``checked``
        evaluates the expression leaves within the signed 64-bit range (spec semantics);
        ``checked=False`` on unbounded Python ints (probes with large stand-in sizes)."""
        if not self.leaves and self.error is None:
            return parse_layout(self.text, env)
        vals = self.leaf_values(env) if checked else self.leaf_values(env, OPS)
        try:
            return parse_layout(self.rewritten, {**env, **vals})
        except ThreadmapError as ex:  # say it in the words of the text as written
            raise type(ex)(str(ex).replace(repr(self.rewritten), repr(self.text))) from None


@lru_cache(maxsize=4096)
def _template(text: str) -> LayoutTemplate:
    rewritten, leaves, error = _expression_leaves(text) if isinstance(text, str) else (text, (), None)
    placeholders = {name for name, _, _ in leaves}
    probe = _Probe()
    modes: dict[int, str] = {}
    if error is None:
        try:
            shp = layout_shape(parse_layout(rewritten, probe))
            by_value = {v: k for k, v in probe.seen.items() if k not in placeholders}
            for i, s in enumerate(shp if isinstance(shp, tuple) else (shp,)):
                if isinstance(s, int) and s in by_value:
                    modes[i] = by_value[s]
        except (ValueError, ArithmeticError, RecursionError):
            pass  # structure unknown: the environment-bound parse reports the problem
    used = set(probe.seen) - placeholders
    for _, e, _ in leaves:
        used |= e.names()
    order = [m.group() for m in _LTOKEN.finditer(text) if m.lastgroup == "name"] if isinstance(text, str) else []
    names = tuple(dict.fromkeys(n for n in order if n in used))
    return LayoutTemplate(text, names, modes, rewritten, leaves, error)


def bind_layout(text: str, env: Mapping[str, int], *, checked: bool = True) -> Any:
    """A layout string of a spec (size expressions allowed) bound to ``env``: the one way
    spec layouts are read, for the model, the semantic checks and the proofs."""
    return _template(text).bind(env, checked=checked)


@dataclass(frozen=True)
class ParsedSide:
    tile: tuple[Expr, ...] | None
    at: tuple[Expr, ...] | None
    layouts: dict[str, LayoutTemplate]   # "threads", "tiled_copy.threads", ... -> template


@dataclass(frozen=True)
class ParsedSpec:
    threads: Expr
    grid: tuple[Expr, ...]
    tensors: dict[str, LayoutTemplate]
    sides: dict[tuple[int, str], ParsedSide]

    @staticmethod
    def of(spec: Spec) -> ParsedSpec:
        sides: dict[tuple[int, str], ParsedSide] = {}
        for i, st in enumerate(spec.stages):
            if not isinstance(st, Copy):
                continue
            for which in ("src", "dst"):
                side: Side = getattr(st.copy_, which)
                lays: dict[str, LayoutTemplate] = {}
                if side.threads is not None:
                    lays["threads"] = LayoutTemplate.of(side.threads)
                if side.tiled_copy is not None:
                    for key in ("threads", "values", "layout_tv"):
                        text = getattr(side.tiled_copy, key)
                        if text is not None:
                            lays[f"tiled_copy.{key}"] = LayoutTemplate.of(text)
                if side.mma is not None:
                    lays["mma.atom_layout"] = LayoutTemplate.of(side.mma.atom_layout)
                sides[(i, which)] = ParsedSide(
                    tuple(parse_expr(x) for x in side.tile) if side.tile is not None else None,
                    tuple(parse_expr(x) for x in side.at) if side.at is not None else None, lays)
        return ParsedSpec(parse_expr(spec.threads), tuple(parse_expr(g) for g in spec.grid),
                          {n: LayoutTemplate.of(t.layout) for n, t in spec.tensors.items()}, sides)
