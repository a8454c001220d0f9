"""``threadmap serve``: every endpoint against the real server (uvicorn on a free loopback
port, a real SQLite file), the same job suite through local workers and through a Dask
LocalCluster with 2 workers, and the limits (body, queue, token, time, memory)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("fastapi", reason="the service extra is not installed: pip install 'threadmap[service]'")
pytest.importorskip("distributed", reason="the service extra is not installed: pip install 'threadmap[service]'")

from tests.support.service_server import ROOT, Server, start, wait_done  # noqa: E402

SPECS = ROOT / "specs"
ROW_SMEM = SPECS / "cute_transpose" / "row_smem.yaml"
SWIZZLED = SPECS / "cute_transpose" / "row_smem_swizzled.yaml"
YAML = {"content-type": "application/yaml"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    from distributed import LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        yield c.scheduler_address


@pytest.fixture(scope="module", params=["local", "dask"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = tmp_path_factory.mktemp(f"svc-{request.param}") / "jobs.db"
    args = ["--workers", "2", "--sync-timeout", "60"]
    if request.param == "dask":
        args += ["--dask", request.getfixturevalue("cluster")]
    srv = start(db, *args)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A local-workers server for what does not depend on the backend (synchronous verify,
    the calculator, request validation)."""
    srv = start(tmp_path_factory.mktemp("svc-sync") / "jobs.db", "--sync-timeout", "60")
    yield srv
    srv.stop()


def _cli_report(path: Path, *args: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "threadmap.cli", "verify", str(path), "--format", "json", *args],
                          capture_output=True, text=True, cwd=ROOT)
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def _essence(report: dict[str, Any]) -> list[Any]:
    """What a report says, without timings and paths."""
    return [(r["verdict"], r["as_expected"], r["sizes"], r["totals"],
             [(c["check"], c["stage"], c["side"], c["status"], c["summary"]) for c in r["results"]])
            for r in report["runs"]]


# ------------------------------------------------------------------------------- the suite
def test_health_schema_metrics_docs(server: Server) -> None:
    with server.client() as c:
        assert c.get("/healthz").json()["status"] == "ok"
        schema = c.get("/v1/schema").json()
        assert "stages" in schema["properties"]
        assert c.get("/openapi.json").json()["paths"]["/v1/jobs"]["post"]
        assert c.get("/docs").status_code == 200
        text = c.get("/metrics").text
        assert "threadmap_jobs{" in text and "threadmap_queue_depth" in text
        assert c.get("/").status_code == 200
        assert c.get("/healthz").json()["backend"] == ("dask" if "dask" in server.db.parent.name else "local")


def test_job_report_is_the_cli_report_in_every_format(server: Server) -> None:
    want = _essence(_cli_report(ROW_SMEM))
    text = ROW_SMEM.read_text()
    doc = yaml.safe_load(text)
    bodies = [(text, "application/yaml"), (json.dumps(doc), "application/json")]
    with server.client() as c:
        ids = set()
        for body, ctype in bodies:
            r = c.post("/v1/jobs", content=body, headers={"content-type": ctype})
            assert r.status_code in (200, 202), r.text
            job = wait_done(c, r.json()["id"])
            assert job["state"] == "done" and job["exit_status"] == 0, job
            assert _essence(job["report"]) == want
            ids.add(job["id"])
        # content-addressed: the same spec as YAML (with its comments) and as JSON is one job
        assert len(ids) == 1
        again = c.post("/v1/jobs", content=text, headers=YAML)
        assert again.status_code == 200 and again.json()["cached"] is True
        (job_id,) = ids
        assert c.get(f"/v1/jobs/{job_id}/spec").text == text
        sarif = c.get(f"/v1/jobs/{job_id}/sarif").json()
        assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"][0]["ruleId"] == "bank_conflicts"
        junit = ET.fromstring(c.get(f"/v1/jobs/{job_id}/junit").text)
        assert junit.tag in ("testsuites", "testsuite")
        svg = c.get(f"/v1/jobs/{job_id}/svg", params={"stage": 2}).text
        assert svg.startswith("<svg") or "<svg" in svg[:200]
        assert "<title>" in svg and "bank" in svg


