"""The sweep: generate, group, extract, verify, store, summarise.

Work is spread over a local process pool or a Dask cluster (:mod:`~threadmap.sweep.workers`):
extraction in batches (one translation unit each, compiled in parallel), then one
verification per distinct spec (configurations whose specs have equal content share one
verification); this process alone writes the store.  Every configuration's result is
written to the store as soon as it is known, so a killed sweep resumes where it stopped and a
finished one is summarised from the store without doing anything again.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from threadmap.sweep import DEFAULT_BATCH
from threadmap.sweep.library import (
    CONV3X_FAMILY,
    CONV_KINDS,
    DEFAULT_CUDA_VERSION,
    DEFAULT_MMA_FAMILIES,
    PLANAR_FAMILIES,
    SPARSE_FAMILY,
    Configuration,
    SweepError,
    counts,
    generate,
    group,
)
from threadmap.sweep.library_sm90 import SM90_FAMILIES, SM90_TMA_SCHEDULES
from threadmap.sweep.store import PROVER_VERSION, VERIFIER_VERSION, Result, Store
from threadmap.sweep.workers import check_address, open_workers

#: element types of the generator that have a spec name: the generator's name -> the spec's
SPEC_ELEMENTS = {"f16": "f16", "bf16": "bf16", "tf32": "tf32", "f32": "f32", "f64": "f64", "s8": "i8", "u8": "u8",
                 "s16": "i16", "u16": "u16", "s32": "i32", "u32": "u32", "s64": "i64", "u64": "u64",
                 "e4m3": "e4m3", "e5m2": "e5m2", "cf32": "cf32", "cf64": "cf64", "s4": "i4", "u4": "u4", "b1": "b1"}

#: progress(what, done, total): what is "extracting" or "verifying"
Progress = Callable[[str, int, int], None]


@dataclass
class Options:
    architectures: tuple[str, ...] = ("80",)
    kernels: str = "all"
    db: Path | None = None
    jobs: int = 1
    batch: int = DEFAULT_BATCH
    cuda_version: str = DEFAULT_CUDA_VERSION
    out: Path | None = None
    #: only generate and group (and read what the store holds): extract and verify nothing
    count_only: bool = False
    #: a Dask scheduler's address, or ``local:N`` (a LocalCluster of N workers): run the
    #: tasks there instead of a local pool of ``jobs`` processes
    dask: str | None = None
    #: also ``threadmap prove`` each spec over its size ranges, each document stopped after
    #: ``prove_timeout`` seconds (its undecided properties then UNKNOWN)
    prove: bool = False
    prove_timeout: float = 120.0
    #: another CUTLASS include folder to extract from (instead of the installed package's)
    cutlass_include: Path | None = None
    #: the header tree (its version, or the identity a report printed) whose stored rows this
    #: run's results are compared with, configuration by configuration
    compare: str | None = None


@dataclass
class KindRow:
    """One operation kind: its kernels and configurations, and what became of them."""

    kind: str
    kernels: int
    configurations: int
    in_slice: int = 0          # configurations this slice analyses (2.x GEMM of DefaultMma families, conv)
    analysed: int = 0
    passed: int = 0
    with_findings: int = 0
    not_analysed: int = 0
    kernels_analysed: int = 0


@dataclass
class FindingRow:
    """Configurations of one family with one kind of finding (a failing check)."""

    check: str
    family: str
    configurations: int
    kernels: int
    specs: list[str]           # one spec file per configuration (written with -o)
    example: str


@dataclass
class ReasonRow:
    """Configurations not analysed (or with properties not proved), by class of reason."""

    reason: str
    configurations: int
    kernels: int
    example: str


@dataclass
class ProofRow:
    """One property of ``threadmap prove`` over the proved configurations: how many it holds
    for at every size in range, fails at some, or was not decided for (and their kernels)."""

    property: str
    proved: int = 0
    refuted: int = 0
    unknown: int = 0
    kernels_proved: int = 0
    kernels_refuted: int = 0
    kernels_unknown: int = 0


@dataclass
class ChangeRow:
    """One configuration whose result differs between two CUTLASS header trees."""

    family: str
    kernel: str              # its first kernel (its spec file's name with -o)
    kernels: int
    verdict: str             # "regression", "improvement" or "changed" (the spec or a reason alone)
    changes: list[str]


@dataclass
class Comparison:
    """This run's results against another header tree's stored results (``--compare``)."""

    against: str
    compared: int = 0        # configurations with a row of both trees
    unchanged: int = 0
    regressions: int = 0
    improvements: int = 0
    changed: int = 0
    missing: int = 0         # configurations without a row of ``against``
    rows: list[ChangeRow] = field(default_factory=list)


@dataclass
class SweepReport:
    architectures: list[str]
    kernels_filter: str
    cutlass: str
    db: str
    kinds: list[KindRow]
    findings: list[FindingRow]
    warnings: list[FindingRow]           # costs reported without failing, by check and family
    reasons: list[ReasonRow]
    not_in_slice: dict[str, int]         # "kind family" -> configurations
    #: per property of ``--prove`` (empty when no configuration of the report is proved)
    proofs: list[ProofRow] = field(default_factory=list)
    #: why properties were not decided, by class of reason (the configurations and kernels)
    unproved: list[ReasonRow] = field(default_factory=list)
    comparison: Comparison | None = None
    #: analysed configurations without a proof, where some configuration of the report has one
    not_proved: int = 0
    configurations: list[dict[str, Any]] = field(default_factory=list)
    reused: int = 0                      # configurations read back from the store
    reverified: int = 0                  # ... whose stored spec an older verifier judged: verified again
    reproved: int = 0                    # ... whose stored spec had no current proof: proved (--prove)
    extracted: int = 0                   # configurations extracted in this run
    verified: int = 0                    # specs verified in this run
    shared_verifications: int = 0        # configurations whose equal spec was verified already
    seconds: float = 0.0

    @property
    def exit_status(self) -> int:
        return 1 if self.findings or (self.comparison is not None and self.comparison.regressions) else 0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def in_slice(cfg: Configuration) -> bool:
    """2.x GEMMs of the DefaultMma, planar-complex and sparse families, sm90a 3.x GEMMs, and 2.x
    convolutions (implicit GEMMs)."""
    return (cfg.kind == "gemm" and (cfg.family in DEFAULT_MMA_FAMILIES or cfg.family in SM90_FAMILIES
                                    or cfg.family in PLANAR_FAMILIES or cfg.family == SPARSE_FAMILY)) \
        or (cfg.kind in CONV_KINDS and cfg.family != CONV3X_FAMILY)


#: the global layouts a spec gives per kind: a GEMM's row- or column-major operands, a
#: convolution's packed tensors, and the interleaved ones (:mod:`~threadmap.sweep.interleaved`)
SPEC_LAYOUTS = {"gemm": ("n", "t", "n32", "t32", "n64", "t64"),
                "conv2d": ("nhwc", "nc32hw32", "nc64hw64", "c32rsk32", "c64rsk64"), "conv3d": ("ndhwc",)}


def prefilter(cfg: Configuration, digest: str) -> Result | None:
    """A configuration the generator already says cannot have a spec (no compile needed)."""
    f = cfg.fields
    if "kernel_schedule" in f and not f["kernel_schedule"].startswith(SM90_TMA_SCHEDULES):
        return _not_analysed(cfg, digest, "mainloop without TMA (cp.async or the builder's choice)",
                             f"kernel schedule {f['kernel_schedule']}")
    for w in ("a", "b"):
        el = f[f"element_{w}"]
        if el not in SPEC_ELEMENTS:
            return _not_analysed(cfg, digest, "element type without a spec name",
                                 f"{w.upper()}: {el} has no spec element")
        if f[f"layout_{w}"] not in SPEC_LAYOUTS[cfg.kind]:
            what = "global layout neither row- nor column-major" if cfg.kind == "gemm" else \
                "global layout not a packed tensor"
            return _not_analysed(cfg, digest, what, f"{w.upper()}: layout {f[f'layout_{w}']} (interleaved)")
    if cfg.kind in CONV_KINDS:
        from threadmap.sweep.extract_conv import NoFamily, family

        try:
            family(cfg)
        except NoFamily as e:
            return _not_analysed(cfg, digest, "convolution without a spec family", str(e))
    return None


def _not_analysed(cfg: Configuration, digest: str, kind: str, detail: str) -> Result:
    return Result(digest, cfg.key, cfg.label, "not_analysed", kind, detail, kernels=list(cfg.kernels))


# --- work done in the pool's processes ---------------------------------------------------------
def extract_batch(configs: Sequence[Configuration], digests: Sequence[str], headers: str,
                  include: str | None = None) -> list[Any]:
    """Extract one batch (from the CUTLASS include folder ``include``, default the installed
    package's); per configuration a not-analysed Result or (digest, Written)."""
    from threadmap.gpu import toolchain

    with toolchain.using_cutlass_include(Path(include) if include else None):
        return _extract_batch(configs, digests, headers)


def _extract_batch(configs: Sequence[Configuration], digests: Sequence[str], headers: str) -> list[Any]:
    from threadmap.sweep.extract import extract
    from threadmap.sweep.extract_sm90 import extract as extract3x
    from threadmap.sweep.interleaved import interleave_of, interleaved_spec_text
    from threadmap.sweep.specs import NotAnalysed, spec_text
    from threadmap.sweep.specs_conv import conv_spec_text
    from threadmap.sweep.specs_planar import planar_spec_text
    from threadmap.sweep.specs_sm90 import spec_text3x
    from threadmap.sweep.specs_sparse import sparse_spec_text

    # 3.x configurations (sm90a collectives) have their own extractor; each kind is one program
    is3x = ["kernel_schedule" in c.fields for c in configs]
    got = iter(extract([c for c, x in zip(configs, is3x, strict=True) if not x]))
    got3x = iter(extract3x([c for c, x in zip(configs, is3x, strict=True) if x]))
    out: list[Any] = []
    for cfg, digest, x in zip(configs, digests, is3x, strict=True):
        write = conv_spec_text if cfg.kind in CONV_KINDS else \
            planar_spec_text if cfg.family in PLANAR_FAMILIES else \
            sparse_spec_text if cfg.family == SPARSE_FAMILY else spec_text
        if interleave_of(cfg) is not None:  # the global operands read through pitch-linear views
            write = interleaved_spec_text
        try:
            out.append((digest, spec_text3x(cfg, next(got3x), headers) if x else write(cfg, next(got), headers)))
        except NotAnalysed as e:
            out.append(_not_analysed(cfg, digest, e.kind, e.detail))
    return out


#: the checks whose counts every analysed configuration keeps (``Result.costs``: what the
#: report plots across the library, passing configurations included)
COST_CHECKS = ("coalescing", "bank_conflicts")


def _quantities(summary: Any) -> dict[str, Any]:
    """A check summary's numbers (sectors, wavefronts and their ideal, missing cells, a
    predicate's precondition): its scalar fields and short lists, not the worst instance."""
    out: dict[str, Any] = {}
    for k, v in summary.model_dump().items():
        if k in ("check", "worst"):
            continue
        if isinstance(v, (bool, int, float, str)) or (isinstance(v, (list, tuple)) and len(v) <= 8):
            out[k] = list(v) if isinstance(v, tuple) else v
    return out


def _small(witness: dict[str, Any]) -> dict[str, Any]:
    """A finding's witness without its long parts (every lane's address): what names it."""
    import json

    return {k: v for k, v in witness.items() if len(json.dumps(v, default=str)) <= 80}


def _tensor(spec: Any, stage: int | None, side: str | None) -> str:
    """The tensor a result's stage side names ('' for the kernel's own checks)."""
    if stage is None or side is None:
        return ""
    try:
        return str(getattr(spec.stages[stage].copy_, side).tensor)
    except (AttributeError, IndexError):
        return ""


def verify_text(text: str, name: str) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]],
                                               list[dict[str, Any]], float, str]:
    """Verify one spec (default checks): its status, findings (one per failing check and
    stage, with the first sizes that show it), warnings (costs reported without failing, at
    the whole-tile sizes), costs (the counts of :data:`COST_CHECKS` at the whole-tile sizes,
    every stage side), CPU seconds, and an error if threadmap refused the spec.  Each entry
    keeps its check summary's numbers (``summary``) and findings their witness's short parts."""
    import threadmap.api as api
    from threadmap.spec.load import loads_spec
    from threadmap.sweep.specs_sparse import DOCUMENT_SEPARATOR

    if DOCUMENT_SEPARATOR in text:  # a configuration with several specs (a sparse GEMM's E): each verified
        parts = [verify_text(doc, name) for doc in spec_documents(text)]
        err = next((p[5] for p in parts if p[5]), "")
        status = "not_analysed" if err else "fail" if any(p[0] == "fail" for p in parts) else "pass"
        # each finding and warning names its document: the spec file and link that reproduce it
        return (status, [{**f, "document": i} for i, p in enumerate(parts) for f in p[1]],
                [{**w, "document": i} for i, p in enumerate(parts) for w in p[2]],
                [{**c, "document": i} for i, p in enumerate(parts) for c in p[3]], sum(p[4] for p in parts), err)
    t0 = time.process_time()
    try:
        loaded = loads_spec(text, "yaml", name)
        report = api.verify(loaded)
    except Exception as e:  # noqa: BLE001 - a refused spec is the configuration's result, not the sweep's end
        return "not_analysed", [], [], [], time.process_time() - t0, f"{type(e).__name__}: {e}"
    if report.errors:
        return "not_analysed", [], [], [], time.process_time() - t0, report.errors[0].message
    found: dict[tuple[str, Any], dict[str, Any]] = {}
    warned: dict[tuple[str, Any], dict[str, Any]] = {}
    # costs are the kernel's own at whole tiles (every size its largest sample, a multiple of
    # the tile): a ragged leading dimension adds unaligned rows of its own at the other samples
    whole = {k: max(run.sizes[k] for run in report.runs) for k in (report.runs[0].sizes if report.runs else {})}
    costs: list[dict[str, Any]] = []
    for run in report.runs:
        for r in run.results:
            entry = {"check": r.check, "stage": r.stage, "side": r.side,
                     "tensor": _tensor(loaded.spec, r.stage, r.side), "sizes": run.sizes,
                     "summary": _quantities(r.summary)}
            if r.status == "FAIL" and (r.check, r.stage) not in found:
                first = r.findings[0] if r.findings else None
                msg = first.message if first is not None else str(r.summary)
                found[(r.check, r.stage)] = {**entry, "kind": first.kind if first is not None else "",
                                             "witness": _small(first.witness) if first is not None else {},
                                             "message": msg[:400]}
            warn = [f for f in r.findings if f.severity == "warning"]
            if r.status != "FAIL" and warn and run.sizes == whole and (r.check, r.stage) not in warned:
                warned[(r.check, r.stage)] = {**entry, "kind": warn[0].kind, "witness": _small(warn[0].witness),
                                              "message": warn[0].message[:400]}
            if run.sizes == whole and r.check in COST_CHECKS and r.status != "SKIP":
                costs.append({k: entry[k] for k in ("check", "stage", "side", "tensor", "summary")})
    status = "fail" if found else "pass"
    return status, list(found.values()), list(warned.values()), costs, time.process_time() - t0, ""


