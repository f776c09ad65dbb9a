"""The MCP endpoint as production serves it: gunicorn's forked sync workers, a database of the
test's own, which the test stops mid-session. Over Streamable HTTP and through the stdio relay,
the agent gets a tool error that says the memory store is unavailable (never a hang, a 5xx or a
traceback), and the same sessions work again once the database is back."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agenttools.mcp import UNAVAILABLE
from memoryadmin.embedded_db import server_for_home
from tests.helpers import PYTHON, REPO, child_env, free_port, wait_for
from tests.mcp_support import http_session, payload, relay_parameters, run, stdio_session

pytestmark = pytest.mark.slow


class Web:
    """gunicorn as `up` runs it, on a port that stays the same across restarts."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env, self.log = env, log
        self.url = f"http://127.0.0.1:{free_port()}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "gunicorn"), "memoryadmin.wsgi:application",
             "--bind", self.url.removeprefix("http://"), "--workers", "2", "--timeout", "60"],
            env=self.env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=self.log.open("a"),
        )  # fmt: skip
        wait_for(self._answers, timeout=120, what="gunicorn")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None

    def _answers(self) -> bool:
        try:
            return httpx.get(f"{self.url}/healthz", timeout=5).status_code in (200, 503)
        except httpx.HTTPError:
            return False


@pytest.fixture
def web_on_own_database() -> Iterator[tuple[Any, Web, str]]:
    """An embedded PostgreSQL of the test's own (outside pytest's folders: see the Hermes
    outage test), migrated, with a tenant and a key, served by gunicorn as `up` serves it."""
    home = Path(tempfile.mkdtemp(prefix="mnemosyne-mcp-outage-"))
    database = server_for_home(home)
    database.start()
    env = child_env(MNEMOSYNE_HOME=str(home), DATABASE_URL=None, CELERY_BROKER_URL=None)
    web = Web(env, home / "web.log")
    try:
        subprocess.run(
            [PYTHON, "-m", "memoryadmin.cli", "migrate", "--verbosity", "0"],
            env=env, cwd=REPO, check=True, timeout=300,
        )  # fmt: skip
        made = subprocess.run(
            [PYTHON, "-m", "memoryadmin.cli", "shell", "-c",
             "from tenants.actors import Actor; from tenants.services import *; "
             "from tenants.inputs import tenant_draft; "
             "t = tenant_create(draft=tenant_draft({'slug': 'ops', 'name': 'Ops'}), "
             "actor=Actor.job('test')); "
             "print(apikey_create(tenant=t, name='cursor', actor=Actor.job('test')).token)"],
            env=env, cwd=REPO, check=True, timeout=120, capture_output=True, text=True,
        )  # fmt: skip
        web.start()
        yield database, web, made.stdout.strip().splitlines()[-1]
    finally:
        web.stop()
        database.stop()
        shutil.rmtree(home, ignore_errors=True)


def test_a_database_outage_gives_tool_errors_and_the_sessions_recover(
    web_on_own_database,
) -> None:
    database, web, token = web_on_own_database

    async def search(session) -> tuple[bool, dict]:
        result = await session.call_tool("memory_search", {"query": "standup time"})
        return result.isError, payload(result)

    async def work() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with (
            http_session(web.url, token) as direct,
            stdio_session(relay_parameters(web.url, token, "--timeout", "10")) as relayed,
        ):
            stored = payload(
                await direct.call_tool("memory_store", {"content": "The standup is at 9:30"})
            )
            seen["before"] = await search(direct), await search(relayed)
            await asyncio.to_thread(database.stop)
            started = time.monotonic()
            seen["down"] = await search(direct), await search(relayed)
            seen["down_store"] = payload(
                await relayed.call_tool("memory_store", {"content": "Lost while down?"})
            )
            seen["took"] = time.monotonic() - started
            await asyncio.to_thread(database.start)
            seen["after"] = await search(direct), await search(relayed)
            seen["stored"] = stored

            # The web server itself goes away, and comes back on the same address: the relay
            # says so, then reconnects by itself.
            await asyncio.to_thread(web.stop)
            seen["web_down"] = await search(relayed)
            await asyncio.to_thread(web.start)
            seen["web_back"] = await search(relayed)
        return seen

    seen = run(work, timeout=400)
    fact_id = seen["stored"]["fact_id"]
    for is_error, answer in [*seen["before"], *seen["after"], seen["web_back"]]:
        assert not is_error and answer["results"][0]["fact_id"] == fact_id
    for is_error, answer in seen["down"]:
        assert is_error and answer == {"error": UNAVAILABLE}
    assert seen["down_store"] == {"error": UNAVAILABLE}
    assert seen["took"] < 20
    is_error, answer = seen["web_down"]
    assert is_error and answer["error"].startswith(f"Mnemosyne at {web.url}/mcp: cannot connect")
