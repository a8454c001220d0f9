"""The parsed form of a validated spec: expression trees and layout templates, built once.

A spec's expressions (``threads``, ``grid``, ``tile``, ``at``) are parsed into
:class:`~threadmap.spec.expr.Expr` trees and its layout strings into
:class:`LayoutTemplate` s when the spec is loaded; the model binds them to each size
environment.  Nothing downstream parses spec text again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from threadmap.layout import parse_layout
from threadmap.layout import shape as layout_shape
from threadmap.spec.expr import Expr, parse_expr
from threadmap.spec.schema import Copy, Side, Spec

Path_ = tuple[Any, ...]

# Distinct stand-ins for size names while probing a layout's structure: large primes, so
# that a top-level extent equal to one of them is that name and nothing else.
_PROBE_VALUES = (1_000_003, 1_000_033, 1_000_037, 1_000_039, 1_000_081, 1_000_099, 1_000_117,
                 1_000_121, 1_000_133, 1_000_151, 1_000_159, 1_000_171, 1_000_183, 1_000_187)


class _Probe(Mapping[str, int]):
    """An environment that answers every name and records which ones the parser asked for."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str)

    def __getitem__(self, key: str) -> int:
        if key not in self.seen:
            self.seen[key] = _PROBE_VALUES[len(self.seen) % len(_PROBE_VALUES)] + 1000 * (
                len(self.seen) // len(_PROBE_VALUES))
        return self.seen[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.seen)

    def __len__(self) -> int:
        return len(self.seen)

    def __bool__(self) -> bool:  # parsers test ``env or {}``: an empty probe still answers
        return True


@dataclass(frozen=True)
class LayoutTemplate:
    """A layout string of the spec: the size ``names`` it uses, which top-level shape modes
    are exactly one size name (``mode_names``, e.g. ``{0: "M", 1: "N"}`` for
    ``(M,N):(N,1)``), and :meth:`bind` to a size environment."""

    text: str
    names: tuple[str, ...]   # in order of first use
    mode_names: dict[int, str] = field(default_factory=dict)

    @staticmethod
    def of(text: str) -> LayoutTemplate:
        probe = _Probe()
        modes: dict[int, str] = {}
        try:
            shp = layout_shape(parse_layout(text, probe))
            by_value = {v: k for k, v in probe.seen.items()}
            for i, s in enumerate(shp if isinstance(shp, tuple) else (shp,)):
                if isinstance(s, int) and s in by_value:
                    modes[i] = by_value[s]
        except (ValueError, ArithmeticError, RecursionError):
            pass  # structure unknown: the environment-bound parse reports the problem
        return LayoutTemplate(text, tuple(probe.seen), modes)

    def bind(self, env: Mapping[str, int]) -> Any:
        """The layout with the sizes of ``env`` (a Layout or ComposedLayout)."""
        return parse_layout(self.text, env)


@dataclass(frozen=True)
class ParsedSide:
    tile: tuple[Expr, ...] | None
    at: tuple[Expr, ...] | None
    layouts: dict[str, LayoutTemplate]   # "threads", "tiled_copy.threads", ... -> template


@dataclass(frozen=True)
class ParsedSpec:
    threads: Expr
    grid: tuple[Expr, ...]
    tensors: dict[str, LayoutTemplate]
    sides: dict[tuple[int, str], ParsedSide]

    @staticmethod
    def of(spec: Spec) -> ParsedSpec:
        sides: dict[tuple[int, str], ParsedSide] = {}
        for i, st in enumerate(spec.stages):
            if not isinstance(st, Copy):
                continue
            for which in ("src", "dst"):
                side: Side = getattr(st.copy_, which)
                lays: dict[str, LayoutTemplate] = {}
                if side.threads is not None:
                    lays["threads"] = LayoutTemplate.of(side.threads)
                if side.tiled_copy is not None:
                    for key in ("threads", "values", "layout_tv"):
                        text = getattr(side.tiled_copy, key)
                        if text is not None:
                            lays[f"tiled_copy.{key}"] = LayoutTemplate.of(text)
                if side.mma is not None:
                    lays["mma.atom_layout"] = LayoutTemplate.of(side.mma.atom_layout)
                sides[(i, which)] = ParsedSide(
                    tuple(parse_expr(x) for x in side.tile) if side.tile is not None else None,
                    tuple(parse_expr(x) for x in side.at) if side.at is not None else None, lays)
        return ParsedSpec(parse_expr(spec.threads), tuple(parse_expr(g) for g in spec.grid),
                          {n: LayoutTemplate.of(t.layout) for n, t in spec.tensors.items()}, sides)
