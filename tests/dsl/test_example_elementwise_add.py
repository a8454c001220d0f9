"""NVIDIA's CuTe DSL example ``elementwise_add``, its partitions verified in pytest without a GPU.

The construction follows ``examples/python/CuTeDSL/cute/ampere/kernel/elementwise/elementwise_add.py``
of NVIDIA/cutlass at commit cb37157db50d0528c4aea99feb37946ec278e3d9 (the file's last change in
the snapshot at 7107b05535f8977f5ecb9d01ee203205b1fd9bc4): the host function ``elementwise_add``
(``thr_layout``, ``val_layout``, ``make_layout_tv``, ``zipped_divide`` of the tensors by the tiler,
a 1-D grid over the tiles, one thread per TV thread) and the kernel (a ``CopyUniversalOp`` atom of
the element type, ``make_tiled_copy_tv`` for A, B and C, ``partition_S`` of each block's tile,
per-element predicates ``elem_less(coord, shape)``, C = A + B in registers).

The spec (:func:`elementwise_add_spec`) is written with those DSL objects; threadmap converts
them.  Element positions, not arithmetic, are followed: frgC holds ``frgA[i] + frgB[i]``, so the
value C receives at (m, n) is the one loaded from A at (m, n): a copy from A to C.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("cutlass.cute", reason="the CuTe DSL (pip install 'threadmap[dsl]') is not installed")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

from threadmap import Spec, registers, tile  # noqa: E402
from threadmap.dsl import traced, verify  # noqa: E402
from threadmap.testing.assertions import assert_dsl_partitions  # noqa: E402

#: the example's thread layout: make_ordered_layout((4, 32), order=(1, 0))
THR_SHAPE = (4, 32)
#: values a thread holds per mode: (4, vector_size)
VAL_ROWS = 4


def elementwise_add_partitions(dtype: Any, copy_bits: int = 128, *, val_order: tuple[int, int] = (1, 0)) -> dict:
    """The tiler, thread count and tiled copies ``elementwise_add`` builds (host function and
    kernel).  ``val_order`` is ``make_ordered_layout``'s order of the value layout: ``(1, 0)`` as
    the example writes it."""
    vector_size = copy_bits // dtype.width
    thr_layout = cute.make_ordered_layout(THR_SHAPE, order=(1, 0))
    val_layout = cute.make_ordered_layout((VAL_ROWS, vector_size), order=val_order)
    tiler_mn, tv_layout = cute.make_layout_tv(thr_layout, val_layout)
    copy_atom_load = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype)
    copy_atom_store = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype)
    return {
        "tiler": tuple(cute.size(t) for t in tiler_mn),
        "threads": cute.size(tv_layout, mode=[0]),  # block=[size(tv_layout, mode=[0]), 1, 1]
        "A": cute.make_tiled_copy_tv(copy_atom_load, thr_layout, val_layout),
        "B": cute.make_tiled_copy_tv(copy_atom_load, thr_layout, val_layout),
        "C": cute.make_tiled_copy_tv(copy_atom_store, thr_layout, val_layout),
    }


def derived(dtype: Any, copy_bits: int = 128) -> dict:
    """What the construction implies, derived from its shapes alone.

    * The tile is thr x val per mode: ``(4 * 4, 32 * vector_size)``; 4 * 32 = 128 threads each
      hold 4 * vector_size values, 128 * 4 * vector_size = the tile's elements: every element of a
      tile is moved exactly once, and the 1-D grid of ``ceil(M/tm) * ceil(N/tn)`` tiles with
      per-element predicates moves every element of the tensors exactly once (coverage,
      grid_coverage, predicates pass at every size).
    * A thread's ``vector_size`` values of one row are consecutive along N (the value layout is
      row-major, as the tensors are): one ``copy_bits``-bit access each (vector_bits).
    * A warp is 32 consecutive threads = one row of the thread layout (row-major): 32 accesses of
      ``copy_bits / 8`` consecutive bytes, 512 contiguous bytes for 128 bits: 16 sectors, the
      ideal (sectors_per_request 1.0).
    """
    vector_size = copy_bits // dtype.width
    tm, tn = THR_SHAPE[0] * VAL_ROWS, THR_SHAPE[1] * vector_size
    threads = THR_SHAPE[0] * THR_SHAPE[1]
    assert threads * VAL_ROWS * vector_size == tm * tn
    return {"tile": (tm, tn), "threads": threads,
            "expect": {"verdict": "pass", "transform": "copy", "vector_bits": copy_bits, "sectors_per_request": 1.0}}


def elementwise_add_spec(M: int, N: int, *, dtype: Any = cutlass.Float32, val_order: tuple[int, int] = (1, 0)) -> Spec:
    """The kernel's three copies, for row-major ``(M, N)`` tensors, with the derived expectations
    (the planted variants are judged by the correct kernel's)."""
    p = elementwise_add_partitions(dtype, val_order=val_order)
    d = derived(dtype)
    assert p["tiler"] == d["tile"] and p["threads"] == d["threads"], (p["tiler"], p["threads"])
    tm, tn = p["tiler"]
    # zipped_divide's rest modes are (RestM, RestN), indexed column-major by the 1-D block index
    rest_m = f"ceil_div(M, {tm})"
    at = (f"bx % {rest_m}", f"bx / {rest_m}")
    s = (Spec("elementwise_add (CuTe DSL example)").element(dtype).threads(p["threads"]).sizes(M=M, N=N)
         .grid(f"{rest_m} * ceil_div(N, {tn})")
         .tensor("A", "(M,N):(N,1)", "global").tensor("B", "(M,N):(N,1)", "global")
         .tensor("C", "(M,N):(N,1)", "global"))
    s.copy(p["A"], tile("A", (tm, tn), *at), registers("frgA"), predicate="bounds",
           name="cute.copy(copy_atom_load, thrA, frgA, pred=frgPred)")
    s.copy(p["B"], tile("B", (tm, tn), *at), registers("frgB"), predicate="bounds",
           name="cute.copy(copy_atom_load, thrB, frgB, pred=frgPred)")
    s.copy(p["C"], registers("frgA"), tile("C", (tm, tn), *at), predicate="bounds",
           name="cute.copy(copy_atom_store, frgC, thrC, pred=frgPred)")
    return s.expect(**d["expect"])


def test_the_partitions_are_as_derived() -> None:
    # the example's own sizes: its default 1024x1024 run reduced to 1024x512 to stay cheap
    runs = assert_dsl_partitions(elementwise_add_spec, 1024, 512)
    assert [r.verdict for r in runs] == ["pass"]


def test_ragged_sizes_are_covered_exactly_once() -> None:
    # the docstring's `--M 3 --N 12`: one partial tile; the per-element predicates keep every
    # access in bounds and reach every element (N % vector_size == 0: vectors stay whole)
    assert_dsl_partitions(elementwise_add_spec, 3, 12, checks=["coverage", "predicates", "vectorize", "dataflow"])


def test_planted_value_layout_against_the_tensors_major_mode_is_caught() -> None:
    """The docstring warns that the value layout's major mode must be the tensor's, "without
    which vectorization would not be possible".  Planted: ``order=(0, 1)`` (values down M).
    Then a thread's consecutive values are 4 rows apart: only scalar 32-bit accesses, and one
    warp instruction reads 32 floats 16 bytes apart, 16 sectors where 4 would do (ratio 4)."""
    with pytest.raises(AssertionError) as e:
        assert_dsl_partitions(elementwise_add_spec, 1024, 512, val_order=(0, 1))
    msg = str(e.value)
    assert "FAIL" in msg and "coalescing" in msg and "vectorize" in msg
    report = verify(elementwise_add_spec, 1024, 512, val_order=(0, 1))
    run = report.runs[0]
    assert run.verdict == "fail" and set(run.failing) == {"coalescing", "vectorize"}
    coal = next(r for r in run.results if r.check == "coalescing" and r.status == "FAIL")
    assert coal.summary.access_bits == 32 and coal.summary.ratio == 4.0
    witness = coal.summary.worst  # the worst instruction: block, warp, step and its sectors
    assert witness is not None and witness["sectors"] == 16 and witness["ideal"] == 4


def test_the_spec_is_written_with_the_dsl_objects() -> None:
    def build() -> tuple[dict, str, str]:
        p = elementwise_add_partitions(cutlass.Float32)
        return elementwise_add_spec(64, 128).to_dict(), str(p["A"].layout_tv_tiled), str(p["A"].tiler_mn)

    spec, dsl_tv, dsl_tiler = traced(build)
    tc = spec["stages"][0]["copy"]["src"]["tiled_copy"]
    # the tiled copy as CuTe holds it (its TiledLayout_TV and Tiler_MN, the DSL's n:1 tiler modes
    # as extents), and CopyUniversalOp without num_bits_per_copy, which auto-vectorizes
    assert tc["layout_tv"] == dsl_tv
    assert "(" + ",".join(m.split(":")[0] for m in dsl_tiler.strip("()").split(", ")) + ")" == tc["tiler"]
    assert tc["atom"] == "AutoVectorizingCopy"
