"""The ``pipeline`` property for every size in range: TMA descriptor legality and pipeline safety.

* The TMA rules that depend on the sizes -- a global extent in ``1 .. 2^32``, a global stride
  (every stride but the unit one) a multiple of 16 bytes and below ``2^40`` -- are decided by z3
  over the size space (the layout's extents and strides as monomials of the sizes); a model
  is a counterexample.  The other rules (box, element strides, swizzle, multicast, the shared
  alignment) depend only on the shared tile and the tile shape, which a proof over sizes
  requires to be constant: they are decided once.
* Pipeline safety depends on the sizes only through the K-loop's trip count: its range over
  the size space (z3's optimum of the ``iterations`` expression) is explored by
  :func:`threadmap.pipeline.prove_rounds` -- every trip count at once, the ring's behaviour
  being periodic in the round.
"""

from __future__ import annotations

import re
import time
from typing import Any

import z3

from threadmap.model import KernelModel
from threadmap.pipeline import prove_rounds
from threadmap.prove.encode import SizeSpace, Unsupported, layout_monomials
from threadmap.report.model import Finding, PropertyResult
from threadmap.spec.expr import parse_expr
from threadmap.spec.load import LoadedSpec
from threadmap.verify.pipeline import gmma_findings, protocol_findings, tma_findings, tmem_findings

#: TMA rules whose truth depends on the sizes (decided by z3 here, not at one sample)
SIZE_RULES = ("a global extent is 1 .. 2^32", "a global stride is < 2^40 bytes",
              "a global stride is a multiple of 16 bytes")
METHOD = "z3 over sizes + protocol exploration over trip counts"


