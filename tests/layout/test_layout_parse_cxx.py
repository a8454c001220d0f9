"""The C++ spellings a user pastes, parsed by threadmap and compiled by the real headers.

Each layout expression below is valid C++: the header prints it, and
``parse_layout(text, dynamic=True)`` must print the same (``_`` of static integers included:
a C++ literal ``8`` is a dynamic ``int``).  Calculator expressions in function-call syntax
are compared with the left-to-right token form and with the header.  Pasted MMA atom and
copy operation names must resolve to threadmap atoms whose C++ types are the same types
(``std::is_same_v``, checked by the compiler).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.cxx_oracle import rejected_by_header, run_print_batch
from threadmap.errors import AtomError, ParseError
from threadmap.layout import get_copy_op, get_mma_atom, parse_layout
from threadmap.layout.calculator import run_layout
from threadmap.layout.integral_constant import static_str

LAYOUTS = [
    "Swizzle<3,4,3>{}",
    "composition(Swizzle<3,4,3>{}, make_layout(make_shape(Int<8>{},Int<64>{}), "
    "make_stride(Int<64>{},Int<1>{})))",
    "composition(Swizzle<3,4,3>{}, Int<0>{}, Layout<Shape<_8,_64>,Stride<_64,_1>>{})",
    "composition(Swizzle<2,4,3>{}, Int<16>{}, Layout<Shape<_8,_32>,Stride<_32,_1>>{})",
    "make_composed_layout(Swizzle<2,4,3>{}, Int<0>{}, Layout<Shape<_8,_32>,Stride<_32,_1>>{})",
    "make_layout(make_shape(8,64), make_stride(64,1))",
    "make_layout(make_shape(_8{},_64{}), GenRowMajor{})",
    "make_layout(make_shape(Int<8>{},Int<64>{}), LayoutRight{})",
    "make_layout(make_shape(Int<8>{},Int<64>{}), GenColMajor{})",
    "make_layout(make_shape(8, make_shape(2,4)), make_stride(1, make_stride(8,16)))",
    "make_layout(make_shape(Int<8>{}, 4))",
    "Layout<Shape<_8,_64>, Stride<_64,_1>>{}",
    "Layout<Shape<_8,Shape<_2,_4>>>{}",
    "Layout<_8,_2>{}",
    "cute::make_layout(cute::make_shape(cute::Int<8>{}, cute::Int<4>{}))",
    "cute::Layout<cute::Shape<cute::_4,cute::_8>, cute::Stride<cute::_8,cute::_1>>{}",
    "tile_to_shape(composition(Swizzle<3,3,3>{}, Layout<Shape<_8,_64>,Stride<_64,_1>>{}), "
    "make_shape(Int<64>{},Int<128>{}))",
    "tile_to_shape(Layout<Shape<_8,_8>>{}, make_shape(Int<32>{},Int<32>{}), make_step(Int<2>{},Int<1>{}))",
    "composition(Layout<Shape<_8,_64>,Stride<_64,_1>>{}, make_tile(Int<4>{}, Int<8>{}))",
    "composition(Layout<Shape<_8,_64>,Stride<_64,_1>>{}, Swizzle<3,4,3>{})",
    "composition(Swizzle<2,4,3>{}, Swizzle<1,6,3>{})",
]

# (calculator function-call form, the same as left-to-right tokens, the same in C++)
CALLS = [
    ("logical_divide((4,8):(8,1), (2,4))", ["(4,8):(8,1)", "logical_divide", "(2,4)"],
     "logical_divide(Layout<Shape<_4,_8>,Stride<_8,_1>>{}, make_tile(Int<2>{},Int<4>{}))"),
    ("logical_divide(Sw<3,4,3> o (8,64):(64,1), (2,8))",
     ["Sw<3,4,3> o (8,64):(64,1)", "logical_divide", "(2,8)"],
     "logical_divide(composition(Swizzle<3,4,3>{}, Layout<Shape<_8,_64>,Stride<_64,_1>>{}), "
     "make_tile(Int<2>{},Int<8>{}))"),
    ("complement((2,2):(1,6), 24)", ["(2,2):(1,6)", "complement", "24"],
     "complement(Layout<Shape<_2,_2>,Stride<_1,_6>>{}, Int<24>{})"),
    ("right_inverse(coalesce((4,(2,2)):(2,(1,8))))", ["(4,(2,2)):(2,(1,8))", "coalesce", "right_inverse"],
     "right_inverse(coalesce(Layout<Shape<_4,Shape<_2,_2>>,Stride<_2,Stride<_1,_8>>>{}))"),
    ("zipped_product((2,2):(1,2), (3,4):(1,3))", ["(2,2):(1,2)", "zipped_product", "(3,4):(1,3)"],
     "zipped_product(Layout<Shape<_2,_2>,Stride<_1,_2>>{}, Layout<Shape<_3,_4>,Stride<_1,_3>>{})"),
    ("size(make_layout(make_shape(8,64), GenRowMajor{}))", None,
     "size(make_layout(make_shape(Int<8>{},Int<64>{}), GenRowMajor{}))"),
    ("raked_product(make_layout((2,2)), (4,4):(4,1))", ["(2,2)", "raked_product", "(4,4):(4,1)"],
     "raked_product(Layout<Shape<_2,_2>>{}, Layout<Shape<_4,_4>,Stride<_4,_1>>{})"),
]

MMA_NAMES = [
    ("UniversalFMA<float,float,float,float>", "UniversalFMA<float,float,float,float>"),
    ("cute::UniversalFMA< float, float, float, float >", "UniversalFMA<float,float,float,float>"),
    ("SM90_64x128x16_F32F16F16_SS<GMMA::Major::K,GMMA::Major::K>",
     "SM90_64x128x16_F32F16F16_SS<GMMA::Major::K,GMMA::Major::K>"),
    ("cute::SM90_64x128x16_F32F16F16_SS< GMMA::Major::MN , cute::SM90::GMMA::Major::K >",
     "SM90_64x128x16_F32F16F16_SS<GMMA::Major::MN,GMMA::Major::K>"),
    ("cute::SM90::GMMA::MMA_64x64x16_F16F16F16_RS<GMMA::Major::K, GMMA::Major::MN>",
     "SM90_64x64x16_F16F16F16_RS<GMMA::Major::K,GMMA::Major::MN>"),
    ("cute::SM80_16x8x16_F32F16F16F32_TN", "SM80_16x8x16_F32F16F16F32_TN"),
]
COPY_NAMES = ["cute::UniversalCopy<cute::uint128_t>", "UniversalCopy< uint64_t >",
              "cute::SM80_CP_ASYNC_CACHEGLOBAL<cute::uint128_t>", "cute::SM75_U32x4_LDSM_N",
              "AutoVectorizingCopyWithAssumedAlignment<64>"]


def _out(x: Any) -> str:
    if isinstance(x, int):
        return static_str(x)
    return x.to_str(static=True)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def printed() -> dict[str, str]:
    stmts = {f"p{i}": f"{{ auto r = {t}; print(r); }}" for i, t in enumerate(LAYOUTS)}
    stmts |= {f"c{i}": f"{{ auto r = {c}; print(r); }}" for i, (_e, _t, c) in enumerate(CALLS)}
    return run_print_batch(stmts)


@pytest.mark.parametrize("i", range(len(LAYOUTS)))
def test_pasted_layouts_parse_as_the_header_prints_them(i: int, printed: dict[str, str]) -> None:
    ours = parse_layout(LAYOUTS[i], dynamic=True)
    assert ours.to_str(static=True) == printed[f"p{i}"], LAYOUTS[i]


@pytest.mark.parametrize("i", range(len(CALLS)))
def test_calculator_function_calls(i: int, printed: dict[str, str]) -> None:
    expr, tokens, _cxx = CALLS[i]
    res = run_layout([expr])[-1][1]
    assert _out(res) == printed[f"c{i}"], expr
    if tokens is not None:
        assert str(run_layout(tokens)[-1][1]) == str(res)


def test_pasted_atom_names_are_the_same_cxx_types() -> None:
    """Each pasted name resolves, and the compiler agrees that the pasted spelling and the
    resolved atom's C++ type are one type (no static_assert fires in one translation unit)."""
    checks = {}
    for k, (pasted, canonical) in enumerate(MMA_NAMES):
        atom = get_mma_atom(pasted)
        assert atom.cxx_type == canonical, (pasted, atom.cxx_type)
        checks[f"m{k}"] = f"static_assert(std::is_same_v<{pasted}, {atom.cxx_type}>);"
    for k, pasted in enumerate(COPY_NAMES):
        op = get_copy_op(pasted)
        checks[f"k{k}"] = f"static_assert(std::is_same_v<{pasted}, {op.name}>);"
    bad = {"bad": "static_assert(std::is_same_v<UniversalCopy<uint64_t>, UniversalCopy<uint32_t>>);"}
    failing = rejected_by_header(checks | bad)
    assert failing == {"bad"}, failing  # the check itself can fail


