"""Tenant isolation, both halves: the ORM guard and PostgreSQL row-level security."""

from __future__ import annotations

import uuid

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.utils import DatabaseError, ProgrammingError
from django.utils import timezone

from facts import services
from facts.embedding import facts_embed_batch
from facts.inputs import fact_changes, fact_draft
from facts.models import Conflict, Entity, Fact, FactEntity, FactEvent, FactVector, Feedback
from facts.selectors.facts import fact_get, fact_history
from indexing.models import CorpusStats, LexemeStat, RecallLatency, RecallLatencyBatch
from retrieval.inputs import recall_query
from retrieval.latency import BUCKET_COUNT, recall_latency_add
from retrieval.search import recall_search
from tenants.errors import NotFound
from tenants.models import ApiKey, Membership, RetentionPolicy, TenantEvent
from tenants.scope import TenantScopeError, tenant_scope

pytestmark = pytest.mark.django_db

SCOPED_MODELS = [
    Fact, FactVector, Entity, FactEntity, Feedback, FactEvent, Conflict,
    Membership, ApiKey, RetentionPolicy, TenantEvent, CorpusStats, LexemeStat, RecallLatency,
    RecallLatencyBatch,
]  # fmt: skip


@pytest.fixture
def two_tenants(tenant, other_tenant, owner, outsider, system_actor, settings):
    """Each tenant with a fact, an entity link, feedback, a conflict, a key and a member."""
    from tenants.services import apikey_create

    settings.MNEMOSYNE_ENTITY_EXTRACTOR = "tests.extractors.capitalised_people"
    for t in (tenant, other_tenant):
        a = services.fact_add(
            tenant=t, actor=system_actor, draft=fact_draft({"content": f"Alice works at {t.name}"})
        ).fact
        b = services.fact_add(
            tenant=t, actor=system_actor, draft=fact_draft({"content": f"Alice left {t.name}"})
        ).fact
        services.fact_feedback(tenant=t, fact_id=a.pk, helpful=True, actor=system_actor)
        with tenant_scope(t):
            # Stored one after the other, the two may be a conflict already (a change).
            Conflict.objects.for_tenant(t).get_or_create(
                tenant=t, fact_a=a, fact_b=b, defaults={"detected_by": "tests"}
            )
        apikey_create(tenant=t, name="hermes", actor=system_actor)
        facts_embed_batch(tenant=t)
        recall_search(
            tenant=t, query=recall_query({"query": "Alice"})
        )  # computes the tenant's full-text statistics
        recall_latency_add(
            tenant=t, hour=timezone.now(), counts=[1] * BUCKET_COUNT, batch=uuid.uuid4()
        )
    return tenant, other_tenant


@pytest.mark.parametrize("model", SCOPED_MODELS, ids=lambda m: m.__name__)
def test_a_query_without_a_tenant_raises(model, two_tenants) -> None:
    tenant, _ = two_tenants
    with tenant_scope(tenant):
        for attempt in (
            lambda: list(model.objects.all()),
            lambda: model.objects.filter(pk=1).first(),
            lambda: model.objects.count(),
            lambda: model.objects.exists(),
            lambda: model.objects.filter(pk=-1).delete(),
            lambda: model.objects.filter(pk=-1).update(pk=-1),
            lambda: list(model.objects.iterator()),
        ):
            with pytest.raises(TenantScopeError, match=f"{model.__name__} is tenant data"):
                attempt()


@pytest.mark.parametrize("model", SCOPED_MODELS, ids=lambda m: m.__name__)
def test_for_tenant_sees_only_that_tenant(model, two_tenants) -> None:
    tenant, other = two_tenants
    with tenant_scope(tenant):
        mine = list(model.objects.for_tenant(tenant))
        assert mine, f"the fixture gives {model.__name__} rows to every tenant"
        assert {row.tenant_id for row in mine} == {tenant.pk}
        # Even asking for the other tenant inside this scope: the database says no.
        assert list(model.objects.for_tenant(other)) == []


TABLES = [m._meta.db_table for m in SCOPED_MODELS]


