"""ldmatrix and stmatrix move data across lanes: a register side is routed by the tiled copy's
other role (``model.partition.data_routing``), so dataflow follows each element to the
register that holds or receives it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import threadmap.api as api
import threadmap.layout as L
from threadmap.layout.atom.mma_traits import SM90_64xNx16_F32F16F16_SS, get_mma_atom
from threadmap.model.partition import data_routing, tiled_copy_partition
from threadmap.report.model import DataflowSummary

ROOT = Path(__file__).resolve().parents[2]


def _copies() -> list[tuple[str, object, tuple[int, int], str]]:
    gmma = L.make_tiled_mma(SM90_64xNx16_F32F16F16_SS(16, "K", "K"))
    sm80 = L.make_tiled_mma(get_mma_atom("SM80_16x8x16_F32F16F16F32_TN"), L.Layout((2, 2, 1)))
    return [
        ("stsm_x4_C", L.make_tiled_copy_C_atom(L.CopyAtom(L.get_copy_op("SM90_U32x4_STSM_N"), "half_t"), gmma),
         (64, 16), "dst"),
        ("ldsm_x4_A", L.make_tiled_copy_A(L.CopyAtom(L.get_copy_op("SM75_U32x4_LDSM_N"), "half_t"), sm80),
         (32, 16), "src"),
    ]


@pytest.mark.parametrize("name, tc, tile, memory_side", _copies(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_access_moves_the_register_holding_its_element(name: str, tc: object, tile: tuple[int, int],
                                                              memory_side: str) -> None:
    mem = tiled_copy_partition(tile, tc, memory_side, 128)
    assert mem.peer is not None                 # these atoms move data across lanes
    reg = data_routing(mem, mem.values, mem.vec)
    t, v = reg.coord[..., 0], reg.coord[..., 1]
    # the register each access takes holds (in the copy's register-role order) the access's element
    assert np.array_equal(mem.peer[t, v], mem.coord)
    # and no register is taken twice
    assert len({(int(a), int(b)) for a, b in zip(t.ravel(), v.ravel())}) == t.size


def test_a_plain_copy_keeps_each_threads_registers() -> None:
    tc = L.make_tiled_copy(L.CopyAtom(L.get_copy_op("UniversalCopy<uint128_t>"), "half_t"),
                           L.Layout((16, 8), (8, 1)), L.Layout((1, 8)))
    mem = tiled_copy_partition((16, 64), tc, "dst", 128)
    assert mem.peer is None
    reg = data_routing(mem, mem.values, mem.vec)
    t, v = np.meshgrid(np.arange(128), np.arange(mem.values), indexing="ij")
    assert np.array_equal(reg.coord, np.stack([t, v], axis=-1))


def test_the_stmatrix_epilogue_delivers_its_tile() -> None:
    run = api.verify_spec(ROOT / "specs" / "mma" / "sm90_stmatrix_epilogue_64x16.yaml")[0]
    flow = next(r for r in run.results if r.check == "dataflow")
    assert isinstance(flow.summary, DataflowSummary)
    assert flow.status == "PASS" and flow.summary.wrong_values == 0 and flow.summary.transform == "copy"
