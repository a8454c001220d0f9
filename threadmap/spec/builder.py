"""Write specs in Python: :class:`Spec`, the twin of the C++ header ``threadmap_spec.h``.

A spec can be written, generated or parametrised in code, from threadmap's CuTe objects
(``make_layout``, ``composition(Swizzle(3, 3, 3), ...)``, ``make_tiled_copy``,
``make_tiled_mma``, CUTLASS thread maps) or from CuTe notation strings (which may use named
sizes), and serialised to the spec file format::

    from threadmap import Spec, registers, side, tile
    from threadmap.layout import AutoVectorizingCopy, CopyAtom, LayoutRight, make_layout, make_tiled_copy

    thr = make_layout((16, 16), LayoutRight)
    copy_a = make_tiled_copy(CopyAtom(AutoVectorizingCopy(), "float"), thr, make_layout((1, 4), LayoutRight))
    s = (Spec("transpose").element("f32").threads(256).sizes(M=1024, N=1024)
         .grid("ceil_div(M, 16)", "ceil_div(N, 64)")
         .tensor("x", "(M,N):(N,1)", "global")
         .tensor("sA", make_layout((16, 64), LayoutRight), "shared")
         .copy(copy_a, tile("x", (16, 64), "bx", "by"), "sA").named("copy_a")
         .barrier())
    s.to_yaml()          # the file;  s.load() a LoadedSpec;  s.verify() a VerifyReport

Laws: ``Spec.from_spec(x).spec() == x`` for every valid spec ``x`` (the file -> model ->
file round trip keeps the meaning: the same validated model), and ``Spec.from_file(p)``
writes text that loads to the model ``p`` loads to.  A TiledCopy object is written as the
C++ object is (its ``TiledLayout_TV`` and ``Tiler_MN``), a TiledMMA as its atom and
``AtomLayoutMNK``, a thread map as its name and template parameters.
"""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from threadmap.errors import SpecError
from threadmap.spec.schema import ELEMENT_BITS, Copy, Expr
from threadmap.spec.schema import Spec as SpecModel

if TYPE_CHECKING:
    from threadmap.report.model import VerifyReport
    from threadmap.spec.load import LoadedSpec

__all__ = ["Side", "Spec", "local_tile", "registers", "side", "tile"]

Memory = Literal["global", "shared"]


def _is_dsl(x: Any) -> bool:
    """Whether ``x`` comes from NVIDIA's CuTe DSL (``cutlass.cute``), told by its type's module so
    that the DSL is never imported here (``threadmap.dsl.convert.is_dsl_object``)."""
    mod = getattr(type(x), "__module__", "") or ""
    return mod == "cutlass" or mod.startswith("cutlass.")


def _from_dsl(x: Any) -> Any:
    """``x`` converted to threadmap's object when it is a CuTe DSL object (a layout, swizzle,
    tiled copy or MMA built while a ``@cute.jit`` function is traced), else ``x`` itself."""
    if not _is_dsl(x):
        return x
    from threadmap.dsl.convert import convert  # only reached with the DSL loaded
    return convert(x)


def _text(x: Any, what: str) -> str:
    """A layout (or tiler) as CuTe notation: strings are kept (they may name sizes)."""
    if isinstance(x, str):
        return x
    x = _from_dsl(x)
    from threadmap.layout import ComposedLayout, Layout
    if isinstance(x, (Layout, ComposedLayout)):
        return str(x)
    raise SpecError(f"{what}: expected a layout or CuTe notation, got {x!r}")


def _element(t: Any) -> Any:
    """A spec element name, or the name of a CuTe DSL numeric type (``cutlass.Float16`` -> f16)."""
    if _is_dsl(t):
        from threadmap.dsl.convert import element_name
        return element_name(t)
    return t


def _tiler_text(t: Any) -> str:
    from threadmap.layout import Layout
    if isinstance(t, tuple):
        return "(" + ",".join(_tiler_text(x) for x in t) + ")"
    if isinstance(t, Layout):
        return str(t)
    return str(int(t))


