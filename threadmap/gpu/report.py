"""The GPU report model (pydantic): probe diffs, behaviour runs, counters, log diffs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from threadmap.report.model import SpecErrorEntry


class ReportModel(BaseModel):
    """The base of the GPU report's models (and of ``threadmap diff``'s): unknown fields refused."""

    model_config = ConfigDict(extra="forbid")


class ProbeMismatch(ReportModel):
    """One (block, thread, value) whose probe record differs from the simulator's."""

    stage: int
    line: int | None = Field(None, description="the stage's line in the spec file")
    field: str = Field(description="what differs: src.coord, dst.offset, src.in_bounds, predicate ...")
    block: int
    thread: int
    step: int
    value: int
    device: dict[str, Any] = Field(description="the real templates' record (per side: coord, offset, in_bounds)")
    simulated: dict[str, Any]


class StageProbe(ReportModel):
    stage: int
    name: str | None = None
    line: int | None = None
    rows: int = Field(0, description="(block, thread, value) records compared")
    mismatches: int = 0
    by_field: dict[str, int] = Field(default_factory=dict)
    first: list[ProbeMismatch] = Field(default_factory=list)
    skipped: str | None = Field(None, description="why this stage was not probed")


class ModelProbe(ReportModel):
    """One spec at one size environment, probed."""

    spec: str
    name: str
    sizes: dict[str, int]
    grid: tuple[int, int, int]
    blocks_total: int
    blocks_probed: int
    where: Literal["host", "device"]
    stages: list[StageProbe] = Field(default_factory=list)
    seconds: dict[str, float] = Field(default_factory=dict)
    bytes_written: int = 0

    @property
    def mismatches(self) -> int:
        return sum(s.mismatches for s in self.stages)


class BehaviourRun(ReportModel):
    """The spec's data movement on the device, checked on the host."""

    spec: str
    name: str
    sizes: dict[str, int]
    skipped: str | None = None
    correct: bool | None = None
    missing: int = 0
    duplicates: int = 0
    stray: int = 0
    wrong: int = 0
    out_of_tensor: int = Field(0, description="shared accesses at coordinates outside their tensor's shape")
    checked: int = 0
    first: list[str] = Field(default_factory=list)
    expected: str = "pass"
    expected_failing: list[str] = Field(default_factory=list)
    agrees: bool | None = None
    note: str = ""
    race_hazards: int | None = Field(None, description="compute-sanitizer racecheck hazards (4x4 blocks)")
    time_s: float | None = None
    bytes: int = 0
    gbps: float | None = None
    of_copy_bandwidth: float | None = None


class SideCounters(ReportModel):
    """One side of one stage: what the verifier predicts beside what the hardware counted."""

    side: str
    memory: str
    op: str                 # ld | st | ldgsts (a cp.async stage: one instruction, both sides)
    metric: str             # sectors_per_request | wavefronts_per_instruction
    predicted: float | None = None
    measured: float | None = Field(None, description="measured in a kernel that runs this side alone, one CTA per "
                                                     "SM")
    measured_concurrent: float | None = Field(None, description="this side alone, as many CTAs per SM as fit")
    measured_in_stage: float | None = Field(None, description="with the stage's other side running too")
    predicted_raw: dict[str, int] = Field(default_factory=dict)
    measured_raw: dict[str, float] = Field(default_factory=dict)
    source_bits: int = Field(0, description="the access width the generated source asks for")
    sass_bits: list[int] = Field(default_factory=list, description="widths of the SASS instructions")
    agrees: bool | None = None
    note: str = ""


class StageCounters(ReportModel):
    spec: str
    name: str
    sizes: dict[str, int]
    stage: int
    line: int | None = None
    sides: list[SideCounters] = Field(default_factory=list)
    time_s: float | None = None


class GpuReport(ReportModel):
    probes: list[ModelProbe] = Field(default_factory=list)
    behaviour: list[BehaviourRun] = Field(default_factory=list)
    counters: list[StageCounters] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    errors: list[SpecErrorEntry] = Field(default_factory=list)
    environment: dict[str, Any] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (not self.errors and all(p.mismatches == 0 for p in self.probes)
                and all(b.agrees is not False for b in self.behaviour)
                and all(sd.agrees is not False for c in self.counters for sd in c.sides))
