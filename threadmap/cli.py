"""The ``threadmap`` command line, a thin layer over :mod:`threadmap.api`.

Exit status: 0 everything passes; 1 findings; 2 invalid input (a spec, an option, a path:
one line per problem, ``FILE:LINE:COL: field.path: message`` for specs); 3 an internal
error (one line naming the spec or command).  No traceback reaches the user.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click
import numpy as np

import threadmap.layout as L
from threadmap.errors import SpecError, ThreadmapError
from threadmap.layout import parse_int_tuple, print_layout
from threadmap.layout.calculator import OPS, Show, run_layout
from threadmap.report.model import SpecError as SpecErrorModel

#: largest rank-2 layout ``layout ... show`` draws, and largest thread-map listing
MAX_DRAW_CELLS = 1 << 16
MAX_LIST = 1 << 22
#: largest ``simulate`` dump (rows)
MAX_SIMULATE_ROWS = 1 << 22


class UsageError(ThreadmapError):
    """Bad command-line input (exit status 2)."""


def _fail(msg: str, status: int = 2) -> NoReturn:
    click.echo(f"threadmap: error: {_one_line(msg)}", err=True)
    sys.exit(status)


def _one_line(msg: str) -> str:
    from threadmap.report.formats import printable

    lines = [printable(x) for x in str(msg).splitlines()] or [""]
    return "\n".join(lines)


class _Group(click.Group):
    """Maps every error to its exit status: ThreadmapError 2, anything unexpected 3."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except ThreadmapError as e:
            _fail(str(e))
        except (RecursionError, MemoryError) as e:
            _fail(f"input too large or nested too deeply ({type(e).__name__})")
        except BrokenPipeError:
            sys.exit(0)
        except Exception as e:  # noqa: BLE001 - the promise: exit 3 with one line, never a traceback
            sub = ctx.invoked_subcommand or "threadmap"
            _fail(f"internal error in '{sub}': {type(e).__name__}: {e}", 3)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="threadmap")
def main() -> None:
    """threadmap: simulate and verify CUTLASS/CuTe thread maps.

    \b
    Examples:
      threadmap verify specs/cute_transpose/row_smem.yaml
      threadmap verify specs/ --check-expected --format json
      threadmap layout "(4,8):(8,1)" logical_divide "(2,4)"
      threadmap threadmap PitchLinearStripminedThreadMap 64x64 128 4 --thread 50
    """


# ----------------------------------------------------------------------------- options


def _parse_sizes(text: str | None) -> dict[str, int] | None:
    """``M=1000,N=62`` -> {"M": 1000, "N": 62}."""
    if text is None:
        return None
    out: dict[str, int] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, eq, val = part.partition("=")
        name, val = name.strip(), val.strip()
        if not eq or not name.isidentifier() or not val.isascii() or not val.isdigit() or len(val) > 19:
            raise UsageError(f"--sizes expects NAME=INTEGER pairs separated by commas, e.g. M=1000,N=62; "
                             f"got {part.strip()!r}")
        if name in out:
            raise UsageError(f"--sizes gives {name} twice")
        out[name] = int(val)
    return out


def _output(path: str | None, inputs: list[Path], flag: str = "-o") -> Callable[[str], None]:
    """A writer for ``-o PATH`` (stdout when None), checked before any work is done."""
    if path is None:
        return lambda text: click.echo(text, nl=not text.endswith("\n"))
    shown = _path_text(path)
    if not path.strip():
        raise UsageError(f"{flag}: the output path is empty")
    p = Path(path)
    try:
        if p.is_dir():
            raise UsageError(f"{flag} {shown}: is a directory")
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            raise UsageError(f"{flag} {shown}: directory {_path_text(str(parent))} does not exist")
        target = p.resolve()
        for i in inputs:
            if i.exists() and i.resolve() == target:
                raise UsageError(f"{flag} {shown} would overwrite the input {_path_text(str(i))}")
    except OSError as e:
        raise UsageError(f"{flag} {shown}: {e.strerror or e}") from None

    def write(text: str) -> None:
        try:
            with open(p, "w", encoding="utf-8", errors="backslashreplace") as f:
                f.write(text)
        except OSError as e:
            raise UsageError(f"{flag} {shown}: cannot write: {e.strerror or e}") from None
    return write


def _path_text(path: str) -> str:
    """A path for a one-line message: control characters (a newline in a file name) escaped."""
    from threadmap.report.formats import printable

    return printable(path)


# ----------------------------------------------------------------------------- layout


