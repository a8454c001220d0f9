"""Assertion helpers: verify a spec inside your own tests, with failures that read like the
command line's report.

::

    from threadmap.testing.assertions import assert_coalesced, assert_conflict_free, assert_spec

    def test_transpose_kernel():
        assert_spec("specs/cute_transpose/row_smem.yaml")             # as its expect block says
        assert_conflict_free("specs/cute_transpose/row_smem_swizzled.yaml")
        assert_coalesced({"spec": 1, "name": "k", ...}, sizes={"M": 1000})

``spec`` is a path, a mapping of the spec's fields, or a :class:`~threadmap.spec.load.LoadedSpec`.
Every helper returns the :class:`~threadmap.report.model.SpecRun` s (one per size
environment) for further assertions, and raises :class:`AssertionError` whose message has a
headline, one line per check and stage (status and summary), and each failing finding with
its witness and the ``FILE:LINE`` of its stage.  An invalid spec raises
:class:`threadmap.errors.SpecError` (``FILE:LINE:COL: field.path: message``), not an
assertion error: the test is broken, not the kernel.

:func:`explain` and :func:`matches_expect` are the pieces the pytest plugin
(:mod:`threadmap.pytest_plugin`) shares, so a spec item and an assertion fail alike.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from threadmap.api import SpecLike
    from threadmap.report.model import CheckResult, Finding, SpecRun
    from threadmap.spec.load import LoadedSpec

__all__ = ["Expect", "assert_coalesced", "assert_conflict_free", "assert_covers", "assert_dsl_partitions",
           "assert_spec", "explain",
           "matches_expect", "run_spec"]

#: how a run is judged: ``"spec"`` by the spec's ``expect:`` block (as ``threadmap verify
#: --check-expected``), ``"pass"`` every check that ran must pass whatever the spec expects
Expect = Literal["spec", "pass"]

#: failing findings shown per check result (the rest are counted)
SHOWN_FINDINGS = 3


def _canonical(name: str) -> str:
    from threadmap.verify.check import canonical

    return canonical(name)


def _expected_failing(run: SpecRun, ran: Collection[str] | None = None) -> set[str]:
    """The checks the spec expects to fail, restricted to the checks that ran (``ran``)."""
    exp = {_canonical(c) for c in run.expected_failing}
    return exp if ran is None else exp & set(ran)


def matches_expect(run: SpecRun, checks: Collection[str] | None = None) -> bool:
    """Whether ``run`` is as the spec's ``expect:`` block says.

    With every check run (``checks`` None) this is ``run.as_expected``: the verdict is the
    expected one and every check in ``failing_checks`` fails.  With only some checks run, the
    expect block is judged on those: a spec expected to fail only in checks that did not run
    is expected to pass them.
    """
    if checks is None:
        return run.as_expected
    ran = {_canonical(r.check) for r in run.results}
    exp_fail = _expected_failing(run, ran)
    if exp_fail or not run.expected_failing:
        expected = "fail" if exp_fail else run.expected
    else:  # every check expected to fail was left out
        expected = "pass"
    return run.verdict == expected and exp_fail <= {_canonical(c) for c in run.failing}


def _expect_text(run: SpecRun) -> str:
    if run.expected == "fail" and run.expected_failing:
        return f"FAIL in {', '.join(run.expected_failing)}"
    return run.expected.upper()


def _line_of(run: SpecRun, r: CheckResult, f: Finding | None, loaded: LoadedSpec | None) -> str:
    """``FILE:LINE`` of the stage a finding belongs to (the check's stage, else the finding's),
    or just the file when the stage is not known."""
    stage = r.stage if r.stage is not None else (f.stage if f is not None else None)
    line = r.line if r.stage is not None else None
    if line is None and stage is not None and loaded is not None:
        try:  # the loader recorded where every stage starts: FILE:LINE:COL
            line = int(loaded.where("stages", stage).rsplit(":", 2)[1])
        except (ValueError, IndexError, KeyError, TypeError):
            line = None
    return f"{run.path}:{line}" if line is not None else run.path


def explain(runs: Sequence[SpecRun], *, loaded: LoadedSpec | None = None, judge: Expect = "spec",
            checks: Collection[str] | None = None, findings: int = SHOWN_FINDINGS, verbose: bool = False) -> str:
    """The report of ``runs`` as text: per run a title line (verdict, and with ``judge="spec"``
    what the spec expects), one line per check and stage (status, check, stage, summary),
    the notes, then each failing check's findings with their witness, located at
    ``FILE:LINE`` of their stage (``loaded`` locates the stages of whole-kernel findings),
    and, with ``judge="spec"``, the summary line of ``threadmap verify``.  As in its table,
    passing ``vectorize`` and ``predicates`` rows are left out unless ``verbose``; of several
    runs, those that are right show only their title line."""
    from threadmap.report.formats import headline, printable, run_label, summary_line, where, witness_text
    from threadmap.report.model import VerifyReport
    from threadmap.version import __version__

    out: list[str] = []
    for run in runs:
        ran = {_canonical(r.check) for r in run.results} if checks is not None else None
        exp_fail = _expected_failing(run, ran)
        if judge == "spec":
            ok = matches_expect(run, checks)
            tail = " (as expected)" if ok else f" (the spec expects {_expect_text(run)})"
        else:
            tail = ""
        out.append(f"{printable(run_label(run))}: {run.verdict.upper()}{tail}")
        if len(runs) > 1 and (matches_expect(run, checks) if judge == "spec" else run.verdict == "pass"):
            continue  # of several size environments, detail only the ones that are wrong
        width = max((len(r.check) for r in run.results), default=0)
        swidth = max((len(where(r)) for r in run.results), default=0)
        for r in run.results:
            if r.status == "PASS" and not verbose and r.check in ("vectorize", "predicates"):
                continue
            mark = "  (expected by the spec)" if (judge == "spec" and r.status == "FAIL"
                                                 and _canonical(r.check) in exp_fail) else ""
            out.append(f"  {r.status:<4}  {r.check:<{width}}  {where(r):<{swidth}}  {headline(r)}{mark}")
        out.extend(f"  note: {printable(n)}" for n in run.notes)
        for r in run.results:
            if r.status != "FAIL":
                continue
            errors = [f for f in r.findings if f.severity == "error"] or r.findings
            first = errors[0] if errors else None
            expected = " (expected by the spec)" if judge == "spec" and _canonical(r.check) in exp_fail else ""
            stage = f" at stage {where(r)}" if r.stage is not None else ""
            out.append(f"{_line_of(run, r, first, loaded)}: {r.check}{stage} fails{expected}: "
                       f"{r.total_findings} finding{'s' if r.total_findings != 1 else ''}")
            for f in errors[:findings]:
                at = ""
                if r.stage is None and f.stage is not None:  # a whole-kernel check: locate each finding
                    at = f" [stage {f.stage}{'.' + f.side if f.side else ''}, {_line_of(run, r, f, loaded)}]"
                out.append(f"    {printable(f.message)}{at}")
                w = witness_text(f.witness)
                if w:
                    out.append(f"      witness: {printable(w)}")
            more = r.total_findings - min(len(errors), findings)
            if more > 0:
                out.append(f"    (+{more} more)")
    if judge == "spec":  # its "as expected" counts mean nothing when every check must pass
        out.append(summary_line(VerifyReport(threadmap=__version__, runs=list(runs))))
    return "\n".join(out)


def run_spec(spec: SpecLike, *, sizes: Mapping[str, int] | None = None,
             checks: Iterable[str] | None = None) -> tuple[LoadedSpec, list[SpecRun]]:
    """Load and verify ``spec`` (path, mapping or loaded spec): the loaded spec (it locates
    stages for the messages) and one run per size environment.  An invalid spec raises
    :class:`threadmap.errors.SpecError` from here, without the loader's frames (its message
    locates the problem in the spec file)."""
    __tracebackhide__ = True
    import threadmap.api as api
    from threadmap.errors import ThreadmapError
    from threadmap.verify import WorkTooLarge

    try:
        loaded = api.load(spec, sizes)
        return loaded, api.verify_spec(loaded, checks=checks)
    except (ThreadmapError, WorkTooLarge) as e:
        # the message says what and where; threadmap's own frames would only hide it
        raise e.with_traceback(None) from None


def _spec_arg(spec: Any) -> Any:
    """A spec argument: a path, a mapping, a loaded spec, or spec text (YAML or JSON with a
    newline); anything else is a TypeError that says so."""
    from pathlib import Path

    from threadmap.spec.load import LoadedSpec, loads_spec
    if isinstance(spec, str) and "\n" in spec:
        return loads_spec(spec, "json" if spec.lstrip().startswith("{") else "yaml", "<text>")
    if isinstance(spec, (str, Path, LoadedSpec, Mapping)):
        return spec
    raise TypeError(f"a spec is a path, a mapping of its fields, spec text or a LoadedSpec, got {spec!r}")


def _name(runs: Sequence[SpecRun], spec: SpecLike) -> str:
    from threadmap.report.formats import printable

    if runs:
        return printable(f"{runs[0].spec} ({runs[0].path})")
    return printable(str(getattr(spec, "path", spec)))


def assert_spec(spec: SpecLike, *, sizes: Mapping[str, int] | None = None,
                checks: Iterable[str] | None = None, expect: Expect = "spec") -> list[SpecRun]:
    """Verify ``spec`` and raise :class:`AssertionError` unless every run is as expected.

    ``expect="spec"`` (default) judges by the spec's ``expect:`` block, as ``threadmap verify
    --check-expected`` does: a spec that expects ``verdict: fail`` with ``failing_checks:
    [bank_conflicts]`` passes when those checks fail.  ``expect="pass"`` requires every check
    that ran to pass, whatever the spec expects.  ``checks`` runs only those checks (the
    expect block is then judged on them); ``sizes`` overrides the spec's named sizes.
    """
    __tracebackhide__ = True
    if isinstance(checks, str):
        checks = [c for c in checks.split(",") if c.strip()]  # one name, or "a,b" as on the command line
    check_list = list(checks) if checks is not None else None
    loaded, runs = run_spec(_spec_arg(spec), sizes=sizes, checks=check_list)
    if expect == "pass":
        bad = [r for r in runs if r.verdict != "pass"]
        if bad:
            failing = sorted({c for r in bad for c in r.failing})
            raise AssertionError(f"threadmap: {_name(runs, spec)} fails {', '.join(failing)}\n"
                                 + explain(runs, loaded=loaded, judge="pass", checks=check_list))
        return runs
    if expect != "spec":
        raise ValueError(f"expect must be 'spec' or 'pass', not {expect!r}")
    bad = [r for r in runs if not matches_expect(r, check_list)]
    if bad:
        r0 = bad[0]
        raise AssertionError(f"threadmap: {_name(runs, spec)} is not as its expect block says: verdict "
                             f"{r0.verdict.upper()}, expected {_expect_text(r0)}\n"
                             + explain(runs, loaded=loaded, checks=check_list))
    return runs


#: the expectation each helper tightens when the spec sets none: no conflicts, ideal sectors
_STRICT = {"bank_conflicts": ("bank_conflicts", 0), "coalescing": ("sectors_per_request", 1.0)}


def _strict(spec: SpecLike, check: str, sizes: Mapping[str, int] | None) -> LoadedSpec:
    """``spec`` loaded, with the check's allowance set to none where the spec sets none (the
    verifier only fails conflicts and extra sectors against an expectation)."""
    import dataclasses

    import threadmap.api as api
    loaded = api.load(spec, sizes)
    if check in _STRICT:
        key, strict = _STRICT[check]
        if getattr(loaded.spec.expect, key) is None:
            expect = loaded.spec.expect.model_copy(update={key: strict})
            loaded = dataclasses.replace(loaded, spec=loaded.spec.model_copy(update={"expect": expect}))
    return loaded


def _assert_checks(spec: SpecLike, check: str, what: str, sizes: Mapping[str, int] | None) -> list[SpecRun]:
    __tracebackhide__ = True
    from threadmap.errors import ThreadmapError
    try:
        spec = _strict(_spec_arg(spec), check, sizes)
    except ThreadmapError as e:
        raise e.with_traceback(None) from None
    loaded, runs = run_spec(spec, checks=[check])
    if not any(r.check in (check, "grid_coverage", "predicates") for run in runs for r in run.results):
        raise AssertionError(f"threadmap: {_name(runs, spec)}: nothing to check for {check} (no stage has a side "
                             f"it applies to)")
    failed = [r for run in runs for r in run.results if r.status == "FAIL"]
    if failed:
        from threadmap.report.formats import where

        at = ", ".join(dict.fromkeys(f"{r.check} at {where(r)}" for r in failed))
        raise AssertionError(f"threadmap: {_name(runs, spec)} {what}: {at}\n"
                             + explain(runs, loaded=loaded, judge="pass", checks=[check]))
    return runs


def assert_covers(spec: SpecLike, *, sizes: Mapping[str, int] | None = None) -> list[SpecRun]:
    """Raise :class:`AssertionError` unless every thread covers its tile exactly and the grid
    covers every tensor element exactly once (checks ``coverage``, ``grid_coverage`` and
    ``predicates``, which are decided together), whatever the spec expects."""
    __tracebackhide__ = True
    return _assert_checks(spec, "coverage", "does not cover its tensors exactly", sizes)


def assert_conflict_free(spec: SpecLike, *,
                         sizes: Mapping[str, int] | None = None) -> list[SpecRun]:
    """Raise :class:`AssertionError` unless no shared-memory access needs more wavefronts
    than ideal (check ``bank_conflicts``; the spec's ``expect.bank_conflicts`` allowance when
    it sets one, else none), whatever else the spec expects."""
    __tracebackhide__ = True
    return _assert_checks(spec, "bank_conflicts", "has shared-memory bank conflicts", sizes)


def assert_coalesced(spec: SpecLike, *, sizes: Mapping[str, int] | None = None) -> list[SpecRun]:
    """Raise :class:`AssertionError` unless global accesses touch no more 32-byte sectors than
    needed (the spec's ``expect.sectors_per_request`` bound when it sets one, else the ideal)
    and vectors are aligned (check ``coalescing``), whatever else the spec expects."""
    __tracebackhide__ = True
    return _assert_checks(spec, "coalescing", "is not coalesced", sizes)


def _as_spec(x: Any) -> Any:
    """A spec argument, or a :class:`threadmap.Spec` builder loaded (told by its methods: the
    builder sits on this module's layer)."""
    if callable(getattr(x, "load", None)) and callable(getattr(x, "to_dict", None)):
        return x.load()
    return _spec_arg(x)


def _assert_proved(loaded: LoadedSpec, expect: Expect) -> None:
    """Prove ``loaded`` over its size ranges and raise unless the proof is as its ``expect:``
    block says (``expect="pass"``: every property PROVED)."""
    __tracebackhide__ = True
    import threadmap.api as api
    from threadmap.prove.expected import run_mismatches

    rep = api.verify([loaded], engine="z3")
    if rep.prove.errors:
        raise AssertionError(f"threadmap prove: {rep.prove.errors[0].path}: {rep.prove.errors[0].message}")
    exp = loaded.spec.expect
    for run in rep.prove.runs:
        bad = (run_mismatches(run, exp.verdict, list(exp.failing_checks)) if expect == "spec"
               else [f"{p.property} is {p.status}: {p.reason}" for p in run.properties if p.status != "PROVED"])
        if bad:
            raise AssertionError(f"threadmap prove: {run.spec} ({run.path}) is not as expected for every size in "
                                 f"{run.ranges}:\n  " + "\n  ".join(bad))


def assert_dsl_partitions(build: Callable[..., Any], *args: Any, expect: Expect = "spec",
                          checks: Iterable[str] | None = None, sizes: Mapping[str, int] | None = None,
                          prove: bool = False, **kwargs: Any) -> list[SpecRun]:
    """Verify the partitions of a kernel written with NVIDIA's CuTe DSL, inside pytest, without
    a GPU.

    ``build(*args, **kwargs)`` runs inside a ``@cute.jit`` trace (:func:`threadmap.dsl.traced`):
    it calls the kernel's own helpers to build its layouts, tiled copies and tiled MMAs and
    returns a :class:`threadmap.Spec` written with them (the builder converts each DSL object
    exactly, :func:`threadmap.dsl.convert`), or a list of specs.  Each spec is then verified as
    :func:`assert_spec` does (``expect``, ``checks``, ``sizes``); with ``prove=True`` a spec that
    gives size ranges is also proved for every size in them (``threadmap prove``) and must be as
    its ``expect:`` block says.  Returns the runs of every spec.  Needs the DSL
    (``pip install 'threadmap[dsl]'``)."""
    __tracebackhide__ = True
    import threadmap.api as api
    from threadmap.dsl.convert import traced

    out = traced(build, *args, **kwargs)
    items = list(out) if isinstance(out, (list, tuple)) else [out]
    if not items:
        raise TypeError(f"{getattr(build, '__name__', build)!s} returned no spec")
    runs: list[SpecRun] = []
    for item in items:
        loaded = _as_spec(item)
        runs.extend(assert_spec(loaded, sizes=sizes, checks=checks, expect=expect))
        if prove:
            whole = api.load(loaded)  # the spec's own ranges, whatever sizes the runs used
            if api.has_range(whole):
                _assert_proved(whole, expect)
    return runs
