"""Load and validate spec files (YAML, TOML, JSON) with errors located at ``FILE:LINE:COL``.

:func:`load_spec` reads a file, parses it while recording where every value sits, validates
it against the pydantic models of :mod:`threadmap.spec.schema`, then checks what the models
cannot (names, references, thread counts, ranks, sizes; see :func:`check_semantics`).  Every
problem is a :class:`threadmap.errors.SpecError` whose message has one line per problem::

    specs/t.yaml:12:15: stages[0].copy.src.threads: thread layout has 128 threads, but threads = 256

Where positions come from (one reader per format, each bounded in time and memory; see
:mod:`threadmap.spec.yaml_reader`, :mod:`~threadmap.spec.json_reader`,
:mod:`~threadmap.spec.toml_reader`):

* YAML: the node tree of the safe loader gives the mark of every key and value; alias and
  merge expansion is bounded, duplicate keys are errors.
* JSON: a position-recording strict reader (no NaN/Infinity, no duplicate keys).
* TOML: ``tomllib`` parses; one scanning pass over the text records where every key path and
  array item is (a ``key = value`` entry is located at its key).

Every integer must fit in 64 bits and every string be printable text; otherwise the reader
reports the literal's position.

For "field missing" errors the position is the mapping that lacks the field; for unknown
fields it is the unknown key; otherwise it is the offending value.
"""


from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from threadmap.errors import SpecError
from threadmap.spec.expr import evaluate
from threadmap.spec.json_reader import load_json
from threadmap.spec.located import Errors, Mark, Path_, clean, fail, fmt_path
from threadmap.spec.parsed import ParsedSpec, bind_layout
from threadmap.spec.pydantic_errors import report_validation_errors
from threadmap.spec.schema import Spec
from threadmap.spec.semantics import check_semantics, default_samples, sample_envs
from threadmap.spec.toml_reader import load_toml
from threadmap.spec.yaml_reader import load_yaml

__all__ = ["LoadedSpec", "default_samples", "iter_spec_files", "load_spec", "loads_spec", "sample_envs",
           "with_sizes",
           "SPEC_SUFFIXES", "MAX_FILE_BYTES"]

Format = Literal["yaml", "toml", "json"]

MAX_FILE_BYTES = 1 << 20      # 1 MiB of spec text
SPEC_SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json"}


