"""Compile and run host-side C++ against the real CUTLASS/CuTe headers (the C++ oracle).

The headers come from the PyPI package ``nvidia-cutlass`` (``cutlass_library/source/include``).
A program is compiled once per batch and run on the CPU; its stdout is returned.  Binaries are
cached by the hash of their source and compile command under ``.cxx_cache/`` so a re-run of
the suite does not recompile unchanged programs; each entry is built under its lock
(``toolchain.entry_lock``), so test workers that need the same program compile it once.

**The compiler.**  ``nvcc -x c++`` compiles a host program by running the host compiler with
nvcc's own defines (``__NVCC__``, ``__CUDACC_VER_MAJOR__``, ...) and include folders; the
oracle runs that same command itself (read once from ``nvcc -dryrun``), which lets it use a
precompiled header: the common :data:`PRELUDE` (about 2.5 CPU-s of header parsing) is compiled
once into ``prelude_KEY.h.gch``, and a program that starts with it includes
``prelude_KEY.h`` instead, on its first line, with the prelude's line count kept (so a
diagnostic's line numbers are those of ``prelude + body``).  The compiler reads the text
header whenever the precompiled one is missing or does not fit, so the program is the same
either way.  Programs are built at ``-O1``: at ``-O0`` GCC emits every instantiated CuTe
template out of line (a 30 MB object for the tiled-copy batch), and code generation cost more
than the templates; the programs compute layouts and print them, and both builds print the
same.  Where ``nvcc -dryrun`` names no host compiler, ``nvcc`` compiles as before.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest

from threadmap.gpu.toolchain import cutlass_include, entry_lock, nvcc
from threadmap.layout.layout import Layout

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("THREADMAP_CXX_CACHE", ROOT / ".cxx_cache"))


def cannot_run(reason: str) -> NoReturn:
    """Skip the calling test on a machine without nvcc; where nvcc exists, a C++ reference
    check that cannot run is a failure (a missing header package must not turn CI green)."""
    if nvcc() is None:
        pytest.skip(f"nvcc not found: {reason}")
    pytest.fail(f"nvcc is installed but the C++ reference check cannot run: {reason}", pytrace=False)


def require_oracle() -> tuple[str, Path]:
    """nvcc and the CUTLASS headers, or the test skips (no nvcc) or fails (nvcc, no headers)."""
    exe = nvcc()
    if exe is None:
        cannot_run("the C++ header oracle cannot be compiled on this machine")
    inc = cutlass_include()
    if inc is None:
        cannot_run("nvidia-cutlass (CUTLASS headers) is not installed")
    assert exe is not None
    return exe, inc


PRELUDE = """
#include <cstdio>
#include <cute/tensor.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cutlass/transform/pitch_linear_thread_map.h>
using namespace cute;
"""


#: the optimisation level of every oracle program (see the module docstring)
OPT = "-O1"
_SOURCE, _BINARY = "threadmap_oracle_source.cpp", "threadmap_oracle_binary"


@functools.cache
def host_command() -> tuple[str, ...] | None:
    """The host compiler command ``nvcc -std=c++17 -O1 -w -I<headers> -x c++`` runs (read from
    ``nvcc -dryrun``: its compile line's options, with the driver of its link line, so one
    call compiles and links); the caller appends the source and ``-o``.  None when the dry
    run names no host compiler."""
    exe, inc = require_oracle()
    proc = subprocess.run([exe, "-dryrun", "-std=c++17", OPT, "-w", f"-I{inc}", "-x", "c++", _SOURCE, "-o",
                           _BINARY], capture_output=True, text=True, timeout=120)
    cmds = [shlex.split(ln[3:]) for ln in (proc.stderr + proc.stdout).splitlines() if ln.startswith("#$ ")]
    compile_ = next((c for c in cmds if _SOURCE in c), None)
    link = next((c for c in reversed(cmds) if _BINARY in c and c and c[0] != exe), None)
    if proc.returncode != 0 or compile_ is None or link is None or "-c" not in compile_:
        return None
    out: list[str] = [link[0]]
    skip = False
    for tok in compile_[1:]:
        if skip:
            skip = False
        elif tok == "-o":
            skip = True
        elif tok not in ("-c", _SOURCE):
            out.append(tok)
    return tuple(out)


def _pch_include(cmd: tuple[str, ...]) -> str:
    """:data:`PRELUDE`'s replacement: ``#include "prelude_KEY.h"`` padded to its line count,
    with ``prelude_KEY.h`` (the prelude) and its precompiled ``.gch`` built in the cache once,
    under the entry's lock (where that build fails, the compiler reads the text header)."""
    key = hashlib.sha256("\0".join([PRELUDE, *cmd]).encode()).hexdigest()[:20]
    header = CACHE / f"prelude_{key}.h"
    gch = CACHE / f"prelude_{key}.h.gch"
    if not gch.exists():
        with entry_lock(header):
            if not gch.exists():
                header.write_text(PRELUDE)
                tmp = CACHE / f"prelude_{key}.h.gch.tmp{os.getpid()}"
                proc = subprocess.run([*cmd, "-c", "-x", "c++-header", str(header), "-o", str(tmp)],
                                      capture_output=True, text=True, timeout=600)
                if proc.returncode == 0:
                    tmp.replace(gch)
                else:
                    tmp.unlink(missing_ok=True)
    return f'#include "{header.name}"' + "\n" * PRELUDE.count("\n")


