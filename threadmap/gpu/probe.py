"""The coordinate probe: the real CUTLASS/CuTe templates compute every access of a spec.

For one kernel model (a spec at one size environment) :func:`probe_program` writes C++ that,
for every copy stage and every (block, thread, value), computes what the simulator computes,
but with the headers' own templates:

* the tile-local coordinate: ``local_partition(make_identity_tensor(tile), thr, tid)``,
  ``make_tiled_copy(Copy_Atom<Op, T>{}, thr, val).get_slice(tid).partition_S/D(identity)``,
  ``make_tiled_mma(MMA_Atom<Op>{}, atom_layout).get_slice(tid).partition_A/B/C(identity)``, or a
  CUTLASS thread map's ``initial_offset(tid)`` plus ``(c * Delta::kContiguous + e,
  s * Delta::kStrided)`` in the predicated tile iterator's (strided, contiguous, element) order;
* the global coordinate: the tile origin ``at(bx, by, bz) * tile`` (the spec's expressions,
  emitted as C++) plus the local one;
* the element offset: the tensor's CuTe layout (a composed swizzle layout for shared memory)
  evaluated on that coordinate, plus the view's offset;
* the in-bounds flag of each element, ``elem_less(coord, shape)``, and the copy's predicate:
  ``bounds`` takes a vector's first element, ``vector`` all of its elements, and the two
  memory sides of a copy are joined in (thread, value) order, as the simulator defines it.

One *record* of ``W`` int64 fields per (block, thread, value): for each memory side its ``R``
coordinates, its element offset and its in-bounds flag, then the predicate.  The same source
is a CUDA kernel (``extern "C" __global__``, one CTA per probed block, launched through CuPy)
and, compiled with ``-DTHREADMAP_HOST_MAIN`` as plain C++, a host program that runs the very
same functions on the CPU: CI runs the probe without a GPU and diffs it with the simulator.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from threadmap.gpu.cxx import EXPR_HELPERS, cxx_expr, cxx_obj, cxx_tensor_layout, cxx_tiler
from threadmap.gpu.ptx import HELPERS
from threadmap.layout import Underscore
from threadmap.model import CopyModel, KernelModel, SideModel
from threadmap.simulate.engine import Simulator

#: fields of a record per memory side beyond its coordinates: offset, in-bounds
SIDE_EXTRA = 2

PRELUDE = """\
#include <cute/tensor.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cutlass/transform/pitch_linear_thread_map.h>
"""


class NotProbed(Exception):
    """A side whose partition the probe cannot instantiate (said in the report, never silent)."""


@dataclass(frozen=True)
class SideFields:
    which: str          # "src" | "dst"
    rank: int
    start: int          # first field of this side in a record

    @property
    def offset_field(self) -> int:
        return self.start + self.rank

    @property
    def inb_field(self) -> int:
        return self.start + self.rank + 1


@dataclass(frozen=True)
class StageProbe:
    """One copy stage's probe function: ``fn(block, tid, rec)`` fills ``values`` records."""

    stage: int
    fn: str             # the host-device function (and, with ``_kernel``, the CUDA kernel)
    threads: int
    values: int
    width: int          # int64 fields per record
    sides: tuple[SideFields, ...]

    @property
    def kernel(self) -> str:
        return self.fn + "_kernel"

    def record_bytes(self) -> int:
        return self.width * 8

    def rows(self, nblocks: int) -> int:
        return nblocks * self.threads * self.values


@dataclass(frozen=True)
class ProbeProgram:
    """The probe of one model: its C++ (no prelude) and the layout of its records."""

    uid: str
    source: str
    stages: tuple[StageProbe, ...]
    skipped: tuple[tuple[int, str], ...]  # (stage, reason) of copy stages not probed


def _static_shape(tile: Sequence[int]) -> str:
    return "make_shape(" + ",".join(f"Int<{int(t)}>{{}}" for t in tile) + ")"


