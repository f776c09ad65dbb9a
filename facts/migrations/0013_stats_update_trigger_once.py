# ruff: noqa: S608 - fixed SQL of this migration, built from constants only
"""The statistics' update trigger finds the rows whose counted columns changed once per
statement (a CTE, which PostgreSQL materialises once), not once for the new rows and again for
the old ones as 0011 wrote it. What it writes is the same."""

from importlib import import_module

from django.db import migrations

stats = import_module("facts.migrations.0011_maintained_statistics")

UPDATE_BODY = f"""
  -- Only the rows whose counted columns changed (most updates change none of them).
  WITH changed AS (
    SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE {stats.kept("n")}
       AND (n.kind, n.status, n.trust_score, n.embedding_model, n.created_at)
           IS DISTINCT FROM (o.kind, o.status, o.trust_score, o.embedding_model, o.created_at)
  )
  INSERT INTO {stats.STAT_COLUMNS}
  SELECT tenant_id, kind, status, band, model, day, sum(n), false
    FROM (SELECT {stats.KEY}, 1 AS n FROM new_rows WHERE id IN (SELECT id FROM changed)
          UNION ALL
          SELECT {stats.KEY}, -1 AS n FROM old_rows WHERE id IN (SELECT id FROM changed)) c
   GROUP BY 1, 2, 3, 4, 5, 6
  HAVING sum(n) <> 0;
  -- A fact that became active or stopped being so changes its entities' counts.
  INSERT INTO {stats.DIRTY}
  SELECT DISTINCT l.tenant_id, l.entity_id
    FROM new_rows n
    JOIN old_rows o ON o.id = n.id
    JOIN facts_factentity l ON l.tenant_id = n.tenant_id AND l.fact_id = n.id
   WHERE (n.status = 'active') <> (o.status = 'active') AND {stats.kept("n")};"""

NAME = "mnemosyne_fact_stats_update"


class Migration(migrations.Migration):
    dependencies = [("facts", "0012_entity_facts_newest_first")]

    operations = [
        migrations.RunSQL(
            sql=stats.function(NAME, UPDATE_BODY),
            reverse_sql=stats.function(NAME, stats.FUNCTIONS[NAME]),
        )
    ]
