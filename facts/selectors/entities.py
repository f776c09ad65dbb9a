"""Reads of entities: one entity, lists of them, the facts that name one, the user dictionary."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Case, Count, Exists, F, IntegerField, OuterRef, Q, Subquery, When
from django.db.models.functions import Coalesce

from facts.entities import entity_normalize
from facts.models import DictionaryEntry, Entity, EntityDirty, EntityType, FactEntity, Status
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


# Entities changed since the statistics sweep counted them, beyond which a top list counts
# every entity at once rather than each of them.
DIRTY_LIVE_MAX = 500


def entity_dirty_ids(*, tenant: Tenant, at_most: int | None = None) -> set[int] | None:
    """The tenant's entities whose maintained count may be stale (facts.stats); None when there
    are more than `at_most`. Call inside the tenant's scope."""
    rows = EntityDirty.objects.for_tenant(tenant).values_list("entity_id", flat=True).distinct()
    ids = set(rows[: at_most + 1] if at_most is not None else rows)
    return None if at_most is not None and len(ids) > at_most else ids


def entity_live_counts(*, tenant: Tenant, entity_ids: Iterable[int]) -> dict[int, int]:
    """Active facts naming each entity, counted now (one grouped query)."""
    ids = list(entity_ids)
    if not ids:
        return {}
    return dict(
        FactEntity.objects.for_tenant(tenant)
        .filter(entity_id__in=ids, fact__status=Status.ACTIVE)
        .order_by()
        .values_list("entity_id")
        .annotate(n=Count("*"))
    )


def entity_fact_count(tenant: Tenant) -> Case:
    """Per entity, the active facts that name it (an annotation): its maintained count, or,
    for an entity changed since the statistics sweep counted it, a live count. Exact either
    way; the live count runs only for those few (PostgreSQL evaluates a CASE branch's subquery
    only when it is taken)."""
    dirty = EntityDirty.objects.for_tenant(tenant).filter(entity_id=OuterRef("pk"))
    live = (
        FactEntity.objects.for_tenant(tenant)
        .filter(entity_id=OuterRef("pk"), fact__status=Status.ACTIVE)
        .order_by()
        .values("entity_id")
        .annotate(n=Count("*"))
        .values("n")
    )
    return Case(
        When(Exists(dirty), then=Coalesce(Subquery(live, output_field=IntegerField()), 0)),
        default=F("active_facts"),
        output_field=IntegerField(),
    )


def entity_get(*, tenant: Tenant, entity_id: int) -> Entity:
    """The entity, with `fact_count` (its active facts)."""
    with tenant_scope(tenant):
        entity: Entity | None = (
            Entity.objects.for_tenant(tenant)
            .annotate(fact_count=entity_fact_count(tenant))
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
        rows: list[Entity] = list(
            Entity.objects.for_tenant(tenant)
            .filter(filters)
            .annotate(fact_count=entity_fact_count(tenant))
            .order_by("normalized", "id")[: limit + 1]
        )
        more = len(rows) > limit
        rows = rows[:limit]
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
