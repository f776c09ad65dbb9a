"""The web admin in a real browser: Debian's chromium, headless, driven by Playwright against a
live server on this machine, with the real database, embedder and (eager) tasks.

A team admin creates a tenant, a member and an API key, stores and searches facts, gives
feedback, edits the retention policy watching its live preview, and switches to Chinese; an
auditor finds no way to change anything (and POSTs to every write URL are refused); an admin
of another tenant reaches nothing of this one, URLs typed by hand included. Every page is
photographed into test-artifacts/screenshots/.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; the ORM calls made by the test
# itself (fixtures, checks) are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from facts import services as fact_services  # noqa: E402
from facts.inputs import fact_draft
from surfaces.base.pages import Need, registered_pages  # noqa: E402
from tests.helpers import REPO  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SHOTS = REPO / "test-artifacts" / "screenshots"


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Tasks run where they are sent (in the live server's thread): facts get their vectors
    as a worker would give them, and no message is left in a broker folder."""
    from memoryadmin.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


class Session:
    """One person's browser: a fresh context (cookies, language) and its page."""

    def __init__(self, browser, base: str, prefix: str, locale: str = "en-GB") -> None:
        self.context = browser.new_context(
            locale=locale, viewport={"width": 1280, "height": 900}, accept_downloads=True
        )
        self.page = self.context.new_page()
        self.page.set_default_timeout(60_000)
        self.base = base
        self.prefix = prefix

    def go(self, path: str) -> int:
        response = self.page.goto(self.base + path)
        return response.status if response else 0

    def shot(self, name: str) -> None:
        number = len(list(SHOTS.glob("*.png"))) + 1
        self.page.screenshot(path=str(SHOTS / f"{number:02d}-{self.prefix}-{name}.png"),
                             full_page=True)  # fmt: skip

    def sign_in(self, username: str, password: str) -> None:
        self.go("/")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", password)
        self.page.click("button[type=submit]")
        self.page.wait_for_url(re.compile(r".*/(t/[^/]+/)?$"))

    def text(self, selector: str = "main") -> str:
        return self.page.inner_text(selector)

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def people(django_user_model):
    sam = django_user_model.objects.create_superuser("sam", password="pw-sam-12345")
    arthur = django_user_model.objects.create_user("arthur", password="pw-arthur-123")
    return sam, arthur


