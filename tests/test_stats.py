"""Maintained statistics (facts.stats): the dashboard's counts and the entities' fact counts are
kept by the database's triggers and the statistics sweep, and must always equal a full count of
the tenant's facts, whatever wrote them, before and after the sweep folds them."""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from datetime import UTC, timedelta
from typing import Any

import pytest
from django.db.models import Count
from django.utils import timezone

from facts import curation
from facts.inputs import fact_changes, fact_draft
from facts.models import Entity, EntityDirty, Fact, FactEntity, FactStat, Kind, Status
from facts.selectors.dashboard import TRUST_BANDS, entity_top, fact_added_per_day, fact_counts
from facts.selectors.entities import entity_get, entity_list
from facts.services import fact_add, fact_feedback, fact_purge, fact_remove, fact_restore
from facts.stats import stats_fold
from tenants.cross_tenant import tenants_with_stats_work
from tenants.scope import tenant_scope

MODEL = "e5-test"
BOUNDS = [band / TRUST_BANDS for band in range(1, TRUST_BANDS)]


def _full_counts(tenant, model: str | None) -> dict[str, Any]:
    """What the dashboard must show, counted from the facts themselves."""
    with tenant_scope(tenant):
        facts = list(
            Fact.objects.for_tenant(tenant).values_list(
                "kind", "status", "trust_score", "embedding_model", "created_at"
            )
        )
    active = [f for f in facts if f[1] == Status.ACTIVE]
    trust = [0] * TRUST_BANDS
    for f in active:
        trust[bisect_right(BOUNDS, f[2])] += 1
    days = Counter((f[4].astimezone(UTC).date(), f[0]) for f in facts)
    return {
        "facts": sum(1 for f in active if f[0] == Kind.FACT),
        "turns": sum(1 for f in active if f[0] == Kind.TURN),
        "archived": sum(1 for f in facts if f[1] == Status.ARCHIVED),
        "removed": sum(1 for f in facts if f[1] == Status.REMOVED),
        "superseded": sum(1 for f in facts if f[1] == Status.SUPERSEDED),
        "unembedded": sum(1 for f in active if not model or f[3] != model),
        "trust_bands": trust,
        "days": {key: n for key, n in days.items() if n},
    }


def _shown(tenant, model: str | None) -> dict[str, Any]:
    counts = fact_counts(tenant=tenant, embedding_model=model)
    days = fact_added_per_day(tenant=tenant, days=400)
    shown = {
        "facts": counts.facts, "turns": counts.turns, "archived": counts.archived,
        "removed": counts.removed, "superseded": counts.superseded,
        "unembedded": counts.unembedded, "trust_bands": counts.trust_bands,
    }  # fmt: skip
    per_day = {}
    for day in days:
        if day.facts:
            per_day[(day.day, Kind.FACT)] = day.facts
        if day.turns:
            per_day[(day.day, Kind.TURN)] = day.turns
    return shown | {"days": per_day}


def _entity_counts(tenant) -> dict[str, int]:
    """Active facts naming each entity, counted from the links themselves."""
    with tenant_scope(tenant):
        rows = (
            FactEntity.objects.for_tenant(tenant)
            .filter(fact__status=Status.ACTIVE)
            .values_list("entity__name")
            .annotate(n=Count("*"))
        )
        return dict(rows)


def _listed(tenant) -> dict[str, int]:
    return {
        e.name: e.fact_count for e in entity_list(tenant=tenant, limit=200).entities if e.fact_count
    }


def _top(tenant) -> list[tuple[str, int]]:
    return [(e.name, n) for e, n in entity_top(tenant=tenant, limit=5)]


def _expected_top(tenant) -> list[tuple[str, int]]:
    with tenant_scope(tenant):
        ids = {e.name: e.pk for e in Entity.objects.for_tenant(tenant)}
    counts = _entity_counts(tenant)
    return sorted(counts.items(), key=lambda item: (-item[1], ids[item[0]]))[:5]


def _add(tenant, actor, content: str, **more: Any) -> Fact:
    return fact_add(tenant=tenant, actor=actor, draft=fact_draft({"content": content, **more})).fact


def _everything_agrees(tenant, model: str | None = MODEL) -> None:
    assert _shown(tenant, model) == _full_counts(tenant, model)
    assert _listed(tenant) == _entity_counts(tenant)
    assert _top(tenant) == _expected_top(tenant)


