"""Each rule a TMA descriptor, load or bulk copy must satisfy, shown by a case that breaks it
next to its legal neighbour (the header's asserts in ``make_tma_copy_desc`` and
``get_tma_swizzle_bits``, the driver's in ``cuTensorMapEncodeTiled``, the bulk copies'
static_asserts, the shared tile's alignment, the targets, the hardware's at run time), and the
laws of the helpers."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from threadmap.errors import LayoutError
from threadmap.layout import (
    TmaDescriptor,
    alignment_for_swizzle,
    encode_tiled_violations,
    make_bulk_copy,
    make_bulk_copy_auto,
    make_tma_atom,
    make_tma_copy,
    tma_smem_violations,
)
from threadmap.layout.atom.copy_traits_sm90_tma import (
    coalesce_256,
    tma_load_violations,
    tma_swizzle_bytes,
    tma_tile_mismatches,
)
from threadmap.layout.integral_constant import Dyn
from threadmap.layout.layout import make_layout, size
from threadmap.layout.parse import parse_layout
from threadmap.layout.swizzle import Swizzle


def _rules(t) -> list[str]:  # type: ignore[no-untyped-def]
    return [v.rule for v in t.violations]


def K(m: int, k: int) -> object:  # a K-major M x K tensor with runtime extents and pitch
    return make_layout((Dyn(m), Dyn(k)), (Dyn(k), 1))


def test_a_legal_copy_has_no_violation_and_its_atom_is_the_same() -> None:
    t = make_tma_copy("SM90_TMA_LOAD", K(256, 128), parse_layout("Sw<3,3,3> o (8,64):(64,1)"))
    assert t.violations == [] and t.desc.box_dim == (64, 8) and t.desc.swizzle == 3
    assert make_tma_atom("SM90_TMA_LOAD", K(256, 128), parse_layout("Sw<3,3,3> o (8,64):(64,1)")).desc == t.desc


LEGAL = {"gmem": K(256, 128), "smem": parse_layout("(8,64):(64,1)"), "cta_tile": None, "cluster_size": 1,
         "address": 0}


def _copy(case: dict) -> object:
    args = {**LEGAL, **case}
    return make_tma_copy("SM90_TMA_LOAD_MULTICAST" if args["cluster_size"] > 1 else "SM90_TMA_LOAD", args["gmem"],
                         args["smem"], args["cta_tile"], args["cluster_size"], address=args["address"])


# (broken, its legal neighbour, rule, when): make_tma_copy_desc's asserts, get_tma_swizzle_bits'
# static_assert and the two driver rules make_tma_copy checks (halves, a K-major 256 x 128 tensor)
RULES = [
    (dict(address=8), dict(address=16), "the global address must be 16-byte aligned", "descriptor creation"),
    (dict(gmem=K((1 << 32) + 1, 128)), dict(gmem=K(1 << 32, 128)), "a global extent is 1 .. 2^32",
     "descriptor creation"),
    (dict(gmem=K(0, 128)), dict(gmem=K(1, 128), smem=parse_layout("(1,64):(64,1)")), "a global extent is 1 .. 2^32",
     "descriptor creation"),
    (dict(gmem=K(256, 100)), dict(gmem=K(256, 104)), "a global stride is a multiple of 16 bytes",
     "descriptor creation"),
    (dict(gmem=make_layout((Dyn(256), Dyn(64)), (Dyn(1 << 39), 1))),
     dict(gmem=make_layout((Dyn(256), Dyn(64)), (Dyn((1 << 39) - 8), 1))), "a global stride is < 2^40 bytes",
     "descriptor creation"),
    (dict(smem=parse_layout("(64,8):(1,64)")), dict(smem=parse_layout("(8,64):(64,1)")),
     "the first TMA mode has stride 1", "descriptor creation"),
    (dict(smem=parse_layout("(2,512):(512,1)")), dict(smem=parse_layout("(2,256):(256,1)")),
     "a box extent is 1 .. 256", "descriptor creation"),
    (dict(smem=parse_layout("Sw<3,3,3> o (8,128):(128,1)"), cta_tile=(8, 128)),
     dict(smem=parse_layout("Sw<3,3,3> o (8,64):(64,1)"), cta_tile=(8, 64)),
     "the inner box extent times the element size is at most the swizzle span", "descriptor creation"),
    (dict(smem=parse_layout("(8,4):(4,1)"), cta_tile=(8, 4)), dict(smem=parse_layout("(8,8):(8,1)"), cta_tile=(8, 8)),
     "the inner box extent times the element size is a multiple of 16 bytes", "descriptor creation"),
    (dict(smem=parse_layout("Sw<2,4,3> o (8,32):(32,1)")), dict(smem=parse_layout("Sw<2,3,3> o (8,32):(32,1)")),
     "get_tma_swizzle_bits", "compile time"),
    (dict(smem=parse_layout("(3,64):(64,1)"), cluster_size=2), dict(smem=parse_layout("(4,64):(64,1)"), cluster_size=2),
     "the multicast size divides the box", "descriptor creation"),
    # the multicast count may also be divided by the box: 4 over a box mode of 2 splits the next mode
    (dict(smem=parse_layout("(6,64):(64,1)"), cluster_size=4), dict(smem=parse_layout("(2,64):(64,1)"), cluster_size=4),
     "the multicast size divides the box", "descriptor creation"),
]


@pytest.mark.parametrize(("bad", "good", "rule", "when"), RULES, ids=[f"{i}-{r[2][:30]}" for i, r in enumerate(RULES)])
def test_each_rule_is_a_finding_with_when_it_bites(bad: dict, good: dict, rule: str, when: str) -> None:
    t = _copy(bad)
    hits = [v for v in t.violations if v.rule.startswith(rule)]
    assert hits and all(v.when == when for v in hits), t.violations
    assert _copy(good).violations == []


def test_modes_beyond_the_fifth_are_grouped_into_it() -> None:
    """TMA's rank is at most 5: a 6-D tensor's last two modes share the fifth TMA mode (its
    extent and stride by the gcd recurrence; CuTe's own in test_tma_cxx_oracle), no finding;
    a descriptor of rank 6 is one the driver refuses."""
    g = make_layout(tuple(Dyn(x) for x in (64, 2, 3, 4, 5, 6)), (1, *(Dyn(x) for x in (64, 128, 384, 1536, 7680))))
    t = make_tma_copy("SM90_TMA_LOAD", g, parse_layout("(64,1,1,1,1,1):(1,0,0,0,0,0)"))
    assert t.violations == [] and t.desc.rank == 5 and len(t.tma_gbasis.stride[4]) == 2
    assert t.desc.global_dim[4] == 5 * 6 and t.desc.global_strides[3] == 1536 * 2
    assert encode_tiled_violations(t.desc) == []
    (v,) = encode_tiled_violations(replace(t.desc, rank=6))
    assert v.rule == "the tensor rank is 1 .. 5" and v.when == "descriptor creation"


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


ARCH = [  # (target, the run-time rules of a multicast load there, of a plain load there)
    ("sm_90", [], []), ("sm_90a", [], []), ("sm_100a", [], []), ("sm_100f", [], []),
    ("sm_120a", ["the sm_120 family has no TMA multicast"], []),
    ("sm_121f", ["the sm_120 family has no TMA multicast"], []),
    ("sm_100", ["from sm_100 on, CuTe's TMA needs"], ["from sm_100 on, CuTe's TMA needs"]),
    ("sm_120", ["from sm_100 on, CuTe's TMA needs"], ["from sm_100 on, CuTe's TMA needs"]),
    ("sm_80", ["TMA needs sm_90"], ["TMA needs sm_90"]),
]


@pytest.mark.parametrize(("arch", "multicast", "plain"), ARCH, ids=[a[0] for a in ARCH])
def test_the_architecture_rules_from_the_headers(arch: str, multicast: list[str], plain: list[str]) -> None:
    """CUTE_ARCH_TMA_SM90_ENABLED (cute/arch/config.hpp): sm_90, sm_90a and the a / f targets
    from sm_100 on; a plain sm_100 or sm_120 build, or one below sm_90, compiles the copy to
    CUTE_INVALID_CONTROL_PATH; the sm_120 family has no multicast.  From the headers and the
    PTX they compile to, not confirmed on hardware beyond sm_90."""
    for op, cluster, want in (("SM90_TMA_LOAD_MULTICAST", 2, multicast), ("SM90_TMA_LOAD", 1, plain)):
        got = [v for v in make_tma_copy(op, K(256, 128), parse_layout("(8,64):(64,1)"), None, cluster,
                                        arch=arch).violations]
        assert [v.when for v in got] == ["run time"] * len(want), (op, got)
        assert all(v.rule.startswith(w) for v, w in zip(got, want)), (op, got)
    with pytest.raises(LayoutError, match="architecture"):
        make_tma_copy("SM90_TMA_LOAD", K(64, 64), parse_layout("(8,8):(8,1)"), arch="hopper")


# --------------------------------------------------------------------------- the driver's rules
def _legal(**kw: object) -> TmaDescriptor:
    """A legal descriptor (the plain K-major copy's), fields replaced."""
    return replace(make_tma_copy("SM90_TMA_LOAD", K(256, 128), parse_layout("(8,64):(64,1)")).desc, **kw)


#: a 3-D f16 descriptor with 32-byte interleave and the 32-byte swizzle it requires
INTERLEAVED = TmaDescriptor(data_type=6, elem_bytes=2, rank=3, global_address=0, global_dim=(64, 8, 4),
                            global_strides=(128, 1024), box_dim=(16, 8, 4), element_strides=(1, 1, 1),
                            interleave=2, swizzle=1)

# (broken descriptor, its legal neighbour, rule): what cuTensorMapEncodeTiled refuses, including
# the fields CuTe never sets (interleave, element strides, the OOB fill, the tensor map's address)
DRIVER = [
    (dict(rank=6), dict(rank=5), "the tensor rank is 1 .. 5"),
    (dict(rank=0), dict(rank=1), "the tensor rank is 1 .. 5"),
    (dict(data_type=-1), dict(data_type=1), "the data type is a CUtensorMapDataType"),
    (dict(global_address=0x1008), dict(global_address=0x1010), "the global address must be 16-byte aligned"),
    (dict(global_dim=(128, 0)), dict(global_dim=(128, 1)), "a global extent is 1 .. 2^32"),
    (dict(global_dim=(128, (1 << 32) + 1)), dict(global_dim=(128, 1 << 32)), "a global extent is 1 .. 2^32"),
    (dict(global_strides=(264,)), dict(global_strides=(272,)), "a global stride is a multiple of 16 bytes"),
    (dict(global_strides=(1 << 40,)), dict(global_strides=((1 << 40) - 16,)), "a global stride is < 2^40 bytes"),
    (dict(box_dim=(64, 0)), dict(box_dim=(64, 1)), "a box extent is 1 .. 256"),
    (dict(box_dim=(64, 257)), dict(box_dim=(64, 256)), "a box extent is 1 .. 256"),
    (dict(element_strides=(1, 9)), dict(element_strides=(1, 8)), "an element stride is 1 .. 8"),
    (dict(element_strides=(0, 1)), dict(element_strides=(1, 1)), "an element stride is 1 .. 8"),
    (dict(box_dim=(4, 8)), dict(box_dim=(8, 8)), "the inner box extent times the element size is a multiple of 16"),
    (dict(swizzle=1, box_dim=(32, 8)), dict(swizzle=1, box_dim=(16, 8)),
     "the inner box extent times the element size is at most the swizzle span"),
    (dict(swizzle=4, box_dim=(128, 1)), dict(swizzle=4, box_dim=(64, 1)),
     "the inner box extent times the element size is at most the swizzle span"),
    (dict(oob_fill=1, data_type=0, elem_bytes=1, box_dim=(16, 8)), dict(oob_fill=1),
     "the NaN out-of-bounds fill is for floating-point types"),
    (dict(interleave=3), dict(interleave=1, rank=3, global_dim=(128, 256, 1), global_strides=(256, 65536),
                              box_dim=(64, 8, 1), element_strides=(1, 1, 1)),
     "the interleave is a CUtensorMapInterleave"),
    (dict(swizzle=7), dict(swizzle=6), "the swizzle is a CUtensorMapSwizzle"),
    (dict(interleave=1), dict(interleave=1, rank=3, global_dim=(128, 256, 1), global_strides=(256, 65536),
                              box_dim=(64, 8, 1), element_strides=(1, 1, 1)),
     "an interleaved tensor has rank 3 or more"),
]


@pytest.mark.parametrize(("bad", "good", "rule"), DRIVER, ids=[f"{i}-{r[2][:30]}" for i, r in enumerate(DRIVER)])
def test_each_driver_rule_is_a_finding(bad: dict, good: dict, rule: str) -> None:
    hits = encode_tiled_violations(_legal(**bad))
    assert hits and all(v.rule.startswith(rule) and v.when == "descriptor creation" for v in hits), hits
    assert encode_tiled_violations(_legal(**good)) == []


@pytest.mark.parametrize(("bad", "rule"), [
    (dict(swizzle=3), "32-byte interleave requires the 32-byte swizzle"),
    (dict(global_address=16), "with 32-byte interleave the global address is 32-byte aligned"),
    (dict(global_strides=(144, 1024)), "with 32-byte interleave a global stride is a multiple of 32 bytes"),
])
def test_32_byte_interleave_rules(bad: dict, rule: str) -> None:
    """32-byte interleave forces the 32-byte swizzle and 32-byte alignment of the address and
    strides; CuTe never interleaves (make_tma_copy's descriptors have interleave NONE), so
    these are checked on a descriptor built by hand."""
    assert encode_tiled_violations(INTERLEAVED) == []
    hits = encode_tiled_violations(replace(INTERLEAVED, **bad))
    assert [(v.rule, v.when) for v in hits] == [(rule, "descriptor creation")]
    # without interleave the swizzle-span rule holds instead (16 halves = 32 bytes, the span of SW32)
    assert encode_tiled_violations(replace(INTERLEAVED, interleave=0)) == []


def test_the_tensor_map_object_is_64_byte_aligned() -> None:
    """Checked only where the caller knows the address: a CUtensorMap is alignas(64)."""
    (v,) = encode_tiled_violations(_legal(), tensor_map_address=0x1020)
    assert v.rule == "the tensor map object is 64-byte aligned" and v.when == "descriptor creation"
    assert encode_tiled_violations(_legal(), tensor_map_address=0x1040) == []
    assert encode_tiled_violations(_legal()) == []


def test_the_header_and_the_driver_agree_on_the_copies_make_tma_copy_builds() -> None:
    """Every descriptor rule make_tma_copy reports is one the driver would refuse too."""
    for bad, _good, rule, when in RULES:
        if when != "descriptor creation" or "multicast" in rule or "first TMA mode" in rule:
            continue  # the header's own: the driver sees the divided box, and no first stride
        t = _copy(bad)
        assert {v.rule for v in t.violations} & {v.rule for v in encode_tiled_violations(t.desc)}, bad


# --------------------------------------------------------------------------- shared alignment
SWIZZLED = [("Sw<1,3,3> o (8,16):(16,1)", 256), ("Sw<2,3,3> o (8,32):(32,1)", 512),
            ("Sw<3,3,3> o (8,64):(64,1)", 1024)]  # the f16 GMMA K atoms SW32, SW64, SW128 on elements


def test_a_swizzled_tile_off_its_alignment_is_loaded_permuted() -> None:
    for text, align in SWIZZLED:
        t = make_tma_copy("SM90_TMA_LOAD", K(256, 128), parse_layout(text))
        assert alignment_for_swizzle(t.swizzle, 16) == align
        (v,) = tma_smem_violations(t, align // 2)
        assert v.when == "silently" and v.rule.startswith("a swizzled shared tile is aligned to alignment_for_swizzle")
        assert tma_smem_violations(t, 3 * align) == []
    plain = make_tma_copy("SM90_TMA_LOAD", K(256, 128), parse_layout("(8,64):(64,1)"))
    assert tma_smem_violations(plain, 16) == [] and alignment_for_swizzle(plain.smem) == 128


@given(st.sampled_from(SWIZZLED), st.integers(0, 255))
def test_the_alignment_rule_is_where_the_tile_reads_wrong(case: tuple[str, int], chunk: int) -> None:
    """Law: a swizzled tile at a 16-byte-aligned shared address reads back through its layout
    exactly (tma_tile_mismatches 0) iff tma_smem_violations finds nothing."""
    t = make_tma_copy("SM90_TMA_LOAD", K(256, 128), parse_layout(case[0]))
    base = 16 * chunk
    assert (tma_tile_mismatches(t, (0, 0), base)[0] == 0) == (tma_smem_violations(t, base) == [])


@given(st.integers(0, 3), st.integers(0, 5), st.integers(0, 4), st.booleans(), st.integers(0, 1 << 12),
       st.integers(0, 1 << 14), st.integers(0, 3))
def test_alignment_for_swizzle_is_the_swizzle_period(b: int, m: int, extra: int, neg: bool, k: int, o: int,
                                                     log_bytes: int) -> None:
    """Law: at a base ``a`` that is a multiple of ``A = alignment_for_swizzle``, the swizzle of
    ``a + o`` is ``a`` plus the swizzle of ``o``; for ``B > 0`` the base ``A / 2`` breaks it;
    on wider elements the same bytes give the same ``A``."""
    sh = (b + extra) * (-1 if neg else 1)
    sw = Swizzle(b, m, sh)
    a = alignment_for_swizzle(sw, 8)
    assert sw(a * k + o) == a * k + sw(o)
    if b > 0:  # the top bit of the YYY mask (S > 0) or of the ZZZ mask (S < 0) is A / 2
        top_zzz = 1 << (m + b - 1)
        assert sw(a // 2 + top_zzz) != a // 2 + sw(top_zzz)
    if m >= log_bytes:
        assert alignment_for_swizzle(Swizzle(b, m - log_bytes, sh), 8 << log_bytes) == a


# --------------------------------------------------------------------------- bulk copies
@pytest.mark.parametrize("op", ["SM90_BULK_COPY_G2S", "SM90_BULK_COPY_S2G"])
def test_bulk_copy_rules(op: str) -> None:
    """The traits' static_assert (a whole number of 16-byte chunks), the PTX ISA's 16-byte
    addresses, and the target (the same guard as TMA's)."""
    assert make_bulk_copy(op, 256, 0x100, 0x200).violations == []
    assert make_bulk_copy(op, 256).size_bytes == 32
    for bad, rule, when in (
        (dict(num_bits=64), "Bulk Copy requires copy vector size align to 16B", "compile time"),
        (dict(src_address=0x108), "cp.async.bulk: the source and destination addresses are 16-byte aligned",
         "run time"),
        (dict(dst_address=0x204), "cp.async.bulk: the source and destination addresses are 16-byte aligned",
         "run time"),
        (dict(arch="sm_80"), "TMA needs sm_90", "run time"),
        (dict(arch="sm_100"), "from sm_100 on, CuTe's TMA needs", "run time"),
    ):
        args = {"num_bits": 256, "src_address": 0x100, "dst_address": 0x200, **bad}
        arch = str(args.pop("arch", "sm_90"))
        (v,) = make_bulk_copy(op, **args, arch=arch).violations  # type: ignore[arg-type]
        assert v.rule.startswith(rule) and v.when == when, v
    with pytest.raises(LayoutError, match="copy operation"):
        make_bulk_copy("SM90_TMA_LOAD", 128)


def test_bulk_copy_auto_checks_every_vector() -> None:
    """SM90_BULK_COPY_AUTO copies one max_common_layout vector per instruction: a 4 x 8 f32
    tile from rows 48 bytes apart is 4 copies of 32 bytes, all aligned; rows 40 bytes apart put
    the second vector off 16 bytes (a run-time finding the tensors' own addresses do not show);
    a vector under 128 bits does not compile."""
    dst = make_layout((4, 8), (8, 1))
    ok = make_bulk_copy_auto(make_layout((4, 8), (12, 1)), dst, 32, 0x100, 0x200)
    assert (ok.op, ok.num_bits, ok.count, ok.violations) == ("SM90_BULK_COPY_G2S", 256, 4, [])
    bad = make_bulk_copy_auto(make_layout((4, 8), (10, 1)), dst, 32, 0x100, 0x200, g2s=False)
    (v,) = bad.violations
    assert bad.op == "SM90_BULK_COPY_S2G" and v.when == "run time" and "0x128" in v.detail
    short = make_bulk_copy_auto(make_layout((8, 16), (16, 1)), make_layout((8, 16), (1, 8)), 16)
    assert [v.rule.split(" (")[0] for v in short.violations if v.when == "compile time"] == [
        "Expected at least 128-bits for BLKCP", "Bulk Copy requires copy vector size align to 16B"]
