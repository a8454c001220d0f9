"""What a 3.x (sm90a) GEMM configuration's mainloop is, read from CUTLASS's own CollectiveBuilder.

One C++ translation unit per batch of configurations: each configuration's first kernel is
declared with the generator's own emitter (``EmitGemmUniversal3xInstance``: the text the
library compiles), and the program prints, for the kernel's ``CollectiveMainloop``:

* the collective's and the dispatch policy's types, ``DispatchPolicy::Stages``, the tile and
  cluster shapes, the kernel's ``MaxThreadsPerBlock`` and its MMA warpgroups;
* per operand: the element (and the type TMA moves, ``InternalElementA``), the global stride
  type, the GMMA shared layout atom the builder chose (``SmemLayoutAtomA``), the shared layout
  (``SmemLayoutA``, printed by ``cute::print``) and its offset at every cell (m, k, stage), the
  global copy atom (``GmemTiledCopyA``: ``SM90_TMA_LOAD`` or ``..._MULTICAST``);
* the ``TiledMma`` and whether its A and B are read through GMMA descriptors (the SS form);
* the TMA transaction bytes per stage (``TmaTransactionBytesMK`` / ``NK``) and the two TMA
  descriptors, as the collective's own host code (``to_underlying_arguments``) builds them for
  a sample problem: the program defines ``cuTensorMapEncodeTiled`` itself (CUTLASS's direct
  driver call) and prints its arguments.

Compiled as CUDA for sm_90a (the 3.x kernel headers need it) and run on the host; nothing of it
runs on a GPU.  The printed fields are kept in the compile cache (``sweep3x_KEY.json.gz``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from threadmap.sweep.batch import BatchProgram, output_context, run_batch
from threadmap.sweep.library import Configuration

#: the problem the program builds the TMA descriptors for (M, N, K, L): multiples of every tile
SAMPLE_PROBLEM = (4096, 2048, 1024, 1)

_LINE = re.compile(r"^(c\d+)\t([A-Za-z_.]+)\t(.*)$")

PRELUDE = """\
#define CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL 1
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <cuda.h>
#include <threadmap_spec.h>
#include <cutlass/cutlass.h>
#include <cutlass/gemm/gemm.h>
#include <cutlass/numeric_types.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/detail/blockwise_scale_layout.hpp>

namespace tm_sweep3x { const char* current = "?"; }

// the collective's host code encodes its TMA descriptors through this (the direct driver call):
// print what it asks for, under the configuration being printed
extern "C" CUresult cuTensorMapEncodeTiled(CUtensorMap*, CUtensorMapDataType fmt, cuuint32_t rank, void* addr,
    const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* estr,
    CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  std::printf("%s\\ttma\\tfmt=%d rank=%u addr=%llu dims=", tm_sweep3x::current, (int)fmt, rank,
              (unsigned long long)addr);
  for (unsigned i = 0; i < rank; ++i) std::printf("%llu,", (unsigned long long)dims[i]);
  std::printf(" strides=");
  for (unsigned i = 0; i + 1 < rank; ++i) std::printf("%llu,", (unsigned long long)strides[i]);
  std::printf(" box=");
  for (unsigned i = 0; i < rank; ++i) std::printf("%u,", box[i]);
  std::printf(" estr=");
  for (unsigned i = 0; i < rank; ++i) std::printf("%u,", estr[i]);
  std::printf(" il=%d sw=%d l2=%d oob=%d\\n", (int)il, (int)sw, (int)l2, (int)oob);
  return CUDA_SUCCESS;
}

