"""Which account of the 4-byte cp.async streams fits the H200's counts (docs/hardware/ldgsts_h200_vector.json,
``run.sh OUT --only vector``): per case the measured wavefronts per instruction beside what each
hypothesis predicts, and the hypotheses that predict every case exactly.

    PYTHONPATH=. python3 tools/gpu/ldgsts/vector_fit.py [JSON]

Hypotheses (a warp's instructions in issue order, every lane on):

* ``rule``: :func:`threadmap.hardware.ldgsts_wavefronts` per instruction, nothing carried over
  (lines + excess, the excess counting the distinct line offsets one shared bank takes words
  from: fits every case);
* ``lines_only``: the rule before that term (excess from each line's own store wavefronts and
  repeated addresses only), nothing carried over: 4 where the H200 counts 7;
* ``reread+store`` / ``reread+4`` / ``reread+lines``: an instruction that reads new bytes of a
  line an earlier instruction of the same warp requested since the last wait (its fill possibly
  still pending) costs ``lines_only`` plus the store wavefronts of its shared writes / plus 4 / plus the
  number of such lines;
* ``reread_any+store``: the same, also when it re-reads bytes already requested;
* ``hit+store``: the same whether or not a wait came between (pending or filled: an L1 hit);
* ``sector+store``: re-reading a 32-byte sector (not only a line) is what costs.

Two more are read off the table, not predicted: other warps or CTAs in flight (``_w4x4`` and
``_w4x264`` differ from their one-warp case) and the shape of one piece alone (the ``_single``
cases differ from ``rule``).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from threadmap import hardware as hw

DATA = Path(__file__).resolve().parents[3] / "docs" / "hardware" / "ldgsts_h200_vector.json"
Instr = tuple[list[int], list[int]]


def instructions(c: dict[str, Any]) -> list[Instr]:
    """One iteration's instructions (global, shared lane offsets), in issue order."""
    return [(c["global"], c["shared"]), *[(g, s) for g, s in c.get("more", [])]]


def _rule(g: list[int], s: list[int], size: int) -> int:
    return hw.ldgsts_wavefronts([(t, s[t], g[t]) for t in range(hw.WARP_SIZE)], size).wavefronts


def _store(s: list[int], size: int) -> int:
    return hw.wavefronts(((t, s[t]) for t in range(hw.WARP_SIZE)), size, size).wavefronts


