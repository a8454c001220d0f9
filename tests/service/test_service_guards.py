"""``threadmap serve``'s guards against the real server (uvicorn on a free loopback port, a
real SQLite file): foreign origins (``null`` included), unauthenticated work that must not
starve authenticated work, a locked store, slow and greedy clients, and what a job's answer
fields mean."""

from __future__ import annotations

import select
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service extra is not installed: pip install 'threadmap[service]'")

from tests.support.service_server import ROOT, Server, start, wait_done  # noqa: E402

SPECS = ROOT / "specs"
ROW_SMEM = SPECS / "cute_transpose" / "row_smem.yaml"
SWIZZLED = SPECS / "cute_transpose" / "row_smem_swizzled.yaml"
YAML = {"content-type": "application/yaml"}

#: one 256x256 tile (65,536 elements, the most a picture may have): its drawing takes seconds
BIG_TILE = """spec: 1
name: one big tile
element: f32
threads: 1024
sizes: {M: 256, N: 256}
tensors:
  x: {memory: global, layout: "(M,N):(N,1)"}
  y: {memory: global, layout: "(M,N):(N,1)"}
stages:
  - copy:
      src: {tensor: x, tile: [256, 256], at: [bx, by], threads: "(32,32):(32,1)"}
      dst: {tensor: y, tile: [256, 256], at: [bx, by], threads: "(32,32):(32,1)"}
"""


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start(tmp_path_factory.mktemp("svc-guards") / "jobs.db")
    yield srv
    srv.stop()


# ------------------------------------------------------------------------------- item 6
def test_origin_null_is_a_foreign_origin(local: Server) -> None:
    """A sandboxed frame (or a data: page) sends ``Origin: null``: it may not write either."""
    with local.client() as c:
        for path, kw in (("/v1/jobs", {"content": SWIZZLED.read_text(), "headers": {"content-type": "text/plain"}}),
                         ("/v1/verify", {"content": SWIZZLED.read_text(), "headers": {"content-type": "text/plain"}}),
                         ("/v1/layout", {"json": {"expr": "(2,3):(3,1)"}, "headers": {}})):
            headers = {**kw.pop("headers"), "origin": "null"}  # type: ignore[dict-item]
            r = c.post(path, headers=headers, **kw)  # type: ignore[arg-type]
            assert r.status_code == 403 and "cross-origin request from null" in r.json()["detail"], (path, r.text)
        # reading stays open to any page, and the server's own origin may write
        assert c.get("/healthz", headers={"origin": "null"}).status_code == 200
        assert c.post("/v1/layout", json={"expr": "(2,3):(3,1)"}, headers={"origin": local.url}).status_code == 200


# ------------------------------------------------------------------------------- item 10
def test_post_says_new_get_says_created(local: Server) -> None:
    """``created`` is one thing (when the job was first submitted, a timestamp) in every
    answer; whether this request made the job is ``new``."""
    with local.client() as c:
        first = c.post("/v1/jobs", content=ROW_SMEM.read_text(), headers=YAML, params={"sizes": "M=96,N=64"})
        assert first.status_code == 202, first.text
        body = first.json()
        assert body["new"] is True and body["cached"] is False
        assert isinstance(body["created"], float) and not isinstance(body["created"], bool)
        job = wait_done(c, body["id"])
        assert job["created"] == body["created"] and "new" not in job
        # a verify job reports its progress in blocks, all of them by the end
        assert job["progress"]["unit"] == "blocks" and job["progress"]["done"] == job["progress"]["total"] > 0
        again = c.post("/v1/jobs", content=ROW_SMEM.read_text(), headers=YAML, params={"sizes": "M=96,N=64"}).json()
        assert again["new"] is False and again["cached"] is True and again["created"] == body["created"]


# ------------------------------------------------------------------------------- item 7
def test_unauthenticated_work_never_starves_authenticated(tmp_path: Path) -> None:
    """With --token, drawings and calculations need no token, but run on their own bounded
    lane: clients without the token keep it full, and a verify with the token still runs."""
    srv = start(tmp_path / "jobs.db", "--token", "s3cret", "--sync-workers", "1", "--sync-timeout", "60")
    auth = {"authorization": "Bearer s3cret"}
    stop = threading.Event()
    try:
        with srv.client() as c:
            r = c.post("/v1/jobs", content=BIG_TILE, headers={**YAML, **auth})
            assert r.status_code == 202, r.text
            job_id = r.json()["id"]
            assert wait_done(c, job_id, timeout_s=300)["state"] == "done"

            def flood() -> None:  # unauthenticated drawings, one after another (bounded)
                with srv.client() as fc:
                    for _ in range(20):
                        if stop.is_set():
                            return
                        if fc.get(f"/v1/jobs/{job_id}/svg").status_code == 503:
                            time.sleep(0.1)  # the other flooder holds the lane: keep asking

            threads = [threading.Thread(target=flood, daemon=True) for _ in range(2)]
            for t in threads:
                t.start()
            # the unauthenticated bound is reached: another unauthenticated calculation is refused
            for _ in range(600):
                busy = c.post("/v1/layout", json={"expr": "(2,3):(3,1)"})
                if busy.status_code == 503:
                    break
                time.sleep(0.05)
            assert busy.status_code == 503 and busy.headers["retry-after"], busy.text
            # ... and a client with the token is still served, now
            ok = c.post("/v1/verify", content=SWIZZLED.read_text(), headers={**YAML, **auth})
            assert ok.status_code == 200, ok.text
            assert ok.json()["runs"][0]["verdict"] == "pass"
            lay = c.post("/v1/layout", json={"expr": "(2,3):(3,1)"}, headers=auth)
            assert lay.status_code == 200 and lay.json()["result"] == "(2,3):(3,1)"
            # a wrong token is refused, not taken for none
            assert c.post("/v1/layout", json={"expr": "(2,3):(3,1)"},
                          headers={"authorization": "Bearer nope"}).status_code == 401
            stop.set()
            for t in threads:
                t.join(300)
    finally:
        stop.set()
        srv.stop()