namespace tm_sweep3x {

template <class T> void type(const char* id, const char* key) {
  std::printf("%s\\t%s\\t%s\\n", id, key, threadmap::detail::type_name<T>().c_str());
}

template <class T> void cute_print(const char* id, const char* key, T const& x) {
  std::printf("%s\\t%s\\t", id, key);
  cute::print(x);
  std::printf("\\n");
}

template <class T> void name_of(const char* id, const char* key) {
  const char* n = threadmap::detail::element_name<std::remove_cv_t<T>>::value;
  std::printf("%s\\t%s\\t%s\\n", id, key, n ? n : ("?" + threadmap::detail::type_name<T>()).c_str());
}

// a packed (rows, K, L) stride of the collective's stride type: K-major or MN-major
template <class Stride> Stride packed(int rows, int k, int l) {
  Stride s{};
  if constexpr (cutlass::gemm::detail::is_major<0, Stride>()) cute::get<1>(s) = rows;
  else cute::get<0>(s) = k;
  if constexpr (!cute::is_static_v<std::remove_reference_t<decltype(cute::get<2>(s))>>) cute::get<2>(s) = rows * k;
  (void)l;
  return s;
}

template <class M, class = void> struct tma_ss : std::false_type {};
template <class M>
struct tma_ss<M, std::void_t<typename M::SmemLayoutAtomA, typename M::SmemLayoutA, typename M::GmemTiledCopyA,
                             typename M::InternalElementA, decltype(M::TmaTransactionBytesMK),
                             decltype(std::declval<typename M::Arguments>().ptr_A)>> : std::true_type {};

// the element offset of every cell as the kernel addresses it: the layout on a shared pointer
// at a 1024-byte aligned address (the swizzle of a GMMA atom acts on the address bits)
template <class T, class Layout> void table(const char* id, const char* key, Layout const& layout) {
  std::printf("%s\\t%s\\t", id, key);
  if constexpr (cute::sizeof_bits_v<T> % 8 == 0) {
    T* base = reinterpret_cast<T*>(std::uintptr_t(1) << 20);
    auto s = cute::make_tensor(cute::make_smem_ptr(base), layout);
    for (int i = 0; i < int(cute::size(layout)); ++i)
      std::printf("%lld ", (long long)(&s(i) - base));  // the address only: nothing is read
  }
  std::printf("\\n");
}

template <class K, class = void> struct kernel_storage : std::false_type {};
template <class K>
struct kernel_storage<K, std::void_t<decltype(std::declval<typename K::SharedStorage&>().tensors.mainloop.smem_A)>>
    : std::true_type {};

// where the kernel's shared storage puts the two buffers, and its alignment
template <class Kernel> void storage(const char* id) {
  if constexpr (kernel_storage<Kernel>::value) {
    using SS = typename Kernel::SharedStorage;  // not default-constructible: addresses in raw storage
    alignas(SS) static char raw[sizeof(SS)];
    auto& ss = *reinterpret_cast<SS*>(raw);
    auto at = [&](auto const& x) { return (long long)(reinterpret_cast<char const*>(&x) -
                                                      reinterpret_cast<char const*>(&ss)); };
    std::printf("%s\\tstorage\\t%d %lld %lld\\n", id, int(alignof(typename Kernel::SharedStorage)),
                at(ss.tensors.mainloop.smem_A), at(ss.tensors.mainloop.smem_B));
  }
}

template <class Kernel> void mainloop(const char* id) {
  using CM = typename Kernel::CollectiveMainloop;
  current = id;
  type<CM>(id, "collective");
  type<typename CM::DispatchPolicy>(id, "policy");
  if constexpr (tma_ss<CM>::value) {
    using TM = typename CM::TiledMma;
    constexpr bool ss = cute::is_base_of<cute::GMMA::DescriptorIterator, typename TM::FrgTypeA>::value &&
                        cute::is_base_of<cute::GMMA::DescriptorIterator, typename TM::FrgTypeB>::value;
    std::printf("%s\\tmainloop\\t%s\\n", id, ss ? "tma_gmma_ss" : "tma_gmma_rs");
    std::printf("%s\\tstages\\t%d\\n", id, int(CM::DispatchPolicy::Stages));
    cute_print(id, "tile", typename CM::TileShape{});
    cute_print(id, "cluster", typename CM::DispatchPolicy::ClusterShape{});
    std::printf("%s\\tthreads\\t%d\\n", id, int(Kernel::MaxThreadsPerBlock));
    std::printf("%s\\tmma_threads\\t%d\\n", id, int(cute::size(TM{})));
    type<TM>(id, "tiled_mma");
    std::printf("%s\\ttx_bytes\\t%u %u\\n", id, unsigned(CM::TmaTransactionBytesMK),
                unsigned(CM::TmaTransactionBytesNK));
    name_of<typename CM::ElementA>(id, "A.element");
    name_of<typename CM::InternalElementA>(id, "A.internal");
    std::printf("%s\\tA.bits\\t%d\\n", id, int(cute::sizeof_bits_v<typename CM::InternalElementA>));
    type<typename CM::StrideA>(id, "A.stride");
    type<typename CM::SmemLayoutAtomA>(id, "A.atom");
    cute_print(id, "A.atom_print", typename CM::SmemLayoutAtomA{});
    cute_print(id, "A.smem", typename CM::SmemLayoutA{});
    table<typename TM::ValTypeA>(id, "A.table", typename CM::SmemLayoutA{});
    type<typename CM::GmemTiledCopyA>(id, "A.copy");
    name_of<typename CM::ElementB>(id, "B.element");
    name_of<typename CM::InternalElementB>(id, "B.internal");
    std::printf("%s\\tB.bits\\t%d\\n", id, int(cute::sizeof_bits_v<typename CM::InternalElementB>));
    type<typename CM::StrideB>(id, "B.stride");
    type<typename CM::SmemLayoutAtomB>(id, "B.atom");
    cute_print(id, "B.atom_print", typename CM::SmemLayoutAtomB{});
    cute_print(id, "B.smem", typename CM::SmemLayoutB{});
    table<typename TM::ValTypeB>(id, "B.table", typename CM::SmemLayoutB{});
    storage<Kernel>(id);
    type<typename CM::GmemTiledCopyB>(id, "B.copy");
    // the descriptors, as the kernel's host code makes them (A first, then B)
    constexpr int M = %(M)d, N = %(N)d, K = %(K)d, L = %(L)d;
    typename Kernel::ProblemShape problem{M, N, K, L};
    typename CM::Arguments args{};
    args.ptr_A = reinterpret_cast<typename CM::ElementA const*>(std::uintptr_t(1) << 20);
    args.ptr_B = reinterpret_cast<typename CM::ElementB const*>(std::uintptr_t(1) << 21);
    args.dA = packed<typename CM::StrideA>(M, K, L);
    args.dB = packed<typename CM::StrideB>(N, K, L);
    (void)CM::to_underlying_arguments(problem, args, nullptr);
  } else {
    std::printf("%s\\tmainloop\\t?%s\\n", id, threadmap::detail::type_name<CM>().c_str());
  }
}

}  // namespace tm_sweep3x
""".replace("%(M)d", str(SAMPLE_PROBLEM[0])).replace("%(N)d", str(SAMPLE_PROBLEM[1])) \
   .replace("%(K)d", str(SAMPLE_PROBLEM[2])).replace("%(L)d", str(SAMPLE_PROBLEM[3]))


def _emitted(cfg: Configuration, cid: str) -> str:
    """The library's declaration of the configuration's first kernel, named ``cid``."""
    from cutlass_library import gemm_operation as go

    op = cfg.operation
    return go.EmitGemmUniversal3xInstance().emit(op).replace(op.procedural_name(), f"{cid}_kernel")


def program(configs: Sequence[Configuration]) -> str:
    """The batch's translation unit: each configuration's kernel, and a main printing them."""
    parts = [PRELUDE]
    calls = []
    for i, cfg in enumerate(configs):
        cid = f"c{i}"
        parts.append(_emitted(cfg, cid))
        calls.append(f'  tm_sweep3x::mainloop<{cid}_kernel_base>("{cid}");')
    parts.append("int main() {\n" + "\n".join(calls) + "\n  return 0;\n}\n")
    return "\n".join(parts)


@dataclass
class TmaDesc:
    """One ``cuTensorMapEncodeTiled`` call's arguments, as CuTe made them."""

    data_type: int
    rank: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]      # bytes, without the implicit first
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: int
    swizzle: int
    l2: int
    oob: int


