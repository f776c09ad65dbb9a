"""Recall's filters on every surface: several scopes at once, an exact scope, metadata fields and
a time range, on REST (`/api/v1/recall`), on the Hermes provider inside the real hermes-agent
(`fact_store` search and the profile's `read_scopes`) and on MCP (the SDK's own client over
HTTP). Each filter holds, applies before ranking, never widens what a key limited to a scope may
read, and an outsider gets nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from facts.embedding import facts_embed_batch
from facts.inputs import fact_draft
from facts.selectors.facts import fact_get
from facts.services import fact_add
from hermes_provider.config import update_config
from retrieval.inputs import recall_query
from retrieval.search import recall_search
from tenants.errors import InvalidInput
from tenants.scope import scope_limit_reset, scope_limit_set
from tenants.services import apikey_create
from tests.hermes_support import manager_for, tool, write_profile
from tests.mcp_support import http_session, payload, run

pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "deploy notes"
# name: (content, scope, metadata, age)
FACTS = {
    "alice": ("Deploy notes: Alice ships with blue-green", "user:alice",
              {"source": "standup"}, timedelta(days=1)),
    "infra": ("Deploy notes: infra rotates the signing keys", "team:infra",
              {"source": "retro"}, timedelta(days=30)),
    "oncall": ("Deploy notes: the infra on-call rota", "team:infra/rota:oncall",
               {"source": "standup", "priority": 2}, timedelta(days=2)),
    "bob": ("Deploy notes: Bob prefers canaries", "user:bob", {}, timedelta(hours=1)),
}  # fmt: skip


@pytest.fixture(autouse=True)
def _no_task_messages_left():
    """Every write sends an embedding task to the test run's broker, where no worker takes it."""
    yield
    from memoryadmin.celery import app

    with app.connection_for_write() as broker:
        broker.default_channel.queue_purge("celery")


@pytest.fixture
def ids(tenant, other_tenant, system_actor) -> dict[str, int]:
    now = timezone.now()
    made = {}
    for name, (content, scope, metadata, age) in FACTS.items():
        draft = fact_draft(
            {"content": content, "scope": scope, "metadata": metadata, "created_at": now - age}
        )
        made[name] = fact_add(tenant=tenant, draft=draft, actor=system_actor).fact.pk
    # Another tenant's fact in the same scope, with the same metadata: never anyone else's.
    foreign = fact_draft(
        {
            "content": "Deploy notes: Globex keeps its own runbook",
            "scope": "user:alice",
            "metadata": {"source": "standup"},
        }
    )
    made["globex"] = fact_add(tenant=other_tenant, draft=foreign, actor=system_actor).fact.pk
    return made


def _names(ids: dict[str, int], found: list[int]) -> set[str]:
    by_id = {pk: name for name, pk in ids.items()}
    return {by_id.get(pk, f"#{pk}") for pk in found}


# Each filter, and the facts it leaves (of alice, infra, oncall, bob).
CASES = [
    ({"scopes": ["user:alice", "team:infra"]}, {"alice", "infra", "oncall"}),
    ({"scopes": ["user:alice", "team:infra"], "scope_exact": True}, {"alice", "infra"}),
    ({"scope": "team:infra", "scope_exact": True}, {"infra"}),
    ({"scope": "team:infra"}, {"infra", "oncall"}),
    ({"metadata": {"source": "standup"}}, {"alice", "oncall"}),
    ({"metadata": {"source": "standup", "priority": 2}}, {"oncall"}),
    ({"metadata": {"source": "nowhere"}}, set()),
    ({"since": "7d"}, {"alice", "oncall", "bob"}),
    ({"until": "7d"}, {"infra"}),
    ({"since": "36h", "scopes": ["user:alice", "user:bob"]}, {"alice", "bob"}),
]
BAD = [
    ({"since": "last week"}, "since"),
    ({"until": "2026-13-40"}, "until"),
    ({"since": "1d", "until": "2d"}, "until"),
    ({"metadata": {"source": {"nested": 1}}}, "metadata"),
    ({"metadata": ["source"]}, "metadata"),
    ({"scopes": [["user:alice"]]}, "scopes"),
    ({"scope_exact": True}, "scope_exact"),
    ({"scope": "user:alice", "scopes": ["team:infra"]}, "scopes"),
]


# -- REST --------------------------------------------------------------------------------------


