"""What a 2.x GEMM configuration's mainloop really does, read from the real templates.

One C++ translation unit per batch of configurations: each configuration's kernel is declared
with the generator's own emitter (``EmitGemmUniversalInstance``, ``EmitGemmGroupedInstance``:
the text the library compiles), and the program prints, per operand of the kernel's mainloop
(``GemmKernel::Mma``, a ``MmaMultistage`` on SM80), what the global to shared copy is made of:

* the global iterator's element, layout, tile shape, access width, accesses per thread-map
  vector and cp.async cache operation (``IteratorA::AccessType``, ``kCacheOpA``);
* its thread map as ``threadmap_spec.h`` writes it (``side(...).thread_map<ThreadMap>()``),
  and, for the global and the shared iterator's thread maps, every thread's
  ``initial_offset``, ``Iterations`` and ``Delta`` (the shared iterator may use another map);
* the shared layout's type and its offset at every cell of one stage's tile, from the layout
  object the mainloop builds (``Operator::LayoutA::packed(SharedStorage::ShapeA)``, what
  ``SharedStorage::LayoutA()`` returns).

The kernel headers need CUDA's builtins, so the program is compiled as CUDA for sm_80
(``toolchain.build_host``: the compile cache and header discovery of ``threadmap gpu``) and run
on the host; nothing of it runs on a GPU.  Each configuration's printed fields are kept in the
compile cache too (``sweep_KEY.json.gz``), so a configuration is compiled once whichever batch
it falls in (a resumed sweep batches the remaining configurations otherwise).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from threadmap.sweep.batch import BatchProgram, output_context, run_batch
from threadmap.sweep.extracted import Extracted, parse_operand, printed_ints
from threadmap.sweep.library import CONV_KINDS, INTERLEAVED_GEMM, PLANAR_FAMILIES, SPARSE_FAMILY, Configuration

#: a batch's program prints ``ID<TAB>FIELD<TAB>VALUE`` lines
_LINE = re.compile(r"^(c\d+)\t([A-Za-z0-9_.]+)\t(.*)$")

PRELUDE = """\
#include <cstdio>
#include <string>
#include <type_traits>
#include <threadmap_spec.h>
#include <cutlass/gemm/kernel/default_gemm_universal.h>
#include <cutlass/gemm/kernel/default_gemm_grouped.h>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/threadblock/threadblock_swizzle.h>

