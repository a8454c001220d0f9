"""The report model: what a verification run returns, as pydantic models.

The checks fill :class:`CheckResult` s (a typed summary per check, the findings with their
concrete witnesses); :func:`threadmap.api.verify` returns a :class:`VerifyReport`; the
terminal table, JSON, JUnit and SARIF formats, and the HTTP service, all read these models.
``VerifyReport.model_json_schema()`` documents the JSON output.

Counts in summaries are whole-grid totals.  ``totals`` says how they were obtained:
``enumerated`` (every block simulated), ``tiling`` (representative blocks simulated, the
rest by the tiling argument: blocks that differ by a translation of their tile, with the
same predicates and the same address alignment, have the same counts), or ``partial``
(only the simulated blocks; the argument did not apply and enumerating was too large).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

Status = Literal["PASS", "FAIL", "SKIP"]
Severity = Literal["error", "warning", "info"]
Totals = Literal["enumerated", "tiling", "partial"]

#: findings kept per result; ``CheckResult.total_findings`` counts all of them
MAX_FINDINGS = 20


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def __getitem__(self, key: str) -> Any:
        """``summary["covered"]`` reads a field, as ``summary.covered`` does."""
        return getattr(self, key)


class Finding(_Model):
    """One violation (or, with severity ``info``/``warning``, one notable instance).

    ``witness`` holds the concrete evidence: ``block``, ``thread``, ``step``, ``value``,
    ``element`` (position in the vector access), ``warp_lane``, ``coordinate``, ``offset``,
    ``address``, ``predicate``; for pairs, ``first`` and ``second`` with those keys.
    """

    check: str
    kind: str
    message: str
    witness: dict[str, Any] = Field(default_factory=dict)
    stage: int | None = None
    side: str | None = None
    severity: Severity = "error"


class CheckSummary(_Model):
    """The summary of one check's result (one model per check; ``check`` is its name)."""

    #: the check's rule in one sentence (reports: SARIF rules)
    rule: ClassVar[str] = ""


class CoverageSummary(CheckSummary):
    rule: ClassVar[str] = "Every thread touches the right elements of its tile exactly once."
    check: Literal["coverage"] = "coverage"
    blocks: int = Field(description="blocks whose tiles were counted (whole grid)")
    tile: tuple[int, ...]
    elements: int = Field(description="in-bounds tile cells over all blocks")
    accesses: int = Field(description="accesses counted (active, in the tile, in bounds)")
    missing: int
    duplicate_cells: int
    duplicates: int
    out_of_tile: int
    out_of_bounds: int = Field(description="active accesses outside the tensor (a finding on shared sides)")
    masked: int = Field(0, description="masked rows (predicate false) outside the shared tensor: no access is "
                                       "made, not a finding (shared sides count every row; 0 on global sides)")
    replication: int


class GridCoverageSummary(CheckSummary):
    rule: ClassVar[str] = ("Over the whole grid every element is accessed exactly once, and no two written "
                           "elements share an address.")
    check: Literal["grid_coverage"] = "grid_coverage"
    elements: int
    accesses: int
    covered: int
    missing: int
    duplicates: int
    out_of_bounds: int
    replication: int
    aliased: int = Field(0, description="written elements sharing their address with another written element")


class PredicatesSummary(CheckSummary):
    rule: ClassVar[str] = ("Predicates are right for sizes the tile does not divide: no active access leaves "
                           "the tensor and no in-bounds element is lost.")
    check: Literal["predicates"] = "predicates"
    shape: tuple[int, ...]
    out_of_bounds: int
    lost: int
    straddling: int
    straddling_masked: int
    straddling_oob: int
    precondition: list[str] = Field(default_factory=list)


class CoalescingSummary(CheckSummary):
    rule: ClassVar[str] = "Global accesses touch no more 32-byte sectors than needed, and vectors are aligned."
    check: Literal["coalescing"] = "coalescing"
    requests: int
    sectors: int
    ideal_sectors: int
    lines: int
    bytes: int
    misaligned: int
    sectors_per_request: float
    ideal_sectors_per_request: float
    ratio: float
    access_bits: int
    worst: dict[str, Any] | None = None


class BankSummary(CheckSummary):
    rule: ClassVar[str] = "Shared-memory accesses need no more wavefronts than ideal."
    check: Literal["bank_conflicts"] = "bank_conflicts"
    instructions: int
    wavefronts: int
    ideal_wavefronts: int
    extra_wavefronts: int
    conflicted_instructions: int
    max_wavefronts: int
    phases: int
    access_bits: int
    worst: dict[str, Any] | None = None


class VectorizeSummary(CheckSummary):
    rule: ClassVar[str] = "Vector accesses are contiguous and aligned."
    check: Literal["vectorize"] = "vectorize"
    declared_bits: int
    declared_legal: bool
    max_legal_bits: int
    widest_histogram: dict[int, int] = Field(default_factory=dict, description="bits -> threads")
    illegal_accesses: int


