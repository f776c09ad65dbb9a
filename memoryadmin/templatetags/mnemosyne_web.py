"""Template helpers of the web admin."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.http import QueryDict
from django.utils.translation import gettext as _

from surfaces.base import terms
from surfaces.base.pages import tenant_url
from surfaces.base.trail import event_sentence

register = template.Library()


@register.simple_tag(takes_context=True)
def turl(context: template.Context, name: str, **kwargs: Any) -> str:
    """The URL of a page of the current tenant: {% turl 'fact' fact_id=fact.pk %}."""
    return tenant_url(context["tenant"], name, **kwargs)


@register.simple_tag(takes_context=True)
def query_with(context: template.Context, **changes: Any) -> str:
    """The current query string with some parameters changed (None or "" drops them)."""
    query: QueryDict = context["request"].GET.copy()
    for key, value in changes.items():
        query.pop(key, None)
        if value not in (None, ""):
            query[key] = value
    encoded = query.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.filter
def pretty_json(value: Any) -> str:
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True, default=str)


@register.filter
def actor_name(actor: str) -> str:
    """`user:3:olivia` -> `olivia`, `apikey:7:hermes` -> `hermes`, `job:tests` -> `tests`;
    history copied from a bundle, `imported:user:3:olivia`, -> `olivia`."""
    parts = (actor or "").removeprefix("imported:").split(":", 2)
    return parts[-1] if parts else actor


@register.filter
def actor_kind(actor: str) -> str:
    kind = (actor or "").split(":", 1)[0]
    kinds = {"user": _("person"), "apikey": _("API key"), "job": _("job")}
    kinds["imported"] = _("imported history")
    return kinds.get(kind, kind)


@register.filter
def percent(value: float) -> str:
    return f"{value * 100:.0f}%"


@register.filter
def get(mapping: dict[str, Any], key: str) -> Any:
    return mapping.get(key)


@register.filter
def term(code: str) -> str:
    return terms.term(code)


@register.simple_tag(takes_context=True)
def trail(context: template.Context, event: Any, source: str = "") -> str:
    """An audit event as a sentence in the reader's language, ids linked."""
    return event_sentence(event, context.get("tenant"), source)


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    """`{{ usage|get_item:key.pk }}`: a dictionary's value, None when missing."""
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def present(mapping: dict[str, Any]) -> list[tuple[str, Any]]:
    """The items of a mapping whose value is not zero or empty (a result's factors)."""
    return [(key, value) for key, value in mapping.items() if value]
