"""Proofs over size ranges: z3 encodes the sizes, the grid and the classes of sizes that a
verdict depends on; the simulator verifies each class (see :mod:`threadmap.prove.encode`
and :mod:`threadmap.prove.run`)."""

from threadmap.prove.run import PROPERTIES, prove, prove_loaded

__all__ = ["PROPERTIES", "prove", "prove_loaded"]
