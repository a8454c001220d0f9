"""Tile kinds: which size classes the class pass may decide without running ``verify`` there.

The class pass (:func:`threadmap.prove.run.class_pass`) visits the size classes in
:func:`~threadmap.prove.encode.size_classes`'s order and runs ``verify`` at each
representative, as :func:`~threadmap.prove.run.class_pass_old` does.  This module lets it
skip the representatives whose result it already knows -- no error of any property still
open -- so that only the classes with a new *kind* of tile are verified.  The results
(verdicts, witnesses, class counts, reasons) are those of running ``verify`` at every class:
a skipped class is one where ``verify`` reports no error finding of the properties still
open, so it would change nothing.

**Kinds.**  A *tiling coordinate* is a block coordinate ``b_j`` that places global tiles
(``at_k = b_j``: one extent ``E_j`` and one tile ``T_j``, :func:`~threadmap.prove.encode.class_terms`
refuses two).  Tile ``q`` along it has the *cut* ``clamp(E_j - q T_j, 0, T_j)``: ``T_j``
(interior), ``E_j mod T_j`` (the edge tile) or ``0`` (outside).  A block's *kind* is its
vector of cuts ``k = (k_j)``; ``pi_j(k)`` keeps ``k_j`` and is interior along the other
coordinates; a kind with at most one cut below its tile is *per-mode*.  The *context* of a
representative is the cut of every constant tile coordinate.  The kinds of a grid are the
product of the cuts each coordinate has.

**(a) Rows.**  Every premise of the class argument holds at every representative (its
tile-local structure is the first sample's, every access stays inside its tile; checked by
the class pass).  Then in a block of kind ``k`` a row's element is in bounds iff
``local_m < k_j(m)`` on every mode ``m`` (the tile origin is ``q T``, so the tile is cut at
``k``), and a row is performed iff it is a real thread's and its predicate holds
(``none``; ``bounds``: the first element in bounds; ``vector``: every element; joined over
both sides of the copy): each is a conjunction over ``j`` of a condition on ``k_j`` alone,
true at ``T_j``.  So, row by row, ``performed(k) = AND_j performed(pi_j(k))`` and
``in_bounds(k) = AND_j in_bounds(pi_j(k))``: the kind's rows are the per-mode kinds' rows.

**(b) Errors are per block.**  Tiles at distinct positions are disjoint, so an error
finding of ``coverage`` (with ``grid_coverage``), ``predicates``, ``dataflow`` or
``bank_conflicts`` at a representative is an error of one block, decided by its kind and
the context -- unless the grid leaves some element unreached (``G_j < ceil_div(E_j, T_j)``,
or a constant tile coordinate's tile does not start the tensor or ends before it) or, without
replication, puts two blocks on one tile (a grid axis a side's tile does not depend on, with
more than one block): such a representative is always verified.
Conversely a kind with an error shows it in every grid that has it (``verify`` enumerates
the grid of a class whole: a class is skipped only where it would, ``rows <= SMALL_ROWS``).

**(c) Per-mode kinds decide.**  An error of property ``P`` in a block of kind ``k`` implies
one in a block of kind ``pi_j(k)`` for some ``j``, given ``P``'s premises (checked on the
first sample's model, the same at every representative by (a)):

* ``coverage``, ``predicates`` (premise: every cell of a global tile is the
  element of at most one row of the side).  A performed row out of bounds at ``k`` is
  performed at every ``pi_j(k)`` and out of bounds at one; two performed rows on one
  in-bounds element are so at every ``pi_j(k)``; an in-bounds element whose one row is not
  performed is in bounds at every ``pi_j(k)`` and its row not performed at one (a vector that
  straddles the edge leaves one of these behind).
* ``dataflow`` (premises: as ``coverage``, at most one output side; every register slot and
  shared byte has at most one writing row over all stages; in every block the input tile is
  the transform of the output tile, at the transform of its origin).  Races, stale reads and
  writes after reads need performed rows only (a read's "written by another thread in this
  epoch" stays true as more writes are performed).  A performed read of a slot whose one
  writer is not performed at ``k`` is uninitialised at the ``pi_j(k)`` where the writer is not
  performed; otherwise every value is its one writer's, so a wrong value at a performed output
  write ``d`` comes from a performed input read ``c`` that is out of bounds, or whose expected
  source ``T^-1(d)`` (in the input tile, at ``d``'s local place transformed) is, along some
  ``j`` (so at ``pi_j(k)``), or with ``c != T^-1(d)`` -- a difference of local places, the same
  in every block.  An output element never delivered is a missing cell of the output side.
* ``bank_conflicts``: a phase's wavefronts are the most distinct words one bank serves among
  the active lanes; fewer active lanes never add extra wavefronts, and the error is the worst
  instruction's extra beyond the spec's allowance.

**(d) Replication.**  With ``expect: coverage: replicated`` the blocks along a grid axis a
side's tile does not depend on share its tile; block coordinates enter a side only through its
tile coordinate (the spec admits them nowhere else), so the blocks of such a group perform the
same rows.  Given (a) and the premise that every cell of a global tile is the element of at
most one row, an element's count over the grid is 0 or the group's size ``G`` (tiles at distinct
positions are disjoint), so the most common multiplicity is ``G`` and the only grid-level errors
are elements no block reaches: a missing cell of a block's kind, as in (b).  Shared sides and
registers are per block, so ``dataflow`` and ``bank_conflicts`` are unchanged.

So a representative whose per-mode kinds (those it has, and ``pi_j`` of the others) were all
seen, in the same context, in a verified representative with no error of ``P`` (and every
result of ``P``'s checks passing) has no error of ``P`` (:meth:`TileKinds.decides`).

**Per representative.**  ``vectorize`` and ``coalescing`` depend on the addresses, which vary
with the sizes beyond the kinds: at each representative every real vector access of every
global side is checked contiguous and aligned from the layout's strides (an affine layout:
``a = base + w (offset + (origin + local) . d)``), in every block (``coalescing`` errs on the
performed ones only, a subset); the parts that do not vary (shared sides, the ``vector_bits``
expectation) are known from any verified class without an error.  A ``sectors_per_request``
expectation judges the grid-wide ratio, not a block: its ``coalescing`` is never skipped.
``aliasing`` (aliased writes, found by grid coverage) is the written global tensors' own
property: :func:`~threadmap.verify.aliasing.aliasing` at the representative's sizes.

``tests/prove/test_prove_passes.py`` verifies every class the pass skips and checks that it
has no error of the properties it was skipped for, and compares the pass with the old one.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from threadmap.model import KernelModel, SideModel
from threadmap.simulate.engine import Simulator, rows_per_block
from threadmap.spec.expr import BLOCK_NAMES, Affine
from threadmap.verify.aliasing import aliasing
from threadmap.verify.run import SMALL_ROWS

#: properties decided per block kind (see the module docstring, (c))
KIND_PROPERTIES = ("coverage", "predicates", "dataflow", "bank_conflicts")
#: properties decided from each representative's addresses
ADDRESS_PROPERTIES = ("vectorize", "coalescing")

Kind = tuple[int, ...]


@dataclass(frozen=True)
class ClassTiles:
    """One representative's tiles: its context, the kinds its grid has, and the per-mode
    kinds that decide them."""

    context: tuple[Any, ...]
    kinds: frozenset[Kind]
    per_mode: frozenset[Kind]

    @staticmethod
    def of(kinds: Iterable[Kind], context: tuple[Any, ...], full: Kind) -> ClassTiles:
        ks = frozenset(kinds)
        need: set[Kind] = set()
        for k in ks:
            cut = [j for j, (c, t) in enumerate(zip(k, full, strict=True)) if c != t]
            if len(cut) <= 1:
                need.add(k)
            else:
                need.update(tuple(c if i == j else t for i, (c, t) in enumerate(zip(k, full, strict=True)))
                            for j in cut)
        return ClassTiles(context, ks, frozenset(need))

    def seen(self) -> list[Kind]:
        """The per-mode kinds this grid has (what a verified run of it shows)."""
        return [k for k in self.kinds if k in self.per_mode]


class TileKinds:
    """The kinds seen without an error, per property, and the premises (see the module
    docstring); built from the first sample's model."""

    def __init__(self, model0: KernelModel) -> None:
        self.vars: list[str] = []
        #: per tiling coordinate: (tensor, mode, tile) of a side it tiles
        self.where: dict[str, tuple[str, int, int]] = {}
        #: constant tile coordinates: (tensor, mode, const, tile)
        self.consts: list[tuple[str, int, int, int]] = []
        #: per global side, the grid axes its tile does not depend on (blocks along them share it)
        self.shared_by: list[list[int]] = []
        self.opaque = False
        for sd in model0.sides():
            if sd.memory != "global" or sd.tensor is None:
                continue
            if sd.at is not None and sd.at_affine is None:
                self.opaque = True  # a tile coordinate that is not affine: no kinds
                continue
            # no tile coordinate: the whole tensor, one tile at the origin
            forms = sd.at_affine if sd.at_affine is not None else tuple(Affine() for _ in sd.tile)
            used = {v for f in forms for v in f.coef}
            self.shared_by.append([j for j, n in enumerate(BLOCK_NAMES) if n not in used])
            for m, (form, t) in enumerate(zip(forms, sd.tile, strict=True)):
                if form.coef and (len(form.coef) != 1 or next(iter(form.coef.values())) != 1 or form.const):
                    self.opaque = True  # only at_k = b_j places tiles at q T (the class encoding's forms)
                elif form.coef:
                    v = next(iter(form.coef))
                    if v not in self.where:
                        self.vars.append(v)
                        self.where[v] = (sd.tensor.name, m, t)
                else:
                    self.consts.append((sd.tensor.name, m, form.const, t))
        self.vars.sort(key=BLOCK_NAMES.index)
        self.full: Kind = tuple(self.where[v][2] for v in self.vars)
        self.seen: dict[tuple[tuple[Any, ...], Kind], set[str]] = {}
        self.verified: set[str] = set()  # address properties some verified class showed no error of
        self.premise: dict[str, str | None] = _premises(model0)

    # -- one representative -----------------------------------------------------------------
    def tiles(self, model: KernelModel) -> ClassTiles | None:
        """The representative's kinds and context; None when its grid leaves an element
        unreached, puts two blocks on one tile, or would not be enumerated whole by ``verify``
        (then it is verified)."""
        if self.opaque or model.num_blocks * rows_per_block(model) > SMALL_ROWS:
            return None
        if not model.expect.replication and any(model.grid[j] > 1 for js in self.shared_by for j in js):
            return None  # blocks that share a tile: a duplicate there is a pair of blocks
        cuts: list[list[int]] = []
        for v in self.vars:
            name, m, t = self.where[v]
            e = model.tensors[name].shape[m]
            g = model.grid[BLOCK_NAMES.index(v)]
            need = -(-e // t)
            if g < need:
                return None
            cs = ([t] if e >= t else []) + ([e % t] if e % t else []) + ([0] if g > need else [])
            cuts.append(cs)
        context: list[Any] = []
        for name, m, a, t in self.consts:
            e = model.tensors[name].shape[m]
            if e > (a + 1) * t or (a > 0 and e > 0):
                return None  # elements past the tile, or before it: no tile reaches them
            context.append(min(max(e - a * t, 0), t))
        return ClassTiles.of(itertools.product(*cuts), tuple(context), self.full)

    def decides(self, model: KernelModel, tiles: ClassTiles | None, props: Iterable[str]) -> bool:
        """Whether ``verify`` at ``model`` (a representative) shows no error of ``props`` (the
        properties still open), from what earlier representatives showed."""
        if tiles is None:
            return False
        for p in props:
            if p in KIND_PROPERTIES:
                if self.premise.get(p) is not None:
                    return False
                if any(p not in self.seen.get((tiles.context, k), ()) for k in tiles.per_mode):
                    return False
            elif p in ADDRESS_PROPERTIES:
                if self.premise.get(p) is not None or p not in self.verified or not _addresses_legal(model):
                    return False
            elif p == "aliasing":
                if any(aliasing(sd.tensor).count for sd in model.sides()
                       if sd.which == "dst" and sd.memory == "global" and sd.tensor is not None):
                    return False
            else:
                return False
        return True

    def learn(self, tiles: ClassTiles | None, clean: Iterable[str]) -> None:
        """A verified representative showed no error of ``clean``: its per-mode kinds have none."""
        clean = set(clean)
        self.verified |= clean & set(ADDRESS_PROPERTIES)
        if tiles is None:
            return
        kind_clean = clean & set(KIND_PROPERTIES)
        if kind_clean:
            for k in tiles.seen():
                self.seen.setdefault((tiles.context, k), set()).update(kind_clean)


# ----------------------------------------------------------------------------- premises


def _premises(model: KernelModel) -> dict[str, str | None]:
    """Per property, why its kinds do not decide it (None: they do; module docstring, (c))."""
    out: dict[str, str | None] = dict.fromkeys((*KIND_PROPERTIES, *ADDRESS_PROPERTIES))
    # replicated reads (blocks sharing a tile) need no premise of their own: see (d)
    cells = _single_rows(model)
    placed = next((f"stage {sd.stage} {sd.which}: a shared tile placed by block coordinates"
                   for sd in model.sides() if sd.memory == "shared" and sd.at_affine is not None
                   and any(f.coef for f in sd.at_affine)), None)
    if placed is None and any(sd.memory == "shared" and sd.at is not None and sd.at_affine is None
                              for sd in model.sides()):
        placed = "a shared tile coordinate is not affine"
    out["coverage"] = out["predicates"] = cells or placed
    out["dataflow"] = cells or placed or _single_writers(model) or _aligned_transform(model)
    out["bank_conflicts"] = out["vectorize"] = placed
    for sd in model.sides():
        if sd.memory == "global" and sd.tensor is not None and sd.tensor.strides is None:
            out["vectorize"] = out["coalescing"] = f"stage {sd.stage} {sd.which}: a layout that is not affine"
        ratio = model.expect.sector_ratio_load if sd.which == "src" else model.expect.sector_ratio_store
        if sd.memory == "global" and ratio is not None:
            out["coalescing"] = "the sectors-per-request expectation is a grid-wide ratio"
    return out


def _single_rows(model: KernelModel) -> str | None:
    """Every cell of a global tile is the element of at most one row of its side."""
    for sd in model.sides():
        if sd.memory != "global":
            continue
        c = sd.partition.coord.reshape(-1, sd.partition.rank)
        if c.shape[0] and np.unique(c, axis=0).shape[0] != c.shape[0]:
            return f"stage {sd.stage} {sd.which}: two rows access one element of the tile"
    return None


def _single_writers(model: KernelModel) -> str | None:
    """Every register slot and shared byte has at most one writing row over all stages, and
    the output is written by one side."""
    if sum(1 for sd in model.sides() if sd.which == "dst" and sd.memory == "global"
           and sd.name == model.output) > 1:
        return "several stages write the output"
    frags: set[str] = set()
    written: dict[str, list[tuple[np.ndarray, int]]] = {}  # buffer -> (bit addresses, bits)
    sim = Simulator(model)
    for cp in model.copies():
        dst = cp.dst
        if dst.memory == "register":
            if dst.name in frags:
                return f"register fragment {dst.name!r} is written by two stages"
            frags.add(dst.name)
        elif dst.memory == "shared":
            t = sim.stage_tables(cp, np.zeros(1, dtype=np.int64))[1]
            a = t.bit_addr if t.valid is None else t.bit_addr[t.valid]
            written.setdefault(t.buffer, []).append((a, t.elem_bits))
    for buf, parts in written.items():
        # the bytes each row writes, or its bits when the buffer holds sub-byte elements
        unit = 8 if all(bits % 8 == 0 for _, bits in parts) else 1
        b = np.concatenate([(a[:, None] // unit + np.arange(bits // unit)[None, :]).reshape(-1) for a, bits in parts])
        if np.unique(b).size != b.size:
            return f"shared buffer {buf!r}: a byte has two writing rows"
    return None


def _aligned_transform(model: KernelModel) -> str | None:
    """The input tile is the transform of the output tile, at the transform of its origin, in
    every block (as affine functions of the block coordinates): an output element's expected
    source lies in the input tile at the same local place."""
    if not model.expect.transform:
        return None
    ins = [sd for sd in model.sides() if sd.which == "src" and sd.memory == "global" and sd.name == model.input]
    outs = [sd for sd in model.sides() if sd.which == "dst" and sd.memory == "global" and sd.name == model.output]
    for a in ins:
        for b in outs:
            fa, fb = _origin_forms(a), _origin_forms(b)
            ta, tb = list(a.tile), list(b.tile)
            if fa is None or fb is None or len(fa) != len(fb):
                return "a tile coordinate of the input or output is not affine"
            if model.expect.transform == "transpose":
                fb, tb = fb[::-1], tb[::-1]
            if fa != fb or ta != tb:
                return "the input tile is not the transform of the output tile in every block"
    return None


def _origin_forms(sd: SideModel) -> list[tuple[tuple[tuple[str, int], ...], int]] | None:
    """Per mode, the tile origin as an affine form of the block coordinates: its coefficients
    (``tile * coef``) and constant (``tile * const``)."""
    if sd.at is None:
        return [((), 0) for _ in sd.tile]
    if sd.at_affine is None:
        return None
    return [(tuple(sorted((v, c * t) for v, c in f.coef.items() if c)), f.const * t)
            for f, t in zip(sd.at_affine, sd.tile, strict=True)]


# ----------------------------------------------------------------------------- addresses


def _addresses_legal(model: KernelModel) -> bool:
    """Every vector access of a real thread on a global side, in every block, is contiguous
    (``a_e = a_0 + e w``) and aligned (``a_0 % (vec w) == 0``), from the layout's strides."""
    blocks = np.arange(model.num_blocks, dtype=np.int64)
    for cp in model.copies():
        for sd in cp.sides():
            if sd.memory != "global" or sd.tensor is None:
                continue
            if not _side_legal(model, sd, blocks):
                return False
    return True


def _side_legal(model: KernelModel, sd: SideModel, blocks: np.ndarray) -> bool:
    t = sd.tensor
    assert t is not None
    d = t.strides
    if d is None or len(d) != sd.partition.rank:
        return False
    vec, w = sd.vec, t.elem_bits  # in bits: sub-byte vectors too
    part = sd.partition
    c = part.coord.reshape(part.threads, part.values // vec, vec, part.rank)
    off = c @ np.asarray(d, dtype=np.int64)  # (T, S, vec) element offsets inside the tile
    if vec > 1 and not bool((off - off[..., :1] == np.arange(vec, dtype=np.int64)).all()):
        return False
    org = model.origins(sd, blocks) @ np.asarray(d, dtype=np.int64)  # (nb,)
    first = (8 * t.base + w * (t.offset + org[:, None] + off[..., 0].reshape(-1)[None, :])) % (vec * w)
    return not bool(first.any())

