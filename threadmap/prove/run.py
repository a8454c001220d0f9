"""Prove a spec's properties for every size in its ranges (see :mod:`threadmap.prove.encode`).

Properties and how each is decided:

* ``grid`` (z3): for every size assignment in range, every grid entry is within CUDA's
  limits (``1 <= G_x <= 2^31 - 1``, ``1 <= G_y, G_z <= 65535``); REFUTED with the sizes.
* ``coverage``, ``predicates``, ``dataflow``, ``bank_conflicts`` (z3 classes + the
  simulator): the size classes are enumerated by z3; at each class's representative the
  spec is verified by the very enumeration ``threadmap verify`` runs, so a REFUTED comes
  with the simulator's finding at concrete sizes (it *is* the replay).  The argument that
  one representative stands for its class needs premises that are checked at every
  representative, not assumed: the tile-local structure (threads, tiles, partitions, vector
  widths, predicates, shared tensors, tile coordinates as block coordinates) is the same,
  every access stays inside its tile, and the whole grid was enumerated.  A premise that
  fails makes the property UNKNOWN.  A representative whose kinds of tiles earlier
  representatives already showed free of errors is not verified
  (:mod:`threadmap.prove.tiles`): the results are those of verifying every one.
* ``aliasing`` (z3): distinct coordinates of a written global tensor never share an element:
  the sufficient condition that some order of its modes has strides that grow past the
  extent before (``d_1 >= 1``, ``d_{i+1} >= E_i d_i``) holds for every size in range;
  REFUTED when a representative shows an aliased write, UNKNOWN when neither.

Coalescing and vectorization depend on the strides' alignment classes, which this encoding
does not split on yet: ``threadmap prove`` does not claim them.

Each spec is proved in a forked child process, so a runaway solver is killed at the time
limit (every property then UNKNOWN), never waited for.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing as mp
import re
import time
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import z3  # type: ignore[import-untyped]  # z3 ships no type stubs

from threadmap.errors import SpecError, ThreadmapError
from threadmap.model import KernelModel, build_model
from threadmap.prove.access import access_properties
from threadmap.prove.encode import (
    Monomial,
    SizeClass,
    SizeSpace,
    TiledMode,
    Unsupported,
    layout_monomials,
    size_classes,
)
from threadmap.prove.pipeline import pipeline_property
from threadmap.prove.tiles import TileKinds
from threadmap.report.model import Finding, PropertyResult, ProveReport, ProveRun, SpecErrorEntry
from threadmap.spec.expr import BLOCK_NAMES
from threadmap.spec.load import LoadedSpec, load_spec, spec_files
from threadmap.spec.schema import SizeRange
from threadmap.spec.semantics import MAX_GRID
from threadmap.verify.banks import ldgsts_rule
from threadmap.verify.run import RunOptions, verify_model
from threadmap.version import __version__

#: properties decided per size class, and the checks each one reads
CLASS_PROPERTIES: dict[str, tuple[str, ...]] = {
    "coverage": ("coverage", "grid_coverage"),
    "predicates": ("predicates",),
    "dataflow": ("dataflow",),
    "bank_conflicts": ("bank_conflicts",),
}
#: properties decided by z3 over sizes and blocks (global sides); the checks each one reads,
#: whose failures at a class representative refute it too
ACCESS_PROPERTIES: dict[str, tuple[str, ...]] = {
    "vectorize": ("vectorize",),
    "coalescing": ("coalescing",),
}
#: every property whose failure ``verify`` shows as an error finding of these checks
REFUTING_CHECKS: dict[str, tuple[str, ...]] = {**CLASS_PROPERTIES, **ACCESS_PROPERTIES}
ALIAS_KINDS = ("aliased_write", "aliasing_undecided")
PROPERTIES = ("grid", *CLASS_PROPERTIES, *ACCESS_PROPERTIES, "aliasing", "pipeline")
DEFAULT_TIMEOUT = 120.0
MAX_FINDINGS_SHOWN = 5


def _fingerprint(model: KernelModel) -> list[Any]:
    """What must not change between size classes (see the module docstring)."""
    out: list[Any] = [model.threads]
    for st in model.stages:
        if isinstance(st, str):
            out.append(st)
            continue
        out.append(st.predicate)
        for sd in st.sides():
            t = sd.tensor
            at = None if sd.at_affine is None else tuple((tuple(sorted(a.coef.items())), a.const)
                                                         for a in sd.at_affine)
            tensor: Any = None
            if t is not None:
                tensor = (t.name, t.memory, t.elem_bits, t.align, t.offset, t.base % 4096)
                if t.memory == "shared":
                    tensor += (str(t.layout), t.shape, t.base)
            out.append((sd.memory, sd.name, sd.tile, sd.vec, sd.elem_bits, sd.partition.coord.shape,
                        sd.partition.coord.tobytes(), at, tensor))
    return out


def _free_sizes(loaded: LoadedSpec) -> tuple[list[str], dict[str, int]]:
    """The ranged size names, and the fixed sizes with their values."""
    sizes = loaded.spec.sizes
    return ([k for k, v in sizes.items() if isinstance(v, SizeRange)],
            {k: v for k, v in sizes.items() if isinstance(v, int)})


def _tiled_modes(loaded: LoadedSpec, space: SizeSpace, model: KernelModel) -> list[TiledMode]:
    names, fixed = _free_sizes(loaded)
    out = []
    for sd in model.sides():
        if sd.memory != "global" or sd.tensor is None:
            continue
        where = f"stage {sd.stage} {sd.which}"
        extents, _ = layout_monomials(loaded.spec.tensors[sd.tensor.name].layout, names, fixed, space.multiples())
        if sd.at is None:
            # the whole tensor as one tile: a constant tile only when no extent is a size
            if any(e.powers for e in extents):
                raise Unsupported(f"{where}: a global side without a tile (the whole tensor, whose extent varies)")
            out += [TiledMode(where, e, e.coef, None, 0) for e in extents]
            continue
        if sd.at_affine is None:
            raise Unsupported(f"{where}: a tile coordinate is not an affine function of the block coordinates")
        if len(sd.tile) != len(extents):
            raise Unsupported(f"{where}: the tile has {len(sd.tile)} modes and the tensor {len(extents)}; "
                              "untiled modes are not split into classes")
        used = [v for a in sd.at_affine for v, c in a.coef.items() if c]
        if len(used) != len(set(used)):
            raise Unsupported(f"{where}: a block coordinate places the tile along two modes, so the visited "
                              "tiles are not a product of per-mode ranges")
        for k, (a, tile) in enumerate(zip(sd.at_affine, sd.tile, strict=True)):
            coef = {v: c for v, c in a.coef.items() if c}
            if not coef:
                if a.const < 0:
                    raise Unsupported(f"{where}: tile coordinate {k} is negative")
                out.append(TiledMode(where, extents[k], tile, None, a.const))
            elif len(coef) == 1 and next(iter(coef.values())) == 1 and a.const == 0 and \
                    next(iter(coef)) in BLOCK_NAMES:
                out.append(TiledMode(where, extents[k], tile, next(iter(coef)), 0))
            else:
                raise Unsupported(f"{where}: tile coordinate {k} is not one block coordinate or a constant")
    return out


def _structure_sizes(loaded: LoadedSpec) -> str | None:
    """Why the representatives may not stand for their classes: a ranged size used by the
    tile-local structure (a shared layout's pitch, a thread count, a tile, a tile coordinate, a
    global tensor's offset or alignment) rather than only by the global layouts, the grid and
    the assumptions.  The classes do not split on such a size, and every representative takes
    its smallest value, so comparing their structures cannot show that it varies."""
    spec = loaded.spec
    ranged = [k for k, v in spec.sizes.items() if isinstance(v, SizeRange)]
    doc = spec.model_dump(mode="json", include={"threads", "tensors", "stages"})
    for t in doc["tensors"].values():
        if t.get("memory") == "global":
            t.pop("layout", None)
    text = json.dumps(doc)
    used = [k for k in ranged if re.search(rf"(?<![A-Za-z0-9_]){re.escape(k)}(?![A-Za-z0-9_])", text)]
    if not used:
        return None
    return (f"the tile-local structure may depend on the size{'s' if len(used) > 1 else ''} {', '.join(used)} "
            "(used outside the global layouts, the grid and the assumptions), which the size classes do not "
            "split on")


def _inside_tiles(model: KernelModel) -> str | None:
    """Why some global side's accesses leave its tile (None when none does)."""
    for sd in model.sides():
        if sd.memory != "global" or sd.tensor is None:
            continue
        c = sd.partition.coord.reshape(-1, sd.partition.rank)
        if c.size and (bool((c < 0).any()) or bool((c >= np.asarray(sd.tile)).any())):
            return f"stage {sd.stage} {sd.which}: accesses leave the tile, so tiles are not independent"
    return None


def _grid_property(space: SizeSpace, timeout_ms: int) -> PropertyResult:
    t0 = time.perf_counter()
    env = space.sym_env()
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*space.constraints())
    bad = []
    for j, g in enumerate(space.grid):
        v = space.bv(g.apply(env))
        bad.append(z3.Or(z3.ULT(v, 1), z3.UGT(v, MAX_GRID[j])))
    s.add(z3.Or(bad) if bad else z3.BoolVal(False))
    r = s.check()
    dt = time.perf_counter() - t0
    if r == z3.unsat:
        return PropertyResult(property="grid", status="PROVED", method="z3", seconds=dt,
                              reason="every grid entry is within CUDA's limits for all sizes in range")
    if r == z3.unknown:
        return PropertyResult(property="grid", status="UNKNOWN", method="z3", seconds=dt,
                              reason=f"solver: {s.reason_unknown()}")
    m = s.model()
    sizes = {k: m.eval(v, model_completion=True).as_long() for k, v in space.vars.items()}
    vals = [g.eval(sizes) for g in space.grid]
    return PropertyResult(property="grid", status="REFUTED", method="z3", seconds=dt, sizes=sizes,
                          reason=f"grid {tuple(vals)} at these sizes; CUDA allows 1..{MAX_GRID[0]} along x "
                                 f"and 1..{MAX_GRID[1]} along y and z")


