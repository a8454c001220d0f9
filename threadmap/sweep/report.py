"""The sweep's report for a CUTLASS developer: findings and costs grouped by configuration
family with what was measured, one reproducible spec per group, the distributions of the
costs across the library, as JSON (:func:`grouped`) or one self-contained HTML page
(:func:`html_page`).

Everything comes from a :class:`~threadmap.sweep.run.SweepReport` (each configuration's
findings, warnings and costs as the store keeps them) and the spec texts of the store; nothing
is verified again.  The page fetches nothing: its CSS is inline, its plots are inline SVG drawn
by matplotlib (the ``report`` extra), and its only links are the spec files written with
``-o`` (relative) and the Layout Explorer (``threadmap serve``) with the spec in the URL's
fragment (``#spec=`` and the spec's UTF-8 text in base64url), which never reaches a server.
"""

from __future__ import annotations

import base64
import io
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from html import escape
from typing import Any

from threadmap.sweep.library import SweepError
from threadmap.sweep.run import SweepReport, spec_documents, spec_file_name

#: where ``threadmap serve`` answers by default (the Explorer links' base)
DEFAULT_EXPLORER = "http://127.0.0.1:8000/"

#: a kernel's or configuration's spec text by configuration digest ('' when the store has none)
SpecOf = Callable[[str], str]


def explorer_link(base: str, spec: str) -> str:
    """The Layout Explorer at ``base`` with ``spec`` loaded from the URL fragment."""
    data = base64.urlsafe_b64encode(spec.encode()).decode().rstrip("=")
    return f"{base.split('#', 1)[0]}#spec={data}"


def spec_of_fragment(link: str) -> str:
    """The spec text an Explorer link carries (the inverse of :func:`explorer_link`)."""
    data = link.split("#spec=", 1)[1]
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).decode()


def check_explorer(base: str) -> str:
    """``base`` if it is an http(s) URL with a host (the Explorer's), else a clear error."""
    m = re.fullmatch(r"(https?)://([^/?\s#\"'<>\x00-\x1f\x7f]+)[^\s#\"'<>\x00-\x1f\x7f]*", base, re.IGNORECASE)
    if m is None:
        why = ("not an http:// or https:// URL" if not re.match(r"https?://", base, re.IGNORECASE) else
               "no host" if re.match(r"https?://(?:[/?#]|$)", base, re.IGNORECASE) else
               "the links add their own #fragment" if "#" in base else
               "spaces, quotes, <, > and control characters are not allowed (percent-encode them)")
        raise SweepError(f"--explorer {base!r}: {why} (e.g. {DEFAULT_EXPLORER})")
    return base


# --- the measured quantities -------------------------------------------------------------------
def _g(x: float) -> str:
    return f"{x:.3g}"


def sectors_per_128(s: dict[str, Any]) -> tuple[float, float] | None:
    """Global 32-byte sectors per 128 bytes moved, and the ideal (from a coalescing summary)."""
    if not s.get("bytes"):
        return None
    return s["sectors"] * 128 / s["bytes"], s["ideal_sectors"] * 128 / s["bytes"]


def wavefronts_per_instruction(s: dict[str, Any]) -> tuple[float, float] | None:
    """Shared wavefronts per warp instruction (a cp.async here), and the ideal (from a bank
    conflicts summary)."""
    if not s.get("instructions"):
        return None
    return s["wavefronts"] / s["instructions"], s["ideal_wavefronts"] / s["instructions"]


def measured(entry: dict[str, Any]) -> str:
    """What a finding or warning entry measured, in words (its check summary's numbers)."""
    s: dict[str, Any] = entry.get("summary") or {}
    w: dict[str, Any] = entry.get("witness") or {}
    check = entry.get("check", "")
    if check == "coalescing" and (q := sectors_per_128(s)) is not None:
        text = f"{_g(q[0])} sectors per 128 B (ideal {_g(q[1])}), {s.get('access_bits')}-bit"
        return text + (f", {s['misaligned']} misaligned" if s.get("misaligned") else "")
    if check == "bank_conflicts" and (q := wavefronts_per_instruction(s)) is not None:
        return (f"{_g(q[0])} wavefronts per instruction (ideal {_g(q[1])}, at most {s.get('max_wavefronts')}), "
                f"{s.get('access_bits')}-bit")
    if check in ("coverage", "grid_coverage"):
        parts = [f"{k.replace('_', ' ')} {s[k]}" for k in ("missing", "duplicates", "out_of_tile", "out_of_bounds",
                                                          "aliased") if s.get(k)]
        at = w.get("coordinate")
        return ", ".join(parts) + (f"; first cell {tuple(at)}" if at is not None else "")
    if check == "predicates":
        parts = [f"{k.replace('_', ' ')} {s[k]}" for k in ("out_of_bounds", "lost", "straddling_oob") if s.get(k)]
        pre = s.get("precondition") or w.get("precondition")
        return ", ".join(parts) + (f"; needs {' and '.join(map(str, pre))}" if pre else "")
    if check == "vectorize":
        return (f"declared {s.get('declared_bits')}-bit, widest legal {s.get('max_legal_bits')}-bit, "
                f"{s.get('illegal_accesses')} illegal accesses")
    if check == "dataflow":
        return ", ".join(f"{k.replace('_', ' ')} {s[k]}" for k in ("wrong_values", "races", "stale_reads",
                                                                   "uninitialised_reads", "writes_after_reads",
                                                                   "missing") if s.get(k)) or entry.get("message", "")
    return str(entry.get("message", ""))


