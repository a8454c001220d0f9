"""``expect: sectors_per_request: R`` under ``threadmap prove``: PROVED through the sufficient
per-instruction bound (every warp instruction's sectors <= R x its ideal sectors), REFUTED
only by the simulator's whole-grid ratio above R at the witness sizes, else UNKNOWN naming
the instruction, block and sizes where the per-instruction bound fails.

The specs are the library's ranged PitchLinearStripminedThreadMap (f32, 4 per access, whole-
vector predicate, ``N % 4 == 0``) with a ratio added.  Rows start 16-byte aligned only, so a
full row of 256 bytes may straddle 9 sectors for 8 ideal: the ratio 1.0 is broken for some N
(REFUTED), 1.125 holds for full rows but not for every partial edge row (UNKNOWN), and 2.0
holds for every instruction: an aligned 16-byte vector lies in one sector, so n distinct
active vectors touch at most n sectors for ceil(16 n / 32) ideal, at most 2x."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import numpy as np

import threadmap.api as api
from threadmap.model import build_model
from threadmap.model.kernel import CopyModel
from threadmap.prove import prove_loaded
from threadmap.simulate.engine import Simulator
from threadmap.spec.load import loads_spec
from threadmap.verify.coalescing import instruction_stats

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "specs" / "ranges" / "stripmined_64x64_128t_v4.yaml"


def _with_ratio(ratio: str):  # type: ignore[no-untyped-def]
    text = BASE.read_text().replace("  failing_checks: []", f"  sectors_per_request: {ratio}\n  failing_checks: []")
    assert f"sectors_per_request: {ratio}" in text
    return loads_spec(text, "yaml", BASE)


def _coalescing(ratio: str):  # type: ignore[no-untyped-def]
    loaded = _with_ratio(ratio)
    run = prove_loaded(loaded, 300)
    return loaded, next(p for p in run.properties if p.property == "coalescing")


def _grid_ratio(loaded, sizes: dict[str, int]) -> float:  # type: ignore[no-untyped-def]
    runs = api.verify_spec(loaded, sizes=sizes)
    return next(r.summary.ratio for run in runs for r in run.results if r.check == "coalescing")  # type: ignore[union-attr]


def test_ratio_true_for_every_instruction_is_proved_and_agrees_with_verify() -> None:
    loaded, co = _coalescing("2.0")
    assert co.status == "PROVED", co.reason
    assert "every instruction's sectors <= 2 x its ideal" in co.reason
    for sizes in ({"M": 9, "N": 132}, {"M": 17, "N": 284}, {"M": 64, "N": 68}, {"M": 100, "N": 1000},
                  {"M": 3, "N": 4}):
        assert _grid_ratio(loaded, sizes) <= 2.0, sizes


def test_ratio_broken_over_the_grid_is_refuted_at_replayed_sizes() -> None:
    loaded, co = _coalescing("1.0")
    assert co.status == "REFUTED", co.reason
    # refuted by the ratio's own witness (not only at a class representative): the instruction
    # over the per-instruction bound, then the whole grid measured at its sizes
    assert "the whole-grid sector ratio of stage 0 src is" in co.reason and "sectors for" in co.reason
    assert co.sizes is not None and co.sizes["N"] % 64 != 0
    # the oracle: verify's whole-grid ratio at the witness sizes exceeds 1.0
    assert _grid_ratio(loaded, co.sizes) > 1.0
    assert any(f.kind == "uncoalesced" and f.severity == "error" for f in co.findings)


def test_unknown_names_the_instruction_and_sizes_and_both_replay() -> None:
    loaded, co = _coalescing("1.125")
    assert co.status == "UNKNOWN", co.reason
    m = re.search(r"the instruction of stage (\d+) (src|dst), warp (\d+) step (\d+), block \((\d+), (\d+), (\d+)\) "
                  r"at M=(\d+), N=(\d+) touches (\d+) sectors for (\d+) ideal", co.reason)
    assert m, co.reason
    stage, side = int(m[1]), m[2]
    warp, step = int(m[3]), int(m[4])
    block = (int(m[5]), int(m[6]), int(m[7]))
    sizes = {"M": int(m[8]), "N": int(m[9])}
    # the named instruction, replayed by the simulator, breaks the per-instruction bound ...
    model = build_model(loaded, {**loaded.envs[0], **sizes})
    gx, gy, _ = model.grid
    cp = model.stages[stage]
    assert isinstance(cp, CopyModel)
    src, dst = Simulator(model).stage_tables(cp, np.array([block[0] + gx * (block[1] + gy * block[2])]))
    st = instruction_stats(src if side == "src" else dst)
    i = warp * (src if side == "src" else dst).steps + step
    assert (int(st["sectors"][i]), int(st["ideal"][i])) == (int(m[10]), int(m[11]))
    assert st["sectors"][i] > Fraction("1.125") * st["ideal"][i]
    # ... while the whole-grid ratio there holds (so it is no counterexample: UNKNOWN, not REFUTED)
    assert _grid_ratio(loaded, sizes) <= 1.125
    assert "may still hold" in co.reason


LIBRARY = sorted(f for f in (ROOT / "specs").rglob("*.yaml")
                 if re.search(r"^\s*sectors_per_request:", f.read_text(), re.M))


def test_library_has_ratio_specs() -> None:
    assert len(LIBRARY) >= 15


# Each library spec's coalescing proof (its ratio included) against verify, and each PROVED
# ratio against verify's whole-grid measurement: tests/prove/test_prove.py::
# test_library_at_fixed_sizes_agrees_with_verify (one proof per spec for both).
