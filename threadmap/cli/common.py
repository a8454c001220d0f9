"""What every command of the command line shares: the usage error, the one-line error
message and its exit, the parsing of ``--sizes`` and spec paths, and the ``-o`` writer."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from threadmap.errors import SpecError, ThreadmapError
from threadmap.report.formats import printable
from threadmap.report.model import SpecErrorEntry


class UsageError(ThreadmapError):
    """Bad command-line input (exit status 2)."""


def one_line(msg: str) -> str:
    """A message with its control characters escaped (a newline in a file name stays visible)."""
    lines = [printable(x) for x in str(msg).splitlines()] or [""]
    return "\n".join(lines)


def fail(msg: str, status: int = 2) -> NoReturn:
    """``threadmap: error: MSG`` on stderr and exit with ``status``."""
    click.echo(f"threadmap: error: {one_line(msg)}", err=True)
    sys.exit(status)


def echo_errors(errors: list[Any]) -> None:
    """One ``threadmap: error:`` line per spec that could not be handled."""
    for bad in errors:
        click.echo(f"threadmap: error: {one_line(bad.message)}", err=True)


def path_text(path: str) -> str:
    """A path for a one-line message: control characters (a newline in a file name) escaped."""
    return printable(path)


def finite(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """A number option that must be finite (click's ranges let NaN through)."""
    if value != value:
        raise UsageError(f"--{param.name} {value}: give a number of seconds")
    return value


def parse_sizes(text: str | None) -> dict[str, int] | None:
    """``M=1000,N=62`` -> {"M": 1000, "N": 62}."""
    if text is None:
        return None
    out: dict[str, int] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, eq, val = part.partition("=")
        name, val = name.strip(), val.strip()
        if not eq or not name.isidentifier() or not val.isascii() or not val.isdigit() or len(val) > 19:
            raise UsageError(f"--sizes expects NAME=INTEGER pairs separated by commas, e.g. M=1000,N=62; "
                             f"got {part.strip()!r}")
        if name in out:
            raise UsageError(f"--sizes gives {name} twice")
        out[name] = int(val)
    return out


def output(path: str | None, inputs: list[Path], flag: str = "-o") -> Callable[[str], None]:
    """A writer for ``-o PATH`` (stdout when None), checked before any work is done."""
    if path is None:
        return lambda text: click.echo(text, nl=not text.endswith("\n"))
    shown = path_text(path)
    if not path.strip():
        raise UsageError(f"{flag}: the output path is empty")
    p = Path(path)
    try:
        if p.is_dir():
            raise UsageError(f"{flag} {shown}: is a directory")
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            raise UsageError(f"{flag} {shown}: directory {path_text(str(parent))} does not exist")
        target = p.resolve()
        for i in inputs:
            if i.exists() and i.resolve() == target:
                raise UsageError(f"{flag} {shown} would overwrite the input {path_text(str(i))}")
    except OSError as e:
        raise UsageError(f"{flag} {shown}: {e.strerror or e}") from None

    def write(text: str) -> None:
        try:
            with open(p, "w", encoding="utf-8", errors="backslashreplace") as f:
                f.write(text)
        except OSError as e:
            raise UsageError(f"{flag} {shown}: cannot write: {e.strerror or e}") from None
    return write


def print_rich(draw: Callable[[Any], None], write: Callable[[str], None], to_file: bool, width: int = 140) -> None:
    """Run ``draw(console)``: on the terminal, or into the ``-o`` file at a fixed width."""
    from rich.console import Console

    buf = io.StringIO()
    con = Console(highlight=False, file=buf if to_file else None, width=width if to_file else None)
    draw(con)
    if to_file:
        write(buf.getvalue())


def targets(paths: tuple[str, ...]) -> tuple[list[Path], list[SpecErrorEntry]]:
    """The spec files under ``paths``, and one invalid target per path that names none (the
    others still run); no spec file at all is a usage error."""
    from threadmap.spec.load import spec_files

    files: list[Path] = []
    missing = []
    for p in paths:
        try:
            files += spec_files([p])
        except SpecError as e:
            missing.append(SpecErrorEntry(path=p, message=str(e)))
    if not files and not missing:
        raise UsageError(f"no spec files (.yaml, .yml, .toml, .json) under {', '.join(paths)}")
    return files, missing


def require_cutlass() -> Path:
    """The CUTLASS/CuTe include folder, or a usage error (exit 2) that says how to get it:
    ``threadmap gpu`` compiles the real templates, and the extra ``cxx`` installs them."""
    from threadmap.gpu.toolchain import cutlass_include

    inc = cutlass_include()
    if inc is not None:
        return inc
    where = os.environ.get("THREADMAP_CUTLASS_INCLUDE")
    if where:
        raise UsageError(f"THREADMAP_CUTLASS_INCLUDE={path_text(where)} has no cute/ and cutlass/ folders")
    raise UsageError("no CUTLASS/CuTe headers: pip install 'threadmap[cxx]' (the nvidia-cutlass package), or set "
                     "THREADMAP_CUTLASS_INCLUDE to a folder with cute/ and cutlass/")
