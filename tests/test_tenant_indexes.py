"""A large tenant's own full-text and vector indexes (retrieval.indexes): made past the mark,
used by recall without a change of answers, dropped when no longer needed; the functions that
make and drop them accept nothing else."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from facts.embedding import facts_embed_batch
from facts.inputs import fact_draft
from facts.services import fact_add, fact_remove
from indexing.vectors import serving_space
from retrieval.indexes import (
    search_index_name,
    tenant_indexes,
    tenant_indexes_sync,
    vector_index_name,
)
from retrieval.inputs import recall_query
from retrieval.search import recall_search
from tenants.services import tenant_delete

pytestmark = pytest.mark.django_db(transaction=True)

OURS = [
    "Alice Chen leads the Northstar project",
    "The Northstar release ships on Friday",
    "Bob Li lives in Shanghai",
    "老王下周三去上海出差",
]


def _recall(tenant, query: str) -> list[str]:
    result = recall_search(tenant=tenant, query=recall_query({"query": query, "k": 3}))
    return [h.fact.content for h in result.hits]


def test_a_tenant_past_the_mark_gets_its_own_indexes_and_recall_answers_the_same(
    tenant, other_tenant, system_actor
) -> None:
    ids = [
        fact_add(tenant=tenant, actor=system_actor, draft=fact_draft({"content": t})).fact.pk
        for t in OURS
    ]
    fact_add(
        tenant=other_tenant, actor=system_actor,
        draft=fact_draft({"content": "Globex's Northstar release ships on Monday"}),
    )  # fmt: skip
    for each in (tenant, other_tenant):
        facts_embed_batch(tenant=each)
    before = {q: _recall(tenant, q) for q in ("Northstar release", "上海出差", "Shanghai")}

    done = tenant_indexes_sync(threshold=4)
    model = serving_space().name
    ours = {search_index_name(tenant.pk), vector_index_name(tenant.pk, model)}
    assert set(done.created) == ours  # the other tenant (one fact) gets none
    assert tenant_indexes() == ours
    assert tenant_indexes_sync(threshold=4).created == [], "a second run changes nothing"

    after = {q: _recall(tenant, q) for q in before}
    assert after == before
    assert "Globex's Northstar release ships on Monday" not in after["Northstar release"]
    assert _recall(other_tenant, "Northstar release") == [
        "Globex's Northstar release ships on Monday"
    ]

    # Below the mark but above half of it: kept. Below half: dropped.
    fact_remove(tenant=tenant, fact_id=ids[0], actor=system_actor)
    assert tenant_indexes_sync(threshold=4).dropped == []
    fact_remove(tenant=tenant, fact_id=ids[1], actor=system_actor)
    fact_remove(tenant=tenant, fact_id=ids[2], actor=system_actor)
    assert sorted(tenant_indexes_sync(threshold=4).dropped) == sorted(ours)
    assert tenant_indexes() == set()


def test_a_deleted_tenants_indexes_go(tenant, system_actor) -> None:
    for text in OURS:
        fact_add(tenant=tenant, actor=system_actor, draft=fact_draft({"content": text}))
    facts_embed_batch(tenant=tenant)
    assert len(tenant_indexes_sync(threshold=2).created) == 2
    tenant_delete(tenant=tenant, actor=system_actor, confirm=tenant.slug)
    assert len(tenant_indexes_sync(threshold=2).dropped) == 2
    assert tenant_indexes() == set()


@pytest.mark.parametrize(
    "call",
    [
        "SELECT mnemosyne_tenant_index_drop('facts_fact_pkey')",
        "SELECT mnemosyne_tenant_index_create('facts_fact_pkey', 1, NULL, 0)",
        "SELECT mnemosyne_tenant_index_create('fact_search_t2', 1, NULL, 0)",
        "SELECT mnemosyne_tenant_index_create('factvector_hnsw_0123456789ab_t2', 1, 'm', 8)",
        "SELECT mnemosyne_tenant_index_create('factvector_hnsw_0123456789ab_t1', 1, 'm', 0)",
    ],
)
def test_the_index_functions_make_and_drop_only_tenant_indexes(call: str) -> None:
    with pytest.raises(DatabaseError, match="not a tenant|dimension"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(call)


def test_the_applications_sessions_compile_no_statement() -> None:
    """JIT would add tens of milliseconds to any statement whose estimated cost is high."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"


def _pending_list_limit(index: str) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT option_value FROM pg_class c, pg_options_to_table(c.reloptions) "
            "WHERE c.relname = %s AND option_name = 'gin_pending_list_limit'",
            [index],
        )
        row = cursor.fetchone()
    return row[0] if row else None


def test_full_text_indexes_keep_a_short_pending_list(tenant, system_actor) -> None:
    """Every GIN search reads the index's whole pending list: the shared full-text index and a
    tenant's own keep theirs to 256 kB (PostgreSQL's default, 4 MB, made recall after a large
    import five times slower until a vacuum)."""
    assert _pending_list_limit("fact_search_vector") == "256"
    for text in OURS:
        fact_add(tenant=tenant, actor=system_actor, draft=fact_draft({"content": text}))
    facts_embed_batch(tenant=tenant)
    tenant_indexes_sync(threshold=2)
    assert _pending_list_limit(search_index_name(tenant.pk)) == "256"
