"""The sweep's findings measured on a GPU: the library's own kernels, under Nsight Compute.

A finding kind is a warning the sweep reports (a check and the kind of its finding, say
``bank_conflicts``/``conflict``) for one operation kind and opcode class (``gemm tensorop``).
For each kind one configuration stands for it (and the kernels asked for); its program is the
generator's own kernel text (the emitter ``extract`` uses, what the library compiles) and a
``main`` that launches it as the library does (``GemmUniversalAdapter<Kernel>``) on device
memory, at the whole-tile sizes the warning was found at, with ``beta = 0`` so that the
epilogue reads no C and the kernel's global loads are its mainloop's ``cp.async`` alone.

``prepare`` (CPU) picks the configurations from a sweep database, writes a manifest (the
kernels, the finding kinds each stands for, the sizes, the stored spec) and each program's
source beside it, and compiles them (sm_80 PTX built for sm_90: an H200 runs it).  ``run`` (the
GPU machine) builds what is not cached, verifies each stored spec at the sizes (the
prediction: sectors and requests of the ``cp.async`` sources, wavefronts and instructions of
their shared destinations, summed over the copy stages, for the whole grid), launches each
program once under ``ncu --clock-control none`` (the ``LDGSTS`` counters of
:mod:`threadmap.gpu.profile`) and writes ``confirm.json`` and ``confirm.md``.

The spec's grid copies one k-tile per block (``K / kK`` blocks deep); the kernel's blocks loop
over the k-tiles: the same copies.  The kernel issues more ``LDGSTS`` than its k-tiles: its
mainloop (``MmaMultistage``, ``cutlass/gemm/threadblock/mma_multistage.h``) issues ``kStages - 1``
stages in its prologue and one per mainloop iteration, ``K / kK + kStages - 1`` in all, and a stage
beyond the last k-tile runs with its iterators' masks cleared: zero-filling in the prologue
(``cp_async_zfill``: every lane writes zeros, the instruction is executed), every lane predicated
off in the mainloop (``cp_async``, ``@P LDGSTS``: issued, not executed).  :func:`schedule` follows
that control flow, :data:`MAINLOOP_PREMISES` checks it against the header and :func:`mainloop_form`
against the program's SASS; :func:`account` adds to the spec's k-tiles the zero-filling stages'
store wavefronts (:func:`threadmap.hardware.ldgsts_wavefronts` of the spec's shared addresses, no
lane reading) and the predicated-off stages' instructions (issued, no wavefront: measured on the
H200, ``docs/hardware.md``).  The kernel is launched at several K (:func:`launch_sizes`) and a
finding is confirmed when every launch's counters are the account's and cost more than ideal
(:func:`verdict`).

A 2.x convolution (not a strided Dgrad) is launched through ``ImplicitGemmConvolution`` at a
problem of its configuration's family (:func:`whole_tiles`, :func:`conv_launch_sizes`); its
mainloop (``ImplicitGemmMultistage``) copies group by group, clears no mask and zero-fills every
copy past the k-tiles: :func:`conv_schedule` follows it, :data:`CONV_MAINLOOP_PREMISES` checks it
against the header, the program's ``describe`` (host-side) checks the constants and k-tiles the
account takes (:func:`conv_account`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from threadmap.errors import ThreadmapError
from threadmap.gpu.toolchain import ToolchainError
from threadmap.sweep.library import CONV_KINDS, DEFAULT_CUDA_VERSION, Configuration, SweepError, generate, group
from threadmap.sweep.store import Result, Store

#: the checks whose warnings the counters measure, and the side of a cp.async each measures
SIDES = {"coalescing": "global", "bank_conflicts": "shared"}
#: the kernels are sm_80's; the GPU is an H200: their PTX is built for sm_90
GENCODE = (("compute_80", "sm_90"),)
#: relative difference under which a measured ratio equals the predicted one
TOLERANCE = 1e-6


class ConfirmError(ThreadmapError):
    """Bad input to the confirmation: no such kernel, a database without warnings, a manifest
    that cannot be read."""


@dataclass(frozen=True, order=True)
class FindingKind:
    """A class of warning: the operation kind and opcode class of the configurations that
    have it, the check and the kind of its finding."""

    operation: str
    opcode: str
    check: str
    kind: str

    @property
    def label(self) -> str:
        return f"{self.operation} {self.opcode}: {self.check} ({self.kind})"


def fields_of(result: Result) -> dict[str, Any]:
    """The configuration's fields (its key is their canonical JSON)."""
    return dict(json.loads(result.key))


def operation_of(fields: dict[str, Any]) -> str:
    # a GEMM's key has its family; the other kinds' keys name their kind
    return str(fields.get("kind") or "gemm")


def finding_kinds(result: Result) -> set[FindingKind]:
    """The kinds of warning of one configuration that the counters can measure."""
    f = fields_of(result)
    return {FindingKind(operation_of(f), str(f.get("opcode", "?")).lower(), w["check"], w.get("kind", "?"))
            for w in result.warnings if w["check"] in SIDES}


@dataclass
class Target:
    """One kernel to measure: the finding kinds it stands for, the sizes its configuration's
    warnings were found at (the kernel's own M, N, K), its stored spec and warnings."""

    kernel: str
    label: str
    kinds: list[str]
    sizes: dict[str, int]
    spec: str
    warnings: list[dict[str, Any]]
    operation: str = "gemm"


def launchable(result: Result) -> bool:
    """Whether a program can launch the configuration's first kernel: a universal GEMM (the
    grouped kernel reads its problem sizes from global memory, which the counters would add
    to the cp.async loads) or a 2.x convolution but a strided Dgrad."""
    f = fields_of(result)
    if operation_of(f) in CONV_KINDS:
        # a 2.x implicit GEMM; the strided Dgrad kernels (their CTA's filter phase comes from
        # its grid row) are not launched
        return not (f.get("conv_kind") == "Dgrad" and f.get("stride_support") == "Strided")
    return operation_of(f) in PROGRAMS and f.get("family", "universal") == "universal"


def _preference(result: Result, kind: FindingKind) -> tuple[Any, ...]:
    """Which configuration stands for a kind, best first: every cp.async stage has the
    warning (the kernel's totals are then the finding's alone), every cp.async is the
    L1-allocating form (the only one whose shared writes the counters give by address), the
    most kernels, the smallest tile, the name."""
    stages = {w["stage"] for w in result.warnings if w["check"] == kind.check and w.get("kind") == kind.kind}
    atoms = re.findall(r"atom: (SM80_CP_ASYNC_\w+)", result.spec)
    f = fields_of(result)
    tile = f.get("threadblock", [0, 0, 0])
    return (-len(stages) + len(atoms), any("CACHEGLOBAL" in a for a in atoms), -len(result.kernels),
            tile[0] * tile[1] * tile[2], result.kernels[0])


def choose(results: Sequence[Result], kernels: Sequence[str] = ()) -> list[Target]:
    """One target per finding kind among ``results`` (analysed configurations with warnings),
    and the configurations of ``kernels`` besides (each with every kind it has)."""
    with_warnings = [r for r in results if r.status != "not_analysed" and r.kernels and finding_kinds(r)]
    picked: dict[str, tuple[Result, list[str]]] = {}
    for kind in sorted({k for r in with_warnings for k in finding_kinds(r)}):
        cands = [r for r in with_warnings if kind in finding_kinds(r) and launchable(r)]
        if cands:
            best = min(cands, key=lambda r: _preference(r, kind))
            picked.setdefault(best.kernels[0], (best, []))[1].append(kind.label)
    for name in kernels:
        r = next((r for r in results if name in r.kernels), None)
        if r is None:
            raise ConfirmError(f"--kernels {name}: the database holds no configuration of this kernel")
        if not finding_kinds(r):
            raise ConfirmError(f"--kernels {name}: its configuration has no warning the counters measure")
        if not launchable(r):
            raise ConfirmError(f"--kernels {name}: no program launches this kernel's family (a universal GEMM's "
                               "configuration has the same mainloop)")
        picked[r.kernels[0]] = (r, sorted(k.label for k in finding_kinds(r)))
    out = []
    for name, (r, labels) in picked.items():
        sizes = {k: int(v) for k, v in next(w["sizes"] for w in r.warnings if w["check"] in SIDES).items()}
        op = operation_of(fields_of(r))
        if op in CONV_KINDS:
            sizes = whole_tiles(configuration(name), sizes)
        out.append(Target(name, r.label, labels, sizes, r.spec, [w for w in r.warnings if w["check"] in SIDES], op))
    return out


def missing_kinds(results: Sequence[Result], targets: Sequence[Target]) -> list[str]:
    """Finding kinds the database holds that no target stands for (no program for them)."""
    have = {k for t in targets for k in t.kinds}
    return sorted({k.label for r in results if r.status != "not_analysed" for k in finding_kinds(r)} - have)


# --- the programs -------------------------------------------------------------------------------

