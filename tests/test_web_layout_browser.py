"""The web admin on a phone's screen and for every hand, in a real browser (Debian's chromium
via Playwright).

One walk per language (English, then 简体中文 chosen with the page's language switch) opens
every page of the admin at 390 x 844 px, signed out and signed in as a superuser, and on each:

- the document is no wider than the screen, no element reaches beyond it (a wide table scrolls
  inside its own frame), a checkbox sits beside its label, no button's label breaks over lines;
- axe-core (tests/data/axe/axe.min.js, from the npm registry; injected by Playwright, nothing
  downloaded) finds no serious or critical accessibility violation.

Every page is photographed into test-artifacts/screenshots/. The copy buttons of a secret and a
sign-up link are pressed: with the Clipboard API, and without it (a page served over plain http
from another host has none).
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from surfaces.base.pages import Need, registered_pages  # noqa: E402
from tests.helpers import REPO  # noqa: E402
from tests.test_web_browser import Session, _urls  # noqa: E402
from tests.test_web_browser import acme as acme  # noqa: E402 - a fixture
from tests.test_web_browser import people as people  # noqa: E402 - a fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
AXE = REPO / "tests" / "data" / "axe" / "axe.min.js"

# What a person on a narrow screen would see go wrong, element by element.
LAYOUT_FAULTS = (REPO / "tests" / "data" / "layout_faults.js").read_text()

AXE_SERIOUS = """async () => {
  const found = await axe.run(document, {resultTypes: ['violations']});
  return found.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => v.impact + ' ' + v.id + ' (' + v.help + '): ' +
         v.nodes.slice(0, 4).map((n) => n.target.join(' ')).join(', '));
}"""


class Phone(Session):
    """A browser session on a phone-sized screen, with axe-core in every page it opens."""

    def __init__(self, browser, base: str, prefix: str) -> None:
        self.context = browser.new_context(
            locale="en-GB", viewport=PHONE, permissions=["clipboard-read", "clipboard-write"]
        )
        # An init script runs before the page's own scripts and is not subject to its
        # Content-Security-Policy (which refuses inline script).
        self.context.add_init_script(path=str(AXE))
        self.page = self.context.new_page()
        self.page.set_default_timeout(60_000)
        self.base = base
        self.prefix = prefix
        self.faults: list[str] = []

    def look(self, name: str, path: str | None = None, status: int = 200) -> None:
        """Open `path` (or stay), check the layout and axe, photograph the page."""
        if path is not None:
            response = self.page.goto(self.base + path)
            assert response and response.status == status, (name, path, response)
            if not response.text().lstrip().lower().startswith("<!doctype html>"):
                return  # a part that htmx puts into a page: checked in that page
        self.page.wait_for_load_state("networkidle")  # htmx panels loaded after the page
        self.faults += [f"{name}: {f}" for f in self.page.evaluate(LAYOUT_FAULTS)]
        self.faults += [f"{name}: {v}" for v in self.page.evaluate(AXE_SERIOUS)]
        self.shot(name)


def _choose_language(phone: Phone, code: str) -> None:
    with phone.page.expect_navigation():
        phone.page.select_option("#language-form select", code)
    assert phone.page.get_attribute("html", "lang") == code
    assert phone.page.locator("#language-form select").input_value() == code


def _read_pages(acme: dict) -> list[tuple[str, str]]:
    """Every registered tenant page that shows something (downloads left out); the recall
    playground and the facts with a search, so that they show results."""
    found = [(name, path) for name, path in _urls(acme, writes=False) if "export" not in name]
    found += [
        ("recall-results", "/t/acme/recall/?q=green+tea"),
        ("facts-search", "/t/acme/facts/?q=tea"),
    ]
    return found


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_every_page_fits_a_phone_and_passes_axe(browser, live_server, acme, language) -> None:
    from playwright.sync_api import expect

    from tenants.invitations import invitation_create

    invite = invitation_create(tenant=acme["tenant"], role="auditor", actor=_actor()).token
    phone = Phone(browser, live_server.url, f"phone-{language}")
    page = phone.page

    # Signed out.
    phone.go("/accounts/sign-in/")
    _choose_language(phone, language)
    phone.look("sign-in")
    phone.look("password-reset", "/accounts/password/reset/")
    phone.look("password-reset-sent", "/accounts/password/reset/sent/")
    phone.look("sign-up", f"/accounts/sign-up/{invite}/")
    phone.look("sign-up-used", "/accounts/sign-up/not-a-token/", status=404)

    # A superuser: every page of a tenant with data.
    phone.sign_in("sam", "pw-sam-12345")
    _choose_language(phone, language)  # signing in applies the person's own (none saved yet)
    phone.look("tenants", "/")
    phone.go("/t/acme/")
    toggle = page.locator("nav.side button.nav-toggle")
    links = page.locator("nav.side .side-links a")
    expect(toggle).to_be_visible()
    expect(links.first).to_be_hidden()  # folded under the menu button
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(links.last).to_be_visible()
    phone.look("menu-open")
    for menu in ("#tenant-switcher", "#user-menu"):
        page.click(f"{menu} summary")
        phone.look(menu[1:])
        page.click(f"{menu} summary")
    for name, path in _read_pages(acme):
        phone.look(name, path)
    phone.look("password", "/accounts/password/")
    phone.look("two-factor", "/accounts/two-factor/")
    phone.look("not-found", "/t/acme/facts/999999999/", status=404)

    # The pages that show a secret or a link once, and their copy buttons.
    phone.go("/t/acme/keys/")
    page.fill("#id_name", "phone-key")
    page.click("#key-form button[type=submit]")
    secret = page.inner_text("#key-secret").strip()
    phone.look("key-created")
    page.click("button[data-copy=key-secret]")
    expect(page.locator("#key-secret + .copy-row .copy-note")).not_to_be_empty()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    phone.go("/t/acme/members/")
    page.click("#invite-form button[type=submit]")
    link = page.inner_text("#member-link").strip()
    phone.look("invitation-made")
    page.click("button[data-copy=member-link]")
    expect(page.locator("#shown-link .copy-note")).not_to_be_empty()
    assert page.evaluate("navigator.clipboard.readText()") == link

    # The wide screen too, where the keys' row used to break its buttons letter by letter.
    page.set_viewport_size({"width": 1280, "height": 900})
    for name in ("keys", "members", "conflicts"):
        phone.look(f"{name}-wide", f"/t/acme/{name}/")
    phone.close()

    # An auditor: the same pages without their forms (values, not fields), and a refusal.
    auditor = Phone(browser, live_server.url, f"phone-{language}-auditor")
    auditor.sign_in("arthur", "pw-arthur-123")
    _choose_language(auditor, language)
    for name, path in _read_pages(acme):
        spec = next((s for s in registered_pages() if s.name == name), None)
        refused = spec is not None and spec.view.need_get is Need.WRITE
        auditor.look(name, path, status=403 if refused else 200)
    auditor.close()
    faults = phone.faults + [f"auditor's {fault}" for fault in auditor.faults]
    assert not faults, "\n".join(faults)


def _actor():
    from tenants.actors import Actor

    return Actor.job("tests")


# Takes the Clipboard API away, as a page served over plain http from another host has none,
# and records what the browser's own copy command copied.
NO_CLIPBOARD_API = """
window.__clipboard = navigator.clipboard;
Object.defineProperty(Navigator.prototype, 'clipboard', {get: () => undefined});
document.addEventListener('copy', () => { window.__copied = String(document.getSelection()); });
"""


def test_a_copy_button_copies_without_the_clipboard_api(browser, live_server, acme) -> None:
    from playwright.sync_api import expect

    admin = Session(browser, live_server.url, "copy-fallback")
    admin.context.grant_permissions(["clipboard-read", "clipboard-write"])
    admin.context.add_init_script(NO_CLIPBOARD_API)
    admin.sign_in("sam", "pw-sam-12345")
    page = admin.page
    admin.go("/t/acme/keys/")
    page.fill("#id_name", "fallback-key")
    page.click("#key-form button[type=submit]")
    assert page.evaluate("navigator.clipboard") is None
    secret = page.inner_text("#key-secret").strip()
    page.click("button[data-copy=key-secret]")
    expect(page.locator("#key-secret + .copy-row .copy-note")).to_have_text("Copied.")
    assert page.evaluate("window.__copied") == secret
    assert page.evaluate("window.__clipboard.readText()") == secret  # the system's clipboard
    admin.close()
