"""MMA atoms: the C++ oracle (``cute::MMA_Traits``) and the TV-layout properties."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.cxx_oracle import PRELUDE, run_cxx
from threadmap.errors import AtomError
from threadmap.layout import size
from threadmap.layout.atom.mma_traits import (
    CXX_VALUE_TYPES,
    GMMA_N_VALUES,
    MMA_ATOMS,
    MMAAtom,
    SM90_64xNx8_F32TF32TF32_SS_TN,
    SM90_64xNx16_F16F16F16_RS,
    SM90_64xNx16_F16F16F16_SS,
    SM90_64xNx16_F32BF16BF16_SS,
    SM90_64xNx16_F32F16F16_RS,
    SM90_64xNx16_F32F16F16_SS,
    get_mma_atom,
    gmma_64xN_layout_c,
)
from threadmap.layout.int_tuple import product

# ----------------------------------------------------------------------------------------------
# A tiny parser for CuTe's printed int tuples / layouts, for structural comparison
# ----------------------------------------------------------------------------------------------


def _parse_tuple(text: str) -> Any:
    """Parse ``(_4,(2,_3))`` / ``8`` into nested tuples of ints (static ``_`` accepted)."""
    pos = 0

    def parse() -> Any:
        nonlocal pos
        if text[pos] == "(":
            pos += 1
            items = [parse()]
            while text[pos] == ",":
                pos += 1
                items.append(parse())
            assert text[pos] == ")", text
            pos += 1
            return tuple(items)
        start = pos
        while pos < len(text) and (text[pos].isdigit() or text[pos] == "_"):
            pos += 1
        return int(text[start:pos].lstrip("_"))

    result = parse()
    assert pos == len(text), f"trailing text in {text!r}"
    return result


def _parse_layout(text: str) -> tuple[Any, Any]:
    shape, stride = text.strip().replace(" ", "").split(":")
    return _parse_tuple(shape), _parse_tuple(stride)


# ----------------------------------------------------------------------------------------------
# The C++ oracle: one program printing MMA_Traits of every atom (plus some non-K-major GMMAs)
# ----------------------------------------------------------------------------------------------

# The GMMA shapes with N outside {8,16,32,64,96,128,192,256} live in mma_*_sm90_gmma_ext.hpp,
# which cute/atom/mma_traits_sm90_gmma.hpp includes only under this macro; it must be defined
# before the first CuTe include, hence a custom prelude.
ORACLE_PRELUDE = "#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED\n" + PRELUDE

ORACLE_HELPERS = r"""
template <class Op, class D, class A, class B, class C>
void dump(const char* key) {
  using T = MMA_Traits<Op>;
  printf("%s|ThrID|", key);     print(typename T::ThrID{});     printf("\n");
  printf("%s|ALayout|", key);   print(typename T::ALayout{});   printf("\n");
  printf("%s|BLayout|", key);   print(typename T::BLayout{});   printf("\n");
  printf("%s|CLayout|", key);   print(typename T::CLayout{});   printf("\n");
  printf("%s|Shape_MNK|", key); print(typename T::Shape_MNK{}); printf("\n");
  printf("%s|types|%d%d%d%d\n", key,
         int(std::is_same_v<typename T::ValTypeD, D>), int(std::is_same_v<typename T::ValTypeA, A>),
         int(std::is_same_v<typename T::ValTypeB, B>), int(std::is_same_v<typename T::ValTypeC, C>));
}
"""


def _oracle_atoms() -> list[MMAAtom]:
    """Every registered atom, plus GMMA atoms with other majors (same layouts by the header)."""
    extra = []
    for n in (8, 24, 128, 256):
        extra += [
            SM90_64xNx16_F16F16F16_SS(n, "MN", "MN"),
            SM90_64xNx16_F32F16F16_SS(n, "MN", "K"),
            SM90_64xNx16_F32BF16BF16_SS(n, "K", "MN"),
            SM90_64xNx16_F32F16F16_RS(n, "K", "MN"),
        ]
    return list(MMA_ATOMS.values()) + extra


def _key(atom: MMAAtom) -> str:
    return atom.cxx_type


@pytest.fixture(scope="module")
def oracle() -> dict[tuple[str, str], str]:
    atoms = _oracle_atoms()
    calls = []
    for atom in atoms:
        types = ", ".join(
            CXX_VALUE_TYPES[t] for t in (atom.val_type_d, atom.val_type_a, atom.val_type_b, atom.val_type_c)
        )
        calls.append(f'  dump<{atom.cxx_type}, {types}>("{_key(atom)}");')
    body = ORACLE_HELPERS + "int main() {\n" + "\n".join(calls) + "\n  return 0;\n}\n"
    out = run_cxx(body, prelude=ORACLE_PRELUDE)
    table: dict[tuple[str, str], str] = {}
    for line in out.splitlines():
        key, tag, value = line.split("|")
        table[(key, tag)] = value
    assert len(table) == 6 * len({_key(a) for a in atoms})
    return table


def test_oracle_mma_traits(oracle: dict[tuple[str, str], str]) -> None:
    """Every atom's ThrID, A/B/C layouts, Shape_MNK and value types equal MMA_Traits<Op>."""
    mismatches = []
    compared = 0
    for atom in _oracle_atoms():
        key = _key(atom)
        for tag, ours in (
            ("ThrID", atom.thr_id),
            ("ALayout", atom.layout_a),
            ("BLayout", atom.layout_b),
            ("CLayout", atom.layout_c),
        ):
            cxx = oracle[(key, tag)]
            compared += 1
            # structural: parsed (shape, stride) trees, and the printed text without "_"
            if _parse_layout(cxx) != _parse_layout(str(ours)) or cxx.replace("_", "") != str(ours):
                mismatches.append(f"{key} {tag}: C++ {cxx} vs ours {ours}")
            elif (ours.shape, ours.stride) != _parse_layout(cxx):
                mismatches.append(f"{key} {tag}: C++ {cxx} vs ours shape/stride {ours.shape}:{ours.stride}")
        compared += 2
        if _parse_tuple(oracle[(key, "Shape_MNK")]) != atom.shape_mnk:
            mismatches.append(f"{key} Shape_MNK: C++ {oracle[(key, 'Shape_MNK')]} vs ours {atom.shape_mnk}")
        if oracle[(key, "types")] != "1111":
            mismatches.append(f"{key} value types (D,A,B,C same-as flags {oracle[(key, 'types')]})")
    assert compared >= 6 * len(MMA_ATOMS)
    assert not mismatches, "\n".join(mismatches)