def _aliasing_property(loaded: LoadedSpec, space: SizeSpace, model: KernelModel, timeout_ms: int,
                       refuted: PropertyResult | None) -> PropertyResult:
    t0 = time.perf_counter()
    if refuted is not None:
        return refuted
    env = space.sym_env()
    names, fixed = _free_sizes(loaded)
    written = sorted({sd.tensor.name for c in model.copies() for sd in (c.dst,)
                      if sd.tensor is not None and sd.memory == "global"})
    for name in written:
        text = loaded.spec.tensors[name].layout
        try:
            extents, strides = layout_monomials(text, names, fixed, space.multiples())
        except Unsupported as e:
            return PropertyResult(property="aliasing", status="UNKNOWN", method="z3",
                                  seconds=time.perf_counter() - t0, reason=str(e))
        if strides is None or any(d.coef < 0 for d in strides):
            return PropertyResult(property="aliasing", status="UNKNOWN", method="z3",
                                  seconds=time.perf_counter() - t0,
                                  reason=f"tensor {name}: strides are not products of sizes with a "
                                         "non-negative constant")
        if not _strides_grow(space, extents, strides, env, timeout_ms):
            return PropertyResult(property="aliasing", status="UNKNOWN", method="z3",
                                  seconds=time.perf_counter() - t0,
                                  reason=f"tensor {name}: no order of its modes has strides that grow past "
                                         "the extents for every size in range (a sufficient condition only)")
    return PropertyResult(property="aliasing", status="PROVED", method="z3", seconds=time.perf_counter() - t0,
                          reason=f"the written global tensors ({', '.join(written) or 'none'}) are injective "
                                 "for every size in range")


