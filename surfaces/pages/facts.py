"""Web admin pages of facts, entities and the audit log."""

from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from facts import aliases, conflicts, curation, graph, inputs, relink, services
from facts.audit_chain import audit_chain_verify, audit_digest_take, digest_parse
from facts.audit_export import audit_csv_rows, facts_csv_rows, facts_jsonl_rows
from facts.bundles import BundleError
from facts.models import ConflictStatus, EntityType, Fact, Status
from facts.selectors.audit import audit_event_iter, audit_event_list
from facts.selectors.entities import dictionary_entries, entity_fact_list, entity_get, entity_list
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
from surfaces.base.charts import neighbourhood_svg
from surfaces.base.downloads import bundle_download, download
from surfaces.base.forms import apply_errors, query_form
from surfaces.base.pages import Need, TenantPage, WriteAction, tenant_page
from surfaces.pages.fact_forms import (
    AuditFilterForm,
    AuditVerifyForm,
    EntityFilterForm,
    FactAddForm,
    FactEditForm,
    FactFilterForm,
    PurgeForm,
    day_end,
    day_start,
)
from tenants.errors import InvalidInput, NotFound
from tenants.inputs import settings_changes
from tenants.services import audit_export_record, facts_export_record, tenant_update_settings

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

        from facts.transfer import bundle_from_tar, tenant_import

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


# -- entities -------------------------------------------------------------------------------------


@tenant_page("entities/", name="entities", nav=gettext_lazy("Entities"), order=40)
class EntityListPage(TenantPage):
    def get(self, request: HttpRequest) -> HttpResponse:
        form = query_form(EntityFilterForm, request.GET)
        if not form.is_valid():
            return self.render("web/entities/list.html", {"form": form}, status=400)
        data = form.cleaned_data
        page = entity_list(
            tenant=self.tenant,
            query=data["q"] or None,
            type=data["type"] or None,
            limit=PAGE_SIZE,
            cursor=data["cursor"] or None,
        )
        return self.render(
            "web/entities/list.html",
            {
                "form": form,
                "entities": page.entities,
                "next_cursor": page.next_cursor,
                "paged": bool(data["cursor"]),
                "suggestions": aliases.alias_suggestions(tenant=self.tenant),
            },
        )


@tenant_page("entities/<id:entity_id>/", name="entity", section="entities")
class EntityPage(TenantPage):
    def get(self, request: HttpRequest, entity_id: int) -> HttpResponse:
        entity = entity_get(tenant=self.tenant, entity_id=entity_id)
        cursor = request.GET.get("cursor") or None
        page = entity_fact_list(
            tenant=self.tenant, entity_id=entity.pk, limit=PAGE_SIZE, cursor=cursor
        )
        walked = graph.entity_graph(tenant=self.tenant, entity_id=entity.pk, hops=2, limit=20)
        return self.render(
            "web/entities/detail.html",
            {
                "entity": entity,
                "facts": page.facts,
                "next_cursor": page.next_cursor,
                "paged": bool(cursor),
                "related": walked.related,
                "graph": _neighbourhood_svg(self, walked.neighbourhood),
                "history": curation.entity_history(
                    tenant=self.tenant, entity_id=entity.pk, known=True
                ),
                "types": EntityType.choices,
            },
        )


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


# -- entity curation, the graph, the dictionary ---------------------------------------------------


def _neighbourhood_svg(view: TenantPage, hood: graph.Neighbourhood) -> str:
    return neighbourhood_svg(
        centre=hood.centre.name,
        neighbours=[
            (e.pk, e.name, n, view.url("entity", entity_id=e.pk)) for e, n in hood.neighbours
        ],
        edges=hood.edges,
        label=_("Entities named together with %(name)s") % {"name": hood.centre.name},
    )


@tenant_page("entities/<id:entity_id>/rename", name="entity_rename", section="entities")
class EntityRenameAction(WriteAction):
    def post(self, request: HttpRequest, entity_id: int) -> HttpResponse:
        def change() -> str:
            name = inputs.clean_entity_name("name", request.POST.get("name", ""))
            curation.entity_rename(tenant=self.tenant, entity_id=entity_id, name=name,
                                   actor=self.actor)  # fmt: skip
            return _("Renamed; the old name stays as an alias.")

        return _entity_action(self, entity_id, change)


