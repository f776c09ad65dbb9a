"""The recall playground: a query as an agent would send it, and everything recall did with it."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from facts.models import Category, Kind
from retrieval import explain
from retrieval.context import context_build
from retrieval.inputs import CHANNELS, MAX_K, MAX_QUERY_CHARS, RecallQuery, recall_query
from retrieval.search import recall_search
from surfaces.base.forms import ScopeField, query_form
from surfaces.base.pages import TenantPage, tenant_page
from surfaces.base.terms import term_choices

CHANNEL_LABELS = {
    "fts": gettext_lazy("full text"),
    "vec": gettext_lazy("vector"),
    "entity": gettext_lazy("entities"),
}


class RecallForm(forms.Form):
    q = forms.CharField(
        label=gettext_lazy("Query"),
        required=False,
        max_length=MAX_QUERY_CHARS,
        widget=forms.TextInput(attrs={"type": "search", "class": "wide"}),
    )
    k = forms.IntegerField(
        label=gettext_lazy("How many"), min_value=1, max_value=MAX_K, initial=10, required=False
    )
    scope = ScopeField(label=gettext_lazy("Scope"), required=False)
    kind = forms.ChoiceField(
        label=gettext_lazy("Kind"),
        required=False,
        choices=[("", gettext_lazy("any")), *term_choices(Kind.values)],
    )
    category = forms.ChoiceField(
        label=gettext_lazy("Category"),
        required=False,
        choices=[("", gettext_lazy("any")), *term_choices(Category.values)],
    )
    min_trust = forms.FloatField(
        label=gettext_lazy("Trust floor"),
        required=False,
        min_value=0,
        max_value=1,
        help_text=gettext_lazy("empty: the tenant's"),
    )
    channels = forms.MultipleChoiceField(
        label=gettext_lazy("Channels"),
        required=False,
        choices=list(CHANNEL_LABELS.items()),
        widget=forms.CheckboxSelectMultiple,
        help_text=gettext_lazy("none ticked: the channels the tenant weighs"),
    )
    session_id = forms.CharField(label=gettext_lazy("Session"), required=False, max_length=128)
    hot_restore = forms.BooleanField(
        label=gettext_lazy("First turn of a resumed session"), required=False
    )
    budget = forms.IntegerField(
        label=gettext_lazy("Token budget"),
        required=False,
        min_value=50,
        max_value=32000,
        help_text=gettext_lazy("empty: the tenant's"),
    )


def _query(data: dict[str, Any], text: str) -> RecallQuery:
    return recall_query(
        {
            "query": text,
            "k": data["k"] or 10,
            "channels": data["channels"] or None,
            "scope": data["scope"] or None,
            "kind": data["kind"] or None,
            "category": data["category"] or None,
            "min_trust": data["min_trust"],
        }
    )


def _panel(view: TenantPage, request: HttpRequest, template: str, context: dict) -> HttpResponse:
    """A part of the playground loaded after it (htmx), or on its own without htmx."""
    if request.headers.get("HX-Request"):
        return view.render(template, context)
    return view.render("web/recall_panel.html", {**context, "panel": template})


@tenant_page("recall/", name="recall", nav=gettext_lazy("Recall playground"), order=30)
class RecallPlaygroundPage(TenantPage):
    """Ranked results with each channel's score; what was left out and why, and the exact
    context block an agent would read before its turn, each loaded right after (htmx), as they
    ask recall again. A person looking is not a retrieval: nothing here counts as one or fills
    the agents' cache."""

    def get(self, request: HttpRequest) -> HttpResponse:
        form = query_form(RecallForm, request.GET)
        context: dict[str, Any] = {"form": form, "channel_labels": CHANNEL_LABELS}
        if not form.is_valid():
            return self.render("web/recall.html", context, status=400)
        data = form.cleaned_data
        query = data["q"].strip()
        if not query:
            return self.render("web/recall.html", context)
        tenant = self.tenant
        channels = data["channels"] or None
        result = recall_search(tenant=tenant, query=_query(data, query))
        floor = tenant.setting("min_trust") if data["min_trust"] is None else data["min_trust"]
        used = list(result.hits[0].channels) if result.hits else list(channels or CHANNELS)
        query_string = request.GET.copy()
        query_string["shown"] = ",".join(str(hit.fact.pk) for hit in result.hits)
        context |= {
            "query": query,
            "hits": result.hits,
            "channels_used": [(c, CHANNEL_LABELS[c]) for c in used],
            "weights": {c: tenant.setting(f"weight_{c}") for c in CHANNELS},
            "floor": floor,
            "timings": {k: round(v, 1) for k, v in result.timings_ms.items()},
            "panel_query": query_string.urlencode(),
        }
        return self.render("web/recall.html", context)


