"""Helpers shared by the spec fuzzers: every path into a spec tree, and a small TOML writer."""

from __future__ import annotations

import json
import math
import re
from typing import Any


def tree_paths(d: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into nested dicts and lists, the root ``()`` first."""
    out = [prefix]
    if isinstance(d, dict):
        for k, v in d.items():
            out += tree_paths(v, (*prefix, k))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out += tree_paths(v, (*prefix, i))
    return out


def toml_dumps(data: Any, tables: bool = False) -> str:
    """A small TOML writer (inline tables; with ``tables`` top-level mappings become
    ``[table]`` sections).  Values TOML lacks (null) raise TypeError."""
    def key(k: Any) -> str:
        s = str(k)
        return s if re.fullmatch(r"[A-Za-z0-9_-]+", s) else json.dumps(s)

    def val(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{key(k)} = {val(x)}" for k, x in v.items()) + "}"
        raise TypeError(type(v).__name__)

    if not isinstance(data, dict):
        return f"value = {val(data)}\n"
    head = [(k, v) for k, v in data.items() if not (tables and isinstance(v, dict) and v)]
    out = "".join(f"{key(k)} = {val(v)}\n" for k, v in head)
    if tables:
        for k, v in data.items():
            if isinstance(v, dict) and v:
                out += f"\n[{key(k)}]\n" + "".join(f"{key(a)} = {val(b)}\n" for a, b in v.items())
    return out
