"""Web admin pages of entities: the list, one entity, its curation, the graph and the dictionary."""

from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from facts import aliases, curation, graph, inputs, relink
from facts.models import EntityType
from facts.selectors.entities import dictionary_entries, entity_fact_list, entity_get, entity_list
from surfaces.base.charts import neighbourhood_svg
from surfaces.base.forms import query_form
from surfaces.base.pages import TenantPage, WriteAction, tenant_page
from surfaces.pages.fact_forms import EntityFilterForm
from surfaces.pages.facts import PAGE_SIZE
from tenants.errors import InvalidInput

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
