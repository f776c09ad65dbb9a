"""A fact an agent stores one by one keeps the vector its near-duplicate check made: it is found
by meaning before any worker runs, and the worker does not embed it a second time."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from facts.conflicts import conflicts_check_pending, tenants_with_unchecked_facts
from facts.embedding import facts_embed_batch
from facts.inputs import fact_draft
from facts.models import Fact, FactVector
from facts.services import fact_add, fact_import
from indexing.vectors import configured_embedder, serving_space
from operations.roles import as_owner
from retrieval.inputs import recall_query
from retrieval.search import recall_search
from tenants.scope import tenant_scope
from tests.helpers import tables_last_analysed, tasks_sent_on_commit

pytestmark = pytest.mark.django_db


def _add(tenant, actor, text: str, **values):
    return fact_add(tenant=tenant, actor=actor, draft=fact_draft({"content": text, **values}))


def _vector_hits(tenant, query: str) -> list[str]:
    found = recall_search(tenant=tenant, query=recall_query({"query": query, "channels": ["vec"]}))
    return [hit.fact.content for hit in found.hits]


def _serving(tenant, actor) -> None:
    """A first fact embedded by the worker: from then on a model serves recall."""
    _add(tenant, actor, "The office closes at six on Fridays.")
    while facts_embed_batch(tenant=tenant):
        pass
    assert serving_space() is not None


def test_a_fact_stored_alone_is_found_by_meaning_before_any_worker_runs(
    tenant, system_actor, django_capture_on_commit_callbacks
) -> None:
    _serving(tenant, system_actor)
    text = "Priya is allergic to shellfish."
    with django_capture_on_commit_callbacks() as callbacks:
        fact = _add(tenant, system_actor, text).fact
    assert _vector_hits(tenant, "which seafood can Priya not eat")[0] == text
    with tenant_scope(tenant):
        stored = FactVector.objects.for_tenant(tenant).get(fact_id=fact.pk)
        assert Fact.objects.for_tenant(tenant).get(pk=fact.pk).embedding_model == stored.model
    # The vector the worker would have made from the same text.
    made = configured_embedder().embed([text], purpose="passage")[0]
    assert float(np.dot(np.asarray(stored.embedding), made)) > 0.9999
    # No embedding for a worker to do; the conflict check that follows embedding still comes.
    assert tasks_sent_on_commit(callbacks, "facts.tasks.facts_embed_pending") == []
    assert tasks_sent_on_commit(callbacks, "facts.tasks.facts_check_conflicts") == [tenant.pk]
    assert facts_embed_batch(tenant=tenant) == 0
    assert tenant.pk in tenants_with_unchecked_facts()


def test_a_fact_with_its_vector_on_write_is_still_checked_for_conflicts(
    tenant, system_actor
) -> None:
    _serving(tenant, system_actor)
    _add(tenant, system_actor, "Alice Chen prefers green tea.")
    # In a scope inside the first's: the request judges a fact against its own scope only, the
    # worker against the scopes around it too.
    _add(tenant, system_actor, "Alice Chen prefers black coffee.", scope="team:x")
    assert facts_embed_batch(tenant=tenant) == 0, "both stored with their vectors"
    assert conflicts_check_pending(tenant=tenant).conflicts == 1


def test_turns_imports_and_facts_stored_before_any_model_serves_wait_for_the_worker(
    tenant, system_actor, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        first = _add(tenant, system_actor, "The office closes at six on Fridays.").fact
    assert first.embedding_model == ""
    assert tasks_sent_on_commit(callbacks, "facts.tasks.facts_embed_pending") == [tenant.pk]
    while facts_embed_batch(tenant=tenant):
        pass
    # A turn is embedded with the turn before it, and an import is embedded in batches.
    turn = _add(tenant, system_actor, "Yes, last Friday!", kind="turn", session_id="s1").fact
    imported = fact_import(
        tenant=tenant, lines=['{"content": "The lab opens at nine."}'], actor=system_actor
    ).lines[0]
    with tenant_scope(tenant):
        waiting = Fact.objects.for_tenant(tenant).filter(embedding_model="")
        assert set(waiting.values_list("pk", flat=True)) == {turn.pk, imported.fact_id}
    assert facts_embed_batch(tenant=tenant) == 2


def test_another_tenant_finds_nothing_of_a_fact_stored_with_its_vector(
    tenant, other_tenant, system_actor
) -> None:
    _serving(tenant, system_actor)
    _add(tenant, system_actor, "Priya is allergic to shellfish.")
    assert _vector_hits(other_tenant, "which seafood can Priya not eat") == []


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_conflict_check_has_the_tables_analysed_that_facts_stored_one_by_one_changed(
    tenant, system_actor
) -> None:
    """Facts stored one by one with their vectors call no embedding task, the one that had the
    tables analysed. Never analysed, the facts table was planned as nearly empty: each
    near-duplicate check looked the nearest facts up by reading all of the tenant's. The
    conflict check that follows the adds has the tables analysed (through the owner's
    function: the runtime role these tests run as cannot ANALYZE)."""
    from facts import tasks
    from facts.embedding import ANALYZE_MIN_CHANGES

    _serving(tenant, system_actor)
    tasks.facts_check_conflicts(tenant.pk)
    tables = ("facts_fact", "facts_factvector")
    # Autovacuum analyses a table after 50 changes too, when it comes round: had it come
    # between the adds and the check, nothing would be left for the check to analyse. It is
    # kept off these tables meanwhile. And the tables are analysed as they are now, nearly
    # empty: an earlier test's analysis of a larger table outlives the truncation between
    # tests (TRUNCATE keeps pg_class.reltuples), and 50 changes would fall short of
    # ANALYZE_MIN_FRACTION of the size recorded.
    with as_owner(), connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
        cursor.execute(f"ANALYZE {', '.join(tables)}")
    try:
        before = tables_last_analysed()
        for i in range(ANALYZE_MIN_CHANGES):
            _add(tenant, system_actor, f"Rack {i} holds the build agent number {i}.")
        with connection.cursor() as cursor:
            # A process's counts of changed rows are published within a second or so; the
            # worker comes later than that. Here they are published at once.
            cursor.execute("SELECT pg_stat_force_next_flush()")
        assert tasks.facts_check_conflicts(tenant.pk) == ANALYZE_MIN_CHANGES
        after = tables_last_analysed()
    finally:
        with as_owner(), connection.cursor() as cursor:
            for table in tables:
                cursor.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")
    assert after["facts_fact"] is not None and after["facts_fact"] != before["facts_fact"]
    assert after["facts_factvector"] != before["facts_factvector"], "their vectors too"
