"""An account that exists elsewhere joins a tenant only through an invitation it accepts.

A tenant admin who names an account that is not a member makes an invitation addressed to it;
the answer is the same whether or not an account has that name. The account sees it on its home
page after signing in and accepts or declines it; nobody else can see, accept or decline it. A
sign-up link opened while signed in joins with the account one has.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tenants import selectors
from tenants.errors import NotFound
from tenants.invitations import invitation_accept_as, invitation_decline, invitations_waiting
from tenants.models import TenantEvent
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _client(user=None) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    if user is not None:
        client.force_login(user)
    return client


def _text(response) -> str:
    return response.content.decode()


def _invite(owner, username: str, role: str = "auditor") -> str:
    """Name the account on Acme's members page; the flash message the admin reads."""
    page = _text(
        _client(owner).post(
            "/t/acme/members/add", {"username": username, "role": role}, follow=True
        )
    )
    return re.search(r'<ul class="messages">(.*?)</ul>', page, re.S).group(1)


def test_naming_another_tenants_admin_invites_them_and_tells_nothing(
    owner, outsider, other_tenant
) -> None:
    """oscar, Globex's admin, is named by Acme's admin: he is invited, not added; the answer is
    the one a name nobody has gets."""
    said_for_oscar = _invite(owner, "oscar")
    said_for_nobody = _invite(owner, "nobody-at-all")
    assert said_for_oscar.replace("oscar", "X") == said_for_nobody.replace("nobody-at-all", "X")
    assert "Invitation made for oscar as auditor" in said_for_oscar
    with pytest.raises(NotFound):
        selectors.membership_get(tenant=owner_tenant(owner), username="oscar")
    # The API answers alike too.
    from tests.api_fixtures import signed_in

    answers = [
        signed_in(owner).post(
            "/api/v1/tenants/acme/members", {"username": name, "role": "admin"}, format="json"
        )
        for name in ("oscar", "nobody-else")
    ]
    assert [a.status_code for a in answers] == [202, 202]
    assert [sorted(a.json()) for a in answers] == [sorted(answers[0].json())] * 2


def owner_tenant(owner):
    from tenants.selectors import tenants_for_user

    ((tenant, _role),) = tenants_for_user(user=owner)
    return tenant


def test_the_account_accepts_on_its_home_page_and_becomes_a_member(owner, outsider) -> None:
    _invite(owner, "oscar", role="admin")
    oscar = _client(outsider)
    home = _text(oscar.get("/"))
    assert "Invitations for you" in home and 'data-invitation="acme"' in home
    (waiting,) = invitations_waiting(user=outsider)
    page = _text(oscar.post(f"/accounts/invitations/{waiting.pk}/accept", follow=True))
    assert "You joined Acme as admin." in page
    tenant = owner_tenant(owner)
    assert selectors.membership_get(tenant=tenant, username="oscar").role == "admin"
    assert oscar.get("/t/acme/members/").status_code == 200
    assert 'data-invitation="acme"' not in _text(oscar.get("/"))  # used up
    with tenant_scope(tenant):
        accepted = TenantEvent.objects.for_tenant(tenant).filter(action="invite_accept").get()
    assert accepted.actor == f"user:{outsider.pk}:oscar" and accepted.after["role"] == "admin"
    # The link is used: a second press is a 404, and nothing changes.
    assert oscar.post(f"/accounts/invitations/{waiting.pk}/accept").status_code == 404


def test_a_declined_invitation_is_shown_declined_and_cannot_be_accepted(owner, outsider) -> None:
    _invite(owner, "oscar")
    (waiting,) = invitations_waiting(user=outsider)
    oscar = _client(outsider)
    page = _text(oscar.post(f"/accounts/invitations/{waiting.pk}/decline", follow=True))
    assert "You declined the invitation to Acme." in page
    assert invitations_waiting(user=outsider) == []
    assert oscar.post(f"/accounts/invitations/{waiting.pk}/accept").status_code == 404
    with pytest.raises(NotFound):
        selectors.membership_get(tenant=owner_tenant(owner), username="oscar")
    members = _text(_client(owner).get("/t/acme/members/"))
    row = members.split('data-invitation="oscar"')[1].split("</tr>")[0]
    assert "declined" in row and "Withdraw" not in row