GEMM_MAIN = """
// threadmap sweep confirm: the kernel above, launched as the library launches it
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define TM_CUDA(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \\
  std::fprintf(stderr, "%s: %s\\n", #x, cudaGetErrorString(e_)); return 3; } } while (0)

// one launch at the kernel's own problem km x kn x K (its Mma's M, N, K: the spec's)
template <class Gemm>
int launch(int km, int kn, int K, void* A, void* B, void* C, void* D) {
  using Kernel = typename Gemm::GemmKernel;
  // the adapter takes the caller's problem: the kernel's transposed when the kernel's C is
  // row-major (the emitter declares the kernel transposed)
  int const M = Gemm::kInternalTranspose ? kn : km;
  int const N = Gemm::kInternalTranspose ? km : kn;
  auto const lda = Gemm::LayoutA::packed({M, K}).stride(0);
  auto const ldb = Gemm::LayoutB::packed({K, N}).stride(0);
  auto const ldc = Gemm::LayoutC::packed({M, N}).stride(0);
  using Compute = typename Gemm::EpilogueOutputOp::ElementCompute;
  // beta = 0: the epilogue reads no C, so the kernel's global loads are the mainloop's cp.async
  typename Gemm::EpilogueOutputOp::Params epilogue(Compute(1), Compute(0));
  typename Gemm::Arguments args(cutlass::gemm::GemmUniversalMode::kGemm, {M, N, K}, 1, epilogue,
                                A, B, C, D, 0, 0, 0, 0, lda, ldb, ldc, ldc);
  cutlass::Status st = Gemm::can_implement(args);
  if (st != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "can_implement: %s\\n", cutlassGetStatusString(st)); return 3;
  }
  void* W = nullptr;
  size_t const ws = Gemm::get_workspace_size(args);
  if (ws) TM_CUDA(cudaMalloc(&W, ws));
  Gemm gemm;
  st = gemm.initialize(args, W);
  if (st == cutlass::Status::kSuccess) st = gemm.run();
  TM_CUDA(cudaDeviceSynchronize());
  if (W) TM_CUDA(cudaFree(W));
  if (st != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "run: %s\\n", cutlassGetStatusString(st)); return 3;
  }
  dim3 const grid = Gemm::get_grid_shape(args);
  std::printf("TM-CONFIRM problem=%dx%dx%d transposed=%d grid=%ux%ux%u threads=%d smem=%d\\n", M, N, K,
              int(Gemm::kInternalTranspose), grid.x, grid.y, grid.z, int(Kernel::kThreadCount),
              int(sizeof(typename Kernel::SharedStorage)));
  return 0;
}

int main(int argc, char** argv) {
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<${name}>;
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s M N K [K...] (the kernel's own M, N, K; one launch per K)\\n", argv[0]);
    return 2;
  }
  int const km = std::atoi(argv[1]), kn = std::atoi(argv[2]);
  int kmax = 0;
  for (int i = 3; i < argc; ++i) kmax = std::max(kmax, std::atoi(argv[i]));
  auto bytes = [](long long n, int bits) { return size_t((n * bits + 7) / 8); };
  void *A = nullptr, *B = nullptr, *C = nullptr, *D = nullptr;
  size_t const a = bytes((long long)km * kmax, cutlass::sizeof_bits<typename Gemm::ElementA>::value);
  size_t const b = bytes((long long)kmax * kn, cutlass::sizeof_bits<typename Gemm::ElementB>::value);
  size_t const c = bytes((long long)km * kn, cutlass::sizeof_bits<typename Gemm::ElementC>::value);
  TM_CUDA(cudaMalloc(&A, a)); TM_CUDA(cudaMalloc(&B, b)); TM_CUDA(cudaMalloc(&C, c)); TM_CUDA(cudaMalloc(&D, c));
  TM_CUDA(cudaMemset(A, 0, a)); TM_CUDA(cudaMemset(B, 0, b)); TM_CUDA(cudaMemset(C, 0, c));
  std::printf("TM-CONFIRM kernel=${name}\\n");
  for (int i = 3; i < argc; ++i) {
    int const rc = launch<Gemm>(km, kn, std::atoi(argv[i]), A, B, C, D);
    if (rc) return rc;
  }
  return 0;
}
"""


def gemm_program(op: Any) -> str:
    """A universal GEMM's program: the generator's includes and kernel text (unchanged: the
    library's own source), then GEMM_MAIN."""
    from cutlass_library import gemm_operation as go

    emitter = go.EmitGemmUniversalInstance()
    includes = "".join(f"#include <{h}>\n" for h in emitter.includes)
    head = (f"// {op.procedural_name()}: CUTLASS's generator's kernel text (EmitGemmUniversalInstance), as the "
            "library compiles it\n")
    return head + includes + emitter.emit(op) + GEMM_MAIN.replace("${name}", op.procedural_name())


# --- convolutions --------------------------------------------------------------------------------

#: the headers a 2.x convolution's kernel text and its launch need
CONV_INCLUDES = (
    "cutlass/cutlass.h", "cutlass/conv/kernel/default_conv2d_fprop.h", "cutlass/conv/kernel/default_conv2d_dgrad.h",
    "cutlass/conv/kernel/default_conv2d_wgrad.h", "cutlass/conv/kernel/default_conv2d_group_fprop.h",
    "cutlass/conv/kernel/default_conv3d_fprop.h", "cutlass/conv/kernel/default_conv3d_dgrad.h",
    "cutlass/conv/kernel/default_conv3d_wgrad.h", "cutlass/conv/device/implicit_gemm_convolution.h",
    "cutlass/epilogue/thread/linear_combination.h", "cutlass/gemm/threadblock/threadblock_swizzle.h",
)

#: the fields of ``Conv2dProblemSize``'s and ``Conv3dProblemSize``'s constructors (the form
#: :func:`threadmap.sweep.extract_conv.problem_cxx` writes), the mode as 1 for kConvolution
CONV_FIELDS = {
    2: ("N", "H", "W", "C", "K", "R", "S", "P", "Q", "pad_h", "pad_w", "stride_h", "stride_w", "dilation_h",
        "dilation_w", "mode", "split_k_slices", "groups"),
    3: ("N", "D", "H", "W", "C", "K", "T", "R", "S", "Z", "P", "Q", "pad_d", "pad_h", "pad_w", "stride_d",
        "stride_h", "stride_w", "dilation_d", "dilation_h", "dilation_w", "mode", "split_k_slices", "groups"),
}

CONV_MAIN = """
// threadmap sweep confirm: the kernel above, launched as the library launches it
// (the library's manifest derives it so, and wraps it in ImplicitGemmConvolution)
struct ${name} : public ${name}_base { };

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define TM_CUDA(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \\
  std::fprintf(stderr, "%s: %s\\n", #x, cudaGetErrorString(e_)); return 3; } } while (0)

using Conv = cutlass::conv::device::ImplicitGemmConvolution<${name}>;
using Kernel = typename Conv::UnderlyingKernel;
using Mma = typename Kernel::Mma;
using Problem = ${problem};
constexpr int kFields = ${fields};

// the constructor's fields in order, the mode 1 for kConvolution
Problem problem_of(char** a) {
  int v[kFields];
  for (int i = 0; i < kFields; ++i) v[i] = std::atoi(a[i]);
  auto const mode = v[kFields - 3] ? cutlass::conv::Mode::kConvolution : cutlass::conv::Mode::kCrossCorrelation;
  return Problem(${args}, mode, v[kFields - 2], v[kFields - 1]);
}

template <class Layout, class Extent> Layout packed(Extent const& e) { return Layout::packed(e); }

typename Conv::Arguments arguments(Problem const& ps, void* A, void* B, void* C, void* D) {
  auto const op = Kernel::kConvolutionalOperator;
  auto const la = packed<typename Conv::LayoutA>(cutlass::conv::implicit_gemm_tensor_a_extent(op, ps));
  auto const lb = packed<typename Conv::LayoutB>(cutlass::conv::implicit_gemm_tensor_b_extent(op, ps));
  auto const lc = packed<typename Conv::LayoutC>(cutlass::conv::implicit_gemm_tensor_c_extent(op, ps));
  using Compute = typename Conv::EpilogueOutputOp::ElementCompute;
  // beta = 0: the epilogue reads no C, so the kernel's global loads are the mainloop's cp.async
  typename Conv::EpilogueOutputOp::Params epilogue(Compute(1), Compute(0));
  return typename Conv::Arguments(ps, {static_cast<typename Conv::ElementA*>(A), la},
                                  {static_cast<typename Conv::ElementB*>(B), lb},
                                  {static_cast<typename Conv::ElementC*>(C), lc},
                                  {static_cast<typename Conv::ElementC*>(D), lc}, epilogue);
}

// host-side, no GPU: the mainloop's constants, the k-tiles the kernel's Params give each CTA,
// and the iterators of every CTA walked as the mainloop walks them over those k-tiles and
// kStages more (set_iteration_index(0), valid and ++ per access, advance per k-tile): the
// accesses still valid past the last k-tile (the stages the account takes as all zero-fill)
int describe(Problem const& ps) {
  typename Conv::Arguments args = arguments(ps, nullptr, nullptr, nullptr, nullptr);
  typename Kernel::Params params(args);
  using ItA = typename Mma::IteratorA;
  using ItB = typename Mma::IteratorB;
  int const tiles = params.gemm_k_iterations, walked = tiles + Mma::kStages;
  long long valid_real = 0, valid_past = 0;
  auto const grid = params.grid_tiled_shape;
  auto walk = [&](auto it, int accesses) {
    for (int k = 0; k < walked; ++k) {
      it.set_iteration_index(0);
      for (int i = 0; i < accesses; ++i, ++it) (k < tiles ? valid_real : valid_past) += it.valid() ? 1 : 0;
      it.advance();
    }
  };
  for (int t = 0; t < Kernel::kThreadCount; ++t) {
    for (int m = 0; m < grid.m(); ++m)
      walk(ItA(params.iterator_A, ps, params.ptr_A, t, cutlass::MatrixCoord(m * Mma::Shape::kM, 0)),
           ItA::ThreadMap::Iterations::kCount * ItA::kAccessesPerVector);
    for (int n = 0; n < grid.n(); ++n)
      walk(ItB(params.iterator_B, ps, params.ptr_B, t, cutlass::MatrixCoord(0, n * Mma::Shape::kN)),
           ItB::ThreadMap::Iterations::kCount * ItB::kAccessesPerVector);
  }
  std::printf("TM-CONFIRM describe stages=%d warp_gemm_iterations=%d iterations_a=%d iterations_b=%d "
              "group_a=%d group_b=%d accesses_per_vector_a=%d accesses_per_vector_b=%d k_iterations=%d "
              "grid=%dx%dx%d valid_real=%lld valid_past_end=%lld\\n",
              int(Mma::kStages), int(Mma::Base::kWarpGemmIterations),
              int(Mma::Detail::AsyncCopyIterationsPerStageA), int(Mma::Detail::AsyncCopyIterationsPerStageB),
              int(Mma::Detail::kAccessesPerGroupA), int(Mma::Detail::kAccessesPerGroupB),
              int(ItA::kAccessesPerVector), int(ItB::kAccessesPerVector), tiles, grid.m(), grid.n(), grid.k(),
              valid_real, valid_past);
  return 0;
}

int launch(Problem const& ps, void* A, void* B, void* C, void* D) {
  typename Conv::Arguments args = arguments(ps, A, B, C, D);
  cutlass::Status st = Conv::can_implement(args);
  if (st != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "can_implement: %s\\n", cutlassGetStatusString(st)); return 3;
  }
  void* W = nullptr;
  size_t const ws = Conv::get_workspace_size(args);
  if (ws) TM_CUDA(cudaMalloc(&W, ws));
  Conv conv;
  st = conv.initialize(args, W);
  if (st == cutlass::Status::kSuccess) st = conv.run();
  TM_CUDA(cudaDeviceSynchronize());
  if (W) TM_CUDA(cudaFree(W));
  if (st != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "run: %s\\n", cutlassGetStatusString(st)); return 3;
  }
  typename Kernel::Params params(args);
  std::printf("TM-CONFIRM problem=%dx%dx%d k_iterations=%d grid=%dx%dx%d threads=%d smem=%d\\n",
              params.implicit_gemm_problem_size.m(), params.implicit_gemm_problem_size.n(),
              params.implicit_gemm_problem_size.k(), params.gemm_k_iterations, params.grid_tiled_shape.m(),
              params.grid_tiled_shape.n(), params.grid_tiled_shape.k(), int(Kernel::kThreadCount),
              int(sizeof(typename Kernel::SharedStorage)));
  return 0;
}

int main(int argc, char** argv) {
  bool const desc = argc > 1 && std::strcmp(argv[1], "describe") == 0;
  int const first = desc ? 2 : 1;
  if (argc <= first || (argc - first) % kFields) {
    std::fprintf(stderr, "usage: %s [describe] FIELDS [FIELDS...] (%d fields of the problem size's constructor "
                 "each, the mode 1 for kConvolution; one launch per problem)\\n", argv[0], kFields);
    return 2;
  }
  int const n = (argc - first) / kFields;
  if (desc) {
    for (int i = 0; i < n; ++i) describe(problem_of(argv + first + i * kFields));
    return 0;
  }
  long long a = 0, b = 0, c = 0;
  auto const op = Kernel::kConvolutionalOperator;
  for (int i = 0; i < n; ++i) {
    Problem const ps = problem_of(argv + first + i * kFields);
    a = std::max<long long>(a, cutlass::conv::implicit_gemm_tensor_a_size(op, ps));
    b = std::max<long long>(b, cutlass::conv::implicit_gemm_tensor_b_size(op, ps));
    c = std::max<long long>(c, cutlass::conv::implicit_gemm_tensor_c_size(op, ps));
  }
  auto bytes = [](long long n, int bits) { return size_t((n * bits + 7) / 8); };
  size_t const sa = bytes(a, cutlass::sizeof_bits<typename Conv::ElementA>::value);
  size_t const sb = bytes(b, cutlass::sizeof_bits<typename Conv::ElementB>::value);
  size_t const sc = bytes(c, cutlass::sizeof_bits<typename Conv::ElementC>::value);
  void *A = nullptr, *B = nullptr, *C = nullptr, *D = nullptr;
  TM_CUDA(cudaMalloc(&A, sa)); TM_CUDA(cudaMalloc(&B, sb)); TM_CUDA(cudaMalloc(&C, sc)); TM_CUDA(cudaMalloc(&D, sc));
  TM_CUDA(cudaMemset(A, 0, sa)); TM_CUDA(cudaMemset(B, 0, sb)); TM_CUDA(cudaMemset(C, 0, sc));
  std::printf("TM-CONFIRM kernel=${name}\\n");
  for (int i = 0; i < n; ++i) {
    int const rc = launch(problem_of(argv + first + i * kFields), A, B, C, D);
    if (rc) return rc;
  }
  return 0;
}
"""


