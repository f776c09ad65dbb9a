"""Raw recall requests, parsed once into a frozen `RecallQuery`; a bad value raises InvalidInput
naming its field. The REST API, the pages, the agent and MCP tools and the context assembly all
parse here; `recall_search` takes only the value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentspec.limits import MAX_K as MAX_K
from agentspec.limits import MAX_QUERY_CHARS as MAX_QUERY_CHARS
from facts.models import Category, Kind
from tenants.errors import InvalidInput
from tenants.inputs import scope_checked
from tenants.validation import check_choice

CHANNELS = ("fts", "vec", "entity")
QUERY_FIELDS = (
    "query", "k", "scope", "kind", "category", "min_trust", "channels", "half_life_days",
)  # fmt: skip


@dataclass(frozen=True)
class RecallQuery:
    """What to recall and with which filters; None leaves a filter to the tenant's settings."""

    text: str
    k: int = 10
    scope: str = ""  # a path prefix; "" is the whole tenant
    kind: str | None = None
    category: str | None = None
    min_trust: float | None = None  # None: the tenant's min_trust
    channels: tuple[str, ...] | None = None  # None: the channels the tenant weighs above 0
    half_life_days: float | None = None  # None: the tenant's


def recall_query(raw: Mapping[str, Any]) -> RecallQuery:
    """A recall request from raw fields (those of QUERY_FIELDS). A query longer than
    MAX_QUERY_CHARS is cut there (a task description may be long; its start says enough)."""
    unknown = sorted(set(raw) - set(QUERY_FIELDS))
    if unknown:
        raise InvalidInput(unknown[0], f"unknown field (known: {', '.join(QUERY_FIELDS)})")
    text = raw.get("query")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("query", "must be non-empty text")
    k = raw.get("k", 10)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidInput("k", f"must be a whole number from 1 to {MAX_K}")
    kind, category = raw.get("kind"), raw.get("category")
    check_choice("kind", kind, Kind.values)
    check_choice("category", category, Category.values)
    floor = raw.get("min_trust")
    if floor is not None and (
        isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 <= floor <= 1
    ):
        raise InvalidInput("min_trust", "must be a number from 0 to 1")
    half_life = raw.get("half_life_days")
    return RecallQuery(
        text=text.strip()[:MAX_QUERY_CHARS],
        k=k,
        scope=scope_checked(raw.get("scope")),
        kind=kind,
        category=category,
        min_trust=None if floor is None else float(floor),
        channels=_channels(raw.get("channels")),
        half_life_days=None if half_life is None else float(half_life),
    )


def _channels(channels: Any) -> tuple[str, ...] | None:
    if channels is None:
        return None
    chosen = tuple(channels)
    unknown = [c for c in chosen if c not in CHANNELS]
    if unknown or not chosen:
        raise InvalidInput("channels", f"choose from {', '.join(CHANNELS)}")
    return chosen
