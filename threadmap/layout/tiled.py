"""Tiled copies and tiled MMAs: CuTe's ``TiledCopy`` / ``ThrCopy`` (``cute/atom/copy_atom.hpp``,
``cute/atom/copy_traits*.hpp``) and ``TiledMMA`` / ``ThrMMA`` (``cute/atom/mma_atom.hpp``).

Every function follows the C++ header step by step (same intermediate layouts, same
``compose``/``zipped_divide``/``coalesce`` calls), so that the results agree with CuTe
*structurally*: ``str(tiled_copy.layout_tv)`` is what ``print(TiledLayout_TV{})`` writes, up to
the ``_`` of static integers.  Tensors are :class:`threadmap.layout.layout.Tensor` (a layout
with an integer or coordinate offset); partitioning keeps the offset, as CuTe keeps the data
pointer.

Definitions (the header's, in short):

* Copy atom: ``ThrID`` and the bit layouts ``SrcLayout``/``DstLayout``/``RefLayout``:
  (thread, bit) -> bit.  ``ValLayoutX = recast_layout<uint1_t, ValType>(BitLayoutX)``
  ``= upcast<sizeof_bits<ValType>>(BitLayoutX)``: (thread, value) -> value.
* ``make_tiled_copy(atom, thr, val)``: ``layout_mn = raked_product(thr, val)``,
  ``layout_tv = right_inverse(layout_mn).with_shape((size(thr), size(val)))``,
  ``tiler_mn = product_each(shape(layout_mn))``.
* ``tile2thrfrg(T, ref2trg)``: ``zipped_divide(layout_tv, (AtomNumThr, AtomNumVal))``,
  ``.compose(ref2trg, _)``, ``coalesce(zip(.), (1,(1,1)))`` = ((thr),(atom_val,rest_val)) -> (m,n),
  and ``T.compose(that, _)(make_coord(_,_), _)``.
* ``make_tiled_mma(atom, thr_mnk, perm)``: ``thr_layout_vmnk = tiled_product(ThrID,
  append<3>(thr_mnk, 1:0))``; ``thrfrg_C`` = logical_divide by the permutation, zipped_divide
  by the atom shape, compose with ``LayoutC_TV``, zipped_divide by the thread tile.

A note on compact layouts: CuTe gives a static size-1 mode of a compact layout stride 0
(``Layout<Shape<_4,_1>>`` is ``(_4,_1):(_1,_0)``).  Every compact layout built here uses
:func:`make_compact_layout`, which does the same, so the structures match the C++ ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from threadmap.errors import AtomError, LayoutError
from threadmap.layout.int_tuple import (
    Underscore,
    _,
    compact_major_left,
    product,
    product_each,
    wrap,
)
from threadmap.layout.layout import (
    Layout,
    Tensor,
    append,
    coalesce,
    complement,
    composition,
    filter,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    make_ordered_layout,
    raked_product,
    rank,
    right_inverse,
    size,
    tiled_product,
    upcast,
    zipped_divide,
)
from threadmap.layout.mma_atoms import MMAAtom, get_mma_atom

__all__ = [
    "CXX_TYPE_BITS",
    "CopyOp",
    "CopyAtom",
    "TiledCopy",
    "ThrCopy",
    "TiledMMA",
    "ThrMMA",
    "UniversalCopy",
    "SM80_CP_ASYNC_CACHEALWAYS",
    "SM80_CP_ASYNC_CACHEGLOBAL",
    "SM80_CP_ASYNC_CACHEALWAYS_ZFILL",
    "SM80_CP_ASYNC_CACHEGLOBAL_ZFILL",
    "AutoVectorizingCopyWithAssumedAlignment",
    "AutoVectorizingCopy",
    "DefaultCopy",
    "COPY_OPS",
    "get_copy_op",
    "make_compact_layout",
    "make_fragment_like",
    "make_tiled_copy",
    "make_tiled_copy_impl",
    "make_tiled_copy_A",
    "make_tiled_copy_B",
    "make_tiled_copy_C",
    "make_tiled_copy_C_atom",
    "make_tiled_copy_S",
    "make_tiled_copy_D",
    "make_tiled_mma",
    "partition_shape_A",
    "partition_shape_B",
    "partition_shape_C",
]

# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------

#: ``sizeof_bits`` of the C++ value types a Copy_Atom is commonly instantiated with.
CXX_TYPE_BITS: dict[str, int] = {
    "uint1_t": 1, "int4_t": 4, "uint4_t": 4,
    "int8_t": 8, "uint8_t": 8, "char": 8, "float_e4m3_t": 8, "float_e5m2_t": 8,
    "int16_t": 16, "uint16_t": 16, "half_t": 16, "cute::half_t": 16, "bfloat16_t": 16,
    "cute::bfloat16_t": 16, "cutlass::half_t": 16, "cutlass::bfloat16_t": 16,
    "int32_t": 32, "uint32_t": 32, "int": 32, "float": 32, "tfloat32_t": 32,
    "cutlass::tfloat32_t": 32,
    "int64_t": 64, "uint64_t": 64, "double": 64,
    "uint128_t": 128, "cute::uint128_t": 128,
}

#: threadmap's short value-type names (``mma_atoms``) -> C++ names.
_SHORT_TYPES: dict[str, str] = {
    "f16": "half_t", "bf16": "bfloat16_t", "tf32": "tfloat32_t", "f32": "float", "f64": "double",
    "s8": "int8_t", "u8": "uint8_t", "s16": "int16_t", "u16": "uint16_t", "s32": "int32_t",
    "u32": "uint32_t", "s64": "int64_t", "u64": "uint64_t",
}

_UINT_BY_BITS = {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t", 128: "uint128_t"}


def type_bits(t: str | int) -> int:
    """``sizeof_bits<T>`` of a C++ type name (or a short name such as ``"f16"``), or ``t`` itself
    when it is already a bit count."""
    if isinstance(t, int):
        if t <= 0:
            raise AtomError(f"a value type must have a positive number of bits, got {t}")
        return t
    name = _SHORT_TYPES.get(t, t)
    try:
        return CXX_TYPE_BITS[name]
    except KeyError:
        raise AtomError(f"unknown value type {t!r}; known: {', '.join(sorted(CXX_TYPE_BITS))} "
                        "or a bit count") from None


def _cxx_type(t: str | int) -> str:
    if isinstance(t, int):
        return _UINT_BY_BITS.get(t, f"uint_bit_t<{t}>")
    return _SHORT_TYPES.get(t, t)


def make_compact_layout(shape: Any) -> Layout:
    """CuTe ``make_layout(shape)``: column-major (``compact_major<LayoutLeft>``), where a
    size-1 mode gets stride 0, as the header's ``detail::compact`` does for static ``_1``."""
    return Layout(shape)


