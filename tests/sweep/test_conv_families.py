"""The convolution families beyond the plain implicit GEMM: FixedChannels and FewChannels Fprop
(a k-tile spans filter taps), strided Dgrad (a CTA's filter phase comes from its grid row) and
conv3d Wgrad (its activation iterator's get() is device-only).  Each family's layouts are
checked against the kernel's own iterators run host-side, a planted change is caught, and the
Optimized strided Dgrad, whose advance() is device-only, is walked on a GPU or refused."""

from __future__ import annotations

import dataclasses

import pytest

import threadmap.api as api
from threadmap.spec.load import loads_spec
from threadmap.sweep.extract import Extracted, extract, program
from threadmap.sweep.extract_conv import CONV_ORACLE_DEVICE, family
from threadmap.sweep.library import Configuration, generate, group
from threadmap.sweep.run import prefilter
from threadmap.sweep.specs import NotAnalysed
from threadmap.sweep.specs_conv import check_addresses, conv_spec_text

FIXED = "cutlass_tensorop_s16816fprop_fixed_channels_f16_256x128_32x3_nhwc_align4"
FEW = "cutlass_tensorop_s8_i16832fprop_few_channels_s8_256x128_64x3_nhwc_align8"
STRIDED = "cutlass_tensorop_s16816dgrad_analytic_f16_128x128_32x3_nhwc_align4"
STRIDED_OPTIMIZED = "cutlass_tensorop_s16816dgrad_optimized_f16_128x128_32x4_nhwc_align8"
WGRAD3D = "cutlass_tensorop_s16816wgrad3d_analytic_f16_256x128_32x3"
KERNELS = [FIXED, FEW, STRIDED, STRIDED_OPTIMIZED, WGRAD3D]


@pytest.fixture(scope="module")
def configs() -> dict[str, Configuration]:
    return {c.kernels[0]: c for c in group(generate(("80",), ",".join(KERNELS)))}


@pytest.fixture(scope="module")
def extracted(configs: dict[str, Configuration]) -> dict[str, Extracted]:
    """One translation unit, the one a sweep of KERNELS compiles."""
    from tests.support.cxx_oracle import require_oracle

    require_oracle()
    return dict(zip(configs, extract(list(configs.values())), strict=True))


def test_every_family_is_past_the_prefilter(configs: dict[str, Configuration]) -> None:
    assert sorted(configs) == sorted(KERNELS)
    for c in configs.values():
        assert prefilter(c, "d") is None, c.kernels[0]


@pytest.mark.parametrize("kernel", [FIXED, FEW, STRIDED, WGRAD3D])
def test_specs_verify_and_their_layouts_are_the_iterators_addresses(
        configs: dict[str, Configuration], extracted: dict[str, Extracted], kernel: str) -> None:
    c, ex = configs[kernel], extracted[kernel]
    assert not ex.error, ex.error
    w = conv_spec_text(c, ex, "test")   # raises NotAnalysed if an oracle checksum differs
    report = api.verify(loads_spec(w.text, "yaml", kernel))
    assert not report.errors and report.runs
    assert all(r.verdict == "pass" for r in report.runs), [r.failing for r in report.runs]


#: per kernel, an operand and a plausible wrong layout: taps in the other order (FixedChannels,
#: FewChannels), each phase's A rows at their own place instead of the same ones, B's phases
#: a row of taps apart, conv3d's T and R swapped
PLANTED = [
    (FIXED, "A", "(1,C,(Q+S-1)*C))", "(1,(Q+S-1)*C,C))"),
    (FEW, "B", "((1,C,S*C),", "((1,S*C,C),"),
    (STRIDED, "A", "P*Q*K,0)", "P*Q*K,N*P*Q*K)"),
    (STRIDED, "B", "(R*S*C,C)", "(R*S*C,S*C)"),
    (WGRAD3D, "B", "(1,C,(Q+S-1)*C,(P+R-1)*(Q+S-1)*C)", "(1,C,(P+R-1)*(Q+S-1)*C,(Q+S-1)*C)"),
]


@pytest.mark.parametrize(("kernel", "which", "old", "new"), PLANTED)
def test_a_planted_layout_change_is_caught_by_the_iterators(
        configs: dict[str, Configuration], extracted: dict[str, Extracted],
        kernel: str, which: str, old: str, new: str) -> None:
    c, ex = configs[kernel], extracted[kernel]
    fam = family(c)
    text = fam.a if which == "A" else fam.b
    assert old in text, text
    planted = dataclasses.replace(fam, **{which.lower(): text.replace(old, new)})
    with pytest.raises(NotAnalysed) as e:
        check_addresses(c, planted, ex)
    assert e.value.kind == "iterator addresses differ from the spec's layout"
    check_addresses(c, fam, ex)


def test_a_strided_dgrad_cta_reads_its_phases_filter_tap(configs: dict[str, Configuration]) -> None:
    """The B tile's k-tile moves by K/kK per phase, the phase being the grid row over the CTA
    rows of one phase."""
    fam = family(configs[STRIDED])
    tm, _, tk = configs[STRIDED].fields["threadblock"]
    assert fam.at_a == ("bx", "bz")
    assert fam.at_b == (f"bz+(K/{tk})*(bx/(N*P*Q/{tm}))", "by")
    assert fam.phases == fam.sample["R"] * fam.sample["S"] > 1
    assert f"N*P*Q % {tm} == 0" in fam.assume


def test_device_only_iterators_are_walked_on_a_gpu_or_refused(
        configs: dict[str, Configuration], extracted: dict[str, Extracted]) -> None:
    """The Optimized strided Dgrad iterators' advance() is CUTLASS_DEVICE: host-side the
    program's walk ends, so it runs on a GPU where there is one and is refused otherwise."""
    c, ex = configs[STRIDED_OPTIMIZED], extracted[STRIDED_OPTIMIZED]
    try:
        w = conv_spec_text(c, ex, "test")
    except NotAnalysed as e:
        assert e.kind == "iterator addresses not checked"
        assert "runs only on a GPU" in e.detail and "this machine has none" in e.detail
    else:
        report = api.verify(loads_spec(w.text, "yaml", c.kernels[0]))
        assert all(r.verdict == "pass" for r in report.runs)


def test_only_programs_with_such_a_family_carry_the_device_oracle(configs: dict[str, Configuration]) -> None:
    """The other configurations' program text, their compile-cache key, is what it was."""
    assert CONV_ORACLE_DEVICE in program([configs[STRIDED]])
    assert CONV_ORACLE_DEVICE in program([configs[WGRAD3D]])
    assert CONV_ORACLE_DEVICE not in program([configs[FIXED], configs[FEW]])


def test_the_changed_families_get_new_store_digests(configs: dict[str, Configuration]) -> None:
    """A store's rows of these families were written when they had no spec: their digests
    change, so a resumed sweep does them again; the other families keep theirs."""
    import hashlib

    def plain(c: Configuration) -> str:
        return hashlib.sha256(f"{c.key}\0h".encode()).hexdigest()[:24]

    for k in (FIXED, FEW, STRIDED, STRIDED_OPTIMIZED, WGRAD3D):
        assert configs[k].digest("h") != plain(configs[k])
    other = group(generate(("80",), "cutlass_tensorop_s16816fprop_analytic_f16_256x128_32x3_nhwc_align8"))[0]
    assert other.digest("h") == plain(other)
