"""Re-linking a tenant's facts to their entities when what extraction finds has changed (the
extractor, or the tenant's dictionary): a job per tenant, run by a worker in batches, taken up
again when its worker died; beat's sweep starts the jobs an extractor change calls for. A
re-link also gives each entity the type found most often among its facts, except where a
person set it."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from facts.entities import entity_dictionary, extraction_signature, fact_link_entities
from facts.models import (
    Entity,
    EntityAction,
    EntityEvent,
    ExtractorState,
    Fact,
    FactEntity,
    RelinkJob,
    RelinkStatus,
)
from tenants import cross_tenant
from tenants.actors import Actor
from tenants.jobs import job_send
from tenants.models import Tenant
from tenants.scope import tenant_scope

RELINK_BATCH = 200
# A running job that has not counted progress for this long is taken to have died.
RELINK_STALE = timedelta(minutes=10)


def relink_start(*, tenant: Tenant, actor: Actor, reason: str) -> RelinkJob:
    """Queue a job that links every fact of the tenant anew. A job still queued is reused
    (it will read the newest dictionary); one already running is followed by this one."""
    with tenant_scope(tenant), transaction.atomic():
        queued = (
            RelinkJob.objects.for_tenant(tenant)
            .select_for_update()
            .filter(status=RelinkStatus.QUEUED, last_fact_id=0)
            .order_by("-id")
            .first()
        )
        if queued is not None:
            return queued
        job = RelinkJob.objects.create(
            tenant=tenant,
            reason=reason[:200],
            signature=extraction_signature(),
            created_by=str(actor),
            total=Fact.objects.for_tenant(tenant).count(),
        )
        _schedule_relink(tenant.pk, job.pk)
        return job


def _schedule_relink(tenant_id: int, job_id: int) -> None:
    transaction.on_commit(
        lambda: job_send("facts.tasks.entities_relink", tenant_id, job_id), robust=True
    )


def relink_run(*, tenant: Tenant, job_id: int, seconds: float = 240.0) -> RelinkJob | None:
    """Work on a relink job: at least one batch, then more for up to `seconds`, each batch its
    own transaction, so its progress shows at once. Returns the job: done, or queued again when
    the time ran out (run it again); None if there is none. Idempotent: a batch done twice
    links the same way."""
    started = timezone.now()
    with tenant_scope(tenant):
        claimed = (
            RelinkJob.objects.for_tenant(tenant)
            .filter(pk=job_id)
            .filter(
                Q(status=RelinkStatus.QUEUED)
                | Q(status=RelinkStatus.RUNNING, updated_at__lt=timezone.now() - RELINK_STALE)
            )
            .update(status=RelinkStatus.RUNNING, started_at=Coalesce("started_at", Now()))
        )
        job = RelinkJob.objects.for_tenant(tenant).filter(pk=job_id).first()
    if not claimed or job is None:
        return job
    types_found: Counter[tuple[int, str]] = Counter()
    while True:
        with tenant_scope(tenant):
            if _relink_batch(tenant, job, types_found):
                return job
        if (timezone.now() - started).total_seconds() >= seconds:
            break
    # Out of time: back in the queue, where the next run (or the sweep) takes it up.
    with tenant_scope(tenant):
        entities_retype_found(tenant=tenant, types_found=types_found)
        job.status = RelinkStatus.QUEUED
        job.save(update_fields=["status", "updated_at"])
    return job


def _relink_batch(tenant: Tenant, job: RelinkJob, types_found: Counter[tuple[int, str]]) -> bool:
    """Link the next batch of the job's facts anew. True when there was none left (done)."""
    dictionary = entity_dictionary(tenant=tenant)
    facts = list(
        Fact.objects.for_tenant(tenant)
        .filter(pk__gt=job.last_fact_id)
        .order_by("pk")
        .only("id", "tenant_id", "kind", "speaker", "content")[:RELINK_BATCH]
    )
    for fact in facts:
        fact_link_entities(tenant=tenant, fact=fact, dictionary=dictionary, types_found=types_found)
    if facts:
        job.done += len(facts)
        job.last_fact_id = facts[-1].pk
        job.total = max(job.total, job.done)
        job.save(update_fields=["done", "last_fact_id", "total", "updated_at"])
        return False
    entities_retype_found(tenant=tenant, types_found=types_found)
    job.status = RelinkStatus.DONE
    job.total = job.done
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "total", "finished_at", "updated_at"])
    _drop_orphans(tenant)
    following = (
        RelinkJob.objects.for_tenant(tenant)
        .filter(status=RelinkStatus.QUEUED, pk__gt=job.pk)
        .order_by("pk")
        .first()
    )
    if following is not None:
        _schedule_relink(tenant.pk, following.pk)
    return True