def _as_tile_mode(t: Any) -> Any:
    """A tiler mode as CuTe applies it: an integer ``n`` is ``make_layout(n)``."""
    if isinstance(t, bool):
        raise AtomError(f"bad tiler mode {t!r}")
    if isinstance(t, int):
        return make_compact_layout(t)
    if isinstance(t, tuple):
        return tuple(_as_tile_mode(x) for x in t)
    return t


def _layout_of(x: Any) -> Layout:
    return x.layout if isinstance(x, Tensor) else x


def _like(x: Any, layout: Layout) -> Any:
    """A Tensor with ``x``'s offset when ``x`` is a Tensor, else the layout."""
    return Tensor(layout, x.offset) if isinstance(x, Tensor) else layout


def _slice(x: Any, crd: Any) -> Any:
    """``x(crd)`` with ``_`` in ``crd`` (CuTe slicing); a Tensor's offset advances by the
    offset of the fixed coordinates, as CuTe advances the data pointer."""
    return x(crd)


def _compose(x: Any, *tilers: Any) -> Any:
    """``x.compose(t0, t1, ...)`` = ``composition(x, make_tile(t0, t1, ...))`` (Layout or Tensor)."""
    lay = _layout_of(x)
    tiler = tilers[0] if len(tilers) == 1 else tuple(tilers)
    return _like(x, composition(lay, tiler))


def _zipped_divide(x: Any, tiler: Any) -> Any:
    return _like(x, zipped_divide(_layout_of(x), _as_tile_mode(tiler)))


def _logical_divide(x: Any, tiler: Any) -> Any:
    return _like(x, logical_divide(_layout_of(x), _as_tile_mode(tiler)))


def _zip_layout(layout: Layout) -> Layout:
    """``zip(layout)``: ``((a,b),(c,d))`` -> ``((a,c),(b,d))`` (transpose of a rank-2 of rank-2)."""
    def z(t: Any) -> Any:
        if isinstance(t, tuple):
            if t and isinstance(t[0], tuple):
                n = len(t[0])
                if any(not isinstance(m, tuple) or len(m) != n for m in t):
                    raise LayoutError(f"zip: mismatched ranks in {t}")
                return tuple(tuple(m[j] for m in t) for j in range(n))
            return (t,)
        return t
    return Layout(z(layout.shape), z(layout.stride))


def _rep(n: int) -> Any:
    """``repeat<n>(_)``: a bare ``_`` for ``n == 1``."""
    return _ if n == 1 else (_,) * n


def _shape(x: Any) -> Any:
    if isinstance(x, (Layout, Tensor)):
        return x.shape
    if isinstance(x, tuple):
        return tuple(_shape(t) for t in x)
    return x


def _size(x: Any) -> int:
    if isinstance(x, (Layout, Tensor)):
        return size(_layout_of(x))
    return product(_shape(x))


# ------------------------------------------------------------------------------------------
# copy operations and atoms
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CopyOp:
    """A ``cute::Copy_Traits<Op>``: ``ThrID`` and the bit-level TV layouts.

    ``src_bits``/``dst_bits``/``ref_bits`` are ``SrcLayout``/``DstLayout``/``RefLayout``:
    (logical thread, bit) -> bit, exactly as the header writes them.
    """

    name: str
    thr_id: Layout
    src_bits: Layout
    dst_bits: Layout
    ref_bits: Layout
    #: Widths of the source / destination registers the instruction moves (``SRegisters``).
    src_reg_bits: int = 0
    dst_reg_bits: int = 0


def _universal_bits(bits: int) -> Layout:
    return make_compact_layout((1, bits))


def UniversalCopy(s: str | int, d: str | int | None = None) -> CopyOp:
    """``Copy_Traits<UniversalCopy<S,D>>``: one thread, ``SrcLayout = (1, sizeof_bits<S>)``."""
    d = s if d is None else d
    sb, db = type_bits(s), type_bits(d)
    if sb < 8 or db < 8:
        raise AtomError("UniversalCopy requires sizeof_bits_v<S> >= 8 and sizeof_bits_v<D> >= 8")
    name = f"UniversalCopy<{_cxx_type(s)}>" if s == d else f"UniversalCopy<{_cxx_type(s)},{_cxx_type(d)}>"
    return CopyOp(name, make_compact_layout(1), _universal_bits(sb), _universal_bits(db),
                  _universal_bits(sb), sb, db)


def _cp_async(base: str, s: str | int, d: str | int | None, sizes: tuple[int, ...]) -> CopyOp:
    d = s if d is None else d
    sb, db = type_bits(s), type_bits(d)
    if sb != db:
        raise AtomError("cp.async requires sizeof(src_value_type) == sizeof(dst_value_type)")
    if sb not in sizes:
        raise AtomError(f"{base}: cp.async sizeof(TS) = {sb // 8} bytes is not supported "
                        f"(allowed: {', '.join(str(b // 8) for b in sizes)})")
    name = f"{base}<{_cxx_type(s)}>" if s == d else f"{base}<{_cxx_type(s)},{_cxx_type(d)}>"
    return CopyOp(name, make_compact_layout(1), _universal_bits(sb), _universal_bits(db),
                  _universal_bits(sb), sb, db)