def test_a_team_admin_sets_up_a_tenant_and_works_with_its_memory(
    browser, live_server, eager_tasks, people, monkeypatch
) -> None:
    from playwright.sync_api import expect

    from retrieval import latency

    monkeypatch.setattr(latency, "FLUSH_SECONDS", 0.0)  # chart agents' recalls at once

    admin = Session(browser, live_server.url, "admin")
    page = admin.page
    admin.go("/")
    expect(page.locator("h1")).to_have_text("Sign in to Mnemosyne")
    admin.shot("sign-in")
    page.fill("#id_username", "sam")
    page.fill("#id_password", "wrong")
    page.click("button[type=submit]")
    expect(page.locator(".errorlist")).to_contain_text("correct username and password")
    admin.sign_in("sam", "pw-sam-12345")

    # A tenant (sam is a superuser).
    expect(page.locator("h1")).to_have_text("Your tenants")
    admin.shot("tenants")
    page.fill("#id_slug", "Not a slug!")
    page.fill("#id_name", "Research")
    page.click("#tenant-form button")
    expect(page.locator("#tenant-form .errorlist")).to_contain_text("lowercase letters")
    page.fill("#id_slug", "research")
    page.click("#tenant-form button")
    page.wait_for_url("**/t/research/")
    expect(page.locator(".messages")).to_contain_text("Tenant research created.")

    # A member: a superuser adds an existing account at once (a tenant admin would invite
    # it); an unknown name is explained.
    page.click("nav.side >> text=Members")
    page.fill("#id_username", "nobody")
    page.click("#member-form button")
    expect(page.locator("#member-form .errorlist")).to_contain_text("no active user has this name")
    page.fill("#id_username", "arthur")
    page.select_option("#id_role", "auditor")
    page.click("#member-form button")
    expect(page.locator('tr[data-member="arthur"]')).to_be_visible()
    admin.shot("members")

    # An API key: its secret once, with the Hermes command; never again.
    page.click("nav.side >> text=API keys")
    page.fill("#id_name", "hermes-research")
    page.click("#key-form button")
    secret = page.inner_text("#key-secret").strip()
    assert re.fullmatch(r"mnm_[0-9a-f]{12}_[\w-]+", secret), secret
    expect(page.locator("#hermes-command")).to_have_text(
        f"mnemosyne hermes install --url {live_server.url} --api-key {secret}"
    )
    admin.shot("key-created")
    page.click("nav.side >> text=API keys")
    expect(page.locator('tr[data-key="hermes-research"]')).to_be_visible()
    assert secret not in page.content()
    admin.shot("keys")
    page.click("nav.side >> text=Connect an agent")
    page.fill("#id_scope", "team:research")
    expect(page.locator("#hermes-command")).to_contain_text("--scope team:research")  # htmx
    assert "mnm_" + secret.split("_")[1] + "_SECRET" in page.inner_text("#hermes-command")
    expect(page.locator("#mcp-stdio")).to_contain_text('"mcp", "--url"')
    expect(page.locator("#mcp-http")).to_contain_text(f"{live_server.url}/mcp")
    admin.shot("connect")

    # Facts, stored through the page (the admin) and through the API (an agent with the key).
    for content, scope, category in (
        ("Alice prefers green tea over coffee in the morning", "user:alice", "user_pref"),
        ("The Apollo launch moved to Friday", "project:apollo", "project"),
        ("Bob is allergic to peanuts", "user:bob", "user_pref"),
    ):
        page.click("nav.side >> text=Facts")
        page.click("#add-fact")
        page.fill("#id_content", content)
        page.fill("#id_scope", scope)
        page.select_option("#id_category", category)
        if scope == "user:alice":
            admin.shot("fact-new")
        page.click("#fact-form button")
        expect(page.locator(".messages")).to_contain_text("Fact stored.")
    api = admin.context.request
    headers = {"Authorization": f"Bearer {secret}"}
    doubtful = api.post(
        f"{live_server.url}/api/v1/facts", headers=headers,
        data={"content": "Alice drinks green tea only on Mondays", "scope": "user:alice",
              "trust": 0.1},
    )  # fmt: skip
    assert doubtful.status == 201, doubtful.text()
    for _ in range(3):  # the agent recalls: the dashboard charts its latency
        recalled = api.post(
            f"{live_server.url}/api/v1/context", headers=headers, data={"query": "green tea"}
        )
        assert recalled.status == 200, recalled.text()

    # Search with the agents' hybrid recall; the fact page; feedback.
    page.click("nav.side >> text=Facts")
    page.fill("#id_q", "what does Alice drink in the morning?")
    page.click("#fact-filters button[type=submit]")
    expect(page.locator("#search-note")).to_contain_text("same hybrid recall")
    first = page.locator("#fact-table tbody tr").first
    expect(first).to_contain_text("green tea over coffee")
    admin.shot("facts-search")
    first.locator("a.fact-link").click()
    expect(page.locator("#fact-trust")).to_have_text("0.50")
    page.click("#feedback-helpful")
    expect(page.locator(".messages")).to_contain_text("trust 0.50 → 0.55")
    expect(page.locator("#fact-trust")).to_have_text("0.55")
    expect(page.locator("#trust-history tbody tr")).to_have_count(2)
    expect(page.locator("#feedback-list")).to_contain_text("sam")
    admin.shot("fact")
    page.click("nav.side >> text=Facts")
    admin.shot("facts")

    # The playground: channels, what was left out and why, the agent's context block.
    page.click("nav.side >> text=Recall playground")
    page.fill("#id_q", "green tea")
    page.fill("#id_scope", "user:alice")
    page.click("#recall-run")
    expect(page.locator("#recall-results tbody tr").first).to_contain_text("green tea over coffee")
    expect(page.locator("#recall-results thead")).to_contain_text("full text")
    expect(page.locator('#recall-left-out li[data-reason="trust"]')).to_contain_text(
        "below the floor"
    )
    expect(page.locator("#context-block")).to_contain_text("green tea over coffee")
    admin.shot("recall")

    # Retention: the preview follows the values typed, before anything is saved.
    page.click("nav.side >> text=Retention")
    expect(page.locator("#preview-archive")).to_have_text("0")
    page.fill("#id_archive_below_trust", "0.52")
    expect(page.locator("#retention-preview")).to_contain_text("not saved yet")
    expect(page.locator("#preview-archive")).to_have_text("3")  # 0.5, 0.5 and 0.1; not 0.55
    page.check("#id_legal_hold")
    expect(page.locator("#preview-archive")).to_have_text("0")
    expect(page.locator("#retention-preview")).to_contain_text("Nothing would be archived")
    page.uncheck("#id_legal_hold")
    expect(page.locator("#preview-archive")).to_have_text("3")
    admin.shot("retention-preview")
    page.click("#retention-save")
    expect(page.locator(".messages")).to_contain_text("Retention policy saved.")
    expect(page.locator("#id_archive_below_trust")).to_have_value("0.52")

    # Entities, the audit log (filtered, exported), the dashboard.
    page.click("nav.side >> text=Entities")
    admin.shot("entities")
    entity_links = page.locator("#entity-table tbody a")
    if entity_links.count():
        entity_links.first.click()
        expect(page.locator("#entity-facts")).to_be_visible()
        admin.shot("entity")
    page.click("nav.side >> text=Audit log")
    page.select_option("#id_action", "feedback")
    page.click("#audit-filters button[type=submit]")
    expect(page.locator("#audit-table tbody tr")).to_have_count(1)
    admin.shot("audit")
    with page.expect_download() as download:
        page.click("#audit-export")
    exported = Path(download.value.path()).read_text()
    assert exported.startswith("source,id,at,action") and ",feedback," in exported
    page.click("nav.side >> text=Dashboard")
    expect(page.locator('[data-count="facts"]')).to_have_text("4")
    expect(page.locator("#health")).to_contain_text("worker")
    expect(page.locator("#top-entities")).to_contain_text("Alice")  # loaded after the page
    page.click("text=Numbers >> nth=1")  # the latency table under its chart
    expect(page.locator("main")).to_contain_text("Recall latency")
    expect(page.locator("section", has_text="Recall latency").locator("tbody tr")).to_have_count(1)
    admin.shot("dashboard")

    # Chinese, chosen in the page, kept for the next sign-in.
    page.select_option("#language-form select", "zh-hans")
    page.wait_for_load_state()
    expect(page.locator("nav.side")).to_contain_text("事实")
    expect(page.locator("h1")).to_contain_text("仪表盘")
    admin.shot("dashboard-zh")
    for label, name in (
        ("事实", "facts-zh"),
        ("召回试验场", "recall-zh"),
        ("保留策略", "retention-zh"),
    ):
        page.click(f"nav.side >> text={label}")
        admin.shot(name)
    page.goto(f"{live_server.url}/t/research/recall/?q=green+tea")
    expect(page.locator("#recall-left-out")).to_contain_text("低于下限")
    admin.shot("recall-results-zh")
    admin.close()
    again = Session(browser, live_server.url, "admin-again")
    again.sign_in("sam", "pw-sam-12345")
    expect(again.page.locator("h1")).to_have_text("您的租户")

    # The password.
    again.go("/accounts/password/")
    again.shot("password-zh")
    again.close()


