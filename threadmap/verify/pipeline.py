"""spec -> simulate -> checks -> report: the verification of one spec file.

For every size environment of the spec (concrete sizes, or samples of ranges) the
simulator produces the access tables of every copy stage and the checks run on them.

Large grids are not enumerated block by block.  When the grid has more than
``max_blocks`` blocks, only *representative blocks* are simulated (the first two along
each grid axis and every block of the last row/column, where ragged edges are), and the
interior tiles are covered by a tiling argument: every side's tile origin is
``at * tile`` with ``at`` a distinct block coordinate per tensor mode, so interior tiles are
translations of one full tile, pairwise disjoint, and each is covered exactly once iff
the full tile is (checked on block 0).  Such runs are marked ``exhaustive: false`` and the
grid coverage summary says how many elements were ``proved_by_tiling``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from threadmap.simulate.access import AccessTable
from threadmap.simulate.engine import Simulation, representative_blocks
from threadmap.spec.load import LoadedSpec
from threadmap.verify.coverage import GridCoverage, check_tile_coverage
from threadmap.verify.predicates import PredicateCheck
from threadmap.verify.runner import merge_results, overall_status, run_checks

MAX_ROWS_PER_CHUNK = 1 << 21  # access rows per chunk, all stages together (~100 B a row)


def _size_names(loaded: LoadedSpec) -> dict[str, dict[int, str]]:
    """Tensor -> {mode: size name} where a top-level extent of the layout is a bare name."""
    out: dict[str, dict[int, str]] = {}
    names = set(loaded.spec.sizes)
    for tname, t in loaded.spec.tensors.items():
        text = t.layout.split(" o ")[-1]
        shape_txt = text.split(":")[0].strip()
        if shape_txt.startswith("(") and shape_txt.endswith(")"):
            parts = _split_top(shape_txt[1:-1])
        else:
            parts = [shape_txt]
        m = {i: p.strip() for i, p in enumerate(parts) if p.strip() in names}
        if m:
            out[tname] = m
    return out


def _split_top(s: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    parts.append(cur)
    return parts


def _block_axes(sim: Simulation, plan: dict[str, Any], which: str) -> list[str | None] | None:
    side, _tensor = plan["sides"][which]
    if side.at is None:
        return None
    axes: list[str | None] = []
    for a in side.at:
        if isinstance(a, str) and a.strip() in ("bx", "by", "bz"):
            axes.append(a.strip())
        elif isinstance(a, int) or re.fullmatch(r"\s*\d+\s*", str(a)):
            axes.append(None)
        else:
            return None
    named = [a for a in axes if a]
    return axes if len(named) == len(set(named)) else None


def _assume_fn(sim: Simulation, simulated: np.ndarray) -> Callable[[AccessTable], np.ndarray | None]:
    """Flat masks of the elements of tiles whose block was not simulated (see module doc)."""
    sim_set = np.zeros(sim.num_blocks, dtype=bool)
    sim_set[simulated] = True
    gx, gy, gz = sim.grid
    dims = {"bx": gx, "by": gy, "bz": gz}

    def assume(t0: AccessTable) -> np.ndarray | None:
        plan = next(p for p in sim.stage_plans if p["index"] == t0.stage)
        axes = _block_axes(sim, plan, t0.side)
        tile = t0.meta.get("tile")
        if axes is None or tile is None or len(tile) != len(t0.shape) or len(t0.shape) > 3:
            return None
        if gz > 1 and "bz" not in axes:
            return None
        # the full tile must be covered exactly once (checked on block 0)
        b0 = t0.select(t0.block == int(simulated[0]))
        if check_tile_coverage(b0).status != "PASS" or not bool(np.all(b0.pred)):
            return None
        ntiles = [-(-ext // tl) for ext, tl in zip(t0.shape, tile, strict=True)]
        # block id of every tile (or -1 where no block maps to it)
        idx = np.indices(ntiles)
        bid = np.zeros(ntiles, dtype=np.int64)
        ok = np.ones(ntiles, dtype=bool)
        used = set()
        for k, ax in enumerate(axes):
            if ax is None:
                ok &= idx[k] == 0
                continue
            used.add(ax)
            ok &= idx[k] < dims[ax]
            bid += idx[k] * {"bx": 1, "by": gx, "bz": gx * gy}[ax]
        if any(d > 1 and a not in used for a, d in dims.items()):
            return None  # several blocks share a tile: not a partition
        tile_mask = ok & ~sim_set[np.where(ok, bid, 0)]
        m = tile_mask
        for k, tl in enumerate(tile):
            m = np.repeat(m, tl, axis=k)
        m = m[tuple(slice(0, e) for e in t0.shape)]
        return m.reshape(-1, order="F")  # colexicographic, as GridCoverage indexes elements

    return assume


def verify_env(loaded: LoadedSpec, env: dict[str, int], *, max_blocks: int = 64,
               exhaustive: bool = False, progress: Callable[[int, int], None] | None = None
               ) -> dict[str, Any]:
    """Simulate and check one size environment; returns a spec report dict."""
    t0 = time.perf_counter()
    spec = loaded.spec
    sim = Simulation(spec, env)
    plans = sim.stage_plans
    if exhaustive:
        blocks, full = np.arange(sim.num_blocks, dtype=np.int64), True
    else:
        blocks, full = representative_blocks(sim, cap=max_blocks)
    rows_per_block = max(1, sum(sim.threads * p["nvals"] for p in plans))
    per_chunk = max(1, MAX_ROWS_PER_CHUNK // rows_per_block)
    chunks = [blocks[i:i + per_chunk] for i in range(0, blocks.size, per_chunk)]
    exp = spec.expect
    expect = {"transform": None if exp.transform == "none" else exp.transform,
              "coverage": exp.coverage, "bank_conflicts": exp.bank_conflicts,
              "max_sector_ratio": (exp.sectors_per_request.model_dump()
                                   if hasattr(exp.sectors_per_request, "model_dump")
                                   else exp.sectors_per_request),
              "min_vector_bits": exp.vector_bits}
    options: dict[str, Any] = {"size_names": _size_names(loaded), "grid": False,
                               "input": _first_read(spec), "output": _last_written(spec)}
    assume = None if full else _assume_fn(sim, blocks)
    replicated = exp.coverage == "replicated"
    # Streamed over chunks of blocks: per-chunk results are merged (counts add up), the
    # whole-grid coverage and predicates keep one state per global side across chunks, and
    # the coalescing / bank / vectorization statistics come from the first chunk.
    merged: dict[tuple[Any, ...], list[Any]] = {}
    grid_state: dict[tuple[int, str], tuple[GridCoverage, PredicateCheck]] = {}
    for ci, ch in enumerate(chunks):
        tables = {p["index"]: sim.tables(p, ch) for p in plans}
        records: list[Any] = []
        for i, st in enumerate(spec.stages):
            records.append("barrier" if isinstance(st, str) else
                           (tables[i]["src"], tables[i]["dst"], st.copy_.predicate))
        for r in run_checks(records, expect, {**options, "perf": ci == 0}):
            merged.setdefault((r.check, r.stage, r.side), []).append(r)
        for idx, tb in tables.items():
            for side, t in tb.items():
                if t.memory != "global":
                    continue
                if (idx, side) not in grid_state:
                    g = GridCoverage(t.shape, replication=replicated)
                    mask = assume(t) if assume is not None else None
                    if mask is not None:
                        g.assume(mask)
                    names = options["size_names"].get(t.tensor, {})
                    grid_state[(idx, side)] = (g, PredicateCheck(t.shape, size_names=names, grid=g))
                g, pc = grid_state[(idx, side)]
                g.add(t)
                pc.add(t)
        del tables, records
        if progress:
            progress(ci + 1, len(chunks))
    results = []
    for key, rs in merged.items():
        results.append(merge_results(rs))
        if key[0] == "coverage" and (key[1], key[2]) in grid_state:
            g, pc = grid_state[(key[1], key[2])]
            results += [g.result(), pc.result()]
    status = overall_status(results).lower()
    failing = sorted({r.check for r in results if r.status == "FAIL"})
    # every check the author expects to fail must fail (others may fail with it: a predicate
    # bug also leaves grid elements uncovered)
    expected_fail = {_canon(c) for c in exp.failing_checks}
    as_expected = status == exp.verdict and expected_fail <= set(map(_canon, failing))
    return {
        "spec": spec.name, "path": str(loaded.path), "sizes": env, "grid": list(sim.grid),
        "blocks_simulated": int(blocks.size), "blocks": sim.num_blocks, "exhaustive": full,
        "verdict": status, "expected": exp.verdict, "expected_failing": list(exp.failing_checks),
        "failing": failing, "as_expected": as_expected,
        "seconds": round(time.perf_counter() - t0, 3),
        "stage_lines": _stage_lines(loaded),
        "results": [r.to_dict() for r in results],
    }


def _stage_lines(loaded: LoadedSpec) -> dict[str, int]:
    """Line of each stage in the spec file (SARIF locates findings there)."""
    out = {}
    for i in range(len(loaded.spec.stages)):
        try:
            out[str(i)] = int(loaded.where("stages", i).rsplit(":", 2)[1])
        except (ValueError, IndexError, KeyError, TypeError):
            continue
    return out


def _canon(check: str) -> str:
    """Check ids as spec authors write them (``coverage`` also names ``grid_coverage``)."""
    return {"grid_coverage": "coverage", "vectorization": "vectorize"}.get(check, check)


def _first_read(spec: Any) -> str | None:
    for st in spec.stages:
        if not isinstance(st, str):
            s = st.copy_.src
            if s.tensor and spec.tensors[s.tensor].memory == "global":
                return s.tensor
    return None


def _last_written(spec: Any) -> str | None:
    for st in reversed(spec.stages):
        if not isinstance(st, str):
            d = st.copy_.dst
            if d.tensor and spec.tensors[d.tensor].memory == "global":
                return d.tensor
    return None


def verify_spec(loaded: LoadedSpec, **kw: Any) -> list[dict[str, Any]]:
    """One report per size environment of the spec."""
    return [verify_env(loaded, env, **kw) for env in loaded.envs]
