"""``threadmap gpu``: probe specs with the real templates, on the device or on the host.

Every spec of a run and every one of its size environments becomes one probe program; all of
them go into ONE translation unit, so a run compiles once (nvcc takes seconds per CuTe
instantiation set, not per spec) and CuPy's cache makes the next run's compile free.  Blocks:
the whole grid when its records fit :data:`MAX_ROWS`, else the grid's corners, blocks on its
last row/column/slice (the ragged edges) and a seeded sample of the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from threadmap.api import spec_files
from threadmap.errors import SpecError, ThreadmapError
from threadmap.gpu.compare import diff_stage
from threadmap.gpu.device import NoDevice, available, environment, load_module, run_probes
from threadmap.gpu.probe import ProbeProgram, StageProbe, expected, probe_program, run_host
from threadmap.gpu.programs import Item, build_programs, legal_map, spec_models, suite_source
from threadmap.gpu.report import GpuReport, ModelProbe
from threadmap.gpu.report import StageProbe as StageProbeReport
from threadmap.gpu.toolchain import ARCHS, check_device
from threadmap.model import KernelModel
from threadmap.report.model import SpecErrorEntry
from threadmap.simulate.engine import Simulator

Where = Literal["auto", "host", "device"]

#: records (block, thread, value) one stage's probe writes at most, per side of the machine
MAX_ROWS = {"device": 1 << 24, "host": 1 << 20}
#: bytes of records one stage's probe may write (the host holds them twice while diffing)
MAX_PROBE_BYTES = 1 << 30


def select_blocks(model: KernelModel, per_block: int, max_rows: int, seed: int = 0) -> np.ndarray:
    """Linear block ids to probe: all when they fit, else corners, edge blocks and a sample."""
    n = model.num_blocks
    k = max(1, max_rows // max(1, per_block))
    if n <= k:
        return np.arange(n, dtype=np.int64)
    gx, gy, gz = model.grid
    rng = np.random.default_rng(seed)

    def lin(x: Any, y: Any, z: Any) -> Any:
        return x + gx * (y + gy * z)

    picks = [lin(x, y, z) for x in {0, gx - 1} for y in {0, gy - 1} for z in {0, gz - 1}]
    m = max(1, (k - len(picks)) // 4)
    # the last column, row and slice: where the ragged edges of the tensors are
    picks += list(lin(gx - 1, rng.integers(0, gy, m), rng.integers(0, gz, m)))
    picks += list(lin(rng.integers(0, gx, m), gy - 1, rng.integers(0, gz, m)))
    picks += list(lin(rng.integers(0, gx, m), rng.integers(0, gy, m), gz - 1))
    out = np.unique(np.asarray(picks, dtype=np.int64))[:k]
    while out.size < k:  # n > k: each round adds at least one new block with high probability
        out = np.unique(np.concatenate([out, rng.integers(0, n, k - out.size, dtype=np.int64)]))
    return out


@dataclass
class _Job:
    path: str
    model: KernelModel
    program: ProbeProgram
    probe: StageProbe
    blocks: np.ndarray


def probe(paths: Sequence[str | Path], *, where: Where = "auto", sizes: Mapping[str, int] | None = None,
          max_rows: int | None = None, progress: Callable[[str], None] | None = None) -> GpuReport:
    """Probe every spec under ``paths`` and diff it with the simulator (``threadmap gpu`` on the
    host, or on a device without the behaviour runs)."""
    report = GpuReport()
    on = _where(where)
    report.environment = environment() if on == "device" else {"where": "host"}
    found: list[tuple[str, KernelModel, ProbeProgram]] = []
    for f in _files(paths, report):
        try:
            found += [(str(f), m, probe_program(m)) for m in spec_models(f, sizes)]
        except (SpecError, ThreadmapError) as e:
            report.errors.append(_error(f, e))
    _probe_into(report, found, on, max_rows or MAX_ROWS[on], None, progress)
    return report


def _files(paths: Sequence[str | Path], report: GpuReport) -> list[Path]:
    """The spec files under ``paths``, each once (``a.yaml a.yaml ./a.yaml`` is one spec)."""
    files: list[Path] = []
    seen: set[Path] = set()
    for p in paths:
        try:
            for f in spec_files([p]):
                if f.resolve() not in seen:
                    seen.add(f.resolve())
                    files.append(f)
        except SpecError as e:
            report.errors.append(SpecErrorEntry(path=str(p), message=str(e)))
    return files


def _error(f: Path | str, e: Exception) -> SpecErrorEntry:
    msg = str(e) if isinstance(e, SpecError) else f"{f}:1:1: (spec): {e}"
    return SpecErrorEntry(path=str(f), message=msg)


def _probe_into(report: GpuReport, found: Sequence[tuple[str, KernelModel, ProbeProgram]], on: str, limit: int,
                mod: Any, progress: Callable[[str], None] | None) -> None:
    """Run the probes of ``found`` (on the host, or on the device with ``mod`` when given) and
    append one ModelProbe per model to the report."""
    jobs: list[_Job] = []
    results: list[tuple[ModelProbe, list[_Job]]] = []
    for path, m, prog in found:
        # records per stage: at most `limit`, and at most MAX_PROBE_BYTES of them
        mine = [_Job(path, m, prog, s, select_blocks(m, s.threads * s.values,
                                                     min(limit, MAX_PROBE_BYTES // (8 * s.width))))
                for s in prog.stages]
        mp = ModelProbe(spec=path, name=m.name, sizes=dict(m.env), grid=m.grid, blocks_total=m.num_blocks,
                        blocks_probed=max((j.blocks.size for j in mine), default=0), where=on,  # type: ignore[arg-type]
                        stages=[StageProbeReport(stage=i, name=_stage_name(m, i), line=m.stage_line(i),
                                                 skipped=why) for i, why in prog.skipped])
        jobs += mine
        results.append((mp, mine))
    if not jobs:
        report.probes += [mp for mp, _ in results]
        return
    if progress:
        progress(f"probing {len(results)} specs x sizes ({len(jobs)} stages) on the {on}")
    t0 = time.perf_counter()
    triples = [(j.program, j.probe, j.blocks) for j in jobs]
    if on == "device":
        outs, secs = run_probes(triples, mod)
    else:
        outs, secs = run_host(triples), [0.0] * len(jobs)
    report.environment["probe_compile_and_run_s"] = round(time.perf_counter() - t0, 3)
    by_job = {id(j): o for j, o in zip(jobs, outs)}
    timing = {id(j): t for j, t in zip(jobs, secs)}
    for mp, mine in results:
        t1 = time.perf_counter()
        sim = Simulator(mine[0].model) if mine else None
        for j in mine:
            want, real = expected(j.model, j.probe, j.blocks, sim)
            mp.stages.append(diff_stage(j.model, j.probe, j.blocks, by_job[id(j)], want, real))
            mp.bytes_written += by_job[id(j)].nbytes
        mp.stages.sort(key=lambda s: s.stage)
        mp.seconds = {"diff": round(time.perf_counter() - t1, 4)}
        kt = sum(timing[id(j)] for j in mine)
        if kt:
            mp.seconds["kernel"] = round(kt, 6)
        report.probes.append(mp)


def _stage_name(m: KernelModel, i: int) -> str | None:
    st = m.stages[i]
    return None if isinstance(st, str) else st.name


def _where(where: Where) -> Literal["host", "device"]:
    if where == "host":
        return "host"
    ok, why = available()
    if where == "device" and not ok:
        raise NoDevice(why)
    return "device" if ok else "host"


def compile_only(paths: Sequence[str | Path], *, sizes: Mapping[str, int] | None = None,
                 archs: Sequence[str] = ARCHS) -> dict[str, Any]:
    """Compile every generated probe and behaviour kernel's device code for ``archs`` (one
    translation unit, no GPU needed): code generation cannot rot unnoticed."""
    items = build_programs(paths, sizes=sizes)
    t0 = time.perf_counter()
    obj = check_device(suite_source(items), archs)
    n = sum(len(it.probe.stages) for it in items)
    beh = sum(1 for it in items if it.behaviour is not None)
    secs = round(time.perf_counter() - t0, 1)
    return {"programs": len(items), "probe_kernels": n, "behaviour_programs": beh, "archs": list(archs),
            "seconds": secs, "object": str(obj),
            "summary": f"compiled {len(items)} probe programs ({n} kernels) and {beh} behaviour programs for "
                       f"{', '.join(archs)} in {secs} s"}


# ----------------------------------------------------------------------------- the device suite


#: the checks whose failure a behaviour run shows: lost, repeated or stray elements, wrong data
VISIBLE = {"coverage", "grid_coverage", "predicates"}


def observable(it: Item, check: str, stage: int | None, side: str | None) -> bool:
    """Whether a behaviour run can see this failing result: any on a global side (the
    element counts), coverage on a shared side whose accesses leave the tensor (counted per
    side), and results of the whole kernel.  A shared side's lost or repeated elements show
    only through the data they corrupt, if at all."""
    if stage is None or side is None:
        return True
    cp = it.model.stages[stage]
    s = cp.src if side == "src" else cp.dst  # type: ignore[union-attr]
    if s.tensor is None:
        return False
    if s.tensor.memory == "global":
        return True
    r = next((r for r in it.verified.results if (r.check, r.stage, r.side) == (check, stage, side)), None) \
        if it.verified is not None else None
    return check == "coverage" and r is not None and getattr(r.summary, "out_of_bounds", 0) > 0


def judge(it: Item, res: dict[str, Any], race: int | None) -> tuple[bool | None, str]:
    """Whether a behaviour run agrees with the verifier at the same sizes (its failing checks;
    the spec's expectation where there is no verifier run), and why.  None: the verifier's
    failure is one the run cannot observe (never counted as the verifier's error)."""
    if it.verified is not None:
        failing = set(it.verified.failing)
        seen = {r.check for r in it.verified.results if not r.passed and r.check in VISIBLE
                and observable(it, r.check, r.stage, r.side)}
    else:
        exp = it.model.expect
        failing = set(exp.failing_checks) if exp.verdict == "fail" else set()
        seen = failing & VISIBLE
    if failing & VISIBLE:
        if not res["correct"]:
            return True, "fails as the verifier predicts"
        if seen:
            return False, f"expected to fail ({', '.join(sorted(seen))}) but ran correctly"
        if "dataflow" not in failing:
            return None, (f"not observable: {', '.join(sorted(failing & VISIBLE))} fails only on shared or register "
                          "sides, whose lost or repeated elements this run saw no trace of")
    if "dataflow" in failing:
        notes = [] if race is None else [f"racecheck: {race} hazards"]
        notes.append("data wrong" if not res["correct"] else "data correct in this run")
        ok = race is None or race > 0 or not res["correct"]
        return ok, "race expected: " + ", ".join(notes)
    return bool(res["correct"]), "correct" if res["correct"] else "wrong result"


def suite(paths: Sequence[str | Path], *, sizes: Mapping[str, int] | None = None, max_rows: int | None = None,
          behaviour: bool = True, counters: bool = False, racecheck: bool = False,
          progress: Callable[[str], None] | None = None) -> GpuReport:
    """Everything on the device: probes, behaviour runs (correctness, coverage, time, GB/s),
    and optionally Nsight Compute counters per stage and racecheck."""
    from threadmap.gpu import execute
    from threadmap.gpu.report import BehaviourRun
    ok, why = available()
    if not ok:
        raise NoDevice(why)
    report = GpuReport()
    report.environment = environment()
    files = _files(paths, report)
    items = build_programs(files, sizes=sizes, errors=report.errors)
    say = progress or (lambda m: None)
    say(f"compiling {len(items)} probe and {sum(1 for i in items if i.behaviour)} behaviour programs")
    t0 = time.perf_counter()
    mod, cubin = load_module(suite_source(items))
    report.environment["compile_s"] = round(time.perf_counter() - t0, 2)
    _probe_into(report, [(it.path, it.model, it.probe) for it in items], "device", max_rows or MAX_ROWS["device"],
                mod, progress)
    races: dict[str, int | None] = {}
    if racecheck:
        from threadmap.gpu.profile import racecheck as run_racecheck
        say("compute-sanitizer racecheck: every behaviour kernel with shared memory, on 4 x 4 blocks")
        try:
            races, notes = run_racecheck(items, legal_map(items))
            report.notes += notes
            report.notes.append("racecheck ran at each spec's first size environment (on at most 4 x 4 blocks); "
                                "the other sizes' runs have no race count")
        except Exception as e:  # noqa: BLE001 - a failed profiler run is a note, the rest still runs
            report.notes.append(f"racecheck failed: {type(e).__name__}: {e}")
    if behaviour:
        bw = execute.copy_bandwidth()
        report.environment["copy_gbps"] = round(bw, 1)
        say(f"device copy bandwidth {bw:.0f} GB/s; running {len(items)} behaviour kernels")
        for it in items:
            br = BehaviourRun(spec=it.path, name=it.model.name, sizes=dict(it.model.env),
                              expected=it.model.expect.verdict, expected_failing=list(it.model.expect.failing_checks))
            if it.behaviour is None:
                br.skipped = it.why_not
                report.behaviour.append(br)
                continue
            try:
                res = execute.run_behaviour(mod, it.model, it.behaviour)
            except Exception as e:  # noqa: BLE001 - a device error in one spec is that spec's finding
                br.skipped, br.agrees = f"device error: {type(e).__name__}: {e}", False
                report.behaviour.append(br)
                continue
            race = races.get(it.behaviour.uid)
            agrees, note = judge(it, res, race)
            br = br.model_copy(update=dict(
                correct=res["correct"], missing=res["missing"], duplicates=res["duplicates"], stray=res["stray"],
                wrong=res["wrong"], out_of_tensor=res["out_of_tensor"], checked=res["checked"], first=res["first"],
                agrees=agrees, note=note,
                race_hazards=race, time_s=res["time_s"], bytes=res["bytes"], gbps=round(res["gbps"], 2),
                of_copy_bandwidth=round(res["gbps"] / bw, 4) if bw else None))
            report.behaviour.append(br)
    if counters:
        from threadmap.gpu.profile import stage_counters
        # every size environment: a ranged spec's sizes differ in alignment and ragged edges
        n = sum(len(i.behaviour.stages) for i in items if i.behaviour is not None)
        say(f"Nsight Compute: {n} stages at every size environment")
        try:
            report.counters, notes = stage_counters(items, cubin, legal_map(items))
            report.notes += notes
        except Exception as e:  # noqa: BLE001 - a failed profiler run is a note, the rest still runs
            report.notes.append(f"ncu failed: {type(e).__name__}: {e}")
    return report
