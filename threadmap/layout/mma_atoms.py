"""Former name of :mod:`threadmap.layout.atom.mma_traits` (the MMA atoms), kept so that
``threadmap.layout.mma_atoms`` still imports."""

from threadmap.layout.atom.mma_traits import *  # noqa: F401,F403
from threadmap.layout.atom.mma_traits import __all__  # noqa: F401
