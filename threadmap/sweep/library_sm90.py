"""The configuration key of a CUTLASS 3.x GEMM (the sm90a library's collectives).

A 3.x kernel's mainloop is what ``cutlass::gemm::collective::CollectiveBuilder`` makes of the
template arguments the generator's emitter (``EmitGemmUniversal3xInstance``) gives it: arch,
opcode class, A's and B's element types (a tuple with the scale types for mixed input), layouts
and alignments, the accumulator, the collective tile shape, the cluster shape, the stage count
and the kernel schedule.  Those are the key.  The builder sees nothing of the epilogue except
through an automatic stage count: ``StageCountAutoCarveout<sizeof(Epilogue::SharedStorage)>``
(the stages left once the epilogue's shared storage is carved out), so for ``stages == 0`` the
key also holds the epilogue builder's arguments (C's and D's types, layouts, alignments, the
epilogue schedule and functor); with an explicit stage count the epilogue is out of the key.
The tile scheduler (persistent, stream-K) is no argument of the mainloop's builder: it decides
which tiles and k-ranges a CTA runs, not how a k-tile moves.  The problem shape (grouped or
not) follows from the family, which is in the key.
"""

from __future__ import annotations

from typing import Any

#: the 3.x GEMM families the sweep analyses (the universal kernel; grouped, sparse and blockwise
#: ones have mainloops of their own, counted only)
SM90_FAMILIES = ("universal3x",)
#: kernel schedules whose mainloop loads with TMA (the cp.async ones and ScheduleAuto are not analysed)
SM90_TMA_SCHEDULES = ("TmaWarpSpecialized",)


def _enum_name(x: Any) -> Any:
    return x.name if hasattr(x, "name") else x


def is_3x(op: Any) -> bool:
    """Whether a generated operation is a CUTLASS 3.x kernel (a collective-built one)."""
    return bool(getattr(op, "is_3x", False))


def gemm3x_fields(op: Any) -> dict[str, Any]:
    """The mainloop builder's arguments of a 3.x GEMM (see the module docstring)."""
    from cutlass_library.library import DataTypeNames, ShortLayoutTypeNames

    td = op.tile_description
    mi = td.math_instruction

    def layout(t: Any) -> str:
        return str(ShortLayoutTypeNames.get(t.layout, _enum_name(t.layout)))

    # GemmKind Universal3x -> universal3x, GroupedUniversal3x -> grouped3x, SparseUniversal3x -> sparse3x, ...
    family = str(_enum_name(op.gemm_kind)).replace("Universal3x", "").lower() or "universal"
    fields: dict[str, Any] = {
        "family": f"{family}3x",
        "arch": int(op.arch),
        "opcode": str(_enum_name(mi.opcode_class)).lower(),
        "element_a": DataTypeNames[op.A.element], "layout_a": layout(op.A), "align_a": int(op.A.alignment),
        "element_b": DataTypeNames[op.B.element], "layout_b": layout(op.B), "align_b": int(op.B.alignment),
        "transform_a": str(_enum_name(op.A.complex_transform)),
        "transform_b": str(_enum_name(op.B.complex_transform)),
        "accumulator": DataTypeNames[op.accumulator_type()],
        "tile": [int(x) for x in op.get_collective_tile_shape()],
        "cluster": [int(x) for x in td.cluster_shape],
        "stages": int(td.stages),
        "kernel_schedule": str(_enum_name(op.kernel_schedule)),
        "mixed_input": str(_enum_name(op.mixed_input_mode)),
        "mixed_input_shuffle": bool(op.mixed_input_shuffle),
    }
    if hasattr(op, "ScaleFactorMVecSize"):  # blockwise-scaled: the scale layouts ride with A and B
        fields["scale_vectors"] = [int(op.ScaleFactorMVecSize), int(op.ScaleFactorNVecSize),
                                   int(op.ScaleFactorKVecSize)]
    if fields["stages"] == 0:
        # StageCountAutoCarveout<sizeof(Epilogue::SharedStorage)>: what sizes the epilogue's storage
        fields["carveout"] = {
            "element_c": DataTypeNames[op.C.element], "layout_c": layout(op.C), "align_c": int(op.C.alignment),
            "element_d": DataTypeNames[op.D.element], "layout_d": layout(op.D), "align_d": int(op.D.alignment),
            "element_epilogue": DataTypeNames[op.element_epilogue],
            "epilogue_schedule": str(_enum_name(op.epilogue_schedule)),
            "epilogue_functor": str(_enum_name(op.epilogue_functor)),
        }
    return fields


def label3x(f: dict[str, Any]) -> str:
    """A short name of a 3.x configuration family (what a summary groups by)."""
    ab = f"{f['element_a']}{f['layout_a']}{f['element_b']}{f['layout_b']}"
    return f"{f['family']} {f['kernel_schedule']} {ab} align{f['align_a']}/{f['align_b']}"
