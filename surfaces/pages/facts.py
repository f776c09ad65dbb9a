"""Web admin pages of facts: the list, its exports and bulk changes, bundles, one fact."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from facts import inputs, services
from facts.audit_export import facts_csv_rows, facts_jsonl_rows
from facts.bundles import BundleError
from facts.models import Fact, Status
from facts.selectors.facts import (
    fact_conflicts,
    fact_entities,
    fact_feedback_list,
    fact_get,
    fact_history,
    fact_iter,
    fact_list,
    fact_trust_history,
    fact_vectors,
)
from retrieval.inputs import recall_query
from retrieval.search import recall_search
from surfaces.base.downloads import bundle_download, download
from surfaces.base.forms import apply_errors, query_form
from surfaces.base.pages import Need, TenantPage, WriteAction, tenant_page
from surfaces.pages.fact_forms import (
    FactAddForm,
    FactEditForm,
    FactFilterForm,
    PurgeForm,
    day_end,
    day_start,
)
from tenants.errors import InvalidInput, NotFound
from tenants.services import facts_export_record

PAGE_SIZE = 50
SEARCH_RESULTS = 50
HISTORY_PAGE = 25


@tenant_page("facts/", name="facts", nav=gettext_lazy("Facts"), order=20)
class FactListPage(TenantPage):
    """Browse with filters (keyset pages, newest first), or search with the agents' recall."""

    def get(self, request: HttpRequest) -> HttpResponse:
        form = query_form(FactFilterForm, request.GET)
        if not form.is_valid():
            return self.render("web/facts/list.html", {"form": form, "facts": []}, status=400)
        data = form.cleaned_data
        if data["q"].strip():
            return self._search(form)
        page = fact_list(
            tenant=self.tenant,
            limit=PAGE_SIZE,
            cursor=data["cursor"] or None,
            order=data["order"] or "importance",
            **_filters(form),
        )
        return self.render(
            "web/facts/list.html",
            {
                "form": form,
                "facts": [(fact, None) for fact in page.facts],
                "next_cursor": page.next_cursor,
                "paged": bool(data["cursor"]),
            },
        )

    def _search(self, form: FactFilterForm) -> HttpResponse:
        """The same hybrid recall agents use. It ranks active facts only; the trust range
        floor is its min_trust (0 when none is given: people look for doubtful facts too)."""
        data = form.cleaned_data
        result = recall_search(
            tenant=self.tenant,
            query=recall_query(
                {
                    "query": data["q"],
                    "k": SEARCH_RESULTS,
                    "scope": data["scope"] or None,
                    "kind": data["kind"] or None,
                    "category": data["category"] or None,
                    "min_trust": data["trust_min"] if data["trust_min"] is not None else 0.0,
                }
            ),
        )
        after, before = day_start(data["created_after"]), day_end(data["created_before"])
        hits = [
            hit
            for hit in result.hits
            if (data["trust_max"] is None or hit.fact.trust_score <= data["trust_max"])
            and (after is None or hit.fact.created_at >= after)
            and (before is None or hit.fact.created_at < before)
        ]
        return self.render(
            "web/facts/list.html",
            {
                "form": form,
                "searching": True,
                "status_ignored": form.status_filter() != Status.ACTIVE,
                "facts": [(hit.fact, hit) for hit in hits],
                "timings": result.timings_ms,
            },
        )


def _filters(form: FactFilterForm) -> dict[str, Any]:
    """fact_list's filters from the facts browser's form (the page and its exports)."""
    data = form.cleaned_data
    return {
        "scope_prefix": data["scope"] or None,
        "category": data["category"] or None,
        "kind": data["kind"] or None,
        "status": form.status_filter(),
        "trust_min": data["trust_min"],
        "trust_max": data["trust_max"],
        "created_after": day_start(data["created_after"]),
        "created_before": day_end(data["created_before"]),
    }


_EXPORTS = {
    "csv": (facts_csv_rows, "text/csv; charset=utf-8", "csv"),
    "jsonl": (facts_jsonl_rows, "application/x-ndjson; charset=utf-8", "jsonl"),
}


