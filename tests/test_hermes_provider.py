"""The Hermes memory provider inside the real hermes-agent: its loader, its MemoryManager.

The provider is installed into a temporary HERMES_HOME by the installer's own code, found by
Hermes' `load_memory_provider`, and driven by Hermes' `MemoryManager`. It talks to a live server
(pytest-django's `live_server`, on the test database) over HTTP; the server commits, so these
tests use a transactional database.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from facts.inputs import fact_draft
from facts.models import Fact
from facts.selectors.facts import fact_get, fact_list
from facts.services import fact_add, fact_feedback
from indexing.tokens import count_tokens
from tenants.services import apikey_create, apikey_revoke
from tests.hermes_support import manager_for, tool, write_profile

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_task_messages_left():
    """These tests commit many writes, each sending an embedding task to the test run's broker,
    where no worker takes them; left there, they would queue ahead of the worker tests' own."""
    yield
    from memoryadmin.celery import app

    with app.connection_for_write() as broker:
        broker.default_channel.queue_purge("celery")


@pytest.fixture
def key(tenant, system_actor) -> str:
    return apikey_create(tenant=tenant, name="coder", actor=system_actor).token


@pytest.fixture
def url(live_server) -> str:
    return live_server.url


@pytest.fixture
def profile(tmp_path: Path, key: str, url: str) -> Path:
    return write_profile(tmp_path / "hermes", key, url)


@pytest.fixture
def drive(profile: Path, monkeypatch):
    """A running MemoryManager with the provider, shut down after the test."""
    managers = []

    def start(home: Path = profile, session_id: str = "session-1", **kwargs):
        manager, provider = manager_for(home, monkeypatch, session_id, **kwargs)
        managers.append(manager)
        return manager, provider

    yield start
    for manager in managers:
        manager.shutdown_all()


def _turns(tenant, session_id: str | None = None) -> list[Fact]:
    facts = fact_list(tenant=tenant, kind="turn", limit=200).facts
    facts = [f for f in facts if session_id is None or f.session_id == session_id]
    return sorted(facts, key=lambda f: (f.session_id, f.position))


def test_hermes_loads_the_installed_plugin_and_drives_it_through_a_conversation(
    drive, tenant, system_actor
) -> None:
    fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft(
            {"content": "The team deploys on Tuesdays after the stand-up", "category": "project"}
        ),
    )
    manager, provider = drive()
    assert provider.name == "mnemosyne"

    prompt = manager.build_system_prompt()
    assert "# Mnemosyne memory" in prompt and "team Acme" in prompt
    assert "The team deploys on Tuesdays after the stand-up" in prompt

    names = [schema["name"] for schema in manager.get_all_tool_schemas()]
    assert names == ["fact_store", "fact_feedback"]

    added = tool(manager, "fact_store", action="add", content="Alice prefers green tea",
                 category="user_pref")  # fmt: skip
    assert added["status"] == "added"
    stored = fact_get(tenant=tenant, fact_id=added["fact_id"])
    assert stored.category == "user_pref" and stored.created_by.startswith("apikey:")

    found = tool(manager, "fact_store", action="search", query="what does Alice drink?")
    assert found["count"] >= 1 and found["results"][0]["content"] == "Alice prefers green tea"

    recalled = manager.prefetch_all("Does Alice like tea?")
    assert "Alice prefers green tea" in recalled

    manager.sync_all("Remind me what Alice drinks", "Green tea.", session_id="session-1")
    manager.sync_all("And Bob?", "I do not know yet.", session_id="session-1")
    assert manager.flush_pending(5)
    assert provider.wait_idle(10)
    turns = _turns(tenant, "session-1")
    assert [(t.speaker, t.content) for t in turns] == [
        ("user", "Remind me what Alice drinks"),
        ("assistant", "Green tea."),
        ("user", "And Bob?"),
        ("assistant", "I do not know yet."),
    ]
    assert [t.position for t in turns] == [0, 1, 2, 3]

    manager.on_session_switch("session-2", parent_session_id="session-1", reset=True)
    manager.sync_all("New topic", "Sure.", session_id="")
    manager.shutdown_all()  # flushes the buffer
    assert [t.content for t in _turns(tenant, "session-2")] == ["New topic", "Sure."]


