"""The entity-graph reads behind probe / related / reason / contradict, the rules that find
candidate facts in a conversation, and idempotent writes."""

from __future__ import annotations

import pytest

from agentspec import hermes as tools
from agentspec.candidates import candidate_facts
from facts import graph
from facts.conflicts import conflicts_check_pending
from facts.embedding import facts_embed_batch
from facts.graph import (
    entities_reason,
    entity_facts,
    entity_neighbourhood,
    entity_related,
    fact_contradictions,
)
from facts.inputs import entity_names, fact_draft
from facts.models import Category, Kind
from facts.selectors.entities import entity_list
from facts.selectors.facts import fact_list
from facts.services import fact_add, fact_feedback, fact_remove
from tenants.errors import InvalidInput, NotFound

pytestmark = pytest.mark.django_db

FACTS = [
    "Alice Chen leads the Northstar project",
    "Alice Chen prefers green tea",
    "Bob Li reviews every Northstar release",
    "Bob Li lives in Shanghai",
    "Carol Wu joined the Orion team",
]


@pytest.fixture
def stored(tenant, system_actor) -> dict[str, int]:
    return {
        text: fact_add(
            tenant=tenant, actor=system_actor, draft=fact_draft({"content": text})
        ).fact.pk
        for text in FACTS
    }


def _contents(hits) -> list[str]:
    return [h.fact.content for h in hits]


def test_probe_finds_every_fact_about_an_entity_by_any_spelling(tenant, stored) -> None:
    for name in ("Alice Chen", "  alice chen ", "Alice"):
        assert sorted(_contents(entity_facts(tenant=tenant, name=name))) == [
            "Alice Chen leads the Northstar project",
            "Alice Chen prefers green tea",
        ], name
    assert entity_facts(tenant=tenant, name="Zed") == []


def test_probe_orders_by_trust(tenant, stored, system_actor) -> None:
    fact_feedback(
        tenant=tenant, fact_id=stored["Alice Chen prefers green tea"], helpful=True,
        actor=system_actor,
    )  # fmt: skip
    assert _contents(entity_facts(tenant=tenant, name="Alice Chen"))[0] == (
        "Alice Chen prefers green tea"
    )


def test_related_walks_from_an_entity_to_what_is_mentioned_with_it(tenant, stored) -> None:
    hits = entity_related(tenant=tenant, name="Alice Chen")
    by_content = {h.fact.content: h for h in hits}
    # One hop: the fact that ties Alice to Northstar; two hops: Northstar's other facts.
    assert by_content["Alice Chen leads the Northstar project"].hops == 1
    assert by_content["Bob Li reviews every Northstar release"].hops == 2
    assert by_content["Bob Li reviews every Northstar release"].entities == ["Northstar"]
    assert "Carol Wu joined the Orion team" not in by_content
    assert "Bob Li lives in Shanghai" not in by_content  # Bob is two entities away
    assert hits[0].score >= hits[-1].score


def test_reason_finds_the_facts_that_link_all_the_entities(tenant, stored) -> None:
    assert _contents(entities_reason(tenant=tenant, names=["Bob Li", "Northstar"])) == [
        "Bob Li reviews every Northstar release"
    ]
    # None links all three: those linking the most come back, and say which they link.
    hits = entities_reason(tenant=tenant, names=["Alice Chen", "Northstar", "Carol Wu"])
    assert _contents(hits) == ["Alice Chen leads the Northstar project"]
    assert hits[0].entities == ["Alice Chen", "Northstar"]
    with pytest.raises(InvalidInput) as problem:
        entity_names("entities", [])  # what every surface parses the names with
    assert problem.value.field == "entities"


