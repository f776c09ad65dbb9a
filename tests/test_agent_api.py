"""/api/v1/agent/: the endpoints a Hermes profile talks to, called as the provider calls them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from facts.inputs import fact_draft
from facts.selectors.facts import fact_get, fact_list
from facts.services import fact_add
from tenants.services import apikey_create, apikey_revoke
from tests.api_fixtures import bearer, signed_in

pytestmark = pytest.mark.django_db

ACME_SECRET = "Alice Chen keeps the Northstar launch codes in the blue binder"
GLOBEX_SECRET = "Alice Chen keeps the Northstar launch codes in the red binder"


@dataclass
class Agents:
    acme: str
    globex: str
    reader: str
    limited: str
    acme_fact: int
    globex_fact: int


@pytest.fixture
def agents(tenant, other_tenant, system_actor) -> Agents:
    acme = fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": ACME_SECRET, "category": "project"}),
    )
    globex = fact_add(
        tenant=other_tenant, actor=system_actor, draft=fact_draft({"content": GLOBEX_SECRET})
    )
    fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Beta ships on Fridays", "scope": "project:beta"}),
    )

    def key(t: Any, name: str, **extra: Any) -> str:
        return apikey_create(tenant=t, name=name, actor=system_actor, **extra).token

    return Agents(
        acme=key(tenant, "hermes"),
        globex=key(other_tenant, "spy"),
        reader=key(tenant, "reader", scopes=["read"]),
        limited=key(tenant, "beta-only", scope_prefix="project:beta"),
        acme_fact=acme.fact.pk,
        globex_fact=globex.fact.pk,
    )


def _post(token: str, path: str, body: dict[str, Any]) -> Any:
    return bearer(token).post(f"/api/v1/agent/{path}", body, format="json")


def _turn(key: str, said: list[list[str]], session: str = "chat-1") -> dict[str, Any]:
    payload = {"session_id": session, "said": said, "at": "2026-12-01T10:00:00+00:00"}
    return {"key": key, "op": "turn", "payload": payload}


def test_whoami_names_the_keys_tenant_rights_and_scope_limit(agents: Agents) -> None:
    answer = bearer(agents.acme).get("/api/v1/agent/whoami")
    assert answer.status_code == 200
    assert answer.json() == {
        "tenant": {"slug": "acme", "name": "Acme"},
        "key": {"prefix": agents.acme.split("_")[1], "name": "hermes"},
        "scopes": ["read", "write"],
        "scope_prefix": "",
    }
    assert bearer(agents.limited).get("/api/v1/agent/whoami").json()["scope_prefix"] == (
        "project:beta"
    )
    assert bearer(agents.acme[:-3] + "xyz").get("/api/v1/agent/whoami").status_code == 401


def test_prompt_and_prefetch_answer_with_the_tenants_memories(agents: Agents) -> None:
    prompt = _post(agents.acme, "prompt", {}).json()
    assert "team Acme" in prompt["text"] and ACME_SECRET in prompt["text"]
    assert agents.acme_fact in prompt["fact_ids"]
    recalled = _post(agents.acme, "prefetch", {"query": "where are the launch codes?"}).json()
    assert ACME_SECRET in recalled["text"]
    # What the system prompt holds already is left out of the turn's block.
    without = _post(agents.acme, "prefetch", {"query": "where are the launch codes?",
                                              "exclude": prompt["fact_ids"]}).json()  # fmt: skip
    assert ACME_SECRET not in without["text"]


def test_writes_are_stored_in_order_exactly_once_and_a_bad_one_is_rejected_alone(
    agents: Agents, tenant
) -> None:
    batch = {"writes": [
        _turn("k-turn-0001", [["user", "My cat is Miso"], ["assistant", "Lovely."]]),
        {"key": "k-fact-0001", "op": "fact", "payload": {"content": "Miso is three",
                                                         "category": "gossip"}},
        {"key": "k-fact-0002", "op": "fact", "payload": {"content": "Miso eats tuna"}},
        _turn("k-turn-0002", [["user", "She sleeps a lot"], ["assistant", "Cats do."]]),
    ]}  # fmt: skip
    first = _post(agents.acme, "writes", batch)
    assert first.status_code == 200
    assert [(r["key"], r["status"]) for r in first.json()["results"]] == [
        ("k-turn-0001", "stored"), ("k-fact-0001", "rejected"),
        ("k-fact-0002", "stored"), ("k-turn-0002", "stored"),
    ]  # fmt: skip
    assert first.json()["results"][1]["error"].startswith("category:")
    again = _post(agents.acme, "writes", batch)  # the answer was lost: sent again
    assert [r["status"] for r in again.json()["results"]] == [
        "stored",
        "rejected",
        "stored",
        "stored",
    ]
    turns = sorted(fact_list(tenant=tenant, kind="turn").facts, key=lambda f: f.position)
    assert [t.content for t in turns] == [
        "My cat is Miso",
        "Lovely.",
        "She sleeps a lot",
        "Cats do.",
    ]
    contents = [f.content for f in fact_list(tenant=tenant).facts]
    assert contents.count("Miso eats tuna") == 1 and "Miso is three" not in contents


def test_session_end_stores_the_candidate_facts_once(agents: Agents, tenant) -> None:
    body = {"key": "end-0001", "said": ["I prefer tabs over spaces. Fix this?", "ok"]}
    assert _post(agents.acme, "session-end", body).json() == {"candidates": 1}
    assert _post(agents.acme, "session-end", body).json() == {"candidates": 1}
    contents = [f.content for f in fact_list(tenant=tenant).facts]
    assert contents.count("I prefer tabs over spaces.") == 1


def test_tool_calls_answer_in_the_holographic_shapes_and_name_a_bad_argument(
    agents: Agents,
) -> None:
    added = _post(agents.acme, "tools/fact_store",
                  {"arguments": {"action": "add", "content": "Dana likes oolong"}})  # fmt: skip
    assert added.status_code == 200 and added.json()["status"] == "added"
    rating = {"action": "helpful", "fact_id": added.json()["fact_id"]}
    rated = _post(agents.acme, "tools/fact_feedback", {"arguments": rating})
    assert rated.json()["new_trust"] == pytest.approx(rated.json()["old_trust"] + 0.05)
    bad = _post(agents.acme, "tools/fact_store",
                {"arguments": {"action": "search", "query": "x", "limit": 0}})  # fmt: skip
    assert bad.status_code == 400
    assert bad.json()["error"] == "limit: must be from 1 to 100" and bad.json()["field"] == "limit"
    adding = {"action": "add", "content": "Readers may not write"}
    refused = _post(agents.reader, "tools/fact_store", {"arguments": adding})
    assert refused.status_code == 403 and "read-only" in refused.json()["error"]
    assert _post(agents.acme, "tools/fact_forget", {"arguments": {}}).status_code == 404


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("prefetch", {}, "query"),
        ("prefetch", {"query": "x", "hot_restore": "yes"}, "hot_restore"),
        ("prefetch", {"query": "x", "settings": {"min_trust": 3}}, "settings.min_trust"),
        ("prefetch", {"query": "x", "scope": "no spaces here"}, "scope"),
        ("writes", {"writes": []}, "writes"),
        ("writes", {"writes": [{"key": "k-000001", "op": "poem", "payload": {}}]},
         "writes[0].op"),
        ("tools/fact_store", {"arguments": "add"}, "arguments"),
        ("session-end", {"said": ["x"]}, "key"),
    ],
)  # fmt: skip
def test_bad_input_is_a_400_naming_the_field(agents: Agents, path, body, field) -> None:
    answer = _post(agents.acme, path, body)
    assert answer.status_code == 400, answer.content
    assert answer.json()["field"] == field, answer.json()


def test_a_read_key_may_not_write_and_a_scope_limited_key_stays_in_its_scope(
    agents: Agents, tenant
) -> None:
    refused = _post(agents.reader, "writes", {"writes": [_turn("k-read-0001", [["user", "x"]])]})
    assert refused.status_code == 403
    assert fact_list(tenant=tenant, kind="turn").facts == []
    outside = _post(agents.limited, "prefetch", {"query": "launch codes", "scope": "project:gamma"})
    assert outside.status_code == 400 and outside.json()["field"] == "scope"
    inside = _post(agents.limited, "prefetch", {"query": "launch codes Fridays"}).json()
    assert ACME_SECRET not in inside["text"]
    assert ACME_SECRET not in _post(agents.limited, "prompt", {}).json()["text"]


def test_a_signed_in_person_is_not_an_agent(agents: Agents, owner) -> None:
    assert signed_in(owner).get("/api/v1/agent/whoami").status_code == 401
    answer = signed_in(owner).post("/api/v1/agent/prefetch", {"query": "x"}, format="json")
    assert answer.status_code == 401


def test_a_revoked_key_is_refused_at_its_next_request(agents: Agents, tenant, system_actor):
    from tenants.models import ApiKey
    from tenants.scope import tenant_scope

    assert _post(agents.acme, "prompt", {}).status_code == 200
    with tenant_scope(tenant):
        key_id = ApiKey.objects.for_tenant(tenant).get(name="hermes").pk
    apikey_revoke(tenant=tenant, key_id=key_id, actor=system_actor)
    assert _post(agents.acme, "prompt", {}).status_code == 401


def test_an_outsiders_key_reads_and_changes_nothing_of_another_tenant(
    agents: Agents, tenant
) -> None:
    spy = agents.globex
    seen = [
        bearer(spy).get("/api/v1/agent/whoami").content.decode(),
        _post(spy, "prompt", {}).content.decode(),
        _post(spy, "prefetch", {"query": "Northstar launch codes binder"}).content.decode(),
        _post(
            spy, "prefetch", {"query": "launch codes", "session_id": "chat-1", "hot_restore": True}
        ).content.decode(),  # fmt: skip
    ]
    for arguments in [
        {"action": "search", "query": "Northstar launch codes"},
        {"action": "probe", "entity": "Alice Chen"},
        {"action": "related", "entity": "Northstar"},
        {"action": "reason", "entities": ["Alice Chen", "Northstar"]},
        {"action": "contradict"},
        {"action": "list"},
        {"action": "list", "kind": "turn"},
    ]:
        seen.append(_post(spy, "tools/fact_store", {"arguments": arguments}).content.decode())
    everything = "\n".join(seen)
    assert "red binder" in everything  # its own tenant's memory
    assert "blue binder" not in everything and "Acme" not in everything

    target = agents.acme_fact
    changes = [
        ("tools/fact_store", {"arguments": {"action": "update", "fact_id": target,
                                            "content": "mine now"}}),
        ("tools/fact_store", {"arguments": {"action": "remove", "fact_id": target}}),
        ("tools/fact_feedback", {"arguments": {"action": "unhelpful", "fact_id": target}}),
        ("tools/fact_store", {"arguments": {"action": "add", "content": "spy was here",
                                            "tenant": "acme"}}),
        ("writes", {"writes": [{"key": "spy-00001", "op": "memory", "payload": {
            "action": "remove", "target": "memory", "old_text": "launch codes"}}]}),
    ]  # fmt: skip
    for path, body in changes:
        answer = _post(spy, path, body)
        assert answer.status_code in (200, 400), answer.content
        assert "blue binder" not in answer.content.decode()
    kept = fact_get(tenant=tenant, fact_id=target)
    assert kept.content == ACME_SECRET and kept.trust_score == 0.5 and kept.status == "active"
    assert "spy was here" not in [f.content for f in fact_list(tenant=tenant).facts]
