"""The sweep's results, one row per configuration, in SQLite.

A row is written in its own transaction as soon as its configuration is done (analysed, or
found not analysable), so a sweep killed at any point keeps every finished configuration and
a rerun does only the others.  Rows are keyed by :meth:`Configuration.digest` (the
configuration and the CUTLASS headers' version) and the extractor's version: a new extractor
does its configurations again instead of trusting older rows.  Each row also names the
verifier whose verdict it holds: a row of another verifier whose spec is stored is verified
again from that spec alone.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from threadmap.sweep.library import SweepError

#: bumped whenever what a row holds would change for the same configuration's extraction (its
#: spec text); a family whose extraction alone changed gets a revision in its digest instead
#: (``library.extraction_revision``)
EXTRACTOR_VERSION = "4"
#: bumped whenever threadmap's verdict on the same spec text would change (2: the L1-allocating
#: cp.async's shared wavefronts as measured on the H200): a row of another verifier whose spec
#: is stored is verified again from that spec, without extracting it again
VERIFIER_VERSION = "2"
#: bumped whenever ``threadmap prove``'s verdict on the same spec text would change: a row whose
#: proof another prover made is proved again (``--prove``) from its stored spec
PROVER_VERSION = "2"  # 2: nested modes, quotients, the structure and polynomial premises

Status = Literal["pass", "fail", "not_analysed"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
  digest TEXT NOT NULL,
  extractor TEXT NOT NULL,
  key TEXT NOT NULL,
  label TEXT NOT NULL,
  status TEXT NOT NULL,
  reason_kind TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  findings TEXT NOT NULL DEFAULT '[]',
  warnings TEXT NOT NULL DEFAULT '[]',
  spec TEXT NOT NULL DEFAULT '',
  spec_hash TEXT NOT NULL DEFAULT '',
  kernels TEXT NOT NULL DEFAULT '[]',
  seconds REAL NOT NULL DEFAULT 0,
  written REAL NOT NULL,
  costs TEXT NOT NULL DEFAULT '[]',
  verifier TEXT NOT NULL DEFAULT '1',
  proof TEXT NOT NULL DEFAULT '[]',
  prover TEXT NOT NULL DEFAULT '',
  cutlass TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (digest, extractor)
);
CREATE INDEX IF NOT EXISTS results_spec ON results (spec_hash);
"""


@dataclass
class Result:
    """What the sweep concluded about one configuration."""

    digest: str
    key: str
    label: str
    status: Status
    reason_kind: str = ""      # a short class of the reason (what the summary groups by)
    reason: str = ""           # the reason in full
    findings: list[dict[str, Any]] = field(default_factory=list)
    #: costs the checks report without failing (uncoalesced sectors, bank conflicts)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    spec: str = ""             # the spec text (analysed configurations)
    spec_hash: str = ""        # the spec's content without its names (equal specs verify once)
    kernels: list[str] = field(default_factory=list)
    seconds: float = 0.0       # CPU seconds of its verification
    #: the counts of the cost checks (sectors, wavefronts and their ideal) per stage side at
    #: whole tiles, passing or not: what the report plots across the library
    costs: list[dict[str, Any]] = field(default_factory=list)
    verifier: str = VERIFIER_VERSION  # the verifier whose verdict this is
    #: ``threadmap prove`` over the spec's size ranges (``--prove``): per spec document, each
    #: property's status, method, classes, reason and (refuted) sizes; or its error
    proof: list[dict[str, Any]] = field(default_factory=list)
    prover: str = ""           # the prover whose proof this is ('' when not proved)