def _partition_lines(side: SideModel, tile_var: str) -> tuple[list[str], str | None]:
    """C++ statements that define ``part_<which>`` (an identity-tensor partition whose
    ``(v)`` is the tile-local coordinate of value ``v``), or the thread-map formula."""
    maker = side.partition.maker
    w = side.which
    if maker is None:
        raise NotProbed("the partition does not say how it was made")
    kind = maker[0]
    ident = f"make_identity_tensor({tile_var})"
    if kind == "threads":
        return [f"auto part_{w} = local_partition({ident}, {cxx_obj(maker[1])}, tid);"], None
    if kind == "tiled_copy":
        _, atom, thr, val, which = maker
        method = "partition_S" if which == "src" else "partition_D"
        return [f"auto tc_{w} = make_tiled_copy({atom}{{}}, {cxx_obj(thr)}, {cxx_obj(val)});",
                f"auto part_{w} = tc_{w}.get_slice(tid).{method}({ident});"], None
    if kind == "tiled_copy_tv":
        _, atom, tv, tiler, which = maker
        method = "partition_S" if which == "src" else "partition_D"
        return [f"auto tc_{w} = make_tiled_copy_impl({atom}{{}}, {cxx_obj(tv)}, {cxx_obj(tiler)});",
                f"auto part_{w} = tc_{w}.get_slice(tid).{method}({ident});"], None
    if kind == "mma":
        _, op, atom_layout, operand, perm = maker
        perm_arg = "" if perm is None or all(isinstance(p, Underscore) for p in perm) else f", {cxx_tiler(perm)}"
        return [f"auto mma_{w} = make_tiled_mma(MMA_Atom<{op}>{{}}, {cxx_obj(atom_layout)}{perm_arg});",
                f"auto part_{w} = mma_{w}.get_slice(tid).partition_{operand}({ident});"], None
    if kind == "thread_map":
        tm, cmode = maker[1], maker[2]
        if getattr(tm, "has_access_shape_axis", False):
            raise NotProbed(f"{tm.cxx_type}: thread-tile maps are walked by their own iterator")
        return [f"using TM_{w} = {tm.cxx_type};",
                f"auto init_{w} = TM_{w}::initial_offset(tid);"], str(cmode)
    raise NotProbed(f"unknown partition kind {kind!r}")


def _side_lines(model: KernelModel, side: SideModel, f: SideFields, W: int) -> list[str]:
    """Fill the side's fields of every record of thread ``tid``."""
    assert side.tensor is not None
    t = side.tensor
    w = side.which
    R = len(side.tile)
    out = [f"// {w}: {side.name} ({side.memory}), tile {tuple(side.tile)}",
           f"auto tile_{w} = {_static_shape(side.tile)};"]
    part, cmode = _partition_lines(side, f"tile_{w}")
    out += part
    env: dict[str, Any] = {k: str(v) + "LL" for k, v in model.env.items()}
    env.update(bx="bx", by="by", bz="bz")
    for k in range(R):
        origin = "0LL" if side.at is None else f"({cxx_expr(side.at[k], env)}) * {int(side.tile[k])}LL"
        out.append(f"const long long o{k}_{w} = {origin};")
    out.append(f"auto lay_{w} = {cxx_tensor_layout(t.layout)};")
    ext = [int(x) for x in t.shape[:R]]
    V = side.partition.values
    # unrolled on the device: every record index is then a constant, so the records of a
    # behaviour kernel live in registers, not local memory (whose traffic would share L1)
    out.append(f"TM_UNROLL for (int v = 0; v < {V}; ++v) {{")
    out.append(f"  long long* r = rec + (long long)v * {W};")
    if cmode is None:
        out.append(f"  auto c = part_{w}(v);")
        for k in range(R):
            out.append(f"  const long long g{k} = o{k}_{w} + (long long)get<{k}>(c);")
    else:
        # CUTLASS predicated tile iterators: for s, for c, for e (the fragment's order)
        tm = side.partition.maker[1]  # type: ignore[index]
        epa, itc = int(tm.elements_per_access), int(tm.iterations.contiguous)
        out += [f"  const int e = v % {epa}, ci = (v / {epa}) % {itc}, si = v / ({epa} * {itc});",
                f"  const long long cc = (long long)init_{w}.contiguous() + ci * TM_{w}::Delta::kContiguous + e;",
                f"  const long long ss = (long long)init_{w}.strided() + si * TM_{w}::Delta::kStrided;"]
        local = ("ss", "cc") if cmode == "1" else ("cc", "ss")
        for k in range(R):
            out.append(f"  const long long g{k} = o{k}_{w} + {local[k]};")
    coord = "g0" if R == 1 else "make_coord(" + ", ".join(f"g{k}" for k in range(R)) + ")"
    for k in range(R):
        out.append(f"  r[{f.start + k}] = g{k};")
    out.append(f"  r[{f.offset_field}] = (long long)lay_{w}({coord}) + {int(t.offset)}LL;")
    inb = " && ".join(f"(unsigned long long)g{k} < {e}ULL" for k, e in enumerate(ext)) or "true"
    out.append(f"  r[{f.inb_field}] = ({inb}) ? 1 : 0;")
    out.append("}")
    return out


