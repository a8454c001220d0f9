"""C++ oracle for ``threadmap.layout.atom`` (copy and MMA atoms): TiledCopy / TiledMMA against the real CuTe headers.

One program per family (copies, MMAs, copies built from MMAs), each compiled once (binaries are
cached by source hash), over a fixed-seed batch of cases.  Each case prints its layouts with
CuTe's ``print`` (``TiledLayout_TV``, ``Tiler_MN``, ``get_layoutS_TV``, ``get_layoutA/B/C_TV``,
partitions of counting / identity tensors for a few thread indices, fragments, retiles) and the
value table of every partition.  The comparison is structural (the printed text, with CuTe's
``_`` of static integers removed, equals ``str`` of the Python layout; the text also parses back
with :func:`threadmap.layout.parse.parse_layout`) and by value.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.support.cxx_oracle import rejected_by_header, run_cxx
from threadmap.errors import AtomError
from threadmap.layout import (
    ArithTuple,
    CopyAtom,
    Layout,
    Tensor,
    TiledCopy,
    Underscore,
    _,
    get_copy_op,
    make_compact_layout,
    make_identity_tensor,
    make_tiled_copy,
    make_tiled_copy_A,
    make_tiled_copy_B,
    make_tiled_copy_C,
    make_tiled_copy_C_atom,
    make_tiled_mma,
    size,
)
from threadmap.layout.atom.mma_traits import get_mma_atom
from threadmap.layout.parse import parse_layout

SEED = 20240607
# each case costs about 2 CPU-s of template instantiation in the C++ oracle: CI draws 12 copies and
# 6 MMAs (with the copies built from them), THREADMAP_ORACLE_SCALE=4 the 48 and 24 of a
# thorough run
_SCALE = float(os.environ.get("THREADMAP_ORACLE_SCALE", "1"))
N_COPY = max(1, round(12 * _SCALE))
N_MMA = max(1, round(6 * _SCALE))

# ------------------------------------------------------------------------------------------
# C++ spelling
# ------------------------------------------------------------------------------------------


def _cxx_tuple(t: Any, kind: str) -> str:
    if isinstance(t, tuple):
        return f"{kind}<" + ",".join(_cxx_tuple(x, kind) for x in t) + ">"
    return f"Int<{t}>"


def cxx_layout(layout: Layout) -> str:
    """``Layout<Shape<...>,Stride<...>>`` for a static layout."""
    s, d = layout.shape, layout.stride
    if not isinstance(s, tuple):
        return f"Layout<Int<{s}>,Int<{d}>>"
    return f"Layout<{_cxx_tuple(s, 'Shape')},{_cxx_tuple(d, 'Stride')}>"


def _cxx_perm(p: Any) -> str:
    if isinstance(p, Underscore):
        return "Underscore"
    if isinstance(p, Layout):
        return cxx_layout(p)
    return f"Int<{p}>"


_STATIC = re.compile(r"_(\d)")


def norm(text: str) -> str:
    """CuTe's printed text without the ``_`` of static integers."""
    return _STATIC.sub(r"\1", text.strip())


def _fmt(x: Any) -> str:
    if isinstance(x, tuple):
        return "(" + ",".join(_fmt(v) for v in x) + ")"
    return str(int(x))


def _values(t: Tensor, profile: Any = None) -> str:
    """Space-separated ``t(j)`` for ``j < size(t)``, as the C++ loop prints them."""
    out = []
    for j in range(size(t.layout)):
        v = t(j)
        if isinstance(v, ArithTuple):
            out.append(_fmt(v.to_tuple(profile)))
        else:
            out.append(str(int(v)))
    return " ".join(out)


PRINT_HELPERS = r"""
template <class X> void pl(char const* key, X const& x) { printf("%s ", key); print(x); printf("\n"); }
template <class T> void pv(char const* key, T const& t) {
  printf("%s ", key);
  for (int j = 0; j < int(size(t)); ++j) { print(t(j)); printf(" "); }
  printf("\n");
}
"""

# ------------------------------------------------------------------------------------------
# the cases (fixed seed)
# ------------------------------------------------------------------------------------------

