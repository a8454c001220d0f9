"""Load and validate spec files (YAML, TOML, JSON) with errors located at ``FILE:LINE:COL``.

:func:`load_spec` reads a file, parses it while recording where every value sits, validates
it against the pydantic models of :mod:`threadmap.spec.schema`, then checks what the models
cannot (names, references, thread counts, ranks, sizes; see :func:`check_semantics`).  Every
problem is a :class:`threadmap.errors.SpecError` whose message has one line per problem::

    specs/t.yaml:12:15: stages[0].copy.src.threads: thread layout has 128 threads, but threads = 256

Where positions come from:

* YAML: the node tree (``yaml.compose`` with the safe loader) gives the mark of every key and
  value; values are built from the nodes by PyYAML's *safe* constructors only.  Alias
  expansion is bounded (:data:`MAX_NODES`), duplicate keys are an error.
* JSON: a small position-recording recursive-descent reader (strings by the standard
  library's ``scanstring``), strict JSON (no NaN/Infinity), duplicate keys are an error.
* TOML: ``tomllib`` parses; positions are an approximation: the line and column of the key
  text, found by scanning headers (``[a.b]``, ``[[a]]``) and ``key =`` assignments in path
  order; an array item is located at its item inside an inline array or at the n-th
  ``[[array]]`` header, otherwise at the array's key.

For "field missing" errors the position is the mapping that lacks the field; for unknown
fields it is the unknown key; otherwise it is the offending value.
"""

from __future__ import annotations

import bisect
import itertools
import json
import json.decoder
import json.scanner
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from threadmap.errors import SpecError, ThreadmapError
from threadmap.layout import cosize, parse_layout, rank, size
from threadmap.layout import shape as layout_shape
from threadmap.spec.expr import BLOCK_NAMES, evaluate, parse_expr
from threadmap.spec.schema import ELEMENT_BITS, Copy, Side, SizeRange, Spec

Path_ = tuple[Any, ...]  # a path into the data: keys and list indices
Format = Literal["yaml", "toml", "json"]

MAX_FILE_BYTES = 1 << 20      # 1 MiB of spec text
MAX_NODES = 100_000           # values after YAML alias expansion
MAX_NESTING = 64              # nesting of mappings/lists
MAX_NUMBER_CHARS = 100        # digits of one JSON number
MAX_EXTENT = 2**31            # one dimension: a size, a grid entry, a tile extent, a shape mode
MAX_ELEMENTS = 2**40          # size or cosize of one tensor layout
MAX_THREADS = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)  # CUDA's gridDim limits
MAX_SHARED_BYTES = 227 * 1024  # shared memory per block (sm_80/sm_90 opt-in maximum)
MAX_SAMPLES = 64              # sample values of one range
MAX_ENVS = 64                 # size environments (cross product of samples) before diagonalising
DEFAULT_SAMPLE_CAP = 4096     # default samples stay at or below this (the range max only if small)
MAX_MESSAGES = 20             # problems listed in one SpecError

SPEC_SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json"}

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SIZE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_LAYOUT_NAME = re.compile(r"(?<![A-Za-z0-9_<])([A-Za-z][A-Za-z0-9_]*)")


# ----------------------------------------------------------------------------- positions

Mark = tuple[int, int]  # 1-based (line, column)


class _Located:
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


def _fmt_path(path: Sequence[Any]) -> str:
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


class _Errors:
    """Collects located problems; :meth:`raise_` raises one SpecError listing them."""

    def __init__(self, name: str, loc: _Located | Callable[[Path_, bool], Mark]) -> None:
        self.name = name
        self.loc = loc
        self.lines: list[str] = []
        self.seen: set[str] = set()

    def mark(self, path: Path_, key: bool = False) -> Mark:
        if isinstance(self.loc, _Located):
            return self.loc.locate(path, key)
        return self.loc(path, key)

    def add(self, path: Path_, msg: str, key: bool = False, display: Path_ | None = None) -> None:
        line, col = self.mark(path, key)
        text = _clean(f"{self.name}:{line}:{col}: "
                      f"{_fmt_path(path if display is None else display)}: {msg}")
        if text not in self.seen:
            self.seen.add(text)
            self.lines.append(text)

    def raise_(self) -> None:
        if self.lines:
            lines = self.lines[:MAX_MESSAGES]
            if len(self.lines) > MAX_MESSAGES:
                lines.append(f"... and {len(self.lines) - MAX_MESSAGES} more problems")
            raise SpecError("\n".join(lines))