def _strides_grow(space: SizeSpace, extents: Sequence[Monomial], strides: Sequence[Monomial],
                  env: dict[str, Any], timeout_ms: int) -> bool:
    """Some order of the modes has ``d_first >= 1`` and ``d_next >= E d`` (extent-1 modes
    skipped) for every size in range."""
    wide = 2 * space.bits  # a product of two values of the encoding's width cannot wrap here
    # modes of constant extent 1 take one coordinate and are dropped; a mode whose extent is a
    # size stays in the chain even where that size is 1 (no skipping: the chain stays sound)
    keep = [k for k, e in enumerate(extents) if e.powers or e.coef != 1]
    E = {k: space.bv(extents[k].value(env), wide) for k in keep}
    D = {k: space.bv(strides[k].value(env), wide) for k in keep}
    for order in itertools.permutations(keep):
        conds = []
        prev: int | None = None
        for k in order:
            conds.append(z3.UGE(D[k], 1) if prev is None else z3.UGE(D[k], E[prev] * D[prev]))
            prev = k
        s = z3.Solver()
        s.set("timeout", timeout_ms)
        s.add(*space.constraints())
        s.add(z3.Not(z3.And(conds)))
        if s.check() == z3.unsat:
            return True
    return False


def fails_property(run: Any, prop: str) -> bool:
    """Whether a :class:`~threadmap.report.model.SpecRun` of ``verify`` shows an error finding
    of a property decided per check (its checks; aliased writes belong to ``aliasing``)."""
    return bool(_findings(run, REFUTING_CHECKS[prop], prop)[0])


