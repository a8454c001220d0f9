"""Positions in spec files and located errors (``FILE:LINE:COL: field.path: message``).

A reader records the 1-based (line, column) of every value and key of the parsed data
(:class:`Located`); :class:`Errors` collects problems located at data paths and raises one
:class:`~threadmap.errors.SpecError` listing them, one line per problem.

The limits every reader enforces live here too (:data:`MAX_NODES`, :data:`MAX_NESTING`,
64-bit integers, printable strings: :func:`check_data`), so that what a reader hands on
can be printed, formatted and turned into numpy integers without raising.
"""

from __future__ import annotations

import bisect
import gc
import json
import re
import reprlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from threadmap.errors import SpecError

Path_ = tuple[Any, ...]  # a path into the data: keys and list indices
Mark = tuple[int, int]  # 1-based (line, column)

MAX_MESSAGES = 20             # problems listed in one SpecError
MAX_NODES = 100_000           # values (and keys) in one file, after YAML alias expansion
MAX_NESTING = 64              # nesting of mappings/lists (TOML: dotted key parts count too)
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
SHOWN_CHARS = 40              # characters of a key or value quoted in a message

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# what a string value may not hold: C0/C1 controls except tab, newline and carriage return
# (terminal escapes, NUL), and lone surrogates (not encodable as UTF-8, so not printable)
_BAD_IN_VALUE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class Located:
    """Parsed data plus where its values and keys are."""

    def __init__(self, data: Any) -> None:
        self.data = data
        self.values: dict[Path_, Mark] = {}
        self.keys: dict[Path_, Mark] = {}

    def locate(self, path: Path_, key: bool = False) -> Mark:
        """The mark of ``path`` (its key if ``key`` and it has one), else of the nearest
        ancestor that has one, else ``(1, 1)``."""
        try:
            p = tuple(path)
            if key and p in self.keys:
                return self.keys[p]
            while True:
                if p in self.values:
                    return self.values[p]
                if not p:
                    return (1, 1)
                p = p[:-1]
        except TypeError:  # an unhashable component: no data path has it
            return (1, 1)


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: reading builds ~10^5 acyclic objects (nodes,
    paths, marks, pydantic errors), and the collections their allocation triggers, each
    traversing the growing heap, would take half the time.  Nothing is left uncollected:
    collection resumes after (and the previous setting is restored)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class LineIndex:
    """Character offset -> 1-based (line, column), by bisection over the line starts."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def mark(self, pos: int) -> Mark:
        line = bisect.bisect_right(self.starts, pos)
        return (line, pos - self.starts[line - 1] + 1)


def short(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters (with ``...``), for quoting in a message."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


# bounded repr of containers: a few items, a few levels (the input of a pydantic error may
# be a subtree of 100000 values)
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxtuple, _REPR.maxset = 3, 4, 4, 4, 4
_REPR.maxstring = _REPR.maxother = SHOWN_CHARS


def show(value: Any) -> str:
    """A short, one-line ``repr`` of a key or value that never raises (huge ints included)."""
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        return f"<{value.bit_length()}-bit integer>"
    if isinstance(value, str):
        return repr(short(value))
    try:
        return short(_REPR.repr(value))
    except (ValueError, RecursionError):  # e.g. an int past 4300 digits inside a list
        return f"<{type(value).__name__}>"


def fmt_path(path: Sequence[Any]) -> str:
    """``stages[0].copy.src``; keys that are not plain names are quoted: ``sizes["a b"]``;
    long keys are cut (``["kkkk..."]``)."""
    out = ""
    for c in path:
        if isinstance(c, int) and not isinstance(c, bool) and INT64_MIN <= c <= INT64_MAX:
            out += f"[{c}]"
        elif isinstance(c, str) and len(c) <= SHOWN_CHARS and _PLAIN_KEY.fullmatch(c):
            out += ("." if out else "") + c
        else:
            out += f"[{json.dumps(short(c) if isinstance(c, str) else show(c))}]"
    return out or "(top level)"


class Errors:
    """Collects located problems; :meth:`raise_` raises one SpecError listing them.

    Only the first ``MAX_MESSAGES + 1`` lines are formatted (the last of them heads the
    "... and N more problems" line); later problems are only counted (distinct ones), so
    that 50000 unknown keys cost no 50000 formatted, located lines."""

    def __init__(self, name: str, loc: Located | Callable[[Path_, bool], Mark]) -> None:
        self.name = name
        self.loc = loc
        self.lines: list[str] = []
        self.seen: set[str] = set()
        self.heads: list[str] = []  # "FILE:LINE:COL: path" of each line, for the summary
        self.more: set[Any] = set()  # problems past the formatted lines
        self.unexamined = 0  # errors (of pydantic's) not even mapped to a problem

    def mark(self, path: Path_, key: bool = False) -> Mark:
        if isinstance(self.loc, Located):
            return self.loc.locate(path, key)
        return self.loc(path, key)

    @property
    def full(self) -> bool:
        """Whether further problems are only counted."""
        return len(self.lines) > MAX_MESSAGES

    def count(self, problem: Any) -> None:
        """Count a problem past the formatted lines (``problem``: a hashable identity)."""
        try:
            self.more.add(problem)
        except TypeError:
            self.more.add(repr(problem))

    def add(self, path: Path_, msg: str, key: bool = False, display: Path_ | None = None) -> None:
        if self.full:
            self.count((tuple(path), msg, key, display))
            return
        line, col = self.mark(path, key)
        head = clean(f"{self.name}:{line}:{col}: {fmt_path(path if display is None else display)}")
        text = f"{head}: {clean(msg)}"
        if text not in self.seen:
            self.seen.add(text)
            self.lines.append(text)
            self.heads.append(head)

    def raise_(self) -> None:
        if self.lines:
            lines = self.lines[:MAX_MESSAGES]
            more = len(self.lines) - MAX_MESSAGES + len(self.more)
            summary = f"... and {more} more problems" if more > 0 else ""
            if self.unexamined:
                summary = (summary or "...") + f" (and {self.unexamined} more errors not examined)"
            if summary:
                # located like every other line: at the first problem not listed
                lines.append(f"{self.heads[min(MAX_MESSAGES, len(self.heads) - 1)]}: {summary}")
            raise SpecError("\n".join(lines))


def clean(text: str) -> str:
    """Escape unprintable characters so that one problem stays one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def fail(name: str, line: int, col: int, msg: str, path: Path_ | None = None) -> SpecError:
    """A located error for problems found while reading the file (syntax, limits)."""
    where = "(file)" if path is None else fmt_path(path)
    return SpecError(clean(f"{name}:{line}:{col}: {where}: {msg}"))