class DataflowSummary(CheckSummary):
    rule: ClassVar[str] = ("The stages implement the declared transform: every output element is delivered "
                           "with the right value, without races, stale reads or writes after reads.")
    check: Literal["dataflow"] = "dataflow"
    stages: int
    barriers: int
    moved: int
    output_writes: int
    wrong_values: int
    races: int
    stale_reads: int
    uninitialised_reads: int
    writes_after_reads: int = Field(0, description="shared writes of a byte another thread read since the last "
                                                   "barrier")
    missing: int | None = Field(None, description="elements of the output that no active write delivers (the "
                                                  "whole grid's; null: not judged, as for a sample of blocks or "
                                                  "without a declared transform)")
    input: str | None
    output: str | None
    transform: str | None


class PipelineSummary(CheckSummary):
    rule: ClassVar[str] = ("The asynchronous pipeline is safe under every interleaving: TMA descriptors are legal, "
                           "no stage is read before its data lands or refilled while read, every mbarrier phase "
                           "completes, and the async proxy reads only fenced generic stores.")
    check: Literal["pipeline"] = "pipeline"
    stages: int
    roles: list[str]
    iterations: int = Field(description="the K-loop's trip count at these sizes")
    trip_counts: str = Field(description="the trip counts explored: this one, or every count at once")
    states: int = Field(description="protocol states explored")
    finished_runs: int = Field(description="explored states where every role finished")
    truncated: bool = False
    tma: list[dict[str, Any]] = Field(default_factory=list, description="each TMA copy's descriptor as "
                                                                        "cuTensorMapEncodeTiled receives it")
    gmma: list[dict[str, Any]] = Field(default_factory=list, description="each wgmma operand: its first "
                                       "descriptor and the shared wavefronts the tensor core spends reading a stage")
    by_kind: dict[str, int] = Field(default_factory=dict)


class SkipSummary(_Model):
    check: Literal["skip"] = "skip"
    reason: str


#: every check's summary model, by check name (the order reports list checks in)
SUMMARIES: dict[str, type[CheckSummary]] = {
    "coverage": CoverageSummary, "grid_coverage": GridCoverageSummary, "predicates": PredicatesSummary,
    "coalescing": CoalescingSummary, "bank_conflicts": BankSummary, "vectorize": VectorizeSummary,
    "dataflow": DataflowSummary, "pipeline": PipelineSummary,
}
#: the rule of each check in one sentence
RULES: dict[str, str] = {name: cls.rule for name, cls in SUMMARIES.items()}
#: how ``expect.failing_checks`` names match result names: the name an expectation uses for
#: each other spelling (``vectorization`` is ``vectorize``) and for checks an expectation names
#: together (``coverage`` also covers ``grid_coverage``).  The check catalogue
#: (``threadmap.verify.catalogue``) holds the same map and a test keeps them equal: the report
#: layer reads no check.
EXPECTED_AS: dict[str, str] = {"vectorization": "vectorize", "grid_coverage": "coverage"}


def expected_name(check: str) -> str:
    """The name ``check`` (a result's or an expectation's) is matched under."""
    return EXPECTED_AS.get(check, check)


Summary = Annotated[CoverageSummary | GridCoverageSummary | PredicatesSummary | CoalescingSummary
                    | BankSummary | VectorizeSummary | DataflowSummary | PipelineSummary | SkipSummary,
                    Field(discriminator="check")]


class CheckResult(_Model):
    """The outcome of one check on one stage side (``stage=None``: the whole kernel)."""

    check: str
    stage: int | None
    side: str | None
    status: Status
    summary: Summary
    findings: list[Finding] = Field(default_factory=list)
    total_findings: int = 0
    totals: Totals = "enumerated"
    line: int | None = Field(None, description="line of the stage in the spec file")

    @property
    def passed(self) -> bool:
        return self.status != "FAIL"

    def add(self, finding: Finding, count: int = 1) -> None:
        """Record ``count`` findings of which ``finding`` is the representative."""
        self.total_findings += count
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append(finding)

    def fail(self) -> None:
        self.status = "FAIL"


class CompiledCounts(_Model):
    """One side's per-instruction counts at one access width (the bank model's wavefronts for
    shared memory, the sector model's sectors and requests for global memory)."""

    access_bits: int
    instructions: int
    wavefronts: int | None = None
    sectors: int | None = None
    requests: int | None = None
    wavefronts_per_instruction: float | None = None
    sectors_per_request: float | None = None


class CompiledSide(_Model):
    """A stage side beside the SASS instructions that stand for it."""

    stage: int
    side: Literal["src", "dst"]
    memory: str
    tensor: str
    status: Literal["mapped", "ambiguous", "missing"]
    instructions: list[str] = Field(default_factory=list, description="'0x0140 LDS.128', in program order")
    declared_bits: int
    compiled_bits: int | None = None
    accesses_per_instruction: float = Field(1.0, description="declared accesses of a thread one compiled "
                                                             "instruction moves (4: merged, 0.5: split)")
    per_thread: int | None = Field(None, description="the side's instructions per thread in the SASS (static)")
    declared: CompiledCounts | None = None
    compiled: CompiledCounts | None = Field(None, description="the counts at the compiled width (the prediction)")
    cp_async: Literal["ca", "cg"] | None = Field(None, description="a cp.async stage's form as compiled: 'ca' "
                                                                   "(LDGSTS), 'cg' (LDGSTS.BYPASS)")
    note: str = ""


