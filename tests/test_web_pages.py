"""What the web admin's pages do, through Django's test client against the real database:
signing in, languages, filters and their errors, the admin's changes, the recall playground,
retention's preview, keys, Hermes, the audit export, the dashboard's figures."""

from __future__ import annotations

import csv
import html
import importlib.util
import io
import json
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from facts import services as fact_services
from facts.inputs import fact_draft
from facts.selectors.facts import fact_get
from retrieval.latency import (
    BUCKET_COUNT,
    bucket_of,
    histogram_percentile,
    recall_latency_add,
    recall_latency_series,
)
from tenants import selectors
from tests.api_fixtures import World
from tests.helpers import REPO

pytestmark = pytest.mark.django_db


def _client(user=None, **headers) -> Client:
    client = Client(headers=headers)
    if user is not None:
        client.force_login(user)
    return client


def _text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


# -- signing in, languages ----------------------------------------------------------------------


def test_sign_in_with_a_wrong_password_says_so_and_a_right_one_opens_the_tenants(owner) -> None:
    client = Client()
    page = client.get("/", follow=True)
    assert page.redirect_chain[-1][0].startswith("/accounts/sign-in/")
    wrong = client.post("/accounts/sign-in/", {"username": "olivia", "password": "nope"})
    assert wrong.status_code == 200 and "correct username and password" in _text(wrong)
    right = client.post(
        "/accounts/sign-in/", {"username": "olivia", "password": "pw-olivia-123"}, follow=True
    )
    assert "/t/acme/" in _text(right) and "Your tenants" in _text(right)


def test_signing_out_ends_the_session(owner) -> None:
    client = _client(owner)
    assert client.post("/accounts/sign-out/").status_code == 302
    assert client.get("/t/acme/").status_code == 302


def test_password_change_checks_the_old_password_and_then_takes_the_new_one(owner) -> None:
    client = _client(owner)
    bad = client.post(
        "/accounts/password/",
        {"old_password": "wrong", "new_password1": "a-l0nger-pass", "new_password2": "x"},
    )
    assert bad.status_code == 200 and "errorlist" in _text(bad)
    good = client.post(
        "/accounts/password/",
        {"old_password": "pw-olivia-123", "new_password1": "Tea-and-biscuits-7",
         "new_password2": "Tea-and-biscuits-7"},
    )  # fmt: skip
    assert good.status_code == 302 and good["Location"] == "/accounts/password/done/"
    signed_in = Client().post(
        "/accounts/sign-in/", {"username": "olivia", "password": "Tea-and-biscuits-7"}
    )
    assert signed_in.status_code == 302 and signed_in["Location"] == "/"


def test_the_browser_language_is_followed(owner) -> None:
    english = _client(owner, accept_language="en").get("/t/acme/facts/")
    chinese = _client(owner, accept_language="zh-CN,zh;q=0.9").get("/t/acme/facts/")
    assert '<html lang="en">' in _text(english) and ">Facts<" in _text(english)
    assert '<html lang="zh-hans">' in _text(chinese) and ">事实<" in _text(chinese)
    assert "仪表盘" in _text(chinese) and "召回试验场" in _text(chinese)


def test_a_chosen_language_is_kept_for_the_person_and_applied_at_sign_in(owner) -> None:
    client = _client(owner, accept_language="en")
    response = client.post("/accounts/language/", {"language": "zh-hans", "next": "/t/acme/"})
    assert response.status_code == 302 and response["Location"] == "/t/acme/"
    assert response.cookies["django_language"].value == "zh-hans"
    assert "仪表盘" in _text(client.get("/t/acme/"))
    # Another browser, English by default: signing in brings the person's language back.
    other = Client(headers={"accept_language": "en"})
    signed_in = other.post(
        "/accounts/sign-in/", {"username": "olivia", "password": "pw-olivia-123"}
    )
    assert signed_in.cookies["django_language"].value == "zh-hans"
    assert "仪表盘" in _text(other.get("/t/acme/"))
    # "As the browser says" forgets it.
    client.post("/accounts/language/", {"language": "", "next": "/t/acme/"})
    assert ">Dashboard<" in _text(client.get("/t/acme/"))