def _rest(client, token: str, **body):
    return client.post(
        "/api/v1/recall",
        {"query": QUERY, "k": 20, **body},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def test_each_filter_holds_on_rest(client, tenant, ids, system_actor) -> None:
    token = apikey_create(tenant=tenant, name="reader", actor=system_actor).token
    assert _names(ids, [h["fact"]["id"] for h in _rest(client, token).json()["results"]]) == {
        "alice", "infra", "oncall", "bob"
    }  # fmt: skip
    for given, wanted in CASES:
        answer = _rest(client, token, **given)
        assert answer.status_code == 200, (given, answer.content)
        found = [hit["fact"]["id"] for hit in answer.json()["results"]]
        assert _names(ids, found) == wanted, given
    for given, field in BAD:
        answer = _rest(client, token, **given)
        assert answer.status_code == 400, given
        # DRF names an item of a list by its index: scopes[0].
        assert answer.json()["field"].split("[")[0] == field, (given, answer.json())


def test_the_context_block_reads_several_scopes_on_rest(client, tenant, ids, system_actor) -> None:
    token = apikey_create(tenant=tenant, name="reader", actor=system_actor).token
    answer = client.post(
        "/api/v1/context",
        {"query": QUERY, "scopes": ["user:alice", "team:infra"]},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert answer.status_code == 200, answer.content
    text = answer.json()["text"]
    assert all(FACTS[name][0] in text for name in ("alice", "infra", "oncall")), text
    assert FACTS["bob"][0] not in text and "Globex" not in text


def test_a_scope_limited_key_asking_outside_its_limit_gets_an_error_and_nothing_on_rest(
    client, tenant, ids, system_actor
) -> None:
    token = apikey_create(
        tenant=tenant, name="infra", actor=system_actor, scope_prefix="team:infra"
    ).token
    assert _names(ids, [h["fact"]["id"] for h in _rest(client, token).json()["results"]]) == {
        "infra", "oncall"
    }  # fmt: skip
    for given, field in (
        ({"scopes": ["team:infra", "user:alice"]}, "scopes"),
        ({"scope": "user:alice"}, "scope"),
        ({"scope": "team:infra2"}, "scope"),
    ):
        answer = _rest(client, token, **given)
        assert answer.status_code == 400 and answer.json()["field"] == field, given
        assert "results" not in answer.json()
    # "" is the key's own limit, as where it writes: not the whole tenant.
    own = _rest(client, token, scopes=["", "team:infra/rota:oncall"]).json()
    assert _names(ids, [h["fact"]["id"] for h in own["results"]]) == {"infra", "oncall"}
    exact = _rest(client, token, scopes=["team:infra/rota:oncall"], scope_exact=True).json()
    assert _names(ids, [h["fact"]["id"] for h in exact["results"]]) == {"oncall"}
    context = client.post(
        "/api/v1/context",
        {"query": QUERY, "scopes": ["team:infra", "user:alice"]},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert context.status_code == 400 and context.json()["field"] == "scopes"
    standup = _rest(client, token, metadata={"source": "standup"}).json()
    assert _names(ids, [h["fact"]["id"] for h in standup["results"]]) == {"oncall"}


def test_an_outsider_gets_nothing_of_this_tenant_through_any_filter_on_rest(
    client, other_tenant, ids, system_actor
) -> None:
    token = apikey_create(tenant=other_tenant, name="spy", actor=system_actor).token
    for given, _ in CASES:
        found = {h["fact"]["id"] for h in _rest(client, token, **given).json()["results"]}
        assert found <= {ids["globex"]}, given
    both = _rest(client, token, scopes=["user:alice"], metadata={"source": "standup"}).json()
    assert [h["fact"]["id"] for h in both["results"]] == [ids["globex"]]


def test_filters_apply_before_ranking_so_k_is_not_eaten_by_filtered_out_facts(
    tenant, system_actor
) -> None:
    """Two hundred facts match the words better; the one the filters keep is still found."""
    now = timezone.now()
    for n in range(200):
        draft = fact_draft(
            {"content": f"Release checklist release checklist step {n}", "scope": "user:bob",
             "created_at": now - timedelta(days=40)}
        )  # fmt: skip
        fact_add(tenant=tenant, draft=draft, actor=system_actor)
    kept = fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft(
            {"content": "The release checklist lives in the wiki", "scope": "team:infra",
             "metadata": {"source": "wiki"}}
        ),
    ).fact  # fmt: skip
    while facts_embed_batch(tenant=tenant, limit=256):
        pass  # every fact a vector: the vector channel's candidates are filtered too
    for channels in (None, ["fts"], ["vec"]):
        for given in (
            {"scopes": ["team:infra", "user:carol"]},
            {"scope": "team:infra", "scope_exact": True},
            {"metadata": {"source": "wiki"}},
            {"since": "7d"},
        ):
            query = recall_query(
                {"query": "release checklist", "k": 1, "channels": channels, **given}
            )
            hits = recall_search(tenant=tenant, query=query).hits
            assert [hit.fact.pk for hit in hits] == [kept.pk], (channels, given)


def test_the_parser_refuses_a_scope_outside_the_limit_even_without_a_surface() -> None:
    token = scope_limit_set("team:infra")
    try:
        with pytest.raises(InvalidInput) as refused:
            recall_query({"query": QUERY, "scopes": ["team:infra", "team:infra2"]})
        assert refused.value.field == "scopes"
        assert recall_query({"query": QUERY, "scopes": ["team:infra/rota:x"]}).scopes == (
            "team:infra/rota:x",
        )
    finally:
        scope_limit_reset(token)


# -- Hermes ------------------------------------------------------------------------------------


@pytest.fixture
def drive(monkeypatch):
    managers = []

    def start(home: Path):
        manager, provider = manager_for(home, monkeypatch)
        managers.append(manager)
        return manager

    yield start
    for manager in managers:
        manager.shutdown_all()


def _searched(manager, **args) -> dict:
    return tool(manager, "fact_store", action="search", query=QUERY, limit=20, **args)


def test_each_filter_holds_on_the_hermes_tools(
    tmp_path: Path, drive, tenant, ids, system_actor, live_server
) -> None:
    token = apikey_create(tenant=tenant, name="coder", actor=system_actor).token
    manager = drive(write_profile(tmp_path / "hermes", token, live_server.url))
    for given, wanted in CASES:
        answer = _searched(manager, **given)
        assert "error" not in answer, (given, answer)
        assert _names(ids, [row["fact_id"] for row in answer["results"]]) == wanted, given
    for given, field in BAD:
        answer = _searched(manager, **given)
        assert answer["error"].startswith(f"{field}:"), (given, answer)


def test_read_scopes_make_prefetch_and_search_read_both_scopes(
    tmp_path: Path, drive, tenant, ids, system_actor, live_server
) -> None:
    token = apikey_create(tenant=tenant, name="alice", actor=system_actor).token
    home = write_profile(
        tmp_path / "hermes", token, live_server.url, read_scopes=["user:alice", "team:infra"]
    )
    # Set here rather than by the installer, whose check of a scope waits only 15 s for a
    # server that may still be loading its models.
    update_config(home / "config.yaml", {"plugins.mnemosyne.scope": "user:alice"})
    manager = drive(home)
    block = manager.prefetch_all("What are the deploy notes?")
    for name in ("alice", "infra", "oncall"):
        assert FACTS[name][0] in block, name
    assert FACTS["bob"][0] not in block and "Globex" not in block
    found = _searched(manager)
    assert _names(ids, [row["fact_id"] for row in found["results"]]) == {
        "alice", "infra", "oncall"
    }  # fmt: skip
    # A scope named in the call reads that scope; writes still go to the profile's scope.
    assert _names(ids, [r["fact_id"] for r in _searched(manager, scope="user:bob")["results"]]) == {
        "bob"
    }  # fmt: skip
    added = tool(manager, "fact_store", action="add", content="Alice deploys on Tuesdays")
    assert added["status"] == "added"
    assert fact_get(tenant=tenant, fact_id=added["fact_id"]).scope == "user:alice"


def test_a_scope_limited_profile_gets_an_error_for_a_scope_outside_its_key(
    tmp_path: Path, drive, tenant, ids, system_actor, live_server
) -> None:
    token = apikey_create(
        tenant=tenant, name="infra", actor=system_actor, scope_prefix="team:infra"
    ).token
    manager = drive(write_profile(tmp_path / "hermes", token, live_server.url))
    refused = _searched(manager, scopes=["team:infra", "user:alice"])
    assert refused["error"].startswith("scopes:") and "results" not in refused
    inside = _searched(manager, scopes=["team:infra"], scope_exact=True)
    assert _names(ids, [row["fact_id"] for row in inside["results"]]) == {"infra"}
    # read_scopes outside the key: the profile's prefetch is refused, never widened.
    wider = write_profile(
        tmp_path / "wider", token, live_server.url, read_scopes=["team:infra", "user:alice"]
    )
    wide = drive(wider)
    block = wide.prefetch_all("What are the deploy notes?")
    assert FACTS["alice"][0] not in block and FACTS["infra"][0] not in block
    refused = _searched(wide)
    assert refused["error"].startswith("read_scopes:") and "results" not in refused
    # What it reads is refused; what it writes is still stored, in its key's scope.
    added = tool(wide, "fact_store", action="add", content="Infra deploys on Thursdays")
    assert fact_get(tenant=tenant, fact_id=added["fact_id"]).scope == "team:infra"


def test_an_outsider_profile_gets_nothing_of_this_tenant(
    tmp_path: Path, drive, other_tenant, ids, system_actor, live_server
) -> None:
    token = apikey_create(tenant=other_tenant, name="spy", actor=system_actor).token
    home = write_profile(
        tmp_path / "globex", token, live_server.url, read_scopes=["user:alice", "team:infra"]
    )
    manager = drive(home)
    for given, _ in CASES:
        found = {row["fact_id"] for row in _searched(manager, **given)["results"]}
        assert found <= {ids["globex"]}, given
    block = manager.prefetch_all("What are the deploy notes?")
    assert "Globex keeps its own runbook" in block
    assert not any(content in block for content, *_ in FACTS.values())


# -- MCP ---------------------------------------------------------------------------------------


def _mcp(
    url: str, token: str, calls: list[dict], name: str = "memory_search"
) -> list[tuple[bool, dict]]:
    async def go() -> list[tuple[bool, dict]]:
        answers = []
        given = {"query": QUERY, "k": 20} if name == "memory_search" else {"task": QUERY}
        async with http_session(url, token) as session:
            for arguments in calls:
                result = await session.call_tool(name, {**given, **arguments})
                answers.append((bool(result.isError), payload(result)))
        return answers

    return run(go)


def test_each_filter_holds_on_mcp(tenant, ids, system_actor, live_server) -> None:
    token = apikey_create(tenant=tenant, name="zed", actor=system_actor).token
    answers = _mcp(live_server.url, token, [given for given, _ in CASES + BAD])
    for (given, wanted), (failed, answer) in zip(CASES, answers, strict=False):
        assert not failed, (given, answer)
        assert _names(ids, [row["fact_id"] for row in answer["results"]]) == wanted, given
    for (given, field), (failed, answer) in zip(BAD, answers[len(CASES) :], strict=True):
        assert failed and answer["error"].startswith(f"{field}:"), (given, answer)
    [(failed, context)] = _mcp(
        live_server.url, token, [{"scopes": ["user:alice", "team:infra"]}], "memory_context"
    )
    assert not failed and all(FACTS[n][0] in context["text"] for n in ("alice", "infra", "oncall"))
    assert FACTS["bob"][0] not in context["text"] and "Globex" not in context["text"]


def test_a_scope_limited_key_and_an_outsider_on_mcp(
    tenant, other_tenant, ids, system_actor, live_server
) -> None:
    limited = apikey_create(
        tenant=tenant, name="infra", actor=system_actor, scope_prefix="team:infra"
    ).token
    refused, inside = _mcp(
        live_server.url,
        limited,
        [{"scopes": ["user:alice", "team:infra"]}, {"metadata": {"source": "retro"}}],
    )
    assert refused[0] and refused[1]["error"].startswith("scopes:")
    [(failed, wider)] = _mcp(
        live_server.url, limited, [{"scopes": ["team:infra", "user:alice"]}], "memory_context"
    )
    assert failed and wider["error"].startswith("scopes:") and "text" not in wider
    assert _names(ids, [row["fact_id"] for row in inside[1]["results"]]) == {"infra"}
    spy = apikey_create(tenant=other_tenant, name="spy", actor=system_actor).token
    for failed, answer in _mcp(live_server.url, spy, [given for given, _ in CASES]):
        assert not failed and {row["fact_id"] for row in answer["results"]} <= {ids["globex"]}


def test_the_tools_state_the_filters_the_parser_takes() -> None:
    from agentspec.filters import RECALL_FILTERS
    from agentspec.hermes import FACT_STORE_SCHEMA
    from agentspec.mcp import TOOLS
    from retrieval.inputs import QUERY_FIELDS

    assert set(RECALL_FILTERS) <= set(QUERY_FIELDS)
    search = next(spec for spec in TOOLS if spec.name == "memory_search")
    assert set(RECALL_FILTERS) <= set(search.properties)
    assert set(RECALL_FILTERS) <= set(FACT_STORE_SCHEMA["parameters"]["properties"])
    assert json.dumps(RECALL_FILTERS)  # plain data


def test_read_scopes_in_the_profile_configuration_are_a_list_or_one_text(tmp_path: Path) -> None:
    from hermes_provider.config import parse_section

    listed = parse_section({"read_scopes": ["user:alice", "team:infra/"]}, tmp_path)
    written = parse_section({"read_scopes": "user:alice, team:infra"}, tmp_path)
    assert listed.read_scopes == written.read_scopes == ["user:alice", "team:infra"]
    wrong = parse_section({"read_scopes": {"user": "alice"}}, tmp_path)
    assert wrong.read_scopes == []
    assert wrong.problems == ["plugins.mnemosyne.read_scopes must be a list of scopes; ignored"]
