"""TOML spec text -> data, and approximate positions.

``tomllib`` parses; positions are an approximation: the line and column of the key text,
found by scanning headers (``[a.b]``, ``[[a]]``) and ``key =`` assignments in path order;
an array item is located at its item inside an inline array or at the n-th ``[[array]]``
header, otherwise at the array's key.
"""

from __future__ import annotations

import bisect
import itertools
import re
import tomllib
from typing import Any

from threadmap.spec.located import Mark, Path_, fail

_TOML_ERR_POS = re.compile(r"\(at line (\d+), column (\d+)\)")


class _TomlLocator:
    """Approximate positions in TOML text: the key's line and column (see module docstring)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.cache: dict[tuple[Path_, bool], Mark] = {}

    def mark(self, pos: int) -> Mark:
        line = bisect.bisect_right(self.starts, pos)
        return (line, pos - self.starts[line - 1] + 1)

    def _key_re(self, key: Any) -> re.Pattern[str]:
        k = re.escape(str(key))
        # the key as a bare or quoted key, followed by '=', '.', or a header's ']'
        return re.compile(rf"""(?:(?<=[\s{{,.\[])|^)(?:{k}|"{k}"|'{k}')\s*(?==|\.|\])""", re.M)

    def _array_item(self, pos: int, n: int) -> int | None:
        """Start of item ``n`` of the inline array assigned by the first '=' after ``pos``."""
        text = self.text
        eq = text.find("=", pos)
        if eq < 0:
            return None
        i = eq + 1
        while i < len(text) and text[i] in " \t":
            i += 1
        if i >= len(text) or text[i] != "[":
            return None
        depth, item, started, i = 0, 0, False, i + 1
        while i < len(text):
            c = text[i]
            if c == "#":
                nl = text.find("\n", i)
                i = len(text) if nl < 0 else nl
                continue
            if c.isspace():
                i += 1
                continue
            if depth == 0 and not started and c not in ",]":
                if item == n:
                    return i
                started = True
            if c in "\"'":
                end = text.find(c, i + 1)
                while end > 0 and c == '"' and text[end - 1] == "\\":
                    end = text.find(c, end + 1)
                if end < 0:
                    return None
                i = end + 1
                continue
            if c in "[{":
                depth += 1
            elif c in "]}":
                if depth == 0:
                    return None
                depth -= 1
            elif c == "," and depth == 0:
                item, started = item + 1, False
            i += 1
        return None

    def __call__(self, path: Path_, key: bool = False) -> Mark:
        ck = (tuple(path), key)
        if ck in self.cache:
            return self.cache[ck]
        pos, found = 0, 0
        last_key: Any = None
        for comp in path:
            if isinstance(comp, int) and not isinstance(comp, bool):
                hdr = re.compile(rf"^\s*\[\[\s*[^\]]*?\b{re.escape(str(last_key))}\s*\]\]", re.M)
                heads = list(itertools.islice(hdr.finditer(self.text, pos), comp + 1))
                if len(heads) > comp:
                    pos, found = heads[comp].start(), heads[comp].start()
                    continue
                item = self._array_item(pos, comp)
                if item is None:
                    break
                pos = found = item
                continue
            m = self._key_re(comp).search(self.text, pos)
            if m is None:
                break
            pos = found = m.start()
            last_key = comp
        out = self.mark(found)
        self.cache[ck] = out
        return out


def load_toml(text: str, name: str) -> tuple[Any, _TomlLocator]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = _TOML_ERR_POS.search(str(e))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (1, 1)
        msg = _TOML_ERR_POS.sub("", str(e)).strip()
        raise fail(name, line, col, f"TOML: {msg}") from None
    except (RecursionError, ValueError) as e:
        raise fail(name, 1, 1, f"TOML: {e}") from None
    return data, _TomlLocator(text)