def test_the_language_form_refuses_unknown_languages_and_foreign_redirects(owner) -> None:
    client = _client(owner)
    assert client.post("/accounts/language/", {"language": "xx"}).status_code == 400
    away = client.post("/accounts/language/", {"language": "en", "next": "https://evil.test/"})
    assert away["Location"] == "/"


def test_every_message_is_translated_and_compiled() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "compile_messages.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_the_translation_check_notices_a_stale_compiled_file(tmp_path) -> None:
    spec = importlib.util.spec_from_file_location(
        "compile_messages", REPO / "scripts" / "compile_messages.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    po = REPO / "memoryadmin/locale/zh_Hans/LC_MESSAGES/django.po"
    changed = tmp_path / "django.po"
    changed.write_text(po.read_text().replace('msgstr "搜索"', 'msgstr "查找"', 1))
    assert module.up_to_date(po, po.with_suffix(".mo"))
    assert not module.up_to_date(changed, po.with_suffix(".mo"))
    changed.write_text(po.read_text().replace('msgstr "搜索"', 'msgstr ""', 1))
    assert any("untranslated" in p for p in module.problems(changed))


# -- facts ----------------------------------------------------------------------------------------


def test_the_facts_browser_filters_and_pages_newest_first(world: World, owner, system_actor):
    for i in range(55):
        fact_services.fact_add(
            tenant=world.tenant,
            actor=system_actor,
            draft=fact_draft(
                {
                    "content": f"Note {i} on the kiln",
                    "scope": "project:kiln",
                    "trust": 0.2 if i % 2 else 0.9,
                }
            ),
        )
    client = _client(owner)
    first = _text(client.get("/t/acme/facts/?scope=project:kiln&order=newest"))
    assert first.count('class="fact-link"') == 50 and "Note 54 on the kiln" in first
    cursor = re.search(r'href="\?scope=project%3Akiln&amp;order=newest&amp;cursor=([^"]+)"',
                       first).group(1)  # fmt: skip
    second = _text(client.get(f"/t/acme/facts/?scope=project:kiln&order=newest&cursor={cursor}"))
    assert second.count('class="fact-link"') == 5 and "Note 0 on the kiln" in second
    # By default the most important come first: the well trusted notes, then the others.
    ranked = _text(client.get("/t/acme/facts/?scope=project:kiln"))
    links = re.findall(r'class="fact-link">Note (\d+) on the kiln', ranked)
    assert all(int(n) % 2 == 0 for n in links[:28]) and all(int(n) % 2 for n in links[28:])
    trusted = _text(client.get("/t/acme/facts/?scope=project:kiln&trust_min=0.5"))
    assert trusted.count('class="fact-link"') == 28
    assert "Alice drinks green tea" not in _text(client.get("/t/acme/facts/?status=removed"))


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("trust_min=0.8&trust_max=0.2", "The upper trust bound is below the lower one."),
        ("trust_min=7", "Ensure this value is less than or equal to 1"),
        ("created_after=yesterday", "Enter a valid date"),
        ("status=lost", "Select a valid choice"),
    ],
)
def test_bad_filters_are_explained_in_the_page(world, owner, query, message) -> None:
    response = _client(owner).get(f"/t/acme/facts/?{query}")
    assert response.status_code == 400 and message in _text(response)


def test_a_hand_made_cursor_is_a_clear_400_never_a_500(world, owner) -> None:
    response = _client(owner).get("/t/acme/facts/?cursor=bm90LWEtY3Vyc29y")
    assert response.status_code == 400
    assert "is not a cursor this list gave out" in _text(response)


