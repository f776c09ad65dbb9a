"""Web admin pages of tenant administration: retention, members, API keys, connecting agents."""

from __future__ import annotations

import logging
import shlex
from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.mail import send_mail
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agenttools import clients
from facts.inputs import clean_scope
from facts.retention import retention_dry_run, retention_run_start, retention_schedule
from facts.selectors.retention import retention_preview
from surfaces.base.forms import apply_errors
from surfaces.base.pages import Need, TenantPage, WriteAction, tenant_page, tenant_url
from surfaces.pages.tenant_forms import (
    ApiKeyForm,
    ApiKeyRotateForm,
    HermesForm,
    InviteForm,
    MemberForm,
    RetentionForm,
    RoleForm,
    role_label,
)
from tenants import invitations, selectors, services
from tenants.errors import InvalidInput
from tenants.inputs import retention_changes
from tenants.models import ApiKey, RetentionPolicy

logger = logging.getLogger(__name__)

# -- retention --------------------------------------------------------------------------------


def _retention_initial(policy: RetentionPolicy) -> dict[str, Any]:
    return {field: getattr(policy, field) for field in RetentionForm.base_fields}


@tenant_page("retention/", name="retention", nav=gettext_lazy("Retention"), order=50)
class RetentionPage(TenantPage):
    """The policy, what it would archive and purge now (live, as the admin types), and the
    legal hold."""

    def get(self, request: HttpRequest) -> HttpResponse:
        policy = selectors.retention_policy_get(tenant=self.tenant)
        return self.render(
            "web/retention.html",
            {
                "policy": policy,
                "form": RetentionForm(initial=_retention_initial(policy)),
                "preview": retention_preview(tenant=self.tenant),
                "schedule": retention_schedule(tenant=self.tenant),
            },
        )

    def post(self, request: HttpRequest) -> HttpResponse:
        form = RetentionForm(request.POST)
        if form.is_valid():
            try:
                services.retention_policy_update(
                    tenant=self.tenant, actor=self.actor, changes=retention_changes(form.changes())
                )
            except InvalidInput as error:
                apply_errors(form, error)
            else:
                messages.success(request, _("Retention policy saved."))
                return redirect(self.url("retention"))
        return self.render(
            "web/retention.html",
            {
                "policy": selectors.retention_policy_get(tenant=self.tenant),
                "form": form,
                "preview": None,
                "schedule": retention_schedule(tenant=self.tenant),
            },
            status=400,
        )


@tenant_page("retention/run", name="retention_run", section="retention")
class RetentionRunAction(WriteAction):
    """Run the policy now (a worker does it), or a dry run that reports what it would do."""

    def post(self, request: HttpRequest) -> HttpResponse:
        if request.POST.get("dry_run") == "true":
            run = retention_dry_run(tenant=self.tenant, actor=self.actor)
            messages.success(
                request,
                _("Dry run: the policy would archive %(archive)d and delete %(purge)d facts now.")
                % {"archive": run.counts["archive"], "purge": run.counts["purge"]},
            )
        else:
            run, created = retention_run_start(tenant=self.tenant, actor=self.actor)
            if created:
                messages.success(request, _("Run %(id)d queued: a worker applies the policy.")
                                 % {"id": run.pk})  # fmt: skip
            else:
                messages.info(request, _("Run %(id)d is %(status)s already.")
                              % {"id": run.pk, "status": run.status})  # fmt: skip
        return redirect(self.url("retention"))


@tenant_page("retention/preview", name="retention_preview", section="retention")
class RetentionPreviewPage(TenantPage):
    """What the policy with the values typed (not saved) would do now: the htmx fragment."""

    def get(self, request: HttpRequest) -> HttpResponse:
        form = RetentionForm(request.GET)
        preview = None
        if form.is_valid():
            try:
                preview = retention_preview(tenant=self.tenant, changes=form.changes())
            except InvalidInput as error:
                apply_errors(form, error)
        return self.render(
            "web/_retention_preview.html",
            {"form": form, "preview": preview, "unsaved": True},
            status=200 if preview else 400,
        )


# -- members ----------------------------------------------------------------------------------

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


# -- API keys and connecting agents ------------------------------------------------------------


def hermes_install_command(*, url: str, token: str, scope: str = "", hermes_home: str = "") -> str:
    """The command that connects a Hermes profile to this server with the key (docs/hermes.md)."""
    words = ["mnemosyne", "hermes", "install"]
    if hermes_home:
        words += ["--hermes-home", hermes_home]
    words += ["--url", url, "--api-key", token]
    if scope:
        words += ["--scope", scope]
    return " ".join(shlex.quote(word) for word in words)