def test_a_browser_asking_for_chinese_gets_chinese(browser, live_server, people) -> None:
    from playwright.sync_api import expect

    visitor = Session(browser, live_server.url, "browser-zh", locale="zh-CN")
    visitor.go("/")
    expect(visitor.page.locator("h1")).to_have_text("登录 Mnemosyne")
    visitor.shot("sign-in-zh")
    visitor.close()


@pytest.fixture
def acme(people, system_actor):
    """A tenant with data, arthur its auditor, oscar the admin of another tenant."""
    from django.contrib.auth import get_user_model

    from tenants.inputs import tenant_draft
    from tenants.services import apikey_create, membership_set, tenant_create

    _, arthur = people
    tenant = tenant_create(actor=system_actor, draft=tenant_draft({"slug": "acme", "name": "Acme"}))
    other = tenant_create(
        actor=system_actor, draft=tenant_draft({"slug": "globex", "name": "Globex"})
    )
    membership_set(tenant=tenant, user=arthur, role="auditor", actor=system_actor)
    oscar = get_user_model().objects.create_user("oscar", password="pw-oscar-123")
    membership_set(tenant=other, user=oscar, role="admin", actor=system_actor)
    fact = fact_services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Alice prefers green tea", "scope": "user:alice"}),
    ).fact
    fact_services.fact_feedback(tenant=tenant, fact_id=fact.pk, helpful=True, actor=system_actor)
    other_fact = fact_services.fact_add(
        tenant=other, actor=system_actor, draft=fact_draft({"content": "Globex ships on Tuesdays"})
    ).fact
    key = apikey_create(tenant=tenant, name="hermes", actor=system_actor).key
    coffee = fact_services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Alice prefers black coffee", "scope": "user:alice"}),
    ).fact
    from facts.models import Conflict
    from tenants.inputs import tenant_draft
    from tenants.invitations import invitation_create
    from tenants.scope import tenant_scope

    with tenant_scope(tenant):
        conflict = Conflict.objects.create(
            tenant=tenant, fact_a=fact, fact_b=coffee, reason="value", score=0.7,
            detected_by="job:tests",
        )  # fmt: skip
    invitation = invitation_create(tenant=tenant, role="auditor", actor=system_actor).invitation
    return {
        "tenant": tenant,
        "fact": fact,
        "other_fact": other_fact,
        "key": key,
        "conflict": conflict,
        "invitation": invitation,
    }


