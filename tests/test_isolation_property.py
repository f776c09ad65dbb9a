"""Property: whatever several tenants store, no selector or service of one tenant ever returns,
changes or counts another tenant's row."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase

from facts import services
from facts.inputs import FactChanges, fact_changes, fact_draft
from facts.models import Fact
from facts.selectors.facts import fact_count, fact_entities, fact_get, fact_history, fact_list
from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.inputs import tenant_draft
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.services import tenant_create

ACTOR = Actor.job("property-test")
TENANTS = 3
WORDS = ["Alice", "Bob", "tea", "老王", "上海", "project", "Beta", "deadline", "咖啡", "Friday"]

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
operations = st.one_of(
    st.tuples(st.just("fact"), st.integers(0, TENANTS - 1), texts),
    st.tuples(st.just("turn"), st.integers(0, TENANTS - 1), texts),
    st.tuples(st.just("feedback"), st.integers(0, TENANTS - 1), st.booleans()),
    st.tuples(st.just("update"), st.integers(0, TENANTS - 1), texts),
    st.tuples(st.just("remove"), st.integers(0, TENANTS - 1), st.none()),
)


def _all_rows() -> dict[int, tuple[Any, ...]]:
    rows = {}
    for tenant_id in Tenant.objects.values_list("pk", flat=True):
        with tenant_scope(tenant_id):
            rows |= {
                f.pk: (f.tenant_id, f.content, f.status, f.trust_score, f.helpful_count)
                for f in Fact.objects.for_tenant(tenant_id)
            }
    return rows


def _listed(tenant) -> list[int]:
    ids, cursor = [], None
    while True:
        page = fact_list(tenant=tenant, status=None, limit=7, cursor=cursor)
        ids += [f.pk for f in page.facts]
        if not (cursor := page.next_cursor):
            return ids


def _reaches(tenant, fact_id: int) -> list[Callable[[], Any]]:
    """Every way one tenant could read or change a fact by its id."""
    return [
        partial(fact_get, tenant=tenant, fact_id=fact_id),
        partial(fact_history, tenant=tenant, fact_id=fact_id),
        partial(fact_entities, tenant=tenant, fact_id=fact_id),
        partial(services.fact_feedback, tenant=tenant, fact_id=fact_id, helpful=False, actor=ACTOR),
        partial(
            services.fact_update,
            tenant=tenant,
            fact_id=fact_id,
            changes=FactChanges(trust_delta=-1.0),
            actor=ACTOR,
        ),
        partial(services.fact_remove, tenant=tenant, fact_id=fact_id, actor=ACTOR),
        partial(services.fact_restore, tenant=tenant, fact_id=fact_id, actor=ACTOR),
        partial(services.fact_purge, tenant=tenant, fact_id=fact_id, actor=ACTOR, reason="test"),
    ]


@override_settings(MNEMOSYNE_ENTITY_EXTRACTOR="tests.extractors.capitalised_people")
class TenantIsolationProperty(TestCase):
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(plan=st.lists(operations, min_size=1, max_size=20), seed=st.randoms())
    def test_no_tenant_reaches_another(self, plan, seed) -> None:
        tenants = [
            tenant_create(actor=ACTOR, draft=tenant_draft({"slug": f"t{i}", "name": f"T{i}"}))
            for i in range(TENANTS)
        ]
        owned: dict[int, list[int]] = {t.pk: [] for t in tenants}
        for action, index, value in plan:
            tenant = tenants[index]
            mine = owned[tenant.pk]
            if action == "fact":
                result = services.fact_add(
                    tenant=tenant, actor=ACTOR, draft=fact_draft({"content": value})
                )
                if result.created:
                    mine.append(result.fact.pk)
            elif action == "turn":
                fact = services.fact_add(
                    tenant=tenant,
                    actor=ACTOR,
                    draft=fact_draft({"content": value, "kind": "turn", "session_id": "s"}),
                ).fact
                mine.append(fact.pk)
            elif mine and action == "feedback":
                services.fact_feedback(
                    tenant=tenant, fact_id=seed.choice(mine), helpful=value, actor=ACTOR
                )
            elif mine and action == "update":
                try:
                    services.fact_update(
                        tenant=tenant,
                        fact_id=seed.choice(mine),
                        actor=ACTOR,
                        changes=fact_changes({"content": value}),
                    )
                except InvalidInput:
                    pass  # the same text as another fact of the scope: refused, nothing changed
            elif mine and action == "remove":
                services.fact_remove(tenant=tenant, fact_id=seed.choice(mine), actor=ACTOR)

        for tenant in tenants:
            mine = set(owned[tenant.pk])
            self.assertEqual(set(_listed(tenant)), mine)
            self.assertEqual(fact_count(tenant=tenant, status=None), len(mine))
            for fact_id in mine:
                for entity in fact_entities(tenant=tenant, fact_id=fact_id):
                    self.assertEqual(entity.tenant_id, tenant.pk)
                for event in fact_history(tenant=tenant, fact_id=fact_id):
                    self.assertEqual(event.tenant_id, tenant.pk)

            before = _all_rows()
            foreign = [pk for pk, row in before.items() if row[0] != tenant.pk]
            for fact_id in foreign:
                for attempt in _reaches(tenant, fact_id):
                    try:
                        result = attempt()
                    except NotFound:
                        continue
                    # fact_entities answers an empty list, never another tenant's entities.
                    self.assertEqual(result, [])
            self.assertEqual(_all_rows(), before, "a foreign row changed")
