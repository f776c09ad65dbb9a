"""Curating entities: rename, retype, aliases, merge, split; the tenant's user dictionary (a
change re-links the tenant's facts: `facts.relink`).

Every write takes the tenant first, runs inside `tenant_scope(tenant)` and leaves an
`EntityEvent` (the entity's history, kept after a merge deleted the entity) or, for the
dictionary, a tenant audit event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from facts.entities import (
    entity_dictionary,
    entity_normalize,
    fact_link_entities,
)
from facts.inputs import MAX_ENTITY_NAME_CHARS, MAX_ID
from facts.models import (
    DictionaryEntry,
    Entity,
    EntityAction,
    EntityEvent,
    Fact,
    FactEntity,
    RelinkJob,
)
from facts.relink import relink_start
from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.models import Tenant, TenantEvent
from tenants.scope import tenant_scope

MAX_ALIASES = 50
MAX_DICTIONARY = 5000


# -- ids ------------------------------------------------------------------------------------------


def entity_locked(tenant: Tenant, entity_id: int) -> Entity:
    entity = None
    if 0 < entity_id <= MAX_ID:
        entity = Entity.objects.for_tenant(tenant).select_for_update().filter(pk=entity_id).first()
    if entity is None:
        raise NotFound("entity", entity_id)
    return entity


def entity_event_record(
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
        entity = entity_locked(tenant, entity_id)
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
        entity_event_record(tenant, entity.pk, EntityAction.RENAME, actor, before,
               {"name": name, "aliases": entity.aliases})  # fmt: skip
        return entity


def entity_set_type(*, tenant: Tenant, entity_id: int, type: str, actor: Actor) -> Entity:
    """`type`: an EntityType value (`facts.inputs.clean_entity_type`)."""
    kind = type
    with tenant_scope(tenant), transaction.atomic():
        entity = entity_locked(tenant, entity_id)
        if entity.type == kind:
            return entity
        before = {"type": entity.type}
        entity.type = kind
        entity.save(update_fields=["type"])
        entity_event_record(tenant, entity.pk, EntityAction.RETYPE, actor, before, {"type": kind})
        return entity


def entity_alias_add(*, tenant: Tenant, entity_id: int, alias: str, actor: Actor) -> Entity:
    """Another name of the entity: facts that say it link here (stored ones whose text has it
    are linked anew at once). A name another entity has already is refused: merge instead."""
    key = entity_normalize(alias)
    with tenant_scope(tenant), transaction.atomic():
        entity = entity_locked(tenant, entity_id)
        if key == entity.normalized or key in entity.aliases:
            return entity
        if len(entity.aliases) >= MAX_ALIASES:
            raise InvalidInput("alias", f"an entity has at most {MAX_ALIASES} aliases")
        _refuse_taken(tenant, "alias", key, entity)
        before = {"aliases": list(entity.aliases)}
        entity.aliases = [*entity.aliases, key]
        entity.save(update_fields=["aliases"])
        entity_event_record(tenant, entity.pk, EntityAction.ALIAS_ADD, actor, before,
               {"aliases": entity.aliases, "alias": key})  # fmt: skip
        _relink_mentions(tenant, key)
        return entity


def entity_alias_remove(*, tenant: Tenant, entity_id: int, alias: str, actor: Actor) -> Entity:
    key = entity_normalize(alias)
    with tenant_scope(tenant), transaction.atomic():
        entity = entity_locked(tenant, entity_id)
        if key not in entity.aliases:
            raise InvalidInput("alias", f"{entity.name!r} has no alias {alias!r}")
        before = {"aliases": list(entity.aliases)}
        entity.aliases = [a for a in entity.aliases if a != key]
        entity.save(update_fields=["aliases"])
        entity_event_record(tenant, entity.pk, EntityAction.ALIAS_REMOVE, actor, before,
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
        locked = {e.pk: e for e in (entity_locked(tenant, first), entity_locked(tenant, second))}
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
        entity_event_record(tenant, entity.pk, EntityAction.MERGE, actor, before,
               {"aliases": aliases, "merged": other_state, "relinked_facts": relinked})  # fmt: skip
        into = {"id": entity.pk, "name": entity.name}
        entity_event_record(tenant, other_state["id"], EntityAction.MERGED, actor, other_state,
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
        entity = entity_locked(tenant, entity_id)
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
        entity_event_record(tenant, entity.pk, EntityAction.SPLIT, actor, before,
               {"aliases": entity.aliases, "split": {"id": split.pk, "name": split.name},
                "relinked_facts": relinked})  # fmt: skip
        entity_event_record(tenant, split.pk, EntityAction.SPLIT_FROM, actor, None,
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
