"""Terminal output of ``threadmap gpu`` and ``threadmap diff`` (rich tables; JSON is the model's)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from threadmap.gpu.log import LogDiff
from threadmap.gpu.report import GpuReport, ProbeMismatch
from threadmap.report.formats import printable


def _sizes(s: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in s.items()) or "-"


def mismatch_text(m: ProbeMismatch) -> str:
    where = f"line {m.line}, " if m.line else ""
    return (f"{where}stage {m.stage}: {m.field} differs at block {m.block}, thread {m.thread}, step {m.step}, "
            f"value {m.value}: device {m.device} vs simulated {m.simulated}")


def render_probe(report: GpuReport, console: Any) -> None:
    from rich.table import Table

    env = report.environment
    head = env.get("gpu") or "host CPU (the probe source compiled as C++)"
    console.print(f"[bold]probe[/bold] on {escape(str(head))}"
                  + (f", driver {env['driver']}, CUDA {env.get('cuda_runtime')}, CuPy {env.get('cupy')}"
                     if env.get("gpu") else ""))
    t = Table(show_lines=False)
    for c in ("spec", "sizes", "stage", "blocks", "records", "mismatches", "kernel"):
        t.add_column(c, justify="right" if c in ("blocks", "records", "mismatches", "kernel") else "left")
    for p in report.probes:
        first = True
        for s in p.stages:
            mm = "[yellow]not probed[/yellow]" if s.skipped else (
                "[green]0[/green]" if s.mismatches == 0 else f"[red]{s.mismatches}[/red]")
            kern = p.seconds.get("kernel")
            t.add_row(escape(printable(p.spec)) if first else "", _sizes(p.sizes) if first else "",
                      f"{s.stage} {escape(printable(s.name or ''))}"[:40],
                      f"{p.blocks_probed}/{p.blocks_total}" if first else "", str(s.rows), mm,
                      f"{kern * 1e3:.2f} ms" if kern and first else "")
            first = False
    console.print(t)
    for p in report.probes:
        for s in p.stages:
            if s.skipped:
                console.print(f"[yellow]{escape(p.spec)}: stage {s.stage} not probed: {escape(s.skipped)}[/yellow]")
            for m in s.first:
                console.print(f"[red]{escape(p.spec)}:{m.line or 1}: {escape(mismatch_text(m))}[/red]")


def render_behaviour(report: GpuReport, console: Any) -> None:
    from rich.table import Table

    if not report.behaviour:
        return
    bw = report.environment.get("copy_gbps")
    console.print(f"[bold]behaviour[/bold] (device copy bandwidth {bw} GB/s)" if bw else "[bold]behaviour[/bold]")
    t = Table()
    for c in ("spec", "sizes", "result", "expected", "agrees", "time", "GB/s", "of copy"):
        t.add_column(c, justify="right" if c in ("time", "GB/s", "of copy") else "left")
    for b in report.behaviour:
        if b.skipped:
            res = f"[yellow]{escape(b.skipped[:60])}[/yellow]"
        elif b.correct:
            res = "[green]correct[/green]"
        else:
            res = (f"[red]missing {b.missing}, dup {b.duplicates}, stray {b.stray}, wrong {b.wrong}"
                   + (f", outside shared tensors {b.out_of_tensor}" if b.out_of_tensor else "") + "[/red]")
        exp = b.expected + (f" ({', '.join(b.expected_failing)})" if b.expected_failing else "")
        ag = ("[green]yes[/green]" if b.agrees else "[red]NO[/red]" if b.agrees is False
              else "[yellow]n/a[/yellow]" if b.correct is not None else "-")
        t.add_row(escape(b.spec), _sizes(b.sizes), res, exp, ag + (f" {escape(b.note)}" if b.note and not b.agrees
                                                                    else ""),
                  f"{b.time_s * 1e6:.1f} us" if b.time_s else "", f"{b.gbps:.0f}" if b.gbps else "",
                  f"{b.of_copy_bandwidth:.0%}" if b.of_copy_bandwidth else "")
    console.print(t)


def render_counters(report: GpuReport, console: Any) -> None:
    from rich.table import Table

    if not report.counters:
        return
    console.print("[bold]counters[/bold] (Nsight Compute): predicted beside measured with the side alone one CTA "
                  "per SM, alone with full occupancy, and with the stage's other side")
    t = Table()
    cols = ("spec", "sizes", "stage", "side", "metric", "predicted", "measured", "concurrent", "in stage", "bits",
            "SASS")
    for col in cols:
        t.add_column(col, justify="right" if col in cols[5:9] else "left")

    def f3(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"
    for c in report.counters:
        for sd in c.sides:
            colour = "green" if sd.agrees else "red" if sd.agrees is False else "yellow"
            t.add_row(escape(c.spec), _sizes(c.sizes), str(c.stage), f"{sd.side} {sd.memory} {sd.op}",
                      "sectors/req" if sd.metric == "sectors_per_request" else "wavefronts/inst", f3(sd.predicted),
                      f"[{colour}]{f3(sd.measured)}[/{colour}]", f3(sd.measured_concurrent), f3(sd.measured_in_stage),
                      str(sd.source_bits), ",".join(map(str, sd.sass_bits)) or "-")
    console.print(t)
    for n in report.notes:
        console.print(f"[yellow]{escape(n)}[/yellow]")


def probe_summary(report: GpuReport) -> str:
    stages = [s for p in report.probes for s in p.stages]
    bad = sum(1 for s in stages if s.mismatches)
    rows = sum(s.rows for s in stages)
    skipped = sum(1 for s in stages if s.skipped)
    return (f"{len(report.probes)} probes, {len(stages)} stages, {rows} records compared: "
            f"{sum(s.mismatches for s in stages)} mismatches in {bad} stages"
            + (f", {skipped} stages not probed" if skipped else "")
            + (f", {len(report.errors)} specs with errors" if report.errors else "")
            + (f"; behaviour: {sum(1 for b in report.behaviour if b.agrees)}/{len(report.behaviour)} as expected"
               + (f" ({unseen} not observable by a run)" if (unseen := sum(
                   1 for b in report.behaviour if b.agrees is None and b.correct is not None)) else "")
               if report.behaviour else "")
            + (f"; counters: {sum(1 for c in report.counters for s in c.sides if s.agrees)}/"
               f"{sum(len(c.sides) for c in report.counters)} sides predicted = measured" if report.counters else ""))


def render_log_diff(d: LogDiff, console: Any) -> None:
    from rich.table import Table

    console.print(f"[bold]diff[/bold] {escape(d.log)} against {escape(d.spec)} ({_sizes(d.sizes)}): "
                  f"{d.lines} lines, {d.records} records, {d.blocks} blocks, {d.threads} threads; sides "
                  + ", ".join(f"stage {k}: {v}" for k, v in sorted(d.side.items())))
    t = Table()
    for c in ("matched", "moved", "missing", "extra", "malformed"):
        t.add_column(c, justify="right")
    t.add_row(str(d.matched), *(f"[red]{n}[/red]" if n else "0"
                                for n in (d.moved, d.missing, d.extra, d.malformed_count)))
    console.print(t)
    for m in d.malformed:
        console.print(f"[yellow]{escape(d.log)}:{m.line}: malformed: {escape(m.why)}: "
                      f"{escape(printable(m.text))}[/yellow]")
    for f in d.findings:
        loc = f"{escape(d.log)}:{f.line}: " if f.line else ""
        it = "" if f.iter is None else f" iter {f.iter}"
        va = "" if f.value is None else f" value {f.value}"
        what = {"moved": f"logged {f.log}, simulated {f.simulated}", "missing": f"simulated {f.simulated} not logged",
                "extra": f"logged {f.log} not simulated"}[f.kind]
        console.print(f"[red]{loc}{f.kind}: stage {f.stage} block {f.block} thread {f.thread}{it}{va}: {what}[/red]")


def _md(text: str) -> str:
    """Text for a Markdown table cell: control characters shown escaped, pipes and backticks
    escaped."""
    return printable(str(text)).replace("|", "\\|").replace("`", "\\`")


def to_markdown(report: GpuReport) -> str:
    """The report as Markdown tables: the environment, the probes, the behaviour runs and the
    counters (what docs/hardware.md holds)."""
    env = report.environment
    out = ["| GPU | driver | CUDA runtime | CuPy | nvcc | copy bandwidth |", "|---|---|---|---|---|---|",
           f"| {env.get('gpu', 'host')} (sm {env.get('compute_capability', '-')}, {env.get('sm_count', '-')} SMs) | "
           f"{env.get('driver', '-')} | {env.get('cuda_runtime', '-')} | {env.get('cupy', '-')} | "
           f"{env.get('nvcc', '-')} | {env.get('copy_gbps', '-')} GB/s |", ""]
    out += ["### Probes", "",
            "| spec | sizes | stages | blocks probed | records | mismatches | kernel | GB/s written |",
            "|---|---|---|---|---|---|---|---|"]
    for p in report.probes:
        k = p.seconds.get("kernel")
        out.append(f"| {_md(p.spec)} | {_sizes(p.sizes)} | {len(p.stages)} | {p.blocks_probed}/{p.blocks_total} | "
                   f"{sum(s.rows for s in p.stages)} | {p.mismatches} | {f'{k * 1e6:.1f} us' if k else '-'} | "
                   f"{f'{p.bytes_written / k / 1e9:.0f}' if k else '-'} |")
    out += ["", "### Behaviour", "",
            "| spec | sizes | result | verifier | agrees | racecheck | time | GB/s | of copy |",
            "|---|---|---|---|---|---|---|---|---|"]
    for b in report.behaviour:
        res = b.skipped or ("correct" if b.correct else
                            f"missing {b.missing}, duplicates {b.duplicates}, stray {b.stray}, wrong {b.wrong}"
                            + (f", outside shared tensors {b.out_of_tensor}" if b.out_of_tensor else ""))
        out.append(f"| {_md(b.spec)} | {_sizes(b.sizes)} | {_md(res)} | {_md(b.note)} | "
                   f"{'yes' if b.agrees else 'n/a' if b.agrees is None else 'NO'} | "
                   f"{'-' if b.race_hazards is None else b.race_hazards} | "
                   f"{f'{b.time_s * 1e6:.1f} us' if b.time_s else '-'} | {f'{b.gbps:.0f}' if b.gbps else '-'} | "
                   f"{f'{b.of_copy_bandwidth:.1%}' if b.of_copy_bandwidth else '-'} |")
    out += ["", "### Counters", "",
            "| spec | sizes | stage | side | metric | predicted | measured | concurrent | in stage | "
            "bits (source / SASS) | stage time | agrees |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def f3(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"
    for c in report.counters:
        for sd in c.sides:
            metric = "sectors/request" if sd.metric == "sectors_per_request" else "wavefronts/instruction"
            ag = "yes" if sd.agrees else "NO" if sd.agrees is False else f"n/a: {sd.note}"
            out.append(f"| {_md(c.spec)} | {_sizes(c.sizes)} | {c.stage} | {sd.side} {sd.memory} {sd.op} | "
                       f"{metric} | {f3(sd.predicted)} | "
                       f"{f3(sd.measured)} | {f3(sd.measured_concurrent)} | {f3(sd.measured_in_stage)} | "
                       f"{sd.source_bits} / {','.join(map(str, sd.sass_bits)) or '-'} | "
                       f"{f'{c.time_s * 1e6:.1f} us' if c.time_s else '-'} | {ag} |")
    if report.errors:
        out += ["", "### Errors", ""] + [f"- {_md(e.message)}" for e in report.errors]
    return "\n".join(out) + "\n"


def render_user_kernel(run: Any, console: Any) -> None:
    """``gpu --exe``/``--launcher``: the compiled kernel's sides, then per kind of instruction
    the prediction at the compiled widths beside the measured launch."""
    from rich.table import Table

    from threadmap.report.formats import render_compiled, short_name

    render_compiled(run.compiled, console)
    t = Table(title=escape(f"measured: {printable(short_name(run.kernel))} ({' '.join(run.command)[:80]})"),
              title_justify="left", expand=False)
    for col in ("kind", "sides", "metric", "predicted", "measured", "agrees"):
        t.add_column(col, overflow="fold")

    def cell(inst: float | None, ratio: float | None) -> str:
        return "-" if inst is None or ratio is None else f"{inst:g} x {ratio:.3f}"
    for k in run.kinds:
        colour = "green" if k.agrees else "red" if k.agrees is False else "yellow"
        t.add_row(f"{k.memory} {k.op}", escape(", ".join(k.sides)),
                  "sectors/req" if k.metric == "sectors_per_request" else "wavefronts/inst",
                  cell(k.predicted_instructions, k.predicted),
                  f"[{colour}]{cell(k.measured_instructions, k.measured)}[/{colour}]",
                  "yes" if k.agrees else "no" if k.agrees is False else "-")
    console.print(t)
    for k in run.kinds:
        if k.note:
            console.print(f"  {k.memory} {k.op}: {escape(printable(k.note))}")
    for n in run.notes:
        console.print(f"[yellow]{escape(printable(n))}[/yellow]")
    if run.log is not None:
        render_log_diff(run.log, console)
