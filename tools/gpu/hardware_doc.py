"""Rewrite the generated tables of docs/hardware.md from a `threadmap gpu --json` report.

    python tools/gpu/hardware_doc.py docs/hardware/h200_run.json
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from threadmap.gpu.formats import to_markdown  # noqa: E402
from threadmap.gpu.report import GpuReport  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "hardware.md"
BEGIN, END = "<!-- BEGIN GENERATED (tools/gpu/hardware_doc.py) -->", "<!-- END GENERATED -->"


def main() -> None:
    report = GpuReport.model_validate_json(Path(sys.argv[1]).read_text())
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(head + BEGIN + "\n" + to_markdown(report) + END + tail)


if __name__ == "__main__":
    main()
