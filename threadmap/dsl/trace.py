"""Trace a CuTe DSL kernel's memory accesses on the host, without a GPU, and diff them with a spec.

The kernel is not run.  Its ``@cute.jit`` launcher is traced by the DSL itself (``cute.compile``
on fake tensors of static shapes, built from the spec's tensors), the IR the DSL emits is taken
as its ``KEEP=ir`` dump takes it (``canonicalize,cse``, generic form, source locations on) and
the compile is stopped there.  The IR is then *interpreted* once per (block, thread) with
concrete thread and block indices: integers are Python ints, every tensor is a buffer (a
launcher argument, a shared allocation, a thread's registers) plus an element offset and the
layout its IR type states, memory contents are unknown (registers are modelled: predicates
live there).  Every ``cute.copy`` and every element load or store of global or shared memory
is recorded as (stage, block, thread, instruction, value, element).

Why the IR and not a re-run of the Python body: with static indices the DSL still emits
``elem_less``, ``Int32`` arithmetic and predicate stores as IR values (they are not folded in
Python), so a host re-run cannot know a predicate without interpreting IR anyway; the IR is
the one artefact every DSL construct (loops, ``range_constexpr``, ``if``, fragments,
``autovec_copy``'s chosen width) ends up in, and its types carry every static layout.

Exactness.  Each tensor operation (slice, ``local_tile``, ``local_partition``, a tiled copy's
``partition_S``/``partition_D``, the divides, ``group_modes``, views) is evaluated with
threadmap's CuTe algebra on the operand (the same code the C++ oracle tests check), and the
result is checked against the layout the DSL's IR type states: the element offsets of the two
must differ by one constant (that constant is the pointer offset the IR does not spell).  A
disagreement is refused, never guessed.  Law: for every recorded access, ``element ==
offset(tensor) + layout(tensor)(i)`` where the layout is the IR's and the offset is fixed by
threadmap's evaluation of the same operation on the same operand.

What is refused (a :class:`DslTraceError`, exit status 2, with the kernel's file and line):
dynamic layouts (a ``?`` in a layout the kernel computes with), control flow or addresses that
depend on memory contents or runtime scalars (a branch on a loaded value), copy atoms other
than the universal copy, and any IR operation the interpreter does not know.  See
``docs/dsl-tracing.md``.

Records use the format ``threadmap_probe.h`` prints, so :func:`threadmap.gpu.log.diff_log`
diffs them with the spec unchanged (:func:`diff_dsl`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import io
import os
import re
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

import threadmap.layout as L
from threadmap.dsl.convert import ELEMENT_NAMES
from threadmap.errors import ThreadmapError
from threadmap.gpu.log import LogDiff, diff_log
from threadmap.model import KernelModel

__all__ = ["DslDiff", "DslTrace", "DslTraceError", "TensorArg", "diff_dsl", "diff_trace", "render_dsl_diff",
           "spec_arguments", "trace_dsl", "trace_log"]

#: (block, thread) pairs interpreted at most in one trace (each costs about a millisecond)
MAX_THREAD_RUNS = 1 << 16
#: elements one tensor operation's result is checked against the IR's layout at most (beyond,
#: an evenly spaced sample including both ends)
CHECK_ELEMENTS = 1 << 12
#: operations one thread may execute (a loop the kernel never leaves is refused, not hung)
MAX_OPS_PER_THREAD = 1 << 20
#: operations one trace may execute, all threads together (about 4-8 microseconds each: a
#: minute at most); the total is projected as threads finish, and refused before it is spent
MAX_TRACE_OPS = 1 << 23
#: accesses one trace may record (each costs about a kilobyte until the diff is done: half a
#: gigabyte at most)
MAX_TRACE_RECORDS = 1 << 19

#: spec element names -> the DSL's numeric type names
DSL_TYPES = {spec: dsl for dsl, spec in ELEMENT_NAMES.items()}
#: IR element types -> bits
IR_BITS = {"f64": 64, "f32": 32, "tf32": 32, "f16": 16, "bf16": 16, "f8E4M3FN": 8, "f8E5M2": 8, "i64": 64,
           "i32": 32, "i16": 16, "i8": 8, "i1": 1, "index": 64, "ui64": 64, "ui32": 32, "ui16": 16, "ui8": 8,
           "si64": 64, "si32": 32, "si16": 16, "si8": 8}


class DslTraceError(ThreadmapError):
    """A DSL kernel the tracer cannot trace, or bad input to it (exit status 2)."""


@dataclass(frozen=True)
class TensorArg:
    """A launcher's tensor argument: built as ``make_fake_tensor(dtype, shape, stride)``.

    ``name`` is the spec tensor it stands for (what the trace reports); ``dtype`` a spec
    element name (``f32``); ``align`` the base address alignment in bytes."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    align: int = 16


# ------------------------------------------------------------------------------------------
# the trace
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Buffer:
    """Where an access lands: a launcher argument (``global``), a shared allocation (``smem0``,
    ``smem1``... in allocation order) or a thread's registers."""

    name: str
    memory: str  # global | shared | register
    elem_bits: int = 0


@dataclass
class Side:
    buffer: Buffer
    elem_bits: int


@dataclass
class TracedStage:
    """One copy site of the kernel: a ``cute.copy``, or an element load/store (a load stored
    directly by a store is one copy).  ``where`` is its ``FILE:LINE``."""

    index: int
    where: str
    op: str
    src: Side | None
    dst: Side | None
    vec: int  # values per instruction (0: unknown)
    #: per access: block, thread, iter (instruction), value, src element, dst element, performed
    rows: list[tuple[int, int, int, int, int, int, bool]] = field(default_factory=list)


@dataclass
class DslTrace:
    """Every recorded access of the traced blocks."""

    source: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    blocks: list[int]
    args: dict[int, TensorArg | int | bool]  # launcher argument position -> what it was
    stages: list[TracedStage]
    barriers: list[str]
    output: str = ""  # what the DSL printed while tracing

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


# ------------------------------------------------------------------------------------------
# loading the user's module
# ------------------------------------------------------------------------------------------

def _require_dsl() -> Any:
    try:
        import cutlass
        import cutlass.cute  # noqa: F401
    except ImportError as e:
        raise DslTraceError(f"the CuTe DSL is not installed ({e}); pip install nvidia-cutlass-dsl") from None
    return cutlass


def _kind(obj: Any) -> str | None:
    """'kernel' for a ``@cute.kernel`` function, 'jit' for a ``@cute.jit`` one, else None."""
    inner = getattr(obj, "__wrapped__", None)
    kind = getattr(inner, "_decorator_kind", None)
    return kind if kind in ("kernel", "jit") else None


_MODULES: dict[tuple[str, int, int], Any] = {}


def _import(path: Path, shown: str) -> Any:
    """The user's module, executed once per file version (its top level may print or be slow)."""
    _require_dsl()
    resolved = path.resolve()
    st = resolved.stat()
    key = (str(resolved), st.st_mtime_ns, st.st_size)
    hit = _MODULES.get(key)
    if hit is not None:
        return hit
    digest = hashlib.sha1(f"{key}".encode()).hexdigest()[:12]
    modname = f"threadmap_dsl_user_{digest}"
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise DslTraceError(f"{shown}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module  # the DSL reads the functions' source through their module
    out = io.StringIO()
    # as `python FILE.py` runs it: the file's folder first on the path, for its sibling modules
    folder = str(resolved.parent)
    sys.path.insert(0, folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:  # noqa: BLE001 - the user's module: any failure is bad input
        sys.modules.pop(modname, None)
        place, err = _user_error(e, path)
        raise DslTraceError(f"{place or shown + ': '}importing the module failed: {err}") from None
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
    _MODULES[key] = module
    return module


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line, without terminal colours (the DSL colours its diagnostics)."""
    flat = " ".join(_ANSI.sub("", text).split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def _user_error(e: BaseException, near: Path) -> tuple[str, str]:
    """(``FILE:LINE:COL: `` or '', the message on one line) for an exception raised by the
    user's code (importing the kernel's module, or the DSL tracing its launcher): the place is
    the syntax error's, the DSL diagnostic's, or the deepest frame of the traceback in a file
    under ``near``'s folder (the kernel's file and its helper modules; never the DSL's or
    threadmap's own frames)."""
    folder = near.resolve().parent
    # a kernel beside a virtual environment or threadmap's own sources: their frames are not the user's
    ours = [Path(__file__).resolve().parents[1]]
    dsl_file = getattr(sys.modules.get("cutlass"), "__file__", None)
    if isinstance(dsl_file, str):
        ours.append(Path(dsl_file).resolve().parent)

    def mine(filename: str | None) -> bool:
        if not filename or filename.startswith("<"):
            return False
        try:
            f = Path(filename).resolve()
        except (OSError, ValueError):
            return False
        return (f.is_relative_to(folder) and not any(f.is_relative_to(o) for o in ours)
                and not {"site-packages", "dist-packages"} & set(f.parts))

    def at(filename: str, line: int | None, col: int | None) -> str:
        return f"{_shown(filename)}:{line or 1}" + (f":{col}" if col else "") + ": "

    if isinstance(e, SyntaxError):
        return (at(e.filename, e.lineno, e.offset) if e.filename else "",
                f"{type(e).__name__}: {_one_line(str(e.msg))}")
    place = ""
    dsl_file, dsl_line = getattr(e, "filename", None), getattr(e, "line", None)
    if isinstance(dsl_file, str) and isinstance(dsl_line, int) and mine(dsl_file):
        col = getattr(e, "col", None)
        place = at(dsl_file, dsl_line, col + 1 if isinstance(col, int) else None)
    else:
        for fs in traceback.extract_tb(e.__traceback__):
            if mine(fs.filename):
                place = at(fs.filename, fs.lineno, fs.colno + 1 if fs.colno is not None else None)
    message = getattr(e, "message", None)  # a DSL diagnostic's text, without its snippet
    text = message if isinstance(message, str) and message else str(e)
    return place, f"{type(e).__name__}: {_one_line(text)}"


def load_target(target: str, launcher: str | None = None) -> tuple[Any, Any, str | None, Path]:
    """``FILE.py:NAME`` -> (module, launcher function, kernel name or None, file).  NAME is a
    ``@cute.kernel`` (launched by ``launcher``, or by the module's only ``@cute.jit``
    function) or a ``@cute.jit`` launcher (its one kernel is traced)."""
    path_text, sep, name = target.rpartition(":")
    if not sep or not path_text or not name:
        raise DslTraceError(f"--dsl {target!r}: expected FILE.py:FUNCTION (a @cute.kernel or its @cute.jit launcher)")
    path = Path(path_text)
    if not path.is_file():
        raise DslTraceError(f"--dsl {target!r}: {path_text}: no such file")
    module = _import(path, path_text)
    obj = getattr(module, name, None)
    kind = _kind(obj)
    jits = sorted(n for n, v in vars(module).items() if _kind(v) == "jit")
    kernels = sorted(n for n, v in vars(module).items() if _kind(v) == "kernel")
    if kind is None:
        raise DslTraceError(f"{path_text}: {name!r} is not a @cute.kernel or @cute.jit function of the module "
                            f"(kernels: {', '.join(kernels) or 'none'}; launchers: {', '.join(jits) or 'none'})")
    if kind == "jit":
        if launcher is not None and launcher != name:
            raise DslTraceError(f"--dsl-launcher {launcher}: {name!r} is itself a launcher")
        return module, obj, None, path
    if launcher is None:
        if len(jits) != 1:
            raise DslTraceError(f"{path_text}: the module has {len(jits)} @cute.jit launchers "
                                f"({', '.join(jits) or 'none'}); name the one launching {name} with --dsl-launcher")
        launcher = jits[0]
    fn = getattr(module, launcher, None)
    if _kind(fn) != "jit":
        raise DslTraceError(f"--dsl-launcher {launcher}: not a @cute.jit function of {path_text} "
                            f"(launchers: {', '.join(jits) or 'none'})")
    return module, fn, name, path


# ------------------------------------------------------------------------------------------
# the DSL's IR
# ------------------------------------------------------------------------------------------

class _Stop(BaseException):
    """Raised from the DSL's module builder once the IR is captured: nothing is compiled."""


class _Refused(_Stop):
    """Raised through the DSL (which wraps its callees' exceptions, not a BaseException) to
    stop a trace that is too costly: its message is the refusal."""


#: IR operations the DSL's module may have (its canonicalisation, text and parse cost about 30
#: microseconds each; the examples have a few hundred: a whole-tensor ``load()`` has a few per
#: element)
MAX_IR_OPS = 1 << 17
#: seconds the DSL may spend tracing the launcher (its own Python, which grows with what the
#: kernel unrolls: a ``load()`` of a whole tensor of 2^18 elements takes it two minutes)
MAX_DSL_SECONDS = 120.0


@contextlib.contextmanager
def _deadline(seconds: float, message: str) -> Iterator[None]:
    """Raise :class:`_Refused` with ``message`` if the block runs longer than ``seconds``:
    a timer signal, armed only where it can be (the main thread, SIGALRM free)."""
    import signal
    import threading

    usable = (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
              and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None))
    if not usable:
        yield
        return

    def ring(_sig: int, _frame: Any) -> None:
        raise _Refused(message)

    signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