def _clean(text: str) -> str:
    """Escape unprintable characters so that one problem stays one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _fail(name: str, line: int, col: int, msg: str, path: Path_ | None = None) -> SpecError:
    """A located error for problems found while reading the file (syntax, limits)."""
    where = "(file)" if path is None else _fmt_path(path)
    return SpecError(_clean(f"{name}:{line}:{col}: {where}: {msg}"))


# ----------------------------------------------------------------------------- YAML


#: libyaml's safe loader when PyYAML has it (5-10x faster), else the pure-Python one; both
#: give node marks and construct with SafeConstructor only
_YamlLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YAML_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")


def _yaml_unmarked(e: yaml.YAMLError, text: str, name: str) -> SpecError:
    """A YAML error without a mark (reader errors): locate it by its character position."""
    pos = getattr(e, "position", None)
    m = re.search(r"position (\d+)", str(e))
    if pos is None and m:
        pos = int(m.group(1))
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    if pos is None:
        return _fail(name, 1, 1, f"YAML: {msg}")
    pos = min(int(pos), len(text))
    line = text.count("\n", 0, pos) + 1
    return _fail(name, line, pos - (text.rfind("\n", 0, pos) + 1) + 1, f"YAML: {msg}")


def _load_yaml(text: str, name: str) -> _Located:
    try:
        loader = _YamlLoader(text)
    except yaml.YAMLError as e:
        raise _yaml_unmarked(e, text, name) from None
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as e:
            m = e.problem_mark or e.context_mark
            line, col = (m.line + 1, m.column + 1) if m else (1, 1)
            raise _fail(name, line, col, f"YAML: {e.problem or e.context or e}") from None
        except yaml.YAMLError as e:
            raise _yaml_unmarked(e, text, name) from None
        except RecursionError:
            raise _fail(name, 1, 1, "YAML nested too deeply") from None
        if root is None:
            raise _fail(name, 1, 1, "the file is empty")
        loc = _Located(None)
        count = [0]

        def mk(node: yaml.Node) -> Mark:
            return (node.start_mark.line + 1, node.start_mark.column + 1)

        def build(node: yaml.Node, path: Path_ | None, depth: int) -> Any:
            """The value of ``node``; records marks under ``path`` (None: a key, no record)."""
            count[0] += 1
            if count[0] > MAX_NODES:
                raise _fail(name, *mk(node), f"more than {MAX_NODES} values (alias expansion?)")
            if depth > MAX_NESTING:
                raise _fail(name, *mk(node), f"nested deeper than {MAX_NESTING} levels "
                            "(or a recursive alias)")
            if path is None:
                return loader.construct_object(node, deep=True)
            loc.values[path] = mk(node)
            if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and node.tag not in _YAML_TAGS:
                raise _fail(name, *mk(node), f"unsupported YAML tag {node.tag!r}", path)
            if isinstance(node, yaml.MappingNode):
                explicit = {id(k) for k, _ in node.value}
                loader.flatten_mapping(node)  # merge keys (<<): merged pairs come first
                out: dict[Any, Any] = {}
                from_file: set[Any] = set()
                for knode, vnode in node.value:
                    if not isinstance(knode, yaml.ScalarNode):
                        raise _fail(name, *mk(knode), "a mapping key must be a plain value")
                    key = build(knode, None, depth + 1)
                    if id(knode) in explicit:
                        if key in from_file:
                            raise _fail(name, *mk(knode), f"duplicate key {key!r}", (*path, key))
                        from_file.add(key)
                    loc.keys[(*path, key)] = mk(knode)
                    out[key] = build(vnode, (*path, key), depth + 1)
                return out
            if isinstance(node, yaml.SequenceNode):
                return [build(v, (*path, i), depth + 1) for i, v in enumerate(node.value)]
            return loader.construct_object(node, deep=True)

        try:
            loc.data = build(root, (), 0)
        except yaml.MarkedYAMLError as e:
            m = e.problem_mark or e.context_mark
            line, col = (m.line + 1, m.column + 1) if m else (1, 1)
            raise _fail(name, line, col, f"YAML: {e.problem or e.context or e}") from None
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as e:
            if isinstance(e, SpecError):
                raise
            raise _fail(name, 1, 1, f"YAML: {e}") from None
        return loc
    finally:
        loader.dispose()


# ----------------------------------------------------------------------------- JSON

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = json.scanner.NUMBER_RE
_scanstring = json.decoder.scanstring


class _JsonReader:
    """Strict JSON with the position of every value and key."""

    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.name = name
        self.loc = _Located(None)
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.nodes = 0

    def mark(self, pos: int) -> Mark:
        line = bisect.bisect_right(self.starts, pos)
        return (line, pos - self.starts[line - 1] + 1)

    def fail(self, pos: int, msg: str) -> SpecError:
        return _fail(self.name, *self.mark(pos), f"JSON: {msg}")

    def ws(self, pos: int) -> int:
        return _WS.match(self.text, pos).end()  # type: ignore[union-attr]

    def read(self) -> _Located:
        pos = self.ws(0)
        if pos == len(self.text):
            raise self.fail(pos, "the file is empty")
        self.loc.data, pos = self.value(pos, (), 0)
        pos = self.ws(pos)
        if pos != len(self.text):
            raise self.fail(pos, "extra data after the top-level value")
        return self.loc

    def string(self, pos: int) -> tuple[str, int]:
        try:
            return _scanstring(self.text, pos + 1, True)
        except json.JSONDecodeError as e:
            raise self.fail(e.pos, e.msg) from None

    def value(self, pos: int, path: Path_, depth: int) -> tuple[Any, int]:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(pos, f"more than {MAX_NODES} values")
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
                    raise _fail(self.name, *self.mark(kpos), f"JSON: duplicate key {key!r}",
                                (*path, key))
                pos = self.ws(pos)
                if not text.startswith(":", pos):
                    raise self.fail(pos, "expected ':' after the key")
                self.loc.keys[(*path, key)] = self.mark(kpos)
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
        return int(integer), m.end()


def _load_json(text: str, name: str) -> _Located:
    return _JsonReader(text, name).read()


# ----------------------------------------------------------------------------- TOML

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


def _load_toml(text: str, name: str) -> tuple[Any, _TomlLocator]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = _TOML_ERR_POS.search(str(e))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (1, 1)
        msg = _TOML_ERR_POS.sub("", str(e)).strip()
        raise _fail(name, line, col, f"TOML: {msg}") from None
    except (RecursionError, ValueError) as e:
        raise _fail(name, 1, 1, f"TOML: {e}") from None
    return data, _TomlLocator(text)


# ----------------------------------------------------------------------------- pydantic errors

_SCALAR_ERRORS = {"int_type", "int_parsing", "int_from_float", "string_type", "literal_error",
                  "bool_type", "bool_parsing", "float_type", "float_parsing", "greater_than_equal",
                  "greater_than", "string_too_short"}
_CONTAINER_ERRORS = {"model_type", "model_attributes_type", "dict_type", "list_type", "tuple_type"}


def _data_path(data: Any, loc: Sequence[Any], etype: str) -> tuple[Path_, Path_ | None]:
    """Map a pydantic ``loc`` onto the data: (path, path of the union node if a member tag was
    skipped).  Union member tags (``int``, ``SizeRange``, ``literal['barrier']``) are not
    in the data and are dropped; a missing field's name is kept."""
    cur: Any = data
    out: list[Any] = []
    union_at: Path_ | None = None
    present = True
    for i, comp in enumerate(loc):
        if present and isinstance(cur, dict) and comp in cur:
            out.append(comp)
            cur = cur[comp]
        elif (present and isinstance(cur, list) and isinstance(comp, int)
              and 0 <= comp < len(cur)):
            out.append(comp)
            cur = cur[comp]
        elif i == len(loc) - 1 and etype == "missing":
            out.append(comp)
            present = False
        elif isinstance(comp, str) and present:
            if union_at is None:
                union_at = tuple(out)
        else:
            out.append(comp)
            present = False
    return tuple(out), union_at


