"""What the pydantic models cannot check: names, references, thread counts, ranks, sizes
and bounds, for every size environment; and the size environments themselves."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from threadmap.errors import SpecError, ThreadmapError
from threadmap.hardware import MAX_SHARED_BYTES
from threadmap.layout import cosize, rank, size
from threadmap.layout import shape as layout_shape
from threadmap.spec.expr import BLOCK_NAMES, INT64_MAX, Relation, evaluate, parse_expr, parse_relation
from threadmap.spec.located import Errors, Path_
from threadmap.spec.parsed import LayoutTemplate, bind_layout
from threadmap.spec.pydantic_errors import COMMA_HINT, unbalanced
from threadmap.spec.schema import ELEMENT_BITS, Copy, Side, SizeRange, Spec

MAX_EXTENT = 2**31            # one dimension: a size, a grid entry, a tile extent, a shape mode
MAX_ELEMENTS = 2**40          # size or cosize of one tensor layout that is enumerated
MAX_PROOF_ELEMENTS = 2**56    # the same at a range's max, which only proofs reach (bytes < 2^62)
MAX_THREADS = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)  # CUDA's gridDim limits
MAX_SAMPLES = 64              # sample values of one range
MAX_ENVS = 64                 # size environments (cross product of samples) before diagonalising
DEFAULT_SAMPLE_CAP = 4096     # default samples stay at or below this (the range max only if small)

_SIZE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def default_samples(rng: SizeRange, tiles: Sequence[int] = ()) -> list[int]:
    """Sample values for a size range when it gives no ``samples``.

    With ``m = multiple_of``, ``lo``/``hi`` the smallest/largest multiples of ``m`` in
    ``[min, max]`` and ``t`` the largest constant tile extent of the spec:
    ``lo``; ``hi`` if ``hi <= 4096``; ``t`` and ``2*t`` (whole tiles); ``t + m`` and
    ``2*t - m`` (non-multiples of the tile, when ``m`` does not divide into whole tiles);
    all rounded to multiples of ``m`` and kept inside ``[lo, min(hi, 4096)]``, sorted.
    """
    m = rng.multiple_of
    lo = -(-rng.min // m) * m
    hi = rng.max // m * m
    if lo > hi:
        return []
    cap = min(hi, max(lo, DEFAULT_SAMPLE_CAP))
    out = {lo}
    if hi <= DEFAULT_SAMPLE_CAP:
        out.add(hi)
    t = max(tiles, default=0)
    if t > 0:
        for v in (t, 2 * t, t + m, 2 * t - m):
            v = v // m * m
            if lo <= v <= cap:
                out.add(v)
    return sorted(out)


def sample_envs(sizes: Mapping[str, int | SizeRange], tiles: Sequence[int] = ()) -> list[dict[str, int]]:
    """The size environments to run: the cross product of every range's samples (given or
    :func:`default_samples`), or, if that exceeds :data:`MAX_ENVS`, the "diagonal" where
    environment ``i`` takes sample ``i mod len`` of each range.  Fixed sizes are constant."""
    fixed = {k: v for k, v in sizes.items() if isinstance(v, int)}
    ranges = {k: v for k, v in sizes.items() if isinstance(v, SizeRange)}
    if not ranges:
        return [dict(fixed)]
    samples = {k: (list(r.samples) if r.samples else default_samples(r, tiles)) for k, r in ranges.items()}
    total = 1
    for s in samples.values():
        total *= max(1, len(s))
    names = list(samples)
    if total <= MAX_ENVS:
        combos: Iterator[tuple[int, ...]] = itertools.product(*(samples[k] for k in names))
    else:
        n = max(len(s) for s in samples.values())
        combos = (tuple(samples[k][i % len(samples[k])] for k in names) for i in range(n))
    return [{**fixed, **dict(zip(names, c))} for c in combos]


def max_env(sizes: Mapping[str, int | SizeRange]) -> dict[str, int]:
    return {k: (v if isinstance(v, int) else v.max // v.multiple_of * v.multiple_of)
            for k, v in sizes.items()}


def _layout_names(text: str) -> list[str]:
    """The size names a CuTe layout string uses, in order of use: the names the layout
    parser itself looks up, so that its keywords (``Swizzle``, ``GenRowMajor``,
    ``make_layout``, ``Int``, ...) are never taken for sizes."""
    return list(LayoutTemplate.of(text).names)


def _sides(spec: Spec) -> Iterator[tuple[int, str, Side]]:
    for i, st in enumerate(spec.stages):
        if isinstance(st, Copy):
            yield i, "src", st.copy_.src
            yield i, "dst", st.copy_.dst


def _layout_fields(spec: Spec) -> Iterator[tuple[Path_, str]]:
    """Every layout string of the spec with its path."""
    for name, t in spec.tensors.items():
        yield ("tensors", name, "layout"), t.layout
    for i, which, side in _sides(spec):
        base: Path_ = ("stages", i, "copy", which)
        if side.threads is not None:
            yield (*base, "threads"), side.threads
        if side.tiled_copy is not None:
            for key in ("threads", "values", "layout_tv"):
                text = getattr(side.tiled_copy, key)
                if text is not None:
                    yield (*base, "tiled_copy", key), text
        if side.mma is not None:
            yield (*base, "mma", "atom_layout"), side.mma.atom_layout


def _const_tiles(spec: Spec) -> list[int]:
    out: list[int] = []
    for _, _, side in _sides(spec):
        for x in side.tile or []:
            try:
                e = parse_expr(x)
                if e.is_const():
                    out.append(e.eval({}))
            except SpecError:
                pass
        if side.thread_map is not None:
            out.extend(side.thread_map.shape)
    return [t for t in out if 0 < t <= MAX_EXTENT]


def _env_note(env: Mapping[str, int], spec: Spec) -> str:
    ranged = [k for k, v in spec.sizes.items() if isinstance(v, SizeRange)]
    if not ranged:
        return ""
    return " (with " + ", ".join(f"{k}={env[k]}" for k in ranged) + ")"


def _env_text(env: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in env.items()) or "(none)"


def check_semantics(spec: Spec, errs: Errors) -> tuple[list[dict[str, int]], dict[str, int]]:
    """What the models cannot check; adds located problems to ``errs``.  Returns the size
    environments and the max environment (meaningful only when no problem was added).

    First the checks that need no size values (sizes, assumptions, names, references); if
    any failed, nothing is evaluated.  Then, for every size environment (the samples that
    satisfy the assumptions, and the ranges' max), :func:`check_env`, stopping after the
    first environment with a problem so that one mistake is not reported once per sample.
    """
    defined = set(spec.sizes)
    n0 = len(errs.lines)
    check_sizes(spec, errs)
    relations = check_assumptions(spec, defined, errs)
    check_expression_names(spec, defined, errs)
    check_layout_names(spec, defined, errs)
    check_aliases(spec, errs)
    check_stage_references(spec, errs)
    if len(errs.lines) > n0:
        return [], {}

    envs = assumed_envs(spec, relations, errs)
    if envs is None:
        return [], {}
    top_env = max_env(spec.sizes)
    for env in envs + ([top_env] if top_env not in envs else []):
        check_env(spec, env, MAX_ELEMENTS if env in envs else MAX_PROOF_ELEMENTS, errs)
        if len(errs.lines) > n0:
            break
    return envs, top_env


# ============================================================================ without size values


def check_sizes(spec: Spec, errs: Errors) -> None:
    """Every size: its name can be written in a CuTe layout string; a value, or a range's
    max, is at most 2^31 (one dimension); a range holds a multiple of ``multiple_of``; its
    samples are at most :data:`MAX_SAMPLES`, lie in the range and are multiples.  Sizes
    are the variables of every later check, so a bad one would be reported again and again."""
    for k, v in spec.sizes.items():
        check_size(k, v, errs)


def check_size(k: str, v: int | SizeRange, errs: Errors) -> None:
    """One entry of ``sizes`` (see :func:`check_sizes`); the first problem of the name,
    value or range ends its check."""
    p: Path_ = ("sizes", k)
    if not _SIZE_NAME.fullmatch(k) or k in ("o", "Sw"):
        # "o" and "Sw" are words of the layout parser (o = offset, Sw = a swizzle)
        errs.add(p, f"size name {k!r} cannot be used in layouts; use ASCII letters, digits "
                 "and '_', starting with a letter (not 'o' or 'Sw')", key=True)
        return
    if isinstance(v, int):
        if v > MAX_EXTENT:
            errs.add(p, f"size {k} = {v} is huge; one dimension is at most 2^31 = {MAX_EXTENT}")
        return
    if v.max > MAX_EXTENT:
        errs.add((*p, "max"), f"range max {v.max} is huge; one dimension is at most 2^31")
        return
    if v.multiple_of > v.max or -(-v.min // v.multiple_of) * v.multiple_of > v.max:
        errs.add(p, f"no multiple of {v.multiple_of} lies in [{v.min}, {v.max}]")
        return
    if v.samples is not None:
        if not v.samples:
            errs.add((*p, "samples"), "samples is empty; omit it for the default samples")
        if len(v.samples) > MAX_SAMPLES:
            errs.add((*p, "samples"), f"more than {MAX_SAMPLES} samples")
        for j, s in enumerate(v.samples[:MAX_SAMPLES]):
            if not v.min <= s <= v.max or s % v.multiple_of:
                errs.add((*p, "samples", j), f"sample {s} is not in [{v.min}, {v.max}] "
                         f"or not a multiple of {v.multiple_of}")


def check_assumptions(spec: Spec, defined: set[str], errs: Errors) -> list[Relation]:
    """Every ``assume`` entry parses as a relation and names only sizes; returns the
    relations that do, which later select the size environments (:func:`assumed_envs`)."""
    relations: list[Relation] = []
    for i, text in enumerate(spec.assume):
        try:
            rel = parse_relation(text)
        except SpecError as ex:
            errs.add(("assume", i), str(ex))
            continue
        undefined = sorted(rel.names() - defined)
        if undefined:
            errs.add(("assume", i), f"undefined name {undefined[0]!r} in {text!r}; an assumption "
                     f"relates the sizes: {', '.join(sorted(defined)) or 'none'}")
            continue
        relations.append(rel)
    return relations


def check_expression_names(spec: Spec, defined: set[str], errs: Errors) -> None:
    """``threads``, the grid and every side's ``tile`` and ``at`` parse as expressions and
    name only sizes (``at`` may also name the block index ``bx``, ``by``, ``bz``), so that
    evaluating them per environment cannot fail on a name."""
    exprs: list[tuple[Path_, Any, set[str]]] = [(("threads",), spec.threads, defined)]
    exprs += [(("grid", i), g, defined) for i, g in enumerate(spec.grid)]
    for i, which, side in _sides(spec):
        base: Path_ = ("stages", i, "copy", which)
        exprs += [((*base, "tile", j), t, defined) for j, t in enumerate(side.tile or [])]
        exprs += [((*base, "at", j), a, defined | set(BLOCK_NAMES)) for j, a in enumerate(side.at or [])]
    for p, x, names in exprs:
        try:
            e = parse_expr(x)
        except SpecError as ex:
            errs.add(p, str(ex) + (COMMA_HINT if unbalanced(x) else ""))
            continue
        undefined = sorted(e.names() - names)
        if undefined:
            errs.add(p, f"undefined name {undefined[0]!r} in {str(x)!r}"
                     f"{'' if len(p) > 1 and p[-2] == 'at' else ' (names here are the sizes)'}; "
                     f"defined: {', '.join(sorted(names)) or 'none'}")


def check_layout_names(spec: Spec, defined: set[str], errs: Errors) -> None:
    """Every layout string (tensors, thread layouts, tiled copies, MMA atom layouts) names
    only sizes; a name is what the layout parser looks up, not any word in the text."""
    for p, text in _layout_fields(spec):
        undefined = sorted(set(_layout_names(text)) - defined)
        if undefined:
            errs.add(p, f"undefined name {undefined[0]!r} in layout {text!r}; "
                     f"defined sizes: {', '.join(sorted(defined)) or 'none'}")


def check_aliases(spec: Spec, errs: Errors) -> None:
    """A tensor's ``alias`` is a shared tensor viewing another shared tensor's buffer: the
    chain of aliases is followed to its root, and must reach one (no missing target, no
    cycle, no target outside shared memory).  The view's size is checked per environment
    (:func:`check_shared_memory`)."""
    for name, t in spec.tensors.items():
        if t.alias is None:
            continue
        p: Path_ = ("tensors", name, "alias")
        if t.memory != "shared":
            errs.add(p, "only shared tensors can alias a buffer")
        seen = {name}
        cur = t.alias
        while True:
            if cur not in spec.tensors:
                errs.add(p, f"alias target {cur!r} is not a tensor")
                break
            if cur in seen:
                errs.add(p, f"alias cycle through {cur!r}")
                break
            if spec.tensors[cur].memory != "shared":
                errs.add(p, f"alias target {cur!r} is in {spec.tensors[cur].memory} memory, not shared")
                break
            seen.add(cur)
            if spec.tensors[cur].alias is None:
                break
            cur = spec.tensors[cur].alias  # type: ignore[assignment]


def check_stage_references(spec: Spec, errs: Errors) -> None:
    """Each copy stage's sides: a ``tensor`` is defined; a register fragment is read (as a
    ``src``) only after an earlier stage wrote it (as a ``dst``), the order the kernel runs
    them; a register side has no ``tile`` (a fragment is per thread, not a tile of a tensor)."""
    written: set[str] = set()
    for i, st in enumerate(spec.stages):
        if not isinstance(st, Copy):
            continue
        for which in ("src", "dst"):
            side = getattr(st.copy_, which)
            p: Path_ = ("stages", i, "copy", which)
            if side.tensor is not None and side.tensor not in spec.tensors:
                errs.add((*p, "tensor"), f"tensor {side.tensor!r} is not defined; tensors: "
                         f"{', '.join(spec.tensors) or 'none'}")
            if side.registers is not None:
                if which == "src" and side.registers not in written:
                    errs.add((*p, "registers"), f"register fragment {side.registers!r} is read "
                             "before any stage writes it")
                if side.tile is not None:
                    errs.add((*p, "tile"), "a register side has no tile")
        if st.copy_.dst.registers is not None:
            written.add(st.copy_.dst.registers)


# ============================================================================ size environments


def assumed_envs(spec: Spec, relations: Sequence[Relation], errs: Errors) -> list[dict[str, int]] | None:
    """The sampled size environments (:func:`sample_envs`) that satisfy every assumption;
    None after adding a problem: an assumption cannot be evaluated, one fails for the fixed
    sizes (there is nothing else to choose), or no sample satisfies them all."""
    envs = sample_envs(spec.sizes, _const_tiles(spec))
    if not relations:
        return envs
    kept = []
    for env in envs:
        try:
            broken = [r for r in relations if not r.holds(env)]
        except SpecError as ex:
            errs.add(("assume",), f"{ex}{_env_note(env, spec)}")
            return None
        if not broken:
            kept.append(env)
        elif all(isinstance(v, int) for v in spec.sizes.values()):
            errs.add(("assume", spec.assume.index(broken[0].text)),
                     f"{broken[0].text!r} does not hold for the sizes {_env_text(env)}")
            return None
    if not kept:
        errs.add(("assume",), f"no sample of the size ranges satisfies every assumption (tried "
                 f"{len(envs)}: {_env_text(envs[0])}, ...); give samples that do")
        return None
    return kept


class EnvCheck:
    """The checks of one size environment share it, its note for messages ("(with
    M=128)"), the element limit (tighter at the samples, which are enumerated, than at the
    ranges' max, which only proofs reach) and the error list."""

    def __init__(self, spec: Spec, env: Mapping[str, int], max_elements: int, errs: Errors) -> None:
        self.spec = spec
        self.env = env
        self.note = _env_note(env, spec)
        self.max_elements = max_elements
        self.errs = errs

    def evaluate(self, p: Path_, x: Any, env: Mapping[str, int] | None = None) -> int | None:
        """``x`` in this environment (or ``env``); None after adding the problem at ``p``."""
        try:
            return evaluate(x, self.env if env is None else env)
        except SpecError as ex:
            self.errs.add(p, f"{ex}{self.note}")
            return None


