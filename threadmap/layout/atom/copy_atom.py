"""Copy atoms and tiled copies (``cute/atom/copy_atom.hpp``): ``Copy_Atom``, ``TiledCopy``,
``ThrCopy`` and the ``make_tiled_copy*`` family.

Every function follows the C++ header step by step (same intermediate layouts, same
``compose``/``zipped_divide``/``coalesce`` calls), so that the results agree with CuTe
*structurally*: ``str(tiled_copy.layout_tv)`` is what ``print(TiledLayout_TV{})`` writes, up to
the ``_`` of static integers.

* Copy atom: ``ValLayoutX = recast_layout<uint1_t, ValType>(BitLayoutX)``
  ``= upcast<sizeof_bits<ValType>>(BitLayoutX)``: (thread, value) -> value.
* ``make_tiled_copy(atom, thr, val)``: ``layout_mn = raked_product(thr, val)``,
  ``layout_tv = right_inverse(layout_mn).with_shape((size(thr), size(val)))``,
  ``tiler_mn = product_each(shape(layout_mn))``.
* ``tile2thrfrg(T, ref2trg)``: ``zipped_divide(layout_tv, (AtomNumThr, AtomNumVal))``,
  ``.compose(ref2trg, _)``, ``coalesce(zip(.), (1,(1,1)))`` = ((thr),(atom_val,rest_val)) -> (m,n),
  and ``T.compose(that, _)(make_coord(_,_), _)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from threadmap.errors import AtomError, LayoutError
from threadmap.layout.atom.copy_traits import CopyOp, cxx_type_name, get_copy_op, type_bits
from threadmap.layout.atom.tile_ops import (
    compose_like,
    layout_of,
    make_compact_layout,
    shape_of,
    size_of,
    slice_like,
    tiler_str,
    zip_layout,
    zipped_divide_like,
)
from threadmap.layout.int_tuple import product_each, wrap
from threadmap.layout.layout import (
    Layout,
    coalesce,
    composition,
    filter,
    left_inverse,
    logical_product,
    raked_product,
    rank,
    right_inverse,
    size,
    upcast,
    zipped_divide,
)
from threadmap.layout.tensor import Tensor
from threadmap.layout.underscore import _, repeat_underscore

if TYPE_CHECKING:
    from threadmap.layout.atom.mma_atom import TiledMMA

__all__ = [
    "CopyAtom", "TiledCopy", "ThrCopy", "make_tiled_copy", "make_tiled_copy_impl",
    "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C", "make_tiled_copy_C_atom",
    "make_tiled_copy_S", "make_tiled_copy_D",
]

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
        if not isinstance(self.op, CopyOp):
            raise AtomError(f"Copy_Atom needs a copy operation, got {self.op!r}")
        bits = type_bits(self.val_type)
        nthr = size(self.op.thr_id)
        for which, bl in (("Src", self.op.src_bits), ("Dst", self.op.dst_bits), ("Ref", self.op.ref_bits)):
            try:
                vl = bl if bits == 1 else upcast(bl, bits)
            except LayoutError as e:
                raise AtomError(f"Copy_Atom<{self.op.name}, {cxx_type_name(self.val_type)}>: the {which} "
                                f"bit layout {bl} cannot be recast to {bits}-bit values: {e}") from None
            if size(vl[0]) != nthr:
                raise AtomError(f"CopyOperation is not valid for {which} of ValType "
                                f"(Copy_Atom<{self.op.name}, {cxx_type_name(self.val_type)}>)")
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
        return f"Copy_Atom<{self.op.name}, {cxx_type_name(self.val_type)}>"


def _atom(x: CopyAtom | tuple[Any, Any]) -> CopyAtom:
    if isinstance(x, CopyAtom):
        return x
    if not isinstance(x, tuple) or len(x) != 2:
        raise AtomError(f"a copy atom is a CopyAtom or a pair (copy op, value type), got {x!r}")
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
        if not isinstance(atom, CopyAtom):
            raise AtomError(f"TiledCopy needs a CopyAtom, got {atom!r}")
        if not isinstance(layout_tv, Layout):
            raise AtomError(f"TiledCopy needs a TV layout, got {layout_tv!r}")
        _check_tiler(tiler_mn)
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
            return size_of(t)
        return size_of(wrap(t)[i])

    def __len__(self) -> int:
        return self.tiled_num_thr

    def __repr__(self) -> str:
        return (f"TiledCopy({self.atom.cxx_type}, Tiler_MN={tiler_str(self.tiler_mn)}, "
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
        thrval2mn = coalesce(zip_layout(trg_layout_tv), (1, (1, 1)))
        tv_tensor = compose_like(tensor, thrval2mn, _)
        return slice_like(tv_tensor, ((_, _), _))

    def tidfrg_S(self, stensor: Any) -> Any:
        """Tile a source tensor (or layout) ``(M,N,...)`` to ``(Thr,(FrgV,FrgX),(RestM,RestN,...))``."""
        self._check_rank(stensor)
        return self.tile2thrfrg(zipped_divide_like(stensor, self.tiler_mn), self._ref2src())

    def tidfrg_D(self, dtensor: Any) -> Any:
        """Tile a destination tensor (or layout) as :meth:`tidfrg_S` with the Dst layout."""
        self._check_rank(dtensor)
        return self.tile2thrfrg(zipped_divide_like(dtensor, self.tiler_mn), self._ref2dst())

    def _check_rank(self, t: Any) -> None:
        if rank(layout_of(t)) < len(wrap(self.tiler_mn)):
            raise AtomError("Rank of tensor to be partitioned too small.")

    def retile(self, tensor: Any) -> Any:
        """``TiledCopy::retile``: view a per-thread fragment ``(V, M, N, ...)`` (e.g. an MMA
        partition) as ``((AtomVal, RestVal), RestM, RestN, ...)`` in this copy's value order."""
        lay = layout_of(tensor)
        r = rank(lay)
        v = size(lay[0])
        frg_layout_mn = upcast(composition(right_inverse(self.layout_tv),
                                           make_compact_layout(shape_of(self.tiler_mn))),
                               self.tiled_num_thr * v)
        frg_layout_v = zipped_divide(
            logical_product(make_compact_layout(v), right_inverse(frg_layout_mn)),
            make_compact_layout(self.atom_num_val))
        tiler = (v,) + tuple(wrap(product_each(frg_layout_mn.shape)))
        t_tensor = zipped_divide_like(tensor, tiler)
        v_tensor = compose_like(t_tensor, frg_layout_v, _)
        rest = 0 if r == 1 else (0,) + (_,) * (r - 1)
        return slice_like(v_tensor, (_, rest))

    def get_layoutS_TV(self) -> Layout:
        """(thr_idx, val_idx) -> (M,N) of the source side (``get_layoutS_TV``)."""
        ref_s = make_compact_layout((shape_of(self.tiler_mn), 1))
        return self.tile2thrfrg(ref_s, self._ref2src())((_, _, 0))

    def get_layoutD_TV(self) -> Layout:
        """(thr_idx, val_idx) -> (M,N) of the destination side (``get_layoutD_TV``)."""
        ref_d = make_compact_layout((shape_of(self.tiler_mn), 1))
        return self.tile2thrfrg(ref_d, self._ref2dst())((_, _, 0))

    def get_slice(self, thr_idx: Any) -> ThrCopy:
        """The copy seen by one thread (``ThrCopy``)."""
        return ThrCopy(self, thr_idx)

    get_thread_slice = get_slice