def test_search_ranks_with_the_agents_hybrid_recall(world, owner, system_actor) -> None:
    fact_services.fact_add(
        tenant=world.tenant,
        actor=system_actor,
        draft=fact_draft({"content": "The kiln reaches 1300 degrees"}),
    )
    page = _text(_client(owner).get("/t/acme/facts/?q=green+tea"))
    assert "same hybrid recall agents use" in page
    rows = re.findall(r'class="fact-link">([^<]+)<', page)
    assert rows and "green tea" in rows[0] and not any("kiln" in row for row in rows)


def test_adding_a_fact_shows_errors_in_the_form_and_stores_a_good_one(world, owner) -> None:
    client = _client(owner)
    empty = client.post("/t/acme/facts/new/", {"content": "  ", "category": "general"})
    assert empty.status_code == 400 and "This field is required" in _text(empty)
    scoped = client.post(
        "/t/acme/facts/new/", {"content": "Dana likes oolong", "scope": "user dana",
                               "category": "general"},
    )  # fmt: skip
    assert scoped.status_code == 400 and "is not type:name" in _text(scoped)
    stored = client.post(
        "/t/acme/facts/new/",
        {"content": "Dana likes oolong", "scope": "user:dana", "category": "user_pref",
         "tags": "tea, drinks"},
        follow=True,
    )  # fmt: skip
    assert "Fact stored." in _text(stored) and "Dana likes oolong" in _text(stored)
    again = client.post(
        "/t/acme/facts/new/",
        {"content": "dana likes  OOLONG", "scope": "user:dana", "category": "user_pref"},
        follow=True,
    )
    assert "The same fact was there already" in _text(again)


def test_feedback_moves_trust_and_the_fact_page_shows_its_history(world, owner) -> None:
    client = _client(owner)
    url = f"/t/acme/facts/{world.fact.pk}/"
    page = _text(client.post(url + "feedback", {"helpful": "true"}, follow=True))
    assert "trust 0.50 → 0.55" in page
    assert '<dd id="fact-trust">0.55</dd>' in page
    history = re.search(r'<table id="trust-history">.*?</table>', page).group(0)
    assert history.count("<tr>") == 3  # header, created at 0.50, feedback to 0.55
    assert re.search(r'<table id="feedback-list">.*helpful.*olivia', page)
    assert client.post(url + "feedback", {"helpful": "maybe"}, follow=True).status_code == 200
    assert fact_get(tenant=world.tenant, fact_id=world.fact.pk).trust_score == 0.55


def test_edit_remove_restore_and_purge(world, owner) -> None:
    client = _client(owner)
    url = f"/t/acme/facts/{world.fact.pk}/"
    edited = client.post(
        url + "edit", {"content": "Alice drinks oolong", "scope": "user:alice",
                       "category": "user_pref", "tags": ""}, follow=True,
    )  # fmt: skip
    assert "Fact changed." in _text(edited) and "Alice drinks oolong" in _text(edited)
    bad = client.post(url + "edit", {"content": "", "scope": "", "category": "general"})
    assert bad.status_code == 400 and "This field is required" in _text(bad)
    removed = _text(client.post(url + "remove", follow=True))
    assert "Fact removed" in removed and 'id="fact-restore"' in removed
    restored = _text(client.post(url + "restore", follow=True))
    assert "Fact restored" in restored and 'id="fact-remove"' in restored
    assert client.post(url + "purge", {"reason": ""}).status_code == 400
    purged = _text(client.post(url + "purge", {"reason": "asked to forget"}, follow=True))
    assert "purged" in purged and "asked to forget" in purged  # the history stays
    # ... without what the fact said: a purge takes the text out of its audit trail too.
    assert "Alice drinks oolong" not in purged and "[purged]" in purged