@tenant_page("facts/export", name="facts_export", section="facts")
class FactExportPage(TenantPage):
    """Every fact the browser's filters match (not its search), as CSV or JSON Lines; the
    copy is recorded in the audit log."""

    reads_replica = False  # it records the export in the audit log

    def get(self, request: HttpRequest) -> HttpResponseBase:
        form = query_form(FactFilterForm, request.GET)
        chosen = request.GET.get("format", "csv")
        if not form.is_valid() or chosen not in _EXPORTS:
            return self.render("web/facts/list.html", {"form": form, "facts": []}, status=400)
        filters = _filters(form)
        facts_export_record(
            tenant=self.tenant,
            actor=self.actor,
            format=chosen,
            filters={k: str(v) for k, v in filters.items() if v is not None},
        )
        rows, content_type, extension = _EXPORTS[chosen]
        return download(
            rows(fact_iter(tenant=self.tenant, **filters)),
            tenant=self.tenant,
            what="facts",
            extension=extension,
            content_type=content_type,
        )


@tenant_page("facts/export-bundle", name="facts_export_bundle", section="facts")
class FactBundleExportPage(TenantPage):
    """The whole tenant as a bundle (a tar of its three files), audited."""

    def get(self, request: HttpRequest) -> HttpResponseBase:
        return bundle_download(tenant=self.tenant, actor=self.actor)


@tenant_page("facts/import-bundle", name="facts_import_bundle", section="facts")
class FactBundleImportAction(WriteAction):
    """Import an uploaded bundle, all or nothing."""

    def post(self, request: HttpRequest) -> HttpResponse:
        import shutil
        import tempfile
        from pathlib import Path

        from facts.bundle_tar import bundle_from_tar
        from facts.transfer import tenant_import

        upload = request.FILES.get("bundle")
        folder = Path(tempfile.mkdtemp(prefix="mnemosyne-import-"))
        try:
            if upload is None:
                raise InvalidInput("bundle", _("Choose a bundle file (.bundle.tar) to import."))
            stem = bundle_from_tar(upload, folder)
            summary = tenant_import(tenant=self.tenant, path=stem, actor=self.actor)
        except BundleError as error:
            messages.error(request, _("Refused, nothing imported: %(error)s") % {"error": error})
        except InvalidInput as error:
            messages.error(request, error.message)
        else:
            messages.success(
                request,
                _("Imported: %(added)d facts added, %(exists)d already there, %(restored)d "
                  "restored; %(embed)d to embed.")
                % {"added": summary.added, "exists": summary.exists,
                   "restored": summary.restored, "embed": summary.to_embed},
            )  # fmt: skip
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return redirect(self.url("facts"))


@tenant_page("facts/bulk", name="facts_bulk", section="facts")
class FactBulkAction(WriteAction):
    """Remove the selected facts, or add a tag to them; each change is audited on its own."""

    def post(self, request: HttpRequest) -> HttpResponse:
        raw_ids = [int(v) for v in request.POST.getlist("ids") if v.isdigit() and len(v) < 19]
        action = request.POST.get("action")
        back = request.POST.get("next") or ""
        if not back.startswith(self.url("facts")):
            back = self.url("facts")
        try:
            if action == "remove":
                result = services.facts_bulk_remove(
                    tenant=self.tenant, fact_ids=inputs.bulk_ids(raw_ids), actor=self.actor
                )
                text = _("%(n)d facts removed.") % {"n": len(result.done)}
            elif action == "tag":
                tag = inputs.bulk_tag(request.POST.get("tag", ""))
                ids = inputs.bulk_ids(raw_ids)
                result = services.facts_bulk_tag(
                    tenant=self.tenant, fact_ids=ids, tag=tag, actor=self.actor
                )
                text = _("Tag %(tag)s added to %(n)d facts.") % {"tag": tag, "n": len(result.done)}
            else:
                raise InvalidInput("action", _("choose remove or tag"))
        except InvalidInput as error:
            messages.error(request, error.message)
            return redirect(back)
        messages.success(request, text)
        if result.skipped:
            messages.error(
                request,
                _("Left as they were: %(ids)s.")
                % {"ids": ", ".join(f"#{i} ({why})" for i, why in result.skipped.items())},
            )
        return redirect(back)