@dataclass
class Operand3x:
    """One operand of a 3.x mainloop as the C++ objects describe it."""

    element: str          # spec element name, or "?<C++ type>"
    internal: str         # the type TMA moves (tf32 for f32, a same-width uint otherwise)
    bits: int
    stride: str           # the collective's global stride type
    atom: str             # the GMMA shared layout atom the builder chose (its type)
    atom_print: str       # the atom as cute::print writes it
    smem: str             # cute::print of SmemLayoutA/B
    table: np.ndarray     # offset of every (mn, k, stage) cell, colexicographic
    copy: str             # the global copy atom (SM90_TMA_LOAD or ..._MULTICAST)
    tma: TmaDesc | None = None


@dataclass
class Extracted3x:
    """A configuration's 3.x mainloop, or why it could not be read."""

    mainloop: str = ""
    collective: str = ""
    policy: str = ""
    stages: int = 0
    tile: tuple[int, int, int] = (0, 0, 0)
    cluster: tuple[int, int, int] = (1, 1, 1)
    threads: int = 0
    mma_threads: int = 0
    tiled_mma: str = ""
    tx_bytes: tuple[int, int] = (0, 0)
    #: alignof(Kernel::SharedStorage) and the byte offsets of smem_A and smem_B in it (0s: not printed)
    storage: tuple[int, int, int] = (0, 0, 0)
    operands: dict[str, Operand3x] = field(default_factory=dict)
    error: str = ""
    error_kind: str = ""


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