def pipeline_property(loaded: LoadedSpec, space: SizeSpace, model0: KernelModel, timeout_ms: int) -> PropertyResult:
    """The ``pipeline`` property of ``loaded`` (see the module docstring)."""
    t0 = time.process_time()
    pipe = model0.pipeline

    def done(status: str, reason: str, **kw: Any) -> PropertyResult:
        return PropertyResult(property="pipeline", status=status, method=METHOD,  # type: ignore[arg-type]
                              seconds=round(time.process_time() - t0, 3), reason=reason, **kw)

    if pipe is None:
        return done("PROVED", "the spec has no pipeline")
    if pipe.size_dependent:
        return done("UNKNOWN", f"the pipeline's barriers or byte counts depend on {', '.join(pipe.size_dependent)}: "
                               "only the trip count may vary over the sizes")
    # rules that do not depend on the sizes, at the first size environment; a wgmma operand's
    # stage is a tile whose layout names no size, so its findings hold for every size
    sized = [g.tensor for g in pipe.gmma
             if set(re.findall(r"[A-Za-z_]\w*", str(loaded.spec.tensors[g.tensor].layout))) & set(loaded.spec.sizes)]
    if sized:
        return done("UNKNOWN", f"the wgmma operand stage {sized[0]} depends on the sizes: its descriptors are checked "
                               "at the sampled sizes only (verify)")
    fixed = [f for f in tma_findings(pipe, model0.where) if f.witness.get("rule") not in SIZE_RULES] + \
        gmma_findings(pipe, model0.where) + tmem_findings(pipe, model0.where)
    if fixed:
        return done("REFUTED", f"{len(fixed)} TMA, wgmma operand or tensor memory rule(s) broken for every size",
                    sizes=dict(model0.env), findings=fixed)
    names = list(loaded.spec.sizes)
    for t in pipe.tma.values():
        text = loaded.spec.tensors[t.gmem].layout
        try:
            extents, strides = layout_monomials(text, names, multiples=space.multiples())
        except Unsupported as err:
            return done("UNKNOWN", f"TMA copy {t.name!r}: {err}")
        if strides is None:
            return done("UNKNOWN", f"TMA copy {t.name!r}: the global layout {text!r} has strides that are nested "
                                   "or no monomials of the sizes")
        bad = _size_rule_counterexample(space, extents, strides, t.copy.elem_bits // 8, timeout_ms)
        if bad is not None:
            where_sizes, what = bad
            return done("REFUTED", f"TMA copy {t.name!r}: {what} at {where_sizes}", sizes=where_sizes,
                        findings=[Finding(check="pipeline", kind="tma_descriptor", witness={"copy": t.name,
                                                                                            "sizes": where_sizes},
                                          message=f"TMA copy {t.name!r}: {what} at sizes {where_sizes}")])
    trip = _trip_range(space, str(pipe.iterations_expr), timeout_ms)
    if trip is None:
        return done("UNKNOWN", f"the trip count {pipe.iterations_expr!r} has no bounds z3 could find")
    kmin, kmax = trip
    e = prove_rounds(pipe.protocol, kmin, kmax)
    if e.truncated:
        return done("UNKNOWN", f"the protocol exploration stopped at {e.states} states (trip counts {kmin} .. {kmax})")
    if e.findings:
        fs = protocol_findings(model0.where, e)
        k = e.findings[0].witness.get("iterations")
        sizes = _sizes_for_trip(space, str(pipe.iterations_expr), k, timeout_ms)
        return done("REFUTED", f"{len(fs)} hazard(s) of the pipeline at trip count {k} (trip counts {kmin} .. "
                               f"{kmax})", sizes=sizes, findings=fs)
    return done("PROVED", f"TMA descriptors legal for every size; the pipeline safe for every trip count "
                          f"{kmin} .. {kmax} ({e.states} protocol states)")


def _size_rule_counterexample(space: SizeSpace, extents: list[Any], strides: list[Any], eb: int,
                              timeout_ms: int) -> tuple[dict[str, int], str] | None:
    env = space.sym_env()
    wide = max(64, 2 * space.bits + 8)  # a stride in bytes is compared with 2^40
    checks = []
    for i, ext in enumerate(extents):
        e = space.bv(ext.value(env), wide)
        checks.append((z3.Or(e == 0, z3.UGT(e, 1 << 32)), f"global extent of mode {i} outside 1 .. 2^32"))
    for i, st in enumerate(strides):
        if not st.powers and st.coef == 1:
            continue  # the unit-stride mode: the descriptor stores no stride for it
        d = space.bv(st.value(env), wide) * eb
        checks.append((z3.URem(d, 16) != 0, f"global stride of mode {i} ({st} x {eb} B) not a multiple of 16 bytes"))
        checks.append((z3.UGE(d, 1 << 40), f"global stride of mode {i} ({st} x {eb} B) not below 2^40 bytes"))
    for cond, what in checks:
        s = z3.Solver()
        s.set("timeout", timeout_ms)
        s.add(*space.constraints())
        s.add(cond)
        r = s.check()
        if r == z3.sat:
            m = s.model()
            return {k: m.eval(v, model_completion=True).as_long() for k, v in space.vars.items()}, what
        if r != z3.unsat:
            return {}, f"undecided ({what})"
    return None


def _trip_expr(space: SizeSpace, text: str) -> z3.BitVecRef:
    v = parse_expr(text).apply(space.sym_env())
    return space.bv(v)


def _trip_range(space: SizeSpace, text: str, timeout_ms: int) -> tuple[int, int] | None:
    """The least and greatest trip count over the size space."""
    out = []
    for goal in ("min", "max"):
        o = z3.Optimize()
        o.set("timeout", timeout_ms)
        o.add(*space.constraints())
        t = _trip_expr(space, text)
        h = o.minimize(t) if goal == "min" else o.maximize(t)
        if o.check() != z3.sat:
            return None
        out.append(o.lower(h).as_long() if goal == "min" else o.upper(h).as_long())
    return out[0], out[1]


def _sizes_for_trip(space: SizeSpace, text: str, k: Any, timeout_ms: int) -> dict[str, int] | None:
    """Sizes in range whose trip count is ``k`` (an int, or ``">= n"``)."""
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*space.constraints())
    t = _trip_expr(space, text)
    if isinstance(k, int):
        s.add(t == k)
    elif isinstance(k, str) and k.startswith(">= "):
        s.add(z3.UGE(t, int(k[3:])))
    if s.check() != z3.sat:
        return None
    m = s.model()
    return {n: m.eval(v, model_completion=True).as_long() for n, v in space.vars.items()}
