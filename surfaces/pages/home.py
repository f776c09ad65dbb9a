"""Pages of the project app: health, signing in and out, the tenant switcher, the dashboard."""

from __future__ import annotations

from typing import cast

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from facts.selectors.dashboard import (
    conflict_open_count,
    entity_count,
    entity_top,
    fact_added_per_day,
    fact_counts,
)
from indexing.vectors import embedding_target_model
from operations.health import check_beat, check_broker, check_worker
from operations.services import user_language_set
from retrieval.latency import recall_latency_series
from surfaces.base.charts import bar_chart, line_chart
from surfaces.base.forms import apply_errors
from surfaces.base.pages import TenantPage, tenant_page, tenant_url
from surfaces.pages.accounts import language_cookie
from tenants.actors import Actor
from tenants.errors import InvalidInput
from tenants.inputs import tenant_draft
from tenants.invitations import invitations_waiting
from tenants.selectors import tenants_for_user
from tenants.services import tenant_create

# -- signing in and out, password, language -----------------------------------------------------


class LanguageForm(forms.Form):
    language = forms.ChoiceField(
        choices=[("", gettext_lazy("As the browser says")), *settings.LANGUAGES], required=False
    )
    next = forms.CharField(required=False, max_length=2000)


@require_POST
def language(request: HttpRequest) -> HttpResponse:
    """Change the language: kept for the signed-in person, and in a cookie for this browser."""
    form = LanguageForm(request.POST)
    if not form.is_valid():
        return render(
            request, "web/bad_request.html", {"message": _("Unknown language.")}, status=400
        )
    chosen = form.cleaned_data["language"]
    if request.user.is_authenticated:
        user_language_set(user=request.user, language=chosen)
    target = form.cleaned_data["next"]
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = reverse("home")
    return language_cookie(HttpResponseRedirect(target), chosen)


# -- the tenant switcher ------------------------------------------------------------------------


class TenantForm(forms.Form):
    slug = forms.CharField(
        label=gettext_lazy("Short name"),
        max_length=63,
        help_text=gettext_lazy("Lowercase letters, digits and inner hyphens; it is in the URLs."),
    )
    name = forms.CharField(label=gettext_lazy("Name"), max_length=200)


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The tenants the person may open, with their role; superusers can create one."""
    rows = tenants_for_user(user=cast(AbstractBaseUser, request.user))
    return render(
        request,
        "web/tenants.html",
        {
            "rows": [(t, role, tenant_url(t, "dashboard")) for t, role in rows],
            "user_tenants": rows,
            "invitations": invitations_waiting(user=cast(AbstractBaseUser, request.user)),
            "form": TenantForm() if request.user.is_superuser else None,
        },
    )


@login_required
@require_http_methods(["POST"])
def tenant_new(request: HttpRequest) -> HttpResponse:
    if not request.user.is_superuser:
        raise PermissionDenied("only superusers create tenants")
    form = TenantForm(request.POST)
    if form.is_valid():
        try:
            tenant = tenant_create(
                actor=Actor.user(request.user), draft=tenant_draft({**form.cleaned_data})
            )
        except InvalidInput as error:
            apply_errors(form, error)
        else:
            messages.success(request, _("Tenant %(slug)s created.") % {"slug": tenant.slug})
            return redirect(tenant_url(tenant, "dashboard"))
    rows = tenants_for_user(user=request.user)
    return render(
        request,
        "web/tenants.html",
        {
            "rows": [(t, role, tenant_url(t, "dashboard")) for t, role in rows],
            "user_tenants": rows,
            "form": form,
        },
        status=400,
    )


# -- the dashboard ------------------------------------------------------------------------------


@tenant_page("", name="dashboard", nav=gettext_lazy("Dashboard"), order=10)
class DashboardPage(TenantPage):
    def get(self, request: HttpRequest) -> HttpResponse:
        tenant = self.tenant
        counts = fact_counts(tenant=tenant, embedding_model=embedding_target_model())
        days = fact_added_per_day(tenant=tenant, days=30)
        trust = counts.trust_bands
        latency = recall_latency_series(tenant=tenant, hours=48)
        context = {
            "counts": counts,
            "entities": entity_count(tenant=tenant),
            "conflicts": conflict_open_count(tenant=tenant),
            "days": days,
            "days_chart": bar_chart(
                [d.day.strftime("%m-%d") for d in days],
                [(_("facts"), [d.facts for d in days]), (_("turns"), [d.turns for d in days])],
                title=_("Facts and turns added per day, last 30 days"),
                label_every=5,
            ),
            "trust": [(f"{b / 10:.1f}–{(b + 1) / 10:.1f}", n) for b, n in enumerate(trust)],
            "trust_chart": bar_chart(
                [f"{b / 10:.1f}" for b in range(len(trust))],
                [(_("active facts"), trust)],
                title=_("Active facts by trust"),
            ),
            "latency": [p for p in latency if p.count],
            "latency_chart": line_chart(
                [p.hour.strftime("%H:00") for p in latency],
                [
                    ("p50", [p.p50_ms for p in latency]),
                    ("p95", [p.p95_ms for p in latency]),
                ],
                title=_("Agents' recall latency per hour, last 48 hours"),
                label_every=6,
                unit=" ms",
            ),
            "health": {
                _("worker"): check_worker(),
                _("beat"): check_beat(),
                _("broker"): check_broker(),
            },
        }
        return self.render("web/dashboard.html", context)


@tenant_page("dashboard/top-entities", name="dashboard_entities", section="dashboard")
class DashboardEntitiesPanel(TenantPage):
    """The dashboard's top entities, loaded after the page (htmx): counting every link of a
    large tenant is the dashboard's slowest part, so the counts and charts do not wait for it.
    Without htmx (or asked directly) it is a page of its own."""

    def get(self, request: HttpRequest) -> HttpResponse:
        top = entity_top(tenant=self.tenant, limit=10)
        context = {"top_entities": [(e, n, self.url("entity", entity_id=e.pk)) for e, n in top]}
        if request.headers.get("HX-Request"):
            return self.render("web/_top_entities.html", context)
        return self.render("web/top_entities.html", context)
