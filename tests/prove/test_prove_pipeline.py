"""``prove``'s pipeline property: TMA legality over every size (z3, with a counterexample's sizes)
and pipeline safety over every trip count the sizes give."""

from __future__ import annotations

from pathlib import Path

from threadmap.prove import prove_loaded
from threadmap.spec.load import load_spec

ROOT = Path(__file__).resolve().parents[2]
BASE = (ROOT / "specs" / "pipeline" / "sm90_tma_ws_mainloop.yaml").read_text()


def pipeline(path: Path):  # noqa: ANN201
    run = prove_loaded(load_spec(path))
    return next(p for p in run.properties if p.property == "pipeline")


def test_the_sm90_mainloop_is_proved_for_every_size_and_trip_count() -> None:
    p = pipeline(ROOT / "specs" / "pipeline" / "sm90_tma_ws_mainloop.yaml")
    assert p.status == "PROVED" and "1 .. 1024" in p.reason


def test_a_k_that_breaks_the_16_byte_stride_rule_is_a_counterexample(tmp_path: Path) -> None:
    spec = tmp_path / "k_any.yaml"
    spec.write_text(BASE.replace("K: {min: 64, max: 65536, multiple_of: 64, samples: [4096]}",
                                 "K: {min: 64, max: 65536, samples: [4096]}"))
    p = pipeline(spec)
    assert p.status == "REFUTED" and "multiple of 16 bytes" in p.reason
    assert p.sizes is not None and p.sizes["K"] * 2 % 16 != 0


def test_a_hazard_names_sizes_with_its_trip_count(tmp_path: Path) -> None:
    p = pipeline(ROOT / "specs" / "planted" / "sm90_empty_arrival_count.yaml")
    assert p.status == "REFUTED" and p.findings[0].kind == "arrival_deadlock"
    assert p.sizes is not None and -(-p.sizes["K"] // 64) >= 5
    # with K at most 4 k-tiles every stage is used once: no release is awaited
    spec = tmp_path / "short.yaml"
    spec.write_text((ROOT / "specs" / "planted" / "sm90_empty_arrival_count.yaml").read_text().replace(
        "K: {min: 64, max: 65536, multiple_of: 64, samples: [4096]}",
        "K: {min: 64, max: 256, multiple_of: 64, samples: [256]}"))
    assert pipeline(spec).status == "PROVED"