namespace tm_sweep {

template <class T> void name_of(const char* id, const char* key) {
  const char* n = threadmap::detail::element_name<std::remove_cv_t<T>>::value;
  std::printf("%s\\t%s\\t%s\\n", id, key, n ? n : ("?" + threadmap::detail::type_name<T>()).c_str());
}

template <class TM> void map_spec(const char* id, const char* key, int mode) {
  if constexpr (threadmap::detail::thread_map_info<TM>::known) {
    std::printf("%s\\t%s\\t", id, key);
    threadmap::side("x").thread_map<TM>(mode).print();
    std::printf("\\n");
  } else {
    std::printf("%s\\t%s\\t?%s\\n", id, key, threadmap::detail::type_name<TM>().c_str());
  }
}

// every thread's first access and the iteration grid: the whole access sequence of a map
template <class TM> void map_offsets(const char* id, const char* key) {
  std::printf("%s\\t%s.iterations\\t%d %d\\n", id, key, int(TM::Iterations::kContiguous),
              int(TM::Iterations::kStrided));
  std::printf("%s\\t%s.delta\\t%d %d\\n", id, key, int(TM::Delta::kContiguous), int(TM::Delta::kStrided));
  std::printf("%s\\t%s.epa\\t%d\\n", id, key, int(TM::kElementsPerAccess));
  std::printf("%s\\t%s.initial\\t", id, key);
  for (int t = 0; t < TM::kThreads; ++t) {
    auto o = TM::initial_offset(t);
    std::printf("%d %d ", int(o.contiguous()), int(o.strided()));
  }
  std::printf("\\n");
}

template <class Layout> int contiguous_mode() {
  if constexpr (std::is_same_v<Layout, cutlass::layout::RowMajor>) return 1;
  else if constexpr (std::is_same_v<Layout, cutlass::layout::ColumnMajor>) return 0;
  else return -1;
}

template <class M, class = void> struct multistage : std::false_type {};
template <class M>
struct multistage<M, std::void_t<decltype(M::kCacheOpA), typename M::SmemIteratorA, typename M::IteratorA>>
    : std::true_type {};

// one operand: It the global iterator, SIt the shared one, layout the shared layout object
// mode: which tile mode is the global iterator's contiguous one (-2: from its matrix layout)
template <class It, class SIt, class SmemLayout>
void operand(const char* id, char which, int cache_op, SmemLayout const& layout, int rows, int cols, int mode) {
  using TM = typename It::ThreadMap;
  using STM = typename SIt::ThreadMap;
  char key[64];
  auto k = [&](const char* f) { std::snprintf(key, sizeof key, "%c.%s", which, f); return key; };
  name_of<typename It::Element>(id, k("element"));
  std::printf("%s\\t%s\\t%d\\n", id, k("bits"), int(cutlass::sizeof_bits<typename It::Element>::value));
  std::printf("%s\\t%s\\t%s\\n", id, k("layout"), threadmap::detail::type_name<typename It::Layout>().c_str());
  std::printf("%s\\t%s\\t%d %d\\n", id, k("tile"), rows, cols);
  std::printf("%s\\t%s\\t%d\\n", id, k("access"), int(It::AccessType::kElements));
  std::printf("%s\\t%s\\t%d\\n", id, k("accesses_per_vector"), int(It::kAccessesPerVector));
  std::printf("%s\\t%s\\t%d\\n", id, k("cache_op"), cache_op);
  std::printf("%s\\t%s\\t%d\\n", id, k("threads"), int(TM::kThreads));
  map_spec<TM>(id, k("map"), mode == -2 ? contiguous_mode<typename It::Layout>() : mode);
  map_offsets<TM>(id, k("gmap"));
  map_offsets<STM>(id, k("smap"));
  std::printf("%s\\t%s\\t%s\\n", id, k("smem_layout"), threadmap::detail::type_name<typename SIt::Layout>().c_str());
  std::printf("%s\\t%s\\t", id, k("table"));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) std::printf("%lld ", (long long)layout(cutlass::MatrixCoord(r, c)));
  std::printf("\\n");
}

