"""Behaviour runs on the device (CuPy): allocate, fill, launch, check, time.

Also the child programs that run under the profilers, so the profiled process launches
exactly the kernels it should, once each::

    ncu ... python -m threadmap.gpu.execute stages ORDER.json SPEC...   # every stage kernel
    compute-sanitizer --tool racecheck python -m threadmap.gpu.execute race SPEC SIZES

Nothing here runs without a GPU.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from threadmap.gpu.behave import BehaviourProgram, check_behaviour
from threadmap.gpu.device import event_seconds, load_module
from threadmap.gpu.programs import Item, build_programs, suite_source
from threadmap.model import KernelModel

#: the value output tensors are filled with before a run (a byte pattern no input holds often)
SENTINEL = 0xA5
NP_TYPE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
#: the stage kernels profiled: the whole stage, each side alone, each side alone one CTA per SM
KERNEL_VARIANTS: tuple[tuple[str | None, bool], ...] = (
    (None, False), ("src", False), ("dst", False), ("src", True), ("dst", True))
#: dynamic shared memory a "solo" launch asks for: more than half an SM's (228 KiB on sm_90),
#: so one CTA runs per SM and no other CTA's accesses share its L1 data path
SOLO_SHARED = 120 * 1024


def copy_bandwidth(nbytes: int = 1 << 30, repeats: int = 10) -> float:
    """Device-to-device copy bandwidth (GB/s, bytes read plus written): the median of repeats."""
    import cupy
    a = cupy.ones(nbytes // 4, dtype=cupy.uint32)
    b = cupy.empty_like(a)
    b[...] = a

    def copy() -> None:
        b[...] = a
    times = event_seconds(copy, repeats)
    return 2 * nbytes / float(np.median(times)) / 1e9


class Buffers:
    """The device buffers of one behaviour program: data and counts per global tensor."""

    def __init__(self, prog: BehaviourProgram, seed: int = 0) -> None:
        import cupy
        rng = np.random.default_rng(seed)
        self.prog = prog
        self.data: dict[str, Any] = {}
        self.counts: dict[str, Any] = {}
        for b in prog.globals():
            nbytes = b.elements * b.elem_bytes
            if b.counted == "read":
                host = rng.integers(0, 256, nbytes, dtype=np.uint8)
                self.data[b.name] = cupy.asarray(host)
            else:
                self.data[b.name] = cupy.full(nbytes, SENTINEL, dtype=cupy.uint8)
            self.counts[b.name] = cupy.zeros(max(1, b.elements), dtype=cupy.uint32)
        self.sink = cupy.zeros(max(1, prog.threads), dtype=cupy.uint32)
        self.oob = cupy.zeros(max(1, len(prog.shared_sides)), dtype=cupy.uint32)

    def args(self) -> tuple[Any, ...]:
        g = self.prog.globals()
        # tm_key 0: the sink is never written (see behave.SINK_KEY)
        return (tuple(self.data[b.name] for b in g) + tuple(self.counts[b.name] for b in g)
                + (self.oob, self.sink, np.int32(0)))

    def reset_outputs(self) -> None:
        self.oob.fill(0)
        for b in self.prog.globals():
            self.counts[b.name].fill(0)
            if b.counted == "write":
                self.data[b.name].fill(SENTINEL)

    def host(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        import cupy
        data = {b.name: cupy.asnumpy(self.data[b.name]).view(NP_TYPE[b.elem_bytes]) for b in self.prog.globals()}
        counts = {b.name: cupy.asnumpy(self.counts[b.name])[:b.elements] for b in self.prog.globals()}
        return data, counts

    def out_of_tensor(self) -> np.ndarray:
        """Per shared side of the program, its accesses outside its tensor (counting run)."""
        import cupy
        return np.asarray(cupy.asnumpy(self.oob)[:len(self.prog.shared_sides)])


def launch(mod: Any, name: str, prog: BehaviourProgram, bufs: Buffers,
           grid: tuple[int, int, int] | None = None) -> None:
    fn = mod.get_function(name)
    smem = max(16, prog.shared_bytes, SOLO_SHARED if name.endswith("_solo") else 0)
    if smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = smem
    fn(grid or prog.grid, (prog.threads,), bufs.args(), shared_mem=smem)


def run_behaviour(mod: Any, model: KernelModel, prog: BehaviourProgram, repeats: int = 20) -> dict[str, Any]:
    """The counting run and its check, then the plain run timed (median of ``repeats``)."""
    import cupy
    bufs = Buffers(prog)
    t0 = time.perf_counter()
    launch(mod, prog.count_kernel, prog, bufs)
    cupy.cuda.Device().synchronize()
    data, counts = bufs.host()
    res = check_behaviour(model, prog, data, counts, bufs.out_of_tensor())
    res["count_run_s"] = round(time.perf_counter() - t0, 4)
    moved = sum(int(counts[b.name].sum()) * b.elem_bytes for b in prog.globals())
    launch(mod, prog.run_kernel, prog, bufs)  # warm-up
    med = float(np.median(event_seconds(lambda: launch(mod, prog.run_kernel, prog, bufs), repeats)))
    res.update(time_s=med, bytes=moved, gbps=(moved / med / 1e9) if med > 0 else 0.0, repeats=repeats)
    return res


# ----------------------------------------------------------------------------- child programs


def _child_items(legal_path: str, paths: Sequence[str]) -> tuple[list[Item], Any]:
    """The parent's items, rebuilt with its vector legality (no verifier run): the same
    translation unit, so the cached module is loaded, not compiled."""
    items = build_programs(paths, legal_map=json.loads(Path(legal_path).read_text()))
    mod, _ = load_module(suite_source(items))
    return items, mod


def child_stages(order_path: str, legal_path: str, kernels_path: str, paths: Sequence[str]) -> None:
    """Launch the listed stage kernels once each (under ncu), recording the order."""
    import cupy
    items, mod = _child_items(legal_path, paths)
    wanted = set(json.loads(Path(kernels_path).read_text()))
    order = []
    for it in items:
        if it.behaviour is None:
            continue
        names = [it.behaviour.stage_kernel(s, w, ser) for s in it.behaviour.stages for w, ser in KERNEL_VARIANTS
                 if it.behaviour.stage_kernel(s, w, ser) in wanted]
        if not names:
            continue
        bufs = Buffers(it.behaviour)
        for name in names:
            launch(mod, name, it.behaviour, bufs)
            order.append(name)
        cupy.cuda.Device().synchronize()
        del bufs
    Path(order_path).write_text(json.dumps(order))


def child_race(legal_path: str, uids_path: str, paths: Sequence[str]) -> None:
    """Run the listed counting kernels on at most 4 x 4 blocks (under racecheck), each after a
    marker line, so the sanitizer's reports can be told apart per kernel."""
    import cupy
    items, mod = _child_items(legal_path, paths)
    wanted = set(json.loads(Path(uids_path).read_text()))
    for it in items:
        if it.behaviour is None or it.behaviour.uid not in wanted:
            continue
        gx, gy, _ = it.behaviour.grid
        bufs = Buffers(it.behaviour)
        print(f"TM-LAUNCH {it.behaviour.uid}", flush=True)
        launch(mod, it.behaviour.count_kernel, it.behaviour, bufs, (min(gx, 4), min(gy, 4), 1))
        cupy.cuda.Device().synchronize()
        print(f"TM-DONE {it.behaviour.uid}", flush=True)
        del bufs


if __name__ == "__main__":  # pragma: no cover - run on the device by threadmap.gpu.profile
    if sys.argv[1] == "stages":
        child_stages(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    elif sys.argv[1] == "race":
        child_race(sys.argv[2], sys.argv[3], sys.argv[4:])
