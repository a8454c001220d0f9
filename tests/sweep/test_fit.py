"""The exact CuTe form of a shared layout known by its offsets."""

from __future__ import annotations

import numpy as np
import pytest

from threadmap.layout import parse_layout
from threadmap.sweep.fit import fit_layout


def table(text: str, rows: int, cols: int) -> np.ndarray:
    lay = parse_layout(text)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return np.asarray(lay((r.reshape(-1), c.reshape(-1))), dtype=np.int64).reshape(rows, cols)


@pytest.mark.parametrize("text, rows, cols", [
    ("(128,8):(1,128)", 128, 8),                           # SIMT A: column-major
    ("(128,8):(1,132)", 128, 8),                           # padded: a pitch that is no power of two
    ("Sw<3,3,3> o (64,64):(64,1)", 64, 64),                # a CuTe K-major swizzle
    ("Sw<2,3,5> o ((2,64),32):((32,256),1)", 128, 32),     # what the 4-stage crosswise A table fits
    ("Sw<2,3,3> o ((2,64),32):((32,320),1)", 128, 32),     # 5 stages: a pitch of 320
    ("(96,16):(16,1)", 96, 16),                            # an extent with an odd factor
    # the 64-bit crosswise A buffer of a 64x64x16 tile, 4 stages: two swizzles
    ("Sw<1,3,6> o Sw<1,0,8> o ((2,4,2,4),(4,4)):((8,64,1,16),(2,256))", 64, 16),
    # a 3-stage f16 crosswise A buffer: rows of 64 elements 192 apart, swizzled inside
    ("(64,64):(1,192) o Sw<2,3,3> o (128,32):(32,1)", 128, 32),
])
def test_a_table_of_a_spec_layout_is_fitted_exactly(text: str, rows: int, cols: int) -> None:
    t = table(text, rows, cols)
    f = fit_layout(t)
    assert f.layout is not None, f.reason
    assert np.array_equal(table(f.layout, rows, cols), t)


def test_a_table_no_swizzle_explains_has_a_reason() -> None:
    rng = np.random.default_rng(7)
    t = rng.permutation(64 * 8).reshape(64, 8)
    f = fit_layout(t)
    assert f.layout is None and "Sw<B,M,S> o L" in f.reason


def test_two_cells_at_one_offset_are_refused() -> None:
    t = np.zeros((4, 4), dtype=np.int64)
    assert "two cells" in fit_layout(t).reason
