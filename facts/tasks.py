"""Celery tasks of facts: thin, they take ids, scope to one tenant and call a service."""

from __future__ import annotations

from celery import shared_task

from facts.embedding import facts_embed_batch
from retrieval.vectors import vector_models_cleanup, vector_switch_finish
from tenants.models import Tenant

EMBED_BATCH = 64


@shared_task(
    name="facts.tasks.facts_embed_pending",
    ignore_result=True,
    autoretry_for=(ConnectionError, TimeoutError),
    retry_backoff=True,
    max_retries=5,
)
def facts_embed_pending(tenant_id: int) -> int:
    """Embed the tenant's unembedded active facts, a batch at a time. Idempotent."""
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return 0
    done = 0
    while count := facts_embed_batch(tenant=tenant, limit=EMBED_BATCH):
        done += count
    if done:
        vector_switch_finish()  # this tenant may have been the last one a new model waited for
    return done


@shared_task(name="facts.tasks.facts_embed_sweep", ignore_result=True)
def facts_embed_sweep() -> int:
    """Beat's safety net: a nudge for every tenant that still has facts waiting for a vector;
    also finishes a model switch whose vectors are complete and deletes retired ones."""
    from facts.embedding import tenants_with_pending_embeddings

    vector_switch_finish()
    vector_models_cleanup()
    tenant_ids = tenants_with_pending_embeddings()
    for tenant_id in tenant_ids:
        facts_embed_pending.delay(tenant_id)
    return len(tenant_ids)


@shared_task(name="facts.tasks.facts_record_retrievals", ignore_result=True)
def facts_record_retrievals(tenant_id: int, fact_ids: list[int], at: str) -> int:
    from datetime import datetime

    from facts.services import fact_record_retrievals

    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return 0
    return fact_record_retrievals(tenant=tenant, fact_ids=fact_ids, at=datetime.fromisoformat(at))
