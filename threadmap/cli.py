"""The ``threadmap`` command line.

``threadmap layout LAYOUT [OP [ARG]]...`` is a CuTe layout calculator: operations are
applied left to right, each to the result of the previous one, e.g.::

    threadmap layout "(2,2):(1,6)" complement 24        # (3,2):(2,12)
    threadmap layout "(4,8):(8,1)" show                 # print_layout grid
    threadmap layout "(4,8):(8,1)" logical_divide "(2,4)" --json

Bad input prints one line on stderr and exits with status 2.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click
import numpy as np

import threadmap.layout as L
from threadmap.errors import ThreadmapError
from threadmap.layout import parse_int_tuple, print_layout
from threadmap.layout.calculator import OPS, Show, run_layout


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, list):
        return v
    return str(v)


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ThreadmapError as e:
            click.echo(f"threadmap: error: {e}", err=True)
            ctx.exit(2)
        except RecursionError:
            click.echo("threadmap: error: input nested too deeply", err=True)
            ctx.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="threadmap")
def main() -> None:
    """threadmap: simulate and verify CUTLASS/CuTe thread maps."""


@main.command("layout", context_settings={"ignore_unknown_options": True})
@click.argument("tokens", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.option("--static", is_flag=True, help="print static integers as CuTe C++ does (_4)")
def layout_cmd(tokens: tuple[str, ...], as_json: bool, static: bool) -> None:
    """CuTe layout calculator: LAYOUT [OP [ARG]]...

    \b
    Operations: """
    steps = run_layout(list(tokens))
    name, result = steps[-1]
    if as_json:
        out: dict[str, Any] = {"input": str(steps[0][1]), "ops": [s for s, _ in steps[1:]]}
        if isinstance(result, Show):
            from threadmap.layout import layout_grid
            out["layout"] = str(result.layout)
            out["grid"] = layout_grid(result.layout).tolist()
        elif isinstance(result, (L.Layout,)) or hasattr(result, "layout_b"):
            out["result"] = _fmt(result, static)
            out["shape"] = _jsonable(getattr(result, "shape", None))
            out["stride"] = _jsonable(getattr(result, "stride", None))
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


def build_thread_map(tokens: list[str]) -> Any:
    """``NAME ARG...`` -> a thread map; ARGs are the template parameters in header order
    (shapes as ``64x64`` or ``(64,64)``); a transpose wraps ``--of``-style nested text."""
    from threadmap.cutlass import THREAD_MAPS

    if not tokens:
        raise ThreadmapError("name a thread map: " + ", ".join(THREAD_MAPS))
    name, *args = tokens
    cls = THREAD_MAPS.get(name)
    if cls is None:
        raise ThreadmapError(f"unknown thread map {name!r}; known: {', '.join(THREAD_MAPS)}")
    values: list[Any] = []
    if name.startswith("Transpose"):
        if not args:
            raise ThreadmapError(f"{name} wraps a thread map: give it as one quoted argument")
        values.append(build_thread_map(args[0].split()))
        args = args[1:]
    for a in args:
        values.append(parse_int_tuple("(" + a.replace("x", ",") + ")") if "x" in a else parse_int_tuple(a))
    try:
        return cls(*values)
    except TypeError as e:
        raise ThreadmapError(f"{name}: wrong parameters ({e})") from None


@main.command("threadmap", context_settings={"ignore_unknown_options": True})
@click.argument("tokens", nargs=-1, required=True)
@click.option("--thread", "thread", type=int, default=None, help="list every access of this thread")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def threadmap_cmd(tokens: tuple[str, ...], thread: int | None, as_json: bool) -> None:
    """CUTLASS 2.x thread map calculator: NAME TEMPLATE-ARGS...

    \b
    threadmap threadmap PitchLinearStripminedThreadMap 64x64 128 4 --thread 50
    threadmap threadmap PitchLinearWarpRakedThreadMap 64x8 128 8x4 8
    """
    from rich.console import Console
    from rich.table import Table

    tm = build_thread_map(list(tokens))
    if thread is not None and not 0 <= thread < tm.threads:
        raise ThreadmapError(f"--thread {thread} is outside [0, {tm.threads})")
    coords = tm.coordinates()
    info = {
        "map": tm.cxx_type if hasattr(tm, "cxx_type") else repr(tm),
        "threads": int(tm.threads),
        "iterations": [int(v) for v in tm.iterations],
        "delta": [int(v) for v in tm.delta],
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
    con.print(info["map"], soft_wrap=True)
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
            table.add_row(str(s_it), str(c_it), ",".join(map(str, rows)),
                          f"{int(cols.min())}..{int(cols.max())}")
    con.print(table)



FORMATS = ("table", "json", "junit", "sarif")


def _spec_files(paths: tuple[str, ...]) -> list[Any]:
    from pathlib import Path

    from threadmap.spec.load import iter_spec_files

    files: list[Any] = []
    for p in paths:
        if not Path(p).exists():
            raise ThreadmapError(f"{p}: no such file or directory")
        files.extend(iter_spec_files(p) if Path(p).is_dir() else [Path(p)])
    if not files:
        raise ThreadmapError(f"no spec files (.yaml, .yml, .toml, .json) under {', '.join(paths)}")
    return files


@main.command("verify")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="write the report here instead of stdout")
@click.option("--exhaustive", is_flag=True, help="simulate every block instead of the tiling proof")
@click.option("--max-blocks", type=click.IntRange(1), default=64, show_default=True,
              help="grids with more blocks are sampled (edges + interior) and proved by tiling")
@click.option("-v", "--verbose", is_flag=True, help="show passing checks too")
@click.option("--check-expected", is_flag=True,
              help="exit 0 when every verdict matches the spec's expect block (for spec libraries "
                   "that include kernels expected to fail)")
def verify_cmd(paths: tuple[str, ...], fmt: str, output: str | None, exhaustive: bool,
               max_blocks: int, verbose: bool, check_expected: bool) -> None:
    """Verify spec files (or directories of them): coverage, predicates, coalescing, bank
    conflicts, vectorization and dataflow.

    Exit status: 0 every spec passes, 1 findings, 2 invalid spec or usage.
    """
    from rich.console import Console
    from rich.progress import Progress

    from threadmap.report.formats import render_table, to_json, to_junit, to_sarif
    from threadmap.spec.load import load_spec
    from threadmap.verify.pipeline import verify_spec

    files = _spec_files(paths)
    loaded = [load_spec(f) for f in files]  # all specs validated before any simulation
    err = Console(stderr=True)
    reports: list[dict[str, Any]] = []
    with Progress(console=err, transient=True, disable=not err.is_terminal) as prog:
        task = prog.add_task("verifying", total=len(loaded))
        for ls in loaded:
            prog.update(task, description=f"verifying {ls.path}")
            reports.extend(verify_spec(ls, exhaustive=exhaustive, max_blocks=max_blocks))
            prog.advance(task)
    if fmt == "table":
        con = Console(highlight=False, file=open(output, "w") if output else None)  # noqa: SIM115
        render_table(reports, con, verbose=verbose)
        n_fail = sum(r["verdict"] == "fail" for r in reports)
        n_unexp = sum(not r["as_expected"] for r in reports)
        con.print(f"{len(reports)} spec runs: {len(reports) - n_fail} pass, {n_fail} fail; "
                  f"{len(reports) - n_unexp} as expected, {n_unexp} not")
    else:
        text = {"json": to_json, "junit": to_junit, "sarif": to_sarif}[fmt](reports)
        if output:
            with open(output, "w") as f:
                f.write(text)
        else:
            click.echo(text)
    if check_expected:
        if not all(r["as_expected"] for r in reports):
            raise SystemExit(1)
    elif any(r["verdict"] == "fail" for r in reports):
        raise SystemExit(1)


@main.command("simulate")
@click.argument("spec_path")
@click.option("--format", "fmt", type=click.Choice(("csv", "json", "npz")), default="csv", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="output file (required for npz)")
@click.option("--blocks", default="0", show_default=True,
              help="block ids to simulate: 'all', one id, or a range 'a:b'")
def simulate_cmd(spec_path: str, fmt: str, output: str | None, blocks: str) -> None:
    """Print the access table of every stage: (block, thread, step, value) -> coordinate,
    predicate, byte address."""
    from threadmap.simulate.engine import Simulation
    from threadmap.spec.load import load_spec

    ls = load_spec(spec_path)
    sim = Simulation(ls.spec, ls.envs[0])
    if blocks == "all":
        ids = np.arange(sim.num_blocks)
    elif ":" in blocks:
        a, b = (int(x) for x in blocks.split(":", 1))
        ids = np.arange(max(0, a), min(b, sim.num_blocks))
    else:
        ids = np.array([int(blocks)])
    if ids.size == 0 or ids.max() >= sim.num_blocks or ids.min() < 0:
        raise ThreadmapError(f"--blocks {blocks!r} is outside the grid's {sim.num_blocks} blocks")
    cols = ["stage", "side", "tensor", "block", "thread", "step", "lane", "value", "coord", "pred",
            "offset", "addr"]
    tables = [t for p in sim.stage_plans for t in sim.tables(p, ids).values()]
    if fmt == "npz":
        if not output:
            raise ThreadmapError("--format npz needs -o FILE")
        arrays = {}
        for t in tables:
            key = f"stage{t.stage}_{t.side}"
            for c in cols[3:]:
                arrays[f"{key}_{c}"] = getattr(t, c)
        np.savez_compressed(output, **arrays)
        return
    out = open(output, "w") if output else sys.stdout  # noqa: SIM115
    if fmt == "json":
        doc = [{"stage": t.stage, "side": t.side, "tensor": t.tensor, "memory": t.memory, "vec": t.vec,
                "rows": {c: getattr(t, c).tolist() for c in cols[3:]}} for t in tables]
        out.write(json.dumps({"spec": ls.spec.name, "sizes": ls.envs[0], "tables": doc}) + "\n")
    else:
        out.write(",".join(cols) + "\n")
        for t in tables:
            for i in range(len(t)):
                crd = "(" + ";".join(str(int(x)) for x in t.coord[i]) + ")"
                out.write(f"{t.stage},{t.side},{t.tensor},{t.block[i]},{t.thread[i]},{t.step[i]},"
                          f"{t.lane[i]},{t.value[i]},{crd},{int(t.pred[i])},{t.offset[i]},{t.addr[i]}\n")
    if output:
        out.close()


@main.command("show")
@click.argument("spec_path")
@click.option("--stage", type=int, default=None, help="only this stage index")
@click.option("--block", type=int, default=0, show_default=True)
@click.option("--svg", "svg_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="also write an SVG picture (tiles coloured by thread, bank/sector heat maps)")
@click.option("--warp", type=int, default=0, show_default=True, help="warp for the bank/sector map")
@click.option("--step", type=int, default=0, show_default=True, help="instruction for the bank/sector map")
def show_cmd(spec_path: str, stage: int | None, block: int, svg_path: str | None, warp: int,
             step: int) -> None:
    """Draw each stage's tiles like CuTe's print_layout (thread/value per cell), and the bank
    or sector map of one warp instruction."""
    from threadmap.render import access_map, page_svg, tile_grid
    from threadmap.simulate.engine import Simulation
    from threadmap.spec.load import load_spec

    ls = load_spec(spec_path)
    sim = Simulation(ls.spec, ls.envs[0])
    if not 0 <= block < sim.num_blocks:
        raise ThreadmapError(f"--block {block} is outside the grid's {sim.num_blocks} blocks")
    tables = []
    for p in sim.stage_plans:
        if stage is not None and p["index"] != stage:
            continue
        for t in sim.tables(p, np.array([block])).values():
            if t.memory == "register":
                continue
            tables.append(t)
            click.echo(tile_grid(t, block, title=f"stage {t.stage} {t.side}: {t.tensor} ({t.memory})"))
            if t.memory in ("shared", "global"):
                click.echo(access_map(t, block, step=step, warp=warp))
    if stage is not None and not tables:
        raise ThreadmapError(f"--stage {stage}: no copy stage with that index")
    if svg_path:
        with open(svg_path, "w") as f:
            f.write(page_svg(tables, block))
        click.echo(f"wrote {svg_path}")


@main.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of spec files (for editor autocompletion)."""
    from threadmap.spec.cli_schema import schema_json

    click.echo(schema_json(), nl=False)


