"""The body of a job's child process: verify or prove a spec, draw a stage, or run the
calculator, and answer an :class:`~threadmap.service.model.Outcome`.

Forked children get the task as an argument and answer through a pipe (:func:`child_main`).
``python -m threadmap.service.runner MEMORY_MB`` (a Dask worker's fresh interpreter) reads
the pickled task on stdin, writes the pickled outcome on stdout and progress records on
stderr; the pickles come from and go to the server's own process, never from a client.

The address-space limit is set before threadmap (numpy, z3) is imported, so an allocation
past it fails inside this process as a MemoryError (exit status 70), not in the server.
"""

from __future__ import annotations

import json
import pickle
import resource
import sys
from collections.abc import Callable
from typing import Any

from threadmap.service.model import MEMORY_EXIT, PROGRESS_MARK, DrawTask, LayoutTask, Options, Outcome, SpecJob, Task

#: the largest tile a request may have drawn (a cell is a few hundred bytes of SVG)
MAX_DRAWN_CELLS = 1 << 16

Progress = Callable[[dict[str, Any]], None]


def _limit_memory(mb: int) -> None:
    if mb > 0:
        limit = mb << 20
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


def _layout(task: LayoutTask) -> Outcome:
    """The calculator's answer (``threadmap layout EXPR OPS...``)."""
    import threadmap.layout as L
    from threadmap.errors import ThreadmapError
    from threadmap.layout.calculator import Show, run_layout
    try:
        steps = run_layout([task.expr, *task.ops])
    except (ThreadmapError, ValueError, ArithmeticError, TypeError, IndexError, RecursionError) as e:
        return Outcome(error=str(e) or type(e).__name__)
    result = steps[-1][1]
    out: dict[str, Any] = {"expr": task.expr, "ops": list(task.ops), "input": str(steps[0][1])}
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
    return Outcome(layout=out)


def _loaded(job: SpecJob) -> Any:
    """The job's spec: the one the server validated, else (a job read back from the store) its
    text loaded here."""
    from threadmap.service.model import load
    return job.loaded if job.loaded is not None else load(job.text, job.fmt, job.name, job.options)


def _svg(task: DrawTask) -> Outcome:
    """One stage's pictures (``threadmap show --svg``)."""
    import numpy as np

    import threadmap.api as api
    from threadmap.errors import ThreadmapError
    try:
        loaded = _loaded(task.job)
        model = api.models(loaded)[0]
        for cp in model.copies():
            for side in (cp.src, cp.dst):
                cells = int(np.prod(side.tile, dtype=np.int64)) if side.tensor is not None else 0
                if (task.stage is None or cp.index == task.stage) and cells > MAX_DRAWN_CELLS:
                    return Outcome(error=f"stage {cp.index} {side.which}: a tile of {cells} elements; pictures are "
                                         f"drawn for tiles of at most {MAX_DRAWN_CELLS} (pick a stage with ?stage=N, "
                                         "or use threadmap show --svg on a smaller tile)")
        return Outcome(svg=api.show(loaded, stage=task.stage, block=task.block, svg=True).svg or "")
    except (ThreadmapError, ValueError, IndexError, ArithmeticError) as e:
        return Outcome(error=str(e) or type(e).__name__)


def _prove(job: SpecJob, loaded: Any, progress: Progress) -> Outcome:
    from threadmap.prove.run import PROPERTIES, prove_loaded
    from threadmap.report.formats import prove_to_junit, prove_to_sarif
    from threadmap.report.model import ProveReport
    from threadmap.version import __version__
    # a proof decides its properties together: progress counts them, none then all
    total = len(PROPERTIES)
    progress({"done": 0, "total": total, "unit": "properties"})
    prove = ProveReport(threadmap=__version__, runs=[prove_loaded(loaded)])
    progress({"done": total, "total": total, "unit": "properties"})
    return Outcome(report=prove.model_dump(mode="json"), exit_status=prove.exit_code,
                   sarif=prove_to_sarif(prove), junit=prove_to_junit(prove))


def _verify(job: SpecJob, progress: Progress) -> Outcome:
    from threadmap.report.model import SpecErrorEntry, VerifyReport
    from threadmap.version import __version__
    try:
        loaded = _loaded(job)
    except Exception as e:  # noqa: BLE001 - the server validated it once; report whatever changed since
        report = VerifyReport(threadmap=__version__, runs=[], errors=[SpecErrorEntry(path=job.name, message=str(e))])
        return Outcome(report=report.model_dump(mode="json"), exit_status=2)
    if job.options.engine == "prove":
        return _prove(job, loaded, progress)
    from threadmap.api import verify
    from threadmap.report.formats import to_junit, to_sarif
    opts: Options = job.options
    report = verify([loaded], checks=opts.checks, exhaustive=opts.exhaustive,
                    progress=lambda _name, done, total: progress({"done": done, "total": total, "unit": "blocks"}))
    if any("(MemoryError)" in e.message for e in report.errors):
        raise MemoryError  # verify reports it as a finding; for the service it is the job's limit
    return Outcome(report=report.model_dump(mode="json"), exit_status=report.exit_status(check_expected=True),
                   sarif=to_sarif(report), junit=to_junit(report))


def _stderr_progress(p: dict[str, Any]) -> None:
    sys.stderr.write(PROGRESS_MARK + json.dumps(p) + "\n")
    sys.stderr.flush()


def run(task: Task, on_progress: Progress | None = None) -> Outcome:
    """One task; a job's progress (``{"done", "total", "unit"}``) goes to ``on_progress``,
    by default a progress line on stderr."""
    if isinstance(task, LayoutTask):
        return _layout(task)
    if isinstance(task, DrawTask):
        return _svg(task)
    return _verify(task, on_progress or _stderr_progress)


def child_main(conn: Any, task: Task, memory_mb: int) -> None:
    """A forked job: the outcome (or progress) goes back through ``conn``.  The memory limit is
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
        result = run(task, progress)
    except MemoryError:
        os._exit(MEMORY_EXIT)
    conn.send(("result", result))
    conn.close()


def main() -> int:
    _limit_memory(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    try:
        task = pickle.loads(sys.stdin.buffer.read())
        result = run(task)
    except MemoryError:
        sys.stderr.write("MemoryError: the job exceeded its memory limit\n")
        return MEMORY_EXIT
    sys.stdout.buffer.write(pickle.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
