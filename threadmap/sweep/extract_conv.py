"""A 2.x convolution as an implicit GEMM: the problems a spec of it stands for, and the real
iterators' addresses on one of them.

A convolution kernel's mainloop (``Kernel::Mma``, an ``ImplicitGemmMultistage`` on SM80) is a
GEMM mainloop whose global iterators compute addresses in the activation, filter and output
tensors (``cutlass/conv/threadblock/conv2d_*_tile_access_iterator_*.h``).  For a family of
problems (unit stride and dilation, a padding that keeps every filter tap inside the tensor, one
group, ``C`` or ``K`` a multiple of the tile's ``kK``) every address is a CuTe layout of the
GEMM coordinate, hierarchical in the size names: :class:`Family` gives A's and B's layouts, the
GEMM extents and the size ranges.

The claim is checked against the C++: the extraction program constructs the kernel's own
``IteratorA`` and ``IteratorB`` host-side on one problem of the family (:attr:`Family.sample`),
walks every thread's accesses over every k-tile (``valid``, ``get``, ``++`` and ``advance``, as
the mainloop's prologue does) for the first and the last CTA row (column) of the grid, and
prints checksums of the element offsets (-1 where ``valid()`` is false);
:func:`expected_checksums` computes them from the spec's layouts with threadmap's layout engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from threadmap.sweep.library import Configuration

#: C++ of the oracle: checksums of an iterator's offsets (appended to the extraction prelude)
CONV_ORACLE = """\
namespace tm_sweep {

// order-dependent checksums of a sequence of element offsets (-1: the access is off)
struct offsets_digest {
  unsigned long long n = 0, h1 = 0, h2 = 0;
  void add(long long v) {
    unsigned long long x = (unsigned long long)(v + 2);
    ++n;
    h1 += n * x;
    h2 += (2 * n + 1) * x * x;
  }
};

// every thread's accesses over `tiles` k-tiles of a CTA at (row, col) of the GEMM, as the
// mainloop's prologue makes them (set_iteration_index(0), then valid, get and ++ per access,
// then advance per k-tile)
template <class It, class PS>
void iterator_offsets(const char* id, const char* key, typename It::Params const& params, PS const& ps,
                      int row, int col, int tiles) {
  using Element = typename It::Element;
  using TM = typename It::ThreadMap;
  if constexpr (std::is_constructible_v<It, typename It::Params const&, PS const&, Element const*, int,
                                        cutlass::MatrixCoord const&>) {
    char const* base = reinterpret_cast<char const*>(std::uintptr_t(1) << 40);
    int const accesses = TM::Iterations::kCount * It::kAccessesPerVector;
    offsets_digest d;
    for (int t = 0; t < TM::kThreads; ++t) {
      It it(params, ps, reinterpret_cast<Element const*>(base), t, cutlass::MatrixCoord(row, col));
      for (int k = 0; k < tiles; ++k) {
        // the prologue's order: the optimized iterators move their pointer in operator++
        it.set_iteration_index(0);
        for (int i = 0; i < accesses; ++i, ++it) {
          long long v = -1;
          if (it.valid()) {
            long long bytes = reinterpret_cast<char const*>(it.get()) - base;
            v = bytes * 8 / int(cutlass::sizeof_bits<Element>::value);
          }
          d.add(v);
        }
        it.advance();
      }
    }
    std::printf("%s\\t%s\\t%llu %llu %llu\\n", id, key, d.n, d.h1, d.h2);
  } else {
    std::printf("%s\\t%s\\t?%s\\n", id, key, threadmap::detail::type_name<It>().c_str());
  }
}

template <class Kernel, class PS>
void conv_oracle(const char* id, PS const& ps, int last_row, int last_col, int tiles) {
  using Mma = typename Kernel::Mma;
  using ItA = typename Mma::IteratorA;
  using ItB = typename Mma::IteratorB;
  auto la = ItA::Layout::packed(cutlass::conv::implicit_gemm_tensor_a_extent(Kernel::kConvolutionalOperator, ps));
  auto lb = ItB::Layout::packed(cutlass::conv::implicit_gemm_tensor_b_extent(Kernel::kConvolutionalOperator, ps));
  // what the kernel's Params holds (implicit_gemm_convolution.h)
  auto pa = ItA::getParams(ps, la);
  typename ItB::Params pb(ps, lb);
  iterator_offsets<ItA>(id, "oracle.A0", pa, ps, 0, 0, tiles);
  iterator_offsets<ItA>(id, "oracle.A1", pa, ps, last_row, 0, tiles);
  iterator_offsets<ItB>(id, "oracle.B0", pb, ps, 0, 0, tiles);
  iterator_offsets<ItB>(id, "oracle.B1", pb, ps, 0, last_col, tiles);
}

}  // namespace tm_sweep
"""

#: which GEMM mode of A and B is contiguous in memory, per conv kind: the MmaCore layouts of
#: ``default_conv2d_{fprop,dgrad,wgrad}.h`` (Fprop: A RowMajor, B ColumnMajor; Dgrad: both
#: RowMajor; Wgrad: A ColumnMajor, B RowMajor); 1 is a row-major tile (columns contiguous)
CONTIGUOUS_MODES = {"Fprop": (1, 0), "Dgrad": (1, 1), "Wgrad": (0, 1)}


@dataclass(frozen=True)
class Family:
    """The problems a convolution configuration's spec stands for, as an implicit GEMM.

    ``m``, ``n``, ``k`` are the GEMM extents and ``a``, ``b`` the operands' layouts (GEMM
    coordinate -> element offset in the tensor), all in the size names of ``sizes``;
    ``sample`` is the problem the iterators' addresses are checked on."""

    sizes: dict[str, dict[str, Any]]
    assume: list[str]
    m: str
    n: str
    k: str
    a: str
    b: str
    sample: dict[str, int]
    cxx_problem: str
    what: str                      # the family in words (the spec's description)
    tiles: int = 0                 # k-tiles of the sample
    extents: dict[str, int] = field(default_factory=dict)   # M, N, K of the sample


