"""threadmap vs tensor-layouts, side by side, on the same accesses.

Run from the repository root:

    python benchmarks/compare_tensor_layouts.py                      # print the table
    python benchmarks/compare_tensor_layouts.py --write-doc docs/tensor_layouts_comparison.md
    python benchmarks/compare_tensor_layouts.py --check-doc docs/tensor_layouts_comparison.md

For every transpose kernel of ``specs/cute_transpose`` and every MMA spec of ``specs/mma``:

(a) threadmap's numbers come from the in-process pipeline (``threadmap.api.verify_spec``):
    the per-stage, per-side summaries of the coverage, coalescing and bank_conflicts checks.

(b) tensor-layouts' numbers come from its own layout algebra and analysis functions. For each
    memory side of each copy stage the script builds, with tensor-layouts objects only, the
    CTA's thread-value layout ``(thread, value) -> element offset`` the way CuTe defines it:

    * ``threads:`` partitions: ``local_partition`` puts thread t at the coordinate
      ``right_inverse(thr)(t)``, so ``tv = compose(tile, right_inverse(thr))``;
    * tiled copies: ``make_tiled_copy`` is ``right_inverse(raked_product(thr, val))`` reshaped
      to (threads, values), composed with the tile;
    * MMA partitions: tensor-layouts' own atom (``tensor_layouts.atoms_nv``: ThrID, A/B/C
      layouts) replicated over the atom layout, lanes placed by ThrID plus the quadpair offset
      that ``tile_mma_grid`` uses, composed with the operand's tile;

    then slices it into the warp instructions that the kernel issues (warp g, instruction k =
    values ``k*vec .. k*vec+vec-1`` where ``vec`` is the access width threadmap simulates), and
    calls ``bank_conflicts`` (shared), ``segment_analysis`` / ``coalescing_efficiency``
    (global) per instruction and ``is_injective`` / ``footprint`` on the whole CTA
    layout. For swizzled shared layouts the slices are ``ComposedLayout``s whose offset stays
    inside the swizzle, for affine layouts the slice offset is kept with an identity outer
    layout, so every slice evaluates to the exact element offsets of that instruction.

    Before any number is taken, every (thread, value) offset of the tensor-layouts layout is
    compared with threadmap's simulated access table of block 0 (``Simulator.stage_tables``): the
    script stops if they differ, so both columns describe the same accesses.

The "whole TV" rows show what tensor-layouts reports when it is handed the CTA's TV layout
as is (its documented usage: all values of a thread are one vectorized access of the first
32 threads), next to threadmap's per-instruction figure.

See docs/tensor_layouts_comparison.md for the explanation of every difference.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import re
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tensor_layouts import ComposedLayout, Layout, Swizzle, atoms_nv
from tensor_layouts.analysis import (
    bank_conflicts,
    coalescing_efficiency,
    footprint,
    is_injective,
    operand_analysis,
    segment_analysis,
)
from tensor_layouts.layouts import compose, mode, raked_product, right_inverse, size, slice_and_offset

import threadmap.api as api
from threadmap.hardware import sectors as instruction_sectors
from threadmap.model import CopyModel, KernelModel, build_model
from threadmap.simulate.access import AccessTable
from threadmap.simulate.engine import Simulator
from threadmap.spec.load import LoadedSpec, load_spec
from threadmap.spec.schema import Side

ROOT = Path(__file__).resolve().parent.parent
SPEC_GLOBS = ("specs/cute_transpose/*.yaml", "specs/mma/*.yaml")
BEGIN = "<!-- BEGIN GENERATED TABLE (benchmarks/compare_tensor_layouts.py) -->"
END = "<!-- END GENERATED TABLE -->"
WARP = 32
IDENTITY = Layout(1 << 40, 1)  # outer layout that carries a slice offset unchanged

Row = tuple[str, str, str, str, str]
TLLayout = Any  # tensor_layouts Layout | ComposedLayout


# ---------------------------------------------------------------------------- CuTe text
_TOKEN = re.compile(r"\s*(\(|\)|,|:|[A-Za-z_][A-Za-z_0-9]*|\d+)")


def _parse_tuple(text: str, env: dict[str, int]) -> Any:
    """A CuTe int tuple ``(4,(2,3))`` (names looked up in ``env``) as nested Python tuples."""
    tokens = _TOKEN.findall(text)
    pos = 0

    def item() -> Any:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            out = [item()]
            while tokens[pos] == ",":
                pos += 1
                out.append(item())
            assert tokens[pos] == ")", text
            pos += 1
            return tuple(out)
        return int(tok) if tok.isdigit() else int(env[tok])

    value = item()
    assert pos == len(tokens), text
    return value


def tl_layout(text: str, env: dict[str, int]) -> TLLayout:
    """``[Sw<B,M,S> o] shape:stride`` as a tensor-layouts Layout / ComposedLayout."""
    sw = None
    m = re.fullmatch(r"\s*Sw<\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*>\s*o\s*(.*)", text)
    if m:
        sw = Swizzle(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        text = m.group(4)
    shape_txt, stride_txt = _split_colon(text)
    lay = Layout(_parse_tuple(shape_txt, env), _parse_tuple(stride_txt, env))
    return lay if sw is None else ComposedLayout(sw, lay)


def _split_colon(text: str) -> tuple[str, str]:
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == ":" and depth == 0:
            return text[:i], text[i + 1:]
    raise ValueError(f"no ':' in layout {text!r}")


# ---------------------------------------------------------------------------- TV layouts
def tile_layout(side: Side, tensor_layout: TLLayout, env: dict[str, int]) -> TLLayout:
    """The tensor restricted to block 0's tile (local_tile at the origin)."""
    if side.tile is None:
        return tensor_layout
    extents = [int(x) if isinstance(x, int) else int(env.get(str(x), x)) for x in side.tile]
    return compose(tensor_layout, tuple(Layout(e, 1) for e in extents))


