"""threadmap: a thread-map simulator and verifier for CUTLASS and CuTe kernels."""

from threadmap.version import __version__

__all__ = ["Spec", "__version__", "local_tile", "registers", "side", "tile"]

_BUILDER = {"Spec", "local_tile", "registers", "side", "tile"}


def __getattr__(name: str) -> object:
    # the spec builder loads the schema and the layout engine: only when asked for, so that
    # ``import threadmap`` (and the pytest plugin's import) stays cheap
    if name in _BUILDER:
        from threadmap.spec import builder
        return getattr(builder, name)
    raise AttributeError(f"module 'threadmap' has no attribute {name!r}")