@main.command("layout", context_settings={"ignore_unknown_options": True})
@click.argument("tokens", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.option("--static", is_flag=True, help="print static integers as CuTe C++ does (_4)")
def layout_cmd(tokens: tuple[str, ...], as_json: bool, static: bool) -> None:
    """CuTe layout calculator: LAYOUT [OP [ARG]]...

    \b
    Examples:
      threadmap layout "(2,2):(1,6)" complement 24
      threadmap layout "(4,8):(8,1)" logical_divide "(2,4)" --json
      threadmap layout "Sw<3,4,3> o (8,64):(64,1)" show
    \b
    Operations: """
    steps = run_layout(list(tokens))
    result = steps[-1][1]
    if isinstance(result, Show) and L.size(result.layout) > MAX_DRAW_CELLS:
        raise UsageError(f"show draws at most {MAX_DRAW_CELLS} cells; this layout has {L.size(result.layout)}")
    if as_json:
        out: dict[str, Any] = {"input": str(steps[0][1]), "ops": [s for s, _ in steps[1:]]}
        if isinstance(result, Show):
            out["layout"] = str(result.layout)
            out["grid"] = L.layout_grid(result.layout).tolist()
        elif isinstance(result, L.Layout) or hasattr(result, "layout_b"):
            out["result"] = _fmt(result, static)
            out["shape"] = _jsonable(getattr(result, "shape", None))
            out["stride"] = _jsonable(getattr(result, "stride", None)) if isinstance(result, L.Layout) else None
            out["size"] = int(L.size(result))
            out["cosize"] = int(L.cosize(result))
        else:
            out["result"] = _jsonable(result)
        click.echo(json.dumps(out))
        return
    if isinstance(result, Show):
        click.echo(print_layout(result.layout), nl=False)
    elif isinstance(result, L.Layout) or hasattr(result, "layout_b"):
        click.echo(_fmt(result, static))
    elif isinstance(result, list):
        click.echo(" ".join(str(v) for v in result))
    elif isinstance(result, tuple):
        click.echo(L.tuple_str(result, static))
    else:
        click.echo(str(result))


layout_cmd.help = (layout_cmd.help or "") + ", ".join(OPS)


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, list):
        return v
    return str(v)


def _fmt(x: Any, static: bool) -> str:
    to_str = getattr(x, "to_str", None)
    return to_str(static=static) if to_str else str(x)


# ----------------------------------------------------------------------------- thread maps


def build_thread_map(tokens: list[str]) -> Any:
    """``NAME ARG...`` -> a thread map; ARGs are the template parameters in header order
    (shapes as ``64x64`` or ``(64,64)``); a transpose wraps its map given as one quoted argument."""
    from threadmap.cutlass import THREAD_MAPS

    if not tokens:
        raise UsageError("name a thread map: " + ", ".join(THREAD_MAPS))
    name, *args = tokens
    cls = THREAD_MAPS.get(name)
    if cls is None:
        raise UsageError(f"unknown thread map {name!r}; known: {', '.join(THREAD_MAPS)}")
    values: list[Any] = []
    if name.startswith("Transpose"):
        if not args:
            raise UsageError(f"{name} wraps a thread map: give it as one quoted argument")
        values.append(build_thread_map(args[0].split()))
        args = args[1:]
    for a in args:
        values.append(parse_int_tuple("(" + a.replace("x", ",") + ")") if "x" in a else parse_int_tuple(a))
    try:
        return cls(*values)
    except TypeError:
        raise UsageError(f"{name}: wrong number or kind of template parameters ({len(values)} given)") from None


@main.command("threadmap", context_settings={"ignore_unknown_options": True})
@click.argument("tokens", nargs=-1, required=True)
@click.option("--thread", "thread", type=int, default=None, help="list every access of this thread")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def threadmap_cmd(tokens: tuple[str, ...], thread: int | None, as_json: bool) -> None:
    """CUTLASS 2.x thread map calculator: NAME TEMPLATE-ARGS...

    \b
    Examples:
      threadmap threadmap PitchLinearStripminedThreadMap 64x64 128 4 --thread 50
      threadmap threadmap PitchLinearWarpRakedThreadMap 32x128 128 4x8 8 --thread 5
    """
    from rich.console import Console
    from rich.table import Table

    tm = build_thread_map(list(tokens))
    if thread is not None and not 0 <= thread < tm.threads:
        raise UsageError(f"--thread {thread} is outside [0, {tm.threads})")
    per_thread = int(np.prod(tm.iterations)) * int(tm.elements_per_access) * int(
        np.prod(getattr(tm, "thread_access_shape", (1, 1))))
    if per_thread * tm.threads > MAX_LIST:
        raise UsageError(f"this thread map makes {per_thread * tm.threads} accesses; threadmap lists at most "
                         f"{MAX_LIST}")
    coords = tm.coordinates()
    info: dict[str, Any] = {
        "map": tm.cxx_type if hasattr(tm, "cxx_type") else repr(tm), "threads": int(tm.threads),
        "iterations": [int(v) for v in tm.iterations], "delta": [int(v) for v in tm.delta],
        "elements_per_access": int(tm.elements_per_access),
    }
    if thread is not None:
        info["thread"] = thread
        info["initial_offset"] = [int(v) for v in tm.initial_offset(thread)]
        info["accesses"] = coords[thread].reshape(-1, 2).tolist()
    if as_json:
        click.echo(json.dumps(info))
        return
    con = Console(highlight=False)
    con.print(info["map"], soft_wrap=True, markup=False)
    con.print(f"threads {info['threads']}  iterations (c,s) {tuple(info['iterations'])}  "
              f"delta (c,s) {tuple(info['delta'])}  elements/access {info['elements_per_access']}")
    if thread is None:
        return
    con.print(f"thread {thread}: initial offset (c,s) = {tuple(info['initial_offset'])}")
    table = Table("strided it", "contiguous it", "strided", "contiguous elements")
    per = coords[thread]
    for s_it in range(per.shape[0]):
        for c_it in range(per.shape[1]):
            acc = per[s_it, c_it].reshape(-1, 2)
            rows = sorted({int(r) for r in acc[:, 1]})
            cols = acc[:, 0]
            table.add_row(str(s_it), str(c_it), ",".join(map(str, rows)), f"{int(cols.min())}..{int(cols.max())}")
    con.print(table)


