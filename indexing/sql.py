"""The raw SQL of recall: full text, vector and entity candidates, and corpus statistics.

Each function takes `tenant_id` as a required parameter and must run inside `tenant_scope`; the
ORM's tenant guard does not see raw SQL, row-level security does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import numpy as np
from django.db import connection

from indexing.language import SQL_HAN
from indexing.text import SEARCH_VECTOR_SQL
from tenants.scope import current_scope_limit, scope_sql, scopes_sql


def vector_literal(vector: np.ndarray) -> str:
    """A vector as pgvector's text input: nine significant digits give every float32 back
    exactly, in about half the characters (and half the time) of Python's own repr."""
    return "[" + ",".join(map("{:.9g}".format, vector.tolist())) + "]"


def _tsquery_escape(lexeme: str) -> str:
    return lexeme.replace("\\", "\\\\").replace("'", "''")


# A value passed to cursor.execute.
SqlValue = str | int | float | datetime | list[str] | list[int] | list[float] | None


@dataclass(frozen=True)
class Filters:
    """Which facts recall may return. Status is always active. Each channel's candidate query
    applies them, so that facts they leave out never take a place among the candidates."""

    scope_prefix: str = ""
    kind: str | None = None
    category: str | None = None
    min_trust: float = 0.0
    # Any of these scopes (with what lies under each, or, like scope_prefix, only themselves
    # when scope_exact).
    scopes: tuple[str, ...] = ()
    scope_exact: bool = False
    metadata: str | None = None  # a JSON object the fact's metadata must contain
    since: datetime | None = None  # created at or after
    until: datetime | None = None  # created before

    def sql(self) -> tuple[str, list[SqlValue]]:
        clauses = ["f.status = 'active'", "f.trust_score >= %s"]
        params: list[SqlValue] = [self.min_trust]
        for wanted in ((self.scope_prefix,) if self.scope_prefix else (), self.scopes):
            if wanted:
                clause, values = scopes_sql(wanted, "f.scope", exact=self.scope_exact)
                clauses.append(clause)
                params += cast("list[SqlValue]", values)
        limit = current_scope_limit()
        if limit:
            clause, values = scope_sql(limit, "f.scope")
            clauses.append(clause)
            params += cast("list[str]", values)  # the LIKE condition's two strings
        if self.kind:
            clauses.append("f.kind = %s")
            params.append(self.kind)
        if self.category:
            clauses.append("f.category = %s")
            params.append(self.category)
        if self.metadata is not None:
            clauses.append("f.metadata @> %s::jsonb")
            params.append(self.metadata)
        if self.since is not None:
            clauses.append("f.created_at >= %s")
            params.append(self.since)
        if self.until is not None:
            clauses.append("f.created_at < %s")
            params.append(self.until)
        return " AND ".join(clauses), params


# What fusion needs of a fact, returned with each candidate so that no second query fetches it;
# "han" (the content holds a Han character: the fact is Chinese) is computed from the content.
FACT_COLUMNS = ("kind", "session_id", "position", "speaker", "trust_score", "created_at", "han")
# kind, session_id, position, speaker, trust_score, created_at, han
FactColumns = tuple[str, str, int | None, str, float, datetime, bool]
Candidate = tuple[int, float, FactColumns]  # (id, channel score, FACT_COLUMNS)


# The columns Filters reads that FACT_COLUMNS does not hold.
_FILTERED = "f.status, f.scope, f.category"


def _filtered(filters: Filters) -> str:
    """_FILTERED, and the metadata when the filters read it (a recall without a metadata
    filter does not carry each candidate's metadata through the vector scan)."""
    return _FILTERED + (", f.metadata" if filters.metadata is not None else "")


def _columns(alias: str, *, table: bool = False) -> str:
    """The columns as selected from the fact table itself (`table`) or from a query that
    already selected them."""
    return ", ".join(
        f"({alias}.content ~ '{SQL_HAN}') AS han" if table and column == "han" else
        f"{alias}.{column}"
        for column in FACT_COLUMNS
    )  # fmt: skip


