"""Celery tasks of retrieval: thin, they take ids, scope to one tenant and call a service."""

from __future__ import annotations

import uuid
from datetime import datetime

from celery import shared_task
from django.core.cache import cache

from retrieval.indexes import tenant_indexes_sync
from retrieval.latency import recall_latency_add
from retrieval.stats import corpus_stats_refresh
from tenants.jobs import retrying_task, tenant_task
from tenants.models import Tenant


@retrying_task("retrieval.tasks.retrieval_refresh_corpus_stats")
def retrieval_refresh_corpus_stats(tenant_id: int) -> int:
    """Recompute a large tenant's full-text statistics. Returns the number of active facts."""
    try:
        return _corpus_stats_refresh(tenant_id)
    finally:
        cache.delete(f"mnemosyne:{tenant_id}:corpus-refresh")


@tenant_task(scoped=True)
def _corpus_stats_refresh(tenant: Tenant) -> int:
    corpus = corpus_stats_refresh(tenant_id=tenant.pk)
    return corpus.documents if corpus else 0


@retrying_task("retrieval.tasks.retrieval_store_latencies")
def retrieval_store_latencies(
    rows: list[tuple[int, str, list[int]]], batch: str | None = None
) -> int:
    """Add recall latency histograms `[tenant_id, hour (ISO), counts]` to their rows. A
    message delivered twice, or retried after some of its rows were added, adds each row once
    (by its `batch` id; messages of older versions carry none). Returns how many rows it added."""
    stored = 0
    for tenant_id, hour, counts in rows:
        tenant = Tenant.objects.filter(pk=tenant_id).first()
        if tenant is None:  # a tenant deleted since has nothing to chart
            continue
        stored += recall_latency_add(
            tenant=tenant,
            hour=datetime.fromisoformat(str(hour)),
            counts=counts,
            # One id per row: a message can carry two hours of one tenant.
            batch=None if batch is None else uuid.uuid5(uuid.UUID(batch), str(hour)),
        )
    return stored


@shared_task(
    name="retrieval.tasks.retrieval_tenant_indexes_sync",
    ignore_result=True,
    soft_time_limit=1800,
    time_limit=1860,
)
def retrieval_tenant_indexes_sync() -> int:
    """Beat: make and drop large tenants' own indexes. Returns how many changed."""
    done = tenant_indexes_sync()
    return len(done.created) + len(done.dropped)
