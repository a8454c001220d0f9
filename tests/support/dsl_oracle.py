"""The CuTe DSL (``nvidia-cutlass-dsl``, ``import cutlass.cute as cute``) as one side of the
differential harness (``tests/support/differential.py``).

Cases travel as plain JSON data (the *wire* form; ``differential.py`` documents it): a
layout is ``["L", shape, stride]`` with nested lists for tuples, a swizzle ``["Sw", B, M, S]``,
``_`` is ``["_"]``, a tuple of tiler modes ``["T", [...]]``.  Results come back in the same
form, read from the DSL's static values inside the ``@cute.jit`` function (``.shape``,
``.stride``, ``.inner``/``.offset``/``.outer``, ``layout(i)``) and nothing else: the DSL's
objects never leave the traced function.

One ``@cute.jit`` call evaluates a whole batch; each case is tried on its own, so a
construction the DSL refuses (it raises) is recorded as a refusal of that case, by kind
(the exception's type and its message with the numbers and types taken out).  The DSL can
crash the interpreter outright (see ``docs/dsl-reports.md``), so :func:`run_dsl` runs the
batch in a child process and, when the child dies, splits the batch until the case that
kills it is alone (recorded as the refusal ``crash``).

The child runs with ``CUTE_DSL_DRYRUN=1`` and ``CUTE_DSL_NO_CACHE=1`` (the traced module is
neither compiled nor hashed: every value the harness reads is static and known while
tracing) and keeps the DSL's cache in a temporary folder.

Run as a program: ``python -m tests.support.dsl_oracle IN.json OUT.json``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

#: the environment of the child: trace only, nothing compiled, hashed or cached
DSL_ENV = {"CUTE_DSL_DRYRUN": "1", "CUTE_DSL_NO_CACHE": "1", "CUTE_DSL_DISABLE_FILE_CACHING": "1"}

Wire = Any
Fields = dict[str, Wire]


def dsl_available() -> bool:
    """Whether ``cutlass.cute`` imports here (without importing it into this process)."""
    import importlib.util

    try:
        return importlib.util.find_spec("cutlass.cute") is not None
    except (ImportError, ValueError):
        return False


def refusal_kind(exc: BaseException) -> str:
    """An exception as a refusal kind: its type and the first line of its message with
    quoted types, numbers and layouts taken out (so one kind gathers many cases)."""
    msg = str(exc).replace("Operation creation failed:", "").strip()
    line = next((ln.strip() for ln in msg.splitlines() if ln.strip()), "")
    line = re.sub(r"^error:\s*(unknown:\s*)?", "", line)
    line = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "<x>", line)
    line = re.sub(r"\([^()]*\)(:\([^()]*\))?", "<x>", line)
    line = re.sub(r"-?\d+", "N", line)
    return f"{type(exc).__name__}: {line[:120]}"


# ============================================================================ the DSL side
def _run_batch_in_dsl(cases: list[dict[str, Any]], out: Callable[[str, dict[str, Any]], None]) -> None:
    """Evaluate every case inside one ``@cute.jit`` call; ``out(id, result)`` is called per case
    as soon as it is known (so a crash after a case does not lose it)."""
    import cutlass
    import cutlass.cute as cute

    dtypes = {"uint8_t": cutlass.Uint8, "half_t": cutlass.Float16, "float": cutlass.Float32,
              "double": cutlass.Float64, "bfloat16_t": cutlass.BFloat16, "tfloat32_t": cutlass.TFloat32}

    def tup(x: Any) -> Any:
        return tuple(tup(v) for v in x) if isinstance(x, list) else x

    def lst(x: Any) -> Any:
        return [lst(v) for v in x] if isinstance(x, tuple) else int(x)

    def obj(w: Wire) -> Any:
        """wire -> DSL object (inside the trace)"""
        if isinstance(w, int):
            return w
        tag = w[0]
        if tag == "L":
            return cute.make_layout(tup(w[1]), stride=tup(w[2]))
        if tag == "_":
            return None
        if tag == "T":
            return tuple(obj(v) for v in w[1])
        if tag == "I":
            return tup(w[1])
        if tag == "Sw":
            return cute.make_swizzle(w[1], w[2], w[3])
        raise ValueError(f"unknown wire tag {tag!r}")

    def rd(x: Any) -> Wire:
        """DSL value -> wire (static parts only)"""
        if isinstance(x, cute.ComposedLayout):
            sw = x.inner
            if not isinstance(sw, cute.Swizzle):
                raise TypeError(f"composed layout with a non-swizzle inner function: {x}")
            o = x.outer
            return ["C", [sw.num_bits, sw.num_base, sw.num_shift], lst(x.offset), lst(o.shape), lst(o.stride)]
        if isinstance(x, cute.Layout):
            return ["L", lst(x.shape), lst(x.stride)]
        if isinstance(x, tuple):
            if any(isinstance(v, (cute.Layout, cute.ComposedLayout)) or v is None for v in x):
                return ["T", [rd(v) if v is not None else ["_"] for v in x]]
            return ["I", lst(x)]
        if isinstance(x, bool):
            raise TypeError("a boolean where an integer was expected")
        if isinstance(x, int):
            return x
        raise TypeError(f"not a static value: {type(x).__name__} {x}")

    def values(f: Any, pts: list[int]) -> Wire:
        vs = [f(i) for i in pts]
        if not all(isinstance(v, int) for v in vs):
            raise TypeError(f"evaluation is not static: {vs[:3]}")
        return ["V", vs]

    def mma_op(name: str) -> Any:
        m = re.fullmatch(r"SM80_(\d+)x(\d+)x(\d+)_(F16F16F16F16|F32F16F16F32|F32BF16BF16F32|F32TF32TF32F32)_TN", name)
        if not m:
            raise ValueError(f"no DSL warp MMA operation for {name}")
        shape = (int(m[1]), int(m[2]), int(m[3]))
        kind = m[4]
        if kind == "F32TF32TF32F32":
            return cute.nvgpu.warp.MmaTF32Op(shape)
        ab = cutlass.BFloat16 if "BF16" in kind else cutlass.Float16
        acc = cutlass.Float16 if kind == "F16F16F16F16" else cutlass.Float32
        return cute.nvgpu.warp.MmaF16BF16Op(ab, acc, shape)

    def one(kind: str, a: list[Wire]) -> Fields:
        if kind == "layout":
            lay = obj(a[0])
            return {"layout": rd(lay), "size": cute.size(lay), "cosize": cute.cosize(lay), "eval": values(lay, a[1])}
        if kind == "coalesce":
            lay = obj(a[0])
            r = cute.coalesce(lay) if a[1] is None else cute.coalesce(lay, target_profile=tup(a[1][1]))
            return {"layout": rd(r)}
        if kind == "composition":
            return {"layout": rd(cute.composition(obj(a[0]), obj(a[1])))}
        if kind == "complement":
            return {"layout": rd(cute.complement(obj(a[0]), obj(a[1])))}
        if kind in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
                    "logical_product", "zipped_product", "tiled_product", "flat_product",
                    "blocked_product", "raked_product"):
            return {"layout": rd(getattr(cute, kind)(obj(a[0]), obj(a[1])))}
        if kind in ("right_inverse", "left_inverse"):
            return {"layout": rd(getattr(cute, kind)(obj(a[0])))}
        if kind == "composed_eval":
            c = cute.make_composed_layout(obj(a[0]), a[1], obj(a[2]))
            return {"layout": rd(c), "eval": values(c, a[3])}
        if kind == "composed_composition":
            c = cute.make_composed_layout(obj(a[0]), a[1], obj(a[2]))
            r = cute.composition(c, obj(a[3]))
            return {"layout": rd(r), "eval": values(r, a[4])}
        if kind == "tensor_eval":
            sw, off, lay, base, pts = a
            inner = obj(lay) if sw is None else cute.make_composed_layout(obj(sw), off, obj(lay))
            t = cute.make_tensor(base, inner)
            return {"layout": rd(t.layout), "eval": values(lambda i: t[i], pts)}
        if kind == "swizzle_composition":
            return {"layout": rd(cute.composition(obj(a[0]), obj(a[1])))}
        if kind == "tiled_copy":
            bits, vt, thr, val = a
            atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtypes[vt], num_bits_per_copy=bits)
            tc = cute.make_tiled_copy_tv(atom, obj(thr), obj(val))
            return {"layout_tv": rd(tc.layout_tv_tiled), "tiler_mn": rd(tuple(tc.tiler_mn)),
                    "layout_s_tv": rd(tc.layout_src_tv_tiled), "layout_d_tv": rd(tc.layout_dst_tv_tiled)}
        if kind == "tiled_mma":
            name, atom_layout, perm, ref_a, ref_b, ref_c = a
            p = obj(perm)
            mma = cute.make_tiled_mma(mma_op(name), obj(atom_layout), p)
            return {"thr_layout_vmnk": rd(mma.thr_layout_vmnk),
                    "layout_a_tv": rd(mma.tv_layout_A_tiled), "layout_b_tv": rd(mma.tv_layout_B_tiled),
                    "layout_c_tv": rd(mma.tv_layout_C_tiled),
                    # thrfrg_* is private in the DSL (TiledMma._thrfrg_*); the C++ spells it thrfrg_*
                    "thrfrg_a": rd(mma._thrfrg_A(obj(ref_a))), "thrfrg_b": rd(mma._thrfrg_B(obj(ref_b))),
                    "thrfrg_c": rd(mma._thrfrg_C(obj(ref_c))),
                    "pshape_a": rd(mma.partition_shape_A(tup(ref_a[1]))),
                    "pshape_b": rd(mma.partition_shape_B(tup(ref_b[1]))),
                    "pshape_c": rd(mma.partition_shape_C(tup(ref_c[1])))}
        raise ValueError(f"unknown case kind {kind!r}")

    @cute.jit
    def batch() -> None:
        _each(cases, one, out)

    batch()


def _each(cases: list[dict[str, Any]], one: Callable[[str, list[Wire]], Fields],
          out: Callable[[str, dict[str, Any]], None]) -> None:
    """Each case on its own (a plain function: the DSL rewrites only the jit function's body)."""
    for c in cases:
        try:
            res: dict[str, Any] = {"fields": one(c["kind"], c["args"])}
        except Exception as e:  # noqa: BLE001 - any refusal of the DSL is a result
            res = {"refused": refusal_kind(e), "message": str(e)[:2000]}
        out(c["id"], res)


def _child_main(inp: str, outp: str) -> int:
    cases = json.loads(Path(inp).read_text())
    t0 = time.process_time()
    with open(outp, "w") as f:
        def out(cid: str, res: dict[str, Any]) -> None:
            f.write(json.dumps({"id": cid, **res}) + "\n")
            f.flush()
        f.write(json.dumps({"start": time.process_time() - t0}) + "\n")
        import cutlass.cute  # noqa: F401 - import cost measured apart from the cases
        f.write(json.dumps({"imported": time.process_time()}) + "\n")
        f.flush()  # a child that dies in its first case still says it started
        _run_batch_in_dsl(cases, out)
        f.write(json.dumps({"done": time.process_time()}) + "\n")
    return 0


# ============================================================================ the parent side
class DslRun:
    """What :func:`run_dsl` returns: results by case id and the CPU it took (the children's
    CPU seconds, the DSL's import apart)."""

    def __init__(self) -> None:
        self.results: dict[str, dict[str, Any]] = {}
        self.cpu_cases = 0.0
        self.cpu_import = 0.0
        self.children = 0
        self.crashes = 0


def _spawn(cases: list[dict[str, Any]], tmp: Path, tag: str) -> tuple[int, list[dict[str, Any]], float]:
    inp, outp = tmp / f"in_{tag}.json", tmp / f"out_{tag}.jsonl"
    inp.write_text(json.dumps(cases))
    env = dict(os.environ, **DSL_ENV, CUTE_DSL_CACHE_DIR=str(tmp / "cute_cache"),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    before = os.times()
    proc = subprocess.run([sys.executable, "-m", "tests.support.dsl_oracle", str(inp), str(outp)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    after = os.times()
    cpu = (after.children_user + after.children_system) - (before.children_user + before.children_system)
    rows = []
    if outp.exists():
        for line in outp.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by the crash
                break
    if proc.returncode != 0 and not rows:
        rows = [{"stderr": proc.stderr[-2000:]}]
    return proc.returncode, rows, cpu


def run_dsl(cases: list[dict[str, Any]], *, batch: int = 2000, workers: int = 1) -> DslRun:
    """Evaluate ``cases`` (dicts with ``id``, ``kind``, ``args``) in the DSL, ``batch`` cases per
    child and ``jit`` call, ``workers`` children at once.  A child that dies has the cases it
    finished kept; the rest are split and run again until the one that kills it is alone."""
    import itertools
    import threading
    from concurrent.futures import ThreadPoolExecutor

    run = DslRun()
    lock = threading.Lock()
    tags = itertools.count()
    with tempfile.TemporaryDirectory(prefix="threadmap_dsl_") as td:
        tmp = Path(td)

        def go(chunk: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
            rc, rows, cpu = _spawn(chunk, tmp, str(next(tags)))
            imported = next((r["imported"] for r in rows if "imported" in r), None)
            if imported is None:
                raise RuntimeError(f"the DSL child did not start (exit status {rc}): {rows}")
            got = {r["id"]: r for r in rows if "id" in r}
            with lock:
                run.children += 1
                run.cpu_import += imported
                run.cpu_cases += max(0.0, cpu - imported)
                for cid, r in got.items():
                    run.results[cid] = {k: v for k, v in r.items() if k != "id"}
            rest = [c for c in chunk if c["id"] not in got]
            if not rest:
                return []
            if len(chunk) == 1:
                with lock:
                    run.crashes += 1
                    run.results[chunk[0]["id"]] = {"refused": "crash", "message": (
                        f"the interpreter died (exit status {rc}) evaluating this case alone")}
                return []
            # the first unfinished case was running when the child died: alone, then the others
            return [rest[:1], rest[1:]]

        todo = [cases[i:i + batch] for i in range(0, len(cases), batch)]
        with ThreadPoolExecutor(max_workers=max(1, workers)) as ex:
            while todo:
                more = list(ex.map(go, todo))
                todo = [c for m in more for c in m if c]
    return run


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1], sys.argv[2]))