#: the names C++ code uses for these aliases (``using AutoVectorizingCopy = ...<128>``)
_OP_SPELLING = {"AutoVectorizingCopyWithAssumedAlignment<128>": "AutoVectorizingCopy",
                "AutoVectorizingCopyWithAssumedAlignment<8>": "DefaultCopy"}


def _int(x: Any) -> int | None:
    """``x`` as a Python int when it is an integer of any kind (numpy's too), else None."""
    if isinstance(x, bool):
        return None
    try:
        return operator.index(x)
    except TypeError:
        return None
    except Exception:  # the CuTe DSL's own error on a value it knows only at run time
        if _is_dsl(x):
            raise SpecError(f"the CuTe DSL value {type(x).__name__} is dynamic (a runtime value, printed ?): the "
                            "spec needs static values (Python ints, or DSL values computed from them)") from None
        raise


def _expr(x: Any) -> Expr:
    if isinstance(x, str):
        return x
    v = _int(x)
    if v is None:
        raise SpecError(f"an expression is an int or a string such as 'ceil_div(M, 16)', got {x!r}")
    return v


def _plain(x: Any, what: str) -> Any:
    """A JSON-like copy of ``x`` (numpy integers become ints); anything else is an error."""
    if x is None or isinstance(x, (bool, str, float)):
        return x
    v = _int(x)
    if v is not None:
        return v
    if isinstance(x, (list, tuple)):
        return [_plain(y, what) for y in x]
    if isinstance(x, dict):
        return {str(k): _plain(y, what) for k, y in x.items()}
    raise SpecError(f"{what}: expected numbers, strings, lists or mappings, got {x!r}")


