"""The sweep end to end on the narrow filter: results in SQLite, resumed after an
interruption without redoing what was done, the summary and its JSON."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import threadmap.sweep.run as run_mod
from tests.sweep.conftest import KERNELS
from threadmap.cli import main
from threadmap.sweep.extract import Extracted
from threadmap.sweep.run import Options, sweep
from threadmap.sweep.store import VERIFIER_VERSION, Store


class Killed(Exception):
    """Stands for the process dying between two of the store's transactions."""


def rows(db: Path) -> dict[str, tuple[Any, ...]]:
    """Every result row but its write time: digest -> (status, reason, findings, warnings, spec)."""
    con = sqlite3.connect(str(db))
    try:
        return {r[0]: r[1:] for r in con.execute(
            "SELECT digest, status, reason_kind, reason, findings, warnings, spec, spec_hash FROM results")}
    finally:
        con.close()


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many configurations the sweep extracts and how many specs it verifies."""
    n = {"extracted": 0, "verified": 0}
    extract_batch, verify_text = run_mod.extract_batch, run_mod.verify_text

    def ext(configs: Any, *a: Any) -> Any:
        n["extracted"] += len(configs)
        return extract_batch(configs, *a)

    def ver(*a: Any) -> Any:
        n["verified"] += 1
        return verify_text(*a)

    monkeypatch.setattr(run_mod, "extract_batch", ext)
    monkeypatch.setattr(run_mod, "verify_text", ver)
    return n


def test_an_interrupted_sweep_resumes_without_redoing_a_configuration(
        tmp_path: Path, extracted: dict[str, Extracted], counted: dict[str, int],
        monkeypatch: pytest.MonkeyPatch) -> None:
    whole = tmp_path / "whole.db"
    first = sweep(Options(kernels=KERNELS, db=whole))
    # six configurations are extracted; the universal and the grouped kernel of one tile have the
    # same mainloop, so the same spec, verified once
    assert counted == {"extracted": 6, "verified": 5} and first.shared_verifications == 1
    assert first.reused == 0 and len(rows(whole)) == 6
    # the same sweep again: everything from the store, nothing extracted or verified
    again = sweep(Options(kernels=KERNELS, db=whole))
    assert counted == {"extracted": 6, "verified": 5} and again.reused == 6
    assert again.configurations == first.configurations

    # killed after two results were written
    part = tmp_path / "part.db"
    put = Store.put
    written: list[str] = []

    def dying(self: Store, result: Any) -> None:
        if len(written) == 2:
            raise Killed
        put(self, result)
        written.append(result.digest)

    monkeypatch.setattr(Store, "put", dying)
    with pytest.raises(Killed):
        sweep(Options(kernels=KERNELS, db=part))
    monkeypatch.setattr(Store, "put", put)
    assert set(rows(part)) == set(written)
    before = dict(counted)
    resumed = sweep(Options(kernels=KERNELS, db=part))
    assert resumed.reused == 2
    # the four others are done, the two finished ones never
    assert counted["extracted"] - before["extracted"] == 4
    assert rows(part) == rows(whole)
    assert resumed.configurations == first.configurations


def test_a_row_lost_from_the_store_is_done_again_alone(tmp_path: Path, extracted: dict[str, Extracted],
                                                      counted: dict[str, int]) -> None:
    db = tmp_path / "s.db"
    sweep(Options(kernels=KERNELS, db=db))
    full = rows(db)
    gone = next(d for d, r in full.items() if r[0] == "pass")
    con = sqlite3.connect(str(db))
    with con:
        con.execute("DELETE FROM results WHERE digest = ?", (gone,))
    con.close()
    n0 = dict(counted)
    again = sweep(Options(kernels=KERNELS, db=db))
    assert again.reused == 5 and counted["extracted"] - n0["extracted"] == 1
    assert rows(db) == full


def test_an_older_verifiers_rows_are_verified_again_from_their_stored_specs(
        tmp_path: Path, extracted: dict[str, Extracted], counted: dict[str, int]) -> None:
    """Rows another verifier version wrote (here: marked so, their warnings planted) are not
    extracted again: their stored spec text is verified again, once per distinct spec, and
    the rows end as a fresh sweep writes them."""
    db = tmp_path / "s.db"
    sweep(Options(kernels=KERNELS, db=db))
    full = rows(db)
    con = sqlite3.connect(str(db))
    with con:
        con.execute("UPDATE results SET verifier = '1', warnings = '[{\"planted\": 1}]' WHERE spec != ''")
        old = con.execute("SELECT COUNT(*), COUNT(DISTINCT spec_hash) FROM results WHERE spec != ''").fetchone()
    con.close()
    assert old[0] >= 2
    n0 = dict(counted)
    again = sweep(Options(kernels=KERNELS, db=db))
    assert counted["extracted"] == n0["extracted"]                  # nothing extracted again
    assert counted["verified"] - n0["verified"] == old[1]           # each stored spec once
    assert again.reverified == old[0] and again.reused == len(full)
    assert rows(db) == full
    con = sqlite3.connect(str(db))
    assert {v for (v,) in con.execute("SELECT verifier FROM results")} == {VERIFIER_VERSION}
    con.close()


def test_the_command_reports_counts_and_json(tmp_path: Path, extracted: dict[str, Extracted]) -> None:
    db, out = tmp_path / "s.db", tmp_path / "out"
    r = CliRunner().invoke(main, ["sweep", "--kernels", KERNELS, "--db", str(db), "--jobs", "1", "--format", "json",
                                  "-o", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    (gemm,) = data["kinds"]
    assert (gemm["kind"], gemm["kernels"], gemm["configurations"], gemm["analysed"], gemm["kernels_analysed"]) == \
        ("gemm", 7, 6, 6, 7)
    assert data["reasons"] == []
    assert json.loads((out / "sweep.report.json").read_text()) == data
    # the narrow-alignment configuration's extra sectors are a cost, with its spec to reproduce it
    warned = {w["check"] for w in data["warnings"]}
    assert "coalescing" in warned
    for w in data["warnings"]:
        for name in w["specs"]:
            assert (out / "warnings" / name).exists()
    # the table names the reason and the totals
    r = CliRunner().invoke(main, ["sweep", "--kernels", KERNELS, "--db", str(db), "--jobs", "1"])
    assert r.exit_code == 0 and "6 configurations stand for 7 kernels; 6 analysed (7 kernels)" in r.stdout


def test_a_finding_is_reported_with_its_spec_and_exit_1(tmp_path: Path, extracted: dict[str, Extracted],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The plumbing of a finding (none of the filter's kernels has one): a verification that
    fails a check puts the configuration in the findings table, writes its spec to -o DIR,
    and the command exits 1."""
    verify_text = run_mod.verify_text

    def failing(text: str, name: str) -> Any:
        status, findings, warnings, costs, secs, err = verify_text(text, name)
        if "simt" in name:
            return "fail", [{"check": "predicates", "stage": 0, "side": "src", "sizes": {"M": 1},
                             "message": "planted"}], warnings, costs, secs, err
        return status, findings, warnings, costs, secs, err

    monkeypatch.setattr(run_mod, "verify_text", failing)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["sweep", "--kernels", KERNELS, "--db", str(tmp_path / "s.db"), "--jobs", "1",
                                  "--format", "json", "-o", str(out)])
    assert r.exit_code == 1, r.output
    (f,) = json.loads(r.stdout)["findings"]
    assert (f["check"], f["configurations"], f["kernels"], f["example"]) == ("predicates", 1, 1, "planted")
    assert f["specs"] == ["cutlass_simt_sgemm_128x128_8x4_tn_align1.yaml"]
    spec = out / f["specs"][0]
    assert spec.exists() and "PitchLinearStripminedThreadMap" in spec.read_text()
    # the folder verifies as it is: its specs (the finding was planted: they pass), not the report
    assert (out / "sweep.report.json").exists()
    r = CliRunner().invoke(main, ["verify", str(out), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert {Path(run["path"]).name for run in json.loads(r.stdout)["runs"]} == {p.name for p in out.rglob("*.yaml")}


def test_verify_text_keeps_a_failing_check_and_the_costs(extracted: dict[str, Extracted]) -> None:
    """A check that fails makes the configuration fail (the check results' status is upper
    case), each entry keeps its summary's numbers, and the costs of every copy side are kept."""
    import yaml

    import threadmap.api as api
    from tests.sweep.conftest import by_kernel
    from threadmap.spec.load import loads_spec
    from threadmap.sweep.library import generate, group
    from threadmap.sweep.specs import spec_text

    name = "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_nt_align2"
    cfg = by_kernel(group(generate(("80",), name)), name)
    text = spec_text(cfg, extracted[name], "test").text
    doc = yaml.safe_load(text)
    # B's shared buffer folded onto half its rows: two threads write each cell
    rows, cols = doc["stages"][1]["copy"]["src"]["tile"]
    doc["tensors"]["sB"]["layout"] = f"({rows},{cols}):({cols // 2},1)"
    bad = yaml.safe_dump(doc, sort_keys=False)
    oracle = api.verify(loads_spec(bad, "yaml", name))
    failing = {(r.check, r.stage) for run in oracle.runs for r in run.results if r.status == "FAIL"}
    assert failing
    status, findings, warnings, costs, _, err = run_mod.verify_text(bad, name)
    assert (status, err) == ("fail", "")
    assert {(f["check"], f["stage"]) for f in findings} == failing
    # the costs: every copy side's coalescing (global) and bank (shared) counts at whole tiles,
    # passing or not, as threadmap's report gives them
    status, _, warnings, costs, _, _ = run_mod.verify_text(text, name)
    assert status == "pass"
    report = api.verify(loads_spec(text, "yaml", name))
    whole = {k: max(run.sizes[k] for run in report.runs) for k in report.runs[0].sizes}
    (run,) = [run for run in report.runs if run.sizes == whole]
    expected = {(r.check, r.stage, r.side): r.summary for r in run.results
                if r.check in ("coalescing", "bank_conflicts")}
    assert sorted((c["check"], c["tensor"]) for c in costs) == [
        ("bank_conflicts", "sA"), ("bank_conflicts", "sB"), ("coalescing", "A"), ("coalescing", "B")]
    assert {(c["check"], c["stage"], c["side"]) for c in costs} == set(expected)
    for c in costs:
        summary = expected[(c["check"], c["stage"], c["side"])]
        assert c["summary"] == {k: getattr(summary, k) for k in c["summary"]}
        assert {"sectors", "ideal_sectors", "bytes"} <= set(c["summary"]) or \
            {"wavefronts", "ideal_wavefronts", "instructions"} <= set(c["summary"])
    # this operand's 32-bit cp.async cost more than ideal: warnings with their numbers
    assert warnings and all(w["summary"] and "witness" in w for w in warnings)


def test_check_text_proves_over_the_ranges_and_a_refutation_is_a_finding() -> None:
    """``--prove``'s task on a spec whose samples hide its bug (the grid drops the last 100
    columns when N % 128 == 100; specs/ranges derives it): verify passes, the proof refutes
    coverage at such an N, and the refutation becomes a finding of the configuration."""
    text = (Path(__file__).resolve().parents[2] / "specs" / "ranges" / "planted_one_residue_grid.yaml").read_text()
    status, findings, _, _, _, err, proof = run_mod.check_text(text, "planted", 60.0)
    assert (status, findings, err) == ("pass", [], "")
    (doc,) = proof
    by = {p["property"]: p for p in doc["properties"]}
    assert by["coverage"]["status"] == "REFUTED" and by["coverage"]["sizes"]["N"] % 128 == 100
    assert by["vectorize"]["status"] == "PROVED"
    found = run_mod.proof_findings(proof)
    assert {f["check"] for f in found} == {f"prove {p}" for p, v in by.items() if v["status"] == "REFUTED"}
    assert all(f["sizes"]["N"] % 128 == 100 or f["check"] == "prove grid" for f in found)
    # the summary's count: refuted beats unknown beats proved over a configuration's documents
    proofs: dict[str, run_mod.ProofRow] = {}
    unproved: dict[str, run_mod.ReasonRow] = {}
    stopped = {"error": "the proving process died (exit 9)"}
    run_mod.tally_proof([doc, stopped], "kern", 3, proofs, unproved)
    assert (proofs["coverage"].refuted, proofs["coverage"].kernels_refuted) == (1, 3)
    assert (proofs["vectorize"].unknown, proofs["vectorize"].proved) == (1, 0)
    assert [(u.reason, u.configurations) for u in unproved.values()] == [
        ("the proving process died (exit N)", 1)]


def test_prove_in_the_sweep_is_stored_reused_and_redone_from_the_stored_spec(
        tmp_path: Path, extracted: dict[str, Extracted], monkeypatch: pytest.MonkeyPatch) -> None:
    """``sweep --prove`` on one configuration: each property proved over the sizes the kernel
    accepts, or UNKNOWN with its reason; the proof is stored, read back by a rerun, and a proof
    of another prover version is made again from the stored spec, without extracting."""
    import yaml

    name = "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_nt_align2"
    db = tmp_path / "s.db"
    args = ["sweep", "--kernels", name, "--db", str(db), "--jobs", "1", "--format", "json", "--prove"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    (cfg,) = data["configurations"]
    spec = yaml.safe_load(cfg_spec(db))
    assert spec["assume"] == ["K % 32 == 0", "M % 2 == 0", "N % 2 == 0"]
    verdicts = {p["property"]: p["status"] for p in cfg["proof"][0]["properties"]}
    # align2: 4-byte cp.async.ca (CACHEALWAYS), whose shared wavefronts follow the global lines:
    # the size classes do not decide them; everything else holds for every size in range
    assert "CACHEALWAYS" in spec["stages"][0]["copy"]["atom"]
    assert {p for p, v in verdicts.items() if v != "PROVED"} == {"bank_conflicts"}
    (why,) = data["unproved"]
    assert "cp.async.ca" in why["reason"] and why["configurations"] == 1
    assert {p["property"]: (p["proved"], p["unknown"]) for p in data["proofs"]}["coverage"] == (1, 0)

    calls: list[str] = []

    def planted(text: str, nm: str, timeout: float) -> list[dict[str, Any]]:
        calls.append(nm)
        return [{"seconds": 0.0, "bits": 0, "properties": [
            {"property": "coverage", "status": "REFUTED", "method": "planted", "classes": 1, "reason": "planted",
             "sizes": {"M": 2, "N": 2, "K": 32}, "precondition": []}]}]

    monkeypatch.setattr(run_mod, "prove_text", planted)
    again = sweep(Options(kernels=name, db=db, prove=True))
    assert calls == [] and again.reused == 1 and again.reproved == 0
    con = sqlite3.connect(str(db))
    with con:
        con.execute("UPDATE results SET prover = '0'")
    con.close()
    # --count does nothing: the row as stored, its old proof counted
    counted_only = sweep(Options(kernels=name, db=db, prove=True, count_only=True))
    assert calls == [] and counted_only.reproved == 0 and counted_only.kinds[0].passed == 1
    assert counted_only.proofs and counted_only.not_proved == 0
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1, r.output
    data = json.loads(r.stdout)
    assert calls == [name] and data["extracted"] == 0 and data["reproved"] == 1
    (f,) = data["findings"]
    assert f["check"] == "prove coverage" and f["example"].startswith("coverage refuted at M=2, N=2, K=32")


def cfg_spec(db: Path) -> str:
    con = sqlite3.connect(str(db))
    try:
        (text,) = con.execute("SELECT spec FROM results").fetchone()
    finally:
        con.close()
    return str(text)


def patched_tree(real: Path, dest: Path, rel: str, old: str, new: str) -> Path:
    """A CUTLASS include folder at ``dest`` that links to ``real`` everywhere but ``rel``,
    a copy with ``old`` replaced by ``new`` (a header tree of the same version, edited)."""
    parts = Path(rel).parts
    src, out = real, dest
    for i, part in enumerate(parts):
        out.mkdir(parents=True, exist_ok=True)
        for entry in src.iterdir():
            if entry.name != part:
                (out / entry.name).symlink_to(entry)
        src, out = src / part, out / part
        if i == len(parts) - 1:
            text = src.read_text()
            assert old in text
            out.write_text(text.replace(old, new))
    return dest


def test_another_header_tree_is_swept_apart_and_compared(tmp_path: Path, extracted: dict[str, Extracted]) -> None:
    """``--cutlass-include`` sweeps an edited copy of the installed headers (CUTLASS's 2.x
    DefaultMma picks the L1-bypassing cp.async for 128-bit operands; the edit makes it
    ``CacheOperation::Always``): its rows are kept apart from the installed tree's, and
    ``--compare`` reports the configuration whose copies changed."""
    import yaml

    from threadmap.gpu import toolchain

    real = toolchain.cutlass_include()
    assert real is not None
    tree = patched_tree(real, tmp_path / "include", "cutlass/gemm/threadblock/default_mma.h",
                        "? cutlass::arch::CacheOperation::Global", "? cutlass::arch::CacheOperation::Always")
    assert toolchain.cutlass_identity(tree).startswith(toolchain.cutlass_version(real) + "+")
    name = "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x3_tn_align8"
    db = tmp_path / "s.db"
    base = ["sweep", "--kernels", name, "--db", str(db), "--jobs", "1", "--format", "json"]
    assert CliRunner().invoke(main, base).exit_code == 0
    r = CliRunner().invoke(main, [*base, "--cutlass-include", str(tree), "--compare", toolchain.cutlass_version(real)])
    data = json.loads(r.stdout)
    cmp = data["comparison"]
    assert (cmp["compared"], cmp["missing"]) == (1, 0)
    (row,) = cmp["rows"]
    assert row["kernel"] == name and "the spec differs (thread maps, layouts or copy atoms)" in row["changes"]
    assert r.exit_code == (1 if row["verdict"] == "regression" else 0), r.output
    con = sqlite3.connect(str(db))
    atoms = {c: {s["copy"]["atom"] for s in yaml.safe_load(spec)["stages"] if isinstance(s, dict)}
             for c, spec in con.execute("SELECT cutlass, spec FROM results")}
    con.close()
    assert atoms == {toolchain.cutlass_version(real): {"SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>"},
                     toolchain.cutlass_identity(tree): {"SM80_CP_ASYNC_CACHEALWAYS<uint128_t>"}}
    # the page has the comparison too
    page = tmp_path / "page.html"
    r = CliRunner().invoke(main, [*base[:-2], "--format", "html", "-o", str(page), "--cutlass-include", str(tree),
                                  "--compare", toolchain.cutlass_version(real)])
    html = page.read_text()
    assert f"Changes from CUTLASS {toolchain.cutlass_version(real)} to {toolchain.cutlass_identity(tree)}" in html
    assert name in html
    # a tree the database has no rows of, and a folder that is no include tree: one line, exit 2
    r = CliRunner().invoke(main, [*base, "--compare", "9.9.9"])
    assert r.exit_code == 2 and "holds no rows of CUTLASS 9.9.9" in r.output
    missing = tmp_path / "none.db"
    r = CliRunner().invoke(main, [*base[:4], str(missing), *base[5:], "--compare", "4.2.0"])
    assert r.exit_code == 2 and "does not exist" in r.output and not missing.exists()
    r = CliRunner().invoke(main, [*base, "--cutlass-include", str(tmp_path)])
    assert r.exit_code == 2 and "not a CUTLASS include folder" in r.output
    fake = tmp_path / "fake"
    for f in ("cute/tensor.hpp", "cutlass/version.h"):  # the files, but no version in them
        (fake / f).parent.mkdir(parents=True, exist_ok=True)
        (fake / f).write_text("")
    r = CliRunner().invoke(main, [*base, "--cutlass-include", str(fake)])
    assert r.exit_code == 2 and "defines CUTLASS_MAJOR" in r.output


def _row(status: str, findings: list[dict[str, Any]] = (), costs: list[dict[str, Any]] = (),  # type: ignore[assignment]
         proof: list[dict[str, Any]] = (), spec: str = "s") -> Any:  # type: ignore[assignment]
    from threadmap.sweep.store import PROVER_VERSION, Result

    return Result("d", "k", "label", status, "", "does not compile" if status == "not_analysed" else "",
                  list(findings), [], spec if status != "not_analysed" else "", spec, ["kern"], 0.0, list(costs),
                  proof=list(proof), prover=PROVER_VERSION if proof else "")


def _cost(wavefronts: int, document: int = 0) -> dict[str, Any]:
    return {"check": "bank_conflicts", "stage": 0, "side": "dst", "tensor": "sA", "document": document,
            "summary": {"wavefronts": wavefronts, "instructions": 4}}


def test_compare_results_judges_like_for_like() -> None:
    """What ``--compare`` calls a regression: only what both rows measured.  A configuration
    that compiles now is an improvement (its costs were unknown, not new); a refuted property
    on the one side that was proved is no change of the headers; costs of two spec documents
    (a sparse GEMM's A and E) are told apart."""
    from threadmap.sweep.run import compare_results

    fixed = compare_results(_row("not_analysed"), _row("pass", costs=[_cost(8)]))
    assert fixed == ("improvement", ["not_analysed -> pass"])
    broke = compare_results(_row("pass", costs=[_cost(8)]), _row("not_analysed"))
    assert broke[0] == "regression" and broke[1][0].startswith("pass -> not_analysed (does not compile")
    refuted = {"check": "prove coverage", "stage": None, "side": None, "message": "m"}
    proof = [{"properties": [], "timeout": 120.0}]
    assert compare_results(_row("fail", [refuted], proof=proof), _row("pass"))[0] == "unchanged"
    assert compare_results(_row("pass", proof=proof), _row("fail", [refuted], proof=proof)) == (
        "regression", ["pass -> fail", "new finding: prove coverage"])
    two = [_cost(8, 0), _cost(8, 1)]
    verdict, changes = compare_results(_row("pass", costs=two), _row("pass", costs=[_cost(8, 0), _cost(16, 1)]))
    assert (verdict, changes) == ("regression", ["bank_conflicts 0 dst sA (document 2): 2 -> 4 wavefronts per "
                                                 "instruction"])


def test_a_proof_stands_until_a_longer_time_limit_could_decide_more() -> None:
    unknown = [{"timeout": 30.0, "properties": [{"property": "coverage", "status": "UNKNOWN"}]}]
    decided = [{"timeout": 30.0, "properties": [{"property": "coverage", "status": "PROVED"}]}]
    assert run_mod.proof_current(_row("pass", proof=unknown), Options(prove=True, prove_timeout=30.0))
    assert not run_mod.proof_current(_row("pass", proof=unknown), Options(prove=True, prove_timeout=60.0))
    assert run_mod.proof_current(_row("pass", proof=decided), Options(prove=True, prove_timeout=600.0))
    assert not run_mod.proof_current(_row("pass"), Options(prove=True))


def test_compare_names_a_tree_the_database_holds() -> None:
    from threadmap.sweep.library import SweepError

    db = Path("x.db")
    assert run_mod.resolve_against("4.2.0", ["3.8.0+ab", "4.2.0"], db, False) == "4.2.0"
    assert run_mod.resolve_against("3.8.0", ["3.8.0+ab", "4.2.0"], db, False) == "3.8.0+ab"
    assert run_mod.resolve_against("4.1.0", [""], db, True) == "4.1.0"  # older rows: by their digests
    for want, held in (("9.9.9", ["", "4.2.0"]), ("3.8.0", ["3.8.0+ab", "3.8.0+cd"])):
        with pytest.raises(SweepError, match=f"--compare {want}"):
            run_mod.resolve_against(want, held, db, False)


def test_a_header_trees_identity_survives_odd_entries(tmp_path: Path) -> None:
    """Links back up the tree, broken links and FIFOs neither stop nor hang the hash (a tree
    with them hashes as the same tree without); a regular file's change changes it."""
    import os

    from threadmap.gpu import toolchain

    def tree(name: str, tensor: str = "//\n") -> Path:
        root = tmp_path / name
        (root / "cutlass").mkdir(parents=True)
        (root / "cute").mkdir()
        (root / "cute" / "tensor.hpp").write_text(tensor)
        (root / "cutlass" / "version.h").write_text("#define CUTLASS_MAJOR 9\n#define CUTLASS_MINOR 1\n"
                                                    "#define CUTLASS_PATCH 2\n")
        return root

    plain = toolchain.cutlass_identity(tree("plain"))
    assert plain.startswith("9.1.2+")
    odd = tree("odd")
    (odd / "cutlass" / "up").symlink_to(odd)
    (odd / "loop").symlink_to(odd / "loop")
    (odd / "gone").symlink_to(tmp_path / "nowhere")
    os.mkfifo(odd / "fifo")
    assert toolchain.cutlass_identity(odd) == plain
    assert toolchain.cutlass_identity(tree("edited", "// edited\n")) != plain