# ----------------------------------------------------------------------------------------------
# Properties
# ----------------------------------------------------------------------------------------------


def _mode(layout: Any, i: int) -> tuple[Any, Any]:
    return layout.shape[i], layout.stride[i]


def _all_zero(t: Any) -> bool:
    return t == 0 if isinstance(t, int) else all(_all_zero(x) for x in t)


def _eval(layout: Any) -> np.ndarray:
    return np.asarray(layout(np.arange(size(layout))))


@pytest.mark.parametrize("name", sorted(MMA_ATOMS))
def test_tv_layout_properties(name: str) -> None:
    atom = MMA_ATOMS[name]
    m, n, k = atom.shape_mnk
    threads = atom.num_threads
    thr = _eval(atom.thr_id)
    assert len(np.unique(thr)) == threads, "ThrID must be injective"

    # C: a bijection (thread, value) -> M*N
    c_thr, _ = _mode(atom.layout_c, 0)
    assert product(c_thr) == threads
    vals = _eval(atom.layout_c)
    assert product(atom.layout_c.shape) == m * n == threads * product(atom.layout_c.shape[1])
    assert np.array_equal(np.sort(vals), np.arange(m * n)), f"{name}: C is not a bijection onto M*N"

    for op, rows, cols in (("A", m, k), ("B", n, k)):
        lay = atom.layout(op)
        t_shape, t_stride = _mode(lay, 0)
        v_shape = lay.shape[1]
        assert product(t_shape) == threads
        assert product(lay.shape) == threads * product(v_shape)
        vals = _eval(lay)
        assert vals.min() >= 0 and vals.max() < rows * cols
        assert np.array_equal(np.unique(vals), np.arange(rows * cols)), f"{name}: {op} misses elements"
        if atom.is_gmma and getattr(atom, f"{op.lower()}_source") == "smem":
            # descriptor operand: broadcast to all threads, the value mode is the whole tile
            assert _all_zero(t_stride)
            assert product(v_shape) == rows * cols
        else:
            assert np.array_equal(np.sort(vals), np.arange(rows * cols)), f"{name}: {op} not a bijection"


