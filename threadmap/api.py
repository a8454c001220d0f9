"""threadmap's public Python API: load, verify, simulate and show specs.

Everything the command line does goes through these functions, and so will the HTTP
service::

    import threadmap.api as tm
    report = tm.verify("specs/cute_transpose/row_smem.yaml")          # a VerifyReport
    report.runs[0].verdict, report.runs[0].failing                      # 'fail', ['bank_conflicts']
    report = tm.verify("k.yaml", sizes={"M": 1000}, checks=["predicates"])
    both = tm.verify("specs/ranges/", engine="both")                    # an EngineReport: enumerate and prove
    tables = tm.simulate("k.yaml", blocks=[0])                          # AccessTables per stage
    text = tm.show("k.yaml", stage=0).text                              # print_layout-style grids

Errors: :class:`threadmap.errors.SpecError` (``FILE:LINE:COL: field.path: message``) for an
invalid spec or option, :class:`WorkTooLarge` when a requested enumeration exceeds the
memory budget.  :func:`verify` over several paths collects invalid specs in
``VerifyReport.errors`` and verifies the others.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

from threadmap.errors import SpecError, ThreadmapError
from threadmap.hardware import LINE_BYTES
from threadmap.model import KernelModel, build_model
from threadmap.report.model import Engine, EngineReport, ProveReport, ProveRun, SpecErrorEntry, SpecRun, VerifyReport
from threadmap.simulate.access import AccessTable
from threadmap.simulate.engine import Simulator
from threadmap.spec.load import LoadedSpec, load_spec, loads_spec, spec_files, with_sizes
from threadmap.spec.schema import CHECK_ALIASES, SizeRange
from threadmap.verify import CHECK_NAMES, RunOptions, WorkTooLarge, verify_model
from threadmap.verify.banks import ldgsts_instruction_wavefronts, ldgsts_rule
from threadmap.version import __version__

__all__ = ["CHECK_NAMES", "ENGINES", "EngineReport", "LoadedSpec", "ShowResult", "WorkTooLarge", "check_names",
           "has_range", "load", "models", "show", "simulate", "spec_files", "verify", "verify_spec"]

SpecLike = str | Path | LoadedSpec | Mapping[str, Any]
Progress = Callable[[str, int, int], None]


def load(spec: SpecLike, sizes: Mapping[str, int] | None = None) -> LoadedSpec:
    """A validated spec (from a path, a mapping of its fields, or as given), with ``sizes``
    overriding its sizes."""
    if isinstance(spec, LoadedSpec):
        loaded = spec
    elif isinstance(spec, Mapping):
        # a mapping is validated as the JSON text of itself: errors point into that text
        try:
            text = json.dumps(spec, indent=1)
        except (TypeError, ValueError) as e:
            raise SpecError(f"<dict>:1:1: (spec): not a JSON-like mapping: {e}") from None
        loaded = loads_spec(text, "json", "<dict>")
    else:
        loaded = load_spec(spec)
    return with_sizes(loaded, sizes) if sizes else loaded


def check_names(names: Iterable[str] | None) -> frozenset[str] | None:
    """Validated check names (aliases resolved); None for all checks."""
    if names is None:
        return None
    out = set()
    for n in names:
        c = CHECK_ALIASES.get(n.strip(), n.strip())
        if c not in CHECK_NAMES:
            raise ThreadmapError(f"unknown check {n!r}; checks: {', '.join(CHECK_NAMES)}")
        out.add(c)
        if c in ("coverage", "grid_coverage", "predicates"):  # decided together; coverage means both
            out |= {"grid_coverage", "predicates"}
    return frozenset(out)


def models(spec: SpecLike, sizes: Mapping[str, int] | None = None) -> list[KernelModel]:
    """The spec bound to each of its size environments."""
    loaded = load(spec, sizes)
    return [build_model(loaded, env) for env in loaded.envs]


def verify_spec(spec: SpecLike, *, sizes: Mapping[str, int] | None = None, checks: Iterable[str] | None = None,
                exhaustive: bool = False, max_rows: int | None = None,
                progress: Progress | None = None) -> list[SpecRun]:
    """Verify one spec: one :class:`SpecRun` per size environment."""
    loaded = load(spec, sizes)
    opts = RunOptions(exhaustive=exhaustive, checks=check_names(checks))
    if max_rows is not None:
        opts.max_rows = max_rows
    runs = []
    for env in loaded.envs:
        model = build_model(loaded, env)
        if progress is not None:
            opts.progress = lambda done, total, name=str(loaded.path): progress(name, done, total)
        runs.append(verify_model(model, opts))
    return runs


def _items(targets: SpecLike | Sequence[SpecLike]) -> list[SpecLike]:
    return [targets] if isinstance(targets, (str, Path, LoadedSpec, Mapping)) else list(targets)


def _name(it: SpecLike) -> str:
    return str(it.path if isinstance(it, LoadedSpec) else "<dict>" if isinstance(it, Mapping) else it)


def _expand(items: Sequence[SpecLike], errors: list[SpecErrorEntry]) -> list[SpecLike]:
    """Paths to their spec files (directories searched); a missing path is one invalid target
    in ``errors`` and the others still run."""
    flat: list[SpecLike] = []
    for it in items:
        if isinstance(it, (str, Path)):
            try:
                flat.extend(spec_files([it]))
            except SpecError as e:
                errors.append(SpecErrorEntry(path=str(it), message=str(e)))
        else:
            flat.append(it)
    return flat


def error_entry(name: str, e: BaseException) -> SpecErrorEntry:
    """One spec's failure as a report entry: located input errors are ``invalid``, anything
    unexpected inside threadmap ``internal``."""
    if isinstance(e, SpecError):
        return SpecErrorEntry(path=name, message=str(e))
    if isinstance(e, (WorkTooLarge, ThreadmapError)):
        return SpecErrorEntry(path=name, message=f"{name}:1:1: (spec): {e}")
    if isinstance(e, (MemoryError, RecursionError)):
        return SpecErrorEntry(path=name, message=f"{name}:1:1: (spec): too large to verify ({type(e).__name__})")
    return SpecErrorEntry(path=name, status="internal", message=f"{name}: internal error: {type(e).__name__}: {e}")


def _enumerate(items: Sequence[SpecLike], errors: list[SpecErrorEntry], sizes: Mapping[str, int] | None,
               checks: frozenset[str] | None, exhaustive: bool, max_rows: int | None, progress: Progress | None,
               on_spec: Callable[[str], None] | None) -> VerifyReport:
    report = VerifyReport(threadmap=__version__, runs=[], errors=errors)
    for it in items:
        name = _name(it)
        if on_spec is not None:
            on_spec(name)
        try:
            report.runs.extend(verify_spec(it, sizes=sizes, checks=checks, exhaustive=exhaustive,
                                           max_rows=max_rows, progress=progress))
        except Exception as e:  # noqa: BLE001 - one spec's failure must not stop the others
            report.errors.append(error_entry(name, e))
    return report


def has_range(loaded: LoadedSpec) -> bool:
    """Whether a spec gives a size as a range (``engine="auto"`` proves those)."""
    return any(isinstance(v, SizeRange) for v in loaded.spec.sizes.values())


#: the engines of :func:`verify`; ``enum`` is the command line's short name of ``enumerate``
ENGINES: tuple[Engine, ...] = ("enumerate", "z3", "auto", "both")
ENGINE_ALIASES = {"enum": "enumerate"}
EngineName = Engine | Literal["enum"]


@overload
def verify(targets: SpecLike | Sequence[SpecLike], *, sizes: Mapping[str, int] | None = None,
           checks: Iterable[str] | None = None, exhaustive: bool = False, max_rows: int | None = None,
           progress: Progress | None = None, engine: Literal["enumerate", "enum"] = "enumerate",
           timeout: float | None = None, on_spec: Callable[[str], None] | None = None) -> VerifyReport: ...


@overload
def verify(targets: SpecLike | Sequence[SpecLike], *, sizes: Mapping[str, int] | None = None,
           checks: Iterable[str] | None = None, exhaustive: bool = False, max_rows: int | None = None,
           progress: Progress | None = None, engine: Literal["z3", "auto", "both"],
           timeout: float | None = None, on_spec: Callable[[str], None] | None = None) -> EngineReport: ...


@overload
def verify(targets: SpecLike | Sequence[SpecLike], *, sizes: Mapping[str, int] | None = None,
           checks: Iterable[str] | None = None, exhaustive: bool = False, max_rows: int | None = None,
           progress: Progress | None = None, engine: str, timeout: float | None = None,
           on_spec: Callable[[str], None] | None = None) -> VerifyReport | EngineReport: ...


def verify(targets: SpecLike | Sequence[SpecLike], *, sizes: Mapping[str, int] | None = None,
           checks: Iterable[str] | None = None, exhaustive: bool = False, max_rows: int | None = None,
           progress: Progress | None = None, engine: str = "enumerate", timeout: float | None = None,
           on_spec: Callable[[str], None] | None = None) -> VerifyReport | EngineReport:
    """Verify specs (paths, directories or loaded specs) with one of the engines:

    * ``enumerate`` (default): run the checks at the spec's sizes (the samples of its ranges);
      returns a :class:`VerifyReport`.
    * ``z3``: prove each property for every size in the spec's ranges (``threadmap prove``);
    * ``auto``: prove the specs that give a size range, enumerate the others;
    * ``both``: enumerate and prove every spec; a property proved for every size that a sample
      fails is a disagreement.

    The last three return an :class:`EngineReport` (its ``verify`` and ``prove`` reports, the
    disagreements, ``exit_status()``); they prove the spec's own ranges, so ``sizes`` is
    refused; ``timeout`` bounds each spec's proof (seconds, default 120; its properties are then
    UNKNOWN).

    An invalid spec is reported in ``errors`` (status ``invalid``) and the others still run;
    an unexpected failure inside threadmap is reported with status ``internal``.
    ``on_spec(name)`` is called as each spec starts, ``progress(name, done, total)`` as the
    enumeration goes through its blocks."""
    eng = ENGINE_ALIASES.get(engine, engine)
    if eng not in ENGINES:
        raise ThreadmapError(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}")
    check_set = check_names(checks)
    errors: list[SpecErrorEntry] = []
    flat = _expand(_items(targets), errors)
    if eng == "enumerate":
        return _enumerate(flat, errors, sizes, check_set, exhaustive, max_rows, progress, on_spec)
    if sizes is not None:
        raise ThreadmapError(f"engine {eng} proves the spec's own ranges: give no sizes")
    # the prover (and z3) load only for these engines: ``import threadmap.api`` stays light
    from threadmap.prove.run import DEFAULT_TIMEOUT, disagreements, prove_isolated

    loaded: list[LoadedSpec] = []
    for it in flat:  # each spec is read once, for both engines
        try:
            loaded.append(load(it))
        except Exception as e:  # noqa: BLE001 - one spec's failure must not stop the others
            errors.append(error_entry(_name(it), e))
    proved = [x for x in loaded if eng != "auto" or has_range(x)]
    enumerated = [] if eng == "z3" else [x for x in loaded if eng == "both" or not has_range(x)]
    # the load errors are reported once: by the prover for z3, else by the enumeration
    ver = _enumerate(enumerated, errors if eng != "z3" else [], None, check_set, exhaustive, max_rows,
                     progress, on_spec)
    proofs = ProveReport(threadmap=__version__, runs=[], errors=errors if eng == "z3" else [])
    for x in proved:
        if on_spec is not None:
            on_spec(str(x.path))
        kind, payload = prove_isolated(x, DEFAULT_TIMEOUT if timeout is None else timeout)
        if isinstance(payload, ProveRun):
            proofs.runs.append(payload)
        else:
            proofs.errors.append(SpecErrorEntry(path=str(x.path), message=payload.splitlines()[0],
                                                status="invalid" if kind == "invalid" else "internal"))
    return EngineReport(engine=eng, verify=ver, prove=proofs,
                        disagreements=disagreements(ver.runs, proofs.runs) if eng == "both" else [])


def simulate(spec: SpecLike, *, sizes: Mapping[str, int] | None = None,
             blocks: Sequence[int] | np.ndarray | None = None,
             env_index: int = 0) -> list[tuple[AccessTable, AccessTable]]:
    """The access tables of every copy stage for ``blocks`` (default block 0), under the
    spec's first size environment (or ``env_index``)."""
    ms = models(spec, sizes)
    model = ms[env_index]
    ids = np.asarray([0] if blocks is None else blocks, dtype=np.int64)
    if ids.size == 0 or int(ids.min()) < 0 or int(ids.max()) >= model.num_blocks:
        raise ThreadmapError(f"blocks must lie in [0, {model.num_blocks})")
    sim = Simulator(model)
    return [t for t in sim.tables(ids) if not isinstance(t, str)]


