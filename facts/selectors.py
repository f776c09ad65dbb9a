"""Reads of facts, always inside the tenant's scope; another tenant's id is simply not found."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q

from facts.models import Entity, Fact, FactEntity, FactEvent, FactVector, Kind, Status
from tenants.errors import InvalidInput, NotFound
from tenants.models import Tenant
from tenants.scope import tenant_scope

MAX_PAGE = 200


def _fact_id(value: Any) -> int:
    if isinstance(value, bool):
        raise InvalidInput("fact_id", "must be a whole number")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidInput("fact_id", "must be a whole number") from None


def fact_get(*, tenant: Tenant, fact_id: Any) -> Fact:
    with tenant_scope(tenant):
        fact = Fact.objects.for_tenant(tenant).filter(pk=_fact_id(fact_id)).first()
    if fact is None:
        raise NotFound("fact", fact_id)
    return fact


@dataclass(frozen=True)
class FactPage:
    facts: list[Fact]
    next_cursor: str | None


def _encode_cursor(fact: Fact) -> str:
    raw = f"{fact.created_at.isoformat()}|{fact.pk}"
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        stamp, _, ident = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        return datetime.fromisoformat(stamp), int(ident)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInput("cursor", "is not a cursor this list gave out") from None


def _choice(field: str, value: str | None, allowed: list[str]) -> str | None:
    if value is not None and value not in allowed:
        raise InvalidInput(field, f"must be one of {', '.join(allowed)}")
    return value


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
    limit: int = 50,
    cursor: str | None = None,
) -> FactPage:
    """Newest first, in pages; `cursor` continues where the last page ended (keyset: stays
    fast however deep one pages)."""
    from facts.models import Category

    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInput("limit", f"must be a whole number from 1 to {MAX_PAGE}")
    filters = Q()
    if scope_prefix:
        prefix = scope_prefix.strip().strip("/")
        filters &= Q(scope=prefix) | Q(scope__startswith=f"{prefix}/")
    if _choice("category", category, Category.values):
        filters &= Q(category=category)
    if _choice("kind", kind, Kind.values):
        filters &= Q(kind=kind)
    if _choice("status", status, Status.values):
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
    if cursor:
        stamp, ident = _decode_cursor(cursor)
        filters &= Q(created_at__lt=stamp) | Q(created_at=stamp, pk__lt=ident)
    with tenant_scope(tenant):
        rows = list(
            Fact.objects.for_tenant(tenant)
            .filter(filters)
            .defer("search_vector")
            .order_by("-created_at", "-id")[: limit + 1]
        )
    more = len(rows) > limit
    rows = rows[:limit]
    return FactPage(facts=rows, next_cursor=_encode_cursor(rows[-1]) if more and rows else None)


def fact_history(*, tenant: Tenant, fact_id: Any) -> list[FactEvent]:
    """Every recorded change of a fact, oldest first (also after it was purged)."""
    ident = _fact_id(fact_id)
    with tenant_scope(tenant):
        events = list(
            FactEvent.objects.for_tenant(tenant).filter(fact_id=ident).order_by("at", "id")
        )
    if not events:
        raise NotFound("fact", fact_id)
    return events


def fact_entities(*, tenant: Tenant, fact_id: Any) -> list[Entity]:
    with tenant_scope(tenant):
        ids = FactEntity.objects.for_tenant(tenant).filter(fact_id=_fact_id(fact_id))
        return list(
            Entity.objects.for_tenant(tenant)
            .filter(pk__in=ids.values("entity_id"))
            .order_by("name")
        )


def fact_vectors(*, tenant: Tenant, fact_id: Any) -> list[FactVector]:
    """The fact's vectors, one per embedding model, oldest model first."""
    with tenant_scope(tenant):
        return list(
            FactVector.objects.for_tenant(tenant)
            .filter(fact_id=_fact_id(fact_id))
            .order_by("created_at", "id")
        )


def fact_count(*, tenant: Tenant, status: str | None = Status.ACTIVE) -> int:
    with tenant_scope(tenant):
        facts = Fact.objects.for_tenant(tenant)
        return (facts.filter(status=status) if status else facts).count()
