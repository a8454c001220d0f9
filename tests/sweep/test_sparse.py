"""Sparse GEMMs (SparseMmaMultistage): what the real templates print for one configuration (A
compressed, B, the metadata E copied by part of the CTA), the spec's shared layouts and thread
maps against the printed offsets, the specs verified, and planted wrong premises refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import threadmap.api as api
from threadmap.cutlass import THREAD_MAPS
from threadmap.spec.load import loads_spec
from threadmap.spec.parsed import bind_layout
from threadmap.sweep.extract import Extracted, extract
from threadmap.sweep.library import SPARSE_FAMILY, Configuration, generate, group
from threadmap.sweep.run import in_slice, verify_text
from threadmap.sweep.specs import NotAnalysed
from threadmap.sweep.specs_sparse import DOCUMENT_SEPARATOR, accepted_multiple, sparse_spec_text

#: f16, column-major A and B, 6 stages: E's map has one warp of the CTA's four
KERNEL = "cutlass_tensorop_s16832spgemm_f16_64x128_64x6_nn_align8"


@pytest.fixture(scope="module")
def sparse() -> tuple[Configuration, Extracted]:
    from tests.support.cxx_oracle import require_oracle

    require_oracle()
    cfgs = group(generate(("80",), KERNEL))
    assert len(cfgs) == 1 and cfgs[0].family == SPARSE_FAMILY and in_slice(cfgs[0])
    return cfgs[0], extract(cfgs)[0]


def test_printed_mainloop(sparse: tuple[Configuration, Extracted]) -> None:
    cfg, ex = sparse
    assert not ex.error, ex.error
    tm, tn, tk = ex.shape
    assert [tm, tn, tk] == cfg.fields["threadblock"]
    a, e = ex.operands["A"], ex.operands["E"]
    sparse_, epe = int(ex.oracle["sparse.kSparse"]), int(ex.oracle["sparse.kElementsPerElementE"])
    assert a.tile == (tm, tk // sparse_)                      # A compressed
    assert e.layout.endswith(f"ColumnMajorInterleaved<{ex.oracle['sparse.E.interleave']}>")
    assert 32 * int(ex.oracle["sparse.kValidWarps"]) == e.threads < a.threads
    assert tuple(int(x) for x in ex.oracle["sparse.E.shape"].split()) == (tm, tk // sparse_ // epe)


def test_spec_matches_the_cxx(sparse: tuple[Configuration, Extracted]) -> None:
    """Every shared tensor of the spec gives the C++ layout's offset at every cell of a stage,
    and every thread map the C++ map's accesses; both documents verify and pass."""
    cfg, ex = sparse
    w = sparse_spec_text(cfg, ex, "test")
    docs = w.text.split(DOCUMENT_SEPARATOR)
    assert len(docs) == 2                                     # E by its own warps
    seen = set()
    for doc in docs:
        spec = loads_spec(doc, "yaml", "t").spec
        for name, t in spec.tensors.items():
            if t.memory != "shared":
                continue
            op = ex.operands[name[1:]]
            rows, cols = op.table.shape
            lay = bind_layout(t.layout, {})
            r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
            got = np.asarray(lay((r.reshape(-1), c.reshape(-1))), dtype=np.int64).reshape(rows, cols)
            assert np.array_equal(got, op.table), name
            seen.add(name)
        for st in spec.stages:
            if st == "barrier":
                continue
            tm_spec = st.copy_.src.thread_map
            op = ex.operands[str(st.copy_.src.tensor)]
            assert tm_spec is not None and tm_spec.threads == op.threads == spec.threads
            args = [tuple(tm_spec.shape), tm_spec.threads]
            if tm_spec.warp_thread_arrangement is not None:
                args.append(tuple(tm_spec.warp_thread_arrangement))
            py = THREAD_MAPS[tm_spec.name](*args, tm_spec.elements_per_access)
            starts = np.asarray(py.access_offsets()).reshape(py.threads, -1, 2)
            assert np.array_equal(starts, op.gmap.starts())
        assert api.verify(loads_spec(doc, "yaml", "t")).errors == []
    assert seen == {"sA", "sB", "sE"}
    status, findings, _, _, _, err = verify_text(w.text, KERNEL)
    assert (status, err) == ("pass", ""), findings


def _planted(ex: Extracted, **oracle: str) -> Extracted:
    return dataclasses.replace(ex, oracle={**ex.oracle, **oracle})


def test_planted_premises_refused(sparse: tuple[Configuration, Extracted]) -> None:
    cfg, ex = sparse
    valid = int(ex.oracle["sparse.kValidWarps"])
    cases = {
        "metadata copy by part of a warp": _planted(ex, **{"sparse.kValidWarps": str(valid + 1)}),
        "metadata tile not modelled": _planted(ex, **{"sparse.E.shape": f"{ex.shape[0]} {2 * ex.shape[2]}"}),
        "problem sizes not a lattice": _planted(ex, **{"sparse.accepts.M": "1" + ex.oracle["sparse.accepts.M"][1:]}),
    }
    e = ex.operands["E"]
    bad_e = dataclasses.replace(e, layout="cutlass::layout::ColumnMajor")
    cases["metadata layout not modelled"] = dataclasses.replace(ex, operands={**ex.operands, "E": bad_e})
    for kind, planted in cases.items():
        with pytest.raises(NotAnalysed) as got:
            sparse_spec_text(cfg, planted, "test")
        assert got.value.kind == kind, got.value


def test_accepted_multiple() -> None:
    assert accepted_multiple("M", "0001" * 8) == 4
    with pytest.raises(NotAnalysed):
        accepted_multiple("M", "0001" * 7 + "0000")
    with pytest.raises(NotAnalysed):
        accepted_multiple("M", "0" * 31 + "1")
