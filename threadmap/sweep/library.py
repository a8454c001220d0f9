"""CUTLASS's kernel library, as its own generator makes it, grouped by data movement.

The generator ships in the PyPI package ``nvidia-cutlass`` (``cutlass_library``).  It is run in
process, as ``python -m cutlass_library.generator`` runs it: a ``Manifest`` of the chosen
architecture filled by ``GenerateSM80`` and filtered by ``--kernels`` with the generator's own
matching.  Each kernel (an ``Operation``) is reduced to the key of what decides its global to
shared data movement; kernels with equal keys share one configuration, analysed once.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from threadmap.errors import ThreadmapError
from threadmap.sweep.library_sm90 import gemm3x_fields, is_3x, label3x

#: the architectures this sweep generates, as the generator's ``--architectures`` names them,
#: and the generator function of each (``90a``: ``GenerateSM90``'s 3.x collectives and 2.x kernels)
ARCHITECTURES = ("80", "90a")
_GENERATORS = {"80": "GenerateSM80", "90a": "GenerateSM90"}
#: the CUDA version the generator is told by default: it gates some kernels on it, and a fixed
#: default keeps two machines' sweeps comparable
DEFAULT_CUDA_VERSION = "12.8"

#: the 2.x GEMM families whose mainloop is CUTLASS's ``DefaultMma`` (``MmaMultistage`` on
#: SM80): the others have their own mainloops, not analysed in this slice
DEFAULT_MMA_FAMILIES = ("universal", "grouped")
#: the planar-complex GEMM families (``MmaPlanarComplexMultistage``: the real and the imaginary
#: parts of each operand copied side by side; :mod:`threadmap.sweep.extract_planar`)
PLANAR_FAMILIES = ("planar_complex", "planar_complex_array")
#: the generator's short names of interleaved GEMM layouts (:mod:`threadmap.sweep.interleaved`)
INTERLEAVED_GEMM = ("n32", "n64", "t32", "t64")
#: the sparse GEMMs' family (``SparseMmaMultistage``: compressed A, B and the metadata E)
SPARSE_FAMILY = "sparse"


class SweepError(ThreadmapError):
    """Bad sweep input: an architecture the sweep does not know, a filter that matches no
    kernel, a generator that cannot be imported."""


@dataclass(frozen=True)
class Kernel:
    """One generated kernel: its procedural name, operation kind and configuration key."""

    name: str
    kind: str        # "gemm", "conv2d", ... (the generator's OperationKindNames)
    key: str         # canonical JSON of the data-movement configuration
    family: str      # "universal", "grouped", "sparse", ... ("-" for non-GEMM kinds)


#: A's interleaved layouts as the generator names them (GEMM ``ColumnMajorInterleaved<I>``,
#: conv ``TensorNCxHWx<I>``): before their revision 1 the prefilter refused them
INTERLEAVED_LAYOUTS = ("n32", "n64", "nc32hw32", "nc64hw64")


def is_strided_dgrad(kind: str, fields: Mapping[str, Any]) -> bool:
    """A conv2d Dgrad of ``ImplicitGemmConvolutionStridedDgrad`` (its iterators take a filter
    phase; conv3d's strided Dgrad kernels use the unit-stride kernel's iterators)."""
    return kind == "conv2d" and fields.get("conv_kind") == "Dgrad" and fields.get("stride_support") == "Strided"


def extraction_revision(kind: str, fields: Mapping[str, Any]) -> int:
    """How often the extraction of a configuration's family changed after the results store's
    rows of it could have been written (0: never).  1: conv2d strided Dgrad, FixedChannels and
    FewChannels Fprop got spec families, conv3d Wgrad a walk on the GPU; the interleaved GEMMs
    and conv2d Fprop (``n32``, ``nc32hw32``, ...) were read through their pitch-linear views."""
    if kind in ("gemm", "conv2d") and fields.get("layout_a") in INTERLEAVED_LAYOUTS:
        return 1
    if is_strided_dgrad(kind, fields) or (kind == "conv2d"
                                          and fields.get("iterator_algorithm") in ("FixedChannels", "FewChannels")):
        return 1
    return 1 if kind == "conv3d" and fields.get("conv_kind") == "Wgrad" else 0


@dataclass
class Configuration:
    """The kernels that share one data-movement configuration."""

    key: str
    kind: str
    family: str
    fields: dict[str, Any]
    kernels: list[str] = field(default_factory=list)
    #: the first kernel's Operation (the generator's object), instantiated for the extraction
    operation: Any = None

    def digest(self, headers: str) -> str:
        """The configuration's identity in the results store: its key, the CUTLASS headers'
        version (another release may lay the same kernel out otherwise) and its family's
        :func:`extraction_revision` (a family whose extraction changed is done again; the
        other families' rows stay)."""
        rev = extraction_revision(self.kind, self.fields)
        return hashlib.sha256(f"{self.key}\0{headers}{f'{chr(0)}r{rev}' if rev else ''}".encode()).hexdigest()[:24]

    @property
    def label(self) -> str:
        """A short name of the configuration family (what a summary groups by)."""
        f = self.fields
        if self.kind in CONV_KINDS and self.family == CONV3X_FAMILY:
            return f"{self.kind} {self.family} {f.get('conv_kind', '?').lower()}"
        if self.kind in CONV_KINDS:
            return (f"{self.kind} {f['conv_kind'].lower()} {f['iterator_algorithm'].lower()} {f['opcode']} "
                    f"{f['element_a']}/{f['element_b']} {f['layout_a']} align{f['align_a']}/{f['align_b']}")
        if self.kind != "gemm":
            return self.kind
        if "kernel_schedule" in f:
            return label3x(f)
        ab = f"{f['element_a']}{f['layout_a']}{f['element_b']}{f['layout_b']}"
        return f"{f['family']} {f['opcode']} {ab} align{f['align_a']}/{f['align_b']}"


#: the generator's GemmKind names as the sweep spells them
_FAMILIES = {"Universal": "universal", "Grouped": "grouped", "Sparse": "sparse", "PlanarComplex": "planar_complex",
             "PlanarComplexArray": "planar_complex_array", "Gemm": "gemm"}


def _enum_name(x: Any) -> Any:
    return x.name if hasattr(x, "name") else x


def _tile_fields(op: Any) -> dict[str, Any]:
    """The accumulator, threadblock, warp and instruction shapes, stages and math operation, as
    every 2.x key spells them."""
    from cutlass_library.library import DataTypeNames

    td = op.tile_description
    mi = td.math_instruction
    return {"accumulator": DataTypeNames[mi.element_accumulator],
            "threadblock": [int(x) for x in td.threadblock_shape], "warp_count": [int(x) for x in td.warp_count],
            "instruction": [int(x) for x in mi.instruction_shape], "stages": int(td.stages),
            "math": str(_enum_name(mi.math_operation))}


def _operand_fields(op: Any) -> dict[str, Any]:
    """A's and B's element types, layouts and alignments, as every 2.x key spells them."""
    from cutlass_library.library import DataTypeNames, ShortLayoutTypeNames

    out: dict[str, Any] = {}
    for w, t in (("a", op.A), ("b", op.B)):
        out[f"element_{w}"] = DataTypeNames[t.element]
        out[f"layout_{w}"] = str(ShortLayoutTypeNames.get(t.layout, _enum_name(t.layout)))
        out[f"align_{w}"] = int(t.alignment)
    return out


def gemm_fields(op: Any) -> dict[str, Any]:
    """What decides a 2.x GEMM's global to shared data movement: the operands' element types,
    layouts and alignments, the threadblock, warp and instruction shapes, the stages, the
    opcode class and math operation, and what decides which kernel the generator instantiates
    (the family, C's layout: the emitter transposes row/column problems, the grouped kernel
    transposes a column-major C; the accumulator; complex transforms; mixed-input mode)."""
    from cutlass_library.library import ShortLayoutTypeNames

    td = op.tile_description
    mi = td.math_instruction

    def layout(t: Any) -> str:
        return str(ShortLayoutTypeNames.get(t.layout, _enum_name(t.layout)))

    return {
        "family": _FAMILIES.get(str(_enum_name(op.gemm_kind)), str(_enum_name(op.gemm_kind)).lower()),
        "opcode": str(_enum_name(mi.opcode_class)).lower(),
        **_operand_fields(op),
        "layout_c": layout(op.C),
        "transform_a": str(_enum_name(op.A.complex_transform)),
        "transform_b": str(_enum_name(op.B.complex_transform)),
        **_tile_fields(op),
        "mixed_input": str(_enum_name(getattr(op, "mixed_input_mode", None))),
    }


#: the convolution kinds (2.x implicit GEMMs, ``ImplicitGemmMultistage`` on SM80)
CONV_KINDS = ("conv2d", "conv3d")
#: the family of CUTLASS 3.x convolutions (``ConvOperation3x``, sm90a: collective-built, no
#: iterator algorithm), counted only
CONV3X_FAMILY = "3x"


def conv_fields(kind: str, op: Any) -> dict[str, Any]:
    """What decides a 2.x convolution's global to shared data movement: the dimension (the
    kind), the conv kind (which tensors are the GEMM's A and B), the iterator algorithm and
    stride support (which iterators), the group mode (the group kernels' iterators), the
    operands' element types, layouts and alignments, the threadblock, warp and instruction
    shapes, the stages, the opcode class, accumulator and math operation.  The epilogue's
    types are not in it (kernels that differ only in their output share a configuration)."""
    mi = op.tile_description.math_instruction
    return {
        "kind": kind,
        "conv_kind": str(_enum_name(op.conv_kind)),
        "iterator_algorithm": str(_enum_name(op.iterator_algorithm)),
        "stride_support": str(_enum_name(op.stride_support)),
        "group_mode": str(_enum_name(getattr(op, "group_mode", "NoneGroup"))),
        "opcode": str(_enum_name(mi.opcode_class)).lower(),
        **_operand_fields(op),
        **_tile_fields(op),
    }


#: attributes of non-GEMM operations that decide their data movement, where present
_OTHER_ATTRS = ("conv_kind", "iterator_algorithm", "stride_support", "group_mode", "side_mode", "fill_mode",
                "diag_type", "blas_mode", "rank_k_kind")


def other_fields(op: Any) -> dict[str, Any]:
    """A key for the other operation kinds (counted in this slice, not analysed): the tile
    description, the A and B operands' descriptions and the kind's own attributes."""
    td = op.tile_description
    mi = td.math_instruction
    out: dict[str, Any] = {
        "threadblock": [int(x) for x in td.threadblock_shape], "warp_count": [int(x) for x in td.warp_count],
        "stages": int(td.stages), "instruction": [int(x) for x in mi.instruction_shape],
        "opcode": str(_enum_name(mi.opcode_class)), "math": str(_enum_name(mi.math_operation)),
        "accumulator": str(_enum_name(mi.element_accumulator)),
    }
    for name in ("A", "B"):  # C is the epilogue's
        t = getattr(op, name, None)
        if t is not None:
            out[name] = [str(_enum_name(t.element)), str(_enum_name(t.layout)), int(t.alignment),
                         str(_enum_name(getattr(t, "complex_transform", None)))]
    for a in _OTHER_ATTRS:
        if hasattr(op, a):
            out[a] = str(_enum_name(getattr(op, a)))
    return out


def configuration_key(kind: str, op: Any) -> tuple[str, dict[str, Any]]:
    """The canonical JSON key of a kernel's configuration and its fields."""
    if kind == "gemm" and is_3x(op):
        fields = gemm3x_fields(op)
    elif kind == "gemm":
        fields = gemm_fields(op)
    elif kind in CONV_KINDS and is_3x(op):
        fields = {"kind": kind, "family": CONV3X_FAMILY, **other_fields(op),
                  "kernel_schedule": str(_enum_name(getattr(op, "kernel_schedule", None)))}
    elif kind in CONV_KINDS:
        fields = conv_fields(kind, op)
    else:
        fields = {"kind": kind, **other_fields(op)}
    return json.dumps(fields, sort_keys=True, separators=(",", ":")), fields


def generate(architectures: Sequence[str], kernels: str = "all",
             cuda_version: str = DEFAULT_CUDA_VERSION) -> list[tuple[str, Any]]:
    """Run CUTLASS's generator in process: ``(kind, Operation)`` for every kernel of those
    architectures that ``kernels`` selects (the generator's ``--kernels``: comma-separated
    patterns, ``*`` between substrings; ``all`` for every kernel).  Remembered per arguments
    for the process's life (a run takes a second or two; the operations are only read)."""
    return list(_generate(tuple(architectures), kernels, cuda_version))


@functools.lru_cache(maxsize=8)
def _generate(architectures: tuple[str, ...], kernels: str, cuda_version: str) -> tuple[tuple[str, Any], ...]:
    bad = [a for a in architectures if a not in ARCHITECTURES]
    if not architectures:
        raise SweepError(f"--architectures: give one of {', '.join(ARCHITECTURES)} (or several, comma-separated)")
    if bad:
        raise SweepError(f"--architectures {','.join(architectures)}: the sweep generates the kernels "
                         f"of {', '.join(ARCHITECTURES)} (CUTLASS's GenerateSM80, GenerateSM90); "
                         f"{', '.join(bad)} is not one of them")
    if not re.fullmatch(r"\d+(\.\d+){0,2}", cuda_version):
        raise SweepError(f"--cuda-version {cuda_version!r}: give the CUDA version as MAJOR.MINOR "
                         f"(e.g. {DEFAULT_CUDA_VERSION})")
    if not kernels.replace(",", "").strip():  # ',' is no pattern at all: the generator would take every kernel
        raise SweepError("--kernels: give a filter (the generator's patterns, e.g. "
                         "'cutlass_tensorop_s16816gemm_f16_*_align8') or 'all'")
    try:
        from cutlass_library import generator as g
        from cutlass_library.library import OperationKindNames
        from cutlass_library.manifest import Manifest
    except ImportError as e:
        raise SweepError(f"CUTLASS's kernel generator cannot be imported ({e}): pip install nvidia-cutlass") from None
    args = g.define_parser().parse_args(["--architectures", ";".join(architectures), "--kernels", kernels,
                                         "--cuda-version", cuda_version])
    # the generator logs each kernel it skips; the sweep reports counts instead
    quiet = [logging.getLogger(n) for n in ("cutlass_library", "cutlass_library.generator",
                                             "cutlass_library.manifest")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.ERROR)
    try:
        manifest = Manifest(args)
        for arch in architectures:
            getattr(g, _GENERATORS[arch])(manifest, args.cuda_version)
    finally:
        for lg, lv in zip(quiet, levels, strict=True):
            lg.setLevel(lv)
    out: list[tuple[str, Any]] = []
    for kind, by_cc in manifest.operations.items():
        for ops_by_name in by_cc.values():
            for ops in ops_by_name.values():
                out += [(OperationKindNames[kind], op) for op in ops]
    return tuple(out)


def group(ops: Iterable[tuple[str, Any]]) -> list[Configuration]:
    """The configurations of the kernels, each with the kernels it stands for (first seen
    order: the generator's)."""
    by_key: dict[str, Configuration] = {}
    for kind, op in ops:
        key, fields = configuration_key(kind, op)
        cfg = by_key.get(key)
        if cfg is None:
            cfg = by_key[key] = Configuration(key, kind, str(fields.get("family", "-")), fields, operation=op)
        cfg.kernels.append(op.procedural_name())
    return list(by_key.values())


@dataclass(frozen=True)
class Counts:
    """Kernels and distinct configurations of one operation kind."""

    kind: str
    kernels: int
    configurations: int


def counts(configs: Sequence[Configuration]) -> list[Counts]:
    """Per operation kind: how many distinct configurations stand for how many kernels."""
    acc: dict[str, list[int]] = {}
    for c in configs:
        k = acc.setdefault(c.kind, [0, 0])
        k[0] += len(c.kernels)
        k[1] += 1
    return [Counts(kind, n, m) for kind, (n, m) in sorted(acc.items(), key=lambda kv: -kv[1][0])]
