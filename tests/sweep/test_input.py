"""Bad input to ``threadmap sweep`` and its database: one line and exit 2, refused before any
work (nothing here compiles; the generator runs only where a test says so)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from threadmap.cli import main
from threadmap.sweep.library import CONV3X_FAMILY, SweepError, generate, group
from threadmap.sweep.report import check_explorer
from threadmap.sweep.run import in_slice
from threadmap.sweep.store import Result, Store


def _one_line_2(argv: list[str], says: str) -> None:
    r = CliRunner().invoke(main, ["sweep", *argv])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("threadmap: error: ") and says in lines[0], r.stderr


@pytest.mark.parametrize("argv, says", [
    (["--cuda-version", "garbage"], "--cuda-version 'garbage': give the CUDA version"),
    (["--cuda-version", "12.x"], "MAJOR.MINOR"),
    (["--kernels", ","], "give a filter"),          # no pattern: the generator would take every kernel
    (["--architectures", ""], "--architectures: give one of 80, 90a"),
    (["--architectures", ";,"], "--architectures: give one of"),
])
def test_bad_generator_arguments(argv: list[str], says: str, tmp_path: Path) -> None:
    _one_line_2([*argv, "--count", "--db", str(tmp_path / "s.db")], says)


@pytest.mark.parametrize("option", ["--db", "-o", "--explorer", "--dask", "--cuda-version"])
def test_an_empty_value_is_not_the_default(option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # -o '' was the current folder (sweep.report.json and warnings/ written there), --db '' the default database
    monkeypatch.chdir(tmp_path)
    _one_line_2(["--count", option, ""], f"{option}: empty")
    assert list(tmp_path.iterdir()) == []


def test_an_html_output_name_needs_the_html_format(tmp_path: Path) -> None:
    # with --format table -o report.html made a folder named report.html
    _one_line_2(["--count", "-o", str(tmp_path / "report.html")], "needs --format html")
    assert not (tmp_path / "report.html").exists()


def test_an_output_folder_that_cannot_be_made_fails_before_the_sweep(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    # a folder under a file; the kernel filter would fail later (no kernel): the -o check comes first
    _one_line_2(["--kernels", "no_such_kernel", "-o", str(tmp_path / "f" / "sub")], "cannot create")


@pytest.mark.parametrize("url, says", [
    ("http:///", "no host"), ("https://?q", "no host"), ("http://a\x01b/", "control characters"),
    ("http://h/#x", "#fragment"), ("example.com", "not an http:// or https:// URL"),
    ("javascript:alert(1)", "not an http"),
])
def test_bad_explorer_urls(url: str, says: str) -> None:
    with pytest.raises(SweepError, match=says):
        check_explorer(url)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/", "HTTPS://Host:1/x/?a=1&b=2", "http://h"])
def test_good_explorer_urls(url: str) -> None:
    assert check_explorer(url) == url


def _store_with_rows(path: Path, n: int) -> None:
    with Store(path) as s:
        for i in range(n):
            s.put(Result(f"d{i}", "{}", "x", "pass", spec="s" * 2000))


def test_a_row_that_is_not_json_is_a_usage_error(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _store_with_rows(db, 2)
    con = sqlite3.connect(db)
    con.execute("UPDATE results SET findings = 'not json' WHERE digest = 'd1'")
    con.commit()
    con.close()
    with Store(db) as s, pytest.raises(SweepError, match="a row of the results database cannot be read"):
        s.done()


def test_a_corrupted_database_is_a_usage_error(tmp_path: Path) -> None:
    # it opens (the header and schema pages are intact) and fails on reading its rows
    db = tmp_path / "s.db"
    _store_with_rows(db, 200)
    data = bytearray(db.read_bytes())
    assert len(data) > 16 * 4096
    data[4 * 4096:len(data) - 4096] = b"\xff" * (len(data) - 5 * 4096)
    db.write_bytes(bytes(data))
    for p in (tmp_path / "s.db-wal", tmp_path / "s.db-shm"):
        p.unlink(missing_ok=True)
    with pytest.raises(SweepError, match="--db .*results database"):
        with Store(db) as s:
            s.done()


def test_sm90_convolutions_are_counted_not_analysed() -> None:
    # the 3.x convolutions (ConvOperation3x) have no iterator algorithm: grouping them raised
    configs = group(generate(("90a",), ",".join(f"cutlass3x_sm90_tensorop_{k}" for k in ("fprop", "dgrad", "wgrad"))))
    conv3x = [c for c in configs if c.kind in ("conv2d", "conv3d")]
    assert conv3x and all(c.family == CONV3X_FAMILY and not in_slice(c) for c in conv3x)
    assert all(c.label.startswith(f"{c.kind} {CONV3X_FAMILY} ") for c in conv3x)