THR_LAYOUTS = [
    Layout((32, 8), (1, 32)), Layout((32, 8), (8, 1)), Layout((8, 32), (32, 1)),
    Layout((16, 16), (1, 16)), Layout((16, 16), (16, 1)), Layout((4, 8), (1, 4)),
    Layout((4, 8), (8, 1)), Layout((32, 4), (4, 1)), Layout((8, 8), (8, 1)),
    Layout((2, 16), (1, 2)), Layout((64, 2), (2, 1)), Layout((32, 1), (1, 0)),
    Layout((1, 32), (0, 1)), Layout((8, 16), (16, 1)), Layout(((4, 2), 8), ((1, 32), 4)),
    Layout(128, 1),
]
VAL_LAYOUTS = [
    Layout((4, 1), (1, 0)), Layout((1, 4), (0, 1)), Layout((2, 2), (1, 2)), Layout((8, 1), (1, 0)),
    Layout((1, 8), (0, 1)), Layout((4, 2), (2, 1)), Layout((2, 1), (1, 0)), Layout((1, 1), (0, 0)),
    Layout((16, 1), (1, 0)), Layout((2, 4), (1, 2)), Layout((4, 4), (4, 1)), Layout((1, 2), (0, 1)),
]
COPY_OPS = [
    "UniversalCopy<uint128_t>", "UniversalCopy<uint64_t>", "UniversalCopy<uint32_t>",
    "UniversalCopy<uint16_t>", "SM80_CP_ASYNC_CACHEALWAYS<uint128_t>",
    "SM80_CP_ASYNC_CACHEALWAYS<uint64_t>", "SM80_CP_ASYNC_CACHEALWAYS<uint32_t>",
    "SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>", "AutoVectorizingCopyWithAssumedAlignment<128>",
    "AutoVectorizingCopyWithAssumedAlignment<8>", "AutoVectorizingCopyWithAssumedAlignment<64>",
    "UniversalCopy<float>", "UniversalCopy<half_t>",
]
VAL_TYPES = ["float", "half_t", "double", "int8_t", "bfloat16_t"]


#: C++ statements of the tiled copies copy_cases() draws and threadmap rejects
REJECTED_COPIES: dict[str, str] = {}


def _src_layout(tiler: tuple[int, ...], k: int) -> Layout:
    m, n = tiler
    return [
        make_compact_layout((2 * m, n)),
        Layout((m, 2 * n), (2 * n, 1)),
        make_compact_layout((m, n, 2)),
    ][k % 3]


def copy_cases() -> tuple[list[dict[str, Any]], int]:
    """~N_COPY legal tiled copies (and how many draws the Python legality check rejected)."""
    rng = random.Random(SEED)
    cases: list[dict[str, Any]] = []
    rejected = 0
    seen = set()
    REJECTED_COPIES.clear()
    while len(cases) < N_COPY:
        op, vt = rng.choice(COPY_OPS), rng.choice(VAL_TYPES)
        thr, val = rng.choice(THR_LAYOUTS), rng.choice(VAL_LAYOUTS)
        key = (op, vt, str(thr), str(val))
        if key in seen:
            continue
        seen.add(key)
        try:
            tc = make_tiled_copy(CopyAtom(get_copy_op(op), vt), thr, val)
        except AtomError:
            rejected += 1
            REJECTED_COPIES[f"rej{rejected}"] = (
                f"{{ auto t = make_tiled_copy(Copy_Atom<{op}, {vt}>{{}}, {cxx_layout(thr)}{{}}, "
                f"{cxx_layout(val)}{{}}); print(t); }}")
            continue
        src = _src_layout(tc.tiler_mn, len(cases))
        cases.append({"op": op, "vt": vt, "thr": thr, "val": val, "tc": tc, "src": src})
    return cases, rejected


MMA_ATOM_NAMES = [
    "UniversalFMA", "SM80_16x8x16_F32F16F16F32_TN", "SM80_16x8x16_F16F16F16F16_TN",
    "SM70_8x8x4_F32F16F16F32_NT", "SM70_8x8x4_F16F16F16F16_TN", "SM80_8x8x4_F64F64F64F64_TN",
    "SM80_16x8x8_F32TF32TF32F32_TN", "SM75_16x8x8_F32F16F16F32_TN",
]
ATOM_LAYOUTS = [
    make_compact_layout((1, 1, 1)), make_compact_layout((2, 2, 1)), Layout((2, 2), (2, 1)),
    Layout((4, 2, 1), (2, 1, 0)), make_compact_layout((2, 1, 1)), make_compact_layout((1, 4, 1)),
    make_compact_layout((2, 2, 2)), Layout((2, 4, 1), (4, 1, 0)),
]


