"""TOML spec text -> data with the position of every value and key.

``tomllib`` parses.  Positions come from one linear pass of a small TOML scanner over the
text (:class:`_Scanner`), which follows table headers ``[a.b]`` and ``[[a]]`` (counting the
elements of arrays of tables), dotted keys, inline tables and arrays (multi-line too) and
records every data path as it goes:

* a value assigned with ``key = value`` (also in an inline table, also dotted) is located at
  its key, a table opened by a header at the header's last key, a table created by a
  dotted key or header prefix at that part of the key;
* an array item at the item; an element of an array of tables at its ``[[``.

The scanner runs *before* tomllib because it also enforces what tomllib lacks: at most
:data:`MAX_NESTING` levels (header parts, dotted key parts and inline nesting add up; tomllib
takes memory quadratic in the number of parts of a dotted key), at most :data:`MAX_NODES`
keys and values, and integers in 64 bits (tomllib converts any number of digits, and raises
an unlocated ValueError past 4300).  On text it cannot read it stops; tomllib then reports
the syntax error, and positions past that point fall back to the nearest located ancestor.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from typing import Any

from threadmap.errors import SpecError
from threadmap.spec.located import (
    MAX_NESTING,
    MAX_NODES,
    Errors,
    LineIndex,
    Located,
    Mark,
    Path_,
    bounded_int,
    check_data,
    fail,
    gc_paused,
    surrogate_in_text,
)

_TOML_ERR_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)")
_TOML_ERR_END = re.compile(r"\s*\(at end of document\)")

# Possessive quantifiers throughout (Python 3.11): a repeated group that may backtrack costs
# the regex engine ~100 bytes a character, ~150 MB for a 1 MiB string.
_WS = re.compile(r"[ \t]*+")
_WS_NL = re.compile(r"(?:[ \t\r\n]++|#[^\n]*+)*+")  # in arrays (and, leniently, inline tables)
_LINE_END = re.compile(r"[ \t]*+(?:#[^\n]*+)?(?:\r?\n|\Z)")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]++")
_BASIC = re.compile(r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"')
_LITERAL = re.compile(r"'[^'\n]*+'")
# a multi-line string ends at the first unescaped """ ('''), plus up to two more quotes
_ML_BASIC = re.compile(r'"""[^"\\]*+(?:(?:\\[\s\S]|"(?!""))[^"\\]*+)*+"{3,5}')
_ML_LITERAL = re.compile(r"'''[^']*+(?:'(?!'')[^']*+)*+'{3,5}")
# numbers, booleans, inf/nan, dates and times (a space may join a date and a time)
_SCALAR = re.compile(r"\d{4}-\d\d-\d\d[ Tt]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:[Zz]|[+-]\d\d:\d\d)?"
                     r"|[A-Za-z0-9_+\-.:]++")
# integer digits by base (underscores removed; tomllib checks where they may stand)
_DIGITS = {2: re.compile(r"[01]++"), 8: re.compile(r"[0-7]++"), 10: re.compile(r"[0-9]++"),
           16: re.compile(r"[0-9A-Fa-f]++")}
_PREFIXES = {"0x": 16, "0o": 8, "0b": 2}
# the common line ``key = scalar`` whole, with a value that needs no check (at most 18
# digits always fit in 64 bits): read in one match (a third of the time of the general path)
_SIMPLE_LINE = re.compile(r"""[ \t]*+([A-Za-z0-9_-]++)[ \t]*+=[ \t]*+"""
                          r"""(?:[+-]?[0-9]{1,18}|true|false|"[^"\\\n]*+"|'[^'\n]*+')"""
                          r"""[ \t]*+(?:#[^\n]*+)?(?:\r?\n|\Z)""")
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|x([0-9A-Fa-f]{2})|(.))", re.S)
_ESCAPED = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\",
            "e": "\x1b"}


class _Confused(Exception):
    """The text is not TOML as the scanner reads it; tomllib will say why."""


def _unescape(body: str) -> str:
    """The key a basic string (without its quotes) names."""
    def one(m: re.Match[str]) -> str:
        code = m.group(1) or m.group(2) or m.group(3)
        if code is not None:
            cp = int(code, 16)
            if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                raise _Confused
            return chr(cp)
        if m.group(4) not in _ESCAPED:
            raise _Confused
        return _ESCAPED[m.group(4)]

    return _ESCAPE.sub(one, body) if "\\" in body else body


class _Scanner:
    """One pass over TOML text: the position of every key and value, and the limits."""

    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.name = name
        self.lines = LineIndex(text)
        self.loc = Located(None)
        self.nodes = 0
        self.tables: dict[Path_, int] = {}  # array of tables -> elements so far

    def mark(self, pos: int) -> Mark:
        return self.lines.mark(pos)

    def count(self, pos: int, path: Path_) -> None:
        """One more key or value at ``path`` (at ``pos``): enforce the limits."""
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise fail(self.name, *self.mark(pos), f"more than {MAX_NODES} keys and values")
        if len(path) > MAX_NESTING:
            raise fail(self.name, *self.mark(pos), f"nested deeper than {MAX_NESTING} levels "
                       "(tables, dotted key parts and arrays add up)")

    def record(self, path: Path_, pos: int, first: bool = True) -> None:
        """``path``'s key and value are at ``pos`` (if ``first``: unless already known)."""
        m = self.mark(pos)
        if first:
            self.loc.keys.setdefault(path, m)
            self.loc.values.setdefault(path, m)
        else:
            self.loc.keys[path] = self.loc.values[path] = m

    def ws(self, pos: int, newlines: bool = False) -> int:
        return (_WS_NL if newlines else _WS).match(self.text, pos).end()  # type: ignore[union-attr]

    def scan(self) -> None:
        text = self.text
        table: Path_ = ()
        pos = 0
        try:
            while True:
                simple = _SIMPLE_LINE.match(text, pos)
                if simple is not None:
                    path = (*table, simple.group(1))
                    self.count(simple.start(1), path)  # the key
                    self.count(simple.start(1), path)  # its value
                    self.record(path, simple.start(1), first=False)
                    pos = simple.end()
                    continue
                pos = self.ws(pos)
                if pos >= len(text):
                    break
                if text[pos] not in "#\r\n":
                    if text.startswith("[", pos):
                        table, pos = self.header(pos, text.startswith("[[", pos))
                    else:
                        pos = self.key_value(pos, table)
                m = _LINE_END.match(text, pos)
                if m is None:
                    raise _Confused
                pos = m.end()
        except _Confused:  # not TOML here: positions stop; tomllib reports the error
            pass

    def key(self, pos: int) -> tuple[list[tuple[str, int]], int]:
        """A (dotted) key: its parts with their positions, and the position after it."""
        text = self.text
        parts: list[tuple[str, int]] = []
        while True:
            pos = self.ws(pos)
            c = text[pos:pos + 1]
            m = (_BASIC if c == '"' else _LITERAL if c == "'" else _BARE_KEY).match(text, pos)
            if m is None:
                raise _Confused
            k = m.group()
            parts.append((_unescape(k[1:-1]) if c == '"' else k[1:-1] if c == "'" else k, pos))
            if len(parts) > MAX_NESTING:  # before tomllib's quadratic work on it
                raise fail(self.name, *self.mark(pos), f"dotted key with more than {MAX_NESTING} parts")
            pos = self.ws(m.end())
            if not text.startswith(".", pos):
                return parts, pos
            pos += 1

    def header(self, pos: int, array: bool) -> tuple[Path_, int]:
        """``[a.b]`` or ``[[a.b]]`` at ``pos``: the table it opens, and the position after."""
        start = pos
        parts, pos = self.key(pos + (2 if array else 1))
        close = "]]" if array else "]"
        if not self.text.startswith(close, pos):
            raise _Confused
        path: Path_ = ()
        for k, kpos in parts[:-1]:
            path = (*path, k)
            self.count(kpos, path)
            self.record(path, kpos)
            if path in self.tables:  # [a.b] after [[a]]: b is in a's last element
                path = (*path, self.tables[path] - 1)
        k, kpos = parts[-1]
        path = (*path, k)
        self.count(kpos, path)
        if array:
            self.record(path, kpos)
            n = self.tables.get(path, 0)
            self.tables[path] = n + 1
            path = (*path, n)
            self.count(start, path)
            self.record(path, start, first=False)
        else:
            self.record(path, kpos, first=False)
        return path, pos + len(close)

    def key_value(self, pos: int, table: Path_) -> int:
        """``key = value`` at ``pos`` in ``table``: the position after the value."""
        parts, pos = self.key(pos)
        if not self.text.startswith("=", pos):
            raise _Confused
        path = table
        for k, kpos in parts[:-1]:
            path = (*path, k)
            self.count(kpos, path)
            self.record(path, kpos)
        path = (*path, parts[-1][0])
        self.count(parts[-1][1], path)  # the key: as in YAML and JSON, keys count
        self.record(path, parts[-1][1], first=False)
        return self.value(self.ws(pos + 1), path)

    def value(self, pos: int, path: Path_, item: bool = False) -> int:
        """A value at ``pos`` (an array item if ``item``): the position after it."""
        text = self.text
        self.count(pos, path)
        if item:
            self.loc.values[path] = self.mark(pos)
        c = text[pos:pos + 1]
        if c == "[":
            return self.array(pos, path)
        if c == "{":
            return self.inline_table(pos, path)
        if c == '"':
            m = (_ML_BASIC if text.startswith('"""', pos) else _BASIC).match(text, pos)
        elif c == "'":
            m = (_ML_LITERAL if text.startswith("'''", pos) else _LITERAL).match(text, pos)
        else:
            m = _SCALAR.match(text, pos)
            if m is not None:
                self.integer(m.group(), pos, path)
        if m is None:
            raise _Confused
        return m.end()

    def integer(self, token: str, pos: int, path: Path_) -> None:
        """Raise if ``token`` is an integer outside 64 bits (before tomllib converts it)."""
        t = token.replace("_", "")
        signed = t[:1] in ("+", "-") and t != ""
        body = t[1:] if signed else t
        base = _PREFIXES.get(body[:2], 10) if not signed else 10
        digits = body if base == 10 else body[2:]
        if digits and _DIGITS[base].fullmatch(digits):
            v = bounded_int(digits, base, t.startswith("-"), token)
            if isinstance(v, str):
                raise fail(self.name, *self.mark(pos), v, path)

    def array(self, pos: int, path: Path_) -> int:
        text = self.text
        pos = self.ws(pos + 1, newlines=True)
        i = 0
        while not text.startswith("]", pos):
            pos = self.ws(self.value(pos, (*path, i), item=True), newlines=True)
            i += 1
            if text.startswith(",", pos):
                pos = self.ws(pos + 1, newlines=True)
            elif not text.startswith("]", pos):
                raise _Confused
        return pos + 1

    def inline_table(self, pos: int, path: Path_) -> int:
        # newlines and a trailing comma are TOML 1.1; tomllib says if they are not allowed
        text = self.text
        pos = self.ws(pos + 1, newlines=True)
        while not text.startswith("}", pos):
            pos = self.ws(self.key_value(pos, path), newlines=True)
            if text.startswith(",", pos):
                pos = self.ws(pos + 1, newlines=True)
            elif not text.startswith("}", pos):
                raise _Confused
        return pos + 1


def _toml_error(e: tomllib.TOMLDecodeError, text: str, name: str, lines: LineIndex) -> SpecError:
    msg = str(e)
    m = _TOML_ERR_POS.search(msg)
    if m:
        line, col = int(m.group(1)), int(m.group(2))
    elif _TOML_ERR_END.search(msg):
        line, col = lines.mark(len(text))
    else:
        line, col = 1, 1
    msg = _TOML_ERR_END.sub("", _TOML_ERR_POS.sub("", msg)).strip()
    return fail(name, line, col, f"TOML: {msg}")


def load_toml(text: str, name: str) -> tuple[Any, Callable[[Path_, bool], Mark]]:
    """``(data, locate)``: the parsed data and ``locate(path, key) -> (line, col)``."""
    with gc_paused():
        return _load_toml(text, name)


def _load_toml(text: str, name: str) -> tuple[Any, Callable[[Path_, bool], Mark]]:
    surrogate_in_text(text, name)
    scanner = _Scanner(text, name)
    scanner.scan()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _toml_error(e, text, name, scanner.lines) from None
    except (RecursionError, ValueError) as e:  # past where the scanner stopped: unlocated
        raise fail(name, 1, 1, f"TOML: {e}") from None
    loc = scanner.loc
    loc.data = data
    errs = Errors(name, loc)
    check_data(data, errs)  # strings ("\u0000" escapes), and the limits past a scanner stop
    errs.raise_()
    return data, loc.locate
