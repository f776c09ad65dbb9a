"""A large tenant's own full-text index keeps a pending list of at most 256 kB, as the shared
one does (facts 0014): the function that makes it says so, and those already made are altered
in place."""

# ruff: noqa: S608 - fixed SQL of this migration, built from constants only
from importlib import import_module

from django.db import migrations

made = import_module("indexing.migrations.0005_tenant_indexes")
SIGNATURE = "mnemosyne_tenant_index_create(text,bigint,text,integer)"
BEFORE = made.FUNCTIONS[SIGNATURE]
GIN = "USING gin (search_vector) '\n                   'WHERE tenant_id = %s'"
assert GIN in BEFORE, "0005's function changed: update this migration"  # noqa: S101
AFTER = BEFORE.replace(
    GIN,
    "USING gin (search_vector) '\n                   "
    "'WITH (gin_pending_list_limit = 256) WHERE tenant_id = %s'",
)


def _existing(setting: str) -> str:
    return f"""
DO $$
DECLARE name text;
BEGIN
  FOR name IN SELECT c.relname FROM pg_class c WHERE c.relkind = 'i'
                 AND c.relname ~ '^fact_search_t[0-9]+$' LOOP
    EXECUTE format('ALTER INDEX %I {setting}', name);
  END LOOP;
END $$"""


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0005_tenant_indexes"), ("facts", "0014_search_pending_list")]

    operations = [
        migrations.RunSQL(sql=AFTER, reverse_sql=BEFORE),
        migrations.RunSQL(
            sql=_existing("SET (gin_pending_list_limit = 256)"),
            reverse_sql=_existing("RESET (gin_pending_list_limit)"),
        ),
    ]
