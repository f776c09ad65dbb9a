"""`mnemosyne mcp`, the stdio server an MCP client starts as a subprocess, driven by the MCP
SDK's own stdio client: it relays to a live server's /mcp with the key from MNEMOSYNE_API_KEY,
without Django or a database of its own; a server that is down, silent or refusing the key gives
the agent a tool error within the timeout."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.shared.exceptions import McpError

from tests.helpers import REPO, child_env, free_port
from tests.mcp_support import (
    MNEMOSYNE,
    READ_TOOLS,
    WRITE_TOOLS,
    Team,
    payload,
    relay_parameters,
    run,
    stdio_session,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_agent_uses_its_memory_through_the_stdio_relay(live_server, mcp_team: Team) -> None:
    from facts.models import Fact
    from tenants.scope import tenant_scope

    # A configuration error for Django, and a database that does not exist: the relay must
    # need neither.
    parameters = relay_parameters(
        live_server.url,
        mcp_team.write,
        DEBUG="maybe",
        DATABASE_URL="postgresql://nobody@127.0.0.1:1/x",
    )

    async def work() -> dict[str, Any]:
        async with stdio_session(parameters) as session:
            tools = {tool.name for tool in (await session.list_tools()).tools}
            stored = payload(
                await session.call_tool(
                    "memory_store",
                    {"content": "The release train leaves every second Tuesday",
                     "scope": "project:trains", "category": "project"},
                )
            )  # fmt: skip
            found = payload(
                await session.call_tool(
                    "memory_search", {"query": "when does the release train leave"}
                )
            )
            rated = payload(
                await session.call_tool(
                    "memory_feedback", {"fact_id": stored["fact_id"], "helpful": False}
                )
            )
            context = payload(
                await session.call_tool("memory_context", {"task": "plan the next release"})
            )
            bad = await session.call_tool("memory_search", {"query": "trains", "k": 0})
            known = await session.read_resource("mnemosyne://facts")
            prompt = await session.get_prompt("use_memory")
            return dict(
                tools=tools,
                stored=stored,
                found=found,
                rated=rated,
                context=context,
                bad=(bad.isError, payload(bad)),
                known=known.contents[0].text,
                prompt=prompt.messages[0].content.text,
            )

    got = run(work)
    fact_id = got["stored"]["fact_id"]
    assert got["tools"] == READ_TOOLS | WRITE_TOOLS
    assert got["stored"]["status"] == "added"
    assert got["found"]["results"][0]["fact_id"] == fact_id
    assert got["rated"]["new_trust"] == pytest.approx(0.4)
    assert "The release train leaves every second Tuesday" in got["context"]["text"]
    assert got["bad"] == (True, {"error": "k: must be from 1 to 100"})
    assert f"[fact {fact_id}]" in got["known"]
    assert "memory_store" in got["prompt"]
    with tenant_scope(mcp_team.tenant):
        fact = Fact.objects.for_tenant(mcp_team.tenant).get(pk=fact_id)
    assert fact.created_by == f"apikey:{mcp_team.write_key_id}:claude-code"
    assert fact.scope == "project:trains" and fact.unhelpful_count == 1


def test_a_read_key_through_the_relay_cannot_store(live_server, mcp_team: Team) -> None:
    async def work() -> tuple[set[str], bool, dict]:
        async with stdio_session(relay_parameters(live_server.url, mcp_team.read)) as session:
            tools = {tool.name for tool in (await session.list_tools()).tools}
            stored = await session.call_tool("memory_store", {"content": "Readers write"})
            return tools, stored.isError, payload(stored)

    tools, is_error, answer = run(work)
    assert tools == READ_TOOLS
    assert is_error and "may only read" in answer["error"]


def test_another_tenants_fact_is_not_found_through_the_relay(live_server, mcp_team: Team) -> None:
    async def work() -> tuple[dict, tuple[int, str]]:
        async with stdio_session(relay_parameters(live_server.url, mcp_team.write)) as session:
            removed = payload(
                await session.call_tool("memory_remove", {"fact_id": mcp_team.other_fact_id})
            )
            try:
                await session.read_resource(f"mnemosyne://facts/{mcp_team.other_fact_id}")
            except McpError as error:
                return removed, (error.error.code, error.error.message)
            return removed, (0, "")

    removed, resource = run(work)
    assert removed == {"error": f"fact_id: fact {mcp_team.other_fact_id} not found"}
    assert resource == (-32002, f"fact {mcp_team.other_fact_id} not found")


def test_a_revoked_key_gets_a_tool_error_that_says_so(live_server, mcp_team: Team) -> None:
    async def work() -> tuple[bool, dict, str]:
        async with stdio_session(relay_parameters(live_server.url, mcp_team.revoked)) as session:
            result = await session.call_tool("memory_search", {"query": "anything"})
            try:
                await session.list_tools()
            except McpError as error:
                return result.isError, payload(result), error.error.message
            return result.isError, payload(result), ""

    is_error, answer, listing = run(work)
    assert is_error
    assert answer["error"] == (
        f"Mnemosyne at {live_server.url}/mcp: the API key in MNEMOSYNE_API_KEY is unknown or "
        "revoked (HTTP 401)"
    )
    assert "unknown or revoked" in listing


# -- outages -----------------------------------------------------------------------------------


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers: a server that hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


def test_a_server_that_is_down_or_silent_gives_a_tool_error_not_a_hang(silent_server) -> None:
    down = f"http://127.0.0.1:{free_port()}"

    async def work(url: str) -> tuple[float, bool, dict, str]:
        parameters = relay_parameters(url, "mnm_000000000000_whatever", "--timeout", "2")
        async with stdio_session(parameters) as session:  # starts without the server
            started = time.monotonic()
            result = await session.call_tool("memory_search", {"query": "anything"})
            took = time.monotonic() - started
            try:
                await session.list_tools()
            except McpError as error:
                return took, result.isError, payload(result), error.error.message
            return took, result.isError, payload(result), ""

    took, is_error, answer, listing = run(lambda: work(down), timeout=60)
    assert is_error and took < 5
    assert answer["error"].startswith(f"Mnemosyne at {down}/mcp: cannot connect")
    assert "cannot connect" in listing

    took, is_error, answer, listing = run(lambda: work(silent_server), timeout=60)
    assert is_error and 1.5 < took < 6
    assert answer["error"] == f"Mnemosyne at {silent_server}/mcp: no answer within 2 s"
    assert "no answer within 2 s" in listing


def test_the_relay_refuses_to_start_without_a_key_or_with_a_bad_url() -> None:
    for args, env, expected in (
        (["--url", "http://127.0.0.1:8000"], {}, "set MNEMOSYNE_API_KEY"),
        (["--url", "ftp://x"], {"MNEMOSYNE_API_KEY": "mnm_x"}, "--url must be http(s)://"),
    ):
        environment = child_env(**env)
        if not env:
            environment.pop("MNEMOSYNE_API_KEY", None)
        done = subprocess.run(
            [MNEMOSYNE, "mcp", *args], env=environment, cwd=REPO, capture_output=True,
            text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 2
        assert expected in done.stderr
        assert done.stdout == ""  # stdout is the protocol's: nothing else goes there


def test_the_relay_loads_neither_django_nor_celery() -> None:
    probe = (
        "import sys; import mnemosyne, mcp_server.relay; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'django', 'celery', 'kombu', 'psycopg', 'onnxruntime', 'memoryadmin', 'facts'}))"
    )
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-c", probe], env=child_env(), cwd=REPO,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
