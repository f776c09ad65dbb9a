"""The REST API as its users notice it: facts, import, recall, context, entities, members,
keys, retention, audit, errors, limits, throttling and the schema pages."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from facts import services as fact_services
from facts.inputs import fact_draft
from facts.models import Fact
from operations.rates import rates_clear
from tenants.scope import tenant_scope
from tests.api_fixtures import World, bearer, signed_in

pytestmark = pytest.mark.django_db

BASE = "/api/v1/tenants/acme"


def _json(client, method: str, url: str, body=None):
    data = body if isinstance(body, str) else json.dumps(body) if body is not None else None
    kwargs = {"data": data, "content_type": "application/json"} if data is not None else {}
    return client.generic(method, url, **kwargs)


def _error(response, status: int, field: str | None = None) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:400])
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["message"] and body["errors"]
    if field is not None:
        assert body["field"] == field, body
    return body


@pytest.fixture
def agent(world: World):
    return bearer(world.tokens["write"])


# -- facts ------------------------------------------------------------------------------------


def test_a_fact_is_stored_once_and_found_in_the_list(world, agent) -> None:
    body = {"content": "Erin takes the 8:15 train", "scope": "user:erin", "tags": ["Travel"]}
    first = _json(agent, "POST", "/api/v1/facts", body)
    assert first.status_code == 201 and first.json()["status"] == "added"
    fact = first.json()["fact"]
    assert fact["tags"] == ["travel"] and fact["created_by"].startswith("apikey:")
    again = _json(agent, "POST", "/api/v1/facts", body | {"content": "erin  TAKES the 8:15 train"})
    assert again.status_code == 200 and again.json() == {"status": "exists", "fact": fact}
    listed = agent.get("/api/v1/facts?scope=user:erin").json()
    assert [f["id"] for f in listed["results"]] == [fact["id"]]
    detail = agent.get(f"/api/v1/facts/{fact['id']}").json()
    assert detail["content"] == body["content"] and detail["entities"] == [
        {"id": detail["entities"][0]["id"], "name": "Erin", "type": "person"}
    ]


def test_the_fact_list_pages_with_a_cursor_and_filters(world, agent, system_actor) -> None:
    for n in range(7):
        fact_services.fact_add(
            tenant=world.tenant,
            actor=system_actor,
            draft=fact_draft({"content": f"note {n}", "category": "project"}),
        )
    seen, cursor = [], None
    while True:
        url = "/api/v1/facts?category=project&limit=3" + (f"&cursor={cursor}" if cursor else "")
        page = agent.get(url).json()
        seen += [f["content"] for f in page["results"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"note {n}" for n in reversed(range(7))]
    agent.delete(f"/api/v1/facts/{world.fact.pk}")
    active = {f["id"] for f in agent.get("/api/v1/facts?limit=200").json()["results"]}
    every = {f["id"] for f in agent.get("/api/v1/facts?limit=200&status=all").json()["results"]}
    assert world.fact.pk not in active and world.fact.pk in every


@pytest.mark.parametrize(
    ("method", "url", "body", "field"),
    [
        ("GET", "/api/v1/facts?limit=500", None, "limit"),
        ("GET", "/api/v1/facts?cursor=bm9wZQ==", None, "cursor"),
        ("GET", "/api/v1/facts?status=gone", None, "status"),
        ("GET", "/api/v1/facts?trust_min=2", None, "trust_min"),
        ("GET", "/api/v1/facts?created_after=yesterday", None, "created_after"),
        ("POST", "/api/v1/facts", {"content": "  "}, "content"),
        ("POST", "/api/v1/facts", {"content": "x", "scope": "not a scope"}, "scope"),
        ("POST", "/api/v1/facts", {"content": "x", "tags": [str(n) for n in range(21)]}, "tags"),
        ("POST", "/api/v1/facts", {"content": "x", "speaker": "a\u0000b"}, "speaker"),
        ("POST", "/api/v1/facts", {"content": "x", "kind": "turn"}, "session_id"),
        ("POST", "/api/v1/facts", {"content": "x", "trust": 1.5}, "trust"),
        ("POST", "/api/v1/facts", {"content": "x", "position": 2**40}, "position"),
        ("POST", "/api/v1/facts", '{"content": "x", "metadata": {"n": 1e400}}', "metadata.n"),
        ("POST", "/api/v1/facts", '{"content": "\\ud800"}', ""),
        ("POST", "/api/v1/facts", '{"content": "x", "metadata": {"k": "\\u0000"}}', "metadata.k"),
        ("POST", "/api/v1/facts", "[1, 2]", None),
        ("POST", "/api/v1/facts", "{not json", None),
        ("PATCH", "/api/v1/facts/{fact}", {}, "fact"),
        ("PATCH", "/api/v1/facts/{fact}", {"trust_delta": "lots"}, "trust_delta"),
        ("POST", "/api/v1/facts/{fact}/feedback", {"helpful": "maybe"}, "helpful"),
        ("POST", "/api/v1/recall", {"query": "x" * 2001}, "query"),
        ("POST", "/api/v1/recall", {"query": ""}, "query"),
        ("POST", "/api/v1/recall", {"query": "tea", "k": 0}, "k"),
        ("POST", "/api/v1/recall", {"query": "tea", "channels": ["smell"]}, "channels[0]"),
        ("POST", "/api/v1/context", {"query": "tea", "budget": 10}, "budget"),
        ("GET", "/api/v1/audit?action=dance", None, "action"),
        ("GET", "/api/v1/audit?cursor=WyJ4Il0=", None, "cursor"),
        ("GET", "/api/v1/entities?type=planet", None, "type"),
        ("GET", "/api/v1/retention/preview?archive_below_trust=7", None, "archive_below_trust"),
    ],
)
def test_bad_input_is_a_400_that_names_the_field(world, agent, method, url, body, field) -> None:
    response = _json(agent, method, url.format(fact=world.fact.pk), body)
    error = _error(response, 400, field if field != "" else None)
    if field == "":
        assert "surrogate" in error["message"]


def test_purge_forgets_the_text_and_keeps_the_history(world, owner) -> None:
    client = signed_in(owner)
    url = f"{BASE}/facts/{world.fact.pk}"
    _error(_json(client, "POST", f"{url}/purge", {"reason": " "}), 400, "reason")
    assert _json(client, "POST", f"{url}/purge", {"reason": "asked to forget"}).json() == {
        "purged": world.fact.pk
    }
    _error(client.get(url), 404)
    history = client.get(f"{url}/history").json()
    assert [e["action"] for e in history] == ["create", "purge"]
    assert history[-1]["after"] == {"reason": "asked to forget"}
    assert "green tea" not in json.dumps(history[-1])


def test_feedback_moves_trust_and_restore_brings_a_fact_back(world, agent) -> None:
    url = f"/api/v1/facts/{world.fact.pk}"
    rated = _json(agent, "POST", f"{url}/feedback", {"helpful": False}).json()
    assert rated["new_trust"] == pytest.approx(rated["old_trust"] - 0.1)
    assert agent.delete(url).json()["status"] == "removed"
    assert agent.post(f"{url}/restore").json()["status"] == "active"
    actions = [e["action"] for e in agent.get(f"{url}/history").json()]
    assert actions == ["create", "feedback", "remove", "restore"]


# -- import -----------------------------------------------------------------------------------


def test_an_import_reports_every_line_and_stores_the_good_ones(world, agent) -> None:
    body = "\n".join(
        [
            json.dumps({"content": "Frank owns the release", "category": "project"}),
            "",
            json.dumps({"content": "Frank owns the release", "category": "project"}),
            json.dumps({"content": "x", "colour": "red"}),
            "not json",
            json.dumps({"content": "Gina's turn", "kind": "turn", "session_id": "s1",
                        "created_at": "2026-01-31T09:30:00Z"}),
            json.dumps(["a list"]),
            '{"content": "one line\u2028still the same line"}',
        ]
    )  # fmt: skip
    response = agent.generic("POST", "/api/v1/facts/import", body, "application/x-ndjson")
    assert response.status_code == 200, response.content
    report = response.json()
    assert report["counts"] == {"added": 3, "exists": 1, "restored": 0, "error": 3}
    by_line = {line["line"]: line for line in report["lines"]}
    assert by_line[1]["status"] == "added" and by_line[3]["status"] == "exists"
    assert by_line[3]["fact_id"] == by_line[1]["fact_id"]
    assert (by_line[4]["field"], by_line[5]["field"], by_line[7]["field"]) == (
        "colour", "line", "line"
    )  # fmt: skip
    assert 2 not in by_line  # blank lines are skipped, numbering still counts them
    turn = agent.get(f"/api/v1/facts/{by_line[6]['fact_id']}").json()
    assert turn["kind"] == "turn" and turn["created_at"].startswith("2026-01-31T09:30")
    imported = agent.get("/api/v1/audit?action=import").json()["results"]
    assert imported[0]["after"] == {"lines": 7, "added": 3, "exists": 1, "restored": 0, "error": 3}
    assert agent.get(f"/api/v1/facts/{by_line[8]['fact_id']}").json()["content"] == (
        "one line\u2028still the same line"
    )


def test_an_import_must_be_utf8_json_lines(world, agent) -> None:
    _error(agent.generic("POST", "/api/v1/facts/import", b"\xff\xfe", "application/x-ndjson"), 400)
    _error(
        agent.generic("POST", "/api/v1/facts/import", "\n\n", "application/x-ndjson"), 400, "body"
    )
    _error(agent.generic("POST", "/api/v1/facts/import", "{}", "text/html"), 415)


# -- recall and context -----------------------------------------------------------------------


def test_recall_finds_the_fact_and_explains_itself(world, agent) -> None:
    body = {"query": "what does Alice drink?", "channels": ["fts"], "explain": True}
    hits = _json(agent, "POST", "/api/v1/recall", body).json()["results"]
    assert hits[0]["fact"]["id"] == world.fact.pk
    assert hits[0]["explain"]["channels"] == {"fts": 1.0}
    assert hits[0]["explain"]["factors"]["trust"] == pytest.approx(0.5)
    plain = _json(agent, "POST", "/api/v1/recall", body | {"explain": False}).json()["results"]
    assert "explain" not in plain[0]
    elsewhere = _json(agent, "POST", "/api/v1/recall", body | {"scope": "user:bob"}).json()
    assert elsewhere["results"] == []


def test_recall_never_crosses_tenants(world) -> None:
    body = {"query": "Alice green tea", "channels": ["fts"]}
    ours = _json(bearer(world.tokens["read"]), "POST", "/api/v1/recall", body).json()["results"]
    theirs = _json(bearer(world.tokens["other"]), "POST", "/api/v1/recall", body).json()
    assert [h["fact"]["id"] for h in ours] == [world.fact.pk]
    assert [h["fact"]["id"] for h in theirs["results"]] == [world.other_fact.pk]


def test_context_assembles_the_block_an_agent_reads(world, agent) -> None:
    block = _json(agent, "POST", "/api/v1/context", {"query": "green tea"}).json()
    assert "Alice drinks green tea at Acme" in block["text"] and block["tokens"] > 0
    assert world.fact.pk in block["levels"]["important"] + block["levels"]["relevant"]


# -- entities ---------------------------------------------------------------------------------


def test_entities_list_their_facts(world, agent) -> None:
    listed = agent.get("/api/v1/entities?q=ali").json()["results"]
    assert [(e["name"], e["fact_count"]) for e in listed] == [("Alice", 1)]
    entity = agent.get(f"/api/v1/entities/{listed[0]['id']}").json()
    assert entity["type"] == "person"
    facts = agent.get(f"/api/v1/entities/{entity['id']}/facts").json()["results"]
    assert [f["id"] for f in facts] == [world.fact.pk]
    names, cursor = [], None
    while True:
        page = agent.get("/api/v1/entities?limit=1" + (f"&cursor={cursor}" if cursor else ""))
        names += [e["name"] for e in page.json()["results"]]
        cursor = page.json()["next_cursor"]
        if not cursor:
            break
    assert names == ["Acme", "Alice", "Bob"]


# -- members and keys -------------------------------------------------------------------------


def test_an_admin_manages_members(world, owner, auditor) -> None:
    from django.contrib.auth import get_user_model

    hana = get_user_model().objects.create_user("hana", password="pw-hana-123")
    client = signed_in(owner)
    invited = _json(client, "POST", f"{BASE}/members", {"username": "hana", "role": "auditor"})
    assert invited.status_code == 202
    assert invited.json() == {"username": "hana", "role": "auditor", "invited": True,
                              "expires_at": invited.json()["expires_at"]}  # fmt: skip
    # Not a member until the account accepts; a name no account has gets the same answer.
    _error(client.get(f"{BASE}/members/hana"), 404)
    nobody = _json(client, "POST", f"{BASE}/members", {"username": "nobody", "role": "admin"})
    assert nobody.status_code == 202 and set(nobody.json()) == set(invited.json())
    from tenants.invitations import invitation_accept_as, invitations_waiting

    (waiting,) = invitations_waiting(user=hana)
    assert invitation_accept_as(user=hana, invitation_id=waiting.pk).new
    assert client.get(f"{BASE}/members/hana").json()["role"] == "auditor"
    # A member named again gets the role at once.
    again = _json(client, "POST", f"{BASE}/members", {"username": "hana", "role": "admin"})
    assert again.status_code == 200 and again.json()["role"] == "admin"
    assert _json(client, "PATCH", f"{BASE}/members/hana", {"role": "auditor"}).json()["role"] == (
        "auditor"
    )
    assert client.delete(f"{BASE}/members/hana").status_code == 204
    names = [m["username"] for m in client.get(f"{BASE}/members").json()]
    assert names == ["arthur", "olivia"]
    _error(_json(client, "POST", f"{BASE}/members", {"username": "no body", "role": "admin"}),
           400, "username")  # fmt: skip
    _error(client.get(f"{BASE}/members/hana"), 404)


def test_a_superuser_adds_an_existing_account_at_once(world) -> None:
    from django.contrib.auth import get_user_model

    users = get_user_model()
    users.objects.create_user("hana", password="pw-hana-123")
    root = signed_in(users.objects.create_superuser("root", password="pw-root-123"))
    added = _json(root, "POST", f"{BASE}/members", {"username": "hana", "role": "auditor"})
    assert added.status_code == 200 and added.json()["username"] == "hana"
    _error(_json(root, "POST", f"{BASE}/members", {"username": "nobody", "role": "admin"}),
           400, "username")  # fmt: skip


def test_a_new_key_is_shown_once_works_and_stops_when_revoked(world, owner) -> None:
    client = signed_in(owner)
    created = _json(client, "POST", f"{BASE}/api-keys", {"name": "ci", "scopes": ["read"]})
    assert created.status_code == 201
    token, key_id = created.json()["token"], created.json()["id"]
    assert token.startswith("mnm_") and created.json()["scopes"] == ["read"]
    assert "token" not in json.dumps(client.get(f"{BASE}/api-keys").json())
    assert token not in client.get(f"{BASE}/api-keys/{key_id}").content.decode()
    assert bearer(token).get("/api/v1/facts").status_code == 200
    assert client.delete(f"{BASE}/api-keys/{key_id}").json()["active"] is False
    _error(bearer(token).get("/api/v1/facts"), 401)


# -- retention --------------------------------------------------------------------------------


def test_retention_preview_counts_what_the_policy_would_do(world, owner, system_actor) -> None:
    client = signed_in(owner)
    for n in range(3):
        fact_services.fact_add(
            tenant=world.tenant,
            actor=system_actor,
            draft=fact_draft({"content": f"doubt {n}", "trust": 0.1}),
        )
    old = fact_services.fact_add(
        tenant=world.tenant,
        actor=system_actor,
        draft=fact_draft(
            {"content": "ancient", "created_at": timezone.now() - timedelta(days=400)}
        ),
    ).fact
    preview = client.get(f"{BASE}/retention/preview").json()
    assert (preview["active"], preview["archive"], preview["purge"]) == (6, 0, 0)
    trial = client.get(f"{BASE}/retention/preview?archive_below_trust=0.3").json()
    assert trial["archive_low_trust"] == 3 and trial["policy"]["archive_below_trust"] == 0.3
    assert client.get(f"{BASE}/retention").json()["archive_below_trust"] is None  # not saved
    changed = _json(client, "PATCH", f"{BASE}/retention",
                    {"archive_after_days_unretrieved": 365, "max_active_facts": 2})  # fmt: skip
    assert changed.json()["max_active_facts"] == 2
    preview = client.get(f"{BASE}/retention/preview").json()
    assert preview["archive_unretrieved"] == 1  # `ancient`
    assert preview["archive_over_limit"] == 6 - 1 - 2 and preview["archive"] == 1 + 3
    with tenant_scope(world.tenant):
        assert Fact.objects.for_tenant(world.tenant).get(pk=old.pk).status == "active"
    _json(client, "PATCH", f"{BASE}/retention", {"legal_hold": True})
    held = client.get(f"{BASE}/retention/preview").json()
    assert held["legal_hold"] is True and held["archive"] == held["purge"] == 0
    cleared = client.get(f"{BASE}/retention/preview?max_active_facts=&legal_hold=false").json()
    assert cleared["archive"] == 1 and cleared["policy"]["max_active_facts"] is None
    assert client.get(f"{BASE}/retention").json()["importance_every_hours"] == 1  # the default
    hours = _json(client, "PATCH", f"{BASE}/retention", {"importance_every_hours": 12})
    assert hours.json()["importance_every_hours"] == 12
    for bad in (None, 0, 721, "often"):
        refused = _json(client, "PATCH", f"{BASE}/retention", {"importance_every_hours": bad})
        _error(refused, 400, "importance_every_hours")
    assert client.get(f"{BASE}/retention").json()["importance_every_hours"] == 12


# -- audit ------------------------------------------------------------------------------------


def test_the_audit_log_filters_and_pages_over_facts_and_tenant_events(world, agent) -> None:
    for helpful in (True, False, True):
        _json(agent, "POST", f"/api/v1/facts/{world.fact.pk}/feedback", {"helpful": helpful})
    everything = agent.get("/api/v1/audit?limit=200").json()["results"]
    assert {e["source"] for e in everything} == {"fact", "tenant"}
    paged, cursor = [], None
    while True:
        page = agent.get("/api/v1/audit?limit=4" + (f"&cursor={cursor}" if cursor else "")).json()
        paged += page["results"]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert paged == everything  # no event lost or repeated across pages
    assert [e["at"] for e in everything] == sorted((e["at"] for e in everything), reverse=True)
    key_id = world.tokens["write"].split("_")[1]
    mine = agent.get(f"/api/v1/audit?actor=apikey&action=feedback&fact_id={world.fact.pk}")
    assert len(mine.json()["results"]) == 3 and key_id  # the write key's three ratings
    assert agent.get("/api/v1/audit?source=tenant&action=feedback").json()["results"] == []


def test_the_audit_log_exports_as_csv_and_json_lines(world, owner) -> None:
    client = signed_in(owner)
    _json(client, "POST", f"{BASE}/api-keys", {"name": '=HYPERLINK("http://x")'})
    response = client.get(f"{BASE}/audit/export?format=csv&source=tenant")
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="mnemosyne-acme-audit-' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    created = [r for r in rows if r["action"] == "apikey_create"]
    assert any(r["target"].startswith("'=HYPERLINK") for r in created)  # no formula runs
    lines = b"".join(client.get(f"{BASE}/audit/export?format=jsonl").streaming_content)
    events = [json.loads(line) for line in lines.decode().splitlines()]
    assert {e["source"] for e in events} == {"fact", "tenant", "digest"}
    assert events[-1]["source"] == "digest"  # the audit chain's digest ends every export
    assert events[0]["action"] == "audit_export"  # the export before this one is on record
    assert events[0]["actor"] == f"user:{owner.pk}:olivia"


# -- errors, limits, throttling, schema -------------------------------------------------------


def test_unknown_urls_and_methods_answer_json(world, agent) -> None:
    _error(agent.get("/api/v1/nothing-here"), 404)
    _error(agent.put("/api/v1/facts"), 405)
    _error(agent.get("/api/v1/facts/99999999999999999999"), 404)  # beyond bigint: still a 404


def test_bodies_over_the_limit_are_refused(world, agent, settings) -> None:
    settings.MNEMOSYNE_API_MAX_BODY_BYTES = 2048
    _error(_json(agent, "POST", "/api/v1/facts", {"content": "x" * 4000}), 413)
    # An import may be larger: it has its own limit.
    line = json.dumps({"content": "y" * 3000}) + "\n"
    imported = agent.generic("POST", "/api/v1/facts/import", line, "application/x-ndjson")
    assert imported.status_code == 200
    settings.MNEMOSYNE_API_MAX_IMPORT_BYTES = 2048
    _error(agent.generic("POST", "/api/v1/facts/import", line, "application/x-ndjson"), 413)


def test_each_key_has_its_own_rate(world, settings) -> None:
    rates_clear()
    settings.MNEMOSYNE_API_RATES = {"key": "3/minute", "user": None, "anon": None}
    busy, calm = bearer(world.tokens["write"]), bearer(world.tokens["read"])
    assert [busy.get("/api/v1/facts").status_code for _ in range(3)] == [200, 200, 200]
    throttled = busy.get("/api/v1/facts")
    _error(throttled, 429)
    assert int(throttled["Retry-After"]) > 0
    assert calm.get("/api/v1/facts").status_code == 200  # another key, another bucket


def test_the_schema_and_its_ui_are_served_from_here(client) -> None:
    schema = client.get("/api/schema/?format=json").json()
    assert (
        schema["openapi"].startswith("3.") and "/api/v1/tenants/{tenant}/recall" in schema["paths"]
    )
    recall = schema["paths"]["/api/v1/recall"]["post"]
    assert recall["requestBody"]["content"]["application/json"]["examples"]
    for page in ("/api/schema/ui/", "/api/schema/redoc/"):
        html = client.get(page).content.decode()
        assert "/static/drf_spectacular_sidecar/" in html or "/api/schema/redoc-dist/" in html
        # Nothing loaded from another host (these sites are offline).
        assert not re.search(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""", html), html
    ui = client.get("/api/schema/ui/").content.decode()
    asset = ui.split('src="')[1].split('"')[0]
    assert client.get(asset).status_code == 200
    # Redoc's bundle, without the logo its makers' CDN would serve.
    redoc = client.get("/api/schema/redoc/").content.decode()
    bundle = client.get(redoc.split('<script src="')[1].split('"')[0])
    assert bundle.status_code == 200 and b"Redoc" in bundle.content
    assert b"cdn.redoc.ly" not in bundle.content