# ----------------------------------------------------------------------------- verify


def _finite(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """A number option that must be finite (click's ranges let NaN through)."""
    if value != value:
        raise UsageError(f"--{param.name} {value}: give a number of seconds")
    return value

FORMATS = ("table", "json", "junit", "sarif")


@main.command("verify")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("-o", "--output", default=None, help="write the report to this file instead of stdout")
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
              callback=_finite, help="seconds per spec for the prover (--engine z3, auto, both)")
@click.option("-v", "--verbose", is_flag=True,
              help="also list the passing vectorize and predicates rows (hidden by default)")
@click.option("--check-expected", is_flag=True,
              help="exit 0 when every verdict matches the spec's expect block (for spec libraries "
                   "that include kernels expected to fail); JUnit and SARIF then treat expected "
                   "failures as passing")
def verify_cmd(paths: tuple[str, ...], fmt: str, output: str | None, sizes: str | None, checks: str | None,
               exhaustive: bool, engine: str, timeout: float, verbose: bool, check_expected: bool) -> None:
    """Verify spec files (or directories of them): coverage, predicates, coalescing, bank
    conflicts, vectorization and dataflow.

    \b
    Examples:
      threadmap verify specs/cute_transpose/row_smem.yaml
      threadmap verify specs/planted/off_by_one_grid.yaml --sizes M=1000,N=1000 --checks predicates
      threadmap verify specs/ --check-expected --format sarif -o /tmp/threadmap.sarif

    Exit status: 0 every spec passes (with --check-expected: every verdict as expected),
    1 findings, 2 invalid spec or usage, 3 internal error.
    """
    from rich.console import Console
    from rich.progress import Progress

    import threadmap.api as api
    from threadmap.report.formats import render_table, summary_line, to_json, to_junit, to_sarif

    files, missing = _targets(paths)
    write = _output(output, files)
    if engine != "enum":
        if sizes is not None or (fmt in ("junit", "sarif") and engine != "z3"):
            raise UsageError(f"--engine {engine} proves the spec's own ranges (no --sizes)" if sizes is not None
                             else f"--engine {engine} reports as table or json (--engine z3 also as junit, sarif)")
        if engine == "z3":
            sys.exit(_prove_out(files, missing, fmt, output, timeout))
    size_env = _parse_sizes(sizes)
    check_set = api.check_names(checks.split(",")) if checks is not None else None
    err = Console(stderr=True)
    enum_files = [f for f in files if not (engine == "auto" and _has_range(f))]
    with Progress(console=err, transient=True, disable=not err.is_terminal) as prog:
        task = prog.add_task("verifying", total=len(enum_files))
        report = api.verify([], checks=check_set)
        report.errors += missing
        for f in enum_files:
            prog.update(task, description=f"verifying {f}")
            sub = prog.add_task("  blocks", total=None, visible=False)

            def tick(name: str, done: int, total: int, sub: Any = sub) -> None:
                prog.update(sub, completed=done, total=total, visible=total > 1)
            part = api.verify([f], sizes=size_env, checks=check_set, exhaustive=exhaustive, progress=tick)
            report.runs += part.runs
            report.errors += part.errors
            prog.remove_task(sub)
            prog.advance(task)
    if engine in ("auto", "both"):
        sys.exit(_verify_and_prove(report, [f for f in files if engine == "both" or _has_range(f)], fmt, write,
                                   output is not None, timeout, verbose, check_expected))
    if fmt == "table":

        buf = io.StringIO()
        con = Console(highlight=False, file=buf if output else None, width=None if not output else 140)
        render_table(report, con, verbose=verbose)
        con.print(summary_line(report))
        if output:
            write(buf.getvalue())
    else:
        text = {"json": to_json, "junit": lambda r: to_junit(r, check_expected),
                "sarif": lambda r: to_sarif(r, check_expected)}[fmt](report)
        write(text)
    for bad in report.errors:
        click.echo(f"threadmap: error: {_one_line(bad.message)}", err=True)
    sys.exit(report.exit_status(check_expected))


def _has_range(path: Path) -> bool:
    """Whether a spec file has a size range (an invalid one counts as not: verify reports it)."""
    from threadmap.spec.load import load_spec
    from threadmap.spec.schema import SizeRange

    try:
        return any(isinstance(v, SizeRange) for v in load_spec(path).spec.sizes.values())
    except SpecError:
        return False


