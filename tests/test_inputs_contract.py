"""Tables of bad input, sent to every surface that stores or changes a fact: the REST API, the
Hermes agent tool endpoint, the MCP tool (through the MCP SDK's client) and the admin page's
form. Each must refuse it naming the same field, because each parses through `facts.inputs`."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from facts.inputs import MAX_CONTENT_CHARS, MAX_TAG_CHARS, MAX_TAGS
from tests.api_fixtures import bearer
from tests.mcp_support import http_session, payload, run

GOOD = {"content": "Dana likes oolong", "scope": "user:dana", "category": "user_pref"}

# (what is wrong, the fields sent over GOOD, the field every surface must name)
BAD_FACTS = [
    ("blank content", {"content": "   "}, "content"),
    ("content too long", {"content": "x" * (MAX_CONTENT_CHARS + 1)}, "content"),
    ("a scope segment that is not type:name", {"scope": "user dana"}, "scope"),
    ("a scope too long", {"scope": "user:" + "a" * 300}, "scope"),
    ("an unknown category", {"category": "gossip"}, "category"),
    ("too many tags", {"tags": [f"t{n}" for n in range(MAX_TAGS + 1)]}, "tags"),
    ("a tag too long", {"tags": ["x" * (MAX_TAG_CHARS + 1)]}, "tags"),
]
CASES = [pytest.param(sent, field, id=name) for name, sent, field in BAD_FACTS]

# Changes to a stored fact (the page's edit form sends every field, so GOOD fills the others).
BAD_CHANGES = [
    ("blank content", {"content": "   "}, "content"),
    ("a scope segment that is not type:name", {"scope": "user dana"}, "scope"),
    ("an unknown category", {"category": "gossip"}, "category"),
    ("too many tags", {"tags": [f"t{n}" for n in range(MAX_TAGS + 1)]}, "tags"),
]
CHANGE_CASES = [pytest.param(sent, field, id=name) for name, sent, field in BAD_CHANGES]


@pytest.fixture
def write_key(tenant, system_actor) -> str:
    from tenants.services import apikey_create

    return apikey_create(tenant=tenant, name="hermes", actor=system_actor).token


@pytest.fixture
def stored_fact(tenant, system_actor) -> Any:
    from facts.inputs import fact_draft
    from facts.services import fact_add

    return fact_add(tenant=tenant, draft=fact_draft(GOOD), actor=system_actor).fact


def _unchanged(fact) -> bool:
    from facts.selectors.facts import fact_get

    now = fact_get(tenant=fact.tenant, fact_id=fact.pk)
    return (now.content, now.scope, now.category, now.tags) == (
        fact.content, fact.scope, fact.category, fact.tags
    )  # fmt: skip


def _stored(tenant) -> int:
    from facts.selectors.facts import fact_count

    return fact_count(tenant=tenant, status=None)


def _named(body: dict[str, Any], field: str) -> bool:
    """The REST API's error body names the field (a list's item counts: tags[0] is tags)."""
    names = [body.get("field") or ""] + [e.get("field") or "" for e in body.get("errors", [])]
    return any(name == field or name.startswith(f"{field}[") for name in names)


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "field"), CASES)
def test_the_rest_api_names_the_field(tenant, write_key, sent, field) -> None:
    answer = bearer(write_key).post("/api/v1/facts", {**GOOD, **sent}, format="json")
    assert answer.status_code == 400, answer.content
    assert _named(answer.json(), field), answer.json()
    assert _stored(tenant) == 0


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "field"), CASES)
def test_the_agent_tool_names_the_field(tenant, write_key, sent, field) -> None:
    arguments = {"action": "add", **GOOD, **sent}
    answer = bearer(write_key).post(
        "/api/v1/agent/tools/fact_store", {"arguments": arguments}, format="json"
    )
    assert answer.status_code == 400, answer.content
    body = answer.json()
    assert body["field"] == field and body["error"].startswith(f"{field}: "), body
    assert _stored(tenant) == 0


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "field"), CASES)
def test_the_page_form_names_the_field(tenant, owner, sent, field) -> None:
    client = Client()
    client.force_login(owner)
    form = {**GOOD, **sent}
    if isinstance(form.get("tags"), list):
        form["tags"] = ", ".join(form["tags"])  # the page takes tags separated by commas
    answer = client.post(f"/t/{tenant.slug}/facts/new/", form)
    assert answer.status_code == 400
    errors = answer.context["form"].errors
    assert field in errors, errors
    assert _stored(tenant) == 0


@pytest.mark.django_db(transaction=True)
def test_the_mcp_tool_names_the_field(live_server, mcp_team) -> None:
    async def store_each() -> list[dict[str, Any]]:
        async with http_session(live_server.url, mcp_team.write) as session:
            return [
                payload(await session.call_tool("memory_store", {**GOOD, **sent}))
                for _name, sent, _field in BAD_FACTS
            ]

    answers = run(store_each)
    for (name, _sent, field), answer in zip(BAD_FACTS, answers, strict=True):
        assert str(answer.get("error", "")).startswith(f"{field}: "), (name, answer)
    assert _stored(mcp_team.tenant) == 0


# -- changes ------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "field"), CHANGE_CASES)
def test_the_rest_api_names_the_field_of_a_change(write_key, stored_fact, sent, field) -> None:
    url = f"/api/v1/facts/{stored_fact.pk}"
    answer = bearer(write_key).patch(url, sent, format="json")
    assert answer.status_code == 400, answer.content
    assert _named(answer.json(), field), answer.json()
    assert _unchanged(stored_fact)


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "field"), CHANGE_CASES)
def test_the_agent_tool_names_the_field_of_a_change(write_key, stored_fact, sent, field) -> None:
    arguments = {"action": "update", "fact_id": stored_fact.pk, **sent}
    answer = bearer(write_key).post(
        "/api/v1/agent/tools/fact_store", {"arguments": arguments}, format="json"
    )
    assert answer.status_code == 400, answer.content
    body = answer.json()
    assert body["field"] == field and body["error"].startswith(f"{field}: "), body
    assert _unchanged(stored_fact)


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "field"), CHANGE_CASES)
def test_the_edit_form_names_the_field(tenant, owner, stored_fact, sent, field) -> None:
    client = Client()
    client.force_login(owner)
    form = {**GOOD, **sent}
    if isinstance(form.get("tags"), list):
        form["tags"] = ", ".join(form["tags"])
    answer = client.post(f"/t/{tenant.slug}/facts/{stored_fact.pk}/edit", form)
    assert answer.status_code == 400
    errors = answer.context["edit_form"].errors
    assert field in errors, errors
    assert _unchanged(stored_fact)


@pytest.mark.django_db(transaction=True)
def test_the_mcp_tool_names_the_field_of_a_change(live_server, mcp_team, system_actor) -> None:
    from facts.inputs import fact_draft
    from facts.services import fact_add

    fact = fact_add(tenant=mcp_team.tenant, draft=fact_draft(GOOD), actor=system_actor).fact

    async def change_each() -> list[dict[str, Any]]:
        async with http_session(live_server.url, mcp_team.write) as session:
            return [
                payload(await session.call_tool("memory_update", {"fact_id": fact.pk, **sent}))
                for _name, sent, _field in BAD_CHANGES
            ]

    answers = run(change_each)
    for (name, _sent, field), answer in zip(BAD_CHANGES, answers, strict=True):
        assert str(answer.get("error", "")).startswith(f"{field}: "), (name, answer)
    assert _unchanged(fact)


# -- entity curation and conflict decisions (the REST API and the admin pages; no agent or MCP
# tool curates entities or decides conflicts) ----------------------------------------------------

# (what is wrong, the fields sent, the field the REST API names, what the page's message says):
# the page's forms ask for one value each and show the refusal's message.
BAD_RENAMES = [
    ("a blank name", {"name": "   "}, "name", "must be a non-empty name"),
    ("a name too long", {"name": "x" * 201}, "name", "is longer than 200 characters"),
    ("a name another entity has", {"name": "Bob"}, "name", "already answers to this name"),
    ("an unknown type", {"type": "planet"}, "type", "must be one of"),
]
RENAME_CASES = [pytest.param(sent, field, said, id=name) for name, sent, field, said in BAD_RENAMES]

BAD_DECISIONS = [
    ("an unknown decision", {"decision": "both"}, "decision", "must be one of"),
    ("no decision", {"note": "hm"}, "decision", "must be one of"),
    ("a note too long", {"decision": "dismiss", "note": "x" * 1001}, "note",
     "must be text of at most 1000 characters"),
]  # fmt: skip
DECISION_CASES = [
    pytest.param(sent, field, said, id=name) for name, sent, field, said in BAD_DECISIONS
]


@pytest.fixture
def alice(tenant, system_actor) -> Any:
    """The entity Alice, with Bob beside her (whose name she may not take)."""
    from facts.inputs import fact_draft
    from facts.selectors.entities import entity_list
    from facts.services import fact_add

    for text in ("Alice owns Atlas.", "Bob reviews releases."):
        fact_add(tenant=tenant, draft=fact_draft({"content": text}), actor=system_actor)
    return entity_list(tenant=tenant, query="alice").entities[0]


@pytest.fixture
def conflict(tenant, system_actor) -> Any:
    from facts.inputs import fact_draft
    from facts.models import Conflict
    from facts.services import fact_add
    from tenants.scope import tenant_scope

    first, second = (
        fact_add(tenant=tenant, draft=fact_draft({"content": text}), actor=system_actor).fact
        for text in ("Tom drives a Tesla.", "Tom drives a Volvo.")
    )
    with tenant_scope(tenant):
        return Conflict.objects.create(
            tenant=tenant, fact_a=first, fact_b=second, reason="value", score=0.8,
            detected_by="job:tests",
        )  # fmt: skip


def _entity_unchanged(entity) -> bool:
    from facts.selectors.entities import entity_get

    now = entity_get(tenant=entity.tenant, entity_id=entity.pk)
    return (now.name, now.type, now.aliases) == (entity.name, entity.type, entity.aliases)


def _open(conflict) -> bool:
    from facts.selectors.conflicts import conflict_get

    return conflict_get(tenant=conflict.tenant, conflict_id=conflict.pk).status == "open"


def _page_error(client: Client, url: str, form: dict[str, Any]) -> str:
    """POST a page's form; the one error message it leaves for the page it redirects to."""
    from django.contrib.messages import ERROR, get_messages

    answer = client.post(url, form)
    assert answer.status_code == 302, answer.content
    errors = [m.message for m in get_messages(answer.wsgi_request) if m.level == ERROR]
    assert len(errors) == 1, errors
    return str(errors[0])


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "field", "said"), RENAME_CASES)
def test_the_rest_api_names_the_field_of_an_entity_change(
    tenant, owner, alice, sent, field, said
) -> None:
    from tests.api_fixtures import signed_in

    url = f"/api/v1/tenants/{tenant.slug}/entities/{alice.pk}"
    answer = signed_in(owner).patch(url, sent, format="json")
    assert answer.status_code == 400, answer.content
    assert _named(answer.json(), field), answer.json()
    assert _entity_unchanged(alice)


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "field", "said"), RENAME_CASES)
def test_the_entity_page_refuses_a_bad_change(tenant, owner, alice, sent, field, said) -> None:
    client = Client()
    client.force_login(owner)
    action = "rename" if field == "name" else "type"
    message = _page_error(client, f"/t/{tenant.slug}/entities/{alice.pk}/{action}", sent)
    assert said in message, message
    assert _entity_unchanged(alice)


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "field", "said"), DECISION_CASES)
def test_the_rest_api_names_the_field_of_a_decision(
    tenant, owner, conflict, sent, field, said
) -> None:
    from tests.api_fixtures import signed_in

    url = f"/api/v1/tenants/{tenant.slug}/conflicts/{conflict.pk}/resolve"
    answer = signed_in(owner).post(url, sent, format="json")
    assert answer.status_code == 400, answer.content
    assert _named(answer.json(), field), answer.json()
    assert _open(conflict)


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "field", "said"), DECISION_CASES)
def test_the_conflict_page_refuses_a_bad_decision(
    tenant, owner, conflict, sent, field, said
) -> None:
    client = Client()
    client.force_login(owner)
    message = _page_error(client, f"/t/{tenant.slug}/conflicts/{conflict.pk}/resolve", sent)
    assert said in message, message
    assert _open(conflict)


