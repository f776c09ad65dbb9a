"""`mnemosyne compact` (docs/erasure.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memoryadmin.compaction import COMPACTED  # no model imported: --help needs no set-up


class Command(BaseCommand):
    help = (
        "Make purged text unreadable in the database's files: rewrite the tables a purge "
        f"touches ({', '.join(COMPACTED)}) as the owner, analyse them again and rewrite "
        "pg_statistic; on the embedded database, also drop the WAL written so far. The tables "
        "are locked while each is rewritten (recall and writes wait). docs/erasure.md says what "
        "else may still hold a purged text."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        from memoryadmin.compaction import database_compact

        report = database_compact()
        for table, before, after in report.tables:
            self.stdout.write(f"{table}: {before / 1e6:.2f} MB -> {after / 1e6:.2f} MB")
        self.stdout.write(
            "pg_statistic: rewritten"
            if report.statistics
            else "pg_statistic: not rewritten (only the database's owner or a superuser may): "
            "its old rows stay in its file until overwritten"
        )
        if report.wal_files_removed is not None:
            self.stdout.write(f"WAL: {report.wal_files_removed} old files removed")
        else:
            self.stdout.write(
                f"WAL: checkpoint {report.checkpoint}; older WAL files keep the text until "
                "the server reuses or removes them (docs/erasure.md)"
            )
        self.stdout.write(f"done in {report.seconds:.1f} s")