def SM80_CP_ASYNC_CACHEALWAYS(s: str | int, d: str | int | None = None) -> CopyOp:
    """``SM80_CP_ASYNC_CACHEALWAYS<TS,TD>`` (``cp.async.ca``, 4, 8 or 16 bytes)."""
    return _cp_async("SM80_CP_ASYNC_CACHEALWAYS", s, d, (32, 64, 128))


def SM80_CP_ASYNC_CACHEGLOBAL(s: str | int, d: str | int | None = None) -> CopyOp:
    """``SM80_CP_ASYNC_CACHEGLOBAL<TS,TD>`` (``cp.async.cg``, 16 bytes only)."""
    return _cp_async("SM80_CP_ASYNC_CACHEGLOBAL", s, d, (128,))


def SM80_CP_ASYNC_CACHEALWAYS_ZFILL(s: str | int, d: str | int | None = None) -> CopyOp:
    """``SM80_CP_ASYNC_CACHEALWAYS_ZFILL<TS,TD>`` (zero-fill when the predicate is false)."""
    return _cp_async("SM80_CP_ASYNC_CACHEALWAYS_ZFILL", s, d, (32, 64, 128))


def SM80_CP_ASYNC_CACHEGLOBAL_ZFILL(s: str | int, d: str | int | None = None) -> CopyOp:
    """``SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<TS,TD>``."""
    return _cp_async("SM80_CP_ASYNC_CACHEGLOBAL_ZFILL", s, d, (128,))


def AutoVectorizingCopyWithAssumedAlignment(max_vec_bits: int = 128) -> CopyOp:
    """``Copy_Traits<AutoVectorizingCopyWithAssumedAlignment<B>>``: one thread and the bit
    layouts ``(1,1):(0,0)``, so every value type gives one value per atom."""
    if max_vec_bits not in (8, 16, 32, 64, 128):
        raise AtomError("Expected MaxVecBits to be 8 or 16 or 32 or 64 or 128 for alignment and performance.")
    z = Layout((1, 1), (0, 0))
    return CopyOp(f"AutoVectorizingCopyWithAssumedAlignment<{max_vec_bits}>", make_compact_layout(1),
                  z, z, z, max_vec_bits, max_vec_bits)


def AutoVectorizingCopy() -> CopyOp:
    """``AutoVectorizingCopy`` = ``AutoVectorizingCopyWithAssumedAlignment<128>``."""
    return AutoVectorizingCopyWithAssumedAlignment(128)


def DefaultCopy() -> CopyOp:
    """``DefaultCopy`` = ``AutoVectorizingCopyWithAssumedAlignment<8>``."""
    return AutoVectorizingCopyWithAssumedAlignment(8)


def _warp_op(name: str, src: Layout, dst: Layout, ref: Layout, sreg: int, dreg: int) -> CopyOp:
    return CopyOp(name, Layout(32, 1), src, dst, ref, sreg, dreg)


def _ldsm_ops() -> dict[str, CopyOp]:
    """``copy_traits_sm75.hpp`` (LDSM, MOVM) and ``copy_traits_sm90.hpp`` (STSM)."""
    ld = {
        "SM75_U32x1_LDSM_N": (Layout(((8, 4), 128), ((128, 0), 1)), Layout((32, 32), (32, 1))),
        "SM75_U32x2_LDSM_N": (Layout(((16, 2), 128), ((128, 0), 1)), Layout((32, (32, 2)), (32, (1, 1024)))),
        "SM75_U32x4_LDSM_N": (Layout((32, 128), (128, 1)), Layout((32, (32, 4)), (32, (1, 1024)))),
        "SM75_U16x2_LDSM_T": (Layout(((8, 4), 128), ((128, 0), 1)),
                              Layout(((4, 8), (16, 2)), ((256, 16), (1, 128)))),
        "SM75_U16x4_LDSM_T": (Layout(((16, 2), 128), ((128, 0), 1)),
                              Layout(((4, 8), (16, 2, 2)), ((256, 16), (1, 128, 1024)))),
        "SM75_U16x8_LDSM_T": (Layout((32, 128), (128, 1)),
                              Layout(((4, 8), (16, 2, 4)), ((256, 16), (1, 128, 1024)))),
    }
    ops: dict[str, CopyOp] = {}
    for name, (src, dst) in ld.items():
        n = {"U32x1": 1, "U32x2": 2, "U32x4": 4, "U16x2": 1, "U16x4": 2, "U16x8": 4}[name[5:10]]
        ops[name] = _warp_op(name, src, dst, dst, 128, 32 * n)
        st = name.replace("SM75", "SM90").replace("LDSM", "STSM")
        ops[st] = _warp_op(st, dst, src, dst, 32 * n, 128)
    movm = Layout((32, 32), (32, 1))
    ops["SM75_U32x1_MOVM_T"] = _warp_op("SM75_U32x1_MOVM_T", movm, movm, movm, 32, 32)
    return ops


#: Fixed (non-templated) copy operations by C++ name.
COPY_OPS: dict[str, CopyOp] = _ldsm_ops()


