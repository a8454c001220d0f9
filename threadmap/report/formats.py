"""Report formats of a :class:`~threadmap.report.model.VerifyReport`: terminal table (rich),
JSON, JUnit XML and SARIF 2.1.0.

Every text that comes from a spec (names, paths, messages) is made safe for where it goes:
rich markup is escaped and control characters are shown escaped on the terminal, XML gets
only the characters XML 1.0 allows, and SARIF messages are sentences.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any
from xml.etree import ElementTree as ET

from rich.markup import escape

from threadmap.report.model import RULES as CHECK_RULES
from threadmap.report.model import CheckResult, EngineReport, ProveReport, SpecRun, VerifyReport

STATUS_STYLE = {"PASS": "green", "FAIL": "bold red", "SKIP": "yellow"}

#: the SARIF rules: every check's (from the report model) and this layer's own pseudo-rules
RULES: dict[str, str] = {
    **CHECK_RULES,
    "spec": "The spec file is valid.",
    "verdict": "The verdict is the one the spec expects.",
    "disagreement": "A property proved for every size in range holds at every sample the enumeration checks.",
}

#: the rules of ``verify --kernel``'s findings (``compiled.<kind>``), described where they occur
COMPILED_RULES: dict[str, str] = {
    "compiled.compiled_width": "The compiled instruction moves the width the spec declares.",
    "compiled.unexplained_width": "The compiled width is a regrouping of the declared accesses.",
    "compiled.ambiguous_mapping": "Each stage side's SASS instructions are told apart from the others of its kind.",
    "compiled.missing_instruction": "The kernel has an instruction of each modelled side's kind.",
    "compiled.compiled_cp_async": "The compiled cp.async form is the one the spec declares.",
}

_XML_BAD = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def printable(text: str) -> str:
    """``text`` with control and unprintable characters shown as escapes (one line, safe on a
    terminal: no raw escape sequences)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in text)


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 forbids (control characters, lone surrogates)
    replaced by their escapes."""
    return _XML_BAD.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), text)


def _num(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def headline(r: CheckResult) -> str:
    """The few numbers that matter for each check, for the terminal table."""
    s = r.summary
    if s.check == "coverage":
        # masked rows outside a shared tensor make no access: named apart from the out-of-bounds ones
        masked = f", masked (predicate false) {s.masked}" if s.masked else ""
        return (f"{s.accesses} accesses / {s.elements} elements, missing {s.missing}, duplicates "
                f"{s.duplicates}, outside tile {s.out_of_tile}, out of bounds {s.out_of_bounds}{masked}")
    if s.check == "grid_coverage":
        alias = f", aliased {s.aliased}" if s.aliased else ""
        return (f"covered {s.covered}/{s.elements}, duplicates {s.duplicates}, out of bounds "
                f"{s.out_of_bounds}{alias}")
    if s.check == "predicates":
        pre = f"; needs {' and '.join(s.precondition)}" if s.precondition else ""
        return f"out of bounds {s.out_of_bounds}, lost {s.lost}, straddling vectors {s.straddling}{pre}"
    if s.check == "coalescing":
        return (f"{s.sectors_per_request:.3g} sectors/request (ideal {s.ideal_sectors_per_request:.3g}), "
                f"{s.requests} requests, {s.sectors} sectors, {s.access_bits}-bit, misaligned {s.misaligned}")
    if s.check == "bank_conflicts":
        return (f"{s.wavefronts} wavefronts / ideal {s.ideal_wavefronts} over {s.instructions} instructions "
                f"(worst {s.max_wavefronts}), {s.access_bits}-bit")
    if s.check == "vectorize":
        return f"declared {s.declared_bits}-bit, widest legal {s.max_legal_bits}-bit"
    if s.check == "dataflow":
        # missing is None where it is not judged (a sample of blocks, no transform): say nothing then
        missing = f", missing {s.missing}" if s.missing is not None else ""
        return (f"{s.transform or 'no transform'}: moved {s.moved}, wrong {s.wrong_values}{missing}, races "
                f"{s.races}, stale {s.stale_reads}, uninitialised {s.uninitialised_reads}, write-after-read "
                f"{s.writes_after_reads}")
    if s.check == "pipeline":
        tma = "; ".join(f"{t['copy']}: box {'x'.join(map(str, t['box_dim']))}, swizzle {t['swizzle']}, "
                        f"{t['bytes_per_issue']} B" for t in s.tma)
        kinds = ", ".join(f"{k} {v}" for k, v in s.by_kind.items())
        return (f"{s.stages} stages, roles {', '.join(s.roles)}; trip counts: {s.trip_counts}; {s.states} states"
                + (" (cut short)" if s.truncated else "") + (f"; {tma}" if tma else "")
                + (f"; {kinds}" if kinds else ""))
    return s.reason if s.check == "skip" else ""


def where(r: CheckResult) -> str:
    if r.stage is None:
        return "-"
    return f"{r.stage}" + (f".{r.side}" if r.side else "")


def run_label(run: SpecRun) -> str:
    """The spec's name and the sizes of this run (a spec with several size environments has one
    run per environment)."""
    sizes = ", ".join(f"{k}={v}" for k, v in run.sizes.items())
    return f"{run.spec} [{sizes}]" if sizes else run.spec


def how(run: SpecRun) -> str:
    """How the run's totals were obtained, for the table caption."""
    if run.totals == "enumerated" and run.blocks_simulated == 0:
        return "no per-thread copies: the pipeline alone"
    if run.totals == "enumerated":
        return f"every block simulated ({run.blocks})"
    if run.totals == "tiling":
        return f"{run.blocks_simulated} of {run.blocks} blocks simulated, whole-grid totals by tiling"
    return f"{run.blocks_simulated} of {run.blocks} blocks simulated, counts partial"


SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def render_table(report: VerifyReport, console: Any, verbose: bool = False) -> None:
    """One table per spec run: a row per check and stage, the first witness of each finding."""
    from rich.table import Table

    for run in report.runs:
        verdict = run.verdict.upper()
        tail = " (as expected)" if run.as_expected else f" (expected {run.expected.upper()})"
        title = f"{escape(printable(run.spec))}  [{STATUS_STYLE[verdict]}]{verdict}[/]{tail}"
        sizes = ", ".join(f"{k}={v}" for k, v in run.sizes.items())
        t = Table(title=title, caption=escape(f"{printable(run.path)}  " + (f"sizes: {sizes}; " if sizes else "")
                                              + how(run)),
                  title_justify="left", caption_justify="left", expand=False)
        for col in ("check", "stage", "status", "summary"):
            t.add_column(col, overflow="fold")
        t.add_column("witness", overflow="fold")
        for r in run.results:
            if r.status == "PASS" and not verbose and r.check in ("vectorize", "predicates"):
                continue
            lead = min(r.findings, key=lambda f: SEVERITY_ORDER[f.severity]) if r.findings else None
            first = lead.message if lead else ""
            # total_findings counts the lead too (warnings and notes as errors: a check counts every
            # finding it adds); a lead added uncounted leaves more <= 0, and nothing is shown
            more = r.total_findings - (1 if lead is not None else 0)
            if more > 0:
                first += f" (+{more} more)"
            t.add_row(r.check, where(r), f"[{STATUS_STYLE[r.status]}]{r.status}[/]", escape(headline(r)),
                      escape(printable(first)))
        console.print(t)
        for n in run.notes:
            console.print(f"  note: {escape(printable(n))}")
        if run.compiled is not None:
            render_compiled(run.compiled, console)


def counts_text(c: Any) -> str:
    """A side's per-instruction counts at one width, in one cell."""
    if c is None:
        return "-"
    if c.wavefronts_per_instruction is not None:
        return f"{c.instructions} x {c.wavefronts_per_instruction:g} wavefronts"
    if c.sectors_per_request is not None:
        return f"{c.requests} req x {c.sectors_per_request:g} sectors"
    return f"{c.instructions} instructions"


