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

from threadmap.sweep.library import Configuration, is_strided_dgrad

#: C++ of the order-dependent checksums of a sequence of element offsets (-1: the access is
#: off), as :func:`digest` computes them (each oracle's namespace has its own copy)
OFFSETS_DIGEST = """\
struct offsets_digest {
  unsigned long long n = 0, h1 = 0, h2 = 0;
  void add(long long v) {
    unsigned long long x = (unsigned long long)(v + 2);
    ++n;
    h1 += n * x;
    h2 += (2 * n + 1) * x * x;
  }
};
"""

#: C++ of the oracle: checksums of an iterator's offsets (appended to the extraction prelude)
CONV_ORACLE = """\
namespace tm_sweep {

// order-dependent checksums of a sequence of element offsets (-1: the access is off)
""" + OFFSETS_DIGEST + """
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

// run `body` in a child process: an iterator that faults or exits host-side costs its own
// configuration's oracle, not the batch's other configurations
template <class F> void isolated(const char* id, const char* key, F body) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    body();
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    std::printf("%s\\t%s\\t?the iterator run host-side ended with status %d\\n", id, key, status);
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
  isolated(id, "oracle.A0", [&] { iterator_offsets<ItA>(id, "oracle.A0", pa, ps, 0, 0, tiles); });
  isolated(id, "oracle.A1", [&] { iterator_offsets<ItA>(id, "oracle.A1", pa, ps, last_row, 0, tiles); });
  isolated(id, "oracle.B0", [&] { iterator_offsets<ItB>(id, "oracle.B0", pb, ps, 0, 0, tiles); });
  isolated(id, "oracle.B1", [&] { iterator_offsets<ItB>(id, "oracle.B1", pb, ps, 0, last_col, tiles); });
}

}  // namespace tm_sweep
"""

