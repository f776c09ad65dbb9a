"""Web admin pages of a tenant's API keys (make, show the secret once, rotate, revoke) and of
connecting an agent with one."""

from __future__ import annotations

import shlex
from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agenttools import clients
from facts.inputs import clean_scope
from surfaces.base.forms import apply_errors
from surfaces.base.pages import Need, TenantPage, WriteAction, tenant_page, tenant_url
from surfaces.pages.tenant_forms import ApiKeyForm, ApiKeyRotateForm, HermesForm
from tenants import selectors, services
from tenants.errors import InvalidInput
from tenants.models import ApiKey


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
