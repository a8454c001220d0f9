"""The safe expression grammar of spec files (sizes, grid, tile extents, tile coordinates).

Expressions are parsed by a hand-written tokenizer and recursive-descent parser (never
``eval``) into a tiny AST that can be evaluated over Python ints with range checks
(:meth:`Expr.eval`) or over any other integer-like backend (numpy arrays, z3 bit-vectors)
through :meth:`Expr.apply`.

Grammar (whitespace is ignored between tokens)::

    expr   := term (('+' | '-') term)*
    term   := factor (('*' | '/' | '//' | '%') factor)*
    factor := '-' factor | atom
    atom   := INT | NAME | FUNC '(' expr ',' expr ')' | '(' expr ')'
    INT    := [0-9]+            (ASCII digits, at most 19 of them)
    NAME   := [A-Za-z_][A-Za-z0-9_]*
    FUNC   := 'ceil_div' | 'min' | 'max'

Semantics, over integers:

* ``/`` and ``//`` are both *floor* division (Python's ``//``); ``%`` is the matching floor
  modulo, so ``a == (a // b) * b + a % b`` always holds.  For the non-negative values
  that sizes and coordinates take this is exactly C++/CuTe integer division; only
  negative operands differ from C's truncation (``-7 / 2`` is ``-4`` here).
* ``ceil_div(a, b)`` is ``(a + b - 1) / b`` and needs a positive ``b``.
* Division or modulo by zero is an error, as is an undefined name.
* One set of formulas (:data:`OPS`) serves every backend: checked Python ints
  (:meth:`Expr.eval`), numpy arrays, z3 bit-vectors (``Sym``) and :class:`Affine` forms
  (:meth:`Expr.apply`), so enumeration and proofs evaluate the same expressions.
* Every literal and every intermediate result must fit in a signed 64-bit integer:
  huge values are reported as errors, never computed (no unbounded big-int work).
* Bounds on the input: at most :data:`MAX_TEXT` characters, :data:`MAX_TOKENS` tokens and
  :data:`MAX_DEPTH` levels of nesting (parentheses, calls and unary minus together), so
  parsing and evaluation are linear and never recurse deeply.

Every error is a :class:`threadmap.errors.SpecError` whose message names the problem, the
column and the expression text.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from threadmap.errors import SpecError
from threadmap.layout.backend import Interval, maximum, minimum

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
MAX_TEXT = 1000
MAX_DEPTH = 32
MAX_DIGITS = 19
MAX_TOKENS = 256
#: function name -> arity
FUNCTIONS: dict[str, int] = {"ceil_div": 2, "min": 2, "max": 2}
#: the block-coordinate names that tile coordinates (``at``) may use
BLOCK_NAMES: tuple[str, str, str] = ("bx", "by", "bz")

_TOKEN = re.compile(r"(?P<int>[0-9]+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>//|[-+*/%(),])")
_SPACE = " \t\r\n"

#: a backend for :meth:`Expr.apply`: operator/function name -> implementation
Ops = Mapping[str, Callable[..., Any]]


def _ceil_div(a: Any, b: Any) -> Any:
    return (a + b - 1) // b


#: The one set of operator formulas, for every backend: Python ints, numpy integer arrays,
#: :class:`~threadmap.layout.Sym` bit-vectors, :class:`~threadmap.layout.backend.Interval` s and
#: :class:`Affine` forms all support these operators (``min``/``max`` are the backend's).  ``ceil_div`` is
#: ``(a + b - 1) / b``, defined for positive ``b`` (checked evaluation rejects others).
OPS: dict[str, Callable[..., Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a // b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "neg": lambda a: 0 - a,
    "ceil_div": _ceil_div,
    "min": minimum,
    "max": maximum,
}
#: kept for callers of the earlier name
PY_OPS = OPS


def _check_range(v: int, what: str, node: Expr) -> int:
    if not INT64_MIN <= v <= INT64_MAX:
        raise SpecError(f"value of {what} is out of the 64-bit range in {node.text!r} "
                        f"(at column {node.col}); sizes this large are not supported")
    return v


@dataclass(frozen=True)
class Expr(ABC):
    """Base of the expression AST.  ``col`` is the 1-based column of the node in ``text``."""

    col: int = field(default=1, compare=False, kw_only=True)
    text: str = field(default="", compare=False, repr=False, kw_only=True)

    @abstractmethod
    def names(self) -> frozenset[str]:
        """Every name the expression uses (function names excluded)."""
        ...

    @abstractmethod
    def _walk(self, env: Mapping[str, Any], ops: Ops, checked: bool) -> Any:
        ...

    def eval(self, env: Mapping[str, int]) -> int:
        """Evaluate over Python ints with :data:`OPS`; raises :class:`SpecError` for undefined
        names, division by zero, a non-positive ``ceil_div`` divisor and results outside the
        signed 64-bit range."""
        return int(self._walk(env, OPS, True))

    def apply(self, env: Mapping[str, Any], ops: Ops = OPS) -> Any:
        """Evaluate with a backend: names come from ``env`` (ints, numpy arrays, ``Sym`` or
        :class:`Affine` values), operators and functions from ``ops`` (default :data:`OPS`,
        the same formulas :meth:`eval` uses); no range checks."""
        return self._walk(env, ops, False)

    def is_const(self) -> bool:
        """True when the expression uses no names."""
        return not self.names()


@dataclass(frozen=True)
class Num(Expr):
    value: int = 0

    def names(self) -> frozenset[str]:
        return frozenset()

    def _walk(self, env: Mapping[str, Any], ops: Ops, checked: bool) -> Any:
        return self.value

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Name(Expr):
    name: str = ""

    def names(self) -> frozenset[str]:
        return frozenset({self.name})

    def _walk(self, env: Mapping[str, Any], ops: Ops, checked: bool) -> Any:
        if self.name not in env:
            raise SpecError(f"undefined name {self.name!r} at column {self.col} in {self.text!r}")
        v = env[self.name]
        if checked:
            if isinstance(v, bool) or not isinstance(v, int):
                raise SpecError(f"name {self.name!r} is bound to {v!r}, not an integer "
                                f"(in {self.text!r})")
            return _check_range(v, repr(self.name), self)
        return v

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Neg(Expr):
    operand: Expr = field(default_factory=Num)

    def names(self) -> frozenset[str]:
        return self.operand.names()

    def _walk(self, env: Mapping[str, Any], ops: Ops, checked: bool) -> Any:
        v = ops["neg"](self.operand._walk(env, ops, checked))
        return _check_range(v, "a negation", self) if checked else v

    def __str__(self) -> str:
        return f"-{_paren(self.operand)}"


@dataclass(frozen=True)
class BinOp(Expr):
    op: str = "+"
    left: Expr = field(default_factory=Num)
    right: Expr = field(default_factory=Num)

    def names(self) -> frozenset[str]:
        return self.left.names() | self.right.names()

    def _walk(self, env: Mapping[str, Any], ops: Ops, checked: bool) -> Any:
        a = self.left._walk(env, ops, checked)
        b = self.right._walk(env, ops, checked)
        if checked and self.op in ("/", "//", "%") and b == 0:
            what = "modulo" if self.op == "%" else "division"
            raise SpecError(f"{what} by zero at column {self.col} in {self.text!r}")
        v = ops[self.op](a, b)
        return _check_range(v, f"'{self}'", self) if checked else v

    def __str__(self) -> str:
        return f"{_paren(self.left)} {self.op} {_paren(self.right)}"


@dataclass(frozen=True)
class Call(Expr):
    func: str = "min"
    args: tuple[Expr, ...] = ()

    def names(self) -> frozenset[str]:
        out: frozenset[str] = frozenset()
        for a in self.args:
            out |= a.names()
        return out

    def _walk(self, env: Mapping[str, Any], ops: Ops, checked: bool) -> Any:
        vals = [a._walk(env, ops, checked) for a in self.args]
        if checked and self.func == "ceil_div" and vals[1] <= 0:
            raise SpecError(f"ceil_div needs a positive divisor, got {vals[1]} at column {self.col} "
                            f"in {self.text!r}")
        v = ops[self.func](*vals)
        return _check_range(v, f"'{self}'", self) if checked else v

    def __str__(self) -> str:
        return f"{self.func}({', '.join(str(a) for a in self.args)})"


def _paren(e: Expr) -> str:
    return f"({e})" if isinstance(e, BinOp) else str(e)


class _Parser:
    """Recursive descent over the token list; see the module docstring for the grammar."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks: list[tuple[str, str, int]] = []  # (kind, text, 1-based column)
        pos, n = 0, len(text)
        while pos < n:
            if text[pos] in _SPACE:
                pos += 1
                continue
            m = _TOKEN.match(text, pos)
            if m is None:
                raise SpecError(f"unexpected character {text[pos]!r} at column {pos + 1} "
                                f"in expression {text!r}")
            kind = m.lastgroup or ""
            self.toks.append((kind, m.group(kind), pos + 1))
            if len(self.toks) > MAX_TOKENS:
                raise SpecError(f"expression has more than {MAX_TOKENS} tokens: {text[:40]!r}...")
            pos = m.end()
        self.i = 0
        self.depth = 0

    def err(self, msg: str, col: int | None = None) -> SpecError:
        if col is None:
            col = self.toks[self.i][2] if self.i < len(self.toks) else len(self.text) + 1
        return SpecError(f"{msg} at column {col} in expression {self.text!r}")

    def peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def at(self, value: str) -> bool:
        t = self.peek()
        return t is not None and t[0] == "op" and t[1] == value

    def take(self, value: str) -> None:
        t = self.peek()
        if t is None:
            raise self.err(f"expected {value!r} but the expression ended")
        if t[1] != value:
            raise self.err(f"expected {value!r} but found {t[1]!r}")
        self.i += 1

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.err(f"expression nested deeper than {MAX_DEPTH} levels")

    def expr(self) -> Expr:
        left = self.term()
        while self.at("+") or self.at("-"):
            _, op, col = self.toks[self.i]
            self.i += 1
            left = BinOp(op=op, left=left, right=self.term(), col=col, text=self.text)
        return left

    def term(self) -> Expr:
        left = self.factor()
        while self.at("*") or self.at("/") or self.at("//") or self.at("%"):
            _, op, col = self.toks[self.i]
            self.i += 1
            left = BinOp(op=op, left=left, right=self.factor(), col=col, text=self.text)
        return left

    def factor(self) -> Expr:
        if self.at("-"):
            col = self.toks[self.i][2]
            self.i += 1
            self.enter()
            operand = self.factor()
            self.depth -= 1
            return Neg(operand=operand, col=col, text=self.text)
        return self.atom()

    def atom(self) -> Expr:
        t = self.peek()
        if t is None:
            raise self.err("expected a number, a name or '(' but the expression ended")
        kind, tok, col = t
        if kind == "int":
            if len(tok.lstrip("0")) > MAX_DIGITS:
                raise self.err(f"integer {tok[:12]}... has more than {MAX_DIGITS} digits")
            v = int(tok)
            if v > INT64_MAX:
                raise self.err(f"integer {tok} does not fit in 64 bits")
            self.i += 1
            return Num(value=v, col=col, text=self.text)
        if kind == "name":
            self.i += 1
            if tok in FUNCTIONS:
                if not self.at("("):
                    raise self.err(f"function {tok!r} needs arguments: {tok}(a, b)", col)
                self.take("(")
                self.enter()
                args = [self.expr()]
                while self.at(","):
                    self.i += 1
                    args.append(self.expr())
                self.take(")")
                self.depth -= 1
                if len(args) != FUNCTIONS[tok]:
                    raise self.err(f"{tok} takes {FUNCTIONS[tok]} arguments, got {len(args)}", col)
                return Call(func=tok, args=tuple(args), col=col, text=self.text)
            if self.at("("):
                raise self.err(f"unknown function {tok!r} (known: {', '.join(FUNCTIONS)})", col)
            return Name(name=tok, col=col, text=self.text)
        if tok == "(":
            self.i += 1
            self.enter()
            e = self.expr()
            self.take(")")
            self.depth -= 1
            return e
        raise self.err(f"expected a number, a name or '(' but found {tok!r}")


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Expr:
    if len(text) > MAX_TEXT:
        raise SpecError(f"expression longer than {MAX_TEXT} characters")
    p = _Parser(text)
    if not p.toks:
        raise SpecError("empty expression")
    e = p.expr()
    if p.i != len(p.toks):
        raise p.err(f"unexpected {p.toks[p.i][1]!r}")
    return e