def test_contradict_reads_the_conflicts_the_worker_recorded(tenant, system_actor) -> None:
    for text in [
        "Alice Chen prefers green tea",
        "Alice Chen prefers black coffee",
        "Alice Chen prefers green tea in the morning",  # adds detail: not a contradiction
        "Alice Chen lives in Berlin",  # another subject matter
        "Bob Li prefers black coffee",  # another person
    ]:
        fact_add(tenant=tenant, actor=system_actor, draft=fact_draft({"content": text}))
    assert fact_contradictions(tenant=tenant) == [], "nothing is guessed at read time"
    while facts_embed_batch(tenant=tenant):
        pass
    conflicts_check_pending(tenant=tenant)  # what the worker does after embedding
    pairs = {
        frozenset((p.fact_a.content, p.fact_b.content)): p
        for p in fact_contradictions(tenant=tenant)
    }
    tea_or_coffee = frozenset(("Alice Chen prefers green tea", "Alice Chen prefers black coffee"))
    assert tea_or_coffee in pairs
    assert pairs[tea_or_coffee].shared_entities == ["alice chen"]
    assert pairs[tea_or_coffee].recorded and pairs[tea_or_coffee].reason == "value"
    assert (
        frozenset(("Alice Chen prefers green tea", "Alice Chen prefers green tea in the morning"))
        not in pairs
    )  # noqa: E501
    assert not any("Berlin" in " ".join(pair) for pair in pairs)
    assert not any("Bob Li" in " ".join(pair) for pair in pairs)


def test_graph_reads_stay_inside_their_tenant(tenant, other_tenant, stored, system_actor):
    fact_add(
        tenant=other_tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Alice Chen works at Globex"}),
    )
    everything = [
        *_contents(entity_facts(tenant=tenant, name="Alice Chen")),
        *_contents(entity_related(tenant=tenant, name="Alice Chen")),
        *_contents(entities_reason(tenant=tenant, names=["Alice Chen", "Globex"])),
    ]
    assert everything and not any("Globex" in text for text in everything)


def test_candidate_facts_are_statements_in_english_and_chinese_never_questions() -> None:
    found = candidate_facts([
        "I prefer tabs over spaces. Can you reformat main.py?",
        "My favourite editor is Helix. Do I like Vim?",
        "We decided to release Northstar on Friday.",
        "The project uses PostgreSQL 18 and Python 3.11.",
        "我喜欢喝绿茶。你喜欢什么？",
        "我们决定下周五发布测试版。",
        "项目使用 Django 5.2",
        "请记住：周一上午十点开站会",
        "Thanks, that works!",
        "I prefer tabs over spaces.",
    ])  # fmt: skip
    assert [(c.content, c.category) for c in found] == [
        ("I prefer tabs over spaces.", Category.USER_PREF),
        ("My favourite editor is Helix.", Category.USER_PREF),
        ("We decided to release Northstar on Friday.", Category.PROJECT),
        ("The project uses PostgreSQL 18 and Python 3.11.", Category.PROJECT),
        ("我喜欢喝绿茶。", Category.USER_PREF),
        ("我们决定下周五发布测试版。", Category.PROJECT),
        ("项目使用 Django 5.2", Category.PROJECT),
        ("请记住：周一上午十点开站会", Category.GENERAL),
    ]


def test_a_write_repeated_with_its_idempotency_key_is_stored_once(tenant, system_actor) -> None:
    for _ in range(2):
        first = fact_add(
            tenant=tenant,
            actor=system_actor,
            draft=fact_draft(
                {
                    "content": "Yes, last Friday!",
                    "kind": "turn",
                    "session_id": "s1",
                    "idempotency_key": "k-1",
                }
            ),
        )
    assert first.status == "exists"
    other = fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft(
            {
                "content": "Yes, last Friday!",
                "kind": "turn",
                "session_id": "s1",
                "idempotency_key": "k-2",
            }
        ),
    )
    assert other.status == "added"  # the same words said again are another turn
    turns = fact_list(tenant=tenant, kind="turn").facts
    assert sorted(t.position for t in turns) == [0, 1]


def test_the_tool_layer_knows_the_models_choices() -> None:
    assert tools.CATEGORIES == list(Category.values)
    assert tools.KINDS == list(Kind.values)


def _add(tenant, actor, text: str) -> int:
    return fact_add(tenant=tenant, actor=actor, draft=fact_draft({"content": text})).fact.pk


