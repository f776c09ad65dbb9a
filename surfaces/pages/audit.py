"""Web admin pages of the audit log: the log, its export and the check of its chain."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils.translation import gettext_lazy

from facts.audit_chain import audit_chain_verify, audit_digest_take, digest_parse
from facts.audit_export import audit_csv_rows
from facts.selectors.audit import audit_event_iter, audit_event_list
from surfaces.base.downloads import download
from surfaces.base.forms import apply_errors, query_form
from surfaces.base.pages import TenantPage, tenant_page
from surfaces.pages.fact_forms import AuditFilterForm, AuditVerifyForm
from surfaces.pages.facts import PAGE_SIZE
from tenants.errors import InvalidInput
from tenants.services import audit_export_record

# -- the audit log --------------------------------------------------------------------------------


@tenant_page("audit/", name="audit", nav=gettext_lazy("Audit log"), order=90)
class AuditPage(TenantPage):
    def get(self, request: HttpRequest) -> HttpResponse:
        form = query_form(AuditFilterForm, request.GET)
        if not form.is_valid():
            return self.render("web/audit.html", {"form": form, "events": []}, status=400)
        page = audit_event_list(
            tenant=self.tenant,
            limit=PAGE_SIZE,
            cursor=form.cleaned_data["cursor"] or None,
            **form.filters(),
        )
        return self.render(
            "web/audit.html",
            {
                "form": form,
                "events": page.events,
                "next_cursor": page.next_cursor,
                "paged": bool(form.cleaned_data["cursor"]),
            },
        )


@tenant_page("audit/export.csv", name="audit_export", section="audit")
class AuditExportPage(TenantPage):
    """Every event the filters match, as CSV; taking a copy is itself recorded."""

    reads_replica = False  # it records the export in the audit log

    def get(self, request: HttpRequest) -> HttpResponseBase:
        form = query_form(AuditFilterForm, request.GET)
        if not form.is_valid():
            return self.render("web/audit.html", {"form": form, "events": []}, status=400)
        filters = form.filters()
        audit_export_record(
            tenant=self.tenant,
            actor=self.actor,
            format="csv",
            filters={k: str(v) for k, v in filters.items() if v is not None},
        )
        digest = audit_digest_take(tenant=self.tenant, reason="export")
        events = audit_event_iter(tenant=self.tenant, **filters)
        return download(
            audit_csv_rows(events, digest),
            tenant=self.tenant,
            what="audit",
            extension="csv",
            content_type="text/csv; charset=utf-8",
        )


@tenant_page("audit/verify", name="audit_verify", section="audit")
class AuditVerifyPage(TenantPage):
    """The audit chain walked now: the first event that does not verify, and a kept digest."""

    def get(self, request: HttpRequest) -> HttpResponse:
        form = query_form(AuditVerifyForm, request.GET)
        if not form.is_valid():
            return self.render("web/audit_verify.html", {"form": form}, status=400)
        try:
            text = form.cleaned_data["digest"]
            digest = digest_parse(text) if text else None
        except InvalidInput as error:
            apply_errors(form, error)
            return self.render("web/audit_verify.html", {"form": form}, status=400)
        report = audit_chain_verify(tenant=self.tenant, digest=digest)
        return self.render("web/audit_verify.html", {"form": form, "report": report})
