"""Strict reading of API input: the one place where the REST API's input types are enforced.

DRF is lenient: a BooleanField takes "yes", 1 and "on", a CharField takes 123, and names it does
not know are dropped without a word. Every input serializer of the API derives from
`StrictSerializer` instead, which first refuses, each with a 400 naming the field:

- names the serializer does not declare ("unknown parameter");
- in a JSON body, a value of the wrong JSON type: booleans must be true or false, numbers
  must be numbers (not strings, not booleans), text must be a string, lists lists, objects
  objects (nested serializers are checked the same way);
- in a query string, a boolean other than `true` or `false`.

Then the fields' own rules (lengths, ranges, choices) apply as usual.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import QueryDict
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from agentspec.limits import MAX_SCOPE_CHARS


def _json_type_error(field: serializers.Field, value: Any) -> str | None:
    """Why `value` (parsed JSON) cannot be what `field` declares; None when it can."""
    if value is None:
        return None  # the field's allow_null decides
    if isinstance(field, serializers.BooleanField):
        return None if isinstance(value, bool) else _("must be true or false")
    if isinstance(field, serializers.IntegerField):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _("must be a whole number")
        return None
    if isinstance(field, serializers.FloatField | serializers.DecimalField):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _("must be a number")
        return None
    if isinstance(field, serializers.ListField | serializers.MultipleChoiceField):
        return None if isinstance(value, list) else _("must be a list")
    if isinstance(field, serializers.DictField):
        return None if isinstance(value, dict) else _("must be an object")
    if isinstance(field, serializers.JSONField):
        return None
    if isinstance(field, serializers.Serializer):
        return None if isinstance(value, dict) else _("must be an object")
    if isinstance(field, serializers.CharField | serializers.ChoiceField):
        return None if isinstance(value, str) else _("must be text")
    if isinstance(field, serializers.DateTimeField | serializers.DateField):
        return None if isinstance(value, str) else _("must be a date as text (ISO 8601)")
    return None


def _check_json(serializer: serializers.Serializer, data: Mapping[str, Any]) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    fields = serializer.fields
    for name in data:
        if name not in fields or fields[name].read_only:
            errors[name] = [_("unknown parameter")]
    for name, field in fields.items():
        if field.read_only or name not in data:
            continue
        value = data[name]
        problem = _json_type_error(field, value)
        if problem:
            errors[name] = [problem]
            continue
        child = getattr(field, "child", None)
        if isinstance(value, list) and child is not None:
            for index, item in enumerate(value):
                if isinstance(child, serializers.Serializer) and isinstance(item, dict):
                    nested = _check_json(child, item)
                    if nested:
                        errors[name] = {index: nested}
                        break
                    continue
                item_problem = _json_type_error(child, item)
                if item_problem:
                    errors[name] = {index: [item_problem]}
                    break
        elif isinstance(value, dict) and child is not None:
            for key, item in value.items():
                item_problem = _json_type_error(child, item)
                if item_problem:
                    errors[name] = {key: [item_problem]}
                    break
        elif isinstance(field, serializers.Serializer) and isinstance(value, dict):
            nested = _check_json(field, value)
            if nested:
                errors[name] = nested
    return errors


def _check_query(serializer: serializers.Serializer, data: QueryDict) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    fields = serializer.fields
    for name in data:
        if name not in fields or fields[name].read_only:
            errors[name] = [_("unknown parameter")]
            continue
        field = fields[name]
        values = data.getlist(name)
        if len(values) > 1 and not isinstance(field, serializers.ListField):
            errors[name] = [_("give it once")]
        elif isinstance(field, serializers.BooleanField) and values[0] not in ("true", "false"):
            errors[name] = [_("must be true or false")]
    return errors


class StrictSerializer(serializers.Serializer):
    """Base of the API's input serializers (see the module's docstring)."""

    def run_validation(self, data: Any = empty) -> Any:
        if data is not empty and data is not None and self.parent is None:
            if isinstance(data, QueryDict):
                errors = _check_query(self, data)
            elif isinstance(data, Mapping):
                errors = _check_json(self, data)
            else:
                errors = {"non_field_errors": [_("the body must be a JSON object")]}
            if errors:
                raise serializers.ValidationError(errors)
        return super().run_validation(data)


def validated(
    serializer_class: type[serializers.Serializer], data: Any, **kwargs: Any
) -> dict[str, Any]:
    """`data` read by `serializer_class` (a 400 naming the field when it is not valid)."""
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


@extend_schema_field({"type": "string", "maxLength": MAX_SCOPE_CHARS})
class ScopeText(serializers.CharField):
    """A scope as the request sends it: text, checked afterwards by `scope_checked` (through
    the inputs every surface uses), so that a bad one is refused in the same words everywhere.
    Its length limit is stated in the schema, not enforced here in DRF's own words."""
