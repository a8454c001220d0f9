"""``threadmap show`` of a spec with wgmma operands: the descriptor as CuTe prints it and the
chunk addresses the tensor core reads, in text and SVG."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import threadmap.api as api
import threadmap.layout as L
from threadmap.render import gmma_svg, gmma_text

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "pipeline" / "sm90_gmma_converted_operands.yaml"


def test_show_prints_each_operands_descriptor() -> None:
    text = api.show(SPEC).text
    model = api.models(SPEC)[0]
    assert model.pipeline is not None
    for g in model.pipeline.gmma:
        assert str(g.descriptors[(0, 0)]) in text


def test_the_text_and_the_picture_show_the_read_addresses() -> None:
    stage = L.gmma_layout_atom("K", "SW128", 16).tile_to_shape((64, 64))
    d = L.make_gmma_desc_tensor("K", stage, (64, 16), 16, 512)[(0, 0)]
    reads = L.gmma_smem_addresses(d, "K", 64, 16, 16)
    text = gmma_text("A", d, "K", (64, 16), 16, rows=8)
    rows = [line.split() for line in text.splitlines() if line[:4].strip().isdigit()]
    assert [[int(x) for x in r[1:]] for r in rows] == reads[:8, ::8].tolist()
    svg = ET.fromstring(gmma_svg("A", d, "K", (64, 16), 16, rows=8))
    labels = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert all(str(int(a)) in labels for a in reads[:8, ::8].ravel())
