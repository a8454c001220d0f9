"""NVIDIA's CuTe DSL (``import cutlass.cute as cute``, PyPI ``nvidia-cutlass-dsl``) to threadmap.

:func:`convert` turns an object the DSL builds while a ``@cute.jit`` function is traced into
threadmap's object of the same CuTe name:

=====================================  ==================================================
DSL                                     threadmap (:mod:`threadmap.layout`)
=====================================  ==================================================
``cute.Layout``                         :class:`Layout` (``ScaledBasis`` strides too)
``cute.Swizzle``                        :class:`Swizzle`
``cute.ComposedLayout``                 :class:`ComposedLayout` (``inner o offset o outer``)
``cute.ScaledBasis``                    :class:`ScaledBasis`
``CopyAtom``                            :class:`CopyAtom` (universal, ``cp.async``,
                                        ``ldmatrix``/``stmatrix``)
``TiledCopy`` / ``ThrCopy``             :class:`TiledCopy` / :class:`ThrCopy`
``MmaAtom``                             :class:`MMAAtom` (universal FMA, SM80 warp MMAs,
                                        SM90 warpgroup GMMAs)
``TiledMma`` / ``ThrMma``               :class:`TiledMMA` / :class:`ThrMMA`
=====================================  ==================================================

Exactness is checked, not assumed: an atom is looked up by its operation and parameters and
its thread and value layouts are compared with the DSL's (every entry); a tiled copy keeps the
DSL's ``TiledLayout_TV`` and tiler and its source and destination TV layouts are compared with
the DSL's; a tiled MMA keeps the DSL's thread layout and permutations and its A, B and C TV
layouts are compared with the DSL's.  A difference raises :class:`~threadmap.errors.AtomError`
naming both.  A value the DSL only knows at run time (printed ``?``), an atom threadmap does not
model (TMA, SM89 FP8, block-scaled, SM100) or an object that is no DSL object raises a
:class:`~threadmap.errors.ThreadmapError` that says which.

DSL objects live only while a ``@cute.jit`` function is traced: :func:`capture` runs a function
inside such a trace and converts what it returns, :func:`traced` runs it and returns its result
unconverted.  The DSL is imported only when one of them runs; nothing here imports it at import
time, so :func:`is_dsl_object` tells a DSL object by its type's module without the DSL.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from threadmap.errors import AtomError, DependencyError, LayoutError, ThreadmapError
from threadmap.layout import (
    ComposedLayout,
    CopyAtom,
    Layout,
    MMAAtom,
    ScaledBasis,
    Swizzle,
    ThrCopy,
    TiledCopy,
    TiledMMA,
    _,
    get_copy_op,
    get_mma_atom,
    size,
    tiled_product,
)

__all__ = ["DSL_EXTRA", "ELEMENT_NAMES", "capture", "convert", "convert_all", "element_bits", "element_name",
           "is_dsl_object", "require_dsl", "require_live", "smem_layout", "traced"]

#: what installs the DSL (the message of :class:`~threadmap.errors.DependencyError`)
DSL_EXTRA = ("the CuTe DSL is not installed: pip install 'threadmap[dsl]' (NVIDIA's nvidia-cutlass-dsl>=4.8.1, "
             "import cutlass.cute)")

#: most entries one compared layout may have (a replicated GMMA operand has 128 x its tile)
MAX_COMPARE = 1 << 22


def require_dsl() -> tuple[Any, Any]:
    """``(cutlass, cutlass.cute)``, or :class:`~threadmap.errors.DependencyError` naming the extra."""
    try:
        import cutlass
        import cutlass.cute as cute
    except ImportError as e:  # an unrelated 'cutlass' module has no 'cute'
        raise DependencyError(f"{DSL_EXTRA} ({e})") from None
    return cutlass, cute


def is_dsl_object(x: Any) -> bool:
    """Whether ``x`` is an object of the CuTe DSL (its type's module is ``cutlass`` or below):
    decided without importing the DSL, so it is safe where the DSL is absent."""
    mod = getattr(type(x), "__module__", "") or ""
    return mod == "cutlass" or mod.startswith("cutlass.")


def _type_names(x: Any) -> set[str]:
    return {c.__name__ for c in type(x).__mro__}


def _text(x: Any) -> str:
    try:
        return str(x)
    except Exception:  # a DSL object that cannot print outside its trace
        return f"<{type(x).__name__}>"


# ------------------------------------------------------------------------------ int tuples
def _dynamic(what: str, obj: Any, part: str) -> LayoutError:
    return LayoutError(f"the CuTe DSL {what} {_text(obj)} has a dynamic {part} (printed ?): threadmap needs "
                       "static layouts; make the value a compile-time constant (a Python int or a "
                       "cutlass.Constexpr argument)")


def _leaf(x: Any, what: str, obj: Any, part: str, basis: bool) -> Any:
    if isinstance(x, bool):
        raise LayoutError(f"the CuTe DSL {what} {_text(obj)} has a boolean in its {part}")
    if isinstance(x, (int, np.integer)):
        return int(x)
    if basis and "ScaledBasis" in _type_names(x) and is_dsl_object(x):
        mode = getattr(x, "mode", None)
        if not isinstance(mode, (list, tuple)) or not all(isinstance(i, int) for i in mode):
            raise _dynamic(what, obj, part)
        # the DSL lists the basis path outermost first, as threadmap does (both print 1@0@1 for E<1,0>)
        return ScaledBasis(_leaf(x.value, what, obj, part, False), tuple(mode))
    raise _dynamic(what, obj, part)


def _int_tuple(x: Any, what: str, obj: Any, part: str, basis: bool = False) -> Any:
    """A DSL int tuple (Python ints and tuples for its static parts) as threadmap's."""
    if isinstance(x, (tuple, list)):
        return tuple(_int_tuple(v, what, obj, part, basis) for v in x)
    return _leaf(x, what, obj, part, basis)


# ------------------------------------------------------------------------------ layouts
def _layout(x: Any, what: str = "layout") -> Layout:
    """Law: same shape and stride trees, so ``result(i) == x(i)`` for every index ``i``."""
    shape = _int_tuple(x.shape, what, x, "shape")
    stride = _int_tuple(x.stride, what, x, "stride", basis=True)
    try:
        return Layout(shape, stride)
    except ThreadmapError as e:
        raise LayoutError(f"the CuTe DSL {what} {_text(x)}: {e}") from None


def _swizzle(x: Any) -> Swizzle:
    """Law: ``Swizzle(num_bits, num_base, num_shift)``, the same bit function."""
    vals = [_leaf(getattr(x, a), "swizzle", x, a, False) for a in ("num_bits", "num_base", "num_shift")]
    return Swizzle(*vals)


def _composed(x: Any) -> ComposedLayout:
    """Law: ``result(c) == inner(offset + outer(c))``, the DSL's ``inner o offset o outer``."""
    inner = _function(x.inner, x)
    offset = _leaf(x.offset, "composed layout", x, "offset", False)
    outer = _function(x.outer, x)
    try:
        return ComposedLayout(inner, offset, outer)
    except ThreadmapError as e:
        raise LayoutError(f"the CuTe DSL composed layout {_text(x)}: {e}") from None


def _function(x: Any, whole: Any) -> Any:
    names = _type_names(x)
    if "Swizzle" in names:
        return _swizzle(x)
    if "_ComposedLayout" in names or "ComposedLayout" in names:
        return _composed(x)
    if "_Layout" in names or "Layout" in names:
        return _layout(x)
    raise LayoutError(f"the CuTe DSL composed layout {_text(whole)} holds {type(x).__name__} {_text(x)}, "
                      "not a layout or a swizzle")


def _tile_mode(x: Any, what: str, obj: Any) -> Any:
    """A tiler or permutation mode: ``_`` (the DSL's None), an int, or a layout; ``n:1`` is the
    integer ``n``, as CuTe applies an integer mode (``make_layout(n)``)."""
    if x is None:
        return _
    if isinstance(x, (tuple, list)):
        return tuple(_tile_mode(v, what, obj) for v in x)
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    lay = _layout(x, what)
    if isinstance(lay.shape, int) and lay.stride == 1:
        return lay.shape
    return lay


# ------------------------------------------------------------------------------ element types
#: DSL numeric types -> C++ value types of Copy_Atom (``sizeof_bits`` known to threadmap)
_CXX_TYPES = {
    "Float64": "double", "Float32": "float", "TFloat32": "tfloat32_t", "Float16": "half_t",
    "BFloat16": "bfloat16_t", "Float8E4M3FN": "float_e4m3_t", "Float8E5M2": "float_e5m2_t",
    "Int64": "int64_t", "Uint64": "uint64_t", "Int32": "int32_t", "Uint32": "uint32_t", "Int16": "int16_t",
    "Uint16": "uint16_t", "Int8": "int8_t", "Uint8": "uint8_t", "Int4": "int4_t",
}
#: DSL numeric types -> spec element names (``threadmap.spec.schema.ELEMENT_BITS``)
#: the DSL's numeric type names -> spec element names
ELEMENT_NAMES = {
    "Float64": "f64", "Float32": "f32", "TFloat32": "tf32", "Float16": "f16", "BFloat16": "bf16",
    "Float8E4M3FN": "e4m3", "Float8E5M2": "e5m2", "Int64": "i64", "Uint64": "u64", "Int32": "i32",
    "Uint32": "u32", "Int16": "i16", "Uint16": "u16", "Int8": "i8", "Uint8": "u8",
}


def _numeric(t: Any, what: str) -> tuple[str, int]:
    name, width = getattr(t, "__name__", None), getattr(t, "width", None)
    if not isinstance(name, str) or not isinstance(width, int) or not is_dsl_object(t):
        raise AtomError(f"{what}: expected a CuTe DSL numeric type (cutlass.Float16, ...), got {t!r}")
    return name, width


def element_name(t: Any) -> str:
    """The spec element name of a DSL numeric type: ``cutlass.Float16`` -> ``"f16"``."""
    name, _w = _numeric(t, "element")
    try:
        return ELEMENT_NAMES[name]
    except KeyError:
        raise AtomError(f"the CuTe DSL type {name} has no spec element name; known: "
                        f"{', '.join(ELEMENT_NAMES)}") from None


def element_bits(t: Any) -> int:
    """``sizeof_bits`` of a DSL numeric type (its ``width``), or ``t`` when it is a bit count."""
    if isinstance(t, int) and not isinstance(t, bool):
        if t < 1:
            raise AtomError(f"element: a bit count is positive, got {t}")
        return t
    if not is_dsl_object(t):
        raise AtomError(f"element: expected a CuTe DSL numeric type (cutlass.Float16, ...) or a bit count, got {t!r}")
    return _numeric(t, "element")[1]


def _value_type(t: Any) -> str | int:
    name, width = _numeric(t, "copy atom value type")
    return _CXX_TYPES.get(name, width)


# ------------------------------------------------------------------------------ comparisons
def _table(lay: Layout) -> np.ndarray:
    n = size(lay)
    if not isinstance(n, int) or n > MAX_COMPARE:
        raise AtomError(f"{lay} has {n} entries, more than the {MAX_COMPARE} a conversion compares")
    return lay.table(dtype=np.int64)


def _same(what: str, ours: Layout, theirs: Layout) -> None:
    """Raise unless ``ours`` and the DSL's ``theirs`` are the same function (same size, every
    entry equal): threadmap's model of the object must be what the DSL built."""
    if size(ours) != size(theirs) or not np.array_equal(_table(ours), _table(theirs)):
        raise AtomError(f"{what}: the CuTe DSL has {theirs}, threadmap's model has {ours}; they differ, so "
                        "threadmap does not model this object exactly")


# ------------------------------------------------------------------------------ copy atoms
_UNIVERSAL_BITS = re.compile(r"universal_copy<[^<>,]+(?:,\s*(\d+)\s*b)?>")
_ASYNC_BITS = re.compile(r"simt_async_copy<[^<>]*?(\d+)\s*b>")
_COPY_BITS = re.compile(r"copy_bits\s*=\s*(\d+)")
_TMA_NAMES = ("TmaCopyOp", "CopyBulkG2SOp", "CopyBulkG2SMulticastOp", "CopyBulkS2GOp", "CopyBulkS2GByteMaskOp",
              "CopyBulkS2SOp", "CopyDsmemStoreOp")


def _atom_type(x: Any) -> str:
    return _text(getattr(x, "type", ""))


def _copy_op(atom: Any, bits: int) -> Any:
    """threadmap's copy operation for the DSL atom's op (and the bits its type records)."""
    op = atom.op
    names = _type_names(op)
    name = type(op).__name__
    ty = _atom_type(atom)
    if name == "CopyUniversalOp":
        m = _UNIVERSAL_BITS.search(ty)
        if m is None:
            raise AtomError(f"the CuTe DSL universal copy atom has the type {ty}, which threadmap cannot read")
        # without num_bits_per_copy the DSL auto-vectorizes: CuTe's AutoVectorizingCopy
        if not m.group(1):
            return get_copy_op("AutoVectorizingCopy")
        try:
            return get_copy_op(f"UniversalCopy<uint{m.group(1)}_t>")
        except ThreadmapError:
            raise AtomError(f"the CuTe DSL universal copy of {m.group(1)} bits per copy ({ty}) is not modelled by "
                            "threadmap: it models UniversalCopy of 8 to 128 bits") from None
    if name in ("CopyG2ROp", "CopyR2GOp", "CopyS2ROp", "CopyR2SOp"):
        # loads and stores with memory attributes: the layouts of a universal copy of that width
        m = _COPY_BITS.search(ty)
        return get_copy_op(f"UniversalCopy<uint{m.group(1)}_t>") if m else get_copy_op("AutoVectorizingCopy")
    if name == "CopyG2SOp":
        m = _ASYNC_BITS.search(ty)
        if m is None:
            raise AtomError(f"the CuTe DSL cp.async atom has the type {ty}: threadmap needs its width "
                            "(make_copy_atom(..., num_bits_per_copy=...))")
        mode = getattr(getattr(op, "cache_mode", None), "name", "ALWAYS")
        kind = "CACHEGLOBAL" if mode == "GLOBAL" else "CACHEALWAYS"
        return get_copy_op(f"SM80_CP_ASYNC_{kind}<uint{m.group(1)}_t>")
    if name in ("LdMatrix8x8x16bOp", "LdMatrix8x16x8bOp", "StMatrix8x8x16bOp") \
            and getattr(op, "unpack_bits", None) is None:
        n = getattr(op, "num_matrices", None)
        if n not in (1, 2, 4):
            raise AtomError(f"the CuTe DSL {name} has num_matrices={n!r}")
        ld = name.startswith("Ld")
        prefix, kind = ("SM75", "LDSM") if ld else ("SM90", "STSM")
        # .trans moves 16-bit values: U16x{2n}; otherwise 32-bit registers: U32x{n}
        return get_copy_op(f"{prefix}_U16x{2 * n}_{kind}_T" if op.transpose else f"{prefix}_U32x{n}_{kind}_N")
    if names & set(_TMA_NAMES) or name.startswith(("CopyBulkTensor", "CopyReduceBulkTensor")):
        raise AtomError(f"the CuTe DSL TMA/bulk copy atom {name} is not yet modelled by threadmap.dsl.convert: "
                        "build threadmap's TMA copy with threadmap.layout.make_tma_copy(op, gmem, smem, cta_tile) "
                        "from the converted global and shared layouts")
    raise AtomError(f"the CuTe DSL copy operation {name} ({ty}) is not yet modelled by threadmap; modelled: "
                    "CopyUniversalOp, CopyG2R/R2G/S2R/R2SOp, cpasync.CopyG2SOp, warp.LdMatrix8x8x16bOp, "
                    "warp.LdMatrix8x16x8bOp without unpacking, warp.StMatrix8x8x16bOp")


def _copy_atom(atom: Any) -> CopyAtom:
    """Law: the atom's ThrID, source and destination TV layouts equal the DSL's (checked)."""
    vt = atom.value_type
    _name, bits = _numeric(vt, "copy atom value type")
    op = _copy_op(atom, bits)
    try:
        ours = CopyAtom(op, _value_type(vt))
    except ThreadmapError as e:
        raise AtomError(f"the CuTe DSL copy atom {_atom_type(atom)}: {e}") from None
    what = f"the copy atom {ours.cxx_type}"
    _same(f"{what} ThrID", ours.thr_id, _layout(atom.thr_id, "copy atom ThrID"))
    _same(f"{what} source TV layout", ours.val_layout_src, _layout(atom.layout_src_tv, "copy atom TV layout"))
    _same(f"{what} destination TV layout", ours.val_layout_dst, _layout(atom.layout_dst_tv, "copy atom TV layout"))
    return ours


def _tiled_copy(tc: Any) -> TiledCopy:
    """Law: the DSL's ``TiledLayout_TV`` and ``Tiler_MN``; ``get_layoutS_TV``/``get_layoutD_TV``
    equal the DSL's ``layout_src_tv_tiled``/``layout_dst_tv_tiled`` (checked)."""
    atom = _copy_atom(tc)
    layout_tv = _layout(tc.layout_tv_tiled, "TiledLayout_TV")
    tiler = _tile_mode(tuple(tc.tiler_mn), "Tiler_MN", tc)
    try:
        ours = TiledCopy(atom, layout_tv, tiler)
        src, dst = ours.get_layoutS_TV(), ours.get_layoutD_TV()
    except ThreadmapError as e:
        raise AtomError(f"the CuTe DSL tiled copy of {atom.cxx_type} with TiledLayout_TV {layout_tv}: {e}") from None
    what = f"the tiled copy of {atom.cxx_type} (TiledLayout_TV {layout_tv})"
    _same(f"{what}: the source TV layout", src, _layout(tc.layout_src_tv_tiled, "source TV layout"))
    _same(f"{what}: the destination TV layout", dst, _layout(tc.layout_dst_tv_tiled, "destination TV layout"))
    return ours


# ------------------------------------------------------------------------------ MMA atoms
_FMA_TYPES = {"Float32": "float", "Float16": "half_t", "Float64": "double"}
_FMA_SHORT = {"Float32": "f32", "Float16": "f16", "Float64": "f64"}
_SM80_TYPES = {("Float16", "Float16"): "F16F16F16F16", ("Float16", "Float32"): "F32F16F16F32",
               ("BFloat16", "Float32"): "F32BF16BF16F32"}
_SM90_TYPES = {("Float16", "Float16"): "F16F16F16", ("Float16", "Float32"): "F32F16F16",
               ("BFloat16", "Float32"): "F32BF16BF16"}


def _dtype_name(t: Any) -> str:
    return str(getattr(t, "__name__", t))


def _mma_op(op: Any) -> MMAAtom:
    name, module = type(op).__name__, type(op).__module__
    if name == "MmaUniversalOp":
        t = _dtype_name(op.abacc_dtype)
        base = get_mma_atom("UniversalFMA")
        if t == "Float32":
            return base
        if t not in _FMA_TYPES:
            raise AtomError(f"the CuTe DSL universal FMA of {t} is not modelled")
        c, s = _FMA_TYPES[t], _FMA_SHORT[t]
        return replace(base, val_type_d=s, val_type_a=s, val_type_b=s, val_type_c=s,
                       cxx_template_args=f"<{c},{c},{c},{c}>")
    if module.endswith("warp.mma") and name == "MmaF16BF16Op":
        key = (_dtype_name(op.ab_dtype), _dtype_name(op.acc_dtype))
        k = tuple(op.shape_mnk)[2]
        if key not in _SM80_TYPES:
            raise AtomError(f"the CuTe DSL warp MMA {key} is not modelled")
        return get_mma_atom(f"SM80_16x8x{k}_{_SM80_TYPES[key]}_TN")
    if module.endswith("warp.mma") and name == "MmaTF32Op":
        return get_mma_atom(f"SM80_16x8x{tuple(op.shape_mnk)[2]}_F32TF32TF32F32_TN")
    if module.endswith("warpgroup.mma") and name == "MmaF16BF16Op":
        key = (_dtype_name(op.a_dtype), _dtype_name(op.acc_dtype))
        shape = tuple(op.shape_mnk)
        if key not in _SM90_TYPES:
            raise AtomError(f"the CuTe DSL warpgroup MMA {key} is not modelled")
        src = {"SMEM": "SS", "RMEM": "RS"}[op.a_src.name]
        a, b = op.a_major_mode.name, op.b_major_mode.name
        return get_mma_atom(f"SM90_64x{shape[1]}x16_{_SM90_TYPES[key]}_{src}<GMMA::Major::{a},GMMA::Major::{b}>")
    raise AtomError(f"the CuTe DSL MMA operation {module}.{name} is not yet modelled by threadmap; modelled: "
                    "MmaUniversalOp, warp.MmaF16BF16Op, warp.MmaTF32Op (SM80), warpgroup.MmaF16BF16Op (SM90 GMMA)")


def _mma_atom(m: Any) -> MMAAtom:
    """Law: the atom's Shape_MNK, ThrID and A, B, C TV layouts equal the DSL's (checked)."""
    atom = _mma_op(m.op)
    shape = _int_tuple(m.shape_mnk, "MMA atom", m, "Shape_MNK")
    if tuple(shape) != atom.shape_mnk:
        raise AtomError(f"the CuTe DSL MMA atom has Shape_MNK {shape}, threadmap's {atom.cxx_type} has "
                        f"{atom.shape_mnk}")
    what = f"the MMA atom {atom.cxx_type}"
    _same(f"{what} ThrID", atom.thr_id, _layout(m.thr_id, "MMA ThrID"))
    for op_, ours in (("A", atom.layout_a), ("B", atom.layout_b), ("C", atom.layout_c)):
        _same(f"{what} {op_} TV layout", ours, _layout(getattr(m, f"tv_layout_{op_}"), f"MMA {op_} TV layout"))
    return atom


def _thr_layout_mnk(vmnk: Layout, atom: MMAAtom) -> Layout:
    """``AtomLayoutMNK`` from ``ThrLayoutVMNK = tiled_product(ThrID, AtomLayoutMNK)``: modes 1..3
    with their strides divided by ``size(ThrID)`` (the product's scale), checked by rebuilding."""
    n = size(atom.thr_id)

    def unscale(d: Any) -> Any:
        if isinstance(d, tuple):
            return tuple(unscale(x) for x in d)
        if d % n:
            raise AtomError(f"the CuTe DSL ThrLayoutVMNK {vmnk} is not tiled_product({atom.thr_id}, AtomLayoutMNK)")
        return d // n

    shape, stride = vmnk.shape, vmnk.stride
    if not isinstance(shape, tuple) or len(shape) != 4:
        raise AtomError(f"the CuTe DSL ThrLayoutVMNK {vmnk} is not rank 4")
    mnk = Layout(shape[1:], unscale(stride[1:]))
    _same("the tiled MMA's ThrLayoutVMNK", tiled_product(atom.thr_id, mnk), vmnk)
    return mnk


def _tiled_mma(t: Any) -> TiledMMA:
    """Law: the DSL's atom, ``AtomLayoutMNK`` and ``PermutationMNK``; ``get_layoutA/B/C_TV``
    equal the DSL's ``tv_layout_A/B/C_tiled`` (checked)."""
    atom = _mma_atom(t)
    vmnk = _layout(t.thr_layout_vmnk, "ThrLayoutVMNK")
    mnk = _thr_layout_mnk(vmnk, atom)
    perm = tuple(_tile_mode(p, "PermutationMNK", t) for p in t.permutation_mnk)
    if len(perm) != 3:
        raise AtomError(f"the CuTe DSL tiled MMA has a rank-{len(perm)} PermutationMNK")
    try:
        ours = TiledMMA(atom, mnk, perm)  # type: ignore[arg-type]
        tv = {"A": ours.get_layoutA_TV(), "B": ours.get_layoutB_TV(), "C": ours.get_layoutC_TV()}
    except ThreadmapError as e:
        raise AtomError(f"the CuTe DSL tiled MMA of {atom.cxx_type} over {mnk}: {e}") from None
    for op_, lay in tv.items():
        _same(f"the tiled MMA of {atom.cxx_type} over {mnk}: the {op_} TV layout", lay,
              _layout(getattr(t, f"tv_layout_{op_}_tiled"), f"{op_} TV layout"))
    return ours


def _thr_idx(x: Any) -> int:
    i = x.thr_idx
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise AtomError(f"the CuTe DSL {type(x).__name__} is sliced at a dynamic thread index ({_text(i)}): "
                        "convert the tiled object, or slice it at a Python int")
    return int(i)


# ------------------------------------------------------------------------------ entry points
def convert(x: Any) -> Any:
    """threadmap's object for the CuTe DSL object ``x`` (see the module's table); tuples and
    lists convert element by element, Python ints, None and threadmap objects pass unchanged,
    a DSL integer the DSL knows while tracing is its Python int.

    Call it while the DSL traces (inside a ``@cute.jit`` function, or through :func:`capture`).
    Law: the result evaluates as the DSL's object does, everywhere (the layouts' shape and
    stride trees are the DSL's; atoms, tiled copies and tiled MMAs are compared entry by entry
    with the DSL's TV layouts).  Raises :class:`~threadmap.errors.LayoutError` or
    :class:`~threadmap.errors.AtomError` for dynamic values and unmodelled atoms."""
    if isinstance(x, (tuple, list)):
        return type(x)(convert(v) for v in x)
    if x is None or isinstance(x, (bool, int, str, np.integer)) or not is_dsl_object(x):
        if x is None or isinstance(x, (int, str, np.integer)) or type(x).__module__.startswith("threadmap."):
            return x
        raise LayoutError(f"convert takes CuTe DSL objects (cutlass.cute), got {type(x).__name__} {x!r}")
    require_live(x)
    try:
        return _convert_dsl(x)
    except ThreadmapError:
        raise
    except Exception as e:  # the DSL's own failure on an object it cannot read
        raise LayoutError(f"the CuTe DSL could not read its {type(x).__name__} ({type(e).__name__}: {e}); "
                          f"{_LIVE_ONLY}") from None


_LIVE_ONLY = ("DSL objects live only while a @cute.jit function is traced: convert them there, or build them "
              "in a function given to threadmap.dsl.capture / traced")


def require_live(x: Any) -> None:
    """Raise :class:`~threadmap.errors.LayoutError` unless every IR value ``x`` holds belongs to
    the trace running now.  A DSL object outlives its trace as a Python object, but its IR is
    freed with the trace: reading it then crashes the interpreter (a segmentation fault, on a
    swizzle's or an atom's type), so the values' context is compared first, which reads no IR."""
    try:
        from cutlass._mlir import ir
        from cutlass.base_dsl.utils.mlir_value_tree import extract_mlir_values
    except ImportError:  # another DSL layout: the DSL's own errors are then all there is
        return
    try:
        values = [v for v in extract_mlir_values(x) if isinstance(v, ir.Value)]
    except Exception:  # not a value tree the DSL knows: nothing of its IR to go stale
        return
    if not values:
        return
    current = ir.Context.current
    if current is None or any(v.context != current for v in values):
        raise LayoutError(f"the CuTe DSL {type(x).__name__} was used after the @cute.jit trace that built it "
                          f"ended ({'no trace is running' if current is None else 'another trace is running'}); "
                          f"{_LIVE_ONLY}")


def _convert_dsl(x: Any) -> Any:
    names = _type_names(x)
    if "ThrCopy" in names:
        return ThrCopy(_tiled_copy(x), _thr_idx(x))
    if "TiledCopy" in names:
        return _tiled_copy(x)
    if "CopyAtom" in names:
        return _copy_atom(x)
    if "ThrMma" in names:
        return _tiled_mma(x).get_slice(_thr_idx(x))
    if "TiledMma" in names:
        return _tiled_mma(x)
    if "MmaAtom" in names:
        return _mma_atom(x)
    if "_ComposedLayout" in names or "ComposedLayout" in names:
        return _composed(x)
    if "Swizzle" in names:
        return _swizzle(x)
    if "_Layout" in names or "Layout" in names:
        return _layout(x)
    if "ScaledBasis" in names:
        return _leaf(x, "basis", x, "value", True)
    if "_Tensor" in names or "Tensor" in names:
        raise LayoutError(f"the CuTe DSL tensor {_text(x)}: convert its layout (tensor.layout); its iterator, a "
                          "pointer or coordinate, is the spec's tensor and tile")
    if "Numeric" in names or "Integer" in names:
        try:  # a DSL integer computed from Python ints knows its value (the builder takes it too)
            return operator.index(x)
        except Exception:
            raise LayoutError(f"the CuTe DSL value {_text(x)} ({type(x).__name__}) is dynamic (printed ?): "
                              "threadmap needs static integers") from None
    raise LayoutError(f"threadmap cannot convert the CuTe DSL {type(x).__module__}.{type(x).__name__} "
                      f"{_text(x)}; it converts layouts, swizzles, composed layouts, copy and MMA atoms, "
                      "tiled copies and tiled MMAs")


def convert_all(x: Any) -> Any:
    """:func:`convert` applied to every DSL object inside tuples, lists and dicts; every other
    value passes unchanged (so a function may return its objects with names and sizes)."""
    if isinstance(x, dict):
        return {k: convert_all(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x)(convert_all(v) for v in x)
    return convert(x) if is_dsl_object(x) else x


def smem_layout(layout: Any, swizzle: Any = None, *, element: Any) -> Any:
    """The element-offset layout of a shared tensor whose *pointer* carries ``swizzle``
    (``get_tensor(layout, swizzle=sw)``, ``make_tensor(recast_ptr(ptr, sw), layout)``): the DSL
    swizzles the byte address, which on offsets of ``element`` (a DSL type or a bit count) is
    ``upcast<bytes>(sw)``.  ``layout`` may be a composed ``sw o 0 o L`` whose swizzle the kernel
    moves to the pointer (``get_tensor(c.outer, swizzle=c.inner)``, the GMMA atoms).  DSL or
    threadmap objects.  Law: ``result(c) * bytes == sw(layout(c) * bytes)`` for a tensor based
    at a multiple of the swizzle's period; a swizzle that moves bytes inside an element is refused."""
    lay = convert(layout) if is_dsl_object(layout) else layout
    sw = convert(swizzle) if is_dsl_object(swizzle) else swizzle
    if sw is None and isinstance(lay, ComposedLayout) and isinstance(lay.layout_a, Swizzle) and lay.offset == 0:
        sw, lay = lay.layout_a, lay.layout_b
    if not isinstance(lay, Layout):
        raise LayoutError(f"smem_layout: the tensor's layout is a Layout (or sw o 0 o Layout), got {lay!r}")
    if sw is None:
        return lay
    if not isinstance(sw, Swizzle):
        raise LayoutError(f"smem_layout: expected a swizzle, got {sw!r}")
    bits = element_bits(element)
    if bits % 8 or (bits // 8) & (bits // 8 - 1):
        raise LayoutError(f"smem_layout: a pointer swizzle needs whole power-of-two-byte elements, got {bits} bits")
    k = (bits // 8).bit_length() - 1
    if sw.num_bits and sw.num_base < k:
        raise LayoutError(f"smem_layout: {sw} on byte addresses moves bytes inside a {bits}-bit element (its base "
                          f"{sw.num_base} is below log2({bits // 8}))")
    esw = Swizzle(sw.num_bits, sw.num_base - k, sw.num_shft) if sw.num_bits else Swizzle(0, 0, 0)
    return ComposedLayout(esw, 0, lay)


# ------------------------------------------------------------------------------ tracing
_RUNNER: Any = None


def _run_in_trace(fn):  # type: ignore[no-untyped-def]
    # the DSL reads this function's source to trace it: keep it a plain module-level def
    fn()


def _tracing() -> bool:
    """Whether a DSL trace is running (its MLIR context is entered)."""
    try:
        from cutlass._mlir import ir
    except ImportError:
        return False
    return ir.Context.current is not None


def traced(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` run inside a ``@cute.jit`` trace (so it may build DSL layouts,
    atoms, tiled copies and MMAs); its result, unconverted.  Nothing runs on a GPU: the traced
    function has no kernel; nothing is written to the DSL's compile cache.  Exceptions ``fn``
    raises propagate unchanged.  Called while a trace runs (inside a ``@cute.jit`` function,
    or within another ``traced``), ``fn`` runs in that trace."""
    global _RUNNER
    cutlass, cute = require_dsl()
    if _tracing():  # inside a trace already (a @cute.jit function, or traced within traced): run in it
        return fn(*args, **kwargs)
    if _RUNNER is None:
        _run_in_trace.__annotations__ = {"fn": cutlass.Constexpr}  # a Python callable is a compile-time value
        _RUNNER = cute.jit(_run_in_trace)
    box: list[Any] = []
    # no_cache: every call traces anew (its objects are the point) and writes nothing to the DSL's cache
    _RUNNER(lambda: box.append(fn(*args, **kwargs)), no_cache=True)
    return box[0]


def capture(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` run inside a ``@cute.jit`` trace, every DSL object in its result
    (inside tuples, lists and dicts) converted by :func:`convert` before the trace ends.  Use it
    to take the layouts, tiled copies and MMAs a kernel's helper functions build into threadmap."""
    return traced(lambda: convert_all(fn(*args, **kwargs)))