def test_toml_and_multipart(server: Server) -> None:
    toml = next(p for p in (ROOT / "tests" / "cli" / "corpus").glob("ok-*.toml"))
    files = [("files", (p.name, p.read_bytes(), "application/octet-stream"))
             for p in (SWIZZLED, SPECS / "sgemm" / "sgemm_1_copy_a.yaml")]
    with server.client() as c:
        r = c.post("/v1/jobs", files=files)
        assert r.status_code in (200, 202), r.text
        jobs = r.json()["jobs"]
        assert [j["name"] for j in jobs] == ["row_smem_swizzled.yaml", "sgemm_1_copy_a.yaml"]
        for j in jobs:
            assert wait_done(c, j["id"])["report"]["runs"][0]["verdict"] == "pass"
        r = c.post("/v1/jobs", content=toml.read_bytes(), headers={"content-type": "application/toml"})
        assert r.status_code in (200, 202, 422), r.text  # a corpus TOML is valid or rejected, never a 5xx


def test_options_checks_sizes_exhaustive_prove(server: Server) -> None:
    with server.client() as c:
        r = c.post("/v1/jobs", content=ROW_SMEM.read_text(), headers=YAML,
                   params={"checks": "bank_conflicts", "sizes": "M=64,N=48", "exhaustive": "true"})
        job = wait_done(c, r.json()["id"])
        want = _essence(_cli_report(ROW_SMEM, "--checks", "bank_conflicts", "--sizes", "M=64,N=48", "--exhaustive"))
        assert _essence(job["report"]) == want
        assert job["options"] == {"checks": ["bank_conflicts"], "engine": "verify", "exhaustive": True,
                                  "sizes": {"M": 64, "N": 48}}
        r = c.post("/v1/jobs", content=(SPECS / "ranges" / "row_smem_swizzled.yaml").read_text(), headers=YAML,
                   params={"engine": "prove"})
        job = wait_done(c, r.json()["id"], timeout_s=300)
        assert job["state"] == "done", job
        props = {p["property"]: p["status"] for p in job["report"]["runs"][0]["properties"]}
        assert props["coverage"] == "PROVED" and props["bank_conflicts"] == "PROVED"
        if "dask" not in server.db.parent.name:  # a job on a Dask worker reports no progress, a verify neither
            # a proof reports its progress as a verify does: in its own unit, all done by the end
            assert job["progress"] == {"done": len(props), "total": len(props), "unit": "properties"}, job["progress"]
        assert c.get(f"/v1/jobs/{job['id']}/sarif").json()["version"] == "2.1.0"


def test_sync_verify_and_layout(local: Server) -> None:
    with local.client() as c:
        r = c.post("/v1/verify", content=SWIZZLED.read_text(), headers=YAML)
        assert r.status_code == 200 and _essence(r.json()) == _essence(_cli_report(SWIZZLED))
        r = c.post("/v1/layout", json={"expr": "complement((2,2):(1,6), 24)"})
        assert r.status_code == 200 and r.json()["result"] == "(3,2):(2,12)"
        r = c.post("/v1/layout", json={"expr": "(4,8):(8,1)", "ops": ["logical_divide", "(2,4)"]})
        assert r.json()["result"] == "((2,2),(4,2)):((8,16),(1,4))"
        grid = c.post("/v1/layout", json={"expr": "(2,3):(3,1)"}).json()["grid"]
        assert grid == [[0, 1, 2], [3, 4, 5]]
        bad = c.post("/v1/layout", json={"expr": "(4,8):(8,1"})
        assert bad.status_code == 422 and "expected )" in bad.json()["detail"]


