"""CUTLASS 2.x pitch-linear thread maps, transcribed from ``cutlass/transform/pitch_linear_thread_map.h``.

Every thread map of the header (CUTLASS 4.2, the ``nvidia-cutlass`` wheel) has a class here
with the same name:

=============================================  ===============================================
C++ template                                   Python constructor
=============================================  ===============================================
``PitchLinearStripminedThreadMap``             ``(shape, threads, elements_per_access=1)``
``PitchLinearTilePolicyStripminedThread``      ``(shape, threads, elements_per_access=1)``
``Contiguous`` / ``...Strided``
``PitchLinearWarpRakedThreadMap``              ``(shape, threads, warp_thread_arrangement,
                                               elements_per_access=1)``
``PitchLinearStridedWarpRakedThreadMap``       same as warp-raked
``PitchLinearWarpStripedThreadMap``            same as warp-raked
``PitchLinear2DThreadTileStripminedThreadMap`` ``(shape, threads, thread_tile_shape=(4, 4))``
``TransposePitchLinearThreadMap``              ``(thread_map, warp_thread_arrangement)``
``TransposePitchLinearThreadMapSimt``          ``(thread_map)``
``TransposePitchLinearThreadMap2DThreadTile``  ``(thread_map)``
=============================================  ===============================================

Conventions:

* Shapes and coordinates are ``(contiguous, strided)``; :class:`PitchLinearShape` is a
  ``NamedTuple`` so it compares equal to a plain tuple.
* ``iterations``, ``delta`` and every other public ``static`` constant / nested shape of the
  header is an attribute with a snake_case name (``Detail::kWarpsStrided`` ->
  ``warps_strided``, ``Detail::ShapeVec`` -> ``shape_vec``, ...).
* ``initial_offset(thread_id)`` is the header's ``initial_offset`` written with only
  ``+ - * // %``, so ``thread_id`` may be a Python ``int``, a numpy integer array (elementwise)
  or a :class:`threadmap.layout.backend.Sym` (z3, unsigned semantics).  All quantities are
  non-negative, so floor division equals C++'s truncating ``int`` division.
* ``coordinates()`` enumerates every element each thread touches, in the order CUTLASS's
  iterators visit them:

  - vector maps (``ThreadAccessShape = <kElementsPerAccess, 1>``): an int64 array of shape
    ``(threads, iterations.strided, iterations.contiguous, elements_per_access, 2)``;
    ``[t, s, c, v] = initial_offset(t) + (c * delta.contiguous + v, s * delta.strided)``
    (``PredicatedTileAccessIterator``: ``iteration_coord(c * Delta::kContiguous +
    v * kElements, s * Delta::kStrided)``).
  - maps whose ``ThreadAccessShape`` is two-dimensional (``has_access_shape_axis``: the
    2D-thread-tile map and its transpose): one more axis, shape ``(threads,
    iterations.strided, iterations.contiguous, thread_access_shape.strided,
    thread_access_shape.contiguous, 2)``; ``[t, s, c, ts, v] = initial_offset(t) +
    (c * delta.contiguous + v, s * delta.strided + ts)``
    (``PredicatedTileAccessIterator2dThreadTile``: ``iteration_coord(c * Delta::kContiguous,
    ts + s * Delta::kStrided)``, loops ``s``, ``c``, ``ts`` outermost to innermost).

Validation: a constructor raises :class:`~threadmap.errors.ThreadmapError` for non-positive
parameters and for exactly the configurations the C++ compiler rejects: the header's
``static_assert``s (each check cites its header line) and the few constant expressions that
divide by zero or name a member that does not exist (noted where they occur).  Configurations
the header accepts but that do not tile the shape exactly (e.g. a ceiling-divided strided
iteration count) are accepted and simulated exactly as CUTLASS computes them, including
accesses outside the tile.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, NamedTuple, TypeAlias

import numpy as np

from threadmap.errors import ThreadmapError

__all__ = [
    "THREAD_MAPS",
    "PitchLinear2DThreadTileStripminedThreadMap",
    "PitchLinearShape",
    "PitchLinearStridedWarpRakedThreadMap",
    "PitchLinearStripminedThreadMap",
    "PitchLinearThreadMap",
    "PitchLinearTilePolicyStripminedThreadContiguous",
    "PitchLinearTilePolicyStripminedThreadStrided",
    "PitchLinearWarpRakedThreadMap",
    "PitchLinearWarpStripedThreadMap",
    "TransposePitchLinearThreadMap",
    "TransposePitchLinearThreadMap2DThreadTile",
    "TransposePitchLinearThreadMapSimt",
    "Untouched",
]

HEADER = "cutlass/transform/pitch_linear_thread_map.h"
#: accessed elements (all threads) a thread map may list: the coordinates are materialised
MAX_COORDINATES = 1 << 26

#: int | np.ndarray | Sym: the value type of the one evaluation core (all support + - * // %)
V: TypeAlias = Any


class PitchLinearShape(NamedTuple):
    """``layout::PitchLinearShape<Contiguous, Strided>`` (also used for coordinates)."""

    contiguous: int
    strided: int

    @property
    def count(self) -> int:  # type: ignore[override]  # CUTLASS's kCount, not tuple.count
        """``kCount = kContiguous * kStrided``."""
        return self.contiguous * self.strided

    def cxx(self) -> str:
        return f"cutlass::layout::PitchLinearShape<{self.contiguous}, {self.strided}>"


def _ranges(values: tuple[int, ...]) -> str:
    """``(0, 1, 2, 5)`` -> ``"0-2, 5"``."""
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ", ".join(parts)


class Untouched(NamedTuple):
    """What :meth:`PitchLinearThreadMap.untouched` finds: the tile elements no access reaches."""

    shape: PitchLinearShape
    #: every untouched element as ``(contiguous, strided)``, strided-major order
    elements: tuple[tuple[int, int], ...]
    #: strided indices none of whose elements is touched
    rows: tuple[int, ...]
    #: contiguous indices none of whose elements is touched
    columns: tuple[int, ...]

    def __bool__(self) -> bool:
        return bool(self.elements)

    def message(self) -> str:
        """One line for a warning, or ``""`` when the map touches its whole tile."""
        if not self.elements:
            return ""
        where: list[str] = []
        if self.rows:
            where.append(f"rows (strided) {_ranges(self.rows)}")
        if self.columns:
            where.append(f"columns (contiguous) {_ranges(self.columns)}")
        n_lines = len(self.rows) * self.shape.contiguous + len(self.columns) * self.shape.strided \
            - len(self.rows) * len(self.columns)
        rest = len(self.elements) - n_lines
        if rest:
            where.append(f"{rest} other element{'s' if rest != 1 else ''}")
        return (f"{len(self.elements)} of {self.shape.count} elements of the "
                f"{self.shape.contiguous}x{self.shape.strided} tile are never touched: " + "; ".join(where))


# --------------------------------------------------------------------------------------------
# parameter checking helpers
# --------------------------------------------------------------------------------------------


def _positive_int(owner: str, name: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ThreadmapError(f"{owner}: {name} must be an integer, got {value!r}")
    v = int(value)
    if v <= 0:
        raise ThreadmapError(f"{owner}: {name} must be positive, got {v}")
    return v


def _shape(owner: str, name: str, value: Any) -> PitchLinearShape:
    try:
        c, s = value
    except (TypeError, ValueError):
        raise ThreadmapError(
            f"{owner}: {name} must be a (contiguous, strided) pair, got {value!r}"
        ) from None
    return PitchLinearShape(
        _positive_int(owner, f"{name}.contiguous", c), _positive_int(owner, f"{name}.strided", s)
    )


def _require(cond: bool, owner: str, message: str, line: int | None) -> None:
    """Raise unless ``cond``; ``line`` is the header line of the mirrored ``static_assert``."""
    if not cond:
        where = f" [static_assert, {HEADER}:{line}]" if line is not None else ""
        raise ThreadmapError(f"{owner}: {message}{where}")


def _const_like(tid: Any, value: int) -> Any:
    """``value`` with the type/shape of ``tid`` (``tid * 0 + value``) on every backend."""
    return tid * 0 + value


# --------------------------------------------------------------------------------------------
# base class
# --------------------------------------------------------------------------------------------


class PitchLinearThreadMap(ABC):
    """Common interface: ``threads``, ``elements_per_access``, ``iterations``, ``delta``,
    ``thread_access_shape``, ``initial_offset`` and the enumerations built from them."""

    #: C++ class template name (``cutlass::transform::<name>``)
    cxx_template: str = ""
    #: whether the C++ class has the member typedefs ``Shape`` and ``ThreadAccessShape``
    #: (the transposes need them; the GEMV tile policies do not have them)
    has_shape_member: bool = True
    #: whether the C++ class has ``Detail::kWarpsStrided`` / ``Detail::kWarpsContiguous``
    #: (``TransposePitchLinearThreadMap`` needs them)
    has_warp_detail: bool = False
    #: whether ``coordinates()`` has the extra ``thread_access_shape.strided`` axis
    has_access_shape_axis: bool = False

    shape: PitchLinearShape
    threads: int
    elements_per_access: int

    def __new__(cls, *args: Any, **kw: Any) -> Any:
        if getattr(cls, "__abstractmethods__", None):
            raise ThreadmapError(f"{cls.__name__} is the abstract interface of the thread maps; "
                                 f"use one of {', '.join(THREAD_MAPS)}")
        return super().__new__(cls)
    thread_access_shape: PitchLinearShape
    iterations: PitchLinearShape
    delta: PitchLinearShape

    # --- the one evaluation core ------------------------------------------------------------
    @abstractmethod
    def initial_offset(self, thread_id: V) -> tuple[V, V]:
        """``initial_offset(thread_id)`` as ``(contiguous, strided)`` in units of elements."""
        ...

    # --- enumerations (numpy, vectorised over threads) --------------------------------------
    def thread_ids(self) -> np.ndarray:
        return np.arange(self.threads, dtype=np.int64)

    def access_offsets(self) -> np.ndarray:
        """Start coordinate of every access: int64 array ``(threads, It.s, It.c, 2)``;
        ``[t, s, c] = initial_offset(t) + (c * Delta.c, s * Delta.s)``."""
        c0, s0 = self.initial_offset(self.thread_ids())
        it, d = self.iterations, self.delta
        cc = np.asarray(c0, dtype=np.int64)[:, None, None] + (
            np.arange(it.contiguous, dtype=np.int64) * d.contiguous
        )[None, None, :]
        ss = np.asarray(s0, dtype=np.int64)[:, None, None] + (
            np.arange(it.strided, dtype=np.int64) * d.strided
        )[None, :, None]
        cc, ss = np.broadcast_arrays(cc, ss)
        return np.stack([cc, ss], axis=-1)

    def coordinates(self) -> np.ndarray:
        """Every accessed element in iterator order (see the module docstring for the axes)."""
        per = self.elements_per_access if not self.has_access_shape_axis else \
            self.thread_access_shape.contiguous * self.thread_access_shape.strided
        n = int(self.threads) * int(self.iterations.strided) * int(self.iterations.contiguous) * int(per)
        if n > MAX_COORDINATES or per > MAX_COORDINATES:
            raise ThreadmapError(f"{self.cxx_type} accesses {n} elements over its threads, {per} per access; "
                                 f"threadmap lists at most {MAX_COORDINATES}")
        off = self.access_offsets()  # (T, S, C, 2)
        if not self.has_access_shape_axis:
            v = np.arange(self.elements_per_access, dtype=np.int64)
            cc = off[..., 0][..., None] + v
            ss = np.broadcast_to(off[..., 1][..., None], cc.shape)
            return np.stack([cc, ss], axis=-1)
        tas = self.thread_access_shape
        v = np.arange(tas.contiguous, dtype=np.int64)
        ts = np.arange(tas.strided, dtype=np.int64)
        cc = off[..., 0][..., None, None] + v[None, :]
        ss = off[..., 1][..., None, None] + ts[:, None]
        cc, ss = np.broadcast_arrays(cc, ss)
        return np.stack([cc, ss], axis=-1)

    # --- description ------------------------------------------------------------------------
    @property
    @abstractmethod
    def cxx_type(self) -> str:
        """The C++ type this object models (for code generation and the header oracle)."""
        ...

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self.cxx_type}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PitchLinearThreadMap) and self.cxx_type == other.cxx_type

    def __hash__(self) -> int:
        return hash(self.cxx_type)

    # --- what the map leaves out ------------------------------------------------------------
    def untouched(self) -> Untouched:
        """The elements of the tile ``[0, shape.contiguous) x [0, shape.strided)`` that no
        access of ``coordinates()`` reaches (accesses outside the tile are ignored).

        A map like ``PitchLinearWarpRakedThreadMap<8x20, 128, 8x4, 1>`` (its strided
        iteration count is floored) never reaches rows 16-19: a kernel using it leaves them
        unread or unwritten, and nothing in C++ says so.  ``rows`` are the strided indices
        and ``columns`` the contiguous indices of which no element is touched.
        """
        count = int(self.shape.contiguous) * int(self.shape.strided)
        if count > MAX_COORDINATES:
            raise ThreadmapError(f"{self.cxx_type}: a tile of {count} elements; threadmap checks the "
                                 f"coverage of at most {MAX_COORDINATES}")
        hit = np.zeros((self.shape.strided, self.shape.contiguous), dtype=bool)
        co = self.coordinates().reshape(-1, 2)
        inside = (co[:, 0] >= 0) & (co[:, 0] < self.shape.contiguous) & \
            (co[:, 1] >= 0) & (co[:, 1] < self.shape.strided)
        hit[co[inside, 1], co[inside, 0]] = True
        s_idx, c_idx = np.nonzero(~hit)
        return Untouched(
            shape=self.shape,
            elements=tuple(zip(c_idx.tolist(), s_idx.tolist(), strict=True)),
            rows=tuple(np.nonzero(~hit.any(axis=1))[0].tolist()),
            columns=tuple(np.nonzero(~hit.any(axis=0))[0].tolist()),
        )


# --------------------------------------------------------------------------------------------
# PitchLinearStripminedThreadMap (header lines 53-146)
# --------------------------------------------------------------------------------------------


class PitchLinearStripminedThreadMap(PitchLinearThreadMap):
    """Strip-mines the tile among the threads, first along contiguous then strided.

    With ``ShapeVec = (Shape.c / kElementsPerAccess, Shape.s)``:

    * ``Threads >= ShapeVec.c``: ``Iterations = (1, ceil(ShapeVec.s / (Threads / ShapeVec.c)))``,
      ``Delta = (1, Threads / ShapeVec.c)``,
      ``StorageShape = (Shape.c, Iterations.s * (Threads / ShapeVec.c))``;
    * otherwise ``Iterations = (ShapeVec.c / Threads, ShapeVec.s)``,
      ``Delta = (Threads * kElementsPerAccess, 1)``, ``StorageShape = Shape``;
    * ``initial_offset(t) = ((t % ShapeVec.c) * kElementsPerAccess, t / ShapeVec.c)``.

    The strided iteration count is a ceiling: when ``Threads / ShapeVec.c`` does not divide
    ``ShapeVec.s`` the last iteration of some threads lies outside the tile (CUTLASS
    predicates it away); the header accepts this.  Note also that the template parameters are
    ``(Shape, Threads, ElementsPerAccess)`` and the struct has no base class.
    """

    cxx_template = "PitchLinearStripminedThreadMap"

    def __init__(self, shape: tuple[int, int], threads: int, elements_per_access: int = 1) -> None:
        n = type(self).__name__
        self.shape = _shape(n, "shape", shape)
        self.threads = _positive_int(n, "threads", threads)
        self.elements_per_access = epa = _positive_int(n, "elements_per_access", elements_per_access)
        t = self.threads
        self.thread_access_shape = PitchLinearShape(epa, 1)
        # header line 89: static_assert(!(Shape::kContiguous % kElementsPerAccess), "")
        _require(
            self.shape.contiguous % epa == 0, n,
            f"Shape::kContiguous ({self.shape.contiguous}) must be divisible by "
            f"ElementsPerAccess ({epa})", 89,
        )
        self.shape_vec = sv = PitchLinearShape(self.shape.contiguous // epa, self.shape.strided)
        # header line 97: (Threads < ShapeVec::kContiguous && !(ShapeVec::kContiguous % kThreads))
        #                 || !(kThreads % ShapeVec::kContiguous)
        _require(
            (t < sv.contiguous and sv.contiguous % t == 0) or t % sv.contiguous == 0, n,
            f"Shape must be divisible by number of iterations of each thread: the tile is "
            f"{sv.contiguous} vectors of {epa} wide, so Threads ({t}) must divide it (when "
            f"smaller) or be a multiple of it", 97,
        )
        if t >= sv.contiguous:
            rows = t // sv.contiguous  # threads per strided step
            self.iterations = PitchLinearShape(1, (sv.strided + rows - 1) // rows)
            self.delta = PitchLinearShape(1, rows)
            self.storage_shape = PitchLinearShape(self.shape.contiguous, self.iterations.strided * rows)
        else:
            self.iterations = PitchLinearShape(sv.contiguous // t, sv.strided)
            self.delta = PitchLinearShape(t * epa, 1)
            self.storage_shape = PitchLinearShape(self.shape.contiguous, self.shape.strided)

    def initial_offset(self, thread_id: V) -> tuple[V, V]:
        """``((t % ShapeVec.c) * kElementsPerAccess, t / ShapeVec.c)``."""
        svc = self.shape_vec.contiguous
        return (thread_id % svc) * self.elements_per_access, thread_id // svc

    @property
    def cxx_type(self) -> str:
        return (
            f"cutlass::transform::PitchLinearStripminedThreadMap<{self.shape.cxx()}, "
            f"{self.threads}, {self.elements_per_access}>"
        )


# --------------------------------------------------------------------------------------------
# GEMV tile policies (header lines 148-206)
# --------------------------------------------------------------------------------------------


class PitchLinearTilePolicyStripminedThreadContiguous(PitchLinearThreadMap):
    """GEMV policy: each thread owns a contiguous run of ``Shape.c / Threads`` elements.

    ``Iterations = (Shape.c / (Threads * kElementsPerAccess), Shape.s)``, ``Delta = (1, 1)``,
    ``initial_offset(t) = (t * Iterations.c * kElementsPerAccess, 0)``.

    ``Delta.contiguous`` is 1 (not ``kElementsPerAccess``): with the generic iterator
    formula, consecutive contiguous iterations start one element apart, so when
    ``Iterations.c > 1`` and ``kElementsPerAccess > 1`` the accesses overlap.  This is what
    the header defines and what ``coordinates()`` reports.  The C++ struct has no ``Shape`` or
    ``ThreadAccessShape`` member, so the transposes cannot wrap it.
    """

    cxx_template = "PitchLinearTilePolicyStripminedThreadContiguous"
    has_shape_member = False

    def __init__(self, shape: tuple[int, int], threads: int, elements_per_access: int = 1) -> None:
        n = type(self).__name__
        self.shape = _shape(n, "shape", shape)
        self.threads = t = _positive_int(n, "threads", threads)
        self.elements_per_access = epa = _positive_int(n, "elements_per_access", elements_per_access)
        self.thread_access_shape = PitchLinearShape(epa, 1)
        # header line 156: static_assert((Shape::kContiguous % (Threads * ElementsPerAccess)) == 0)
        _require(
            self.shape.contiguous % (t * epa) == 0, n,
            f"Contiguous shape must divide number of threads: Shape::kContiguous "
            f"({self.shape.contiguous}) is not a multiple of Threads * ElementsPerAccess "
            f"({t} * {epa} = {t * epa})", 156,
        )
        self.iterations = PitchLinearShape(self.shape.contiguous // (t * epa), self.shape.strided)
        self.delta = PitchLinearShape(1, 1)

    def initial_offset(self, thread_id: V) -> tuple[V, V]:
        """``(t * Iterations.c * kElementsPerAccess, 0)``."""
        return (
            thread_id * (self.iterations.contiguous * self.elements_per_access),
            _const_like(thread_id, 0),
        )

    @property
    def cxx_type(self) -> str:
        return (
            f"cutlass::transform::{self.cxx_template}<{self.shape.cxx()}, {self.threads}, "
            f"{self.elements_per_access}>"
        )


class PitchLinearTilePolicyStripminedThreadStrided(PitchLinearThreadMap):
    """GEMV policy: each thread owns ``Shape.s / Threads`` consecutive strided rows.

    ``Iterations = (Shape.c / kElementsPerAccess, Shape.s / Threads)`` (floor; the header
    does not require ``kElementsPerAccess`` to divide ``Shape.c``), ``Delta = (1, 1)``,
    ``ShapeVec = Shape``, ``initial_offset(t) = (0, t * Iterations.s)``.
    As for the contiguous policy, ``Delta.contiguous = 1`` makes vector accesses overlap
    when ``kElementsPerAccess > 1``.
    """

    cxx_template = "PitchLinearTilePolicyStripminedThreadStrided"
    has_shape_member = False

    def __init__(self, shape: tuple[int, int], threads: int, elements_per_access: int = 1) -> None:
        n = type(self).__name__
        self.shape = _shape(n, "shape", shape)
        self.threads = t = _positive_int(n, "threads", threads)
        self.elements_per_access = epa = _positive_int(n, "elements_per_access", elements_per_access)
        self.thread_access_shape = PitchLinearShape(epa, 1)
        # header line 184: static_assert((Shape::kStrided % Threads == 0))
        _require(
            self.shape.strided % t == 0, n,
            f"Strided shape must divide number of threads: Shape::kStrided "
            f"({self.shape.strided}) is not a multiple of Threads ({t})", 184,
        )
        self.iterations = PitchLinearShape(self.shape.contiguous // epa, self.shape.strided // t)
        self.delta = PitchLinearShape(1, 1)
        self.shape_vec = self.shape

    def initial_offset(self, thread_id: V) -> tuple[V, V]:
        """``(0, t * Iterations.s)``."""
        return _const_like(thread_id, 0), thread_id * self.iterations.strided

    @property
    def cxx_type(self) -> str:
        return (
            f"cutlass::transform::{self.cxx_template}<{self.shape.cxx()}, {self.threads}, "
            f"{self.elements_per_access}>"
        )


# --------------------------------------------------------------------------------------------
# warp-raked / warp-striped family (header lines 211-348, 352-478, 640-766)
# --------------------------------------------------------------------------------------------


class _WarpMap(PitchLinearThreadMap):
    """Shared parameters of the warp-raked, strided-warp-raked and warp-striped maps."""

    has_warp_detail = True

    warp_thread_arrangement: PitchLinearShape
    warp_size: int
    warp_count: int
    shape_in_accesses: PitchLinearShape
    warp_access_iterations: PitchLinearShape
    warps_contiguous: int
    warps_strided: int
    warp_arrangement: PitchLinearShape

    def _common(
        self, shape: tuple[int, int], threads: int, wta: tuple[int, int], epa: int
    ) -> str:
        n = type(self).__name__
        self.shape = _shape(n, "shape", shape)
        self.threads = _positive_int(n, "threads", threads)
        self.warp_thread_arrangement = _shape(n, "warp_thread_arrangement", wta)
        self.elements_per_access = _positive_int(n, "elements_per_access", epa)
        self.thread_access_shape = PitchLinearShape(self.elements_per_access, 1)
        self.warp_size = self.warp_thread_arrangement.count  # Detail::kWarpSize
        self.warp_count = self.threads // self.warp_size  # Detail::kWarpCount (floor)
        return n

    def _raked_checks(self, n: str) -> None:
        """Detail of ``PitchLinearWarpRakedThreadMap`` (lines 239-290) up to WarpAccessIterations."""
        wta, epa = self.warp_thread_arrangement, self.elements_per_access
        # header line 250: static_assert(!(Shape::kContiguous % kElementsPerAccess))
        _require(
            self.shape.contiguous % epa == 0, n,
            f"Shape must be divisible by vector length: Shape::kContiguous "
            f"({self.shape.contiguous}) % ElementsPerAccess ({epa}) != 0", 250,
        )
        self.shape_in_accesses = sia = PitchLinearShape(self.shape.contiguous // epa, self.shape.strided)
        # header line 260: static_assert(!(ShapeInAccesses::kContiguous % WarpThreadArrangement::kContiguous))
        _require(
            sia.contiguous % wta.contiguous == 0, n,
            f"ShapeInAccesses must be divisible by WarpThreadArrangement: "
            f"ShapeInAccesses::kContiguous ({sia.contiguous}) % "
            f"WarpThreadArrangement::kContiguous ({wta.contiguous}) != 0", 260,
        )
        # header line 264: static_assert(!(ShapeInAccesses::kStrided % WarpThreadArrangement::kStrided))
        _require(
            sia.strided % wta.strided == 0, n,
            f"ShapeInAccesses must be divisible by WarpThreadArrangement: "
            f"ShapeInAccesses::kStrided ({sia.strided}) % "
            f"WarpThreadArrangement::kStrided ({wta.strided}) != 0", 264,
        )
        self.warp_access_iterations = PitchLinearShape(
            sia.contiguous // wta.contiguous, sia.strided // wta.strided
        )
        # Not a static_assert: with kWarpCount == 0, kWarpsStrided == 0 and
        # `Iterations::kStrided = WarpAccessIterations::kStrided / kWarpsStrided` (line 295)
        # is a division by zero in a constant expression, a compile error.
        _require(
            self.warp_count > 0, n,
            f"Threads ({self.threads}) is smaller than the warp size "
            f"WarpThreadArrangement::kCount ({self.warp_size}): kWarpCount = 0 and Iterations "
            f"divides by kWarpsStrided = 0 (compile error, header line 295)", None,
        )

    def _arrange_warps(self, n: str, warps_contiguous: int, warps_strided: int, line: int) -> None:
        """``WarpArrangement`` and ``Iterations = WarpAccessIterations / WarpArrangement``, with the
        header's ``static_assert(Iterations::kCount)`` at ``line``."""
        wai = self.warp_access_iterations
        self.warps_contiguous, self.warps_strided = warps_contiguous, warps_strided
        self.warp_arrangement = PitchLinearShape(warps_contiguous, warps_strided)
        self.iterations = PitchLinearShape(wai.contiguous // warps_contiguous, wai.strided // warps_strided)
        _require(
            self.iterations.count != 0, n,
            f"Number of iterations must be non-zero: Iterations = {tuple(self.iterations)} "
            f"(WarpAccessIterations {tuple(wai)} over WarpArrangement "
            f"{tuple(self.warp_arrangement)})", line,
        )

    def _raked_offset(self, thread_id: V) -> tuple[V, V]:
        """The warp-raked ``initial_offset``: warp footprint ``(WTA.c * It.c, WTA.s * It.s)``."""
        wta, it = self.warp_thread_arrangement, self.iterations
        return self._warp_offset(
            thread_id, PitchLinearShape(wta.contiguous * it.contiguous, wta.strided * it.strided)
        )

    def _warp_offset(self, thread_id: V, footprint: PitchLinearShape) -> tuple[V, V]:
        """``warp_footprint * warp_offset + thread_offset_in_warp``, scaled to elements, with
        ``warp_offset = (warp_id % kWarpsContiguous, warp_id / kWarpsContiguous)`` and
        ``thread_offset_in_warp = (lane % WTA.c, lane / WTA.c)``."""
        wta = self.warp_thread_arrangement
        warp_id = thread_id // self.warp_size
        lane_id = thread_id % self.warp_size
        vec_c = footprint.contiguous * (warp_id % self.warps_contiguous) + lane_id % wta.contiguous
        vec_s = footprint.strided * (warp_id // self.warps_contiguous) + lane_id // wta.contiguous
        return vec_c * self.elements_per_access, vec_s

    @property
    def cxx_type(self) -> str:
        return (
            f"cutlass::transform::{self.cxx_template}<{self.shape.cxx()}, {self.threads}, "
            f"{self.warp_thread_arrangement.cxx()}, {self.elements_per_access}>"
        )


class PitchLinearWarpRakedThreadMap(_WarpMap):
    """Warp-raked map (tensor-core kernels): each warp owns a contiguous block of accesses.

    ``ShapeInAccesses = (Shape.c / kElementsPerAccess, Shape.s)``,
    ``WarpAccessIterations = ShapeInAccesses / WarpThreadArrangement`` (elementwise),
    ``kWarpCount = Threads / WTA.count``,
    ``kWarpsStrided = min(WAI.s, kWarpCount)``,
    ``kWarpsContiguous = kWarpCount > WAI.s ? kWarpCount / kWarpsStrided : 1``,
    ``Iterations = (WAI.c / kWarpsContiguous, WAI.s / kWarpsStrided)``,
    ``Delta = (WTA.c * kElementsPerAccess, WTA.s)``,
    ``initial_offset(t) = ((WTA.c * It.c * (w % kWC) + l % WTA.c) * kElementsPerAccess,
    WTA.s * It.s * (w / kWC) + l / WTA.c)`` with ``w = t / WTA.count``, ``l = t % WTA.count``.
    """

    cxx_template = "PitchLinearWarpRakedThreadMap"

    def __init__(
        self,
        shape: tuple[int, int],
        threads: int,
        warp_thread_arrangement: tuple[int, int],
        elements_per_access: int = 1,
    ) -> None:
        n = self._common(shape, threads, warp_thread_arrangement, elements_per_access)
        self._raked_checks(n)
        wai, wc = self.warp_access_iterations, self.warp_count
        ws = min(wc, wai.strided)
        # header line 298: static_assert(Iterations::kCount, "Number of iterations must be non-zero")
        self._arrange_warps(n, wc // ws if wc > wai.strided else 1, ws, 298)
        wta = self.warp_thread_arrangement
        self.delta = PitchLinearShape(wta.contiguous * self.elements_per_access, wta.strided)

    def initial_offset(self, thread_id: V) -> tuple[V, V]:
        """Warp footprint ``(WTA.c * It.c, WTA.s * It.s)``; see the class docstring."""
        return self._raked_offset(thread_id)


class PitchLinearStridedWarpRakedThreadMap(_WarpMap):
    """Warp-raked map whose warps are arranged along contiguous first (NCxHWx layouts).

    Instantiates ``BaseThreadMap = PitchLinearWarpRakedThreadMap<same parameters>`` (so every
    check of that map applies, including its ``Iterations::kCount`` assert) and then:
    ``kWarpsContiguous = min(WAI.c, kWarpCount)``,
    ``kWarpsStrided = kWarpCount > WAI.c ? kWarpCount / kWarpsContiguous : 1``,
    ``Iterations = (WAI.c / kWarpsContiguous, WAI.s / kWarpsStrided)``,
    ``Delta = BaseThreadMap::Delta``, and ``initial_offset`` is the warp-raked formula with
    these Iterations and kWarpsContiguous.
    """

    cxx_template = "PitchLinearStridedWarpRakedThreadMap"

    def __init__(
        self,
        shape: tuple[int, int],
        threads: int,
        warp_thread_arrangement: tuple[int, int],
        elements_per_access: int = 1,
    ) -> None:
        n = type(self).__name__
        try:
            # `typename BaseThreadMap::ThreadAccessShape` (line 387) instantiates the base,
            # with all its static_asserts.
            self.base_thread_map = PitchLinearWarpRakedThreadMap(
                shape, threads, warp_thread_arrangement, elements_per_access
            )
        except ThreadmapError as exc:
            raise ThreadmapError(f"{n}: its BaseThreadMap is rejected: {exc}") from None
        self._common(shape, threads, warp_thread_arrangement, elements_per_access)
        base = self.base_thread_map
        self.shape_in_accesses = base.shape_in_accesses
        wai = self.warp_access_iterations = base.warp_access_iterations
        wc = self.warp_count
        wcont = min(wc, wai.contiguous)
        # header line 427: static_assert(Iterations::kCount, "Number of iterations must be non-zero")
        self._arrange_warps(n, wcont, wc // wcont if wc > wai.contiguous else 1, 427)
        self.delta = base.delta

    def initial_offset(self, thread_id: V) -> tuple[V, V]:
        """Warp footprint ``(WTA.c * It.c, WTA.s * It.s)`` with this map's Iterations."""
        return self._raked_offset(thread_id)


class PitchLinearWarpStripedThreadMap(_WarpMap):
    """Warp-striped map: warps striped along strided, raked along contiguous.

    ``WarpAccessIterations = ShapeInAccesses / WTA`` (floor; no divisibility assert),
    ``kWarpsStrided = WAI.s >= kWarpCount ? kWarpCount : kWarpCount / WAI.s``,
    ``kWarpsContiguous = kWarpCount > WAI.s ? WAI.c / kWarpsStrided : 1``,
    ``Iterations = (WAI.c / kWarpsContiguous, WAI.s / kWarpsStrided)``,
    ``Delta = (WTA.c * kElementsPerAccess, WTA.s * kWarpsStrided)``,
    ``initial_offset``: warp footprint ``(WTA.c * It.c, WTA.s)``,
    ``warp_offset = (w % kWarpsContiguous, w / kWarpsContiguous)``.
    """

    cxx_template = "PitchLinearWarpStripedThreadMap"

    def __init__(
        self,
        shape: tuple[int, int],
        threads: int,
        warp_thread_arrangement: tuple[int, int],
        elements_per_access: int = 1,
    ) -> None:
        n = self._common(shape, threads, warp_thread_arrangement, elements_per_access)
        wta, epa, wc = self.warp_thread_arrangement, self.elements_per_access, self.warp_count
        # header line 678: static_assert(!(Shape::kContiguous % kElementsPerAccess))
        _require(
            self.shape.contiguous % epa == 0, n,
            f"Shape must be divisible by vector length: Shape::kContiguous "
            f"({self.shape.contiguous}) % ElementsPerAccess ({epa}) != 0", 678,
        )
        sia = self.shape_in_accesses = PitchLinearShape(self.shape.contiguous // epa, self.shape.strided)
        wai = self.warp_access_iterations = PitchLinearShape(
            sia.contiguous // wta.contiguous, sia.strided // wta.strided
        )
        # Not static_asserts: divisions by zero in constant expressions (compile errors).
        _require(
            wc > 0, n,
            f"Threads ({self.threads}) is smaller than the warp size "
            f"WarpThreadArrangement::kCount ({self.warp_size}): kWarpCount = 0 and "
            f"Iterations::kStrided divides by kWarpsStrided = 0 (compile error, header "
            f"line 713)", None,
        )
        _require(
            wai.strided > 0, n,
            f"WarpAccessIterations::kStrided = ShapeInAccesses::kStrided ({sia.strided}) / "
            f"WarpThreadArrangement::kStrided ({wta.strided}) = 0, and kWarpsStrided divides "
            f"kWarpCount by it (compile error, header line 698)", None,
        )
        self.warps_strided = wc if wai.strided >= wc else wc // wai.strided
        self.warps_contiguous = wai.contiguous // self.warps_strided if wc > wai.strided else 1
        _require(
            self.warps_contiguous > 0, n,
            f"kWarpsContiguous = WarpAccessIterations::kContiguous ({wai.contiguous}) / "
            f"kWarpsStrided ({self.warps_strided}) = 0, and Iterations::kContiguous divides by "
            f"it (compile error, header line 712)", None,
        )
        self.warp_arrangement = PitchLinearShape(self.warps_contiguous, self.warps_strided)
        self.iterations = PitchLinearShape(
            wai.contiguous // self.warps_contiguous, wai.strided // self.warps_strided
        )
        # header line 716: static_assert(Iterations::kCount, "Number of iterations must be non-zero")
        _require(
            self.iterations.count != 0, n,
            f"Number of iterations must be non-zero: Iterations = {tuple(self.iterations)} "
            f"(WarpAccessIterations {tuple(wai)} over WarpArrangement "
            f"{tuple(self.warp_arrangement)})", 716,
        )
        self.delta = PitchLinearShape(wta.contiguous * epa, wta.strided * self.warps_strided)

    def initial_offset(self, thread_id: V) -> tuple[V, V]:
        """Warp footprint ``(WTA.c * It.c, WTA.s)``; see the class docstring."""
        wta, it = self.warp_thread_arrangement, self.iterations
        return self._warp_offset(
            thread_id, PitchLinearShape(wta.contiguous * it.contiguous, wta.strided)
        )


# --------------------------------------------------------------------------------------------
# 2D thread tile (header lines 768-868)
# --------------------------------------------------------------------------------------------


class PitchLinear2DThreadTileStripminedThreadMap(PitchLinearThreadMap):
    """Strip-mined map where each thread accesses a 4x4 thread tile.

    Only ``ThreadTileShape = PitchLinearShape<4, 4>`` is defined (the primary template is
    declared but not defined).  ``ThreadAccessShape = (4, 4)``, ``kElementsPerAccess = 4``,
    ``ShapeVec = (Shape.c / 4, Shape.s / 4)`` (floor), and

    * ``Threads >= ShapeVec.c``: ``Iterations = (1, ShapeVec.s / (Threads / ShapeVec.c))``,
      ``Delta = (Shape.c, Threads * 4 / ShapeVec.c)``;
    * otherwise ``Iterations = (ShapeVec.c / Threads, ShapeVec.s)``, ``Delta = (Threads * 4, 1)``;
    * ``initial_offset(t) = ((t % ShapeVec.c) * 4, (t / ShapeVec.c) * 4)``.

    ``coordinates()`` has the extra thread-access-shape axis (see the module docstring).
    """

    cxx_template = "PitchLinear2DThreadTileStripminedThreadMap"
    has_access_shape_axis = True

    def __init__(
        self,
        shape: tuple[int, int],
        threads: int,
        thread_tile_shape: tuple[int, int] = (4, 4),
    ) -> None:
        n = type(self).__name__
        self.shape = _shape(n, "shape", shape)
        self.threads = t = _positive_int(n, "threads", threads)
        tts = _shape(n, "thread_tile_shape", thread_tile_shape)
        # header lines 776-788: only the PitchLinearShape<4, 4> specialization is defined.
        _require(
            tts == (4, 4), n,
            f"only ThreadTileShape = PitchLinearShape<4, 4> is defined (the primary template "
            f"is declared but not defined, header line 781); got {tuple(tts)}", None,
        )
        self.thread_tile_shape = tts
        tas = self.thread_access_shape = PitchLinearShape(4, 4)
        self.elements_per_access = tas.contiguous
        # header lines 806 and 811 (kElementsPerAccess % 4, ThreadAccessShape::kContiguous % 4)
        # hold for the only specialization.
        # header line 813: static_assert(!(Shape::kContiguous % ThreadAccessShape::kContiguous), "")
        _require(
            self.shape.contiguous % tas.contiguous == 0, n,
            f"Shape::kContiguous ({self.shape.contiguous}) must be divisible by "
            f"ThreadAccessShape::kContiguous ({tas.contiguous})", 813,
        )
        # header line 815: !((Shape::kContiguous * Shape::kStrided) % (kThreads * ThreadAccessShape::kCount))
        _require(
            self.shape.count % (t * tas.count) == 0, n,
            f"Shape must be divisible thread count * accesses per thread: "
            f"{self.shape.contiguous} * {self.shape.strided} = {self.shape.count} is not a "
            f"multiple of Threads * ThreadAccessShape::kCount ({t} * {tas.count})", 815,
        )
        sv = self.shape_vec = PitchLinearShape(
            self.shape.contiguous // tas.contiguous, self.shape.strided // tas.strided
        )
        # header line 824: (Threads < SV.c && !(SV.c % kThreads))
        #                  || (!(kThreads % SV.c) && !(SV.s % (kThreads / SV.c)))
        _require(
            (t < sv.contiguous and sv.contiguous % t == 0)
            or (t % sv.contiguous == 0 and sv.strided % (t // sv.contiguous) == 0), n,
            f"Shape must be divisible by number of iterations of each thread: ShapeVec = "
            f"{tuple(sv)} thread tiles, Threads = {t}", 824,
        )
        if t >= sv.contiguous:
            self.iterations = PitchLinearShape(1, sv.strided // (t // sv.contiguous))
            self.delta = PitchLinearShape(self.shape.contiguous, t * tas.strided // sv.contiguous)
        else:
            self.iterations = PitchLinearShape(sv.contiguous // t, sv.strided)
            self.delta = PitchLinearShape(t * tas.contiguous, 1)

    def initial_offset(self, thread_id: V) -> tuple[V, V]:
        """``((t % ShapeVec.c) * TAS.c, (t / ShapeVec.c) * TAS.s)``."""
        svc, tas = self.shape_vec.contiguous, self.thread_access_shape
        return (thread_id % svc) * tas.contiguous, (thread_id // svc) * tas.strided

    @property
    def cxx_type(self) -> str:
        return (
            f"cutlass::transform::{self.cxx_template}<{self.shape.cxx()}, {self.threads}, "
            f"{self.thread_tile_shape.cxx()}>"
        )


# --------------------------------------------------------------------------------------------
# transposes (header lines 480-635, 870-918)
# --------------------------------------------------------------------------------------------


def _check_wrapped(owner: str, thread_map: Any, *, warp_detail: bool = False) -> PitchLinearThreadMap:
    if not isinstance(thread_map, PitchLinearThreadMap):
        raise ThreadmapError(f"{owner}: thread_map must be a thread map object, got {thread_map!r}")
    if not thread_map.has_shape_member:
        raise ThreadmapError(
            f"{owner}: {type(thread_map).__name__} has no Shape / ThreadAccessShape member "
            f"typedefs, which the transpose reads (compile error)"
        )
    if warp_detail and not thread_map.has_warp_detail:
        raise ThreadmapError(
            f"{owner}: {type(thread_map).__name__} has no Detail::kWarpsStrided / "
            f"Detail::kWarpsContiguous, which the transpose reads (compile error); use a "
            f"warp-raked, strided-warp-raked or warp-striped map"
        )
    return thread_map


class _TransposeBase(PitchLinearThreadMap):
    thread_map: PitchLinearThreadMap

    def _swap_from(self, tm: PitchLinearThreadMap) -> None:
        self.thread_map = tm
        self.shape = tm.shape  # `using Shape = typename ThreadMap::Shape;` (not transposed)
        self.threads = tm.threads
        self.elements_per_access = tm.elements_per_access
        self.iterations = PitchLinearShape(tm.iterations.strided, tm.iterations.contiguous)


class TransposePitchLinearThreadMap(_TransposeBase):
    """Transpose of a warp-raked/striped map (interleaved layouts: congruous in global memory,
    crosswise in shared memory), with its own warp thread arrangement ``WTA``.

    ``WarpArrangement = (TM::kWarpsStrided, TM::kWarpsContiguous)``,
    ``Iterations = (TM::It.s, TM::It.c)`` (asserted ``Iterations.c == 1``),
    ``Delta = (WTA.c * kElementsPerAccess, WTA.s)``, ``ThreadAccessShape = (kElementsPerAccess, 1)``,
    ``initial_offset``: warp footprint ``(WTA.c * It.c, WTA.s * It.s)``,
    ``warp_offset = (w / WarpArrangement.s, w % WarpArrangement.s)`` (note / and % swapped
    relative to the warp-raked map), ``thread_offset_in_warp = (l % WTA.c, l / WTA.c)``,
    result ``(vec.c * kElementsPerAccess, vec.s)``.  ``shape`` is the wrapped map's shape.
    """

    cxx_template = "TransposePitchLinearThreadMap"
    has_warp_detail = False

    def __init__(self, thread_map: PitchLinearThreadMap, warp_thread_arrangement: tuple[int, int]) -> None:
        n = type(self).__name__
        tm = _check_wrapped(n, thread_map, warp_detail=True)
        self._swap_from(tm)
        self.warp_thread_arrangement = wta = _shape(n, "warp_thread_arrangement", warp_thread_arrangement)
        epa = self.elements_per_access
        self.thread_access_shape = PitchLinearShape(epa, 1)
        self.warp_size = wta.count
        self.warp_count = self.threads // self.warp_size
        # header line 515: static_assert(!(Shape::kContiguous % kElementsPerAccess))
        _require(
            self.shape.contiguous % epa == 0, n,
            f"Shape must be divisible by vector length: Shape::kContiguous "
            f"({self.shape.contiguous}) % ElementsPerAccess ({epa}) != 0", 515,
        )
        self.warp_arrangement = PitchLinearShape(tm.warps_strided, tm.warps_contiguous)  # type: ignore[attr-defined]
        # header line 529: static_assert(Iterations::kContiguous == 1, ...)
        _require(
            self.iterations.contiguous == 1, n,
            f"Contiguous iteration has to be one to reuse the same shared store function "
            f"with those that don't need transpose: the wrapped map has Iterations::kStrided "
            f"= {tm.iterations.strided}", 529,
        )
        # header line 532: static_assert(Iterations::kCount, ...)
        _require(self.iterations.count != 0, n, "Number of iterations must be non-zero", 532)
        self.delta = PitchLinearShape(wta.contiguous * epa, wta.strided)

    def initial_offset(self, thread_id: V) -> tuple[V, V]:
        """Warp-raked formula with ``warp_offset = (w / WA.s, w % WA.s)``."""
        wta, it = self.warp_thread_arrangement, self.iterations
        was = self.warp_arrangement.strided
        warp_id = thread_id // self.warp_size
        lane_id = thread_id % self.warp_size
        vec_c = (wta.contiguous * it.contiguous) * (warp_id // was) + lane_id % wta.contiguous
        vec_s = (wta.strided * it.strided) * (warp_id % was) + lane_id // wta.contiguous
        return vec_c * self.elements_per_access, vec_s

    @property
    def cxx_type(self) -> str:
        return (
            f"cutlass::transform::{self.cxx_template}<{self.thread_map.cxx_type}, "
            f"{self.warp_thread_arrangement.cxx()}>"
        )


class TransposePitchLinearThreadMapSimt(_TransposeBase):
    """Transpose of any map with ``kElementsPerAccess == 1`` (SIMT shared-memory stores).

    ``Iterations = (TM::It.s, TM::It.c)`` (asserted ``Iterations.s == 1``),
    ``Delta = (TM::Delta.s, TM::Delta.c)``, ``ThreadAccessShape = TM::ThreadAccessShape``,
    ``initial_offset(t) = swap(TM::initial_offset(t))``.  ``shape`` is the wrapped map's shape.
    """

    cxx_template = "TransposePitchLinearThreadMapSimt"

    def __init__(self, thread_map: PitchLinearThreadMap) -> None:
        n = type(self).__name__
        tm = _check_wrapped(n, thread_map)
        self._swap_from(tm)
        self.thread_access_shape = tm.thread_access_shape
        self.has_access_shape_axis = tm.has_access_shape_axis
        # header line 602: static_assert(kElementsPerAccess == 1, ...)
        _require(
            self.elements_per_access == 1, n,
            f"Simt transpose requires elements per access to be 1, got "
            f"{self.elements_per_access}", 602,
        )
        # header line 608: static_assert(Iterations::kCount, ...)
        _require(self.iterations.count != 0, n, "Number of iterations must be non-zero", 608)
        # header line 610: static_assert(Iterations::kStrided == 1, ...)
        _require(
            self.iterations.strided == 1, n,
            f"Strided iteration has to be one to reuse the same shared store function with "
            f"those that don't need transpose: the wrapped map has Iterations::kContiguous = "
            f"{tm.iterations.contiguous}", 610,
        )
        self.delta = PitchLinearShape(tm.delta.strided, tm.delta.contiguous)

    def initial_offset(self, thread_id: V) -> tuple[V, V]:
        """``(TM::initial_offset(t).strided, TM::initial_offset(t).contiguous)``."""
        c, s = self.thread_map.initial_offset(thread_id)
        return s, c

    @property
    def cxx_type(self) -> str:
        return f"cutlass::transform::{self.cxx_template}<{self.thread_map.cxx_type}>"


class TransposePitchLinearThreadMap2DThreadTile(_TransposeBase):
    """Transpose of a 2D-thread-tile map (any map with ``kElementsPerAccess > 1``).

    ``Iterations = (TM::It.s, TM::It.c)``, ``Delta = (TM::Delta.s, TM::Delta.c)``,
    ``ThreadAccessShape = TM::ThreadAccessShape`` (*not* transposed),
    ``initial_offset(t) = swap(TM::initial_offset(t))``.  The header's assert at line 889
    requires ``kElementsPerAccess > 1`` (its message says "to be 1", the condition is ``> 1``).
    ``coordinates()`` always has the thread-access-shape axis (this map is consumed by the
    2D-thread-tile iterators); for a wrapped vector map that axis has length 1.
    """

    cxx_template = "TransposePitchLinearThreadMap2DThreadTile"
    has_access_shape_axis = True

    def __init__(self, thread_map: PitchLinearThreadMap) -> None:
        n = type(self).__name__
        tm = _check_wrapped(n, thread_map)
        self._swap_from(tm)
        self.thread_access_shape = tm.thread_access_shape
        # header line 889: static_assert(kElementsPerAccess > 1, ...)
        _require(
            self.elements_per_access > 1, n,
            f"kElementsPerAccess must be greater than 1 (the header's message says 'Simt "
            f"transpose requires elements per access to be 1'), got {self.elements_per_access}",
            889,
        )
        # header line 895: static_assert(Iterations::kCount, ...)
        _require(self.iterations.count != 0, n, "Number of iterations must be non-zero", 895)
        self.delta = PitchLinearShape(tm.delta.strided, tm.delta.contiguous)

    def initial_offset(self, thread_id: V) -> tuple[V, V]:
        """``(TM::initial_offset(t).strided, TM::initial_offset(t).contiguous)``."""
        c, s = self.thread_map.initial_offset(thread_id)
        return s, c

    @property
    def cxx_type(self) -> str:
        return f"cutlass::transform::{self.cxx_template}<{self.thread_map.cxx_type}>"


#: every thread map of the header, by its C++ name
THREAD_MAPS: dict[str, type[PitchLinearThreadMap]] = {
    cls.cxx_template: cls
    for cls in (
        PitchLinearStripminedThreadMap,
        PitchLinearTilePolicyStripminedThreadContiguous,
        PitchLinearTilePolicyStripminedThreadStrided,
        PitchLinearWarpRakedThreadMap,
        PitchLinearStridedWarpRakedThreadMap,
        PitchLinearWarpStripedThreadMap,
        PitchLinear2DThreadTileStripminedThreadMap,
        TransposePitchLinearThreadMap,
        TransposePitchLinearThreadMapSimt,
        TransposePitchLinearThreadMap2DThreadTile,
    )
}