# ----------------------------------------------------------------------------- the loaded spec


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec and what running it needs.

    ``envs`` are the size environments (name -> value) the enumerative checks run: one
    when every size is fixed, otherwise the samples of the ranges (see
    :func:`default_samples` and :func:`sample_envs`).  ``max_env`` sets every range to its
    largest allowed value (used for bounds).
    """

    spec: Spec
    path: Path
    format: Format
    envs: tuple[dict[str, int], ...]
    max_env: dict[str, int]
    parsed: ParsedSpec
    _locate: Callable[[Path_, bool], Mark] = field(repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.spec.name

    def eval(self, expr: int | str, env: Mapping[str, int]) -> int:
        """Evaluate a spec expression (sizes from ``env``; add ``bx``/``by``/``bz`` for ``at``)."""
        return evaluate(expr, env)

    def threads(self, env: Mapping[str, int]) -> int:
        """Threads per CTA under ``env``."""
        return evaluate(self.spec.threads, env)

    def grid(self, env: Mapping[str, int]) -> tuple[int, int, int]:
        """Grid extents (x, y, z) under ``env``; missing entries are 1."""
        g = [evaluate(x, env) for x in self.spec.grid] + [1, 1]
        return (g[0], g[1], g[2])

    def layout(self, text: str, env: Mapping[str, int]) -> Any:
        """Parse a layout string of the spec with the named sizes of ``env`` (its size
        expressions evaluated)."""
        return bind_layout(text, env)

    def where(self, *path: Any) -> str:
        """``FILE:LINE:COL`` of a field, e.g. ``where('stages', 0, 'copy', 'src')``."""
        line, col = self._locate(tuple(path), False)
        return f"{self.path}:{line}:{col}"

    def error(self, path: Sequence[Any], msg: str) -> SpecError:
        """A :class:`SpecError` located at ``path`` (for problems found later, e.g. by the
        simulator): ``FILE:LINE:COL: field.path: msg``."""
        return SpecError(clean(f"{self.where(*path)}: {fmt_path(path)}: {msg}"))


# ----------------------------------------------------------------------------- entry points


def _format_of(path: Path) -> Format:
    fmt = SPEC_SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise SpecError(f"{path}:1:1: (file): unknown spec file type {path.suffix!r}; "
                        f"use .yaml, .yml, .toml or .json")
    return fmt  # type: ignore[return-value]


def loads_spec(text: str, fmt: Format, name: str | Path = "<string>") -> LoadedSpec:
    """Parse and validate spec text in format ``fmt``; ``name`` is used in messages."""
    sname = str(name)
    if len(text) > MAX_FILE_BYTES:
        raise fail(sname, 1, 1, f"spec text longer than {MAX_FILE_BYTES} characters")
    locate: Callable[[Path_, bool], Mark]
    if fmt == "yaml":
        loc = load_yaml(text, sname)
        data, locate = loc.data, loc.locate
    elif fmt == "json":
        loc = load_json(text, sname)
        data, locate = loc.data, loc.locate
    elif fmt == "toml":
        data, locate = load_toml(text, sname)
    else:
        raise SpecError(f"{sname}:1:1: (file): unknown format {fmt!r}")
    if not isinstance(data, dict):
        raise SpecError(f"{sname}:{':'.join(map(str, locate((), False)))}: (top level): "
                        f"a spec is a mapping of fields (spec, name, threads, ...), "
                        f"got {type(data).__name__}")
    errs = Errors(sname, locate)
    try:
        spec = Spec.model_validate(data)
    except ValidationError as e:
        report_validation_errors(e, data, errs)
        errs.raise_()
        raise SpecError(f"{sname}:1:1: (top level): {e}") from None  # unreachable in practice
    envs, max_env = check_semantics(spec, errs)
    errs.raise_()
    return LoadedSpec(spec=spec, path=Path(name), format=fmt, envs=tuple(envs), max_env=max_env,
                      parsed=ParsedSpec.of(spec), _locate=locate)


def load_spec(path: str | Path) -> LoadedSpec:
    """Load, validate and check a spec file (.yaml/.yml, .toml, .json).

    Raises :class:`SpecError` (message ``FILE:LINE:COL: field.path: message``, one line per
    problem) for unreadable files, syntax errors, schema violations and the semantic
    problems listed in :func:`check_semantics`.
    """
    p = Path(path)
    fmt = _format_of(p)
    try:
        with p.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise SpecError(f"{p}:1:1: (file): cannot read: {e.strerror or e}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError(f"{p}:1:1: (file): larger than {MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise SpecError(f"{p}:{line}:1: (file): not UTF-8 text ({e.reason})") from None
    return loads_spec(text, fmt, p)


def with_sizes(loaded: LoadedSpec, sizes: Mapping[str, int]) -> LoadedSpec:
    """``loaded`` with some named sizes set to fixed values (``--sizes M=1000,N=62``),
    re-checked as a whole (bounds, thread counts, shared memory) under the new sizes."""
    known = loaded.spec.sizes
    for k, v in sizes.items():
        if k not in known:
            raise SpecError(f"{loaded.path}:1:1: sizes: there is no size {k!r} to set; the spec's sizes: "
                            f"{', '.join(known) or 'none'}")
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise SpecError(f"{loaded.path}:1:1: sizes.{k}: a size is a positive integer, got {v!r}")
    spec = loaded.spec.model_copy(update={"sizes": {**known, **{k: int(v) for k, v in sizes.items()}}})
    errs = Errors(str(loaded.path), loaded._locate)
    envs, top = check_semantics(spec, errs)
    errs.raise_()
    return replace(loaded, spec=spec, envs=tuple(envs), max_env=top)


#: directory entries a directory argument may hold (all levels): a spec library, not a disk
MAX_SCAN = 200_000


def iter_spec_files(path: str | Path) -> list[Path]:
    """Spec files under ``path`` (itself if a file), sorted; JSON Schema files
    (``*.schema.json``) and reports (``*.report.json``: ``threadmap sweep -o DIR`` writes one
    beside its specs) are skipped, as are directories that cannot be read and symbolic links
    to directories (no cycles).  More than ``MAX_SCAN`` entries is an error."""
    p = Path(path)
    if p.is_file():
        return [p]
    out: list[Path] = []
    seen = 0
    for root, dirs, files in os.walk(p, followlinks=False, onerror=lambda e: None):
        seen += len(dirs) + len(files)
        if seen > MAX_SCAN:
            raise SpecError(f"{path}:1:1: (file): more than {MAX_SCAN} entries under this directory: name the "
                            "folder of the specs")
        for name in files:
            f = Path(root) / name
            if f.suffix.lower() in SPEC_SUFFIXES and not name.endswith((".schema.json", ".report.json")) \
                    and f.is_file():
                out.append(f)
    return sorted(out)



def spec_files(paths: Sequence[str | Path]) -> list[Path]:
    """Spec files named by ``paths`` (files, or directories searched recursively); a path that
    does not exist is a located error."""
    files: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise SpecError(f"{p}:1:1: (file): no such file or directory")
        files.extend(iter_spec_files(p) if p.is_dir() else [p])
    return files
