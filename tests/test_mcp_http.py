"""The MCP server at /mcp, driven by the MCP SDK's own client over Streamable HTTP against a
live server: tools for each kind of key, store / search / feedback / context, resources and
the prompt, bad arguments, another tenant's facts, revoked keys, the API's rate limit."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import McpError

from tests.mcp_support import (
    READ_TOOLS,
    WRITE_TOOLS,
    http_session,
    payload,
    run,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_write_key_sees_every_tool_and_a_read_key_only_those_that_read(
    live_server, mcp_team
) -> None:
    async def tools(token: str) -> dict[str, Any]:
        async with http_session(live_server.url, token) as session:
            return {tool.name: tool for tool in (await session.list_tools()).tools}

    every = run(lambda: tools(mcp_team.write))
    reading = run(lambda: tools(mcp_team.read))
    assert set(every) == READ_TOOLS | WRITE_TOOLS
    assert set(reading) == READ_TOOLS
    search = every["memory_search"]
    assert set(search.inputSchema["properties"]) >= {"query", "scope", "kind", "k"}
    assert search.inputSchema["required"] == ["query"]
    assert search.annotations.readOnlyHint is True
    assert every["memory_remove"].annotations.destructiveHint is True
    assert all(len(tool.description) > 60 for tool in every.values())


def test_an_agent_stores_finds_rates_and_reads_its_context(live_server, mcp_team) -> None:
    from facts.models import Fact, FactEvent
    from tenants.scope import tenant_scope

    async def session_work() -> dict[str, Any]:
        async with http_session(live_server.url, mcp_team.write) as session:
            stored = payload(
                await session.call_tool(
                    "memory_store",
                    {"content": "Alice prefers green tea over coffee", "scope": "user:alice",
                     "category": "user_pref", "tags": ["drinks"]},
                )
            )  # fmt: skip
            again = payload(
                await session.call_tool(
                    "memory_store",
                    {"content": "alice prefers green tea  over coffee", "scope": "user:alice"},
                )
            )
            await session.call_tool("memory_store", {"content": "部署流程：先跑测试，再发布"})
            found = payload(
                await session.call_tool("memory_search", {"query": "what does Alice drink?"})
            )
            chinese = payload(await session.call_tool("memory_search", {"query": "部署流程"}))
            rated = payload(
                await session.call_tool(
                    "memory_feedback", {"fact_id": stored["fact_id"], "helpful": True}
                )
            )
            context = payload(
                await session.call_tool("memory_context", {"task": "order drinks for Alice"})
            )
            recent = payload(await session.call_tool("memory_recent", {"limit": 5}))
            return dict(
                stored=stored,
                again=again,
                found=found,
                chinese=chinese,
                rated=rated,
                context=context,
                recent=recent,
            )

    got = run(session_work)
    fact_id = got["stored"]["fact_id"]
    assert got["stored"] == {"fact_id": fact_id, "status": "added", "scope": "user:alice"}
    assert got["again"]["fact_id"] == fact_id and got["again"]["status"] == "exists"
    assert got["found"]["results"][0]["fact_id"] == fact_id
    assert got["found"]["results"][0]["content"] == "Alice prefers green tea over coffee"
    assert got["chinese"]["results"][0]["content"].startswith("部署流程")
    assert got["rated"]["old_trust"] == pytest.approx(0.5)
    assert got["rated"]["new_trust"] == pytest.approx(0.55)
    assert "Alice prefers green tea over coffee" in got["context"]["text"]
    assert fact_id in [i for ids in got["context"]["fact_ids"].values() for i in ids]
    assert [row["fact_id"] for row in got["recent"]["results"]][-1] == fact_id

    with tenant_scope(mcp_team.tenant):
        fact = Fact.objects.for_tenant(mcp_team.tenant).get(pk=fact_id)
        actors = set(
            FactEvent.objects.for_tenant(mcp_team.tenant)
            .filter(fact_id=fact_id)
            .values_list("actor", flat=True)
        )
    assert fact.created_by == f"apikey:{mcp_team.write_key_id}:claude-code"
    assert fact.trust_score == pytest.approx(0.55) and fact.helpful_count == 1
    assert fact.tags == ["drinks"] and fact.category == "user_pref"
    assert fact.retrieval_count >= 1  # a search by an agent counts as a retrieval
    assert actors == {f"apikey:{mcp_team.write_key_id}:claude-code"}  # create and feedback


def test_a_read_key_cannot_store_or_change_anything(live_server, mcp_team) -> None:
    from facts.models import Fact
    from tenants.scope import tenant_scope

    async def attempt() -> tuple[dict, dict, dict]:
        async with http_session(live_server.url, mcp_team.read) as session:
            stored = await session.call_tool("memory_store", {"content": "A read key wrote"})
            found = await session.call_tool("memory_search", {"query": "read key"})
            prompt = await session.get_prompt("use_memory")
            return payload(stored) | {"is_error": stored.isError}, payload(found), prompt

    stored, found, prompt = run(attempt)
    assert stored["is_error"] is True
    assert stored["error"] == "memory_store needs a key that may write; this API key may only read"
    assert found["count"] == 0
    text = prompt.messages[0].content.text
    assert "read-only" in text and "memory_store" not in text
    with tenant_scope(mcp_team.tenant):
        assert not Fact.objects.for_tenant(mcp_team.tenant).filter(content__contains="read key")


def test_another_tenants_fact_is_not_found_exactly_like_a_missing_one(
    live_server, mcp_team, other_tenant
) -> None:
    from facts.models import Fact
    from tenants.scope import tenant_scope

    theirs, missing = mcp_team.other_fact_id, mcp_team.other_fact_id + 10_000

    async def probe() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with http_session(live_server.url, mcp_team.write) as session:
            for label, fact_id in (("theirs", theirs), ("missing", missing)):
                for tool, extra in (
                    ("memory_feedback", {"helpful": False}),
                    ("memory_update", {"content": "Globex never deploys"}),
                    ("memory_remove", {}),
                ):
                    result = await session.call_tool(tool, {"fact_id": fact_id, **extra})
                    seen[f"{tool}/{label}"] = (result.isError, payload(result)["error"])
                try:
                    await session.read_resource(f"mnemosyne://facts/{fact_id}")
                except McpError as error:
                    seen[f"resource/{label}"] = (error.error.code, error.error.message)
            # Every tool that reads, asked what only the other tenant knows.
            for tool, arguments in (
                ("memory_search", {"query": "Globex deploys Fridays"}),
                ("memory_context", {"task": "when does Globex deploy"}),
                ("memory_probe", {"entity": "Globex"}),
                ("memory_related", {"entity": "Globex"}),
                ("memory_recent", {"limit": 100}),
            ):
                seen[tool] = payload(await session.call_tool(tool, arguments))
            known = await session.read_resource("mnemosyne://facts")
            seen["known"] = known.contents[0].text
        return seen

    seen = run(probe)
    for tool in ("memory_feedback", "memory_update", "memory_remove"):
        assert seen[f"{tool}/theirs"] == (True, f"fact_id: fact {theirs} not found")
        assert seen[f"{tool}/missing"] == (True, f"fact_id: fact {missing} not found")
    assert seen["resource/theirs"] == (-32002, f"fact {theirs} not found")
    assert seen["resource/missing"] == (-32002, f"fact {missing} not found")
    for tool in ("memory_search", "memory_probe", "memory_related", "memory_recent"):
        assert theirs not in [row["fact_id"] for row in seen[tool]["results"]], tool
        assert "Fridays" not in json.dumps(seen[tool]), tool
    context = seen["memory_context"]
    assert "Fridays" not in context["text"]
    assert theirs not in [i for ids in context["fact_ids"].values() for i in ids]
    assert "Fridays" not in seen["known"] and f"[fact {theirs}]" not in seen["known"]
    with tenant_scope(other_tenant):
        fact = Fact.objects.for_tenant(other_tenant).get(pk=theirs)
    assert (fact.content, fact.status, fact.trust_score) == (
        "Globex deploys on Fridays at noon", "active", 0.5,
    )  # fmt: skip


def test_bad_arguments_get_a_tool_error_naming_the_argument(live_server, mcp_team) -> None:
    calls = [
        ("memory_search", {"query": "tea", "k": "lots"}, "k: must be a whole number"),
        ("memory_search", {"query": "tea", "k": 500}, "k: must be from 1 to 100"),
        ("memory_search", {}, "query: is required"),
        ("memory_search", {"query": "tea", "kind": "note"}, "kind: must be one of fact, turn"),
        ("memory_search", {"query": "tea", "querry": "x"}, "querry: is not an argument of"),
        ("memory_search", {"query": "tea", "scope": "not a scope"}, "scope: segment"),
        ("memory_store", {"content": "   "}, "content: is required"),
        ("memory_store", {"content": "x", "tags": [1, 2]}, "tags: must be a list of text"),
        ("memory_store", {"content": "x", "category": "misc"}, "category: must be one of"),
        ("memory_feedback", {"fact_id": 1}, "helpful: is required: true or false"),
        ("memory_feedback", {"fact_id": -3, "helpful": True}, "fact_id: must be from 1 to"),
        ("memory_update", {"fact_id": 1}, "content: give what changes"),
        ("memory_context", {"budget": 10}, "budget: must be from 50 to 32000"),
        ("memory_recent", {"cursor": "nonsense"}, "cursor: is not a cursor"),
        ("memory_forget", {}, "unknown tool 'memory_forget'"),
    ]

    async def call_all() -> list[tuple[bool, str]]:
        async with http_session(live_server.url, mcp_team.write) as session:
            return [
                ((result := await session.call_tool(name, args)).isError, payload(result)["error"])
                for name, args, _ in calls
            ]

    for (name, args, expected), (is_error, message) in zip(calls, run(call_all), strict=True):
        assert is_error, (name, args)
        assert message.startswith(expected), (name, args, message)


def test_resources_and_the_prompt(live_server, mcp_team, system_actor) -> None:
    from facts.inputs import fact_draft
    from facts.services import fact_add

    kept = fact_add(
        tenant=mcp_team.tenant,
        actor=system_actor,
        draft=fact_draft({"content": "The staging database is db-stage-2", "category": "project"}),
    ).fact

    async def read() -> dict[str, Any]:
        async with http_session(live_server.url, mcp_team.write) as session:
            listed = await session.list_resources()
            templates = await session.list_resource_templates()
            known = await session.read_resource("mnemosyne://facts")
            one = await session.read_resource(f"mnemosyne://facts/{kept.pk}")
            prompts = await session.list_prompts()
            prompt = await session.get_prompt("use_memory", {"task": "fix the staging deploy"})
            return dict(
                listed=[str(r.uri) for r in listed.resources],
                templates=[t.uriTemplate for t in templates.resourceTemplates],
                known=known.contents[0],
                one=one.contents[0],
                prompts=[p.name for p in prompts.prompts],
                prompt=prompt.messages[0].content.text,
            )

    got = run(read)
    assert got["listed"] == ["mnemosyne://facts"]
    assert got["templates"] == ["mnemosyne://facts/{fact_id}"]
    assert got["known"].mimeType == "text/markdown"
    assert f"- [fact {kept.pk}] The staging database is db-stage-2 (project;" in got["known"].text
    assert got["one"].mimeType == "application/json"
    assert f'"fact_id": {kept.pk}' in got["one"].text and '"status": "active"' in got["one"].text
    assert got["prompts"] == ["use_memory"]
    assert "memory_context" in got["prompt"] and "fix the staging deploy" in got["prompt"]
    assert "memory_feedback" in got["prompt"]


def _http_status(work) -> int:
    """200 when `work` ran through; else the HTTP status the SDK's client raised on."""
    try:
        run(work)
    except BaseException as error:  # the client raises it out of its task group
        while isinstance(error, BaseExceptionGroup):
            error = error.exceptions[0]
        assert isinstance(error, httpx.HTTPStatusError), repr(error)
        return error.response.status_code
    return 200


