"""The compile cache: one build per entry across processes (a lock), a damaged entry rebuilt.

The lock test runs a stand-in nvcc (a script that logs its call, sleeps, and writes its
output), so it needs neither the CUDA toolkit nor the headers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cxx_oracle import cannot_run
from threadmap.gpu.toolchain import ToolchainError, build_host, require, run_cached

ROOT = Path(__file__).resolve().parents[2]

FAKE_NVCC = """#!/bin/sh
# a stand-in nvcc: log the call, take a while, write the output named by -o
echo "$$" >> "{log}"
out=""
while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done
sleep 2
echo built > "$out"
"""

WORKER = """
import sys, time
from pathlib import Path
go = Path(sys.argv[1])
Path(sys.argv[2]).write_text("ready")
while not go.exists():
    time.sleep(0.01)
from threadmap.gpu.toolchain import build_host
print(build_host("int main() { return 0; }"))
"""


def test_concurrent_builds_of_one_entry_compile_once(tmp_path: Path) -> None:
    """Two processes ask for the same program at the same moment: one compiles, the other
    waits for it and gets the same cached output."""
    bin_dir, inc, cache = tmp_path / "bin", tmp_path / "include", tmp_path / "cache"
    bin_dir.mkdir()
    (inc / "cute").mkdir(parents=True)
    (inc / "cute" / "tensor.hpp").write_text("")
    log = tmp_path / "nvcc.log"
    nvcc = bin_dir / "nvcc"
    nvcc.write_text(FAKE_NVCC.format(log=log))
    nvcc.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "THREADMAP_CUTLASS_INCLUDE": str(inc), "THREADMAP_CACHE": str(cache),
           "PYTHONPATH": str(ROOT) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")}
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(go), str(tmp_path / f"ready{i}")], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    while not all((tmp_path / f"ready{i}").exists() for i in range(2)):
        time.sleep(0.01)
    go.write_text("go")
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    paths = {o.strip() for o, _ in outs}
    assert len(paths) == 1 and Path(paths.pop()).read_text() == "built\n"
    assert len(log.read_text().split()) == 1  # one compile


def test_a_damaged_cached_binary_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        require()
    except ToolchainError as e:
        cannot_run(str(e))
    monkeypatch.setenv("THREADMAP_CACHE", str(tmp_path))
    src = '#include <cstdio>\nint main(int argc, char** argv) { std::printf("%d", argc); return 0; }\n'
    binary = build_host(src)
    assert run_cached(lambda: build_host(src), ["a", "b"]).stdout == "3"
    binary.write_bytes(b"not a program")  # a damaged cached binary is rebuilt, not trusted
    proc = run_cached(lambda: build_host(src), ["a"])
    assert proc.returncode == 0 and proc.stdout == "2" and binary.read_bytes() != b"not a program"


def test_an_empty_cache_variable_is_the_default_not_the_current_directory(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``THREADMAP_CACHE=`` (set, empty) put every compile and disassembly into the current
    directory; it means the default, as unset does."""
    from threadmap.gpu.toolchain import cache_dir

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("THREADMAP_CACHE", "")
    assert cache_dir() == tmp_path / "home" / ".cache" / "threadmap"
    monkeypatch.delenv("THREADMAP_CACHE")
    assert cache_dir() == tmp_path / "home" / ".cache" / "threadmap"
    monkeypatch.setenv("THREADMAP_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" and (tmp_path / "c").is_dir()
