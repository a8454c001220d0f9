"""The vector width of CuTe's plain ``copy(src, dst)`` on ``local_partition`` fragments, against
the real headers.

For each generated case (element type, tile layout in shared or global memory, thread layout)
the model's vector (``SideModel.vec``) of a copy between the partition and a register fragment
``make_tensor<T>(shape(part))`` must equal what ``cute::copy`` picks: the C++ program calls the
header's ``max_common_vector`` and ``max_alignment`` on the very tensors and applies the choice
``copy`` makes (``AutoVectorizingCopyWithAssumedAlignment<128>`` between static layouts, ``<8>``
otherwise; the vector is ``gcd(common * bits, alignment)`` when that is a whole number of bytes
wider than one element).  One program for every case.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import pytest

import threadmap.api as api
from tests.support.cxx_oracle import run_cxx
from threadmap.spec.load import loads_spec

SEED = 20261201
N_CASES = 64
TYPES = {"u8": ("uint8_t", 8), "f16": ("half_t", 16), "f32": ("float", 32), "f64": ("double", 64)}

HELPERS = """
template <int MaxVecBits, class S, class D>
int vec_bits(S const& src, D const& dst) {   // the choice of copy(AutoVectorizingCopyWithAssumedAlignment<MaxVecBits>)
  using V = typename D::value_type;
  constexpr int common_elem = CUTE_STATIC_V(max_common_vector(src, dst));
  if constexpr (common_elem > 1) {
    constexpr int align_bits = CUTE_STATIC_V(gcd(max_alignment(src), max_alignment(dst), Int<MaxVecBits>{}));
    constexpr int vb = gcd(common_elem * int(sizeof_bits_v<V>), align_bits);
    if constexpr ((vb % 8) == 0 && int(sizeof_bits_v<V>) < vb) { return vb; }
  }
  return int(sizeof_bits_v<V>);
}
template <class S, class D>
int plain_copy_bits(S const& src, D const& dst) {  // copy(src, dst): static layouts assume 128-bit alignment
  if constexpr (is_static<decltype(src.layout())>::value && is_static<decltype(dst.layout())>::value) {
    return vec_bits<128>(src, dst);
  } else {
    return vec_bits<8>(src, dst);
  }
}
"""


@dataclass(frozen=True)
class Case:
    elem: str
    memory: str
    tile: tuple[int, int]
    strides: tuple[int, int]        # shared: the tile's strides; global: (row pitch, 1) or (1, col pitch)
    threads: tuple[int, int]
    thr_stride: tuple[int, int]

    def spec(self) -> str:
        (m, n), (tm, tn) = self.tile, self.threads
        thr = f'"({tm},{tn}):({self.thr_stride[0]},{self.thr_stride[1]})"'
        if self.memory == "shared":
            tensor = f'sA: {{memory: shared, layout: "({m},{n}):({self.strides[0]},{self.strides[1]})"}}'
            side = f"{{tensor: sA, threads: {thr}}}"
            sizes = ""
        else:
            lay = "(M,N):(P,1)" if self.strides[1] == 1 else "(M,N):(1,P)"
            tensor = f'gA: {{memory: global, layout: "{lay}"}}'
            side = f"{{tensor: gA, tile: [{m}, {n}], at: [0, 0], threads: {thr}}}"
            pitch = max(self.strides)
            sizes = f"sizes: {{M: {m}, N: {n}, P: {pitch}}}\n"
        return (f"spec: 1\nname: case\nelement: {self.elem}\nthreads: {tm * tn}\n{sizes}grid: [1]\n"
                f"tensors:\n  {tensor}\nstages:\n  - copy: {{src: {side}, dst: {{registers: r}}}}\n")

    def cxx(self, i: int) -> str:
        ctype = TYPES[self.elem][0]
        (m, n), (tm, tn) = self.tile, self.threads
        tl = f"Layout<Shape<Int<{tm}>,Int<{tn}>>, Stride<Int<{self.thr_stride[0]}>,Int<{self.thr_stride[1]}>>>{{}}"
        if self.memory == "shared":
            lay = f"Layout<Shape<Int<{m}>,Int<{n}>>, Stride<Int<{self.strides[0]}>,Int<{self.strides[1]}>>>{{}}"
            make = f"auto t = make_tensor(make_smem_ptr(buf), {lay});"
        else:
            pitch = max(self.strides)
            stride = "make_stride(pitch, Int<1>{})" if self.strides[1] == 1 else "make_stride(Int<1>{}, pitch)"
            make = (f"int pitch = {pitch} + argc - 1; auto g = make_tensor(make_gmem_ptr(buf), "
                    f"make_layout(make_shape({m} + argc - 1, {n} + argc - 1), {stride}));"
                    f" auto t = local_tile(g, make_shape(Int<{m}>{{}}, Int<{n}>{{}}), make_coord(0, 0));")
        return (f"  {{ using T = {ctype}; static T buf[1 << 16]; {make}\n"
                f"    auto p = local_partition(t, {tl}, argc - 1); auto r = make_tensor<T>(shape(p));\n"
                f'    printf("case {i} %d %d\\n", plain_copy_bits(p, r), plain_copy_bits(r, p)); }}\n')


def _cases() -> list[Case]:
    rng = random.Random(SEED)
    out = []
    while len(out) < N_CASES:
        elem = rng.choice(list(TYPES))
        m, n = rng.choice([8, 16, 32]), rng.choice([8, 16, 32, 64])
        tm = rng.choice([d for d in (1, 2, 4, 8, 16, 32) if m % d == 0])
        tn = rng.choice([d for d in (1, 2, 4, 8, 16, 32) if n % d == 0 and tm * d <= 256])
        row = rng.random() < 0.6
        if rng.random() < 0.5:  # a fragment along the contiguous mode: the vectorizable kind
            tm = m if row else 1
            tn = rng.choice([d for d in (1, 2, 4, 8, 16, 32) if n % d == 0 and tm * d <= 256])
        thr_stride = (tn, 1) if rng.random() < 0.5 else (1, tm)
        memory = "shared" if rng.random() < 0.75 else "global"
        pad = rng.choice([0, 0, 1, 2, 4, 8])
        strides = (n + pad, 1) if row else (1, m + pad)
        out.append(Case(elem, memory, (m, n), strides, (tm, tn), thr_stride))
    return out


@pytest.fixture(scope="module")
def header_bits() -> dict[int, tuple[int, int]]:
    cases = _cases()
    body = HELPERS + "int main(int argc, char**) {\n" + "".join(c.cxx(i) for i, c in enumerate(cases)) + "}\n"
    out = run_cxx(body)
    found = {int(a): (int(b), int(c)) for a, b, c in re.findall(r"case (\d+) (\d+) (\d+)", out)}
    assert len(found) == len(cases)
    return found


@pytest.mark.parametrize("i", range(N_CASES))
def test_plain_copy_vector_matches_cute(i: int, header_bits: dict[int, tuple[int, int]]) -> None:
    case = _cases()[i]
    model = api.models(loads_spec(case.spec(), "yaml", "<case>"))[0]
    side = model.stages[0].src
    bits = side.vec * side.elem_bits
    to_regs, from_regs = header_bits[i]
    assert to_regs == from_regs  # copy is symmetric here
    assert bits == to_regs, case


def test_the_cases_cover_both_answers(header_bits: dict[int, tuple[int, int]]) -> None:
    # a generator that only ever produced scalar (or only vector) copies would test nothing
    kinds = {(c.memory, header_bits[i][0] > TYPES[c.elem][1]) for i, c in enumerate(_cases())}
    assert {("shared", True), ("shared", False), ("global", False)} <= kinds
    # and some whose fragment runs are contiguous but not aligned (max_alignment < max_common_vector)
    assert any(c.memory == "shared" and c.strides[0] == 1 and c.strides[1] % 4 and c.threads[0] == 1
               and header_bits[i][0] > TYPES[c.elem][1] for i, c in enumerate(_cases()))