def _perm_choices(rng: random.Random, mma_atom: Any, thr: Layout) -> tuple[Any, ...]:
    tm = make_tiled_mma(mma_atom, thr)
    perms: list[Any] = []
    for i in range(3):
        base = tm.tile_size_mnk(i)
        r = rng.random()
        if r < 0.45:
            perms.append(_)
        elif r < 0.75:
            perms.append(base * rng.choice([1, 2]))
        else:
            a = mma_atom.shape_mnk[i]
            b = base * 2 // a
            if a > 1 and b > 1:
                perms.append(Layout((a, b), (b, 1)))   # a transpose-like permutation of size 2*base
            else:
                perms.append(_)
    return tuple(perms)


def mma_cases() -> list[dict[str, Any]]:
    rng = random.Random(SEED + 1)
    cases: list[dict[str, Any]] = [
        # the sgemm_2 setup of the notes
        {"atom": "UniversalFMA", "thr": make_compact_layout((16, 16, 1)), "perm": (_, _, _)},
        # the notes' SM70 example: 2x2 n-major atoms, M permuted
        {"atom": "SM70_8x8x4_F32F16F16F32_NT", "thr": Layout((2, 2), (2, 1)),
         "perm": (Layout((4, 4, 2), (1, 8, 4)), 32, 4)},
        {"atom": "SM70_8x8x4_F32F16F16F32_NT", "thr": Layout((2, 2), (2, 1)), "perm": (32, 32, 4)},
    ]
    while len(cases) < N_MMA:
        name = rng.choice(MMA_ATOM_NAMES)
        thr = rng.choice(ATOM_LAYOUTS)
        if name == "UniversalFMA":
            thr = rng.choice([make_compact_layout((8, 8, 1)), Layout((4, 8, 1), (8, 1, 0)), thr])
        atom = get_mma_atom(name)
        cases.append({"atom": name, "thr": thr, "perm": _perm_choices(rng, atom, thr)})
    for c in cases:
        c["mma"] = make_tiled_mma(c["atom"], c["thr"], c["perm"])
    return cases


_L221 = make_compact_layout((2, 2, 1))
_F32 = "SM80_16x8x16_F32F16F16F32_TN"
_F16 = "SM80_16x8x16_F16F16F16F16_TN"
MMA_COPY_SPECS: list[tuple[str, str, str, str, Layout]] = [
    # (kind, copy op, value type, mma atom, atom layout)
    ("A", "SM75_U32x4_LDSM_N", "half_t", _F32, _L221),
    ("B", "SM75_U32x2_LDSM_N", "half_t", _F32, _L221),
    ("B", "SM75_U32x2_LDSM_N", "half_t", _F16, make_compact_layout((1, 2, 1))),
    ("A", "SM75_U16x8_LDSM_T", "half_t", _F32, _L221),
    ("A", "UniversalCopy<uint32_t>", "half_t", _F32, make_compact_layout((2, 1, 1))),
    ("C", "UniversalCopy<uint64_t>", "float", _F32, _L221),
    ("C", "SM90_U32x2_STSM_N", "half_t", _F16, _L221),
    ("C", "UniversalCopy<float>", "float", "UniversalFMA", make_compact_layout((16, 16, 1))),
    ("A", "UniversalCopy<double>", "double", "SM80_8x8x4_F64F64F64F64_TN", make_compact_layout((2, 2, 1))),
    ("Catom", "UniversalCopy<uint32_t>", "half_t", _F16, _L221),
    ("Catom", "SM90_U32x2_STSM_N", "half_t", _F16, _L221),
    ("Catom", "UniversalCopy<uint64_t>", "float", _F32, make_compact_layout((4, 1, 1))),
]

