"""A planar-complex GEMM's mainloop, read from the real templates.

CUTLASS's planar-complex kernels (``GemmPlanarComplex``, ``GemmPlanarComplexArray``, made by
``DefaultGemmPlanarComplexUniversal``) keep a complex matrix as two real ones: the real parts at
one pointer, the imaginary parts at another with its own leading dimension.  Their SM80
mainloop, ``MmaPlanarComplexMultistage`` (``default_mma_planar_complex_multistage.h``), takes
the global and shared iterators of the real GEMM's ``MmaMultistage`` and issues, for each
access of an operand, two ``cp.async``: the real part through ``iterator_A_real`` into the
shared tile, the imaginary part through ``iterator_A_imag`` (the same iterator type, thread and
threadblock offset, on the imaginary pointer) into the same place of a second shared tile
``kImaginaryStrideA`` elements further (``dst_ptr + v + kImaginaryStrideA /
ThreadMap::kElementsPerAccess``, in ``AccessType`` units; the warp iterators read it back at
``load_with_pointer_offset(..., kImaginaryStrideA)``).

The kernel text is the generator's own (``EmitGemmPlanarComplexInstance``,
``EmitGemmPlanarComplexArrayInstance``); the extraction program prints its mainloop as a real
GEMM's (:data:`threadmap.sweep.extract.PRELUDE`'s ``mainloop``: the real copies' iterators,
thread maps and shared layout), and :data:`PLANAR_PRELUDE`'s ``planar`` prints, with the
``oracle.planar.`` prefix, what places the imaginary copies: the mainloop's type, per operand
``kImaginaryStride``, the element offset of the imaginary ``cp.async`` destination as the
mainloop's expression computes it, the real ring's extent (``SharedStorage::ShapeA::kCount``)
and the shared buffer's (``SharedStorage::operand_A``'s ``kCount``).
"""

from __future__ import annotations

from typing import Any

#: appended to the extraction program's prelude for a batch with a planar-complex configuration
PLANAR_PRELUDE = """\
#include <cutlass/gemm/kernel/default_gemm_planar_complex_universal.h>
#include <cutlass/epilogue/thread/linear_combination_planar_complex.h>

namespace tm_sweep {

template <class M, class = void> struct planar_complex : std::false_type {};
template <class M>
struct planar_complex<M, std::void_t<decltype(M::SharedStorage::kImaginaryStrideA),
                                     decltype(M::SharedStorage::kImaginaryStrideB)>> : std::true_type {};

// one operand: kImaginaryStride, the imaginary cp.async's destination offset in elements from
// the real one's (the mainloop's `dst_ptr + v + kImaginaryStride / ThreadMap::kElementsPerAccess`,
// dst_ptr an AccessType*), the real ring's and the shared buffer's element counts
template <class It, class Buffer>
void planar_operand(const char* id, char which, int imag_stride, int ring) {
  using TM = typename It::ThreadMap;
  using Access = typename It::AccessType;
  long long dst_bytes = (long long)sizeof(Access) * (imag_stride / TM::kElementsPerAccess);
  long long dst = dst_bytes * 8 / int(cutlass::sizeof_bits<typename It::Element>::value);
  std::printf("%s\\toracle.planar.%c.imag_stride\\t%d\\n", id, which, imag_stride);
  std::printf("%s\\toracle.planar.%c.imag_dst\\t%lld\\n", id, which, dst);
  std::printf("%s\\toracle.planar.%c.ring\\t%d\\n", id, which, ring);
  std::printf("%s\\toracle.planar.%c.buffer\\t%d\\n", id, which, int(Buffer::kCount));
}

template <class Kernel> void planar(const char* id) {
  using Mma = typename Kernel::Mma;
  std::printf("%s\\toracle.planar.mainloop\\t%s\\n", id, threadmap::detail::type_name<Mma>().c_str());
  if constexpr (planar_complex<Mma>::value) {
    using SS = typename Mma::SharedStorage;
    planar_operand<typename Mma::IteratorA, decltype(SS::operand_A)>(id, 'A', SS::kImaginaryStrideA,
                                                                      SS::ShapeA::kCount);
    planar_operand<typename Mma::IteratorB, decltype(SS::operand_B)>(id, 'B', SS::kImaginaryStrideB,
                                                                      SS::ShapeB::kCount);
  }
}

}  // namespace tm_sweep
"""


def planar_emitted(op: Any, family: str) -> str:
    """The generator's kernel text for a planar-complex operation (what the library compiles)."""
    from cutlass_library import gemm_operation as go

    emitter = go.EmitGemmPlanarComplexArrayInstance() if family == "planar_complex_array" \
        else go.EmitGemmPlanarComplexInstance()
    return str(emitter.emit(op))


def planar_calls(cid: str) -> str:
    """What ``main`` does for one planar-complex configuration: its mainloop as a real GEMM's,
    then the imaginary copies' placement.  (The emitted ``struct {cid}_kernel`` derives from the
    kernel type.)"""
    return f'  tm_sweep::mainloop<{cid}_kernel>("{cid}");\n  tm_sweep::planar<{cid}_kernel>("{cid}");'
