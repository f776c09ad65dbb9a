"""Web admin pages of the tenant itself: renaming it and deleting it. Retention, members and
API keys have modules of their own."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from surfaces.base.forms import apply_errors
from surfaces.base.pages import TenantPage, WriteAction, tenant_page
from tenants import services
from tenants.errors import InvalidInput


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