EXAMPLES: list[tuple[str, list[str]]] = [
    ("complement from the CuTe notes (note 002)", ["layout", "(2,2):(1,6)", "complement", "24"]),
    ("coalesce (note 002)", ["layout", "(2,(1,6)):(1,(6,2))", "coalesce"]),
    ("logical_divide of a row-major 4x8 by a 2x4 tile", ["layout", "(4,8):(8,1)", "logical_divide", "(2,4)"]),
    ("the sgemm_2 copy partition: raked_product of threads (32,8):(8,1) and values (4,1)",
     ["layout", "(32,8):(8,1)", "raked_product", "(4,1):(1,0)"]),
    ("a row-major 4x8 (GenRowMajor gives (N,1); note 000 says (1,N)) as print_layout draws it",
     ["layout", "(4,8):(8,1)", "show"]),
    ("PitchLinearStripminedThreadMap<64x64, 128, 4>, thread 50 (note 004)",
     ["threadmap", "PitchLinearStripminedThreadMap", "64x64", "128", "4", "--thread", "50"]),
]


@main.command("examples")
def examples_cmd() -> None:
    """Run the calculators on examples from the study notes."""
    for title, argv in EXAMPLES:
        click.echo(f"\n# {title}\n$ threadmap " + " ".join(f'"{a}"' if any(c in a for c in "(),:") else a
                                                        for a in argv))
        main.main(args=argv, standalone_mode=False)


def _fmt(x: Any, static: bool) -> str:
    to_str = getattr(x, "to_str", None)
    return to_str(static=static) if to_str else str(x)


def entry() -> None:
    """Console-script entry point: never lets a traceback reach the user for bad input."""
    try:
        main(standalone_mode=True)
    except ThreadmapError as e:  # pragma: no cover - raised outside click's invoke
        click.echo(f"threadmap: error: {e}", err=True)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    entry()
