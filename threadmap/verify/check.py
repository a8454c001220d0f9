"""The check protocol and the registry of checks.

A check has three parts behind one interface:

* its *definition*: a pure-Python function over plain values (``definition``), the
  specification the other parts must agree with (tests cross-check them);
* its *enumeration*: an :class:`Accumulator` fed with access tables (chunks of blocks, each
  block with a weight: the number of blocks it stands for) that returns a
  :class:`~threadmap.report.model.CheckResult`;
* its *proof*: the ``threadmap prove`` properties its catalogue entry names.

Side checks (coverage, coalescing, bank conflicts, vectorize) see one side of one copy
stage; kernel checks (dataflow) see every stage of the same blocks.  The whole-grid checks
(grid coverage, predicates) are decided by the driver from one set of counts
(:mod:`threadmap.verify.grid_coverage`: every element counted, or the tiling argument).
What each check is (name, scope, rule, summary, proof) is its entry in
:data:`~threadmap.verify.catalogue.CATALOGUE`; :data:`CHECKS` holds the code of those with an
accumulator, and drivers iterate it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from threadmap.model import KernelModel, SideModel
from threadmap.report.model import CheckResult, SkipSummary
from threadmap.simulate.access import AccessTable
from threadmap.verify.catalogue import ALIASES, CATALOGUE, Entry, canonical
from threadmap.verify.util import as_tables

StageTables = Sequence[tuple[AccessTable, AccessTable] | str]


class Accumulator(ABC):
    """Streaming enumeration of one check: :meth:`add` chunks, then :meth:`result`."""

    @abstractmethod
    def add(self, table: Any, weights: np.ndarray) -> None:
        """Account one chunk; ``weights[i]`` is the number of blocks that ``table``'s
        ``i``-th block stands for (1 when every block is simulated)."""

    @abstractmethod
    def result(self) -> CheckResult:
        """The check's verdict over everything added."""


@dataclass(frozen=True)
class Check(ABC):
    """One check's code: its name, where it applies, its definition and its enumeration (what
    the check is, its scope and rule, is its entry in :data:`~threadmap.verify.catalogue.CATALOGUE`)."""

    name: ClassVar[str]
    definition: ClassVar[Callable[..., Any]]
    #: the memories whose sides the check judges
    memories: ClassVar[tuple[str, ...]] = ("global", "shared", "register")
    #: whether the check's counts depend on the block (false: one answer for the whole kernel)
    per_block: ClassVar[bool] = True

    @property
    def entry(self) -> Entry:
        return CATALOGUE[self.name]

    @property
    def scope(self) -> str:
        """``side``: one side of one copy stage; ``kernel``: all stages of a block."""
        return self.entry.scope

    @property
    def rule(self) -> str:
        return self.entry.rule

    def applies(self, side: SideModel) -> bool:
        return side.memory in self.memories

    def judges(self, model: KernelModel) -> bool:
        """Whether a kernel check has anything to judge in ``model``."""
        return True

    @abstractmethod
    def accumulator(self, model: KernelModel, side: SideModel | None) -> Accumulator:
        ...


#: the checks with an accumulator, by name (importing :mod:`threadmap.verify` registers them);
#: the whole-grid checks of the catalogue are decided by the driver instead
CHECKS: dict[str, Check] = {}


def register(cls: type[Check]) -> type[Check]:
    """Class decorator: register one instance of the check under its name (which must be in
    the catalogue)."""
    if cls.name not in CATALOGUE:
        raise ValueError(f"check {cls.name!r} has no entry in threadmap.verify.catalogue.CATALOGUE")
    CHECKS[cls.name] = cls()
    return cls


def feed_all(acc: Accumulator, tables: Sequence[Any]) -> CheckResult:
    """Plain enumeration: every chunk of a side's table with weight 1 per block, then the result."""
    for t in tables:
        acc.add(t, np.ones(t.blocks.size, dtype=np.int64))
    return acc.result()


def check_tables(check: str, tables: AccessTable | Sequence[AccessTable],
                 make: Callable[[AccessTable], Accumulator]) -> CheckResult:
    """Plain enumeration of one side's table (or its chunks) by the check's accumulator,
    ``make(first chunk)``; SKIP where the check does not judge the side's memory."""
    ts = as_tables(tables)
    memories = CHECKS[check].memories
    if ts[0].memory not in memories:
        return skipped(check, ts[0], f"{ts[0].memory} memory: {check} judges {' and '.join(memories)} memory")
    return feed_all(make(ts[0]), ts)


def skipped(check: str, side: Any, reason: str) -> CheckResult:
    """A SKIP result for ``side`` (a SideModel or an AccessTable) with the reason."""
    return CheckResult(check=check, stage=None if side is None else side.stage,
                       side=None if side is None else side.which, status="SKIP",
                       summary=SkipSummary(reason=reason))


__all__ = ["ALIASES", "CHECKS", "Accumulator", "Check", "canonical", "check_tables", "feed_all", "register",
           "skipped"]
