"""Proofs over size ranges: z3 encodes the sizes, the grid and the classes of sizes that a
verdict depends on; the simulator verifies each class (see :mod:`threadmap.prove.encode`
and :mod:`threadmap.prove.run`)."""

from threadmap.prove.run import PROPERTIES, disagreements, fails_property, prove, prove_loaded

__all__ = ["PROPERTIES", "disagreements", "fails_property", "prove", "prove_loaded"]