def _candidates(rows: Sequence[tuple[Any, ...]]) -> list[Candidate]:
    return [(row[0], float(row[1]), tuple(row[2:])) for row in rows]


# A lexeme the statistics have not seen is counted on the spot, up to this many facts.
UNSEEN_COUNT_LIMIT = 1000
BM25_K1, BM25_B = 1.2, 0.75
# The text of a lexeme as tsquery input, in SQL (standard strings: a backslash is itself).
_SQL_TSQUERY_LEXEME = r"('''' || replace(replace(q.lexeme, '\', '\\'), '''', '''''') || '''')"


def tsquery_lexeme(lexeme: str) -> str:
    """A lexeme as tsquery input, taken literally (no parsing, no stemming)."""
    return "'" + _tsquery_escape(lexeme) + "'"


def tsquery_any(groups: Sequence[Sequence[str]]) -> str:
    """tsquery input matching any group, where a group matches when all its lexemes do."""
    return " | ".join(
        "(" + " & ".join(tsquery_lexeme(lexeme) for lexeme in group) + ")" for group in groups
    )


def query_terms(*, tenant_id: int, latin: str, han: str) -> list[tuple[str, int]]:
    """The query's lexemes exactly as stored search vectors spell them, each with the number of
    the tenant's active facts that contain it: from the tenant's statistics, or counted now (up
    to UNSEEN_COUNT_LIMIT) for a lexeme they have not seen yet."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT q.lexeme, coalesce(s.documents, (SELECT count(*) FROM (SELECT 1 FROM "  # noqa: S608 - the fragment is a constant
            "facts_fact f WHERE f.tenant_id = %s AND f.status = 'active' AND f.search_vector @@ "
            f"{_SQL_TSQUERY_LEXEME}::tsquery LIMIT %s) unseen)) "
            f"FROM (SELECT DISTINCT lexeme FROM unnest({SEARCH_VECTOR_SQL})) q "
            "LEFT JOIN retrieval_lexemestat s ON s.tenant_id = %s AND s.lexeme = q.lexeme",
            [tenant_id, UNSEEN_COUNT_LIMIT, latin, han, tenant_id],
        )
        return [(row[0], int(row[1])) for row in cursor.fetchall()]


def fts_ranked(
    *,
    tenant_id: int,
    idf: dict[str, float],
    match: str,
    filters: Filters,
    mean_length: float,
    touch: int,
    keep: int,
    limit: int,
) -> list[Candidate]:
    """(id, BM25 score, FACT_COLUMNS) of the best facts that match the tsquery `match`, best
    first.

    The work is bounded whatever the data: at most `touch` matching facts are read (the caller
    makes `match` selective enough), ranked cheaply with each query term counted once, and the
    best `keep` of them scored by BM25 with their real term frequencies."""
    if not idf:
        return []
    where, params = filters.sql()
    lexemes, weights = list(idf), list(idf.values())
    mean = max(mean_length, 1.0)
    norm = f"{BM25_K1} * (1 - {BM25_B} + {BM25_B} * length(c.v) / %s::float)"
    once = " + ".join("(c.v @@ %s::tsquery)::int * %s::float" for _ in lexemes)
    once_params: list[SqlValue] = []
    for lexeme, weight in zip(lexemes, weights, strict=True):
        once_params += [tsquery_lexeme(lexeme), weight]
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH c AS MATERIALIZED ("  # noqa: S608 - clauses are ours, values are parameters
            f"SELECT f.id, f.search_vector AS v, {_columns('f', table=True)} FROM facts_fact f "
            f"WHERE f.tenant_id = %s AND f.search_vector @@ %s::tsquery AND {where} LIMIT %s), "
            f"pre AS (SELECT c.*, {norm} AS norm FROM c "
            f"ORDER BY ({once}) / (1 + {norm}) DESC LIMIT %s) "
            "SELECT pre.id, sum(w.idf * t.tf * %s / (t.tf + pre.norm)), "
            f"{_columns('pre')} FROM pre "
            "CROSS JOIN LATERAL (SELECT u.lexeme, "
            "greatest(coalesce(cardinality(u.positions), 0), 1) AS tf FROM unnest(pre.v) u) t "
            "JOIN unnest(%s::text[], %s::float[]) AS w(lexeme, idf) ON w.lexeme = t.lexeme "
            f"GROUP BY pre.id, {_columns('pre')} ORDER BY 2 DESC, pre.id DESC LIMIT %s",
            [
                tenant_id,
                match,
                *params,
                touch,
                mean,
                *once_params,
                mean,
                keep,
                BM25_K1 + 1,
                lexemes,
                weights,
                limit,
            ],
        )
        return _candidates(cursor.fetchall())


def fts_scores_for(
    *, tenant_id: int, idf: dict[str, float], mean_length: float, ids: Sequence[int]
) -> dict[int, float]:
    """BM25 of the facts `ids` (found by another channel, or next to a candidate) for the
    query terms `idf`; facts that share no term are left out (their score is 0)."""
    if not idf or not ids:
        return {}
    mean = max(mean_length, 1.0)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT f.id, sum(w.idf * t.tf * %s / (t.tf + "  # noqa: S608 - constants only
            f"{BM25_K1} * (1 - {BM25_B} + {BM25_B} * length(f.search_vector) / %s::float))) "
            "FROM facts_fact f CROSS JOIN LATERAL (SELECT u.lexeme, "
            "greatest(coalesce(cardinality(u.positions), 0), 1) AS tf "
            "FROM unnest(f.search_vector) u) t "
            "JOIN unnest(%s::text[], %s::float[]) AS w(lexeme, idf) ON w.lexeme = t.lexeme "
            "WHERE f.tenant_id = %s AND f.id = ANY(%s) GROUP BY f.id",
            [BM25_K1 + 1, mean, list(idf), list(idf.values()), tenant_id, list(ids)],
        )
        return {row[0]: float(row[1]) for row in cursor.fetchall()}


def vector_scores_for(
    *, tenant_id: int, vector: np.ndarray, model: str, dimension: int, ids: Sequence[int]
) -> dict[int, float]:
    """Cosine similarity of the facts `ids` to `vector` (those with a vector of `model`)."""
    if not ids:
        return {}
    cast = f"vector({int(dimension)})"
    literal = vector_literal(vector)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT v.fact_id, 1 - (v.embedding::{cast} <=> %s::{cast}) "  # noqa: S608 - an int
            "FROM facts_factvector v WHERE v.tenant_id = %s AND v.model = %s "
            "AND v.fact_id = ANY(%s)",
            [literal, tenant_id, model, list(ids)],
        )
        return {row[0]: float(row[1]) for row in cursor.fetchall()}


def session_documents(
    *,
    tenant_id: int,
    sessions: Sequence[str],
    lexemes: Sequence[str],
    filters: Filters,
    turns_each: int,
) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Each session read as one document: its turns' total length in lexemes, and in how many
    of its turns each of `lexemes` occurs (a turn is short: a word in it is nearly always
    there once). At most `turns_each` turns of a session are read (its first), only turns
    recall may return count, and a session with none is left out."""
    if not sessions or not lexemes:
        return {}, {}
    where, params = filters.sql()
    holding = ", ".join("sum((x.v @@ %s::tsquery)::int)" for _ in lexemes)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT s.id, a.length, a.holding FROM unnest(%s::text[]) AS s(id) "  # noqa: S608 - clauses are ours, values are parameters
            f"CROSS JOIN LATERAL (SELECT count(*) AS turns, sum(length(x.v))::int AS length, "
            f"ARRAY[{holding}]::int[] AS holding FROM (SELECT f.search_vector AS v "
            "FROM facts_fact f WHERE f.tenant_id = %s AND f.session_id = s.id "
            f"AND f.kind = 'turn' AND {where} ORDER BY f.position LIMIT %s) x) a "
            "WHERE a.turns > 0",
            [
                list(sessions),
                *[tsquery_lexeme(lexeme) for lexeme in lexemes],
                tenant_id,
                *params,
                turns_each,
            ],
        )
        lengths: dict[str, int] = {}
        counts: dict[str, dict[str, int]] = {}
        for session, length, found in cursor.fetchall():
            lengths[session] = int(length or 0)
            held = {lexeme: int(n) for lexeme, n in zip(lexemes, found, strict=True) if n}
            if held:
                counts[session] = held
        return lengths, counts


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