def _verify_and_prove(report: Any, files: list[Path], fmt: str, write: Any, to_file: bool, timeout: float,
                      verbose: bool, check_expected: bool) -> int:
    """``verify --engine auto|both``: the enumeration's report, the proofs of ``files`` and
    the disagreements between them; the exit status of the worse."""
    from rich.console import Console

    from threadmap.prove import disagreements, prove
    from threadmap.report.formats import proof_summary_line, render_proofs, render_table, summary_line
    from threadmap.report.model import error_status

    proofs = prove([str(f) for f in files], timeout_s=timeout)
    clash = disagreements(report.runs, proofs.runs)
    if fmt == "table":
        buf = io.StringIO()
        con = Console(highlight=False, file=buf if to_file else None, width=None if not to_file else 140)
        render_table(report, con, verbose=verbose)
        render_proofs(proofs, con)
        con.print(summary_line(report))
        con.print(proof_summary_line(proofs))
        for c in clash:
            con.print(f"DISAGREEMENT: {c}")
        if to_file:
            write(buf.getvalue())
    else:
        write(json.dumps({"verify": json.loads(report.model_dump_json()), "prove": json.loads(proofs.model_dump_json()),
                          "disagreements": clash}, indent=1) + "\n")
    errors = report.errors + proofs.errors
    for bad in errors:
        click.echo(f"threadmap: error: {_one_line(bad.message)}", err=True)
    if errors:
        return error_status(errors)
    return max(report.exit_status(check_expected), proofs.exit_code, 1 if clash else 0)


def _targets(paths: tuple[str, ...]) -> tuple[list[Path], list[SpecErrorModel]]:
    """The spec files under ``paths``, and one invalid target per path that names none (the
    others still run); no spec file at all is a usage error."""
    import threadmap.api as api

    files: list[Path] = []
    missing = []
    for p in paths:
        try:
            files += api.spec_files([p])
        except SpecError as e:
            missing.append(SpecErrorModel(path=p, message=str(e)))
    if not files and not missing:
        raise UsageError(f"no spec files (.yaml, .yml, .toml, .json) under {', '.join(paths)}")
    return files, missing


def _prove_out(files: list[Path], missing: list[SpecErrorModel], fmt: str, output: str | None,
               timeout: float, check_expected: bool = False) -> int:
    """Prove ``files`` and write the report (``threadmap prove`` and ``verify --engine z3``)."""
    from rich.console import Console

    from threadmap.prove import prove
    from threadmap.report.formats import proof_summary_line, prove_to_junit, prove_to_sarif, render_proofs, to_json

    write = _output(output, files)
    report = prove([str(f) for f in files], timeout_s=timeout)
    report.errors[:0] = missing
    if fmt == "table":
        buf = io.StringIO()
        con = Console(highlight=False, file=buf if output else None, width=None if not output else 140)
        render_proofs(report, con)
        con.print(proof_summary_line(report))
        if output:
            write(buf.getvalue())
    else:
        write({"json": to_json, "junit": prove_to_junit, "sarif": prove_to_sarif}[fmt](report))
    for bad in report.errors:
        click.echo(f"threadmap: error: {_one_line(bad.message)}", err=True)
    if check_expected:
        from threadmap.prove.expected import expected_outcome

        status, mismatches = expected_outcome(report)
        for path, why in mismatches.items():
            for w in why:
                click.echo(f"threadmap: {path}: not as expected: {_one_line(w)}", err=True)
        return status
    return report.exit_code


# ----------------------------------------------------------------------------- prove


@main.command("prove")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("-o", "--output", default=None, help="write the report to this file instead of stdout")
@click.option("--timeout", type=click.FloatRange(min=0.1, max=86400), default=120.0, show_default=True,
              callback=_finite, help="seconds per spec; the solver is stopped and its properties are UNKNOWN")
@click.option("--check-expected", is_flag=True,
              help="exit 0 when every spec's proof is what its expect: block says (verdict and failing_checks)")
def prove_cmd(paths: tuple[str, ...], fmt: str, output: str | None, timeout: float, check_expected: bool) -> None:
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
    files, missing = _targets(paths)
    sys.exit(_prove_out(files, missing, fmt, output, timeout, check_expected))


# ----------------------------------------------------------------------------- gpu / diff


@main.command("gpu")
@click.argument("paths", nargs=-1)
@click.option("--where", type=click.Choice(("auto", "device", "host")), default="auto", show_default=True,
              help="run the probe on the GPU (CuPy) or, compiled as C++, on the host; auto: the GPU if there is one")
@click.option("--format", "fmt", type=click.Choice(("table", "json", "markdown")), default="table", show_default=True)
@click.option("-o", "--output", default=None, help="write the report to this file instead of stdout")
@click.option("--json", "json_path", default=None, help="also write the JSON report to this file")
@click.option("--sizes", default=None, help="set named sizes, e.g. --sizes M=1000,N=62")
@click.option("--max-rows", type=click.IntRange(1, 1 << 28), default=None,
              help="records per stage at most (default: 2^24 on a GPU, 2^20 on the host); larger grids are sampled")
@click.option("--behaviour/--no-behaviour", default=True, show_default=True,
              help="on a GPU: also run each spec's data movement on real data (correctness, coverage, GB/s)")
@click.option("--counters", is_flag=True, help="on a GPU: Nsight Compute counters per stage beside the predictions")
@click.option("--racecheck", is_flag=True, help="on a GPU: compute-sanitizer racecheck of specs with shared memory")
@click.option("--compile-only", is_flag=True,
              help="only compile the generated kernels for sm_80 and sm_90 (no GPU needed)")