@pytest.mark.parametrize("table", TABLES)
def test_raw_sql_that_forgot_its_filter_sees_only_the_scoped_tenant(table, two_tenants) -> None:
    tenant, other = two_tenants
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT tenant_id FROM {table}")  # noqa: S608 - fixed names
        assert [row[0] for row in cursor.fetchall()] == [tenant.pk]
    with connection.cursor() as cursor:  # no scope at all
        cursor.execute(f"SELECT count(*) FROM {table}")  # noqa: S608
        assert cursor.fetchone()[0] == 0
    with tenant_scope(other), connection.cursor() as cursor:  # the other tenant's rows exist
        cursor.execute(f"SELECT DISTINCT tenant_id FROM {table}")  # noqa: S608
        assert [row[0] for row in cursor.fetchall()] == [other.pk]


def test_rows_cannot_be_written_into_another_tenant(two_tenants) -> None:
    tenant, other = two_tenants
    with tenant_scope(tenant):
        with pytest.raises(ProgrammingError, match="row-level security"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO facts_entity (tenant_id, name, normalized, type, aliases, "
                    "created_at) VALUES (%s, 'Mallory', 'mallory', 'person', '{}', now())",
                    [other.pk],
                )
        with connection.cursor() as cursor:
            cursor.execute("UPDATE facts_fact SET trust_score = 0 WHERE tenant_id = %s", [other.pk])
            assert cursor.rowcount == 0


def test_links_cannot_cross_tenants_even_with_a_foreign_id_known(two_tenants) -> None:
    tenant, other = two_tenants
    with tenant_scope(other):
        entity = Entity.objects.for_tenant(other).first()
    with tenant_scope(tenant):
        fact = Fact.objects.for_tenant(tenant).first()
        with pytest.raises(IntegrityError, match="same_tenant"), transaction.atomic():
            FactEntity.objects.create(tenant=tenant, fact=fact, entity=entity)
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_the_audit_trail_is_append_only(two_tenants) -> None:
    tenant, _ = two_tenants
    with tenant_scope(tenant):
        event = FactEvent.objects.for_tenant(tenant).first()
        for statement in (
            "UPDATE facts_factevent SET actor = 'nobody'",
            "DELETE FROM facts_factevent",
        ):
            # The runtime role is not even granted it; the owner meets the trigger (see
            # tests/test_database_roles.py).
            with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(f"{statement} WHERE id = %s", [event.pk])
        assert FactEvent.objects.for_tenant(tenant).get(pk=event.pk).actor == event.actor


def test_another_tenants_fact_id_behaves_exactly_like_a_missing_one(
    two_tenants, system_actor
) -> None:
    tenant, other = two_tenants
    with tenant_scope(other):
        foreign = Fact.objects.for_tenant(other).first()
        before = (foreign.trust_score, foreign.status, foreign.content)
    missing = 10**12
    for fact_id in (foreign.pk, missing):
        calls = [
            lambda fid=fact_id: fact_get(tenant=tenant, fact_id=fid),
            lambda fid=fact_id: fact_history(tenant=tenant, fact_id=fid),
            lambda fid=fact_id: services.fact_update(
                tenant=tenant,
                fact_id=fid,
                actor=system_actor,
                changes=fact_changes({"content": "x"}),
            ),
            lambda fid=fact_id: services.fact_remove(
                tenant=tenant, fact_id=fid, actor=system_actor
            ),
            lambda fid=fact_id: services.fact_restore(
                tenant=tenant, fact_id=fid, actor=system_actor
            ),
            lambda fid=fact_id: services.fact_feedback(
                tenant=tenant, fact_id=fid, helpful=False, actor=system_actor
            ),
            lambda fid=fact_id: services.fact_purge(
                tenant=tenant, fact_id=fid, actor=system_actor, reason="x"
            ),
        ]
        for call in calls:
            with pytest.raises(NotFound) as error:
                call()
            assert str(error.value) == f"fact {fact_id} not found"
    with tenant_scope(other):
        foreign.refresh_from_db()
    assert (foreign.trust_score, foreign.status, foreign.content) == before


def test_scopes_do_not_mix(tenant, other_tenant) -> None:
    with tenant_scope(tenant):
        with tenant_scope(tenant):  # re-entering the same tenant is fine
            pass
        with pytest.raises(TenantScopeError, match="already scoped"), tenant_scope(other_tenant):
            pass


def test_after_a_scope_ends_the_transaction_sees_nothing_again(two_tenants) -> None:
    tenant, _ = two_tenants
    with transaction.atomic():
        with tenant_scope(tenant):
            assert Fact.objects.for_tenant(tenant).count() == 2
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM facts_fact")
            assert cursor.fetchone()[0] == 0


def test_the_application_role_cannot_bypass_row_level_security() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
        assert cursor.fetchone() == (False, False)
