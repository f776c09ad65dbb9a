"""A large tenant's own indexes (retrieval.indexes): a GIN index of its search vectors and an
HNSW index of its vectors of one model, each partial on the tenant, so that its full-text and
vector queries no longer read past other tenants' rows in the shared indexes.

The runtime role owns no table, so the owner's SECURITY DEFINER functions below make and drop
them; each accepts only an index name of the form it makes, for the tenant it names.
"""

# ruff: noqa: S608 - fixed SQL of this migration, built from constants only
from django.db import migrations

DEFINER = "SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"

FUNCTIONS = {
    "mnemosyne_tenant_index_create(text,bigint,text,integer)": f"""
CREATE OR REPLACE FUNCTION mnemosyne_tenant_index_create(
    index text, tenant bigint, model text, dimension integer)
RETURNS void
LANGUAGE plpgsql VOLATILE {DEFINER} AS $$
BEGIN
  -- One at a time: two workers asking for the same index wait for each other.
  PERFORM pg_advisory_xact_lock(hashtext('mnemosyne_tenant_index'));
  IF tenant IS NULL OR tenant < 1 THEN
    RAISE EXCEPTION 'not a tenant id: %', tenant;
  END IF;
  IF model IS NULL THEN
    IF index <> 'fact_search_t' || tenant THEN
      RAISE EXCEPTION 'not a tenant full-text index name: %', index;
    END IF;
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON facts_fact USING gin (search_vector) '
                   'WHERE tenant_id = %s', index, tenant);
  ELSE
    IF index !~ ('^factvector_hnsw_[0-9a-f]{{12}}_t' || tenant || '$') THEN
      RAISE EXCEPTION 'not a tenant vector index name: %', index;
    END IF;
    IF dimension IS NULL OR dimension < 1 OR dimension > 16000 THEN
      RAISE EXCEPTION 'dimension must be 1 to 16000, got %', dimension;
    END IF;
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON facts_factvector USING hnsw '
                   '((embedding::vector(%s)) vector_cosine_ops) WITH (m = 16, ef_construction = 64) '
                   'WHERE tenant_id = %s AND model = %L', index, dimension, tenant, model);
  END IF;
END $$""",
    "mnemosyne_tenant_index_drop(text)": f"""
CREATE OR REPLACE FUNCTION mnemosyne_tenant_index_drop(index text)
RETURNS void
LANGUAGE plpgsql VOLATILE {DEFINER} AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('mnemosyne_tenant_index'));
  IF index !~ '^(fact_search|factvector_hnsw_[0-9a-f]{{12}})_t[0-9]+$' THEN
    RAISE EXCEPTION 'not a tenant index name: %', index;
  END IF;
  EXECUTE format('DROP INDEX IF EXISTS %I', index);
END $$""",
}


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0004_recalllatency"),
        ("tenants", "0006_database_roles"),
    ]

    operations = [
        migrations.RunSQL(
            sql=[create, f"REVOKE EXECUTE ON FUNCTION {signature} FROM PUBLIC"],
            reverse_sql=f"DROP FUNCTION IF EXISTS {signature}",
        )
        for signature, create in FUNCTIONS.items()
    ]