def _placeholder(key: ApiKey) -> str:
    return f"mnm_{key.prefix}_SECRET"


def _keys_page(view: TenantPage, form: ApiKeyForm, status: int = 200) -> HttpResponse:
    return view.render(
        "web/keys.html",
        {
            "keys": selectors.apikey_list(tenant=view.tenant),
            "usage": selectors.apikey_usage(tenant=view.tenant),
            "form": form,
            "rotate_form": ApiKeyRotateForm(auto_id=False),  # one per row: no shared id
            "now": timezone.now(),
        },
        status=status,
    )


@tenant_page("keys/", name="keys", nav=gettext_lazy("API keys"), order=70)
class ApiKeysPage(TenantPage):
    def get(self, request: HttpRequest) -> HttpResponse:
        return _keys_page(self, ApiKeyForm())


_NEW_SECRET = "mnemosyne_new_key"  # noqa: S105 - a session key name, not a secret


def _secret_once(request: HttpRequest, key: ApiKey, token: str) -> HttpResponse:
    """Keep the secret for the one GET that shows it (POST-redirect-GET: a reload of that
    page shows no secret, and a reload of the POST cannot make a second key)."""
    request.session[_NEW_SECRET] = {"key": key.pk, "token": token}
    return redirect(tenant_url(key.tenant, "key_created", key_id=key.pk))


@tenant_page("keys/new", name="key_new", section="keys")
class ApiKeyNewAction(WriteAction):
    """Make a key; its secret is shown once, on the page this redirects to."""

    def post(self, request: HttpRequest) -> HttpResponse:
        form = ApiKeyForm(request.POST)
        if form.is_valid():
            days = form.cleaned_data["expires_in_days"]
            try:
                created = services.apikey_create(
                    tenant=self.tenant,
                    name=form.cleaned_data["name"],
                    scopes=form.cleaned_data["scopes"],
                    expires_at=timezone.now() + timedelta(days=days) if days else None,
                    scope_prefix=form.cleaned_data["scope_prefix"],
                    actor=self.actor,
                )
            except InvalidInput as error:
                apply_errors(form, error, {"expires_at": "expires_in_days"})
            else:
                return _secret_once(request, created.key, created.token)
        return _keys_page(self, form, status=400)


@tenant_page("keys/<id:key_id>/created", name="key_created", section="keys")
class ApiKeyCreatedPage(TenantPage):
    """The new secret, the one time it is shown; afterwards (a reload) only that it was."""

    need_get = Need.WRITE

    def get(self, request: HttpRequest, key_id: int) -> HttpResponse:
        key = selectors.apikey_get(tenant=self.tenant, key_id=key_id)  # 404
        held = request.session.get(_NEW_SECRET)
        token = None
        if held and held.get("key") == key.pk:
            token = held["token"]
            del request.session[_NEW_SECRET]
        context = {
            "key": key,
            "token": token,
            "command": hermes_install_command(
                url=request.build_absolute_uri("/").rstrip("/"),
                token=token,
                scope=key.scope_prefix,
            )
            if token
            else None,
            **(_agent_snippets(request, token) if token else {}),
        }
        response = self.render("web/key_created.html", context)
        response["Cache-Control"] = "no-store"  # the secret must not be kept anywhere
        return response


@tenant_page("keys/<id:key_id>/rotate", name="key_rotate", section="keys")
class ApiKeyRotateAction(WriteAction):
    """A new secret for the key; the old one keeps working for the grace period."""

    def post(self, request: HttpRequest, key_id: int) -> HttpResponse:
        form = ApiKeyRotateForm(request.POST)
        if not form.is_valid():
            messages.error(request, _("The grace period is 0 to 720 hours."))
            return redirect(self.url("keys"))
        try:
            rotated = services.apikey_rotate(
                tenant=self.tenant,
                key_id=key_id,
                actor=self.actor,
                grace=timedelta(hours=form.cleaned_data["grace_hours"]),
            )  # 404
        except InvalidInput as error:
            messages.error(request, error.message)
            return redirect(self.url("keys"))
        return _secret_once(request, rotated.key, rotated.token)


@tenant_page("keys/<id:key_id>/revoke", name="key_revoke", section="keys")
class ApiKeyRevokeAction(WriteAction):
    def post(self, request: HttpRequest, key_id: int) -> HttpResponse:
        key = services.apikey_revoke(tenant=self.tenant, key_id=key_id, actor=self.actor)  # 404
        messages.success(
            request,
            _("Key %(name)s revoked: programs using it are refused from now on.")
            % {"name": key.name},
        )
        return redirect(self.url("keys"))


