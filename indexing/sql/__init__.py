"""The raw SQL of recall: full text, vector and entity candidates, and corpus statistics.

Each function takes `tenant_id` as a required parameter and must run inside `tenant_scope`; the
ORM's tenant guard does not see raw SQL, row-level security does.

One module per kind of query: `filters` (which facts recall may return, and the columns the
candidates bring), `fulltext` (lexemes, BM25), `vectors` (nearest vectors, cosines) and
`neighbours` (turns beside a candidate, facts linked to entities). Callers use them through
this package (`from indexing import sql`, then `sql.vector_candidates(...)`).
"""

from indexing.sql.filters import FACT_COLUMNS, Candidate, FactColumns, Filters, SqlValue
from indexing.sql.fulltext import (
    BM25_B,
    BM25_K1,
    UNSEEN_COUNT_LIMIT,
    fts_ranked,
    fts_scores_for,
    inactive_matches,
    query_terms,
    session_documents,
    tsquery_any,
    tsquery_lexeme,
)
from indexing.sql.neighbours import entities_within, entity_candidates, turn_neighbours
from indexing.sql.vectors import (
    vector_candidates,
    vector_literal,
    vector_neighbours_of,
    vector_pair_scores,
    vector_scores_for,
)

__all__ = [
    "BM25_B",
    "BM25_K1",
    "FACT_COLUMNS",
    "UNSEEN_COUNT_LIMIT",
    "Candidate",
    "FactColumns",
    "Filters",
    "SqlValue",
    "entities_within",
    "entity_candidates",
    "fts_ranked",
    "fts_scores_for",
    "inactive_matches",
    "query_terms",
    "session_documents",
    "tsquery_any",
    "tsquery_lexeme",
    "turn_neighbours",
    "vector_candidates",
    "vector_literal",
    "vector_neighbours_of",
    "vector_pair_scores",
    "vector_scores_for",
]
