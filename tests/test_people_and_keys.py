"""People (invitations, roles, the last admin, password resets, two-factor sign-in) and API keys
(expiry, rotation, scope limits, usage; keys see no members or keys)."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from facts import services as fact_services
from facts.inputs import fact_draft
from tenants import invitations, selectors, services
from tenants.errors import InvalidInput, NotFound
from tests.api_fixtures import bearer, signed_in

pytestmark = pytest.mark.django_db


def _post(client, path: str, body) -> object:
    return client.post(path, json.dumps(body), content_type="application/json")


def _page(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# -- the last admin ----------------------------------------------------------------------------


def test_the_last_admin_can_be_neither_removed_nor_demoted(owner, auditor, system_actor) -> None:
    tenant = selectors.tenant_get(slug="acme")
    with pytest.raises(InvalidInput, match="last admin"):
        services.membership_remove(tenant=tenant, user=owner, actor=system_actor)
    with pytest.raises(InvalidInput, match="last admin"):
        services.membership_set(tenant=tenant, user=owner, role="auditor", actor=system_actor)
    # With a second admin, the first may go.
    services.membership_set(tenant=tenant, user=auditor, role="admin", actor=system_actor)
    services.membership_set(tenant=tenant, user=owner, role="auditor", actor=system_actor)
    assert selectors.membership_role(tenant=tenant, user=owner) == "auditor"


def test_the_api_refuses_to_remove_the_last_admin(owner, django_user_model) -> None:
    sam = django_user_model.objects.create_superuser("sam", password="pw-sam-12345")
    answer = signed_in(sam).delete("/api/v1/tenants/acme/members/olivia")
    assert answer.status_code == 400 and "last admin" in answer.json()["message"]


# -- invitations -------------------------------------------------------------------------------


def test_an_invitation_link_makes_an_account_once(owner, tenant) -> None:
    admin = _page(owner)
    made = admin.post("/t/acme/members/invite", {"role": "auditor", "email": ""})
    assert made.status_code == 302
    page = admin.get("/t/acme/members/").content.decode()
    link = re.search(r'id="member-link">([^<]+)<', page).group(1)
    assert "/accounts/sign-up/" in link
    # Shown once: a reload no longer has it.
    assert "member-link" not in admin.get("/t/acme/members/").content.decode()
    path = link.split("testserver", 1)[1]
    visitor = Client()
    weak = visitor.post(path, {"username": "nina", "password1": "nina1234",
                               "password2": "nina1234"})  # fmt: skip
    assert weak.status_code == 400 and "username" in weak.content.decode()
    ok = visitor.post(path, {"username": "nina", "password1": "Larch-and-birch-9",
                             "password2": "Larch-and-birch-9"})  # fmt: skip
    assert ok.status_code == 302 and ok["Location"] == "/accounts/sign-in/"
    signed = visitor.post("/accounts/sign-in/", {"username": "nina",
                                                 "password": "Larch-and-birch-9"})  # fmt: skip
    assert signed.status_code == 302
    assert visitor.get("/t/acme/").status_code == 200
    assert selectors.membership_role(tenant=tenant, user=signed.wsgi_request.user) == "auditor"
    # Used up.
    assert Client().get(path).status_code == 404


def test_a_withdrawn_or_expired_invitation_does_not_work(owner, tenant, system_actor) -> None:
    created = invitations.invitation_create(tenant=tenant, role="admin", actor=system_actor)
    invitations.invitation_revoke(
        tenant=tenant, invitation_id=created.invitation.pk, actor=system_actor
    )
    assert Client().get(f"/accounts/sign-up/{created.token}/").status_code == 404
    expired = invitations.invitation_create(tenant=tenant, role="admin", actor=system_actor)
    from tenants.models import Invitation
    from tenants.scope import tenant_scope

    with tenant_scope(tenant):
        Invitation.objects.for_tenant(tenant).filter(pk=expired.invitation.pk).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
    with pytest.raises(NotFound):
        invitations.invitation_find(token=expired.token)


def test_an_outsider_cannot_withdraw_another_tenants_invitation(
    owner, outsider, tenant, system_actor
) -> None:
    created = invitations.invitation_create(tenant=tenant, role="admin", actor=system_actor)
    theirs = _page(outsider).post(f"/t/globex/invitations/{created.invitation.pk}/withdraw")
    assert theirs.status_code == 404
    assert invitations.invitation_find(token=created.token)


# -- password resets ---------------------------------------------------------------------------


def test_an_admin_makes_a_one_time_reset_link_for_a_member_of_this_tenant_only(
    owner, auditor, outsider, other_tenant, system_actor
) -> None:
    admin = _page(owner)
    assert admin.post("/t/acme/members/arthur/reset-link").status_code == 302
    page = admin.get("/t/acme/members/").content.decode()
    link = re.search(r'id="member-link">([^<]+)<', page).group(1)
    path = link.split("testserver", 1)[1]
    person = Client()
    form = person.get(path, follow=True)
    assert form.status_code == 200 and "new_password1" in form.content.decode()
    new = "Quiet-river-stones"
    done = person.post(form.redirect_chain[-1][0], {"new_password1": new, "new_password2": new})
    assert done.status_code == 302
    signed = Client().post("/accounts/sign-in/", {"username": "arthur", "password": new})
    assert signed.status_code == 302
    again = Client().get(path, follow=True)
    assert "new_password1" not in again.content.decode()
    # Someone who also belongs to another tenant: only a superuser resets them.
    services.membership_set(tenant=other_tenant, user=auditor, role="auditor", actor=system_actor)
    refused = admin.post("/t/acme/members/arthur/reset-link", follow=True)
    assert "other tenants" in refused.content.decode()


# -- two-factor sign-in ------------------------------------------------------------------------


def _totp(device) -> str:
    from django_otp.oath import TOTP

    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    totp.time = timezone.now().timestamp()
    return f"{totp.token():0{device.digits}d}"


def test_two_factor_sign_in_asks_for_a_code_after_the_password(owner) -> None:
    from django_otp.plugins.otp_totp.models import TOTPDevice

    me = _page(owner)
    assert me.get("/accounts/two-factor/").status_code == 200
    device = TOTPDevice.objects.get(user=owner)
    assert me.post("/accounts/two-factor/", {"code": _totp(device)}).status_code == 302
    device.refresh_from_db()
    assert device.confirmed

    client = Client()
    step = client.post("/accounts/sign-in/", {"username": "olivia", "password": "pw-olivia-123"})
    assert step.status_code == 302 and step["Location"] == "/accounts/sign-in/code/"
    assert client.get("/t/acme/").status_code == 302  # not signed in yet
    wrong = client.post("/accounts/sign-in/code/", {"code": "000000"})
    assert wrong.status_code == 400
    device.refresh_from_db()
    device.throttling_failure_count = 0
    device.throttling_failure_timestamp = None
    device.last_t = -1
    device.save()
    right = client.post("/accounts/sign-in/code/", {"code": _totp(device)})
    assert right.status_code == 302
    assert client.get("/t/acme/").status_code == 200


# -- API keys: what a key sees -----------------------------------------------------------------


@pytest.mark.parametrize("which", ["read", "write"])
def test_keys_see_no_members_and_no_keys(world, which) -> None:
    client = bearer(world.tokens[which])
    for path in ("/api/v1/members", "/api/v1/api-keys", f"/api/v1/api-keys/{world.key_id}"):
        answer = client.get(path)
        assert answer.status_code == 403, path
        assert "members and keys" in answer.json()["message"]


def test_an_expired_key_is_refused(world, system_actor) -> None:
    created = services.apikey_create(
        tenant=world.tenant,
        name="temp",
        actor=system_actor,
        expires_at=timezone.now() + timedelta(seconds=30),
    )
    assert bearer(created.token).get("/api/v1/facts").status_code == 200
    from tenants.models import ApiKey
    from tenants.scope import tenant_scope

    with tenant_scope(world.tenant):
        ApiKey.objects.for_tenant(world.tenant).filter(pk=created.key.pk).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
    assert bearer(created.token).get("/api/v1/facts").status_code == 401
    with pytest.raises(InvalidInput):
        services.apikey_create(
            tenant=world.tenant, name="past", actor=system_actor,
            expires_at=timezone.now() - timedelta(days=1),
        )  # fmt: skip


def test_a_rotated_key_keeps_its_old_secret_for_the_grace_period(world, owner) -> None:
    admin = signed_in(owner)
    old = world.tokens["write"]
    key_id = services.apikey_verify(token=old).pk
    rotated = _post(admin, f"/api/v1/tenants/acme/api-keys/{key_id}/rotate", {"grace_hours": 1})
    assert rotated.status_code == 200
    new = rotated.json()["token"]
    assert new != old and rotated.json()["previous_valid_until"]
    assert bearer(new).get("/api/v1/facts").status_code == 200
    assert bearer(old).get("/api/v1/facts").status_code == 200
    # Rotating again at once with no grace: the first secret is gone, the second too.
    again = _post(admin, f"/api/v1/tenants/acme/api-keys/{key_id}/rotate", {"grace_hours": 0})
    assert bearer(old).get("/api/v1/facts").status_code == 401
    assert bearer(new).get("/api/v1/facts").status_code == 401
    assert bearer(again.json()["token"]).get("/api/v1/facts").status_code == 200


def test_key_usage_is_counted_per_day_with_the_last_address(world, owner) -> None:
    client = bearer(world.tokens["read"])
    for _ in range(3):
        client.get("/api/v1/facts", REMOTE_ADDR="192.0.2.33")
    usage = selectors.apikey_usage(tenant=world.tenant)[world.key_id]
    assert usage.today == 3 and usage.last_7_days == 3
    page = _page(owner).get("/t/acme/keys/").content.decode()
    row = re.search(r'data-key="dashboard">(.*?)</tr>', page, re.S).group(1)
    assert "192.0.2.33" in row and "3 / 3" in row


# -- API keys: scope limits --------------------------------------------------------------------


@pytest.fixture
def scoped(world, system_actor):
    tenant = world.tenant
    for scope, text in [
        ("team:a", "Team A meets on Mondays about tea"),
        ("team:a/project:x", "Project X ships tea in March"),
        ("team:a2", "Team A2 secret tea plans"),
        ("team:b", "Team B tea budget is 40k"),
    ]:
        fact_services.fact_add(
            tenant=tenant, actor=system_actor, draft=fact_draft({"content": text, "scope": scope})
        )
    created = services.apikey_create(
        tenant=tenant, name="team-a", actor=system_actor, scope_prefix="team:a"
    )
    return bearer(created.token)


def test_a_scope_limited_key_sees_its_scope_and_below_only(world, scoped) -> None:
    listed = scoped.get("/api/v1/facts?limit=200").json()["results"]
    assert sorted(f["scope"] for f in listed) == ["team:a", "team:a/project:x"]
    recalled = _post(scoped, "/api/v1/recall", {"query": "tea", "k": 50}).json()["results"]
    assert {hit["fact"]["scope"] for hit in recalled} <= {"team:a", "team:a/project:x"}
    assert recalled
    context = _post(scoped, "/api/v1/context", {"query": "tea plans budget"}).json()
    assert "A2" not in json.dumps(context) and "40k" not in json.dumps(context)
    # Another scope's fact is not found, exactly like a missing one.
    assert scoped.get(f"/api/v1/facts/{world.fact.pk}").status_code == 404
    assert scoped.get(f"/api/v1/facts/{world.fact.pk}/history").status_code == 404


def test_a_scope_limited_key_writes_within_its_scope_only(scoped) -> None:
    inside = _post(scoped, "/api/v1/facts", {"content": "New tea", "scope": "team:a/sub:1"})
    assert inside.status_code == 201
    default = _post(scoped, "/api/v1/facts", {"content": "No scope given"})
    assert default.json()["fact"]["scope"] == "team:a"
    for outside in ("team:a2", "team:b", "user:x"):
        answer = _post(scoped, "/api/v1/facts", {"content": "Leak", "scope": outside})
        assert answer.status_code == 400 and answer.json()["field"] == "scope", outside


def test_a_scope_limited_key_reaches_nothing_that_spans_the_tenant(scoped) -> None:
    for path in ("/api/v1/entities", "/api/v1/audit", "/api/v1/tenant", "/api/v1/retention"):
        answer = scoped.get(path)
        assert answer.status_code in (403, 404), path
        if answer.status_code == 403:
            assert "scope" in answer.json()["message"]


def test_the_scope_limit_does_not_outlive_its_request(world, scoped) -> None:
    scoped.get("/api/v1/facts")
    unlimited = bearer(world.tokens["read"]).get("/api/v1/facts?limit=200").json()["results"]
    assert {"team:b", "team:a2"} <= {f["scope"] for f in unlimited}


def test_with_mail_set_up_an_invitation_is_also_mailed(owner, settings, mailoutbox) -> None:
    settings.MNEMOSYNE_MAIL_ENABLED = True
    admin = _page(owner)
    admin.post("/t/acme/members/invite", {"role": "auditor", "email": "nina@example.org"})
    page = admin.get("/t/acme/members/").content.decode()
    link = re.search(r'id="member-link">([^<]+)<', page).group(1)
    assert "It was also sent by e-mail." in page
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["nina@example.org"]
    assert link in mailoutbox[0].body and "Acme" in mailoutbox[0].subject