def conv_program(op: Any, dims: int) -> str:
    """A 2.x convolution's program: the headers, the generator's kernel text
    (``EmitConv2dInstance`` / ``EmitConv3dInstance``, unchanged: the library's own source),
    then CONV_MAIN."""
    if dims == 3:
        from cutlass_library.conv3d_operation import EmitConv3dInstance

        text, emitter = EmitConv3dInstance().emit(op), "EmitConv3dInstance"
    else:
        from cutlass_library.conv2d_operation import EmitConv2dInstance

        text, emitter = EmitConv2dInstance().emit(op), "EmitConv2dInstance"
    includes = "".join(f"#include <{h}>\n" for h in CONV_INCLUDES)
    head = f"// {op.procedural_name()}: CUTLASS's generator's kernel text ({emitter}), as the library compiles it\n"
    n = len(CONV_FIELDS[dims])
    main = (CONV_MAIN.replace("${problem}", f"cutlass::conv::Conv{dims}dProblemSize")
            .replace("${fields}", str(n)).replace("${args}", ", ".join(f"v[{i}]" for i in range(n - 3)))
            .replace("${name}", op.procedural_name()))
    return head + includes + text + main


#: the program writer of each operation kind (a kind without one is reported, not measured)
PROGRAMS: dict[str, Callable[[Any], str]] = {"gemm": gemm_program, "conv2d": partial(conv_program, dims=2),
                                             "conv3d": partial(conv_program, dims=3)}


def _operation(kernel: str, cuda_version: str) -> tuple[str, Any]:
    """A generated kernel's operation kind and the generator's Operation, by its procedural name."""
    try:
        ops = generate(("80",), kernel, cuda_version)
    except SweepError as e:
        raise ConfirmError(str(e)) from None
    for kind, op in ops:
        if op.procedural_name() == kernel:
            return kind, op
    raise ConfirmError(f"{kernel}: the generator makes no kernel of this name for sm80")


def program(kernel: str, cuda_version: str = DEFAULT_CUDA_VERSION) -> str:
    """The program of one generated kernel, by its procedural name."""
    kind, op = _operation(kernel, cuda_version)
    writer = PROGRAMS.get(kind)
    if writer is None:
        raise ConfirmError(f"{kernel}: no program writer for {kind} kernels")
    return writer(op)


def mainloop_of(kernel: str, cuda_version: str = DEFAULT_CUDA_VERSION) -> tuple[list[int], int]:
    """A generated kernel's threadblock tile (M, N, K) and its mainloop's stages, from the
    generator's own description of it."""
    td = _operation(kernel, cuda_version)[1].tile_description
    return [int(x) for x in td.threadblock_shape], int(td.stages)


def build(source: str) -> Path:
    """The program's executable (compile cache)."""
    from threadmap.gpu import toolchain

    return toolchain.build_program(source, GENCODE)


# --- prediction, measurement, comparison --------------------------------------------------------

#: per side of a cp.async: the metric, the counts whose ratio it is, the ideal count
SIDE_COUNTS = {"global": ("sectors_per_request", "sectors", "requests", "ideal_sectors"),
               "shared": ("wavefronts_per_instruction", "wavefronts", "instructions", "ideal_wavefronts")}
#: per side, the counts the account predicts and the counters measure (all must be equal)
COMPARED = {"global": ("sectors", "requests"), "shared": ("wavefronts", "sass_instructions", "issued")}

@dataclass
class Side:
    """One side of the kernel's cp.async at one launch (``global``: sectors per request of their
    reads; ``shared``: wavefronts per instruction of their writes), the account beside the
    counters."""

    side: str
    metric: str
    predicted: float | None = None
    ideal: float | None = None
    measured: float | None = None
    predicted_raw: dict[str, float] = field(default_factory=dict)
    measured_raw: dict[str, float] = field(default_factory=dict)
    agrees: bool | None = None
    note: str = ""


#: the header of the 2.x multistage mainloop, and the statements :func:`schedule` follows (a
#: description, a regular expression over the header with its whitespace collapsed)
MAINLOOP_HEADER = "cutlass/gemm/threadblock/mma_multistage.h"
MAINLOOP_PREMISES = (
    ("the prologue issues kStages - 1 stages, counting a k-tile off each",
     r"for \(int stage = 0; stage < Base::kStages - 1; \+\+stage, --gemm_k_iterations\) \{ "
     r"// Disable global fetching if done with global fetch iterations "
     r"iterator_A\.clear_mask\(gemm_k_iterations == 0\); iterator_B\.clear_mask\(gemm_k_iterations == 0\);"),
    ("the prologue's copies zero-fill where the mask is clear",
     r"cutlass::arch::cp_async_zfill<kSrcBytes, kCacheOpA>\( dst_ptr \+ v, iterator_A\.get\(\), "
     r"iterator_A\.valid\(\)\);.*cutlass::arch::cp_async_zfill<kSrcBytes, kCacheOpB>\( dst_ptr \+ v, "
     r"iterator_B\.get\(\), iterator_B\.valid\(\)\);.*void gmem_wait"),
    ("the mainloop's copies: zero-filling under kZfill, predicated (cp_async) otherwise",
     r"if \(SharedMemoryClear == SharedMemoryClearOption::kZfill\) \{ cutlass::arch::cp_async_zfill<kSrcBytes, "
     r"kCacheOpA>\( dst_ptr \+ v, gmem_ptr, iterator_A\.valid\(\)\); \} else \{ "
     r"cutlass::arch::cp_async<kSrcBytes, kCacheOpA>\( dst_ptr \+ v, gmem_ptr, iterator_A\.valid\(\)\); \}"),
    ("each mainloop iteration copies one stage, then counts a k-tile off and clears the masks at zero",
     r"advance_smem_read_stage\(\); // Disable global fetching when done with global fetch iterations "
     r"--gemm_k_iterations; iterator_A\.clear_mask\(gemm_k_iterations == 0\); "
     r"iterator_B\.clear_mask\(gemm_k_iterations == 0\);"),
    ("the mainloop clears the masks at zero before its first iteration",
     r"void gemm_iters\(.*?PipeState pipe_state; // Disable global fetching if done with global fetch "
     r"iterations iterator_A\.clear_mask\(gemm_k_iterations == 0\);"),
    ("the mainloop runs while gemm_k_iterations > 1 - kStages",
     r"for \(; gemm_k_iterations > \(-Base::kStages \+ 1\);\) \{ mac_loop_iter\("),
    ("a cleared mask clears every predicate",
     r"void clear_mask\(bool enable = true\) \{ CUTLASS_PRAGMA_UNROLL for \(int i = 0; i < "
     r"kPredicateWordCount; \+\+i\) \{ predicates_\[i\] = enable \? 0u : predicates_\[i\];"),
)


def mainloop_premises(include: Path | None) -> list[str]:
    """The statements of :data:`MAINLOOP_PREMISES` the CUTLASS headers under ``include`` do not
    hold (empty: :func:`schedule` is their control flow)."""
    if include is None:
        return ["the CUTLASS headers were not found"]
    try:
        text = " ".join((include / MAINLOOP_HEADER).read_text().split())
        text += " " + " ".join((include / "cutlass/transform/threadblock/predicated_tile_access_iterator.h")
                               .read_text().split())
    except OSError as e:
        return [f"{MAINLOOP_HEADER}: {e.strerror or e}"]
    return [what for what, pattern in MAINLOOP_PREMISES if not re.search(pattern, text, re.S)]