def _entity_named(tenant, name: str):
    return next(e for e in entity_list(tenant=tenant, query=name).entities if e.name == name)


def test_the_neighbourhood_counts_what_is_named_with_an_entity_in_its_active_facts(
    tenant, other_tenant, system_actor
) -> None:
    _add(tenant, system_actor, "Alice Chen and Bob Li ship Northstar")
    _add(tenant, system_actor, "Alice Chen and Bob Li met in Shanghai")
    # Bob and Northstar again, but not with Alice: no tie on Alice's page.
    _add(tenant, system_actor, "Bob Li and Carol Wu review Northstar")
    gone = _add(tenant, system_actor, "Alice Chen visited Orion with Carol Wu")
    fact_remove(tenant=tenant, fact_id=gone, actor=system_actor)
    alice = _entity_named(tenant, "Alice Chen")
    hood = entity_neighbourhood(tenant=tenant, entity_id=alice.pk)
    names = {e.pk: e.name for e, _ in hood.neighbours}
    assert [(e.name, n) for e, n in hood.neighbours] == [
        ("Bob Li", 2), ("Northstar", 1), ("Shanghai", 1)
    ]  # fmt: skip
    assert sorted((names[a], names[b], n) for a, b, n in hood.edges) == [
        ("Bob Li", "Northstar", 1), ("Bob Li", "Shanghai", 1)
    ]  # fmt: skip
    with pytest.raises(NotFound):
        entity_neighbourhood(tenant=other_tenant, entity_id=alice.pk)


def test_the_graph_walks_from_an_entitys_newest_facts(tenant, system_actor, monkeypatch) -> None:
    """A speaker named by a hundred thousand turns is walked from its newest RECENT_FACTS."""
    _add(tenant, system_actor, "Alice Chen visited Orion")
    _add(tenant, system_actor, "Alice Chen and Bob Li ship Northstar")
    removed = _add(tenant, system_actor, "Alice Chen met Carol Wu")
    _add(tenant, system_actor, "Alice Chen and Bob Li met in Shanghai")
    fact_remove(tenant=tenant, fact_id=removed, actor=system_actor)
    monkeypatch.setattr(graph, "RECENT_FACTS", 2)
    alice = _entity_named(tenant, "Alice Chen")
    hood = entity_neighbourhood(tenant=tenant, entity_id=alice.pk)
    # The two newest active facts: the removed one is passed over, the oldest is too far back.
    assert {e.name for e, _ in hood.neighbours} == {"Bob Li", "Northstar", "Shanghai"}
    one_hop = entity_related(tenant=tenant, entity_id=alice.pk, hops=1)
    assert "Alice Chen visited Orion" not in _contents(one_hop)
    assert "Alice Chen and Bob Li met in Shanghai" in _contents(one_hop)


def test_the_entity_page_walk_gives_what_related_and_the_neighbourhood_give(
    tenant, other_tenant, system_actor
) -> None:
    _add(tenant, system_actor, "Alice Chen and Bob Li ship Northstar")
    _add(tenant, system_actor, "Alice Chen and Bob Li met in Shanghai")
    _add(tenant, system_actor, "Bob Li and Carol Wu review Northstar")
    alice = _entity_named(tenant, "Alice Chen")
    walked = graph.entity_graph(tenant=tenant, entity_id=alice.pk, hops=2, limit=20)
    related = entity_related(tenant=tenant, entity_id=alice.pk, hops=2, limit=20)
    hood = entity_neighbourhood(tenant=tenant, entity_id=alice.pk)
    assert [(h.fact.pk, h.hops, h.entities) for h in walked.related] == [
        (h.fact.pk, h.hops, h.entities) for h in related
    ]
    assert "Bob Li and Carol Wu review Northstar" in _contents(walked.related)
    assert walked.neighbourhood == hood
    with pytest.raises(NotFound):
        graph.entity_graph(tenant=other_tenant, entity_id=alice.pk)
