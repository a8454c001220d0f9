"""``threadmap diff --dsl``: a CuTe DSL kernel's accesses traced from its IR on the host and
diffed with a spec written here.

The kernels: NVIDIA's ``elementwise_add`` example, unmodified (``data/elementwise_add.py``,
BSD-3, see ``data/README.md``), and ``data/kernels.py`` (a swizzled shared-memory round trip
and kernels the tracer refuses).  Every expected count is derived below from the kernel's
own description (its tiler, thread and value layouts, its predicate) or from the simulator
of a spec (the diff's other side), never copied from a run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cutlass.cute", reason="the CuTe DSL (nvidia-cutlass-dsl) is not installed")

from threadmap import Spec, registers, side, tile  # noqa: E402
from threadmap.dsl.trace import (  # noqa: E402
    DslTraceError,
    TensorArg,
    diff_trace,
    spec_arguments,
    trace_dsl,
)
from threadmap.gpu.log import load_model  # noqa: E402
from threadmap.layout import CopyAtom, LayoutRight, get_copy_op, make_layout, make_tiled_copy  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
EXAMPLE = f"{DATA / 'elementwise_add.py'}:elementwise_add_kernel"
KERNELS = DATA / "kernels.py"
ROOT = Path(__file__).resolve().parents[2]

# The example at copy_bits = 128 and f32: thr_layout (4,32) ordered (1,0) = (4,32):(32,1),
# val_layout (4, 128 // 32) ordered (1,0) = (4,4):(4,1); make_layout_tv's tiler is their
# product per mode, (16,128); the grid is the number of tiles, one block per tile in the
# colexicographic order of zipped_divide's rest mode (ceil(M/16), ceil(N/128)); every copy
# is predicated per element by elem_less(coordinate, (M,N)).
M, N = 20, 200  # ragged in both modes: 2 x 2 tiles, the last ones cut
THR, VAL = ((4, 32), (4, 4))
TILE = (THR[0] * VAL[0], THR[1] * VAL[1])


def elementwise_spec(tmp: Path, *, column_major_values: bool = False, predicate_store: bool = True) -> Path:
    """The example as a spec: three tiled copies (A and B to registers, registers to C) of
    one 32-bit element per instruction (CopyUniversalOp on Float32)."""
    thr = make_layout(THR, LayoutRight)
    val = make_layout(VAL) if column_major_values else make_layout(VAL, LayoutRight)
    tc = make_tiled_copy(CopyAtom(get_copy_op("UniversalCopy<uint32_t>"), "float"), thr, val)
    rows = f"ceil_div(M, {TILE[0]})"
    at = (f"bx % {rows}", f"bx / {rows}")
    s = (Spec("elementwise_add").element("f32").threads(THR[0] * THR[1]).sizes(M=M, N=N)
         .grid(f"{rows} * ceil_div(N, {TILE[1]})")
         .tensor("A", "(M,N):(N,1)", "global").tensor("B", "(M,N):(N,1)", "global")
         .tensor("C", "(M,N):(N,1)", "global")
         .copy(tc, tile("A", TILE, *at), registers("rA"), predicate="bounds")
         .copy(tc, tile("B", TILE, *at), registers("rB"), predicate="bounds")
         # C's fragment is computed from rA and rB value by value; the spec names rA for it
         .copy(tc, registers("rA"), tile("C", TILE, *at), predicate="bounds" if predicate_store else "none"))
    name = "elementwise_add" + ("_values" if column_major_values else "") + ("" if predicate_store else "_loose")
    return s.write(tmp / f"{name}.yaml")


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("dsl")
    model = load_model(elementwise_spec(tmp), None)
    trace = trace_dsl(EXAMPLE, spec_arguments(model, {"mA": "A", "mB": "B", "mC": "C"}))
    return tmp, model, trace


def test_the_example_agrees_with_its_spec(example) -> None:  # type: ignore[no-untyped-def]
    _, model, trace = example
    tiles = -(-M // TILE[0]) * -(-N // TILE[1])
    assert trace.grid == (tiles, 1, 1) and trace.block == (THR[0] * THR[1], 1, 1)
    assert [s.op for s in trace.stages] == ["cute.copy"] * 3
    assert [(s.src.buffer.name if s.src else None) for s in trace.stages][:2] == ["A", "B"]
    assert trace.stages[2].dst is not None and trace.stages[2].dst.buffer.name == "C"
    d = diff_trace(trace, model)
    # each in-bounds element of A and B read once, of C written once; nothing else
    assert d.ok and d.notes == [] and (d.moved, d.missing, d.extra) == (0, 0, 0)
    assert d.matched == d.records == 3 * M * N
    assert d.side == {0: "src", 1: "src", 2: "dst"}


def test_a_planted_difference_is_caught(example) -> None:  # type: ignore[no-untyped-def]
    tmp, _, trace = example
    # the spec forgets the store's predicate: it writes the whole tiles, the kernel only the
    # in-bounds part, so every cut-off element of the last tiles is missing from the trace
    loose = load_model(elementwise_spec(tmp, predicate_store=False), None)
    d = diff_trace(trace, loose)
    tiles = -(-M // TILE[0]) * -(-N // TILE[1])
    assert not d.ok and (d.moved, d.extra) == (0, 0)
    assert d.missing == tiles * TILE[0] * TILE[1] - M * N
    assert {f.stage for f in d.findings} == {2}


def test_a_reordered_value_layout_is_caught_as_moved(example) -> None:  # type: ignore[no-untyped-def]
    tmp, model, trace = example
    # the same elements per thread in another value order, (4,4):(1,4): the simulator's
    # records of the two specs differ exactly where the same (thread, value) lands elsewhere
    import numpy as np

    from threadmap.gpu.log import simulated_log

    other = load_model(elementwise_spec(tmp, column_major_values=True), None)
    blocks = np.arange(model.num_blocks)

    def keyed(m):  # type: ignore[no-untyped-def]
        out = {}
        for line in simulated_log(m, blocks):
            head, _, coord = line.rpartition(" coord=")
            out[head] = coord
        return out

    a, b = keyed(model), keyed(other)
    moved = sum(1 for k in b if k in a and a[k] != b[k])
    assert moved > 0
    d = diff_trace(trace, other)
    assert not d.ok and d.moved == moved


SMEM_TC = make_tiled_copy(CopyAtom(get_copy_op("UniversalCopy<uint128_t>"), "float"),
                          make_layout((16, 8), (8, 1)), make_layout((1, 4), (1, 1)))


def smem_spec(tmp: Path, shared_layout: str) -> Path:
    """data/kernels.py's smem_roundtrip: x's (16,32) tile per block to the shared tile by a
    tiled copy of 128-bit vectors (threads (16,8):(8,1), values (1,4)), a barrier, then each
    thread of (16,8):(1,16) moves its local_partition of the shared tile to y, element by
    element."""
    s = (Spec("smem_roundtrip").element("f32").threads(128).sizes(M=48, N=32).grid("M / 16")
         .tensor("x", "(M,N):(N,1)", "global").tensor("y", "(M,N):(N,1)", "global")
         .tensor("sA", shared_layout, "shared")
         .copy(SMEM_TC, tile("x", (16, 32), "bx", 0), side("sA"))
         .barrier()
         .copy(side("sA").threads("(16,8):(1,16)"), tile("y", (16, 32), "bx", 0).threads("(16,8):(1,16)")))
    return s.write(tmp / f"smem_{abs(hash(shared_layout))}.yaml")


def test_shared_memory_with_a_swizzle_is_traced_exactly(tmp_path: Path) -> None:
    model = load_model(smem_spec(tmp_path, "Sw<3,2,3> o 0 o (16,32):(32,1)"), None)
    trace = trace_dsl(f"{KERNELS}:smem_roundtrip", spec_arguments(model, {"mX": "x", "mY": "y"}))
    assert [s.op for s in trace.stages] == ["cute.copy", "element copy"]
    assert trace.stages[0].vec == 4 and trace.barriers  # 128-bit copies; the sync_threads seen
    for which in (None, "dst", "src"):  # the global sides, then both stages' shared sides
        d = diff_trace(trace, model, side=which)
        assert d.ok and d.matched == 2 * 48 * 32, (which, d.findings[:3])
    # the same kernel against a spec without the swizzle: Swizzle<3,2,3> xors offset bits
    # 5..7 into bits 2..4, so the element (r, c) of the (16,32):(32,1) tile (offset 32r + c)
    # moves iff r % 8 != 0; the shared sides of both stages show each such element once
    plain = load_model(smem_spec(tmp_path, "(16,32):(32,1)"), None)
    moved = 3 * 32 * sum(1 for r in range(16) if r % 8)
    d = diff_trace(trace, plain, side="dst", stage=0)
    assert d.moved == moved and (d.missing, d.extra) == (0, 0)
    assert diff_trace(trace, plain).ok  # the global sides do not see the swizzle


X = TensorArg("x", "f32", (32, 32), (32, 1), 16)


@pytest.mark.parametrize("target, args, message", [
    ("branch_on_data", {"mX": X, "mY": X},
     r"kernels\.py:\d+: a branch depends on data the tracer does not know .*\(scf\.if\)"),
    ("runtime_extent", {"mX": X, "n": 32}, r"kernels\.py:\d+: the layout or shape \?:1 has dynamic parts"),
    ("cp_async", {"mX": TensorArg("x", "f32", (32, 4), (4, 1), 16)},
     r"kernels\.py:\d+: the copy atom !cute_nvgpu\.atom\.simt_async_copy is not handled"),
    ("branch_on_data_kernel", {"mX": X, "mY": X}, r"has \d+ @cute\.jit launchers .* --dsl-launcher"),
    ("nothing", {}, r"'nothing' is not a @cute\.kernel or @cute\.jit function"),
])
def test_refused_kernels_say_where_and_why(target: str, args: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(DslTraceError, match=message):
        trace_dsl(f"{KERNELS}:{target}", args)


def test_the_command_line(example) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from threadmap.cli import main

    tmp, _, _ = example
    loose = elementwise_spec(tmp, predicate_store=False)
    args = ["--dsl", EXAMPLE, "--dsl-args", "mA=A,mB=B,mC=C", "--dsl-blocks", "0,3"]
    ok = CliRunner().invoke(main, ["diff", str(tmp / "elementwise_add.yaml"), *args])
    assert ok.exit_code == 0 and "stage 2: cute.copy at" in ok.output, ok.output
    differs = CliRunner().invoke(main, ["diff", str(loose), *args, "--format", "json"])
    assert differs.exit_code == 1, differs.output
    # block 3 is the corner tile: (20 - 16) x (200 - 128) of its 16 x 128 elements are in bounds
    assert '"missing": ' + str(16 * 128 - (M - 16) * (N - 128)) in differs.output
    # a refusal from a separate process: one line on stderr, status 2, no traceback
    bad = subprocess.run([sys.executable, "-m", "threadmap", "diff", str(tmp / "elementwise_add.yaml"), "--dsl",
                          f"{KERNELS}:branch_on_data", "--dsl-args", "mX=A,mY=B"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert bad.stderr.startswith("threadmap: error: ") and "a branch depends on data" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("extra, message", [
    (["--regex", "x"], "--regex and --marker read a log"),
    (["--dsl-args", "mA"], "--dsl-args expects NAME=VALUE pairs"),
    (["--dsl-blocks", "0,x"], "--dsl-blocks expects block ids"),
    (["--dsl-args", "mA=A,mB=B,mC=Q"], "the spec has no tensor 'Q'"),
])
def test_bad_options_exit_2(example, extra: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from threadmap.cli import main

    tmp, _, _ = example
    r = CliRunner().invoke(main, ["diff", str(tmp / "elementwise_add.yaml"), "--dsl", EXAMPLE, *extra])
    assert r.exit_code == 2 and message in r.output, r.output
