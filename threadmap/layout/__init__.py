"""The CuTe layout algebra: int tuples, layouts, swizzles, tensors, copy and MMA atoms,
tiled copies and MMAs, parsing and printing.

Everything the rest of threadmap uses is importable from this package.  The modules
inside mirror CuTe's headers::

    integral_constant  static vs dynamic integers (Dyn)       numeric/integral_constant.hpp
    underscore         _ and slice/dice of int tuples         underscore.hpp
    int_tuple          int tuples                             int_tuple.hpp, stride.hpp
    arithmetic_tuple   ScaledBasis, ArithTuple                numeric/arithmetic_tuple.hpp
    dispatch           how free functions reach Swizzle/ComposedLayout
    layout             Layout and its algebra                 layout.hpp
    tensor             Tensor, local_tile, local_partition    tensor_impl.hpp
    swizzle            Swizzle, make_swizzle                  swizzle.hpp
    pointer_flagged    smem_ptr_flag_bits                     pointer_flagged.hpp
    layout_composed    ComposedLayout                         layout_composed.hpp
    swizzle_layout     swizzle o layout overloads             swizzle_layout.hpp
    atom.copy_traits   copy operations                        atom/copy_traits*.hpp
    atom.copy_atom     CopyAtom, TiledCopy, ThrCopy           atom/copy_atom.hpp
    atom.mma_traits    MMA atoms                              atom/mma_traits*.hpp
    atom.mma_atom      TiledMMA, ThrMMA                       atom/mma_atom.hpp
    arch.mma_sm90_desc  the GMMA descriptor, what it reads    arch/mma_sm90_desc.hpp
    atom.mma_traits_sm90_gmma  GMMA smem layout atoms,        atom/mma_traits_sm90_gmma.hpp
                               make_gmma_desc
    atom.copy_traits_sm90_tma  TMA descriptors and images     atom/copy_traits_sm90_tma.hpp
    arch.mma_sm100_desc  the UMMA smem/instruction            arch/mma_sm100_desc.hpp
                         descriptors, what they read
    atom.mma_traits_sm100  UMMA smem atoms, make_umma_desc,   atom/mma_traits_sm100.hpp,
                           instruction descriptors            arch/mma_sm100_umma.hpp
    atom.copy_traits_sm100_tmem  TMEM load/store atoms,       atom/copy_traits_sm100.hpp,
                                 TMEM allocation/access rules arch/tmem_allocator_sm100.hpp
    parse, calculator, printing, table, backend: threadmap's own (text, CLI, evaluation)
    tiled, mma_atoms: the former module names, re-exporting atom.*

Import order matters only in one direction: no module imports a later one, and
``swizzle_layout`` registers its overloads when this package is imported.
"""


from threadmap.layout import layout
from threadmap.layout.arch.mma_sm90_desc import GmmaDescriptor, LayoutType, gmma_smem_addresses
from threadmap.layout.arch.mma_sm100_desc import (
    UmmaInstrDescriptor,
    UmmaLayoutType,
    UmmaSmemDescriptor,
    umma_smem_addresses,
)
from threadmap.layout.arithmetic_tuple import ArithTuple, ScaledBasis, make_basis_like, tuple_str
from threadmap.layout.atom.copy_atom import (
    CopyAtom,
    ThrCopy,
    TiledCopy,
    make_tiled_copy,
    make_tiled_copy_A,
    make_tiled_copy_B,
    make_tiled_copy_C,
    make_tiled_copy_C_atom,
    make_tiled_copy_D,
    make_tiled_copy_impl,
    make_tiled_copy_S,
)
from threadmap.layout.atom.copy_traits import (
    COPY_OPS,
    CXX_TYPE_BITS,
    SM80_CP_ASYNC_CACHEALWAYS,
    SM80_CP_ASYNC_CACHEALWAYS_ZFILL,
    SM80_CP_ASYNC_CACHEGLOBAL,
    SM80_CP_ASYNC_CACHEGLOBAL_ZFILL,
    AutoVectorizingCopy,
    AutoVectorizingCopyWithAssumedAlignment,
    CopyOp,
    DefaultCopy,
    UniversalCopy,
    get_copy_op,
    type_bits,
)
from threadmap.layout.atom.copy_traits_sm90_tma import (
    BulkCopy,
    TmaCopy,
    TmaDescriptor,
    TmaViolation,
    alignment_for_swizzle,
    encode_tiled_violations,
    make_bulk_copy,
    make_bulk_copy_auto,
    make_tma_atom,
    make_tma_copy,
    tma_smem_violations,
    tma_tile_mismatches,
)
from threadmap.layout.atom.copy_traits_sm100_tmem import (
    TMEM_COPY_OPS,
    TmemCopyOp,
    TmemViolation,
    tmem_access_violations,
    tmem_allocation_violations,
    tmem_bit_map,
    tmem_copy_op,
    tmem_lanes_columns,
    tmem_op_access_violations,
)
from threadmap.layout.atom.mma_atom import (
    ThrMMA,
    TiledMMA,
    make_tiled_mma,
    partition_shape_A,
    partition_shape_B,
    partition_shape_C,
)
from threadmap.layout.atom.mma_traits import MMA_ATOMS, MMAAtom, get_mma_atom, mma_atom_names
from threadmap.layout.atom.mma_traits_sm90_gmma import (
    GMMA_CANONICAL,
    GMMA_ELEMENT_BITS,
    GMMA_LAYOUT_ATOMS,
    GmmaLayoutError,
    gmma_layout_atom,
    gmma_layout_atom_bits,
    gmma_smem_swizzle,
    make_gmma_desc,
    make_gmma_desc_tensor,
)
from threadmap.layout.atom.mma_traits_sm100 import (
    UMMA_CANONICAL,
    UMMA_OPS,
    UmmaInstrError,
    UmmaLayoutError,
    make_instr_desc,
    make_umma_desc,
    umma_instr_desc,
    umma_layout_atom,
    umma_layout_atom_bits,
    umma_operand_mismatches,
)
from threadmap.layout.atom.tile_ops import make_compact_layout
from threadmap.layout.backend import Sym
from threadmap.layout.backend import select as select_value
from threadmap.layout.int_tuple import (
    MAX_DEPTH,
    colex_less,
    compatible,
    congruent,
    crd2crd,
    crd2idx,
    elem_less,
    evenly_divides,
    flatten_to_tuple,
    idx2crd,
    inner_product,
    product,
    product_each,
    replace,
    safe_div,
    shape_div,
    shape_mod,
    tuple_max,
    unflatten,
    weakly_congruent,
)
from threadmap.layout.integral_constant import Dyn, as_dynamic, as_static, is_static
from threadmap.layout.layout import *  # noqa: F401,F403
from threadmap.layout.layout import coalesce_x, exchange_sort_order
from threadmap.layout.layout_composed import ComposedLayout, composition3, make_composed_layout
from threadmap.layout.parse import parse, parse_int_tuple, parse_layout, parse_tiler
from threadmap.layout.pointer_flagged import SmemPtrFlag
from threadmap.layout.printing import layout_grid, num_digits, print_layout
from threadmap.layout.swizzle import Swizzle, make_swizzle
from threadmap.layout.swizzle_layout import make_layout_from_swizzle, swizzled_logical_product
from threadmap.layout.table import fast_table
from threadmap.layout.tensor import (
    Tensor,
    inner_partition,
    local_partition,
    local_tile,
    make_identity_tensor,
    make_tensor,
    outer_partition,
)

