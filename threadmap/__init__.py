"""threadmap: a thread-map simulator and verifier for CUTLASS and CuTe kernels."""

__version__ = "0.1.0"