def prove_text(text: str, name: str, timeout_s: float) -> list[dict[str, Any]]:
    """``threadmap prove`` of each spec document over its size ranges, in a forked child
    stopped after ``timeout_s`` seconds (in this process where it may not fork one: a daemonic
    Dask worker).  Per document: every property's status, method, size classes, reason, the
    sizes of a refutation with its first finding and a predicate's precondition, the seconds
    and the encoding's bits; or the error that stopped it."""
    import multiprocessing as mp

    from threadmap.prove.run import prove_isolated, prove_loaded
    from threadmap.spec.load import loads_spec

    out: list[dict[str, Any]] = []
    for doc in spec_documents(text):
        try:
            loaded = loads_spec(doc, "yaml", name)
            kind, run = ("ok", prove_loaded(loaded, timeout_s)) if mp.current_process().daemon \
                else prove_isolated(loaded, timeout_s)
        except Exception as e:  # noqa: BLE001 - a spec the prover refuses is this configuration's result
            kind, run = "internal", f"{type(e).__name__}: {e}"
        if isinstance(run, str) or kind != "ok":
            out.append({"error": str(run).splitlines()[0][:400] if str(run) else kind})
            continue
        out.append({"seconds": round(run.seconds, 3), "timeout": timeout_s, "bits": run.bits, "properties": [
            {"property": p.property, "status": p.status, "method": p.method, "classes": p.classes,
             "reason": p.reason[:300], "sizes": p.sizes, "precondition": list(p.precondition),
             **({"finding": p.findings[0].message[:300]} if p.findings else {})} for p in run.properties]})
    return out


