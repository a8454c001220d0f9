"""threadmap's version, in a module of its own: every layer may read it without importing the
package root (``threadmap/__init__`` re-exports it)."""

__version__ = "0.1.0"