def parse_expr(text: str | int) -> Expr:
    """Parse an expression (a string in the grammar above, or a plain int) into an AST.

    >>> parse_expr("ceil_div(M, 16) * 2").eval({"M": 33})
    6
    """
    if isinstance(text, bool) or not isinstance(text, int | str):
        raise SpecError(f"expected an integer or an expression string, got {type(text).__name__}")
    if isinstance(text, int):
        if not INT64_MIN <= text <= INT64_MAX:
            raise SpecError(f"integer {str(text)[:20]}... does not fit in 64 bits")
        return Num(value=text, text=str(text))
    return _parse_text(text)


def evaluate(text: str | int, env: Mapping[str, int]) -> int:
    """``parse_expr(text).eval(env)``: parse (cached) and evaluate with range checks."""
    return parse_expr(text).eval(env)


#: the comparisons of a relation, longest first (so ``<=`` is not read as ``<``)
RELATION_OPS: tuple[str, ...] = ("==", "!=", "<=", ">=", "<", ">")
_REL = re.compile(r"==|!=|<=|>=|<|>")
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b,
}


@dataclass(frozen=True)
class Relation:
    """``left OP right``, an assumption on the sizes (``N % 4 == 0``, ``M >= 2 * N``).

    Law: for every backend, ``holds`` over ints and ``apply`` over that backend agree:
    ``rel.apply(env) == rel.holds(env)`` for ints, and the z3 Boolean of ``rel.apply`` over
    ``Sym`` constants simplifies to ``rel.holds``."""

    op: str
    left: Expr
    right: Expr
    text: str

    def names(self) -> frozenset[str]:
        return self.left.names() | self.right.names()

    def holds(self, env: Mapping[str, int]) -> bool:
        """The relation over checked Python ints."""
        return bool(_COMPARE[self.op](self.left.eval(env), self.right.eval(env)))

    def apply(self, env: Mapping[str, Any], ops: Ops = OPS) -> Any:
        """The relation over a backend (numpy: a Boolean array; ``Sym``: a z3 Boolean)."""
        return _COMPARE[self.op](self.left.apply(env, ops), self.right.apply(env, ops))

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