@tenant_page("entities/<id:entity_id>/type", name="entity_type", section="entities")
class EntityTypeAction(WriteAction):
    def post(self, request: HttpRequest, entity_id: int) -> HttpResponse:
        def change() -> str:
            value = inputs.clean_entity_type(request.POST.get("type", ""))
            curation.entity_set_type(
                tenant=self.tenant, entity_id=entity_id, type=value, actor=self.actor
            )
            return _("Type changed.")

        return _entity_action(self, entity_id, change)


@tenant_page("entities/<id:entity_id>/alias-add", name="entity_alias_add", section="entities")
class EntityAliasAddAction(WriteAction):
    def post(self, request: HttpRequest, entity_id: int) -> HttpResponse:
        def change() -> str:
            value = inputs.clean_entity_name("alias", request.POST.get("alias", ""))
            curation.entity_alias_add(
                tenant=self.tenant, entity_id=entity_id, alias=value, actor=self.actor
            )
            return _("Alias added: facts that say it link here.")

        return _entity_action(self, entity_id, change)


@tenant_page("entities/<id:entity_id>/alias-remove", name="entity_alias_remove", section="entities")
class EntityAliasRemoveAction(WriteAction):
    def post(self, request: HttpRequest, entity_id: int) -> HttpResponse:
        def change() -> str:
            value = inputs.clean_entity_name("alias", request.POST.get("alias", ""))
            curation.entity_alias_remove(
                tenant=self.tenant, entity_id=entity_id, alias=value, actor=self.actor
            )
            return _("Alias removed.")

        return _entity_action(self, entity_id, change)


@tenant_page("entities/<id:entity_id>/merge", name="entity_merge", section="entities")
class EntityMergeAction(WriteAction):
    def post(self, request: HttpRequest, entity_id: int) -> HttpResponse:
        def change() -> str:
            text = inputs.clean_entity_name("other", request.POST.get("other", ""))
            other = curation.entity_find(tenant=self.tenant, text=text)
            result = curation.entity_merge(tenant=self.tenant, entity_id=entity_id,
                                           other_id=other.pk, actor=self.actor)  # fmt: skip
            return _("%(name)s merged in: %(n)d facts re-linked.") % {
                "name": other.name,
                "n": result.relinked,
            }

        return _entity_action(self, entity_id, change)


@tenant_page("entities/<id:entity_id>/split", name="entity_split", section="entities")
class EntitySplitAction(WriteAction):
    def post(self, request: HttpRequest, entity_id: int) -> HttpResponse:
        result: list[Any] = []

        def change() -> str:
            alias = inputs.clean_entity_name("alias", request.POST.get("alias", ""))
            kind = inputs.optional_entity_type(request.POST.get("type"))
            split = curation.entity_split(
                tenant=self.tenant, entity_id=entity_id, alias=alias, type=kind, actor=self.actor
            )
            result.append(split)
            return _("%(name)s is an entity of its own now: %(n)d facts re-linked.") % {
                "name": split.split.name,
                "n": split.relinked,
            }

        return _entity_action(self, entity_id, change)


@tenant_page(
    "entities/<id:entity_id>/alias-dismiss", name="entity_alias_dismiss", section="entities"
)
class EntityAliasDismissAction(WriteAction):
    """A suggested alias that is not one: not suggested again. (Accepting is a merge.)"""

    def post(self, request: HttpRequest, entity_id: int) -> HttpResponse:
        try:
            text = inputs.clean_entity_name("other", request.POST.get("other", ""))
            other = curation.entity_find(tenant=self.tenant, text=text)
            aliases.alias_dismiss(tenant=self.tenant, entity_id=entity_id, other_id=other.pk,
                                  actor=self.actor)  # fmt: skip
        except InvalidInput as error:
            messages.error(request, error.message)
        else:
            messages.success(request, _("Not suggested again."))
        return redirect(self.url("entities"))