def short_name(name: str) -> str:
    """A kernel's name without its template arguments and parameters (``void f<...>(...)``
    -> ``f``), for titles; the reports keep the whole name."""
    head = name
    for i, ch in enumerate(name):
        if ch in "<(":
            head = name[:i]
            break
    return head.removeprefix("void ").strip() or name


def render_compiled(ck: Any, console: Any) -> None:
    """The compiled kernel's instructions per stage side, and the counts predicted at the
    compiled width beside the declared ones."""
    from rich.table import Table

    t = Table(title=escape(f"compiled kernel {printable(short_name(ck.demangled or ck.kernel))} "
                           f"({ck.arch}, {printable(ck.file)})"),
              title_justify="left", expand=False)
    for col in ("stage", "side", "SASS", "bits (declared / compiled)", "declared width", "compiled width"):
        t.add_column(col, overflow="fold")
    for cs in ck.sides:
        sass = ", ".join(cs.instructions[:4]) + (f" (+{len(cs.instructions) - 4})" if len(cs.instructions) > 4 else "")
        status = "" if cs.status == "mapped" else f"[bold]{cs.status}[/] "
        bits = f"{cs.declared_bits} / {cs.compiled_bits if cs.compiled_bits is not None else '-'}"
        t.add_row(str(cs.stage), f"{cs.side} {cs.memory} {escape(cs.tensor)}", status + escape(sass or "-"), bits,
                  counts_text(cs.declared), counts_text(cs.compiled))
    console.print(t)
    for f in ck.findings:
        console.print(f"  {f.severity}: {escape(printable(f.message))}")
    for cs in ck.sides:
        if cs.note:
            console.print(f"  stage {cs.stage} {cs.side}: {escape(printable(cs.note))}")
    if ck.unmatched:
        console.print(f"  unmatched instructions (no side stands for them): {escape(', '.join(ck.unmatched[:12]))}"
                      + (f" (+{len(ck.unmatched) - 12})" if len(ck.unmatched) > 12 else ""))
    if ck.unmodelled:
        console.print(f"  not modelled: {escape(', '.join(ck.unmodelled[:6]))}")


def compact_line(run: SpecRun) -> str:
    """One run in one line (rich markup): verdict, spec path and sizes, failing checks, and
    whether that is what the spec expects."""
    verdict = run.verdict.upper()
    sizes = ", ".join(f"{k}={v}" for k, v in run.sizes.items())
    where_ = escape(printable(run.path) + (f" [{sizes}]" if sizes else ""))
    failing = f": {', '.join(run.failing)}" if run.failing else ""
    tail = " (as expected)" if run.as_expected else f" [bold](expected {run.expected.upper()})[/]"
    return f"[{STATUS_STYLE[verdict]}]{verdict}[/] {where_}{failing}{tail}"


def render_compact(report: VerifyReport, console: Any) -> None:
    """One line per spec run (for a run over many specs; ``--details`` draws the tables)."""
    for run in report.runs:
        console.print(compact_line(run), soft_wrap=True)


def summary_line(report: VerifyReport) -> str:
    n = len(report.runs)
    unexp = sum(not r.as_expected for r in report.runs)
    line = (f"{n} spec runs: {report.passed} pass, {report.failed} fail; {n - unexp} as expected, "
            f"{unexp} not")
    if report.errors:
        line += f"; {len(report.errors)} spec{'s' if len(report.errors) > 1 else ''} could not be verified"
    return line


def to_json(report: VerifyReport | ProveReport) -> str:
    try:
        return report.model_dump_json(indent=1)
    except ValueError:  # a file name that is not UTF-8 (lone surrogates): show its bytes escaped
        return json.dumps(_fs_clean(report.model_dump(mode="json")), indent=1, ensure_ascii=False)


