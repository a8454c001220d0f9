"""2.x GEMMs and conv2d Fprop kernels whose global operands are interleaved.

``ColumnMajorInterleaved<I>`` keeps a matrix's columns in groups of ``I``: ``(row, col)`` is at
``(col / I) * ld + row * I + col % I`` (``cutlass/layout/matrix.h``; ``ld = rows * I`` packed),
``RowMajorInterleaved<I>`` the same with rows and columns swapped.  CUTLASS's interleaved
mainloop (``DefaultMmaCore`` for ``ColumnMajorInterleaved<I>`` A and ``RowMajorInterleaved<I>``
B) reads them through the pitch-linear view its global iterator builds
(``PredicatedTileAccessIterator<..., ColumnMajorInterleaved<I>>``: extent ``(rows * I,
cols / I)``, stride ``ld``), with a ``PitchLinearWarpRakedThreadMap`` over the view's tile
``(kM * I, kK / I)``; the shared iterator walks the GEMM tile with that map transposed
(``TransposePitchLinearThreadMap``) into a crosswise layout.  The view's coordinate
``(c, s)`` is the GEMM coordinate ``(row, col) = (c / I, s * I + c % I)`` of A (of B:
``(s * I + c % I, c / I)``, its view being ``(K / I, N * I)``), so a spec in the view's
coordinates is the kernel's copy exactly: the global tensor is the interleaved one,
``((I,M),K/I):((1,I),I*M)`` (``(K/I,(I,N)):(I*N,(1,I))`` for B), and the shared tensor the
printed layout read at ``(c / I, s * I + c % I)`` (fitted like any shared layout).

The conv2d Fprop kernels of ``TensorNCxHWx<I>`` activations and ``TensorCxRSKx<I>`` filters
(``default_conv2d_fprop.h``) use the same ``DefaultMmaCore``, but their global iterators take
the transposed map over the GEMM tile; the map it transposes is printed too, and the spec
uses it in the view's coordinates (:func:`threadmap.sweep.extract_conv.interleaved_family`
gives the tensors' layouts, checked against the kernel's iterators run host-side).

What is taken for granted is checked against the C++ output before a spec is written: the
view's thread map is threadmap.cutlass's; its accesses, read through the view, are the
elements the shared iterator's (and a convolution's global iterator's) accesses name, in the
same order; the shared layout in the view's coordinates has an exact CuTe form; the
global iterators, run host-side on a sample problem over every k-tile of the first and last
CTA row (column), address the spec's global layout.  Each that fails is a reason.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from threadmap.sweep.extract_conv import (
    INTERLEAVED_CONV,
    OFFSETS_DIGEST,
    Family,
    NoFamily,
    digest,
    interleaved_family,
)
from threadmap.sweep.extracted import Extracted, MapOffsets, Operand
from threadmap.sweep.library import INTERLEAVED_GEMM, Configuration
from threadmap.sweep.specs import (
    Copies,
    NotAnalysed,
    Written,
    check_access,
    ktile_stages,
    row_contiguous,
    same_thread_map,
    written,
)

#: C++ of the GEMM's oracle: checksums of a predicated tile iterator's offsets (appended to the
#: extraction prelude of batches with an interleaved GEMM; its own namespace and digest)
GEMM_ORACLE = """\
namespace tm_il {

""" + OFFSETS_DIGEST + """
// the global layout object an iterator names, packed over `rows` x `cols`: its offset at every
// element, row by row (the iterator itself cannot run host-side: its predicates are device code)
template <class It> void layout_offsets(const char* id, const char* key, int rows, int cols) {
  auto layout = It::Layout::packed(cutlass::MatrixCoord(rows, cols));
  offsets_digest d;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) d.add((long long)layout(cutlass::MatrixCoord(r, c)));
  std::printf("%s\\t%s\\t%llu %llu %llu\\n", id, key, d.n, d.h1, d.h2);
}

}  // namespace tm_il
"""


def interleave_of(cfg: Configuration) -> int | None:
    """A's interleave when the configuration's global operands are interleaved (None: they are
    not)."""
    a = str(cfg.fields.get("layout_a", ""))
    if cfg.kind == "gemm" and a in INTERLEAVED_GEMM:
        return int(a[1:])     # n32: ColumnMajorInterleaved<32>
    return INTERLEAVED_CONV.get(a) if cfg.kind == "conv2d" else None


def _gemm_sample(cfg: Configuration) -> dict[str, int]:
    """The GEMM problem the iterators run on: two CTA rows and columns, the second ragged, two
    k-tiles."""
    tm, tn, tk = cfg.fields["threadblock"]
    return {"M": 2 * tm - 1, "N": 2 * tn - 1, "K": 2 * tk}


def gemm_calls(cfg: Configuration, cid: str) -> str:
    """``main``'s lines for an interleaved GEMM: its mainloop with the views' contiguous modes
    (A's view ``(M*I, K/I)`` is read along mode 0, B's ``(K/I, N*I)`` along mode 1), and its
    global layout objects on the sample problem."""
    s = _gemm_sample(cfg)
    k = f"{cid}_kernel_base::Mma"
    return "\n".join([f'  tm_sweep::mainloop<{cid}_kernel_base>("{cid}", 0, 1);',
                      f'  tm_il::layout_offsets<typename {k}::IteratorA>("{cid}", "oracle.A", {s["M"]}, {s["K"]});',
                      f'  tm_il::layout_offsets<typename {k}::IteratorB>("{cid}", "oracle.B", {s["K"]}, {s["N"]});'])


def _gemm_layout_offsets(which: str, layout: str, env: dict[str, int], interleave: int) -> np.ndarray:
    """The spec's global layout (over the view) at every element of the sample's operand, row
    by row, as the GEMM oracle walks the C++ layout object."""
    from threadmap.spec.parsed import bind_layout

    rows, cols = (env["M"], env["K"]) if which == "A" else (env["K"], env["N"])
    r, c = (x.reshape(-1) for x in np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij"))
    lay = bind_layout(layout, env)
    if which == "A":
        view = (r * interleave + c % interleave, c // interleave)
    else:
        view = (r // interleave, c * interleave + r % interleave)
    return np.asarray(lay(view), dtype=np.int64)


# --- the view's coordinates ----------------------------------------------------------------------
def _elements(m: MapOffsets, access: int | None = None) -> np.ndarray:
    """Every element of a map's accesses as (contiguous, strided): (threads, elements, 2) in
    access order."""
    starts = m.starts()
    v = np.arange(m.epa if access is None else access)
    c = starts[..., 0][..., None] + v
    s = np.broadcast_to(starts[..., 1][..., None], c.shape)
    return np.stack([c, s], axis=-1).reshape(starts.shape[0], -1, 2)


def view_to_gemm(which: str, cs: np.ndarray, interleave: int) -> np.ndarray:
    """(contiguous, strided) of the view's tile as (row, column) of the operand's GEMM tile."""
    c, s = cs[..., 0], cs[..., 1]
    inner, outer = s * interleave + c % interleave, c // interleave
    return np.stack([outer, inner] if which == "A" else [inner, outer], axis=-1)


def view_table(which: str, table: np.ndarray, interleave: int) -> np.ndarray:
    """The shared layout's offsets over the view's tile (A: ``(kM*I, kK/I)``, B: ``(kK/I,
    kN*I)``), from its offsets over the GEMM tile."""
    rows, cols = table.shape
    if which == "A":
        c, s = np.meshgrid(np.arange(rows * interleave), np.arange(cols // interleave), indexing="ij")
        rc = view_to_gemm("A", np.stack([c, s], axis=-1), interleave)
    else:
        s, c = np.meshgrid(np.arange(rows // interleave), np.arange(cols * interleave), indexing="ij")
        rc = view_to_gemm("B", np.stack([c, s], axis=-1), interleave)
    return table[rc[..., 0], rc[..., 1]]


def _gemm_logical(op_map: MapOffsets, smem_layout: str) -> np.ndarray:
    """The shared iterator's accesses as (row, column) of the GEMM tile."""
    srow = row_contiguous(smem_layout)
    if srow is None:
        raise NotAnalysed("shared layout neither row- nor column-major",
                          f"the shared layout {smem_layout} is neither row- nor column-major")
    e = _elements(op_map)
    return e if srow else e[..., ::-1]


