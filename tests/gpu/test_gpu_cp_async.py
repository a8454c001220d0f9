"""cp.async stages in the behaviour kernels and their counters, without a GPU: the generated
source (cp.async, commit and wait), the SASS reader's LDGSTS, and the ldgsts metrics picked
from what ncu lists.  The compiled SASS (LDGSTS on sm_80 and sm_90) is checked with the
library's one compile in ``test_gpu_probe.py``."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from threadmap.api import verify_spec
from threadmap.gpu.behave import behaviour_program
from threadmap.gpu.log import load_model
from threadmap.gpu.probe import probe_program
from threadmap.gpu.programs import Item
from threadmap.gpu.toolchain import parse_sass_widths

ROOT = Path(__file__).resolve().parents[2]
GEMM_A = "specs/cutlass/sm80_f16_gemm_a_128x32_warpraked.yaml"


def _stage(source: str, k: int) -> str:
    """The body of copy stage ``k`` in a behaviour kernel's source."""
    start = source.index(f"if constexpr (ONLY < 0 || ONLY == {k})")
    return source[start:source.index("\n  }\n", start)]


def test_a_cp_async_stage_issues_cp_async_then_waits() -> None:
    """SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>: one cp.async.cg of 16 bytes per vector from A to sA
    (no load into registers, no shared store), under the vector predicate, then commit and wait
    before the barrier."""
    m = load_model(ROOT / GEMM_A, None)
    assert m.stages[0].cp_async and m.stages[0].src.copy_op == "SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>"
    prog = behaviour_program(m, probe_program(m))
    assert prog.cp_async_stages == (0,) and prog.access_bits == {(0, "src"): 128, (0, "dst"): 128}
    body = _stage(prog.source, 0)
    assert re.search(r"if \(__any_sync\(mask, all\) && all\) \{\s+tm_cp_async_cg16\(\(\(tm_smem \+ 0\) \+ r\[\d+\] "
                     r"\* 2LL\), \(g_A \+ r\[\d+\] \* 2LL\)\);", body), body
    assert body.rstrip().endswith("tm_cp_async_wait_all();")
    assert "tm_ld_" not in body and "tm_st_" not in body and "_zfill" not in body
    # the helpers: the PTX the issue names, and the wait before anything reads sA
    from threadmap.gpu.ptx import HELPERS
    assert 'asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"' in HELPERS
    assert 'asm volatile("cp.async.commit_group;\\n\\tcp.async.wait_group 0;" ::: "memory");' in HELPERS
    # every kernel of the stage (whole, src, dst, solo) is the same body: SIDES does not split it
    assert "if constexpr (SIDES" not in body


def test_a_zero_fill_atom_issues_every_lane_with_its_source_size() -> None:
    m = load_model(ROOT / "tests/gpu/cp_async_zfill.yaml", None)
    body = _stage(behaviour_program(m, probe_program(m)).source, 0)
    assert re.search(r"tm_cp_async_cg16_zfill\(.*, all \? 16 : 0\);", body) and "__any_sync" not in body
    from threadmap.gpu.ptx import HELPERS
    assert 'asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"' in HELPERS


def test_a_stage_without_a_cp_async_atom_is_unchanged() -> None:
    """The same stage naming UniversalCopy<uint128_t>, and the cp.async stage where the verifier
    finds the vector illegal (moved element by element), are loads and stores."""
    text = (ROOT / GEMM_A).read_text()
    from threadmap.model import build_model
    from threadmap.spec.load import loads_spec
    loaded = loads_spec(text.replace("atom: SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>", "atom: UniversalCopy<uint128_t>"),
                        "yaml", str(ROOT / GEMM_A))
    m = build_model(loaded, loaded.envs[0])
    assert not m.stages[0].cp_async
    prog = behaviour_program(m, probe_program(m))
    assert prog.cp_async_stages == () and "tm_ld_global16" in prog.source and "tm_cp_async_cg16(" not in prog.source
    m = load_model(ROOT / GEMM_A, None)
    prog = behaviour_program(m, probe_program(m), {(0, "src"): False, (0, "dst"): True})
    assert prog.cp_async_stages == () and "tm_ld_global2(" in _stage(prog.source, 0)