def _fs_clean(v: Any) -> Any:
    """Strings with the undecodable bytes of file names (``surrogateescape``) as ``\\xNN``."""
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") if not v.isprintable() else v
    if isinstance(v, dict):
        return {_fs_clean(k): _fs_clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_fs_clean(x) for x in v]
    return v


PROOF_STYLE = {"PROVED": "green", "REFUTED": "red", "UNKNOWN": "yellow"}


def render_proofs(report: ProveReport, console: Any) -> None:
    """One table per spec: a row per property with its status, method, time and evidence
    (the counterexample's sizes and first finding, or why it is unknown)."""
    from rich.table import Table

    for run in report.runs:
        ranges = ", ".join(f"{k} in {v}" if ".." in v else f"{k}={v}" for k, v in run.ranges.items())
        assume = ("; " if ranges else "") + f"assume {' and '.join(run.assume)}" if run.assume else ""
        t = Table(title=escape(printable(run.spec)), title_justify="left", caption_justify="left",
                  caption=escape(f"{printable(run.path)}  " + "; ".join(x for x in (ranges + assume,
                                 f"{run.bits}-bit encoding, {run.seconds:.2f} s") if x)), expand=False)
        for col in ("property", "status", "method", "time", "evidence"):
            t.add_column(col, overflow="fold")
        for p in run.properties:
            ev = p.reason + worst_text(p)
            if p.sizes is not None:
                ev = "at " + proof_text(p).split(" at ", 1)[1]  # the sizes lead: the table names the property
            elif p.classes:
                ev += f" ({p.classes} classes)" if "classes" not in ev else ""
            t.add_row(p.property, f"[{PROOF_STYLE[p.status]}]{p.status}[/]", p.method, f"{p.seconds:.2f} s",
                      escape(printable(ev)))
        console.print(t)


def proof_compact_line(run: Any) -> str:
    """One spec's proofs in one line (rich markup): the counts, and the properties that are
    not proved."""
    count = {st: [p.property for p in run.properties if p.status == st] for st in PROOF_STYLE}
    head = "REFUTED" if count["REFUTED"] else "UNKNOWN" if count["UNKNOWN"] else "PROVED"
    parts = [f"{len(count['PROVED'])} proved"]
    parts += [f"{st.lower()} {', '.join(names)}" for st, names in count.items() if st != "PROVED" and names]
    return f"[{PROOF_STYLE[head]}]{head}[/] {escape(printable(run.path))}: {'; '.join(parts)}"


def render_proofs_compact(report: ProveReport, console: Any) -> None:
    """One line per spec (for a run over many specs; ``--details`` draws the tables)."""
    for run in report.runs:
        console.print(proof_compact_line(run), soft_wrap=True)


def proof_summary_line(report: ProveReport) -> str:
    props = [p for r in report.runs for p in r.properties]
    count = {s: sum(p.status == s for p in props) for s in ("PROVED", "REFUTED", "UNKNOWN")}
    line = (f"{len(report.runs)} spec{'s' if len(report.runs) != 1 else ''}, {len(props)} properties: "
            f"{count['PROVED']} proved, {count['REFUTED']} refuted, {count['UNKNOWN']} unknown")
    if report.errors:
        line += f"; {len(report.errors)} spec{'s' if len(report.errors) > 1 else ''} could not be proved"
    return line


def witness_text(w: dict[str, Any] | None) -> str:
    """A witness as words: ``block 0, thread 1, value 2, coordinate (1, 0), address 260``."""
    if not w:
        return ""
    keys = ("block", "thread", "step", "value", "element", "warp_lane", "coordinate", "address")
    parts = [f"{k.replace('_', ' ')} {_fmt(w[k])}" for k in keys if k in w and w[k] is not None]
    for pair in ("first", "second"):
        sub = w.get(pair)
        if isinstance(sub, dict):
            parts.append(f"{pair} access ({witness_text(sub)})")
    return ", ".join(parts)


