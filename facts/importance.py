"""How important a fact is, from how it has served: one formula, computed in the database.

importance = 0.35 · usefulness + 0.25 · use + 0.20 · recency + 0.20 · trust, in [0, 1]
- usefulness: (helpful + 1) / (helpful + unhelpful + 2), 0.5 for a fact nobody rated;
- use: ln(1 + retrievals) / ln(101), capped at 1 (a hundred retrievals is as used as it gets);
- recency: 0.5 ^ (days since last retrieved, or since stored if never, / 30);
- trust: the fact's trust score.
A pinned fact ("always remember") is 1.

The context's "Known facts" level and the admin's fact lists read facts in this order.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import (
    DateTimeField,
    DurationField,
    ExpressionWrapper,
    F,
    FloatField,
    Q,
    Value,
)
from django.db.models.expressions import RawSQL
from django.utils import timezone

from facts.models import Fact, Status
from tenants.models import RetentionPolicy, Tenant
from tenants.scope import tenant_scope

RECENCY_HALF_LIFE_DAYS = 30
USE_SATURATION = 100
# The weights of the four terms (they sum to 1).
USEFULNESS, USE, RECENCY, TRUST = 0.35, 0.25, 0.20, 0.20

_FORMULA = f"""
CASE WHEN pinned THEN 1.0 ELSE round((
    {USEFULNESS} * (helpful_count + 1)::float / (helpful_count + unhelpful_count + 2)
  + {USE} * least(1.0, ln(1 + retrieval_count) / ln({USE_SATURATION + 1}))
  + {RECENCY} * power(0.5, greatest(0.0, extract(epoch FROM (%s - coalesce(last_retrieved_at,
        created_at))) / 86400.0) / {RECENCY_HALF_LIFE_DAYS})
  + {TRUST} * trust_score
)::numeric, 6)::float END
"""


def importance_expression(now: datetime | None = None) -> RawSQL:
    """The formula above as an SQL expression over a fact row, at `now`."""
    # A constant formula; its one value goes as a parameter.
    return RawSQL(_FORMULA, [now or timezone.now()], output_field=FloatField())  # noqa: S611


def importance_of_new(*, trust: float, created_at: datetime, pinned: bool) -> float:
    """The formula for a fact nobody has rated or retrieved yet (usefulness 1/2, use 0),
    without a query."""
    if pinned:
        return 1.0
    age_days = max(0.0, (timezone.now() - created_at).total_seconds() / 86400)
    recency = 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
    return round(USEFULNESS * 0.5 + RECENCY * recency + TRUST * trust, 6)


def importance_recompute(*, tenant: Tenant, fact_ids: list[int] | None = None) -> int:
    """Recompute the importance of the tenant's active facts (or of `fact_ids`) in one
    statement; only rows whose value changes are written. Returns how many changed."""
    with tenant_scope(tenant):
        facts = Fact.objects.for_tenant(tenant)
        facts = facts.filter(pk__in=fact_ids) if fact_ids is not None else facts
        now = timezone.now()
        return (
            facts.filter(status=Status.ACTIVE)
            .exclude(importance=importance_expression(now))
            .update(importance=importance_expression(now))
        )


def _due(now: datetime) -> Q:
    """Policies whose importance interval has passed since their last recompute."""
    interval = ExpressionWrapper(
        F("importance_every_hours") * Value(timedelta(hours=1)), output_field=DurationField()
    )
    latest = ExpressionWrapper(Value(now) - interval, output_field=DateTimeField())
    return Q(importance_recomputed_at__isnull=True) | Q(importance_recomputed_at__lte=latest)


def importance_due(*, now: datetime | None = None) -> list[int]:
    """Beat's check: the tenants whose importance interval (`importance_every_hours` of their
    policy, 1 hour by default) has passed since their last recompute. Each tenant is looked at
    in its own scope (the runtime role sees one tenant at a time)."""
    now = now or timezone.now()
    due = []
    for tenant in Tenant.objects.order_by("pk"):
        with tenant_scope(tenant):
            if RetentionPolicy.objects.for_tenant(tenant).filter(_due(now)).exists():
                due.append(tenant.pk)
    return due


def importance_recompute_due(*, tenant: Tenant, now: datetime | None = None) -> int | None:
    """The scheduled recompute: claim the round (a conditional update of the policy's
    `importance_recomputed_at`, so two workers never both do it and a message delivered twice
    finds nothing to do), then recompute, in one transaction. None when it was not due."""
    now = now or timezone.now()
    with tenant_scope(tenant):
        claimed = (
            RetentionPolicy.objects.for_tenant(tenant)
            .filter(_due(now))
            .update(importance_recomputed_at=now)
        )
        if not claimed:
            return None
        return importance_recompute(tenant=tenant)