@pytest.mark.parametrize("text", ["Swizzle<3,4,3", "make_layout(make_shape(8,64)", "Layout<Shape<8>>{}",
                                  "composition(Sw<3,4,3>)", "frob(4)", "Int<8>{", "Sw<3,4,3> (8,8):(8,1)"])
def test_malformed_pastes_are_parse_errors(text: str) -> None:
    with pytest.raises(ParseError):
        parse_layout(text)


@pytest.mark.parametrize("name", ["UniversalFMA<double,double,double,double>",
                                  "SM90_64x128x16_F32F16F16_SS<GMMA::Major::X,GMMA::Major::K>",
                                  "SM90_64x128x16_F32F16F16_RS<GMMA::Major::MN,GMMA::Major::K>",
                                  "SM90_64x128x16_F32F16F16_SS<", "SM80_16x8x16_F32F16F16F32_TN<int>"])
def test_bad_atom_spellings_are_atom_errors(name: str) -> None:
    with pytest.raises(AtomError):
        get_mma_atom(name)


def test_cli_accepts_function_calls_and_composed_layouts() -> None:
    """``threadmap layout`` with a function-call expression and with the composed-layout
    token form that used to fail (``Sw<3,4,3> o (8,64):(64,1) logical_divide (2,8)``)."""
    from click.testing import CliRunner

    from threadmap.cli import main

    r1 = CliRunner().invoke(main, ["layout", "logical_divide(Sw<3,4,3> o (8,64):(64,1), (2,8))"])
    r2 = CliRunner().invoke(main, ["layout", "Sw<3,4,3> o (8,64):(64,1)", "logical_divide", "(2,8)"])
    assert r1.exit_code == 0 and r2.exit_code == 0, (r1.output, r2.output)
    # the value itself is checked against the header in test_calculator_function_calls
    assert r1.output == r2.output == str(run_layout([CALLS[1][0]])[-1][1]) + "\n"
