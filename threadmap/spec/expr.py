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
* ``ceil_div(a, b)`` is ``-(-a // b)`` (``(a + b - 1) / b`` for positive ``b``).
* Division or modulo by zero is an error, as is an undefined name.
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from threadmap.errors import SpecError

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


def _floordiv(a: Any, b: Any) -> Any:
    return a // b


#: Python-int (or numpy-array) backend for :meth:`Expr.apply`; no range checks.
PY_OPS: dict[str, Callable[..., Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _floordiv,
    "//": _floordiv,
    "%": lambda a, b: a % b,
    "neg": lambda a: -a,
    "ceil_div": lambda a, b: -((-a) // b),
    "min": lambda a, b: min(a, b),
    "max": lambda a, b: max(a, b),
}


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
    def eval(self, env: Mapping[str, int]) -> int:
        """Evaluate over Python ints; raises :class:`SpecError` for undefined names, division by
        zero and results outside the signed 64-bit range."""
        ...

    @abstractmethod
    def apply(self, env: Mapping[str, Any], ops: Ops = PY_OPS) -> Any:
        """Evaluate with a backend: names come from ``env`` (any values), operators and
        functions from ``ops`` (keys ``+ - * / // % neg ceil_div min max``).  Used to build
        numpy or z3 expressions from the same AST; no range checks."""
        ...

    def is_const(self) -> bool:
        """True when the expression uses no names."""
        return not self.names()


@dataclass(frozen=True)
class Num(Expr):
    value: int = 0

    def names(self) -> frozenset[str]:
        return frozenset()

    def eval(self, env: Mapping[str, int]) -> int:
        return self.value

    def apply(self, env: Mapping[str, Any], ops: Ops = PY_OPS) -> Any:
        return self.value

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Name(Expr):
    name: str = ""

    def names(self) -> frozenset[str]:
        return frozenset({self.name})

    def eval(self, env: Mapping[str, int]) -> int:
        if self.name not in env:
            raise SpecError(f"undefined name {self.name!r} at column {self.col} in {self.text!r}")
        v = env[self.name]
        if isinstance(v, bool) or not isinstance(v, int):
            raise SpecError(f"name {self.name!r} is bound to {v!r}, not an integer "
                            f"(in {self.text!r})")
        return _check_range(v, repr(self.name), self)

    def apply(self, env: Mapping[str, Any], ops: Ops = PY_OPS) -> Any:
        if self.name not in env:
            raise SpecError(f"undefined name {self.name!r} at column {self.col} in {self.text!r}")
        return env[self.name]

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Neg(Expr):
    operand: Expr = field(default_factory=Num)

    def names(self) -> frozenset[str]:
        return self.operand.names()

    def eval(self, env: Mapping[str, int]) -> int:
        return _check_range(-self.operand.eval(env), "a negation", self)

    def apply(self, env: Mapping[str, Any], ops: Ops = PY_OPS) -> Any:
        return ops["neg"](self.operand.apply(env, ops))

    def __str__(self) -> str:
        return f"-{_paren(self.operand)}"


@dataclass(frozen=True)
class BinOp(Expr):
    op: str = "+"
    left: Expr = field(default_factory=Num)
    right: Expr = field(default_factory=Num)

    def names(self) -> frozenset[str]:
        return self.left.names() | self.right.names()

    def eval(self, env: Mapping[str, int]) -> int:
        a = self.left.eval(env)
        b = self.right.eval(env)
        if self.op in ("/", "//", "%") and b == 0:
            what = "modulo" if self.op == "%" else "division"
            raise SpecError(f"{what} by zero at column {self.col} in {self.text!r}")
        return _check_range(PY_OPS[self.op](a, b), f"'{self}'", self)

    def apply(self, env: Mapping[str, Any], ops: Ops = PY_OPS) -> Any:
        return ops[self.op](self.left.apply(env, ops), self.right.apply(env, ops))

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

    def eval(self, env: Mapping[str, int]) -> int:
        vals = [a.eval(env) for a in self.args]
        if self.func == "ceil_div" and vals[1] == 0:
            raise SpecError(f"ceil_div by zero at column {self.col} in {self.text!r}")
        return _check_range(PY_OPS[self.func](*vals), f"'{self}'", self)

    def apply(self, env: Mapping[str, Any], ops: Ops = PY_OPS) -> Any:
        return ops[self.func](*(a.apply(env, ops) for a in self.args))

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
