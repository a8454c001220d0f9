"""The CuTe DSL's environment for these tests, set before anything imports the DSL: its
compile cache in a temporary folder (and no cache files at all), and the SM90 target the
warpgroup MMAs need (the DSL reads ``CUTE_DSL_ARCH`` once, when it is imported)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

import pytest

os.environ.setdefault("CUTE_DSL_CACHE_DIR", tempfile.mkdtemp(prefix="threadmap_cute_dsl_"))
os.environ.setdefault("CUTE_DSL_DISABLE_FILE_CACHING", "1")
os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")


@contextlib.contextmanager
def dsl_arch(arch: str = "sm_90a") -> Iterator[None]:
    """The DSL targeting ``arch`` inside the block, whatever it read when it was imported (an
    earlier test in this process may have imported it without ``CUTE_DSL_ARCH``)."""
    from unittest import mock

    from cutlass.base_dsl.dsl import BaseDSL

    envar = BaseDSL._get_dsl().envar
    if envar.arch == arch:
        yield
        return
    with mock.patch.object(envar, "arch", arch):
        yield


@pytest.fixture
def sm90() -> Iterator[None]:
    pytest.importorskip("cutlass.cute", reason="the CuTe DSL (pip install 'threadmap[dsl]') is not installed")
    with dsl_arch("sm_90a"):
        yield
