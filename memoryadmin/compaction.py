"""`mnemosyne compact`: purged text out of the database's files (docs/erasure.md).

A purge deletes a fact's row and replaces its text in the audit trail, but PostgreSQL keeps the
old row versions in the table's pages until they are overwritten, and copies in its statistics
(pg_statistic) and its write-ahead log. As the owner, this rewrites the tables a purge touches
(VACUUM FULL: new files holding only the live rows, the old ones truncated at once and removed
at the next checkpoint), analyses them again and rewrites pg_statistic, where the database's
owner may. On the embedded database it also has the server drop its WAL files up to now.
VACUUM FULL holds each table's ACCESS EXCLUSIVE lock while it runs: recall and writes of every
tenant wait for it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection

from operations.roles import as_owner

# The tables a purge changes that hold a fact's text or words: the facts (content, search
# vector), the audit trail (the redacted events' old versions), the entities named only by
# purged facts (names, aliases).
COMPACTED = ("facts_fact", "facts_factevent", "facts_entity")


@dataclass
class CompactReport:
    tables: list[tuple[str, int, int]] = field(default_factory=list)  # name, bytes before, after
    statistics: bool = False  # pg_statistic rewritten
    wal_files_removed: int | None = None  # None: WAL left as it is (not the embedded database)
    checkpoint: str = ""  # what became of the request for a checkpoint, on a server
    seconds: float = 0.0


def _size(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size(%s::regclass)", [table])
        return int(cursor.fetchone()[0])


def _rewrite(report: CompactReport, tables: tuple[str, ...]) -> None:
    for table in tables:
        before = _size(table)
        with connection.cursor() as cursor:
            cursor.execute(f'VACUUM (FULL, ANALYZE) "{table}"')
        report.tables.append((table, before, _size(table)))
    with connection.cursor() as cursor:
        # Database owners may vacuum the catalogs of their database (pg_statistic included).
        cursor.execute(
            "SELECT pg_get_userbyid(datdba) = current_user FROM pg_database "
            "WHERE datname = current_database()"
        )
        if cursor.fetchone()[0]:
            cursor.execute("VACUUM FULL pg_catalog.pg_statistic")
            report.statistics = True


def _checkpoint() -> str:
    """A checkpoint, where the owner may ask for one (superuser or pg_checkpoint)."""
    from django.db import DatabaseError

    try:
        with connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")
    except DatabaseError as error:
        return f"not allowed to this role ({str(error).strip().splitlines()[0]})"
    return "done"


def database_compact(*, tables: tuple[str, ...] = COMPACTED) -> CompactReport:
    """Rewrite `tables` and the statistics as the owner (outside any transaction: VACUUM
    cannot run in one); on the embedded database, drop the WAL written so far."""
    started = time.monotonic()
    report = CompactReport()
    with as_owner():
        connection.ensure_connection()
        _rewrite(report, tables)
        if not settings.MNEMOSYNE_EMBEDDED_DB:
            report.checkpoint = _checkpoint()
    if settings.MNEMOSYNE_EMBEDDED_DB:
        from memoryadmin.embedded_db import server_for_home

        report.wal_files_removed = server_for_home(settings.MNEMOSYNE_HOME).wal_forget()
    report.seconds = time.monotonic() - started
    return report
