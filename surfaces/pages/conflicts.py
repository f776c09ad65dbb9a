"""Web admin pages of conflicts between facts."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from facts import conflicts, inputs
from facts.models import ConflictStatus
from facts.selectors.conflicts import conflict_list
from surfaces.base.pages import TenantPage, WriteAction, tenant_page
from surfaces.pages.facts import PAGE_SIZE
from tenants.errors import InvalidInput
from tenants.inputs import settings_changes
from tenants.services import tenant_update_settings

# -- conflicts ------------------------------------------------------------------------------------


@tenant_page("conflicts/", name="conflicts", nav=gettext_lazy("Conflicts"), order=45)
class ConflictsPage(TenantPage):
    """The review queue: pairs of facts that disagree, for an admin to decide."""

    def get(self, request: HttpRequest) -> HttpResponse:
        wanted = request.GET.get("status", ConflictStatus.OPEN)
        status = None if wanted == "all" else wanted
        cursor = request.GET.get("cursor") or None
        result = conflict_list(
            tenant=self.tenant, status=status, limit=PAGE_SIZE,
            cursor=int(cursor) if cursor and cursor.isdigit() else None,
        )  # fmt: skip
        return self.render(
            "web/conflicts.html",
            {
                "conflicts": result.conflicts,
                "next_cursor": result.next_cursor,
                "paged": bool(cursor),
                "wanted": wanted,
                "statuses": [
                    (ConflictStatus.OPEN, _("open")),
                    (ConflictStatus.RESOLVED, _("resolved")),
                    ("all", _("any")),
                ],  # fmt: skip
                "auto_supersede": bool(self.tenant.setting("conflict_auto_supersede")),
                "duplicate_threshold": self.tenant.setting("duplicate_threshold"),
            },
        )


@tenant_page("conflicts/<id:conflict_id>/resolve", name="conflict_resolve", section="conflicts")
class ConflictResolveAction(WriteAction):
    def post(self, request: HttpRequest, conflict_id: int) -> HttpResponse:
        try:
            decision = inputs.conflict_decision(request.POST.get("decision", ""))
            note = inputs.conflict_note(request.POST.get("note", ""))
            conflicts.conflict_resolve(
                tenant=self.tenant,
                conflict_id=conflict_id,
                decision=decision,
                note=note,
                actor=self.actor,
            )
        except InvalidInput as error:
            messages.error(request, error.message)
        else:
            messages.success(request, _("Conflict %(id)d decided.") % {"id": conflict_id})
        return redirect(self.url("conflicts"))


@tenant_page("conflicts/settings", name="conflict_settings", section="conflicts")
class ConflictSettingsAction(WriteAction):
    def post(self, request: HttpRequest) -> HttpResponse:
        try:
            threshold = float(request.POST.get("duplicate_threshold", ""))
        except ValueError:
            messages.error(request, _("The duplicate threshold must be a number."))
            return redirect(self.url("conflicts"))
        try:
            tenant_update_settings(
                tenant=self.tenant,
                changes=settings_changes(
                    {
                        "conflict_auto_supersede": int(request.POST.get("auto_supersede") == "on"),
                        "duplicate_threshold": threshold,
                    }
                ),
                actor=self.actor,
            )
        except InvalidInput as error:
            messages.error(request, error.message)
        else:
            messages.success(request, _("Settings saved."))
        return redirect(self.url("conflicts"))
