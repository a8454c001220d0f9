"""The CuTe layout algebra: int tuples, layouts, swizzles, tensors and parsing."""

from threadmap.layout.backend import Sym
from threadmap.layout.backend import select as select_value
from threadmap.layout.int_tuple import ArithTuple, ScaledBasis, Underscore, _, crd2idx, idx2crd
from threadmap.layout.layout import *  # noqa: F401,F403
from threadmap.layout.layout import __all__ as _layout_all
from threadmap.layout.parse import parse, parse_int_tuple, parse_layout
from threadmap.layout.swizzle import ComposedLayout, Swizzle

__all__ = [*_layout_all, "Underscore", "_", "Sym", "select_value", "ArithTuple", "ScaledBasis", "crd2idx",
           "idx2crd", "parse", "parse_int_tuple", "parse_layout", "ComposedLayout", "Swizzle"]
