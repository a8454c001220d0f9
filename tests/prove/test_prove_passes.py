"""The class pass (``class_pass``) against the old one (``class_pass_old``: every check at every
size class) and the solver's enumeration of the classes (``enumerate_classes``), on cheap specs
of specs/ranges and tests/prove/cases; and prove's imports (no private names of other modules)."""

from __future__ import annotations

import ast
import multiprocessing as mp
import time
from pathlib import Path

import pytest

from threadmap.model import build_model
from threadmap.prove import prove_loaded
from threadmap.prove.encode import SizeSpace, Unsupported, class_terms, enumerate_classes, size_classes
from threadmap.prove.run import _inside_tiles, _tiled_modes, class_pass, class_pass_old
from threadmap.spec.load import load_spec

ROOT = Path(__file__).resolve().parents[2]
#: specs of at most 256 classes (the stripmined ones have 1024 and 4096: the benchmark's)
CHEAP = [ROOT / "specs" / "ranges" / n for n in ("planted_one_residue_grid.yaml", "row_cvectorized.yaml",
                                                   "sgemm_1_copy_a.yaml")] + \
    [p for p in sorted((ROOT / "tests" / "prove" / "cases").glob("*.yaml")) if p.stem != "assume_ge"]


def _setup(path: Path):  # type: ignore[no-untyped-def]
    loaded = load_spec(path)
    space = SizeSpace(loaded)
    model0 = build_model(loaded, loaded.envs[0])
    try:
        modes, reason = _tiled_modes(loaded, model0), None
    except Unsupported as e:
        modes, reason = [], str(e)
    space.choose_bits([*space.grid, *space.relations, *[m.extent for m in modes]],
                      slack=max([m.tile for m in modes], default=0))
    return loaded, space, model0, modes, reason or _inside_tiles(model0)


def _strip(out):  # type: ignore[no-untyped-def]
    classes, refuted, reason = out
    return classes, {k: v.model_dump(exclude={"seconds"}) for k, v in refuted.items()}, reason


@pytest.mark.parametrize("path", CHEAP, ids=lambda p: p.stem)
def test_class_pass_gives_the_old_pass_results(path: Path) -> None:
    try:
        loaded, space, model0, modes, reason = _setup(path)
    except Unsupported:
        pytest.skip("no encoding: no class pass")
    t = time.perf_counter()
    new = class_pass(loaded, space, model0, modes, reason, 600_000, t, 600)
    old = class_pass_old(loaded, space, model0, modes, reason, 600_000, t, 600)
    assert _strip(new) == _strip(old)


#: a stripmined map of 64 classes where z3 refutes vectorize and coalescing and predicates is refuted
#: with a precondition (the slow specs' case, at a small tile)
SKIPS = ROOT / "tests" / "prove" / "cases" / "stripmined_small_any_n.yaml"


def _prove_in_child(conn, path: Path, old_pass: bool) -> None:  # type: ignore[no-untyped-def]
    run = prove_loaded(load_spec(path), 600, old_pass=old_pass)
    conn.send([p.model_dump(mode="json", exclude={"seconds"}) for p in run.properties])
    conn.close()


def _results(path: Path, old_pass: bool) -> list[dict[str, object]]:
    """The properties of ``path`` proved in a forked child: z3's models (the access properties'
    witnesses) depend on what the process asked z3 before, so both passes start from the same
    state."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_prove_in_child, args=(child, path, old_pass))
    proc.start()
    child.close()
    out = parent.recv()
    proc.join()
    return out  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", [*CHEAP[:3], SKIPS], ids=lambda p: p.stem)
def test_prove_gives_the_old_pass_results(path: Path) -> None:
    """Every property's verdict, witness, classes and reason, with either pass."""
    assert _results(path, False) == _results(path, True)


@pytest.mark.parametrize("name", ["planted_one_residue_grid.yaml", "row_smem.yaml"])
def test_size_classes_are_the_solvers_classes(name: str) -> None:
    """The classes read off small sizes and completed by z3 are those z3 enumerates one by one,
    and each representative lies in its class."""
    _, space, _, modes, _ = _setup(ROOT / "specs" / "ranges" / name)
    fast = list(size_classes(space, modes, 60_000))
    slow = list(enumerate_classes(space, class_terms(space, modes), 60_000))
    assert {c.values for c in fast} == {c.values for c in slow}
    terms = class_terms(space, modes)
    import z3

    for c in fast[:: max(1, len(fast) // 16)]:
        sub = [(space.vars[k], z3.BitVecVal(v, space.bits)) for k, v in c.sizes.items()]
        got = tuple(z3.simplify(z3.substitute(t.e, *sub)).as_long() for _, t, _ in terms)
        assert got == c.values


def test_prove_imports_no_private_names_of_other_modules() -> None:
    for f in sorted((ROOT / "threadmap" / "prove").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.module.startswith("threadmap.prove"):
                bad = [a.name for a in node.names
                       if a.name.startswith("_") and a.name != "_" and not a.name.startswith("__")]
                assert not bad, (f.name, node.module, bad)
