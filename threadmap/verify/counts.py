"""Whole-grid counts of one side, shared by the grid-coverage and predicates results (which
read them) and the enumeration and tiling passes (which make them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class GridCounts:
    """Whole-grid counts of one side, however they were obtained."""

    elements: int
    accesses: int          # active accesses (rows with a true predicate)
    counted: int           # active accesses inside the tensor
    covered: int           # distinct in-bounds elements accessed
    out_of_bounds: int     # active accesses outside the tensor
    replication: int
    dup_replicated: int    # replication mode: elements whose count differs from the common one
