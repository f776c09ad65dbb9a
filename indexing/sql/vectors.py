"""Vectors: the facts nearest to a query's vector (pgvector's HNSW scan), the cosine of given
facts, and each fact's nearest neighbours."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from django.db import connection

from indexing.sql.filters import FACT_COLUMNS, Candidate, Filters, _candidates, _columns, _filtered


def vector_literal(vector: np.ndarray) -> str:
    """A vector as pgvector's text input: nine significant digits give every float32 back
    exactly, in about half the characters (and half the time) of Python's own repr."""
    return "[" + ",".join(map("{:.9g}".format, vector.tolist())) + "]"


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