_MAKE: dict[str, tuple[str, Callable[..., TiledCopy]]] = {
    "A": ("make_tiled_copy_A", make_tiled_copy_A), "B": ("make_tiled_copy_B", make_tiled_copy_B),
    "C": ("make_tiled_copy_C", make_tiled_copy_C),
    "Catom": ("make_tiled_copy_C_atom", make_tiled_copy_C_atom),
}


def mma_copy_cases() -> list[dict[str, Any]]:
    out = []
    for kind, op, vt, atom, thr in MMA_COPY_SPECS:
        mma = make_tiled_mma(atom, thr)
        tc = _MAKE[kind][1](CopyAtom(get_copy_op(op), vt), mma)
        out.append({"kind": kind, "op": op, "vt": vt, "atom": atom, "thr": thr, "mma": mma, "tc": tc})
    return out


def _tids(n: int) -> list[int]:
    return sorted({0, 1, min(5, n - 1), n - 1})


def _cxx_tids(n: int) -> str:
    return "{" + ",".join(str(t) for t in _tids(n)) + "}"


# ------------------------------------------------------------------------------------------
# programs and Python expectations
# ------------------------------------------------------------------------------------------


def copy_program(cases: list[tuple[int, dict[str, Any]]]) -> tuple[str, dict[str, str]]:
    body = [PRINT_HELPERS, "int main() {", "char k[64];"]
    exp: dict[str, str] = {}
    for i, c in cases:
        tc: TiledCopy = c["tc"]
        body.append(f"""{{
  auto tc = make_tiled_copy(Copy_Atom<{c['op']}, {c['vt']}>{{}},
                            {cxx_layout(c['thr'])}{{}}, {cxx_layout(c['val'])}{{}});
  using TC = decltype(tc);
  pl("C{i}.TV", typename TC::TiledLayout_TV{{}});
  pl("C{i}.TILER", typename TC::Tiler_MN{{}});
  pl("C{i}.S_TV", tc.get_layoutS_TV());
  pl("C{i}.D_TV", tc.get_layoutD_TV());
  auto src = make_coord_tensor({cxx_layout(c['src'])}{{}});
  for (int t : {_cxx_tids(tc.tiled_num_thr)}) {{
    auto ps = tc.get_slice(t).partition_S(src);
    auto pd = tc.get_slice(t).partition_D(src);
    snprintf(k, 64, "C{i}.PS%d", t); pl(k, ps.layout());
    snprintf(k, 64, "C{i}.PSV%d", t); pv(k, ps);
    snprintf(k, 64, "C{i}.PD%d", t); pl(k, pd.layout());
    snprintf(k, 64, "C{i}.PDV%d", t); pv(k, pd);
  }}
}}""")
        exp[f"C{i}.TV"] = str(tc.layout_tv)
        exp[f"C{i}.TILER"] = _fmt(tc.tiler_mn)
        exp[f"C{i}.S_TV"] = str(tc.get_layoutS_TV())
        exp[f"C{i}.D_TV"] = str(tc.get_layoutD_TV())
        src = Tensor(c["src"], 0)
        for t in _tids(tc.tiled_num_thr):
            ps = tc.get_slice(t).partition_S(src)
            pd = tc.get_slice(t).partition_D(src)
            exp[f"C{i}.PS{t}"] = str(ps.layout)
            exp[f"C{i}.PSV{t}"] = _values(ps)
            exp[f"C{i}.PD{t}"] = str(pd.layout)
            exp[f"C{i}.PDV{t}"] = _values(pd)
    body.append("}")
    return "\n".join(body), exp


def _mma_cxx(c: dict[str, Any]) -> str:
    atom = get_mma_atom(c["atom"])
    perm = ",".join(_cxx_perm(p) for p in c["perm"])
    return f"make_tiled_mma({atom.cxx_type}{{}}, {cxx_layout(c['thr'])}{{}}, Tile<{perm}>{{}})"