def proof_current(row: Result, opts: Options) -> bool:
    """Whether a stored row's proof stands for ``--prove`` now: the current prover's, and
    either every property decided or a time limit at least this run's."""
    if row.prover != PROVER_VERSION or not row.proof:
        return False
    return all(doc.get("timeout", 0) >= opts.prove_timeout
               or all(p["status"] != "UNKNOWN" for p in doc.get("properties", [{"status": "UNKNOWN"}]))
               for doc in row.proof)


def proof_findings(proof: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The refuted properties of a proof as findings (check ``prove PROPERTY``, the sizes
    that refute it and the first finding there; the document they belong to)."""
    out = []
    for i, doc in enumerate(proof):
        for p in doc.get("properties", []):
            if p["status"] != "REFUTED":
                continue
            at = ", ".join(f"{k}={v}" for k, v in (p.get("sizes") or {}).items())
            out.append({"check": f"prove {p['property']}", "stage": None, "side": None, "tensor": "",
                        "sizes": p.get("sizes") or {}, "kind": "refuted", "witness": {},
                        "summary": {"classes": p["classes"], "precondition": p["precondition"]},
                        "message": f"{p['property']} refuted at {at}: {p.get('finding') or p['reason']}"[:400],
                        "document": i})
    return out


def check_text(text: str, name: str, prove_timeout: float | None = None) -> tuple[Any, ...]:
    """:func:`verify_text`'s results, then the proof (:func:`prove_text`; ``[]`` without
    ``prove_timeout`` or for a spec threadmap refused)."""
    verdict = verify_text(text, name)
    proof = prove_text(text, name, prove_timeout) if prove_timeout is not None and not verdict[5] else []
    return (*verdict, proof)


def _chunks(items: Sequence[Any], n: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


def default_db() -> Path:
    from threadmap.gpu.toolchain import cache_dir

    return cache_dir() / "sweep.db"


def sweep(opts: Options, progress: Progress | None = None) -> SweepReport:
    """Run the sweep (see the module docstring); the report of every configuration the
    filter selects, from this run and from the store."""
    from threadmap.gpu import toolchain

    inc = opts.cutlass_include
    if inc is not None and not ((inc / "cute" / "tensor.hpp").is_file() and (inc / "cutlass" / "version.h").is_file()
                                and "?" not in toolchain.cutlass_version(inc)):
        raise SweepError(f"--cutlass-include {inc}: not a CUTLASS include folder (it needs cute/tensor.hpp and a "
                         "cutlass/version.h that defines CUTLASS_MAJOR, CUTLASS_MINOR and CUTLASS_PATCH)")
    with toolchain.using_cutlass_include(inc):
        return _sweep(opts, progress)


def _sweep(opts: Options, progress: Progress | None) -> SweepReport:
    from threadmap.gpu import toolchain

    start = time.time()
    if opts.dask:
        check_address(opts.dask)
    ops = generate(opts.architectures, opts.kernels, opts.cuda_version)
    if not ops:
        # the generator makes some families only from a CUDA version on (sparse GEMMs: 11.1)
        told = "" if opts.cuda_version == DEFAULT_CUDA_VERSION else f" for --cuda-version {opts.cuda_version}"
        raise SweepError(f"--kernels {opts.kernels!r} matches no kernel of "
                         f"sm{'/sm'.join(opts.architectures)}{told}")
    configs = group(ops)
    todo_cfgs = [c for c in configs if in_slice(c)]
    inc = toolchain.cutlass_include()
    headers = toolchain.cutlass_identity(inc) if inc is not None else "?"
    db = opts.db if opts.db is not None else default_db()
    if opts.compare is not None and not db.exists():  # refused before the file is made
        raise SweepError(f"--compare {opts.compare}: {db} does not exist: sweep the other headers into it first")
    report = SweepReport(list(opts.architectures), opts.kernels, headers, str(db), [], [], [], [], {})
    from threadmap.sweep.specs import Written

    with Store(db, headers) as store:
        done = store.done()
        against = None if opts.compare is None else resolve_against(
            opts.compare, store.identities(), db, any(c.digest(opts.compare) in done for c in todo_cfgs))
        results: dict[str, Result] = {}
        pending: list[tuple[Configuration, str]] = []
        stored_specs: list[tuple[Configuration, str, Any]] = []
        for c in todo_cfgs:
            d = c.digest(headers)
            row = done.get(d)
            current = row is not None and row.verifier == VERIFIER_VERSION
            if row is not None and ((current and (not opts.prove or proof_current(row, opts))) or not row.spec
                                    or opts.count_only):
                results[d] = row
                report.reused += 1
                continue
            if row is not None:  # its stored spec: verified (another verifier's) and proved (--prove) again
                stored_specs.append((c, d, Written(row.spec, row.spec_hash, {})))
                report.reused += 1
                if current:
                    report.reproved += 1
                else:
                    report.reverified += 1
                continue
            pre = prefilter(c, d)
            if pre is not None and not opts.count_only:
                store.put(pre)
                results[d] = pre
                continue
            pending.append((c, d))
        if opts.count_only:
            pending, stored_specs = [], []
        if pending:
            toolchain.require()  # nvcc and the headers, or a clear error before any work
        if pending or stored_specs:
            store.check_writable()
        _run_pending(opts, pending, headers, store, results, report, progress, stored_specs)
    # the kernels of this run (a stored row may come from a run with another filter)
    for c in todo_cfgs:
        r = results.get(c.digest(headers))
        if r is not None:
            r.kernels = list(c.kernels)
    _summarise(report, configs, results, headers)
    if against is not None:
        report.comparison = compare(against, todo_cfgs, results, done, headers)
    if opts.out is not None:
        write_specs(report, results, opts.out)
    report.seconds = time.time() - start
    return report


def _run_pending(opts: Options, pending: list[tuple[Configuration, str]], headers: str, store: Store,
                 results: dict[str, Result], report: SweepReport, progress: Progress | None,
                 stored_specs: Sequence[tuple[Configuration, str, Any]] = ()) -> None:
    """Extract and verify the configurations not in the store, and verify the stored specs
    ``(configuration, digest, Written)`` again, writing each result at once."""
    total = len(pending) + len(stored_specs)
    finished = 0

    def tick(what: str) -> None:
        if progress is not None:
            progress(what, finished, total)

    tick("extracting")
    if not total:
        return
    by_digest = {d: c for c, d in pending} | {d: c for c, d, _ in stored_specs}
    workers = open_workers(opts.jobs, opts.dask)
    verified_by_hash: dict[str, Result] = {}
    waiting: dict[str, list[tuple[str, Any]]] = {}   # spec hash -> configurations that wait for it
    futures: dict[Any, tuple[str, Any]] = {}        # a concurrent.futures or a distributed future

    def record(r: Result) -> None:
        nonlocal finished
        store.put(r)
        results[r.digest] = r
        finished += 1

    def from_verified(digest: str, written: Any, src: Result) -> Result:
        cfg = by_digest[digest]
        return Result(digest, cfg.key, cfg.label, src.status, src.reason_kind, src.reason, src.findings, src.warnings,
                      written.text, written.content_hash, list(cfg.kernels), 0.0, costs=src.costs, proof=src.proof,
                      prover=src.prover)

    batches = list(_chunks(pending, max(1, opts.batch)))

    def verify(digest: str, written: Any) -> None:
        # an equal spec verified already (here or in the store) or on its way is not verified again
        h = written.content_hash
        src = verified_by_hash.get(h) or store.by_spec(h, proved=opts.prove)
        if src is not None and opts.prove and not proof_current(src, opts):
            src = None  # proved with a shorter time limit: proved again
        if src is not None:
            report.shared_verifications += 1
            record(from_verified(digest, written, src))
        elif h in waiting:
            waiting[h].append((digest, written))
        else:
            waiting[h] = [(digest, written)]
            futures[workers.submit(check_text, written.text, by_digest[digest].kernels[0],
                                   opts.prove_timeout if opts.prove else None)] = ("verify", h)

    def next_batch() -> None:
        # at most one batch per worker in flight: verifications then run as batches finish
        # (a killed sweep keeps them), instead of queueing behind every extraction
        if batches:
            batch = batches.pop(0)
            futures[workers.submit(extract_batch, [c for c, _ in batch], [d for _, d in batch], headers,
                                   None if opts.cutlass_include is None else str(opts.cutlass_include))] = \
                ("extract", len(batch))

    try:
        for _, d, written in stored_specs:
            verify(d, written)
        for _ in range(workers.slots):
            next_batch()
        while futures:
            for fut in workers.first_done(futures):
                what, payload = futures.pop(fut)
                if what == "extract":
                    next_batch()
                    report.extracted += payload
                    for item in fut.result():
                        if isinstance(item, Result):
                            record(item)
                            continue
                        verify(*item)
                    tick("verifying")
                else:
                    status, findings, warnings, costs, secs, err, proof = fut.result()
                    report.verified += 1
                    if proof:  # a refuted property is a finding of the configuration
                        findings = [*findings, *proof_findings(proof)]
                        status = "fail" if findings else status
                    group_ = waiting.pop(payload)
                    for i, (digest, written) in enumerate(group_):
                        cfg = by_digest[digest]
                        if err:
                            r = Result(digest, cfg.key, cfg.label, "not_analysed", "spec refused by threadmap",
                                       err[:400], spec=written.text, spec_hash=written.content_hash,
                                       kernels=list(cfg.kernels))
                        else:
                            r = Result(digest, cfg.key, cfg.label, status, findings=findings, warnings=warnings,
                                       costs=costs, spec=written.text,
                                       spec_hash=written.content_hash, kernels=list(cfg.kernels),
                                       seconds=secs if i == 0 else 0.0, proof=proof,
                                       prover=PROVER_VERSION if opts.prove else "")
                            if i == 0:
                                verified_by_hash[payload] = r
                            else:
                                report.shared_verifications += 1
                        record(r)
                    tick("verifying")
    finally:
        for f in futures:
            f.cancel()
        workers.close()


def resolve_against(want: str, identities: Sequence[str], db: Path, held: bool) -> str:
    """The header tree ``--compare`` names: an identity the store's rows hold, or the one tree
    of that version; ``held``: some configuration has a row under ``want`` itself (rows
    written before the store recorded their tree)."""
    if want in identities or held:
        return want
    identities = [i for i in identities if i]
    hits = [i for i in identities if i.split("+")[0] == want]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        trees = ", ".join(identities) or "no rows that name their header tree"
        raise SweepError(f"--compare {want}: {db} holds no rows of CUTLASS {want} (it holds: {trees}); sweep "
                         "those headers into it first")
    raise SweepError(f"--compare {want}: {db} holds several header trees of {want}: {', '.join(hits)}; name one")


#: per cost check, the count and the unit it is per (what a change of cost is measured in)
COST_RATIOS = {"coalescing": ("sectors", "requests", "sectors per request"),
               "bank_conflicts": ("wavefronts", "instructions", "wavefronts per instruction")}


def _place(e: dict[str, Any]) -> str:
    """Where a finding, warning or cost is: its check, stage, side and tensor (and its spec
    document, for a configuration of several)."""
    doc = e.get("document", 0)
    return " ".join(str(x) for x in (e["check"], e.get("stage"), e.get("side"), e.get("tensor") or None,
                                     f"(document {doc + 1})" if doc else None) if x is not None)


def _judged(r: Result, proofs: bool) -> tuple[str, list[dict[str, Any]]]:
    """A row's status and findings as compared: without its proof's findings where the other
    side has no proof (a property refuted on one side only is not a change of the headers)."""
    if proofs or r.status == "not_analysed":
        return r.status, r.findings
    kept = [f for f in r.findings if not str(f["check"]).startswith("prove ")]
    return ("fail" if kept else "pass"), kept


def compare_results(old: Result, new: Result) -> tuple[str, list[str]]:
    """How ``new`` differs from ``old`` (one configuration under two header trees): the
    verdict ("regression" when anything got worse: a status, a new finding or cost, more
    sectors or wavefronts per request; "improvement" when only better; "changed" when only
    the spec or a reason differs; "unchanged") and the changes, worst first.  Findings and
    costs are compared where both rows were analysed; proofs where both rows have one."""
    worse: list[str] = []
    better: list[str] = []
    other: list[str] = []
    rank = {"pass": 0, "fail": 1, "not_analysed": 2}
    proofs = bool(old.proof) and bool(new.proof)
    (was_status, was_found), (now_status, now_found) = _judged(old, proofs), _judged(new, proofs)
    if was_status != now_status:
        what = f"{was_status} -> {now_status}" + (f" ({_short(new.reason)})" if now_status == "not_analysed" else "")
        (worse if rank[now_status] > rank[was_status] else better).append(what)
    elif now_status == "not_analysed" and (old.reason_kind, old.reason) != (new.reason_kind, new.reason):
        other.append(f"reason: {_short(old.reason)} -> {_short(new.reason)}")
    if "not_analysed" not in (was_status, now_status):
        for (was_e, now_e), what in (((was_found, now_found), "finding"), ((old.warnings, new.warnings), "cost")):
            was, now = {_place(e) for e in was_e}, {_place(e) for e in now_e}
            worse += [f"new {what}: {c}" for c in sorted(now - was)]
            better += [f"{what} gone: {c}" for c in sorted(was - now)]
        olds = {_place(c): c["summary"] for c in old.costs}
        for c in new.costs:
            where = _place(c)
            if where not in olds or c["check"] not in COST_RATIOS:
                continue
            count, per, unit = COST_RATIOS[c["check"]]
            a, b = (s.get(count, 0) / max(1, s.get(per, 0)) for s in (olds[where], c["summary"]))
            if a != b:
                (worse if b > a else better).append(f"{where}: {a:g} -> {b:g} {unit}")
    if old.spec_hash != new.spec_hash and old.spec and new.spec:
        other.append("the spec differs (thread maps, layouts or copy atoms)")
    verdict = "regression" if worse else "improvement" if better else "changed" if other else "unchanged"
    return verdict, [*worse, *better, *other]


def compare(against: str, configs: Sequence[Configuration], results: dict[str, Result], stored: dict[str, Result],
            headers: str) -> Comparison:
    """Each configuration's result now against its stored row of the tree ``against``."""
    out = Comparison(against)
    for c in configs:
        new, old = results.get(c.digest(headers)), stored.get(c.digest(against))
        if new is None:
            continue
        if old is None:
            out.missing += 1
            continue
        out.compared += 1
        verdict, changes = compare_results(old, new)
        if verdict == "unchanged":
            out.unchanged += 1
            continue
        if verdict == "regression":
            out.regressions += 1
        elif verdict == "improvement":
            out.improvements += 1
        else:
            out.changed += 1
        out.rows.append(ChangeRow(c.label, c.kernels[0], len(c.kernels), verdict, changes))
    order = {"regression": 0, "improvement": 1, "changed": 2}
    out.rows.sort(key=lambda r: (order[r.verdict], -r.kernels, r.kernel))
    return out


