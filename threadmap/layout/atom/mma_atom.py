"""Tiled MMAs (``cute/atom/mma_atom.hpp``): ``TiledMMA``, ``ThrMMA``, ``make_tiled_mma`` and
``partition_shape_{A,B,C}``.

``make_tiled_mma(atom, thr_mnk, perm)``: ``thr_layout_vmnk = tiled_product(ThrID,
append<3>(thr_mnk, 1:0))``; ``thrfrg_C`` = logical_divide by the permutation, zipped_divide by
the atom shape, compose with ``LayoutC_TV``, zipped_divide by the thread tile.  The MMA atoms
themselves (``MMA_Traits``) are in :mod:`threadmap.layout.atom.mma_traits`.
"""

from __future__ import annotations

from typing import Any

from threadmap.errors import AtomError
from threadmap.layout.atom.mma_traits import MMAAtom, get_mma_atom
from threadmap.layout.atom.tile_ops import (
    as_tile_mode,
    compose_like,
    layout_of,
    logical_divide_like,
    make_compact_layout,
    rewrap,
    size_of,
    tiler_str,
    zipped_divide_like,
)
from threadmap.layout.layout import (
    Layout,
    append,
    complement,
    composition,
    make_fragment_like,
    make_layout,
    rank,
    right_inverse,
    size,
    tiled_product,
    zipped_divide,
)
from threadmap.layout.tensor import Tensor
from threadmap.layout.underscore import Underscore, _, repeat_underscore

__all__ = ["TiledMMA", "ThrMMA", "make_tiled_mma", "partition_shape_A", "partition_shape_B",
           "partition_shape_C"]

# ------------------------------------------------------------------------------------------
# TiledMMA
# ------------------------------------------------------------------------------------------

class TiledMMA:
    """``TiledMMA<MMA_Atom, AtomLayoutMNK, PermutationMNK>``.

    ``thr_layout_vmnk = tiled_product(AtomThrID, AtomLayoutMNK)``: (ThrV, ThrM, ThrN, ThrK) ->
    thread index; ``permutation_mnk`` holds ``_``, integers or layouts per mode.
    """

    def __init__(self, atom: MMAAtom, thr_layout_mnk: Layout, permutation_mnk: tuple[Any, Any, Any]) -> None:
        if not isinstance(atom, MMAAtom):
            raise AtomError(f"TiledMMA needs an MMA atom, got {atom!r}")
        if not isinstance(thr_layout_mnk, Layout):
            raise AtomError(f"TiledMMA needs a thread layout, got {thr_layout_mnk!r}")
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
                f"PermutationMNK=({','.join(tiler_str(p) for p in self.permutation)}))")

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
        return size_of(self.permutation_mnk(i))

    @property
    def tile_shape(self) -> tuple[int, int, int]:
        return (self.tile_size_mnk(0), self.tile_size_mnk(1), self.tile_size_mnk(2))

    def _thrfrg(self, tensor: Any, a: int, b: int, atom_tv: Layout, ta: int, tb: int) -> Any:
        self._check(tensor)
        t_tile = (as_tile_mode(self.permutation_mnk(a)), as_tile_mode(self.permutation_mnk(b)))
        t_tensor = logical_divide_like(tensor, t_tile)
        m, n = self.atom.shape_mnk[a], self.atom.shape_mnk[b]
        a_tensor = zipped_divide_like(t_tensor, (make_compact_layout(m), make_compact_layout(n)))
        tv_tensor = compose_like(a_tensor, atom_tv, _)
        thr_tile = (_, (make_compact_layout(size(self.thr_layout_vmnk[ta])),
                        make_compact_layout(size(self.thr_layout_vmnk[tb]))))
        return rewrap(tv_tensor, zipped_divide(layout_of(tv_tensor), thr_tile))

    @staticmethod
    def _check(t: Any) -> None:
        if rank(layout_of(t)) < 2:
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
        return t(((v[0], (v[i], v[j])), (_, repeat_underscore(r11))))

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


def make_tiled_mma(atom: MMAAtom | str, atom_layout: Layout | None = None,
                   permutation: tuple[Any, ...] | None = None) -> TiledMMA:
    """``make_tiled_mma(mma_atom, thr_layout = Layout<Shape<_1,_1,_1>>{}, permutations = Tile<_,_,_>{})``.

    ``thr_layout_mnk = append<3>(thr_layout, Layout<_1,_0>)`` and
    ``permutation_mnk = append<3>(permutations, _)``.
    """
    a = get_mma_atom(atom) if isinstance(atom, str) else atom
    if not isinstance(a, MMAAtom):
        raise AtomError(f"make_tiled_mma needs an MMA atom or its name, got {atom!r}")
    if atom_layout is None:
        atom_layout = make_compact_layout((1, 1, 1))
    if not isinstance(atom_layout, Layout):
        raise AtomError(f"make_tiled_mma: the atom layout must be a Layout, got {atom_layout!r}")
    if permutation is not None and not isinstance(permutation, (tuple, list)):
        raise AtomError(f"make_tiled_mma: the permutation must be a tuple, got {permutation!r}")
    if rank(atom_layout) > 3:
        raise AtomError(f"the atom layout must have rank <= 3, got {atom_layout}")
    thr_mnk = append(atom_layout, Layout(1, 0), n=3)
    perm = tuple(permutation) if permutation is not None else ()
    if len(perm) > 3:
        raise AtomError("TiledMMA requires rank-3 PermutationMNK")
    perm = perm + (_,) * (3 - len(perm))
    return TiledMMA(a, thr_mnk, perm)  # type: ignore[arg-type]


def _partition_shape(mma: TiledMMA, shp: Any, which: str) -> Any:
    if not isinstance(mma, TiledMMA):
        raise AtomError(f"partition_shape_{which} needs a TiledMMA, got {mma!r}")
    dummy = make_compact_layout(shp)
    tv = {"A": mma.thrfrg_A, "B": mma.thrfrg_B, "C": mma.thrfrg_C}[which](dummy)
    r = rank(dummy)
    return tv((0, (_, repeat_underscore(r)))).shape


def partition_shape_C(mma: TiledMMA, shape_mn: Any) -> Any:
    """``partition_shape_C(mma, (M,N))``: the shape of any thread's C partition."""
    return _partition_shape(mma, shape_mn, "C")


def partition_shape_A(mma: TiledMMA, shape_mk: Any) -> Any:
    """``partition_shape_A(mma, (M,K))``."""
    return _partition_shape(mma, shape_mk, "A")


def partition_shape_B(mma: TiledMMA, shape_nk: Any) -> Any:
    """``partition_shape_B(mma, (N,K))``."""
    return _partition_shape(mma, shape_nk, "B")

