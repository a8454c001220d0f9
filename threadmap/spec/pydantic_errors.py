"""pydantic validation errors -> located spec errors (one line per problem, at the data path).

A pydantic ``loc`` is not a data path: it holds union member tags (``int``, ``SizeRange``,
``literal['barrier']``, ``function-after[...]``) that are not in the data, ``'[key]'`` for a
problem with a mapping key, the ``repr`` of keys that are neither strings nor integers
(``'None'``, ``'1.5'``), and, for a missing field, a name that the data lacks.
:func:`_data_path` maps it back onto the data; every step tolerates any ``loc`` and any data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, get_args

from pydantic import ValidationError

from threadmap.spec.located import Errors, Path_, gc_paused, show
from threadmap.spec.schema import BareOp

_SCALAR_ERRORS = {"int_type", "int_parsing", "int_from_float", "string_type", "literal_error",
                  "bool_type", "bool_parsing", "float_type", "float_parsing", "greater_than_equal",
                  "greater_than", "string_too_short", "finite_number", "int_parsing_size"}
_CONTAINER_ERRORS = {"model_type", "model_attributes_type", "dict_type", "list_type", "tuple_type"}
_KEY_ERRORS = {"extra_forbidden", "invalid_key"}  # about the key itself: located at the key
_MISSING = object()
MAX_MAPPED = 10_000  # pydantic errors mapped onto the data; more are only counted


class _Keys:
    """Finds the data key a ``loc`` component names: pydantic writes keys that are neither
    strings nor integers by ``repr`` (``'None'``, ``'1.5'``), and YAML's ``true`` as 1."""

    def __init__(self) -> None:
        self.tables: dict[int, dict[Any, Any]] = {}  # id(mapping) -> name -> key

    def table(self, d: dict[Any, Any]) -> dict[Any, Any]:
        t = self.tables.get(id(d))
        if t is None:
            t = self.tables[id(d)] = {}
            for k in d:
                if isinstance(k, bool):
                    t[("bool", int(k))] = k
                if not isinstance(k, str):
                    t[show_key(k)] = k
        return t

    def find(self, d: dict[Any, Any], comp: Any) -> Any:
        try:
            found = comp in d
        except TypeError:  # unhashable: no key is it
            return _MISSING
        if found:
            if type(comp) is int and comp in (0, 1):  # maybe the bool key that equals it
                return self.table(d).get(("bool", comp), comp)
            return comp
        return self.table(d).get(comp, _MISSING) if isinstance(comp, str) else _MISSING


def show_key(k: Any) -> str:
    try:
        return repr(k)
    except ValueError:  # an int past 4300 digits (readers reject them; be safe anyway)
        return show(k)


def _data_path(data: Any, loc: Sequence[Any], etype: str,
               keys: _Keys | None = None) -> tuple[Path_, Path_ | None, bool]:
    """Map a pydantic ``loc`` onto the data: (path, path of the union node if a member tag
    was skipped, whether the problem is the key at ``path``).  Union member tags are dropped;
    a missing field's name is kept; ``'[key]'`` ends the path at the key it follows."""
    keys = keys or _Keys()
    cur: Any = data
    out: list[Any] = []
    union_at: Path_ | None = None
    present = True
    for i, comp in enumerate(loc):
        if present and isinstance(cur, dict):
            k = keys.find(cur, comp)
            if k is not _MISSING:
                out.append(k)
                cur = cur[k]
                continue
        elif (present and isinstance(cur, list) and isinstance(comp, int)
              and not isinstance(comp, bool) and 0 <= comp < len(cur)):
            out.append(comp)
            cur = cur[comp]
            continue
        if comp == "[key]" and i == len(loc) - 1 and out:  # the problem is the key
            return tuple(out), union_at, True
        if i == len(loc) - 1 and etype == "missing":
            out.append(comp)
            present = False
        elif isinstance(comp, str) and present:
            if union_at is None:
                union_at = tuple(out)
        else:
            out.append(comp)
            present = False
    return tuple(out), union_at, etype in _KEY_ERRORS


def _node(data: Any, path: Path_) -> Any:
    """The data at ``path``, or ``_MISSING``."""
    node = data
    for c in path:
        try:
            node = node[c]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return node


COMMA_HINT = ("; in a YAML flow list [a, b] a comma splits items: quote expressions that "
               "contain commas, e.g. [\"ceil_div(M, 16)\", \"ceil_div(N, 16)\"]")


