"""Reads from a PostgreSQL streaming replica (DATABASE_REPLICA_URL); writes stay on the primary.

Recall, context and the web admin's pages read from the replica when it is there, answering,
not lagging more than MNEMOSYNE_REPLICA_MAX_LAG_SECONDS behind, and has replayed the tenant's
own last write: after a write, the primary's WAL position (`pg_current_wal_lsn()`) is kept
for the tenant in the cache, and the tenant reads from the primary until the replica's replay
position (`pg_last_wal_replay_lsn()`) has passed it. So an agent always reads what it wrote.
(Use a shared cache, CACHE_URL, when several web hosts serve one tenant.)

Why the connection is swapped instead of routed: Django's database routers steer ORM queries
only, while recall's SQL and the tenant scope (`SET LOCAL app.tenant_id`, which row-level
security reads) run on `django.db.connection`, the default alias. For the body of a replica
read, the default alias *is* the replica's connection, so every query of the request, raw or
ORM, goes there under the same tenant scope; authentication and its bookkeeping ran before,
on the primary.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

logger = logging.getLogger(__name__)

REPLICA = "replica"
PRIMARY = "primary"
# After a failed attempt, the replica is left alone this long (no connection timeout per read).
RETRY_AFTER_S = 5.0
_LSN_KEY = "replica:written-lsn:{tenant_id}"

_lock = threading.Lock()
_down_until = 0.0


def replica_configured() -> bool:
    return REPLICA in settings.DATABASES and settings.MNEMOSYNE_REPLICA_READS


def replica_note_write(*, tenant_id: int) -> None:
    """Remember where the primary's WAL was after this tenant's write (read-your-writes)."""
    if not replica_configured():
        return
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_lsn()::text")
            position = cursor.fetchone()[0]
    except DatabaseError:
        return  # the write's own answer reports the database; nothing to remember
    # Past the lag limit the replica is not read anyway, so the mark need not outlive it long.
    timeout = max(60, settings.MNEMOSYNE_REPLICA_MAX_LAG_SECONDS * 4)
    cache.set(_LSN_KEY.format(tenant_id=tenant_id), position, timeout=timeout)


def replica_state(*, written: str | None = None) -> dict[str, Any]:
    """The replica's lag in seconds and whether it has replayed `written` (a WAL position).
    Raises DatabaseError when it cannot be reached."""
    with connections[REPLICA].cursor() as cursor:
        # Lag: 0 when everything received is replayed (an idle primary sends nothing, so the
        # last replayed transaction's age alone would grow without any lag).
        cursor.execute(
            "SELECT CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0 "
            "ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0) END, "
            "pg_last_wal_replay_lsn() >= %s::pg_lsn, pg_is_in_recovery()",
            [written or "0/0"],
        )
        lag, caught_up, in_recovery = cursor.fetchone()
    return {"lag_s": float(lag), "caught_up": bool(caught_up), "in_recovery": bool(in_recovery)}


def _mark_down(error: Exception) -> None:
    global _down_until
    with _lock:
        _down_until = time.monotonic() + RETRY_AFTER_S
    logger.warning("replica unreachable, reading from the primary: %s", str(error).strip()[:200])
    try:
        connections[REPLICA].close()
    except DatabaseError:
        pass


def replica_choose(*, tenant_id: int) -> str:
    """Where this tenant's read goes now: REPLICA or PRIMARY."""
    if not replica_configured() or time.monotonic() < _down_until:
        return PRIMARY
    written = cache.get(_LSN_KEY.format(tenant_id=tenant_id))
    try:
        state = replica_state(written=written)
    except DatabaseError as error:
        _mark_down(error)
        return PRIMARY
    if state["lag_s"] > settings.MNEMOSYNE_REPLICA_MAX_LAG_SECONDS or not state["caught_up"]:
        return PRIMARY
    return REPLICA


@contextmanager
def replica_reads(*, tenant_id: int) -> Iterator[str]:
    """Run the body against the replica when the tenant may read from it; yields where."""
    where = replica_choose(tenant_id=tenant_id)
    if where == PRIMARY:
        yield PRIMARY
        return
    handler = connections._connections  # type: ignore[attr-defined]  # noqa: SLF001 - per thread
    primary = getattr(handler, DEFAULT_DB_ALIAS)
    setattr(handler, DEFAULT_DB_ALIAS, connections[REPLICA])
    try:
        yield REPLICA
    finally:
        setattr(handler, DEFAULT_DB_ALIAS, primary)


def check_replica() -> dict[str, Any]:
    """/healthz: the replica's state; not ok (the node is "degraded") when reads fall back."""
    try:
        state = replica_state()
    except DatabaseError as error:
        _mark_down(error)
        return {"ok": False, "detail": f"unreachable: {str(error).strip()[:200]}"}
    limit = settings.MNEMOSYNE_REPLICA_MAX_LAG_SECONDS
    check: dict[str, Any] = {"ok": True, "lag_s": round(state["lag_s"], 2)}
    if not state["in_recovery"]:
        check.update(ok=False, detail="not a replica: the server is not in recovery")
    elif state["lag_s"] > limit:
        check.update(ok=False, detail=f"{state['lag_s']:.0f} s behind (limit {limit} s)")
    return check
