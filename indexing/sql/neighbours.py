"""Facts next to others: the turns beside a candidate in its session, and the facts linked to
the entities a query names."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection

from indexing.sql.filters import FactColumns, Filters, _columns


def turn_neighbours(
    *, tenant_id: int, places: Sequence[tuple[str, int]], filters: Filters
) -> list[tuple[int, FactColumns]]:
    """(id, FACT_COLUMNS) of the turns at the (session, position) places that recall may
    return."""
    if not places:
        return []
    where, params = filters.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT f.id, {_columns('f', table=True)} FROM facts_fact f "  # noqa: S608 - ours
            "JOIN unnest(%s::text[], %s::int[]) AS n(session_id, position) "
            "ON f.session_id = n.session_id AND f.position = n.position "
            f"WHERE f.tenant_id = %s AND f.kind = 'turn' AND {where}",
            [[s for s, _ in places], [p for _, p in places], tenant_id, *params],
        )
        return [(row[0], tuple(row[1:])) for row in cursor.fetchall()]


def entities_within(*, tenant_id: int, entity_ids: Sequence[int], most: int) -> list[int]:
    """Those of `entity_ids` linked to at most `most` facts; an entity linked to a hundred
    thousand is counted no further than `most` + 1."""
    if not entity_ids:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.id FROM unnest(%s::bigint[]) AS e(id) WHERE (SELECT count(*) FROM "
            "(SELECT 1 FROM facts_factentity fe WHERE fe.tenant_id = %s AND fe.entity_id = e.id "
            "LIMIT %s) linked) <= %s",
            [list(entity_ids), tenant_id, most + 1, most],
        )
        return [row[0] for row in cursor.fetchall()]


def entity_candidates(
    *,
    tenant_id: int,
    names: Sequence[str],
    total: int,
    filters: Filters,
    limit: int,
    among: set[int] | None = None,
) -> tuple[list[tuple[int, float]], float]:
    """Facts linked to the entities named, each scored by the information of the entities it
    shares with the query: sum of log(1 + total / facts linked to the entity). An entity that
    is everywhere (a conversation's speaker) weighs little; a rare one weighs much.

    With `among`, only those facts are scored. Returns the scored (id, score) and the most any
    fact could score (all named entities)."""
    if not names:
        return [], 0.0
    where, params = filters.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.id, ln(1 + %s::float / greatest(count(fe.id), 1)) FROM facts_entity e "
            "LEFT JOIN facts_factentity fe ON fe.tenant_id = e.tenant_id AND fe.entity_id = e.id "
            "WHERE e.tenant_id = %s AND (e.normalized = ANY(%s) OR e.aliases && %s) "
            "GROUP BY e.id",
            [max(total, 1), tenant_id, list(names), list(names)],
        )
        weights = dict(cursor.fetchall())
        if not weights or among == set():
            return [], sum(weights.values())
        only = "AND f.id = ANY(%s) " if among is not None else ""
        cursor.execute(
            "SELECT f.id, sum(w.weight) FROM unnest(%s::bigint[], %s::float[]) AS w(id, weight) "  # noqa: S608
            "JOIN facts_factentity fe ON fe.tenant_id = %s AND fe.entity_id = w.id "
            "JOIN facts_fact f ON f.tenant_id = fe.tenant_id AND f.id = fe.fact_id "
            f"WHERE {where} {only}GROUP BY f.id ORDER BY sum(w.weight) DESC, f.id DESC LIMIT %s",
            [
                list(weights),
                list(weights.values()),
                tenant_id,
                *params,
                *([sorted(among)] if among is not None else []),
                limit,
            ],
        )
        return [(row[0], float(row[1])) for row in cursor.fetchall()], sum(weights.values())
