"""Spec format v1: the pydantic models (the contract between spec files and the verifier).

A spec describes one kernel's thread mapping: the element type, the CTA size, named
problem sizes, the grid, the tensors (global or shared, with CuTe layouts that may use the
named sizes), and ordered stages (copies between tensor partitions or registers, and
barriers), plus what the author expects.  ``specs/README.md`` documents every field;
``threadmap schema`` prints the JSON Schema generated from these models.

Expressions (sizes, grid, tile extents, tile coordinates) are strings or integers in the
small grammar of :mod:`threadmap.spec.expr` (``ceil_div(M, 16)``, ``N / 4``, ``bx``) — never
``eval``.  Layout strings are CuTe notation (:func:`threadmap.layout.parse`) in which named
sizes and size expressions may appear (``(M,N):(N,1)``, ``(M,N,L):(N,1,M*N)``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

#: element type name -> bits (``cute::sizeof_bits``): ``cf32``/``cf64`` are CUTLASS's
#: ``complex<float>``/``complex<double>``, ``i4``/``u4``/``b1`` its sub-byte ``int4b_t``,
#: ``uint4b_t`` and ``uint1b_t`` (an access of these must cover whole bytes)
ELEMENT_BITS: dict[str, int] = {
    "f64": 64, "f32": 32, "tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8,
    "i64": 64, "u64": 64, "i32": 32, "u32": 32, "i16": 16, "u16": 16, "i8": 8, "u8": 8,
    "cf64": 128, "cf32": 64, "i4": 4, "u4": 4, "b1": 1,
}

#: every check's name, as reports and ``expect.failing_checks`` use them
CHECK_NAMES = ("coverage", "grid_coverage", "predicates", "coalescing", "bank_conflicts", "vectorize", "dataflow",
               "pipeline")
#: other accepted spellings (``vectorization``) and the name each stands for
CHECK_ALIASES = {"vectorization": "vectorize"}

Expr = StrictInt | str  # parsed by threadmap.spec.expr; bools/floats are not sizes


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SizeRange(_Model):
    """A named size that ranges (for proofs); enumerative checks run on ``samples``."""

    min: StrictInt = Field(ge=1, description="smallest value")
    max: StrictInt = Field(ge=1, description="largest value")
    multiple_of: StrictInt = Field(1, ge=1, description="the size is a multiple of this")
    samples: list[StrictInt] | None = Field(
        None, description="values the enumerative checks use (default: a few edge values)")

    @model_validator(mode="after")
    def _order(self) -> SizeRange:
        if self.max < self.min:
            raise ValueError(f"max ({self.max}) is below min ({self.min})")
        return self


Size = Annotated[StrictInt, Field(ge=1)] | SizeRange


class TensorSpec(_Model):
    """A tensor: where it lives and its CuTe layout (logical coordinate -> element offset)."""

    memory: Literal["global", "shared"]
    layout: str = Field(description="CuTe layout, may use named sizes and size expressions: '(M,N):(N,1)', "
                                    "'(M,N,L):(N,1,M*N)', 'Sw<3,4,3> o (8,64):(64,1)'")
    element: str | None = Field(None, description="element type if it differs from the spec's")
    align: StrictInt = Field(256, ge=1, description="base address alignment in bytes (cudaMalloc: 256); a power of two")
    alias: str | None = Field(None, description="another shared tensor whose buffer this one views")
    offset: StrictInt = Field(0, ge=0, le=2**40, description="element offset of this view inside the buffer")
    swizzled_by: Literal["offset", "address"] = Field(
        "offset", description="what a swizzled shared layout's readers swizzle: offsets from the tile's start "
                              "(a Swizzle o Layout on offsets), or shared-memory addresses (CuTe's smem_ptr swizzled "
                              "tensors, wgmma/UMMA descriptors, TMA)")

    @field_validator("align")
    @classmethod
    def _align(cls, v: int) -> int:
        if v & (v - 1):
            raise ValueError(f"align must be a power of two (bytes), got {v}")
        return v

    @field_validator("element")
    @classmethod
    def _elem(cls, v: str | None) -> str | None:
        if v is not None and v not in ELEMENT_BITS:
            raise ValueError(f"unknown element type {v!r}; known: {', '.join(ELEMENT_BITS)}")
        return v


class TiledCopySpec(_Model):
    """``make_tiled_copy(Copy_Atom<atom, T>, threads, values)``, or the TiledCopy itself:
    ``TiledCopy<Copy_Atom<atom, T>, layout_tv, tiler>`` (what a C++ TiledCopy holds, whichever
    way it was made: ``TiledLayout_TV`` and ``Tiler_MN``)."""

    threads: str | None = Field(None, description="thread layout (CuTe notation)")
    values: str | None = Field(None, description="value layout (CuTe notation)")
    layout_tv: str | None = Field(None, description="(thread, value) -> tile coordinate layout, the "
                                                    "TiledCopy's TiledLayout_TV (instead of threads/values)")
    tiler: str | None = Field(None, description="the TiledCopy's Tiler_MN, e.g. '(_16,_64)' (with layout_tv)")
    atom: str = Field("AutoVectorizingCopy", description="copy operation, e.g. UniversalCopy<uint128_t>")

    @model_validator(mode="after")
    def _one_form(self) -> TiledCopySpec:
        plain = (self.threads is not None, self.values is not None)
        tv = (self.layout_tv is not None, self.tiler is not None)
        if any(plain) and any(tv):
            raise ValueError("give either threads and values, or layout_tv and tiler")
        if plain != (True, True) and tv != (True, True):
            raise ValueError("give threads and values (make_tiled_copy), or layout_tv and tiler "
                             "(the TiledCopy's TiledLayout_TV and Tiler_MN)")
        return self


class ThreadMapSpec(_Model):
    """A CUTLASS 2.x thread map by name and template parameters (pitch-linear)."""

    name: str
    shape: tuple[StrictInt, StrictInt] = Field(description="(contiguous, strided)")
    threads: StrictInt = Field(ge=1, le=1024)
    elements_per_access: StrictInt = Field(1, ge=1, le=1024)
    warp_thread_arrangement: tuple[StrictInt, StrictInt] | None = None
    contiguous_mode: Literal[0, 1] = Field(
        1, description="which tensor mode is CUTLASS's contiguous dimension (1: row-major tile)")
    accesses_per_vector: StrictInt = Field(
        1, ge=1, le=1024,
        description="instructions per vector of elements_per_access, in order (a CUTLASS predicated tile "
                    "iterator's kAccessesPerVector: its AccessType is narrower than the map's vector when the "
                    "operand's alignment is)")


class MmaSpec(_Model):
    """An MMA partition: ``make_tiled_mma(atom, atom_layout)`` then ``partition_A``/``B``/``C``."""

    atom: str = Field(description="MMA atom name, e.g. SM80_16x8x16_F32F16F16F32_TN")
    atom_layout: str = Field("1:0", description="layout of atoms over (M,N,K)")
    operand: Literal["A", "B", "C"]
    permutation: list[str] | None = Field(
        None, min_length=1, max_length=3,
        description="PermutationMNK of make_tiled_mma, one item per mode (missing: _): '_', an extent "
                    "such as '32', or a layout such as '(4,2):(2,1)'")


class Side(_Model):
    """One side of a copy: a tile of a tensor partitioned among threads, or registers."""

    tensor: str | None = Field(None, description="tensor name")
    registers: str | None = Field(None, description="register fragment name")
    tile: list[Expr] | None = Field(None, description="CTA tile extents (local_tile)")
    at: list[Expr] | None = Field(None, description="tile coordinate, e.g. [bx, by] or [by, bx]")
    threads: str | None = Field(None, description="thread layout for local_partition")
    tiled_copy: TiledCopySpec | None = None
    thread_map: ThreadMapSpec | None = None
    mma: MmaSpec | None = None

    @model_validator(mode="after")
    def _one_target(self) -> Side:
        if (self.tensor is None) == (self.registers is None):
            raise ValueError("give exactly one of 'tensor' or 'registers'")
        parts = [p for p in ("threads", "tiled_copy", "thread_map", "mma")
                 if getattr(self, p) is not None]
        if len(parts) > 1:
            raise ValueError(f"give at most one partition, got {', '.join(parts)}")
        if self.tensor is not None and not parts:
            raise ValueError("a tensor side needs a partition: threads, tiled_copy, thread_map or mma")
        if (self.tile is None) != (self.at is None):
            raise ValueError("'tile' and 'at' go together")
        return self


class CopyStage(_Model):
    src: Side
    dst: Side
    predicate: Literal["none", "bounds", "vector"] = Field(
        "none", description="none; bounds: per element (identity tensor); "
                            "vector: per access, the whole vector must be in bounds")
    vector_bits: Literal[8, 16, 32, 64, 128] | None = Field(
        None, description="widest vector a plain (threads) partition may use; default scalar, "
                          "as CuTe's copy() on dynamic global layouts")
    atom: str | None = Field(
        None, description="the copy operation every access of this copy is, by CuTe's name, for sides "
                          "without a tiled_copy (thread_map, threads, mma), e.g. "
                          "SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>; its width must equal the stage's access width")
    name: str | None = None


class Copy(_Model):
    """A copy stage (``copy: {src, dst, predicate}``); ``copy`` is the key in spec files."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    copy_: CopyStage = Field(alias="copy")