@dataclass(frozen=True)
class Schedule:
    """The copy stages one CTA's mainloop issues for ``k_tiles`` k-tiles: ``real`` (a k-tile's
    copies), ``zero_fill`` (masks cleared, every lane writing zeros) and ``predicated_off``
    (masks cleared, every lane predicated off); ``group_zero_fill``: the first group of a stage
    issued alone, zero-filling (a convolution's mainloop, :func:`conv_schedule`)."""

    k_tiles: int
    real: int
    zero_fill: int
    predicated_off: int
    group_zero_fill: int = 0

    @property
    def issued(self) -> int:
        return self.real + self.zero_fill + self.predicated_off


def schedule(stages: int, k_tiles: int, mainloop_zfill: bool = False) -> Schedule:
    """``MmaMultistage``'s copy stages, step by step as its C++ runs them (``prologue`` then
    ``gemm_iters``; :data:`MAINLOOP_PREMISES`): ``gemm_k_iterations`` starts at the k-tiles, each
    prologue stage counts one off, the masks are cleared when it reaches zero and stay so.
    ``mainloop_zfill``: the kernel's ``SharedMemoryClear`` is ``kZfill`` (the mainloop's cleared
    stages zero-fill instead of being predicated off)."""
    if stages < 2 or k_tiles < 1:
        raise ConfirmError(f"a multistage mainloop has >= 2 stages and >= 1 k-tile, got {stages}, {k_tiles}")
    remaining, mask = k_tiles, True
    real = zero_fill = off = 0
    for _ in range(stages - 1):                   # prologue: cp_async_zfill
        mask = mask and remaining != 0
        real, zero_fill = real + mask, zero_fill + (not mask)
        remaining -= 1
    mask = mask and remaining != 0                # gemm_iters
    while remaining > 1 - stages:                 # mac_loop_iter: one stage of copies
        if mask:
            real += 1
        elif mainloop_zfill:
            zero_fill += 1
        else:
            off += 1
        remaining -= 1
        mask = mask and remaining != 0
    return Schedule(k_tiles, real, zero_fill, off)


def configuration(kernel: str, cuda_version: str = DEFAULT_CUDA_VERSION) -> Configuration:
    """The sweep's configuration of a generated kernel (its fields, for a convolution's family)."""
    try:
        cfgs = group(generate(("80",), kernel, cuda_version))
    except SweepError as e:
        raise ConfirmError(str(e)) from None
    for c in cfgs:
        if kernel in c.kernels:
            return c
    raise ConfirmError(f"{kernel}: the generator makes no kernel of this name for sm80")


def in_family(cfg: Configuration, sizes: dict[str, int]) -> str:
    """Why ``sizes`` (the family's size names) is not a problem of the convolution's family:
    a size outside its range or not a multiple it must be, an assumption that fails; empty
    when it is one."""
    from threadmap.spec.expr import parse_relation
    from threadmap.sweep.extract_conv import family

    fam = family(cfg)
    for name, rng in fam.sizes.items():
        v = sizes.get(name)
        if v is None or not rng["min"] <= v <= rng["max"] or v % int(rng.get("multiple_of", 1)):
            return f"{name} = {v} is not in [{rng['min']}, {rng['max']}] (multiple of {rng.get('multiple_of', 1)})"
    for a in fam.assume:
        if not parse_relation(a).holds(sizes):
            return f"{a} fails at {sizes}"
    return ""


def _extent(expr: str, sizes: dict[str, int]) -> int:
    from threadmap.spec.expr import parse_expr

    return int(parse_expr(expr).eval(dict(sizes)))


def whole_tiles(cfg: Configuration, sizes: dict[str, int]) -> dict[str, int]:
    """The convolution's problem nearest ``sizes`` (the family's names: where the warning was
    found) whose implicit GEMM M, N and K are whole tiles: for each extent that is not, the
    first of its size names whose smallest larger value in the family's range makes it whole
    (the others kept).  At whole tiles every lane of every k-tile reads (no lane zero-fills a
    real k-tile), so the spec's accesses are the kernel's."""
    from threadmap.sweep.extract_conv import family

    fam = family(cfg)
    out = dict(sizes)
    exprs = [(fam.m, int(cfg.fields["threadblock"][0])), (fam.n, int(cfg.fields["threadblock"][1])),
             (fam.k, int(cfg.fields["threadblock"][2]))]

    def whole(s: dict[str, int], upto: int) -> bool:
        return all(_extent(e, s) % t == 0 for e, t in exprs[:upto])

    for i, (expr, _) in enumerate(exprs):
        if whole(out, i + 1):
            continue
        names = [n for n in fam.sizes if re.search(rf"\b{n}\b", expr)]
        found = None
        for name in sorted(names, key=lambda n: names.index(n)):
            rng = fam.sizes[name]
            for v in range(out[name] + 1, int(rng["max"]) + 1):
                cand = {**out, name: v}
                if whole(cand, i + 1) and not in_family(cfg, cand):
                    found = cand
                    break
            if found:
                break
        if found is None:
            raise ConfirmError(f"{cfg.kernels[0]}: no problem of its family near {sizes} at whole tiles "
                               f"({expr} a multiple of {exprs[i][1]})")
        out = found
    if why := in_family(cfg, out):
        raise ConfirmError(f"{cfg.kernels[0]}: {why}")
    return out


def conv_launch_sizes(cfg: Configuration, sizes: dict[str, int]) -> list[dict[str, int]]:
    """A convolution's launches: ``sizes`` (whole tiles), then the same problem with twice the
    k-tiles (the first of the GEMM K's size names, innermost first, whose double is in the
    family): every CTA's cleared stages are the same at both (:func:`conv_schedule`), so their
    difference is the k-tiles' cost."""
    from threadmap.sweep.extract_conv import family

    fam = family(cfg)
    names = [n for n in fam.sizes if re.search(rf"\b{n}\b", fam.k)]
    for name in sorted(names, key=lambda n: -fam.k.find(n)):
        cand = {**sizes, name: 2 * sizes[name]}
        if not in_family(cfg, cand):
            return [sizes, cand]
    return [sizes]


def problem_fields(cfg: Configuration, sizes: dict[str, int]) -> list[int]:
    """The convolution problem of ``sizes`` as the program takes it: the constructor fields of
    :data:`CONV_FIELDS` that :func:`threadmap.sweep.extract_conv.problem_cxx` writes (the
    family's padding, strides and mode), the mode 1 for ``kConvolution``."""
    from threadmap.sweep.extract_conv import problem_cxx

    text = problem_cxx(cfg, sizes)
    inner = text[text.index("(") + 1:text.rindex(")")]
    out = [1 if "kConvolution" in a else 0 if "kCrossCorrelation" in a else int(a) for a in inner.split(", ")]
    if len(out) != len(CONV_FIELDS[3 if cfg.kind == "conv3d" else 2]):
        raise ConfirmError(f"{cfg.kernels[0]}: the problem {text} does not have the constructor's fields")
    return out


def warp_gemm_iterations(kernel: str, cuda_version: str = DEFAULT_CUDA_VERSION) -> int:
    """``MmaBase::kWarpGemmIterations`` from the generator's description: the warp tile's K
    over the instruction's."""
    td = _operation(kernel, cuda_version)[1].tile_description
    warp_k = int(td.threadblock_shape[2]) // int(td.warp_count[2])
    return warp_k // int(td.math_instruction.instruction_shape[2])


#: the header of the 2.x convolutions' multistage mainloop, and the statements
#: :func:`conv_schedule` follows (as :data:`MAINLOOP_PREMISES`)
CONV_MAINLOOP_HEADER = "cutlass/conv/threadblock/implicit_gemm_multistage.h"
CONV_MAINLOOP_PREMISES = (
    ("the prologue issues kStages - 1 whole stages, counting a k-tile off each and advancing the iterators",
     r"for \(int stage = 0; stage < Base::kStages - 1; \+\+stage, --gemm_k_iterations\) \{ "
     r"iterator_A\.set_iteration_index\(0\);.*?for \(int j = 0; j < Detail::AsyncCopyIterationsPerStageA; \+\+j\)"
     r".*?for \(int j = 0; j < Detail::AsyncCopyIterationsPerStageB; \+\+j\).*?// Move to the next stage "
     r"iterator_A\.advance\(\); iterator_B\.advance\(\);"),
    ("every copy zero-fills where the iterator's access is not valid (prologue and mainloop)",
     r"\A(?:(?!cutlass::arch::cp_async<).)*\Z"),
    ("the copies of a group: A's and B's kAccessesPerGroup iterations from the group's start, zero-filling",
     r"void copy_tiles_and_advance\( IteratorA &iterator_A, IteratorB &iterator_B, int group_start_A = 0, "
     r"int group_start_B = 0\) \{ iterator_A\.set_iteration_index\(group_start_A \* IteratorA::kAccessesPerVector\);"
     r".*?for \(int j = 0; j < Detail::kAccessesPerGroupA; \+\+j\) \{ if \(group_start_A \+ j < "
     r"Detail::AsyncCopyIterationsPerStageA\) \{.*?cutlass::arch::cp_async_zfill<kSrcBytes, kCacheOpA>\( dst_ptr \+ v, "
     r"iterator_A\.get\(\), iterator_A\.valid\(\)\);.*?for \(int j = 0; j < Detail::kAccessesPerGroupB; \+\+j\) \{ "
     r"if \(group_start_B \+ j < Detail::AsyncCopyIterationsPerStageB\) \{.*?cutlass::arch::cp_async_zfill<kSrcBytes, "
     r"kCacheOpB>\( dst_ptr \+ v, iterator_B\.get\(\), iterator_B\.valid\(\)\);"),
    ("group 0 of the next stage is issued before the mainloop",
     r"// Start issuing the first group of the next stage outside of the mainloop "
     r"copy_tiles_and_advance\(iterator_A, iterator_B\); int smem_write_stage_idx = Base::kStages - 1;"),
    ("the mainloop runs while gemm_k_iterations > 1 - kStages, kWarpGemmIterations steps an iteration",
     r"for \(; gemm_k_iterations > \(-Base::kStages \+ 1\);\) \{.*?for \(int warp_mma_k = 0; warp_mma_k < "
     r"Base::kWarpGemmIterations; \+\+warp_mma_k\) \{"),
    ("step warp_mma_k issues group warp_mma_k + 1, the last step group 0",
     r"if \(warp_mma_k \+ 1 == Base::kWarpGemmIterations\) \{ group_start_iteration_A = 0; "
     r"group_start_iteration_B = 0; \} else \{ group_start_iteration_A = \(warp_mma_k \+ 1\) \* "
     r"Detail::kAccessesPerGroupA; group_start_iteration_B = \(warp_mma_k \+ 1\) \* Detail::kAccessesPerGroupB; \} "
     r"copy_tiles_and_advance\(iterator_A, iterator_B, group_start_iteration_A, group_start_iteration_B\);"),
    ("step kWarpGemmIterations - 2, after its group, advances the iterators and counts a k-tile off",
     r"copy_tiles_and_advance\(iterator_A, iterator_B, group_start_iteration_A, group_start_iteration_B\);.*?"
     r"if \(warp_mma_k \+ 2 == Base::kWarpGemmIterations\) \{.*?// Move to the next stage iterator_A\.advance\(\); "
     r"iterator_B\.advance\(\);.*?--gemm_k_iterations; \} \} \}"),
    ("no mask is cleared by the mainloop (an access is off where its iterator says so)", r"\A(?:(?!clear_mask).)*\Z"),
)
#: the kernel: every CTA runs the Params' k-tiles (``implicit_gemm_k_iterations``) from k-tile 0
CONV_KERNEL_HEADER = "cutlass/conv/kernel/implicit_gemm_convolution.h"
CONV_KERNEL_PREMISES = (
    ("the kernel's k-tiles are implicit_gemm_k_iterations of the problem",
     r"gemm_k_iterations = implicit_gemm_k_iterations\( kConvolutionalOperator, ThreadblockShape::kK, "
     r"args\.problem_size,"),
    ("the mainloop runs the Params' k-tiles",
     r"mma\(params\.gemm_k_iterations, accumulators, iterator_A, iterator_B, accumulators, "
     r"params\.gemm_k_iterations_per_channel\);"),
)


