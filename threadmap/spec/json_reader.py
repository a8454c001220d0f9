"""JSON spec text -> data with the position of every value and key.

A small position-recording recursive-descent reader (strings by the standard library's
``scanstring``): strict JSON (no NaN/Infinity), duplicate keys are an error, bounded nesting
and number length, integers in 64 bits, strings without lone surrogates (``"\\ud800"``) or
control characters (:func:`~threadmap.spec.located.check_data`).
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
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
    check_data,
    fail,
    gc_paused,
    int64_problem,
    show,
    surrogate_in_text,
)

MAX_NUMBER_CHARS = 100        # digits of one JSON number


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = json.scanner.NUMBER_RE
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]  # public but untyped


class _JsonReader:
    """Strict JSON with the position of every value and key."""

    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.name = name
        self.loc = Located(None)
        self.lines = LineIndex(text)
        self.nodes = 0

    def mark(self, pos: int) -> Mark:
        return self.lines.mark(pos)

    def fail(self, pos: int, msg: str) -> SpecError:
        return fail(self.name, *self.mark(pos), f"JSON: {msg}")

    def ws(self, pos: int) -> int:
        return _WS.match(self.text, pos).end()  # type: ignore[union-attr]

    def read(self) -> Located:
        surrogate_in_text(self.text, self.name)
        pos = self.ws(0)
        if pos == len(self.text):
            raise self.fail(pos, "the file is empty")
        self.loc.data, pos = self.value(pos, (), 0)
        pos = self.ws(pos)
        if pos != len(self.text):
            raise self.fail(pos, "extra data after the top-level value")
        errs = Errors(self.name, self.loc)
        check_data(self.loc.data, errs)  # strings (escapes such as "\\ud800", "\\u0000")
        errs.raise_()
        return self.loc

    def string(self, pos: int) -> tuple[str, int]:
        try:
            return _scanstring(self.text, pos + 1, True)
        except json.JSONDecodeError as e:
            raise self.fail(e.pos, e.msg) from None

    def value(self, pos: int, path: Path_, depth: int) -> tuple[Any, int]:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(pos, f"more than {MAX_NODES} keys and values")
        if depth > MAX_NESTING:
            raise self.fail(pos, f"nested deeper than {MAX_NESTING} levels")
        text = self.text
        if pos >= len(text):
            raise self.fail(pos, "expected a value but the file ended")
        self.loc.values[path] = self.mark(pos)
        c = text[pos]
        if c == "{":
            out: dict[str, Any] = {}
            pos = self.ws(pos + 1)
            if text.startswith("}", pos):
                return out, pos + 1
            while True:
                if not text.startswith('"', pos):
                    raise self.fail(pos, "expected a key in double quotes")
                kpos = pos
                key, pos = self.string(pos)
                if key in out:
                    raise fail(self.name, *self.mark(kpos), f"JSON: duplicate key {show(key)}",
                                (*path, key))
                pos = self.ws(pos)
                if not text.startswith(":", pos):
                    raise self.fail(pos, "expected ':' after the key")
                self.loc.keys[(*path, key)] = self.mark(kpos)
                self.nodes += 1  # keys count too: each costs a pydantic error if unknown
                out[key], pos = self.value(self.ws(pos + 1), (*path, key), depth + 1)
                pos = self.ws(pos)
                if text.startswith(",", pos):
                    pos = self.ws(pos + 1)
                elif text.startswith("}", pos):
                    return out, pos + 1
                else:
                    raise self.fail(pos, "expected ',' or '}'")
        if c == "[":
            items: list[Any] = []
            pos = self.ws(pos + 1)
            if text.startswith("]", pos):
                return items, pos + 1
            while True:
                v, pos = self.value(pos, (*path, len(items)), depth + 1)
                items.append(v)
                pos = self.ws(pos)
                if text.startswith(",", pos):
                    pos = self.ws(pos + 1)
                elif text.startswith("]", pos):
                    return items, pos + 1
                else:
                    raise self.fail(pos, "expected ',' or ']'")
        if c == '"':
            return self.string(pos)
        for word, val in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, pos):
                return val, pos + len(word)
        m = _NUMBER.match(text, pos)
        if m is None:
            raise self.fail(pos, f"unexpected character {c!r}")
        if m.end() - pos > MAX_NUMBER_CHARS:
            raise self.fail(pos, f"number longer than {MAX_NUMBER_CHARS} characters")
        integer, frac, exp = m.groups()
        if frac or exp:
            try:
                return float(m.group()), m.end()
            except (ValueError, OverflowError):
                raise self.fail(pos, f"bad number {m.group()!r}") from None
        value = int(integer)  # at most MAX_NUMBER_CHARS digits: cheap, and printable
        why = int64_problem(value, m.group())
        if why:
            raise fail(self.name, *self.mark(pos), why, path)
        return value, m.end()


def load_json(text: str, name: str) -> Located:
    with gc_paused():
        return _JsonReader(text, name).read()

