"""The spec of a planar-complex GEMM's k-tile: the real and the imaginary copies of A and B.

``MmaPlanarComplexMultistage`` (:mod:`threadmap.sweep.extract_planar`) copies each operand's
k-tile twice per stage: the real parts with the real GEMM's iterators into the shared tile, the
imaginary parts, from their own pointer through an iterator of the same type at the same thread
and threadblock offset, into the same place of a second tile ``kImaginaryStride`` elements
further in the same shared buffer.  The spec is the real GEMM's (:func:`threadmap.sweep.specs.spec_text`:
its premises, sizes and layouts) with four copies:

* global tensors ``A``, ``Ai``, ``B``, ``Bi``: the imaginary matrix has the real one's layout at
  its own base (the kernel's ``lda_imag`` taken equal to ``lda_real``, as a planar-complex tensor
  of one leading dimension has them);
* a shared buffer per operand (``smemA``, ``smemB``: ``SharedStorage::operand_A``, its element
  count printed) viewed by ``sA`` at offset 0 and ``sAi`` at the imaginary destination's offset,
  both with the real tile's fitted layout;
* the copies ``A -> sA``, ``Ai -> sAi``, ``B -> sB``, ``Bi -> sBi``, then a barrier.

Its premises besides the real GEMM's, each checked against what the C++ printed (the first that
fails is the configuration's reason for not being analysed):

* the mainloop is ``MmaPlanarComplexMultistage``;
* the imaginary ``cp.async`` destination (the mainloop's ``dst_ptr + v + kImaginaryStride /
  kElementsPerAccess`` in ``AccessType`` units) is ``kImaginaryStride`` elements past the real
  one: where the warp iterators read the imaginary tile (``load_with_pointer_offset``);
* the real stage lies inside the real ring (``SharedStorage::ShapeA::kCount`` elements, at most
  ``kImaginaryStride``), and the imaginary ring inside the shared buffer (``operand_A``).
"""

from __future__ import annotations

from typing import Any

import yaml

from threadmap.sweep.extracted import Extracted
from threadmap.sweep.library import Configuration
from threadmap.sweep.specs import NotAnalysed, Written, spec_text, written

#: the mainloop the planar-complex spec describes (its C++ type's prefix)
PLANAR_MAINLOOP = "cutlass::gemm::threadblock::MmaPlanarComplexMultistage<"


def imaginary_offsets(ex: Extracted) -> dict[str, tuple[int, int]]:
    """Per operand, the imaginary tile's element offset in the shared buffer and the buffer's
    element count, once the planar premises (module docstring) hold; NotAnalysed otherwise."""
    o = ex.oracle
    mainloop = o.get("oracle.planar.mainloop", "")
    if not mainloop.startswith(PLANAR_MAINLOOP):
        raise NotAnalysed("mainloop is not MmaPlanarComplexMultistage",
                          f"the planar-complex kernel's mainloop is {mainloop[:160] or 'not printed'}")
    out: dict[str, tuple[int, int]] = {}
    for w in ("A", "B"):
        try:
            stride, dst, ring, buffer = (int(o[f"oracle.planar.{w}.{k}"])
                                         for k in ("imag_stride", "imag_dst", "ring", "buffer"))
        except (KeyError, ValueError) as e:
            raise NotAnalysed("extraction output incomplete",
                              f"{w}: the imaginary tile's placement was not printed ({e})") from None
        if dst != stride:
            raise NotAnalysed("imaginary copy off the imaginary tile",
                              f"{w}: the imaginary cp.async lands {dst} elements past the real one, the warp "
                              f"iterators read the imaginary tile at kImaginaryStride = {stride}")
        top = int(ex.operands[w].table.max()) + 1
        if not top <= ring <= stride:
            raise NotAnalysed("real and imaginary tiles overlap",
                              f"{w}: the real stage reaches element {top}, the real ring has {ring} elements, "
                              f"the imaginary tile starts at {stride}")
        if dst + ring > buffer:  # every stage of the imaginary ring, as the real ring's
            raise NotAnalysed("imaginary tile past the shared buffer",
                              f"{w}: the imaginary ring reaches element {dst + ring} of a buffer of {buffer}")
        out[w] = (dst, buffer)
    return out


def planar_spec_text(cfg: Configuration, ex: Extracted, headers: str) -> Written:
    """The spec of one planar-complex configuration, or NotAnalysed with the first premise that
    fails (the real GEMM's, then the planar ones)."""
    real = spec_text(cfg, ex, headers)   # the real copies' premises, sizes and layouts
    imag = imaginary_offsets(ex)
    doc: dict[str, Any] = yaml.safe_load(real.text)
    tensors = doc["tensors"]
    copies = {c["copy"]["src"]["tensor"]: c for c in doc["stages"] if isinstance(c, dict)}
    new_tensors: dict[str, Any] = {}
    stages: list[Any] = []
    for w in ("A", "B"):
        dst, buffer = imag[w]
        el = {"element": tensors[w]["element"]} if "element" in tensors[w] else {}
        new_tensors[w] = tensors[w]
        new_tensors[f"{w}i"] = dict(tensors[w])
        new_tensors[f"smem{w}"] = {"memory": "shared", "layout": f"{buffer}:1", **el}
        new_tensors[f"s{w}"] = {**tensors[f"s{w}"], "alias": f"smem{w}"}
        new_tensors[f"s{w}i"] = {**tensors[f"s{w}"], "alias": f"smem{w}", "offset": dst}
        c = copies[w]["copy"]
        stages.append({"copy": {**c, "name": f"cp.async {w} real (Iterator{w} -> SmemIterator{w})"}})
        stages.append({"copy": {**c, "src": {**c["src"], "tensor": f"{w}i"}, "dst": {**c["dst"], "tensor": f"s{w}i"},
                                "name": f"cp.async {w} imaginary (Iterator{w} -> SmemIterator{w} + "
                                        f"kImaginaryStride{w} = {dst})"}})
    doc["tensors"] = new_tensors
    doc["stages"] = [*stages, "barrier"]
    kernels = len(cfg.kernels)
    tm, tn, tk = ex.shape
    a, b = ex.operands["A"], ex.operands["B"]
    doc["name"] = f"{cfg.kernels[0]} mainloop: cp.async of A and B, real and imaginary, into shared memory"
    doc["description"] = (
        f"CUTLASS {headers} {cfg.family} GEMM ({kernels} kernel{'s' if kernels > 1 else ''} share this "
        f"configuration): the kernel's mainloop (MmaPlanarComplexMultistage) with tile {tm}x{tn}x{tk}, "
        f"{ex.stages} stages; shared layouts {a.smem_layout} and {b.smem_layout}, the imaginary tiles "
        f"kImaginaryStrideA = {imag['A'][0]} and kImaginaryStrideB = {imag['B'][0]} elements further; "
        "the imaginary matrices at their own pointers with the real ones' leading dimensions")
    head = (f"# Written by threadmap sweep from CUTLASS {headers}'s templates: the generator's kernel text for\n"
            f"# {cfg.kernels[0]} instantiated host-side; thread maps, cp.async widths, shared layouts\n"
            "# (offsets of every cell, fitted exactly) and the imaginary tiles' offsets printed by the C++ objects.\n")
    return written(doc, head, real.layouts)