def test_the_tools_take_the_holographic_providers_arguments_and_answer_in_its_shapes(
    drive, tmp_path: Path
) -> None:
    """Same calls to both providers: every key the holographic provider answers with, ours has."""
    from plugins.memory.holographic import (
        FACT_FEEDBACK_SCHEMA,
        FACT_STORE_SCHEMA,
        HolographicMemoryProvider,
    )

    manager, provider = drive()
    ours = {s["name"]: s for s in provider.get_tool_schemas()}
    for theirs in (FACT_STORE_SCHEMA, FACT_FEEDBACK_SCHEMA):
        mine = ours[theirs["name"]]["parameters"]
        assert mine["required"] == theirs["parameters"]["required"]
        for name, spec in theirs["parameters"]["properties"].items():
            assert mine["properties"][name]["type"] == spec["type"], name
            assert mine["properties"][name].get("enum") == spec.get("enum"), name

    holographic = HolographicMemoryProvider(config={"db_path": str(tmp_path / "holo.db")})
    holographic.initialize("s", hermes_home=str(tmp_path))
    try:
        for name, args in [
            ("add", {"content": "Alice Chen leads the Northstar project"}),
            ("add", {"content": "Alice Chen prefers the Vim editor", "category": "user_pref"}),
            ("search", {"query": "Northstar project"}),
            ("probe", {"entity": "Alice Chen"}),
            ("related", {"entity": "Alice Chen"}),
            ("reason", {"entities": ["Alice Chen", "Northstar"]}),
            ("contradict", {}),
            ("list", {}),
        ]:
            theirs = json.loads(
                holographic.handle_tool_call("fact_store", {"action": name, **args})
            )
            mine = tool(manager, "fact_store", action=name, **args)
            assert set(theirs) <= set(mine), (name, theirs, mine)
            rows = theirs.get("results") or theirs.get("facts") or []
            my_rows = mine.get("results") or mine.get("facts") or []
            if rows and name != "contradict":
                assert my_rows, (name, mine)
                assert set(rows[0]) - {"fts_rank", "hrr_vector"} <= set(my_rows[0]), name
        fact_id = tool(manager, "fact_store", action="list")["facts"][0]["fact_id"]
        their_id = json.loads(holographic.handle_tool_call("fact_store", {"action": "list"}))[
            "facts"
        ][0]["fact_id"]
        for name, args in [
            ("update", {"content": "Alice Chen prefers the Helix editor"}),
            ("remove", {}),
        ]:
            theirs = json.loads(
                holographic.handle_tool_call(
                    "fact_store", {"action": name, "fact_id": their_id, **args}
                )
            )
            mine = tool(manager, "fact_store", action=name, fact_id=fact_id, **args)
            assert set(theirs) <= set(mine) and mine[next(iter(theirs))] is True, (name, mine)
        other = tool(manager, "fact_store", action="list")["facts"][0]["fact_id"]
        their_other = json.loads(holographic.handle_tool_call("fact_store", {"action": "list"}))[
            "facts"
        ][0]["fact_id"]
        theirs = json.loads(
            holographic.handle_tool_call(
                "fact_feedback", {"action": "helpful", "fact_id": their_other}
            )
        )
        mine = tool(manager, "fact_feedback", action="helpful", fact_id=other)
        assert set(theirs) <= set(mine)
        assert mine["new_trust"] == pytest.approx(mine["old_trust"] + 0.05)
    finally:
        holographic.shutdown()