def tv_index(side: Side, threads: int, tile_rows: int, env: dict[str, int]) -> TLLayout:
    """(thread, value) -> column-major index into the side's tile, built with tensor-layouts."""
    if side.threads is not None:
        thr = tl_layout(side.threads, env)
        assert size(thr) == threads
        return compose(right_inverse(thr), Layout((threads, 1), (1, 0)))
    if side.tiled_copy is not None:
        thr = tl_layout(side.tiled_copy.threads, env)
        val = tl_layout(side.tiled_copy.values, env)
        layout_mn = raked_product(thr, val)
        return compose(right_inverse(layout_mn), Layout((size(thr), size(val))))
    if side.mma is not None:
        return mma_tv_index(side, threads, tile_rows, env)
    raise ValueError("side kind not compared")


def mma_tv_index(side: Side, threads: int, tile_rows: int, env: dict[str, int]) -> TLLayout:
    """TiledMMA partition_A/B/C from tensor-layouts' atom, over the physical lanes.

    Atom q of the atom layout sits at atom coordinate (am, an); A tiles along M only, B along
    N only, C along both. Lanes: ThrID(T) + q * quadpair offset, the placement of
    tensor_layouts.layout_utils.tile_mma_grid (n_thr_per_atom // 2 for SM70 quadpairs).
    """
    assert side.mma is not None
    atom = getattr(atoms_nv, side.mma.atom)
    op = side.mma.operand
    ma, na, ka = atom.shape_mnk
    op_tv = {"A": atom.a_layout, "B": atom.b_layout, "C": atom.c_layout}[op]
    rows, cols = {"A": (ma, ka), "B": (na, ka), "C": (ma, na)}[op]
    # atom coordinate (row, col) -> column-major index in the operand's tile
    atom_tile = compose(Layout((rows, cols), (1, tile_rows)), op_tv)
    text = side.mma.atom_layout
    al = tl_layout(text, env) if ":" in text else Layout(_parse_tuple(text, env))  # compact col-major
    al_shape = al.shape if isinstance(al.shape, tuple) else (al.shape,)
    step = {"A": (ma, 0), "B": (0, na), "C": (ma, na * tile_rows)}[op]
    grid_strides = tuple(step[i] if i < 2 else 0 for i in range(len(al_shape)))
    n_atoms = size(al)
    q_to_off = compose(Layout(al_shape, grid_strides), right_inverse(al)) if n_atoms > 1 else Layout(1, 0)
    ta = size(mode(atom_tile, 0))
    tqv = Layout(Layout(mode(atom_tile, 0), q_to_off), mode(atom_tile, 1))
    thr_id = atom.thr_id if atom.thr_id is not None else Layout(ta, 1)
    qp = ta // 2 if atom.thr_id is not None else ta
    lanes = Layout(thr_id, Layout(n_atoms, qp))
    assert size(lanes) == threads == ta * n_atoms
    nv = size(mode(atom_tile, 1))
    return compose(tqv, Layout(right_inverse(lanes), Layout(nv, ta * n_atoms)))


