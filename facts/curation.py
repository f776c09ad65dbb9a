"""Curating entities: rename, retype, aliases, merge, split; the tenant's user dictionary; and
re-linking facts when what extraction finds has changed.

Every write takes the tenant first, runs inside `tenant_scope(tenant)` and leaves an
`EntityEvent` (the entity's history, kept after a merge deleted the entity) or, for the
dictionary, a tenant audit event.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from facts.entities import (
    entity_dictionary,
    entity_normalize,
    extraction_signature,
    fact_link_entities,
)
from facts.inputs import MAX_ENTITY_NAME_CHARS, MAX_ID
from facts.models import (
    DictionaryEntry,
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
from tenants.errors import InvalidInput, NotFound
from tenants.jobs import job_send
from tenants.models import Tenant, TenantEvent
from tenants.scope import tenant_scope

MAX_ALIASES = 50
MAX_DICTIONARY = 5000
RELINK_BATCH = 200
# A running job that has not counted progress for this long is taken to have died.
RELINK_STALE = timedelta(minutes=10)


# -- ids ------------------------------------------------------------------------------------------


def _locked_entity(tenant: Tenant, entity_id: int) -> Entity:
    entity = None
    if 0 < entity_id <= MAX_ID:
        entity = Entity.objects.for_tenant(tenant).select_for_update().filter(pk=entity_id).first()
    if entity is None:
        raise NotFound("entity", entity_id)
    return entity


def _event(
    tenant: Tenant,
    entity_id: int,
    action: str,
    actor: Actor,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> None:
    EntityEvent.objects.create(
        tenant=tenant,
        entity_id=entity_id,
        action=action,
        actor=str(actor),
        before=before,
        after=after,
        at=timezone.now(),
    )
    if action in _IN_AUDIT_LOG:
        # The tenant's audit log shows curation too (the entity's own history has it all).
        _tenant_event(tenant, _IN_AUDIT_LOG[action], actor, f"entity {entity_id}",
                      before=before, after=after)  # fmt: skip


_IN_AUDIT_LOG: dict[str, str] = {
    EntityAction.RENAME: "entity_rename",
    EntityAction.RETYPE: "entity_retype",
    EntityAction.ALIAS_ADD: "entity_alias_add",
    EntityAction.ALIAS_REMOVE: "entity_alias_remove",
    EntityAction.MERGE: "entity_merge",
    EntityAction.SPLIT: "entity_split",
    EntityAction.ALIAS_DISMISS: "entity_alias_dismiss",
}


def _holder_of(tenant: Tenant, key: str, exclude: int) -> Entity | None:
    """Another entity already answering to `key`, by name or alias."""
    return (
        Entity.objects.for_tenant(tenant)
        .filter(Q(normalized=key) | Q(aliases__contains=[key]))
        .exclude(pk=exclude)
        .first()
    )


def _refuse_taken(tenant: Tenant, field: str, key: str, entity: Entity) -> None:
    other = _holder_of(tenant, key, entity.pk)
    if other is not None:
        raise InvalidInput(
            field,
            f"{other.name!r} (entity {other.pk}) already answers to this name; merge the two "
            "entities instead",
        )


# -- rename, type, aliases --------------------------------------------------------------------


def entity_rename(*, tenant: Tenant, entity_id: int, name: str, actor: Actor) -> Entity:
    """A new canonical name (as `facts.inputs.clean_entity_name` gives it). The old one stays
    as an alias, so facts that say it still link here."""
    key = entity_normalize(name)
    with tenant_scope(tenant), transaction.atomic():
        entity = _locked_entity(tenant, entity_id)
        if name == entity.name:
            return entity
        if key != entity.normalized:
            _refuse_taken(tenant, "name", key, entity)
        before = {"name": entity.name, "aliases": list(entity.aliases)}
        aliases = [a for a in entity.aliases if a != key]
        if key != entity.normalized and entity.normalized not in aliases:
            aliases.append(entity.normalized)
        entity.name, entity.normalized, entity.aliases = name, key, aliases[:MAX_ALIASES]
        entity.save(update_fields=["name", "normalized", "aliases"])
        _event(tenant, entity.pk, EntityAction.RENAME, actor, before,
               {"name": name, "aliases": entity.aliases})  # fmt: skip
        return entity


def entity_set_type(*, tenant: Tenant, entity_id: int, type: str, actor: Actor) -> Entity:
    """`type`: an EntityType value (`facts.inputs.clean_entity_type`)."""
    kind = type
    with tenant_scope(tenant), transaction.atomic():
        entity = _locked_entity(tenant, entity_id)
        if entity.type == kind:
            return entity
        before = {"type": entity.type}
        entity.type = kind
        entity.save(update_fields=["type"])
        _event(tenant, entity.pk, EntityAction.RETYPE, actor, before, {"type": kind})
        return entity


def entity_alias_add(*, tenant: Tenant, entity_id: int, alias: str, actor: Actor) -> Entity:
    """Another name of the entity: facts that say it link here (stored ones whose text has it
    are linked anew at once). A name another entity has already is refused: merge instead."""
    key = entity_normalize(alias)
    with tenant_scope(tenant), transaction.atomic():
        entity = _locked_entity(tenant, entity_id)
        if key == entity.normalized or key in entity.aliases:
            return entity
        if len(entity.aliases) >= MAX_ALIASES:
            raise InvalidInput("alias", f"an entity has at most {MAX_ALIASES} aliases")
        _refuse_taken(tenant, "alias", key, entity)
        before = {"aliases": list(entity.aliases)}
        entity.aliases = [*entity.aliases, key]
        entity.save(update_fields=["aliases"])
        _event(tenant, entity.pk, EntityAction.ALIAS_ADD, actor, before,
               {"aliases": entity.aliases, "alias": key})  # fmt: skip
        _relink_mentions(tenant, key)
        return entity


def entity_alias_remove(*, tenant: Tenant, entity_id: int, alias: str, actor: Actor) -> Entity:
    key = entity_normalize(alias)
    with tenant_scope(tenant), transaction.atomic():
        entity = _locked_entity(tenant, entity_id)
        if key not in entity.aliases:
            raise InvalidInput("alias", f"{entity.name!r} has no alias {alias!r}")
        before = {"aliases": list(entity.aliases)}
        entity.aliases = [a for a in entity.aliases if a != key]
        entity.save(update_fields=["aliases"])
        _event(tenant, entity.pk, EntityAction.ALIAS_REMOVE, actor, before,
               {"aliases": entity.aliases, "alias": key})  # fmt: skip
        return entity


def _relink_mentions(tenant: Tenant, key: str) -> None:
    """Facts whose text names `key` get linked anew (a new alias points them elsewhere)."""
    dictionary = entity_dictionary(tenant=tenant)
    for fact in (
        Fact.objects.for_tenant(tenant)
        .filter(content__icontains=key)
        .only("id", "tenant_id", "kind", "speaker", "content")[:2000]
    ):
        fact_link_entities(tenant=tenant, fact=fact, dictionary=dictionary)


# -- merge and split --------------------------------------------------------------------------


@dataclass(frozen=True)
class MergeResult:
    entity: Entity
    merged_id: int
    relinked: int  # facts of the merged entity now linked to `entity`


def entity_merge(*, tenant: Tenant, entity_id: int, other_id: int, actor: Actor) -> MergeResult:
    """Merge entity `other_id` into `entity_id`: its facts are linked to `entity_id`, its name
    and aliases become aliases of it, and it is deleted. Both histories record the merge (the
    merged entity's stays readable under its old id)."""
    with tenant_scope(tenant), transaction.atomic():
        # Lock in id order, so two merges of the same pair cannot deadlock.
        first, second = sorted((entity_id, other_id))
        if first == second:
            raise InvalidInput("other_id", "an entity cannot be merged into itself")
        locked = {e.pk: e for e in (_locked_entity(tenant, first), _locked_entity(tenant, second))}
        entity, other = locked[entity_id], locked[other_id]
        links = FactEntity.objects.for_tenant(tenant)
        already = set(links.filter(entity=entity).values_list("fact_id", flat=True))
        moving = links.filter(entity=other)
        relinked = moving.exclude(fact_id__in=already).update(entity=entity)
        links.filter(entity=other).delete()  # facts linked to both keep one link
        before = {"name": entity.name, "aliases": list(entity.aliases)}
        names = [other.normalized, *other.aliases]
        aliases = list(dict.fromkeys([*entity.aliases, *names]))
        aliases = [a for a in aliases if a != entity.normalized][:MAX_ALIASES]
        other_state: dict[str, Any] = {"id": other.pk, "name": other.name, "type": other.type,
                       "aliases": list(other.aliases)}  # fmt: skip
        other.delete()
        entity.aliases = aliases
        entity.save(update_fields=["aliases"])
        _event(tenant, entity.pk, EntityAction.MERGE, actor, before,
               {"aliases": aliases, "merged": other_state, "relinked_facts": relinked})  # fmt: skip
        into = {"id": entity.pk, "name": entity.name}
        _event(tenant, other_state["id"], EntityAction.MERGED, actor, other_state,
               {"into": into, "relinked_facts": relinked})  # fmt: skip
        return MergeResult(entity=entity, merged_id=other_state["id"], relinked=relinked)


@dataclass(frozen=True)
class SplitResult:
    entity: Entity  # the one the alias was taken from
    split: Entity  # the new entity
    relinked: int  # facts now linked to the new entity


def entity_split(
    *, tenant: Tenant, entity_id: int, alias: str, actor: Actor, type: str | None = None
) -> SplitResult:
    """Take a wrongly merged alias off an entity and make it an entity of its own: the facts
    whose text says the alias (and not the entity's other names) move to the new entity.
    `type` None: the entity's own."""
    key = entity_normalize(alias)
    with tenant_scope(tenant), transaction.atomic():
        entity = _locked_entity(tenant, entity_id)
        if key not in entity.aliases:
            raise InvalidInput("alias", f"{entity.name!r} has no alias {alias!r}")
        kind = entity.type if type is None else type
        before = {"aliases": list(entity.aliases)}
        entity.aliases = [a for a in entity.aliases if a != key]
        entity.save(update_fields=["aliases"])
        display = " ".join(alias.split())
        try:
            with transaction.atomic():
                split = Entity.objects.create(
                    tenant=tenant, name=display[:MAX_ENTITY_NAME_CHARS], normalized=key, type=kind
                )
        except IntegrityError:
            raise InvalidInput("alias", "another entity is already called this") from None
        other_names = [entity.normalized, *entity.aliases]
        relinked = 0
        links = FactEntity.objects.for_tenant(tenant)
        facts = Fact.objects.for_tenant(tenant).filter(
            pk__in=links.filter(entity=entity).values("fact_id")
        )
        for fact in facts.only("id", "tenant_id", "content"):
            text = entity_normalize(fact.content)
            if key not in text:
                continue
            FactEntity.objects.create(tenant=tenant, fact=fact, entity=split)
            relinked += 1
            if not any(name in text for name in other_names):
                links.filter(fact=fact, entity=entity).delete()
        _event(tenant, entity.pk, EntityAction.SPLIT, actor, before,
               {"aliases": entity.aliases, "split": {"id": split.pk, "name": split.name},
                "relinked_facts": relinked})  # fmt: skip
        _event(tenant, split.pk, EntityAction.SPLIT_FROM, actor, None,
               {"name": split.name, "type": kind, "from": {"id": entity.pk, "name": entity.name},
                "relinked_facts": relinked})  # fmt: skip
        return SplitResult(entity=entity, split=split, relinked=relinked)


# -- the user dictionary ----------------------------------------------------------------------


def _tenant_event(tenant: Tenant, action: str, actor: Actor, target: str, **values: Any) -> None:
    TenantEvent.objects.create(
        tenant=tenant, action=action, actor=str(actor), target=target,
        before=values.get("before"), after=values.get("after"),
    )  # fmt: skip


def dictionary_add(
    *, tenant: Tenant, term: str, type: str, actor: Actor
) -> tuple[DictionaryEntry, RelinkJob]:
    """Add a term (`facts.inputs.clean_term`) to the tenant's user dictionary (or change its
    type); existing facts are re-linked by a background job, returned with it."""
    kind = type
    key = entity_normalize(term)
    with tenant_scope(tenant), transaction.atomic():
        entries = DictionaryEntry.objects.for_tenant(tenant)
        entry = entries.select_for_update().filter(normalized=key).first()
        if entry is None:
            if entries.count() >= MAX_DICTIONARY:
                raise InvalidInput("term", f"a dictionary holds at most {MAX_DICTIONARY} terms")
            entry = DictionaryEntry.objects.create(
                tenant=tenant, term=term, normalized=key, type=kind, created_by=str(actor)
            )
            _tenant_event(tenant, "dictionary_add", actor, term, after={"type": kind})
        elif (entry.term, entry.type) != (term, kind):
            before = {"term": entry.term, "type": entry.type}
            entry.term, entry.type = term, kind
            entry.save(update_fields=["term", "type"])
            _tenant_event(tenant, "dictionary_change", actor, term, before=before,
                          after={"term": term, "type": kind})  # fmt: skip
        job = relink_start(tenant=tenant, actor=actor, reason=f"dictionary: {term}")
        return entry, job


def dictionary_remove(*, tenant: Tenant, term: str, actor: Actor) -> RelinkJob:
    key = entity_normalize(term)
    with tenant_scope(tenant), transaction.atomic():
        entry = DictionaryEntry.objects.for_tenant(tenant).filter(normalized=key).first()
        if entry is None:
            raise NotFound("dictionary term", term)
        entry.delete()
        _tenant_event(tenant, "dictionary_remove", actor, entry.term,
                      before={"type": entry.type})  # fmt: skip
        return relink_start(tenant=tenant, actor=actor, reason=f"dictionary: -{entry.term}")


# -- re-linking -------------------------------------------------------------------------------


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


def entity_history(
    *, tenant: Tenant, entity_id: int, limit: int = 100, known: bool = False
) -> list[EntityEvent]:
    """The entity's curation history, newest first; also for an entity merged away. With
    `known` the caller has the entity already and no empty history is checked for it."""
    if not 0 < entity_id <= MAX_ID:
        raise NotFound("entity", entity_id)
    ident = entity_id
    with tenant_scope(tenant):
        events = list(
            EntityEvent.objects.for_tenant(tenant)
            .filter(entity_id=ident)
            .order_by("-at", "-id")[:limit]
        )
        if (
            not events
            and not known
            and not Entity.objects.for_tenant(tenant).filter(pk=ident).exists()
        ):
            raise NotFound("entity", entity_id)
        return events


def entity_find(*, tenant: Tenant, text: str) -> Entity:
    """The entity someone typed (`facts.inputs.clean_entity_name("other", ...)`): `#12` or `12`
    by id, otherwise by name or alias."""
    value = text
    digits = value.lstrip("#")
    with tenant_scope(tenant):
        entities = Entity.objects.for_tenant(tenant)
        if digits.isdigit() and (found := entities.filter(pk=int(digits)).first()):
            return found
        key = entity_normalize(value)
        found = entities.filter(Q(normalized=key) | Q(aliases__contains=[key])).first()
    if found is None:
        raise InvalidInput("other", f"no entity is called {value!r}")
    return found