def disagreements(verify_runs: Sequence[Any], proofs: Sequence[ProveRun]) -> list[str]:
    """Where enumeration contradicts a proof: a PROVED class property that ``verify`` fails at
    one of the spec's samples (the samples lie in the ranges)."""
    out = []
    for pr in proofs:
        for p in pr.properties:
            if p.status != "PROVED" or p.property not in REFUTING_CHECKS:
                continue
            for run in verify_runs:
                if run.path == pr.path and fails_property(run, p.property):
                    out.append(f"{pr.path}: {p.property} is PROVED for every size in range but verify fails it "
                               f"at {', '.join(f'{k}={v}' for k, v in run.sizes.items())}")
    return out


def _findings(run: Any, checks: Sequence[str], prop: str) -> tuple[list[Finding], list[str]]:
    out: list[Finding] = []
    pre: list[str] = []
    for r in run.results:
        if r.check not in checks:
            continue
        fs = [f for f in r.findings if f.severity == "error" and (f.kind in ALIAS_KINDS) == (prop == "aliasing")]
        out += fs
        if r.check == "predicates" and fs:
            pre += list(getattr(r.summary, "precondition", []) or [])
    return out, sorted(set(pre))


ClassPass = tuple[int, dict[str, PropertyResult], str | None]


def _settled(prop: str, refuted: dict[str, PropertyResult]) -> bool:
    """Whether later classes cannot change ``prop``'s result: it is refuted, and (predicates)
    with a precondition; a predicates witness without one gives way to the first that has
    one (the weakest precondition is what ``assume:`` takes)."""
    return prop in refuted and (prop != "predicates" or bool(refuted[prop].precondition))


#: every property the class pass decides or refutes, with the checks whose findings it reads
CLASS_PASS_PROPERTIES: tuple[tuple[str, tuple[str, ...]], ...] = (*REFUTING_CHECKS.items(),
                                                                   ("aliasing", ("grid_coverage",)))


def _class_model(loaded: LoadedSpec, env: dict[str, int], ref: list[Any]) -> tuple[KernelModel | None, str | None]:
    """The model at a representative ``env``, or the reason a premise fails there."""
    try:
        model = build_model(loaded, env)
    except SpecError as e:
        return None, f"at {env}: {e}"
    if _fingerprint(model) != ref:
        return None, f"the tile-local structure changes with the sizes (at {env})"
    return model, None


