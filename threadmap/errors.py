"""Exceptions. Every user-facing error is a ``ValueError`` subclass whose message says what is wrong."""

from __future__ import annotations


class ThreadmapError(ValueError):
    """Base of every error threadmap raises for bad input."""


class ParseError(ThreadmapError):
    """A layout, shape or swizzle string is malformed."""


class LayoutError(ThreadmapError):
    """Shapes/strides are invalid (non-positive, incongruent) or an operation's precondition fails."""


class DescriptorLayoutError(LayoutError):
    """A shared layout a tensor-core descriptor builder (``make_gmma_desc``, ``make_umma_desc``)
    does not accept -- a ``static_assert`` of the header, so the kernel does not compile:
    ``rule`` is the assert's message, ``canonical`` the form the layout misses (empty before
    the layout type is known)."""

    builder = "make_desc"

    def __init__(self, rule: str, detail: str, canonical: str = "") -> None:
        self.rule, self.detail, self.canonical = rule, detail, canonical
        super().__init__(f"{self.builder}: {rule}: {detail}" + (f" (canonical form: {canonical})" if canonical else ""))


class SwizzleError(ThreadmapError):
    """Swizzle parameters are invalid."""


class AtomError(ThreadmapError):
    """A copy/MMA atom or tiled copy/MMA is misconfigured."""


class DependencyError(ThreadmapError, ImportError):
    """An optional dependency is missing; the message names the extra that installs it. It is
    an ``ImportError`` too, so ``pytest.importorskip`` skips on it."""


class SpecError(ThreadmapError):
    """A spec file or spec expression is invalid; the message starts with ``FILE:LINE:COL:``
    when the offending place in a file is known."""
