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

from tests.support.cxx_oracle import rejected_by_header, run_print_batch
from threadmap.layout.atom.copy_traits_sm90_tma import (
    alignment_for_swizzle,
    make_bulk_copy,
    make_bulk_copy_auto,
    make_tma_copy,
    tma_swizzle,
)
from threadmap.layout.integral_constant import Dyn
from threadmap.layout.layout import make_layout
from threadmap.layout.parse import parse_layout
from threadmap.layout.swizzle import Swizzle

PRELUDE = r"""
#define CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL 1
#define NDEBUG 1
#include <cstdio>
#include <cuda.h>
#include <cute/tensor.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/detail/layout.hpp>
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
    # six global modes: the box takes one, the other five are appended with extent 1 and the
    # last two grouped into the fifth TMA mode (TMA's rank is at most 5), compact and not
    *[Case(f"rank6_grouped_{name}", "half_t", (64, 2, 3, 4, 5, 6), (1, 64, 128, 384, 1536, last),
           "make_layout(make_shape(_64{}, _1{}, _1{}, _1{}, _1{}, _1{}))")
      for name, last in (("compact", 7680), ("padded", 7688))],
]


def _stmt(c: Case) -> str:
    g = (f"Tensor g = make_tensor(make_gmem_ptr(reinterpret_cast<{c.T}*>(0x10000)), "
         f"make_layout({_cxx_tuple(c.gshape, c.static)}, {_cxx_stride(c.gstride)}));")
    tail = f", {c.tiler[0]}, Int<{c.cluster}>{{}}" if c.tiler else ""
    return (f"{g} auto s = {c.smem}; auto tma = make_tma_copy({c.op}{{}}, g, s{tail}); "
            f'printf(" | "); print(s);')


# ----------------------------------------------------------------- values the headers compute
#: ``cutlass::detail::alignment_for_swizzle`` of GMMA atoms (the swizzle on byte addresses
#: through ``smem_ptr``), of a plain layout, and of ``Swizzle o Layout`` (taken as given)
ALIGN_GMMA = [(kind, t) for t in ("half_t", "float", "uint8_t")
              for kind in ("K_INTER", "K_SW32", "K_SW64", "K_SW128", "MN_INTER", "MN_SW32", "MN_SW64", "MN_SW128")]
ALIGN_SWIZZLES = [(0, 4, 3), (1, 4, 3), (2, 4, 3), (3, 4, 3), (3, 3, 3), (2, 5, 2), (2, 6, 3), (1, 0, 1), (3, 4, 5),
                  (2, 4, -3), (3, 0, -4)]


def _align_stmts() -> dict[str, str]:
    out = {f"align_{k.lower()}_{t}": f"auto s = GMMA::Layout_{k}_Atom<{t}>{{}}; "
           "printf(\"%d | \", int(cutlass::detail::alignment_for_swizzle(s))); print(s);"
           for k, t in ALIGN_GMMA}
    out["align_plain"] = ('printf("%d", int(cutlass::detail::alignment_for_swizzle('
                          'make_layout(make_shape(_8{}, _64{}), GenRowMajor{}))));')
    for b, m, sh in ALIGN_SWIZZLES:
        out[f"align_sw_{b}_{m}_{sh}".replace("-", "m")] = (
            f'printf("%d", int(cutlass::detail::alignment_for_swizzle(composition(Swizzle<{b},{m},{sh}>{{}}, '
            'Layout<_64>{}))));')
    return out


#: swizzles (on bytes) the TMA swizzle functions of ``copy_traits_sm90_tma_swizzle.hpp`` take;
#: the ones they refuse are in :data:`REFUSED`
TMA_SWIZZLES = [(0, 4, 3), (1, 4, 3), (2, 4, 3), (3, 4, 3), (2, 5, 2), (2, 6, 2), (2, 6, 3)]


def _swizzle_stmt(b: int, m: int, sh: int) -> str:
    return (f"auto sw = Swizzle<{b},{m},{sh}>{{}}; "
            "printf(\"%d\", int(TMA::to_CUtensorMapSwizzle(detail::get_tma_swizzle_bits(sw), "
            "detail::get_tma_swizzle_base(sw))));")


#: bulk copies: (id, element type, global layout, shared layout) -- SM90_BULK_COPY_AUTO's vector
#: ``max_common_layout(src, dst)``; the copy itself is instantiated behind a false branch (it
#: would trap host-side), so each accepted pair is shown to compile
BULK_AUTO = [("bulk_auto_rowmajor_f16", "half_t", ((8, 16), (16, 1)), ((8, 16), (16, 1))),
             ("bulk_auto_runtime_pitch_f16", "half_t", ((8, 16), (Dyn(16), 1)), ((8, 16), (16, 1))),
             ("bulk_auto_pitched_f32", "float", ((4, 8), (12, 1)), ((4, 8), (8, 1))),
             ("bulk_auto_u8", "uint8_t", (16, 1), (16, 1))]
#: pairs whose vector is under 128 bits: the copy does not compile (in :data:`REFUSED`)
BULK_AUTO_SHORT = [("bulk_auto_transposed_f16", "half_t", ((8, 16), (16, 1)), ((8, 16), (1, 8))),
                   ("bulk_auto_short_f16", "half_t", (4, 1), (4, 1))]
#: NumBitsPerTMA of Copy_Traits<SM90_BULK_COPY_G2S / _S2G> compiled (accepted) here; the refused
#: ones are in :data:`REFUSED`
BULK_BITS_OK = [128, 129, 256, 384, 1024]


def _cxx_static(t: Any) -> str:
    """An int tuple in C++: a plain int static (``Int<n>``), a ``Dyn`` a runtime integer."""
    if isinstance(t, tuple):
        return "make_shape(" + ", ".join(_cxx_static(x) for x in t) + ")"
    return f"{int(t)}" if isinstance(t, Dyn) else f"Int<{t}>{{}}"


def _cxx_layout(lay: Any) -> str:
    return f"make_layout({_cxx_static(lay[0])}, {_cxx_static(lay[1])})"


def _bulk_auto_stmt(T: str, g: Any, sm: Any, copy: str) -> str:
    """The pair's vector bits printed; the copy itself (``copy``) compiled and run ("run": for
    :data:`REFUSED`, compiled only), compiled behind a false branch ("compile"), or left out
    ("none": a pair the header refuses)."""
    tensors = (f"Tensor g = make_tensor(make_gmem_ptr(reinterpret_cast<{T}*>(0)), {_cxx_layout(g)}); "
               f"Tensor s = make_tensor(make_smem_ptr(reinterpret_cast<{T}*>(0)), {_cxx_layout(sm)}); ")
    call = "uint64_t bar = 0; copy(Copy_Traits<SM90_BULK_COPY_AUTO>{}.with(bar), g, s);"
    if copy == "run":
        return tensors + call
    guarded = f"volatile bool never = false; if (never) {{ {call} }} " if copy == "compile" else ""
    return (tensors + guarded +
            f'printf("%d", int(size(max_common_layout(g.layout(), s.layout()))) * int(sizeof_bits_v<{T}>));')


#: what the headers refuse to compile (static_asserts), one translation unit: the bulk
#: copies' sizes, SM90_BULK_COPY_AUTO below 128 bits, swizzles with no TMA mode
REFUSED = {
    **{f"bulk_{op.lower()}_{n}": f"Copy_Traits<SM90_BULK_COPY_{op}, Int<{n}>> t{{}}; (void)t;"
       for op in ("G2S", "S2G") for n in (64, 120, 136, 200)},
    **{f"refused_{cid}": _bulk_auto_stmt(T, g, sm, "run") for cid, T, g, sm in BULK_AUTO_SHORT},
    **{f"swizzle_{b}_{m}_{sh}": _swizzle_stmt(b, m, sh)
       for b, m, sh in ((2, 4, 2), (3, 4, 4), (4, 4, 4), (3, 3, 3), (0, 3, 3), (2, 5, 3), (3, 5, 3), (1, 6, 1),
                        (2, 7, 2))},
}


@pytest.fixture(scope="module")
def oracle() -> dict[str, str]:
    stmts = {c.id: _stmt(c) for c in CASES}
    stmts |= _align_stmts()
    stmts |= {f"tma_swizzle_{b}_{m}_{sh}": _swizzle_stmt(b, m, sh) for b, m, sh in TMA_SWIZZLES}
    stmts |= {cid: _bulk_auto_stmt(T, g, sm, "compile") for cid, T, g, sm in BULK_AUTO}
    stmts |= {cid: _bulk_auto_stmt(T, g, sm, "none") for cid, T, g, sm in BULK_AUTO_SHORT}
    stmts |= {f"bulk_{op.lower()}_{n}_ok": f'Copy_Traits<SM90_BULK_COPY_{op}, Int<{n}>> t{{}}; (void)t; '
              f'printf("%d", {n});' for op in ("G2S", "S2G") for n in BULK_BITS_OK}
    return run_print_batch(stmts, prelude=PRELUDE)


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


@pytest.fixture(scope="module")
def refused() -> set[str]:
    """The :data:`REFUSED` cases the headers refuse to compile (one ``-fsyntax-only`` unit, the
    prelude of the run batch, where each refused case has an accepted twin)."""
    return rejected_by_header(REFUSED, prelude=PRELUDE)


def test_the_headers_refuse_every_refused_case(refused: set[str]) -> None:
    """Each static_assert case fails to compile, and its accepted neighbours (in the run batch)
    compile: the refusals below are the headers' own."""
    assert refused == set(REFUSED)


