"""The service's job store: SQLite (a real file, WAL mode, schema migrations).

A job is content-addressed: its id is the hash of the normalised spec, the options and the
threadmap version (:func:`threadmap.service.jobs.job_key`), so the same request twice is the
same row.  States: ``queued`` -> ``running`` -> ``done`` | ``failed``.  A server that dies
leaves ``queued`` and ``running`` rows; :meth:`Store.requeue_unfinished` puts them back in the
queue on start, so no job is lost or left running forever.

Every connection is opened per call (``check_same_thread`` issues vanish, and SQLite's own
locking serialises writers); WAL lets readers run beside the one writer.  A request waits
for a write lock at most ``busy_seconds`` (then :class:`StoreBusy`: the service answers 503 with
``Retry-After``); the job's own bookkeeping (started, progress, finished) waits longer, since
dropping it would lose a result.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: schema migrations, in order; PRAGMA user_version is the number applied
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE jobs (
        id          TEXT PRIMARY KEY,
        state       TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
        name        TEXT NOT NULL,
        spec_name   TEXT,
        spec_text   TEXT NOT NULL,
        spec_format TEXT NOT NULL,
        options     TEXT NOT NULL,
        created     REAL NOT NULL,
        started     REAL,
        finished    REAL,
        attempts    INTEGER NOT NULL DEFAULT 0,
        progress    TEXT,
        error       TEXT,
        report      TEXT
    );
    CREATE INDEX jobs_state ON jobs (state, created);
    """,
    """
    ALTER TABLE jobs ADD COLUMN exit_status INTEGER;
    """,
    """
    ALTER TABLE jobs ADD COLUMN sarif TEXT;
    ALTER TABLE jobs ADD COLUMN junit TEXT;
    """,
)

STATES = ("queued", "running", "done", "failed")
#: seconds the job's bookkeeping waits for a write lock
BOOKKEEPING_BUSY_SECONDS = 30.0


class StoreBusy(RuntimeError):
    """The store stayed locked (another writer held it) longer than the caller may wait."""


@dataclass
class Job:
    id: str
    state: str
    name: str
    spec_name: str | None
    spec_text: str
    spec_format: str
    options: dict[str, Any]
    created: float
    started: float | None
    finished: float | None
    attempts: int
    progress: dict[str, Any] | None
    error: str | None
    report: dict[str, Any] | None
    exit_status: int | None
    sarif: str | None
    junit: str | None

    @staticmethod
    def from_row(row: sqlite3.Row) -> Job:
        return Job(row["id"], row["state"], row["name"], row["spec_name"], row["spec_text"], row["spec_format"],
                   json.loads(row["options"]), row["created"], row["started"], row["finished"], row["attempts"],
                   json.loads(row["progress"]) if row["progress"] else None, row["error"],
                   json.loads(row["report"]) if row["report"] else None, row["exit_status"], row["sarif"],
                   row["junit"])