class NoFamily(Exception):
    """A configuration whose problems have no spec family (the reason, in words)."""


def _evaluate(expr: str, env: Mapping[str, int]) -> int:
    from threadmap.spec.expr import parse_expr

    return int(parse_expr(expr).eval(dict(env)))


def _packed(extents: list[str], inner: str) -> list[str]:
    """Strides of a packed tensor (batch, spatial..., channels) in size names: for the
    spatial extents innermost first, their strides innermost first, then the batch's
    (channels stride 1, ``inner`` channels)."""
    out, acc = [], inner
    for e in extents:
        out.append(acc)
        acc = f"{e}*{acc}"
    return [*out, acc]


def _layout(modes: list[tuple[list[str], list[str]]]) -> str:
    """A CuTe layout of GEMM modes, each a hierarchical (shape, stride)."""
    shape = ",".join("(" + ",".join(sh) + ")" if len(sh) > 1 else sh[0] for sh, _ in modes)
    stride = ",".join("(" + ",".join(st) + ")" if len(st) > 1 else st[0] for _, st in modes)
    return f"({shape}):({stride})"


def family(cfg: Configuration) -> Family:
    """The spec family of a convolution configuration, or :class:`NoFamily`."""
    f = cfg.fields
    conv, algo = f["conv_kind"], f["iterator_algorithm"]
    tm, tn, tk = f["threadblock"]
    three = cfg.kind == "conv3d"
    if algo not in ("Analytic", "Optimized"):
        raise NoFamily(f"the {algo} iterators (a fixed filter-channel count per access) are not modelled")
    if conv == "Dgrad" and f["stride_support"] == "Strided":
        raise NoFamily("strided dgrad (ImplicitGemmConvolutionStridedDgrad: its iterators start at a filter "
                       "phase per CTA) is not modelled")
    # (output, input, filter) size names per spatial dimension, innermost first
    dims = [("Q", "W", "S"), ("P", "H", "R")] + ([("Z", "D", "T")] if three else [])
    outs = [o for o, _, _ in dims]
    filt = [r for _, _, r in dims]
    # the sample: 3x3 (x2) filters, C two k-tiles, K two CTA columns (the second ragged), and
    # enough images for two CTA rows of output positions (the second ragged)
    sample: dict[str, int] = {}
    for i, (o, _, r) in enumerate(dims):
        sample[o] = 7 if i == 0 else 5 if i == 1 else 2
        sample[r] = 3 if i < 2 else 2
    sample["N"] = tm // int(np.prod([sample[o] for o in outs])) + 1
    if conv == "Fprop":
        # A: the activation (N, [D,] H, W, C) at (n, [z + t,] p + r, q + s, c): the input
        # extent of a dimension is output + filter - 1; GEMM m = (q, p, [z,] n), GEMM k =
        # (c in the k-tile, s, r, [t,] k-tile of C): the iterators' order (advance() steps s,
        # then r, [then t,] then C by kK)
        act = _packed([f"({o}+{r}-1)" for o, _, r in dims], "C")
        a = _layout([([*outs, "N"], act), ([str(tk), *filt, f"C/{tk}"], ["1", *act[:-1], str(tk)])])
        # B: the filter (K, [T,] R, S, C) at (k, [t,] r, s, c)
        fil = _packed(filt, "C")
        b = _layout([([str(tk), *filt, f"C/{tk}"], ["1", *fil[:-1], str(tk)]), (["K"], [fil[-1]])])
        m, n, k = "*".join(["N", *outs]), "K", "*".join([*filt, "C"])
        sample["C"], sample["K"] = 2 * tk, 2 * tn - 1
        what = (f"unit stride and dilation, no padding, cross-correlation, one group, C a multiple of "
                f"kK = {tk}")
    elif conv == "Dgrad":
        raise NoFamily("dgrad not yet modelled")
    else:
        raise NoFamily("wgrad not yet modelled")
    # the ranges bound what the model proves over (a grid's z stays within 65535 k-tiles and
    # a tensor within 2^31 elements per mode); the samples are what the checks enumerate
    spatial = 64 if three else 256
    sizes: dict[str, dict[str, Any]] = {"N": {"min": 1, "max": spatial, "samples": sorted({1, sample["N"]})}}
    for o, r in zip(outs, filt, strict=True):
        sizes[o] = {"min": 1, "max": spatial, "samples": [sample[o]]}
        sizes[r] = {"min": 1, "max": 8, "samples": [1, 3] if r != "T" else [1, 2]}
    sizes["C"] = {"min": tk, "max": 1024, "multiple_of": tk, "samples": [tk, 2 * tk]}
    sizes["K"] = {"min": 1, "max": 1 << 14, "samples": [2 * tn - 1, 2 * tn]}
    assume = [f"C % {tk} == 0"]
    env = dict(sample)
    M, N, K = _evaluate(m, env), _evaluate(n, env), _evaluate(k, env)
    ps = problem_cxx(cfg, env)
    return Family(sizes, assume, m, n, k, a, b, sample, ps, what, tiles=-(-K // tk),
                  extents={"M": M, "N": N, "K": K})


def problem_cxx(cfg: Configuration, s: Mapping[str, int]) -> str:
    """The C++ problem size of a sample (``Conv2dProblemSize`` / ``Conv3dProblemSize``)."""
    conv = cfg.fields["conv_kind"]
    dgrad = conv == "Dgrad"
    mode = "cutlass::conv::Mode::kConvolution" if dgrad else "cutlass::conv::Mode::kCrossCorrelation"
    if cfg.kind == "conv3d":
        if dgrad:
            d, h, w = s["Z"], s["P"], s["Q"]
            z, p, q = d + s["T"] - 1, h + s["R"] - 1, w + s["S"] - 1
            pads = (s["T"] - 1, s["R"] - 1, s["S"] - 1)
        else:
            z, p, q = s["Z"], s["P"], s["Q"]
            d, h, w = z + s["T"] - 1, p + s["R"] - 1, q + s["S"] - 1
            pads = (0, 0, 0)
        return (f"cutlass::conv::Conv3dProblemSize({s['N']}, {d}, {h}, {w}, {s['C']}, {s['K']}, {s['T']}, "
                f"{s['R']}, {s['S']}, {z}, {p}, {q}, {pads[0]}, {pads[1]}, {pads[2]}, 1, 1, 1, 1, 1, 1, {mode}, 1, 1)")
    if dgrad:
        h, w = s["P"], s["Q"]
        p, q = h + s["R"] - 1, w + s["S"] - 1
        pads2 = (s["R"] - 1, s["S"] - 1)
    else:
        p, q = s["P"], s["Q"]
        h, w = p + s["R"] - 1, q + s["S"] - 1
        pads2 = (0, 0)
    return (f"cutlass::conv::Conv2dProblemSize({s['N']}, {h}, {w}, {s['C']}, {s['K']}, {s['R']}, {s['S']}, "
            f"{p}, {q}, {pads2[0]}, {pads2[1]}, 1, 1, 1, 1, {mode}, 1, 1)")


def conv_calls(cfg: Configuration, cid: str) -> str:
    """``main``'s lines for one convolution configuration: its mainloop with the contiguous
    modes of its kind, and the oracle on the family's sample (none without a family)."""
    ma, mb = CONTIGUOUS_MODES[cfg.fields["conv_kind"]]
    lines = [f'  tm_sweep::mainloop<{cid}_kernel_base>("{cid}", {ma}, {mb});']
    try:
        fam = family(cfg)
    except NoFamily:
        return lines[0]
    tm, tn, _ = cfg.fields["threadblock"]
    last_row = (fam.extents["M"] - 1) // tm * tm
    last_col = (fam.extents["N"] - 1) // tn * tn
    lines.append(f'  tm_sweep::conv_oracle<{cid}_kernel_base>("{cid}", {fam.cxx_problem}, {last_row}, {last_col}, '
                 f"{fam.tiles});")
    return "\n".join(lines)


def digest(values: np.ndarray) -> tuple[int, int, int]:
    """The C++ ``offsets_digest`` of a sequence (unsigned 64-bit arithmetic)."""
    x = (values.astype(np.int64) + 2).astype(np.uint64)
    n = np.arange(1, x.size + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h1 = int(np.sum(n * x, dtype=np.uint64))
        h2 = int(np.sum((np.uint64(2) * n + np.uint64(1)) * x * x, dtype=np.uint64))
    return x.size, h1, h2