def _urls(acme: dict, *, writes: bool) -> list[tuple[str, str]]:
    """(name, path) of every registered page of acme that reads (or, with writes, that
    takes a POST), with acme's objects in it."""
    values = {
        "fact_id": acme["fact"].pk,
        "entity_id": None,
        "key_id": acme["key"].pk,
        "username": "arthur",
        "invitation_id": acme["invitation"].pk,
        "conflict_id": acme["conflict"].pk,
    }
    from django.urls import reverse

    from facts.selectors.facts import fact_entities

    values["entity_id"] = fact_entities(tenant=acme["tenant"], fact_id=acme["fact"].pk)[0].pk
    found = []
    for spec in registered_pages():
        if not hasattr(spec.view, "post" if writes else "get"):
            continue
        names = set(re.findall(r"<(?:\w+:)?(\w+)>", spec.route))
        kwargs = {"tenant": "acme", **{n: values[n] for n in names}}
        found.append((spec.name, reverse(f"web:{spec.name}", kwargs=kwargs)))
    return found


def test_an_auditor_finds_no_way_to_change_anything(browser, live_server, acme) -> None:
    auditor = Session(browser, live_server.url, "auditor")
    auditor.sign_in("arthur", "pw-arthur-123")
    page = auditor.page
    for name, path in _urls(acme, writes=False):
        spec = next(s for s in registered_pages() if s.name == name)
        if name in ("audit_export", "facts_export", "facts_export_bundle"):
            continue  # a download, not a page: the auditor may export (checked below)
        status = auditor.go(path)
        if spec.view.need_get is Need.WRITE:
            assert status == 403, (name, status)
            continue
        assert status == 200, (name, status)
        writable = page.locator("form[method=post]:not([data-personal])")
        assert writable.count() == 0, f"{name}: an auditor is shown a write form"
        for word in ("Remove", "Revoke", "Save", "Add a fact", "Make the key", "Purge"):
            assert page.locator(f"button:text-is('{word}'), a:text-is('{word}')").count() == 0, (
                name,
                word,
            )
        auditor.shot(name)
    with page.expect_download() as download:
        auditor.go("/t/acme/audit/")
        page.click("#audit-export")
    assert "feedback" in Path(download.value.path()).read_text()
    # Typing the write URLs by hand, with a valid CSRF token: refused, and nothing changes.
    auditor.go("/t/acme/")
    token = page.locator("#language-form input[name=csrfmiddlewaretoken]").get_attribute("value")
    for name, path in _urls(acme, writes=True):
        response = page.request.post(
            live_server.url + path,
            form={"csrfmiddlewaretoken": token, "content": "sneaky", "helpful": "false",
                  "reason": "x", "name": "x", "username": "arthur", "role": "admin"},
            headers={"Referer": live_server.url + "/t/acme/"},
        )  # fmt: skip
        assert response.status == 403, (name, response.status)
    from facts.selectors.facts import fact_get
    from tenants.selectors import membership_role

    fact = fact_get(tenant=acme["tenant"], fact_id=acme["fact"].pk)
    assert fact.status == "active" and fact.trust_score == 0.55 and fact.content.startswith("Ali")
    assert membership_role(tenant=acme["tenant"], user=_user("arthur")) == "auditor"
    auditor.close()


def _user(username: str):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=username)


