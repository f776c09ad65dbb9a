"""Web admin pages of tenant administration: retention, members, API keys, connecting agents."""

from __future__ import annotations

import shlex
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from facts.selectors import retention_preview
from facts.services import clean_scope
from mcp_server import clients
from memoryadmin.web.forms import apply_errors
from memoryadmin.web.pages import TenantPage, WriteAction, tenant_page
from tenants import selectors, services
from tenants.errors import InvalidInput, NotFound
from tenants.forms import ApiKeyForm, HermesForm, MemberForm, RetentionForm, RoleForm
from tenants.models import ApiKey, RetentionPolicy

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
            },
        )

    def post(self, request: HttpRequest) -> HttpResponse:
        form = RetentionForm(request.POST)
        if form.is_valid():
            try:
                services.retention_policy_update(
                    tenant=self.tenant, actor=self.actor, changes=form.changes()
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
            },
            status=400,
        )


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


def _members_page(view: TenantPage, form: MemberForm, status: int = 200) -> HttpResponse:
    """The members page; the add action renders it too, with its form's errors."""
    members = selectors.membership_list(tenant=view.tenant)
    return view.render(
        "web/members.html",
        {"members": [(m, RoleForm(initial={"role": m.role})) for m in members], "form": form},
        status=status,
    )


@tenant_page("members/", name="members", nav=gettext_lazy("Members"), order=60)
class MembersPage(TenantPage):
    def get(self, request: HttpRequest) -> HttpResponse:
        return _members_page(self, MemberForm())


@tenant_page("members/add", name="member_add", section="members")
class MemberAddAction(WriteAction):
    def post(self, request: HttpRequest) -> HttpResponse:
        form = MemberForm(request.POST)
        if form.is_valid():
            username, role = form.cleaned_data["username"], form.cleaned_data["role"]
            try:
                user = selectors.user_get(username=username)
                services.membership_set(tenant=self.tenant, user=user, role=role, actor=self.actor)
            except NotFound:
                form.add_error(
                    "username",
                    _("No active account is called %(name)s. A superuser creates accounts.")
                    % {"name": username},
                )
            except InvalidInput as error:
                apply_errors(form, error)
            else:
                messages.success(
                    request, _("%(name)s is now %(role)s.") % {"name": username, "role": role}
                )
                return redirect(self.url("members"))
        return _members_page(self, form, status=400)


def _is_self(request: HttpRequest, member: Any) -> bool:
    return member.user_id == request.user.pk


def _refuse_self(view: TenantPage, request: HttpRequest) -> HttpResponse:
    """An admin does not demote or remove themselves by a slip of the mouse (they could lock
    the tenant out of its last admin); another admin can."""
    messages.error(request, _("You cannot change your own membership here; another admin can."))
    return redirect(view.url("members"))


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
        services.membership_set(
            tenant=self.tenant, user=member.user, role=form.cleaned_data["role"], actor=self.actor
        )
        messages.success(
            request,
            _("%(name)s is now %(role)s.") % {"name": username, "role": form.cleaned_data["role"]},
        )
        return redirect(self.url("members"))


@tenant_page("members/<username:username>/remove", name="member_remove", section="members")
class MemberRemoveAction(WriteAction):
    def post(self, request: HttpRequest, username: str) -> HttpResponse:
        member = selectors.membership_get(tenant=self.tenant, username=username)  # 404
        if _is_self(request, member):
            return _refuse_self(self, request)
        services.membership_remove(tenant=self.tenant, user=member.user, actor=self.actor)
        messages.success(request, _("%(name)s is no longer a member.") % {"name": username})
        return redirect(self.url("members"))


# -- API keys and connecting agents ------------------------------------------------------------


def hermes_install_command(*, token: str, scope: str = "", hermes_home: str = "") -> str:
    """The command that connects a Hermes profile to this tenant with the key (README:
    "Connecting a Hermes profile")."""
    words = ["mnemosyne", "hermes", "install"]
    if hermes_home:
        words += ["--hermes-home", hermes_home]
    words += ["--api-key", token]
    if scope:
        words += ["--scope", scope]
    return " ".join(shlex.quote(word) for word in words)


def _placeholder(key: ApiKey) -> str:
    return f"mnm_{key.prefix}_SECRET"


def _keys_page(view: TenantPage, form: ApiKeyForm, status: int = 200) -> HttpResponse:
    return view.render(
        "web/keys.html",
        {"keys": selectors.apikey_list(tenant=view.tenant), "form": form},
        status=status,
    )


@tenant_page("keys/", name="keys", nav=gettext_lazy("API keys"), order=70)
class ApiKeysPage(TenantPage):
    def get(self, request: HttpRequest) -> HttpResponse:
        return _keys_page(self, ApiKeyForm())


@tenant_page("keys/new", name="key_new", section="keys")
class ApiKeyNewAction(WriteAction):
    """Make a key and show its secret, this once: it is in this response and nowhere else."""

    def post(self, request: HttpRequest) -> HttpResponse:
        form = ApiKeyForm(request.POST)
        if form.is_valid():
            try:
                created = services.apikey_create(
                    tenant=self.tenant,
                    name=form.cleaned_data["name"],
                    scopes=form.cleaned_data["scopes"],
                    actor=self.actor,
                )
            except InvalidInput as error:
                apply_errors(form, error)
            else:
                response = self.render(
                    "web/key_created.html",
                    {
                        "key": created.key,
                        "token": created.token,
                        "command": hermes_install_command(token=created.token),
                        **_agent_snippets(request, created.token),
                    },
                    status=201,
                )
                response["Cache-Control"] = "no-store"  # the secret must not be kept anywhere
                return response
        return _keys_page(self, form, status=400)


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
    """How MCP clients reach this server with the key (README: "Connecting MCP clients")."""
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