# -- the entity graph's reads: the REST API, the agent tool, the MCP tool and the reason page ------

# (what is wrong, the names asked about, what every surface says): each surface names its own
# parameter (REST `name`, the agent tool `entities`, the page `names`), parsed by
# `facts.inputs.entity_names`.
BAD_NAME_LISTS = [
    ("too many names", [f"person {n}" for n in range(11)], "at most 10 names"),
    ("a name too long", ["Alice", "x" * 201], "200 characters"),
]
NAME_LIST_CASES = [pytest.param(names, said, id=name) for name, names, said in BAD_NAME_LISTS]

# (what is wrong, the entity asked about, what the agent and MCP tools say of `entity`)
BAD_ENTITIES = [
    ("a blank entity", "   ", ""),
    ("an entity too long", "x" * 201, "200 characters"),
]
ENTITY_CASES = [pytest.param(entity, said, id=name) for name, entity, said in BAD_ENTITIES]


@pytest.mark.django_db
@pytest.mark.parametrize(("names", "said"), NAME_LIST_CASES)
def test_the_rest_api_refuses_a_bad_list_of_entities(tenant, owner, alice, names, said) -> None:
    from tests.api_fixtures import signed_in

    answer = signed_in(owner).get(f"/api/v1/tenants/{tenant.slug}/entities/reason", {"name": names})
    assert answer.status_code == 400, answer.content
    assert _named(answer.json(), "name"), answer.json()


