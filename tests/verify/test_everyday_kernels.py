"""Verdicts on ordinary kernels that an earlier version got wrong, each checked end to end from a
spec (every expected number is derived in the test's comment), and in both modes: the default run
(representative blocks and the tiling argument) and ``exhaustive`` must agree on every count."""

from __future__ import annotations

from typing import Any

import pytest

import threadmap.api as api
from threadmap.report.model import CheckResult, SpecRun
from threadmap.spec.load import loads_spec


def run(text: str, exhaustive: bool = False, **kw: Any) -> SpecRun:
    runs = api.verify_spec(loads_spec(text, "yaml", "<test>"), exhaustive=exhaustive, **kw)
    assert len(runs) == 1
    return runs[0]


def result(r: SpecRun, check: str, stage: int | None = None, side: str | None = None) -> CheckResult:
    found = [x for x in r.results if x.check == check and (stage is None or x.stage == stage)
             and (side is None or x.side == side)]
    assert len(found) == 1, [(x.check, x.stage, x.side) for x in r.results]
    return found[0]


def counts(r: SpecRun) -> dict[Any, Any]:
    out = {}
    for x in r.results:
        s = x.summary.model_dump()
        s.pop("worst", None)
        out[(x.check, x.stage, x.side)] = (s, x.status, x.total_findings)
    return out


def both(text: str) -> SpecRun:
    """The default run, after checking that enumeration gives the very same counts."""
    a, b = run(text), run(text, exhaustive=True)
    assert b.totals == "enumerated"
    assert counts(a) == counts(b)
    return a


SMEM_COPY = """
spec: 1
name: scalar copy through shared memory
element: {elem}
threads: 256
sizes: {{M: {m}, N: {m}}}
grid: ["ceil_div(M, 16)", "ceil_div(N, 16)"]
tensors:
  x:  {{memory: global, layout: "(M,N):(N,1)"}}
  y:  {{memory: global, layout: "(M,N):(N,1)"}}
  s:  {{memory: shared, layout: "(16,16):(16,1)"}}
stages:
  - copy:
      src: {{tensor: x, tile: [16, 16], at: [bx, by], threads: "(16,16):(16,1)"}}
      dst: {{tensor: s, threads: "(16,16):(16,1)"}}
  - barrier
  - copy:
      src: {{tensor: s, threads: "(16,16):(16,1)"}}
      dst: {{tensor: y, tile: [16, 16], at: [bx, by], threads: "(16,16):(16,1)"}}
expect: {{transform: copy}}
"""


@pytest.mark.parametrize("elem", ["f16", "bf16", "u8", "i8", "f32"])
def test_sub_word_shared_stores_are_not_races(elem: str) -> None:
    # thread t writes element t of the 16x16 row-major tile: adjacent threads write adjacent
    # 2-byte (or 1-byte) halves of one 4-byte word, never the same byte
    r = both(SMEM_COPY.format(elem=elem, m=512))
    df = result(r, "dataflow")
    assert df.status == "PASS" and df.summary["races"] == 0
    assert df.summary["moved"] == 2 * 512 * 512 and df.summary["output_writes"] == 512 * 512
    assert r.verdict == "pass" and r.totals == "tiling"


NARROW = """
spec: 1
name: f16 tiled copy, 8 values per thread
element: f16
threads: 256
sizes: {{M: 1024, N: 1024}}
grid: ["ceil_div(M, 32)", "ceil_div(N, 64)"]
tensors:
  x:  {{memory: global, layout: "(M,N):(N,1)"}}
stages:
  - copy:
      src: {{tensor: x, tile: [32, 64], at: [bx, by],
            tiled_copy: {{threads: "(32,8):(8,1)", values: "(1,8):(8,1)", atom: "{atom}"}}}}
      dst: {{registers: r}}
"""


@pytest.mark.parametrize("atom,bits", [("UniversalCopy<uint16_t>", 16), ("UniversalCopy<uint32_t>", 32),
                                       ("UniversalCopy<uint128_t>", 128)])
def test_narrow_copy_atoms_move_their_own_width(atom: str, bits: int) -> None:
    # each thread holds 8 consecutive f16 of a row (16 bytes); the atom moves bits/16 of them per
    # instruction.  A warp is 4 rows x 8 threads; per instruction each row's 8 lanes touch bytes
    # 16 j + [0, bits/8) for j < 8: 128 bytes span 4 sectors per row, 16 per instruction, while
    # 32 lanes x bits/8 bytes need only bits/8 sectors (ideal).
    r = both(NARROW.format(atom=atom))
    co = result(r, "coalescing", 0, "src")
    per_thread = 128 // bits
    warps = 1024 * 1024 // 8 // 32
    assert co.summary["access_bits"] == bits
    assert co.summary["requests"] == warps * per_thread
    assert co.summary["sectors_per_request"] == 16
    assert co.summary["ideal_sectors_per_request"] == 32 * bits // 8 // 32
    assert result(r, "vectorize", 0, "src").summary["declared_bits"] == bits