def instruction_slice(tv: TLLayout, threads: int, vec: int, warp: int, instr: int) -> TLLayout:
    """Warp ``warp``'s instruction ``instr``: (32 lanes, vec values) -> element offset."""
    nvals = size(tv) // threads
    shaped = compose(tv, Layout(((WARP, threads // WARP), (vec, nvals // vec)),
                                ((1, WARP), (threads, threads * vec))))
    sub, off = slice_and_offset(((None, warp), (None, instr)), shaped)
    if isinstance(sub, ComposedLayout) or off == 0:
        return sub
    return ComposedLayout(IDENTITY, sub, offset=off)


def offsets_of(tv: TLLayout, threads: int, nvals: int) -> np.ndarray:
    """(threads, values) offsets, flat index t + threads * v (CuTe's TV order)."""
    return np.array([[tv(t + threads * v) for v in range(nvals)] for t in range(threads)], dtype=np.int64)


# ---------------------------------------------------------------------------- comparison
@dataclass
class SideData:
    table: AccessTable
    tv: TLLayout
    threads: int
    nvals: int
    vec: int


def fmt(x: float | int | str | bool) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.3f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))
    return str(x)


def build_sides(loaded: LoadedSpec, env: dict[str, int]) -> dict[tuple[int, str], SideData]:
    spec = loaded.spec
    model: KernelModel = build_model(loaded, env)
    sim = Simulator(model)
    out: dict[tuple[int, str], SideData] = {}
    for cp in model.copies():
        tables = dict(zip(("src", "dst"), sim.stage_tables(cp, np.array([0], dtype=np.int64)), strict=True))
        st = spec.stages[cp.index]
        assert not isinstance(st, str)
        for which in ("src", "dst"):
            side: Side = getattr(st.copy_, which)
            table = tables[which]
            if table.memory == "register":
                continue
            assert side.tensor is not None
            tspec = spec.tensors[side.tensor]
            tensor_l = tl_layout(tspec.layout, env)
            tile = tile_layout(side, tensor_l, env)
            tile_rows = int(table.tile[0])
            tv = compose(tile, tv_index(side, model.threads, tile_rows, env))
            T, V = model.threads, table.values
            assert size(tv) == T * V, (loaded.path, cp.index, which, size(tv), T * V)
            mine = offsets_of(tv, T, V)
            real = np.ones(len(table), dtype=bool) if table.valid is None else table.valid
            order = np.lexsort((table.value[real], table.thread[real]))
            theirs = (table.offset[real][order] - (tspec.offset or 0)).reshape(T, V)
            if not np.array_equal(mine, theirs):
                bad = np.argwhere(mine != theirs)[0]
                raise SystemExit(f"{loaded.path.name} stage {cp.index} {which}: tensor-layouts "
                                 f"offset {mine[tuple(bad)]} != threadmap {theirs[tuple(bad)]} "
                                 f"at (t, v) = {tuple(bad)}")
            out[(cp.index, which)] = SideData(table, tv, T, V, int(table.vec))
    return out