_COMMA_HINT = ("; in a YAML flow list [a, b] a comma splits items: quote expressions that "
               "contain commas, e.g. [\"ceil_div(M, 16)\", \"ceil_div(N, 16)\"]")


def _unbalanced(value: Any) -> bool:
    """A string (or a list holding one) with unbalanced parentheses: the mark of an
    expression that a YAML flow list split at its comma."""
    items = value if isinstance(value, list) else [value]
    return any(isinstance(x, str) and x.count("(") != x.count(")") for x in items)


def _message(err: Mapping[str, Any]) -> str:
    etype = err["type"]
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if etype == "missing":
        return f"missing required field {err['loc'][-1]!r}"
    if etype == "extra_forbidden":
        return f"unknown field {err['loc'][-1]!r}"
    if etype in _SCALAR_ERRORS | _CONTAINER_ERRORS and "input" in err:
        shown = repr(err["input"])
        if len(shown) > 40:
            shown = shown[:37] + "..."
        msg = f"{msg} (got {shown})"
    if _unbalanced(err.get("input")):
        msg += _COMMA_HINT
    return msg


def _pydantic_errors(e: ValidationError, data: Any, errs: _Errors) -> None:
    items = []
    for err in e.errors(include_url=False):
        path, union_at = _data_path(data, err["loc"], err["type"])
        items.append((err, path, union_at))

    def noise(item: tuple[Mapping[str, Any], Path_, Path_ | None]) -> bool:
        err, path, union_at = item
        if union_at is None or path != union_at:
            return False
        node: Any = data
        for c in path:
            node = node[c]
        if isinstance(node, dict | list):
            return err["type"] in _SCALAR_ERRORS
        return err["type"] in _CONTAINER_ERRORS

    # drop a union member's "wrong kind of value" errors, unless every error about that
    # union node is one (then they all stay: "valid integer or: valid string")
    groups: dict[Path_ | None, list[bool]] = {}
    flags = [noise(it) for it in items]
    for it, f in zip(items, flags):
        groups.setdefault(it[2], []).append(f)
    kept = [it for it, f in zip(items, flags) if not f or all(groups[it[2]])]
    merged: dict[tuple[Path_, bool], list[str]] = {}
    for err, path, _ in kept:
        merged.setdefault((path, err["type"] == "extra_forbidden"), [])
        m = _message(err)
        if m not in merged[(path, err["type"] == "extra_forbidden")]:
            merged[(path, err["type"] == "extra_forbidden")].append(m)
    for (path, is_key), msgs in merged.items():
        errs.add(path, " or: ".join(msgs), key=is_key)


