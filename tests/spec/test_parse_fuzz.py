"""Fuzz ``threadmap.layout.parse``: any text either parses or raises a ThreadmapError
(a ValueError subclass) with a non-empty message; never another exception, never a hang."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.timeouts import time_limit
from threadmap.errors import LayoutError, ParseError, SwizzleError, ThreadmapError
from threadmap.layout import ComposedLayout, Layout
from threadmap.layout.parse import parse, parse_int_tuple
from threadmap.testing.strategies import any_layouts, swizzles

FUZZ = settings(max_examples=1500, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TIME_LIMIT_S = 2




def check_contract(text: str) -> Any:
    """parse(text) returns a layout or raises a ThreadmapError with a message."""
    t0 = time.monotonic()
    with time_limit(TIME_LIMIT_S, "parse"):
        try:
            out = parse(text)
        except ThreadmapError as e:
            assert str(e).strip(), f"empty message for {text!r}"
            return e
    assert time.monotonic() - t0 < TIME_LIMIT_S
    assert isinstance(out, (Layout, ComposedLayout)), (text, out)
    return out


# ------------------------------------------------------------------------------- generators
ALPHABET = "()[],:_-@<>oSw 0123456789E\t\nxyzMN"
UNICODE = st.characters(codec="utf-8", exclude_categories=("Cs",))


def mutate(text: str, rng: Any) -> str:
    """A near miss: delete, duplicate, swap or replace one or two characters."""
    s = list(text)
    for _ in range(rng.randint(1, 2)):
        if not s:
            break
        k = rng.randrange(5)
        i = rng.randrange(len(s))
        if k == 0:
            del s[i]
        elif k == 1:
            s.insert(i, s[i])
        elif k == 2 and len(s) > 1:
            j = rng.randrange(len(s))
            s[i], s[j] = s[j], s[i]
        elif k == 3:
            s[i] = rng.choice(ALPHABET + "０٣é∞ ")
        else:
            s.insert(i, rng.choice(["(", ")", ",", ":", "_", "-", "@0", "0", "Sw<1,2,3> o "]))
    return "".join(s)


@FUZZ
@given(st.text(alphabet=ALPHABET, max_size=40))
def test_random_layout_alphabet(text: str) -> None:
    check_contract(text)


@FUZZ
@given(st.text(UNICODE, max_size=30))
def test_random_unicode(text: str) -> None:
    check_contract(text)


@settings(FUZZ, max_examples=500)  # each case draws a whole layout: fewer, richer cases
@given(any_layouts(), st.booleans(), st.one_of(st.none(), swizzles(max_bits=4, max_base=4, max_shift=6),
                                               st.tuples(st.integers(0, 4), st.integers(0, 4),
                                                         st.integers(-4, 6))),
       st.randoms(use_true_random=False))
def test_near_miss_mutations_of_valid_layouts(a: Layout, static: bool, sw: Any, rng: Any) -> None:
    """Mutations of valid layouts (some swizzled, valid or not: the last form draws raw
    ``Sw<B,M,S>`` parameters); ``rng`` is hypothesis's own random, so mutations shrink."""
    text = a.to_str(static=static)
    if sw is not None:
        b, m, s = (sw.bits, sw.base, sw.shift) if not isinstance(sw, tuple) else sw
        text = f"Sw<{b},{m},{s}> o {text}"
    out = check_contract(mutate(text, rng))
    assert out is not None


@FUZZ
@given(st.integers(1, 200), st.integers(0, 3))
def test_deep_nesting(depth: int, kind: int) -> None:
    inner = ["1", "4", "", "1,2"][kind]
    text = "(" * depth + inner + ")" * depth
    out = check_contract(text)
    if isinstance(out, ThreadmapError):
        assert depth > 60 or inner == "", (depth, out)
    check_contract(text + ":" + text)
    check_contract("(" * depth + inner)  # unbalanced


@FUZZ
@given(st.integers(1, 60), st.sampled_from(["{n}", "({n},2):(1,{n})", "_{n}", "-{n}",
                                             "Sw<{n},1,{n}> o 8:1"]))
def test_large_numbers_in_range(digits: int, template: str) -> None:
    """Numbers up to 60 digits: parse or ThreadmapError (no overflow of other kinds)."""
    n = "9" * digits
    check_contract(template.format(n=n))


def test_huge_number_is_a_threadmap_error() -> None:
    with pytest.raises(ThreadmapError):
        with time_limit(TIME_LIMIT_S, "parse"):
            parse("9" * 5000)


def test_non_ascii_digits_are_rejected() -> None:
    with pytest.raises(ThreadmapError, match="unexpected character"):
        parse("\uff14")  # FULLWIDTH DIGIT FOUR


def test_long_text_is_bounded() -> None:
    check_contract("(" + ",".join(["1"] * 40000) + ")")
    check_contract("1" * 200_000)


# ------------------------------------------------------------------------------- messages
@pytest.mark.parametrize("text, exc, needle", [
    ("((4,2)", ParseError, "expected )"),
    ("(4,2))", ParseError, "unexpected ')'"),
    ("(4,2):(1,2", ParseError, "expected )"),
    ("", ParseError, "empty"),
    ("   ", ParseError, "empty"),
    ("(4,,2)", ParseError, "expected a number"),
    ("(4,2):", ParseError, "ended"),
    ("(4,2) junk", ParseError, "unexpected 'junk'"),
    ("(4;2)", ParseError, "unexpected character ';'"),
    ("(4,-2)", LayoutError, "negative"),
    ("(4,2):(1,(2,3))", LayoutError, "not congruent"),
    ("(4,(2,3)):(1,2,3)", LayoutError, "not congruent"),
    ("Sw<3,4,2> o (8,8):(8,1)", SwizzleError, "abs(SShift)"),
    ("Sw<-1,4,2> o 8:1", SwizzleError, "BBits"),
    ("Sw<3,4,3> (8,8):(8,1)", ParseError, "expected o"),
    ("Sw<3,4,3 o 8:1", ParseError, "expected >"),
])
def test_malformed_messages(text: str, exc: type[Exception], needle: str) -> None:
    with pytest.raises(exc) as info:
        parse(text)
    assert isinstance(info.value, ThreadmapError) and isinstance(info.value, ValueError)
    assert needle in str(info.value), str(info.value)


def test_valid_examples() -> None:
    assert parse("(4,(2,3)):(1,(4,8))") == Layout((4, (2, 3)), (1, (4, 8)))
    assert parse("(_4,_2):(_1,_4)") == Layout((4, 2), (1, 4))
    assert parse("(4,8)") == Layout((4, 8))
    assert parse_int_tuple("(4,(2,_3))") == (4, (2, 3))
    assert isinstance(parse("Sw<3,4,3> o (8,64):(64,1)"), ComposedLayout)