def _compiled_source(prelude: str, body: str) -> tuple[str, tuple[str, ...] | None]:
    """The text compiled for ``prelude + "\\n" + body`` (its lines numbered as there: a
    prelude that starts with :data:`PRELUDE` starts with its precompiled header instead) and
    the host command; the text itself and None where nvcc compiles it."""
    cmd = host_command()
    if cmd is None:
        return prelude + "\n" + body, None
    if prelude.startswith(PRELUDE):
        prelude = _pch_include(cmd) + prelude[len(PRELUDE):]
    return prelude + "\n" + body, cmd


def run_cxx(body: str, *, prelude: str = PRELUDE, timeout: int = 600) -> str:
    """Compile ``prelude + body`` (which must define ``main``) and return its stdout."""
    exe, inc = require_oracle()
    CACHE.mkdir(parents=True, exist_ok=True)
    src, cmd = _compiled_source(prelude, body)
    key = hashlib.sha256((prelude + "\n" + body + str(inc) + "\0".join(cmd or (exe, "-O0"))).encode()
                         ).hexdigest()[:20]
    binary = CACHE / f"prog_{key}"
    if not binary.exists():
        # one compile per program even when test workers ask for it at once
        with entry_lock(binary):
            if not binary.exists():
                cu = CACHE / f"prog_{key}.cu"
                cu.write_text(src)
                tmp = CACHE / f"prog_{key}.tmp{os.getpid()}"
                argv = [*cmd, str(cu), "-o", str(tmp)] if cmd else \
                    [exe, "-std=c++17", "-O0", "-w", f"-I{inc}", "-x", "c++", str(cu), "-o", str(tmp)]
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
                if proc.returncode != 0:
                    raise RuntimeError(f"{argv[0]} failed on {cu}:\n{proc.stderr[-6000:]}")
                tmp.replace(binary)
    out = subprocess.run([str(binary)], capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{binary} exited {out.returncode}: {out.stderr[-2000:]}")
    return out.stdout


# --------------------------------------------------------------------------- batches
def _function_program(stmts: dict[str, str]) -> tuple[str, dict[int, str]]:
    """One function per case (so a diagnostic's line number names its case) and a main
    calling them all; each case prints ``ID<TAB>output``."""
    lines: list[str] = []
    line_of: dict[int, str] = {}
    for cid, stmt in stmts.items():
        line_of[len(lines)] = cid
        lines.append(f'static void {cid}() {{ printf("{cid}\\t"); {stmt} printf("\\n"); }}')
    lines.append("int main() {")
    lines += [f"  {cid}();" for cid in stmts]
    lines.append("  return 0;\n}")
    return "\n".join(lines) + "\n", line_of


def _lines_with_errors(stderr: str, filename: str) -> set[int]:
    """1-based lines of ``filename`` that a diagnostic (error or its instantiation trace)
    points at, ignoring the ``#include`` lines of the prelude."""
    hits: set[int] = set()
    pat = re.compile(re.escape(filename) + r"[:(](\d+)")
    for line in stderr.splitlines():
        if line.lstrip().startswith("In file included from") or " from " in line[:12]:
            continue
        for m in pat.finditer(line):
            hits.add(int(m.group(1)))
    return hits


def run_print_batch(stmts: dict[str, str], *, prelude: str = PRELUDE) -> dict[str, str]:
    """Compile and run one program printing every case; returns the output by case id.
    A compile failure raises with the ids of the cases whose lines the errors point at."""
    src, line_of = _function_program(stmts)
    try:
        out = run_cxx(src, prelude=prelude)
    except RuntimeError as e:
        first = (prelude + "\n").count("\n") + 1
        m = re.search(r"(prog_[0-9a-f]+\.cu)", str(e))
        bad = sorted(line_of[ln - first] for ln in _lines_with_errors(str(e), m.group(1) if m else "")
                     if ln - first in line_of)
        raise RuntimeError(f"cases that do not compile: {bad}\n{str(e)[-3000:]}") from None
    res: dict[str, str] = {}
    for line in out.splitlines():
        if "\t" in line:
            k, v = line.split("\t", 1)
            res[k] = v.strip()
    return res


def _syntax_log(stmts: dict[str, str], prelude: str) -> tuple[str, str, dict[int, str], int]:
    """One ``-fsyntax-only`` translation unit of the cases (each in its own function): the
    compiler's diagnostics (cached by source hash), the file's name, its case lines and the
    line of its first case."""
    exe, inc = require_oracle()
    body, line_of = _function_program(stmts)
    CACHE.mkdir(parents=True, exist_ok=True)
    src, cmd = _compiled_source(prelude, body)
    key = hashlib.sha256((prelude + "\n" + body + str(inc) + "syntax" + "\0".join(cmd or ())).encode()
                         ).hexdigest()[:20]
    log = CACHE / f"rej_{key}.log"
    name = f"rej_{key}.cu"
    with entry_lock(log):
        if log.exists():
            text = log.read_text()
        else:
            cu = CACHE / name
            cu.write_text(src)
            argv = [*cmd, "-fsyntax-only", str(cu)] if cmd else \
                [exe, "-std=c++17", "-w", f"-I{inc}", "-x", "c++", "-Xcompiler", "-fsyntax-only",
                 "-c", str(cu), "-o", str(CACHE / f"rej_{key}.o")]
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
            text = proc.stderr if proc.returncode else ""
            tmp = CACHE / f"rej_{key}.tmp{os.getpid()}"
            tmp.write_text(text)
            tmp.replace(log)  # whole or absent: a reader never sees half a log
    return text, name, line_of, (prelude + "\n").count("\n") + 1


def _syntax_errors(stmts: dict[str, str], prelude: str) -> set[str]:
    """One ``-fsyntax-only`` translation unit; the ids whose lines a diagnostic names."""
    text, name, line_of, first = _syntax_log(stmts, prelude)
    return {line_of[ln - first] for ln in _lines_with_errors(text, name) if ln - first in line_of}


def failing_static_checks(stmts: dict[str, str], *, prelude: str = PRELUDE, marker: str) -> set[str]:
    """The ids of the cases that do not compile: one of their own ``static_assert(..., marker)``
    fails, or the header rejects them.

    The cases go into one ``-fsyntax-only`` translation unit, each in its own function, so
    each case's own static_asserts are reported.  A failing template instantiation of the
    header is reported only once per unit, so while a round shows an error that is not the
    marker's, the cases it did not flag are compiled again (as :func:`rejected_by_header`
    does).  Cached by source hash."""
    hit: set[str] = set()
    todo = dict(stmts)
    while todo:
        text, name, line_of, first = _syntax_log(todo, prelude)
        found = {line_of[ln - first] for ln in _lines_with_errors(text, name) if ln - first in line_of}
        hit |= found
        foreign = any("error" in ln and marker not in ln for ln in text.splitlines() if " error: " in ln)
        if not found or not foreign:
            break
        todo = {k: v for k, v in todo.items() if k not in found}
    return hit


def rejected_by_header(stmts: dict[str, str], *, prelude: str = PRELUDE) -> set[str]:
    """The ids of the cases that fail to compile against the header.

    The cases go into ONE ``-fsyntax-only`` translation unit (templates are still
    instantiated, so every static_assert fires), each case in its own function; a case is
    rejected when a diagnostic points at its line.  A compiler reports a failing template
    instantiation only once, so a case that instantiates the same failing template as an
    earlier one is left unconfirmed: the unconfirmed cases are compiled again, in rounds,
    until a round confirms none (each round confirms at least one case per distinct failing
    template).  Everything is cached by source hash."""
    hit: set[str] = set()
    todo = dict(stmts)
    while todo:
        found = _syntax_errors(todo, prelude)
        if not found:
            break
        hit |= found
        todo = {k: v for k, v in todo.items() if k not in found}
    return hit


# --------------------------------------------------------------------------- C++ spellings
def cxx_static(t: object) -> str:
    """An int tuple as static C++ (``make_shape(Int<8>{}, ...)``)."""
    if isinstance(t, tuple):
        return "make_shape(" + ", ".join(cxx_static(x) for x in t) + ")"
    return f"Int<{t}>{{}}"


def cxx_static_layout(lay: Layout) -> str:
    """A layout with static shape and stride as a C++ ``make_layout`` expression."""
    return f"make_layout({cxx_static(lay.shape)}, {cxx_static(lay.stride)})"
