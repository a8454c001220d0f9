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
    if algo not in ("Analytic", "Optimized"):
        raise NoFamily(f"the {algo} iterators (a fixed filter-channel count per access) are not modelled")
    if conv == "Dgrad" and f["stride_support"] == "Strided" and not three:
        raise NoFamily("strided dgrad (ImplicitGemmConvolutionStridedDgrad: its iterators start at a filter "
                       "phase per CTA) is not modelled")
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
        top = 1024 if mult == tk else 1 << 14
        sizes[name] = {"min": mult, "max": top // mult * mult, "samples": samples}
        if mult > 1:
            sizes[name]["multiple_of"] = mult
    env = dict(sample)
    M, N, K = _evaluate(m, env), _evaluate(n, env), _evaluate(k, env)
    return Family(sizes, assume, m, n, k, a, b, sample, problem_cxx(cfg, env), what, tiles=-(-K // tk),
                  extents={"M": M, "N": N, "K": K})


def problem_cxx(cfg: Configuration, s: Mapping[str, int]) -> str:
    """The C++ problem size of a sample of :func:`family` (``Conv2dProblemSize`` /
    ``Conv3dProblemSize``): the derived extents and the padding of the family."""
    dgrad = cfg.fields["conv_kind"] == "Dgrad"
    mode = "cutlass::conv::Mode::kConvolution" if dgrad else "cutlass::conv::Mode::kCrossCorrelation"
    dims = [("Q", "W", "S"), ("P", "H", "R")] + ([("Z", "D", "T")] if cfg.kind == "conv3d" else [])
    ext: dict[str, int] = {}
    pad: dict[str, int] = {}
    for o, x, r in dims:
        if dgrad:
            ext[x], ext[o], pad[r] = s[x], s[x] + s[r] - 1, s[r] - 1
        else:
            ext[o], ext[x], pad[r] = s[o], s[o] + s[r] - 1, 0
    n, c, k = s["N"], s["C"], s["K"]
    if cfg.kind == "conv3d":
        return (f"cutlass::conv::Conv3dProblemSize({n}, {ext['D']}, {ext['H']}, {ext['W']}, {c}, {k}, {s['T']}, "
                f"{s['R']}, {s['S']}, {ext['Z']}, {ext['P']}, {ext['Q']}, {pad['T']}, {pad['R']}, {pad['S']}, "
                f"1, 1, 1, 1, 1, 1, {mode}, 1, 1)")
    return (f"cutlass::conv::Conv2dProblemSize({n}, {ext['H']}, {ext['W']}, {c}, {k}, {s['R']}, {s['S']}, "
            f"{ext['P']}, {ext['Q']}, {pad['R']}, {pad['S']}, 1, 1, 1, 1, {mode}, 1, 1)")


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
