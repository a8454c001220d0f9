"""The import structure of ``threadmap/layout`` and ``threadmap/cutlass``: no import cycle
(imports inside functions included), no ``_private`` name of one module used by another (CuTe's
``_`` excepted), no private aliases of imports, and one name for the base error."""

from __future__ import annotations

import ast
from pathlib import Path

import threadmap.errors as errors

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("threadmap/layout", "threadmap/cutlass")


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg in PACKAGES:
        for p in (ROOT / pkg).rglob("*.py"):
            name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = p
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and name != "_" and not (name.startswith("__") and name.endswith("__"))


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of the two packages it imports (anywhere in its body)."""
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                           for a in node.names]
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                # a package's own __init__ importing its submodules is its job, not a cycle
                if t and not m.startswith(t + "."):
                    edges[m].add(t)
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        stack.append(v)
        for w in sorted(edges[v]):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state and (found := visit(w)):
                return found
        stack.pop()
        state[v] = 2
        return None

    for v in sorted(edges):
        if v not in state and (found := visit(v)):
            return found
    return None


def test_no_import_cycle() -> None:
    assert _cycle(_imports(_modules())) is None


def test_no_private_names_across_modules() -> None:
    mods = _modules()
    bad: list[str] = []
    for m, path in mods.items():
        aliases: set[str] = set()  # names bound to modules of threadmap
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("threadmap"):
                for a in node.names:
                    if _private(a.name):
                        bad.append(f"{m}:{node.lineno}: imports {a.name} from {node.module}")
                    if a.asname and _private(a.asname):
                        bad.append(f"{m}:{node.lineno}: imports {a.name} as {a.asname}")
                    if f"{node.module}.{a.name}" in mods:
                        aliases.add(a.asname or a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and _private(a.asname):
                        bad.append(f"{m}:{node.lineno}: imports {a.name} as {a.asname}")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id in aliases and _private(node.attr):
                bad.append(f"{m}:{node.lineno}: uses {node.value.id}.{node.attr}")
    assert not bad, "\n".join(bad)


def test_one_base_error_name() -> None:
    assert not hasattr(errors, "ThreadMapError")
    for path in _modules().values():
        assert "ThreadMapError" not in path.read_text(), path