@pytest.mark.parametrize(
    ("tool_name", "args", "named"),
    [
        ("fact_store", {}, "action"),
        ("fact_store", {"action": "forget"}, "action"),
        ("fact_store", {"action": "add"}, "content"),
        ("fact_store", {"action": "add", "content": 42}, "content"),
        ("fact_store", {"action": "add", "content": "x", "category": "gossip"}, "category"),
        ("fact_store", {"action": "add", "content": "x", "scope": "no spaces here"}, "scope"),
        ("fact_store", {"action": "add", "content": "x", "kind": "rumour"}, "kind"),
        ("fact_store", {"action": "add", "content": "x", "tags": 7}, "tags"),
        ("fact_store", {"action": "search"}, "query"),
        ("fact_store", {"action": "search", "query": "x", "limit": "many"}, "limit"),
        ("fact_store", {"action": "search", "query": "x", "limit": 0}, "limit"),
        ("fact_store", {"action": "search", "query": "x", "min_trust": 3}, "min_trust"),
        ("fact_store", {"action": "search", "query": "x", "min_trust": "high"}, "min_trust"),
        ("fact_store", {"action": "probe"}, "entity"),
        ("fact_store", {"action": "related", "entity": ["a"]}, "entity"),
        ("fact_store", {"action": "reason"}, "entities"),
        ("fact_store", {"action": "reason", "entities": [1, 2]}, "entities"),
        ("fact_store", {"action": "update", "content": "x"}, "fact_id"),
        ("fact_store", {"action": "update", "fact_id": "seven", "content": "x"}, "fact_id"),
        ("fact_store", {"action": "update", "fact_id": 1}, "content"),
        ("fact_store", {"action": "update", "fact_id": 1, "trust_delta": 5}, "trust_delta"),
        ("fact_store", {"action": "remove"}, "fact_id"),
        ("fact_store", {"action": "list", "limit": 1000}, "limit"),
        ("fact_feedback", {"fact_id": 1}, "action"),
        ("fact_feedback", {"action": "love", "fact_id": 1}, "action"),
        ("fact_feedback", {"action": "helpful"}, "fact_id"),
        ("fact_feedback", {"action": "helpful", "fact_id": 999999}, "fact_id"),
    ],
)
def test_a_bad_argument_gets_an_error_naming_it(drive, tool_name, args, named) -> None:
    manager, _ = drive()
    answer = manager.handle_tool_call(tool_name, args)
    result = json.loads(answer)
    assert set(result) == {"error"}, result
    assert result["error"].startswith(f"{named}:"), result
    assert "Traceback" not in answer and "failed:" not in answer


def test_an_unknown_tool_or_arguments_that_are_not_an_object_get_an_error(drive) -> None:
    _, provider = drive()
    assert "error" in json.loads(provider.handle_tool_call("fact_forget", {}))
    assert "error" in json.loads(provider.handle_tool_call("fact_store", ["add"]))


def test_an_unknown_key_leaves_memory_off_with_a_clear_warning(
    tmp_path: Path, drive, tenant, key: str, url: str
) -> None:
    home = write_profile(tmp_path / "other", key, url)
    from hermes_provider.config import update_config

    update_config(home / "config.yaml", {"plugins.mnemosyne.api_key": key[:-4] + "XXXX"})
    warnings: list[str] = []
    manager, provider = drive(home, warning_callback=warnings.append)
    assert any("unknown or revoked" in w for w in warnings), warnings
    assert manager.build_system_prompt() == ""
    assert manager.prefetch_all("anything") == ""
    answer = tool(manager, "fact_store", action="search", query="anything")
    assert "Mnemosyne memory is off" in answer["error"]
    manager.sync_all("hello", "hi", session_id="session-1")
    manager.shutdown_all()
    assert _turns(tenant) == []


def test_a_revoked_key_stops_working_at_its_next_request(drive, tenant, system_actor) -> None:
    from tenants.models import ApiKey
    from tenants.scope import tenant_scope

    manager, _ = drive()
    assert (
        tool(manager, "fact_store", action="add", content="Before revocation")["status"] == "added"
    )
    with tenant_scope(tenant):
        key_id = ApiKey.objects.for_tenant(tenant).get().pk
    apikey_revoke(tenant=tenant, key_id=key_id, actor=system_actor)
    answer = tool(manager, "fact_store", action="add", content="After revocation")
    assert "unknown or revoked" in answer["error"]
    assert [f.content for f in fact_list(tenant=tenant).facts] == ["Before revocation"]


