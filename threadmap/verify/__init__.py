"""The checks (enumerative; symbolic versions share each module's definition) and the report model.

Entry points: :func:`run_checks` for a kernel's stages, or the per-check functions below.
"""

from threadmap.verify.banks import check_bank_conflicts, wavefronts_definition
from threadmap.verify.coalescing import check_coalescing, instruction_sectors_definition
from threadmap.verify.coverage import (
    GridCoverage,
    check_grid_coverage,
    check_tile_coverage,
    coverage_definition,
)
from threadmap.verify.dataflow import check_dataflow, dataflow_definition
from threadmap.verify.predicates import (
    PredicateCheck,
    check_predicates,
    predicates_definition,
    weakest_precondition,
)
from threadmap.verify.result import CheckResult, Finding
from threadmap.verify.runner import merge_results, overall_status, run_checks
from threadmap.verify.tables import build_table, register_table
from threadmap.verify.vectorize import check_vectorize, widest_vector_definition

__all__ = [
    "CheckResult", "Finding", "GridCoverage", "PredicateCheck", "build_table", "check_bank_conflicts",
    "check_coalescing", "check_dataflow", "check_grid_coverage", "check_predicates", "check_tile_coverage",
    "check_vectorize", "coverage_definition", "dataflow_definition", "instruction_sectors_definition",
    "merge_results", "overall_status", "predicates_definition", "register_table", "run_checks",
    "wavefronts_definition", "weakest_precondition", "widest_vector_definition",
]