#: C++ of the oracles whose iterators may need a GPU (appended after :data:`CONV_ORACLE` only for
#: programs with such a configuration, so the other configurations' program text, and their
#: cached extractions, stay as they are).  ``ImplicitGemmConvolutionStridedDgrad``'s iterators
#: take the CTA's filter phase, which the kernel derives from its grid row.  The Optimized
#: strided Dgrad iterators' ``advance()`` is ``CUTLASS_DEVICE`` (inline PTX), so host-side it
#: ends the program: such a walk runs on the GPU (one thread, the same walk) when the machine
#: has one.  The conv3d Wgrad activation iterators' ``get()`` alone is ``CUTLASS_DEVICE``: its
#: body (the Params' layout at ``at()``) is computed instead.
CONV_ORACLE_DEVICE = """\
namespace tm_sweep {

// an access's element offset: the iterator's get() from the base
struct by_get {
  template <class It> CUTLASS_HOST_DEVICE long long operator()(It const& it, char const* base) const {
    return (reinterpret_cast<char const*>(it.get()) - base) * 8 / \
int(cutlass::sizeof_bits<typename It::Element>::value);
  }
};

// get()'s body, params_.layout(at()) from the unmoved base pointer, for an iterator whose get()
// alone is CUTLASS_DEVICE (conv3d Wgrad's activation iterators); `layout` is the one its Params got
template <class Layout> struct by_at {
  Layout layout;
  template <class It> CUTLASS_HOST_DEVICE long long operator()(It const& it, char const*) const {
    return layout(it.at());
  }
};

// every thread's accesses over `tiles` k-tiles (as iterator_offsets), the iterator built by
// make(base, thread), each offset given by addr; the digest's three words in out
template <class It, class Make, class Addr>
CUTLASS_HOST_DEVICE void walk_digest(Make const& make, Addr const& addr, int tiles, unsigned long long* out) {
  using Element = typename It::Element;
  int const accesses = It::ThreadMap::Iterations::kCount * It::kAccessesPerVector;
  char const* base = reinterpret_cast<char const*>(std::uintptr_t(1) << 40);
  unsigned long long n = 0, h1 = 0, h2 = 0;
  for (int t = 0; t < It::ThreadMap::kThreads; ++t) {
    It it = make(reinterpret_cast<Element const*>(base), t);
    for (int k = 0; k < tiles; ++k) {
      it.set_iteration_index(0);
      for (int i = 0; i < accesses; ++i, ++it) {
        long long v = -1;
        if (it.valid()) v = addr(it, base);
        unsigned long long x = (unsigned long long)(v + 2);
        ++n;
        h1 += n * x;
        h2 += (2 * n + 1) * x * x;
      }
      it.advance();
    }
  }
  out[0] = n;
  out[1] = h1;
  out[2] = h2;
}

template <class It, class Make, class Addr>
__global__ void walk_kernel(Make make, Addr addr, int tiles, unsigned long long* out) {
  walk_digest<It>(make, addr, tiles, out);
}

// the walk host-side in a child process; where that fails (a device-only advance()), on the GPU
template <class It, class Make, class Addr = by_get>
void walk(const char* id, const char* key, Make const& make, int tiles, Addr addr = Addr()) {
  unsigned long long h[3] = {0, 0, 0};
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    walk_digest<It>(make, addr, tiles, h);
    std::printf("%s\\t%s\\t%llu %llu %llu\\n", id, key, h[0], h[1], h[2]);
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("%s\\t%s\\t?its iterator runs only on a GPU (host-side it ended with status %d) and this "
                "machine has none\\n", id, key, status);
    return;
  }
  unsigned long long* d = nullptr;
  cudaError_t e = cudaMalloc(&d, sizeof h);
  if (e == cudaSuccess) {
    walk_kernel<It><<<1, 1>>>(make, addr, tiles, d);
    e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    cudaFree(d);
  }
  if (e != cudaSuccess)
    std::printf("%s\\t%s\\t?its GPU walk failed: %s\\n", id, key, cudaGetErrorString(e));
  else
    std::printf("%s\\t%s\\t%llu %llu %llu\\n", id, key, h[0], h[1], h[2]);
}

// how the kernels construct their iterators (what a walk copies to the GPU)
template <class It, class PS> struct make_plain {
  typename It::Params params;
  PS ps;
  cutlass::MatrixCoord at;
  CUTLASS_HOST_DEVICE It operator()(typename It::Element const* p, int t) const { return It(params, ps, p, t, at); }
};

// implicit_gemm_convolution_strided_dgrad.h: A takes the stride divmods and the filter phase
template <class It> struct make_strided_a {
  typename It::Params params;
  cutlass::conv::Conv2dProblemSize ps;
  cutlass::FastDivmod dh, dw;
  int start_r, start_s;
  cutlass::MatrixCoord at;
  CUTLASS_HOST_DEVICE It operator()(typename It::Element const* p, int t) const {
    return It(params, ps, p, t, dh, dw, start_r, start_s, at);
  }
};

template <class It> struct make_strided_b {
  typename It::Params params;
  cutlass::conv::Conv2dProblemSize ps;
  int start_r, start_s;
  cutlass::MatrixCoord at;
  CUTLASS_HOST_DEVICE It operator()(typename It::Element const* p, int t) const {
    return It(params, ps, p, t, start_r, start_s, at);
  }
};

// conv_oracle, each walk host-side or on the GPU; B's offsets by_at (conv3d Wgrad)
template <class Kernel, class PS>
void conv_oracle_device(const char* id, PS const& ps, int last_row, int last_col, int tiles) {
  using Mma = typename Kernel::Mma;
  using ItA = typename Mma::IteratorA;
  using ItB = typename Mma::IteratorB;
  auto la = ItA::Layout::packed(cutlass::conv::implicit_gemm_tensor_a_extent(Kernel::kConvolutionalOperator, ps));
  auto lb = ItB::Layout::packed(cutlass::conv::implicit_gemm_tensor_b_extent(Kernel::kConvolutionalOperator, ps));
  typename ItA::Params pa = ItA::getParams(ps, la);
  typename ItB::Params pb(ps, lb);
  walk<ItA>(id, "oracle.A0", make_plain<ItA, PS>{pa, ps, cutlass::MatrixCoord(0, 0)}, tiles);
  walk<ItA>(id, "oracle.A1", make_plain<ItA, PS>{pa, ps, cutlass::MatrixCoord(last_row, 0)}, tiles);
  by_at<decltype(lb)> at{lb};
  walk<ItB>(id, "oracle.B0", make_plain<ItB, PS>{pb, ps, cutlass::MatrixCoord(0, 0)}, tiles, at);
  walk<ItB>(id, "oracle.B1", make_plain<ItB, PS>{pb, ps, cutlass::MatrixCoord(0, last_col)}, tiles, at);
}

// the strided Dgrad kernel's construction: grid row m's filter phase is
// m / strided_dgrad_tile_m_per_filter, split into (start_r, start_s) by stride_w
template <class Kernel>
void conv_oracle_strided(const char* id, cutlass::conv::Conv2dProblemSize const& ps, int last_row, int last_col,
                         int tiles) {
  using Mma = typename Kernel::Mma;
  using ItA = typename Mma::IteratorA;
  using ItB = typename Mma::IteratorB;
  auto la = ItA::Layout::packed(cutlass::conv::implicit_gemm_tensor_a_extent(Kernel::kConvolutionalOperator, ps));
  auto lb = ItB::Layout::packed(cutlass::conv::implicit_gemm_tensor_b_extent(Kernel::kConvolutionalOperator, ps));
  typename ItA::Params pa = ItA::getParams(ps, la);
  typename ItB::Params pb(ps, lb);
  cutlass::FastDivmod dh(ps.stride_h), dw(ps.stride_w);
  int const per = cutlass::conv::strided_dgrad_tile_m_per_filter(ps, Mma::Shape::kM);
  int const first = 0, last = last_row / Mma::Shape::kM / per, phases = ps.stride_h * ps.stride_w;
  walk<ItA>(id, "oracle.A0", make_strided_a<ItA>{pa, ps, dh, dw, first / ps.stride_w, first % ps.stride_w,
                                                cutlass::MatrixCoord(0, 0)}, tiles);
  walk<ItA>(id, "oracle.A1", make_strided_a<ItA>{pa, ps, dh, dw, last / ps.stride_w, last % ps.stride_w,
                                                cutlass::MatrixCoord(last_row, 0)}, tiles);
  walk<ItB>(id, "oracle.B0", make_strided_b<ItB>{pb, ps, 0, 0, cutlass::MatrixCoord(0, 0)}, tiles);
  walk<ItB>(id, "oracle.B1", make_strided_b<ItB>{pb, ps, (phases - 1) / ps.stride_w, (phases - 1) % ps.stride_w,
                                                cutlass::MatrixCoord(0, last_col)}, tiles);
}

}  // namespace tm_sweep
"""