def test_a_read_only_key_reads_but_cannot_write(
    tmp_path: Path, drive, tenant, system_actor, url: str
) -> None:
    fact_add(
        tenant=tenant, actor=system_actor, draft=fact_draft({"content": "Readers may read this"})
    )
    token = apikey_create(tenant=tenant, name="reader", actor=system_actor, scopes=["read"]).token
    home = write_profile(tmp_path / "reader", token, url)
    manager, _ = drive(home)
    assert tool(manager, "fact_store", action="search", query="readers")["count"] == 1
    refused = tool(manager, "fact_store", action="add", content="Readers may not write this")
    assert "read-only" in refused["error"]
    assert fact_list(tenant=tenant).facts[0].content == "Readers may read this"


def test_a_resumed_session_gets_its_last_turns_back_on_its_first_turn(drive, tenant) -> None:
    manager, _ = drive(session_id="resume-me")
    manager.sync_all("My cat is called Miso", "What a lovely name.", session_id="resume-me")
    manager.sync_all("She is three years old", "Noted.", session_id="resume-me")
    manager.shutdown_all()

    manager, _ = drive(session_id="resume-me")  # Hermes restarted with the same session
    first = manager.prefetch_all("where were we?")
    assert "## Recent conversation" in first
    assert first.index("My cat is called Miso") < first.index("She is three years old")
    second = manager.prefetch_all("where were we?")
    assert "## Recent conversation" not in second

    manager.on_session_switch("brand-new", reset=True)
    assert "## Recent conversation" not in manager.prefetch_all("where were we?")
    manager.on_session_switch("resume-me", parent_session_id="brand-new", reset=False)
    assert "My cat is called Miso" in manager.prefetch_all("where were we?")


def test_a_turn_is_written_once_even_when_its_write_is_replayed(drive, profile, tenant) -> None:
    """A crash between the database commit and the buffer's delete replays the entry."""
    manager, provider = drive()
    outbox = profile / "mnemosyne" / "outbox.sqlite3"
    manager.sync_all("Replay me", "Once only.", session_id="session-1")
    assert manager.flush_pending(5) and provider.wait_idle(10)
    assert len(_turns(tenant)) == 2
    # Put the written entry back, as if the process died before deleting it.
    with sqlite3.connect(outbox) as db:
        assert db.execute("SELECT count(*) FROM outbox").fetchone()[0] == 0
    provider._outbox._db.execute(  # noqa: SLF001 - simulating the crash
        "INSERT INTO outbox (key, key_prefix, op, payload, created_at) "
        "SELECT key, key_prefix, op, payload, created_at FROM (SELECT ? AS key, ? AS key_prefix, "
        "'turn' AS op, ? AS payload, '2026-01-01T00:00:00+00:00' AS created_at)",
        (
            _replayed_key(tenant),
            provider._prefix(),  # noqa: SLF001
            json.dumps(
                {
                    "session_id": "session-1",
                    "scope": "",
                    "said": [["user", "Replay me"], ["assistant", "Once only."]],
                    "at": "2026-01-01T00:00:00+00:00",
                }
            ),
        ),
    )
    assert provider.wait_idle(10)
    assert [t.content for t in _turns(tenant)] == ["Replay me", "Once only."]


def _replayed_key(tenant) -> str:
    """The idempotency key the first write stored (the buffer entry's key)."""
    turn = _turns(tenant)[0]
    return turn.metadata["idempotency_key"].rsplit(":", 1)[0]


