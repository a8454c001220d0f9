"""Bad input to ``threadmap.dsl`` and ``threadmap diff --dsl`` gives a clear error, never a
crash, a traceback or a wrong answer: DSL objects used after their trace (whose IR is freed:
reading it crashed the interpreter), kernels and modules that raise, launchers the tracer
cannot call as they are, traces too costly to run, and ``--dsl-shared`` names that mean
nothing.  The kernels: ``data/bad_kernels.py`` and ``data/kernels.py``."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("cutlass.cute", reason="the CuTe DSL (nvidia-cutlass-dsl) is not installed")

from threadmap.dsl.trace import DslTraceError, TensorArg, diff_trace, trace_dsl  # noqa: E402
from threadmap.errors import AtomError  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
BAD = DATA / "bad_kernels.py"
ROOT = Path(__file__).resolve().parents[2]
ROW = TensorArg("A", "f32", (4, 32), (32, 1), 16)  # the bad kernels copy row 0 of mA to mC
OUT = TensorArg("C", "f32", (4, 32), (32, 1), 16)

STALE = """
import cutlass, cutlass.cute as cute
from threadmap.dsl import convert, traced
from threadmap.errors import LayoutError

def tiled_copy():
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
    return cute.make_tiled_copy_tv(atom, cute.make_layout((4, 32), stride=(32, 1)), cute.make_layout((1, 4)))

makers = {
    "swizzle": lambda: cute.make_swizzle(3, 3, 3),
    "composed": lambda: cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64))),
    "layout": lambda: cute.make_layout((4, 4)),
    "tiled copy": tiled_copy,
    "mma": lambda: cute.make_tiled_mma(cute.nvgpu.warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)),
                                       cute.make_layout((2, 2, 1))),
}
for name, make in makers.items():
    stale = traced(make)
    for when, run in (("no trace is running", lambda: convert(stale)),
                      ("another trace is running", lambda: traced(lambda: convert(stale)))):
        try:
            run()
        except LayoutError as e:
            assert "used after the @cute.jit trace that built it ended" in str(e) and when in str(e), e
        else:
            raise AssertionError(name + ": converted after its trace")
