"""The owner's function that analyses the fact tables after a bulk load (facts.tasks).

PostgreSQL plans a tenant's queries from statistics that autovacuum refreshes up to a minute
after 10% of a table changed. Right after a bulk load the statistics still say the new tenant
has no rows, and the conflict check of its facts was planned as a scan of the whole tenant per
neighbour looked up: 200 facts took 60 s instead of 0.3 s (bench.ingest, embedded database).
The runtime role owns no table and cannot ANALYZE; this function, owned by the owner role,
analyses those of the three fact tables that changed by at least `min_changes` rows and
`min_fraction` of their size since their last analysis, and nothing else.
"""

from django.db import migrations

ANALYZE_STALE = """
CREATE OR REPLACE FUNCTION mnemosyne_analyze_stale(
    min_changes bigint, min_fraction double precision)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  name text;
BEGIN
  -- One process at a time; another that finds one analysing goes on without waiting.
  IF NOT pg_try_advisory_xact_lock(hashtext('mnemosyne_analyze_stale')) THEN
    RETURN;
  END IF;
  FOR name IN
    SELECT c.relname::text FROM pg_class c JOIN pg_stat_all_tables s ON s.relid = c.oid
     WHERE c.oid IN ('facts_fact'::regclass, 'facts_factvector'::regclass,
                     'facts_factentity'::regclass)
       AND s.n_mod_since_analyze
           >= greatest(min_changes, 1, min_fraction * greatest(c.reltuples, 0))
     ORDER BY 1
  LOOP
    EXECUTE format('ANALYZE %I', name);
    RETURN NEXT name;
  END LOOP;
END $$"""


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0014_search_pending_list"),
        ("tenants", "0006_database_roles"),
    ]

    operations = [
        migrations.RunSQL(
            sql=[
                ANALYZE_STALE,
                "REVOKE EXECUTE ON FUNCTION mnemosyne_analyze_stale(bigint, double precision) FROM PUBLIC",
            ],
            reverse_sql="DROP FUNCTION IF EXISTS mnemosyne_analyze_stale(bigint, double precision)",
        )
    ]