@tenant_page("facts/new/", name="fact_new", section="facts")
class FactNewPage(TenantPage):
    need_get = Need.WRITE

    def get(self, request: HttpRequest) -> HttpResponse:
        return self.render("web/facts/new.html", {"form": FactAddForm()})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = FactAddForm(request.POST)
        if form.is_valid():
            try:
                added = services.fact_add(tenant=self.tenant, draft=form.draft, actor=self.actor)
            except InvalidInput as error:
                apply_errors(form, error)
            else:
                text = {
                    "added": _("Fact stored."),
                    "exists": _("The same fact was there already: nothing changed."),
                    "restored": _("This fact had been removed or archived: it is back."),
                    "joined": _(
                        "A fact of this scope says this already: the new words joined it "
                        "(stated %(n)d times now)."
                    )
                    % {"n": added.fact.mention_count},
                }[added.status]
                messages.success(request, text)
                return redirect(self.url("fact", fact_id=added.fact.pk))
        return self.render("web/facts/new.html", {"form": form}, status=400)


def _edit_form(fact: Fact) -> FactEditForm:
    return FactEditForm(
        initial={
            "content": fact.content,
            "scope": fact.scope,
            "category": fact.category,
            "tags": ", ".join(fact.tags),
        }
    )


def _fact_page(view: TenantPage, fact_id: int, status: int = 200, **forms: Any) -> HttpResponse:
    """Everything about one fact; a purged fact still shows its history. The actions render
    it too, with their form's errors."""
    tenant = view.tenant
    try:
        fact: Fact | None = fact_get(tenant=tenant, fact_id=fact_id)
    except NotFound:
        fact = None  # purged: its audit history is all that is left (or it never was)
    try:
        history = fact_history(tenant=tenant, fact_id=fact_id)
    except NotFound:
        if fact is None:
            raise
        history = []  # loaded in bulk without events (a benchmark's facts, say)
    # The history newest first, HISTORY_PAGE events a page (?history=N).
    raw_page = view.request.GET.get("history", "1")
    number = int(raw_page) if raw_page.isdigit() and 0 < int(raw_page) < 100_000 else 1
    newest_first = history[::-1]
    shown = newest_first[(number - 1) * HISTORY_PAGE : number * HISTORY_PAGE]
    context: dict[str, Any] = {
        "fact": fact,
        "fact_id": fact_id,
        "history": shown,
        "history_page": number,
        "history_more": len(newest_first) > number * HISTORY_PAGE,
        "history_total": len(history),
        "trust_history": fact_trust_history(history),
    }
    if fact is not None:
        context |= {
            "entities": fact_entities(tenant=tenant, fact_id=fact_id),
            "feedback": fact_feedback_list(tenant=tenant, fact_id=fact_id),
            "conflicts": fact_conflicts(tenant=tenant, fact_id=fact_id),
            "vectors": fact_vectors(tenant=tenant, fact_id=fact_id),
        }
        if view.access.can_write:
            context["edit_form"] = forms.get("edit_form") or _edit_form(fact)
            context["purge_form"] = forms.get("purge_form") or PurgeForm()
    return view.render("web/facts/detail.html", context, status=status)


@tenant_page("facts/<id:fact_id>/", name="fact", section="facts")
class FactPage(TenantPage):
    def get(self, request: HttpRequest, fact_id: int) -> HttpResponse:
        return _fact_page(self, fact_id)


class _FactAction(WriteAction):
    def done(self, fact_id: int, text: str) -> HttpResponse:
        messages.success(self.request, text)
        return redirect(self.url("fact", fact_id=fact_id))

    def refused(self, fact_id: int, error: InvalidInput) -> HttpResponse:
        messages.error(self.request, error.message)
        return redirect(self.url("fact", fact_id=fact_id))


