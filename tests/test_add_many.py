"""A JSON Lines import stores its lines in a handful of statements (`facts_add_many`), and ends
in exactly the state that adding the same lines one by one reaches: the same facts and
positions, searchable at once, the same entity links and one audit event per new fact."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from facts.inputs import fact_draft
from facts.models import EventAction, Fact, FactEntity, FactEvent, Status
from facts.services import fact_add, fact_import, fact_remove
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db

LINES = [
    {"content": "Mei Lin moved to Berlin in March 2024 to work for Siemens."},
    {"content": "王芳在杭州的阿里巴巴工作。", "scope": "team:zh"},
    {"content": "Can we move the demo to Friday?", "kind": "turn", "session_id": "s1",
     "speaker": "Bob"},
    {"content": "Sure, Friday works for Alice.", "kind": "turn", "session_id": "s1",
     "speaker": "Alice"},
    {"content": "Kickoff in the Paris office", "kind": "turn", "session_id": "s2",
     "position": 7},
    {"content": "And then lunch with Tom Baker", "kind": "turn", "session_id": "s2"},
    {"content": "mei lin moved to berlin in march 2024 to work for siemens."},  # the first, again
    {"content": "Alice prefers green tea over coffee.", "trust": 0.9, "tags": ["drinks"]},
]  # fmt: skip


def _state(tenant) -> list[tuple]:
    with tenant_scope(tenant):
        facts = Fact.objects.for_tenant(tenant).order_by("pk")
        links = {}
        for link in FactEntity.objects.for_tenant(tenant).select_related("entity"):
            links.setdefault(link.fact_id, set()).add((link.entity.normalized, link.role))
        return [
            (f.kind, f.content, f.scope, f.session_id, f.position, f.speaker, f.trust_score,
             f.tags, str(f.search_vector), f.status, frozenset(links.get(f.pk, ())))
            for f in facts
        ]  # fmt: skip


def test_an_import_ends_where_adding_line_by_line_ends(tenant, other_tenant, system_actor):
    report = fact_import(tenant=tenant, lines=[json.dumps(line) for line in LINES],
                         actor=system_actor)  # fmt: skip
    for line in LINES:
        with tenant_scope(other_tenant):
            fact_add(tenant=other_tenant, draft=fact_draft(line), actor=system_actor,
                     join_similar=False)  # fmt: skip

    assert [line.status for line in report.lines] == ["added"] * 6 + ["exists", "added"]
    assert report.lines[6].fact_id == report.lines[0].fact_id
    batch, one_by_one = _state(tenant), _state(other_tenant)
    assert batch == one_by_one
    assert [row[4] for row in batch if row[0] == "turn"] == [0, 1, 7, 8]
    assert any(row[10] for row in batch), "some facts are linked to entities"
    with tenant_scope(tenant):
        created = FactEvent.objects.for_tenant(tenant).filter(action=EventAction.CREATE)
        assert sorted(created.values_list("fact_id", flat=True)) == sorted(
            line.fact_id for line in report.lines[:6] + report.lines[7:]
        )
        assert created.get(fact_id=report.lines[0].fact_id).after["content"] == LINES[0]["content"]


def test_an_import_of_many_lines_takes_a_few_statements_not_a_few_per_line(
    tenant, system_actor
) -> None:
    lines = [json.dumps({"content": f"Ticket {n} was closed by Alice on day {n}."})
             for n in range(200)]  # fmt: skip
    with CaptureQueriesContext(connection) as queries:
        report = fact_import(tenant=tenant, lines=lines, actor=system_actor)
    assert report.counts["added"] == 200
    assert len(queries.captured_queries) < 30


def test_an_import_restores_a_removed_fact_and_refuses_a_taken_position(
    tenant, system_actor
) -> None:
    with tenant_scope(tenant):
        removed = fact_add(tenant=tenant, draft=fact_draft({"content": "The vault code is 4417"}),
                           actor=system_actor).fact  # fmt: skip
        fact_remove(tenant=tenant, fact_id=removed.pk, actor=system_actor)
        fact_add(tenant=tenant, actor=system_actor, draft=fact_draft(
            {"content": "hello", "kind": "turn", "session_id": "s", "position": 0}))  # fmt: skip
    lines = [
        {"content": "The vault code is 4417"},
        {"content": "again at zero", "kind": "turn", "session_id": "s", "position": 0},
        {"content": "next in line", "kind": "turn", "session_id": "s"},
        {"content": "twice at five", "kind": "turn", "session_id": "t", "position": 5},
        {"content": "also at five", "kind": "turn", "session_id": "t", "position": 5},
    ]
    report = fact_import(tenant=tenant, lines=[json.dumps(line) for line in lines],
                         actor=system_actor)  # fmt: skip

    assert [line.status for line in report.lines] == [
        "restored", "error", "added", "added", "error"
    ]  # fmt: skip
    assert report.lines[1].field == "position"
    assert "already has a turn there" in report.lines[4].message
    with tenant_scope(tenant):
        assert Fact.objects.for_tenant(tenant).get(pk=removed.pk).status == Status.ACTIVE
        assert Fact.objects.for_tenant(tenant).get(pk=report.lines[2].fact_id).position == 1


def test_an_import_links_to_the_entity_an_alias_names(tenant, system_actor) -> None:
    from facts.curation import entity_alias_add
    from facts.entities import entity_resolve

    with tenant_scope(tenant):
        wang = entity_resolve(tenant=tenant, name="Wang Fang", type="person")
    entity_alias_add(tenant=tenant, entity_id=wang.pk, alias="Fang", actor=system_actor)
    report = fact_import(tenant=tenant, lines=[json.dumps({"content": "Fang met Alice in Paris."})],
                         actor=system_actor)  # fmt: skip
    with tenant_scope(tenant):
        linked = set(FactEntity.objects.for_tenant(tenant).filter(
            fact_id=report.lines[0].fact_id).values_list("entity__name", flat=True))  # fmt: skip
    assert "Wang Fang" in linked


def test_an_import_of_thousands_of_lines_stores_every_one(tenant, system_actor) -> None:
    lines = [json.dumps({"content": f"Invoice {n} was paid by Acme on day {n}.", "tags": ["inv"]})
             for n in range(2500)]  # fmt: skip
    report = fact_import(tenant=tenant, lines=lines, actor=system_actor)
    assert report.counts["added"] == 2500
    with tenant_scope(tenant):
        assert Fact.objects.for_tenant(tenant).count() == 2500
        assert (
            FactEvent.objects.for_tenant(tenant).filter(action=EventAction.CREATE).count() == 2500
        )


def test_an_import_links_only_to_its_own_tenants_entities(tenant, other_tenant, system_actor):
    from facts.entities import entity_resolve
    from facts.models import Entity

    with tenant_scope(other_tenant):
        theirs = entity_resolve(tenant=other_tenant, name="Mei Lin", type="person")
    report = fact_import(tenant=tenant, lines=[json.dumps(LINES[0])], actor=system_actor)
    with tenant_scope(tenant):
        links = FactEntity.objects.for_tenant(tenant).filter(fact_id=report.lines[0].fact_id)
        linked = list(links.values_list("entity_id", "entity__tenant_id"))
        mine = Entity.objects.for_tenant(tenant).get(normalized="mei lin")
    assert (mine.pk, tenant.pk) in linked
    assert theirs.pk not in [entity_id for entity_id, _ in linked]
