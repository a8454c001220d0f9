"""CUTLASS 2.x thread maps, with the names of the C++ headers."""

from threadmap.cutlass import pitch_linear_thread_map
from threadmap.cutlass.pitch_linear_thread_map import *  # noqa: F403  (the header's names, listed there)

__all__ = list(pitch_linear_thread_map.__all__)
