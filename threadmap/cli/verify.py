"""``threadmap verify`` and ``threadmap prove``: both engines through :func:`threadmap.api.verify`,
and the reports in every format."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from threadmap.cli.common import (
    UsageError,
    echo_errors,
    finite,
    one_line,
    output,
    parse_sizes,
    print_rich,
    targets,
)
from threadmap.report.model import EngineReport, ProveReport, VerifyReport

FORMATS = ("table", "json", "junit", "sarif")


def compact_default(paths: tuple[str, ...], files: list[Path], details: bool | None) -> bool:
    """One line per spec (``--compact``, the default for a directory or several specs) or a
    table per spec (``--details``, the default for one spec)."""
    if details is not None:
        return not details
    return len(files) > 1 or any(Path(p).is_dir() for p in paths)


def draw_verify(report: VerifyReport, con: Any, verbose: bool, compact: bool) -> None:
    """The runs as tables, or one line each; a compiled kernel's (``--kernel``) warnings under
    its run's line either way (the compact form never drops them)."""
    from rich.markup import escape

    from threadmap.report.formats import printable, render_compact, render_table, short_name

    if not compact:
        render_table(report, con, verbose=verbose)
        return
    render_compact(report, con)
    for run in report.runs:
        ck = run.compiled
        if ck is None:
            continue
        states = [cs.status for cs in ck.sides]
        counted = ", ".join(f"{states.count(s)} {s}" for s in ("mapped", "ambiguous", "missing") if s in states)
        con.print(escape(f"  compiled kernel {printable(short_name(ck.demangled or ck.kernel))} ({ck.arch}): "
                         f"{len(ck.sides)} sides, {counted or 'none'}"), soft_wrap=True)
        for f in ck.findings:
            con.print(f"  {f.severity}: {escape(printable(f.message))}", soft_wrap=True)


def draw_proofs(report: ProveReport, con: Any, compact: bool) -> None:
    from threadmap.report.formats import render_proofs, render_proofs_compact

    (render_proofs_compact(report, con) if compact else render_proofs(report, con))


def write_verify(report: VerifyReport, fmt: str, write: Callable[[str], None], to_file: bool, *,
                 verbose: bool = False, compact: bool = False, check_expected: bool = False) -> None:
    """The enumeration's report in ``fmt``."""
    from threadmap.report.formats import summary_line, to_json, to_junit, to_sarif

    if fmt == "table":
        def draw(con: Any) -> None:
            draw_verify(report, con, verbose, compact)
            con.print(summary_line(report))
        print_rich(draw, write, to_file)
    else:
        write({"json": to_json, "junit": lambda r: to_junit(r, check_expected),
               "sarif": lambda r: to_sarif(r, check_expected)}[fmt](report))


def write_proofs(report: ProveReport, fmt: str, write: Callable[[str], None], to_file: bool, *,
                 compact: bool = False) -> None:
    """The prover's report in ``fmt``."""
    from threadmap.report.formats import proof_summary_line, prove_to_junit, prove_to_sarif, to_json

    if fmt == "table":
        def draw(con: Any) -> None:
            draw_proofs(report, con, compact)
            con.print(proof_summary_line(report))
        print_rich(draw, write, to_file)
    else:
        write({"json": to_json, "junit": prove_to_junit, "sarif": prove_to_sarif}[fmt](report))


def write_both(report: EngineReport, fmt: str, write: Callable[[str], None], to_file: bool, *,
               verbose: bool = False, compact: bool = False, check_expected: bool = False) -> None:
    """``--engine auto|both``: the enumeration, the proofs and the disagreements."""
    from threadmap.report.formats import engine_to_junit, engine_to_sarif, proof_summary_line, summary_line

    if fmt == "table":
        def draw(con: Any) -> None:
            draw_verify(report.verify, con, verbose, compact)
            draw_proofs(report.prove, con, compact)
            con.print(summary_line(report.verify))
            con.print(proof_summary_line(report.prove))
            for c in report.disagreements:
                con.print(f"DISAGREEMENT: {c}", markup=False)
        print_rich(draw, write, to_file)
    elif fmt == "junit":
        write(engine_to_junit(report, check_expected))
    elif fmt == "sarif":
        write(engine_to_sarif(report, check_expected))
    else:
        write(json.dumps({"engine": report.engine, "verify": json.loads(report.verify.model_dump_json()),
                          "prove": json.loads(report.prove.model_dump_json()),
                          "disagreements": report.disagreements}, indent=1) + "\n")


