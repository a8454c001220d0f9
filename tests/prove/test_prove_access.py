"""The vector-legality queries of ``prove`` (``vectorize`` and ``coalescing``) build one formula
per distinct key of :meth:`AccessEncoding.legal_keys`, not one per lane: lanes of one key have
the same formula, and the verdicts are those of the disjunction over every lane (the encoding
before the keys: a z3 term for each of a warp instruction's lanes, 32,768 per property for an sgemm
epilogue)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import z3  # type: ignore[import-untyped]  # z3 ships no type stubs

from threadmap.model import build_model
from threadmap.prove.access import AccessEncoding, legality
from threadmap.prove.encode import SizeSpace
from threadmap.spec.load import load_spec

ROOT = Path(__file__).resolve().parents[2]
#: ranged and fixed sizes; scalar and 4- and 8-wide vectors; no predicate, bounds and vector
#: predicates; legal and illegal accesses (the verdicts below are asserted to differ)
SPECS = [ROOT / "specs" / p for p in (
    "ranges/row_rvectorized_any.yaml", "ranges/row_rvectorized.yaml", "ranges/row_smem.yaml",
    "planted/transpose_vector_store_odd_m.yaml", "cutlass/sm80_f16_gemm_a_128x32_warpraked.yaml",
    "planted/stripmined_vector_straddle_n62.yaml",
)] + [ROOT / "tests" / "prove" / "cases" / "stripmined_small_any_n.yaml"]
TIMEOUT_MS = 300_000


def _encoding(path: Path) -> AccessEncoding:
    loaded = load_spec(path)
    space = SizeSpace(loaded)
    space.choose_bits([*space.grid, *space.relations])
    return AccessEncoding(loaded, space, build_model(loaded, loaded.envs[0]), TIMEOUT_MS,
                          time.perf_counter() + 600)


@pytest.mark.parametrize("path", SPECS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_one_formula_per_key_gives_the_verdicts_of_one_per_lane(path: Path) -> None:
    """Every lane's formula is the formula of the first lane of its key (the same z3 term), and
    ``legality`` decides as the disjunction with one disjunct per lane (``vectorize``: every
    real vector; ``coalescing``: every active one) does, satisfiable for REFUTED.  Among
    SPECS, row_rvectorized_any, transpose_vector_store_odd_m and stripmined_small_any_n are
    refuted (misaligned vectors, derived in their comments), the others proved."""
    enc = _encoding(path)
    assert enc.sides
    for prop in ("vectorize", "coalescing"):
        want = "PROVED"
        for s in enc.sides:
            keys = enc.legal_keys(s)
            first: dict[bytes, z3.BoolRef] = {}
            bad = []
            for _, _, lanes in enc.lanes(s):
                for t, v0 in lanes:
                    ok = enc.legal(s, t, v0)
                    assert first.setdefault(keys[t, v0 // s.sd.vec].tobytes(), ok).eq(ok), (t, v0)
                    if not z3.is_true(z3.simplify(ok)):
                        bad.append(z3.Not(ok) if prop == "vectorize" else
                                   z3.And(enc.any_active(s, t, v0), z3.Not(ok)))
            if bad and enc.witness(enc.solver(TIMEOUT_MS), [z3.Or(bad)]) is not None:
                want = "REFUTED"
        got = legality(enc, prop, TIMEOUT_MS, time.perf_counter())
        assert got.status == want, (prop, got.reason)
