"""The service's typed job: the spec is validated once (by the server) and the child works on
that validated spec; a job read back from the store is validated by its child."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from tests.support.service_server import ROOT
from threadmap.service.model import Limits, Options, Outcome, SpecJob, validate
from threadmap.service.runner import run

SWIZZLED = ROOT / "specs" / "cute_transpose" / "row_smem_swizzled.yaml"


def test_the_child_works_on_the_validated_spec_not_the_text() -> None:
    job = validate(SWIZZLED.read_text(), "yaml", "s.yaml", Options.of(checks="coverage"), Limits())
    assert isinstance(job, SpecJob) and job.loaded is not None
    # what crosses to the child (a fork's arguments, a Dask worker, a runner's stdin) is a pickle
    job = pickle.loads(pickle.dumps(job))
    broken = dataclasses.replace(job, text="spec: 1\nthreads: [\n")  # the text is not parsed again
    got = run(broken, on_progress=lambda _p: None)
    assert isinstance(got, Outcome) and got.error is None and got.exit_status == 0, got
    assert got.report is not None and got.report["runs"][0]["verdict"] == "pass"
    # a job read back from the store has no validated spec: its child loads the text
    stored = dataclasses.replace(broken, loaded=None)
    got = run(stored, on_progress=lambda _p: None)
    assert got.exit_status == 2 and got.report is not None and got.report["errors"], got


def test_options_round_trip_through_the_store() -> None:
    opts = Options.of("bank_conflicts,coverage", "verify", "M=64,N=48", True)
    assert Options.from_dict(opts.as_dict()) == opts
    with pytest.raises(ValueError, match="engine"):
        Options.of(engine="gpu")
