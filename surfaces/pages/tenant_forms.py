"""Forms of the tenant administration pages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django import forms
from django.utils.translation import gettext_lazy as _

from surfaces.base.forms import ScopeField
from tenants.inputs import API_KEY_SCOPES, retention_range
from tenants.models import Role

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

ROLE_NAMES: list[tuple[str, StrOrPromise]] = [
    (Role.ADMIN, _("admin")),
    (Role.AUDITOR, _("auditor")),
]


def role_label(role: str) -> str:
    """A role's name in the reader's language."""
    return str(dict(ROLE_NAMES).get(role, role))


ROLE_CHOICES = [(Role.ADMIN, _("admin: reads and changes")), (Role.AUDITOR, _("auditor: reads"))]


class MemberForm(forms.Form):
    username = forms.CharField(label=_("Username"), max_length=150)
    role = forms.ChoiceField(label=_("Role"), choices=ROLE_CHOICES)


class RoleForm(forms.Form):
    role = forms.ChoiceField(label=_("Role"), choices=ROLE_CHOICES)


class InviteForm(forms.Form):
    role = forms.ChoiceField(label=_("Role"), choices=ROLE_CHOICES, initial=Role.AUDITOR)
    email = forms.EmailField(
        label=_("E-mail (optional)"),
        required=False,
        help_text=_("The link is also sent there when this server sends mail."),
    )


class ApiKeyRotateForm(forms.Form):
    grace_hours = forms.IntegerField(
        label=_("Old secret still works for (hours)"), min_value=0, max_value=720, initial=24
    )


class ApiKeyForm(forms.Form):
    name = forms.CharField(
        label=_("Name"),
        max_length=100,
        help_text=_("Who uses it, e.g. the Hermes profile: hermes-research"),
    )
    expires_in_days = forms.IntegerField(
        label=_("Expires after (days)"),
        required=False,
        min_value=1,
        max_value=3650,
        help_text=_("empty: never"),
    )
    scope_prefix = forms.CharField(
        label=_("Only this scope"),
        required=False,
        max_length=255,
        help_text=_(
            "e.g. team:research: the key reads and writes that scope and below only; "
            "empty: the whole tenant"
        ),
    )
    scopes = forms.MultipleChoiceField(
        label=_("May"),
        choices=[("read", _("read (recall, list)")), ("write", _("write (store, rate)"))],
        initial=list(API_KEY_SCOPES),
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": _("Choose read, write or both.")},
    )


class HermesForm(forms.Form):
    key = forms.TypedChoiceField(label=_("API key"), coerce=int, required=False, empty_value=None)
    scope = ScopeField(
        label=_("Default scope"),
        required=False,
        help_text=_("What this profile stores and recalls by default, e.g. team:research"),
    )
    hermes_home = forms.CharField(
        label=_("Hermes home"),
        required=False,
        max_length=500,
        help_text=_("The profile's HERMES_HOME; empty: Hermes' default (~/.hermes)"),
    )

    def __init__(self, *args: Any, keys: list[Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.TypedChoiceField, self.fields["key"]).choices = [
            ("", _("choose a key")),
            *((key.pk, f"{key.name} (mnm_{key.prefix}_…)") for key in keys),
        ]


class RetentionForm(forms.Form):
    archive_after_days_unretrieved = forms.IntegerField(
        label=_("Archive facts not retrieved for (days)"),
        required=False,
        **retention_range("archive_after_days_unretrieved"),
        help_text=_("empty: never"),
    )
    archive_below_trust = forms.FloatField(
        label=_("Archive facts trusted below"),
        required=False,
        **retention_range("archive_below_trust"),
        help_text=_("0 to 1; empty: never"),
    )
    max_active_facts = forms.IntegerField(
        label=_("Keep at most this many active facts"),
        required=False,
        **retention_range("max_active_facts"),
        help_text=_("the least important beyond it are archived; empty: no limit"),
    )
    purge_archived_after_days = forms.IntegerField(
        label=_("Delete archived facts for good after (days)"),
        required=False,
        **retention_range("purge_archived_after_days"),
        help_text=_("empty: never"),
    )
    legal_hold = forms.BooleanField(
        label=_("Legal hold: archive and delete nothing while it is set"), required=False
    )
    run_every_hours = forms.IntegerField(
        label=_("Run the policy every (hours)"),
        **retention_range("run_every_hours"),
        initial=24,
        required=False,
    )
    importance_every_hours = forms.IntegerField(
        label=_("Recompute importance every (hours)"),
        **retention_range("importance_every_hours"),
        initial=1,
        required=False,
    )

    def changes(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        for schedule in ("run_every_hours", "importance_every_hours"):
            if data.get(schedule) is None:
                data.pop(schedule, None)  # not given: the interval stays
        return data
