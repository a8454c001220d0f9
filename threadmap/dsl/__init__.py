"""threadmap for kernels written with NVIDIA's CuTe DSL (``import cutlass.cute as cute``).

Needs the DSL: ``pip install 'threadmap[dsl]'`` (PyPI ``nvidia-cutlass-dsl``); importing this
package without it raises :class:`~threadmap.errors.DependencyError` (an ``ImportError`` too,
so ``pytest.importorskip("threadmap.dsl")`` skips).

* :func:`convert`: a DSL layout, swizzle, composed layout, copy or MMA atom, tiled copy or
  tiled MMA as threadmap's object, exactly (:mod:`threadmap.dsl.convert`);
* :func:`capture`: run a function that builds DSL objects (a kernel's own helpers) inside a
  ``@cute.jit`` trace and return them converted; :func:`traced`: run it and return its result;
* :func:`verify`: run a function that writes a :class:`threadmap.Spec` with DSL objects inside
  a trace and verify (or prove) the spec; :func:`threadmap.testing.assertions.assert_dsl_partitions`
  is the same as a test assertion;
* :func:`smem_layout`: the element-offset layout of a shared tensor whose pointer carries a
  swizzle (the swizzle acts on bytes).

No GPU is needed: the traced functions build objects on the host and launch nothing.  See
``docs/dsl.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from threadmap.dsl.convert import (
    DSL_EXTRA,
    capture,
    convert,
    convert_all,
    element_bits,
    element_name,
    is_dsl_object,
    require_dsl,
    smem_layout,
    traced,
)

if TYPE_CHECKING:
    from threadmap.report.model import EngineReport, VerifyReport

require_dsl()  # the package is the DSL's companion: without the DSL, say which extra installs it

__all__ = ["DSL_EXTRA", "capture", "convert", "convert_all", "element_bits", "element_name", "is_dsl_object",
           "smem_layout", "specs", "traced", "verify"]


def specs(build: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Any]:
    """The specs ``build(*args, **kwargs)`` writes inside a DSL trace (a :class:`threadmap.Spec`,
    or a list or tuple of them; the builder converts the DSL objects as they are given), loaded
    and validated (:class:`~threadmap.spec.load.LoadedSpec`)."""
    from threadmap.errors import SpecError
    from threadmap.spec.builder import Spec

    out = traced(build, *args, **kwargs)
    items = list(out) if isinstance(out, (list, tuple)) else [out]
    bad = [x for x in items if not isinstance(x, Spec)]
    if bad or not items:
        raise SpecError(f"{getattr(build, '__name__', build)!s} must return a threadmap.Spec or a list of them, "
                        f"got {bad[0] if bad else out!r}")
    return [s.load() for s in items]


def verify(build: Callable[..., Any], *args: Any, sizes: Mapping[str, int] | None = None,
           checks: Iterable[str] | None = None, engine: str = "enumerate",
           **kwargs: Any) -> VerifyReport | EngineReport:
    """Verify the specs ``build(*args, **kwargs)`` writes with CuTe DSL objects inside a trace
    (see :func:`specs`): :func:`threadmap.api.verify` with ``sizes``, ``checks`` and ``engine``
    (``"z3"``/``"auto"``/``"both"`` prove specs that give size ranges for every size)."""
    import threadmap.api as api

    return api.verify(specs(build, *args, **kwargs), sizes=sizes, checks=checks, engine=engine)
