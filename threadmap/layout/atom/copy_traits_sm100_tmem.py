"""The Blackwell (SM100) tensor-memory copies of ``cute/arch/copy_sm100.hpp`` and
``cute/atom/copy_traits_sm100.hpp`` (``tcgen05.ld`` / ``tcgen05.st``), and the TMEM
allocation and access rules (``cute/arch/tmem_allocator_sm100.hpp``).

An op ``SM100_TMEM_{LOAD,STORE}_{dp}dp{b}b{N}x[_16b]`` moves, for one warp, ``N`` repetitions
of a ``dp``-lane x ``b``-bit pattern (``16dp32b`` is PTX's ``.16x32bx2``: two 32-bit halves,
64 bits per lane); ``_16b`` is ``.pack::16b`` (load) / ``.unpack::16b`` (store): each 32-bit
register holds the low 16 bits of two adjacent TMEM columns.  Its traits, as the header
writes them (bits throughout):

* ``ValID``: logical bit -> TMEM bit address ``lane * 2**21 + column * 32 + bit``
  (``TMEM::DP_b``), i.e. ``(n, dp):(1, DP_b)``, or ``((16, n/16), dp):((1, 32), DP_b)`` for
  ``_16b``, with ``n = b * N`` (``64 * N`` for ``16dp32b``) data bits per lane;
* ``SrcLayout``/``DstLayout`` (load; a store swaps them): ``(32, n*dp):(0, 1)`` on the TMEM
  side (the warp addresses TMEM as one) and, on the register side, (thread, register bit) ->
  logical bit, per pattern (see :func:`tmem_copy_op`);
* ``RefLayout`` = the load's ``SrcLayout``.

Modelled from the CUTLASS headers only: not confirmed on hardware (no tcgen05 GPU here).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from threadmap.errors import AtomError
from threadmap.layout.atom.copy_traits import CopyOp
from threadmap.layout.layout import Layout
from threadmap.layout.table import fast_table

__all__ = ["TmemCopyOp", "TMEM_COPY_OPS", "TMEM_PATTERNS", "tmem_copy_op", "tmem_bit_map", "tmem_lanes_columns",
           "TmemViolation", "tmem_allocation_violations", "tmem_access_violations", "tmem_op_access_violations",
           "TMEM_LANES", "TMEM_COLUMNS", "TMEM_DP_BITS"]

#: TMEM is 128 lanes (datapaths) x 512 columns of 32 bits (``TMEM::MAX_CAPACITY_BITS``)
TMEM_LANES, TMEM_COLUMNS = 128, 512
#: ``TMEM::DP_b``: one lane in TMEM bit addressing
TMEM_DP_BITS = 1 << 21

#: pattern -> (lanes, data bits per lane per repetition, largest repetition)
TMEM_PATTERNS: dict[str, tuple[int, int, int]] = {
    "16dp256b": (16, 256, 32), "16dp128b": (16, 128, 64), "16dp64b": (16, 64, 128),
    "16dp32b": (16, 64, 128), "32dp32b": (32, 32, 128),
}
_PTX_SHAPE = {"16dp256b": "16x256b", "16dp128b": "16x128b", "16dp64b": "16x64b", "16dp32b": "16x32bx2",
              "32dp32b": "32x32b"}


@dataclass(frozen=True)
class TmemCopyOp(CopyOp):
    """A ``Copy_Traits<SM100_TMEM_*>``: :class:`CopyOp`'s fields (``ThrID``, Src/Dst/Ref
    layouts in bits, the register widths) and ``val_id`` (``ValID``: logical bit -> TMEM bit
    address), ``lanes`` (16 or 32 datapaths), ``pattern``, ``rep`` (``.xN``), ``pack16``
    (``_16b``), ``load`` and ``ptx`` (the instruction's shape qualifiers)."""

    val_id: Layout = field(default_factory=lambda: Layout(1, 0))
    pattern: str = ""
    lanes: int = 32
    rep: int = 1
    pack16: bool = False
    load: bool = True
    ptx: str = ""

    @property
    def data_bits_per_lane(self) -> int:
        """``n``: the data bits each lane moves (``b * N``)."""
        return TMEM_PATTERNS[self.pattern][1] * self.rep

    @property
    def columns(self) -> int:
        """The 32-bit TMEM columns the op touches from its address (twice the data for
        ``_16b``: 16 bits per column)."""
        return self.data_bits_per_lane // 32 * (2 if self.pack16 else 1)

    @property
    def registers(self) -> int:
        """32-bit registers per thread (``DRegisters`` of a load, ``SRegisters`` of a store)."""
        return self.data_bits_per_lane * self.lanes // 32 // 32


def _register_side(pattern: str, rep: int) -> Layout:
    """The load's ``DstLayout``: (thread, register bit) -> logical bit (lane-major: lane *
    ``n`` + bit), as the header writes each pattern (a 1x op has no repetition mode)."""
    n = TMEM_PATTERNS[pattern][1] * rep
    if pattern == "32dp32b":
        return Layout((32, n), (n, 1))            # thread t: lane t, all its bits
    if pattern == "16dp32b":
        return Layout(((16, 2), n // 2), ((n, n // 2), 1))   # lane t%16, half t//16
    if pattern == "16dp64b":
        t = ((2, 2, 8), (512 * rep, 32, 64 * rep))  # lane t//4 + 8*(t%2), 32-bit column (t//2)%2
        return Layout((t[0], 32), (t[1], 1)) if rep == 1 else Layout((t[0], (32, rep)), (t[1], (1, 64)))
    b = TMEM_PATTERNS[pattern][1]
    w = b // 4                                    # 64 bits (256b) / 32 bits (128b) per thread per lane
    thr = ((4, 8), (w, b * rep))                  # bits w*(t%4), lane t//4 (+8 for the second half)
    if rep == 1:
        return Layout((thr[0], (w, 2)), (thr[1], (1, 8 * b)))
    return Layout((thr[0], (w, 2, rep)), (thr[1], (1, 8 * b * rep, b)))


def tmem_copy_op(name: str) -> TmemCopyOp:
    """``Copy_Traits<name>`` for ``SM100_TMEM_{LOAD,STORE}_{16dp256b,16dp128b,16dp64b,16dp32b,
    32dp32b}{N}x[_16b]`` (the module docstring).  Law: every (thread, register bit) of the
    register side names a distinct logical bit, and ``ValID`` places them in ``N`` repetitions
    of the pattern: the op's lanes from its address, ``columns`` columns."""
    if not isinstance(name, str):
        raise AtomError(f"a TMEM copy is named by a string, got {name!r}")
    name = "".join(name.split()).replace("cute::", "")
    m = re.fullmatch(r"SM100_TMEM_(LOAD|STORE)_(16dp256b|16dp128b|16dp64b|16dp32b|32dp32b)(\d+)x(_16b)?", name)
    if not m:
        raise AtomError(f"unknown TMEM copy {name!r}: SM100_TMEM_{{LOAD,STORE}}_{{{','.join(TMEM_PATTERNS)}}}"
                        "{N}x[_16b]")
    kind, pattern, rep_s, p16 = m.groups()
    rep = int(rep_s)
    lanes, b, max_rep = TMEM_PATTERNS[pattern]
    if rep < 1 or rep > max_rep or rep & (rep - 1):
        raise AtomError(f"{name}: the repetitions of {pattern} are 1, 2, 4, ... {max_rep} (copy_sm100.hpp), got {rep}")
    n = b * rep
    val_id = (Layout(((16, n // 16), lanes), ((1, 32), TMEM_DP_BITS)) if p16
              else Layout((n, lanes), (1, TMEM_DP_BITS)))
    tmem_side = Layout((32, n * lanes), (0, 1))
    regs = _register_side(pattern, rep)
    nregs = n * lanes // 1024
    load = kind == "LOAD"
    ptx = (f"tcgen05.{'ld' if load else 'st'}.sync.aligned.{_PTX_SHAPE[pattern]}.x{rep}"
           + ((".pack::16b" if load else ".unpack::16b") if p16 else "") + ".b32")
    src, dst = (tmem_side, regs) if load else (regs, tmem_side)
    return TmemCopyOp(name, Layout(32, 1), src, dst, tmem_side, 32 if load else 32 * nregs,
                      32 * nregs if load else 32, val_id=val_id, pattern=pattern, lanes=lanes, rep=rep,
                      pack16=bool(p16), load=load, ptx=ptx)


def _all_ops() -> dict[str, TmemCopyOp]:
    out: dict[str, TmemCopyOp] = {}
    for kind in ("LOAD", "STORE"):
        for pattern, (_, _, max_rep) in TMEM_PATTERNS.items():
            rep = 1
            while rep <= max_rep:
                for suffix in ("", "_16b"):
                    name = f"SM100_TMEM_{kind}_{pattern}{rep}x{suffix}"
                    out[name] = tmem_copy_op(name)
                rep *= 2
    return out


#: every TMEM load/store op of ``copy_traits_sm100.hpp`` by its CuTe name (148)
TMEM_COPY_OPS: dict[str, TmemCopyOp] = _all_ops()


def _tmem_op(op: Any) -> TmemCopyOp:
    """``op`` itself, or the TMEM copy operation it names; anything else is an AtomError."""
    if isinstance(op, TmemCopyOp):
        return op
    if isinstance(op, str) and op in TMEM_COPY_OPS:
        return TMEM_COPY_OPS[op]
    raise AtomError(f"not a TMEM copy operation (SM100_TMEM_LOAD_* / SM100_TMEM_STORE_*): {op!r}")


def _ints(xs: Any, what: str) -> list[int]:
    try:
        out = list(xs)
    except TypeError:
        raise AtomError(f"{what} are integers, got {xs!r}") from None
    if not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in out):
        raise AtomError(f"{what} are integers, got {xs!r}")
    return [int(x) for x in out]


def tmem_bit_map(op: TmemCopyOp | str) -> np.ndarray:
    """``ValID o DstLayout`` (load) / ``ValID o SrcLayout`` (store): for each thread ``t`` of
    the warp and each bit ``v`` of its registers (register ``v // 32``), the TMEM bit address
    relative to the op's address (``lane * 2**21 + column * 32 + bit``): an ``int64`` array of
    shape ``(32, 32 * registers)``.  Law: injective, and its image is ``ValID``'s image."""
    o = _tmem_op(op)
    regs = o.dst_bits if o.load else o.src_bits
    nbits = 32 * o.registers
    # colex order: index t + 32 * v
    ref = fast_table(regs, dtype=np.int64).reshape(nbits, 32).T
    return np.asarray(fast_table(o.val_id, dtype=np.int64)[ref], dtype=np.int64)


def tmem_lanes_columns(op: TmemCopyOp | str, lane_base: int = 0, column_base: int = 0) -> np.ndarray:
    """For each thread and each of its 32-bit registers, the (lane, column) of the TMEM cell
    its low bit comes from (load) or goes to (store), for an op issued at
    ``tmem_addr = lane_base << 16 | column_base``: an ``int64`` array ``(32, registers, 2)``.
    Law: ``32dp32b`` gives thread ``t`` lane ``lane_base + t``; a ``_16b`` register's high
    half is the next column's low 16 bits."""
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lane_base, column_base)):
        raise AtomError(f"lane and column bases are integers, got {lane_base!r}, {column_base!r}")
    bits = tmem_bit_map(op)[:, ::32]
    return np.stack([bits // TMEM_DP_BITS + lane_base, bits % TMEM_DP_BITS // 32 + column_base], axis=-1)


# ----------------------------------------------------------------------------- rules
@dataclass(frozen=True)
class TmemViolation:
    """One TMEM rule broken: ``rule`` (citing the header or the PTX ISA section it comes
    from), ``when`` it shows, and the values that break it."""

    rule: str
    when: str
    detail: str


_ALLOC_RULE = ("a TMEM allocation is a power of two of columns, 32 <= num_columns <= 512 "
               "(cute/arch/tmem_allocator_sm100.hpp, Allocator1Sm/Allocator2Sm::allocate: \"Must be 32 <= "
               "num_columns <= 512 and power of 2\"; ColumnsPerAllocationSlice 32, Sm100TmemCapacityColumns 512; "
               "PTX ISA, tcgen05.alloc)")


def tmem_allocation_violations(columns: int) -> list[TmemViolation]:
    """The rules ``tcgen05.alloc`` of ``columns`` breaks: none when ``columns`` is a power of
    two in ``[32, 512]``.  Law: empty exactly for 32, 64, 128, 256, 512."""
    if not isinstance(columns, int) or isinstance(columns, bool):
        return [TmemViolation(_ALLOC_RULE, "run time", f"num_columns {columns!r} is not an integer")]
    out: list[TmemViolation] = []
    if not 32 <= columns <= TMEM_COLUMNS:
        out.append(TmemViolation(_ALLOC_RULE, "run time", f"num_columns {columns} is outside [32, 512]"))
    if columns <= 0 or columns & (columns - 1):
        out.append(TmemViolation(_ALLOC_RULE, "run time", f"num_columns {columns} is not a power of two"))
    return out


_LANE_RULE = ("a warp accesses only the 32 TMEM lanes of its subpartition, lanes [32*(warp_id%4), "
              "32*(warp_id%4)+32) (cute/atom/copy_traits_sm100.hpp, SM100::TMEM::LOAD/STORE copy_unpack: "
              "assert(((threadIdx.x / 32) % 4) == (((tmem_addr >> 16) / 32) % 4)); PTX ISA, tcgen05.ld / "
              "tcgen05.st and Tensor Memory access restrictions)")
_CAP_RULE = ("TMEM is 128 lanes x 512 columns of 32 bits (cute/arch/tmem_allocator_sm100.hpp: "
             "TMEM::MAX_CAPACITY_BITS = 128*512*32)")
_COL_RULE = ("a tcgen05.ld/st touches only columns the CTA allocated (tcgen05.alloc's num_columns, "
             "cute/arch/tmem_allocator_sm100.hpp; PTX ISA, Tensor Memory allocation)")


def _ranges(vals: Iterable[int]) -> str:
    v = sorted(set(vals))
    parts: list[str] = []
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[j + 1] == v[j] + 1:
            j += 1
        parts.append(str(v[i]) if i == j else f"{v[i]}..{v[j]}")
        i = j + 1
    return ", ".join(parts[:8]) + (" ..." if len(parts) > 8 else "")


def tmem_access_violations(warp_id: int, lanes: Iterable[int], columns: Iterable[int], allocated_columns: int,
                           column_base: int = 0) -> list[TmemViolation]:
    """The rules a warp's TMEM access breaks: lanes outside TMEM or outside the warp's
    subpartition ``[32*(warp_id%4), +32)``, columns outside TMEM or outside the allocation
    ``[column_base, column_base + allocated_columns)``, and an allocation
    :func:`tmem_allocation_violations` rejects or that does not fit in the 512 columns.  Law:
    empty exactly when every lane is in the warp's subpartition and every column in a legal
    allocation."""
    if not isinstance(warp_id, int) or isinstance(warp_id, bool) or warp_id < 0:
        raise AtomError(f"a warp id is a non-negative integer, got {warp_id!r}")
    lane_l, col_l = _ints(lanes, "lanes"), _ints(columns, "columns")
    if not isinstance(column_base, int) or isinstance(column_base, bool):
        raise AtomError(f"a column base is an integer, got {column_base!r}")
    out = tmem_allocation_violations(allocated_columns)
    lo = 32 * (warp_id % 4)
    off_tmem = [x for x in lane_l if not 0 <= x < TMEM_LANES]
    if off_tmem:
        out.append(TmemViolation(_CAP_RULE, "run time", f"lanes {_ranges(off_tmem)} do not exist"))
    off_sub = [x for x in lane_l if 0 <= x < TMEM_LANES and not lo <= x < lo + 32]
    if off_sub:
        out.append(TmemViolation(_LANE_RULE, "run time", f"warp {warp_id} (subpartition {warp_id % 4}, lanes "
                                 f"{lo}..{lo + 31}) touches lanes {_ranges(off_sub)}"))
    off_cols = [x for x in col_l if not 0 <= x < TMEM_COLUMNS]
    if off_cols:
        out.append(TmemViolation(_CAP_RULE, "run time", f"columns {_ranges(off_cols)} do not exist"))
    if isinstance(allocated_columns, int):
        end = column_base + allocated_columns
        if column_base < 0 or end > TMEM_COLUMNS:
            out.append(TmemViolation(_CAP_RULE, "run time", f"the allocation [{column_base}, {end}) does not fit "
                                     "in the 512 columns"))
        off_alloc = [x for x in col_l if 0 <= x < TMEM_COLUMNS and not column_base <= x < end]
        if off_alloc:
            out.append(TmemViolation(_COL_RULE, "silently", f"columns {_ranges(off_alloc)} are outside the "
                                     f"allocation [{column_base}, {end})"))
    return out


def tmem_op_access_violations(op: TmemCopyOp | str, warp_id: int, tmem_addr: int, allocated_columns: int,
                              column_base: int = 0) -> list[TmemViolation]:
    """:func:`tmem_access_violations` of the cells ``op`` touches when warp ``warp_id`` issues
    it at ``tmem_addr`` (lane in bits [16, 32), column in [0, 16)).  Law: a 32-lane op at
    lane ``32*(warp_id%4)`` and a column range inside the allocation has none."""
    o = _tmem_op(op)
    if not isinstance(tmem_addr, int) or not 0 <= tmem_addr < 1 << 32:
        raise AtomError(f"a TMEM address is a 32-bit integer, got {tmem_addr!r}")
    lane0, col0 = tmem_addr >> 16, tmem_addr & 0xFFFF
    lanes = range(lane0, lane0 + o.lanes)
    cols = range(col0, col0 + o.columns)
    return tmem_access_violations(warp_id, lanes, cols, allocated_columns, column_base)
