"""Recall's hits are written by `fact_out`, not by building FactOut for each: the two must give
the same JSON for every kind of fact, in any time zone the request runs in."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import timezone

from facts import services as fact_services
from facts.inputs import fact_draft
from facts.models import Fact
from surfaces.api.facts import FactOut, fact_out
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _facts(tenant, actor) -> list[Fact]:
    drafts = [
        {"content": "Alice prefers green tea over coffee", "scope": "user:alice",
         "category": "user_pref", "tags": ["tea", "morning"],
         "metadata": {"source": "chat", "n": 3, "nested": {"a": [1, 2]}, "none": None}},
        {"content": "我们周三开会", "scope": "team:infra"},
        {"content": "Bob: see you at the standup", "kind": "turn", "session_id": "chat-9",
         "position": 4, "speaker": "Bob"},
    ]  # fmt: skip
    made = [
        fact_services.fact_add(tenant=tenant, actor=actor, draft=fact_draft(d)).fact for d in drafts
    ]
    with tenant_scope(tenant):
        Fact.objects.for_tenant(tenant).filter(pk=made[0].pk).update(
            last_retrieved_at=datetime(2026, 12, 1, 9, 30, 0, 123456, tzinfo=UTC),
            retrieval_count=7,
            pinned=True,
            embedding_model="e5-small",
        )
        Fact.objects.for_tenant(tenant).filter(pk=made[1].pk).update(
            status="superseded", superseded_by=made[0], trust_score=0.25
        )
        return list(Fact.objects.for_tenant(tenant).filter(pk__in=[f.pk for f in made]))


@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai", "America/Los_Angeles"])
def test_fact_out_is_factout(tenant, system_actor, zone: str) -> None:
    facts = _facts(tenant, system_actor)
    with timezone.override(zone):
        for fact in facts:
            assert fact_out(fact) == dict(FactOut(fact).data)
    assert {f.kind for f in facts} == {"fact", "turn"}
