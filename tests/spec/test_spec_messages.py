"""Bad specs found by attacking the tool: each is refused through the command line with exit
status 2 and one located line ``FILE:LINE:COL: field.path: message`` that says what is wrong."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from threadmap.cli import main
from threadmap.spec.semantics import MAX_SHARED_BYTES

SPEC = """\
spec: 1
name: messages
element: f32
threads: 32
grid: [2]
tensors:
  x: {memory: global, layout: "(64,4):(4,1)"}
  s: {memory: shared, layout: "(32,4):(4,1)"}
stages:
  - copy:
      src:
        tensor: x
        tile: [32, 4]
        at: [bx, 0]
        tiled_copy: {threads: "(32,1):(1,0)", values: "(1,4):(0,1)", atom: ATOM}
      dst:
        tensor: s
        tile: [32, 4]
        at: [AT, 0]
        tiled_copy: {threads: "(32,1):(1,0)", values: "(1,4):(0,1)"}
"""


def verify(tmp_path: Path, text: str) -> tuple[int, str]:
    path = tmp_path / "k.yaml"
    path.write_text(text)
    r = CliRunner().invoke(main, ["verify", str(path)])
    return r.exit_code, r.stderr


def spec(atom: str = "UniversalCopy<uint128_t>", at: str = "0", x: str = "(64,4):(4,1)") -> str:
    return (SPEC.replace("ATOM", atom).replace("AT, 0", f'"{at}", 0')
            .replace('x: {memory: global, layout: "(64,4):(4,1)"}', f'x: {{memory: global, layout: "{x}"}}'))


def located(err: str, text: str, field: str, needle: str) -> str:
    """The one error line; it names the field and sits at the field's value in ``text``."""
    lines = [ln for ln in err.splitlines() if ln.startswith("threadmap: error:")]
    assert len(lines) == 1, err
    m = re.match(r"threadmap: error: .*k\.yaml:(\d+):(\d+): (\S+): (.*)", lines[0])
    assert m is not None, lines[0]
    line, col, path, msg = int(m[1]), int(m[2]), m[3], m[4]
    assert path == field, lines[0]
    row = text.splitlines()[line - 1]
    assert row[col - 1:].startswith(needle), (row, col, needle)
    return msg


def test_the_spec_is_fine(tmp_path: Path) -> None:
    code, err = verify(tmp_path, spec())
    assert code in (0, 1), err


@pytest.mark.parametrize("atom", ["AutoVectorizingCopyWithAssumedAlignment<12²>",
                                  "AutoVectorizingCopyWithAssumedAlignment<６4>"])
def test_non_ascii_digit_in_an_atom_is_located_at_the_atom(tmp_path: Path, atom: str) -> None:
    text = spec(atom=atom)
    code, err = verify(tmp_path, text)
    assert code == 2, err
    msg = located(err, text, "stages[0].copy.src.tiled_copy.atom", atom)
    assert "non-ASCII" in msg and "int()" not in msg


def test_a_stride_past_int64_says_so(tmp_path: Path) -> None:
    lay = "(64,4):(-999999999999999999,-999999999999999999)"
    text = spec(x=lay)
    code, err = verify(tmp_path, text)
    assert code == 2, err
    msg = located(err, text, "tensors.x.layout", f'"{lay}"')
    assert "64-bit range" in msg and "not an integer" not in msg
    # (63 + 3) * 999999999999999999: the farthest offset, computed here on Python ints
    assert str(-66 * 999999999999999999) in msg


def test_shared_offset_past_the_cta_is_refused_before_allocation(tmp_path: Path) -> None:
    k = 1953125000000000  # block 1's tile starts at row 32 k: byte 16 * 32 k = 10^18
    text = spec(at=f"bx * {k}")
    code, err = verify(tmp_path, text)
    assert code == 2, err
    msg = located(err, text, "stages[0].copy.dst.at", '["bx')
    assert "MemoryError" not in msg and str(MAX_SHARED_BYTES) in msg
    # the farthest element: row 32 k + 31, column 3 of a (32,4):(4,1) tensor, 4 bytes each
    assert f"byte {((32 * k + 31) * 4 + 3 + 1) * 4 - 1} " in msg