LAYOUT_HINT = ("; inside a YAML flow mapping {...} a colon and a comma split an unquoted layout into "
               "keys: quote it, e.g. layout: \"(M,N):(N,1)\"")
#: the pipeline operations written as a bare word; given a value they are read as a mapping
#: with an unknown key
BARE_OPS = frozenset(get_args(BareOp))
BOOL_HINT = "; YAML reads an unquoted yes/no/on/off/true/false as a boolean: quote the word"


def unbalanced(value: Any) -> bool:
    """A string (or a list holding one) with unbalanced parentheses: the mark of an
    expression that a YAML flow list split at its comma."""
    items = value if isinstance(value, list) else [value]
    return any(isinstance(x, str) and x.count("(") != x.count(")") for x in items)


class _Problem(NamedTuple):
    """One pydantic error, mapped onto the data."""

    etype: str
    msg: str
    field: Any  # the last loc component: the field a "missing"/"unknown" error names
    path: Path_
    union_at: Path_ | None
    is_key: bool


def _message(p: _Problem, data: Any) -> str:
    """The problem in words; the offending input is taken from the data (the key, for a
    key problem) rather than from pydantic, whose copies of 10^5 inputs cost ~100 MB."""
    msg = p.msg.removeprefix("Value error, ")
    if p.etype == "missing":
        return f"missing required field {show(p.field)}"
    if p.etype == "extra_forbidden":
        hint = LAYOUT_HINT if isinstance(p.field, str) and any(c in p.field for c in "():") else ""
        if p.field in BARE_OPS:
            hint = f"; {p.field} is a pipeline operation without arguments: write it alone, - {p.field}"
        return f"unknown field {show(p.field)}{hint}"
    value = (p.path[-1] if p.path else _MISSING) if p.is_key else _node(data, p.path)
    if value is _MISSING:
        return msg
    if p.etype in _SCALAR_ERRORS | _CONTAINER_ERRORS | _KEY_ERRORS:
        msg = f"{msg} (got {show(value)})"
    if unbalanced(value):
        msg += COMMA_HINT
    if isinstance(value, bool) and p.etype in ("string_type", "literal_error"):
        msg += BOOL_HINT
    return msg


def report_validation_errors(e: ValidationError, data: Any, errs: Errors) -> None:
    with gc_paused():
        _report(e, data, errs)


def _report(e: ValidationError, data: Any, errs: Errors) -> None:
    keys = _Keys()
    problems: list[_Problem] = []
    errors = e.errors(include_url=False, include_context=False, include_input=False)
    # 10^5 values can make 2*10^5 errors (a union per list item): map enough to list the
    # first problems and count many, and say how many more there are
    errs.unexamined += max(0, len(errors) - MAX_MAPPED)
    del errors[MAX_MAPPED:]
    for err in errors:
        loc, etype = err.get("loc") or (), err.get("type", "")
        path, union_at, is_key = _data_path(data, loc, etype, keys)
        problems.append(_Problem(etype, str(err.get("msg", etype)), loc[-1] if loc else "?",
                                 path, union_at, is_key))

    def noise(p: _Problem) -> bool:
        """A union member's "wrong kind of value" error (e.g. "not an int" for a mapping)."""
        if p.union_at is None or p.path != p.union_at or p.is_key:
            return False
        node = _node(data, p.path)
        if node is _MISSING:
            return False
        if isinstance(node, dict | list):
            return p.etype in _SCALAR_ERRORS
        return p.etype in _CONTAINER_ERRORS

    # drop a union member's "wrong kind of value" errors, unless every error about that
    # union node is one (then they all stay: "valid integer or: valid string")
    flags = [noise(p) for p in problems]
    all_noise: dict[Path_ | None, bool] = {}
    for p, f in zip(problems, flags):
        all_noise[p.union_at] = all_noise.get(p.union_at, True) and f
    merged: dict[tuple[Path_, bool], list[_Problem]] = {}
    for p, f in zip(problems, flags):
        if not f or all_noise[p.union_at]:
            merged.setdefault((p.path, p.is_key), []).append(p)
    for (path, is_key), group in merged.items():
        if errs.full:  # past the listed problems: count, do not word
            errs.count((path, is_key, "schema"))
            continue
        msgs: list[str] = []
        for p in group:
            m = _message(p, data)
            if m not in msgs:
                msgs.append(m)
        errs.add(path, " or: ".join(msgs), key=is_key)
