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
from threadmap.gpu.programs import Item
from threadmap.gpu.run import judge

ROOT = Path(__file__).resolve().parents[2]


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
    assert judge(it, res, None) == (False, "expected to fail (predicates) but ran correctly")
    res2 = {**res, "correct": False}
    assert judge(it, res2, None)[0]
    race, *_ = _device_result("specs/planted/missing_barrier.yaml", None)
    it = Item("p", race, probe_program(race), None, None, None)
    assert judge(it, {"correct": True}, 0) == (False, "race expected: racecheck: 0 hazards, data correct in this run")
    assert judge(it, {"correct": True}, 3)[0]


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
    from threadmap.gpu.programs import build_programs
    from threadmap.gpu.report import GpuReport, SideCounters, StageCounters
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


LEAVES = "tests/gpu/shared_read_leaves_tensor.yaml"


def _out_of_tensor(m, prog) -> np.ndarray:  # type: ignore[no-untyped-def]
    """What the counting kernel counts per shared side, from the simulator over every block:
    accesses performed (predicate true) at a coordinate outside the tensor's shape."""
    from threadmap.simulate.engine import Simulator
    sim = Simulator(m)
    blocks = np.arange(m.num_blocks, dtype=np.int64)
    got = []
    for stage, which, _ in prog.shared_sides:
        t = sim.stage_tables(m.stages[stage], blocks)[0 if which == "src" else 1]
        inb = np.ones(len(t), dtype=bool)
        for k, ext in enumerate(t.shape):
            inb &= (t.coords[k] >= 0) & (t.coords[k] < ext)
        valid = np.ones(len(t), dtype=bool) if t.valid is None else t.valid
        got.append(int((t.pred & valid & ~inb).sum()))
    return np.asarray(got, dtype=np.uint32)


def test_a_shared_read_outside_its_tensor_is_seen_not_called_the_verifiers_error() -> None:
    """The spec's stage 2 reads sB (16 x 15) over a 16 x 16 tile: the data arrive right (the
    bytes past sB are sA's), so the global tensors alone look correct; the kernel counts the
    reads outside sB and the run fails as the verifier's coverage check says."""
    from threadmap.api import verify_spec
    m, prog, data, counts = _device_result(LEAVES, None)
    assert prog.shared_sides == ((0, "dst", "sA"), (2, "src", "sB"))
    # the kernel counts, per shared side, the accesses whose in-bounds flag is false
    src = prog.source
    assert "unsigned int* tm_oob" in src and src.count("atomicAdd(&tm_oob[1], 1u)") >= 1
    oob = _out_of_tensor(m, prog)
    run = verify_spec(m.loaded, sizes=m.env)[0]
    cov = next(r for r in run.results if (r.check, r.stage, r.side) == ("coverage", 2, "src"))
    assert list(oob) == [0, cov.summary.out_of_bounds] and oob[1] > 0 and run.failing == ["coverage"]
    assert check_behaviour(m, prog, data, counts)["correct"]  # the global tensors alone: right
    res = check_behaviour(m, prog, data, counts, oob)
    assert not res["correct"] and res["out_of_tensor"] == oob[1] and "shared sB outside" in res["first"][0]
    it = Item(LEAVES, m, probe_program(m), prog, None, run)
    assert judge(it, res, None) == (True, "fails as the verifier predicts")
    # a device that reported no such access would disagree with the verifier: said so
    assert judge(it, {**res, "correct": True}, None) == (False, "expected to fail (coverage) but ran correctly")


def test_shared_buffers_are_their_declared_size_plus_a_guard() -> None:
    """sA declared (16,15):(16,1) while stage 0 addresses its 16 x 16 tile: coordinate (i, 15)
    sits at word 16i + 15, the last (i = 15) at word 255, one past sA's last element
    (14 + 15 * 16 = 254), so the root holds 255 words = 1020 bytes as declared and 4 bytes of
    guard.  Stage 0's bounds predicate masks those writes (none counted); stage 2's reads
    outside sB are unpredicated (16 per block)."""
    from threadmap.model import build_model
    from threadmap.spec.load import loads_spec
    text = (ROOT / LEAVES).read_text().replace('sA: {memory: shared, layout: "(16,16):(16,1)"}',
                                               'sA: {memory: shared, layout: "(16,15):(16,1)"}')
    loaded = loads_spec(text, "yaml", str(ROOT / LEAVES))
    m = build_model(loaded, loaded.envs[0])
    prog = behaviour_program(m, probe_program(m))
    (sa,) = [b for b in prog.buffers if b.memory == "shared"]
    assert (sa.name, sa.elements, sa.guard) == ("sA", 1024, 4)
    assert list(_out_of_tensor(m, prog)) == [0, 16 * m.num_blocks]


def test_a_failure_the_run_cannot_see_is_not_a_disagreement() -> None:
    """Coverage failing only on a shared side by lost elements (no access outside the tensor)
    leaves no trace in the global tensors: a correct run is 'not observable', never the
    verifier's error."""
    m, prog, data, counts = _device_result("specs/cute_transpose/row_smem.yaml", {"M": 32, "N": 32})
    res = check_behaviour(m, prog, data, counts)
    from threadmap.report.model import CheckResult, SpecRun
    real = Item("p", m, probe_program(m), prog, None, None)
    fake = SpecRun.model_construct(failing=["coverage"], results=[
        CheckResult.model_construct(check="coverage", stage=0, side="dst", status="FAIL",
                                    summary=type("S", (), {"out_of_bounds": 0})())])
    it = Item("p", m, real.probe, prog, None, fake)
    agrees, note = judge(it, res, None)
    assert agrees is None and note.startswith("not observable")