# --- the grouped data --------------------------------------------------------------------------
@dataclass
class Group:
    """The configurations of one family where one check failed (``finding``) or reported a
    cost without failing (``warning``)."""

    what: str                  # "finding" or "warning"
    check: str
    family: str                # opcode class, element types and layouts, alignments (the configuration's label)
    configurations: int = 0
    kernels: int = 0
    #: "operand: measured quantity" -> the tiles (as :func:`tile_of`) of the configurations that measure it
    measured: dict[str, list[str]] = field(default_factory=dict)
    #: "kMxkNxkK/stages" -> configurations
    tiles: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    #: the first configuration's spec file (as -o writes it: findings in DIR, warnings only in DIR/warnings)
    spec: str = ""
    explorer: str = ""         # the Layout Explorer with that spec loaded ('' when the store has no spec text)
    message: str = ""          # the first configuration's first message
    kernel_names: list[str] = field(default_factory=list)   # every kernel the group stands for


def tile_of(fields: dict[str, Any]) -> str:
    """A configuration's threadblock tile and stages, CUTLASS's way: ``128x128x32/4``."""
    tb = fields.get("threadblock") or []
    return "x".join(map(str, tb)) + (f"/{fields['stages']}" if "stages" in fields else "")


def _operand(entry: dict[str, Any]) -> str:
    """The tensor an entry's stage side names; a kernel check's (dataflow) has none."""
    if entry.get("tensor"):
        return str(entry["tensor"])
    return "kernel" if entry.get("stage") is None else f"stage {entry['stage']}"


def groups(report: SweepReport, spec_of: SpecOf, explorer: str = DEFAULT_EXPLORER) -> list[Group]:
    """Findings and warnings by (check, family), as :meth:`SweepReport.findings` counts them,
    with what each configuration measured, its tiles and the first configuration's spec."""
    out: dict[tuple[str, str, str], Group] = {}
    for c in report.configurations:
        if c["status"] not in ("pass", "fail"):
            continue
        for what, entries in (("finding", c["findings"]), ("warning", c["warnings"])):
            for check in sorted({e["check"] for e in entries}):
                g = out.setdefault((what, check, c["label"]), Group(what, check, c["label"]))
                mine = [e for e in entries if e["check"] == check]
                if not g.spec:
                    # of a configuration of several spec documents, the one this check reported
                    doc = int(mine[0].get("document", 0))
                    name = spec_file_name(c["kernels"][0], doc)
                    g.spec = name if c["status"] == "fail" else f"warnings/{name}"
                    g.message = str(mine[0].get("message", ""))
                    docs = spec_documents(spec_of(c["digest"]))
                    text = docs[doc] if doc < len(docs) else ""
                    g.explorer = explorer_link(explorer, text) if text.strip() else ""
                g.configurations += 1
                g.kernels += len(c["kernels"])
                g.kernel_names.extend(c["kernels"])
                t = tile_of(c.get("fields") or {})
                g.tiles[t] = g.tiles.get(t, 0) + 1
                for m in sorted({f"{_operand(e)}: {measured(e)}" for e in mine}):
                    g.measured.setdefault(m, []).append(t)
                for k in sorted({str(e.get("kind", "")) for e in mine} - {""}):
                    g.kinds[k] = g.kinds.get(k, 0) + 1
    return sorted(out.values(), key=lambda g: (g.what != "finding", -g.kernels, g.check, g.family))


@dataclass
class Sample:
    """One operand of one analysed configuration at whole tiles: its costs and its ideal."""

    label: str
    tile: str
    operand: str
    check: str
    access_bits: int
    value: float
    ideal: float


