"""Full text: the query's lexemes and their frequencies, BM25 candidates and scores, sessions
read as whole documents, and inactive facts that share a word with the query."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection

from indexing.sql.filters import Candidate, Filters, SqlValue, _candidates, _columns
from indexing.text import SEARCH_VECTOR_SQL


def _tsquery_escape(lexeme: str) -> str:
    return lexeme.replace("\\", "\\\\").replace("'", "''")


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
