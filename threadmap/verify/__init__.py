"""The checks (definitions, enumerations and the registry) and the enumerative decision procedure.

Importing this package registers every check in :data:`CHECKS`.
"""

from threadmap.hardware import sectors as sectors_definition
from threadmap.hardware import wavefronts as wavefronts_definition
from threadmap.simulate.build import build_table, register_table
from threadmap.spec.schema import CHECK_NAMES  # noqa: E402  (every check's name)
from threadmap.verify import banks, coalescing, coverage, dataflow, pipeline, vectorize  # noqa: F401  (register)
from threadmap.verify.banks import check_bank_conflicts
from threadmap.verify.catalogue import CATALOGUE, Entry
from threadmap.verify.check import CHECKS, Accumulator, Check, canonical
from threadmap.verify.coalescing import check_coalescing
from threadmap.verify.coverage import check_tile_coverage, coverage_definition
from threadmap.verify.dataflow import check_dataflow, dataflow_definition
from threadmap.verify.grid_coverage import check_grid
from threadmap.verify.predicates import predicates_definition, weakest_precondition
from threadmap.verify.run import RunOptions, WorkTooLarge, verify_model
from threadmap.verify.vectorize import check_vectorize, widest_vector_definition

__all__ = ["Accumulator", "CATALOGUE", "CHECKS", "CHECK_NAMES", "Check", "Entry", "RunOptions", "WorkTooLarge",
           "build_table", "canonical", "check_bank_conflicts", "check_coalescing", "check_dataflow", "check_grid",
           "check_tile_coverage", "check_vectorize", "coverage_definition", "dataflow_definition",
           "predicates_definition", "register_table", "sectors_definition", "verify_model", "wavefronts_definition",
           "weakest_precondition", "widest_vector_definition"]
