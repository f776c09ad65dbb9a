"""A Hermes profile's memories come along: a holographic memory_store.db made by the real
hermes-agent provider (trust, tags, entities) and MEMORY.md / USER.md, sent by
`mnemosyne hermes import` (and offered by `install`) to a live server with the profile's key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from facts.models import Entity, Fact, FactEntity
from hermes_provider.installer import main as hermes
from hermes_provider.memories import profile_memories
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db(transaction=True)


def _holographic_profile(home: Path) -> None:
    from plugins.memory.holographic import HolographicMemoryProvider

    provider = HolographicMemoryProvider(config={"db_path": str(home / "memory_store.db")})
    provider.initialize("s", hermes_home=str(home))
    ids = {}
    try:
        for content, category, tags in (
            ("Alice Chen leads the Northstar project", "project", "team,lead"),
            ("Alice Chen prefers the Vim editor", "user_pref", "editor"),
            ("The staging database is restored every Sunday", "general", ""),
        ):
            answer = provider.handle_tool_call(
                "fact_store",
                {"action": "add", "content": content, "category": category, "tags": tags},
            )
            ids[content] = json.loads(answer)["fact_id"]
        for _ in range(2):
            provider.handle_tool_call(
                "fact_feedback",
                {"action": "unhelpful", "fact_id": ids["Alice Chen prefers the Vim editor"]},
            )
        provider.handle_tool_call(
            "fact_feedback",
            {"action": "helpful", "fact_id": ids["Alice Chen leads the Northstar project"]},
        )
    finally:
        provider.shutdown()


def _memory_files(home: Path) -> None:
    memories = home / "memories"
    memories.mkdir(parents=True)
    (memories / "MEMORY.md").write_text(
        "The repo uses uv, not pip\n§\nCI runs on the self-hosted runner\n§\n", encoding="utf-8"
    )
    (memories / "USER.md").write_text("User prefers short answers in Chinese", encoding="utf-8")


def test_a_profiles_memories_come_along_once(
    live_server, tenant, other_tenant, system_actor, settings, tmp_path, capsys
) -> None:
    from tenants.services import apikey_create

    settings.MNEMOSYNE_ENTITY_EXTRACTOR = "facts.extract.extract_entities"
    _holographic_profile(tmp_path)
    _memory_files(tmp_path)
    found = profile_memories(tmp_path)
    assert {source: len(lines) for source, lines in found.items()} == {
        "memory_store.db": 3, "MEMORY.md": 2, "USER.md": 1,
    }  # fmt: skip
    token = apikey_create(tenant=tenant, name="hermes", actor=system_actor).token
    args = ["import", "--hermes-home", str(tmp_path), "--url", live_server.url, "--api-key", token]
    assert hermes(args) == 0
    assert "Imported 6 of the profile's 6 memories (0 were there already" in capsys.readouterr().out
    with tenant_scope(tenant):
        facts = {f.content: f for f in Fact.objects.for_tenant(tenant)}
        lead = facts["Alice Chen leads the Northstar project"]
        vim = facts["Alice Chen prefers the Vim editor"]
        assert lead.trust_score == pytest.approx(0.55) and vim.trust_score == pytest.approx(0.3)
        assert (lead.category, lead.tags) == ("project", ["team", "lead"])
        assert lead.metadata["helpful_count"] == 1 and "Alice Chen" in lead.metadata["entities"]
        alice = Entity.objects.for_tenant(tenant).get(normalized="alice chen")
        linked = set(
            FactEntity.objects.for_tenant(tenant)
            .filter(entity=alice)
            .values_list("fact_id", flat=True)
        )
        assert {lead.pk, vim.pk} <= linked
        user = facts["User prefers short answers in Chinese"]
        assert (user.category, user.tags) == ("user_pref", ["user"])
    assert hermes(args) == 0  # again: nothing added twice
    assert "Imported 0 of the profile's 6 memories (6 were there already" in capsys.readouterr().out
    with tenant_scope(other_tenant):
        assert not Fact.objects.for_tenant(other_tenant).exists()


def test_install_offers_the_memories_and_a_broken_store_is_refused(
    live_server, tenant, system_actor, tmp_path, capsys
) -> None:
    from tenants.services import apikey_create

    _memory_files(tmp_path)
    token = apikey_create(tenant=tenant, name="hermes", actor=system_actor).token
    base = ["--hermes-home", str(tmp_path), "--url", live_server.url, "--api-key", token]
    assert hermes(["install", *base]) == 0  # not a terminal: it only says how
    said = capsys.readouterr().out
    assert "This profile remembers 2 in MEMORY.md, 1 in USER.md; bring them along" in said
    with tenant_scope(tenant):
        assert not Fact.objects.for_tenant(tenant).exists()
    (tmp_path / "memory_store.db").write_bytes(b"not sqlite at all" * 100)
    assert hermes(["import", *base]) == 1
    assert "is not a holographic memory store" in capsys.readouterr().err
    with tenant_scope(tenant):
        assert not Fact.objects.for_tenant(tenant).exists()
