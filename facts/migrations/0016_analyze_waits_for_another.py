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

from importlib import import_module

from django.db import migrations

# 0015's function (the one to go back to), and the same with its lock taken instead of tried.
TRY_LOCK: str = import_module("facts.migrations.0015_analyze_after_bulk_loads").ANALYZE_STALE
TRIED = """  -- One process at a time; another that finds one analysing goes on without waiting.
  IF NOT pg_try_advisory_xact_lock(hashtext('mnemosyne_analyze_stale')) THEN
    RETURN;
  END IF;"""
TAKEN = """  -- One process at a time; another waits for it, then finds what it analysed no longer stale.
  PERFORM pg_advisory_xact_lock(hashtext('mnemosyne_analyze_stale'));"""
if TRIED not in TRY_LOCK:
    raise RuntimeError("facts migration 0015's function is not the one this migration changes")
ANALYZE_STALE = TRY_LOCK.replace(TRIED, TAKEN)


class Migration(migrations.Migration):
    dependencies = [("facts", "0015_analyze_after_bulk_loads")]

    operations = [migrations.RunSQL(sql=ANALYZE_STALE, reverse_sql=TRY_LOCK)]