@pytest.mark.django_db
@pytest.mark.parametrize(("names", "said"), NAME_LIST_CASES)
def test_the_agent_tool_refuses_a_bad_list_of_entities(
    tenant, write_key, alice, names, said
) -> None:
    answer = bearer(write_key).post(
        "/api/v1/agent/tools/fact_store",
        {"arguments": {"action": "reason", "entities": names}},
        format="json",
    )
    assert answer.status_code == 400, answer.content
    body = answer.json()
    assert body["field"] == "entities" and said in body["error"], body


@pytest.mark.django_db
@pytest.mark.parametrize(("names", "said"), NAME_LIST_CASES)
def test_the_reason_page_refuses_a_bad_list_of_entities(tenant, owner, alice, names, said) -> None:
    client = Client()
    client.force_login(owner)
    answer = client.get(f"/t/{tenant.slug}/entities/reason/", {"names": ", ".join(names)})
    assert answer.status_code == 400
    assert said in answer.context["error"], answer.context["error"]
    assert answer.context["hits"] == []


@pytest.mark.django_db
@pytest.mark.parametrize(("entity", "said"), ENTITY_CASES)
def test_the_agent_tool_refuses_a_bad_entity(tenant, write_key, alice, entity, said) -> None:
    for action in ("probe", "related"):
        answer = bearer(write_key).post(
            "/api/v1/agent/tools/fact_store",
            {"arguments": {"action": action, "entity": entity}},
            format="json",
        )
        assert answer.status_code == 400, answer.content
        body = answer.json()
        assert body["field"] == "entity" and said in body["error"], body