def get_copy_op(name: str) -> CopyOp:
    """A copy operation by C++ spelling: ``"UniversalCopy<uint128_t>"``,
    ``"SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>"``, ``"AutoVectorizingCopy"``, ``"DefaultCopy"``,
    ``"AutoVectorizingCopyWithAssumedAlignment<64>"``, ``"SM75_U32x4_LDSM_N"``, ..."""
    name = name.replace(" ", "").removeprefix("cute::")
    if name in COPY_OPS:
        return COPY_OPS[name]
    if name == "AutoVectorizingCopy":
        return AutoVectorizingCopy()
    if name == "DefaultCopy":
        return DefaultCopy()
    if "<" in name and name.endswith(">"):
        base, args_s = name[:-1].split("<", 1)
        args: list[Any] = [a for a in args_s.split(",") if a]
        factories = {
            "UniversalCopy": UniversalCopy,
            "SM80_CP_ASYNC_CACHEALWAYS": SM80_CP_ASYNC_CACHEALWAYS,
            "SM80_CP_ASYNC_CACHEGLOBAL": SM80_CP_ASYNC_CACHEGLOBAL,
            "SM80_CP_ASYNC_CACHEALWAYS_ZFILL": SM80_CP_ASYNC_CACHEALWAYS_ZFILL,
            "SM80_CP_ASYNC_CACHEGLOBAL_ZFILL": SM80_CP_ASYNC_CACHEGLOBAL_ZFILL,
        }
        if base == "AutoVectorizingCopyWithAssumedAlignment" and len(args) == 1 and args[0].isdigit():
            return AutoVectorizingCopyWithAssumedAlignment(int(args[0]))
        if base in factories and 1 <= len(args) <= 2:
            return factories[base](*args)
    raise AtomError(f"unknown copy operation {name!r}; known: UniversalCopy<T>, "
                    "SM80_CP_ASYNC_{CACHEALWAYS,CACHEGLOBAL}[_ZFILL]<T>, AutoVectorizingCopy, "
                    f"DefaultCopy, AutoVectorizingCopyWithAssumedAlignment<B>, {', '.join(sorted(COPY_OPS))}")


@dataclass(frozen=True)
class CopyAtom:
    """``Copy_Atom<Op, ValType>``: the copy operation's bit layouts recast to ``ValType``.

    ``val_layout_x = recast_layout<uint1_t, ValType>(BitLayoutX)``, i.e. ``upcast<bits>``;
    construction checks the header's static_asserts ``size<0>(ValLayoutX) == size(ThrID)``.
    """

    op: CopyOp
    val_type: str | int
    val_layout_src: Layout = field(init=False)
    val_layout_dst: Layout = field(init=False)
    val_layout_ref: Layout = field(init=False)

    def __post_init__(self) -> None:
        bits = type_bits(self.val_type)
        nthr = size(self.op.thr_id)
        for which, bl in (("Src", self.op.src_bits), ("Dst", self.op.dst_bits), ("Ref", self.op.ref_bits)):
            try:
                vl = bl if bits == 1 else upcast(bl, bits)
            except LayoutError as e:
                raise AtomError(f"Copy_Atom<{self.op.name}, {_cxx_type(self.val_type)}>: the {which} "
                                f"bit layout {bl} cannot be recast to {bits}-bit values: {e}") from None
            if size(vl[0]) != nthr:
                raise AtomError(f"CopyOperation is not valid for {which} of ValType "
                                f"(Copy_Atom<{self.op.name}, {_cxx_type(self.val_type)}>)")
            object.__setattr__(self, f"val_layout_{which.lower()}", vl)

    @property
    def thr_id(self) -> Layout:
        return self.op.thr_id

    @property
    def val_bits(self) -> int:
        return type_bits(self.val_type)

    @property
    def num_val_src(self) -> int:
        """``NumValSrc = size<1>(ValLayoutSrc)``: values one thread moves per instruction."""
        return size(self.val_layout_src[1])

    @property
    def num_val_dst(self) -> int:
        return size(self.val_layout_dst[1])

    @property
    def cxx_type(self) -> str:
        return f"Copy_Atom<{self.op.name}, {_cxx_type(self.val_type)}>"


def _atom(x: CopyAtom | tuple[Any, Any]) -> CopyAtom:
    if isinstance(x, CopyAtom):
        return x
    op, vt = x
    return CopyAtom(get_copy_op(op) if isinstance(op, str) else op, vt)


# ------------------------------------------------------------------------------------------
# TiledCopy
# ------------------------------------------------------------------------------------------