def test_bad_requests_are_4xx_with_the_loaders_message(local: Server) -> None:
    with local.client() as c:
        r = c.post("/v1/jobs", content="spec: 1\nname: x\nthreads: [1, 2\n", headers=YAML)
        assert r.status_code == 422 and r.json()["detail"].startswith("spec.yaml:")
        r = c.post("/v1/jobs", content=ROW_SMEM.read_text().replace("threads: 256", "threads: 100"), headers=YAML)
        assert r.status_code == 422 and "threads" in r.json()["detail"]
        assert c.post("/v1/jobs", content="", headers=YAML).status_code == 400
        assert c.post("/v1/jobs", content=b"\xff\xfe", headers=YAML).status_code == 400
        assert c.post("/v1/jobs", content=ROW_SMEM.read_text(), headers=YAML,
                      params={"checks": "nope"}).status_code == 422
        assert c.post("/v1/jobs", content=ROW_SMEM.read_text(), headers=YAML,
                      params={"sizes": "M=x"}).status_code == 422
        assert c.post("/v1/jobs", content=ROW_SMEM.read_text(), headers=YAML,
                      params={"engine": "gpu"}).status_code == 422
        assert c.get("/v1/jobs/" + "0" * 32).status_code == 404
        big = "# " + "x" * (1 << 20) + "\n" + ROW_SMEM.read_text()
        assert c.post("/v1/jobs", content=big, headers=YAML).status_code == 413
        # work limits, checked before any work: an exhaustive grid past 2^20 blocks
        r = c.post("/v1/jobs", content=ROW_SMEM.read_text(), headers=YAML,
                   params={"sizes": "M=65536,N=65536", "exhaustive": "true"})
        assert r.status_code == 422 and "enumerates at most 1048576" in r.json()["detail"]
        # a size the spec does not have
        r = c.post("/v1/jobs", content=ROW_SMEM.read_text(), headers=YAML, params={"sizes": "Q=4"})
        assert r.status_code == 422 and "no size 'Q'" in r.json()["detail"]


def test_browser_and_network_guards(local: Server) -> None:
    """Another site's page may not write (no preflight for text/plain), a name that resolves to
    loopback is not this server's (DNS rebinding), answers are not sniffed, odd input to the
    calculator is a 422, and a stage too large to draw is refused before it is drawn."""
    with local.client() as c:
        r = c.post("/v1/jobs", content=SWIZZLED.read_text(),
                   headers={"content-type": "text/plain", "origin": "http://evil.example"})
        assert r.status_code == 403 and "cross-origin" in r.json()["detail"]
        same = c.post("/v1/jobs", content=SWIZZLED.read_text(),
                      headers={**YAML, "origin": local.url})
        assert same.status_code in (200, 202)
        assert c.get("/healthz", headers={"host": "evil.example"}).status_code == 400
        assert c.head("/healthz").status_code == 200
        assert c.get("/healthz").headers["x-content-type-options"] == "nosniff"
        r = c.post("/v1/layout", content=b'{"expr": "(4,4):(1,4) \\ud83d"}',
                   headers={"content-type": "application/json"})
        assert r.status_code == 422
        wide = HUGE_TILE.replace("2048", "512")
        job = wait_done(c, c.post("/v1/jobs", content=wide, headers=YAML).json()["id"])
        r = c.get(f"/v1/jobs/{job['id']}/svg")
        assert r.status_code == 422 and "pictures are drawn for tiles of at most 65536" in r.json()["detail"]


