"""The admin that never misleads: exports of the facts browser, bulk actions, readable and paged
history, renaming and deleting a tenant."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.test import Client

from facts import services as fact_services
from facts.inputs import fact_changes, fact_draft
from facts.selectors.facts import fact_get
from tenants import selectors as tenant_selectors

pytestmark = pytest.mark.django_db


def _page(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def facts(tenant, system_actor):
    made = []
    for text, scope in [("Alice likes tea", "user:alice"), ("Bob likes =SUM(A1)", "user:bob"),
                        ("Alice moved to Oslo", "user:alice")]:  # fmt: skip
        made.append(
            fact_services.fact_add(
                tenant=tenant,
                actor=system_actor,
                draft=fact_draft({"content": text, "scope": scope}),
            ).fact
        )
    return made


def test_the_facts_export_follows_the_browsers_filters(owner, facts) -> None:
    client = _page(owner)
    answer = client.get("/t/acme/facts/export?scope=user:alice&format=csv")
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(answer.streaming_content).decode())))
    assert sorted(r["content"] for r in rows) == ["Alice likes tea", "Alice moved to Oslo"]
    lines = b"".join(client.get("/t/acme/facts/export?format=jsonl").streaming_content)
    parsed = [json.loads(line) for line in lines.decode().splitlines()]
    assert {p["content"] for p in parsed} == {f.content for f in facts}
    audit = client.get("/t/acme/audit/?action=facts_export").content.decode()
    assert "facts_export" in audit


def test_the_auditor_may_export_and_an_outsider_may_not(auditor, outsider, facts) -> None:
    assert _page(auditor).get("/t/acme/facts/export?format=jsonl").status_code == 200
    assert _page(outsider).get("/t/acme/facts/export?format=jsonl").status_code == 404


def test_bulk_remove_and_tag_act_on_the_selected_facts_only(owner, facts, tenant) -> None:
    client = _page(owner)
    first, second, third = facts
    tagged = client.post(
        "/t/acme/facts/bulk", {"ids": [first.pk, second.pk], "action": "tag", "tag": "reviewed"}
    )
    assert tagged.status_code == 302
    assert "reviewed" in fact_get(tenant=tenant, fact_id=first.pk).tags
    assert "reviewed" not in fact_get(tenant=tenant, fact_id=third.pk).tags
    removed = client.post("/t/acme/facts/bulk", {"ids": [second.pk, third.pk], "action": "remove"})
    assert removed.status_code == 302
    assert fact_get(tenant=tenant, fact_id=third.pk).status == "removed"
    assert fact_get(tenant=tenant, fact_id=first.pk).status == "active"
    nothing = client.post("/t/acme/facts/bulk", {"action": "remove"}, follow=True)
    assert "select at least one fact" in nothing.content.decode()


def test_bulk_actions_do_not_reach_another_tenants_facts(owner, tenant, other_tenant,
                                                       system_actor) -> None:  # fmt: skip
    theirs = fact_services.fact_add(
        tenant=other_tenant, actor=system_actor, draft=fact_draft({"content": "Globex secret"})
    ).fact
    answer = _page(owner).post("/t/acme/facts/bulk", {"ids": [theirs.pk], "action": "remove"})
    assert answer.status_code == 302
    assert fact_get(tenant=other_tenant, fact_id=theirs.pk).status == "active"


def test_history_shows_what_changed_in_words_and_pages(owner, tenant, facts, system_actor):
    fact = facts[0]
    for n in range(30):
        fact_services.fact_update(
            tenant=tenant,
            fact_id=fact.pk,
            actor=system_actor,
            changes=fact_changes({"tags": [f"t{n}"]}),
        )
    html = _page(owner).get(f"/t/acme/facts/{fact.pk}/").content.decode()
    assert "<pre>" not in html.split('id="fact-history"')[1]
    link = f'<a href="/t/acme/facts/{fact.pk}/">#{fact.pk}</a>'
    assert html.count(f"changed fact {link}: tags ") == 25
    assert html.count("→ t") == 25  # a page of the newest events
    assert 'id="history-older"' in html
    older = _page(owner).get(f"/t/acme/facts/{fact.pk}/?history=2").content.decode()
    assert "→ t0<" in older


def test_an_admin_renames_the_tenant(owner, tenant) -> None:
    client = _page(owner)
    assert client.post("/t/acme/tenant/", {"name": "  "}).status_code == 400
    assert client.post("/t/acme/tenant/", {"name": "Acme Corporation"}).status_code == 302
    assert tenant_selectors.tenant_get(slug="acme").name == "Acme Corporation"
    assert "tenant_rename" in client.get("/t/acme/audit/").content.decode()


def test_a_superuser_deletes_a_tenant_after_typing_its_name(
    owner, tenant, other_tenant, facts, django_user_model, system_actor
) -> None:
    from tenants.models import TenantDeletion

    theirs = fact_services.fact_add(
        tenant=other_tenant, actor=system_actor, draft=fact_draft({"content": "Globex"})
    )
    assert _page(owner).post("/t/acme/tenant/delete", {"confirm": "acme"}).status_code == 403
    root = django_user_model.objects.create_superuser("root", password="pw-root-12345")
    client = _page(root)
    page = client.get("/t/acme/tenant/").content.decode()
    assert 'id="delete-export-facts"' in page
    # The copy offered first is a bundle another tenant (or Mnemosyne) can import.
    bundle = client.get("/t/acme/facts/export-bundle")
    assert bundle.status_code == 200 and bundle["Content-Type"] == "application/x-tar"
    assert 'id="delete-export-bundle"' in page and b"bundle.manifest.json" in b"".join(
        bundle.streaming_content
    )
    wrong = client.post("/t/acme/tenant/delete", {"confirm": "acm"})
    assert wrong.status_code == 400 and "type the tenant" in wrong.content.decode()
    gone = client.post("/t/acme/tenant/delete", {"confirm": "acme"})
    assert gone.status_code == 302
    assert client.get("/t/acme/").status_code == 404
    record = TenantDeletion.objects.get(slug="acme")
    assert record.actor.endswith(":root") and record.counts["facts_fact"] == 3
    # The other tenant is untouched.
    assert fact_get(tenant=other_tenant, fact_id=theirs.fact.pk).content == "Globex"
    assert re.search("globex", client.get("/").content.decode())