def mma_program(cases: list[tuple[int, dict[str, Any]]]) -> tuple[str, dict[str, str]]:
    body = [PRINT_HELPERS, "int main() {", "char k[64];"]
    exp: dict[str, str] = {}
    for i, c in cases:
        mma = c["mma"]
        tm, tn, tk = mma.tile_shape
        lc = make_compact_layout((2 * tm, tn))
        la = Layout((tm, 2 * tk), (2 * tk, 1))
        lb = make_compact_layout((tn, tk))
        body.append(f"""{{
  auto mma = {_mma_cxx(c)};
  pl("M{i}.VMNK", mma.get_thr_layout_vmnk());
  pl("M{i}.TILE", tile_shape(mma));
  pl("M{i}.A_TV", mma.get_layoutA_TV());
  pl("M{i}.B_TV", mma.get_layoutB_TV());
  pl("M{i}.C_TV", mma.get_layoutC_TV());
  pl("M{i}.SHC", partition_shape_C(mma, make_shape(Int<{2 * tm}>{{}}, Int<{tn}>{{}})));
  auto tC = make_coord_tensor({cxx_layout(lc)}{{}});
  auto tA = make_coord_tensor({cxx_layout(la)}{{}});
  auto tB = make_coord_tensor({cxx_layout(lb)}{{}});
  auto iA = make_identity_tensor(make_shape(Int<{tm}>{{}}, Int<{2 * tk}>{{}}));
  for (int t : {_cxx_tids(mma.size())}) {{
    auto s = mma.get_slice(t);
    snprintf(k, 64, "M{i}.VC%d", t); pl(k, s.thr_vmnk_);
    auto pc = s.partition_C(tC); snprintf(k, 64, "M{i}.PC%d", t); pl(k, pc.layout());
    snprintf(k, 64, "M{i}.PCV%d", t); pv(k, pc);
    auto pa = s.partition_A(tA); snprintf(k, 64, "M{i}.PA%d", t); pl(k, pa.layout());
    snprintf(k, 64, "M{i}.PAV%d", t); pv(k, pa);
    auto pb = s.partition_B(tB); snprintf(k, 64, "M{i}.PB%d", t); pl(k, pb.layout());
    snprintf(k, 64, "M{i}.PBV%d", t); pv(k, pb);
    auto ia = s.partition_A(iA); snprintf(k, 64, "M{i}.IA%d", t); pl(k, ia.layout());
    snprintf(k, 64, "M{i}.IAV%d", t); pv(k, ia);
    snprintf(k, 64, "M{i}.FC%d", t); pl(k, s.partition_fragment_C(tC).layout());
    snprintf(k, 64, "M{i}.FA%d", t); pl(k, s.partition_fragment_A(tA).layout());
    snprintf(k, 64, "M{i}.FB%d", t); pl(k, s.partition_fragment_B(tB).layout());
  }}
}}""")
        exp[f"M{i}.VMNK"] = str(mma.thr_layout_vmnk)
        exp[f"M{i}.TILE"] = _fmt(mma.tile_shape)
        exp[f"M{i}.A_TV"] = str(mma.get_layoutA_TV())
        exp[f"M{i}.B_TV"] = str(mma.get_layoutB_TV())
        exp[f"M{i}.C_TV"] = str(mma.get_layoutC_TV())
        from threadmap.layout import partition_shape_C

        exp[f"M{i}.SHC"] = _fmt(partition_shape_C(mma, (2 * tm, tn)))
        ia_t = make_identity_tensor((tm, 2 * tk))
        for t in _tids(mma.size()):
            s = mma.get_slice(t)
            exp[f"M{i}.VC{t}"] = _fmt(s.thr_vmnk)
            for key, part, ten in (("PC", s.partition_C, lc), ("PA", s.partition_A, la),
                                   ("PB", s.partition_B, lb)):
                p = part(Tensor(ten, 0))
                exp[f"M{i}.{key}{t}"] = str(p.layout)
                exp[f"M{i}.{key}V{t}"] = _values(p)
            p = s.partition_A(ia_t)
            exp[f"M{i}.IA{t}"] = str(p.layout)
            exp[f"M{i}.IAV{t}"] = _values(p, (0, 0))
            exp[f"M{i}.FC{t}"] = str(s.partition_fragment_C(lc))
            exp[f"M{i}.FA{t}"] = str(s.partition_fragment_A(la))
            exp[f"M{i}.FB{t}"] = str(s.partition_fragment_B(lb))
    body.append("}")
    return "\n".join(body), exp


