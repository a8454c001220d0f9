"""Test-suite settings: hypothesis runs derandomized (the same examples every run) so CI is
reproducible; set THREADMAP_HYPOTHESIS=explore locally to search new examples."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# the brute-force oracle asserts in a helper module: show its failures as pytest shows a test's
pytest.register_assert_rewrite("tests.support.brute")

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("THREADMAP_HYPOTHESIS", "ci"))