def _fmt(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "(" + ", ".join(_fmt(x) for x in v) + ")"
    return _num(v)


def to_junit(report: VerifyReport, check_expected: bool = False) -> str:
    """JUnit XML: a testsuite per spec run, a testcase per check result (plus, with
    ``check_expected``, a ``verdict`` testcase; expected failures then pass)."""
    suites = ET.Element("testsuites", name="threadmap")
    _verify_suites(suites, report, check_expected)
    return _junit_end(suites, report.errors)


def _verify_suites(suites: ET.Element, report: VerifyReport, check_expected: bool) -> None:
    for run in report.runs:
        cases: list[tuple[str, str | None, str]] = []  # (name, failure message or None, body)
        msg: str | None
        for r in run.results:
            name = f"{r.check}[{where(r)}]"
            if r.status == "FAIL" and not (check_expected and run.expects_failure(r.check)):
                msg = r.findings[0].message if r.findings else "failed"
                body = "\n".join(f"{f.message} ({witness_text(f.witness)})" for f in r.findings)
                cases.append((name, msg, body + "\n" + headline(r)))
            elif r.status == "SKIP":
                cases.append((name, None, "skipped: " + headline(r)))
            else:
                note = "failed as the spec expects: " + headline(r) if r.status == "FAIL" else headline(r)
                cases.append((name, None, note))
        ck = run.compiled
        findings = ck.findings if ck is not None else []
        for cs in ck.sides if ck is not None else []:  # verify --kernel: warnings, as in SARIF, not failures
            found = [f.message for f in findings if (f.stage, f.side) == (cs.stage, cs.side)]
            cases.append((f"compiled[{cs.stage}.{cs.side}]", None, "\n".join(
                [f"{cs.status}: {', '.join(cs.instructions) or '-'} ({cs.declared_bits} / "
                 f"{cs.compiled_bits if cs.compiled_bits is not None else '-'} bits declared / compiled); "
                 f"declared {counts_text(cs.declared)}, compiled {counts_text(cs.compiled)}",
                 *(f"warning: {m}" for m in found), *([cs.note] if cs.note else [])])))
        if check_expected:
            cases.append(("verdict", None if run.as_expected else
                          f"verdict {run.verdict}, the spec expects {run.expected}", ""))
        fails = sum(1 for _, m, _ in cases if m is not None)
        suite = ET.SubElement(suites, "testsuite", name=xml_text(run_label(run)), tests=str(len(cases)),
                              failures=str(fails), skipped="0", time=f"{run.seconds:.3f}", file=xml_text(run.path))
        for name, msg, body in cases:
            case = ET.SubElement(suite, "testcase", classname=xml_text(run_label(run)), name=xml_text(name))
            if msg is not None:
                fe = ET.SubElement(case, "failure", message=xml_text(msg), type=name.split("[")[0])
                fe.text = xml_text(body)
            elif body:
                so = ET.SubElement(case, "system-out")
                so.text = xml_text(body)


def _junit_end(suites: ET.Element, errors: Sequence[Any]) -> str:
    """A testsuite per invalid spec, and the document."""
    for e in errors:
        suite = ET.SubElement(suites, "testsuite", name=xml_text(e.path), tests="1", failures="0", errors="1")
        case = ET.SubElement(suite, "testcase", classname=xml_text(e.path), name="spec")
        err = ET.SubElement(case, "error", message=xml_text(e.message.splitlines()[0]), type=e.status)
        err.text = xml_text(e.message)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)


def prove_to_junit(report: ProveReport) -> str:
    """JUnit XML of proofs: a testsuite per spec, a testcase per property; REFUTED and
    UNKNOWN (never a pass) are failures."""
    suites = ET.Element("testsuites", name="threadmap prove")
    _prove_suites(suites, report)
    return _junit_end(suites, report.errors)