class CompiledKernel(_Model):
    """What ``verify --kernel`` read from the user's compiled kernel."""

    file: str
    kernel: str
    demangled: str = ""
    arch: str
    sides: list[CompiledSide] = Field(default_factory=list)
    unmatched: list[str] = Field(default_factory=list, description="memory instructions no side stands for")
    unmodelled: list[str] = Field(default_factory=list, description="atomics, reductions, prefetches")
    findings: list[Finding] = Field(default_factory=list)


class SpecRun(_Model):
    """One spec under one size environment."""

    spec: str
    path: str
    sizes: dict[str, int]
    grid: tuple[int, int, int]
    blocks: int
    blocks_simulated: int
    totals: Totals
    verdict: Literal["pass", "fail"]
    expected: Literal["pass", "fail"]
    expected_failing: list[str]
    failing: list[str]
    as_expected: bool
    seconds: float
    results: list[CheckResult]
    notes: list[str] = Field(default_factory=list)
    compiled: CompiledKernel | None = Field(None, description="the compiled kernel's instructions per side "
                                                              "(verify --kernel)")

    def expects_failure(self, check: str) -> bool:
        """Whether the spec expects ``check`` (a result's name) to fail (``coverage`` in the
        expectation covers ``grid_coverage``; ``vectorization`` is ``vectorize``)."""
        return expected_name(check) in {expected_name(c) for c in self.expected_failing}


class SpecErrorEntry(_Model):
    """A spec that could not be verified: the located error (``FILE:LINE:COL: path: msg``)."""

    path: str
    message: str
    status: Literal["invalid", "internal"] = "invalid"


def error_status(errors: list[SpecErrorEntry]) -> int:
    """The exit status of a run with spec errors: 3 if one is internal, else 2."""
    return 3 if any(e.status == "internal" for e in errors) else 2


class VerifyReport(_Model):
    """Everything ``threadmap verify`` found: one run per spec and size environment."""

    threadmap: str
    runs: list[SpecRun]
    errors: list[SpecErrorEntry] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> int:
        """Runs whose verdict is pass."""
        return sum(r.verdict == "pass" for r in self.runs)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def failed(self) -> int:
        """Runs whose verdict is fail."""
        return sum(r.verdict == "fail" for r in self.runs)

    def exit_status(self, check_expected: bool = False) -> int:
        """0 all pass (or all as expected), 1 findings, 2 an invalid spec, 3 an internal error."""
        if self.errors:
            return error_status(self.errors)
        if check_expected:
            return 0 if all(r.as_expected for r in self.runs) else 1
        return 1 if self.failed else 0


ProofStatus = Literal["PROVED", "REFUTED", "UNKNOWN"]


class PropertyResult(_Model):
    """One property of a spec for every size in range: PROVED, REFUTED (with the sizes of a
    counterexample and the findings the simulator reports there) or UNKNOWN (never a pass)."""

    property: str
    status: ProofStatus
    method: str
    seconds: float
    reason: str = ""
    classes: int = 0
    sizes: dict[str, int] | None = None
    findings: list[Finding] = Field(default_factory=list)
    precondition: list[str] = Field(default_factory=list)
    #: coalescing: the most sectors one warp instruction touches over all sizes and blocks,
    #: with the instruction (stage, side, block, warp, step) and sizes that reach it
    worst: dict[str, Any] | None = None


class ProveRun(_Model):
    """The properties of one spec."""

    spec: str
    path: str
    ranges: dict[str, str]
    assume: list[str]
    bits: int
    seconds: float
    properties: list[PropertyResult]


class ProveReport(_Model):
    """Everything ``threadmap prove`` found."""

    threadmap: str
    runs: list[ProveRun]
    errors: list[SpecErrorEntry] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """0: every property PROVED; 1: one REFUTED or UNKNOWN; 2: an invalid spec; 3: an
        internal error."""
        if self.errors:
            return error_status(self.errors)
        return 0 if all(p.status == "PROVED" for r in self.runs for p in r.properties) else 1


Engine = Literal["enumerate", "z3", "auto", "both"]


class EngineReport(_Model):
    """What :func:`threadmap.api.verify` returns for ``engine`` ``z3``, ``auto`` or ``both``:
    the enumeration's report (empty for ``z3``), the proofs (empty for ``enumerate``) and the
    places where a proof contradicts a sample (``both``)."""

    engine: Engine
    verify: VerifyReport
    prove: ProveReport
    disagreements: list[str] = Field(default_factory=list)

    def exit_status(self, check_expected: bool = False) -> int:
        """The worse of both: 2 or 3 for an invalid spec or an internal error, 1 a finding,
        an unproved property or a disagreement, else 0."""
        errors = self.verify.errors + self.prove.errors
        if errors:
            return error_status(errors)
        return max(self.verify.exit_status(check_expected), self.prove.exit_code, 1 if self.disagreements else 0)
