"""Coverage check: hand-derived expectations, a planted wrong stride, and the definition cross-check."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from threadmap.report.formats import headline
from threadmap.simulate.access import AccessTable
from threadmap.verify import build_table, check_grid, check_tile_coverage, coverage_definition
from threadmap.verify.grid_coverage import GridEnumeration

T = 16


def transpose_src(blocks: int = 4, col_stride: int = T, shape: tuple[int, int] = (32, 32)):
    """256 threads laid out (16,16):(1,16) over a 16x16 tile of block (b % gx, b // gx)."""
    gx = -(-shape[0] // T)
    return build_table(lambda b, t, s, ln: ((b % gx) * T + t % T, (b // gx) * T + (t // T) * col_stride // T),
                       threads=256, steps=1, shape=shape, blocks=blocks, tile=(T, T),
                       tile_origin=lambda b: np.stack([(b % gx) * T, (b // gx) * T], axis=1))


def test_exact_tile_and_grid() -> None:
    t = transpose_src()
    r = check_tile_coverage(t)
    assert r.status == "PASS"
    assert r.summary["blocks"] == 4 and r.summary["elements"] == 1024 and r.summary["accesses"] == 1024
    g = check_grid(t)[0]
    assert g.status == "PASS" and g.summary["covered"] == 1024 and g.summary["duplicates"] == 0
    r.model_dump_json(), g.model_dump_json()


def test_planted_wrong_stride_duplicates() -> None:
    # thread column stride 8 instead of 16: threads t and t+16 hit the same element
    t = transpose_src(col_stride=8)
    r = check_tile_coverage(t)
    assert r.status == "FAIL"
    assert r.summary["duplicate_cells"] == 512 and r.summary["missing"] == 512
    f = next(f for f in r.findings if f.kind == "duplicate")
    assert f.witness["coordinate"] == (0, 0)
    assert (f.witness["first"]["thread"], f.witness["second"]["thread"]) == (0, 16)
    assert f.witness["first"]["value"] == 0 and f.witness["block"] == 0
    m = next(f for f in r.findings if f.kind == "missing")
    assert m.witness["coordinate"] == (0, 8)
    g = check_grid(t)[0]
    assert g.status == "FAIL" and g.summary["duplicates"] == 512 and g.summary["missing"] == 512
    d = g.findings[0]
    assert d.witness["first"]["thread"] == 0 and d.witness["second"]["thread"] == 16


def test_grid_duplicate_across_chunks_and_blocks() -> None:
    # two blocks mapped onto the same tile (block -> tile map bug): each tile is fine per block,
    # the grid sees duplicates and missing tiles
    def f(b, t, s, ln):  # noqa: ANN001, ANN202
        return ((b % 2) * T + t % T, 0 * b + t // T)
    chunks = [build_table(f, threads=256, steps=1, shape=(32, 32), blocks=[b], tile=(T, T),
                          tile_origin=[[(b % 2) * T, 0]]) for b in range(4)]
    assert all(check_tile_coverage(c).status == "PASS" for c in chunks)
    acc = GridEnumeration(chunks[0], False)
    for c in chunks:
        acc.add(c, np.ones(1, np.int64))
    g = acc.counts()
    assert (g.counted - g.covered, g.elements - g.covered) == (512, 512)
    res = check_grid(chunks)[0]
    assert res.status == "FAIL" and res.summary["duplicates"] == 512 and res.summary["missing"] == 512
    dup = next(x for x in res.findings if x.kind == "duplicate")
    assert dup.witness["second"]["block"] == 2 and dup.witness["coordinate"] == (0, 0)
    miss = next(x for x in res.findings if x.kind == "missing")
    assert miss.witness["coordinate"] == (0, 16)


def test_out_of_tile() -> None:
    # thread 255 reaches one column into the neighbouring tile
    def f(b, t, s, ln):  # noqa: ANN001, ANN202
        return (t % T, t // T + (t == 255))
    t = build_table(f, threads=256, steps=1, shape=(32, 32), tile=(T, T), tile_origin=[[0, 0]])
    r = check_tile_coverage(t)
    assert r.status == "FAIL"
    assert r.summary["out_of_tile"] == 1 and r.summary["missing"] == 1
    o = next(f for f in r.findings if f.kind == "out_of_tile")
    assert o.witness["thread"] == 255 and o.witness["coordinate"] == (15, 16)


def test_partial_tile_clipped_to_bounds() -> None:
    # 30x30 tensor, 16x16 tiles, bounds predicates: the edge tiles are exactly their in-bounds part
    t = transpose_src(shape=(30, 30))
    r = check_tile_coverage(t)
    assert r.status == "PASS" and r.summary["elements"] == 900
    assert check_grid(t)[0].status == "PASS"


def shared_8x8_read_by_16x8(pred: str | Callable[..., np.ndarray]) -> AccessTable:
    """128 threads at (t % 16, t // 16) of an 8x8 shared tensor: the 64 threads with
    ``t % 16 >= 8`` reach rows 8..15, outside it; the other 64 cover it once."""
    return build_table(lambda b, t, s, ln: (t % 16, t // 16), threads=128, steps=1, shape=(8, 8),
                       memory="shared", pred=pred)


def test_shared_out_of_bounds_is_a_finding() -> None:
    # a tiled copy whose tiler does not fit the smem tensor, unpredicated: it reads rows 8..15
    r = check_tile_coverage(shared_8x8_read_by_16x8("none"))
    assert r.status == "FAIL" and r.summary["out_of_bounds"] == 64 and r.summary["masked"] == 0
    f = next(f for f in r.findings if f.kind == "out_of_bounds")
    assert f.witness["coordinate"] == (8, 0) and f.witness["thread"] == 8
    assert "accesses t(8, 0), outside the shared tensor" in f.message


def test_masked_shared_rows_outside_the_tensor_are_no_defect() -> None:
    """A masked row (predicate false) makes no access: outside the shared tensor it is counted
    as masked, shown as a note that says so, and fails nothing; the headline tells the two apart."""
    r = check_tile_coverage(shared_8x8_read_by_16x8("bounds"))  # the bounds predicate masks exactly the 64
    assert r.status == "PASS"
    assert (r.summary["out_of_bounds"], r.summary["masked"], r.summary["missing"]) == (0, 64, 0)
    assert {(f.kind, f.severity) for f in r.findings} == {("masked", "info")}
    f = r.findings[0]
    assert f.witness["coordinate"] == (8, 0) and f.witness["thread"] == 8 and f.witness["predicate"] is False
    assert "masked (predicate false) at t(8, 0), outside the shared tensor of shape (8, 8): no access" in f.message
    assert "out of bounds 0, masked (predicate false) 64" in headline(r)
    # threads 0..63 active, 64..127 masked: of the 64 rows outside, 4 x 8 with t < 64 are real accesses
    r = check_tile_coverage(shared_8x8_read_by_16x8(lambda b, t, s, k: t < 64))
    assert r.status == "FAIL" and (r.summary["out_of_bounds"], r.summary["masked"]) == (32, 32)
    assert r.findings[0].kind == "out_of_bounds" and r.findings[0].witness["thread"] == 8
    assert max(f.witness["thread"] for f in r.findings if f.kind == "out_of_bounds") < 64
    assert min(f.witness["thread"] for f in r.findings if f.kind == "masked") >= 64
    assert "out of bounds 32, masked (predicate false) 32" in headline(r)


def test_replication_gmma_like() -> None:
    # 128 threads, each warp reads the whole 8x4 tile: every cell covered 4 times
    def f(b, t, s, ln):  # noqa: ANN001, ANN202
        return ((t % 32) % 8, (t % 32) // 8)
    t = build_table(f, threads=128, steps=1, shape=(8, 4), memory="shared")
    assert check_tile_coverage(t).status == "FAIL"
    r = check_tile_coverage(t, replication=True)
    assert r.status == "PASS" and r.summary["replication"] == 4

    def f2(b, t, s, ln):  # noqa: ANN001, ANN202  one warp short of a cell: unequal replication
        return (np.where(t == 127, 0, (t % 32) % 8), (t % 32) // 8)
    r2 = check_tile_coverage(build_table(f2, threads=128, steps=1, shape=(8, 4), memory="shared"),
                             replication=True)
    assert r2.status == "FAIL"
    assert {f.witness["coordinate"] for f in r2.findings} == {(0, 3), (7, 3)}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 4), st.integers(0, 3), st.integers(0, 2))
def test_matches_definition(rows: int, cols: int, steps: int, shift: int, mul: int) -> None:
    nthr = rows * cols

    def f(b, t, s, ln):  # noqa: ANN001, ANN202
        return ((t * (mul + 1) + s * shift) % rows, (t // rows + s) % (cols + 1))
    t = build_table(f, threads=nthr, steps=steps, shape=(rows, cols), memory="shared")
    r = check_tile_coverage(t)
    real = np.ones(len(t), bool) if t.valid is None else t.valid
    acc = [((int(t.thread[i]), int(t.value[i])), tuple(int(x) for x in t.coord[i]),
            bool(real[i]) and all(0 <= int(x) < e for x, e in zip(t.coord[i], (rows, cols))))
           for i in range(len(t))]
    d = coverage_definition(acc, [(i, j) for i in range(rows) for j in range(cols)])
    assert (r.summary["missing"], r.summary["duplicate_cells"]) == (len(d["missing"]), len(d["duplicates"]))
    assert r.summary["out_of_tile"] == 0
    assert (r.status == "PASS") == (d["ok"] and r.summary["out_of_bounds"] == 0)


def test_union_of_sides_that_write_one_tensor() -> None:
    """Two stages write one output (rows 0-3 and rows 4-7 of an 8x8 tensor, element (7, 7)
    masked): the dataflow's delivery is their union, with the unreached element as witness,
    from the dense count arrays and from the sparse ones alike."""
    from threadmap.verify.grid_coverage import union_reached

    top = build_table(lambda b, t, s, ln: (t // 8, t % 8), threads=32, steps=1, shape=(8, 8), tensor="y",
                      side="dst")
    bottom = build_table(lambda b, t, s, ln: (4 + t // 8, t % 8), threads=32, steps=1, shape=(8, 8), tensor="y",
                         side="dst", stage=2, pred=lambda b, t, s, ln: t != 31)
    for sparse in (False, True):
        gs = [GridEnumeration(x, False, sparse=sparse) for x in (top, bottom)]
        for g, x in zip(gs, (top, bottom), strict=True):
            g.add(x, np.ones(1, dtype=np.int64))
        assert union_reached(gs, 5) == (64, 63, [(7, 7)])
        assert union_reached(gs[:1], 3) == (64, 32, [(4, 0), (5, 0), (6, 0)])


#: a GEMM mainloop's A side: every CTA of a grid row reads the same A tile (by is unused), so
#: A's coverage is replicated ceil_div(N, 16) times
REPLICATED_A = """\
spec: 1
name: replicated A tile
element: f32
threads: 32
sizes: {M: 1000, N: 4000}
assume: [M % 4 == 0]
grid: ['ceil_div(M, 32)', 'ceil_div(N, 16)']
tensors:
  A: {memory: global, layout: '(M,8):(1,M)'}
  sA: {memory: shared, layout: '(32,8):(1,32)'}
stages:
- copy:
    src:
      tensor: A
      tile: [32, 8]
      at: [bx, 0]
      thread_map: &map {name: PitchLinearWarpRakedThreadMap, shape: [32, 8], threads: 32,
                        warp_thread_arrangement: [8, 4], elements_per_access: 4, contiguous_mode: 0}
    dst: {tensor: sA, thread_map: *map}
    predicate: vector
    atom: SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>
- barrier
"""


def test_replicated_reads_carry_no_duplicate_witness() -> None:
    # 32 x 250 blocks: verify argues by tiling, whose cross-block pair witness once stood beside
    # a passing replicated result as an error finding (and prove read it as a refutation)
    import threadmap.api as api
    from threadmap.prove import fails_property
    from threadmap.spec.load import loads_spec

    replicated = api.verify(loads_spec(REPLICATED_A + "expect: {coverage: replicated}\n", "yaml", "rep.yaml"))
    run = replicated.runs[0]
    assert run.blocks_simulated < 32 * 250  # the tiling argument, not every block
    grid = [r for r in run.results if r.check == "grid_coverage"]
    assert grid and all(r.status == "PASS" and not r.findings for r in grid)
    assert not fails_property(run, "coverage")
    # without the expectation the same reads are duplicates, each with its pair witness
    plain = api.verify(loads_spec(REPLICATED_A, "yaml", "plain.yaml")).runs[0]
    dup = next(r for r in plain.results if r.check == "grid_coverage" and r.side == "src")
    assert dup.status == "FAIL" and dup.summary.duplicates == 1000 * 8 * (250 - 1)
    assert any(f.kind == "duplicate" and "blocks share each tile" in f.message for f in dup.findings)
    assert fails_property(plain, "coverage")