def _stage_function(model: KernelModel, cp: CopyModel, ns: str, fn: str) -> tuple[StageProbe, str, str]:
    """The probe of one copy stage: its description, its host-device function (inside the
    namespace ``ns``) and its CUDA kernel (outside, ``extern "C"``).  Raises NotProbed."""
    sides = [s for s in cp.sides() if s.tensor is not None]
    fields: list[SideFields] = []
    at = 0
    for s in sides:
        fields.append(SideFields(s.which, len(s.tile), at))
        at += len(s.tile) + SIDE_EXTRA
    W = at + 1
    T = model.threads
    V = sides[0].partition.values
    body: list[str] = []
    for s, f in zip(sides, fields):
        body += _side_lines(model, s, f, W)
    # the predicate: per side a vector's first element (bounds) or all of it (vector), joined
    pred = [f"TM_UNROLL for (int v = 0; v < {V}; ++v) {{", "  long long ok = 1;"]
    if cp.predicate != "none":
        for s, f in zip(sides, fields):
            vec = s.vec
            if cp.predicate == "bounds" or vec == 1:
                pred.append(f"  ok &= rec[(long long)(v - v % {vec}) * {W} + {f.inb_field}];")
            else:
                pred.append(f"  for (int e = v - v % {vec}; e < v - v % {vec} + {vec}; ++e) "
                            f"ok &= rec[(long long)e * {W} + {f.inb_field}];")
    pred += [f"  rec[(long long)v * {W} + {W - 1}] = ok;", "}"]
    gx, gy, _ = model.grid
    lines = [f"// stage {cp.index}: {cp.name or 'copy'}",
             f"CUTE_HOST_DEVICE void {fn}(long long b, int tid, long long* rec) {{",
             f"  const long long bx = b % {gx}LL, by = (b / {gx}LL) % {gy}LL, bz = b / ({gx}LL * {gy}LL);",
             "  (void)bx; (void)by; (void)bz;"]
    lines += ["  " + x for x in body + pred]
    lines.append("}")
    kernel = [f'extern "C" __global__ void {fn}_kernel(const long long* blocks, long long nb, long long* out) {{',
              "  for (long long i = blockIdx.x; i < nb; i += gridDim.x)",
              f"    for (int t = threadIdx.x; t < {T}; t += blockDim.x)",
              f"      {ns}::{fn}(blocks[i], t, out + (i * {T} + t) * {V * W}LL);",
              "}"]
    return StageProbe(cp.index, fn, T, V, W, tuple(fields)), "\n".join(lines), "\n".join(kernel)


def probe_program(model: KernelModel) -> ProbeProgram:
    """The probe source of every copy stage of ``model`` (names carry a hash of the spec and
    its sizes, so the programs of many models share one translation unit)."""
    key = f"{model.loaded.path}|{model.name}|{sorted(model.env.items())}"
    uid = hashlib.sha256(key.encode()).hexdigest()[:10]
    ns = f"tm_{uid}"
    stages: list[StageProbe] = []
    skipped: list[tuple[int, str]] = []
    funcs: list[str] = []
    kernels: list[str] = []
    for cp in model.copies():
        try:
            probe, fsrc, ksrc = _stage_function(model, cp, ns, f"{ns}_s{cp.index}")
        except NotProbed as ex:
            skipped.append((cp.index, str(ex)))
            continue
        stages.append(probe)
        funcs.append(fsrc)
        kernels.append(ksrc)
    source = "\n".join([f"// threadmap probe: {model.name} {dict(model.env)}", f"namespace {ns} {{",
                         "using namespace cute;", *funcs, f"}}  // namespace {ns}",
                         "#ifdef __CUDACC__", *kernels, "#endif", ""])
    return ProbeProgram(uid, source, tuple(stages), tuple(skipped))


# ----------------------------------------------------------------------------- programs


def translation_unit(programs: Sequence[ProbeProgram], *, host_main: bool = False,
                     device_only: Sequence[str] = ()) -> str:
    """One source for many probes: the headers, the expression helpers, every program,
    ``device_only`` sources (the behaviour kernels; compiled only as CUDA) and, for the host
    build, a ``main`` that runs named stage functions over block lists."""
    seen: set[str] = set()
    parts = [PRELUDE, "using namespace cute;", EXPR_HELPERS]
    for p in programs:
        if p.uid not in seen:
            seen.add(p.uid)
            parts.append(p.source)
    if device_only:
        parts += ["#ifdef __CUDACC__", HELPERS, *device_only, "#endif"]
    if host_main:
        entries = ",\n".join(f'  {{"{s.fn}", &tm_{p.uid}::{s.fn}, {s.threads}, {s.values}, {s.width}}}'
                             for p in programs for s in p.stages)
        parts.append(HOST_MAIN.replace("@ENTRIES@", entries or '  {"", nullptr, 0, 0, 0}'))
    return "\n".join(parts)


