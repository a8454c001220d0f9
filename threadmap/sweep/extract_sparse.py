"""What an sm80 sparse GEMM configuration's mainloop really does, read from the real templates.

A sparse GEMM (the generator's ``GemmKind.Sparse``, ``cutlass::gemm::device::SparseGemm``) has
its own mainloop: ``DefaultSparseGemm`` -> ``DefaultSparseMma`` -> ``SparseMmaMultistage``, with
three cp.async copies per k-tile: the compressed A (``kK / kSparse`` columns of the tile), B, and
the metadata E (``IteratorE`` / ``SmemIteratorE``, its own thread map, shared layout and access
width; a global layout ``ColumnMajorInterleaved<kInterleavedE>`` of ``M x K / kSparse /
kElementsPerElementE`` elements, which the iterator reads as the pitch-linear matrix ``(M *
kInterleavedE, K / kSparse / kElementsPerElementE / kInterleavedE)``).  Only the first
``Detail::kValidWarps`` warps copy E (the others' cp.async are switched off by
``is_warp_valid_``).

The batch program (:mod:`threadmap.sweep.extract`'s, with :data:`SPARSE_PRELUDE` appended
where a batch has sparse configurations) declares each configuration's first kernel with the
generator's own emitter (``EmitSparseGemmInstance``) and prints, for ``GemmKernel::Mma``:

* per operand A, B and E what the 2.x extractor prints (``tm_sweep::operand``: element, layout,
  access width, cache operation, thread map, every thread's offsets in both iterators' maps,
  the shared layout's offset at every cell of one stage); E's tile is its shared iterator's
  ``(kM * kInterleavedE, ...)`` pitch-linear shape;
* the mainloop's threads, ``kSparse``, ``kElementsPerElementE``, ``Detail::kValidWarps``, E's
  iterator shape and interleave;
* which problem sizes ``GemmKernel::can_implement`` accepts (M, N and K each varied from
  ``2 x`` the tile with packed tensors), so the spec's sizes are the kernel's own.

The kernel's global iterators are not run host-side (as a convolution's are): the GEMM
``PredicatedTileAccessIterator`` computes its predicates in ``CUTLASS_DEVICE`` functions, which
a CUDA translation unit cannot call host-side.  Their global layouts are the packed matrices the
iterators' layout types name (printed, and checked by :mod:`threadmap.sweep.specs_sparse`).
"""

from __future__ import annotations

from typing import Any

from threadmap.sweep.extracted import Extracted, parse_operand
from threadmap.sweep.library import Configuration