def _iterative_scan(cursor: Any, ef_search: int) -> None:
    """For the rest of the transaction: HNSW scans go on until their LIMIT passed the filters."""
    cursor.execute(
        "SET LOCAL hnsw.iterative_scan = relaxed_order; "
        f"SET LOCAL hnsw.ef_search = {int(ef_search)}"
    )


def vector_candidates(
    *,
    tenant_id: int,
    vector: np.ndarray,
    model: str,
    dimension: int,
    filters: Filters,
    limit: int,
    ef_search: int = 100,
) -> list[Candidate]:
    """(id, cosine similarity, FACT_COLUMNS) of the facts nearest to `vector` among the vectors
    of `model`.

    The tenant and model apply inside the model's HNSW scan and the filters on each fact it
    yields; the scan is iterative (relaxed order), so it goes on until `limit` facts passed, and
    a small tenant among large ones still gets its `limit` best. The rows come nearest first,
    sorted here: a relaxed-order scan yields them a little out of order, and PostgreSQL drops an
    outer ORDER BY over a subquery (or a MATERIALIZED CTE) whose own ORDER BY it takes as
    already giving that order.
    """
    if vector.shape != (dimension,):
        raise ValueError(f"a {dimension}-dimension vector is needed, got shape {vector.shape}")
    where, params = filters.sql()
    cast = f"vector({int(dimension)})"
    literal = vector_literal(vector)
    with connection.cursor() as cursor:
        _iterative_scan(cursor, ef_search)
        cursor.execute(
            f"SELECT id, 1 - distance, {', '.join(FACT_COLUMNS)} FROM ("  # noqa: S608 - the cast is an int, clauses are ours
            f"SELECT v.fact_id AS id, v.embedding::{cast} <=> %s::{cast} AS distance, "
            f"{_columns('f')} FROM facts_factvector v "
            # Each vector's fact is looked up by its id alone (OFFSET 0 keeps the lookup a
            # lookup) and the filters apply to what it found: a join on (tenant_id, id) and then
            # a lookup that carried the filters were, on tables not yet analysed, read through
            # an index that matched the filters, the whole tenant once per vector. The vector is
            # the tenant's (v.tenant_id), its fact the same tenant's (same-tenant key), and
            # row-level security stands behind.
            f"CROSS JOIN LATERAL (SELECT {_columns('f', table=True)}, {_filtered(filters)} "
            "FROM facts_fact f WHERE f.id = v.fact_id OFFSET 0) f "
            f"WHERE v.tenant_id = %s AND v.model = %s AND {where} "
            f"ORDER BY v.embedding::{cast} <=> %s::{cast} LIMIT %s"
            ") nearest",
            [literal, tenant_id, model, *params, literal, limit],
        )
        return sorted(_candidates(cursor.fetchall()), key=lambda row: (-row[1], row[0]))