def _class_verdicts(loaded: LoadedSpec, model: KernelModel, env: dict[str, int], want: frozenset[str],
                    refuted: dict[str, PropertyResult]) -> tuple[str | None, frozenset[str]]:
    """Verify the representative ``model`` at ``env`` (the checks ``want``) and record in
    ``refuted`` each property it refutes first.  Returns the reason a premise fails there (or
    None), and the open properties it shows no error of (every check of theirs run and
    passing, no error finding)."""
    run = verify_model(model, RunOptions(checks=want))
    if run.totals == "partial" or any("partial" in n for n in run.notes):
        return f"the grid at {env} was not enumerated whole", frozenset()
    clean = set()
    for prop, checks in CLASS_PASS_PROPERTIES:
        if _settled(prop, refuted):
            continue
        fs, pre = _findings(run, checks, prop)
        if fs and (prop not in refuted or pre):
            refuted[prop] = PropertyResult(
                property=prop, status="REFUTED", method="z3 classes + simulator", seconds=0.0,
                sizes={k: env[k] for k in loaded.spec.sizes}, findings=fs[:MAX_FINDINGS_SHOWN],
                precondition=pre, reason=f"{len(fs)} finding(s) at these sizes, replayed by the simulator")
        if not fs and set(checks) <= want and all(r.status == "PASS" for r in run.results if r.check in checks):
            clean.add(prop)
    return None, frozenset(clean)


def _class_list(space: SizeSpace, modes: list[TiledMode], timeout_ms: int, deadline: float) -> Iterator[SizeClass]:
    return size_classes(space, modes, timeout_ms, deadline)


def class_pass_old(loaded: LoadedSpec, space: SizeSpace, model0: KernelModel, modes: list[TiledMode],
                   reason: str | None, timeout_ms: int, t_start: float, timeout_s: float) -> ClassPass:
    """The class properties, one ``verify`` of every check per size class (kept as the
    benchmark's baseline and the reference of :func:`class_pass`)."""
    classes = 0
    refuted: dict[str, PropertyResult] = {}
    if reason is not None:
        return classes, refuted, reason
    skip = _undecided(model0)
    want = frozenset({c for p, cs in REFUTING_CHECKS.items() if p not in skip for c in cs})
    ref = _fingerprint(model0)
    try:
        for cls in _class_list(space, modes, timeout_ms, t_start + timeout_s):
            classes += 1
            if time.perf_counter() - t_start > timeout_s:
                return classes, refuted, f"time limit of {timeout_s:g} s reached after {classes - 1} size classes"
            env = {**loaded.envs[0], **cls.sizes}
            model, reason = _class_model(loaded, env, ref)
            if model is not None:
                reason, _ = _class_verdicts(loaded, model, env, want, refuted)
            if reason is not None or all(_settled(p, refuted) or p in skip for p in [*REFUTING_CHECKS, "aliasing"]):
                break
    except Unsupported as e:
        reason = str(e)
    return classes, refuted, reason


def class_pass(loaded: LoadedSpec, space: SizeSpace, model0: KernelModel, modes: list[TiledMode],
               reason: str | None, timeout_ms: int, t_start: float, timeout_s: float) -> ClassPass:
    """The class properties: as :func:`class_pass_old`, with the same results, but each
    ``verify`` runs only the checks of the properties no earlier class refuted, and a class
    whose kinds of tiles earlier classes showed free of errors of every property still open is
    not verified (:mod:`threadmap.prove.tiles`: the per-mode kinds decide the others)."""
    classes = 0
    refuted: dict[str, PropertyResult] = {}
    if reason is not None:
        return classes, refuted, reason
    ref = _fingerprint(model0)
    kinds = TileKinds(model0)
    skip = _undecided(model0)
    try:
        for cls in _class_list(space, modes, timeout_ms, t_start + timeout_s):
            classes += 1
            if time.perf_counter() - t_start > timeout_s:
                return classes, refuted, f"time limit of {timeout_s:g} s reached after {classes - 1} size classes"
            env = {**loaded.envs[0], **cls.sizes}
            model, reason = _class_model(loaded, env, ref)
            if model is None:
                break
            open_props = [p for p, _ in CLASS_PASS_PROPERTIES if not _settled(p, refuted) and p not in skip]
            tiles = kinds.tiles(model)
            if kinds.decides(model, tiles, open_props):
                continue
            want = frozenset({c for p, cs in CLASS_PASS_PROPERTIES if p in open_props for c in cs})
            reason, clean = _class_verdicts(loaded, model, env, want, refuted)
            if reason is not None or all(_settled(p, refuted) or p in skip for p in [*REFUTING_CHECKS, "aliasing"]):
                break
            kinds.learn(tiles, clean)
    except Unsupported as e:
        reason = str(e)
    return classes, refuted, reason