@tenant_page("facts/<id:fact_id>/edit", name="fact_edit", section="facts")
class FactEditAction(_FactAction):
    def post(self, request: HttpRequest, fact_id: int) -> HttpResponse:
        form = FactEditForm(request.POST)
        if form.is_valid():
            try:
                services.fact_update(
                    tenant=self.tenant, fact_id=fact_id, changes=form.changes, actor=self.actor
                )
            except InvalidInput as error:
                apply_errors(form, error)
            else:
                return self.done(fact_id, _("Fact changed."))
        return _fact_page(self, fact_id, status=400, edit_form=form)


@tenant_page("facts/<id:fact_id>/feedback", name="fact_feedback", section="facts")
class FactFeedbackAction(_FactAction):
    def post(self, request: HttpRequest, fact_id: int) -> HttpResponse:
        helpful = request.POST.get("helpful")
        if helpful not in ("true", "false"):
            return self.refused(fact_id, InvalidInput("helpful", _("Say helpful or unhelpful.")))
        result = services.fact_feedback(
            tenant=self.tenant, fact_id=fact_id, helpful=helpful == "true", actor=self.actor
        )
        text = _("Feedback recorded: trust %(old).2f → %(new).2f.") % {
            "old": result.old_trust,
            "new": result.new_trust,
        }
        return self.done(fact_id, text)


@tenant_page("facts/<id:fact_id>/pin", name="fact_pin", section="facts")
class FactPinAction(_FactAction):
    def post(self, request: HttpRequest, fact_id: int) -> HttpResponse:
        pinned = request.POST.get("pinned")
        if pinned not in ("true", "false"):
            return self.refused(fact_id, InvalidInput("pinned", _("Say pin or unpin.")))
        changes = inputs.FactChanges(pinned=pinned == "true")
        fact = services.fact_update(
            tenant=self.tenant, fact_id=fact_id, changes=changes, actor=self.actor
        )
        if fact.pinned:
            return self.done(fact_id, _("Pinned: always remembered, never archived."))
        return self.done(fact_id, _("Unpinned: importance follows use again."))


@tenant_page("facts/<id:fact_id>/remove", name="fact_remove", section="facts")
class FactRemoveAction(_FactAction):
    def post(self, request: HttpRequest, fact_id: int) -> HttpResponse:
        try:
            services.fact_remove(tenant=self.tenant, fact_id=fact_id, actor=self.actor)
        except InvalidInput as error:
            return self.refused(fact_id, error)
        return self.done(fact_id, _("Fact removed: recall leaves it out. It can be restored."))


@tenant_page("facts/<id:fact_id>/restore", name="fact_restore", section="facts")
class FactRestoreAction(_FactAction):
    def post(self, request: HttpRequest, fact_id: int) -> HttpResponse:
        try:
            services.fact_restore(tenant=self.tenant, fact_id=fact_id, actor=self.actor)
        except InvalidInput as error:
            return self.refused(fact_id, error)
        return self.done(fact_id, _("Fact restored: recall finds it again."))


@tenant_page("facts/<id:fact_id>/purge", name="fact_purge", section="facts")
class FactPurgeAction(_FactAction):
    def post(self, request: HttpRequest, fact_id: int) -> HttpResponse:
        form = PurgeForm(request.POST)
        if form.is_valid():
            try:
                services.fact_purge(
                    tenant=self.tenant,
                    fact_id=fact_id,
                    actor=self.actor,
                    reason=form.cleaned_data["reason"],
                )
            except InvalidInput as error:
                apply_errors(form, error)
            except BundleError as error:  # a damaged archive bundle: nothing was purged
                message = _("an archive bundle is damaged, so nothing was done: %(error)s")
                form.add_error(None, message % {"error": error})
                return _fact_page(self, fact_id, status=503, purge_form=form)
            else:
                return self.done(fact_id, _("Fact purged: deleted for good; its history stays."))
        return _fact_page(self, fact_id, status=400, purge_form=form)