def test_shared_reads_past_the_tensor_inside_the_cta_still_run(tmp_path: Path) -> None:
    """Inside the CTA's shared memory, leaving the tensor is the coverage check's finding."""
    code, err = verify(tmp_path, spec(at="bx"))
    assert code in (0, 1), err


def test_shared_offset_past_the_cta_points_at_the_offset(tmp_path: Path) -> None:
    text = spec().replace('s: {memory: shared, layout: "(32,4):(4,1)"}',
                          's: {memory: shared, layout: "(32,4):(4,1)", offset: 1000000000000}')
    code, err = verify(tmp_path, text)
    assert code == 2, err
    msg = located(err, text, "tensors.s.offset", "1000000000000")
    # (offset + cosize 128) elements of 4 bytes
    assert f"need {(10**12 + 128) * 4} bytes" in msg and str(MAX_SHARED_BYTES) in msg


GEMM_A = Path(__file__).resolve().parents[2] / "specs/cutlass/sm80_f16_gemm_a_128x32_warpraked.yaml"
CP_ASYNC = "SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>"


@pytest.mark.parametrize("atom,says", [
    ("SM80_CP_ASYNC_CACHEGLOBL<uint128_t>", "unknown copy operation"),
    ("SM80_CP_ASYNC_CACHEALWAYS<uint64_t>", "moves 64 bits per instruction, but the src side accesses 128 bits "
                                            "(8 x 16-bit A)"),
    ("SM80_CP_ASYNC_CACHEGLOBAL<uint64_t>", "8 bytes is not supported (allowed: 16)"),
    ("AutoVectorizingCopy", "names no instruction"),
    ("SM75_U32x4_LDSM_N", "warp-wide"),
])
def test_a_stage_atom_that_is_not_the_stages_instruction_is_located(tmp_path: Path, atom: str, says: str) -> None:
    """The thread-map stage of the SM80 GEMM A tile moves 8 halves (128 bits) per access: its
    ``atom`` must be a known one-thread copy operation of exactly that width."""
    text = GEMM_A.read_text().replace(f"atom: {CP_ASYNC}", f'atom: "{atom}"')
    code, err = verify(tmp_path, text)
    assert code == 2, err
    assert says in located(err, text, "stages[0].copy.atom", f'"{atom}"')


def test_a_stage_atom_names_the_instruction_of_the_sides_without_a_tiled_copy(tmp_path: Path) -> None:
    from threadmap.api import models
    code, err = verify(tmp_path, GEMM_A.read_text())
    assert code == 0, err
    (m,) = models(GEMM_A)
    cp = m.stages[0]
    assert cp.cp_async and cp.src.copy_op == cp.dst.copy_op == CP_ASYNC
    assert cp.src.instruction == f"{CP_ASYNC} (PitchLinearWarpRakedThreadMap), 128-bit"
    # a threads partition names its width with vector_bits, the atom its instruction
    text = SPEC.replace('tiled_copy: {threads: "(32,1):(1,0)", values: "(1,4):(0,1)", atom: ATOM}',
                        'threads: "(32,1):(1,0)"').replace(
        'tiled_copy: {threads: "(32,1):(1,0)", values: "(1,4):(0,1)"}', 'threads: "(32,1):(1,0)"')
    text = text.replace("AT, 0", "0, 0") + "      vector_bits: 128\n      atom: ATOM\n"
    code, err = verify(tmp_path, text.replace("ATOM", "SM80_CP_ASYNC_CACHEALWAYS<uint128_t>"))
    assert code in (0, 1), err
    code, err = verify(tmp_path, text.replace("ATOM", "UniversalCopy<uint64_t>"))
    assert code == 2 and "moves 64 bits per instruction, but the src side accesses 128 bits" in err, err


