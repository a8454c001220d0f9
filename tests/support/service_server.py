"""Start a real ``threadmap serve`` (uvicorn on a free loopback port) for the service tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    db: Path
    log: Path

    def client(self, **kw: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, **kw)

    def kill(self) -> None:
        """kill -9: no shutdown code runs (the store must cope)."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


def start(db: Path, *args: str, ready_s: float = 60) -> Server:
    port = free_port()
    log = db.with_suffix(f".{port}.log")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("THREADMAP_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "threadmap.cli", "serve", "--port", str(port), "--db", str(db),
                             *args], stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}"
    t0 = time.monotonic()
    while time.monotonic() - t0 < ready_s:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}): {log.read_text()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return Server(proc, url, db, log)
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the server did not start in {ready_s} s: {log.read_text()}")


def wait_done(client: httpx.Client, job_id: str, timeout_s: float = 120) -> dict[str, Any]:
    t0 = time.monotonic()
    while True:
        got: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if got["state"] in ("done", "failed"):
            return got
        if time.monotonic() - t0 > timeout_s:
            raise TimeoutError(f"job {job_id} still {got['state']} after {timeout_s} s")
        time.sleep(0.1)