def samples(report: SweepReport) -> list[Sample]:
    """Global sectors per 128 B and shared wavefronts per instruction of every operand of every
    analysed configuration (each configuration's own costs, passing ones included)."""
    out: list[Sample] = []
    for c in report.configurations:
        if c["status"] not in ("pass", "fail"):
            continue
        for e in c.get("costs") or []:
            f = sectors_per_128 if e["check"] == "coalescing" else wavefronts_per_instruction
            q = f(e.get("summary") or {})
            if q is not None:
                out.append(Sample(c["label"], tile_of(c.get("fields") or {}), _operand(e), e["check"],
                                  int(e["summary"].get("access_bits") or 0), q[0], q[1]))
    return out


def grouped(report: SweepReport, spec_of: SpecOf, explorer: str = DEFAULT_EXPLORER) -> dict[str, Any]:
    """What the HTML page shows, as JSON: the summary per kind, the groups, the reasons for the
    configurations not analysed and the cost distributions (value -> operands)."""
    dist: dict[str, dict[str, dict[str, int]]] = {}
    for s in samples(report):
        by = dist.setdefault(s.check, {}).setdefault(f"{s.access_bits}-bit (ideal {_g(s.ideal)})", {})
        by[_g(s.value)] = by.get(_g(s.value), 0) + 1
    return {"explorer": explorer,
            "kinds": [asdict(k) for k in report.kinds],
            "groups": [asdict(g) for g in groups(report, spec_of, explorer)],
            "reasons": [asdict(r) for r in report.reasons],
            "proofs": [asdict(p) for p in report.proofs],
            "unproved": [asdict(r) for r in report.unproved],
            "comparison": asdict(report.comparison) if report.comparison is not None else None,
            "not_in_slice": dict(report.not_in_slice),
            "distributions": {"sectors_per_128_bytes": dist.get("coalescing", {}),
                              "wavefronts_per_instruction": dist.get("bank_conflicts", {})}}


# --- plots ---------------------------------------------------------------------------------------
_PLOT_CHECKS = (("coalescing", "global sectors per 128 B"), ("bank_conflicts", "shared wavefronts per cp.async"))


def _svg(fig: Any, name: str) -> str:
    """A matplotlib figure as an inline <svg> element (no XML header, no metadata, text kept as
    text; its ids stable from run to run and, salted with ``name``, unique in the page)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"threadmap-{name}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    return re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)


def _figure(w: float, h: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), layout="constrained")


def _colours(ss: Sequence[Sample]) -> dict[int, Any]:
    """One colour per access width, the same in every plot."""
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {b: cmap(i % 10) for i, b in enumerate(sorted({s.access_bits for s in ss}))}


def plot_distribution(ss: Sequence[Sample], check: str, title: str) -> str:
    """Operands per measured value, stacked by access width (the ideal differs per width)."""
    mine = [s for s in ss if s.check == check]
    fig = _figure(6.4, 3.0)
    ax = fig.add_subplot()
    values = sorted({s.value for s in mine})
    widths = sorted({(s.access_bits, s.ideal) for s in mine})
    x = list(range(len(values)))
    bottom = [0] * len(values)
    colour = _colours(ss)
    for bits, ideal in widths:
        n = Counter(s.value for s in mine if (s.access_bits, s.ideal) == (bits, ideal))
        h = [n.get(v, 0) for v in values]
        ax.bar(x, h, bottom=bottom, color=colour[bits], label=f"{bits}-bit accesses (ideal {_g(ideal)})")
        bottom = [a + b for a, b in zip(bottom, h, strict=True)]
    ax.set_xticks(x, [_g(v) for v in values])
    ax.set_xlabel(title)
    ax.set_ylabel("operands (A or B of a configuration)")
    ax.set_ylim(0, max(bottom, default=0) * 1.15 + 1)
    if widths:
        ax.legend(fontsize="small")
    return _svg(fig, check)


def plot_tiles(ss: Sequence[Sample]) -> str:
    """Per threadblock tile shape: each operand's cost divided by its ideal (a strip plot, one
    panel per check)."""
    import numpy as np

    tiles = sorted({s.tile.split("/")[0] for s in ss}, key=lambda t: [int(v) for v in t.split("x") if v.isdigit()])
    fig = _figure(min(12.0, max(6.4, 0.3 * len(tiles) + 2)), 5.2)
    axes = fig.subplots(2, 1, sharex=True)
    rng = np.random.default_rng(0)   # the jitter: the same page from the same data
    colour = _colours(ss)
    index = {t: i for i, t in enumerate(tiles)}
    for ax, (check, title) in zip(axes, _PLOT_CHECKS, strict=True):
        for bits in colour:
            mine = [s for s in ss if s.check == check and s.access_bits == bits and s.ideal]
            xs = np.array([index[s.tile.split("/")[0]] for s in mine], dtype=float)
            ax.scatter(xs + rng.uniform(-0.3, 0.3, len(xs)), [s.value / s.ideal for s in mine], s=9, alpha=0.45,
                       color=colour[bits], label=f"{bits}-bit accesses")
        ax.set_ylabel(f"{title}\n÷ ideal", fontsize="small")
        ax.axhline(1, color="gray", linewidth=0.8)
    axes[0].legend(fontsize="small")
    axes[-1].set_xticks(range(len(tiles)), tiles, rotation=60, ha="right", fontsize="small")
    axes[-1].set_xlabel("threadblock tile (kM x kN x kK)")
    return _svg(fig, "tiles")


# --- the page ------------------------------------------------------------------------------------
_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#1d1d1f}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;width:100%}th,td{border:1px solid #ddd;padding:.3em .5em;
vertical-align:top;text-align:left}th{background:#f4f4f6}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{font-size:.92em}.muted{color:#666}details summary{cursor:pointer}ul.k{margin:.3em 0;padding-left:1.2em;
max-height:14em;overflow:auto;font:12px monospace}figure{margin:1em 0}figcaption{color:#555;font-size:.92em}
svg{max-width:100%;height:auto}td:nth-child(5){min-width:24em}td:last-child code{word-break:break-all}
td:nth-child(2){min-width:9em}.finding{color:#b00020}.warning{color:#8a5a00}
"""


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    """An HTML table; ``rows`` hold markup (each cell escaped by its caller)."""
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td class=\"n\">{c}</td>" if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _counts(d: dict[str, int]) -> str:
    return "<br>".join(f"{escape(k)} <span class=\"muted\">({n})</span>"
                       for k, n in sorted(d.items(), key=lambda kv: (-kv[1], kv[0])))


