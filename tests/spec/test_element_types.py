"""The spec's element types against the C++ headers, and sub-byte elements addressed exactly.

The widths come from the real headers (``cute::sizeof_bits_v`` and ``cutlass::sizeof_bits`` of
each CUTLASS type, and ``threadmap_spec.h``'s own name for it), compiled host-side once.  A spec
of 4-bit or 1-bit elements must cost what the same copy written in bytes costs: the same byte
addresses, so the same sectors, lines, bank wavefronts and widest legal vectors.  An access that
is not a whole number of bytes, or starts inside a byte, is a spec error (exit 2).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import threadmap.api as api
from tests.support.cxx_oracle import cannot_run
from threadmap.cli import main
from threadmap.gpu.toolchain import ToolchainError, build_host, require
from threadmap.spec.schema import ELEMENT_BITS

#: every C++ element type a spec may name (those threadmap_spec.h names), as CUTLASS spells it
CXX_TYPES = ["float", "double", "cutlass::half_t", "cutlass::bfloat16_t", "cutlass::tfloat32_t",
             "cutlass::float_e4m3_t", "cutlass::float_e5m2_t", "int8_t", "uint8_t", "int16_t", "uint16_t",
             "int32_t", "uint32_t", "int64_t", "uint64_t", "cutlass::complex<float>", "cutlass::complex<double>",
             "cutlass::int4b_t", "cutlass::uint4b_t", "cutlass::uint1b_t"]


@pytest.fixture(scope="module")
def header_widths() -> dict[str, tuple[str, int, int]]:
    """C++ type -> (threadmap_spec.h's name, cute::sizeof_bits_v, cutlass::sizeof_bits)."""
    try:
        require()
    except ToolchainError as e:
        cannot_run(str(e))
    lines = [f'  std::printf("%s\\t%s\\t%d\\t%d\\n", "{t}", threadmap::detail::element<{t}>(), '
             f"int(cute::sizeof_bits_v<{t}>), int(cutlass::sizeof_bits<{t}>::value));" for t in CXX_TYPES]
    source = "#include <cstdio>\n#include <threadmap_spec.h>\nint main() {\n" + "\n".join(lines) + "\n}\n"
    out = subprocess.run([str(build_host(source))], check=True, capture_output=True, text=True, timeout=60).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    return {t: (n, int(a), int(b)) for t, n, a, b in rows}


def test_every_spec_element_is_named_by_the_header_at_the_headers_width(
        header_widths: dict[str, tuple[str, int, int]]) -> None:
    assert len(header_widths) == len(CXX_TYPES)
    for cxx, (name, cute_bits, cutlass_bits) in header_widths.items():
        assert cute_bits == cutlass_bits, cxx
        assert ELEMENT_BITS[name] == cute_bits, (cxx, name)
    # one C++ type per spec name, and no spec name without one
    assert sorted(n for n, _, _ in header_widths.values()) == sorted(ELEMENT_BITS)


# --- sub-byte elements cost what the same bytes cost ---------------------------------------------

def _spec(element: str, cols: int, rows: int, vec: int, threads: int, pad: int, at_col: int) -> dict[str, Any]:
    """``rows`` x ``cols`` tiles of a row-major tensor copied to a padded shared tile with a
    stripmined thread map of ``vec`` elements per access (``cp.async`` of that width, a plain
    copy below 32 bits)."""
    bits = ELEMENT_BITS[element]
    tm = {"name": "PitchLinearStripminedThreadMap", "shape": [cols, rows], "threads": threads,
          "elements_per_access": vec, "contiguous_mode": 1}
    width = vec * bits
    atom = f"SM80_CP_ASYNC_CACHE{'GLOBAL' if width == 128 else 'ALWAYS'}<uint{width}_t>" if width >= 32 else \
        f"UniversalCopy<uint{width}_t>"
    return {"spec": 1, "name": f"{element} copy", "element": element, "threads": threads,
            "sizes": {"M": 2 * rows, "K": 2 * cols + at_col},
            "grid": [2, 2],
            "tensors": {"A": {"memory": "global", "layout": "(M,K):(K,1)"},
                        "sA": {"memory": "shared", "layout": f"({rows},{cols}):({cols + pad},1)"}},
            "stages": [{"copy": {"src": {"tensor": "A", "tile": [rows, cols], "at": ["bx", "by"], "thread_map": tm},
                                 "dst": {"tensor": "sA", "thread_map": tm}, "predicate": "vector",
                                 "atom": atom}}, "barrier"]}


#: what must agree between the two specs, per check (element counts differ by design)
_SAME = {"coalescing": ("requests", "sectors", "ideal_sectors", "lines", "bytes", "misaligned", "access_bits"),
         "bank_conflicts": ("instructions", "wavefronts", "ideal_wavefronts", "max_wavefronts", "phases",
                            "access_bits"),
         "vectorize": ("declared_bits", "declared_legal", "max_legal_bits")}


def _costs(spec: dict[str, Any]) -> dict[tuple[str, str | None], tuple[Any, ...]]:
    report = api.verify(spec)
    assert not report.errors, report.errors[0].message
    out = {}
    for r in report.runs[0].results:
        if r.check in _SAME:
            s = r.summary.model_dump()
            out[(r.check, r.side)] = (r.status, *(s[k] for k in _SAME[r.check]))
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(element=st.sampled_from(["i4", "u4", "b1"]), access_bytes=st.sampled_from([1, 2, 4, 8, 16]),
       threads=st.sampled_from([32, 64]), rows=st.sampled_from([4, 8]), chunks=st.sampled_from([4, 8]),
       pad_bytes=st.sampled_from([0, 4, 16]), at_bytes=st.sampled_from([0, 4, 16]))
def test_a_sub_byte_copy_costs_what_the_same_bytes_cost(element: str, access_bytes: int, threads: int, rows: int,
                                                       chunks: int, pad_bytes: int, at_bytes: int) -> None:
    per = 8 // ELEMENT_BITS[element]          # elements per byte
    cols_b = chunks * access_bytes            # a tile row in bytes: whole accesses
    if cols_b * rows // access_bytes % threads and threads > cols_b * rows // access_bytes:
        threads = 32
    sub = _spec(element, cols_b * per, rows, access_bytes * per, threads, pad_bytes * per, at_bytes * per)
    byte = _spec("u8", cols_b, rows, access_bytes, threads, pad_bytes, at_bytes)
    a, b = _costs(sub), _costs(byte)
    assert a == b and a


def test_an_access_of_part_of_a_byte_is_a_spec_error(tmp_path: Path) -> None:
    spec = _spec("i4", 32, 8, 1, 32, 0, 0)
    spec["stages"][0]["copy"].pop("atom")
    report = api.verify(spec)
    assert report.errors and "whole bytes" in report.errors[0].message
    path = tmp_path / "nibble.yaml"
    import yaml

    path.write_text(yaml.safe_dump(spec))
    r = CliRunner().invoke(main, ["verify", str(path)])
    assert r.exit_code == 2 and "whole bytes" in r.output


def test_an_access_that_starts_inside_a_byte_is_a_spec_error() -> None:
    # rows of K = 2 * 32 + 1 nibbles: every odd row starts inside a byte
    spec = _spec("i4", 32, 8, 2, 32, 0, 1)
    report = api.verify(spec)
    assert report.errors and "inside a byte" in report.errors[0].message
    # the same rows of whole bytes verify
    assert not api.verify(_spec("i4", 32, 8, 2, 32, 0, 2)).errors
