"""Hypothesis strategies for CuTe layouts, swizzles, tiled copies, CUTLASS thread maps and specs.

Use them in your own property tests::

    from hypothesis import given
    from threadmap.testing.strategies import layouts, thread_layouts, tiled_copies

    @given(layouts(max_size=256))
    def test_coalesce_keeps_the_function(a):
        assert coalesce(a).table().tolist() == a.table().tolist()

Every strategy is a function returning a :class:`hypothesis.strategies.SearchStrategy`; its
keyword arguments bound what it generates.  Everything is built from hypothesis primitives
(``integers``, ``booleans``, ``sampled_from``, ``permutations``, ``one_of`` ordered simplest
first), never from a seed fed to a private random generator, so a failing example shrinks
*structurally*: toward flat (rank 1, depth 0) int tuples with small leaves, compact
column-major strides, no swizzle (``Sw<0,0,0>``), scalar accesses, one block.

Every generated object is valid as the C++ headers define validity: shapes are positive,
swizzles satisfy ``Swizzle<B,M,S>``'s static_asserts, tiled copies are built with
:func:`threadmap.layout.make_tiled_copy` (the atom's checks), thread maps satisfy the
``static_assert``s of ``cutlass/transform/pitch_linear_thread_map.h`` (the classes raise on
anything else), and specs load with :func:`threadmap.api.load`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from hypothesis import assume
from hypothesis import strategies as st

from threadmap.cutlass import (
    PitchLinearStripminedThreadMap,
    PitchLinearThreadMap,
    PitchLinearWarpRakedThreadMap,
)
from threadmap.errors import LayoutError
from threadmap.layout import (
    ComposedLayout,
    CopyAtom,
    Layout,
    Swizzle,
    TiledCopy,
    TiledMMA,
    composition,
    cosize,
    get_copy_op,
    get_mma_atom,
    logical_divide,
    logical_product,
    make_tiled_copy,
    make_tiled_mma,
    size,
)
from threadmap.layout import _ as UNDERSCORE
from threadmap.layout.int_tuple import flatten_to_tuple, product

__all__ = [
    "gmma_operands",
    "umma_operands",
    "range_specs",
    "ELEMENT_TYPES",
    "MAX_SIZE",
    "admissible",
    "any_layouts",
    "composed_smem_layouts",
    "composition_pairs",
    "compact_layouts",
    "coords",
    "divide_pairs",
    "injective_layouts",
    "int_tuples",
    "layouts",
    "pow2_layouts",
    "product_pairs",
    "shapes",
    "slice_coords",
    "smem_layouts",
    "specs",
    "swizzled_layouts",
    "swizzles",
    "thread_layouts",
    "SMEM_KINDS",
    "SPEC_FAMILIES",
    "THREAD_MAP_KINDS",
    "SM80_MMA_ATOMS",
    "TiledCopyCase",
    "TiledMMACase",
    "thread_maps",
    "tilers",
    "tiled_copies",
    "tiled_copy_cases",
    "tiled_mma_cases",
    "tuple_tilers",
    "value_layouts",
]

#: default bound on ``size`` (small enough for a test to evaluate a layout on its whole domain)
MAX_SIZE = 4096

#: spec element name -> (bits, the C++ value type of a copy atom)
ELEMENT_TYPES: dict[str, tuple[int, str]] = {
    "u8": (8, "uint8_t"), "f16": (16, "half_t"), "f32": (32, "float"), "f64": (64, "double"),
}
_VALUE_TYPE = {bits: cxx for bits, cxx in ELEMENT_TYPES.values()}
_POW2 = tuple(1 << k for k in range(16))


# ============================================================================ int tuples, shapes
def _profile(draw: st.DrawFn, max_depth: int, max_rank: int, max_leaves: int) -> Any:
    """A tree skeleton (``0`` a leaf, a tuple of skeletons otherwise) with at most
    ``max_leaves`` leaves; a single leaf is what the booleans shrink to."""
    def node(depth_left: int, avail: int) -> tuple[Any, int]:
        if depth_left <= 0 or avail <= 0 or not draw(st.booleans()):
            return 0, 1
        r = draw(st.integers(1, max(1, min(max_rank, avail))))
        kids, used = [], 0
        for i in range(r):
            # leave one leaf for each sibling still to come
            kid, n = node(depth_left - 1, avail - used - (r - i - 1))
            kids.append(kid)
            used += n
        return tuple(kids), used

    return node(max_depth, max(1, max_leaves))[0]


def _fill(profile: Any, leaves: Sequence[Any]) -> Any:
    it = iter(leaves)

    def rec(p: Any) -> Any:
        return tuple(rec(x) for x in p) if isinstance(p, tuple) else next(it)

    return rec(profile)


def _n_leaves(profile: Any) -> int:
    return len(flatten_to_tuple(profile)) if isinstance(profile, tuple) else 1


def _extent(draw: st.DrawFn, hi: int, pow2: bool) -> int:
    """A positive extent ``<= hi``: a power of two first (CuTe's usual case, shrinking to 1),
    any integer second."""
    hi = max(1, hi)
    p2 = st.sampled_from([p for p in _POW2 if p <= hi])
    return int(draw(p2 if pow2 else st.one_of(p2, st.integers(1, hi))))


@st.composite
def int_tuples(draw: st.DrawFn, *, min_value: int = 0, max_value: int = 16, max_depth: int = 3,
               max_rank: int = 3, max_leaves: int = 8) -> Any:
    """Int tuples (an int or nested tuples) of depth ``<= max_depth``, each tuple of rank
    ``<= max_rank``, leaves in ``[min_value, max_value]``.  Shrinks toward a single int
    ``min_value``."""
    prof = _profile(draw, max_depth, max_rank, max_leaves)
    leaf = st.integers(min_value, max_value)
    return _fill(prof, [draw(leaf) for _ in range(_n_leaves(prof))])


@st.composite
def shapes(draw: st.DrawFn, *, max_size: int = MAX_SIZE, max_depth: int = 3, max_rank: int = 3,
           max_leaves: int = 6, max_extent: int = 32, pow2: bool = False) -> Any:
    """Positive CuTe shapes with ``size <= max_size``, depth ``<= max_depth``, every tuple of
    rank ``<= max_rank`` and each extent ``<= max_extent`` (powers of two only with ``pow2``).
    Shrinks toward the int ``1``."""
    prof = _profile(draw, max_depth, max_rank, max_leaves)
    out, budget = [], max(1, max_size)
    for _ in range(_n_leaves(prof)):
        v = _extent(draw, min(max_extent, budget), pow2)
        out.append(v)
        budget //= v
    return _fill(prof, out)


# ============================================================================ layouts
def _order_strides(flat: Sequence[int], order: Sequence[int], gaps: Sequence[int]) -> list[int]:
    """Strides visiting the flat modes in ``order``; mode ``order[k]`` starts ``gaps[k]``
    times past the end of the previous one (all gaps 1: compact)."""
    strides, cur = [0] * len(flat), 1
    for k, i in enumerate(order):
        cur *= gaps[k]
        strides[i] = cur
        cur *= flat[i]
    return strides


def _order(draw: st.DrawFn, n: int) -> list[int]:
    """Column-major first, then row-major, then any permutation of ``n`` flat modes."""
    kind = draw(st.integers(0, 2)) if n > 1 else 0
    if kind == 0:
        return list(range(n))
    if kind == 1:
        return list(range(n))[::-1]
    return list(draw(st.permutations(range(n))))


@st.composite
def layouts(draw: st.DrawFn, *, max_size: int = MAX_SIZE, max_depth: int = 3, max_rank: int = 3,
            max_leaves: int = 6, max_stride: int = 64, zero_strides: bool = True,
            pow2: bool = False) -> Layout:
    """Any CuTe :class:`~threadmap.layout.Layout`: a positive shape (see :func:`shapes`) and
    congruent non-negative strides ``<= max_stride`` (0-strides and overlaps included unless
    ``zero_strides=False``).  Each stride is, simplest first, the compact column-major one,
    0, or free; so it shrinks toward ``1:1``-like compact column-major layouts."""
    shp = draw(shapes(max_size=max_size, max_depth=max_depth, max_rank=max_rank,
                      max_leaves=max_leaves, pow2=pow2))
    flat = flatten_to_tuple(shp) if isinstance(shp, tuple) else (shp,)
    strides, running = [], 1
    free = st.one_of(st.sampled_from([p for p in _POW2 if p <= max(1, max_stride)]),
                     st.integers(1, max(1, max_stride)))
    for s in flat:
        kind = draw(st.integers(0, 2 if zero_strides else 1))
        strides.append(running if kind == 0 else draw(free) if kind == 1 else 0)
        running *= s
    return Layout(shp, _fill(shp, strides))


@st.composite
def compact_layouts(draw: st.DrawFn, *, max_size: int = MAX_SIZE, max_depth: int = 3,
                    max_rank: int = 3, max_leaves: int = 6, pow2: bool = False) -> Layout:
    """Compact layouts: bijections onto ``[0, size)`` (the flat modes visited in some
    order).  Shrinks toward column-major (CuTe's ``make_layout(shape)``), then row-major."""
    shp = draw(shapes(max_size=max_size, max_depth=max_depth, max_rank=max_rank,
                      max_leaves=max_leaves, pow2=pow2))
    flat = list(flatten_to_tuple(shp)) if isinstance(shp, tuple) else [shp]
    order = _order(draw, len(flat))
    return Layout(shp, _fill(shp, _order_strides(flat, order, [1] * len(flat))))


@st.composite
def injective_layouts(draw: st.DrawFn, *, max_size: int = 1024, max_cosize: int = MAX_SIZE,
                      max_depth: int = 3, max_rank: int = 3, max_leaves: int = 6,
                      max_gap: int = 4, pow2: bool = False) -> Layout:
    """Injective layouts with ``cosize <= max_cosize`` whose sorted strides each are a
    multiple of the previous mode's extent (``complement`` accepts exactly these): the modes
    in some order with gaps in ``[1, max_gap]`` between them.  Shrinks toward compact
    column-major (all gaps 1)."""
    shp = draw(shapes(max_size=min(max_size, max_cosize), max_depth=max_depth, max_rank=max_rank,
                      max_leaves=max_leaves, pow2=pow2))
    flat = list(flatten_to_tuple(shp)) if isinstance(shp, tuple) else [shp]
    order = _order(draw, len(flat))
    budget = max(1, max_cosize // max(1, product(shp)))
    gaps = []
    for _ in flat:
        hi = max(1, min(max_gap, budget))
        g = int(draw(st.sampled_from([p for p in _POW2 if p <= hi]) if pow2 else st.integers(1, hi)))
        gaps.append(g)
        budget //= g
    return Layout(shp, _fill(shp, _order_strides(flat, order, gaps)))


@st.composite
def pow2_layouts(draw: st.DrawFn, *, max_size: int = MAX_SIZE, max_depth: int = 3,
                 max_rank: int = 3, max_leaves: int = 6, max_stride_log: int = 8,
                 zero_strides: bool = True) -> Layout:
    """Layouts whose extents and strides are powers of two (strides may be 0): they always
    satisfy CuTe's composition divisibility conditions.  Shrinks toward ``1:1``."""
    shp = draw(shapes(max_size=max_size, max_depth=max_depth, max_rank=max_rank,
                      max_leaves=max_leaves, pow2=True))
    stride = st.integers(-1 if zero_strides else 0, max_stride_log)
    strides = [(1 << k) if k >= 0 else 0 for k in (draw(stride) for _ in range(_n_leaves(shp)))]
    return Layout(shp, _fill(shp, strides))


def any_layouts(*, max_size: int = MAX_SIZE) -> st.SearchStrategy[Layout]:
    """A mix, simplest family first: compact, injective, power-of-two, any."""
    return st.one_of(compact_layouts(max_size=max_size),
                     injective_layouts(max_size=max_size, max_cosize=max(max_size, 1)),
                     pow2_layouts(max_size=max_size), layouts(max_size=max_size))


# ============================================================================ coordinates, tilers
def coords(shape: Any) -> st.SearchStrategy[Any]:
    """Hierarchical coordinates of ``shape`` (every leaf in range); shrinks toward 0s."""
    if isinstance(shape, tuple):
        return st.tuples(*(coords(s) for s in shape))
    return st.integers(0, max(0, int(shape) - 1))


def slice_coords(shape: Any) -> st.SearchStrategy[Any]:
    """Slicing coordinates of ``shape``: at the top a congruent tuple (or ``_``/an index for
    an int shape); inside, each mode ``_``, an in-range index or a nested slicing coordinate.
    Shrinks toward ``_`` in every mode."""
    def inner(s: Any) -> st.SearchStrategy[Any]:
        idx = st.integers(0, max(0, product(s) - 1))
        if isinstance(s, tuple):
            return st.one_of(st.just(UNDERSCORE), idx, st.tuples(*(inner(x) for x in s)))
        return st.one_of(st.just(UNDERSCORE), idx)

    if isinstance(shape, tuple):
        return st.tuples(*(inner(s) for s in shape))
    return inner(shape)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _count(what: str, value: Any, lo: int, hi: int) -> int:
    """A count parameter, checked (strategies are called with user values)."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{what} must be an integer in {lo}..{hi}, got {value!r}")
    return value


def tilers(a: Layout) -> st.SearchStrategy[Layout]:
    """Layout tilers for ``a`` whose image usually stays inside ``size(a)``: ``d:s`` with
    divisors ``d``, ``s`` (first), injective, or any layouts of size ``<= size(a)``.
    Shrinks toward ``1:1``."""
    n = size(a)

    @st.composite
    def simple(draw: st.DrawFn) -> Layout:
        d = draw(st.sampled_from(_divisors(n)))
        return Layout(d, draw(st.sampled_from(_divisors(n // d))))

    return st.one_of(simple(), injective_layouts(max_size=n, max_cosize=n, max_depth=1),
                     any_layouts(max_size=n))


@st.composite
def tuple_tilers(draw: st.DrawFn, a: Layout, *, underscore: bool = True,
                 ints: bool = True) -> tuple[Any, ...]:
    """By-mode tilers for ``a``: a tuple of length ``<= rank(a)`` whose entries are divisors
    of the mode's size (with ``ints``), layout tilers (:func:`tilers`) or ``_`` (with
    ``underscore``).  Shrinks toward ``(1,)``."""
    modes = list(a) if isinstance(a.shape, tuple) else [a]
    r = draw(st.integers(1, len(modes)))
    out: list[Any] = []
    for m in modes[:r]:
        options: list[st.SearchStrategy[Any]] = []
        if ints:
            options.append(st.sampled_from(_divisors(size(m))))
        options.append(tilers(m))
        if underscore:
            options.append(st.just(UNDERSCORE))
        out.append(draw(st.one_of(*options)))
    return tuple(out)


# ============================================================================ admissible pairs
def admissible(op: Callable[[Any, Any], Any], a: Any, b: Any) -> bool:
    """Whether ``op(a, b)`` passes the header's preconditions (raises no LayoutError)."""
    try:
        op(a, b)
    except LayoutError:
        return False
    return True


def _pair(draw: st.DrawFn, make: Callable[[], tuple[Layout, Layout]],
          op: Callable[[Any, Any], Any], tries: int = 8) -> tuple[Layout, Layout]:
    """The first admissible pair of a few tries (the shrinker can make the first one
    admissible and drop the rest); rejects the example if none is."""
    for _ in range(tries):
        a, b = make()
        if admissible(op, a, b):
            return a, b
    assume(False)
    raise AssertionError("unreachable")  # pragma: no cover


@st.composite
def composition_pairs(draw: st.DrawFn, *, max_size: int = 1024) -> tuple[Layout, Layout]:
    """Pairs ``(A, B)`` for which ``composition(A, B)`` passes the header's checks: powers
    of two (first), ``B`` injective into ``size(A)``, or any.  Shrinks toward ``(1:1, 1:1)``."""
    def make() -> tuple[Layout, Layout]:
        k = draw(st.integers(0, 2))
        if k == 0:
            return (draw(pow2_layouts(max_size=max_size)),
                    draw(pow2_layouts(max_size=max_size, max_stride_log=4)))
        if k == 1:
            a = draw(layouts(max_size=max_size))
            return a, draw(injective_layouts(max_size=size(a), max_cosize=size(a)))
        return draw(any_layouts(max_size=max_size)), draw(any_layouts(max_size=max_size))
    return _pair(draw, make, composition)


@st.composite
def divide_pairs(draw: st.DrawFn, *, max_size: int = 1024) -> tuple[Layout, Layout]:
    """Pairs ``(A, B)`` for which ``logical_divide(A, B)`` passes the header's checks (its
    complement and composition); ``B`` from :func:`tilers`.  Shrinks toward ``(1:1, 1:1)``."""
    def make() -> tuple[Layout, Layout]:
        a = draw(any_layouts(max_size=max_size))
        return a, draw(tilers(a))
    return _pair(draw, make, logical_divide)


@st.composite
def product_pairs(draw: st.DrawFn, *, max_size: int = 256,
                  max_cosize: int = 1024) -> tuple[Layout, Layout]:
    """Pairs ``(A, B)`` for which ``logical_product(A, B)`` passes the header's checks, with
    ``cosize(A) * cosize(B)`` about ``<= max_cosize``.  Shrinks toward ``(1:1, 1:1)``."""
    def make() -> tuple[Layout, Layout]:
        a = draw(st.one_of(injective_layouts(max_size=max_size, max_cosize=max_cosize),
                           compact_layouts(max_size=max_size), layouts(max_size=max_size)))
        bmax = max(1, min(64, max_cosize // max(1, cosize(a))))
        b = draw(st.one_of(compact_layouts(max_size=bmax),
                           injective_layouts(max_size=bmax, max_cosize=bmax * 2),
                           layouts(max_size=bmax, max_stride=8)))
        return a, b
    return _pair(draw, make, logical_product)


# ============================================================================ swizzles, smem layouts
@st.composite
def swizzles(draw: st.DrawFn, *, max_bits: int = 3, max_base: int = 4, max_shift: int = 4,
             negative_shift: bool = True, max_total_bits: int | None = None) -> Swizzle:
    """``Swizzle<B, M, S>`` (:class:`threadmap.layout.Swizzle`) with ``0 <= B <= max_bits``,
    ``0 <= M <= max_base`` and ``B <= |S| <= max(B, max_shift)`` (CuTe's static_asserts:
    ``MBase >= 0``, ``BBits >= 0``, ``abs(SShift) >= BBits``), negative ``S`` only with
    ``negative_shift``; with ``max_total_bits``, ``B + M + |S| <= max_total_bits`` (then the
    swizzle permutes ``[0, 2**max_total_bits)``).  Shrinks toward ``Sw<0,0,0>`` (identity)."""
    top = max_bits + max_base + max(max_bits, max_shift) if max_total_bits is None else max_total_bits
    b = draw(st.integers(0, max(0, min(max_bits, top // 2))))
    m = draw(st.integers(0, max(0, min(max_base, top - 2 * b))))
    s = draw(st.integers(b, max(b, min(max(b, max_shift), top - b - m))))
    if negative_shift and s > 0 and draw(st.booleans()):
        s = -s
    return Swizzle(b, m, s)


def _log2(n: int) -> int:
    return n.bit_length() - 1


class GmmaOperand(NamedTuple):
    """One ``wgmma`` operand in shared memory as a kernel builds it: ``major``, element width,
    the operand tensor's layout (``Sw o smem_ptr[Nb] o L``, ``L`` of shape ``(MN, K)``) and its
    pointer's byte address."""

    major: str
    elem_bits: int
    layout: ComposedLayout
    start_address: int


def _operand_at(draw: st.DrawFn, major: str, bits: int, atom: ComposedLayout, stage: tuple[int, int],
                block: tuple[int, int]) -> GmmaOperand:
    """``atom`` tiled to ``stage``, the ``block`` at a drawn coordinate, at a drawn 16-byte
    aligned address."""
    from threadmap.layout.tensor import local_tile, make_tensor

    tile = atom.tile_to_shape(stage)
    coord = (draw(st.integers(0, stage[0] // block[0] - 1)), draw(st.integers(0, stage[1] // block[1] - 1)))
    t = local_tile(make_tensor(0, tile.layout_b), block, coord)
    base = 16 * draw(st.integers(0, 4095))
    offset = t.offset
    assert isinstance(offset, int)
    return GmmaOperand(major, bits, ComposedLayout(atom.layout_a, atom.offset, t.layout), base + offset * bits // 8)


@st.composite
def gmma_operands(draw: st.DrawFn, *, elem_bits: Sequence[int] = (8, 16, 32)) -> GmmaOperand:
    """A GMMA layout atom (``GMMA::Layout_{MN,K}_{INTER,SW32,SW64,SW128}_Atom<T>``) tiled to a
    stage with ``tile_to_shape``, cut to one ``wgmma``'s operand (MN = 64..256, K = 256 /
    bits) with ``local_tile`` at a drawn coordinate, at a drawn 16-byte aligned address (on or
    off the atom's boundary).  Shrinks toward the K-major interleaved atom at address 0."""
    from threadmap.layout.atom.mma_traits_sm90_gmma import gmma_layout_atom

    major = draw(st.sampled_from(["K", "MN"]))
    swz = draw(st.sampled_from(["INTER", "SW32", "SW64", "SW128"]))
    bits = draw(st.sampled_from(list(elem_bits)))
    atom = draw(st.just(gmma_layout_atom(major, swz, bits)))
    amn, ak = (int(x) for x in atom.layout_b.shape)
    kb = 256 // bits
    bmn = draw(st.sampled_from([64, 128, 256])) if major == "K" else max(64, amn)
    stage_mn = bmn * draw(st.integers(1, 2))
    stage_k = max(kb, ak if major == "K" else 8) * draw(st.sampled_from([1, 2, 4]))
    assume(not (major == "K" and stage_k % ak) and not (major == "MN" and stage_mn % amn))
    return _operand_at(draw, major, bits, atom, (stage_mn, stage_k), (bmn, kb))


@st.composite
def umma_operands(draw: st.DrawFn, *, elem_bits: Sequence[int] = (8, 16, 32)) -> GmmaOperand:
    """A UMMA layout atom (``UMMA::Layout_{MN,K}_{INTER,SW32,SW64,SW128}_Atom<T>``,
    ``Layout_MN_SW128_32B_Atom<T>``) tiled to a stage with ``tile_to_shape``, cut to one
    ``tcgen05.mma``'s operand (K-major MN = 8..256, MN-major a multiple of the atom's MN up to
    256; K = 256 / bits) with ``local_tile`` at a drawn coordinate, at a drawn 16-byte aligned
    address.  Shrinks toward the K-major interleaved atom at address 0."""
    from threadmap.layout.atom.mma_traits_sm100 import umma_layout_atom

    major = draw(st.sampled_from(["K", "MN"]))
    swz = draw(st.sampled_from(["INTER", "SW32", "SW64", "SW128"] + (["SW128_32B"] if major == "MN" else [])))
    bits = draw(st.sampled_from(list(elem_bits)))
    atom = umma_layout_atom(major, swz, bits)
    amn, ak = (int(x) for x in atom.layout_b.shape)
    kb = 256 // bits
    if major == "K":
        bmn = draw(st.sampled_from([8, 16, 32, 64, 128, 256]))
    else:
        bmn = max(amn, min(256, amn * draw(st.sampled_from([1, 2, 4]))))
    stage_mn = max(bmn, amn) * draw(st.integers(1, 2))
    stage_k = max(kb, ak) * draw(st.sampled_from([1, 2, 4]))
    assume(stage_mn % amn == 0 and stage_k % ak == 0 and stage_mn % bmn == 0 and stage_k % kb == 0)
    return _operand_at(draw, major, bits, atom, (stage_mn, stage_k), (bmn, kb))


@st.composite
def _tile_shapes(draw: st.DrawFn, max_size: int) -> tuple[int, int]:
    """Power-of-two ``(M, N)`` tiles with ``M * N <= max_size``; shrinks toward ``(1, 1)``."""
    m = draw(st.sampled_from([p for p in _POW2 if p <= max_size]))
    n = draw(st.sampled_from([p for p in _POW2 if p * m <= max_size]))
    return m, n


def _major(shape: tuple[int, int], row: bool, pad: int = 0) -> Layout:
    """Row-major ``(M,N):(N+pad,1)`` or column-major ``(M,N):(1,M+pad)``."""
    m, n = shape
    return Layout((m, n), (n + pad, 1)) if row else Layout((m, n), (1, m + pad))


@st.composite
def swizzled_layouts(draw: st.DrawFn, shape: tuple[int, int] | None = None, *,
                     max_size: int = MAX_SIZE, max_bits: int = 3,
                     row_major: bool | None = None) -> ComposedLayout:
    """Swizzled shared-memory layouts ``Sw<B,M,S> o L`` (a :class:`ComposedLayout`, as
    ``composition(Swizzle, Layout)`` builds it, e.g. ``Sw<3,3,3> o (8,64):(64,1)``): ``L`` a
    row- or column-major layout of the power-of-two tile ``shape`` (drawn when None) and
    ``B + M + S <= log2(size(L))``, so the composition is a bijection onto ``[0, size)``.
    Shrinks toward ``Sw<0,0,0>`` over a small column-major tile."""
    shp = shape if shape is not None else draw(_tile_shapes(max_size))
    n = product(shp)
    bits = _log2(n) if n & (n - 1) == 0 else 0
    row = draw(st.booleans()) if row_major is None else row_major
    sw = draw(swizzles(max_bits=max_bits, max_base=bits, max_shift=bits, negative_shift=False,
                       max_total_bits=bits))
    out = composition(sw, _major(shp, row))
    if not isinstance(out, ComposedLayout):  # composition folds nothing here; keep the type
        out = ComposedLayout(sw, 0, _major(shp, row))
    return out


#: the usual CuTe name for a swizzle composed with a shared-memory layout
composed_smem_layouts = swizzled_layouts

SMEM_KINDS = ("col_major", "row_major", "padded", "swizzled")


@st.composite
def smem_layouts(draw: st.DrawFn, shape: tuple[int, int], *,
                 kinds: Sequence[str] = SMEM_KINDS, max_pad: int = 4,
                 max_bits: int = 3) -> Layout | ComposedLayout:
    """Shared-memory layouts of a 2-D tile ``shape``, one of ``kinds`` (simplest first):
    ``col_major`` ``(M,N):(1,M)``, ``row_major`` ``(M,N):(N,1)``, ``padded`` row-major with
    ``1..max_pad`` extra elements a row, ``swizzled`` (:func:`swizzled_layouts`; needs a
    power-of-two tile).  Shrinks toward the first kind, unpadded and unswizzled."""
    pow2 = all(x & (x - 1) == 0 for x in shape)
    ks = [k for k in SMEM_KINDS if k in kinds and (k != "swizzled" or pow2)]
    if not ks:
        raise ValueError(f"smem_layouts: no kind of {list(kinds)} fits the tile {shape}")
    kind = draw(st.sampled_from(ks))
    if kind == "swizzled":
        return draw(swizzled_layouts(shape, max_bits=max_bits))
    pad = draw(st.integers(1, max(1, max_pad))) if kind == "padded" else 0
    return _major(shape, kind != "col_major", pad)


# ============================================================================ threads and values
@st.composite
def thread_layouts(draw: st.DrawFn, num_threads: int, *, rank: int | None = None,
                   max_rank: int = 2, max_depth: int = 2, compact: bool = False,
                   max_gap: int = 2) -> Layout:
    """Thread layouts of exactly ``num_threads`` threads (``size == num_threads``): rank
    ``rank`` (or ``1..max_rank``), each mode possibly split once more (nested, while
    ``max_depth > 1``), the flat modes in column-major, row-major or any order, compact or
    (unless ``compact``) injective with gaps ``<= max_gap``.  Shrinks toward the rank-1
    ``num_threads:1`` (or ``(num_threads,1,...)`` column-major for a fixed rank)."""
    _count("thread_layouts: num_threads", num_threads, 1, 1024)
    if rank is not None:
        _count("thread_layouts: rank", rank, 1, 8)
    r = rank if rank is not None else draw(st.integers(1, max(1, max_rank)))
    modes, rem = [], num_threads
    for _ in range(r - 1):
        f = draw(st.sampled_from(_divisors(rem)[::-1]))  # all threads in mode 0 first
        modes.append(f)
        rem //= f
    modes.append(rem)
    shape: list[Any] = []
    for f in modes:
        inner = [d for d in _divisors(f) if 1 < d < f]
        if max_depth > 1 and inner and draw(st.booleans()):
            d = draw(st.sampled_from(inner))
            shape.append((d, f // d))
        else:
            shape.append(f)
    shp: Any = tuple(shape) if r > 1 or isinstance(shape[0], tuple) else shape[0]
    flat = list(flatten_to_tuple(shp)) if isinstance(shp, tuple) else [shp]
    order = _order(draw, len(flat))
    gaps = [1] * len(flat) if compact else [draw(st.integers(1, max(1, max_gap))) for _ in flat]
    gaps[0] = 1  # the first visited mode starts at 0 stride 1: gaps only separate modes
    return Layout(shp, _fill(shp, _order_strides(flat, order, gaps)))


@st.composite
def value_layouts(draw: st.DrawFn, vector_width: int, *, rank: int = 2,
                  max_repeat: int = 1) -> Layout:
    """Value layouts of a tiled copy moving ``vector_width`` contiguous values per access,
    repeated ``1..max_repeat`` times along the same mode: rank 1 ``n:1``; rank 2 the values
    along mode 0 (``(n,1):(1,n)``) or mode 1 (``(1,n):(n,1)``), ``n = vector_width * repeat``.
    Shrinks toward one repeat along mode 0."""
    if _count("value_layouts: vector_width", vector_width, 1, 1024) & (vector_width - 1):
        raise ValueError(f"value_layouts: vector_width must be a power of two, got {vector_width}")
    _count("value_layouts: rank", rank, 1, 8)
    _count("value_layouts: max_repeat", max_repeat, 1, 1024)
    n = vector_width * draw(st.integers(1, max(1, max_repeat)))
    if rank == 1:
        return Layout(n, 1)
    along_n = draw(st.booleans())
    shp = tuple(n if i == (1 if along_n else 0) else 1 for i in range(rank))
    return Layout(shp, tuple(1 if s == n else n for s in shp))


class TiledCopyCase(NamedTuple):
    """What :func:`tiled_copy_cases` draws: the ``UniversalCopy`` operation's name, the value
    type, the thread and value layouts, and ``make_tiled_copy`` of them (the C++ is
    ``make_tiled_copy(Copy_Atom<op, value_type>{}, thr_layout{}, val_layout{})``)."""

    op: str
    value_type: str
    thr_layout: Layout
    val_layout: Layout
    tiled_copy: TiledCopy


@st.composite
def tiled_copy_cases(draw: st.DrawFn, *, num_threads: int | None = None,
                     vector_bits: int | None = None, element_bits: int = 32,
                     max_repeat: int = 1, compact: bool = True) -> TiledCopyCase:
    """Like :func:`tiled_copies`, with the parts it was built from (to print the same copy
    as C++ or as a spec).  Shrinks as :func:`tiled_copies`."""
    if element_bits not in _VALUE_TYPE:
        raise ValueError(f"element_bits must be one of {sorted(_VALUE_TYPE)}, got {element_bits}")
    n = num_threads if num_threads is not None else draw(st.sampled_from([32, 64, 128, 256]))
    vb = vector_bits if vector_bits is not None else draw(st.sampled_from(
        [b for b in (8, 16, 32, 64, 128) if b >= element_bits]))
    if vb % element_bits or vb not in (8, 16, 32, 64, 128):
        raise ValueError(f"vector_bits {vb} is not a UniversalCopy width that holds "
                         f"{element_bits}-bit elements")
    op = f"UniversalCopy<uint{vb}_t>"
    thr = draw(thread_layouts(n, rank=2, compact=compact))
    val = draw(value_layouts(vb // element_bits, rank=2, max_repeat=max_repeat))
    vt = _VALUE_TYPE[element_bits]
    return TiledCopyCase(op, vt, thr, val, make_tiled_copy(CopyAtom(get_copy_op(op), vt), thr, val))


def tiled_copies(*, num_threads: int | None = None, vector_bits: int | None = None,
                 element_bits: int = 32, max_repeat: int = 1,
                 compact: bool = True) -> st.SearchStrategy[TiledCopy]:
    """:func:`threadmap.layout.make_tiled_copy` of ``Copy_Atom<UniversalCopy<uintV_t>, T>``
    (``V = vector_bits``, drawn from ``element_bits``..128 when None; ``T`` the
    ``element_bits``-bit type: ``uint8_t``, ``half_t``, ``float``, ``double``), a rank-2
    :func:`thread_layouts` of ``num_threads`` threads (32..256 when None; ``compact`` or
    injective) and a :func:`value_layouts` of ``V // element_bits`` values repeated up to
    ``max_repeat`` times.  Shrinks toward scalar accesses, one repeat and the column-major
    ``(num_threads,1):(1,num_threads)`` thread layout."""
    return tiled_copy_cases(num_threads=num_threads, vector_bits=vector_bits,
                            element_bits=element_bits, max_repeat=max_repeat,
                            compact=compact).map(lambda c: c.tiled_copy)


#: the SM80 warp-level tensor-core atoms (``mma.sync`` m16n8k*), f16/bf16/tf32 inputs
SM80_MMA_ATOMS = (
    "SM80_16x8x8_F16F16F16F16_TN", "SM80_16x8x8_F32F16F16F32_TN", "SM80_16x8x8_F32BF16BF16F32_TN",
    "SM80_16x8x16_F16F16F16F16_TN", "SM80_16x8x16_F32F16F16F32_TN", "SM80_16x8x16_F32BF16BF16F32_TN",
    "SM80_16x8x4_F32TF32TF32F32_TN", "SM80_16x8x8_F32TF32TF32F32_TN",
)


class TiledMMACase(NamedTuple):
    """What :func:`tiled_mma_cases` draws: the MMA atom's C++ name, the atom layout (rank 3,
    ``(M,N,K)`` atoms -> atom index), the permutation (``_``, an integer or a layout per
    mode) and ``make_tiled_mma`` of them (the C++ is ``make_tiled_mma(atom{}, atom_layout{},
    Tile<...>{})``)."""

    atom: str
    atom_layout: Layout
    permutation: tuple[Any, Any, Any]
    tiled_mma: TiledMMA


@st.composite
def tiled_mma_cases(draw: st.DrawFn, *, atoms: Sequence[str] = SM80_MMA_ATOMS,
                    max_atoms: int = 8, compact: bool = False) -> TiledMMACase:
    """:func:`threadmap.layout.make_tiled_mma` of one of ``atoms`` over a rank-3
    :func:`thread_layouts` of ``1..max_atoms`` atoms (a power of two; ``compact`` or
    injective), with each mode's permutation, simplest first, ``_``, the mode's tile size
    times 1 or 2, or a compact layout of that size (a permutation of the mode, as kernels
    write ``Layout<Shape<_4,_4>,Stride<_4,_1>>``).  Shrinks toward one atom, no permutation."""
    if not atoms:
        raise ValueError("tiled_mma_cases: no MMA atom to draw from")
    _count("tiled_mma_cases: max_atoms", max_atoms, 1, 64)
    name = draw(st.sampled_from(list(atoms)))
    atom = get_mma_atom(name)
    n = draw(st.sampled_from([p for p in _POW2 if p <= max_atoms]))
    atom_layout = draw(thread_layouts(n, rank=3, compact=compact))
    base = make_tiled_mma(atom, atom_layout)
    perm: list[Any] = []
    for i in range(3):
        tile = base.tile_size_mnk(i) * draw(st.sampled_from([1, 2]))
        kind = draw(st.integers(0, 2))
        perm.append(UNDERSCORE if kind == 0 else tile if kind == 1 else
                    draw(thread_layouts(tile, max_rank=2, compact=True)))
    p3 = (perm[0], perm[1], perm[2])
    return TiledMMACase(name, atom_layout, p3, make_tiled_mma(atom, atom_layout, p3))


# ============================================================================ CUTLASS thread maps
THREAD_MAP_KINDS = ("PitchLinearStripminedThreadMap", "PitchLinearWarpRakedThreadMap")
_WARP_ARRANGEMENTS = ((8, 4), (4, 8), (16, 2), (2, 16), (32, 1), (1, 32))


@st.composite
def thread_maps(draw: st.DrawFn, *, kinds: Sequence[str] = THREAD_MAP_KINDS,
                threads: int | None = None, element_bits: int = 32,
                max_iterations: int = 4) -> PitchLinearThreadMap:
    """CUTLASS ``PitchLinearStripminedThreadMap`` / ``PitchLinearWarpRakedThreadMap`` objects
    (:mod:`threadmap.cutlass`) whose template parameters satisfy the header's static_asserts:
    ``kElementsPerAccess`` of at most 128 bits dividing the contiguous extent, threads
    dividing (or a multiple of) the contiguous vectors (strip-mined), a 32-thread warp
    arrangement dividing the tile in accesses with a non-zero iteration count (warp-raked).
    ``threads`` (32..256 when None) and up to about ``max_iterations`` iterations per mode.
    Shrinks toward a strip-mined map, one access a thread, one row per thread."""
    ks = [k for k in THREAD_MAP_KINDS if k in kinds]
    if threads is not None and threads % 32:
        ks = [k for k in ks if k != "PitchLinearWarpRakedThreadMap"]  # whole warps only
    if not ks:
        raise ValueError(f"thread_maps: no kind of {list(kinds)} fits threads={threads}")
    kind = draw(st.sampled_from(ks))
    t = threads if threads is not None else draw(st.sampled_from([32, 64, 128, 256]))
    epa = draw(st.sampled_from([e for e in (1, 2, 4, 8, 16) if e * element_bits <= 128] or [1]))
    if kind == "PitchLinearStripminedThreadMap":
        # contiguous vectors: a divisor of the threads (rows of threads) or a multiple
        svc = draw(st.sampled_from([t // d for d in _divisors(t) if d in _POW2] +
                                   [t * k for k in range(2, max_iterations + 1)]))
        rows = max(1, t // svc)
        s = draw(st.integers(1, rows * max_iterations))
        return PitchLinearStripminedThreadMap((svc * epa, s), t, epa)
    wc, ws = draw(st.sampled_from(_WARP_ARRANGEMENTS))
    warps = t // 32
    kc = draw(st.integers(1, max_iterations))
    ks_ = draw(st.integers(1, max_iterations * warps))
    if warps > ks_:  # warps spread over contiguous too: each needs an iteration there
        kc = max(kc, warps // ks_)
    return PitchLinearWarpRakedThreadMap((wc * kc * epa, ws * ks_), t, (wc, ws), epa)


# ============================================================================ specs
SPEC_FAMILIES = ("copy_1d", "tiled_copy", "transpose", "thread_map")
_ELEMENT_OF_BITS = {bits: name for name, (bits, _c) in ELEMENT_TYPES.items()}


def _layout_text(x: Layout | ComposedLayout) -> str:
    """CuTe text a spec accepts (a swizzle as ``Sw<B,M,S> o L``)."""
    if isinstance(x, ComposedLayout) and isinstance(x.layout_a, Swizzle):
        return f"{x.layout_a} o {x.layout_b}"
    return str(x)


def _head(family: str, elem: str, threads: int, sizes: dict[str, int],
          grid: list[str]) -> dict[str, Any]:
    return {"spec": 1, "name": f"generated {family}", "element": elem, "threads": threads,
            "sizes": sizes, "grid": grid}


@st.composite
def _spec_copy_1d(draw: st.DrawFn, elem: str, threads: int | None, pred: str) -> dict[str, Any]:
    bits = ELEMENT_TYPES[elem][0]
    t = threads if threads is not None else draw(st.sampled_from([32, 64, 128]))
    v = draw(st.sampled_from([x for x in (1, 2, 4, 8) if x * bits <= 128]))
    T = t * v
    part = {"threads": f"{t}:1", "values": f"{v}:1", "atom": f"UniversalCopy<uint{v * bits}_t>"}
    spec = _head("copy_1d", elem, t, {"N": T * draw(st.integers(1, 3))}, [f"ceil_div(N, {T})"])
    spec["tensors"] = {"x": {"memory": "global", "layout": "N:1", "align": 256},
                       "y": {"memory": "global", "layout": "N:1", "align": 256}}
    spec["stages"] = [{"copy": {"src": {"tensor": "x", "tile": [T], "at": ["bx"], "tiled_copy": part},
                                "dst": {"tensor": "y", "tile": [T], "at": ["bx"], "tiled_copy": part},
                                "predicate": pred}}]
    return spec


@st.composite
def _spec_tiled_copy(draw: st.DrawFn, elem: str, threads: int | None, pred: str,
                     smem_kinds: Sequence[str], max_repeat: int) -> dict[str, Any]:
    """A global -> shared copy through one tiled copy (the shared tile of any smem kind)."""
    bits = ELEMENT_TYPES[elem][0]
    op, _vt, thr, val, tc = draw(tiled_copy_cases(num_threads=threads, element_bits=bits,
                                                  max_repeat=max_repeat))
    bm, bn = (int(x) for x in tc.tiler_mn)
    smem = draw(smem_layouts((bm, bn), kinds=smem_kinds))
    row_major = not draw(st.booleans())  # the global tensor: row-major first
    part = {"threads": str(thr), "values": str(val), "atom": op}
    gm, gn = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    spec = _head("tiled_copy", elem, size(thr), {"M": bm * gm, "N": bn * gn},
                 [f"ceil_div(M, {bm})", f"ceil_div(N, {bn})"])
    spec["tensors"] = {
        "x": {"memory": "global", "layout": "(M,N):(N,1)" if row_major else "(M,N):(1,M)",
              "align": 256},
        "s": {"memory": "shared", "layout": _layout_text(smem)}}
    spec["stages"] = [{"copy": {
        "src": {"tensor": "x", "tile": [bm, bn], "at": ["bx", "by"], "tiled_copy": part},
        "dst": {"tensor": "s", "tiled_copy": part}, "predicate": pred}}]
    return spec


@st.composite
def _spec_transpose(draw: st.DrawFn, elem: str, threads: int | None, pred: str) -> dict[str, Any]:
    """A 2-D transpose through registers or shared memory (row/column-major threads)."""
    if threads is not None:
        a = draw(st.sampled_from([d for d in _divisors(threads)]))
        b = threads // a
    else:
        a, b = draw(st.sampled_from([(4, 4), (4, 8), (8, 4), (8, 8), (16, 16), (2, 16), (16, 2)]))
    thr_src = draw(st.sampled_from([f"({a},{b}):({b},1)", f"({a},{b}):(1,{a})"]))
    spec = _head("transpose", elem, a * b, {"M": a * draw(st.integers(1, 2)),
                                            "N": b * draw(st.integers(1, 2))},
                 [f"ceil_div(M, {a})", f"ceil_div(N, {b})"])
    spec["tensors"] = {"x": {"memory": "global", "layout": "(M,N):(N,1)", "align": 256},
                       "y": {"memory": "global", "layout": "(N,M):(M,1)", "align": 256}}
    if draw(st.booleans()):
        thr_dst = draw(st.sampled_from([f"({b},{a}):({a},1)", f"({b},{a}):(1,{b})"]))
        spec["tensors"]["s"] = {"memory": "shared", "layout": f"({a},{b}):({b},1)"}
        spec["tensors"]["st"] = {"memory": "shared", "layout": f"({b},{a}):(1,{b})", "alias": "s"}
        spec["stages"] = [
            {"copy": {"src": {"tensor": "x", "tile": [a, b], "at": ["bx", "by"], "threads": thr_src},
                      "dst": {"tensor": "s", "threads": thr_src}, "predicate": pred}},
            "barrier",
            {"copy": {"src": {"tensor": "st", "threads": thr_dst},
                      "dst": {"tensor": "y", "tile": [b, a], "at": ["by", "bx"], "threads": thr_dst},
                      "predicate": pred}}]
    else:
        # the same thread moves (i, j) of x to (j, i) of y: the dst layout transposes the src's
        dst = f"({b},{a}):(1,{b})" if thr_src == f"({a},{b}):({b},1)" else f"({b},{a}):({a},1)"
        spec["stages"] = [{"copy": {
            "src": {"tensor": "x", "tile": [a, b], "at": ["bx", "by"], "threads": thr_src},
            "dst": {"tensor": "y", "tile": [b, a], "at": ["by", "bx"], "threads": dst},
            "predicate": pred}}]
    spec["expect"] = {"transform": "transpose"}
    return spec


@st.composite
def _spec_thread_map(draw: st.DrawFn, elem: str, threads: int | None, pred: str) -> dict[str, Any]:
    """A CUTLASS thread map loading a row-major global tile into registers."""
    tm = draw(thread_maps(threads=threads, element_bits=ELEMENT_TYPES[elem][0]))
    c, s = tm.shape
    tm_spec: dict[str, Any] = {"name": type(tm).__name__, "shape": [c, s], "threads": tm.threads,
                               "elements_per_access": tm.elements_per_access, "contiguous_mode": 1}
    if isinstance(tm, PitchLinearWarpRakedThreadMap):
        tm_spec["warp_thread_arrangement"] = list(tm.warp_thread_arrangement)
    spec = _head("thread_map", elem, tm.threads, {"M": s * draw(st.integers(1, 2)),
                                                  "N": c * draw(st.integers(1, 2))},
                 [f"ceil_div(M, {s})", f"ceil_div(N, {c})"])
    spec["tensors"] = {"A": {"memory": "global", "layout": "(M,N):(N,1)", "align": 256}}
    spec["stages"] = [{"copy": {"src": {"tensor": "A", "tile": [s, c], "at": ["bx", "by"],
                                        "thread_map": tm_spec},
                                "dst": {"registers": "frag"}, "predicate": pred}}]
    return spec


@st.composite
def specs(draw: st.DrawFn, *, families: Sequence[str] = SPEC_FAMILIES,
          elements: Sequence[str] = ("f32", "f16", "u8"), threads: int | None = None,
          predicates: Sequence[str] = ("bounds", "none", "vector"),
          smem_kinds: Sequence[str] = SMEM_KINDS, max_repeat: int = 1) -> dict[str, Any]:
    """Whole spec dicts (``spec: 1``) that :func:`threadmap.api.load` and
    :func:`threadmap.api.verify_spec` accept, one of ``families`` (simplest first):

    * ``copy_1d``: a 1-D global -> global copy through a ``UniversalCopy`` tiled copy;
    * ``tiled_copy``: a global -> shared copy of a 2-D tile through :func:`tiled_copies`
      (thread layout of ``threads`` threads, values repeated up to ``max_repeat`` times), the
      shared tile one of :func:`smem_layouts`' ``smem_kinds``;
    * ``transpose``: a 2-D transpose through registers or shared memory;
    * ``thread_map``: a :func:`thread_maps` map loading a global tile into registers.

    Sizes are whole tiles (1..3 blocks a mode), the grid ``ceil_div`` of them, element types
    from ``elements`` (``f32``, ``f16``, ``u8``, ``f64``), predicates from ``predicates``.
    No ``expect`` block except the transpose's transform: add one to make a check fail.
    Shrinks toward the first family, one block, the first element type and predicate."""
    bad = [e for e in elements if e not in ELEMENT_TYPES]
    if not elements or bad:
        raise ValueError(f"specs: elements must be some of {sorted(ELEMENT_TYPES)}, got {list(elements)}")
    if not predicates or any(p not in ("bounds", "none", "vector") for p in predicates):
        raise ValueError(f"specs: predicates must be some of bounds, none, vector; got {list(predicates)}")
    if threads is not None:
        _count("specs: threads", threads, 1, 1024)
    elem = draw(st.sampled_from(list(elements)))
    pred = draw(st.sampled_from(list(predicates)))
    fams = [f for f in SPEC_FAMILIES if f in families]
    if not fams:
        raise ValueError(f"specs: unknown families {list(families)}; choose from {SPEC_FAMILIES}")
    family = draw(st.sampled_from(fams))
    if family == "copy_1d":
        return draw(_spec_copy_1d(elem, threads, pred))
    if family == "tiled_copy":
        return draw(_spec_tiled_copy(elem, threads, pred, smem_kinds, max_repeat))
    if family == "transpose":
        return draw(_spec_transpose(elem, threads, pred))
    return draw(_spec_thread_map(elem, threads, pred))


# ============================================================================ range specs
_RANGE_BITS = {"f32": 32, "f16": 16, "u8": 8}


def _range(hi: int, mult: int = 1) -> str:
    """``{min: 1, max: hi}`` sampled at its largest value (a multiple of ``mult`` when one fits),
    where a floor grid still has a block."""
    top = hi - hi % mult if hi >= mult else hi
    return f"{{min: 1, max: {hi}, samples: [{top}]}}"


@st.composite
def _grid_1d(draw: Any, name: str, T: int) -> str:
    c = draw(st.integers(2, max(2, T - 1)))  # one block short only when N % T == T - c + 1
    return draw(st.sampled_from([
        "ceil_div({N}, {T})", "ceil_div({N}, {T})", "ceil_div({N}, {T})", "{N} / {T}", "{N} / {T} + 1",
        "ceil_div({N}, {T}) - (({N} % {T} + {c}) / {T}) * (1 - ({N} % {T} + {c1}) / {T})"])
    ).format(N=name, T=T, c=c, c1=c - 1)


@st.composite
def _copy_1d(draw: Any, elem: str, pred: str) -> str:
    bits = _RANGE_BITS[elem]
    v = draw(st.sampled_from([v for v in (1, 2, 4) if v * bits <= 128]))
    t = draw(st.sampled_from([1, 2, 4, 8, 16]))
    T = t * v
    hi = draw(st.integers(T, 3 * T + 5))
    grid = draw(_grid_1d("N", T))
    m = draw(st.sampled_from([2, 4, T]))
    assume = draw(st.sampled_from(["", "", f'assume: ["N % {m} == 0"]']))
    rng_n = _range(hi, m if assume else 1)
    align = draw(st.sampled_from([4, 16, 256]))
    # v contiguous values a thread, one v-wide instruction: a vector straddles N unless v | N
    part = f'tiled_copy: {{threads: "{t}:1", values: "{v}:1", atom: "UniversalCopy<uint{v * bits}_t>"}}'
    return f"""spec: 1
name: gen 1d
element: {elem}
threads: {t}
sizes: {{N: {rng_n}}}
{assume}
grid: ["{grid}"]
tensors:
  x: {{memory: global, layout: "N:1", align: {max(align, v * bits // 8)}}}
  y: {{memory: global, layout: "N:1"}}
stages:
  - copy:
      src: {{tensor: x, tile: [{T}], at: [bx], {part}}}
      dst: {{tensor: y, tile: [{T}], at: [bx], {part}}}
      predicate: {pred}
expect: {{transform: copy}}
"""


@st.composite
def _transpose(draw: Any, elem: str, pred: str) -> str:
    a, b = draw(st.sampled_from([(4, 4), (4, 8), (8, 4), (8, 8), (2, 16), (16, 2)]))
    hiM, hiN = draw(st.integers(a, 3 * a + 3)), draw(st.integers(b, 3 * b + 3))
    smem = draw(st.booleans())
    gx = draw(st.sampled_from(["ceil_div(M, {a})", "ceil_div(M, {a})", "M / {a}"])).format(a=a)
    gy = draw(st.sampled_from(["ceil_div(N, {b})", "ceil_div(N, {b})", "N / {b} + 1"])).format(b=b)
    thr_src = draw(st.sampled_from([f"({a},{b}):({b},1)", f"({a},{b}):(1,{a})"]))
    thr_dst = draw(st.sampled_from([f"({b},{a}):({a},1)", f"({b},{a}):(1,{b})"]))
    if smem:
        body = f"""  s: {{memory: shared, layout: "({a},{b}):({b},1)"}}
  st: {{memory: shared, layout: "({b},{a}):(1,{b})", alias: s}}
stages:
  - copy:
      src: {{tensor: x, tile: [{a}, {b}], at: [bx, by], threads: "{thr_src}"}}
      dst: {{tensor: s, threads: "{thr_src}"}}
      predicate: {pred}
  - barrier
  - copy:
      src: {{tensor: st, threads: "{thr_dst}"}}
      dst: {{tensor: y, tile: [{b}, {a}], at: [by, bx], threads: "{thr_dst}"}}
      predicate: {pred}
"""
    else:
        # the same thread moves (i, j) of x to (j, i) of y: the dst thread layout transposes the src's
        dst = f"({b},{a}):(1,{b})" if thr_src == f"({a},{b}):({b},1)" else f"({b},{a}):({a},1)"
        body = f"""stages:
  - copy:
      src: {{tensor: x, tile: [{a}, {b}], at: [bx, by], threads: "{thr_src}"}}
      dst: {{tensor: y, tile: [{b}, {a}], at: [by, bx], threads: "{dst}"}}
      predicate: {pred}
"""
    return f"""spec: 1
name: gen 2d
element: {elem}
threads: {a * b}
sizes: {{M: {_range(hiM)}, N: {_range(hiN)}}}
grid: ["{gx}", "{gy}"]
tensors:
  x: {{memory: global, layout: "(M,N):(N,1)"}}
  y: {{memory: global, layout: "(N,M):(M,1)"}}
{body}expect: {{transform: transpose}}
"""


@st.composite
def _tiled_copy_2d(draw: Any, elem: str, pred: str) -> str:
    bits = _RANGE_BITS[elem]
    row_major = draw(st.booleans())  # the global tensor: contiguous along N (row-major) or M
    tm, tn = draw(st.sampled_from([(2, 4), (4, 2), (4, 4), (2, 8), (8, 2), (4, 8), (8, 4)]))
    vmax = 128 // bits
    v = draw(st.sampled_from([x for x in (1, 2, 4) if x <= vmax]))
    vm, vn = (1, v) if row_major else (v, 1)
    BM, BN = tm * vm, tn * vn
    thr = draw(st.sampled_from([f"({tm},{tn}):({tn},1)", f"({tm},{tn}):(1,{tm})"]))
    val = f"({vm},{vn}):({vn},1)" if row_major else f"({vm},{vn}):(1,{vm})"
    atom = f"UniversalCopy<uint{v * bits}_t>"
    glay = "(M,N):(N,1)" if row_major else "(M,N):(1,M)"
    pad = draw(st.sampled_from([0, 0, 1, 2, 4]))
    kind = draw(st.sampled_from(["plain", "plain", "padded", "swizzled"]))
    if kind == "padded" and pad:
        slay = f"({BM},{BN}):({BN + pad},1)"
    elif kind == "swizzled":
        B, Mb, S = draw(st.sampled_from([(1, 0, 3), (2, 0, 3), (1, 1, 2), (2, 2, 2), (3, 0, 3)]))
        slay = f"Sw<{B},{Mb},{S}> o ({BM},{BN}):({BN},1)"
    else:
        slay = f"({BM},{BN}):({BN},1)" if draw(st.booleans()) else f"({BM},{BN}):(1,{BM})"
    hiM, hiN = draw(st.integers(BM, 3 * BM + 3)), draw(st.integers(BN, 3 * BN + 3))
    align = draw(st.sampled_from([4, 8, 16, 256]))
    mult = draw(st.sampled_from(["", "", f'assume: ["{"N" if row_major else "M"} % {v} == 0"]']))
    part = f'tiled_copy: {{threads: "{thr}", values: "{val}", atom: "{atom}"}}'
    return f"""spec: 1
name: gen tiled copy 2d
element: {elem}
threads: {tm * tn}
sizes: {{M: {_range(hiM, v if mult and not row_major else 1)}, N: {_range(hiN, v if mult and row_major else 1)}}}
{mult}
grid: ["{draw(_grid_1d("M", BM))}", "{draw(_grid_1d("N", BN))}"]
tensors:
  x: {{memory: global, layout: "{glay}", align: {max(align, bits // 8)}}}
  s: {{memory: shared, layout: "{slay}"}}
stages:
  - copy:
      src: {{tensor: x, tile: [{BM}, {BN}], at: [bx, by], {part}}}
      dst: {{tensor: s, {part}}}
      predicate: {pred}
"""


@st.composite
def _thread_map(draw: Any, elem: str, pred: str) -> str:
    bits = _RANGE_BITS[elem]
    raked = draw(st.booleans())
    epa = draw(st.sampled_from([x for x in (1, 2, 4, 8) if x * bits <= 128]))
    if raked:
        wc, ws = draw(st.sampled_from([(4, 8), (8, 4), (2, 16), (16, 2), (32, 1)]))
        C = wc * epa * draw(st.sampled_from([1, 2]))
        warps = draw(st.sampled_from([1, 2]))
        S = ws * warps * draw(st.sampled_from([1, 2]))
        threads = 32 * warps
        tm = (f"{{name: PitchLinearWarpRakedThreadMap, shape: [{C}, {S}], threads: {threads}, "
              f"warp_thread_arrangement: [{wc}, {ws}], elements_per_access: {epa}, contiguous_mode: 1}}")
    else:
        C = epa * draw(st.sampled_from([2, 4, 8]))
        per_row = C // epa
        threads = per_row * draw(st.sampled_from([1, 2, 4]))
        S = (threads // per_row) * draw(st.sampled_from([1, 2]))
        tm = (f"{{name: PitchLinearStripminedThreadMap, shape: [{C}, {S}], threads: {threads}, "
              f"elements_per_access: {epa}, contiguous_mode: 1}}")
    hiM, hiN = draw(st.integers(S, 3 * S + 2)), draw(st.integers(C, 3 * C + 2))
    mult = draw(st.sampled_from(["", "", f'assume: ["N % {epa} == 0"]']))
    return f"""spec: 1
name: gen thread map
element: {elem}
threads: {threads}
sizes: {{M: {_range(hiM)}, N: {_range(hiN, epa if mult else 1)}}}
{mult}
grid: ["{draw(_grid_1d("M", S))}", "ceil_div(N, {C})"]
tensors:
  A: {{memory: global, layout: "(M,N):(N,1)", align: {draw(st.sampled_from([16, 256]))}}}
stages:
  - copy:
      src: {{tensor: A, tile: [{S}, {C}], at: [bx, by], thread_map: {tm}}}
      dst: {{registers: frag}}
      predicate: {pred}
"""


@st.composite
def range_specs(draw: Any) -> str:
    """Spec files (YAML text) with size ranges, for ``threadmap prove`` and for checking a
    prover against enumeration, one of four families:

    * a 1-D copy with a tiled copy (random thread count and vector width);
    * a 2-D transpose through registers or shared memory, row- or column-major threads;
    * a 2-D tiled copy (random thread and value layouts, ``UniversalCopy`` of the vector's
      width) from a row- or column-major global tensor into a plain, padded or swizzled
      shared tile, with a random base alignment;
    * a CUTLASS pitch-linear thread map (stripmined or warp-raked) loading a global tile;

    each with random element types (``f32``, ``f16``, ``u8``), predicates, grids (right and
    subtly wrong: floor instead of ceil, one block too many, one block short at one
    residue), ``assume:`` relations and small size ranges (sampled at their largest value).
    Shrinks toward the first family, element and predicate."""
    elem = draw(st.sampled_from(list(_RANGE_BITS)))
    pred = draw(st.sampled_from(["none", "bounds", "vector", "vector"]))
    family = draw(st.sampled_from([_copy_1d, _transpose, _tiled_copy_2d, _thread_map]))
    return str(draw(family(elem, pred)))