@pytest.mark.parametrize(("kind", "T"), ALIGN_GMMA, ids=[f"{k}_{t}" for k, t in ALIGN_GMMA])
def test_alignment_for_swizzle_of_the_gmma_atoms_is_cutlass(kind: str, T: str, oracle: dict[str, str]) -> None:
    want, printed = oracle[f"align_{kind.lower()}_{T}"].split(" | ", 1)
    bits = TYPES[T][0]
    assert alignment_for_swizzle(_smem(printed, bits), bits) == int(want), printed


def test_alignment_for_swizzle_of_a_swizzle_or_a_plain_layout_is_cutlass(oracle: dict[str, str]) -> None:
    assert alignment_for_swizzle(parse_layout("(8,64):(64,1)")) == int(oracle["align_plain"])
    assert alignment_for_swizzle(None) == int(oracle["align_plain"])
    for b, m, sh in ALIGN_SWIZZLES:
        want = int(oracle[f"align_sw_{b}_{m}_{sh}".replace("-", "m")])
        # on bytes (8-bit elements) as the header reads it; on 16-bit elements the same bytes
        assert alignment_for_swizzle(Swizzle(b, m, sh), 8) == want, (b, m, sh)
        if m >= 1:
            assert alignment_for_swizzle(Swizzle(b, m - 1, sh), 16) == want, (b, m, sh)


