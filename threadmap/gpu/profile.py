"""Hardware counters (Nsight Compute) and race checks (compute-sanitizer) of behaviour kernels.

Each copy stage has a kernel of its own (``<uid>_stage<k>``, only that stage's loads and
stores), so a counter read for it is that stage's alone.  A child process launches every
stage kernel once under ``ncu --clock-control none``; per stage and memory side the
verifier's prediction is set beside the measurement:

* global memory: sectors per request, ``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum``
  over ``l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum``, against the coalescing
  check's sectors over its requests;
* shared memory: wavefronts per instruction,
  ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum`` over
  ``smsp__inst_executed_op_shared_{ld,st}.sum``, against the bank check's;
* the access width: the bits the generated source asks for (the declared vector where the
  verifier finds it legal) beside the widths of the SASS instructions (``cuobjdump -sass``):
  the compiler may split what the source asks for;
* a ``cp.async`` stage (``LDGSTS``, both sides one instruction): each side from the ``ldgsts``
  counters of the same kernel (``LDGSTS_METRICS``), the global side's sectors per request and
  the shared side's wavefronts per instruction, "not measured" where this ncu lists none.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from threadmap.gpu.execute import KERNEL_VARIANTS
from threadmap.gpu.report import SideCounters, StageCounters
from threadmap.gpu.toolchain import find_tool, sass_widths
from threadmap.verify.banks import ldgsts_rule

OPS = ("ld", "st")
METRICS = [f"l1tex__t_sectors_pipe_lsu_mem_global_op_{o}.sum" for o in OPS] + \
    [f"l1tex__t_requests_pipe_lsu_mem_global_op_{o}.sum" for o in OPS] + \
    [f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{o}.sum" for o in OPS] + \
    [f"smsp__inst_executed_op_shared_{o}.sum" for o in OPS] + \
    [f"smsp__inst_executed_op_global_{o}.sum" for o in OPS] + \
    ["gpu__time_duration.sum"]
#: warp-level SASS instruction counts, where this ncu has them (they leave out instructions
#: whose lanes are all predicated off, which smsp__inst_executed counts)
SASS_METRICS = [f"smsp__sass_inst_executed_op_{m}_{o}.sum" for m in ("shared", "global") for o in OPS]
#: the counters of a cp.async stage (``LDGSTS``: one instruction reads global memory and writes
#: shared memory), per quantity the ways to read it, first choice first: one metric, or metrics
#: whose sum it is (the L1-cached ``.ca`` and the bypassing ``.cg`` forms).  Each is asked for
#: only where ``ncu --query-metrics`` lists it; a quantity none of whose ways was measured is
#: "not measured".
LDGSTS_METRICS: dict[str, tuple[tuple[str, ...], ...]] = {
    # the H200's ncu has no ldgsts sector or request metric: it counts an LDGSTS's global reads
    # with the global loads (a cp.async stage kernel issues no other global load)
    "sectors": (("l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum",),
                ("l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum",
                 "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum"),
                ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",)),
    "requests": (("l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum",),
                 ("l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_access.sum",
                  "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum"),
                 ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",)),
    "instructions": (("smsp__inst_executed_op_ldgsts.sum",),),
    "sass_instructions": (("smsp__sass_inst_executed_op_ldgsts.sum",), ("sm__sass_inst_executed_op_ldgsts.sum",)),
    "wavefronts": (("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",),
                   ("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",)),
    "bank_conflicts": (("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",),),
}


def listed(name: str, text: str) -> bool:
    """Whether ``ncu --query-metrics`` output ``text`` lists metric ``name`` (its base name, the
    whole word: ``..._op_ldgsts`` is not listed by ``..._op_ldgsts_cache_access``)."""
    base = name.rsplit(".", 1)[0]
    return re.search(rf"(?<![\w]){re.escape(base)}(?![\w])", text) is not None


def available_metrics(exe: str, cp_async: bool = True) -> list[str]:
    """METRICS plus those of SASS_METRICS that ``ncu --query-metrics`` lists, and (``cp_async``)
    per quantity of LDGSTS_METRICS its first way whose metrics are all listed (an unknown metric
    fails the whole ncu run, so no more are asked for than needed)."""
    try:
        text = subprocess.run([exe, "--query-metrics"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        text = ""
    extra = [m for m in SASS_METRICS if listed(m, text)]
    for ways in LDGSTS_METRICS.values() if cp_async else ():
        extra += next((list(way) for way in ways if all(listed(m, text) for m in way)), [])
    return METRICS + list(dict.fromkeys(extra))


def ldgsts(row: dict[str, str], quantity: str) -> float | None:
    """A cp.async quantity of one kernel's row: the first of its ways whose every metric was
    measured, summed; None when none was."""
    for way in LDGSTS_METRICS[quantity]:
        vals = [number(row.get(m)) for m in way]
        if all(v is not None for v in vals):
            return float(sum(v for v in vals if v is not None))
    return None


SASS_OP = {("global", "src"): "LDG", ("global", "dst"): "STG", ("shared", "src"): "LDS", ("shared", "dst"): "STS"}
#: why a cp.async.cg stage's shared side is measured but not compared (docs/hardware.md)
NOT_COMPARABLE = ("not comparable: the bypassing cp.async.cg form's (LDGSTS.BYPASS) shared writes are not counted "
                  "by address (the L1-allocating .ca form is)")
#: relative difference under which a measured ratio equals the predicted one (float printing)
TOLERANCE = 1e-6


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def racecheck(items: Sequence[Any], legal: dict[str, Any],
              timeout: float = 540) -> tuple[dict[str, int | None], list[str]]:
    """Hazards compute-sanitizer's racecheck reports per behaviour kernel with shared memory
    (first size environment of each spec, on at most 4 x 4 blocks), all in one child process;
    by behaviour uid.  Empty (with a note) when compute-sanitizer is absent or fails."""
    exe = find_tool("compute-sanitizer")
    if exe is None:
        return {}, ["compute-sanitizer not found: no race check"]
    first: dict[str, Any] = {}
    for it in items:
        if it.behaviour is not None and it.behaviour.shared_bytes:
            first.setdefault(it.path, it)
    uids = [it.behaviour.uid for it in first.values()]
    with tempfile.TemporaryDirectory(prefix="threadmap_race_") as tmp:
        lp, up = Path(tmp) / "legal.json", Path(tmp) / "uids.json"
        lp.write_text(json.dumps(legal))
        up.write_text(json.dumps(uids))
        cmd = [exe, "--tool", "racecheck", "--racecheck-report", "hazard", "--show-backtrace", "no",
               "--print-limit", "100000",
               sys.executable, "-m", "threadmap.gpu.execute", "race", str(lp), str(up),
               *sorted({it.path for it in items})]
        try:
            # one pipe for both streams: the child's markers and the sanitizer's reports in order
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                                  env=_child_env())
        except subprocess.TimeoutExpired:
            return {}, [f"racecheck ran past {timeout:.0f} s"]
    _keep_log("racecheck.txt", proc.stdout)
    out = split_race_report(proc.stdout, uids)
    notes = [] if out else [f"racecheck gave no per-kernel report ({proc.returncode}): {proc.stdout[-800:]}"]
    return out, notes


def _keep_log(name: str, text: str) -> None:
    """A profiler's raw output, kept under ``$THREADMAP_PROFILE_LOG`` when set (the device run)."""
    d = os.environ.get("THREADMAP_PROFILE_LOG")
    if d:
        Path(d, name).write_text(text[-(4 << 20):])


