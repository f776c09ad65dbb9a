"""The raw SQL of recall: full text, vector and entity candidates, and corpus statistics.

Each function takes `tenant_id` as a required parameter and must run inside `tenant_scope`; the
ORM's tenant guard does not see raw SQL, row-level security does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db import connection

_TSV_ITEM = re.compile(r"'((?:[^']|'')*)':([\d,A-D]+)")


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _tsquery_escape(lexeme: str) -> str:
    return lexeme.replace("\\", "\\\\").replace("'", "''")


@dataclass(frozen=True)
class Filters:
    """Which facts recall may return. Status is always active."""

    scope_prefix: str = ""
    kind: str | None = None
    category: str | None = None
    min_trust: float = 0.0

    def sql(self) -> tuple[str, list[object]]:
        clauses = ["f.status = 'active'", "f.trust_score >= %s"]
        params: list[object] = [self.min_trust]
        if self.scope_prefix:
            clauses.append("(f.scope = %s OR f.scope LIKE %s)")
            params += [self.scope_prefix, f"{_like_escape(self.scope_prefix)}/%"]
        if self.kind:
            clauses.append("f.kind = %s")
            params.append(self.kind)
        if self.category:
            clauses.append("f.category = %s")
            params.append(self.category)
        return " AND ".join(clauses), params


def query_lexemes(latin: str, han: str) -> list[str]:
    """The query's lexemes exactly as the stored search vectors spell them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT lexeme FROM unnest("
            "to_tsvector('english', %s) || to_tsvector('simple', %s))",
            [latin, han],
        )
        return [row[0] for row in cursor.fetchall()]


def _tsquery(lexemes: Sequence[str]) -> str:
    # Each lexeme quoted for to_tsquery; OR: recall wants any matching word, BM25 ranks them.
    return " | ".join(f"'{_tsquery_escape(lexeme)}'" for lexeme in lexemes)


def parse_tsvector(text: str) -> dict[str, int]:
    """term -> frequency, from a tsvector's text form ('word':1,4 'other':2)."""
    return {
        m.group(1).replace("''", "'"): m.group(2).count(",") + 1 for m in _TSV_ITEM.finditer(text)
    }


def fts_candidates(
    *, tenant_id: int, lexemes: Sequence[str], filters: Filters, limit: int
) -> list[tuple[int, str]]:
    """(id, search vector text) of facts matching any lexeme, best ts_rank_cd first."""
    where, params = filters.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT f.id, f.search_vector::text FROM facts_fact f, to_tsquery('simple', %s) q "  # noqa: S608 - clauses are ours, values are parameters
            f"WHERE f.tenant_id = %s AND f.search_vector @@ q AND {where} "
            "ORDER BY ts_rank_cd(f.search_vector, q) DESC LIMIT %s",
            [_tsquery(lexemes), tenant_id, *params, limit],
        )
        return cursor.fetchall()


def corpus_stats(*, tenant_id: int) -> tuple[int, float]:
    """(number of active facts, their mean number of lexemes)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(avg(length(search_vector)), 0) FROM facts_fact "
            "WHERE tenant_id = %s AND status = 'active'",
            [tenant_id],
        )
        count, mean = cursor.fetchone()
    return int(count), float(mean)


def document_frequencies(*, tenant_id: int, lexemes: Sequence[str]) -> dict[str, int]:
    if not lexemes:
        return {}
    counts = ", ".join(
        "count(*) FILTER (WHERE search_vector @@ to_tsquery('simple', %s))" for _ in lexemes
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {counts} FROM facts_fact, to_tsquery('simple', %s) q "  # noqa: S608
            "WHERE tenant_id = %s AND status = 'active' AND search_vector @@ q",
            [*(_tsquery([lexeme]) for lexeme in lexemes), _tsquery(lexemes), tenant_id],
        )
        row = cursor.fetchone()
    return dict(zip(lexemes, (int(v) for v in row), strict=True))


def vector_candidates(
    *,
    tenant_id: int,
    vector: np.ndarray,
    model: str,
    filters: Filters,
    limit: int,
    ef_search: int = 100,
) -> list[tuple[int, float]]:
    """(id, cosine similarity) of the nearest facts embedded by `model`.

    The tenant and filters apply inside the HNSW scan (iterative scan, relaxed order), so a
    small tenant among large ones still gets its `limit` best; the outer query restores order.
    """
    where, params = filters.sql()
    dimension = int(vector.shape[0])
    literal = "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef_search)])
        cursor.execute(
            "SELECT id, 1 - distance FROM ("  # noqa: S608 - dimension is an int
            f"SELECT f.id, f.embedding::vector({dimension}) <=> %s::vector({dimension}) AS distance"
            " "
            f"FROM facts_fact f WHERE f.tenant_id = %s AND f.embedding_model = %s AND {where} "
            f"ORDER BY f.embedding::vector({dimension}) <=> %s::vector({dimension}) LIMIT %s"
            ") nearest ORDER BY distance",
            [literal, tenant_id, model, *params, literal, limit],
        )
        return [(row[0], float(row[1])) for row in cursor.fetchall()]


def entity_candidates(
    *, tenant_id: int, names: Sequence[str], total: int, filters: Filters, limit: int
) -> tuple[list[tuple[int, float]], float]:
    """Facts linked to the entities named, each scored by the information of the entities it
    shares with the query: sum of log(1 + total / facts linked to the entity). An entity that
    is everywhere (a conversation's speaker) weighs little; a rare one weighs much.

    Returns the scored (id, score) and the most any fact could score (all named entities)."""
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
        if not weights:
            return [], 0.0
        cursor.execute(
            "SELECT f.id, sum(w.weight) FROM unnest(%s::bigint[], %s::float[]) AS w(id, weight) "  # noqa: S608
            "JOIN facts_factentity fe ON fe.tenant_id = %s AND fe.entity_id = w.id "
            "JOIN facts_fact f ON f.tenant_id = fe.tenant_id AND f.id = fe.fact_id "
            f"WHERE {where} GROUP BY f.id ORDER BY sum(w.weight) DESC, f.id DESC LIMIT %s",
            [list(weights), list(weights.values()), tenant_id, *params, limit],
        )
        return [(row[0], float(row[1])) for row in cursor.fetchall()], sum(weights.values())
