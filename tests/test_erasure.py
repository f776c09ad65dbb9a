"""Erasure that reaches the disk (docs/erasure.md): after a purge and `mnemosyne compact`, the
purged text is in no file of the embedded database's data directory."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from facts import services
from facts.inputs import fact_draft, purge_reason
from operations.roles import as_owner


def _files_holding(folder: Path, marker: bytes) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            try:
                data = path.read_bytes()
            except OSError:
                continue  # a file removed while we walk (a checkpoint's)
            if marker in data:
                found.append(str(path.relative_to(folder)))
    return found


def _relation_file(table: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_filepath(%s::regclass)", [table])
        return cursor.fetchone()[0]


def _checkpoint(settings) -> None:
    """Shared buffers to the data files, so what is in a table is on disk (superuser)."""
    from memoryadmin.embedded_db import server_for_home

    server = server_for_home(settings.MNEMOSYNE_HOME)
    with server._connect("postgres") as conn:
        conn.execute("CHECKPOINT")


# Alone on the server: another database's open transaction would keep the old row versions
# in the rewritten pg_statistic (tests/conftest.py, server_share).
@pytest.mark.server_alone
@pytest.mark.django_db(transaction=True)
def test_a_purged_text_is_in_no_file_of_the_data_directory_after_compact(
    tenant, owner_actor, settings, capsys
) -> None:
    if not settings.MNEMOSYNE_EMBEDDED_DB:
        pytest.skip("greps the embedded database's data directory (the default set-up's)")
    pgdata = Path(settings.MNEMOSYNE_HOME) / "pgdata"
    marker = f"purgemarker{uuid.uuid4().hex}"
    fact = services.fact_add(
        tenant=tenant, actor=owner_actor,
        draft=fact_draft({"content": f"The vault code is {marker} for now"}),
    ).fact  # fmt: skip
    for i in range(20):  # neighbours, so that statistics have rows to describe
        services.fact_add(
            tenant=tenant, actor=owner_actor, draft=fact_draft({"content": f"Filler fact {i}"})
        )
    with as_owner(), connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_fact")
        cursor.execute("ANALYZE facts_factevent")
        cursor.execute("SELECT pg_relation_filepath('pg_statistic')")
        statistics = cursor.fetchone()[0]
    services.fact_purge(
        tenant=tenant, fact_id=fact.pk, actor=owner_actor, reason=purge_reason("asked to forget")
    )
    _checkpoint(settings)
    before = _files_holding(pgdata, marker.encode())
    table_files = {_relation_file("facts_fact"), _relation_file("facts_factevent")}
    assert table_files & set(before), f"the purged text should still be in a table: {before}"
    assert statistics in before, "ANALYZE copied it into pg_statistic"
    assert any(name.startswith("pg_wal/") for name in before)

    call_command("compact")
    out = capsys.readouterr().out
    assert "facts_fact: " in out and "pg_statistic: rewritten" in out and "WAL: " in out
    _checkpoint(settings)
    assert _files_holding(pgdata, marker.encode()) == []
    with as_owner(), connection.cursor() as cursor:  # the live rows are all still there
        cursor.execute("SELECT set_config('app.tenant_id', %s, false)", [str(tenant.pk)])
        cursor.execute("SELECT count(*) FROM facts_fact")
        assert cursor.fetchone()[0] == 20


@pytest.mark.django_db(transaction=True)
def test_compact_rewrites_the_tables_in_any_set_up(tenant, owner_actor, capsys) -> None:
    """On a server too (CI's second run): the owner rewrites the tables and pg_statistic (it owns
    the test database); what becomes of the WAL is said."""
    services.fact_add(tenant=tenant, actor=owner_actor, draft=fact_draft({"content": "Kept"}))
    call_command("compact")
    out = capsys.readouterr().out
    for table in ("facts_fact", "facts_factevent", "facts_entity"):
        assert f"{table}: " in out
    assert "pg_statistic: rewritten" in out
    assert "WAL: " in out and "done in" in out