print("refused", len(makers))
"""


def test_a_dsl_object_after_its_trace_is_refused_without_reading_its_ir() -> None:
    # a separate process: reading a stale swizzle's or atom's IR is a segmentation fault
    r = subprocess.run([sys.executable, "-c", STALE], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "refused 5", (r.returncode, r.stdout, r.stderr[-2000:])


def test_traced_within_a_trace_runs_in_it() -> None:
    import cutlass.cute as cute

    from threadmap.dsl import capture, convert, traced

    def outer() -> tuple:
        return capture(lambda: cute.make_layout((4, 4))), convert(cute.make_layout((2, 2), stride=(2, 1)))

    inner, here = traced(outer)
    assert (str(inner), str(here)) == ("(4,4):(1,4)", "(2,2):(2,1)")


def test_bad_element_sizes_and_unmodelled_widths_are_refused() -> None:
    import cutlass
    import cutlass.cute as cute

    from threadmap.dsl import capture, smem_layout

    layout, sw = capture(lambda: (cute.make_layout((8, 8)), cute.make_swizzle(3, 4, 3)))
    with pytest.raises(AtomError, match="a bit count is positive, got 0"):
        smem_layout(layout, sw, element=0)  # was taken as log2 of -1 bytes: Sw<3,5,3>
    with pytest.raises(AtomError, match="or a bit count, got 'f16'"):
        smem_layout(layout, sw, element="f16")
    with pytest.raises(AtomError, match="universal copy of 256 bits per copy .* 8 to 128 bits"):
        capture(lambda: cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=256))


def test_errors_of_the_users_code_say_where(tmp_path: Path) -> None:
    bad = tmp_path / "syntax_error.py"
    bad.write_text("import cutlass.cute as cute\ndef f(:\n    pass\n")
    with pytest.raises(DslTraceError, match=r"syntax_error\.py:2:7: importing the module failed: SyntaxError: "):
        trace_dsl(f"{bad}:f", {})
    boom = tmp_path / "raises_on_import.py"
    boom.write_text("x = 1\nraise RuntimeError('boom')\n")
    with pytest.raises(DslTraceError, match=r"raises_on_import\.py:2:1: importing the module failed: RuntimeError: "
                                            r"boom$"):
        trace_dsl(f"{boom}:f", {})
    line = next(k for k, t in enumerate(BAD.read_text().splitlines(), 1) if 'raise ValueError("the kernel' in t)
    with pytest.raises(DslTraceError, match=rf"bad_kernels\.py:{line}:5: the CuTe DSL could not trace raising: "
                                            r"ValueError: the kernel raised$"):
        trace_dsl(f"{BAD}:raising", {"mA": ROW, "mC": OUT})
    # sys.exit in the launcher once ended threadmap with the kernel's status 0: a silent pass
    with pytest.raises(DslTraceError, match=r"bad_kernels\.py:\d+:5: the CuTe DSL could not trace exits: SystemExit"):
        trace_dsl(f"{BAD}:exits", {"mA": ROW, "mC": OUT})


def test_the_kernels_module_imports_its_siblings(tmp_path: Path) -> None:
    # as `python FILE.py` would: the file's folder is on the path while it is imported
    (tmp_path / "tile_sizes.py").write_text("THREADS = 16\n")
    (tmp_path / "sibling_kernel.py").write_text(textwrap.dedent("""\
        import cutlass.cute as cute
        from tile_sizes import THREADS

        @cute.kernel
        def k_kernel(mA: cute.Tensor, mC: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            mC[0, tidx] = mA[0, tidx]

        @cute.jit
        def k(mA: cute.Tensor, mC: cute.Tensor):
            k_kernel(mA, mC).launch(grid=[1, 1, 1], block=[THREADS, 1, 1])
        """))
    trace = trace_dsl(f"{tmp_path / 'sibling_kernel.py'}:k", {"mA": ROW, "mC": OUT})
    assert trace.block == (16, 1, 1) and str(tmp_path) not in sys.path


def test_launchers_are_called_as_their_signature_says() -> None:
    # keyword-only parameters, and a parameter after one left to its default, by name
    for launcher, n in (("keyword_only", 8), ("skipped_default", 5)):
        args: dict = {"mA": ROW, "mC": OUT} | ({"n": n} if launcher == "skipped_default" else {})
        trace = trace_dsl(f"{BAD}:{launcher}", args)
        rows = trace.stages[0].rows
        assert sorted(r[1] for r in rows) == list(range(n)), launcher  # threads tidx < n copy one element
    with pytest.raises(DslTraceError, match=r"\*args takes any number of arguments"):
        trace_dsl(f"{BAD}:varargs", {})
    with pytest.raises(DslTraceError, match=r"parameter 'mA' is a cute\.Tensor, given 5: give mA=TENSOR"):
        trace_dsl(f"{BAD}:raising", {"mA": 5, "mC": OUT})
    with pytest.raises(DslTraceError, match=r"parameter 'n' is annotated Int32, given the tensor A"):
        trace_dsl(f"{BAD}:keyword_only", {"mA": ROW, "mC": OUT, "n": ROW})


def test_a_trace_too_costly_is_refused_before_it_runs_long(monkeypatch: pytest.MonkeyPatch) -> None:
    import threadmap.dsl.trace as tr

    args = {"mA": ROW, "mC": OUT}
    # each thread runs the 256 iterations; 32 threads are projected from the first one
    monkeypatch.setattr(tr, "MAX_TRACE_OPS", 4096)
    with pytest.raises(DslTraceError, match=r"bad_kernels\.py: the trace would need about \d+ operations \(\d+ in "
                                            r"the first thread of 32\); the tracer allows 4096"):
        trace_dsl(f"{BAD}:long_loop", args)
    monkeypatch.setattr(tr, "MAX_TRACE_OPS", 1 << 23)
    # 256 recorded copies per thread: over the trace's budget after the first thread
    monkeypatch.setattr(tr, "MAX_TRACE_RECORDS", 1000)
    with pytest.raises(DslTraceError, match=r"about 8192 accesses \(256 in the first thread of 32\)"):
        trace_dsl(f"{BAD}:long_loop", args)
    # and one thread alone over it is stopped at the copy, with its line
    monkeypatch.setattr(tr, "MAX_TRACE_RECORDS", 100)
    with pytest.raises(DslTraceError, match=r"bad_kernels\.py:\d+: a thread makes more than 100 accesses"):
        trace_dsl(f"{BAD}:long_loop", args)
    monkeypatch.setattr(tr, "MAX_TRACE_RECORDS", 1 << 19)
    # the DSL's module: its size before threadmap reads it, the DSL's own time while it builds it
    monkeypatch.setattr(tr, "MAX_IR_OPS", 20)
    with pytest.raises(DslTraceError, match=r"bad_kernels\.py: the CuTe DSL built more than 20 IR operations for "
                                            r"long_loop"):
        trace_dsl(f"{BAD}:long_loop", args)
    monkeypatch.setattr(tr, "MAX_IR_OPS", 1 << 17)
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGALRM) in (
            signal.SIG_DFL, None):  # where the timer can be armed (else the DSL's time is not bounded)
        monkeypatch.setattr(tr, "MAX_DSL_SECONDS", 1e-4)
        with pytest.raises(DslTraceError, match=r"the CuTe DSL took more than 0.0001 s to trace long_loop"):
            trace_dsl(f"{BAD}:long_loop", args)
    monkeypatch.setattr(tr, "MAX_DSL_SECONDS", 120.0)
    assert trace_dsl(f"{BAD}:keyword_only", args).stages  # the DSL traces again after being stopped


def test_dsl_shared_names_are_checked(tmp_path: Path) -> None:
    from tests.dsl.test_dsl_trace import smem_spec
    from threadmap.gpu.log import load_model

    model = load_model(smem_spec(tmp_path, "Sw<3,2,3> o 0 o (16,32):(32,1)"), None)
    x = TensorArg("x", "f32", (48, 32), (32, 1), 16)
    trace = trace_dsl(f"{DATA / 'kernels.py'}:smem_roundtrip", {"mX": x, "mY": TensorArg("y", "f32", (48, 32),
                                                                                           (32, 1), 16)})
    assert diff_trace(trace, model, side="dst", shared={"smem0": "sA"}).ok
    for shared, message in (({"smem9": "sA"}, "use no shared allocation 'smem9' (they use: smem0)"),
                            ({"smem0": "sQ"}, "sQ is no tensor of the spec (its shared tensors: sA)"),
                            ({"smem0": "x"}, "x is a global tensor of the spec")):
        with pytest.raises(DslTraceError, match=re.escape(message)):
            diff_trace(trace, model, side="dst", shared=shared)


def test_the_tracing_docs_console_example_runs_as_shown(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """docs/dsl-tracing.md's first console block, run in tests/dsl/data: add.yaml there is the
    spec test_dsl_trace writes (checked), and the output has the lines the docs show."""
    from click.testing import CliRunner

    from tests.dsl.test_dsl_trace import elementwise_spec
    from threadmap.cli import main

    assert (DATA / "add.yaml").read_text() == elementwise_spec(tmp_path).read_text()
    doc = (ROOT / "docs" / "dsl-tracing.md").read_text()
    block = re.search(r"```console\n\$ cd (\S+).*?\n\$ threadmap (.*?)\n(.*?)```", doc, flags=re.S)
    assert block is not None
    folder, command, shown = block.groups()
    monkeypatch.chdir(ROOT / folder)
    r = CliRunner().invoke(main, command.split())
    assert r.exit_code == 0, r.output
    squash = [" ".join(ln.split()) for ln in r.output.splitlines()]
    for line in textwrap.dedent(shown).splitlines():
        if line.startswith(("│", "  stage")):
            assert " ".join(line.split()) in squash, line



@pytest.mark.parametrize("layout", ["(M,N):(N,1)", "(M,N):(1,M)", "(M,N):(N+3,1)", "(M,N):(2*N,2)",
                                    "(M,N):(1,1)"])
def test_coordinates_of_offsets_by_arithmetic_or_table(tmp_path: Path, layout: str) -> None:
    """A spec tensor's element offsets map back to its coordinates by arithmetic where the
    strides nest (whatever the tensor's size), else through the table of every element; the
    two agree on every offset of the tensor's span, in it or not."""
    import numpy as np

    import threadmap.dsl.trace as tr
    from threadmap import Spec, registers, tile
    from threadmap.gpu.log import load_model

    def model(M: int, N: int):  # type: ignore[no-untyped-def]
        s = (Spec("t").element("f32").threads(32).sizes(M=M, N=N).grid(1).tensor("X", layout, "global")
             .copy(tile("X", (4, 8), 0, 0).threads("(4,8):(8,1)"), registers("r"), predicate="bounds"))
        return load_model(s.write(tmp_path / f"t{M}.yaml"), None)

    small = model(6, 5)
    inv = tr._inverse(small, "X", {})
    nested = isinstance(inv[0], str)
    assert nested == (layout != "(M,N):(1,1)")  # overlapping modes: only a table can say
    tm = small.tensors["X"]
    grids = np.indices(tm.shape).reshape(2, -1)
    offs = np.asarray(tm.offsets(tuple(grids))).reshape(-1)
    order = np.argsort(offs, kind="stable")
    table = (offs[order], grids[:, order])
    probe = np.arange(-2, int(offs.max()) + 3)
    got, found = tr._coords_of(inv, probe)
    want, want_found = tr._coords_of(table, probe)
    assert (found == want_found).all() and (got[:, found] == want[:, found]).all()
    if nested:  # a tensor of 2^38 elements is inverted without a table
        huge = tr._inverse(model(1 << 19, 1 << 19), "X", {})
        assert isinstance(huge[0], str)
    else:
        with pytest.raises(DslTraceError, match="through a table of at most"):
            tr._inverse(model(1 << 12, 1 << 12), "X", {})


def test_a_kernel_writing_only_outside_the_tensor_fails_with_notes(tmp_path: Path) -> None:
    from threadmap import Spec, tile
    from threadmap.gpu.log import load_model

    spec = (Spec("row").element("f32").threads(32).sizes(M=4, N=32).grid(1)
            .tensor("A", "(M,N):(N,1)", "global").tensor("C", "(M,N):(N,1)", "global")
            .copy(tile("A", (1, 32), 0, 0).threads("(1,32):(0,1)"), tile("C", (1, 32), 0, 0).threads("(1,32):(0,1)")))
    model = load_model(spec.write(tmp_path / "row.yaml"), None)
    trace = trace_dsl(f"{BAD}:outside", {"mA": ROW, "mC": OUT})
    assert trace.kernel == "outside_kernel"  # the module's name, not the IR's mangled symbol
    assert diff_trace(trace, model).ok  # the loads, from A, are the spec's
    # the stores are the kernel's bug: a failing report (exit 1), not bad input (exit 2)
    d = diff_trace(trace, model, side="dst")
    assert not d.ok and d.records == 0
    assert any("32 accesses land outside C (the first at element -100)" in n for n in d.notes), d.notes


def test_dsl_integers_are_taken_when_static_and_refused_when_dynamic() -> None:
    import cutlass
    import cutlass.cute as cute

    from threadmap import Spec
    from threadmap.dsl import convert, traced
    from threadmap.errors import LayoutError, SpecError

    def run() -> list[str]:
        tidx = cute.arch.thread_idx()[0]  # known only at run time
        out = [str(convert(cutlass.Int32(3) * 2)), str(Spec("s").threads(cutlass.Int32(64)).to_dict()["threads"])]
        for bad in (lambda: Spec("s").threads(tidx), lambda: convert(tidx)):
            try:
                bad()
            except (SpecError, LayoutError) as e:  # the DSL's own error was a coloured multi-line one
                out.append(f"{type(e).__name__}: {e}")
        return out

    got = traced(run)
    assert got[:2] == ["6", "64"] and len(got) == 4
    assert got[2].startswith("SpecError: the CuTe DSL value Int32 is dynamic") and "\n" not in got[2]
    assert got[3].startswith("LayoutError: the CuTe DSL value ? (Int32) is dynamic")


def test_the_report_never_overwrites_the_kernel(tmp_path: Path) -> None:
    import shutil

    from click.testing import CliRunner

    from threadmap.cli import main

    kernel = tmp_path / "bad_kernels.py"
    shutil.copy(BAD, kernel)
    shutil.copy(DATA / "add.yaml", tmp_path / "add.yaml")
    before = kernel.read_text()
    for flag in ("-o", "--dsl-log"):  # both were written over the kernel's source once
        r = CliRunner().invoke(main, ["diff", str(tmp_path / "add.yaml"), "--dsl", f"{kernel}:keyword_only",
                                      "--dsl-args", "mA=A,mC=C", flag, str(kernel)])
        assert r.exit_code == 2 and "would overwrite the input" in r.output, r.output
    assert kernel.read_text() == before