def _entity_action(view: TenantPage, entity_id: int, change: Any) -> HttpResponse:
    try:
        messages.success(view.request, change())
    except InvalidInput as error:
        messages.error(view.request, error.message)
    return redirect(view.url("entity", entity_id=entity_id))


@tenant_page("entities/dictionary/", name="entity_dictionary", section="entities")
class DictionaryPage(TenantPage):
    """The tenant's user dictionary, and the progress of re-linking facts after it changed."""

    def get(self, request: HttpRequest) -> HttpResponse:
        return self.render(
            "web/entities/dictionary.html",
            {
                "entries": dictionary_entries(tenant=self.tenant),
                "job": relink.relink_latest(tenant=self.tenant),
                "types": EntityType.choices,
            },
        )


@tenant_page("entities/relink/", name="entity_relink_progress", section="entities")
class RelinkProgressPage(TenantPage):
    """The relink job's progress alone: the dictionary page polls it while a job runs."""

    def get(self, request: HttpRequest) -> HttpResponse:
        job = relink.relink_latest(tenant=self.tenant)
        return self.render("web/entities/_relink.html", {"job": job})


@tenant_page("entities/dictionary/add", name="entity_dictionary_add", section="entities")
class DictionaryAddAction(WriteAction):
    def post(self, request: HttpRequest) -> HttpResponse:
        try:
            term = inputs.clean_term(request.POST.get("term", ""))
            kind = inputs.clean_entity_type(request.POST.get("type", ""))
            entry, _job = curation.dictionary_add(
                tenant=self.tenant, term=term, type=kind, actor=self.actor
            )
        except InvalidInput as error:
            messages.error(request, error.message)
        else:
            messages.success(
                request, _("%(term)s added; existing facts are being re-linked.") % {
                    "term": entry.term}
            )  # fmt: skip
        return redirect(self.url("entity_dictionary"))


@tenant_page("entities/dictionary/remove", name="entity_dictionary_remove", section="entities")
class DictionaryRemoveAction(WriteAction):
    def post(self, request: HttpRequest) -> HttpResponse:
        try:
            term = inputs.clean_term(request.POST.get("term", ""))
            curation.dictionary_remove(tenant=self.tenant, term=term, actor=self.actor)
        except InvalidInput as error:
            messages.error(request, error.message)
        else:
            messages.success(request, _("Term removed; existing facts are being re-linked."))
        return redirect(self.url("entity_dictionary"))


@tenant_page("entities/relink/start", name="entity_relink", section="entities")
class RelinkAction(WriteAction):
    def post(self, request: HttpRequest) -> HttpResponse:
        relink.relink_start(tenant=self.tenant, actor=self.actor, reason="requested")
        messages.success(request, _("Re-linking every fact to its entities."))
        return redirect(self.url("entity_dictionary"))


@tenant_page("entities/reason/", name="entities_reason", section="entities")
class ReasonPage(TenantPage):
    """The facts that involve all of several entities."""

    def get(self, request: HttpRequest) -> HttpResponse:
        text = request.GET.get("names", "")
        names = [n.strip() for n in re.split(r"[,，、;；]", text) if n.strip()]
        hits: list[Any] = []
        error = ""
        if names:
            try:
                hits = graph.entities_reason(
                    tenant=self.tenant, names=inputs.entity_names("names", names), limit=50
                )
            except InvalidInput as problem:
                error = problem.message
        return self.render(
            "web/entities/reason.html",
            {"names": text, "asked": names, "hits": hits, "error": error},
            status=400 if error else 200,
        )


# -- conflicts ------------------------------------------------------------------------------------


@tenant_page("conflicts/", name="conflicts", nav=gettext_lazy("Conflicts"), order=45)
class ConflictsPage(TenantPage):
    """The review queue: pairs of facts that disagree, for an admin to decide."""

    def get(self, request: HttpRequest) -> HttpResponse:
        wanted = request.GET.get("status", ConflictStatus.OPEN)
        status = None if wanted == "all" else wanted
        cursor = request.GET.get("cursor") or None
        result = conflicts.conflict_list(
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
