"""The behaviour kernel: a spec's data movement on real data, and its host-side check.

For one kernel model the generated kernel follows the stages in order: a copy stage moves
each thread's fragment from its src side to its dst side, one vector access per group of
``vec`` values as the spec declares it (``uint4`` for 128 bits, ``uint2`` for 64, ...), under
the stage's predicate; a barrier is ``__syncthreads()``; shared buffers live in dynamic shared
memory (aliases share bytes); register fragments persist across stages.  Which element each
(thread, value) touches comes from the probe functions (:mod:`threadmap.gpu.probe`): the
real CUTLASS/CuTe templates.  A vector access is issued as one wide load/store when its
elements are contiguous and its address aligned to its width (what the hardware requires);
otherwise element by element (the verifier's ``vectorize`` check names those accesses).

Three kernels per model, one body:

* ``<uid>_count``: the whole kernel, counting with ``atomicAdd`` every write to a global
  tensor that some stage writes and every read of one that no stage writes (coverage), and,
  per shared side, every access it performs at a coordinate outside its tensor's shape;
* ``<uid>_run``: the whole kernel, plain (timed with CUDA events);
* ``<uid>_stage<k>``: only copy stage ``k`` (for Nsight Compute and the SASS: each stage's
  counters and instructions alone), and its variants ``_src`` / ``_dst`` (one side's
  instructions) and ``_src_solo`` / ``_dst_solo`` (the same, launched one CTA per SM).

A stage whose copy operation is ``SM80_CP_ASYNC_*`` (global to shared) is issued as
``cp.async`` (``LDGSTS``), then ``cp.async.commit_group`` and ``cp.async.wait_group 0``: the
one instruction is both of its sides, so every variant of its stage kernel issues it whole,
and the counters read its global side and its shared side from the ``ldgsts`` metrics of the
same instructions (:mod:`threadmap.gpu.profile`).

The host fills every input tensor with random bits, runs the counting kernel, and checks the
declared transform (``copy``: ``y(c) == x(c)``, ``transpose``: ``y(c) == x(reversed c)``) and
that every element of the tensor's domain was touched exactly once (at least once for a spec
that declares replication), and nothing outside it.

Each shared buffer is its declared size (the bytes its tensors' own elements occupy) followed
by a guard region reaching as far as any access does, so an access outside its tensor never
lands in another buffer; such accesses are counted per side (``out_of_tensor``): a kernel
that reads past a shared tensor may still deliver the right data (the bytes beyond hold what
an alias stored there), and the verifier's coverage failure must not read as its error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import threadmap.layout as L
from threadmap.gpu.probe import NotProbed, ProbeProgram, StageProbe
from threadmap.gpu.ptx import CP_ASYNC_BYTES, cp_async_op
from threadmap.hardware import MAX_SHARED_BYTES
from threadmap.model import CopyModel, KernelModel, SideModel
from threadmap.model.kernel import offset_bounds
from threadmap.simulate.engine import Simulator

ELEM_TYPE = {8: "unsigned char", 16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}
#: vector types by bytes
VEC_TYPE = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "uint2", 16: "uint4"}
#: global memory one behaviour run may allocate (bytes)
MAX_GLOBAL_BYTES = 8 << 30
#: the behaviour kernels store their folded loads only when passed this key (never)
SINK_KEY = 0x5EED5EED




@dataclass(frozen=True)
class Buffer:
    """A global tensor or a shared buffer root of the behaviour kernel."""

    name: str
    memory: str
    elem_bytes: int
    elements: int          # allocation, in elements of the tensor (global) / bytes (shared root)
    shared_offset: int = 0  # byte offset inside dynamic shared memory
    counted: str | None = None  # "write" | "read" (global tensors)
    guard: int = 0         # bytes of the allocation past the declared tensors (shared roots)


@dataclass(frozen=True)
class BehaviourProgram:
    uid: str
    source: str
    threads: int
    grid: tuple[int, int, int]
    shared_bytes: int
    buffers: tuple[Buffer, ...] = field(default_factory=tuple)
    stages: tuple[int, ...] = ()
    #: (stage, side) -> bits of one access the source issues on that memory side
    access_bits: dict[tuple[int, str], int] = field(default_factory=dict)
    #: the shared sides (stage, side, tensor), in the order of the kernel's out-of-tensor counters
    shared_sides: tuple[tuple[int, str, str], ...] = ()
    #: the copy stages issued as ``cp.async`` (``LDGSTS``: both sides one instruction)
    cp_async_stages: tuple[int, ...] = ()

    @property
    def count_kernel(self) -> str:
        return f"tm_{self.uid}_count"

    @property
    def run_kernel(self) -> str:
        return f"tm_{self.uid}_run"

    def stage_kernel(self, stage: int, side: str | None = None, solo: bool = False) -> str:
        """The kernel that runs only copy stage ``stage`` (for per-stage counters), or only one
        side of it (its loads, or its stores); ``solo``: the side kernel to launch with one CTA
        per SM (no other CTA's accesses in flight on the SM)."""
        return f"tm_{self.uid}_stage{stage}" + (f"_{side}" if side else "") + ("_solo" if solo else "")

    def globals(self) -> list[Buffer]:
        return [b for b in self.buffers if b.memory == "global"]


def _extent(model: KernelModel, t: Any) -> int:
    """Elements a global tensor's allocation needs: its layout's cosize, and beyond it every
    offset an access can reach over the grid (interval bounds; an unpredicated access past
    the edge must land in the allocation, where the counts see it, not in another buffer)."""
    n = int(L.cosize(t.layout)) + int(t.offset)
    for cp in model.copies():
        for s in cp.sides():
            if s.tensor is not None and s.tensor.name == t.name and (s.stage, s.which) in model.coord_bounds:
                off = offset_bounds(t.layout, model.coord_bounds[(s.stage, s.which)])
                if off.lo + t.offset < 0:
                    raise NotProbed(f"tensor {t.name}: negative element offsets")
                n = max(n, int(off.hi) + int(t.offset) + 1)
    return n


def _shared_extent(model: KernelModel) -> dict[str, int]:
    """Bytes each shared buffer root's accesses reach: the largest byte address any access of
    it reaches (layouts evaluated by the simulator over every access of one block), plus one
    element."""
    sim = Simulator(model)
    need: dict[str, int] = {}
    for cp in model.copies():
        for t in sim.stage_tables(cp, np.zeros(1, dtype=np.int64)):
            if t.memory == "shared" and len(t):
                need[t.buffer] = max(need.get(t.buffer, 0), int(t.addr.max()) + t.elem_bytes)
    return need


def shared_declared(model: KernelModel) -> dict[str, int]:
    """Bytes each shared buffer root holds as declared: the end of the last byte of any element
    of a tensor viewing it (every coordinate of its shape; view offsets included)."""
    out: dict[str, int] = {}
    for t in model.tensors.values():
        if t.memory == "shared":
            end = (int(domain_offsets(model, t.name).max(initial=-1)) + 1) * t.elem_bytes
            out[t.buffer] = max(out.get(t.buffer, 0), end)
    return out


def behaviour_program(model: KernelModel, probe: ProbeProgram,
                      vector_legal: dict[tuple[int, str], bool] | None = None) -> BehaviourProgram:
    """The behaviour kernels of ``model`` (they call ``probe``'s functions).  A side issues
    its declared vector width where ``vector_legal`` (the verifier's ``vectorize`` verdict
    for this size environment, per (stage, side)) says every access of it is legal, and is
    guarded even then; elsewhere it moves one element per access.  Raises NotProbed
    for what it cannot run: a partition the probe skipped, element widths other than 8, 16,
    32 or 64 bits, more than 1024 threads, more shared memory than a CTA gets."""
    if probe.skipped:
        raise NotProbed(f"stage {probe.skipped[0][0]} is not probed: {probe.skipped[0][1]}")
    if model.threads > 1024:
        raise NotProbed(f"{model.threads} threads: a CTA has at most 1024")
    gx, gy, gz = model.grid
    if gy > 65535 or gz > 65535 or gx > 2**31 - 1:
        raise NotProbed(f"grid {model.grid} exceeds CUDA's launch limits")
    for t in model.tensors.values():
        if t.elem_bits not in ELEM_TYPE:
            raise NotProbed(f"tensor {t.name}: {t.elem_bits}-bit elements")
    written = {cp.dst.tensor.name for cp in model.copies() if cp.dst.tensor is not None}
    buffers: list[Buffer] = []
    glob = [t for t in model.tensors.values() if t.memory == "global"]
    total = 0
    for t in glob:
        n = _extent(model, t)
        total += n * t.elem_bytes
        buffers.append(Buffer(t.name, "global", t.elem_bytes, n, counted="write" if t.name in written else "read"))
    if total > MAX_GLOBAL_BYTES:
        raise NotProbed(f"the global tensors need {total} bytes; a behaviour run allocates at most {MAX_GLOBAL_BYTES}")
    reach, declared = _shared_extent(model), shared_declared(model)
    at = 0
    offsets: dict[str, int] = {}
    for root in sorted(reach):
        n = max(declared.get(root, 0), reach.get(root, 0))
        offsets[root] = at
        buffers.append(Buffer(root, "shared", 1, n, shared_offset=at, guard=n - declared.get(root, 0)))
        at += -(-n // 16) * 16
    if at > MAX_SHARED_BYTES:
        raise NotProbed(f"the shared buffers need {at} bytes; a CTA gets at most {MAX_SHARED_BYTES}")
    stage_probe = {s.stage: s for s in probe.stages}
    ns = f"tm_{probe.uid}"
    shared_sides = tuple((s.stage, s.which, s.tensor.name) for cp in model.copies() for s in cp.sides()
                         if s.tensor is not None and s.tensor.memory == "shared")
    body: list[str] = []
    frags: dict[str, tuple[int, str]] = {}
    bits: dict[tuple[int, str], int] = {}
    cp_async: list[int] = []
    for i, st in enumerate(model.stages):
        if not isinstance(st, CopyModel):
            body.append("  if constexpr (ONLY < 0) __syncthreads();")
            continue
        for s in st.sides():
            if s.tensor is None:
                frags.setdefault(s.name, (s.partition.values, ELEM_TYPE[s.elem_bits]))
        legal = {w: (vector_legal or {}).get((i, w), True) for w in ("src", "dst")}
        if cp_async_issued(st, legal):
            cp_async.append(i)
            body += _cp_async_lines(st, stage_probe[i], ns, offsets, written, shared_sides)
        else:
            body += _copy_lines(st, stage_probe[i], ns, offsets, written, legal, shared_sides)
        for s in st.sides():
            if s.tensor is not None:
                bits[(i, s.which)] = s.vec * s.elem_bits if legal[s.which] and _wide(s) else s.elem_bits
    # the sink: every loaded value is folded into one word, stored only when tm_key holds a
    # value the host never passes; ptxas must then keep loads whose values are otherwise dead
    # (a stage run alone for its counters), at no memory traffic
    params = ", ".join([f"unsigned char* g_{b.name}" for b in buffers if b.memory == "global"]
                       + [f"unsigned int* n_{b.name}" for b in buffers if b.memory == "global"]
                       + ["unsigned int* tm_oob", "unsigned int* tm_sink", "int tm_key"])
    args = ", ".join([f"g_{b.name}" for b in buffers if b.memory == "global"]
                     + [f"n_{b.name}" for b in buffers if b.memory == "global"] + ["tm_oob", "tm_sink", "tm_key"])
    decl = [f"  {ty} rf_{name}[{v}];" for name, (v, ty) in sorted(frags.items())]
    decl += [f"  TM_UNROLL for (int k = 0; k < {v}; ++k) rf_{name}[k] = 0;" for name, (v, _) in sorted(frags.items())]
    src = "\n".join([
        f"// threadmap behaviour: {model.name} {dict(model.env)}",
        f"template <bool COUNT, int ONLY, int SIDES> __device__ void tm_{probe.uid}_body({params}) {{",
        "  extern __shared__ __align__(16) unsigned char tm_smem[];",
        f"  const long long b = (long long)blockIdx.x + {gx}LL * ((long long)blockIdx.y + {gy}LL * blockIdx.z);",
        "  const int tid = threadIdx.x;",
        *decl, *body, "}",
        f'extern "C" __global__ void tm_{probe.uid}_count({params}) {{ tm_{probe.uid}_body<true, -1, 3>({args}); }}',
        f'extern "C" __global__ void tm_{probe.uid}_run({params}) {{ tm_{probe.uid}_body<false, -1, 3>({args}); }}',
        *(f'extern "C" __global__ void tm_{probe.uid}_stage{k}{suffix}({params}) {{ '
          f"tm_{probe.uid}_body<false, {k}, {mask}>({args}); }}"
          for k in (s.stage for s in probe.stages) for suffix, mask in (("", 3), ("_src", 1), ("_dst", 2))),
        # the same side kernels under another name: launched one CTA per SM (see execute.SOLO_SHARED)
        *(f'extern "C" __global__ void tm_{probe.uid}_stage{k}_{w}_solo({params}) {{ '
          f"tm_{probe.uid}_body<false, {k}, {mask}>({args}); }}"
          for k in (s.stage for s in probe.stages) for w, mask in (("src", 1), ("dst", 2))),
        ""])
    return BehaviourProgram(probe.uid, src, model.threads, model.grid, at, tuple(buffers),
                            tuple(s.stage for s in probe.stages), bits, shared_sides, tuple(cp_async))


def _wide(s: SideModel) -> bool:
    """Whether one access of the side's vector is one instruction (1, 2, 4, 8 or 16 bytes)."""
    return s.vec * s.elem_bits // 8 in VEC_TYPE and s.vec * s.elem_bits % 8 == 0


def cp_async_issued(cp: CopyModel, legal: dict[str, bool]) -> bool:
    """Whether the behaviour kernels issue stage ``cp`` as ``cp.async``: its copy operation is
    ``SM80_CP_ASYNC_*`` from a global to a shared tensor, and its declared vector is legal on
    both sides at these sizes (``legal``) and a width ``cp.async`` moves; otherwise the
    stage is issued as loads and stores like any other (element by element where the vector
    is illegal, as the counters then say)."""
    if not cp.cp_async or not all(legal.values()) or not all(_wide(s) for s in cp.sides()):
        return False
    op = cp.src.copy_op if cp.src.cp_async else cp.dst.copy_op
    assert op is not None
    cache, _ = cp_async_op(op)
    return {s.vec * s.elem_bits // 8 for s in cp.sides()} <= set(CP_ASYNC_BYTES[cache]) and \
        cp.src.vec == cp.dst.vec


def _side_ptr(s: SideModel, f: Any, offsets: dict[str, int]) -> str:
    """The byte address of a record's element on a memory side."""
    assert s.tensor is not None
    t = s.tensor
    base = f"g_{t.name}" if t.memory == "global" else f"(tm_smem + {offsets[t.buffer]})"
    return f"({base} + r[{f.offset_field}] * {t.elem_bytes}LL)"


def _copy_lines(cp: CopyModel, sp: StageProbe, ns: str, offsets: dict[str, int], written: set[str],
                legal: dict[str, bool], shared_sides: tuple[tuple[int, str, str], ...]) -> list[str]:
    """One copy stage: the probe function gives every value's offsets and predicate; the src
    side loads into ``tmp``, the dst side stores from it (``SIDES`` picks either alone).  A
    warp skips an access none of its lanes performs (a vote), so no instruction is issued
    with every lane masked: the verifier counts instructions with at least one active lane.
    A shared side counts each element it accesses outside its tensor's shape (the probe's
    in-bounds flag) in ``tm_oob`` at its index in ``shared_sides``."""
    V, W = sp.values, sp.width
    fields = {f.which: f for f in sp.sides}
    e_bits = next(s.elem_bits for s in cp.sides() if s.tensor is not None)
    if any(s.elem_bits != e_bits for s in cp.sides()):
        raise NotProbed(f"stage {cp.index} converts between element widths")
    E = ELEM_TYPE[e_bits]
    eb = e_bits // 8
    out = [f"  if constexpr (ONLY < 0 || ONLY == {cp.index}) {{  // stage {cp.index}: {cp.name or 'copy'}",
           f"    long long rec[{V * W}];",
           f"    {ns}::{sp.fn}(b, tid, rec);",
           f"    {E} tmp[{V}];",
           f"    TM_UNROLL for (int v = 0; v < {V}; ++v) tmp[v] = 0;",
           "    const unsigned mask = __activemask();"]
    for s in (cp.src, cp.dst):
        load = s.which == "src"
        out.append(f"    if constexpr (SIDES & {1 if load else 2}) {{")
        if s.tensor is None:
            # a register side: the fragment itself (the other side moves it)
            if load:
                out.append(f"    TM_UNROLL for (int v = 0; v < {V}; ++v) tmp[v] = rf_{s.name}[v];")
            else:
                out.append(f"    TM_UNROLL for (int v = 0; v < {V}; ++v) "
                           f"if (rec[v * {W} + {W - 1}]) rf_{s.name}[v] = tmp[v];")
            out.append("    }")
            continue
        f = fields[s.which]
        t = s.tensor
        space = "global" if t.memory == "global" else "shared"
        op = "ld" if load else "st"
        ptr = _side_ptr(s, f, offsets)
        # coverage: writes of a tensor some stage writes, reads of one no stage writes
        counted = t.memory == "global" and (t.name in written) == (not load)
        count = f"if (COUNT) atomicAdd(&n_{t.name}[r[{f.offset_field}]], 1u);" if counted else ""
        if t.memory == "shared":
            slot = shared_sides.index((cp.index, s.which, t.name))
            count = f"if (COUNT && !r[{f.inb_field}]) atomicAdd(&tm_oob[{slot}], 1u);"
        # the declared vector as one instruction where the verifier finds every access of this
        # side legal here (contiguous, aligned); else one element per access
        vec = s.vec if legal[s.which] and _wide(s) else 1
        others = [o.vec for o in cp.sides() if o is not s and o.tensor is not None and cp.predicate != "none"]
        uniform = all(o % vec == 0 for o in others)  # the predicate is one per group of vec values
        out += [f"    TM_UNROLL for (int g = 0; g < {V}; g += {vec}) {{",
                "      bool all = true, any = false;",
                f"      TM_UNROLL for (int k = 0; k < {vec}; ++k) {{ const bool pk = rec[(g + k) * {W} + {W - 1}]; "
                "all = all && pk; any = any || pk; }",
                "      if (__any_sync(mask, all)) {",
                "        if (all) {",
                f"          const long long* r = rec + g * {W};",
                f"          tm_{op}_{space}{vec * eb}({ptr}, tmp + g);",
                f"          TM_UNROLL for (int k = 0; k < {vec}; ++k) {{ "
                f"const long long* r = rec + (g + k) * {W}; (void)r; {count} }}",
                "        }",
                "      }"]
        if vec > 1 and not uniform:
            out += ["      if (__any_sync(mask, any && !all)) {",
                    f"        TM_UNROLL for (int k = 0; k < {vec}; ++k) {{",
                    f"          const long long* r = rec + (g + k) * {W};",
                    f"          const bool pk = !all && r[{W - 1}];",
                    "          if (__any_sync(mask, pk) && pk) {",
                    f"            tm_{op}_{space}{eb}({ptr}, tmp + g + k);",
                    f"            {count}",
                    "          }",
                    "        }",
                    "      }"]
        out.append("    }")
        if load:
            out += ["    unsigned acc = 0;",
                    f"    TM_UNROLL for (int v = 0; v < {V}; ++v) acc ^= (unsigned)tmp[v]"
                    + (" ^ (unsigned)(tmp[v] >> 32);" if e_bits == 64 else ";"),
                    f"    if (tm_key == {SINK_KEY}) tm_sink[tid] = acc;"]
        out.append("    }")
    out.append("  }")
    return out


def _cp_async_lines(cp: CopyModel, sp: StageProbe, ns: str, offsets: dict[str, int], written: set[str],
                    shared_sides: tuple[tuple[int, str, str], ...]) -> list[str]:
    """A ``cp.async`` stage: one ``cp.async`` per vector (``LDGSTS``), global src to shared dst,
    then ``cp.async.commit_group`` and ``cp.async.wait_group 0`` (the stage's data are in
    shared memory before a barrier or a later stage reads them).  The one instruction is both
    sides, so every variant of the stage kernel issues it (``SIDES`` 1, 2 or 3): the src and dst
    variants are the whole stage, and their counters the ``ldgsts`` ones.  Under a predicate an
    ``SM80_CP_ASYNC_*`` operation is issued by the lanes whose vector is in bounds (CuTe's
    ``copy_if``, CUTLASS's ``cp_async`` with ``@p``); the ``_ZFILL`` operations are issued by
    every lane, reading 0 bytes where the predicate is false and zero-filling the destination
    (``cp_async_zfill``).  Counting follows the performed accesses, as in :func:`_copy_lines`."""
    V, W = sp.values, sp.width
    fields = {f.which: f for f in sp.sides}
    vec = cp.src.vec
    nbytes = vec * cp.src.elem_bytes
    op = cp.src.copy_op if cp.src.cp_async else cp.dst.copy_op
    assert op is not None and cp.src.tensor is not None and cp.dst.tensor is not None
    cache, zfill = cp_async_op(op)
    src, dst = cp.src.tensor, cp.dst.tensor
    gptr = _side_ptr(cp.src, fields["src"], offsets)
    sptr = _side_ptr(cp.dst, fields["dst"], offsets)
    count = [f"if (COUNT) atomicAdd(&n_{src.name}[r[{fields['src'].offset_field}]], 1u);"
             if src.name not in written else "",
             f"if (COUNT && !r[{fields['dst'].inb_field}]) "
             f"atomicAdd(&tm_oob[{shared_sides.index((cp.index, 'dst', dst.name))}], 1u);"]
    counted = (f"          TM_UNROLL for (int k = 0; k < {vec}; ++k) {{ "
               f"const long long* r = rec + (g + k) * {W}; (void)r; {' '.join(count)} }}")
    out = [f"  if constexpr (ONLY < 0 || ONLY == {cp.index}) {{  // stage {cp.index}: {cp.name or 'copy'}, "
           f"{op}: cp.async.{cache} (LDGSTS)",
           f"    long long rec[{V * W}];",
           f"    {ns}::{sp.fn}(b, tid, rec);",
           "    const unsigned mask = __activemask();",
           "    (void)mask;",
           f"    TM_UNROLL for (int g = 0; g < {V}; g += {vec}) {{",
           "      bool all = true;",
           f"      TM_UNROLL for (int k = 0; k < {vec}; ++k) all = all && rec[(g + k) * {W} + {W - 1}];",
           f"      const long long* r = rec + g * {W};"]
    if zfill:
        out += [f"      tm_cp_async_{cache}{nbytes}_zfill({sptr}, {gptr}, all ? {nbytes} : 0);",
                "      if (all) {", counted, "      }"]
    else:
        out += ["      if (__any_sync(mask, all) && all) {",
                f"          tm_cp_async_{cache}{nbytes}({sptr}, {gptr});",
                counted, "      }"]
    out += ["    }", "    tm_cp_async_wait_all();", "  }"]
    return out


# ----------------------------------------------------------------------------- the host's check


def domain_offsets(model: KernelModel, name: str) -> np.ndarray:
    """Element offsets (view offset included) of every coordinate of a tensor's shape, in
    colexicographic coordinate order."""
    t = model.tensors[name]
    n = int(np.prod(t.shape, dtype=np.int64))
    idx = np.arange(n, dtype=np.int64)
    coords = []
    for e in t.shape:
        coords.append(idx % e)
        idx = idx // e
    return np.asarray(t.offsets(tuple(coords)), dtype=np.int64).reshape(-1) + t.offset


def check_behaviour(model: KernelModel, prog: BehaviourProgram, data: dict[str, np.ndarray],
                    counts: dict[str, np.ndarray], out_of_tensor: np.ndarray | None = None) -> dict[str, Any]:
    """Judge a counting run: ``data`` holds every global tensor's elements after the run (the
    input ones as filled), ``counts`` the accesses counted per element, ``out_of_tensor`` the
    accesses of each of ``prog.shared_sides`` outside its tensor.  Returns the numbers:
    ``missing`` (domain elements never touched), ``duplicates`` (touched more than once),
    ``stray`` (touched outside the domain), ``wrong`` (output elements that do not hold the
    declared transform of the input), ``out_of_tensor`` (shared accesses outside their
    tensor), and ``correct``."""
    out: dict[str, Any] = {"missing": 0, "duplicates": 0, "stray": 0, "wrong": 0, "checked": 0,
                           "out_of_tensor": 0, "first": []}
    oob = np.zeros(len(prog.shared_sides), dtype=np.int64) if out_of_tensor is None else \
        np.asarray(out_of_tensor, dtype=np.int64)[:len(prog.shared_sides)]
    for (stage, which, name), n in zip(prog.shared_sides, oob.tolist()):
        out["out_of_tensor"] += n
        if n:
            out["first"].append(f"stage {stage} {which}: {n} accesses of shared {name} outside its shape "
                                f"{tuple(int(e) for e in model.tensors[name].shape)}")
    repl = model.expect.replication
    for b in prog.globals():
        c = counts[b.name].astype(np.int64)
        dom = domain_offsets(model, b.name)
        inside = np.zeros(c.size, dtype=bool)
        inside[dom] = True
        hit = c[dom]
        out["missing"] += int((hit == 0).sum())
        if not repl:
            out["duplicates"] += int((hit > 1).sum())
        out["stray"] += int(((c > 0) & ~inside).sum())
        out.setdefault("accesses", {})[b.name] = int(c.sum())
        if (hit == 0).any() and len(out["first"]) < 5:
            i = int(np.flatnonzero(hit == 0)[0])
            out["first"].append(f"{b.name}: element {_coord(model, b.name, i)} ({b.counted}) never touched")
    tr, src, dst = model.expect.transform, model.input, model.output
    if tr and src and dst and src != dst:
        xo, yo = domain_offsets(model, src), domain_offsets(model, dst)
        xs, ys = model.tensors[src].shape, model.tensors[dst].shape
        # y(c) == x(T^-1 c): the colex index of c in x's shape, after reversing for a transpose
        n = yo.size
        idx = np.arange(n, dtype=np.int64)
        cs = []
        for e in ys:
            cs.append(idx % e)
            idx //= e
        if tr == "transpose":
            cs = cs[::-1]
        if tuple(int(e) for e in xs) == tuple(int(cs_e.max(initial=-1)) + 1 for cs_e in cs) or n:
            lin = np.zeros(n, dtype=np.int64)
            mul = 1
            for k, e in enumerate(xs):
                lin += cs[k] * mul
                mul *= int(e)
            want = data[src][xo[lin]]
            got = data[dst][yo]
            bad = want != got
            out["wrong"] = int(bad.sum())
            out["checked"] = int(n)
            if bad.any() and len(out["first"]) < 10:
                i = int(np.flatnonzero(bad)[0])
                out["first"].append(f"{dst}{_coord(model, dst, i)} holds {int(got[i]):#x}, expected "
                                    f"{int(want[i]):#x} from {src}")
    out["correct"] = out["missing"] == out["duplicates"] == out["stray"] == out["wrong"] == out["out_of_tensor"] == 0
    return out


def _coord(model: KernelModel, name: str, i: int) -> tuple[int, ...]:
    c = []
    for e in model.tensors[name].shape:
        c.append(i % int(e))
        i //= int(e)
    return tuple(c)
