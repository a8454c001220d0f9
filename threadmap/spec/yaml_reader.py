"""YAML spec text -> data with the position of every value and key.

The node tree (``yaml.compose`` with the safe loader) gives the mark of every key and value;
values are built from the nodes by PyYAML's *safe* constructors, except integers, which are
read here with their size bounded (PyYAML's are unbounded, and its sexagesimal ``1:20:30``
form takes quadratic time on long input).  Before composing, the events are counted so
that a huge document fails fast instead of filling memory with nodes; alias expansion is
bounded (:data:`MAX_NODES`), and so are merge keys (``<<``), resolved here; duplicate keys,
binary values and collection tags other than map/seq are errors.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from threadmap.errors import SpecError
from threadmap.spec.located import (
    MAX_NESTING,
    MAX_NODES,
    Errors,
    Located,
    Mark,
    Path_,
    bounded_int,
    check_data,
    fail,
    gc_paused,
    int64_problem,
    show,
    surrogate_in_text,
    too_big,
)

__all__ = ["MAX_NESTING", "MAX_NODES", "load_yaml"]

#: libyaml's safe loader when PyYAML has it (5-10x faster), else the pure-Python one; both
#: give node marks and construct with SafeConstructor only
_YamlLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YAML_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")
_INT_TAG = "tag:yaml.org,2002:int"
_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"
_BINARY_TAG = "tag:yaml.org,2002:binary"

# YAML 1.1 integers as PyYAML reads them (after removing '_' and the sign); explicit
# ``!!int`` text is held to the same forms (plus ``0o``, which PyYAML's int(x, 8) takes)
_INT_FORMS: list[tuple[re.Pattern[str], int, int]] = [  # (form, base, prefix length)
    (re.compile(r"0b[01]+"), 2, 2),
    (re.compile(r"0x[0-9a-fA-F]+"), 16, 2),
    (re.compile(r"0o[0-7]+"), 8, 2),
    (re.compile(r"0[0-7]+"), 8, 1),
    (re.compile(r"0|[1-9][0-9]*"), 10, 0),
]
_SEXAGESIMAL = re.compile(r"[0-9]+(?::[0-9]+)+")  # 1:20:30 = (1*60 + 20)*60 + 30


def yaml_int(text: str) -> int | str:
    """The value of YAML 1.1 integer text, or why it is not one (e.g. not in 64 bits).
    Never converts more digits than fit in 64 bits."""
    v = text.replace("_", "")
    negative = v.startswith("-")
    v = v[1:] if v[:1] in ("-", "+") else v
    if _SEXAGESIMAL.fullmatch(v):  # most significant part first: stop once too big
        value = 0
        for part in v.split(":"):
            p = bounded_int(part, 10, False, text)
            if isinstance(p, str):
                return p
            value = value * 60 + p
            if value > 1 << 63:
                return too_big(text)
        return int64_problem(-value if negative else value, text) or (-value if negative else value)
    for form, base, prefix in _INT_FORMS:
        if form.fullmatch(v):
            return bounded_int(v[prefix:], base, negative, text)
    return f"not a YAML integer: {show(text)}"


class _Counted(Exception):
    """More than MAX_NODES events, or collections nested deeper than MAX_NESTING (at
    ``mark``)."""

    def __init__(self, mark: Mark, why: str) -> None:
        self.mark = mark
        self.why = why


def _count_events(text: str) -> None:
    """Raise :class:`_Counted` if the stream has more than MAX_NODES nodes (before alias
    expansion) or nests collections deeper than MAX_NESTING.  Streaming the events costs a
    fraction of composing the node tree, whose ~400 bytes a node would be ~200 MB for a
    1 MiB file of ``[1,1,1,...]``.  The depth is checked here, not left to libyaml: only
    libyaml 0.2.6 limits it, and 0.2.5 (still in PyYAML 6.0.3's wheels) takes seconds on
    ``[[[[...`` a megabyte deep."""
    loader = _YamlLoader(text)
    try:
        n = depth = 0
        while (ev := loader.get_event()) is not None:
            if isinstance(ev, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(ev, yaml.NodeEvent) and not isinstance(ev, yaml.AliasEvent):
                n += 1
                depth += isinstance(ev, yaml.CollectionStartEvent)
                why = (f"more than {MAX_NODES} values" if n > MAX_NODES else
                       f"nested deeper than {MAX_NESTING} levels" if depth > MAX_NESTING else "")
                if why:
                    m = ev.start_mark
                    raise _Counted((m.line + 1, m.column + 1) if m is not None else (1, 1), why)
    finally:
        loader.dispose()


def _yaml_unmarked(e: yaml.YAMLError, text: str, name: str) -> SpecError:
    """A YAML error without a mark (reader errors): locate it by its character position."""
    pos = getattr(e, "position", None)
    m = re.search(r"position (\d+)", str(e))
    if pos is None and m:
        pos = int(m.group(1))
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    if pos is None:
        return fail(name, 1, 1, f"YAML: {msg}")
    pos = min(int(pos), len(text))
    line = text.count("\n", 0, pos) + 1
    return fail(name, line, pos - (text.rfind("\n", 0, pos) + 1) + 1, f"YAML: {msg}")


def _marked(e: yaml.MarkedYAMLError, name: str) -> SpecError:
    m = e.problem_mark or e.context_mark
    line, col = (m.line + 1, m.column + 1) if m else (1, 1)
    return fail(name, line, col, f"YAML: {e.problem or e.context or e}")


def load_yaml(text: str, name: str) -> Located:
    with gc_paused():
        return _load_yaml(text, name)


def _load_yaml(text: str, name: str) -> Located:
    surrogate_in_text(text, name)
    try:
        _count_events(text)
        loader = _YamlLoader(text)
    except _Counted as e:
        raise fail(name, *e.mark, e.why) from None
    except yaml.MarkedYAMLError as e:
        raise _marked(e, name) from None
    except yaml.YAMLError as e:
        raise _yaml_unmarked(e, text, name) from None
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as e:
            raise _marked(e, name) from None
        except yaml.YAMLError as e:
            raise _yaml_unmarked(e, text, name) from None
        except RecursionError:
            raise fail(name, 1, 1, "YAML nested too deeply") from None
        if root is None:
            raise fail(name, 1, 1, "the file is empty")
        loc = Located(None)
        count = [0]

        def mk(node: yaml.Node) -> Mark:
            return (node.start_mark.line + 1, node.start_mark.column + 1)

        def scalar(node: yaml.ScalarNode, path: Path_) -> Any:
            """A scalar's value; PyYAML's constructors raise IndexError, KeyError, ValueError
            on some explicitly tagged text (``!!int ""``, ``!!bool ""``): all located here."""
            if node.tag == _STR_TAG:  # the common case, without construct_object's bookkeeping
                return node.value
            if node.tag == _INT_TAG:
                v = yaml_int(node.value)
                if isinstance(v, str):
                    raise fail(name, *mk(node), v, path)
                return v
            if node.tag == _BINARY_TAG:  # bytes would pass as text (pydantic decodes them)
                raise fail(name, *mk(node), f"unsupported YAML tag {node.tag!r}", path)
            try:
                return loader.construct_object(node, deep=True)
            except yaml.YAMLError:
                raise
            except Exception:  # any constructor failure is bad input here
                raise fail(name, *mk(node), f"YAML: {show(node.value)} is not a valid "
                           f"{node.tag.rsplit(':', 1)[-1]}", path) from None

        flat: dict[int, list[tuple[yaml.Node, yaml.Node]]] = {}  # id(mapping) -> pairs(it)
        copied = [0]

        def pairs(node: yaml.MappingNode, depth: int) -> list[tuple[yaml.Node, yaml.Node]]:
            """``node``'s key/value pairs with merge keys (``<<``) resolved: merged pairs
            first (of a key merged twice, the first), then its own (built last, they win).
            Instead of PyYAML's flatten_mapping, which recurses without bound and copies
            ``<<: [*a, *a, ...]`` in time (sources x size): every pair a merge copies counts
            towards MAX_NODES, and merges nest at most MAX_NESTING deep."""
            done = flat.get(id(node))
            if done is not None:
                return done
            if depth > MAX_NESTING:
                raise fail(name, *mk(node), f"merge keys (<<) nested deeper than {MAX_NESTING}")
            merged: list[tuple[yaml.Node, yaml.Node]] = []
            own: list[tuple[yaml.Node, yaml.Node]] = []
            seen: set[Any] = set()
            for knode, vnode in node.value:
                if knode.tag != _MERGE_TAG:
                    own.append((knode, vnode))
                    continue
                for src in vnode.value if isinstance(vnode, yaml.SequenceNode) else [vnode]:
                    if not isinstance(src, yaml.MappingNode):
                        raise fail(name, *mk(src), "a merge key (<<) takes a mapping or a list "
                                   "of mappings")
                    for k, v in pairs(src, depth + 1):
                        copied[0] += 1
                        if copied[0] > MAX_NODES:
                            raise fail(name, *mk(vnode), f"merge keys (<<) copy more than "
                                       f"{MAX_NODES} values")
                        ident = (k.tag, k.value) if isinstance(k, yaml.ScalarNode) else id(k)
                        if ident not in seen:
                            seen.add(ident)
                            merged.append((k, v))
            flat[id(node)] = out = merged + own
            return out

        def build(node: yaml.Node, path: Path_, depth: int, is_key: bool = False) -> Any:
            """The value of ``node``; records marks under ``path`` (not for a key: its
            mark is recorded by the mapping)."""
            count[0] += 1
            if count[0] > MAX_NODES:
                raise fail(name, *mk(node), f"more than {MAX_NODES} values (alias expansion?)")
            if depth > MAX_NESTING:
                raise fail(name, *mk(node), f"nested deeper than {MAX_NESTING} levels "
                            "(or a recursive alias)")
            if is_key:
                assert isinstance(node, yaml.ScalarNode)  # keys are checked to be scalars above
                return scalar(node, path)
            loc.values[path] = mk(node)
            if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and node.tag not in _YAML_TAGS:
                raise fail(name, *mk(node), f"unsupported YAML tag {node.tag!r}", path)
            if isinstance(node, yaml.MappingNode):
                explicit = {id(k) for k, _ in node.value if k.tag != _MERGE_TAG}
                out: dict[Any, Any] = {}
                from_file: set[Any] = set()
                for knode, vnode in pairs(node, 0):
                    if not isinstance(knode, yaml.ScalarNode):
                        raise fail(name, *mk(knode), "a mapping key must be a plain value")
                    # YAML 1.1's "=" key is text (as PyYAML's flatten_mapping has it)
                    key = knode.value if knode.tag == _VALUE_TAG else \
                        build(knode, path, depth + 1, is_key=True)
                    if id(knode) in explicit:
                        if key in from_file:
                            raise fail(name, *mk(knode), f"duplicate key {show(key)}", (*path, key))
                        from_file.add(key)
                    loc.keys[(*path, key)] = mk(knode)
                    out[key] = build(vnode, (*path, key), depth + 1)
                return out
            if isinstance(node, yaml.SequenceNode):
                return [build(v, (*path, i), depth + 1) for i, v in enumerate(node.value)]
            return scalar(node, path)  # type: ignore[arg-type]

        try:
            loc.data = build(root, (), 0)
        except yaml.MarkedYAMLError as e:
            raise _marked(e, name) from None
        except yaml.YAMLError as e:
            raise fail(name, 1, 1, f"YAML: {e}") from None
        errs = Errors(name, loc)
        check_data(loc.data, errs)
        errs.raise_()
        return loc
    finally:
        loader.dispose()
