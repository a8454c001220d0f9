"""Parse CuTe notation: int tuples ``(4,(2,3))``, layouts ``(4,(2,3)):(1,(4,8))`` and
composed layouts ``Sw<3,4,3> o (8,64):(64,1)`` / ``Sw<3,4,3> o 0 o (8,64):(64,1)``.

A small hand-written recursive-descent grammar (no ``eval``); static integers may carry
CuTe's ``_`` prefix (``_4``), basis strides are written ``1@0`` as CuTe prints them, and
named sizes (``M``) are substituted from ``env`` when given.

    layout   := composed | plain
    composed := swizzle 'o' [tuple 'o'] plain
    swizzle  := 'Sw<' int ',' int ',' int '>'
    plain    := tuple [':' tuple]
    tuple    := leaf | '(' tuple (',' tuple)* ')' | '()'
    leaf     := ['_'] ['-'] digits ('@' digits)* | name
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from threadmap.errors import LayoutError, ParseError, SwizzleError
from threadmap.layout.int_tuple import ScaledBasis
from threadmap.layout.layout import Layout

_TOKEN = re.compile(r"\s*(?:(?P<sw>Sw<)|(?P<num>_?-?[0-9]+)"
                    r"|(?P<name>[A-Za-z][A-Za-z0-9_]*)|(?P<p>[(),:<>@]))")

MAX_TEXT = 100_000
MAX_DEPTH = 64
MAX_DIGITS = 18  # keeps every value inside int64, as CuTe's integers are


class _Parser:
    def __init__(self, text: str, env: Mapping[str, int] | None) -> None:
        if not isinstance(text, str):
            raise ParseError(f"expected a string, got {type(text).__name__}")
        if len(text) > MAX_TEXT:
            raise ParseError(f"layout text longer than {MAX_TEXT} characters")
        self.text = text
        self.env = env or {}
        self.toks: list[tuple[str, str, int]] = []
        pos = 0
        n = len(text)
        while pos < n:
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ParseError(f"unexpected character {text[pos:].lstrip()[:1]!r} at column "
                                 f"{len(text[:pos]) + len(text[pos:]) - len(text[pos:].lstrip()) + 1} "
                                 f"in {text!r}")
            kind = m.lastgroup or ""
            self.toks.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0
        self.depth = 0

    def err(self, msg: str, at: int | None = None) -> ParseError:
        i = self.i if at is None else at
        col = self.toks[i][2] + 1 if i < len(self.toks) else len(self.text) + 1
        return ParseError(f"{msg} at column {col} in {self.text!r}")

    def peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        t = self.peek()
        if t is None:
            raise self.err(f"expected {value or kind} but the text ended")
        if (value is not None and t[1] != value) or (kind is not None and t[0] != kind):
            raise self.err(f"expected {value or kind!s} but found {t[1]!r}")
        self.i += 1
        return t[1]

    def at(self, value: str) -> bool:
        t = self.peek()
        return t is not None and t[1] == value

    def int_(self) -> int:
        t = self.peek()
        if t is None or t[0] != "num":
            raise self.err("expected an integer")
        digits = t[1].lstrip("_")
        if len(digits.lstrip("-")) > MAX_DIGITS:
            raise self.err(f"integer {digits[:12]}... has more than {MAX_DIGITS} digits")
        self.i += 1
        return int(digits)

    def leaf(self) -> Any:
        t = self.peek()
        if t is None:
            raise self.err("expected a number or '(' but the text ended")
        if t[0] == "num":
            v: Any = self.int_()
            if self.at("@"):
                path = []
                while self.at("@"):
                    self.take("@")
                    path.append(self.int_())
                v = ScaledBasis(v, tuple(reversed(path)))
            return v
        if t[0] == "name":
            self.i += 1
            if t[1] == "o":
                raise self.err("unexpected 'o'")
            if t[1] not in self.env:
                raise self.err(f"undefined name {t[1]!r}", self.i - 1)
            return int(self.env[t[1]])
        raise self.err(f"expected a number or '(' but found {t[1]!r}")

    def tuple_(self) -> Any:
        if self.at("("):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.err(f"nesting deeper than {MAX_DEPTH}")
            self.take("(")
            items = []
            if not self.at(")"):
                items.append(self.tuple_())
                while self.at(","):
                    self.take(",")
                    items.append(self.tuple_())
            self.take(")")
            self.depth -= 1
            return tuple(items)
        return self.leaf()

    def swizzle(self) -> Any:
        from threadmap.layout.swizzle import Swizzle

        self.take(kind="sw")
        b = self.int_()
        self.take(",")
        m = self.int_()
        self.take(",")
        s = self.int_()
        self.take(">")
        return Swizzle(b, m, s)

    def plain(self) -> Layout:
        shape = self.tuple_()
        stride = None
        if self.at(":"):
            self.take(":")
            stride = self.tuple_()
        return Layout(shape, stride)

    def layout(self) -> Any:
        t = self.peek()
        if t is not None and t[0] == "sw":
            from threadmap.layout.swizzle import ComposedLayout

            sw = self.swizzle()
            self.take("o")
            first = self.tuple_()
            if self.at("o"):
                self.take("o")
                if isinstance(first, tuple):
                    raise self.err("the offset of a composed layout must be an integer")
                return ComposedLayout(sw, first, self.plain())
            stride = None
            if self.at(":"):
                self.take(":")
                stride = self.tuple_()
            return ComposedLayout(sw, 0, Layout(first, stride))
        return self.plain()

    def done(self) -> None:
        if self.i != len(self.toks):
            raise self.err(f"unexpected {self.toks[self.i][1]!r}")


def _run(text: str, env: Mapping[str, int] | None, what: str) -> Any:
    p = _Parser(text, env)
    if not p.toks:
        raise ParseError(f"empty {what}")
    try:
        out = p.layout() if what == "layout" else p.tuple_()
        p.done()
    except (LayoutError, SwizzleError) as e:
        raise type(e)(f"{e} (in {text!r})") from None
    except RecursionError:
        raise ParseError(f"{what} nested too deeply: {text[:60]!r}") from None
    return out


def parse_layout(text: str, env: Mapping[str, int] | None = None) -> Any:
    """Parse CuTe notation into a :class:`Layout` (or ``ComposedLayout`` for ``Sw<...> o L``).

    A bare shape such as ``(4,8)`` gets CuTe's default (column-major) strides.
    Law: ``parse_layout(str(L)) == L`` for every layout ``L``.
    """
    return _run(text, env, "layout")


def parse_int_tuple(text: str, env: Mapping[str, int] | None = None) -> Any:
    """Parse an int tuple such as ``(4,(2,_3))`` or ``16``."""
    return _run(text, env, "int tuple")


parse = parse_layout