Stage = Copy | Literal["barrier"]


class BufferArgs(_Model):
    """The shared buffers an operation reads or writes, on iteration ``k + ahead``."""

    buffers: list[str] | str
    ahead: StrictInt = Field(0, ge=-64, le=64, description="act on iteration k + ahead of the loop variable k")


class BarrierArgs(_Model):
    """An mbarrier operation on the stage of iteration ``k + ahead``."""

    barrier: str
    ahead: StrictInt = Field(0, ge=-64, le=64, description="act on iteration k + ahead of the loop variable k")
    count: Expr | None = Field(None, description="arrivals (arrive: default every thread of the role; "
                                                 "arrive_expect_tx: default 1, the elected thread)")
    bytes: Expr | None = Field(None, description="transaction bytes (arrive_expect_tx, expect_tx)")
    ctas: Literal["self", "all"] = Field("self", description="all: arrive on this barrier in every CTA of the "
                                                             "cluster (the release of a multicast stage)")


class TmaIssue(_Model):
    """A TMA load of the pipeline's ``tma`` copy into this iteration's stage; its bytes complete on
    ``barrier``."""

    copy_: str = Field(alias="copy", description="a copy of pipeline.tma")
    barrier: str
    ahead: StrictInt = Field(0, ge=-64, le=64)
    multicast: StrictInt | None = Field(None, ge=1, description="CTA mask of a multicast load (bit i: CTA i of "
                                                                  "the cluster)")
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class TmemLoadArgs(_Model):
    """``copy(tiled_t2r, tTR_tAcc, tTR_rAcc)``: one ``tcgen05.ld`` per warp of the role."""

    fragment: str = Field(min_length=1, description="the register fragment it fills")
    op: str = Field(description="the TMEM load operation, e.g. SM100_TMEM_LOAD_32dp32b8x")
    lane: StrictInt | Literal["own"] = Field("own", description="the lane the warp's address names: 'own' is its "
                                                               "subpartition's first lane, 32 * (warp % 4)")
    column: StrictInt = Field(0, ge=0, lt=1 << 16, description="the first column (relative to the allocation)")


