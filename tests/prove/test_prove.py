"""``threadmap prove``: properties for every size in range (z3 size classes + the simulator).

Every expected verdict is derived in the spec's comment (specs/ranges/) or here; each REFUTED
is checked by replaying its sizes through ``threadmap verify``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import threadmap.api as api
from threadmap.prove import prove, prove_loaded
from threadmap.spec.load import loads_spec

ROOT = Path(__file__).resolve().parents[2]
RANGES = ROOT / "specs" / "ranges"


def props(run):  # type: ignore[no-untyped-def]
    return {p.property: p for p in run.properties}


def replay(path: Path, sizes: dict[str, int], check: str) -> bool:
    """True when ``threadmap verify`` at ``sizes`` fails ``check``."""
    runs = api.verify_spec(path, sizes=sizes)
    return any(r.check == check and r.status == "FAIL" for run in runs for r in run.results)


def test_planted_one_residue_bug_is_refuted_and_hides_from_the_samples() -> None:
    path = RANGES / "planted_one_residue_grid.yaml"
    runs = api.verify_spec(path)
    assert [r.sizes["N"] % 128 for r in runs] and all(r.verdict == "pass" for r in runs)
    assert all(r.sizes["N"] % 128 != 100 for r in runs)
    report = prove([path], timeout_s=120)
    p = props(report.runs[0])
    # dataflow too: the copy's last 100 outputs are never delivered (issue 16, item 3)
    for name in ("coverage", "predicates", "dataflow"):
        assert p[name].status == "REFUTED", p[name]
        n = p[name].sizes["N"]
        assert n % 128 == 100 and replay(path, {"N": n}, "grid_coverage" if name == "coverage" else name)
    # N = 100 makes the grid 0 blocks: an invalid launch, found by z3 directly
    assert p["grid"].status == "REFUTED" and p["grid"].sizes["N"] % 128 == 100
    assert report.exit_code == 1


def test_a_transpose_is_proved_for_every_size() -> None:
    run = prove([RANGES / "row_smem_swizzled.yaml"], timeout_s=300).runs[0]
    assert {k: p.status for k, p in props(run).items()} == dict.fromkeys(
        ("grid", "coverage", "predicates", "dataflow", "bank_conflicts", "vectorize", "coalescing", "aliasing",
         "pipeline"), "PROVED")
    # 16 x 16 tiles: N mod 16 and M mod 16 are the classes (the grid is always ceil_div)
    assert props(run)["coverage"].classes == 256
    # warp w loads rows 2w, 2w + 1 of its tile, 16 floats (64 B) each, at byte
    # 4 N (16 bx + p) + 64 by: a 64-byte row touches 3 sectors unless it starts 32-byte
    # aligned.  Row 0 always does (64 N bx = 0 mod 32); rows 2 and 3 (8N, 12N mod 32) both
    # miss for N % 4 != 0: warp 1 reaches 3 + 3 = 6, and no instruction can pass 2 rows x 3
    w = props(run)["coalescing"].worst
    assert w is not None and w["sectors"] == 6 and w["warp"] >= 1
    n, bx, warp = w["sizes"]["N"], w["block"][0], w["warp"]
    assert all(4 * n * (16 * bx + p) % 32 != 0 for p in (2 * warp, 2 * warp + 1))  # both rows off a sector start
    # the witness replays: the simulator counts 6 sectors for that instruction
    from threadmap.model import build_model
    from threadmap.simulate.engine import Simulator
    from threadmap.spec.load import load_spec
    from threadmap.verify.coalescing import instruction_stats

    loaded = load_spec(RANGES / "row_smem_swizzled.yaml")
    model = build_model(loaded, {**loaded.envs[0], **w["sizes"]})
    gx, gy, _ = model.grid
    blk = w["block"][0] + gx * (w["block"][1] + gy * w["block"][2])
    tab = Simulator(model).stage_tables(model.stages[w["stage"]], __import__("numpy").array([blk]))[0]
    assert int(instruction_stats(tab)["sectors"][w["warp"] * tab.steps + w["step"]]) == 6


def test_vectorized_transpose_without_its_assumption_is_refuted_with_a_precondition() -> None:
    # no predicates and 16 x 64 tiles of 4-wide row vectors (derivation in the spec): a size
    # with N % 4 != 0 puts a vector across the edge; the precondition verify derives is N % 4 == 0
    path = RANGES / "row_rvectorized_any.yaml"
    p = props(prove([path], timeout_s=300).runs[0])
    pre = p["predicates"]
    assert pre.status == "REFUTED" and pre.sizes is not None and pre.sizes["N"] % 4 != 0
    assert pre.precondition == ["N % 4 == 0"] and replay(path, pre.sizes, "predicates")
    for prop in ("vectorize", "coalescing"):  # row pitch 4N bytes not a multiple of 16
        assert p[prop].status == "REFUTED" and p[prop].sizes["N"] % 4 != 0 and replay(path, p[prop].sizes, prop)
    # with the assumption (row_rvectorized.yaml) all of these are PROVED
    q = props(prove([RANGES / "row_rvectorized.yaml"], timeout_s=300).runs[0])
    assert {q[k].status for k in ("predicates", "vectorize", "coalescing")} == {"PROVED"}


STRADDLE = """
spec: 1
name: stripmined v4, M fixed, N in a range
element: f32
threads: 128
sizes: {{M: 64, N: {{min: 1, max: 256, samples: [64]}}}}
{assume}
grid: ["ceil_div(M, 64)", "ceil_div(N, 64)"]
tensors:
  A: {{memory: global, layout: "(M,N):(N,1)", align: 256}}