class Store:
    """Jobs in one SQLite file."""

    def __init__(self, path: str | Path, busy_seconds: float = 1.0) -> None:
        self.path = str(path)
        self.busy_seconds = busy_seconds
        with self._connect(BOOKKEEPING_BUSY_SECONDS) as db:
            db.execute("PRAGMA journal_mode=WAL")
            self.migrate(db)

    @contextmanager
    def _connect(self, busy_seconds: float | None = None) -> Iterator[sqlite3.Connection]:
        wait = self.busy_seconds if busy_seconds is None else busy_seconds
        db = sqlite3.connect(self.path, timeout=wait, isolation_level=None)
        db.row_factory = sqlite3.Row
        try:
            db.execute("PRAGMA synchronous=NORMAL")
            yield db
        except sqlite3.OperationalError as e:
            # SQLITE_BUSY / SQLITE_LOCKED after the wait: the caller may retry, nothing is broken
            if getattr(e, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or \
                    "locked" in str(e):
                raise StoreBusy(f"the job store is locked by another writer (waited {wait:g} s)") from e
            raise
        finally:
            db.close()

    @staticmethod
    def migrate(db: sqlite3.Connection) -> int:
        """Apply the migrations this file has not seen; returns the schema version."""
        have = db.execute("PRAGMA user_version").fetchone()[0]
        if have > len(MIGRATIONS):
            raise RuntimeError(f"the job store has schema version {have}, newer than this threadmap "
                               f"({len(MIGRATIONS)})")
        for i in range(have, len(MIGRATIONS)):
            # one transaction per migration, the version bump inside it: all or nothing
            try:
                db.executescript(f"BEGIN IMMEDIATE;\n{MIGRATIONS[i]}\nPRAGMA user_version = {i + 1};\nCOMMIT;")
            except sqlite3.Error:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        return len(MIGRATIONS)

    # -- jobs ----------------------------------------------------------------------------
    def get(self, job_id: str) -> Job | None:
        with self._connect() as db:
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return Job.from_row(row) if row else None

    def add(self, job_id: str, name: str, spec_name: str | None, text: str, fmt: str,
            options: dict[str, Any]) -> tuple[Job, bool]:
        """Insert a queued job, or return the existing one with the same id: (job, created)."""
        with self._connect() as db:
            cur = db.execute(
                "INSERT OR IGNORE INTO jobs (id, state, name, spec_name, spec_text, spec_format, options, created) "
                "VALUES (?, 'queued', ?, ?, ?, ?, ?, ?)",
                (job_id, name, spec_name, text, fmt, json.dumps(options, sort_keys=True), time.time()))
            created = cur.rowcount == 1
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return Job.from_row(row), created

    def retry(self, job_id: str) -> None:
        """A failed job asked for again is queued again (a time-out may have been load)."""
        with self._connect() as db:
            db.execute("UPDATE jobs SET state='queued', error=NULL, started=NULL, finished=NULL, progress=NULL "
                       "WHERE id = ? AND state = 'failed'", (job_id,))

    def start(self, job_id: str) -> bool:
        """queued -> running; False when the job is no longer queued."""
        with self._connect(BOOKKEEPING_BUSY_SECONDS) as db:
            cur = db.execute("UPDATE jobs SET state='running', started=?, attempts=attempts+1 "
                             "WHERE id = ? AND state = 'queued'", (time.time(), job_id))
        return cur.rowcount == 1

    def progress(self, job_id: str, progress: dict[str, Any]) -> None:
        with self._connect(BOOKKEEPING_BUSY_SECONDS) as db:
            db.execute("UPDATE jobs SET progress=? WHERE id = ? AND state = 'running'",
                       (json.dumps(progress), job_id))

    def finish(self, job_id: str, report: dict[str, Any], exit_status: int, sarif: str | None = None,
               junit: str | None = None, seconds: float = 0.0) -> None:
        """running (or, from a cluster that does not say when it started, queued) -> done;
        ``seconds`` the job ran dates a start that was not recorded."""
        now = time.time()
        with self._connect(BOOKKEEPING_BUSY_SECONDS) as db:
            db.execute("UPDATE jobs SET state='done', finished=?, started=COALESCE(started, ?), report=?, "
                       "exit_status=?, sarif=?, junit=?, error=NULL WHERE id = ?",
                       (now, now - seconds, json.dumps(report), exit_status, sarif, junit, job_id))

    def fail(self, job_id: str, error: str, seconds: float = 0.0) -> None:
        now = time.time()
        with self._connect(BOOKKEEPING_BUSY_SECONDS) as db:
            db.execute("UPDATE jobs SET state='failed', finished=?, started=COALESCE(started, ?), error=? "
                       "WHERE id = ?", (now, now - seconds, error, job_id))

    def requeue_unfinished(self) -> list[str]:
        """Jobs a dead server left queued or running, oldest first, all queued again."""
        with self._connect(BOOKKEEPING_BUSY_SECONDS) as db:
            db.execute("BEGIN IMMEDIATE")
            ids = [r["id"] for r in db.execute(
                "SELECT id FROM jobs WHERE state IN ('queued', 'running') ORDER BY created")]
            db.execute("UPDATE jobs SET state='queued', started=NULL, progress=NULL "
                       "WHERE state IN ('queued', 'running')")
            db.execute("COMMIT")
        return ids

    def counts(self) -> dict[str, int]:
        with self._connect() as db:
            got = dict(db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
        return {s: int(got.get(s, 0)) for s in STATES}

    def durations(self, limit: int = 1000) -> list[float]:
        """Seconds from start to finish of the latest finished jobs."""
        with self._connect() as db:
            rows = db.execute("SELECT finished - started FROM jobs WHERE finished IS NOT NULL AND started IS NOT "
                              "NULL ORDER BY finished DESC LIMIT ?", (limit,)).fetchall()
        return [float(r[0]) for r in rows]

    def schema_version(self) -> int:
        with self._connect() as db:
            return int(db.execute("PRAGMA user_version").fetchone()[0])