def conv_mainloop_premises(include: Path | None) -> list[str]:
    """The statements of :data:`CONV_MAINLOOP_PREMISES` and :data:`CONV_KERNEL_PREMISES` the
    CUTLASS headers under ``include`` do not hold (empty: :func:`conv_schedule` is their
    control flow)."""
    if include is None:
        return ["the CUTLASS headers were not found"]
    out = []
    for header, premises in ((CONV_MAINLOOP_HEADER, CONV_MAINLOOP_PREMISES),
                             (CONV_KERNEL_HEADER, CONV_KERNEL_PREMISES)):
        try:
            text = " ".join((include / header).read_text().split())
        except OSError as e:
            out.append(f"{header}: {e.strerror or e}")
            continue
        out += [what for what, pattern in premises if not re.search(pattern, text, re.S)]
    return out


def conv_schedule(stages: int, k_tiles: int, warp_gemm_iterations: int) -> Schedule:
    """``ImplicitGemmMultistage``'s copy stages, step by step as its C++ runs them
    (:data:`CONV_MAINLOOP_PREMISES`): the prologue copies ``kStages - 1`` whole stages; group 0
    of the next stage follows; each mainloop iteration (``kWarpGemmIterations`` steps) copies
    groups 1.. of its stage, advances at step ``kWarpGemmIterations - 2`` and copies group 0 of
    the next stage at its last step.  Nothing clears the masks: a stage past the last k-tile
    has every access off (the iterators' own bounds: ``describe`` walks them) and every copy
    is ``cp_async_zfill``, so it is executed, zero-filling.  The last group 0 is a stage of its
    own (``group_zero_fill``)."""
    if stages < 2 or k_tiles < 1 or warp_gemm_iterations < 2:
        raise ConfirmError(f"a multistage implicit GEMM has >= 2 stages, >= 1 k-tile and >= 2 warp steps, got "
                           f"{stages}, {k_tiles}, {warp_gemm_iterations}")
    groups: dict[int, set[int]] = {}
    tile, remaining = 0, k_tiles
    for _ in range(stages - 1):                                   # prologue: whole stages
        groups[tile] = set(range(warp_gemm_iterations))
        tile, remaining = tile + 1, remaining - 1
    groups.setdefault(tile, set()).add(0)                         # before the mainloop
    while remaining > 1 - stages:
        for wk in range(warp_gemm_iterations):
            group_ = 0 if wk + 1 == warp_gemm_iterations else wk + 1
            groups.setdefault(tile, set()).add(group_)
            if wk + 2 == warp_gemm_iterations:                    # advance after the group's copies
                tile, remaining = tile + 1, remaining - 1
    whole = [t for t, g in groups.items() if len(g) == warp_gemm_iterations]
    partial = [t for t, g in groups.items() if len(g) < warp_gemm_iterations]
    if any(groups[t] != {0} or t < k_tiles for t in partial):
        raise ConfirmError(f"a partial stage other than a cleared group 0: {groups}")
    real = sum(1 for t in whole if t < k_tiles)
    return Schedule(k_tiles, real, len(whole) - real, 0, len(partial))


#: what ``describe`` prints: ``TM-CONFIRM describe key=value ...``
_DESCRIBE = re.compile(r"^TM-CONFIRM describe (.*)$", re.M)


