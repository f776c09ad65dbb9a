"""Maintained statistics: what the dashboard and the entity lists count, kept by the database.

Triggers on facts_fact write, per statement, the change in the number of facts of each (kind,
status, trust band, vector model, day made) to `FactStat`, and mark in `EntityDirty` every
entity whose count of active facts may have changed (a link made, moved or deleted; a fact that
became active or stopped being so). Readers (facts.selectors.dashboard, .entities) sum the rows
and count dirty entities live, so what they show is exact at once; this module's sweep only keeps
the reading cheap: it folds a tenant's rows into one per key and counts its dirty entities into
`Entity.active_facts`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from tenants.models import Tenant
from tenants.scope import tenant_scope

# Dirty entities counted per statement (a bulk import can leave many).
RECOUNT_BATCH = 2000

# Only when the tenant has unfolded rows; returns how many rows it replaced by how many.
_FOLD = """
WITH gone AS (
    DELETE FROM facts_factstat
     WHERE tenant_id = %(tenant)s
       AND EXISTS (SELECT 1 FROM facts_factstat
                    WHERE tenant_id = %(tenant)s AND NOT folded)
    RETURNING kind, status, band, model, day, n
), made AS (
    INSERT INTO facts_factstat (tenant_id, kind, status, band, model, day, n, folded)
    SELECT %(tenant)s, kind, status, band, model, day, sum(n), true
      FROM gone GROUP BY kind, status, band, model, day
    HAVING sum(n) <> 0
    RETURNING 1
)
SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM made)
"""

_TAKE_DIRTY = """
WITH picked AS (
    SELECT DISTINCT entity_id FROM facts_entitydirty
     WHERE tenant_id = %(tenant)s ORDER BY entity_id LIMIT %(batch)s
), gone AS (
    DELETE FROM facts_entitydirty d USING picked p
     WHERE d.tenant_id = %(tenant)s AND d.entity_id = p.entity_id
    RETURNING d.entity_id
)
SELECT DISTINCT entity_id FROM gone
"""

_RECOUNT = """
UPDATE facts_entity e SET active_facts = c.n
  FROM (SELECT p.entity_id,
               (SELECT count(*) FROM facts_factentity l
                  JOIN facts_fact f ON f.tenant_id = l.tenant_id AND f.id = l.fact_id
                 WHERE l.tenant_id = %(tenant)s AND l.entity_id = p.entity_id
                   AND f.status = 'active') AS n
          FROM unnest(%(ids)s::bigint[]) AS p (entity_id)) c
 WHERE e.tenant_id = %(tenant)s AND e.id = c.entity_id AND e.active_facts <> c.n
"""

# Rounds of RECOUNT_BATCH per sweep: entities dirtied faster than that wait for the next one.
MAX_ROUNDS = 50


@dataclass(frozen=True)
class StatsFolded:
    rows_folded: int  # the tenant's statistics rows replaced (0: they were folded already)
    rows_made: int  # by this many, one per key
    entities_counted: int


def stats_fold(*, tenant: Tenant) -> StatsFolded:
    """Fold the tenant's statistics rows (one per key) and count its dirty entities, each step
    its own transaction. Safe to run twice or at once: rows another run took are gone for this
    one, and what is written while it runs stays for the next."""
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute(_FOLD, {"tenant": tenant.pk})
        folded, made = cursor.fetchone()
    counted = 0
    for _ in range(MAX_ROUNDS):
        with tenant_scope(tenant), connection.cursor() as cursor:
            cursor.execute(_TAKE_DIRTY, {"tenant": tenant.pk, "batch": RECOUNT_BATCH})
            ids = [row[0] for row in cursor.fetchall()]
            if ids:
                cursor.execute(_RECOUNT, {"tenant": tenant.pk, "ids": ids})
        if not ids:
            break
        counted += len(ids)
    return StatsFolded(rows_folded=folded, rows_made=made, entities_counted=counted)