class ThrCopy:
    """``ThrCopy<TiledCopy, ThrIdx>``: ``partition_S/D`` slice ``tidfrg_S/D`` at the thread.

    Result shape ``(CPY, CPY_M, CPY_N, ...)`` with ``CPY = (AtomVal, RestVal)``.
    """

    def __init__(self, tiled_copy: TiledCopy, thr_idx: Any) -> None:
        self.tiled_copy = tiled_copy
        self.thr_idx = thr_idx

    def _part(self, thr: Any, t: Any) -> Tensor:
        t = t if isinstance(t, Tensor) else Tensor(t, 0)
        return thr((self.thr_idx, _, repeat_underscore(rank(t.layout))))

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


def _check_tiler(t: Any) -> None:
    """A ``Tiler_MN``: integers or layouts (or tuples of them)."""
    leaves = t if isinstance(t, tuple) else (t,)
    for x in leaves:
        if isinstance(x, tuple):
            _check_tiler(x)
        elif isinstance(x, bool) or not isinstance(x, (int, Layout)) or (isinstance(x, int) and x <= 0):
            raise AtomError(f"a tiler holds positive integers or layouts, got {x!r}")


def _check_mma(mma: Any) -> TiledMMA:
    from threadmap.layout.atom.mma_atom import TiledMMA
    if not isinstance(mma, TiledMMA):
        raise AtomError(f"expected a TiledMMA, got {mma!r}")
    return mma


