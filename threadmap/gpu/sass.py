"""SASS as ``cuobjdump -sass`` prints it: kernels, their memory instructions and loops.

A pure reader of the disassembler's text (no GPU, no CUDA tools: :mod:`threadmap.gpu.toolchain`
runs the disassembler).  Every memory instruction of a kernel is read as a
:class:`MemoryInstruction`: the memory it touches (``global``, ``shared``, ``generic``,
``local``, ``tensor``), its direction (``load``, ``store`` or ``copy`` for the global-to-shared
``LDGSTS`` and the TMA copies), its width per thread in bits, its guard predicate and whether
a backward branch makes it part of a loop.

Widths are the opcode's modifiers: ``.256``/``.128``/``.64`` are 256/128/64 bits, ``.U8``/``.S8`` 8,
``.U16``/``.S16`` 16, no width modifier 32 (``LDS``, ``STG.E``); ``LDSM``/``STSM`` move 8x8
matrices of 16-bit elements, each lane giving one 16-byte row address (``.4``, ``.2``, ``.1``
matrices: 128, 64, 32 bits per lane).  An instruction guarded by ``@!PT`` never executes
(nvcc pads with such loads) and is left out.  A *loop* is a backward branch ``BRA target``
with ``target`` below it (the ``BRA`` to itself after ``EXIT`` is not one): every instruction
from ``target`` to the branch is inside it, and its static count is not how often it is issued.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Literal

Space = Literal["global", "shared", "generic", "local", "tensor"]
Direction = Literal["load", "store", "copy"]

#: opcode -> (memory space, direction)
MEMORY_OPCODES: dict[str, tuple[Space, Direction]] = {
    "LDG": ("global", "load"), "STG": ("global", "store"),
    "LDS": ("shared", "load"), "STS": ("shared", "store"),
    "LDSM": ("shared", "load"), "STSM": ("shared", "store"),
    "LD": ("generic", "load"), "ST": ("generic", "store"),
    "LDL": ("local", "load"), "STL": ("local", "store"),
    "LDGSTS": ("global", "copy"),
    "UTMALDG": ("tensor", "copy"), "UTMASTG": ("tensor", "copy"), "UBLKCP": ("tensor", "copy"),
}
#: instructions that touch memory but are not modelled as accesses (atomics, reductions)
UNMODELLED_OPCODES = frozenset({"ATOM", "ATOMS", "ATOMG", "RED", "REDG", "UTMAREDG", "UTMAPF", "CCTL"})

_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?P<text>.*?)\s*;?\s*(/\*.*\*/)?\s*$")
_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_ARCH = re.compile(r"code for (sm_\w+)|arch = (sm_\w+)")
_BRANCH_TARGET = re.compile(r"\b0x([0-9a-f]+)\b")


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction: its address, guard (``P0``, ``!P1``; empty when unguarded),
    opcode, modifiers and operand text."""

    address: int
    guard: str
    opcode: str
    modifiers: tuple[str, ...]
    operands: str

    @property
    def text(self) -> str:
        g = f"@{self.guard} " if self.guard else ""
        return f"{g}{'.'.join((self.opcode, *self.modifiers))} {self.operands}".strip()


@dataclass(frozen=True)
class MemoryInstruction:
    """A memory instruction of a kernel, in program order (``index``: its place among the
    kernel's memory instructions)."""

    index: int
    instruction: Instruction
    space: Space
    direction: Direction
    bits: int              # bits per thread (per lane row address for LDSM/STSM)
    in_loop: bool

    @property
    def opcode(self) -> str:
        return self.instruction.opcode

    @property
    def name(self) -> str:
        """The opcode with its width, as profilers and docs write it: ``LDS.128``, ``STG.32``."""
        return f"{self.opcode}.{self.bits}"

    @property
    def predicated(self) -> bool:
        return bool(self.instruction.guard)


@dataclass
class Kernel:
    """One kernel's SASS: its (mangled) name, architecture and instructions in address order."""

    name: str
    arch: str
    instructions: list[Instruction] = field(default_factory=list)
    demangled: str = ""

    def loops(self) -> list[tuple[int, int]]:
        """``(first, last)`` addresses of every backward branch's body."""
        out = []
        for ins in self.instructions:
            if ins.opcode in ("BRA", "JMP"):
                m = _BRANCH_TARGET.search(ins.operands)
                if m:
                    target = int(m.group(1), 16)
                    if target < ins.address:
                        out.append((target, ins.address))
        return out

    def memory(self) -> list[MemoryInstruction]:
        """The memory instructions (never-executed ``@!PT`` ones left out), in program order."""
        loops = self.loops()
        out: list[MemoryInstruction] = []
        for ins in self.instructions:
            kind = MEMORY_OPCODES.get(ins.opcode)
            if kind is None or ins.guard == "!PT":
                continue
            out.append(MemoryInstruction(index=len(out), instruction=ins, space=kind[0], direction=kind[1],
                                         bits=access_bits(ins.opcode, ins.modifiers),
                                         in_loop=any(a <= ins.address <= b for a, b in loops)))
        return out

    def unmodelled(self) -> list[Instruction]:
        """Memory instructions the model has no side for (atomics, reductions, prefetches)."""
        return [i for i in self.instructions if i.opcode in UNMODELLED_OPCODES and i.guard != "!PT"]

    def matches(self, substring: str) -> bool:
        return substring in self.name or (bool(self.demangled) and substring in self.demangled)

    def named(self, name: str) -> bool:
        """Whether ``name`` is the kernel's whole name: mangled, demangled, or demangled without
        its parameters and return type (``k``, ``k<3>`` for ``void k<3>(float*)``)."""
        base = self.demangled.split("(")[0].removeprefix("void ").strip()
        return name in (self.name, self.demangled) or (bool(base) and name == base)