def check_env(spec: Spec, env: Mapping[str, int], max_elements: int, errs: Errors) -> None:
    """Every check that needs size values, in one environment: the CTA's threads and the
    grid, the layouts (bound once, then shared), shared memory, and each copy side's tile,
    ``at`` and thread layouts."""
    ck = EnvCheck(spec, env, max_elements, errs)
    threads = check_threads(ck)
    check_grid(ck)
    layouts = bind_layouts(ck)
    check_shared_memory(ck, layouts)
    for i, which, side in _sides(spec):
        base: Path_ = ("stages", i, "copy", which)
        check_tile(ck, base, side, layouts)
        if threads is not None:
            check_thread_counts(ck, base, side, layouts, threads)


def check_threads(ck: EnvCheck) -> int | None:
    """``threads`` evaluates to 1..1024 (a CTA); returns it, or None when it does not, so
    that thread layouts are not compared with a wrong count."""
    threads = ck.evaluate(("threads",), ck.spec.threads)
    if threads is not None and not 1 <= threads <= MAX_THREADS:
        ck.errs.add(("threads",), f"threads = {threads}{ck.note}; a CTA has 1..{MAX_THREADS} threads")
        return None
    return threads


def check_grid(ck: EnvCheck) -> None:
    """Every grid entry evaluates to 1..CUDA's ``gridDim`` limit of its dimension."""
    for i, g in enumerate(ck.spec.grid):
        gv = ck.evaluate(("grid", i), g)
        if gv is not None and not 1 <= gv <= MAX_GRID[i]:
            ck.errs.add(("grid", i), f"grid entry {i} = {gv}{ck.note}; it must be in 1..{MAX_GRID[i]}")