def mma_copy_program(cases: list[tuple[int, dict[str, Any]]]) -> tuple[str, dict[str, str]]:
    body = [PRINT_HELPERS, "int main() {", "char k[64];"]
    exp: dict[str, str] = {}
    for i, c in cases:
        tc: TiledCopy = c["tc"]
        mma = c["mma"]
        tm, tn, tk = mma.tile_shape
        kind = c["kind"]
        shp = {"A": (tm, tk), "B": (tn, tk), "C": (tm, tn), "Catom": (tm, tn)}[kind]
        src = Layout((shp[0], 2 * shp[1]), (2 * shp[1], 1))
        frag = {"A": "partition_fragment_A", "B": "partition_fragment_B"}.get(kind, "partition_fragment_C")
        body.append(f"""{{
  auto mma = make_tiled_mma({get_mma_atom(c['atom']).cxx_type}{{}}, {cxx_layout(c['thr'])}{{}});
  auto tc = {_MAKE[kind][0]}(Copy_Atom<{c['op']}, {c['vt']}>{{}}, mma);
  using TC = decltype(tc);
  pl("X{i}.TV", typename TC::TiledLayout_TV{{}});
  pl("X{i}.TILER", typename TC::Tiler_MN{{}});
  pl("X{i}.S_TV", tc.get_layoutS_TV());
  pl("X{i}.D_TV", tc.get_layoutD_TV());
  auto src = make_coord_tensor({cxx_layout(src)}{{}});
  for (int t : {_cxx_tids(tc.tiled_num_thr)}) {{
    auto ps = tc.get_slice(t).partition_S(src);
    auto pd = tc.get_slice(t).partition_D(src);
    snprintf(k, 64, "X{i}.PS%d", t); pl(k, ps.layout());
    snprintf(k, 64, "X{i}.PSV%d", t); pv(k, ps);
    snprintf(k, 64, "X{i}.PD%d", t); pl(k, pd.layout());
    snprintf(k, 64, "X{i}.PDV%d", t); pv(k, pd);
    auto fr = mma.get_slice(t).{frag}(src);
    snprintf(k, 64, "X{i}.RT%d", t); pl(k, tc.get_slice(t).retile_D(fr).layout());
  }}
}}""")
        exp[f"X{i}.TV"] = str(tc.layout_tv)
        exp[f"X{i}.TILER"] = _fmt_tiler(tc.tiler_mn)
        exp[f"X{i}.S_TV"] = str(tc.get_layoutS_TV())
        exp[f"X{i}.D_TV"] = str(tc.get_layoutD_TV())
        st = Tensor(src, 0)
        for t in _tids(tc.tiled_num_thr):
            ps = tc.get_slice(t).partition_S(st)
            pd = tc.get_slice(t).partition_D(st)
            exp[f"X{i}.PS{t}"] = str(ps.layout)
            exp[f"X{i}.PSV{t}"] = _values(ps)
            exp[f"X{i}.PD{t}"] = str(pd.layout)
            exp[f"X{i}.PDV{t}"] = _values(pd)
            fr = getattr(mma.get_slice(t), frag)(src)
            exp[f"X{i}.RT{t}"] = str(_layout(tc.get_slice(t).retile_D(fr)))
    body.append("}")
    return "\n".join(body), exp


def _fmt_tiler(t: Any) -> str:
    if isinstance(t, tuple):
        return "(" + ",".join(_fmt_tiler(x) for x in t) + ")"
    return str(t)


def _layout(x: Any) -> Layout:
    return x.layout if isinstance(x, Tensor) else x


# ------------------------------------------------------------------------------------------
# run once per module
# ------------------------------------------------------------------------------------------


