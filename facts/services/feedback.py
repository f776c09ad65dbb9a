"""Agents' verdicts on facts (helpful or not, which moves their trust) and the count of times each
was shown to an agent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Q

from facts.events import fact_event_record as _event
from facts.importance import importance_recompute
from facts.models import EventAction, Fact, Feedback
from facts.services.rows import _locked_fact
from tenants.actors import Actor
from tenants.models import Tenant
from tenants.scope import tenant_scope

TRUST_HELPFUL = 0.05
TRUST_UNHELPFUL = -0.10


@dataclass(frozen=True)
class FeedbackResult:
    fact_id: int
    old_trust: float
    new_trust: float
    helpful_count: int
    unhelpful_count: int


def fact_feedback(*, tenant: Tenant, fact_id: int, helpful: bool, actor: Actor) -> FeedbackResult:
    """helpful: trust +0.05; unhelpful: -0.10; clamped to [0, 1]."""
    with tenant_scope(tenant):
        fact = _locked_fact(tenant, fact_id)
        old = fact.trust_score
        delta = TRUST_HELPFUL if helpful else TRUST_UNHELPFUL
        fact.trust_score = round(min(1.0, max(0.0, old + delta)), 6)
        if helpful:
            fact.helpful_count += 1
        else:
            fact.unhelpful_count += 1
        fact.save(update_fields=["trust_score", "helpful_count", "unhelpful_count", "updated_at"])
        Feedback.objects.create(tenant=tenant, fact=fact, helpful=helpful, actor=str(actor))
        importance_recompute(tenant=tenant, fact_ids=[fact.pk])
        _event(
            tenant,
            fact.pk,
            EventAction.FEEDBACK,
            actor,
            before={"trust_score": old},
            after={"trust_score": fact.trust_score, "helpful": helpful},
        )
        return FeedbackResult(
            fact_id=fact.pk,
            old_trust=old,
            new_trust=fact.trust_score,
            helpful_count=fact.helpful_count,
            unhelpful_count=fact.unhelpful_count,
        )


def fact_record_retrievals(
    *, tenant: Tenant, fact_ids: list[int], at: datetime, times: list[int] | None = None
) -> int:
    """Count that these facts were shown to an agent, `times[i]` times each (once when absent),
    the last at `at`. Not audited: reading is not a change. Safe to run twice: a fact already
    marked retrieved at `at` or later is not counted again (a message delivered again after its
    worker died; one that arrives after a later one goes uncounted too, so the count is at most
    the truth). One UPDATE per distinct number of times."""
    if times is not None and len(times) != len(fact_ids):
        raise ValueError("times: one count per fact id")
    by_times: dict[int, list[int]] = {}
    for fact_id, n in zip(fact_ids, times or [1] * len(fact_ids), strict=True):
        by_times.setdefault(max(1, int(n)), []).append(fact_id)
    count = 0
    with tenant_scope(tenant):
        for n, ids in sorted(by_times.items()):
            count += (
                Fact.objects.for_tenant(tenant)
                .filter(pk__in=ids)
                .filter(Q(last_retrieved_at__isnull=True) | Q(last_retrieved_at__lt=at))
                .update(retrieval_count=F("retrieval_count") + n, last_retrieved_at=at)
            )
    return count
