"""``threadmap sweep``: audit CUTLASS's generated kernel library (see :mod:`threadmap.sweep`)."""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from threadmap.cli.common import UsageError, path_text, print_rich
from threadmap.sweep import DEFAULT_BATCH

if TYPE_CHECKING:
    from threadmap.sweep.run import Options, ReasonRow, SweepReport


def draw(report: SweepReport, con: Any) -> None:
    """The summary tables: kernels and configurations by kind, findings by check and
    configuration family, reasons for the configurations not analysed."""
    from rich.table import Table

    t = Table(title=f"CUTLASS {report.cutlass} sm{'/sm'.join(report.architectures)} kernels "
                    f"(--kernels {report.kernels_filter})", title_justify="left")
    for col in ("kind", "kernels", "configurations", "in this slice", "analysed (kernels)", "pass",
                "with findings", "not analysed"):
        t.add_column(col, justify="left" if col == "kind" else "right")
    for k in report.kinds:
        t.add_row(k.kind, str(k.kernels), str(k.configurations), str(k.in_slice),
                  f"{k.analysed} ({k.kernels_analysed})", str(k.passed), str(k.with_findings), str(k.not_analysed))
    con.print(t)
    for rows, title in ((report.findings, "Findings (failing checks; one spec file per configuration with -o DIR)"),
                        (report.warnings, "Costs the checks report without failing (spec files in DIR/warnings)")):
        if not rows:
            continue
        f = Table(title=title, title_justify="left")
        f.add_column("check", no_wrap=True)
        f.add_column("configuration family", overflow="fold")
        f.add_column("configurations", justify="right")
        f.add_column("kernels", justify="right")
        f.add_column("spec", overflow="fold")
        f.add_column("example", overflow="fold")
        for r in rows:
            more = f" (+{len(r.specs) - 1})" if len(r.specs) > 1 else ""
            f.add_row(r.check, r.family, str(r.configurations), str(r.kernels), r.specs[0] + more, r.example)
        con.print(f)
    def reason_table(rows: list[ReasonRow], title: str, head: str) -> None:
        if rows:
            n = Table(title=title, title_justify="left")
            for col in (head, "configurations", "kernels", "example"):
                n.add_column(col, overflow="fold")
            for why in rows:
                n.add_row(why.reason, str(why.configurations), str(why.kernels), why.example)
            con.print(n)

    reason_table(report.reasons, "Not analysed", "reason")
    if report.proofs:
        pr = Table(title="Proofs over the size ranges (--prove): configurations (kernels)", title_justify="left")
        for col in ("property", "proved", "refuted", "unknown"):
            pr.add_column(col, justify="left" if col == "property" else "right")
        for p in report.proofs:
            pr.add_row(p.property, f"{p.proved} ({p.kernels_proved})", f"{p.refuted} ({p.kernels_refuted})",
                       f"{p.unknown} ({p.kernels_unknown})")
        con.print(pr)
    reason_table(report.unproved, "Why properties were not decided", "reason (numbers as N)")
    def counted(count: int, what: str) -> str:
        return f"{count} {what}{'' if count == 1 else 's'}"

    if report.not_proved:
        con.print(f"{counted(report.not_proved, 'analysed configuration')} without a proof (sweep with --prove)",
                  markup=False)
    cmp = report.comparison
    if cmp is not None:
        con.print(f"Against CUTLASS {cmp.against}: {counted(cmp.compared, 'configuration')} compared, "
                  f"{counted(cmp.regressions, 'regression')}, {counted(cmp.improvements, 'improvement')}, "
                  f"{cmp.changed} changed otherwise, {cmp.unchanged} unchanged; {cmp.missing} without a row of "
                  f"{cmp.against}", markup=False)
        if cmp.rows:
            c = Table(title=f"Changes from CUTLASS {cmp.against} to {report.cutlass}", title_justify="left")
            for col in ("verdict", "configuration family", "kernel", "kernels", "changes"):
                c.add_column(col, overflow="fold", justify="right" if col == "kernels" else "left")
            for row in cmp.rows:
                c.add_row(row.verdict, row.family, row.kernel, str(row.kernels), "; ".join(row.changes))
            con.print(c)
    if report.not_in_slice:
        con.print("Not in this slice (counted only): " + ", ".join(
            f"{k} {v}" for k, v in sorted(report.not_in_slice.items(), key=lambda kv: -kv[1])), markup=False)

    analysed = sum(k.analysed for k in report.kinds)
    configurations = sum(k.configurations for k in report.kinds)
    con.print(f"{counted(configurations, 'configuration')} {'stands' if configurations == 1 else 'stand'} for "
              f"{counted(sum(k.kernels for k in report.kinds), 'kernel')}; {analysed} analysed "
              f"({counted(sum(k.kernels_analysed for k in report.kinds), 'kernel')}), "
              f"{sum(k.with_findings for k in report.kinds)} with findings; {report.reused} read from "
              f"{path_text(report.db)}"
              + (f" ({report.reverified} of them verified again: an older verifier's)" if report.reverified else "")
              + (f" ({report.reproved} of them proved: no current proof)" if report.reproved else "")
              + f", {report.extracted} extracted, {counted(report.verified, 'spec')} verified "
              f"({report.shared_verifications} shared); {report.seconds:.1f} s", markup=False)