@click.option("--include-dir", is_flag=True, help="print the folder of threadmap_probe.h and exit")
def gpu_cmd(paths: tuple[str, ...], where: str, fmt: str, output: str | None, json_path: str | None,
            sizes: str | None, max_rows: int | None, behaviour: bool, counters: bool, racecheck: bool,
            compile_only: bool, include_dir: bool) -> None:
    """Probe specs with the real CUTLASS/CuTe templates and diff with the simulation.

    \b
    Examples:
      threadmap gpu specs/cute_transpose/row_smem_swizzled.yaml
      threadmap gpu specs/ --where host --format json -o probe.json
      nvcc -I$(threadmap gpu --include-dir) my_kernel.cu   # for threadmap diff

    For every copy stage a generated kernel computes each (block, thread, value)'s
    coordinate, element offset, in-bounds flag and predicate with the headers' templates
    (tiled copies, local_partition, TiledMMA partitions, CUTLASS thread maps, swizzled
    layouts); the records are compared with the simulator's, one by one.
    Exit status: 0 no mismatch, 1 mismatches, 2 invalid spec or usage (or --where device
    without a GPU), 3 internal error.
    """
    from rich.console import Console

    from threadmap.gpu.formats import probe_summary, render_behaviour, render_counters, render_probe
    from threadmap.gpu.run import probe
    from threadmap.gpu.toolchain import include_dir as inc_dir

    if include_dir:
        if paths:
            raise UsageError("--include-dir takes no spec paths")
        click.echo(str(inc_dir()))
        return
    if not paths:
        raise UsageError("give spec files or directories (or --include-dir)")
    if output and json_path and Path(output).resolve() == Path(json_path).resolve():
        raise UsageError("-o and --json name the same file")
    files, missing = _targets(paths)
    write = _output(output, files)
    write_json = _output(json_path, files, "--json") if json_path else None
    if compile_only:
        from threadmap.gpu.run import compile_only as compile_kernels
        for bad in missing:
            click.echo(f"threadmap: error: {_one_line(bad.message)}", err=True)
        if missing:
            sys.exit(2)
        done = compile_kernels([str(f) for f in files], sizes=_parse_sizes(sizes))
        write(json.dumps(done, indent=1) if fmt == "json" else done["summary"])
        if write_json:
            write_json(json.dumps(done, indent=1))
        return
    from threadmap.gpu.device import available
    from threadmap.gpu.run import suite

    con_err = Console(stderr=True, highlight=False)
    say = lambda m: con_err.print(f"[dim]{m}[/dim]")  # noqa: E731
    on_device = where == "device" or (where == "auto" and available()[0])
    if on_device:
        report = suite([str(f) for f in files], sizes=_parse_sizes(sizes), max_rows=max_rows, behaviour=behaviour,
                       counters=counters, racecheck=racecheck, progress=say)
    else:
        if counters or racecheck:
            say("no GPU: --counters and --racecheck need one; probing on the host only")
        report = probe([str(f) for f in files], where="host", sizes=_parse_sizes(sizes), max_rows=max_rows,
                       progress=say)
    report.errors[:0] = missing
    if fmt == "table":
        buf = io.StringIO()
        con = Console(highlight=False, file=buf if output else None, width=None if not output else 160)
        render_probe(report, con)
        render_behaviour(report, con)
        render_counters(report, con)
        con.print(probe_summary(report))
        if output:
            write(buf.getvalue())
    elif fmt == "markdown":
        from threadmap.gpu.formats import to_markdown
        write(to_markdown(report))
    else:
        write(report.model_dump_json(indent=1))
    if write_json:
        write_json(report.model_dump_json(indent=1))
    for bad in report.errors:
        click.echo(f"threadmap: error: {_one_line(bad.message)}", err=True)
    from threadmap.report.model import error_status
    sys.exit(error_status(report.errors) if report.errors else (0 if report.ok else 1))


@main.command("diff")
@click.argument("spec_path")
@click.argument("log_path")
@click.option("--regex", "pattern", default=None,
              help="a custom record format: named groups tid and coord (or row, col), optional stage, block "
                   "(or bx, by, bz), iter, value")
@click.option("--marker", default=None,
              help="text that starts every record; a line with it that does not parse is malformed "
                   "(default 'TM ' for the default format)")
@click.option("--stage", type=click.IntRange(0), default=None, help="the stage of records that do not name one")
@click.option("--side", type=click.Choice(("auto", "src", "dst")), default="auto", show_default=True,
              help="whose coordinates the log prints (auto: the global-memory side)")
@click.option("--sizes", default=None, help="the sizes the kernel ran with, e.g. --sizes M=1000,N=62")
@click.option("--grid", "whole_grid", is_flag=True,
              help="expect every block of the grid in the log (default: the blocks the log names)")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table", show_default=True)