# ------------------------------------------------------------------------------- item 8
def test_locked_store_answers_json_503_with_retry_after(tmp_path: Path) -> None:
    """Another writer holds the SQLite file: a submission is a JSON 503 with Retry-After after
    a short wait, never a 500 and never a traceback in the log; reads go on (WAL)."""
    db = tmp_path / "jobs.db"
    srv = start(db)
    try:
        with srv.client() as c:
            done = wait_done(c, c.post("/v1/jobs", content=SWIZZLED.read_text(), headers=YAML).json()["id"])
            holder = sqlite3.connect(db, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")  # the write lock, held
            try:
                t0 = time.monotonic()
                r = c.post("/v1/jobs", content=ROW_SMEM.read_text(), headers=YAML)
                waited = time.monotonic() - t0
                assert r.status_code == 503, (r.status_code, r.text)
                assert r.headers["content-type"].startswith("application/json")
                assert int(r.headers["retry-after"]) >= 1 and "locked" in r.json()["detail"]
                assert c.get(f"/v1/jobs/{done['id']}").json()["state"] == "done"
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            print(f"locked store: answered 503 after {waited:.2f} s")
            again = c.post("/v1/jobs", content=ROW_SMEM.read_text(), headers=YAML)
            assert again.status_code == 202 and again.json()["new"] is True
            assert wait_done(c, again.json()["id"])["state"] == "done"
            assert 'threadmap_rejected_total{reason="store_locked"} 1.0' in c.get("/metrics").text
    finally:
        srv.stop()
    log = srv.log.read_text()
    assert "Traceback" not in log and " 500" not in log, log[-3000:]


# ------------------------------------------------------------------------------- item 9
def _trickler(port: int, head_only: bool) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if head_only:  # the request line, then the head a byte at a time
        s.sendall(b"POST /v1/jobs HTTP/1.1\r\n")
    else:  # the whole head, then the body a byte at a time
        s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/yaml\r\n"
                  b"Content-Length: 100000\r\n\r\n")
    s.setblocking(False)
    return s


def test_slow_clients_are_dropped_and_connections_bounded(tmp_path: Path) -> None:
    """Clients that trickle a request's head or body are dropped at the request deadline, and
    past --max-connections a request is answered 503 at once; afterwards the server serves."""
    srv = start(tmp_path / "jobs.db", "--request-timeout", "3", "--max-connections", "16")
    port = int(srv.url.rsplit(":", 1)[1])
    t0 = time.monotonic()  # no request deadline can fire before t0 + 3 s
    socks = [_trickler(port, head_only=i % 2 == 1) for i in range(24)]
    open_ = set(range(len(socks)))
    answers: dict[int, bytes] = {}
    first_at: dict[int, float] = {}  # seconds after t0 at which each answer began
    try:
        with srv.client() as c:
            rounds = 0
            time.sleep(0.5)  # the connections past the bound are answered at once: read that first
            while open_ and rounds < 120:  # at most 120 bytes each, 0.25 s apart
                rounds += 1
                readable, _, _ = select.select([socks[i] for i in open_], [], [], 0)
                for s in readable:
                    i = socks.index(s)
                    try:
                        data = s.recv(65536)
                    except ConnectionResetError:
                        data = b""
                    if data:
                        first_at.setdefault(i, time.monotonic() - t0)
                        answers[i] = answers.get(i, b"") + data
                    else:
                        open_.discard(i)
                for i in sorted(open_):
                    try:
                        socks[i].send(b"x" if i % 2 == 0 else b"X")
                    except (BrokenPipeError, ConnectionResetError):
                        open_.discard(i)
                time.sleep(0.25)
            print(f"slow clients: all dropped after {rounds} rounds; answers {len(answers)}")
            assert not open_, f"{len(open_)} of {len(socks)} trickling connections still open after {rounds} rounds"
            # the bound answers 503 to whichever request's head completes while more than 16
            # connections are open (uvicorn counts at the head, not at accept, so which ones is
            # the scheduler's choice); the deadline's own answers come later and are not the bound's
            refused = [i for i, a in answers.items() if a.startswith(b"HTTP/1.1 503") and first_at[i] < 3.0]
            assert refused, answers
            assert all(i % 2 == 0 for i in refused), refused  # only complete heads can be refused
            assert c.get("/healthz").status_code == 200
            assert c.post("/v1/layout", json={"expr": "(2,3):(3,1)"}).status_code == 200
    finally:
        for s in socks:
            s.close()
        srv.stop()
    assert "Traceback" not in srv.log.read_text()
