"""``threadmap gpu`` (the real templates' coordinates, behaviour and counters beside the
simulation) and ``threadmap diff`` (a kernel's printed coordinates against the simulation)."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from threadmap.cli.common import (
    UsageError,
    echo_errors,
    output,
    parse_sizes,
    path_text,
    require_cutlass,
    targets,
)


@click.command("gpu")
@click.argument("paths", nargs=-1)
@click.option("--where", type=click.Choice(("auto", "device", "host")), default="auto", show_default=True,
              help="run the probe on the GPU (CuPy) or, compiled as C++, on the host; auto: the GPU if there is one")
@click.option("--format", "fmt", type=click.Choice(("table", "json", "markdown")), default="table", show_default=True)
@click.option("-o", "--output", "output_path", default=None, help="write the report to this file instead of stdout")
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
@click.option("--exe", "exe", default=None,
              help="measure your own program's kernel: the program and its arguments as one shell-quoted string "
                   "(\"./transpose 1024 1024\"); one launch of --kernel-name under Nsight Compute")
@click.option("--launcher", default=None,
              help="measure a kernel launched from Python: module:function (called with no arguments)")
@click.option("-k", "--kernel-name", default=None,
              help="a substring of the measured kernel's name (--exe, --launcher; as ncu's -k)")
@click.option("--kernel", "kernel_file", default=None, type=click.Path(dir_okay=False),
              help="where the kernel's SASS is (.cu, .cubin, object or executable); default: the --exe program")
@click.option("--arch", default="sm_90", show_default=True, help="the SASS architecture (--exe, --launcher)")
def gpu_cmd(paths: tuple[str, ...], where: str, fmt: str, output_path: str | None, json_path: str | None,
            sizes: str | None, max_rows: int | None, behaviour: bool, counters: bool, racecheck: bool,
            compile_only: bool, include_dir: bool, exe: str | None, launcher: str | None, kernel_name: str | None,
            kernel_file: str | None, arch: str) -> None:
    """Probe specs with the real CUTLASS/CuTe templates and diff with the simulation.

    \b
    Examples:
      threadmap gpu specs/cute_transpose/row_smem_swizzled.yaml
      threadmap gpu specs/ --where host --format json -o probe.json
      nvcc -I$(threadmap gpu --include-dir) my_kernel.cu   # for threadmap diff
      threadmap gpu specs/cute_transpose/row_rvectorized.yaml --exe "./row_rvectorized 1024 1024" \\
          --kernel-name transpose   # your own program, predicted from its SASS beside measured

    For every copy stage a generated kernel computes each (block, thread, value)'s
    coordinate, element offset, in-bounds flag and predicate with the headers' templates
    (tiled copies, local_partition, TiledMMA partitions, CUTLASS thread maps, swizzled
    layouts); the records are compared with the simulator's, one by one.
    Exit status: 0 no mismatch, 1 mismatches, 2 invalid spec or usage (or --where device
    without a GPU, or --exe/--launcher without Nsight Compute: the prediction is printed and
    nothing measured), 3 internal error.
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
    if exe is not None or launcher is not None:
        ctx = click.get_current_context()
        for name, flag in (("where", "--where"), ("max_rows", "--max-rows"),
                           ("behaviour", "--behaviour/--no-behaviour"), ("counters", "--counters"),
                           ("racecheck", "--racecheck"), ("compile_only", "--compile-only")):
            if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE:
                raise UsageError(f"{flag} goes with probing specs, not with --exe or --launcher (one profiled launch)")
        if fmt == "markdown":
            raise UsageError("--exe and --launcher write a table or JSON (--format table|json), not markdown")
        if output_path and json_path and Path(output_path).resolve() == Path(json_path).resolve():
            raise UsageError("-o and --json name the same file")
        user_kernel(paths, exe, launcher, kernel_name, kernel_file, arch, sizes, fmt, output_path, json_path)
        return
    arch_given = click.get_current_context().get_parameter_source("arch") == click.core.ParameterSource.COMMANDLINE
    if kernel_name is not None or kernel_file is not None or arch_given:
        raise UsageError("--kernel-name, --kernel and --arch go with --exe or --launcher (verify --kernel reads a "
                         "kernel without a GPU)")
    require_cutlass()
    if output_path and json_path and Path(output_path).resolve() == Path(json_path).resolve():
        raise UsageError("-o and --json name the same file")
    files, missing = targets(paths)
    write = output(output_path, files)
    write_json = output(json_path, files, "--json") if json_path else None
    if compile_only:
        from threadmap.gpu.run import compile_only as compile_kernels
        echo_errors(missing)
        if missing:
            sys.exit(2)
        done = compile_kernels([str(f) for f in files], sizes=parse_sizes(sizes))
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
        report = suite([str(f) for f in files], sizes=parse_sizes(sizes), max_rows=max_rows, behaviour=behaviour,
                       counters=counters, racecheck=racecheck, progress=say)
    else:
        if counters or racecheck:
            say("no GPU: --counters and --racecheck need one; probing on the host only")
        report = probe([str(f) for f in files], where="host", sizes=parse_sizes(sizes), max_rows=max_rows,
                       progress=say)
    report.errors[:0] = missing
    if fmt == "table":
        buf = io.StringIO()
        con = Console(highlight=False, file=buf if output_path else None, width=None if not output_path else 160)
        render_probe(report, con)
        render_behaviour(report, con)
        render_counters(report, con)
        con.print(probe_summary(report))
        if output_path:
            write(buf.getvalue())
    elif fmt == "markdown":
        from threadmap.gpu.formats import to_markdown
        write(to_markdown(report))
    else:
        write(report.model_dump_json(indent=1))
    if write_json:
        write_json(report.model_dump_json(indent=1))
    echo_errors(report.errors)
    from threadmap.report.model import error_status
    sys.exit(error_status(report.errors) if report.errors else (0 if report.ok else 1))


