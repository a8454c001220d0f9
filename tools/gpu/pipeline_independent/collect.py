"""Gathers run.sh's per-case records and sanitizer logs into OUT_DIR/pipeline_h200.json and prints
one line per case.

    python3 tools/gpu/pipeline_independent/collect.py OUT_DIR

One record per case of cases.CASES, in its order::

    case, kernel, params, control, bug     (from cases.py)
    status          ok | wrong | hang | error  (hang wins over wrong: a hung run may also have
                    read wrong data first; its mismatches are kept)
    mismatches      elements that differed from the expected value
    first_mismatch  {cta, round, stage, warp, thread, smem_byte (absolute shared address),
                    ring_byte, row, col, expected, found, found_bits, ...} or null
                    (store cases: {launch, tile, row, col, expected, found, found_bits})
    hang            {cta, role: producer|consumer, round, stage, barrier: full|empty, thread,
                    parity}: the first wait of the CTA that outlived the watchdog; or
                    {role: process} when `timeout` had to kill the process; or null
    error           the CUDA error (status error)
    exit            the process's exit status
    sanitizer       {tool: its SUMMARY line(s)} where run.sh ran one; sanitizer_detail adds the
                    first report line, the overrides (fewer k-tiles...), the run's own status
    ...             the binary's other fields (checked, kernel_ms, ctas, tiles_wrong, ...)

Exit status 1 when a control case (all parameters correct) is not ``ok``: the harness, not the
hardware, is then in question.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _cases() -> dict[str, dict[str, Any]]:
    spec = importlib.util.spec_from_file_location("pipeline_cases", HERE / "cases.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CASES  # type: ignore[no-any-return]


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _rc(path: Path) -> int | None:
    text = _read(path).strip()
    return int(text) if text.lstrip("-").isdigit() else None


def _record(out: Path, stem: str) -> tuple[dict[str, Any] | None, int | None, str]:
    """The binary's JSON record (None when it printed none), its exit status, its stderr's tail."""
    lines = [ln for ln in _read(out / f"{stem}.json").splitlines() if ln.startswith("{")]
    rec = None
    if lines:
        try:
            rec = json.loads(lines[-1])
        except json.JSONDecodeError:
            rec = None
    err = "\n".join(_read(out / f"{stem}.err").strip().splitlines()[-5:])
    return rec, _rc(out / f"{stem}.rc"), err


def _no_record(rc: int | None, err: str) -> dict[str, Any]:
    # `timeout` exits 124 (137 after its KILL): the process outlived the limit despite the watchdog
    if rc in (124, 137):
        return {"status": "hang", "hang": {"role": "process", "note": f"timeout killed it (exit {rc})"}}
    return {"status": "error", "error": f"exit {rc}, no record; stderr: {err}"}


def _sanitizer(log: str) -> tuple[str, str]:
    """(the summary lines, the first report line) of a compute-sanitizer log."""
    tagged = [ln[len("=========") :].strip() for ln in log.splitlines() if ln.startswith("=========")]
    tagged = [ln for ln in tagged if ln]
    summary = "; ".join(ln for ln in tagged if "SUMMARY" in ln)
    reports = [ln for ln in tagged if "SUMMARY" not in ln and not ln.startswith("COMPUTE-SANITIZER")]
    if not log.strip():
        summary = "no log"
    elif not summary:
        summary = "no summary line (the run was cut short?)"
    return summary, reports[0] if reports else ""


def collect(out: Path) -> list[dict[str, Any]]:
    records = []
    san_dir = out / "san"
    for name, case in _cases().items():
        rec, rc, err = _record(out / "runs", name)
        base: dict[str, Any] = {
            "case": name,
            "kernel": case["kernel"],
            "params": case["params"],
            "control": case["control"],
            "bug": case["bug"],
            "status": None,
            "mismatches": 0,
            "first_mismatch": None,
            "hang": None,
        }
        base.update(rec if rec is not None else _no_record(rc, err))
        base["exit"] = rc
        sanitizer: dict[str, str] = {}
        detail: dict[str, Any] = {}
        for log in sorted(san_dir.glob(f"{name}.*.log")):
            tool = log.name[len(name) + 1 : -len(".log")]
            summary, first = _sanitizer(_read(log))
            srec, src, serr = _record(san_dir, f"{name}.{tool}")
            sanitizer[tool] = summary
            detail[tool] = {
                "summary": summary,
                "first_report": first,
                "exit": src,
                "overrides": _read(san_dir / f"{name}.{tool}.args").split(),
                "status": (srec or _no_record(src, serr))["status"],
                "mismatches": (srec or {}).get("mismatches"),
            }
        if sanitizer:
            base["sanitizer"] = sanitizer
            base["sanitizer_detail"] = detail
        records.append(base)
    return records


def main(argv: list[str]) -> int:
    out = Path(argv[1])
    records = collect(out)
    (out / "pipeline_h200.json").write_text(json.dumps(records, indent=1) + "\n")
    bad = []
    for r in records:
        extra = ""
        if r.get("first_mismatch"):
            f = r["first_mismatch"]
            where = f"round {f.get('round')} stage {f.get('stage')}" if "round" in f else f"tile {f.get('tile')}"
            extra = f" first: {where} expected {f.get('expected')} found {f.get('found')}"
        if r.get("hang"):
            h = r["hang"]
            extra += f" hang: {h.get('role')} round {h.get('round')} stage {h.get('stage')} {h.get('barrier')}"
        if r.get("error"):
            extra += f" error: {r['error']}"
        if "tiles_wrong" in r:
            extra += f" tiles wrong {r['tiles_wrong']}/{r['tiles_checked']}"
        for tool, summary in r.get("sanitizer", {}).items():
            extra += f" [{tool}: {summary}]"
        print(f"{r['case']:28s} {str(r['status']):6s} mismatches {r['mismatches']}{extra}")
        if r["control"] and r["status"] != "ok":
            bad.append(r["case"])
    if bad:
        print("control cases not ok:", " ".join(bad))
    print(f"{len(records)} cases -> {out / 'pipeline_h200.json'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