def test_an_admin_of_another_tenant_reaches_nothing_of_this_one(browser, live_server, acme) -> None:
    from playwright.sync_api import expect

    outsider = Session(browser, live_server.url, "outsider")
    outsider.sign_in("oscar", "pw-oscar-123")
    page = outsider.page
    expect(page.locator("#tenant-list")).to_contain_text("Globex")
    expect(page.locator("#tenant-list")).not_to_contain_text("Acme")
    page.click("#tenant-switcher summary")
    expect(page.locator("#tenant-switcher")).not_to_contain_text("Acme")
    outsider.shot("tenants")
    for name, path in _urls(acme, writes=False):
        assert outsider.go(path) == 404, (name, path)
        expect(page.locator("h1")).to_have_text("Not found")
        assert "Alice" not in page.content() and "Acme" not in page.content()
    outsider.shot("not-found")
    # acme's fact under oscar's own tenant: not found either.
    assert outsider.go(f"/t/globex/facts/{acme['fact'].pk}/") == 404
    assert outsider.go(f"/t/globex/facts/{acme['other_fact'].pk}/") == 200
    token = page.locator("#language-form input[name=csrfmiddlewaretoken]").get_attribute("value")
    for name, path in _urls(acme, writes=True):
        response = page.request.post(
            live_server.url + path,
            form={"csrfmiddlewaretoken": token, "helpful": "false", "reason": "x"},
        )
        assert response.status == 404, (name, response.status)
    outsider.close()


def test_an_admin_curates_entities_and_decides_a_conflict(
    browser, live_server, people, system_actor, eager_tasks
) -> None:
    """老王 and 王总 become one entity, a project name goes into the dictionary, and a conflict
    the worker found is decided: all in the browser, each step seen on the page."""
    from playwright.sync_api import expect

    from tenants.inputs import tenant_draft
    from tenants.services import tenant_create

    tenant_create(actor=system_actor, draft=tenant_draft({"slug": "acme", "name": "Acme"}))
    sam, _ = people
    admin = Session(browser, live_server.url, "curation")
    admin.sign_in("sam", "pw-sam-12345")
    page = admin.page
    for text in ("老王下周去上海出差。", "王总说预算要再砍一成。", "Bob lives in Berlin.",
                 "北极星计划由老王负责。", "Bob lives in Munich."):  # fmt: skip
        admin.go("/t/acme/facts/new/")
        page.fill("#id_content", text)
        page.click("#fact-form button")
        expect(page.locator(".messages")).to_contain_text("Fact stored.")
    # Merge 王总 into 老王 on 老王's page.
    admin.go("/t/acme/entities/?q=老王")
    page.click("#entity-table a:text-is('老王')")
    page.fill("#entity-merge input[name=other]", "王总")
    page.click("#entity-merge button")
    expect(page.locator(".messages")).to_contain_text("王总 merged in")
    expect(page.locator("#entity-aliases")).to_contain_text("王总")
    expect(page.locator("#entity-aliases")).to_contain_text("3")
    expect(page.locator("#entity-history")).to_contain_text("merged another entity in")
    expect(page.locator("#entity-graph svg")).to_have_count(1)
    expect(page.locator("#entity-graph svg")).to_contain_text("上海")
    admin.shot("entity-merged")
    # The dictionary: the project becomes one entity, and the re-linking shows its progress.
    admin.go("/t/acme/entities/dictionary/")
    page.fill("#dictionary-add input[name=term]", "北极星计划")
    page.select_option("#dictionary-add select[name=type]", "product")
    page.click("#dictionary-add button")
    expect(page.locator("#dictionary-table")).to_contain_text("北极星计划")
    expect(page.locator("#relink-progress")).to_contain_text("100%")
    admin.shot("dictionary")
    admin.go("/t/acme/entities/?q=北极星")
    expect(page.locator("#entity-table")).to_contain_text("北极星计划")
    # The conflict the worker recorded after embedding (tasks run eagerly here).
    admin.go("/t/acme/conflicts/")
    row = page.locator("#conflict-table tr", has_text="Munich")
    expect(row).to_contain_text("Berlin")
    admin.shot("conflicts")
    row.locator("input[name=note]").fill("he moved in May")
    row.locator("button[value=supersede]").click()
    expect(page.locator("#conflict-table")).to_contain_text("No conflicts here.")
    admin.go("/t/acme/conflicts/?status=resolved")
    expect(page.locator("#conflict-table")).to_contain_text("he moved in May")
    expect(page.locator("#conflict-table")).to_contain_text("superseded")
    admin.shot("conflict-decided")
    admin.close()