def test_every_operation_is_described_with_examples(client) -> None:
    schema = client.get("/api/schema/?format=json").json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert operation.get("summary"), f"{method} {path} has no summary"
            ok = [c for c, r in operation["responses"].items() if c.startswith("2")]
            bodies = [operation["responses"][c].get("content", {}) for c in ok]
            has_example = any(
                "examples" in media or "example" in media
                for body in bodies for media in body.values()
            ) or ok == ["204"]  # fmt: skip
            assert has_example, f"{method} {path} has no example answer"


def test_the_base_viewset_cannot_be_made_to_forget_the_tenant() -> None:
    from surfaces.base.viewsets import TenantViewSet

    for name in ("initial", "access", "get_queryset"):
        with pytest.raises(TypeError, match="cannot be replaced"):
            type("Sneaky", (TenantViewSet,), {name: lambda self, *a, **k: None})


# -- query counts -----------------------------------------------------------------------------


def _queries(call) -> int:
    cache.clear()  # the same cold start for every measurement
    with CaptureQueriesContext(connection) as queries:
        response = call()
    assert response.status_code == 200, response.content[:300]
    return len(queries)


class _Entity:
    """The client, with `{entity}` in URLs replaced by the world's entity."""

    def __init__(self, client, entity_id: int) -> None:
        self.client, self.entity_id = client, entity_id

    def get(self, url: str):
        return self.client.get(url.format(entity=self.entity_id))

    def generic(self, *args, **kwargs):
        return self.client.generic(*args, **kwargs)