__all__ = [*layout.__all__, "TmaCopy", "TmaDescriptor", "TmaViolation", "make_tma_atom", "make_tma_copy",
           "BulkCopy", "alignment_for_swizzle", "encode_tiled_violations", "make_bulk_copy", "make_bulk_copy_auto",
           "tma_smem_violations", "tma_tile_mismatches",
           "Sym", "select_value", "ArithTuple", "ScaledBasis", "make_basis_like",
           "crd2idx", "idx2crd", "crd2crd", "flatten_to_tuple", "product", "product_each",
           "inner_product", "shape_div", "shape_mod", "evenly_divides", "colex_less", "safe_div",
           "tuple_max", "unflatten",
           "replace", "compatible", "congruent", "weakly_congruent", "elem_less", "MAX_DEPTH",
           "Dyn", "as_dynamic", "as_static", "is_static", "exchange_sort_order", "coalesce_x", "tuple_str",
           "parse", "parse_int_tuple", "parse_layout", "parse_tiler", "layout_grid", "num_digits",
           "print_layout", "ComposedLayout", "composition3", "make_composed_layout",
           "SmemPtrFlag", "Swizzle", "make_swizzle", "make_layout_from_swizzle",
           "swizzled_logical_product", "Tensor", "make_tensor", "make_identity_tensor",
           "local_tile", "local_partition", "inner_partition", "outer_partition", "MMAAtom",
           "MMA_ATOMS", "get_mma_atom", "mma_atom_names", "CopyAtom", "CopyOp", "COPY_OPS",
           "ThrCopy", "ThrMMA", "TiledCopy", "TiledMMA", "get_copy_op", "make_tiled_copy",
           "make_tiled_copy_impl", "make_tiled_copy_A", "make_tiled_copy_B",
           "make_tiled_copy_C", "make_tiled_copy_C_atom", "make_tiled_copy_S",
           "make_tiled_copy_D", "make_tiled_mma", "partition_shape_A", "partition_shape_B",
           "partition_shape_C", "type_bits", "GMMA_LAYOUT_ATOMS", "gmma_layout_atom",
           "gmma_layout_atom_bits", "GMMA_ELEMENT_BITS", "GmmaDescriptor", "LayoutType", "gmma_smem_addresses",
           "GMMA_CANONICAL", "GmmaLayoutError", "make_gmma_desc", "make_gmma_desc_tensor",
           "gmma_smem_swizzle", "make_compact_layout", "fast_table",
           "UmmaLayoutType", "UmmaSmemDescriptor", "UmmaInstrDescriptor", "umma_smem_addresses",
           "UMMA_CANONICAL", "UMMA_OPS", "UmmaLayoutError", "UmmaInstrError", "make_umma_desc", "make_instr_desc",
           "umma_instr_desc", "umma_layout_atom", "umma_layout_atom_bits", "umma_operand_mismatches",
           "TMEM_COPY_OPS", "TmemCopyOp", "TmemViolation", "tmem_copy_op", "tmem_bit_map", "tmem_lanes_columns",
           "tmem_allocation_violations", "tmem_access_violations", "tmem_op_access_violations",
           "CXX_TYPE_BITS", "UniversalCopy", "SM80_CP_ASYNC_CACHEALWAYS",
           "SM80_CP_ASYNC_CACHEALWAYS_ZFILL", "SM80_CP_ASYNC_CACHEGLOBAL",
           "SM80_CP_ASYNC_CACHEGLOBAL_ZFILL", "AutoVectorizingCopy",
           "AutoVectorizingCopyWithAssumedAlignment", "DefaultCopy"]
