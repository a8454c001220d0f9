"""The header's behaviour beyond injective, static layouts, case by case against the real
CuTe headers: ``right_inverse``/``left_inverse`` of non-injective layouts (stride-0 modes,
repeated strides, negative strides) with static and *dynamic* integers; ``coalesce`` with
dynamic integers; ``cosize`` for every sign pattern; zero extents; and the int-tuple
functions ``inner_product``, ``crd2crd``, ``unflatten``, ``max``, ``compatible``,
``replace``, ``safe_div``, ``elem_less``.

Results are compared as the text CuTe prints, ``_`` of static integers included, so the
static-ness of every leaf must match too.  Cases threadmap rejects must fail to compile
(or, for a dynamic ``safe_div``... never) against the header; the counts of compared and of
rejected cases are asserted, so a generator bug cannot make the test pass vacuously.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import threadmap.layout as tl
from tests.support.cxx_oracle import rejected_by_header, run_print_batch
from threadmap.errors import LayoutError
from threadmap.gpu.cxx import cxx_obj, cxx_tuple
from threadmap.layout import Dyn, Layout
from threadmap.layout.integral_constant import static_str

SEED = 20261201
N_PROGRAMS = 2


def out_str(x: Any) -> str:
    if isinstance(x, Layout):
        return x.to_str(static=True)
    if isinstance(x, tuple):
        return tl.tuple_str(x, static=True)
    if isinstance(x, bool):
        return str(int(x))
    if isinstance(x, int):
        return static_str(x)
    raise TypeError(x)


# --------------------------------------------------------------------------- generators
def _unflat(flat: list[Any], prof: Any) -> Any:
    it = iter(flat)

    def rec(p: Any) -> Any:
        return tuple(rec(x) for x in p) if isinstance(p, tuple) else next(it)
    return rec(prof)


def r_profile(rng: random.Random) -> Any:
    r = rng.randint(1, 4)
    modes = [0 if rng.random() < 0.7 else tuple(0 for _ in range(rng.randint(1, 2)))
             for _i in range(r)]
    return tuple(modes) if r > 1 or rng.random() < 0.3 else modes[0]


def r_layout(rng: random.Random, *, dyn: float = 0.0, neg: float = 0.0, zero_stride: float = 0.2,
             dup: float = 0.3, zero_extent: float = 0.0) -> Layout:
    prof = r_profile(rng)
    n = len(tl.flatten_to_tuple(prof))
    shp = [rng.choice([1, 2, 2, 3, 4, 4, 8]) for _ in range(n)]
    if zero_extent and rng.random() < zero_extent:
        shp[rng.randrange(n)] = 0
    std: list[int] = []
    cur = 1
    for s in shp:  # mostly ordered strides, then perturbed
        std.append(cur)
        cur *= max(s, 1)
    rng.shuffle(std)
    for i in range(n):
        if rng.random() < zero_stride:
            std[i] = 0
        elif rng.random() < dup and i:
            std[i] = std[rng.randrange(i)]
        if rng.random() < neg:
            std[i] = -std[i]

    def d(v: int) -> Any:
        return Dyn(v) if rng.random() < dyn else v
    return Layout(_unflat([d(v) for v in shp], prof), _unflat([d(v) for v in std], prof))


def _p(expr: str) -> str:
    return f"{{ auto r = {expr}; print(r); }}"


def _b(expr: str) -> str:
    return f"{{ auto r = {expr}; printf(\"%d\", int(r)); }}"


Case = tuple[str, str, Callable[[], Any]]  # (description, C++ statement, threadmap)


def build_cases(seed: int = SEED) -> dict[str, list[Case]]:
    rng = random.Random(seed)
    out: dict[str, list[Case]] = {}

    def add(group: str, n: int, make: Callable[[], Case]) -> None:
        seen: set[str] = set()
        lst = out.setdefault(group, [])
        for _t in range(n * 20):
            if len(lst) >= n:
                break
            c = make()
            if c[0] not in seen:
                seen.add(c[0])
                lst.append(c)

    def inv(op: str, **kw: Any) -> Callable[[], Case]:
        def make() -> Case:
            a = r_layout(rng, **kw)
            return (f"{op}({a.to_str(static=True)})", _p(f"{op}({cxx_obj(a)})"),
                    lambda: getattr(tl, op)(a))
        return make

    add("right_inverse", 40, inv("right_inverse", neg=0.2))
    add("right_inverse_dynamic", 30, inv("right_inverse", dyn=0.3, neg=0.1))
    add("left_inverse", 40, inv("left_inverse", neg=0.2))
    add("left_inverse_dynamic", 20, inv("left_inverse", dyn=0.3))
    def m_ties() -> Case:
        # repeated strides: the header's exchange sort is not stable, so the order of
        # equal strides decides which mode an inverse takes
        n = rng.randint(3, 6)
        shp = tuple(rng.choice([2, 3, 4]) for _ in range(n))
        std = tuple(rng.choice([1, 1, 2, 2, 4, 0, 6]) for _ in range(n))
        a = Layout(shp, std)
        op = rng.choice(["right_inverse", "left_inverse"])
        return (f"{op}({a.to_str(static=True)})", _p(f"{op}({cxx_obj(a)})"),
                lambda: getattr(tl, op)(a))
    add("inverse_ties", 40, m_ties)
    add("coalesce_dynamic", 24, lambda: (lambda a: (
        f"coalesce({a.to_str(static=True)})", _p(f"coalesce({cxx_obj(a)})"),
        lambda: tl.coalesce(a)))(r_layout(rng, dyn=0.4, neg=0.1)))

    def m_cosize() -> Case:
        a = r_layout(rng, neg=0.5, zero_stride=0.2, dyn=0.2 if rng.random() < 0.3 else 0.0)
        return f"cosize({a.to_str(static=True)})", _p(f"cosize({cxx_obj(a)})"), lambda: tl.cosize(a)
    add("cosize", 30, m_cosize)
    out["cosize"].append(("cosize(_4:_-1)", _p(f"cosize({cxx_obj(Layout(4, -1))})"),
                          lambda: tl.cosize(Layout(4, -1))))

    def m_zero() -> Case:
        a = r_layout(rng, zero_extent=1.0, zero_stride=0.1)
        op = rng.choice(["size", "cosize", "coalesce", "filter", "flatten", "depth", "rank"])
        fn = getattr(tl, {"flatten": "flatten_layout"}.get(op, op))
        return f"{op}({a.to_str(static=True)})", _p(f"{op}({cxx_obj(a)})"), lambda: fn(a)
    add("zero_extent", 24, m_zero)
    out["zero_extent"].append(("size((4,0):(1,4))", _p(f"size({cxx_obj(Layout((4, 0), (1, 4)))})"),
                               lambda: tl.size(Layout((4, 0), (1, 4)))))

    def r_tuple(prof: Any, lo: int = 0, hi: int = 9) -> Any:
        return _unflat([rng.randint(lo, hi) for _ in tl.flatten_to_tuple(prof)], prof)

    def m_inner() -> Case:
        p = r_profile(rng)
        a, b = r_tuple(p, -4, 6), r_tuple(p, -4, 6)
        if rng.random() < 0.15:
            b = r_tuple(r_profile(rng))
        return (f"inner_product({a},{b})", _p(f"inner_product({cxx_tuple(a)}, {cxx_tuple(b)})"),
                lambda: tl.inner_product(a, b))
    add("inner_product", 16, m_inner)

    def m_crd2crd() -> Case:
        p = r_profile(rng)
        src = r_tuple(p, 1, 6)
        dst = src if rng.random() < 0.5 else r_tuple(p if isinstance(p, tuple) else 0, 1, 6)
        if not isinstance(p, tuple) or rng.random() < 0.3:
            dst = (tl.size(src),) if rng.random() < 0.5 else tl.size(src)
        crd = _unflat([rng.randrange(max(s, 1)) for s in tl.flatten_to_tuple(src)], src)
        if rng.random() < 0.3:
            crd = rng.randrange(tl.size(src))
        return (f"crd2crd({crd},{src},{dst})",
                _p(f"crd2crd({cxx_tuple(crd)}, {cxx_tuple(src)}, {cxx_tuple(dst)})"),
                lambda: tl.crd2crd(crd, src, dst))
    add("crd2crd", 14, m_crd2crd)

    def m_unflatten() -> Case:
        p = r_profile(rng)
        n = len(tl.flatten_to_tuple(p))
        flat = tuple(rng.randint(1, 9) for _ in range(n + (1 if rng.random() < 0.15 else 0)))
        return (f"unflatten({flat},{p})", _p(f"unflatten({cxx_tuple(flat)}, {cxx_tuple(p)})"),
                lambda: tl.unflatten(flat, p))
    add("unflatten", 10, m_unflatten)

    def m_max() -> Case:
        t = r_tuple(r_profile(rng), -5, 9)
        return f"max({t})", _p(f"cute::max({cxx_tuple(t)})"), lambda: tl.tuple_max(t)
    add("tuple_max", 10, m_max)

    def m_compatible() -> Case:
        a = r_tuple(r_profile(rng), 1, 4)
        b = a if rng.random() < 0.3 else r_tuple(r_profile(rng), 1, 4)
        if rng.random() < 0.3 and isinstance(a, tuple):
            b = tuple(tl.size(x) if rng.random() < 0.5 else x for x in a)
            a, b = b, a
        return (f"compatible({a},{b})", _b(f"compatible({cxx_tuple(a)}, {cxx_tuple(b)})"),
                lambda: tl.compatible(a, b))
    add("compatible", 14, m_compatible)

    def m_replace() -> Case:
        t = r_tuple(r_profile(rng), 1, 9)
        n = rng.randrange(tl.rank(t) + (1 if rng.random() < 0.1 else 0))
        x = r_tuple(r_profile(rng), 1, 9)
        return (f"replace<{n}>({t},{x})", _p(f"replace<{n}>({cxx_tuple(t)}, {cxx_tuple(x)})"),
                lambda: tl.replace(t, n, x))
    add("replace", 10, m_replace)

    def m_safe_div() -> Case:
        b = rng.choice([1, 2, 3, 4, -2])
        a = b * rng.randint(-3, 5) + (rng.choice([1, 2]) if rng.random() < 0.3 else 0)
        da, db = (Dyn(a) if rng.random() < 0.3 else a), (Dyn(b) if rng.random() < 0.2 else b)
        return (f"safe_div({out_str(da)},{out_str(db)})",
                _p(f"safe_div({cxx_obj(da)}, {cxx_obj(db)})"), lambda: tl.safe_div(da, db))
    add("safe_div", 14, m_safe_div)

    def m_elem_less() -> Case:
        p = r_profile(rng)
        a, b = r_tuple(p, 0, 5), r_tuple(p, 0, 5)
        return (f"elem_less({a},{b})", _b(f"elem_less({cxx_tuple(a)}, {cxx_tuple(b)})"),
                lambda: tl.elem_less(a, b))
    add("elem_less", 10, m_elem_less)
    return out


CASES = build_cases()
GROUPS = list(CASES)
# the fewest cases each group must compare / reject (a generator bug must not make the
# test pass vacuously)
MIN_COMPARED = {"inverse_ties": 30, "right_inverse": 35, "right_inverse_dynamic": 25, "left_inverse": 15,
                "left_inverse_dynamic": 5, "coalesce_dynamic": 20, "cosize": 25,
                "zero_extent": 15, "inner_product": 10, "crd2crd": 8, "unflatten": 6,
                "tuple_max": 8, "compatible": 10, "replace": 6, "safe_div": 6, "elem_less": 8}
MIN_REJECTED = {"left_inverse": 5, "left_inverse_dynamic": 5}


def _known_divergence(e: LayoutError) -> bool:
    """left_inverse with a negative stride: the header builds a layout with a negative
    extent; threadmap rejects it (its layouts have non-negative extents).  Such cases are
    still run, and the test checks that the header's result has a negative extent."""
    return "negative extent" in str(e)


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    ours: dict[str, tuple[str, Any]] = {}
    accepted: dict[str, str] = {}
    rejected: dict[str, str] = {}
    for g, cases in CASES.items():
        for i, (_desc, cxx, fn) in enumerate(cases):
            cid = f"{g}_{i}"
            try:
                ours[cid] = ("ok", fn())
                accepted[cid] = cxx
            except LayoutError as e:
                ours[cid] = ("rejected", e)
                if _known_divergence(e):
                    accepted[cid] = cxx
                else:
                    rejected[cid] = cxx
    ids = list(accepted)
    chunks = [{k: accepted[k] for k in ids[j::N_PROGRAMS]} for j in range(N_PROGRAMS)]
    with ThreadPoolExecutor(N_PROGRAMS) as ex:
        outs = list(ex.map(run_print_batch, chunks))
    merged: dict[str, str] = {}
    for o in outs:
        merged.update(o)
    return {"ours": ours, "out": merged, "rejected": rejected_by_header(rejected),
            "n_rejected": {g: sum(1 for c in rejected if c.rsplit("_", 1)[0] == g) for g in GROUPS}}


