"""The catalogue of checks: one entry per check, the one list every other place reads.

An entry says what a check is called (its name, the other spellings an expectation may use,
the name an expectation matches it under), what it judges (``scope``: one stage side, the
whole grid of a global side, or all stages of a block), where its code lives (``module``:
the definition and the enumeration), what its result's summary is (``summary``: the report
model, whose ``rule`` is the check's rule in one sentence), the kinds of its findings, and
which properties of ``threadmap prove`` prove it for every size.

Adding a check is its own module (definition, enumeration, a :class:`~threadmap.verify.check.Check`
registered in :data:`~threadmap.verify.check.CHECKS`; the whole-grid checks are decided by
the driver from :mod:`threadmap.verify.grid_coverage`'s counts), its summary model in
:mod:`threadmap.report.model`, and an entry here.  The lower layers keep the names they need
without reading this module (``spec.schema.CHECK_NAMES`` and ``CHECK_ALIASES`` validate spec
files, ``report.model.SUMMARIES`` and ``EXPECTED_AS`` format reports); the catalogue's tests
keep them equal to it, as they keep ``prove``'s properties and the registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from threadmap.report.model import (
    BankSummary,
    CheckSummary,
    CoalescingSummary,
    CoverageSummary,
    DataflowSummary,
    GridCoverageSummary,
    PipelineSummary,
    PredicatesSummary,
    VectorizeSummary,
)

Scope = Literal["side", "grid", "kernel"]


@dataclass(frozen=True)
class Entry:
    """One check of the catalogue."""

    name: str
    #: ``side``: one side of one copy stage; ``grid``: one global side over the whole grid
    #: (decided by enumeration or the tiling argument); ``kernel``: all stages of a block
    scope: Scope
    #: the module of its definition and enumeration
    module: str
    summary: type[CheckSummary]
    #: the kinds of its findings
    kinds: tuple[str, ...]
    #: the ``threadmap prove`` properties that prove it for every size in range
    proved_by: tuple[str, ...]
    #: other spellings ``expect.failing_checks`` accepts for it
    aliases: tuple[str, ...] = ()
    #: the name an expectation matches it under (``coverage`` covers ``grid_coverage``)
    expected_as: str = ""
    #: its counts depend on byte addresses (sectors, alignment), not only on coordinates: the
    #: tiling argument feeds it one block per residue of a global tile's address modulo 128
    by_address: bool = False

    @property
    def rule(self) -> str:
        """The check's rule in one sentence."""
        return self.summary.rule

    @property
    def matched_as(self) -> str:
        return self.expected_as or self.name


CATALOGUE: dict[str, Entry] = {e.name: e for e in (
    Entry("coverage", "side", "threadmap.verify.coverage", CoverageSummary,
          ("missing", "duplicate", "out_of_tile", "out_of_bounds", "masked"), ("coverage",)),
    Entry("grid_coverage", "grid", "threadmap.verify.grid_coverage", GridCoverageSummary,
          ("missing", "duplicate", "aliased_write", "aliasing_undecided"), ("grid", "coverage", "aliasing"),
          expected_as="coverage"),
    Entry("predicates", "grid", "threadmap.verify.predicates", PredicatesSummary,
          ("straddle", "out_of_bounds", "lost"), ("predicates",)),
    Entry("coalescing", "side", "threadmap.verify.coalescing", CoalescingSummary,
          ("uncoalesced", "misaligned"), ("coalescing",), by_address=True),
    Entry("bank_conflicts", "side", "threadmap.verify.banks", BankSummary, ("conflict",), ("bank_conflicts",)),
    Entry("vectorize", "side", "threadmap.verify.vectorize", VectorizeSummary,
          ("illegal_vector", "narrow", "expectation"), ("vectorize",), aliases=("vectorization",), by_address=True),
    Entry("dataflow", "kernel", "threadmap.verify.dataflow", DataflowSummary,
          ("wrong_value", "missing", "race", "stale_read", "uninitialised_read", "write_after_read"),
          ("dataflow",)),
    Entry("pipeline", "kernel", "threadmap.verify.pipeline", PipelineSummary,
          ("tma_descriptor", "tma_smem_alignment", "gmma_descriptor", "gmma_swizzle_phase", "gmma_descriptor_fields",
           "gmma_layout_misread",
           "read_before_landed", "refill_while_read", "missing_proxy_fence",
           "tx_mismatch_hang", "arrival_deadlock", "sync_deadlock", "over_arrival", "multicast_outside_cluster",
           "tmem_read_before_wait", "tmem_access", "tmem_accumulator_uncovered"),
          ("pipeline",)),
)}

#: every check's name, in the order reports list them
NAMES: tuple[str, ...] = tuple(CATALOGUE)
#: the whole-grid checks of a global side (decided by the driver from one set of counts)
GRID: tuple[str, ...] = tuple(n for n, e in CATALOGUE.items() if e.scope == "grid")
#: the checks whose counts depend on byte addresses (see :attr:`Entry.by_address`)
BY_ADDRESS: frozenset[str] = frozenset(n for n, e in CATALOGUE.items() if e.by_address)
#: how expectation names match result names (see :attr:`Entry.expected_as`)
ALIASES: dict[str, str] = {
    **{a: e.name for e in CATALOGUE.values() for a in e.aliases},
    **{e.name: e.expected_as for e in CATALOGUE.values() if e.expected_as},
}


def canonical(name: str) -> str:
    """A check name (a result's or an expectation's) as expectations match it."""
    return ALIASES.get(name, name)
