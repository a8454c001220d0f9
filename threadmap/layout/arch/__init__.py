"""CuTe's ``cute/arch/`` facts threadmap models: the SM90 GMMA shared-memory descriptor and the
SM100 UMMA shared-memory and instruction descriptors."""