def stateful(extra: Callable[[list[int], list[int], int, set[int]], int], unit: int = hw.LINE_BYTES,
             new_bytes_only: bool = True, reset_on_wait: bool = True) -> Callable[[dict[str, Any]], float]:
    """A hypothesis: an instruction re-reading a ``unit`` (line or sector) an earlier one of the
    warp requested costs ``extra(g, s, size, reread_units)`` more than ``lines_only``."""

    def predict(c: dict[str, Any]) -> float:
        size, total, n = c["bytes"], 0, 0
        for it in range(c["iters"]):
            seen_units: set[int] = set()
            seen_bytes: set[int] = set()
            for g0, s in instructions(c):
                g = [x + it * c.get("step", 0) for x in g0]
                units = {x // unit for x in g}
                mine = {x + b for x in g for b in range(size)}
                again = units & seen_units
                if new_bytes_only and mine <= seen_bytes:
                    again = set()
                total += _lines_only(g, s, size) + (extra(g, s, size, again) if again else 0)
                n += 1
                seen_units |= units
                seen_bytes |= mine
                if c.get("wait") and reset_on_wait:
                    seen_units, seen_bytes = set(), set()
        return total / n

    return predict


def _lines_only(g: list[int], s: list[int], size: int) -> int:
    """The rule without its line-offset term: per phase ``lines + (the most store wavefronts
    of one line's lanes, or lanes reading one address) - 1``, at least the phase's store."""
    per, total = hw.lanes_per_phase(size), 0
    for p in range(hw.WARP_SIZE // per):
        ts = range(p * per, (p + 1) * per)
        lines: dict[int, list[int]] = {}
        for t in ts:
            lines.setdefault(g[t] // hw.LINE_BYTES, []).append(t)
        excess = max(max(_store_of(s, line, size), max(Counter(g[t] for t in line).values()))
                     for line in lines.values())
        total += max(len(lines) + excess - 1, _store_of(s, list(ts), size))
    return total


def _store_of(s: list[int], ts: list[int], size: int) -> int:
    return hw.wavefronts(((t, s[t]) for t in ts), size, size).wavefronts


def per_instruction(rule: Callable[[list[int], list[int], int], int]) -> Callable[[dict[str, Any]], float]:
    """A stateless hypothesis: ``rule(global, shared, size)`` per instruction, averaged."""

    def predict(c: dict[str, Any]) -> float:
        tot = [rule([x + it * c.get("step", 0) for x in g], s, c["bytes"])
               for it in range(c["iters"]) for g, s in instructions(c)]
        return sum(tot) / len(tot)

    return predict


HYPOTHESES: dict[str, Callable[[dict[str, Any]], float]] = {
    "rule": per_instruction(_rule),
    "lines_only": per_instruction(_lines_only),
    "reread+store": stateful(lambda g, s, size, again: _store(s, size)),
    "reread+4": stateful(lambda g, s, size, again: 4),
    "reread+lines": stateful(lambda g, s, size, again: len(again)),
    "reread_any+store": stateful(lambda g, s, size, again: _store(s, size), new_bytes_only=False),
    "hit+store": stateful(lambda g, s, size, again: _store(s, size), reset_on_wait=False),
    "sector+store": stateful(lambda g, s, size, again: _store(s, size), unit=hw.SECTOR_BYTES),
}


def measured(c: dict[str, Any]) -> float:
    return float(c["wavefronts"]) / float(c["instructions"])


def expected_instructions(c: dict[str, Any]) -> int:
    """What the probe issues: every instruction of every iteration, every warp of every CTA."""
    return len(instructions(c)) * c["iters"] * c["warps"] * c["grid"]


def fit(cases: list[dict[str, Any]]) -> tuple[list[str], dict[str, list[str]]]:
    """The table's rows (markdown) and, per hypothesis, the cases it mispredicts."""
    names = list(HYPOTHESES)
    rows = ["| case | instr | measured | " + " | ".join(names) + " |", "|---" * (len(names) + 3) + "|"]
    misses: dict[str, list[str]] = {h: [] for h in names}
    for c in cases:
        m = measured(c)
        cells = []
        for h in names:
            p = HYPOTHESES[h](c)
            ok = abs(p - m) < 1e-9
            if not ok:
                misses[h].append(c["name"])
            cells.append(f"{p:.3g}{'' if ok else ' x'}")
        rows.append(f"| {c['name']} | {int(c['instructions'])} | {m:.4g} | " + " | ".join(cells) + " |")
    return rows, misses


def main(path: str) -> int:
    cases = json.loads(Path(path).read_text())["cases"]
    bad = [c["name"] for c in cases if c["instructions"] != expected_instructions(c)]
    if bad:
        print("instruction counts not what the probe issues (the launch is not what was meant):", bad)
    rows, misses = fit(cases)
    print("\n".join(rows))
    print()
    for h, ms in misses.items():
        print(f"{h}: {'fits every case' if not ms else f'{len(ms)} cases off: ' + ', '.join(ms)}")
    by = {c["name"]: measured(c) for c in cases}
    for key in ("k128A", "k64A", "k64B"):
        got = [by.get(f"vec_{key}_j0_single")] + [by.get(f"vec_{key}_p{k}") for k in (2, 3, 4)]
        one = [x for x in got if x is not None]
        if len(one) == len(got):
            tot = [x * (k + 1) for k, x in enumerate(one)]  # per iteration: k pieces' total
            print(f"{key}: piece j costs", [round(tot[0], 3)] + [round(b - a, 3) for a, b in zip(tot, tot[1:])])
    for c in cases:  # other warps and CTAs: against the one-warp case of the same stream
        base = c["name"].replace("_w4x4", "").replace("_w4x264", "")
        if base != c["name"] and base in by:
            print(f"{c['name']}: {by[c['name']]:.4g} against {by[base]:.4g} with one warp")
    return 0 if any(not ms for ms in misses.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(DATA)))