def parse_relation(text: str) -> Relation:
    """Parse ``expr OP expr`` with exactly one comparison ``== != <= >= < >``.

    >>> parse_relation("N % 4 == 0").holds({"N": 8})
    True
    """
    if not isinstance(text, str):
        raise SpecError(f"expected a relation string such as 'N % 4 == 0', got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise SpecError(f"relation longer than {MAX_TEXT} characters")
    ops = list(_REL.finditer(text))
    if len(ops) != 1:
        raise SpecError(f"a relation compares two expressions with one of {' '.join(RELATION_OPS)} "
                        f"(found {len(ops)} comparisons) in {text!r}")
    m = ops[0]
    lhs, rhs = text[:m.start()], text[m.end():]
    try:
        left = parse_expr(lhs)
        right = parse_expr(rhs)
    except SpecError as e:
        raise SpecError(f"{e} (in the relation {text!r})") from None
    return Relation(op=m.group(), left=left, right=right, text=text)


class NotAffine(ValueError):
    """An expression is not an affine function of its variables (it divides, takes a
    modulo, a min/max or a product of two variables)."""


class Affine:
    """``const + sum_v coef[v] * v``: an integer affine form over named variables, the fourth
    backend of :meth:`Expr.apply` (with :data:`OPS`).  Used to reason about tile coordinates
    as functions of the block coordinates (``at: [2 * bz, by + 1]``) without enumerating blocks.

    Law: ``Affine.of(e, vars).value(point) == e.eval({**env, **point})`` for every point, when
    ``of`` succeeds; operations that leave the affine forms raise :class:`NotAffine`.
    """

    __slots__ = ("coef", "const")

    def __init__(self, coef: Mapping[str, int] | None = None, const: int = 0) -> None:
        self.coef = {k: int(v) for k, v in (coef or {}).items() if v}
        self.const = int(const)

    @staticmethod
    def var(name: str) -> Affine:
        return Affine({name: 1})

    @staticmethod
    def of(e: Expr, variables: Sequence[str], env: Mapping[str, int]) -> Affine:
        """The affine form of ``e`` in ``variables`` (other names from ``env``)."""
        full: dict[str, Any] = {**env, **{v: Affine.var(v) for v in variables}}
        return Affine.lift(e.apply(full, OPS))

    @staticmethod
    def lift(x: Any) -> Affine:
        if isinstance(x, Affine):
            return x
        if isinstance(x, bool) or not isinstance(x, int):
            raise NotAffine(f"not an integer: {x!r}")
        return Affine(None, x)

    def _const_of(self, o: Any) -> int | None:
        if isinstance(o, Affine):
            return o.const if not o.coef else None
        return int(o) if isinstance(o, int) and not isinstance(o, bool) else None

    def __add__(self, o: Any) -> Affine:
        o = Affine.lift(o)
        coef = dict(self.coef)
        for k, v in o.coef.items():
            coef[k] = coef.get(k, 0) + v
        return Affine(coef, self.const + o.const)

    __radd__ = __add__

    def __sub__(self, o: Any) -> Affine:
        return self + Affine.lift(o) * -1

    def __rsub__(self, o: Any) -> Affine:
        return Affine.lift(o) + self * -1

    def __mul__(self, o: Any) -> Affine:
        k = self._const_of(o)
        if k is None:
            c = self._const_of(self)
            if c is None:
                raise NotAffine("a product of two variables")
            return Affine.lift(o) * c
        return Affine({n: v * k for n, v in self.coef.items()}, self.const * k)

    __rmul__ = __mul__

    def _const_only(self, o: Any, what: str) -> tuple[int, int]:
        a, b = self._const_of(self), self._const_of(o)
        if a is None or b is None:
            raise NotAffine(f"{what} of a variable")
        return a, b

    def __floordiv__(self, o: Any) -> Affine:
        a, b = self._const_only(o, "a division")
        return Affine(None, a // b)

    def __rfloordiv__(self, o: Any) -> Affine:
        return Affine.lift(o).__floordiv__(self)

    def __mod__(self, o: Any) -> Affine:
        a, b = self._const_only(o, "a modulo")
        return Affine(None, a % b)

    def __rmod__(self, o: Any) -> Affine:
        return Affine.lift(o).__mod__(self)

    def __lt__(self, o: Any) -> bool:
        a, b = self._const_only(o, "a comparison")
        return a < b

    def __gt__(self, o: Any) -> bool:
        a, b = self._const_only(o, "a comparison")
        return a > b

    def value(self, point: Mapping[str, Any]) -> Any:
        """The form evaluated at ``point`` (ints or numpy arrays)."""
        acc: Any = self.const
        for k, v in self.coef.items():
            acc = acc + v * point[k]
        return acc

    def __repr__(self) -> str:
        terms = [f"{v}*{k}" for k, v in sorted(self.coef.items())]
        return " + ".join(terms + [str(self.const)])


__all__ = ["Affine", "BinOp", "Call", "Expr", "Interval", "Name", "Neg", "NotAffine", "Num", "OPS", "evaluate",
           "parse_expr"]
