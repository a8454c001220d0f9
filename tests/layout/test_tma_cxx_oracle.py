"""``make_tma_copy`` against CuTe's own (``cute/atom/copy_traits_sm90_tma.hpp``, compiled
host-side): the program defines ``cuTensorMapEncodeTiled`` itself (CUTLASS's direct driver
call), so what CuTe would hand the driver is printed instead of encoded, with the shared
layout CuTe built; threadmap builds the copy from the same global layout and that printed
shared layout, and every descriptor field must be equal."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.cxx_oracle import run_print_batch
from threadmap.layout.atom.copy_traits_sm90_tma import make_tma_copy
from threadmap.layout.integral_constant import Dyn
from threadmap.layout.layout import make_layout
from threadmap.layout.parse import parse_layout

PRELUDE = r"""
#define CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL 1
#define NDEBUG 1
#include <cstdio>
#include <cuda.h>
#include <cute/tensor.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
using namespace cute;
extern "C" CUresult cuTensorMapEncodeTiled(CUtensorMap*, CUtensorMapDataType fmt, cuuint32_t rank, void* addr,
    const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* estr,
    CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  printf("fmt=%d rank=%u addr=%llu dims=", (int)fmt, rank, (unsigned long long)addr);
  for (unsigned i = 0; i < rank; ++i) printf("%llu,", (unsigned long long)dims[i]);
  printf(" strides=");
  for (unsigned i = 0; i + 1 < rank; ++i) printf("%llu,", (unsigned long long)strides[i]);
  printf(" box=");
  for (unsigned i = 0; i < rank; ++i) printf("%u,", box[i]);
  printf(" estr=");
  for (unsigned i = 0; i < rank; ++i) printf("%u,", estr[i]);
  printf(" il=%d sw=%d l2=%d oob=%d", (int)il, (int)sw, (int)l2, (int)oob);
  return CUDA_SUCCESS;
}
"""

TYPES = {"half_t": (16, "f16"), "float": (32, "f32"), "uint8_t": (8, "u8"), "double": (64, "f64"),
         "bfloat16_t": (16, "bf16")}


@dataclass(frozen=True)
class Case:
    id: str
    T: str
    gshape: Any     # python int tuple; C++ built with make_shape of ints
    gstride: Any
    smem: str       # C++ expression of the shared layout (printed by the program, parsed here)
    tiler: tuple[str, Any] | None = None  # (C++ expression, python tiler)
    cluster: int = 1
    static: bool = False  # the global shape as static integers (CuTe needs the box's modes static)

    @property
    def op(self) -> str:
        return "SM90_TMA_LOAD_MULTICAST" if self.cluster > 1 else "SM90_TMA_LOAD"


def _cxx_tuple(t: Any, static: bool = False) -> str:
    if isinstance(t, tuple):
        return "make_shape(" + ", ".join(_cxx_tuple(x, static) for x in t) + ")"
    return f"Int<{t}>{{}}" if static else f"{t}"


def _cxx_stride(t: Any) -> str:
    if isinstance(t, tuple):
        return "make_stride(" + ", ".join(_cxx_stride(x) for x in t) + ")"
    return "Int<1>{}" if t == 1 else f"{t}"


def _gmma(kind: str, T: str, shape: str) -> str:
    return f"tile_to_shape(GMMA::Layout_{kind}_Atom<{T}>{{}}, make_shape({shape}))"


CASES = [
    Case("k_major_plain", "half_t", (1024, 256), (256, 1), "make_layout(make_shape(_64{}, _32{}), GenRowMajor{})"),
    Case("mn_major_plain", "float", (1024, 256), (1, 1024), "make_layout(make_shape(_64{}, _32{}))"),
    Case("three_d", "float", (1024, 32, 512), (64, 1, 65536),
         "make_layout(make_shape(_16{}, _8{}, _2{}), make_stride(_16{}, _1{}, _8{}))"),
    *[Case(f"k_{sw.lower()}_{t}", t, (4096, 1024), (1024, 1), _gmma(f"K_{sw}", t, shape))
      for t, shapes in (("half_t", {"SW128": "_128{},_64{}", "SW64": "_128{},_32{}", "SW32": "_64{},_16{}",
                                    "INTER": "_128{},_64{}"}),
                        ("float", {"SW128": "_64{},_32{}", "SW64": "_64{},_16{}", "SW32": "_128{},_8{}",
                                   "INTER": "_64{},_32{}"}),
                        ("uint8_t", {"SW128": "_128{},_128{}", "SW32": "_64{},_64{}"}),
                        ("bfloat16_t", {"SW128": "_256{},_64{}"}))
      for sw, shape in shapes.items()],
    *[Case(f"mn_{sw.lower()}_{t}", t, (4096, 1024), (1, 4096), _gmma(f"MN_{sw}", t, shape))
      for t, shapes in (("half_t", {"SW128": "_128{},_64{}", "SW64": "_64{},_64{}", "SW32": "_64{},_32{}",
                                    "INTER": "_64{},_16{}"}),
                        ("float", {"SW128": "_64{},_16{}", "SW64": "_32{},_32{}"}))
      for sw, shape in shapes.items()],
    # the GEMM mainloops' call: a batched (M,K,L) tensor, the (BLK_M,BLK_K) tile of one stage
    Case("batched_gemm_a", "half_t", (4096, 1024, 3), (1024, 1, 4096 * 1024),
         _gmma("K_SW128", "half_t", "_128{},_64{}"),
         ("make_shape(_128{}, _64{})", (128, 64))),
    Case("batched_gemm_b_mn", "half_t", (2048, 512, 2), (1, 2048, 2048 * 512),
         _gmma("MN_SW128", "half_t", "_256{},_64{}"), ("make_shape(_256{}, _64{})", (256, 64))),
    # multicast over 2 and 4 CTAs: the box's last modes divided
    Case("multicast2", "half_t", (4096, 1024), (1024, 1), _gmma("K_SW128", "half_t", "_128{},_64{}"),
         ("make_shape(_128{}, _64{})", (128, 64)), 2),
    Case("multicast4_mn", "half_t", (4096, 1024), (1, 4096), _gmma("MN_SW128", "half_t", "_128{},_64{}"),
         ("make_shape(_128{}, _64{})", (128, 64)), 4),
    # cuTENSOR's hierarchical tensor: a tile taking 128 of mode 0 and (32, 2) of mode 1
    Case("hierarchical", "float", ((32, 40), ((8, 8), 656)), ((1, 32), ((1280, 10240), 81920)),
         "make_layout(make_shape(_128{}, make_shape(_32{}, _2{})))",
         ("make_shape(_128{}, make_shape(_32{}, _2{}))", (128, (32, 2))), static=True),
    Case("box_over_256", "half_t", (4096, 1024), (1024, 1), "make_layout(make_shape(_8{}, _512{}), GenRowMajor{})"),
]


def _stmt(c: Case) -> str:
    g = (f"Tensor g = make_tensor(make_gmem_ptr(reinterpret_cast<{c.T}*>(0x10000)), "
         f"make_layout({_cxx_tuple(c.gshape, c.static)}, {_cxx_stride(c.gstride)}));")
    tail = f", {c.tiler[0]}, Int<{c.cluster}>{{}}" if c.tiler else ""
    return (f"{g} auto s = {c.smem}; auto tma = make_tma_copy({c.op}{{}}, g, s{tail}); "
            f'printf(" | "); print(s);')


@pytest.fixture(scope="module")
def oracle() -> dict[str, str]:
    return run_print_batch({c.id: _stmt(c) for c in CASES}, prelude=PRELUDE)


def _dyn(t: Any, keep_one: bool = False) -> Any:
    """The C++ program's runtime integers as threadmap's dynamic ones (a stride of 1 is Int<1>)."""
    if isinstance(t, tuple):
        return tuple(_dyn(x, keep_one) for x in t)
    return t if keep_one and t == 1 else Dyn(t)


def _smem(printed: str, bits: int) -> Any:
    """The printed shared layout as threadmap writes it: a byte-offset swizzle through
    ``smem_ptr[Nb]`` becomes the same function on element offsets."""
    m = re.fullmatch(r"Sw<(\d+),(\d+),(\d+)> o smem_ptr\[(\d+)b\]\(unset\) o (.*)", printed.strip())
    if m is None:
        return parse_layout(printed.strip())
    b, mb, s, eb, inner = int(m[1]), int(m[2]), int(m[3]), int(m[4]), m[5]
    shift = (eb // 8).bit_length() - 1
    return parse_layout(f"Sw<{b},{mb - shift},{s}> o {inner}")


def _fields(text: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in text.split())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_descriptor_is_cutes(case: Case, oracle: dict[str, str]) -> None:
    got_text, printed = oracle[case.id].split(" | ", 1)
    want = _fields(got_text)
    bits, dtype = TYPES[case.T]
    tiler = case.tiler[1] if case.tiler else None
    gmem = make_layout(case.gshape if case.static else _dyn(case.gshape), _dyn(case.gstride, keep_one=True))
    t = make_tma_copy(case.op, gmem, _smem(printed, bits), tiler, case.cluster,
                      elem_bits=bits, data_type=dtype, address=0x10000)
    d = t.desc

    def row(xs: tuple[int, ...]) -> str:
        return "".join(f"{x}," for x in xs)

    got = {"fmt": str(d.data_type), "rank": str(d.rank), "addr": str(d.global_address), "dims": row(d.global_dim),
           "strides": row(d.global_strides), "box": row(d.box_dim), "estr": row(d.element_strides),
           "il": str(d.interleave), "sw": str(d.swizzle), "l2": str(d.l2_promotion), "oob": str(d.oob_fill)}
    assert got == want, (case.id, printed)
    if case.id == "box_over_256":
        # the header asserts (compiled out here): threadmap reports it
        assert [v.rule for v in t.violations] == ["a box extent is 1 .. 256"]
    else:
        assert t.violations == [], t.violations
