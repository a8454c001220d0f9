"""The CuTe layout algebra: int tuples, layouts, swizzles, tensors, copy and MMA atoms,
tiled copies and MMAs, parsing and printing.

Everything the rest of threadmap uses is importable from this package; the modules
inside mirror CuTe's headers.
"""

from threadmap.layout.backend import Sym
from threadmap.layout.backend import select as select_value
from threadmap.layout.int_tuple import (
    ArithTuple,
    ScaledBasis,
    Underscore,
    _,
    crd2idx,
    flatten_to_tuple,
    idx2crd,
    product,
    product_each,
)
from threadmap.layout.layout import *  # noqa: F401,F403
from threadmap.layout.layout import __all__ as _layout_all
from threadmap.layout.layout import tuple_str
from threadmap.layout.mma_atoms import MMAAtom, get_mma_atom, mma_atom_names
from threadmap.layout.parse import parse, parse_int_tuple, parse_layout
from threadmap.layout.printing import layout_grid, num_digits, print_layout
from threadmap.layout.swizzle import ComposedLayout, SmemPtrFlag, Swizzle, make_swizzle
from threadmap.layout.tiled import (
    CopyAtom,
    CopyOp,
    ThrCopy,
    ThrMMA,
    TiledCopy,
    TiledMMA,
    get_copy_op,
    make_tiled_copy,
    make_tiled_mma,
    type_bits,
)

__all__ = [*_layout_all, "Underscore", "_", "Sym", "select_value", "ArithTuple", "ScaledBasis", "crd2idx",
           "idx2crd", "flatten_to_tuple", "product", "product_each", "tuple_str", "parse",
           "parse_int_tuple", "parse_layout", "layout_grid", "num_digits", "print_layout",
           "ComposedLayout", "SmemPtrFlag", "Swizzle", "make_swizzle", "MMAAtom", "get_mma_atom",
           "mma_atom_names", "CopyAtom", "CopyOp", "ThrCopy", "ThrMMA", "TiledCopy", "TiledMMA",
           "get_copy_op", "make_tiled_copy", "make_tiled_mma", "type_bits"]