def _prove_suites(suites: ET.Element, report: ProveReport) -> None:
    for run in report.runs:
        fails = sum(p.status != "PROVED" for p in run.properties)
        suite = ET.SubElement(suites, "testsuite", name=xml_text(run.spec), tests=str(len(run.properties)),
                              failures=str(fails), skipped="0", time=f"{run.seconds:.3f}", file=xml_text(run.path))
        for p in run.properties:
            case = ET.SubElement(suite, "testcase", classname=xml_text(run.spec), name=p.property,
                                 time=f"{p.seconds:.3f}")
            if p.status == "PROVED":
                ET.SubElement(case, "system-out").text = xml_text(f"PROVED ({p.method}): {p.reason}")
            else:
                fe = ET.SubElement(case, "failure", message=xml_text(proof_text(p)), type=p.status)
                fe.text = xml_text("\n".join([proof_text(p), *(f.message for f in p.findings)]))


def engine_to_junit(report: EngineReport, check_expected: bool = False) -> str:
    """JUnit XML of ``verify --engine auto|both``: the enumeration's suites, the proofs'
    suites (``prove: SPEC``) and a ``disagreements`` suite with a failing case per
    disagreement."""
    suites = ET.Element("testsuites", name=f"threadmap verify --engine {report.engine}")
    _verify_suites(suites, report.verify, check_expected)
    first_proof = len(suites)
    _prove_suites(suites, report.prove)
    for suite in list(suites)[first_proof:]:
        suite.set("name", "prove: " + suite.get("name", ""))
    if report.disagreements:
        dis = ET.SubElement(suites, "testsuite", name="disagreements", tests=str(len(report.disagreements)),
                            failures=str(len(report.disagreements)), skipped="0")
        for i, text in enumerate(report.disagreements):
            case = ET.SubElement(dis, "testcase", classname="disagreements", name=f"disagreement {i + 1}")
            ET.SubElement(case, "failure", message=xml_text(text), type="disagreement").text = xml_text(text)
    return _junit_end(suites, report.verify.errors + report.prove.errors)


_LOC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): ")


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def to_sarif(report: VerifyReport, check_expected: bool = False) -> str:
    """SARIF 2.1.0: one result per failing check (located at its stage's line), per invalid
    spec, and, with ``check_expected``, per run whose verdict differs from the expected one
    (expected failures are then ``note``s)."""
    return _sarif_end(report.threadmap, _verify_results(report, check_expected), report.errors)


def _verify_results(report: VerifyReport, check_expected: bool) -> list[dict[str, Any]]:
    results = []
    for run in report.runs:
        for r in run.results:
            if r.status != "FAIL":
                continue
            expected = check_expected and run.expects_failure(r.check)
            f0 = r.findings[0] if r.findings else None
            text = f"{run_label(run)}: stage {where(r)}: " + (f0.message if f0 else f"{r.check} failed")
            wit = witness_text(f0.witness) if f0 else ""
            if wit:
                text = _sentence(text) + f" Witness: {wit}"
            if r.total_findings > 1:
                text = _sentence(text) + f" {r.total_findings - 1} more findings of this check."
            results.append(_sarif_result(r.check, "note" if expected else "error", _sentence(text), run.path,
                                         r.line or 1, {"summary": r.summary.model_dump(mode="json"),
                                                       "expected_failure": expected}))
        ck = run.compiled
        for f in ck.findings if ck is not None else []:
            results.append(_sarif_result(f"compiled.{f.kind}", "warning", _sentence(f"{run_label(run)}: {f.message}"),
                                         run.path, 1, {"kernel": ck.kernel if ck is not None else ""}))
        if check_expected and not run.as_expected:
            results.append(_sarif_result("verdict", "error",
                                         _sentence(f"{run_label(run)}: the verdict is {run.verdict}, the spec expects "
                                                   f"{run.expected}" + (f" with failing checks "
                                                                        f"{', '.join(run.expected_failing)}"
                                                                        if run.expected_failing else "")),
                                         run.path, 1, {}))
    return results