stages:
  - copy:
      src: {{tensor: A, tile: [64, 64], at: [bx, by],
            thread_map: {{name: PitchLinearStripminedThreadMap, shape: [64, 64], threads: 128,
                         elements_per_access: 4, contiguous_mode: 1}}}}
      dst: {{registers: frag}}
      predicate: vector
"""


def test_vector_straddle_refuted_with_its_weakest_precondition_and_proved_under_it(tmp_path: Path) -> None:
    # thread t loads columns 4(t % 16) .. +3 of a 64-wide tile; with N % 4 != 0 the vector
    # holding column N - 1 straddles N and the whole-vector predicate drops it
    bad = prove_loaded(loads_spec(STRADDLE.format(assume=""), "yaml", "straddle.yaml"), 120)
    p = props(bad)["predicates"]
    assert p.status == "REFUTED" and p.sizes["N"] % 4 != 0
    assert p.precondition == ["N % 4 == 0"]
    good = prove_loaded(loads_spec(STRADDLE.format(assume='assume: ["N % 4 == 0"]'), "yaml", "s.yaml"), 120)
    assert props(good)["predicates"].status == "PROVED" and props(good)["coverage"].status == "PROVED"
    # row r of A starts at byte 4 N r: a 128-bit vector at column 4j is 16-byte aligned for
    # every row only when N % 4 == 0; without the assumption some row's vectors are misaligned
    for prop in ("vectorize", "coalescing"):
        q = props(bad)[prop]
        assert q.status == "REFUTED" and q.sizes["N"] % 4 != 0 and q.findings, q
        assert "not a multiple of 16" in q.findings[0].message
        f = tmp_path / "straddle.yaml"
        f.write_text(STRADDLE.format(assume=""))
        assert replay(f, q.sizes, prop)  # verify at the counterexample's sizes fails the same check
        assert props(good)[prop].status == "PROVED"
    # N mod 64 in {0, 4, ..., 60} and whether N >= 64: 16 classes, against 64 without the assumption
    assert props(good)["coverage"].classes == 16 < props(bad)["coverage"].classes


def test_structure_that_changes_with_the_sizes_is_unknown_never_proved() -> None:
    text = STRADDLE.format(assume="").replace("tile: [64, 64]", "tile: [64, N]")
    run = prove_loaded(loads_spec(text, "yaml", "t.yaml"), 60)
    assert {props(run)[k].status for k in ("coverage", "predicates")} == {"UNKNOWN"}


def test_negative_intermediate_is_unknown_and_too_wide_is_invalid(tmp_path: Path) -> None:
    # N - M is negative for N < 64: unsigned bit-vectors would wrap, so nothing is decided
    grid = 'grid: ["ceil_div(M, 64)", "ceil_div(N, 64)"]'
    f = tmp_path / "k.yaml"
    f.write_text(STRADDLE.format(assume="").replace(grid, 'grid: ["ceil_div(M, 64)", "ceil_div(N - M, 64) + 1"]'))
    proc = subprocess.run([sys.executable, "-m", "threadmap.cli", "prove", str(f), "--format", "json"],
                          capture_output=True, text=True)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and {p["status"] for p in doc["runs"][0]["properties"]} == {"UNKNOWN"}
    assert "can be negative" in doc["runs"][0]["properties"][0]["reason"]
    # N up to 2^31 cubed: beyond 64 bits, an invalid spec (exit 2) with the reason
    f.write_text(STRADDLE.format(assume="").replace("max: 256", "max: 2147483647").replace(
        grid, 'grid: ["ceil_div(M, 64)", "ceil_div(N * N * N, 64 * N * N)"]'))
    proc = subprocess.run([sys.executable, "-m", "threadmap.cli", "prove", str(f)], capture_output=True, text=True)
    assert proc.returncode == 2 and "64-bit" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_unsatisfiable_assumption_exits_2(tmp_path: Path) -> None:
    f = tmp_path / "k.yaml"
    f.write_text(STRADDLE.format(assume='assume: ["N % 4 == 5"]'))
    proc = subprocess.run([sys.executable, "-m", "threadmap.cli", "prove", str(f)], capture_output=True, text=True)
    assert proc.returncode == 2 and "assume" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_time_limit_gives_unknown_and_exit_1() -> None:
    proc = subprocess.run([sys.executable, "-m", "threadmap.cli", "prove", str(RANGES / "row_smem.yaml"),
                           "--timeout", "0.1", "--format", "json"], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    by = {p["property"]: p for p in doc["runs"][0]["properties"]}
    # what was decided before the limit keeps its status; the rest is UNKNOWN, never a pass.
    # The limit is wall-clock (a user's), so how far the proof got depends on the machine's
    # load: the 256 size classes never fit in 0.1 s (the whole proof takes about a second since
    # the class pass skips decided tile kinds), the first class may or may not.
    for k in ("coverage", "predicates", "dataflow"):
        assert by[k]["status"] == "UNKNOWN" and "time limit" in by[k]["reason"], by[k]
    bank = by["bank_conflicts"]
    assert bank["status"] == "REFUTED" or (bank["status"] == "UNKNOWN" and "time limit" in bank["reason"]), bank


@pytest.mark.parametrize("seed", [20261202, 20261203, 20261204, 20261205])
def test_prove_agrees_with_verify_on_generated_specs(seed: int) -> None:
    """4 x 10 hypothesis-generated specs (tests/support/prove_agreement.py: copies, transposes, tiled
    copies into plain, padded and swizzled smem, CUTLASS thread maps), one seed per test so
    that workers share them: every PROVED property holds at 12 random sizes of its range,
    every REFUTED one replays; 0 disagreements."""
    from tests.support.prove_agreement import run

    count, disagreements, counts = run(10, seed, show=False)
    assert not disagreements, disagreements
    assert count == 10
    decided = sum(v for k, v in counts.items() if k.endswith(("PROVED", "REFUTED")))
    assert decided >= 37  # 150 of 40 specs before: the generator makes specs that are proved and refuted
    assert sum(v for k, v in counts.items() if k.startswith(("vectorize:REFUTED", "coalescing:REFUTED"))) >= 1


def test_cli_targets_one_bad_path_does_not_hide_the_others(tmp_path: Path) -> None:
    good = RANGES / "row_cvectorized.yaml"  # one size class: fast
    proc = subprocess.run([sys.executable, "-m", "threadmap.cli", "prove", str(good), str(tmp_path / "no.yaml"),
                           "--format", "json"], capture_output=True, text=True)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 2 and len(doc["runs"]) == 1 and "no such file" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = subprocess.run([sys.executable, "-m", "threadmap.cli", "prove", str(tmp_path / "empty")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "no spec files" in proc.stderr


def _fixed_library() -> list[Path]:
    from threadmap.spec.load import iter_spec_files

    return [f for f in sorted(iter_spec_files(ROOT / "specs")) if "ranges" not in f.parts]


def test_fixed_library_is_large() -> None:
    # each fixed-size spec decides the 6 properties of REFUTING_CHECKS below
    assert 6 * len(_fixed_library()) >= 150


@pytest.mark.parametrize("f", _fixed_library(), ids=lambda f: f"{f.parent.name}/{f.stem}")
def test_library_at_fixed_sizes_agrees_with_verify(f: Path) -> None:
    """Every fixed-size spec of the library (one test each, so workers share them): one size
    class (the spec's sizes), so each class property, vector legality and coalescing is
    REFUTED exactly when ``verify`` fails its checks there, and none is UNKNOWN."""
    from threadmap.prove.run import REFUTING_CHECKS
    from threadmap.spec.load import load_spec

    loaded = load_spec(f)
    # a generous limit: a loaded CI machine must not turn a proof into a time-out UNKNOWN
    proof = {p.property: p for p in prove_loaded(loaded, 300).properties}
    runs = api.verify_spec(loaded)
    for prop, checks in REFUTING_CHECKS.items():
        fails = any(r.check in checks and r.status == "FAIL" and
                    any(x.severity == "error" and x.kind not in ("aliased_write", "aliasing_undecided")
                        for x in r.findings) for run in runs for r in run.results)
        assert proof[prop].status == ("REFUTED" if fails else "PROVED"), (f, prop, proof[prop].reason)
    # a PROVED sector ratio holds in verify's whole-grid measurement
    if proof["coalescing"].status == "PROVED" and loaded.spec.expect is not None:
        from threadmap.model import build_model
        lim = build_model(loaded, loaded.envs[0]).expect
        for r in (r for run in runs for r in run.results if r.check == "coalescing"):
            bound = lim.sector_ratio_load if r.side == "src" else lim.sector_ratio_store
            assert bound is None or r.summary.ratio <= bound, (f, r.side)  # type: ignore[union-attr]


CASES = Path(__file__).parent / "cases"


@pytest.mark.parametrize("name,want", [
    # at: [bx, 0] with N in range: for N > 16 the columns past the constant tile are never
    # read (e.g. N = 272, which N % 256 == 16 allows): coverage and predicates fail there
    ("const_at2", {"coverage": "REFUTED", "predicates": "REFUTED"}),
    # at: [bx, bx] visits the diagonal tiles only: not a product of per-mode ranges
    ("diag_at2", {"coverage": "UNKNOWN", "predicates": "UNKNOWN"}),
    # a 1-mode tile of a 2-mode tensor: the untiled extent N is not split into classes
    ("lowrank_tile2", {"coverage": "UNKNOWN", "predicates": "UNKNOWN"}),
    # y = (N,1,M):(1,1,16) aliases once N > 16 (N = 272 is allowed): never PROVED
    ("alias_ext1b", {"aliasing": "UNKNOWN"}),
    # an inequality between sizes: the transpose-free copy is exact for every M >= N
    ("assume_ge", {"coverage": "PROVED", "predicates": "PROVED"}),
    # max(N - 5, 1): an intermediate is negative on intervals, so the unsigned encoding refuses
    ("g_maxneg2", {"grid": "UNKNOWN", "coverage": "UNKNOWN"}),
    # the declared 128-bit vector is legal at N = 5 (the first sample: scalar accesses) but the
    # model vectorizes at N = 8, where verify fails both checks: one encoded structure cannot
    # stand for every N, so neither is PROVED
    ("vec_width_varies", {"vectorize": "UNKNOWN", "coalescing": "UNKNOWN"}),
    # threads: R with R in 1..2: the first sample has one thread, R = 2 a second one whose
    # 128-bit access verify finds misaligned
    ("threads_vary", {"vectorize": "UNKNOWN", "coalescing": "UNKNOWN"}),
])
def test_attack_cases(name: str, want: dict[str, str]) -> None:
    from threadmap.spec.load import load_spec

    run = prove_loaded(load_spec(CASES / f"{name}.yaml"), 60)
    got = {k: props(run)[k].status for k in want}
    assert got == want, {k: props(run)[k].reason for k in want}
    for p in run.properties:  # every REFUTED replays
        if p.status == "REFUTED" and p.property in ("coverage", "predicates"):
            assert replay(CASES / f"{name}.yaml", p.sizes, "grid_coverage" if p.property == "coverage"
                          else p.property)


def test_constants_and_trivial_assumptions_are_encoded() -> None:
    text = (RANGES / "planted_one_residue_grid.yaml").read_text()
    for edit in (("grid: [", 'assume: ["1 == 1"]\ngrid: ['),
                 ('grid: ["ceil_div(N, 128) - ((N % 128 + 28) / 128) * (1 - (N % 128 + 27) / 128)"]',
                  'grid: ["min(ceil_div(N, 128), 100000000)"]')):
        run = prove_loaded(loads_spec(text.replace(*edit), "yaml", "k.yaml"), 60)
        assert props(run)["grid"].status in ("PROVED", "REFUTED")


def test_verify_engines() -> None:
    planted = str(RANGES / "planted_one_residue_grid.yaml")
    fixed = str(ROOT / "specs" / "cute_transpose" / "row_smem_swizzled.yaml")
    cli = [sys.executable, "-m", "threadmap.cli", "verify"]
    # both: the samples pass, the proof refutes: exit 1, and that is no disagreement
    proc = subprocess.run([*cli, planted, "--engine", "both", "--format", "json"], capture_output=True, text=True)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["disagreements"] == []
    assert all(r["verdict"] == "pass" for r in doc["verify"]["runs"])
    assert {p["property"]: p["status"] for p in doc["prove"]["runs"][0]["properties"]}["coverage"] == "REFUTED"
    # auto: the ranged spec is proved, the fixed one enumerated
    proc = subprocess.run([*cli, planted, fixed, "--engine", "auto", "--format", "json"],
                          capture_output=True, text=True)
    doc = json.loads(proc.stdout)
    assert [r["path"] for r in doc["verify"]["runs"]] == [fixed]
    assert [r["path"] for r in doc["prove"]["runs"]] == [planted]
    # z3: as threadmap prove; every engine reports in every format, and --sizes is for the enumeration
    proc = subprocess.run([*cli, fixed, "--engine", "z3", "--format", "json"], capture_output=True, text=True)
    assert proc.returncode == 0 and json.loads(proc.stdout)["exit_code"] == 0
    proc = subprocess.run([*cli, fixed, "--engine", "both", "--format", "sarif"], capture_output=True, text=True)
    assert proc.returncode == 0 and json.loads(proc.stdout)["runs"][0]["results"] == []
    proc = subprocess.run([*cli, fixed, "--engine", "z3", "--sizes", "M=64"], capture_output=True, text=True)
    assert proc.returncode == 2 and "--sizes" in proc.stderr


def test_prove_junit_and_sarif() -> None:
    import xml.etree.ElementTree as ET

    planted = str(RANGES / "planted_one_residue_grid.yaml")
    cli = [sys.executable, "-m", "threadmap.cli", "prove", planted, "--format"]
    proc = subprocess.run([*cli, "junit"], capture_output=True, text=True)
    cases = {c.get("name"): [x.tag for x in c] for c in ET.fromstring(proc.stdout).iter("testcase")}
    assert proc.returncode == 1 and cases["coverage"] == ["failure"] and cases["aliasing"] == ["system-out"]
    assert cases["dataflow"] == ["failure"]  # the never-delivered outputs (issue 16, item 3)
    proc = subprocess.run([*cli, "sarif"], capture_output=True, text=True)
    results = json.loads(proc.stdout)["runs"][0]["results"]
    got = {r["ruleId"]: r for r in results}
    assert {"prove.coverage", "prove.predicates", "prove.grid", "prove.dataflow"} <= set(got)
    assert "prove.aliasing" not in got
    assert got["prove.coverage"]["level"] == "error" and got["prove.coverage"]["properties"]["sizes"]["N"] % 128 == 100


def test_a_proof_contradicted_by_a_sample_is_a_disagreement() -> None:
    from threadmap.prove import disagreements
    from threadmap.spec.load import load_spec

    good = prove_loaded(load_spec(ROOT / "specs" / "cute_transpose" / "row_smem_swizzled.yaml"), 60)
    assert props(good)["coverage"].status == "PROVED"
    # a run that fails coverage and predicates (the floor-divided grid), filed under the same path
    bad = api.verify_spec(ROOT / "specs" / "planted" / "off_by_one_grid.yaml")[0].model_copy(update={"path": good.path})
    found = disagreements([bad], [good])
    assert any("coverage is PROVED" in d for d in found) and any("predicates is PROVED" in d for d in found)
    assert disagreements([api.verify_spec(ROOT / "specs" / "cute_transpose" / "row_smem_swizzled.yaml")[0]],
                         [good]) == []


def test_a_cp_async_ca_destination_is_not_proved_conflict_free_by_tile_classes(tmp_path: Path) -> None:
    """The A tile with cp.async.ca (the LDGSTS rule: a phase costs one wavefront per global line
    its lanes read) for K = 32, 64, ...: one size class (K mod 32 = 0) whose representative,
    K = 32, puts a phase's two 64-byte rows in one line (4 wavefronts, no conflict), while
    K = 64 puts them 128 bytes apart (8).  The tile type does not decide the count, so the
    property is UNKNOWN, never PROVED (it was PROVED); the enumeration at K = 64 refutes it."""
    text = (RANGES / "sm80_f16_gemm_a_128x32_warpraked.yaml").read_text()
    for old, new in (("SM80_CP_ASYNC_CACHEGLOBAL<", "SM80_CP_ASYNC_CACHEALWAYS<"),
                     ("M: {min: 1, max: 2147483647, samples: [1000, 1024]}", "M: 128"),
                     ("K: {min: 8, max: 2097120, samples: [64, 1000]}",
                      "K: {min: 32, max: 2097120, multiple_of: 32, samples: [32, 64]}"),
                     ('assume: ["K % 8 == 0"]\n', "")):
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "a_ca.yaml"
    path.write_text(text)
    runs = {r.sizes["K"]: r for r in api.verify_spec(path)}
    assert runs[32].verdict == "pass" and runs[64].failing == ["bank_conflicts"]
    run = prove([path], timeout_s=120).runs[0]
    p = props(run)
    assert p["bank_conflicts"].status == "UNKNOWN" and "global lines" in p["bank_conflicts"].reason
    assert p["coverage"].status == "PROVED" and p["coverage"].classes == 1
    # the bypassing form keeps the store rule, a function of the shared addresses alone: proved
    path.write_text(text.replace("SM80_CP_ASYNC_CACHEALWAYS<", "SM80_CP_ASYNC_CACHEGLOBAL<"))
    assert props(prove([path], timeout_s=120).runs[0])["bank_conflicts"].status == "PROVED"


def test_replicated_gemm_tiles_are_proved_and_a_planted_edge_refuted() -> None:
    # every CTA of a grid row reads one A tile, every CTA of a column one B tile (coverage
    # replicated): the tile kinds decide most classes (threadmap.prove.tiles, (d)), and the
    # unpredicated B copy is still refuted at a ragged N, replayed by verify
    cases = ROOT / "tests" / "prove" / "cases"
    good = props(prove([cases / "replicated_ab.yaml"], timeout_s=120).runs[0])
    assert {k: p.status for k, p in good.items()} == dict.fromkeys(good, "PROVED")
    assert good["coverage"].classes == 64  # (M % 32, N % 32) in steps of 4
    path = cases / "replicated_b_unpredicated.yaml"
    bad = props(prove([path], timeout_s=120).runs[0])
    assert {k for k, p in bad.items() if p.status != "PROVED"} == {"predicates"}
    n = bad["predicates"].sizes["N"]
    assert n % 32 != 0 and replay(path, bad["predicates"].sizes, "predicates")


def test_nested_modes_and_quotients_are_taken_at_their_size() -> None:
    # an implicit GEMM's im2col operand: top-level modes (Q,P,N) and (8,S,R,C/8), the quotient
    # exact under C % 8 == 0.  The class properties are proved over (Q*P*N % 32, K % 32) and an
    # unpredicated copy that the whole-tile samples pass is refuted at a ragged Q*P*N, replayed
    # by verify; the strides ((Q+S-1)*C) are no monomials, so the access properties stay UNKNOWN
    cases = ROOT / "tests" / "prove" / "cases"
    good = props(prove([cases / "nested_implicit_gemm.yaml"], timeout_s=120).runs[0])
    assert {k for k, p in good.items() if p.status != "PROVED"} == {"vectorize", "coalescing"}
    assert "monomial strides" in good["coalescing"].reason
    assert good["coverage"].classes == 32 * 4  # Q*P*N % 32, K % 32 in steps of 8
    path = cases / "nested_implicit_gemm_unpredicated.yaml"
    assert not any(r.status == "FAIL" for run in api.verify_spec(path) for r in run.results)
    bad = props(prove([path], timeout_s=120).runs[0])
    assert bad["predicates"].status == "REFUTED"
    s = bad["predicates"].sizes
    assert s["Q"] * s["P"] * s["N"] % 32 != 0 and replay(path, s, "predicates")


def test_extents_in_proportion_to_their_tiles_share_a_coordinate(tmp_path: Path) -> None:
    # a sparse A (M, K/2) tiled 8 wide and B (K, N) tiled 16 deep along bz: K/2 is a monomial
    # with denominator 2 and the two tiles cut at the same fraction, so the class properties are
    # proved over (M % 32, N % 32) in steps of 4; A tiled 4 wide instead (K/8 tiles against
    # K/16) puts bz on two different tilings: UNKNOWN, never PROVED
    path = ROOT / "tests" / "prove" / "cases" / "sparse_half_k.yaml"
    good = props(prove([path], timeout_s=120).runs[0])
    assert {k for k, p in good.items() if p.status != "PROVED"} == {"vectorize", "coalescing"}
    assert good["coverage"].classes == 8 * 8 and "K/2" in good["coalescing"].reason
    text = path.read_text().replace("tile: [32, 8]", "tile: [32, 4]").replace("'(32,8):(1,32)'", "'(32,4):(1,32)'")
    text = text.replace("shape: [32, 8], threads: 32,\n                      warp_thread_arrangement: [8, 4]",
                        "shape: [32, 4], threads: 32,\n                      warp_thread_arrangement: [8, 4]")
    assert text.count("[32, 4]") == 2
    bad = props(prove_loaded(loads_spec(text, "yaml", "unlike.yaml"), 60))
    assert bad["coverage"].status == "UNKNOWN" and "would depend on both" in bad["coverage"].reason


@pytest.mark.parametrize("name,sizes,checks", [
    ("unsound_pad", {"M": 64, "P": 34}, {"bank_conflicts"}),
    ("unsound_minext", {"M": 64, "N": 33}, {"coverage", "predicates"}),
    ("unsound_minstride", {"M": 64, "N": 62}, {"vectorize", "coalescing", "aliasing"}),
    ("unsound_parity", {"M": 64, "N": 2}, {"predicates"}),
    ("unsound_affine", {"M": 16, "N": 2, "Q": 5}, {"predicates"}),
])
def test_what_the_classes_cannot_see_is_never_proved(name: str, sizes: dict[str, int], checks: set[str]) -> None:
    # each case's comment says how the size classes would miss the failure (a size in the shared
    # layout alone; min, max and % in a layout, which the stand-in primes misread); verify fails
    # the properties at the sizes given, inside the ranges, so prove must not say PROVED
    path = CASES / f"{name}.yaml"
    failing = {r.check for run in api.verify_spec(path, sizes=sizes) for r in run.results if r.status == "FAIL"}
    wanted = {"aliasing": "grid_coverage", "coverage": "grid_coverage"}
    assert {wanted.get(c, c) for c in checks} <= failing
    got = props(prove([path], timeout_s=120).runs[0])
    assert all(got[c].status != "PROVED" for c in checks), {c: got[c].status for c in checks}


def test_a_swizzled_global_layout_is_unknown_not_invalid(tmp_path: Path) -> None:
    # verify accepts a swizzled global tensor; prove has no top-level strides for it: UNKNOWN,
    # exit status 1 (it exited 2, with the prover's stand-in primes in the message)
    text = (CASES / "replicated_ab.yaml").read_text().replace("layout: '(M,K):(1,M)'",
                                                              "layout: 'Sw<1,2,3> o (M,K):(1,M)'")
    path = tmp_path / "swizzled.yaml"
    path.write_text(text)
    assert not any(r.status == "FAIL" for run in api.verify_spec(path) for r in run.results)
    p = subprocess.run([sys.executable, "-m", "threadmap", "prove", str(path), "--format", "json"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 1, p.stderr
    got = {q["property"]: q for q in json.loads(p.stdout)["runs"][0]["properties"]}
    assert got["coverage"]["status"] == "UNKNOWN" and "swizzled" in got["coverage"]["reason"]