HOST_MAIN = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
struct TmEntry { const char* name; void (*fn)(long long, int, long long*); int T, V, W; };
static const TmEntry tm_entries[] = {
@ENTRIES@
};
// usage: prog NAME BLOCKS_FILE OUT_FILE [NAME BLOCKS_FILE OUT_FILE ...]; files are raw int64
int main(int argc, char** argv) {
  for (int a = 1; a + 2 < argc + 1; a += 3) {
    const TmEntry* e = nullptr;
    for (const TmEntry& x : tm_entries) if (x.fn && !std::strcmp(x.name, argv[a])) e = &x;
    if (!e) { std::fprintf(stderr, "unknown probe %s\n", argv[a]); return 2; }
    std::FILE* f = std::fopen(argv[a + 1], "rb");
    if (!f) { std::fprintf(stderr, "cannot read %s\n", argv[a + 1]); return 2; }
    std::vector<long long> blocks;
    long long b;
    while (std::fread(&b, sizeof b, 1, f) == 1) blocks.push_back(b);
    std::fclose(f);
    const long long per = (long long)e->T * e->V * e->W;
    std::vector<long long> out(blocks.size() * per, -1);
    for (size_t i = 0; i < blocks.size(); ++i)
      for (int t = 0; t < e->T; ++t) e->fn(blocks[i], t, out.data() + i * per + (long long)t * e->V * e->W);
    std::FILE* o = std::fopen(argv[a + 2], "wb");
    if (!o || std::fwrite(out.data(), sizeof(long long), out.size(), o) != out.size()) {
      std::fprintf(stderr, "cannot write %s\n", argv[a + 2]); return 2;
    }
    std::fclose(o);
  }
  return 0;
}
"""


def host_source(jobs: Sequence[tuple[ProbeProgram, StageProbe, np.ndarray]], device_only: Sequence[str] = ()) -> str:
    """The one translation unit :func:`run_host` compiles for ``jobs`` (its cached build is
    ``build_host(host_source(...), defines=("THREADMAP_HOST_MAIN",), archs=...)``)."""
    programs = list({p.uid: p for p, _, _ in jobs}.values())
    return translation_unit(programs, host_main=True, device_only=device_only)


def run_host(jobs: Sequence[tuple[ProbeProgram, StageProbe, np.ndarray]],
             archs: Sequence[str] = (), device_only: Sequence[str] = ()) -> list[np.ndarray]:
    """Run stage probes on the CPU (one host program for all of them, compiled once and
    cached): per job the ``(nb, T, V, W)`` records of its blocks.  With ``archs`` the same
    compile also builds the kernels for those GPU architectures (see ``build_host``), with
    ``device_only`` sources (the behaviour kernels) among them."""
    import tempfile
    from pathlib import Path

    from threadmap.gpu.toolchain import ToolchainError, build_host, run_cached
    source = host_source(jobs, device_only)
    outs: list[np.ndarray] = []
    with tempfile.TemporaryDirectory(prefix="threadmap_probe_") as tmp:
        args: list[str] = []
        for i, (_, s, blocks) in enumerate(jobs):
            bf, of = Path(tmp) / f"b{i}", Path(tmp) / f"o{i}"
            np.asarray(blocks, dtype=np.int64).tofile(bf)
            args += [s.fn, str(bf), str(of)]
        proc = run_cached(lambda: build_host(source, defines=("THREADMAP_HOST_MAIN",), archs=archs), args)
        if proc.returncode != 0:
            raise ToolchainError(f"the host probe exited {proc.returncode}: {proc.stderr[-2000:]}")
        for i, (_, s, blocks) in enumerate(jobs):
            raw = np.fromfile(Path(tmp) / f"o{i}", dtype=np.int64)
            outs.append(raw.reshape(len(blocks), s.threads, s.values, s.width))
    return outs


def expected(model: KernelModel, probe: StageProbe, blocks: np.ndarray,
             sim: Simulator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The simulator's records for the probe's blocks, ``(nb, T, V, W)``, and which of them
    are real (a thread's padding rows are not)."""
    sim = sim or Simulator(model)
    cp = model.stages[probe.stage]
    assert isinstance(cp, CopyModel)
    src, dst = sim.stage_tables(cp, np.asarray(blocks, dtype=np.int64))
    nb, T, V, W = len(blocks), probe.threads, probe.values, probe.width
    out = np.zeros((nb * T * V, W), dtype=np.int64)
    real = np.zeros(nb * T * V, dtype=bool)
    pred_done = False
    for f in probe.sides:
        t = src if f.which == "src" else dst
        keep = np.ones(len(t), dtype=bool) if t.valid is None else t.valid
        slot = t.tv[keep]
        for k in range(f.rank):
            out[slot, f.start + k] = t.coords[k][keep]
        out[slot, f.offset_field] = t.offset[keep]
        inb = np.ones(int(keep.sum()), dtype=bool)
        for k, ext in enumerate(t.shape[:f.rank]):
            inb &= (t.coords[k][keep] >= 0) & (t.coords[k][keep] < ext)
        out[slot, f.inb_field] = inb
        real[slot] = True
        if not pred_done:
            out[slot, W - 1] = t.pred[keep]
            pred_done = True
    return out.reshape(nb, T, V, W), real.reshape(nb, T, V)
