"""The check protocol and the registry of checks.

A check has three parts behind one interface:

* its *definition*: a pure-Python function over plain values (``definition``), the
  specification the other parts must agree with (tests cross-check them);
* its *enumeration*: an :class:`Accumulator` fed with access tables (chunks of blocks, each
  block with a weight: the number of blocks it stands for) that returns a
  :class:`~threadmap.report.model.CheckResult`;
* (next) its *proof*: a z3 decision procedure over the same model.

Side checks (coverage, coalescing, bank conflicts, vectorize) see one side of one copy
stage; kernel checks (dataflow) see every stage of the same blocks.  The whole-grid checks
(grid coverage, predicates) are decided by :mod:`threadmap.verify.grid`, which either counts
every element (enumeration) or proves the interior by tiling.  :data:`CHECKS` lists every
check by name; drivers iterate it.
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
from threadmap.spec.schema import CHECK_ALIASES
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
    """One check: its name, where it applies, its definition and its enumeration."""

    name: ClassVar[str]
    #: ``side``: one side of one copy stage; ``kernel``: all stages of a block
    scope: ClassVar[str] = "side"
    #: a sentence for reports (SARIF rules)
    rule: ClassVar[str] = ""
    definition: ClassVar[Callable[..., Any]]
    #: the memories whose sides the check judges
    memories: ClassVar[tuple[str, ...]] = ("global", "shared", "register")

    def applies(self, side: SideModel) -> bool:
        return side.memory in self.memories

    @abstractmethod
    def accumulator(self, model: KernelModel, side: SideModel | None) -> Accumulator:
        ...


CHECKS: dict[str, Check] = {}

#: how ``expect.failing_checks`` names match results: ``coverage`` also covers
#: ``grid_coverage``, ``vectorization`` is ``vectorize``
ALIASES = {**CHECK_ALIASES, "grid_coverage": "coverage"}


def register(cls: type[Check]) -> type[Check]:
    """Class decorator: register one instance of the check under its name."""
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


def canonical(name: str) -> str:
    """A check name as the registry knows it (aliases resolved)."""
    return ALIASES.get(name, name)