class TiledCopy:
    """``TiledCopy<Copy_Atom, LayoutCopy_TV, ShapeTiler_MN>``.

    ``layout_tv`` (``TiledLayout_TV``): (tid, vid) -> coordinate in the tile (colex index into
    ``tiler_mn``); ``tiler_mn`` (``Tiler_MN``): the tile shape (ints) or a tuple of layouts.
    The constructor checks the header's static_asserts (``TiledNumThr % AtomNumThr == 0``,
    ``TiledNumVal % AtomNumVal == 0``) and raises :class:`AtomError`.
    """

    def __init__(self, atom: CopyAtom, layout_tv: Layout, tiler_mn: Any) -> None:
        self.atom = atom
        self.layout_tv = layout_tv
        self.tiler_mn = tiler_mn
        if rank(layout_tv) < 2:
            raise AtomError(f"TiledLayout_TV must have a thread and a value mode, got {layout_tv}")
        if self.tiled_num_thr % self.atom_num_thr != 0:
            raise AtomError(f"TiledCopy uses too few thrs for selected CopyAtom: {self.tiled_num_thr} "
                            f"threads is not a multiple of the atom's {self.atom_num_thr} ({atom.cxx_type})")
        if self.tiled_num_val % self.atom_num_val != 0:
            raise AtomError(f"TiledCopy uses too few vals for selected CopyAtom: {self.tiled_num_val} "
                            f"values per thread is not a multiple of the atom's {self.atom_num_val} "
                            f"({atom.cxx_type} moves {self.atom_num_val} x {atom.val_bits}-bit values)")

    # -- header type aliases ----------------------------------------------------------------
    @property
    def atom_num_thr(self) -> int:
        """``AtomNumThr = size<0>(AtomLayoutRef)``."""
        return size(self.atom.val_layout_ref[0])

    @property
    def atom_num_val(self) -> int:
        """``AtomNumVal = size<1>(AtomLayoutRef)``."""
        return size(self.atom.val_layout_ref[1])

    @property
    def tiled_num_thr(self) -> int:
        """``TiledNumThr = size<0>(TiledLayout_TV)``, also ``size(tiled_copy)``."""
        return size(self.layout_tv[0])

    @property
    def tiled_num_val(self) -> int:
        return size(self.layout_tv[1])

    def tile_size(self, i: int | None = None) -> int:
        """``tile_size<I...>(tiled_copy) = size<I...>(Tiler_MN)``."""
        t = self.tiler_mn
        if i is None:
            return _size(t)
        return _size(wrap(t)[i])

    def __len__(self) -> int:
        return self.tiled_num_thr

    def __repr__(self) -> str:
        return (f"TiledCopy({self.atom.cxx_type}, Tiler_MN={_tiler_str(self.tiler_mn)}, "
                f"TiledLayout_TV={self.layout_tv})")

    # -- partitioning ---------------------------------------------------------------------------
    def _ref2src(self) -> Layout:
        return composition(right_inverse(self.atom.val_layout_ref), self.atom.val_layout_src)

    def _ref2dst(self) -> Layout:
        return composition(right_inverse(self.atom.val_layout_ref), self.atom.val_layout_dst)

    def tile2thrfrg(self, tensor: Any, ref2trg: Layout) -> Any:
        """``((TileM,TileN,...),(RestM,RestN,...))`` -> ``(Thr,(FrgV,FrgX),(RestM,RestN,...))``."""
        atom_layout_tv = zipped_divide(self.layout_tv, (make_compact_layout(self.atom_num_thr),
                                                        make_compact_layout(self.atom_num_val)))
        trg_layout_tv = composition(atom_layout_tv, (ref2trg, _))
        thrval2mn = coalesce(_zip_layout(trg_layout_tv), (1, (1, 1)))
        tv_tensor = _compose(tensor, thrval2mn, _)
        return _slice(tv_tensor, ((_, _), _))

    def tidfrg_S(self, stensor: Any) -> Any:
        """Tile a source tensor (or layout) ``(M,N,...)`` to ``(Thr,(FrgV,FrgX),(RestM,RestN,...))``."""
        self._check_rank(stensor)
        return self.tile2thrfrg(_zipped_divide(stensor, self.tiler_mn), self._ref2src())

    def tidfrg_D(self, dtensor: Any) -> Any:
        """Tile a destination tensor (or layout) as :meth:`tidfrg_S` with the Dst layout."""
        self._check_rank(dtensor)
        return self.tile2thrfrg(_zipped_divide(dtensor, self.tiler_mn), self._ref2dst())

    def _check_rank(self, t: Any) -> None:
        if rank(_layout_of(t)) < len(wrap(self.tiler_mn)):
            raise AtomError("Rank of tensor to be partitioned too small.")

    def retile(self, tensor: Any) -> Any:
        """``TiledCopy::retile``: view a per-thread fragment ``(V, M, N, ...)`` (e.g. an MMA
        partition) as ``((AtomVal, RestVal), RestM, RestN, ...)`` in this copy's value order."""
        lay = _layout_of(tensor)
        r = rank(lay)
        v = size(lay[0])
        frg_layout_mn = upcast(composition(right_inverse(self.layout_tv),
                                           make_compact_layout(_shape(self.tiler_mn))),
                               self.tiled_num_thr * v)
        frg_layout_v = zipped_divide(
            logical_product(make_compact_layout(v), right_inverse(frg_layout_mn)),
            make_compact_layout(self.atom_num_val))
        tiler = (v,) + tuple(wrap(product_each(frg_layout_mn.shape)))
        t_tensor = _zipped_divide(tensor, tiler)
        v_tensor = _compose(t_tensor, frg_layout_v, _)
        rest = 0 if r == 1 else (0,) + (_,) * (r - 1)
        return _slice(v_tensor, (_, rest))

    def get_layoutS_TV(self) -> Layout:
        """(thr_idx, val_idx) -> (M,N) of the source side (``get_layoutS_TV``)."""
        ref_s = make_compact_layout((_shape(self.tiler_mn), 1))
        return self.tile2thrfrg(ref_s, self._ref2src())((_, _, 0))

    def get_layoutD_TV(self) -> Layout:
        """(thr_idx, val_idx) -> (M,N) of the destination side (``get_layoutD_TV``)."""
        ref_d = make_compact_layout((_shape(self.tiler_mn), 1))
        return self.tile2thrfrg(ref_d, self._ref2dst())((_, _, 0))

    def get_slice(self, thr_idx: Any) -> ThrCopy:
        """The copy seen by one thread (``ThrCopy``)."""
        return ThrCopy(self, thr_idx)

    get_thread_slice = get_slice


def _tiler_str(t: Any) -> str:
    if isinstance(t, tuple):
        return "(" + ",".join(_tiler_str(x) for x in t) + ")"
    return str(t)


