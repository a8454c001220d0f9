"""The size space's symbolic forms (:mod:`threadmap.prove.encode`): the laws of
``layout_monomials`` (each extent and stride it returns is the bound layout's, at every
admitted assignment) and of ``SizeSpace.multiples`` (every admitted value is a multiple),
checked against the layout engine and the assumptions on drawn sizes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from threadmap.layout import product
from threadmap.layout import shape as layout_shape
from threadmap.layout import stride as layout_stride
from threadmap.prove.encode import SizeSpace, Unsupported, layout_monomials
from threadmap.spec.load import loads_spec
from threadmap.spec.parsed import bind_layout

SPEC = """\
spec: 1
name: forms
element: f16
threads: 32
sizes:
  N: {{min: 1, max: 16, samples: [2]}}
  Q: {{min: 1, max: 16, samples: [4]}}
  S: {{min: 1, max: 3, samples: [3]}}
  C: {{min: 8, max: 256, multiple_of: 8, samples: [64]}}
  K: {{min: 32, max: 4096, samples: [96]}}
assume: [{assume}]
grid: [1]
tensors:
  X: {{memory: global, layout: '{layout}'}}
stages:
- copy:
    src: {{tensor: X, tile: [1], at: [0], thread_map: &m {{name: PitchLinearStripminedThreadMap, shape: [1, 1],
                                                         threads: 32}}}}
    dst: {{tensor: X, tile: [1], at: [0], thread_map: *m}}
"""

LAYOUTS = [
    "(Q,K):(1,Q)",
    "((Q,N),(8,S,C/8)):((C,(Q+S-1)*C),(1,C,8))",        # nested modes, a quotient, strides no monomials
    "((8,S,C/8),K):((1,C,8),S*C)",
    "((32,K/32),(N,Q)):((1,32),(K,N*K))",                # a quotient exact under K % 32 == 0
    "(C*S,N):(1,C*S+8)",                                 # a monomial extent beside a padded stride
    "(K/32,N):(1,K/32)",                                 # an extent K/32: a monomial with den 32
]


def _space(layout: str, assume: str = "K % 32 == 0") -> SizeSpace:
    return SizeSpace(loads_spec(SPEC.format(layout=layout, assume=assume), "yaml", "forms.yaml"))


sizes = st.fixed_dictionaries({"N": st.integers(1, 16), "Q": st.integers(1, 16), "S": st.integers(1, 3),
                               "C": st.integers(1, 32).map(lambda c: 8 * c),
                               "K": st.integers(1, 128).map(lambda k: 32 * k)})


@pytest.mark.parametrize("layout", LAYOUTS)
@settings(max_examples=40, deadline=None)
@given(env=sizes)
def test_layout_monomials_are_the_bound_layouts_extents_and_strides(layout: str, env: dict[str, int]) -> None:
    space = _space(layout)
    assert all(r.holds(env) for r in space.relations)
    extents, strides = layout_monomials(layout, space.names, None, space.multiples())
    lay = bind_layout(layout, env, checked=False)
    shp, std = layout_shape(lay), layout_stride(lay)
    assert [e.value(env) for e in extents] == [product(s) for s in shp]
    if strides is not None:
        assert [d.value(env) for d in strides] == list(std)
    # strides whose modes are nested, or that are no monomials, are not returned
    assert (strides is None) == (layout in LAYOUTS[1:4] or "+8" in layout or "K/32,N" in layout)


@pytest.mark.parametrize("layout", ["((64,K/64),N):((1,64),K)", "(K/64,N):(1,K/64)"])
def test_an_inexact_quotient_is_no_monomial(layout: str) -> None:
    # K/64 with K only a multiple of 32 is floor division, no monomial of K
    space = _space(layout)
    with pytest.raises(Unsupported, match="not"):
        layout_monomials(layout, space.names, None, space.multiples())


@pytest.mark.parametrize("assume,want", [("K % 32 == 0", 32), ("K % 64 == 32", 32), ("K % 96 == 0", 96),
                                         ("K >= 32", 1)])
@settings(max_examples=30, deadline=None)
@given(k=st.integers(32, 4096))
def test_multiples_divide_every_admitted_value(assume: str, want: int, k: int) -> None:
    space = _space("(Q,K):(1,Q)", assume)
    m = space.multiples()
    assert m["K"] == want and m["C"] == 8 and m["N"] == 1
    if all(r.holds({"K": k}) for r in space.relations):
        assert k % m["K"] == 0
