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
from threadmap.sweep.store import Store


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
    # five configurations are extracted (the interleaved one is refused without compiling); the
    # universal and the grouped kernel of one tile have the same mainloop, so the same spec,
    # verified once
    assert counted == {"extracted": 5, "verified": 4} and first.shared_verifications == 1
    assert first.reused == 0 and len(rows(whole)) == 6
    # the same sweep again: everything from the store, nothing extracted or verified
    again = sweep(Options(kernels=KERNELS, db=whole))
    assert counted == {"extracted": 5, "verified": 4} and again.reused == 6
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
    # the four others are done, the two finished ones never (the interleaved one, refused first,
    # is one of those two)
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


def test_the_command_reports_counts_and_json(tmp_path: Path, extracted: dict[str, Extracted]) -> None:
    db, out = tmp_path / "s.db", tmp_path / "out"
    r = CliRunner().invoke(main, ["sweep", "--kernels", KERNELS, "--db", str(db), "--jobs", "1", "--format", "json",
                                  "-o", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    (gemm,) = data["kinds"]
    assert (gemm["kind"], gemm["kernels"], gemm["configurations"], gemm["analysed"], gemm["kernels_analysed"]) == \
        ("gemm", 7, 6, 5, 6)
    assert [(x["reason"], x["configurations"]) for x in data["reasons"]] == \
        [("global layout neither row- nor column-major", 1)]
    assert json.loads((out / "sweep.json").read_text()) == data
    # the narrow-alignment configuration's extra sectors are a cost, with its spec to reproduce it
    warned = {w["check"] for w in data["warnings"]}
    assert "coalescing" in warned
    for w in data["warnings"]:
        for name in w["specs"]:
            assert (out / "warnings" / name).exists()
    # the table names the reason and the totals
    r = CliRunner().invoke(main, ["sweep", "--kernels", KERNELS, "--db", str(db), "--jobs", "1"])
    assert r.exit_code == 0 and "6 configurations stand for 7 kernels; 5 analysed (6 kernels)" in r.stdout


def test_a_finding_is_reported_with_its_spec_and_exit_1(tmp_path: Path, extracted: dict[str, Extracted],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The plumbing of a finding (none of the filter's kernels has one): a verification that
    fails a check puts the configuration in the findings table, writes its spec to -o DIR,
    and the command exits 1."""
    verify_text = run_mod.verify_text

    def failing(text: str, name: str) -> Any:
        status, findings, warnings, secs, err = verify_text(text, name)
        if "simt" in name:
            return "fail", [{"check": "predicates", "stage": 0, "side": "src", "sizes": {"M": 1},
                             "message": "planted"}], warnings, secs, err
        return status, findings, warnings, secs, err

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
