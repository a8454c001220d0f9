"""The sweep's report (``threadmap.sweep.report``): grouped findings and costs, JSON and the
self-contained HTML page, from a store planted with synthetic results for the narrow filter's
configurations (the generator runs; nothing is compiled or verified), so every expected value
is computed here from the planted rows."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.sweep.conftest import KERNELS
from threadmap.cli import main
from threadmap.sweep.library import Configuration, generate, group
from threadmap.sweep.run import Options, SweepReport, in_slice, spec_file_name, sweep
from threadmap.sweep.store import Result, Store

pytest.importorskip("matplotlib", reason="the report extra is not installed: pip install 'threadmap[report]'")

from threadmap.sweep.report import (  # noqa: E402
    DEFAULT_EXPLORER,
    explorer_link,
    grouped,
    groups,
    html_page,
    samples,
    spec_of_fragment,
    tile_of,
)

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="x()">&amp;'


def _cost(check: str, stage: int, tensor: str, bits: int, factor: int) -> dict[str, Any]:
    """A cost entry as verify_text keeps it: ``factor`` times the ideal count."""
    if check == "coalescing":
        summary = {"requests": 64, "sectors": 256 * factor, "ideal_sectors": 256, "bytes": 8192, "access_bits": bits}
        return {"check": check, "stage": stage, "side": "src", "tensor": tensor, "summary": summary}
    summary = {"instructions": 64, "wavefronts": 64 * factor, "ideal_wavefronts": 64, "max_wavefronts": factor,
               "access_bits": bits}
    return {"check": check, "stage": stage, "side": "dst", "tensor": tensor, "summary": summary}


def _rows(configs: list[Configuration], headers: str) -> list[Result]:
    """One synthetic result per configuration: the first fails coverage (a hostile message)
    and warns of sectors, the next two warn of bank conflicts, the others pass; the complex
    one is not analysed."""
    out = []
    for i, c in enumerate(configs):
        d = c.digest(headers)
        if c.fields["element_a"] == "cf32":
            out.append(Result(d, c.key, c.label, "not_analysed", "element type without a spec name", "A: cf32",
                              kernels=list(c.kernels)))
            continue
        costs = [_cost("coalescing", 0, "A", 32, 1 + i % 2), _cost("bank_conflicts", 0, "sA", 32, 1 + i),
                 _cost("coalescing", 1, "B", 128, 1), _cost("bank_conflicts", 1, "sB", 128, 1)]
        findings, warnings = [], []
        if i == 0:
            findings = [{"check": "coverage", "stage": 0, "side": "dst", "tensor": "sA", "kind": "missing",
                         "summary": {"missing": 3, "duplicates": 0}, "witness": {"coordinate": [1, 2]},
                         "sizes": {"M": 8}, "message": HOSTILE}]
        if i in (0, 1):
            warnings.append({**costs[0], "kind": "uncoalesced", "message": "sectors", "witness": {}})
        if i in (1, 2):
            warnings.append({**costs[1], "kind": "conflict", "message": "wavefronts", "witness": {}})
        spec = f"# the spec of {c.kernels[0]} é <b>\nname: '{HOSTILE}'\n"
        out.append(Result(d, c.key, c.label, "fail" if findings else "pass", findings=findings, warnings=warnings,
                          spec=spec, spec_hash=d, kernels=list(c.kernels), costs=costs))
    return out


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Result]]:
    from threadmap.gpu.toolchain import cutlass_include, cutlass_version

    inc = cutlass_include()
    if inc is None:
        pytest.skip("the CUTLASS headers (nvidia-cutlass) are not installed")
    configs = [c for c in group(generate(("80",), KERNELS)) if in_slice(c)]
    rows = _rows(configs, cutlass_version(inc))
    db = tmp_path_factory.mktemp("report") / "planted.db"
    with Store(db) as store:
        for r in rows:
            store.put(r)
    return db, rows


@pytest.fixture()
def report(planted: tuple[Path, list[Result]]) -> SweepReport:
    db, rows = planted
    rep = sweep(Options(kernels=KERNELS, db=db))
    assert rep.reused == len(rows) and rep.extracted == 0  # everything from the store
    return rep


def _spec_of(rows: list[Result]) -> Any:
    by = {r.digest: r.spec for r in rows}
    return lambda d: by.get(d, "")


def test_groups_count_what_the_rows_hold(report: SweepReport, planted: tuple[Path, list[Result]]) -> None:
    _, rows = planted
    gs = groups(report, _spec_of(rows))
    # expected from the rows: (what, check, family) -> the results, in the sweep's order
    expect: dict[tuple[str, str, str], list[Result]] = {}
    for r in rows:
        for what, entries in (("finding", r.findings), ("warning", r.warnings)):
            for check in {e["check"] for e in entries}:
                expect.setdefault((what, check, r.label), []).append(r)
    assert {(g.what, g.check, g.family) for g in gs} == set(expect)
    # the summary's own rows (run._summarise) count the same
    summary = {("finding", f.check, f.family): f for f in report.findings}
    summary.update({("warning", f.check, f.family): f for f in report.warnings})
    for g in gs:
        rs = expect[(g.what, g.check, g.family)]
        assert g.configurations == len(rs) == summary[(g.what, g.check, g.family)].configurations
        assert g.kernels == sum(len(r.kernels) for r in rs) == summary[(g.what, g.check, g.family)].kernels
        assert sorted(g.kernel_names) == sorted(k for r in rs for k in r.kernels)
        first = next(c for c in report.configurations if c["digest"] in {r.digest for r in rs})
        name = spec_file_name(first["kernels"][0])
        assert g.spec == (name if first["status"] == "fail" else f"warnings/{name}")
        assert spec_of_fragment(g.explorer) == next(r.spec for r in rows if r.digest == first["digest"])
        assert g.explorer.startswith(DEFAULT_EXPLORER + "#spec=")
        # each configuration's measured quantity, named by its operand, lists its tile
        for r in rs:
            c = next(c for c in report.configurations if c["digest"] == r.digest)
            for e in r.findings if g.what == "finding" else r.warnings:
                if e["check"] != g.check:
                    continue
                s = e["summary"]
                if g.check == "coalescing":
                    n = f"{s['sectors'] * 128 / s['bytes']:.3g} sectors per 128 B"
                elif g.check == "bank_conflicts":
                    n = f"{s['wavefronts'] / s['instructions']:.3g} wavefronts per instruction"
                else:
                    n = f"missing {s['missing']}"
                (key,) = [m for m in g.measured if m.startswith(f"{e['tensor']}: {n}")]
                assert tile_of(c["fields"]) in g.measured[key]
                if g.check == "coverage":
                    assert f"first cell {tuple(e['witness']['coordinate'])}" in key
        assert sum(len(ts) for ts in g.measured.values()) == sum(
            len({e["tensor"] for e in (r.findings if g.what == "finding" else r.warnings) if e["check"] == g.check})
            for r in rs)
    # the distributions: every cost of every analysed configuration, passing ones included
    ss = samples(report)
    assert len(ss) == sum(len(r.costs) for r in rows if r.status in ("pass", "fail"))
    data = grouped(report, _spec_of(rows))
    for key, check in (("sectors_per_128_bytes", "coalescing"), ("wavefronts_per_instruction", "bank_conflicts")):
        n = sum(v for by in data["distributions"][key].values() for v in by.values())
        assert n == sum(1 for r in rows for c in r.costs if c["check"] == check)
    assert [g["check"] for g in data["groups"]] == [g.check for g in gs]
    json.dumps(data)


class _Page(HTMLParser):
    """Checks that every element is closed in order and collects links and text."""

    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "wbr", "source", "area", "base", "embed"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [v or "" for k, v in attrs if k in ("href", "src", "xlink:href", "action", "srcset")]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [v or "" for k, v in attrs if k in ("href", "src", "xlink:href", "action", "srcset")]

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(text: str) -> _Page:
    p = _Page()
    p.feed(text)
    p.close()
    assert not p.errors and not p.stack, (p.errors, p.stack)
    return p


def test_the_page_is_well_formed_escaped_and_fetches_nothing(report: SweepReport,
                                                             planted: tuple[Path, list[Result]]) -> None:
    _, rows = planted
    hostile_kernel = "cutlass_<script>alert(1)</script>_&_\"q\""
    report.configurations[0]["kernels"][0] = hostile_kernel
    explorer = "http://localhost:9999/x"
    text = html_page(report, _spec_of(rows), explorer)
    page = parse(text)
    # markup in a kernel name or a message is text: no script element, no img, the text intact
    assert "script" not in page.tags and "img" not in page.tags
    body = "".join(page.text)
    assert hostile_kernel in body and HOSTILE in body
    assert hostile_kernel not in text and HOSTILE not in text
    # no link leaves the page but the Explorer's; each carries a planted spec
    specs = {r.spec for r in rows if r.spec}
    explorer_links = [u for u in page.links if u.startswith(explorer + "#spec=")]
    assert explorer_links and {spec_of_fragment(u) for u in explorer_links} <= specs
    for u in page.links:
        if u in explorer_links:
            continue
        assert u.startswith("#") or ("://" not in u and not u.startswith("//") and ":" not in u.split("/")[0]), u
    # the only absolute URLs in the text: the Explorer's and the SVG namespaces
    import re

    for u in re.findall(r"(?:https?:)?//[^\s\"'<>)]+", text):
        assert u.startswith(explorer) or u in ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"), u
    assert "default-src 'none'" in text   # the page's CSP: nothing loads even if a URL slipped in
    assert text.count("<svg") == 3        # the two distributions and the tile strip plot


def test_the_command_writes_the_page_and_the_json_carries_the_groups(
        tmp_path: Path, planted: tuple[Path, list[Result]], report: SweepReport) -> None:
    db, rows = planted
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["sweep", "--kernels", KERNELS, "--db", str(db), "--format", "html", "-o", str(out)])
    assert r.exit_code == 1, r.output   # the planted finding
    parse((out / "index.html").read_text())
    data = json.loads((out / "sweep.report.json").read_text())
    assert data["report"] == json.loads(json.dumps(grouped(report, _spec_of(rows))))
    for g in data["report"]["groups"]:
        assert (out / g["spec"]).exists()
    # --format json: the same groups
    r = CliRunner().invoke(main, ["sweep", "--kernels", KERNELS, "--db", str(db), "--format", "json",
                                  "--explorer", "https://example.test/tm/"])
    assert r.exit_code == 1
    groups_ = json.loads(r.stdout)["report"]["groups"]
    assert [g["configurations"] for g in groups_] == [g["configurations"] for g in data["report"]["groups"]]
    assert all(g["explorer"].startswith("https://example.test/tm/#spec=") for g in groups_)
    # a page file alone: no spec files beside it
    page = tmp_path / "sub" / "report.html"
    r = CliRunner().invoke(main, ["sweep", "--kernels", KERNELS, "--db", str(db), "--format", "html", "-o", str(page)])
    assert r.exit_code == 1 and page.exists()
    assert sorted(p.name for p in page.parent.iterdir()) == ["report.html"]
    # a bad Explorer URL: one line, exit 2, before any work
    r = CliRunner().invoke(main, ["sweep", "--kernels", KERNELS, "--db", str(db), "--explorer", "javascript:x()"])
    assert r.exit_code == 2 and "--explorer" in r.output and len(r.output.strip().splitlines()) == 1


def test_an_explorer_link_round_trips_any_text() -> None:
    for text in ("", "a", "ab", "abc", "é\n<b>&</b>\0", "x" * 1000):
        link = explorer_link("http://h/#old", text)
        assert link.startswith("http://h/#spec=") and spec_of_fragment(link) == text
        assert "=" not in link.split("#spec=")[1]


def test_a_spec_of_two_documents_is_written_and_linked_one_document_each(tmp_path: Path) -> None:
    """A configuration whose stored spec has two documents (a sparse GEMM whose E only some
    warps copy): each finding names the document it came from, ``-o`` writes one file per
    document that ``threadmap verify`` reads, and the report's spec and Explorer link are the
    document with the check (a stream of two YAML documents is no spec the loader or the
    Explorer's server accepts).  Two small specs of the repository stand for the documents;
    nothing is compiled."""
    from threadmap.gpu.toolchain import cutlass_include, cutlass_version
    from threadmap.spec.load import load_spec, loads_spec
    from threadmap.sweep.run import verify_text
    from threadmap.sweep.specs_sparse import DOCUMENT_SEPARATOR

    inc = cutlass_include()
    if inc is None:
        pytest.skip("the CUTLASS headers (nvidia-cutlass) are not installed")
    root = Path(__file__).resolve().parents[2] / "specs" / "cute_transpose"
    docs = [(root / n).read_text() for n in ("row_smem.yaml", "col_smem.yaml")]
    two = docs[0].rstrip("\n") + DOCUMENT_SEPARATOR + docs[1]
    # the oracle: each document verified alone
    alone = [verify_text(d, "doc") for d in docs]
    status, findings, warnings, costs, _, err = verify_text(two, "doc")
    assert err == "" and status == "fail"
    assert [(f["check"], f["stage"], f["document"]) for f in findings] == [
        (f["check"], f["stage"], i) for i, a in enumerate(alone) for f in a[1]]
    only_second = sorted({f["check"] for f in alone[1][1]} - {f["check"] for f in alone[0][1]})
    assert only_second  # a check only the second document fails: its spec is that document

    headers = cutlass_version(inc)
    configs = [c for c in group(generate(("80",), KERNELS)) if in_slice(c)]
    db = tmp_path / "two.db"
    with Store(db) as store:
        for i, c in enumerate(configs):
            store.put(Result(c.digest(headers), c.key, c.label, status if i == 0 else "pass",
                             findings=findings if i == 0 else [], warnings=warnings if i == 0 else [],
                             spec=two if i == 0 else "", spec_hash=c.digest(headers), kernels=list(c.kernels),
                             costs=costs if i == 0 else []))
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["sweep", "--kernels", KERNELS, "--db", str(db), "--jobs", "1",
                                  "--format", "json", "-o", str(out)])
    assert r.exit_code == 1, r.output
    kernel = configs[0].kernels[0]
    names = [spec_file_name(kernel, i) for i in range(2)]
    assert sorted(p.name for p in out.glob("*.yaml")) == sorted(names)
    for name, doc in zip(names, docs, strict=True):
        assert (out / name).read_text() == doc
        load_spec(out / name)  # a spec threadmap verify reads
    data = json.loads(r.stdout)
    by_check = {f["check"]: f for f in data["findings"]}
    for check in only_second:
        assert by_check[check]["specs"] == [names[1]]
    for g in data["report"]["groups"]:
        doc = next(f["document"] for f in findings if f["check"] == g["check"])
        assert g["spec"] == names[doc]
        text = spec_of_fragment(g["explorer"])
        assert text == docs[doc]
        loads_spec(text, "yaml", "linked")
