"""The durable local buffer: what the provider must write, kept on disk until it is written.

Every write the agent does not wait for (conversation turns, mirrored built-in memories,
auto-extracted facts) goes through here: appended to a small SQLite file under the profile's
HERMES_HOME (synchronous=FULL: on disk when `put` returns), then written to Mnemosyne by the
provider's writer thread (in batches, over HTTP) and deleted. If the server is unreachable,
entries wait, in order, and a Hermes restart finds them again. Each entry carries an
idempotency key that goes with it to the server, so an entry stored just before a crash (and so
still here) is not stored twice.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    key         TEXT NOT NULL UNIQUE,
    key_prefix  TEXT NOT NULL,
    op          TEXT NOT NULL,
    payload     TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT NOT NULL DEFAULT '',
    state       TEXT NOT NULL DEFAULT 'pending'
);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (state, id);
"""
PENDING, REJECTED = "pending", "rejected"


@dataclass(frozen=True)
class Entry:
    id: int
    key: str
    key_prefix: str
    op: str
    payload: dict[str, Any]
    created_at: datetime
    attempts: int


class Outbox:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # One connection shared by the threads that put and the one that drains.
        self._db = sqlite3.connect(
            self.path, check_same_thread=False, timeout=10.0, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self.path.chmod(0o600)  # conversations are private

    def put(self, op: str, payload: dict[str, Any], *, key_prefix: str) -> str:
        """Keep one write; returns its idempotency key."""
        key = uuid.uuid4().hex
        with self._lock:
            self._db.execute(
                "INSERT INTO outbox (key, key_prefix, op, payload, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    key,
                    key_prefix,
                    op,
                    json.dumps(payload, ensure_ascii=False),
                    datetime.now(UTC).isoformat(),
                ),
            )
        return key

    def pending(self, *, key_prefix: str, limit: int = 50) -> list[Entry]:
        """The oldest entries waiting for this API key, in the order they were kept. (Entries
        kept under another key stay: they belong to that key's tenant.)"""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, key, key_prefix, op, payload, created_at, attempts FROM outbox "
                "WHERE state = ? AND key_prefix = ? ORDER BY id LIMIT ?",
                (PENDING, key_prefix, limit),
            ).fetchall()
        return [
            Entry(
                id=row[0],
                key=row[1],
                key_prefix=row[2],
                op=row[3],
                payload=json.loads(row[4]),
                created_at=datetime.fromisoformat(row[5]),
                attempts=row[6],
            )
            for row in rows
        ]

    def done(self, entry_id: int) -> None:
        with self._lock:
            self._db.execute("DELETE FROM outbox WHERE id = ?", (entry_id,))

    def failed(self, entry_id: int, error: str) -> None:
        """A transient failure: the entry stays first in line."""
        with self._lock:
            self._db.execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE id = ?",
                (error[:500], entry_id),
            )

    def reject(self, entry_id: int, error: str) -> None:
        """The server refused the entry for good (e.g. invalid input): kept for inspection,
        out of the way of those behind it."""
        with self._lock:
            self._db.execute(
                "UPDATE outbox SET state = ?, last_error = ? WHERE id = ?",
                (REJECTED, error[:500], entry_id),
            )

    def count(self, *, key_prefix: str | None = None, state: str = PENDING) -> int:
        query, args = "SELECT count(*) FROM outbox WHERE state = ?", [state]
        if key_prefix is not None:
            query, args = query + " AND key_prefix = ?", [*args, key_prefix]
        with self._lock:
            return self._db.execute(query, args).fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