@pytest.mark.parametrize("group", GROUPS)
def test_against_header(group: str, oracle: dict[str, Any]) -> None:
    bad = []
    compared = 0
    for i, (desc, _cxx, _fn) in enumerate(CASES[group]):
        cid = f"{group}_{i}"
        status, val = oracle["ours"][cid]
        if status == "ok":
            compared += 1
            got = oracle["out"].get(cid)
            if got != out_str(val):
                bad.append(f"{desc}: C++ {got!r} vs threadmap {out_str(val)!r}")
        elif _known_divergence(val):
            got = oracle["out"].get(cid, "")
            if "_-" not in got.split(":")[0]:
                bad.append(f"{desc}: threadmap rejects a negative extent, C++ printed {got!r}")
        elif cid not in oracle["rejected"]:
            bad.append(f"{desc}: threadmap rejects ({val}) but the header compiles it")
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:20])
    assert compared >= MIN_COMPARED[group], (group, compared)
    assert oracle["n_rejected"][group] >= MIN_REJECTED.get(group, 0), (group, oracle["n_rejected"])


def test_ties_distinguish_the_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tie cases can fail: with a stable sort instead of the header's exchange sort, at
    least 3 of them give a different inverse (so matching the header is not vacuous)."""
    from threadmap.layout import layout as layout_mod
    ours = {}
    for desc, _c, fn in CASES["inverse_ties"]:
        try:
            ours[desc] = str(fn())
        except LayoutError:
            pass
    monkeypatch.setattr(layout_mod, "exchange_sort_order",
                        lambda keys: sorted(range(len(keys)), key=lambda i: keys[i]))
    differ = 0
    for desc, _c, fn in CASES["inverse_ties"]:
        if desc in ours:
            try:
                differ += str(fn()) != ours[desc]
            except LayoutError:
                differ += 1
    assert differ >= 3, differ
