"""The audit trail reads as sentences: every action of a fact, of the tenant and of an entity,
in English and in Chinese, without a raw field name or an English word left in the Chinese;
fact ids are links; times follow the viewer's time zone; retention dry runs and runs started
by hand are in the log."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.utils import translation

from facts import services as fact_services
from facts.inputs import fact_draft
from facts.models import EntityAction, EventAction
from surfaces.base.trail import FIELDS, event_sentence
from tenants.models import TenantAction, TenantEvent
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db

AT = datetime(2026, 12, 7, 23, 30, tzinfo=UTC)
CONTENT = "小明住在北京"
TEA = "Olivia likes tea"

# What each action records, as the services write it (before, after).
FACT_EVENTS: dict[str, tuple[Any, Any]] = {
    "create": (None, {"content": CONTENT, "kind": "fact", "scope": "team", "category": "general",
                      "tags": ["家"], "trust_score": 0.5, "status": "active", "session_id": None,
                      "pinned": False}),
    "update": ({"tags": ["家"], "pinned": False, "content": "小明住在上海"},
               {"tags": ["家", "城市"], "pinned": True, "content": CONTENT}),
    "remove": ({"status": "active"}, {"status": "removed"}),
    "feedback": ({"trust_score": 0.5}, {"trust_score": 0.6, "helpful": True}),
    "archive": ({"status": "active"}, {"status": "archived", "reason": "low_trust",
                                       "bundle": "2026-12-07", "run": 4}),
    "restore": ({"status": "archived"}, {"status": "active", "from_bundle": "2026-12-07"}),
    "purge": ({"kind": "fact", "scope": "team", "status": "archived", "content_length": 12},
              {"reason": "过期", "run": 4}),
    "supersede": ({"status": "active", "trust_score": 0.5},
                  {"status": "superseded", "superseded_by": 12, "trust_score": 0.3,
                   "conflict": 3}),
    "export": (None, {"bundle": "2026-12-07", "scope": "team", "since": None, "facts": 10,
                      "events": 30}),
    "import": (None, {"lines": 3, "added": 2, "exists": 1, "restored": 0, "error": 0}),
    "join": (None, {"content": CONTENT, "similarity": 0.995, "tags_added": ["城市"],
                    "mention_count": 2}),
    "conflict": (None, {"conflict": 3, "with": 12, "decision": "keep_both", "note": "都对"}),
}  # fmt: skip

TENANT_EVENTS: dict[str, tuple[str, Any, Any]] = {
    "tenant_create": ("acme", None, {"name": "顶点", "settings": {"token_budget": 900}}),
    "settings_update": ("", {"weight_fts": 0.3, "min_trust": 0.3},
                        {"weight_fts": 0.4, "min_trust": 0.3}),
    "member_set": ("olivia", {"role": "auditor"}, {"role": "admin"}),
    "member_remove": ("olivia", {"role": "admin"}, None),
    "member_invite": ("invitation 5", None, {"role": "auditor", "expires_at": "2026-12-14"}),
    "invite_accept": ("olivia", None, {"role": "auditor", "invitation": 5}),
    "invite_revoke": ("invitation 5", None, None),
    "password_reset_link": ("olivia", None, None),
    "apikey_create": ("hermes (ab12cd)", None, {"scopes": ["read", "write"],
                                                 "expires_at": "2027-01-01",
                                                 "scope_prefix": "team"}),
    "apikey_revoke": ("hermes (ab12cd)", None, None),
    "apikey_rotate": ("hermes (ab12cd)", None, {"old_secret_valid_until": "2026-12-08"}),
    "tenant_rename": ("acme", {"name": "顶点"}, {"name": "新顶点"}),
    "retention_update": ("", {"archive_after_days_unretrieved": None, "legal_hold": False},
                         {"archive_after_days_unretrieved": 90, "legal_hold": True}),
    "retention_dry_run": ("", None, {"run": 4, "archive": 3, "purge": 1}),
    "retention_run": ("", None, {"run": 5}),
    "audit_export": ("csv", None, {"filters": {"action": "feedback", "fact_id": 12}}),
    "facts_export": ("jsonl", None, {"filters": {"status": "active"}}),
    "tenant_delete": ("acme", None, {"facts": 10}),
    "dictionary_add": ("小明", None, {"type": "person"}),
    "dictionary_change": ("小明", {"type": "person"}, {"type": "place"}),
    "dictionary_remove": ("小明", {"type": "place"}, None),
    "entity_rename": ("entity 7", {"name": "小明", "aliases": []},
                      {"name": "明明", "aliases": ["小明"]}),
    "entity_retype": ("entity 7", {"type": "person"}, {"type": "organization"}),
    "entity_alias_add": ("entity 7", {"aliases": []}, {"aliases": ["明"], "alias": "明"}),
    "entity_alias_remove": ("entity 7", {"aliases": ["明"]}, {"aliases": [], "alias": "明"}),
    "entity_merge": ("entity 7", {"aliases": []},
                     {"aliases": ["明"], "merged": {"id": 8, "name": "明"}, "relinked_facts": 2}),
    "entity_split": ("entity 7", {"aliases": ["明"]},
                     {"aliases": [], "split": {"id": 9, "name": "明"}, "relinked_facts": 1}),
    "entity_alias_dismiss": ("entity 7", None, {"alias": "明"}),
}  # fmt: skip

ENTITY_EVENTS: dict[str, tuple[Any, Any]] = {
    "rename": ({"name": "小明", "aliases": []}, {"name": "明明", "aliases": ["小明"]}),
    "retype": ({"type": "person"}, {"type": "place"}),
    "alias_add": ({"aliases": []}, {"aliases": ["明"], "alias": "明"}),
    "alias_remove": ({"aliases": ["明"]}, {"aliases": [], "alias": "明"}),
    "merge": ({"aliases": []},
              {"aliases": ["明"], "merged": {"id": 8, "name": "明"}, "relinked_facts": 2}),
    "merged": ({"id": 8, "name": "明", "aliases": []},
               {"into": {"id": 7, "name": "小明"}, "relinked_facts": 2}),
    "split": ({"aliases": ["明"]},
              {"aliases": [], "split": {"id": 9, "name": "明"}, "relinked_facts": 1}),
    "split_from": (None, {"name": "明", "type": "person", "from": {"id": 7, "name": "小明"},
                          "relinked_facts": 1}),
    "alias_dismiss": (None, {"alias": "明"}),
}  # fmt: skip

# Latin text a value may bring into a Chinese sentence (scopes, key names, formats, dates).
VALUES = {"team", "acme", "olivia", "hermes", "ab12cd", "csv", "jsonl", "API"}


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    return set()


def _plain(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def _events(tenant) -> list[tuple[str, SimpleNamespace]]:
    fact = [
        ("fact", SimpleNamespace(action=a, fact_id=None if a in ("export", "import") else 12,
                                 before=b, after=f, at=AT))
        for a, (b, f) in FACT_EVENTS.items()
    ]  # fmt: skip
    other = [
        ("tenant", SimpleNamespace(action=a, target=t, before=b, after=f, at=AT))
        for a, (t, b, f) in TENANT_EVENTS.items()
    ]
    entity = [
        ("entity", SimpleNamespace(action=a, entity_id=7, before=b, after=f, at=AT))
        for a, (b, f) in ENTITY_EVENTS.items()
    ]
    return fact + other + entity


def test_every_action_has_a_sample_here() -> None:
    """A new action fails here until it is given a sample (and so a checked sentence)."""
    assert set(FACT_EVENTS) == set(EventAction.values)
    assert set(TENANT_EVENTS) == set(TenantAction.values)
    assert set(ENTITY_EVENTS) == set(EntityAction.values)


def test_every_recorded_field_has_words() -> None:
    samples = [*FACT_EVENTS.values(), *ENTITY_EVENTS.values()]
    samples += [(b, f) for _, b, f in TENANT_EVENTS.values()]
    keys = {k for b, f in samples for k in _keys(b) | _keys(f)}
    assert keys - set(FIELDS) == set()


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_every_event_reads_as_a_sentence(tenant, language) -> None:
    with translation.override(language):
        for source, event in _events(tenant):
            html = str(event_sentence(event, tenant, source))
            text = _plain(html)
            assert text.strip(), event.action
            assert "_" not in text, (event.action, text)  # no raw field name or code
            assert "{" not in text and "None" not in text and "True" not in text, text
            if source == "fact" and event.fact_id:
                assert '<a href="/t/acme/facts/12/">#12</a>' in html, html
            if language == "zh-hans":
                left = set(re.findall(r"[A-Za-z][A-Za-z0-9-]*", text)) - VALUES
                assert not left, (event.action, text, left)


def test_the_sentences_say_what_changed(tenant) -> None:
    by_action = {e.action: (s, e) for s, e in _events(tenant)}

    def sentence(action: str) -> str:
        source, event = by_action[action]
        return _plain(str(event_sentence(event, tenant, source)))

    assert sentence("feedback") == "fact #12 marked helpful: trust 0.50 → 0.60"
    assert sentence("join") == (
        "a near-duplicate joined fact #12 (similarity 0.995): "
        "text “小明住在北京”; tags added 城市; mentions 2"
    )
    assert sentence("member_set") == "member added or role changed: olivia (role auditor → admin)"
    assert sentence("settings_update") == "settings changed: weight of words 0.3 → 0.4"
    with translation.override("zh-hans"):
        assert "可信度 0.50 → 0.60" in sentence("feedback")
        assert "相似度 0.995" in sentence("join")


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_audit_page_shows_sentences_in_the_viewers_time_zone(tenant, owner, owner_actor):
    fact = fact_services.fact_add(
        tenant=tenant,
        draft=fact_draft({"content": TEA, "scope": "project:tea"}),
        actor=owner_actor,
    ).fact
    fact_services.fact_feedback(tenant=tenant, fact_id=fact.pk, helpful=True, actor=owner_actor)
    client = _client(owner)
    page = client.get("/t/acme/audit/").content.decode()
    assert f'created fact <a href="/t/acme/facts/{fact.pk}/">#{fact.pk}</a>' in page
    assert "marked helpful: trust 0.50 → 0.55" in page
    assert f'created fact <a href="/t/acme/facts/{fact.pk}/">#{fact.pk}</a>: text “{TEA}”' in page
    assert "(UTC)" in page
    client.cookies["mnemosyne_tz"] = "Asia/Shanghai"
    shanghai = client.get("/t/acme/audit/").content.decode()
    assert "(Asia/Shanghai)" in shanghai
    with tenant_scope(tenant):
        event = TenantEvent.objects.for_tenant(tenant).order_by("-at").first()
    shown = event.at.astimezone(ZoneInfo("Asia/Shanghai")).strftime("%Y-%m-%d %H:%M")
    assert shown in shanghai
    client.cookies["mnemosyne_tz"] = "Not/AZone"
    assert "(UTC)" in client.get("/t/acme/audit/").content.decode()
    chinese = Client(headers={"accept-language": "zh-hans"})
    chinese.force_login(owner)
    zh = chinese.get("/t/acme/audit/").content.decode()
    assert "创建了事实" in zh or "新建" in zh
    history = client.get(f"/t/acme/facts/{fact.pk}/").content.decode()
    assert "marked helpful" in history


def test_dry_runs_and_runs_by_hand_are_in_the_audit_log(tenant, owner):
    client = _client(owner)
    assert client.post("/t/acme/retention/run", {"dry_run": "true"}).status_code == 302
    assert client.post("/t/acme/retention/run", {}).status_code == 302
    with tenant_scope(tenant):
        actions = list(
            TenantEvent.objects.for_tenant(tenant)
            .filter(action__startswith="retention_")
            .order_by("id")
            .values_list("action", "actor", "after")
        )
    assert [a for a, _, _ in actions] == ["retention_dry_run", "retention_run"]
    assert all(actor.startswith("user:") for _, actor, _ in actions)
    assert actions[0][2]["archive"] == 0 and actions[0][2]["purge"] == 0
    page = client.get("/t/acme/audit/").content.decode()
    assert "dry run, nothing changed" in page and "started by hand" in page


def test_an_outsider_sees_none_of_the_trail(tenant, owner, outsider, owner_actor):
    fact_services.fact_add(
        tenant=tenant,
        draft=fact_draft({"content": TEA, "scope": "project:tea"}),
        actor=owner_actor,
    )
    assert _client(outsider).get("/t/acme/audit/").status_code in (403, 404)
