"""``threadmap layout`` (the CuTe layout calculator) and ``threadmap threadmap`` (the CUTLASS
2.x thread map calculator)."""

from __future__ import annotations

import json
from typing import Any

import click
import numpy as np

import threadmap.layout as L
from threadmap.cli.common import UsageError
from threadmap.layout import parse_int_tuple, print_layout
from threadmap.layout.calculator import OPS, Show, run_layout

#: largest rank-2 layout ``layout ... show`` draws, and largest thread-map listing
MAX_DRAW_CELLS = 1 << 16
MAX_LIST = 1 << 22


@click.command("layout", context_settings={"ignore_unknown_options": True})
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
            out["result"] = fmt_layout(result, static)
            out["shape"] = jsonable(getattr(result, "shape", None))
            out["stride"] = jsonable(getattr(result, "stride", None)) if isinstance(result, L.Layout) else None
            out["size"] = int(L.size(result))
            out["cosize"] = int(L.cosize(result))
        else:
            out["result"] = jsonable(result)
        click.echo(json.dumps(out))
        return
    if isinstance(result, Show):
        click.echo(print_layout(result.layout), nl=False)
    elif isinstance(result, L.Layout) or hasattr(result, "layout_b"):
        click.echo(fmt_layout(result, static))
    elif isinstance(result, list):
        click.echo(" ".join(str(v) for v in result))
    elif isinstance(result, tuple):
        click.echo(L.tuple_str(result, static))
    else:
        click.echo(str(result))


layout_cmd.help = (layout_cmd.help or "") + ", ".join(OPS)


def jsonable(v: Any) -> Any:
    """A calculator result as JSON values (int tuples as lists, other objects as text)."""
    if isinstance(v, tuple):
        return [jsonable(x) for x in v]
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, list):
        return v
    return str(v)


def fmt_layout(x: Any, static: bool) -> str:
    to_str = getattr(x, "to_str", None)
    return to_str(static=static) if to_str else str(x)


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


@click.command("threadmap", context_settings={"ignore_unknown_options": True})
@click.argument("tokens", nargs=-1, required=True)
@click.option("--thread", "thread", type=int, default=None, help="list every access of this thread")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def threadmap_cmd(tokens: tuple[str, ...], thread: int | None, as_json: bool) -> None:
    """CUTLASS 2.x thread map calculator: NAME TEMPLATE-ARGS...

    \b
    Examples:
      threadmap threadmap PitchLinearStripminedThreadMap 64x64 128 4 --thread 50
      threadmap threadmap PitchLinearWarpRakedThreadMap 32x128 128 4x8 8 --thread 5

    A map that leaves part of its tile untouched (its iterations and deltas stop short of
    its Shape) is reported with a warning naming the untouched rows and columns.
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
    left = tm.untouched()  # a tile part no thread reaches is a warning, in text and JSON
    info["untouched"] = {"rows": list(left.rows), "columns": list(left.columns), "elements": len(left.elements)}
    info["warnings"] = [left.message()] if left else []
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
    for warning in info["warnings"]:
        con.print(f"warning: {warning}", style="yellow", markup=False, soft_wrap=True)
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