def test_nobody_else_sees_accepts_or_declines_it(owner, outsider, django_user_model) -> None:
    """Another account (a member of Acme, of Globex, or of nothing) cannot use oscar's
    invitation, whatever id it posts; oscar cannot use an invitation addressed to another."""
    _invite(owner, "oscar")
    _invite(owner, "nina")
    (for_oscar,) = invitations_waiting(user=outsider)
    nina = django_user_model.objects.create_user("nina", password="pw-nina-123")
    (for_nina,) = invitations_waiting(user=nina)
    stranger = django_user_model.objects.create_user("sam", password="pw-sam-123")
    for user, invitation in ((nina, for_oscar), (stranger, for_oscar), (outsider, for_nina)):
        client = _client(user)
        for answer in ("accept", "decline"):
            assert client.post(f"/accounts/invitations/{invitation.pk}/{answer}").status_code == 404
        with pytest.raises(NotFound):
            invitation_accept_as(user=user, invitation_id=invitation.pk)
        with pytest.raises(NotFound):
            invitation_decline(user=user, invitation_id=invitation.pk)
    assert invitations_waiting(user=stranger) == []
    assert 'data-invitation="acme"' not in _text(_client(stranger).get("/"))
    # Signed out: the sign-in page, not an answer.
    assert _client().post(f"/accounts/invitations/{for_oscar.pk}/accept").status_code == 302
    # Both invitations still wait for their accounts.
    assert [i.pk for i in invitations_waiting(user=outsider)] == [for_oscar.pk]
    assert [i.pk for i in invitations_waiting(user=nina)] == [for_nina.pk]


def test_a_withdrawn_invitation_is_gone_from_the_accounts_page(owner, outsider) -> None:
    _invite(owner, "oscar")
    (waiting,) = invitations_waiting(user=outsider)
    _client(owner).post(f"/t/acme/invitations/{waiting.pk}/withdraw")
    assert invitations_waiting(user=outsider) == []
    assert 'data-invitation="acme"' not in _text(_client(outsider).get("/"))
    assert _client(outsider).post(f"/accounts/invitations/{waiting.pk}/accept").status_code == 404


def test_naming_the_account_again_replaces_its_open_invitation(owner, outsider) -> None:
    _invite(owner, "oscar", role="auditor")
    _invite(owner, "oscar", role="admin")
    (waiting,) = invitations_waiting(user=outsider)
    assert waiting.role == "admin"


def test_a_sign_up_link_opened_signed_in_joins_with_that_account(
    owner, outsider, system_actor
) -> None:
    from tenants.invitations import invitation_create

    created = invitation_create(tenant=owner_tenant(owner), role="auditor", actor=system_actor)
    oscar = _client(outsider)
    link = f"/accounts/sign-up/{created.token}/"
    page = _text(oscar.get(link))
    assert "Join as oscar" in page and "id_password1" not in page
    joined = _text(oscar.post(link, follow=True))
    assert "You joined Acme as auditor." in joined
    assert selectors.membership_get(tenant=owner_tenant(owner), username="oscar").role == (
        "auditor"
    )
    assert oscar.get(link).status_code == 404  # used once
    # Signed out, the page offers to sign in first.
    other = invitation_create(tenant=owner_tenant(owner), role="auditor", actor=system_actor)
    signed_out = _text(_client().get(f"/accounts/sign-up/{other.token}/"))
    assert "Already have an account?" in signed_out and "id_password1" in signed_out


def test_an_invitation_for_an_account_is_no_sign_up_link(owner, outsider) -> None:
    """Its token is never shown; even were it guessed, the sign-up page refuses it."""
    from tenants.invitations import invitation_create

    created = invitation_create(
        tenant=owner_tenant(owner), role="admin", actor=_actor(owner), username="oscar"
    )
    assert _client().get(f"/accounts/sign-up/{created.token}/").status_code == 404
    assert _client(owner).get(f"/accounts/sign-up/{created.token}/").status_code == 404


def _actor(user):
    from tenants.actors import Actor

    return Actor.user(user)
