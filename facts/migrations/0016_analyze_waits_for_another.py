"""`mnemosyne_analyze_stale` waits for an analysis already under way instead of going on.

It used to try the lock and, finding another process analysing, return at once. The embedding
task that returned so sent its conflict check, and the check was planned before the other
process's ANALYZE had committed, on statistics that did not know the new tenant: with two
workers, three imports in twelve had their checks through 63 to 99 s after the last vector
instead of 3 to 7 (auto_explain: the nearest-neighbour query read every vector of the tenant,
and for each every fact). Now a second caller waits for the first (an ANALYZE of the three
tables takes well under a second on a new deployment), then analyses what is still stale:
usually nothing, the first having just done it.
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
  -- One process at a time; another waits for it, then finds what it analysed no longer stale.
  PERFORM pg_advisory_xact_lock(hashtext('mnemosyne_analyze_stale'));
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

# 0015's body, for going back.
TRY_LOCK = ANALYZE_STALE.replace(
    """  -- One process at a time; another waits for it, then finds what it analysed no longer stale.
  PERFORM pg_advisory_xact_lock(hashtext('mnemosyne_analyze_stale'));""",
    """  -- One process at a time; another that finds one analysing goes on without waiting.
  IF NOT pg_try_advisory_xact_lock(hashtext('mnemosyne_analyze_stale')) THEN
    RETURN;
  END IF;""",
)


class Migration(migrations.Migration):
    dependencies = [("facts", "0015_analyze_after_bulk_loads")]

    operations = [migrations.RunSQL(sql=ANALYZE_STALE, reverse_sql=TRY_LOCK)]
