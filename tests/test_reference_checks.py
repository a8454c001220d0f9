"""Where nvcc exists, a C++ reference check that cannot run fails instead of skipping."""

from __future__ import annotations

import pytest

from tests.support import cxx_oracle


def test_no_nvcc_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cxx_oracle, "nvcc", lambda: None)
    with pytest.raises(pytest.skip.Exception):
        cxx_oracle.cannot_run("headers missing")


def test_nvcc_without_headers_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cxx_oracle, "nvcc", lambda: "/usr/local/cuda/bin/nvcc")
    monkeypatch.setattr(cxx_oracle, "cutlass_include", lambda: None)
    with pytest.raises(pytest.fail.Exception, match="nvcc is installed"):
        cxx_oracle.require_oracle()