def test_the_tma_swizzle_modes_are_the_headers(oracle: dict[str, str], refused: set[str]) -> None:
    """get_tma_swizzle_bits / _base and to_CUtensorMapSwizzle: the mode of each swizzle the
    header takes; a compile-time violation for each it refuses."""
    for b, m, sh in TMA_SWIZZLES:
        assert tma_swizzle(Swizzle(b, m, sh), 8) == (int(oracle[f"tma_swizzle_{b}_{m}_{sh}"]), []), (b, m, sh)
    for cid in (c for c in REFUSED if c.startswith("swizzle_")):
        b, m, sh = (int(x) for x in cid.split("_")[1:])
        mode, bad = tma_swizzle(Swizzle(b, m, sh), 8)
        assert cid in refused and [v.when for v in bad] == ["compile time"], cid


def _py_layout(lay: Any) -> Any:
    return make_layout(*lay)


def test_bulk_copies_are_the_headers(oracle: dict[str, str], refused: set[str]) -> None:
    """SM90_BULK_COPY_AUTO's vector is CuTe's max_common_layout; a compile-time violation
    exactly where the header refuses (the bulk traits' 16-byte static_assert, the AUTO copy's
    128-bit one)."""
    for cid, T, g, sm in BULK_AUTO + BULK_AUTO_SHORT:
        bits = TYPES[T][0]
        got = make_bulk_copy_auto(_py_layout(g), _py_layout(sm), bits)
        assert got.num_bits == int(oracle[cid]), cid
        at_compile = [v for v in got.violations if v.when == "compile time"]
        assert bool(at_compile) == (f"refused_{cid}" in refused), (cid, got.violations)
    for op in ("G2S", "S2G"):
        for n in BULK_BITS_OK:
            assert oracle[f"bulk_{op.lower()}_{n}_ok"] == str(n)
            assert make_bulk_copy(f"SM90_BULK_COPY_{op}", n).violations == []
        for cid in (c for c in REFUSED if c.startswith(f"bulk_{op.lower()}_")):
            n = int(cid.rsplit("_", 1)[1])
            got = make_bulk_copy(f"SM90_BULK_COPY_{op}", n)
            assert cid in refused and [v.when for v in got.violations] == ["compile time"], (cid, got.violations)
