"""The web admin's dashboard: counts of facts, entities and conflicts, facts per day."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db.models import Count, Sum
from django.utils import timezone

from facts.models import Conflict, ConflictStatus, Entity, FactEntity, FactStat, Kind, Status
from facts.selectors.entities import DIRTY_LIVE_MAX, entity_dirty_ids, entity_live_counts
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
    """How many facts the tenant has in each state, and the active ones by trust: the sum of
    its maintained statistics (facts.stats), exact at once, however many facts it has.

    `embedding_model` is the model new vectors are made with; active facts whose newest vector
    is of another model (or that have none) are the embedding backlog. None: no model yet, so
    every active fact waits."""
    counts = {"facts": 0, "turns": 0, "archived": 0, "removed": 0, "superseded": 0}
    waiting = 0
    trust = [0] * TRUST_BANDS
    with tenant_scope(tenant):
        rows = (
            FactStat.objects.for_tenant(tenant)
            .values_list("kind", "status", "band", "model")
            .annotate(total=Sum("n"))
            .order_by()
        )
        for kind, status, band, model, total in rows:
            if status == Status.ACTIVE:
                counts["facts" if kind == Kind.FACT else "turns"] += total
                trust[min(max(band, 0), TRUST_BANDS - 1)] += total
                if not embedding_model or model != embedding_model:
                    waiting += total
            elif status in counts:
                counts[status] += total
    return FactCounts(**counts, unembedded=waiting, trust_bands=trust)


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
    with tenant_scope(tenant):
        rows = (
            FactStat.objects.for_tenant(tenant)
            .filter(day__gte=first)
            .values_list("day", "kind")
            .annotate(total=Sum("n"))
            .order_by()
        )
        counted = {(day, kind): total for day, kind, total in rows}
    return [
        DayCount(
            day=first + timedelta(days=offset),
            facts=counted.get((first + timedelta(days=offset), Kind.FACT), 0),
            turns=counted.get((first + timedelta(days=offset), Kind.TURN), 0),
        )
        for offset in range(days)
    ]


def entity_top(*, tenant: Tenant, limit: int = 10) -> list[tuple[Entity, int]]:
    """The entities most active facts mention, with that count (exact: the maintained counts,
    and the live count of every entity changed since the statistics sweep last counted)."""
    with tenant_scope(tenant):
        dirty = entity_dirty_ids(tenant=tenant, at_most=DIRTY_LIVE_MAX)
        if dirty is None:  # too many changed since the sweep: count them all at once
            counts = list(
                FactEntity.objects.for_tenant(tenant)
                .filter(fact__status=Status.ACTIVE)
                .values_list("entity_id")
                .annotate(n=Count("*"))
                .order_by("-n", "entity_id")[:limit]
            )
            entities = Entity.objects.for_tenant(tenant).in_bulk([i for i, _ in counts])
            return [(entities[i], n) for i, n in counts if i in entities]
        # Whoever is in the top `limit` is among the `limit + len(dirty)` best by the maintained
        # count or among the dirty ones (whose maintained count may be stale either way).
        best = list(
            Entity.objects.for_tenant(tenant)
            .filter(active_facts__gt=0)
            .order_by("-active_facts", "id")[: limit + len(dirty)]
        )
        live = entity_live_counts(tenant=tenant, entity_ids=dirty)
        known = {e.pk: e for e in best}
        missing = [i for i in dirty if i not in known and live.get(i)]
        known.update(Entity.objects.for_tenant(tenant).in_bulk(missing))
    ranked = sorted(
        ((entity, live.get(ident, 0) if ident in dirty else entity.active_facts)
         for ident, entity in known.items()),
        key=lambda pair: (-pair[1], pair[0].pk),
    )  # fmt: skip
    return [(entity, n) for entity, n in ranked if n > 0][:limit]