@click.option("-o", "--output", default=None, help="write the report to this file instead of stdout")
def diff_cmd(spec_path: str, log_path: str, pattern: str | None, marker: str | None, stage: int | None,
             side: str, sizes: str | None, whole_grid: bool, fmt: str, output: str | None) -> None:
    """Diff the coordinates a kernel printed (threadmap_probe.h) with the simulation.

    \b
    Examples:
      threadmap diff specs/cute_transpose/row_smem.yaml kernel.log
      threadmap diff spec.yaml run.log --regex 't=(?P<tid>\\d+) b=(?P<block>\\d+) (?P<row>\\d+),(?P<col>\\d+)'

    Reports, per thread, coordinates that moved (same thread, instruction and value, other
    place), are missing from the log, or are extra; malformed lines with their numbers.
    Compared: the stages the log names, over every block it names in any stage (--grid:
    every block), so a block or thread that printed nothing shows as missing accesses.
    Exit status: 0 the log matches, 1 differences, 2 invalid spec, log or usage, 3 internal
    error.  Needs no GPU.
    """
    from rich.console import Console

    from threadmap.gpu.formats import render_log_diff
    from threadmap.gpu.log import diff_log, load_model

    write = _output(output, [Path(spec_path), Path(log_path)])
    model = load_model(spec_path, _parse_sizes(sizes))
    d = diff_log(model, Path(log_path), pattern=pattern, marker=marker, stage=stage,
                 side=None if side == "auto" else side, whole_grid=whole_grid)
    if fmt == "table":
        buf = io.StringIO()
        con = Console(highlight=False, file=buf if output else None, width=None if not output else 160)
        render_log_diff(d, con)
        if output:
            write(buf.getvalue())
    else:
        write(d.model_dump_json(indent=1))
    sys.exit(0 if d.ok else 1)


# ----------------------------------------------------------------------------- simulate / show


def _parse_blocks(text: str, n: int, max_ids: int | None = None) -> np.ndarray:
    """Block ids from ``--blocks``; more than ``max_ids`` is refused before anything is allocated."""
    def afford(count: int) -> None:
        if max_ids is not None and count > max_ids:
            raise UsageError(f"--blocks {text!r} selects {count} blocks; at most {max_ids} fit the dump budget "
                             "(choose fewer --blocks)")
    if text == "all":
        afford(n)
        return np.arange(n, dtype=np.int64)
    try:
        if ":" in text:
            a, b = (int(x) for x in text.split(":", 1))
            afford(max(0, min(b, n) - max(0, a)))
            ids = np.arange(max(0, a), min(b, n), dtype=np.int64)
        else:
            ids = np.array([int(x) for x in text.split(",")], dtype=np.int64)
    except (ValueError, OverflowError):
        raise UsageError(f"--blocks expects 'all', a block id, ids separated by commas, or a range a:b; "
                         f"got {text!r}") from None
    if ids.size == 0 or int(ids.max()) >= n or int(ids.min()) < 0:
        raise UsageError(f"--blocks {text!r} is outside the grid's {n} blocks")
    return ids


@main.command("simulate")
@click.argument("spec_path")
@click.option("--format", "fmt", type=click.Choice(("csv", "json", "npz")), default="csv", show_default=True)
@click.option("-o", "--output", default=None, help="output file (required for npz)")
@click.option("--blocks", default="0", show_default=True,
              help="block ids to simulate: 'all', ids separated by commas, or a range 'a:b'")