# ----------------------------------------------------------------------------- the loaded spec


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec and what running it needs.

    ``envs`` are the size environments (name -> value) the enumerative checks run: one
    when every size is fixed, otherwise the samples of the ranges (see
    :func:`default_samples` and :func:`sample_envs`).  ``max_env`` sets every range to its
    largest allowed value (used for bounds).
    """

    spec: Spec
    path: Path
    format: Format
    envs: tuple[dict[str, int], ...]
    max_env: dict[str, int]
    _locate: Callable[[Path_, bool], Mark] = field(repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.spec.name

    def eval(self, expr: int | str, env: Mapping[str, int]) -> int:
        """Evaluate a spec expression (sizes from ``env``; add ``bx``/``by``/``bz`` for ``at``)."""
        return evaluate(expr, env)

    def threads(self, env: Mapping[str, int]) -> int:
        """Threads per CTA under ``env``."""
        return evaluate(self.spec.threads, env)

    def grid(self, env: Mapping[str, int]) -> tuple[int, int, int]:
        """Grid extents (x, y, z) under ``env``; missing entries are 1."""
        g = [evaluate(x, env) for x in self.spec.grid] + [1, 1]
        return (g[0], g[1], g[2])

    def layout(self, text: str, env: Mapping[str, int]) -> Any:
        """Parse a layout string of the spec with the named sizes of ``env``."""
        return parse_layout(text, env)

    def where(self, *path: Any) -> str:
        """``FILE:LINE:COL`` of a field, e.g. ``where('stages', 0, 'copy', 'src')``."""
        line, col = self._locate(tuple(path), False)
        return f"{self.path}:{line}:{col}"

    def error(self, path: Sequence[Any], msg: str) -> SpecError:
        """A :class:`SpecError` located at ``path`` (for problems found later, e.g. by the
        simulator): ``FILE:LINE:COL: field.path: msg``."""
        return SpecError(f"{self.where(*path)}: {_fmt_path(path)}: {msg}")


def default_samples(rng: SizeRange, tiles: Sequence[int] = ()) -> list[int]:
    """Sample values for a size range when it gives no ``samples``.

    With ``m = multiple_of``, ``lo``/``hi`` the smallest/largest multiples of ``m`` in
    ``[min, max]`` and ``t`` the largest constant tile extent of the spec:
    ``lo``; ``hi`` if ``hi <= 4096``; ``t`` and ``2*t`` (whole tiles); ``t + m`` and
    ``2*t - m`` (non-multiples of the tile, when ``m`` does not divide into whole tiles);
    all rounded to multiples of ``m`` and kept inside ``[lo, min(hi, 4096)]``, sorted.
    """
    m = rng.multiple_of
    lo = -(-rng.min // m) * m
    hi = rng.max // m * m
    if lo > hi:
        return []
    cap = min(hi, max(lo, DEFAULT_SAMPLE_CAP))
    out = {lo}
    if hi <= DEFAULT_SAMPLE_CAP:
        out.add(hi)
    t = max(tiles, default=0)
    if t > 0:
        for v in (t, 2 * t, t + m, 2 * t - m):
            v = v // m * m
            if lo <= v <= cap:
                out.add(v)
    return sorted(out)


def sample_envs(sizes: Mapping[str, int | SizeRange], tiles: Sequence[int] = ()) -> list[dict[str, int]]:
    """The size environments to run: the cross product of every range's samples (given or
    :func:`default_samples`), or, if that exceeds :data:`MAX_ENVS`, the "diagonal" where
    environment ``i`` takes sample ``i mod len`` of each range.  Fixed sizes are constant."""
    fixed = {k: v for k, v in sizes.items() if isinstance(v, int)}
    ranges = {k: v for k, v in sizes.items() if isinstance(v, SizeRange)}
    if not ranges:
        return [dict(fixed)]
    samples = {k: (list(r.samples) if r.samples else default_samples(r, tiles)) for k, r in ranges.items()}
    total = 1
    for s in samples.values():
        total *= max(1, len(s))
    names = list(samples)
    if total <= MAX_ENVS:
        combos: Iterator[tuple[int, ...]] = itertools.product(*(samples[k] for k in names))
    else:
        n = max(len(s) for s in samples.values())
        combos = (tuple(samples[k][i % len(samples[k])] for k in names) for i in range(n))
    return [{**fixed, **dict(zip(names, c))} for c in combos]


def _max_env(sizes: Mapping[str, int | SizeRange]) -> dict[str, int]:
    return {k: (v if isinstance(v, int) else v.max // v.multiple_of * v.multiple_of)
            for k, v in sizes.items()}


def _layout_names(text: str) -> list[str]:
    """Names used in a CuTe layout string (the ``Sw`` of swizzles and the ``o`` of
    composition excluded)."""
    return [n for n in _LAYOUT_NAME.findall(text) if n not in ("o", "Sw")]


def _sides(spec: Spec) -> Iterator[tuple[int, str, Side]]:
    for i, st in enumerate(spec.stages):
        if isinstance(st, Copy):
            yield i, "src", st.copy_.src
            yield i, "dst", st.copy_.dst


def _layout_fields(spec: Spec) -> Iterator[tuple[Path_, str]]:
    """Every layout string of the spec with its path."""
    for name, t in spec.tensors.items():
        yield ("tensors", name, "layout"), t.layout
    for i, which, side in _sides(spec):
        base: Path_ = ("stages", i, "copy", which)
        if side.threads is not None:
            yield (*base, "threads"), side.threads
        if side.tiled_copy is not None:
            yield (*base, "tiled_copy", "threads"), side.tiled_copy.threads
            yield (*base, "tiled_copy", "values"), side.tiled_copy.values
        if side.mma is not None:
            yield (*base, "mma", "atom_layout"), side.mma.atom_layout


def _const_tiles(spec: Spec) -> list[int]:
    out: list[int] = []
    for _, _, side in _sides(spec):
        for x in side.tile or []:
            try:
                e = parse_expr(x)
                if e.is_const():
                    out.append(e.eval({}))
            except SpecError:
                pass
        if side.thread_map is not None:
            out.extend(side.thread_map.shape)
    return [t for t in out if 0 < t <= MAX_EXTENT]


def _env_note(env: Mapping[str, int], spec: Spec) -> str:
    ranged = [k for k, v in spec.sizes.items() if isinstance(v, SizeRange)]
    if not ranged:
        return ""
    return " (with " + ", ".join(f"{k}={env[k]}" for k in ranged) + ")"


def check_semantics(spec: Spec, errs: _Errors) -> tuple[list[dict[str, int]], dict[str, int]]:
    """What the models cannot check; adds located problems to ``errs``.  Returns the size
    environments and the max environment (meaningful only when no problem was added).

    * sizes: every value, range bound and sample is at most 2^31 (one dimension); a range has
      a multiple of ``multiple_of`` inside it; samples lie in the range and are multiples;
    * names: every name in an expression or layout is a defined size (``at`` may also use
      ``bx``, ``by``, ``bz``);
    * references: stage tensors exist; a register fragment is written (as a ``dst``) before
      it is read (as a ``src``); ``alias`` names an existing shared tensor (chains are
      followed, cycles rejected) and the view fits in the buffer;
    * for every size environment (samples and the max): ``threads`` is 1..1024; grid entries
      are >= 1 and within CUDA's limits; layouts parse, every mode extent is <= 2^31 and
      size/cosize <= 2^40; shared memory fits 227 KiB; tile rank == at rank <= tensor
      rank, tile extents in 1..2^31; every thread layout (``threads``, ``tiled_copy.threads``,
      ``thread_map.threads``) has exactly ``threads`` threads.
    """
    defined = set(spec.sizes)
    n0 = len(errs.lines)

    # -- sizes
    for k, v in spec.sizes.items():
        p: Path_ = ("sizes", k)
        if not _SIZE_NAME.fullmatch(k) or k in ("o", "Sw"):
            errs.add(p, f"size name {k!r} cannot be used in layouts; use ASCII letters, digits "
                     "and '_', starting with a letter (not 'o' or 'Sw')", key=True)
            continue
        if isinstance(v, int):
            if v > MAX_EXTENT:
                errs.add(p, f"size {k} = {v} is huge; one dimension is at most 2^31 = {MAX_EXTENT}")
            continue
        if v.max > MAX_EXTENT:
            errs.add((*p, "max"), f"range max {v.max} is huge; one dimension is at most 2^31")
            continue
        if v.multiple_of > v.max or -(-v.min // v.multiple_of) * v.multiple_of > v.max:
            errs.add(p, f"no multiple of {v.multiple_of} lies in [{v.min}, {v.max}]")
            continue
        if v.samples is not None:
            if not v.samples:
                errs.add((*p, "samples"), "samples is empty; omit it for the default samples")
            if len(v.samples) > MAX_SAMPLES:
                errs.add((*p, "samples"), f"more than {MAX_SAMPLES} samples")
            for j, s in enumerate(v.samples[:MAX_SAMPLES]):
                if not v.min <= s <= v.max or s % v.multiple_of:
                    errs.add((*p, "samples", j), f"sample {s} is not in [{v.min}, {v.max}] "
                             f"or not a multiple of {v.multiple_of}")

    # -- names in expressions and layouts
    exprs: list[tuple[Path_, Any, set[str]]] = [(("threads",), spec.threads, defined)]
    exprs += [(("grid", i), g, defined) for i, g in enumerate(spec.grid)]
    for i, which, side in _sides(spec):
        base: Path_ = ("stages", i, "copy", which)
        exprs += [((*base, "tile", j), t, defined) for j, t in enumerate(side.tile or [])]
        exprs += [((*base, "at", j), a, defined | set(BLOCK_NAMES)) for j, a in enumerate(side.at or [])]
    bad_expr: set[Path_] = set()
    for p, x, names in exprs:
        try:
            e = parse_expr(x)
        except SpecError as ex:
            errs.add(p, str(ex) + (_COMMA_HINT if _unbalanced(x) else ""))
            bad_expr.add(p)
            continue
        undefined = sorted(e.names() - names)
        if undefined:
            errs.add(p, f"undefined name {undefined[0]!r} in {str(x)!r}"
                     f"{'' if p[-2] == 'at' else ' (names here are the sizes)'}; "
                     f"defined: {', '.join(sorted(names)) or 'none'}")
            bad_expr.add(p)
    bad_layout: set[Path_] = set()
    for p, text in _layout_fields(spec):
        undefined = sorted(set(_layout_names(text)) - defined)
        if undefined:
            errs.add(p, f"undefined name {undefined[0]!r} in layout {text!r}; "
                     f"defined sizes: {', '.join(sorted(defined)) or 'none'}")
            bad_layout.add(p)

    # -- references
    for name, t in spec.tensors.items():
        if t.alias is None:
            continue
        p = ("tensors", name, "alias")
        if t.memory != "shared":
            errs.add(p, "only shared tensors can alias a buffer")
        seen = {name}
        cur = t.alias
        while True:
            if cur not in spec.tensors:
                errs.add(p, f"alias target {cur!r} is not a tensor")
                break
            if cur in seen:
                errs.add(p, f"alias cycle through {cur!r}")
                break
            if spec.tensors[cur].memory != "shared":
                errs.add(p, f"alias target {cur!r} is in {spec.tensors[cur].memory} memory, not shared")
                break
            seen.add(cur)
            if spec.tensors[cur].alias is None:
                break
            cur = spec.tensors[cur].alias  # type: ignore[assignment]
    written: set[str] = set()
    for i, st in enumerate(spec.stages):
        if not isinstance(st, Copy):
            continue
        for which in ("src", "dst"):
            side = getattr(st.copy_, which)
            p = ("stages", i, "copy", which)
            if side.tensor is not None and side.tensor not in spec.tensors:
                errs.add((*p, "tensor"), f"tensor {side.tensor!r} is not defined; tensors: "
                         f"{', '.join(spec.tensors) or 'none'}")
            if side.registers is not None:
                if which == "src" and side.registers not in written:
                    errs.add((*p, "registers"), f"register fragment {side.registers!r} is read "
                             "before any stage writes it")
                if side.tile is not None:
                    errs.add((*p, "tile"), "a register side has no tile")
        if st.copy_.dst.registers is not None:
            written.add(st.copy_.dst.registers)

    if len(errs.lines) > n0:
        return [], {}

    # -- evaluated checks, per environment
    envs = sample_envs(spec.sizes, _const_tiles(spec))
    max_env = _max_env(spec.sizes)
    check_envs = envs + ([max_env] if max_env not in envs else [])
    for env in check_envs:
        note = _env_note(env, spec)

        def ev(p: Path_, x: Any, env: Mapping[str, int] = env, note: str = note) -> int | None:
            try:
                return evaluate(x, env)
            except SpecError as ex:
                errs.add(p, f"{ex}{note}")
                return None

        threads = ev(("threads",), spec.threads)
        if threads is not None and not 1 <= threads <= MAX_THREADS:
            errs.add(("threads",), f"threads = {threads}{note}; a CTA has 1..{MAX_THREADS} threads")
            threads = None
        for i, g in enumerate(spec.grid):
            gv = ev(("grid", i), g)
            if gv is not None and not 1 <= gv <= MAX_GRID[i]:
                errs.add(("grid", i), f"grid entry {i} = {gv}{note}; it must be in 1..{MAX_GRID[i]}")

        layouts: dict[Path_, Any] = {}
        for p, text in _layout_fields(spec):
            try:
                lay = parse_layout(text, env)
                n, cn = size(lay), cosize(lay)
                modes = _flat_shape(layout_shape(lay))
            except (ThreadmapError, RecursionError, TypeError, ValueError) as ex:
                errs.add(p, f"{ex}{note}")
                continue
            if any(m > MAX_EXTENT for m in modes) or n > MAX_ELEMENTS or cn > MAX_ELEMENTS:
                errs.add(p, f"layout {text!r} is huge{note}: size {n}, cosize {cn}; "
                         f"limits are 2^31 per mode and 2^40 elements")
                continue
            layouts[p] = lay

        smem = 0
        for name, t in spec.tensors.items():
            lay = layouts.get(("tensors", name, "layout"))
            if lay is None or t.memory != "shared":
                continue
            nbytes = (t.offset + cosize(lay)) * ELEMENT_BITS[t.element or spec.element] // 8
            if t.alias is None:
                smem += nbytes
                continue
            root = t.alias
            while spec.tensors[root].alias is not None:
                root = spec.tensors[root].alias  # type: ignore[assignment]
            rl = layouts.get(("tensors", root, "layout"))
            rt = spec.tensors[root]
            if rl is not None:
                rbytes = (rt.offset + cosize(rl)) * ELEMENT_BITS[rt.element or spec.element] // 8
                if nbytes > rbytes:
                    errs.add(("tensors", name, "layout"), f"view of {nbytes} bytes (offset included) "
                             f"exceeds its buffer {root!r} of {rbytes} bytes{note}")
        if smem > MAX_SHARED_BYTES:
            errs.add(("tensors",), f"shared tensors need {smem} bytes{note}; a CTA has at most "
                     f"{MAX_SHARED_BYTES} bytes of shared memory")

        for i, which, side in _sides(spec):
            base = ("stages", i, "copy", which)
            if side.tile is not None and side.at is not None and side.tensor in spec.tensors:
                tl = layouts.get(("tensors", side.tensor, "layout"))
                if len(side.tile) != len(side.at):
                    errs.add((*base, "at"), f"'at' has {len(side.at)} coordinates but 'tile' has "
                             f"{len(side.tile)} extents")
                elif tl is not None and len(side.tile) > rank(tl):
                    errs.add((*base, "tile"), f"tile has rank {len(side.tile)} but tensor "
                             f"{side.tensor!r} has rank {rank(tl)}")
                for j, x in enumerate(side.tile):
                    v = ev((*base, "tile", j), x)
                    if v is not None and not 1 <= v <= MAX_EXTENT:
                        errs.add((*base, "tile", j), f"tile extent {v}{note} must be in 1..2^31")
                benv = {**env, "bx": 0, "by": 0, "bz": 0}
                for j, x in enumerate(side.at):
                    ev((*base, "at", j), x, benv)
            if threads is None:
                continue
            for sub in ("threads", ("tiled_copy", "threads")):
                p = (*base, sub) if isinstance(sub, str) else (*base, *sub)
                lay = layouts.get(p)
                if lay is not None and size(lay) != threads:
                    errs.add(p, f"thread layout has {size(lay)} threads, but threads = {threads}{note}")
            if side.thread_map is not None and side.thread_map.threads != threads:
                errs.add((*base, "thread_map", "threads"), f"thread map has {side.thread_map.threads} "
                         f"threads, but threads = {threads}{note}")
        if len(errs.lines) > n0:
            break
    return envs, max_env


def _flat_shape(shape: Any) -> list[int]:
    if shape is None:
        return []
    if isinstance(shape, tuple):
        return [x for s in shape for x in _flat_shape(s)]
    return [shape] if isinstance(shape, int) else []


# ----------------------------------------------------------------------------- entry points


def _format_of(path: Path) -> Format:
    fmt = SPEC_SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise SpecError(f"{path}:1:1: (file): unknown spec file type {path.suffix!r}; "
                        f"use .yaml, .yml, .toml or .json")
    return fmt  # type: ignore[return-value]


def loads_spec(text: str, fmt: Format, name: str | Path = "<string>") -> LoadedSpec:
    """Parse and validate spec text in format ``fmt``; ``name`` is used in messages."""
    sname = str(name)
    if len(text) > MAX_FILE_BYTES:
        raise _fail(sname, 1, 1, f"spec text longer than {MAX_FILE_BYTES} characters")
    locate: Callable[[Path_, bool], Mark]
    if fmt == "yaml":
        loc = _load_yaml(text, sname)
        data, locate = loc.data, loc.locate
    elif fmt == "json":
        loc = _load_json(text, sname)
        data, locate = loc.data, loc.locate
    elif fmt == "toml":
        data, locate = _load_toml(text, sname)
    else:
        raise SpecError(f"{sname}:1:1: (file): unknown format {fmt!r}")
    if not isinstance(data, dict):
        raise SpecError(f"{sname}:{':'.join(map(str, locate((), False)))}: (top level): "
                        f"a spec is a mapping of fields (spec, name, threads, ...), "
                        f"got {type(data).__name__}")
    errs = _Errors(sname, locate)
    try:
        spec = Spec.model_validate(data)
    except ValidationError as e:
        _pydantic_errors(e, data, errs)
        errs.raise_()
        raise SpecError(f"{sname}:1:1: (top level): {e}") from None  # unreachable in practice
    envs, max_env = check_semantics(spec, errs)
    errs.raise_()
    return LoadedSpec(spec=spec, path=Path(name), format=fmt, envs=tuple(envs), max_env=max_env,
                      _locate=locate)


def load_spec(path: str | Path) -> LoadedSpec:
    """Load, validate and check a spec file (.yaml/.yml, .toml, .json).

    Raises :class:`SpecError` (message ``FILE:LINE:COL: field.path: message``, one line per
    problem) for unreadable files, syntax errors, schema violations and the semantic
    problems listed in :func:`check_semantics`.
    """
    p = Path(path)
    fmt = _format_of(p)
    try:
        with p.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise SpecError(f"{p}:1:1: (file): cannot read: {e.strerror or e}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError(f"{p}:1:1: (file): larger than {MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise SpecError(f"{p}:{line}:1: (file): not UTF-8 text ({e.reason})") from None
    return loads_spec(text, fmt, p)


def iter_spec_files(path: str | Path) -> list[Path]:
    """Spec files under ``path`` (itself if a file), sorted; JSON Schema files
    (``*.schema.json``) are skipped."""
    p = Path(path)
    if p.is_file():
        return [p]
    return sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in SPEC_SUFFIXES
                  and not f.name.endswith(".schema.json"))
