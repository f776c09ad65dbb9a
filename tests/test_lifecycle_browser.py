"""The lifecycle in a real browser: an admin pins a fact, runs the retention policy dry and for
real (a worker runs it: eager here), and sees what the run did."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from facts import services as fact_services  # noqa: E402
from facts.inputs import fact_draft
from facts.models import Fact  # noqa: E402
from tenants.scope import tenant_scope  # noqa: E402
from tests.test_web_browser import Session  # noqa: E402
from tests.test_web_browser import eager_tasks as eager_tasks  # noqa: E402 - a fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.usefixtures("eager_tasks")
def test_an_admin_pins_a_fact_and_runs_retention(
    browser,
    live_server,
    tenant,
    owner,
    system_actor,
    settings,
    tmp_path,  # noqa: F811
) -> None:
    settings.MNEMOSYNE_ARCHIVE_DIR = tmp_path / "archives"
    keep = fact_services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Deploys need two approvals", "trust": 0.1}),
    ).fact
    doubt = fact_services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "The printer is on floor 3", "trust": 0.1}),
    ).fact
    owner.set_password("pw-olivia-123")
    owner.save()
    admin = Session(browser, live_server.url, "lifecycle")
    try:
        admin.sign_in("olivia", "pw-olivia-123")
        page = admin.page
        admin.go(f"/t/acme/facts/{keep.pk}/")
        page.click("#fact-pin")
        page.wait_for_selector("#fact-pinned")
        assert "1.00" in admin.text("#fact-importance")
        admin.shot("fact-pinned")

        admin.go("/t/acme/retention/")
        page.fill("#id_archive_below_trust", "0.3")
        page.click("#retention-save")
        page.wait_for_selector("text=Retention policy saved.")
        page.click("#retention-dry-run")
        page.wait_for_selector("text=Dry run: the policy would archive 1 and delete 0 facts now.")
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#retention-run-now")
        page.wait_for_selector("text=queued")
        admin.go("/t/acme/retention/")
        rows = admin.text("#retention-run-table")
        assert "run now" in rows and "done" in rows and "0 / 1 / 0" in rows
        assert "dry run" in rows and "would 1" in rows
        admin.shot("retention-runs")
    finally:
        admin.close()
    with tenant_scope(tenant):
        statuses = dict(Fact.objects.for_tenant(tenant).values_list("pk", "status"))
    assert statuses == {keep.pk: "active", doubt.pk: "archived"}  # the pinned one stays
