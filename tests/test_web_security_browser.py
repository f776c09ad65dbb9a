"""Signing in and the admin's honesty, in a real browser (Debian's chromium via Playwright): a
lockout after wrong passwords, an invitation to a first sign-in, a two-factor sign-in,
confirmation dialogs, a live form that shows its error instead of a stale result, a key secret
that a reload does not show again; and every page under the Content-Security-Policy with nothing
loaded from another host (a violation the browser reports fails the test)."""

from __future__ import annotations

import os
import re

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from facts import services as fact_services  # noqa: E402
from facts.inputs import fact_draft
from surfaces.base.pages import registered_pages  # noqa: E402
from tests.test_web_browser import Session  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Collects what the Content-Security-Policy refused, in every page of the context.
WATCH_CSP = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__csp.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


class Watched(Session):
    """A browser session that records every request's host and every CSP violation."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.requests: list[str] = []
        self.violations: list[str] = []
        self.context.add_init_script(WATCH_CSP)
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on(
            "console",
            lambda message: (
                self.violations.append(message.text)
                if "Content Security Policy" in message.text
                else None
            ),
        )

    def go(self, path: str) -> int:
        status = super().go(path)
        self.page.wait_for_load_state("networkidle")
        self.violations += self.page.evaluate("window.__csp || []")
        return status

    def check(self) -> None:
        foreign = [
            url
            for url in self.requests
            if not (url.startswith(self.base) or url.startswith(("data:", "blob:", "about:")))
        ]
        assert not foreign, f"loaded from another host: {foreign}"
        assert not self.violations, f"Content-Security-Policy violations: {self.violations}"


@pytest.fixture
def team(django_user_model, system_actor):
    from tenants.inputs import tenant_draft
    from tenants.services import apikey_create, membership_set, tenant_create

    sam = django_user_model.objects.create_superuser("sam", password="pw-sam-12345")
    olivia = django_user_model.objects.create_user("olivia", password="pw-olivia-123")
    arthur = django_user_model.objects.create_user("arthur", password="pw-arthur-123")
    tenant = tenant_create(actor=system_actor, draft=tenant_draft({"slug": "acme", "name": "Acme"}))
    membership_set(tenant=tenant, user=olivia, role="admin", actor=system_actor)
    membership_set(tenant=tenant, user=arthur, role="auditor", actor=system_actor)
    fact = fact_services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Alice prefers green tea", "scope": "user:alice"}),
    ).fact
    for n in range(3):
        fact_services.fact_add(
            tenant=tenant, actor=system_actor, draft=fact_draft({"content": f"Note {n} on tea"})
        )
    key = apikey_create(tenant=tenant, name="hermes", actor=system_actor).key
    return {"sam": sam, "tenant": tenant, "fact": fact, "key": key}


def test_repeated_wrong_passwords_lock_the_account(browser, live_server, team) -> None:
    from playwright.sync_api import expect

    visitor = Session(browser, live_server.url, "lockout")
    page = visitor.page
    visitor.go("/accounts/sign-in/")
    for n in range(9):
        page.fill("#id_username", "olivia")
        page.fill("#id_password", f"wrong-{n}")
        page.click("button[type=submit]")
        expect(page.locator(".errorlist")).to_contain_text("correct username and password")
    page.fill("#id_username", "olivia")
    page.fill("#id_password", "wrong-again")
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Too many failed sign-ins")
    visitor.shot("locked")
    visitor.go("/accounts/sign-in/")
    page.fill("#id_username", "olivia")
    page.fill("#id_password", "pw-olivia-123")  # the right one: refused all the same
    page.click("button[type=submit]")
    expect(page.locator("#locked")).to_contain_text("Try again in 15 minutes")
    visitor.close()


def test_an_invitation_leads_to_a_first_sign_in(browser, live_server, team) -> None:
    from playwright.sync_api import expect

    admin = Session(browser, live_server.url, "invite")
    admin.sign_in("olivia", "pw-olivia-123")
    page = admin.page
    admin.go("/t/acme/members/")
    page.select_option("#invite-form select[name=role]", "auditor")
    page.click("#invite-form button")
    link = page.inner_text("#member-link").strip()
    assert "/accounts/sign-up/" in link
    admin.shot("invitation")
    page.reload()
    expect(page.locator("#member-link")).to_have_count(0)  # shown once
    expect(page.locator("#invitation-table tbody tr")).to_have_count(1)
    admin.close()

    newcomer = Session(browser, live_server.url, "sign-up")
    page = newcomer.page
    page.goto(link)
    expect(page.locator("h1")).to_have_text("Join Acme")
    page.fill("#id_username", "nina")
    page.fill("#id_password1", "nina12345678")
    page.fill("#id_password2", "nina12345678")
    page.click("#sign-up-form button")
    expect(page.locator(".errorlist")).to_contain_text("username")
    page.fill("#id_password1", "Larch-and-birch-9")
    page.fill("#id_password2", "Larch-and-birch-9")
    newcomer.shot("sign-up")
    page.click("#sign-up-form button")
    expect(page.locator(".messages")).to_contain_text("Your account nina is ready")
    newcomer.sign_in("nina", "Larch-and-birch-9")
    page.click("#tenant-list a >> text=Acme")
    expect(page.locator("nav.side .badge")).to_contain_text("auditor")
    newcomer.shot("first-sign-in")
    page.goto(link)
    expect(page.locator("h1")).to_have_text("This invitation cannot be used")
    newcomer.close()


def _code(user) -> str:
    from django.utils import timezone
    from django_otp.oath import TOTP
    from django_otp.plugins.otp_totp.models import TOTPDevice

    device = TOTPDevice.objects.filter(user=user).first()
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    totp.time = timezone.now().timestamp()
    return f"{totp.token():0{device.digits}d}"


def test_an_admin_turns_on_two_factor_and_signs_in_with_a_code(browser, live_server, team) -> None:
    import time

    from playwright.sync_api import expect

    admin = Session(browser, live_server.url, "two-factor")
    admin.sign_in("sam", "pw-sam-12345")
    page = admin.page
    page.click("#user-menu summary")
    page.click("text=Two-factor sign-in")
    expect(page.locator("#two-factor-qr svg")).to_be_visible()
    admin.shot("two-factor-setup")
    page.fill("#id_code", "000000")
    page.click("#two-factor-on button")
    expect(page.locator(".errorlist")).to_contain_text("wrong")
    time.sleep(2)  # django-otp makes one wait after a wrong code
    page.fill("#id_code", _code(team["sam"]))
    page.click("#two-factor-on button")
    expect(page.locator(".messages")).to_contain_text("Two-factor sign-in is on")
    admin.close()

    time.sleep(31)  # a code is used once: wait for the next one
    again = Session(browser, live_server.url, "two-factor-sign-in")
    page = again.page
    again.go("/accounts/sign-in/?next=/admin/")
    page.fill("#id_username", "sam")
    page.fill("#id_password", "pw-sam-12345")
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Two-factor sign-in")
    assert again.go("/t/acme/") == 200 and "/accounts/sign-in/" in page.url  # not in yet
    again.go("/accounts/sign-in/code/")
    page.fill("#id_code", _code(team["sam"]))
    again.shot("two-factor-code")
    page.click("#code-form button")
    page.wait_for_url(re.compile(r".*/admin/$"))
    expect(page.locator("body")).to_contain_text("Site administration")
    again.close()


def test_destructive_actions_ask_first(browser, live_server, team) -> None:
    from playwright.sync_api import expect

    admin = Session(browser, live_server.url, "confirm")
    admin.sign_in("olivia", "pw-olivia-123")
    page = admin.page
    admin.go("/t/acme/keys/")
    asked: list[str] = []

    def dismiss(dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.click('tr[data-key="hermes"] button.danger')
    expect(page.locator('tr[data-key="hermes"]')).to_contain_text("active")
    assert asked and "Revoke hermes?" in asked[0]

    def accept(dialog) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    page.click('tr[data-key="hermes"] button.danger')
    expect(page.locator(".messages")).to_contain_text("revoked")
    expect(page.locator('tr[data-key="hermes"]')).to_contain_text("revoked")

    admin.go("/t/acme/members/")
    page.once("dialog", dismiss)
    page.click('tr[data-member="arthur"] button.danger')
    expect(page.locator('tr[data-member="arthur"]')).to_be_visible()
    assert "Remove arthur" in asked[-1]
    admin.go(f"/t/acme/facts/{team['fact'].pk}/")
    page.once("dialog", dismiss)
    page.click("#fact-remove")
    assert "Remove" in asked[-1]
    admin.go(f"/t/acme/facts/{team['fact'].pk}/")
    expect(page.locator("#fact-remove")).to_be_visible()  # still active: nothing was removed
    admin.close()


def test_an_invalid_retention_value_shows_its_error_and_no_stale_preview(
    browser, live_server, team
) -> None:
    from playwright.sync_api import expect

    admin = Session(browser, live_server.url, "retention")
    admin.sign_in("olivia", "pw-olivia-123")
    page = admin.page
    admin.go("/t/acme/retention/")
    page.fill("#id_archive_below_trust", "0.6")
    expect(page.locator("#preview-archive")).to_have_text("4")
    page.fill("#id_archive_below_trust", "7")
    expect(page.locator("#retention-preview [data-preview-errors]")).to_contain_text(
        "less than or equal to 1"
    )
    expect(page.locator("#preview-archive")).to_have_count(0)  # the old count is gone
    admin.shot("retention-invalid")
    page.fill("#id_archive_below_trust", "0.6")
    expect(page.locator("#preview-archive")).to_have_text("4")
    admin.close()


def test_a_new_keys_secret_is_not_shown_again_on_reload(browser, live_server, team) -> None:
    from playwright.sync_api import expect

    from tenants.selectors import apikey_list

    admin = Session(browser, live_server.url, "key-reload")
    admin.sign_in("olivia", "pw-olivia-123")
    page = admin.page
    admin.go("/t/acme/keys/")
    page.fill("#id_name", "hermes-research")
    page.click("#key-form button")
    secret = page.inner_text("#key-secret").strip()
    assert secret.startswith("mnm_")
    page.reload()
    expect(page.locator("#secret-gone")).to_be_visible()
    assert secret not in page.content()
    page.go_back()
    page.go_forward()
    assert secret not in page.content()
    assert [k.name for k in apikey_list(tenant=team["tenant"])].count("hermes-research") == 1
    admin.close()


def test_no_page_loads_anything_from_another_host(browser, live_server, team) -> None:
    """Every page an admin and a superuser open, the API's schema pages and Django's admin:
    nothing from another host, and no Content-Security-Policy violation."""
    admin = Watched(browser, live_server.url, "csp")
    admin.sign_in("sam", "pw-sam-12345")
    values = {
        "fact_id": team["fact"].pk,
        "key_id": team["key"].pk,
        "username": "arthur",
        "invitation_id": 0,
    }
    from django.urls import reverse

    from facts.selectors.entities import entity_list

    entities = entity_list(tenant=team["tenant"]).entities
    values["entity_id"] = entities[0].pk if entities else 1
    paths = ["/", "/accounts/two-factor/", "/accounts/password/", "/admin/",
             "/admin/axes/accessattempt/", "/api/schema/ui/", "/api/schema/redoc/"]  # fmt: skip
    for spec in registered_pages():
        if not hasattr(spec.view, "get"):
            continue
        names = set(re.findall(r"<(?:\w+:)?(\w+)>", spec.route))
        if "entity_id" in names and not entities:
            continue
        if "invitation_id" in names:
            continue
        paths.append(reverse(f"web:{spec.name}", kwargs={"tenant": "acme", **{
            n: values[n] for n in names}}))  # fmt: skip
    for path in paths:
        if path.endswith("/export") or "export" in path:
            continue  # downloads
        admin.go(path)
    admin.go("/t/acme/retention/")
    admin.page.fill("#id_archive_below_trust", "0.3")  # an htmx request, then its swap
    admin.page.wait_for_selector("#retention-preview [data-preview]")
    admin.check()
    admin.close()
