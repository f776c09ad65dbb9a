"""The MCP tools' own rules, called the way the server calls them (agenttools.mcp with the
binding of a key): scopes are paths and a key's scope prefix bounds every call, probe falls back
to text, the list pages, a read-only binding changes nothing."""

from __future__ import annotations

import pytest

from agenttools.mcp import Binding, known_facts, tool_call, tools_for
from tenants.actors import Actor
from tenants.scope import scope_within as within

pytestmark = pytest.mark.django_db


@pytest.fixture
def key(tenant, system_actor):
    from tenants.services import apikey_create

    return apikey_create(tenant=tenant, name="zed", actor=system_actor).key


def _bound(key, scope: str = "", rights: tuple[str, ...] = ("read", "write")) -> Binding:
    return Binding(
        tenant=key.tenant, actor=Actor.api_key(key), rights=frozenset(rights), scope=scope
    )


def _call(binding: Binding, name: str, **arguments) -> dict:
    outcome = tool_call(binding, name, arguments)
    return outcome.payload | ({"is_error": True} if outcome.is_error else {})


def test_scopes_are_paths() -> None:
    assert within("team:a", "team:a") and within("team:a/project:x", "team:a")
    assert not within("team:ab", "team:a") and not within("team:b", "team:a")
    assert within("anything", "")


def test_a_key_scope_prefix_bounds_what_it_reads_and_writes(key, system_actor) -> None:
    from facts.inputs import fact_draft
    from facts.services import fact_add

    inside = fact_add(
        tenant=key.tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Team A ships on Mondays", "scope": "team:a/project:x"}),
    ).fact
    sibling = fact_add(
        tenant=key.tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Team AB ships on Mondays too", "scope": "team:ab"}),
    ).fact
    team_a = _bound(key, scope="team:a")

    found = _call(team_a, "memory_search", query="ships on Mondays")
    assert [row["fact_id"] for row in found["results"]] == [inside.pk]
    recent = _call(team_a, "memory_recent")
    assert [row["fact_id"] for row in recent["results"]] == [inside.pk]
    assert _call(team_a, "memory_search", query="ships", scope="team:ab") == {
        "error": "scope: is outside this API key's scope 'team:a'", "is_error": True
    }  # fmt: skip

    stored = _call(team_a, "memory_store", content="Team A retros on Fridays")
    assert stored["scope"] == "team:a"
    deeper = _call(team_a, "memory_store", content="X demos weekly", scope="team:a/project:x")
    assert deeper["scope"] == "team:a/project:x"
    assert _call(team_a, "memory_store", content="Elsewhere", scope="team:b")["is_error"]

    # A fact outside the prefix is as missing as another tenant's.
    for tool, extra in (("memory_feedback", {"helpful": True}), ("memory_remove", {})):
        assert _call(team_a, tool, fact_id=sibling.pk, **extra) == {
            "error": f"fact_id: fact {sibling.pk} not found", "is_error": True
        }  # fmt: skip
    moved = _call(team_a, "memory_update", fact_id=inside.pk, scope="team:b")
    assert moved["error"] == "scope: is outside this API key's scope 'team:a'"
    assert "team:ab" not in known_facts(team_a).text and "Team AB" not in known_facts(team_a).text


def test_probe_finds_an_entity_and_falls_back_to_text(key, settings) -> None:
    settings.MNEMOSYNE_ENTITY_EXTRACTOR = "tests.extractors.capitalised_people"
    binding = _bound(key)
    stored = _call(binding, "memory_store", content="Alice reviews every database migration")
    probed = _call(binding, "memory_probe", entity="Alice")
    assert probed["matched_by"] == "entity"
    assert probed["results"][0]["fact_id"] == stored["fact_id"]
    assert probed["results"][0]["entities"] == ["Alice"]
    fallback = _call(binding, "memory_probe", entity="migration")
    assert fallback["matched_by"] == "text"
    assert fallback["results"][0]["fact_id"] == stored["fact_id"]
    assert _call(binding, "memory_related", entity="Nobody") == {
        "results": [], "count": 0, "matched_by": "entity"
    }  # fmt: skip


def test_recent_memories_come_in_pages(key) -> None:
    binding = _bound(key)
    ids = [_call(binding, "memory_store", content=f"Fact number {n}")["fact_id"] for n in range(5)]
    first = _call(binding, "memory_recent", limit=3)
    second = _call(binding, "memory_recent", limit=3, cursor=first["next_cursor"])
    assert [r["fact_id"] for r in first["results"] + second["results"]] == ids[::-1]
    assert second["next_cursor"] is None


def test_update_and_remove_are_audited_with_the_key(key) -> None:
    from facts.models import FactEvent
    from facts.selectors.facts import fact_get
    from tenants.scope import tenant_scope

    binding = _bound(key)
    fact_id = _call(binding, "memory_store", content="The office opens at 8")["fact_id"]
    updated = _call(binding, "memory_update", fact_id=fact_id, content="The office opens at 9",
                    tags=["office"])  # fmt: skip
    assert updated["updated"] and updated["fact"]["content"] == "The office opens at 9"
    assert _call(binding, "memory_remove", fact_id=fact_id) == {"fact_id": fact_id, "removed": True}
    assert fact_get(tenant=key.tenant, fact_id=fact_id).status == "removed"
    assert _call(binding, "memory_search", query="office opens")["count"] == 0
    with tenant_scope(key.tenant):
        events = list(
            FactEvent.objects.for_tenant(key.tenant)
            .filter(fact_id=fact_id)
            .order_by("id")
            .values_list("action", "actor")
        )
    actor = f"apikey:{key.pk}:zed"
    assert events == [("create", actor), ("update", actor), ("remove", actor)]


def test_a_read_only_binding_sees_and_changes_nothing_it_may_not(key, system_actor) -> None:
    from facts.inputs import fact_draft
    from facts.services import fact_add

    fact = fact_add(
        tenant=key.tenant, actor=system_actor, draft=fact_draft({"content": "Read me"})
    ).fact
    reader = _bound(key, rights=("read",))
    assert {tool.need for tool in tools_for(reader)} == {"read"}
    for name, arguments in (
        ("memory_store", {"content": "x"}),
        ("memory_feedback", {"fact_id": fact.pk, "helpful": True}),
        ("memory_update", {"fact_id": fact.pk, "content": "changed"}),
        ("memory_remove", {"fact_id": fact.pk}),
    ):
        answer = _call(reader, name, **arguments)
        assert answer["is_error"] and "may only read" in answer["error"], name
    writer_only = _bound(key, rights=("write",))
    assert "may only write" in _call(writer_only, "memory_search", query="x")["error"]
