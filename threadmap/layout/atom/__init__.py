"""CuTe atoms (``cute/atom/``): copy traits and atoms, tiled copies, MMA traits (the MMA atoms),
tiled MMAs, the SM90 GMMA shared-memory layout atoms, and the SM100 UMMA traits and TMEM copies."""
