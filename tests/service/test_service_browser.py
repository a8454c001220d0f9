"""The Layout Explorer page of ``threadmap serve``, driven in headless Chromium (Playwright)
against the real server (uvicorn on a free loopback port, a temporary SQLite store).

What a user does: load an example and run it (PASS), run a failing spec and click its finding
(the spec line is highlighted), hover a heat-map cell (its tooltip text), follow the permalink
in a new page, open a spec handed over in the link's fragment, paste an invalid spec (the 422
message and its line), use the layout calculator -- and a spec whose name is markup never
runs as script.

Screenshots go to pytest's temporary directory; ``docs/img/explorer.png`` (the README's
picture) is written when it is missing or when ``THREADMAP_SCREENSHOTS=1``.

Skipped when Playwright or a Chromium is missing.  Chromium needs an unlimited address space:
under ``ulimit -v`` it cannot start, and the tests skip saying so.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the service extra is not installed: pip install 'threadmap[service]'")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install playwright")

from tests.support.service_server import ROOT, Server, start  # noqa: E402

SPECS = ROOT / "specs"
ROW_SMEM = (SPECS / "cute_transpose" / "row_smem.yaml").read_text()
SWIZZLED = (SPECS / "cute_transpose" / "row_smem_swizzled.yaml").read_text()
README_SHOT = ROOT / "docs" / "img" / "explorer.png"
TIMEOUT_MS = 30_000
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium() -> str | None:
    for cand in (os.environ.get("THREADMAP_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    return None


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start(tmp_path_factory.mktemp("explorer") / "jobs.db", "--workers", "2")
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium found (/usr/bin/chromium, chromium, google-chrome or $THREADMAP_CHROMIUM)")
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, timeout=TIMEOUT_MS)
        except sync_api.Error as e:
            soft, _ = resource.getrlimit(resource.RLIMIT_AS)
            why = "" if soft == resource.RLIM_INFINITY else f" (address space limited to {soft >> 20} MiB: ulimit -v)"
            pytest.skip(f"Chromium ({exe}) did not start{why}: {str(e).splitlines()[0]}")
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1366, "height": 768}, base_url=server.url)
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield pg
    finally:
        ctx.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("explorer-shots")


def _set_spec(page: Any, text: str) -> None:
    page.fill("#spec", text)


def _run(page: Any, outcome: str) -> None:
    """Press Run and wait for the job bar to show ``outcome`` (pass, fail, error, ...)."""
    page.evaluate("document.getElementById('state').className = 'pill'")  # forget the last outcome
    page.click("#run")
    page.wait_for_selector(f"#state.state-{outcome}")


def _highlighted(page: Any) -> list[int]:
    return [int(t) for t in page.locator("#gutter .ln.hl").all_inner_texts()]


def test_page_loads(page: Any) -> None:
    page.goto("/")
    assert "Layout Explorer" in page.title()
    page.wait_for_selector("#health.ok")
    assert page.locator("#examples option").count() >= 4
    # the embedded examples are the library's files, verbatim
    examples = page.evaluate("window.THREADMAP_EXAMPLES.map(e => [e.path, e.text])")
    paths = {p for p, _ in examples}
    assert paths >= {"specs/cute_transpose/row_smem.yaml", "specs/cute_transpose/row_smem_swizzled.yaml"}
    for path, text in examples:
        assert text == (ROOT / path).read_text(), f"static/examples.js is out of date with {path}"
    # the editor starts with a spec (the first example) and numbers its lines
    assert page.input_value("#spec").startswith("#")
    assert page.locator("#gutter .ln").count() == page.input_value("#spec").count("\n") + 1
    assert page.inner_text("#state") == "idle"


def test_passing_spec(page: Any, shots: Path) -> None:
    page.goto("/")
    page.select_option("#examples", "row_smem_swizzled")
    assert page.input_value("#spec") == SWIZZLED
    _run(page, "pass")
    assert page.inner_text(".run .verdict") == "PASS"
    assert "as expected" in page.inner_text("#state")
    assert page.locator(".finding").count() == 0
    statuses = set(page.locator("table.results .status").all_inner_texts())
    assert statuses == {"PASS"}
    assert "/?job=" in page.url
    page.screenshot(path=str(shots / "pass.png"))


def test_failing_spec_finding_picture_permalink(page: Any, browser: Any, server: Server, shots: Path) -> None:
    page.goto("/")
    page.select_option("#examples", "row_smem")
    _run(page, "fail")
    assert page.inner_text(".run .verdict") == "FAIL"
    row = page.locator("table.results tr", has=page.locator("td.c-status", has_text="FAIL"))
    assert row.count() == 1 and row.locator("td.c-check").inner_text() == "bank_conflicts"
    assert row.locator("td.c-stage").inner_text() == "2.src"

    # the finding and its witness; clicking it highlights the stage's line of the spec
    finding = page.locator(".finding[data-check='bank_conflicts']").first
    assert "8 wavefronts (ideal 1)" in finding.inner_text()
    assert "bank 0" in finding.locator(".witness").inner_text()
    job_id = page.url.split("job=")[1]
    with server.client() as c:
        report = c.get(f"/v1/jobs/{job_id}").json()["report"]
    want = next(r["line"] for r in report["runs"][0]["results"] if r["status"] == "FAIL")
    assert ROW_SMEM.splitlines()[want - 1].strip() == "- copy:"  # the second copy stage
    assert _highlighted(page) == []
    finding.click()
    assert _highlighted(page) == [want]
    assert page.get_attribute("#editor", "data-highlight") == str(want)
    assert page.locator(".hl-line").count() == 1
    page.screenshot(path=str(shots / "fail-finding.png"))
    if not README_SHOT.exists() or os.environ.get("THREADMAP_SCREENSHOTS") == "1":
        README_SHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(README_SHOT))

    # the pictures of the failing stage: hover cells, read their tooltips
    page.click("#tab-btn-pictures")
    assert page.input_value("#stage") == "2"
    page.wait_for_selector("#svgbox svg rect")
    assert page.locator("#svgbox svg title").count() == page.locator("#svgbox svg rect").count() > 256
    tile = page.locator("#svgbox rect", has=page.locator("title", has_text=re.compile(r"^\(0,1\) = \(0, 1\): T1 V0$")))
    tile.first.hover()
    assert page.inner_text("#inspector") == "(0,1) = (0, 1): T1 V0"
    bank = page.locator("#svgbox rect", has=page.locator("title", has_text=re.compile(r"^warp 0 step 0 bank 0: ")))
    bank.first.hover()
    tip = page.inner_text("#inspector")
    assert tip.startswith("warp 0 step 0 bank 0: 8 distinct word(s)")
    assert "CONFLICT between lanes 0,2,4,6,8,10,12,14" in tip and "word 32: lanes 2" in tip
    page.screenshot(path=str(shots / "fail-pictures.png"))

    # the permalink, in a new page: the same spec, options and result
    href = page.get_attribute("#permalink", "href")
    assert href == f"/?job={job_id}"
    other = page.context.new_page()
    other.goto(href)
    other.wait_for_selector("#state.state-fail")
    assert other.input_value("#spec") == ROW_SMEM
    assert other.inner_text(".run .verdict") == "FAIL"
    assert other.locator(".finding[data-check='bank_conflicts']").count() >= 1
    other.locator(".finding").first.click()
    assert _highlighted(other) == [want]
    other.screenshot(path=str(shots / "permalink.png"))
    other.close()


def test_markup_in_spec_never_runs(page: Any, shots: Path) -> None:
    name = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    text = re.sub(r"(?m)^name: .*$", lambda _: f"name: '{name}'", SWIZZLED)
    page.goto("/")
    _set_spec(page, text)
    _run(page, "pass")
    assert page.inner_text(".run .spec-name") == name
    assert page.locator("#report script, #report img").count() == 0
    page.wait_for_timeout(200)  # an onerror would have fired by now
    assert page.evaluate("window.__pwned") is None

    # the SVG sanitizer: scripts, handlers and foreign content are dropped, tooltips kept
    hostile = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20" onload="window.__pwned=3">'
               '<script>window.__pwned=4</script>'
               '<rect x="0" y="0" width="20" height="20" fill="red" onmouseover="window.__pwned=5">'
               '<title>T0 V0 &lt;b&gt;</title></rect>'
               '<a href="javascript:window.__pwned=6"><rect x="20" y="0" width="20" height="20"/></a>'
               '<foreignObject width="10" height="10"><img xmlns="http://www.w3.org/1999/xhtml" src="x" '
               'onerror="window.__pwned=7"/></foreignObject></svg>')
    page.click("#tab-btn-pictures")
    page.wait_for_selector("#svgbox svg rect")  # the job's own picture first
    out = page.evaluate("""(s) => {
        const node = window.threadmapExplorer.sanitizeSvg(s);
        document.getElementById('svgbox').replaceChildren(node);
        return node.outerHTML; }""", hostile)
    assert "script" not in out and "onload" not in out and "onmouseover" not in out
    assert "javascript" not in out and "foreignObject" not in out
    assert page.locator("#svgbox rect").count() == 1
    page.locator("#svgbox rect").first.hover()
    assert page.inner_text("#inspector") == "T0 V0 <b>"
    page.wait_for_timeout(200)
    assert page.evaluate("window.__pwned") is None


def test_a_spec_in_the_link_fragment_is_loaded_as_text(page: Any, server: Server) -> None:
    """The sweep report's links: ``/#spec=`` and the spec in base64url opens it in the editor,
    as text (a name that is markup never runs), ready to run; a fragment that does not decode
    says so."""
    from threadmap.sweep.report import explorer_link

    name = '<img src=x onerror="window.__pwned = 1">é'
    text = re.sub(r"(?m)^name: .*$", lambda _: f"name: '{name}'", SWIZZLED)
    page.goto(explorer_link(server.url + "/", text))
    page.wait_for_function("document.getElementById('spec').value.includes('__pwned')")
    assert page.input_value("#spec") == text
    _run(page, "pass")
    assert page.inner_text(".run .spec-name") == name
    page.wait_for_timeout(200)  # an onerror would have fired by now
    assert page.evaluate("window.__pwned") is None
    # another link in the same page (the fragment changes, nothing is loaded from the server)
    page.goto(explorer_link(server.url + "/", ROW_SMEM))
    page.wait_for_function("(s) => document.getElementById('spec').value === s", arg=ROW_SMEM)
    page.goto(server.url + "/#spec=%%%")
    page.wait_for_selector("#error:not([hidden])")
    assert "could not be read" in page.inner_text("#error")


def test_invalid_spec_shows_the_message_and_line(page: Any, shots: Path) -> None:
    text = SWIZZLED.replace("threads: 256", "threads: -3")
    line = text.splitlines().index("threads: -3") + 1
    page.goto("/")
    _set_spec(page, text)
    _run(page, "error")
    assert page.inner_text("#state") == "error 422"
    box = page.locator("#error")
    assert box.is_visible()
    msg = box.inner_text()
    assert "invalid" in msg and "threads = -3; a CTA has 1..1024 threads" in msg
    assert f"line {line}:" in msg
    assert _highlighted(page) == [line]
    page.screenshot(path=str(shots / "invalid.png"))
    # editing clears the highlight; a fixed spec runs
    _set_spec(page, SWIZZLED)
    assert _highlighted(page) == []
    _run(page, "pass")
    assert not box.is_visible()


def test_layout_calculator(page: Any, shots: Path) -> None:
    page.goto("/")
    page.click("#tab-btn-layout")
    page.fill("#layout-expr", "complement((2,2):(1,6), 24)")
    page.click("#layout-go")
    page.wait_for_selector("#layout-grid")
    facts = page.inner_text(".layout-facts")
    assert "(3,2):(2,12)" in facts and "17" in facts
    cells = [[c.inner_text() for c in r.locator("td").all()] for r in page.locator("#layout-grid tbody tr").all()]
    assert cells == [["0", "12"], ["2", "14"], ["4", "16"]]
    page.screenshot(path=str(shots / "layout.png"))
    page.fill("#layout-expr", "(4,8:(8,1)")
    page.click("#layout-go")
    page.wait_for_selector("#layout-error:not([hidden])")
    assert "expected )" in page.inner_text("#layout-error")
    assert page.locator("#layout-grid").count() == 0
