"""The public namespace contract: every name importable from ``threadmap.layout`` and
``threadmap.cutlass`` before the package was split along CuTe's headers stays importable
(the lists are those of the package as it was), and nothing in the package imports itself
in a cycle."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import threadmap.cutlass as tc
import threadmap.layout as tl

LAYOUT_NAMES = [
    'ArithTuple', 'ComposedLayout', 'CopyAtom', 'CopyOp', 'GenColMajor', 'GenRowMajor',
    'Layout', 'LayoutLeft', 'LayoutRight', 'MMAAtom', 'ScaledBasis', 'SmemPtrFlag', 'Swizzle',
    'Sym', 'Tensor', 'ThrCopy', 'ThrMMA', 'TiledCopy', 'TiledMMA', 'Underscore', '_', 'append',
    'backend', 'blocked_product', 'coalesce', 'complement', 'composition', 'cosize', 'crd2idx',
    'depth', 'dice', 'downcast', 'filter', 'filter_zeros', 'flat_divide', 'flat_product',
    'flatten_layout', 'flatten_to_tuple', 'get', 'get_copy_op', 'get_mma_atom', 'group',
    'idx2crd', 'inner_partition', 'int_tuple', 'layout', 'layout_grid', 'left_inverse',
    'local_partition', 'local_tile', 'logical_divide', 'logical_product',
    'make_identity_layout', 'make_identity_tensor', 'make_layout', 'make_layout_like',
    'make_ordered_layout', 'make_swizzle', 'make_tensor', 'make_tiled_copy', 'make_tiled_mma',
    'max_common_layout', 'max_common_vector', 'mma_atom_names',
    'nullspace', 'num_digits',
    'outer_partition', 'parse', 'parse_int_tuple', 'parse_layout', 'prepend', 'print_layout',
    'printing', 'product', 'product_each', 'raked_product', 'rank', 'recast_layout',
    'right_inverse', 'select', 'select_value', 'shape', 'size', 'slice_', 'slice_and_offset',
    'stride', 'swizzle', 'table', 'take', 'tile_to_shape', 'tile_unzip', 'tiled_divide',
    'tiled_product', 'tuple_str', 'type_bits', 'upcast', 'zip_layouts', 'zipped_divide',
    'zipped_product',
]
CUTLASS_NAMES = [
    'PitchLinear2DThreadTileStripminedThreadMap', 'PitchLinearShape',
    'PitchLinearStridedWarpRakedThreadMap', 'PitchLinearStripminedThreadMap',
    'PitchLinearThreadMap', 'PitchLinearTilePolicyStripminedThreadContiguous',
    'PitchLinearTilePolicyStripminedThreadStrided', 'PitchLinearWarpRakedThreadMap',
    'PitchLinearWarpStripedThreadMap', 'THREAD_MAPS', 'TransposePitchLinearThreadMap',
    'TransposePitchLinearThreadMap2DThreadTile', 'TransposePitchLinearThreadMapSimt',
]


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_layout_names_stay_importable(name: str) -> None:
    assert hasattr(tl, name), name


@pytest.mark.parametrize("name", CUTLASS_NAMES)
def test_cutlass_names_stay_importable(name: str) -> None:
    assert hasattr(tc, name), name


MODULES = ["integral_constant", "underscore", "int_tuple", "arithmetic_tuple", "dispatch",
           "layout", "tensor", "swizzle", "pointer_flagged", "layout_composed", "swizzle_layout",
           "atom.tile_ops", "atom.copy_traits", "atom.copy_atom", "atom.mma_traits",
           "atom.mma_atom", "atom.mma_traits_sm90_gmma", "atom.mma_traits_sm100",
           "atom.copy_traits_sm100_tmem", "arch.mma_sm100_desc", "parse", "calculator", "printing",
           "table", "backend"]


@pytest.mark.parametrize("mod", MODULES)
def test_each_module_imports_alone(mod: str) -> None:
    """Importing any one module first (in a fresh interpreter) works: no import cycle."""
    code = f"import importlib; importlib.import_module('threadmap.layout.{mod}')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_layout_py_does_not_import_the_composed_modules() -> None:
    src = importlib.import_module("threadmap.layout.layout").__file__
    text = open(src).read()  # noqa: SIM115
    for mod in ("swizzle", "layout_composed", "swizzle_layout", "tensor", "atom"):
        assert f"threadmap.layout.{mod}" not in text, mod