def write_report(report: Any, fmt: str, write: Callable[[str], None], output_path: str | None,
                 render: Callable[[Any, Any], None]) -> None:
    """A report as a table (drawn by ``render``; to the terminal, or 160 columns to a file) or as
    JSON."""
    from rich.console import Console

    if fmt != "table":
        write(report.model_dump_json(indent=1))
        return
    buf = io.StringIO()
    render(report, Console(highlight=False, file=buf if output_path else None, width=None if not output_path else 160))
    if output_path:
        write(buf.getvalue())


def user_kernel(paths: tuple[str, ...], exe: str | None, launcher: str | None, kernel_name: str | None,
                kernel_file: str | None, arch: str, sizes: str | None, fmt: str, output_path: str | None,
                json_path: str | None) -> None:
    """``gpu --exe``/``--launcher``: one spec, the user's kernel measured beside its compiled
    prediction (exit 0 agree, 1 a kind differs or the printed records differ)."""
    import re
    import shlex

    from threadmap.gpu.formats import render_user_kernel
    from threadmap.gpu.user import NO_NCU, launcher_command, measure

    if exe is not None and launcher is not None:
        raise UsageError("give --exe or --launcher, not both")
    if len(paths) == 1 and not Path(paths[0]).exists():
        raise UsageError(f"{path_text(paths[0])}: no such spec file")
    if len(paths) != 1 or not Path(paths[0]).is_file():
        raise UsageError("--exe and --launcher measure one kernel: give its one spec file")
    if not kernel_name:
        raise UsageError("--kernel-name: a substring of the kernel's name")
    if launcher is not None and kernel_file is None:
        raise UsageError("--launcher needs --kernel (the .cu or .cubin the kernel is compiled from) for its SASS")
    if not re.fullmatch(r"sm_\d+[af]?", arch):
        raise UsageError(f"--arch {arch!r}: an architecture such as sm_80, sm_90 or sm_90a")
    if kernel_file is not None and not kernel_file.strip():
        raise UsageError("--kernel: give the kernel's file (.cu, .cubin, object or executable)")
    if exe is not None:
        try:
            command = shlex.split(exe)
        except ValueError as e:
            raise UsageError(f"--exe: {e}") from None
    else:
        command = launcher_command(launcher or "")
    files = [Path(paths[0])]
    write = output(output_path, files)
    run = measure(paths[0], parse_sizes(sizes), command, kernel_name, arch, kernel_file)
    write_report(run, fmt, write, output_path, render_user_kernel)
    if json_path:
        output(json_path, files, "--json")(run.model_dump_json(indent=1))
    if NO_NCU in run.notes:  # the prediction is printed, but nothing was measured: not a pass
        raise UsageError("nothing measured: Nsight Compute (ncu) not found on PATH, in /usr/local/cuda/bin or "
                         "/opt/nvidia/nsight-compute (the report holds the compiled prediction only)")
    sys.exit(0 if run.ok else 1)


@click.command("diff")
@click.argument("spec_path")
@click.argument("log_path", required=False)
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
@click.option("--dsl", "dsl_target", default=None,
              help="instead of a log: trace a CuTe DSL kernel on the host, FILE.py:KERNEL (or its @cute.jit "
                   "launcher); see docs/dsl-tracing.md")
@click.option("--dsl-launcher", default=None, help="the @cute.jit function that launches --dsl's kernel")
@click.option("--dsl-args", default=None,
              help="the launcher's arguments: PARAM=TENSOR (a global tensor of the spec) or PARAM=INTEGER, "
                   "comma separated; a parameter named as a spec tensor needs none")
@click.option("--dsl-blocks", default=None, help="trace only these linear block ids (comma separated)")
@click.option("--dsl-shared", default=None,
              help="the kernel's shared allocations as spec tensors, smem0=sA,... (default: the stage's tensor)")