def _grow(world: World, system_actor, n: int) -> None:
    for i in range(n):
        fact = fact_services.fact_add(
            tenant=world.tenant,
            actor=system_actor,
            draft=fact_draft({"content": f"Alice noted item {i} about tea"}),
        ).fact
        fact_services.fact_feedback(tenant=world.tenant, fact_id=fact.pk, helpful=True,
                                    actor=system_actor)  # fmt: skip


@pytest.mark.parametrize(
    ("name", "call", "limit"),
    [
        # Each limit includes 5 for counting the key's request of the day (one upsert in the
        # tenant's scope: 5 statements inside a test, 2 in production) and the key's lookup
        # through the database's function before its tenant is known.
        ("facts", lambda c: c.get("/api/v1/facts?limit=100"), 16),
        # The page, then one grouped count of active facts for the whole page.
        ("entities", lambda c: c.get("/api/v1/entities?limit=100"), 17),
        ("entity facts", lambda c: c.get("/api/v1/entities/{entity}/facts?limit=100"), 21),
        ("audit", lambda c: c.get("/api/v1/audit?limit=100"), 17),
        # Recall's relevance floor: the tenant's entity dictionary and the document counts of
        # the words of the entity the query names ("Alice"): per query, not per hit.
        ("recall", lambda c: _json(c, "POST", "/api/v1/recall",
                                   {"query": "Alice tea", "k": 50, "channels": ["fts"]}), 21),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)  # fmt: skip
def test_lists_recall_and_audit_cost_the_same_queries_for_3_or_30_rows(
    world, system_actor, name, call, limit
) -> None:
    """Inside a test every tenant scope is a savepoint that also restores its settings, so a
    scope costs 5 statements here and 2 in production: the limits count the test's way."""
    client = bearer(world.tokens["read"])
    base = call
    call = lambda c: base(_Entity(c, world.entity_id))  # noqa: E731
    _queries(lambda: call(client))  # the key's last_used_at is written once a minute
    small = _queries(lambda: call(client))
    _grow(world, system_actor, 30)
    # Once after many writes, recall refreshes the tenant's full-text statistics: a cost per
    # batch of writes, not per row, so it is paid before measuring.
    _queries(lambda: call(client))
    large = _queries(lambda: call(client))
    assert small == large <= limit, (small, large)


# -- the docs' way in: a key from the command line, recall with it ---------------------------


def test_a_key_made_on_the_command_line_recalls_over_http(db, capsys) -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    call_command("tenant", "create", "research", "Research")
    call_command("apikey", "create", "research", "hermes-research")
    token = capsys.readouterr().out.strip().splitlines()[-1]
    agent = bearer(token)
    stored = _json(agent, "POST", "/api/v1/facts", {"content": "The lab moved to building 4"})
    assert stored.status_code == 201
    hits = _json(agent, "POST", "/api/v1/recall", {"query": "where is the lab?"}).json()
    assert hits["results"][0]["fact"]["content"] == "The lab moved to building 4"
    call_command("apikey", "list", "research")
    listing = capsys.readouterr().out
    assert "hermes-research" in listing and token not in listing
    key_id = listing.split("\t")[0]
    call_command("apikey", "revoke", "research", key_id)
    _error(agent.get("/api/v1/facts"), 401)
    with pytest.raises(CommandError, match="tenant"):
        call_command("apikey", "create", "nowhere", "x")


def test_recall_by_an_agent_counts_as_a_retrieval_and_a_person_looking_does_not(
    world, owner, django_capture_on_commit_callbacks
) -> None:
    from memoryadmin.celery import app

    body = {"query": "what does Alice drink?", "channels": ["fts"]}
    app.conf.task_always_eager = True  # run the counting task here, as a worker would
    try:
        with django_capture_on_commit_callbacks(execute=True):
            _json(signed_in(owner), "POST", f"{BASE}/recall", body)
        assert fact_get_count(world) == 0
        with django_capture_on_commit_callbacks(execute=True):
            _json(bearer(world.tokens["read"]), "POST", "/api/v1/recall", body)
        assert fact_get_count(world) == 1
    finally:
        app.conf.task_always_eager = False


def fact_get_count(world: World) -> int:
    from facts.selectors.facts import fact_get

    return fact_get(tenant=world.tenant, fact_id=world.fact.pk).retrieval_count


def test_the_schema_generates_without_a_warning(tmp_path) -> None:
    from django.core.management import call_command

    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    assert "operationId: v1_tenants_facts_list" in out.read_text()