def test_auto_extraction_stores_candidate_facts_in_english_and_chinese(
    tmp_path: Path, drive, tenant, key: str, url: str
) -> None:
    home = write_profile(tmp_path / "extract", key, url, auto_extract=True)
    manager, _ = drive(home)
    manager.on_session_end([
        {"role": "user", "content": "I prefer tabs over spaces. Can you format this file?"},
        {"role": "assistant", "content": "I prefer spaces, but sure."},
        {"role": "user", "content": "我们决定下周五发布 Northstar 测试版。你觉得呢？"},
        {"role": "user", "content": "What do I like to drink?"},
    ])  # fmt: skip
    manager.shutdown_all()
    facts = {f.content: f for f in fact_list(tenant=tenant).facts}
    assert set(facts) == {"I prefer tabs over spaces.", "我们决定下周五发布 Northstar 测试版。"}
    assert facts["I prefer tabs over spaces."].category == "user_pref"
    assert facts["我们决定下周五发布 Northstar 测试版。"].category == "project"
    assert all("auto-extracted" in f.tags for f in facts.values())


def test_without_auto_extract_the_end_of_a_session_stores_nothing(drive, tenant) -> None:
    manager, _ = drive()
    manager.on_session_end([{"role": "user", "content": "I prefer tabs over spaces."}])
    manager.shutdown_all()
    assert fact_list(tenant=tenant).facts == []


def test_builtin_memory_writes_are_mirrored_as_facts(drive, tenant) -> None:
    manager, provider = drive()
    manager.on_memory_write("add", "user", "User's name is Dana; prefers short answers")
    manager.on_memory_write("add", "memory", "Project Northstar uses PostgreSQL 18")
    assert provider.wait_idle(10)
    manager.on_memory_write(
        "replace", "memory", "Project Northstar uses PostgreSQL 18 and Redis",
        metadata={"old_text": "uses PostgreSQL 18"},
    )  # fmt: skip
    manager.on_memory_write("remove", "user", "", metadata={"old_text": "name is Dana"})
    assert provider.wait_idle(10)
    facts = fact_list(tenant=tenant).facts
    assert [(f.content, f.category) for f in facts] == [
        ("Project Northstar uses PostgreSQL 18 and Redis", "general")
    ]
    assert "hermes-memory" in facts[0].tags


def test_before_compression_the_facts_worth_keeping_are_named(drive) -> None:
    manager, _ = drive()
    kept = manager.on_pre_compress([
        {"role": "user", "content": "我喜欢用 Vim 写代码。Please fix the build."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function",
         "function": {"name": "fact_store", "arguments": json.dumps(
             {"action": "add", "content": "The build needs Python 3.11"})}}]},
    ])  # fmt: skip
    assert "我喜欢用 Vim 写代码。" in kept and "The build needs Python 3.11" in kept
    assert "Please fix the build" not in kept
    assert manager.on_pre_compress([{"role": "user", "content": "ok"}]) == ""


def test_a_delegated_task_is_remembered_as_a_turn_of_the_session(drive, tenant) -> None:
    manager, _ = drive()
    manager.on_delegation("Count the TODOs in src/", "There are 14 TODOs.", child_session_id="c1")
    manager.shutdown_all()
    (turn,) = _turns(tenant)
    assert turn.speaker == "subagent" and "There are 14 TODOs." in turn.content
    assert turn.metadata["child_session_id"] == "c1"


def test_profile_overrides_apply_and_bad_ones_are_named(
    tmp_path: Path, drive, tenant, key: str, system_actor, url: str
) -> None:
    shaky = fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "The office wifi password is tea-time"}),
    )
    fact_feedback(tenant=tenant, fact_id=shaky.fact.pk, helpful=False, actor=system_actor)  # 0.4
    home = write_profile(
        tmp_path / "strict",
        key,
        url,
        min_trust=0.45,
        budget=120,
        half_life_days="soon",
        weights={"fts": 1, "telepathy": 2},
    )
    warnings: list[str] = []
    manager, _ = drive(home, warning_callback=warnings.append)
    assert any("half_life_days='soon'" in w for w in warnings), warnings
    assert any("plugins.mnemosyne.weights" in w for w in warnings), warnings
    assert tool(manager, "fact_store", action="search", query="wifi password")["count"] == 0
    assert (
        tool(manager, "fact_store", action="search", query="wifi password", min_trust=0.3)["count"]
        == 1
    )
    for i in range(30):
        fact_add(
            tenant=tenant,
            actor=system_actor,
            draft=fact_draft({"content": f"Release note {i}: fixed the wifi login page"}),
        )
    recalled = manager.prefetch_all("wifi login")
    assert recalled and count_tokens(recalled) <= 120


