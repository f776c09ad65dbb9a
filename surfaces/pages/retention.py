"""Web admin pages of the retention policy: the policy, its live preview, running it now."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from facts.retention import retention_dry_run, retention_run_start, retention_schedule
from facts.selectors.retention import retention_preview
from surfaces.base.forms import apply_errors
from surfaces.base.pages import TenantPage, WriteAction, tenant_page
from surfaces.pages.tenant_forms import RetentionForm
from tenants import selectors, services
from tenants.errors import InvalidInput
from tenants.inputs import retention_changes
from tenants.models import RetentionPolicy


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
