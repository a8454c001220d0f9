"""The class pass (``class_pass``) against the old one (``class_pass_old``: every check at every
size class) and the solver's enumeration of the classes (``enumerate_classes``), on cheap specs
of specs/ranges and tests/prove/cases and on generated specs; the tile-kind argument
(:mod:`threadmap.prove.tiles`) checked where it is used: every class the pass does not verify is
verified here and shows no error of the properties it was skipped for; and prove's imports (no
private names of other modules)."""

from __future__ import annotations

import ast
import multiprocessing as mp
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

import threadmap.prove.run as prove_run
from threadmap.errors import SpecError, ThreadmapError
from threadmap.model import build_model
from threadmap.prove import prove_loaded
from threadmap.prove.encode import SizeSpace, Unsupported, class_terms, enumerate_classes, size_classes
from threadmap.prove.run import (
    CLASS_PASS_PROPERTIES,
    _findings,
    _inside_tiles,
    _tiled_modes,
    class_pass,
    class_pass_old,
)
from threadmap.prove.tiles import ClassTiles, TileKinds
from threadmap.spec.load import load_spec, loads_spec
from threadmap.testing.strategies import range_specs
from threadmap.verify.run import RunOptions, verify_model

ROOT = Path(__file__).resolve().parents[2]
RANGES = ROOT / "specs" / "ranges"
#: specs of at most 256 classes (the stripmined ones have 1024 and 4096: the benchmark's)
CHEAP = [RANGES / n for n in ("planted_one_residue_grid.yaml", "row_cvectorized.yaml", "sgemm_1_copy_a.yaml")] + \
    [p for p in sorted((ROOT / "tests" / "prove" / "cases").glob("*.yaml")) if p.stem != "assume_ge"]
#: 256-class transposes: through shared memory (bank conflicts refuted), through registers
#: (dataflow's single writers), global to global
TRANSPOSES = [RANGES / n for n in ("row_smem.yaml", "col2row_reg.yaml", "row2col_reg.yaml")]


def _setup(path: Path):  # type: ignore[no-untyped-def]
    return _setup_loaded(load_spec(path))


def _setup_loaded(loaded):  # type: ignore[no-untyped-def]
    space = SizeSpace(loaded)
    model0 = build_model(loaded, loaded.envs[0])
    try:
        modes, reason = _tiled_modes(loaded, space, model0), None
    except Unsupported as e:
        modes, reason = [], str(e)
    space.choose_bits([*space.grid, *space.relations, *[m.extent for m in modes]],
                      slack=max([m.tile for m in modes], default=0))
    return loaded, space, model0, modes, reason or _inside_tiles(model0)


def _strip(out):  # type: ignore[no-untyped-def]
    classes, refuted, reason = out
    return classes, {k: v.model_dump(exclude={"seconds"}) for k, v in refuted.items()}, reason


class _Recording(TileKinds):
    """TileKinds that keeps every representative it decides, with the properties then open."""

    skipped: list[tuple[object, tuple[str, ...]]]

    def decides(self, model, tiles, props):  # type: ignore[no-untyped-def]
        props = tuple(props)
        ok = super().decides(model, tiles, props)
        if ok:
            self.skipped.append((model, props))
        return ok


def _compare(loaded, space, model0, modes, reason, monkeypatch) -> int:  # type: ignore[no-untyped-def]
    """Both passes give the same results, and every class the new one skips shows no error of
    the properties it skipped it for; the number skipped."""
    skipped: list[tuple[object, tuple[str, ...]]] = []
    monkeypatch.setattr(_Recording, "skipped", skipped, raising=False)
    monkeypatch.setattr(prove_run, "TileKinds", _Recording)
    t = time.perf_counter()
    new = class_pass(loaded, space, model0, modes, reason, 600_000, t, 600)
    old = class_pass_old(loaded, space, model0, modes, reason, 600_000, t, 600)
    assert _strip(new) == _strip(old)
    for model, props in skipped:
        checks = frozenset(c for p, cs in CLASS_PASS_PROPERTIES if p in props for c in cs)
        run = verify_model(model, RunOptions(checks=checks))  # type: ignore[arg-type]
        for p, cs in CLASS_PASS_PROPERTIES:
            if p in props:
                assert not _findings(run, cs, p)[0], (p, run.sizes)
    return len(skipped)