def test_registry_contents() -> None:
    for name in (
        "UniversalFMA",
        "SM80_8x8x4_F64F64F64F64_TN",
        "SM80_16x8x8_F16F16F16F16_TN", "SM80_16x8x8_F32F16F16F32_TN", "SM80_16x8x8_F32BF16BF16F32_TN",
        "SM80_16x8x16_F16F16F16F16_TN", "SM80_16x8x16_F32F16F16F32_TN", "SM80_16x8x16_F32BF16BF16F32_TN",
    ):
        assert get_mma_atom(name).name == name
    for acc in ("F16F16F16F16", "F32F16F16F32"):
        for ab in ("TN", "NT", "NN", "TT"):
            atom = get_mma_atom(f"SM70_8x8x4_{acc}_{ab}")
            assert str(atom.thr_id) == "(4,2):(1,16)"
            assert atom.num_threads == 8
    for n in GMMA_N_VALUES:
        for fam in ("F16F16F16", "F32F16F16", "F32BF16BF16"):
            for src in ("SS", "RS"):
                atom = get_mma_atom(f"SM90_64x{n}x16_{fam}_{src}")
                assert atom.shape_mnk == (64, n, 16) and atom.num_threads == 128
                assert atom.layout_c == gmma_64xN_layout_c(n)
    atom = get_mma_atom("SM80_16x8x16_F32F16F16F32_TN")
    types = (atom.val_type_d, atom.val_type_a, atom.val_type_b, atom.val_type_c)
    assert types == ("f32", "f16", "f16", "f32")
    assert get_mma_atom("SM80_16x8x16_F32BF16BF16F32_TN").val_type_a == "bf16"


def test_gmma_c_layout_formula() -> None:
    assert str(gmma_64xN_layout_c(64)) == "((4,8,4),(2,2,8)):((128,1,16),(64,8,512))"
    # thread t = t0 + 4 t1 + 32 t2 holds row 8*t2... : value 0 of thread 0 is (0,0); of thread 1 is (0,2)
    lay = gmma_64xN_layout_c(16)
    assert lay(1) == 2 * 64  # thread 1, value 0 -> (m=0, n=2)
    assert lay(4) == 1       # thread 4, value 0 -> (m=1, n=0)
    assert lay(32) == 16     # thread 32 (warp 1), value 0 -> (m=16, n=0)


def test_unknown_atom_lists_names() -> None:
    with pytest.raises(AtomError) as exc:
        get_mma_atom("SM80_16x8x16_F32F16F16F32_NT")
    msg = str(exc.value)
    assert "SM80_16x8x16_F32F16F16F32_TN" in msg and "SM70_8x8x4_F16F16F16F16_NT" in msg
    assert "GMMA" in msg


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: SM90_64xNx16_F32F16F16_SS(12), "multiple of 8"),
        (lambda: SM90_64xNx16_F32F16F16_SS(264), "multiple of 8"),
        (lambda: SM90_64xNx16_F16F16F16_RS(64, "MN", "K"), "K major"),
        (lambda: SM90_64xNx16_F16F16F16_SS(64, "M", "K"), "GMMA::Major"),
        (lambda: gmma_64xN_layout_c(0), "multiple of 8"),
    ],
)
def test_gmma_factory_errors(call: Any, match: str) -> None:
    with pytest.raises(AtomError, match=match):
        call()


def test_gmma_majors_and_tf32() -> None:
    atom = SM90_64xNx16_F32F16F16_SS(128, "MN", "K")
    assert atom.cxx_type == "SM90_64x128x16_F32F16F16_SS<GMMA::Major::MN,GMMA::Major::K>"
    assert atom.layout_a == MMA_ATOMS["SM90_64x128x16_F32F16F16_SS"].layout_a
    assert not atom.extended and SM90_64xNx16_F32F16F16_SS(136).extended
    tf = SM90_64xNx8_F32TF32TF32_SS_TN(32)
    assert tf.cxx_type == "SM90_64x32x8_F32TF32TF32_SS_TN<>" and tf.shape_mnk == (64, 32, 8)


def test_gmma_names_as_the_compiler_prints_them() -> None:
    # typeid names carry the scales after the majors; the scales leave the layouts alone
    full = ("cute::SM90::GMMA::MMA_64x16x16_F32F16F16_SS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::MN, "
            "cute::SM90::GMMA::ScaleIn::Neg, cute::SM90::GMMA::ScaleIn::One>")
    assert get_mma_atom(full) == get_mma_atom("SM90_64x16x16_F32F16F16_SS<GMMA::Major::K, GMMA::Major::MN>")
    with pytest.raises(AtomError, match="a GMMA atom takes"):
        get_mma_atom("SM90_64x16x16_F32F16F16_SS<GMMA::Major::K, GMMA::Major::MN, ScaleIn::Half, ScaleIn::One>")