def describe(exe: Path, problems: Sequence[Sequence[int]], timeout: float = 300) -> list[dict[str, str]]:
    """The program's ``describe`` of each problem, run host-side (no GPU): the mainloop's
    constants, the Params' k-tiles and grid, the iterators' valid accesses before and past the
    last k-tile over every CTA."""
    args = [str(x) for p in problems for x in p]
    try:
        proc = subprocess.run([str(exe), "describe", *args], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as e:
        raise ConfirmError(f"{exe.name} describe: {e}") from None
    rows = [dict(kv.split("=", 1) for kv in m.group(1).split()) for m in _DESCRIBE.finditer(proc.stdout)]
    if proc.returncode != 0 or len(rows) != len(problems):
        raise ConfirmError(f"{exe.name} describe exited {proc.returncode}: {(proc.stderr or proc.stdout)[-300:]}")
    return rows


def conv_mainloop_form(sass: dict[str, Any], stages: int, per_stage: int, group0: int) -> tuple[bool | None, str]:
    """Whether the program's ``LDGSTS`` (:func:`sass_ldgsts`) are the conv mainloop's stream:
    outside loops the prologue's ``kStages - 1`` stages of ``per_stage`` and the first group's
    ``group0`` instructions per thread, inside the loop one stage, all the zero-fill form (True);
    None, and why, otherwise."""
    if "prologue" not in sass:
        return None, "no SASS read"
    pro, loop = sass["prologue"], sass["mainloop"]
    if pro != {"zfill": (stages - 1) * per_stage + group0}:
        return None, (f"the prologue's LDGSTS are {pro}, not {stages - 1} stages of {per_stage} and a group of "
                      f"{group0} zero-filling ones")
    if loop != {"zfill": per_stage}:
        return None, f"the mainloop's LDGSTS are {loop}, not one stage of {per_stage} zero-filling ones"
    return True, ""


def cp_async_stages(spec: str) -> dict[int, str]:
    """The spec's copy stages issued as ``cp.async``, by stage index: their atom."""
    import yaml

    doc = yaml.safe_load(spec)
    out: dict[int, str] = {}
    for i, st in enumerate(doc.get("stages", [])):
        atom = st.get("copy", {}).get("atom", "") if isinstance(st, dict) else ""
        if str(atom).startswith("SM80_CP_ASYNC"):
            out[i] = str(atom)
    return out


def bypasses(spec: str) -> bool:
    """Whether a cp.async stage of the spec is the bypassing form (``cp.async.cg``), whose
    shared writes the counters do not count by address (its shared side is not judged)."""
    return any("CACHEGLOBAL" in a for a in cp_async_stages(spec).values())


def predict(spec: str, sizes: dict[str, int], name: str = "spec") -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """The verifier's counts for the spec at ``sizes``, for the whole grid, summed over its
    cp.async stages (the kernel's counters do not tell A's from B's): ``{"global": {sectors,
    requests, ideal_sectors}, "shared": {wavefronts, instructions, ideal_wavefronts}}``, and what
    the run was (its grid, the per-stage numbers)."""
    import threadmap.api as api
    from threadmap.spec.load import loads_spec

    stages = cp_async_stages(spec)
    runs = api.verify_spec(loads_spec(spec, "yaml", name), sizes=sizes, checks=tuple(SIDES))
    if len(runs) != 1:
        raise ConfirmError(f"{name}: {len(runs)} size environments at {sizes} (one expected)")
    run = runs[0]
    counts = {side: dict.fromkeys(keys[1:], 0.0) for side, keys in SIDE_COUNTS.items()}
    per_stage: list[dict[str, Any]] = []
    for r in run.results:
        side = SIDES.get(r.check)
        # a cp.async stage's reads are its source side, its writes its destination side
        if r.stage not in stages or side is None or r.side != ("src" if side == "global" else "dst"):
            continue
        got = {k: float(getattr(r.summary, k)) for k in SIDE_COUNTS[side][1:]}
        for k, v in got.items():
            counts[side][k] += v
        per_stage.append({"stage": r.stage, "check": r.check, "side": r.side, "atom": stages[r.stage],
                          "totals": r.totals, **got})
    info = {"sizes": dict(run.sizes), "grid": list(run.grid), "blocks": run.blocks,
            "blocks_simulated": run.blocks_simulated, "totals": run.totals, "stages": per_stage}
    return counts, info


def cleared_stage(spec: str, sizes: dict[str, int], name: str = "spec", first_ktile: bool = False,
                  warp_gemm_iterations: int = 0) -> dict[str, float]:
    """One copy stage of every CTA with its masks cleared (the spec at ``sizes``, whose K is one
    k-tile; ``first_ktile``: the blocks of the first k-tile of a spec of several): its warp
    ``instructions``, and the ``wavefronts`` and ``ideal_wavefronts`` of its shared writes when
    every lane zero-fills (:func:`threadmap.hardware.ldgsts_wavefronts` of the spec's shared
    addresses, no lane reading global memory).  ``warp_gemm_iterations``: the first group of
    the stage alone (an implicit GEMM's ``copy_tiles_and_advance(.., 0, 0)``): per operand the
    first ``kAccessesPerGroup = ceil(iterations / kWarpGemmIterations)`` of its thread map's
    iterations (a thread's steps run iteration by iteration, contiguous first, as CUTLASS's
    ``set_iteration_index`` counts them); the iterations and the group of each shared tensor
    are in the result (``iterations.sA``, ``group.sA``)."""
    import numpy as np
    import yaml

    import threadmap.api as api
    from threadmap import hardware as hw
    from threadmap.spec.load import loads_spec

    loaded = loads_spec(spec, "yaml", name)
    model = api.models(loaded, sizes)[0]
    # blockIdx linearises bx fastest: the first k-tile's blocks come first
    ctas = model.grid[0] * model.grid[1] if first_ktile else model.num_blocks
    tables = api.simulate(loaded, sizes=sizes, blocks=np.arange(ctas))
    copies = cp_async_stages(spec)
    doc = yaml.safe_load(spec)
    out = {"instructions": 0.0, "wavefronts": 0.0, "ideal_wavefronts": 0.0, "ctas": float(ctas),
           "warps": float(-(-model.threads // hw.WARP_SIZE))}
    for _, dst in tables:
        if dst.stage not in copies or dst.memory != "shared":
            continue
        v = dst.vec
        n = len(dst) // dst.instruction_rows
        addr = dst.addr[::v].reshape(n, hw.WARP_SIZE)
        real = np.ones_like(addr, dtype=bool) if dst.valid is None else dst.valid[::v].reshape(n, hw.WARP_SIZE)
        if warp_gemm_iterations:
            # the thread map's vector (the access times kAccessesPerVector) and its iterations
            epa = int(doc["stages"][dst.stage]["copy"]["dst"]["thread_map"]["elements_per_access"])
            iterations, rest = divmod(dst.steps * dst.vec, epa)
            if rest or not iterations:
                raise ConfirmError(f"{name}: {dst.tensor}'s {dst.steps} steps of {dst.vec} elements are not whole "
                                   f"vectors of {epa}")
            per_group = -(-iterations // warp_gemm_iterations)
            out[f"iterations.{dst.tensor}"], out[f"group.{dst.tensor}"] = float(iterations), float(per_group)
            step = dst.step[::v].reshape(n, hw.WARP_SIZE)[:, 0]
            keep = step < per_group * (dst.steps // iterations)
            addr, real, n = addr[keep], real[keep], int(keep.sum())
        memo: dict[tuple[int, ...], hw.Wavefronts] = {}
        for i in range(n):
            lanes = tuple(int(addr[i, j]) if real[i, j] else -1 for j in range(hw.WARP_SIZE))
            base = min((a for a in lanes if a >= 0), default=0) // hw.LINE_BYTES * hw.LINE_BYTES
            key = tuple(a - base if a >= 0 else -1 for a in lanes)  # the banks repeat every 128 bytes
            if key not in memo:
                memo[key] = hw.ldgsts_wavefronts([(j, a, None) for j, a in enumerate(key) if a >= 0],
                                                 dst.access_bytes)
            w = memo[key]
            out["instructions"] += 1.0 if w.ideal else 0.0
            out["wavefronts"] += w.wavefronts
            out["ideal_wavefronts"] += w.ideal
    return out


def account(real: dict[str, dict[str, float]], cleared: dict[str, float], sch: Schedule,
            group: dict[str, float] | None = None) -> dict[str, dict[str, float]]:
    """The kernel's counts at one launch: the spec's k-tiles (``real``, :func:`predict`), and per
    CTA ``sch.zero_fill`` stages executed with every lane zero-filling (their store wavefronts, no
    global request) and ``sch.predicated_off`` stages issued with every lane off (no wavefront,
    not executed: measured on the H200, ``docs/hardware.md``); ``cleared`` is one such stage of
    every CTA (:func:`cleared_stage`); ``group`` the first group of one (``sch.group_zero_fill``
    such groups zero-fill besides)."""
    g, sh = real["global"], real["shared"]
    gz = {k: sch.group_zero_fill * (group or {}).get(k, 0.0)
          for k in ("instructions", "wavefronts", "ideal_wavefronts")}
    if sch.group_zero_fill and group is None:
        raise ConfirmError("a schedule with zero-filling groups needs their cleared group")
    executed = sh["instructions"] + sch.zero_fill * cleared["instructions"] + gz["instructions"]
    return {"global": {"sectors": g["sectors"], "requests": g["requests"], "ideal_sectors": g["ideal_sectors"]},
            "shared": {"wavefronts": sh["wavefronts"] + sch.zero_fill * cleared["wavefronts"] + gz["wavefronts"],
                       "instructions": executed, "sass_instructions": executed,
                       "issued": executed + sch.predicated_off * cleared["instructions"],
                       "ideal_wavefronts": sh["ideal_wavefronts"] + sch.zero_fill * cleared["ideal_wavefronts"]
                       + gz["ideal_wavefronts"]}}


def counters(row: dict[str, str]) -> dict[str, dict[str, float]]:
    """One kernel's ``LDGSTS`` counts from its ncu row, by side (those this ncu measured):
    :data:`threadmap.gpu.profile.LDGSTS_METRICS`' sectors and requests, and shared wavefronts
    over the SASS instructions executed (the issued count where there is no SASS one)."""
    from threadmap.gpu.profile import ldgsts

    out: dict[str, dict[str, float]] = {"global": {}, "shared": {}}
    wanted = (("global", "sectors", "sectors"), ("global", "requests", "requests"),
              ("shared", "wavefronts", "wavefronts"), ("shared", "bank_conflicts", "bank_conflicts"),
              ("shared", "issued", "instructions"), ("shared", "sass_instructions", "sass_instructions"))
    for side, key, quantity in wanted:
        v = ldgsts(row, quantity)
        if v is not None:
            out[side][key] = v
    sh = out["shared"]
    if "sass_instructions" in sh or "issued" in sh:
        sh["instructions"] = sh.get("sass_instructions", sh.get("issued", 0.0))
    return out


def minus(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """``a - b`` of the counts both hold."""
    return {k: a[k] - b[k] for k in a if k in b}


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= TOLERANCE * max(1.0, abs(a))


def judge(side: str, predicted: dict[str, float], measured: dict[str, float], bypass: bool = False) -> Side:
    """One side at one launch, the account beside the counters: it agrees when every count of
    :data:`COMPARED` both hold is the account's (and so the ratio).  ``bypass``: the kernel's
    cp.async is the bypassing form (``LDGSTS.BYPASS``), whose shared writes the counters do not
    give by address (measured, not compared)."""
    from threadmap.gpu.profile import NOT_COMPARABLE

    metric, num, den, ideal = SIDE_COUNTS[side]
    sd = Side(side, metric, predicted_raw=dict(predicted), measured_raw=dict(measured))
    if predicted.get(den):
        sd.predicted = predicted[num] / predicted[den]
        sd.ideal = predicted[ideal] / predicted[den]
    if num not in measured or den not in measured:
        sd.note = f"not measured: this ncu has no LDGSTS {num} or {den} metric"
        return sd
    sd.measured = measured[num] / measured[den] if measured[den] else 0.0
    if side == "shared" and bypass:
        sd.note = NOT_COMPARABLE
        return sd
    if sd.predicted is None:
        sd.note = "nothing predicted"
        return sd
    keys = [k for k in COMPARED[side] if k in predicted and k in measured]
    off = [k for k in keys if not _same(predicted[k], measured[k])]
    sd.agrees = not off
    if off:
        sd.note = ", ".join(f"{k} {measured[k]:g} (account {predicted[k]:g})" for k in off)
    return sd


def _zero_filling(operands: str) -> bool:
    # the zero-fill form takes the predicate as its last operand (``LDGSTS [R], [R.64], P0``)
    last = operands.replace(" ", "").split(",")[-1]
    return bool(re.fullmatch(r"!?(P[0-6T]|UP[0-6T])", last))


def sass_ldgsts(exe: Path) -> dict[str, Any]:
    """The executable's ``LDGSTS`` instructions: their widths (bits), whether any is the
    bypassing form, how many, and how many of each form outside and inside loops (``prologue``
    and ``mainloop``: ``zfill``, the zero-fill form, ``guarded``, ``@P`` without it, ``plain``);
    empty without cuobjdump."""
    from threadmap.gpu import toolchain
    from threadmap.gpu.sass import parse_sass

    if toolchain.find_tool("cuobjdump") is None:
        return {}
    try:
        kernels = parse_sass(toolchain.disassemble(exe))
    except toolchain.ToolchainError as e:
        return {"error": str(e)[:300]}
    ldgsts = [m for k in kernels for m in k.memory() if m.opcode == "LDGSTS"]
    forms: dict[str, dict[str, int]] = {"prologue": {}, "mainloop": {}}
    for m in ldgsts:
        form = "zfill" if _zero_filling(m.instruction.operands) else "guarded" if m.predicated else "plain"
        where = forms["mainloop" if m.in_loop else "prologue"]
        where[form] = where.get(form, 0) + 1
    return {"widths": sorted({m.bits for m in ldgsts}),
            "bypass": any("BYPASS" in m.instruction.modifiers for m in ldgsts), "static_instructions": len(ldgsts),
            **forms}


def mainloop_form(sass: dict[str, Any], stages: int, per_stage: int) -> tuple[bool | None, str]:
    """Whether the mainloop's cleared stages zero-fill (True) or are predicated off (False),
    read from the program's ``LDGSTS`` (:func:`sass_ldgsts`): the prologue unrolled, ``kStages -
    1`` stages of ``per_stage`` zero-fill instructions per thread, the mainloop's loop one stage
    of one form.  None, and why, when the SASS is not that."""
    if "prologue" not in sass:
        return None, "no SASS read"
    pro, loop = sass["prologue"], sass["mainloop"]
    if pro != {"zfill": (stages - 1) * per_stage}:
        return None, f"the prologue's LDGSTS are {pro}, not {stages - 1} stages of {per_stage} zero-filling ones"
    if loop == {"guarded": per_stage}:
        return False, ""
    if loop == {"zfill": per_stage}:
        return True, ""
    return None, f"the mainloop's LDGSTS are {loop}, not one stage of {per_stage} of one form"


def measure(ncu: str, exe: Path, launches: Sequence[dict[str, int]], metrics: Sequence[str],
            timeout: float = 300, args: Sequence[str] | None = None) -> tuple[list[dict[str, str]], str, str]:
    """The program under ``ncu --clock-control none``, launching the kernel once per size of
    ``launches`` (in order): the kernels' rows of counters, ncu's output, a note.  Should ncu
    refuse a listed ``ldgsts`` metric, it is run again without them (the others kept)."""
    from threadmap.gpu.profile import parse_ncu_csv

    if args is None:  # a GEMM program's: M N K [K...]
        args = [str(launches[0]["M"]), str(launches[0]["N"]), *(str(s["K"]) for s in launches)]

    def once(ms: Sequence[str]) -> subprocess.CompletedProcess[str]:
        cmd = [ncu, "--clock-control", "none", "--launch-count", str(len(launches)), "--metrics", ",".join(ms),
               "--csv", "--page", "raw", str(exe), *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)

    note = ""
    try:
        proc = once(metrics)
        asked = [m for m in metrics if "ldgsts" in m]
        if proc.returncode != 0 and asked:
            note = f"ncu failed with the ldgsts metrics ({', '.join(asked)}): {(proc.stderr or proc.stdout)[-400:]}"
            proc = once([m for m in metrics if m not in asked])
    except subprocess.TimeoutExpired:
        return [], "", f"ncu ran past {timeout:.0f} s"
    text = proc.stdout + ("\n" + proc.stderr if proc.stderr else "")
    rows = parse_ncu_csv(proc.stdout)
    if proc.returncode != 0 or len(rows) != len(launches):
        why = (proc.stderr or proc.stdout)[-600:]
        note = f"{note} ncu exited {proc.returncode} with {len(rows)} kernel rows: {why}"
    return rows, text, note.strip()


# --- the manifest (prepared on the CPU) and the device run ---------------------------------------

MANIFEST = "manifest.json"


def launch_sizes(sizes: dict[str, int], tile_k: int, stages: int) -> list[dict[str, int]]:
    """The launches of a target: the warning's sizes first, then K of one k-tile (``kStages - 2``
    zero-filling stages: their cost), ``kStages - 1`` and ``kStages + 1`` k-tiles (no zero-fill,
    the same ``kStages - 1`` predicated-off stages: the k-tiles' cost apart from the drain's)."""
    first = sizes["K"] // tile_k
    tiles = [first, *sorted({1, stages - 1, stages + 1} - {first})]
    return [{**sizes, "K": t * tile_k} for t in tiles]


def prepare(db: Path, folder: Path, kernels: Sequence[str] = (), compile_programs: bool = True,
            jobs: int = 1) -> dict[str, Any]:
    """Pick the targets from a sweep database (one per finding kind, or ``kernels``), write
    the manifest and each program's source into ``folder``, and compile them (cached)."""
    from threadmap.gpu import toolchain

    if not db.exists():
        raise ConfirmError(f"--db {db}: no such database")
    with Store(db) as store:
        results = list(store.done().values())
    targets = choose(results, kernels)
    if not targets:
        raise ConfirmError(f"--db {db}: no analysed configuration with a warning the counters measure")
    inc = toolchain.cutlass_include()
    manifest = {
        "cutlass": toolchain.cutlass_version(inc) if inc is not None else "?",
        "gencode": [list(g) for g in GENCODE],
        "targets": [asdict(t) for t in targets],
        "kinds_without_target": missing_kinds(results, targets),
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        sources = {t.kernel: program(t.kernel) for t in targets}
        for name, src in sources.items():
            (folder / f"{name}.cu").write_text(src)
        (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    except OSError as e:
        raise ConfirmError(f"{folder}: cannot write the manifest: {e.strerror or e}") from None
    if compile_programs:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            list(pool.map(build, sources.values()))
    return manifest


def load_manifest(folder: Path) -> list[Target]:
    try:
        doc = json.loads((folder / MANIFEST).read_text())
        return [Target(**t) for t in doc["targets"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfirmError(f"{folder / MANIFEST}: cannot read the manifest: {e}") from None


@dataclass
class Confirmation:
    """One target measured.  Per launch (``launches``, with the ``schedule`` of each CTA's copy
    stages): per side the account beside the counters (``sides``) and what the counters hold
    beyond the account (``residual``).  A finding kind is confirmed when on its side every
    launch's counters are the account's and cost more than its ideal (:func:`verdict`)."""

    kernel: str
    label: str
    kinds: list[str]
    launches: list[dict[str, int]]
    tile: list[int] = field(default_factory=list)
    stages: int = 0
    mainloop_zfill: bool | None = None
    schedule: list[dict[str, int]] = field(default_factory=list)
    cleared: dict[str, float] = field(default_factory=dict)
    sass: dict[str, Any] = field(default_factory=dict)
    sides: dict[str, list[Side]] = field(default_factory=dict)
    residual: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    confirmed: dict[str, bool | None] = field(default_factory=dict)
    prediction: list[dict[str, Any]] = field(default_factory=list)
    program: str = ""      # what the program printed (its launches)
    note: str = ""


def verdict(side: str, sides: Sequence[Side]) -> bool | None:
    """Whether one side's finding is confirmed by its launches: at every launch the counters
    are the account's (:func:`judge`) and cost more than ideal (the finding is real); None when
    it was not measured or cannot be compared."""
    _, num, _, ideal = SIDE_COUNTS[side]
    if not sides or any(s.agrees is None for s in sides):
        return None
    worse = all(s.measured_raw.get(num, 0.0) > s.predicted_raw.get(ideal, float("inf")) for s in sides)
    return bool(worse and all(s.agrees for s in sides))


def confirm_target(t: Target, exe: Path | None, ncu: str | None, metrics: Sequence[str],
                   out: Path | None = None) -> Confirmation:
    """Predict and measure one target (see the module docstring)."""
    from threadmap.gpu import toolchain

    if t.operation in CONV_KINDS:
        return confirm_conv_target(t, exe, ncu, metrics, out)
    tile, stages = mainloop_of(t.kernel)
    launches = launch_sizes(t.sizes, tile[2], stages)
    c = Confirmation(t.kernel, t.label, list(t.kinds), launches, tile, stages)
    unheld = mainloop_premises(toolchain.cutlass_include())
    notes = [f"the mainloop's source does not hold: {p}" for p in unheld]
    cleared = cleared_stage(t.spec, {**t.sizes, "K": tile[2]}, t.kernel)
    c.cleared = cleared
    bypass = bypasses(t.spec)
    if exe is not None:
        c.sass = sass_ldgsts(exe)
        bypass = bypass or bool(c.sass.get("bypass"))
        per_thread = cleared["instructions"] / (cleared["ctas"] * cleared["warps"])  # one LDGSTS a thread
        c.mainloop_zfill, why = mainloop_form(c.sass, stages, int(per_thread))
        if why:
            notes.append(why)
    preds = []
    for s in launches:
        real, info = predict(t.spec, s, t.kernel)
        sch = schedule(stages, -(-s["K"] // tile[2]), bool(c.mainloop_zfill))
        c.schedule.append(asdict(sch))
        preds.append(account(real, cleared, sch))
        c.prediction.append(info)
    # the account rests on the mainloop's source and the program's SASS: without them no verdict
    return _measured(c, t, exe, ncu, metrics, out, preds, notes, not unheld and c.mainloop_zfill is not None, bypass)


def _measured(c: Confirmation, t: Target, exe: Path | None, ncu: str | None, metrics: Sequence[str],
              out: Path | None, preds: list[dict[str, dict[str, float]]], notes: list[str], trusted: bool,
              bypass: bool, args: Sequence[str] | None = None) -> Confirmation:
    """Measure the target's launches, judge each side against the account (``preds``) and give
    the verdicts; ``trusted``: the account's premises held (otherwise no verdict)."""
    launches = c.launches
    meas: list[dict[str, dict[str, float]]] = []
    if exe is None or ncu is None:
        notes.append("not measured: " + ("no ncu" if ncu is None else "the program did not build"))
    else:
        rows, text, note = measure(ncu, exe, launches, metrics, args=args)
        notes.append(note)
        c.program = "\n".join(ln for ln in text.splitlines() if ln.startswith("TM-CONFIRM"))
        if out is not None:
            (out / f"ncu_{t.kernel}.csv").write_text(text)
        meas = [counters(r) for r in rows] if len(rows) == len(launches) else []
    c.note = "; ".join(n for n in notes if n)
    for side in SIDE_COUNTS:
        c.sides[side] = [judge(side, p[side], meas[i][side] if meas else {}, bypass) for i, p in enumerate(preds)]
        if not trusted:
            for sd in c.sides[side]:
                sd.agrees = None
        c.residual[side] = [minus(meas[i][side], p[side]) for i, p in enumerate(preds)] if meas else []
    for label in t.kinds:
        side = SIDES[label.split(": ", 1)[1].split(" ", 1)[0]]
        c.confirmed[label] = verdict(side, c.sides[side])
    return c


def conv_account(t: Target, described: Sequence[dict[str, str]] | None = None) -> dict[str, Any]:
    """A convolution target's launches and their account, on the CPU: the launches
    (:func:`conv_launch_sizes`) and their problems (:func:`problem_fields`), per launch the
    spec's k-tiles (:func:`predict`: its grid's z is the CTA's k-tiles), the schedule
    (:func:`conv_schedule`), a cleared stage and a cleared first group of every CTA
    (:func:`cleared_stage`) and the account (:func:`account`).  ``described``: the program's
    ``describe`` of each launch (:func:`describe`); each constant it prints that the account
    took otherwise, and any access valid past the last k-tile, is a ``mismatch``."""
    cfg = configuration(t.kernel)
    tile, stages = mainloop_of(t.kernel)
    w = warp_gemm_iterations(t.kernel)
    launches = conv_launch_sizes(cfg, t.sizes)
    out: dict[str, Any] = {"tile": tile, "stages": stages, "warp_gemm_iterations": w, "launches": launches,
                           "problems": [problem_fields(cfg, s) for s in launches], "schedules": [], "cleared": [],
                           "group": [], "accounts": [], "predictions": [], "mismatch": []}
    for i, s in enumerate(launches):
        real, info = predict(t.spec, s, t.kernel)
        cleared = cleared_stage(t.spec, s, t.kernel, first_ktile=True)
        group0 = cleared_stage(t.spec, s, t.kernel, first_ktile=True, warp_gemm_iterations=w)
        sch = conv_schedule(stages, int(info["grid"][2]), w)
        out["schedules"].append(sch)
        out["cleared"].append(cleared)
        out["group"].append(group0)
        out["accounts"].append(account(real, cleared, sch, group0))
        out["predictions"].append(info)
        if described is None:
            continue
        d = described[i]
        want = {"stages": stages, "warp_gemm_iterations": w, "k_iterations": sch.k_tiles,
                "grid": f"{info['grid'][0]}x{info['grid'][1]}x1", "valid_past_end": 0,
                "iterations_a": group0.get("iterations.sA"), "iterations_b": group0.get("iterations.sB"),
                "group_a": group0.get("group.sA"), "group_b": group0.get("group.sB")}
        for k, v in want.items():
            got = d.get(k)
            if got is None or (str(got) != str(v) and not (isinstance(v, float) and float(got) == v)):
                out["mismatch"].append(f"launch {i}: the kernel's {k} is {got}, the account's {v}")
    return out


def confirm_conv_target(t: Target, exe: Path | None, ncu: str | None, metrics: Sequence[str],
                        out: Path | None = None) -> Confirmation:
    """Predict and measure one convolution target: :func:`confirm_target` with the implicit
    GEMM's mainloop (:func:`conv_schedule`, :data:`CONV_MAINLOOP_PREMISES`), the program's
    ``describe`` (run host-side) checking the constants and the k-tiles the account takes,
    and the program launched once per problem of :func:`conv_launch_sizes`."""
    from threadmap.gpu import toolchain

    notes: list[str] = []
    described = None
    if exe is not None:
        cfg = configuration(t.kernel)
        try:
            described = describe(exe, [problem_fields(cfg, s) for s in conv_launch_sizes(cfg, t.sizes)])
        except ConfirmError as e:
            notes.append(str(e))
    acc = conv_account(t, described)
    c = Confirmation(t.kernel, t.label, list(t.kinds), acc["launches"], acc["tile"], acc["stages"])
    unheld = conv_mainloop_premises(toolchain.cutlass_include())
    notes += [f"the mainloop's source does not hold: {p}" for p in unheld] + acc["mismatch"]
    c.schedule = [asdict(s) for s in acc["schedules"]]
    c.cleared = {**acc["cleared"][0], **{f"group_{k}": v for k, v in acc["group"][0].items()}}
    c.prediction = acc["predictions"]
    bypass = bypasses(t.spec)
    if exe is not None:
        c.sass = sass_ldgsts(exe)
        bypass = bypass or bool(c.sass.get("bypass"))
        cl, g0 = acc["cleared"][0], acc["group"][0]
        per_thread = cl["instructions"] / (cl["ctas"] * cl["warps"])      # one LDGSTS a thread
        group_thread = g0["instructions"] / (g0["ctas"] * g0["warps"])
        c.mainloop_zfill, why = conv_mainloop_form(c.sass, acc["stages"], int(per_thread), int(group_thread))
        if why:
            notes.append(why)
    trusted = not unheld and not acc["mismatch"] and described is not None and c.mainloop_zfill is not None
    args = [str(x) for p in acc["problems"] for x in p]
    c = _measured(c, t, exe, ncu, metrics, out, acc["accounts"], notes, trusted, bypass, args)
    if described is not None:  # describe's lines before the launches'
        c.program = "\n".join(
            [f"TM-CONFIRM describe {' '.join(f'{k}={v}' for k, v in d.items())}" for d in described]
            + [ln for ln in c.program.splitlines() if not ln.startswith("TM-CONFIRM describe")])
    return c


def device_name() -> str:
    try:
        proc = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
        return proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def run(folder: Path, out: Path, jobs: int = 1) -> dict[str, Any]:
    """The device run: build (cached), predict, measure, compare; writes ``confirm.json`` and
    ``confirm.md`` into ``out`` and returns the report."""
    from threadmap.gpu import toolchain
    from threadmap.gpu.profile import available_metrics

    start = time.time()
    targets = load_manifest(folder)
    ncu = toolchain.find_tool("ncu")
    if ncu is None:  # before the builds: minutes of nvcc for nothing measured
        raise ConfirmError("ncu (Nsight Compute) not found: `run` measures with it on the GPU machine "
                           "(`prepare` builds the programs without it)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfirmError(f"--out {out}: cannot create it: {e.strerror or e}") from None
    notes: list[str] = []

    def built(t: Target) -> Path | None:
        try:
            return build(program(t.kernel))
        except toolchain.ToolchainError as e:
            notes.append(f"{t.kernel}: does not build: {str(e)[-800:]}")
            return None

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        exes = list(pool.map(built, targets))
    # the global and shared counters, and per LDGSTS quantity the first way this ncu lists
    metrics = list(dict.fromkeys(available_metrics(ncu, True)))
    results = [confirm_target(t, exe, ncu, metrics, out) for t, exe in zip(targets, exes, strict=True)]
    device = device_name()
    report = {"device": device, "ncu": ncu or "", "metrics": metrics, "notes": notes,
              "seconds": round(time.time() - start, 1), "confirmations": [asdict(r) for r in results]}
    (out / "confirm.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "confirm.md").write_text(markdown(results, device))
    return report


def _num(x: float | None) -> str:
    # counts are whole: print them whole, so that equal and unequal counts read as such
    return "-" if x is None else f"{x:.0f}" if float(x).is_integer() else f"{x:.4g}"


def _yes(x: bool | None) -> str:
    return "n/a" if x is None else "yes" if x else "no"


def _group(sch: dict[str, int]) -> str:
    # a convolution's first group of a stage, zero-filling alone
    return f" (and {sch['group_zero_fill']} first group)" if sch.get("group_zero_fill") else ""


def sizes_text(s: dict[str, int]) -> str:
    """A launch's sizes: a GEMM's M, N, K; a convolution's size names with their values."""
    if set(s) == {"M", "N", "K"}:
        return f"{s['M']}, {s['N']}, {s['K']}"
    return " ".join(f"{k}={v}" for k, v in s.items())


def markdown(results: Sequence[Confirmation], device: str = "") -> str:
    """The table of the confirmations: per finding kind, kernel and launch, the copy stages
    each CTA issues (k-tiles, zero-filling, predicated off), the side it is measured on, the
    account's counts and ideal, the counters', and the verdict of the kind (all its launches)."""
    lines = [f"Measured on {device or 'the GPU'} with `ncu --clock-control none` "
             "(`python3 -m threadmap.sweep.confirm run`).", "",
             "| finding kind | kernel | M, N, K | stages per CTA (k-tiles + zero-fill + off) | side | "
             "account (ideal) | measured | confirmed |",
             "|---|---|---|---|---|---|---|---|"]
    for c in results:
        for label in c.kinds:
            side = SIDES[label.split(": ", 1)[1].split(" ", 1)[0]]
            keys = COMPARED[side]
            ideal = SIDE_COUNTS[side][3]
            for i, s0 in enumerate(c.launches):
                sd = c.sides[side][i]
                sch = c.schedule[i] if i < len(c.schedule) else {}
                acc = " / ".join(_num(sd.predicted_raw.get(k)) for k in keys)
                me = " / ".join(_num(sd.measured_raw.get(k)) for k in keys) if sd.measured_raw else "-"
                notes = "; ".join(dict.fromkeys(n for n in (sd.note, c.note if i == 0 else "") if n))
                verdict_cell = _yes(c.confirmed.get(label)) if i == 0 else ""
                lines.append(f"| {label if i == 0 else ''} | {f'`{c.kernel}`' if i == 0 else ''} | "
                             f"{sizes_text(s0)} | {sch.get('real', '-')} + "
                             f"{sch.get('zero_fill', '-')}{_group(sch)} + {sch.get('predicated_off', '-')} | "
                             f"{side} ({' / '.join(keys)}) | {acc} "
                             f"({_num(sd.predicted_raw.get(ideal))}) | {me} | "
                             f"{verdict_cell}{f' ({notes})' if notes else ''} |")
    return "\n".join(lines) + "\n"


# --- command line -------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    """``python -m threadmap.sweep.confirm prepare|run``; exit status 0 every finding kind
    confirmed (run) or prepared, 1 some not confirmed, 2 bad input, 3 internal error."""
    ap = argparse.ArgumentParser(prog="python -m threadmap.sweep.confirm",
                                 description="Confirm the sweep's findings on a GPU (docs/sweep.md).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="pick the kernels, write the manifest and the programs, compile them")
    p.add_argument("--db", required=True, type=Path, help="a sweep database")
    p.add_argument("--kernels", default="", help="comma-separated kernel names to measure besides one per finding kind")
    p.add_argument("--dir", default=Path("tools/gpu/sweep_confirm"), type=Path, help="where the manifest goes")
    p.add_argument("--no-compile", action="store_true", help="write the programs without compiling them")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    r = sub.add_parser("run", help="on the GPU machine: build, predict, measure under ncu, compare")
    r.add_argument("--dir", default=Path("tools/gpu/sweep_confirm"), type=Path, help="the manifest's folder")
    r.add_argument("--out", required=True, type=Path, help="where confirm.json, confirm.md and ncu's output go")
    r.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    for q in (p, r):
        q.add_argument("--cache", type=Path, default=None,
                       help="the compile cache (THREADMAP_CACHE) for the programs' builds")
    args = ap.parse_args(argv)
    if args.cache is not None and args.cache.exists() and not args.cache.is_dir():
        print(f"error: --cache {args.cache}: is not a folder", file=sys.stderr)
        return 2
    if args.cache is not None:
        os.environ["THREADMAP_CACHE"] = str(args.cache.resolve())
    try:
        if args.cmd == "prepare":
            names = [k.strip() for k in args.kernels.split(",") if k.strip()]
            m = prepare(args.db, args.dir, names, not args.no_compile, args.jobs)
            for t in m["targets"]:
                print(f"{t['kernel']}: {'; '.join(t['kinds'])} at "
                      + " ".join(f"{k}={v}" for k, v in t["sizes"].items()))
            for k in m["kinds_without_target"]:
                print(f"no program for: {k}")
            return 0
        rep = run(args.dir, args.out, args.jobs)
        print((args.out / "confirm.md").read_text(), end="")
        for n in rep["notes"]:
            print(n, file=sys.stderr)
        verdicts = [v for c in rep["confirmations"] for v in c["confirmed"].values()]
        return 0 if verdicts and all(v is True for v in verdicts) else 1
    except ToolchainError as e:  # a program of the library's kernels that does not build: ours to fix
        print(f"internal error: {e}".splitlines()[0], file=sys.stderr)
        return 3
    except ThreadmapError as e:
        print(f"error: {e}".splitlines()[0], file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