def test_two_profiles_of_two_tenants_never_see_each_others_memories(
    tmp_path: Path, drive, tenant, other_tenant, key: str, system_actor, url: str
) -> None:
    other_key = apikey_create(tenant=other_tenant, name="spy", actor=system_actor).token
    ours, _ = drive(write_profile(tmp_path / "acme", key, url), session_id="acme-chat")
    theirs, _ = drive(write_profile(tmp_path / "globex", other_key, url), session_id="globex-chat")
    secrets = {
        "acme": "Alice Chen keeps the Northstar launch codes in the blue binder",
        "globex": "Alice Chen keeps the Northstar launch codes in the red binder",
    }
    ids = {}
    for name, manager in (("acme", ours), ("globex", theirs)):
        ids[name] = tool(manager, "fact_store", action="add", content=secrets[name])["fact_id"]
        manager.sync_all(f"{name}: where are the launch codes?", secrets[name], session_id="")
        manager.on_memory_write("add", "memory", f"{name} memory: Northstar binder colour")
        manager.flush_pending(5)
    for manager in (ours, theirs):
        assert manager.providers[0].wait_idle(10)

    for name, manager, foreign in (("acme", ours, "globex"), ("globex", theirs, "acme")):
        seen = [
            json.dumps(tool(manager, "fact_store", action=action, **args))
            for action, args in [
                ("search", {"query": "Northstar launch codes binder"}),
                ("search", {"query": "launch codes", "kind": "turn"}),
                ("probe", {"entity": "Alice Chen"}),
                ("related", {"entity": "Northstar"}),
                ("reason", {"entities": ["Alice Chen", "Northstar"]}),
                ("contradict", {}),
                ("list", {}),
                ("list", {"kind": "turn"}),
            ]
        ]
        seen.append(manager.prefetch_all("Where are the Northstar launch codes?"))
        seen.append(manager.build_system_prompt())
        everything = "\n".join(seen)
        assert secrets[name].split(" in the ")[1] in everything  # its own memories are there
        assert secrets[foreign].split(" in the ")[1] not in everything, name
        assert f"{foreign}:" not in everything and f"{foreign} memory" not in everything

        # Another tenant's fact id is as unknown as a missing one, and stays untouched.
        foreign_id = ids[foreign]
        assert (
            tool(manager, "fact_store", action="update", fact_id=foreign_id, content="mine")[
                "updated"
            ]
            is False
        )
        assert tool(manager, "fact_store", action="remove", fact_id=foreign_id)["removed"] is False
        assert (
            "not found"
            in tool(manager, "fact_feedback", action="helpful", fact_id=foreign_id)["error"]
        )
        # No argument names a tenant: one that tries is ignored.
        tool(manager, "fact_store", action="add", content=f"{name} was here", tenant=foreign)
    assert fact_get(tenant=other_tenant, fact_id=ids["globex"]).content == secrets["globex"]
    assert fact_get(tenant=other_tenant, fact_id=ids["globex"]).trust_score == 0.5
    acme = {f.content for f in fact_list(tenant=tenant, limit=50).facts}
    assert "acme was here" in acme and "globex was here" not in acme


def test_without_its_settings_the_provider_is_unavailable_and_setup_writes_them(
    tmp_path: Path, monkeypatch, key: str, url: str
) -> None:
    from hermes_provider.provider import MnemosyneProvider

    home = tmp_path / "fresh"
    home.mkdir()
    (home / "config.yaml").write_text("# mine\nmodel:\n  default: some-model\n")
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.delenv("MNEMOSYNE_API_KEY", raising=False)
    monkeypatch.delenv("MNEMOSYNE_URL", raising=False)
    provider = MnemosyneProvider()
    assert provider.is_available() is False
    asked = {field["key"] for field in provider.get_config_schema()}
    assert {"url", "api_key", "scope", "auto_extract", "budget", "prefetch_timeout"} <= asked
    assert "database_url" not in asked
    provider.save_config({"url": url, "scope": "team:core"}, str(home))
    assert provider.is_available() is False  # still no key
    monkeypatch.setenv("MNEMOSYNE_API_KEY", key)  # a secret `hermes memory setup` put in .env
    assert provider.is_available() is True
    text = (home / "config.yaml").read_text()
    assert text.startswith("# mine\nmodel:\n  default: some-model\n") and "team:core" in text


