"""The behaviour run's host-side judgement, on data a correct or a broken device would leave
(the device itself runs in the GPU suite; these checks need no GPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from threadmap.gpu.behave import behaviour_program, check_behaviour, domain_offsets
from threadmap.gpu.execute import NP_TYPE, SENTINEL
from threadmap.gpu.log import load_model
from threadmap.gpu.probe import probe_program
from threadmap.gpu.run import Item, _judge

ROOT = Path(__file__).resolve().parent.parent


def _device_result(spec: str, sizes: dict[str, int]):  # type: ignore[no-untyped-def]
    """What a correct device leaves: random input, the declared transform in the output,
    every domain element counted once."""
    m = load_model(ROOT / spec, sizes)
    prog = behaviour_program(m, probe_program(m))
    rng = np.random.default_rng(1)
    data, counts = {}, {}
    for b in prog.globals():
        dt = NP_TYPE[b.elem_bytes]
        dom = domain_offsets(m, b.name)
        counts[b.name] = np.zeros(b.elements, dtype=np.uint32)
        counts[b.name][dom] = 1
        if b.counted == "read":
            data[b.name] = rng.integers(0, np.iinfo(dt).max, b.elements, dtype=dt)
        else:
            data[b.name] = np.full(b.elements * b.elem_bytes, SENTINEL, np.uint8).view(dt)
    x, y = m.input, m.output
    if not (x and y):
        pass
    elif m.expect.transform == "transpose":
        xs = m.tensors[x].shape
        # y(j, i) = x(i, j): x's domain in colex order is (i fastest); y's colex index of (j, i)
        i, j = np.meshgrid(np.arange(xs[0]), np.arange(xs[1]), indexing="ij")
        src = m.tensors[x].offsets((i.reshape(-1), j.reshape(-1)))
        dst = m.tensors[y].offsets((j.reshape(-1), i.reshape(-1)))
        data[y][dst] = data[x][src]
    elif m.expect.transform == "copy":
        data[y][domain_offsets(m, y)] = data[x][domain_offsets(m, x)]
    return m, prog, data, counts


@pytest.mark.parametrize("spec,sizes", [("specs/cute_transpose/row_smem_swizzled.yaml", {"M": 40, "N": 24}),
                                        ("specs/cute_transpose/row_rvectorized.yaml", {"M": 64, "N": 32}),
                                        ("specs/sgemm/sgemm_1_copy_a.yaml", None)])
def test_a_correct_run_is_judged_correct_and_each_fault_is_counted(spec: str, sizes: dict[str, int] | None) -> None:
    m, prog, data, counts = _device_result(spec, sizes)
    assert check_behaviour(m, prog, data, counts)["correct"]
    out = next(b.name for b in prog.globals() if b.counted == ("write" if m.output else "read"))
    dom = domain_offsets(m, out)
    c = {k: v.copy() for k, v in counts.items()}
    c[out][dom[3]] = 0
    c[out][dom[5]] = 2
    if c[out].size > dom.max() + 1:
        c[out][-1] = 1
    r = check_behaviour(m, prog, data, c)
    assert (r["missing"], r["duplicates"]) == (1, 1) and not r["correct"]
    if m.output and m.expect.transform:
        d = {k: v.copy() for k, v in data.items()}
        d[m.output][dom[7]] ^= 1
        r = check_behaviour(m, prog, d, counts)
        assert r["wrong"] == 1 and r["checked"] == dom.size and "expected" in r["first"][0]


def test_judgement_follows_the_expectation() -> None:
    m, prog, data, counts = _device_result("specs/planted/off_by_one_grid.yaml", None)
    res = check_behaviour(m, prog, data, counts)
    it = Item("p", m, probe_program(m), prog, None, None)
    assert m.expect.verdict == "fail" and "predicates" in m.expect.failing_checks
    assert _judge(it, res, None) == (False, "expected to fail (predicates) but ran correctly")
    res2 = {**res, "correct": False}
    assert _judge(it, res2, None)[0]
    race, *_ = _device_result("specs/planted/missing_barrier.yaml", None)
    it = Item("p", race, probe_program(race), None, None, None)
    assert _judge(it, {"correct": True}, 0) == (False, "race expected: racecheck: 0 hazards, data correct in this run")
    assert _judge(it, {"correct": True}, 3)[0]


def test_profiler_output_parsers() -> None:
    """The formats seen on the H200 (ncu 2025.3 --csv --page raw; compute-sanitizer 2025.3
    racecheck): per-kernel rows, and hazards cut at the child's markers."""
    from threadmap.gpu.profile import parse_ncu_csv, split_race_report
    csv_text = ("==PROF== Connected to process 740\n"
                '"ID","Kernel Name","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"\n'
                '"","","sector"\n'
                '"0","tm_abc_stage0","131,072"\n'
                '"1","tm_abc_stage0_src","512"\n')
    rows = parse_ncu_csv(csv_text)
    assert [r["Kernel Name"] for r in rows] == ["tm_abc_stage0", "tm_abc_stage0_src"]
    race = ("TM-LAUNCH aaa\n"
            "========= Error: Potential RAW hazard detected at __shared__ 0x10 in block (0,0,0) :\n"
            "========= Warning: (Warp Level Programming) Potential RAW hazard detected at __shared__ 0x9f4\n"
            "TM-DONE aaa\nTM-LAUNCH bbb\nTM-DONE bbb\nTM-LAUNCH ccc\n"
            "========= Error: Potential WAR hazard detected\n")
    assert split_race_report(race, ["aaa", "bbb", "ccc", "ddd"]) == {"aaa": 2, "bbb": 0, "ccc": None, "ddd": None}


def test_counters_are_measured_at_every_size_environment() -> None:
    """A ranged spec's sample sizes each get their stage kernels profiled, and the tables say
    which sizes a row is for."""
    from threadmap.gpu.formats import to_markdown
    from threadmap.gpu.profile import stage_kernels
    from threadmap.gpu.report import GpuReport, SideCounters, StageCounters
    from threadmap.gpu.run import build_programs
    items = build_programs([ROOT / "specs/ranges/row_smem.yaml"])
    assert len({tuple(sorted(it.model.env.items())) for it in items}) == len(items) > 1
    kernels = set(stage_kernels(items))
    assert all(it.behaviour.stage_kernel(s) in kernels for it in items for s in it.behaviour.stages)
    report = GpuReport(counters=[
        StageCounters(spec="s.yaml", name="s", sizes=dict(it.model.env), stage=0,
                      sides=[SideCounters(side="src", memory="global", op="ld", metric="sectors_per_request")])
        for it in items])
    md = to_markdown(report)
    for it in items:
        sizes = ",".join(f"{k}={v}" for k, v in it.model.env.items())
        assert f"| s.yaml | {sizes} | 0 |" in md
