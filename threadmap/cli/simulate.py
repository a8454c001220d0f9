"""``threadmap simulate`` (the access tables as CSV, JSON or npz) and ``threadmap show``
(print_layout-style drawings and SVG pictures)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import click
import numpy as np

from threadmap.cli.common import UsageError, output, parse_sizes, path_text

#: largest ``simulate`` dump (rows)
MAX_SIMULATE_ROWS = 1 << 22


def parse_blocks(text: str, n: int, max_ids: int | None = None) -> np.ndarray:
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


@click.command("simulate")
@click.argument("spec_path")
@click.option("--format", "fmt", type=click.Choice(("csv", "json", "npz")), default="csv", show_default=True)
@click.option("-o", "--output", "output_path", default=None, help="output file (required for npz)")
@click.option("--blocks", default="0", show_default=True,
              help="block ids to simulate: 'all', ids separated by commas, or a range 'a:b'")
@click.option("--sizes", default=None, help="set named sizes, e.g. --sizes M=1000,N=62")
def simulate_cmd(spec_path: str, fmt: str, output_path: str | None, blocks: str, sizes: str | None) -> None:
    """Print the access table of every stage: (block, thread, step, value) -> coordinate,
    predicate, element offset, byte address.

    \b
    Examples:
      threadmap simulate specs/cute_transpose/row_smem.yaml --blocks 0 --format csv
      threadmap simulate specs/cute_transpose/row_smem.yaml --blocks 0:2 --format json
    """
    import threadmap.api as api
    from threadmap.simulate.engine import Simulator

    model = api.models(spec_path, parse_sizes(sizes))[0]
    sim = Simulator(model)
    ids = parse_blocks(blocks, model.num_blocks, MAX_SIMULATE_ROWS // max(1, sim.rows_per_block()))
    rows = ids.size * sim.rows_per_block()
    if rows > MAX_SIMULATE_ROWS:
        raise UsageError(f"{ids.size} blocks make {rows} access rows; simulate dumps at most {MAX_SIMULATE_ROWS} "
                         "(choose fewer --blocks)")
    if fmt == "npz" and not output_path:
        raise UsageError("--format npz needs -o FILE")
    write = output(output_path, [Path(spec_path)])
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
        assert output_path is not None
        try:
            Path(output_path).write_bytes(buf.getvalue())
        except OSError as e:
            raise UsageError(f"-o {path_text(output_path)}: cannot write: {e.strerror or e}") from None
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


@click.command("show")
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

    write_svg = output(svg_path, [Path(spec_path)], "--svg") if svg_path is not None else None
    res = api.show(spec_path, sizes=parse_sizes(sizes), stage=stage, block=block, warp=warp, step=step,
                   svg=svg_path is not None)
    click.echo(res.text)
    if write_svg is not None and svg_path is not None and res.svg is not None:
        write_svg(res.svg)
        click.echo(f"wrote {path_text(svg_path)}")


