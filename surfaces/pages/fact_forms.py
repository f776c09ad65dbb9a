"""Forms of the facts pages: filters (query strings) and the admin's changes."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from facts.inputs import (
    FACT_ORDERS,
    MAX_CONTENT_CHARS,
    MAX_ID,
    MAX_PURGE_REASON_CHARS,
    FactChanges,
    FactDraft,
    clean_category,
    fact_changes,
    fact_draft,
    purge_reason,
)
from facts.models import Category, EntityType, Kind, Status
from facts.selectors.audit import audit_actions
from surfaces.base.forms import DateInput, ScopeField, apply_errors
from surfaces.base.terms import term_choices
from tenants.errors import InvalidInput

ALL = "all"


def _blank(choices: list[tuple[str, Any]], label: Any) -> list[tuple[str, Any]]:
    return [("", label), *choices]


def day_start(day: date | None) -> datetime | None:
    return None if day is None else datetime(day.year, day.month, day.day, tzinfo=UTC)


def day_end(day: date | None) -> datetime | None:
    """The end of the day (exclusive): a "to" date includes that whole day."""
    start = day_start(day)
    return None if start is None else start + timedelta(days=1)


class FactFilterForm(forms.Form):
    q = forms.CharField(
        label=_("Search"),
        required=False,
        max_length=2000,
        widget=forms.TextInput(
            attrs={"type": "search", "class": "wide", "placeholder": _("Ask as an agent would")}
        ),
    )
    scope = ScopeField(label=_("Scope"), required=False)
    kind = forms.ChoiceField(
        label=_("Kind"), required=False, choices=_blank(term_choices(Kind.values), _("any"))
    )
    category = forms.ChoiceField(
        label=_("Category"), required=False, choices=_blank(term_choices(Category.values), _("any"))
    )
    status = forms.ChoiceField(
        label=_("Status"),
        required=False,
        choices=[*term_choices(Status.values), (ALL, _("any"))],
        initial=Status.ACTIVE,
    )
    trust_min = forms.FloatField(label=_("Trust from"), required=False, min_value=0, max_value=1)
    trust_max = forms.FloatField(label=_("Trust to"), required=False, min_value=0, max_value=1)
    created_after = forms.DateField(label=_("Stored from"), required=False, widget=DateInput)
    created_before = forms.DateField(label=_("Stored until"), required=False, widget=DateInput)
    order = forms.ChoiceField(
        label=_("Order"),
        required=False,
        choices=[(o, _(FACT_ORDERS[o])) for o in ("importance", "newest")],
        initial="importance",
    )
    cursor = forms.CharField(required=False, max_length=500, widget=forms.HiddenInput)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        low, high = data.get("trust_min"), data.get("trust_max")
        if low is not None and high is not None and low > high:
            self.add_error("trust_max", _("The upper trust bound is below the lower one."))
        first, last = data.get("created_after"), data.get("created_before")
        if first and last and first > last:
            self.add_error("created_before", _("This date is before the first one."))
        return data

    def status_filter(self) -> str | None:
        status = self.cleaned_data.get("status") or Status.ACTIVE
        return None if status == ALL else status


class FactAddForm(forms.Form):
    content = forms.CharField(
        label=_("Content"), max_length=MAX_CONTENT_CHARS, widget=forms.Textarea(attrs={"rows": 4})
    )
    scope = ScopeField(
        label=_("Scope"),
        required=False,
        help_text=_("type:name segments, e.g. user:alice/project:beta; empty: the whole tenant"),
    )
    category = forms.ChoiceField(
        label=_("Category"),
        choices=term_choices(Category.values),
        initial=clean_category(None),  # the API's default: a fact given no category
    )
    tags = forms.CharField(
        label=_("Tags"), required=False, max_length=1400, help_text=_("separated by commas")
    )

    draft: FactDraft

    def _fields(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in ("content", "scope", "category", "tags")}

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self.errors:
            try:
                self.parse()
            except InvalidInput as error:
                apply_errors(self, error)
        return data

    def parse(self) -> None:
        self.draft = fact_draft(self._fields())


class FactEditForm(FactAddForm):
    changes: FactChanges

    def parse(self) -> None:
        self.changes = fact_changes(self._fields())


class PurgeForm(forms.Form):
    reason = forms.CharField(
        label=_("Why it must be forgotten"),
        max_length=MAX_PURGE_REASON_CHARS,
        help_text=_("Kept in the audit log. The fact is deleted for good; its history stays."),
    )

    def clean_reason(self) -> str:
        try:
            return purge_reason(self.cleaned_data["reason"])
        except InvalidInput as error:
            raise forms.ValidationError(error.message) from None


class EntityFilterForm(forms.Form):
    q = forms.CharField(label=_("Name or alias"), required=False, max_length=200)
    type = forms.ChoiceField(
        label=_("Type"), required=False, choices=_blank(term_choices(EntityType.values), _("any"))
    )
    cursor = forms.CharField(required=False, max_length=500, widget=forms.HiddenInput)


class AuditVerifyForm(forms.Form):
    digest = forms.CharField(
        label=_("Digest kept from before"),
        required=False,
        max_length=100,
        help_text=_("COUNT:HEAD, as an audit export's last row or the log shows it"),
    )


class AuditFilterForm(forms.Form):
    actor = forms.CharField(
        label=_("Actor"),
        required=False,
        max_length=200,
        help_text=_("e.g. user:3, apikey:7 or job:retention (the start of the actor)"),
    )
    action = forms.ChoiceField(
        label=_("Action"),
        required=False,
        choices=lambda: _blank(term_choices(audit_actions()), _("any")),
    )
    fact_id = forms.IntegerField(label=_("Fact"), required=False, min_value=1, max_value=MAX_ID)
    source = forms.ChoiceField(
        label=_("Of"),
        required=False,
        choices=[("", _("facts and tenant")), ("fact", _("facts")), ("tenant", _("tenant"))],
    )
    since = forms.DateField(label=_("From"), required=False, widget=DateInput)
    until = forms.DateField(label=_("Until"), required=False, widget=DateInput)
    cursor = forms.CharField(required=False, max_length=500, widget=forms.HiddenInput)

    def filters(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "source": data.get("source") or None,
            "action": data.get("action") or None,
            "actor": (data.get("actor") or "").strip() or None,
            "fact_id": data.get("fact_id"),
            "since": day_start(data.get("since")),
            "until": day_end(data.get("until")),
        }