class TmemSpec(_Model):
    """The CTA's tensor memory: its allocation and the accumulator the epilogue must read."""

    columns: StrictInt = Field(description="tcgen05.alloc's num_columns (a power of two, 32..512)")
    accumulator: tuple[StrictInt, StrictInt] | None = Field(
        None, description="[lanes, columns] of the accumulator from lane 0, column 0: every cell must be loaded")


class PipelineOp(_Model):
    """One operation of a role's program: exactly one key."""

    wait: str | BarrierArgs | None = Field(None, description="mbarrier try_wait.parity on this iteration's stage "
                                                              "with the role's phase")
    arrive: str | BarrierArgs | None = None
    arrive_expect_tx: BarrierArgs | None = None
    expect_tx: BarrierArgs | None = None
    tma: TmaIssue | None = None
    tma_store: str | list[str] | BufferArgs | None = Field(None, description="TMA store reading these buffers "
                                                                              "(the async proxy)")
    cp_async: str | list[str] | BufferArgs | None = Field(None, description="cp.async into these buffers")
    wait_group: StrictInt | None = Field(None, ge=0, le=64, description="cp.async.wait_group N")
    wait_mma: StrictInt | None = Field(None, ge=0, le=64, description="warpgroup_wait<N>: all but the N newest "
                                                                       "mma batches done reading")
    tma_store_wait: StrictInt | None = Field(None, ge=0, le=64, description="tma_store_wait<N> "
                                                                             "(cp.async.bulk.wait_group.read N): all "
                                                                             "but the N newest TMA stores done reading")
    sync: str | None = Field(None, description="a named barrier of pipeline.syncs (bar.sync)")
    read: str | list[str] | BufferArgs | None = Field(None, description="generic reads of these buffers "
                                                                         "(ld.shared, ldmatrix)")
    write: str | list[str] | BufferArgs | None = Field(None, description="generic stores into these buffers")
    mma: str | list[str] | BufferArgs | None = Field(None, description="wgmma reading these buffers "
                                                                        "asynchronously until wait_mma")
    tmem_load: Annotated[str, Field(min_length=1)] | TmemLoadArgs | None = Field(
        None, description="tcgen05.ld from tensor memory into this register fragment (asynchronous until "
                          "tmem_wait_ld)")
    use: str | None = Field(None, min_length=1, description="the role's threads read this register fragment")

    @model_validator(mode="after")
    def _one(self) -> PipelineOp:
        given = [k for k in type(self).model_fields if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("an operation has exactly one key, got " + (", ".join(given) or "none"))
        return self


BareOp = Literal["commit", "fence_proxy_async", "syncthreads", "tmem_wait_ld"]
PipelineItem = BareOp | PipelineOp


class PipelineBlock(_Model):
    """``for k in range(loop): ops`` (``loop: iterations``: the K-loop)."""

    loop: StrictInt | Literal["iterations"] = Field(1, description="trips: a number, or 'iterations' (the K-loop)")
    first: StrictInt = Field(0, ge=-64, le=1 << 20, description="the loop variable's first value")
    after_loop: bool = Field(False, description="the loop variable counts from the K-loop's trip count "
                                                "(a drain: 'first: -1' is the last iteration)")
    ops: list[PipelineItem] = Field(min_length=1)


class RoleSpec(_Model):
    """Warps running one program in lockstep (a producer warp, a consumer warpgroup)."""

    warps: tuple[StrictInt, StrictInt] = Field(description="first and last warp of the role")
    start_phase: Literal[0, 1] = Field(0, description="its PipelineState's phase at iteration 0 (CUTLASS: 1 for "
                                                      "a producer, make_producer_start_state; 0 for a consumer)")
    start_stage: StrictInt = Field(0, ge=0)
    program: list[PipelineBlock] = Field(min_length=1)

    @model_validator(mode="after")
    def _warps(self) -> RoleSpec:
        if not 0 <= self.warps[0] <= self.warps[1] < 32:
            raise ValueError(f"warps are a range first <= last inside 0 .. 31, got {list(self.warps)}")
        return self


class TmaCopySpec(_Model):
    """``make_tma_copy(op, gmem_tensor, smem_layout, cta_tile, multicast)``: a global tensor's tile to
    a shared buffer (one stage)."""

    op: Literal["SM90_TMA_LOAD", "SM90_TMA_LOAD_MULTICAST", "SM90_TMA_STORE"] = "SM90_TMA_LOAD"
    src: str = Field(description="the global tensor (for SM90_TMA_STORE: the shared buffer)")
    dst: str = Field(description="the shared buffer (for SM90_TMA_STORE: the global tensor)")
    tile: list[Expr] | None = Field(None, description="the CTA tile (default: the shared layout's shape)")
    multicast: StrictInt = Field(1, ge=1, le=16, description="CTAs sharing the tile (each loads 1/multicast)")


class GmmaFieldsSpec(_Model):
    """A descriptor's fields as the kernel writes them by hand (instead of ``make_gmma_desc``):
    offsets in 16-byte units."""

    lbo: StrictInt = Field(ge=0, lt=1 << 14, description="leading byte offset (16-byte units)")
    sbo: StrictInt = Field(ge=0, lt=1 << 14, description="stride byte offset (16-byte units)")
    layout_type: Literal["INTERLEAVE", "B128", "B64", "B32"] | None = Field(
        None, description="the swizzle mode (default: the one make_gmma_desc derives)")


class GmmaOperandSpec(_Model):
    """One wgmma operand read from shared memory through a descriptor."""

    tensor: str = Field(description="the shared tensor (MN, K) holding the operand's stage")
    major: Literal["K", "MN"] = Field(description="GMMA::Major of the instruction for this operand (tnspA/B)")
    n: StrictInt | None = Field(None, ge=8, le=256, multiple_of=8,
                                description="B only: the instruction's N (default: the tile's MN extent, at most 256)")
    descriptor: GmmaFieldsSpec | None = Field(None, description="hand-written descriptor fields, checked against "
                                                                "the ones make_gmma_desc builds")


class GmmaSpec(_Model):
    """The warpgroup MMA's shared-memory operands (``SM90_64xNxK_*_SS``; A may come from registers)."""

    a: GmmaOperandSpec | None = Field(None, description="A (64 x K per instruction); omit for A from registers")
    b: GmmaOperandSpec = Field(description="B (N x K per instruction)")


class PipelineSpec(_Model):
    """An asynchronous pipeline: a ring of ``stages`` shared stages, mbarrier arrays, roles."""

    stages: StrictInt = Field(ge=1, le=32, description="stages in the ring (PipelineState's Stages)")
    iterations: Expr = Field(description="the K-loop's trip count (an expression of the sizes)")
    cluster: StrictInt = Field(1, ge=1, le=16, description="CTAs per cluster")
    arch: str = Field("sm_90a", description="target architecture (TMA needs sm_90 or newer)")
    buffers: list[str] = Field(min_length=1, description="shared tensors holding one stage's tile each; stage s "
                                                         "of a buffer lies s tiles after stage 0")
    barriers: dict[str, Expr] = Field(default_factory=dict, description="mbarrier arrays (one per stage): "
                                                                        "name -> arrivals per phase")
    tma: dict[str, TmaCopySpec] = Field(default_factory=dict)
    syncs: dict[str, list[str]] = Field(default_factory=dict, description="named barriers: name -> member roles")
    roles: dict[str, RoleSpec] = Field(min_length=1)
    gmma: GmmaSpec | None = Field(None, description="the wgmma operands the consumers' mma reads through descriptors")
    tmem: TmemSpec | None = Field(None, description="tensor memory (SM100): the allocation and the accumulator")


class SectorBound(_Model):
    """Separate coalescing bounds for loads (copy sources) and stores (copy destinations)."""

    load: float | None = Field(None, ge=1, allow_inf_nan=False, description="max ratio to ideal for global loads")
    store: float | None = Field(None, ge=1, allow_inf_nan=False, description="max ratio to ideal for global stores")


class Expect(_Model):
    """What the author expects; the library's test compares the verdict."""

    verdict: Literal["pass", "fail"] = "pass"
    transform: Literal["copy", "transpose", "none"] = "none"
    coverage: Literal["exact", "replicated"] = "exact"
    bank_conflicts: StrictInt | None = Field(None, ge=0, description="max extra wavefronts per instruction")
    sectors_per_request: Annotated[float, Field(ge=1, allow_inf_nan=False)] | SectorBound | None = Field(
        None, description="max ratio of sectors per request to the ideal, for every global side, "
                          "or separately {load: x, store: y}")
    vector_bits: Literal[8, 16, 32, 64, 128] | None = Field(
        None, description="every copy side must move at least this many bits per access")
    failing_checks: list[str] = Field(default_factory=list, description="checks expected to fail: "
                                      + ", ".join(CHECK_NAMES))

    @field_validator("failing_checks")
    @classmethod
    def _checks(cls, v: list[str]) -> list[str]:
        for name in v:
            if name not in CHECK_NAMES and name not in CHECK_ALIASES:
                raise ValueError(f"unknown check {name!r}; checks: {', '.join(CHECK_NAMES)}")
        return v

    @model_validator(mode="after")
    def _failing_needs_fail(self) -> Expect:
        if self.failing_checks and self.verdict == "pass":
            raise ValueError("failing_checks names checks expected to fail, so the verdict must be 'fail' "
                             "(add verdict: fail)")
        return self


class Spec(_Model):
    spec: Literal[1] = Field(1, description="spec format version")
    name: str = Field(description="kernel name shown in reports")
    description: str = ""
    element: str = Field("f32", description="element type: " + ", ".join(ELEMENT_BITS))
    threads: Expr = Field(description="threads per CTA, 1..1024 (expression)")
    sizes: dict[str, Size] = Field(default_factory=dict,
                                   description="named problem sizes: an integer or a range")
    grid: list[Expr] = Field(default_factory=lambda: list[Expr]([1]), min_length=1, max_length=3,
                             description="blocks along x, y, z (expressions); coordinates bx, by, bz")
    assume: list[str] = Field(default_factory=list, max_length=64,
                              description="relations the sizes satisfy, e.g. 'N % 4 == 0', 'M >= N' "
                                          "(comparisons == != <= >= < >); samples that break one are skipped")
    tensors: dict[str, TensorSpec] = Field(description="tensors in global or shared memory")
    stages: list[Stage] = Field(default_factory=list, description="copies and barriers, in program order")
    pipeline: PipelineSpec | None = Field(None, description="an asynchronous pipeline (cp.async groups, TMA, "
                                                            "mbarriers, warp-specialised roles)")
    expect: Expect = Field(default_factory=Expect, description="what the author expects")

    @field_validator("element")
    @classmethod
    def _elem(cls, v: str) -> str:
        if v not in ELEMENT_BITS:
            raise ValueError(f"unknown element type {v!r}; known: {', '.join(ELEMENT_BITS)}")
        return v

    @model_validator(mode="after")
    def _something(self) -> Spec:
        if not self.stages and self.pipeline is None:
            raise ValueError("a spec has copy stages, a pipeline, or both")
        return self

    @field_validator("sizes")
    @classmethod
    def _names(cls, v: dict[str, Any]) -> dict[str, Any]:
        for k in v:
            if not k.isidentifier() or k in {"bx", "by", "bz", "ceil_div", "min", "max"}:
                raise ValueError(f"size name {k!r} is not allowed")
        return v