def test_a_revoked_or_unknown_key_is_refused_and_so_is_a_key_revoked_mid_session(
    live_server, mcp_team, system_actor
) -> None:
    from tenants.services import apikey_revoke

    def list_with(token: str):
        async def work() -> None:
            async with http_session(live_server.url, token) as session:
                await session.list_tools()

        return work

    assert _http_status(list_with(mcp_team.revoked)) == 401
    assert _http_status(list_with("mnm_000000000000_not-a-key")) == 401
    assert _http_status(list_with(mcp_team.write)) == 200

    raw = httpx.post(
        f"{live_server.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {mcp_team.revoked}", "Accept": "application/json"},
    )
    assert raw.status_code == 401
    assert raw.headers["WWW-Authenticate"].startswith("Bearer")
    assert raw.json()["message"] == "the API key is unknown, expired or revoked"

    def revoke() -> None:
        from django.db import connections

        apikey_revoke(tenant=mcp_team.tenant, key_id=mcp_team.write_key_id, actor=system_actor)
        connections.close_all()  # this thread's own connection

    listed: list[int] = []

    async def revoked_mid_session() -> None:
        async with http_session(live_server.url, mcp_team.write) as session:
            listed.append(len((await session.list_tools()).tools))
            await asyncio.to_thread(revoke)
            await session.list_tools()

    assert _http_status(revoked_mid_session) == 401
    assert listed == [9]  # it worked until the key was revoked


