"""Web admin pages of a tenant's members: adding, inviting, changing roles, removing, and
one-time password-reset links."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.mail import send_mail
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from surfaces.base.forms import apply_errors
from surfaces.base.pages import TenantPage, WriteAction, tenant_page
from surfaces.pages.tenant_forms import InviteForm, MemberForm, RoleForm, role_label
from tenants import invitations, selectors, services
from tenants.errors import InvalidInput

logger = logging.getLogger(__name__)


# A link shown once (an invitation or a password reset): kept in the session between the POST
# and the page it redirects to, which takes it out (POST-redirect-GET: a reload shows nothing).
_ONCE = "mnemosyne_show_once"


def _show_once(request: HttpRequest, kind: str, **values: Any) -> None:
    request.session[_ONCE] = {"kind": kind, **values}


def _take_once(request: HttpRequest, kind: str) -> dict[str, Any] | None:
    shown = request.session.get(_ONCE)
    if not shown or shown.get("kind") != kind:
        return None
    del request.session[_ONCE]
    return shown


def _members_page(
    view: TenantPage,
    form: MemberForm,
    status: int = 200,
    invite_form: InviteForm | None = None,
) -> HttpResponse:
    """The members page; the add and invite actions render it too, with their form's errors."""
    members = selectors.membership_list(tenant=view.tenant)
    can_write = view.access.can_write
    # Staff reset their passwords elsewhere; whether a member belongs to other tenants too
    # is checked when the link is asked for (this page reads inside this tenant only).
    rows = [
        (m, RoleForm(initial={"role": m.role}, auto_id=False), can_write and not m.user.is_staff)
        for m in members
    ]
    return view.render(
        "web/members.html",
        {
            "members": rows,
            "has_member_admin": any(m.role == "admin" for m in members),
            "superusers": selectors.superuser_list(),
            "form": form,
            "invite_form": invite_form or InviteForm(),
            "invitations": selectors.invitation_list(tenant=view.tenant) if can_write else [],
            "shown_link": _take_once(view.request, "member_link") if can_write else None,
            "mail_enabled": settings.MNEMOSYNE_MAIL_ENABLED,
        },
        status=status,
    )


@tenant_page("members/", name="members", nav=gettext_lazy("Members"), order=60)
class MembersPage(TenantPage):
    def get(self, request: HttpRequest) -> HttpResponse:
        return _members_page(self, MemberForm())


@tenant_page("members/add", name="member_add", section="members")
class MemberAddAction(WriteAction):
    """An account by its username: a member gets the role; anyone else is invited (superusers
    add an existing account at once). The answer does not tell whether the account exists."""

    def post(self, request: HttpRequest) -> HttpResponse:
        form = MemberForm(request.POST)
        if form.is_valid():
            username, role = form.cleaned_data["username"], form.cleaned_data["role"]
            try:
                added = invitations.member_add(
                    tenant=self.tenant, username=username, role=role, actor=self.actor
                )
            except InvalidInput as error:
                apply_errors(form, error)
            else:
                if added.invitation is not None:
                    messages.success(
                        request,
                        _(
                            "Invitation made for %(name)s as %(role)s. If an account has this "
                            "name, it sees the invitation when it signs in, and joins when it "
                            "accepts."
                        )
                        % {"name": username, "role": role_label(role)},
                    )
                else:
                    messages.success(
                        request,
                        _("%(name)s is now %(role)s.")
                        % {"name": username, "role": role_label(role)},
                    )
                return redirect(self.url("members"))
        return _members_page(self, form, status=400)


def _send(to: str, subject: str, body: str) -> bool:
    """Mail when the server is configured for it; False when not sent (the link is shown)."""
    if not (settings.MNEMOSYNE_MAIL_ENABLED and to):
        return False
    try:
        send_mail(subject, body, None, [to])
    except OSError:
        logger.warning("mail to %s not sent", to, exc_info=True)
        return False
    return True


