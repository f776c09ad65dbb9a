"""Reads of entities: one entity, lists of them, the facts that name one, the user dictionary."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from facts.entities import entity_normalize
from facts.models import DictionaryEntry, Entity, EntityType, FactEntity, Status
from facts.selectors.facts import FactList, fact_list
from facts.selectors.paging import cursor_decode, cursor_encode, cursor_id, page_limit
from tenants.errors import NotFound
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.validation import check_choice


@dataclass(frozen=True)
class EntityList:
    """One page of `entity_list`, and the cursor of the next (None on the last)."""

    entities: list[Entity]
    next_cursor: str | None


def _active_fact_count(tenant: Tenant) -> Coalesce:
    """Per entity: how many active facts name it (a subquery, so lists stay one query)."""
    links = (
        FactEntity.objects.for_tenant(tenant)
        .filter(entity_id=OuterRef("pk"), fact__status=Status.ACTIVE)
        .order_by()
        .values("entity_id")
        .annotate(n=Count("*"))
        .values("n")
    )
    return Coalesce(Subquery(links, output_field=IntegerField()), 0)


def entity_get(*, tenant: Tenant, entity_id: int) -> Entity:
    """The entity, with `fact_count` (its active facts)."""
    with tenant_scope(tenant):
        entity: Entity | None = (
            Entity.objects.for_tenant(tenant)
            .annotate(fact_count=_active_fact_count(tenant))
            .filter(pk=entity_id)
            .first()
        )
    if entity is None:
        raise NotFound("entity", entity_id)
    return entity


def entity_list(
    *,
    tenant: Tenant,
    query: str | None = None,
    type: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> EntityList:
    """Entities by name (an alias matches too), each with `fact_count`; keyset pages."""
    limit = page_limit(limit)
    filters = Q()
    if query and query.strip():
        key = entity_normalize(query)
        filters &= Q(normalized__contains=key) | Q(aliases__contains=[key])
    if check_choice("type", type, EntityType.values):
        filters &= Q(type=type)
    if cursor:
        name, ident = cursor_decode(cursor, (str, int))
        filters &= Q(normalized__gt=name) | Q(normalized=name, pk__gt=cursor_id(ident))
    with tenant_scope(tenant):
        rows = list(
            Entity.objects.for_tenant(tenant)
            .filter(filters)
            .order_by("normalized", "id")[: limit + 1]
        )
        more = len(rows) > limit
        rows = rows[:limit]
        # One grouped count for the page: a subquery per entity would read a popular entity's
        # links one by one (seconds with 100,000 facts); one join reads them all at once.
        counts = dict(
            FactEntity.objects.for_tenant(tenant)
            .filter(entity_id__in=[e.pk for e in rows], fact__status=Status.ACTIVE)
            .order_by()
            .values_list("entity_id")
            .annotate(n=Count("*"))
        ) if rows else {}  # fmt: skip
    for entity in rows:
        entity.fact_count = counts.get(entity.pk, 0)  # type: ignore[attr-defined]
    last = rows[-1] if rows else None
    return EntityList(
        entities=rows,
        next_cursor=cursor_encode(last.normalized, last.pk) if more and last else None,
    )


def entity_fact_list(
    *, tenant: Tenant, entity_id: int, status: str | None = Status.ACTIVE, limit: int = 50,
    cursor: str | None = None,
) -> FactList:  # fmt: skip
    """The facts that name an entity, newest first, in pages (404 for another tenant's entity).
    (Agents look facts up by an entity's name: `facts.graph.entity_facts`.)"""
    entity = entity_get(tenant=tenant, entity_id=entity_id)
    return fact_list(tenant=tenant, entity_id=entity.pk, status=status, limit=limit, cursor=cursor)


def dictionary_entries(*, tenant: Tenant) -> list[DictionaryEntry]:
    """The tenant's user dictionary, by term."""
    with tenant_scope(tenant):
        return list(DictionaryEntry.objects.for_tenant(tenant).order_by("normalized"))
