"""The web admin's dashboard: counts of facts, entities and conflicts, facts per day."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from facts.models import Conflict, ConflictStatus, Entity, Fact, FactEntity, Kind, Status
from tenants.models import Tenant
from tenants.scope import tenant_scope

TRUST_BANDS = 10


@dataclass(frozen=True)
class FactCounts:
    facts: int  # active curated facts
    turns: int  # active conversation turns
    archived: int
    removed: int
    superseded: int
    unembedded: int  # active facts without a vector of `embedding_model` (the backlog)
    # Active facts per trust band: [0, 0.1), [0.1, 0.2), ... [0.9, 1.0] (1.0 in the last).
    trust_bands: list[int]


def fact_counts(*, tenant: Tenant, embedding_model: str | None) -> FactCounts:
    """How many facts the tenant has in each state, and the active ones by trust, in one pass
    over its facts.

    `embedding_model` is the model new vectors are made with; active facts whose newest vector
    is of another model (or that have none) are the embedding backlog. None: no model yet, so
    every active fact waits."""
    active = Q(status=Status.ACTIVE)
    waiting = active & ~Q(embedding_model=embedding_model) if embedding_model else active
    bands = {}
    for band in range(TRUST_BANDS):
        low, high = band / TRUST_BANDS, (band + 1) / TRUST_BANDS
        upper = Q(trust_score__lte=high) if band == TRUST_BANDS - 1 else Q(trust_score__lt=high)
        bands[f"band{band}"] = Count("pk", filter=active & Q(trust_score__gte=low) & upper)
    with tenant_scope(tenant):
        found = Fact.objects.for_tenant(tenant).aggregate(
            facts=Count("pk", filter=active & Q(kind=Kind.FACT)),
            turns=Count("pk", filter=active & Q(kind=Kind.TURN)),
            archived=Count("pk", filter=Q(status=Status.ARCHIVED)),
            removed=Count("pk", filter=Q(status=Status.REMOVED)),
            superseded=Count("pk", filter=Q(status=Status.SUPERSEDED)),
            unembedded=Count("pk", filter=waiting),
            **bands,
        )
    trust = [found.pop(f"band{band}") for band in range(TRUST_BANDS)]
    return FactCounts(**found, trust_bands=trust)


def entity_count(*, tenant: Tenant) -> int:
    with tenant_scope(tenant):
        count: int = Entity.objects.for_tenant(tenant).count()
    return count


def conflict_open_count(*, tenant: Tenant) -> int:
    with tenant_scope(tenant):
        count: int = Conflict.objects.for_tenant(tenant).filter(status=ConflictStatus.OPEN).count()
    return count


@dataclass(frozen=True)
class DayCount:
    day: date
    facts: int
    turns: int


def fact_added_per_day(
    *, tenant: Tenant, days: int = 30, now: datetime | None = None
) -> list[DayCount]:
    """Facts and turns stored per day (UTC) over the last `days` days, today included; days
    without any are there with zeros."""
    today = (now or timezone.now()).astimezone(UTC).date()
    first = today - timedelta(days=days - 1)
    since = datetime(first.year, first.month, first.day, tzinfo=UTC)
    with tenant_scope(tenant):
        rows = (
            Fact.objects.for_tenant(tenant)
            .filter(created_at__gte=since)
            .annotate(day=TruncDate("created_at", tzinfo=UTC))
            .values_list("day", "kind")
            .annotate(n=Count("pk"))
            .order_by()
        )
        counted = {(day, kind): n for day, kind, n in rows}
    return [
        DayCount(
            day=first + timedelta(days=offset),
            facts=counted.get((first + timedelta(days=offset), Kind.FACT), 0),
            turns=counted.get((first + timedelta(days=offset), Kind.TURN), 0),
        )
        for offset in range(days)
    ]


def entity_top(*, tenant: Tenant, limit: int = 10) -> list[tuple[Entity, int]]:
    """The entities most active facts mention, with that count."""
    with tenant_scope(tenant):
        counts = list(
            FactEntity.objects.for_tenant(tenant)
            .filter(fact__status=Status.ACTIVE)
            .values_list("entity_id")
            .annotate(n=Count("*"))
            .order_by("-n", "entity_id")[:limit]
        )
        entities = Entity.objects.for_tenant(tenant).in_bulk([ident for ident, _ in counts])
    return [(entities[ident], n) for ident, n in counts if ident in entities]