def test_the_fact_page_shows_entities_and_conflicts(world, owner, system_actor) -> None:
    from facts.models import Conflict
    from tenants.scope import tenant_scope

    other = fact_services.fact_add(
        tenant=world.tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Alice never drinks tea"}),
    ).fact
    with tenant_scope(world.tenant):
        a, b = sorted([world.fact.pk, other.pk])
        Conflict.objects.create(
            tenant=world.tenant, fact_a_id=a, fact_b_id=b, reason="tea or not", detected_by="t"
        )
    page = _text(_client(owner).get(f"/t/acme/facts/{world.fact.pk}/"))
    assert f"/t/acme/entities/{world.entity_id}/" in page
    assert "Alice never drinks tea" in page and "tea or not" in page


# -- recall playground ----------------------------------------------------------------------------


def test_the_playground_shows_channels_left_out_facts_and_the_context_block(
    world, owner, system_actor
) -> None:
    tenant = world.tenant

    def add(**fields):
        return fact_services.fact_add(tenant=tenant, actor=system_actor, draft=fact_draft(fields))

    add(content="Alice drinks green tea on Mondays", trust=0.1)
    add(content="Bob drinks green tea after lunch", scope="user:bob")
    gone = add(content="Carol drinks green tea too").fact
    fact_services.fact_remove(tenant=tenant, fact_id=gone.pk, actor=system_actor)
    page = _text(_client(owner).get("/t/acme/recall/?q=green+tea&scope=user:alice&channels=fts"))
    results = re.search(r'<table id="recall-results">.*?</table>', page).group(0)
    assert "Alice drinks green tea at Acme" in results and 'data-channel="fts"' in results
    assert "Bob drinks" not in results and "Mondays" not in results
    # What was left out, and the context block, come right after the page (htmx).
    panels = {
        name: html.unescape(url)
        for name, url in re.findall(r'<div id="([\w-]+)-panel" hx-get="([^"]+)"', page)
    }
    assert set(panels) == {"left-out", "context"}
    client = _client(owner)
    fragment = _text(client.get(panels["left-out"], headers={"HX-Request": "true"}))
    assert "<html" not in fragment
    left = re.search(r'<table id="recall-left-out">.*?</table>', fragment).group(0)
    assert re.search(r"Mondays.*?data-reason=\"trust\">trust 0.10 is below the floor 0.30", left)
    assert re.search(r"Bob drinks.*?data-reason=\"scope\">its scope “user:bob” is outside", left)
    assert re.search(r"Carol drinks.*?data-reason=\"status\">it is removed", left)
    shown = re.search(r"shown=([\d,]+)", panels["left-out"]).group(1)
    assert str(world.fact.pk) in shown.split(",")
    alone = _text(client.get(panels["context"]))  # without htmx: a page of its own
    assert "<html" in alone
    block = re.search(r'<pre id="context-block">(.*?)</pre>', alone).group(1)
    # What context_build gives the agent: this scope's facts only.
    assert "Alice drinks green tea at Acme" in block and "Bob" not in block


def test_the_playground_is_not_a_retrieval(world, owner) -> None:
    _client(owner).get("/t/acme/recall/?q=green+tea")
    fact = fact_get(tenant=world.tenant, fact_id=world.fact.pk)
    assert fact.retrieval_count == 0


def test_the_playground_explains_bad_input(world, owner) -> None:
    response = _client(owner).get("/t/acme/recall/?q=tea&k=1000&budget=3")
    assert response.status_code == 400
    assert "less than or equal to 100" in _text(response) and "greater than or equal to 50" in (
        _text(response)
    )


# -- retention ------------------------------------------------------------------------------------


def test_the_retention_preview_counts_unsaved_values_and_saving_keeps_them(world, owner) -> None:
    client = _client(owner)
    page = _text(client.get("/t/acme/retention/"))
    assert '<td class="num" id="preview-archive">0</td>' in page
    preview = _text(client.get("/t/acme/retention/preview?archive_below_trust=0.6"))
    assert "not saved yet" in preview and '<td class="num" id="preview-archive">2</td>' in preview
    held = _text(client.get("/t/acme/retention/preview?archive_below_trust=0.6&legal_hold=on"))
    assert "Nothing would be archived or deleted." in held and 'id="preview-archive">0<' in held
    bad = client.get("/t/acme/retention/preview?archive_below_trust=2")
    assert bad.status_code == 400 and "less than or equal to 1" in _text(bad)
    assert client.get("/t/acme/retention/").status_code == 200  # nothing saved by previews
    saved = client.post("/t/acme/retention/", {"archive_below_trust": "0.6"}, follow=True)
    assert "Retention policy saved." in _text(saved)
    assert 'value="0.6"' in _text(saved) and 'id="preview-archive">2<' in _text(saved)