@click.command("sweep")
@click.option("--architectures", default="80", show_default=True,
              help="the architectures whose kernels CUTLASS's generator makes: 80 or 90a")
@click.option("--kernels", default="all", show_default=True,
              help="the generator's kernel filter: comma-separated patterns, '*' between substrings")
@click.option("--db", "db_path", default=None, type=click.Path(dir_okay=False),
              help="the results database (SQLite; default: sweep.db in the compile cache); a rerun does only "
                   "the configurations it does not hold")
@click.option("--format", "fmt", type=click.Choice(("table", "json", "html")), default="table", show_default=True,
              help="html: one self-contained page (DIR/index.html with -o DIR, or -o FILE.html)")
@click.option("-o", "--output", "out_dir", default=None, type=click.Path(),
              help="a folder for one reproducible spec per configuration with findings, and sweep.report.json "
                   "(and index.html with --format html); with --format html also a FILE.html")
@click.option("--explorer", default=None,
              help="the Layout Explorer the report's spec links open (default http://127.0.0.1:8000/)")
@click.option("--jobs", type=click.IntRange(min=1, max=256), default=None,
              help="worker processes (default: the CPUs)")
@click.option("--batch", type=click.IntRange(min=1, max=1000), default=DEFAULT_BATCH, show_default=True,
              help="configurations per compiled translation unit")
@click.option("--cuda-version", default=None, help="the CUDA version the generator is told (default 12.8)")
@click.option("--count", "count_only", is_flag=True,
              help="only generate and group the kernels (and report what the database holds)")
@click.option("--dask", "dask_address", default=None, metavar="ADDRESS",
              help="run the extractions and verifications on a Dask cluster (tcp://scheduler:8786), or on "
                   "local:N, a LocalCluster of N worker processes started here; the database stays here")
@click.option("--cutlass-include", "cutlass_include", default=None, type=click.Path(file_okay=False),
              help="another CUTLASS include folder to extract from (a newer release, a checkout); its rows are kept "
                   "apart from the installed headers' in the database")
@click.option("--compare", "compare", default=None, metavar="VERSION",
              help="compare each configuration's result with the database's row of another CUTLASS header tree "
                   "(its version, e.g. 4.2.0, or the identity a report printed): regressions exit 1")
@click.option("--prove", "prove", is_flag=True,
              help="also prove each configuration's spec over the problem sizes its kernel accepts (threadmap prove: "
                   "z3 size classes and the simulator); a refuted property is a finding")
@click.option("--prove-timeout", type=click.FloatRange(min=1, max=86400), default=None,
              help="seconds one spec may take to prove, default 120 (its undecided properties are then UNKNOWN; "
                   "a rerun with a longer limit proves those again)")