def bind_layouts(ck: EnvCheck) -> dict[Path_, Any]:
    """Every layout string bound to the environment, by path, when it parses, has integer
    strides, stays inside signed 64-bit arithmetic, and is small enough to enumerate (each
    mode <= 2^31, size and cosize within the element limit); the others are reported and
    left out, so that later checks skip them."""
    layouts: dict[Path_, Any] = {}
    for p, text in _layout_fields(ck.spec):
        lay = bind_layout_checked(ck, p, text)
        if lay is not None:
            layouts[p] = lay
    return layouts


def bind_layout_checked(ck: EnvCheck, p: Path_, text: str) -> Any:
    """One layout of :func:`bind_layouts`; None after adding its problem."""
    try:
        lay = bind_layout(text, ck.env)
        inner = getattr(lay, "layout_b", lay)
        if any(not isinstance(d, int) for d in _leaves(getattr(inner, "stride", 0))):
            ck.errs.add(p, f"layout {text!r} needs integer strides (basis strides such as 1@0 make "
                           "coordinate tensors, not memory or thread layouts)")
            return None
        beyond = _beyond_int64(lay)
        if beyond:
            ck.errs.add(p, f"layout {text!r} {beyond}{ck.note}; threadmap computes sizes and offsets in "
                           "signed 64-bit integers")
            return None
        n, cn = size(lay), cosize(lay)
        modes = _flat_shape(layout_shape(lay))
    except (ThreadmapError, RecursionError, TypeError, ValueError, ArithmeticError) as ex:
        ck.errs.add(p, f"{ex}{ck.note}")
        return None
    max_elements = ck.max_elements
    if any(m > MAX_EXTENT for m in modes) or n > max_elements or cn > max_elements:
        ck.errs.add(p, f"layout {text!r} is huge{ck.note}: size {n}, cosize {cn}; limits are 2^31 per "
                    f"mode and 2^{max_elements.bit_length() - 1} elements"
                    + (" (at the samples)" if max_elements == MAX_ELEMENTS else " (at the ranges' max)"))
        return None
    return lay