# ----------------------------------------------------------------------------- what readers admit


def int64_problem(value: int, text: str | None = None) -> str | None:
    """Why ``value`` (written ``text`` in the file) is not admitted, or None."""
    if INT64_MIN <= value <= INT64_MAX:
        return None
    return too_big(text if text is not None else hex(value))


def too_big(text: str) -> str:
    return f"integer {short(text.strip(), 24)} does not fit in 64 bits (-2^63 .. 2^63-1)"


_MAX_DIGITS = {2: 64, 8: 22, 10: 19, 16: 16}  # significant digits of the largest 64-bit value


def bounded_int(digits: str, base: int, negative: bool, text: str) -> int | str:
    """``int(digits, base)``, negated if ``negative``, or why not (:func:`too_big`).  The
    size is judged from the number of digits first, so no long conversion ever runs (and
    Python's 4300-digit limit on int() is never met)."""
    significant = digits.lstrip("0")
    if len(significant) > _MAX_DIGITS[base]:
        return too_big(text)
    value = int(significant or "0", base)
    value = -value if negative else value
    return int64_problem(value, text) or value


def string_problem(text: str, is_key: bool = False) -> str | None:
    """Why the string ``text`` is not admitted as a value (or key), or None.  Lone surrogates
    cannot be encoded (printing them raises); control characters (NUL, ESC, ...) would
    garble reports; keys, which are names, must be printable throughout."""
    m = _BAD_IN_VALUE.search(text)
    if m is not None:
        at, c = m.start(), m.group()
    elif is_key and not text.isprintable():
        at = next(i for i, ch in enumerate(text) if not ch.isprintable())
        c = text[at]
    else:
        return None
    what = ("a lone surrogate, not encodable as UTF-8" if _SURROGATE.match(c)
            else "a control character" if _BAD_IN_VALUE.match(c) else "an unprintable character")
    return (f"{'key' if is_key else 'string'} {show(text)} holds U+{ord(c):04X} ({what}) "
            f"at character {at + 1}")


def surrogate_in_text(text: str, name: str) -> None:
    """Raise a located error at the first lone surrogate of the spec text (text handed to
    :func:`~threadmap.spec.load.loads_spec` directly; a decoded file has none)."""
    m = _SURROGATE.search(text)
    if m is not None:
        line = text.count("\n", 0, m.start()) + 1
        col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
        raise fail(name, line, col, f"the text holds a lone surrogate U+{ord(m.group()):04X} "
                   "(not Unicode text)")


def check_data(data: Any, errs: Errors) -> None:
    """Add a problem to ``errs`` for every integer outside 64 bits and every string or key
    that :func:`string_problem` rejects (floats are left to the schema), and for data that
    nests deeper than :data:`MAX_NESTING` or holds more than :data:`MAX_NODES` values.
    Iterative, so any depth is safe to walk."""
    stack: list[tuple[Path_, Any]] = [((), data)]
    nodes = 0
    while stack:
        path, v = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            errs.add(path, f"more than {MAX_NODES} values")
            return
        if len(path) > MAX_NESTING:
            errs.add(path, f"nested deeper than {MAX_NESTING} levels")
        elif isinstance(v, dict):
            for k in v:
                if isinstance(k, str) and (why := string_problem(k, is_key=True)):
                    errs.add((*path, k), why, key=True)
                elif isinstance(k, int) and (why := int64_problem(k)):
                    errs.add((*path, k), why, key=True)
            stack.extend(((*path, k), x) for k, x in reversed(v.items()))
        elif isinstance(v, list):
            stack.extend(((*path, i), v[i]) for i in range(len(v) - 1, -1, -1))
        elif isinstance(v, int) and not isinstance(v, bool):
            if why := int64_problem(v):
                errs.add(path, why)
        elif isinstance(v, str):
            if why := string_problem(v):
                errs.add(path, why)
