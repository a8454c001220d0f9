"""What the service works on, typed: a job's options and limits, the validated spec job, the
tasks a request needs done now (a drawing, a calculation), and what a child process answers.

Both sides of a job's child process read this module (the server builds tasks,
:mod:`threadmap.service.runner` runs them), so neither imports the other's machinery.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from threadmap.errors import SpecError
from threadmap.spec.load import LoadedSpec, loads_spec
from threadmap.version import __version__

Format = Literal["yaml", "json", "toml"]
Engine = Literal["verify", "prove"]

#: what the runner writes on stderr before a progress record
PROGRESS_MARK = "THREADMAP-PROGRESS "
#: a job's exit status when it ran out of memory
MEMORY_EXIT = 70


@dataclass(frozen=True)
class Options:
    """A job's options, normalised (the same request spelled differently is the same job)."""

    checks: tuple[str, ...] | None = None
    engine: Engine = "verify"
    sizes: tuple[tuple[str, int], ...] = ()
    exhaustive: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"checks": list(self.checks) if self.checks is not None else None, "engine": self.engine,
                "sizes": dict(self.sizes), "exhaustive": self.exhaustive}

    @staticmethod
    def of(checks: str | list[str] | None = None, engine: str = "verify", sizes: str | Mapping[str, int] | None = None,
           exhaustive: bool = False) -> Options:
        """Options from request values; raises ValueError with a message for the client."""
        from threadmap.api import check_names
        if engine not in ("verify", "prove"):
            raise ValueError(f"engine must be 'verify' or 'prove', got {engine!r}")
        from threadmap.verify import CHECK_NAMES
        names: tuple[str, ...] | None = None
        if checks:
            raw = [c.strip() for c in (checks.split(",") if isinstance(checks, str) else checks) if c.strip()]
            got = check_names(raw) if raw else None
            # every check, or none named, is the default: one job, not three
            names = tuple(sorted(got)) if got and set(got) != set(CHECK_NAMES) else None
        pairs: dict[str, int] = {}
        if isinstance(sizes, str):
            for part in filter(None, (p.strip() for p in sizes.split(","))):
                k, eq, text = part.partition("=")
                if not eq or not k.strip().isidentifier():
                    raise ValueError(f"sizes: expected NAME=INTEGER[,NAME=INTEGER...], got {part!r}")
                try:
                    pairs[k.strip()] = int(text)
                except ValueError:
                    raise ValueError(f"sizes: {k.strip()} must be an integer, got {text!r}") from None
        elif sizes:
            for k, v in sizes.items():
                if not isinstance(k, str) or not k.isidentifier() or isinstance(v, bool) or not isinstance(v, int):
                    raise ValueError(f"sizes: expected names and integers, got {k!r}: {v!r}")
                pairs[k] = v
        for k, v in pairs.items():
            if not 1 <= v <= 2**40:
                raise ValueError(f"sizes: {k} = {v} must be in 1..2^40")
        if engine == "prove":  # a proof covers every property and enumerates nothing
            names, exhaustive = None, False
        return Options(names, engine, tuple(sorted(pairs.items())), bool(exhaustive))  # type: ignore[arg-type]

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Options:
        """The options a job row stores (:meth:`as_dict`), back."""
        return Options.of(d.get("checks"), d.get("engine", "verify"), d.get("sizes") or None,
                          bool(d.get("exhaustive", False)))


@dataclass(frozen=True)
class Limits:
    """What one job may use, checked before work starts (and enforced while it runs)."""

    max_body_bytes: int = 1 << 20
    max_environments: int = 64      # size environments of one spec (each is a verification)
    max_blocks: int = 1 << 20       # blocks of one environment's grid for an exhaustive run
    job_seconds: float = 120.0
    job_memory_mb: int = 4096
    sync_seconds: float = 20.0      # POST /v1/verify, a stage's pictures, a calculation