def vector_neighbours_of(
    *,
    tenant_id: int,
    fact_ids: Sequence[int],
    model: str,
    dimension: int,
    filters: Filters,
    limit: int,
    min_score: float,
    ef_search: int = 100,
) -> dict[int, list[tuple[int, float]]]:
    """For each of the facts `fact_ids` that has a vector of `model`: the (id, cosine) of up to
    `limit` facts nearest to it (itself left out) that pass `filters` and score at least
    `min_score`. One statement for all of them: each fact's stored vector starts its own scan of
    the model's HNSW index (iterative, as in `vector_candidates`)."""
    if not fact_ids:
        return {}
    where, params = filters.sql()
    cast = f"vector({int(dimension)})"
    with connection.cursor() as cursor:
        _iterative_scan(cursor, ef_search)
        cursor.execute(
            f"SELECT s.fact_id, n.id, n.score FROM facts_factvector s CROSS JOIN LATERAL ("  # noqa: S608 - the cast is an int, clauses are ours
            f"SELECT v.fact_id AS id, 1 - (v.embedding::{cast} <=> s.embedding::{cast}) AS score "
            "FROM facts_factvector v "
            # Each vector's fact looked up by its id alone, as in vector_candidates.
            f"CROSS JOIN LATERAL (SELECT f.kind, f.trust_score, f.created_at, {_filtered(filters)} "
            "FROM facts_fact f "
            "WHERE f.id = v.fact_id OFFSET 0) f "
            f"WHERE v.tenant_id = %s AND v.model = %s AND {where} "
            f"ORDER BY v.embedding::{cast} <=> s.embedding::{cast} LIMIT %s) n "
            "WHERE s.tenant_id = %s AND s.model = %s AND s.fact_id = ANY(%s) "
            "AND n.id <> s.fact_id AND n.score >= %s ORDER BY s.fact_id, n.score DESC",
            [tenant_id, model, *params, limit + 1, tenant_id, model, list(fact_ids), min_score],
        )
        found: dict[int, list[tuple[int, float]]] = {}
        for source, fact_id, score in cursor.fetchall():
            found.setdefault(source, []).append((fact_id, float(score)))
        return {source: rows[:limit] for source, rows in found.items()}


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