def test_sass_widths_read_ldgsts_and_whole_opcodes_only() -> None:
    """Lines as cuobjdump 13.0 prints a cp.async stage for sm_80 and sm_90; LDGDEPBAR is not an
    LDG, LDSM not an LDS, and the never-executed ``@!PT LDS`` ptxas pads LDGSTS with on sm_90
    is no access."""
    sass = ("        /*0680*/               @P0 LDGSTS.E.BYPASS.128 [R11], [R8.64] ;\n"
            "        /*0750*/              @!PT LDS RZ, [RZ] ;\n"
            "        /*0790*/               @P4 LDGSTS.E.BYPASS.128 [R15], desc[UR6][R4.64] ;\n"
            "        /*0720*/                   LDGDEPBAR ;\n"
            "        /*0730*/                   DEPBAR.LE SB0, 0x0 ;\n"
            "        /*0740*/                   LDSM.16.M88.4 R4, [R2] ;\n")
    assert parse_sass_widths(sass) == {"LDGSTS": [128]}
    assert parse_sass_widths("LDG.E.128 R4, [R2.64] ;\nSTS.64 [R3], R6 ;\nLDS.U16 R1, [R0] ;") == \
        {"LDG": [128], "STS": [64], "LDS": [16]}


def test_the_ldgsts_metrics_are_those_ncu_lists(tmp_path: Path) -> None:
    """Only metrics ``ncu --query-metrics`` lists are asked for (an unknown metric fails the
    whole ncu run); a listed ``..._op_ldgsts_cache_access`` does not list ``..._op_ldgsts``."""
    from threadmap.gpu.profile import METRICS, available_metrics, listed
    listing = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access   Counter   # of sectors\n"
               "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass   Counter   # of sectors\n"
               "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts               Counter   # of requests\n"
               "smsp__inst_executed_op_ldgsts                                  Counter   # of warp instructions\n"
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts          Counter   # of wavefronts\n")
    assert not listed("l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum", listing)
    assert listed("l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum", listing)
    ncu = tmp_path / "ncu"
    (tmp_path / "listing.txt").write_text(listing)
    listing_file = str(tmp_path / "listing.txt")
    ncu.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write(open({listing_file!r}).read())\n")
    ncu.chmod(0o755)
    got = available_metrics(str(ncu))
    assert got[:len(METRICS)] == METRICS and got[len(METRICS):] == [
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum",
        "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum",
        "smsp__inst_executed_op_ldgsts.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"]
    assert available_metrics(str(ncu), cp_async=False) == METRICS


def _item(path: Path | None = None) -> Item:
    m = load_model(path or ROOT / GEMM_A, None)
    prog = probe_program(m)
    return Item(GEMM_A, m, prog, behaviour_program(m, prog), None, verify_spec(m.loaded, sizes=m.env)[0])


@pytest.mark.parametrize("listed_only", ["all", "split", "none"])
def test_a_cp_async_side_is_measured_with_the_ldgsts_counters(listed_only: str) -> None:
    """The verifier's prediction for the A tile (M = 256, K = 64: 16 sectors per request on A,
    4 wavefronts per 128-bit store on sA) beside a row of ldgsts counters: the global side from
    the ldgsts sectors and requests (one metric, or the cache_access + cache_bypass pair), else
    the global-load counters, where the H200's ncu (no ldgsts sector metric) counts an LDGSTS's
    reads (64 requests of 16 sectors for this tile on the H200); the shared side from the ldgsts
    wavefronts over the ldgsts instructions, without them "not measured" (never the STS
    counters, which a cp.async kernel leaves at 0)."""
    from threadmap.gpu.profile import side_counters
    it = _item()
    res = {(r.check, r.stage, r.side): r for r in it.verified.results}  # type: ignore[union-attr]
    co = res[("coalescing", 0, "src")].summary
    bk = res[("bank_conflicts", 0, "dst")].summary
    n = float(bk.instructions)
    row = {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": f"{co.sectors:,}",
           "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": f"{co.requests:,}",
           "smsp__inst_executed_op_ldgsts.sum": f"{n:,.0f}"}
    if listed_only == "all":
        row |= {"l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum": f"{co.sectors:,}",
                "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum": f"{co.requests:,}",
                "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum": f"{bk.wavefronts:,}"}
    elif listed_only == "split":
        row |= {"l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum": "0",
                "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum": f"{co.sectors:,}",
                "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_access.sum": "0",
                "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum": f"{co.requests:,}",
                "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum": f"{bk.wavefronts:,}"}
    cp = it.model.stages[0]
    g = side_counters(it, res, 0, cp.src, row, {"LDGSTS": [128]})
    s = side_counters(it, res, 0, cp.dst, row, {"LDGSTS": [128]})
    assert (g.op, s.op, g.sass_bits, s.source_bits) == ("ldgsts", "ldgsts", [128], 128)
    assert (g.predicted, s.predicted) == (co.sectors / co.requests, bk.wavefronts / bk.instructions) == (16.0, 4.0)
    if listed_only == "none":
        assert (g.measured, g.agrees) == (16.0, True)  # from the global-load counters
        assert s.measured is None and s.agrees is None and s.note.startswith("not measured")
    else:
        # the tile's atom is the bypassing .cg form: its shared writes are shown, not compared
        assert (g.measured, s.measured, g.agrees, s.agrees) == (16.0, 4.0, True, None)
        assert s.note.startswith("not comparable")
        assert s.measured_raw["instructions"] == n
        # a SASS of other instructions disagrees
        assert side_counters(it, res, 0, cp.src, row, {"LDGSTS": [64]}).agrees is False