class ThrCopy:
    """``ThrCopy<TiledCopy, ThrIdx>``: ``partition_S/D`` slice ``tidfrg_S/D`` at the thread.

    Result shape ``(CPY, CPY_M, CPY_N, ...)`` with ``CPY = (AtomVal, RestVal)``.
    """

    def __init__(self, tiled_copy: TiledCopy, thr_idx: Any) -> None:
        self.tiled_copy = tiled_copy
        self.thr_idx = thr_idx

    def _part(self, thr: Any, t: Any) -> Tensor:
        t = t if isinstance(t, Tensor) else Tensor(t, 0)
        return thr((self.thr_idx, _, _rep(rank(t.layout))))

    def partition_S(self, stensor: Any) -> Tensor:
        """This thread's source elements: ``tidfrg_S(stensor)(thr_idx, _, repeat<R>(_))``."""
        st = stensor if isinstance(stensor, Tensor) else Tensor(stensor, 0)
        return self._part(self.tiled_copy.tidfrg_S(st), st)

    def partition_D(self, dtensor: Any) -> Tensor:
        """This thread's destination elements: ``tidfrg_D(dtensor)(thr_idx, _, repeat<R>(_))``."""
        dt = dtensor if isinstance(dtensor, Tensor) else Tensor(dtensor, 0)
        return self._part(self.tiled_copy.tidfrg_D(dt), dt)

    def retile_S(self, stensor: Any) -> Any:
        return self.tiled_copy.retile(stensor)

    def retile_D(self, dtensor: Any) -> Any:
        return self.tiled_copy.retile(dtensor)


def make_tiled_copy_impl(atom: CopyAtom | tuple[Any, Any], layout_tv: Layout, tiler: Any) -> TiledCopy:
    """``TiledCopy<Atom, LayoutCopy_TV, Tiler>{atom}``."""
    return TiledCopy(_atom(atom), layout_tv, tiler)


def make_tiled_copy(copy_atom: CopyAtom | tuple[Any, Any], thr_layout: Layout,
                    val_layout: Layout | None = None) -> TiledCopy:
    """``make_tiled_copy(copy_atom, thr_layout, val_layout)`` (cute/atom/copy_atom.hpp).

    ``layout_mn = raked_product(thr_layout, val_layout)``: (M,N) -> (thr_idx, val_idx);
    ``layout_tv = right_inverse(layout_mn).with_shape((size(thr), size(val)))``: (thr, val) ->
    (M,N); ``tiler = product_each(shape(layout_mn))``.  ``val_layout`` defaults to ``Layout<_1>``.
    """
    if val_layout is None:
        val_layout = make_compact_layout(1)
    layout_mn = raked_product(thr_layout, val_layout)
    layout_tv = composition(right_inverse(layout_mn),
                            make_compact_layout((size(thr_layout), size(val_layout))))
    tiler = product_each(layout_mn.shape)
    return make_tiled_copy_impl(copy_atom, layout_tv, tiler)


def make_tiled_copy_A(copy_atom: CopyAtom | tuple[Any, Any], mma: TiledMMA) -> TiledCopy:
    """A copy that partitions like ``mma``'s A operand: ``(get_layoutA_TV, (tile_M, tile_K))``."""
    return make_tiled_copy_impl(copy_atom, mma.get_layoutA_TV(), (mma.tile_size_mnk(0), mma.tile_size_mnk(2)))


def make_tiled_copy_B(copy_atom: CopyAtom | tuple[Any, Any], mma: TiledMMA) -> TiledCopy:
    """A copy that partitions like ``mma``'s B operand: ``(get_layoutB_TV, (tile_N, tile_K))``."""
    return make_tiled_copy_impl(copy_atom, mma.get_layoutB_TV(), (mma.tile_size_mnk(1), mma.tile_size_mnk(2)))


def make_tiled_copy_C(copy_atom: CopyAtom | tuple[Any, Any], mma: TiledMMA) -> TiledCopy:
    """A copy that partitions like ``mma``'s C operand: ``(get_layoutC_TV, (tile_M, tile_N))``."""
    return make_tiled_copy_impl(copy_atom, mma.get_layoutC_TV(), (mma.tile_size_mnk(0), mma.tile_size_mnk(1)))


def make_tiled_copy_C_atom(copy_atom: CopyAtom | tuple[Any, Any], mma: TiledMMA) -> TiledCopy:
    """The smallest tiled copy that can retile ``LayoutC_TV`` (``make_tiled_copy_C_atom``):
    the C TV layout truncated to the atom's values, with a by-mode layout tiler."""
    atom = _atom(copy_atom)
    layout_c_tv = mma.get_layoutC_TV()
    copy_v = atom.num_val_src
    if copy_v > size(layout_c_tv[1]):
        raise AtomError(f"make_tiled_copy_C_atom: the atom's {copy_v} values exceed the "
                        f"{size(layout_c_tv[1])} C values per thread")
    layout_tv = composition(layout_c_tv, make_compact_layout((size(layout_c_tv[0]), copy_v)))
    mma_tiler = (mma.tile_size_mnk(0), mma.tile_size_mnk(1))
    tiler = []
    for i in range(2):
        strides = tuple(1 if j == i else 0 for j in range(2))
        tiler.append(filter(composition(Layout(mma_tiler, strides), layout_tv)))
    tiler_t = tuple(tiler)
    tile2mma = composition(make_compact_layout(mma_tiler), tiler_t)
    layout_tv2 = composition(left_inverse(tile2mma), layout_tv)
    return make_tiled_copy_impl(atom, layout_tv2, tiler_t)


def make_tiled_copy_S(copy_atom: CopyAtom | tuple[Any, Any], tiled_copy: TiledCopy) -> TiledCopy:
    """A copy with ``tiled_copy``'s source TV layout and tiler."""
    return make_tiled_copy_impl(copy_atom, tiled_copy.get_layoutS_TV(), tiled_copy.tiler_mn)


def make_tiled_copy_D(copy_atom: CopyAtom | tuple[Any, Any], tiled_copy: TiledCopy) -> TiledCopy:
    """A copy with ``tiled_copy``'s destination TV layout and tiler."""
    return make_tiled_copy_impl(copy_atom, tiled_copy.get_layoutD_TV(), tiled_copy.tiler_mn)


# ------------------------------------------------------------------------------------------
# TiledMMA
# ------------------------------------------------------------------------------------------

