"""SM90 TMA copies as CuTe builds them (``cute/atom/copy_traits_sm90_tma.hpp``,
``copy_traits_sm90_tma_swizzle.hpp``): from a global tensor's layout, a shared-memory tile
layout, a CTA tile and a multicast size, the tensor-map descriptor that
``cuTensorMapEncodeTiled`` receives, the rules it must satisfy, and the shared-memory image
one TMA box writes.

The construction follows the header step by step (``make_tma_copy`` ->
``make_tma_copy_tiled`` -> ``make_tma_copy_atom`` -> ``construct_tma_gbasis`` ->
``make_tma_copy_desc``), in the element type of the global tensor (CuTe's default
``TmaInternalType``):

1. ``cta_v_map = make_identity_layout(shape(gmem)).compose(cta_tile)``: CTA value -> global mode;
2. ``sidx2gmode = coalesce(cta_v_map o right_inverse(smem))``, cut before the first mode whose
   basis is not scaled by 1 (where shared memory stops being contiguous in a global mode);
3. the global strides of those modes, merged while contiguous up to 256 elements
   (:func:`coalesce_256`): the box's modes; global modes the box does not cover are appended
   with extent 1; modes beyond the fifth are grouped into it (TMA's rank limit);
4. per TMA mode the global extent and stride (:func:`fill_tma_gmem_shape_stride`, a gcd
   recurrence where one TMA mode spans several global modes), in bytes; the box extents are
   the modes' sizes, the last ones divided by the multicast size.

Where the header asserts (or the driver refuses), :func:`make_tma_copy` records a
:class:`TmaViolation` naming the rule and when it bites, instead of failing: the descriptor of
a kernel being verified is reported, not trusted.  Besides the construction:

* :func:`encode_tiled_violations`: what ``cuTensorMapEncodeTiled`` refuses of any descriptor
  (also fields CuTe never sets: interleave, element strides, the tensor map's own address);
* :func:`alignment_for_swizzle` (``cutlass/detail/layout.hpp``) and
  :func:`tma_smem_violations`: a swizzled tile off that alignment is loaded permuted;
* :func:`make_bulk_copy` / :func:`make_bulk_copy_auto`: the non-tensor ``cp.async.bulk`` copies
  (``SM90_BULK_COPY_G2S`` / ``_S2G`` / ``_AUTO``) and their rules;
* :func:`arch_violations`: which targets CuTe compiles a TMA instruction for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from threadmap.errors import LayoutError
from threadmap.layout.arithmetic_tuple import ScaledBasis
from threadmap.layout.int_tuple import flatten, idx2crd, product
from threadmap.layout.layout import (
    Layout,
    coalesce,
    complement,
    composition,
    make_identity_layout,
    make_layout,
    max_common_layout,
    right_inverse,
    size,
)
from threadmap.layout.layout_composed import ComposedLayout
from threadmap.layout.pointer_flagged import SmemPtrFlag
from threadmap.layout.swizzle import Swizzle

#: the TMA copy operations of ``cute/arch/copy_sm90_tma.hpp`` make_tma_copy accepts
TMA_OPS = ("SM90_TMA_LOAD", "SM90_TMA_LOAD_MULTICAST", "SM90_TMA_STORE")
#: CUtensorMapSwizzle, by its name in ``cuda.h``
SWIZZLE_MODES = {0: "CU_TENSOR_MAP_SWIZZLE_NONE", 1: "CU_TENSOR_MAP_SWIZZLE_32B",
                 2: "CU_TENSOR_MAP_SWIZZLE_64B", 3: "CU_TENSOR_MAP_SWIZZLE_128B",
                 4: "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B", 5: "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B",
                 6: "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B"}
#: bytes of the swizzle span (the inner box extent times the element size must not exceed it)
SWIZZLE_SPAN = {0: None, 1: 32, 2: 64, 3: 128, 4: 128, 5: 128, 6: 128}
#: CUtensorMapInterleave, by its name in ``cuda.h`` (CuTe always passes NONE)
INTERLEAVE_MODES = {0: "CU_TENSOR_MAP_INTERLEAVE_NONE", 1: "CU_TENSOR_MAP_INTERLEAVE_16B",
                    2: "CU_TENSOR_MAP_INTERLEAVE_32B"}
#: the CUtensorMapDataType values that are floating point (FLOAT16 .. TFLOAT32_FTZ)
FLOAT_DATA_TYPES = frozenset({6, 7, 8, 9, 10, 11, 12})
#: bytes per element of each CUtensorMapDataType threadmap models (the packed 4- and 6-bit
#: types 13 .. 15 have rules of their own, not modelled)
DATA_TYPE_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 4, 11: 4, 12: 4}
#: CUtensorMapDataType of ``TMA::to_CUtensorMapDataType`` for the element types threadmap knows
DATA_TYPES = {"u8": 0, "i8": 0, "u16": 1, "u32": 2, "i32": 3, "u64": 4, "i64": 5, "f16": 6, "f32": 7, "f64": 8,
              "bf16": 9, "tf32": 7}


@dataclass(frozen=True)
class TmaViolation:
    """One rule the descriptor breaks: ``rule`` (the header's or the driver's), ``when``
    (``compile time``: a static_assert; ``descriptor creation``: an assert in
    ``make_tma_copy_desc`` or ``cuTensorMapEncodeTiled`` refusing it; ``run time``: the copy
    traps; ``silently``: the copy runs and moves the wrong bytes), and the values that break
    it."""

    rule: str
    when: str
    detail: str


@dataclass(frozen=True)
class TmaDescriptor:
    """What ``cuTensorMapEncodeTiled`` receives (``globalStrides`` without the implicit
    first one; strides in bytes)."""

    data_type: int
    elem_bytes: int
    rank: int
    global_address: int
    global_dim: tuple[int, ...]
    global_strides: tuple[int, ...]
    box_dim: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: int = 0
    swizzle: int = 0
    l2_promotion: int = 2
    oob_fill: int = 0

    @property
    def box_bytes(self) -> int:
        """Bytes one box moves (the mbarrier's expected transaction count for one load)."""
        return math.prod(self.box_dim) * self.elem_bytes


@dataclass
class TmaCopy:
    """A TMA copy: its descriptor, the TMA-mode -> global-mode basis (``tma_gbasis``), the
    shared layout it writes, and the rules it breaks."""

    op: str
    elem_bits: int
    gmem: Layout
    smem: Any
    swizzle: Swizzle | None
    tma_gbasis: Layout
    desc: TmaDescriptor
    num_multicast: int
    violations: list[TmaViolation] = field(default_factory=list)
    cta_tile: Any = None

    @property
    def box_elements(self) -> int:
        """Elements one TMA instruction moves (the box)."""
        return math.prod(self.desc.box_dim)

    def image(self, coord: tuple[int, ...], smem_base: int = 0) -> dict[int, int | None]:
        """:func:`tma_box_image` of this copy's descriptor: shared byte offset -> global element
        offset (None: zero fill) for one box loaded at TMA coordinate ``coord``."""
        return tma_box_image(self.desc, coord, smem_base)


def basis_get(e: ScaledBasis, t: Any) -> Any:
    """``basis_get(E<path...>, t)``: the leaf of ``t`` at the basis's path (its scale ignored)."""
    for i in e.path:
        t = t[i]
    return t


def _static(*xs: Any) -> bool:
    """Whether every value is a static integer (threadmap's plain ``int``; ``Dyn`` is dynamic)."""
    return all(type(x) is int for x in xs)


def _int_arg(fn: str, name: str, v: Any, lo: int | None = None) -> int:
    """``v`` as an integer argument of ``fn`` (at least ``lo``), or a LayoutError."""
    if not isinstance(v, int) or isinstance(v, bool) or (lo is not None and v < lo):
        raise LayoutError(f"{fn}: {name} must be an integer{'' if lo is None else f' >= {lo}'}, got {v!r}")
    return int(v)


def coalesce_256(layout: Layout) -> Layout:
    """The header's ``coalesce_256``: flatten, then merge each mode into the previous one where
    ``shape_prev * stride_prev == stride`` and the merged extent stays <= 256 (TMA's largest
    box extent) are *static* truths (a dynamic stride is never merged), dropping static size-1
    modes.  Law: same size, and the same function on ``[0, size)``."""
    shp, std = flatten(layout.shape), flatten(layout.stride)
    if not isinstance(shp, tuple):
        shp, std = (shp,), (std,)
    ns, nd = [shp[0]], [std[0]]
    for s, d in zip(shp[1:], std[1:]):
        if _static(s) and s == 1:
            continue
        if len(ns) == 1 and _static(ns[-1]) and ns[-1] == 1:
            ns[-1], nd[-1] = s, d
        elif _static(ns[-1], nd[-1], d, s) and ns[-1] * nd[-1] == d and s * ns[-1] <= 256:
            ns[-1] *= s
        else:
            ns.append(s)
            nd.append(d)
    return make_layout(tuple(ns), tuple(nd)) if len(ns) > 1 else make_layout(ns[0], nd[0])


def _modes(layout: Layout) -> list[tuple[Any, Any]]:
    """The top-level modes of ``layout`` as (shape, stride) pairs."""
    if isinstance(layout.shape, tuple):
        return list(zip(layout.shape, layout.stride))
    return [(layout.shape, layout.stride)]


def _leaves(t: Any) -> list[Any]:
    f = flatten(t)
    return list(f) if isinstance(f, tuple) else [f]


def construct_tma_gbasis(gmem: Layout, smem: Layout, cta_v_map: Layout) -> Layout:
    """The header's ``construct_tma_gbasis``: TMA mode -> global mode(s), the box's shape
    (module docstring, steps 2-3).  ``smem`` is the shared layout without its swizzle."""
    if size(smem) != size(cta_v_map):
        raise LayoutError(f"TMA requires CTA_Tile and SLayout top-level size equivalence: "
                          f"size({smem}) != size({cta_v_map})")
    inv = right_inverse(smem)
    full = coalesce(composition(cta_v_map, inv))
    modes = _modes(full)
    rank = next((i for i, (_, d) in enumerate(modes)
                 if not (isinstance(d, ScaledBasis) and _static(d.value) and d.value == 1)), len(modes))
    if rank == 0:
        raise LayoutError("Could not find a common tile-gmem vectorization. Does the Tile select out major "
                          "GMEM modes?")
    kept = modes[:rank]
    # tile_gstride: the global strides of those modes (composition with the basis strides)
    gstride = [(s, basis_get(d, gmem.stride) * d.value) for s, d in kept]
    tma_gstride = coalesce_256(make_layout(tuple(s for s, _ in gstride), tuple(d for _, d in gstride)))
    tile_gbasis = make_layout(tuple(s for s, _ in kept), tuple(d for _, d in kept))
    tshape = tma_gstride.shape if isinstance(tma_gstride.shape, tuple) else (tma_gstride.shape,)
    tile = composition(tile_gbasis, make_layout(tshape))
    tile_modes = _modes(tile) if isinstance(tma_gstride.shape, tuple) else [(tile.shape, tile.stride)]
    present = _leaves(tuple(d for _, d in tile_modes))
    ident = make_identity_layout(gmem.shape)
    remaining = [e for s, d, e in zip(_leaves(gmem.shape), _leaves(gmem.stride), _leaves(ident.stride))
                 if not (_static(s) and s == 1) and not (_static(d) and d == 0)
                 and not any(isinstance(p, ScaledBasis) and p.path == e.path and p.value == 1 for p in present)]
    all_modes = tile_modes + [(1, e) for e in remaining]
    if len(all_modes) > 5:  # group<4, -1>: TMA's rank is at most 5
        all_modes = all_modes[:4] + [(tuple(s for s, _ in all_modes[4:]), tuple(d for _, d in all_modes[4:]))]
    return make_layout(tuple(s for s, _ in all_modes), tuple(d for _, d in all_modes))


def fill_tma_gmem_shape_stride(gmem: Layout, tma_gbasis: Layout) -> tuple[list[int], list[int]]:
    """The header's ``fill_tma_gmem_shape_stride``: per TMA mode the global extent and stride
    (elements); a mode spanning several global modes takes the gcd of their strides and the
    extent ``(s0 - 1) * d0 / g + (s1 - 1) * d1 / g + 1`` (folded left)."""
    shp, std = [1] * 5, [0] * 5
    for i, (_, d) in enumerate(_modes(tma_gbasis)):
        bases = _leaves(d)
        if len(bases) == 1:
            shp[i], std[i] = int(basis_get(bases[0], gmem.shape)), int(basis_get(bases[0], gmem.stride))
            continue
        for e in bases:
            sj, dj = int(basis_get(e, gmem.shape)), int(basis_get(e, gmem.stride))
            old = std[i]
            std[i] = math.gcd(std[i], dj)
            if std[i] != 0:
                shp[i] = (shp[i] - 1) * (old // std[i]) + (sj - 1) * (dj // std[i]) + 1
            else:
                shp[i] = sj
    return shp, std


def tma_swizzle(sw: Swizzle | None, elem_bits: int) -> tuple[int, list[TmaViolation]]:
    """``get_tma_swizzle_bits`` and ``get_tma_swizzle_base`` (``copy_traits_sm90_tma_swizzle.hpp``)
    of a shared layout's swizzle, given on element offsets as threadmap's layouts write it
    (CuTe's GMMA atoms write the same function on byte offsets: ``Swizzle<B, M + log2(bytes per
    element), S>``): the CUtensorMapSwizzle, and a violation where the header has no TMA mode for
    it (a static_assert).  On bytes the header takes ``Swizzle<B,4,3>`` (B = 0 .. 3: none, 32,
    64, 128 bytes), ``Swizzle<2,5,2>`` (128 bytes of 32-byte atoms) and ``Swizzle<2,6,S>`` (128
    bytes of 64-byte atoms); ``None`` (a plain layout: CuTe's ``Swizzle<0,4,3>``) is no swizzle."""
    if sw is None:
        return 0, []
    eb = elem_bits // 8
    shift = eb.bit_length() - 1 if elem_bits % 8 == 0 and eb & (eb - 1) == 0 else None
    m = None if shift is None else sw.num_base + shift
    b, s = sw.num_bits, sw.num_shft
    if m == 4 and 0 <= b <= 3 and s == 3:
        return b, []
    if m == 5 and b == 2 and s == 2:
        return 4, []
    if m == 6 and b == 2:
        return 6, []
    return 0, [TmaViolation(
        "get_tma_swizzle_bits: a TMA swizzle is Swizzle<B,4,3> (B = 0 .. 3), Swizzle<2,5,2> or Swizzle<2,6,S> "
        "on byte offsets", "compile time",
        f"Swizzle<{b},{sw.num_base},{s}> on {elem_bits}-bit elements is Swizzle<{b},{m},{s}> on bytes")]


def alignment_for_swizzle(swizzle: Any, elem_bits: int = 8) -> int:
    """``cutlass::detail::alignment_for_swizzle``: the byte alignment CUTLASS gives a shared
    tile, ``2^(B + M + |S|)`` for ``Swizzle<B,M,S>`` on byte offsets -- the period of the
    swizzle's bit pattern.  ``swizzle`` is a :class:`Swizzle` on offsets of ``elem_bits``-bit
    elements (threadmap's form; on bytes its base is ``M + log2(elem_bits / 8)``), a
    ``Swizzle o smem_ptr[Nb] o Layout`` (its swizzle already on bytes), a ``Swizzle o Layout``
    (on elements), or a plain Layout / ``None`` (CuTe's ``get_swizzle_portion``:
    ``Swizzle<0,4,3>``, 128 bytes).

    Law: for every base ``a`` that is a multiple of the result ``A`` and every byte offset
    ``o``, the swizzle of ``a + o`` is ``a`` plus the swizzle of ``o`` (a tile at ``a`` is
    swizzled as its tile-relative layout says); for ``B > 0`` the base ``A / 2`` breaks it (at
    ``o = 2^(M + B - 1)``), so no smaller power of two will do."""
    elem_bits = _int_arg("alignment_for_swizzle", "elem_bits", elem_bits, 1)
    if isinstance(swizzle, ComposedLayout):
        if not isinstance(swizzle.layout_a, Swizzle):
            raise LayoutError(f"alignment_for_swizzle: no swizzle in {swizzle}")
        if isinstance(swizzle.offset, SmemPtrFlag):
            elem_bits = 8
        swizzle = swizzle.layout_a
    if swizzle is None or isinstance(swizzle, Layout):
        return 1 << (0 + 4 + 3)
    if not isinstance(swizzle, Swizzle):
        raise LayoutError(f"alignment_for_swizzle: a Swizzle or a layout, got {swizzle!r}")
    if elem_bits & (elem_bits - 1):
        raise LayoutError(f"alignment_for_swizzle: elements of a power-of-2 width, got {elem_bits} bits")
    bits = (1 << (swizzle.num_bits + swizzle.num_base + abs(swizzle.num_shft))) * elem_bits
    if bits % 8:
        raise LayoutError(f"alignment_for_swizzle: {swizzle} on {elem_bits}-bit elements is no whole byte period")
    return bits // 8


def tma_smem_violations(t: TmaCopy, smem_base: int) -> list[TmaViolation]:
    """The rule a swizzled shared tile's address must satisfy: TMA swizzles the *absolute*
    shared address, the layout the tile's offsets, so the two agree only on a tile aligned to
    :func:`alignment_for_swizzle` (what CUTLASS's collectives ``alignas``); off it the copy
    runs and every read through the layout sees a permutation (measured on an H200: tiles 256
    and 512 bytes off their 1024-byte block, :func:`tma_tile_mismatches`).  An unswizzled tile
    has no such rule here (CUTLASS still asks 128 bytes of it)."""
    if not isinstance(t, TmaCopy):
        raise LayoutError(f"tma_smem_violations: a TmaCopy (make_tma_copy), got {t!r}")
    smem_base = _int_arg("tma_smem_violations", "smem_base", smem_base, 0)
    if t.swizzle is None or t.swizzle.num_bits == 0:
        return []
    align = alignment_for_swizzle(t.swizzle, t.elem_bits)
    if smem_base % align:
        return [TmaViolation("a swizzled shared tile is aligned to alignment_for_swizzle (2^(B+M+|S|) bytes)",
                             "silently", f"tile at shared byte {smem_base:#x}, swizzle {t.swizzle} on "
                             f"{t.elem_bits}-bit elements needs {align}-byte alignment: the tile is permuted")]
    return []


def _parse_arch(arch: str) -> tuple[int, str]:
    """``sm_90a`` -> (90, "a"): the compute capability and its suffix (``a`` arch-specific,
    ``f`` family, ``""`` plain)."""
    if not isinstance(arch, str) or not arch.startswith("sm_"):
        raise LayoutError(f"an architecture is sm_<number>[a|f], got {arch!r}")
    body = arch.removeprefix("sm_")
    suffix = body[-1] if body[-1:] in ("a", "f") else ""
    try:
        return int(body[:len(body) - len(suffix)]), suffix
    except ValueError:
        raise LayoutError(f"an architecture is sm_<number>[a|f], got {arch!r}") from None


def _tma_enabled_violations(what: str, arch: str) -> list[TmaViolation]:
    """Whether CuTe compiles a TMA or bulk-copy instruction for ``arch`` at all
    (``CUTE_ARCH_TMA_SM90_ENABLED``, ``cute/arch/config.hpp``): sm_90 and sm_90a, and from
    sm_100 on only the arch-specific (``a``) and family (``f``) targets -- a plain sm_100 or
    sm_120 build compiles the copy to ``CUTE_INVALID_CONTROL_PATH`` (printf and ``brkpt``; seen
    in the PTX nvcc 13.0 emits for sm_90, 90a, 100, 100a, 100f, 120, 120a, 120f)."""
    cc, suffix = _parse_arch(arch)
    if cc < 90:
        return [TmaViolation("TMA needs sm_90 or newer (CUTE_ARCH_TMA_SM90_ENABLED)", "run time", f"{what} on {arch}")]
    if cc > 90 and not suffix:
        return [TmaViolation("from sm_100 on, CuTe's TMA needs an arch-specific (a) or family (f) target "
                             "(CUTE_ARCH_TMA_SM90_ENABLED)", "run time",
                             f"{what} on {arch}: CUTE_INVALID_CONTROL_PATH; try {arch}a")]
    return []


def arch_violations(op: str, arch: str) -> list[TmaViolation]:
    """What ``cute/arch/copy_sm90_tma.hpp`` and ``cute/arch/config.hpp`` say of ``op`` on
    ``arch`` (``sm_90``, ``sm_100a``, ``sm_120f``, ...): no TMA below sm_90 nor on a plain
    (suffix-less) target from sm_100 on, and no multicast on the sm_120 family (each
    ``CUTE_INVALID_CONTROL_PATH``, a breakpoint trap when the copy runs).  Read from the
    headers and the PTX they compile to; only sm_90 is run on hardware here."""
    out = _tma_enabled_violations(op, arch)
    cc, _ = _parse_arch(arch)
    if not out and op == "SM90_TMA_LOAD_MULTICAST" and cc // 10 == 12:
        return [TmaViolation("the sm_120 family has no TMA multicast (CUTE_ARCH_TMA_SM120_ENABLED: "
                             "CUTE_INVALID_CONTROL_PATH)", "run time", f"{op} on {arch}; not confirmed on hardware")]
    return out


def make_tma_copy(op: str, gmem: Layout, smem: Any, cta_tile: Any = None, cluster_size: int = 1, *,
                  elem_bits: int = 16, data_type: str = "f16", address: int = 0, arch: str = "sm_90") -> TmaCopy:
    """``make_tma_copy(op, gtensor, slayout, cta_tile, cluster_size)`` for a global tensor of
    ``gmem`` (element offsets, element type ``data_type`` of ``elem_bits``) at byte ``address``
    and a shared tile ``smem`` (a Layout, a swizzle composed with one on element offsets, or a
    GMMA atom's ``Swizzle o smem_ptr[Nb] o Layout`` whose swizzle acts on byte addresses);
    ``cta_tile`` defaults to ``product_each(shape(smem))``.  Law: the box (``desc.box_dim``)
    holds ``size(smem) / (number of boxes)`` elements and every descriptor field is what
    ``cuTensorMapEncodeTiled`` receives from the header for the same arguments."""
    if op not in TMA_OPS:
        raise LayoutError(f"make_tma_copy: the copy operation must be one of {', '.join(TMA_OPS)}, got {op!r}")
    if cluster_size < 1 or cluster_size & (cluster_size - 1):
        raise LayoutError(f"make_tma_copy: the multicast size must be a power of 2, got {cluster_size}")
    sw: Swizzle | None = None
    inner = smem
    if isinstance(smem, ComposedLayout):
        if not isinstance(smem.layout_a, Swizzle) or smem.offset != 0:
            raise LayoutError(f"make_tma_copy: a shared layout is a Layout or Swizzle o Layout, got {smem}")
        sw, inner = smem.layout_a, smem.layout_b
        if isinstance(smem.offset, SmemPtrFlag):
            # CuTe's GMMA atoms: the swizzle acts on the pointer's byte address; the same
            # function on element offsets has its base lowered by log2(bytes per element)
            shift = (smem.offset.bits // 8).bit_length() - 1
            if smem.offset.bits != elem_bits or sw.num_base < shift:
                raise LayoutError(f"make_tma_copy: {smem} is a layout of {smem.offset.bits}-bit elements, "
                                  f"the tensor's are {elem_bits}-bit")
            sw = Swizzle(sw.num_bits, sw.num_base - shift, sw.num_shft)
            smem = ComposedLayout(sw, 0, inner)
    if not isinstance(inner, Layout):
        raise LayoutError(f"make_tma_copy: a shared layout is a Layout or Swizzle o Layout, got {smem!r}")
    if cta_tile is None:
        cta_tile = tuple(product(s) for s in inner.shape) if isinstance(inner.shape, tuple) else (inner.shape,)
    cta_v_map = composition(make_identity_layout(gmem.shape), cta_tile)
    tma_gbasis = construct_tma_gbasis(gmem, inner, cta_v_map)
    desc, violations = make_tma_copy_desc(gmem, tma_gbasis, sw, cluster_size, elem_bits=elem_bits,
                                          data_type=data_type, address=address)
    violations = arch_violations(op, arch) + violations
    return TmaCopy(op, elem_bits, gmem, smem, sw, tma_gbasis, desc, cluster_size, violations, cta_tile)


def make_tma_atom(op: str, gmem: Layout, smem: Any, cta_tile: Any = None, num_multicast: int = 1, *,
                  elem_bits: int = 16, data_type: str = "f16", address: int = 0) -> TmaCopy:
    """``make_tma_atom``: the same construction as :func:`make_tma_copy` (CuTe returns the atom
    without the tiled copy's thread layout, which a TMA copy issues from one thread)."""
    return make_tma_copy(op, gmem, smem, cta_tile, num_multicast, elem_bits=elem_bits, data_type=data_type,
                         address=address)


def make_tma_copy_desc(gmem: Layout, tma_gbasis: Layout, sw: Swizzle | None, num_multicast: int, *,
                       elem_bits: int, data_type: str, address: int) -> tuple[TmaDescriptor, list[TmaViolation]]:
    """The header's ``make_tma_copy_desc``: the descriptor and every assert it would fail
    (module docstring, step 4)."""
    out: list[TmaViolation] = []
    at_desc = "descriptor creation"
    shp, std = fill_tma_gmem_shape_stride(gmem, tma_gbasis)
    rank = len(_modes(tma_gbasis))
    if address % 16:
        out.append(TmaViolation("the global address must be 16-byte aligned", at_desc, f"address {address:#x}"))
    for i in range(5):
        if not 1 <= shp[i] <= 1 << 32:
            out.append(TmaViolation("a global extent is 1 .. 2^32", at_desc, f"globalDim[{i}] = {shp[i]}"))
    if std[0] != 1:
        out.append(TmaViolation("the first TMA mode has stride 1 (the descriptor stores no first stride): "
                                "Majorness of smem doesn't match majorness of gmem", at_desc,
                                f"stride of the first TMA mode = {std[0]} elements"))
    bstride = [s * elem_bits // 8 for s in std]
    for i in range(1, 5):
        if bstride[i] >= 1 << 40:
            out.append(TmaViolation("a global stride is < 2^40 bytes", at_desc,
                                    f"globalStrides[{i - 1}] = {bstride[i]}"))
        if bstride[i] % 16:
            out.append(TmaViolation("a global stride is a multiple of 16 bytes", at_desc,
                                    f"globalStrides[{i - 1}] = {bstride[i]} bytes"))
    box = [1] * 5
    for i, (s, _) in enumerate(_modes(tma_gbasis)):
        box[i] = int(product(s))
    i, mc = rank - 1, num_multicast
    while mc > 1 and i >= 0:
        if box[i] % mc and mc % box[i]:
            out.append(TmaViolation("the multicast size divides the box (or the box's extent divides it)",
                                    at_desc, f"box extent {box[i]} of mode {i}, multicast {mc}"))
        new = -(-mc // box[i])
        box[i] = -(-box[i] // mc)
        mc, i = new, i - 1
    for j in range(5):
        if not 1 <= box[j] <= 256:
            out.append(TmaViolation("a box extent is 1 .. 256", at_desc, f"boxDim[{j}] = {box[j]}"))
    mode, bad = tma_swizzle(sw, elem_bits)
    out += bad
    out += _inner_box_violations(box[0], elem_bits // 8, mode, 0)
    desc = TmaDescriptor(DATA_TYPES.get(data_type, -1), elem_bits // 8, rank, address, tuple(shp[:rank]),
                         tuple(bstride[1:rank]), tuple(box[:rank]), (1,) * rank, 0, mode, 2, 0)
    return desc, out


def _inner_box_violations(box0: int, elem_bytes: int, swizzle: int, interleave: int) -> list[TmaViolation]:
    """``cuTensorMapEncodeTiled``'s two rules on the inner box extent (both only without
    interleave): at most the swizzle span, and a multiple of 16 bytes."""
    out: list[TmaViolation] = []
    if interleave:
        return out
    span = SWIZZLE_SPAN.get(swizzle)
    if span is not None and box0 * elem_bytes > span:
        out.append(TmaViolation("the inner box extent times the element size is at most the swizzle span "
                                "(cuTensorMapEncodeTiled)", "descriptor creation",
                                f"boxDim[0] = {box0} x {elem_bytes} B > {span} B"))
    if box0 * elem_bytes % 16:
        out.append(TmaViolation("the inner box extent times the element size is a multiple of 16 bytes "
                                "(cuTensorMapEncodeTiled)", "descriptor creation",
                                f"boxDim[0] = {box0} x {elem_bytes} B"))
    return out


def encode_tiled_violations(desc: TmaDescriptor, tensor_map_address: int | None = None) -> list[TmaViolation]:
    """What ``cuTensorMapEncodeTiled`` refuses of ``desc`` (its requirements in ``cuda.h``),
    all at descriptor creation: the tensor map object at ``tensor_map_address`` (when given:
    a ``CUtensorMap`` is ``alignas(64)``, so only one copied into unaligned memory breaks it)
    64-byte aligned; rank 1 .. 5 (at least 3 with interleave); a known data type; the global
    address 16-byte aligned (32 with 32-byte interleave); global extents 1 .. 2^32; global
    strides multiples of 16 bytes (32 with 32-byte interleave) and < 2^40; box extents
    1 .. 256; element strides 1 .. 8 (all five, as CuTe asserts, though the driver ignores the
    first without interleave); 32-byte interleave only with the 32-byte swizzle; without
    interleave the inner box at most the swizzle span and a multiple of 16 bytes; the NaN
    out-of-bounds fill only for floating-point types.  The packed 4- and 6-bit types are not
    modelled (a LayoutError)."""
    if not isinstance(desc, TmaDescriptor):
        raise LayoutError(f"encode_tiled_violations: a TmaDescriptor, got {desc!r}")
    if tensor_map_address is not None:
        tensor_map_address = _int_arg("encode_tiled_violations", "tensor_map_address", tensor_map_address, 0)
    at = "descriptor creation"
    out: list[TmaViolation] = []
    if desc.data_type in (13, 14, 15):
        raise LayoutError("encode_tiled_violations: the packed 4- and 6-bit data types are not modelled")
    il = desc.interleave
    if tensor_map_address is not None and tensor_map_address % 64:
        out.append(TmaViolation("the tensor map object is 64-byte aligned", at,
                                f"tensorMap at {tensor_map_address:#x}"))
    if not 1 <= desc.rank <= 5:
        out.append(TmaViolation("the tensor rank is 1 .. 5", at, f"tensorRank = {desc.rank}"))
    if il in (1, 2) and desc.rank < 3:
        out.append(TmaViolation("an interleaved tensor has rank 3 or more", at,
                                f"tensorRank = {desc.rank} with {INTERLEAVE_MODES.get(il, il)}"))
    if desc.data_type not in DATA_TYPE_BYTES:
        out.append(TmaViolation("the data type is a CUtensorMapDataType", at, f"tensorDataType = {desc.data_type}"))
    if desc.global_address % 16:
        out.append(TmaViolation("the global address must be 16-byte aligned", at, f"address {desc.global_address:#x}"))
    elif il == 2 and desc.global_address % 32:
        out.append(TmaViolation("with 32-byte interleave the global address is 32-byte aligned", at,
                                f"address {desc.global_address:#x}"))
    for i, d in enumerate(desc.global_dim):
        if not 1 <= d <= 1 << 32:
            out.append(TmaViolation("a global extent is 1 .. 2^32", at, f"globalDim[{i}] = {d}"))
    for i, st in enumerate(desc.global_strides):
        if st >= 1 << 40:
            out.append(TmaViolation("a global stride is < 2^40 bytes", at, f"globalStrides[{i}] = {st}"))
        if st % 16:
            out.append(TmaViolation("a global stride is a multiple of 16 bytes", at,
                                    f"globalStrides[{i}] = {st} bytes"))
        elif il == 2 and st % 32:
            out.append(TmaViolation("with 32-byte interleave a global stride is a multiple of 32 bytes", at,
                                    f"globalStrides[{i}] = {st} bytes"))
    for i, b in enumerate(desc.box_dim):
        if not 1 <= b <= 256:
            out.append(TmaViolation("a box extent is 1 .. 256", at, f"boxDim[{i}] = {b}"))
    for i, e in enumerate(desc.element_strides):
        if not 1 <= e <= 8:
            out.append(TmaViolation("an element stride is 1 .. 8", at, f"elementStrides[{i}] = {e}"))
    if il not in INTERLEAVE_MODES:
        out.append(TmaViolation("the interleave is a CUtensorMapInterleave", at, f"interleave = {il}"))
    if desc.swizzle not in SWIZZLE_MODES:
        out.append(TmaViolation("the swizzle is a CUtensorMapSwizzle", at, f"swizzle = {desc.swizzle}"))
    if il == 2 and desc.swizzle != 1:
        out.append(TmaViolation("32-byte interleave requires the 32-byte swizzle", at,
                                f"{INTERLEAVE_MODES[2]} with {SWIZZLE_MODES.get(desc.swizzle, desc.swizzle)}"))
    if desc.box_dim:
        out += _inner_box_violations(desc.box_dim[0], desc.elem_bytes, desc.swizzle, il)
    if desc.oob_fill == 1 and desc.data_type not in FLOAT_DATA_TYPES:
        out.append(TmaViolation("the NaN out-of-bounds fill is for floating-point types", at,
                                f"oobFill = NAN_REQUEST_ZERO_FMA, tensorDataType = {desc.data_type}"))
    return out


def tma_swizzle_bytes(byte_address: int, mode: int) -> int:
    """Where TMA puts the byte it would put at ``byte_address`` unswizzled (absolute shared
    address bits, ``CUtensorMapSwizzle`` ``mode``): 32/64/128-byte swizzles XOR the 16-byte
    chunk bits ``[4, 4 + B)`` with the bits ``[7, 7 + B)`` (B = 1, 2, 3), i.e. CuTe's
    ``Swizzle<B,4,3>`` on byte addresses.  Law: an involution on every 1024-byte-aligned block."""
    if mode == 0:
        return byte_address
    if mode > 3:
        raise LayoutError(f"tma_swizzle_bytes: {SWIZZLE_MODES.get(mode, mode)} is not modelled (never run here)")
    mask = (1 << mode) - 1
    return byte_address ^ (((byte_address >> 7) & mask) << 4)


def tma_load_violations(desc: TmaDescriptor, coord: tuple[int, ...]) -> list[TmaViolation]:
    """The rules one TMA load at box coordinate ``coord`` must satisfy beyond the descriptor's:
    the box's first element in the innermost dimension starts on a 16-byte boundary of the
    tensor (measured on an H200: a load off it stops the kernel with an illegal instruction;
    out-of-bounds coordinates are otherwise fine and zero-filled)."""
    if len(coord) != desc.rank:
        raise LayoutError(f"a TMA coordinate has {desc.rank} modes, got {coord!r}")
    if coord[0] * desc.elem_bytes % 16:
        return [TmaViolation("a TMA box starts on a 16-byte boundary in the innermost dimension", "run time",
                             f"coordinate {coord[0]} x {desc.elem_bytes} B = {coord[0] * desc.elem_bytes} B: "
                             "illegal instruction")]
    return []


def tma_store_violations(desc: TmaDescriptor, coord: tuple[int, ...]) -> list[TmaViolation]:
    """The rules one TMA store at box coordinate ``coord`` must satisfy: those of a load
    (:func:`tma_load_violations`) and, measured on an H200, no negative coordinate -- a store
    whose box starts before the tensor in any mode stops the kernel with an illegal instruction
    (a load there zero-fills)."""
    out = tma_load_violations(desc, coord)
    neg = [i for i, c in enumerate(coord) if c < 0]
    if neg:
        out.append(TmaViolation("a TMA store's box starts inside the tensor (no negative coordinate)", "run time",
                                f"coordinate {coord}: mode {neg[0]} is negative: illegal instruction"))
    return out


def tma_box_image(desc: TmaDescriptor, coord: tuple[int, ...], smem_base: int = 0) -> dict[int, int | None]:
    """What one TMA load of the box at TMA coordinate ``coord`` (one per descriptor mode)
    writes: shared byte offset from ``smem_base`` (the destination's absolute shared address;
    the swizzle acts on absolute address bits) -> global element
    offset of the element whose first byte lands there, or None where the element is out of
    the tensor and filled with zeros.  Box element ``(b0, .., b4)`` goes to
    ``smem_base + (b0 + box0 * (b1 + box1 * (...))) * elem_bytes``, swizzled by
    :func:`tma_swizzle_bytes`; its global coordinate is ``coord + b`` per mode."""
    if len(coord) != desc.rank:
        raise LayoutError(f"a TMA coordinate has {desc.rank} modes, got {coord!r}")
    strides = (1, *(s // desc.elem_bytes for s in desc.global_strides))
    out: dict[int, int | None] = {}
    eb = desc.elem_bytes
    total = math.prod(desc.box_dim)
    for lin in range(total):
        b, r = [], lin
        for ext in desc.box_dim:
            b.append(r % ext)
            r //= ext
        g = [c + x for c, x in zip(coord, b)]
        inside = all(0 <= gi < d for gi, d in zip(g, desc.global_dim))
        off = tma_swizzle_bytes(smem_base + lin * eb, desc.swizzle) - smem_base
        out[off] = sum(gi * s for gi, s in zip(g, strides)) if inside else None
    return out


def tma_box_store(desc: TmaDescriptor, coord: tuple[int, ...], smem_base: int = 0) -> dict[int, int]:
    """What one TMA store (``SM90_TMA_STORE``, ``UTMASTG``) of the box at ``coord`` writes:
    global element offset -> the shared byte offset (from ``smem_base``) it is read from -- the
    load's mapping (:func:`tma_box_image`) turned around, the elements outside the tensor not
    written."""
    return {e: off for off, e in tma_box_image(desc, coord, smem_base).items() if e is not None}


def tma_coord_scales(t: TmaCopy) -> dict[tuple[int, ...], tuple[int, int]]:
    """The header's ``gmem_tma_basis_stride`` (the TMA tensor's strides): per global mode (its
    basis path) the TMA mode it feeds and the scale of its coordinate there; modes of extent
    1, stride 0 or in no TMA mode feed none."""
    out: dict[tuple[int, ...], tuple[int, int]] = {}
    modes = _modes(t.tma_gbasis)
    ident = make_identity_layout(t.gmem.shape)
    gshape, gstride = _leaves(t.gmem.shape), _leaves(t.gmem.stride)
    for s, d, e in zip(gshape, gstride, _leaves(ident.stride)):
        if (_static(s) and s == 1) or (_static(d) and d == 0):
            continue
        j = next((k for k, (_, md) in enumerate(modes)
                  if any(isinstance(b, ScaledBasis) and b.path == e.path and b.value == 1 for b in _leaves(md))), None)
        if j is None:
            continue
        if j == 0:
            scale = int(d)
        elif len(_leaves(modes[j][1])) == 1:
            scale = 1
        else:
            stride_j = t.desc.global_strides[j - 1]
            scale = -(-(int(d) * t.elem_bits // max(stride_j, 16)) // 8)
        out[e.path] = (j, scale)
    return out


def tma_tile_image(t: TmaCopy, origin: tuple[int, ...], smem_base: int = 0) -> dict[int, int | None]:
    """What CuTe's ``copy(tma, tAgA, tAsA)`` of the CTA tile whose first element is at global
    coordinate ``origin`` (one per top-level mode of a flat global tensor) writes, the tile at
    shared byte address ``smem_base``: box ``k`` covers the shared *indices* ``[k B, (k+1) B)``
    of the unswizzled layout (``B`` the box's elements; CuTe's ``layout_v``), starts at byte
    ``k B x bytes`` and loads the TMA coordinate of that index's element.  Shared byte offset ->
    global element offset (None: zero fill)."""
    if any(isinstance(x, tuple) for x in (t.gmem.shape if isinstance(t.gmem.shape, tuple) else (t.gmem.shape,))):
        raise LayoutError("tma_tile_image: a global tensor with nested modes is not supported")
    inner = t.smem.layout_b if isinstance(t.smem, ComposedLayout) else t.smem
    inv = right_inverse(inner)
    cta_tile = t.cta_tile
    cta_v_map = composition(make_identity_layout(t.gmem.shape), cta_tile)
    scales = tma_coord_scales(t)
    box = t.box_elements
    n = int(size(inner))
    eb = t.elem_bits // 8
    rank = len(origin)
    out: dict[int, int | None] = {}
    for k in range(-(-n // box)):
        local = cta_v_map(inv(k * box))
        g = [int(origin[i]) + int(local[i]) for i in range(rank)]
        coord = [0] * t.desc.rank
        for i in range(rank):
            if (i,) in scales:
                j, scale = scales[(i,)]
                coord[j] += g[i] * scale
        base = smem_base + k * box * eb
        for off, e in tma_box_image(t.desc, tuple(coord), base).items():
            out[base - smem_base + off] = e
    return out


def tma_tile_mismatches(t: TmaCopy, origin: tuple[int, ...], smem_base: int = 0,
                        limit: int = 8) -> tuple[int, list[dict[str, Any]]]:
    """Compare :func:`tma_tile_image` with what the shared layout says the tile holds: tile
    coordinate ``c`` is at element ``smem(c)`` of the tile (the swizzle on offsets from the
    tile's start, as a tile-relative layout reads it) and should hold global element
    ``gmem(origin + c)`` (zero outside the tensor).  The number of tile elements that differ
    and up to ``limit`` witnesses (tile coordinate, shared byte, expected and found)."""
    if not isinstance(t, TmaCopy):
        raise LayoutError(f"tma_tile_mismatches: a TmaCopy (make_tma_copy's result) is expected, got {t!r}")
    if not isinstance(origin, tuple) or not all(isinstance(x, int) for x in origin) or not isinstance(smem_base, int):
        raise LayoutError("tma_tile_mismatches: the origin is a tuple of ints and the shared base an int")
    eb = t.elem_bits // 8
    img = tma_tile_image(t, origin, smem_base)
    gshape = t.gmem.shape if isinstance(t.gmem.shape, tuple) else (t.gmem.shape,)
    tile_shape = t.smem.shape if isinstance(t.smem.shape, tuple) else (t.smem.shape,)
    bad = 0
    wit: list[dict[str, Any]] = []
    n = int(size(t.smem))
    flat_tile = tuple(int(product(ext)) for ext in tile_shape)
    for lin in range(n):
        c = list(idx2crd(lin, flat_tile))
        g = tuple(int(o) + x for o, x in zip(origin, c))
        want = int(t.gmem(g)) if all(0 <= gi < int(d) for gi, d in zip(g, gshape)) else None
        byte = int(t.smem(tuple(c))) * eb
        got = img.get(byte, "unwritten")
        if got != want:
            bad += 1
            if len(wit) < limit:
                wit.append({"tile_coordinate": tuple(c), "shared_byte": byte, "expected": want, "found": got})
    return bad, wit


# --------------------------------------------------------------------------- bulk copies
#: the non-tensor bulk copies of ``cute/arch/copy_sm90_tma.hpp`` (``cp.async.bulk``)
BULK_OPS = ("SM90_BULK_COPY_G2S", "SM90_BULK_COPY_S2G")


@dataclass
class BulkCopy:
    """``Copy_Traits<SM90_BULK_COPY_G2S | _S2G, NumBitsPerTMA>``: one ``cp.async.bulk`` moves
    ``num_bits / 8`` bytes (``size_bytes``, the instruction's operand); ``count`` of them copy
    the tensor (1 for :func:`make_bulk_copy`), and the rules they break."""

    op: str
    num_bits: int
    count: int = 1
    violations: list[TmaViolation] = field(default_factory=list)

    @property
    def size_bytes(self) -> int:
        """``int32_t(NumBitsPerTMA::value / 8)``: the bytes one instruction moves."""
        return self.num_bits // 8


def _bulk_address_violations(side: str, addresses: list[int]) -> list[TmaViolation]:
    bad = [a for a in addresses if a % 16]
    if not bad:
        return []
    return [TmaViolation("cp.async.bulk: the source and destination addresses are 16-byte aligned", "run time",
                         f"{side} address {bad[0]:#x} (of {len(bad)} of {len(addresses)} instructions); "
                         "from the PTX ISA, not measured here")]


def make_bulk_copy(op: str, num_bits: int, src_address: int = 0, dst_address: int = 0, *,
                   arch: str = "sm_90") -> BulkCopy:
    """``Copy_Traits<op, Int<num_bits>>`` and one ``cp.async.bulk`` of it from byte
    ``src_address`` to byte ``dst_address`` (``op`` G2S: global to shared, S2G: shared to
    global).  Rules: ``(num_bits / 8) % 16 == 0`` in whole bytes, as the traits' static_assert
    computes it ("Bulk Copy requires copy vector size align to 16B"; compile time); both
    addresses 16-byte aligned (the PTX ISA; run time); and a target with CuTe's TMA
    (:func:`arch_violations`)."""
    if op not in BULK_OPS:
        raise LayoutError(f"make_bulk_copy: the copy operation must be one of {', '.join(BULK_OPS)}, got {op!r}")
    num_bits = _int_arg("make_bulk_copy", "num_bits", num_bits, 1)
    src_address = _int_arg("make_bulk_copy", "src_address", src_address, 0)
    dst_address = _int_arg("make_bulk_copy", "dst_address", dst_address, 0)
    out = _tma_enabled_violations(op, arch)
    if (num_bits // 8) % 16:
        out.append(TmaViolation("Bulk Copy requires copy vector size align to 16B (Copy_Traits<SM90_BULK_COPY_*> "
                                "static_assert)", "compile time",
                                f"NumBitsPerTMA = {num_bits}: {num_bits // 8} bytes"))
    out += _bulk_address_violations("source", [src_address]) + _bulk_address_violations("destination", [dst_address])
    return BulkCopy(op, num_bits, 1, out)


def make_bulk_copy_auto(src: Any, dst: Any, elem_bits: int, src_address: int = 0, dst_address: int = 0, *,
                        g2s: bool = True, arch: str = "sm_90") -> BulkCopy:
    """``copy(Copy_Traits<SM90_BULK_COPY_AUTO>, src, dst)`` (``cute/algorithm/copy.hpp``) of a
    tensor of layout ``src`` at byte ``src_address`` into one of layout ``dst`` at
    ``dst_address`` (element offsets, ``elem_bits``-bit elements; ``g2s``: global to shared,
    else shared to global): the vector is ``max_common_layout(src, dst)``, one ``cp.async.bulk``
    of ``size(vector) x elem_bits`` bits per vector of ``logical_divide(src, vector)``.  Rules:
    at least 128 bits ("Expected at least 128-bits for BLKCP", a static_assert), those of
    :func:`make_bulk_copy` for that size, and every instruction's two addresses 16-byte
    aligned (the vectors' starts, not only the tensors')."""
    fn = "make_bulk_copy_auto"
    for name, lay in (("src", src), ("dst", dst)):
        if not isinstance(lay, (Layout, ComposedLayout)):
            raise LayoutError(f"{fn}: {name} is a layout, got {lay!r}")
    elem_bits = _int_arg(fn, "elem_bits", elem_bits, 1)
    src_address = _int_arg(fn, "src_address", src_address, 0)
    dst_address = _int_arg(fn, "dst_address", dst_address, 0)
    tiler = max_common_layout(src, dst)
    vec = int(size(tiler))
    n = size(src)
    if not isinstance(n, int) or size(dst) != n:
        raise LayoutError(f"{fn}: src and dst have one integer size, got {size(src)} and {size(dst)}")
    if n // vec > 1 << 20:
        raise LayoutError(f"{fn}: {n // vec} vectors is more than threadmap enumerates")
    num_bits = vec * elem_bits
    op = BULK_OPS[0] if g2s else BULK_OPS[1]
    out = _tma_enabled_violations("SM90_BULK_COPY_AUTO", arch)
    if num_bits < 128:
        out.append(TmaViolation("Expected at least 128-bits for BLKCP (SM90_BULK_COPY_AUTO static_assert)",
                                "compile time", f"max_common_layout {tiler}: {vec} x {elem_bits} bits"))
    if (num_bits // 8) % 16:
        out.append(TmaViolation("Bulk Copy requires copy vector size align to 16B (Copy_Traits<SM90_BULK_COPY_*> "
                                "static_assert)", "compile time", f"NumBitsPerTMA = {num_bits}: {num_bits // 8} bytes"))
    rest = complement(tiler, int(n))
    starts = [rest(j) for j in range(int(n) // vec)]
    offsets = [(src(i), dst(i)) for i in starts]
    if not all(isinstance(x, int) for pair in offsets for x in pair):
        raise LayoutError(f"{fn}: src and dst map to integer offsets, got {src} and {dst}")
    out += _bulk_address_violations("source", [src_address + a * elem_bits // 8 for a, _ in offsets])
    out += _bulk_address_violations("destination", [dst_address + b * elem_bits // 8 for _, b in offsets])
    return BulkCopy(op, num_bits, len(starts), out)