def _parse_output(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, _sep, val = line.partition(" ")
        out[key] = val.strip()
    return out


CHUNK = 8  # cases per C++ program: each compiles in 5 to 20 CPU-s and is cached on its own


def _chunks(cases: list[dict[str, Any]]) -> list[list[tuple[int, dict[str, Any]]]]:
    idx = list(enumerate(cases))
    return [idx[k:k + CHUNK] for k in range(0, len(idx), CHUNK)]


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    ccases, rejected = copy_cases()
    mcases = mma_cases()
    xcases = mma_copy_cases()
    jobs: list[tuple[str, tuple[str, dict[str, str]]]] = []
    for fam, make, cases in (("copy", copy_program, ccases), ("mma", mma_program, mcases),
                             ("mma_copy", mma_copy_program, xcases)):
        jobs += [(fam, make(ch)) for ch in _chunks(cases)]
    with ThreadPoolExecutor(max_workers=2) as ex:
        outs = list(ex.map(lambda j: run_cxx(j[1][0], timeout=1800), jobs))
    res: dict[str, Any] = {}
    for fam, n, rej in (("copy", len(ccases), rejected), ("mma", len(mcases), 0),
                        ("mma_copy", len(xcases), 0)):
        got: dict[str, str] = {}
        exp: dict[str, str] = {}
        for (f, (_src, e)), out in zip(jobs, outs, strict=True):
            if f == fam:
                got.update(_parse_output(out))
                exp.update(e)
        res[fam] = (got, exp, n, rej)
    return res


def _compare(got: dict[str, str], exp: dict[str, str]) -> list[str]:
    bad = []
    for key, want in exp.items():
        if key not in got:
            bad.append(f"{key}: missing from the C++ output")
            continue
        cxx = norm(got[key])
        if cxx != want:
            bad.append(f"{key}: C++ {cxx!r} != Python {want!r}")
            continue
        if ":" in cxx and not key.endswith("TILER"):
            # structural: the C++ text parses (static ``_N`` accepted) to the same layout
            parsed = parse_layout(got[key])
            if parsed != parse_layout(want) or str(parsed) != want:
                bad.append(f"{key}: parsed C++ {parsed} != Python {want}")
    return bad


@pytest.mark.parametrize("family", ["copy", "mma", "mma_copy"])
def test_cxx_oracle(oracle: dict[str, Any], family: str) -> None:
    got, exp, n, rejected = oracle[family]
    bad = _compare(got, exp)
    assert not bad, f"{len(bad)} mismatches of {len(exp)} in {n} {family} cases:\n" + "\n".join(bad[:30])
    assert len(exp) > 10 * n


def test_case_counts(oracle: dict[str, Any]) -> None:
    assert oracle["copy"][2] == N_COPY
    assert oracle["mma"][2] == N_MMA
    assert oracle["mma_copy"][2] == len(MMA_COPY_SPECS)


def test_rejected_draws_fail_in_cxx_too() -> None:
    """Every random tiled copy that threadmap rejects (and copy_cases() therefore drops)
    fails to compile against the header too."""
    _cases, rejected = copy_cases()
    assert rejected >= 2 and len(REJECTED_COPIES) == rejected, rejected  # 2 of the CI draws
    missing = set(REJECTED_COPIES) - rejected_by_header(REJECTED_COPIES)
    assert not missing, "threadmap rejects, the header compiles:\n" + "\n".join(
        REJECTED_COPIES[m] for m in sorted(missing))


def test_illegal_tiled_copies_fail_in_cxx_too() -> None:
    """What threadmap rejects, the header's static_asserts reject (one program, two errors)."""
    body = """int main() {
  auto t1 = make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},
                            Layout<Shape<_32,_8>>{}, Layout<Shape<_2,_1>>{});
  auto t2 = make_tiled_copy(Copy_Atom<SM75_U32x1_LDSM_N, half_t>{},
                            Layout<Shape<_16,_1>>{}, Layout<Shape<_1,_2>>{});
  print(t1); print(t2);
}"""
    with pytest.raises(AtomError, match="too few vals"):
        make_tiled_copy(CopyAtom(get_copy_op("UniversalCopy<uint128_t>"), "float"),
                        make_compact_layout((32, 8)), make_compact_layout((2, 1)))
    with pytest.raises(AtomError, match="too few thrs"):
        make_tiled_copy(CopyAtom(get_copy_op("SM75_U32x1_LDSM_N"), "half_t"),
                        make_compact_layout((16, 1)), make_compact_layout((1, 2)))
    with pytest.raises(RuntimeError) as err:
        run_cxx(body)
    assert "TiledCopy uses too few vals for selected CopyAtom" in str(err.value)
    assert "TiledCopy uses too few thrs for selected CopyAtom" in str(err.value)