def per_instruction(sd: SideData) -> Iterable[tuple[int, int, TLLayout]]:
    for g in range(sd.threads // WARP):
        for k in range(sd.nvals // sd.vec):
            sub = instruction_slice(sd.tv, sd.threads, sd.vec, g, k)
            # the slice must be exactly this instruction's accesses
            t = sd.table
            rows = (t.thread // WARP == g) & (t.step == k)
            want = sorted(t.offset[rows].tolist())
            got = sorted(sub(i) for i in range(size(sub)))
            assert got == want, (g, k, got[:4], want[:4])
            yield g, k, sub


def compare_spec(path: Path) -> list[Row]:
    loaded = load_spec(path)
    env = loaded.envs[0]
    reports = api.verify_spec(loaded)
    tm: dict[tuple[str, int | None, str | None], dict[str, Any]] = {}
    for r in reports[0].results:
        tm[(r.check, r.stage, r.side)] = {**r.summary.model_dump(), "_status": r.status}
    sides = build_sides(loaded, env)
    name = path.stem
    rows: list[Row] = []
    for (stage, which), sd in sides.items():
        where = f"{stage}.{which}"
        eb = sd.table.elem_bytes
        mem = sd.table.memory
        kind = f"{mem}, {sd.vec * eb * 8}-bit"
        cov = tm[("coverage", stage, which)]
        inj = is_injective(sd.tv)
        # aliasing_profile takes affine layouts only; footprint also takes swizzled ones
        fp = footprint(sd.tv)
        rows.append((name, where, f"injective / coverage ({kind})",
                     f"{cov['_status']}: dup {cov['duplicates']}, repl {cov['replication']}",
                     f"is_injective {fmt(inj)}: dup {fp['total_elements'] - fp['unique_offsets']}, "
                     f"reuse {fmt(fp['reuse_factor'])}"))
        insts = list(per_instruction(sd))
        if mem == "shared":
            bc = tm[("bank_conflicts", stage, which)]
            ways = [bank_conflicts(s, element_bytes=eb)["max_ways"] for _, _, s in insts]
            rows.append((name, where, "wavefronts / instr, max",
                         f"{bc['max_wavefronts']} (ideal {fmt(bc['ideal_wavefronts'] / bc['instructions'])}, "
                         f"{bc['phases']} phase{'s' if bc['phases'] > 1 else ''})",
                         f"max_ways {max(ways)}"))
            rows.append((name, where, "wavefronts / instr, mean",
                         fmt(bc["wavefronts"] / bc["instructions"]), fmt(sum(ways) / len(ways))))
            rows.append((name, where, "conflict verdict", bc["_status"],
                         "conflict_free" if max(ways) == 1 else f"conflict ({max(ways)}-way)"))
            if sd.nvals > sd.vec:
                whole = bank_conflicts(sd.tv, element_bytes=eb)["max_ways"]
                rows.append((name, where, "whole TV (all values of warp 0)",
                             f"{sd.nvals // sd.vec} instr x {bc['max_wavefronts']}", f"max_ways {whole}"))
        elif mem == "global":
            co = tm[("coalescing", stage, which)]
            seg = [segment_analysis(s, element_bytes=eb) for _, _, s in insts]
            lines = [coalescing_efficiency(s, element_bytes=eb)["transactions"] for _, _, s in insts]
            sectors = [s["segments"] for s in seg]
            rows.append((name, where, "sectors / request, mean",
                         fmt(co["sectors_per_request"]), fmt(sum(sectors) / len(sectors))))
            rows.append((name, where, "sectors / request, max",
                         fmt(co["worst"]["sectors"]), fmt(max(sectors))))
            rows.append((name, where, "lines / request, mean",
                         fmt(co["lines"] / co["requests"]), fmt(sum(lines) / len(lines))))
            rows.append((name, where, "efficiency (useful / moved bytes)",
                         fmt(1 / co["ratio"]) + f" ({co['_status']})",
                         fmt(sum(s["segment_efficiency"] for s in seg) / len(seg))))
            if sd.nvals > sd.vec:
                whole = segment_analysis(sd.tv, element_bytes=eb)["segments"]
                rows.append((name, where, "whole TV sectors (warp 0)",
                             f"{sd.nvals // sd.vec} instr x {fmt(co['sectors_per_request'])}", str(whole)))
        if any(s.mma for s in _sides_of(loaded, stage, which)):
            side = _sides_of(loaded, stage, which)[0]
            assert side.mma is not None
            atom = getattr(atoms_nv, side.mma.atom)
            oa = operand_analysis(atom)[side.mma.operand.lower()]
            rows.append((name, where, f"atom {side.mma.operand} alone (operand_analysis)",
                         f"warp tile {cov['_status']}",
                         f"coverage_ok {fmt(oa['coverage_ok'])}, dup {oa['duplicates']}"))
    return rows


def _sides_of(loaded: LoadedSpec, stage: int, which: str) -> list[Side]:
    st = loaded.spec.stages[stage]
    assert not isinstance(st, str)
    return [st.copy_.src if which == "src" else st.copy_.dst]


def ragged_edge_rows() -> list[Row]:
    """row_smem at M = N = 1000: the grid's corner tile has 8 x 8 of its 16 x 16 in bounds."""
    path = ROOT / "specs/cute_transpose/row_smem.yaml"
    loaded = load_spec(path)
    env = {"M": 1000, "N": 1000}
    rep = api.verify_spec(loaded, sizes=env)[0]
    pred = next(r.summary for r in rep.results if (r.check, r.stage, r.side) == ("predicates", 0, "src"))
    model = build_model(api.load(loaded, env), env)
    sim = Simulator(model)
    gx, gy, _ = model.grid
    corner = np.array([(gx - 1) + (gy - 1) * gx], dtype=np.int64)
    first = model.stages[0]
    assert isinstance(first, CopyModel)
    t = sim.stage_tables(first, corner)[0]
    warp = 3  # rows 6 and 7 of the tile (in bounds), columns 8..15 of each (out of bounds)
    rows = t.thread // WARP == warp
    # tensor-layouts: the same warp instruction of the same tile; a layout has no predicate
    tile = compose(tl_layout(loaded.spec.tensors["x"].layout, env), (Layout(16, 1), Layout(16, 1)))
    tv = compose(tile, right_inverse(tl_layout("(16,16):(16,1)", env)))
    sub = instruction_slice(tv, model.threads, 1, warp, 0)
    origin = int(t.offset[rows].min()) - min(sub(i) for i in range(size(sub)))
    assert sorted(sub(i) + origin for i in range(size(sub))) == sorted(t.offset[rows].tolist())
    tl_sectors = segment_analysis(sub, element_bytes=4)["segments"]
    tm_sectors = len(np.unique(t.addr[rows & t.pred] // 32))
    name = "row_smem @ M=N=1000"
    return [
        (name, "0.src", f"corner block, warp {warp}: lanes accessing",
         f"{int((rows & t.pred).sum())} of 32 ({int((rows & ~t.pred).sum())} masked; predicates: "
         f"oob {pred['out_of_bounds']}, lost {pred['lost']})",
         "32 of 32 (no predicate model)"),
        (name, "0.src", f"corner block, warp {warp}: sectors", str(tm_sectors), str(tl_sectors)),
    ]


def misaligned_rows() -> list[Row]:
    """row2col_reg with y's base only 16-byte aligned (``align: 16``): the same layouts."""
    src = (ROOT / "specs/cute_transpose/row2col_reg.yaml").read_text()
    text = src.replace('y: {memory: global, layout: "(N,M):(M,1)", align: 256}',
                       'y: {memory: global, layout: "(N,M):(M,1)", align: 16}')
    assert text != src
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "row2col_reg_align16.yaml"
        path.write_text(text)
        loaded = load_spec(path)
        env = loaded.envs[0]
        rep = api.verify_spec(loaded)[0]
        co = next(r.summary for r in rep.results if (r.check, r.stage, r.side) == ("coalescing", 0, "dst"))
        sides = build_sides(loaded, env)
    sd = sides[(0, "dst")]
    sectors = [segment_analysis(sub, element_bytes=4)["segments"] for _, _, sub in per_instruction(sd)]
    name = "row2col_reg, y align 16"
    return [(name, "0.dst", "sectors / request, mean",
             f"{fmt(co['sectors_per_request'])} (ideal {fmt(co['ideal_sectors_per_request'])})",
             f"{fmt(sum(sectors) / len(sectors))} (rebased to the lowest address)")]


def broadcast_rows() -> list[Row]:
    """32 lanes loading one 4-byte global word (``Layout(32, 0)``)."""
    tm = instruction_sectors([256] * WARP, 4)
    tl = segment_analysis(Layout(WARP, 0), element_bytes=4)
    name = "broadcast (32 lanes, one f32)"
    return [(name, "-", "sectors (ideal) / efficiency",
             f"{tm.sectors} ({tm.ideal}) / {fmt(tm.ideal / tm.sectors)}",
             f"{tl['segments']} / {fmt(tl['segment_efficiency'])}")]


def markdown(rows: list[Row]) -> str:
    head = ("| spec | stage.side | metric | threadmap | tensor-layouts |\n"
            "|---|---|---|---|---|\n")
    return head + "".join(f"| {' | '.join(r)} |\n" for r in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-doc", type=Path, help="replace the generated table in this markdown file")
    ap.add_argument("--check-doc", type=Path, help="exit 1 unless this file holds the printed table")
    args = ap.parse_args(argv)
    paths = [p for g in SPEC_GLOBS for p in sorted(ROOT.glob(g))]
    rows: list[Row] = []
    for p in paths:
        rows.extend(compare_spec(p))
    rows.extend(ragged_edge_rows())
    rows.extend(misaligned_rows())
    rows.extend(broadcast_rows())
    table = (f"threadmap {md.version('threadmap')}, tensor-layouts {md.version('tensor-layouts')}; "
             f"{len(paths)} specs, {len(rows)} rows.\n\n" + markdown(rows))
    print(table, end="")
    block = f"{BEGIN}\n{table}{END}"
    for doc in (args.write_doc, args.check_doc):
        if doc is None:
            continue
        text = doc.read_text()
        i, j = text.find(BEGIN), text.find(END)
        if i < 0 or j < 0:
            print(f"{doc}: no generated-table markers", file=sys.stderr)
            return 1
        current = text[i:j + len(END)]
        if doc is args.write_doc:
            doc.write_text(text[:i] + block + text[j + len(END):])
        elif current != block:
            print(f"{doc}: the table differs from this run's output", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