// the contiguous modes: -2 takes them from the iterators' matrix layouts (a GEMM's); a
// convolution's iterators have tensor layouts, and its kind says which GEMM mode is contiguous
template <class Kernel> void mainloop(const char* id, int mode_a = -2, int mode_b = -2) {
  using Mma = typename Kernel::Mma;
  if constexpr (multistage<Mma>::value) {
    using SS = typename Mma::SharedStorage;
    using Shape = typename Mma::Shape;
    std::printf("%s\\tmainloop\\tmultistage\\n", id);
    std::printf("%s\\tshape\\t%d %d %d\\n", id, int(Shape::kM), int(Shape::kN), int(Shape::kK));
    std::printf("%s\\tstages\\t%d\\n", id, int(Mma::kStages));
    // SharedStorage::LayoutA() is device code; this is its body
    auto la = Mma::Operator::LayoutA::packed({SS::ShapeA::kRow, SS::ShapeA::kColumn});
    auto lb = Mma::Operator::LayoutB::packed({SS::ShapeB::kRow, SS::ShapeB::kColumn});
    operand<typename Mma::IteratorA, typename Mma::SmemIteratorA>(id, 'A', int(Mma::kCacheOpA), la,
                                                                   Shape::kM, Shape::kK, mode_a);
    operand<typename Mma::IteratorB, typename Mma::SmemIteratorB>(id, 'B', int(Mma::kCacheOpB), lb,
                                                                   Shape::kK, Shape::kN, mode_b);
  } else {
    std::printf("%s\\tmainloop\\t?%s\\n", id, threadmap::detail::type_name<Mma>().c_str());
  }
}

}  // namespace tm_sweep
"""


#: what a convolution's kernel text needs besides :data:`PRELUDE` (the conv headers, and
#: :mod:`threadmap.sweep.extract_conv`'s oracle of the iterators' addresses)
CONV_PRELUDE = """\
#include <cstdint>
#include <sys/wait.h>
#include <unistd.h>
#include <cutlass/conv/kernel/default_conv2d_fprop.h>
#include <cutlass/conv/kernel/default_conv2d_dgrad.h>
#include <cutlass/conv/kernel/default_conv2d_wgrad.h>
#include <cutlass/conv/kernel/default_conv2d_group_fprop.h>
#include <cutlass/conv/kernel/default_conv3d_fprop.h>
#include <cutlass/conv/kernel/default_conv3d_dgrad.h>
#include <cutlass/conv/kernel/default_conv3d_wgrad.h>
"""


def _emitted(cfg: Configuration, cid: str) -> str:
    """The kernel declaration the library compiles for the configuration's first kernel,
    under the name ``cid`` (the generator's emitter, unchanged otherwise)."""
    op = cfg.operation
    if cfg.kind == "conv2d":
        from cutlass_library.conv2d_operation import EmitConv2dInstance

        text = EmitConv2dInstance().emit(op)
    elif cfg.kind == "conv3d":
        from cutlass_library.conv3d_operation import EmitConv3dInstance

        text = EmitConv3dInstance().emit(op)
    elif cfg.family in PLANAR_FAMILIES:
        from threadmap.sweep.extract_planar import planar_emitted

        text = planar_emitted(op, cfg.family)
    elif cfg.family == SPARSE_FAMILY:
        from threadmap.sweep.extract_sparse import emitted

        return emitted(cfg, cid)
    else:
        from cutlass_library import gemm_operation as go

        emitter = go.EmitGemmGroupedInstance() if cfg.family == "grouped" else go.EmitGemmUniversalInstance()
        text = emitter.emit(op)
    return text.replace(op.procedural_name(), f"{cid}_kernel")


def _calls(cfg: Configuration, cid: str) -> str:
    """What ``main`` does for one configuration: print its mainloop (a convolution's with the
    contiguous modes of its kind, and its iterators' addresses on sample problems)."""
    if cfg.kind == "gemm" and cfg.fields.get("layout_a") in INTERLEAVED_GEMM:
        from threadmap.sweep.interleaved import gemm_calls

        return gemm_calls(cfg, cid)
    if cfg.kind == "gemm" and cfg.family in PLANAR_FAMILIES:
        from threadmap.sweep.extract_planar import planar_calls

        return planar_calls(cid)
    if cfg.family == SPARSE_FAMILY:
        from threadmap.sweep.extract_sparse import sparse_calls

        return sparse_calls(cfg, cid)
    if cfg.kind not in CONV_KINDS:
        return f'  tm_sweep::mainloop<{cid}_kernel_base>("{cid}");'
    from threadmap.sweep.extract_conv import conv_calls

    return conv_calls(cfg, cid)


def _prelude(configs: Sequence[Configuration]) -> str:
    conv = any(c.kind in CONV_KINDS for c in configs)
    text = PRELUDE
    if conv:
        from threadmap.sweep.extract_conv import CONV_ORACLE, CONV_ORACLE_DEVICE, needs_device_oracle

        text += CONV_PRELUDE + CONV_ORACLE
        if any(needs_device_oracle(c) for c in configs):
            text += CONV_ORACLE_DEVICE
    if any(c.family in PLANAR_FAMILIES for c in configs):
        from threadmap.sweep.extract_planar import PLANAR_PRELUDE

        text += PLANAR_PRELUDE
    if any(c.family == SPARSE_FAMILY for c in configs):
        from threadmap.sweep.extract_sparse import SPARSE_PRELUDE

        text += SPARSE_PRELUDE
    # an interleaved GEMM's layout objects are printed too (text only where there is one)
    if any(c.kind == "gemm" and c.fields.get("layout_a") in INTERLEAVED_GEMM for c in configs):
        from threadmap.sweep.interleaved import GEMM_ORACLE

        text += GEMM_ORACLE
    return text


def program(configs: Sequence[Configuration]) -> str:
    """The batch's translation unit: each configuration's kernel, and a main printing them."""
    parts = [_prelude(configs)]
    calls = []
    for i, cfg in enumerate(configs):
        cid = f"c{i}"
        parts.append(_emitted(cfg, cid))
        calls.append(_calls(cfg, cid))
    parts.append("int main() {\n" + "\n".join(calls) + "\n  return 0;\n}\n")
    return "\n".join(parts)


def split_output(output: str, n: int) -> list[dict[str, str]]:
    """The program's ``ID<TAB>FIELD<TAB>VALUE`` lines as fields per configuration (in order)."""
    by: dict[str, dict[str, str]] = {f"c{i}": {} for i in range(n)}
    for line in output.splitlines():
        m = _LINE.match(line)
        if m and m.group(1) in by:
            by[m.group(1)][m.group(2)] = m.group(3).strip()
    return [by[f"c{i}"] for i in range(n)]


def parse_fields(f: dict[str, str]) -> Extracted:
    """One configuration's printed fields as an :class:`Extracted`."""
    if "mainloop" not in f:
        return Extracted(error="the extraction program printed nothing for this configuration",
                         error_kind="extraction output incomplete")
    if f["mainloop"] == "sparse":
        from threadmap.sweep.extract_sparse import parse_sparse

        return parse_sparse(f)
    if f["mainloop"] != "multistage":
        return Extracted(mainloop=f["mainloop"][1:], error_kind="mainloop is not MmaMultistage",
                         error=f"the mainloop is not a cp.async MmaMultistage: {f['mainloop'][1:200]}")
    try:
        return Extracted("multistage", tuple(printed_ints(f["shape"])), int(f["stages"]),  # type: ignore[arg-type]
                         {w: parse_operand(f, w) for w in ("A", "B")},
                         oracle={k: v for k, v in f.items() if k.startswith("oracle.")})
    except (KeyError, ValueError, IndexError) as e:
        return Extracted(error=f"the extraction program's output is incomplete ({type(e).__name__}: {e})",
                         error_kind="extraction output incomplete")


def output_key(cfg: Configuration) -> str:
    """The cache key of one configuration's printed fields: its kernel text, the program
    around it and :func:`~threadmap.sweep.batch.output_context`, whichever batch printed it."""
    text = "\0".join([_prelude([cfg]), _emitted(cfg, "c"), output_context()])
    if cfg.kind in CONV_KINDS or cfg.family in PLANAR_FAMILIES or cfg.family == SPARSE_FAMILY \
            or cfg.fields.get("layout_a") in INTERLEAVED_GEMM:
        text += "\0" + _calls(cfg, "c")
    return hashlib.sha256(text.encode()).hexdigest()[:24]


#: the 2.x extractor's batched program (:mod:`threadmap.sweep.batch`)
BATCH: BatchProgram[Extracted] = BatchProgram(
    prefix="sweep", key=output_key, source=program, split=split_output, parse=parse_fields,
    failed=lambda error, kind: Extracted(error=error, error_kind=kind), opt="-O1", archs=("sm_80+ptx",))


def extract(configs: Sequence[Configuration]) -> list[Extracted]:
    """Each configuration's mainloop as its C++ objects print it.  A configuration printed
    before (by any batch: a resumed sweep batches otherwise) is read from the compile cache;
    the others are compiled and run as one program."""
    return run_batch(BATCH, configs)