def split_race_report(text: str, uids: Sequence[str]) -> dict[str, int | None]:
    """Hazards per kernel from racecheck's output, cut at the child's ``TM-LAUNCH uid`` lines;
    a kernel whose ``TM-DONE`` line is missing (the child died) gets None."""
    out: dict[str, int | None] = {}
    cur: str | None = None
    hazards = 0
    for line in text.splitlines():
        m = re.match(r"TM-(LAUNCH|DONE) (\w+)", line)
        if m and m.group(1) == "LAUNCH":
            cur, hazards = m.group(2), 0
        elif m and cur == m.group(2):
            out[m.group(2)] = hazards
            cur = None
        elif cur is not None and re.search(r"(Error|Warning): .*(Race reported|Potential \w+ hazard)", line):
            hazards += 1
    for u in uids:
        out.setdefault(u, None)
    return out


def parse_ncu_csv(text: str) -> list[dict[str, str]]:
    """Rows of ``ncu --csv --page raw`` (its log lines dropped; the units row skipped)."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    return [r for r in rows if r.get("ID", "").strip().isdigit()]


def number(v: str | None) -> float | None:
    """An ncu cell as a number (thousands separators dropped); None when absent or not one."""
    if v is None:
        return None
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return None


def stage_kernels(items: Sequence[Any]) -> list[str]:
    """The kernels profiled for ``items``: every variant of every stage of every item (each
    size environment of each spec) that has a behaviour kernel."""
    return [it.behaviour.stage_kernel(s, w, ser) for it in items if it.behaviour
            for s in it.behaviour.stages for w, ser in KERNEL_VARIANTS]


def stage_counters(items: Sequence[Any], cubin: Path, legal: dict[str, Any],
                   timeout: float | None = None) -> tuple[list[StageCounters], list[str]]:
    """Profile every stage kernel of ``items`` (one child process under ncu, rebuilding the
    items from ``legal``) and set each side's measurement beside the prediction.  ``timeout``:
    540 s, or 2 s per kernel when there are more."""
    notes: list[str] = []
    exe = find_tool("ncu")
    if exe is None:
        return [], ["ncu not found: no counters measured"]
    kernels = stage_kernels(items)
    timeout = timeout or max(540.0, 2.0 * len(kernels))
    metrics = available_metrics(exe, any(it.behaviour and it.behaviour.cp_async_stages for it in items))
    with tempfile.TemporaryDirectory(prefix="threadmap_ncu_") as tmp:
        order_path, lp, kp = Path(tmp) / "order.json", Path(tmp) / "legal.json", Path(tmp) / "kernels.json"
        lp.write_text(json.dumps(legal))
        kp.write_text(json.dumps(kernels))

        def run(metrics: list[str]) -> subprocess.CompletedProcess[str]:
            cmd = [exe, "--clock-control", "none", "--target-processes", "all",
                   "-k", r"regex:^tm_.*_stage[0-9]+(_src|_dst)?(_solo)?$", "--metrics", ",".join(metrics),
                   "--csv", "--page", "raw",
                   sys.executable, "-m", "threadmap.gpu.execute", "stages", str(order_path), str(lp), str(kp),
                   *sorted({it.path for it in items})]
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_child_env())
        try:
            proc = run(metrics)
            asked = [m for m in metrics if "ldgsts" in m]
            if proc.returncode != 0 and asked:
                # a listed ldgsts metric this ncu will not collect must not cost every other counter
                notes.append(f"ncu failed with the ldgsts metrics ({', '.join(asked)}): cp.async sides not "
                             f"measured: {(proc.stderr or proc.stdout)[-600:]}")
                proc = run([m for m in metrics if m not in asked])
        except subprocess.TimeoutExpired:
            return [], [f"ncu ran past {timeout:.0f} s: no counters"]
        _keep_log("ncu.csv", proc.stdout)
        if proc.returncode != 0 or not order_path.exists():
            return [], [*notes, f"ncu failed ({proc.returncode}): {(proc.stderr or proc.stdout)[-1500:]}"]
        rows = {r.get("Kernel Name", "").split("(")[0].strip(): r for r in parse_ncu_csv(proc.stdout)}
    out: list[StageCounters] = []
    for it in items:
        if it.behaviour is None:
            continue
        for st in it.behaviour.stages:
            kname = it.behaviour.stage_kernel(st)
            row = rows.get(kname)
            sc = StageCounters(spec=it.path, name=it.model.name, sizes=dict(it.model.env), stage=st,
                               line=it.model.stage_line(st))
            if row is None:
                notes.append(f"{it.path}: stage {st}: ncu reported no kernel {kname}")
                out.append(sc)
                continue
            t = number(row.get("gpu__time_duration.sum"))
            sc.time_s = t / 1e9 if t is not None else None
            sass: dict[str, list[int]] = {}
            cp = it.model.stages[st]
            res = {(r.check, r.stage, r.side): r for r in it.verified.results}
            for side in cp.sides():
                if side.tensor is None or side.memory not in ("global", "shared"):
                    continue
                solo = rows.get(it.behaviour.stage_kernel(st, side.which, True))
                sd = side_counters(it, res, st, side, solo or {},
                           sass_widths(cubin, it.behaviour.stage_kernel(st, side.which, True)))
                alone = rows.get(it.behaviour.stage_kernel(st, side.which)) or {}
                sd.measured_concurrent = side_counters(it, res, st, side, alone, sass).measured
                sd.measured_in_stage = side_counters(it, res, st, side, row, sass).measured
                sc.sides.append(sd)
            out.append(sc)
    return out, notes


def side_counters(it: Any, res: dict[tuple[str, int | None, str | None], Any], stage: int, side: Any,
                  row: dict[str, str], sass: dict[str, list[int]]) -> SideCounters:
    """One side's prediction (``res``: the verifier's results by check, stage and side) beside
    one kernel's counters (``row``) and SASS widths."""
    op = "ld" if side.which == "src" else "st"
    bits = it.behaviour.access_bits.get((stage, side.which), side.elem_bits)
    if stage in it.behaviour.cp_async_stages:
        return _ldgsts_side(res, stage, side, row, sass, bits)
    sd = SideCounters(side=side.which, memory=side.memory, op=op,
                      metric="sectors_per_request" if side.memory == "global" else "wavefronts_per_instruction",
                      source_bits=bits, sass_bits=sass.get(SASS_OP[(side.memory, side.which)], []))
    if side.memory == "global":
        r = res.get(("coalescing", stage, side.which))
        if r is not None and hasattr(r.summary, "requests"):
            sd.predicted_raw = {"sectors": r.summary.sectors, "requests": r.summary.requests}
            sd.predicted = r.summary.sectors / r.summary.requests if r.summary.requests else 0.0
        num, den = (number(row.get(f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum")),
                    number(row.get(f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum")))
        sd.measured_raw = {"sectors": num or 0.0, "requests": den or 0.0,
                           "instructions": number(row.get(f"smsp__inst_executed_op_global_{op}.sum")) or 0.0,
                           "sass_instructions": number(row.get(f"smsp__sass_inst_executed_op_global_{op}.sum")) or 0.0}
    else:
        r = res.get(("bank_conflicts", stage, side.which))
        if r is not None and hasattr(r.summary, "wavefronts"):
            sd.predicted_raw = {"wavefronts": r.summary.wavefronts, "instructions": r.summary.instructions}
            sd.predicted = r.summary.wavefronts / r.summary.instructions if r.summary.instructions else 0.0
        issued = number(row.get(f"smsp__inst_executed_op_shared_{op}.sum"))
        sass_inst = number(row.get(f"smsp__sass_inst_executed_op_shared_{op}.sum"))
        num, den = (number(row.get(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum")),
                    sass_inst if sass_inst is not None else issued)
        sd.measured_raw = {"wavefronts": num or 0.0, "instructions": den or 0.0, "issued": issued or 0.0}
    sd.measured = (num / den) if num is not None and den else (0.0 if den == 0 else None)
    declared = side.vec * side.elem_bits
    if bits != declared:
        # the declared access is illegal here (misaligned or split): the kernel moves single
        # elements, which is not the instruction the prediction is for
        sd.note = (f"the declared {declared}-bit access is illegal at these sizes; the kernel issued "
                   f"{bits}-bit accesses: not comparable")
        return sd
    if sd.predicted is not None and sd.measured is not None:
        same = abs(sd.predicted - sd.measured) <= TOLERANCE * max(1.0, abs(sd.predicted))
        width_ok = not sd.sass_bits or sd.sass_bits == [bits]
        sd.agrees = same and width_ok
    return sd


def _ldgsts_side(res: dict[tuple[str, int | None, str | None], Any], stage: int, side: Any, row: dict[str, str],
                 sass: dict[str, list[int]], bits: int) -> SideCounters:
    """One side of a cp.async stage: the one ``LDGSTS`` instruction measured from its global side
    (sectors per request) or its shared side (wavefronts per instruction), with the
    ``LDGSTS_METRICS``; "not measured" where this ncu has none of a quantity's metrics."""
    sd = SideCounters(side=side.which, memory=side.memory, op="ldgsts",
                      metric="sectors_per_request" if side.memory == "global" else "wavefronts_per_instruction",
                      source_bits=bits, sass_bits=sass.get("LDGSTS", []))
    issued, sass_inst = ldgsts(row, "instructions"), ldgsts(row, "sass_instructions")
    if side.memory == "global":
        r = res.get(("coalescing", stage, side.which))
        if r is not None and hasattr(r.summary, "requests"):
            sd.predicted_raw = {"sectors": r.summary.sectors, "requests": r.summary.requests}
            sd.predicted = r.summary.sectors / r.summary.requests if r.summary.requests else 0.0
        num, den, what = ldgsts(row, "sectors"), ldgsts(row, "requests"), "global sectors or requests"
        sd.measured_raw = {"sectors": num or 0.0, "requests": den or 0.0}
    else:
        r = res.get(("bank_conflicts", stage, side.which))
        if r is not None and hasattr(r.summary, "wavefronts"):
            sd.predicted_raw = {"wavefronts": r.summary.wavefronts, "instructions": r.summary.instructions}
            sd.predicted = r.summary.wavefronts / r.summary.instructions if r.summary.instructions else 0.0
        num, den, what = ldgsts(row, "wavefronts"), sass_inst if sass_inst is not None else issued, \
            "shared wavefronts"
        sd.measured_raw = {"wavefronts": num or 0.0, "instructions": den or 0.0}
        conflicts = ldgsts(row, "bank_conflicts")
        if conflicts is not None:
            sd.measured_raw["bank_conflicts"] = conflicts
    sd.measured_raw.update({"issued": issued or 0.0, "sass_instructions": sass_inst or 0.0})
    if num is None or den is None:
        if row:
            sd.note = f"not measured: this ncu has no LDGSTS {what} metric"
        return sd
    sd.measured = num / den if den else 0.0
    if side.memory == "shared" and not ldgsts_rule(side):
        # measured on an H200: none counted for an isolated warp, 3/4 of the .ca rule in these
        # kernels -- the counter is not a function of the addresses for this form
        sd.note = NOT_COMPARABLE
        return sd
    if sd.predicted is not None:
        same = abs(sd.predicted - sd.measured) <= TOLERANCE * max(1.0, abs(sd.predicted))
        sd.agrees = same and (not sd.sass_bits or sd.sass_bits == [bits])
    return sd
