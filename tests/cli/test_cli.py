"""The command line: results, JSON, and exit status 2 with one clear line for bad input."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from threadmap.cli import main
from threadmap.cutlass import PitchLinearStripminedThreadMap
from threadmap.layout import complement, logical_divide, parse


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_complement_example_from_the_issue() -> None:
    code, out, _ = run("layout", "(2,2):(1,6)", "complement", "24")
    assert code == 0 and out.strip() == str(complement(parse("(2,2):(1,6)"), 24)) == "(3,2):(2,12)"


def test_chained_operations_and_json() -> None:
    code, out, _ = run("layout", "(4,8):(8,1)", "logical_divide", "(2,4)", "--json")
    assert code == 0
    data = json.loads(out)
    ours = logical_divide(parse("(4,8):(8,1)"), (2, 4))
    assert data["result"] == str(ours) and data["size"] == 32 and data["ops"] == ["logical_divide"]
    code, out, _ = run("layout", "(4,8):(8,1)", "coalesce", "size")
    assert code == 0 and out.strip() == "32"


def test_static_printing() -> None:
    code, out, _ = run("layout", "(4,8):(8,1)", "--static")
    assert out.strip() == "(_4,_8):(_8,_1)"


def test_show_draws_the_grid() -> None:
    code, out, _ = run("layout", "(4,8):(8,1)", "show")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "(4,8):(8,1)"
    assert lines[3].split("|")[1:-1] == [f" {v:>2} " for v in range(8)]


@pytest.mark.parametrize("argv, needle", [
    (["layout", "(4,8):(8,1"], "expected )"),
    (["layout", "(0,8)"], "not positive"),
    (["layout", "(4,8):(1,(2,3))"], "not congruent"),
    (["layout", "(4,8):(8,1)", "frobnicate"], "unknown operation"),
    (["layout", "(4,8):(8,1)", "logical_divide"], "needs an argument"),
    (["layout", "Sw<3,4,2> o (8,8):(8,1)"], "SShift"),
    (["layout", "(2,2,2):(1,2,4)", "show"], "rank-2"),
    (["threadmap", "PitchLinearStripminedThreadMap", "64x64", "128", "5"], "ElementsPerAccess"),
    (["threadmap", "NoSuchMap"], "unknown thread map"),
])
def test_bad_input_exits_2_with_one_line(argv: list[str], needle: str) -> None:
    code, out, err = run(*argv)
    assert code == 2
    assert needle in err and "Traceback" not in err + out
    assert len(err.strip().splitlines()) == 1


def test_threadmap_thread_50() -> None:
    code, out, _ = run("threadmap", "PitchLinearStripminedThreadMap", "64x64", "128", "4",
                       "--thread", "50", "--json")
    data = json.loads(out)
    tm = PitchLinearStripminedThreadMap((64, 64), 128, 4)
    assert code == 0 and data["initial_offset"] == list(tm.initial_offset(50)) == [8, 3]
    rows = sorted({s for _, s in data["accesses"]})
    assert rows == [3 + 8 * k for k in range(8)]


def test_examples_run() -> None:
    code, out, err = run("examples")
    assert code == 0, err
    assert "(3,2):(2,12)" in out and "12:1" in out