def test_an_auditor_sees_the_policy_as_values(world, auditor, owner) -> None:
    _client(owner).post("/t/acme/retention/", {"max_active_facts": "5000", "legal_hold": "on"})
    page = _text(_client(auditor).get("/t/acme/retention/"))
    assert "5000" in page and "on: nothing is archived or deleted" in page
    assert "<input" not in page.split('<table id="retention-values">')[1].split("</table>")[0]


# -- members, keys, Hermes ------------------------------------------------------------------------


def test_members_are_added_by_username_changed_and_removed(world, owner, django_user_model):
    carol = django_user_model.objects.create_user("carol", password="pw-carol-123")
    client = _client(owner)
    bad = client.post("/t/acme/members/add", {"username": "no body", "role": "auditor"})
    assert bad.status_code == 400 and "use 1-150 letters" in _text(bad)
    # Anyone not a member is invited, with the same answer whether the account exists or not.
    said = []
    for name in ("nobody", "carol"):
        page = _text(client.post("/t/acme/members/add", {"username": name, "role": "auditor"},
                                 follow=True))  # fmt: skip
        said.append(page.split(f"Invitation made for {name}")[1].split("</li>")[0])
        assert f'data-member="{name}"' not in page and f'data-invitation="{name}"' in page
    assert said[0] == said[1]
    home = _text(_client(carol).get("/"))
    assert "Invitations for you" in home and 'data-invitation="acme"' in home
    (invitation,) = [i for i in selectors.invitation_list(tenant=world.tenant)
                     if i.username == "carol"]  # fmt: skip
    joined = _text(_client(carol).post(f"/accounts/invitations/{invitation.pk}/accept",
                                       follow=True))  # fmt: skip
    assert "You joined Acme as auditor." in joined
    assert 'data-member="carol"' in _text(client.get("/t/acme/members/"))
    added = _text(client.post("/t/acme/members/add", {"username": "carol", "role": "admin"},
                              follow=True))  # fmt: skip
    assert "carol is now admin." in added
    assert selectors.membership_get(tenant=world.tenant, username="carol").role == "admin"
    client.post("/t/acme/members/carol/role", {"role": "auditor"})
    assert selectors.membership_get(tenant=world.tenant, username="carol").role == "auditor"
    client.post("/t/acme/members/carol/remove")
    assert 'data-member="carol"' not in _text(client.get("/t/acme/members/"))


def test_a_new_keys_secret_is_shown_once_with_its_agent_settings(world, owner) -> None:
    client = _client(owner)
    bad = client.post("/t/acme/keys/new", {"name": "", "scopes": ["read"]})
    assert bad.status_code == 400 and "This field is required" in _text(bad)
    posted = client.post(
        "/t/acme/keys/new", {"name": "hermes-research", "scopes": ["read", "write"]}
    )
    assert posted.status_code == 302  # POST-redirect-GET: a reload cannot make a second key
    made = client.get(posted["Location"])
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    again = _text(client.get(posted["Location"]))
    assert 'id="key-secret"' not in again and 'id="secret-gone"' in again
    secret = re.search(r'id="key-secret">(mnm_[^<]+)<', _text(made)).group(1)
    assert f"mnemosyne hermes install --url http://testserver --api-key {secret}" in _text(made)
    shown = html.unescape(_text(made))
    assert f'"MNEMOSYNE_API_KEY": "{secret}"' in shown  # the MCP client's settings
    assert f'"Authorization": "Bearer {secret}"' in shown
    assert '"url": "http://testserver/mcp"' in shown
    listing = _text(client.get("/t/acme/keys/"))
    assert 'data-key="hermes-research"' in listing and secret not in listing
    assert secret.split("_")[1] in listing  # the public prefix
    from tenants.services import apikey_verify

    assert apikey_verify(token=secret) is not None


