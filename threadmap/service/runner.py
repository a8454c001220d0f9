"""One job in a child process: ``python -m threadmap.service.runner MEMORY_MB`` reads the job
(JSON: text, format, name, options) on stdin and writes ``{"report", "exit_status"}`` on stdout,
progress records on stderr.

The address-space limit is set before threadmap (numpy, z3) is imported, so an allocation
past it fails inside this process as a MemoryError (exit status 70), not in the server.
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any

MEMORY_EXIT = 70  # threadmap.service.jobs.MEMORY_EXIT
#: the largest tile a request may have drawn (a cell is a few hundred bytes of SVG)
MAX_DRAWN_CELLS = 1 << 16


def _limit_memory(mb: int) -> None:
    if mb > 0:
        limit = mb << 20
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


def _layout(expr: str, ops: list[str]) -> dict[str, Any]:
    """The calculator's answer (``threadmap layout EXPR OPS...``), or ``{"error"}``."""
    import threadmap.layout as L
    from threadmap.errors import ThreadmapError
    from threadmap.layout.calculator import Show, run_layout
    try:
        steps = run_layout([expr, *ops])
    except (ThreadmapError, ValueError, ArithmeticError, TypeError, IndexError, RecursionError) as e:
        return {"error": str(e) or type(e).__name__}
    result = steps[-1][1]
    out: dict[str, Any] = {"expr": expr, "ops": ops, "input": str(steps[0][1])}
    lay = result.layout if isinstance(result, Show) else result
    if isinstance(lay, L.Layout) or hasattr(lay, "layout_b"):
        out["result"] = str(lay)
        out["size"] = int(L.size(lay))
        out["cosize"] = int(L.cosize(lay))
        if L.rank(lay) == 2 and L.size(lay) <= 4096:
            out["grid"] = L.layout_grid(lay).tolist()
    elif isinstance(result, list):
        out["result"] = " ".join(str(v) for v in result[:4096]) + (" ..." if len(result) > 4096 else "")
    else:
        out["result"] = str(result)
    return {"layout": out}


def _svg(job: dict[str, Any]) -> dict[str, Any]:
    """One stage's pictures (``threadmap show --svg``), or ``{"error"}``."""
    import numpy as np

    from threadmap import api
    from threadmap.errors import ThreadmapError
    from threadmap.spec.load import loads_spec, with_sizes
    try:
        loaded = loads_spec(job["text"], job["format"], job["name"])
        if job["options"].get("sizes"):
            loaded = with_sizes(loaded, job["options"]["sizes"])
        stage = job.get("stage")
        model = api.models(loaded)[0]
        for cp in model.copies():
            for side in (cp.src, cp.dst):
                cells = int(np.prod(side.tile, dtype=np.int64)) if side.tensor is not None else 0
                if (stage is None or cp.index == stage) and cells > MAX_DRAWN_CELLS:
                    return {"error": f"stage {cp.index} {side.which}: a tile of {cells} elements; pictures are "
                                     f"drawn for tiles of at most {MAX_DRAWN_CELLS} (pick a stage with ?stage=N, "
                                     "or use threadmap show --svg on a smaller tile)"}
        return {"svg": api.show(loaded, stage=stage, block=int(job.get("block") or 0), svg=True).svg or ""}
    except (ThreadmapError, ValueError, IndexError, ArithmeticError) as e:
        return {"error": str(e) or type(e).__name__}


def run(job: dict[str, Any], on_progress: Any = None) -> dict[str, Any]:
    """One job: verify or prove a spec (``on_progress({"done", "total"})`` is called as it
    goes; default: a progress line on stderr), or for a request, draw a stage
    (``kind: svg``) or run the calculator (``kind: layout``)."""
    if job.get("kind") == "layout":
        return _layout(job["expr"], list(job.get("ops") or []))
    if job.get("kind") == "svg":
        return _svg(job)
    from threadmap import __version__
    from threadmap.report.model import ProveReport, VerifyReport
    from threadmap.report.model import SpecError as SpecErrorModel
    from threadmap.service.jobs import PROGRESS_MARK, Limits, Options, validate

    opts = job["options"]
    options = Options.of(opts.get("checks"), opts.get("engine", "verify"), opts.get("sizes") or None,
                         opts.get("exhaustive", False))
    try:
        req = validate(job["text"], job["format"], job["name"], options, Limits(max_environments=1 << 30,
                                                                               max_blocks=1 << 62))
    except Exception as e:  # noqa: BLE001 - the server validated it; report whatever changed
        report: Any = VerifyReport(threadmap=__version__, runs=[],
                                   errors=[SpecErrorModel(path=job["name"], message=str(e))])
        return {"report": report.model_dump(mode="json"), "exit_status": 2}
    if options.engine == "prove":
        from threadmap.prove.run import prove_loaded
        from threadmap.report.formats import prove_to_junit, prove_to_sarif
        prove = ProveReport(threadmap=__version__, runs=[prove_loaded(req.loaded)])
        return {"report": prove.model_dump(mode="json"), "exit_status": prove.exit_code,
                "sarif": prove_to_sarif(prove), "junit": prove_to_junit(prove)}
    from threadmap.api import verify

    def progress(name: str, done: int, total: int) -> None:
        if on_progress is not None:
            on_progress({"done": done, "total": total})
            return
        sys.stderr.write(PROGRESS_MARK + json.dumps({"done": done, "total": total}) + "\n")
        sys.stderr.flush()

    report = verify([req.loaded], checks=options.checks, exhaustive=options.exhaustive, progress=progress)
    if any("(MemoryError)" in e.message for e in report.errors):
        raise MemoryError  # verify reports it as a finding; for the service it is the job's limit
    from threadmap.report.formats import to_junit, to_sarif
    return {"report": report.model_dump(mode="json"), "exit_status": report.exit_status(check_expected=True),
            "sarif": to_sarif(report), "junit": to_junit(report)}


def child_main(conn: Any, job: dict[str, Any], memory_mb: int) -> None:
    """A forked job: the result (or progress) goes back through ``conn``.  The memory limit is
    what the job may add to the address space the forked server process already maps."""
    import os
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if memory_mb > 0:
        with open(f"/proc/{os.getpid()}/statm") as f:
            mapped_mb = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE") >> 20
        _limit_memory(mapped_mb + memory_mb)

    def progress(p: dict[str, Any]) -> None:
        conn.send(("progress", p))

    try:
        result = run(job, progress)
    except MemoryError:
        os._exit(MEMORY_EXIT)
    conn.send(("result", result))
    conn.close()


def main() -> int:
    _limit_memory(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    try:
        job = json.loads(sys.stdin.read())
        result = run(job)
    except MemoryError:
        sys.stderr.write("MemoryError: the job exceeded its memory limit\n")
        return MEMORY_EXIT
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