_TMA = re.compile(r"fmt=(\d+) rank=(\d+) addr=\d+ dims=([\d,]*) strides=([\d,]*) box=([\d,]*) estr=([\d,]*) "
                  r"il=(\d+) sw=(\d+) l2=(\d+) oob=(\d+)")


def parse_tma(text: str) -> TmaDesc:
    m = _TMA.search(text)
    if m is None:
        raise ValueError(f"unreadable TMA descriptor line: {text[:120]}")
    g = m.groups()
    return TmaDesc(int(g[0]), int(g[1]), tuple(_ints(g[2])), tuple(_ints(g[3])), tuple(_ints(g[4])),
                   tuple(_ints(g[5])), int(g[6]), int(g[7]), int(g[8]), int(g[9]))


def split_output(output: str, n: int) -> list[dict[str, str]]:
    """The program's lines as fields per configuration; the TMA lines (two per configuration,
    A then B) as ``tma.A`` and ``tma.B``."""
    by: dict[str, dict[str, str]] = {f"c{i}": {} for i in range(n)}
    for line in output.splitlines():
        m = _LINE.match(line)
        if m and m.group(1) in by:
            f = by[m.group(1)]
            key = m.group(2)
            if key == "tma":
                key = "tma.A" if "tma.A" not in f else "tma.B"
            f[key] = m.group(3).strip()
    return [by[f"c{i}"] for i in range(n)]


def _operand(f: dict[str, str], w: str) -> Operand3x:
    g = {k[2:]: v for k, v in f.items() if k.startswith(f"{w}.")}
    tma = parse_tma(f[f"tma.{w}"]) if f"tma.{w}" in f else None
    return Operand3x(g["element"], g["internal"], int(g["bits"]), g["stride"], g["atom"], g["atom_print"], g["smem"],
                     np.asarray(_ints(g["table"]), dtype=np.int64), g["copy"], tma)


def parse_fields(f: dict[str, str]) -> Extracted3x:
    """One configuration's printed fields as an :class:`Extracted3x`."""
    if "mainloop" not in f:
        return Extracted3x(error="the extraction program printed nothing for this configuration",
                           error_kind="extraction output incomplete")
    if f["mainloop"].startswith("?"):
        return Extracted3x(mainloop=f["mainloop"][1:], collective=f.get("collective", ""),
                           error_kind="mainloop is not a TMA GMMA collective",
                           error=f"the mainloop is not a TMA + GMMA collective: {f.get('collective', '')[:200]}")
    try:
        tile = _ints(f["tile"])
        cluster = _ints(f["cluster"])
        tx = _ints(f["tx_bytes"])
        st = _ints(f.get("storage", "0 0 0"))
        return Extracted3x(f["mainloop"], f["collective"], f["policy"], int(f["stages"]),
                           (tile[0], tile[1], tile[2]), (cluster[0], cluster[1], cluster[2]), int(f["threads"]),
                           int(f["mma_threads"]), f["tiled_mma"], (tx[0], tx[1]), (st[0], st[1], st[2]),
                           {w: _operand(f, w) for w in ("A", "B")})
    except (KeyError, ValueError, IndexError) as e:
        return Extracted3x(error=f"the extraction program's output is incomplete ({type(e).__name__}: {e})",
                           error_kind="extraction output incomplete")


def output_key(cfg: Configuration) -> str:
    """The cache key of one configuration's printed fields (its kernel text, the program
    around it, the headers)."""
    text = "\0".join([PRELUDE, _emitted(cfg, "c"), output_context()])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


#: the 3.x extractor's batched program (:mod:`threadmap.sweep.batch`)
BATCH: BatchProgram[Extracted3x] = BatchProgram(
    prefix="sweep3x", key=output_key, source=program, split=split_output, parse=parse_fields,
    failed=lambda error, kind: Extracted3x(error=error, error_kind=kind), opt="-O0", archs=("sm_90a",))


def extract(configs: Sequence[Configuration]) -> list[Extracted3x]:
    """Each configuration's mainloop as its C++ objects print it (from the compile cache when a
    batch printed it before)."""
    return run_batch(BATCH, configs)