def prove_loaded(loaded: LoadedSpec, timeout_s: float = DEFAULT_TIMEOUT, *, old_pass: bool = False) -> ProveRun:
    """Every property of one loaded spec (in this process; :func:`prove` isolates it).
    ``old_pass``: the class properties by :func:`class_pass_old` (the benchmark's baseline)."""
    t_start = time.perf_counter()
    timeout_ms = max(1, int(timeout_s * 1000))
    spec = loaded.spec
    space = SizeSpace(loaded)
    model0 = build_model(loaded, loaded.envs[0])
    results: dict[str, PropertyResult] = {}
    try:
        modes = _tiled_modes(loaded, space, model0)
        terms_expr = [m.extent for m in modes]
        unsupported: str | None = None
    except Unsupported as e:
        modes, terms_expr, unsupported = [], [], str(e)
    ranges = {k: (f"{v.min}..{v.max}" + (f" step {v.multiple_of}" if v.multiple_of > 1 else ""))
              if isinstance(v, SizeRange) else str(v) for k, v in spec.sizes.items()}
    try:
        space.choose_bits([*space.grid, *space.relations, *terms_expr],
                          slack=max([m.tile for m in modes], default=0))
    except Unsupported as e:  # no sound encoding: nothing is decided
        dt = time.perf_counter() - t_start
        return ProveRun(spec=spec.name, path=str(loaded.path), ranges=ranges, assume=list(spec.assume), bits=0,
                        seconds=dt, properties=[PropertyResult(property=p, status="UNKNOWN", method="-",
                                                               seconds=dt, reason=str(e)) for p in PROPERTIES])
    space.check_satisfiable(timeout_ms)
    results["pipeline"] = pipeline_property(loaded, space, model0, timeout_ms)
    if not model0.stages:  # a pipeline alone: no per-thread copy to prove anything of
        dt = time.perf_counter() - t_start
        return ProveRun(spec=spec.name, path=str(loaded.path), ranges=ranges, assume=list(spec.assume),
                        bits=space.bits, seconds=dt,
                        properties=[results.get(p) or PropertyResult(
                            property=p, status="PROVED", method="-", seconds=0.0,
                            reason="nothing to prove: the spec has no per-thread copies") for p in PROPERTIES])
    results["grid"] = _grid_property(space, timeout_ms)

    t0 = time.perf_counter()
    reason = unsupported
    if reason is None:
        reason = _structure_sizes(loaded) or _inside_tiles(model0)
    classes, refuted, reason = (class_pass_old if old_pass else class_pass)(
        loaded, space, model0, modes, reason, timeout_ms, t_start, timeout_s)
    dt = time.perf_counter() - t0
    by_lines = _ldgsts_sides(model0)
    for prop in CLASS_PROPERTIES:
        if prop in refuted:
            results[prop] = refuted[prop].model_copy(update={"seconds": dt, "classes": classes})
        elif prop == "bank_conflicts" and reason is None and by_lines:
            results[prop] = PropertyResult(
                property=prop, status="UNKNOWN", method="z3 classes + simulator", seconds=dt, classes=classes,
                reason=f"{', '.join(by_lines)}: a cp.async.ca destination's wavefronts follow the global lines "
                       "its source reads, which depend on the strides' alignment; the size classes do not "
                       "split on it, so their representatives are not verified for it (verify counts it at "
                       "the samples)")
        elif reason is not None:
            results[prop] = PropertyResult(property=prop, status="UNKNOWN", method="z3 classes + simulator",
                                           seconds=dt, classes=classes, reason=reason)
        else:
            results[prop] = PropertyResult(property=prop, status="PROVED", method="z3 classes + simulator",
                                           seconds=dt, classes=classes,
                                           reason=f"all {classes} size classes verified")
    results.update(_access_results(loaded, space, model0, timeout_ms, t_start + timeout_s, refuted, reason, dt,
                                   classes))
    alias_ref = refuted.get("aliasing")
    results["aliasing"] = _aliasing_property(loaded, space, model0, timeout_ms,
                                             alias_ref.model_copy(update={"seconds": dt, "classes": classes})
                                             if alias_ref else None)
    return ProveRun(spec=spec.name, path=str(loaded.path), ranges=ranges, assume=list(spec.assume),
                    bits=space.bits, seconds=time.perf_counter() - t_start,
                    properties=[results[p] for p in PROPERTIES])