def test_revoking_a_key_refuses_it(world, owner) -> None:
    from tenants.services import apikey_verify

    token = world.tokens["read"]
    assert apikey_verify(token=token) is not None
    page = _text(_client(owner).post(f"/t/acme/keys/{world.key_id}/revoke", follow=True))
    assert "Key dashboard revoked" in page
    assert apikey_verify(token=token) is None


def test_the_connect_page_gives_the_exact_settings_for_a_key(world, owner) -> None:
    from tenants.selectors import apikey_get

    key = apikey_get(tenant=world.tenant, key_id=world.key_id)
    client = _client(owner)
    page = html.unescape(_text(client.get(
        f"/t/acme/connect/?key={key.pk}&scope=team:research&hermes_home=/srv/hermes profiles/x"
    )))  # fmt: skip
    assert (
        "mnemosyne hermes install --hermes-home '/srv/hermes profiles/x' "
        f"--url http://testserver --api-key mnm_{key.prefix}_SECRET --scope team:research"
    ) in page
    stdio = re.search(r'<pre id="mcp-stdio">(.*?)</pre>', page, re.S).group(1)
    assert json.loads(stdio) == {"mcpServers": {"mnemosyne": {
        "command": "mnemosyne", "args": ["mcp", "--url", "http://testserver"],
        "env": {"MNEMOSYNE_API_KEY": f"mnm_{key.prefix}_SECRET"},
    }}}  # fmt: skip
    remote = re.search(r'<pre id="mcp-http">(.*?)</pre>', page, re.S).group(1)
    assert json.loads(remote) == {"mcpServers": {"mnemosyne": {
        "type": "http", "url": "http://testserver/mcp",
        "headers": {"Authorization": f"Bearer mnm_{key.prefix}_SECRET"},
    }}}  # fmt: skip
    assert (
        f"claude mcp add --transport http mnemosyne http://testserver/mcp "
        f"--header 'Authorization: Bearer mnm_{key.prefix}_SECRET'"
    ) in page
    fragment = client.get(f"/t/acme/connect/?key={key.pk}", headers={"HX-Request": "true"})
    assert "<html" not in _text(fragment) and f"mnm_{key.prefix}_SECRET" in _text(fragment)
    assert 'id="mcp-stdio"' in _text(fragment)
    bad = client.get(f"/t/acme/connect/?key={key.pk}&scope=not a scope")
    assert bad.status_code == 400 and "is not type:name" in _text(bad)


# -- audit --------------------------------------------------------------------------------------


