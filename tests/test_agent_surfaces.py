"""One agent-tool core, three surfaces: the Hermes plugin (inside the real hermes-agent), the
REST agent endpoints and MCP (the real SDK's client, over HTTP and over stdio) offer exactly the
tools `agentspec` defines, with the arguments and limits defined there, so they cannot drift."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentspec import hermes as hermes_spec
from agentspec import limits
from agentspec import mcp as mcp_spec
from facts import inputs as fact_inputs
from facts.models import Category, Kind
from retrieval import inputs as recall_inputs
from tenants import inputs as tenant_inputs
from tenants.services import apikey_create
from tests.hermes_support import manager_for, write_profile
from tests.mcp_support import http_session, relay_parameters, run, stdio_session

pytestmark = pytest.mark.django_db(transaction=True)


def _mcp_definitions() -> dict[str, tuple[str, dict]]:
    return {tool.name: (tool.description, tool.input_schema) for tool in mcp_spec.TOOLS}


def _listed(tools) -> dict[str, tuple[str, dict]]:
    return {tool.name: (tool.description, tool.inputSchema) for tool in tools}


@pytest.fixture
def key(tenant, system_actor) -> str:
    return apikey_create(tenant=tenant, name="coder", actor=system_actor).token


def test_the_hermes_plugin_offers_the_defined_tools(tmp_path: Path, key, live_server, monkeypatch):
    home = write_profile(tmp_path / "hermes", key, live_server.url)
    manager, _ = manager_for(home, monkeypatch)
    try:
        offered = manager.get_all_tool_schemas()
    finally:
        manager.shutdown_all()
    assert offered == hermes_spec.TOOL_SCHEMAS


def test_the_rest_agent_endpoint_runs_exactly_the_hermes_tools(client, key) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    for name in sorted(hermes_spec.TOOL_NAMES):
        answer = client.post(
            f"/api/v1/agent/tools/{name}",
            {"arguments": {"action": "list" if name == "fact_store" else "helpful"}},
            content_type="application/json",
            **auth,
        )
        assert answer.status_code in (200, 400), (name, answer.content)  # routed, parsed
    unknown = client.post(
        "/api/v1/agent/tools/memory_search", {"arguments": {}}, content_type="application/json",
        **auth,
    )  # fmt: skip
    assert unknown.status_code == 404


def test_mcp_over_http_and_stdio_offers_the_defined_tools(live_server, key) -> None:
    async def listed() -> tuple[dict, dict]:
        async with http_session(live_server.url, key) as session:
            over_http = _listed((await session.list_tools()).tools)
        async with stdio_session(relay_parameters(live_server.url, key)) as session:
            over_stdio = _listed((await session.list_tools()).tools)
        return over_http, over_stdio

    over_http, over_stdio = run(listed)
    assert over_http == _mcp_definitions()
    assert over_stdio == _mcp_definitions()


def test_every_limit_the_tools_state_is_the_one_the_server_parses_with() -> None:
    assert list(limits.KINDS) == list(Kind.values) == fact_inputs.KINDS
    assert list(limits.CATEGORIES) == list(Category.values) == fact_inputs.CATEGORIES
    assert recall_inputs.MAX_K == limits.MAX_K == hermes_spec.MAX_LIMIT
    assert recall_inputs.MAX_QUERY_CHARS == limits.MAX_QUERY_CHARS
    assert fact_inputs.MAX_CONTENT_CHARS == limits.MAX_CONTENT_CHARS
    assert tenant_inputs.MAX_SCOPE_CHARS == fact_inputs.MAX_SCOPE_CHARS == limits.MAX_SCOPE_CHARS
    for tool in mcp_spec.TOOLS:
        properties = tool.properties
        for name, schema in properties.items():
            if name == "scope":
                assert schema["maxLength"] == limits.MAX_SCOPE_CHARS, tool.name
            if name in ("limit", "k"):
                assert schema["maximum"] == limits.MAX_K, tool.name
            if name == "kind":
                assert schema["enum"] == list(limits.KINDS), tool.name
            if name == "category":
                assert schema["enum"] == list(limits.CATEGORIES), tool.name
            if name == "content":
                assert schema["maxLength"] == limits.MAX_CONTENT_CHARS, tool.name
            if name in ("query", "task"):
                assert schema["maxLength"] == limits.MAX_QUERY_CHARS, tool.name
    hermes_args = hermes_spec.FACT_STORE_SCHEMA["parameters"]["properties"]
    assert hermes_args["category"]["enum"] == list(limits.CATEGORIES)
    assert hermes_args["kind"]["enum"] == list(limits.KINDS)
    assert hermes_args["action"]["enum"] == hermes_spec.ACTIONS
