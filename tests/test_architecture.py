"""docs/architecture.md's layer table is true to the code's imports.

The table lists every unit of the package (a subpackage, or a module that stands alone) with
its layer and the units it imports.  Read from the source with ``ast`` (imports inside
functions and ``TYPE_CHECKING`` blocks included, relative imports resolved):

* every module of ``threadmap/`` belongs to a unit of the table;
* a unit imports exactly the units its row names (a stale or missing entry fails), each on a
  lower layer (no upward import, no two units of one layer importing each other);
* no circle among modules, and no ``_private`` name imported from another module (CuTe's
  ``_`` is a public name).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "threadmap"
DOC = ROOT / "docs" / "architecture.md"

ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*`([^`]+)`\s*\|(.*)\|(.*)\|\s*$")


@dataclass(frozen=True)
class Unit:
    layer: int
    path: str  # "threadmap/layout/" or "threadmap/api.py"
    imports: frozenset[str]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_table() -> dict[str, Unit]:
    units: dict[str, Unit] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            layer, path, _, imports = m.groups()
            units[path] = Unit(int(layer), path, frozenset(re.findall(r"`([^`]+)`", imports)))
    return units


def unit_of(module: str, units: dict[str, Unit]) -> str | None:
    """The most specific table row holding ``module`` (a file row beats its folder's row)."""
    rel = module.replace(".", "/")
    best = None
    for path in units:
        if path.endswith(".py"):
            if rel == path[:-3] or (path.endswith("/__init__.py") and rel == path[: -len("/__init__.py")]):
                return path
        elif (rel + "/").startswith(path) and (best is None or len(path) > len(best)):
            best = path
    return best


@dataclass(frozen=True)
class Import:
    source: str
    target: str  # a module of threadmap (the most specific one that exists)
    names: tuple[str, ...]
    line: int


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "threadmap":
                    out.append(Import(name, alias.name, (), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "threadmap":
                continue
            for alias in node.names:
                sub = f"{mod}.{alias.name}"
                if sub in known:  # ``from threadmap.gpu import probe`` imports the module
                    out.append(Import(name, sub, (), node.lineno))
                else:
                    out.append(Import(name, mod, (alias.name,), node.lineno))
    return out


def all_imports() -> list[Import]:
    known = modules()
    return [i for name, path in known.items() for i in imports_of(name, path, known)]


def test_every_module_has_a_row() -> None:
    units = layer_table()
    assert len(units) >= 10, "the layer table of docs/architecture.md was not found"
    missing = [m for m in modules() if unit_of(m, units) is None]
    assert not missing, f"modules without a row in docs/architecture.md's layer table: {missing}"


def test_units_import_what_the_table_says_and_only_downward() -> None:
    units = layer_table()
    by_name = {u: u for u in units}
    actual: dict[str, set[str]] = defaultdict(set)
    upward = []
    for imp in all_imports():
        src, dst = unit_of(imp.source, units), unit_of(imp.target, units)
        assert src is not None and dst is not None, imp
        if src == dst:
            continue
        actual[src].add(dst)
        if units[dst].layer >= units[src].layer:
            upward.append(f"{imp.source}:{imp.line} imports {imp.target} (layer {units[src].layer} -> "
                          f"{units[dst].layer})")
    assert not upward, "imports that do not go down a layer:\n" + "\n".join(upward)
    wrong = []
    for name in by_name:
        declared, real = set(units[name].imports), actual.get(name, set())
        if declared != real:
            wrong.append(f"{name}: the table says {sorted(declared)}, the code imports {sorted(real)}")
    assert not wrong, "docs/architecture.md's layer table is stale:\n" + "\n".join(wrong)


def test_no_circle_among_modules() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for imp in all_imports():
        # a package's own __init__ re-exporting its modules is not a circle with them
        if imp.target != imp.source and not imp.source.startswith(imp.target + "."):
            graph[imp.source].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_no_private_names_across_modules() -> None:
    private = [f"{i.source}:{i.line} imports {n} from {i.target}" for i in all_imports() for n in i.names
               if n.startswith("_") and not n.startswith("__") and n != "_" and i.target != i.source]
    assert not private, "private names used across modules:\n" + "\n".join(private)


@pytest.mark.parametrize("case", ["upward", "stale", "private"])
def test_the_checks_can_fail(case: str, tmp_path: Path) -> None:
    # the rules above on a made-up table and package, so a broken reader cannot pass silently
    units = {"threadmap/a/": Unit(1, "threadmap/a/", frozenset()), "threadmap/b.py": Unit(2, "threadmap/b.py",
                                                                                        frozenset({"threadmap/a/"}))}
    assert unit_of("threadmap.a.x", units) == "threadmap/a/"
    assert unit_of("threadmap.b", units) == "threadmap/b.py"
    src = {"upward": "from threadmap.b import f\n", "stale": "import json\n",
           "private": "from threadmap.a.y import _hidden\n"}[case]
    pkg = tmp_path / "threadmap"
    (pkg / "a").mkdir(parents=True)
    (pkg / "a" / "x.py").write_text(src)
    (pkg / "a" / "y.py").write_text("")
    (pkg / "b.py").write_text("from threadmap.a import x\n")
    known = {"threadmap.a.x": pkg / "a" / "x.py", "threadmap.a.y": pkg / "a" / "y.py", "threadmap.b": pkg / "b.py"}
    found = [i for n, p in known.items() for i in imports_of(n, p, known)]
    if case == "upward":
        assert any(unit_of(i.target, units) == "threadmap/b.py" and unit_of(i.source, units) == "threadmap/a/"
                   for i in found)
    elif case == "stale":
        assert {i.target for i in found if i.source == "threadmap.b"} == {"threadmap.a.x"}
    else:
        assert any(n == "_hidden" for i in found for n in i.names)


def test_one_class_per_error_name() -> None:
    # an exception and a report record once shared the name SpecError; a reader of an
    # ``except`` clause must know which class is meant
    defined: dict[str, list[str]] = defaultdict(list)
    for name, path in modules().items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                defined[node.name].append(name)
    errors = {n: where for n, where in defined.items() if n.endswith(("Error", "Exception")) and len(where) > 1}
    assert not errors, f"error class names defined twice: {errors}"
    assert defined["SpecError"] == ["threadmap.errors"]