class Store:
    """The results database (created with its folder when missing).  ``cutlass``: the header
    tree's identity that the rows written through this store belong to (``toolchain.
    cutlass_identity``; the digest holds it too, the column lets ``--compare`` find a tree's
    rows by its version)."""

    def __init__(self, path: Path, cutlass: str = "") -> None:
        self.path = path
        self.cutlass = cutlass
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(str(path), timeout=60, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.executescript(_SCHEMA)
            # a file from before the costs column (its rows are an older extractor's: redone)
            columns = {r[1] for r in self.conn.execute("PRAGMA table_info(results)")}
            if "costs" not in columns:
                self.conn.execute("ALTER TABLE results ADD COLUMN costs TEXT NOT NULL DEFAULT '[]'")
            # a file from before the verifier column: its rows are the first verifier's
            if "verifier" not in columns:
                self.conn.execute("ALTER TABLE results ADD COLUMN verifier TEXT NOT NULL DEFAULT '1'")
            # a file from before --prove: no row is proved
            if "prover" not in columns:
                self.conn.execute("ALTER TABLE results ADD COLUMN proof TEXT NOT NULL DEFAULT '[]'")
                self.conn.execute("ALTER TABLE results ADD COLUMN prover TEXT NOT NULL DEFAULT ''")
            # a file from before --compare: its rows' header trees are not known
            if "cutlass" not in columns:
                self.conn.execute("ALTER TABLE results ADD COLUMN cutlass TEXT NOT NULL DEFAULT ''")
        except (OSError, sqlite3.Error) as e:
            raise SweepError(f"--db {path}: cannot open the results database: {e}") from None

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        """A database that opened but fails later (corrupted pages, a row that is not ours, a
        full disk) is the user's file to fix: one line, not an internal error."""
        try:
            yield
        except sqlite3.Error as e:
            raise SweepError(f"--db {self.path}: cannot {doing} the results database: {e}") from None
        except (ValueError, TypeError) as e:  # a row's JSON or number that this code did not write
            if doing != "read":
                raise
            raise SweepError(f"--db {self.path}: a row of the results database cannot be read: {e}") from None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def done(self) -> dict[str, Result]:
        """Every configuration this extractor finished, by digest."""
        with self._guard("read"):
            return {r.digest: r for r in self._rows("WHERE extractor = ?", (EXTRACTOR_VERSION,))}

    def by_spec(self, spec_hash: str, proved: bool = False) -> Result | None:
        """A verified configuration whose spec has this content (its findings hold for an
        equal spec); with ``proved``, one the current prover proved too."""
        with self._guard("read"):
            r = self.conn.execute("SELECT digest FROM results WHERE spec_hash = ? AND extractor = ? AND verifier = ? "
                                  "AND status IN ('pass', 'fail') AND (? OR prover = ?) LIMIT 1",
                                  (spec_hash, EXTRACTOR_VERSION, VERIFIER_VERSION, not proved,
                                   PROVER_VERSION)).fetchone()
        return None if r is None else self.done_one(r[0])

    def check_writable(self) -> None:
        """Fail now, not after the work, when rows cannot be written (a read-only file or
        folder): a write that is rolled back."""
        with self._guard("write to"):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.execute("CREATE TABLE IF NOT EXISTS write_probe (x INTEGER)")
            finally:
                self.conn.execute("ROLLBACK")

    def identities(self) -> list[str]:
        """The header trees this extractor's rows belong to ('' for rows written before the
        store recorded them)."""
        with self._guard("read"):
            return [r[0] for r in self.conn.execute(
                "SELECT DISTINCT cutlass FROM results WHERE extractor = ? ORDER BY cutlass", (EXTRACTOR_VERSION,))]

    def done_one(self, digest: str) -> Result | None:
        with self._guard("read"):
            for r in self._rows("WHERE digest = ? AND extractor = ?", (digest, EXTRACTOR_VERSION)):
                return r
        return None

    def _rows(self, where: str, args: tuple[Any, ...]) -> Iterator[Result]:
        rows = self.conn.execute("SELECT digest, key, label, status, reason_kind, reason, findings, warnings, spec, "
                                 "spec_hash, kernels, seconds, costs, verifier, proof, prover "
                                 f"FROM results {where}", args)
        for r in rows:
            yield Result(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), json.loads(r[7]), r[8], r[9],
                         json.loads(r[10]), float(r[11]), json.loads(r[12]), r[13], json.loads(r[14]), r[15])

    def put(self, result: Result) -> None:
        """Write one result in its own transaction (a later write of the same digest replaces it)."""
        d = asdict(result)
        with self._guard("write to"):
            self._put(d)

    def _put(self, d: dict[str, Any]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.execute(
                "INSERT OR REPLACE INTO results (digest, extractor, key, label, status, reason_kind, reason, findings, "
                "warnings, spec, spec_hash, kernels, seconds, written, costs, verifier, proof, prover, cutlass) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (d["digest"], EXTRACTOR_VERSION, d["key"], d["label"], d["status"], d["reason_kind"], d["reason"],
                 json.dumps(d["findings"]), json.dumps(d["warnings"]), d["spec"], d["spec_hash"],
                 json.dumps(d["kernels"]), d["seconds"], time.time(), json.dumps(d["costs"]), d["verifier"],
                 json.dumps(d["proof"]), d["prover"], self.cutlass))
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def count(self) -> int:
        with self._guard("read"):
            r = self.conn.execute("SELECT COUNT(*) FROM results WHERE extractor = ?",
                                  (EXTRACTOR_VERSION,)).fetchone()
        return int(r[0])