def _sarif_end(version: str, results: list[dict[str, Any]], errors: Sequence[Any]) -> str:
    """A result per invalid spec, and the document."""
    for e in errors:
        m = _LOC.match(e.message)
        line = int(m.group("line")) if m else 1
        results.append(_sarif_result("spec", "error", _sentence(e.message.splitlines()[0]), e.path, line, {}))
    rule_ids = sorted({r["ruleId"] for r in results} | set(RULES))
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "threadmap", "version": version, "informationUri": "https://pypi.org/project/threadmap/",
                "rules": [{"id": rid, "shortDescription": {"text": RULES.get(rid) or COMPILED_RULES.get(rid, rid)}}
                          for rid in rule_ids],
            }},
            "results": results,
        }],
    }
    return json.dumps(doc, indent=1)


def prove_to_sarif(report: ProveReport) -> str:
    """SARIF 2.1.0 of proofs: an ``error`` per REFUTED property (with its sizes and first
    finding), a ``warning`` per UNKNOWN one (with the reason), rule ``prove.<property>``."""
    return _sarif_end(report.threadmap, _prove_results(report), report.errors)


def _prove_results(report: ProveReport) -> list[dict[str, Any]]:
    return [_sarif_result(f"prove.{p.property}", "error" if p.status == "REFUTED" else "warning",
                          _sentence(f"{run.spec}: {proof_text(p)}"), run.path, 1,
                          {"status": p.status, "sizes": p.sizes, "precondition": p.precondition})
            for run in report.runs for p in run.properties if p.status != "PROVED"]


def engine_to_sarif(report: EngineReport, check_expected: bool = False) -> str:
    """SARIF 2.1.0 of ``verify --engine auto|both``: the enumeration's results, the proofs'
    (rules ``prove.<property>``) and an ``error`` per disagreement (rule ``disagreement``)."""
    results = _verify_results(report.verify, check_expected) + _prove_results(report.prove)
    for text in report.disagreements:
        path = text.split(": ", 1)[0]
        results.append(_sarif_result("disagreement", "error", _sentence(text), path, 1, {}))
    return _sarif_end(report.verify.threadmap, results, report.verify.errors + report.prove.errors)


def proof_text(p: Any) -> str:
    """One property's verdict in words: ``coverage REFUTED at N=612: ...``."""
    if p.sizes is None:
        return f"{p.property} {p.status}: {p.reason}" + worst_text(p)
    sizes = ", ".join(f"{k}={v}" for k, v in p.sizes.items())
    text = f"{p.property} {p.status} at {sizes}: " + (p.findings[0].message if p.findings else p.reason)
    return text + (f"; weakest precondition: {' and '.join(p.precondition)}" if p.precondition else "")


def worst_text(p: Any) -> str:
    """``; worst 18 sectors per request: stage 0 src, block (1, 0, 0), warp 0, step 0 at M=55, N=9``.

    The prover reports ``{"sectors": 0}`` and nothing else when no global warp instruction
    exists (a spec of shared and register stages only): then there is no instruction to name."""
    w = getattr(p, "worst", None)
    if not w or not w.get("sectors"):
        return ""
    text = f"; worst {w['sectors']} sectors per request"
    if "stage" not in w:
        return text
    at = ", ".join(f"{k}={v}" for k, v in (w.get("sizes") or {}).items())
    block = ", ".join(str(b) for b in w.get("block", ()))
    return (text + f": stage {w['stage']} {w.get('side', '')}, block ({block}), warp {w.get('warp')}, "
            f"step {w.get('step')}" + (f" at {at}" if at else ""))


def _uri(path: str) -> str:
    """A file path as a relative URI reference (RFC 3986): unsafe characters percent-encoded."""
    from urllib.parse import quote

    return quote(path.replace("\\", "/"), safe="/", errors="backslashreplace")


def _sarif_result(rule: str, level: str, text: str, path: str, line: int, props: dict[str, Any]) -> dict[str, Any]:
    return {"ruleId": rule, "level": level, "message": {"text": text},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(path)},
                                                "region": {"startLine": max(1, int(line))}}}],
            "properties": props}
