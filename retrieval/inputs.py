"""Raw recall requests, parsed once into a frozen `RecallQuery`; a bad value raises InvalidInput
naming its field. The REST API, the pages, the agent and MCP tools and the context assembly all
parse here; `recall_search` takes only the value."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone

from agentspec.limits import MAX_K as MAX_K
from agentspec.limits import MAX_METADATA_FILTERS, MAX_SCOPE_CHARS, MAX_SCOPES
from agentspec.limits import MAX_QUERY_CHARS as MAX_QUERY_CHARS
from facts.models import Category, Kind
from tenants.errors import InvalidInput
from tenants.inputs import scope_checked, scope_outside
from tenants.scope import current_scope_limit, scope_within
from tenants.validation import check_choice, check_storable

CHANNELS = ("fts", "vec", "entity")
QUERY_FIELDS = (
    "query", "k", "scope", "kind", "category", "min_trust", "channels", "half_life_days",
    "scopes", "scope_exact", "metadata", "since", "until",
)  # fmt: skip
# A time relative to now: a number and a unit (minutes, hours, days, weeks), e.g. "7d".
_RELATIVE = re.compile(r"^(\d{1,6})\s*([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


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
    # Any of these scopes instead of `scope` (each with what lies under it).
    scopes: tuple[str, ...] = ()
    scope_exact: bool = False  # the scope(s) themselves, not what lies under them
    # Top-level metadata fields and the value each must equal (JSON scalars).
    metadata: tuple[tuple[str, str | int | float | bool | None], ...] = ()
    since: datetime | None = None  # created at or after
    until: datetime | None = None  # created before

    @property
    def metadata_json(self) -> str | None:
        """The metadata filter as a JSON object the fact's metadata must contain."""
        return json.dumps(dict(self.metadata)) if self.metadata else None


def recall_query(raw: Mapping[str, Any], *, now: datetime | None = None) -> RecallQuery:
    """A recall request from raw fields (those of QUERY_FIELDS). A query longer than
    MAX_QUERY_CHARS is cut there (a task description may be long; its start says enough).
    Every scope asked for must lie inside the scope limit of the request's API key: one outside
    it is refused, never read. A relative `since` or `until` ("7d") counts back from `now`."""
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
    scope, scopes = _scope(raw.get("scope")), scopes_checked(raw.get("scopes"))
    if scope and scopes:
        raise InvalidInput("scopes", "give scope or scopes, not both")
    exact = raw.get("scope_exact", False)
    if not isinstance(exact, bool):
        raise InvalidInput("scope_exact", "must be true or false")
    if exact and not (scope or scopes):
        raise InvalidInput("scope_exact", "needs a scope or scopes")
    moment = now or timezone.now()
    since, until = (
        _moment("since", raw.get("since"), moment),
        _moment("until", raw.get("until"), moment),
    )
    if since and until and since >= until:
        raise InvalidInput("until", "must be later than since")
    return RecallQuery(
        text=text.strip()[:MAX_QUERY_CHARS],
        k=k,
        scope=scope,
        kind=kind,
        category=category,
        min_trust=None if floor is None else float(floor),
        channels=_channels(raw.get("channels")),
        half_life_days=None if half_life is None else float(half_life),
        scopes=scopes,
        scope_exact=exact,
        metadata=_metadata(raw.get("metadata")),
        since=since,
        until=until,
    )


def _inside_limit(field: str, path: str) -> str:
    limit = current_scope_limit()
    if not scope_within(path, limit):
        if field == "scope":
            raise scope_outside(limit)
        raise InvalidInput(field, f"{path!r} is outside this API key's scope {limit!r}")
    return path


def _scope(scope: Any) -> str:
    path = scope_checked(scope)
    return _inside_limit("scope", path) if path else ""  # none: the key's own limit applies


def scopes_checked(scopes: Any) -> tuple[str, ...]:
    """Several scope paths, each inside the request's scope limit; [] or None for none."""
    if scopes is None:
        return ()
    if not isinstance(scopes, list | tuple) or not all(isinstance(s, str) for s in scopes):
        raise InvalidInput("scopes", "must be a list of scope paths like user:alice")
    if len(scopes) > MAX_SCOPES:
        raise InvalidInput("scopes", f"may name at most {MAX_SCOPES} scopes")
    paths = []
    for given in scopes:
        # Under a key's scope limit, "" is the limit itself (as where a fact is written).
        try:
            path = scope_checked(given) or current_scope_limit()
        except InvalidInput as problem:
            raise InvalidInput("scopes", problem.message) from None
        if path not in paths:
            paths.append(_inside_limit("scopes", path))
    return tuple(paths)


def _metadata(metadata: Any) -> tuple[tuple[str, str | int | float | bool | None], ...]:
    """{field: value} with flat JSON scalars, as sorted pairs."""
    if metadata is None:
        return ()
    if not isinstance(metadata, Mapping):
        raise InvalidInput("metadata", "must be an object of field: value")
    if len(metadata) > MAX_METADATA_FILTERS:
        raise InvalidInput("metadata", f"may hold at most {MAX_METADATA_FILTERS} fields")
    for name, value in metadata.items():
        if not isinstance(name, str) or not name or len(name) > MAX_SCOPE_CHARS:
            raise InvalidInput("metadata", "field names must be non-empty text")
        if not (value is None or isinstance(value, str | int | float | bool)):
            raise InvalidInput("metadata", f"{name}: must be text, a number, true, false or null")
    check_storable(dict(metadata), "metadata")
    return tuple(sorted(metadata.items()))


def _moment(field: str, value: Any, now: datetime) -> datetime | None:
    """An ISO 8601 date or time (UTC when it names no zone), or a span back from `now`
    ("30m", "24h", "7d", "2w")."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInput(field, "must be an ISO 8601 time or a span like 7d")
    text = value.strip()
    relative = _RELATIVE.match(text.lower())
    if relative:
        count, unit = int(relative.group(1)), _UNITS[relative.group(2)]
        try:
            return now - timedelta(**{unit: count})
        except OverflowError:
            raise InvalidInput(field, "reaches back too far") from None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            field, "must be an ISO 8601 time (2026-12-01T09:00:00Z) or a span like 7d"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _channels(channels: Any) -> tuple[str, ...] | None:
    if channels is None:
        return None
    chosen = tuple(channels)
    unknown = [c for c in chosen if c not in CHANNELS]
    if unknown or not chosen:
        raise InvalidInput("channels", f"choose from {', '.join(CHANNELS)}")
    return chosen
