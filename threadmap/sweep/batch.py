"""Batched host programs of the sweep's extractors: one translation unit prints many
configurations, each configuration's printed fields are kept in the compile cache by its own
key (a resumed sweep batches otherwise), and a unit that does not compile is split until the
configurations that fail are alone, each with the compiler's first error.

The 2.x extractor (:mod:`~threadmap.sweep.extract`) and the 3.x one
(:mod:`~threadmap.sweep.extract_sm90`) differ only in their programs, their output and what
they parse it into: a :class:`BatchProgram` names those.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from threadmap.gpu import toolchain
from threadmap.sweep.library import Configuration

#: what an extractor parses a configuration's fields into (its failures included)
E = TypeVar("E")



@functools.cache
def _own_headers() -> str:
    return "".join(h.read_text() for h in sorted(toolchain.include_dir().glob("*.h")))


def output_context() -> str:
    """What every configuration's printed fields depend on besides its kernel and program (a
    part of each output cache key): the CUTLASS header tree's identity (a sweep may switch
    trees, ``--cutlass-include``) and threadmap's own headers."""
    inc = toolchain.cutlass_include()
    return (toolchain.cutlass_identity(inc) if inc is not None else "?") + "\0" + _own_headers()

@dataclass(frozen=True)
class BatchProgram(Generic[E]):
    """An extractor's program: the cache files' prefix, a configuration's cache key, the
    source of a batch, how its output splits into fields per configuration, how fields parse,
    the failure of a configuration (``failed(error, kind)``), and the build's flags."""

    prefix: str
    key: Callable[[Configuration], str]
    source: Callable[[Sequence[Configuration]], str]
    split: Callable[[str, int], list[dict[str, str]]]
    parse: Callable[[dict[str, str]], E]
    failed: Callable[[str, str], E]
    opt: str
    archs: tuple[str, ...]

    def cached(self, key: str) -> dict[str, str] | None:
        try:
            return dict(json.loads(gzip.decompress((toolchain.cache_dir() / f"{self.prefix}_{key}.json.gz")
                                                   .read_bytes())))
        except (OSError, ValueError, EOFError):
            return None

    def keep(self, key: str, fields: dict[str, str]) -> None:
        # compressed: a tile's offset table is most of it (16K numbers for a 256x64 tile)
        path = toolchain.cache_dir() / f"{self.prefix}_{key}.json.gz"
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        tmp.write_bytes(gzip.compress(json.dumps(fields).encode(), 6))
        tmp.replace(path)  # whole or absent: a reader never sees half a file


def compile_error(e: Exception) -> str:
    """The first compiler error of a failed build, on one line."""
    text = str(e)
    for line in text.splitlines():
        if "error" in line:
            return re.sub(r"\s+", " ", line.split("error", 1)[1]).strip(" :")[:300]
    return re.sub(r"\s+", " ", text)[-300:]


def run_batch(prog: BatchProgram[E], configs: Sequence[Configuration]) -> list[E]:
    """Each configuration's fields parsed, from the compile cache where any batch printed them
    before, the others compiled and run as one program.  The result for a configuration
    does not depend on the batch it is in (the cache key is the configuration's own)."""
    keys = [prog.key(c) for c in configs]
    out: list[E | None] = [None] * len(configs)
    todo: list[int] = []
    for i, k in enumerate(keys):
        f = prog.cached(k)
        if f is None:
            todo.append(i)
        else:
            out[i] = prog.parse(f)
    printed: list[dict[str, str] | E] = _compile_and_run(prog, [configs[i] for i in todo])
    for i, got in zip(todo, printed, strict=True):
        if isinstance(got, dict):
            prog.keep(keys[i], got)
            out[i] = prog.parse(got)
        else:  # it does not compile, or the program failed
            out[i] = got
    return [e if e is not None else prog.failed("not extracted", "extraction output incomplete") for e in out]


def _compile_and_run(prog: BatchProgram[E], configs: Sequence[Configuration]) -> list[dict[str, str] | E]:
    """One program for the configurations: the fields each printed, or why it has none."""
    if not configs:
        return []
    source = prog.source(configs)

    def build() -> Any:
        return toolchain.build_host(source, opt=prog.opt, archs=prog.archs)

    try:
        build()
    except toolchain.ToolchainError as e:
        if len(configs) == 1:
            return [prog.failed(compile_error(e), "does not compile")]
        half = len(configs) // 2
        return _compile_and_run(prog, configs[:half]) + _compile_and_run(prog, configs[half:])
    proc = toolchain.run_cached(build, [])
    if proc.returncode != 0:
        why = f"the extraction program exited {proc.returncode}: {proc.stderr.strip()[-300:]}"
        return [prog.failed(why, "extraction program failed") for _ in configs]
    return list(prog.split(proc.stdout, len(configs)))
