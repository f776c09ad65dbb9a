"""A real streaming replica (TEST_DATABASE_REPLICA_URL, made by .ci/replica.sh): recall and
context read from it, an agent reads its own writes, a replica that is down or behind is left
for the primary and /healthz says "degraded"."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.db import connections

from operations import replica
from tests.api_fixtures import bearer
from tests.helpers import free_port, wait_for

# The replica alias exists only when one is configured (the fixture below says why not).
pytestmark = pytest.mark.django_db(
    transaction=True,
    databases=["default", "replica"] if "replica" in settings.DATABASES else ["default"],
)


@pytest.fixture(autouse=True)
def _replica_present(settings) -> None:
    if "replica" in settings.DATABASES:
        settings.MNEMOSYNE_REPLICA_READS = True
        return
    if os.environ.get("CI") and os.environ.get("TEST_DATABASE_URL"):
        pytest.fail("CI's server set-up runs the replica tests: TEST_DATABASE_REPLICA_URL is unset")
    pytest.skip("no replica: these run with TEST_DATABASE_URL and TEST_DATABASE_REPLICA_URL")


@pytest.fixture
def replay() -> Iterator[Any]:
    """A superuser session on the replica, to pause and resume its replay."""
    options = connections["replica"].settings_dict
    with psycopg.connect(
        host=options["HOST"], port=options["PORT"] or 5432, user="postgres", dbname="postgres",
        autocommit=True,
    ) as admin:  # fmt: skip
        try:
            yield admin
        finally:
            admin.execute("SELECT pg_wal_replay_resume()")


def _key(tenant: Any, actor: Any, name: str) -> str:
    from tenants.services import apikey_create

    return apikey_create(tenant=tenant, name=name, actor=actor).token


def _recall(client: Any, query: str) -> tuple[str, list[str]]:
    answer = client.post("/api/v1/recall", {"query": query, "k": 5}, format="json")
    assert answer.status_code == 200, answer.content
    return answer["X-Mnemosyne-Read-From"], [h["fact"]["content"] for h in answer.json()["results"]]


def _caught_up(client: Any, query: str, content: str) -> bool:
    where, found = _recall(client, query)
    return where == "replica" and content in found


def test_an_agent_reads_its_own_write_and_then_the_replica_serves_it(
    tenant, other_tenant, system_actor, replay
) -> None:
    agent = bearer(_key(tenant, system_actor, "writer"))
    outsider = bearer(_key(other_tenant, system_actor, "outsider"))
    wait_for(lambda: _recall(outsider, "anything")[0] == "replica", timeout=30, what="replica")

    replay.execute("SELECT pg_wal_replay_pause()")
    written = agent.post(
        "/api/v1/facts", {"content": "Marta keeps the lighthouse key"}, format="json"
    )
    assert written.status_code == 201, written.content
    # The replica has not replayed the write: the writer reads from the primary, and sees it.
    where, found = _recall(agent, "lighthouse key")
    assert (where, found) == ("primary", ["Marta keeps the lighthouse key"])
    context = agent.post("/api/v1/context", {"query": "lighthouse key"}, format="json")
    assert context["X-Mnemosyne-Read-From"] == "primary"
    assert "lighthouse key" in context.json()["text"]
    # Another tenant, which wrote nothing, still reads from the replica, and never this fact.
    assert _recall(outsider, "lighthouse key") == ("replica", [])

    replay.execute("SELECT pg_wal_replay_resume()")
    wait_for(
        lambda: _caught_up(agent, "lighthouse key", "Marta keeps the lighthouse key"),
        timeout=30,
        what="the replica to replay the write and serve it",
    )
    assert _recall(outsider, "lighthouse key") == ("replica", [])


def test_a_lagging_replica_is_left_for_the_primary_and_healthz_says_degraded(
    tenant, system_actor, replay, client, settings
) -> None:
    settings.MNEMOSYNE_REPLICA_MAX_LAG_SECONDS = 1
    agent = bearer(_key(tenant, system_actor, "lagging"))
    replay.execute("SELECT pg_wal_replay_pause()")
    agent.post("/api/v1/facts", {"content": "the tide turns at noon"}, format="json")

    def lagging() -> bool:
        # Another write, so there is WAL the paused replica has received but not replayed.
        agent.post("/api/v1/facts", {"content": f"tide note {free_port()}"}, format="json")
        return replica.replica_state()["lag_s"] > 1

    wait_for(lagging, timeout=30, what="the replica to fall behind", interval=0.5)
    health = client.get("/healthz").json()
    assert health["degraded"] == ["replica"]
    assert "behind" in health["checks"]["replica"]["detail"]
    assert "replica" not in health["failing"]
    where, found = _recall(agent, "tide turns noon")
    assert where == "primary" and "the tide turns at noon" in found

    replay.execute("SELECT pg_wal_replay_resume()")
    wait_for(
        lambda: client.get("/healthz").json()["degraded"] == [], timeout=30, what="catching up"
    )


def test_a_replica_that_is_down_is_left_for_the_primary(
    tenant, system_actor, client, monkeypatch
) -> None:
    agent = bearer(_key(tenant, system_actor, "down"))
    agent.post("/api/v1/facts", {"content": "the ferry is late"}, format="json")
    wrapper = connections["replica"]
    wrapper.close()
    monkeypatch.setitem(wrapper.settings_dict, "PORT", str(free_port()))  # nothing listens
    monkeypatch.setattr(replica, "_down_until", 0.0)
    try:
        where, found = _recall(agent, "ferry late")
        assert (where, found) == ("primary", ["the ferry is late"])
        health = client.get("/healthz").json()
        assert health["degraded"] == ["replica"]
        assert health["checks"]["replica"]["detail"].startswith("unreachable")
    finally:
        wrapper.close()


def test_the_web_admin_reads_from_the_replica_and_a_person_sees_their_own_write(
    tenant, owner, replay
) -> None:
    from django.test import Client

    browser = Client()
    browser.force_login(owner)
    facts_page = f"/t/{tenant.slug}/facts/"
    wait_for(
        lambda: browser.get(facts_page)["X-Mnemosyne-Read-From"] == "replica",
        timeout=30,
        what="the facts page to be read from the replica",
    )
    replay.execute("SELECT pg_wal_replay_pause()")
    added = browser.post(
        f"/t/{tenant.slug}/facts/new/",
        {"content": "the boathouse opens in May", "category": "general"},
    )
    assert added.status_code in (200, 302), added.content[:500]
    page = browser.get(facts_page)
    assert page["X-Mnemosyne-Read-From"] == "primary"
    assert "the boathouse opens in May" in page.content.decode()