@click.option("--sizes", default=None, help="set named sizes, e.g. --sizes M=1000,N=62")
def simulate_cmd(spec_path: str, fmt: str, output: str | None, blocks: str, sizes: str | None) -> None:
    """Print the access table of every stage: (block, thread, step, value) -> coordinate,
    predicate, element offset, byte address.

    \b
    Examples:
      threadmap simulate specs/cute_transpose/row_smem.yaml --blocks 0 --format csv
      threadmap simulate specs/cute_transpose/row_smem.yaml --blocks 0:2 --format json
    """
    import threadmap.api as api
    from threadmap.simulate.engine import Simulator

    model = api.models(spec_path, _parse_sizes(sizes))[0]
    sim = Simulator(model)
    ids = _parse_blocks(blocks, model.num_blocks, MAX_SIMULATE_ROWS // max(1, sim.rows_per_block()))
    rows = ids.size * sim.rows_per_block()
    if rows > MAX_SIMULATE_ROWS:
        raise UsageError(f"{ids.size} blocks make {rows} access rows; simulate dumps at most {MAX_SIMULATE_ROWS} "
                         "(choose fewer --blocks)")
    if fmt == "npz" and not output:
        raise UsageError("--format npz needs -o FILE")
    write = _output(output, [Path(spec_path)])
    tables = [t for rec in sim.tables(ids) if not isinstance(rec, str) for t in rec]
    cols = ["block", "thread", "step", "element", "value", "pred", "offset", "addr"]
    if fmt == "npz":
        arrays = {}
        for t in tables:
            key = f"stage{t.stage}_{t.side}"
            for c in cols:
                arrays[f"{key}_{c}"] = getattr(t, c)
            arrays[f"{key}_coord"] = t.coord
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        assert output is not None
        try:
            Path(output).write_bytes(buf.getvalue())
        except OSError as e:
            raise UsageError(f"-o {_path_text(output)}: cannot write: {e.strerror or e}") from None
        return
    if fmt == "json":
        doc = [{"stage": t.stage, "side": t.side, "tensor": t.tensor, "memory": t.memory, "vec": t.vec,
                "rows": {**{c: getattr(t, c).tolist() for c in cols}, "coord": t.coord.tolist()}} for t in tables]
        write(json.dumps({"spec": model.name, "sizes": model.env, "tables": doc}) + "\n")
        return
    lines = ["stage,side,tensor," + ",".join(cols[:5]) + ",coord,pred,offset,addr"]
    for t in tables:
        keep = np.flatnonzero(t.valid) if t.valid is not None else slice(None)
        quoted = io.StringIO()  # tensor names are free text: the csv module quotes them
        csv.writer(quoted, lineterminator="").writerow([t.stage, t.side, t.tensor])
        head = quoted.getvalue() + ","
        # whole columns to Python lists once: per-row numpy indexing is ten times slower
        cols_ = [np.asarray(x)[keep].tolist() for x in (t.block, t.thread, t.step, t.element, t.value)]
        crd = ["(" + ";".join(map(str, c)) + ")" for c in t.coord[keep].tolist()]
        tail = [np.asarray(x)[keep].tolist() for x in (t.pred.astype(np.int8), t.offset, t.addr)]
        lines.extend(f"{head}{b},{th},{st},{el},{va},{c},{p},{o},{a}"
                     for b, th, st, el, va, c, p, o, a in zip(*cols_, crd, *tail, strict=True))
    write("\n".join(lines) + "\n")


@main.command("show")
@click.argument("spec_path")
@click.option("--stage", type=click.IntRange(0), default=None, help="only this stage index")
@click.option("--block", type=click.IntRange(0), default=0, show_default=True)
@click.option("--svg", "svg_path", default=None,
              help="also write an SVG picture (tiles coloured by thread, bank/sector heat maps)")
@click.option("--warp", type=click.IntRange(0), default=0, show_default=True, help="warp for the bank/sector map")
@click.option("--step", type=click.IntRange(0), default=0, show_default=True,
              help="instruction for the bank/sector map")
@click.option("--sizes", default=None, help="set named sizes, e.g. --sizes M=64,N=64")
def show_cmd(spec_path: str, stage: int | None, block: int, svg_path: str | None, warp: int, step: int,
             sizes: str | None) -> None:
    """Draw each stage's tiles like CuTe's print_layout (thread/value per cell), and the bank
    or sector map of one warp instruction.

    \b
    Examples:
      threadmap show specs/cute_transpose/row_smem.yaml --stage 2
      threadmap show specs/cute_transpose/row_smem_swizzled.yaml --stage 2 --svg /tmp/row_smem_swizzled.svg
    """
    import threadmap.api as api

    write_svg = _output(svg_path, [Path(spec_path)], "--svg") if svg_path is not None else None
    res = api.show(spec_path, sizes=_parse_sizes(sizes), stage=stage, block=block, warp=warp, step=step,
                   svg=svg_path is not None)
    click.echo(res.text)
    if write_svg is not None and svg_path is not None and res.svg is not None:
        write_svg(res.svg)
        click.echo(f"wrote {_path_text(svg_path)}")


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="address to bind (loopback unless you give another)")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--db", default="threadmap.db", show_default=True, help="the SQLite job store (created if missing)")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 256),
              help="jobs run at once (each in its own process)")
@click.option("--queue", "queue_max", default=256, show_default=True, type=click.IntRange(1, 1_000_000),
              help="jobs queued or running at most; beyond it POST /v1/jobs answers 503 with Retry-After")
@click.option("--job-timeout", default=120.0, show_default=True, type=click.FloatRange(0.1, 86400),
              help="seconds a job may run before it is killed and marked failed")
@click.option("--job-memory", default=4096, show_default=True, type=click.IntRange(64, 1 << 22),
              help="MiB of address space a job may use")
@click.option("--sync-timeout", default=20.0, show_default=True, type=click.FloatRange(0.1, 3600),
              help="seconds POST /v1/verify, a stage's pictures or a calculation may take")
@click.option("--sync-workers", default=2, show_default=True, type=click.IntRange(1, 256),
              help="synchronous requests (verify, pictures, calculator) at once; beyond it 503")
@click.option("--max-body", default=1 << 20, show_default=True, type=click.IntRange(1024, 1 << 30),
              help="request body limit in bytes")
@click.option("--token", envvar="THREADMAP_TOKEN", default=None,
              help="bearer token the write endpoints require (or $THREADMAP_TOKEN)")
@click.option("--dask", "dask_address", default=None, metavar="SCHEDULER_ADDRESS",
              help="run jobs on a Dask distributed cluster (tcp://host:8786) instead of local workers")