def test_the_audit_log_filters_and_exports_csv(world, owner, system_actor) -> None:
    fact_services.fact_feedback(
        tenant=world.tenant, fact_id=world.fact.pk, helpful=False, actor=system_actor
    )
    client = _client(owner)
    page = _text(client.get("/t/acme/audit/?action=feedback"))
    rows = re.search(r'<table id="audit-table"[^>]*>.*?</table>', page).group(0)
    assert rows.count("<tr>") == 2 and "marked unhelpful: trust 0.50 → 0.40" in rows
    assert client.get("/t/acme/audit/?fact_id=abc").status_code == 400
    today = datetime.now(UTC).date()
    none = _text(client.get(f"/t/acme/audit/?until={today - timedelta(days=3)}"))
    assert "No event matches." in none
    export = client.get("/t/acme/audit/export.csv?action=feedback")
    assert export["Content-Type"].startswith("text/csv")
    lines = list(csv.reader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert lines[0][:4] == ["source", "id", "at", "action"] and len(lines) == 3
    assert lines[1][3] == "feedback"
    assert lines[2][0] == "digest"  # the audit chain's digest ends every export
    logged = _text(client.get("/t/acme/audit/?action=audit_export"))
    assert "olivia" in logged and "csv" in logged


# -- dashboard ------------------------------------------------------------------------------------


def test_the_dashboard_counts_and_charts(world, owner, system_actor) -> None:
    tenant = world.tenant
    turn = fact_services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft(
            {
                "content": "Can we move the demo?",
                "kind": "turn",
                "session_id": "s1",
                "speaker": "Bob",
            }
        ),
    ).fact
    archived = fact_services.fact_add(
        tenant=tenant, actor=system_actor, draft=fact_draft({"content": "Old plan"})
    ).fact
    from facts.models import Fact
    from tenants.scope import tenant_scope

    with tenant_scope(tenant):
        Fact.objects.for_tenant(tenant).filter(pk=archived.pk).update(status="archived")
    hour = datetime.now(UTC)
    counts = [0] * BUCKET_COUNT
    counts[bucket_of(12)] = 9
    counts[bucket_of(180)] = 1
    recall_latency_add(tenant=tenant, hour=hour, counts=counts)
    page = _text(_client(owner).get("/t/acme/"))
    assert '<div class="value" data-count="facts">2</div>' in page
    assert '<div class="value" data-count="turns">1</div>' in page
    assert '<div class="value" data-count="archived">1</div>' in page
    assert '<div class="value" data-count="backlog">3</div>' in page  # none embedded yet
    assert "<svg" in page and "Agents&#x27; recall latency per hour" in page
    assert re.search(r"<td class=\"num\">10</td><td class=\"num\">[\d.]+ ms</td>", page)
    panel = _text(_client(owner).get("/t/acme/dashboard/top-entities", HTTP_HX_REQUEST="true"))
    assert "<html" not in panel
    assert "Alice" in re.search(r'<table id="top-entities">.*?</table>', panel).group(0)
    assert turn.pk


def test_latency_percentiles_from_the_histogram() -> None:
    counts = [0] * BUCKET_COUNT
    counts[bucket_of(8)] = 50  # (7, 10]
    counts[bucket_of(250)] = 50  # (200, 300]
    assert 7 <= histogram_percentile(counts, 0.5) <= 10
    assert 200 <= histogram_percentile(counts, 0.95) <= 300
    assert histogram_percentile([0] * BUCKET_COUNT, 0.5) is None
    slow = [0] * BUCKET_COUNT
    slow[-1] = 3
    assert histogram_percentile(slow, 0.5) == 5000.0