@click.option("--dsl-log", default=None, help="also write the traced records to this file")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table", show_default=True)
@click.option("-o", "--output", "output_path", default=None, help="write the report to this file instead of stdout")
def diff_cmd(spec_path: str, log_path: str | None, pattern: str | None, marker: str | None, stage: int | None,
             side: str, sizes: str | None, whole_grid: bool, dsl_target: str | None, dsl_launcher: str | None,
             dsl_args: str | None, dsl_blocks: str | None, dsl_shared: str | None, dsl_log: str | None, fmt: str,
             output_path: str | None) -> None:
    """Diff the coordinates a kernel printed (threadmap_probe.h), or a CuTe DSL kernel traced
    on the host (--dsl), with the simulation.

    \b
    Examples:
      threadmap diff specs/cute_transpose/row_smem.yaml kernel.log
      threadmap diff spec.yaml run.log --regex 't=(?P<tid>\\d+) b=(?P<block>\\d+) (?P<row>\\d+),(?P<col>\\d+)'
      threadmap diff add.yaml --dsl elementwise_add.py:elementwise_add_kernel --dsl-args mA=A,mB=B,mC=C

    Reports, per thread, coordinates that moved (same thread, instruction and value, other
    place), are missing from the log, or are extra; malformed lines with their numbers.
    Compared: the stages the log names, over every block it names in any stage (--grid:
    every block), so a block or thread that printed nothing shows as missing accesses.
    With --dsl the records come from the kernel's IR, interpreted per block and thread
    (every block, or --dsl-blocks); the kernel's k-th copy is the spec's k-th copy stage.
    Exit status: 0 the log matches, 1 differences, 2 invalid spec, log, usage or a kernel
    the tracer refuses, 3 internal error.  Needs no GPU.
    """

    from threadmap.gpu.formats import render_log_diff
    from threadmap.gpu.log import diff_log, load_model

    if (log_path is None) == (dsl_target is None):
        raise UsageError("give the kernel's LOG or --dsl FILE.py:KERNEL (one of them)")
    dsl_only = {"dsl_launcher": "--dsl-launcher", "dsl_args": "--dsl-args", "dsl_blocks": "--dsl-blocks",
                "dsl_shared": "--dsl-shared", "dsl_log": "--dsl-log"}
    if dsl_target is None:
        values = {"dsl_launcher": dsl_launcher, "dsl_args": dsl_args, "dsl_blocks": dsl_blocks,
                  "dsl_shared": dsl_shared, "dsl_log": dsl_log}
        given = [flag for name, flag in dsl_only.items() if values[name] is not None]
        if given:
            raise UsageError(f"{given[0]} goes with --dsl")
    elif pattern is not None or marker is not None:
        raise UsageError("--regex and --marker read a log; --dsl makes the records itself")
    # the kernel's file is an input too: -o or --dsl-log naming it would overwrite the kernel
    dsl_file = [Path(dsl_target.rpartition(":")[0])] if dsl_target and ":" in dsl_target else []
    inputs = [Path(spec_path)] + ([Path(log_path)] if log_path else []) + ([Path(dsl_log)] if dsl_log else []) \
        + dsl_file
    write = output(output_path, inputs)
    model = load_model(spec_path, parse_sizes(sizes))
    if dsl_target is None:
        assert log_path is not None
        d = diff_log(model, Path(log_path), pattern=pattern, marker=marker, stage=stage,
                     side=None if side == "auto" else side, whole_grid=whole_grid)
        write_report(d, fmt, write, output_path, render_log_diff)
        sys.exit(0 if d.ok else 1)
    from threadmap.dsl.trace import diff_dsl, render_dsl_diff

    if dsl_log is not None:
        output(dsl_log, inputs[:1] + dsl_file, "--dsl-log")  # checked before the trace
    dd = diff_dsl(model, dsl_target, _pairs(dsl_args, "--dsl-args"), launcher=dsl_launcher,
                  side=None if side == "auto" else side, stage=stage, whole_grid=whole_grid,
                  blocks=_ints(dsl_blocks, "--dsl-blocks"), shared=_pairs(dsl_shared, "--dsl-shared"),
                  keep_log=Path(dsl_log) if dsl_log else None)
    write_report(dd, fmt, write, output_path, render_dsl_diff)
    sys.exit(0 if dd.ok else 1)


def _pairs(text: str | None, flag: str) -> dict[str, str]:
    """``a=b,c=d`` -> {"a": "b", "c": "d"}."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        k, eq, v = part.partition("=")
        k, v = k.strip(), v.strip()
        if not eq or not k.isidentifier() or not v:
            raise UsageError(f"{flag} expects NAME=VALUE pairs separated by commas, e.g. mA=A,mB=B; got "
                             f"{part.strip()!r}")
        if k in out:
            raise UsageError(f"{flag} gives {k} twice")
        out[k] = v
    return out


def _ints(text: str | None, flag: str) -> list[int] | None:
    if text is None:
        return None
    out = []
    for part in text.split(","):
        p = part.strip()
        if not p.isascii() or not p.isdigit() or len(p) > 12:
            raise UsageError(f"{flag} expects block ids (integers) separated by commas; got {p!r}")
        out.append(int(p))
    if not out:
        raise UsageError(f"{flag}: no block id")
    return out