def serve_cmd(host: str, port: int, db: str, workers: int, queue_max: int, job_timeout: float, job_memory: int,
              sync_timeout: float, sync_workers: int, max_body: int, token: str | None,
              dask_address: str | None) -> None:
    """Run the verification service: the HTTP API (/docs), the job store and the Layout
    Explorer page (/).

    \b
      threadmap serve                         # http://127.0.0.1:8000/
      threadmap serve --db /var/lib/threadmap/jobs.db --workers 8 --token "$TOKEN"
      threadmap serve --dask tcp://scheduler:8786

    Jobs survive a restart: those queued or running when the server stopped run again.
    """
    try:
        import uvicorn

        from threadmap.service.app import Settings, create_app
        from threadmap.service.jobs import Limits
    except ImportError as e:
        raise UsageError(f"the service needs its extra: pip install 'threadmap[service]' ({e})") from None
    limits = Limits(max_body_bytes=max_body, job_seconds=job_timeout, job_memory_mb=job_memory,
                    sync_seconds=sync_timeout)
    settings = Settings(db=db, workers=workers, queue_max=queue_max, token=token or None,
                        dask_address=dask_address, limits=limits, sync_workers=sync_workers,
                        loopback=host in ("127.0.0.1", "localhost", "::1") or host.startswith("127."))
    try:
        app = create_app(settings)
    except Exception as e:  # noqa: BLE001 - an unusable store or cluster is a usage problem
        raise UsageError(f"cannot start: {type(e).__name__}: {e}") from None
    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5)


@main.command("spec-header")
@click.option("--include-dir", is_flag=True, help="print the folder of threadmap_spec.h (for -I) and exit")
@click.option("--cutlass-include", is_flag=True,
              help="print the CUTLASS/CuTe include folder threadmap uses ($THREADMAP_CUTLASS_INCLUDE, else the "
                   "nvidia-cutlass package's) and exit")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: the header itself (or the folder); json: {include_dir, cutlass_include, header, text}")
def spec_header_cmd(include_dir: bool, cutlass_include: bool, fmt: str) -> None:
    """Print the C++ header that writes a spec from your real CuTe/CUTLASS objects.

    \b
      nvcc -std=c++17 -x c++ -I$(threadmap spec-header --include-dir) -I<cutlass>/include \\
           my_spec.cpp -o my_spec && ./my_spec > my_kernel.yaml && threadmap verify my_kernel.yaml

    In the program: threadmap::Spec s("name"); s.element<float>().threads(256).grid(gx, gy);
    s.tensor("x", layout, threadmap::global).copy(tiled_copy, threadmap::tile("x", tile_shape,
    "bx", "by"), "sA").barrier() ...; s.print();  The header's comment documents every call.
    """
    from threadmap.gpu.toolchain import cutlass_include as cutlass_inc
    from threadmap.gpu.toolchain import include_dir as inc_dir

    header = inc_dir() / "threadmap_spec.h"
    cutlass = cutlass_inc()
    if include_dir and cutlass_include:
        raise UsageError("give --include-dir or --cutlass-include, not both")
    if fmt == "json":
        click.echo(json.dumps({"include_dir": str(inc_dir()), "cutlass_include": cutlass and str(cutlass),
                               "header": str(header), "text": header.read_text()}, indent=2))
    elif cutlass_include:
        if cutlass is None:
            where = os.environ.get("THREADMAP_CUTLASS_INCLUDE")
            raise UsageError(f"THREADMAP_CUTLASS_INCLUDE={where} has no cute/ and cutlass/ folders" if where else
                             "no CUTLASS headers: pip install nvidia-cutlass, or set THREADMAP_CUTLASS_INCLUDE")
        click.echo(str(cutlass))
    elif include_dir:
        click.echo(str(inc_dir()))
    else:
        click.echo(header.read_text(), nl=False)


@main.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of spec files (for editor autocompletion)."""
    from threadmap.spec.cli_schema import schema_json

    click.echo(schema_json(), nl=False)


EXAMPLES: list[tuple[str, list[str]]] = [
    ("complement from the CuTe notes", ["layout", "(2,2):(1,6)", "complement", "24"]),
    ("coalesce", ["layout", "(2,(1,6)):(1,(6,2))", "coalesce"]),
    ("logical_divide of a row-major 4x8 by a 2x4 tile", ["layout", "(4,8):(8,1)", "logical_divide", "(2,4)"]),
    ("the sgemm_2 copy partition: raked_product of threads (32,8):(8,1) and values (4,1)",
     ["layout", "(32,8):(8,1)", "raked_product", "(4,1):(1,0)"]),
    ("a row-major 4x8 (GenRowMajor gives stride (N,1)) as print_layout draws it",
     ["layout", "(4,8):(8,1)", "show"]),
    ("PitchLinearStripminedThreadMap<64x64, 128, 4>, thread 50",
     ["threadmap", "PitchLinearStripminedThreadMap", "64x64", "128", "4", "--thread", "50"]),
]


@main.command("examples")
def examples_cmd() -> None:
    """Run the calculators on examples from the CuTe and CUTLASS tutorials."""
    for title, argv in EXAMPLES:
        click.echo(f"\n# {title}\n$ threadmap " + " ".join(f'"{a}"' if any(c in a for c in "(),:") else a
                                                        for a in argv))
        main.main(args=argv, standalone_mode=False)


def entry() -> None:
    """Console-script entry point: never lets a traceback reach the user."""
    try:
        main(standalone_mode=False)
    except click.exceptions.NoSuchOption as e:
        _fail(e.format_message())
    except click.ClickException as e:
        click.echo(f"threadmap: error: {e.format_message()}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except ThreadmapError as e:
        _fail(str(e))
    except BrokenPipeError:
        os._exit(0)


if __name__ == "__main__":  # pragma: no cover
    entry()