def needs_device_oracle(cfg: Configuration) -> bool:
    """A configuration whose oracle is :data:`CONV_ORACLE_DEVICE`'s: a strided Dgrad (its
    iterators take a filter phase; the Optimized ones' ``advance()`` is device-only), or a
    conv3d Wgrad (its activation iterator's ``get()`` is device-only)."""
    f = cfg.fields
    return is_strided_dgrad(cfg.kind, cfg.fields) or (cfg.kind == "conv3d" and f.get("conv_kind") == "Wgrad")


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
    # where a CTA's A and B tiles are (a strided Dgrad CTA's filter tap is its grid row's phase)
    at_a: tuple[str, str] = ("bx", "bz")
    at_b: tuple[str, str] = ("bz", "by")
    phases: int = 1                # filter phases of the sample (strided Dgrad: R*S; B holds one K per phase)


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
    """The spec family of a convolution configuration, or :class:`NoFamily`.

    Fprop (unit stride and dilation, no padding, cross-correlation): GEMM (M, N, K) =
    (N*P*Q, K, R*S*C); A is the activation at (n, p + r, q + s, c), B the filter (k, r, s, c);
    the GEMM k runs (c in the k-tile, s, r, k-tile of C) as the iterators' ``advance()`` steps
    s, then r, then C by kK, so C is a multiple of kK.

    Dgrad (unit stride and dilation, convolution mode, padding R - 1 and S - 1: every filter tap
    of every input position then lies inside the output gradient, whose extents are
    P = H + R - 1, Q = W + S - 1): GEMM (N*H*W, C, R*S*K); A is the output gradient at
    (n, h + r, w + s, k) (the iterator's p = h + pad - (R - 1 - r)), B the filter (k, r, s, c);
    k runs (k in the k-tile, s, r, k-tile of K), so K is a multiple of kK.

    Wgrad (unit stride and dilation, no padding, cross-correlation): GEMM (K, R*S*C, N*P*Q); A is
    the output gradient (n, p, q, k), B the activation at (n, p + r, q + s, c), the GEMM n being
    (c, s, r).  The activation iterator checks only that (n, h, w) is inside the tensor, not that
    r < R, so a ragged last CTA column would read real elements; R*S*C is a multiple of kN.

    Conv3d adds a depth dimension (Z, D, T) outermost in each.  One group (the group kernels'
    iterators, with groups = 1, are the plain ones'), split-k 1."""
    f = cfg.fields
    if f["layout_a"] in INTERLEAVED_CONV:
        return interleaved_family(cfg)
    conv, algo = f["conv_kind"], f["iterator_algorithm"]
    tm, tn, tk = f["threadblock"]
    align_a, align_b = int(f["align_a"]), int(f["align_b"])
    three = cfg.kind == "conv3d"
    if algo in ("FixedChannels", "FewChannels"):
        if conv != "Fprop" or three:
            raise NoFamily(f"the {algo} iterators of a conv{'3d' if three else '2d'} {conv} are not modelled")
        return _few_channels(cfg)
    if algo not in ("Analytic", "Optimized"):
        raise NoFamily(f"the {algo} iterators are not modelled")
    if is_strided_dgrad(cfg.kind, f):
        return _strided_dgrad(cfg)
    # (output, input, filter) size names per spatial dimension, innermost first
    dims = [("Q", "W", "S"), ("P", "H", "R")] + ([("Z", "D", "T")] if three else [])
    filt = [r for _, _, r in dims]
    # the sample: 3x3 (x2) filters, two k-tiles of channels, two CTA columns (the second
    # ragged where the family allows), enough images for two CTA rows (the second ragged)
    sample: dict[str, int] = {}
    for i, (o, x, r) in enumerate(dims):
        sample[r] = 3 if i < 2 else 2
        sample[x if conv == "Dgrad" else o] = 7 if i == 0 else 5 if i == 1 else 2
    # the free spatial names: the GEMM's output positions (Fprop, Wgrad) or input (Dgrad)
    free = [x if conv == "Dgrad" else o for o, x, _ in dims]
    big = [f"({v}+{r}-1)" for v, r in zip(free, filt, strict=True)]   # the other tensor's extents
    positions = int(np.prod([sample[v] for v in free]))
    fil = _packed(filt, "C")
    if conv == "Fprop":
        act = _packed(big, "C")
        a = _layout([([*free, "N"], act), ([str(tk), *filt, f"C/{tk}"], ["1", *act[:-1], str(tk)])])
        b = _layout([([str(tk), *filt, f"C/{tk}"], ["1", *fil[:-1], str(tk)]), (["K"], [fil[-1]])])
        m, n, k = "*".join(["N", *free]), "K", "*".join([*filt, "C"])
        sample["N"] = tm // positions + 1
        sample["C"], sample["K"] = 2 * tk, 2 * tn - align_b
        sizes_ck = {"C": (tk, [tk, 2 * tk]), "K": (align_b, [2 * tn - align_b, 2 * tn])}
        assume = [f"C % {tk} == 0"]
        what = f"unit stride and dilation, no padding, cross-correlation, one group, C a multiple of kK = {tk}"
    elif conv == "Dgrad":
        dy = _packed(big, "K")
        a = _layout([([*free, "N"], dy), ([str(tk), *filt, f"K/{tk}"], ["1", *dy[:-1], str(tk)])])
        # the filter's (k, r, s) strides: k is its batch mode
        b = _layout([([str(tk), *filt, f"K/{tk}"], [fil[-1], *fil[:-1], f"{tk}*{fil[-1]}"]), (["C"], ["1"])])
        m, n, k = "*".join(["N", *free]), "C", "*".join([*filt, "K"])
        sample["N"] = tm // positions + 1
        sample["K"], sample["C"] = 2 * tk, 2 * tn - align_b
        sizes_ck = {"K": (tk, [tk, 2 * tk]), "C": (align_b, [2 * tn - align_b, 2 * tn])}
        assume = [f"K % {tk} == 0"]
        what = (f"unit stride and dilation, convolution mode, padding R - 1 and S - 1 (every filter tap in "
                f"bounds; for 1x1 filters every unpadded problem), one group, K a multiple of kK = {tk}")
    else:
        a = _layout([(["K"], ["1"]), (["*".join(["N", *free])], ["K"])])
        act = _packed(big, "C")
        b = _layout([([*free, "N"], act), (["C", *filt], ["1", *act[:-1]])])
        m, n, k = "K", "*".join([*filt, "C"]), "*".join(["N", *free])
        sample["N"] = tk // positions + 1
        sample["K"], sample["C"] = 2 * tm - align_a, tn
        sizes_ck = {"K": (align_a, [2 * tm - align_a, 2 * tm]), "C": (align_b, [tn, 2 * tn])}
        assume = [f"{n} % {tn} == 0"]
        what = (f"unit stride and dilation, no padding, cross-correlation, one group, R*S*C a multiple of "
                f"kN = {tn}")
    # the ranges bound what the model proves over (a grid's z stays within 65535 k-tiles and
    # a tensor within 2^31 elements per mode); the samples are what the checks enumerate
    spatial = (16 if three else 64) if conv == "Wgrad" else (64 if three else 256)
    sizes: dict[str, dict[str, Any]] = {"N": {"min": 1, "max": spatial, "samples": sorted({1, sample["N"]})}}
    for v, r in zip(free, filt, strict=True):
        sizes[v] = {"min": 1, "max": spatial, "samples": [sample[v]]}
        sizes[r] = {"min": 1, "max": 8, "samples": [1, 3] if r != "T" else [1, 2]}
    for name, (mult, samples) in sizes_ck.items():
        # a conv3d Wgrad's grid y is ceil(T*R*S*C / kN): C up to 4096 keeps it within 65535
        top = 1024 if mult == tk else 1 << 12 if three and conv == "Wgrad" else 1 << 14
        sizes[name] = {"min": mult, "max": top // mult * mult, "samples": samples}
        if mult > 1:
            sizes[name]["multiple_of"] = mult
    return _finish(cfg, sizes, assume, (m, n, k), a, b, sample, what)


def _finish(cfg: Configuration, sizes: dict[str, dict[str, Any]], assume: list[str], mnk: tuple[str, str, str],
            a: str, b: str, sample: dict[str, int], what: str, **more: Any) -> Family:
    """A family with the sample's extents, k-tiles and C++ problem."""
    env = dict(sample)
    M, N, K = (_evaluate(x, env) for x in mnk)
    tk = cfg.fields["threadblock"][2]
    return Family(sizes, assume, *mnk, a, b, sample, problem_cxx(cfg, env), what, tiles=-(-K // tk),
                  extents={"M": M, "N": N, "K": K}, **more)


def _few_channels(cfg: Configuration) -> Family:
    """Fprop with the FixedChannels or FewChannels iterators (unit stride and dilation, no
    padding, cross-correlation): the GEMM k is one index ``rsc`` over (c, s, r), so a k-tile
    spans filter taps, and an access of ``kElements`` channels (FixedChannels: C is exactly
    that; FewChannels: a multiple of it).  The activation iterator checks n, h and w but not
    that the tap is inside the filter (a last k-tile past R*S*C reads real activations that the
    filter side zeroes), so R*S*C is a multiple of kK."""
    f = cfg.fields
    tm, tn, tk = f["threadblock"]
    align_a, align_b = int(f["align_a"]), int(f["align_b"])
    fixed = f["iterator_algorithm"] == "FixedChannels"
    dims = [("Q", "W", "S"), ("P", "H", "R")]
    free, filt = [o for o, _, _ in dims], [r for _, _, r in dims]
    act = _packed([f"({o}+{r}-1)" for o, _, r in dims], "C")
    fil = _packed(filt, "C")
    a = _layout([([*free, "N"], act), (["C", *filt], ["1", *act[:-1]])])
    b = _layout([(["C", *filt], ["1", *fil[:-1]]), (["K"], [fil[-1]])])
    # the sample: two k-tiles of (c, s, r), two CTA rows (the second ragged), two CTA columns
    c = align_a if fixed else 2 * align_a
    rs = 2 * tk // c
    sample = {"Q": 7, "P": 5, "R": 2 if rs % 2 == 0 else 1, "C": c, "K": 2 * tn - align_b}
    sample["S"] = rs // sample["R"]
    sample["N"] = tm // 35 + 1
    sizes: dict[str, dict[str, Any]] = {
        "N": {"min": 1, "max": 256, "samples": sorted({1, sample["N"]})},
        "P": {"min": 1, "max": 256, "samples": [sample["P"]]},
        "Q": {"min": 1, "max": 256, "samples": [sample["Q"]]},
        "R": {"min": 1, "max": 64, "samples": [sample["R"]]},
        "S": {"min": 1, "max": 64, "samples": [sample["S"]]},
        "K": {"min": align_b, "max": (1 << 14) // align_b * align_b, "samples": [2 * tn - align_b, 2 * tn]},
        "C": ({"min": c, "max": c, "samples": [c]} if fixed else
              {"min": align_a, "max": 256 // align_a * align_a, "samples": [c], "multiple_of": align_a}),
    }
    if align_b > 1:
        sizes["K"]["multiple_of"] = align_b
    what = (f"unit stride and dilation, no padding, cross-correlation, one group, "
            f"{'C = ' if fixed else 'C a multiple of '}{align_a} (the access), R*S*C a multiple of kK = {tk}")
    return _finish(cfg, sizes, [f"R*S*C % {tk} == 0"], ("N*P*Q", "K", "R*S*C"), a, b, sample, what)


def _strided_dgrad(cfg: Configuration) -> Family:
    """Dgrad with the strided iterators (``ImplicitGemmConvolutionStridedDgrad``) for a stride
    equal to the filter (stride_h = R, stride_w = S), no padding, unit dilation, convolution
    mode: every input position has one filter tap, the transposed convolution that upsamples
    by the stride.  A CTA's grid row picks a filter phase ``f = m / T`` (``T`` CTA rows per
    phase, ``strided_dgrad_tile_m_per_filter``); the phase's GEMM is (N*P*Q, C, K): A is the
    output gradient (n, p, q, k) in every phase, B the filter (k, r, s, c) at the phase's tap
    (start_r, start_s) = divmod(f, S).  With N*P*Q a multiple of kM the phases' rows do not
    leave holes in the grid: A is ((N*P*Q, R*S), K) with a phase stride 0, B is
    ((K, R*S), C) and a CTA's B tile is at k-tile ``bz + (K/kK) f``."""
    f = cfg.fields
    tm, tn, tk = f["threadblock"]
    align_b = int(f["align_b"])
    dims = [("Q", "W", "S"), ("P", "H", "R")]
    free, filt = [o for o, _, _ in dims], [r for _, _, r in dims]
    dy = _packed(free, "K")
    fil = _packed(filt, "C")
    a = _layout([([*free, "N", "R*S"], [*dy, "0"]), (["K"], ["1"])])
    b = _layout([(["K", "R*S"], [fil[-1], "C"]), (["C"], ["1"])])
    # the sample: stride (2, 3), two CTA rows per phase, two k-tiles, two CTA columns (ragged)
    sample = {"Q": 4, "P": 4, "R": 2, "S": 3, "N": max(1, 2 * tm // 16), "K": 2 * tk, "C": 2 * tn - align_b}
    sizes: dict[str, dict[str, Any]] = {
        "N": {"min": 1, "max": 256, "samples": [sample["N"]]},
        "P": {"min": 1, "max": 256, "samples": [sample["P"]]},
        "Q": {"min": 1, "max": 256, "samples": [sample["Q"]]},
        "R": {"min": 1, "max": 8, "samples": [1, 2]},
        "S": {"min": 1, "max": 8, "samples": [1, 3]},
        "K": {"min": tk, "max": 1024 // tk * tk, "samples": [tk, 2 * tk], "multiple_of": tk},
        "C": {"min": align_b, "max": (1 << 14) // align_b * align_b, "samples": [2 * tn - align_b, 2 * tn]},
    }
    if align_b > 1:
        sizes["C"]["multiple_of"] = align_b
    per = f"(N*P*Q/{tm})"
    what = (f"stride equal to the filter (R, S), no padding, unit dilation, convolution mode, one group, "
            f"K a multiple of kK = {tk}, N*P*Q a multiple of kM = {tm}")
    return _finish(cfg, sizes, [f"K % {tk} == 0", f"N*P*Q % {tm} == 0"], ("N*P*Q*R*S", "C", "K"), a, b, sample,
                   what, at_b=(f"bz+(K/{tk})*(bx/{per})", "by"), phases=sample["R"] * sample["S"])


def problem_cxx(cfg: Configuration, s: Mapping[str, int]) -> str:
    """The C++ problem size of a sample of :func:`family` (``Conv2dProblemSize`` /
    ``Conv3dProblemSize``): the derived extents and the padding of the family."""
    dgrad = cfg.fields["conv_kind"] == "Dgrad"
    strided = dgrad and is_strided_dgrad(cfg.kind, cfg.fields)
    mode = "cutlass::conv::Mode::kConvolution" if dgrad else "cutlass::conv::Mode::kCrossCorrelation"
    dims = [("Q", "W", "S"), ("P", "H", "R")] + ([("Z", "D", "T")] if cfg.kind == "conv3d" else [])
    ext: dict[str, int] = {}
    pad: dict[str, int] = {}
    stride = {r: 1 for _, _, r in dims}
    for o, x, r in dims:
        if strided:
            ext[o], ext[x], pad[r], stride[r] = s[o], s[o] * s[r], 0, s[r]
        elif dgrad:
            ext[x], ext[o], pad[r] = s[x], s[x] + s[r] - 1, s[r] - 1
        else:
            ext[o], ext[x], pad[r] = s[o], s[o] + s[r] - 1, 0
    n, c, k = s["N"], s["C"], s["K"]
    if cfg.kind == "conv3d":
        return (f"cutlass::conv::Conv3dProblemSize({n}, {ext['D']}, {ext['H']}, {ext['W']}, {c}, {k}, {s['T']}, "
                f"{s['R']}, {s['S']}, {ext['Z']}, {ext['P']}, {ext['Q']}, {pad['T']}, {pad['R']}, {pad['S']}, "
                f"1, 1, 1, 1, 1, 1, {mode}, 1, 1)")
    return (f"cutlass::conv::Conv2dProblemSize({n}, {ext['H']}, {ext['W']}, {c}, {k}, {s['R']}, {s['S']}, "
            f"{ext['P']}, {ext['Q']}, {pad['R']}, {pad['S']}, {stride['R']}, {stride['S']}, 1, 1, {mode}, 1, 1)")


def conv_calls(cfg: Configuration, cid: str) -> str:
    """``main``'s lines for one convolution configuration: its mainloop with the contiguous
    modes of its kind, and the oracle on the family's sample (none without a family)."""
    ma, mb = CONTIGUOUS_MODES[cfg.fields["conv_kind"]]
    lines = [f'  tm_sweep::mainloop<{cid}_kernel_base>("{cid}", {ma}, {mb});']
    if cfg.fields["layout_a"] in INTERLEAVED_CONV:
        lines += _interleaved_view_calls(cid)
    try:
        fam = family(cfg)
    except NoFamily:
        return lines[0]
    tm, tn, _ = cfg.fields["threadblock"]
    last_row = (fam.extents["M"] - 1) // tm * tm
    last_col = (fam.extents["N"] - 1) // tn * tn
    oracle = "conv_oracle_strided" if is_strided_dgrad(cfg.kind, cfg.fields) else \
        "conv_oracle_device" if needs_device_oracle(cfg) else "conv_oracle"
    lines.append(f'  tm_sweep::{oracle}<{cid}_kernel_base>("{cid}", {fam.cxx_problem}, {last_row}, {last_col}, '
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


# --- interleaved tensors (TensorNCxHWx<I> activations, TensorCxRSKx<I> filters) ------------------
#: the generator's short names of interleaved activation layouts, and their interleave
INTERLEAVED_CONV = {"nc32hw32": 32, "nc64hw64": 64}


def interleaved_family(cfg: Configuration) -> Family:
    """The spec family of a conv2d Fprop of ``TensorNCxHWx<I>`` activations and
    ``TensorCxRSKx<I>`` filters: the problems of the packed Fprop family (the iterators'
    coordinates are the same; only the layout objects differ), its layouts in the coordinates
    of the interleaved mainloop's pitch-linear views (:mod:`threadmap.sweep.interleaved`).

    ``TensorNCxHWx<I>`` puts (n, h, w, c) at ``c % I + I*w + I*W*h + I*W*H*(c / I) + H*W*C*n``,
    ``TensorCxRSKx<I>`` (k, r, s, c) at ``c % I + I*k + I*K*s + I*K*S*r + I*K*S*R*(c / I)``
    (``cutlass/layout/tensor.h``, packed).  The GEMM k is (c in the k-tile, s, r, k-tile of C)
    and the views split its channel ``c = ci + I*j`` of the k-tile: A's view is
    ``((I, Q, P, N), (kK/I, S, R, C/kK))``, B's ``((kK/I, S, R, C/kK), (I, K))``."""
    import dataclasses

    f = cfg.fields
    i = INTERLEAVED_CONV[f["layout_a"]]
    tk = int(f["threadblock"][2])
    if cfg.kind != "conv2d" or f["conv_kind"] != "Fprop" or f["layout_b"] != f"c{i}rsk{i}" or tk % i:
        raise NoFamily(f"interleaved {f['layout_a']}/{f['layout_b']} {cfg.kind} {f['conv_kind']} with kK = {tk}: "
                       "only conv2d Fprop of TensorNCxHWx<I> and TensorCxRSKx<I> with kK a multiple of I is modelled")
    if f["group_mode"] != "NoneGroup":
        raise NoFamily(f"interleaved tensors with groups ({f['group_mode']}) are not modelled")
    packed = family(dataclasses.replace(cfg, fields={**f, "layout_a": "nhwc", "layout_b": "nhwc"}))
    w, h, j = "(Q+S-1)", "(P+R-1)", tk // i
    a = _layout([([str(i), "Q", "P", "N"], ["1", str(i), f"{i}*{w}", f"{h}*{w}*C"]),
                 ([str(j), "S", "R", f"C/{tk}"], [f"{i}*{w}*{h}", str(i), f"{i}*{w}", f"{w}*{h}*{tk}"])])
    b = _layout([([str(j), "S", "R", f"C/{tk}"], [f"{i}*K*S*R", f"{i}*K", f"{i}*K*S", f"{i}*K*S*R*{j}"]),
                 ([str(i), "K"], ["1", str(i)])])
    return dataclasses.replace(packed, a=a, b=b, what=f"{packed.what}; TensorNCxHWx<{i}> and TensorCxRSKx<{i}>")


def _interleaved_view_calls(cid: str) -> list[str]:
    """Print the maps the interleaved global iterators transpose (the spec's, over the views)."""
    out = []
    for w, mode in (("A", 0), ("B", 1)):
        tm = f"typename {cid}_kernel_base::Mma::Iterator{w}::ThreadMap::ThreadMap"
        out += [f'  tm_sweep::map_spec<{tm}>("{cid}", "oracle.view{w}.map", {mode});',
                f'  tm_sweep::map_offsets<{tm}>("{cid}", "oracle.view{w}");']
    return out