def _undecided(model0: KernelModel) -> frozenset[str]:
    """The class properties the size classes cannot decide, which the class passes neither
    verify nor let keep a class open: ``bank_conflicts`` with a ``cp.async.ca`` destination
    (:func:`_ldgsts_sides`; it is UNKNOWN whatever the representatives show)."""
    return frozenset({"bank_conflicts"}) if _ldgsts_sides(model0) else frozenset()


def _ldgsts_sides(model: KernelModel) -> list[str]:
    """The shared destinations counted by the ``LDGSTS`` rule (``cp.async.ca``): their bank
    conflicts depend on the global addresses, not on the tile type alone, so a class
    representative does not stand for its class."""
    return [f"stage {c.index} dst" for c in model.copies() if c.cp_async and ldgsts_rule(c.dst)]


#: values of each ranged size (from its minimum up) at which the tile-local structure is compared
STRUCTURE_PROBES = 16


def _structure_varies(loaded: LoadedSpec, space: SizeSpace, model0: KernelModel) -> str | None:
    """Where the tile-local structure (threads, partitions, vector widths, ...) differs from
    the first sample's: at every sample and, per ranged size, at its smallest values and its
    maximum (the others at the first sample's values).  The access properties encode that
    structure once, so a difference leaves them UNKNOWN."""
    ref = _fingerprint(model0)
    envs: list[dict[str, int]] = [dict(e) for e in loaded.envs]
    rel = space.relations
    for name, v in loaded.spec.sizes.items():
        if isinstance(v, SizeRange):
            vals = [x for x in range(v.min, min(v.max, v.min + STRUCTURE_PROBES * v.multiple_of) + 1)
                    if x % v.multiple_of == 0] + [v.max - v.max % v.multiple_of]
            envs += [{**loaded.envs[0], name: x} for x in vals]
    for env in envs:
        if not all(r.holds(env) for r in rel):
            continue
        try:
            model = build_model(loaded, env)
        except SpecError:
            continue  # a size the spec refuses (the grid property reports those)
        if _fingerprint(model) != ref:
            return f"the tile-local structure changes with the sizes (at {env})"
    return None