def test_the_profile_holds_the_servers_url_and_the_key_and_no_database_credential(
    profile: Path, url: str, key: str
) -> None:
    from django.conf import settings
    from django.db import connection

    database = connection.settings_dict
    section = yaml.safe_load((profile / "config.yaml").read_text())["plugins"]["mnemosyne"]
    assert section == {"url": url, "api_key": key, "prefetch_timeout": 30}
    secrets = [
        "postgresql://",
        "postgres://",
        database["NAME"],
        str(database.get("HOST") or "") or "no-host",
        str(settings.MNEMOSYNE_MODEL_DIR),
        settings.SECRET_KEY,
    ]
    if database.get("PASSWORD"):
        secrets.append(database["PASSWORD"])
    for path in profile.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            for secret in secrets:
                assert secret not in text, (path, secret)


def test_a_profile_of_an_earlier_install_is_told_how_to_connect_again(
    tmp_path: Path, drive, tenant, key: str, url: str
) -> None:
    from hermes_provider.config import update_config

    home = write_profile(tmp_path / "old", key, url)
    old = "postgresql://mnemosyne@/mnemosyne?host=/run/pg&port=5432"
    update_config(home / "config.yaml", {"plugins.mnemosyne.database_url": old})
    warnings: list[str] = []
    manager, _ = drive(home, warning_callback=warnings.append)
    assert any("database_url" in w and "mnemosyne hermes install --url" in w for w in warnings), (
        warnings
    )
    assert manager.prefetch_all("anything") == ""
    assert "Mnemosyne memory is off" in tool(manager, "fact_store", action="list")["error"]
    manager.sync_all("hello", "hi", session_id="session-1")
    manager.shutdown_all()
    assert _turns(tenant) == []


def test_a_buffer_larger_than_one_request_is_sent_in_smaller_batches_in_order(
    drive, tenant, settings, monkeypatch
) -> None:
    """The buffer holds more than the server takes in one body: the provider sends it in
    batches that fit, in order (scaled down: a 32 KB server limit, 16 KB batches)."""
    from hermes_provider import writes as module

    settings.MNEMOSYNE_API_MAX_BODY_BYTES = 32 * 1024
    monkeypatch.setattr(module, "BATCH_BYTES", 16 * 1024)
    manager, provider = drive()
    said = [f"Turn {n}: " + "the deploy checklist needs the backup step. " * 140 for n in range(12)]
    for text in said:
        manager.sync_all(text, "Noted.", session_id="session-1")
    assert manager.flush_pending(30)
    assert provider.wait_idle(120)
    turns = [t.content for t in _turns(tenant, "session-1") if t.speaker == "user"]
    assert turns == [text.strip() for text in said]


def test_small_talk_prefetches_nothing_and_a_question_its_memory(
    drive, tenant, system_actor
) -> None:
    for content in (
        "Alice uses vim as her editor, with her own config",
        "Our dog Rex loves the park by the lake",
        "Bob moved to Hangzhou last spring",
        "张伟喜欢喝龙井茶",
    ):
        fact_add(tenant=tenant, actor=system_actor, draft=fact_draft({"content": content}))
    manager, _ = drive()
    for said in ("thanks!", "好的", "ok see you tomorrow", "哈哈没问题"):
        assert manager.prefetch_all(said) == "", said
    assert manager.prefetch_all("What editor does Carol like?") == ""
    assert "Alice uses vim as her editor" in manager.prefetch_all("What editor does Alice use?")