def _agent_snippets(request: HttpRequest, token: str) -> dict[str, Any]:
    """How MCP clients reach this server with the key (docs/mcp.md)."""
    url = request.build_absolute_uri("/").rstrip("/")
    return {
        "server_url": url,
        "mcp_stdio": clients.as_json(clients.stdio_config(url=url, token=token)),
        "mcp_http": clients.as_json(clients.http_config(url=url, token=token)),
        "claude_code": clients.claude_code_commands(url=url, token=token),
    }


@tenant_page("connect/", name="connect", nav=gettext_lazy("Connect an agent"), order=75)
class ConnectPage(TenantPage):
    """How to connect agents with a key: the Hermes install command and the MCP clients'
    configuration, for the chosen key (its secret left as a placeholder)."""

    def get(self, request: HttpRequest) -> HttpResponse:
        keys = [k for k in selectors.apikey_list(tenant=self.tenant) if k.is_active]
        initial = {"key": keys[0].pk} if keys else {}
        form = HermesForm(request.GET or None, keys=keys, initial=initial)
        key = None
        if form.is_bound and form.is_valid():
            chosen = form.cleaned_data["key"]
            key = next((k for k in keys if k.pk == chosen), None)
            try:
                form.cleaned_data["scope"] = clean_scope(form.cleaned_data["scope"])
            except InvalidInput as error:
                apply_errors(form, error)
        elif keys and not form.is_bound:
            key = keys[0]
        data = form.cleaned_data if form.is_bound and not form.errors else {}
        token = _placeholder(key) if key else "mnm_..._SECRET"
        command = hermes_install_command(
            url=request.build_absolute_uri("/").rstrip("/"),
            token=token,
            scope=data.get("scope", ""),
            hermes_home=(data.get("hermes_home") or "").strip(),
        )
        context = {
            "form": form,
            "key": key,
            "keys": keys,
            "command": command,
            **_agent_snippets(request, token),
        }
        template = "web/_connect_snippets.html" if request.headers.get("HX-Request") else None
        return self.render(template or "web/connect.html", context, 400 if form.errors else 200)


# -- the tenant itself: rename, delete ----------------------------------------------------------


class RenameForm(forms.Form):
    name = forms.CharField(label=gettext_lazy("Name"), max_length=200)


class DeleteForm(forms.Form):
    confirm = forms.CharField(
        label=gettext_lazy("Type the tenant's short name to confirm"), max_length=63
    )


def _tenant_page(
    view: TenantPage,
    rename: RenameForm | None = None,
    delete: DeleteForm | None = None,
    status: int = 200,
) -> HttpResponse:
    return view.render(
        "web/tenant_settings.html",
        {
            "rename_form": rename or RenameForm(initial={"name": view.tenant.name}),
            "delete_form": delete or DeleteForm(),
            "can_delete": view.request.user.is_superuser,
        },
        status=status,
    )


@tenant_page("tenant/", name="tenant_settings", nav=gettext_lazy("Tenant"), order=95)
class TenantSettingsPage(TenantPage):
    """The tenant's name (admins rename it) and, for superusers, deleting it."""

    def get(self, request: HttpRequest) -> HttpResponse:
        return _tenant_page(self)

    def post(self, request: HttpRequest) -> HttpResponse:
        form = RenameForm(request.POST)
        if form.is_valid():
            try:
                services.tenant_rename(
                    tenant=self.tenant, name=form.cleaned_data["name"], actor=self.actor
                )
            except InvalidInput as error:
                apply_errors(form, error)
            else:
                messages.success(request, _("The tenant is now called %(name)s.") % {
                    "name": form.cleaned_data["name"].strip()})  # fmt: skip
                return redirect(self.url("tenant_settings"))
        return _tenant_page(self, rename=form, status=400)


@tenant_page("tenant/delete", name="tenant_delete", section="tenant_settings")
class TenantDeleteAction(WriteAction):
    """Delete the tenant and all it holds (superusers, the short name typed to confirm)."""

    def post(self, request: HttpRequest) -> HttpResponse:
        if not request.user.is_superuser:
            raise PermissionDenied("only superusers delete tenants")
        form = DeleteForm(request.POST)
        if form.is_valid():
            try:
                deletion = services.tenant_delete(
                    tenant=self.tenant, actor=self.actor, confirm=form.cleaned_data["confirm"]
                )
            except InvalidInput as error:
                apply_errors(form, error)
            else:
                messages.success(
                    request,
                    _("Tenant %(slug)s and everything it held are deleted.")
                    % {"slug": deletion.slug},
                )
                return redirect("home")
        return _tenant_page(self, delete=form, status=400)
