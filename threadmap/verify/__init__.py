"""The checks (definitions, enumerations and the registry) and the enumerative decision procedure.

Importing this package registers every check in :data:`CHECKS`.
"""

from threadmap.verify import banks, coalescing, coverage, dataflow, vectorize  # noqa: F401  (register)
from threadmap.verify.check import CHECKS, Accumulator, Check, canonical
from threadmap.verify.run import RunOptions, WorkTooLarge, verify_model

#: every check name a spec may list in ``expect.failing_checks`` or a user in ``--checks``
CHECK_NAMES = ("coverage", "grid_coverage", "predicates", "coalescing", "bank_conflicts", "vectorize", "dataflow")

__all__ = ["CHECKS", "CHECK_NAMES", "Accumulator", "Check", "RunOptions", "WorkTooLarge", "canonical",
           "verify_model"]