@pytest.mark.django_db(transaction=True)
def test_the_mcp_tool_refuses_a_bad_entity(live_server, mcp_team) -> None:
    async def ask_each() -> list[dict[str, Any]]:
        async with http_session(live_server.url, mcp_team.write) as session:
            return [
                payload(await session.call_tool(tool, {"entity": entity}))
                for tool in ("memory_probe", "memory_related")
                for _name, entity, _said in BAD_ENTITIES
            ]

    answers = run(ask_each)
    cases = [case for _tool in ("memory_probe", "memory_related") for case in BAD_ENTITIES]
    for (name, _entity, said), answer in zip(cases, answers, strict=True):
        error = str(answer.get("error", ""))
        assert error.startswith("entity: ") and said in error, (name, answer)


@pytest.mark.django_db
def test_a_good_graph_read_answers_on_every_surface(tenant, owner, write_key, alice) -> None:
    """The same parsers let good input through: Alice is found by each surface."""
    from tests.api_fixtures import signed_in

    rest = signed_in(owner).get(
        f"/api/v1/tenants/{tenant.slug}/entities/reason", {"name": ["alice"]}
    )
    assert rest.status_code == 200 and "Alice owns Atlas." in rest.content.decode()
    tool = bearer(write_key).post(
        "/api/v1/agent/tools/fact_store",
        {"arguments": {"action": "probe", "entity": " Alice "}},
        format="json",
    )
    assert tool.status_code == 200 and "Alice owns Atlas." in tool.content.decode()
    client = Client()
    client.force_login(owner)
    page = client.get(f"/t/{tenant.slug}/entities/reason/", {"names": "Alice"})
    assert page.status_code == 200 and "Alice owns Atlas." in page.content.decode()


# -- scopes: the same words on every surface ------------------------------------------------------

BAD_SCOPES = [
    pytest.param("user dana", id="not type:name"),
    pytest.param("user:" + "a" * 300, id="too long"),
    pytest.param("user:dana/Project:x", id="an uppercase type"),
]


def _scope_refusal(scope: str) -> str:
    """What every surface says of `scope` (InvalidInput's message, the field not in it)."""
    from tenants.errors import InvalidInput
    from tenants.inputs import scope_checked

    with pytest.raises(InvalidInput) as refused:
        scope_checked(scope)
    assert refused.value.field == "scope"
    return refused.value.message