VEC_EDGE = """
spec: 1
name: 128-bit copy of f16 rows, a ragged last column tile
element: f16
threads: 256
sizes: {{M: 32, N: 100}}
grid: ["ceil_div(M, 32)", "ceil_div(N, 64)"]
tensors:
  x: {{memory: global, layout: "(M,N):(N,1)"}}
  y: {{memory: global, layout: "(M,N):(N,1)"}}
stages:
  - copy:
      src: {{tensor: x, tile: [32, 64], at: [bx, by], tiled_copy: {tc}}}
      dst: {{tensor: y, tile: [32, 64], at: [bx, by], tiled_copy: {tc}}}
      predicate: {predicate}
"""


@pytest.mark.parametrize("predicate", ["bounds", "vector"])
def test_a_predicate_guards_a_whole_vector_instruction(predicate: str) -> None:
    # Each thread moves 8 f16 of one row in one 128-bit instruction.  N = 100: in the second
    # column tile (columns 64..127) the vector at columns 96..103 of every row straddles the
    # edge (4 in bounds, 4 out).  One predicate guards one instruction: `bounds` tests its first
    # element (96 < 100, so the instruction runs with 4 elements out of bounds: 32 rows x 4 =
    # 128 per side); `vector` masks it whole (4 in-bounds elements per row never copied: 128).
    tc = '{threads: "(32,8):(8,1)", values: "(1,8):(8,1)", atom: "UniversalCopy<uint128_t>"}'
    r = both(VEC_EDGE.format(predicate=predicate, tc=tc))
    for side in ("src", "dst"):
        p = result(r, "predicates", 0, side)
        assert p.status == "FAIL" and p.summary["straddling"] == 32
        assert p.summary["precondition"] == ["N % 8 == 0"]
        if predicate == "bounds":
            assert (p.summary["out_of_bounds"], p.summary["lost"]) == (128, 0)
        else:
            assert (p.summary["out_of_bounds"], p.summary["lost"]) == (0, 128)


SMEM_OOB = """
spec: 1
name: tiled copy whose tiler does not fit the shared tensor
element: f32
threads: 128
tensors:
  s:  {memory: shared, layout: "(8,8):(8,1)"}
stages:
  - copy:
      src: {tensor: s, tiled_copy: {threads: "(16,8):(8,1)", values: "(1,1):(1,1)", atom: "UniversalCopy<uint32_t>"}}
      dst: {registers: r}
"""


def test_shared_accesses_outside_the_tensor_are_findings() -> None:
    # the tiler is 16 x 8 over an 8 x 8 tensor: rows 8..15 (threads 64..127) fall outside it
    r = run(SMEM_OOB)
    cov = result(r, "coverage", 0, "src")
    assert cov.status == "FAIL" and cov.summary["out_of_bounds"] == 64
    f = next(f for f in cov.findings if f.kind == "out_of_bounds")
    assert f.witness["coordinate"][0] >= 8 and f.witness["thread"] >= 64


DUP = """
spec: 1
name: two threads write one element
element: f32
threads: 256
sizes: {M: 2048, N: 2048}
grid: ["ceil_div(M, 16)", "ceil_div(N, 16)"]
tensors:
  x: {memory: global, layout: "(M,N):(N,1)"}
  y: {memory: global, layout: "(M,N):(N,1)"}
stages:
  - copy:
      src: {tensor: x, tile: [16, 16], at: [bx, by], threads: "(16,16):(16,1)"}
      dst: {registers: r}
  - copy:
      src: {registers: r}
      dst: {tensor: y, tile: [16, 16], at: [bx, by], threads: "(16,16):(8,1)"}
"""