# Curation that sets an entity's type by hand: a re-link never changes such a type.
_TYPED_BY_HAND = (EntityAction.RETYPE, EntityAction.SPLIT_FROM)


def entities_retype_found(*, tenant: Tenant, types_found: Counter[tuple[int, str]]) -> int:
    """Give each entity the type the extractor found most often for it among the facts just
    re-linked (`types_found`: (entity id, type) -> facts), unless someone set its type by hand
    (a type change or a split on its page): stored entities follow a new extractor as new ones
    do. Returns how many changed. Caller holds the tenant scope."""
    votes: dict[int, Counter[str]] = {}
    for (entity_id, kind), count in types_found.items():
        votes.setdefault(entity_id, Counter())[kind] += count
    if not votes:
        return 0
    by_hand = set(
        EntityEvent.objects.for_tenant(tenant)
        .filter(entity_id__in=list(votes), action__in=_TYPED_BY_HAND)
        .values_list("entity_id", flat=True)
    )
    entities = Entity.objects.for_tenant(tenant)
    changed = 0
    current = dict(entities.filter(pk__in=list(votes)).values_list("pk", "type"))
    moves: dict[str, list[int]] = {}
    for entity_id, counts in votes.items():
        if entity_id in by_hand or entity_id not in current:
            continue
        top = max(counts.values())
        # A tie keeps the type the entity has, if it is among the most found.
        if counts.get(current[entity_id], 0) < top:
            kind = min(k for k, n in counts.items() if n == top)
            moves.setdefault(kind, []).append(entity_id)
    hand_typed = EntityEvent.objects.for_tenant(tenant).filter(action__in=_TYPED_BY_HAND)
    for kind, ids in moves.items():
        # The check again in the update itself: a type set by hand a moment ago still wins.
        changed += (
            entities.filter(pk__in=ids)
            .exclude(type=kind)
            .exclude(pk__in=hand_typed.values("entity_id"))
            .update(type=kind)
        )
    return changed


def _drop_orphans(tenant: Tenant) -> None:
    """Entities no fact links to any more and nobody curated (no history): what the old
    extractor or dictionary made up."""
    curated = EntityEvent.objects.for_tenant(tenant).values("entity_id")
    linked = FactEntity.objects.for_tenant(tenant).values("entity_id")
    Entity.objects.for_tenant(tenant).exclude(pk__in=linked).exclude(pk__in=curated).delete()


def relink_latest(*, tenant: Tenant) -> RelinkJob | None:
    with tenant_scope(tenant):
        return RelinkJob.objects.for_tenant(tenant).order_by("-id").first()


def relink_fail(*, tenant: Tenant, job_id: int, error: str) -> None:
    with tenant_scope(tenant):
        RelinkJob.objects.for_tenant(tenant).filter(pk=job_id).update(
            status=RelinkStatus.FAILED, error=error[:2000], finished_at=timezone.now()
        )


def _tenants_with_facts() -> list[int]:
    """Each tenant in turn (rare: only when the extractor changed)."""
    found = []
    for tenant_id in Tenant.objects.order_by("pk").values_list("pk", flat=True):
        with tenant_scope(tenant_id):
            if Fact.objects.for_tenant(tenant_id).exists():
                found.append(tenant_id)
    return found


def relink_sweep() -> list[tuple[int, int]]:
    """Beat's check: when the extractor changed since facts were last linked, every tenant
    with facts gets a relink job; queued jobs whose message was lost and running jobs whose
    worker died are sent again. Returns the (tenant id, job id) pairs to run."""
    signature = extraction_signature()
    todo: list[tuple[int, int]] = []
    with transaction.atomic():
        state = ExtractorState.objects.select_for_update().first()
        changed = state is not None and state.signature != signature
        if state is None:
            ExtractorState.objects.create(signature=signature)
        elif changed:
            state.signature = signature
            state.save(update_fields=["signature", "at"])
        now = timezone.now()
        todo += cross_tenant.relink_stale(
            queued_before=now - timedelta(minutes=1), running_before=now - RELINK_STALE
        )
    tenant_ids = _tenants_with_facts() if changed else []
    actor = Actor.job("entities.relink")
    for tenant in Tenant.objects.filter(pk__in=tenant_ids):
        job = relink_start(tenant=tenant, actor=actor, reason=f"extractor: {signature}")
        todo.append((tenant.pk, job.pk))
    return todo
