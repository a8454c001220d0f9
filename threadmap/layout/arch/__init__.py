"""CuTe's ``cute/arch/`` facts threadmap models: the SM90 GMMA shared-memory descriptor."""
