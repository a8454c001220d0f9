"""YAML spec text -> data with the position of every value and key.

The node tree (``yaml.compose`` with the safe loader) gives the mark of every key and value;
values are built from the nodes by PyYAML's *safe* constructors only.  Alias expansion is
bounded (:data:`MAX_NODES`), duplicate keys are an error.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from threadmap.errors import SpecError
from threadmap.spec.located import Located, Mark, Path_, fail

MAX_NODES = 100_000           # values after YAML alias expansion
MAX_NESTING = 64              # nesting of mappings/lists



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
        return fail(name, 1, 1, f"YAML: {msg}")
    pos = min(int(pos), len(text))
    line = text.count("\n", 0, pos) + 1
    return fail(name, line, pos - (text.rfind("\n", 0, pos) + 1) + 1, f"YAML: {msg}")


def load_yaml(text: str, name: str) -> Located:
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
            raise fail(name, line, col, f"YAML: {e.problem or e.context or e}") from None
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

        def build(node: yaml.Node, path: Path_ | None, depth: int) -> Any:
            """The value of ``node``; records marks under ``path`` (None: a key, no record)."""
            count[0] += 1
            if count[0] > MAX_NODES:
                raise fail(name, *mk(node), f"more than {MAX_NODES} values (alias expansion?)")
            if depth > MAX_NESTING:
                raise fail(name, *mk(node), f"nested deeper than {MAX_NESTING} levels "
                            "(or a recursive alias)")
            if path is None:
                return loader.construct_object(node, deep=True)
            loc.values[path] = mk(node)
            if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and node.tag not in _YAML_TAGS:
                raise fail(name, *mk(node), f"unsupported YAML tag {node.tag!r}", path)
            if isinstance(node, yaml.MappingNode):
                explicit = {id(k) for k, _ in node.value}
                loader.flatten_mapping(node)  # merge keys (<<): merged pairs come first
                out: dict[Any, Any] = {}
                from_file: set[Any] = set()
                for knode, vnode in node.value:
                    if not isinstance(knode, yaml.ScalarNode):
                        raise fail(name, *mk(knode), "a mapping key must be a plain value")
                    key = build(knode, None, depth + 1)
                    if id(knode) in explicit:
                        if key in from_file:
                            raise fail(name, *mk(knode), f"duplicate key {key!r}", (*path, key))
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
            raise fail(name, line, col, f"YAML: {e.problem or e.context or e}") from None
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as e:
            if isinstance(e, SpecError):
                raise
            raise fail(name, 1, 1, f"YAML: {e}") from None
        return loc
    finally:
        loader.dispose()