def check_shared_memory(ck: EnvCheck, layouts: Mapping[Path_, Any]) -> None:
    """The shared buffers (tensors that alias nothing) fit in a CTA's shared memory, the
    problem pointing at the biggest one; an aliasing view, offset included, fits in the
    buffer at the root of its alias chain."""
    spec = ck.spec
    smem = 0
    biggest: tuple[Path_, int] = (("tensors",), 0)
    for name, t in spec.tensors.items():
        lay = layouts.get(("tensors", name, "layout"))
        if lay is None or t.memory != "shared":
            continue
        nbytes = -(-(t.offset + cosize(lay)) * ELEMENT_BITS[t.element or spec.element] // 8)  # whole bytes
        if t.alias is None:
            smem += nbytes
            if nbytes > biggest[1]:  # the error points at the buffer that needs the most
                biggest = (("tensors", name, "offset" if t.offset > cosize(lay) else "layout"), nbytes)
            continue
        root = t.alias
        while spec.tensors[root].alias is not None:
            root = spec.tensors[root].alias  # type: ignore[assignment]
        rl = layouts.get(("tensors", root, "layout"))
        rt = spec.tensors[root]
        if rl is not None:
            rbytes = -(-(rt.offset + cosize(rl)) * ELEMENT_BITS[rt.element or spec.element] // 8)
            if nbytes > rbytes:
                ck.errs.add(("tensors", name, "layout"), f"view of {nbytes} bytes (offset included) "
                            f"exceeds its buffer {root!r} of {rbytes} bytes{ck.note}")
    if smem > MAX_SHARED_BYTES:
        ck.errs.add(biggest[0], f"shared tensors need {smem} bytes{ck.note} ({biggest[1]} for "
                    f"{biggest[0][1]!r}); a CTA has at most {MAX_SHARED_BYTES} bytes of shared memory")


def check_tile(ck: EnvCheck, base: Path_, side: Side, layouts: Mapping[Path_, Any]) -> None:
    """A side that copies a tile of a tensor: ``at`` has one coordinate per tile extent,
    the tile's rank is at most the tensor's, every extent is 1..2^31, and every ``at``
    coordinate evaluates (with the block index at 0)."""
    if side.tile is None or side.at is None or side.tensor not in ck.spec.tensors:
        return
    tl = layouts.get(("tensors", side.tensor, "layout"))
    if len(side.tile) != len(side.at):
        ck.errs.add((*base, "at"), f"'at' has {len(side.at)} coordinates but 'tile' has "
                    f"{len(side.tile)} extents")
    elif tl is not None and len(side.tile) > rank(tl):
        ck.errs.add((*base, "tile"), f"tile has rank {len(side.tile)} but tensor "
                    f"{side.tensor!r} has rank {rank(tl)}")
    for j, x in enumerate(side.tile):
        ext = ck.evaluate((*base, "tile", j), x)
        if ext is not None and not 1 <= ext <= MAX_EXTENT:
            ck.errs.add((*base, "tile", j), f"tile extent {ext}{ck.note} must be in 1..2^31")
    benv = {**ck.env, "bx": 0, "by": 0, "bz": 0}
    for j, x in enumerate(side.at):
        ck.evaluate((*base, "at", j), x, benv)


def check_thread_counts(ck: EnvCheck, base: Path_, side: Side, layouts: Mapping[Path_, Any],
                        threads: int) -> None:
    """Every thread layout of a side (``threads``, ``tiled_copy.threads``,
    ``thread_map.threads``) has exactly the CTA's ``threads`` threads: each thread of the
    CTA takes part in the copy, once."""
    for p in ((*base, "threads"), (*base, "tiled_copy", "threads")):
        lay = layouts.get(p)
        if lay is not None and size(lay) != threads:
            ck.errs.add(p, f"thread layout has {size(lay)} threads, but threads = {threads}{ck.note}")
    if side.thread_map is not None and side.thread_map.threads != threads:
        ck.errs.add((*base, "thread_map", "threads"), f"thread map has {side.thread_map.threads} "
                    f"threads, but threads = {threads}{ck.note}")


# ============================================================================ layout arithmetic


def _beyond_int64(lay: Any) -> str | None:
    """Why a layout's size or offsets leave the signed 64-bit range (None: they do not).
    Computed on Python ints from the leaves, before the layout's own int64 arithmetic
    (whose overflow message would say "not an integer")."""
    inner = getattr(lay, "layout_b", lay)
    shp, std = getattr(inner, "shape", None), getattr(inner, "stride", None)
    if shp is None or std is None:
        return None
    extents, strides = _leaves(shp), _leaves(std)
    if len(extents) != len(strides) or not all(isinstance(v, int) for v in (*extents, *strides)):
        return None
    n = 1
    for e in extents:
        n *= e
    if n > INT64_MAX:
        return f"has {n} elements (about 2^{n.bit_length() - 1}), out of the 64-bit range"
    up = sum((e - 1) * d for e, d in zip(extents, strides, strict=True) if d > 0)
    down = sum((e - 1) * -d for e, d in zip(extents, strides, strict=True) if d < 0)
    worst = max(up, down)
    if worst > INT64_MAX:
        sign = "" if up >= down else "-"
        return (f"reaches element offset {sign}{worst} (about {sign}2^{worst.bit_length() - 1}): its strides "
                "times its extents are out of the 64-bit range")
    return None


def _flat_shape(shape: Any) -> list[int]:
    if shape is None:
        return []
    if isinstance(shape, tuple):
        return [x for s in shape for x in _flat_shape(s)]
    return [shape] if isinstance(shape, int) else []


def _leaves(t: Any) -> list[Any]:
    if isinstance(t, tuple):
        return [x for m in t for x in _leaves(m)]
    return [t]