def test_fuzz_corpus_and_hostile_specs_never_5xx(local: Server) -> None:
    hostile = [
        "a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n",
        "[" * 5000 + "]" * 5000,
        ROW_SMEM.read_text().replace("{M: 1024, N: 1024}", "{M: 1099511627776, N: 1099511627776}"),
        ROW_SMEM.read_text().replace('"(16,16):(16,1)"}', '"' + "(" * 3000 + "16" + ")" * 3000 + ':1"}', 1),
        "!!python/object/apply:os.system ['echo pwned']\n",
        "spec: 1\nname: x\nthreads: 32\ntensors: {a: {memory: global, layout: '/etc/passwd'}}\nstages: [barrier]\n",
    ]
    corpus = [p for p in sorted((ROOT / "tests" / "cli" / "corpus").iterdir())
              if p.suffix in (".yaml", ".toml", ".json") and not p.name.endswith(".argv.json")
              and p.name != "index.json"]
    assert len(corpus) > 50
    statuses: dict[int, int] = {}
    with local.client() as c:
        for body in [*hostile, *(p.read_bytes() for p in corpus)]:
            r = c.post("/v1/verify", content=body, headers={"content-type": "application/octet-stream"})
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            assert r.status_code < 500, (r.status_code, r.text[:300])
    assert statuses.get(422, 0) > 20 and statuses.get(200, 0) > 5, statuses


# ------------------------------------------------------------------------------- limits
def test_token_guards_the_write_endpoints(tmp_path: Path) -> None:
    srv = start(tmp_path / "jobs.db", "--token", "s3cret")
    try:
        with srv.client() as c:
            assert c.post("/v1/jobs", content=SWIZZLED.read_text(), headers=YAML).status_code == 401
            assert c.post("/v1/verify", content=SWIZZLED.read_text(), headers=YAML,
                          ).status_code == 401
            assert c.post("/v1/jobs", content=SWIZZLED.read_text(),
                          headers={**YAML, "authorization": "Bearer wrong"}).status_code == 401
            ok = c.post("/v1/jobs", content=SWIZZLED.read_text(), headers={**YAML, "authorization": "bearer s3cret"})
            assert ok.status_code in (200, 202)  # the scheme's case does not matter (RFC 7235)
            assert c.get(f"/v1/jobs/{ok.json()['id']}").status_code == 200  # reading needs no token
    finally:
        srv.stop()


def test_queue_full_and_time_limit(tmp_path: Path) -> None:
    srv = start(tmp_path / "jobs.db", "--workers", "1", "--queue", "1", "--job-timeout", "2")
    slow = {"sizes": "M=8192,N=8192", "exhaustive": "true"}
    try:
        with srv.client() as c:
            first = c.post("/v1/jobs", content=SWIZZLED.read_text(), headers=YAML, params=slow)
            assert first.status_code == 202
            full = c.post("/v1/jobs", content=ROW_SMEM.read_text(), headers=YAML)
            assert full.status_code == 503 and int(full.headers["retry-after"]) > 0
            job = wait_done(c, first.json()["id"])
            assert job["state"] == "failed" and job["error"].startswith("time limit"), job
            assert c.get("/healthz").status_code == 200  # the server is still up
            # the refused spec left nothing behind: now there is room, it is a new job
            again = c.post("/v1/jobs", content=ROW_SMEM.read_text(), headers=YAML)
            assert again.status_code == 202 and again.json()["new"] is True
            assert wait_done(c, again.json()["id"])["state"] == "done"
            metrics = c.get("/metrics").text
            assert 'threadmap_jobs{state="failed"} 1.0' in metrics and 'threadmap_rejected_total{reason="queue_full"}' \
                in metrics
    finally:
        srv.stop()


#: one 2048x2048 tile per CTA: its partitions and tables need a few hundred MiB
HUGE_TILE = """spec: 1
name: one huge tile
element: f32
threads: 1024
sizes: {M: 2048, N: 2048}
tensors:
  x: {memory: global, layout: "(M,N):(N,1)"}
  y: {memory: global, layout: "(M,N):(N,1)"}
stages:
  - copy:
      src: {tensor: x, tile: [2048, 2048], at: [bx, by], threads: "(32,32):(32,1)"}
      dst: {tensor: y, tile: [2048, 2048], at: [bx, by], threads: "(32,32):(32,1)"}
"""


