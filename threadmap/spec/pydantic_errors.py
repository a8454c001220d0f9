"""pydantic validation errors -> located spec errors (one line per problem, at the data path)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from threadmap.spec.located import Errors, Path_

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


COMMA_HINT = ("; in a YAML flow list [a, b] a comma splits items: quote expressions that "
               "contain commas, e.g. [\"ceil_div(M, 16)\", \"ceil_div(N, 16)\"]")


def unbalanced(value: Any) -> bool:
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
    if unbalanced(err.get("input")):
        msg += COMMA_HINT
    return msg


def report_validation_errors(e: ValidationError, data: Any, errs: Errors) -> None:
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


