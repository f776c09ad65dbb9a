"""Invitations: how a person joins a tenant.

Two kinds. A sign-up link (a one-time token, only its hash kept) makes a new account, or joins
the account of whoever is signed in when it is opened. An invitation addressed to an account by
its username is made when a tenant admin names an account that is not a member: that account
finds it after signing in and accepts or declines it. The admin's answer is the same whether or
not an account has that name, so the members form tells a tenant admin nothing about the people
of other tenants. A superuser, who administers every account, still adds an existing account
at once.

Every change records a TenantEvent (invite, accept, withdraw). A decline is kept on the
invitation itself: the person who declines belongs to no tenant of theirs to record it in.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings
from django.contrib.auth.models import AbstractBaseUser, User
from django.db import transaction
from django.utils import timezone

from tenants import cross_tenant
from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.inputs import invite_email, member_role
from tenants.models import Invitation, Membership, Tenant
from tenants.scope import tenant_scope
from tenants.services import _event, _hash_secret, membership_set

_USERNAME = re.compile(r"[\w.@+-]{1,150}")


def account_name(value: Any) -> str:
    """A username as accounts are named: 1-150 letters, digits and @ . + - _."""
    name = value.strip() if isinstance(value, str) else ""
    if not _USERNAME.fullmatch(name):
        raise InvalidInput("username", "use 1-150 letters, digits and @ . + - _")
    return name


@dataclass(frozen=True)
class CreatedInvitation:
    invitation: Invitation
    token: str  # in the sign-up link, shown once; only its hash is kept


def invitation_create(
    *, tenant: Tenant, role: str, actor: Actor, email: str = "", username: str = ""
) -> CreatedInvitation:
    """An invitation to join the tenant with `role`, valid MNEMOSYNE_INVITE_DAYS: a sign-up link,
    or (with `username`) one for that account, which replaces its open invitations here."""
    role, email = member_role(role), invite_email(email)
    username = account_name(username) if username else ""
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    expires = now + timedelta(days=django_settings.MNEMOSYNE_INVITE_DAYS)
    with tenant_scope(tenant):
        if username:
            Invitation.objects.for_tenant(tenant).filter(
                username=username, used_at__isnull=True, revoked_at__isnull=True
            ).update(revoked_at=now)
        invitation = Invitation.objects.create(
            tenant=tenant,
            token_hash=_hash_secret(token),
            role=role,
            email=email,
            username=username,
            created_by=str(actor),
            expires_at=expires,
        )
        _event(
            tenant,
            "member_invite",
            actor,
            username or email or f"invitation {invitation.pk}",
            after={"role": role, "expires_at": expires.isoformat()},
        )
    return CreatedInvitation(invitation=invitation, token=token)


@dataclass(frozen=True)
class MemberAdded:
    """What naming an account did: `membership` when it is a member now (it was one already, or
    a superuser added it), `invitation` when it was invited instead."""

    membership: Membership | None = None
    invitation: Invitation | None = None


def _superuser(actor: Actor) -> bool:
    from django.contrib.auth import get_user_model

    if actor.kind != "user" or not actor.ident.isdigit():
        return False
    return bool(get_user_model().objects.filter(pk=int(actor.ident), is_superuser=True).exists())


def member_add(*, tenant: Tenant, username: str, role: str, actor: Actor) -> MemberAdded:
    """Give the account called `username` a place in the tenant with `role`.

    A member already: its role is set. Named by a superuser: the account (it must exist and be
    active) becomes a member at once. Anyone else is invited, and the invitation says the same
    whether or not such an account exists."""
    role, username = member_role(role), account_name(username)
    with tenant_scope(tenant):
        current: Membership | None = (
            Membership.objects.for_tenant(tenant)
            .select_related("user")
            .filter(user__username=username)
            .first()
        )
    if current is not None:
        return MemberAdded(
            membership=membership_set(tenant=tenant, user=current.user, role=role, actor=actor)
        )
    if _superuser(actor):
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise InvalidInput("username", "no active user has this name")
        return MemberAdded(
            membership=membership_set(tenant=tenant, user=user, role=role, actor=actor)
        )
    created = invitation_create(tenant=tenant, role=role, actor=actor, username=username)
    return MemberAdded(invitation=created.invitation)


def invitation_find(*, token: str) -> Invitation:
    """The open invitation this sign-up token belongs to; NotFound for any other token (used,
    withdrawn, declined, expired or unknown look the same)."""
    # The invitation's tenant is what we look for: the one lookup across tenants.
    found = cross_tenant.invitation_lookup(token_hash=_hash_secret(token or ""))
    invitation: Invitation | None = None
    if found is not None:
        invitation_id, tenant_id = found
        with tenant_scope(tenant_id):
            invitation = (
                Invitation.objects.for_tenant(tenant_id)
                .select_related("tenant")
                .filter(pk=invitation_id)
                .first()
            )
    if invitation is None or not invitation.is_open:
        raise NotFound("invitation", "")
    return invitation


def invitations_waiting(*, user: AbstractBaseUser) -> list[Invitation]:
    """The open invitations addressed to this account, oldest first, with their tenants."""
    username = user.get_username()
    waiting = []
    for invitation_id, tenant_id in cross_tenant.invitations_for(username=username):
        with tenant_scope(tenant_id):
            invitation = (
                Invitation.objects.for_tenant(tenant_id)
                .select_related("tenant")
                .filter(pk=invitation_id, username=username)
                .first()
            )
        if invitation is not None and invitation.is_open:
            waiting.append(invitation)
    return waiting


def _addressed(user: AbstractBaseUser, invitation_id: int) -> Invitation:
    for invitation in invitations_waiting(user=user):
        if invitation.pk == invitation_id:
            return invitation
    raise NotFound("invitation", invitation_id)


@dataclass(frozen=True)
class Joined:
    """An accepted invitation's membership; `new` is False when the account was a member of the
    tenant already (its role then stays as it was)."""

    membership: Membership
    new: bool


def _claim(invitation: Invitation, user: AbstractBaseUser) -> Joined:
    """Use the invitation up for `user` and make them a member (an existing membership stays as
    it is). NotFound when someone used, withdrew or declined it a moment ago."""
    tenant = invitation.tenant
    with tenant_scope(tenant):
        claimed = (
            Invitation.objects.for_tenant(tenant)
            .filter(
                pk=invitation.pk,
                used_at__isnull=True,
                revoked_at__isnull=True,
                declined_at__isnull=True,
            )
            .update(used_at=timezone.now(), used_by=user)
        )
        if claimed != 1:
            raise NotFound("invitation", "")
        current: Membership | None = (
            Membership.objects.for_tenant(tenant).filter(user_id=user.pk).first()
        )
        if current is not None:
            current.tenant = tenant
            return Joined(membership=current, new=False)
        membership = Membership.objects.create(tenant=tenant, user_id=user.pk, role=invitation.role)
        _event(
            tenant,
            "invite_accept",
            Actor.user(user),
            user.get_username(),
            after={"role": invitation.role, "invitation": invitation.pk},
        )
        return Joined(membership=membership, new=True)


@transaction.atomic
def invitation_accept(*, token: str, username: str, password: str, email: str = "") -> User:
    """Make the account a sign-up link asks for and the membership; the link is used up."""
    from django.contrib.auth import get_user_model, password_validation
    from django.core.exceptions import ValidationError

    invitation = invitation_find(token=token)
    if invitation.username:
        raise NotFound("invitation", "")  # it is for an account that exists
    user_model = get_user_model()
    username = account_name(username)
    if user_model.objects.filter(username__iexact=username).exists():
        raise InvalidInput("username", "this username is taken")
    user = user_model(username=username, email=(email or invitation.email or "").strip())
    try:
        password_validation.validate_password(password, user)
    except ValidationError as error:
        raise InvalidInput("password1", " ".join(error.messages)) from None
    user.set_password(password)
    user.save()
    _claim(invitation, user)
    return user


@transaction.atomic
def invitation_accept_as(
    *, user: AbstractBaseUser, invitation_id: int | None = None, token: str = ""
) -> Joined:
    """The signed-in account accepts an invitation: one addressed to it (by id), or a sign-up
    link it holds (by token). NotFound for any invitation it cannot accept."""
    if token:
        invitation = invitation_find(token=token)
        if invitation.username and invitation.username != user.get_username():
            raise NotFound("invitation", "")
    elif invitation_id is not None:
        invitation = _addressed(user, invitation_id)
    else:
        raise NotFound("invitation", "")
    return _claim(invitation, user)


def invitation_decline(*, user: AbstractBaseUser, invitation_id: int) -> Invitation:
    """The account turns down an invitation addressed to it; its admins see it declined."""
    invitation = _addressed(user, invitation_id)
    with tenant_scope(invitation.tenant):
        Invitation.objects.for_tenant(invitation.tenant).filter(
            pk=invitation.pk, used_at__isnull=True, declined_at__isnull=True
        ).update(declined_at=timezone.now())
    return invitation


def invitation_revoke(*, tenant: Tenant, invitation_id: int, actor: Actor) -> Invitation:
    with tenant_scope(tenant):
        invitation: Invitation | None = (
            Invitation.objects.for_tenant(tenant).filter(pk=invitation_id).first()
        )
        if invitation is None:
            raise NotFound("invitation", invitation_id)
        if invitation.is_open:
            invitation.revoked_at = timezone.now()
            invitation.save(update_fields=["revoked_at"])
            _event(
                tenant,
                "invite_revoke",
                actor,
                invitation.username or invitation.email or f"invitation {invitation.pk}",
            )
        return invitation
