"""``threadmap sweep``: an audit of CUTLASS's generated kernel library.

CUTLASS's generator is run in process and its kernels grouped by the configuration that
decides their data movement (:mod:`~threadmap.sweep.library`); each 2.x GEMM configuration's
global to shared copies are printed by the real templates (:mod:`~threadmap.sweep.extract`),
its shared layouts given exact CuTe forms (:mod:`~threadmap.sweep.fit`), its spec written
once its premises hold (:mod:`~threadmap.sweep.specs`) and verified; results are kept in
SQLite (:mod:`~threadmap.sweep.store`) by the driver (:mod:`~threadmap.sweep.run`).  See
``docs/sweep.md``.
"""

#: configurations per translation unit: the headers cost ~10 CPU-s per unit, each
#: configuration ~0.15 CPU-s more (here, not in ``run``: the command line reads it without
#: loading the driver)
DEFAULT_BATCH = 48
