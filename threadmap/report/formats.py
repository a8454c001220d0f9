"""Report formats: terminal table (rich), JSON, JUnit XML and SARIF 2.1.0.

A *spec report* is a plain dict (JSON-serialisable):

    {"spec": name, "path": file, "sizes": {...}, "verdict": "pass"|"fail",
     "expected": "pass"|"fail", "as_expected": bool, "seconds": float,
     "results": [CheckResult.to_dict(), ...]}

Each result dict has ``check``, ``stage``, ``side``, ``status`` (PASS/FAIL/SKIP),
``summary`` (numbers), ``findings`` (each with ``message`` and ``witness``) and
``total_findings``.
"""

from __future__ import annotations

import json
from typing import Any
from xml.etree import ElementTree as ET

from threadmap import __version__

STATUS_STYLE = {"PASS": "green", "FAIL": "bold red", "SKIP": "yellow"}


def _witness_str(w: dict[str, Any] | None) -> str:
    if not w:
        return ""
    return " ".join(f"{k}={v}" for k, v in w.items())


def _summary_str(s: dict[str, Any] | None) -> str:
    if not s:
        return ""
    parts = []
    for k, v in s.items():
        if isinstance(v, float):
            v = f"{v:.3g}"
        parts.append(f"{k}={v}")
    return " ".join(parts)


def headline(r: dict[str, Any]) -> str:
    """The few numbers that matter for each check, for the terminal table."""
    s = r.get("summary") or {}
    c = r["check"]
    try:
        if c == "coverage":
            return (f"{s['accesses']} accesses / {s['elements']} elements, missing {s['missing']}, "
                    f"duplicates {s['duplicates']}, outside tile {s['out_of_tile']}")
        if c == "grid_coverage":
            proved = f" ({s['proved_by_tiling']} by tiling)" if s.get("proved_by_tiling") else ""
            return (f"covered {s['covered']}/{s['elements']}{proved}, duplicates {s['duplicates']}, "
                    f"out of bounds {s['out_of_bounds']}")
        if c == "predicates":
            pre = f"; needs {' and '.join(s['precondition'])}" if s.get("precondition") else ""
            return (f"out of bounds {s['out_of_bounds']}, lost {s['lost']}, "
                    f"straddling vectors {s['straddling']}{pre}")
        if c == "coalescing":
            return (f"{s['sectors_per_request']:.3g} sectors/request (ideal "
                    f"{s['ideal_sectors_per_request']:.3g}), {s['access_bits']}-bit, "
                    f"misaligned {s['misaligned']}")
        if c == "bank_conflicts":
            return (f"{s['wavefronts']} wavefronts / ideal {s['ideal_wavefronts']} "
                    f"(worst instruction {s['max_wavefronts']})")
        if c == "vectorize":
            return f"declared {s['declared_bits']}-bit, widest legal {s['max_legal_bits']}-bit"
        if c == "dataflow":
            return (f"{s.get('transform') or 'no transform'}: moved {s['moved']}, wrong "
                    f"{s['wrong_values']}, races {s['races']}, stale {s['stale_reads']}, "
                    f"uninitialised {s['uninitialised_reads']}")
    except (KeyError, TypeError, ValueError):
        pass
    return _summary_str({k: v for k, v in s.items() if not isinstance(v, dict | list)})


def _where(r: dict[str, Any]) -> str:
    st = r.get("stage")
    side = r.get("side")
    if st is None:
        return "-"
    return f"{st}" + (f".{side}" if side else "")