class TiledMMA:
    """``TiledMMA<MMA_Atom, AtomLayoutMNK, PermutationMNK>``.

    ``thr_layout_vmnk = tiled_product(AtomThrID, AtomLayoutMNK)``: (ThrV, ThrM, ThrN, ThrK) ->
    thread index; ``permutation_mnk`` holds ``_``, integers or layouts per mode.
    """

    def __init__(self, atom: MMAAtom, thr_layout_mnk: Layout, permutation_mnk: tuple[Any, Any, Any]) -> None:
        if rank(thr_layout_mnk) != 3:
            raise AtomError("TiledMMA requires rank-3 AtomLayoutMNK")
        if not isinstance(permutation_mnk, tuple) or len(permutation_mnk) != 3:
            raise AtomError("TiledMMA requires rank-3 PermutationMNK")
        self.atom = atom
        self.thr_layout_mnk = thr_layout_mnk
        self.permutation = permutation_mnk
        self.thr_layout_vmnk = tiled_product(atom.thr_id, thr_layout_mnk)
        for i in range(3):
            p = permutation_mnk[i]
            if not isinstance(p, (Underscore, int, Layout)) or isinstance(p, bool):
                raise AtomError(f"permutation mode {i} must be _, an integer or a Layout, got {p!r}")

    def __repr__(self) -> str:
        return (f"TiledMMA({self.atom.name}, ThrLayoutVMNK={self.thr_layout_vmnk}, "
                f"PermutationMNK=({','.join(_tiler_str(p) for p in self.permutation)}))")

    def __len__(self) -> int:
        return size(self.thr_layout_vmnk)

    def size(self) -> int:
        """``size(tiled_mma)``: the number of threads."""
        return size(self.thr_layout_vmnk)

    def permutation_mnk(self, i: int) -> Any:
        """``permutation_mnk<I>()``: the permutation, or ``AtomShape<I> * size<I+1>(vmnk)`` for ``_``."""
        p = self.permutation[i]
        if isinstance(p, Underscore):
            return self.atom.shape_mnk[i] * size(self.thr_layout_vmnk[i + 1])
        return p

    def tile_size_mnk(self, i: int) -> int:
        """``tile_size_mnk<I>() = size(permutation_mnk<I>())``."""
        return _size(self.permutation_mnk(i))

    @property
    def tile_shape(self) -> tuple[int, int, int]:
        return (self.tile_size_mnk(0), self.tile_size_mnk(1), self.tile_size_mnk(2))

    def _thrfrg(self, tensor: Any, a: int, b: int, atom_tv: Layout, ta: int, tb: int) -> Any:
        self._check(tensor)
        t_tile = (_as_tile_mode(self.permutation_mnk(a)), _as_tile_mode(self.permutation_mnk(b)))
        t_tensor = _logical_divide(tensor, t_tile)
        m, n = self.atom.shape_mnk[a], self.atom.shape_mnk[b]
        a_tensor = _zipped_divide(t_tensor, (make_compact_layout(m), make_compact_layout(n)))
        tv_tensor = _compose(a_tensor, atom_tv, _)
        thr_tile = (_, (make_compact_layout(size(self.thr_layout_vmnk[ta])),
                        make_compact_layout(size(self.thr_layout_vmnk[tb]))))
        return _like(tv_tensor, zipped_divide(_layout_of(tv_tensor), thr_tile))

    @staticmethod
    def _check(t: Any) -> None:
        if rank(_layout_of(t)) < 2:
            raise AtomError("a tensor partitioned by a TiledMMA needs rank >= 2")

    def thrfrg_C(self, ctensor: Any) -> Any:
        """``(M,N,...)`` -> ``((ThrV,(ThrM,ThrN)),(FrgV,(RestM,RestN,...)))``."""
        return self._thrfrg(ctensor, 0, 1, self.atom.layout_c, 1, 2)

    def thrfrg_A(self, atensor: Any) -> Any:
        """``(M,K,...)`` -> ``((ThrV,(ThrM,ThrK)),(FrgV,(RestM,RestK,...)))``."""
        return self._thrfrg(atensor, 0, 2, self.atom.layout_a, 1, 3)

    def thrfrg_B(self, btensor: Any) -> Any:
        """``(N,K,...)`` -> ``((ThrV,(ThrN,ThrK)),(FrgV,(RestN,RestK,...)))``."""
        return self._thrfrg(btensor, 1, 2, self.atom.layout_b, 2, 3)

    def _thridx_2_thrid(self) -> Layout:
        vmnk = self.thr_layout_vmnk
        return composition(Layout((size(vmnk), 1), (1, 0)),
                           right_inverse(make_layout(vmnk, complement(vmnk))))

    def get_layoutC_TV(self) -> Layout:
        """(thr_idx, val) -> (M,N) colex index in the ``tile_M x tile_N`` tile."""
        ref_c = make_compact_layout((self.tile_size_mnk(0), self.tile_size_mnk(1)))
        return composition(self.thrfrg_C(ref_c), (self._thridx_2_thrid(), _))

    def get_layoutA_TV(self) -> Layout:
        """(thr_idx, val) -> (M,K) colex index; threads differing only in N see the same A."""
        vmnk = self.thr_layout_vmnk
        ref_a = make_compact_layout((self.tile_size_mnk(0), self.tile_size_mnk(2)))
        atile = (_, (Layout((size(vmnk[1]), size(vmnk[2])), (1, 0)), _))
        return composition(composition(self.thrfrg_A(ref_a), (atile, _)), (self._thridx_2_thrid(), _))

    def get_layoutB_TV(self) -> Layout:
        """(thr_idx, val) -> (N,K) colex index; threads differing only in M see the same B."""
        vmnk = self.thr_layout_vmnk
        ref_b = make_compact_layout((self.tile_size_mnk(1), self.tile_size_mnk(2)))
        btile = (_, (Layout((size(vmnk[1]), size(vmnk[2])), (0, 1)), _))
        return composition(composition(self.thrfrg_B(ref_b), (btile, _)), (self._thridx_2_thrid(), _))

    def get_slice(self, thr_idx: Any) -> ThrMMA:
        """``ThrMMA`` at ``thr_vmnk = thr_layout_vmnk.get_flat_coord(thr_idx)``."""
        return ThrMMA(self, self.thr_layout_vmnk.get_flat_coord(thr_idx))

    get_thread_slice = get_slice