def _check_copy(tc: Any) -> TiledCopy:
    if not isinstance(tc, TiledCopy):
        raise AtomError(f"expected a TiledCopy, got {tc!r}")
    return tc


def make_tiled_copy(copy_atom: CopyAtom | tuple[Any, Any], thr_layout: Layout,
                    val_layout: Layout | None = None) -> TiledCopy:
    """``make_tiled_copy(copy_atom, thr_layout, val_layout)`` (cute/atom/copy_atom.hpp).

    ``layout_mn = raked_product(thr_layout, val_layout)``: (M,N) -> (thr_idx, val_idx);
    ``layout_tv = right_inverse(layout_mn).with_shape((size(thr), size(val)))``: (thr, val) ->
    (M,N); ``tiler = product_each(shape(layout_mn))``.  ``val_layout`` defaults to ``Layout<_1>``.
    """
    if val_layout is None:
        val_layout = make_compact_layout(1)
    for what, lay in (("thread", thr_layout), ("value", val_layout)):
        if not isinstance(lay, Layout):
            raise AtomError(f"make_tiled_copy: the {what} layout must be a Layout, got {lay!r}")
    layout_mn = raked_product(thr_layout, val_layout)
    layout_tv = composition(right_inverse(layout_mn),
                            make_compact_layout((size(thr_layout), size(val_layout))))
    tiler = product_each(layout_mn.shape)
    return make_tiled_copy_impl(copy_atom, layout_tv, tiler)


def make_tiled_copy_A(copy_atom: CopyAtom | tuple[Any, Any], mma: TiledMMA) -> TiledCopy:
    """A copy that partitions like ``mma``'s A operand: ``(get_layoutA_TV, (tile_M, tile_K))``."""
    mma = _check_mma(mma)
    return make_tiled_copy_impl(copy_atom, mma.get_layoutA_TV(), (mma.tile_size_mnk(0), mma.tile_size_mnk(2)))


def make_tiled_copy_B(copy_atom: CopyAtom | tuple[Any, Any], mma: TiledMMA) -> TiledCopy:
    """A copy that partitions like ``mma``'s B operand: ``(get_layoutB_TV, (tile_N, tile_K))``."""
    mma = _check_mma(mma)
    return make_tiled_copy_impl(copy_atom, mma.get_layoutB_TV(), (mma.tile_size_mnk(1), mma.tile_size_mnk(2)))


def make_tiled_copy_C(copy_atom: CopyAtom | tuple[Any, Any], mma: TiledMMA) -> TiledCopy:
    """A copy that partitions like ``mma``'s C operand: ``(get_layoutC_TV, (tile_M, tile_N))``."""
    mma = _check_mma(mma)
    return make_tiled_copy_impl(copy_atom, mma.get_layoutC_TV(), (mma.tile_size_mnk(0), mma.tile_size_mnk(1)))


def make_tiled_copy_C_atom(copy_atom: CopyAtom | tuple[Any, Any], mma: TiledMMA) -> TiledCopy:
    """The smallest tiled copy that can retile ``LayoutC_TV`` (``make_tiled_copy_C_atom``):
    the C TV layout truncated to the atom's values, with a by-mode layout tiler."""
    mma = _check_mma(mma)
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
    tiled_copy = _check_copy(tiled_copy)
    return make_tiled_copy_impl(copy_atom, tiled_copy.get_layoutS_TV(), tiled_copy.tiler_mn)


def make_tiled_copy_D(copy_atom: CopyAtom | tuple[Any, Any], tiled_copy: TiledCopy) -> TiledCopy:
    """A copy with ``tiled_copy``'s destination TV layout and tiler."""
    tiled_copy = _check_copy(tiled_copy)
    return make_tiled_copy_impl(copy_atom, tiled_copy.get_layoutD_TV(), tiled_copy.tiler_mn)