def _measured(d: dict[str, list[str]]) -> str:
    """Each measured quantity, its configurations and (folded) their tiles."""
    return "".join(f"<details><summary>{escape(k)} <span class=\"muted\">({len(ts)})</span></summary>"
                   f"<span class=\"muted\">{escape(', '.join(ts))}</span></details>"
                   for k, ts in sorted(d.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def _group_rows(gs: Sequence[Group], spec_links: bool) -> list[list[str]]:
    rows = []
    for g in gs:
        spec = (f"<a href=\"{escape(g.spec)}\"><code>{escape(g.spec)}</code></a>" if spec_links
                else f"<code>{escape(g.spec)}</code>")
        if g.explorer:
            spec += f"<br><a href=\"{escape(g.explorer)}\">open in the Layout Explorer</a>"
        kernels = (f"<details><summary>{g.kernels} kernels</summary><ul class=\"k\">"
                   + "".join(f"<li>{escape(k)}</li>" for k in g.kernel_names) + "</ul></details>")
        rows.append([f"<span class=\"{escape(g.what)}\">{escape(g.check)}</span>"
                     + (f"<br><span class=\"muted\">{escape(', '.join(g.kinds))}</span>" if g.kinds else ""),
                     escape(g.family), str(g.configurations), kernels, _measured(g.measured),
                     f"<details><summary>{len(g.tiles)} tiles</summary>{_counts(g.tiles)}</details>",
                     spec + f"<br><span class=\"muted\">{escape(g.message)}</span>"])
    return rows


def html_page(report: SweepReport, spec_of: SpecOf, explorer: str = DEFAULT_EXPLORER,
              spec_links: bool = True) -> str:
    """The report as one HTML document that fetches nothing.  ``spec_links``: the spec file
    names link to the files ``-o`` wrote beside the page."""
    gs = groups(report, spec_of, explorer)
    ss = samples(report)
    title = (f"CUTLASS {report.cutlass} sm{'/sm'.join(report.architectures)} kernel library: "
             f"threadmap sweep (--kernels {report.kernels_filter})")
    parts = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
             # nothing but this page's own styles and inline pictures may load
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
             "style-src 'unsafe-inline'; img-src data:\">",
             f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{escape(title)}</h1>"]
    analysed = sum(k.analysed for k in report.kinds)
    parts.append(f"<p>{sum(k.configurations for k in report.kinds)} configurations stand for "
                 f"{sum(k.kernels for k in report.kinds)} kernels; {analysed} analysed "
                 f"({sum(k.kernels_analysed for k in report.kinds)} kernels), "
                 f"{sum(k.with_findings for k in report.kinds)} with findings. Each analysed configuration's "
                 "spec describes one k-tile of its mainloop: the cp.async of A and B into one shared stage "
                 "(<code>docs/sweep.md</code>).</p>")
    parts.append("<h2>Summary per operation kind</h2>")
    parts.append(_table(("kind", "kernels", "configurations", "in this slice", "analysed (kernels)", "passed",
                         "with findings", "not analysed"),
                        [[escape(k.kind), str(k.kernels), str(k.configurations), str(k.in_slice),
                          f"{k.analysed} ({k.kernels_analysed})", str(k.passed), str(k.with_findings),
                          str(k.not_analysed)] for k in report.kinds], numeric=range(1, 8)))
    if report.not_in_slice:
        parts.append("<p class=\"muted\">Counted, not analysed (not in this slice): " + escape(", ".join(
            f"{k} {v}" for k, v in sorted(report.not_in_slice.items(), key=lambda kv: -kv[1]))) + "</p>")
    head = ("check", "configuration family", "configurations", "kernels", "measured (configurations)",
            "tiles / stages", "reproducible spec")
    for what, title_, empty in (
            ("finding", "Findings (failing checks)", "No check failed."),
            ("warning", "Costs the checks report without failing",
             "No configuration costs more sectors or wavefronts than ideal.")):
        mine = [g for g in gs if g.what == what]
        parts.append(f"<h2>{escape(title_)}</h2>")
        parts.append(_table(head, _group_rows(mine, spec_links), numeric=(2,)) if mine
                     else f"<p>{escape(empty)}</p>")
    if report.reasons:
        parts.append("<h2>Not analysed</h2>")
        parts.append(_table(("reason", "configurations", "kernels", "example"),
                            [[escape(r.reason), str(r.configurations), str(r.kernels), escape(r.example)]
                             for r in report.reasons], numeric=(1, 2)))
    if report.proofs:
        parts.append("<h2>Proofs over the size ranges (--prove)</h2>")
        parts.append(_table(("property", "proved (kernels)", "refuted (kernels)", "unknown (kernels)"),
                            [[escape(p.property), f"{p.proved} ({p.kernels_proved})",
                              f"{p.refuted} ({p.kernels_refuted})", f"{p.unknown} ({p.kernels_unknown})"]
                             for p in report.proofs], numeric=(1, 2, 3)))
    if report.unproved:
        parts.append("<h2>Why properties were not decided</h2>")
        parts.append(_table(("reason (numbers as N)", "configurations", "kernels", "example"),
                            [[escape(r.reason), str(r.configurations), str(r.kernels), escape(r.example)]
                             for r in report.unproved], numeric=(1, 2)))
    cmp = report.comparison
    if cmp is not None:
        parts.append(f"<h2>Changes from CUTLASS {escape(cmp.against)} to {escape(report.cutlass)}</h2>")
        parts.append(f"<p>{cmp.compared} configurations compared: {cmp.regressions} regressions, "
                     f"{cmp.improvements} improvements, {cmp.changed} changed otherwise, {cmp.unchanged} unchanged; "
                     f"{cmp.missing} without a row of {escape(cmp.against)}.</p>")
        if cmp.rows:
            parts.append(_table(("verdict", "configuration family", "kernel", "kernels", "changes"),
                                [[escape(r.verdict), escape(r.family), escape(r.kernel), str(r.kernels),
                                  escape("; ".join(r.changes))] for r in cmp.rows], numeric=(3,)))
    if ss:
        parts.append("<h2>Costs across the analysed configurations</h2>")
        for check, label in _PLOT_CHECKS:
            if any(s.check == check for s in ss):
                parts.append(f"<figure>{plot_distribution(ss, check, label)}<figcaption>{escape(label)}: "
                             "operands (A and B of each analysed configuration) per value, at whole tiles, by "
                             "access width.</figcaption></figure>")
        parts.append(f"<figure>{plot_tiles(ss)}<figcaption>Each operand's cost divided by its ideal, per "
                     "threadblock tile shape (1: ideal).</figcaption></figure>")
    parts.append(f"<p class=\"muted\">Explorer links open <code>{escape(explorer)}</code> "
                 "(<code>threadmap serve</code>) with the spec in the link itself.</p></body></html>")
    return "\n".join(parts) + "\n"
