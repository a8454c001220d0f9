"""Exceptions. Every user-facing error is a ``ValueError`` subclass whose message says what is wrong."""

from __future__ import annotations


class ThreadmapError(ValueError):
    """Base of every error threadmap raises for bad input."""


class ParseError(ThreadmapError):
    """A layout, shape or swizzle string is malformed."""


class LayoutError(ThreadmapError):
    """Shapes/strides are invalid (non-positive, incongruent) or an operation's precondition fails."""


class SwizzleError(ThreadmapError):
    """Swizzle parameters are invalid."""


class AtomError(ThreadmapError):
    """A copy/MMA atom or tiled copy/MMA is misconfigured."""


class SpecError(ThreadmapError):
    """A spec file or spec expression is invalid; the message starts with ``FILE:LINE:COL:``
    when the offending place in a file is known."""
