"""Parse CuTe notation and the C++ spellings a user pastes into layouts, int tuples, swizzles
and composed layouts.  A hand-written recursive-descent parser (no ``eval``).

Accepted forms (each also with ``cute::`` qualifiers and any spacing)::

    (4,(2,3)):(1,(4,8))   (_4,_8):(_8,_1)   (4,8)   16   (4,8):(1@0,1@1)
    Sw<3,4,3> o (8,64):(64,1)      Swizzle<3,4,3>{} o _0 o (8,64):(64,1)
    composition(Swizzle<3,4,3>{}, (8,64):(64,1))     composition(Sw<3,4,3>, 0, (8,64):(64,1))
    make_layout(make_shape(8,64), make_stride(64,1))  make_layout(make_shape(8,64), GenRowMajor{})
    Layout<Shape<_8,_64>, Stride<_64,_1>>{}           Int<8>{}
    tile_to_shape(atom, make_shape(64,64)[, order])
    GMMA::Layout_K_SW128_Atom<half_t>{}              (SM90::GMMA:: atoms: Sw o smem_ptr[Nb] o L)

Grammar (``{}`` after a type name is optional; ``NAME`` is an identifier, ``cute::`` dropped)::

    expr     := operand ('o' operand)*                  right-associative: A o [O o] B
    operand  := swizzle | typed | gmma | call | tag | tuple [':' tuple] | '_'
    gmma     := ['SM90::'] ['GMMA::'] 'Layout_' ('MN'|'K') '_' ('INTER'|'SW32'|'SW64'|'SW128') '_Atom'
                ('<' NAME ('::' NAME)* '>' | '_Bits') ['{' '}']
    swizzle  := ('Sw' | 'Swizzle') '<' int ',' int ',' int '>' ['{' '}']
    typed    := 'Layout' '<' type [',' type] '>' ['{' '}']  |  'Int' '<' int '>' ['{' '}']
    type     := ('Shape' | 'Stride' | 'Coord' | 'Tile' | 'tuple') '<' type (',' type)* '>'
              | 'Int' '<' int '>' | '_' digits
    call     := NAME '(' [expr (',' expr)*] ')'          NAME from the function table
    tag      := ('GenRowMajor' | 'LayoutRight' | 'GenColMajor' | 'LayoutLeft') ['{' '}']
    tuple    := leaf | '(' [tuple (',' tuple)*] ')'
    leaf     := ['_'] ['-'] digits ['{' '}'] ('@' digits)* | 'Int' '<' int '>' ['{' '}'] | name

Integers: ``_4`` and ``Int<4>{}`` are static; a bare ``4`` is static too unless
``dynamic=True``, which reads it as a :class:`~threadmap.layout.integral_constant.Dyn`
(the way CuTe prints a dynamic ``int``).  Named sizes (``M``) come from ``env``.  ``A o B``
with ``A`` a swizzle or layout is ``ComposedLayout(A, 0, B)``; ``A o O o B`` has offset ``O``.

Limits: text of at most :data:`MAX_TEXT` characters, nesting of at most :data:`MAX_DEPTH`
levels, integers of at most 18 digits; a text layout's extents are positive (construct a
:class:`~threadmap.layout.layout.Layout` directly for a zero extent).  Every failure is a
:class:`~threadmap.errors.ParseError` (syntax) or the LayoutError/SwizzleError of the
object the text describes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from threadmap.errors import LayoutError, ParseError, SwizzleError, ThreadmapError
from threadmap.layout import layout as L
from threadmap.layout.arithmetic_tuple import ScaledBasis
from threadmap.layout.dispatch import LayoutLike
from threadmap.layout.int_tuple import flatten_to_tuple, is_int
from threadmap.layout.integral_constant import Dyn
from threadmap.layout.layout import Layout
from threadmap.layout.layout_composed import ComposedLayout, composition3
from threadmap.layout.swizzle import Swizzle
from threadmap.layout.underscore import Underscore, _

_TOKEN = re.compile(r"\s*(?:(?P<num>_?-?[0-9]+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                    r"|(?P<p>::|[(),:<>@{}])|(?P<end>$))")

#: characters of a long text quoted either side of an error's column
EXCERPT = 60


def _excerpt(text: str, at: int) -> str:
    """``text`` quoted for a message; a long one cut to the characters around ``at`` (a
    100,000-character text must not make a 100,000-character message)."""
    if len(text) <= 4 * EXCERPT:
        return repr(text)
    lo, hi = max(0, at - EXCERPT), at + EXCERPT
    return ("..." if lo else "") + repr(text[lo:hi]) + ("..." if hi < len(text) else "")


#: ``GMMA::Layout_{MN,K}_{INTER,SW32,SW64,SW128}_Atom[_Bits]`` (cute/atom/mma_traits_sm90_gmma.hpp)
_GMMA_ATOM = re.compile(r"Layout_(MN|K)_(INTER|SW32|SW64|SW128)_Atom(_Bits)?")

MAX_TEXT = 100_000
MAX_DEPTH = 64
MAX_DIGITS = 18  # keeps every value inside int64, as CuTe's integers are

_TAGS = {"GenRowMajor": L.LayoutRight, "LayoutRight": L.LayoutRight,
         "GenColMajor": L.LayoutLeft, "LayoutLeft": L.LayoutLeft}
_TUPLE_TYPES = ("Shape", "Stride", "Coord", "Tile", "Step", "tuple")


def _tuple_of(*args: Any) -> Any:
    return tuple(args)


def _make_layout(*args: Any) -> Any:
    if len(args) == 2 and isinstance(args[1], L.Major):
        return Layout(_as_tuple(args[0], "make_layout"), args[1])
    if args and all(isinstance(a, (Layout, LayoutLike)) for a in args):
        return L.make_layout(*args)
    if len(args) in (1, 2):
        return Layout(*[_as_tuple(a, "make_layout") for a in args])
    raise LayoutError("make_layout takes (shape[, stride|GenRowMajor{}]) or layouts")


def _composition(*args: Any) -> Any:
    if len(args) == 3:
        return composition3(args[0], args[1], shape_as_layout(args[2]))
    return L.composition(shape_as_layout(args[0]), args[1])


def _tile_to_shape(atom: Any, shape: Any, order: Any = L.LayoutLeft) -> Any:
    return L.tile_to_shape(shape_as_layout(atom), shape, order)


def _as_tuple(x: Any, what: str) -> Any:
    if isinstance(x, (Layout, LayoutLike, Swizzle)):
        raise LayoutError(f"{what}: expected an int tuple, got {x}")
    return x


def shape_as_layout(x: Any) -> Any:
    """A bare int tuple where a layout is expected is a default (column-major) layout."""
    if isinstance(x, (tuple, int)) and not isinstance(x, bool):
        return Layout(x)
    return x


#: functions a layout text may call (constructors); the calculator adds the algebra
CONSTRUCTORS: dict[str, tuple[Callable[..., Any], int, int]] = {
    "make_shape": (_tuple_of, 0, 64), "make_stride": (_tuple_of, 0, 64),
    "make_tile": (_tuple_of, 0, 64), "make_coord": (_tuple_of, 0, 64),
    "make_step": (_tuple_of, 0, 64), "make_tuple": (_tuple_of, 0, 64),
    "make_layout": (_make_layout, 1, 64),
    "composition": (_composition, 2, 3),
    "make_composed_layout": (lambda a, o, b: ComposedLayout(a, o, shape_as_layout(b)), 3, 3),
    "tile_to_shape": (_tile_to_shape, 2, 3),
}


class _Parser:
    def __init__(self, text: str, env: Mapping[str, int] | None, dynamic: bool,
                 functions: Mapping[str, tuple[Callable[..., Any], int, int]]) -> None:
        if not isinstance(text, str):
            raise ParseError(f"expected a string, got {type(text).__name__}")
        if len(text) > MAX_TEXT:
            raise ParseError(f"layout text longer than {MAX_TEXT} characters")
        if env is not None and not isinstance(env, Mapping):
            raise ParseError(f"env must be a mapping of names to integers, got {env!r}")
        self.text = text
        self.env = env or {}
        self.dynamic = dynamic
        self.functions = functions
        self.toks: list[tuple[str, str, int]] = []
        pos = 0
        n = len(text)
        while True:  # one regex match per token: linear in the text
            m = _TOKEN.match(text, pos)
            if m is None:
                col = pos + len(text[pos:]) - len(text[pos:].lstrip()) + 1
                raise ParseError(f"unexpected character {text[col - 1]!r} at column {col} "
                                 f"in {text!r}")
            kind = m.lastgroup or ""
            if kind == "end":
                break
            val = m.group(kind)
            if kind == "name" and val == "cute" and text.startswith("::", m.end()):
                pos = m.end() + 2  # drop the cute:: qualifier
                continue
            self.toks.append((kind, val, m.start(kind)))
            pos = m.end()
            if pos >= n:
                break
        self.i = 0
        self.depth = 0

    # -- token helpers ------------------------------------------------------------------
    def err(self, msg: str, at: int | None = None) -> ParseError:
        i = self.i if at is None else at
        col = self.toks[i][2] + 1 if i < len(self.toks) else len(self.text) + 1
        return ParseError(f"{msg} at column {col} in {_excerpt(self.text, col - 1)}")

    def peek(self, k: int = 0) -> tuple[str, str, int] | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        t = self.peek()
        if t is None:
            raise self.err(f"expected {value or kind} but the text ended")
        if (value is not None and t[1] != value) or (kind is not None and t[0] != kind):
            raise self.err(f"expected {value or kind!s} but found {t[1]!r}")
        self.i += 1
        return t[1]

    def at(self, value: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t[1] == value and t[0] != "num"

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.err(f"nesting deeper than {MAX_DEPTH}")

    def opt_braces(self) -> None:
        if self.at("{"):
            self.take("{")
            self.take("}")

    # -- numbers ------------------------------------------------------------------------
    def int_(self, static: bool = True) -> int:
        t = self.peek()
        if t is None or t[0] != "num":
            raise self.err("expected an integer")
        text = t[1]
        digits = text.lstrip("_")
        if len(digits.lstrip("-")) > MAX_DIGITS:
            raise self.err(f"integer {digits[:12]}... has more than {MAX_DIGITS} digits")
        self.i += 1
        v = int(digits)
        if not static and self.dynamic and not text.startswith("_"):
            return Dyn(v)
        return v

    def template_int(self) -> int:
        """``Int<N>`` (the ``Int`` already taken)."""
        self.take("<")
        v = self.int_()
        self.take(">")
        return v

    def leaf(self) -> Any:
        t = self.peek()
        if t is None:
            raise self.err("expected a number or '(' but the text ended")
        if t[0] == "num":
            v: Any = self.int_(static=False)
            if t[1].startswith("_"):
                self.opt_braces()  # _8{} is the value of the type _8
            if self.at("@"):
                path = []
                while self.at("@"):
                    self.take("@")
                    path.append(self.int_())
                v = ScaledBasis(v, tuple(reversed(path)))
            return v
        if t[0] == "name":
            if t[1] in ("Int", "C") and self.at("<", 1):
                self.i += 1
                v = self.template_int()
                self.opt_braces()
                return v
            if t[1] in self.env:
                self.i += 1
                v = self.env[t[1]]
                if isinstance(v, bool) or not isinstance(v, int):
                    raise self.err(f"{t[1]!r} is not an integer")
                return int(v)
            if t[1] == "o":
                raise self.err("unexpected 'o'")
            raise self.err(f"undefined name {t[1]!r}")
        raise self.err(f"expected a number or '(' but found {t[1]!r}")

    def tuple_(self) -> Any:
        if self.at("("):
            self.enter()
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

    # -- C++ types ----------------------------------------------------------------------
    def type_(self) -> Any:
        t = self.peek()
        if t is None:
            raise self.err("expected a type but the text ended")
        if t[0] == "num":
            if not t[1].startswith("_"):
                raise self.err("a template argument must be a static integer (_N or Int<N>)")
            return self.int_()
        name = self.take(kind="name")
        if name in ("Int", "C"):
            return self.template_int()
        if name in _TUPLE_TYPES:
            self.enter()
            self.take("<")
            items = [self.type_()]
            while self.at(","):
                self.take(",")
                items.append(self.type_())
            self.take(">")
            self.depth -= 1
            return tuple(items)
        raise self.err(f"unknown type {name!r}", self.i - 1)

    def swizzle(self) -> Swizzle:
        self.take(kind="name")
        self.take("<")
        b = self.int_()
        self.take(",")
        m = self.int_()
        self.take(",")
        s = self.int_()
        self.take(">")
        self.opt_braces()
        return Swizzle(b, m, s)

    # -- expressions --------------------------------------------------------------------
    def operand(self) -> Any:
        t = self.peek()
        if t is None:
            raise self.err("expected a layout but the text ended")
        if t[0] == "name":
            start = self.i
            for q in ("SM90", "GMMA"):  # [SM90::][GMMA::] qualifiers of the GMMA layout atoms, as C++ spells them
                if self.at(q) and self.at("::", 1):
                    self.i += 2
            t = self.peek()
            if self.i != start and (t is None or t[0] != "name" or not _GMMA_ATOM.fullmatch(t[1])):
                raise self.err("expected a GMMA layout atom (Layout_{MN,K}_{INTER,SW32,SW64,SW128}_Atom) after "
                               "the SM90::GMMA:: qualifier")
            assert t is not None
            name = t[1]
            if _GMMA_ATOM.fullmatch(name) and (self.at("<", 1) or name.endswith("_Bits")):
                return self.gmma_atom()
            if name in ("Sw", "Swizzle") and self.at("<", 1):
                return self.swizzle()
            if name == "Layout" and self.at("<", 1):
                self.i += 1
                self.take("<")
                shp = self.type_()
                std = None
                if self.at(","):
                    self.take(",")
                    std = self.type_()
                self.take(">")
                self.opt_braces()
                return Layout(shp, std)
            if name in _TAGS:
                self.i += 1
                self.opt_braces()
                return _TAGS[name]
            if name == "_":
                self.i += 1
                return _
            if self.at("(", 1):
                return self.call()
        shape = self.tuple_()
        if self.at(":"):
            self.take(":")
            return Layout(shape, self.tuple_())
        return shape

    def gmma_atom(self) -> Any:
        """``GMMA::Layout_{MN,K}_{INTER,SW32,SW64,SW128}_Atom<T>{}`` (or ``..._Atom_Bits``): the
        C++ type, ``Sw<B,4,3> o smem_ptr[Nb] o L``."""
        from threadmap.layout.atom.copy_traits import type_bits
        from threadmap.layout.atom.mma_traits_sm90_gmma import gmma_layout_atom, gmma_layout_atom_bits

        start = self.i
        m = _GMMA_ATOM.fullmatch(self.take(kind="name"))
        assert m is not None
        parts = [""]
        if not m.group(3):  # the _Bits atoms take no element type
            self.take("<")
            parts = [self.take(kind="name")]
            while self.at("::"):
                self.take("::")
                parts.append(self.take(kind="name"))
            self.take(">")
        self.opt_braces()
        try:
            if m.group(3):
                return gmma_layout_atom_bits(m.group(1), m.group(2))
            return gmma_layout_atom(m.group(1), m.group(2), type_bits(parts[-1]))
        except ThreadmapError as e:
            raise self.err(f"GMMA layout atom: {e}", start) from None

    def call(self) -> Any:
        start = self.i
        name = self.take(kind="name")
        if name not in self.functions:
            raise self.err(f"unknown function {name!r}; known: {', '.join(sorted(self.functions))}",
                           start)
        fn, lo, hi = self.functions[name]
        self.enter()
        self.take("(")
        args: list[Any] = []
        if not self.at(")"):
            args.append(self.expr())
            while self.at(","):
                self.take(",")
                args.append(self.expr())
        self.take(")")
        self.depth -= 1
        if not lo <= len(args) <= hi:
            raise self.err(f"{name} takes {lo}..{hi} arguments, got {len(args)}", start)
        try:
            return fn(*args)
        except ThreadmapError:
            raise
        except (TypeError, ValueError, ZeroDivisionError, OverflowError, IndexError) as e:
            raise self.err(f"{name}: bad arguments ({e})", start) from None

    def expr(self) -> Any:
        self.enter()
        first = self.operand()
        if not self.at("o"):
            self.depth -= 1
            if isinstance(first, Swizzle) and self.peek() is not None and not self.at(",") \
                    and not self.at(")"):
                raise self.err("expected o after the swizzle")
            return first
        self.take("o")
        rest = self.chain()
        self.depth -= 1
        return _compose_text(first, rest)

    def chain(self) -> Any:
        """The operands after an ``o``: ``O o B`` (an integer offset) or ``B``."""
        self.enter()
        nxt = self.operand()
        if self.at("o"):
            self.take("o")
            rest = self.chain()
            self.depth -= 1
            if is_int(nxt):
                if isinstance(rest, _Offset):
                    raise self.err("two offsets in a row")
                return _Offset(nxt, rest)
            return _compose_text(nxt, rest)
        self.depth -= 1
        return nxt

    def done(self) -> None:
        if self.i != len(self.toks):
            raise self.err(f"unexpected {self.toks[self.i][1]!r}")


class _Offset:
    """``O o B`` after the first ``o`` of ``A o O o B``."""

    def __init__(self, offset: int, rest: Any) -> None:
        self.offset, self.rest = offset, rest


def _compose_text(first: Any, rest: Any) -> ComposedLayout:
    """``A o B`` is ``ComposedLayout(A, 0, B)``; ``A o O o B`` has offset ``O``."""
    if isinstance(rest, _Offset):
        return ComposedLayout(shape_as_layout(first), rest.offset, shape_as_layout(rest.rest))
    return ComposedLayout(shape_as_layout(first), 0, shape_as_layout(rest))


def _check_positive(x: Any) -> None:
    """Text layouts have positive extents (the spec files and the CLI rely on it)."""
    shapes: list[Any] = []
    if isinstance(x, Layout):
        shapes.append(x.shape)
    elif isinstance(x, ComposedLayout):
        for part in (x.layout_a, x.layout_b):
            if isinstance(part, Layout):
                shapes.append(part.shape)
    for s in shapes:
        for v in flatten_to_tuple(s):
            if v == 0:
                raise LayoutError("shape element 0 is not positive (a text layout needs "
                                  "positive extents)")


def run_parser(text: str, env: Mapping[str, int] | None, what: str, dynamic: bool = False,
               functions: Mapping[str, tuple[Callable[..., Any], int, int]] | None = None) -> Any:
    """Parse ``text`` as ``what`` ('layout', 'int tuple' or 'expression')."""
    p = _Parser(text, env, dynamic, CONSTRUCTORS if functions is None else functions)
    if not p.toks:
        raise ParseError(f"empty {what}")
    try:
        if what == "int tuple":
            out = p.tuple_()
        else:
            out = p.expr()
        p.done()
        if what == "layout":
            if isinstance(out, Underscore) or isinstance(out, L.Major):
                raise p.err("expected a layout")
            out = shape_as_layout(out)
            if not isinstance(out, (Layout, ComposedLayout, Swizzle)):
                raise ParseError(f"expected a layout, got {out!r} in {text!r}")
        _check_positive(out)
    except (LayoutError, SwizzleError) as e:
        if "(in '" in str(e):
            raise
        raise type(e)(f"{e} (in {text!r})") from None
    except RecursionError:
        raise ParseError(f"{what} nested too deeply: {text[:60]!r}") from None
    return out


def parse_layout(text: str, env: Mapping[str, int] | None = None, *, dynamic: bool = False) -> Any:
    """Parse CuTe notation or a pasted C++ expression into a :class:`Layout` (a
    ``ComposedLayout`` for ``Sw<...> o L``; a bare shape gets column-major strides).

    ``dynamic=True`` reads unprefixed integers as dynamic (:class:`Dyn`), as CuTe prints them.
    Law: ``parse_layout(str(L)) == L`` and ``parse_layout(L.to_str(static=True),
    dynamic=True)`` has the static-ness of ``L``.
    """
    return run_parser(text, env, "layout", dynamic)


def parse_int_tuple(text: str, env: Mapping[str, int] | None = None, *,
                    dynamic: bool = False) -> Any:
    """Parse an int tuple such as ``(4,(2,_3))`` or ``16``."""
    return run_parser(text, env, "int tuple", dynamic)


def _top_level_items(text: str) -> list[str] | None:
    """The comma-separated items of ``(a,b,...)`` at nesting depth 1, or None if ``text`` is
    not one parenthesised tuple."""
    t = text.strip()
    if not (t.startswith("(") and t.endswith(")")):
        return None
    items, depth, start = [], 0, 1
    for i, ch in enumerate(t):
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
            if depth == 0 and i != len(t) - 1:
                return None  # '(a):(b)' is a layout, not a tuple of tilers
        elif ch == "," and depth == 1:
            items.append(t[start:i])
            start = i + 1
    items.append(t[start:-1])
    return items


def parse_tiler(text: str, env: Mapping[str, int] | None = None) -> Any:
    """Parse a CuTe tiler as ``print`` writes one: a shape ``(_16,_64)``, a layout, or a tuple
    whose items are integers or layouts (``(_16:_1,(_2,_4):(_1,_8))``, a ``Tile<...>``).

    Law: each item parses as :func:`parse_int_tuple` when it is an integer and as
    :func:`parse_layout` otherwise, so ``parse_tiler(str(t)) == t`` for such tilers.
    """
    if not isinstance(text, str):
        raise ParseError(f"a tiler is text such as '(_16,_64)', got {text!r}")
    if len(text) > MAX_TEXT:
        raise ParseError(f"tiler text longer than {MAX_TEXT} characters")
    items = _top_level_items(text)
    if items is None:
        try:
            return parse_int_tuple(text, env)
        except ParseError:
            return parse_layout(text, env)
    out: list[Any] = []
    for item in items:
        try:
            v = parse_int_tuple(item, env)
            out.append(v if is_int(v) else parse_tiler(item, env))
        except ParseError:
            out.append(parse_layout(item, env))
    return tuple(out)


parse = parse_layout