@tenant_page("members/invite", name="member_invite", section="members")
class MemberInviteAction(WriteAction):
    """A one-time sign-up link for a new member; shown once, and mailed when mail is set up."""

    def post(self, request: HttpRequest) -> HttpResponse:
        form = InviteForm(request.POST)
        if form.is_valid():
            try:
                created = invitations.invitation_create(
                    tenant=self.tenant,
                    role=form.cleaned_data["role"],
                    email=form.cleaned_data["email"],
                    actor=self.actor,
                )
            except InvalidInput as error:
                apply_errors(form, error)
            else:
                link = request.build_absolute_uri(
                    reverse("web:sign_up", kwargs={"token": created.token})
                )
                mailed = _send(
                    created.invitation.email,
                    _("You are invited to %(tenant)s on Mnemosyne") % {"tenant": self.tenant.name},
                    _("Make your account with this link (it works once, for %(days)d days):")
                    % {"days": settings.MNEMOSYNE_INVITE_DAYS}
                    + f"\n{link}\n",
                )
                _show_once(request, "member_link", what="invite", link=link, mailed=mailed)
                return redirect(self.url("members"))
        return _members_page(self, MemberForm(), status=400, invite_form=form)


@tenant_page("invitations/<id:invitation_id>/withdraw", name="invite_revoke", section="members")
class InviteRevokeAction(WriteAction):
    def post(self, request: HttpRequest, invitation_id: int) -> HttpResponse:
        invitations.invitation_revoke(
            tenant=self.tenant, invitation_id=invitation_id, actor=self.actor
        )  # 404
        messages.success(request, _("The invitation is withdrawn: its link no longer works."))
        return redirect(self.url("members"))


@tenant_page("members/<username:username>/reset-link", name="member_reset", section="members")
class MemberResetLinkAction(WriteAction):
    """A one-time password-reset link for a member who belongs to this tenant alone."""

    def post(self, request: HttpRequest, username: str) -> HttpResponse:
        member = selectors.membership_get(tenant=self.tenant, username=username)  # 404
        try:
            uid, token = services.password_reset_token_make(
                tenant=self.tenant, user=member.user, actor=self.actor
            )
        except InvalidInput as error:
            messages.error(request, error.message)
            return redirect(self.url("members"))
        link = request.build_absolute_uri(
            reverse("web:password_reset_confirm", kwargs={"uidb64": uid, "token": token})
        )
        mailed = _send(
            member.user.email,
            _("Mnemosyne: reset your password"),
            _("Choose a new password with this link (it works once):") + f"\n{link}\n",
        )
        _show_once(request, "member_link", what="reset", link=link, mailed=mailed, name=username)
        return redirect(self.url("members"))


def _refuse_self(view: TenantPage, request: HttpRequest) -> HttpResponse:
    """An admin does not demote or remove themselves by a slip of the mouse; another admin
    can (the last admin of a tenant is kept by the services, whoever asks)."""
    messages.error(request, _("You cannot change your own membership here; another admin can."))
    return redirect(view.url("members"))


def _is_self(request: HttpRequest, member: Any) -> bool:
    return member.user_id == request.user.pk


@tenant_page("members/<username:username>/role", name="member_role", section="members")
class MemberRoleAction(WriteAction):
    def post(self, request: HttpRequest, username: str) -> HttpResponse:
        member = selectors.membership_get(tenant=self.tenant, username=username)  # 404
        if _is_self(request, member):
            return _refuse_self(self, request)
        form = RoleForm(request.POST)
        if not form.is_valid():
            messages.error(request, _("Choose admin or auditor."))
            return redirect(self.url("members"))
        role = form.cleaned_data["role"]
        try:
            services.membership_set(
                tenant=self.tenant, user=member.user, role=role, actor=self.actor
            )
        except InvalidInput as error:
            messages.error(request, error.message)
        else:
            messages.success(
                request,
                _("%(name)s is now %(role)s.") % {"name": username, "role": role_label(role)},
            )
        return redirect(self.url("members"))


@tenant_page("members/<username:username>/remove", name="member_remove", section="members")
class MemberRemoveAction(WriteAction):
    def post(self, request: HttpRequest, username: str) -> HttpResponse:
        member = selectors.membership_get(tenant=self.tenant, username=username)  # 404
        if _is_self(request, member):
            return _refuse_self(self, request)
        try:
            services.membership_remove(tenant=self.tenant, user=member.user, actor=self.actor)
        except InvalidInput as error:
            messages.error(request, error.message)
        else:
            messages.success(request, _("%(name)s is no longer a member.") % {"name": username})
        return redirect(self.url("members"))
