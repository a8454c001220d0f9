"""Pictures of a pipeline protocol: per role, the stage and phase parity each round of the K-loop
uses (one period of the ring, where the schedule repeats), and its program -- as text and SVG."""

from __future__ import annotations

from html import escape

from threadmap.pipeline import Op, PipelineState, Protocol, Role

#: the stages' fill colours (cycled)
COLOURS = ("#cfe8ff", "#ffe0b3", "#d6f5d6", "#f5d6f0", "#fff3b0", "#e0d6ff", "#d6fff9", "#ffd6d6")


def _op_text(op: Op) -> str:
    what = op.kind + (f" {op.barrier}" if op.barrier and op.kind != "tma" else "")
    what += f" {op.copy}" if op.copy else (f" {','.join(op.buffers)}" if op.buffers else "")
    what += f" <{op.n}>" if op.kind in ("wait_group", "wait_mma", "tma_store_wait") else ""
    what += f" ({op.sync})" if op.sync else ""
    what += f" {op.fragment}" if op.fragment else ""
    return what + (f" [k{op.ahead:+d}]" if op.ahead else "")


def _states(p: Protocol, r: Role) -> list[PipelineState]:
    start = PipelineState(p.stages, r.start_stage, r.start_phase)
    return [start.at(k) for k in range(2 * p.stages)]


def pipeline_text(p: Protocol) -> str:
    """The ring schedule and each role's program, one line per role."""
    rounds = range(2 * p.stages)
    out = [f"pipeline: {p.stages} stages, cluster {p.cluster_size}; barriers "
           + (", ".join(f"{b} ({n} arrivals)" for b, n in p.barriers.items()) or "none")
           + "; stage/parity per round of the K-loop (the schedule repeats every 2 x stages rounds):"]
    width = max(len(r.name) for r in p.roles) + 2
    out.append("round".ljust(width) + " ".join(f"{k:>4}" for k in rounds))
    for r in p.roles:
        out.append(r.name.ljust(width) + " ".join(f"{s.index:>2}/{s.phase}" for s in _states(p, r)))
    for r in p.roles:
        blocks = []
        for b in r.blocks:
            loop = "K-loop" if b.trip else f"{b.loop}x"
            if b.from_end:
                loop = f"after the K-loop from k = K{b.start:+d}"
            blocks.append(f"{loop}: " + "; ".join(_op_text(o) for o in b.ops))
        out.append(f"{r.name} (warps {r.first_warp}..{r.last_warp}): " + " | ".join(blocks))
    return "\n".join(out)


def pipeline_svg(p: Protocol) -> str:
    """A grid of roles x rounds, each cell the stage (colour) and the phase parity the role's waits
    use in that round."""
    rounds = 2 * p.stages
    cw, ch, left, top = 44, 26, 130, 40
    w, h = left + cw * rounds + 10, top + ch * len(p.roles) + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="monospace" '
             'font-size="11">',
             f'<text x="4" y="16">{escape(f"{p.stages}-stage ring: stage / phase parity per round")}</text>']
    for k in range(rounds):
        parts.append(f'<text x="{left + k * cw + 14}" y="{top - 6}">{k}</text>')
    for i, r in enumerate(p.roles):
        y = top + i * ch
        parts.append(f'<text x="4" y="{y + 17}">{escape(r.name)}</text>')
        for k, s in enumerate(_states(p, r)):
            x = left + k * cw
            parts.append(f'<rect x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" fill="{COLOURS[s.index % 8]}" '
                         'stroke="#888"/>')
            parts.append(f'<text x="{x + 8}" y="{y + 17}">{s.index}/{s.phase}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
