"""The public hypothesis strategies (:mod:`threadmap.testing.strategies`):

(a) every strategy generates only valid objects;
(b) a property test written only with them finds a planted bank conflict and shrinks it to
    a small case;
(c) the header oracle: a fixed-seed sample of thread maps, tiled copies and swizzled layouts
    compiles against the real CUTLASS/CuTe headers (their static_asserts hold) and the C++
    values equal the Python objects'.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, find, given, seed, settings
from hypothesis import strategies as st

import threadmap.api as tm
import threadmap.layout as tl
from tests.support.cxx_oracle import require_oracle, run_cxx
from threadmap.cutlass import PitchLinearThreadMap
from threadmap.gpu.cxx import cxx_layout
from threadmap.layout import ComposedLayout, Layout, Swizzle, TiledCopy
from threadmap.layout.int_tuple import depth, flatten_to_tuple
from threadmap.layout.parse import parse
from threadmap.testing import strategies as S

VALID = settings(max_examples=60, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def injective(x: Any) -> bool:
    t = x.table(np.int64)
    return len(np.unique(t)) == len(t)


def _ranks(t: Any) -> list[int]:
    if not isinstance(t, tuple):
        return []
    return [len(t)] + [r for x in t for r in _ranks(x)]


# ----------------------------------------------------------------------------- (a) validity
@VALID
@given(S.int_tuples(min_value=-2, max_value=5, max_depth=2, max_rank=3))
def test_int_tuples_respect_bounds(t: Any) -> None:
    assert depth(t) <= 2 and all(r <= 3 for r in _ranks(t))
    assert all(-2 <= x <= 5 for x in (flatten_to_tuple(t) if isinstance(t, tuple) else (t,)))


@VALID
@given(S.shapes(max_size=100, max_depth=2, max_rank=2))
def test_shapes_are_positive_and_bounded(s: Any) -> None:
    leaves = flatten_to_tuple(s) if isinstance(s, tuple) else (s,)
    assert all(x >= 1 for x in leaves) and tl.product(s) <= 100
    assert depth(s) <= 2 and all(r <= 2 for r in _ranks(s))


@VALID
@given(S.layouts(max_size=512, max_stride=16, zero_strides=False))
def test_layouts_respect_bounds(a: Layout) -> None:
    assert tl.size(a) <= 512
    assert all(1 <= d <= max(16, tl.size(a)) for d in flatten_to_tuple(a.stride) or (a.stride,))


@VALID
@given(S.compact_layouts(max_size=512))
def test_compact_layouts_are_bijections(a: Layout) -> None:
    assert sorted(a.table(np.int64).tolist()) == list(range(tl.size(a)))


@VALID
@given(S.injective_layouts(max_size=256, max_cosize=1024))
def test_injective_layouts_are_injective_and_complementable(a: Layout) -> None:
    assert injective(a) and tl.cosize(a) <= 1024
    tl.complement(a)  # the header's complement accepts them


@VALID
@given(S.composition_pairs(max_size=256), S.divide_pairs(max_size=256),
       S.product_pairs(max_size=64, max_cosize=256))
def test_pairs_are_admissible(c: tuple[Layout, Layout], d: tuple[Layout, Layout],
                              p: tuple[Layout, Layout]) -> None:
    tl.composition(*c)
    tl.logical_divide(*d)
    tl.logical_product(*p)


@VALID
@given(S.swizzles(max_bits=4, max_base=5, max_shift=6))
def test_swizzles_satisfy_the_static_asserts(sw: Swizzle) -> None:
    assert sw.bits >= 0 and sw.base >= 0 and abs(sw.shift) >= sw.bits
    assert sw.bits <= 4 and sw.base <= 5 and abs(sw.shift) <= 6
    assert Swizzle(sw.bits, sw.base, sw.shift) == sw


@VALID
@given(S.swizzled_layouts(max_size=2048))
def test_swizzled_layouts_are_bijective_swizzle_compositions(c: ComposedLayout) -> None:
    assert isinstance(c, ComposedLayout) and isinstance(c.layout_a, Swizzle)
    assert sorted(c.table(np.int64).tolist()) == list(range(tl.size(c)))
    assert parse(str(c)) == c


@VALID
@given(st.sampled_from([1, 6, 32, 96, 128, 256]).flatmap(
    lambda n: st.tuples(st.just(n), S.thread_layouts(n, max_rank=3), S.thread_layouts(n, compact=True))))
def test_thread_layouts_have_exactly_num_threads(case: tuple[int, Layout, Layout]) -> None:
    n, a, c = case
    assert tl.size(a) == n and injective(a)
    assert tl.size(c) == n and sorted(c.table(np.int64).tolist()) == list(range(n))


@VALID
@given(st.sampled_from([1, 2, 4, 8]), st.data())
def test_value_layouts_hold_whole_vectors(v: int, data: st.DataObject) -> None:
    a = data.draw(S.value_layouts(v, max_repeat=4))
    assert tl.size(a) % v == 0 and tl.rank(a) == 2
    assert sorted(a.table(np.int64).tolist()) == list(range(tl.size(a)))


@VALID
@given(S.tiled_copy_cases(num_threads=64, element_bits=16, max_repeat=2))
def test_tiled_copies_are_built(case: S.TiledCopyCase) -> None:
    tc = case.tiled_copy
    assert isinstance(tc, TiledCopy) and tc.tiled_num_thr == 64 == tl.size(case.thr_layout)
    assert tl.size(tc.layout_tv) == 64 * tl.size(case.val_layout)
    assert case.op.startswith("UniversalCopy<uint") and case.value_type == "half_t"


@VALID
@given(S.tiled_mma_cases(max_atoms=4))
def test_tiled_mmas_are_built(case: S.TiledMMACase) -> None:
    m = case.tiled_mma
    assert case.atom in S.SM80_MMA_ATOMS and tl.rank(case.atom_layout) == 3
    assert tl.size(case.atom_layout) in (1, 2, 4) and tl.size(m.thr_layout_vmnk) == 32 * tl.size(case.atom_layout)
    for i, p in enumerate(case.permutation):
        # a permutation covers a whole number of the tile the atoms cover without one
        base = m.atom.shape_mnk[i] * tl.size(m.thr_layout_vmnk[i + 1])
        assert isinstance(p, tl.Underscore) or tl.size(p) in (base, 2 * base)
    # every value of C lands in the tile; a compact atom layout numbers exactly its threads
    c = m.get_layoutC_TV()
    assert max(c.table(np.int64)) < m.tile_shape[0] * m.tile_shape[1]
    if tl.cosize(case.atom_layout) == tl.size(case.atom_layout):
        assert tl.size(c[0]) == tl.size(m.thr_layout_vmnk)


@VALID
@given(S.thread_maps(element_bits=16))
def test_thread_maps_are_constructible(m: PitchLinearThreadMap) -> None:
    assert m.threads in (32, 64, 128, 256) and m.elements_per_access * 16 <= 128
    assert type(m)(**_tm_args(m)) == m  # the class accepts the same parameters again
    assert m.iterations.count > 0


def _tm_args(m: Any) -> dict[str, Any]:
    kw = {"shape": tuple(m.shape), "threads": m.threads, "elements_per_access": m.elements_per_access}
    if hasattr(m, "warp_thread_arrangement"):
        kw["warp_thread_arrangement"] = tuple(m.warp_thread_arrangement)
    return kw


@settings(VALID, max_examples=40)
@given(S.specs())
def test_specs_load_and_verify(spec: dict[str, Any]) -> None:
    loaded = tm.load(spec)
    runs = tm.verify_spec(loaded, checks=["coverage", "bank_conflicts"])
    assert runs and all(r.verdict in ("pass", "fail") for r in runs)
    if spec["name"] == "generated transpose":
        assert not any(r.failing for r in tm.verify_spec(loaded, checks=["coverage"]))


# ----------------------------------------------------------------------------- (b) a planted conflict
def _conflicted(spec: dict[str, Any]) -> bool:
    """The property's negation: verify finds a shared-memory bank conflict (the expect block
    allows none, so any extra wavefront fails the check)."""
    run = tm.verify_spec({**spec, "expect": {"bank_conflicts": 0}}, checks=["bank_conflicts"])[0]
    return "bank_conflicts" in run.failing


def test_planted_bank_conflict_is_found_and_shrunk() -> None:
    """The (false) property "every f32 global -> shared tiled copy of 32 threads into a
    row-major shared tile is conflict-free", written only with :func:`specs`, fails; the
    shrunk counterexample (deterministic: derandomized, no database) is the smallest conflict
    there is:

        element f32, threads (32,1):(1,32), values (2,1):(1,2), UniversalCopy<uint32_t>,
        tile [64, 1], shared (64,1):(1,1), one block (M=64, N=1)

    Each thread owns two consecutive rows (``raked_product``), so a 4-byte store instruction
    has lane i write word 2i: banks 2i % 32, a 2-way conflict (2 wavefronts), the smallest
    instance of the classic row-major "(32,32):(32,1) column store" conflict (a warp walking
    down a column whose rows are a multiple of 32 banks apart).  Unswizzled, unpadded."""
    strategy = S.specs(families=("tiled_copy",), elements=("f32",), threads=32,
                       predicates=("none",), smem_kinds=("row_major",), max_repeat=4)
    minimal = find(strategy, _conflicted, settings=settings(
        database=None, derandomize=True, deadline=None, max_examples=400,
        suppress_health_check=list(HealthCheck)))
    copy = minimal["stages"][0]["copy"]
    part = copy["dst"]["tiled_copy"]
    assert minimal["tensors"]["s"]["layout"] == "(64,1):(1,1)", minimal
    assert "Sw<" not in minimal["tensors"]["s"]["layout"]
    assert part == {"threads": "(32,1):(1,32)", "values": "(2,1):(1,2)",
                    "atom": "UniversalCopy<uint32_t>"}, minimal
    assert copy["src"]["tile"] == [64, 1] and minimal["sizes"] == {"M": 64, "N": 1}
    assert minimal["tensors"]["x"]["layout"] == "(M,N):(N,1)"
    # and the example really is a 2-way conflict, as the bank model counts it
    run = tm.verify_spec(minimal, checks=["bank_conflicts"])[0]
    (res,) = [r for r in run.results if r.check == "bank_conflicts"]
    assert res.summary.max_wavefronts == 2


# ----------------------------------------------------------------------------- (c) header oracle
ORACLE_SEED = 20250101
N_ORACLE = 40


def _sample(strategy: st.SearchStrategy[Any], n: int, key: Any = str) -> list[Any]:
    """``n`` distinct examples drawn by hypothesis with a fixed seed (reproducible)."""
    out: dict[str, Any] = {}

    @seed(ORACLE_SEED)
    @settings(max_examples=6 * n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(x: Any) -> None:
        if len(out) < n:
            out.setdefault(key(x), x)

    collect()
    return list(out.values())


def _norm(text: str) -> str:
    return text.replace("_", "").replace(" ", "").strip()


def test_header_oracle_accepts_the_generated_objects() -> None:
    """40 thread maps, 40 tiled copies and 40 swizzled layouts in ONE translation unit:
    it compiles (every static_assert holds) and prints what Python computes."""
    require_oracle()
    maps = _sample(S.thread_maps(element_bits=16), N_ORACLE, key=lambda m: m.cxx_type)
    copies = _sample(S.tiled_copy_cases(), N_ORACLE,
                     key=lambda c: (c.op, str(c.thr_layout), str(c.val_layout)))
    swz = _sample(S.swizzled_layouts(max_size=1024), N_ORACLE)
    assert len(maps) == len(copies) == len(swz) == N_ORACLE
    body = ["template <class M> void offsets() {",
            '  std::printf(" %d %d %d %d |", int(M::Iterations::kContiguous), '
            "int(M::Iterations::kStrided), int(M::Delta::kContiguous), int(M::Delta::kStrided));",
            "  for (int t = 0; t < M::kThreads; ++t) {",
            "    auto o = M::initial_offset(t);",
            '    std::printf(" %d %d", int(o.contiguous()), int(o.strided()));',
            "  }", "}", "int main() {"]
    want: dict[str, str] = {}
    for i, m in enumerate(maps):
        body.append(f'  std::printf("M{i}\\t"); offsets<{m.cxx_type}>(); std::printf("\\n");')
        off_c, off_s = m.initial_offset(np.arange(m.threads, dtype=np.int64))
        it, d = m.iterations, m.delta
        want[f"M{i}"] = " ".join(str(int(x)) for x in (it.contiguous, it.strided, d.contiguous, d.strided)) \
            + " | " + " ".join(f"{int(c)} {int(s)}" for c, s in zip(off_c, off_s))
    for i, c in enumerate(copies):
        body.append(f"  {{ auto tc = make_tiled_copy(Copy_Atom<{c.op}, {c.value_type}>{{}}, "
                    f"{cxx_layout(c.thr_layout)}, {cxx_layout(c.val_layout)}); "
                    f'std::printf("C{i}\\t"); print(typename decltype(tc)::TiledLayout_TV{{}}); '
                    f'std::printf(" "); print(typename decltype(tc)::Tiler_MN{{}}); std::printf("\\n"); }}')
        tiler = "(" + ",".join(str(int(x)) for x in c.tiled_copy.tiler_mn) + ")"
        want[f"C{i}"] = f"{c.tiled_copy.layout_tv}{tiler}"
    for i, z in enumerate(swz):
        sw = z.layout_a
        body.append(f"  {{ auto l = composition(Swizzle<{sw.bits},{sw.base},{sw.shift}>{{}}, "
                    f'{cxx_layout(z.layout_b)}); std::printf("S{i}\\t"); '
                    '  for (int j = 0; j < int(size(l)); ++j) std::printf(" %d", int(l(j))); '
                    'std::printf("\\n"); }')
        want[f"S{i}"] = " ".join(str(int(v)) for v in z.table(np.int64))
    body += ["  return 0;", "}"]
    out = run_cxx("\n".join(body))
    got = {k: v for k, v in (line.split("\t", 1) for line in out.splitlines() if "\t" in line)}
    assert set(got) == set(want)
    bad = [f"{k}: C++ {got[k]!r} != Python {v!r}" for k, v in want.items()
           if (_norm(got[k]) != _norm(v) if k.startswith("C") else got[k].split() != v.split())]
    assert not bad, "\n".join(bad[:10])