@pytest.mark.django_db
def test_the_counts_equal_a_full_count_after_every_kind_of_write(
    tenant, other_tenant, system_actor
) -> None:
    people = ["Alice", "Bob", "Carol", "Dan"]
    facts = [
        _add(tenant, system_actor, f"{people[n % 4]} met {people[(n + 1) % 4]} about item {n}.")
        for n in range(12)
    ]
    turns = [
        _add(tenant, system_actor, f"Alice: turn {n} of the talk.", kind="turn", session_id="s1")
        for n in range(5)
    ]
    _add(other_tenant, system_actor, "Alice met Bob in the other tenant.")
    _everything_agrees(tenant)
    # Trust moves between bands; facts are removed, restored, purged; vectors arrive; a raw
    # update archives, supersedes and back-dates (what retention, conflicts and imports write).
    for fact in facts[:4]:
        fact_feedback(tenant=tenant, fact_id=fact.pk, helpful=False, actor=system_actor)
    fact_feedback(tenant=tenant, fact_id=facts[4].pk, helpful=True, actor=system_actor)
    fact_remove(tenant=tenant, fact_id=facts[5].pk, actor=system_actor)
    fact_remove(tenant=tenant, fact_id=facts[6].pk, actor=system_actor)
    fact_restore(tenant=tenant, fact_id=facts[6].pk, actor=system_actor)
    fact_remove(tenant=tenant, fact_id=facts[7].pk, actor=system_actor)
    fact_purge(tenant=tenant, fact_id=facts[7].pk, actor=system_actor, reason="a request")
    with tenant_scope(tenant):
        rows = Fact.objects.for_tenant(tenant)
        rows.filter(pk__in=[f.pk for f in facts[:8]]).update(embedding_model=MODEL)
        rows.filter(pk=facts[8].pk).update(status=Status.ARCHIVED)
        rows.filter(pk=facts[9].pk).update(status=Status.SUPERSEDED)
        rows.filter(pk=turns[0].pk).update(created_at=timezone.now() - timedelta(days=3))
    fact_update_content(tenant, system_actor, facts[10], "Dan met Erin about item 10.")
    _everything_agrees(tenant)
    _everything_agrees(tenant, model=None)

    assert tenant.pk in tenants_with_stats_work()
    folded = stats_fold(tenant=tenant)
    assert 0 < folded.rows_made < folded.rows_folded and folded.entities_counted > 0
    assert tenant.pk not in tenants_with_stats_work()
    with tenant_scope(tenant):
        assert not EntityDirty.objects.for_tenant(tenant).exists()
        assert not FactStat.objects.for_tenant(tenant).filter(folded=False).exists()
    _everything_agrees(tenant)

    # After the fold, the next writes are counted on top of it.
    _add(tenant, system_actor, "Erin met Alice about item 99.")
    fact_remove(tenant=tenant, fact_id=facts[11].pk, actor=system_actor)
    _everything_agrees(tenant)
    stats_fold(tenant=tenant)
    assert stats_fold(tenant=tenant).rows_folded == 0  # twice: nothing changes
    _everything_agrees(tenant)
    # The other tenant counts only its own.
    assert fact_counts(tenant=other_tenant, embedding_model=MODEL).facts == 1
    assert _listed(other_tenant) == {"Alice": 1, "Bob": 1}


def fact_update_content(tenant, actor, fact: Fact, content: str) -> None:
    from facts.services import fact_update

    fact_update(
        tenant=tenant, fact_id=fact.pk, actor=actor, changes=fact_changes({"content": content})
    )


@pytest.mark.django_db
def test_an_entity_count_follows_merges_and_stays_exact_across_the_sweep(
    tenant, system_actor, owner_actor
) -> None:
    for text in ("老王 leads Atlas.", "王总 approved the Atlas budget.", "王总 hired Bob."):
        _add(tenant, system_actor, text)
    stats_fold(tenant=tenant)
    with tenant_scope(tenant):
        lao = Entity.objects.for_tenant(tenant).get(normalized="老王")
        boss = Entity.objects.for_tenant(tenant).get(normalized="王总")
    assert (entity_get(tenant=tenant, entity_id=lao.pk).fact_count,
            entity_get(tenant=tenant, entity_id=boss.pk).fact_count) == (1, 2)  # fmt: skip
    curation.entity_merge(tenant=tenant, entity_id=lao.pk, other_id=boss.pk, actor=owner_actor)
    # Before the sweep: read live; after it: the maintained count, the same.
    assert entity_get(tenant=tenant, entity_id=lao.pk).fact_count == 3
    _everything_agrees(tenant)
    stats_fold(tenant=tenant)
    with tenant_scope(tenant):
        assert Entity.objects.for_tenant(tenant).get(pk=lao.pk).active_facts == 3
    assert entity_get(tenant=tenant, entity_id=lao.pk).fact_count == 3
    _everything_agrees(tenant)


@pytest.mark.django_db
def test_a_top_list_with_many_changed_entities_is_still_exact(
    tenant, system_actor, monkeypatch
) -> None:
    """More entities changed since the sweep than the top list counts one by one: it counts
    them all at once instead, with the same answer."""
    from facts.selectors import dashboard

    for n in range(8):
        _add(tenant, system_actor, f"Person{n} met Alice and Bob.")
    monkeypatch.setattr(dashboard, "DIRTY_LIVE_MAX", 2)  # 10 changed entities: too many
    assert _top(tenant) == _expected_top(tenant)
    assert _top(tenant)[:2] == [("Alice", 8), ("Bob", 8)]