@pytest.mark.django_db
@pytest.mark.parametrize("scope", BAD_SCOPES)
def test_the_rest_routes_refuse_a_bad_scope_in_the_same_words(tenant, write_key, scope) -> None:
    said = _scope_refusal(scope)
    client = bearer(write_key)
    answers = {
        "store": client.post("/api/v1/facts", {**GOOD, "scope": scope}, format="json"),
        "list": client.get("/api/v1/facts", {"scope": scope}),
        "recall": client.post("/api/v1/recall", {"query": "tea", "scope": scope}, format="json"),
        "context": client.post("/api/v1/context", {"query": "tea", "scope": scope},
                               format="json"),  # fmt: skip
        "prefetch": client.post("/api/v1/agent/prefetch", {"query": "tea", "scope": scope},
                                format="json"),
    }  # fmt: skip
    for route, answer in answers.items():
        assert answer.status_code == 400, (route, answer.content)
        body = answer.json()
        assert (body["field"], body["message"]) == ("scope", said), (route, body)
    assert _stored(tenant) == 0


@pytest.mark.django_db
@pytest.mark.parametrize("scope", BAD_SCOPES)
def test_the_agent_tools_refuse_a_bad_scope_in_the_same_words(tenant, write_key, scope) -> None:
    said = _scope_refusal(scope)
    for arguments in (
        {"action": "add", **GOOD, "scope": scope},
        {"action": "search", "query": "tea", "scope": scope},
        {"action": "list", "scope": scope},
    ):
        answer = bearer(write_key).post(
            "/api/v1/agent/tools/fact_store", {"arguments": arguments}, format="json"
        )
        assert answer.status_code == 400, (arguments["action"], answer.content)
        assert answer.json()["error"] == f"scope: {said}", answer.json()
    assert _stored(tenant) == 0


@pytest.mark.django_db
@pytest.mark.parametrize("scope", BAD_SCOPES)
def test_the_pages_refuse_a_bad_scope_in_the_same_words(tenant, owner, scope) -> None:
    said = _scope_refusal(scope)
    client = Client()
    client.force_login(owner)
    answers = {
        "new fact": client.post(f"/t/{tenant.slug}/facts/new/", {**GOOD, "scope": scope}),
        "browser": client.get(f"/t/{tenant.slug}/facts/", {"scope": scope}),
        "recall": client.get(f"/t/{tenant.slug}/recall/", {"q": "tea", "scope": scope}),
        "hermes": client.get(f"/t/{tenant.slug}/connect/", {"scope": scope}),
    }
    for page, answer in answers.items():
        assert answer.status_code in (200, 400), (page, answer.status_code)
        assert answer.context["form"].errors.get("scope") == [said], page
    assert _stored(tenant) == 0


@pytest.mark.django_db(transaction=True)
def test_the_mcp_tools_refuse_a_bad_scope_in_the_same_words(live_server, mcp_team) -> None:
    scopes = [p.values[0] for p in BAD_SCOPES]
    calls = [("memory_store", {**GOOD}), ("memory_search", {"query": "tea"}),
             ("memory_context", {"task": "tea"}), ("memory_recent", {})]  # fmt: skip

    async def call_each() -> list[dict[str, Any]]:
        async with http_session(live_server.url, mcp_team.write) as session:
            return [
                payload(await session.call_tool(tool, {**arguments, "scope": scope}))
                for scope in scopes
                for tool, arguments in calls
            ]

    answers = iter(run(call_each))
    for scope in scopes:
        said = _scope_refusal(scope)
        for tool, _arguments in calls:
            assert next(answers).get("error") == f"scope: {said}", tool
    assert _stored(mcp_team.tenant) == 0


@pytest.mark.django_db
def test_a_scope_outside_the_keys_is_refused_in_the_same_words(tenant, system_actor) -> None:
    """A key limited to team:a: storing elsewhere, through REST or its agent tool, is refused
    with one sentence."""
    from tenants.services import apikey_create

    token = apikey_create(tenant=tenant, name="team-a", actor=system_actor,
                          scope_prefix="team:a").token  # fmt: skip
    said = "is outside this API key's scope 'team:a'"
    rest = bearer(token).post("/api/v1/facts", {**GOOD, "scope": "team:b"}, format="json")
    assert rest.status_code == 400 and rest.json()["message"] == said, rest.content
    tool = bearer(token).post(
        "/api/v1/agent/tools/fact_store",
        {"arguments": {"action": "add", **GOOD, "scope": "team:b"}},
        format="json",
    )
    assert tool.status_code == 400 and tool.json()["error"] == f"scope: {said}", tool.content
    assert _stored(tenant) == 0
