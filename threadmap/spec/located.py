"""Positions in spec files and located errors (``FILE:LINE:COL: field.path: message``).

A reader records the 1-based (line, column) of every value and key of the parsed data
(:class:`Located`); :class:`Errors` collects problems located at data paths and raises one
:class:`~threadmap.errors.SpecError` listing them, one line per problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from threadmap.errors import SpecError

Path_ = tuple[Any, ...]  # a path into the data: keys and list indices
Mark = tuple[int, int]  # 1-based (line, column)

MAX_MESSAGES = 20             # problems listed in one SpecError

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")



class Located:
    """Parsed data plus where its values and keys are."""

    def __init__(self, data: Any) -> None:
        self.data = data
        self.values: dict[Path_, Mark] = {}
        self.keys: dict[Path_, Mark] = {}

    def locate(self, path: Path_, key: bool = False) -> Mark:
        """The mark of ``path`` (its key if ``key`` and it has one), else of the nearest
        ancestor that has one, else ``(1, 1)``."""
        p = tuple(path)
        if key and p in self.keys:
            return self.keys[p]
        while True:
            if p in self.values:
                return self.values[p]
            if not p:
                return (1, 1)
            p = p[:-1]


def fmt_path(path: Sequence[Any]) -> str:
    """``stages[0].copy.src``; keys that are not plain names are quoted: ``sizes["a b"]``."""
    out = ""
    for c in path:
        if isinstance(c, int) and not isinstance(c, bool):
            out += f"[{c}]"
        elif isinstance(c, str) and _PLAIN_KEY.fullmatch(c):
            out += ("." if out else "") + c
        else:
            out += f"[{json.dumps(c if isinstance(c, str) else repr(c))}]"
    return out or "(top level)"


class Errors:
    """Collects located problems; :meth:`raise_` raises one SpecError listing them."""

    def __init__(self, name: str, loc: Located | Callable[[Path_, bool], Mark]) -> None:
        self.name = name
        self.loc = loc
        self.lines: list[str] = []
        self.seen: set[str] = set()

    def mark(self, path: Path_, key: bool = False) -> Mark:
        if isinstance(self.loc, Located):
            return self.loc.locate(path, key)
        return self.loc(path, key)

    def add(self, path: Path_, msg: str, key: bool = False, display: Path_ | None = None) -> None:
        line, col = self.mark(path, key)
        text = clean(f"{self.name}:{line}:{col}: "
                      f"{fmt_path(path if display is None else display)}: {msg}")
        if text not in self.seen:
            self.seen.add(text)
            self.lines.append(text)

    def raise_(self) -> None:
        if self.lines:
            lines = self.lines[:MAX_MESSAGES]
            if len(self.lines) > MAX_MESSAGES:
                lines.append(f"... and {len(self.lines) - MAX_MESSAGES} more problems")
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