def access_bits(opcode: str, modifiers: tuple[str, ...]) -> int:
    """Bits per thread of a memory instruction from its modifiers (see the module docstring)."""
    mods = set(modifiers)
    if opcode in ("LDSM", "STSM"):
        count = next((int(m) for m in reversed(modifiers) if m in ("1", "2", "4")), 1)
        return 32 * count
    if "256" in mods:  # sm_100's LDG.E.ENL2.256 (ld.global.v8.b32)
        return 256
    if "128" in mods:
        return 128
    if "64" in mods:
        return 64
    if mods & {"U16", "S16"}:
        return 16
    if mods & {"U8", "S8"}:
        return 8
    return 32


def parse_instruction(address: int, text: str) -> Instruction | None:
    """One instruction's text (``@P0 LDG.E.128 R4, desc[UR4][R2.64]``); None for a non-instruction."""
    text = text.strip().rstrip(";").strip()
    if not text:
        return None
    guard = ""
    if text.startswith("@"):
        guard, _, text = text[1:].partition(" ")
        text = text.strip()
    head, _, operands = text.partition(" ")
    parts = head.split(".")
    if not parts[0] or not parts[0][0].isalpha():
        return None
    return Instruction(address=address, guard=guard, opcode=parts[0], modifiers=tuple(parts[1:]),
                       operands=operands.strip())


#: the line breaks of ``str.splitlines`` other than ``\n`` (cuobjdump prints none of them)
_OTHER_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _marker_lines(text: str) -> list[tuple[int, int, str, str]]:
    """``(start, end, kind, value)`` of every line of ``text`` (split at newlines only) that
    :func:`parse_sass` reads as an architecture (``kind`` "arch") or a function header
    ("function"), in order: only lines holding ``code for``, ``arch =`` or ``Function``
    can be either, and those are found by substring search."""
    ends: dict[int, int] = {}
    for needle in ("code for ", "arch = ", "Function"):
        i = text.find(needle)
        while i >= 0:
            start = text.rfind("\n", 0, i) + 1
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            ends[start] = end
            i = text.find(needle, end)
    out = []
    for start in sorted(ends):
        line = text[start:ends[start]]
        m = _ARCH.search(line)
        if m:
            out.append((start, ends[start], "arch", m.group(1) or m.group(2)))
            continue
        f = _FUNCTION.match(line)
        if f:
            out.append((start, ends[start], "function", f.group(1)))
    return out


def parse_sass(text: str, names: Collection[str] | None = None) -> list[Kernel]:
    """Every kernel in ``cuobjdump -sass`` output, in the order printed (one per architecture
    when the file holds several).  With ``names``: only the kernels of those names, exactly
    ``[k for k in parse_sass(text) if k.name in names]``, reading no other kernel's lines
    (a whole program's listing is tens of megabytes)."""
    if names is None or any(c in text for c in _OTHER_BREAKS):
        every = _parse_lines(text.splitlines())
        return every if names is None else [k for k in every if k.name in names]
    kernels: list[Kernel] = []
    arch = ""
    marks = _marker_lines(text)
    for i, (_start, end, kind, value) in enumerate(marks):
        if kind == "arch":
            arch = value
        elif value in names:
            stop = marks[i + 1][0] if i + 1 < len(marks) else len(text)
            (k,) = _parse_lines([text[_start:end], *text[end + 1:stop].splitlines()], arch)
            kernels.append(k)
    return kernels


def _parse_lines(lines: Iterable[str], arch: str = "") -> list[Kernel]:
    """The kernels of ``lines`` (``arch``: the architecture already in force)."""
    kernels: list[Kernel] = []
    cur: Kernel | None = None
    for line in lines:
        m = _ARCH.search(line)
        if m:
            arch = m.group(1) or m.group(2)
            cur = None
            continue
        f = _FUNCTION.match(line)
        if f:
            cur = Kernel(name=f.group(1), arch=arch)
            kernels.append(cur)
            continue
        if cur is None:
            continue
        lm = _LINE.match(line)
        if lm:
            ins = parse_instruction(int(lm.group(1), 16), lm.group("text"))
            if ins is not None:
                cur.instructions.append(ins)
    return kernels