def capture_ir(launcher: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[str, str]:
    """The launcher's IR after ``canonicalize,cse`` in generic form with source locations,
    and what the DSL printed while tracing it."""
    import cutlass.cute as cute

    inner = launcher.__wrapped__
    # the decorator keeps the DSL's class; after a first compile the function holds the instance
    dsl = getattr(inner, "_dsl_object", None)
    if dsl is None:
        cls = getattr(launcher, "_dsl_cls", None) or getattr(inner, "_dsl_cls", None)
        if cls is None:
            raise DslTraceError(f"{launcher.__name__}: not a @cute.jit function the tracer recognises")
        dsl = cls._get_dsl()
    captured: dict[str, str] = {}
    shown = _shown(inspect.getsourcefile(inner) or launcher.__name__)

    def hook(module: Any, function_name: str) -> Any:
        from cutlass._mlir import ir

        count = [0]

        def counted(_op: Any) -> Any:
            count[0] += 1
            return ir.WalkResult.INTERRUPT if count[0] > MAX_IR_OPS else ir.WalkResult.ADVANCE

        module.operation.walk(counted)  # stops at the limit: the count costs at most that
        if count[0] > MAX_IR_OPS:
            raise _Refused(f"{shown}: the CuTe DSL built more than {MAX_IR_OPS} IR operations for "
                           f"{launcher.__name__}; the tracer reads at most {MAX_IR_OPS} (what grows with the "
                           "sizes, a whole-tensor load() or an unrolled loop, is per element): trace smaller sizes "
                           "(--sizes)")
        # the pass pipeline KEEP=ir runs; in place, since the module is discarded after
        dsl.compiler_provider.compile(module, "builtin.module(canonicalize,cse)")
        captured["ir"] = module.operation.get_asm(enable_debug_info=True, print_generic_op_form=True)
        raise _Stop()

    out = io.StringIO()
    old_cache = os.environ.get("CUTE_DSL_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="threadmap-dsl-") as tmp:
        os.environ["CUTE_DSL_CACHE_DIR"] = tmp  # nothing of the DSL's cache outlives the trace
        dsl.build_module = hook
        slow = (f"{shown}: the CuTe DSL took more than {MAX_DSL_SECONDS:g} s to trace {launcher.__name__} (what "
                "grows with the sizes, a whole-tensor load() or an unrolled loop, is per element): trace smaller "
                "sizes (--sizes)")
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), _deadline(MAX_DSL_SECONDS, slow):
                cute.compile(launcher, *args, **kwargs, options="--generate-line-info")
        except _Refused as e:
            raise DslTraceError(str(e)) from None
        except _Stop:
            pass
        except (Exception, SystemExit) as e:  # noqa: BLE001 - the DSL's own error on the user's code is bad input
            # SystemExit too: a kernel calling sys.exit must not end threadmap with its status
            place, err = _user_error(e, Path(inspect.getsourcefile(inner) or "."))
            raise DslTraceError(f"{place}the CuTe DSL could not trace {launcher.__name__}: {err}") from None
        finally:
            del dsl.build_module  # the class's method again
            if old_cache is None:
                os.environ.pop("CUTE_DSL_CACHE_DIR", None)
            else:
                os.environ["CUTE_DSL_CACHE_DIR"] = old_cache
    if "ir" not in captured:
        raise DslTraceError(f"the CuTe DSL built no IR for {launcher.__name__} (a cached compilation?)")
    return captured["ir"], out.getvalue()


@dataclass
class Op:
    name: str
    results: list[str]
    operands: list[str]
    result_types: list[str]
    operand_types: list[str]
    props: str
    attrs: str
    regions: list[list[Block]]
    loc: str  # a location alias or inline location text


@dataclass
class Block:
    args: list[tuple[str, str]]
    ops: list[Op]


@dataclass
class Ir:
    ops: list[Op]
    type_aliases: dict[str, str]
    locations: dict[str, str]  # alias -> FILE:LINE


class _Text:
    """A cursor over the generic-form IR text."""

    def __init__(self, s: str) -> None:
        self.s, self.i = s, 0

    def ws(self) -> None:
        s, i = self.s, self.i
        while i < len(s) and s[i] in " \t\r\n":
            i += 1
        self.i = i

    def peek(self, t: str) -> bool:
        self.ws()
        return self.s.startswith(t, self.i)

    def eat(self, t: str) -> bool:
        if self.peek(t):
            self.i += len(t)
            return True
        return False

    def need(self, t: str) -> None:
        if not self.eat(t):
            raise DslTraceError(f"the DSL's IR is not in the expected form: expected {t!r} at "
                                f"{self.s[self.i:self.i + 60]!r}")

    def balanced(self, stop: str) -> str:
        """Text up to (not including) the first ``stop`` character at nesting depth 0, outside
        strings; ``<>``, ``()``, ``[]`` and ``{}`` nest (``->`` is not a bracket)."""
        s, i, depth = self.s, self.i, 0
        start = i
        while i < len(s):
            c = s[i]
            if c == '"':
                i += 1
                while i < len(s) and s[i] != '"':
                    i += 2 if s[i] == "\\" else 1
            elif depth == 0 and c in stop:
                break
            elif c in "<([{":
                depth += 1
            elif c == ">" and i > 0 and s[i - 1] == "-":
                pass
            elif c in ">)]}":
                depth -= 1
                if depth < 0:
                    break
            i += 1
        self.i = i
        return s[start:i].strip()

    def ident(self) -> str:
        self.ws()
        m = re.compile(r"[%^#!]?[\w$.\-]+(?::\d+|#\d+)?").match(self.s, self.i)
        if not m:
            raise DslTraceError(f"the DSL's IR is not in the expected form at {self.s[self.i:self.i + 60]!r}")
        self.i = m.end()
        return m.group(0)


def split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets and strings."""
    t = _Text(text)
    out = []
    while True:
        part = t.balanced(sep)
        if part:
            out.append(part)
        if t.i >= len(text) or not t.eat(sep):
            break
    return out


def parse_ir(text: str) -> Ir:
    """The generic-form IR as :class:`Op` trees (aliases of types and locations resolved later)."""
    aliases: dict[str, str] = {}
    locs: dict[str, str] = {}
    body = []
    for line in text.splitlines():
        m = re.match(r"^(![\w.]+) = (.*)$", line)
        if m:
            aliases[m.group(1)] = m.group(2).strip()
            continue
        m = re.match(r"^(#loc\d*) = (loc\(.*\))$", line)
        if m:
            locs[m.group(1)] = m.group(2)
            continue
        body.append(line)
    t = _Text("\n".join(body))
    ops = []
    while True:
        t.ws()
        if t.i >= len(t.s):
            break
        ops.append(_parse_op(t))
    return Ir(ops, aliases, {k: _loc_text(k, locs) for k in locs})


def _loc_text(key: str, locs: dict[str, str], depth: int = 0) -> str:
    """A location alias as ``FILE:LINE`` (name and call-site wrappers peeled), '' if unknown."""
    text = locs.get(key, key)
    m = re.search(r'"([^"]+\.py)":(\d+)', text)
    if m:
        return f"{_shown(m.group(1))}:{m.group(2)}"
    inner = re.findall(r"#loc\d*", text)
    if inner and depth < 16:
        for k in inner:
            if k != key:
                found = _loc_text(k, locs, depth + 1)
                if found:
                    return found
    return ""


def _shown(path: str) -> str:
    """A kernel file as the user named it: relative to the working folder when inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def _parse_op(t: _Text) -> Op:
    results: list[str] = []
    if t.peek("%"):
        while True:
            r = t.ident()
            if ":" in r:
                name, n = r.split(":")
                results += [f"{name}#{k}" for k in range(int(n))]
            else:
                results.append(r)
            if not t.eat(","):
                break
        t.need("=")
    t.ws()
    if not t.peek('"'):
        raise DslTraceError(f"the DSL's IR is not in the expected form at {t.s[t.i:t.i + 60]!r}")
    t.i += 1
    end = t.s.index('"', t.i)
    name = t.s[t.i:end]
    t.i = end + 1
    t.need("(")
    operands = [x.strip() for x in split_top(t.balanced(")"))]
    t.need(")")
    if t.peek("["):
        raise DslTraceError(f"operation {name} has block successors; the tracer handles structured control flow only")
    props = ""
    if t.eat("<{"):
        props = t.balanced("}")
        t.need("}>")
    regions: list[list[Block]] = []
    if t.peek("({"):
        t.need("(")
        while True:
            regions.append(_parse_region(t))
            if not t.eat(","):
                break
        t.need(")")
    attrs = ""
    if t.peek("{"):
        t.need("{")
        attrs = t.balanced("}")
        t.need("}")
    t.need(":")
    sig = t.balanced("\n")
    loc = ""
    m = re.search(r"\s+loc\((.*)\)\s*$", sig)
    if m:
        loc = m.group(1)
        sig = sig[:m.start()]
    ins, _, outs = sig.partition("->")
    ins = ins.strip()
    operand_types = split_top(ins[1:-1]) if ins.startswith("(") else []
    outs = outs.strip()
    result_types = split_top(outs[1:-1]) if outs.startswith("(") else ([outs] if outs else [])
    return Op(name, results, operands, result_types, operand_types, props, attrs, regions, loc)


def _parse_region(t: _Text) -> list[Block]:
    t.need("{")
    blocks: list[Block] = []
    cur: Block | None = None
    while not t.peek("}"):
        if t.peek("^"):
            t.ident()
            args = []
            if t.eat("("):
                for a in split_top(t.balanced(")")):
                    nm, _, ty = a.partition(":")
                    ty = re.sub(r"\s+loc\(.*\)$", "", ty.strip())
                    args.append((nm.strip(), ty.strip()))
                t.need(")")
            t.need(":")
            cur = Block(args, [])
            blocks.append(cur)
            continue
        if cur is None:
            cur = Block([], [])
            blocks.append(cur)
        cur.ops.append(_parse_op(t))
    t.need("}")
    return blocks


# ------------------------------------------------------------------------------------------
# CuTe notation in the IR's types
# ------------------------------------------------------------------------------------------

class _Hole:
    """A ``?`` of a type: a dynamic leaf whose value comes from an operand."""

    def __repr__(self) -> str:
        return "?"


HOLE = _Hole()


_TUPLES: dict[str, Any] = {}


def parse_tuple(text: str) -> Any:
    """:func:`read_tuple`, kept per text (the IR repeats its types)."""
    hit = _TUPLES.get(text)
    if hit is None:
        hit = _TUPLES[text] = read_tuple(text)
    return hit


def read_tuple(text: str) -> Any:
    """An IR int tuple (``((_,_),?)``, ``(?{div=4},3)``, ``1@0``) as nested tuples of ints,
    :data:`HOLE` and threadmap's underscore; basis elements as :class:`ScaledBasis`."""
    pos = 0
    s = text.strip()

    def item() -> Any:
        nonlocal pos
        if s.startswith("(", pos):
            pos += 1
            out = []
            while not s.startswith(")", pos):
                out.append(item())
                if s.startswith(",", pos):
                    pos += 1
            pos += 1
            return tuple(out)
        if s.startswith("?", pos):
            pos += 1
            if s.startswith("{", pos):
                pos = s.index("}", pos) + 1
            return HOLE
        if s.startswith("_", pos):
            pos += 1
            return L._
        m = re.compile(r"-?\d+").match(s, pos)
        if not m:
            raise DslTraceError(f"cannot read the IR's tuple {text!r} at column {pos + 1}")
        pos = m.end()
        v: Any = int(m.group(0))
        path = []
        while s.startswith("@", pos):
            m2 = re.compile(r"@(\d+)").match(s, pos)
            if not m2:
                raise DslTraceError(f"cannot read the IR's tuple {text!r}")
            path.append(int(m2.group(1)))
            pos = m2.end()
        if path:
            v = L.ScaledBasis(v, tuple(path))
        return v

    out = item()
    if pos != len(s):
        raise DslTraceError(f"cannot read the IR's tuple {text!r}")
    return out


def has_hole(x: Any) -> bool:
    if x is HOLE:
        return True
    return isinstance(x, tuple) and any(has_hole(e) for e in x)


def fill(x: Any, leaves: Iterator[Any]) -> Any:
    """``x`` with its holes replaced by ``leaves`` in order."""
    if x is HOLE:
        return next(leaves)
    if isinstance(x, tuple):
        return tuple(fill(e, leaves) for e in x)
    return x


def hole_leaves(pattern: Any, value: Any) -> list[Any]:
    """The leaves of ``value`` at the holes of ``pattern`` (its IR type)."""
    if pattern is HOLE:
        return [value]
    if isinstance(pattern, tuple) and isinstance(value, tuple) and len(pattern) == len(value):
        return [v for p, x in zip(pattern, value) for v in hole_leaves(p, x)]
    return []


def leaves(x: Any) -> list[Any]:
    if isinstance(x, tuple):
        return [v for e in x for v in leaves(e)]
    return [x]


_LAYOUTS: dict[str, Any] = {}


def parse_layout(text: str) -> Any:
    """An IR layout (``(4,32):(32,1)``, ``S<3,2,3> o 0 o (16,32):(32,1)``) as threadmap's;
    a ``?`` anywhere is a dynamic layout (:class:`DynamicLayout`)."""
    hit = _LAYOUTS.get(text)
    if hit is not None:
        return hit
    if "?" in text:
        raise DynamicLayout(text)
    t = re.sub(r"\bS<", "Sw<", text.strip())
    try:
        out = L.parse_layout(t)
    except ThreadmapError as e:
        raise DslTraceError(f"cannot read the IR's layout {text!r}: {e}") from None
    _LAYOUTS[text] = out
    return out


def parse_tile(text: str) -> Any:
    """``[16:1;128:1]`` -> a tiler: ints where a mode is ``N:1``, else layouts (``_`` kept)."""
    s = text.strip()
    if not (s.startswith("[") and s.endswith("]")):
        return parse_layout(s)
    out: list[Any] = []
    for part in split_top(s[1:-1], ";"):
        if part == "_":
            out.append(L._)
            continue
        lay = parse_layout(part)
        out.append(int(lay.shape) if isinstance(lay, L.Layout) and isinstance(lay.shape, int)
                   and lay.stride == 1 else lay)
    return tuple(out)


class DynamicLayout(DslTraceError):
    """A layout with dynamic parts (``?``): refused where a kernel computes with it."""

    def __init__(self, text: str) -> None:
        super().__init__(f"the layout {text} has dynamic parts (a runtime value); the tracer handles static "
                         "layouts (give the launcher tensors of static shapes)")


def quoted(type_text: str) -> list[str]:
    return re.findall(r'"((?:[^"\\]|\\.)*)"', type_text)


@dataclass(frozen=True)
class TypeInfo:
    kind: str               # int | float | vector | memref | coord_tensor | ptr | layout | tuple | tile | ...
    text: str
    bits: int = 0           # element bits (memref, ptr, int, float)
    memory: str = ""        # gmem | smem | rmem
    layout: str = ""        # the layout's text (memref, coord_tensor, layout types)
    iterator: str = ""      # a coordinate tensor's iterator text
    lanes: int = 0          # vector length


_TYPES: dict[str, TypeInfo] = {}


def type_info(text: str, aliases: Mapping[str, str]) -> TypeInfo:
    """What an IR type is (its aliases resolved; kept per resolved text: aliases are per module)."""
    full = text
    for _ in range(8):
        if full in aliases:
            full = aliases[full]
    hit = _TYPES.get(full)
    if hit is not None:
        return hit
    q = quoted(full)
    out: TypeInfo
    if re.fullmatch(r"i\d+|index|si\d+|ui\d+", full):
        out = TypeInfo("int", full, IR_BITS.get(full, 64))
    elif re.fullmatch(r"f\d+|bf16|tf32|f8\w*", full):
        out = TypeInfo("float", full, IR_BITS.get(full, 32))
    elif full.startswith("vector<"):
        m = re.match(r"vector<(\d+)x(\w+)>", full)
        out = TypeInfo("vector", full, IR_BITS.get(m.group(2), 0) if m else 0, lanes=int(m.group(1)) if m else 0)
    elif full.startswith("!cute.memref<"):
        m = re.match(r"!cute\.memref<(\w+), (\w+)", full)
        elt, mem = (m.group(1), m.group(2)) if m else ("", "")
        out = TypeInfo("memref", full, IR_BITS.get(elt, 0), mem, q[-1] if q else "")
    elif full.startswith("!cute.coord_tensor<"):
        out = TypeInfo("coord_tensor", full, 0, "", q[1] if len(q) > 1 else "", q[0] if q else "")
    elif full.startswith("!cute.ptr<"):
        m = re.match(r"!cute\.ptr<(\w+), (\w+)", full)
        out = TypeInfo("ptr", full, IR_BITS.get(m.group(1), 0) if m else 0, m.group(2) if m else "")
    elif full.startswith(("!cute.layout<", "!cute.composed_layout<")):
        out = TypeInfo("layout", full, layout=q[0] if q else "")
    elif full.startswith(("!cute.coord<", "!cute.shape<", "!cute.stride<", "!cute.int_tuple<")):
        out = TypeInfo("tuple", full, layout=q[0] if q else "")
    elif full.startswith("!cute.arith_tuple_iter<"):
        out = TypeInfo("arith_iter", full, layout=q[0] if q else "")
    elif full.startswith("!cute.tile<"):
        out = TypeInfo("tile", full, layout=q[0] if q else "")
    elif full.startswith("!cute.swizzle<"):
        out = TypeInfo("swizzle", full, layout=q[0] if q else "")
    elif full.startswith("!cute.tiled_copy<"):
        out = TypeInfo("tiled_copy", full)
    elif full.startswith("!cute_nvgpu.atom."):
        out = TypeInfo("atom", full)
    else:
        out = TypeInfo("other", full)
    _TYPES[full] = out
    return out


# ------------------------------------------------------------------------------------------
# interpreter values
# ------------------------------------------------------------------------------------------

class _Unknown:
    """A value the trace does not know: memory contents, or anything computed from them."""

    def __repr__(self) -> str:
        return "unknown"


UNKNOWN = _Unknown()


@dataclass(frozen=True)
class Ptr:
    buffer: Buffer
    offset: int  # elements of ``bits``
    bits: int


@dataclass(frozen=True)
class TensorV:
    """A memory tensor (``buffer`` set: element ``i`` at ``offset + layout(i)``) or a
    coordinate tensor (``buffer`` None: value ``offset + layout(i)``, ``offset`` an
    :class:`ArithTuple`).  ``layout`` is the one the IR's type states."""

    buffer: Buffer | None
    bits: int
    offset: Any
    layout: Any

    def tm(self) -> L.Tensor:
        return L.Tensor(self.layout, self.offset)


@dataclass(frozen=True)
class Atom:
    name: str
    elem_bits: int
    bits: int  # bits one call moves

    @property
    def values(self) -> int:
        return max(1, self.bits // max(1, self.elem_bits))


@dataclass(frozen=True)
class TiledCopyV:
    atom: Atom
    tc: Any  # threadmap TiledCopy


@dataclass
class Loaded:
    """A value loaded from global or shared memory (unknown), remembering the load so that a
    store of it directly makes one copy."""

    event: int


@dataclass
class LoadedVec:
    events: list[int]


# ------------------------------------------------------------------------------------------
# the interpreter
# ------------------------------------------------------------------------------------------

#: operations without results that move no data: skipped
IGNORED = {"cute.print", "cute.printf", "llvm.intr.assume", "cute.assume", "nvvm.fence.proxy", "nvvm.fence.sc.cluster",
           "gpu.printf"}
BARRIERS = {"nvvm.barrier", "nvvm.barrier0", "gpu.barrier", "nvvm.barrier.arrive"}
INT_BIN: dict[str, Callable[[int, int], int]] = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
    "arith.andi": lambda a, b: a & b, "arith.ori": lambda a, b: a | b, "arith.xori": lambda a, b: a ^ b,
    "arith.shli": lambda a, b: a << b, "arith.shrsi": lambda a, b: a >> b, "arith.shrui": lambda a, b: a >> b,
    "arith.maxsi": max, "arith.minsi": min, "arith.maxui": max, "arith.minui": min,
    "arith.divsi": lambda a, b: _trunc_div(a, b), "arith.divui": lambda a, b: a // b,
    "arith.remsi": lambda a, b: a - b * _trunc_div(a, b), "arith.remui": lambda a, b: a % b,
    "arith.floordivsi": lambda a, b: a // b, "arith.ceildivsi": lambda a, b: -(-a // b),
    "arith.ceildivui": lambda a, b: -(-a // b),
}
CMPI = {0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b, 3: lambda a, b: a <= b,
        4: lambda a, b: a > b, 5: lambda a, b: a >= b, 6: lambda a, b: a < b, 7: lambda a, b: a <= b,
        8: lambda a, b: a > b, 9: lambda a, b: a >= b}
CASTS = {"arith.extui", "arith.extsi", "arith.trunci", "arith.index_cast", "arith.index_castui", "arith.bitcast"}
SREG = re.compile(r"nvvm\.read\.ptx\.sreg\.(tid|ctaid|ntid|nctaid)\.([xyz])")


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _wrap(v: int, bits: int, signed: bool = True) -> int:
    if bits <= 1:
        return v & 1
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


class Refused(DslTraceError):
    pass


#: one access site's execution: the operation, its kind, source and destination tensors,
#: values per instruction, (load event, store event) per element, performed per element
Record = tuple[Op, str, "TensorV | None", "TensorV | None", int, list[tuple[int | None, int | None]], list[bool]]


class Interpreter:
    """Runs one function's IR on concrete indices (see the module's docstring)."""

    def __init__(self, ir: Ir, source: str) -> None:
        self.ir = ir
        self.source = source
        self.types: dict[str, TypeInfo] = {}
        self.checked: dict[tuple[str, str], bool] = {}
        # per run
        self.block_xyz = (0, 0, 0)
        self.thread_xyz = (0, 0, 0)
        self.grid = (1, 1, 1)
        self.dims = (1, 1, 1)
        self.strict = True
        self.ops_run = 0
        self.events: list[tuple[Buffer, int, int, bool]] = []  # buffer, element, bits, is_load
        self.site_values = 0  # values the running thread has recorded (bounded by MAX_TRACE_RECORDS)
        self.barriers: list[str] = []
        self.smem: dict[str, Buffer] = {}
        self.launch: tuple[str, list[Any], tuple[int, ...], tuple[int, ...]] | None = None
        self.unknown_from: dict[str, str] = {}  # host values left unknown -> the operation
        self.block_id = 0
        self.thread_id = 0
        self.regs: dict[str, dict[int, Any]] = {}  # a thread's register buffers: element -> value
        self.rekey: list[tuple[int, int | None, Op, TensorV]] = []  # loads stored directly
        self.paired: set[int] = set()  # load events already stored
        self.records: list[Record] = []
        self.launches: list[str] = []
        self.launch_operands: list[str] = []
        self.fast: dict[tuple[int, int], Callable[[list[Any]], Any]] = {}
        self.skip: set[int] = set()  # operations whose results the block's first thread left
        self.current: Op | None = None  # the operation running (for errors)

    def guarded(self, ops: list[Op], env: dict[str, Any]) -> list[Any]:
        """:meth:`run_block`, with any failure of the interpreter on an operation reported as
        a refusal of that operation (its file and line), never as a traceback."""
        try:
            return self.run_block(ops, env)
        except DynamicLayout as e:
            if self.current is None:
                raise
            raise self.refuse(self.current, str(e)) from None
        except DslTraceError:
            raise
        except (ThreadmapError, KeyError, IndexError, TypeError, ValueError, AttributeError, ZeroDivisionError,
                StopIteration, OverflowError, RecursionError) as e:
            op = self.current
            if op is None:
                raise DslTraceError(f"{self.source}: the tracer cannot follow the IR: {type(e).__name__}: "
                                    f"{e}") from None
            raise self.refuse(op, f"the tracer cannot follow this operation: {type(e).__name__}: {e}") from None

    # -- helpers ------------------------------------------------------------------------------
    def where(self, op: Op) -> str:
        loc = op.loc
        if loc.startswith("#loc"):
            found = self.ir.locations.get(loc, "")
        else:
            m = re.search(r'"([^"]+\.py)":(\d+)', loc)
            found = f"{_shown(m.group(1))}:{m.group(2)}" if m else ""
            if not found:
                for k in re.findall(r"#loc\d*", loc):
                    found = self.ir.locations.get(k, "")
                    if found:
                        break
        return found or self.source

    def refuse(self, op: Op, msg: str) -> Refused:
        return Refused(f"{self.where(op)}: {msg} ({op.name})")

    def ti(self, text: str) -> TypeInfo:
        return type_info(text, self.ir.type_aliases)

    def layout_of(self, op: Op, text: str) -> Any:
        try:
            return parse_layout(text)
        except DynamicLayout as e:
            raise self.refuse(op, str(e)) from None

    def int_of(self, op: Op, v: Any, what: str) -> int:
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, (int, np.integer)):
            return int(v)
        raise self.refuse(op, f"{what} depends on data the tracer does not know (memory contents or a "
                              "runtime value)")

    # -- static values from types ------------------------------------------------------------
    def from_type(self, op: Op, text: str) -> Any:
        """The value of a result whose type is fully static, or raise KeyError."""
        t = self.ti(text)
        if t.kind == "layout":
            return self.layout_of(op, t.layout)
        if t.kind == "tuple":
            v = parse_tuple(t.layout)
            if has_hole(v):
                raise KeyError(text)
            return v
        if t.kind == "tile":
            return parse_tile(t.layout)
        if t.kind == "swizzle":
            return t.layout
        if t.kind == "atom":
            return self.atom(op, t.text)
        if t.kind == "tiled_copy":
            return self.tiled_copy(op, t.text)
        if t.kind == "coord_tensor":
            it = parse_tuple(t.iterator)
            if has_hole(it):
                raise KeyError(text)
            return TensorV(None, 0, _arith(it), self.layout_of(op, t.layout))
        raise KeyError(text)

    def atom(self, op: Op, text: str) -> Atom:
        full = self.ti(text).text
        m = re.match(r"!cute_nvgpu\.atom\.universal_copy<(\w+)(?:, (\d+) b)?>", full)
        if not m:
            name = re.sub(r"<.*", "", full)
            raise self.refuse(op, f"the copy atom {name} is not handled (the tracer knows the universal copy)")
        bits = IR_BITS.get(m.group(1), 0)
        if bits < 8:
            raise self.refuse(op, f"element type {m.group(1)}: sub-byte elements are not handled")
        return Atom("universal_copy", bits, int(m.group(2)) if m.group(2) else bits)

    def tiled_copy(self, op: Op, text: str) -> TiledCopyV:
        full = self.ti(text).text
        m = re.match(r"!cute\.tiled_copy<(.*), layout_copy_tv = <\"([^\"]*)\">, tiler_mn = <\"([^\"]*)\">>$", full)
        if not m:
            raise self.refuse(op, f"cannot read the tiled copy type {full}")
        atom = self.atom(op, m.group(1))
        tv = self.layout_of(op, m.group(2))
        tiler = parse_tile(m.group(3))
        tiler_tm = tuple(L.Layout(x, 1) if isinstance(x, int) else x for x in tiler)
        try:
            tc = L.make_tiled_copy_impl((f"UniversalCopy<uint{atom.bits}_t>", atom.elem_bits), tv, tiler_tm)
        except ThreadmapError as e:
            raise self.refuse(op, f"tiled copy {full}: {e}") from None
        return TiledCopyV(atom, tc)

    # -- running ------------------------------------------------------------------------------
    def run_block(self, ops: list[Op], env: dict[str, Any]) -> list[Any]:
        """Run ``ops``; the operands of the terminator (``scf.yield``) are returned."""
        for op in ops:
            self.ops_run += 1
            if self.ops_run > MAX_OPS_PER_THREAD:
                raise self.refuse(op, f"a thread ran more than {MAX_OPS_PER_THREAD} operations")
            if op.name in ("scf.yield", "cuda.return", "func.return", "gpu.return"):
                return [env.get(x, UNKNOWN) for x in op.operands]
            if id(op) in self.skip:
                continue
            self.step(op, env)
        return []

    def vals(self, op: Op, env: dict[str, Any]) -> list[Any]:
        out = []
        for x in op.operands:
            if x not in env:
                raise self.refuse(op, f"operand {x} is not defined (the tracer met IR it does not follow)")
            out.append(env[x])
        return out

    def step(self, op: Op, env: dict[str, Any]) -> None:  # noqa: C901 - one dispatch over the op set
        name = op.name
        self.current = op
        args = self.vals(op, env)
        res = op.results

        def put(*values: Any) -> None:
            for r, v in zip(res, values):
                env[r] = v

        # structured control flow
        if name == "scf.for":
            lb, ub, stp = (self.int_of(op, a, "a loop bound") for a in args[:3])
            carried = list(args[3:])
            blk = op.regions[0][0]
            if stp <= 0:
                raise self.refuse(op, f"loop step {stp}")
            for iv in range(lb, ub, stp):
                env[blk.args[0][0]] = iv
                for (a, _), v in zip(blk.args[1:], carried):
                    env[a] = v
                carried = self.run_block(blk.ops, env)
            put(*carried)
            return
        if name == "scf.if":
            c = args[0]
            if c is UNKNOWN or isinstance(c, (Loaded, LoadedVec)):
                if not self.strict:
                    put(*([UNKNOWN] * len(res)))
                    return
                raise self.refuse(op, "a branch depends on data the tracer does not know (memory contents or a "
                                      "runtime value); only branches on thread/block indices and static values are "
                                      "traced")
            region = op.regions[0] if c else (op.regions[1] if len(op.regions) > 1 else [])
            out = self.run_block(region[0].ops, env) if region else []
            put(*out)
            return
        if op.regions:
            raise self.refuse(op, "this operation is not handled by the tracer")

        # integers
        if name == "arith.constant":
            m = re.search(r"value = (-?\d+) : (i\d+|index)", op.props)
            if m:
                put(int(m.group(1)))
            elif re.search(r"value = true\b", op.props):
                put(1)
            elif re.search(r"value = false\b", op.props):
                put(0)
            else:
                m = re.search(r"value = (-?[\d.]+(?:e[+-]?\d+)?) : f", op.props)
                put(float(m.group(1)) if m else UNKNOWN)
            return
        m = SREG.fullmatch(name)
        if m:
            axis = "xyz".index(m.group(2))
            src = {"tid": self.thread_xyz, "ctaid": self.block_xyz, "ntid": self.dims, "nctaid": self.grid}[m.group(1)]
            put(src[axis])
            return
        if name in ("nvvm.read.ptx.sreg.laneid",):
            put(self.thread_id % 32)
            return
        if name in INT_BIN:
            a, b = args
            if not _known_int(a) or not _known_int(b):
                put(UNKNOWN)
                return
            t = self.ti(op.result_types[0])
            try:
                v = INT_BIN[name](int(a), int(b))
            except ZeroDivisionError:
                raise self.refuse(op, "division by zero") from None
            put(_wrap(v, t.bits, not name.endswith("ui")))
            return
        if name == "arith.cmpi":
            a, b = args
            if not _known_int(a) or not _known_int(b):
                put(UNKNOWN)
                return
            pm = re.search(r"predicate = (\d+)", op.props)
            p = int(pm.group(1)) if pm else -1
            if p not in CMPI:
                raise self.refuse(op, f"comparison predicate {p}")
            bits = self.ti(op.operand_types[0]).bits
            ua, ub = (_wrap(int(a), bits, False), _wrap(int(b), bits, False)) if p >= 6 else (int(a), int(b))
            put(int(CMPI[p](ua, ub)))
            return
        if name == "arith.select":
            c, a, b = args
            put(UNKNOWN if not _known_int(c) else (a if c else b))
            return
        if name in CASTS:
            a = args[0]
            if not _known_int(a):
                put(UNKNOWN)
                return
            t = self.ti(op.result_types[0])
            src_bits = self.ti(op.operand_types[0]).bits
            v = _wrap(int(a), src_bits, False) if name in ("arith.extui", "arith.index_castui") else int(a)
            put(_wrap(v, t.bits, name != "arith.extui"))
            return
        if name.startswith(("arith.", "math.", "vector.")):
            # floating point and vector arithmetic: data, never an address or a branch here
            put(*[UNKNOWN] * len(res))
            return
        if name in BARRIERS:
            self.barriers.append(self.where(op))
            return
        if name in IGNORED:
            return

        # the CuTe dialect
        if name.startswith(("cute.", "cute_nvgpu.")):
            self.cute(op, args, env, put)
            return
        if name.startswith("cuda."):
            self.cuda(op, args, env, put)
            return
        if not self.strict:
            for r in res:
                env[r] = UNKNOWN
                self.unknown_from[r] = f"{name} at {self.where(op)}"
            return
        raise self.refuse(op, "this operation is not handled by the tracer")

    # -- the CuTe dialect ---------------------------------------------------------------------
    def cute(self, op: Op, args: list[Any], env: dict[str, Any], put: Callable[..., None]) -> None:  # noqa: C901
        name = op.name
        rt = [self.ti(t) for t in op.result_types]
        if name in ("cute.make_coord", "cute.make_shape", "cute.make_stride", "cute.make_int_tuple"):
            pattern = parse_tuple(rt[0].layout)
            dyn: list[Any] = []
            for a, ty in zip(args, op.operand_types):
                ot = self.ti(ty)
                dyn += [a] if ot.kind in ("int", "other") else hole_leaves(parse_tuple(ot.layout), a)
            try:
                put(fill(pattern, iter(dyn)))
            except StopIteration:
                raise self.refuse(op, "cannot match the operands to the tuple's dynamic parts") from None
            return
        if name == "cute.get_leaves":
            src = args[0]
            pat = leaves(parse_tuple(self.ti(op.operand_types[0]).layout))
            lv = leaves(src) if not isinstance(src, L.ArithTuple) else list(_as_tuple(src, len(pat)))
            if len(res := op.results) == len(lv):
                put(*lv)
            else:
                put(*[v for p, v in zip(pat, lv) if p is HOLE][:len(res)])
            return
        if name == "cute.get_scalars":
            src = args[0]
            pat = leaves(parse_tuple(self.ti(op.operand_types[0]).layout))
            lv = leaves(src)
            dyn = [v for p, v in zip(pat, lv) if p is HOLE]
            put(*(dyn if len(dyn) == len(op.results) else lv))
            return
        if name == "cute.deref_arith_tuple_iter":
            it = args[0]
            n = len(leaves(parse_tuple(rt[0].layout)))
            put(_as_tuple(it, n) if n > 1 else _as_tuple(it, 1)[0])
            return
        if name == "cute.elem_less":
            a, b = args
            la, lb = leaves(a), leaves(b)
            if any(not _known_int(x) for x in la + lb):
                put(UNKNOWN)
                return
            put(int(all(int(x) < int(y) for x, y in zip(la, lb))))
            return
        if name in ("cute.memref.alloca",):
            t = rt[0]
            if t.memory == "smem":
                key = f"{id(op)}"
                buf = self.smem.get(key)
                if buf is None:
                    buf = Buffer(f"smem{len(self.smem)}", "shared", t.bits)
                    self.smem[key] = buf
                put(TensorV(buf, t.bits, 0, self.layout_of(op, t.layout)))
            elif t.memory == "rmem":
                buf = Buffer(f"rmem:{id(op)}", "register", t.bits)
                self.regs[buf.name] = {}
                put(TensorV(buf, t.bits, 0, self.layout_of(op, t.layout)))
            else:
                raise self.refuse(op, f"allocation in {t.memory}")
            return
        if name == "cute.get_iter":
            x = args[0]
            self.tensor_arg(op, x)
            if x.buffer is None:
                put(x.offset)
            else:
                put(Ptr(x.buffer, x.offset, x.bits))
            return
        if name == "cute.get_layout":
            x = args[0]
            self.tensor_arg(op, x)
            put(x.layout)
            return
        if name == "cute.recast_iter":
            p = args[0]
            if not isinstance(p, Ptr):
                raise self.refuse(op, "recast of a pointer the tracer does not know")
            nb = rt[0].bits
            total = p.offset * p.bits
            if nb < 8 or total % nb:
                raise self.refuse(op, f"recast of a {p.bits}-bit pointer at element {p.offset} to {nb} bits")
            put(Ptr(p.buffer, total // nb, nb))
            return
        if name == "cute.add_offset":
            p, off = args
            o = _scalar(off)
            if not isinstance(p, Ptr) or not _known_int(o):
                raise self.refuse(op, "pointer arithmetic the tracer does not know")
            put(Ptr(p.buffer, p.offset + int(o), p.bits))
            return
        if name == "cute.make_view":
            it, lay = args
            t = rt[0]
            if isinstance(it, Ptr):
                if "?" in t.layout and isinstance(lay, L.Layout):
                    layout = lay  # strides solved where the operand was made (see :meth:`solve`)
                else:
                    layout = self.layout_of(op, t.layout)
                    self.same_function(op, lay, layout)
                put(TensorV(it.buffer, it.bits, it.offset, layout))
            elif isinstance(it, L.ArithTuple):
                put(TensorV(None, 0, it, self.layout_of(op, t.layout)))
            else:
                raise self.refuse(op, "a view of an iterator the tracer does not know")
            return
        if name == "cute.append_to_rank" and rt and rt[0].kind == "layout" and "?" in rt[0].layout:
            lay = args[0]
            rk = re.search(r"rank = (\d+)", op.props)
            if not isinstance(lay, L.Layout) or not rk:
                raise self.refuse(op, str(DynamicLayout(rt[0].layout)))
            shp = lay.shape if isinstance(lay.shape, tuple) else (lay.shape,)
            std = lay.stride if isinstance(lay.stride, tuple) else (lay.stride,)
            pad = max(0, int(rk.group(1)) - len(shp))
            put(L.Layout(shp + (1,) * pad, std + (0,) * pad))
            return
        if name == "cute.make_identity_tensor":
            put(self.from_type(op, op.result_types[0]))
            return
        if name in TENSOR_OPS:
            k = 1 if name.startswith("cute.tiled.copy.") else 0
            if len(op.operand_types) > k and self.ti(op.operand_types[k]).kind in ("memref", "coord_tensor"):
                x = args[k]
                self.tensor_arg(op, x)
                put(self.tensor_op(op, x, args[:k] + args[k + 1:], rt[0]))
                return
        if name == "cute.memref.load":
            x, crd = args
            self.tensor_arg(op, x)
            put(self.load(op, x, crd))
            return
        if name == "cute.memref.store":
            x, crd, v = args
            self.tensor_arg(op, x)
            self.store(op, x, crd, v)
            return
        if name == "cute.memref.load_vec":
            x = args[0]
            self.tensor_arg(op, x)
            put(self.load_vec(op, x))
            return
        if name == "cute.memref.store_vec":
            v, x = args[0], args[1]
            self.tensor_arg(op, x)
            self.store_vec(op, x, v)
            return
        if name == "cute.copy":
            self.copy(op, args)
            return
        if name in ("cute.static", "cute.make_atom", "cute.make_tiled_copy") or all(
                not has_hole_text(t.layout) and t.kind in ("layout", "tuple", "tile", "swizzle", "atom", "tiled_copy")
                for t in rt) and rt:
            try:
                put(*[self.from_type(op, t) for t in op.result_types])
                return
            except KeyError:
                pass
        if not self.strict:
            for r in op.results:
                env[r] = UNKNOWN
                self.unknown_from[r] = f"{name} at {self.where(op)}"
            return
        dynamic = [t.layout for t in rt if t.kind in ("layout", "tuple", "tile") and "?" in t.layout]
        if dynamic:
            raise self.refuse(op, f"the layout or shape {dynamic[0]} has dynamic parts (a runtime value); the tracer "
                                  "handles static layouts")
        raise self.refuse(op, "this operation is not handled by the tracer")

    def tensor_arg(self, op: Op, x: Any) -> None:
        if not isinstance(x, TensorV):
            why = f" (made by {self.unknown_from[op.operands[0]]})" if op.operands and op.operands[0] in \
                self.unknown_from else ""
            raise self.refuse(op, f"a tensor the tracer does not know{why}")

    # -- tensor operations, checked against the IR's types -----------------------------------
    def tensor_op(self, op: Op, x: TensorV, rest: list[Any], out: TypeInfo) -> TensorV:
        """Evaluate with threadmap's algebra, then adopt the IR's layout, fixing the offset.

        For plain (unswizzled) layouts the result's layout does not depend on the dynamic
        coordinate, only its offset does: after the first full evaluation at an operation
        and operand layout, later ones compute the offset alone (``slice``: the layout at the
        coordinate with ``_`` as 0; a partition: the thread's first value), the first
        evaluation having checked that shortcut against the full one."""
        if out.kind not in ("memref", "coord_tensor"):
            raise self.refuse(op, f"result type {out.text} is not a tensor")
        if "?" in out.layout:
            # strides the DSL computes at run time (a swizzled tile cut at a thread's offset)
            r = self.full_op(op, x, rest)
            if not isinstance(r, L.Tensor):
                r = L.Tensor(L.Layout(1, 0), r)
            lay = self.solve(op, out.layout, r)
            return self.adopt(op, x, self.fit(op, r, lay), lay, out)
        lay = self.layout_of(op, out.layout)
        key = (id(op), id(x.layout))
        fast = self.fast.get(key)
        if fast is not None:
            return self.adopt(op, x, _add(x.offset, fast(rest)) if x.buffer is None else
                              x.offset + fast(rest), lay, out)
        r = self.full_op(op, x, rest)
        if not isinstance(r, L.Tensor):  # every mode fixed: a rank-0 tensor at that element
            r = L.Tensor(lay, r)
        o = self.fit(op, r, lay)
        shortcut = self.shortcut(op, x, rest)
        if shortcut is not None and isinstance(x.layout, L.Layout) and isinstance(lay, L.Layout):
            try:
                ok = _same(_add(x.offset, shortcut(rest)), o)
            except (ThreadmapError, TypeError, IndexError):
                ok = False
            if ok:
                self.fast[key] = shortcut
        return self.adopt(op, x, o, lay, out)

    def solve(self, op: Op, text: str, r: L.Tensor) -> Any:
        """The IR's layout ``text`` whose strides are ``?``, with each such stride read from
        ``r`` (the element one step along that mode minus the first); the caller checks every
        element.  A ``?`` in a shape or a swizzle is refused."""
        shape_t, colon, stride_t = text.partition(":")
        if not colon or "?" in shape_t or " o " in text:
            raise self.refuse(op, str(DynamicLayout(text)))
        shape, stride = parse_tuple(shape_t), parse_tuple(stride_t)
        flat_shape = leaves(shape)
        flat_stride = leaves(stride)
        solved = []
        step = 1
        first = r(0)
        for n, d in zip(flat_shape, flat_stride):
            if d is HOLE:
                v = _sub(r(step), first) if n > 1 else 0
                if not isinstance(v, int):
                    raise self.refuse(op, f"the layout {text}: a dynamic stride of a coordinate tensor")
                solved.append(v)
            step *= int(n)
        try:
            return L.Layout(shape, fill(stride, iter(solved)))
        except ThreadmapError as e:
            raise self.refuse(op, f"the layout {text}: {e}") from None

    def adopt(self, op: Op, x: TensorV, offset: Any, lay: Any, out: TypeInfo) -> TensorV:
        if out.kind == "coord_tensor":
            it = parse_tuple(out.iterator)
            got = _as_tuple(offset, len(leaves(it)))
            for p, g in zip(leaves(it), got):
                if isinstance(p, int) and p != g:
                    raise self.refuse(op, f"the tracer's coordinate {got} differs from the IR's {out.iterator}")
            return TensorV(None, 0, offset, lay)
        return TensorV(x.buffer, x.bits, int(offset), lay)

    def full_op(self, op: Op, x: TensorV, rest: list[Any]) -> Any:
        name = op.name
        t = x.tm()
        try:
            if name == "cute.slice":
                return t(_coord(rest[0]))
            if name in ("cute.tiled.copy.partition_S", "cute.tiled.copy.partition_D"):
                thr = rest[0].tc.get_slice(self.int_of(op, _scalar(rest[1]), "the thread index"))
                return thr.partition_S(t) if name.endswith("_S") else thr.partition_D(t)
            if name == "cute.local_tile":
                return L.local_tile(t, _tiler(rest[0]), _coord(rest[1]))
            if name == "cute.local_partition":
                return L.local_partition(t, rest[0], self.int_of(op, _scalar(rest[1]), "the thread index"))
            if name in ("cute.zipped_divide", "cute.logical_divide", "cute.tiled_divide", "cute.flat_divide"):
                return L.Tensor(getattr(L, name.split(".")[1])(t.layout, _tiler(rest[0])), t.offset)
            if name == "cute.composition":
                return L.Tensor(L.composition(t.layout, rest[0]), t.offset)
            if name in ("cute.group_modes", "cute.append_to_rank", "cute.make_layout_like", "cute.filter_zeros"):
                return t  # the element function is kept; the IR's layout is the new grouping
        except (ThreadmapError, TypeError, IndexError) as e:
            raise self.refuse(op, f"threadmap's algebra could not evaluate it: {e}") from None
        raise self.refuse(op, "this tensor operation is not handled by the tracer")

    def shortcut(self, op: Op, x: TensorV, rest: list[Any]) -> Callable[[list[Any]], Any] | None:
        """The result's offset from the operand's, without the layout algebra (plain layouts)."""
        name = op.name
        lay = x.layout
        if name == "cute.slice":
            return lambda rs: _point(lay, _zero_underscores(_coord(rs[0])))
        if name in ("cute.tiled.copy.partition_S", "cute.tiled.copy.partition_D"):
            tc = rest[0].tc
            zero: Any = 0 if x.buffer is not None else L.ArithTuple({})
            try:
                frg = (tc.tidfrg_S if name.endswith("_S") else tc.tidfrg_D)(L.Tensor(lay, zero))
            except (ThreadmapError, TypeError, IndexError):
                return None
            if not isinstance(frg.layout, L.Layout):
                return None
            rank = L.rank(lay)
            flay = frg.layout

            def part(rs: list[Any]) -> Any:
                return flay((int(_scalar(rs[1])), 0, (0,) * rank if rank > 1 else 0))
            return part
        if name in ("cute.group_modes", "cute.append_to_rank", "cute.make_layout_like", "cute.filter_zeros",
                    "cute.zipped_divide", "cute.logical_divide", "cute.tiled_divide", "cute.flat_divide",
                    "cute.composition"):
            return lambda rs: 0
        return None

    def fit(self, op: Op, r: L.Tensor, lay: Any) -> Any:
        """The offset ``o`` with ``r(i) == o + lay(i)`` for every index ``i`` (checked on
        :data:`CHECK_ELEMENTS` of them), or refuse."""
        n = int(L.size(lay))
        if int(L.size(r.layout)) != n:
            raise self.refuse(op, f"the tracer's result has {L.size(r.layout)} elements, the IR's layout {lay} {n}")
        base = r(0) if n else r.offset
        o = _sub(base, lay(0)) if n else base
        key = (repr(r.layout), repr(lay))
        plain = isinstance(r.layout, L.Layout) and isinstance(lay, L.Layout)
        if plain and key in self.checked:
            if not self.checked[key]:
                raise self.refuse(op, f"the tracer's layout {r.layout} and the IR's {lay} differ")
            return o
        vr, vl = _path_tables(r.layout), _path_tables(lay)
        if vr is not None and vl is not None:
            # plain layouts: every element at once, one integer table per basis path
            on = _norm(o)
            want = on if isinstance(on, dict) else {(): on}
            paths = set(vr) | set(vl) | set(want)
            r0 = _norm(r.offset)
            roff = r0 if isinstance(r0, dict) else {(): r0}
            z = np.zeros(n, dtype=np.int64)
            ok = all(np.array_equal(vr.get(p, z) + roff.get(p, 0) - vl.get(p, z), np.full(n, want.get(p, 0)))
                     for p in paths)
        else:
            idx = range(n) if n <= CHECK_ELEMENTS else sorted(set(np.linspace(0, n - 1, CHECK_ELEMENTS).astype(int)))
            ok = all(_same(_sub(r(int(i)), lay(int(i))), o) for i in idx)
        if plain:
            self.checked[key] = ok
        if not ok:
            raise self.refuse(op, f"the tracer's layout {r.layout} (offset {r.offset}) and the IR's {lay} differ")
        return o

    def same_function(self, op: Op, a: Any, b: Any) -> None:
        if a is UNKNOWN or a is b or a == b:
            return
        self.fit(op, L.Tensor(a, 0), b)

    # -- memory -------------------------------------------------------------------------------
    def element(self, op: Op, x: TensorV, crd: Any) -> int:
        c = _coord(crd)
        if any(not _known_int(v) for v in leaves(c)):
            raise self.refuse(op, "an address depends on data the tracer does not know")
        try:
            v = x.offset + _point(x.layout, c)
        except (ThreadmapError, TypeError, IndexError) as e:
            raise self.refuse(op, f"coordinate {c} of {x.layout}: {e}") from None
        return int(v)

    def event(self, x: TensorV, e: int, load: bool) -> int:
        assert x.buffer is not None
        self.events.append((x.buffer, e, x.bits, load))
        return len(self.events) - 1

    def load(self, op: Op, x: TensorV, crd: Any) -> Any:
        if x.buffer is None:
            raise self.refuse(op, "a load from a coordinate tensor")
        e = self.element(op, x, crd)
        if x.buffer.memory == "register":
            return self.regs[x.buffer.name].get(e, UNKNOWN)
        ev = self.event(x, e, True)
        self.site(op, "load", x, None, 1, [(ev, None)], [True])
        return Loaded(ev)

    def store(self, op: Op, x: TensorV, crd: Any, v: Any) -> None:
        if x.buffer is None:
            raise self.refuse(op, "a store to a coordinate tensor")
        e = self.element(op, x, crd)
        loaded = isinstance(v, Loaded) and v.event not in self.paired
        if x.buffer.memory == "register":
            self.regs[x.buffer.name][e] = v if _known_int(v) else UNKNOWN
            if loaded:
                self.pair(op, [v.event], [None], x)
            return
        ev = self.event(x, e, False)
        if loaded:
            self.pair(op, [v.event], [ev], x)
        else:
            self.site(op, "store", None, x, 1, [(None, ev)], [True])

    def pair(self, op: Op, loads: list[int], stores: list[int | None], dst: TensorV) -> None:
        """Values loaded from memory and stored directly: the loads' record becomes one copy
        (to registers where a store event is None).  A loaded value stored twice is paired
        with its first store; later ones are stores of their own."""
        for ld, st in zip(loads, stores):
            self.paired.add(ld)
            self.rekey.append((ld, st, op, dst))

    def load_vec(self, op: Op, x: TensorV) -> Any:
        if x.buffer is None:
            raise self.refuse(op, "a load from a coordinate tensor")
        els = (x.offset + _table(x.layout)).tolist()
        n = len(els)
        if x.buffer.memory == "register":
            return [self.regs[x.buffer.name].get(e, UNKNOWN) for e in els]
        evs = [self.event(x, e, True) for e in els]
        self.site(op, "load", x, None, 0, [(ev, None) for ev in evs], [True] * n)
        return LoadedVec(evs)

    def store_vec(self, op: Op, x: TensorV, v: Any) -> None:
        if x.buffer is None:
            raise self.refuse(op, "a store to a coordinate tensor")
        els = (x.offset + _table(x.layout)).tolist()
        n = len(els)
        loaded = isinstance(v, LoadedVec) and len(v.events) == n and not any(e in self.paired for e in v.events)
        if x.buffer.memory == "register":
            vs = v if isinstance(v, list) and len(v) == n else [UNKNOWN] * n
            for e, val in zip(els, vs):
                self.regs[x.buffer.name][e] = val if _known_int(val) else UNKNOWN
            if loaded:
                self.pair(op, v.events, [None] * n, x)
            return
        evs: list[int | None] = [self.event(x, e, False) for e in els]
        if loaded:
            self.pair(op, v.events, evs, x)
        else:
            self.site(op, "store", None, x, 0, [(None, ev) for ev in evs], [True] * n)

    def copy(self, op: Op, args: list[Any]) -> None:
        seg = re.search(r"operandSegmentSizes = array<i32: ([\d, ]+)>", op.props)
        sizes = [int(s) for s in seg.group(1).split(",")] if seg else [1, 1, 1, 0]
        if len(sizes) < 3 or sizes[1] != 1 or sizes[2] != 1:
            raise self.refuse(op, "a copy with auxiliary tensors is not handled")
        atom_v = args[0]
        atom = atom_v.atom if isinstance(atom_v, TiledCopyV) else atom_v
        if not isinstance(atom, Atom):
            raise self.refuse(op, "a copy atom the tracer does not know")
        src, dst = args[1], args[2]
        pred = args[3] if len(sizes) > 3 and sizes[3] and len(args) > 3 else None
        for x in (src, dst):
            self.tensor_arg(op, x)
            if x.buffer is None:
                raise self.refuse(op, "a copy from or to a coordinate tensor")
        n = int(L.size(src.layout))
        if int(L.size(dst.layout)) != n:
            raise self.refuse(op, f"source {src.layout} and destination {dst.layout} differ in size")
        a = atom.values
        if a < 1 or n % a:
            raise self.refuse(op, f"{n} values do not split into calls of {a} ({atom.bits}-bit copy)")
        calls = n // a
        on = [True] * calls
        if pred is not None:
            self.tensor_arg(op, pred)
            if pred.buffer is None or pred.buffer.memory != "register":
                raise self.refuse(op, "a predicate tensor outside registers")
            if int(L.size(pred.layout)) != calls:
                raise self.refuse(op, f"the predicate has {L.size(pred.layout)} entries for {calls} copy calls")
            store = self.regs[pred.buffer.name]
            p_el = (pred.offset + _table(pred.layout)).tolist()
            for k in range(calls):
                v = store.get(p_el[k], UNKNOWN)
                if not _known_int(v):
                    raise self.refuse(op, "a copy's predicate depends on data the tracer does not know")
                on[k] = bool(v)
        s_el = (src.offset + _table(src.layout)).tolist()
        d_el = (dst.offset + _table(dst.layout)).tolist()
        s_ev: list[int | None] = [None] * n
        d_ev: list[int | None] = [None] * n
        if src.buffer.memory != "register":
            s_ev = [self.event(src, e, True) for e in s_el]
        if dst.buffer.memory != "register":
            d_ev = [self.event(dst, e, False) for e in d_el]
        self.site(op, "cute.copy", src, dst, a, list(zip(s_ev, d_ev)), [on[i // a] for i in range(n)])
        if dst.buffer.memory == "register":
            store = self.regs[dst.buffer.name]
            for e in d_el:
                store[e] = UNKNOWN

    def site(self, op: Op, kind: str, src: TensorV | None, dst: TensorV | None, vec: int,
             pairs: list[tuple[int | None, int | None]], performed: list[bool]) -> None:
        self.site_values += len(pairs)
        if self.site_values > MAX_TRACE_RECORDS:  # one thread alone: refused before it eats the memory
            raise self.refuse(op, f"a thread makes more than {MAX_TRACE_RECORDS} accesses; the tracer records at "
                                  f"most {MAX_TRACE_RECORDS} per trace")
        self.records.append((op, kind, src, dst, vec, pairs, performed))

    # -- the host function --------------------------------------------------------------------
    def cuda(self, op: Op, args: list[Any], env: dict[str, Any], put: Callable[..., None]) -> None:
        name = op.name
        if name == "cuda.launch_cfg.create":
            put(("cfg", args))
            return
        if name == "cuda.launch_ex":
            cfg = args[0]
            callee = re.search(r"callee = @kernels::@([\w$.]+)", op.props)
            dims = cfg[1] if isinstance(cfg, tuple) and cfg[0] == "cfg" else [UNKNOWN] * 8
            block, grid = tuple(dims[0:3]), tuple(dims[4:7])
            if self.launch is None:
                self.launch = (callee.group(1) if callee else "", list(args[1:]), grid, block)
                self.launch_operands = list(op.operands[1:])
            self.launches.append(callee.group(1) if callee else "")
            put(*[UNKNOWN] * len(op.results))
            return
        for r in op.results:
            env[r] = UNKNOWN



TENSOR_OPS = {"cute.slice", "cute.tiled.copy.partition_S", "cute.tiled.copy.partition_D", "cute.local_tile",
              "cute.local_partition", "cute.zipped_divide", "cute.logical_divide", "cute.tiled_divide",
              "cute.flat_divide", "cute.composition", "cute.group_modes", "cute.append_to_rank",
              "cute.make_layout_like", "cute.filter_zeros"}


def has_hole_text(text: str) -> bool:
    return "?" in text


def _known_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (Loaded, LoadedVec))


def _scalar(v: Any) -> Any:
    while isinstance(v, tuple) and len(v) == 1:
        v = v[0]
    return v


def _coord(c: Any) -> Any:
    """An IR coordinate as threadmap's (a 1-tuple is its element)."""
    return _scalar(c)


_PATHS: dict[int, tuple[Any, list[tuple[tuple[int, ...], np.ndarray]]]] = {}


def _point(layout: Any, c: Any) -> Any:
    """``layout(c)``; an integer ``c`` of a plain layout is read from per-basis tables (a
    coordinate tensor's layout has basis strides: one table per basis path)."""
    c = _scalar(c)
    if not isinstance(c, (int, np.integer)) or not isinstance(layout, L.Layout):
        return layout(c)
    hit = _PATHS.get(id(layout))
    if hit is None or hit[0] is not layout:
        n = int(L.size(layout))
        if n > 1 << 20:
            return layout(c)
        paths: dict[tuple[int, ...], Any] = {}
        for d in leaves(layout.stride) if isinstance(layout.stride, tuple) else [layout.stride]:
            paths[d.path if isinstance(d, L.ScaledBasis) else ()] = True
        tables: list[tuple[tuple[int, ...], np.ndarray]] = []
        if set(paths) <= {()}:
            tables.append(((), _table(layout)))
        else:
            for path in paths:
                sub = L.Layout(layout.shape, _project(layout.stride, path))
                tables.append((path, np.asarray(sub.table(np.int64), dtype=np.int64).reshape(-1)))
        hit = _PATHS[id(layout)] = (layout, tables)
    i = int(c)
    if len(hit[1]) == 1 and hit[1][0][0] == ():
        return int(hit[1][0][1][i])
    return L.ArithTuple({p: int(t[i]) for p, t in hit[1] if p or int(t[i])})


def _path_tables(layout: Any) -> dict[tuple[int, ...], np.ndarray] | None:
    """A plain layout's values, one integer table per basis path (``()``: integer strides);
    None for a composed layout or one too large."""
    if not isinstance(layout, L.Layout) or int(L.size(layout)) > 1 << 20:
        return None
    if not int(L.size(layout)):
        return {}
    _point(layout, 0)
    hit = _PATHS.get(id(layout))
    if hit is None:
        return None
    return {p: t for p, t in hit[1]}


def _project(stride: Any, path: tuple[int, ...]) -> Any:
    """The integer strides along one basis path (other bases and integers as 0)."""
    if isinstance(stride, tuple):
        return tuple(_project(d, path) for d in stride)
    if isinstance(stride, L.ScaledBasis):
        return int(stride.value) if stride.path == path else 0
    return int(stride) if path == () else 0


_TABLES: dict[int, tuple[Any, np.ndarray]] = {}


def _table(layout: Any) -> np.ndarray:
    """``layout(i)`` for every index ``i`` (kept per layout object: the IR's layouts are shared)."""
    hit = _TABLES.get(id(layout))
    if hit is not None and hit[0] is layout:
        return hit[1]
    n = int(L.size(layout))
    if n > MAX_TRACE_RECORDS:  # each element would be an access of its own
        raise DslTraceError(f"a tensor of {n} elements is copied at once; the tracer handles at most "
                            f"{MAX_TRACE_RECORDS}")
    t = np.fromiter((int(layout(i)) for i in range(n)), dtype=np.int64, count=n) if n < 64 or not \
        isinstance(layout, L.Layout) else np.asarray(layout.table(np.int64), dtype=np.int64).reshape(-1)
    _TABLES[id(layout)] = (layout, t)
    return t


def _zero_underscores(c: Any) -> Any:
    """A slicing coordinate with every ``_`` as 0: the coordinate of the slice's first element."""
    if isinstance(c, tuple):
        return tuple(_zero_underscores(e) for e in c)
    return 0 if c is L._ else c


def _tiler(t: Any) -> Any:
    if isinstance(t, tuple):
        return tuple(L.Layout(x, 1) if isinstance(x, int) and not isinstance(x, bool) else x for x in t)
    return t


def _sub(a: Any, b: Any) -> Any:
    if isinstance(a, L.ArithTuple) or isinstance(b, L.ArithTuple) or isinstance(a, L.ScaledBasis) or \
            isinstance(b, L.ScaledBasis):
        return L.ArithTuple.of(a) + L.ArithTuple.of(_neg(b))
    return int(a) - int(b)


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return int(a) + int(b)
    return L.ArithTuple.of(a) + b


def _norm(x: Any) -> Any:
    """An offset or coordinate in one canonical form: an int, or an ArithTuple's nonzero terms."""
    if isinstance(x, (int, np.integer)):
        return int(x)
    terms = L.ArithTuple.of(x).terms
    out = {p: int(v) for p, v in terms.items() if int(v) != 0}
    return out if set(out) - {()} else out.get((), 0)


def _same(a: Any, b: Any) -> bool:
    return bool(_norm(a) == _norm(b))


def _neg(b: Any) -> Any:
    if isinstance(b, int):
        return -b
    t = L.ArithTuple.of(b)
    return L.ArithTuple({k: -v for k, v in t.terms.items()})


def _arith(t: Any, path: tuple[int, ...] = ()) -> Any:
    """A (nested) coordinate tuple as an :class:`ArithTuple` (an int stays an int)."""
    if not isinstance(t, tuple):
        return t if not path else L.ArithTuple({path: t})
    out = L.ArithTuple({})
    for i, e in enumerate(t):
        out = out + _arith(e, path + (i,))
    return out


def _as_tuple(off: Any, n: int) -> tuple[int, ...]:
    t = L.ArithTuple.of(off) if not isinstance(off, int) else None
    if t is None:
        return (int(off),) + (0,) * (n - 1)
    return tuple(int(t.get((k,))) for k in range(n))


# ------------------------------------------------------------------------------------------
# tracing a launch
# ------------------------------------------------------------------------------------------

def _fake(arg: TensorArg) -> Any:
    import cutlass
    from cutlass.cute.runtime import make_fake_tensor

    dsl_name = DSL_TYPES.get(arg.dtype)
    if dsl_name is None:
        raise DslTraceError(f"tensor {arg.name}: element type {arg.dtype!r} has no CuTe DSL type "
                            f"(known: {', '.join(DSL_TYPES)})")
    return make_fake_tensor(getattr(cutlass, dsl_name), tuple(arg.shape), tuple(arg.stride),
                            assumed_align=arg.align)


def trace_dsl(target: str, args: Mapping[str, TensorArg | int | bool], *, launcher: str | None = None,
              blocks: Sequence[int] | None = None) -> DslTrace:
    """Trace the kernel ``FILE.py:NAME`` launched by its ``@cute.jit`` launcher with ``args``
    (parameter name -> a :class:`TensorArg`, made a fake tensor of static shape, or a Python
    value); ``blocks``: the linear block ids to interpret (default every block)."""
    module, fn, kernel_name, path = load_target(target, launcher)
    params = _parameters(fn)
    given = dict(args)
    call: list[Any] = []
    named: dict[str, Any] = {}
    used: dict[int, TensorArg | int | bool] = {}
    for k, (pname, p) in enumerate(params):
        if pname in given:
            v = given.pop(pname)
            _check_argument(fn.__name__, pname, p.annotation, v)
        elif p.default is inspect.Parameter.empty:
            raise DslTraceError(f"{fn.__name__}: no value for its parameter {pname!r} (give {pname}=TENSOR or "
                                f"{pname}=INTEGER)")
        elif isinstance(p.default, int) and not _constexpr(p.annotation):
            v = p.default  # a runtime scalar with its default: the host function still takes it
        else:
            continue  # the DSL applies the default (a Constexpr's is no argument of the IR)
        used[k] = v
        value = _fake(v) if isinstance(v, TensorArg) else v
        # positionally while no parameter was skipped, then by name (keyword-only ones too)
        if p.kind == p.POSITIONAL_OR_KEYWORD and not named and len(call) == k:
            call.append(value)
        elif p.kind == p.POSITIONAL_ONLY:
            if len(call) != k:
                raise DslTraceError(f"{fn.__name__}: a positional-only parameter {pname!r} after one left to its "
                                    "default")
            call.append(value)
        else:
            named[pname] = value
    if given:
        raise DslTraceError(f"{fn.__name__} has no parameter {', '.join(sorted(given))} (its parameters: "
                            f"{', '.join(p for p, _ in params)})")
    text, printed = capture_ir(fn, call, named)
    ir = parse_ir(text)
    # the host function's parameters are the launcher's without its Constexpr ones
    dynamic = [used[k] for k, (_, p) in enumerate(params) if k in used and not _constexpr(p.annotation)]
    trace = interpret(ir, str(path), fn.__name__, kernel_name, dynamic, used, printed, blocks)
    if kernel_name is None:  # the IR's symbol (kernel_cutlass_NAME_<argument types>) as the module names it
        names = [n for n, v in vars(module).items() if _kind(v) == "kernel"
                 and trace.kernel.startswith(f"kernel_cutlass_{n}_")]
        if names:
            trace.kernel = max(names, key=len)
    return trace


def _parameters(fn: Any) -> list[tuple[str, inspect.Parameter]]:
    """The launcher's parameters; ``*args``/``**kwargs`` are refused (the tracer passes each
    argument by its name)."""
    params = list(inspect.signature(fn.__wrapped__).parameters.items())
    for pname, p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            stars = "*" if p.kind == p.VAR_POSITIONAL else "**"
            raise DslTraceError(f"{fn.__name__}: its parameter {stars}{pname} takes any number of arguments; the "
                                "tracer needs a launcher whose parameters are all named")
    return params


def _check_argument(launcher: str, pname: str, annotation: Any, v: TensorArg | int | bool) -> None:
    """A tensor for a ``cute.Tensor`` parameter and a Python value for any other, said before the
    DSL says it about threadmap's own call."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "") or repr(annotation)
    tensor = annotation is not inspect.Parameter.empty and re.search(r"\bTensor\b", text) is not None
    if tensor and not isinstance(v, TensorArg):
        raise DslTraceError(f"{launcher}: its parameter {pname!r} is a cute.Tensor, given {v!r}: give "
                            f"{pname}=TENSOR (a global tensor of the spec)")
    if isinstance(v, TensorArg) and annotation is not inspect.Parameter.empty and not tensor:
        raise DslTraceError(f"{launcher}: its parameter {pname!r} is annotated {text}, given the tensor {v.name}: give "
                            f"{pname}=INTEGER (or true/false)")


def _constexpr(annotation: Any) -> bool:
    """A ``cutlass.Constexpr`` parameter (compile-time, not an argument of the IR's host function)."""
    if isinstance(annotation, str):
        return "Constexpr" in annotation
    return "Constexpr" in getattr(annotation, "__name__", "") or "Constexpr" in repr(annotation)


def interpret(ir: Ir, source: str, launcher: str, kernel_name: str | None, dynamic: list[TensorArg | int | bool],
              used: dict[int, TensorArg | int | bool], printed: str, blocks: Sequence[int] | None) -> DslTrace:
    """Run the host function to its launch (its parameters: ``dynamic``, the launcher's
    arguments that are not ``Constexpr``), then the kernel per (block, thread)."""
    module = ir.ops[0]
    funcs = [o for blk in module.regions[0] for o in blk.ops if o.name == "func.func"]
    gpu = [o for blk in module.regions[0] for o in blk.ops if o.name == "gpu.module"]
    kernels = {re.search(r'sym_name = "([^"]+)"', o.props).group(1): o  # type: ignore[union-attr]
               for g in gpu for blk in g.regions[0] for o in blk.ops if o.name in ("cuda.kernel", "gpu.func")}
    if not funcs:
        raise DslTraceError(f"{launcher}: the DSL's IR has no host function")
    host = funcs[0]
    it = Interpreter(ir, source)
    it.strict = False
    entry = host.regions[0][0]
    env: dict[str, Any] = {}
    if len(entry.args) != len(dynamic):
        raise DslTraceError(f"{launcher}: the DSL's host function takes {len(entry.args)} arguments for the "
                            f"launcher's {len(dynamic)} that are not Constexpr")
    for (a, ty), v in zip(entry.args, dynamic):
        t = it.ti(ty)
        if t.kind == "memref" and isinstance(v, TensorArg):
            env[a] = TensorV(Buffer(v.name, "global", t.bits), t.bits, 0, it.layout_of(host, t.layout))
        elif t.kind == "int" and isinstance(v, (int, bool)) and not isinstance(v, TensorArg):
            env[a] = int(v)
        else:
            raise DslTraceError(f"{launcher}: a host argument of type {t.text} was given {v!r}; the tracer passes "
                                "spec tensors (memrefs) and integers (int and boolean arguments)")
    it.guarded(entry.ops, env)
    if it.launch is None:
        raise DslTraceError(f"{launcher} launches no kernel")
    callee, kargs, grid_v, block_v = it.launch
    if kernel_name is not None:
        wanted = [n for n in it.launches if re.search(rf"(^|_)kernel_cutlass_{re.escape(kernel_name)}_", n)
                  or n.endswith(kernel_name)]
        if not wanted:
            raise DslTraceError(f"{launcher} does not launch {kernel_name} (it launches {', '.join(it.launches)})")
        callee = wanted[0]
        if callee != it.launch[0]:
            raise DslTraceError(f"{launcher} launches several kernels; the tracer follows the first, "
                                f"{it.launch[0]}, not {kernel_name}")
    elif len(set(it.launches)) > 1:
        raise DslTraceError(f"{launcher} launches {len(set(it.launches))} kernels: name the one to trace")
    kop = kernels.get(callee)
    if kop is None:
        raise DslTraceError(f"{launcher}: the launched kernel {callee} is not in the IR")
    facts = re.search(r"exact_grid_dim = array<i64: (\d+), (\d+), (\d+)>", kop.attrs)
    bfacts = re.search(r"exact_block_dim = array<i64: (\d+), (\d+), (\d+)>", kop.attrs)
    grid = _dims(grid_v, facts, "grid", launcher)
    dims = _dims(block_v, bfacts, "block", launcher)
    kentry = kop.regions[0][0]
    if len(kentry.args) != len(kargs):
        raise DslTraceError(f"{launcher}: {len(kargs)} launch arguments for {len(kentry.args)} kernel parameters")
    base: dict[str, Any] = {}
    for k, ((a, ty), v) in enumerate(zip(kentry.args, kargs)):
        if v is UNKNOWN:
            made = it.unknown_from.get(it.launch_operands[k], "") if k < len(it.launch_operands) else ""
            why = f" (made by {made}, which the tracer does not follow)" if made else ""
            raise DslTraceError(f"{launcher}: kernel argument {k} ({it.ti(ty).text}) is not known to the "
                                f"tracer{why}")
        base[a] = v
    nblocks = grid[0] * grid[1] * grid[2]
    chosen = list(range(nblocks)) if blocks is None else sorted(set(int(b) for b in blocks))
    bad = [b for b in chosen if not 0 <= b < nblocks]
    if bad:
        raise DslTraceError(f"block {bad[0]} is outside the kernel's grid {grid}")
    threads = dims[0] * dims[1] * dims[2]
    if len(chosen) * threads > MAX_THREAD_RUNS:
        raise DslTraceError(f"{len(chosen)} blocks of {threads} threads: the tracer interprets at most "
                            f"{MAX_THREAD_RUNS} threads; choose fewer blocks")
    kit = Interpreter(ir, source)
    kit.grid, kit.dims = grid, dims
    stages: dict[str, TracedStage] = {}
    order: dict[int, int] = {}
    _number(kentry.ops, order)
    counters: dict[tuple[str, int, int], list[int]] = {}
    uniform = _uniform(kentry.ops)
    cost = _Cost(len(chosen) * threads, _shown(source))
    for b in chosen:
        kit.block_xyz = (b % grid[0], (b // grid[0]) % grid[1], b // (grid[0] * grid[1]))
        kit.block_id = b
        kit.smem = {}
        block_env: dict[str, Any] = {}
        for tid in range(threads):
            kit.thread_xyz = (tid % dims[0], (tid // dims[0]) % dims[1], tid // (dims[0] * dims[1]))
            kit.thread_id = tid
            kit.ops_run = 0
            kit.regs = {}
            kit.events, kit.records, kit.rekey, kit.paired = [], [], [], set()
            kit.site_values = 0
            # the block's first thread runs everything; the others reuse what does not
            # depend on the thread (its results are the same for every thread of the block)
            kit.skip = set() if tid == 0 else uniform
            env = dict(base) if tid == 0 else dict(block_env)
            kit.guarded(kentry.ops, env)
            if tid == 0:
                block_env = {r: env[r] for r in list(base) + [r for op in kentry.ops if id(op) in uniform
                                                              for r in op.results] if r in env}
            cost.thread_done(kit.ops_run, _collect(kit, stages, order, counters, b, tid))
    out = sorted(stages.values(), key=lambda s: (s.index, s.where))
    for k, s in enumerate(out):
        s.index = k
    args_out = dict(used)
    return DslTrace(source, kernel_name or callee, grid, dims, chosen, args_out, out, sorted(set(kit.barriers)),
                    printed)


class _Cost:
    """The trace's running cost, checked after every thread against :data:`MAX_TRACE_OPS` and
    :data:`MAX_TRACE_RECORDS`: the totals so far plus, for every thread left, the cheapest
    thread seen (threads of one kernel mostly cost alike; a first thread doing the block's
    extra work does not make the projection refuse a trace that fits)."""

    def __init__(self, todo: int, source: str) -> None:
        self.todo, self.source = todo, source
        self.done = self.ops = self.records = 0
        self.min_ops = self.min_records = -1

    def thread_done(self, ops: int, records: int) -> None:
        self.done += 1
        self.ops += ops
        self.records += records
        self.min_ops = ops if self.min_ops < 0 else min(self.min_ops, ops)
        self.min_records = records if self.min_records < 0 else min(self.min_records, records)
        left = self.todo - self.done
        for what, total, least, cap, unit in (
                ("operations", self.ops, self.min_ops, MAX_TRACE_OPS, "operations run"),
                ("accesses", self.records, self.min_records, MAX_TRACE_RECORDS, "accesses recorded")):
            projected = total + least * left
            if projected > cap:
                first = "the first thread" if self.done == 1 else f"the first {self.done} threads"
                raise DslTraceError(
                    f"{self.source}: the trace would need about {projected} {what} ({total} in {first} of "
                    f"{self.todo}); the tracer allows {cap} {unit} per trace: trace fewer blocks (--dsl-blocks) "
                    "or smaller sizes (--sizes)")


def _dims(values: tuple[Any, ...], facts: Any, what: str, launcher: str) -> tuple[int, int, int]:
    if all(_known_int(v) for v in values) and len(values) == 3:
        got = tuple(int(v) for v in values)
        if facts and tuple(int(x) for x in facts.groups()) != got:
            raise DslTraceError(f"{launcher}: the launch's {what} {got} and the kernel's {facts.groups()} differ")
        return got  # type: ignore[return-value]
    if facts:
        return tuple(int(x) for x in facts.groups())  # type: ignore[return-value]
    raise DslTraceError(f"{launcher}: the launch's {what} dimensions are not static (give static sizes)")


#: operations whose value differs between the threads of a block
THREAD_SOURCES = {"nvvm.read.ptx.sreg.tid.x", "nvvm.read.ptx.sreg.tid.y", "nvvm.read.ptx.sreg.tid.z",
                  "nvvm.read.ptx.sreg.laneid", "nvvm.read.ptx.sreg.warpid"}


def _uniform(ops: list[Op]) -> set[int]:
    """The top-level operations a block's threads share: no thread index among their inputs,
    no regions, no memory access or side effect, no register allocation (per thread)."""
    varying: set[str] = set()
    out: set[int] = set()
    for op in ops:
        per_thread = (op.regions or not op.results or op.name in THREAD_SOURCES
                      or op.name.startswith(("cute.memref.load", "cute.copy"))
                      or (op.name == "cute.memref.alloca" and "smem" not in str(op.attrs))
                      or any(x in varying for x in op.operands))
        if per_thread:
            varying.update(op.results)
        else:
            out.add(id(op))
    return out


def _number(ops: list[Op], order: dict[int, int]) -> None:
    """Program order of every operation (nested regions in place)."""
    for op in ops:
        order[id(op)] = len(order)
        for region in op.regions:
            for blk in region:
                _number(blk.ops, order)


def _collect(kit: Interpreter, stages: dict[str, TracedStage], order: dict[int, int],
             counters: dict[tuple[str, int, int], list[int]], block: int, thread: int) -> int:
    """One thread's records into the stages.  A load whose values are all stored directly
    becomes a copy at the store (an element copy; a vector copy for ``load()`` then
    ``store()``); a stage is a source line, kind and pair of buffers (the operation's place
    in the IR without a line), numbered in program order; value and instruction numbers
    count per (stage, thread) over every execution of the site."""
    into: dict[int, tuple[int | None, Op, TensorV]] = {ld: (st, op, dst) for ld, st, op, dst in kit.rekey}
    recorded = 0
    for op, kind, src, dst, vec, pairs, performed in kit.records:
        sop, skind = op, kind
        if kind == "load" and all(ld in into for ld, _ in pairs):
            _, sop, dtv = into[pairs[0][0]]  # type: ignore[index]
            pairs = [(ld, into[ld][0]) for ld, _ in pairs]  # type: ignore[index]
            dst = dtv
            skind = "element copy" if vec == 1 else "vector copy"
        where = kit.where(sop)
        key = f"{where}|{skind}|{_sides(src, dst)}" if where != kit.source else f"op{order[id(sop)]}|{skind}"
        st = stages.get(key)
        if st is None:
            st = TracedStage(order[id(sop)], where, skind,
                             Side(src.buffer, src.bits) if src is not None and src.buffer else None,
                             Side(dst.buffer, dst.bits) if dst is not None and dst.buffer else None, vec)
            stages[key] = st
        st.index = min(st.index, order[id(sop)])
        cnt = counters.setdefault((key, block, thread), [0])
        for (s, d), on in zip(pairs, performed):
            v = cnt[0]
            cnt[0] += 1
            if on:
                recorded += 1
                st.rows.append((block, thread, v // vec if vec else -1, v,
                                kit.events[s][1] if s is not None else -1,
                                kit.events[d][1] if d is not None else -1, True))
    return recorded


def _sides(src: TensorV | None, dst: TensorV | None) -> str:
    return f"{src.buffer.name if src and src.buffer else '-'}>{dst.buffer.name if dst and dst.buffer else '-'}"


# ------------------------------------------------------------------------------------------
# records for threadmap diff
# ------------------------------------------------------------------------------------------

def spec_arguments(model: KernelModel, given: Mapping[str, str]) -> dict[str, TensorArg | int | bool]:
    """Launcher arguments from the spec's tensors: ``given`` maps a parameter to a global
    tensor name of the spec or to an integer (``"128"``, ``"true"``)."""
    spec = model.loaded.spec
    out: dict[str, TensorArg | int | bool] = {}
    for pname, what in given.items():
        if re.fullmatch(r"-?\d+", what):
            out[pname] = int(what)
            continue
        if what in ("true", "false", "True", "False"):
            out[pname] = what.lower() == "true"
            continue
        tm = model.tensors.get(what)
        if tm is None:
            raise DslTraceError(f"--dsl-args {pname}={what}: the spec has no tensor {what!r} (its tensors: "
                                f"{', '.join(model.tensors)})")
        if tm.memory != "global":
            raise DslTraceError(f"--dsl-args {pname}={what}: {what} is a shared tensor; launcher arguments are global")
        strides = tm.strides
        if strides is None:
            raise DslTraceError(f"--dsl-args {pname}={what}: {what}'s layout {tm.layout} is not a plain strided "
                                "layout (the launcher gets make_fake_tensor(dtype, shape, stride))")
        elem = spec.tensors[what].element or spec.element
        out[pname] = TensorArg(what, elem, tuple(tm.shape), strides, tm.align)
    return out


#: elements of a spec tensor mapped back to coordinates through a full table at most (about 60
#: bytes each); a tensor whose strides nest (a compact or padded layout) is inverted by
#: arithmetic instead, whatever its size
MAX_INVERSE_TABLE = 1 << 22


def _nested_strides(shape: tuple[int, ...], strides: tuple[int, ...] | None) -> bool:
    """Whether ``offset = sum c_k * d_k`` is one-to-one and inverted greedily: each stride of a
    mode of extent > 1 is positive and larger than the largest offset the smaller ones reach."""
    if strides is None:
        return False
    reach = 0
    for n, d in sorted(((n, d) for n, d in zip(shape, strides) if n > 1), key=lambda x: x[1]):
        if d <= reach:
            return False
        reach += (n - 1) * d
    return True


def _inverse(model: KernelModel, name: str, cache: dict[str, Any]) -> Any:
    """element offset (in the tensor's buffer) -> top-level coordinate, for one spec tensor:
    ``("strides", offset, shape, strides)`` for a tensor with nested strides, else a table of
    every element's offset, sorted, with its coordinate."""
    hit = cache.get(name)
    if hit is not None:
        return hit
    tm = model.tensors[name]
    shape = tuple(int(s) for s in tm.shape)
    if _nested_strides(shape, tm.strides):
        table: Any = ("strides", tm.offset, shape, tm.strides)
        cache[name] = table
        return table
    n = int(np.prod(shape, dtype=object))
    if n > MAX_INVERSE_TABLE:
        raise DslTraceError(f"tensor {name} has {n} elements and a layout ({tm.layout}) whose offsets the trace "
                            f"maps back to coordinates through a table of at most {MAX_INVERSE_TABLE} (give smaller "
                            "sizes)")
    grids = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)
    offs = np.asarray(tm.offsets(tuple(grids)), dtype=np.int64).reshape(-1) + tm.offset
    order = np.argsort(offs, kind="stable")
    table = (offs[order], grids[:, order])
    cache[name] = table
    return table


def _coords_of(table: Any, elements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The coordinates of ``elements`` (element offsets) and whether each is an element."""
    if isinstance(table[0], str):  # ("strides", offset, shape, strides)
        _, offset, shape, strides = table
        rest = np.asarray(elements, dtype=np.int64) - offset
        found = rest >= 0
        coords = np.zeros((len(shape), len(rest)), dtype=np.int64)
        for k in sorted(range(len(shape)), key=lambda k: -strides[k]):
            if shape[k] > 1:
                coords[k] = np.clip(rest // strides[k], 0, shape[k] - 1)
                rest = rest - coords[k] * strides[k]
        return coords, found & (rest == 0)
    sorted_offs, grids = table
    pos = np.searchsorted(sorted_offs, elements)
    pos_c = np.minimum(pos, len(sorted_offs) - 1)
    found = (pos < len(sorted_offs)) & (sorted_offs[pos_c] == elements)
    return grids[:, pos_c], found


def _side_rule(sides: list[tuple[str, str, Any]], side: str | None) -> str | None:
    """The side ``threadmap diff`` compares: the one asked for, else the first global one,
    else the first with a tensor (the rule of :func:`threadmap.gpu.log.diff_log`)."""
    if side in ("src", "dst"):
        return side
    for which, mem, _ in sides:
        if mem == "global":
            return which
    for which, _mem, t in sides:
        if t is not None:
            return which
    return None


def trace_log(trace: DslTrace, model: KernelModel, *, side: str | None = None,
              shared: Mapping[str, str] | None = None) -> tuple[list[str], list[str]]:
    """The trace as ``threadmap_probe.h`` records against ``model`` (the lines), and notes on
    what cannot be compared (a stage that moves other tensors than the spec's stage, grid or
    CTA size differences).  Trace stage ``k`` is the spec's ``k``-th copy stage."""
    notes: list[str] = []
    copies = model.copies()
    if trace.threads != model.threads:
        notes.append(f"the kernel runs {trace.threads} threads per block {trace.block}, the spec {model.threads}")
    if tuple(trace.grid) != tuple(model.grid):
        notes.append(f"the kernel's grid is {trace.grid}, the spec's {model.grid}")
    smem_map = dict(shared or {})
    cache: dict[str, Any] = {}
    lines: list[str] = []
    gx, gy = trace.grid[0], trace.grid[1]
    last = max((c.index for c in copies), default=-1)
    for k, st in enumerate(trace.stages):
        cp = copies[k] if k < len(copies) else None
        index = cp.index if cp is not None else last + 1 + (k - len(copies))
        tsides = [(w, s.buffer.memory if s else "register", s) for w, s in (("src", st.src), ("dst", st.dst))]
        if cp is not None:
            which = _side_rule([(sd.which, sd.memory, sd.tensor) for sd in cp.sides()], side)
        else:
            which = _side_rule(tsides, side)
        if which is None:
            continue
        ts = st.src if which == "src" else st.dst
        spec_side = (cp.src if which == "src" else cp.dst) if cp is not None else None
        label = f"stage {index} ({st.op} at {st.where})"
        if ts is None:
            notes.append(f"{label}: the spec compares its {which} side ({spec_side.name if spec_side else '-'}), "
                         "which the kernel's copy keeps in registers")
            continue
        name: str | None = None
        if ts.buffer.memory == "global":
            name = ts.buffer.name
        elif ts.buffer.memory == "shared":
            # an allocation is one spec buffer; each stage reads it through its own view
            name = smem_map.get(ts.buffer.name)
            if spec_side is not None and spec_side.memory == "shared" and spec_side.name in model.tensors:
                if name is None:
                    name = smem_map[ts.buffer.name] = spec_side.name
                if name in model.tensors and model.tensors[name].buffer == model.tensors[spec_side.name].buffer:
                    name = spec_side.name
        if name is None or name not in model.tensors:
            notes.append(f"{label}: its {which} side ({ts.buffer.memory} {ts.buffer.name}) maps to no spec tensor")
            continue
        if spec_side is not None and spec_side.name != name:
            notes.append(f"{label}: the kernel's {which} side moves {name}, the spec's stage {index} {spec_side.name}")
        if ts.buffer.memory == "shared" and model.tensors[name].elem_bits != ts.elem_bits:
            notes.append(f"{label}: {name} has {model.tensors[name].elem_bits}-bit elements, the kernel's "
                         f"{ts.buffer.name} {ts.elem_bits}-bit")
        if not st.rows:
            continue
        rows = np.asarray([r[:6] for r in st.rows], dtype=np.int64)
        col = 4 if which == "src" else 5
        coords, found = _coords_of(_inverse(model, name, cache), rows[:, col])
        if not found.all():
            bad = int(rows[np.flatnonzero(~found)[0], col])
            notes.append(f"{label}: {int((~found).sum())} accesses land outside {name} (the first at element {bad})")
        for r, c, ok in zip(rows.tolist(), coords.T.tolist(), found.tolist()):
            if not ok:
                continue
            b = r[0]
            lines.append(f"TM stage={index} block={b % gx},{(b // gx) % gy},{b // (gx * gy)} tid={r[1]} "
                         f"iter={r[2]} value={r[3]} coord={','.join(map(str, c))}")
    if len(trace.stages) != len(copies):
        notes.append(f"the kernel has {len(trace.stages)} copy sites, the spec {len(copies)} copy stages")
    return lines, notes


class DslDiff(LogDiff):
    """``threadmap diff --dsl``: the log diff of the traced records, and what the records
    cannot show (notes: a stage moving another tensor, different grids)."""

    dsl: str = ""
    kernel: str = ""
    traced_blocks: list[int] = Field(default_factory=list)
    stages: list[str] = Field(default_factory=list, description="the kernel's copy sites, in stage order")
    notes: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return super().ok and not self.notes


def diff_dsl(model: KernelModel, target: str, args: Mapping[str, str], *, launcher: str | None = None,
             side: str | None = None, stage: int | None = None, whole_grid: bool = False,
             blocks: Sequence[int] | None = None, shared: Mapping[str, str] | None = None,
             keep_log: Path | None = None) -> DslDiff:
    """Trace ``target`` with launcher arguments from the spec (``args``: parameter -> spec
    tensor or integer; a parameter named as a spec tensor needs no entry) and diff the records
    with the simulation exactly as ``threadmap diff SPEC LOG`` does."""
    _, fn, _, _ = load_target(target, launcher)
    params = _parameters(fn)
    given = dict(args)
    for pname, _p in params:
        if pname not in given and pname in model.tensors and model.tensors[pname].memory == "global":
            given[pname] = pname
    unknown = [p for p in given if p not in dict(params)]
    if unknown:
        raise DslTraceError(f"--dsl-args {unknown[0]}: {fn.__name__} has no such parameter "
                            f"(its parameters: {', '.join(p for p, _ in params)})")
    missing = [p for p, v in params if p not in given and v.default is inspect.Parameter.empty]
    if missing:
        raise DslTraceError(f"--dsl-args: no value for {fn.__name__}'s parameter {missing[0]!r}: give "
                            f"{missing[0]}=TENSOR (one of the spec's global tensors: "
                            f"{', '.join(n for n, t in model.tensors.items() if t.memory == 'global')}) or "
                            f"{missing[0]}=INTEGER")
    trace = trace_dsl(target, spec_arguments(model, given), launcher=launcher, blocks=blocks)
    return diff_trace(trace, model, target=target, side=side, stage=stage, whole_grid=whole_grid, shared=shared,
                      keep_log=keep_log)


def diff_trace(trace: DslTrace, model: KernelModel, *, target: str = "", side: str | None = None,
               stage: int | None = None, whole_grid: bool = False, shared: Mapping[str, str] | None = None,
               keep_log: Path | None = None) -> DslDiff:
    """Diff a trace with ``model`` through :func:`threadmap.gpu.log.diff_log` (its records
    written as the log ``threadmap_probe.h`` prints): one trace can be diffed with several
    specs of the same tensors."""
    _check_shared(trace, model, shared or {})
    lines, notes = trace_log(trace, model, side=side, shared=shared)
    copies = model.copies()
    stages = [f"stage {copies[k].index if k < len(copies) else '-'}: {s.op} at {s.where}"
              for k, s in enumerate(trace.stages)]
    if not lines:
        # nothing to diff is the kernel's finding (it accesses nothing, or only outside the
        # spec's tensors: an out-of-bounds write), not bad input: a report that fails
        why = "the trace has no access to compare with the spec" + ("" if notes else ": the kernel copies nothing")
        return DslDiff(spec=str(model.loaded.path), log=f"dsl:{target or trace.source}", sizes=dict(model.env),
                       side={}, lines=0, records=0, dsl=target or trace.source, kernel=trace.kernel,
                       traced_blocks=trace.blocks, stages=stages, notes=[*notes, why])
    with tempfile.TemporaryDirectory(prefix="threadmap-dsl-log-") as tmp:
        log = keep_log or Path(tmp) / "trace.log"
        try:
            log.write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as e:
            raise DslTraceError(f"--dsl-log {log}: cannot write: {e.strerror or e}") from None
        d = diff_log(model, log, stage=stage, side=side, whole_grid=whole_grid)
    out = DslDiff(**d.model_dump(), dsl=target or trace.source, kernel=trace.kernel, traced_blocks=trace.blocks,
                  stages=stages, notes=notes)
    out.log = f"dsl:{target or trace.source}" if keep_log is None else str(keep_log)
    if keep_log is None:
        for f in out.findings:  # lines of a file that is gone
            f.line = None
    return out


def _check_shared(trace: DslTrace, model: KernelModel, shared: Mapping[str, str]) -> None:
    """``--dsl-shared ALLOCATION=TENSOR``: an allocation the traced copies use, a shared tensor
    of the spec (a mistyped name would otherwise only show as a note, or not at all)."""
    allocs = sorted({s.buffer.name for st in trace.stages for s in (st.src, st.dst)
                     if s is not None and s.buffer.memory == "shared"}, key=lambda n: (len(n), n))
    spec_shared = [n for n, tm in model.tensors.items() if tm.memory == "shared"]
    for alloc, name in shared.items():
        if alloc not in allocs:
            raise DslTraceError(f"--dsl-shared {alloc}={name}: the kernel's copies use no shared allocation "
                                f"{alloc!r} (they use: {', '.join(allocs) or 'none'})")
        if name not in spec_shared:
            what = "a global tensor" if name in model.tensors else "no tensor"
            raise DslTraceError(f"--dsl-shared {alloc}={name}: {name} is {what} of the spec (its shared tensors: "
                                f"{', '.join(spec_shared) or 'none'})")


def render_dsl_diff(d: DslDiff, console: Any) -> None:
    """The log diff's table, after the kernel's copy sites and what the records cannot show."""
    from rich.markup import escape

    from threadmap.gpu.formats import render_log_diff

    console.print(f"[bold]traced[/bold] {escape(d.dsl)} ({escape(d.kernel[:80])}): blocks "
                  f"{_ranges(d.traced_blocks)}; copy sites:")
    for line in d.stages:
        console.print(f"  {escape(line)}")
    render_log_diff(d, console)
    for n in d.notes:
        console.print(f"[red]note: {escape(n)}[/red]")


def _ranges(xs: list[int]) -> str:
    if not xs:
        return "none"
    out, start, prev = [], xs[0], xs[0]
    for x in xs[1:] + [None]:  # type: ignore[list-item]
        if x is not None and x == prev + 1:
            prev = x
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if x is not None:
            start = prev = x
    return ",".join(out)