def _view_map_offsets(fields: dict[str, str], key: str) -> MapOffsets:
    def ints(k: str) -> list[int]:
        return [int(x) for x in fields[f"{key}.{k}"].split()]

    it, d = ints("iterations"), ints("delta")
    return MapOffsets(np.asarray(ints("initial"), dtype=np.int64).reshape(-1, 2), (it[0], it[1]), (d[0], d[1]),
                      int(fields[f"{key}.epa"]))


def _view_operand(cfg: Configuration, ex: Extracted, which: str, interleave: int) -> Operand:
    """The operand as the spec gives it: its global view's thread map and access sequence, its
    tile the view's (the GEMM's own iterator's for a GEMM; for a convolution, the map its
    global iterator's transposes, printed beside it)."""
    import yaml

    op = ex.operands[which]
    rows, cols = op.tile
    tile = (rows * interleave, cols // interleave) if which == "A" else (rows // interleave, cols * interleave)
    if cfg.kind == "gemm":
        return dataclasses.replace(op, tile=tile)
    key = f"oracle.view{which}"
    m = ex.oracle.get(f"{key}.map", "")
    if not m or f"{key}.initial" not in ex.oracle:
        raise NotAnalysed("extraction output incomplete", f"{which}: the transposed thread map's own map is missing")
    tm = None if m.startswith("?") else dict(yaml.safe_load(m)["thread_map"])
    return dataclasses.replace(op, tile=tile, map=tm, map_type=m[1:] if tm is None else "",
                               gmap=_view_map_offsets(ex.oracle, key))


def interleaved_copies(cfg: Configuration, ex: Extracted, interleave: int) -> tuple[Copies, dict[str, Operand]]:
    """The premises of an interleaved configuration's copies (see the module docstring), in
    order: per operand the cp.async, the view's thread map and the fitted view of the shared
    layout, and the operands as the spec gives them."""
    from threadmap.sweep.fit import fit_layout

    if ex.error:
        raise NotAnalysed(ex.error_kind or "extraction failed", ex.error)
    for w in ("A", "B"):
        if ex.operands[w].element.startswith("?"):
            raise NotAnalysed("element type without a spec name",
                              f"{w}: the element type {ex.operands[w].element[1:]} has no spec name")
        want = ("ColumnMajorInterleaved" if w == "A" else "RowMajorInterleaved") if cfg.kind == "gemm" else \
            ("TensorNCxHWx" if w == "A" else "TensorCxRSKx")
        got = re.fullmatch(r"(?:cutlass::layout::)?(\w+)<(\d+)>", ex.operands[w].layout)
        if got is None or got.group(1) != want or int(got.group(2)) != interleave:
            raise NotAnalysed("global layout not the interleaved one",
                              f"{w}: the global iterator's layout is {ex.operands[w].layout}, not {want}<{interleave}>")
    if ex.operands["A"].threads != ex.operands["B"].threads:
        raise NotAnalysed("A and B thread counts differ", "the A and B thread maps have different thread counts")
    ops: dict[str, Operand] = {}
    atoms: dict[str, str] = {}
    maps: dict[str, dict[str, Any]] = {}
    layouts: dict[str, str] = {}
    for w in ("A", "B"):
        real = ex.operands[w]
        op = _view_operand(cfg, ex, w, interleave)
        same_thread_map(w, op)
        assert op.map is not None
        mode = 0 if w == "A" else 1
        rows, cols = op.tile
        if int(op.map["contiguous_mode"]) != mode or tuple(op.map["shape"]) != ((rows, cols) if mode == 0
                                                                                  else (cols, rows)):
            raise NotAnalysed("thread map shape is not the tile",
                              f"{w}: the thread map's shape {tuple(op.map['shape'])} (contiguous mode "
                              f"{op.map['contiguous_mode']}) is not the view's tile {op.tile}")
        # the view's accesses, read as GEMM elements, are the shared iterator's (and a
        # convolution's global iterator's, which walks the transposed map over the GEMM tile)
        src = view_to_gemm(w, _elements(op.gmap), interleave)
        others = [("shared", real.smap)] + ([("global", real.gmap)] if cfg.kind != "gemm" else [])
        for what, other in others:
            dst = _gemm_logical(other, real.smem_layout)
            if src.shape != dst.shape or not np.array_equal(src, dst):
                raise NotAnalysed("shared iterator pairs accesses differently",
                                  f"{w}: the {what} iterator's thread map visits the tile in another order than "
                                  "the view's thread map (the copy pairs their accesses by index)")
        atoms[w], maps[w] = check_access(w, op)
        fitted = fit_layout(view_table(w, real.table, interleave))
        if fitted.layout is None:
            raise NotAnalysed("shared layout without an exact spec form",
                              f"{w}: the shared layout {real.smem_layout.removeprefix('cutlass::layout::')} "
                              f"read through the interleaved view ({ex.stages} stages) has no exact spec form: "
                              f"{fitted.reason}")
        layouts[w] = fitted.layout
        ops[w] = op
    return Copies(atoms, maps, layouts), ops


def _expected(layout: str, env: dict[str, int], which: str, op: Operand, origin: int, tile_s: int, tiles: int,
              extent: tuple[int, int]) -> np.ndarray:
    """The offsets (-1: off) of every access of every thread over ``tiles`` k-tiles of the CTA
    at ``origin`` (the view's contiguous index), in the oracle's order, from the spec's global
    layout over the view (``extent``: its (contiguous, strided) extent)."""
    from threadmap.spec.parsed import bind_layout

    lay = bind_layout(layout, env)
    starts = op.gmap.starts()                                   # (T, J, 2) in the view's tile
    sub = np.arange(op.accesses_per_vector) * op.access
    c = origin + starts[..., 0][:, None, :, None] + sub          # (T, 1, J, V)
    s = starts[..., 1][:, None, :, None] + np.arange(tiles)[None, :, None, None] * tile_s
    c, s = np.broadcast_arrays(c, s)
    ok = (c + op.access - 1 < extent[0]) & (s < extent[1])     # a vector predicate: its last element
    cc, ss = np.where(ok, c, 0).reshape(-1), np.where(ok, s, 0).reshape(-1)
    off = np.asarray(lay((cc, ss) if which == "A" else (ss, cc)), dtype=np.int64)
    return np.where(ok.reshape(-1), off, -1)


def _check_oracle(ex: Extracted, which: str, i: str, want: np.ndarray, layout: str, sample: Any) -> None:
    """The oracle's checksums ``oracle.<which><i>`` are those of ``want``: a convolution's
    iterator (CTA ``i``: the first or last row / column) or a GEMM's layout object (``i``
    empty)."""
    got = ex.oracle.get(f"oracle.{which}{i}", "")
    what = "layout object" if not i else "iterator"
    if not got or got.startswith("?"):
        raise NotAnalysed("iterator addresses not checked",
                          f"{which}: the {what} {got[1:160] or '(none printed)'} cannot be run host-side")
    exp = " ".join(str(x) for x in digest(want))
    if got != exp:
        raise NotAnalysed("iterator addresses differ from the spec's layout",
                          f"{which}: on the sample problem {sample} the {what}'s offsets (checksums {got}) are "
                          f"not the layout {layout}'s ({exp})" + (f", CTA {i}" if i else ""))


def gemm_layouts(interleave: int) -> dict[str, str]:
    """A's and B's global layouts over their views (see the module docstring)."""
    i = interleave
    return {"A": f"(({i},M),K/{i}):((1,{i}),{i}*M)", "B": f"(K/{i},({i},N)):({i}*N,(1,{i}))"}


def interleaved_spec_text(cfg: Configuration, ex: Extracted, headers: str) -> Written:
    """The spec of an interleaved GEMM or conv2d Fprop configuration (see the module
    docstring), or NotAnalysed with the first premise that fails."""
    interleave = interleave_of(cfg)
    assert interleave is not None
    fam: Family | None = None
    if cfg.kind != "gemm":
        try:
            fam = interleaved_family(cfg)
        except NoFamily as e:
            raise NotAnalysed("convolution without a spec family", str(e)) from None
    tm, tn, tk = ex.shape
    f = cfg.fields
    if tk % interleave or (cfg.kind == "gemm" and (f["layout_a"], f["layout_b"]) != (f"n{interleave}",
                                                                                      f"t{interleave}")):
        raise NotAnalysed("global layout not the interleaved one",
                          f"layouts {f['layout_a']}/{f['layout_b']} with kK = {tk}: not a kernel of "
                          "DefaultMmaCore's interleaved specialisation")
    copies, ops = interleaved_copies(cfg, ex, interleave)
    ts = tk // interleave
    if fam is None:
        layouts = gemm_layouts(interleave)
        env = _gemm_sample(cfg)
        for w in ("A", "B"):
            _check_oracle(ex, w, "", _gemm_layout_offsets(w, layouts[w], env, interleave), layouts[w], env)
    else:
        layouts = {"A": fam.a, "B": fam.b}
        env = dict(fam.sample)
        ext = fam.extents
        views = {"A": (ext["M"] * interleave, ext["K"] // interleave),
                 "B": (ext["N"] * interleave, ext["K"] // interleave)}
        lasts = {"A": (ext["M"] - 1) // tm * tm * interleave, "B": (ext["N"] - 1) // tn * tn * interleave}
        for w in ("A", "B"):
            for i, origin in enumerate((0, lasts[w])):
                want = _expected(layouts[w], env, w, ops[w], origin, ts, fam.tiles, views[w])
                _check_oracle(ex, w, str(i), want, layouts[w], fam.sample)
    kernels = len(cfg.kernels)
    share = f"{kernels} kernel{'s' if kernels > 1 else ''} share this configuration"
    il = f"interleave {interleave}: spec coordinates are the global iterators' pitch-linear views"
    if fam is None:
        sizes: dict[str, Any] = {"M": {"min": 1, "max": 1 << 20, "samples": [tm, 2 * tm - 1]},
                                 "N": {"min": 1, "max": 65535 * tn, "samples": [tn, 2 * tn - 1]},
                                 "K": {"min": tk, "max": 65535 * tk, "multiple_of": tk, "samples": [2 * tk]}}
        assume, m, n, k = [f"K % {tk} == 0"], "M", "N", "K"
        what = (f"CUTLASS {headers} {f['family']} GEMM, A ColumnMajorInterleaved<{interleave}>, B "
                f"RowMajorInterleaved<{interleave}> ({share}): the mainloop (MmaMultistage) with tile "
                f"{tm}x{tn}x{tk}, {ex.stages} stages; {il} (A (M*{interleave}, K/{interleave}), B (K/{interleave}, "
                f"N*{interleave}))")
    else:
        sizes, assume, m, n, k = fam.sizes, fam.assume, fam.m, fam.n, fam.k
        what = (f"CUTLASS {headers} {cfg.kind} Fprop ({f['iterator_algorithm']}), TensorNCxHWx<{interleave}> "
                f"activations, TensorCxRSKx<{interleave}> filters, as an implicit GEMM ({share}): the mainloop "
                f"(ImplicitGemmMultistage) with tile {tm}x{tn}x{tk}, {ex.stages} stages, GEMM (M, N, K) = "
                f"({m}, {n}, {k}); the problems: {fam.what}; {il} (A (M*{interleave}, K/{interleave}), "
                f"B (K/{interleave}, N*{interleave}))")
    a, b = ex.operands["A"], ex.operands["B"]
    doc: dict[str, Any] = {
        "spec": 1,
        "name": f"{cfg.kernels[0]} mainloop: cp.async of A and B into shared memory",
        "description": f"{what}; shared layouts {a.smem_layout} and {b.smem_layout}",
        "element": a.element,
        "threads": a.threads,
        "sizes": sizes,
        "assume": assume,
        "grid": [f"ceil_div({m}, {tm})", f"ceil_div({n}, {tn})", f"{k} / {tk}" if fam is None
                 else f"ceil_div({k}, {tk})"],
        "tensors": {
            "A": {"memory": "global", "layout": layouts["A"]},
            "B": {"memory": "global", "layout": layouts["B"]},
            "sA": {"memory": "shared", "layout": copies.layouts["A"]},
            "sB": {"memory": "shared", "layout": copies.layouts["B"]},
        },
        "stages": ktile_stages(copies.maps, copies.atoms, ([tm * interleave, ts], ["bx", "bz"]),
                               ([ts, tn * interleave], ["bz", "by"])),
        "expect": {"coverage": "replicated"},
    }
    head = (f"# Written by threadmap sweep from CUTLASS {headers}'s templates: the generator's kernel text for\n"
            f"# {cfg.kernels[0]} instantiated host-side; thread maps, cp.async widths, shared layouts\n"
            "# (offsets of every cell, fitted exactly over the interleaved view) printed by the C++ objects\n"
            + ("# themselves; the global layouts checked against the kernel's iterators run host-side.\n" if fam
               else "# themselves; the global layouts checked against the iterators' layout objects.\n"))
    return written(doc, head, copies.layouts, element_b=b.element)