#: C++ appended to the extraction prelude in a batch with sparse configurations
SPARSE_PRELUDE = """\
#include <cutlass/gemm/device/gemm_sparse.h>

namespace tm_sweep {

template <class M, class = void> struct sparse_multistage : std::false_type {};
template <class M>
struct sparse_multistage<M, std::void_t<decltype(M::kCacheOpE), typename M::IteratorE, typename M::SmemIteratorE>>
    : std::true_type {};

// GemmKernel::can_implement on a problem with packed tensors (null pointers: aligned)
template <class Kernel> bool sparse_accepts(int m, int n, int k) {
  using Mma = typename Kernel::Mma;
  using RefC = typename Kernel::Epilogue::OutputTileIterator::TensorRef;
  int const ke = k / Kernel::kSparse / Kernel::kElementsPerElementE;
  typename Mma::IteratorA::TensorRef ra(nullptr, Mma::IteratorA::Layout::packed({m, k / Kernel::kSparse}));
  typename Mma::IteratorB::TensorRef rb(nullptr, Mma::IteratorB::Layout::packed({k, n}));
  RefC rc(nullptr, RefC::Layout::packed({m, n}));
  typename Mma::IteratorE::TensorRef re(nullptr, Mma::IteratorE::Layout::packed({m, ke}));
  return Kernel::can_implement(cutlass::gemm::GemmCoord(m, n, k), ra, rb, rc, rc, re) == cutlass::Status::kSuccess;
}

template <class Kernel> void sparse_mainloop(const char* id) {
  using Mma = typename Kernel::Mma;
  if constexpr (sparse_multistage<Mma>::value) {
    using SS = typename Mma::SharedStorage;
    using Shape = typename Mma::Shape;
    using ItE = typename Mma::IteratorE;
    using SItE = typename Mma::SmemIteratorE;
    int const sparse = Kernel::kSparse, epe = Kernel::kElementsPerElementE;
    std::printf("%s\\tmainloop\\tsparse\\n", id);
    std::printf("%s\\tshape\\t%d %d %d\\n", id, int(Shape::kM), int(Shape::kN), int(Shape::kK));
    std::printf("%s\\tstages\\t%d\\n", id, int(Mma::kStages));
    std::printf("%s\\tsparse.kSparse\\t%d\\n", id, sparse);
    std::printf("%s\\tsparse.kElementsPerElementE\\t%d\\n", id, epe);
    std::printf("%s\\tsparse.kValidWarps\\t%d\\n", id, int(Mma::Detail::kValidWarps));
    std::printf("%s\\tsparse.E.shape\\t%d %d\\n", id, int(ItE::Shape::kRow), int(ItE::Shape::kColumn));
    std::printf("%s\\tsparse.E.interleave\\t%d\\n", id, int(ItE::kInterleavedK));
    auto la = Mma::Operator::LayoutA::packed({SS::ShapeA::kRow, SS::ShapeA::kColumn});
    auto lb = Mma::Operator::LayoutB::packed({SS::ShapeB::kRow, SS::ShapeB::kColumn});
    auto le = Mma::Operator::LayoutE::packed({SS::ShapeE::kRow, SS::ShapeE::kColumn});
    operand<typename Mma::IteratorA, typename Mma::SmemIteratorA>(id, 'A', int(Mma::kCacheOpA), la,
                                                                   Shape::kM, Shape::kK / sparse, -2);
    operand<typename Mma::IteratorB, typename Mma::SmemIteratorB>(id, 'B', int(Mma::kCacheOpB), lb,
                                                                   Shape::kK, Shape::kN, -2);
    // E's copy pairs its global and shared accesses in the pitch-linear (kM * interleave, ...)
    // view both iterators share; its shared layout is column-major (contiguous mode 0)
    operand<ItE, SItE>(id, 'E', int(Mma::kCacheOpE), le, SItE::Shape::kRow, SItE::Shape::kColumn, 0);
    for (int w = 0; w < 3; ++w) {
      int const base[3] = {2 * Shape::kM, 2 * Shape::kN, 2 * Shape::kK};
      int const top = 2 * base[w];
      std::printf("%s\\tsparse.accepts.%c\\t", id, "MNK"[w]);
      for (int x = 1; x <= top; ++x) {
        int p[3] = {base[0], base[1], base[2]};
        p[w] = x;
        std::printf("%d", int(sparse_accepts<Kernel>(p[0], p[1], p[2])));
      }
      std::printf("\\n");
    }
  } else {
    std::printf("%s\\tmainloop\\t?%s\\n", id, threadmap::detail::type_name<Mma>().c_str());
  }
}

}  // namespace tm_sweep
"""


def emitted(cfg: Configuration, cid: str) -> str:
    """The generator's own declaration of the configuration's first kernel (``SparseGemm``,
    ``EmitSparseGemmInstance``) under the name ``Operation_<cid>_kernel``."""
    from cutlass_library.gemm_operation import EmitSparseGemmInstance

    op = cfg.operation
    return EmitSparseGemmInstance().emit(op).replace(op.procedural_name(), f"{cid}_kernel")


def sparse_calls(cfg: Configuration, cid: str) -> str:
    """``main``'s line for one sparse configuration."""
    return f'  tm_sweep::sparse_mainloop<Operation_{cid}_kernel::GemmKernel>("{cid}");'


def parse_sparse(f: dict[str, str]) -> Extracted:
    """One sparse configuration's printed fields: operands A, B and E, the mainloop's other
    fields (``sparse.*``) kept by name in ``oracle``."""
    try:
        ints = [int(x) for x in f["shape"].split()]
        extra: dict[str, Any] = {k: v for k, v in f.items() if k.startswith("sparse.")}
        return Extracted("sparse", (ints[0], ints[1], ints[2]), int(f["stages"]),
                         {w: parse_operand(f, w) for w in ("A", "B", "E")}, oracle=extra)
    except (KeyError, ValueError, IndexError) as e:
        return Extracted(error=f"the extraction program's output is incomplete ({type(e).__name__}: {e})",
                         error_kind="extraction output incomplete")