def render_table(reports: list[dict[str, Any]], console: Any = None, verbose: bool = False) -> None:
    """One table per spec: a row per check and stage, the first witness of each finding."""
    from rich.console import Console
    from rich.table import Table

    con = console or Console(highlight=False)
    for rep in reports:
        verdict = rep["verdict"].upper()
        exp = rep.get("expected")
        tail = "" if exp is None else (" (as expected)" if rep.get("as_expected") else
                                       f" (expected {exp.upper()})")
        title = f"{rep['spec']}  [{STATUS_STYLE[verdict]}]{verdict}[/]{tail}"
        sizes = ", ".join(f"{k}={v}" for k, v in rep.get("sizes", {}).items())
        how = "" if rep.get("exhaustive", True) else (
            f", {rep['blocks_simulated']} of {rep['blocks']} blocks simulated, interior proved by tiling")
        t = Table(title=title, caption=f"{rep.get('path', '')}  sizes: {sizes}{how}", title_justify="left",
                  caption_justify="left", expand=False)
        t.add_column("check")
        t.add_column("stage")
        t.add_column("status")
        t.add_column("summary", overflow="fold")
        t.add_column("witness", overflow="fold")
        for r in rep["results"]:
            if r["status"] == "PASS" and not verbose and r["check"] in ("vectorize", "predicates"):
                continue
            finds = r.get("findings") or []
            first = finds[0] if finds else {}
            wit = first.get("message", "")
            more = r.get("total_findings", len(finds)) - (1 if finds else 0)
            if more > 0:
                wit += f" (+{more} more)"
            t.add_row(r["check"], _where(r), f"[{STATUS_STYLE[r['status']]}]{r['status']}[/]",
                      headline(r), wit)
        con.print(t)


def to_json(reports: list[dict[str, Any]]) -> str:
    passed = sum(1 for r in reports if r["verdict"] == "pass")
    return json.dumps({"threadmap": __version__, "specs": len(reports), "passed": passed,
                       "failed": len(reports) - passed, "reports": reports}, indent=1, default=str)


def to_junit(reports: list[dict[str, Any]]) -> str:
    """JUnit XML: a testsuite per spec, a testcase per check result."""
    suites = ET.Element("testsuites", name="threadmap")
    for rep in reports:
        res = rep["results"]
        fails = sum(1 for r in res if r["status"] == "FAIL")
        skips = sum(1 for r in res if r["status"] == "SKIP")
        suite = ET.SubElement(suites, "testsuite", name=rep["spec"], tests=str(len(res)),
                              failures=str(fails), skipped=str(skips), time=f"{rep.get('seconds', 0):.3f}",
                              file=str(rep.get("path", "")))
        for r in res:
            case = ET.SubElement(suite, "testcase", classname=rep["spec"],
                                 name=f"{r['check']}[{_where(r)}]")
            if r["status"] == "FAIL":
                finds = r.get("findings") or []
                msg = finds[0]["message"] if finds else "failed"
                body = "\n".join(f"{f['message']}  {_witness_str(f.get('witness'))}" for f in finds)
                fe = ET.SubElement(case, "failure", message=msg, type=r["check"])
                fe.text = body + "\n" + _summary_str(r.get("summary"))
            elif r["status"] == "SKIP":
                ET.SubElement(case, "skipped", message=_summary_str(r.get("summary")))
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)


RULES = {
    "coverage": "Every thread touches the right elements exactly once.",
    "predicates": "Predicates are right for sizes the tile does not divide.",
    "coalescing": "Global accesses touch no more 32-byte sectors than needed.",
    "bank_conflicts": "Shared-memory accesses need no more wavefronts than ideal.",
    "vectorization": "Vector accesses are contiguous and aligned.",
    "dataflow": "The stages implement the declared transform without races.",
}


def to_sarif(reports: list[dict[str, Any]]) -> str:
    """SARIF 2.1.0: one result per failing check, located at the spec file (stage line when known)."""
    results = []
    rule_ids = sorted({r["check"] for rep in reports for r in rep["results"]} | set(RULES))
    for rep in reports:
        for r in rep["results"]:
            if r["status"] != "FAIL":
                continue
            finds = r.get("findings") or [{"message": "failed"}]
            f0 = finds[0]
            line = r.get("line") or rep.get("stage_lines", {}).get(str(r.get("stage")), 1)
            region = {"startLine": int(line)}
            results.append({
                "ruleId": r["check"],
                "level": "error",
                "message": {"text": f"{rep['spec']}: stage {_where(r)}: {f0['message']} "
                                    f"{_witness_str(f0.get('witness'))}".strip()},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": str(rep.get("path", rep["spec"]))},
                    "region": region}}],
                "properties": {"summary": r.get("summary", {}), "witness": f0.get("witness", {})},
            })
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "threadmap", "version": __version__,
                "rules": [{"id": rid, "shortDescription": {"text": RULES.get(rid, rid)}} for rid in rule_ids],
            }},
            "results": results,
        }],
    }
    return json.dumps(doc, indent=1, default=str)
