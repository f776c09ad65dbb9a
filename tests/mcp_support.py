"""The MCP SDK's own client, over Streamable HTTP and over stdio, for the MCP tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.helpers import REPO, child_env

T = TypeVar("T")

MNEMOSYNE = str(REPO / ".venv" / "bin" / "mnemosyne")


@asynccontextmanager
async def http_session(base_url: str, token: str) -> AsyncIterator[ClientSession]:
    """An initialized client session to `base_url`/mcp with the key."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def relay_parameters(base_url: str, token: str | None, *extra: str, **env: str) -> Any:
    """`mnemosyne mcp --url ...` as an MCP client would start it."""
    environment = child_env(**env)
    if token is None:
        environment.pop("MNEMOSYNE_API_KEY", None)
    else:
        environment["MNEMOSYNE_API_KEY"] = token
    return StdioServerParameters(
        command=MNEMOSYNE, args=["mcp", "--url", base_url, *extra], env=environment, cwd=REPO
    )


@asynccontextmanager
async def stdio_session(parameters: StdioServerParameters) -> AsyncIterator[ClientSession]:
    async with (
        stdio_client(parameters) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def run(work: Callable[[], Awaitable[T]], timeout: float = 120) -> T:
    """Run a coroutine of the test (outside Django's ORM: no queries in here), on a thread of
    its own: the test's thread may already run an event loop (Playwright's, in a full run)."""

    async def bounded() -> T:
        return await asyncio.wait_for(work(), timeout)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-test-client") as pool:
        return pool.submit(asyncio.run, bounded()).result()


def payload(result: CallToolResult) -> dict[str, Any]:
    """A tool result's JSON (errors included: {"error": ...})."""
    text = "".join(part.text for part in result.content if part.type == "text")
    return json.loads(text)


# -- a team with keys of every kind, and another tenant ------------------------------------

READ_TOOLS = {"memory_search", "memory_context", "memory_probe", "memory_related", "memory_recent"}
WRITE_TOOLS = {"memory_store", "memory_feedback", "memory_update", "memory_remove"}


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Tasks run where they are sent (the live server's thread): stored facts get vectors as a
    worker would give them, and no message is left in a broker folder."""
    from memoryadmin.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@dataclass
class Team:
    tenant: Any
    write: str
    read: str
    revoked: str
    write_key_id: int
    other_fact_id: int
    other_token: str


@pytest.fixture
def mcp_team(tenant, other_tenant, system_actor, eager_tasks) -> Team:
    from facts.inputs import fact_draft
    from facts.services import fact_add
    from tenants.services import apikey_create, apikey_revoke

    write = apikey_create(tenant=tenant, name="claude-code", actor=system_actor)
    read = apikey_create(tenant=tenant, name="reader", actor=system_actor, scopes=["read"])
    revoked = apikey_create(tenant=tenant, name="old", actor=system_actor)
    apikey_revoke(tenant=tenant, key_id=revoked.key.pk, actor=system_actor)
    other = fact_add(
        tenant=other_tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Globex deploys on Fridays at noon"}),
    )
    other_key = apikey_create(tenant=other_tenant, name="globex-agent", actor=system_actor)
    return Team(
        tenant=tenant,
        write=write.token,
        read=read.token,
        revoked=revoked.token,
        write_key_id=write.key.pk,
        other_fact_id=other.fact.pk,
        other_token=other_key.token,
    )
