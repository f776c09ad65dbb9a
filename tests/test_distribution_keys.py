"""The schema stays distributable by tenant (Citus): every tenant-owned table has a key that
includes `tenant_id`, and every reference between tenant-owned tables carries `tenant_id`.

Today's primary keys are `id` alone (Django's); the tables recall reads have a unique key on
`(tenant_id, id)` besides, which a distributed table would make its primary key, and their
references have a twin on `(tenant_id, ...)`. The tables listed below lack that key yet
(docs/scaling.md, "Beyond one server", says what it takes); the tests fail when a new table joins
them, and when one of them gains its key, so the list stays true."""

from __future__ import annotations

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db

# Tables with a tenant_id column, and the columns of their primary key and unique constraints.
KEYS_SQL = """
SELECT c.relname, con.contype, array_agg(a.attname ORDER BY a.attname)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
JOIN pg_constraint con ON con.conrelid = c.oid AND con.contype IN ('p', 'u')
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (con.conkey)
WHERE c.relkind IN ('r', 'p')
  AND EXISTS (SELECT 1 FROM pg_attribute t WHERE t.attrelid = c.oid AND t.attname = 'tenant_id')
GROUP BY c.relname, con.oid, con.contype
"""

# Foreign keys from one tenant-owned table to another, with their columns.
FOREIGN_KEYS_SQL = """
SELECT src.relname, dst.relname, con.conname,
       array(SELECT attname FROM pg_attribute WHERE attrelid = src.oid AND attnum = ANY (con.conkey)
             ORDER BY attname)
FROM pg_constraint con
JOIN pg_class src ON src.oid = con.conrelid
JOIN pg_class dst ON dst.oid = con.confrelid
JOIN pg_namespace n ON n.oid = src.relnamespace AND n.nspname = current_schema()
WHERE con.contype = 'f'
  AND EXISTS (SELECT 1 FROM pg_attribute t WHERE t.attrelid = src.oid AND t.attname = 'tenant_id')
  AND EXISTS (SELECT 1 FROM pg_attribute t WHERE t.attrelid = dst.oid AND t.attname = 'tenant_id')
"""


# Usage and administration tables: no (tenant_id, id) key yet. (The audit events' places in
# their tenant's chain, unique per (tenant_id, chain_seq), are such a key.)
NOT_YET_KEYED = {
    "facts_feedback",
    "facts_relinkjob",
    "tenants_apikey",
    "tenants_apikeyusage",
    "tenants_auditdigest",
    "tenants_invitation",
}
# ApiKeyUsage -> ApiKey, on the key's id alone (ApiKey has no (tenant_id, id) key to point at).
NOT_YET_CARRYING = {"tenants_apikeyusage -> tenants_apikey"}


def _rows(sql: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchall()


def test_every_tenant_owned_table_has_a_key_starting_from_its_tenant() -> None:
    keys: dict[str, list[tuple[str, set[str]]]] = {}
    for table, kind, columns in _rows(KEYS_SQL):
        keys.setdefault(table, []).append((kind, set(columns)))
    assert "facts_fact" in keys and "facts_factvector" in keys, sorted(keys)
    without = sorted(
        table
        for table, found in keys.items()
        if not any("tenant_id" in columns for _kind, columns in found)
    )
    assert set(without) == NOT_YET_KEYED, f"tables with no key that includes tenant_id: {without}"


def test_every_reference_between_tenant_owned_tables_carries_the_tenant() -> None:
    references: dict[tuple[str, str], list[list[str]]] = {}
    for source, target, _name, columns in _rows(FOREIGN_KEYS_SQL):
        references.setdefault((source, target), []).append(columns)
    assert references, "no references between tenant-owned tables found"
    # Django's own foreign key is on the id alone; each must have a twin on (tenant_id, id),
    # which is what a distributed table keeps (the single-column one is dropped there).
    without = sorted(
        f"{source} -> {target}"
        for (source, target), found in references.items()
        if not any("tenant_id" in columns for columns in found)
    )
    assert set(without) == NOT_YET_CARRYING, f"references without tenant_id: {without}"