class Side:
    """One side of a copy: a tensor (a CTA tile of it with :meth:`tile`) or registers, and the
    partition of its threads (``threads``, ``tiled_copy``, ``mma`` or ``thread_map``)."""

    def __init__(self, tensor: str, *, is_registers: bool = False) -> None:
        self.name = tensor
        self.is_registers = is_registers
        self.fields: dict[str, Any] = {"registers" if is_registers else "tensor": tensor}
        self.value_bits: int | None = None  # a tiled copy's value width, checked against the tensor

    def tile(self, shape: Any, *at: Any) -> Side:
        """``local_tile(tensor, shape, (at...))``: a CTA tile at block coordinates given as spec
        expressions of ``bx``, ``by``, ``bz``."""
        from threadmap.layout import product
        from threadmap.layout.int_tuple import flatten_to_tuple

        def extent(e: Any) -> Expr:
            if isinstance(e, str):
                return e
            from threadmap.layout import Layout
            e = _from_dsl(e)
            if isinstance(e, Layout) and isinstance(e.shape, int) and e.stride == 1:
                e = e.shape  # a tiler mode n:1 (a DSL TiledCopy's tiler_mn holds them) is the extent n
            leaves = flatten_to_tuple(e) if isinstance(e, tuple) else (e,)
            if any(_int(v) is None or _int(v) < 1 for v in leaves):  # type: ignore[operator]
                raise SpecError(f"side {self.name}: a tile is a shape of positive integers (or size "
                                f"expressions such as 'M'), got {shape!r}")
            return int(product(tuple(int(v) for v in leaves)))

        # one extent per top-level mode, as local_tile takes size<i>(tile_shape)
        ext = [extent(e) for e in (list(shape) if isinstance(shape, (tuple, list)) else [shape])]
        if len(at) != len(ext):
            raise SpecError(f"side {self.name}: a rank-{len(ext)} tile needs {len(ext)} tile coordinates")
        self.fields["tile"] = [_expr(e) for e in ext]
        self.fields["at"] = [_expr(a) for a in at]
        return self

    def _set(self, key: str, value: Any) -> Side:
        parts = [k for k in ("threads", "tiled_copy", "mma", "thread_map") if k in self.fields]
        if parts:
            raise SpecError(f"side {self.name} is already partitioned by {parts[0]}")
        if self.is_registers:
            raise SpecError(f"registers {self.name} take no partition")
        self.fields[key] = value
        return self

    @property
    def partitioned(self) -> bool:
        return any(k in self.fields for k in ("threads", "tiled_copy", "mma", "thread_map"))

    def threads(self, thr_layout: Any) -> Side:
        """``local_partition(tile, thr_layout, threadIdx.x)``."""
        return self._set("threads", _text(thr_layout, f"side {self.name}: threads"))

    def tiled_copy(self, tc: Any, *, atom: str | None = None) -> Side:
        """``tc.get_slice(t).partition_S/D``; ``tc`` is a TiledCopy (written as its TV layout and
        tiler) or a mapping of the spec's fields (``{"threads": ..., "values": ...}``)."""
        from threadmap.layout import TiledCopy
        tc = _from_dsl(tc)
        if isinstance(tc, TiledCopy):
            self.value_bits = tc.atom.val_bits
            return self._set("tiled_copy", {"layout_tv": str(tc.layout_tv), "tiler": _tiler_text(tc.tiler_mn),
                                            "atom": atom or _OP_SPELLING.get(tc.atom.op.name, tc.atom.op.name)})
        if isinstance(tc, dict):
            return self._set("tiled_copy", {k: _text(v, k) if k != "atom" else v for k, v in tc.items()})
        raise SpecError(f"side {self.name}: expected a TiledCopy, got {tc!r}")

    def mma(self, tiled_mma: Any, operand: str) -> Side:
        """``tiled_mma.get_slice(t).partition_A/B/C``."""
        from threadmap.layout import TiledMMA, Underscore, get_mma_atom
        if operand not in ("A", "B", "C"):
            raise SpecError(f"side {self.name}: the MMA operand is 'A', 'B' or 'C', got {operand!r}")
        tiled_mma = _from_dsl(tiled_mma)
        if not isinstance(tiled_mma, TiledMMA):
            raise SpecError(f"side {self.name}: expected a TiledMMA, got {tiled_mma!r}")
        atom = tiled_mma.atom
        name = atom.name + atom.cxx_template_args
        if get_mma_atom(name) != atom:
            raise SpecError(f"side {self.name}: the MMA atom {name} has no spec spelling")
        fields: dict[str, Any] = {"atom": name, "atom_layout": str(tiled_mma.thr_layout_mnk), "operand": operand}
        if not all(p is None or isinstance(p, Underscore) for p in tiled_mma.permutation):
            fields["permutation"] = ["_" if p is None or isinstance(p, Underscore) else _tiler_text(p)
                                     for p in tiled_mma.permutation]
        return self._set("mma", fields)

    def thread_map(self, tm: Any, contiguous_mode: int = 1) -> Side:
        """A CUTLASS 2.x pitch-linear thread map; ``contiguous_mode``: which mode of the tile is
        its contiguous dimension (1: a row-major tile)."""
        from threadmap.cutlass import THREAD_MAPS
        name = type(tm).__name__
        if THREAD_MAPS.get(name) is not type(tm) or name.startswith("Transpose"):
            raise SpecError(f"side {self.name}: {tm!r} is not a thread map a spec can name")
        if contiguous_mode not in (0, 1):
            raise SpecError(f"side {self.name}: contiguous_mode is 0 or 1")
        fields: dict[str, Any] = {"name": name, "shape": list(tm.shape), "threads": tm.threads}
        if tm.has_warp_detail:
            fields["warp_thread_arrangement"] = list(tm.warp_thread_arrangement)  # type: ignore[attr-defined]
        fields["elements_per_access"] = tm.elements_per_access
        fields["contiguous_mode"] = contiguous_mode
        return self._set("thread_map", fields)


def side(tensor: str) -> Side:
    """A whole tensor (typically shared memory) as a copy side."""
    return Side(tensor)