def run_engine(files: list[Path], missing: list[Any], engine: str, *, sizes: dict[str, int] | None = None,
               checks: list[str] | None = None, exhaustive: bool = False,
               timeout: float | None = None) -> VerifyReport | EngineReport:
    """``api.verify`` with a progress display on a terminal's stderr; the paths that named no
    spec lead the errors."""
    from rich.console import Console
    from rich.progress import Progress

    import threadmap.api as api

    err = Console(stderr=True)
    with Progress(console=err, transient=True, disable=not err.is_terminal) as prog:
        task = prog.add_task("verifying", total=len(files) * (2 if engine == "both" else 1))  # both: twice
        sub = prog.add_task("  blocks", total=None, visible=False)
        started = [0]

        def on_spec(name: str) -> None:
            if started[0]:
                prog.advance(task)
            started[0] += 1
            prog.update(task, description=f"{'proving' if engine == 'z3' else 'verifying'} {name}")
            prog.update(sub, completed=0, total=None, visible=False)

        def tick(name: str, done: int, total: int) -> None:
            prog.update(sub, completed=done, total=total, visible=total > 1)
        report = api.verify(files, engine=engine, sizes=sizes, checks=checks, exhaustive=exhaustive,
                            timeout=timeout, progress=tick, on_spec=on_spec)
    if isinstance(report, VerifyReport):
        report.errors[:0] = missing
    elif engine == "z3":
        report.prove.errors[:0] = missing
    else:
        report.verify.errors[:0] = missing
    return report


@click.command("verify")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("-o", "--output", "output_path", default=None, help="write the report to this file instead of stdout")
@click.option("--sizes", default=None, help="set named sizes, e.g. --sizes M=1000,N=62")
@click.option("--checks", default=None,
              help="run only these checks (comma-separated): coverage, grid_coverage, predicates, "
                   "coalescing, bank_conflicts, vectorize, dataflow")
@click.option("--exhaustive", is_flag=True, help="simulate every block instead of the tiling argument")
@click.option("--engine", type=click.Choice(("enum", "z3", "auto", "both")), default="enum", show_default=True,
              help="enum: run the checks at the spec's sizes (samples of its ranges); z3: prove them for every "
                   "size in range (as threadmap prove); auto: prove specs with a size range, enumerate the "
                   "others; both: enumerate and prove every spec, and fail on any disagreement")
@click.option("--timeout", type=click.FloatRange(min=0.1, max=86400), default=120.0, show_default=True,
              callback=finite, help="seconds per spec for the prover (--engine z3, auto, both)")
@click.option("--details/--compact", default=None,
              help="a table per spec, or one line per spec (default: a table for one spec, lines for a "
                   "directory or several specs)")
@click.option("-v", "--verbose", is_flag=True,
              help="also list the passing vectorize and predicates rows (hidden by default)")
@click.option("--check-expected", is_flag=True,
              help="exit 0 when every verdict matches the spec's expect block (for spec libraries "
                   "that include kernels expected to fail); JUnit and SARIF then treat expected "
                   "failures as passing")
@click.option("--kernel", "kernel_file", default=None, type=click.Path(dir_okay=False),
              help="the compiled kernel: a .cu file (compiled with nvcc -O3 for --arch, cached), a .cubin, or "
                   "an object or executable with embedded cubins; its SASS memory instructions are mapped to "
                   "the stage sides and the counts predicted at the compiled widths (no GPU needed)")
@click.option("-k", "--kernel-name", default=None,
              help="a substring of the kernel's mangled or demangled name (as ncu's -k)")