def sweep_cmd(architectures: str, kernels: str, db_path: str | None, fmt: str, out_dir: str | None,
              jobs: int | None, batch: int, cuda_version: str | None, count_only: bool,
              explorer: str | None, dask_address: str | None, cutlass_include: str | None, compare: str | None,
              prove: bool, prove_timeout: float | None) -> None:
    """Audit CUTLASS's kernel library: run its generator, group the kernels by the
    configuration that decides their data movement, extract each 2.x GEMM configuration's
    global to shared copies from the real templates (host-side), and verify them.

    \b
    Examples:
      threadmap sweep --count
      threadmap sweep --kernels 'cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_*_align8' -o findings/
      threadmap sweep --format json --db /tmp/sweep.db
      threadmap sweep --format html -o report/
      threadmap sweep --dask tcp://scheduler:8786 --batch 16
      threadmap sweep --kernels 'cutlass_tensorop_f16_s16816gemm_f16_128x128_32x3_*_align8' --prove
      threadmap sweep --db lib.db --cutlass-include ~/cutlass/include --compare 4.2.0

    Exit status: 0 no findings, 1 findings (spec files with -o) or, with --compare,
    regressions, 2 usage (an unknown architecture, a filter that matches no kernel, a
    --compare tree the database lacks), 3 internal error.
    """
    from threadmap.sweep.library import DEFAULT_CUDA_VERSION
    from threadmap.sweep.report import DEFAULT_EXPLORER, check_explorer
    from threadmap.sweep.run import Options

    # an empty value is a mistake (an unset shell variable), not the default: -o '' would write
    # into the current folder, --db '' open the default database
    for name, value in (("--db", db_path), ("-o", out_dir), ("--explorer", explorer), ("--dask", dask_address),
                        ("--cuda-version", cuda_version), ("--cutlass-include", cutlass_include),
                        ("--compare", compare)):
        if value is not None and not value.strip():
            raise UsageError(f"{name}: empty; leave the option out for its default")
    if prove_timeout is not None and not prove:
        raise UsageError("--prove-timeout: give --prove too (it limits the proofs)")
    if prove_timeout is not None and not math.isfinite(prove_timeout):
        raise UsageError(f"--prove-timeout {prove_timeout}: not a number of seconds")
    archs = tuple(a.strip() for a in architectures.replace(",", ";").split(";") if a.strip())
    out = Path(out_dir) if out_dir is not None else None
    page: Path | None = None   # the HTML page's file
    # -o report.html/ (a trailing slash) is a folder
    as_page = out_dir is not None and out is not None and out.suffix.lower() in (".html", ".htm") \
        and not out_dir.endswith(("/", os.sep))
    if as_page and fmt != "html":
        raise UsageError(f"-o {path_text(str(out))}: a page needs --format html (-o names a folder otherwise)")
    if fmt == "html" and as_page:
        page, out = out, None  # a page only: no spec files beside it
    elif fmt == "html" and out is not None:
        page = out / "index.html"
    if out is not None and out.exists() and not out.is_dir():
        raise UsageError(f"-o {path_text(str(out))}: is not a folder")
    base = check_explorer(explorer if explorer is not None else DEFAULT_EXPLORER)
    # the output's folder before the sweep, which may take long: a folder that cannot be made
    # fails now, not after the work (the rows would be kept, the wait not)
    for folder in (out, page.parent if page is not None else None):
        if folder is not None:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise UsageError(f"-o {path_text(str(page if folder is not out else out))}: cannot create "
                                 f"{path_text(str(folder))}: {e.strerror or e}") from None
    if fmt == "html":
        try:  # before the sweep, which may take long
            import matplotlib  # noqa: F401
        except ModuleNotFoundError:
            raise UsageError("--format html draws its plots with matplotlib: "
                             "pip install 'threadmap[report]'") from None
    opts = Options(architectures=archs, kernels=kernels, db=Path(db_path) if db_path is not None else None,
                   jobs=jobs or os.cpu_count() or 1, batch=batch, cuda_version=cuda_version or DEFAULT_CUDA_VERSION,
                   out=out, count_only=count_only, dask=dask_address or None, prove=prove,
                   prove_timeout=120.0 if prove_timeout is None else prove_timeout, compare=compare,
                   cutlass_include=Path(cutlass_include).expanduser() if cutlass_include is not None else None)
    report = run_with_progress(opts)
    if fmt == "html":
        write_page(report, page, base, spec_links=out is not None)
    data = report.as_json()
    data["report"] = grouped(report, base)
    text = json.dumps(data, indent=1) + "\n"
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
            (out / "sweep.report.json").write_text(text)
        except OSError as e:
            raise UsageError(f"-o {path_text(str(out))}: cannot write sweep.report.json: {e.strerror or e}") from None
    if fmt == "json":
        click.echo(text, nl=False)
    elif fmt == "table":
        # piped: rich would fold the tables into 80 columns (1,000 lines for the library);
        # a fixed width unless COLUMNS says otherwise
        piped = not sys.stdout.isatty() and "COLUMNS" not in os.environ
        print_rich(lambda con: draw(report, con), lambda s: click.echo(s, nl=False), piped)
    sys.exit(report.exit_status)


def spec_texts(report: SweepReport) -> Callable[[str], str]:
    """A configuration's spec text from the sweep's store (by digest)."""
    from threadmap.sweep.store import Store

    def spec_of(digest: str) -> str:
        with Store(Path(report.db)) as store:
            r = store.done_one(digest)
        return r.spec if r is not None else ""
    return spec_of


def grouped(report: SweepReport, base: str) -> dict[str, Any]:
    """The report's grouped findings, warnings and cost distributions (the HTML page's data)."""
    from threadmap.sweep.report import grouped as grouped_

    return grouped_(report, spec_texts(report), base)


def write_page(report: SweepReport, page: Path | None, base: str, spec_links: bool) -> None:
    """The HTML report into ``page`` (its folder created), or on stdout."""
    from threadmap.sweep.report import html_page

    text = html_page(report, spec_texts(report), base, spec_links=spec_links)
    if page is None:
        click.echo(text, nl=False)
        return
    try:
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(text, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"-o {path_text(str(page))}: cannot write the page: {e.strerror or e}") from None


def run_with_progress(opts: Options) -> SweepReport:
    """The sweep with a progress bar (counts and ETA) on a terminal's stderr."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    err = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("ETA"), TimeRemainingColumn(), console=err, transient=True,
                  disable=not err.is_terminal) as prog:
        task = prog.add_task("generating", total=None)

        def tick(what: str, done: int, total: int) -> None:
            prog.update(task, description=f"{what} configurations", completed=done, total=total)
        from threadmap.sweep.run import sweep
        return sweep(opts, progress=tick)