@dataclass(frozen=True)
class SpecJob:
    """A verification (or proof) of one spec: its text, format, name, options and content
    address.  ``loaded`` is the spec the server validated, handed to the job's child so the
    spec is validated once per job; a job read back from the store has none and its child
    validates the text."""

    key: str
    text: str
    fmt: Format
    name: str
    options: Options
    loaded: LoadedSpec | None = field(default=None, repr=False, compare=False)

    @property
    def spec_name(self) -> str | None:
        return self.loaded.spec.name if self.loaded is not None else None


@dataclass(frozen=True)
class DrawTask:
    """One stage's pictures of a stored job (``threadmap show --svg``)."""

    job: SpecJob
    stage: int | None = None
    block: int = 0


@dataclass(frozen=True)
class LayoutTask:
    """The layout calculator: an expression and the operations applied to it in order."""

    expr: str
    ops: tuple[str, ...] = ()


Task = SpecJob | DrawTask | LayoutTask


@dataclass
class Outcome:
    """What a child answers: a job's report (with its SARIF and JUnit forms and exit status),
    a drawing, a calculation, or why it failed (time limit, memory limit, crash, bad input)."""

    error: str | None = None
    report: dict[str, Any] | None = None
    exit_status: int | None = None
    sarif: str | None = None
    junit: str | None = None
    svg: str | None = None
    layout: dict[str, Any] | None = None
    seconds: float = 0.0


def sniff_format(content_type: str | None, filename: str | None, text: str) -> Format:
    """The spec's format from its file name, else its content type, else its first character."""
    name = (filename or "").lower()
    if name.endswith(".json"):
        return "json"
    if name.endswith(".toml"):
        return "toml"
    if name.endswith((".yaml", ".yml")):
        return "yaml"
    ct = (content_type or "").split(";")[0].strip().lower()
    if ct.endswith("json"):
        return "json"
    if ct.endswith("toml"):
        return "toml"
    if ct.endswith("yaml") or ct.endswith("yml"):
        return "yaml"
    return "json" if text.lstrip().startswith("{") else "yaml"


def load(text: str, fmt: Format, name: str, options: Options) -> LoadedSpec:
    """The spec with the options' sizes applied: the loader's errors (``FILE:LINE:COL:
    field.path: message``) as :class:`SpecError`."""
    from threadmap.spec.load import with_sizes
    loaded = loads_spec(text, fmt, name)
    return with_sizes(loaded, dict(options.sizes)) if options.sizes else loaded


def validate(text: str, fmt: Format, name: str, options: Options, limits: Limits) -> SpecJob:
    """Load and check a spec before any work: the loader's errors, the sizes overrides, and
    the service's work limits."""
    loaded = load(text, fmt, name, options)
    if len(loaded.envs) > limits.max_environments:
        raise SpecError(f"{name}:1:1: sizes: {len(loaded.envs)} size environments; this service verifies at most "
                        f"{limits.max_environments} per job")
    if options.exhaustive:
        from threadmap.spec.expr import evaluate
        for env in loaded.envs:
            blocks = 1
            for g in loaded.spec.grid:
                blocks *= max(1, evaluate(g, env))
            if blocks > limits.max_blocks:
                raise SpecError(f"{name}:1:1: grid: {blocks} blocks at {env}; an exhaustive job enumerates at most "
                                f"{limits.max_blocks} (leave exhaustive off: the tiling argument covers any grid)")
    return SpecJob(job_key(loaded, options), text, fmt, name, options, loaded)


def job_key(loaded: LoadedSpec, options: Options) -> str:
    """The content address of a job: the validated spec (so comments, formatting and the file
    format do not matter), the options and threadmap's version."""
    spec = loaded.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    opts = options.as_dict()
    # a size set to the value the spec already fixes changes nothing
    opts["sizes"] = {k: v for k, v in opts["sizes"].items() if loaded.spec.sizes.get(k) != v}
    doc = json.dumps({"spec": spec, "options": opts, "threadmap": __version__}, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()[:32]
