"""The checks of :mod:`threadmap.spec.semantics` whose messages no other test pins: each bad
spec gives exactly its one problem, located at its field, with its message; and the checks
report in their fixed order (sizes, then names, then references)."""

from __future__ import annotations

import pytest

from threadmap.errors import SpecError
from threadmap.spec.load import loads_spec
from threadmap.spec.semantics import MAX_SAMPLES, MAX_SHARED_BYTES

from .test_spec_load import YAML_SPEC

SRC0 = 'src: {tensor: x, tile: [16,16], at: [bx,by], threads: "(16,16):(1,16)"}'
DST0 = 'dst: {tensor: sA, threads: "(16,16):(1,16)"}'
SA = 'sA: {memory: shared, layout: "Sw<4,0,4> o (16,16):(16,1)"}'
X = 'x:  {memory: global, layout: "(M,N):(N,1)", align: 256}'
SIZES = "sizes: {M: 1024, N: 1024}"


def sub(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def problems(text: str) -> list[str]:
    """The problems of a YAML spec, each as ``LINE: field.path: message`` (the column is
    the readers' business, tested elsewhere)."""
    with pytest.raises(SpecError) as ei:
        loads_spec(text, "yaml", "k.yaml")
    out = []
    for ln in str(ei.value).split("\n"):
        name, line, _col, rest = ln.split(":", 3)
        assert name == "k.yaml", ln
        out.append(f"{line}:{rest}")
    return out


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the only occurrence of ``needle``: where the problem is located."""
    assert text.count(needle) == 1, needle
    return text[:text.index(needle)].count("\n") + 1


SAMPLES_65 = ", ".join(str(16 * (i + 1)) for i in range(MAX_SAMPLES + 1))
CASES: list[tuple[str, list[tuple[str, str]], str, str, str]] = [
    # (id, substitutions, text on the problem's line, field path, message)
    ("empty samples", [(SIZES, "sizes: {M: {min: 16, max: 1024, samples: []}, N: 1024}")],
     "samples: []", "sizes.M.samples", "samples is empty; omit it for the default samples"),
    ("too many samples", [(SIZES, f"sizes: {{M: {{min: 16, max: 2048, samples: [{SAMPLES_65}]}}, N: 1024}}")],
     "samples:", "sizes.M.samples", f"more than {MAX_SAMPLES} samples"),
    ("range max", [(SIZES, "sizes: {M: {min: 16, max: 4294967296}, N: 1024}")],
     "4294967296", "sizes.M.max", "range max 4294967296 is huge; one dimension is at most 2^31"),
    ("alias from global", [(X, 'x:  {memory: global, layout: "(M,N):(N,1)", align: 256, alias: sA}')],
     "256, alias: sA}", "tensors.x.alias", "only shared tensors can alias a buffer"),
    ("register side with a tile",
     [(DST0, 'dst: {registers: f, tile: [16,16], at: [bx,by], threads: "(16,16):(1,16)"}'),
      ("src: {tensor: sB,", "src: {registers: f,")],
     "registers: f, tile", "stages[0].copy.dst.tile", "a register side has no tile"),
    ("assumption for fixed sizes", [("expect:", 'assume: ["M < N"]\nexpect:')],
     "assume:", "assume[0]", "'M < N' does not hold for the sizes M=1024, N=1024"),
    ("no sample satisfies",
     [(SIZES, "sizes: {M: {min: 16, max: 1024, samples: [16, 32]}, N: 1024}"),
      ("expect:", 'assume: ["M > 64"]\nexpect:')],
     "assume:", "assume", "no sample of the size ranges satisfies every assumption (tried 2: "
     "N=1024, M=16, ...); give samples that do"),
    ("basis strides", [(X, 'x:  {memory: global, layout: "(M,N):(1@0,1@1)", align: 256}')],
     "1@0", "tensors.x.layout", "layout '(M,N):(1@0,1@1)' needs integer strides (basis strides such as "
     "1@0 make coordinate tensors, not memory or thread layouts)"),
    ("thread layout count", [(SRC0, 'src: {tensor: x, tile: [16,16], at: [bx,by], threads: "(16,8):(1,16)"}')],
     "(16,8)", "stages[0].copy.src.threads", "thread layout has 128 threads, but threads = 256"),
    # 256*256 f32 elements = 262144 bytes; the view sB of sA (1024 bytes) fits in it
    ("shared memory", [(SA, 'sA: {memory: shared, layout: "(256,256):(256,1)"}')],
     "(256,256)", "tensors.sA.layout", f"shared tensors need 262144 bytes (262144 for 'sA'); "
     f"a CTA has at most {MAX_SHARED_BYTES} bytes of shared memory"),
]


@pytest.mark.parametrize("subs,needle,path,msg", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_problem(subs: list[tuple[str, str]], needle: str, path: str, msg: str) -> None:
    text = sub(YAML_SPEC, *subs)
    assert problems(text) == [f"{line_of(text, needle)}: {path}: {msg}"]


def test_order_of_the_checks() -> None:
    """Sizes, then assumptions, names in expressions, names in layouts, aliases, stage
    references: in that order, whatever the order of the fields in the file."""
    text = sub(YAML_SPEC,
               ('"Sw<4,0,4> o (16,16):(1,16)", alias: sA}', '"Sw<4,0,4> o (16,16):(1,16)", alias: zz}'),
               ('dst: {tensor: y,', 'dst: {tensor: yy,'),
               (X, 'x:  {memory: global, layout: "(Q,N):(N,1)", align: 256}'),
               ('grid: ["ceil_div(M, 16)"', 'grid: ["ceil_div(P, 16)"'),
               ("expect:", 'assume: ["R > 1"]\nexpect:'),
               (SIZES, "sizes: {M: 4294967296, N: 1024}"))
    got = [ln.split(":", 2)[1].strip() for ln in problems(text)]
    assert got == ["sizes.M", "assume[0]", "grid[0]", "tensors.x.layout", "tensors.sB.alias",
                   "stages[2].copy.dst.tensor"]