def _short(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()[:240]


def _summarise(report: SweepReport, configs: Sequence[Configuration], results: dict[str, Result],
               headers: str) -> None:
    rows = {k.kind: KindRow(k.kind, k.kernels, k.configurations) for k in counts(configs)}
    findings: dict[tuple[str, str], FindingRow] = {}
    warnings: dict[tuple[str, str], FindingRow] = {}
    reasons: dict[str, ReasonRow] = {}
    proofs: dict[str, ProofRow] = {}
    unproved: dict[str, ReasonRow] = {}
    without_proof = 0
    for c in configs:
        row = rows[c.kind]
        if not in_slice(c):
            key = f"{c.kind} {c.family}" if c.family != "-" else c.kind
            report.not_in_slice[key] = report.not_in_slice.get(key, 0) + 1
            continue
        row.in_slice += 1
        r = results.get(c.digest(headers))
        if r is None:  # interrupted before this configuration finished
            continue
        n = len(c.kernels)
        if r.status == "not_analysed":
            row.not_analysed += 1
            rr = reasons.setdefault(r.reason_kind, ReasonRow(r.reason_kind, 0, 0, _short(r.reason)))
            rr.configurations += 1
            rr.kernels += n
        else:
            row.analysed += 1
            row.kernels_analysed += n
            if r.status == "pass":
                row.passed += 1
            else:
                row.with_findings += 1
            for entries, into in ((r.findings, findings), (r.warnings, warnings)):
                for check in sorted({f["check"] for f in entries}):
                    first = next(f for f in entries if f["check"] == check)
                    fr = into.setdefault((check, c.label), FindingRow(check, c.label, 0, 0, [],
                                                                      _short(first["message"])))
                    fr.configurations += 1
                    fr.kernels += n
                    fr.specs.append(spec_file_name(c.kernels[0], int(first.get("document", 0))))
        if r.proof:
            tally_proof(r.proof, c.kernels[0], n, proofs, unproved)
        elif r.status != "not_analysed":
            without_proof += 1
        report.configurations.append({"digest": r.digest, "label": c.label, "status": r.status,
                                      "reason_kind": r.reason_kind, "reason": r.reason, "findings": r.findings,
                                      "warnings": r.warnings, "costs": r.costs, "proof": r.proof,
                                      "kernels": list(c.kernels), "fields": c.fields})
    report.kinds = list(rows.values())
    report.findings = sorted(findings.values(), key=lambda f: (-f.kernels, f.check, f.family))
    report.warnings = sorted(warnings.values(), key=lambda f: (-f.kernels, f.check, f.family))
    report.reasons = sorted(reasons.values(), key=lambda r: (-r.configurations, r.reason))
    report.proofs = list(proofs.values())
    report.not_proved = without_proof if proofs else 0
    report.unproved = sorted(unproved.values(), key=lambda r: (-r.configurations, r.reason))


#: a property's verdicts, weakest first: a configuration's is its documents' strongest
VERDICT_RANK = ("PROVED", "UNKNOWN", "REFUTED")


def tally_proof(proof: Sequence[dict[str, Any]], kernel: str, kernels: int, proofs: dict[str, ProofRow],
                 unproved: dict[str, ReasonRow]) -> None:
    """Count one configuration's proof: per property its verdict over every document (refuted
    in one, else unknown in one, else proved; a document the prover stopped on is unknown in
    every property), and each class of reason for an unknown once."""
    from threadmap.prove import PROPERTIES

    verdicts: dict[str, str] = {}
    why: dict[str, str] = {}
    for doc in proof:
        for name in PROPERTIES:
            p = next((q for q in doc.get("properties", []) if q["property"] == name), None)
            status = "UNKNOWN" if p is None else p["status"]
            if status == "UNKNOWN":
                full = doc.get("error", "") if p is None else p["reason"]
                why.setdefault(_reason_class(full), f"{kernel}: {name}: {_short(full)}")
            if VERDICT_RANK.index(status) >= VERDICT_RANK.index(verdicts.get(name, "PROVED")):
                verdicts[name] = status
    for name, status in verdicts.items():
        row = proofs.setdefault(name, ProofRow(name))
        field_ = status.lower()
        setattr(row, field_, getattr(row, field_) + 1)
        setattr(row, f"kernels_{field_}", getattr(row, f"kernels_{field_}") + kernels)
    for reason, example in why.items():
        rr = unproved.setdefault(reason, ReasonRow(reason, 0, 0, example))
        rr.configurations += 1
        rr.kernels += kernels


def _reason_class(reason: str) -> str:
    """A reason with its numbers and sizes left out (what the summary groups by)."""
    text = re.sub(r"\d[\d,.]*", "N", _short(reason))
    if len(text) > 160:  # at a word's end
        text = text[:160].rsplit(" ", 1)[0] + " ..."
    return text or "no reason given"


def spec_documents(text: str) -> list[str]:
    """A stored spec's documents, each a whole spec that ``threadmap verify`` and the Layout
    Explorer read: one, or several for a configuration whose copies need more than one spec
    (a sparse GEMM whose metadata E only some warps copy)."""
    from threadmap.sweep.specs_sparse import DOCUMENT_SEPARATOR

    docs = text.split(DOCUMENT_SEPARATOR)
    if len(docs) == 1:
        return docs
    return [d if d.endswith("\n") else d + "\n" for d in docs]  # the separator took the newline


def spec_file_name(kernel: str, document: int = 0) -> str:
    """The file of a configuration's spec document (its first kernel's name; ``KERNEL.2.yaml``
    for its second document)."""
    return f"{kernel}.yaml" if document == 0 else f"{kernel}.{document + 1}.yaml"


def write_specs(report: SweepReport, results: dict[str, Result], out: Path) -> None:
    """One spec file per configuration with findings in ``out``, and per configuration with
    warnings only in ``out/warnings`` (folders created when missing); a configuration of
    several spec documents gets one file per document (each a spec ``threadmap verify`` reads)."""
    for c in report.configurations:
        r = results.get(c["digest"])
        if r is None or not r.spec or (r.status != "fail" and not r.warnings):
            continue
        folder = out if r.status == "fail" else out / "warnings"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SweepError(f"-o {out}: cannot create the folder {folder}: {e.strerror or e}") from None
        for i, doc in enumerate(spec_documents(r.spec)):
            path = folder / spec_file_name(c["kernels"][0], i)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(doc)
            tmp.replace(path)