def test_grid_counts_when_a_tile_has_duplicates() -> None:
    # the store's thread layout (16,16):(8,1) maps threads t and t + 128 to one element: half of
    # each tile is written twice, half never; default and exhaustive agree on every count
    r = both(DUP)
    g = result(r, "grid_coverage", 1, "dst")
    n = 2048 * 2048
    assert (g.summary["covered"], g.summary["missing"], g.summary["duplicates"]) == (n // 2, n // 2, n // 2)
    d = next(f for f in g.findings if f.kind == "duplicate")
    assert d.witness["first"]["block"] == d.witness["second"]["block"]
    assert {d.witness["first"]["thread"] % 128, d.witness["second"]["thread"] % 128} == {d.witness["first"]["thread"]
                                                                                        % 128}


SPLIT_K = """
spec: 1
name: split-K epilogue
element: f32
threads: 256
sizes: {{M: 1024, N: 1024}}
grid: ["ceil_div(M, 16)", "ceil_div(N, 16)", 2]
tensors:
  W: {{memory: global, layout: "(M,N,2):(N,1,1048576)"}}
  C: {{memory: global, layout: "{c}"}}
stages:
  - copy:
      src: {{tensor: W, tile: [16, 16, 1], at: [bx, by, bz], threads: "(16,16,1):(16,1,0)"}}
      dst: {{registers: acc}}
  - copy:
      src: {{registers: acc}}
      dst: {{tensor: C, {dst}}}
"""


def test_split_k_cross_block_duplicates_have_a_pair_witness() -> None:
    # the two z-slices store the same C tile: every element twice, by blocks b and b + 64 * 64
    r = both(SPLIT_K.format(c="(M,N):(N,1)", dst='tile: [16, 16], at: [bx, by], threads: "(16,16):(16,1)"'))
    g = result(r, "grid_coverage", 1, "dst")
    assert g.status == "FAIL" and g.summary["duplicates"] == 1024 * 1024 and g.summary["covered"] == 1024 * 1024
    d = next(f for f in g.findings if f.kind == "duplicate")
    a, b = d.witness["first"], d.witness["second"]
    assert a["coordinate"] == b["coordinate"] == d.witness["coordinate"]
    assert abs(a["block"] - b["block"]) == 64 * 64 and (a["thread"], a["value"]) == (b["thread"], b["value"])


def test_split_k_as_a_stride_0_layout_is_an_aliased_write() -> None:
    # C (M,N,2):(N,1,0): coordinates (m,n,0) and (m,n,1) are one address; each is written once by
    # coordinate, so only the address check sees the two z-slices writing the same location
    r = both(SPLIT_K.format(c="(M,N,2):(N,1,0)",
                            dst='tile: [16, 16, 1], at: [bx, by, bz], threads: "(16,16,1):(16,1,0)"'))
    g = result(r, "grid_coverage", 1, "dst")
    assert g.status == "FAIL" and g.summary["duplicates"] == 0 and g.summary["aliased"] == 2 * 1024 * 1024
    f = next(f for f in g.findings if f.kind == "aliased_write")
    a, b = f.witness["first"], f.witness["second"]
    assert a["address"] == b["address"] and a["coordinate"][:2] == b["coordinate"][:2]
    assert a["block"] != b["block"]


def test_whole_grid_performance_totals() -> None:
    # 1024 x 1024 f32 copy through smem: 64 x 64 blocks x 8 warps x 1 instruction per side
    r = both(SMEM_COPY.format(elem="f32", m=1024))
    assert result(r, "bank_conflicts", 0, "dst").summary["instructions"] == 64 * 64 * 8
    co = result(r, "coalescing", 0, "src")
    assert co.summary["requests"] == 64 * 64 * 8 and co.summary["sectors"] == 64 * 64 * 8 * 4


AT = """
spec: 1
name: tile coordinates with arithmetic
element: f32
threads: 256
sizes: {{M: {m}, N: {m}}}
grid: [1, {gy}, 2]
tensors:
  x: {{memory: global, layout: "(M,N):(N,1)"}}
stages:
  - copy:
      src: {{tensor: x, tile: [16, 16], at: ["2 * bz", "by + 1"], threads: "(16,16):(16,1)"}}
      dst: {{registers: r}}
"""


@pytest.mark.parametrize("m,gy", [(64, 3), (2048, 127)])
def test_tile_coordinates_with_arithmetic_over_block_names(m: int, gy: int) -> None:
    # tiles at rows 0 and 2 (bz = 0, 1) and columns 1..gy: 2 * gy tiles of 256 elements
    r = both(AT.format(m=m, gy=gy))
    g = result(r, "grid_coverage", 0, "src")
    assert g.summary["covered"] == 2 * gy * 256 and g.summary["missing"] == m * m - 2 * gy * 256
    assert g.summary["duplicates"] == 0


SHIFTED = """
spec: 1
name: reads tile 2 bx, writes tile bx
element: f32
threads: 256
sizes: {M: 2048, N: 2048}
grid: ["ceil_div(M, 32)", "ceil_div(N, 16)"]
tensors:
  x: {memory: global, layout: "(M,N):(N,1)"}
  y: {memory: global, layout: "(M,N):(N,1)"}
stages:
  - copy:
      src: {tensor: x, tile: [16, 16], at: ["2 * bx", by], threads: "(16,16):(16,1)"}
      dst: {registers: r}
  - copy:
      src: {registers: r}
      dst: {tensor: y, tile: [16, 16], at: [bx, by], threads: "(16,16):(16,1)"}
expect: {transform: copy}
"""


def test_a_per_block_quantity_that_varies_along_the_grid() -> None:
    # block (bx, by) copies x's tile (2 bx, by) to y's tile (bx, by): right for bx = 0 only.
    # Blocks of one class differ in where they read relative to where they write, so the
    # argument's premise fails and the default run enumerates: counts equal exhaustive ones.
    r = both(SHIFTED)
    assert r.totals == "enumerated" and any("do not" in n or "differ" in n for n in r.notes)
    df = result(r, "dataflow")
    assert df.summary["wrong_values"] == (64 - 1) * 128 * 256 and df.summary["output_writes"] == 64 * 128 * 256