@click.option("--arch", default="sm_90", show_default=True, help="the architecture to compile or pick (--kernel)")
def verify_cmd(paths: tuple[str, ...], fmt: str, output_path: str | None, sizes: str | None, checks: str | None,
               exhaustive: bool, engine: str, timeout: float, details: bool | None, verbose: bool,
               check_expected: bool, kernel_file: str | None, kernel_name: str | None, arch: str) -> None:
    """Verify spec files (or directories of them): coverage, predicates, coalescing, bank
    conflicts, vectorization, dataflow and the asynchronous pipeline.

    \b
    Examples:
      threadmap verify specs/cute_transpose/row_smem.yaml
      threadmap verify specs/planted/off_by_one_grid.yaml --sizes M=1000,N=1000 --checks predicates
      threadmap verify specs/ --check-expected --format sarif -o /tmp/threadmap.sarif
      threadmap verify specs/cute_transpose/row_rvectorized.yaml --kernel tests/gpu/compiled/twins.cu -k rr_merged

    One spec gets a table per size environment; a directory or several specs one line per
    spec run (verdict, path, failing checks), then the summary (--details: the tables).
    Exit status: 0 every spec passes (with --check-expected: every verdict as expected),
    1 findings, 2 invalid spec or usage, 3 internal error.
    """
    import threadmap.api as api

    files, missing = targets(paths)
    write = output(output_path, files)
    if engine != "enum" and sizes is not None:
        raise UsageError(f"--engine {engine} proves the spec's own ranges (no --sizes)")
    check_list = checks.split(",") if checks is not None else None
    if check_list is not None:
        api.check_names(check_list)  # an unknown check is refused before any work
    compact = compact_default(paths, files, details)
    kernel = None
    if kernel_file is None:
        given = click.get_current_context().get_parameter_source("arch") == click.core.ParameterSource.COMMANDLINE
        for flag, used in (("--kernel-name", kernel_name is not None), ("--arch", given)):
            if used:
                raise UsageError(f"{flag} goes with --kernel (the compiled kernel's file)")
    if kernel_file is not None:
        if len(paths) == 1 and missing:  # the one spec path names no spec: say why, not how to use --kernel
            raise UsageError(missing[0].message)
        if engine != "enum" or len(files) != 1 or missing:
            raise UsageError("--kernel goes with one spec file and --engine enum (the kernel is that spec's)")
        if not kernel_file.strip():
            raise UsageError("--kernel: give the kernel's file (.cu, .cubin, object or executable)")
        if not re.fullmatch(r"sm_\d+[af]?", arch):
            raise UsageError(f"--arch {arch!r}: an architecture such as sm_80, sm_90 or sm_90a")
        from threadmap.gpu.compiled import load_kernel
        kernel = load_kernel(Path(kernel_file), kernel_name, arch)
    report = run_engine(files, missing, engine, sizes=parse_sizes(sizes), checks=check_list,
                        exhaustive=exhaustive, timeout=timeout)
    to_file = output_path is not None
    if kernel is not None and isinstance(report, VerifyReport):
        from threadmap.gpu.compiled import attach
        attach(report, kernel, kernel_file or "")
    if isinstance(report, VerifyReport):
        write_verify(report, fmt, write, to_file, verbose=verbose, compact=compact, check_expected=check_expected)
        echo_errors(report.errors)
        sys.exit(report.exit_status(check_expected))
    if engine == "z3":
        write_proofs(report.prove, fmt, write, to_file, compact=compact)
        echo_errors(report.prove.errors)
        sys.exit(report.prove.exit_code)
    write_both(report, fmt, write, to_file, verbose=verbose, compact=compact, check_expected=check_expected)
    echo_errors(report.verify.errors + report.prove.errors)
    sys.exit(report.exit_status(check_expected))


@click.command("prove")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("-o", "--output", "output_path", default=None, help="write the report to this file instead of stdout")
@click.option("--timeout", type=click.FloatRange(min=0.1, max=86400), default=120.0, show_default=True,
              callback=finite, help="seconds per spec; the solver is stopped and its properties are UNKNOWN")
@click.option("--details/--compact", default=None,
              help="a table per spec, or one line per spec (default: a table for one spec, lines for a "
                   "directory or several specs)")
@click.option("--check-expected", is_flag=True,
              help="exit 0 when every spec's proof is what its expect: block says (verdict and failing_checks)")
def prove_cmd(paths: tuple[str, ...], fmt: str, output_path: str | None, timeout: float,
              details: bool | None, check_expected: bool) -> None:
    """Prove coverage, predicates, dataflow, bank conflicts, aliasing and the grid limits
    for every size in the spec's ranges (and under its assume: relations).

    \b
    Examples:
      threadmap prove specs/ranges/row_smem_swizzled.yaml
      threadmap prove specs/ranges/planted_one_residue_grid.yaml --format json -o /tmp/proofs.json

    Each property is PROVED, REFUTED (with sizes where the simulator shows the finding) or
    UNKNOWN (a premise of the method fails, or the time limit: never a pass).
    Exit status: 0 everything proved (with --check-expected: every proof as its spec's expect:
    block says), 1 a property refuted or unknown (not as expected), 2 invalid spec or usage,
    3 internal error.
    """
    files, missing = targets(paths)
    write = output(output_path, files)
    report = run_engine(files, missing, "z3", timeout=timeout)
    assert isinstance(report, EngineReport)
    write_proofs(report.prove, fmt, write, output_path is not None, compact=compact_default(paths, files, details))
    echo_errors(report.prove.errors)
    if check_expected:
        from threadmap.prove.expected import expected_outcome

        status, mismatches = expected_outcome(report.prove)
        for path, why in mismatches.items():
            for w in why:
                click.echo(f"threadmap: {path}: not as expected: {one_line(w)}", err=True)
        sys.exit(status)
    sys.exit(report.prove.exit_code)