def test_the_l1_allocating_form_is_predicted_as_the_h200_counted_it(tmp_path: Path) -> None:
    """The A tile with CACHEALWAYS: each LDGSTS reads 8 global lines, so the verifier predicts the
    wavefronts the H200 counted for the same per-lane pattern (docs/hardware/ldgsts_h200.json,
    case ca16_lib_a128x32_*), a bank-conflict finding at the spec's expectation of none, and the
    GPU comparison agrees with that count."""
    import json

    from threadmap.gpu.profile import side_counters
    spec = tmp_path / "a_ca.yaml"
    spec.write_text((ROOT / GEMM_A).read_text().replace("SM80_CP_ASYNC_CACHEGLOBAL<", "SM80_CP_ASYNC_CACHEALWAYS<"))
    it = _item(spec)
    res = {(r.check, r.stage, r.side): r for r in it.verified.results}  # type: ignore[union-attr]
    bk = res[("bank_conflicts", 0, "dst")]
    h200 = [c for c in json.loads((ROOT / "docs/hardware/ldgsts_h200.json").read_text())["cases"]
            if c["name"].startswith("ca16_lib_a128x32")]
    assert h200
    for c in h200:
        assert bk.summary.wavefronts / bk.summary.instructions == c["wavefronts"] / c["instructions"]
    assert bk.status == "FAIL" and "LDGSTS" in bk.findings[0].message
    n = float(bk.summary.instructions)
    row = {"smsp__inst_executed_op_ldgsts.sum": f"{n:,.0f}", "smsp__sass_inst_executed_op_ldgsts.sum": f"{n:,.0f}",
           "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum": f"{bk.summary.wavefronts:,}"}
    s = side_counters(it, res, 0, it.model.stages[0].dst, row, {"LDGSTS": [128]})
    assert s.predicted == s.measured == h200[0]["wavefronts"] / h200[0]["instructions"] and s.agrees is True


FAKE_NCU = """#!{python}
import json, sys
args = sys.argv[1:]
if args == ["--query-metrics"]:
    sys.stdout.write(open({listing!r}).read())
    sys.exit(0)
metrics = args[args.index("--metrics") + 1].split(",")
open({log!r}, "a").write(json.dumps(metrics) + "\\n")
if any("ldgsts" in m for m in metrics):
    sys.stderr.write("==ERROR== Failed to find metric " + [m for m in metrics if "ldgsts" in m][0] + "\\n")
    sys.exit(1)
kernels = json.load(open(args[args.index("stages") + 3]))
json.dump(kernels, open(args[args.index("stages") + 1], "w"))
print(",".join(['"ID"', '"Kernel Name"'] + ['"%s"' % m for m in metrics]))
for i, k in enumerate(kernels):
    print(",".join(['"%d"' % i, '"%s"' % k] + ['"0"' for m in metrics]))
"""


def test_an_ldgsts_metric_ncu_refuses_costs_only_the_cp_async_sides(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """ncu fails the whole run on a metric it will not collect: the counters are measured again
    without the ldgsts metrics: the global side is read from the global-load counters (0 in this
    fake), the shared side says "not measured"."""
    import json

    from threadmap.gpu import profile
    listing, log = tmp_path / "listing.txt", tmp_path / "calls.jsonl"
    listing.write_text("l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts\nl1tex__t_requests_pipe_lsu_mem_global_op_ldgsts\n")
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable, listing=str(listing), log=str(log)))
    ncu.chmod(0o755)
    monkeypatch.setattr(profile, "find_tool", lambda name: str(ncu) if name == "ncu" else None)
    it = _item()
    counters, notes = profile.stage_counters([it], tmp_path / "none.cubin", {})
    calls = [json.loads(ln) for ln in log.read_text().splitlines()]
    assert len(calls) == 2 and "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum" in calls[0]
    assert calls[1] == profile.METRICS
    assert notes and notes[0].startswith("ncu failed with the ldgsts metrics")
    (stage,) = counters
    assert [(sd.side, sd.op, sd.measured) for sd in stage.sides] == [("src", "ldgsts", 0.0), ("dst", "ldgsts", None)]
    assert stage.sides[1].note.startswith("not measured") and stage.sides[0].agrees is False
