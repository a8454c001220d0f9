"""threadmap.gpu: confirm a spec with the real CUTLASS/CuTe templates, on a GPU or the host.

* :func:`probe` -- generate a probe kernel per copy stage (the real templates compute every
  coordinate, offset and predicate), run it (CuPy on a device; the same source as a host
  program otherwise) and diff it with the simulator;
* :func:`include_dir` -- the folder of ``threadmap_probe.h``, the macro a user's own kernel
  prints its accesses with, for ``threadmap diff``.

Nothing here imports CuPy until a device is used.
"""

from threadmap.gpu.run import probe, select_blocks
from threadmap.gpu.toolchain import include_dir

__all__ = ["include_dir", "probe", "select_blocks"]