def _access_results(loaded: LoadedSpec, space: SizeSpace, model0: KernelModel, timeout_ms: int, deadline: float,
                    refuted: dict[str, PropertyResult], class_reason: str | None, class_s: float,
                    classes: int) -> dict[str, PropertyResult]:
    """``vectorize`` and ``coalescing``: z3 over sizes and blocks for the global sides; a
    failure at a class representative refutes too; shared sides (``vectorize``) need the
    classes; the spec's sector-ratio expectation is decided in ``access`` (per instruction)."""
    z = access_properties(loaded, space, model0, timeout_ms, deadline)
    varies = _structure_varies(loaded, space, model0)
    if varies is None and class_reason is not None and "structure changes" in class_reason:
        varies = class_reason
    out = {}
    for prop in ACCESS_PROPERTIES:
        r = z[prop]
        if prop in refuted and r.status != "REFUTED":
            r = refuted[prop].model_copy(update={"seconds": class_s + r.seconds, "classes": classes})
        elif r.status == "PROVED" and varies is not None:
            r = r.model_copy(update={"status": "UNKNOWN", "worst": None,
                                     "reason": f"{varies}: the encoding holds one structure"})
        elif r.status == "PROVED" and prop == "vectorize" and class_reason is not None and \
                any(sd.memory == "shared" for sd in model0.sides()):
            r = r.model_copy(update={"status": "UNKNOWN",
                                     "reason": f"global sides proved; shared sides: {class_reason}"})
        out[prop] = r
    return out


def _child(conn: Any, loaded: LoadedSpec, timeout_s: float) -> None:
    try:
        conn.send(("ok", prove_loaded(loaded, timeout_s).model_dump_json()))
    except SpecError as e:
        conn.send(("invalid", str(e)))
    except (ThreadmapError, MemoryError, RecursionError) as e:
        conn.send(("invalid", f"{loaded.path}:1:1: (spec): {e}"))
    except Exception as e:  # noqa: BLE001 -- reported as an internal error, exit 3
        conn.send(("internal", f"{loaded.path}: internal error: {type(e).__name__}: {e}\n"
                               f"{traceback.format_exc(limit=3)}"))
    finally:
        conn.close()


def _timed_out(loaded: LoadedSpec, timeout_s: float) -> ProveRun:
    why = f"time limit of {timeout_s:g} s reached (the solver was stopped)"
    return ProveRun(spec=loaded.spec.name, path=str(loaded.path), ranges={}, assume=list(loaded.spec.assume),
                    bits=0, seconds=timeout_s,
                    properties=[PropertyResult(property=p, status="UNKNOWN", method="-", seconds=timeout_s,
                                               reason=why) for p in PROPERTIES])


def prove_isolated(loaded: LoadedSpec, timeout_s: float) -> tuple[str, ProveRun | str]:
    """Prove one spec in a forked child, killed a few seconds past ``timeout_s`` (a solver that
    ignores its own limit is stopped, not waited for): ``("ok", run)``, or ``("invalid" |
    "internal", message)``."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, loaded, timeout_s), daemon=True)
    proc.start()
    child.close()
    # the child stops itself at the limit (then reports what it decided); a solver may not
    if not parent.poll(timeout_s + 5 + 0.05 * timeout_s):
        proc.kill()
        proc.join()
        return "ok", _timed_out(loaded, timeout_s)
    try:
        kind, payload = parent.recv()
    except EOFError:
        kind, payload = "internal", f"{loaded.path}: internal error: the proving process died (exit {proc.exitcode})"
    proc.join()
    return kind, (ProveRun.model_validate_json(payload) if kind == "ok" else payload)


def prove(paths: Sequence[str | Path], *, timeout_s: float = DEFAULT_TIMEOUT) -> ProveReport:
    """Prove every spec under ``paths`` (files or directories), each in a child process
    stopped after ``timeout_s`` seconds."""
    report = ProveReport(threadmap=__version__, runs=[])
    files: list[Path] = []
    for p in paths:  # a missing path is one invalid target: the others are still proved
        try:
            files += spec_files([p])
        except SpecError as e:
            report.errors.append(SpecErrorEntry(path=str(p), message=str(e)))
    for f in files:
        try:
            loaded = load_spec(f)
        except SpecError as e:
            report.errors.append(SpecErrorEntry(path=str(f), message=str(e)))
            continue
        kind, payload = prove_isolated(loaded, timeout_s)
        if kind == "ok":
            assert isinstance(payload, ProveRun)
            report.runs.append(payload)
        else:
            assert isinstance(payload, str)
            report.errors.append(SpecErrorEntry(path=str(f), message=payload.splitlines()[0],
                                                status="invalid" if kind == "invalid" else "internal"))
    return report
