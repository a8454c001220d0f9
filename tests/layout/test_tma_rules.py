"""Each rule a TMA descriptor or load must satisfy, shown by a copy that breaks it (the
header's asserts in ``make_tma_copy_desc`` and ``get_tma_swizzle_bits``, the driver's in
``cuTensorMapEncodeTiled``, the hardware's at run time), and the laws of the helpers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from threadmap.errors import LayoutError
from threadmap.layout import make_tma_atom, make_tma_copy
from threadmap.layout.atom.copy_traits_sm90_tma import coalesce_256, tma_load_violations, tma_swizzle_bytes
from threadmap.layout.integral_constant import Dyn
from threadmap.layout.layout import make_layout, size
from threadmap.layout.parse import parse_layout


def _rules(t) -> list[str]:  # type: ignore[no-untyped-def]
    return [v.rule for v in t.violations]


def K(m: int, k: int) -> object:  # a K-major M x K tensor with runtime extents and pitch
    return make_layout((Dyn(m), Dyn(k)), (Dyn(k), 1))


def test_a_legal_copy_has_no_violation_and_its_atom_is_the_same() -> None:
    t = make_tma_copy("SM90_TMA_LOAD", K(256, 128), parse_layout("Sw<3,3,3> o (8,64):(64,1)"))
    assert t.violations == [] and t.desc.box_dim == (64, 8) and t.desc.swizzle == 3
    assert make_tma_atom("SM90_TMA_LOAD", K(256, 128), parse_layout("Sw<3,3,3> o (8,64):(64,1)")).desc == t.desc


@pytest.mark.parametrize(("case", "rule", "when"), [
    (dict(address=8), "the global address must be 16-byte aligned", "descriptor creation"),
    (dict(gmem=K(256, 100)), "a global stride is a multiple of 16 bytes", "descriptor creation"),
    (dict(gmem=make_layout((Dyn(256), Dyn(64)), (Dyn(1 << 39), 1))), "a global stride is < 2^40 bytes",
     "descriptor creation"),
    (dict(smem=parse_layout("(64,8):(1,64)")), "the first TMA mode has stride 1", "descriptor creation"),
    (dict(smem=parse_layout("(2,512):(512,1)")), "a box extent is 1 .. 256", "descriptor creation"),
    (dict(smem=parse_layout("Sw<3,3,3> o (8,128):(128,1)"), cta_tile=(8, 128)),
     "the inner box extent times the element size is at most the swizzle span", "descriptor creation"),
    (dict(smem=parse_layout("Sw<3,3,3> o (8,4):(4,1)"), cta_tile=(8, 4)),
     "the inner box extent times the element size is a multiple of 16 bytes", "descriptor creation"),
    (dict(smem=parse_layout("Sw<2,4,3> o (8,64):(64,1)")), "get_tma_swizzle_bits", "compile time"),
    (dict(smem=parse_layout("(3,64):(64,1)"), cluster_size=2),
     "the multicast size divides the box", "descriptor creation"),
])
def test_each_rule_is_a_finding_with_when_it_bites(case: dict, rule: str, when: str) -> None:
    args = {"gmem": K(256, 128), "smem": parse_layout("(8,64):(64,1)"), "cta_tile": None, "cluster_size": 1,
            "address": 0, **case}
    t = make_tma_copy("SM90_TMA_LOAD_MULTICAST" if args["cluster_size"] > 1 else "SM90_TMA_LOAD", args["gmem"],
                      args["smem"], args["cta_tile"], args["cluster_size"], address=args["address"])
    hits = [v for v in t.violations if v.rule.startswith(rule)]
    assert hits and all(v.when == when for v in hits), t.violations


def test_a_box_starting_off_16_bytes_is_a_run_time_violation() -> None:
    t = make_tma_copy("SM90_TMA_LOAD", K(256, 128), parse_layout("(8,64):(64,1)"))
    assert tma_load_violations(t.desc, (8, 3)) == []
    (v,) = tma_load_violations(t.desc, (4, 0))
    assert v.when == "run time" and "illegal instruction" in v.detail


def test_bad_arguments_are_errors_not_findings() -> None:
    with pytest.raises(LayoutError, match="copy operation"):
        make_tma_copy("SM80_CP_ASYNC", K(64, 64), parse_layout("(8,8):(8,1)"))
    with pytest.raises(LayoutError, match="power of 2"):
        make_tma_copy("SM90_TMA_LOAD_MULTICAST", K(64, 64), parse_layout("(8,8):(8,1)"), None, 3)
    with pytest.raises(LayoutError, match="size equivalence"):
        make_tma_copy("SM90_TMA_LOAD", K(64, 64), parse_layout("(8,8):(8,1)"), (8, 16))
    with pytest.raises(LayoutError, match="coordinate has 2 modes"):
        t = make_tma_copy("SM90_TMA_LOAD", K(64, 64), parse_layout("(8,8):(8,1)"))
        t.image((0,))


shapes = st.lists(st.integers(1, 8), min_size=1, max_size=4)


@given(shapes, st.lists(st.integers(0, 40), min_size=4, max_size=4))
def test_coalesce_256_is_the_same_function(shape: list[int], strides: list[int]) -> None:
    """Law: coalesce_256 keeps the size and the function on [0, size)."""
    lay = make_layout(tuple(shape), tuple(strides[:len(shape)])) if len(shape) > 1 else make_layout(shape[0],
                                                                                                       strides[0])
    c = coalesce_256(lay)
    n = int(size(lay))
    assert int(size(c)) == n
    assert [int(c(i)) for i in range(n)] == [int(lay(i)) for i in range(n)]


@given(st.integers(0, 1 << 20), st.sampled_from([0, 1, 2, 3]))
def test_the_tma_swizzle_is_an_involution_inside_its_1024_byte_block(a: int, mode: int) -> None:
    """Law: tma_swizzle_bytes is an involution and keeps a byte in its 1024-byte block and
    its 16-byte chunk's offset."""
    s = tma_swizzle_bytes(a, mode)
    assert tma_swizzle_bytes(s, mode) == a and s // 1024 == a // 1024 and s % 16 == a % 16


def test_the_architecture_rules_from_the_headers() -> None:
    """No TMA before sm_90; no multicast on the sm_120 family (from the headers, not confirmed
    on hardware); sm_90 and sm_100 multicast are legal."""
    args = (K(256, 128), parse_layout("(8,64):(64,1)"), None, 2)
    for arch, rules in (("sm_90a", []), ("sm_100a", []), ("sm_120", ["the sm_120 family has no TMA multicast"]),
                        ("sm_80", ["TMA needs sm_90"])):
        got = [v.rule for v in make_tma_copy("SM90_TMA_LOAD_MULTICAST", *args, arch=arch).violations
               if v.when == "run time"]
        assert [r for r in got if any(r.startswith(x) for x in rules)] == got and len(got) == len(rules), (arch, got)
    with pytest.raises(LayoutError, match="architecture"):
        make_tma_copy("SM90_TMA_LOAD", *args[:2], arch="hopper")