def test_a_cp_async_stage_goes_from_global_to_shared_memory(tmp_path: Path) -> None:
    text = GEMM_A.read_text().replace("  - barrier\n", """  - barrier
  - copy:
      src: {tensor: sA,
            thread_map: {name: PitchLinearWarpRakedThreadMap, shape: [32, 128], threads: 128,
                         warp_thread_arrangement: [4, 8], elements_per_access: 8, contiguous_mode: 1}}
      dst: {tensor: A, tile: [128, 32], at: [bx, by],
            thread_map: {name: PitchLinearWarpRakedThreadMap, shape: [32, 128], threads: 128,
                         warp_thread_arrangement: [4, 8], elements_per_access: 8, contiguous_mode: 1}}
      atom: SM80_CP_ASYNC_CACHEALWAYS<uint128_t>
""")
    code, err = verify(tmp_path, text)
    assert code == 2, err
    msg = located(err, text, "stages[2].copy.atom", "SM80_CP_ASYNC_CACHEALWAYS")
    assert "copies global memory to shared memory; this copy goes from shared to global" in msg


def test_a_stage_atom_beside_a_tiled_copy_naming_another_is_located(tmp_path: Path) -> None:
    text = spec() + "      atom: SM80_CP_ASYNC_CACHEALWAYS<uint128_t>\n"
    code, err = verify(tmp_path, text)
    assert code == 2, err
    msg = located(err, text, "stages[0].copy.atom", "SM80_CP_ASYNC_CACHEALWAYS")
    assert "src side's tiled_copy names its own copy operation (UniversalCopy<uint128_t>)" in msg


TILED = ('tiled_copy: {threads: "(4,8):(8,1)", values: "(1,4):(4,1)", atom: "%s"}')
CP_TILE = """spec: 1
name: a 4 x 32 float tile, one 16-byte cp.async a thread
element: f32
threads: 32
sizes: {M: 64, N: 64}
grid: ["ceil_div(M, 4)", "ceil_div(N, 32)"]
tensors:
  A:  {memory: global, layout: "(M,N):(N,1)", align: 256}
  sA: {memory: shared, layout: "(4,32):(32,1)"}
stages:
  - copy:
      src: {tensor: A, tile: [4, 32], at: [bx, by], SRC}
      dst: {tensor: sA, DST}
  - barrier
"""


@pytest.mark.parametrize("src,dst", [
    ("SM80_CP_ASYNC_CACHEALWAYS<uint128_t>", "UniversalCopy<uint64_t>"),
    ("SM80_CP_ASYNC_CACHEALWAYS<uint128_t>", "SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>"),
    ("UniversalCopy<uint128_t>", "SM80_CP_ASYNC_CACHEALWAYS<uint128_t>"),
])
def test_a_cp_async_tiled_copy_and_another_operation_on_one_stage_are_located(tmp_path: Path, src: str,
                                                                               dst: str) -> None:
    """One cp.async instruction moves both sides: sides whose tiled_copies name different
    operations were accepted, each counted by its own (the destination of a .ca source by the
    store rule, at 64 bits)."""
    text = CP_TILE.replace("SRC", TILED % src).replace("DST", TILED % dst)
    code, err = verify(tmp_path, text)
    assert code == 2, err
    msg = located(err, text, "stages[0].copy.dst.tiled_copy.atom", f'"{dst}"')
    assert f"the sides name different copy operations ({src} and {dst})" in msg
    same = CP_TILE.replace("SRC", TILED % dst).replace("DST", TILED % dst)
    assert verify(tmp_path, same)[0] in (0, 1)


def test_a_cp_async_tiled_copy_goes_from_global_to_shared_memory(tmp_path: Path) -> None:
    """A tiled_copy's cp.async on a copy from shared to global memory was accepted (only the
    stage ``atom`` was checked)."""
    op = "SM80_CP_ASYNC_CACHEALWAYS<uint128_t>"
    tc = TILED % op
    text = CP_TILE.replace("SRC", tc).replace("DST", tc) + \
        f"  - copy:\n      src: {{tensor: sA, {tc}}}\n      dst: {{tensor: A, tile: [4, 32], at: [bx, by], {tc}}}\n"
    code, err = verify(tmp_path, text)
    assert code == 2, err
    msg = located(err, text, "stages[2].copy.src.tiled_copy.atom", f'"{op}"')
    assert "copies global memory to shared memory; this copy goes from shared to global" in msg
