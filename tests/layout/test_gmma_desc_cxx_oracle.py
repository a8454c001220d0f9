"""``make_gmma_desc`` against CuTe's own (``cute/atom/mma_traits_sm90_gmma.hpp``, compiled
host-side), on generated shared layouts:

* the GMMA atoms tiled to a stage (``tile_to_shape``) and cut into one ``wgmma``'s operand
  with ``local_tile`` at generated coordinates and start addresses (on and off the atoms'
  boundaries);
* layouts written directly in each canonical form with generated LBO, SBO and extents;
* the same layouts perturbed (strides swapped, the wrong swizzle, the wrong K extent, a third
  mode): the header rejects exactly the ones threadmap rejects.

Every accepted case: threadmap's descriptor word equals the header's, its start address is the
header's pointer, and the addresses the descriptor makes the tensor core read
(``gmma_smem_addresses``) are the tensor's own swizzled addresses -- the round trip layout ->
descriptor -> addresses.  (The header computes the start address with ``cvta`` on the device
only: host-side it prints an error and leaves 0, so the start is compared with the pointer the
header converts, and the rest of the word bit for bit.)"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest

from tests.support.cxx_oracle import cxx_static_layout, rejected_by_header, run_print_batch
from threadmap.layout.arch.mma_sm90_desc import GmmaDescriptor, gmma_smem_addresses
from threadmap.layout.atom.mma_traits_sm90_gmma import GmmaLayoutError, gmma_layout_atom, make_gmma_desc
from threadmap.layout.layout import Layout
from threadmap.layout.layout_composed import ComposedLayout
from threadmap.layout.parse import parse_layout
from threadmap.layout.pointer_flagged import SmemPtrFlag
from threadmap.layout.swizzle import Swizzle
from threadmap.layout.tensor import local_tile, make_tensor

TYPES = {"uint8_t": 8, "half_t": 16, "bfloat16_t": 16, "tfloat32_t": 32}
SWIZZLES = {"INTER": 0, "SW32": 1, "SW64": 2, "SW128": 3}


@dataclass(frozen=True)
class Case:
    id: str
    major: str
    T: str
    swizzle: int                  # B of Swizzle<B,4,3> on bytes
    layout: Layout                # the operand's layout (elements), as threadmap builds it
    start: int                    # byte address of the operand's pointer
    cxx: str                      # C++ statements leaving the operand tensor in `b`

    @property
    def bits(self) -> int:
        return TYPES[self.T]


def _atom_cases(rng: random.Random) -> list[Case]:
    """GMMA atoms tiled to a stage and cut into one instruction's operand."""
    out: list[Case] = []
    for major in ("K", "MN"):
        for swz, b in SWIZZLES.items():
            for T, bits in TYPES.items():
                atom = gmma_layout_atom(major, swz, bits)
                amn, ak = atom.layout_b.shape
                kb = 256 // bits                        # one wgmma's K in elements
                for n in range(4):
                    bmn = rng.choice([64, 128, 256]) if major == "K" else max(64, amn)
                    stage_mn = bmn * rng.choice([1, 2])
                    stage_k = max(kb, ak if major == "K" else 8) * rng.choice([1, 2, 4])
                    if major == "K" and stage_k % ak or major == "MN" and stage_mn % amn:
                        continue
                    tile = atom.tile_to_shape((stage_mn, stage_k))
                    coord = (rng.randrange(stage_mn // bmn), rng.randrange(stage_k // kb))
                    base = rng.choice([0, 1024, 4096, 16, 512, 128, 1040, 2048 + 256]) + 8192 * rng.randrange(4)
                    t = local_tile(make_tensor(0, tile.layout_b), (bmn, kb), coord)
                    start = base + int(t.offset) * bits // 8  # type: ignore[arg-type]
                    cxx = (f"auto tile = tile_to_shape(GMMA::Layout_{major}_{swz}_Atom<{T}>{{}}, "
                           f"make_shape(Int<{stage_mn}>{{}}, Int<{stage_k}>{{}})); "
                           f"Tensor s = make_tensor(make_smem_ptr(reinterpret_cast<{T}*>({base})), tile); "
                           f"Tensor b = local_tile(s, make_shape(Int<{bmn}>{{}}, Int<{kb}>{{}}), "
                           f"make_coord({coord[0]}, {coord[1]}));")
                    out.append(Case(f"atom_{major}_{swz}_{T}_{n}".lower(), major, T, b, t.layout, start, cxx))
    return out


def _canonical(major: str, b: int, bits: int, mn_groups: int, sbo: int, lbo: int, k_groups: int = 2) -> Layout:
    """The header's canonical form (elements) with the given extents and offsets (in
    ``uint128_t``): ``mn_groups`` groups of 8 rows (K-major) or of ``T*W`` elements (MN-major)."""
    t = 128 // bits
    w = 1 << b
    if major == "K":
        return Layout(((8, mn_groups), (t, 2)), ((w * t, sbo * t), (1, (lbo if b == 0 else 1) * t)))
    if b == 0:
        return Layout(((t, mn_groups), (8, k_groups)), ((1, sbo * t), (t, lbo * t)))
    return Layout(((t, w, mn_groups), (8, k_groups)), ((1, t, lbo * t), (w * t, sbo * t)))


def _composed_cxx(lay: Layout, b: int, T: str, addr: int) -> str:
    return (f"auto lay = make_composed_layout(Swizzle<{b},4,3>{{}}, smem_ptr_flag_bits<{TYPES[T]}>{{}}, "
            f"{cxx_static_layout(lay)}); Tensor b = make_tensor(make_smem_ptr(reinterpret_cast<{T}*>({addr})), lay);")


def _form_cases(rng: random.Random) -> list[Case]:
    """Each canonical form written out with generated extents, SBO and LBO."""
    out: list[Case] = []
    for major in ("K", "MN"):
        for b in range(4):
            for T, bits in TYPES.items():
                for n in range(4):
                    mn_groups = rng.choice([1, 2, 4, 8]) if major == "K" else rng.choice([1, 2, 4])
                    k_groups = 256 // bits // 8 if major == "MN" else 2
                    if major == "MN" and k_groups < 1:
                        continue
                    span = (8 << b) * max(mn_groups, 1) * 8
                    sbo = rng.choice([8 << b, 16 << b, span, span + (8 << b), 64 << b])
                    lbo = rng.choice([1, 8, 16, 64, 128, span * 2])
                    lay = _canonical(major, b, bits, mn_groups, sbo, lbo, max(k_groups, 1))
                    addr = 1024 * rng.randrange(1, 64) + rng.choice([0, 0, 16, 256, 512])
                    out.append(Case(f"form_{major}_{b}_{T}_{n}".lower(), major, T, b, lay, addr,
                                    _composed_cxx(lay, b, T, addr)))
    return out


def _bad_cases(rng: random.Random) -> list[Case]:
    """Canonical forms broken one way each: the header must reject exactly these ones among
    the perturbed layouts threadmap rejects (and accept the ones it accepts)."""
    out: list[Case] = []
    for i in range(48):
        major = rng.choice(["K", "MN"])
        b = rng.randrange(4)
        T = rng.choice(list(TYPES))
        bits = TYPES[T]
        lay = _canonical(major, b, bits, rng.choice([1, 2, 4]), 64 << b, 8, max(256 // bits // 8, 1))
        how = rng.choice(["swap_modes", "swap_inner", "swizzle", "double_k", "rank3", "stride"])
        if how == "swap_modes":
            lay = Layout((lay.shape[1], lay.shape[0]), (lay.stride[1], lay.stride[0]))
        elif how == "swap_inner":
            s0, d0 = lay.shape[0], lay.stride[0]
            lay = Layout((tuple(reversed(s0)), lay.shape[1]), (tuple(reversed(d0)), lay.stride[1]))
        elif how == "swizzle":
            b = (b + rng.randrange(1, 4)) % 4
        elif how == "double_k":
            s1, d1 = lay.shape[1], lay.stride[1]
            lay = Layout((lay.shape[0], (*s1[:-1], s1[-1] * 2)), (lay.stride[0], d1))
        elif how == "rank3":
            lay = Layout((*lay.shape, 2), (*lay.stride, 4096))
        else:
            s0, d0 = lay.shape[0], lay.stride[0]
            lay = Layout((s0, lay.shape[1]), ((d0[0] * 2, *d0[1:]), lay.stride[1]))
        out.append(Case(f"bad_{i}_{how}_{major}".lower(), major, T, b, lay, 2048, _composed_cxx(lay, b, T, 2048)))
    return out


#: a layout whose 16-byte chunks hold their elements out of MN order: the header checks the layout
#: after the recast to uint128_t, which forgets that order, so it accepts it -- and the descriptor
#: reads other elements (planted/sm90_gmma_chunk_order_misread.yaml)
MISREAD = Case("misread_chunk_order", "MN", "half_t", 2, Layout(((1, 4, 8), (8, 2)), ((64, 8, 1), (32, 256))), 2048,
               _composed_cxx(Layout(((1, 4, 8), (8, 2)), ((64, 8, 1), (32, 256))), 2, "half_t", 2048))


def _all_cases() -> list[Case]:
    rng = random.Random(20261204)
    return _atom_cases(rng) + _form_cases(rng) + _bad_cases(rng)


CASES = _all_cases()
BY_ID = {c.id: c for c in CASES}


def _operand(c: Case) -> ComposedLayout:
    return ComposedLayout(Swizzle(c.swizzle, 4, 3), SmemPtrFlag(c.bits), c.layout)


def _threadmap(c: Case) -> GmmaDescriptor | None:
    try:
        return make_gmma_desc(c.major, _operand(c), c.bits, c.start)
    except GmmaLayoutError:
        return None


def _stmt(c: Case) -> str:
    # the header's host path prints an error line from cvta, so the result goes on a line of
    # its own, keyed by the case id
    return (f"{c.cxx} auto d = SM90::GMMA::make_gmma_desc<SM90::GMMA::Major::{c.major}>(b); "
            f'printf("\\n{c.id}_r\\t%llx %llu | ", (unsigned long long)uint64_t(d), '
            "(unsigned long long)(uintptr_t)raw_pointer_cast(recast<uint128_t const>(b).data())); "
            "print(b.layout());")


@pytest.fixture(scope="module")
def rejected() -> set[str]:
    # only the perturbed cases go through the (slower) rejection rounds; an atom or form case
    # the header rejected would fail the printing batch, naming it
    return rejected_by_header({c.id: _stmt(c) for c in CASES if c.id.startswith("bad_")})


@pytest.fixture(scope="module")
def oracle(rejected: set[str]) -> dict[str, str]:
    return run_print_batch({c.id: _stmt(c) for c in [*CASES, MISREAD] if c.id not in rejected})


def test_the_header_accepts_a_layout_its_descriptor_misreads(oracle: dict[str, str]) -> None:
    c = MISREAD
    word = oracle[f"{c.id}_r"].split()[0]
    d = make_gmma_desc(c.major, _operand(c), c.bits, c.start)
    header = GmmaDescriptor.from_u64(int(word, 16))
    assert (d.leading_byte_offset, d.stride_byte_offset, d.layout_type) == \
        (header.leading_byte_offset, header.stride_byte_offset, header.layout_type)
    reads = gmma_smem_addresses(d, c.major, 32, 16, c.bits)
    sw = Swizzle(c.swizzle, 4, 3)
    own = np.array([[sw(c.start + c.layout(i, j) * c.bits // 8) for j in range(16)] for i in range(32)])
    assert (reads != own).sum() == 480


def test_enough_generated_layouts(rejected: set[str]) -> None:
    accepted = [c for c in CASES if c.id not in rejected]
    assert len(accepted) >= 200, len(accepted)
    assert len(rejected) >= 20, len(rejected)


def test_threadmap_rejects_exactly_what_the_header_rejects(rejected: set[str]) -> None:
    ours = {c.id for c in CASES if _threadmap(c) is None}
    assert ours == rejected, (sorted(ours - rejected), sorted(rejected - ours))


@pytest.mark.parametrize("cid", [c.id for c in CASES])
def test_the_descriptor_is_cutes_and_reads_the_layout(cid: str, oracle: dict[str, str], rejected: set[str]) -> None:
    c = BY_ID[cid]
    if cid in rejected:
        with pytest.raises(GmmaLayoutError, match="make_gmma_desc: .*(Unsupported|canonical|rank-2|recast)"):
            make_gmma_desc(c.major, _operand(c), c.bits, c.start)
        return
    word, ptr, printed = oracle[f"{cid}_r"].replace("|", " | ", 1).split(None, 2)
    cxx_layout = parse_layout(printed.split("|", 1)[1].strip())
    assert cxx_layout == c.layout, (cxx_layout, c.layout)      # threadmap's local_tile is CuTe's
    d = make_gmma_desc(c.major, _operand(c), c.bits, c.start)
    assert c.start == int(ptr)
    header = GmmaDescriptor.from_u64(int(word, 16))
    assert d == GmmaDescriptor(c.start >> 4, header.leading_byte_offset, header.stride_byte_offset,
                               header.base_offset, header.layout_type)
    assert header.start_address == 0   # the host path's cvta (see the module docstring)
    mn, k = (int(np.prod(x)) if isinstance(x, tuple) else x for x in c.layout.shape)
    reads = gmma_smem_addresses(d, c.major, mn, k, c.bits)
    sw = Swizzle(c.swizzle, 4, 3)
    own = np.array([[sw(c.start + c.layout(i, j) * c.bits // 8) for j in range(k)] for i in range(mn)])
    assert (reads == own).all(), np.argwhere(reads != own)[:4]
