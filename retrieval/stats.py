"""A tenant's full-text statistics (facts, mean length, facts per lexeme), kept fresh enough.

BM25 needs them for every query, and counting them per query scans the whole tenant. So they
are computed in one pass (`ts_stat`) into `CorpusStats` and `LexemeStat` and recomputed once the
tenant has changed by a tenth: at once for a small tenant (a few milliseconds), by a worker for a
large one, which meanwhile goes on with figures a little old. A lexeme the figures have not seen
yet (a word first stored since) is counted when asked for, so a new fact is found at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connection
from django.utils import timezone

from tenants.jobs import job_send

logger = logging.getLogger(__name__)

# Recomputed when this share of the tenant's facts changed since, and at least this many writes.
STALE_SHARE, STALE_MIN_WRITES = 0.1, 20
# Up to this many facts the figures are recomputed inline (ts_stat: ~1.5 ms per 1,000 facts).
INLINE_LIMIT = 5000
_REFRESH_LOCK_S = 600


@dataclass(frozen=True)
class Corpus:
    documents: int
    mean_length: float


def corpus_stats_refresh(*, tenant_id: int) -> Corpus | None:
    """Recompute the tenant's figures in one transaction. Must run inside `tenant_scope`.

    Returns None when another process is recomputing them at this moment."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_xact_lock(hashtext('corpus-stats'), %s::int)", [tenant_id]
        )
        if not cursor.fetchone()[0]:
            return None
        cursor.execute(
            "SELECT coalesce(max(id), 0) FROM facts_factevent WHERE tenant_id = %s", [tenant_id]
        )
        generation = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*), coalesce(avg(length(search_vector)), 0) FROM facts_fact "
            "WHERE tenant_id = %s AND status = 'active'",
            [tenant_id],
        )
        documents, mean_length = cursor.fetchone()
        cursor.execute("DELETE FROM retrieval_lexemestat WHERE tenant_id = %s", [tenant_id])
        # ts_stat runs the query it is given as text; the tenant id is an int, not user input.
        cursor.execute(
            "INSERT INTO retrieval_lexemestat (tenant_id, lexeme, documents) "
            "SELECT %s, word, ndoc FROM ts_stat(%s)",
            [
                tenant_id,
                "SELECT search_vector FROM facts_fact WHERE tenant_id = "  # noqa: S608 - an int
                f"{int(tenant_id)} AND status = 'active' AND search_vector IS NOT NULL",
            ],
        )
        cursor.execute(
            "INSERT INTO retrieval_corpusstats "
            "(tenant_id, documents, mean_length, generation, computed_at) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tenant_id) DO UPDATE SET "
            "documents = excluded.documents, mean_length = excluded.mean_length, "
            "generation = excluded.generation, computed_at = excluded.computed_at",
            [tenant_id, documents, float(mean_length), generation, timezone.now()],
        )
    return Corpus(int(documents), float(mean_length))


def corpus_stats(*, tenant_id: int) -> Corpus:
    """The tenant's figures, recomputed first when missing or (small tenants) stale. Must run
    inside `tenant_scope`."""
    with connection.cursor() as cursor:
        # How many writes since the figures were computed, counted only up to what matters.
        cursor.execute(
            "SELECT c.documents, c.mean_length, (SELECT count(*) FROM (SELECT 1 FROM "
            "facts_factevent e WHERE e.tenant_id = c.tenant_id AND e.id > c.generation "
            "LIMIT greatest(%s, ceil(c.documents * %s)::int)) since) "
            "FROM retrieval_corpusstats c WHERE c.tenant_id = %s",
            [STALE_MIN_WRITES, STALE_SHARE, tenant_id],
        )
        row = cursor.fetchone()
    # A read replica (memoryadmin/replica.py) answers reads only: a worker refreshes the
    # figures on the primary instead, and the replica gets them by replication.
    writable = connection.alias == DEFAULT_DB_ALIAS
    if row is None:
        if not writable:
            _refresh_later(tenant_id)
            return _corpus_counted(tenant_id)
        return corpus_stats_refresh(tenant_id=tenant_id) or Corpus(0, 0.0)
    documents, mean_length, writes = row
    corpus = Corpus(int(documents), float(mean_length))
    if writes < max(STALE_MIN_WRITES, documents * STALE_SHARE):
        return corpus
    if documents <= INLINE_LIMIT and writable:
        return corpus_stats_refresh(tenant_id=tenant_id) or corpus
    _refresh_later(tenant_id)
    return corpus


def _corpus_counted(tenant_id: int) -> Corpus:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(avg(length(search_vector)), 0) FROM facts_fact "
            "WHERE tenant_id = %s AND status = 'active'",
            [tenant_id],
        )
        documents, mean_length = cursor.fetchone()
    return Corpus(int(documents), float(mean_length))


def _refresh_later(tenant_id: int) -> None:
    if not cache.add(f"mnemosyne:{tenant_id}:corpus-refresh", 1, _REFRESH_LOCK_S):
        return  # already asked for
    try:
        job_send("retrieval.tasks.retrieval_refresh_corpus_stats", tenant_id)
    except Exception:  # noqa: BLE001 - a broker outage must not fail recall; figures stay a bit old
        cache.delete(f"mnemosyne:{tenant_id}:corpus-refresh")
        logger.warning("tenant %s: corpus statistics refresh not sent", tenant_id, exc_info=True)