def vector_pair_scores(
    *, tenant_id: int, pairs: Sequence[tuple[int, int]], model: str
) -> dict[tuple[int, int], float]:
    """Cosine similarity of each pair of facts (by their vectors of `model`); pairs where either
    has no such vector are left out."""
    if not pairs:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.a, p.b, 1 - (a.embedding <=> b.embedding) "
            "FROM unnest(%s::bigint[], %s::bigint[]) AS p(a, b) "
            "JOIN facts_factvector a ON a.tenant_id = %s AND a.model = %s AND a.fact_id = p.a "
            "JOIN facts_factvector b ON b.tenant_id = %s AND b.model = %s AND b.fact_id = p.b",
            [[a for a, _ in pairs], [b for _, b in pairs], tenant_id, model, tenant_id, model],
        )
        return {(a, b): float(score) for a, b, score in cursor.fetchall()}


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


def inactive_matches(*, tenant_id: int, latin: str, han: str, limit: int) -> list[int]:
    """Ids of facts that are not active (archived, removed, superseded) and share a word with
    the query, the best matches first: what recall leaves out because of their status.

    Such facts are few next to the active ones, so the status index finds them and the match
    is checked on each; the work is bounded by how many inactive facts the tenant has."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT array_agg(DISTINCT lexeme) FROM unnest({SEARCH_VECTOR_SQL})",  # noqa: S608
            [latin, han],
        )
        lexemes = cursor.fetchone()[0] or []
        if not lexemes:
            return []
        match = tsquery_any([[lexeme] for lexeme in lexemes])
        cursor.execute(
            "SELECT f.id FROM facts_fact f WHERE f.tenant_id = %s AND f.status <> 'active' "
            "AND f.search_vector @@ %s::tsquery "
            "ORDER BY ts_rank(f.search_vector, %s::tsquery) DESC, f.id DESC LIMIT %s",
            [tenant_id, match, match, limit],
        )
        return [row[0] for row in cursor.fetchall()]