def test_only_post_is_served_and_a_key_over_its_rate_gets_429(
    live_server, mcp_team, settings
) -> None:
    headers = {"Authorization": f"Bearer {mcp_team.write}"}
    assert httpx.get(f"{live_server.url}/mcp", headers=headers).status_code == 405
    assert httpx.delete(f"{live_server.url}/mcp", headers=headers).status_code == 405

    settings.MNEMOSYNE_API_RATES = {"key": "3/minute", "user": None, "anon": None}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    answers = [
        httpx.post(
            f"{live_server.url}/mcp",
            json=ping,
            headers={**headers, "Accept": "application/json, text/event-stream"},
        )
        for _ in range(4)
    ]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert answers[0].json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert int(answers[3].headers["Retry-After"]) > 0


def test_malformed_requests_get_a_clear_4xx_or_json_rpc_error_never_a_5xx(
    live_server, mcp_team
) -> None:
    headers = {
        "Authorization": f"Bearer {mcp_team.write}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    bodies = [
        b"not json",
        b"[]",
        b'{"jsonrpc": "2.0"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_search",'
        b' "arguments": "query"}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "x"}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "resources/read",'
        b' "params": {"uri": "mnemosyne://facts/99999999999999999999999"}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "nope"}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "no/such/method"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
        b'"memory_store", "arguments": {"content": "\\u0000"}}}',
    ]
    for body in bodies:
        answer = httpx.post(f"{live_server.url}/mcp", content=body, headers=headers, timeout=30)
        assert answer.status_code < 500, (body, answer.status_code, answer.text)
        if answer.status_code == 200:
            reply = answer.json()
            problem = reply.get("error") or (
                reply["result"] if reply["result"].get("isError") else None
            )
            assert problem, (body, reply)  # every one of these is refused, with a reason
    wrong_type = httpx.post(
        f"{live_server.url}/mcp", content=b"{}", timeout=30,
        headers={**headers, "Content-Type": "text/plain"},
    )  # fmt: skip
    assert wrong_type.status_code == 400 and "Content-Type" in wrong_type.text