class ThrMMA:
    """``ThrMMA``: one thread's A/B/C partitions, shapes ``(MMA, MMA_M, MMA_K)`` etc."""

    def __init__(self, tiled_mma: TiledMMA, thr_vmnk: tuple[Any, ...]) -> None:
        self.tiled_mma = tiled_mma
        self.thr_vmnk = thr_vmnk

    def _part(self, thr_tensor: Any, i: int, j: int) -> Tensor:
        t = thr_tensor if isinstance(thr_tensor, Tensor) else Tensor(thr_tensor, 0)
        v = self.thr_vmnk
        r11 = rank(t.layout[1][1])
        return t(((v[0], (v[i], v[j])), (_, _rep(r11))))

    def partition_C(self, ctensor: Any) -> Tensor:
        """``thrfrg_C(ctensor)((v,(m,n)), (_, repeat(_)))``: ``(MMA, MMA_M, MMA_N, ...)``."""
        return self._part(self.tiled_mma.thrfrg_C(_tensor(ctensor)), 1, 2)

    def partition_A(self, atensor: Any) -> Tensor:
        """``(MMA, MMA_M, MMA_K, ...)``."""
        return self._part(self.tiled_mma.thrfrg_A(_tensor(atensor)), 1, 3)

    def partition_B(self, btensor: Any) -> Tensor:
        """``(MMA, MMA_N, MMA_K, ...)``."""
        return self._part(self.tiled_mma.thrfrg_B(_tensor(btensor)), 2, 3)

    def partition_fragment_C(self, ctensor: Any) -> Layout:
        """Register layout of ``make_fragment_C(partition_C(c))``: compact over its shape."""
        return make_compact_layout(self.partition_C(ctensor).shape)

    def partition_fragment_A(self, atensor: Any) -> Layout:
        """Register layout of ``make_fragment_A(partition_A(a))`` (``make_fragment_like``)."""
        return make_fragment_like(self.partition_A(atensor).layout)

    def partition_fragment_B(self, btensor: Any) -> Layout:
        """Register layout of ``make_fragment_B(partition_B(b))`` (``make_fragment_like``)."""
        return make_fragment_like(self.partition_B(btensor).layout)


def _tensor(t: Any) -> Tensor:
    return t if isinstance(t, Tensor) else Tensor(t, 0)


def _filter_zeros_t(d: Any, s: Any) -> Any:
    if isinstance(d, tuple):
        return tuple(_filter_zeros_t(a, b) for a, b in zip(d, s, strict=True))
    return 1 if (isinstance(d, int) and d == 0) else s


def make_fragment_like(layout: Layout) -> Layout:
    """``make_fragment_like(layout)`` (cute/layout.hpp): mode 0 column-major (stride-0 modes
    kept broadcast-free), the other modes ordered like ``layout``'s strides, via tiled_product."""
    r = rank(layout)
    if r > 1:
        s0, d0 = layout.shape[0], layout.stride[0]  # type: ignore[index]
        mode0 = Layout(s0, compact_major_left(_filter_zeros_t(d0, s0)))
        rest_s = tuple(layout.shape[1:])  # type: ignore[index]
        rest_d = tuple(layout.stride[1:])  # type: ignore[index]
        return tiled_product(mode0, make_ordered_layout(rest_s, rest_d))
    return make_compact_layout(layout.shape)


def make_tiled_mma(atom: MMAAtom | str, atom_layout: Layout | None = None,
                   permutation: tuple[Any, ...] | None = None) -> TiledMMA:
    """``make_tiled_mma(mma_atom, thr_layout = Layout<Shape<_1,_1,_1>>{}, permutations = Tile<_,_,_>{})``.

    ``thr_layout_mnk = append<3>(thr_layout, Layout<_1,_0>)`` and
    ``permutation_mnk = append<3>(permutations, _)``.
    """
    a = get_mma_atom(atom) if isinstance(atom, str) else atom
    if atom_layout is None:
        atom_layout = make_compact_layout((1, 1, 1))
    if rank(atom_layout) > 3:
        raise AtomError(f"the atom layout must have rank <= 3, got {atom_layout}")
    thr_mnk = append(atom_layout, Layout(1, 0), n=3)
    perm = tuple(permutation) if permutation is not None else ()
    if len(perm) > 3:
        raise AtomError("TiledMMA requires rank-3 PermutationMNK")
    perm = perm + (_,) * (3 - len(perm))
    return TiledMMA(a, thr_mnk, perm)  # type: ignore[arg-type]


def _partition_shape(mma: TiledMMA, shp: Any, which: str) -> Any:
    dummy = make_compact_layout(shp)
    tv = {"A": mma.thrfrg_A, "B": mma.thrfrg_B, "C": mma.thrfrg_C}[which](dummy)
    r = rank(dummy)
    return tv((0, (_, _rep(r)))).shape


def partition_shape_C(mma: TiledMMA, shape_mn: Any) -> Any:
    """``partition_shape_C(mma, (M,N))``: the shape of any thread's C partition."""
    return _partition_shape(mma, shape_mn, "C")


def partition_shape_A(mma: TiledMMA, shape_mk: Any) -> Any:
    """``partition_shape_A(mma, (M,K))``."""
    return _partition_shape(mma, shape_mk, "A")


def partition_shape_B(mma: TiledMMA, shape_nk: Any) -> Any:
    """``partition_shape_B(mma, (N,K))``."""
    return _partition_shape(mma, shape_nk, "B")
