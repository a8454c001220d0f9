"""The Blackwell (SM100) model against CuTe's own headers (compiled host-side, one
``-fsyntax-only`` rejection run and one printing program for everything):

* ``make_umma_desc`` (``cute/atom/mma_traits_sm100.hpp``) on generated shared layouts: the
  UMMA atoms (``UMMA::Layout_{K,MN}_*_Atom<T>``, ``Layout_MN_SW128_32B_Atom<T>``) tiled to a
  stage with ``tile_to_shape`` and cut to one MMA's operand with ``local_tile`` at generated
  coordinates and start addresses; each canonical form written out with generated LBO/SBO;
  and the same layouts perturbed (strides swapped, the wrong swizzle, unsupported swizzles,
  K doubled, a third mode): the header rejects exactly the layouts threadmap rejects.  Every
  accepted case: the descriptor word equals the header's (but the start address: the header
  computes it with ``cvta``, device-only; host-side it prints an error and leaves 0, so the
  start is compared with the pointer the header converts), and the addresses the descriptor
  makes the tensor core read are the operand's own swizzled addresses;
* the instruction descriptors ``MMA_Traits<SM100_MMA_*>::idesc_`` of 16 operations over a
  generated grid of (types, M, N, majors, negate, saturate), accepted and rejected;
* the ``Copy_Traits`` of every ``SM100_TMEM_LOAD_*`` / ``SM100_TMEM_STORE_*`` op: ThrID,
  ValID, SrcLayout, DstLayout, RefLayout and the register counts.

Blackwell is modelled from the headers only: nothing here ran on a tcgen05 GPU."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest

from tests.support.cxx_oracle import cxx_static_layout, rejected_by_header, run_print_batch
from threadmap.errors import LayoutError
from threadmap.layout.arch.mma_sm100_desc import UmmaInstrDescriptor, UmmaSmemDescriptor, umma_smem_addresses
from threadmap.layout.atom.copy_traits_sm100_tmem import TMEM_COPY_OPS
from threadmap.layout.atom.mma_traits_sm100 import (
    UMMA_OPS,
    UmmaInstrError,
    UmmaLayoutError,
    make_umma_desc,
    umma_instr_desc,
    umma_layout_atom,
    umma_operand_mismatches,
)
from threadmap.layout.layout import Layout
from threadmap.layout.layout_composed import ComposedLayout
from threadmap.layout.parse import parse_layout
from threadmap.layout.pointer_flagged import SmemPtrFlag
from threadmap.layout.swizzle import Swizzle
from threadmap.layout.tensor import local_tile, make_tensor

TYPES = {"uint8_t": 8, "half_t": 16, "bfloat16_t": 16, "tfloat32_t": 32}
#: swizzle name -> the swizzle on bytes
SWIZZLES = {"INTER": (0, 4, 3), "SW32": (1, 4, 3), "SW64": (2, 4, 3), "SW128": (3, 4, 3), "SW128_32B": (2, 5, 2)}


# ----------------------------------------------------------------------------- smem descriptors
@dataclass(frozen=True)
class Case:
    id: str
    major: str
    T: str
    swizzle: tuple[int, int, int]  # Swizzle<B,M,S> on bytes
    layout: Layout                 # the operand's layout (elements), as threadmap builds it
    start: int                     # byte address of the operand's pointer
    cxx: str                       # C++ statements leaving the operand tensor in `b`

    @property
    def bits(self) -> int:
        return TYPES[self.T]


def _atom_cases(rng: random.Random) -> list[Case]:
    """UMMA atoms tiled to a stage and cut into one instruction's operand (A: M x K, B: N x K)."""
    out: list[Case] = []
    for major in ("K", "MN"):
        for swz in SWIZZLES:
            if swz == "SW128_32B" and major == "K":
                continue
            for T, bits in TYPES.items():
                atom = umma_layout_atom(major, swz, bits)
                amn, ak = atom.layout_b.shape
                kb = 256 // bits                         # one instruction's K in elements
                for n in range(3):
                    if major == "K":
                        bmn = rng.choice([8, 16, 32, 64, 128, 256])
                    else:
                        bmn = min(256, amn * rng.choice([1, 2, 4]))
                        bmn = max(bmn, amn)
                    stage_mn = max(bmn, amn) * rng.choice([1, 2])
                    stage_k = max(kb, ak) * rng.choice([1, 2, 4])
                    if stage_mn % amn or stage_k % ak or stage_mn % bmn or stage_k % kb:
                        continue
                    tile = atom.tile_to_shape((stage_mn, stage_k))
                    coord = (rng.randrange(stage_mn // bmn), rng.randrange(stage_k // kb))
                    base = rng.choice([0, 1024, 4096, 16, 512, 128, 1040, 2048 + 256]) + 8192 * rng.randrange(4)
                    t = local_tile(make_tensor(0, tile.layout_b), (bmn, kb), coord)
                    start = base + int(t.offset) * bits // 8  # type: ignore[arg-type]
                    cxx = (f"auto tile = tile_to_shape(UMMA::Layout_{major}_{swz}_Atom<{T}>{{}}, "
                           f"make_shape(Int<{stage_mn}>{{}}, Int<{stage_k}>{{}})); "
                           f"Tensor s = make_tensor(make_smem_ptr(reinterpret_cast<{T}*>({base})), tile); "
                           f"Tensor b = local_tile(s, make_shape(Int<{bmn}>{{}}, Int<{kb}>{{}}), "
                           f"make_coord({coord[0]}, {coord[1]}));")
                    out.append(Case(f"atom_{major}_{swz}_{T}_{n}".lower(), major, T, SWIZZLES[swz], t.layout,
                                    start, cxx))
    return out


def _canonical(major: str, swz: str, bits: int, mn_groups: int, sbo: int, lbo: int, k_groups: int) -> Layout:
    """The header's canonical form (elements) with the given extents and offsets (in
    ``uint128_t``)."""
    t = 128 // bits
    b = SWIZZLES[swz][0]
    w = 8 if swz == "SW128_32B" else 1 << b
    ka = 4 if swz == "SW128_32B" else 8
    if major == "K":
        return Layout(((8, mn_groups), (t, 2)), ((w * t, sbo * t), (1, (lbo if swz == "INTER" else 1) * t)))
    if swz == "INTER":
        return Layout(((t, mn_groups), (8, k_groups)), ((1, sbo * t), (t, lbo * t)))
    return Layout(((t, w, mn_groups), (ka, k_groups)), ((1, t, lbo * t), (w * t, sbo * t)))


def _composed_cxx(lay: Layout, sw: tuple[int, int, int], T: str, addr: int) -> str:
    b, m, s = sw
    return (f"auto lay = make_composed_layout(Swizzle<{b},{m},{s}>{{}}, smem_ptr_flag_bits<{TYPES[T]}>{{}}, "
            f"{cxx_static_layout(lay)}); Tensor b = make_tensor(make_smem_ptr(reinterpret_cast<{T}*>({addr})), lay);")


def _k_groups(swz: str, bits: int) -> int:
    ka = 4 if swz == "SW128_32B" else 8
    return max(256 // bits // ka, 1)


def _form_cases(rng: random.Random) -> list[Case]:
    """Each canonical form written out with generated extents, SBO and LBO."""
    out: list[Case] = []
    for major in ("K", "MN"):
        for swz in SWIZZLES:
            if swz == "SW128_32B" and major == "K":
                continue
            w = 8 if swz == "SW128_32B" else 1 << SWIZZLES[swz][0]
            for T, bits in TYPES.items():
                for n in range(3):
                    mn_groups = rng.choice([1, 2, 4, 8]) if major == "K" else rng.choice([1, 2, 4])
                    span = w * 8 * mn_groups
                    sbo = rng.choice([w * 8, w * 16, span, span + w * 8, w * 64])
                    lbo = rng.choice([1, 8, 16, 64, 128, span * 2])
                    lay = _canonical(major, swz, bits, mn_groups, sbo, lbo, _k_groups(swz, bits))
                    addr = 1024 * rng.randrange(1, 64) + rng.choice([0, 0, 16, 256, 512])
                    out.append(Case(f"form_{major}_{swz}_{T}_{n}".lower(), major, T, SWIZZLES[swz], lay, addr,
                                    _composed_cxx(lay, SWIZZLES[swz], T, addr)))
    return out


def _bad_cases(rng: random.Random) -> list[Case]:
    """Canonical forms broken one way each; the header decides which it rejects."""
    out: list[Case] = []
    hows = ["swap_modes", "swap_inner", "swizzle", "double_k", "rank3", "stride", "bad_swizzle", "mn4"]
    for i in range(64):
        major = rng.choice(["K", "MN"])
        swz = rng.choice([s for s in SWIZZLES if major == "MN" or s != "SW128_32B"])
        T = rng.choice(list(TYPES))
        bits = TYPES[T]
        w = 8 if swz == "SW128_32B" else 1 << SWIZZLES[swz][0]
        lay = _canonical(major, swz, bits, rng.choice([1, 2, 4]), 8 * w, 8, _k_groups(swz, bits))
        sw = SWIZZLES[swz]
        how = hows[i % len(hows)]
        if how == "swap_modes":
            lay = Layout((lay.shape[1], lay.shape[0]), (lay.stride[1], lay.stride[0]))
        elif how == "swap_inner":
            s0, d0 = lay.shape[0], lay.stride[0]
            lay = Layout((tuple(reversed(s0)), lay.shape[1]), (tuple(reversed(d0)), lay.stride[1]))
        elif how == "swizzle":
            sw = rng.choice([s for s in SWIZZLES.values() if s != sw])
        elif how == "double_k":
            s1, d1 = lay.shape[1], lay.stride[1]
            lay = Layout((lay.shape[0], (*s1[:-1], s1[-1] * 2)), (lay.stride[0], d1))
        elif how == "rank3":
            lay = Layout((*lay.shape, 2), (*lay.stride, 4096))
        elif how == "stride":
            s0, d0 = lay.shape[0], lay.stride[0]
            lay = Layout((s0, lay.shape[1]), ((d0[0] * 2, *d0[1:]), lay.stride[1]))
        elif how == "bad_swizzle":
            sw = rng.choice([(2, 4, 2), (1, 4, 4), (3, 5, 3), (2, 5, 3), (2, 6, 2), (3, 3, 3)])
        else:  # an MN extent of 4 (K-major: not a multiple of 8 rows)
            t = 128 // bits
            lay = (Layout((4, (t, 2)), (w * t, (1, t))) if major == "K" else Layout((4, 8), (1, 8)))
        out.append(Case(f"bad_{i}_{how}_{major}".lower(), major, T, sw, lay, 2048, _composed_cxx(lay, sw, T, 2048)))
    # the 16-bit elements of each 16-byte chunk permuted (SWIZZLE_64B, MN-major)
    lay = Layout(((1, 4, 8), (8, 2)), ((64, 8, 1), (32, 256)))
    out.append(Case("bad_chunk_permuted_mn", "MN", "half_t", (2, 4, 3), lay, 2048,
                    _composed_cxx(lay, (2, 4, 3), "half_t", 2048)))
    return out


def _operand(c: Case) -> ComposedLayout:
    return ComposedLayout(Swizzle(*c.swizzle), SmemPtrFlag(c.bits), c.layout)


def _threadmap(c: Case) -> UmmaSmemDescriptor | None:
    try:
        return make_umma_desc(c.major, _operand(c), c.bits, c.start)
    except UmmaLayoutError:
        return None


def _stmt(c: Case) -> str:
    # the header's host path prints an error line from cvta: the result goes on its own line
    return (f"{c.cxx} auto d = UMMA::make_umma_desc<UMMA::Major::{c.major}>(b); "
            f'printf("\\n{c.id}_r\\t%llx %llu | ", (unsigned long long)uint64_t(d), '
            "(unsigned long long)(uintptr_t)raw_pointer_cast(recast<uint128_t const>(b).data())); "
            "print(b.layout());")


# ----------------------------------------------------------------------------- instruction descriptors
@dataclass(frozen=True)
class InstrCase:
    id: str
    op: str
    a: str
    b: str
    c: str
    m: int
    n: int
    a_major: str
    b_major: str
    a_neg: bool
    b_neg: bool
    sat: bool


KIND_TYPES = {
    "tf32": [("tfloat32_t", "tfloat32_t", "float")],
    "f16": [("half_t", "half_t", "float"), ("bfloat16_t", "bfloat16_t", "float"), ("half_t", "half_t", "half_t"),
            ("half_t", "bfloat16_t", "float")],
    "i8": [("int8_t", "int8_t", "int32_t"), ("uint8_t", "int8_t", "int32_t"), ("int8_t", "uint8_t", "float")],
    "f8f6f4": [("float_e4m3_t", "float_e5m2_t", "float"), ("float_e4m3_t", "float_e4m3_t", "half_t"),
               ("float_e2m3_t", "float_e3m2_t", "float"), ("float_e2m1_t", "float_e4m3_t", "float")],
}
#: types of another kind (the traits' width asserts decide)
OTHER_TYPES = [("half_t", "half_t", "float"), ("tfloat32_t", "tfloat32_t", "float"), ("int8_t", "int8_t", "int32_t"),
               ("float_e4m3_t", "float_e4m3_t", "float")]


def _instr_cases(rng: random.Random) -> list[InstrCase]:
    out: list[InstrCase] = []
    for op in UMMA_OPS.values():
        for i in range(24):
            # mostly shapes and types of the operation's kind, every few an edge or another kind
            a, b, c = rng.choice(KIND_TYPES[op.kind]) if i % 6 else rng.choice(OTHER_TYPES)
            m = rng.choice([32, 64, 128, 256]) if i % 5 == 0 else rng.choice([64, 128] if op.cta_group == 1
                                                                              else [128, 256])
            n = rng.choice([8, 16, 24, 48, 120, 136, 200, 264]) if i % 4 == 0 else rng.choice(
                [32, 64, 96, 128, 160, 192, 224, 256])
            am, bm = rng.choice(["K", "MN"]), rng.choice(["K", "MN"])
            neg = op.has_neg and rng.random() < 0.4
            out.append(InstrCase(f"instr_{op.name[10:]}_{i}".lower(), op.name, a, b, c, m, n, am, bm,
                                 neg and rng.random() < 0.5, neg, op.has_sat and rng.random() < 0.4))
    # one each: a type to_UMMAFormat / to_CFormat does not know (each fails one template the
    # compiler reports once)
    out.append(InstrCase("instr_unknown_a", "SM100_MMA_TF32_SS", "float", "tfloat32_t", "float", 128, 64, "K", "K",
                         False, False, False))
    out.append(InstrCase("instr_unknown_c", "SM100_MMA_F16BF16_SS", "half_t", "half_t", "bfloat16_t", 128, 64, "K",
                         "K", False, False, False))
    return out


def _instr_threadmap(c: InstrCase) -> UmmaInstrDescriptor | None:
    try:
        return umma_instr_desc(c.op, c.a, c.b, c.c, c.m, c.n, c.a_major, c.b_major, c.a_neg, c.b_neg, c.sat)
    except UmmaInstrError:
        return None


def _instr_stmt(c: InstrCase) -> str:
    o = UMMA_OPS[c.op]
    mj = f"UMMA::Major::{c.a_major}", f"UMMA::Major::{c.b_major}"
    neg = [f"UMMA::ScaleIn::{'Neg' if x else 'One'}" for x in (c.a_neg, c.b_neg)]
    sat = f"UMMA::Saturate::{'True' if c.sat else 'False'}"
    if o.templated:
        args = [c.a, c.b, c.c, str(c.m), str(c.n), *mj, *(neg if o.has_neg else []), *([sat] if o.has_sat else [])]
        decl = f"using Op = {c.op}<{', '.join(args)}>; Op op{{}}; (void)op; MMA_Traits<Op> tr{{}};"
    else:
        ic = [f"cute::integral_constant<UMMA::Major, {x}>" for x in mj] + \
             [f"cute::integral_constant<UMMA::ScaleIn, {x}>" for x in neg]
        decl = (f"MMA_Traits<{c.op}, {c.a}, {c.b}, {c.c}, cute::C<{c.m}>, cute::C<{c.n}>, {', '.join(ic)}> tr{{}};")
    return f'{decl} printf("%x %d", uint32_t(tr.idesc_), int(size<2>(typename decltype(tr)::Shape_MNK{{}})));'


# ----------------------------------------------------------------------------- TMEM copy traits
def _tmem_stmt(name: str) -> str:
    tr = f"Copy_Traits<{name}>"
    parts = [f"print(typename {tr}::{x}{{}}); printf(\" | \");" for x in
             ("ThrID", "ValID", "SrcLayout", "DstLayout", "RefLayout")]
    return (" ".join(parts) + f' printf("%d %d", int(cute::extent<{name}::SRegisters>::value), '
            f"int(cute::extent<{name}::DRegisters>::value));")


def _tmem_id(name: str) -> str:
    return "tmem_" + name[len("SM100_TMEM_"):].lower()


# ----------------------------------------------------------------------------- the oracle runs
RNG = random.Random(20261207)
CASES = _atom_cases(RNG) + _form_cases(RNG) + _bad_cases(RNG)
BY_ID = {c.id: c for c in CASES}
INSTR = _instr_cases(RNG)
INSTR_BY_ID = {c.id: c for c in INSTR}
TMEM_BY_ID = {_tmem_id(n): n for n in TMEM_COPY_OPS}


@pytest.fixture(scope="module")
def rejected() -> set[str]:
    # the perturbed layouts, and the instruction cases threadmap rejects, in one -fsyntax-only
    # translation unit (rounds for templates the compiler reports once); an accepted case the
    # header rejected would fail the printing program, naming it
    stmts = {c.id: _stmt(c) for c in CASES if c.id.startswith("bad_")}
    stmts |= {c.id: _instr_stmt(c) for c in INSTR if _instr_threadmap(c) is None}
    return rejected_by_header(stmts)


@pytest.fixture(scope="module")
def oracle(rejected: set[str]) -> dict[str, str]:
    stmts = {c.id: _stmt(c) for c in CASES if c.id not in rejected}
    stmts |= {c.id: _instr_stmt(c) for c in INSTR if c.id not in rejected}
    stmts |= {cid: _tmem_stmt(name) for cid, name in TMEM_BY_ID.items()}
    return run_print_batch(stmts)


def test_enough_cases(rejected: set[str]) -> None:
    layouts = [c for c in CASES if c.id not in rejected]
    assert len(layouts) >= 200, len(layouts)
    assert len([c for c in CASES if c.id in rejected]) >= 20
    assert len([c for c in INSTR if c.id not in rejected]) >= 150
    assert len([c for c in INSTR if c.id in rejected]) >= 80
    assert len(TMEM_BY_ID) == 148


def test_threadmap_rejects_exactly_the_layouts_the_header_rejects(rejected: set[str]) -> None:
    ours = {c.id for c in CASES if _threadmap(c) is None}
    header = {c.id for c in CASES if c.id in rejected}
    assert ours == header, (sorted(ours - header), sorted(header - ours))


def test_threadmap_rejects_exactly_the_instructions_the_header_rejects(rejected: set[str]) -> None:
    ours = {c.id for c in INSTR if _instr_threadmap(c) is None}
    header = {c.id for c in INSTR if c.id in rejected}
    assert ours == header, (sorted(ours - header), sorted(header - ours))


@pytest.mark.parametrize("cid", [c.id for c in CASES])
def test_the_smem_descriptor_is_cutes_and_reads_the_layout(cid: str, oracle: dict[str, str],
                                                           rejected: set[str]) -> None:
    c = BY_ID[cid]
    if cid in rejected:
        with pytest.raises(UmmaLayoutError, match="make_umma_desc: .*(Unsupported|canonical|rank-2|recast|Major-K)"):
            make_umma_desc(c.major, _operand(c), c.bits, c.start)
        return
    word, ptr, printed = oracle[f"{cid}_r"].replace("|", " | ", 1).split(None, 2)
    assert parse_layout(printed.split("|", 1)[1].strip()) == c.layout   # threadmap's local_tile is CuTe's
    d = make_umma_desc(c.major, _operand(c), c.bits, c.start)
    assert c.start == int(ptr)
    header = UmmaSmemDescriptor.from_u64(int(word, 16))
    assert header.start_address == 0     # the host path's cvta (see the module docstring)
    assert d.desc == header.desc | (c.start >> 4 & 0x3FFF), (str(d), str(header))
    mn, k = (int(np.prod(x)) if isinstance(x, tuple) else x for x in c.layout.shape)
    reads = umma_smem_addresses(d, c.major, mn, k, c.bits)
    sw = Swizzle(*c.swizzle)
    own = np.array([[sw(c.start + c.layout(i, j) * c.bits // 8) for j in range(k)] for i in range(mn)])
    bad = umma_operand_mismatches(c.major, _operand(c), c.bits, c.start)
    assert (len(bad) == 0) == bool((reads == own).all())
    if not cid.startswith("bad_"):
        assert (reads == own).all(), np.argwhere(reads != own)[:4]
    elif len(bad):
        # the header's blind spot: it accepted a layout that permutes the elements inside
        # 16-byte chunks (recast<uint128_t> forgets their order); the descriptor reads the
        # layout's chunks, in the canonical order
        assert (np.sort(reads.ravel() // 16) == np.sort(own.ravel() // 16)).all()


def test_the_header_accepts_layouts_its_descriptor_misreads(rejected: set[str]) -> None:
    # a finding, pinned: perturbed layouts that permute the elements inside 16-byte chunks
    # compile, and their descriptor reads other addresses (umma_operand_mismatches flags them)
    misread = [c.id for c in CASES if c.id.startswith("bad_") and c.id not in rejected
               and len(umma_operand_mismatches(c.major, _operand(c), c.bits, c.start))]
    assert "bad_chunk_permuted_mn" in misread and all("swap_inner" in cid or "permuted" in cid for cid in misread)


@pytest.mark.parametrize("cid", [c.id for c in INSTR])
def test_the_instruction_descriptor_is_cutes(cid: str, oracle: dict[str, str], rejected: set[str]) -> None:
    c = INSTR_BY_ID[cid]
    if cid in rejected:
        with pytest.raises(LayoutError):
            umma_instr_desc(c.op, c.a, c.b, c.c, c.m, c.n, c.a_major, c.b_major, c.a_neg, c.b_neg, c.sat)
        return
    word, k = oracle[cid].split()
    d = umma_instr_desc(c.op, c.a, c.b, c.c, c.m, c.n, c.a_major, c.b_major, c.a_neg, c.b_neg, c.sat)
    assert d.desc == int(word, 16), (d, UmmaInstrDescriptor.from_u32(int(word, 16)))
    assert UMMA_OPS[c.op].k(c.a) == int(k)


@pytest.mark.parametrize("cid", sorted(TMEM_BY_ID))
def test_the_tmem_copy_traits_are_cutes(cid: str, oracle: dict[str, str]) -> None:
    op = TMEM_COPY_OPS[TMEM_BY_ID[cid]]
    thr, val, src, dst, ref, regs = (x.strip() for x in oracle[cid].split("|"))
    assert parse_layout(thr) == op.thr_id
    assert parse_layout(val) == op.val_id
    assert parse_layout(src) == op.src_bits
    assert parse_layout(dst) == op.dst_bits
    assert parse_layout(ref) == op.ref_bits
    sregs, dregs = (int(x) for x in regs.split())
    assert (32 * sregs, 32 * dregs) == (op.src_reg_bits, op.dst_reg_bits)
