"""The pipeline explorer: the mbarrier's and PipelineState's laws, each hazard kind from a protocol
built to have it, and the unknown-trip-count search against every trip count explored one by one."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from threadmap.pipeline import Block, Mbarrier, Op, PipelineState, Protocol, Role, explore, try_wait_parity
from threadmap.pipeline.explore import KINDS, prove_rounds
from threadmap.pipeline.sm90_pipeline import make_producer_start_state

# -- the mbarrier and the pipeline state ------------------------------------------------------------


@given(st.integers(1, 300), st.lists(st.integers(1, 4096), min_size=1, max_size=4))
def test_init_arrivals_and_the_expected_bytes_complete_exactly_one_phase(n: int, chunks: list[int]) -> None:
    b = Mbarrier(n).arrive_expect_tx(sum(chunks))
    for _ in range(n - 1):
        b = b.arrive()
    for c in chunks[:-1]:
        b = b.complete_tx(c)
        assert b.completed == 0
    b = b.complete_tx(chunks[-1])
    assert (b.completed, b.pending, b.tx) == (1, n, 0)


@given(st.integers(1, 300), st.integers(1, 5))
def test_more_arrivals_than_a_phase_expects_are_an_overrun(n: int, extra: int) -> None:
    assert Mbarrier(n).arrive(n + extra).overrun and Mbarrier(n).arrive(n + extra).pending == -extra
    assert not Mbarrier(n).arrive(n).overrun


@given(st.integers(1, 8), st.integers(0, 7), st.integers(0, 1))
def test_a_parity_wait_passes_for_exactly_one_parity(n: int, phases: int, p: int) -> None:
    b = Mbarrier(n)
    for _ in range(phases):
        b = b.arrive(n)
    assert b.completed == phases
    assert try_wait_parity(b, p) != try_wait_parity(b, p ^ 1)
    assert try_wait_parity(b, p) == ((phases & 1) != p)


@given(st.integers(1, 9), st.integers(0, 8), st.integers(0, 1), st.integers(0, 40), st.integers(0, 40))
def test_advance_composes_and_flips_the_phase_per_wrap(stages: int, index: int, phase: int, a: int, b: int) -> None:
    s = PipelineState(stages, index % stages, phase)
    assert s.advance(a).advance(b) == s.advance(a + b)
    one = s
    for _ in range(a):  # operator++ of the header, step by step
        i = one.index + 1
        one = PipelineState(stages, 0 if i == stages else i, one.phase ^ (i == stages), one.count + 1)
    assert one == s.advance(a)


def test_the_producer_starts_on_the_opposite_phase() -> None:
    assert make_producer_start_state(4) == PipelineState(4, 0, 1, 0)


# -- protocols ---------------------------------------------------------------------------------------


def ws(stages: int = 4, cons_phase: int = 0, prod_phase: int = 1, tx: int = 32768, empty: int = 256,
       release_early: bool = False) -> Protocol:
    """PipelineTmaAsync with one producer warp and two consumer warpgroups (K_PIPE_MMAS = 1)."""
    prod = Role("producer", 0, 0, (Block((
        Op("wait", barrier="empty", where=("p", 0)),
        Op("arrive_expect_tx", barrier="full", nbytes=tx, where=("p", 1)),
        Op("tma", barrier="full", buffers=("sA",), nbytes=16384, where=("p", 2)),
        Op("tma", barrier="full", buffers=("sB",), nbytes=16384, where=("p", 3))), trip=True),), start_phase=prod_phase)

    def cons(name: str, w0: int) -> Role:
        release = (Op("arrive", barrier="empty", count=0, where=(name, 3)), Op("wait_mma", n=1)) if release_early \
            else (Op("wait_mma", n=1), Op("arrive", barrier="empty", count=0, ahead=-1, where=(name, 3)))
        tail = () if release_early else (Block((Op("wait_mma", n=0), Op("arrive", barrier="empty", count=0,
                                                                        where=(name, 4))), start=-1, from_end=True),)
        return Role(name, w0, w0 + 3, (Block((Op("wait", barrier="full", where=(name, 0)),
                                              Op("mma", buffers=("sA", "sB"), where=(name, 1)), *release),
                                             trip=True), *tail), start_phase=cons_phase)

    return Protocol(stages, (prod, cons("c0", 4), cons("c1", 8)), barriers={"full": 1, "empty": empty},
                    buffers={"sA": (16384, 0), "sB": (16384, 65536)})


def multistage(stages: int = 3, ahead: int = 2, wait: int = 1, sync: bool = True) -> Protocol:
    """SM80 MmaMultistage: prologue of ``ahead`` k-tiles, wait_group, __syncthreads, refill, read."""
    body = (Op("wait_group", n=wait), *((Op("sync", sync="all"),) if sync else ()),
            Op("cp_async", buffers=("sA",), ahead=ahead, where=("cta", 1)), Op("commit"),
            Op("read", buffers=("sA",), where=("cta", 2)))
    cta = Role("cta", 0, 3, (Block((Op("cp_async", buffers=("sA",), where=("cta", 0)), Op("commit")), loop=ahead),
                             Block(body, trip=True)))
    return Protocol(stages, (cta,), buffers={"sA": (8192, 0)}, syncs={"all": ("cta",)})


def epilogue(fence: bool = True, wait: bool = True) -> Protocol:
    store = Role("storer", 4, 4, (Block((*((Op("tma_store_wait", n=1),) if wait else ()), Op("sync", sync="epi"),
                                         Op("write", buffers=("sC",)),
                                         *((Op("fence_proxy_async"),) if fence else ()), Op("sync", sync="epi"),
                                         Op("tma_store", buffers=("sC",), where=("s", 0))), trip=True),))
    writers = Role("writers", 5, 11, (Block((Op("sync", sync="epi"), Op("write", buffers=("sC",), where=("w", 0)),
                                             *((Op("fence_proxy_async"),) if fence else ()), Op("sync", sync="epi")),
                                            trip=True),))
    return Protocol(2, (store, writers), buffers={"sC": (4096, 0)}, syncs={"epi": ("storer", "writers")})


def kinds(p: Protocol, k: int | None) -> set[str]:
    return {f.kind for f in explore(p, k).findings}


@pytest.mark.parametrize("k", [1, 5, None])
def test_the_library_protocols_are_safe(k: int | None) -> None:
    for p in (ws(), ws(stages=2), multistage(), epilogue()):
        e = explore(p, k)
        assert e.ok and e.finished_runs > 0, [f.message for f in e.findings]


@pytest.mark.parametrize(("protocol", "k", "kind"), [
    (ws(cons_phase=1), 1, "read_before_landed"),
    (ws(cons_phase=1), 3, "arrival_deadlock"),
    (ws(prod_phase=0), 1, "arrival_deadlock"),
    (ws(tx=32784), 1, "tx_mismatch_hang"),
    (ws(tx=16384), 1, "read_before_landed"),   # the phase completes after A alone: B is read early
    (ws(empty=257), 5, "arrival_deadlock"),
    (ws(empty=128), 6, "refill_while_read"),   # one warpgroup's release lets the producer refill
    (ws(release_early=True), 5, "refill_while_read"),
    (ws(stages=1), 2, "arrival_deadlock"),     # a consumer holding 2 stages needs 2
    (multistage(stages=2), 3, "refill_while_read"),
    (multistage(wait=2), 2, "read_before_landed"),
    (multistage(sync=False), 2, "read_before_landed"),
    (epilogue(fence=False), 1, "missing_proxy_fence"),
    (epilogue(wait=False), 3, "refill_while_read"),
])
def test_each_hazard_is_found_with_its_witness(protocol: Protocol, k: int, kind: str) -> None:
    e = explore(protocol, k)
    found = [f for f in e.findings if f.kind == kind]
    assert found, [f.message for f in e.findings]
    w = found[0].witness
    assert {"role", "warps", "thread", "iterations", "events"} <= set(w)
    assert w["iterations"] == k
    assert kind in kinds(protocol, None)  # the every-count search finds it too


def test_the_multicast_rules_and_the_cluster() -> None:
    base = ws(stages=2)
    prod = base.roles[0]
    ops = list(prod.blocks[0].ops)
    ops[3] = replace(ops[3], multicast=0b111)
    bad = replace(base, roles=(replace(prod, blocks=(replace(prod.blocks[0], ops=tuple(ops)),)), *base.roles[1:]),
                  cluster_size=2)
    f = [x for x in explore(bad, 1).findings if x.kind == "multicast_outside_cluster"]
    assert f and f[0].witness["cta_outside"] == 2


def test_more_arrivals_than_a_phase_expects() -> None:
    # two producer arrivals on a full barrier that expects one
    p = ws(stages=2)
    prod = p.roles[0]
    ops = (*prod.blocks[0].ops[:2], Op("arrive", barrier="full", count=1, where=("p", 9)), *prod.blocks[0].ops[2:])
    two = replace(p, roles=(replace(prod, blocks=(replace(prod.blocks[0], ops=ops),)), *p.roles[1:]))
    assert "over_arrival" in kinds(two, 1)


small_protocols = st.builds(
    lambda s, cp, pp, tx, empty, early: ws(s, cp, pp, tx, empty, early),
    st.integers(1, 2), st.integers(0, 1), st.integers(0, 1), st.sampled_from([32768, 32784, 16384]),
    st.sampled_from([256, 257, 128]), st.booleans())


@settings(max_examples=8, deadline=None)
@given(small_protocols)
def test_every_count_at_once_finds_what_the_counts_one_by_one_find(p: Protocol) -> None:
    """Law of the unknown-trip-count search: its kinds of hazard are the union of those of each
    trip count (counts past a few periods of the ring repeat the earlier ones)."""
    every = kinds(p, None)
    one_by_one: set[str] = set()
    for k in range(1, 2 * 2 * p.stages + 4):
        one_by_one |= kinds(p, k)
    assert every == one_by_one


def test_landing_order_does_not_change_the_library_verdicts() -> None:
    for p in (ws(stages=2), ws(stages=2, tx=16384), multistage(stages=2)):
        for k in (1, 3):
            assert {f.kind for f in explore(p, k, fifo=False).findings} == kinds(p, k)


def test_prove_rounds_covers_the_range_and_reports_a_witness_inside_it() -> None:
    e = prove_rounds(ws(empty=257), 1, 100)
    assert {f.kind for f in e.findings} == {"arrival_deadlock"}
    assert prove_rounds(ws(empty=257), 1, 4).findings == []   # 4 trips use each stage once
    assert prove_rounds(ws(), 0, 1000).ok


def test_kinds_are_the_catalogues() -> None:
    from threadmap.verify.catalogue import CATALOGUE
    assert set(KINDS) <= set(CATALOGUE["pipeline"].kinds)
