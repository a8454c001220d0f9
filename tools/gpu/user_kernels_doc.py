"""Rewrite the user-kernel table of docs/hardware.md from tools/gpu/user_kernels.sh's reports
(`threadmap gpu --exe` per program and size; the cp.async counters).

    python tools/gpu/user_kernels_doc.py docs/hardware/user_kernels
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from threadmap.gpu.report import GpuReport  # noqa: E402
from threadmap.gpu.user import UserKernelRun  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "hardware.md"
BEGIN, END = "<!-- BEGIN GENERATED (tools/gpu/user_kernels_doc.py) -->", "<!-- END GENERATED USER KERNELS -->"


def table(folder: Path) -> str:
    rows = ["| program | M = N | kind | sides | SASS | predicted (instructions x per instruction) | measured | "
            "agrees |", "|---|---|---|---|---|---|---|---|"]
    agree = total = 0
    def order(p: Path) -> tuple[str, int]:
        name, size = p.stem.rsplit("_", 1)
        return name, int(size)
    for f in sorted(folder.glob("user_*.json"), key=order):
        run = UserKernelRun.model_validate_json(f.read_text())
        name, size = f.stem.removeprefix("user_").rsplit("_", 1)
        sass = {f"stage {s.stage} {s.side}": ", ".join(sorted({i.split()[1] for i in s.instructions}))
                for s in run.compiled.sides}
        for k in run.kinds:
            total += 1
            agree += bool(k.agrees)
            unit = "wavefronts" if k.metric == "wavefronts_per_instruction" else "sectors/req"
            rows.append(f"| {name} | {size} | {k.memory} {k.op} | {', '.join(k.sides)} | "
                        f"{'; '.join(sass.get(s, '-') for s in k.sides)} | "
                        f"{k.predicted_instructions} x {k.predicted:g} {unit} | "
                        f"{k.measured_instructions:g} x {k.measured:g} | {'yes' if k.agrees else 'no'} |")
    out = [f"{agree} of {total} kinds of instruction predicted = measured (instructions or requests, and "
           "wavefronts per instruction or sectors per request).", "", *rows, ""]
    cp = folder / "cp_async.json"
    if cp.exists():
        rep = GpuReport.model_validate_json(cp.read_text())
        out += ["The library's cp.async stages (`threadmap gpu --counters`, behaviour kernels issuing `LDGSTS`):", "",
                "| spec | sizes | side | metric | predicted | measured | agrees |", "|---|---|---|---|---|---|---|"]
        for c in rep.counters:
            for sd in c.sides:
                sizes = ",".join(f"{k}={v}" for k, v in c.sizes.items())
                meas = "-" if sd.measured is None else f"{sd.measured:g}"
                verdict = "yes" if sd.agrees else "no" if sd.agrees is False else f"n/a: {sd.note}"
                # the CACHEALWAYS copies user_kernels.sh writes to a temporary folder
                spec = c.spec if c.spec.startswith("specs/") else \
                    f"{Path(c.spec).name.replace('_cachealways', '')} with `SM80_CP_ASYNC_CACHEALWAYS`"
                out.append(f"| {spec} | {sizes} | {sd.side} {sd.memory} {sd.op} | {sd.metric} | {sd.predicted:g} | "
                           f"{meas} | {verdict} |")
        out.append("")
    return "\n".join(out)


def main() -> None:
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(head + BEGIN + "\n" + table(Path(sys.argv[1])) + END + tail)


if __name__ == "__main__":
    main()