@dataclass(frozen=True)
class ShowResult:
    """``threadmap show``: the text drawings and, on request, an SVG page."""

    text: str
    svg: str | None
    tables: list[AccessTable]
    #: sides whose CUTLASS thread map leaves part of its own tile untouched (also in ``text``)
    warnings: tuple[str, ...] = ()


def thread_map_warnings(model: KernelModel, stage: int | None = None) -> list[str]:
    """A line per side whose CUTLASS thread map never reaches some cells of its ``Shape``
    (the map compiles and runs, and silently leaves those elements alone)."""
    out = []
    for sd in model.sides():
        maker = sd.partition.maker
        if (stage is not None and sd.stage != stage) or not maker or maker[0] != "thread_map":
            continue
        tm = maker[1]
        left = tm.untouched()
        if left:
            out.append(f"stage {sd.stage} {sd.which} ({sd.name}): {tm.cxx_type}: {left.message()}")
    return out


def show(spec: SpecLike, *, sizes: Mapping[str, int] | None = None, stage: int | None = None, block: int = 0,
         warp: int = 0, step: int = 0, svg: bool = False) -> ShowResult:
    """Draw each stage's tiles like CuTe's print_layout (thread/value per cell) and the bank or
    sector map of one warp instruction."""
    from threadmap.render import access_map, gmma_svg, gmma_text, page_svg, pipeline_svg, pipeline_text, tile_grid

    envs = models(spec, sizes)
    model = envs[0]
    if not 0 <= block < model.num_blocks:
        raise ThreadmapError(f"--block {block} is outside the grid's {model.num_blocks} blocks")
    if not 0 <= warp < model.warps:
        raise ThreadmapError(f"--warp {warp} is outside the CTA's {model.warps} warps")
    if stage is not None and not any(c.index == stage for c in model.copies()):
        raise ThreadmapError(f"--stage {stage}: no copy stage with that index "
                             f"(copies: {', '.join(str(c.index) for c in model.copies())})")
    sim = Simulator(model)
    env = ", ".join(f"{k}={v}" for k, v in model.env.items())
    head = f"{model.loaded.spec.name}: " + (f"sizes {env}, " if env else "") + f"grid {model.grid}, block {block}"
    if len(envs) > 1:
        head += f" (the first of {len(envs)} size environments; choose one with --sizes)"
    warnings = thread_map_warnings(model, stage)
    parts: list[str] = [head, *(f"warning: {w}" for w in warnings)]
    tables: list[AccessTable] = []
    for cp in model.copies():
        if stage is not None and cp.index != stage:
            continue
        for t in sim.stage_tables(cp, np.array([block])):
            if t.memory == "register":
                continue
            tables.append(t)
            parts.append(tile_grid(t, block, title=f"stage {t.stage} {t.side}: {t.tensor} ({t.memory})"))
            if not 0 <= step < t.steps:
                raise ThreadmapError(f"--step {step} is outside stage {t.stage} {t.side}'s {t.steps} "
                                     "instructions per thread")
            parts.append(access_map(t, block, step=step, warp=warp))
            if t.side == "dst" and "ldgsts_src" in t.meta and ldgsts_rule(cp.dst):
                parts.append(_ldgsts_line(t, t.meta["ldgsts_src"], cp.dst, warp, step))
    gmma_pictures = []
    if model.pipeline is not None:
        parts.append(pipeline_text(model.pipeline.protocol))
        for g in model.pipeline.gmma:
            if g.error is not None or not g.descriptors:
                parts.append(f"wgmma operand {g.operand.upper()} ({g.tensor}): no descriptor: {g.error}")
                continue
            d = g.descriptors[(0, 0)]
            title = (f"wgmma operand {g.operand.upper()} ({g.tensor}, {g.major}-major), block (0,0) of "
                     f"{g.block[0]} x {g.block[1]}, stage placed at byte {g.placed_at}")
            parts.append(gmma_text(title, d, g.major, g.block, g.elem_bits))
            gmma_pictures.append(gmma_svg(title, d, g.major, g.block, g.elem_bits))
    picture = None
    if svg:
        picture = page_svg(tables, block) if tables or model.pipeline is None else \
            (gmma_pictures[0] if gmma_pictures else pipeline_svg(model.pipeline.protocol))
    return ShowResult("\n".join(parts), picture, tables, tuple(warnings))


def _ldgsts_line(t: AccessTable, src: AccessTable, side: Any, warp: int, step: int) -> str:
    """What a ``cp.async.ca`` instruction costs beside its bank map (which shows the banks as a
    store serves them): the LDGSTS rule's wavefronts, as ``verify`` counts them."""
    wf, ideal = ldgsts_instruction_wavefronts(t, src, side.cp_async_zfill)
    i = warp * t.steps + step
    rows = range(i * t.instruction_rows, (i + 1) * t.instruction_rows, t.vec)
    lines = len({int(src.addr[r]) // LINE_BYTES for r in rows if t.pred[r]})
    return (f"cp.async.ca (LDGSTS): {int(wf[i])} wavefronts (ideal {int(ideal[i])}): it writes shared memory one "
            f"global 128-byte line at a time and its lanes read {lines} lines (the map shows the banks as a store "
            "would use them)")


def describe_error(e: BaseException) -> str:
    """One line for an error (the CLI prints it after ``threadmap: error:``)."""
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def jsonable(x: Any) -> Any:
    """numpy values -> JSON types (for machine-readable dumps of tables)."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x
