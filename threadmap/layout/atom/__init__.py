"""CuTe atoms (``cute/atom/``): copy traits and atoms, tiled copies, MMA traits (the MMA atoms),
tiled MMAs and the SM90 GMMA shared-memory layout atoms."""
