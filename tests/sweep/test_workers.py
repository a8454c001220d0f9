"""Where the sweep's tasks run and what survives a kill: a Dask LocalCluster gives the store
the same rows as the local pool; a sweep process killed with SIGKILL mid-run resumes to the
same rows without redoing a finished configuration; a bad ``--dask`` is one line, exit 2."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import threadmap.sweep.workers as workers_mod
from tests.sweep.conftest import KERNELS
from threadmap.cli import main
from threadmap.sweep.extract import Extracted
from threadmap.sweep.run import Options, SweepReport, sweep

ROOT = Path(__file__).resolve().parents[2]


def rows(db: Path, written: bool = False) -> dict[str, tuple[Any, ...]]:
    """Every result row: digest -> (status, reason, findings, warnings, spec, spec hash,
    kernels), and its write time with ``written`` (the CPU seconds of a verification differ
    from run to run, so they are not compared)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        cols = ("digest, extractor, key, label, status, reason_kind, reason, findings, warnings, spec, spec_hash, "
                "kernels")
        return {r[0]: r[1:] for r in con.execute(f"SELECT {cols}{', written' if written else ''} FROM results")}
    finally:
        con.close()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, extracted: dict[str, Extracted]) -> tuple[Path, SweepReport]:
    """An uninterrupted sweep of KERNELS through the local pool (2 processes)."""
    db = tmp_path_factory.mktemp("ref") / "pool.db"
    return db, sweep(Options(kernels=KERNELS, db=db, jobs=2))


def test_a_dask_local_cluster_stores_the_same_rows_as_the_local_pool(
        tmp_path: Path, reference: tuple[Path, SweepReport]) -> None:
    ref_db, ref = reference
    db = tmp_path / "dask.db"
    got = sweep(Options(kernels=KERNELS, db=db, dask="local:2"))
    assert rows(db) == rows(ref_db) and len(rows(db)) == 6
    assert got.configurations == ref.configurations
    assert (got.extracted, got.verified, got.shared_verifications) == \
        (ref.extracted, ref.verified, ref.shared_verifications) == (6, 5, 1)


def test_a_sweep_killed_mid_run_resumes_without_redoing_a_finished_configuration(
        tmp_path: Path, reference: tuple[Path, SweepReport]) -> None:
    ref_db, _ = reference
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}

    def command(db: Path) -> list[str]:
        # one configuration per batch, one process: rows are written one verification apart
        return [sys.executable, "-m", "threadmap", "sweep", "--kernels", KERNELS, "--db", str(db), "--batch", "1",
                "--jobs", "1", "--format", "json"]

    def analysed(db: Path) -> int:
        if not db.exists():
            return 0
        try:
            return len([r for r in rows(db).values() if r[3] in ("pass", "fail")])
        except sqlite3.Error:  # the schema not yet written
            return 0

    # killed at the first verified configuration, three or more verifications before its end;
    # should the whole sweep finish before the signal lands (the poller starved), try again
    for attempt in range(3):
        db = tmp_path / f"killed{attempt}.db"
        proc = subprocess.Popen(command(db), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            while proc.poll() is None and analysed(db) == 0:
                time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait()
        assert proc.returncode in (-signal.SIGKILL, 0), proc.stderr.read().decode() if proc.stderr else ""
        before = rows(db, written=True)
        if proc.returncode == -signal.SIGKILL and len(before) < len(rows(ref_db)):
            break
    else:
        pytest.fail("the sweep finished before it could be killed, three times")
    assert analysed(db) >= 1

    done = subprocess.run(command(db), env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # what the store held is read back, only the others are extracted, and no finished row is
    # written again (its write time is the first run's)
    assert report["reused"] == len(before)
    assert report["extracted"] == len(rows(ref_db)) - len(before)
    after = rows(db, written=True)
    assert {d: after[d] for d in before} == before
    assert rows(db) == rows(ref_db)


def test_a_killed_sweep_leaves_no_pool_process_behind(tmp_path: Path, extracted: dict[str, Extracted]) -> None:
    """Its pool's processes end with the driver (they would otherwise wait forever on their
    task queue)."""
    psutil = pytest.importorskip("psutil")
    db = tmp_path / "s.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, "-m", "threadmap", "sweep", "--kernels", KERNELS, "--db", str(db),
                             "--batch", "1", "--jobs", "2"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        me = psutil.Process(proc.pid)
        while proc.poll() is None and not me.children():
            time.sleep(0.005)
        pool = me.children()
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert pool, "the sweep ended before its pool started"
    gone, alive = psutil.wait_procs(pool, timeout=60)
    assert not alive, [p.pid for p in alive]


def test_a_bad_dask_address_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers_mod, "DASK_TIMEOUT", 1.0)
    # a port with a socket bound and not listening: the connection is refused until the timeout
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"tcp://127.0.0.1:{s.getsockname()[1]}"
        for address, says in (("nonsense", "not a scheduler address"), ("xyz://a:1", "unknown address scheme"),
                              ("local:0", "local:N needs N"), (closed, "no Dask scheduler reached")):
            r = CliRunner().invoke(main, ["sweep", "--kernels", KERNELS.split(",")[0], "--db", str(tmp_path / "s.db"),
                                          "--dask", address])
            assert r.exit_code == 2, r.output
            assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    # without the distributed package: the extra to install
    monkeypatch.setitem(sys.modules, "distributed", None)
    r = CliRunner().invoke(main, ["sweep", "--kernels", KERNELS.split(",")[0], "--db", str(tmp_path / "s.db"),
                                  "--dask", "local:1"])
    assert r.exit_code == 2 and "threadmap[service]" in r.stderr, r.output