def test_a_key_limited_to_a_scope_reads_and_writes_only_there_over_http(
    live_server, mcp_team, system_actor
) -> None:
    from facts.inputs import fact_draft
    from facts.services import fact_add
    from tenants.services import apikey_create

    inside = fact_add(
        tenant=mcp_team.tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Team A ships on Mondays", "scope": "team:a/project:x"}),
    ).fact
    sibling = fact_add(
        tenant=mcp_team.tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Team AB ships on Mondays too", "scope": "team:ab"}),
    ).fact
    limited = apikey_create(
        tenant=mcp_team.tenant, name="team-a", actor=system_actor, scope_prefix="team:a"
    )

    async def work() -> dict[str, Any]:
        async with http_session(live_server.url, limited.token) as session:
            found = payload(await session.call_tool("memory_search", {"query": "ships on Mondays"}))
            stored = payload(
                await session.call_tool("memory_store", {"content": "A retros Fridays"})
            )
            outside = await session.call_tool(
                "memory_store", {"content": "Elsewhere", "scope": "team:b"}
            )
            rate = await session.call_tool(
                "memory_feedback", {"fact_id": sibling.pk, "helpful": True}
            )
            return dict(found=found, stored=stored, outside=outside, rate=rate)

    got = run(work)
    assert [row["fact_id"] for row in got["found"]["results"]] == [inside.pk]
    assert got["stored"]["scope"] == "team:a"
    assert got["outside"].isError
    assert payload(got["outside"])["error"] == "scope: is outside this API key's scope 'team:a'"
    assert got["rate"].isError
    assert payload(got["rate"])["error"] == f"fact_id: fact {sibling.pk} not found"