@pytest.mark.parametrize("path", [*CHEAP, *TRANSPOSES], ids=lambda p: p.stem)
def test_class_pass_gives_the_old_pass_results(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        loaded, space, model0, modes, reason = _setup(path)
    except Unsupported:
        pytest.skip("no encoding: no class pass")
    n = _compare(loaded, space, model0, modes, reason, monkeypatch)
    if path in TRANSPOSES:
        assert n >= 200  # 256 classes: only the 31 with one kind of edge tile, or none, are verified


@settings(max_examples=20, deadline=None, database=None, phases=[Phase.generate],
          suppress_health_check=list(HealthCheck))
@seed(20260601)
@given(range_specs())
def test_class_pass_gives_the_old_pass_results_on_generated_specs(text: str) -> None:
    """Generated specs (copies, transposes, tiled copies into plain, padded and swizzled smem,
    thread maps; right and wrong grids, every predicate): the same results, and no error where
    a class is skipped."""
    try:
        loaded, space, model0, modes, reason = _setup_loaded(loads_spec(text, "yaml", "gen.yaml"))
    except (SpecError, ThreadmapError, Unsupported):
        return
    with pytest.MonkeyPatch.context() as mp_:
        _compare(loaded, space, model0, modes, reason, mp_)


def test_class_tiles_need_the_per_mode_kinds() -> None:
    """A kind with one cut below its tile is its own; one with several is decided by each
    per-mode kind that keeps one of its cuts."""
    t = ClassTiles.of([(16, 16), (16, 5), (3, 16), (3, 5), (0, 16)], (), (16, 16))
    assert t.per_mode == {(16, 16), (16, 5), (3, 16), (0, 16)}
    assert sorted(t.seen()) == [(0, 16), (3, 16), (16, 5), (16, 16)]
    assert ClassTiles.of([(3, 5, 0)], (), (4, 8, 2)).per_mode == {(3, 8, 2), (4, 5, 2), (4, 8, 0)}


def _kinds(text: str) -> TileKinds:
    loaded = loads_spec(text, "yaml", "t.yaml")
    return TileKinds(build_model(loaded, loaded.envs[0]))


_COPY = """spec: 1
name: t
element: f32
threads: 16
sizes:
  M: {min: 1, max: 64}
  N: {min: 1, max: 64}
grid: ["ceil_div(M, 4)", "ceil_div(N, 4)"]
tensors:
  x: {memory: global, layout: "(M,N):(N,1)", align: 256}
  y: {memory: global, layout: "(N,M):(M,1)", align: 256}
stages:
  - copy:
      src: {tensor: x, tile: [4, 4], at: [bx, by], threads: "(4,4):(4,1)"}
      dst: {tensor: y, tile: [4, 4], at: [AT], threads: "(4,4):(4,1)"}
      predicate: bounds
expect: {transform: transpose}
"""


def test_premises_of_the_kind_argument() -> None:
    """Each property's premises are read off the model: a transpose whose tiles agree has them
    all; output tiles that move apart from the input's keep dataflow to every class; two rows on
    one element keep coverage and predicates (and dataflow) to every class."""
    good = _kinds(_COPY.replace("AT", "by, bx"))
    assert all(v is None for v in good.premise.values()), good.premise
    assert good.vars == ["bx", "by"] and good.full == (4, 4)
    apart = _kinds(_COPY.replace("AT", "bx, by"))
    assert apart.premise["dataflow"] is not None and apart.premise["coverage"] is None
    # a TV layout whose two values of a thread are one element: every element read twice
    dup = _kinds(_COPY.replace("AT", "by, bx").replace(
        'at: [bx, by], threads: "(4,4):(4,1)"}',
        'at: [bx, by], tiled_copy: {layout_tv: "(16,2):(1,0)", tiler: "(_4,_4)", atom: UniversalCopy<uint32_t>}}')
        .replace('dst: {tensor: y, tile: [4, 4], at: [by, bx], threads: "(4,4):(4,1)"}', "dst: {registers: r}"))
    assert dup.premise["coverage"] is not None and dup.premise["dataflow"] is not None
    assert dup.premise["bank_conflicts"] is None


def test_kinds_of_a_representative() -> None:
    """The kinds of a grid: interior and edge cuts along each tiling coordinate, and none to
    decide when a tile is never reached."""
    loaded = loads_spec(_COPY.replace("AT", "by, bx"), "yaml", "t.yaml")
    kinds = TileKinds(build_model(loaded, loaded.envs[0]))
    t = kinds.tiles(build_model(loaded, {"M": 9, "N": 4}))
    assert t is not None and t.kinds == {(4, 4), (1, 4)} and t.per_mode == t.kinds
    t = kinds.tiles(build_model(loaded, {"M": 3, "N": 6}))
    assert t is not None and t.kinds == {(3, 4), (3, 2)} and t.per_mode == {(3, 4), (4, 2)}
    assert sorted(t.seen()) == [(3, 4)]
    short = loads_spec(_COPY.replace("AT", "by, bx").replace("ceil_div(M, 4)", "M // 4")
                      .replace("M: {min: 1,", "M: {min: 4,"), "yaml", "t.yaml")
    assert TileKinds(build_model(short, {"M": 64, "N": 4})).tiles(build_model(short, {"M": 9, "N": 4})) is None


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


@pytest.mark.parametrize("path", [*CHEAP[:3], SKIPS, TRANSPOSES[0]], ids=lambda p: p.stem)
def test_prove_gives_the_old_pass_results(path: Path) -> None:
    """Every property's verdict, witness, classes and reason, with either pass."""
    assert _results(path, False) == _results(path, True)


@pytest.mark.parametrize("name", ["specs/ranges/planted_one_residue_grid.yaml", "specs/ranges/row_smem.yaml",
                                  "tests/prove/cases/nested_implicit_gemm.yaml",
                                  "tests/prove/cases/sparse_half_k.yaml"])
def test_size_classes_are_the_solvers_classes(name: str) -> None:
    """The classes read off small sizes and completed by z3 are those z3 enumerates one by one,
    and each representative lies in its class (the nested case: extents that are products of
    sizes, Q*P*N, whose lead size's range ends before twice the tile)."""
    _, space, _, modes, _ = _setup(ROOT / name)
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