def test_recall_latencies_of_agents_reach_the_dashboard(
    world, owner, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    """An agent's recall through the API is noted, sent to the task after the commit, and
    charted; a person's recall is not."""
    from memoryadmin.celery import app
    from retrieval import latency
    from tests.api_fixtures import bearer, signed_in

    latency.recall_latency_pending_clear()
    monkeypatch.setattr(latency, "FLUSH_SECONDS", 0.0)  # send every sample at once
    app.conf.task_always_eager = True  # run the task here, as a worker would
    try:
        with django_capture_on_commit_callbacks(execute=True):
            agent = bearer(world.tokens["read"])
            for _ in range(3):
                response = agent.post(
                    "/api/v1/recall", {"query": "green tea", "channels": ["fts"]}, format="json"
                )
                assert response.status_code == 200
            person = signed_in(owner)
            person.post("/api/v1/tenants/acme/recall", {"query": "green tea"}, format="json")
    finally:
        app.conf.task_always_eager = False
        latency.recall_latency_pending_clear()
    series = recall_latency_series(tenant=world.tenant, hours=1)
    assert series[-1].count == 3 and series[-1].p50_ms is not None
    page = _text(_client(owner).get("/t/acme/"))
    assert re.search(r'<td class="num">3</td><td class="num">[\d.]+ ms</td>', page)


def test_an_admin_cannot_demote_or_remove_themselves(world, owner) -> None:
    from tenants.selectors import membership_role

    client = _client(owner)
    page = _text(client.get("/t/acme/members/"))
    own_row = re.search(r'<tr data-member="olivia">.*?</tr>', page).group(0)
    assert "<form" not in own_row and "you" in own_row
    for url, body in (("/t/acme/members/olivia/role", {"role": "auditor"}),
                      ("/t/acme/members/olivia/remove", {})):  # fmt: skip
        refused = _text(client.post(url, body, follow=True))
        assert "You cannot change your own membership here" in refused
    assert membership_role(tenant=world.tenant, user=owner) == "admin"


def _all_forms() -> list[type]:
    import importlib
    import pkgutil

    from django import forms

    import surfaces.pages

    for module in pkgutil.iter_modules(surfaces.pages.__path__):
        importlib.import_module(f"surfaces.pages.{module.name}")
    found, todo = [], list(forms.Form.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__.split(".")[0] in ("surfaces", "memoryadmin"):
            found.append(cls)
    return found


def _form_texts(form_class) -> list[str]:
    """Every label, help text and choice label a person reads on the form."""
    form = (
        form_class(keys=[]) if "keys" in form_class.__init__.__code__.co_varnames else form_class()
    )
    texts = []
    for field in form.fields.values():
        texts += [str(field.label or ""), str(field.help_text or "")]
        for _code, label in getattr(field, "choices", []) or []:
            texts.append(str(label))
    return [t for t in texts if t]


def test_every_label_and_choice_of_every_form_is_in_chinese() -> None:
    """A label, help text or choice label without Chinese fails here (the .po check cannot see
    a string that was never marked for translation)."""
    from django.conf import settings
    from django.utils import translation

    names = {name for _code, name in settings.LANGUAGES}
    untranslated = []
    for form_class in _all_forms():
        with translation.override("en"):
            english = _form_texts(form_class)
        with translation.override("zh-hans"):
            chinese = _form_texts(form_class)
        for en, zh in zip(english, chinese, strict=True):
            if en == zh and re.search("[A-Za-z]{2,}", en) and en not in names:
                untranslated.append(f"{form_class.__name__}: {en!r}")
    assert not untranslated, untranslated


def test_every_stored_code_reads_in_chinese() -> None:
    """Kinds, categories, statuses, entity types, audit actions, roles and key rights."""
    from django.utils import translation

    from facts.models import Category, EntityType, EventAction, Kind, Status
    from surfaces.base.terms import term
    from tenants.inputs import API_KEY_SCOPES
    from tenants.models import Role, TenantAction

    codes = [*Kind.values, *Category.values, *Status.values, *EntityType.values,
             *EventAction.values, *TenantAction.values, *Role.values, *API_KEY_SCOPES]  # fmt: skip
    missing = []
    for code in codes:
        with translation.override("en"):
            english = term(code)
        with translation.override("zh-hans"):
            chinese = term(code)
        if chinese == english or chinese == code:
            missing.append(code)
    assert not missing, f"no Chinese for: {missing}"


def test_api_errors_answer_in_the_callers_language(world) -> None:
    from tests.api_fixtures import bearer

    client = bearer(world.tokens["read"])
    english = client.get("/api/v1/facts/999999999").json()["message"]
    chinese = client.get("/api/v1/facts/999999999", HTTP_ACCEPT_LANGUAGE="zh-CN").json()
    assert english == "fact not found" and chinese["message"] == "未找到事实"
    refused = client.get("/api/v1/members", HTTP_ACCEPT_LANGUAGE="zh-CN").json()["message"]
    assert "API 密钥看不到" in refused
    typed = client.get("/api/v1/facts?limit=x&colour=1", HTTP_ACCEPT_LANGUAGE="zh-CN").json()
    assert "未知参数" in json.dumps(typed, ensure_ascii=False)