@tenant_page("recall/left-out", name="recall_left_out", section="recall")
class RecallLeftOutPanel(TenantPage):
    """What the query matches that recall did not return (`shown`: the ids it returned)."""

    def get(self, request: HttpRequest) -> HttpResponse:
        form = query_form(RecallForm, request.GET)
        if not form.is_valid():
            return self.render("web/_recall_left_out.html", {"left_out": []}, status=400)
        data = form.cleaned_data
        if not data["q"].strip():
            return _panel(self, request, "web/_recall_left_out.html", {"left_out": []})
        shown = {int(p) for p in request.GET.get("shown", "").split(",") if p.isdigit()}
        left_out = explain.recall_left_out(
            tenant=self.tenant, query=_query(data, data["q"].strip()), shown=shown
        )
        rows = [(entry, [(r.code, reason_text(r)) for r in entry.reasons]) for entry in left_out]
        return _panel(self, request, "web/_recall_left_out.html", {"left_out": rows})


@tenant_page("recall/context", name="recall_context", section="recall")
class RecallContextPanel(TenantPage):
    """The exact block `context_build` gives an agent for this query (not cached, not counted)."""

    def get(self, request: HttpRequest) -> HttpResponse:
        form = query_form(RecallForm, request.GET)
        if not form.is_valid():
            return self.render("web/_recall_context.html", {}, status=400)
        data = form.cleaned_data
        if not data["q"].strip():
            return _panel(self, request, "web/_recall_context.html", {})
        block = context_build(
            tenant=self.tenant,
            query=data["q"].strip(),
            scope=data["scope"] or None,
            session_id=data["session_id"] or None,
            hot_restore=data["hot_restore"],
            budget=data["budget"],
        )
        timings = {k: round(v, 1) for k, v in block.timings_ms.items()}
        context = {"context_block": block, "block_timings": timings}
        return _panel(self, request, "web/_recall_context.html", context)


def _word(code: str) -> str:
    words = {
        "active": _("active"),
        "archived": _("archived"),
        "removed": _("removed"),
        "superseded": _("superseded"),
        "fact": _("fact"),
        "turn": _("turn"),
    }
    return str(words.get(code, code))


def reason_text(reason: explain.Reason) -> str:
    """A left-out reason in the reader's language."""
    values = {k: _word(v) if isinstance(v, str) and k != "scope" else v
              for k, v in reason.values.items()}  # fmt: skip
    if reason.code == explain.TRUST:
        return _("trust %(trust).2f is below the floor %(floor).2f") % values
    if reason.code == explain.SCOPE:
        return _("its scope “%(scope)s” is outside “%(wanted)s”") % {
            "scope": values["scope"] or _("(whole tenant)"),
            "wanted": values["wanted"],
        }
    if reason.code == explain.KIND:
        return _("it is a %(kind)s, the query asks for %(wanted)s") % values
    if reason.code == explain.CATEGORY:
        return _("its category is %(category)s, the query asks for %(wanted)s") % values
    if reason.code == explain.STATUS:
        return _("it is %(status)s: recall returns active facts only") % values
    return _("it passed every filter but ranked below the results shown")
