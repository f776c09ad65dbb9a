"""Corrections win in what the agent is handed: while a conflict is open, the context shows both
statements with their dates, the newer first; once decided (by an admin, or at once where the
tenant chose that the newer statement supersedes), only the statement that stands. Through the
real Hermes provider and the MCP server over HTTP."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from facts.conflicts import conflict_resolve
from facts.selectors.conflicts import conflict_list
from tenants.inputs import settings_changes
from tenants.services import apikey_create, tenant_update_settings
from tests.hermes_support import manager_for, tool, write_profile
from tests.mcp_support import eager_tasks, http_session, payload, run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_tasks")]
__all__ = ["eager_tasks"]  # the fixture: tasks run where they are sent, as a worker would

OLDER = "Alice prefers green tea over coffee."
NEWER = "Alice prefers coffee over green tea."
DATED = re.compile(r"\[\d{4}-\d{2}-\d{2}\] ")


@pytest.fixture(autouse=True)
def _no_task_messages_left():
    """Writes through the live server send tasks to the test run's broker, where no worker
    takes them; left there, they would queue ahead of the worker tests' own."""
    yield
    from memoryadmin.celery import app

    with app.connection_for_write() as broker:
        broker.default_channel.queue_purge("celery")


def _both_dated_newer_first(text: str) -> bool:
    line = next((li for li in text.splitlines() if "Unresolved conflict" in li), "")
    undated = DATED.sub("", line)
    return (
        len(DATED.findall(line)) == 2
        and undated.endswith(f"{NEWER} | {OLDER}")
        and undated.startswith("- Unresolved conflict, newest first: ")
    )


def test_through_the_hermes_provider_an_open_conflict_shows_both_then_the_correction_alone(
    tenant, system_actor, owner_actor, live_server, tmp_path: Path, monkeypatch
) -> None:
    key = apikey_create(tenant=tenant, name="coder", actor=system_actor).token
    home = write_profile(tmp_path / "hermes", key, live_server.url)
    manager, _ = manager_for(home, monkeypatch)
    try:
        assert tool(manager, "fact_store", action="add", content=OLDER)["status"] == "added"
        assert tool(manager, "fact_store", action="add", content=NEWER)["status"] == "added"
        seen = manager.prefetch_all("What does Alice drink?")
        assert _both_dated_newer_first(seen), seen
        assert seen.count(OLDER) == 1 and seen.count(NEWER) == 1

        (conflict,) = conflict_list(tenant=tenant).conflicts
        conflict_resolve(
            tenant=tenant, conflict_id=conflict.pk, decision="supersede", actor=owner_actor
        )
        seen = manager.prefetch_all("What does Alice drink now?")
        assert NEWER in seen and OLDER not in seen and "Unresolved conflict" not in seen
        found = tool(manager, "fact_store", action="search", query="what does Alice drink?")
        assert [r["content"] for r in found["results"]] == [NEWER]
    finally:
        manager.shutdown_all()


def _mcp_context(url: str, token: str, *texts: str) -> dict[str, Any]:
    async def work() -> dict[str, Any]:
        async with http_session(url, token) as session:
            for text in texts:
                stored = payload(await session.call_tool("memory_store", {"content": text}))
                assert stored["status"] == "added", stored
            context = payload(
                await session.call_tool("memory_context", {"task": "order drinks for Alice"})
            )
            found = payload(
                await session.call_tool("memory_search", {"query": "what does Alice drink?"})
            )
            return {"context": context["text"], "found": found["results"]}

    return run(work)


def test_through_mcp_an_open_conflict_shows_both_and_newest_wins_shows_only_the_newer(
    tenant, other_tenant, system_actor, live_server
) -> None:
    key = apikey_create(tenant=tenant, name="claude-code", actor=system_actor).token
    got = _mcp_context(live_server.url, key, OLDER, NEWER)
    assert _both_dated_newer_first(got["context"]), got["context"]
    assert {r["content"] for r in got["found"]} >= {OLDER, NEWER}

    # Another tenant that chose "the newer statement supersedes": the correction alone.
    tenant_update_settings(
        tenant=other_tenant,
        changes=settings_changes({"conflict_auto_supersede": 1}),
        actor=system_actor,
    )
    theirs = apikey_create(tenant=other_tenant, name="agent", actor=system_actor).token
    got = _mcp_context(live_server.url, theirs, OLDER, NEWER)
    assert NEWER in got["context"] and OLDER not in got["context"], got["context"]
    assert "Unresolved conflict" not in got["context"]
    assert [r["content"] for r in got["found"]] == [NEWER]
