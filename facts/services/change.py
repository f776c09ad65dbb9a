"""Changing stored facts: update, remove, restore, purge, and the web admin's bulk remove and tag;
each change audited."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from facts.entities import fact_link_entities
from facts.events import fact_event_record as _event
from facts.importance import importance_recompute
from facts.inputs import FactChanges
from facts.models import EventAction, Fact, FactVector, Kind, Status
from facts.services.rows import _locked_fact, _schedule_embedding, _search_vector, content_hash
from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.services import under_legal_hold


def fact_update(*, tenant: Tenant, fact_id: int, changes: FactChanges, actor: Actor) -> Fact:
    """Change what is given; the audit event records exactly the fields that changed."""
    delta = changes.trust_delta
    values = changes.given()
    with tenant_scope(tenant):
        fact = _locked_fact(tenant, fact_id)
        if delta is not None:
            values["trust_score"] = round(min(1.0, max(0.0, fact.trust_score + delta)), 6)
        changed = {k: v for k, v in values.items() if getattr(fact, k) != v}
        if not changed:
            return fact
        before = {k: getattr(fact, k) for k in changed}
        for field, value in changed.items():
            setattr(fact, field, value)
        update_fields = [*changed, "updated_at"]
        if "content" in changed or "scope" in changed:
            fact.content_hash = content_hash(fact.content)
            if fact.kind == Kind.FACT and (
                Fact.objects.for_tenant(tenant)
                .filter(kind=Kind.FACT, scope=fact.scope, content_hash=fact.content_hash)
                .exclude(pk=fact.pk)
                .exists()
            ):
                raise InvalidInput("content", "another fact in this scope says the same")
            update_fields.append("content_hash")
        if "content" in changed:
            fact.search_vector = _search_vector(fact.content)
            # The old vectors describe the old text.
            FactVector.objects.for_tenant(tenant).filter(fact_id=fact.pk).delete()
            fact.embedding_model = ""
            update_fields += ["search_vector", "embedding_model"]
        fact.save(update_fields=update_fields)
        if "content" in changed:
            fact_link_entities(tenant=tenant, fact=fact)  # what it names may have changed
        _event(tenant, fact.pk, EventAction.UPDATE, actor, before=before, after=changed)
        if "content" in changed:
            _schedule_embedding(tenant)
        if "pinned" in changed or "trust_score" in changed:
            importance_recompute(tenant=tenant, fact_ids=[fact.pk])
        fact.refresh_from_db(fields=["search_vector", "importance"])
        return fact


def _set_status(
    tenant: Tenant, fact_id: int, actor: Actor, status: str, action: str, allowed_from: set[str]
) -> Fact:
    with tenant_scope(tenant):
        fact = _locked_fact(tenant, fact_id)
        if fact.status == status:
            return fact
        if fact.status not in allowed_from:
            raise InvalidInput("fact_id", f"fact {fact.pk} is {fact.status}; cannot {action} it")
        before = {"status": fact.status}
        fact.status = status
        fact.save(update_fields=["status", "updated_at"])
        _event(tenant, fact.pk, action, actor, before=before, after={"status": status})
        return fact


def fact_remove(*, tenant: Tenant, fact_id: int, actor: Actor) -> Fact:
    """Soft removal: the fact leaves retrieval and stays, with its history, for the audit."""
    return _set_status(
        tenant,
        fact_id,
        actor,
        Status.REMOVED,
        EventAction.REMOVE,
        {Status.ACTIVE, Status.ARCHIVED, Status.SUPERSEDED},
    )


def fact_restore(*, tenant: Tenant, fact_id: int, actor: Actor) -> Fact:
    return _set_status(
        tenant,
        fact_id,
        actor,
        Status.ACTIVE,
        EventAction.RESTORE,
        {Status.REMOVED, Status.ARCHIVED},
    )


@transaction.atomic
def fact_purge(*, tenant: Tenant, fact_id: int, actor: Actor, reason: str) -> int:
    """Delete a fact for good (with its vectors, links and feedback, and out of its archive
    bundle). The audit keeps that it existed, who purged it and why, but not its text: the
    text in its earlier events becomes "[purged]". Returns the purged id (`reason` as
    `facts.inputs.purge_reason` gives it). Refused while the tenant is under legal hold."""
    from facts.archive import facts_purge

    with tenant_scope(tenant):
        fact = _locked_fact(tenant, fact_id)
        if under_legal_hold(tenant):
            raise InvalidInput(
                "legal_hold", "the tenant is under legal hold: nothing is purged until it is lifted"
            )
        return facts_purge(tenant=tenant, facts=[fact], actor=actor, reason=reason)[0]


@dataclass(frozen=True)
class BulkResult:
    done: list[int]
    skipped: dict[int, str]  # fact id -> why (not found, already removed, ...)


def facts_bulk_remove(*, tenant: Tenant, fact_ids: tuple[int, ...], actor: Actor) -> BulkResult:
    """Remove each of the facts (as fact_remove, each audited); the others are reported."""
    done, skipped = [], {}
    for fact_id in fact_ids:
        try:
            with transaction.atomic():
                fact_remove(tenant=tenant, fact_id=fact_id, actor=actor)
        except (InvalidInput, NotFound) as error:
            skipped[fact_id] = getattr(error, "message", "not found")
        else:
            done.append(fact_id)
    return BulkResult(done=done, skipped=skipped)


def facts_bulk_tag(
    *, tenant: Tenant, fact_ids: tuple[int, ...], tag: str, actor: Actor
) -> BulkResult:
    """Add one tag to each of the facts (as fact_update, each audited)."""
    done, skipped = [], {}
    for fact_id in fact_ids:
        try:
            with transaction.atomic():
                fact = fact_get_for_update(tenant=tenant, fact_id=fact_id)
                if tag in fact.tags:
                    skipped[fact_id] = "has the tag already"
                    continue
                fact_update(
                    tenant=tenant,
                    fact_id=fact_id,
                    changes=FactChanges(tags=(*fact.tags, tag)),
                    actor=actor,
                )
        except (InvalidInput, NotFound) as error:
            skipped[fact_id] = getattr(error, "message", "not found")
        else:
            done.append(fact_id)
    return BulkResult(done=done, skipped=skipped)


def fact_get_for_update(*, tenant: Tenant, fact_id: int) -> Fact:
    with tenant_scope(tenant):
        fact: Fact | None = (
            Fact.objects.for_tenant(tenant).select_for_update().filter(pk=fact_id).first()
        )
    if fact is None:
        raise NotFound("fact", fact_id)
    return fact
