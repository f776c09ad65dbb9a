"""Reads of facts: one fact and what surrounds it (history, entities, vectors, feedback,
conflicts), and lists of facts in keyset pages."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q

from facts.inputs import FACT_ORDERS
from facts.models import (
    Category,
    Conflict,
    Entity,
    Fact,
    FactEntity,
    FactEvent,
    FactVector,
    Feedback,
    Kind,
    Status,
)
from facts.selectors.paging import (
    MAX_PAGE,
    cursor_decode,
    cursor_encode,
    cursor_id,
    cursor_invalid,
    cursor_moment,
    page_limit,
)
from tenants.errors import InvalidInput, NotFound
from tenants.models import Tenant
from tenants.scope import current_scope_limit, scope_q, tenant_scope
from tenants.validation import check_choice


def fact_get(*, tenant: Tenant, fact_id: int) -> Fact:
    with tenant_scope(tenant):
        fact: Fact | None = Fact.objects.for_tenant(tenant).filter(pk=fact_id).first()
    if fact is None:
        raise NotFound("fact", fact_id)
    return fact


@dataclass(frozen=True)
class FactList:
    """One page of `fact_list`, and the cursor of the next (None on the last)."""

    facts: list[Fact]
    next_cursor: str | None


def _after(cursor: str, by_importance: bool) -> Q:
    """The rows after a cursor of the order in use (newest first, or most important first)."""
    if by_importance:
        importance, ident = cursor_decode(cursor, ((int, float), int))
        if importance != importance:  # NaN
            raise cursor_invalid()
        return Q(importance__lt=importance) | Q(importance=importance, pk__lt=cursor_id(ident))
    stamp, ident = cursor_decode(cursor, (str, int))
    moment = cursor_moment(stamp)
    return Q(created_at__lt=moment) | Q(created_at=moment, pk__lt=cursor_id(ident))


def fact_list(
    *,
    tenant: Tenant,
    scope_prefix: str | None = None,
    category: str | None = None,
    kind: str | None = None,
    status: str | None = Status.ACTIVE,
    trust_min: float | None = None,
    trust_max: float | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    entity_id: int | None = None,
    limit: int = 50,
    cursor: str | None = None,
    order: str = "newest",
) -> FactList:
    """Newest first (or most important first: `order="importance"`), in pages; `cursor`
    continues where the last page ended (keyset: stays fast however deep one pages)."""
    limit = page_limit(limit)
    filters = Q()
    if scope_prefix:
        filters &= scope_q(scope_prefix)
    if check_choice("category", category, Category.values):
        filters &= Q(category=category)
    if check_choice("kind", kind, Kind.values):
        filters &= Q(kind=kind)
    if check_choice("status", status, Status.values):
        filters &= Q(status=status)
    for field, value, lookup in (
        ("trust_min", trust_min, "trust_score__gte"),
        ("trust_max", trust_max, "trust_score__lte"),
    ):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidInput(field, "must be a number")
            filters &= Q(**{lookup: value})
    if created_after is not None:
        filters &= Q(created_at__gte=created_after)
    if created_before is not None:
        filters &= Q(created_at__lt=created_before)
    if order is None:
        raise InvalidInput("order", f"must be one of {', '.join(FACT_ORDERS)}")
    check_choice("order", order, list(FACT_ORDERS))
    by_importance = order == "importance"
    if cursor:
        filters &= _after(cursor, by_importance)
    ordering = ("-importance", "-id") if by_importance else ("-created_at", "-id")
    with tenant_scope(tenant):
        facts = Fact.objects.for_tenant(tenant)
        if entity_id is not None:
            links = FactEntity.objects.for_tenant(tenant).filter(entity_id=entity_id)
            facts = facts.filter(pk__in=links.values("fact_id"))
        rows = list(facts.filter(filters).defer("search_vector").order_by(*ordering)[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = None
    if more and rows:
        last = rows[-1]
        key = last.importance if by_importance else last.created_at.isoformat()
        next_cursor = cursor_encode(key, last.pk)
    return FactList(facts=rows, next_cursor=next_cursor)


def fact_iter(*, tenant: Tenant, page_size: int = MAX_PAGE, **filters: Any) -> Iterator[Fact]:
    """Every fact `fact_list` would page through with these filters, newest first, a page (one
    short transaction) at a time: for exports."""
    cursor = None
    while True:
        page = fact_list(tenant=tenant, limit=page_size, cursor=cursor, **filters)
        yield from page.facts
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def fact_count(*, tenant: Tenant, status: str | None = Status.ACTIVE) -> int:
    with tenant_scope(tenant):
        facts = Fact.objects.for_tenant(tenant)
        count: int = (facts.filter(status=status) if status else facts).count()
    return count


def fact_history(*, tenant: Tenant, fact_id: int) -> list[FactEvent]:
    """Every recorded change of a fact, oldest first (also after it was purged)."""
    with tenant_scope(tenant):
        if (
            current_scope_limit()
            and not Fact.objects.for_tenant(tenant).filter(pk=fact_id).exists()
        ):
            raise NotFound("fact", fact_id)  # outside the key's scope limit
        events = list(
            FactEvent.objects.for_tenant(tenant).filter(fact_id=fact_id).order_by("at", "id")
        )
    if not events:
        raise NotFound("fact", fact_id)
    return events


def fact_entities(*, tenant: Tenant, fact_id: int) -> list[Entity]:
    with tenant_scope(tenant):
        ids = FactEntity.objects.for_tenant(tenant).filter(fact_id=fact_id)
        return list(
            Entity.objects.for_tenant(tenant)
            .filter(pk__in=ids.values("entity_id"))
            .order_by("name")
        )


def fact_vectors(*, tenant: Tenant, fact_id: int) -> list[FactVector]:
    """The fact's vectors, one per embedding model, oldest model first."""
    with tenant_scope(tenant):
        return list(
            FactVector.objects.for_tenant(tenant)
            .filter(fact_id=fact_id)
            .order_by("created_at", "id")
        )


def fact_feedback_list(*, tenant: Tenant, fact_id: int, limit: int = 100) -> list[Feedback]:
    """The fact's feedback, newest first."""
    with tenant_scope(tenant):
        return list(
            Feedback.objects.for_tenant(tenant)
            .filter(fact_id=fact_id)
            .order_by("-at", "-id")[:limit]
        )


def fact_conflicts(*, tenant: Tenant, fact_id: int) -> list[Conflict]:
    """The conflicts the fact is part of (either side), newest first, both facts loaded."""
    with tenant_scope(tenant):
        return list(
            Conflict.objects.for_tenant(tenant)
            .filter(Q(fact_a_id=fact_id) | Q(fact_b_id=fact_id))
            .select_related("fact_a", "fact_b")
            .defer("fact_a__search_vector", "fact_b__search_vector")
            .order_by("-detected_at", "-id")
        )


@dataclass(frozen=True)
class TrustPoint:
    at: datetime
    trust: float
    action: str
    actor: str


def fact_trust_history(events: list[FactEvent]) -> list[TrustPoint]:
    """The fact's trust over time, from its audit events (oldest first): where it started and
    every change (feedback, updates)."""
    points = []
    for event in events:
        after = event.after if isinstance(event.after, dict) else {}
        value = after.get("trust_score")
        if isinstance(value, int | float) and not isinstance(value, bool):
            points.append(TrustPoint(event.at, float(value), event.action, event.actor))
    return points
