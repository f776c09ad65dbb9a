"""Background jobs: sent by name from the services, run by tasks that load their tenant."""

from __future__ import annotations

import pytest
from celery import current_app

from facts.inputs import fact_draft
from facts.models import Fact
from facts.services import fact_add
from facts.tasks import (
    entities_relink,
    facts_check_conflicts,
    facts_embed_pending,
    facts_importance_recompute,
    facts_record_retrievals,
    retention_run,
)
from retrieval.tasks import retrieval_refresh_corpus_stats
from tenants.jobs import job_send
from tenants.models import Tenant
from tenants.scope import tenant_scope

GONE = 2_000_000_000  # no tenant has this id


@pytest.mark.django_db
def test_a_task_for_a_tenant_that_no_longer_exists_does_nothing() -> None:
    assert not Tenant.objects.filter(pk=GONE).exists()
    assert facts_embed_pending(GONE) == 0
    assert facts_check_conflicts(GONE) == 0
    assert facts_importance_recompute(GONE) == 0
    assert facts_record_retrievals(GONE, [1], "2026-01-01T00:00:00+00:00") == 0
    assert entities_relink(GONE, 1) == 0
    assert retention_run(GONE, 1) == 0
    assert retrieval_refresh_corpus_stats(GONE) == 0


@pytest.mark.django_db
def test_tasks_keep_the_arguments_their_messages_carry() -> None:
    # Queued messages and beat name the tenant's id, positionally or by keyword.
    assert retention_run.apply(kwargs={"tenant_id": GONE, "run_id": 1}).get() == 0
    assert facts_embed_pending.apply(args=(GONE,)).get() == 0
    with pytest.raises(TypeError):
        facts_embed_pending.delay()  # Celery checks the arguments before sending


def test_every_job_the_services_send_by_name_is_a_registered_task() -> None:
    for name in (
        "facts.tasks.facts_embed_pending",
        "facts.tasks.entities_relink",
        "facts.tasks.retention_run",
        "facts.tasks.facts_record_retrievals",
        "retrieval.tasks.retrieval_refresh_corpus_stats",
        "retrieval.tasks.retrieval_store_latencies",
    ):
        assert name in current_app.tasks, name


@pytest.mark.django_db(transaction=True)
def test_a_job_sent_by_name_runs_its_task(tenant, system_actor) -> None:
    draft = fact_draft({"content": "The build runs on Fridays"})
    fact = fact_add(tenant=tenant, draft=draft, actor=system_actor).fact
    at = "2026-01-01T00:00:00+00:00"
    current_app.conf.task_always_eager = True
    try:
        job_send("facts.tasks.facts_record_retrievals", tenant.pk, [fact.pk], at)
    finally:
        current_app.conf.task_always_eager = False
    with tenant_scope(tenant):
        assert Fact.objects.for_tenant(tenant).get(pk=fact.pk).retrieval_count == 1


def test_every_task_of_one_tenant_retries_a_database_outage() -> None:
    """A restart or failover of PostgreSQL surfaces as Django's OperationalError or
    InterfaceError, neither of which is a ConnectionError: each is retried with backoff."""
    from django.db import InterfaceError, OperationalError

    tenant_tasks = [
        task
        for name, task in current_app.tasks.items()
        if name.startswith(("facts.tasks.", "retrieval.tasks."))
        and not name.endswith(("_sweep", "_indexes_sync"))
    ]
    assert len(tenant_tasks) >= 9
    for task in tenant_tasks:
        retried = tuple(getattr(task, "autoretry_for", ()))
        for error in (OperationalError, InterfaceError, ConnectionError):
            assert any(issubclass(error, kind) for kind in retried), (task.name, error)
        assert task.max_retries and task.retry_backoff, task.name


@pytest.mark.django_db
def test_an_embedding_task_that_lost_its_database_runs_again(
    tenant, system_actor, monkeypatch
) -> None:
    from django.db import OperationalError

    import facts.embedding

    fact = fact_add(
        tenant=tenant, draft=fact_draft({"content": "Backups run at two"}), actor=system_actor
    ).fact
    real, calls = facts.embedding.facts_embed_batch, []

    def flaky(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return real(**kwargs)

    monkeypatch.setattr(facts.embedding, "facts_embed_batch", flaky)
    facts_embed_pending.apply(args=(tenant.pk,))
    with tenant_scope(tenant):
        assert Fact.objects.for_tenant(tenant).get(pk=fact.pk).embedding_model
    assert len(calls) >= 2
