"""Form helpers shared by the pages: service errors shown where the person typed."""

from __future__ import annotations

from typing import TypeVar

from django import forms

from tenants.errors import InvalidInput
from tenants.inputs import scope_checked


def apply_errors(
    form: forms.Form, error: InvalidInput, fields: dict[str, str] | None = None
) -> None:
    """Show a service's InvalidInput on the form: on its field when the form has it (`fields`
    maps service field names to form field names), else above the form."""
    name = (fields or {}).get(error.field, error.field)
    if name in form.fields:
        form.add_error(name, error.message)
    else:
        form.add_error(None, f"{error.field}: {error.message}")


class ScopeField(forms.CharField):
    """A scope path, checked by `tenants.inputs.scope_checked`: a bad one gets the words every
    other surface answers with (its length too: no `max_length` of its own)."""

    def clean(self, value: object) -> str:
        try:
            return scope_checked(super().clean(value))
        except InvalidInput as error:
            raise forms.ValidationError(error.message) from None


class DateInput(forms.DateInput):
    input_type = "date"


FormT = TypeVar("FormT", bound=forms.Form)


def query_form(form_class: type[FormT], data: object) -> FormT:
    """A filter form bound to the query string; empty when nothing was asked yet."""
    form = form_class(data)  # type: ignore[arg-type]
    form.is_valid()
    return form