def test_memory_limit(tmp_path: Path) -> None:
    srv = start(tmp_path / "jobs.db", "--job-memory", "100")
    try:
        with srv.client() as c:
            r = c.post("/v1/jobs", content=HUGE_TILE, headers=YAML)
            assert r.status_code == 202, r.text
            job = wait_done(c, r.json()["id"])
            assert job["state"] == "failed" and job["error"].startswith("memory limit"), job
            small = c.post("/v1/jobs", content=SWIZZLED.read_text(), headers=YAML)  # the server is fine
            assert wait_done(c, small.json()["id"])["state"] == "done"
    finally:
        srv.stop()


def test_kill_9_with_jobs_queued_and_running_then_restart(tmp_path: Path) -> None:
    db = tmp_path / "jobs.db"
    srv = start(db, "--workers", "1")
    ids = []
    try:
        with srv.client() as c:
            for n in (2048, 2560, 3072, 3584):
                r = c.post("/v1/jobs", content=SWIZZLED.read_text(), headers=YAML,
                           params={"sizes": f"M={n},N={n}", "exhaustive": "true"})
                assert r.status_code == 202
                ids.append(r.json()["id"])
            t0 = time.monotonic()
            while time.monotonic() - t0 < 20:  # one running, the others waiting for the one worker
                states = [c.get(f"/v1/jobs/{i}").json()["state"] for i in ids]
                if "running" in states:
                    break
                time.sleep(0.05)
            assert "running" in states and "queued" in states, states
    finally:
        srv.kill()
    from threadmap.service.store import Store
    before = [Store(db).get(i) for i in ids]
    assert all(j is not None and j.state in ("queued", "running", "done") for j in before)
    srv = start(db, "--workers", "2")
    try:
        with srv.client() as c:
            finals = [wait_done(c, i, timeout_s=300) for i in ids]
        assert [f["state"] for f in finals] == ["done"] * 4, finals
        assert all(f["report"]["runs"][0]["verdict"] == "pass" for f in finals)
    finally:
        srv.stop()


def test_synchronous_work_is_bounded(tmp_path: Path) -> None:
    """Drawings, calculations and synchronous verifies run in children, at most
    --sync-workers at once: past that a 503, and the job API stays quick."""
    srv = start(tmp_path / "jobs.db", "--sync-workers", "1", "--sync-timeout", "30")
    slow = ROW_SMEM.read_text().replace("{M: 1024, N: 1024}", "{M: 4096, N: 4096}")
    try:
        with srv.client() as c:
            got: list[int] = []
            t = threading.Thread(target=lambda: got.append(
                c.post("/v1/verify", content=slow, headers=YAML, params={"exhaustive": "true"}).status_code))
            t.start()
            time.sleep(1.0)
            busy = c.post("/v1/layout", json={"expr": "(2,3):(3,1)"})
            assert busy.status_code == 503 and busy.headers["retry-after"]
            t0 = time.monotonic()
            assert c.get("/healthz").status_code == 200 and c.get("/v1/schema").status_code == 200
            assert time.monotonic() - t0 < 5
            t.join(120)
            assert got == [200]
            assert c.post("/v1/layout", json={"expr": "(2,3):(3,1)"}).status_code == 200
    finally:
        srv.stop()


def test_store_migrates_and_survives(tmp_path: Path) -> None:
    from threadmap.service.store import MIGRATIONS, Store
    s = Store(tmp_path / "a.db")
    assert s.schema_version() == len(MIGRATIONS)
    job, created = s.add("k1", "n", "spec", "text", "yaml", {"engine": "verify"})
    assert created and job.state == "queued"
    assert s.add("k1", "n", "spec", "text", "yaml", {})[1] is False
    assert s.start("k1") and not s.start("k1")
    assert s.requeue_unfinished() == ["k1"] and s.get("k1").state == "queued"  # type: ignore[union-attr]
    s.fail("k1", "why")
    s.retry("k1")
    assert s.get("k1").state == "queued"  # type: ignore[union-attr]
    with sqlite3.connect(tmp_path / "a.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # a store from a newer threadmap is refused, not damaged
    with sqlite3.connect(tmp_path / "a.db") as db:
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(RuntimeError, match="newer"):
        Store(tmp_path / "a.db")