def tile(tensor: str, shape: Any, *at: Any) -> Side:
    """``local_tile(tensor, shape, (at...))`` as a copy side."""
    return Side(tensor).tile(shape, *at)


local_tile = tile


def registers(name: str) -> Side:
    """A register fragment as a copy side."""
    return Side(name, is_registers=True)


class Spec:
    """A spec under construction; every method returns ``self`` so calls chain as in C++."""

    def __init__(self, name: str, description: str = "") -> None:
        for what, text in (("name", name), ("description", description)):
            if not isinstance(text, str):
                raise SpecError(f"the spec's {what} is a string, got {text!r}")
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise SpecError(f"the spec's {what} {text!r} is not valid Unicode text") from None
        self.data: dict[str, Any] = {"spec": 1, "name": name}
        if description:
            self.data["description"] = description
        self._tensor_bits: dict[str, int | None] = {}
        self._value_bits: list[tuple[Side, int]] = []

    # -- the kernel -----------------------------------------------------------------------
    def element(self, name: Any) -> Spec:
        """The element type: a spec name (``"f16"``) or a CuTe DSL type (``cutlass.Float16``)."""
        name = _element(name)
        if not isinstance(name, str) or name not in ELEMENT_BITS:
            raise SpecError(f"unknown element type {name!r}; known: {', '.join(ELEMENT_BITS)}")
        self.data["element"] = name
        return self

    def threads(self, n: Expr) -> Spec:
        self.data["threads"] = _expr(n)
        return self

    def sizes(self, **sizes: int | dict[str, Any]) -> Spec:
        """Named problem sizes: ``sizes(M=1024)`` or a range ``sizes(N={"min": 1, "max": 4096})``."""
        self.data.setdefault("sizes", {}).update(_plain(sizes, "sizes"))
        return self

    def grid(self, *extents: Expr) -> Spec:
        self.data["grid"] = [_expr(e) for e in extents]
        return self

    def assume(self, *relations: str) -> Spec:
        self.data.setdefault("assume", []).extend(relations)
        return self

    def tensor(self, name: str, layout: Any, memory: Memory, *, align: int | None = None,
               element: Any = None) -> Spec:
        if name in self.data.get("tensors", {}):
            raise SpecError(f"tensor {name} is defined twice")
        t: dict[str, Any] = {"memory": memory, "layout": _text(layout, f"tensor {name}")}
        if element is not None:
            t["element"] = _element(element)
        if align is not None:
            t["align"] = align
        self.data.setdefault("tensors", {})[name] = t
        self._last_tensor = name
        return self

    def alias(self, of: str, offset: int = 0) -> Spec:
        """The last tensor views another shared tensor's buffer (at an element offset)."""
        if not self.data.get("tensors"):
            raise SpecError("alias() follows a tensor()")
        t = self.data["tensors"][self._last_tensor]
        t["alias"] = of
        if offset:
            t["offset"] = offset
        return self

    # -- stages ---------------------------------------------------------------------------
    def copy(self, *args: Any, predicate: str | None = None, name: str | None = None,
             vector_bits: int | None = None) -> Spec:
        """``copy(src, dst)`` or ``copy(tiled_copy, src, dst)`` (the tiled copy partitions every
        tensor side that has no partition of its own); sides may be given as tensor names."""
        if len(args) == 3:
            tc, src, dst = args
            src, dst = (s if isinstance(s, Side) else Side(s) for s in (src, dst))
            for s in (src, dst):
                if not s.partitioned and not s.is_registers:
                    s.tiled_copy(tc)
        elif len(args) == 2:
            src, dst = (s if isinstance(s, Side) else Side(s) for s in args)
        else:
            raise SpecError("copy(src, dst) or copy(tiled_copy, src, dst)")
        stage: dict[str, Any] = {"src": dict(src.fields), "dst": dict(dst.fields)}
        self.data.setdefault("stages", []).append({"copy": stage})
        for s in (src, dst):
            if s.value_bits is not None:
                self._value_bits.append((s, s.value_bits))
        if predicate is not None:
            self.predicate(predicate)
        if name is not None:
            self.named(name)
        if vector_bits is not None:
            self.vector_bits(vector_bits)
        return self

    def barrier(self) -> Spec:
        self.data.setdefault("stages", []).append("barrier")
        return self

    def _last_copy(self, what: str) -> dict[str, Any]:
        stages = self.data.get("stages") or []
        if not stages or stages[-1] == "barrier":
            raise SpecError(f"{what}() follows a copy()")
        last: dict[str, Any] = stages[-1]["copy"]
        return last

    def predicate(self, p: str) -> Spec:
        self._last_copy("predicate")["predicate"] = p
        return self

    def vector_bits(self, b: int) -> Spec:
        self._last_copy("vector_bits")["vector_bits"] = b
        return self

    def named(self, n: str) -> Spec:
        self._last_copy("named")["name"] = n
        return self

    # -- expectations ---------------------------------------------------------------------
    def expect(self, **fields: Any) -> Spec:
        """The ``expect:`` block: ``expect(verdict="fail", failing_checks=["bank_conflicts"])``."""
        self.data.setdefault("expect", {}).update(_plain(fields, "expect"))
        return self

    # -- output ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The spec's fields, as a spec file holds them."""
        self._check_value_bits()
        return json.loads(json.dumps(self.data))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None, width=100,
                              allow_unicode=True)

    def write(self, path: str | Path) -> Path:
        """Write the spec file (``.yaml``/``.yml`` or ``.json``, by suffix)."""
        p = Path(path)
        if p.suffix.lower() not in (".yaml", ".yml", ".json"):
            raise SpecError(f"{p}: the builder writes .yaml, .yml or .json files")
        p.write_text(self.to_json() if p.suffix.lower() == ".json" else self.to_yaml())
        return p

    def load(self) -> LoadedSpec:
        """The validated spec: its schema and the checks made before any model is built
        (errors point into the YAML text :meth:`to_yaml` writes); :meth:`verify` builds the
        kernel model and reports what only that finds in the report's ``errors``."""
        from threadmap.spec.load import loads_spec
        return loads_spec(self.to_yaml(), "yaml", f"<Spec {self.data.get('name')!r}>")

    def spec(self) -> SpecModel:
        """The validated pydantic model."""
        return self.load().spec

    def verify(self, **options: Any) -> VerifyReport:
        """``threadmap.api.verify`` of this spec (options: ``sizes``, ``checks``, ...)."""
        # the API sits above the builder: imported here, by its module, never through the
        # package root (which loads this module lazily)
        import threadmap.api as api
        return api.verify([self.load()], **options)

    # -- from files and models ------------------------------------------------------------
    @classmethod
    def from_spec(cls, model: SpecModel) -> Spec:
        """A builder holding a validated spec (the file -> model -> file round trip)."""
        s = cls(model.name)
        s.data = model.model_dump(mode="json", by_alias=True, exclude_unset=True)
        # stages: a copy keeps its key 'copy' (the alias) and a barrier stays the word
        if model.stages:  # a pipeline alone has none (and the file says nothing of them)
            s.data["stages"] = [st.model_dump(mode="json", by_alias=True, exclude_unset=True)
                                if isinstance(st, Copy) else st for st in model.stages]
        return s

    @classmethod
    def from_file(cls, path: str | Path) -> Spec:
        from threadmap.spec.load import load_spec
        return cls.from_spec(load_spec(path).spec)

    def _check_value_bits(self) -> None:
        elem = ELEMENT_BITS.get(self.data.get("element", "f32"), 32)
        for s, bits in self._value_bits:
            t = self.data.get("tensors", {}).get(s.name)
            want = ELEMENT_BITS.get(t.get("element"), elem) if t and t.get("element") else elem
            if t is not None and bits != want:
                raise SpecError(f"the tiled copy on {s.name} copies {bits}-bit values but the tensor holds "
                                f"{want}-bit elements (Copy_Atom<Op, T>: T must be the element type)")
